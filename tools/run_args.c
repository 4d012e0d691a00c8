/* `plexus run`'s arguments: the usage text and the parser. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Limits of the numeric options. */
#define MAX_ITERATIONS 100000000L
#define MAX_THREADS 1024L


/* In three literals, each within the 4095 characters ISO C requires
 * compilers to support; joined into run_usage by run_args_parse. */
static const char run_usage_head[] =
    "usage: plexus run MODEL.onnx [--format NAME] [--backends ID,...] [--no-fallback]\n"
    "                  [--copy-io] [--no-import] [--no-export] [--preimport]\n"
    "                  [--backend-memory] [--show-layers]\n"
    "                  [--input NAME=FILE.npy]... [--shape NAME=DIMS]...\n"
    "                  [--constant NAME=FILE.npy]...\n"
    "                  [--output-dir DIR] [--iterations N] [--warmup N] [--concurrency N]\n"
    "                  [--profile TRACE.json] [--json]\n"
    "                  [--backend-path PATH]... [--no-env] [--no-default-dir] [--probe]\n"
    "                  [--option ID.KEY=VALUE]... [--log-level LEVEL]\n"
    "\n"
    "Imports the model, assigns its layers to backends, loads and runs it, and\n"
    "reports its inputs and outputs, the layers per backend and every fallback,\n"
    "the load time, the latency, the memory plan and, for a classifier, the top\n"
    "classes.\n"
    "\n"
    "  --format NAME          the model's format (default: from MODEL's extension;\n"
    "                         'plexus info' lists the formats built in)\n"
    "  --backends ID,...      backends in order of preference (default: every\n"
    "                         available backend, in registry order)\n"
    "  --no-fallback          every layer must run on the first backend; every\n"
    "                         backend named must be available\n"
    "  --show-layers          list every layer after loading: name, op, backend, the\n"
    "                         layers fused into it, the backend that refused it,\n"
    "                         and the copy and import layers inserted between\n"
    "                         backends (--json always has the list)\n";

static const char run_usage_load[] =
    "\n"
    "Load options (by default import and export are enabled, and the host plans\n"
    "the intermediate tensors when every backend used supports it):\n"
    "  --no-import            inputs are copied into the network's memory at each\n"
    "                         run, and a tensor crossing to another backend goes\n"
    "                         through a copy layer (default: zero copy: the first\n"
    "                         layers read this program's input buffers where their\n"
    "                         backends import them, and a backend that imports\n"
    "                         another's memory reads it through an import layer)\n"
    "  --no-export            outputs are copied out at each run (default: zero\n"
    "                         copy: the last layers write this program's buffers\n"
    "                         where their backends import them)\n"
    "  --copy-io              --no-import and --no-export\n"
    "  --preimport            register the input and output buffers once\n"
    "                         (pre-import) and run with their ids; fails, naming\n"
    "                         the cause, when a backend used cannot pre-import\n"
    "                         them (it must report preimport_io_tensors, and each\n"
    "                         tensor must be zero copy)\n"
    "  --backend-memory       each backend allocates its intermediate tensors\n"
    "                         (default: the host plans them in a few buffers\n"
    "                         when every backend used reports\n"
    "                         externally_managed_memory and imports malloc memory)\n"
    "  --concurrency N > 1 loads the network for asynchronous execution (below).\n"
    "Buffers are aligned to the largest import_alignment of the backends asked\n"
    "for (at least 64 bytes), so no zero-copy tensor is staged; the report\n"
    "counts staged copies and waits for queued backends.\n";

static const char run_usage_tail[] =
    "\n"
    "Inputs, outputs and runs:\n"
    "  --input NAME=FILE.npy  input NAME from a .npy file (its dtype and shape must be\n"
    "                         the model's; dimensions the model leaves open take the\n"
    "                         file's sizes; an input whose value the model needs at\n"
    "                         import, as an If's condition or a reshape's target, is\n"
    "                         frozen to the file's data, of at most 4096 bytes); may be\n"
    "                         repeated. Inputs not given get random values, seeded\n"
    "                         (seed 1, 2, ... in input order): floats in [0, 1),\n"
    "                         integers 0 or 1, bools 0 or 1\n"
    "  --shape NAME=DIMS      the shape of input NAME, as 1x3x224x224: sizes for the\n"
    "                         dimensions the model leaves open, for an input without\n"
    "                         a file (a file's own shape must agree); may be repeated\n"
    "  --constant NAME=FILE.npy  freeze input NAME to the file's values at import: it\n"
    "                         is no longer an input, and what it feeds is folded or\n"
    "                         takes it as an attribute (a reshape's shape, axes,\n"
    "                         pads); may be repeated\n"
    "  --output-dir DIR       write each output to DIR/NAME.npy (characters of NAME\n"
    "                         outside [A-Za-z0-9._-] become '_'); DIR is created\n"
    "  --iterations N         timed runs, 1 or more (default 10)\n"
    "  --warmup N             untimed runs before them, 0 or more (default 1)\n"
    "  --concurrency N        N concurrent runs, from N threads, each with its own\n"
    "                         working memory (default 1; N > 1 needs backends that\n"
    "                         support asynchronous execution); the iterations are\n"
    "                         shared out between them, each does the warm-up runs.\n"
    "                         The threads a backend uses within a layer are\n"
    "                         --intra-op-threads\n"
    "  --profile TRACE.json   write a Chrome trace-event file of loading and of every\n"
    "                         layer of every run (Perfetto, chrome://tracing)\n"
    "  --json                 print one JSON document instead of text\n" RUNTIME_ARGS_USAGE
    "\n"
    "Exit status: 0 success, 1 the model cannot be loaded or run, 2 bad usage.\n";

static char run_usage[sizeof run_usage_head + sizeof run_usage_load + sizeof run_usage_tail -
                      2];

void run_args_free(run_args *a) {
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
        fprintf(stderr, PREFIX ": out of memory while reading --backends\n");
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
    plx_model_input_shape *s = &a->shapes[a->shape_count];
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
int run_args_parse(int argc, char **argv, run_args *a) {
    char *p = run_usage;
    memcpy(p, run_usage_head, sizeof run_usage_head - 1);
    p += sizeof run_usage_head - 1;
    memcpy(p, run_usage_load, sizeof run_usage_load - 1);
    p += sizeof run_usage_load - 1;
    memcpy(p, run_usage_tail, sizeof run_usage_tail);
    a->iterations = 10;
    a->warmup = 1;
    a->concurrency = 1;
    if (!runtime_args_init(&a->runtime, argc)) {
        return EXIT_RUNTIME;
    }
    size_t n = argc > 0 ? (size_t)argc : 1;
    a->inputs = calloc(n, sizeof *a->inputs);
    a->constants = calloc(n, sizeof *a->constants);
    a->shapes = calloc(n, sizeof *a->shapes);
    if (!a->inputs || !a->constants || !a->shapes) {
        fprintf(stderr, PREFIX ": out of memory while reading the arguments\n");
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
        } else if (strcmp(arg, "--copy-io") == 0) {
            a->no_import = true;
            a->no_export = true;
        } else if (strcmp(arg, "--no-import") == 0) {
            a->no_import = true;
        } else if (strcmp(arg, "--no-export") == 0) {
            a->no_export = true;
        } else if (strcmp(arg, "--preimport") == 0) {
            a->preimport = true;
        } else if (strcmp(arg, "--backend-memory") == 0) {
            a->backend_memory = true;
        } else if (strcmp(arg, "--show-layers") == 0) {
            a->show_layers = true;
        } else if (strcmp(arg, "--backends") == 0 || strcmp(arg, "--input") == 0 ||
                   strcmp(arg, "--constant") == 0 ||
                   strcmp(arg, "--shape") == 0 || strcmp(arg, "--output-dir") == 0 ||
                   strcmp(arg, "--iterations") == 0 || strcmp(arg, "--warmup") == 0 ||
                   strcmp(arg, "--concurrency") == 0 || strcmp(arg, "--profile") == 0 ||
                   strcmp(arg, "--format") == 0) {
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
            } else if (strcmp(arg, "--concurrency") == 0) {
                rc = parse_count_arg(arg, value, 1, MAX_THREADS, &a->concurrency);
            } else if (strcmp(arg, "--format") == 0) {
                a->format = value;
            } else if (!*value) {
                rc = usage_error("run", run_usage, "%s needs a non-empty path", arg);
            } else if (strcmp(arg, "--output-dir") == 0) {
                a->output_dir = value;
            } else {
                a->profile = value;
            }
        } else if (strcmp(arg, "--threads") == 0) {
            /* another runtime's "threads" is what a user compares with, and it
             * may mean either of these: the name says which */
            return usage_error("run", run_usage,
                               "--threads is ambiguous: use --concurrency N for N runs at "
                               "once, or --intra-op-threads N for the threads each backend "
                               "uses within a layer");
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
    if (a->preimport && (a->no_import || a->no_export)) {
        return usage_error("run", run_usage,
                           "--preimport needs import and export: it cannot go with %s",
                           a->no_import && a->no_export ? "--copy-io"
                           : a->no_import                ? "--no-import"
                                                         : "--no-export");
    }
    if (a->backend_memory && a->concurrency > 1) {
        return usage_error("run", run_usage,
                           "--backend-memory cannot go with --concurrency %ld: concurrent runs "
                           "need the memory the host plans",
                           a->concurrency);
    }
    return -1;
}

