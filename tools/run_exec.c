/* `plexus run`'s run: the backends, the model's import, the inputs (from
 * .npy files or seeded random values), the optimised and loaded network,
 * the executions (from one thread or several, each with its own working
 * memory) and the outputs. */
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

#include <plexus/dynamic.h>

#include "npy.h"
#include "run.h"

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

void run_fail_status(const char *what, plx_status s) {
    fprintf(stderr, PREFIX ": %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
}

/* "[1,3,224,224]"; "[]" for a scalar. */
const char *run_shape_text(const plx_tensor_info *info, char *buf, size_t size) {
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

/* float16, bfloat16 and the float8 types are converted by the SDK's
 * plexus/tensor.h. */
static bool is_float_dtype(plx_dtype d) {
    return d == PLX_DTYPE_FLOAT32 || d == PLX_DTYPE_FLOAT16 || d == PLX_DTYPE_BFLOAT16 ||
           d == PLX_DTYPE_FLOAT64 || plx_dtype_is_float8(d);
}

/* Element i of a float tensor as float. */
static float float_at(plx_dtype dtype, const void *data, size_t i) {
    if (dtype == PLX_DTYPE_FLOAT32) {
        float f;
        memcpy(&f, (const char *)data + i * 4, sizeof f);
        return f;
    }
    if (dtype == PLX_DTYPE_FLOAT64) {
        double v;
        memcpy(&v, (const char *)data + i * 8, sizeof v);
        return (float)v; /* a score to rank and print */
    }
    if (plx_dtype_is_float8(dtype)) {
        return plx_float8_to_float32(((const uint8_t *)data)[i], dtype);
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
        case PLX_DTYPE_FLOAT64: {
            double v = f;
            memcpy(p + i * 8, &v, 8);
            break;
        }
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
        case PLX_DTYPE_INT4:
        case PLX_DTYPE_UINT4:
            p[i] = (char)bit;
            break;
        case PLX_DTYPE_INT16:
        case PLX_DTYPE_UINT16: {
            uint16_t v = (uint16_t)bit;
            memcpy(p + i * 2, &v, 2);
            break;
        }
        case PLX_DTYPE_INT32:
        case PLX_DTYPE_UINT32: {
            uint32_t v = (uint32_t)bit;
            memcpy(p + i * 4, &v, 4);
            break;
        }
        case PLX_DTYPE_INT64:
        case PLX_DTYPE_UINT64: {
            uint64_t v = (uint64_t)bit;
            memcpy(p + i * 8, &v, 8);
            break;
        }
        case PLX_DTYPE_FLOAT8E4M3FN:
        case PLX_DTYPE_FLOAT8E4M3FNUZ:
        case PLX_DTYPE_FLOAT8E5M2:
        case PLX_DTYPE_FLOAT8E5M2FNUZ:
            p[i] = (char)plx_float32_to_float8(f, dtype, true);
            break;
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

void run_state_free(run_state *s) {
    plx_optimized_network_destroy(&s->optimized);
    plx_loaded_network_unload(&s->loaded);
    plx_model_destroy(&s->model);
    plx_runtime_destroy(&s->rt);
    free(s->backends);
    for (size_t i = 0; s->given && i < s->args->input_count; i++) {
        npy_free(&s->given[i].array);
    }
    free(s->given);
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
    for (size_t i = 0; i < s->layer_count; i++) {
        free(s->layers[i].name);
        free(s->layers[i].backend);
        free(s->layers[i].refused_by);
        for (size_t k = 0; k < s->layers[i].fused_count; k++) {
            free(s->layers[i].fused[k]);
        }
        free(s->layers[i].fused);
    }
    free(s->layers);
    free(s->in_ids);
    free(s->out_ids);
    for (size_t i = 0; i < s->note_count; i++) {
        free(s->notes[i]);
    }
    free(s->notes);
    free(s->latencies);
    for (size_t i = 0; i < s->probed_count; i++) {
        npy_free(&s->probed[i]);
        free(s->probed_names[i]);
    }
    free(s->probed);
    free(s->probed_names);
}

/* "plexus run: out of memory while STAGE"; false. */
static bool oom(const char *stage) {
    fprintf(stderr, PREFIX ": out of memory while %s\n", stage);
    return false;
}

/* The least alignment of the I/O buffers: what every first-party backend
 * imports (gpu_opencl's import_alignment is 64). */
#define IO_MIN_ALIGNMENT 64

/* A zeroed input or output buffer of `bytes` (at least 1), aligned to
 * s->io_alignment; released with free. NULL when out of memory. */
static void *io_alloc(const run_state *s, size_t bytes) {
    size_t align = s->io_alignment;
    size_t size = bytes ? (bytes + align - 1) / align * align : align;
    if (size < bytes) {
        return NULL;
    }
    void *p = aligned_alloc(align, size);
    if (p) {
        memset(p, 0, size);
    }
    return p;
}

static void choose_io_alignment(run_state *s);

bool run_choose_backends(run_state *s) {
    const run_args *a = s->args;
    size_t n = plx_runtime_backend_count(s->rt);
    s->backends = calloc((a->backend_count ? a->backend_count : n) + 1, sizeof *s->backends);
    if (!s->backends) {
        return oom("choosing the backends");
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
        choose_io_alignment(s);
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
    choose_io_alignment(s);
    return true;
}

/* The I/O buffers' alignment: the largest import_alignment of the backends
 * asked for, at least IO_MIN_ALIGNMENT, so that no zero-copy input or
 * output misses its backend's and is staged (the layers' backends are
 * known only after the inputs are read; the registry keeps every
 * import_alignment a power of two of at most 4096). */
static void choose_io_alignment(run_state *s) {
    size_t align = IO_MIN_ALIGNMENT;
    for (size_t i = 0; i < s->backend_count; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(s->rt, s->backends[i]);
        size_t need = b ? plx_backend_info_import_alignment(b) : 1;
        align = need > align ? need : align;
    }
    s->io_alignment = align;
}

/* Reads every --input file into s->given; a file that cannot be read is
 * reported once the model's inputs are known. */
static bool read_given_inputs(run_state *s) {
    const run_args *a = s->args;
    size_t n = a->input_count;
    s->given = calloc(n ? n : 1, sizeof *s->given);
    if (!s->given) {
        return oom("reading the --input files");
    }
    for (size_t k = 0; k < n; k++) {
        given_input *g = &s->given[k];
        g->read = npy_read(a->inputs[k].file, &g->array, g->err, sizeof g->err);
    }
    return true;
}

/* The --input files that could not be read, each on a line. */
static void print_read_errors(const run_state *s) {
    for (size_t k = 0; k < s->args->input_count; k++) {
        if (!s->given[k].read) {
            fprintf(stderr, PREFIX ": input '%s': %s\n", s->args->inputs[k].name,
                    s->given[k].err);
        }
    }
}

static plx_model_constant_input constant_of(const char *name, const npy_array *arr) {
    plx_model_constant_input k = {.name = name, .data = arr->data};
    k.info.dtype = arr->dtype;
    k.info.rank = arr->rank;
    memcpy(k.info.dims, arr->dims, sizeof arr->dims);
    return k;
}

/* After an import that failed needing the values of `report`'s inputs:
 * each --input file among them becomes valued (frozen to its data on the
 * next import) when it holds at most PLX_DYNAMIC_MAX_VALUE_BYTES, the rule
 * of plexus/dynamic.h. Whether one did. */
static bool take_values(run_state *s, const plx_model_import_report *report) {
    bool more = false;
    for (size_t r = 0; r < report->value_input_count; r++) {
        for (size_t k = 0; k < s->args->input_count; k++) {
            given_input *g = &s->given[k];
            if (g->read && !g->valued && g->array.bytes <= PLX_DYNAMIC_MAX_VALUE_BYTES &&
                strcmp(s->args->inputs[k].name, report->value_inputs[r]) == 0) {
                g->valued = more = true;
            }
        }
    }
    return more;
}

/* After an import that failed needing the values of tensors computed
 * from inputs too big to freeze (an If on a condition computed from the
 * data): imports the model again with those tensors as its outputs (`o`
 * as the failed import's, less the report), runs that probe on the
 * --input files, and keeps the tensors' values in s->probed, to freeze on
 * the next import (the rule of plexus/dynamic.h, at most
 * PLX_DYNAMIC_MAX_VALUE_BYTES each). False, with a message, when it
 * cannot; *out_more false when there was nothing new to probe. */
static bool probe_tensors(run_state *s, plx_model_options o,
                          const plx_model_import_report *report, bool *out_more) {
    *out_more = false;
    for (size_t r = 0; r < report->value_tensor_count && !*out_more; r++) {
        bool known = false;
        for (size_t i = 0; i < s->probed_count && !known; i++) {
            known = strcmp(s->probed_names[i], report->value_tensors[r]) == 0;
        }
        *out_more = !known;
    }
    if (!*out_more) {
        return true;
    }
    uint64_t t0 = now_ns();
    o.report = NULL;
    o.outputs = (const char *const *)report->value_tensors;
    o.output_count = report->value_tensor_count;
    plx_model *pm = NULL;
    plx_optimized_network *opt = NULL;
    plx_loaded_network *ln = NULL;
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = s->backends;
    oo.backend_count = s->backend_count;
    oo.allow_fallback = !s->args->no_fallback;
    size_t n_in = 0, n_out = report->value_tensor_count;
    plx_tensor_binding *in = NULL, *out = calloc(n_out, sizeof *out);
    npy_array *vals = calloc(n_out, sizeof *vals);
    char **names = calloc(n_out, sizeof *names);
    const char *what = "import";
    plx_status st = out && vals && names ? plx_model_open(s->args->model, &o, &pm)
                                         : plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    if (!st) {
        what = "optimise";
        st = plx_optimize(s->rt, plx_model_network(pm), &oo, &opt);
    }
    if (!st) {
        what = "load";
        st = plx_runtime_load_network(s->rt, &opt, NULL, &ln);
    }
    bool ok = !st;
    if (ok) {
        n_in = plx_model_input_count(pm);
        in = calloc(n_in + 1, sizeof *in);
        ok = in != NULL;
    }
    for (size_t i = 0; ok && i < n_in; i++) {
        const plx_model_io *io = plx_model_input(pm, i);
        const npy_array *arr = NULL;
        for (size_t k = 0; k < s->args->input_count && !arr; k++) {
            if (s->given[k].read && strcmp(s->args->inputs[k].name, io->name) == 0) {
                arr = &s->given[k].array;
                s->given[k].probed = true;
            }
        }
        if (!arr) {
            fprintf(stderr, PREFIX ": input '%s' sets what the model computes at import (through "
                    "'%s'): give its value with --input %s=FILE.npy\n", io->name,
                    report->value_tensors[0], io->name);
            ok = false;
        } else {
            in[i] = (plx_tensor_binding){io->binding_id, arr->data, arr->bytes, 0};
        }
    }
    for (size_t i = 0; ok && i < n_out; i++) {
        const plx_model_io *io = plx_model_output(pm, i);
        vals[i].dtype = io->info.dtype;
        vals[i].rank = io->info.rank;
        memcpy(vals[i].dims, io->info.dims, sizeof vals[i].dims);
        ok = plx_tensor_info_byte_size(&io->info, &vals[i].bytes) &&
             (vals[i].data = malloc(vals[i].bytes ? vals[i].bytes : 1)) != NULL &&
             (names[i] = strdup(io->name)) != NULL;
        if (ok && vals[i].bytes > PLX_DYNAMIC_MAX_VALUE_BYTES) {
            fprintf(stderr, PREFIX ": tensor '%s' (%zu bytes), computed from the inputs, sets "
                    "what the model computes at import; Plexus specialises on values of at most "
                    "%d bytes\n", io->name, vals[i].bytes, PLX_DYNAMIC_MAX_VALUE_BYTES);
            ok = false;
        }
        out[i] = (plx_tensor_binding){io->binding_id, vals[i].data, vals[i].bytes, 0};
    }
    if (ok) {
        what = "run";
        st = plx_loaded_network_execute(ln, in, n_in, out, n_out);
        ok = !st;
    }
    if (st) {
        fprintf(stderr, PREFIX ": cannot %s the probe that computes '%s': %s\n", what,
                report->value_tensors[0], plx_status_get_message(st));
        plx_status_free(st);
    }
    plx_loaded_network_unload(&ln);
    plx_optimized_network_destroy(&opt);
    plx_model_destroy(&pm);
    free(in);
    free(out);
    /* Kept: the values of the tensors, replacing any probed before. */
    npy_array *grown = ok ? realloc(s->probed, (s->probed_count + n_out) * sizeof *grown) : NULL;
    char **grown_names = grown ? realloc(s->probed_names,
                                         (s->probed_count + n_out) * sizeof *grown_names)
                               : NULL;
    if (grown) {
        s->probed = grown;
    }
    if (grown_names) {
        s->probed_names = grown_names;
    }
    ok = ok && grown && grown_names;
    for (size_t i = 0; i < n_out && vals; i++) {
        if (ok) {
            s->probed[s->probed_count] = vals[i];
            s->probed_names[s->probed_count++] = names[i];
        } else {
            npy_free(&vals[i]);
            free(names ? names[i] : NULL);
        }
    }
    free(vals);
    free(names);
    s->probe_ms += ms_between(t0, now_ns());
    return ok;
}

/* Why an import failed, and what the user can do (`report` NULL: the
 * message only). */
static void print_import_error(const run_state *s, const char *msg,
                               const plx_model_import_report *report) {
    const run_args *a = s->args;
    /* The importer's messages name the file; say which when not. */
    if (strstr(msg, a->model)) {
        fprintf(stderr, PREFIX ": %s\n", msg);
    } else {
        fprintf(stderr, PREFIX ": cannot import '%s': %s\n", a->model, msg);
    }
    for (size_t r = 0; report && r < report->value_input_count; r++) {
        const char *name = report->value_inputs[r];
        const given_input *g = NULL;
        for (size_t k = 0; k < a->input_count && !g; k++) {
            g = strcmp(a->inputs[k].name, name) == 0 && s->given[k].read ? &s->given[k] : NULL;
        }
        if (g) {
            fprintf(stderr, PREFIX ": input '%s' sets what the model computes at import, but its "
                    "data (%zu bytes) is more than the %d bytes Plexus specialises on\n", name,
                    g->array.bytes, PLX_DYNAMIC_MAX_VALUE_BYTES);
        } else {
            fprintf(stderr, PREFIX ": input '%s' sets what the model computes at import: give "
                    "its value with --input %s=FILE.npy\n", name, name);
        }
    }
    /* A file that could not be read gave no shape: perhaps the cause. */
    print_read_errors(s);
}

/* Imports the model with the --constant files frozen and the shapes of the
 * --input files filling its open dims (so that --shape is needed only for
 * inputs without a file). When the import needs the value of an input
 * given by a file (a reshape's target or an If's condition computed from
 * it), that input is frozen to the file's data and the model imported
 * again: the run's specialisation. */
bool run_import_model(run_state *s) {
    const run_args *a = s->args;
    if (!read_given_inputs(s)) {
        return false;
    }
    size_t n = a->input_count;
    npy_array *arrays = calloc(a->constant_count ? a->constant_count : 1, sizeof *arrays);
    plx_model_constant_input *constants = NULL;
    plx_model_input_shape *data_shapes = calloc(n + 1, sizeof *data_shapes);
    bool ok = arrays && data_shapes;
    if (!ok) {
        oom("importing the model");
    }
    for (size_t i = 0; ok && i < a->constant_count; i++) {
        char err[512];
        if (!npy_read(a->constants[i].file, &arrays[i], err, sizeof err)) {
            fprintf(stderr, PREFIX ": --constant %s: %s\n", a->constants[i].name, err);
            ok = false;
            break;
        }
    }
    plx_model_import_report report = {0};
    plx_status st = NULL;
    bool probe_failed = false; /* said why */
    uint64_t t0 = now_ns();
    while (ok) {
        /* The --constant files, the valued inputs, the probed tensors. */
        plx_model_constant_input *grown =
            realloc(constants, (a->constant_count + n + s->probed_count + 1) * sizeof *grown);
        if (!grown) {
            ok = oom("importing the model");
            break;
        }
        constants = grown;
        plx_model_options opts;
        plx_model_options_init(&opts);
        opts.format = a->format;
        opts.shapes = a->shapes;
        opts.shape_count = a->shape_count;
        opts.constants = constants;
        opts.data_shapes = data_shapes;
        opts.report = &report;
        for (size_t i = 0; i < a->constant_count; i++) {
            constants[opts.constant_count++] = constant_of(a->constants[i].name, &arrays[i]);
        }
        for (size_t i = 0; i < s->probed_count; i++) {
            constants[opts.constant_count++] = constant_of(s->probed_names[i], &s->probed[i]);
        }
        for (size_t k = 0; k < n; k++) {
            const given_input *g = &s->given[k];
            if (g->valued) {
                constants[opts.constant_count++] = constant_of(a->inputs[k].name, &g->array);
            } else if (g->read) {
                plx_model_input_shape *d = &data_shapes[opts.data_shape_count++];
                d->name = a->inputs[k].name;
                d->rank = g->array.rank;
                memcpy(d->dims, g->array.dims, sizeof d->dims);
            }
        }
        s->imports++;
        st = plx_model_open(a->model, &opts, &s->model); /* copies the constants */
        if (!st) {
            break;
        }
        if (!take_values(s, &report)) {
            /* Inputs that cannot be frozen: compute the tensors instead. */
            bool more = false;
            probe_failed = !probe_tensors(s, opts, &report, &more);
            if (probe_failed || !more) {
                break;
            }
        }
        plx_status_free(st);
    }
    s->import_ms = ms_between(t0, now_ns());
    for (size_t i = 0; arrays && i < a->constant_count; i++) {
        npy_free(&arrays[i]);
    }
    free(arrays);
    free(constants);
    free(data_shapes);
    if (st) {
        /* After a failed probe, its message says what to do. */
        print_import_error(s, plx_status_get_message(st), probe_failed ? NULL : &report);
        plx_status_free(st);
        ok = false;
    }
    plx_model_import_report_clear(&report);
    return ok;
}

static const plx_model_io *find_model_input(const plx_model *m, const char *name) {
    for (size_t i = 0; i < plx_model_input_count(m); i++) {
        const plx_model_io *io = plx_model_input(m, i);
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

bool run_prepare_inputs(run_state *s) {
    const run_args *a = s->args;
    /* Every --input names an input of the model, one frozen to its value,
     * or one a probe read. */
    for (size_t k = 0; k < a->input_count; k++) {
        if (!s->given[k].valued && !s->given[k].probed &&
            !find_model_input(s->model, a->inputs[k].name)) {
            char names[1024] = "";
            size_t len = 0;
            for (size_t i = 0; i < plx_model_input_count(s->model) && len < sizeof names;
                 i++) {
                len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                        i ? ", " : "", plx_model_input(s->model, i)->name);
            }
            fprintf(stderr, PREFIX ": --input '%s': the model has no input '%s' (its inputs: %s)\n",
                    a->inputs[k].name, a->inputs[k].name, *names ? names : "none");
            return false;
        }
    }
    size_t n = plx_model_input_count(s->model);
    s->inputs = calloc(n ? n : 1, sizeof *s->inputs);
    s->in_bindings = calloc(n ? n : 1, sizeof *s->in_bindings);
    if (!s->inputs || !s->in_bindings) {
        return oom("preparing the inputs");
    }
    for (size_t i = 0; i < n; i++) {
        const plx_model_io *io = plx_model_input(s->model, i);
        input_data *d = &s->inputs[s->input_count++];
        d->io = io;
        const input_arg *given = NULL;
        given_input *read = NULL;
        for (size_t k = 0; k < a->input_count; k++) {
            if (strcmp(a->inputs[k].name, io->name) == 0) {
                given = &a->inputs[k];
                read = &s->given[k];
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
            if (!read->read) {
                fprintf(stderr, PREFIX ": input '%s': %s\n", io->name, read->err);
                return false;
            }
            npy_array arr = read->array;
            if (arr.dtype != io->info.dtype || !same_shape(&io->info, arr.rank, arr.dims)) {
                plx_tensor_info ai = {.dtype = arr.dtype, .rank = arr.rank};
                memcpy(ai.dims, arr.dims, sizeof ai.dims);
                fprintf(stderr,
                        PREFIX ": input '%s': expected %s %s, got %s %s from '%s'\n", io->name,
                        plx_dtype_name(io->info.dtype), run_shape_text(&io->info, want, sizeof want),
                        plx_dtype_name(arr.dtype), run_shape_text(&ai, got, sizeof got), given->file);
                return false;
            }
            d->bytes = arr.bytes;
            if ((uintptr_t)arr.data % s->io_alignment == 0) {
                d->data = arr.data; /* taken over: released with free */
                read->array.data = NULL;
            } else {
                d->data = io_alloc(s, arr.bytes);
                if (!d->data) {
                    return oom("preparing the inputs");
                }
                memcpy(d->data, arr.data, arr.bytes);
            }
            d->file = given->file;
        } else {
            d->data = io_alloc(s, bytes);
            if (!d->data) {
                return oom("preparing the inputs");
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
    s->layers = calloc(n ? n : 1, sizeof *s->layers);
    if (!s->counts || !s->fallbacks || !s->notes || !s->layers) {
        return oom("recording the layers' assignment");
    }
    for (size_t i = 0; i < n; i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(o, i);
        layer_row *row = &s->layers[s->layer_count++];
        row->op = l->op;
        row->inserted = l->inserted;
        row->name = strdup(l->layer_name);
        row->backend = strdup(l->backend_id);
        row->refused_by = l->refusal_count ? strdup(l->refusals[0].backend_id) : NULL;
        size_t fused = plx_optimized_network_layer_fused_count(o, i);
        row->fused = calloc(fused ? fused : 1, sizeof *row->fused);
        if (!row->name || !row->backend || (l->refusal_count && !row->refused_by) ||
            !row->fused) {
            return oom("recording the layers' assignment");
        }
        for (size_t k = 0; k < fused; k++) {
            row->fused[k] = strdup(plx_optimized_network_layer_fused_from(o, i, k));
            if (!row->fused[k]) {
                return oom("recording the layers' assignment");
            }
            row->fused_count++;
        }
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
                return oom("recording the layers' assignment");
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
                return oom("recording the layers' assignment");
            }
        }
    }
    for (size_t i = 0; i < notes; i++) {
        s->notes[i] = strdup(plx_optimized_network_note(o, i));
        if (!s->notes[i]) {
            return oom("recording the layers' assignment");
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
                        PREFIX ": --concurrency %ld needs asynchronous execution, which backend "
                               "'%s' does not support (it does not report %s); use --concurrency 1, "
                               "or other backends (--backends)\n",
                        s->args->concurrency, s->counts[i].id, missing);
            }
            return false;
        }
    }
    return true;
}

bool run_optimize_and_load(run_state *s) {
    const run_args *a = s->args;
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = s->backends;
    oo.backend_count = s->backend_count;
    oo.allow_fallback = !a->no_fallback;
    /* As an application that enables them: the first layers read the input
     * buffers and the last write the output buffers where their backends
     * import them (io_alloc aligns them), rather than a copy per run, and
     * a backend reads another's memory through an import layer where it
     * can. */
    oo.import_enabled = !a->no_import;
    oo.export_enabled = !a->no_export;
    uint64_t t0 = now_ns();
    plx_status st =
        plx_optimize(s->rt, plx_model_network(s->model), &oo, &s->optimized);
    s->optimize_ms = ms_between(t0, now_ns());
    if (st) {
        run_fail_status("cannot assign the model's layers to backends", st);
        return false;
    }
    if (!record_assignment(s)) {
        return false;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    if (a->concurrency > 1) {
        if (!backends_support(s, true, true)) {
            return false;
        }
        lo.async_execution = true;
    }
    s->planned = !a->backend_memory && backends_support(s, false, false);
    lo.externally_managed_memory = s->planned;
    t0 = now_ns();
    st = plx_runtime_load_network(s->rt, &s->optimized, &lo, &s->loaded);
    s->load_ms = ms_between(t0, now_ns());
    if (st) {
        run_fail_status("cannot load the network", st);
        return false;
    }
    return true;
}

bool run_prepare_outputs(run_state *s) {
    size_t n = plx_model_output_count(s->model);
    s->outputs = calloc(n ? n : 1, sizeof *s->outputs);
    s->out_bindings = calloc(n ? n : 1, sizeof *s->out_bindings);
    if (!s->outputs || !s->out_bindings) {
        return oom("preparing the outputs");
    }
    for (size_t i = 0; i < n; i++) {
        output_data *d = &s->outputs[s->output_count++];
        d->io = plx_model_output(s->model, i);
        plx_status st = plx_loaded_network_output_info(s->loaded, d->io->binding_id, &d->info);
        if (st) {
            run_fail_status("cannot read an output's tensor info", st);
            return false;
        }
        if (!plx_tensor_info_byte_size(&d->info, &d->bytes)) {
            fprintf(stderr, PREFIX ": output '%s' has an invalid dtype or shape\n", d->io->name);
            return false;
        }
        d->data = io_alloc(s, d->bytes);
        if (!d->data) {
            return oom("preparing the outputs");
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
    uint32_t *in_ids, *out_ids;  /* --preimport: its pre-imported tensors */
    double *latencies;           /* its slice of s->latencies */
    size_t count;
    plx_status error;
} worker;

/* One execution in `wm` (NULL: the network's own), of the tensors given
 * or, with --preimport, of their pre-imported ids. */
static plx_status execute(const run_state *s, plx_working_memory *wm,
                          const plx_tensor_binding *outputs, const uint32_t *in_ids,
                          const uint32_t *out_ids) {
    plx_execute_args ea;
    plx_execute_args_init(&ea);
    if (in_ids) {
        ea.preimported_inputs = in_ids;
        ea.preimported_input_count = s->input_count;
    } else {
        ea.inputs = s->in_bindings;
        ea.input_count = s->input_count;
    }
    if (out_ids) {
        ea.preimported_outputs = out_ids;
        ea.preimported_output_count = s->output_count;
    } else {
        ea.outputs = outputs;
        ea.output_count = s->output_count;
    }
    return plx_loaded_network_execute_with(s->loaded, wm, &ea);
}

/* --preimport: registers the inputs and `outputs` once; their ids go to
 * *in_ids and *out_ids (heap, NULL when there are none). Prints the core's
 * error, which names the tensor and the cause, and returns false. */
static bool preimport(run_state *s, const plx_tensor_binding *outputs, uint32_t **in_ids,
                      uint32_t **out_ids) {
    *in_ids = calloc(s->input_count ? s->input_count : 1, sizeof **in_ids);
    *out_ids = calloc(s->output_count ? s->output_count : 1, sizeof **out_ids);
    if (!*in_ids || !*out_ids) {
        return oom("pre-importing the inputs and outputs");
    }
    plx_status st = plx_loaded_network_import_inputs(s->loaded, s->in_bindings, s->input_count,
                                                     *in_ids);
    if (st) {
        run_fail_status("cannot pre-import the inputs (--preimport)", st);
        return false;
    }
    st = plx_loaded_network_import_outputs(s->loaded, outputs, s->output_count, *out_ids);
    if (st) {
        run_fail_status("cannot pre-import the outputs (--preimport)", st);
        return false;
    }
    return true;
}

static plx_status run_once(worker *w) {
    return execute(w->s, w->wm, w->outputs, w->in_ids, w->out_ids);
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
    size_t n = (size_t)s->args->concurrency;
    size_t total = s->latency_count;
    worker *ws = calloc(n, sizeof *ws);
    workers_shared sh = {.ready = 0, .go = false};
    if (!ws) {
        return oom("preparing the threads");
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
            run_fail_status("cannot create a working memory", st);
            ok = false;
            break;
        }
        if (t == 0) {
            w->outputs = s->out_bindings;
        } else {
            w->outputs = calloc(s->output_count ? s->output_count : 1, sizeof *w->outputs);
            w->buffers = calloc(s->output_count ? s->output_count : 1, sizeof *w->buffers);
            if (!w->outputs || !w->buffers) {
                ok = oom("preparing the threads");
                break;
            }
            for (size_t k = 0; ok && k < s->output_count; k++) {
                w->buffers[k] = io_alloc(s, s->outputs[k].bytes);
                if (!w->buffers[k]) {
                    ok = oom("preparing the threads");
                }
                w->outputs[k] = s->out_bindings[k];
                w->outputs[k].data = w->buffers[k];
            }
        }
        if (ok && s->args->preimport) {
            ok = preimport(s, w->outputs, &w->in_ids, &w->out_ids);
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
                run_fail_status("execution failed", w->error);
            } else {
                plx_status_free(w->error);
            }
            ok = false;
        }
        plx_working_memory_destroy(&w->wm);
        free(w->in_ids);
        free(w->out_ids);
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
    if (a->preimport && !preimport(s, s->out_bindings, &s->in_ids, &s->out_ids)) {
        return false;
    }
    for (long i = 0; i < a->warmup; i++) {
        plx_status st = execute(s, NULL, s->out_bindings, s->in_ids, s->out_ids);
        if (st) {
            progress_clear(pg);
            run_fail_status("execution failed (warm-up)", st);
            return false;
        }
        progress_update(pg, "warm-up", (size_t)i + 1, (size_t)a->warmup);
    }
    uint64_t start = now_ns();
    for (size_t i = 0; i < s->latency_count; i++) {
        uint64_t t0 = now_ns();
        plx_status st = execute(s, NULL, s->out_bindings, s->in_ids, s->out_ids);
        s->latencies[i] = ms_between(t0, now_ns());
        if (st) {
            progress_clear(pg);
            run_fail_status("execution failed", st);
            return false;
        }
        progress_update(pg, "iteration", i + 1, s->latency_count);
    }
    s->run_wall_ms = ms_between(start, now_ns());
    progress_clear(pg);
    return true;
}

bool run_execute_all(run_state *s) {
    s->latency_count = (size_t)s->args->iterations;
    s->latencies = calloc(s->latency_count, sizeof *s->latencies);
    if (!s->latencies) {
        return oom("preparing the runs");
    }
    progress pg;
    progress_init(&pg);
    bool ok = s->args->concurrency > 1 ? run_threads(s, &pg) : run_single(s, &pg);
    s->staged_copies = plx_loaded_network_staged_copy_count(s->loaded);
    s->waits = plx_loaded_network_wait_count(s->loaded);
    return ok;
}

bool run_write_outputs(run_state *s) {
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
            return oom("writing the outputs");
        }
        /* Two names that sanitise alike: number the later ones. */
        size_t len = strlen(dir) + strlen(name) + 32;
        d->path = malloc(len);
        if (!d->path) {
            free(name);
            return oom("writing the outputs");
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
        if (d->info.dtype == PLX_DTYPE_BFLOAT16 || plx_dtype_is_float8(d->info.dtype)) {
            /* NumPy has no bfloat16 or float8: written as float32 (exact). */
            size_t count = d->bytes / plx_dtype_size(d->info.dtype);
            converted = malloc(count ? count * sizeof *converted : 1);
            if (!converted) {
                return oom("writing the outputs");
            }
            for (size_t k = 0; k < count; k++) {
                converted[k] = float_at(d->info.dtype, d->data, k);
            }
            arr.dtype = PLX_DTYPE_FLOAT32;
            arr.data = converted;
            arr.bytes = count * sizeof *converted;
        } else if (d->info.dtype == PLX_DTYPE_INT4 || d->info.dtype == PLX_DTYPE_UINT4) {
            /* one element per byte, int4 sign-extended: the bytes of int8/uint8 */
            arr.dtype = d->info.dtype == PLX_DTYPE_INT4 ? PLX_DTYPE_INT8 : PLX_DTYPE_UINT8;
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
void run_find_top_classes(run_state *s) {
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

