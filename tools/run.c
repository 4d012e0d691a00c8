/* `plexus run`: import an ONNX model, assign its layers to backends, load
 * it, run it on inputs from .npy files (or seeded random values), and
 * report what happened: the model's inputs and outputs, the assignment of
 * layers to backends with every fallback, load time, latency, the memory
 * plan, the top classes of a classifier, and optionally the outputs as .npy
 * files and a Chrome trace of the run.
 *
 * Exit status: 0 success, 1 the model cannot be loaded or run (a message
 * on stderr, prefixed "plexus run: "), 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <plexus/network.h>
#include <plexus/onnx.h>
#include <plexus/plexus.h>

#include "commands.h"
#include "json_writer.h"
#include "npy.h"

#define PREFIX "plexus run"

/* Limits of the numeric options. */
#define MAX_ITERATIONS 100000000L
#define MAX_THREADS 1024L
/* Top classes shown for a classifier's output. */
#define TOP_K 3

static const char run_usage[] =
    "usage: plexus run MODEL.onnx [--backends ID,...] [--no-fallback]\n"
    "                  [--input NAME=FILE.npy]... [--shape NAME=DIMS]...\n"
    "                  [--constant NAME=FILE.npy]...\n"
    "                  [--output-dir DIR] [--iterations N] [--warmup N] [--threads N]\n"
    "                  [--profile TRACE.json] [--json]\n"
    "                  [--backend-path PATH]... [--no-env] [--no-default-dir]\n"
    "                  [--option ID.KEY=VALUE]... [--log-level LEVEL]\n"
    "\n"
    "Imports the ONNX model, assigns its layers to backends, loads and runs it, and\n"
    "reports its inputs and outputs, the layers per backend and every fallback,\n"
    "the load time, the latency, the memory plan and, for a classifier, the top\n"
    "classes.\n"
    "\n"
    "  --backends ID,...      backends in order of preference (default: every\n"
    "                         available backend, in registry order)\n"
    "  --no-fallback          every layer must run on the first backend; every\n"
    "                         backend named must be available\n"
    "  --input NAME=FILE.npy  input NAME from a .npy file (its dtype and shape must be\n"
    "                         the model's); may be repeated. Inputs not given get\n"
    "                         random values, seeded (seed 1, 2, ... in input order):\n"
    "                         floats in [0, 1), integers 0 or 1, bools 0 or 1\n"
    "  --shape NAME=DIMS      the shape of input NAME, as 1x3x224x224: sizes for the\n"
    "                         dimensions the model leaves open; may be repeated\n"
    "  --constant NAME=FILE.npy  freeze input NAME to the file's values at import: it\n"
    "                         is no longer an input, and what it feeds is folded or\n"
    "                         takes it as an attribute (a reshape's shape, axes,\n"
    "                         pads); may be repeated\n"
    "  --output-dir DIR       write each output to DIR/NAME.npy (characters of NAME\n"
    "                         outside [A-Za-z0-9._-] become '_'); DIR is created\n"
    "  --iterations N         timed runs, 1 or more (default 10)\n"
    "  --warmup N             untimed runs before them, 0 or more (default 1)\n"
    "  --threads N            run from N threads, each with its own working memory\n"
    "                         (default 1; N > 1 needs backends that support\n"
    "                         asynchronous execution); the iterations are shared out\n"
    "                         between the threads, each does the warm-up runs\n"
    "  --profile TRACE.json   write a Chrome trace-event file of loading and of every\n"
    "                         layer of every run (Perfetto, chrome://tracing)\n"
    "  --json                 print one JSON document instead of text\n" RUNTIME_ARGS_USAGE
    "\n"
    "Exit status: 0 success, 1 the model cannot be loaded or run, 2 bad usage.\n";

/* ------------------------------------------------------------------------ */
/* Arguments                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct input_arg {
    const char *name; /* points into argv (split in place) */
    const char *file;
} input_arg;

typedef struct run_args {
    const char *model;
    char *backends_text;  /* owned copy, split at commas */
    const char **backends; /* into backends_text */
    size_t backend_count;
    bool no_fallback;
    input_arg *inputs;
    size_t input_count;
    input_arg *constants; /* --constant NAME=FILE.npy */
    size_t constant_count;
    plx_onnx_input_shape *shapes;
    size_t shape_count;
    const char *output_dir;
    long iterations;
    long warmup;
    long threads;
    const char *profile;
    bool json;
    runtime_args runtime;
} run_args;

static void run_args_free(run_args *a) {
    free(a->backends_text);
    free(a->backends);
    free(a->inputs);
    free(a->constants);
    free(a->shapes);
    runtime_args_free(&a->runtime);
}

/* A decimal integer in [min, max], the whole text. */
static bool parse_long(const char *text, long min, long max, long *out) {
    if (!*text || *text == '+' || *text == ' ') {
        return false;
    }
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

static int parse_count_arg(const char *opt, const char *text, long min, long max, long *out) {
    if (!parse_long(text, min, max, out)) {
        return usage_error("run", run_usage, "bad %s '%s': expected a whole number from %ld to %ld",
                           opt, text, min, max);
    }
    return 0;
}

/* ID,ID,...: no empty ids. */
static int parse_backends(run_args *a, const char *text) {
    free(a->backends_text);
    free(a->backends);
    a->backends = NULL;
    a->backend_count = 0;
    a->backends_text = strdup(text);
    size_t n = 1;
    for (const char *p = text; *p; p++) {
        n += *p == ',';
    }
    a->backends = calloc(n, sizeof *a->backends);
    if (!a->backends_text || !a->backends) {
        fprintf(stderr, PREFIX ": out of memory\n");
        return EXIT_RUNTIME;
    }
    char *item = a->backends_text;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma) {
            *comma = '\0';
        }
        if (!*item) {
            return usage_error("run", run_usage,
                               "bad --backends '%s': expected backend ids separated by commas",
                               text);
        }
        a->backends[a->backend_count++] = item;
        if (!comma) {
            break;
        }
        item = comma + 1;
    }
    return 0;
}

/* NAME=FILE for --input and --constant: split at the first '='. */
static int parse_input_arg(const char *opt, input_arg *list, size_t *count, char *text) {
    char *eq = strchr(text, '=');
    if (!eq || eq == text || !eq[1]) {
        return usage_error("run", run_usage, "bad %s '%s': expected NAME=FILE.npy", opt, text);
    }
    *eq = '\0';
    for (size_t i = 0; i < *count; i++) {
        if (strcmp(list[i].name, text) == 0) {
            return usage_error("run", run_usage, "%s '%s' given twice", opt, text);
        }
    }
    list[*count].name = text;
    list[*count].file = eq + 1;
    (*count)++;
    return 0;
}

/* NAME=DIMS with DIMS like 1x3x224x224: split at the last '='. */
static int parse_shape_arg(run_args *a, char *text) {
    char *eq = strrchr(text, '=');
    if (!eq || eq == text) {
        return usage_error("run", run_usage, "bad --shape '%s': expected NAME=DIMS (as 1x3x224x224)",
                           text);
    }
    plx_onnx_input_shape *s = &a->shapes[a->shape_count];
    memset(s, 0, sizeof *s);
    const char *p = eq + 1;
    for (;;) {
        if (*p < '0' || *p > '9' || s->rank == PLX_MAX_RANK) {
            break;
        }
        errno = 0;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (errno || v > INT32_MAX) {
            break;
        }
        s->dims[s->rank++] = (int64_t)v;
        p = end;
        if (*p == 'x' && p[1]) {
            p++;
            continue;
        }
        if (!*p) {
            *eq = '\0';
            for (size_t i = 0; i < a->shape_count; i++) {
                if (strcmp(a->shapes[i].name, text) == 0) {
                    return usage_error("run", run_usage, "--shape '%s' given twice", text);
                }
            }
            s->name = text;
            a->shape_count++;
            return 0;
        }
        break;
    }
    return usage_error("run", run_usage,
                       "bad --shape '%s': expected NAME=DIMS, DIMS being 1 to %d sizes "
                       "separated by 'x' (as 1x3x224x224)",
                       text, PLX_MAX_RANK);
}

/* Returns -1 when parsing succeeded, else an exit status. */
static int parse_run_args(int argc, char **argv, run_args *a) {
    a->iterations = 10;
    a->warmup = 1;
    a->threads = 1;
    if (!runtime_args_init(&a->runtime, argc)) {
        return EXIT_RUNTIME;
    }
    size_t n = argc > 0 ? (size_t)argc : 1;
    a->inputs = calloc(n, sizeof *a->inputs);
    a->constants = calloc(n, sizeof *a->constants);
    a->shapes = calloc(n, sizeof *a->shapes);
    if (!a->inputs || !a->constants || !a->shapes) {
        fprintf(stderr, PREFIX ": out of memory\n");
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        int rc = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(run_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (strcmp(arg, "--no-fallback") == 0) {
            a->no_fallback = true;
        } else if (strcmp(arg, "--backends") == 0 || strcmp(arg, "--input") == 0 ||
                   strcmp(arg, "--constant") == 0 ||
                   strcmp(arg, "--shape") == 0 || strcmp(arg, "--output-dir") == 0 ||
                   strcmp(arg, "--iterations") == 0 || strcmp(arg, "--warmup") == 0 ||
                   strcmp(arg, "--threads") == 0 || strcmp(arg, "--profile") == 0) {
            if (!has_value) {
                return usage_error("run", run_usage, "%s needs a value", arg);
            }
            char *value = argv[++i];
            if (strcmp(arg, "--backends") == 0) {
                rc = parse_backends(a, value);
            } else if (strcmp(arg, "--input") == 0) {
                rc = parse_input_arg(arg, a->inputs, &a->input_count, value);
            } else if (strcmp(arg, "--constant") == 0) {
                rc = parse_input_arg(arg, a->constants, &a->constant_count, value);
            } else if (strcmp(arg, "--shape") == 0) {
                rc = parse_shape_arg(a, value);
            } else if (strcmp(arg, "--iterations") == 0) {
                rc = parse_count_arg(arg, value, 1, MAX_ITERATIONS, &a->iterations);
            } else if (strcmp(arg, "--warmup") == 0) {
                rc = parse_count_arg(arg, value, 0, MAX_ITERATIONS, &a->warmup);
            } else if (strcmp(arg, "--threads") == 0) {
                rc = parse_count_arg(arg, value, 1, MAX_THREADS, &a->threads);
            } else if (!*value) {
                rc = usage_error("run", run_usage, "%s needs a non-empty path", arg);
            } else if (strcmp(arg, "--output-dir") == 0) {
                a->output_dir = value;
            } else {
                a->profile = value;
            }
        } else if (arg[0] == '-' && arg[1]) {
            rc = runtime_args_parse(&a->runtime, argc, argv, &i, "run", run_usage);
            if (rc < 0) {
                return usage_error("run", run_usage, "unknown argument '%s' for 'run'", arg);
            }
        } else if (a->model) {
            return usage_error("run", run_usage, "unexpected argument '%s': one model only", arg);
        } else if (!*arg) {
            return usage_error("run", run_usage, "the model path is empty");
        } else {
            a->model = arg;
        }
        if (rc) {
            return rc;
        }
    }
    if (!a->model) {
        return usage_error("run", run_usage, "no model given");
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------ */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ms_between(uint64_t start, uint64_t end) {
    return (double)(end - start) / 1e6;
}

static void fail_status(const char *what, plx_status s) {
    fprintf(stderr, PREFIX ": %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
}

/* "[1,3,224,224]"; "[]" for a scalar. */
static const char *shape_text(const plx_tensor_info *info, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < info->rank && len < size; i++) {
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, i ? "," : "", info->dims[i]);
    }
    if (len < size) {
        snprintf(buf + len, size - len, "]");
    }
    return buf;
}

/* A JSON number; NaN and infinities as null. json_writer has no doubles:
 * this places the separator exactly as its own values do. */
static void json_shape(json_writer *w, const plx_tensor_info *info) {
    json_begin_array(w);
    for (uint32_t i = 0; i < info->rank; i++) {
        json_int(w, info->dims[i]);
    }
    json_end_array(w);
}

/* float16 and bfloat16 conversions: the SDK's (plexus/tensor.h), one copy in the tree. */

static bool is_float_dtype(plx_dtype d) {
    return d == PLX_DTYPE_FLOAT32 || d == PLX_DTYPE_FLOAT16 || d == PLX_DTYPE_BFLOAT16;
}

/* Element i of a float tensor as float. */
static float float_at(plx_dtype dtype, const void *data, size_t i) {
    if (dtype == PLX_DTYPE_FLOAT32) {
        float f;
        memcpy(&f, (const char *)data + i * 4, sizeof f);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)data + i * 2, sizeof h);
    return dtype == PLX_DTYPE_FLOAT16 ? plx_float16_to_float32(h) : plx_bfloat16_to_float32(h);
}

/* splitmix64 */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Seeded values: floats uniform in [0, 1), integers and bools 0 or 1. */
static void fill_random(plx_dtype dtype, void *data, size_t count, uint64_t seed) {
    uint64_t state = seed;
    for (size_t i = 0; i < count; i++) {
        uint64_t r = next_random(&state);
        float f = (float)(r >> 40) / (float)(1u << 24); /* 24 bits: exact in float */
        unsigned bit = (unsigned)(r >> 63);
        char *p = (char *)data;
        switch (dtype) {
        case PLX_DTYPE_FLOAT32:
            memcpy(p + i * 4, &f, 4);
            break;
        case PLX_DTYPE_FLOAT16: {
            uint16_t h = plx_float32_to_float16(f);
            memcpy(p + i * 2, &h, 2);
            break;
        }
        case PLX_DTYPE_BFLOAT16: {
            uint16_t h = plx_float32_to_bfloat16(f);
            memcpy(p + i * 2, &h, 2);
            break;
        }
        case PLX_DTYPE_INT8:
        case PLX_DTYPE_UINT8:
        case PLX_DTYPE_BOOL:
            p[i] = (char)bit;
            break;
        case PLX_DTYPE_INT16: {
            int16_t v = (int16_t)bit;
            memcpy(p + i * 2, &v, 2);
            break;
        }
        case PLX_DTYPE_INT32: {
            int32_t v = (int32_t)bit;
            memcpy(p + i * 4, &v, 4);
            break;
        }
        case PLX_DTYPE_INT64: {
            int64_t v = (int64_t)bit;
            memcpy(p + i * 8, &v, 8);
            break;
        }
        case PLX_DTYPE_INVALID:
            break;
        }
    }
}

/* mkdir -p. */
static bool make_dirs(const char *path, char *err, size_t err_size) {
    char *copy = strdup(path);
    if (!copy) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    bool ok = true;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p) {
            continue;
        }
        char c = *p;
        *p = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
            snprintf(err, err_size, "cannot create directory '%s': %s", copy, strerror(errno));
            ok = false;
            break;
        }
        *p = c;
        if (!c) {
            break;
        }
    }
    struct stat st;
    if (ok && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(err, err_size, "'%s' is not a directory", path);
        ok = false;
    }
    free(copy);
    return ok;
}

/* The file name of an output: characters outside [A-Za-z0-9._-] become
 * '_'; "", "." and ".." become "_", "_." and "_..". */
static char *sanitize_name(const char *name) {
    size_t n = strlen(name);
    char *s = malloc(n + 2);
    if (!s) {
        return NULL;
    }
    size_t k = 0;
    if (n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        s[k++] = '_';
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        s[k++] = ok ? c : '_';
    }
    s[k] = '\0';
    return s;
}

/* ------------------------------------------------------------------------ */
/* Progress on a terminal                                                     */
/* ------------------------------------------------------------------------ */

typedef struct progress {
    bool enabled;
    bool shown;
    uint64_t last_ns;
    int width;
} progress;

static void progress_init(progress *p) {
    p->enabled = isatty(STDERR_FILENO) == 1;
    p->shown = false;
    p->last_ns = now_ns();
    p->width = 0;
}

/* At most ten updates a second, the first after 100 ms. */
static void progress_update(progress *p, const char *what, size_t done, size_t total) {
    if (!p->enabled) {
        return;
    }
    uint64_t now = now_ns();
    if (now - p->last_ns < 100000000u) {
        return;
    }
    p->last_ns = now;
    int w = fprintf(stderr, "\r  %s %zu/%zu", what, done, total);
    if (w < p->width) {
        fprintf(stderr, "%*s", p->width - w, "");
    } else {
        p->width = w;
    }
    fflush(stderr);
    p->shown = true;
}

static void progress_clear(progress *p) {
    if (p->shown) {
        fprintf(stderr, "\r%*s\r", p->width, "");
        fflush(stderr);
        p->shown = false;
    }
}

/* ------------------------------------------------------------------------ */
/* The run                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct input_data {
    const plx_onnx_io *io;
    void *data; /* owned */
    size_t bytes;
    const char *file; /* NULL: random */
    uint64_t seed;
} input_data;

typedef struct output_data {
    const plx_onnx_io *io;
    plx_tensor_info info; /* the loaded network's */
    void *data;           /* owned: the results of the last run (of thread 0) */
    size_t bytes;
    char *path;           /* written to, or NULL */
} output_data;

typedef struct backend_count {
    char *id;
    size_t layers;    /* every layer of the network, as the optimiser's summary */
    size_t constants; /* of which constants */
    size_t io;        /* of which network inputs and outputs */
    size_t inserted;  /* copies and imports the optimiser inserted */
} backend_count;

typedef struct fallback {
    char *layer;
    plx_op op;
    char *from;
    char *to;
    char *reason;
} fallback;

typedef struct top_class {
    size_t index;
    float score;
} top_class;

typedef struct run_state {
    const run_args *args;
    plx_runtime *rt;
    plx_onnx_model *model;
    plx_optimized_network *optimized;
    plx_loaded_network *loaded;

    const char **backends; /* requested or defaulted */
    size_t backend_count;
    bool backends_defaulted;

    input_data *inputs;
    size_t input_count;
    output_data *outputs;
    size_t output_count;
    plx_tensor_binding *in_bindings;
    plx_tensor_binding *out_bindings;

    backend_count *counts;
    size_t count_count;
    fallback *fallbacks;
    size_t fallback_count;
    char **notes;
    size_t note_count;
    bool planned; /* loaded with externally managed memory */

    double import_ms, optimize_ms, load_ms;
    double *latencies; /* iterations entries, ms */
    size_t latency_count;
    double run_wall_ms;

    bool classifier;
    top_class top[TOP_K];
    size_t top_count;
} run_state;

static void run_state_free(run_state *s) {
    plx_optimized_network_destroy(&s->optimized);
    plx_loaded_network_unload(&s->loaded);
    plx_onnx_model_destroy(&s->model);
    plx_runtime_destroy(&s->rt);
    free(s->backends);
    for (size_t i = 0; i < s->input_count; i++) {
        free(s->inputs[i].data);
    }
    free(s->inputs);
    for (size_t i = 0; i < s->output_count; i++) {
        free(s->outputs[i].data);
        free(s->outputs[i].path);
    }
    free(s->outputs);
    free(s->in_bindings);
    free(s->out_bindings);
    for (size_t i = 0; i < s->count_count; i++) {
        free(s->counts[i].id);
    }
    free(s->counts);
    for (size_t i = 0; i < s->fallback_count; i++) {
        free(s->fallbacks[i].layer);
        free(s->fallbacks[i].from);
        free(s->fallbacks[i].to);
        free(s->fallbacks[i].reason);
    }
    free(s->fallbacks);
    for (size_t i = 0; i < s->note_count; i++) {
        free(s->notes[i]);
    }
    free(s->notes);
    free(s->latencies);
}

static bool oom(void) {
    fprintf(stderr, PREFIX ": out of memory\n");
    return false;
}

static bool choose_backends(run_state *s) {
    const run_args *a = s->args;
    size_t n = plx_runtime_backend_count(s->rt);
    s->backends = calloc((a->backend_count ? a->backend_count : n) + 1, sizeof *s->backends);
    if (!s->backends) {
        return oom();
    }
    /* The available ones, for messages. */
    char avail[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(s->rt, i);
        if (b->available && len < sizeof avail) {
            len += (size_t)snprintf(avail + len, sizeof avail - len, "%s%s", len ? ", " : "",
                                    b->id);
        }
    }
    if (a->backend_count) {
        for (size_t i = 0; i < a->backend_count; i++) {
            s->backends[i] = a->backends[i];
            if (!a->no_fallback) {
                continue;
            }
            const plx_backend_info *b = plx_runtime_find_backend(s->rt, a->backends[i]);
            if (!b || !b->available) {
                fprintf(stderr,
                        PREFIX ": backend '%s' %s%s (available: %s); with --no-fallback every "
                               "backend named in --backends must be available\n",
                        a->backends[i], b ? "is unavailable: " : "is not loaded",
                        b ? b->reason : "", *avail ? avail : "none");
                return false;
            }
        }
        s->backend_count = a->backend_count;
        return true;
    }
    s->backends_defaulted = true;
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(s->rt, i);
        if (b->available) {
            s->backends[s->backend_count++] = b->id;
        }
    }
    if (!s->backend_count) {
        fprintf(stderr,
                PREFIX ": no backend is available (%zu found, %zu plug-in files refused); "
                       "'plexus info' shows the search path and why\n",
                n, plx_runtime_rejection_count(s->rt));
        return false;
    }
    return true;
}

static bool import_model(run_state *s) {
    const run_args *a = s->args;
    plx_onnx_options opts;
    plx_onnx_options_init(&opts);
    opts.shapes = a->shapes;
    opts.shape_count = a->shape_count;
    npy_array *arrays = calloc(a->constant_count ? a->constant_count : 1, sizeof *arrays);
    plx_onnx_constant_input *constants =
        calloc(a->constant_count ? a->constant_count : 1, sizeof *constants);
    bool ok = arrays && constants;
    if (!ok) {
        fprintf(stderr, PREFIX ": out of memory\n");
    }
    for (size_t i = 0; ok && i < a->constant_count; i++) {
        char err[512];
        if (!npy_read(a->constants[i].file, &arrays[i], err, sizeof err)) {
            fprintf(stderr, PREFIX ": --constant %s: %s\n", a->constants[i].name, err);
            ok = false;
            break;
        }
        constants[i].name = a->constants[i].name;
        constants[i].info.dtype = arrays[i].dtype;
        constants[i].info.rank = arrays[i].rank;
        memcpy(constants[i].info.dims, arrays[i].dims, sizeof arrays[i].dims);
        constants[i].data = arrays[i].data;
    }
    opts.constants = constants;
    opts.constant_count = a->constant_count;
    uint64_t t0 = now_ns();
    plx_status st = NULL;
    if (ok) {
        st = plx_onnx_import_file(a->model, &opts, &s->model); /* copies the constants */
    }
    s->import_ms = ms_between(t0, now_ns());
    for (size_t i = 0; arrays && i < a->constant_count; i++) {
        npy_free(&arrays[i]);
    }
    free(arrays);
    free(constants);
    if (!ok) {
        return false;
    }
    if (st) {
        const char *msg = plx_status_get_message(st);
        /* The importer's messages name the file; say which when not. */
        if (strstr(msg, a->model)) {
            fprintf(stderr, PREFIX ": %s\n", msg);
        } else {
            fprintf(stderr, PREFIX ": cannot import '%s': %s\n", a->model, msg);
        }
        if (strstr(msg, "must be known at import")) {
            fprintf(stderr, PREFIX ": a graph input that must be known at import can be "
                            "frozen to a value with --constant NAME=FILE.npy\n");
        }
        plx_status_free(st);
        return false;
    }
    return true;
}

static const plx_onnx_io *find_model_input(const plx_onnx_model *m, const char *name) {
    for (size_t i = 0; i < plx_onnx_model_input_count(m); i++) {
        const plx_onnx_io *io = plx_onnx_model_input(m, i);
        if (strcmp(io->name, name) == 0) {
            return io;
        }
    }
    return NULL;
}

static bool same_shape(const plx_tensor_info *x, uint32_t rank, const int64_t *dims) {
    if (x->rank != rank) {
        return false;
    }
    for (uint32_t i = 0; i < rank; i++) {
        if (x->dims[i] != dims[i]) {
            return false;
        }
    }
    return true;
}

static bool prepare_inputs(run_state *s) {
    const run_args *a = s->args;
    /* Every --input names an input of the model. */
    for (size_t k = 0; k < a->input_count; k++) {
        if (!find_model_input(s->model, a->inputs[k].name)) {
            char names[1024] = "";
            size_t len = 0;
            for (size_t i = 0; i < plx_onnx_model_input_count(s->model) && len < sizeof names;
                 i++) {
                len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                        i ? ", " : "", plx_onnx_model_input(s->model, i)->name);
            }
            fprintf(stderr, PREFIX ": --input '%s': the model has no input '%s' (its inputs: %s)\n",
                    a->inputs[k].name, a->inputs[k].name, *names ? names : "none");
            return false;
        }
    }
    size_t n = plx_onnx_model_input_count(s->model);
    s->inputs = calloc(n ? n : 1, sizeof *s->inputs);
    s->in_bindings = calloc(n ? n : 1, sizeof *s->in_bindings);
    if (!s->inputs || !s->in_bindings) {
        return oom();
    }
    for (size_t i = 0; i < n; i++) {
        const plx_onnx_io *io = plx_onnx_model_input(s->model, i);
        input_data *d = &s->inputs[s->input_count++];
        d->io = io;
        const input_arg *given = NULL;
        for (size_t k = 0; k < a->input_count; k++) {
            if (strcmp(a->inputs[k].name, io->name) == 0) {
                given = &a->inputs[k];
            }
        }
        size_t bytes = 0, count = 0;
        if (!plx_tensor_info_byte_size(&io->info, &bytes) ||
            !plx_tensor_info_element_count(&io->info, &count)) {
            fprintf(stderr, PREFIX ": input '%s' has an invalid dtype or shape\n", io->name);
            return false;
        }
        char want[128], got[128];
        if (given) {
            npy_array arr;
            char err[1024];
            if (!npy_read(given->file, &arr, err, sizeof err)) {
                fprintf(stderr, PREFIX ": input '%s': %s\n", io->name, err);
                return false;
            }
            if (arr.dtype != io->info.dtype || !same_shape(&io->info, arr.rank, arr.dims)) {
                plx_tensor_info ai = {.dtype = arr.dtype, .rank = arr.rank};
                memcpy(ai.dims, arr.dims, sizeof ai.dims);
                fprintf(stderr,
                        PREFIX ": input '%s': expected %s %s, got %s %s from '%s'\n", io->name,
                        plx_dtype_name(io->info.dtype), shape_text(&io->info, want, sizeof want),
                        plx_dtype_name(arr.dtype), shape_text(&ai, got, sizeof got), given->file);
                npy_free(&arr);
                return false;
            }
            d->data = arr.data; /* taken over: released with free */
            d->bytes = arr.bytes;
            d->file = given->file;
        } else {
            d->data = malloc(bytes ? bytes : 1);
            if (!d->data) {
                return oom();
            }
            d->bytes = bytes;
            d->seed = (uint64_t)i + 1;
            fill_random(io->info.dtype, d->data, count, d->seed);
        }
        s->in_bindings[i] = (plx_tensor_binding){io->binding_id, d->data, d->bytes, 0};
    }
    return true;
}

static bool record_assignment(run_state *s) {
    const plx_optimized_network *o = s->optimized;
    size_t n = plx_optimized_network_layer_count(o);
    s->counts = calloc(n ? n : 1, sizeof *s->counts);
    s->fallbacks = calloc(n ? n : 1, sizeof *s->fallbacks);
    size_t notes = plx_optimized_network_note_count(o);
    s->notes = calloc(notes ? notes : 1, sizeof *s->notes);
    if (!s->counts || !s->fallbacks || !s->notes) {
        return oom();
    }
    for (size_t i = 0; i < n; i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(o, i);
        backend_count *c = NULL;
        for (size_t k = 0; k < s->count_count; k++) {
            if (strcmp(s->counts[k].id, l->backend_id) == 0) {
                c = &s->counts[k];
            }
        }
        if (!c) {
            c = &s->counts[s->count_count++];
            c->id = strdup(l->backend_id);
            if (!c->id) {
                return oom();
            }
        }
        if (l->inserted) {
            c->inserted++;
        } else {
            c->layers++;
            c->constants += l->op == PLX_OP_CONSTANT;
            c->io += l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT;
        }
        if (l->refusal_count) {
            fallback *f = &s->fallbacks[s->fallback_count++];
            f->layer = strdup(l->layer_name);
            f->op = l->op;
            f->from = strdup(l->refusals[0].backend_id);
            f->to = strdup(l->backend_id);
            f->reason = strdup(l->refusals[0].reason);
            if (!f->layer || !f->from || !f->to || !f->reason) {
                return oom();
            }
        }
    }
    for (size_t i = 0; i < notes; i++) {
        s->notes[i] = strdup(plx_optimized_network_note(o, i));
        if (!s->notes[i]) {
            return oom();
        }
        s->note_count++;
    }
    return true;
}

/* What the load options need of every backend used: externally managed
 * memory (the host plans it) and, for several threads, async execution. */
static bool backends_support(run_state *s, bool async, bool report) {
    for (size_t i = 0; i < s->count_count; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(s->rt, s->counts[i].id);
        const char *missing = NULL;
        if (!b) {
            missing = "(unknown backend)";
        } else if (async && !plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION)) {
            missing = PLX_CAP_ASYNC_EXECUTION;
        } else if (!plx_backend_info_has_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)) {
            missing = PLX_CAP_EXTERNALLY_MANAGED_MEMORY;
        } else if (!(plx_backend_info_import_sources(b) & PLX_MEMORY_SOURCE_MALLOC)) {
            missing = PLX_CAP_IMPORT_MALLOC;
        }
        if (missing) {
            if (report) {
                fprintf(stderr,
                        PREFIX ": --threads %ld needs asynchronous execution, which backend "
                               "'%s' does not support (it does not report %s); use --threads 1, "
                               "or other backends (--backends)\n",
                        s->args->threads, s->counts[i].id, missing);
            }
            return false;
        }
    }
    return true;
}

static bool optimize_and_load(run_state *s) {
    const run_args *a = s->args;
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = s->backends;
    oo.backend_count = s->backend_count;
    oo.allow_fallback = !a->no_fallback;
    uint64_t t0 = now_ns();
    plx_status st =
        plx_optimize(s->rt, plx_onnx_model_network(s->model), &oo, &s->optimized);
    s->optimize_ms = ms_between(t0, now_ns());
    if (st) {
        fail_status("cannot assign the model's layers to backends", st);
        return false;
    }
    if (!record_assignment(s)) {
        return false;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    if (a->threads > 1) {
        if (!backends_support(s, true, true)) {
            return false;
        }
        lo.async_execution = true;
    }
    s->planned = backends_support(s, false, false);
    lo.externally_managed_memory = s->planned;
    t0 = now_ns();
    st = plx_runtime_load_network(s->rt, &s->optimized, &lo, &s->loaded);
    s->load_ms = ms_between(t0, now_ns());
    if (st) {
        fail_status("cannot load the network", st);
        return false;
    }
    return true;
}

static bool prepare_outputs(run_state *s) {
    size_t n = plx_onnx_model_output_count(s->model);
    s->outputs = calloc(n ? n : 1, sizeof *s->outputs);
    s->out_bindings = calloc(n ? n : 1, sizeof *s->out_bindings);
    if (!s->outputs || !s->out_bindings) {
        return oom();
    }
    for (size_t i = 0; i < n; i++) {
        output_data *d = &s->outputs[s->output_count++];
        d->io = plx_onnx_model_output(s->model, i);
        plx_status st = plx_loaded_network_output_info(s->loaded, d->io->binding_id, &d->info);
        if (st) {
            fail_status("cannot read an output's tensor info", st);
            return false;
        }
        if (!plx_tensor_info_byte_size(&d->info, &d->bytes)) {
            fprintf(stderr, PREFIX ": output '%s' has an invalid dtype or shape\n", d->io->name);
            return false;
        }
        d->data = calloc(1, d->bytes ? d->bytes : 1);
        if (!d->data) {
            return oom();
        }
        s->out_bindings[i] = (plx_tensor_binding){d->io->binding_id, d->data, d->bytes, 0};
    }
    return true;
}

/* What the worker threads share. Workers do their warm-up runs, then wait
 * for `go`, so that the timed runs of every thread start together. */
typedef struct workers_shared {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t ready; /* workers done with their warm-up */
    bool go;
    atomic_size_t done;     /* timed runs finished, all threads */
    atomic_size_t finished; /* workers returned */
    atomic_bool stop;       /* a run failed: the others stop */
} workers_shared;

/* One thread's share of the iterations, with its own working memory. */
typedef struct worker {
    run_state *s;
    workers_shared *shared;
    pthread_t thread;
    plx_working_memory *wm;
    plx_tensor_binding *outputs; /* bindings into buffers (thread 0: the state's) */
    void **buffers;              /* owned, threads > 0 */
    double *latencies;           /* its slice of s->latencies */
    size_t count;
    plx_status error;
} worker;

static plx_status run_once(worker *w) {
    plx_execute_args ea;
    plx_execute_args_init(&ea);
    ea.inputs = w->s->in_bindings;
    ea.input_count = w->s->input_count;
    ea.outputs = w->outputs;
    ea.output_count = w->s->output_count;
    return plx_loaded_network_run(w->s->loaded, w->wm, &ea);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    workers_shared *sh = w->shared;
    for (long i = 0; !w->error && i < w->s->args->warmup && !atomic_load(&sh->stop); i++) {
        w->error = run_once(w);
    }
    if (w->error) {
        atomic_store(&sh->stop, true);
    }
    pthread_mutex_lock(&sh->lock);
    sh->ready++;
    pthread_cond_broadcast(&sh->cond);
    while (!sh->go) {
        pthread_cond_wait(&sh->cond, &sh->lock);
    }
    pthread_mutex_unlock(&sh->lock);
    for (size_t i = 0; !w->error && i < w->count && !atomic_load(&sh->stop); i++) {
        uint64_t t0 = now_ns();
        w->error = run_once(w);
        w->latencies[i] = ms_between(t0, now_ns());
        atomic_fetch_add(&sh->done, 1);
    }
    if (w->error) {
        atomic_store(&sh->stop, true);
    }
    atomic_fetch_add(&sh->finished, 1);
    return NULL;
}

/* Lets the workers waiting for `go` start. */
static void release_workers(workers_shared *sh) {
    pthread_mutex_lock(&sh->lock);
    sh->go = true;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
}

static bool run_threads(run_state *s, progress *pg) {
    size_t n = (size_t)s->args->threads;
    size_t total = s->latency_count;
    worker *ws = calloc(n, sizeof *ws);
    workers_shared sh = {.ready = 0, .go = false};
    if (!ws) {
        return oom();
    }
    if (pthread_mutex_init(&sh.lock, NULL) != 0 || pthread_cond_init(&sh.cond, NULL) != 0) {
        free(ws);
        fprintf(stderr, PREFIX ": cannot create a mutex\n");
        return false;
    }
    atomic_init(&sh.done, 0);
    atomic_init(&sh.finished, 0);
    atomic_init(&sh.stop, false);
    bool ok = true;
    size_t offset = 0;
    for (size_t t = 0; ok && t < n; t++) {
        worker *w = &ws[t];
        w->s = s;
        w->shared = &sh;
        w->count = total / n + (t < total % n);
        w->latencies = s->latencies + offset;
        offset += w->count;
        plx_status st = plx_loaded_network_create_working_memory(s->loaded, &w->wm);
        if (st) {
            fail_status("cannot create a working memory", st);
            ok = false;
            break;
        }
        if (t == 0) {
            w->outputs = s->out_bindings;
            continue;
        }
        w->outputs = calloc(s->output_count ? s->output_count : 1, sizeof *w->outputs);
        w->buffers = calloc(s->output_count ? s->output_count : 1, sizeof *w->buffers);
        if (!w->outputs || !w->buffers) {
            ok = oom();
            break;
        }
        for (size_t k = 0; ok && k < s->output_count; k++) {
            w->buffers[k] = malloc(s->outputs[k].bytes ? s->outputs[k].bytes : 1);
            if (!w->buffers[k]) {
                ok = oom();
            }
            w->outputs[k] = s->out_bindings[k];
            w->outputs[k].data = w->buffers[k];
        }
    }
    size_t started = 0;
    for (; ok && started < n; started++) {
        int rc = pthread_create(&ws[started].thread, NULL, worker_main, &ws[started]);
        if (rc) {
            fprintf(stderr, PREFIX ": cannot start a thread: %s\n", strerror(rc));
            ok = false;
            atomic_store(&sh.stop, true);
            break;
        }
    }
    if (started) {
        /* Wait for every warm-up, then time the runs of all threads. */
        pthread_mutex_lock(&sh.lock);
        while (sh.ready < started) {
            pthread_cond_wait(&sh.cond, &sh.lock);
        }
        pthread_mutex_unlock(&sh.lock);
        uint64_t t0 = now_ns();
        release_workers(&sh);
        while (atomic_load(&sh.finished) < started) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
            progress_update(pg, "iteration", atomic_load(&sh.done), total);
        }
        for (size_t t = 0; t < started; t++) {
            pthread_join(ws[t].thread, NULL);
        }
        s->run_wall_ms = ms_between(t0, now_ns());
        progress_clear(pg);
    }
    for (size_t t = 0; t < n; t++) {
        worker *w = &ws[t];
        if (w->error) {
            if (ok) {
                fail_status("execution failed", w->error);
            } else {
                plx_status_free(w->error);
            }
            ok = false;
        }
        plx_working_memory_destroy(&w->wm);
        if (t > 0) {
            for (size_t k = 0; w->buffers && k < s->output_count; k++) {
                free(w->buffers[k]);
            }
            free(w->buffers);
            free(w->outputs);
        }
    }
    pthread_cond_destroy(&sh.cond);
    pthread_mutex_destroy(&sh.lock);
    free(ws);
    return ok;
}

static bool run_single(run_state *s, progress *pg) {
    const run_args *a = s->args;
    for (long i = 0; i < a->warmup; i++) {
        plx_status st = plx_loaded_network_execute(s->loaded, s->in_bindings, s->input_count,
                                                   s->out_bindings, s->output_count);
        if (st) {
            progress_clear(pg);
            fail_status("execution failed (warm-up)", st);
            return false;
        }
        progress_update(pg, "warm-up", (size_t)i + 1, (size_t)a->warmup);
    }
    uint64_t start = now_ns();
    for (size_t i = 0; i < s->latency_count; i++) {
        uint64_t t0 = now_ns();
        plx_status st = plx_loaded_network_execute(s->loaded, s->in_bindings, s->input_count,
                                                   s->out_bindings, s->output_count);
        s->latencies[i] = ms_between(t0, now_ns());
        if (st) {
            progress_clear(pg);
            fail_status("execution failed", st);
            return false;
        }
        progress_update(pg, "iteration", i + 1, s->latency_count);
    }
    s->run_wall_ms = ms_between(start, now_ns());
    progress_clear(pg);
    return true;
}

static bool execute_all(run_state *s) {
    s->latency_count = (size_t)s->args->iterations;
    s->latencies = calloc(s->latency_count, sizeof *s->latencies);
    if (!s->latencies) {
        return oom();
    }
    progress pg;
    progress_init(&pg);
    return s->args->threads > 1 ? run_threads(s, &pg) : run_single(s, &pg);
}

static bool write_outputs(run_state *s) {
    const char *dir = s->args->output_dir;
    if (!dir) {
        return true;
    }
    char err[1024];
    if (!make_dirs(dir, err, sizeof err)) {
        fprintf(stderr, PREFIX ": --output-dir: %s\n", err);
        return false;
    }
    for (size_t i = 0; i < s->output_count; i++) {
        output_data *d = &s->outputs[i];
        char *name = sanitize_name(d->io->name);
        if (!name) {
            return oom();
        }
        /* Two names that sanitise alike: number the later ones. */
        size_t len = strlen(dir) + strlen(name) + 32;
        d->path = malloc(len);
        if (!d->path) {
            free(name);
            return oom();
        }
        snprintf(d->path, len, "%s/%s.npy", dir, name);
        for (unsigned dup = 1;; dup++) {
            bool taken = false;
            for (size_t k = 0; k < i; k++) {
                taken = taken || strcmp(s->outputs[k].path, d->path) == 0;
            }
            if (!taken) {
                break;
            }
            snprintf(d->path, len, "%s/%s-%u.npy", dir, name, dup);
        }
        free(name);

        npy_array arr = {.dtype = d->info.dtype, .rank = d->info.rank, .data = d->data,
                         .bytes = d->bytes};
        memcpy(arr.dims, d->info.dims, sizeof arr.dims);
        float *converted = NULL;
        if (d->info.dtype == PLX_DTYPE_BFLOAT16) {
            /* NumPy has no bfloat16: written as float32. */
            size_t count = d->bytes / 2;
            converted = malloc(count ? count * sizeof *converted : 1);
            if (!converted) {
                return oom();
            }
            for (size_t k = 0; k < count; k++) {
                converted[k] = float_at(PLX_DTYPE_BFLOAT16, d->data, k);
            }
            arr.dtype = PLX_DTYPE_FLOAT32;
            arr.data = converted;
            arr.bytes = count * sizeof *converted;
        }
        bool ok = npy_write(d->path, &arr, err, sizeof err);
        free(converted);
        if (!ok) {
            fprintf(stderr, PREFIX ": output '%s': %s\n", d->io->name, err);
            return false;
        }
    }
    return true;
}

/* One output, float, shape [1, K] or [K] with K >= 2: its top classes. */
static void find_top_classes(run_state *s) {
    if (s->output_count != 1) {
        return;
    }
    const output_data *d = &s->outputs[0];
    const plx_tensor_info *t = &d->info;
    int64_t k = 0;
    if (t->rank == 1) {
        k = t->dims[0];
    } else if (t->rank == 2 && t->dims[0] == 1) {
        k = t->dims[1];
    }
    if (!is_float_dtype(t->dtype) || k < 2) {
        return;
    }
    s->classifier = true;
    for (size_t i = 0; i < (size_t)k; i++) {
        float v = float_at(t->dtype, d->data, i);
        if (isnan(v)) {
            continue;
        }
        size_t pos = s->top_count;
        while (pos > 0 && s->top[pos - 1].score < v) {
            pos--;
        }
        if (pos >= TOP_K) {
            continue;
        }
        size_t last = s->top_count < TOP_K ? s->top_count : TOP_K - 1;
        memmove(&s->top[pos + 1], &s->top[pos], (last - pos) * sizeof s->top[0]);
        s->top[pos] = (top_class){i, v};
        if (s->top_count < TOP_K) {
            s->top_count++;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Report                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct latency_stats {
    double min, median, p90, max, mean, throughput;
} latency_stats;

static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static latency_stats compute_stats(const run_state *s) {
    latency_stats st = {0};
    size_t n = s->latency_count;
    if (n == 0) {
        return st;
    }
    qsort(s->latencies, n, sizeof *s->latencies, compare_double);
    const double *l = s->latencies;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += l[i];
    }
    st.min = l[0];
    st.max = l[n - 1];
    st.median = n % 2 ? l[n / 2] : (l[n / 2 - 1] + l[n / 2]) / 2;
    st.p90 = l[(9 * n + 9) / 10 - 1]; /* nearest rank: ceil(0.9 n) */
    st.mean = sum / (double)n;
    st.throughput = s->run_wall_ms > 0 ? (double)n / (s->run_wall_ms / 1000.0) : 0;
    return st;
}

/* "1.234 ms", or "20.8 us". */
static const char *latency_text(double ms, bool us, char *buf, size_t size) {
    if (us) {
        snprintf(buf, size, "%.1f us", ms * 1000.0);
    } else {
        snprintf(buf, size, "%.3f ms", ms);
    }
    return buf;
}

/* "0.982"; tiny scores as "2.3e-05" rather than "0.000". */
static const char *score_text(float v, char *buf, size_t size) {
    double d = (double)v;
    if (d == 0 || fabs(d) >= 0.001) {
        snprintf(buf, size, "%.3f", d);
    } else {
        snprintf(buf, size, "%.1e", d);
    }
    return buf;
}

static int name_width(const run_state *s) {
    size_t w = 4;
    for (size_t i = 0; i < s->input_count; i++) {
        size_t n = strlen(s->inputs[i].io->name);
        w = n > w ? n : w;
    }
    for (size_t i = 0; i < s->output_count; i++) {
        size_t n = strlen(s->outputs[i].io->name);
        w = n > w ? n : w;
    }
    return w > 40 ? 40 : (int)w;
}

static void print_text(FILE *out, const run_state *s, const latency_stats *st) {
    const run_args *a = s->args;
    char buf[256];
    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(s->model, &facts);
    int w = name_width(s);

    fprintf(out, "Model: %s\n", a->model);
    fprintf(out, "  %s%s%sIR version %" PRId64 ", opset %" PRId64 ", %zu nodes (%zu folded at "
                 "import)\n",
            *facts.producer ? "producer " : "", facts.producer, *facts.producer ? ", " : "",
            facts.ir_version, facts.opset, facts.node_count, facts.folded_count);

    fputs("\nInputs:\n", out);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        fprintf(out, "  %-*s  %-8s %s\n", w, d->io->name, plx_dtype_name(d->io->info.dtype),
                shape_text(&d->io->info, buf, sizeof buf));
    }
    if (!s->input_count) {
        fputs("  (none)\n", out);
    }
    fputs("Outputs:\n", out);
    for (size_t i = 0; i < s->output_count; i++) {
        const output_data *d = &s->outputs[i];
        fprintf(out, "  %-*s  %-8s %s\n", w, d->io->name, plx_dtype_name(d->info.dtype),
                shape_text(&d->info, buf, sizeof buf));
    }

    fputs("\nInput data:\n", out);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        if (d->file) {
            fprintf(out, "  %s: %s\n", d->io->name, d->file);
        } else {
            fprintf(out, "  %s: random %s %s (seed %" PRIu64 ")\n", d->io->name,
                    plx_dtype_name(d->io->info.dtype), shape_text(&d->io->info, buf, sizeof buf),
                    d->seed);
        }
    }
    if (!s->input_count) {
        fputs("  (none)\n", out);
    }

    fputs("\nBackends: ", out);
    for (size_t i = 0; i < s->backend_count; i++) {
        fprintf(out, "%s%s", i ? ", " : "", s->backends[i]);
    }
    fprintf(out, " (%s%s)\n", s->backends_defaulted ? "every available backend" : "--backends",
            a->no_fallback ? "; no fallback" : "");
    fputs("Assignment:\n", out);
    for (size_t i = 0; i < s->count_count; i++) {
        const backend_count *c = &s->counts[i];
        fprintf(out, "  %s: %zu layer%s (%zu compute, %zu constant%s, %zu input%s/output%s)",
                c->id, c->layers, c->layers == 1 ? "" : "s", c->layers - c->constants - c->io,
                c->constants, c->constants == 1 ? "" : "s", c->io, c->io == 1 ? "" : "s",
                c->io == 1 ? "" : "s");
        if (c->inserted) {
            fprintf(out, " (+%zu inserted cop%s/import%s)", c->inserted,
                    c->inserted == 1 ? "y" : "ies", c->inserted == 1 ? "" : "s");
        }
        fputc('\n', out);
    }
    if (!s->fallback_count) {
        fputs("  fallbacks: none\n", out);
    } else {
        fprintf(out, "  fallbacks (%zu):\n", s->fallback_count);
        for (size_t i = 0; i < s->fallback_count; i++) {
            const fallback *f = &s->fallbacks[i];
            fprintf(out, "    '%s' (%s): %s -> %s: %s\n", f->layer, plx_op_name(f->op), f->from,
                    f->to, f->reason);
        }
    }
    for (size_t i = 0; i < s->note_count; i++) {
        fprintf(out, "  note: %s\n", s->notes[i]);
    }

    fprintf(out, "\nLoad: %.3f ms (import %.3f, optimize %.3f, load %.3f)\n",
            s->import_ms + s->optimize_ms + s->load_ms, s->import_ms, s->optimize_ms,
            s->load_ms);
    fprintf(out, "Runs: %ld iteration%s after %ld warm-up run%s%s, %ld thread%s\n", a->iterations,
            a->iterations == 1 ? "" : "s", a->warmup, a->warmup == 1 ? "" : "s",
            a->threads > 1 ? " per thread" : "", a->threads, a->threads == 1 ? "" : "s");
    /* One unit for the line: microseconds when the median is under 0.1 ms. */
    bool us = st->median < 0.1;
    char t[4][32];
    fprintf(out, "Latency: min %s, median %s, p90 %s, max %s\n",
            latency_text(st->min, us, t[0], sizeof t[0]),
            latency_text(st->median, us, t[1], sizeof t[1]),
            latency_text(st->p90, us, t[2], sizeof t[2]),
            latency_text(st->max, us, t[3], sizeof t[3]));
    fprintf(out, "Throughput: %.1f inferences/s\n", st->throughput);

    fputs("\nMemory plan:\n", out);
    size_t reports = s->loaded ? plx_loaded_network_memory_report_count(s->loaded) : 0;
    for (size_t i = 0; i < reports; i++) {
        const plx_memory_report *r = plx_loaded_network_memory_report(s->loaded, i);
        fprintf(out, "  %s: %zu bytes (lower bound %zu), %s strategy, %zu buffer%s for %zu "
                     "tensor%s\n",
                r->backend_id, r->bytes, r->lower_bound, r->strategy ? r->strategy : "?",
                r->buffer_count, r->buffer_count == 1 ? "" : "s", r->tensor_count,
                r->tensor_count == 1 ? "" : "s");
    }
    if (!reports) {
        fprintf(out, "  %s\n", s->planned ? "(nothing to plan)"
                                          : "none: a backend used manages its own memory");
    }

    if (s->classifier) {
        const char *name = s->outputs[0].io->name;
        fputs("\nPrediction:\n", out);
        char score[32];
        if (s->top_count) {
            fprintf(out, "  %s: top-1 class %zu (%s)\n", name, s->top[0].index,
                    score_text(s->top[0].score, score, sizeof score));
        }
        if (s->top_count > 1) {
            fprintf(out, "  %s: top-%zu classes", name, s->top_count);
            for (size_t i = 0; i < s->top_count; i++) {
                fprintf(out, "%s %zu (%s)", i ? "," : "", s->top[i].index,
                        score_text(s->top[i].score, score, sizeof score));
            }
            fputc('\n', out);
        }
    }

    if (a->output_dir) {
        fputs("\nOutputs written:\n", out);
        for (size_t i = 0; i < s->output_count; i++) {
            fprintf(out, "  %s: %s\n", s->outputs[i].io->name, s->outputs[i].path);
        }
    }
    if (a->profile) {
        fprintf(out, "\nTrace written: %s\n", a->profile);
    }
}

static void json_io(json_writer *w, const char *name, const plx_tensor_info *info) {
    json_key(w, "name");
    json_string(w, name);
    json_key(w, "dtype");
    json_string(w, plx_dtype_name(info->dtype));
    json_key(w, "shape");
    json_shape(w, info);
}

static void print_json(FILE *out, const run_state *s, const latency_stats *st) {
    const run_args *a = s->args;
    json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "model");
    json_string(&w, a->model);

    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(s->model, &facts);
    json_key(&w, "model_facts");
    json_begin_object(&w);
    json_key(&w, "producer");
    json_string(&w, facts.producer);
    json_key(&w, "ir_version");
    json_int(&w, facts.ir_version);
    json_key(&w, "opset");
    json_int(&w, facts.opset);
    json_key(&w, "node_count");
    json_int(&w, (int64_t)facts.node_count);
    json_key(&w, "folded_count");
    json_int(&w, (int64_t)facts.folded_count);
    json_end_object(&w);

    json_key(&w, "inputs");
    json_begin_array(&w);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        json_begin_object(&w);
        json_io(&w, d->io->name, &d->io->info);
        json_key(&w, "source");
        json_string(&w, d->file ? "file" : "random");
        json_key(&w, "file");
        json_string(&w, d->file);
        json_key(&w, "seed");
        if (d->file) {
            json_null(&w);
        } else {
            json_int(&w, (int64_t)d->seed);
        }
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "outputs");
    json_begin_array(&w);
    for (size_t i = 0; i < s->output_count; i++) {
        const output_data *d = &s->outputs[i];
        json_begin_object(&w);
        json_io(&w, d->io->name, &d->info);
        json_key(&w, "file");
        json_string(&w, d->path);
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "backends");
    json_begin_array(&w);
    for (size_t i = 0; i < s->backend_count; i++) {
        json_string(&w, s->backends[i]);
    }
    json_end_array(&w);
    json_key(&w, "allow_fallback");
    json_bool(&w, !a->no_fallback);

    json_key(&w, "assignment");
    json_begin_object(&w);
    json_key(&w, "layers");
    json_begin_object(&w);
    for (size_t i = 0; i < s->count_count; i++) {
        json_key(&w, s->counts[i].id);
        json_int(&w, (int64_t)s->counts[i].layers);
    }
    json_end_object(&w);
    json_key(&w, "inserted");
    json_begin_object(&w);
    for (size_t i = 0; i < s->count_count; i++) {
        json_key(&w, s->counts[i].id);
        json_int(&w, (int64_t)s->counts[i].inserted);
    }
    json_end_object(&w);
    json_key(&w, "fallbacks");
    json_begin_array(&w);
    for (size_t i = 0; i < s->fallback_count; i++) {
        const fallback *f = &s->fallbacks[i];
        json_begin_object(&w);
        json_key(&w, "layer");
        json_string(&w, f->layer);
        json_key(&w, "op");
        json_string(&w, plx_op_name(f->op));
        json_key(&w, "from");
        json_string(&w, f->from);
        json_key(&w, "to");
        json_string(&w, f->to);
        json_key(&w, "reason");
        json_string(&w, f->reason);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_key(&w, "notes");
    json_begin_array(&w);
    for (size_t i = 0; i < s->note_count; i++) {
        json_string(&w, s->notes[i]);
    }
    json_end_array(&w);
    json_end_object(&w);

    json_key(&w, "load_ms");
    json_double(&w, s->import_ms + s->optimize_ms + s->load_ms);
    json_key(&w, "load_phases_ms");
    json_begin_object(&w);
    json_key(&w, "import");
    json_double(&w, s->import_ms);
    json_key(&w, "optimize");
    json_double(&w, s->optimize_ms);
    json_key(&w, "load");
    json_double(&w, s->load_ms);
    json_end_object(&w);

    json_key(&w, "iterations");
    json_int(&w, a->iterations);
    json_key(&w, "warmup");
    json_int(&w, a->warmup);
    json_key(&w, "threads");
    json_int(&w, a->threads);
    json_key(&w, "latency_ms");
    json_begin_object(&w);
    json_key(&w, "min");
    json_double(&w, st->min);
    json_key(&w, "median");
    json_double(&w, st->median);
    json_key(&w, "p90");
    json_double(&w, st->p90);
    json_key(&w, "max");
    json_double(&w, st->max);
    json_key(&w, "mean");
    json_double(&w, st->mean);
    json_end_object(&w);
    json_key(&w, "throughput_per_s");
    json_double(&w, st->throughput);

    json_key(&w, "memory");
    json_begin_object(&w);
    size_t reports = plx_loaded_network_memory_report_count(s->loaded);
    for (size_t i = 0; i < reports; i++) {
        const plx_memory_report *r = plx_loaded_network_memory_report(s->loaded, i);
        json_key(&w, r->backend_id);
        json_begin_object(&w);
        json_key(&w, "bytes");
        json_int(&w, (int64_t)r->bytes);
        json_key(&w, "lower_bound");
        json_int(&w, (int64_t)r->lower_bound);
        json_key(&w, "strategy");
        json_string(&w, r->strategy);
        json_key(&w, "buffers");
        json_int(&w, (int64_t)r->buffer_count);
        json_key(&w, "tensors");
        json_int(&w, (int64_t)r->tensor_count);
        json_end_object(&w);
    }
    json_end_object(&w);

    if (s->classifier) {
        json_key(&w, "top_classes");
        json_begin_object(&w);
        json_key(&w, "output");
        json_string(&w, s->outputs[0].io->name);
        json_key(&w, "classes");
        json_begin_array(&w);
        for (size_t i = 0; i < s->top_count; i++) {
            json_begin_object(&w);
            json_key(&w, "class");
            json_int(&w, (int64_t)s->top[i].index);
            json_key(&w, "score");
            json_double(&w, (double)s->top[i].score);
            json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
    }

    json_key(&w, "output_dir");
    json_string(&w, a->output_dir);
    json_key(&w, "profile");
    json_string(&w, a->profile);
    json_end_object(&w);
}

static int run(const run_args *a) {
    run_state s = {.args = a};
    runtime_args rt_args = a->runtime;
    int rc = EXIT_RUNTIME;
    if (!runtime_args_create(&rt_args, PREFIX, &s.rt)) {
        goto done;
    }
    if (!choose_backends(&s)) {
        goto done;
    }
    if (a->profile) {
        plx_status st = plx_runtime_enable_profiling(s.rt, true);
        if (st) {
            fail_status("cannot enable profiling", st);
            goto done;
        }
    }
    if (!import_model(&s) || !prepare_inputs(&s) || !optimize_and_load(&s) ||
        !prepare_outputs(&s) || !execute_all(&s) || !write_outputs(&s)) {
        goto done;
    }
    find_top_classes(&s);
    if (a->profile) {
        plx_status st = plx_runtime_write_trace(s.rt, a->profile);
        if (st) {
            fail_status("cannot write the trace", st);
            goto done;
        }
    }
    latency_stats st = compute_stats(&s);
    if (a->json) {
        print_json(stdout, &s, &st);
    } else {
        print_text(stdout, &s, &st);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, PREFIX ": cannot write the output: %s\n", strerror(errno));
        goto done;
    }
    rc = EXIT_OK;
done:
    run_state_free(&s);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_run_args(argc, argv, &a);
    if (rc < 0) {
        rc = run(&a);
    }
    run_args_free(&a);
    return rc;
}
