/* The sample backend (plugins/sample) runs layers: relu, add and gemm in
 * float32 (and their constants) on `sample`, and what it refuses falls back
 * to cpu_ref with the sample's reason. Results are checked against values
 * computed by hand; the same network runs with zero copy, dma-buf inputs,
 * and asynchronous execution over externally managed memory, which the
 * sample reports. The module paths come from meson. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

#ifndef CPU_REF_MODULE
#error "CPU_REF_MODULE must be defined by the build"
#endif
#ifndef SAMPLE_MODULE
#error "SAMPLE_MODULE must be defined by the build"
#endif

static plx_runtime *runtime(void) {
    const char *paths[] = {SAMPLE_MODULE, CPU_REF_MODULE};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0), "%s", tu_dump(rt));
    return rt;
}

static plx_tensor_info f32(uint32_t rank, int64_t d0, int64_t d1) {
    const int64_t dims[] = {d0, d1};
    return tu_f32(rank, dims);
}

static plx_layer_id constant(plx_network *n, const char *name, plx_tensor_info info,
                             const float *data) {
    plx_layer_id id;
    OK(plx_network_add_constant(n, name, &info, data, PLX_CONSTANT_BORROW, &id));
    return id;
}

/* x [2, 3] -> relu -> add (+ b [3], broadcast over the rows) -> gemm (W [3,
 * 2], C [2]) -> neg -> y [2, 2]. neg is unary, which the sample refuses. */
static const float bias[3] = {1, 2, 3};
static const float weights[6] = {1, 0, 0, 1, 1, 1};
static const float c_row[2] = {0.5f, -0.5f};

static plx_network *chain(void) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info x = f32(2, 2, 3);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_gemm_desc gemm = PLX_GEMM_DESC_INIT;
    plx_unary_desc neg = PLX_UNARY_DESC_INIT(PLX_UNARY_NEG);
    plx_layer_id in, r, a, g, ng, out;
    OK(plx_network_add_input(n, "x", 0, &x, &in));
    plx_layer_id b = constant(n, "b", f32(1, 3, 0), bias);
    plx_layer_id w = constant(n, "w", f32(2, 3, 2), weights);
    plx_layer_id c = constant(n, "c", f32(1, 2, 0), c_row);
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "gemm", PLX_OP_GEMM, &gemm, 3, 1, &g));
    OK(plx_network_add_layer(n, "neg", PLX_OP_UNARY, &neg, 1, 1, &ng));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, r, 0));
    OK(plx_network_connect(n, r, 0, a, 0));
    OK(plx_network_connect(n, b, 0, a, 1));
    OK(plx_network_connect(n, a, 0, g, 0));
    OK(plx_network_connect(n, w, 0, g, 1));
    OK(plx_network_connect(n, c, 0, g, 2));
    OK(plx_network_connect(n, g, 0, ng, 0));
    OK(plx_network_connect(n, ng, 0, out, 0));
    return n;
}

/* x, and y worked out by hand:
 *   relu(x)       = [[0, 2, 0], [4, 0, 6]]
 *   + [1, 2, 3]   = [[1, 4, 3], [5, 2, 9]]
 *   . W + C       = [[1 + 3, 4 + 3] + C, [5 + 9, 2 + 9] + C] = [[4.5, 6.5], [14.5, 10.5]]
 *   neg           = [[-4.5, -6.5], [-14.5, -10.5]] */
static const float chain_x[6] = {-1, 2, -3, 4, -5, 6};
static const float chain_y[4] = {-4.5f, -6.5f, -14.5f, -10.5f};

static plx_optimized_network *optimize(plx_runtime *rt, plx_network *n, bool zero_copy) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"sample", "cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 2;
    oo.import_enabled = zero_copy;
    oo.export_enabled = zero_copy;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    return on;
}

static const char *backend_of(const plx_optimized_network *on, const char *layer) {
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (!a->inserted && strcmp(a->layer_name, layer) == 0) {
            return a->backend_id;
        }
    }
    cr_fatal("no layer '%s'", layer);
    return NULL;
}

static void check_y(const float *y, const float *expect, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(flt, y[i], expect[i]), "%s: y[%zu] = %g, expected %g", what, i, (double)y[i],
                  (double)expect[i]);
    }
}

/* R-18 (1): relu, add and gemm (with their constants) run on the sample;
 * neg falls back to cpu_ref with the sample's reason, which does not
 * repeat the backend id (the host adds it). */
Test(sample, runs_its_layers_and_falls_back) {
    plx_runtime *rt = runtime();
    plx_network *n = chain();
    plx_optimized_network *on = optimize(rt, n, false);
    static const char *const on_sample[] = {"relu", "add", "gemm", "b", "w", "c"};
    for (size_t i = 0; i < sizeof on_sample / sizeof on_sample[0]; i++) {
        cr_assert(eq(str, (char *)backend_of(on, on_sample[i]), "sample"), "layer %s",
                  on_sample[i]);
    }
    cr_assert(eq(str, (char *)backend_of(on, "neg"), "cpu_ref"));
    const plx_layer_assignment *neg = NULL;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (!a->inserted && strcmp(a->layer_name, "neg") == 0) {
            neg = a;
        }
    }
    cr_assert(eq(sz, neg->refusal_count, 1));
    cr_assert(eq(str, (char *)neg->refusals[0].backend_id, "sample"));
    cr_assert(eq(str, (char *)neg->refusals[0].reason,
                 "no kernel for this operator (relu, add, gemm and constants only)"));
    const char *summary = plx_optimized_network_summary(on);
    cr_assert(not(zero(ptr, strstr(summary, "'neg' (unary) fell back from sample to cpu_ref"))),
              "%s", summary);

    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float y[4];
    float x[6];
    memcpy(x, chain_x, sizeof x);
    for (int run = 0; run < 2; run++) {
        memset(y, 0, sizeof y);
        plx_tensor_binding in = {0, x, sizeof x, 0};
        plx_tensor_binding out = {0, y, sizeof y, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
        check_y(y, chain_y, 4, "copied");
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A memfd holding `bytes` of `data`, standing in for a dma-buf. */
static int memfd_with(const void *data, size_t bytes) {
    int fd = memfd_create("plexus-sample", 0);
    cr_assert(ge(int, fd, 0));
    cr_assert(eq(int, ftruncate(fd, (off_t)bytes), 0));
    cr_assert(eq(sz, (size_t)pwrite(fd, data, bytes, 0), bytes));
    return fd;
}

/* R-17 (6), R-22: with import enabled the input is imported into the
 * sample's relu (zero copy), from host memory and from a dma-buf; R-20,
 * loaded for asynchronous execution the sample's tensors live in
 * memory the host plans, and a second working memory gives the same. */
Test(sample, zero_copy_dma_buf_and_async) {
    plx_runtime *rt = runtime();
    const plx_backend_info *b = plx_runtime_find_backend(rt, "sample");
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY));
    cr_assert(eq(u32, plx_backend_info_import_sources(b),
                 (uint32_t)(PLX_MEMORY_SOURCE_MALLOC | PLX_MEMORY_SOURCE_DMA_BUF)));
    plx_network *n = chain();
    for (int async = 0; async < 2; async++) {
        plx_optimized_network *on = optimize(rt, n, true);
        plx_load_options lo;
        plx_load_options_init(&lo);
        lo.async_execution = async;
        plx_loaded_network *ln;
        OK(plx_runtime_load_network(rt, &on, &lo, &ln));
        float x[6], y[4];
        memcpy(x, chain_x, sizeof x);
        plx_tensor_binding in = {0, x, sizeof x, PLX_MEMORY_SOURCE_MALLOC};
        plx_tensor_binding out = {0, y, sizeof y, PLX_MEMORY_SOURCE_MALLOC};
        OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
        check_y(y, chain_y, 4, async ? "async, malloc" : "malloc");
        cr_assert(eq(int, memcmp(x, chain_x, sizeof x), 0), "the input was written");

        int fd = memfd_with(chain_x, sizeof chain_x);
        plx_tensor_binding dma = {0, &fd, sizeof chain_x, PLX_MEMORY_SOURCE_DMA_BUF};
        memset(y, 0, sizeof y);
        OK(plx_loaded_network_execute(ln, &dma, 1, &out, 1));
        check_y(y, chain_y, 4, async ? "async, dma-buf" : "dma-buf");
        close(fd);

        if (async) {
            plx_working_memory *wm;
            OK(plx_loaded_network_create_working_memory(ln, &wm));
            plx_execute_args args;
            plx_execute_args_init(&args);
            args.inputs = &in;
            args.input_count = 1;
            args.outputs = &out;
            args.output_count = 1;
            memset(y, 0, sizeof y);
            OK(plx_loaded_network_execute_with(ln, wm, &args));
            check_y(y, chain_y, 4, "second working memory");
            plx_working_memory_destroy(&wm);
        }
        plx_loaded_network_unload(&ln);
    }
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* add broadcasts both operands ([3, 1] + [1, 2]); gemm transposes both
 * operands, scales by alpha and a [2, 1] C by beta:
 *   A = x + [10, 20]      = [[11, 21], [12, 22], [13, 23]]       (x = [1, 2, 3]^T)
 *   A^T B^T with B = [[1, 0, 1], [0, 1, 0]]
 *                         = [[11 + 13, 12], [21 + 23, 22]] = [[24, 12], [44, 22]]
 *   0.5 * that + 2 * [[1], [2]] = [[14, 8], [26, 15]] */
Test(sample, broadcasting_add_and_transposed_gemm) {
    plx_runtime *rt = runtime();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info x = f32(2, 3, 1);
    static const float row[2] = {10, 20}, bm[6] = {1, 0, 1, 0, 1, 0}, cm[2] = {1, 2};
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_gemm_desc gemm = {sizeof gemm, 0.5f, 2.0f, true, true};
    plx_layer_id in, a, g, out;
    OK(plx_network_add_input(n, "x", 0, &x, &in));
    plx_layer_id r = constant(n, "row", f32(2, 1, 2), row);
    plx_layer_id bl = constant(n, "b", f32(2, 2, 3), bm);
    plx_layer_id cl = constant(n, "c", f32(2, 2, 1), cm);
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "gemm", PLX_OP_GEMM, &gemm, 3, 1, &g));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, a, 0));
    OK(plx_network_connect(n, r, 0, a, 1));
    OK(plx_network_connect(n, a, 0, g, 0));
    OK(plx_network_connect(n, bl, 0, g, 1));
    OK(plx_network_connect(n, cl, 0, g, 2));
    OK(plx_network_connect(n, g, 0, out, 0));
    plx_optimized_network *on = optimize(rt, n, false);
    cr_assert(eq(str, (char *)backend_of(on, "add"), "sample"));
    cr_assert(eq(str, (char *)backend_of(on, "gemm"), "sample"));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float xv[3] = {1, 2, 3};
    const float expect[4] = {14, 8, 26, 15};
    float y[4];
    plx_tensor_binding ib = {0, xv, sizeof xv, 0};
    plx_tensor_binding ob = {0, y, sizeof y, 0};
    OK(plx_loaded_network_execute(ln, &ib, 1, &ob, 1));
    check_y(y, expect, 4, "broadcast and transposes");
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* R-18 (1), R-19 (3): what the sample refuses, and why, in its own words
 * (never its id): another activation, another binary function, another
 * dtype; the layers then run on cpu_ref. */
Test(sample, refusals_give_the_reason) {
    plx_runtime *rt = runtime();
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info x = f32(2, 2, 3);
    plx_activation_desc sig = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_cast_desc cast = PLX_CAST_DESC_INIT(PLX_DTYPE_INT32);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id in, s, m, c, a, out;
    OK(plx_network_add_input(n, "x", 0, &x, &in));
    OK(plx_network_add_layer(n, "sigmoid", PLX_OP_ACTIVATION, &sig, 1, 1, &s));
    OK(plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_layer(n, "cast", PLX_OP_CAST, &cast, 1, 1, &c));
    OK(plx_network_add_layer(n, "add_int", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, s, 0));
    OK(plx_network_connect(n, s, 0, m, 0));
    OK(plx_network_connect(n, s, 0, m, 1));
    OK(plx_network_connect(n, m, 0, c, 0));
    OK(plx_network_connect(n, c, 0, a, 0));
    OK(plx_network_connect(n, c, 0, a, 1));
    OK(plx_network_connect(n, a, 0, out, 0));
    plx_optimized_network *on = optimize(rt, n, false);
    static const char *const layer[] = {"sigmoid", "mul", "cast", "add_int"};
    static const char *const reason[] = {"runs activation relu only", "runs binary add only",
                                         "no kernel for this operator (relu, add, gemm and "
                                         "constants only)",
                                         "runs float32 only"};
    for (size_t k = 0; k < 4; k++) {
        const plx_layer_assignment *l = NULL;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *e = plx_optimized_network_layer(on, i);
            if (!e->inserted && strcmp(e->layer_name, layer[k]) == 0) {
                l = e;
            }
        }
        cr_assert(not(zero(ptr, (void *)l)));
        cr_assert(eq(str, (char *)l->backend_id, "cpu_ref"), "%s", layer[k]);
        cr_assert(eq(sz, l->refusal_count, 1));
        cr_assert(eq(str, (char *)l->refusals[0].reason, (char *)reason[k]), "%s", layer[k]);
    }
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}
