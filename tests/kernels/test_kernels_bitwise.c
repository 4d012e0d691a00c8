/* Tests of cpu_ref's kernels for unary is_nan/is_inf/is_pos_inf/is_neg_inf
 * and bitwise_not, binary bitwise_and/or/xor and shift_left/right,
 * activation shrink (kernels_bitwise.c) and the lp pools
 * (kernels_lppool.c), called directly with hand-built layer views through
 * the operators' own entry points (plxk_run_unary, ...): hand-derived
 * cases and seeded random cases against plain reference loops written
 * here. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "L1"
#include "kernel_test_util.h"

/* xorshift64*, fixed seeds */
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static float rnd_f(float lo, float hi) { return lo + (float)rnd_unit() * (hi - lo); }

static const plx_dtype int_types[] = {PLX_DTYPE_INT8, PLX_DTYPE_UINT8, PLX_DTYPE_INT16,
                                      PLX_DTYPE_INT32, PLX_DTYPE_INT64};

/* Test-side element access, independent of the kernels' helpers. */
static int64_t get_i(plx_dtype t, const void *p, size_t i) {
    switch (t) {
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case PLX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case PLX_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}
static void set_i(plx_dtype t, void *p, size_t i, int64_t v) {
    switch (t) {
    case PLX_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break; /* gcc: modulo */
    case PLX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PLX_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case PLX_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}
/* The value v as dtype t holds it (two's complement wrap). */
static int64_t wrap_to(plx_dtype t, int64_t v) {
    int64_t buf[1];
    set_i(t, buf, 0, v);
    return get_i(t, buf, 0);
}

/* ---- unary: the float tests -------------------------------------------- */

static bool run_unary(plx_unary_func f, plx_dtype in_t, plx_dtype out_t, const void *x, void *y,
                      size_t n) {
    plx_unary_desc d = PLX_UNARY_DESC_INIT(f);
    plx_tensor_info in = info(in_t, SHAPE((int64_t)n)), out = info(out_t, SHAPE((int64_t)n));
    plx_layer_view l = layer_of(PLX_OP_UNARY, &d, &in, 1, &out, 1);
    char buf[256];
    const char *why = plxk_check_unary(&l, buf, sizeof buf);
    if (why) {
        snprintf(g_err, sizeof g_err, "%s", why); /* why is buf or a fixed string */
        return false;
    }
    const void *ins[1] = {x};
    void *outs[1] = {y};
    return run_layer(plxk_run_unary, &l, ins, outs);
}

static const plx_unary_func tests4[] = {PLX_UNARY_IS_NAN, PLX_UNARY_IS_INF, PLX_UNARY_IS_POS_INF,
                                        PLX_UNARY_IS_NEG_INF};

/* Expected rows: is_nan, is_inf, is_pos_inf, is_neg_inf of each value
 * (a NaN of either sign, +-inf, the largest finite values, zeros, a
 * subnormal, ordinary numbers). */
Test(unary_tests, float32_hand) {
    float x[10] = {0.0f, -0.0f, 1.5f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX,
                   FLT_MIN / 4.0f};
    static const uint8_t want[4][10] = {
        {0, 0, 0, 0, 0, 1, 1, 0, 0, 0},
        {0, 0, 0, 1, 1, 0, 0, 0, 0, 0},
        {0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
        {0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
    };
    for (int k = 0; k < 4; k++) {
        uint8_t y[10];
        memset(y, 0xa5, sizeof y);
        cr_assert(run_unary(tests4[k], PLX_DTYPE_FLOAT32, PLX_DTYPE_BOOL, x, y, 10), "%s", g_err);
        for (int i = 0; i < 10; i++) {
            cr_assert(eq(u8, y[i], want[k][i]), "%s element %d", plx_unary_func_name(tests4[k]), i);
        }
    }
}

/* The same on float16 and bfloat16 bits: +0, -0, 1, +inf, -inf, a quiet
 * NaN, a negative NaN with payload, the largest finite, a subnormal. */
Test(unary_tests, half_types_hand) {
    static const uint16_t h[9] = {0x0000, 0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7e00, 0xfc01, 0x7bff, 0x0001};
    static const uint16_t b[9] = {0x0000, 0x8000, 0x3f80, 0x7f80, 0xff80, 0x7fc0, 0xff81, 0x7f7f, 0x0001};
    static const uint8_t want[4][9] = {
        {0, 0, 0, 0, 0, 1, 1, 0, 0},
        {0, 0, 0, 1, 1, 0, 0, 0, 0},
        {0, 0, 0, 1, 0, 0, 0, 0, 0},
        {0, 0, 0, 0, 1, 0, 0, 0, 0},
    };
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < 4; k++) {
            uint8_t y[9];
            memset(y, 0xa5, sizeof y);
            cr_assert(run_unary(tests4[k], t ? PLX_DTYPE_BFLOAT16 : PLX_DTYPE_FLOAT16,
                                PLX_DTYPE_BOOL, t ? b : h, y, 9),
                      "%s", g_err);
            for (int i = 0; i < 9; i++) {
                cr_assert(eq(u8, y[i], want[k][i]), "%s %s element %d", t ? "bfloat16" : "float16",
                          plx_unary_func_name(tests4[k]), i);
            }
        }
    }
}

/* Random float32 bit patterns (many NaNs and infinities planted) against
 * isnan/isinf. */
Test(unary_tests, float32_random) {
    seed(11);
    enum { N = 1037 };
    float *x = malloc(N * sizeof *x);
    uint8_t *y = malloc(N);
    cr_assert(x && y);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)rnd();
        if (i % 5 == 0) {
            u |= 0x7f800000u; /* exponent all ones: inf or NaN */
        }
        if (i % 10 == 0) {
            u &= 0xff800000u; /* mantissa 0: an infinity */
        }
        memcpy(&x[i], &u, 4);
    }
    for (int k = 0; k < 4; k++) {
        cr_assert(run_unary(tests4[k], PLX_DTYPE_FLOAT32, PLX_DTYPE_BOOL, x, y, N), "%s", g_err);
        for (int i = 0; i < N; i++) {
            bool w = k == 0   ? isnan(x[i])
                     : k == 1 ? isinf(x[i])
                     : k == 2 ? isinf(x[i]) && x[i] > 0
                              : isinf(x[i]) && x[i] < 0;
            cr_assert(eq(u8, y[i], (uint8_t)w), "%s element %d", plx_unary_func_name(tests4[k]), i);
        }
    }
    free(x);
    free(y);
}

Test(unary_tests, bitwise_not_all_int_types) {
    seed(12);
    enum { N = 301 };
    int64_t x[N], y[N];
    for (size_t t = 0; t < sizeof int_types / sizeof int_types[0]; t++) {
        plx_dtype dt = int_types[t];
        for (int i = 0; i < N; i++) {
            set_i(dt, x, (size_t)i, (int64_t)rnd());
        }
        set_i(dt, x, 0, 0);
        set_i(dt, x, 1, -1);
        cr_assert(run_unary(PLX_UNARY_BITWISE_NOT, dt, dt, x, y, N), "%s", g_err);
        for (int i = 0; i < N; i++) {
            int64_t v = get_i(dt, x, (size_t)i);
            cr_assert(eq(i64, get_i(dt, y, (size_t)i), wrap_to(dt, ~v)), "%s element %d",
                      plx_dtype_name(dt), i);
        }
    }
    /* hand: ~0 = -1 (int8), ~5 = 250 (uint8), ~-1 = 0 */
    int8_t a[3] = {0, 5, -1}, ay[3];
    cr_assert(run_unary(PLX_UNARY_BITWISE_NOT, PLX_DTYPE_INT8, PLX_DTYPE_INT8, a, ay, 3));
    cr_assert(ay[0] == -1 && ay[1] == -6 && ay[2] == 0);
    uint8_t u[2] = {5, 255}, uy[2];
    cr_assert(run_unary(PLX_UNARY_BITWISE_NOT, PLX_DTYPE_UINT8, PLX_DTYPE_UINT8, u, uy, 2));
    cr_assert(uy[0] == 250 && uy[1] == 0);
}

Test(unary_tests, refusals) {
    int32_t xi[2] = {0, 0};
    float xf[2] = {0, 0};
    uint8_t y[8];
    cr_assert(not(run_unary(PLX_UNARY_IS_NAN, PLX_DTYPE_INT32, PLX_DTYPE_BOOL, xi, y, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "is_nan: dtype int32 is not supported"))), "%s", g_err);
    cr_assert(not(run_unary(PLX_UNARY_IS_INF, PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT32, xf, y, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "the output must be bool"))), "%s", g_err);
    cr_assert(not(run_unary(PLX_UNARY_BITWISE_NOT, PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT32, xf, y, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "bitwise_not: dtype float32 is not supported"))), "%s",
              g_err);
    cr_assert(not(run_unary(PLX_UNARY_BITWISE_NOT, PLX_DTYPE_BOOL, PLX_DTYPE_BOOL, y, y, 2)));
    cr_assert(not(run_unary((plx_unary_func)28, PLX_DTYPE_INT32, PLX_DTYPE_INT32, xi, y, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "unknown func 28"))), "%s", g_err);
}

/* ---- binary: bitwise and shifts ---------------------------------------- */

static bool run_binary(plx_binary_func f, plx_dtype t, const plx_tensor_info *a,
                       const plx_tensor_info *b, const plx_tensor_info *y, const void *pa,
                       const void *pb, void *py) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(f);
    plx_tensor_info ins[2] = {*a, *b}, out = *y;
    ins[0].dtype = ins[1].dtype = out.dtype = t;
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins, 2, &out, 1);
    char buf[256];
    const char *why = plxk_check_binary(&l, buf, sizeof buf);
    if (why) {
        snprintf(g_err, sizeof g_err, "%s", why); /* why is buf or a fixed string */
        return false;
    }
    const void *in[2] = {pa, pb};
    void *outs[1] = {py};
    return run_layer(plxk_run_binary, &l, in, outs);
}

/* The flat index into `in` (right-aligned, numpy broadcasting) of output
 * element i of `out`. */
static size_t bcast_index(const plx_tensor_info *in, const plx_tensor_info *out, size_t i) {
    size_t idx = 0, stride = 1;
    for (uint32_t d = out->rank; d-- > 0;) {
        size_t c = i % (size_t)out->dims[d];
        i /= (size_t)out->dims[d];
        int32_t id = (int32_t)d - (int32_t)(out->rank - in->rank);
        if (id >= 0) {
            if (in->dims[id] != 1) {
                idx += c * stride;
            }
            stride *= (size_t)in->dims[id];
        }
    }
    return idx;
}

static int64_t ref_bitwise(plx_binary_func f, int64_t a, int64_t b) {
    switch (f) {
    case PLX_BINARY_BITWISE_AND: return a & b;
    case PLX_BINARY_BITWISE_OR: return a | b;
    case PLX_BINARY_BITWISE_XOR: return a ^ b;
    case PLX_BINARY_SHIFT_LEFT: return b >= 8 ? 0 : (int64_t)(((uint64_t)a << b) & 0xffu);
    default: return b >= 8 ? 0 : a >> b;
    }
}

/* Every bitwise function on every integer dtype (shifts: uint8) over
 * broadcast patterns: equal shapes, a scalar either side, inner and outer
 * broadcasts, both operands broadcast, and a zero-sized output. */
Test(binary_bitwise, random_broadcasts) {
    static const struct {
        int64_t a[4], b[4], y[4];
        uint32_t ra, rb, ry;
    } shapes[] = {
        {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, 3, 3, 3},
        {{5, 7}, {0}, {5, 7}, 2, 0, 2},
        {{0}, {3, 9}, {3, 9}, 0, 2, 2},
        {{2, 3, 5}, {3, 1}, {2, 3, 5}, 3, 2, 3},
        {{4, 1, 6}, {1, 5, 1}, {4, 5, 6}, 3, 3, 3},
        {{3, 1}, {1, 17}, {3, 17}, 2, 2, 2},
        {{2, 1, 3, 1}, {4, 1, 1}, {2, 4, 3, 1}, 4, 3, 4},
        {{2, 0, 3}, {3}, {2, 0, 3}, 3, 1, 3},
    };
    static const plx_binary_func funcs[] = {PLX_BINARY_BITWISE_AND, PLX_BINARY_BITWISE_OR,
                                            PLX_BINARY_BITWISE_XOR, PLX_BINARY_SHIFT_LEFT,
                                            PLX_BINARY_SHIFT_RIGHT};
    seed(21);
    int64_t pa[128], pb[128], py[128];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        plx_tensor_info a = info(PLX_DTYPE_INT8, shapes[s].a, shapes[s].ra);
        plx_tensor_info b = info(PLX_DTYPE_INT8, shapes[s].b, shapes[s].rb);
        plx_tensor_info y = info(PLX_DTYPE_INT8, shapes[s].y, shapes[s].ry);
        for (size_t fi = 0; fi < sizeof funcs / sizeof funcs[0]; fi++) {
            plx_binary_func f = funcs[fi];
            bool shift = f >= PLX_BINARY_SHIFT_LEFT;
            for (size_t t = 0; t < sizeof int_types / sizeof int_types[0]; t++) {
                plx_dtype dt = int_types[t];
                if (shift && dt != PLX_DTYPE_UINT8) {
                    continue;
                }
                for (size_t i = 0; i < numel(&a); i++) {
                    set_i(dt, pa, i, (int64_t)rnd());
                }
                for (size_t i = 0; i < numel(&b); i++) {
                    /* shifts: 0..11, some at or past the width */
                    set_i(dt, pb, i, shift ? (int64_t)(rnd() % 12) : (int64_t)rnd());
                }
                memset(py, 0xa5, sizeof py);
                cr_assert(run_binary(f, dt, &a, &b, &y, pa, pb, py), "%s", g_err);
                for (size_t i = 0; i < numel(&y); i++) {
                    int64_t va = get_i(dt, pa, bcast_index(&a, &y, i));
                    int64_t vb = get_i(dt, pb, bcast_index(&b, &y, i));
                    cr_assert(eq(i64, get_i(dt, py, i), wrap_to(dt, ref_bitwise(f, va, vb))),
                              "shape %zu %s %s element %zu (%lld, %lld)", s,
                              plx_binary_func_name(f), plx_dtype_name(dt), i, (long long)va,
                              (long long)vb);
                }
            }
        }
    }
}

/* ONNX's BitShift example and the widths: 16 >> 1 = 8, 4 >> 2 = 1,
 * 1 >> 3 = 0; 16 << 1 = 32, 200 << 1 wraps to 144; by 7, 8 and 255. */
Test(binary_bitwise, shifts_hand) {
    uint8_t x[6] = {16, 4, 1, 200, 255, 255}, s[6] = {1, 2, 3, 1, 7, 8}, y[6];
    plx_tensor_info i6 = info(PLX_DTYPE_UINT8, SHAPE(6));
    cr_assert(run_binary(PLX_BINARY_SHIFT_RIGHT, PLX_DTYPE_UINT8, &i6, &i6, &i6, x, s, y));
    static const uint8_t r[6] = {8, 1, 0, 100, 1, 0};
    cr_assert(eq(int, memcmp(y, r, 6), 0));
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT8, &i6, &i6, &i6, x, s, y));
    static const uint8_t l[6] = {32, 16, 8, 144, 128, 0};
    cr_assert(eq(int, memcmp(y, l, 6), 0));
    uint8_t big = 255;
    plx_tensor_info one = info(PLX_DTYPE_UINT8, SCALAR);
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT8, &i6, &one, &i6, x, &big, y));
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(u8, y[i], 0));
    }
    /* int16: -1 & 0x0f0f = 0x0f0f; 0x00ff | 0xff00 = -1; -1 ^ 1 = -2 */
    int16_t a[3] = {-1, 0x00ff, -1}, b[3] = {0x0f0f, (int16_t)0xff00, 1}, c[3];
    plx_tensor_info i3 = info(PLX_DTYPE_INT16, SHAPE(3));
    cr_assert(run_binary(PLX_BINARY_BITWISE_AND, PLX_DTYPE_INT16, &i3, &i3, &i3, a, b, c));
    cr_assert(eq(i16, c[0], 0x0f0f));
    cr_assert(run_binary(PLX_BINARY_BITWISE_OR, PLX_DTYPE_INT16, &i3, &i3, &i3, a, b, c));
    cr_assert(eq(i16, c[1], -1));
    cr_assert(run_binary(PLX_BINARY_BITWISE_XOR, PLX_DTYPE_INT16, &i3, &i3, &i3, a, b, c));
    cr_assert(eq(i16, c[2], -2));
}

Test(binary_bitwise, refusals) {
    plx_tensor_info i2 = info(PLX_DTYPE_INT8, SHAPE(2)), i3 = info(PLX_DTYPE_INT8, SHAPE(3));
    float f[4] = {0};
    cr_assert(not(run_binary(PLX_BINARY_BITWISE_AND, PLX_DTYPE_FLOAT32, &i2, &i2, &i2, f, f, f)));
    cr_assert(not(zero(ptr, strstr(g_err, "bitwise_and: dtype float32 is not supported"))), "%s",
              g_err);
    cr_assert(not(run_binary(PLX_BINARY_BITWISE_OR, PLX_DTYPE_BOOL, &i2, &i2, &i2, f, f, f)));
    cr_assert(not(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_INT8, &i2, &i2, &i2, f, f, f)));
    cr_assert(not(zero(ptr, strstr(g_err, "shift_left: dtype int8 is not supported (unsigned types only)"))),
              "%s", g_err);
    cr_assert(not(run_binary(PLX_BINARY_SHIFT_RIGHT, PLX_DTYPE_UINT8, &i2, &i3, &i3, f, f, f)));
    cr_assert(not(zero(ptr, strstr(g_err, "not the broadcast"))), "%s", g_err);
    /* mixed dtypes and a wrong output dtype */
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_BITWISE_XOR);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_INT32, SHAPE(2)), info(PLX_DTYPE_INT64, SHAPE(2))};
    plx_tensor_info out = info(PLX_DTYPE_INT32, SHAPE(2));
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins, 2, &out, 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    ins[1].dtype = PLX_DTYPE_INT32;
    cr_assert(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err)));
    out.dtype = PLX_DTYPE_BOOL;
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    d.func = (plx_binary_func)22;
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
}

/* ---- activation shrink -------------------------------------------------- */

static bool run_shrink(float lambd, float bias, plx_dtype t, const void *x, void *y, size_t n) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    d.alpha = lambd;
    d.beta = bias;
    plx_tensor_info in = info(t, SHAPE((int64_t)n)), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    const void *ins[1] = {x};
    void *outs[1] = {y};
    return run_layer(plxk_run_activation, &l, ins, outs);
}

Test(shrink, defaults) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    cr_assert(eq(flt, d.alpha, 0.5f));
    cr_assert(eq(flt, d.beta, 0.0f));
    cr_assert(eq(str, (char *)plx_activation_func_name(PLX_ACT_SHRINK), "shrink"));
}

/* ONNX's examples: hard (lambd 1.5, bias 0) and soft (lambd 1.5, bias
 * 1.5) of -2..2; NaN gives 0 (both comparisons false). */
Test(shrink, onnx_examples_float32) {
    float x[6] = {-2, -1, 0, 1, 2, NAN}, y[6];
    cr_assert(run_shrink(1.5f, 0.0f, PLX_DTYPE_FLOAT32, x, y, 6), "%s", g_err);
    static const float hard[6] = {-2, 0, 0, 0, 2, 0};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(flt, y[i], hard[i]), "hard %d", i);
    }
    cr_assert(run_shrink(1.5f, 1.5f, PLX_DTYPE_FLOAT32, x, y, 6), "%s", g_err);
    static const float soft[6] = {-0.5f, 0, 0, 0, 0.5f, 0};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(flt, y[i], soft[i]), "soft %d", i);
    }
}

Test(shrink, random_float_types) {
    seed(31);
    enum { N = 517 };
    float x[N], y[N];
    uint16_t h[N], hy[N];
    for (int i = 0; i < N; i++) {
        x[i] = rnd_f(-4.0f, 4.0f);
    }
    cr_assert(run_shrink(0.75f, 0.25f, PLX_DTYPE_FLOAT32, x, y, N), "%s", g_err);
    for (int i = 0; i < N; i++) {
        float w = x[i] < -0.75f ? x[i] + 0.25f : x[i] > 0.75f ? x[i] - 0.25f : 0.0f;
        cr_assert(eq(flt, y[i], w), "element %d", i);
    }
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < N; i++) {
            h[i] = t ? plx_float32_to_bfloat16(x[i]) : plx_float32_to_float16(x[i]);
        }
        cr_assert(run_shrink(0.75f, 0.25f, t ? PLX_DTYPE_BFLOAT16 : PLX_DTYPE_FLOAT16, h, hy, N),
                  "%s", g_err);
        for (int i = 0; i < N; i++) {
            float v = t ? plx_bfloat16_to_float32(h[i]) : plx_float16_to_float32(h[i]);
            float w = v < -0.75f ? v + 0.25f : v > 0.75f ? v - 0.25f : 0.0f;
            uint16_t wb = t ? plx_float32_to_bfloat16(w) : plx_float32_to_float16(w);
            cr_assert(eq(u16, hy[i], wb), "%s element %d", t ? "bfloat16" : "float16", i);
        }
    }
}

/* Integers: in double, truncated toward zero, saturated to the dtype:
 * int8 with lambd 1.5, bias 0.5: -128 -> -127.5 -> -127; -2 -> -1.5 ->
 * -1; -1, 0, 1 -> 0; 2 -> 1.5 -> 1; 127 -> 126.5 -> 126. Bias -200 on
 * uint8 200: 400 saturates to 255. */
Test(shrink, integers) {
    int8_t x[7] = {-128, -2, -1, 0, 1, 2, 127}, y[7];
    cr_assert(run_shrink(1.5f, 0.5f, PLX_DTYPE_INT8, x, y, 7), "%s", g_err);
    static const int8_t w[7] = {-127, -1, 0, 0, 0, 1, 126};
    for (int i = 0; i < 7; i++) {
        cr_assert(eq(i8, y[i], w[i]), "element %d", i);
    }
    uint8_t u[2] = {200, 1}, uy[2];
    cr_assert(run_shrink(0.5f, -200.0f, PLX_DTYPE_UINT8, u, uy, 2), "%s", g_err);
    cr_assert(eq(u8, uy[0], 255));
    cr_assert(eq(u8, uy[1], 201));
    int64_t l[2] = {INT64_MAX, -5}, ly[2];
    cr_assert(run_shrink(0.5f, -10.0f, PLX_DTYPE_INT64, l, ly, 2), "%s", g_err);
    cr_assert(eq(i64, ly[0], INT64_MAX));
    cr_assert(eq(i64, ly[1], -15));
}

Test(shrink, refusals) {
    uint8_t b[2] = {0, 1}, y[2];
    cr_assert(not(run_shrink(0.5f, 0.0f, PLX_DTYPE_BOOL, b, y, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "shrink: dtype bool is not supported"))), "%s", g_err);
    float x[2] = {0, 0}, fy[2];
    cr_assert(not(run_shrink(NAN, 0.0f, PLX_DTYPE_FLOAT32, x, fy, 2)));
    cr_assert(not(zero(ptr, strstr(g_err, "must not be NaN"))), "%s", g_err);
}

/* ---- float64 and the unsigned types (ABI 1.3) --------------------------- */

static const plx_dtype uint_types[] = {PLX_DTYPE_UINT8, PLX_DTYPE_UINT16, PLX_DTYPE_UINT32,
                                       PLX_DTYPE_UINT64};

/* Test-side access to unsigned elements of any width, as uint64. */
static uint64_t get_u(plx_dtype t, const void *p, size_t i) {
    switch (plx_dtype_size(t)) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}
static void set_u(plx_dtype t, void *p, size_t i, uint64_t v) {
    switch (plx_dtype_size(t)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

/* ONNX BitShift and the bitwise functions on `bits`-bit unsigned values: a
 * shift by the width or more gives 0. */
static uint64_t ref_ubitwise(plx_binary_func f, uint64_t a, uint64_t b, unsigned bits) {
    uint64_t mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1u;
    switch (f) {
    case PLX_BINARY_BITWISE_AND: return a & b;
    case PLX_BINARY_BITWISE_OR: return a | b;
    case PLX_BINARY_BITWISE_XOR: return a ^ b;
    case PLX_BINARY_SHIFT_LEFT: return b >= bits ? 0 : (a << b) & mask;
    default: return b >= bits ? 0 : a >> b;
    }
}

/* Every bitwise function and both shifts on every unsigned width, over
 * broadcasts, values across the whole range (uint64's past INT64_MAX
 * too), shift counts up to the width + 3. */
Test(binary_bitwise, unsigned_random_broadcasts) {
    static const struct {
        int64_t a[3], b[3], y[3];
        uint32_t ra, rb, ry;
    } shapes[] = {
        {{3, 5}, {3, 5}, {3, 5}, 2, 2, 2},
        {{2, 3, 4}, {4}, {2, 3, 4}, 3, 1, 3},
        {{7}, {0}, {7}, 1, 0, 1},
        {{3, 1}, {1, 6}, {3, 6}, 2, 2, 2},
    };
    static const plx_binary_func funcs[] = {PLX_BINARY_BITWISE_AND, PLX_BINARY_BITWISE_OR,
                                            PLX_BINARY_BITWISE_XOR, PLX_BINARY_SHIFT_LEFT,
                                            PLX_BINARY_SHIFT_RIGHT};
    seed(41);
    uint64_t pa[32], pb[32], py[32];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t t = 0; t < sizeof uint_types / sizeof uint_types[0]; t++) {
            plx_dtype dt = uint_types[t];
            unsigned bits = 8u * (unsigned)plx_dtype_size(dt);
            plx_tensor_info a = info(dt, shapes[s].a, shapes[s].ra);
            plx_tensor_info b = info(dt, shapes[s].b, shapes[s].rb);
            plx_tensor_info y = info(dt, shapes[s].y, shapes[s].ry);
            for (size_t fi = 0; fi < sizeof funcs / sizeof funcs[0]; fi++) {
                plx_binary_func f = funcs[fi];
                bool shift = f >= PLX_BINARY_SHIFT_LEFT;
                for (size_t i = 0; i < numel(&a); i++) {
                    set_u(dt, pa, i, rnd());
                }
                for (size_t i = 0; i < numel(&b); i++) {
                    set_u(dt, pb, i, shift ? rnd() % (bits + 4) : rnd());
                }
                memset(py, 0xa5, sizeof py);
                cr_assert(run_binary(f, dt, &a, &b, &y, pa, pb, py), "%s", g_err);
                for (size_t i = 0; i < numel(&y); i++) {
                    uint64_t va = get_u(dt, pa, bcast_index(&a, &y, i));
                    uint64_t vb = get_u(dt, pb, bcast_index(&b, &y, i));
                    cr_assert(eq(u64, get_u(dt, py, i), ref_ubitwise(f, va, vb, bits)),
                              "shape %zu %s %s element %zu", s, plx_binary_func_name(f),
                              plx_dtype_name(dt), i);
                }
            }
        }
    }
}

/* ONNX's BitShift node tests, widened: uint16 [16, 4, 1] >> [1, 2, 3] =
 * [8, 1, 0] and << = [32, 16, 8]; the top bits; shifts by the width and
 * past it give 0 in every width. */
Test(binary_bitwise, unsigned_shifts_hand) {
    plx_tensor_info i3 = info(PLX_DTYPE_UINT16, SHAPE(3));
    uint16_t x16[3] = {16, 4, 1}, s16[3] = {1, 2, 3}, y16[3];
    cr_assert(run_binary(PLX_BINARY_SHIFT_RIGHT, PLX_DTYPE_UINT16, &i3, &i3, &i3, x16, s16, y16));
    cr_assert(y16[0] == 8 && y16[1] == 1 && y16[2] == 0);
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT16, &i3, &i3, &i3, x16, s16, y16));
    cr_assert(y16[0] == 32 && y16[1] == 16 && y16[2] == 8);
    uint16_t h[3] = {0x8001, 0x8001, 0xffff}, hs[3] = {1, 15, 16};
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT16, &i3, &i3, &i3, h, hs, y16));
    cr_assert(y16[0] == 0x0002 && y16[1] == 0x8000 && y16[2] == 0);
    uint32_t w[3] = {1, 0x80000000u, 0xffffffffu}, ws[3] = {31, 31, 32}, y32[3];
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT32, &i3, &i3, &i3, w, ws, y32));
    cr_assert(y32[0] == 0x80000000u && y32[1] == 0 && y32[2] == 0);
    cr_assert(run_binary(PLX_BINARY_SHIFT_RIGHT, PLX_DTYPE_UINT32, &i3, &i3, &i3, w, ws, y32));
    cr_assert(y32[0] == 0 && y32[1] == 1 && y32[2] == 0);
    uint64_t q[3] = {1, UINT64_C(1) << 63, UINT64_MAX}, qs[3] = {63, 63, 64}, y64[3];
    cr_assert(run_binary(PLX_BINARY_SHIFT_LEFT, PLX_DTYPE_UINT64, &i3, &i3, &i3, q, qs, y64));
    cr_assert(eq(u64, y64[0], UINT64_C(1) << 63));
    cr_assert(eq(u64, y64[1], 0));
    cr_assert(eq(u64, y64[2], 0));
    qs[2] = UINT64_MAX;
    cr_assert(run_binary(PLX_BINARY_SHIFT_RIGHT, PLX_DTYPE_UINT64, &i3, &i3, &i3, q, qs, y64));
    cr_assert(eq(u64, y64[0], 0));
    cr_assert(eq(u64, y64[1], 1));
    cr_assert(eq(u64, y64[2], 0));
}

Test(unary_tests, bitwise_not_unsigned) {
    seed(42);
    enum { N = 67 };
    uint64_t x[N], y[N];
    for (size_t t = 0; t < sizeof uint_types / sizeof uint_types[0]; t++) {
        plx_dtype dt = uint_types[t];
        unsigned bits = 8u * (unsigned)plx_dtype_size(dt);
        uint64_t mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1u;
        for (int i = 0; i < N; i++) {
            set_u(dt, x, (size_t)i, rnd());
        }
        set_u(dt, x, 0, 0);
        set_u(dt, x, 1, mask);
        cr_assert(run_unary(PLX_UNARY_BITWISE_NOT, dt, dt, x, y, N), "%s", g_err);
        for (int i = 0; i < N; i++) {
            cr_assert(eq(u64, get_u(dt, y, (size_t)i), ~get_u(dt, x, (size_t)i) & mask),
                      "%s element %d", plx_dtype_name(dt), i);
        }
    }
}

/* float64: a NaN of either sign and with a payload, +-inf, the largest
 * finite values, zeros, a subnormal, ordinary numbers. */
Test(unary_tests, float64_hand) {
    double x[11] = {0.0, -0.0, 1.5, INFINITY, -INFINITY, NAN, -NAN, DBL_MAX, -DBL_MAX,
                    DBL_MIN / 4.0, 0.0};
    uint64_t payload = UINT64_C(0x7ff0000000000001); /* a signalling NaN's bits */
    memcpy(&x[10], &payload, sizeof payload);
    static const uint8_t want[4][11] = {
        {0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1},
        {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0},
        {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
        {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
    };
    for (int k = 0; k < 4; k++) {
        uint8_t y[11];
        memset(y, 0xa5, sizeof y);
        cr_assert(run_unary(tests4[k], PLX_DTYPE_FLOAT64, PLX_DTYPE_BOOL, x, y, 11), "%s", g_err);
        for (int i = 0; i < 11; i++) {
            cr_assert(eq(u8, y[i], want[k][i]), "%s element %d", plx_unary_func_name(tests4[k]), i);
        }
    }
}

/* float64 in double (lambd and bias widened from the descriptor's
 * floats); uint16 and uint32 saturate as the narrower integers do; uint64
 * past INT64_MAX shrinks in double and saturates at UINT64_MAX. */
Test(shrink, float64_and_unsigned) {
    double x[6] = {-2, -1, 0, 1, 1e300, NAN}, y[6];
    cr_assert(run_shrink(1.5f, 0.25f, PLX_DTYPE_FLOAT64, x, y, 6), "%s", g_err);
    static const double w[6] = {-1.75, 0, 0, 0, 1e300, 0};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(dbl, y[i], w[i]), "element %d", i);
    }
    uint16_t u16[3] = {65535, 100, 1}, y16[3];
    cr_assert(run_shrink(0.5f, -10.0f, PLX_DTYPE_UINT16, u16, y16, 3), "%s", g_err);
    cr_assert(y16[0] == 65535 && y16[1] == 110 && y16[2] == 11);
    cr_assert(run_shrink(0.5f, 10.0f, PLX_DTYPE_UINT16, u16, y16, 3), "%s", g_err);
    cr_assert(y16[0] == 65525 && y16[1] == 90 && y16[2] == 0);
    uint32_t u32[2] = {UINT32_MAX, 3}, y32[2];
    cr_assert(run_shrink(0.5f, -1.0f, PLX_DTYPE_UINT32, u32, y32, 2), "%s", g_err);
    cr_assert(y32[0] == UINT32_MAX && y32[1] == 4);
    uint64_t u64[3] = {UINT64_MAX, UINT64_C(1) << 63, 5}, y64[3];
    /* 2^63 + 2^20 is exact in double (its ulp there is 2^11) */
    cr_assert(run_shrink(0.5f, -1048576.0f, PLX_DTYPE_UINT64, u64, y64, 3), "%s", g_err);
    cr_assert(eq(u64, y64[0], UINT64_MAX));
    cr_assert(eq(u64, y64[1], (UINT64_C(1) << 63) + 1048576u));
    cr_assert(eq(u64, y64[2], 1048581));
}

/* ---- lp pools ------------------------------------------------------------ */

/* The reference: explicit pads, floor mode; y[n, c, oh, ow] = (sum over
 * taps inside the input of |x|^p)^(1/p) in double. */
static void ref_lp_pool(const float *x, int64_t n, int64_t c, const int64_t in[2],
                        const int64_t k[2], const int64_t s[2], const int64_t d[2],
                        const int64_t pb[2], const int64_t out[2], int64_t p, double *y) {
    for (int64_t i = 0; i < n * c; i++) {
        for (int64_t oh = 0; oh < out[0]; oh++) {
            for (int64_t ow = 0; ow < out[1]; ow++) {
                double sum = 0;
                for (int64_t kh = 0; kh < k[0]; kh++) {
                    for (int64_t kw = 0; kw < k[1]; kw++) {
                        int64_t ih = oh * s[0] - pb[0] + kh * d[0], iw = ow * s[1] - pb[1] + kw * d[1];
                        if (ih >= 0 && ih < in[0] && iw >= 0 && iw < in[1]) {
                            sum += pow(fabs((double)x[(i * in[0] + ih) * in[1] + iw]), (double)p);
                        }
                    }
                }
                y[(i * out[0] + oh) * out[1] + ow] = pow(sum, 1.0 / (double)p);
            }
        }
    }
}

static bool run_lp(const plx_pool_desc *d, const plx_tensor_info *x, const plx_tensor_info *y,
                   const void *px, void *py) {
    plx_layer_view l = layer_of(PLX_OP_POOL, d, x, 1, y, 1);
    char buf[256];
    const char *why = plxk_check_pool(&l, buf, sizeof buf);
    if (why) {
        snprintf(g_err, sizeof g_err, "%s", why); /* why is buf or a fixed string */
        return false;
    }
    const void *ins[1] = {px};
    void *outs[1] = {py};
    return run_layer(plxk_run_pool, &l, ins, outs);
}

/* Random float32 2-D pools over p 1, 2 and 3 with strides, dilations and
 * pads (pads as large as the kernel, whose windows lie partly or wholly
 * in the padding), and a 1-D one. */
Test(lp_pool, random_float32) {
    static const struct {
        int64_t in[2], k[2], s[2], d[2], pb[2], pe[2];
        uint32_t rank;
    } cases[] = {
        {{5, 6}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 4},
        {{7, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 0}, {1, 2}, 4},
        {{9, 9}, {2, 3}, {1, 2}, {2, 2}, {0, 1}, {1, 1}, 4},
        {{4, 4}, {2, 2}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 4}, /* ONNX's lppool_2d_pads shape */
        {{1, 11}, {1, 3}, {1, 2}, {1, 1}, {0, 1}, {0, 1}, 3}, /* 1-D: slot 1 */
    };
    seed(41);
    float x[2 * 3 * 9 * 11];
    float y[2 * 3 * 16 * 16];
    double want[2 * 3 * 16 * 16];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int64_t out[2];
        for (int j = 0; j < 2; j++) {
            int64_t ek = (cases[ci].k[j] - 1) * cases[ci].d[j] + 1;
            out[j] = (cases[ci].in[j] + cases[ci].pb[j] + cases[ci].pe[j] - ek) / cases[ci].s[j] + 1;
        }
        const int64_t n = 2, c = 3;
        for (int64_t i = 0; i < n * c * cases[ci].in[0] * cases[ci].in[1]; i++) {
            x[i] = rnd_f(-3.0f, 3.0f);
        }
        for (int64_t p = 1; p <= 3; p++) {
            plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_LP);
            d.p = p;
            plx_tensor_info xi, yi;
            int j0 = cases[ci].rank == 4 ? 0 : 1; /* 1-D: the descriptor's slot 0 */
            for (int j = j0; j < 2; j++) {
                d.kernel[j - j0] = cases[ci].k[j];
                d.strides[j - j0] = cases[ci].s[j];
                d.dilations[j - j0] = cases[ci].d[j];
                d.pads_begin[j - j0] = cases[ci].pb[j];
                d.pads_end[j - j0] = cases[ci].pe[j];
            }
            if (cases[ci].rank == 4) {
                xi = info(PLX_DTYPE_FLOAT32, SHAPE(n, c, cases[ci].in[0], cases[ci].in[1]));
                yi = info(PLX_DTYPE_FLOAT32, SHAPE(n, c, out[0], out[1]));
            } else {
                xi = info(PLX_DTYPE_FLOAT32, SHAPE(n, c, cases[ci].in[1]));
                yi = info(PLX_DTYPE_FLOAT32, SHAPE(n, c, out[1]));
            }
            memset(y, 0xa5, sizeof y);
            cr_assert(run_lp(&d, &xi, &yi, x, y), "case %zu p %lld: %s", ci, (long long)p, g_err);
            ref_lp_pool(x, n, c, cases[ci].in, cases[ci].k, cases[ci].s, cases[ci].d,
                        cases[ci].pb, out, p, want);
            for (size_t i = 0; i < numel(&yi); i++) {
                cr_assert(fabs((double)y[i] - want[i]) <= 1e-5 * (1.0 + fabs(want[i])),
                          "case %zu p %lld element %zu: got %.9g, expected %.9g", ci, (long long)p, i,
                          (double)y[i], want[i]);
            }
        }
    }
}

/* By hand: X = [[1, -2], [3, -4]], kernel 2x2: p 1 gives 10, p 2
 * sqrt(30), p 3 cbrt(100); with pads 2 all round and kernel 2, the corner
 * windows lie wholly in the padding and give 0. float16 and bfloat16 give
 * the same rounded once. */
Test(lp_pool, hand_and_half_types) {
    float x[4] = {1, -2, 3, -4};
    float y[25];
    plx_tensor_info xi = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2, 2));
    plx_tensor_info yi = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 1, 1));
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_LP);
    cr_assert(eq(i64, d.p, 2));
    d.kernel[0] = d.kernel[1] = 2;
    static const double want[3] = {10.0, 5.477225575051661, 4.641588833612779};
    for (int p = 1; p <= 3; p++) {
        d.p = p;
        cr_assert(run_lp(&d, &xi, &yi, x, y), "%s", g_err);
        cr_assert(fabs(y[0] - want[p - 1]) < 1e-5, "p %d: %g", p, (double)y[0]);
    }
    d.p = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 2;
    yi = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 5, 5));
    cr_assert(run_lp(&d, &xi, &yi, x, y), "%s", g_err);
    cr_assert(eq(flt, y[0], 0.0f));
    cr_assert(eq(flt, y[24], 0.0f));
    cr_assert(eq(flt, y[6], 1.0f));                      /* only x[0, 0] */
    cr_assert(fabs(y[12] - 5.477225575051661) < 1e-5); /* the whole input */
    for (int t = 0; t < 2; t++) {
        uint16_t h[4], hy[25];
        for (int i = 0; i < 4; i++) {
            h[i] = t ? plx_float32_to_bfloat16(x[i]) : plx_float32_to_float16(x[i]);
        }
        plx_tensor_info hx = xi, hyi = yi;
        hx.dtype = hyi.dtype = t ? PLX_DTYPE_BFLOAT16 : PLX_DTYPE_FLOAT16;
        cr_assert(run_lp(&d, &hx, &hyi, h, hy), "%s", g_err);
        uint16_t w = t ? plx_float32_to_bfloat16(5.477225575051661f)
                       : plx_float32_to_float16(5.477225575051661f);
        cr_assert(eq(u16, hy[12], w), "%s", t ? "bfloat16" : "float16");
        cr_assert(eq(u16, hy[0], 0));
    }
}

Test(lp_pool, refusals) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_LP);
    d.kernel[0] = d.kernel[1] = 2;
    plx_tensor_info xi = info(PLX_DTYPE_INT8, SHAPE(1, 1, 2, 2));
    plx_tensor_info yi = info(PLX_DTYPE_INT8, SHAPE(1, 1, 1, 1));
    int8_t x[4] = {0}, y[1];
    cr_assert(not(run_lp(&d, &xi, &yi, x, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "lp pool in float32, float16 and bfloat16 only, not int8"))),
              "%s", g_err);
    xi.dtype = yi.dtype = PLX_DTYPE_FLOAT32;
    d.p = 0;
    cr_assert(not(run_lp(&d, &xi, &yi, x, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "p >= 1, got 0"))), "%s", g_err);
    d.p = 2;
    yi.dims[3] = 2; /* a wrong output shape */
    cr_assert(not(run_lp(&d, &xi, &yi, x, y)));
}

static bool run_global_lp(int64_t p, const plx_tensor_info *x, const plx_tensor_info *y,
                          const void *px, void *py) {
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    d.p = p;
    plx_layer_view l = layer_of(PLX_OP_GLOBAL_POOL, &d, x, 1, y, 1);
    char buf[256];
    const char *why = plxk_check_global_pool(&l, buf, sizeof buf);
    if (why) {
        snprintf(g_err, sizeof g_err, "%s", why); /* why is buf or a fixed string */
        return false;
    }
    const void *ins[1] = {px};
    void *outs[1] = {py};
    return run_layer(plxk_run_global_pool, &l, ins, outs);
}

Test(global_lp_pool, random_and_half_types) {
    seed(51);
    enum { N = 2, C = 3, H = 5, W = 7 };
    float x[N * C * H * W], y[N * C];
    for (int i = 0; i < N * C * H * W; i++) {
        x[i] = rnd_f(-2.0f, 2.0f);
    }
    plx_tensor_info xi = info(PLX_DTYPE_FLOAT32, SHAPE(N, C, H, W));
    plx_tensor_info yi = info(PLX_DTYPE_FLOAT32, SHAPE(N, C, 1, 1));
    for (int64_t p = 1; p <= 4; p++) {
        cr_assert(run_global_lp(p, &xi, &yi, x, y), "%s", g_err);
        for (int o = 0; o < N * C; o++) {
            double s = 0;
            for (int i = 0; i < H * W; i++) {
                s += pow(fabs((double)x[o * H * W + i]), (double)p);
            }
            double w = pow(s, 1.0 / (double)p);
            cr_assert(fabs(y[o] - w) <= 1e-5 * (1 + w), "p %lld map %d: %g vs %g", (long long)p, o,
                      (double)y[o], w);
        }
    }
    /* float16, 1-D spatial (rank 3): |3| + |-4| = 7 at p 1, 5 at p 2 */
    uint16_t h[2] = {plx_float32_to_float16(3.0f), plx_float32_to_float16(-4.0f)}, hy[1];
    plx_tensor_info hx = info(PLX_DTYPE_FLOAT16, SHAPE(1, 1, 2));
    plx_tensor_info hyi = info(PLX_DTYPE_FLOAT16, SHAPE(1, 1, 1));
    cr_assert(run_global_lp(1, &hx, &hyi, h, hy), "%s", g_err);
    cr_assert(eq(flt, plx_float16_to_float32(hy[0]), 7.0f));
    cr_assert(run_global_lp(2, &hx, &hyi, h, hy), "%s", g_err);
    cr_assert(eq(flt, plx_float16_to_float32(hy[0]), 5.0f));
    hx.dtype = hyi.dtype = PLX_DTYPE_BFLOAT16;
    uint16_t b[2] = {plx_float32_to_bfloat16(3.0f), plx_float32_to_bfloat16(-4.0f)};
    cr_assert(run_global_lp(3, &hx, &hyi, b, hy), "%s", g_err);
    cr_assert(eq(u16, hy[0], plx_float32_to_bfloat16((float)cbrt(91.0))));
    /* refusals */
    hx.dtype = hyi.dtype = PLX_DTYPE_INT8;
    cr_assert(not(run_global_lp(2, &hx, &hyi, b, hy)));
    hx.dtype = hyi.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(not(run_global_lp(0, &hx, &hyi, b, hy)));
    cr_assert(not(zero(ptr, strstr(g_err, "p >= 1, got 0"))), "%s", g_err);
}
