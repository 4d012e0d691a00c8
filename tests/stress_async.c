/* Concurrent executions without Criterion, for ThreadSanitizer: Criterion's
 * runner does not work under TSan, so this program repeats the scenario of
 * test_async.c's eight_threads_match_sync as a plain executable. 8 threads,
 * each with its own working memory, run the network many times on seeded
 * inputs while the main thread pre-imports and clears tensors and flips the
 * debug callback; every result must equal the synchronous execution's
 * bytes. Exit status 0 on success, 1 with a message otherwise. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/network.h>

#define N 256
#define SEEDS 8
#define THREADS 8

static float expected[SEEDS][N];
static atomic_int failures;

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 13u + (unsigned)i * 5u) % 89u) / 4.0f - 10.0f;
    }
}

static int check(plx_status s, const char *what) {
    if (s) {
        fprintf(stderr, "stress_async: %s: %s\n", what, plx_status_get_message(s));
        plx_status_free(s);
        exit(1);
    }
    return 0;
}

typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    unsigned seed;
    int runs;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->runs; i++) {
        unsigned seed = (w->seed + (unsigned)i) % SEEDS;
        float x[N], y[N];
        input_for(x, seed);
        plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &in;
        a.input_count = 1;
        a.outputs = &out;
        a.output_count = 1;
        plx_status s = plx_loaded_network_execute_with(w->ln, w->wm, &a);
        if (s || memcmp(y, expected[seed], sizeof y)) {
            if (atomic_fetch_add(&failures, 1) == 0) {
                fprintf(stderr, "stress_async: run %d: %s\n", i,
                        s ? plx_status_get_message(s) : "result differs from synchronous");
            }
        }
        plx_status_free(s);
    }
    return NULL;
}

static void ignore(void *user, const char *layer, plx_op op, const char *backend, uint32_t slot,
                   const plx_tensor_info *info, const void *data) {
    (void)user, (void)layer, (void)op, (void)backend, (void)slot, (void)info, (void)data;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 300;
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    const char *path = CPU_REF_DIR;
    o.search_paths = &path;
    o.search_path_count = 1;
    o.ignore_environment = true;
    o.skip_default_dir = true;
    plx_runtime *rt;
    check(plx_runtime_create(&o, &rt), "runtime");
    plx_network *n;
    check(plx_network_create(&n), "network");
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2, .dims = {1, N}};
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ex = PLX_UNARY_DESC_INIT(PLX_UNARY_EXP);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, r, e, a, y;
    check(plx_network_add_input(n, "x", 0, &t, &x), "input");
    check(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r), "relu");
    check(plx_network_add_layer(n, "exp", PLX_OP_UNARY, &ex, 1, 1, &e), "exp");
    check(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a), "add");
    check(plx_network_add_output(n, "y", 0, &y), "output");
    check(plx_network_connect(n, x, 0, r, 0), "connect");
    check(plx_network_connect(n, x, 0, e, 0), "connect");
    check(plx_network_connect(n, r, 0, a, 0), "connect");
    check(plx_network_connect(n, e, 0, a, 1), "connect");
    check(plx_network_connect(n, a, 0, y, 0), "connect");
    const char *backends[] = {"cpu_ref"};
    for (int async = 0; async < 2; async++) {
        plx_optimize_options oo;
        plx_optimize_options_init(&oo);
        oo.backends = backends;
        oo.backend_count = 1;
        oo.import_enabled = async;
        oo.export_enabled = async;
        plx_optimized_network *on;
        check(plx_optimize(rt, n, &oo, &on), "optimize");
        plx_load_options lo;
        plx_load_options_init(&lo);
        lo.async_execution = async;
        plx_loaded_network *ln;
        check(plx_runtime_load_network(rt, &on, &lo, &ln), "load");
        if (!async) {
            for (unsigned s = 0; s < SEEDS; s++) {
                float xi[N];
                input_for(xi, s);
                plx_tensor_binding in = {0, xi, sizeof xi, 0}, out = {0, expected[s], N * 4, 0};
                check(plx_loaded_network_execute(ln, &in, 1, &out, 1), "sync");
            }
            plx_loaded_network_unload(&ln);
            continue;
        }
        worker w[THREADS];
        pthread_t th[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (worker){ln, NULL, (unsigned)i, runs};
            check(plx_loaded_network_create_working_memory(ln, &w[i].wm), "working memory");
            pthread_create(&th[i], NULL, work, &w[i]);
        }
        /* Meanwhile: pre-imports come and go, the callback is flipped, and
         * the network's own execution runs beside the working memories. */
        float spare[N];
        input_for(spare, 1);
        for (int i = 0; i < runs / 10 + 1; i++) {
            plx_tensor_binding in = {0, spare, sizeof spare, 0};
            uint32_t id;
            check(plx_loaded_network_import_inputs(ln, &in, 1, &id), "pre-import");
            check(plx_loaded_network_clear_imported_inputs(ln, &id, 1), "clear");
            plx_loaded_network_set_debug_callback(ln, i % 2 ? ignore : NULL, NULL);
            float yo[N];
            plx_tensor_binding out = {0, yo, sizeof yo, 0};
            check(plx_loaded_network_execute(ln, &in, 1, &out, 1), "own execution");
            if (memcmp(yo, expected[1], sizeof yo)) {
                atomic_fetch_add(&failures, 1);
            }
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            plx_working_memory_destroy(&w[i].wm);
        }
        plx_loaded_network_unload(&ln);
    }
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
    if (atomic_load(&failures)) {
        fprintf(stderr, "stress_async: %d failures\n", atomic_load(&failures));
        return 1;
    }
    printf("stress_async: %d threads x %d executions match the synchronous results\n", THREADS,
           runs);
    return 0;
}
