/* Externally managed memory, allocators, pre-imported tensors and
 * concurrent executions (docs/loaded-network.md: Loading 7-8, Pre-imported
 * inputs and outputs, Executing asynchronously). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "alloc_counter.h"
#include "test_util.h"

#define N 64

/* Counts the application allocator's calls (atomically: executions on
 * several threads allocate their working memories concurrently). */
typedef struct counting {
    atomic_size_t allocations;
    atomic_size_t frees;
    atomic_size_t bytes;
    size_t misaligned;
} counting;

static void *count_alloc(void *user, size_t size, size_t alignment) {
    counting *c = user;
    void *p = NULL;
    if (posix_memalign(&p, alignment, size) != 0) {
        return NULL;
    }
    atomic_fetch_add(&c->allocations, 1);
    atomic_fetch_add(&c->bytes, size);
    return p;
}

static void count_free(void *user, void *ptr) {
    counting *c = user;
    atomic_fetch_add(&c->frees, 1);
    free(ptr);
}

static plx_runtime *make_runtime(counting *c, const char *strategy,
                                 const plx_memory_strategy *custom) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_REF_DIR, TESTDEV_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    plx_backend_allocator a = {"cpu_ref", {c, count_alloc, count_free, PLX_MEMORY_SOURCE_MALLOC}};
    plx_backend_memory_strategy m = {"cpu_ref", strategy, custom};
    if (c) {
        o.allocators = &a;
        o.allocator_count = 1;
    }
    if (strategy) {
        o.memory_strategies = &m;
        o.memory_strategy_count = 1;
    }
    return tu_create(&o);
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

/* x -> relu -> add(bias) -> sqrt -> mul(scale) -> y, and a side output of
 * the add: several intermediate tensors with overlapping lifetimes. */
static plx_network *chain(void) {
    static float bias[N], scale[N];
    for (int i = 0; i < N; i++) {
        bias[i] = 0.25f * (float)i;
        scale[i] = 1.0f + 0.01f * (float)i;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id x, r, b, a, s, c, m, y, y2;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "bias", &t, bias, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &sq, 1, 1, &s));
    OK(plx_network_add_constant(n, "scale", &t, scale, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "sum", 1, &y2));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, a, 0));
    OK(plx_network_connect(n, b, 0, a, 1));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, s, 0, m, 0));
    OK(plx_network_connect(n, c, 0, m, 1));
    OK(plx_network_connect(n, m, 0, y, 0));
    OK(plx_network_connect(n, a, 0, y2, 0));
    return n;
}

static plx_loaded_network *load_chain(plx_runtime *rt, bool async, bool ext, bool import) {
    plx_network *n = chain();
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"cpu_ref"};
    oo.backends = b;
    oo.backend_count = 1;
    oo.import_enabled = import;
    oo.export_enabled = import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_network_destroy(&n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    lo.externally_managed_memory = ext;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 31u + (unsigned)i * 7u) % 97u) / 8.0f - 4.0f;
    }
}

static void run(plx_loaded_network *ln, plx_working_memory *wm, const float *x, float *y,
                float *sum) {
    plx_tensor_binding in = {0, (void *)x, N * sizeof *x, 0};
    plx_tensor_binding out[] = {{0, y, N * sizeof *y, 0}, {1, sum, N * sizeof *sum, 0}};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = out;
    a.output_count = 2;
    OK(plx_loaded_network_execute_with(ln, wm, &a));
}

/* The reference: the same network executed synchronously, backend-managed. */
static void reference(plx_runtime *rt, const float *x, float *y, float *sum) {
    plx_loaded_network *ln = load_chain(rt, false, false, false);
    run(ln, NULL, x, y, sum);
    plx_loaded_network_unload(&ln);
}

Test(memory, planned_memory_gives_the_same_bytes) {
    counting c = {0};
    plx_runtime *rt = make_runtime(&c, NULL, NULL);
    float x[N], y0[N], s0[N], y1[N], s1[N];
    input_for(x, 1);
    reference(rt, x, y0, s0);
    plx_loaded_network *ln = load_chain(rt, false, true, false);
    cr_assert(eq(sz, plx_loaded_network_memory_report_count(ln), 1));
    const plx_memory_report *r = plx_loaded_network_memory_report(ln, 0);
    cr_assert(eq(str, (char *)r->backend_id, "cpu_ref"));
    cr_assert(eq(str, (char *)r->strategy, "greedy"));
    cr_assert(le(sz, r->lower_bound, r->bytes));
    cr_assert(le(dbl, (double)r->bytes, 1.10 * (double)r->lower_bound), "%zu vs %zu", r->bytes,
              r->lower_bound);
    /* Memory comes at the first execution, from the application's allocator. */
    cr_assert(eq(sz, atomic_load(&c.allocations), 0));
    run(ln, NULL, x, y1, s1);
    cr_assert(eq(sz, atomic_load(&c.allocations), r->buffer_count));
    cr_assert(eq(sz, atomic_load(&c.bytes), r->bytes));
    cr_assert(eq(int, memcmp(y0, y1, sizeof y0), 0));
    cr_assert(eq(int, memcmp(s0, s1, sizeof s0), 0));
    /* Released and allocated again. */
    plx_loaded_network_release_working_memory(ln);
    cr_assert(eq(sz, atomic_load(&c.frees), r->buffer_count));
    input_for(x, 2);
    reference(rt, x, y0, s0);
    run(ln, NULL, x, y1, s1);
    cr_assert(eq(int, memcmp(y0, y1, sizeof y0), 0));
    cr_assert(eq(sz, atomic_load(&c.allocations), 2 * r->buffer_count));
    plx_loaded_network_unload(&ln);
    cr_assert(eq(sz, atomic_load(&c.frees), atomic_load(&c.allocations)));
    plx_runtime_destroy(&rt);
}

Test(memory, none_strategy_uses_more_than_greedy) {
    plx_runtime *rt = make_runtime(NULL, "none", NULL);
    plx_loaded_network *ln = load_chain(rt, false, true, false);
    const plx_memory_report *none = plx_loaded_network_memory_report(ln, 0);
    cr_assert(eq(str, (char *)none->strategy, "none"));
    size_t none_bytes = none->bytes, tensors = none->tensor_count;
    cr_assert(eq(sz, none->buffer_count, tensors));
    plx_runtime *rt2 = make_runtime(NULL, "greedy", NULL);
    plx_loaded_network *l2 = load_chain(rt2, false, true, false);
    const plx_memory_report *greedy = plx_loaded_network_memory_report(l2, 0);
    cr_assert(lt(sz, greedy->bytes, none_bytes));
    cr_assert(eq(sz, greedy->buffer_count, 1));
    float x[N], y[N], s[N], y2[N], s2[N];
    input_for(x, 3);
    run(ln, NULL, x, y, s);
    run(l2, NULL, x, y2, s2);
    cr_assert(eq(int, memcmp(y, y2, sizeof y), 0));
    plx_loaded_network_unload(&ln);
    plx_loaded_network_unload(&l2);
    plx_runtime_destroy(&rt);
    plx_runtime_destroy(&rt2);
}

/* A strategy that puts every block at offset 0 of one buffer. */
static bool overlapping(void *user, const plx_memory_block *blocks, size_t count,
                        plx_memory_placement *placements, size_t *buffer_sizes,
                        size_t *out_buffer_count, char *error, size_t error_size) {
    (void)user;
    (void)error;
    (void)error_size;
    size_t largest = 0;
    for (size_t i = 0; i < count; i++) {
        placements[i].buffer = 0;
        placements[i].offset = 0;
        largest = blocks[i].size > largest ? blocks[i].size : largest;
    }
    buffer_sizes[0] = largest;
    *out_buffer_count = 1;
    return true;
}

Test(memory, buggy_strategy_is_caught) {
    plx_memory_strategy bad = {PLX_MEMORY_STRATEGY_SIZE_1_0, "overlapper", NULL, overlapping};
    plx_runtime *rt = make_runtime(NULL, "overlapper", &bad);
    plx_network *n = chain();
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"cpu_ref"};
    oo.backends = b;
    oo.backend_count = 1;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    plx_loaded_network *ln = NULL;
    FAILS_WITH(plx_runtime_load_network(rt, &on, &lo, &ln),
               "backend 'cpu_ref': memory strategy 'overlapper': blocks");
    cr_assert(zero(ptr, ln));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(memory, capabilities_are_checked_at_load) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, r, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    const char *b[] = {"testdev"};
    for (int async = 0; async < 2; async++) {
        plx_optimize_options oo;
        plx_optimize_options_init(&oo);
        oo.backends = b;
        oo.backend_count = 1;
        plx_optimized_network *on;
        OK(plx_optimize(rt, n, &oo, &on));
        plx_load_options lo;
        plx_load_options_init(&lo);
        lo.async_execution = async;
        lo.externally_managed_memory = !async;
        plx_loaded_network *ln = NULL;
        FAILS_WITH(plx_runtime_load_network(rt, &on, &lo, &ln),
                   async ? "backend 'testdev' does not report async_execution"
                         : "backend 'testdev' does not report externally_managed_memory");
    }
    /* Without the options, no working memories. */
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = b;
    oo.backend_count = 1;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    plx_working_memory *wm = NULL;
    FAILS_WITH(plx_loaded_network_create_working_memory(ln, &wm),
               "was not loaded for asynchronous execution");
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(preimport, every_rule) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_loaded_network *ln = load_chain(rt, false, false, true);
    float x[N], x2[N], y[N], s[N], y0[N], s0[N];
    input_for(x, 4);
    input_for(x2, 5);
    plx_tensor_binding in = {0, x, sizeof x, 0}, in2 = {0, x2, sizeof x2, 0};
    plx_tensor_binding bad = {7, x, sizeof x, 0};
    uint32_t ids[2] = {99, 99};
    OK(plx_loaded_network_import_inputs(ln, &in, 1, ids));
    cr_assert(eq(u32, ids[0], 0));
    /* Half-way failure: the first import of the set is rolled back. */
    plx_tensor_binding set[] = {in2, bad};
    FAILS_WITH(plx_loaded_network_import_inputs(ln, set, 2, ids),
               "input binding id 7 is not one of the network's inputs");
    OK(plx_loaded_network_import_inputs(ln, &in2, 1, ids + 1));
    cr_assert(eq(u32, ids[1], 1), "the rolled-back import issued no id");

    plx_tensor_binding outs[] = {{0, y, sizeof y, 0}, {1, s, sizeof s, 0}};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.outputs = outs;
    a.output_count = 2;
    a.preimported_inputs = ids;
    a.preimported_input_count = 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    reference(rt, x, y0, s0);
    cr_assert(eq(int, memcmp(y, y0, sizeof y), 0));
    a.preimported_inputs = ids + 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    reference(rt, x2, y0, s0);
    cr_assert(eq(int, memcmp(y, y0, sizeof y), 0));

    /* An id equal to the number issued is unknown. */
    uint32_t two = 2;
    a.preimported_inputs = &two;
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &a),
               "pre-imported input id 2 is unknown (2 issued)");
    FAILS_WITH(plx_loaded_network_clear_imported_inputs(ln, &two, 1),
               "pre-imported input id 2 is unknown");
    /* The same id twice in one call. */
    uint32_t twice[] = {0, 0};
    a.preimported_inputs = twice;
    a.preimported_input_count = 2;
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &a),
               "the network has 1 inputs, the call gives 0 tensors and 2 pre-imported inputs");
    FAILS_WITH(plx_loaded_network_clear_imported_inputs(ln, twice, 2),
               "pre-imported input id 0 is given more than once");
    /* A tensor and a pre-imported id for the same input. */
    a.inputs = &in;
    a.input_count = 1;
    a.preimported_inputs = ids;
    a.preimported_input_count = 1;
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &a),
               "the network has 1 inputs, the call gives 1 tensors and 1 pre-imported inputs");
    /* Cleared ids are rejected by execute and by clear. */
    OK(plx_loaded_network_clear_imported_inputs(ln, ids, 1));
    a.inputs = NULL;
    a.input_count = 0;
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &a),
               "pre-imported input id 0 was cleared");
    FAILS_WITH(plx_loaded_network_clear_imported_inputs(ln, ids, 1),
               "pre-imported input id 0 was already cleared");
    /* Pre-imported outputs. */
    uint32_t out_id;
    plx_tensor_binding yb = {0, y, sizeof y, 0};
    OK(plx_loaded_network_import_outputs(ln, &yb, 1, &out_id));
    plx_execute_args b2;
    plx_execute_args_init(&b2);
    plx_tensor_binding sb = {1, s, sizeof s, 0};
    b2.outputs = &sb;
    b2.output_count = 1;
    b2.preimported_outputs = &out_id;
    b2.preimported_output_count = 1;
    b2.preimported_inputs = ids + 1;
    b2.preimported_input_count = 1;
    memset(y, 0, sizeof y);
    OK(plx_loaded_network_execute_with(ln, NULL, &b2));
    reference(rt, x2, y0, s0);
    cr_assert(eq(int, memcmp(y, y0, sizeof y), 0));
    cr_assert(eq(int, memcmp(s, s0, sizeof s), 0));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(preimport, needs_import_enabled) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_loaded_network *ln = load_chain(rt, false, false, false);
    float x[N];
    plx_tensor_binding in = {0, x, sizeof x, 0};
    uint32_t id;
    FAILS_WITH(plx_loaded_network_import_inputs(ln, &in, 1, &id),
               "pre-importing inputs needs import enabled");
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* A working memory in use is refused, not shared: the debug callback runs
 * inside an execution and tries to start another on the same memory. */
typedef struct reentry {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    const float *x;
    plx_status status;
    bool tried;
} reentry;

static void try_again(void *user, const char *layer, plx_op op, const char *backend,
                      uint32_t slot, const plx_tensor_info *info, const void *data) {
    (void)layer;
    (void)op;
    (void)backend;
    (void)slot;
    (void)info;
    (void)data;
    reentry *r = user;
    if (r->tried) {
        return;
    }
    r->tried = true;
    float y[N], s[N];
    plx_tensor_binding in = {0, (void *)r->x, N * sizeof(float), 0};
    plx_tensor_binding out[] = {{0, y, sizeof y, 0}, {1, s, sizeof s, 0}};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = out;
    a.output_count = 2;
    r->status = plx_loaded_network_execute_with(r->ln, r->wm, &a);
}

Test(async, working_memory_in_use_is_refused) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_loaded_network *ln = load_chain(rt, true, false, false);
    plx_working_memory *wm;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    float x[N], y[N], s[N];
    input_for(x, 6);
    reentry r = {ln, wm, x, NULL, false};
    plx_loaded_network_set_debug_callback(ln, try_again, &r);
    run(ln, wm, x, y, s);
    cr_assert(r.tried);
    cr_assert(not(zero(ptr, r.status)));
    cr_assert(eq(str, (char *)plx_status_get_message(r.status),
                 "the working memory is in use by another execution"));
    plx_status_free(r.status);
    plx_loaded_network_set_debug_callback(ln, NULL, NULL);
    FAILS_WITH(plx_working_memory_release(NULL), "working memory is NULL");
    OK(plx_working_memory_release(wm));
    run(ln, wm, x, y, s);
    plx_working_memory_destroy(&wm);
    cr_assert(zero(ptr, wm));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    unsigned seed;
    int runs;
    const float (*expect_y)[N];
    int failures;
    char first_failure[256];
} worker;

#define SEEDS 16
static float expected_y[SEEDS][N], expected_s[SEEDS][N];

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->runs; i++) {
        unsigned seed = (w->seed + (unsigned)i) % SEEDS;
        float x[N], y[N], s[N];
        input_for(x, seed);
        plx_tensor_binding in = {0, x, sizeof x, 0};
        plx_tensor_binding out[] = {{0, y, sizeof y, 0}, {1, s, sizeof s, 0}};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &in;
        a.input_count = 1;
        a.outputs = out;
        a.output_count = 2;
        plx_status st = plx_loaded_network_execute_with(w->ln, w->wm, &a);
        if (st || memcmp(y, expected_y[seed], sizeof y) || memcmp(s, expected_s[seed], sizeof s)) {
            if (!w->failures++) {
                snprintf(w->first_failure, sizeof w->first_failure, "run %d: %s", i,
                         st ? plx_status_get_message(st) : "result differs from synchronous");
            }
        }
        plx_status_free(st);
    }
    return NULL;
}

/* 8 threads x 500 executions, each thread with its own working memory;
 * every result is bit-identical to the synchronous execution. */
Test(async, eight_threads_match_sync, .timeout = 120) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    for (unsigned seed = 0; seed < SEEDS; seed++) {
        float x[N];
        input_for(x, seed);
        reference(rt, x, expected_y[seed], expected_s[seed]);
    }
    plx_loaded_network *ln = load_chain(rt, true, false, true);
    int runs = tu_under_valgrind() ? 20 : 500;
    worker w[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){ln, NULL, (unsigned)i * 3u, runs, NULL, 0, {0}};
        OK(plx_loaded_network_create_working_memory(ln, &w[i].wm));
        cr_assert(eq(int, pthread_create(&t[i], NULL, work, &w[i]), 0));
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(int, w[i].failures, 0), "thread %d: %d failures, first: %s", i,
                  w[i].failures, w[i].first_failure);
        plx_working_memory_destroy(&w[i].wm);
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* Executions with a working memory allocate nothing in steady state. */
Test(async, working_memory_execution_allocates_nothing) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is replaced by a sanitizer or valgrind");
    }
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_loaded_network *ln = load_chain(rt, true, false, true);
    plx_working_memory *wm;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    float x[N], y[N], s[N];
    input_for(x, 7);
    run(ln, wm, x, y, s);
    alloc_counter_start();
    for (int i = 0; i < 50; i++) {
        plx_tensor_binding in = {0, x, sizeof x, 0};
        plx_tensor_binding out[] = {{0, y, sizeof y, 0}, {1, s, sizeof s, 0}};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &in;
        a.input_count = 1;
        a.outputs = out;
        a.output_count = 2;
        plx_status st = plx_loaded_network_execute_with(ln, wm, &a);
        if (st) {
            alloc_counter_stop();
            cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
        }
    }
    size_t allocs = alloc_counter_stop();
    cr_assert(eq(sz, allocs, 0));
    plx_working_memory_destroy(&wm);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* A memfd holding `bytes`, standing in for a dma-buf. */
static int memfd_with(const void *data, size_t bytes) {
    int fd = memfd_create("plexus-test", 0);
    cr_assert(ge(int, fd, 0));
    cr_assert(eq(int, ftruncate(fd, (off_t)bytes), 0));
    if (data) {
        cr_assert(eq(sz, (size_t)pwrite(fd, data, bytes, 0), bytes));
    }
    return fd;
}

/* dma-buf memory (memfd descriptors): imported by cpu_ref when zero copy,
 * mapped by the host for copies; results equal host-memory runs. */
Test(memory, dma_buf_inputs_and_outputs) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    float x[N], y0[N], s0[N], y[N], s[N];
    input_for(x, 9);
    reference(rt, x, y0, s0);
    for (int zero_copy = 0; zero_copy < 2; zero_copy++) {
        plx_loaded_network *ln = load_chain(rt, false, false, zero_copy);
        int xfd = memfd_with(x, sizeof x), yfd = memfd_with(NULL, sizeof y),
            sfd = memfd_with(NULL, sizeof s);
        plx_tensor_binding in = {0, &xfd, sizeof x, PLX_MEMORY_SOURCE_DMA_BUF};
        plx_tensor_binding out[] = {{0, &yfd, sizeof y, PLX_MEMORY_SOURCE_DMA_BUF},
                                    {1, &sfd, sizeof s, PLX_MEMORY_SOURCE_DMA_BUF}};
        OK(plx_loaded_network_execute(ln, &in, 1, out, 2));
        cr_assert(eq(sz, (size_t)pread(yfd, y, sizeof y, 0), sizeof y));
        cr_assert(eq(sz, (size_t)pread(sfd, s, sizeof s, 0), sizeof s));
        cr_assert(eq(int, memcmp(y, y0, sizeof y), 0), "zero copy %d", zero_copy);
        cr_assert(eq(int, memcmp(s, s0, sizeof s), 0), "zero copy %d", zero_copy);
        /* A descriptor that is not one is an error naming the binding. */
        int bad = -1;
        plx_tensor_binding wrong = {0, &bad, sizeof x, PLX_MEMORY_SOURCE_DMA_BUF};
        FAILS_WITH(plx_loaded_network_execute(ln, &wrong, 1, out, 2), "input binding id 0");
        plx_tensor_binding odd = {0, x, sizeof x, (plx_memory_source)8};
        FAILS_WITH(plx_loaded_network_execute(ln, &odd, 1, out, 2),
                   "input binding id 0: memory source 8 is not one the host takes");
        close(xfd);
        close(yfd);
        close(sfd);
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* A description of memory of `kind`: `handle` for host and vendor
 * kinds, `fd` for dma_buf. */
static plx_external_memory ext_mem(const char *kind, void *handle, int fd, uint64_t offset,
                                   uint64_t size) {
    plx_external_memory m = {sizeof m, kind, handle, fd, offset, size, NULL, NULL};
    return m;
}

/* Typed external memory (R-26, docs/memory-and-concurrency.md) bound by
 * the application to cpu_ref, which imports host and dma-buf memory by
 * source and lists no import_memory_kinds: host memory at an offset and
 * dma-bufs at an offset are read and written like the plain bindings,
 * copied or zero copy; a dma-buf at an offset cannot be zero copy into a
 * backend that imports whole dma-bufs only; a vendor kind is neither
 * copied by the host nor imported by cpu_ref; broken descriptions are
 * refused naming the binding. */
Test(memory, external_memory_bindings) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    float x[N], y0[N], s0[N];
    input_for(x, 21);
    reference(rt, x, y0, s0);
    long page = sysconf(_SC_PAGESIZE);
    for (int zero_copy = 0; zero_copy < 2; zero_copy++) {
        plx_loaded_network *ln = load_chain(rt, false, false, zero_copy);
        /* Host memory at an offset within a bigger object. */
        float *host = aligned_alloc(64, 3 * 64 * sizeof(float) + 3 * sizeof x);
        cr_assert(not(eq(ptr, host, NULL)));
        memcpy(host + 64, x, sizeof x);
        plx_external_memory hin = ext_mem(PLX_MEMORY_KIND_HOST, host, -1, 64 * sizeof(float),
                                          sizeof x);
        plx_external_memory hy = ext_mem(PLX_MEMORY_KIND_HOST, host, -1,
                                         2 * 64 * sizeof(float) + sizeof x, sizeof x);
        plx_external_memory hs = ext_mem(PLX_MEMORY_KIND_HOST, host, -1,
                                         3 * 64 * sizeof(float) + 2 * sizeof x, sizeof x);
        plx_tensor_binding in = {0, &hin, sizeof x, PLX_MEMORY_SOURCE_EXTERNAL};
        plx_tensor_binding out[] = {{0, &hy, sizeof x, PLX_MEMORY_SOURCE_EXTERNAL},
                                    {1, &hs, sizeof x, PLX_MEMORY_SOURCE_EXTERNAL}};
        OK(plx_loaded_network_execute(ln, &in, 1, out, 2));
        cr_assert(eq(int, memcmp((char *)host + hy.offset, y0, sizeof y0), 0), "zc %d",
                  zero_copy);
        cr_assert(eq(int, memcmp((char *)host + hs.offset, s0, sizeof s0), 0), "zc %d",
                  zero_copy);
        /* A dma-buf as a description, one per tensor: whole (offset 0),
         * and at an offset within the page (100) and beyond it (a page
         * and 100). */
        uint64_t offsets[] = {0, 100, (uint64_t)page + 100};
        for (size_t k = 0; k < 3; k++) {
            uint64_t off = offsets[k];
            int fds[3];
            plx_external_memory d[3];
            for (int t = 0; t < 3; t++) {
                fds[t] = memfd_with(NULL, (size_t)off + sizeof x);
                d[t] = ext_mem(PLX_MEMORY_KIND_DMA_BUF, NULL, fds[t], off, sizeof x);
            }
            cr_assert(eq(sz, (size_t)pwrite(fds[0], x, sizeof x, (off_t)off), sizeof x));
            in.data = &d[0];
            out[0].data = &d[1];
            out[1].data = &d[2];
            plx_status s = plx_loaded_network_execute(ln, &in, 1, out, 2);
            if (zero_copy && off) {
                cr_assert(not(eq(ptr, s, NULL)));
                cr_assert(eq(int, plx_status_get_code(s), PLX_UNSUPPORTED));
                cr_assert(eq(str, (char *)plx_status_get_message(s),
                             "input binding id 0 is zero copy, but backend 'cpu_ref' does not "
                             "import memory of kind 'dma_buf' at an offset (whole dma-bufs "
                             "only) (its import_memory_kinds: none)"));
                plx_status_free(s);
            } else {
                OK(s);
                float y[N], sum[N];
                cr_assert(eq(sz, (size_t)pread(fds[1], y, sizeof y, (off_t)off), sizeof y));
                cr_assert(eq(sz, (size_t)pread(fds[2], sum, sizeof sum, (off_t)off),
                             sizeof sum));
                cr_assert(eq(int, memcmp(y, y0, sizeof y), 0), "zc %d offset %llu", zero_copy,
                          (unsigned long long)off);
                cr_assert(eq(int, memcmp(sum, s0, sizeof sum), 0));
            }
            for (int t = 0; t < 3; t++) {
                close(fds[t]);
            }
        }
        /* A vendor kind: not copied by the host, not imported by cpu_ref;
         * refused before anything runs. */
        plx_external_memory vin = ext_mem("acme.device", x, -1, 0, sizeof x);
        in.data = &vin;
        out[0].data = &hy;
        out[1].data = &hs;
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   zero_copy ? "input binding id 0 is zero copy, but backend 'cpu_ref' does not "
                               "import memory of kind 'acme.device' (its import_memory_kinds: "
                               "none)"
                             : "input binding id 0: memory of kind 'acme.device' is not zero "
                               "copy in this network, and the host cannot copy it");
        in.data = &hin;
        out[1].data = &vin; /* sum, which also feeds sqrt, is never zero copy */
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   "output binding id 1: memory of kind 'acme.device' is not zero copy");
        out[1].data = &hs;
        out[0].data = &vin;
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   zero_copy ? "output binding id 0 is zero copy, but backend 'cpu_ref' does not "
                               "import memory of kind 'acme.device'"
                             : "output binding id 0: memory of kind 'acme.device' is not zero "
                               "copy");
        out[0].data = &hy;
        /* Broken descriptions name the binding and the fault. */
        plx_external_memory bad = hin;
        bad.struct_size = 8;
        in.data = &bad;
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   "input binding id 0: external memory struct_size 8 is too small");
        bad = hin;
        bad.kind = NULL;
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   "input binding id 0: external memory kind is NULL");
        bad = hin;
        bad.size = sizeof x - 4;
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   "input binding id 0: external memory of kind 'host' holds 252 bytes at "
                   "offset 256, the tensor needs 256");
        bad = ext_mem(PLX_MEMORY_KIND_DMA_BUF, NULL, -1, 0, sizeof x);
        FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, out, 2),
                   "input binding id 0: dma-buf fd -1 is not a descriptor");
        free(host);
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* input -> relu r1 -> r2 -> r3 -> output, optimised for testdev alone,
 * with import and export as `import` says; *out_network gets the network,
 * for the caller to destroy. */
static plx_optimized_network *testdev_relu3(plx_runtime *rt, bool import,
                                            plx_network **out_network) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, r1, r2, r3, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "r1", PLX_OP_ACTIVATION, &relu, 1, 1, &r1));
    OK(plx_network_add_layer(n, "r2", PLX_OP_ACTIVATION, &relu, 1, 1, &r2));
    OK(plx_network_add_layer(n, "r3", PLX_OP_ACTIVATION, &relu, 1, 1, &r3));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r1, 0));
    OK(plx_network_connect(n, r1, 0, r2, 0));
    OK(plx_network_connect(n, r2, 0, r3, 0));
    OK(plx_network_connect(n, r3, 0, y, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"testdev"};
    oo.backends = b;
    oo.backend_count = 1;
    oo.import_enabled = import;
    oo.export_enabled = import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    *out_network = n;
    return on;
}

/* a backend that lists a vendor kind in import_memory_kinds (testdev:
 * "testdev.block", host memory the host must treat as a device's) takes
 * the application's memory of that kind for zero-copy inputs and outputs
 * and for pre-imports, through import_external_memory: results land in
 * the caller's block, the pre-import keeps its own copy of the kind, and
 * the backend's refusal (a block off its alignment) is passed on naming
 * the binding. */
Test(memory, vendor_kind_zero_copy_and_preimport) {
    plx_runtime *rt = tu_runtime_with(TESTDEV_DIR, NULL, 0);
    plx_network *n = NULL;
    plx_optimized_network *on = testdev_relu3(rt, true, &n);
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    /* testdev wants its blocks at multiples of 1024 bytes (its
     * TESTDEV_PLANNED_ALIGNMENT). */
    float *block = aligned_alloc(1024, 3 * 1024);
    cr_assert(not(eq(ptr, block, NULL)));
    float *xin = block + 256, *yout = block + 512;
    input_for(xin, 23);
    memset(yout, 0, N * sizeof *yout);
    char kind[] = "testdev.block";
    plx_external_memory bin = ext_mem(kind, block, -1, 1024, N * sizeof(float));
    plx_external_memory bout = ext_mem(kind, block, -1, 2048, N * sizeof(float));
    plx_tensor_binding in = {0, &bin, N * sizeof(float), PLX_MEMORY_SOURCE_EXTERNAL};
    plx_tensor_binding out = {0, &bout, N * sizeof(float), PLX_MEMORY_SOURCE_EXTERNAL};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    for (int i = 0; i < N; i++) {
        cr_assert(eq(flt, yout[i], xin[i] > 0 ? xin[i] : 0.0f));
    }
    cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), 0));
    plx_external_memory off = ext_mem(kind, block, -1, 32, N * sizeof(float));
    in.data = &off;
    FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, &out, 1),
               "input binding id 0: import into testdev failed: testdev: block at offset 32");
    /* Pre-imported: the descriptions and the kind string may go away. */
    in.data = &bin;
    uint32_t in_id, out_id;
    OK(plx_loaded_network_import_inputs(ln, &in, 1, &in_id));
    OK(plx_loaded_network_import_outputs(ln, &out, 1, &out_id));
    memset(&bin, 0, sizeof bin);
    memset(&bout, 0, sizeof bout);
    memset(kind, 'x', sizeof kind - 1);
    input_for(xin, 29);
    memset(yout, 0, N * sizeof *yout);
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.preimported_inputs = &in_id;
    a.preimported_input_count = 1;
    a.preimported_outputs = &out_id;
    a.preimported_output_count = 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    for (int i = 0; i < N; i++) {
        cr_assert(eq(flt, yout[i], xin[i] > 0 ? xin[i] : 0.0f));
    }
    /* A pre-import the backend refuses leaves no id. */
    off.kind = "testdev.block";
    in.data = &off;
    FAILS_WITH(plx_loaded_network_import_inputs(ln, &in, 1, &in_id),
               "input binding id 0: import into testdev failed");
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
    free(block);
}

/* import_memory_kinds is a list of kinds of 1 to 63 bytes of
 * [a-z0-9_.], separated by single commas; testdev reports what its option
 * `kinds` says. */
Test(memory, memory_kind_lists_are_checked) {
    const char *good[] = {"testdev.block", "dma_buf,testdev.block", "host,a_1.b"};
    const char *bad[] = {"", "testdev.block,", ",host", "a,,b", "Acme.device", "acme device",
                         "a234567890123456789012345678901234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof good / sizeof good[0] + sizeof bad / sizeof bad[0]; i++) {
        bool ok = i < sizeof good / sizeof good[0];
        const char *value = ok ? good[i] : bad[i - sizeof good / sizeof good[0]];
        plx_backend_option opt = {"testdev", "kinds", value};
        plx_runtime *rt = tu_runtime_with(TESTDEV_DIR, &opt, 1);
        const plx_backend_info *b = plx_runtime_find_backend(rt, "testdev");
        cr_assert(eq(int, b != NULL, ok), "'%s': %s", value, tu_dump(rt));
        if (!ok) {
            cr_assert(not(zero(ptr, (void *)tu_rejection_containing(
                          rt, "invalid capability 'import_memory_kinds': must be memory kinds "
                              "of 1 to 63 bytes of [a-z0-9_.], separated by commas"))),
                      "'%s': %s", value, tu_dump(rt));
        }
        plx_runtime_destroy(&rt);
    }
}

/* A backend's own memory strategy is used unless the application names
 * one for that backend (testdev offers "testdev_separate" when planned). */
static const char *planned_testdev_strategy(const char *app_choice, size_t *buffers,
                                            size_t *tensors) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {TESTDEV_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_backend_option opt = {"testdev", "memory", "planned"};
    o.backend_options = &opt;
    o.backend_option_count = 1;
    plx_backend_memory_strategy m = {"testdev", app_choice, NULL};
    if (app_choice) {
        o.memory_strategies = &m;
        o.memory_strategy_count = 1;
    }
    plx_runtime *rt = tu_create(&o);
    plx_network *n = NULL;
    plx_optimized_network *on = testdev_relu3(rt, false, &n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    float xin[N], yout[N];
    input_for(xin, 11);
    plx_tensor_binding in = {0, xin, sizeof xin, 0}, out = {0, yout, sizeof yout, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    for (int i = 0; i < N; i++) {
        cr_assert(eq(flt, yout[i], xin[i] > 0 ? xin[i] : 0.0f));
    }
    const plx_memory_report *r = plx_loaded_network_memory_report(ln, 0);
    static char name[64];
    snprintf(name, sizeof name, "%s", r->strategy);
    *buffers = r->buffer_count;
    *tensors = r->tensor_count;
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
    return name;
}

Test(memory, backend_strategy_unless_the_application_chooses) {
    size_t buffers, tensors;
    cr_assert(eq(str, (char *)planned_testdev_strategy(NULL, &buffers, &tensors),
                 "testdev_separate"));
    cr_assert(eq(sz, buffers, tensors));
    cr_assert(eq(str, (char *)planned_testdev_strategy("greedy", &buffers, &tensors), "greedy"));
    cr_assert(eq(sz, buffers, 1));
}

/* A cpu_ref tensor that testdev reads in place through an import layer must
 * keep its planned bytes until testdev's last read, even while cpu_ref
 * plans other tensors after the import layer's step. */
static void import_lifetime_run(bool planned, float *out) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_REF_DIR, TESTDEV_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    plx_backend_option opt = {"testdev", "memory", "planned"};
    o.backend_options = &opt;
    o.backend_option_count = 1;
    plx_runtime *rt = tu_create(&o);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_unary_desc ex = PLX_UNARY_DESC_INIT(PLX_UNARY_EXP);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, a, r, b, c, z, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "a", PLX_OP_UNARY, &sq, 1, 1, &a));       /* cpu_ref */
    OK(plx_network_add_layer(n, "r", PLX_OP_ACTIVATION, &relu, 1, 1, &r)); /* testdev, reads a */
    OK(plx_network_add_layer(n, "b", PLX_OP_UNARY, &ex, 1, 1, &b));       /* cpu_ref */
    OK(plx_network_add_layer(n, "c", PLX_OP_UNARY, &sq, 1, 1, &c));       /* cpu_ref */
    OK(plx_network_add_layer(n, "z", PLX_OP_BINARY, &add, 2, 1, &z));     /* testdev, reads a */
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, a, 0, r, 0));
    OK(plx_network_connect(n, r, 0, b, 0));
    OK(plx_network_connect(n, b, 0, c, 0));
    OK(plx_network_connect(n, a, 0, z, 0));
    OK(plx_network_connect(n, c, 0, z, 1));
    OK(plx_network_connect(n, z, 0, y, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *be[] = {"testdev", "cpu_ref"};
    oo.backends = be;
    oo.backend_count = 2;
    oo.import_enabled = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    size_t imports = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        imports += plx_optimized_network_layer(on, i)->op == PLX_OP_MEM_IMPORT;
    }
    cr_assert(ge(sz, imports, 1), "%s", plx_optimized_network_summary(on));
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = planned;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    float xin[N];
    for (int i = 0; i < N; i++) {
        xin[i] = 0.5f + (float)i * 0.25f;
    }
    plx_tensor_binding in = {0, xin, sizeof xin, 0}, ob = {0, out, N * sizeof *out, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &ob, 1));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(memory, import_layer_keeps_its_source_alive) {
    float backend_managed[N], planned[N];
    import_lifetime_run(false, backend_managed);
    import_lifetime_run(true, planned);
    cr_assert(eq(int, memcmp(backend_managed, planned, sizeof planned), 0));
}

/* With two inputs the counts add up, so the same pre-imported id twice is
 * reported as such (and an input given twice likewise). */
Test(preimport, same_id_twice_in_one_run) {
    plx_runtime *rt = make_runtime(NULL, NULL, NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id a, b, s, y;
    OK(plx_network_add_input(n, "a", 0, &t, &a));
    OK(plx_network_add_input(n, "b", 1, &t, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &s));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, b, 0, s, 1));
    OK(plx_network_connect(n, s, 0, y, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *be[] = {"cpu_ref"};
    oo.backends = be;
    oo.backend_count = 1;
    oo.import_enabled = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float xa[N], xb[N], out[N];
    input_for(xa, 1);
    input_for(xb, 2);
    plx_tensor_binding both[] = {{0, xa, sizeof xa, 0}, {1, xb, sizeof xb, 0}};
    uint32_t ids[2];
    OK(plx_loaded_network_import_inputs(ln, both, 2, ids));
    plx_tensor_binding ob = {0, out, sizeof out, 0};
    plx_execute_args args;
    plx_execute_args_init(&args);
    args.outputs = &ob;
    args.output_count = 1;
    uint32_t twice[] = {ids[0], ids[0]};
    args.preimported_inputs = twice;
    args.preimported_input_count = 2;
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &args),
               "pre-imported input id 0 is given more than once");
    args.preimported_inputs = ids;
    OK(plx_loaded_network_execute_with(ln, NULL, &args));
    for (int i = 0; i < N; i++) {
        cr_assert(eq(flt, out[i], xa[i] + xb[i]));
    }
    /* One input as a tensor, the other pre-imported: fine. */
    args.inputs = &both[1];
    args.input_count = 1;
    args.preimported_input_count = 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &args));
    /* The same input as a tensor and as an id. */
    args.inputs = &both[0];
    FAILS_WITH(plx_loaded_network_execute_with(ln, NULL, &args),
               "input binding id 0 is given both as a tensor and as pre-imported id 0");
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* testdev relu x3 with the given memory mode and import option, loaded
 * with externally managed memory; `counted` (not NULL) is given to the
 * runtime as testdev's allocator. Runs once on `seed`'s input and checks
 * the result when the load and run succeed; returns the first failure. */
static plx_status device_memory_run(const char *memory, const char *import, counting *counted,
                                    bool *out_ran) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {TESTDEV_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_backend_option opts[] = {{"testdev", "memory", memory}, {"testdev", "import", import}};
    o.backend_options = opts;
    o.backend_option_count = 2;
    plx_backend_allocator a = {"testdev",
                               {counted, count_alloc, count_free, PLX_MEMORY_SOURCE_MALLOC}};
    if (counted) {
        o.allocators = &a;
        o.allocator_count = 1;
    }
    plx_runtime *rt = tu_create(&o);
    plx_network *n = NULL;
    plx_optimized_network *on = testdev_relu3(rt, false, &n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    plx_loaded_network *ln = NULL;
    *out_ran = false;
    plx_status s = plx_runtime_load_network(rt, &on, &lo, &ln);
    for (int run = 0; !s && run < 2; run++) {
        float xin[N], yout[N];
        input_for(xin, 17 + (unsigned)run);
        plx_tensor_binding in = {0, xin, sizeof xin, 0}, out = {0, yout, sizeof yout, 0};
        s = plx_loaded_network_execute(ln, &in, 1, &out, 1);
        for (int i = 0; !s && i < N; i++) {
            cr_assert(eq(flt, yout[i], xin[i] > 0 ? xin[i] : 0.0f));
        }
        *out_ran = !s;
        if (!s && run == 0) {
            /* Released and allocated again: freed through the backend too. */
            plx_loaded_network_release_working_memory(ln);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
    return s;
}

/* a backend that reports allocates_planned_memory gets its planned
 * buffers from itself and its handles bound through
 * import_external_memory, at places aligned to its planned_alignment
 * (testdev refuses others): it loads and runs with externally managed memory
 * although it imports no malloc memory (which a host-allocated plan
 * needs), and LeakSanitizer sees every buffer freed through it, after a
 * release of the working memory too. */
Test(memory, backend_allocates_its_planned_buffers) {
    bool ran = false;
    OK(device_memory_run("device", "none", NULL, &ran));
    cr_assert(ran);
    /* Without the capability, the same backend needs malloc import. */
    FAILS_WITH(device_memory_run("planned", "none", NULL, &ran),
               "backend 'testdev' reports externally_managed_memory but cannot import malloc "
               "memory");
}

/* the application's allocator for a backend serves host memory
 * instead of the backend's allocator; it then needs malloc import. */
Test(memory, application_allocator_wins_over_the_backends) {
    counting c = {0};
    bool ran = false;
    OK(device_memory_run("device", "malloc", &c, &ran));
    cr_assert(ran);
    cr_assert(gt(sz, atomic_load(&c.allocations), 0));
    cr_assert(eq(sz, atomic_load(&c.allocations), atomic_load(&c.frees)));
    counting d = {0};
    FAILS_WITH(device_memory_run("device", "none", &d, &ran),
               "cannot import malloc memory");
    cr_assert(eq(sz, atomic_load(&d.allocations), 0));
}

/* an allocator that fails fails the execution, naming the backend
 * and keeping its code; nothing leaks. */
Test(memory, backend_allocator_failure_names_the_backend) {
    bool ran = true;
    plx_status s = device_memory_run("device_fail", "none", NULL, &ran);
    cr_assert(not(ran));
    cr_assert(eq(int, plx_status_get_code(s), PLX_OUT_OF_MEMORY));
    cr_assert(eq(str, (char *)plx_status_get_message(s),
                 "backend 'testdev': cannot allocate a planned buffer of 512 bytes: testdev: "
                 "device memory full (memory=device_fail)"));
    plx_status_free(s);
}
