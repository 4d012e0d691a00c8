/* gpu_cuda, the CUDA backend, end to end: the plug-in loads everywhere it
 * is built, and without a CUDA device it is unavailable with the driver's
 * reason; with one, its options, capabilities, a small network of its
 * operators against cpu_ref (planned device memory, each precision), a
 * second working memory, and the fallback of what it refuses.
 *
 * Without a device the tests that need one skip with the reason, unless
 * PLEXUS_REQUIRE_CUDA=1 is set, which makes that a failure. Runtimes see
 * only the build's gpu_cuda and cpu_ref, never the system's. The
 * operators one by one are test_ops_network's (ops_gpu_cuda). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <cuda_runtime_api.h>
#include <plexus/network.h>

#include "test_util.h"

#ifndef GPU_CUDA_DIR
#error "GPU_CUDA_DIR must be defined by the build"
#endif
#ifndef CPU_REF_DIR
#error "CPU_REF_DIR must be defined by the build"
#endif

/* ---- runtimes ------------------------------------------------------------ */

/* A runtime over gpu_cuda and cpu_ref with options for gpu_cuda
 * ("key=value" strings). */
static plx_runtime *runtime_with(const char *const *options, size_t option_count) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {GPU_CUDA_DIR, CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    plx_backend_option opts[4];
    tu_option_key keys[4];
    tu_backend_options("gpu_cuda", options, option_count, opts, keys, 4);
    o.backend_options = opts;
    o.backend_option_count = option_count;
    return tu_create(&o);
}

static bool cuda_required(void) {
    const char *v = getenv("PLEXUS_REQUIRE_CUDA");
    return v && strcmp(v, "1") == 0;
}

/* gpu_cuda of a runtime: available, or the test skips with the backend's
 * reason (fails with PLEXUS_REQUIRE_CUDA=1). */
static const plx_backend_info *require_gpu(plx_runtime **rt) {
    return tu_require_backend(rt, "gpu_cuda", "PLEXUS_REQUIRE_CUDA");
}

static void require_device(void) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_runtime_destroy(&rt);
}

static const plx_capability *cap(const plx_backend_info *b, const char *key,
                                 plx_value_type type) {
    const plx_capability *c = plx_backend_info_capability(b, key);
    cr_assert(not(zero(ptr, (void *)c)), "no capability %s", key);
    cr_assert(eq(int, c->type, type), "%s is not of type %d", key, (int)type);
    return c;
}

/* ---- availability: runs everywhere ---------------------------------------- */

/* The plug-in loads (ABI, descriptor, options) wherever it was built. On a
 * machine without a driver or device it is listed unavailable with a reason
 * that says so (the driver's own words after "no CUDA device: "), as
 * `plexus info` shows it; with one, it reports its device and the memory
 * capabilities of docs/gpu_cuda.md. */
Test(gpu_cuda, loads_and_reports_availability) {
    plx_runtime *rt = runtime_with(NULL, 0);
    const plx_backend_info *b = plx_runtime_find_backend(rt, "gpu_cuda");
    cr_assert(not(zero(ptr, (void *)b)), "gpu_cuda was not loaded: %s", tu_dump(rt));
    cr_assert(eq(str, (char *)b->name, "CUDA GPU backend"));
    if (!b->available) {
        cr_assert(not(zero(ptr, (void *)b->reason)));
        cr_assert(not(zero(ptr, strstr(b->reason, "no CUDA device"))), "%s", b->reason);
        cr_assert(not(cuda_required()), "PLEXUS_REQUIRE_CUDA=1, but gpu_cuda is unavailable: %s",
                  b->reason);
        /* cpu_ref is not affected. */
        const plx_backend_info *ref = plx_runtime_find_backend(rt, "cpu_ref");
        cr_assert(not(zero(ptr, (void *)ref)));
        cr_assert(ref->available);
        plx_runtime_destroy(&rt);
        return;
    }
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_ALLOCATES_PLANNED_MEMORY));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION));
    cr_assert(not(plx_backend_info_has_capability(b, PLX_CAP_IMPORT_MALLOC)));
    cr_assert(eq(str, (char *)cap(b, PLX_CAP_IMPORT_MEMORY_KINDS, PLX_VALUE_STRING)->string_value,
                 "gpu_cuda.device_ptr"));
    cr_assert(eq(str, (char *)cap(b, "gpu_cuda.precision", PLX_VALUE_STRING)->string_value,
                 "fp32"));
    const char *uuid = cap(b, "gpu_cuda.uuid", PLX_VALUE_STRING)->string_value;
    cr_assert(eq(int, strncmp(uuid, "GPU-", 4), 0), "%s", uuid);
    cr_assert(gt(i64, cap(b, "gpu_cuda.memory_bytes", PLX_VALUE_INT)->int_value, 0));
    plx_runtime_destroy(&rt);
}

/* ---- options ---------------------------------------------------------------- */

/* A bad option fails create, naming the option; cpu_ref is not affected. */
Test(gpu_cuda, bad_options_name_the_option) {
    require_device();
    static const struct {
        const char *option;
        const char *needle;
    } cases[] = {
        {"precision=fp64", "option precision: 'fp64' is not fp32, tf32, fp16 or bf16"},
        {"precision=", "option precision: '' is not"},
        {"device=99", "option device: '99' is neither a device index"},
        {"device=-1", "option device: '-1' is neither a device index"},
        {"device=", "option device: '' is neither a device index"},
        {"device=GPU-00000000-0000-0000-0000-000000000000", "option device: no CUDA device has UUID"},
        {"queued=maybe", "option queued: 'maybe' is not on or off"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *opt[] = {cases[i].option};
        plx_runtime *rt = runtime_with(opt, 1);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "gpu_cuda")), "%s",
                  cases[i].option);
        cr_assert(not(zero(ptr, (void *)tu_rejection_containing(rt, cases[i].needle))), "%s: %s",
                  cases[i].option, tu_dump(rt));
        cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "cpu_ref"))));
        plx_runtime_destroy(&rt);
    }
}

/* The device by index and by the UUID it reports, and each precision. */
Test(gpu_cuda, device_by_index_and_uuid_and_precisions) {
    plx_runtime *rt = runtime_with(NULL, 0);
    const plx_backend_info *b = require_gpu(&rt);
    char uuid[64], option[80];
    snprintf(uuid, sizeof uuid, "%s", cap(b, "gpu_cuda.uuid", PLX_VALUE_STRING)->string_value);
    plx_runtime_destroy(&rt);
    snprintf(option, sizeof option, "device=%s", uuid);
    const char *by_uuid[] = {option};
    rt = runtime_with(by_uuid, 1);
    b = require_gpu(&rt);
    cr_assert(eq(str, (char *)cap(b, "gpu_cuda.uuid", PLX_VALUE_STRING)->string_value, uuid));
    plx_runtime_destroy(&rt);
    const char *by_index[] = {"device=0"};
    rt = runtime_with(by_index, 1);
    require_gpu(&rt);
    plx_runtime_destroy(&rt);
    static const char *const precisions[] = {"fp32", "tf32", "fp16", "bf16"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(option, sizeof option, "precision=%s", precisions[i]);
        const char *opt[] = {option};
        rt = runtime_with(opt, 1);
        b = require_gpu(&rt);
        cr_assert(eq(str, (char *)cap(b, "gpu_cuda.precision", PLX_VALUE_STRING)->string_value,
                     (char *)precisions[i]));
        plx_runtime_destroy(&rt);
    }
}

/* ---- a network against cpu_ref ---------------------------------------------- */

#define ROWS 6
#define IN 40
#define HID 24
#define OUT 10

static float w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT];

static plx_tensor_info f32(uint32_t rank, int64_t d0, int64_t d1) {
    int64_t dims[2] = {d0, d1};
    return tu_f32(rank, dims);
}

/* The MLP's weights: small values in a fixed pattern. */
static void mlp_weights(void) {
    for (int i = 0; i < IN * HID; i++) {
        w1[i] = (float)((i * 37) % 23 - 11) / 40.0f;
    }
    for (int i = 0; i < HID * OUT; i++) {
        w2[i] = (float)((i * 29) % 19 - 9) / 20.0f;
    }
    for (int i = 0; i < HID; i++) {
        b1[i] = 0.05f * (float)(i % 7) - 0.15f;
    }
    for (int i = 0; i < OUT; i++) {
        b2[i] = 0.1f * (float)i - 0.5f;
    }
}

/* x [ROWS, IN] -> fully_connected(w1, b1) -> gelu -> matmul(w2) -> add(b2,
 * broadcast) -> softmax -> y, and reduce_mean of the matmul's rows as a
 * second output: cuBLASLt with and without its bias epilogue, pointwise,
 * broadcast, softmax and reduce kernels, several intermediate tensors in
 * planned device memory, four constants. */
static plx_network *mlp(void) {
    mlp_weights();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xt = f32(2, ROWS, IN), w1t = f32(2, IN, HID), b1t = f32(1, HID, 0),
                    w2t = f32(2, HID, OUT), b2t = f32(1, OUT, 0);
    plx_fully_connected_desc fc = PLX_FULLY_CONNECTED_DESC_INIT;
    plx_activation_desc gelu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_GELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_softmax_desc sm = PLX_SOFTMAX_DESC_INIT;
    plx_reduce_desc mean = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    mean.axes[0] = 1;
    mean.axis_count = 1;
    mean.keepdims = false;
    plx_layer_id x, cw1, cb1, cw2, cb2, l1, g, mm, a, s, r, y, y2;
    OK(plx_network_add_input(n, "x", 0, &xt, &x));
    OK(plx_network_add_constant(n, "w1", &w1t, w1, PLX_CONSTANT_BORROW, &cw1));
    OK(plx_network_add_constant(n, "b1", &b1t, b1, PLX_CONSTANT_BORROW, &cb1));
    OK(plx_network_add_constant(n, "w2", &w2t, w2, PLX_CONSTANT_BORROW, &cw2));
    OK(plx_network_add_constant(n, "b2", &b2t, b2, PLX_CONSTANT_BORROW, &cb2));
    OK(plx_network_add_layer(n, "fc", PLX_OP_FULLY_CONNECTED, &fc, 3, 1, &l1));
    OK(plx_network_add_layer(n, "gelu", PLX_OP_ACTIVATION, &gelu, 1, 1, &g));
    OK(plx_network_add_layer(n, "matmul", PLX_OP_MATMUL, NULL, 2, 1, &mm));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "softmax", PLX_OP_SOFTMAX, &sm, 1, 1, &s));
    OK(plx_network_add_layer(n, "mean", PLX_OP_REDUCE, &mean, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "mean", 1, &y2));
    OK(plx_network_connect(n, x, 0, l1, 0));
    OK(plx_network_connect(n, cw1, 0, l1, 1));
    OK(plx_network_connect(n, cb1, 0, l1, 2));
    OK(plx_network_connect(n, l1, 0, g, 0));
    OK(plx_network_connect(n, g, 0, mm, 0));
    OK(plx_network_connect(n, cw2, 0, mm, 1));
    OK(plx_network_connect(n, mm, 0, a, 0));
    OK(plx_network_connect(n, cb2, 0, a, 1));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, mm, 0, r, 0));
    OK(plx_network_connect(n, s, 0, y, 0));
    OK(plx_network_connect(n, r, 0, y2, 0));
    return n;
}

/* Optimises the network for `id` alone (no fallback: every layer must go
 * there), with zero copy of inputs and outputs, and loads it with
 * externally managed (planned) memory; the optimiser's summary into
 * `summary` when it is not NULL. */
static plx_loaded_network *load_on(plx_runtime *rt, plx_network *n, const char *id, bool async,
                                   char *summary, size_t summary_size) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *ids[] = {id};
    oo.backends = ids;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    oo.import_enabled = true;
    oo.export_enabled = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    if (summary) {
        snprintf(summary, summary_size, "%s", plx_optimized_network_summary(on));
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    lo.async_execution = async;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

/* The MLP loaded on gpu_cuda alone (load_on). */
static plx_loaded_network *mlp_on_gpu(plx_runtime *rt, bool async) {
    plx_network *n = mlp();
    plx_loaded_network *ln = load_on(rt, n, "gpu_cuda", async, NULL, 0);
    plx_network_destroy(&n);
    return ln;
}

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < ROWS * IN; i++) {
        x[i] = (float)((seed * 31u + (unsigned)i * 7u) % 97u) / 24.0f - 2.0f;
    }
}

/* Runs a network of one input and two outputs (the MLP, ...) bound as given. */
static plx_status run_bound(plx_loaded_network *ln, plx_working_memory *wm,
                            const plx_tensor_binding *in, const plx_tensor_binding *out) {
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = in;
    a.input_count = 1;
    a.outputs = out;
    a.output_count = 2;
    return plx_loaded_network_execute_with(ln, wm, &a);
}

static plx_status run(plx_loaded_network *ln, plx_working_memory *wm, const float *x, float *y,
                      float *mean) {
    plx_tensor_binding in = {0, (void *)x, ROWS * IN * sizeof *x, 0};
    plx_tensor_binding out[] = {{0, y, ROWS * OUT * sizeof *y, 0},
                                {1, mean, ROWS * sizeof *mean, 0}};
    return run_bound(ln, wm, &in, out);
}

static void assert_close(const float *got, const float *want, size_t count, double tolerance,
                         const char *what) {
    for (size_t i = 0; i < count; i++) {
        double err = fabs((double)got[i] - (double)want[i]);
        cr_assert(le(dbl, err, tolerance * (1.0 + fabs((double)want[i]))),
                  "%s[%zu]: %g, cpu_ref %g", what, i, (double)got[i], (double)want[i]);
    }
}

/* The MLP on gpu_cuda matches cpu_ref: in float32 closely, in tf32, fp16
 * and bf16 products as their mantissas allow (10, 10 and 7 bits: the
 * tolerance is a few units of the last of them over K = 40 products). A
 * release of the working memory frees the planned device buffers, and the
 * next run allocates them again. */
Test(gpu_cuda, mlp_matches_cpu_ref_in_each_precision) {
    require_device();
    static const struct {
        const char *precision;
        double tolerance;
    } cases[] = {{"precision=fp32", 1e-5}, {"precision=tf32", 2e-2},
                 {"precision=fp16", 2e-2}, {"precision=bf16", 1e-1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *opt[] = {cases[c].precision};
        plx_runtime *rt = runtime_with(opt, 1);
        require_gpu(&rt);
        plx_network *n = mlp();
        char summary[4096];
        plx_loaded_network *gpu = load_on(rt, n, "gpu_cuda", false, summary, sizeof summary);
        plx_loaded_network *ref = load_on(rt, n, "cpu_ref", false, NULL, 0);
        /* fc and its gelu are one layer: the product, then gelu in place. */
        cr_assert(not(zero(ptr, strstr(summary, "fully_connected+gelu"))), "%s", summary);
        plx_network_destroy(&n);
        for (unsigned round = 0; round < 3; round++) {
            float x[ROWS * IN], y[ROWS * OUT], m[ROWS], y0[ROWS * OUT], m0[ROWS];
            input_for(x, round);
            OK(run(gpu, NULL, x, y, m));
            OK(run(ref, NULL, x, y0, m0));
            assert_close(y, y0, ROWS * OUT, cases[c].tolerance, cases[c].precision);
            assert_close(m, m0, ROWS, cases[c].tolerance, cases[c].precision);
            if (round == 1) {
                plx_loaded_network_release_working_memory(gpu);
            }
        }
        plx_loaded_network_unload(&gpu);
        plx_loaded_network_unload(&ref);
        plx_runtime_destroy(&rt);
    }
}

/* The application's device memory, for zero-copy bindings. */
static plx_external_memory device_memory(void *ptr, uint64_t offset, uint64_t size) {
    plx_external_memory m = {sizeof m, "gpu_cuda.device_ptr", ptr, -1, offset, size, NULL, NULL};
    return m;
}

/* Queued with CUDA graphs (the default), queued launching layer by layer,
 * and not queued give the same bits, run after run with changing inputs:
 * the graph is captured at the second run and replayed after. */
Test(gpu_cuda, graphs_layer_by_layer_and_unqueued_give_identical_results) {
    enum { MODES = 3, ROUNDS = 4 };
    static float y[MODES][ROUNDS][ROWS * OUT], m[MODES][ROUNDS][ROWS];
    static const char *const modes[MODES][2] = {
        {"queued=on", "graphs=on"}, {"queued=on", "graphs=off"}, {"queued=off", "graphs=on"}};
    for (int q = 0; q < MODES; q++) {
        plx_runtime *rt = runtime_with(modes[q], 2);
        const plx_backend_info *b = require_gpu(&rt);
        cr_assert(eq(int, plx_backend_info_has_capability(b, PLX_CAP_QUEUED_EXECUTION), q < 2),
                  "%s", modes[q][0]);
        const plx_capability *graphs = cap(b, "gpu_cuda.graphs", PLX_VALUE_BOOL);
        cr_assert(eq(int, graphs->bool_value, q == 0), "%s %s", modes[q][0], modes[q][1]);
        plx_loaded_network *ln = mlp_on_gpu(rt, false);
        for (int round = 0; round < ROUNDS; round++) {
            float x[ROWS * IN];
            input_for(x, 11u + (unsigned)round);
            OK(run(ln, NULL, x, y[q][round], m[q][round]));
        }
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
    for (int q = 1; q < MODES; q++) {
        for (int round = 0; round < ROUNDS; round++) {
            cr_assert(eq(int, memcmp(y[0][round], y[q][round], sizeof y[0][round]), 0),
                      "mode %d, run %d", q, round);
            cr_assert(eq(int, memcmp(m[0][round], m[q][round], sizeof m[0][round]), 0),
                      "mode %d, run %d", q, round);
        }
    }
}

/* A replayed graph follows the application's device memory: inputs and
 * outputs bound to two sets of buffers in turn (each switch captures the
 * segment again and updates the executable graph) give each set its own
 * results, those of host bindings. */
Test(gpu_cuda, graphs_follow_rebound_device_memory) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_loaded_network *ln = mlp_on_gpu(rt, false);
    float x[2][ROWS * IN], want_y[2][ROWS * OUT], want_m[2][ROWS];
    void *dx[2], *dy[2], *dm[2];
    for (int k = 0; k < 2; k++) {
        input_for(x[k], 40u + (unsigned)k);
        OK(run(ln, NULL, x[k], want_y[k], want_m[k]));
        cr_assert(eq(int, cudaMalloc(&dx[k], sizeof x[k]), cudaSuccess));
        cr_assert(eq(int, cudaMalloc(&dy[k], sizeof want_y[k]), cudaSuccess));
        cr_assert(eq(int, cudaMalloc(&dm[k], sizeof want_m[k]), cudaSuccess));
        cr_assert(eq(int, cudaMemcpy(dx[k], x[k], sizeof x[k], cudaMemcpyHostToDevice),
                     cudaSuccess));
    }
    for (int round = 0; round < 8; round++) {
        int k = round / 2 % 2; /* A A B B A A B B: replays and switches */
        plx_external_memory ex = device_memory(dx[k], 0, sizeof x[k]),
                            ey = device_memory(dy[k], 0, sizeof want_y[k]),
                            em = device_memory(dm[k], 0, sizeof want_m[k]);
        plx_tensor_binding in = {0, &ex, sizeof x[k], PLX_MEMORY_SOURCE_EXTERNAL};
        plx_tensor_binding out[] = {{0, &ey, sizeof want_y[k], PLX_MEMORY_SOURCE_EXTERNAL},
                                    {1, &em, sizeof want_m[k], PLX_MEMORY_SOURCE_EXTERNAL}};
        cr_assert(eq(int, cudaMemset(dy[k], 0, sizeof want_y[k]), cudaSuccess));
        OK(run_bound(ln, NULL, &in, out));
        float y[ROWS * OUT], m[ROWS];
        cr_assert(eq(int, cudaMemcpy(y, dy[k], sizeof y, cudaMemcpyDeviceToHost), cudaSuccess));
        cr_assert(eq(int, cudaMemcpy(m, dm[k], sizeof m, cudaMemcpyDeviceToHost), cudaSuccess));
        cr_assert(eq(int, memcmp(y, want_y[k], sizeof y), 0), "run %d (set %d)", round, k);
        cr_assert(eq(int, memcmp(m, want_m[k], sizeof m), 0), "run %d (set %d)", round, k);
    }
    for (int k = 0; k < 2; k++) {
        cudaFree(dx[k]);
        cudaFree(dy[k]);
        cudaFree(dm[k]);
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* a profiled execution (after the graph was captured) traces each
 * launch as a "kernel" event under its layer on gpu_cuda's device track;
 * unprofiled runs before and after give the same results. */
Test(gpu_cuda, profiling_traces_kernels_with_their_layers) {
    static char text[1 << 20];
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_loaded_network *ln = mlp_on_gpu(rt, false);
    float x[ROWS * IN], y[3][ROWS * OUT], m[3][ROWS];
    input_for(x, 3);
    OK(run(ln, NULL, x, y[0], m[0]));
    OK(run(ln, NULL, x, y[0], m[0])); /* captured */
    OK(plx_runtime_enable_profiling(rt, true));
    OK(run(ln, NULL, x, y[1], m[1]));
    OK(plx_runtime_enable_profiling(rt, false));
    OK(run(ln, NULL, x, y[2], m[2])); /* replayed */
    tu_trace_text(rt, text, sizeof text);
    cr_assert(not(zero(ptr, strstr(text, "\"cat\":\"kernel\""))), "%.4000s", text);
    const char *layers[] = {"add", "softmax", "mean"};
    for (size_t i = 0; i < 3; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "\"args\":{\"layer\":\"%s\",\"backend\":\"gpu_cuda\"",
                 layers[i]);
        cr_assert(not(zero(ptr, strstr(text, needle))), "%s:\n%.4000s", needle, text);
    }
    for (int k = 1; k < 3; k++) {
        cr_assert(eq(int, memcmp(y[0], y[k], sizeof y[0]), 0), "run %d", k);
        cr_assert(eq(int, memcmp(m[0], m[k], sizeof m[0]), 0), "run %d", k);
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* Two working memories of one network (async_execution) each run on their
 * own streams and planned buffers, and give the same results as the
 * network's own. */
Test(gpu_cuda, second_working_memory_gives_the_same_results) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_loaded_network *ln = mlp_on_gpu(rt, true);
    plx_working_memory *wm;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    float x[ROWS * IN], y[ROWS * OUT], m[ROWS], y2[ROWS * OUT], m2[ROWS];
    input_for(x, 7);
    OK(run(ln, NULL, x, y, m));
    OK(run(ln, wm, x, y2, m2));
    cr_assert(eq(int, memcmp(y, y2, sizeof y), 0));
    cr_assert(eq(int, memcmp(m, m2, sizeof m), 0));
    plx_working_memory_destroy(&wm);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* x [ROWS, IN] -> gemm(w1 transposed, C = b1 [HID]) -> relu -> y: one
 * precompiled layer, gemm+relu, that cuBLASLt runs with its RELU_BIAS
 * epilogue; alpha 0.5 scales the product, not the bias. Against cpu_ref. */
Test(gpu_cuda, gemm_relu_epilogue_matches_cpu_ref) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    mlp_weights();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xt = f32(2, ROWS, IN), wt = f32(2, HID, IN), bt = f32(1, HID, 0);
    plx_gemm_desc gd = PLX_GEMM_DESC_INIT;
    gd.trans_b = true;
    gd.alpha = 0.5f;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, w, b, gm, r, y;
    OK(plx_network_add_input(n, "x", 0, &xt, &x));
    OK(plx_network_add_constant(n, "w", &wt, w1, PLX_CONSTANT_BORROW, &w));
    OK(plx_network_add_constant(n, "b", &bt, b1, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "gemm", PLX_OP_GEMM, &gd, 3, 1, &gm));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, gm, 0));
    OK(plx_network_connect(n, w, 0, gm, 1));
    OK(plx_network_connect(n, b, 0, gm, 2));
    OK(plx_network_connect(n, gm, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    char summary[4096];
    plx_loaded_network *gpu = load_on(rt, n, "gpu_cuda", false, summary, sizeof summary);
    plx_loaded_network *ref = load_on(rt, n, "cpu_ref", false, NULL, 0);
    plx_network_destroy(&n);
    cr_assert(not(zero(ptr, strstr(summary, "gemm+relu"))), "%s", summary);
    float xv[ROWS * IN], yv[ROWS * HID], y0[ROWS * HID];
    input_for(xv, 3);
    plx_tensor_binding in = {0, xv, sizeof xv, 0}, out = {0, yv, sizeof yv, 0},
                       out0 = {0, y0, sizeof y0, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    OK(plx_loaded_network_execute_with(gpu, NULL, &a));
    a.outputs = &out0;
    OK(plx_loaded_network_execute_with(ref, NULL, &a));
    assert_close(yv, y0, ROWS * HID, 1e-5, "gemm+relu");
    plx_loaded_network_unload(&gpu);
    plx_loaded_network_unload(&ref);
    plx_runtime_destroy(&rt);
}

/* Linear layers as ONNX exporters write them, a batched matmul by a shared
 * weight and the add of a bias, with a relu after or without: each becomes
 * one cuBLASLt product with its bias epilogue ("matmul+add+relu",
 * "matmul+add"), the batch folded into M, and matches cpu_ref. */
Test(gpu_cuda, linear_layers_fuse_their_bias_add) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    mlp_weights();
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t x_dims[3] = {2, ROWS, IN}; /* two sequences */
    plx_tensor_info xt = tu_f32(3, x_dims), wt = f32(2, IN, HID), bt = f32(1, HID, 0);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, w, b, mm[2], ad[2], r, y[2];
    OK(plx_network_add_input(n, "x", 0, &xt, &x));
    OK(plx_network_add_constant(n, "w", &wt, w1, PLX_CONSTANT_BORROW, &w));
    OK(plx_network_add_constant(n, "b", &bt, b1, PLX_CONSTANT_BORROW, &b));
    for (int k = 0; k < 2; k++) {
        char name[16];
        snprintf(name, sizeof name, "matmul%d", k);
        OK(plx_network_add_layer(n, name, PLX_OP_MATMUL, NULL, 2, 1, &mm[k]));
        snprintf(name, sizeof name, "add%d", k);
        OK(plx_network_add_layer(n, name, PLX_OP_BINARY, &add, 2, 1, &ad[k]));
        snprintf(name, sizeof name, "y%d", k);
        OK(plx_network_add_output(n, name, k, &y[k]));
        OK(plx_network_connect(n, x, 0, mm[k], 0));
        OK(plx_network_connect(n, w, 0, mm[k], 1));
        OK(plx_network_connect(n, mm[k], 0, ad[k], 0));
        OK(plx_network_connect(n, b, 0, ad[k], 1));
    }
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_connect(n, ad[0], 0, r, 0));
    OK(plx_network_connect(n, r, 0, y[0], 0));
    OK(plx_network_connect(n, ad[1], 0, y[1], 0));
    char summary[4096];
    plx_loaded_network *gpu = load_on(rt, n, "gpu_cuda", false, summary, sizeof summary);
    plx_loaded_network *ref = load_on(rt, n, "cpu_ref", false, NULL, 0);
    plx_network_destroy(&n);
    cr_assert(not(zero(ptr, strstr(summary, "(matmul+add+relu)"))), "%s", summary);
    cr_assert(not(zero(ptr, strstr(summary, "(matmul+add)"))), "%s", summary);
    float xv[2 * ROWS * IN], got[2][2 * ROWS * HID], want[2][2 * ROWS * HID];
    input_for(xv, 7);
    input_for(xv + ROWS * IN, 8);
    plx_tensor_binding in = {0, xv, sizeof xv, 0};
    plx_tensor_binding out[] = {{0, got[0], sizeof got[0], 0}, {1, got[1], sizeof got[1], 0}};
    plx_tensor_binding out0[] = {{0, want[0], sizeof want[0], 0},
                                 {1, want[1], sizeof want[1], 0}};
    OK(run_bound(gpu, NULL, &in, out));
    OK(run_bound(ref, NULL, &in, out0));
    assert_close(got[0], want[0], 2 * ROWS * HID, 1e-5, "matmul+add+relu");
    assert_close(got[1], want[1], 2 * ROWS * HID, 1e-5, "matmul+add");
    plx_loaded_network_unload(&gpu);
    plx_loaded_network_unload(&ref);
    plx_runtime_destroy(&rt);
}

/* Pointwise chains: a broadcast add, then relu and sigmoid, each alone
 * reading the one before, and a tanh then an erf, become one kernel each
 * ("add+relu+sigmoid", "tanh+erf") and match cpu_ref. */
Test(gpu_cuda, pointwise_chains_run_as_one_kernel) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    mlp_weights();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xt = f32(2, ROWS, HID), bt = f32(1, HID, 0);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU),
                        sigmoid = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID),
                        tanh_act = PLX_ACTIVATION_DESC_INIT(PLX_ACT_TANH);
    plx_unary_desc erf = PLX_UNARY_DESC_INIT(PLX_UNARY_ERF);
    plx_layer_id x, b, ad, r, sg, th, ef, y[2];
    OK(plx_network_add_input(n, "x", 0, &xt, &x));
    OK(plx_network_add_constant(n, "b", &bt, b1, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &ad));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_layer(n, "sigmoid", PLX_OP_ACTIVATION, &sigmoid, 1, 1, &sg));
    OK(plx_network_add_layer(n, "tanh", PLX_OP_ACTIVATION, &tanh_act, 1, 1, &th));
    OK(plx_network_add_layer(n, "erf", PLX_OP_UNARY, &erf, 1, 1, &ef));
    OK(plx_network_add_output(n, "y0", 0, &y[0]));
    OK(plx_network_add_output(n, "y1", 1, &y[1]));
    OK(plx_network_connect(n, x, 0, ad, 0));
    OK(plx_network_connect(n, b, 0, ad, 1));
    OK(plx_network_connect(n, ad, 0, r, 0));
    OK(plx_network_connect(n, r, 0, sg, 0));
    OK(plx_network_connect(n, sg, 0, y[0], 0));
    OK(plx_network_connect(n, x, 0, th, 0));
    OK(plx_network_connect(n, th, 0, ef, 0));
    OK(plx_network_connect(n, ef, 0, y[1], 0));
    char summary[4096];
    plx_loaded_network *gpu = load_on(rt, n, "gpu_cuda", false, summary, sizeof summary);
    plx_loaded_network *ref = load_on(rt, n, "cpu_ref", false, NULL, 0);
    plx_network_destroy(&n);
    cr_assert(not(zero(ptr, strstr(summary, "(add+relu+sigmoid)"))), "%s", summary);
    cr_assert(not(zero(ptr, strstr(summary, "(tanh+erf)"))), "%s", summary);
    float xv[ROWS * HID], got[2][ROWS * HID], want[2][ROWS * HID];
    for (int i = 0; i < ROWS * HID; i++) {
        xv[i] = (float)(i % 23) / 5.0f - 2.0f;
    }
    plx_tensor_binding in = {0, xv, sizeof xv, 0};
    plx_tensor_binding out[] = {{0, got[0], sizeof got[0], 0}, {1, got[1], sizeof got[1], 0}};
    plx_tensor_binding out0[] = {{0, want[0], sizeof want[0], 0},
                                 {1, want[1], sizeof want[1], 0}};
    OK(run_bound(gpu, NULL, &in, out));
    OK(run_bound(ref, NULL, &in, out0));
    assert_close(got[0], want[0], ROWS * HID, 1e-5, "add+relu+sigmoid");
    assert_close(got[1], want[1], ROWS * HID, 1e-5, "tanh+erf");
    plx_loaded_network_unload(&gpu);
    plx_loaded_network_unload(&ref);
    plx_runtime_destroy(&rt);
}

/* The application's device memory as the MLP's input and outputs, zero copy
 * (import_memory_kinds, R-26 (8)), at offsets within bigger allocations:
 * the same results as host bindings. A host pointer or an offset that
 * misaligns the floats is refused by gpu_cuda, too small a size by the
 * host, each naming the fault. */
Test(gpu_cuda, device_pointers_bind_zero_copy) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_loaded_network *ln = mlp_on_gpu(rt, false);
    float x[ROWS * IN], y0[ROWS * OUT], m0[ROWS], y[ROWS * OUT], m[ROWS];
    input_for(x, 5);
    OK(run(ln, NULL, x, y0, m0));

    const uint64_t off = 256;
    void *dx = NULL, *dy = NULL, *dm = NULL;
    cr_assert(eq(int, cudaMalloc(&dx, off + sizeof x), cudaSuccess));
    cr_assert(eq(int, cudaMalloc(&dy, off + sizeof y), cudaSuccess));
    cr_assert(eq(int, cudaMalloc(&dm, off + sizeof m), cudaSuccess));
    cr_assert(eq(int, cudaMemcpy((char *)dx + off, x, sizeof x, cudaMemcpyHostToDevice),
                 cudaSuccess));
    plx_external_memory ex = device_memory(dx, off, sizeof x),
                        ey = device_memory(dy, off, sizeof y),
                        em = device_memory(dm, off, sizeof m);
    plx_tensor_binding in = {0, &ex, sizeof x, PLX_MEMORY_SOURCE_EXTERNAL};
    plx_tensor_binding out[] = {{0, &ey, sizeof y, PLX_MEMORY_SOURCE_EXTERNAL},
                                {1, &em, sizeof m, PLX_MEMORY_SOURCE_EXTERNAL}};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = out;
    a.output_count = 2;
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    cr_assert(eq(int, cudaMemcpy(y, (char *)dy + off, sizeof y, cudaMemcpyDeviceToHost),
                 cudaSuccess));
    cr_assert(eq(int, cudaMemcpy(m, (char *)dm + off, sizeof m, cudaMemcpyDeviceToHost),
                 cudaSuccess));
    cr_assert(eq(int, memcmp(y, y0, sizeof y), 0));
    cr_assert(eq(int, memcmp(m, m0, sizeof m), 0));

    static float host[ROWS * IN];
    static const struct {
        int which; /* 0: a host pointer, 1: a misaligned offset, 2: too small */
        const char *needle;
    } bad[] = {{0, "is not device memory of CUDA device"},
               {1, "is not aligned to 4 bytes"},
               {2, "the tensor needs"}}; /* the host's own check */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ex = bad[i].which == 0   ? device_memory(host, 0, sizeof host)
             : bad[i].which == 1 ? device_memory(dx, 2, sizeof x)
                                 : device_memory(dx, 0, sizeof x - 4);
        plx_status st = plx_loaded_network_execute_with(ln, NULL, &a);
        cr_assert(not(zero(ptr, st)), "case %zu ran", i);
        cr_assert(not(zero(ptr, strstr(plx_status_get_message(st), bad[i].needle))), "%s",
                  plx_status_get_message(st));
        plx_status_free(st);
    }
    /* The network stays usable. */
    ex = device_memory(dx, off, sizeof x);
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dm);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* ---- convolutions through cuDNN ------------------------------------------ */

typedef struct conv_case {
    const char *name;
    uint32_t rank; /* X's and W's */
    int64_t x[5], w[5];
    bool bias;
    plx_conv_desc desc;
    /* conv_transpose when set (desc unused), with its output channels. */
    const plx_conv_transpose_desc *transpose;
    int64_t transpose_m;
} conv_case;

static size_t numel(const plx_tensor_info *t) {
    size_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= (size_t)t->dims[i];
    }
    return n;
}

static void fill(float *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        v[i] = (float)((seed * 131u + (unsigned)i * 37u) % 61u) / 30.0f - 1.0f;
    }
}

/* The conv (then `act`, when not NULL) on gpu_cuda alone with gpu_cuda's
 * options, against cpu_ref; the optimiser's summary must name `kind`
 * (the fused layer) when it is not NULL. */
static void conv_against_cpu_ref(const conv_case *cc, const plx_activation_desc *act,
                                 const char *const *options, size_t option_count,
                                 double tolerance, const char *kind) {
    const int64_t *m = cc->transpose ? &cc->transpose_m : &cc->w[0];
    plx_tensor_info infos[3] = {tu_f32(cc->rank, cc->x), tu_f32(cc->rank, cc->w), tu_f32(1, m)};
    size_t nx = numel(&infos[0]), nw = numel(&infos[1]), nb = (size_t)*m;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(nb * sizeof *b);
    cr_assert(x && w && b);
    fill(x, nx, 1);
    fill(w, nw, 2);
    fill(b, nb, 3);
    const void *data[3] = {NULL, w, b};
    plx_tensor_info yi;
    plx_network *n = tu_layer_network(cc->transpose ? PLX_OP_CONV_TRANSPOSE : PLX_OP_CONV,
                                      cc->transpose ? (const void *)cc->transpose : &cc->desc,
                                      infos, data, cc->bias ? 3 : 2, act, &yi);
    size_t ny = numel(&yi);
    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    cr_assert(want && got);
    plx_runtime *rt = runtime_with(options, option_count);
    require_gpu(&rt);
    char summary[4096];
    tu_run_network_on(rt, n, "cpu_ref", x, nx * sizeof *x, want, ny * sizeof *want, NULL, 0);
    tu_run_network_on(rt, n, "gpu_cuda", x, nx * sizeof *x, got, ny * sizeof *got, summary,
                      sizeof summary);
    if (kind) {
        cr_assert(not(zero(ptr, strstr(summary, kind))), "%s: %s", cc->name, summary);
    }
    char what[128];
    snprintf(what, sizeof what, "%s (%s)", cc->name, option_count ? options[0] : "defaults");
    assert_close(got, want, ny, tolerance, what);
    plx_runtime_destroy(&rt);
    plx_network_destroy(&n);
    free(x);
    free(w);
    free(b);
    free(want);
    free(got);
}

static conv_case conv_cases[7];
static plx_conv_transpose_desc transpose_2d, transpose_3d;

static void make_conv_cases(void) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    conv_case c2 = {"conv2d grouped, strided, dilated, asymmetric pads", 4, {2, 4, 9, 8},
                    {6, 2, 3, 2}, true, d, NULL, 0};
    c2.desc.group = 2;
    c2.desc.strides[0] = 2;
    c2.desc.dilations[1] = 2;
    c2.desc.pads_begin[0] = 1;
    c2.desc.pads_end[0] = 2;
    c2.desc.pads_end[1] = 1;
    conv_case dw = {"depthwise same_upper stride 2", 4, {1, 8, 10, 9}, {8, 1, 3, 3}, true, d, NULL,
                    0};
    dw.desc.group = 8;
    dw.desc.strides[0] = 2;
    dw.desc.strides[1] = 2;
    dw.desc.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    conv_case c1 = {"conv1d grouped, strided, dilated", 3, {2, 4, 17}, {4, 2, 3}, true, d,
                    NULL, 0};
    c1.desc.group = 2;
    c1.desc.strides[0] = 2;
    c1.desc.dilations[0] = 2;
    c1.desc.pads_begin[0] = 1;
    c1.desc.pads_end[0] = 2;
    conv_case c3 = {"conv3d same_lower", 5, {1, 3, 5, 6, 7}, {4, 3, 2, 3, 2}, false, d,
                    NULL, 0};
    c3.desc.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    c3.desc.strides[2] = 2;
    conv_case big = {"conv2d 3x3, 32 to 64 channels", 4, {2, 32, 20, 20}, {64, 32, 3, 3}, true,
                     d, NULL, 0};
    big.desc.pads_begin[0] = big.desc.pads_begin[1] = 1;
    big.desc.pads_end[0] = big.desc.pads_end[1] = 1;
    plx_conv_transpose_desc td = PLX_CONV_TRANSPOSE_DESC_INIT;
    transpose_2d = td;
    transpose_2d.group = 2;
    transpose_2d.strides[0] = transpose_2d.strides[1] = 2;
    transpose_2d.pads_begin[0] = 1;
    transpose_2d.output_padding[0] = 1;
    transpose_2d.output_padding[1] = 1;
    conv_case t2 = {"conv_transpose2d grouped, stride 2, output_padding", 4, {2, 4, 6, 5},
                    {4, 3, 3, 3}, true, d, &transpose_2d, 6};
    transpose_3d = td;
    transpose_3d.strides[2] = 2;
    transpose_3d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    conv_case t3 = {"conv_transpose3d same_upper", 5, {1, 2, 3, 4, 5}, {2, 3, 2, 3, 2}, false, d,
                    &transpose_3d, 3};
    conv_cases[0] = c2;
    conv_cases[1] = dw;
    conv_cases[2] = c1;
    conv_cases[3] = c3;
    conv_cases[4] = big;
    conv_cases[5] = t2;
    conv_cases[6] = t3;
}

/* Each case (conv, and conv_transpose as cuDNN's backward data) in each
 * precision: float32 (no engine with tensor cores or down-conversion)
 * closely; tf32, fp16 and bf16 as their mantissas allow (10, 10 and 7
 * bits, over up to 288 products of values within [-1, 1]). */
Test(gpu_cuda, conv_matches_cpu_ref_in_each_precision) {
    require_device();
    make_conv_cases();
    static const struct {
        const char *precision;
        double tolerance;
    } precisions[] = {{"precision=fp32", 1e-4}, {"precision=tf32", 2e-2},
                      {"precision=fp16", 2e-2}, {"precision=bf16", 1e-1}};
    for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++) {
        for (size_t c = 0; c < sizeof conv_cases / sizeof conv_cases[0]; c++) {
            const char *opt[] = {precisions[p].precision};
            conv_against_cpu_ref(&conv_cases[c], NULL, opt, 1, precisions[p].tolerance, NULL);
        }
    }
}

/* A conv read only by an activation becomes one layer, "conv+relu": relu
 * in cuDNN's graph with the bias where cuDNN has an engine for it (else
 * the bias and relu kernels after the convolution), leaky_relu always as
 * the kernel after it. */
Test(gpu_cuda, conv_fused_with_its_activation_matches_cpu_ref) {
    require_device();
    make_conv_cases();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_activation_desc leaky = PLX_ACTIVATION_DESC_INIT(PLX_ACT_LEAKY_RELU);
    plx_activation_desc gelu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_GELU);
    static const char *const precisions[] = {"precision=fp32", "precision=tf32"};
    for (size_t p = 0; p < 2; p++) {
        const char *opt[] = {precisions[p]};
        double tolerance = p == 0 ? 1e-4 : 2e-2;
        conv_against_cpu_ref(&conv_cases[4], &relu, opt, 1, tolerance, "conv+relu");
        conv_against_cpu_ref(&conv_cases[0], &relu, opt, 1, tolerance, "conv+relu");
        conv_against_cpu_ref(&conv_cases[3], &gelu, opt, 1, tolerance, "conv+gelu");
        conv_against_cpu_ref(&conv_cases[1], &leaky, opt, 1, tolerance, "conv+leaky_relu");
        conv_against_cpu_ref(&conv_cases[5], &relu, opt, 1, tolerance, "conv_transpose+relu");
    }
}

/* x -> conv (3x3, pads 1, bias) -> add(z, a constant of its shape) ->
 * relu -> y, a residual block's tail: one layer, "conv+add+relu", that
 * cuDNN runs as one graph where it has an engine for it (else the
 * convolution, then the bias, residual and relu kernels). */
Test(gpu_cuda, conv_add_relu_residual_matches_cpu_ref) {
    require_device();
    enum { N = 2, C = 16, H = 12, W = 10 };
    static float x[N * C * H * W], w[C * C * 9], b[C], z[N * C * H * W], want[N * C * H * W],
        got[N * C * H * W];
    fill(x, sizeof x / sizeof x[0], 1);
    fill(w, sizeof w / sizeof w[0], 2);
    fill(b, C, 3);
    fill(z, sizeof z / sizeof z[0], 4);
    int64_t xd[] = {N, C, H, W}, wd[] = {C, C, 3, 3}, bd[] = {C};
    plx_tensor_info xt = tu_f32(4, xd), wt = tu_f32(4, wd), bt = tu_f32(1, bd);
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.pads_begin[0] = cd.pads_begin[1] = cd.pads_end[0] = cd.pads_end[1] = 1;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id xi, cw, cb, cz, conv, sum, act, y;
    OK(plx_network_add_input(n, "x", 0, &xt, &xi));
    OK(plx_network_add_constant(n, "w", &wt, w, PLX_CONSTANT_BORROW, &cw));
    OK(plx_network_add_constant(n, "b", &bt, b, PLX_CONSTANT_BORROW, &cb));
    OK(plx_network_add_constant(n, "z", &xt, z, PLX_CONSTANT_BORROW, &cz));
    OK(plx_network_add_layer(n, "conv", PLX_OP_CONV, &cd, 3, 1, &conv));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &sum));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &act));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, xi, 0, conv, 0));
    OK(plx_network_connect(n, cw, 0, conv, 1));
    OK(plx_network_connect(n, cb, 0, conv, 2));
    OK(plx_network_connect(n, cz, 0, sum, 0));
    OK(plx_network_connect(n, conv, 0, sum, 1));
    OK(plx_network_connect(n, sum, 0, act, 0));
    OK(plx_network_connect(n, act, 0, y, 0));
    static const char *const precisions[] = {"precision=fp32", "precision=tf32"};
    for (size_t p = 0; p < 2; p++) {
        const char *opt[] = {precisions[p]};
        plx_runtime *rt = runtime_with(opt, 1);
        require_gpu(&rt);
        char summary[4096];
        tu_run_network_on(rt, n, "cpu_ref", x, sizeof x, want, sizeof want, NULL, 0);
        tu_run_network_on(rt, n, "gpu_cuda", x, sizeof x, got, sizeof got, summary,
                          sizeof summary);
        cr_assert(not(zero(ptr, strstr(summary, "conv+add+relu"))), "%s", summary);
        assert_close(got, want, sizeof got / sizeof got[0], p == 0 ? 1e-4 : 2e-2,
                     precisions[p]);
        plx_runtime_destroy(&rt);
    }
    plx_network_destroy(&n);
}

/* What gpu_cuda does not run goes to cpu_ref with gpu_cuda's reason. */
Test(gpu_cuda, refused_layers_fall_back_with_the_reason) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, 4, 4);
    plx_trilu_desc td = PLX_TRILU_DESC_INIT; /* the upper triangle */
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, tr, r, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "trilu", PLX_OP_TRILU, &td, 1, 1, &tr));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, tr, 0));
    OK(plx_network_connect(n, tr, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *ids[] = {"gpu_cuda", "cpu_ref"};
    oo.backends = ids;
    oo.backend_count = 2;
    oo.allow_fallback = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    bool trilu_seen = false, relu_seen = false;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (strcmp(a->layer_name, "trilu") == 0) {
            trilu_seen = true;
            cr_assert(eq(str, (char *)a->backend_id, "cpu_ref"));
            cr_assert(eq(sz, a->refusal_count, 1));
            cr_assert(not(zero(ptr, strstr(a->refusals[0].reason, "runs no trilu yet"))),
                      "%s", a->refusals[0].reason);
        } else if (strcmp(a->layer_name, "relu") == 0) {
            relu_seen = true;
            cr_assert(eq(str, (char *)a->backend_id, "gpu_cuda"));
        }
    }
    cr_assert(trilu_seen && relu_seen, "%s", plx_optimized_network_summary(on));
    plx_loaded_network *ln;
    plx_load_options lo;
    plx_load_options_init(&lo);
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    float xv[16], yv[16];
    for (int i = 0; i < 16; i++) {
        xv[i] = (float)i - 7.5f;
    }
    plx_tensor_binding in = {0, xv, sizeof xv, 0}, out = {0, yv, sizeof yv, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &a));
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            float v = j >= i ? xv[i * 4 + j] : 0.0f;
            float want = v > 0.0f ? v : 0.0f;
            cr_assert(eq(flt, yv[i * 4 + j], want), "y[%d][%d]", i, j);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* ---- a transformer-encoder block against cpu_ref ----------------------------- */

#define TB 2    /* batch */
#define TS 5    /* tokens */
#define TD 8    /* model width */
#define TH 2    /* heads */
#define TV 16   /* vocabulary */

static float t_embed[TV * TD], t_pos[TS * TD], t_ln_s[TD], t_ln_b[TD], t_wq[TD * TD],
    t_wk[TD * TD], t_wv[TD * TD], t_wo[2 * TD * TD], t_scale[1] = {0.5f}, t_neg[1] = {-1e9f};
static uint8_t t_keep[TS] = {1, 1, 1, 0, 1}; /* a padding mask over the keys */

static void fill_pattern(float *p, int n, int mul, int mod, float div) {
    for (int i = 0; i < n; i++) {
        p[i] = (float)((i * mul) % mod - mod / 2) / div;
    }
}

static plx_layer_id t_const(plx_network *n, const char *name, plx_dtype dt, uint32_t rank,
                            const int64_t *dims, const void *data) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    memcpy(t.dims, dims, rank * sizeof *dims);
    plx_layer_id id;
    OK(plx_network_add_constant(n, name, &t, data, PLX_CONSTANT_BORROW, &id));
    return id;
}

static plx_layer_id t_layer(plx_network *n, const char *name, plx_op op, const void *desc,
                            const plx_layer_id *ins, uint32_t count) {
    plx_layer_id id;
    OK(plx_network_add_layer(n, name, op, desc, count, 1, &id));
    for (uint32_t i = 0; i < count; i++) {
        OK(plx_network_connect(n, ins[i], 0, id, i));
    }
    return id;
}

static plx_layer_id t_heads(plx_network *n, const char *name, plx_layer_id x, bool keys) {
    char buf[32];
    plx_reshape_desc split = PLX_RESHAPE_DESC_INIT;
    split.rank = 4;
    split.dims[0] = TB;
    split.dims[1] = TS;
    split.dims[2] = TH;
    split.dims[3] = TD / TH;
    snprintf(buf, sizeof buf, "%s_split", name);
    plx_layer_id r = t_layer(n, buf, PLX_OP_RESHAPE, &split, &x, 1);
    plx_transpose_desc perm = PLX_TRANSPOSE_DESC_INIT; /* [B, H, S, d], keys [B, H, d, S] */
    perm.perm_count = 4;
    perm.perm[0] = 0;
    perm.perm[1] = 2;
    perm.perm[2] = keys ? 3 : 1;
    perm.perm[3] = keys ? 1 : 3;
    snprintf(buf, sizeof buf, "%s_heads", name);
    return t_layer(n, buf, PLX_OP_TRANSPOSE, &perm, &r, 1);
}

/* ids [B, S] (int64) -> gather(embedding) + positions -> layer_norm -> q, k,
 * v (matmul) -> heads (reshape, transpose) -> q k^T * scale -> where(mask,
 * ., -1e9) -> softmax -> . v -> transpose, reshape -> concat with the
 * normalised input -> matmul(wo) + the embedding -> y [B, S, D], and the
 * first token of y (slice) as a second output. */
static plx_network *encoder(void) {
    fill_pattern(t_embed, TV * TD, 37, 23, 10.0f);
    fill_pattern(t_pos, TS * TD, 11, 13, 20.0f);
    fill_pattern(t_ln_s, TD, 5, 7, 5.0f);
    fill_pattern(t_ln_b, TD, 3, 5, 10.0f);
    fill_pattern(t_wq, TD * TD, 29, 19, 20.0f);
    fill_pattern(t_wk, TD * TD, 31, 17, 20.0f);
    fill_pattern(t_wv, TD * TD, 23, 11, 10.0f);
    fill_pattern(t_wo, 2 * TD * TD, 19, 13, 20.0f);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info it;
    memset(&it, 0, sizeof it);
    it.dtype = PLX_DTYPE_INT64;
    it.rank = 2;
    it.dims[0] = TB;
    it.dims[1] = TS;
    plx_layer_id ids, y, first;
    OK(plx_network_add_input(n, "ids", 0, &it, &ids));
    const int64_t vd[] = {TV, TD}, sd[] = {TS, TD}, dd[] = {TD}, wd[] = {TD, TD},
                  wod[] = {2 * TD, TD}, one[] = {1}, kd[] = {TS};
    plx_axis_desc axis0 = PLX_AXIS_DESC_INIT(0), last = PLX_AXIS_DESC_INIT(-1);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_layer_norm_desc ln = PLX_LAYER_NORM_DESC_INIT;
    plx_softmax_desc sm = PLX_SOFTMAX_DESC_INIT;
    plx_layer_id in[3];
    in[0] = t_const(n, "embedding", PLX_DTYPE_FLOAT32, 2, vd, t_embed);
    in[1] = ids;
    plx_layer_id e = t_layer(n, "embed", PLX_OP_GATHER, &axis0, in, 2);
    in[0] = e;
    in[1] = t_const(n, "positions", PLX_DTYPE_FLOAT32, 2, sd, t_pos);
    plx_layer_id x = t_layer(n, "add_pos", PLX_OP_BINARY, &add, in, 2);
    in[0] = x;
    in[1] = t_const(n, "ln_scale", PLX_DTYPE_FLOAT32, 1, dd, t_ln_s);
    in[2] = t_const(n, "ln_bias", PLX_DTYPE_FLOAT32, 1, dd, t_ln_b);
    plx_layer_id h = t_layer(n, "ln", PLX_OP_LAYER_NORM, &ln, in, 3);
    static const char *const names[3] = {"q", "k", "v"};
    float *const weights[3] = {t_wq, t_wk, t_wv};
    plx_layer_id qkv[3];
    for (int i = 0; i < 3; i++) {
        char wname[8];
        snprintf(wname, sizeof wname, "w%s", names[i]);
        in[0] = h;
        in[1] = t_const(n, wname, PLX_DTYPE_FLOAT32, 2, wd, weights[i]);
        plx_layer_id p = t_layer(n, names[i], PLX_OP_MATMUL, NULL, in, 2);
        qkv[i] = t_heads(n, names[i], p, i == 1);
    }
    in[0] = qkv[0];
    in[1] = qkv[1];
    plx_layer_id s = t_layer(n, "scores", PLX_OP_MATMUL, NULL, in, 2);
    in[0] = s;
    in[1] = t_const(n, "scale", PLX_DTYPE_FLOAT32, 1, one, t_scale);
    s = t_layer(n, "scaled", PLX_OP_BINARY, &mul, in, 2);
    in[0] = t_const(n, "keep", PLX_DTYPE_BOOL, 1, kd, t_keep);
    in[1] = s;
    in[2] = t_const(n, "neg", PLX_DTYPE_FLOAT32, 1, one, t_neg);
    s = t_layer(n, "masked", PLX_OP_WHERE, NULL, in, 3);
    s = t_layer(n, "softmax", PLX_OP_SOFTMAX, &sm, &s, 1);
    in[0] = s;
    in[1] = qkv[2];
    plx_layer_id c = t_layer(n, "context", PLX_OP_MATMUL, NULL, in, 2);
    plx_transpose_desc back = PLX_TRANSPOSE_DESC_INIT;
    back.perm_count = 4;
    back.perm[0] = 0;
    back.perm[1] = 2;
    back.perm[2] = 1;
    back.perm[3] = 3;
    c = t_layer(n, "merge", PLX_OP_TRANSPOSE, &back, &c, 1);
    plx_reshape_desc flat = PLX_RESHAPE_DESC_INIT;
    flat.rank = 3;
    flat.dims[0] = TB;
    flat.dims[1] = TS;
    flat.dims[2] = TD;
    c = t_layer(n, "merged", PLX_OP_RESHAPE, &flat, &c, 1);
    in[0] = c;
    in[1] = h;
    c = t_layer(n, "concat", PLX_OP_CONCAT, &last, in, 2);
    in[0] = c;
    in[1] = t_const(n, "wo", PLX_DTYPE_FLOAT32, 2, wod, t_wo);
    c = t_layer(n, "out", PLX_OP_MATMUL, NULL, in, 2);
    in[0] = c;
    in[1] = x;
    c = t_layer(n, "residual", PLX_OP_BINARY, &add, in, 2);
    plx_slice_desc cls = PLX_SLICE_DESC_INIT;
    cls.count = 1;
    cls.axes[0] = 1;
    cls.starts[0] = 0;
    cls.ends[0] = 1;
    plx_layer_id f = t_layer(n, "first_token", PLX_OP_SLICE, &cls, &c, 1);
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "first", 1, &first));
    OK(plx_network_connect(n, c, 0, y, 0));
    OK(plx_network_connect(n, f, 0, first, 0));
    return n;
}

/* The encoder block wholly on gpu_cuda (no fallback: every layer, the
 * gather, layer_norm, transposes, reshapes, where, concat and slice
 * included, runs there) matches cpu_ref, with a negative token id too. */
Test(gpu_cuda, transformer_encoder_block_matches_cpu_ref) {
    plx_runtime *rt = runtime_with(NULL, 0);
    require_gpu(&rt);
    plx_network *n = encoder();
    plx_loaded_network *gpu = load_on(rt, n, "gpu_cuda", false, NULL, 0);
    plx_loaded_network *ref = load_on(rt, n, "cpu_ref", false, NULL, 0);
    plx_network_destroy(&n);
    int64_t ids[TB * TS] = {3, 15, 0, 7, -1, 9, 2, 2, 11, 5};
    float y[2][TB * TS * TD], f[2][TB * TD];
    plx_loaded_network *nets[2] = {gpu, ref};
    for (int k = 0; k < 2; k++) {
        plx_tensor_binding in = {0, ids, sizeof ids, 0};
        plx_tensor_binding out[] = {{0, y[k], sizeof y[k], 0}, {1, f[k], sizeof f[k], 0}};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &in;
        a.input_count = 1;
        a.outputs = out;
        a.output_count = 2;
        OK(plx_loaded_network_execute_with(nets[k], NULL, &a));
    }
    assert_close(y[0], y[1], TB * TS * TD, 1e-4, "y");
    assert_close(f[0], f[1], TB * TD, 1e-4, "first");
    plx_loaded_network_unload(&gpu);
    plx_loaded_network_unload(&ref);
    plx_runtime_destroy(&rt);
}
