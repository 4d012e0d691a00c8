/* The optimiser's backend-independent rewrites (network.h,
 * plx_optimize_options.graph_rewrites): each network runs on cpu_ref with
 * and without them and must give the same values; the notes name what was
 * rewritten, the assignment lists what is left, and what must not be
 * rewritten is not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

static plx_runtime *rt;

static void setup(void) {
    const char *paths[] = {CPU_REF_DIR};
    rt = tu_runtime(paths, 1);
}

static void teardown(void) {
    plx_runtime_destroy(&rt);
}

TestSuite(rewrite, .init = setup, .fini = teardown);

static plx_optimized_network *optimize(plx_network *n, bool rewrites) {
    const char *ids[] = {"cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    cr_assert(oo.graph_rewrites, "rewrites are not the default");
    oo.backends = ids;
    oo.backend_count = 1;
    oo.graph_rewrites = rewrites;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, n, &oo, &on));
    return on;
}

static bool has_layer(const plx_optimized_network *on, const char *name) {
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        if (strcmp(plx_optimized_network_layer(on, i)->layer_name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* The layers fused into layer `name` (plx_optimized_network_layer_fused_from),
 * joined with ", "; "" when none, "(no layer)" when it is absent. A static
 * buffer. */
static const char *fused_into(const plx_optimized_network *on, const char *name) {
    static char buf[256];
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        if (strcmp(plx_optimized_network_layer(on, i)->layer_name, name) != 0) {
            continue;
        }
        size_t len = 0;
        buf[0] = '\0';
        for (size_t k = 0; k < plx_optimized_network_layer_fused_count(on, i); k++) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", k ? ", " : "",
                                    plx_optimized_network_layer_fused_from(on, i, k));
            cr_assert(lt(sz, len, sizeof buf));
        }
        cr_assert(zero(ptr, (void *)plx_optimized_network_layer_fused_from(
                                on, i, plx_optimized_network_layer_fused_count(on, i))));
        return buf;
    }
    return "(no layer)";
}

/* Runs the network (one input binding 0, one output binding 0, of any
 * dtype: sizes in bytes). */
static void run_bytes(plx_network *n, bool rewrites, const void *x, size_t x_bytes, void *y,
                      size_t y_bytes, plx_optimized_network **keep) {
    plx_optimized_network *on = optimize(n, rewrites);
    plx_load_options lo;
    plx_load_options_init(&lo);
    plx_loaded_network *ln = NULL;
    /* Keep a second optimisation for the caller to inspect. */
    if (keep) {
        *keep = optimize(n, rewrites);
    }
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    plx_tensor_binding in = {0, (void *)x, x_bytes, 0};
    plx_tensor_binding out = {0, y, y_bytes, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    plx_loaded_network_unload(&ln);
}

/* The same with float32 input and output. */
static void run(plx_network *n, bool rewrites, const float *x, size_t x_count, float *y,
                size_t y_count, plx_optimized_network **keep) {
    run_bytes(n, rewrites, x, x_count * sizeof *x, y, y_count * sizeof *y, keep);
}

static void fill(float *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

static void assert_close(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        cr_assert(le(dbl, fabs((double)a[i] - b[i]), 1e-5 + 1e-5 * fabs((double)b[i])),
                  "[%zu] %g vs %g", i, (double)a[i], (double)b[i]);
    }
}

/* conv (3 -> 4 channels, 3x3, pad 1) [+ bias] -> batch_norm -> relu. */
#define C 3
#define M 4
#define H 5
static float w_data[M * C * 9], b_data[M], scale[M], shift[M], mean[M], var[M];

static plx_network *conv_bn(bool bias, bool conv_also_output) {
    fill(w_data, M * C * 9, 1);
    fill(b_data, M, 2);
    fill(scale, M, 3);
    fill(shift, M, 4);
    fill(mean, M, 5);
    fill(var, M, 6);
    for (int i = 0; i < M; i++) {
        var[i] = var[i] * var[i] + 0.5f;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, C, H, H}, wd[] = {M, C, 3, 3}, md[] = {M};
    plx_tensor_info xi = tu_f32(4, xd), wi = tu_f32(4, wd), mi = tu_f32(1, md);
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.pads_begin[0] = cd.pads_begin[1] = cd.pads_end[0] = cd.pads_end[1] = 1;
    plx_batch_norm_desc bd = PLX_BATCH_NORM_DESC_INIT;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, w, b, conv, s, sh, me, va, bn, r, y, y2;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "w", &wi, w_data, PLX_CONSTANT_BORROW, &w));
    OK(plx_network_add_layer(n, "conv", PLX_OP_CONV, &cd, bias ? 3 : 2, 1, &conv));
    OK(plx_network_add_constant(n, "scale", &mi, scale, PLX_CONSTANT_BORROW, &s));
    OK(plx_network_add_constant(n, "shift", &mi, shift, PLX_CONSTANT_BORROW, &sh));
    OK(plx_network_add_constant(n, "mean", &mi, mean, PLX_CONSTANT_BORROW, &me));
    OK(plx_network_add_constant(n, "var", &mi, var, PLX_CONSTANT_BORROW, &va));
    OK(plx_network_add_layer(n, "bn", PLX_OP_BATCH_NORM, &bd, 5, 1, &bn));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, conv, 0));
    OK(plx_network_connect(n, w, 0, conv, 1));
    if (bias) {
        OK(plx_network_add_constant(n, "b", &mi, b_data, PLX_CONSTANT_BORROW, &b));
        OK(plx_network_connect(n, b, 0, conv, 2));
    }
    OK(plx_network_connect(n, conv, 0, bn, 0));
    OK(plx_network_connect(n, s, 0, bn, 1));
    OK(plx_network_connect(n, sh, 0, bn, 2));
    OK(plx_network_connect(n, me, 0, bn, 3));
    OK(plx_network_connect(n, va, 0, bn, 4));
    OK(plx_network_connect(n, bn, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    if (conv_also_output) {
        OK(plx_network_add_output(n, "conv_out", 1, &y2));
        OK(plx_network_connect(n, conv, 0, y2, 0));
    }
    return n;
}

/* The batch-norm's arithmetic moves into the conv's weights and bias; the
 * application's borrowed constants are not written. */
Test(rewrite, batch_norm_folds_into_conv) {
    for (int bias = 0; bias < 2; bias++) {
        plx_network *n = conv_bn(bias, false);
        float w_before[M * C * 9], shift_before[M];
        memcpy(w_before, w_data, sizeof w_data);
        memcpy(shift_before, shift, sizeof shift);
        float x[C * H * H], y0[M * H * H], y1[M * H * H];
        fill(x, C * H * H, 7);
        plx_optimized_network *plain, *folded;
        run(n, false, x, C * H * H, y0, M * H * H, &plain);
        run(n, true, x, C * H * H, y1, M * H * H, &folded);
        assert_close(y1, y0, M * H * H);
        cr_assert(tu_noted(folded, "folded batch_norm 'bn' into conv 'conv'"));
        cr_assert(not(has_layer(folded, "bn")));
        /* Then cpu_ref fuses the conv with the relu it alone feeds now. */
        cr_assert(has_layer(folded, "conv+relu"));
        /* What it stands for: the conv with the batch_norm folded into it,
         * then the relu (plx_optimized_network_layer_fused_from). */
        cr_assert(eq(str, (char *)fused_into(folded, "conv+relu"), "conv, bn, relu"));
        cr_assert(eq(str, (char *)fused_into(plain, "bn"), ""));
        cr_assert(not(has_layer(folded, "mean")), "an unread constant was kept");
        cr_assert(has_layer(plain, "bn"));
        cr_assert(eq(sz, plx_optimized_network_note_count(plain), 0), "%s",
                  plx_optimized_network_note_count(plain) ? plx_optimized_network_note(plain, 0)
                                                          : "");
        cr_assert(eq(int, memcmp(w_before, w_data, sizeof w_data), 0), "W was written");
        cr_assert(eq(int, memcmp(shift_before, shift, sizeof shift), 0), "bias was written");
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&folded);
        plx_network_destroy(&n);
    }
}

/* A conv whose output something else reads keeps its batch-norm. */
Test(rewrite, batch_norm_stays_when_conv_output_is_shared) {
    plx_network *n = conv_bn(true, true);
    plx_optimized_network *on = optimize(n, true);
    cr_assert(has_layer(on, "bn"));
    cr_assert(not(tu_noted(on, "folded")));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
}

/* x -> transpose p -> transpose q -> relu -> y, with q undoing p (both go)
 * or not (one transpose with the composed permutation). */
static plx_network *two_transposes(const uint32_t *p, const uint32_t *q) {
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {2, 3, 4, 5};
    plx_tensor_info xi = tu_f32(4, xd);
    plx_transpose_desc t1 = PLX_TRANSPOSE_DESC_INIT, t2 = PLX_TRANSPOSE_DESC_INIT;
    memcpy(t1.perm, p, 4 * sizeof *p);
    t1.perm_count = 4;
    memcpy(t2.perm, q, 4 * sizeof *q);
    t2.perm_count = 4;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, a, b, r, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_layer(n, "t1", PLX_OP_TRANSPOSE, &t1, 1, 1, &a));
    OK(plx_network_add_layer(n, "t2", PLX_OP_TRANSPOSE, &t2, 1, 1, &b));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, a, 0, b, 0));
    OK(plx_network_connect(n, b, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    return n;
}

Test(rewrite, transposes_cancel_or_merge) {
    const uint32_t nhwc[] = {0, 2, 3, 1}, nchw[] = {0, 3, 1, 2}, swap[] = {1, 0, 2, 3};
    float x[120], y0[120], y1[120];
    fill(x, 120, 9);
    for (int cancel = 0; cancel < 2; cancel++) {
        plx_network *n = two_transposes(nhwc, cancel ? nchw : swap);
        plx_optimized_network *plain, *rw;
        run(n, false, x, 120, y0, 120, &plain);
        run(n, true, x, 120, y1, 120, &rw);
        cr_assert(eq(int, memcmp(y0, y1, sizeof y0), 0));
        cr_assert(not(has_layer(rw, "t1")));
        cr_assert(eq(int, has_layer(rw, "t2"), !cancel));
        cr_assert(tu_noted(rw, cancel ? "removed transposes 't1' and 't2', which cancel"
                                      : "merged transpose 't1' into transpose 't2'"));
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&rw);
        plx_network_destroy(&n);
    }
}

/* x -> reshape (same shape) -> cast (same dtype) -> pad (nothing) -> relu
 * -> y: the three go. */
Test(rewrite, identities_are_removed) {
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {2, 6};
    plx_tensor_info xi = tu_f32(2, xd);
    plx_reshape_desc rd = PLX_RESHAPE_DESC_INIT;
    rd.dims[0] = 2;
    rd.dims[1] = 6;
    rd.rank = 2;
    plx_cast_desc cd = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_pad_desc pd = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, a, b, c, r, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_layer(n, "same_shape", PLX_OP_RESHAPE, &rd, 1, 1, &a));
    OK(plx_network_add_layer(n, "same_dtype", PLX_OP_CAST, &cd, 1, 1, &b));
    OK(plx_network_add_layer(n, "no_pad", PLX_OP_PAD, &pd, 1, 1, &c));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, a, 0, b, 0));
    OK(plx_network_connect(n, b, 0, c, 0));
    OK(plx_network_connect(n, c, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    float xv[12], y0[12], y1[12];
    fill(xv, 12, 11);
    plx_optimized_network *plain, *rw;
    run(n, false, xv, 12, y0, 12, &plain);
    run(n, true, xv, 12, y1, 12, &rw);
    cr_assert(eq(int, memcmp(y0, y1, sizeof y0), 0));
    static const char *const gone[] = {"same_shape", "same_dtype", "no_pad"};
    for (int i = 0; i < 3; i++) {
        cr_assert(not(has_layer(rw, gone[i])), "%s kept", gone[i]);
        char note[96];
        snprintf(note, sizeof note, "'%s', whose output equals its input", gone[i]);
        cr_assert(tu_noted(rw, note), "no note: %s", note);
    }
    cr_assert(eq(sz, plx_optimized_network_layer_count(rw), 3)); /* x, relu, y */
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* An identity between a network input and output stays: the output would
 * read the input with no layer between. */
Test(rewrite, identity_between_input_and_output_stays) {
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {4};
    plx_tensor_info xi = tu_f32(1, xd);
    plx_cast_desc cd = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_layer_id x, c, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_layer(n, "cast", PLX_OP_CAST, &cd, 1, 1, &c));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, c, 0));
    OK(plx_network_connect(n, c, 0, y, 0));
    float xv[4] = {1, -2, 3, -4}, yv[4];
    plx_optimized_network *rw;
    run(n, true, xv, 4, yv, 4, &rw);
    cr_assert(has_layer(rw, "cast"));
    cr_assert(eq(int, memcmp(xv, yv, sizeof xv), 0));
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* constant [3,2] -> transpose -> add with x [2,3]: the constant is stored
 * transposed and the transpose goes. */
Test(rewrite, transpose_of_constant_is_folded) {
    static float k[6] = {1, 2, 3, 4, 5, 6};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t kd[] = {3, 2}, xd[] = {2, 3};
    plx_tensor_info ki = tu_f32(2, kd), xi = tu_f32(2, xd);
    plx_transpose_desc td = PLX_TRANSPOSE_DESC_INIT;
    td.perm[0] = 1;
    td.perm[1] = 0;
    td.perm_count = 2;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, c, t, a, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "k", &ki, k, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "kt", PLX_OP_TRANSPOSE, &td, 1, 1, &t));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, c, 0, t, 0));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, t, 0, a, 1));
    OK(plx_network_connect(n, a, 0, y, 0));
    float xv[6] = {0}, y0[6], y1[6];
    plx_optimized_network *plain, *rw;
    run(n, false, xv, 6, y0, 6, &plain);
    run(n, true, xv, 6, y1, 6, &rw);
    const float want[6] = {1, 3, 5, 2, 4, 6};
    cr_assert(eq(int, memcmp(y0, want, sizeof want), 0));
    cr_assert(eq(int, memcmp(y1, want, sizeof want), 0));
    cr_assert(not(has_layer(rw, "kt")));
    cr_assert(tu_noted(rw, "folded transpose 'kt' into constant 'k'"));
    const float orig[6] = {1, 2, 3, 4, 5, 6};
    cr_assert(eq(int, memcmp(k, orig, sizeof k), 0), "the borrowed constant was written");
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* The op of layer `name` in the optimised network, or PLX_OP_INVALID. */
static plx_op layer_op(const plx_optimized_network *on, const char *name) {
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(on, i);
        if (strcmp(l->layer_name, name) == 0) {
            return l->op;
        }
    }
    return PLX_OP_INVALID;
}

/* y = x + exp(a * b): mul and exp read only constants, so they are
 * evaluated once (cpu_ref's kernels) and exp becomes a constant; mul, a and
 * b, read by nothing any more, are dropped. The values are those of the
 * network run as built. */
Test(rewrite, layers_of_constants_are_folded) {
    static float av[6] = {0.5f, -1, 2, 0, 1.5f, -0.25f}, bv[6] = {2, 0.5f, -0.5f, 3, 1, 4};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t d[] = {2, 3};
    plx_tensor_info info = tu_f32(2, d);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_unary_desc ex = PLX_UNARY_DESC_INIT(PLX_UNARY_EXP);
    plx_layer_id x, a, b, m, e, s, y;
    OK(plx_network_add_input(n, "x", 0, &info, &x));
    OK(plx_network_add_constant(n, "a", &info, av, PLX_CONSTANT_BORROW, &a));
    OK(plx_network_add_constant(n, "b", &info, bv, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "m", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_layer(n, "e", PLX_OP_UNARY, &ex, 1, 1, &e));
    OK(plx_network_add_layer(n, "s", PLX_OP_BINARY, &add, 2, 1, &s));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, a, 0, m, 0));
    OK(plx_network_connect(n, b, 0, m, 1));
    OK(plx_network_connect(n, m, 0, e, 0));
    OK(plx_network_connect(n, x, 0, s, 0));
    OK(plx_network_connect(n, e, 0, s, 1));
    OK(plx_network_connect(n, s, 0, y, 0));
    float xv[6], y0[6], y1[6];
    fill(xv, 6, 9);
    plx_optimized_network *plain, *rw;
    run(n, false, xv, 6, y0, 6, &plain);
    run(n, true, xv, 6, y1, 6, &rw);
    for (int i = 0; i < 6; i++) {
        cr_assert(le(dbl, fabs((double)y0[i] - (xv[i] + exp((double)av[i] * bv[i]))), 1e-5),
                  "[%d]", i);
    }
    assert_close(y1, y0, 6);
    cr_assert(tu_noted(rw, "folded binary 'm' into a constant: its inputs are constants"));
    cr_assert(tu_noted(rw, "folded unary 'e' into a constant: its inputs are constants"));
    cr_assert(eq(int, layer_op(rw, "e"), PLX_OP_CONSTANT));
    cr_assert(eq(int, layer_op(rw, "m"), PLX_OP_INVALID));
    cr_assert(eq(int, layer_op(rw, "a"), PLX_OP_INVALID));
    cr_assert(eq(int, layer_op(rw, "s"), PLX_OP_BINARY));
    cr_assert(eq(int, layer_op(plain, "e"), PLX_OP_UNARY));
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* A layer of constants that a network output reads stays a layer (the
 * loader runs nothing between a constant and an output). */
Test(rewrite, layer_of_constants_feeding_an_output_stays) {
    static float av[6] = {1, 4, 9, 16, 25, 36};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t d[] = {2, 3};
    plx_tensor_info info = tu_f32(2, d);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, a, r, s, y, y2;
    OK(plx_network_add_input(n, "x", 0, &info, &x));
    OK(plx_network_add_constant(n, "a", &info, av, PLX_CONSTANT_BORROW, &a));
    OK(plx_network_add_layer(n, "r", PLX_OP_UNARY, &sq, 1, 1, &r));
    OK(plx_network_add_layer(n, "s", PLX_OP_BINARY, &add, 2, 1, &s));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "root", 1, &y2));
    OK(plx_network_connect(n, a, 0, r, 0));
    OK(plx_network_connect(n, x, 0, s, 0));
    OK(plx_network_connect(n, r, 0, s, 1));
    OK(plx_network_connect(n, s, 0, y, 0));
    OK(plx_network_connect(n, r, 0, y2, 0));
    plx_optimized_network *rw = optimize(n, true);
    cr_assert(eq(int, layer_op(rw, "r"), PLX_OP_UNARY));
    cr_assert(not(tu_noted(rw, "folded unary 'r'")));
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* cpu_ref's own optimisation: a conv, fully_connected or matmul read
 * only by an activation runs as one precompiled layer ("conv+relu"), with
 * the values of the two layers it replaces (cpu_ref option fusion=off). */
static plx_runtime *cpu_ref_with_fusion(const char *value) {
    plx_backend_option opt = {"cpu_ref", "fusion", value};
    return tu_runtime_with(CPU_REF_DIR, &opt, 1);
}

/* x -> base (op, desc; its weights w the constant wt) -> act -> y. */
static plx_network *product_then_activation(plx_op op, const void *desc,
                                            const plx_tensor_info *xi, const plx_tensor_info *wi,
                                            const float *wt, const plx_activation_desc *ad) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id x, w, b, a, y;
    OK(plx_network_add_input(n, "x", 0, xi, &x));
    OK(plx_network_add_constant(n, "w", wi, wt, PLX_CONSTANT_BORROW, &w));
    OK(plx_network_add_layer(n, "base", op, desc, 2, 1, &b));
    OK(plx_network_add_layer(n, "act", PLX_OP_ACTIVATION, ad, 1, 1, &a));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, b, 0));
    OK(plx_network_connect(n, w, 0, b, 1));
    OK(plx_network_connect(n, b, 0, a, 0));
    OK(plx_network_connect(n, a, 0, y, 0));
    return n;
}

/* Runs n with cpu_ref's fusion off (y0, *plain) and on (y1, *fused) and
 * checks that both give the same values. */
static void run_plain_and_fused(plx_network *n, const float *x, size_t in, float *y0, float *y1,
                                size_t out, plx_optimized_network **plain,
                                plx_optimized_network **fused) {
    plx_runtime *fused_rt = cpu_ref_with_fusion("on"), *plain_rt = cpu_ref_with_fusion("off");
    plx_runtime *keep = rt;
    rt = plain_rt;
    run(n, true, x, in, y0, out, plain);
    rt = fused_rt;
    run(n, true, x, in, y1, out, fused);
    rt = keep;
    assert_close(y1, y0, out);
    plx_runtime_destroy(&fused_rt);
    plx_runtime_destroy(&plain_rt);
}

Test(rewrite, cpu_ref_fuses_activations) {
    static const plx_op bases[] = {PLX_OP_CONV, PLX_OP_FULLY_CONNECTED, PLX_OP_MATMUL,
                                   PLX_OP_CONV};
    static const plx_activation_func funcs[] = {PLX_ACT_RELU, PLX_ACT_CLIP, PLX_ACT_SIGMOID,
                                                PLX_ACT_LEAKY_RELU};
    static float wt[M * C * 9];
    fill(wt, M * C * 9, 21);
    for (int i = 0; i < 4; i++) {
        const int64_t xd[] = {1, C, H, H}, wd[] = {M, C, 3, 3}, x2[] = {C, 9}, w3[] = {9, M};
        plx_tensor_info xi = tu_f32(bases[i] == PLX_OP_CONV ? 4 : 2,
                                 bases[i] == PLX_OP_CONV ? xd : x2);
        plx_tensor_info wi = tu_f32(bases[i] == PLX_OP_CONV ? 4 : 2,
                                 bases[i] == PLX_OP_CONV ? wd : w3);
        plx_conv_desc cd = PLX_CONV_DESC_INIT;
        plx_fully_connected_desc fd = PLX_FULLY_CONNECTED_DESC_INIT;
        const void *desc = bases[i] == PLX_OP_CONV ? (const void *)&cd
                           : bases[i] == PLX_OP_FULLY_CONNECTED ? (const void *)&fd
                                                                : NULL;
        plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(funcs[i]);
        /* clip's lower bound, or leaky_relu's slope */
        ad.alpha = funcs[i] == PLX_ACT_LEAKY_RELU ? 0.1f : 0.0f;
        ad.beta = 0.5f;
        plx_network *n = product_then_activation(bases[i], desc, &xi, &wi, wt, &ad);
        float xv[C * H * H], y0[M * H * H], y1[M * H * H];
        fill(xv, C * H * H, 23);
        size_t out = bases[i] == PLX_OP_CONV ? (size_t)M * (H - 2) * (H - 2) : (size_t)C * M;
        size_t in = bases[i] == PLX_OP_CONV ? (size_t)C * H * H : (size_t)C * 9;
        plx_optimized_network *plain, *fused;
        run_plain_and_fused(n, xv, in, y0, y1, out, &plain, &fused);
        char kind[64];
        snprintf(kind, sizeof kind, "replaced 2 layers by 'base+act' (%s+%s)",
                 plx_op_name(bases[i]), plx_activation_func_name(funcs[i]));
        cr_assert(tu_noted(fused, kind), "no note '%s'", kind);
        cr_assert(has_layer(fused, "base+act"));
        cr_assert(not(has_layer(fused, "base")));
        cr_assert(has_layer(plain, "base"));
        cr_assert(has_layer(plain, "act"));
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&fused);
        plx_network_destroy(&n);
    }
}

/* A fused matmul+relu large enough that cpu_ref reads its constant weights
 * packed (20 rows, K over two KC passes, N past whole panels): the fused
 * layer prepares them through its base operator and agrees with the two
 * layers unfused. */
Test(rewrite, cpu_ref_fused_product_reads_packed_weights) {
    enum { ROWS = 20, K = 300, N = 70 };
    static float wt[K * N], xv[ROWS * K], y0[ROWS * N], y1[ROWS * N];
    fill(wt, K * N, 31);
    fill(xv, ROWS * K, 32);
    const int64_t xd[] = {ROWS, K}, wd[] = {K, N};
    plx_tensor_info xi = tu_f32(2, xd), wi = tu_f32(2, wd);
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_network *n = product_then_activation(PLX_OP_MATMUL, NULL, &xi, &wi, wt, &ad);
    plx_optimized_network *plain, *fused;
    run_plain_and_fused(n, xv, ROWS * K, y0, y1, ROWS * N, &plain, &fused);
    cr_assert(has_layer(fused, "base+act"));
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&fused);
    plx_network_destroy(&n);
}

/* x * clip(x + 3, 0, 6) / 6 (or * (1/6)) as a network (x -> relu first, so
 * that x is a layer's output, as after a conv); `shared_clip`: the clip is
 * also an output, so nothing may fuse. */
static plx_network *hard_swish_chain(bool by_mul, bool shared_clip) {
    static float three = 3.0f, six = 6.0f, sixth = 1.0f / 6.0f;
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t d[] = {2, 8};
    plx_tensor_info info = tu_f32(2, d), scalar = tu_f32(0, NULL);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_activation_desc clip = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    clip.alpha = 0.0f;
    clip.beta = 6.0f;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_binary_desc last = PLX_BINARY_DESC_INIT(by_mul ? PLX_BINARY_MUL : PLX_BINARY_DIV);
    plx_layer_id x, r, c3, a, k, h, c6, q, y, y2;
    OK(plx_network_add_input(n, "x", 0, &info, &x));
    OK(plx_network_add_layer(n, "r", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "three", &scalar, &three, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "six", &scalar, by_mul ? &sixth : &six, PLX_CONSTANT_BORROW,
                                &c6));
    OK(plx_network_add_layer(n, "a", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "k", PLX_OP_ACTIVATION, &clip, 1, 1, &k));
    OK(plx_network_add_layer(n, "h", PLX_OP_BINARY, &mul, 2, 1, &h));
    OK(plx_network_add_layer(n, "q", PLX_OP_BINARY, &last, 2, 1, &q));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, c3, 0, a, 0)); /* 3 + x: either operand order */
    OK(plx_network_connect(n, r, 0, a, 1));
    OK(plx_network_connect(n, a, 0, k, 0));
    OK(plx_network_connect(n, k, 0, h, 0));
    OK(plx_network_connect(n, r, 0, h, 1));
    OK(plx_network_connect(n, h, 0, q, 0));
    OK(plx_network_connect(n, c6, 0, q, 1));
    OK(plx_network_connect(n, q, 0, y, 0));
    if (shared_clip) {
        OK(plx_network_add_output(n, "y2", 1, &y2));
        OK(plx_network_connect(n, k, 0, y2, 0));
    }
    return n;
}

Test(rewrite, hard_swish_chain_is_fused) {
    for (int by_mul = 0; by_mul < 2; by_mul++) {
        plx_network *n = hard_swish_chain(by_mul, false);
        float xv[16], y0[16], y1[16];
        fill(xv, 16, 5);
        for (int i = 0; i < 16; i++) {
            xv[i] *= 5.0f; /* both sides of -3 and 3 */
        }
        plx_optimized_network *plain, *rw;
        run(n, false, xv, 16, y0, 16, &plain);
        run(n, true, xv, 16, y1, 16, &rw);
        for (int i = 0; i < 16; i++) {
            double v = xv[i] > 0 ? xv[i] : 0.0;
            double want = v * fmin(fmax(v + 3.0, 0.0), 6.0) / 6.0;
            cr_assert(le(dbl, fabs((double)y0[i] - want), 1e-5), "[%d]", i);
        }
        assert_close(y1, y0, 16);
        cr_assert(tu_noted(rw, "fused 'a', 'k', 'h' and 'q' into a hard_swish"));
        cr_assert(eq(str, (char *)fused_into(rw, "q"), "a, k, h"));
        cr_assert(eq(int, layer_op(rw, "q"), PLX_OP_ACTIVATION));
        cr_assert(eq(int, layer_op(rw, "h"), PLX_OP_INVALID));
        cr_assert(eq(int, layer_op(rw, "k"), PLX_OP_INVALID));
        cr_assert(eq(int, layer_op(rw, "a"), PLX_OP_INVALID));
        cr_assert(eq(int, layer_op(plain, "q"), PLX_OP_BINARY));
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&rw);
        plx_network_destroy(&n);
    }
}

Test(rewrite, hard_swish_chain_with_a_shared_clip_stays) {
    plx_network *n = hard_swish_chain(false, true);
    plx_optimized_network *rw = optimize(n, true);
    cr_assert(eq(int, layer_op(rw, "q"), PLX_OP_BINARY));
    cr_assert(eq(int, layer_op(rw, "k"), PLX_OP_ACTIVATION));
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* The exact GELU written out as exporters do (x -> relu first, so that x is
 * a layer's output): q = x / sqrt 2 (by_mul: x * (1 / sqrt 2)), e =
 * erf(q), o = e + 1, then half_last: p = x * o, g = p * 0.5; else h = x *
 * 0.5, g = h * o. `shared`: e is also an output, so nothing may fuse. */
static plx_network *gelu_chain(bool by_mul, bool half_last, bool shared) {
    static float sqrt2 = 1.41421354f, rsqrt2 = 0.707106769f, one = 1.0f, half = 0.5f;
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t d[] = {2, 8};
    plx_tensor_info info = tu_f32(2, d), scalar = tu_f32(0, NULL);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc erf_d = PLX_UNARY_DESC_INIT(PLX_UNARY_ERF);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_binary_desc scale = PLX_BINARY_DESC_INIT(by_mul ? PLX_BINARY_MUL : PLX_BINARY_DIV);
    plx_layer_id x, r, cs, c1, ch, q, e, o, p, g, y, y2;
    OK(plx_network_add_input(n, "x", 0, &info, &x));
    OK(plx_network_add_layer(n, "r", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "s", &scalar, by_mul ? &rsqrt2 : &sqrt2, PLX_CONSTANT_BORROW,
                                &cs));
    OK(plx_network_add_constant(n, "one", &scalar, &one, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "half", &scalar, &half, PLX_CONSTANT_BORROW, &ch));
    OK(plx_network_add_layer(n, "q", PLX_OP_BINARY, &scale, 2, 1, &q));
    OK(plx_network_add_layer(n, "e", PLX_OP_UNARY, &erf_d, 1, 1, &e));
    OK(plx_network_add_layer(n, "o", PLX_OP_BINARY, &add, 2, 1, &o));
    OK(plx_network_add_layer(n, "p", PLX_OP_BINARY, &mul, 2, 1, &p));
    OK(plx_network_add_layer(n, "g", PLX_OP_BINARY, &mul, 2, 1, &g));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, q, 0));
    OK(plx_network_connect(n, cs, 0, q, 1));
    OK(plx_network_connect(n, q, 0, e, 0));
    OK(plx_network_connect(n, c1, 0, o, 0)); /* 1 + e: either operand order */
    OK(plx_network_connect(n, e, 0, o, 1));
    if (half_last) {
        OK(plx_network_connect(n, r, 0, p, 0));
        OK(plx_network_connect(n, o, 0, p, 1));
        OK(plx_network_connect(n, p, 0, g, 0));
        OK(plx_network_connect(n, ch, 0, g, 1));
    } else {
        OK(plx_network_connect(n, ch, 0, p, 0));
        OK(plx_network_connect(n, r, 0, p, 1));
        OK(plx_network_connect(n, o, 0, g, 0));
        OK(plx_network_connect(n, p, 0, g, 1));
    }
    OK(plx_network_connect(n, g, 0, y, 0));
    if (shared) {
        OK(plx_network_add_output(n, "y2", 1, &y2));
        OK(plx_network_connect(n, e, 0, y2, 0));
    }
    return n;
}

Test(rewrite, gelu_chain_is_fused) {
    for (int form = 0; form < 4; form++) {
        plx_network *n = gelu_chain(form & 1, form & 2, false);
        float xv[16], y0[16], y1[16];
        fill(xv, 16, 9);
        for (int i = 0; i < 16; i++) {
            xv[i] *= 4.0f;
        }
        plx_optimized_network *plain, *rw;
        run(n, false, xv, 16, y0, 16, &plain);
        run(n, true, xv, 16, y1, 16, &rw);
        for (int i = 0; i < 16; i++) {
            double v = xv[i] > 0 ? xv[i] : 0.0;
            double want = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            cr_assert(le(dbl, fabs((double)y1[i] - want), 1e-5 * fmax(1.0, want)), "[%d]", i);
        }
        assert_close(y1, y0, 16);
        cr_assert(tu_noted(rw, "fused 'q', 'e', 'o', 'p' and 'g' into a gelu"), "form %d",
                  form);
        cr_assert(eq(str, (char *)fused_into(rw, "g"), "q, e, o, p"), "form %d", form);
        cr_assert(eq(int, layer_op(rw, "g"), PLX_OP_ACTIVATION));
        for (const char *const *gone = (const char *const[]){"q", "e", "o", "p", NULL}; *gone;
             gone++) {
            cr_assert(eq(int, layer_op(rw, *gone), PLX_OP_INVALID), "%s", *gone);
        }
        cr_assert(eq(int, layer_op(plain, "g"), PLX_OP_BINARY));
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&rw);
        plx_network_destroy(&n);
    }
}

Test(rewrite, gelu_chain_with_a_shared_erf_stays) {
    plx_network *n = gelu_chain(false, true, true);
    plx_optimized_network *rw = optimize(n, true);
    cr_assert(eq(int, layer_op(rw, "g"), PLX_OP_BINARY));
    cr_assert(eq(int, layer_op(rw, "e"), PLX_OP_UNARY));
    plx_optimized_network_destroy(&rw);
    plx_network_destroy(&n);
}

/* x -> quantize -> dequantize -> conv (dequantize(int8 W, per channel),
 * dequantize(int32 B)) -> quantize -> dequantize -> y: with the rewrites
 * the conv runs on the quantized tensors (one int8 layer, the dequantizes
 * and the quantize after it gone), and gives what the float layers give to
 * one quantization step of the output. `b_scale_off` puts the bias's scale
 * off x's times W's, which keeps the float layers. */
/* Connects output 0 of each links[i][0] to input links[i][2] of
 * links[i][1]. */
static void connect_links(plx_network *n, const plx_layer_id (*links)[3], size_t count) {
    for (size_t i = 0; i < count; i++) {
        OK(plx_network_connect(n, links[i][0], 0, links[i][1], (uint32_t)links[i][2]));
    }
}

/* from -> quantize `q_name` (scale s, zero point z: z's dtype) ->
 * dequantize `dq_name`; returns the dequantize. */
static plx_layer_id add_qdq(plx_network *n, const char *q_name, const char *dq_name,
                            plx_layer_id from, plx_layer_id s, plx_layer_id z, plx_dtype q8) {
    plx_quantize_desc q = PLX_QUANTIZE_DESC_INIT(q8);
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_layer_id ql, dql;
    OK(plx_network_add_layer(n, q_name, PLX_OP_QUANTIZE, &q, 3, 1, &ql));
    OK(plx_network_add_layer(n, dq_name, PLX_OP_DEQUANTIZE, &dq, 3, 1, &dql));
    const plx_layer_id links[][3] = {{from, ql, 0}, {s, ql, 1}, {z, ql, 2},
                                     {ql, dql, 0},  {s, dql, 1}, {z, dql, 2}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    return dql;
}

#define QC 3
#define QM 4
#define QH 6
static int8_t qw[QM * QC * 9];
static int32_t qb[QM];
static float qw_scale[QM] = {0.01f, 0.02f, 0.015f, 0.03f}, qb_scale[QM];

static plx_network *qdq_conv(float b_scale_off) {
    for (int i = 0; i < QM * QC * 9; i++) {
        qw[i] = (int8_t)((i * 37) % 255 - 127);
    }
    const float sx = 0.0078125f, sy = 0.05f;
    for (int i = 0; i < QM; i++) {
        qb[i] = (i - 2) * 700;
        qb_scale[i] = sx * qw_scale[i] * b_scale_off;
    }
    static float sx_data[1] = {0.0078125f}, sy_data[1] = {0.05f};
    static uint8_t zx_data[1] = {128};
    static int8_t zy_data[1] = {-3}, zw_data[QM] = {0, 0, 0, 0};
    (void)sy;
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, QC, QH, QH}, wd[] = {QM, QC, 3, 3}, md[] = {QM};
    plx_tensor_info xi = tu_f32(4, xd), wi = tu_f32(4, wd), mi = tu_f32(1, md);
    wi.dtype = PLX_DTYPE_INT8;
    plx_tensor_info bi = mi, si = tu_f32(0, NULL), zxi = si, zyi = si, zwi = mi;
    bi.dtype = PLX_DTYPE_INT32;
    zxi.dtype = PLX_DTYPE_UINT8;
    zyi.dtype = PLX_DTYPE_INT8;
    zwi.dtype = PLX_DTYPE_INT8;
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    cd.pads_begin[0] = cd.pads_begin[1] = cd.pads_end[0] = cd.pads_end[1] = 1;
    plx_quantize_desc dqw = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    dqw.axis = 0;
    plx_layer_id x, sxl, zxl, w, swl, zwl, dw, b, sbl, db, conv, syl, zyl, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "sx", &si, sx_data, PLX_CONSTANT_BORROW, &sxl));
    OK(plx_network_add_constant(n, "zx", &zxi, zx_data, PLX_CONSTANT_BORROW, &zxl));
    OK(plx_network_add_constant(n, "w", &wi, qw, PLX_CONSTANT_BORROW, &w));
    OK(plx_network_add_constant(n, "sw", &mi, qw_scale, PLX_CONSTANT_BORROW, &swl));
    OK(plx_network_add_constant(n, "zw", &zwi, zw_data, PLX_CONSTANT_BORROW, &zwl));
    OK(plx_network_add_constant(n, "b", &bi, qb, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_constant(n, "sb", &mi, qb_scale, PLX_CONSTANT_BORROW, &sbl));
    OK(plx_network_add_constant(n, "sy", &si, sy_data, PLX_CONSTANT_BORROW, &syl));
    OK(plx_network_add_constant(n, "zy", &zyi, zy_data, PLX_CONSTANT_BORROW, &zyl));
    plx_layer_id d1 = add_qdq(n, "qx", "dqx", x, sxl, zxl, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "dqw", PLX_OP_DEQUANTIZE, &dqw, 3, 1, &dw));
    OK(plx_network_add_layer(n, "dqb", PLX_OP_DEQUANTIZE, &dqw, 2, 1, &db));
    OK(plx_network_add_layer(n, "conv", PLX_OP_CONV, &cd, 3, 1, &conv));
    plx_layer_id d2 = add_qdq(n, "qy", "dqy", conv, syl, zyl, PLX_DTYPE_INT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {
        {w, dw, 0},    {swl, dw, 1},  {zwl, dw, 2},   {b, db, 0}, {sbl, db, 1},
        {d1, conv, 0}, {dw, conv, 1}, {db, conv, 2}, {d2, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    return n;
}

Test(rewrite, qdq_conv_becomes_one_int8_layer) {
    plx_network *n = qdq_conv(1.0f);
    float x[QC * QH * QH], y0[QM * QH * QH], y1[QM * QH * QH];
    fill(x, QC * QH * QH, 11);
    plx_optimized_network *plain, *folded;
    run(n, false, x, QC * QH * QH, y0, QM * QH * QH, &plain);
    run(n, true, x, QC * QH * QH, y1, QM * QH * QH, &folded);
    cr_assert(tu_noted(folded, "quantized conv 'conv': dequantize, conv and quantize 'qy' run as "
                       "one int8 layer"));
    cr_assert(has_layer(folded, "conv"));
    cr_assert(eq(str, (char *)fused_into(folded, "conv"), "qy"));
    cr_assert(not(has_layer(folded, "qy")));
    cr_assert(not(has_layer(folded, "dqx")));
    cr_assert(not(has_layer(folded, "dqw")));
    cr_assert(has_layer(plain, "dqw"));
    /* one rounding in int8 against two in float: at most one step (0.05) */
    int differ = 0;
    for (int i = 0; i < QM * QH * QH; i++) {
        cr_assert(le(dbl, fabs((double)y1[i] - y0[i]), 0.05 + 1e-6), "[%d] %g vs %g", i,
                  (double)y1[i], (double)y0[i]);
        differ += y1[i] != y0[i];
    }
    cr_assert(le(int, differ, QM * QH * QH / 10), "%d of %d outputs differ by a step", differ,
              QM * QH * QH);
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

Test(rewrite, qdq_conv_with_a_foreign_bias_scale_stays_float) {
    plx_network *n = qdq_conv(1.5f);
    plx_optimized_network *on = optimize(n, true);
    cr_assert(not(tu_noted(on, "quantized conv")));
    cr_assert(has_layer(on, "qy"));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
}

/* x -> quantize -> dequantize -> max pool -> quantize (scale `sy`) ->
 * dequantize -> y: with the same parameters on both sides the pool runs on
 * the uint8 values and gives the float layers' result exactly; with others
 * it stays float. */
static plx_network *qdq_pool(float *sy) {
    static float sx[1] = {0.02f};
    static uint8_t zp[1] = {100};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 4, 4};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), zi = si;
    zi.dtype = PLX_DTYPE_UINT8;
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    pd.kernel[0] = pd.kernel[1] = 2;
    pd.strides[0] = pd.strides[1] = 2;
    plx_layer_id x, s1, s2, z, pool, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "sx", &si, sx, PLX_CONSTANT_BORROW, &s1));
    OK(plx_network_add_constant(n, "sy", &si, sy, PLX_CONSTANT_BORROW, &s2));
    OK(plx_network_add_constant(n, "z", &zi, zp, PLX_CONSTANT_BORROW, &z));
    plx_layer_id d1 = add_qdq(n, "qx", "dqx", x, s1, z, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "pool", PLX_OP_POOL, &pd, 1, 1, &pool));
    plx_layer_id d2 = add_qdq(n, "qy", "dqy", pool, s2, z, PLX_DTYPE_UINT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{d1, pool, 0}, {d2, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    return n;
}

Test(rewrite, qdq_max_pool_runs_on_the_8_bit_values) {
    static float same[1] = {0.02f}, other[1] = {0.03f};
    plx_network *n = qdq_pool(same);
    float x[32], y0[8], y1[8];
    fill(x, 32, 13);
    plx_optimized_network *plain, *folded;
    run(n, false, x, 32, y0, 8, &plain);
    run(n, true, x, 32, y1, 8, &folded);
    cr_assert(tu_noted(folded, "quantized pool 'pool': dequantize, pool and quantize 'qy'"));
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%d]", i);
    }
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
    n = qdq_pool(other);
    plx_optimized_network *on = optimize(n, true);
    cr_assert(not(tu_noted(on, "quantized pool")));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
}

/* x -> quantize (uint8) -> dequantize -> average pool (3x3, stride `stride`,
 * pads 1, ceil_mode, count_include_pad as asked) -> quantize (int8, other
 * parameters) -> dequantize -> y: the pool runs on the 8-bit tensors as
 * one layer (its exact integer sum requantized once) and gives the float
 * layers' values to one step of Y's scale. */
static void check_qdq_average_pool(int64_t stride, bool include_pad) {
    static float sx[1] = {0.02f}, sy[1] = {0.015f};
    static uint8_t zx[1] = {100};
    static int8_t zy[1] = {-5};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 6, 5};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), u8 = si, i8 = si;
    u8.dtype = PLX_DTYPE_UINT8;
    i8.dtype = PLX_DTYPE_INT8;
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    for (int i = 0; i < 2; i++) {
        pd.kernel[i] = 3;
        pd.strides[i] = stride;
        pd.pads_begin[i] = pd.pads_end[i] = 1;
    }
    pd.ceil_mode = true;
    pd.count_include_pad = include_pad;
    plx_layer_id x, c1, c2, c3, c4, pool, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "sx", &si, sx, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "sy", &si, sy, PLX_CONSTANT_BORROW, &c2));
    OK(plx_network_add_constant(n, "zx", &u8, zx, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "zy", &i8, zy, PLX_CONSTANT_BORROW, &c4));
    plx_layer_id d1 = add_qdq(n, "qx", "dqx", x, c1, c3, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "pool", PLX_OP_POOL, &pd, 1, 1, &pool));
    plx_layer_id d2 = add_qdq(n, "qy", "dqy", pool, c2, c4, PLX_DTYPE_INT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{d1, pool, 0}, {d2, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    /* stride 1: 6x5 windows; stride 2 with ceil_mode: 4x3 */
    size_t out_count = stride == 1 ? 2 * 6 * 5 : 2 * 4 * 3;
    float in[60], y0[60], y1[60];
    fill(in, 60, 31);
    plx_optimized_network *plain, *folded;
    run(n, false, in, 60, y0, out_count, &plain);
    run(n, true, in, 60, y1, out_count, &folded);
    cr_assert(tu_noted(folded, "quantized pool 'pool': dequantize, pool and quantize 'qy' run "
                       "as one int8 layer"));
    cr_assert(not(has_layer(folded, "dqx")));
    cr_assert(not(has_layer(folded, "qy")));
    cr_assert(has_layer(plain, "qy"));
    for (size_t i = 0; i < out_count; i++) {
        cr_assert(le(dbl, fabs((double)y1[i] - y0[i]), 0.015 + 1e-6), "[%zu] %g vs %g", i,
                  (double)y1[i], (double)y0[i]);
    }
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

Test(rewrite, qdq_average_pool_runs_on_the_quantized_tensors) {
    check_qdq_average_pool(1, false);
    check_qdq_average_pool(2, true);
}

/* x -> quantize -> dequantize -> `op` -> quantize (same parameters) ->
 * dequantize -> y: a nearest resize (2x) or a strided slice runs on the
 * uint8 values and gives the float layers' result exactly. */
static void check_qdq_move(plx_op op, const void *desc, size_t out_count, const char *note) {
    static float sx[1] = {0.02f};
    static uint8_t zp[1] = {100};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 4, 4};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), zi = si;
    zi.dtype = PLX_DTYPE_UINT8;
    plx_layer_id x, s, z, mid, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "s", &si, sx, PLX_CONSTANT_BORROW, &s));
    OK(plx_network_add_constant(n, "z", &zi, zp, PLX_CONSTANT_BORROW, &z));
    plx_layer_id d1 = add_qdq(n, "qx", "dqx", x, s, z, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "mid", op, desc, 1, 1, &mid));
    plx_layer_id d2 = add_qdq(n, "qy", "dqy", mid, s, z, PLX_DTYPE_UINT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{d1, mid, 0}, {d2, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    float in[32], y0[128], y1[128];
    fill(in, 32, 29);
    plx_optimized_network *plain, *folded;
    run(n, false, in, 32, y0, out_count, &plain);
    run(n, true, in, 32, y1, out_count, &folded);
    cr_assert(tu_noted(folded, note), "%s", note);
    cr_assert(not(has_layer(folded, "dqx")));
    for (size_t i = 0; i < out_count; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%zu]", i);
    }
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

Test(rewrite, qdq_nearest_resize_and_slice_run_on_the_8_bit_values) {
    plx_resize_desc r = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    r.scales[0] = r.scales[1] = 2.0f;
    check_qdq_move(PLX_OP_RESIZE, &r, 128, "quantized resize 'mid'");
    plx_slice_desc sl = PLX_SLICE_DESC_INIT;
    sl.count = 1;
    sl.axes[0] = 3;
    sl.starts[0] = 1;
    sl.ends[0] = 4;
    sl.steps[0] = 2;
    check_qdq_move(PLX_OP_SLICE, &sl, 16, "quantized slice 'mid'");
}

/* x -> quantize (two ways) -> dequantize -> add -> quantize -> dequantize:
 * the add runs on the quantized tensors and gives the float layers' values
 * exactly (the same float32 arithmetic in one pass). */
Test(rewrite, qdq_add_runs_on_the_quantized_tensors) {
    static float s1[1] = {0.02f}, s2[1] = {0.05f}, s3[1] = {0.04f};
    static uint8_t z1[1] = {100};
    static int8_t z2[1] = {-7}, z3[1] = {3};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 3, 3};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), u8 = si, i8 = si;
    u8.dtype = PLX_DTYPE_UINT8;
    i8.dtype = PLX_DTYPE_INT8;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id x, c1, c2, c3, c4, c5, c6, sum, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "s1", &si, s1, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "s2", &si, s2, PLX_CONSTANT_BORROW, &c2));
    OK(plx_network_add_constant(n, "s3", &si, s3, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "z1", &u8, z1, PLX_CONSTANT_BORROW, &c4));
    OK(plx_network_add_constant(n, "z2", &i8, z2, PLX_CONSTANT_BORROW, &c5));
    OK(plx_network_add_constant(n, "z3", &i8, z3, PLX_CONSTANT_BORROW, &c6));
    plx_layer_id da = add_qdq(n, "qa", "da", x, c1, c4, PLX_DTYPE_UINT8);
    plx_layer_id db = add_qdq(n, "qb", "db", x, c2, c5, PLX_DTYPE_INT8);
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &sum));
    plx_layer_id dy = add_qdq(n, "qy", "dy", sum, c3, c6, PLX_DTYPE_INT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{da, sum, 0}, {db, sum, 1}, {dy, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    float in[18], y0[18], y1[18];
    fill(in, 18, 17);
    plx_optimized_network *plain, *folded;
    run(n, false, in, 18, y0, 18, &plain);
    run(n, true, in, 18, y1, 18, &folded);
    cr_assert(tu_noted(folded, "quantized binary 'add': dequantize, add and quantize 'qy'"));
    cr_assert(eq(str, (char *)fused_into(folded, "add"), "qy"));
    cr_assert(not(has_layer(folded, "da")));
    for (int i = 0; i < 18; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%d]", i);
    }
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

/* A quantized add of a quantized scalar (the 3 of a hard-swish in a QDQ or
 * QOperator model: dequantize of constants) is a function of x alone: an
 * 8-bit table, not a quantized binary, with the float layers' values. Two
 * tensors keep the quantized binary (qdq_add_runs_on_the_quantized_tensors
 * above). */
Test(rewrite, qdq_add_of_a_quantized_scalar_becomes_a_table) {
    static float sx[1] = {0.03f}, sc[1] = {0.025f}, sy[1] = {0.05f};
    static uint8_t zx[1] = {120};
    static int8_t zc[1] = {0}, three[1] = {120}, zy[1] = {-20};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 3, 5};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), u8 = si, i8 = si;
    u8.dtype = PLX_DTYPE_UINT8;
    i8.dtype = PLX_DTYPE_INT8;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_layer_id x, c1, c2, c3, c4, c5, c6, c7, dc, sum, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "sx", &si, sx, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "sc", &si, sc, PLX_CONSTANT_BORROW, &c2));
    OK(plx_network_add_constant(n, "sy", &si, sy, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "zx", &u8, zx, PLX_CONSTANT_BORROW, &c4));
    OK(plx_network_add_constant(n, "zc", &i8, zc, PLX_CONSTANT_BORROW, &c5));
    OK(plx_network_add_constant(n, "three", &i8, three, PLX_CONSTANT_BORROW, &c6));
    OK(plx_network_add_constant(n, "zy", &i8, zy, PLX_CONSTANT_BORROW, &c7));
    plx_layer_id dx = add_qdq(n, "qx", "dqx", x, c1, c4, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "dq3", PLX_OP_DEQUANTIZE, &dq, 3, 1, &dc));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &sum));
    plx_layer_id dy = add_qdq(n, "qy", "dqy", sum, c3, c7, PLX_DTYPE_INT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{c6, dc, 0}, {c2, dc, 1}, {c5, dc, 2}, {dx, sum, 0},
                                     {dc, sum, 1}, {dy, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    float in[30], y0[30], y1[30];
    fill(in, 30, 31);
    for (int i = 0; i < 30; i++) {
        in[i] = in[i] * 8.0f - 4.0f;
    }
    plx_optimized_network *plain, *folded;
    run(n, false, in, 30, y0, 30, &plain);
    run(n, true, in, 30, y1, 30, &folded);
    cr_assert(tu_noted(folded, "quantized table 'qy': dequantize 'dqx', 1 elementwise layer and "
                       "quantize run as one lookup of the 256 results"));
    cr_assert(not(tu_noted(folded, "quantized binary")));
    cr_assert(not(has_layer(folded, "dq3")));
    cr_assert(not(has_layer(folded, "three")));
    cr_assert(eq(int, layer_op(folded, "qy"), PLX_OP_GATHER));
    int distinct = 0;
    for (int i = 0; i < 30; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%d]", i);
        distinct += i > 0 && y0[i] != y0[i - 1];
    }
    cr_assert(gt(int, distinct, 10), "the outputs should vary");
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

/* x quantized three ways (uint8 and int8 with other parameters, uint8 with
 * Y's) -> dequantize each -> concat along channels -> quantize (uint8) ->
 * dequantize -> y: the concat runs on the 8-bit tensors, requantizing the
 * first two as it copies, and gives the float layers' values exactly (the
 * same dequantize and quantize arithmetic per value). */
Test(rewrite, qdq_concat_of_differing_parameters_runs_on_the_quantized_tensors) {
    static float s1[1] = {0.013f}, s2[1] = {0.004f}, sy[1] = {0.008f};
    static uint8_t z1[1] = {90}, zy[1] = {131};
    static int8_t z2[1] = {-20};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 3, 3};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), u8 = si, i8 = si;
    u8.dtype = PLX_DTYPE_UINT8;
    i8.dtype = PLX_DTYPE_INT8;
    plx_axis_desc ax = PLX_AXIS_DESC_INIT(1);
    plx_layer_id x, c1, c2, c3, c4, c5, c6, cat, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "s1", &si, s1, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "s2", &si, s2, PLX_CONSTANT_BORROW, &c2));
    OK(plx_network_add_constant(n, "sy", &si, sy, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "z1", &u8, z1, PLX_CONSTANT_BORROW, &c4));
    OK(plx_network_add_constant(n, "z2", &i8, z2, PLX_CONSTANT_BORROW, &c5));
    OK(plx_network_add_constant(n, "zy", &u8, zy, PLX_CONSTANT_BORROW, &c6));
    plx_layer_id da = add_qdq(n, "qa", "da", x, c1, c4, PLX_DTYPE_UINT8);
    plx_layer_id db = add_qdq(n, "qb", "db", x, c2, c5, PLX_DTYPE_INT8);
    plx_layer_id dc = add_qdq(n, "qc", "dc", x, c3, c6, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "cat", PLX_OP_CONCAT, &ax, 3, 1, &cat));
    plx_layer_id dy = add_qdq(n, "qy", "dy", cat, c3, c6, PLX_DTYPE_UINT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{da, cat, 0}, {db, cat, 1}, {dc, cat, 2}, {dy, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    float in[18], y0[54], y1[54];
    fill(in, 18, 23);
    plx_optimized_network *plain, *folded;
    run(n, false, in, 18, y0, 54, &plain);
    run(n, true, in, 18, y1, 54, &folded);
    cr_assert(tu_noted(folded, "quantized concat 'cat': 3 dequantizes, concat and quantize 'qy' "
                       "run as one int8 layer"));
    cr_assert(eq(str, (char *)fused_into(folded, "cat"), "qy"));
    cr_assert(not(has_layer(folded, "da")));
    cr_assert(not(has_layer(folded, "db")));
    cr_assert(not(has_layer(folded, "qy")));
    cr_assert(has_layer(plain, "qy"));
    int moved = 0;
    for (int i = 0; i < 54; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%d]", i);
        moved += i < 36 && y1[i] != y1[36 + i % 18];
    }
    cr_assert(gt(int, moved, 0), "the requantized parts equal the copied one");
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
}

/* gather(dequantize(T), I) with T an int8 constant [6, 4]: the gather
 * reads T and the dequantize runs on the gathered rows only, per tensor
 * or per axis (T's axis 1, the gathered output's last), with the values
 * of the float path; a dequantize another layer also reads stays. */
static plx_network *gathered_table(bool per_axis, bool shared) {
    static int8_t t[24];
    static float s1[1] = {0.05f}, s4[4] = {0.01f, 0.02f, 0.04f, 0.08f};
    static int8_t z1[1] = {3}, z4[4] = {0, 1, -1, 2};
    for (int i = 0; i < 24; i++) {
        t[i] = (int8_t)(i * 11 - 120);
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info ti = tu_f32(2, (const int64_t[]){6, 4}), ii = tu_f32(2, (const int64_t[]){2, 3});
    plx_tensor_info si = per_axis ? tu_f32(1, (const int64_t[]){4}) : tu_f32(0, NULL), zi = si;
    ti.dtype = PLX_DTYPE_INT8;
    ii.dtype = PLX_DTYPE_INT64;
    zi.dtype = PLX_DTYPE_INT8;
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_axis_desc ax = PLX_AXIS_DESC_INIT(0);
    plx_layer_id idx, c, sc, zp, d, g, y, y2 = 0;
    OK(plx_network_add_input(n, "idx", 0, &ii, &idx));
    OK(plx_network_add_constant(n, "t", &ti, t, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_constant(n, "s", &si, per_axis ? s4 : s1, PLX_CONSTANT_BORROW, &sc));
    OK(plx_network_add_constant(n, "z", &zi, per_axis ? z4 : z1, PLX_CONSTANT_BORROW, &zp));
    OK(plx_network_add_layer(n, "dq", PLX_OP_DEQUANTIZE, &dq, 3, 1, &d));
    OK(plx_network_add_layer(n, "g", PLX_OP_GATHER, &ax, 2, 1, &g));
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{c, d, 0}, {sc, d, 1}, {zp, d, 2}, {d, g, 0},
                                     {idx, g, 1}, {g, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    if (shared) {
        OK(plx_network_add_output(n, "table", 1, &y2));
        OK(plx_network_connect(n, d, 0, y2, 0));
    }
    return n;
}

Test(rewrite, gather_reads_the_quantized_table_before_dequantize) {
    const int64_t idx[6] = {5, 0, -1, 2, 2, 3};
    for (int per_axis = 0; per_axis < 2; per_axis++) {
        plx_network *n = gathered_table(per_axis, false);
        float y0[24], y1[24];
        plx_optimized_network *plain, *moved;
        run_bytes(n, false, idx, sizeof idx, y0, sizeof y0, &plain);
        run_bytes(n, true, idx, sizeof idx, y1, sizeof y1, &moved);
        cr_assert(tu_noted(moved, "gather 'g' reads the quantized table before dequantize 'dq'"));
        for (int i = 0; i < 24; i++) {
            cr_assert(eq(flt, y1[i], y0[i]), "per_axis %d [%d]", per_axis, i);
        }
        /* row 5 of T, dequantized: (t - z) * s */
        for (int j = 0; j < 4; j++) {
            float s = per_axis ? (float[]){0.01f, 0.02f, 0.04f, 0.08f}[j] : 0.05f;
            int z = per_axis ? (int[]){0, 1, -1, 2}[j] : 3;
            cr_assert(eq(flt, y1[j], (float)((int8_t)((20 + j) * 11 - 120) - z) * s), "[%d]", j);
        }
        plx_optimized_network_destroy(&plain);
        plx_optimized_network_destroy(&moved);
        plx_network_destroy(&n);
    }
    plx_network *n = gathered_table(false, true);
    plx_optimized_network *on = optimize(n, true);
    cr_assert(not(tu_noted(on, "reads the quantized table")));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
}

/* x -> quantize (uint8) -> dequantize -> sigmoid -> div by a scalar (or
 * by a per-channel constant) -> quantize (int8) -> dequantize -> y: with a
 * scalar the chain becomes one lookup of a 256-entry table, which gives the
 * float layers' values exactly; a per-channel operand keeps it float. */
static plx_network *qdq_chain(bool per_channel) {
    static float sx[1] = {0.05f}, sy[1] = {0.004f}, six[2] = {6.0f, 3.0f};
    static uint8_t zx[1] = {128};
    static int8_t zy[1] = {-100};
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t xd[] = {1, 2, 3, 5}, cd[] = {1, 2, 1, 1};
    plx_tensor_info xi = tu_f32(4, xd), si = tu_f32(0, NULL), u8 = si, i8 = si;
    plx_tensor_info ci = per_channel ? tu_f32(4, cd) : tu_f32(0, NULL);
    u8.dtype = PLX_DTYPE_UINT8;
    i8.dtype = PLX_DTYPE_INT8;
    plx_activation_desc sig = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID);
    plx_binary_desc div = PLX_BINARY_DESC_INIT(PLX_BINARY_DIV);
    plx_layer_id x, c1, c2, c3, c4, c6, act, quot, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_constant(n, "sx", &si, sx, PLX_CONSTANT_BORROW, &c1));
    OK(plx_network_add_constant(n, "sy", &si, sy, PLX_CONSTANT_BORROW, &c2));
    OK(plx_network_add_constant(n, "zx", &u8, zx, PLX_CONSTANT_BORROW, &c3));
    OK(plx_network_add_constant(n, "zy", &i8, zy, PLX_CONSTANT_BORROW, &c4));
    OK(plx_network_add_constant(n, "six", &ci, six, PLX_CONSTANT_BORROW, &c6));
    plx_layer_id dx = add_qdq(n, "qx", "dqx", x, c1, c3, PLX_DTYPE_UINT8);
    OK(plx_network_add_layer(n, "sig", PLX_OP_ACTIVATION, &sig, 1, 1, &act));
    OK(plx_network_add_layer(n, "div", PLX_OP_BINARY, &div, 2, 1, &quot));
    plx_layer_id dy = add_qdq(n, "qy", "dqy", quot, c2, c4, PLX_DTYPE_INT8);
    OK(plx_network_add_output(n, "y", 0, &y));
    const plx_layer_id links[][3] = {{dx, act, 0}, {act, quot, 0}, {c6, quot, 1}, {dy, y, 0}};
    connect_links(n, links, sizeof links / sizeof links[0]);
    return n;
}

Test(rewrite, qdq_elementwise_chain_becomes_a_table) {
    plx_network *n = qdq_chain(false);
    float x[30], y0[30], y1[30];
    fill(x, 30, 23);
    for (int i = 0; i < 30; i++) {
        x[i] = x[i] * 12.0f - 6.0f; /* across sigmoid's range */
    }
    plx_optimized_network *plain, *folded;
    run(n, false, x, 30, y0, 30, &plain);
    run(n, true, x, 30, y1, 30, &folded);
    cr_assert(tu_noted(folded, "quantized table 'qy': dequantize 'dqx', 2 elementwise layers and "
                       "quantize run as one lookup of the 256 results"));
    cr_assert(not(has_layer(folded, "sig")));
    cr_assert(not(has_layer(folded, "div")));
    cr_assert(not(has_layer(folded, "six")));
    cr_assert(eq(int, layer_op(folded, "qy"), PLX_OP_GATHER));
    cr_assert(eq(str, (char *)fused_into(folded, "qy"), "sig, div"));
    cr_assert(eq(int, layer_op(folded, "dqx"), PLX_OP_CONSTANT));
    int distinct = 0;
    for (int i = 0; i < 30; i++) {
        cr_assert(eq(flt, y1[i], y0[i]), "[%d]", i);
        distinct += i > 0 && y0[i] != y0[i - 1];
    }
    cr_assert(gt(int, distinct, 10), "the outputs should vary");
    plx_optimized_network_destroy(&plain);
    plx_optimized_network_destroy(&folded);
    plx_network_destroy(&n);
    n = qdq_chain(true);
    plx_optimized_network *on = optimize(n, true);
    cr_assert(not(tu_noted(on, "quantized table")));
    cr_assert(has_layer(on, "sig"));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
}
