/* plexus-bench-dynamic: what run-time shapes cost (plexus/dynamic.h).
 *
 * On one dynamic model, without reloading it:
 *   - specialisation time: the first acquire of each batch size (import,
 *     optimise, load), in ms;
 *   - hit overhead: executions through acquire + execute + release against
 *     executions of the same loaded network held (the static path), in ns
 *     per execution, medians of timed batches, and the heap allocations
 *     per execution of both (a backend's own allocations show in both);
 *   - a batch sweep: the median latency of each batch size, and per item,
 *     with the resident memory once each specialisation is made;
 *
 * The model's input INPUT gets DIMS with dim 0 replaced by each batch size;
 * other inputs must have static shapes. Inputs are zeros; outputs are
 * discarded. By default: tests/data/onnx/dynamic_batch.onnx (relu on
 * [N, 4]) on cpu_ref, which isolates the host's own cost.
 *
 * usage: plexus-bench-dynamic [--json] [--backend-path DIR]...
 *            [--backends ID,...] [--option ID.KEY=VALUE]...
 *            [--model PATH --input NAME --dims 1x3x48x192]
 *            [--batches 1,2,4,8] [--runs N] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plexus/dynamic.h>

#include "alloc_counter.h"
#include "bench_util.h"

/* The process's resident memory in MB (Linux /proc/self/statm), or 0. */
static double resident_mb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (!f) {
        return 0.0;
    }
    int got = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    return got == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : 0.0;
}

#define MAX_LIST 16

static int fail(plx_status s, const char *what) {
    fprintf(stderr, "plexus-bench-dynamic: %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: plexus-bench-dynamic [--json] [--backend-path DIR]... "
                    "[--backends ID,...] [--option ID.KEY=VALUE]... [--model PATH --input NAME "
                    "--dims 1x3x48x192] [--batches 1,2,4,8] [--runs N]\n");
    return 2;
}

/* "1x3x48x192" or "1,2,4,8" into out; the count, 0 when malformed. */
static size_t parse_ints(const char *text, char sep, int64_t *out, size_t max) {
    size_t n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 1) {
            return 0;
        }
        out[n++] = v;
        if (*end == sep) {
            p = end + 1;
        } else if (*end == '\0') {
            return n;
        } else {
            return 0;
        }
    }
    return 0;
}

/* Per input and output of the specialisation: zero-filled buffers and
 * bindings. */
typedef struct io_buffers {
    plx_tensor_binding in[MAX_LIST], out[MAX_LIST];
    size_t in_count, out_count;
} io_buffers;

static bool make_buffers(const plx_model *m, io_buffers *b) {
    memset(b, 0, sizeof *b);
    b->in_count = plx_model_input_count(m);
    b->out_count = plx_model_output_count(m);
    if (b->in_count > MAX_LIST || b->out_count > MAX_LIST) {
        return false;
    }
    for (size_t k = 0; k < b->in_count + b->out_count; k++) {
        bool is_in = k < b->in_count;
        const plx_model_io *io = is_in ? plx_model_input(m, k) : plx_model_output(m, k - b->in_count);
        size_t bytes = 0;
        if (!plx_tensor_info_byte_size(&io->info, &bytes)) {
            return false;
        }
        plx_tensor_binding *t = is_in ? &b->in[k] : &b->out[k - b->in_count];
        *t = (plx_tensor_binding){io->binding_id, calloc(1, bytes ? bytes : 1), bytes, 0};
        if (!t->data) {
            return false;
        }
    }
    return true;
}

static void free_buffers(io_buffers *b) {
    for (size_t i = 0; i < b->in_count; i++) {
        free(b->in[i].data);
    }
    for (size_t i = 0; i < b->out_count; i++) {
        free(b->out[i].data);
    }
}

static plx_status execute(plx_specialization *sp, const io_buffers *b) {
    return plx_loaded_network_execute(plx_specialization_network(sp), b->in, b->in_count,
                                      b->out, b->out_count);
}

int main(int argc, char **argv) {
    bool json = false;
    const char *paths[MAX_LIST];
    size_t path_count = 0;
    const char *backends_arg = NULL;
    plx_backend_option options[MAX_LIST];
    size_t option_count = 0;
    const char *model = BENCH_DYNAMIC_MODEL, *input = "x", *dims_arg = "1x4";
    const char *batches_arg = "1,2,4,8";
    long runs = 51;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--backend-path") == 0 && has && path_count < MAX_LIST) {
            paths[path_count++] = argv[++i];
        } else if (strcmp(a, "--backends") == 0 && has) {
            backends_arg = argv[++i];
        } else if (strcmp(a, "--option") == 0 && has && option_count < MAX_LIST) {
            if (!bench_parse_option(argv[++i], &options[option_count++])) {
                return usage();
            }
        } else if (strcmp(a, "--model") == 0 && has) {
            model = argv[++i];
        } else if (strcmp(a, "--input") == 0 && has) {
            input = argv[++i];
        } else if (strcmp(a, "--dims") == 0 && has) {
            dims_arg = argv[++i];
        } else if (strcmp(a, "--batches") == 0 && has) {
            batches_arg = argv[++i];
        } else if (strcmp(a, "--runs") == 0 && has) {
            runs = strtol(argv[++i], NULL, 10);
        } else {
            return usage();
        }
    }
    int64_t dims[PLX_MAX_RANK], batches[MAX_LIST];
    size_t rank = parse_ints(dims_arg, 'x', dims, PLX_MAX_RANK);
    size_t batch_count = parse_ints(batches_arg, ',', batches, MAX_LIST);
    if (!rank || !batch_count || runs < 3) {
        return usage();
    }
    const char *backend_ids[MAX_LIST];
    char backends_buf[512];
    size_t backend_count = bench_split_ids(backends_arg, backends_buf, sizeof backends_buf,
                                           backend_ids, MAX_LIST);
    plx_runtime *rt = NULL;
    plx_status st = bench_runtime(paths, path_count, options, option_count, &rt);
    if (st) {
        return fail(st, "runtime");
    }
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    o.optimize.backends = backend_ids;
    o.optimize.backend_count = backend_count;
    o.cache_capacity = batch_count;
    plx_dynamic_model *dm = NULL;
    if ((st = plx_dynamic_model_open(rt, model, &o, &dm))) {
        plx_runtime_destroy(&rt);
        return fail(st, model);
    }

    /* Specialisation of each batch size, then its latency (held), and the
     * resident memory once it is made (the initializers are shared
     * between specialisations: what grows is each one's own). */
    double spec_ms[MAX_LIST], lat_ms[MAX_LIST], rss_mb[MAX_LIST];
    double rss_open_mb = resident_mb();
    double *samples = calloc((size_t)runs, sizeof *samples);
    int rc = samples ? 0 : 1;
    for (size_t b = 0; !rc && b < batch_count; b++) {
        plx_model_input_shape s = {.name = input, .rank = (uint32_t)rank};
        memcpy(s.dims, dims, rank * sizeof dims[0]);
        s.dims[0] = batches[b];
        plx_dynamic_signature sig = {&s, 1, NULL, 0};
        plx_specialization *sp = NULL;
        if ((st = plx_dynamic_model_acquire(dm, &sig, &sp))) {
            rc = fail(st, "acquire");
            break;
        }
        spec_ms[b] = plx_specialization_time_ms(sp);
        rss_mb[b] = resident_mb();
        io_buffers io;
        if (!make_buffers(plx_specialization_model(sp), &io)) {
            fprintf(stderr, "plexus-bench-dynamic: cannot make the buffers\n");
            rc = 1;
        }
        for (long r = -2; !rc && r < runs; r++) { /* two warm-up runs */
            double t0 = bench_now_ns();
            if ((st = execute(sp, &io))) {
                rc = fail(st, "execute");
                break;
            }
            if (r >= 0) {
                samples[r] = (bench_now_ns() - t0) / 1e6;
            }
        }
        if (!rc) {
            lat_ms[b] = bench_median(samples, (size_t)runs);
        }
        free_buffers(&io);
        plx_dynamic_model_release(dm, &sp);
    }

    /* Hit overhead at the first batch size: acquire + execute + release
     * against execute on the held network, alternating batches. */
    double dyn_ns = 0, static_ns = 0, allocs_per = -1, static_allocs_per = -1;
    if (!rc) {
        plx_model_input_shape s = {.name = input, .rank = (uint32_t)rank};
        memcpy(s.dims, dims, rank * sizeof dims[0]);
        s.dims[0] = batches[0];
        plx_dynamic_signature sig = {&s, 1, NULL, 0};
        plx_specialization *held = NULL;
        io_buffers io;
        if ((st = plx_dynamic_model_acquire(dm, &sig, &held))) {
            rc = fail(st, "acquire");
        } else if (!make_buffers(plx_specialization_model(held), &io)) {
            rc = 1;
        } else {
            /* About 100 ms of executions per sample, 1 to 200 of them. */
            double fit = lat_ms[0] > 0 ? 100.0 / lat_ms[0] : 200.0;
            const int PER_BATCH = fit >= 200.0 ? 200 : fit < 1.0 ? 1 : (int)fit;
            double *dyn = calloc((size_t)runs, sizeof *dyn);
            double *sta = calloc((size_t)runs, sizeof *sta);
            for (long r = 0; dyn && sta && !rc && r < runs; r++) {
                double t0 = bench_now_ns();
                for (int k = 0; k < PER_BATCH && !rc; k++) {
                    plx_specialization *sp = NULL;
                    if ((st = plx_dynamic_model_acquire(dm, &sig, &sp)) ||
                        (st = execute(sp, &io))) {
                        rc = fail(st, "dynamic execute");
                    }
                    plx_dynamic_model_release(dm, &sp);
                }
                double t1 = bench_now_ns();
                for (int k = 0; k < PER_BATCH && !rc; k++) {
                    if ((st = execute(held, &io))) {
                        rc = fail(st, "static execute");
                    }
                }
                dyn[r] = (t1 - t0) / PER_BATCH;
                sta[r] = (bench_now_ns() - t1) / PER_BATCH;
            }
            if (dyn && sta && !rc) {
                dyn_ns = bench_median(dyn, (size_t)runs);
                static_ns = bench_median(sta, (size_t)runs);
                if (alloc_counter_available()) {
                    alloc_counter_start();
                    for (int k = 0; k < PER_BATCH; k++) {
                        plx_specialization *sp = NULL;
                        if (!plx_dynamic_model_acquire(dm, &sig, &sp)) {
                            plx_status e = execute(sp, &io);
                            plx_status_free(e);
                        }
                        plx_dynamic_model_release(dm, &sp);
                    }
                    allocs_per = (double)alloc_counter_stop() / PER_BATCH;
                    alloc_counter_start();
                    for (int k = 0; k < PER_BATCH; k++) {
                        plx_status_free(execute(held, &io));
                    }
                    static_allocs_per = (double)alloc_counter_stop() / PER_BATCH;
                }
            }
            free(dyn);
            free(sta);
            free_buffers(&io);
        }
        plx_dynamic_model_release(dm, &held);
    }

    plx_dynamic_stats stats;
    plx_dynamic_model_stats(dm, &stats);
    if (!rc && json) {
        printf("{\"model\": \"%s\", \"input\": \"%s\", \"runs\": %ld, \"batches\": [", model,
               input, runs);
        for (size_t b = 0; b < batch_count; b++) {
            printf("%s{\"batch\": %lld, \"specialize_ms\": %.3f, \"latency_ms\": %.6f, "
                   "\"per_item_ms\": %.6f, \"resident_mb\": %.1f}", b ? ", " : "",
                   (long long)batches[b], spec_ms[b], lat_ms[b], lat_ms[b] / (double)batches[b],
                   rss_mb[b]);
        }
        printf("], \"resident_mb_at_open\": %.1f, \"hit_ns\": %.1f, \"static_ns\": %.1f, \"hit_overhead_ns\": %.1f, "
               "\"allocations_per_execute\": %.3f, \"static_allocations_per_execute\": %.3f, "
               "\"hits\": %llu, \"misses\": %llu, \"evictions\": %llu}\n", rss_open_mb, dyn_ns,
               static_ns,
               dyn_ns - static_ns, allocs_per, static_allocs_per,
               (unsigned long long)stats.hits, (unsigned long long)stats.misses,
               (unsigned long long)stats.evictions);
    } else if (!rc) {
        printf("model %s, input %s, dims %s with dim 0 swept; medians of %ld runs\n", model,
               input, dims_arg, runs);
        printf("%8s  %14s  %12s  %12s  %12s\n", "batch", "specialize ms", "latency ms",
               "per item ms", "resident MB");
        for (size_t b = 0; b < batch_count; b++) {
            printf("%8lld  %14.3f  %12.4f  %12.4f  %12.1f\n", (long long)batches[b], spec_ms[b],
                   lat_ms[b], lat_ms[b] / (double)batches[b], rss_mb[b]);
        }
        printf("resident MB at open: %.1f\n", rss_open_mb);
        printf("hit: %.1f ns per acquire + execute + release, static path %.1f ns: overhead "
               "%.1f ns", dyn_ns, static_ns, dyn_ns - static_ns);
        if (allocs_per >= 0) {
            printf("; allocations per execute %.3f (static path %.3f)", allocs_per,
                   static_allocs_per);
        }
        printf("\ncache: %llu hits, %llu misses, %llu evictions\n",
               (unsigned long long)stats.hits, (unsigned long long)stats.misses,
               (unsigned long long)stats.evictions);
    }
    free(samples);
    plx_dynamic_model_destroy(&dm);
    plx_runtime_destroy(&rt);
    return rc;
}
