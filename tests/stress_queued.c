/* Queued execution under concurrency, without Criterion, for
 * ThreadSanitizer (Criterion's runner does not work under TSan): the
 * scenarios of test_queued.c's concurrent_working_memories, longer. Four
 * threads, each with its own working memory, run two networks loaded for
 * asynchronous execution on the queued test backend (tests/queuedev) and
 * cpu_ref: a chain queuedev -> queuedev_b -> cpu_ref -> queuedev, and two
 * independent branches on queuedev and queuedev_b whose fence the host
 * hands over (one fence domain). Some executions fail on purpose (a
 * negative x[0] reaches the "fail" layer), and the main thread turns
 * profiling on and off meanwhile, so that backend events are recorded from
 * the queues' worker threads. Every result must be right and every failure
 * the expected one. Exit status 0 on success, 1 with a message otherwise. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/network.h>

#define N 64
#define THREADS 4
#define RUNS 150

static atomic_int failures;
static atomic_bool done;

/* Reports the first failure: what went wrong, and the detail. */
static void fail(const char *what, const char *detail) {
    if (atomic_fetch_add(&failures, 1) == 0) {
        fprintf(stderr, "stress_queued: %s: %s\n", what, detail);
    }
}

static void check(plx_status s, const char *what) {
    if (s) {
        fprintf(stderr, "stress_queued: %s: %s\n", what, plx_status_get_message(s));
        plx_status_free(s);
        exit(1);
    }
}

static plx_tensor_info vec(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = 1;
    t.dims[1] = N;
    return t;
}

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 13u + (unsigned)i * 5u) % 89u) / 4.0f - 10.0f;
    }
}

/* x -> fail_a = relu (queuedev) -> b@queuedev_b = b + b -> n = neg (cpu_ref)
 * -> r = relu (queuedev) -> y: y = relu(-2 relu(x)) = 0 for every x, so
 * the check also needs the side output s = b (binding 1). */
static plx_loaded_network *load_chain(plx_runtime *rt) {
    plx_network *n;
    check(plx_network_create(&n), "network");
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_unary_desc neg = PLX_UNARY_DESC_INIT(PLX_UNARY_NEG);
    plx_layer_id x, a, b, ng, r, y, s;
    check(plx_network_add_input(n, "x", 0, &t, &x), "x");
    check(plx_network_add_layer(n, "fail_a", PLX_OP_ACTIVATION, &relu, 1, 1, &a), "a");
    check(plx_network_add_layer(n, "b@queuedev_b", PLX_OP_BINARY, &add, 2, 1, &b), "b");
    check(plx_network_add_layer(n, "n", PLX_OP_UNARY, &neg, 1, 1, &ng), "n");
    check(plx_network_add_layer(n, "r", PLX_OP_ACTIVATION, &relu, 1, 1, &r), "r");
    check(plx_network_add_output(n, "y", 0, &y), "y");
    check(plx_network_add_output(n, "s", 1, &s), "s");
    check(plx_network_connect(n, x, 0, a, 0), "connect");
    check(plx_network_connect(n, a, 0, b, 0), "connect");
    check(plx_network_connect(n, a, 0, b, 1), "connect");
    check(plx_network_connect(n, b, 0, ng, 0), "connect");
    check(plx_network_connect(n, ng, 0, r, 0), "connect");
    check(plx_network_connect(n, r, 0, y, 0), "connect");
    check(plx_network_connect(n, b, 0, s, 0), "connect");
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *be[] = {"queuedev", "queuedev_b", "cpu_ref"};
    oo.backends = be;
    oo.backend_count = 3;
    oo.import_enabled = true;
    oo.export_enabled = true;
    oo.graph_rewrites = false;
    plx_optimized_network *on;
    check(plx_optimize(rt, n, &oo, &on), "optimize chain");
    plx_network_destroy(&n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = true;
    plx_loaded_network *ln;
    check(plx_runtime_load_network(rt, &on, &lo, &ln), "load chain");
    return ln;
}

/* x -> fail_a = relu (queuedev) -> y; z -> b@queuedev_b = z + z -> y2. */
static plx_loaded_network *load_branches(plx_runtime *rt) {
    plx_network *n;
    check(plx_network_create(&n), "network");
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, z, a, b, y, y2;
    check(plx_network_add_input(n, "x", 0, &t, &x), "x");
    check(plx_network_add_input(n, "z", 1, &t, &z), "z");
    check(plx_network_add_layer(n, "fail_a", PLX_OP_ACTIVATION, &relu, 1, 1, &a), "a");
    check(plx_network_add_layer(n, "b@queuedev_b", PLX_OP_BINARY, &add, 2, 1, &b), "b");
    check(plx_network_add_output(n, "y", 0, &y), "y");
    check(plx_network_add_output(n, "y2", 1, &y2), "y2");
    check(plx_network_connect(n, x, 0, a, 0), "connect");
    check(plx_network_connect(n, z, 0, b, 0), "connect");
    check(plx_network_connect(n, z, 0, b, 1), "connect");
    check(plx_network_connect(n, a, 0, y, 0), "connect");
    check(plx_network_connect(n, b, 0, y2, 0), "connect");
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *be[] = {"queuedev", "queuedev_b"};
    oo.backends = be;
    oo.backend_count = 2;
    oo.import_enabled = true;
    oo.export_enabled = true;
    oo.graph_rewrites = false;
    plx_optimized_network *on;
    check(plx_optimize(rt, n, &oo, &on), "optimize branches");
    plx_network_destroy(&n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = true;
    plx_loaded_network *ln;
    check(plx_runtime_load_network(rt, &on, &lo, &ln), "load branches");
    return ln;
}

typedef struct worker {
    plx_loaded_network *chain, *branches;
    plx_working_memory *chain_wm, *branches_wm;
    unsigned seed;
} worker;

/* Checks one execution's status: every seventh seed fails on purpose. */
static bool verdict(plx_status s, bool must_fail, const char *what) {
    if (must_fail) {
        if (!s) {
            fail(what, "a negative x[0] did not fail");
            return false;
        }
        if (!strstr(plx_status_get_message(s), "layer 'fail_a': negative input")) {
            fail(what, plx_status_get_message(s));
        }
        plx_status_free(s);
        return false;
    }
    if (s) {
        fail(what, plx_status_get_message(s));
        plx_status_free(s);
        return false;
    }
    return true;
}

static void *work(void *arg) {
    worker *w = arg;
    for (unsigned i = 0; i < RUNS && !atomic_load(&failures); i++) {
        unsigned seed = w->seed + i;
        bool must_fail = seed % 7 == 0;
        float x[N], z[N], y[N], s[N];
        input_for(x, seed);
        input_for(z, seed + 3);
        x[0] = must_fail ? -1.0f : 1.0f;
        plx_tensor_binding in[] = {{0, x, sizeof x, 0}, {1, z, sizeof z, 0}};
        plx_tensor_binding out[] = {{0, y, sizeof y, 0}, {1, s, sizeof s, 0}};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = in;
        a.input_count = 1;
        a.outputs = out;
        a.output_count = 2;
        if (verdict(plx_loaded_network_execute_with(w->chain, w->chain_wm, &a), must_fail,
                    "chain")) {
            for (int k = 0; k < N; k++) {
                float r = x[k] > 0 ? x[k] : 0.0f;
                if (!(s[k] == r + r) || !(y[k] == 0.0f)) {
                    fail("chain", "wrong result");
                    break;
                }
            }
        }
        a.input_count = 2;
        if (verdict(plx_loaded_network_execute_with(w->branches, w->branches_wm, &a), must_fail,
                    "branches")) {
            for (int k = 0; k < N; k++) {
                if (!(y[k] == (x[k] > 0 ? x[k] : 0.0f)) || !(s[k] == z[k] + z[k])) {
                    fail("branches", "wrong result");
                    break;
                }
            }
        }
    }
    return NULL;
}

static void *toggle_profiling(void *arg) {
    plx_runtime *rt = arg;
    bool on = true;
    while (!atomic_load(&done)) {
        check(plx_runtime_enable_profiling(rt, on), "enable_profiling");
        on = !on;
        if (plx_runtime_trace_event_count(rt) > 20000) {
            plx_runtime_clear_trace(rt);
        }
        struct timespec t = {0, 500000};
        nanosleep(&t, NULL);
    }
    return NULL;
}

int main(void) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.ignore_environment = true;
    o.skip_default_dir = true;
    const char *paths[] = {CPU_REF_DIR, QUEUEDEV_MODULE, QUEUEDEV_B_MODULE};
    o.search_paths = paths;
    o.search_path_count = 3;
    plx_backend_option opts[] = {{"queuedev", "domain", "plexus.test"},
                                 {"queuedev_b", "domain", "plexus.test"},
                                 {"queuedev", "delay_us", "100"},
                                 {"queuedev_b", "delay_us", "50"}};
    o.backend_options = opts;
    o.backend_option_count = 4;
    plx_runtime *rt;
    check(plx_runtime_create(&o, &rt), "runtime");
    if (!plx_runtime_find_backend(rt, "queuedev") || !plx_runtime_find_backend(rt, "queuedev_b")) {
        fprintf(stderr, "stress_queued: queuedev or queuedev_b did not load\n");
        return 1;
    }
    plx_loaded_network *chain = load_chain(rt), *branches = load_branches(rt);
    worker w[THREADS];
    pthread_t t[THREADS], profiler;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){chain, branches, NULL, NULL, (unsigned)i * 37u};
        check(plx_loaded_network_create_working_memory(chain, &w[i].chain_wm), "wm");
        check(plx_loaded_network_create_working_memory(branches, &w[i].branches_wm), "wm");
    }
    if (pthread_create(&profiler, NULL, toggle_profiling, rt) != 0) {
        return 1;
    }
    for (int i = 0; i < THREADS; i++) {
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0) {
            return 1;
        }
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&done, true);
    pthread_join(profiler, NULL);
    for (int i = 0; i < THREADS; i++) {
        plx_working_memory_destroy(&w[i].chain_wm);
        plx_working_memory_destroy(&w[i].branches_wm);
    }
    plx_loaded_network_unload(&chain);
    plx_loaded_network_unload(&branches);
    plx_runtime_destroy(&rt);
    if (atomic_load(&failures)) {
        return 1;
    }
    printf("stress_queued: %d threads x %d executions of two networks: ok\n", THREADS, RUNS);
    return 0;
}
