/* Tests of cpu_ref's 8-bit products (kernels_quant.c): conv and matmul on
 * quantized tensors, conv_integer, matmul_integer and dynamic_quantize,
 * called directly with hand-built layer views. Hand-derived cases (ONNX's
 * own examples among them) and seeded random cases against reference loops
 * written here, which follow the definitions in plexus/ops.h element by
 * element (window taps by coordinates, padding as X's zero point, the
 * requantization in float32 as the header specifies), independently of the
 * kernels' im2col, transposes and GEMM. Each random case runs twice: from
 * the inputs alone and with the constant weights prepared (packed) as a
 * workload would, which must give the same bytes. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "qmap.h"
#include <plexus/window.h>

#define KT_LAYER_NAME "Q1"
#include "kernel_test_util.h"


static bool is_signed(plx_dtype d) { return d == PLX_DTYPE_INT8; }
static int32_t qmin(plx_dtype d) { return is_signed(d) ? -128 : 0; }
static int32_t qmax(plx_dtype d) { return is_signed(d) ? 127 : 255; }
static int32_t ld(const void *p, plx_dtype d, size_t i) {
    return is_signed(d) ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}
static void st(void *p, plx_dtype d, size_t i, int32_t v) {
    if (is_signed(d)) {
        ((int8_t *)p)[i] = (int8_t)v;
    } else {
        ((uint8_t *)p)[i] = (uint8_t)v;
    }
}
static void fill_q(void *p, plx_dtype d, size_t n) {
    for (size_t i = 0; i < n; i++) st(p, d, i, (int32_t)rnd_i(qmin(d), qmax(d)));
}

/* Requantization as plexus/ops.h defines it. */
static int32_t requant(int32_t acc, float sx, float sw, float sy, int32_t zy, plx_dtype yd) {
    float v = nearbyintf((float)acc * (sx * sw / sy)) + (float)zy;
    return v < (float)qmin(yd) ? qmin(yd) : v > (float)qmax(yd) ? qmax(yd) : (int32_t)v;
}

static plx_quant_params per_tensor(float scale, int32_t zp) {
    plx_quant_params q;
    memset(&q, 0, sizeof q);
    q.kind = PLX_QUANT_PER_TENSOR;
    q.scale = scale;
    q.zero_point = zp;
    return q;
}

/* Runs the layer from its inputs, then with its constants prepared; the
 * second output must equal the first (checked here), which is returned. */
static bool run_both(plxk_run_fn fn, plx_layer_view *l, const void *const *ins, void *out,
                     size_t out_bytes, const bool *constant) {
    void *outs[] = {out};
    if (!run_layer(fn, l, ins, outs)) {
        return false;
    }
    const void *cst[8] = {0};
    for (uint32_t i = 0; i < l->input_count; i++) {
        cst[i] = constant[i] ? ins[i] : NULL;
    }
    l->input_constants = cst;
    const plxk_compute *c = test_compute();
    size_t need = plxk_kernel_prepare(l, c, NULL, 0);
    if (need == 0) {
        l->input_constants = NULL;
        return true;
    }
    void *prep = aligned_alloc(64, (need + 63) / 64 * 64);
    cr_assert(prep != NULL);
    cr_assert(eq(sz, plxk_kernel_prepare(l, c, prep, need), need));
    void *again = malloc(out_bytes);
    cr_assert(again != NULL);
    void *outs2[] = {again};
    plxk_kernel_args a = {.layer = l, .inputs = ins, .outputs = outs2, .error = g_err,
                          .error_size = sizeof g_err, .compute = c, .prepared = prep};
    bool ok = plxk_kernel_run_once(fn, &a);
    cr_assert(ok, "prepared run failed: %s", g_err);
    cr_assert(memcmp(out, again, out_bytes) == 0, "the prepared run gives other bytes");
    free(again);
    free(prep);
    l->input_constants = NULL;
    return true;
}

static plxk_run_fn lookup(plx_op op) {
    plxk_check_fn check;
    plxk_run_fn run;
    cr_assert(plxk_kernel_lookup(op, &check, &run) && run);
    return run;
}

static const char *check_of(plx_op op, const plx_layer_view *l, char *buf, size_t size) {
    plxk_check_fn check;
    plxk_run_fn run;
    cr_assert(plxk_kernel_lookup(op, &check, &run) && check);
    return check(l, buf, size);
}

/* ---- conv on quantized tensors and conv_integer ------------------------ */

typedef struct conv_case {
    int64_t n, c, h, w, m, kh, kw, group, stride, dil, pad;
    bool one_d; /* X [N, C, W], W [M, C/g, kw] */
    plx_dtype xd, wd, yd;
    bool per_axis, bias, integer, zp_inputs, w_zp_per_channel;
    bool same_zw; /* per-axis W whose zero points are all equal */
} conv_case;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p) {
    return (in + 2 * p - (d * (k - 1) + 1)) / s + 1;
}

static void run_conv_case(const conv_case *cc) {
    int64_t kh = cc->one_d ? 1 : cc->kh, h = cc->one_d ? 1 : cc->h;
    int64_t oh = cc->one_d ? 1 : out_dim(h, kh, cc->stride, cc->dil, cc->pad);
    int64_t ow = out_dim(cc->w, cc->kw, cc->stride, cc->dil, cc->pad);
    int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    int sp = cc->one_d ? 1 : 2;
    for (int i = 0; i < sp; i++) {
        d.strides[i] = cc->stride;
        d.dilations[i] = cc->dil;
        d.pads_begin[i] = d.pads_end[i] = cc->pad;
    }
    d.group = cc->group;
    plx_tensor_info in[4], y;
    if (cc->one_d) {
        in[0] = info(cc->xd, SHAPE(cc->n, cc->c, cc->w));
        in[1] = info(cc->wd, SHAPE(cc->m, cg, cc->kw));
        y = info(cc->integer ? PLX_DTYPE_INT32 : cc->yd, SHAPE(cc->n, cc->m, ow));
    } else {
        in[0] = info(cc->xd, SHAPE(cc->n, cc->c, h, cc->w));
        in[1] = info(cc->wd, SHAPE(cc->m, cg, kh, cc->kw));
        y = info(cc->integer ? PLX_DTYPE_INT32 : cc->yd, SHAPE(cc->n, cc->m, oh, ow));
    }
    float sx = 0.02f + (float)rnd_i(0, 100) * 1e-4f, sy = 0.05f + (float)rnd_i(0, 100) * 1e-3f;
    int32_t zx = (int32_t)rnd_i(qmin(cc->xd), qmax(cc->xd)), zy = (int32_t)rnd_i(qmin(cc->yd), qmax(cc->yd));
    float *sw = malloc((size_t)cc->m * sizeof *sw);
    int32_t *zw = malloc((size_t)cc->m * sizeof *zw);
    uint8_t zw_bytes[512];
    bool zw_per = cc->integer ? cc->w_zp_per_channel : cc->per_axis;
    for (int64_t j = 0; j < cc->m; j++) {
        sw[j] = zw_per || j == 0 ? 0.001f + (float)rnd_i(1, 50) * 1e-4f : sw[0];
        zw[j] = (zw_per && !cc->same_zw) || j == 0 ? (int32_t)rnd_i(qmin(cc->wd) / 4, qmax(cc->wd) / 4)
                                                   : zw[0];
        st(zw_bytes, cc->wd, (size_t)j, zw[j]);
    }
    uint32_t nin = 2;
    if (cc->integer) {
        if (!cc->zp_inputs) {
            zx = 0;
            for (int64_t j = 0; j < cc->m; j++) zw[j] = 0;
        } else {
            in[2] = info(cc->xd, SCALAR);
            in[3] = cc->w_zp_per_channel ? info(cc->wd, SHAPE(cc->m)) : info(cc->wd, SCALAR);
            nin = 4;
        }
    } else {
        in[0].quant = per_tensor(sx, zx);
        if (cc->per_axis) {
            memset(&in[1].quant, 0, sizeof in[1].quant);
            in[1].quant.kind = PLX_QUANT_PER_AXIS;
            in[1].quant.axis = 0;
            in[1].quant.scales = sw;
            in[1].quant.zero_points = zw;
        } else {
            in[1].quant = per_tensor(sw[0], zw[0]);
        }
        y.quant = per_tensor(sy, zy);
        if (cc->bias) {
            in[2] = info(PLX_DTYPE_INT32, SHAPE(cc->m));
            nin = 3;
        }
    }
    size_t nx = numel(&in[0]), nw = numel(&in[1]), ny = numel(&y);
    uint8_t *x = malloc(nx), *wt = malloc(nw);
    int32_t *bias = malloc((size_t)cc->m * sizeof *bias);
    fill_q(x, cc->xd, nx);
    fill_q(wt, cc->wd, nw);
    for (int64_t j = 0; j < cc->m; j++) bias[j] = (int32_t)rnd_i(-20000, 20000);
    uint8_t zx_byte[1];
    st(zx_byte, cc->xd, 0, zx);
    size_t esize = cc->integer ? 4 : 1;
    void *got = malloc(ny * esize);
    const void *ins[4] = {x, wt, cc->integer ? (const void *)zx_byte : bias, zw_bytes};
    bool constant[4] = {false, true, !cc->integer, true};
    plx_layer_view l = layer_of(cc->integer ? PLX_OP_CONV_INTEGER : PLX_OP_CONV, &d, in, nin, &y, 1);
    char why[256];
    const char *refusal = check_of(l.op, &l, why, sizeof why);
    cr_assert(refusal == NULL, "refused: %s", refusal);
    cr_assert(run_both(lookup(l.op), &l, ins, got, ny * esize, constant), "run failed: %s", g_err);
    for (int64_t b = 0; b < cc->n; b++) {
        for (int64_t o = 0; o < cc->m; o++) {
            int64_t gi = o / mg;
            for (int64_t oy = 0; oy < oh; oy++) {
                for (int64_t ox = 0; ox < ow; ox++) {
                    int32_t acc = 0;
                    for (int64_t ci = 0; ci < cg; ci++) {
                        for (int64_t ky = 0; ky < kh; ky++) {
                            for (int64_t kx = 0; kx < cc->kw; kx++) {
                                int64_t iy = cc->one_d ? 0 : oy * cc->stride - cc->pad + ky * cc->dil;
                                int64_t ix = ox * cc->stride - cc->pad + kx * cc->dil;
                                int32_t xv = iy >= 0 && iy < h && ix >= 0 && ix < cc->w
                                                 ? ld(x, cc->xd, (size_t)(((b * cc->c + gi * cg + ci) * h + iy) * cc->w + ix))
                                                 : zx;
                                int32_t wv = ld(wt, cc->wd, (size_t)(((o * cg + ci) * kh + ky) * cc->kw + kx));
                                acc += (xv - zx) * (wv - zw[o]);
                            }
                        }
                    }
                    size_t at = (size_t)(((b * cc->m + o) * oh + oy) * ow + ox);
                    if (cc->integer) {
                        cr_assert(eq(i32, ((int32_t *)got)[at], acc), "conv_integer at %zu", at);
                    } else {
                        int32_t want = requant(acc + (cc->bias ? bias[o] : 0), sx, sw[o], sy, zy, cc->yd);
                        cr_assert(eq(i32, ld(got, cc->yd, at), want), "conv at %zu (channel %lld)", at,
                                  (long long)o);
                    }
                }
            }
        }
    }
    free(x);
    free(wt);
    free(bias);
    free(got);
    free(sw);
    free(zw);
}

Test(kernels_quant, conv_hand_derived) {
    /* X [1,1,2,2] uint8 = 10, 20, 30, 40, zx 10, sx 0.5; W [1,1,1,1] int8 = 2,
     * zw 0, sw 0.25; y scale 0.125, zero point 5: acc = (x - 10) * 2 = 0, 20,
     * 40, 60; y = acc * 0.5 * 0.25 / 0.125 + 5 = acc + 5. */
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    plx_tensor_info in[2] = {info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2)),
                             info(PLX_DTYPE_INT8, SHAPE(1, 1, 1, 1))};
    in[0].quant = per_tensor(0.5f, 10);
    in[1].quant = per_tensor(0.25f, 0);
    plx_tensor_info y = info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2));
    y.quant = per_tensor(0.125f, 5);
    uint8_t x[4] = {10, 20, 30, 40}, out[4];
    int8_t w[1] = {2};
    plx_layer_view l = layer_of(PLX_OP_CONV, &d, in, 2, &y, 1);
    const void *ins[] = {x, w};
    void *outs[] = {out};
    cr_assert(run_layer(lookup(PLX_OP_CONV), &l, ins, outs), "%s", g_err);
    cr_assert(eq(u8, out[0], 5));
    cr_assert(eq(u8, out[1], 25));
    cr_assert(eq(u8, out[2], 45));
    cr_assert(eq(u8, out[3], 65));
}

Test(kernels_quant, conv_random) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    for (int t = 0; t < 60; t++) {
        seed((uint64_t)t + 1);
        conv_case cc = {0};
        cc.n = rnd_i(1, 2);
        cc.xd = q8[rnd_i(0, 1)];
        cc.wd = q8[rnd_i(0, 1)];
        cc.yd = q8[rnd_i(0, 1)];
        int shape = t % 6;
        cc.group = 1;
        cc.c = rnd_i(1, 9);
        cc.m = rnd_i(1, 12);
        cc.h = rnd_i(3, 9);
        cc.w = rnd_i(3, 11);
        cc.kh = cc.kw = 3;
        cc.stride = rnd_i(1, 2);
        cc.dil = 1;
        cc.pad = rnd_i(0, 1);
        if (shape == 1) { /* pointwise */
            cc.kh = cc.kw = 1;
            cc.stride = 1;
            cc.pad = 0;
        } else if (shape == 2) { /* depthwise, dilated in some */
            cc.c = cc.m = cc.group = rnd_i(2, 8);
            cc.dil = rnd_i(1, 2);
            cc.h += 2;
            cc.w += 2;
        } else if (shape == 3) { /* grouped, and depthwise with a multiplier */
            cc.group = rnd_i(2, 3);
            cc.c = cc.group * rnd_i(1, 3);
            cc.m = cc.group * rnd_i(1, 3);
        } else if (shape == 4) { /* 1-D, dilated */
            cc.one_d = true;
            cc.dil = 2;
            cc.w = rnd_i(6, 20);
        } else if (shape == 5) { /* channels-last taps (8+ channels per group), wide output */
            cc.group = rnd_i(1, 2);
            cc.c = cc.group * rnd_i(8, 12);
            cc.m = cc.group * rnd_i(9, 20);
            cc.dil = rnd_i(1, 2);
            cc.h += 2;
            cc.w += 2;
        }
        cc.per_axis = rnd_i(0, 1);
        cc.bias = rnd_i(0, 1);
        run_conv_case(&cc);
    }
}

/* Few output channels over many pixels (kernels_quant.c's channel-rows
 * form: W times X's columns, requantized per row): strided, padded,
 * dilated, grouped and pointwise, W per tensor or per channel with equal
 * zero points; 8-bit X and Y of either signedness. */
Test(kernels_quant, conv_channel_rows_random) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    for (int t = 0; t < 40; t++) {
        seed((uint64_t)t + 4000);
        conv_case cc = {0};
        cc.n = rnd_i(1, 2);
        cc.xd = q8[rnd_i(0, 1)];
        cc.wd = q8[rnd_i(0, 1)];
        cc.yd = q8[rnd_i(0, 1)];
        cc.group = t % 4 == 3 ? 2 : 1;
        cc.c = cc.group * rnd_i(1, 4);
        cc.m = cc.group * rnd_i(1, 3);
        cc.h = rnd_i(10, 24);
        cc.w = rnd_i(10, 40);
        cc.kh = cc.kw = t % 3 == 0 ? 1 : 3;
        cc.stride = cc.kh == 1 ? 1 : rnd_i(1, 2);
        cc.dil = cc.kh == 1 ? 1 : rnd_i(1, 2);
        cc.pad = cc.kh == 1 ? 0 : rnd_i(0, 2);
        cc.per_axis = rnd_i(0, 1);
        cc.same_zw = true;
        cc.bias = rnd_i(0, 1);
        run_conv_case(&cc);
    }
}

Test(kernels_quant, conv_integer_random) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    for (int t = 0; t < 30; t++) {
        seed((uint64_t)t + 100);
        conv_case cc = {0};
        cc.integer = true;
        cc.n = 1;
        cc.xd = q8[rnd_i(0, 1)];
        cc.wd = q8[rnd_i(0, 1)];
        cc.yd = PLX_DTYPE_UINT8;
        cc.group = t % 3 == 2 ? 2 : 1;
        cc.c = cc.group * rnd_i(1, 4);
        cc.m = cc.group * rnd_i(1, 5);
        cc.h = rnd_i(3, 7);
        cc.w = rnd_i(3, 7);
        cc.kh = cc.kw = t % 3 == 1 ? 1 : 3;
        cc.stride = 1;
        cc.dil = 1;
        cc.pad = cc.kh == 3 ? rnd_i(0, 1) : 0;
        cc.zp_inputs = t % 5 != 0;
        cc.w_zp_per_channel = rnd_i(0, 1);
        run_conv_case(&cc);
    }
}

Test(kernels_quant, conv_integer_onnx_example) {
    /* ONNX's ConvInteger example (without padding): X 3x3 = 2..10, x zero
     * point 1, W 2x2 of ones: each output is the sum of a 2x2 window of
     * (x - 1): 12, 16, 24, 28. */
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    plx_tensor_info in[3] = {info(PLX_DTYPE_UINT8, SHAPE(1, 1, 3, 3)),
                             info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2)),
                             info(PLX_DTYPE_UINT8, SCALAR)};
    plx_tensor_info y = info(PLX_DTYPE_INT32, SHAPE(1, 1, 2, 2));
    uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1}, zx = 1;
    int32_t out[4];
    plx_layer_view l = layer_of(PLX_OP_CONV_INTEGER, &d, in, 3, &y, 1);
    const void *ins[] = {x, w, &zx};
    void *outs[] = {out};
    cr_assert(run_layer(lookup(PLX_OP_CONV_INTEGER), &l, ins, outs), "%s", g_err);
    cr_assert(eq(i32, out[0], 12));
    cr_assert(eq(i32, out[1], 16));
    cr_assert(eq(i32, out[2], 24));
    cr_assert(eq(i32, out[3], 28));
}

Test(kernels_quant, conv_refusals) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    plx_tensor_info in[2] = {info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2)),
                             info(PLX_DTYPE_INT8, SHAPE(1, 1, 1, 1))};
    in[1].quant = per_tensor(0.25f, 0);
    plx_tensor_info y = info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2));
    y.quant = per_tensor(0.125f, 5);
    plx_layer_view l = layer_of(PLX_OP_CONV, &d, in, 2, &y, 1);
    char why[256];
    /* X without quantization parameters */
    const char *r = check_of(PLX_OP_CONV, &l, why, sizeof why);
    cr_assert(r != NULL && strstr(r, "per-tensor") != NULL, "%s", r ? r : "(accepted)");
    /* a float bias */
    in[0].quant = per_tensor(0.5f, 10);
    plx_tensor_info in3[3] = {in[0], in[1], info(PLX_DTYPE_FLOAT32, SHAPE(1))};
    l = layer_of(PLX_OP_CONV, &d, in3, 3, &y, 1);
    r = check_of(PLX_OP_CONV, &l, why, sizeof why);
    cr_assert(r != NULL && strstr(r, "int32") != NULL, "%s", r ? r : "(accepted)");
}

/* ---- matmul on quantized tensors and matmul_integer ------------------- */

static void run_matmul_case(int t, bool integer) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    seed((uint64_t)t + (integer ? 500 : 300));
    plx_dtype ad = q8[rnd_i(0, 1)], bd = q8[rnd_i(0, 1)], yd = q8[rnd_i(0, 1)];
    int64_t m = rnd_i(1, 20), k = rnd_i(1, 90), n = rnd_i(1, 40);
    int64_t batch = rnd_i(1, 3);
    bool b_batched = t % 3 == 1; /* B [batch, K, N] rather than a shared [K, N] */
    plx_tensor_info in[4];
    in[0] = info(ad, SHAPE(batch, m, k));
    in[1] = b_batched ? info(bd, SHAPE(batch, k, n)) : info(bd, SHAPE(k, n));
    plx_tensor_info y = info(integer ? PLX_DTYPE_INT32 : yd, SHAPE(batch, m, n));
    bool per_col = rnd_i(0, 1);
    float sa = 0.01f + (float)rnd_i(0, 50) * 1e-3f, sy = 0.1f + (float)rnd_i(0, 50) * 1e-2f;
    int32_t za = (int32_t)rnd_i(qmin(ad), qmax(ad)), zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
    float *sb = malloc((size_t)n * sizeof *sb);
    int32_t *zb = malloc((size_t)n * sizeof *zb);
    uint8_t zb_bytes[64], za_byte[1];
    for (int64_t j = 0; j < n; j++) {
        sb[j] = per_col || j == 0 ? 0.002f + (float)rnd_i(0, 50) * 1e-4f : sb[0];
        zb[j] = per_col || j == 0 ? (int32_t)rnd_i(qmin(bd), qmax(bd)) : zb[0];
        st(zb_bytes, bd, (size_t)j, zb[j]);
    }
    st(za_byte, ad, 0, za);
    uint32_t nin = 2;
    if (integer) {
        in[2] = info(ad, SCALAR);
        in[3] = per_col ? info(bd, SHAPE(n)) : info(bd, SHAPE(1));
        nin = 4;
    } else {
        in[0].quant = per_tensor(sa, za);
        if (per_col) {
            memset(&in[1].quant, 0, sizeof in[1].quant);
            in[1].quant.kind = PLX_QUANT_PER_AXIS;
            in[1].quant.axis = (int32_t)in[1].rank - 1;
            in[1].quant.scales = sb;
            in[1].quant.zero_points = zb;
        } else {
            in[1].quant = per_tensor(sb[0], zb[0]);
        }
        y.quant = per_tensor(sy, zy);
    }
    size_t na = numel(&in[0]), nb = numel(&in[1]), ny = numel(&y);
    uint8_t *a = malloc(na), *b = malloc(nb);
    fill_q(a, ad, na);
    fill_q(b, bd, nb);
    size_t esize = integer ? 4 : 1;
    void *got = malloc(ny * esize);
    const void *ins[4] = {a, b, za_byte, zb_bytes};
    bool constant[4] = {false, true, true, true};
    plx_layer_view l = layer_of(integer ? PLX_OP_MATMUL_INTEGER : PLX_OP_MATMUL, NULL, in, nin, &y, 1);
    char why[256];
    const char *refusal = check_of(l.op, &l, why, sizeof why);
    cr_assert(refusal == NULL, "refused: %s", refusal);
    cr_assert(run_both(lookup(l.op), &l, ins, got, ny * esize, constant), "run failed: %s", g_err);
    for (int64_t bi = 0; bi < batch; bi++) {
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                int32_t acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    int32_t av = ld(a, ad, (size_t)((bi * m + i) * k + p));
                    int32_t bv = ld(b, bd, (size_t)(((b_batched ? bi : 0) * k + p) * n + j));
                    acc += (av - za) * (bv - zb[j]);
                }
                size_t at = (size_t)((bi * m + i) * n + j);
                if (integer) {
                    cr_assert(eq(i32, ((int32_t *)got)[at], acc), "case %d at %zu", t, at);
                } else {
                    cr_assert(eq(i32, ld(got, yd, at), requant(acc, sa, sb[j], sy, zy, yd)),
                              "case %d at %zu", t, at);
                }
            }
        }
    }
    free(a);
    free(b);
    free(got);
    free(sb);
    free(zb);
}

Test(kernels_quant, matmul_random) {
    for (int t = 0; t < 40; t++) {
        run_matmul_case(t, false);
    }
}

Test(kernels_quant, matmul_integer_random) {
    for (int t = 0; t < 40; t++) {
        run_matmul_case(t, true);
    }
}

Test(kernels_quant, matmul_integer_onnx_example) {
    /* ONNX's MatMulInteger example: A [4,3] uint8, a zero point 12, B [3,2]
     * uint8, b zero point 0. */
    plx_tensor_info in[4] = {info(PLX_DTYPE_UINT8, SHAPE(4, 3)), info(PLX_DTYPE_UINT8, SHAPE(3, 2)),
                             info(PLX_DTYPE_UINT8, SCALAR), info(PLX_DTYPE_UINT8, SCALAR)};
    plx_tensor_info y = info(PLX_DTYPE_INT32, SHAPE(4, 2));
    uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6};
    uint8_t za = 12, zb = 0;
    int32_t out[8], want[8] = {-38, -83, -44, -98, -50, -113, -56, -128};
    plx_layer_view l = layer_of(PLX_OP_MATMUL_INTEGER, NULL, in, 4, &y, 1);
    const void *ins[] = {a, b, &za, &zb};
    void *outs[] = {out};
    cr_assert(run_layer(lookup(PLX_OP_MATMUL_INTEGER), &l, ins, outs), "%s", g_err);
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(i32, out[i], want[i]), "element %d", i);
    }
}

Test(kernels_quant, matmul_integer_per_row_zero_point_refused) {
    plx_tensor_info in[3] = {info(PLX_DTYPE_UINT8, SHAPE(4, 3)), info(PLX_DTYPE_UINT8, SHAPE(3, 2)),
                             info(PLX_DTYPE_UINT8, SHAPE(4))};
    plx_tensor_info y = info(PLX_DTYPE_INT32, SHAPE(4, 2));
    plx_layer_view l = layer_of(PLX_OP_MATMUL_INTEGER, NULL, in, 3, &y, 1);
    char why[256];
    const char *r = check_of(PLX_OP_MATMUL_INTEGER, &l, why, sizeof why);
    cr_assert(r != NULL && strstr(r, "one zero point") != NULL, "%s", r ? r : "(accepted)");
}

/* ---- dynamic_quantize ---------------------------------------------------- */

static void dyn_quant(const float *x, size_t n, uint8_t *y, float *scale, uint8_t *zp,
                      bool expect_ok) {
    plx_tensor_info in = info(PLX_DTYPE_FLOAT32, SHAPE((int64_t)n));
    plx_tensor_info outs_i[3] = {info(PLX_DTYPE_UINT8, SHAPE((int64_t)n)),
                                 info(PLX_DTYPE_FLOAT32, SCALAR), info(PLX_DTYPE_UINT8, SCALAR)};
    plx_layer_view l = layer_of(PLX_OP_DYNAMIC_QUANTIZE, NULL, &in, 1, outs_i, 3);
    const void *ins[] = {x};
    void *outs[] = {y, scale, zp};
    bool ok = run_layer(lookup(PLX_OP_DYNAMIC_QUANTIZE), &l, ins, outs);
    cr_assert(eq(int, ok, expect_ok), "%s", g_err);
}

Test(kernels_quant, dynamic_quantize_onnx_examples) {
    /* ONNX's DynamicQuantizeLinear examples. */
    float x1[6] = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
    uint8_t y[12], zp;
    float scale;
    dyn_quant(x1, 6, y, &scale, &zp, true);
    cr_assert(ieee_ulp_eq(flt, scale, 5.0f / 255.0f, 1));
    cr_assert(eq(u8, zp, 153));
    const uint8_t want1[6] = {153, 255, 0, 26, 221, 179};
    for (int i = 0; i < 6; i++) cr_assert(eq(u8, y[i], want1[i]), "element %d", i);
    float x2[6] = {-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f};
    dyn_quant(x2, 6, y, &scale, &zp, true);
    cr_assert(eq(u8, zp, 255));
    const uint8_t want2[6] = {191, 121, 172, 96, 42, 0};
    for (int i = 0; i < 6; i++) cr_assert(eq(u8, y[i], want2[i]), "element %d", i);
    float x3[12] = {1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f};
    dyn_quant(x3, 12, y, &scale, &zp, true);
    cr_assert(eq(u8, zp, 0));
    const uint8_t want3[12] = {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149};
    for (int i = 0; i < 12; i++) cr_assert(eq(u8, y[i], want3[i]), "element %d", i);
}

Test(kernels_quant, dynamic_quantize_zeros_and_nan) {
    float zeros[3] = {0, 0, 0};
    uint8_t y[3] = {7, 7, 7}, zp = 9;
    float scale = 0;
    dyn_quant(zeros, 3, y, &scale, &zp, true);
    cr_assert(eq(flt, scale, 1.0f));
    cr_assert(eq(u8, zp, 0));
    cr_assert(eq(u8, y[0], 0));
    float bad[2] = {1.0f, NAN};
    dyn_quant(bad, 2, y, &scale, &zp, false);
    cr_assert(strstr(g_err, "NaN") != NULL, "%s", g_err);
}

/* Long inputs (the range is taken in 16 lanes, the rest after them): the
 * range, scale, zero point and every byte against ONNX's definition
 * computed here, with the minimum and maximum anywhere (in a lane, in the
 * remainder); and a NaN or an infinity at any place is refused. */
Test(kernels_quant, dynamic_quantize_long_inputs) {
    enum { N = 1000 + 13 };
    static float x[N];
    static uint8_t y[N];
    for (int t = 0; t < 8; t++) {
        seed((uint64_t)t + 4000);
        size_t n = N - (size_t)t * 37;
        float shift = t % 3 == 0 ? 2.0f : t % 3 == 1 ? -2.0f : 0.0f; /* all >0, all <0, mixed */
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)rnd_i(-1000, 1000) / 700.0f + shift;
        }
        x[rnd_i(0, (int64_t)n - 1)] = 9.5f + shift; /* the extremes anywhere */
        x[n - 1 - (size_t)t] = -7.25f + shift;
        float lo = 0.0f, hi = 0.0f;
        for (size_t i = 0; i < n; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        float want_scale = (hi - lo) / 255.0f;
        float zf = -lo / want_scale;
        double want_zp = nearbyint(zf < 0.0f ? 0.0 : zf > 255.0f ? 255.0 : (double)zf);
        float scale;
        uint8_t zp;
        dyn_quant(x, n, y, &scale, &zp, true);
        cr_assert(eq(flt, scale, want_scale), "case %d", t);
        cr_assert(eq(u8, zp, (uint8_t)want_zp), "case %d", t);
        for (size_t i = 0; i < n; i++) {
            double v = nearbyint((double)(x[i] / scale)) + want_zp;
            v = v < 0.0 ? 0.0 : v > 255.0 ? 255.0 : v;
            cr_assert(eq(u8, y[i], (uint8_t)v), "case %d element %zu", t, i);
        }
    }
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const size_t where[] = {0, 15, 16, 500, N - 1};
    for (size_t b = 0; b < 3; b++) {
        for (size_t k = 0; k < 5; k++) {
            for (size_t i = 0; i < N; i++) {
                x[i] = 0.5f;
            }
            x[where[k]] = bad[b];
            float scale;
            uint8_t zp;
            dyn_quant(x, N, y, &scale, &zp, false);
            cr_assert(strstr(g_err, "NaN or infinity") != NULL, "%s", g_err);
        }
    }
}

/* plxk_float_range (taken on the bits, as integers that order as the
 * floats do): the exact minimum and maximum of every length up to 70,
 * and of 5,000 values, against a plain loop, over values of every sign
 * and size (subnormals, FLT_MAX); -0 orders below +0; an infinity or a
 * NaN anywhere is reported; n 0 gives 0 and 0. */
Test(kernels_quant, float_range_is_exact) {
    enum { N = 5000 };
    static float x[N];
    seed(77);
    const float special[] = {-0.0f, 0.0f, 1e-45f, -1e-45f, FLT_MAX, -FLT_MAX, 1e-38f, -3.5f};
    for (size_t i = 0; i < N; i++) {
        x[i] = i % 7 == 3 ? special[rnd_i(0, 7)]
                          : (float)rnd_i(-100000, 100000) * (float)rnd_i(1, 1000) * 1e-6f;
    }
    const plxk_isa isa = test_compute()->isa;
    for (size_t k = 0; k <= 71; k++) {
        size_t n = k <= 70 ? k : N; /* around the vector widths, then all */
        const float *p = x + (k <= 70 ? rnd_i(0, 100) : 0);
        float want_lo = n ? p[0] : 0.0f, want_hi = want_lo, lo = 1.0f, hi = -1.0f;
        for (size_t i = 1; i < n; i++) {
            want_lo = p[i] < want_lo ? p[i] : want_lo;
            want_hi = p[i] > want_hi ? p[i] : want_hi;
        }
        bool finite = false;
        cr_assert(plxk_float_range(isa, p, n, &lo, &hi, &finite));
        cr_assert(finite, "n %zu", n);
        cr_assert(eq(flt, lo, want_lo), "n %zu", n);
        cr_assert(eq(flt, hi, want_hi), "n %zu", n);
    }
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    float lo, hi;
    bool finite;
    cr_assert(plxk_float_range(isa, zeros, 3, &lo, &hi, &finite));
    cr_assert(signbit(lo) && !signbit(hi) && lo == 0.0f && hi == 0.0f);
    const float bad[] = {INFINITY, -INFINITY, NAN, -NAN};
    for (size_t b = 0; b < 4; b++) {
        float keep = x[2345];
        x[2345] = bad[b];
        cr_assert(plxk_float_range(isa, x, N, &lo, &hi, &finite));
        cr_assert(not(finite), "value %zu", b);
        x[2345] = keep;
    }
}

/* plxk_table8 (the 8-bit tables' lookup; VBMI permutes on AVX-512 CPUs
 * that have them): every length around the 64-byte blocks, against the
 * plain lookup, the bytes past n untouched. */
Test(kernels_quant, table_lookup_every_length) {
    static uint8_t table[256], x[70001], y[70001 + 64];
    seed(31);
    for (int i = 0; i < 256; i++) table[i] = (uint8_t)rnd_i(0, 255);
    for (size_t i = 0; i < sizeof x; i++) x[i] = (uint8_t)rnd_i(0, 255);
    const size_t lengths[] = {0, 1, 63, 64, 65, 127, 128, 1000, 70001};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        size_t n = lengths[k];
        memset(y, 0xA5, sizeof y);
        cr_assert(plxk_table8(test_compute()->isa, table, x, y, n));
        for (size_t i = 0; i < n; i++) {
            cr_assert(eq(u8, y[i], table[x[i]]), "n %zu element %zu", n, i);
        }
        for (size_t i = n; i < n + 64 && i < sizeof y; i++) {
            cr_assert(eq(u8, y[i], 0xA5), "n %zu: byte %zu past the end written", n, i);
        }
    }
}

/* ---- binary add, sub, mul on quantized tensors ---------------------------- */

Test(kernels_quant, binary_random_against_dequantize_quantize) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    static const plx_binary_func funcs[] = {PLX_BINARY_ADD, PLX_BINARY_SUB, PLX_BINARY_MUL};
    for (int t = 0; t < 30; t++) {
        seed((uint64_t)t + 900);
        plx_dtype ad = q8[rnd_i(0, 1)], bd = q8[rnd_i(0, 1)], yd = q8[rnd_i(0, 1)];
        plx_binary_desc d = PLX_BINARY_DESC_INIT(funcs[t % 3]);
        int64_t c = rnd_i(1, 5), hw = rnd_i(1, 9);
        /* dense, B per channel, A a scalar, B a row over the batch, A and
         * B both broadcasting */
        int mode = t % 5;
        plx_tensor_info in[2] = {
            mode == 2 ? info(ad, SHAPE(1)) : mode == 4 ? info(ad, SHAPE(2, 1, hw)) : info(ad, SHAPE(2, c, hw)),
            mode == 1 || mode == 4 ? info(bd, SHAPE(c, 1)) : mode == 3 ? info(bd, SHAPE(2, 1, hw))
                                                                       : info(bd, SHAPE(2, c, hw))};
        plx_tensor_info y = info(yd, SHAPE(2, c, hw));
        float sa = 0.01f * (float)rnd_i(1, 20), sb = 0.01f * (float)rnd_i(1, 20),
              sy = 0.02f * (float)rnd_i(1, 20);
        int32_t za = (int32_t)rnd_i(qmin(ad), qmax(ad)), zb = (int32_t)rnd_i(qmin(bd), qmax(bd)),
                zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
        in[0].quant = per_tensor(sa, za);
        in[1].quant = per_tensor(sb, zb);
        y.quant = per_tensor(sy, zy);
        size_t na = numel(&in[0]), nb = numel(&in[1]), ny = numel(&y);
        uint8_t a[128], b[128], got[128];
        fill_q(a, ad, na);
        fill_q(b, bd, nb);
        plx_layer_view l = layer_of(PLX_OP_BINARY, &d, in, 2, &y, 1);
        char why[256];
        const char *r = check_of(PLX_OP_BINARY, &l, why, sizeof why);
        cr_assert(r == NULL, "refused: %s", r);
        const void *ins[] = {a, b};
        void *outs[] = {got};
        cr_assert(run_layer(lookup(PLX_OP_BINARY), &l, ins, outs), "%s", g_err);
        for (size_t i = 0; i < ny; i++) {
            size_t n0 = i / (size_t)(c * hw), ci = i / (size_t)hw % (size_t)c, h = i % (size_t)hw;
            size_t ia = mode == 2 ? 0 : mode == 4 ? n0 * (size_t)hw + h : i;
            size_t ib = mode == 1 || mode == 4 ? ci : mode == 3 ? n0 * (size_t)hw + h : i;
            float va = (float)(ld(a, ad, ia) - za) * sa, vb = (float)(ld(b, bd, ib) - zb) * sb;
            float v = d.func == PLX_BINARY_ADD ? va + vb : d.func == PLX_BINARY_SUB ? va - vb : va * vb;
            float q = nearbyintf(v / sy) + (float)zy;
            int32_t want = q < (float)qmin(yd) ? qmin(yd) : q > (float)qmax(yd) ? qmax(yd) : (int32_t)q;
            cr_assert(eq(i32, ld(got, yd, i), want), "case %d element %zu", t, i);
        }
    }
}

/* ---- gemm on quantized tensors ----------------------------------------- */

Test(kernels_quant, gemm_random) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    for (int t = 0; t < 24; t++) {
        seed((uint64_t)t + 1300);
        plx_dtype ad = q8[rnd_i(0, 1)], bd = q8[rnd_i(0, 1)], yd = q8[rnd_i(0, 1)];
        int64_t m = rnd_i(1, 9), k = rnd_i(1, 70), n = rnd_i(1, 40);
        plx_gemm_desc d = PLX_GEMM_DESC_INIT;
        d.trans_a = t % 2;
        d.trans_b = (t / 2) % 2;
        bool bias = t % 3 != 0, per_col = rnd_i(0, 1);
        plx_tensor_info in[3] = {d.trans_a ? info(ad, SHAPE(k, m)) : info(ad, SHAPE(m, k)),
                                 d.trans_b ? info(bd, SHAPE(n, k)) : info(bd, SHAPE(k, n)),
                                 info(PLX_DTYPE_INT32, SHAPE(n))};
        plx_tensor_info y = info(yd, SHAPE(m, n));
        float sa = 0.02f, sy = 0.3f + 0.01f * (float)rnd_i(0, 30);
        int32_t za = (int32_t)rnd_i(qmin(ad), qmax(ad)), zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
        float sb[40];
        int32_t zb[40], b32[40];
        for (int64_t j = 0; j < n; j++) {
            sb[j] = per_col || j == 0 ? 0.001f * (float)rnd_i(1, 30) : sb[0];
            zb[j] = per_col || j == 0 ? (int32_t)rnd_i(qmin(bd), qmax(bd)) : zb[0];
            b32[j] = (int32_t)rnd_i(-5000, 5000);
        }
        in[0].quant = per_tensor(sa, za);
        if (per_col) {
            memset(&in[1].quant, 0, sizeof in[1].quant);
            in[1].quant.kind = PLX_QUANT_PER_AXIS;
            in[1].quant.axis = d.trans_b ? 0 : 1;
            in[1].quant.scales = sb;
            in[1].quant.zero_points = zb;
        } else {
            in[1].quant = per_tensor(sb[0], zb[0]);
        }
        y.quant = per_tensor(sy, zy);
        uint8_t a[9 * 70], b[70 * 40], got[9 * 40];
        fill_q(a, ad, (size_t)(m * k));
        fill_q(b, bd, (size_t)(k * n));
        const void *ins[3] = {a, b, b32};
        bool constant[3] = {false, true, true};
        plx_layer_view l = layer_of(PLX_OP_GEMM, &d, in, bias ? 3 : 2, &y, 1);
        char why[256];
        const char *r = check_of(PLX_OP_GEMM, &l, why, sizeof why);
        cr_assert(r == NULL, "refused: %s", r);
        cr_assert(run_both(lookup(PLX_OP_GEMM), &l, ins, got, (size_t)(m * n), constant), "%s", g_err);
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                int32_t acc = bias ? b32[j] : 0;
                for (int64_t p = 0; p < k; p++) {
                    int32_t av = ld(a, ad, (size_t)(d.trans_a ? p * m + i : i * k + p));
                    int32_t bv = ld(b, bd, (size_t)(d.trans_b ? j * k + p : p * n + j));
                    acc += (av - za) * (bv - zb[j]);
                }
                cr_assert(eq(i32, ld(got, yd, (size_t)(i * n + j)), requant(acc, sa, sb[j], sy, zy, yd)),
                          "case %d [%lld,%lld]", t, (long long)i, (long long)j);
            }
        }
    }
}

/* ---- global average pool on quantized tensors --------------------------- */

Test(kernels_quant, global_average_pool) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    for (int t = 0; t < 12; t++) {
        seed((uint64_t)t + 1700);
        plx_dtype xd = q8[t % 2], yd = q8[(t / 2) % 2];
        int64_t c = rnd_i(1, 6), h = rnd_i(1, 7), w = rnd_i(1, 7);
        plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
        plx_tensor_info x = info(xd, SHAPE(2, c, h, w)), y = info(yd, SHAPE(2, c, 1, 1));
        float sx = 0.01f * (float)rnd_i(1, 30), sy = 0.005f * (float)rnd_i(1, 30);
        int32_t zx = (int32_t)rnd_i(qmin(xd), qmax(xd)), zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
        x.quant = per_tensor(sx, zx);
        y.quant = per_tensor(sy, zy);
        uint8_t in[2 * 6 * 49], out[12];
        fill_q(in, xd, numel(&x));
        plx_layer_view l = layer_of(PLX_OP_GLOBAL_POOL, &d, &x, 1, &y, 1);
        const void *ins[] = {in};
        void *outs[] = {out};
        cr_assert(run_layer(lookup(PLX_OP_GLOBAL_POOL), &l, ins, outs), "%s", g_err);
        for (int64_t o = 0; o < 2 * c; o++) {
            double sum = 0;
            for (int64_t i = 0; i < h * w; i++) {
                sum += (double)(ld(in, xd, (size_t)(o * h * w + i)) - zx) * sx;
            }
            float mean = (float)(sum / (double)(h * w));
            float q = nearbyintf(mean / sy) + (float)zy;
            int32_t want = q < (float)qmin(yd) ? qmin(yd) : q > (float)qmax(yd) ? qmax(yd) : (int32_t)q;
            cr_assert(eq(i32, ld(out, yd, (size_t)o), want), "case %d map %lld", t, (long long)o);
        }
    }
}

/* ---- windowed average pool on quantized tensors ------------------------- */

static int32_t saturate_q(float q, plx_dtype d) {
    return q < (float)qmin(d) ? qmin(d) : q > (float)qmax(d) ? qmax(d) : (int32_t)q;
}

Test(kernels_quant, average_pool_hand) {
    /* X int8 2x2 = {4, 6, 8, 10}, zx 2, sx 0.5: reals {1, 2, 3, 4}; a 2x2
     * window, stride 1, one pad before each dim: 2x2 windows holding
     * {1}, {1, 2}, {1, 3}, {1, 2, 3, 4}. Without the padding counted the
     * means are 1, 1.5, 2, 2.5: Y uint8 (sy 0.25, zy 100) 104, 106, 108,
     * 110. With it (over 4 taps each) 0.25, 0.75, 1, 2.5: with sy 0.5 the
     * steps 0.5, 1.5, 2, 5 round to even, 0, 2, 2, 5: 100, 102, 102, 105;
     * with zy 252 the last saturates at 255. */
    int8_t x[4] = {4, 6, 8, 10};
    uint8_t y[4];
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = 1;
    plx_tensor_info in = info(PLX_DTYPE_INT8, SHAPE(1, 1, 2, 2)),
                    out = info(PLX_DTYPE_UINT8, SHAPE(1, 1, 2, 2));
    in.quant = per_tensor(0.5f, 2);
    out.quant = per_tensor(0.25f, 100);
    plx_layer_view l = layer_of(PLX_OP_POOL, &d, &in, 1, &out, 1);
    char why[256];
    const char *r = check_of(PLX_OP_POOL, &l, why, sizeof why);
    cr_assert(r == NULL, "refused: %s", r);
    const void *ins[] = {x};
    void *outs[] = {y};
    cr_assert(run_layer(lookup(PLX_OP_POOL), &l, ins, outs), "%s", g_err);
    const uint8_t excl[4] = {104, 106, 108, 110};
    for (int i = 0; i < 4; i++) {
        cr_assert(eq(u8, y[i], excl[i]), "exclude pad [%d]", i);
    }
    d.count_include_pad = true;
    out.quant = per_tensor(0.5f, 100);
    cr_assert(run_layer(lookup(PLX_OP_POOL), &l, ins, outs), "%s", g_err);
    const uint8_t incl[4] = {100, 102, 102, 105};
    for (int i = 0; i < 4; i++) {
        cr_assert(eq(u8, y[i], incl[i]), "include pad [%d]", i);
    }
    out.quant = per_tensor(0.5f, 252);
    cr_assert(run_layer(lookup(PLX_OP_POOL), &l, ins, outs), "%s", g_err);
    cr_assert(eq(u8, y[3], 255));
    /* without parameters on Y an int8 average is refused */
    out.quant.kind = PLX_QUANT_NONE;
    r = check_of(PLX_OP_POOL, &l, why, sizeof why);
    cr_assert(r != NULL && strstr(r, "per-tensor quantization") != NULL, "%s", r ? r : "taken");
}

/* Random pools (1 or 2 spatial dims, strides, dilations, pads,
 * count_include_pad, ceil_mode, either dtype each side) against a loop by
 * window coordinates that follows plexus/ops.h (exact sum, mean rounded to
 * float32 once, quantized), which must match exactly; and against the
 * float path (dequantize, cpu_ref's float32 pool, quantize), which sums
 * the dequantized values in float32 one by one: its rounding can move a
 * mean that lies near a half step across it, so that path may differ by
 * one step, rarely (counted, at most 2% of the outputs here). */
Test(kernels_quant, average_pool_random_against_the_float_path) {
    static const plx_dtype q8[] = {PLX_DTYPE_UINT8, PLX_DTYPE_INT8};
    size_t total = 0, off_by_one = 0;
    for (int t = 0; t < 60; t++) {
        seed((uint64_t)t + 2100);
        plx_dtype xd = q8[t % 2], yd = q8[(t / 2) % 2];
        bool one_d = t % 5 == 4;
        int64_t c = rnd_i(1, 3), hw[2] = {one_d ? 1 : rnd_i(1, 9), rnd_i(1, 9)};
        int64_t k[2] = {1, 1}, s[2] = {1, 1}, dl[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0};
        int64_t o[2] = {1, 1};
        plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
        d.count_include_pad = rnd_i(0, 1);
        d.ceil_mode = rnd_i(0, 1);
        for (int a = one_d ? 1 : 0; a < 2; a++) {
            int di = one_d ? 0 : a; /* the descriptor's spatial dim */
            k[a] = rnd_i(1, 3);
            s[a] = rnd_i(1, 3);
            dl[a] = rnd_i(1, 2);
            int64_t ek = (k[a] - 1) * dl[a] + 1;
            pb[a] = rnd_i(0, ek - 1);
            pe[a] = rnd_i(0, ek - 1);
            d.kernel[di] = k[a];
            d.strides[di] = s[a];
            d.dilations[di] = dl[a];
            d.pads_begin[di] = pb[a];
            d.pads_end[di] = pe[a];
            int64_t b, e;
            if (plx_window_dim(PLX_AUTO_PAD_NOTSET, hw[a], k[a], s[a], dl[a], pb[a], pe[a],
                               d.ceil_mode, &b, &e, &o[a]) != PLX_WINDOW_OK ||
                o[a] < 1) {
                hw[a] += ek; /* a window too big for X: widen X, keep the case */
                cr_assert(plx_window_dim(PLX_AUTO_PAD_NOTSET, hw[a], k[a], s[a], dl[a], pb[a],
                                         pe[a], d.ceil_mode, &b, &e, &o[a]) == PLX_WINDOW_OK);
            }
            pe[a] = e; /* what ceil_mode makes of the end padding */
        }
        plx_tensor_info x = one_d ? info(xd, SHAPE(2, c, hw[1])) : info(xd, SHAPE(2, c, hw[0], hw[1]));
        plx_tensor_info y = one_d ? info(yd, SHAPE(2, c, o[1])) : info(yd, SHAPE(2, c, o[0], o[1]));
        float sx = 0.01f * (float)rnd_i(1, 30), sy = 0.005f * (float)rnd_i(1, 30);
        int32_t zx = (int32_t)rnd_i(qmin(xd), qmax(xd)), zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
        x.quant = per_tensor(sx, zx);
        y.quant = per_tensor(sy, zy);
        uint8_t in[2 * 3 * 20 * 20], out[2 * 3 * 20 * 20];
        float xf[2 * 3 * 20 * 20], yf[2 * 3 * 20 * 20];
        size_t nx = numel(&x), ny = numel(&y);
        cr_assert(le(sz, nx, sizeof in));
        cr_assert(le(sz, ny, sizeof out));
        fill_q(in, xd, nx);
        plx_layer_view l = layer_of(PLX_OP_POOL, &d, &x, 1, &y, 1);
        char why[256];
        const char *r = check_of(PLX_OP_POOL, &l, why, sizeof why);
        cr_assert(r == NULL, "case %d refused: %s", t, r);
        const void *ins[] = {in};
        void *outs[] = {out};
        cr_assert(run_layer(lookup(PLX_OP_POOL), &l, ins, outs), "%s", g_err);
        /* the float path */
        for (size_t i = 0; i < nx; i++) {
            xf[i] = (float)(ld(in, xd, i) - zx) * sx;
        }
        plx_tensor_info xfi = x, yfi = y;
        xfi.dtype = yfi.dtype = PLX_DTYPE_FLOAT32;
        memset(&xfi.quant, 0, sizeof xfi.quant);
        memset(&yfi.quant, 0, sizeof yfi.quant);
        plx_layer_view lf = layer_of(PLX_OP_POOL, &d, &xfi, 1, &yfi, 1);
        const void *fins[] = {xf};
        void *fouts[] = {yf};
        cr_assert(run_layer(lookup(PLX_OP_POOL), &lf, fins, fouts), "%s", g_err);
        for (int64_t p = 0; p < 2 * c; p++) {
            for (int64_t oh = 0; oh < o[0]; oh++) {
                for (int64_t ow = 0; ow < o[1]; ow++) {
                    int64_t sum = 0, count = 0;
                    for (int64_t kh = 0; kh < k[0]; kh++) {
                        for (int64_t kw = 0; kw < k[1]; kw++) {
                            int64_t ih = oh * s[0] - pb[0] + kh * dl[0],
                                    iw = ow * s[1] - pb[1] + kw * dl[1];
                            if (ih >= 0 && ih < hw[0] && iw >= 0 && iw < hw[1]) {
                                sum += ld(in, xd, (size_t)((p * hw[0] + ih) * hw[1] + iw)) - zx;
                                count++;
                            } else if (d.count_include_pad && ih >= -pb[0] &&
                                       ih < hw[0] + pe[0] && iw >= -pb[1] && iw < hw[1] + pe[1]) {
                                count++;
                            }
                        }
                    }
                    size_t yi = (size_t)((p * o[0] + oh) * o[1] + ow);
                    float mean = count ? (float)((double)sum * sx / (double)count) : 0.0f;
                    int32_t want = saturate_q(nearbyintf(mean / sy) + (float)zy, yd);
                    int32_t got = ld(out, yd, yi);
                    cr_assert(eq(i32, got, want), "case %d plane %lld at (%lld, %lld)", t,
                              (long long)p, (long long)oh, (long long)ow);
                    if (count == 0) {
                        continue; /* the float path's NaN */
                    }
                    int32_t fpath = saturate_q(nearbyintf(yf[yi] / sy) + (float)zy, yd);
                    cr_assert(le(i32, abs(fpath - got), 1), "case %d: float path %d, int8 %d",
                              t, fpath, got);
                    off_by_one += fpath != got;
                    total++;
                }
            }
        }
    }
    cr_assert(le(sz, off_by_one * 50, total), "%zu of %zu outputs a step off the float path",
              off_by_one, total);
}

/* ---- concat on quantized tensors ---------------------------------------- */

/* What dequantize, a float32 concat and quantize give for byte v. */
static int32_t dq_q(int32_t v, float sx, int32_t zx, float sy, int32_t zy, plx_dtype yd) {
    float real = (float)(v - zx) * sx;
    return saturate_q(nearbyintf(real / sy) + (float)zy, yd);
}

Test(kernels_quant, concat_requantizes_against_dequantize_quantize) {
    /* three inputs along axis 1, every value of each dtype: uint8 with
     * other parameters, int8 with other parameters, and one with Y's own
     * (copied); small parts (one loop) and large ones (the pool's tasks) */
    static const int64_t rows[] = {1, 40};
    for (int t = 0; t < 8; t++) {
        seed((uint64_t)t + 2500);
        plx_dtype yd = t % 2 ? PLX_DTYPE_INT8 : PLX_DTYPE_UINT8;
        int64_t h = rows[t / 4];
        float sy = 0.002f * (float)rnd_i(1, 60);
        int32_t zy = (int32_t)rnd_i(qmin(yd), qmax(yd));
        plx_tensor_info in[3] = {info(PLX_DTYPE_UINT8, SHAPE(2, 1, h, 256)),
                                 info(PLX_DTYPE_INT8, SHAPE(2, 2, h, 256)),
                                 info(yd, SHAPE(2, 1, h, 256))};
        plx_tensor_info y = info(yd, SHAPE(2, 4, h, 256));
        /* t 2 and 6: input 0's scale half of Y's, where many values fall on
         * exact half steps (ties to even) */
        in[0].quant = per_tensor(t % 4 == 2 ? sy * 0.5f : 0.002f * (float)rnd_i(1, 60),
                                 (int32_t)rnd_i(0, 255));
        in[1].quant = per_tensor(0.002f * (float)rnd_i(1, 60), (int32_t)rnd_i(-128, 127));
        in[2].quant = per_tensor(sy, zy);
        y.quant = per_tensor(sy, zy);
        static uint8_t a[2 * 40 * 256], b[2 * 2 * 40 * 256], c[2 * 40 * 256],
            got[2 * 4 * 40 * 256];
        size_t plane = (size_t)h * 256;
        for (size_t i = 0; i < 2 * plane; i++) {
            a[i] = (uint8_t)(i * 7 + 3);
            c[i] = (uint8_t)(i * 13 + 5);
        }
        for (size_t i = 0; i < 4 * plane; i++) {
            b[i] = (uint8_t)(i * 11 + 1);
        }
        plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
        plx_layer_view l = layer_of(PLX_OP_CONCAT, &d, in, 3, &y, 1);
        char why[256];
        const char *r = check_of(PLX_OP_CONCAT, &l, why, sizeof why);
        cr_assert(r == NULL, "refused: %s", r);
        const void *ins[] = {a, b, c};
        void *outs[] = {got};
        cr_assert(run_layer(lookup(PLX_OP_CONCAT), &l, ins, outs), "%s", g_err);
        for (size_t n = 0; n < 2; n++) {
            for (size_t ch = 0; ch < 4; ch++) {
                for (size_t i = 0; i < plane; i++) {
                    int32_t v = ld(got, yd, (n * 4 + ch) * plane + i), want;
                    if (ch == 0) {
                        want = dq_q(a[n * plane + i], in[0].quant.scale, in[0].quant.zero_point,
                                    sy, zy, yd);
                    } else if (ch < 3) {
                        want = dq_q(((const int8_t *)b)[(n * 2 + ch - 1) * plane + i],
                                    in[1].quant.scale, in[1].quant.zero_point, sy, zy, yd);
                    } else {
                        want = ld(c, yd, n * plane + i);
                    }
                    cr_assert(eq(i32, v, want), "case %d [%zu,%zu,%zu]", t, n, ch, i);
                }
            }
        }
    }
}

Test(kernels_quant, concat_matches_onnx_runtime) {
    /* ONNX Runtime 1.32.0's com.microsoft QLinearConcat (CPU), axis 1, of
     * x0 = {0, 1, 2, 3, 127, 128, 254, 255} (uint8, scale 0.1, zero point
     * 3) and x1 = the same bytes (scale 0.05, zero point 128) into scale
     * 0.1, zero point 128: x1's half steps round to even. */
    const uint8_t x[8] = {0, 1, 2, 3, 127, 128, 254, 255};
    const uint8_t ort0[8] = {125, 126, 127, 128, 252, 253, 255, 255};
    const uint8_t ort1[8] = {64, 64, 65, 66, 128, 128, 191, 192};
    plx_tensor_info in[2] = {info(PLX_DTYPE_UINT8, SHAPE(1, 8)),
                             info(PLX_DTYPE_UINT8, SHAPE(1, 8))};
    plx_tensor_info y = info(PLX_DTYPE_UINT8, SHAPE(1, 16));
    in[0].quant = per_tensor(0.1f, 3);
    in[1].quant = per_tensor(0.05f, 128);
    y.quant = per_tensor(0.1f, 128);
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_layer_view l = layer_of(PLX_OP_CONCAT, &d, in, 2, &y, 1);
    uint8_t got[16];
    const void *ins[] = {x, x};
    void *outs[] = {got};
    cr_assert(run_layer(lookup(PLX_OP_CONCAT), &l, ins, outs), "%s", g_err);
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(u8, got[i], ort0[i]), "x0 [%d]", i);
        cr_assert(eq(u8, got[8 + i], ort1[i]), "x1 [%d]", i);
    }
}
