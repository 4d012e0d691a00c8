/* plexus-bench-dispatch: the runtime's dispatch overhead.
 *
 * Times synchronous executions of input -> relu -> output on a 1x16 float32
 * tensor on cpu_ref, the smallest network there is, so that the time is the
 * runtime's own: binding validation, input copy, one workload, output copy.
 * Reports the median of many timed batches (this machine is shared and
 * noisy; the median resists that) and the heap allocations per execution.
 *
 * usage: plexus-bench-dispatch [--json] [--backend-path DIR] [--batches N]
 *                              [--per-batch N] [--import] [--export] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/network.h>

#include "alloc_counter.h"
#include "bench_util.h"

static int fail(plx_status s, const char *what) {
    fprintf(stderr, "plexus-bench-dispatch: %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
    return 1;
}

int main(int argc, char **argv) {
    bool json = false, import = false, exp = false;
    const char *path = BENCH_CPU_REF_DIR;
    long batches = 201, per_batch = 1000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--import") == 0) {
            import = true;
        } else if (strcmp(argv[i], "--export") == 0) {
            exp = true;
        } else if (strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc) {
            batches = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--per-batch") == 0 && i + 1 < argc) {
            per_batch = strtol(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: plexus-bench-dispatch [--json] [--backend-path DIR] "
                            "[--batches N] [--per-batch N] [--import] [--export]\n");
            return 2;
        }
    }
    if (batches < 1 || per_batch < 1) {
        fprintf(stderr, "plexus-bench-dispatch: --batches and --per-batch must be >= 1\n");
        return 2;
    }

    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.search_paths = &path;
    ro.search_path_count = 1;
    ro.ignore_environment = true;
    ro.skip_default_dir = true;
    plx_runtime *rt;
    plx_status s = plx_runtime_create(&ro, &rt);
    if (s) {
        return fail(s, "runtime");
    }
    plx_network *net;
    plx_network_create(&net);
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2, .dims = {1, 16}};
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id in, r, out;
    if ((s = plx_network_add_input(net, "x", 0, &t, &in)) ||
        (s = plx_network_add_layer(net, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r)) ||
        (s = plx_network_add_output(net, "y", 0, &out)) ||
        (s = plx_network_connect(net, in, 0, r, 0)) || (s = plx_network_connect(net, r, 0, out, 0))) {
        return fail(s, "network");
    }
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.import_enabled = import;
    oo.export_enabled = exp;
    plx_optimized_network *on;
    if ((s = plx_optimize(rt, net, &oo, &on))) {
        return fail(s, "optimize");
    }
    plx_loaded_network *ln;
    if ((s = plx_runtime_load_network(rt, &on, NULL, &ln))) {
        return fail(s, "load");
    }
    float x[16], y[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i - 8.0f;
    }
    plx_tensor_binding ib = {0, x, sizeof x, 0}, ob = {0, y, sizeof y, 0};
    for (int i = 0; i < 1000; i++) { /* warm-up, and the first-run allocation */
        if ((s = plx_loaded_network_execute(ln, &ib, 1, &ob, 1))) {
            return fail(s, "execute");
        }
    }
    double *ns = malloc((size_t)batches * sizeof *ns);
    if (!ns) {
        fprintf(stderr, "plexus-bench-dispatch: out of memory\n");
        return 1;
    }
    size_t allocs = 0;
    bool counted = alloc_counter_available();
    for (long b = 0; b < batches; b++) {
        if (counted) {
            alloc_counter_start();
        }
        double t0 = bench_now_ns();
        for (long i = 0; i < per_batch; i++) {
            s = plx_loaded_network_execute(ln, &ib, 1, &ob, 1);
            if (s) {
                return fail(s, "execute");
            }
        }
        ns[b] = (bench_now_ns() - t0) / (double)per_batch;
        if (counted) {
            allocs += alloc_counter_stop();
        }
    }
    double median = bench_median(ns, (size_t)batches);
    double per_exec_allocs = counted ? (double)allocs / (double)(batches * per_batch) : -1.0;
    if (json) {
        printf("{\"dispatch_ns\": %.1f, \"allocs_per_execute\": ", median);
        if (counted) {
            printf("%.3f", per_exec_allocs);
        } else {
            printf("null");
        }
        printf(", \"min_ns\": %.1f, \"max_ns\": %.1f, \"batches\": %ld, \"per_batch\": %ld, "
               "\"import\": %s, \"export\": %s}\n",
               ns[0], ns[batches - 1], batches, per_batch, import ? "true" : "false",
               exp ? "true" : "false");
    } else {
        printf("dispatch: median %.1f ns per execute (min %.1f, max %.1f) over %ld batches of "
               "%ld; import %s, export %s\n",
               median, ns[0], ns[batches - 1], batches, per_batch, import ? "on" : "off",
               exp ? "on" : "off");
        if (counted) {
            printf("allocations per execute: %.3f\n", per_exec_allocs);
        } else {
            printf("allocations per execute: not counted (allocator replaced)\n");
        }
    }
    free(ns);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&net);
    plx_runtime_destroy(&rt);
    return 0;
}
