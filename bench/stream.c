/* plexus-bench-stream: a stateful streaming model run chunk after chunk
 * through a dynamic model (plexus/dynamic.h), as an application would.
 *
 * The signal in FILE.npy (float32, [T] or [1, T]) is cut into chunks of
 * `--chunk` samples, each bound in place as input NAME of shape
 * [1, chunk]. Each --state IN=OUT:DIMS is an input that starts at zeros
 * of DIMS and takes, from the second chunk on, the output OUT of the chunk
 * before (the two buffers swap; nothing is copied). Every chunk acquires
 * its specialisation (the first makes it, the rest are hits) and releases
 * it. The output `--output` of every chunk is written, one row a chunk,
 * to `--out FILE.npy`; bench/stream_vs_onnxruntime.py runs the same loop
 * in ONNX Runtime and compares.
 *
 * Each --value NAME=FILE.npy is an input whose value the signature gives
 * (plexus/dynamic.h): frozen into the specialisation, part of its key (a
 * sample rate that an `If` tests, say).
 *
 * Reports the chunks, the specialisations made, the median latency of a
 * chunk, and the heap allocations per chunk after the first.
 *
 * usage: plexus-bench-stream MODEL --input NAME=FILE.npy --chunk N
 *            --state IN=OUT:DIMS... --output NAME [--value NAME=FILE.npy]...
 *            [--out FILE.npy] [--backend-path DIR]... [--backends ID,...]
 *            [--option ID.KEY=VALUE]... [--json] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <plexus/dynamic.h>

#include "alloc_counter.h"
#include "bench_util.h"
#include "npy.h"

#define MAX_LIST 16

typedef struct state_arg {
    const char *in, *out;
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank;
    void *buf[2]; /* [0] read by the chunk, [1] written: swapped after */
    size_t bytes;
} state_arg;

static int usage(void) {
    fprintf(stderr, "usage: plexus-bench-stream MODEL --input NAME=FILE.npy --chunk N "
                    "--state IN=OUT:DIMS... --output NAME [--value NAME=FILE.npy]... "
                    "[--out FILE.npy] "
                    "[--backend-path DIR]... [--backends ID,...] [--option ID.KEY=VALUE]... "
                    "[--json]\n");
    return 2;
}

static int fail(plx_status s, const char *what) {
    fprintf(stderr, "plexus-bench-stream: %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
    return 1;
}

/* "2x1x128" into dims; the rank, 0 when malformed. */
static uint32_t parse_dims(const char *text, int64_t *dims) {
    uint32_t n = 0;
    const char *p = text;
    while (n < PLX_MAX_RANK) {
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0) {
            return 0;
        }
        dims[n++] = v;
        if (*end == '\0') {
            return n;
        }
        if (*end != 'x') {
            return 0;
        }
        p = end + 1;
    }
    return 0;
}

/* Input (output false) or output NAME of the specialisation's model;
 * NULL when it has none. */
static const plx_model_io *find_io(const plx_model *m, const char *name, bool output) {
    size_t n = output ? plx_model_output_count(m) : plx_model_input_count(m);
    for (size_t i = 0; i < n; i++) {
        const plx_model_io *io = output ? plx_model_output(m, i) : plx_model_input(m, i);
        if (strcmp(io->name, name) == 0) {
            return io;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *model = NULL, *input = NULL, *input_file = NULL, *output = NULL, *out_file = NULL;
    const char *paths[MAX_LIST], *backends_arg = NULL;
    size_t path_count = 0, state_count = 0, option_count = 0;
    state_arg states[MAX_LIST];
    plx_backend_option options[MAX_LIST];
    const char *value_names[MAX_LIST], *value_files[MAX_LIST];
    size_t value_count = 0;
    long chunk = 0;
    bool json = false;
    memset(states, 0, sizeof states);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--input") == 0 && has) {
            char *t = argv[++i], *eq = strchr(t, '=');
            if (!eq) {
                return usage();
            }
            *eq = '\0';
            input = t;
            input_file = eq + 1;
        } else if (strcmp(a, "--chunk") == 0 && has) {
            chunk = strtol(argv[++i], NULL, 10);
        } else if (strcmp(a, "--state") == 0 && has && state_count < MAX_LIST) {
            char *t = argv[++i], *eq = strchr(t, '='), *colon = eq ? strchr(eq, ':') : NULL;
            if (!eq || !colon) {
                return usage();
            }
            *eq = '\0';
            *colon = '\0';
            state_arg *s = &states[state_count++];
            s->in = t;
            s->out = eq + 1;
            s->rank = parse_dims(colon + 1, s->dims);
            if (!s->rank) {
                return usage();
            }
        } else if (strcmp(a, "--value") == 0 && has && value_count < MAX_LIST) {
            char *t = argv[++i], *eq = strchr(t, '=');
            if (!eq) {
                return usage();
            }
            *eq = '\0';
            value_names[value_count] = t;
            value_files[value_count++] = eq + 1;
        } else if (strcmp(a, "--output") == 0 && has) {
            output = argv[++i];
        } else if (strcmp(a, "--out") == 0 && has) {
            out_file = argv[++i];
        } else if (strcmp(a, "--backend-path") == 0 && has && path_count < MAX_LIST) {
            paths[path_count++] = argv[++i];
        } else if (strcmp(a, "--backends") == 0 && has) {
            backends_arg = argv[++i];
        } else if (strcmp(a, "--option") == 0 && has && option_count < MAX_LIST) {
            if (!bench_parse_option(argv[++i], &options[option_count++])) {
                return usage();
            }
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            return usage();
        }
    }
    if (!model || !input || !output || chunk < 1) {
        return usage();
    }
    char err[1024];
    npy_array signal;
    if (!npy_read(input_file, &signal, err, sizeof err)) {
        fprintf(stderr, "plexus-bench-stream: %s\n", err);
        return 1;
    }
    size_t total = signal.rank ? (size_t)signal.dims[signal.rank - 1] : 0;
    if (signal.dtype != PLX_DTYPE_FLOAT32 || signal.rank < 1 || signal.rank > 2 ||
        (signal.rank == 2 && signal.dims[0] != 1) || total < (size_t)chunk) {
        fprintf(stderr, "plexus-bench-stream: %s: expected float32 [T] or [1, T] with T >= "
                        "the chunk\n", input_file);
        npy_free(&signal);
        return 1;
    }
    size_t chunks = total / (size_t)chunk;

    const char *backend_ids[MAX_LIST];
    char backends_buf[512];
    size_t backend_count = bench_split_ids(backends_arg, backends_buf, sizeof backends_buf,
                                           backend_ids, MAX_LIST);
    plx_runtime *rt = NULL;
    plx_dynamic_model *dm = NULL;
    plx_status st = bench_runtime(paths, path_count, options, option_count, &rt);
    if (!st) {
        plx_dynamic_options o;
        plx_dynamic_options_init(&o);
        o.optimize.backends = backend_ids;
        o.optimize.backend_count = backend_count;
        o.cache_capacity = 1;
        st = plx_dynamic_model_open(rt, model, &o, &dm);
    }
    if (st) {
        npy_free(&signal);
        plx_runtime_destroy(&rt);
        return fail(st, model);
    }

    /* The signature: the chunk and every state's shape. */
    plx_model_input_shape shapes[MAX_LIST + 1];
    shapes[0] = (plx_model_input_shape){.name = input, .dims = {1, chunk}, .rank = 2};
    int rc = 0;
    for (size_t k = 0; k < state_count; k++) {
        state_arg *s = &states[k];
        shapes[k + 1] = (plx_model_input_shape){.name = s->in, .rank = s->rank};
        memcpy(shapes[k + 1].dims, s->dims, sizeof s->dims);
        plx_tensor_info info = {.dtype = PLX_DTYPE_FLOAT32, .rank = s->rank};
        memcpy(info.dims, s->dims, sizeof s->dims);
        if (!plx_tensor_info_byte_size(&info, &s->bytes)) {
            rc = usage();
        }
        s->buf[0] = calloc(1, s->bytes ? s->bytes : 1);
        s->buf[1] = calloc(1, s->bytes ? s->bytes : 1);
        if (!s->buf[0] || !s->buf[1]) {
            rc = 1;
        }
    }
    npy_array value_arrays[MAX_LIST];
    plx_model_constant_input values[MAX_LIST];
    memset(value_arrays, 0, sizeof value_arrays);
    for (size_t k = 0; !rc && k < value_count; k++) {
        if (!npy_read(value_files[k], &value_arrays[k], err, sizeof err)) {
            fprintf(stderr, "plexus-bench-stream: --value %s: %s\n", value_names[k], err);
            rc = 1;
            break;
        }
        values[k] = (plx_model_constant_input){.name = value_names[k],
                                               .info = {.dtype = value_arrays[k].dtype,
                                                        .rank = value_arrays[k].rank},
                                               .data = value_arrays[k].data};
        memcpy(values[k].info.dims, value_arrays[k].dims, sizeof value_arrays[k].dims);
    }
    plx_dynamic_signature signature = {shapes, state_count + 1, values, value_count};
    size_t out_elems = 0;
    float *results = NULL;
    double *lat = calloc(chunks, sizeof *lat);
    size_t allocs = 0;
    plx_tensor_binding in[MAX_LIST + 1], out[MAX_LIST + 1];
    for (size_t c = 0; !rc && c < chunks; c++) {
        if (c == 1 && alloc_counter_available()) {
            alloc_counter_start();
        }
        double t0 = bench_now_ns();
        plx_specialization *sp = NULL;
        if ((st = plx_dynamic_model_acquire(dm, &signature, &sp))) {
            rc = fail(st, "acquire");
            break;
        }
        const plx_model *m = plx_specialization_model(sp);
        const plx_model_io *xio = find_io(m, input, false), *yio = find_io(m, output, true);
        if (!xio || !yio || plx_model_input_count(m) != state_count + 1 ||
            plx_model_output_count(m) != state_count + 1) {
            fprintf(stderr, "plexus-bench-stream: the model needs exactly the input, the "
                            "output and the states named, each found\n");
            rc = 1;
        }
        if (!rc && !results) {
            size_t bytes = 0;
            plx_tensor_info_byte_size(&yio->info, &bytes);
            out_elems = bytes / sizeof(float);
            results = calloc(chunks * out_elems + 1, sizeof *results);
            rc = results && yio->info.dtype == PLX_DTYPE_FLOAT32 ? 0 : 1;
        }
        in[0] = (plx_tensor_binding){xio ? xio->binding_id : 0,
                                     (float *)signal.data + c * (size_t)chunk,
                                     (size_t)chunk * sizeof(float), 0};
        out[0] = (plx_tensor_binding){yio ? yio->binding_id : 0, results + c * out_elems,
                                      out_elems * sizeof(float), 0};
        for (size_t k = 0; !rc && k < state_count; k++) {
            const plx_model_io *si = find_io(m, states[k].in, false);
            const plx_model_io *so = find_io(m, states[k].out, true);
            if (!si || !so) {
                fprintf(stderr, "plexus-bench-stream: no input '%s' or output '%s'\n",
                        states[k].in, states[k].out);
                rc = 1;
                break;
            }
            in[k + 1] = (plx_tensor_binding){si->binding_id, states[k].buf[0], states[k].bytes, 0};
            out[k + 1] = (plx_tensor_binding){so->binding_id, states[k].buf[1], states[k].bytes, 0};
        }
        if (!rc && (st = plx_loaded_network_execute(plx_specialization_network(sp), in,
                                                     state_count + 1, out, state_count + 1))) {
            rc = fail(st, "execute");
        }
        plx_dynamic_model_release(dm, &sp);
        for (size_t k = 0; k < state_count; k++) {
            void *t = states[k].buf[0];
            states[k].buf[0] = states[k].buf[1];
            states[k].buf[1] = t;
        }
        lat[c] = (bench_now_ns() - t0) / 1e6;
    }
    if (chunks > 1 && alloc_counter_available()) {
        allocs = alloc_counter_stop();
    }
    if (!rc && out_file) {
        npy_array a = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2,
                       .dims = {(int64_t)chunks, (int64_t)out_elems}, .data = results,
                       .bytes = chunks * out_elems * sizeof(float)};
        if (!npy_write(out_file, &a, err, sizeof err)) {
            fprintf(stderr, "plexus-bench-stream: %s\n", err);
            rc = 1;
        }
    }
    plx_dynamic_stats stats;
    plx_dynamic_model_stats(dm, &stats);
    if (!rc) {
        double med = lat && chunks ? bench_median(lat, chunks) : 0.0;
        double per = chunks > 1 && alloc_counter_available() ? (double)allocs / (double)(chunks - 1)
                                                             : -1.0;
        if (json) {
            printf("{\"chunks\": %zu, \"specializations\": %llu, \"hits\": %llu, "
                   "\"chunk_ms_median\": %.4f, \"allocations_per_chunk\": %.3f}\n", chunks,
                   (unsigned long long)stats.misses, (unsigned long long)stats.hits, med, per);
        } else {
            printf("%zu chunks of %ld samples; %llu specialisation(s), %llu hits; median chunk "
                   "%.4f ms; allocations per chunk after the first: %.3f\n",
                   chunks, chunk, (unsigned long long)stats.misses,
                   (unsigned long long)stats.hits, med, per);
        }
    }
    for (size_t k = 0; k < state_count; k++) {
        free(states[k].buf[0]);
        free(states[k].buf[1]);
    }
    for (size_t k = 0; k < value_count; k++) {
        npy_free(&value_arrays[k]);
    }
    free(results);
    free(lat);
    npy_free(&signal);
    plx_dynamic_model_destroy(&dm);
    plx_runtime_destroy(&rt);
    return rc;
}
