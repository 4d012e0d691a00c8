/* cpu_onednn end to end (docs/cpu_onednn.md): its option and capabilities,
 * a small CNN (conv + batch_norm + relu + max pool + flatten + fully
 * connected) on cpu_onednn against the same network on cpu_ref, a layer it
 * refuses falling back to cpu_ref with the reason in the summary,
 * concurrent executions on two working memories (it reports
 * async_execution), and zero-copy inputs and outputs at an address only
 * element-aligned (it reports memory_import_malloc and no import_alignment).
 * The operators one by one are suite ops_cpu_onednn (test_ops_network.c). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A runtime over cpu_onednn and cpu_ref, with `options` for cpu_onednn and
 * its log going to `log_fn` (NULL: the tests' usual sink). */
static plx_runtime *runtime_logging(const plx_backend_option *options, size_t count,
                                    plx_log_fn log_fn) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_ONEDNN_DIR, CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    o.backend_options = options;
    o.backend_option_count = count;
    if (log_fn) {
        o.log_fn = log_fn;
    }
    return tu_create(&o);
}

static plx_runtime *runtime_with(const plx_backend_option *options, size_t count) {
    return runtime_logging(options, count, NULL);
}

static const plx_backend_info *onednn(plx_runtime *rt) {
    const plx_backend_info *bi = plx_runtime_find_backend(rt, "cpu_onednn");
    cr_assert(not(zero(ptr, (void *)bi)), "cpu_onednn was not loaded: %s", tu_dump(rt));
    cr_assert(bi->available, "cpu_onednn is unavailable: %s", bi->reason);
    return bi;
}

/* ---- options and capabilities ------------------------------------------- */

/* R-9 (4): a bad value rejects the backend, naming the key and the value. */
Test(cpu_onednn, bad_thread_counts_are_rejected) {
    const char *bad[] = {"0", "257", "-1", "two", "", "4x"};
    for (size_t i = 0; i < COUNT(bad); i++) {
        plx_backend_option opt = {"cpu_onednn", "threads", bad[i]};
        plx_runtime *rt = runtime_with(&opt, 1);
        char want[128];
        snprintf(want, sizeof want, "invalid value '%s' for option 'threads' of backend "
                 "'cpu_onednn'", bad[i]);
        const plx_rejection *r = tu_rejection_containing(rt, want);
        cr_assert(not(zero(ptr, (void *)r)), "no rejection with \"%s\": %s", want, tu_dump(rt));
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "cpu_onednn")));
        plx_runtime_destroy(&rt);
    }
}

/* R-10: the standard keys it delivers, and its vendor keys, threads as set. */
Test(cpu_onednn, capabilities) {
    plx_backend_option opt = {"cpu_onednn", "threads", "1"};
    plx_runtime *rt = runtime_with(&opt, 1);
    const plx_backend_info *bi = onednn(rt);
    const char *yes[] = {"async_execution", "externally_managed_memory", "preimport_io_tensors",
                         "memory_import_malloc", "memory_export_malloc"};
    for (size_t i = 0; i < COUNT(yes); i++) {
        const plx_capability *c = plx_backend_info_capability(bi, yes[i]);
        cr_assert(not(zero(ptr, (void *)c)), "%s missing", yes[i]);
        cr_assert(c->bool_value, "%s false", yes[i]);
    }
    cr_assert(zero(ptr, (void *)plx_backend_info_capability(bi, "import_alignment")));
    cr_assert(zero(ptr, (void *)plx_backend_info_capability(bi, "memory_import_dma_buf")));
    const plx_capability *t = plx_backend_info_capability(bi, "cpu_onednn.threads");
    cr_assert(not(zero(ptr, (void *)t)));
    cr_assert(eq(i64, t->int_value, 1));
    const plx_capability *v = plx_backend_info_capability(bi, "cpu_onednn.version");
    cr_assert(not(zero(ptr, (void *)v)));
    cr_assert(eq(int, strncmp(v->string_value, "2.", 2), 0), "version %s", v->string_value);
    const plx_capability *isa = plx_backend_info_capability(bi, "cpu_onednn.isa");
    cr_assert(not(zero(ptr, (void *)isa)));
    cr_assert(not(eq(str, (char *)isa->string_value, "unknown")));
    const plx_capability *rtm = plx_backend_info_capability(bi, "cpu_onednn.cpu_runtime");
    cr_assert(not(zero(ptr, (void *)rtm)));
    cr_assert(eq(str, (char *)rtm->string_value, "omp"));
    const plx_capability *wp = plx_backend_info_capability(bi, "cpu_onednn.omp_wait_policy");
    cr_assert(not(zero(ptr, (void *)wp)));
    const char *env = getenv("OMP_WAIT_POLICY");
    cr_assert(eq(str, (char *)wp->string_value, (char *)(env && *env ? env : "default")));
    plx_runtime_destroy(&rt);

    /* Without the option: every online CPU. */
    rt = runtime_with(NULL, 0);
    t = plx_backend_info_capability(onednn(rt), "cpu_onednn.threads");
    cr_assert(not(zero(ptr, (void *)t)));
    cr_assert(ge(i64, t->int_value, 1));
    plx_runtime_destroy(&rt);
}

/* ---- a small CNN -------------------------------------------------------- */

#define IN_C 3
#define IN_H 12
#define IN_W 12
#define CONV_M 8
#define POOL_H (IN_H / 2)
#define POOL_W (IN_W / 2)
#define FLAT (CONV_M * POOL_H * POOL_W)
#define CLASSES 10

static float w_conv[CONV_M * IN_C * 3 * 3], b_conv[CONV_M];
static float bn_scale[CONV_M], bn_bias[CONV_M], bn_mean[CONV_M], bn_var[CONV_M];
static float w_fc[FLAT * CLASSES], b_fc[CLASSES];

/* Deterministic values in [-1, 1). */
static float pseudo(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void init_weights(void) {
    uint32_t s = 12345;
    for (size_t i = 0; i < COUNT(w_conv); i++) {
        w_conv[i] = 0.3f * pseudo(&s);
    }
    for (size_t i = 0; i < CONV_M; i++) {
        b_conv[i] = 0.1f * pseudo(&s);
        bn_scale[i] = 1.0f + 0.2f * pseudo(&s);
        bn_bias[i] = 0.1f * pseudo(&s);
        bn_mean[i] = 0.1f * pseudo(&s);
        bn_var[i] = 1.0f + 0.5f * pseudo(&s);
    }
    for (size_t i = 0; i < COUNT(w_fc); i++) {
        w_fc[i] = 0.05f * pseudo(&s);
    }
    for (size_t i = 0; i < CLASSES; i++) {
        b_fc[i] = 0.1f * pseudo(&s);
    }
}

static plx_layer_id add_const(plx_network *n, const char *name, const int64_t *dims,
                              uint32_t rank, const float *data) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = rank;
    memcpy(t.dims, dims, rank * sizeof dims[0]);
    plx_layer_id id;
    OK(plx_network_add_constant(n, name, &t, data, PLX_CONSTANT_COPY, &id));
    return id;
}

/* x -> conv 3x3 pad 1 -> batch_norm -> relu -> max pool 2x2 -> flatten ->
 * fully_connected -> [extra] -> y. `extra_floor` appends a unary floor,
 * which cpu_onednn refuses. */
static plx_network *make_cnn(bool extra_floor) {
    init_weights();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, IN_C, IN_H, IN_W});
    plx_layer_id x, conv, bn, relu, pool, flat, fc, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));

    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.pads_begin[0] = cd.pads_begin[1] = cd.pads_end[0] = cd.pads_end[1] = 1;
    OK(plx_network_add_layer(n, "conv", PLX_OP_CONV, &cd, 3, 1, &conv));
    OK(plx_network_connect(n, x, 0, conv, 0));
    OK(plx_network_connect(n, add_const(n, "w_conv", (int64_t[]){CONV_M, IN_C, 3, 3}, 4, w_conv),
                           0, conv, 1));
    OK(plx_network_connect(n, add_const(n, "b_conv", (int64_t[]){CONV_M}, 1, b_conv), 0, conv,
                           2));

    plx_batch_norm_desc bd = PLX_BATCH_NORM_DESC_INIT;
    OK(plx_network_add_layer(n, "bn", PLX_OP_BATCH_NORM, &bd, 5, 1, &bn));
    OK(plx_network_connect(n, conv, 0, bn, 0));
    const float *bn_data[4] = {bn_scale, bn_bias, bn_mean, bn_var};
    const char *bn_names[4] = {"bn_scale", "bn_bias", "bn_mean", "bn_var"};
    for (uint32_t i = 0; i < 4; i++) {
        OK(plx_network_connect(n, add_const(n, bn_names[i], (int64_t[]){CONV_M}, 1, bn_data[i]), 0,
                               bn, i + 1));
    }

    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &ad, 1, 1, &relu));
    OK(plx_network_connect(n, bn, 0, relu, 0));

    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    pd.kernel[0] = pd.kernel[1] = 2;
    pd.strides[0] = pd.strides[1] = 2;
    OK(plx_network_add_layer(n, "pool", PLX_OP_POOL, &pd, 1, 1, &pool));
    OK(plx_network_connect(n, relu, 0, pool, 0));

    plx_axis_desc fd = PLX_AXIS_DESC_INIT(1);
    OK(plx_network_add_layer(n, "flatten", PLX_OP_FLATTEN, &fd, 1, 1, &flat));
    OK(plx_network_connect(n, pool, 0, flat, 0));

    plx_fully_connected_desc fcd = PLX_FULLY_CONNECTED_DESC_INIT;
    OK(plx_network_add_layer(n, "fc", PLX_OP_FULLY_CONNECTED, &fcd, 3, 1, &fc));
    OK(plx_network_connect(n, flat, 0, fc, 0));
    OK(plx_network_connect(n, add_const(n, "w_fc", (int64_t[]){FLAT, CLASSES}, 2, w_fc), 0, fc,
                           1));
    OK(plx_network_connect(n, add_const(n, "b_fc", (int64_t[]){CLASSES}, 1, b_fc), 0, fc, 2));

    plx_layer_id last = fc;
    if (extra_floor) {
        plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_FLOOR);
        plx_layer_id fl;
        OK(plx_network_add_layer(n, "floor", PLX_OP_UNARY, &ud, 1, 1, &fl));
        OK(plx_network_connect(n, fc, 0, fl, 0));
        last = fl;
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, last, 0, out, 0));
    return n;
}

static void make_input(float *x, uint32_t seed) {
    for (size_t i = 0; i < IN_C * IN_H * IN_W; i++) {
        x[i] = pseudo(&seed);
    }
}

static plx_loaded_network *load(plx_runtime *rt, plx_network *n, const char *const *backends,
                                 size_t count, bool async, bool zero_copy,
                                 plx_optimized_network **keep_summary) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = backends;
    oo.backend_count = count;
    oo.allow_fallback = true;
    oo.import_enabled = zero_copy;
    oo.export_enabled = zero_copy;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, n, &oo, &on));
    if (keep_summary) {
        *keep_summary = on;
        return NULL;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    plx_loaded_network *ln = NULL;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

/* One execution of the CNN on `wm` (NULL: the network's own). */
static plx_status try_run(plx_loaded_network *ln, plx_working_memory *wm, float *x, float *y) {
    plx_tensor_binding in = {0, x, sizeof(float) * IN_C * IN_H * IN_W, 0};
    plx_tensor_binding out = {0, y, sizeof(float) * CLASSES, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    return plx_loaded_network_execute_with(ln, wm, &a);
}

static void run(plx_loaded_network *ln, plx_working_memory *wm, float *x, float *y) {
    OK(try_run(ln, wm, x, y));
}

static void expect_close(const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float lim = 1e-4f * fmaxf(1.0f, fabsf(want[i]));
        cr_assert(le(flt, fabsf(got[i] - want[i]), lim), "element %zu: got %.9g, want %.9g", i,
                  (double)got[i], (double)want[i]);
    }
}

/* cpu_ref's result for input seed `seed`. */
static void reference(plx_runtime *rt, plx_network *n, uint32_t seed, float *y) {
    const char *ref[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, ref, 1, false, false, NULL);
    float x[IN_C * IN_H * IN_W];
    make_input(x, seed);
    run(ln, NULL, x, y);
    plx_loaded_network_unload(&ln);
}

/* Every compute layer of `on` on cpu_onednn, none refused; true when one
 * of them is the precompiled layer `name`. */
static bool all_on_onednn_with(plx_optimized_network *on, const char *name) {
    bool found = false;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        cr_assert(eq(str, (char *)a->backend_id, "cpu_onednn"), "layer '%s': %s", a->layer_name,
                  plx_optimized_network_summary(on));
        cr_assert(eq(sz, a->refusal_count, 0));
        found = found || (strcmp(a->layer_name, name) == 0 && a->op == PLX_OP_PRECOMPILED);
    }
    return found;
}

/* The CNN with cpu_onednn's `options`: every compute layer on cpu_onednn,
 * one of them the precompiled layer `fused` that the optimiser noted as
 * `note`, with cpu_ref's results. */
static void cnn_as(const plx_backend_option *options, size_t count, const char *fused,
                   const char *note) {
    plx_runtime *rt = runtime_with(options, count);
    onednn(rt);
    plx_network *n = make_cnn(false);
    const char *both[] = {"cpu_onednn", "cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, both, 2, false, false, &on);
    cr_assert(all_on_onednn_with(on, fused), "no layer '%s': %s", fused,
              plx_optimized_network_summary(on));
    cr_assert(tu_noted(on, note));
    plx_optimized_network_destroy(&on);
    plx_loaded_network *ln = load(rt, n, both, 2, false, false, NULL);
    for (uint32_t seed = 1; seed <= 3; seed++) {
        float x[IN_C * IN_H * IN_W], y[CLASSES], want[CLASSES];
        make_input(x, seed);
        run(ln, NULL, x, y);
        reference(rt, n, seed, want);
        expect_close(y, want, CLASSES);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* The whole network in one graph layer (option `graph`, default on): the
 * batch-norm folded into the conv by the optimiser, then conv, relu, pool,
 * flatten and fc replaced by one layer whose activations stay in oneDNN's
 * layouts. */
Test(cpu_onednn, cnn_matches_cpu_ref) {
    cnn_as(NULL, 0, "conv+...+fc",
           "backend 'cpu_onednn' replaced 5 layers by 'conv+...+fc' (graph)");
}

/* graph=off: layer by layer, the relu fused into the conv (R-23) as an
 * eltwise post-op. */
Test(cpu_onednn, without_graph_products_fuse_their_activation) {
    plx_backend_option opt = {"cpu_onednn", "graph", "off"};
    cnn_as(&opt, 1, "conv+relu",
           "backend 'cpu_onednn' replaced 2 layers by 'conv+relu' (conv+relu)");
}

/* An on/off option of cpu_onednn set to `value`: the backend is rejected,
 * naming the key and the value. */
static void expect_on_off_rejected(const char *key, const char *value) {
    plx_backend_option opt = {"cpu_onednn", key, value};
    plx_runtime *rt = runtime_with(&opt, 1);
    char want[160];
    snprintf(want, sizeof want, "invalid value '%s' for option '%s' of backend 'cpu_onednn': "
             "expected on or off", value, key);
    cr_assert(not(zero(ptr, (void *)tu_rejection_containing(rt, want))), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

Test(cpu_onednn, bad_graph_values_are_rejected) {
    expect_on_off_rejected("graph", "yes");
}

/* R-18 (1): the refusal reason reaches the summary; the layer runs on
 * cpu_ref and the result is still right. */
Test(cpu_onednn, refused_layer_falls_back_to_cpu_ref) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_network *n = make_cnn(true);
    const char *both[] = {"cpu_onednn", "cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, both, 2, false, false, &on);
    const char *summary = plx_optimized_network_summary(on);
    cr_assert(not(zero(ptr, strstr(summary, "fell back from cpu_onednn to cpu_ref"))), "%s",
              summary);
    cr_assert(not(zero(ptr, strstr(summary, "cpu_onednn: does not run unary floor"))), "%s",
              summary);
    plx_optimized_network_destroy(&on);
    plx_loaded_network *ln = load(rt, n, both, 2, false, false, NULL);
    float x[IN_C * IN_H * IN_W], y[CLASSES], want[CLASSES];
    make_input(x, 7);
    run(ln, NULL, x, y);
    plx_loaded_network_unload(&ln);
    reference(rt, n, 7, want);
    for (size_t i = 0; i < CLASSES; i++) {
        /* floor() of values within 1e-4: equal unless one sits on an integer */
        cr_assert(le(flt, fabsf(y[i] - want[i]), 1.0f));
    }
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* R-20: two working memories executing at the same time give the same
 * results as one at a time. */
typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    uint32_t seed;
    const float *want;
    int mismatches;
    plx_status error;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    float x[IN_C * IN_H * IN_W], y[CLASSES];
    make_input(x, w->seed);
    for (int it = 0; it < 50 && !w->error; it++) {
        w->error = try_run(w->ln, w->wm, x, y);
        for (size_t i = 0; !w->error && i < CLASSES; i++) {
            if (fabsf(y[i] - w->want[i]) > 1e-4f * fmaxf(1.0f, fabsf(w->want[i]))) {
                w->mismatches++;
            }
        }
    }
    return NULL;
}

Test(cpu_onednn, concurrent_working_memories) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_network *n = make_cnn(false);
    float want[2][CLASSES];
    reference(rt, n, 11, want[0]);
    reference(rt, n, 12, want[1]);
    const char *only[] = {"cpu_onednn"};
    plx_loaded_network *ln = load(rt, n, only, 1, true, false, NULL);
    worker w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].ln = ln;
        w[i].seed = 11u + (uint32_t)i;
        w[i].want = want[i];
        OK(plx_loaded_network_create_working_memory(ln, &w[i].wm));
    }
    for (int i = 0; i < 2; i++) {
        cr_assert(eq(int, pthread_create(&th[i], NULL, work, &w[i]), 0));
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
    }
    for (int i = 0; i < 2; i++) {
        cr_assert(zero(ptr, w[i].error), "worker %d: %s", i, plx_status_get_message(w[i].error));
        cr_assert(eq(int, w[i].mismatches, 0), "worker %d", i);
        plx_working_memory_destroy(&w[i].wm);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

static int packings;

static void count_packings(void *user_data, plx_log_level level, const char *source,
                           const char *message) {
    (void)user_data;
    (void)level;
    if (strcmp(source, "cpu_onednn") == 0 && strstr(message, "cpu_onednn: packed ")) {
        __atomic_fetch_add(&packings, 1, __ATOMIC_RELAXED);
    }
}

/* The weights packed into oneDNN's layouts at load serve every working
 * memory of the network: creating another packs nothing, and its results
 * are right. */
Test(cpu_onednn, working_memories_share_packed_weights) {
    plx_runtime *rt = runtime_logging(NULL, 0, count_packings);
    onednn(rt);
    plx_network *n = make_cnn(false);
    float want[CLASSES], y[CLASSES], x[IN_C * IN_H * IN_W];
    reference(rt, n, 21, want);
    packings = 0;
    const char *only[] = {"cpu_onednn"};
    plx_loaded_network *ln = load(rt, n, only, 1, true, false, NULL);
    int at_load = packings;
    cr_assert(gt(int, at_load, 0), "no weights were packed at load");
    plx_working_memory *wm = NULL;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    cr_assert(eq(int, packings, at_load), "a new working memory packed its weights again");
    make_input(x, 21);
    run(ln, wm, x, y);
    expect_close(y, want, CLASSES);
    plx_working_memory_destroy(&wm);
    run(ln, NULL, x, y); /* the network's own still has them */
    expect_close(y, want, CLASSES);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* R-17 (6): the caller's input and output buffers are used in place, at an
 * address that is only element-aligned, with no staged copy. */
Test(cpu_onednn, zero_copy_import_unaligned) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_network *n = make_cnn(false);
    float want[CLASSES];
    reference(rt, n, 5, want);
    const char *only[] = {"cpu_onednn"};
    plx_loaded_network *ln = load(rt, n, only, 1, false, true, NULL);
    /* 64-byte aligned + 4: element-aligned, not vector-aligned. */
    size_t xsize = (sizeof(float) * (IN_C * IN_H * IN_W + 16) + 63) / 64 * 64;
    size_t ysize = (sizeof(float) * (CLASSES + 16) + 63) / 64 * 64;
    char *xbuf = aligned_alloc(64, xsize);
    char *ybuf = aligned_alloc(64, ysize);
    cr_assert(not(zero(ptr, xbuf)));
    cr_assert(not(zero(ptr, ybuf)));
    float *x = (float *)(void *)(xbuf + 4), *y = (float *)(void *)(ybuf + 4);
    make_input(x, 5);
    for (int rep = 0; rep < 2; rep++) {
        run(ln, NULL, x, y);
        expect_close(y, want, CLASSES);
    }
    cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), 0));
    plx_loaded_network_unload(&ln);
    free(xbuf);
    free(ybuf);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A concat of more sources than a small per-step argument table holds:
 * every source lands in its place (cpu_ref's result). oneDNN's concat is
 * refused by default (reference_implementations_are_refused_unless_asked_for),
 * so option reference=on makes cpu_onednn run it. */
Test(cpu_onednn, concat_of_many_inputs) {
    plx_backend_option ref = {"cpu_onednn", "reference", "on"};
    plx_runtime *rt = runtime_with(&ref, 1);
    onednn(rt);
    enum { K = 12, L = 5 };
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(2, (int64_t[]){1, L});
    plx_axis_desc cd = PLX_AXIS_DESC_INIT(1);
    plx_layer_id x, cat, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_layer(n, "cat", PLX_OP_CONCAT, &cd, K, 1, &cat));
    static float parts[K][L];
    for (int k = 0; k < K; k++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", k);
        for (int i = 0; i < L; i++) {
            parts[k][i] = (float)(k * 100 + i);
        }
        plx_layer_id c = k == 0 ? x : add_const(n, name, (int64_t[]){1, L}, 2, parts[k]);
        OK(plx_network_connect(n, c, 0, cat, (uint32_t)k));
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, cat, 0, out, 0));
    const char *ids[] = {"cpu_onednn"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = ids;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_loaded_network *ln = NULL;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float xv[L] = {-1, -2, -3, -4, -5}, y[K * L];
    plx_tensor_binding in = {0, xv, sizeof xv, 0}, o = {0, y, sizeof y, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &o, 1));
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < L; i++) {
            cr_assert(eq(flt, y[k * L + i], k == 0 ? xv[i] : parts[k][i]), "[%d][%d]", k, i);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* ---- graphs ------------------------------------------------------------- */

enum { RC = 16, RH = 10, RW = 10 };

static plx_layer_id layer(plx_network *n, const char *name, plx_op op, const void *desc,
                          const plx_layer_id *inputs, uint32_t count) {
    plx_layer_id id;
    OK(plx_network_add_layer(n, name, op, desc, count, 1, &id));
    for (uint32_t i = 0; i < count; i++) {
        OK(plx_network_connect(n, inputs[i], 0, id, i));
    }
    return id;
}

static plx_layer_id conv_k(plx_network *n, const char *name, plx_layer_id x, int64_t cout,
                           int64_t cin_per_group, int64_t k, int64_t stride, int64_t pad,
                           int64_t group, const float *w, const float *b) {
    char wn[32], bn[32];
    snprintf(wn, sizeof wn, "%s_w", name);
    snprintf(bn, sizeof bn, "%s_b", name);
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.group = group;
    for (int i = 0; i < 2; i++) {
        cd.strides[i] = stride;
        cd.pads_begin[i] = cd.pads_end[i] = pad;
    }
    plx_layer_id in[3] = {x, add_const(n, wn, (int64_t[]){cout, cin_per_group, k, k}, 4, w),
                          b ? add_const(n, bn, (int64_t[]){cout}, 1, b) : 0};
    return layer(n, name, PLX_OP_CONV, &cd, in, b ? 3 : 2);
}

/* A residual block whose tensors leave the graph at several points, in
 * blocked and plain layouts, and whose layers read them in other layouts:
 *   r1 = relu(conv1(x))                 -> output 0 (read inside, too)
 *   r2 = relu(conv2(r1) + r1)           residual add of two blocked tensors
 *   m  = r2 * scale[1,C,1,1]            broadcast operand
 *   y  = softmax(flatten(gap(m)))       -> output 1 (plain-only layers)
 *   t  = transpose(r1)                  -> output 2 (a strided view)
 * Every output is cpu_ref's. */
Test(cpu_onednn, graph_with_branches_and_outputs_in_every_layout) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    static float w1[RC * RC * 9], b1[RC], w2[RC * RC * 9], b2[RC], scale[RC];
    uint32_t st = 99;
    for (size_t i = 0; i < COUNT(w1); i++) {
        w1[i] = 0.2f * pseudo(&st);
        w2[i] = 0.2f * pseudo(&st);
    }
    for (size_t i = 0; i < RC; i++) {
        b1[i] = 0.1f * pseudo(&st);
        b2[i] = 0.1f * pseudo(&st);
        scale[i] = 1.0f + 0.5f * pseudo(&st);
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, RC, RH, RW});
    plx_layer_id x, o[3];
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_global_pool_desc gap = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    plx_axis_desc flat = PLX_AXIS_DESC_INIT(1);
    plx_softmax_desc sm = PLX_SOFTMAX_DESC_INIT;
    plx_transpose_desc tr = PLX_TRANSPOSE_DESC_INIT;
    tr.perm_count = 4;
    tr.perm[0] = 0;
    tr.perm[1] = 2;
    tr.perm[2] = 3;
    tr.perm[3] = 1;
    plx_layer_id c1 = conv_k(n, "conv1", x, RC, RC, 3, 1, 1, 1, w1, b1);
    plx_layer_id r1 = layer(n, "relu1", PLX_OP_ACTIVATION, &relu, &c1, 1);
    plx_layer_id c2 = conv_k(n, "conv2", r1, RC, RC, 3, 1, 1, 1, w2, b2);
    plx_layer_id s = layer(n, "add", PLX_OP_BINARY, &add, (plx_layer_id[]){c2, r1}, 2);
    plx_layer_id r2 = layer(n, "relu2", PLX_OP_ACTIVATION, &relu, &s, 1);
    plx_layer_id k = add_const(n, "scale", (int64_t[]){1, RC, 1, 1}, 4, scale);
    plx_layer_id m = layer(n, "mul", PLX_OP_BINARY, &mul, (plx_layer_id[]){r2, k}, 2);
    plx_layer_id g = layer(n, "gap", PLX_OP_GLOBAL_POOL, &gap, &m, 1);
    plx_layer_id f = layer(n, "flatten", PLX_OP_FLATTEN, &flat, &g, 1);
    plx_layer_id y = layer(n, "softmax", PLX_OP_SOFTMAX, &sm, &f, 1);
    plx_layer_id t = layer(n, "transpose", PLX_OP_TRANSPOSE, &tr, &r1, 1);
    plx_layer_id src[3] = {r1, y, t};
    const char *names[3] = {"r1", "y", "t"};
    for (uint32_t i = 0; i < 3; i++) {
        OK(plx_network_add_output(n, names[i], (int32_t)i, &o[i]));
        OK(plx_network_connect(n, src[i], 0, o[i], 0));
    }
    const size_t sizes[3] = {RC * RH * RW, RC, RC * RH * RW};
    static float xv[RC * RH * RW], got[3][RC * RH * RW], want[3][RC * RH * RW];
    for (size_t i = 0; i < COUNT(xv); i++) {
        xv[i] = pseudo(&st);
    }
    const char *both[] = {"cpu_onednn", "cpu_ref"}, *ref[] = {"cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, both, 2, false, false, &on);
    cr_assert(all_on_onednn_with(on, "conv1+...+softmax"), "%s",
              plx_optimized_network_summary(on));
    cr_assert(tu_noted(on, "backend 'cpu_onednn' replaced 10 layers by 'conv1+...+softmax' "
                           "(graph)"));
    plx_optimized_network_destroy(&on);
    for (int pass = 0; pass < 2; pass++) {
        plx_loaded_network *ln = load(rt, n, pass ? ref : both, pass ? 1 : 2, false, false, NULL);
        plx_tensor_binding in = {0, xv, sizeof xv, 0}, out[3];
        for (int i = 0; i < 3; i++) {
            out[i] = (plx_tensor_binding){i, pass ? want[i] : got[i], sizes[i] * sizeof(float), 0};
        }
        for (int rep = 0; rep < 2; rep++) {
            OK(plx_loaded_network_execute(ln, &in, 1, out, 3));
        }
        plx_loaded_network_unload(&ln);
    }
    for (int i = 0; i < 3; i++) {
        expect_close(got[i], want[i], sizes[i]);
    }
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

static char graph_log[4096];

static void keep_log(void *user_data, plx_log_level level, const char *source,
                     const char *message) {
    (void)user_data;
    (void)level;
    if (strcmp(source, "cpu_onednn") == 0 && strstr(message, "a graph of")) {
        snprintf(graph_log, sizeof graph_log, "%s", message);
    }
}

/* MobileNet's separable blocks: a 1x1 convolution (with or without an
 * activation, bias) whose result only a depthwise 3x3 convolution (stride
 * 2 or 1, with or without bias and activation) reads runs as one oneDNN
 * convolution with a depthwise post-op; cpu_ref's results, and those of
 * graph=off. */
Test(cpu_onednn, graph_fuses_depthwise_after_pointwise) {
    enum { C0 = 16, C1 = 32, H = 12 };
    static float w1[C1 * C0], b1[C1], wd1[C1 * 9], bd1[C1], w2[C1 * C1], wd2[C1 * 9];
    uint32_t st = 7;
    float *all[] = {w1, b1, wd1, bd1, w2, wd2};
    size_t sizes[] = {COUNT(w1), COUNT(b1), COUNT(wd1), COUNT(bd1), COUNT(w2), COUNT(wd2)};
    for (size_t a = 0; a < COUNT(all); a++) {
        for (size_t i = 0; i < sizes[a]; i++) {
            all[a][i] = 0.3f * pseudo(&st);
        }
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, C0, H, H});
    plx_layer_id x, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_activation_desc clip = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    clip.alpha = 0.0f;
    clip.beta = 6.0f;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id p1 = conv_k(n, "pw1", x, C1, C0, 1, 1, 0, 1, w1, b1);
    plx_layer_id a1 = layer(n, "pw1_clip", PLX_OP_ACTIVATION, &clip, &p1, 1);
    plx_layer_id d1 = conv_k(n, "dw1", a1, C1, 1, 3, 2, 1, C1, wd1, bd1);
    plx_layer_id a2 = layer(n, "dw1_relu", PLX_OP_ACTIVATION, &relu, &d1, 1);
    plx_layer_id p2 = conv_k(n, "pw2", a2, C1, C1, 1, 1, 0, 1, w2, NULL);
    plx_layer_id d2 = conv_k(n, "dw2", p2, C1, 1, 3, 1, 1, C1, wd2, NULL);
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, d2, 0, out, 0));
    enum { YN = C1 * (H / 2) * (H / 2) };
    static float xv[C0 * H * H], y[3][YN];
    for (size_t i = 0; i < COUNT(xv); i++) {
        xv[i] = pseudo(&st);
    }
    for (int pass = 0; pass < 3; pass++) { /* graph, graph=off, cpu_ref */
        plx_backend_option off = {"cpu_onednn", "graph", "off"};
        graph_log[0] = '\0';
        plx_runtime *rt = runtime_logging(&off, pass == 1, keep_log);
        onednn(rt);
        const char *ids[] = {pass == 2 ? "cpu_ref" : "cpu_onednn"};
        plx_loaded_network *ln = load(rt, n, ids, 1, false, false, NULL);
        if (pass == 0) {
            const char *want = "a graph of 6 layers runs as 2: 2 activations fused into the "
                               "product before them, 2 1x1 convolutions with the depthwise";
            cr_assert(not(zero(ptr, strstr(graph_log, want))), "log: '%s'", graph_log);
        }
        plx_tensor_binding in = {0, xv, sizeof xv, 0}, ob = {0, y[pass], sizeof y[pass], 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &ob, 1));
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
    expect_close(y[0], y[2], YN);
    expect_close(y[1], y[2], YN);
    plx_network_destroy(&n);
}

/* One constant read by two fully_connected layers, as it is and
 * transposed: oneDNN packs both into the same layout, from different
 * views, and each layer must get its own packing (cpu_ref's results). */
Test(cpu_onednn, one_constant_packed_two_ways) {
    enum { D = 64 };
    static float w[D * D], xv[D], y[2][D];
    uint32_t st = 31;
    for (size_t i = 0; i < COUNT(w); i++) {
        w[i] = 0.2f * pseudo(&st);
    }
    for (size_t i = 0; i < D; i++) {
        xv[i] = pseudo(&st);
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(2, (int64_t[]){1, D});
    plx_layer_id x, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_layer_id wc = add_const(n, "w", (int64_t[]){D, D}, 2, w);
    plx_fully_connected_desc plain = PLX_FULLY_CONNECTED_DESC_INIT, tr = plain;
    tr.weights_transposed = true;
    plx_layer_id f1 = layer(n, "fc", PLX_OP_FULLY_CONNECTED, &plain, (plx_layer_id[]){x, wc}, 2);
    plx_layer_id f2 = layer(n, "fc_t", PLX_OP_FULLY_CONNECTED, &tr, (plx_layer_id[]){f1, wc}, 2);
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, f2, 0, out, 0));
    for (int pass = 0; pass < 2; pass++) {
        plx_runtime *rt = runtime_with(NULL, 0);
        onednn(rt);
        const char *ids[] = {pass ? "cpu_ref" : "cpu_onednn"};
        plx_loaded_network *ln = load(rt, n, ids, 1, false, false, NULL);
        plx_tensor_binding in = {0, xv, sizeof xv, 0}, ob = {0, y[pass], sizeof y[pass], 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &ob, 1));
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
    expect_close(y[0], y[1], D);
    plx_network_destroy(&n);
}

/* Layers of cpu_onednn around a layer it refuses (floor, on cpu_ref) that
 * a skip connection joins again:
 *   r = relu(conv1(x)); y = conv2(floor(r)) + r
 * cpu_onednn's four layers are connected through r but not convex (r
 * leaves them through floor and comes back): they become two graphs,
 * conv1+relu and conv2+add, cut where the path comes back. cpu_ref's
 * results. */
Test(cpu_onednn, graph_splits_where_another_backend_comes_between) {
    static float w1[RC * RC * 9], b1[RC], w2[RC * RC * 9];
    uint32_t st = 5;
    for (size_t i = 0; i < COUNT(w1); i++) {
        w1[i] = 0.2f * pseudo(&st);
        w2[i] = 0.2f * pseudo(&st);
    }
    for (size_t i = 0; i < RC; i++) {
        b1[i] = 0.1f * pseudo(&st);
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, RC, RH, RW});
    plx_layer_id x, o;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc floor_d = PLX_UNARY_DESC_INIT(PLX_UNARY_FLOOR);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id c1 = conv_k(n, "conv1", x, RC, RC, 3, 1, 1, 1, w1, b1);
    plx_layer_id r = layer(n, "relu", PLX_OP_ACTIVATION, &relu, &c1, 1);
    plx_layer_id f = layer(n, "floor", PLX_OP_UNARY, &floor_d, &r, 1);
    plx_layer_id c2 = conv_k(n, "conv2", f, RC, RC, 3, 1, 1, 1, w2, NULL);
    plx_layer_id s = layer(n, "add", PLX_OP_BINARY, &add, (plx_layer_id[]){c2, r}, 2);
    OK(plx_network_add_output(n, "y", 0, &o));
    OK(plx_network_connect(n, s, 0, o, 0));
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    const char *both[] = {"cpu_onednn", "cpu_ref"}, *ref[] = {"cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, both, 2, false, false, &on);
    cr_assert(tu_noted(on, "backend 'cpu_onednn' replaced 2 layers by 'conv1+relu' (graph)"),
              "%s", plx_optimized_network_summary(on));
    cr_assert(tu_noted(on, "backend 'cpu_onednn' replaced 2 layers by 'conv2+add' (graph)"),
              "%s", plx_optimized_network_summary(on));
    plx_optimized_network_destroy(&on);
    static float xv[RC * RH * RW], y[2][RC * RH * RW];
    for (size_t i = 0; i < COUNT(xv); i++) {
        xv[i] = 4.0f * pseudo(&st);
    }
    for (int pass = 0; pass < 2; pass++) {
        plx_loaded_network *ln = load(rt, n, pass ? ref : both, pass ? 1 : 2, false, false, NULL);
        plx_tensor_binding in = {0, xv, sizeof xv, 0}, ob = {0, y[pass], sizeof y[pass], 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &ob, 1));
        plx_loaded_network_unload(&ln);
    }
    /* floor() of values within 1e-4 agrees unless one sits on an integer,
     * which these inputs do not */
    expect_close(y[0], y[1], COUNT(xv));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Layer `name` of `n` on cpu_onednn,cpu_ref: given back to cpu_ref with
 * the reason `needle` by default, run by cpu_onednn with reference=on. */
static void expect_slow_refused(plx_network *n, const char *name, const char *needle) {
    const char *both[] = {"cpu_onednn", "cpu_ref"};
    for (int on_ = 0; on_ < 2; on_++) {
        plx_backend_option opt = {"cpu_onednn", "reference", on_ ? "on" : "off"};
        plx_runtime *rt = runtime_with(&opt, 1);
        onednn(rt);
        plx_optimized_network *on = NULL;
        load(rt, n, both, 2, false, false, &on);
        const plx_layer_assignment *a = NULL;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *l = plx_optimized_network_layer(on, i);
            if (strcmp(l->layer_name, name) == 0) {
                a = l;
            }
        }
        cr_assert(not(zero(ptr, (void *)a)));
        const char *summary = plx_optimized_network_summary(on);
        cr_assert(eq(str, (char *)a->backend_id, on_ ? "cpu_onednn" : "cpu_ref"), "%s", summary);
        if (!on_) {
            cr_assert(not(zero(ptr, strstr(summary, needle))), "%s", summary);
        }
        plx_optimized_network_destroy(&on);
        plx_runtime_destroy(&rt);
    }
}

/* A sum over the middle axis of [2,16,384] (a sentence embedding's mean
 * pooling), for which oneDNN 2.6 offers only its reference
 * implementation, a batch norm of NCHW on its own, for which it offers
 * only C++ loops seven times slower than cpu_ref's (ncsp_bnorm), and a
 * concat, which it copies element by element (simple:any): refused by
 * default, naming the implementation, so that cpu_ref runs them; run with
 * reference=on. Bad values of the option reject the backend. */
Test(cpu_onednn, reference_implementations_are_refused_unless_asked_for) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(3, (int64_t[]){2, 16, 384});
    plx_layer_id x, o;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_reduce_desc rd = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    rd.axes[0] = 1;
    rd.axis_count = 1;
    rd.keepdims = false;
    plx_layer_id r = layer(n, "sum", PLX_OP_REDUCE, &rd, &x, 1);
    OK(plx_network_add_output(n, "y", 0, &o));
    OK(plx_network_connect(n, r, 0, o, 0));
    expect_slow_refused(n, "sum", "oneDNN offers only its reference implementation (ref:");
    plx_network_destroy(&n);

    OK(plx_network_create(&n));
    xi = tu_f32(4, (int64_t[]){1, 4, 8, 8});
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_batch_norm_desc bd = PLX_BATCH_NORM_DESC_INIT;
    plx_layer_id bn;
    OK(plx_network_add_layer(n, "bn", PLX_OP_BATCH_NORM, &bd, 5, 1, &bn));
    OK(plx_network_connect(n, x, 0, bn, 0));
    static const float params[4][4] = {
        {1, 2, 0.5f, 1}, {0, 0.5f, -1, 2}, {0.1f, 0, -0.2f, 1}, {1, 0.5f, 2, 4}};
    static const char *const names[4] = {"scale", "bias", "mean", "var"};
    for (uint32_t i = 0; i < 4; i++) {
        OK(plx_network_connect(n, add_const(n, names[i], (int64_t[]){4}, 1, params[i]), 0, bn,
                               i + 1));
    }
    OK(plx_network_add_output(n, "y", 0, &o));
    OK(plx_network_connect(n, bn, 0, o, 0));
    expect_slow_refused(n, "bn", "oneDNN offers only a slow batch normalisation on this "
                                 "layout (ncsp_bnorm");
    plx_network_destroy(&n);

    OK(plx_network_create(&n));
    xi = tu_f32(4, (int64_t[]){1, 8, 4, 4});
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_axis_desc cd = PLX_AXIS_DESC_INIT(1);
    plx_layer_id both[2] = {x, x};
    plx_layer_id cat = layer(n, "cat", PLX_OP_CONCAT, &cd, both, 2);
    OK(plx_network_add_output(n, "y", 0, &o));
    OK(plx_network_connect(n, cat, 0, o, 0));
    expect_slow_refused(n, "cat", "oneDNN offers only a concat that copies element by element "
                                  "(simple:");
    plx_network_destroy(&n);
    expect_on_off_rejected("reference", "yes");
}

/* Option exact_nan: the CNN's relu and max pool (whose oneDNN kernels turn
 * NaN into a number) go to cpu_ref, the conv and fc stay on cpu_onednn,
 * and an input pixel of NaN gives NaN as on cpu_ref alone; by default the
 * relu fused into the conv gives 0 for it. Finite inputs give cpu_ref's
 * results either way. Bad values of the option reject the backend. */
Test(cpu_onednn, exact_nan_sends_nan_dropping_layers_to_cpu_ref) {
    plx_network *n = make_cnn(false);
    const char *both[] = {"cpu_onednn", "cpu_ref"};
    for (int exact = 0; exact < 2; exact++) {
        plx_backend_option opt = {"cpu_onednn", "exact_nan", exact ? "on" : "off"};
        plx_runtime *rt = runtime_with(&opt, 1);
        onednn(rt);
        plx_optimized_network *on = NULL;
        load(rt, n, both, 2, false, false, &on);
        const char *summary = plx_optimized_network_summary(on);
        size_t on_ref = 0;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
            bool drops = strcmp(a->layer_name, "relu") == 0 || strcmp(a->layer_name, "pool") == 0;
            bool inserted = strstr(a->layer_name, " -> ") != NULL; /* a copy between backends */
            if (strcmp(a->backend_id, "cpu_ref") == 0 && !inserted) {
                on_ref++;
                cr_assert(exact && drops, "layer '%s' on cpu_ref: %s", a->layer_name, summary);
            }
        }
        cr_assert(eq(sz, on_ref, exact ? 2 : 0), "%s", summary);
        if (exact) {
            cr_assert(not(zero(ptr, strstr(summary, "oneDNN 2.6's relu turns NaN into a number "
                                                    "(option exact_nan is on)"))),
                      "%s", summary);
        }
        plx_optimized_network_destroy(&on);
        plx_loaded_network *ln = load(rt, n, both, 2, false, false, NULL);
        float x[IN_C * IN_H * IN_W], y[CLASSES], want[CLASSES];
        make_input(x, 4);
        run(ln, NULL, x, y);
        reference(rt, n, 4, want);
        expect_close(y, want, CLASSES);
        x[IN_W + 1] = NAN; /* channel 0, row 1, column 1 */
        run(ln, NULL, x, y);
        for (size_t i = 0; i < CLASSES; i++) {
            /* the fc mixes every pooled value, NaN or 0 among them */
            cr_assert(exact ? isnan(y[i]) : isfinite(y[i]), "exact_nan=%s: y[%zu] = %g",
                      exact ? "on" : "off", i, (double)y[i]);
        }
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
    plx_network_destroy(&n);
    expect_on_off_rejected("exact_nan", "1");
}

/* ---- function values cpu_onednn does not run ----------------------------- */

/* R-19 (3): the values appended to existing operators' enums (unary
 * is_nan .. bitwise_not, binary bitwise_and .. shift_right, activation
 * shrink, pool and global_pool kind lp) are refused, never run as
 * something else: x -> the layer -> y on cpu_onednn alone, without
 * fallback, is unsupported, and the reason names the layer (and shrink
 * or the pool kind where the dtype alone is not the reason). */
static void expect_refused_alone(plx_runtime *rt, plx_dtype dt, plx_op op, const void *desc,
                                 const char *needle) {
    plx_network *n;
    OK(plx_network_create(&n));
    /* grid_sample samples x at x itself: [N, H, W, 2] fits both */
    bool two = op == PLX_OP_BINARY || op == PLX_OP_GRID_SAMPLE;
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, 2, 4, op == PLX_OP_GRID_SAMPLE ? 2 : 4});
    xi.dtype = dt;
    plx_layer_id x, l, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_layer(n, "L", op, desc, two ? 2 : 1, 1, &l));
    OK(plx_network_connect(n, x, 0, l, 0));
    if (two) {
        OK(plx_network_connect(n, x, 0, l, 1));
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, l, 0, out, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_onednn"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status st = plx_optimize(rt, n, &oo, &on);
    cr_assert(not(zero(ptr, st)), "cpu_onednn accepted %s", needle);
    cr_assert(eq(int, plx_status_get_code(st), PLX_UNSUPPORTED), "%s", plx_status_get_message(st));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(st), needle))), "'%s' lacks '%s'",
              plx_status_get_message(st), needle);
    plx_status_free(st);
    plx_network_destroy(&n);
}

/* The quantized average pool and the requantizing concat (plexus/ops.h)
 * are refused, with the reason, on cpu_onednn alone: oneDNN 2.6's int8
 * pooling is not the quantized average (docs/cpu_onednn.md), and its
 * concat only copies. */
static void expect_quantized_refused(plx_runtime *rt, plx_op op, const void *desc) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info a = tu_f32(4, (int64_t[]){1, 2, 4, 4}), b = a, y;
    a.dtype = b.dtype = PLX_DTYPE_UINT8;
    a.quant.kind = b.quant.kind = PLX_QUANT_PER_TENSOR;
    a.quant.scale = 0.5f;
    a.quant.zero_point = 3;
    b.quant.scale = 0.25f;
    b.quant.zero_point = 9;
    bool cat = op == PLX_OP_CONCAT;
    y = cat ? tu_f32(4, (int64_t[]){1, 4, 4, 4}) : tu_f32(4, (int64_t[]){1, 2, 2, 2});
    y.dtype = PLX_DTYPE_UINT8;
    y.quant = b.quant;
    plx_layer_id xa, xb, l, out;
    OK(plx_network_add_input(n, "a", 0, &a, &xa));
    OK(plx_network_add_input(n, "b", 1, &b, &xb));
    OK(plx_network_add_layer(n, "L", op, desc, cat ? 2 : 1, 1, &l));
    OK(plx_network_connect(n, xa, 0, l, 0));
    if (cat) {
        OK(plx_network_connect(n, xb, 0, l, 1));
    }
    OK(plx_network_set_output_info(n, l, 0, &y));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, l, 0, out, 0));
    if (!cat) {
        plx_layer_id out_b;
        OK(plx_network_add_output(n, "yb", 1, &out_b));
        OK(plx_network_connect(n, xb, 0, out_b, 0));
    }
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_onednn"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status st = plx_optimize(rt, n, &oo, &on);
    cr_assert(not(zero(ptr, st)), "cpu_onednn accepted a quantized %s", plx_op_name(op));
    cr_assert(eq(int, plx_status_get_code(st), PLX_UNSUPPORTED), "%s", plx_status_get_message(st));
    const char *msg = plx_status_get_message(st);
    cr_assert(not(zero(ptr, strstr(msg, "'L'"))), "%s", msg);
    cr_assert(not(zero(ptr, strstr(msg, "in float32 only, not uint8"))), "%s", msg);
    plx_status_free(st);
    plx_network_destroy(&n);
}

Test(cpu_onednn, quantized_average_pool_and_requantizing_concat_are_refused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    pd.kernel[0] = pd.kernel[1] = 2;
    pd.strides[0] = pd.strides[1] = 2;
    expect_quantized_refused(rt, PLX_OP_POOL, &pd);
    plx_axis_desc cd = PLX_AXIS_DESC_INIT(1);
    expect_quantized_refused(rt, PLX_OP_CONCAT, &cd);
    plx_runtime_destroy(&rt);
}

Test(cpu_onednn, new_function_values_are_refused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    for (int f = PLX_UNARY_IS_NAN; f <= PLX_UNARY_BITWISE_NOT; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        /* refused for the dtypes (bool out, integers in) before the
         * function is looked at, which the default case refuses too */
        expect_refused_alone(rt, f == PLX_UNARY_BITWISE_NOT ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32,
                             PLX_OP_UNARY, &d, "(unary): cpu_onednn");
    }
    for (int f = PLX_BINARY_BITWISE_AND; f <= PLX_BINARY_SHIFT_RIGHT; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        expect_refused_alone(rt, f >= PLX_BINARY_SHIFT_LEFT ? PLX_DTYPE_UINT8 : PLX_DTYPE_INT32,
                             PLX_OP_BINARY, &d, "(binary): cpu_onednn");
    }
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_ACTIVATION, &ad, "shrink");
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_LP);
    pd.kernel[0] = pd.kernel[1] = 2;
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_POOL, &pd, "pool kind 2");
    plx_global_pool_desc gd = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_GLOBAL_POOL, &gd, "pool kind 2");
    plx_runtime_destroy(&rt);
}

/* Operators appended to plx_op after cpu_onednn was written fall to the
 * planner's default case, and resize's 1.3 values to its refusals, each
 * with the reason. */
Test(cpu_onednn, new_operators_are_refused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_grid_sample_desc gs = PLX_GRID_SAMPLE_DESC_INIT;
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_GRID_SAMPLE, &gs,
                         "cpu_onednn: has no oneDNN primitive for grid_sample");
    /* resize's 1.3 modes; sizes with a scale that does not give them */
    for (int mode = PLX_RESIZE_CUBIC; mode <= PLX_RESIZE_CUBIC_ANTIALIAS; mode++) {
        plx_resize_desc rd = PLX_RESIZE_DESC_INIT((plx_resize_mode)mode);
        rd.scales[0] = rd.scales[1] = 2.0f;
        char needle[80];
        snprintf(needle, sizeof needle, "cpu_onednn: runs nearest and linear resize only, not %s",
                 plx_resize_mode_name((plx_resize_mode)mode));
        expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_RESIZE, &rd, needle);
    }
    plx_resize_desc rd = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    rd.sizes[0] = rd.sizes[1] = 9;
    rd.scales[0] = rd.scales[1] = 2.0f;
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_RESIZE, &rd,
                         "cpu_onednn: runs resize whose scales give its output size only");
    rd.coord = PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC;
    expect_refused_alone(rt, PLX_DTYPE_FLOAT32, PLX_OP_RESIZE, &rd,
                         "cpu_onednn: runs resize with half_pixel coordinates only");
    plx_runtime_destroy(&rt);
}

/* R-19 (3): the element types of ABI 1.3 (float64, uint16, uint32, uint64)
 * are refused with the reason, never run: cpu_onednn computes in float32. */
Test(cpu_onednn, abi13_dtypes_are_refused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_EXP);
    expect_refused_alone(rt, PLX_DTYPE_FLOAT64, PLX_OP_UNARY, &ud,
                         "cpu_onednn: runs unary in float32 only, not float64");
    plx_binary_desc bd = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16, PLX_DTYPE_UINT32,
                                      PLX_DTYPE_UINT64};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "cpu_onednn: runs binary in float32 only, not %s",
                 plx_dtype_name(types[i]));
        expect_refused_alone(rt, types[i], PLX_OP_BINARY, &bd, needle);
    }
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    expect_refused_alone(rt, PLX_DTYPE_FLOAT64, PLX_OP_ACTIVATION, &ad, "not float64");
    plx_transpose_desc td = PLX_TRANSPOSE_DESC_INIT;
    expect_refused_alone(rt, PLX_DTYPE_UINT64, PLX_OP_TRANSPOSE, &td, "not uint64");
    expect_refused_alone(rt, PLX_DTYPE_FLOAT8E5M2, PLX_OP_TRANSPOSE, &td, "not float8e5m2");
    expect_refused_alone(rt, PLX_DTYPE_UINT4, PLX_OP_TRANSPOSE, &td, "not uint4");
    plx_runtime_destroy(&rt);
}

/* A convolution followed by shrink, which cpu_onednn's graph and fusion
 * would take as the convolution's activation: shrink is refused (it falls
 * back to cpu_ref) and the result is cpu_ref's. */
Test(cpu_onednn, shrink_after_conv_is_not_fused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    static float w[RC * RC * 9], b[RC], x[RC * RH * RW];
    uint32_t s = 5;
    for (size_t i = 0; i < COUNT(w); i++) {
        w[i] = pseudo(&s) * 0.2f;
    }
    for (size_t i = 0; i < COUNT(b); i++) {
        b[i] = pseudo(&s);
    }
    for (size_t i = 0; i < COUNT(x); i++) {
        x[i] = pseudo(&s);
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(4, (int64_t[]){1, RC, RH, RW});
    plx_layer_id in, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &in));
    plx_layer_id conv = conv_k(n, "conv", in, RC, RC, 3, 1, 1, 1, w, b);
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    ad.alpha = 0.3f;
    ad.beta = 0.1f;
    plx_layer_id sh = layer(n, "shrink", PLX_OP_ACTIVATION, &ad, &conv, 1);
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, sh, 0, out, 0));
    static float y[2][RC * RH * RW];
    for (int k = 0; k < 2; k++) {
        const char *both[] = {"cpu_onednn", "cpu_ref"}, *ref[] = {"cpu_ref"};
        plx_optimized_network *on = NULL;
        if (k == 0) {
            load(rt, n, both, 2, false, false, &on);
            const char *summary = plx_optimized_network_summary(on);
            cr_assert(not(zero(ptr, strstr(summary, "shrink"))), "%s", summary);
            for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
                const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
                if (strcmp(a->layer_name, "shrink") == 0) {
                    cr_assert(eq(str, (char *)a->backend_id, "cpu_ref"), "%s", summary);
                }
            }
            plx_optimized_network_destroy(&on);
        }
        plx_loaded_network *ln = load(rt, n, k ? ref : both, k ? 1 : 2, false, false, NULL);
        plx_tensor_binding ib = {0, x, sizeof x, 0};
        plx_tensor_binding ob = {0, y[k], sizeof y[k], 0};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &ib;
        a.input_count = 1;
        a.outputs = &ob;
        a.output_count = 1;
        OK(plx_loaded_network_execute_with(ln, NULL, &a));
        plx_loaded_network_unload(&ln);
    }
    expect_close(y[0], y[1], COUNT(y[0]));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A 3-D network (video or volume models): grouped conv with strides,
 * dilation and pads, relu, max pool, average pool with pads counted, and
 * a conv_transpose back up, all on cpu_onednn (oneDNN's 3-D primitives),
 * with cpu_ref's results. */
Test(cpu_onednn, conv_and_pool_in_3d) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    enum { C3 = 4, D3 = 6, H3 = 9, W3 = 8, M3 = 6 };
    static float w1[M3 * 2 * 27], b1[M3], wt[M3 * 2 * 8], bt[2];
    uint32_t st = 7;
    for (size_t i = 0; i < COUNT(w1); i++) {
        w1[i] = 0.3f * pseudo(&st);
    }
    for (size_t i = 0; i < COUNT(wt); i++) {
        wt[i] = 0.3f * pseudo(&st);
    }
    for (size_t i = 0; i < M3; i++) {
        b1[i] = 0.1f * pseudo(&st);
    }
    bt[0] = 0.05f, bt[1] = -0.05f;
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(5, (int64_t[]){1, C3, D3, H3, W3});
    plx_layer_id x, o;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.group = 2;
    cd.strides[1] = 2;
    cd.dilations[2] = 2;
    cd.pads_begin[0] = cd.pads_end[0] = 1;
    cd.pads_begin[2] = 2;
    plx_layer_id cin[3] = {x, add_const(n, "w1", (int64_t[]){M3, 2, 3, 3, 3}, 5, w1),
                           add_const(n, "b1", (int64_t[]){M3}, 1, b1)};
    plx_layer_id c = layer(n, "conv", PLX_OP_CONV, &cd, cin, 3); /* [1,6,6,4,6] */
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id r = layer(n, "relu", PLX_OP_ACTIVATION, &relu, &c, 1);
    plx_pool_desc mp = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    mp.kernel[0] = mp.kernel[1] = mp.kernel[2] = 2;
    mp.strides[0] = mp.strides[2] = 2;
    plx_layer_id p = layer(n, "maxpool", PLX_OP_POOL, &mp, &r, 1); /* [1,6,3,3,3] */
    plx_pool_desc ap = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    ap.kernel[0] = ap.kernel[1] = ap.kernel[2] = 3;
    ap.pads_begin[0] = ap.pads_end[0] = ap.pads_begin[1] = ap.pads_end[2] = 1;
    ap.count_include_pad = true;
    plx_layer_id a = layer(n, "avgpool", PLX_OP_POOL, &ap, &p, 1); /* [1,6,3,2,2] */
    plx_conv_transpose_desc td = PLX_CONV_TRANSPOSE_DESC_INIT;
    td.strides[0] = td.strides[1] = td.strides[2] = 2;
    plx_layer_id tin[3] = {a, add_const(n, "wt", (int64_t[]){M3, 2, 2, 2, 2}, 5, wt),
                           add_const(n, "bt", (int64_t[]){2}, 1, bt)};
    plx_layer_id t = layer(n, "deconv", PLX_OP_CONV_TRANSPOSE, &td, tin, 3); /* [1,2,6,4,4] */
    OK(plx_network_add_output(n, "y", 0, &o));
    OK(plx_network_connect(n, t, 0, o, 0));
    enum { NY = 2 * 6 * 4 * 4 };
    static float xv[C3 * D3 * H3 * W3], got[NY], want[NY];
    for (size_t i = 0; i < COUNT(xv); i++) {
        xv[i] = pseudo(&st);
    }
    const char *both[] = {"cpu_onednn", "cpu_ref"}, *ref[] = {"cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, both, 2, false, false, &on);
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *la = plx_optimized_network_layer(on, i);
        cr_assert(eq(str, (char *)la->backend_id, "cpu_onednn"), "layer '%s': %s",
                  la->layer_name, plx_optimized_network_summary(on));
    }
    plx_optimized_network_destroy(&on);
    for (int pass = 0; pass < 2; pass++) {
        plx_loaded_network *ln = load(rt, n, pass ? ref : both, pass ? 1 : 2, false, false, NULL);
        plx_tensor_binding in = {0, xv, sizeof xv, 0};
        plx_tensor_binding out = {0, pass ? want : got, sizeof got, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
        plx_loaded_network_unload(&ln);
    }
    expect_close(got, want, NY);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* ---- recurrent layers (onednn_rnn.c) ------------------------------------- */

/* One recurrent layer, x -> lstm, gru or rnn -> Y, Y_h (and Y_c), with
 * weights, bias and peepholes constant and pseudo-random, initial states
 * network inputs, and sequence_lens a constant of `lens` (NULL: each
 * seq_length) or, with `lens_input`, a network input. */
enum { RT = 5, RN = 3, RI = 4, RHID = 6 };

typedef struct rnn_case {
    plx_op op;
    const void *desc;
    plx_rnn_direction dir;
    const int32_t *lens;
    bool lens_input;
    bool weights_input; /* W, R, B (and P) network inputs after the states */
} rnn_case;

/* The weights, bias and peepholes of make_rnn, pseudo-random. */
static float rnn_w[2 * 4 * RHID * RI], rnn_r[2 * 4 * RHID * RHID], rnn_b[2 * 8 * RHID],
    rnn_p[2 * 3 * RHID];

static plx_layer_id add_const_dt(plx_network *n, const char *name, plx_dtype dt,
                                 const int64_t *dims, uint32_t rank, const void *data) {
    plx_tensor_info t = tu_f32(rank, dims);
    t.dtype = dt;
    plx_layer_id id;
    OK(plx_network_add_constant(n, name, &t, data, PLX_CONSTANT_COPY, &id));
    return id;
}

static plx_network *make_rnn(const rnn_case *c, unsigned *outputs) {
    bool lstm = c->op == PLX_OP_LSTM;
    int64_t D = c->dir == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t G = lstm ? 4 : c->op == PLX_OP_GRU ? 3 : 1;
    float *w = rnn_w, *r = rnn_r, *b = rnn_b, *p = rnn_p;
    uint32_t s = 11;
    for (size_t i = 0; i < COUNT(rnn_w); i++) {
        w[i] = 0.4f * pseudo(&s);
    }
    for (size_t i = 0; i < COUNT(rnn_r); i++) {
        r[i] = 0.4f * pseudo(&s);
    }
    for (size_t i = 0; i < COUNT(rnn_b); i++) {
        b[i] = 0.2f * pseudo(&s);
    }
    for (size_t i = 0; i < COUNT(rnn_p); i++) {
        p[i] = 1.5f * pseudo(&s);
    }
    int32_t lens[RN] = {RT, RT, RT};
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = tu_f32(3, (int64_t[]){RT, RN, RI});
    plx_tensor_info si = tu_f32(3, (int64_t[]){D, RN, RHID});
    plx_tensor_info li = tu_f32(1, (int64_t[]){RN});
    li.dtype = PLX_DTYPE_INT32;
    plx_layer_id in[8], l;
    OK(plx_network_add_input(n, "x", 0, &xi, &in[0]));
    unsigned next = 1;
    if (c->lens_input) {
        OK(plx_network_add_input(n, "lens", next++, &li, &in[4]));
    } else {
        in[4] = add_const_dt(n, "lens", PLX_DTYPE_INT32, (int64_t[]){RN}, 1,
                             c->lens ? c->lens : lens);
    }
    OK(plx_network_add_input(n, "h0", next++, &si, &in[5]));
    if (lstm) {
        OK(plx_network_add_input(n, "c0", next++, &si, &in[6]));
    }
    static const char *const wnames[4] = {"W", "R", "B", "P"};
    const int64_t wdims[4][3] = {{D, G * RHID, RI}, {D, G * RHID, RHID}, {D, 2 * G * RHID},
                                 {D, 3 * RHID}};
    const float *wdata[4] = {w, r, b, p};
    static const unsigned wslot[4] = {1, 2, 3, 7};
    for (unsigned k = 0; k < (lstm ? 4u : 3u); k++) {
        uint32_t rank = k < 2 ? 3 : 2;
        if (c->weights_input) {
            plx_tensor_info wi = tu_f32(rank, wdims[k]);
            OK(plx_network_add_input(n, wnames[k], next++, &wi, &in[wslot[k]]));
        } else {
            in[wslot[k]] = add_const(n, wnames[k], wdims[k], rank, wdata[k]);
        }
    }
    unsigned nin = lstm ? 8 : 6, nout = lstm ? 3 : 2;
    OK(plx_network_add_layer(n, "RNN", c->op, c->desc, nin, nout, &l));
    for (unsigned i = 0; i < nin; i++) {
        OK(plx_network_connect(n, in[i], 0, l, i));
    }
    static const char *const names[3] = {"Y", "Y_h", "Y_c"};
    for (unsigned k = 0; k < nout; k++) {
        plx_layer_id o;
        OK(plx_network_add_output(n, names[k], k, &o));
        OK(plx_network_connect(n, l, k, o, 0));
    }
    *outputs = nout;
    return n;
}

/* Appends input binding *nb (the next input id) of `bytes` at `data`. */
static void add_binding(plx_tensor_binding *in, uint32_t *nb, void *data, size_t bytes) {
    in[*nb] = (plx_tensor_binding){*nb, data, bytes, 0};
    (*nb)++;
}

/* Runs `c` on cpu_onednn alone and on cpu_ref, same inputs: every output
 * within 1e-4 (relative) of cpu_ref's, and the layer on cpu_onednn. */
static void rnn_matches_cpu_ref(plx_runtime *rt, const rnn_case *c) {
    unsigned nout = 0;
    plx_network *n = make_rnn(c, &nout);
    int64_t D = c->dir == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    enum { NX = RT * RN * RI, NS = 2 * RN * RHID, NY = RT * 2 * RN * RHID };
    static float x[NX], h0[NS], c0[NS];
    uint32_t s = 5;
    for (size_t i = 0; i < NX; i++) {
        x[i] = pseudo(&s);
    }
    for (size_t i = 0; i < NS; i++) {
        h0[i] = 0.5f * pseudo(&s);
        c0[i] = 0.5f * pseudo(&s);
    }
    size_t ny = (size_t)(RT * D * RN * RHID), ns = (size_t)(D * RN * RHID);
    int64_t G = c->op == PLX_OP_LSTM ? 4 : c->op == PLX_OP_GRU ? 3 : 1;
    /* x, h0, [c0], then W, R, B, [P] when inputs (no lens input here) */
    plx_tensor_binding in[8];
    uint32_t nb = 0;
    add_binding(in, &nb, x, sizeof x);
    add_binding(in, &nb, h0, ns * sizeof(float));
    if (nout == 3) {
        add_binding(in, &nb, c0, ns * sizeof(float));
    }
    if (c->weights_input) {
        add_binding(in, &nb, rnn_w, (size_t)(D * G * RHID * RI) * sizeof(float));
        add_binding(in, &nb, rnn_r, (size_t)(D * G * RHID * RHID) * sizeof(float));
        add_binding(in, &nb, rnn_b, (size_t)(D * 2 * G * RHID) * sizeof(float));
        if (nout == 3) {
            add_binding(in, &nb, rnn_p, (size_t)(D * 3 * RHID) * sizeof(float));
        }
    }
    const char *alone[] = {"cpu_onednn"}, *ref[] = {"cpu_ref"};
    plx_optimized_network *on = NULL;
    load(rt, n, alone, 1, false, false, &on);
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *la = plx_optimized_network_layer(on, i);
        cr_assert(eq(str, (char *)la->backend_id, "cpu_onednn"), "%s: layer '%s': %s",
                  plx_op_name(c->op), la->layer_name, plx_optimized_network_summary(on));
    }
    plx_optimized_network_destroy(&on);
    static float got[3][NY], want[3][NY];
    for (int pass = 0; pass < 2; pass++) {
        plx_loaded_network *ln = load(rt, n, pass ? ref : alone, 1, false, false, NULL);
        plx_tensor_binding out[3];
        for (unsigned k = 0; k < nout; k++) {
            out[k] = (plx_tensor_binding){k, pass ? want[k] : got[k],
                                          (k ? ns : ny) * sizeof(float), 0};
        }
        OK(plx_loaded_network_execute(ln, in, nb, out, nout));
        plx_loaded_network_unload(&ln);
    }
    for (unsigned k = 0; k < nout; k++) {
        expect_close(got[k], want[k], k ? ns : ny);
    }
    plx_network_destroy(&n);
}

/* LSTM with peepholes, GRU both ways of the reset gate, the vanilla RNN
 * with each of its activations; forward, reverse and bidirectional; from
 * non-zero initial states; weights constant (packed at load) and network
 * inputs (rearranged at each execution). */
Test(cpu_onednn, recurrent_layers_match_cpu_ref) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    for (int k = 0; k < 6; k++) {
        int dir = k % 3;
        bool wi = k >= 3;
        plx_lstm_desc ld;
        memset(&ld, 0, sizeof ld);
        ld.struct_size = sizeof ld;
        ld.direction = (plx_rnn_direction)dir;
        ld.hidden_size = RHID;
        plx_rnn_default_activations(&ld.activations[0][0], 3);
        rnn_case lc = {PLX_OP_LSTM, &ld, ld.direction, NULL, false, wi};
        rnn_matches_cpu_ref(rt, &lc);
        for (int lbr = 0; lbr < 2; lbr++) {
            plx_gru_desc gd;
            memset(&gd, 0, sizeof gd);
            gd.struct_size = sizeof gd;
            gd.direction = (plx_rnn_direction)dir;
            gd.hidden_size = RHID;
            gd.linear_before_reset = lbr;
            plx_rnn_default_activations(&gd.activations[0][0], 2);
            rnn_case gc = {PLX_OP_GRU, &gd, gd.direction, NULL, false, wi};
            rnn_matches_cpu_ref(rt, &gc);
        }
        static const plx_activation_func fs[3] = {PLX_ACT_TANH, PLX_ACT_RELU, PLX_ACT_SIGMOID};
        for (int f = 0; f < 3; f++) {
            plx_rnn_desc rd;
            memset(&rd, 0, sizeof rd);
            rd.struct_size = sizeof rd;
            rd.direction = (plx_rnn_direction)dir;
            rd.hidden_size = RHID;
            for (int d = 0; d < 2; d++) {
                rd.activations[d][0] = (plx_rnn_activation){
                    fs[f], plx_activation_default_alpha(fs[f]), plx_activation_default_beta(fs[f])};
            }
            rnn_case rc = {PLX_OP_RNN, &rd, rd.direction, NULL, false, wi};
            rnn_matches_cpu_ref(rt, &rc);
        }
    }
    plx_runtime_destroy(&rt);
}

/* What oneDNN's RNN primitives cannot do is refused on cpu_onednn alone,
 * the reason naming the layer. */
static void expect_rnn_refused(plx_runtime *rt, const rnn_case *c, const char *needle) {
    unsigned nout = 0;
    plx_network *n = make_rnn(c, &nout);
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_onednn"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status st = plx_optimize(rt, n, &oo, &on);
    cr_assert(not(zero(ptr, st)), "cpu_onednn accepted %s", needle);
    const char *msg = plx_status_get_message(st);
    cr_assert(eq(int, plx_status_get_code(st), PLX_UNSUPPORTED), "%s", msg);
    cr_assert(not(zero(ptr, strstr(msg, "'RNN'"))), "%s", msg);
    cr_assert(not(zero(ptr, strstr(msg, needle))), "'%s' lacks '%s'", msg, needle);
    plx_status_free(st);
    plx_network_destroy(&n);
}

Test(cpu_onednn, recurrent_layers_oneDNN_cannot_run_are_refused) {
    plx_runtime *rt = runtime_with(NULL, 0);
    onednn(rt);
    plx_lstm_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.struct_size = sizeof ld;
    ld.direction = PLX_RNN_FORWARD;
    ld.hidden_size = RHID;
    plx_rnn_default_activations(&ld.activations[0][0], 3);
    rnn_case lc = {PLX_OP_LSTM, &ld, PLX_RNN_FORWARD, NULL, false, false};
    ld.clip = 3.0f;
    expect_rnn_refused(rt, &lc, "no clip");
    ld.clip = 0.0f;
    ld.input_forget = true;
    expect_rnn_refused(rt, &lc, "input_forget");
    ld.input_forget = false;
    ld.activations[0][2].func = PLX_ACT_RELU;
    expect_rnn_refused(rt, &lc, "activations sigmoid, tanh, tanh, not sigmoid, tanh, relu");
    plx_rnn_default_activations(&ld.activations[0][0], 3);
    static const int32_t short_lens[RN] = {RT, RT - 2, RT};
    lc.lens = short_lens;
    expect_rnn_refused(rt, &lc, "sequence_lens[1] = 3 is not seq_length 5");
    lc.lens = NULL;
    lc.lens_input = true;
    expect_rnn_refused(rt, &lc, "sequence_lens must be a constant");

    plx_gru_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.struct_size = sizeof gd;
    gd.direction = PLX_RNN_BIDIRECTIONAL;
    gd.hidden_size = RHID;
    plx_rnn_default_activations(&gd.activations[0][0], 2);
    gd.activations[1][0].func = PLX_ACT_HARD_SIGMOID;
    gd.activations[1][0].alpha = 0.2f;
    gd.activations[1][0].beta = 0.5f;
    rnn_case gc = {PLX_OP_GRU, &gd, PLX_RNN_BIDIRECTIONAL, NULL, false, false};
    expect_rnn_refused(rt, &gc, "not hard_sigmoid, tanh (direction 1)");

    plx_rnn_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.struct_size = sizeof rd;
    rd.direction = PLX_RNN_BIDIRECTIONAL;
    rd.hidden_size = RHID;
    rd.activations[0][0] = (plx_rnn_activation){PLX_ACT_TANH, 0.0f, 0.0f};
    rd.activations[1][0] = (plx_rnn_activation){PLX_ACT_RELU, 0.0f, 0.0f};
    rnn_case rc = {PLX_OP_RNN, &rd, PLX_RNN_BIDIRECTIONAL, NULL, false, false};
    expect_rnn_refused(rt, &rc, "the same in both directions");
    plx_runtime_destroy(&rt);
}

/* Constant recurrent weights, bias and peepholes are rearranged and packed
 * once, at load (W, R, B and P: four), and a second working memory packs
 * nothing again. */
Test(cpu_onednn, recurrent_weights_are_packed_once) {
    plx_runtime *rt = runtime_logging(NULL, 0, count_packings);
    onednn(rt);
    plx_lstm_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.struct_size = sizeof ld;
    ld.direction = PLX_RNN_BIDIRECTIONAL;
    ld.hidden_size = RHID;
    plx_rnn_default_activations(&ld.activations[0][0], 3);
    rnn_case lc = {PLX_OP_LSTM, &ld, PLX_RNN_BIDIRECTIONAL, NULL, false, false};
    unsigned nout = 0;
    plx_network *n = make_rnn(&lc, &nout);
    packings = 0;
    const char *only[] = {"cpu_onednn"};
    plx_loaded_network *ln = load(rt, n, only, 1, true, false, NULL);
    int at_load = packings;
    cr_assert(eq(int, at_load, 4), "%d packings at load, want W, R, B and P", at_load);
    plx_working_memory *wm = NULL;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    cr_assert(eq(int, packings, at_load), "a new working memory packed its weights again");
    plx_working_memory_destroy(&wm);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}
