/* Tests of cpu_ref's elementwise kernels (kernels_elementwise.c), called
 * directly with hand-built layer views: hand-derived cases (the derivation
 * is in the comments) and seeded random cases checked against plain
 * reference loops written here, independently of the kernels. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* ---- helpers ------------------------------------------------------------ */

#define KT_LAYER_NAME "L1"
#include "kernel_test_util.h"

/* xorshift64*, fixed seeds */
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static float rnd_f(float lo, float hi) { return lo + (float)rnd_unit() * (hi - lo); }

/* Test-side element access, independent of the kernels' helpers. */
static int64_t get_i(plx_dtype t, const void *p, size_t i) {
    switch (t) {
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case PLX_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case PLX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case PLX_DTYPE_INT32: return ((const int32_t *)p)[i];
    case PLX_DTYPE_INT64: return ((const int64_t *)p)[i];
    default: cr_assert(eq(int, 0, 1), "get_i on %s", plx_dtype_name(t)); return 0;
    }
}
static void set_i(plx_dtype t, void *p, size_t i, int64_t v) {
    switch (t) {
    case PLX_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break; /* gcc: modulo */
    case PLX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PLX_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    case PLX_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case PLX_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case PLX_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    default: cr_assert(eq(int, 0, 1), "set_i on %s", plx_dtype_name(t));
    }
}
static void int_limits(plx_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case PLX_DTYPE_INT8: *lo = -128; *hi = 127; break;
    case PLX_DTYPE_UINT8: *lo = 0; *hi = 255; break;
    case PLX_DTYPE_INT16: *lo = -32768; *hi = 32767; break;
    case PLX_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

static bool close_f(float got, double want, double tol) {
    if (isnan(want)) {
        return isnan(got);
    }
    if (isinf(want)) {
        return got == want;
    }
    return fabs((double)got - want) <= tol * (1.0 + fabs(want));
}

#define ASSERT_CLOSE(got, want, tol, ...)                                                       \
    cr_assert(close_f((got), (want), (tol)), "got %.9g want %.9g: " __VA_ARGS__, (double)(got), \
              (double)(want))

/* unravels out index i and maps it to a broadcast input's flat index */
static size_t bcast_index(const plx_tensor_info *in, const plx_tensor_info *out, size_t i) {
    size_t coord[PLX_MAX_RANK];
    for (uint32_t d = out->rank; d-- > 0;) {
        coord[d] = i % (size_t)out->dims[d];
        i /= (size_t)out->dims[d];
    }
    size_t idx = 0;
    uint32_t lead = out->rank - in->rank;
    for (uint32_t d = 0; d < in->rank; d++) {
        size_t c = in->dims[d] == 1 ? 0 : coord[d + lead];
        idx = idx * (size_t)in->dims[d] + c;
    }
    return idx;
}

/* ---- float16 / bfloat16 ------------------------------------------------- */

static float bits_to_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

Test(f16, known_values) {
    /* 1 = 0 01111 0000000000 */
    cr_assert(eq(u16, plx_float32_to_float16(1.0f), 0x3c00));
    cr_assert(eq(u16, plx_float32_to_float16(-2.0f), 0xc000));
    cr_assert(eq(u16, plx_float32_to_float16(0.0f), 0x0000));
    cr_assert(eq(u16, plx_float32_to_float16(-0.0f), 0x8000));
    /* largest finite half 65504 = 0x7bff; 65520 is the midpoint to 65536
     * whose tie goes to the even "mantissa" 0x400, i.e. inf */
    cr_assert(eq(u16, plx_float32_to_float16(65504.0f), 0x7bff));
    cr_assert(eq(u16, plx_float32_to_float16(65519.0f), 0x7bff));
    cr_assert(eq(u16, plx_float32_to_float16(65520.0f), 0x7c00));
    cr_assert(eq(u16, plx_float32_to_float16(1e6f), 0x7c00));
    cr_assert(eq(u16, plx_float32_to_float16(-1e6f), 0xfc00));
    cr_assert(eq(u16, plx_float32_to_float16(INFINITY), 0x7c00));
    cr_assert(eq(u16, plx_float32_to_float16(-INFINITY), 0xfc00));
    uint16_t n = plx_float32_to_float16(NAN);
    cr_assert(eq(u16, n & 0x7c00, 0x7c00));
    cr_assert(not(zero(u16, n & 0x3ff)));
    /* a NaN whose payload lies only in the low 13 bits must stay a NaN */
    n = plx_float32_to_float16(bits_to_f(0x7f800001u));
    cr_assert(not(zero(u16, n & 0x3ff)));
    /* round half to even at 1: ulp is 2^-10; 1 + 2^-11 ties down to 1,
     * 1 + 3*2^-11 ties up to 1 + 2^-9 (mantissa 2) */
    cr_assert(eq(u16, plx_float32_to_float16(1.0f + 0x1p-11f), 0x3c00));
    cr_assert(eq(u16, plx_float32_to_float16(1.0f + 0x3p-11f), 0x3c02));
    cr_assert(eq(u16, plx_float32_to_float16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01));
    /* subnormals: units of 2^-24 */
    cr_assert(eq(u16, plx_float32_to_float16(0x1p-24f), 0x0001));
    cr_assert(eq(u16, plx_float32_to_float16(0x1p-25f), 0x0000));        /* tie -> 0 */
    cr_assert(eq(u16, plx_float32_to_float16(0x1.000002p-25f), 0x0001)); /* just over the tie */
    cr_assert(eq(u16, plx_float32_to_float16(0x3p-25f), 0x0002));        /* 1.5 -> 2 */
    cr_assert(eq(u16, plx_float32_to_float16(0x5p-25f), 0x0002));        /* 2.5 -> 2 */
    cr_assert(eq(u16, plx_float32_to_float16(-0x1p-24f), 0x8001));
    cr_assert(eq(u16, plx_float32_to_float16(1023.0f * 0x1p-24f), 0x03ff));
    cr_assert(eq(u16, plx_float32_to_float16(1023.5f * 0x1p-24f), 0x0400)); /* rounds to min normal */
    cr_assert(eq(u16, plx_float32_to_float16(0x1p-14f), 0x0400));
    cr_assert(eq(u16, plx_float32_to_float16(1e-30f), 0x0000));
    /* to float */
    cr_assert(eq(flt, plx_float16_to_float32(0x3c00), 1.0f));
    cr_assert(eq(flt, plx_float16_to_float32(0x0001), 0x1p-24f));
    cr_assert(eq(flt, plx_float16_to_float32(0x83ff), -1023.0f * 0x1p-24f));
    cr_assert(eq(flt, plx_float16_to_float32(0x7bff), 65504.0f));
    cr_assert(eq(flt, plx_float16_to_float32(0xfc00), -INFINITY));
    cr_assert(isnan(plx_float16_to_float32(0x7e00)));
    cr_assert(isnan(plx_float16_to_float32(0x7c01)));
}

Test(f16, every_half_round_trips) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = plx_float16_to_float32((uint16_t)h);
        uint16_t back = plx_float32_to_float16(f);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            cr_assert(isnan(f));
            cr_assert(eq(u16, back & 0x7c00, 0x7c00));
            cr_assert(not(zero(u16, back & 0x3ff)));
        } else {
            cr_assert(eq(u16, back, h), "half 0x%04x", h);
        }
    }
}

/* Reference: nearest value among the ordered positive finite halves (and
 * 65536 standing for inf), ties to the even code, by binary search. */
static uint16_t ref_f32_to_f16(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    uint32_t lo = 0, hi = 0x7c00; /* value(0x7c00) taken as 65536 */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if ((double)plx_float16_to_float32((uint16_t)mid) <= a) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    double vlo = plx_float16_to_float32((uint16_t)lo), vhi = hi == 0x7c00 ? 65536.0 : plx_float16_to_float32((uint16_t)hi);
    uint32_t r;
    if (a - vlo < vhi - a) {
        r = lo;
    } else if (a - vlo > vhi - a) {
        r = hi;
    } else {
        r = (lo & 1) ? hi : lo;
    }
    return (uint16_t)(sign | r);
}

Test(f16, random_against_reference) {
    seed(1);
    for (int i = 0; i < 200000; i++) {
        /* random bit patterns across the half range: exponents 2^-27..2^17 */
        uint32_t e = (uint32_t)rnd_i(127 - 27, 127 + 17);
        uint32_t bits = (uint32_t)(rnd() & 0x807fffffu) | (e << 23);
        if (i % 4 == 0) {
            bits &= ~0x0fffu; /* many exact ties */
            bits |= 0x1000u * (uint32_t)(rnd() & 1);
        }
        float f = bits_to_f(bits);
        cr_assert(eq(u16, plx_float32_to_float16(f), ref_f32_to_f16(f)), "f=%a", (double)f);
    }
}

static uint16_t ref_f32_to_bf16(float f) {
    /* the two bfloat16 neighbours by truncation, the nearer one (ties even) */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t down = u & 0xffff0000u, up = down + 0x10000u;
    double a = fabs((double)f), vd = fabs((double)bits_to_f(down));
    double vu = (up & 0x7fffffffu) == 0x7f800000u ? ldexp(1.0, 128) : fabs((double)bits_to_f(up));
    if (a - vd < vu - a) {
        return (uint16_t)(down >> 16);
    }
    if (a - vd > vu - a) {
        return (uint16_t)(up >> 16);
    }
    return (uint16_t)(((down >> 16) & 1) ? up >> 16 : down >> 16);
}

Test(bf16, known_and_random) {
    cr_assert(eq(u16, plx_float32_to_bfloat16(1.0f), 0x3f80));
    cr_assert(eq(u16, plx_float32_to_bfloat16(bits_to_f(0x3f808000u)), 0x3f80)); /* tie, even down */
    cr_assert(eq(u16, plx_float32_to_bfloat16(bits_to_f(0x3f818000u)), 0x3f82)); /* tie, even up */
    cr_assert(eq(u16, plx_float32_to_bfloat16(bits_to_f(0x3f808001u)), 0x3f81));
    cr_assert(eq(u16, plx_float32_to_bfloat16(bits_to_f(0x00008000u)), 0x0000)); /* subnormal tie */
    cr_assert(eq(u16, plx_float32_to_bfloat16(bits_to_f(0x00018000u)), 0x0002));
    cr_assert(eq(u16, plx_float32_to_bfloat16(3.4028235e38f), 0x7f80)); /* FLT_MAX overflows */
    cr_assert(eq(u16, plx_float32_to_bfloat16(-INFINITY), 0xff80));
    uint16_t n = plx_float32_to_bfloat16(bits_to_f(0x7f800001u)); /* would round to inf naively */
    cr_assert(eq(u16, n & 0x7f80, 0x7f80));
    cr_assert(not(zero(u16, n & 0x7f)));
    cr_assert(eq(flt, plx_bfloat16_to_float32(0x3f80), 1.0f));
    cr_assert(eq(flt, plx_bfloat16_to_float32(0xc040), -3.0f));
    cr_assert(isnan(plx_bfloat16_to_float32(0x7fc0)));
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) {
            continue;
        }
        cr_assert(eq(u16, plx_float32_to_bfloat16(plx_bfloat16_to_float32((uint16_t)h)), h));
    }
    seed(2);
    for (int i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)rnd();
        if ((bits & 0x7f800000u) == 0x7f800000u) {
            continue;
        }
        if (i % 4 == 0) {
            bits = (bits & 0xffff0000u) | 0x8000u;
        }
        float f = bits_to_f(bits);
        cr_assert(eq(u16, plx_float32_to_bfloat16(f), ref_f32_to_bf16(f)), "bits=%08x", bits);
    }
}

/* ---- activation --------------------------------------------------------- */

static double ref_act(plx_activation_func f, double x, double alpha, double beta) {
    switch (f) {
    case PLX_ACT_RELU: return x > 0 ? x : 0;
    case PLX_ACT_CLIP: return fmin(fmax(x, alpha), beta);
    case PLX_ACT_LEAKY_RELU: return x >= 0 ? x : alpha * x;
    case PLX_ACT_ELU: return x >= 0 ? x : alpha * (exp(x) - 1);
    case PLX_ACT_SIGMOID: return 1 / (1 + exp(-x));
    case PLX_ACT_HARD_SIGMOID: return fmax(0, fmin(1, alpha * x + beta));
    case PLX_ACT_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case PLX_ACT_TANH: return tanh(x);
    case PLX_ACT_GELU:
        if (alpha != 0) {
            return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case PLX_ACT_SOFTPLUS: return log(1 + exp(x));
    case PLX_ACT_SELU: return x > 0 ? beta * x : beta * alpha * (exp(x) - 1);
    case PLX_ACT_MISH: return x * tanh(log(1 + exp(x)));
    case PLX_ACT_SOFTSIGN: return x / (1 + fabs(x));
    case PLX_ACT_THRESHOLDED_RELU: return x > alpha ? x : 0;
    case PLX_ACT_CELU: return fmax(0, x) + fmin(0, alpha * (exp(x / alpha) - 1));
    case PLX_ACT_AFFINE: return alpha * x + beta;
    case PLX_ACT_SCALED_TANH: return alpha * tanh(beta * x);
    default: break; /* shrink: tests/kernels/test_kernels_bitwise.c */
    }
    return NAN;
}

static bool act_f32(plx_activation_func f, float alpha, float beta, const float *x, float *y, size_t n) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(f);
    d.alpha = alpha;
    d.beta = beta;
    plx_tensor_info in = info(PLX_DTYPE_FLOAT32, (const int64_t[]){(int64_t)n}, 1), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    cr_assert(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err)), "%s", g_err);
    const void *ins[] = {x};
    void *outs[] = {y};
    return run_layer(plxk_run_activation, &l, ins, outs);
}

Test(activation, hand_values) {
    float x[] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    float y[5];
    /* relu: negatives to 0 */
    cr_assert(act_f32(PLX_ACT_RELU, 0, 0, x, y, 5));
    float relu[] = {0, 0, 0, 0.5f, 3};
    for (int i = 0; i < 5; i++) cr_assert(eq(flt, y[i], relu[i]));
    /* clip to [-1, 1] */
    cr_assert(act_f32(PLX_ACT_CLIP, -1, 1, x, y, 5));
    float clip[] = {-1, -0.5f, 0, 0.5f, 1};
    for (int i = 0; i < 5; i++) cr_assert(eq(flt, y[i], clip[i]));
    /* leaky 0.1: -2 -> -0.2, -0.5 -> -0.05 */
    cr_assert(act_f32(PLX_ACT_LEAKY_RELU, 0.1f, 0, x, y, 5));
    float leaky[] = {-0.2f, -0.05f, 0, 0.5f, 3};
    for (int i = 0; i < 5; i++) ASSERT_CLOSE(y[i], leaky[i], 1e-6, "leaky %d", i);
    /* hard_sigmoid 0.2x+0.5: -2 -> 0.1, 3 -> 1.1 -> 1 */
    cr_assert(act_f32(PLX_ACT_HARD_SIGMOID, 0.2f, 0.5f, x, y, 5));
    float hs[] = {0.1f, 0.4f, 0.5f, 0.6f, 1.0f};
    for (int i = 0; i < 5; i++) ASSERT_CLOSE(y[i], hs[i], 1e-6, "hard_sigmoid %d", i);
    /* hard_swish: x*clamp(x/6+0.5): -2 -> -2/6 = -0.3333, 3 -> 3*1 = 3 */
    cr_assert(act_f32(PLX_ACT_HARD_SWISH, 0, 0, x, y, 5));
    float hw[] = {-2.0f / 6, -0.5f * (0.5f - 0.5f / 6), 0, 0.5f * (0.5f + 0.5f / 6), 3};
    for (int i = 0; i < 5; i++) ASSERT_CLOSE(y[i], hw[i], 1e-6, "hard_swish %d", i);
    /* sigmoid(0) = 0.5, tanh(0) = 0, gelu(0) = 0, softplus(0) = ln 2, elu(-inf)->-alpha */
    cr_assert(act_f32(PLX_ACT_SIGMOID, 0, 0, x, y, 5));
    cr_assert(eq(flt, y[2], 0.5f));
    cr_assert(act_f32(PLX_ACT_SOFTPLUS, 0, 0, x, y, 5));
    ASSERT_CLOSE(y[2], 0.69314718, 1e-6, "softplus(0)");
    /* gelu(3) exact = 1.5 * (1 + erf(3/sqrt2)) = 2.99595031 */
    cr_assert(act_f32(PLX_ACT_GELU, 0, 0, x, y, 5));
    ASSERT_CLOSE(y[4], 2.9959502, 1e-6, "gelu(3)");
    /* tanh approx at 3: 1.5*(1+tanh(0.79788456*(3+1.207305))) = 2.99636245 */
    cr_assert(act_f32(PLX_ACT_GELU, 1, 0, x, y, 5));
    ASSERT_CLOSE(y[4], 2.9963627, 1e-6, "gelu tanh(3)");
    float big[] = {-100.0f, 100.0f, -1000.0f};
    cr_assert(act_f32(PLX_ACT_ELU, 2.0f, 0, big, y, 3));
    ASSERT_CLOSE(y[0], -2.0, 1e-7, "elu(-100)");
    cr_assert(act_f32(PLX_ACT_SOFTPLUS, 0, 0, big, y, 3)); /* no overflow */
    ASSERT_CLOSE(y[1], 100.0, 1e-7, "softplus(100)");
    cr_assert(act_f32(PLX_ACT_SIGMOID, 0, 0, big, y, 3));
    cr_assert(eq(flt, y[2], 0.0f));
    cr_assert(eq(flt, y[1], 1.0f));
}

Test(activation, random_all_funcs) {
    seed(3);
    float x[257], y[257];
    for (int f = PLX_ACT_RELU; f <= PLX_ACT_SCALED_TANH; f++) {
        for (int rep = 0; rep < 4; rep++) {
            size_t n = (size_t)rnd_i(1, 257);
            for (size_t i = 0; i < n; i++) x[i] = rnd_f(-8, 8);
            float alpha = rnd_f(-2, 2), beta = rnd_f(-1, 3);
            if (f == PLX_ACT_GELU) alpha = (float)(rep & 1);
            if (f == PLX_ACT_CELU) alpha = rnd_f(0.25f, 3); /* alpha != 0 */
            if (f == PLX_ACT_CLIP && alpha > beta) { float t = alpha; alpha = beta; beta = t; }
            cr_assert(act_f32((plx_activation_func)f, alpha, beta, x, y, n), "%s", g_err);
            for (size_t i = 0; i < n; i++) {
                ASSERT_CLOSE(y[i], ref_act((plx_activation_func)f, x[i], alpha, beta), 2e-6,
                             "func %d x %g", f, (double)x[i]);
            }
        }
    }
}

Test(activation, new_funcs_hand_values) {
    float y[6];
    /* selu (defaults 1.6733, 1.0507): 0 -> 0, 1 -> 1.0507, -1 -> 1.0507 * 1.6733 * (e^-1 - 1)
     * = -1.1113307; -100 -> -1.0507 * 1.6733 = -1.7580993 */
    float xs[] = {0.0f, 1.0f, -1.0f, -100.0f};
    plx_activation_desc selu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SELU);
    cr_assert(act_f32(PLX_ACT_SELU, selu.alpha, selu.beta, xs, y, 4), "%s", g_err);
    cr_assert(eq(flt, y[0], 0.0f));
    ASSERT_CLOSE(y[1], 1.0507010, 1e-6, "selu(1)");
    ASSERT_CLOSE(y[2], -1.1113307, 1e-6, "selu(-1)");
    ASSERT_CLOSE(y[3], -1.7580993, 1e-6, "selu(-100)");
    /* mish: 0 -> 0, 1 -> tanh(ln(1+e)) = 0.86509839, 100 -> 100 (no overflow),
     * -100 -> about -3.7e-42 (0 within the tolerance) */
    float xm[] = {0.0f, 1.0f, 100.0f, -100.0f, 1000.0f};
    cr_assert(act_f32(PLX_ACT_MISH, 0, 0, xm, y, 5), "%s", g_err);
    cr_assert(eq(flt, y[0], 0.0f));
    ASSERT_CLOSE(y[1], 0.86509839, 1e-6, "mish(1)");
    ASSERT_CLOSE(y[2], 100.0, 1e-7, "mish(100)");
    ASSERT_CLOSE(y[3], 0.0, 1e-7, "mish(-100)");
    ASSERT_CLOSE(y[4], 1000.0, 1e-7, "mish(1000)");
    /* softsign: x / (1 + |x|): 1 -> 0.5, -3 -> -0.75, 1e30 -> 1 */
    float xss[] = {1.0f, -3.0f, 1e30f, 0.0f};
    cr_assert(act_f32(PLX_ACT_SOFTSIGN, 0, 0, xss, y, 4), "%s", g_err);
    cr_assert(eq(flt, y[0], 0.5f));
    cr_assert(eq(flt, y[1], -0.75f));
    ASSERT_CLOSE(y[2], 1.0, 1e-7, "softsign(1e30)");
    cr_assert(eq(flt, y[3], 0.0f));
    /* thresholded_relu, alpha 1: strictly greater passes (1 -> 0) */
    float xt[] = {0.5f, 1.0f, 1.5f, -3.0f};
    cr_assert(act_f32(PLX_ACT_THRESHOLDED_RELU, 1.0f, 0, xt, y, 4), "%s", g_err);
    float wt[] = {0, 0, 1.5f, 0};
    for (int i = 0; i < 4; i++) cr_assert(eq(flt, y[i], wt[i]), "thresholded_relu %d", i);
    /* celu alpha 2: -2 -> 2 * (e^-1 - 1) = -1.2642411, 3 -> 3, -1000 -> -2; NaN stays NaN */
    float xc[] = {-2.0f, 3.0f, -1000.0f, NAN};
    cr_assert(act_f32(PLX_ACT_CELU, 2.0f, 0, xc, y, 4), "%s", g_err);
    ASSERT_CLOSE(y[0], -1.2642411, 1e-6, "celu(-2)");
    cr_assert(eq(flt, y[1], 3.0f));
    ASSERT_CLOSE(y[2], -2.0, 1e-7, "celu(-1000)");
    cr_assert(isnan(y[3]));
    /* affine 2x + 1; scaled_tanh 2 tanh(0.5 x): 0 -> 0, 2 -> 2 tanh(1) = 1.5231883 */
    float xa[] = {-1.5f, 0.0f, 2.0f};
    cr_assert(act_f32(PLX_ACT_AFFINE, 2.0f, 1.0f, xa, y, 3), "%s", g_err);
    float wa[] = {-2.0f, 1.0f, 5.0f};
    for (int i = 0; i < 3; i++) cr_assert(eq(flt, y[i], wa[i]), "affine %d", i);
    cr_assert(act_f32(PLX_ACT_SCALED_TANH, 2.0f, 0.5f, xa, y, 3), "%s", g_err);
    cr_assert(eq(flt, y[1], 0.0f));
    ASSERT_CLOSE(y[2], 1.5231883, 1e-6, "scaled_tanh(2)");
    /* float32 only in cpu_ref: float16 refused, naming the function */
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_MISH);
    plx_tensor_info in = info(PLX_DTYPE_FLOAT16, SHAPE(3)), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    const char *why = plxk_check_activation(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "mish"))), "%s", why);
    d.func = (plx_activation_func)(PLX_ACT_SHRINK + 1); /* unknown: refused (R-19 (3)) */
    in.dtype = out.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
}

Test(activation, integer_relu_and_clip) {
    plx_dtype types[] = {PLX_DTYPE_INT8, PLX_DTYPE_INT16, PLX_DTYPE_INT32, PLX_DTYPE_INT64};
    seed(4);
    for (int t = 0; t < 4; t++) {
        for (int func = 0; func < 2; func++) {
            int64_t buf_x[64], buf_y[64], lo, hi;
            int_limits(types[t], &lo, &hi);
            for (size_t i = 0; i < 64; i++) set_i(types[t], buf_x, i, i < 2 ? (i ? lo : hi) : rnd_i(lo, hi));
            /* clip [-2.5, 3.5] keeps the integers -2..3 */
            plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(func ? PLX_ACT_CLIP : PLX_ACT_RELU);
            if (func) { d.alpha = -2.5f; d.beta = 3.5f; }
            plx_tensor_info in = info(types[t], SHAPE(4, 16)), out = in;
            plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
            const void *ins[] = {buf_x};
            void *outs[] = {buf_y};
            cr_assert(run_layer(plxk_run_activation, &l, ins, outs), "%s", g_err);
            for (size_t i = 0; i < 64; i++) {
                int64_t v = get_i(types[t], buf_x, i);
                int64_t want = func ? (v < -2 ? -2 : v > 3 ? 3 : v) : (v < 0 ? 0 : v);
                cr_assert(eq(i64, get_i(types[t], buf_y, i), want));
            }
        }
    }
    /* uint8 clip with default (infinite) bounds is the identity; [10.2, 20] -> 11..20 */
    uint8_t x[] = {0, 5, 11, 200, 255}, y[5];
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    plx_tensor_info in = info(PLX_DTYPE_UINT8, SHAPE(5)), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    const void *ins[] = {x};
    void *outs[] = {y};
    cr_assert(run_layer(plxk_run_activation, &l, ins, outs));
    cr_assert(zero(int, memcmp(x, y, 5)));
    d.alpha = 10.2f;
    d.beta = 20.0f;
    cr_assert(run_layer(plxk_run_activation, &l, ins, outs));
    uint8_t want[] = {11, 11, 11, 20, 20};
    cr_assert(zero(int, memcmp(want, y, 5)));
}

Test(activation, refusals) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_GELU);
    plx_tensor_info in = info(PLX_DTYPE_INT32, SHAPE(3)), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    const char *why = plxk_check_activation(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "gelu"))), "%s", why);
    cr_assert(not(zero(ptr, strstr(why, "int32"))), "%s", why);
    cr_assert(not(zero(ptr, strstr(why, "activation"))), "%s", why);
    in.dtype = out.dtype = PLX_DTYPE_FLOAT16;
    d.func = PLX_ACT_RELU;
    why = plxk_check_activation(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "float16"))));
    in.dtype = out.dtype = PLX_DTYPE_UINT8; /* relu on unsigned: not in ONNX */
    cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
    in.dtype = out.dtype = PLX_DTYPE_FLOAT32;
    d.func = (plx_activation_func)42;
    cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
    d.func = PLX_ACT_TANH;
    out.dims[0] = 4; /* shape mismatch */
    cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
    /* run refuses too, naming the layer */
    float x[4] = {0}, y[4];
    const void *ins[] = {x};
    void *outs[] = {y};
    cr_assert(not(run_layer(plxk_run_activation, &l, ins, outs)));
    cr_assert(not(zero(ptr, strstr(g_err, "'L1'"))), "%s", g_err);
}

/* ---- binary ------------------------------------------------------------- */

static bool binary_run(plx_binary_func f, const plx_tensor_info *a, const plx_tensor_info *b,
                       const plx_tensor_info *y, const void *pa, const void *pb, void *py) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(f);
    plx_tensor_info ins_i[2] = {*a, *b};
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins_i, 2, y, 1);
    const void *ins[] = {pa, pb};
    void *outs[] = {py};
    return run_layer(plxk_run_binary, &l, ins, outs);
}

Test(binary, hand_broadcast_float) {
    /* row: [[1,2,3],[4,5,6]] + [10,20,30] = [[11,22,33],[14,25,36]] */
    float a[] = {1, 2, 3, 4, 5, 6}, row[] = {10, 20, 30}, col[] = {100, 200}, y[6];
    plx_tensor_info ta = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3)), tr = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    cr_assert(binary_run(PLX_BINARY_ADD, &ta, &tr, &ta, a, row, y));
    float w1[] = {11, 22, 33, 14, 25, 36};
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], w1[i]));
    /* column [2,1] times [2,3]: rows scaled by 100 and 200 */
    plx_tensor_info tc = info(PLX_DTYPE_FLOAT32, SHAPE(2, 1));
    cr_assert(binary_run(PLX_BINARY_MUL, &tc, &ta, &ta, col, a, y));
    float w2[] = {100, 200, 300, 800, 1000, 1200};
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], w2[i]));
    /* scalar (rank 0) minus a tensor: 1 - a */
    float one = 1;
    plx_tensor_info ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    cr_assert(binary_run(PLX_BINARY_SUB, &ts, &ta, &ta, &one, a, y));
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], 1 - a[i]));
    /* column [2,1] x row [3] -> outer [2,3]: pow(col/100, row/10) */
    float base[] = {2, 3}, ex[] = {1, 2, 3};
    plx_tensor_info t3 = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    cr_assert(binary_run(PLX_BINARY_POW, &tc, &t3, &ta, base, ex, y));
    float w3[] = {2, 4, 8, 3, 9, 27};
    for (int i = 0; i < 6; i++) ASSERT_CLOSE(y[i], w3[i], 1e-7, "pow %d", i);
    /* x ^ 2 by a scalar 2 (the squaring loop) and by a tensor of 2s (the
     * element loop): both pow's results, bit for bit, limits included */
    {
        float xs[8] = {1.5f, -3.0f, -0.0f, INFINITY, -INFINITY, NAN, 3e20f, 1e-23f};
        float two = 2, twos[8] = {2, 2, 2, 2, 2, 2, 2, 2}, ys[2][8];
        plx_tensor_info t8 = info(PLX_DTYPE_FLOAT32, SHAPE(8));
        cr_assert(binary_run(PLX_BINARY_POW, &t8, &ts, &t8, xs, &two, ys[0]));
        cr_assert(binary_run(PLX_BINARY_POW, &t8, &t8, &t8, xs, twos, ys[1]));
        for (int i = 0; i < 8; i++) {
            float want = (float)pow(xs[i], 2.0);
            for (int k = 0; k < 2; k++) {
                cr_assert(isnan(want) ? isnan(ys[k][i]) : memcmp(&ys[k][i], &want, 4) == 0,
                          "pow(%g, 2), form %d: %g", (double)xs[i], k, (double)ys[k][i]);
            }
        }
    }
    /* max/min with NaN give NaN (numpy) */
    float p[] = {1, NAN, 3}, q[] = {2, 0, NAN}, r[3];
    cr_assert(binary_run(PLX_BINARY_MAX, &t3, &t3, &t3, p, q, r));
    cr_assert(eq(flt, r[0], 2.0f));
    cr_assert(isnan(r[1]));
    cr_assert(isnan(r[2]));
    /* float division by zero is IEEE, not an error */
    float z[] = {0, 0, 0};
    cr_assert(binary_run(PLX_BINARY_DIV, &t3, &t3, &t3, ex, z, r));
    cr_assert(isinf(r[0]));
}

/* The float32 element of an operand of shape (rank, dims) broadcast to
 * `out` at the output's flat index i (numpy's rules, counted here). */
static float at_broadcast(const float *v, const int64_t *dims, uint32_t rank,
                          const plx_tensor_info *out, size_t i) {
    size_t off = 0, stride = 1;
    for (uint32_t d = out->rank; d-- > 0;) {
        int64_t idx = (int64_t)(i % (size_t)out->dims[d]);
        i /= (size_t)out->dims[d];
        uint32_t shift = out->rank - rank;
        if (d >= shift) {
            int64_t len = dims[d - shift];
            off += (size_t)(len == 1 ? 0 : idx) * stride;
            stride *= (size_t)len;
        }
    }
    return v[off];
}

/* Every broadcast pattern of real models (per channel, scalar, row,
 * column, both operands broadcasting, dense, patterns whose runs cannot
 * merge), with either operand broadcast, against numpy's rules counted
 * out: the kernel's run loops must give binary's results exactly. */
Test(binary, broadcast_patterns_float) {
    static const int64_t full[4] = {2, 3, 4, 5};
    static const struct {
        uint32_t rank;
        int64_t dims[4];
    } shapes[] = {{4, {1, 3, 1, 1}}, {1, {5}}, {2, {4, 1}}, {4, {2, 1, 4, 1}}, {0, {0}},
                  {4, {1, 1, 1, 1}}, {4, {2, 3, 4, 5}}, {3, {3, 4, 5}}, {4, {2, 1, 1, 5}},
                  {3, {3, 1, 5}}, {2, {1, 5}}};
    static const plx_binary_func funcs[] = {PLX_BINARY_ADD, PLX_BINARY_SUB, PLX_BINARY_MUL,
                                            PLX_BINARY_DIV, PLX_BINARY_MAX, PLX_BINARY_MIN,
                                            PLX_BINARY_PRELU};
    float a[120], b[120], y[120];
    for (int i = 0; i < 120; i++) {
        a[i] = (float)((i * 37) % 23) - 11.5f;
        b[i] = (float)((i * 13) % 17) - 8.25f;
    }
    a[7] = NAN; /* max and min propagate it */
    plx_tensor_info out = info(PLX_DTYPE_FLOAT32, full, 4);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        plx_tensor_info small = info(PLX_DTYPE_FLOAT32, shapes[s].dims, shapes[s].rank);
        for (size_t k = 0; k < sizeof funcs / sizeof funcs[0]; k++) {
            plx_binary_func f = funcs[k];
            for (int swap = 0; swap < (f == PLX_BINARY_PRELU ? 1 : 2); swap++) {
                /* swap: the broadcast operand first */
                const plx_tensor_info *ia = swap ? &small : &out, *ib = swap ? &out : &small;
                cr_assert(binary_run(f, ia, ib, &out, a, b, y), "%s", g_err);
                for (size_t i = 0; i < 120; i++) {
                    float x = swap ? at_broadcast(a, shapes[s].dims, shapes[s].rank, &out, i)
                                   : a[i];
                    float z = swap ? b[i] : at_broadcast(b, shapes[s].dims, shapes[s].rank,
                                                         &out, i);
                    float want = f == PLX_BINARY_ADD   ? x + z
                                 : f == PLX_BINARY_SUB ? x - z
                                 : f == PLX_BINARY_MUL ? x * z
                                 : f == PLX_BINARY_DIV ? x / z
                                 : isnan(x) || isnan(z) ? NAN
                                 : f == PLX_BINARY_MAX ? (x > z ? x : z)
                                 : f == PLX_BINARY_MIN ? (x < z ? x : z)
                                                       : (x < 0 ? z * x : x);
                    if (f == PLX_BINARY_PRELU) {
                        want = isnan(x) ? x : x < 0 ? z * x : x;
                    }
                    cr_assert(isnan(want) ? isnan(y[i]) : y[i] == want,
                              "%s, shape %zu, swap %d, element %zu: got %g, want %g",
                              plx_binary_func_name(f), s, swap, i, (double)y[i], (double)want);
                }
            }
        }
    }
}

/* Float32 broadcasts large enough that their runs go to a pool of two
 * threads (kernels_elementwise.c, binary_broadcast_f32): many short runs
 * per task (both operands broadcast), one run per task (per channel), and
 * runs longer than a task, cut into pieces (same shape; a scalar), with
 * non-commutative functions in both operand orders. */
Test(binary, large_broadcasts_on_two_threads) {
    char err[128];
    plxk_compute two = {plxk_isa_best(), plxk_pool_create(2, err, sizeof err)};
    cr_assert(not(zero(ptr, two.pool)), "%s", err);
    static const struct {
        uint32_t rank;
        int64_t a[4], b[4], y[4];
    } cases[] = {
        {4, {1, 64, 1, 128}, {1, 1, 128, 1}, {1, 64, 128, 128}},
        {4, {1, 6, 100, 100}, {1, 6, 1, 1}, {1, 6, 100, 100}},
        {2, {3, 50000}, {3, 50000}, {3, 50000}},
        {1, {70000}, {1}, {70000}},
    };
    static const plx_binary_func funcs[] = {PLX_BINARY_SUB, PLX_BINARY_DIV, PLX_BINARY_PRELU};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        plx_tensor_info ta = info(PLX_DTYPE_FLOAT32, cases[c].a, cases[c].rank);
        plx_tensor_info tb = info(PLX_DTYPE_FLOAT32, cases[c].b, cases[c].rank);
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, cases[c].y, cases[c].rank);
        size_t na = numel(&ta), nb = numel(&tb), ny = numel(&ty);
        float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *y = malloc(ny * sizeof *y);
        cr_assert(a && b && y);
        for (size_t i = 0; i < na; i++) {
            a[i] = (float)((i * 37) % 23) - 11.5f;
        }
        for (size_t i = 0; i < nb; i++) {
            b[i] = (float)((i * 13) % 17) - 8.25f;
        }
        for (size_t k = 0; k < sizeof funcs / sizeof funcs[0]; k++) {
            for (int swap = 0; swap < 2; swap++) {
                if (funcs[k] == PLX_BINARY_PRELU && (swap ? nb : na) != ny) {
                    continue; /* prelu's X has the output's shape */
                }
                plx_binary_desc d = PLX_BINARY_DESC_INIT(funcs[k]);
                plx_tensor_info ins_i[2] = {swap ? tb : ta, swap ? ta : tb};
                plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins_i, 2, &ty, 1);
                const void *ins[] = {swap ? (const void *)b : a, swap ? (const void *)a : b};
                void *outs[] = {y};
                plxk_kernel_args args = {.layer = &l, .inputs = ins, .outputs = outs,
                                         .error = g_err, .error_size = sizeof g_err,
                                         .compute = &two};
                cr_assert(plxk_run_binary(&args), "%s", g_err);
                for (size_t i = 0; i < ny; i++) {
                    float va = at_broadcast(a, cases[c].a, cases[c].rank, &ty, i);
                    float vb = at_broadcast(b, cases[c].b, cases[c].rank, &ty, i);
                    float x = swap ? vb : va, z = swap ? va : vb;
                    float want = funcs[k] == PLX_BINARY_SUB   ? x - z
                                 : funcs[k] == PLX_BINARY_DIV ? x / z
                                                              : (x < 0 ? z * x : x);
                    cr_assert(y[i] == want, "case %zu, %s, swap %d, element %zu: %g, want %g",
                              c, plx_binary_func_name(funcs[k]), swap, i, (double)y[i],
                              (double)want);
                }
            }
        }
        free(a);
        free(b);
        free(y);
    }
    plxk_pool_destroy(two.pool);
}

Test(binary, integer_semantics) {
    plx_tensor_info t = info(PLX_DTYPE_INT32, SHAPE(4));
    /* C-like truncation: -7/2 = -3, 7/-2 = -3, -7/-2 = 3, 7/2 = 3 */
    int32_t a[] = {-7, 7, -7, 7}, b[] = {2, -2, -2, 2}, y[4];
    cr_assert(binary_run(PLX_BINARY_DIV, &t, &t, &t, a, b, y), "%s", g_err);
    int32_t w[] = {-3, -3, 3, 3};
    for (int i = 0; i < 4; i++) cr_assert(eq(i32, y[i], w[i]));
    /* division by zero: an execution error naming the layer */
    int32_t bz[] = {1, 1, 0, 1};
    cr_assert(not(binary_run(PLX_BINARY_DIV, &t, &t, &t, a, bz, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "'L1'"))), "%s", g_err);
    cr_assert(not(zero(ptr, strstr(g_err, "division by zero"))), "%s", g_err);
    /* int pow: 3^4 = 81, (-2)^3 = -8, 5^0 = 1, 2^-1 = 0 (truncated), (-1)^-3 = -1 */
    int64_t pa[] = {3, -2, 5, 2, -1}, pb[] = {4, 3, 0, -1, -3}, py[5];
    plx_tensor_info t64 = info(PLX_DTYPE_INT64, SHAPE(5));
    cr_assert(binary_run(PLX_BINARY_POW, &t64, &t64, &t64, pa, pb, py), "%s", g_err);
    int64_t pw[] = {81, -8, 1, 0, -1};
    for (int i = 0; i < 5; i++) cr_assert(eq(i64, py[i], pw[i]));
    /* wraparound: uint8 250 + 10 = 4; 3 - 5 = 254; int8 127 + 1 = -128; int64 min / -1 = min */
    uint8_t ua[] = {250, 3}, ub[] = {10, 5}, uy[2];
    plx_tensor_info tu = info(PLX_DTYPE_UINT8, SHAPE(2));
    cr_assert(binary_run(PLX_BINARY_ADD, &tu, &tu, &tu, ua, ub, uy));
    cr_assert(eq(u8, uy[0], 4));
    cr_assert(binary_run(PLX_BINARY_SUB, &tu, &tu, &tu, ua, ub, uy));
    cr_assert(eq(u8, uy[1], 254));
    int8_t ia = 127, ib = 1, iy;
    plx_tensor_info ti8 = info(PLX_DTYPE_INT8, SCALAR);
    cr_assert(binary_run(PLX_BINARY_ADD, &ti8, &ti8, &ti8, &ia, &ib, &iy));
    cr_assert(eq(i8, iy, -128));
    int64_t m = INT64_MIN, n1 = -1, my;
    plx_tensor_info ti64 = info(PLX_DTYPE_INT64, SCALAR);
    cr_assert(binary_run(PLX_BINARY_DIV, &ti64, &ti64, &ti64, &m, &n1, &my));
    cr_assert(eq(i64, my, INT64_MIN));
}

static double ref_binary_f(plx_binary_func f, double a, double b) {
    switch (f) {
    case PLX_BINARY_ADD: return (float)a + (float)b;
    case PLX_BINARY_SUB: return (float)a - (float)b;
    case PLX_BINARY_MUL: return (float)a * (float)b;
    case PLX_BINARY_DIV: return (float)a / (float)b;
    case PLX_BINARY_POW: return pow(a, b);
    case PLX_BINARY_MAX: return a > b ? a : b;
    case PLX_BINARY_MIN: return a < b ? a : b;
    case PLX_BINARY_EQUAL: return a == b;
    case PLX_BINARY_LESS: return a < b;
    case PLX_BINARY_GREATER: return a > b;
    case PLX_BINARY_PRELU: return a >= 0 ? a : (float)b * (float)a;
    case PLX_BINARY_AND: return a != 0 && b != 0;
    case PLX_BINARY_OR: return a != 0 || b != 0;
    case PLX_BINARY_XOR: return (a != 0) != (b != 0);
    case PLX_BINARY_GREATER_EQUAL: return a >= b;
    case PLX_BINARY_LESS_EQUAL: return a <= b;
    case PLX_BINARY_MOD: return fmod(a, b); /* ONNX fmod=1: the dividend's sign */
    default: break; /* the bitwise functions: tests/kernels/test_kernels_bitwise.c */
    }
    return NAN;
}

/* results in int64 (or __int128-free: small operands never overflow int64) */
static int64_t ref_binary_i(plx_binary_func f, int64_t a, int64_t b) {
    switch (f) {
    case PLX_BINARY_ADD: return a + b;
    case PLX_BINARY_SUB: return a - b;
    case PLX_BINARY_MUL: return a * b;
    case PLX_BINARY_DIV: return a / b;
    case PLX_BINARY_POW: {
        int64_t r = 1;
        for (int64_t i = 0; i < b; i++) r *= a;
        return r;
    }
    case PLX_BINARY_MAX: return a > b ? a : b;
    case PLX_BINARY_MIN: return a < b ? a : b;
    case PLX_BINARY_EQUAL: return a == b;
    case PLX_BINARY_LESS: return a < b;
    case PLX_BINARY_GREATER: return a > b;
    case PLX_BINARY_PRELU: return a >= 0 ? a : a * b;
    case PLX_BINARY_AND: return a && b;
    case PLX_BINARY_OR: return a || b;
    case PLX_BINARY_XOR: return !a != !b;
    case PLX_BINARY_GREATER_EQUAL: return a >= b;
    case PLX_BINARY_LESS_EQUAL: return a <= b;
    case PLX_BINARY_MOD: /* Python's %: a - b * floor(a / b) (small operands: exact in double) */
        return a - b * (int64_t)floor((double)a / (double)b);
    default: break; /* the bitwise functions: tests/kernels/test_kernels_bitwise.c */
    }
    return 0;
}

typedef struct shape_case {
    int64_t a[4], b[4], y[4];
    uint32_t ra, rb, ry;
} shape_case;

static const shape_case g_bshapes[] = {
    {{2, 3, 4}, {4}, {2, 3, 4}, 3, 1, 3},          /* row */
    {{2, 1, 4}, {3, 1}, {2, 3, 4}, 3, 2, 3},       /* both broadcast, rank mismatch */
    {{0}, {2, 3}, {2, 3}, 0, 2, 2},                /* scalar */
    {{5}, {5}, {5}, 1, 1, 1},                      /* same */
    {{3, 1, 2, 1}, {4, 1, 5}, {3, 4, 2, 5}, 4, 3, 4},
    {{7, 1}, {1, 3}, {7, 3}, 2, 2, 2},             /* column x row */
    {{0, 3}, {3}, {0, 3}, 2, 1, 2},                /* empty */
    {{1}, {1, 1, 1}, {1, 1, 1}, 1, 3, 3},
};

static void random_fill(plx_dtype t, void *p, size_t n, int64_t lo, int64_t hi) {
    for (size_t i = 0; i < n; i++) {
        if (t == PLX_DTYPE_FLOAT32) {
            ((float *)p)[i] = rnd_f((float)lo, (float)hi);
            if (rnd() % 5 == 0) ((float *)p)[i] = (float)rnd_i(lo, hi); /* some equal values */
        } else {
            set_i(t, p, i, rnd_i(lo, hi));
        }
    }
}

Test(binary, random_all_dtypes_funcs_shapes) {
    plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT8, PLX_DTYPE_UINT8, PLX_DTYPE_INT16,
                         PLX_DTYPE_INT32, PLX_DTYPE_INT64};
    seed(5);
    int64_t ba[128], bb[128], by[128];
    for (size_t s = 0; s < sizeof g_bshapes / sizeof g_bshapes[0]; s++) {
        const shape_case *sc = &g_bshapes[s];
        for (int ti = 0; ti < 6; ti++) {
            plx_dtype t = types[ti];
            for (int f = PLX_BINARY_ADD; f <= PLX_BINARY_GREATER; f++) {
                bool cmp = f >= PLX_BINARY_EQUAL;
                plx_tensor_info a = info(t, sc->a, sc->ra), b = info(t, sc->b, sc->rb);
                plx_tensor_info y = info(cmp ? PLX_DTYPE_BOOL : t, sc->y, sc->ry);
                int64_t lo = t == PLX_DTYPE_UINT8 ? 0 : -9, hi = 9;
                if (f == PLX_BINARY_POW) { lo = t == PLX_DTYPE_FLOAT32 ? 0 : -3; hi = 3; }
                random_fill(t, ba, numel(&a), lo, hi);
                random_fill(t, bb, numel(&b), f == PLX_BINARY_POW ? 0 : lo, hi);
                if (f == PLX_BINARY_DIV && t != PLX_DTYPE_FLOAT32) {
                    for (size_t i = 0; i < numel(&b); i++)
                        if (get_i(t, bb, i) == 0) set_i(t, bb, i, 3);
                }
                cr_assert(binary_run((plx_binary_func)f, &a, &b, &y, ba, bb, by),
                          "shape %zu %s f %d: %s", s, plx_dtype_name(t), f, g_err);
                for (size_t i = 0; i < numel(&y); i++) {
                    size_t ia = bcast_index(&a, &y, i), ib = bcast_index(&b, &y, i);
                    if (t == PLX_DTYPE_FLOAT32) {
                        double want = ref_binary_f((plx_binary_func)f, ((float *)ba)[ia], ((float *)bb)[ib]);
                        if (cmp) cr_assert(eq(u8, ((uint8_t *)by)[i], (uint8_t)want));
                        else ASSERT_CLOSE(((float *)by)[i], want, 1e-6, "f %d", f);
                    } else {
                        int64_t want = ref_binary_i((plx_binary_func)f, get_i(t, ba, ia), get_i(t, bb, ib));
                        if (cmp) {
                            cr_assert(eq(u8, ((uint8_t *)by)[i], (uint8_t)want));
                        } else {
                            int64_t tmp[1];
                            set_i(t, tmp, 0, want); /* wraps like the kernel must */
                            cr_assert(eq(i64, get_i(t, by, i), get_i(t, tmp, 0)), "%s f %d i %zu",
                                      plx_dtype_name(t), f, i);
                        }
                    }
                }
            }
        }
    }
}

Test(binary, compare_bool_and_halfs) {
    /* equal on bool: [1,0,1] == [1,1,1] -> [1,0,1] */
    uint8_t a[] = {1, 0, 1}, b[] = {1, 1, 1}, y[3];
    plx_tensor_info tb = info(PLX_DTYPE_BOOL, SHAPE(3));
    cr_assert(binary_run(PLX_BINARY_EQUAL, &tb, &tb, &tb, a, b, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 1));
    cr_assert(eq(u8, y[1], 0));
    cr_assert(eq(u8, y[2], 1));
    /* less on bool is not ONNX: refused */
    cr_assert(not(binary_run(PLX_BINARY_LESS, &tb, &tb, &tb, a, b, y)));
    /* float16 compares exactly: 1.0 (0x3c00) < 1.0009765625 (0x3c01) */
    uint16_t h1[] = {0x3c00, 0x3c01, 0x7e00}, h2[] = {0x3c01, 0x3c01, 0x7e00};
    plx_tensor_info th = info(PLX_DTYPE_FLOAT16, SHAPE(3));
    cr_assert(binary_run(PLX_BINARY_LESS, &th, &th, &tb, h1, h2, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 1));
    cr_assert(eq(u8, y[1], 0));
    cr_assert(binary_run(PLX_BINARY_EQUAL, &th, &th, &tb, h1, h2, y));
    cr_assert(eq(u8, y[1], 1));
    cr_assert(eq(u8, y[2], 0)); /* NaN != NaN */
    th.dtype = PLX_DTYPE_BFLOAT16;
    cr_assert(binary_run(PLX_BINARY_GREATER, &th, &th, &tb, h2, h1, y));
    cr_assert(eq(u8, y[0], 1));
}

/* float16 and bfloat16 arithmetic through float32, one rounding per
 * result: max and min keep the larger / smaller value exactly (1.0009765625
 * is 0x3c01 in float16) and NaN wins; mod takes the dividend's sign (-5.5
 * mod 2 = -1.5, 5.5 mod -2 = 1.5); 1 + 2^-11 rounds to even in float16
 * (1.0, 0x3c00). */
Test(binary, halfs_arithmetic) {
    uint16_t a[4] = {0x3c00, 0x3c01, 0x7e00, 0xc580 /* -5.5 */};
    uint16_t b[4] = {0x3c01, 0x3c00, 0x3c00, 0x4000 /* 2 */}, y[4];
    plx_tensor_info th = info(PLX_DTYPE_FLOAT16, SHAPE(4));
    cr_assert(binary_run(PLX_BINARY_MAX, &th, &th, &th, a, b, y), "%s", g_err);
    cr_assert(eq(u16, y[0], 0x3c01));
    cr_assert(eq(u16, y[1], 0x3c01));
    cr_assert(isnan(plx_float16_to_float32(y[2])));
    cr_assert(eq(u16, y[3], 0x4000));
    cr_assert(binary_run(PLX_BINARY_MIN, &th, &th, &th, a, b, y), "%s", g_err);
    cr_assert(eq(u16, y[0], 0x3c00));
    cr_assert(eq(u16, y[1], 0x3c00));
    cr_assert(eq(u16, y[3], 0xc580));
    cr_assert(binary_run(PLX_BINARY_MOD, &th, &th, &th, a, b, y), "%s", g_err);
    cr_assert(eq(flt, plx_float16_to_float32(y[3]), -1.5f));
    uint16_t one[1] = {0x3c00}, tiny[1] = {0x1000 /* 2^-11 */}, sum[1];
    plx_tensor_info t1 = info(PLX_DTYPE_FLOAT16, SHAPE(1));
    cr_assert(binary_run(PLX_BINARY_ADD, &t1, &t1, &t1, one, tiny, sum), "%s", g_err);
    cr_assert(eq(u16, sum[0], 0x3c00));
    /* bfloat16: 5.5 mod -2 = 1.5 (0x40b0 is 5.5, 0xc000 is -2) */
    uint16_t c[1] = {0x40b0}, e[1] = {0xc000}, r[1];
    t1.dtype = PLX_DTYPE_BFLOAT16;
    cr_assert(binary_run(PLX_BINARY_MOD, &t1, &t1, &t1, c, e, r), "%s", g_err);
    cr_assert(eq(flt, plx_bfloat16_to_float32(r[0]), 1.5f));
}

Test(binary, refusals) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_BOOL, SHAPE(3)), info(PLX_DTYPE_BOOL, SHAPE(3))};
    plx_tensor_info out = info(PLX_DTYPE_BOOL, SHAPE(3));
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins, 2, &out, 1);
    const char *why = plxk_check_binary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "add"))), "%s", why);
    cr_assert(not(zero(ptr, strstr(why, "bool"))), "%s", why);
    ins[0].dtype = PLX_DTYPE_FLOAT32; /* mixed */
    ins[1].dtype = out.dtype = PLX_DTYPE_INT32;
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    ins[0].dtype = ins[1].dtype = out.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err)));
    d.func = PLX_BINARY_LESS; /* output must be bool */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    d.func = PLX_BINARY_ADD;
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(4)); /* [3] and [4] do not broadcast */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1));
    out = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3)); /* larger than the broadcast */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    /* NULL buffer still gives a reason */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, NULL, 0))));
}

Test(binary, mod_signs_and_zero) {
    /* integers: the sign of the divisor (Python's %):
     * -7 % 3 = 2, 7 % -3 = -2, -7 % -3 = -1, 7 % 3 = 1, 0 % 5 = 0, 6 % -3 = 0 */
    int32_t a[] = {-7, 7, -7, 7, 0, 6}, b[] = {3, -3, -3, 3, 5, -3}, y[6];
    plx_tensor_info t = info(PLX_DTYPE_INT32, SHAPE(6));
    cr_assert(binary_run(PLX_BINARY_MOD, &t, &t, &t, a, b, y), "%s", g_err);
    int32_t w[] = {2, -2, -1, 1, 0, 0};
    for (int i = 0; i < 6; i++) cr_assert(eq(i32, y[i], w[i]), "int mod %d", i);
    /* INT64_MIN % -1 is 0 (no trap); int8 -128 % 3 = 1; uint8 250 % 7 = 5 */
    int64_t m = INT64_MIN, n1 = -1, my = 9;
    plx_tensor_info ti64 = info(PLX_DTYPE_INT64, SCALAR);
    cr_assert(binary_run(PLX_BINARY_MOD, &ti64, &ti64, &ti64, &m, &n1, &my), "%s", g_err);
    cr_assert(eq(i64, my, 0));
    int8_t i8a = -128, i8b = 3, i8y;
    plx_tensor_info ti8 = info(PLX_DTYPE_INT8, SCALAR);
    cr_assert(binary_run(PLX_BINARY_MOD, &ti8, &ti8, &ti8, &i8a, &i8b, &i8y), "%s", g_err);
    cr_assert(eq(i8, i8y, 1));
    uint8_t ua = 250, ub = 7, uy;
    plx_tensor_info tu8 = info(PLX_DTYPE_UINT8, SCALAR);
    cr_assert(binary_run(PLX_BINARY_MOD, &tu8, &tu8, &tu8, &ua, &ub, &uy), "%s", g_err);
    cr_assert(eq(u8, uy, 5));
    /* integer modulo by zero: an execution error naming the layer */
    int32_t bz[] = {3, -3, 0, 3, 5, -3};
    cr_assert(not(binary_run(PLX_BINARY_MOD, &t, &t, &t, a, bz, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "'L1'"))), "%s", g_err);
    cr_assert(not(zero(ptr, strstr(g_err, "modulo by zero"))), "%s", g_err);
    /* floats: C's fmod, the sign of the dividend (ONNX fmod=1):
     * fmod(-7.5, 2) = -1.5, fmod(7.5, -2) = 1.5, fmod(-7.5, -2) = -1.5, fmod(7.5, 2) = 1.5;
     * x fmod 0 is NaN, not an error; fmod(5, inf) = 5 */
    float fa[] = {-7.5f, 7.5f, -7.5f, 7.5f, 5.0f, 5.0f}, fb[] = {2, -2, -2, 2, 0, INFINITY}, fy[6];
    plx_tensor_info tf = info(PLX_DTYPE_FLOAT32, SHAPE(6));
    cr_assert(binary_run(PLX_BINARY_MOD, &tf, &tf, &tf, fa, fb, fy), "%s", g_err);
    float fw[] = {-1.5f, 1.5f, -1.5f, 1.5f};
    for (int i = 0; i < 4; i++) cr_assert(eq(flt, fy[i], fw[i]), "float mod %d", i);
    cr_assert(isnan(fy[4]));
    cr_assert(eq(flt, fy[5], 5.0f));
}

Test(binary, prelu_slope_broadcast) {
    /* X [N,C,H,W] = [2,3,2,2], slope [C,1,1]: negatives scaled per channel */
    float x[24], slope[3] = {0.1f, -2.0f, 0.5f}, y[24];
    seed(21);
    for (int i = 0; i < 24; i++) x[i] = rnd_f(-4, 4);
    x[0] = -0.0f;
    x[1] = 0.0f;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3, 2, 2));
    plx_tensor_info ts = info(PLX_DTYPE_FLOAT32, SHAPE(3, 1, 1));
    cr_assert(binary_run(PLX_BINARY_PRELU, &tx, &ts, &tx, x, slope, y), "%s", g_err);
    for (int n = 0; n < 2; n++) {
        for (int c = 0; c < 3; c++) {
            for (int k = 0; k < 4; k++) {
                int i = (n * 3 + c) * 4 + k;
                float want = x[i] < 0 ? slope[c] * x[i] : x[i];
                cr_assert(eq(flt, y[i], want), "prelu %d", i);
            }
        }
    }
    /* int32 with a scalar slope: -5 * 3 = -15, 4 stays */
    int32_t xi[] = {-5, 4, 0, -1}, si = 3, yi[4];
    plx_tensor_info ti = info(PLX_DTYPE_INT32, SHAPE(2, 2)), tsi = info(PLX_DTYPE_INT32, SCALAR);
    cr_assert(binary_run(PLX_BINARY_PRELU, &ti, &tsi, &ti, xi, &si, yi), "%s", g_err);
    int32_t wi[] = {-15, 4, 0, -3};
    for (int i = 0; i < 4; i++) cr_assert(eq(i32, yi[i], wi[i]));
    /* the slope may not grow the output: A [1,3], B [2,3] -> [2,3] is refused */
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_PRELU);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 3)), info(PLX_DTYPE_FLOAT32, SHAPE(2, 3))};
    plx_tensor_info out = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3));
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins, 2, &out, 1);
    const char *why = plxk_check_binary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "prelu"))), "%s", why);
    /* int8 is not a PRelu type */
    ins[0] = info(PLX_DTYPE_INT8, SHAPE(2, 3));
    ins[1] = info(PLX_DTYPE_INT8, SHAPE(3));
    out = ins[0];
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
}

Test(binary, logical_and_ordered_compares) {
    /* [2,1] op [2] -> [2,2]: a = [0,1], b = [0,1] */
    uint8_t a[] = {0, 1}, b[] = {0, 1}, y[4];
    plx_tensor_info ta = info(PLX_DTYPE_BOOL, SHAPE(2, 1)), tb = info(PLX_DTYPE_BOOL, SHAPE(2));
    plx_tensor_info ty = info(PLX_DTYPE_BOOL, SHAPE(2, 2));
    const uint8_t want[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}}; /* and, or, xor */
    for (int f = PLX_BINARY_AND; f <= PLX_BINARY_XOR; f++) {
        cr_assert(binary_run((plx_binary_func)f, &ta, &tb, &ty, a, b, y), "%s", g_err);
        for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], want[f - PLX_BINARY_AND][i]), "f %d i %d", f, i);
    }
    /* any non-zero byte is true */
    uint8_t a2[] = {0, 7}, b2[] = {2, 0};
    cr_assert(binary_run(PLX_BINARY_AND, &ta, &tb, &ty, a2, b2, y), "%s", g_err);
    const uint8_t w2[] = {0, 0, 1, 0};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], w2[i]));
    /* and on int32 is refused */
    int32_t ia[2] = {1, 0};
    plx_tensor_info t32 = info(PLX_DTYPE_INT32, SHAPE(2));
    plx_tensor_info tb2 = info(PLX_DTYPE_BOOL, SHAPE(2));
    cr_assert(not(binary_run(PLX_BINARY_AND, &t32, &t32, &tb2, ia, ia, y)));
    /* >= and <= with NaN are false; float16 and bfloat16 through float32 */
    float fa[] = {1, 2, NAN, 1}, fb[] = {1, 1, NAN, 2};
    plx_tensor_info tf = info(PLX_DTYPE_FLOAT32, SHAPE(4)), tby = info(PLX_DTYPE_BOOL, SHAPE(4));
    cr_assert(binary_run(PLX_BINARY_GREATER_EQUAL, &tf, &tf, &tby, fa, fb, y), "%s", g_err);
    const uint8_t ge[] = {1, 1, 0, 0}, le[] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], ge[i]), "ge %d", i);
    cr_assert(binary_run(PLX_BINARY_LESS_EQUAL, &tf, &tf, &tby, fa, fb, y), "%s", g_err);
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], le[i]), "le %d", i);
    uint16_t h1[] = {0x3c00, 0x3c01, 0x7e00, 0x3c00}, h2[] = {0x3c00, 0x3c00, 0x7e00, 0x3c01};
    plx_tensor_info th = info(PLX_DTYPE_FLOAT16, SHAPE(4));
    cr_assert(binary_run(PLX_BINARY_GREATER_EQUAL, &th, &th, &tby, h1, h2, y), "%s", g_err);
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], ge[i]), "f16 ge %d", i);
    th.dtype = PLX_DTYPE_BFLOAT16;
    h1[2] = h2[2] = 0x7fc0; /* a bfloat16 NaN (0x7e00 is a finite bfloat16) */
    cr_assert(binary_run(PLX_BINARY_LESS_EQUAL, &th, &th, &tby, h1, h2, y), "%s", g_err);
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], le[i]), "bf16 le %d", i);
    /* int64 extremes */
    int64_t la[] = {INT64_MIN, INT64_MAX}, lb[] = {INT64_MAX, INT64_MAX};
    plx_tensor_info tl = info(PLX_DTYPE_INT64, SHAPE(2)), tlb = info(PLX_DTYPE_BOOL, SHAPE(2));
    cr_assert(binary_run(PLX_BINARY_LESS_EQUAL, &tl, &tl, &tlb, la, lb, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 1));
    cr_assert(eq(u8, y[1], 1));
    cr_assert(binary_run(PLX_BINARY_GREATER_EQUAL, &tl, &tl, &tlb, la, lb, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 0));
    cr_assert(eq(u8, y[1], 1));
}

Test(binary, random_new_funcs) {
    plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT8, PLX_DTYPE_UINT8, PLX_DTYPE_INT16,
                         PLX_DTYPE_INT32, PLX_DTYPE_INT64, PLX_DTYPE_BOOL};
    seed(22);
    int64_t ba[128], bb[128], by[128];
    for (size_t s = 0; s < sizeof g_bshapes / sizeof g_bshapes[0]; s++) {
        const shape_case *sc = &g_bshapes[s];
        for (int ti = 0; ti < 7; ti++) {
            plx_dtype t = types[ti];
            for (int f = PLX_BINARY_PRELU; f <= PLX_BINARY_MOD; f++) {
                bool logical = f >= PLX_BINARY_AND && f <= PLX_BINARY_XOR;
                bool cmp = f == PLX_BINARY_GREATER_EQUAL || f == PLX_BINARY_LESS_EQUAL;
                if (logical != (t == PLX_DTYPE_BOOL)) continue;
                if (f == PLX_BINARY_PRELU && t != PLX_DTYPE_FLOAT32 && t != PLX_DTYPE_INT32 &&
                    t != PLX_DTYPE_INT64) continue;
                /* prelu: B broadcasts to A, which is the output; here the bigger operand is A */
                const int64_t *ad = sc->a, *bd = sc->b;
                uint32_t ra = sc->ra, rb = sc->rb;
                if (f == PLX_BINARY_PRELU) {
                    ad = sc->y, ra = sc->ry;
                }
                plx_tensor_info a = info(t, ad, ra), b = info(t, bd, rb);
                plx_tensor_info y = info(cmp || logical ? PLX_DTYPE_BOOL : t, sc->y, sc->ry);
                int64_t lo = t == PLX_DTYPE_UINT8 || t == PLX_DTYPE_BOOL ? 0 : -9, hi = t == PLX_DTYPE_BOOL ? 1 : 9;
                random_fill(t, ba, numel(&a), lo, hi);
                random_fill(t, bb, numel(&b), lo, hi);
                if (f == PLX_BINARY_MOD) {
                    for (size_t i = 0; i < numel(&b); i++) {
                        if (t == PLX_DTYPE_FLOAT32 ? ((float *)bb)[i] == 0 : get_i(t, bb, i) == 0) {
                            if (t == PLX_DTYPE_FLOAT32) ((float *)bb)[i] = 2.5f;
                            else set_i(t, bb, i, 4);
                        }
                    }
                }
                cr_assert(binary_run((plx_binary_func)f, &a, &b, &y, ba, bb, by),
                          "shape %zu %s f %d: %s", s, plx_dtype_name(t), f, g_err);
                for (size_t i = 0; i < numel(&y); i++) {
                    size_t ia = bcast_index(&a, &y, i), ib = bcast_index(&b, &y, i);
                    if (t == PLX_DTYPE_FLOAT32) {
                        double want = ref_binary_f((plx_binary_func)f, ((float *)ba)[ia], ((float *)bb)[ib]);
                        if (cmp) cr_assert(eq(u8, ((uint8_t *)by)[i], (uint8_t)want));
                        else ASSERT_CLOSE(((float *)by)[i], want, 1e-6, "f %d", f);
                    } else {
                        int64_t want = ref_binary_i((plx_binary_func)f, get_i(t, ba, ia), get_i(t, bb, ib));
                        if (cmp || logical) {
                            cr_assert(eq(u8, ((uint8_t *)by)[i], (uint8_t)want), "f %d i %zu", f, i);
                        } else {
                            int64_t tmp[1];
                            set_i(t, tmp, 0, want);
                            cr_assert(eq(i64, get_i(t, by, i), get_i(t, tmp, 0)), "%s f %d i %zu",
                                      plx_dtype_name(t), f, i);
                        }
                    }
                }
            }
        }
    }
}

Test(binary, new_funcs_refusals) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_MOD);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_BOOL, SHAPE(3)), info(PLX_DTYPE_BOOL, SHAPE(3))};
    plx_tensor_info out = info(PLX_DTYPE_BOOL, SHAPE(3));
    plx_layer_view l = layer_of(PLX_OP_BINARY, &d, ins, 2, &out, 1);
    const char *why = plxk_check_binary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why))); /* arithmetic on bool */
    cr_assert(not(zero(ptr, strstr(why, "mod"))), "%s", why);
    ins[0].dtype = ins[1].dtype = out.dtype = PLX_DTYPE_BOOL;
    d.func = PLX_BINARY_XOR;
    cr_assert(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err)), "%s", g_err);
    d.func = PLX_BINARY_GREATER_EQUAL; /* ordered compares of bools: not ONNX */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    ins[0].dtype = ins[1].dtype = PLX_DTYPE_INT32;
    out.dtype = PLX_DTYPE_INT32; /* a comparison's output is bool */
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
    d.func = (plx_binary_func)(PLX_BINARY_SHIFT_RIGHT + 1); /* unknown: refused (R-19 (3)) */
    why = plxk_check_binary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "unknown"))), "%s", why);
    d.func = (plx_binary_func)-1;
    cr_assert(not(zero(ptr, (void *)plxk_check_binary(&l, g_err, sizeof g_err))));
}

/* ---- unary -------------------------------------------------------------- */

static bool unary_run(plx_unary_func f, plx_dtype t, size_t n, const void *x, void *y) {
    plx_unary_desc d = PLX_UNARY_DESC_INIT(f);
    plx_tensor_info in = info(t, (const int64_t[]){(int64_t)n}, 1), out = in;
    plx_layer_view l = layer_of(PLX_OP_UNARY, &d, &in, 1, &out, 1);
    const void *ins[] = {x};
    void *outs[] = {y};
    return run_layer(plxk_run_unary, &l, ins, outs);
}

static double ref_unary(plx_unary_func f, double x) {
    switch (f) {
    case PLX_UNARY_ABS: return fabs(x);
    case PLX_UNARY_NEG: return -x;
    case PLX_UNARY_SQRT: return sqrt(x);
    case PLX_UNARY_RECIPROCAL: return 1 / x;
    case PLX_UNARY_EXP: return exp(x);
    case PLX_UNARY_LOG: return log(x);
    case PLX_UNARY_ERF: return erf(x);
    case PLX_UNARY_FLOOR: return floor(x);
    case PLX_UNARY_CEIL: return ceil(x);
    case PLX_UNARY_SIN: return sin(x);
    case PLX_UNARY_COS: return cos(x);
    case PLX_UNARY_TAN: return tan(x);
    case PLX_UNARY_ASIN: return asin(x);
    case PLX_UNARY_ACOS: return acos(x);
    case PLX_UNARY_ATAN: return atan(x);
    case PLX_UNARY_SINH: return sinh(x);
    case PLX_UNARY_COSH: return cosh(x);
    case PLX_UNARY_ASINH: return log(x + sqrt(x * x + 1));
    case PLX_UNARY_ACOSH: return log(x + sqrt(x * x - 1));
    case PLX_UNARY_ATANH: return 0.5 * log((1 + x) / (1 - x));
    case PLX_UNARY_ROUND: {
        /* halves to even, from floor and the fraction */
        double f = floor(x), frac = x - f;
        if (frac != 0.5) return frac < 0.5 ? f : f + 1;
        return fmod(f, 2) == 0 ? f : f + 1;
    }
    case PLX_UNARY_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    default: return NAN;
    }
}

Test(unary, hand_values) {
    /* floor(-1.5) = -2, ceil(-1.5) = -1, sqrt(4) = 2, 1/4 = 0.25, log(1) = 0, erf(0) = 0 */
    float x[] = {-1.5f, 4.0f, 1.0f, 0.0f}, y[4];
    cr_assert(unary_run(PLX_UNARY_FLOOR, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[0], -2.0f));
    cr_assert(unary_run(PLX_UNARY_CEIL, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[0], -1.0f));
    cr_assert(unary_run(PLX_UNARY_SQRT, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[1], 2.0f));
    cr_assert(isnan(y[0]));
    cr_assert(unary_run(PLX_UNARY_RECIPROCAL, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[1], 0.25f));
    cr_assert(isinf(y[3]));
    cr_assert(unary_run(PLX_UNARY_LOG, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[2], 0.0f));
    cr_assert(unary_run(PLX_UNARY_ERF, PLX_DTYPE_FLOAT32, 4, x, y));
    cr_assert(eq(flt, y[3], 0.0f));
    /* not: bool */
    uint8_t b[] = {0, 1, 1}, nb[3];
    cr_assert(unary_run(PLX_UNARY_NOT, PLX_DTYPE_BOOL, 3, b, nb));
    cr_assert(eq(u8, nb[0], 1));
    cr_assert(eq(u8, nb[1], 0));
    /* signed ints wrap: abs(-128) = -128, neg(-128) = -128 (int8) */
    int8_t i8[] = {-128, -5, 7}, o8[3];
    cr_assert(unary_run(PLX_UNARY_ABS, PLX_DTYPE_INT8, 3, i8, o8));
    cr_assert(eq(i8, o8[0], -128));
    cr_assert(eq(i8, o8[1], 5));
    cr_assert(unary_run(PLX_UNARY_NEG, PLX_DTYPE_INT8, 3, i8, o8));
    cr_assert(eq(i8, o8[0], -128));
    cr_assert(eq(i8, o8[2], -7));
    int64_t i64[] = {INT64_MIN, -3}, o64[2];
    cr_assert(unary_run(PLX_UNARY_NEG, PLX_DTYPE_INT64, 2, i64, o64));
    cr_assert(eq(i64, o64[0], INT64_MIN));
    cr_assert(eq(i64, o64[1], 3));
    /* abs on uint8 is the identity */
    uint8_t u[] = {0, 200}, uo[2];
    cr_assert(unary_run(PLX_UNARY_ABS, PLX_DTYPE_UINT8, 2, u, uo));
    cr_assert(eq(u8, uo[1], 200));
}

Test(unary, random_float_and_ints) {
    seed(6);
    float x[300], y[300];
    for (int f = PLX_UNARY_ABS; f <= PLX_UNARY_CEIL; f++) {
        for (int i = 0; i < 300; i++) {
            x[i] = rnd_f(-6, 6);
            if (f == PLX_UNARY_SQRT || f == PLX_UNARY_LOG) x[i] = fabsf(x[i]) + 1e-3f;
        }
        cr_assert(unary_run((plx_unary_func)f, PLX_DTYPE_FLOAT32, 300, x, y), "%s", g_err);
        for (int i = 0; i < 300; i++) ASSERT_CLOSE(y[i], ref_unary((plx_unary_func)f, x[i]), 1e-6, "f %d", f);
    }
    plx_dtype types[] = {PLX_DTYPE_INT8, PLX_DTYPE_INT16, PLX_DTYPE_INT32, PLX_DTYPE_INT64};
    for (int t = 0; t < 4; t++) {
        int64_t bx[50], by[50], lo, hi;
        int_limits(types[t], &lo, &hi);
        for (int i = 0; i < 50; i++) set_i(types[t], bx, (size_t)i, rnd_i(lo + 1, hi));
        for (int f = 0; f < 2; f++) {
            cr_assert(unary_run((plx_unary_func)f, types[t], 50, bx, by));
            for (size_t i = 0; i < 50; i++) {
                int64_t v = get_i(types[t], bx, i);
                cr_assert(eq(i64, get_i(types[t], by, i), f ? -v : (v < 0 ? -v : v)));
            }
        }
    }
    /* empty tensor: nothing happens */
    cr_assert(unary_run(PLX_UNARY_EXP, PLX_DTYPE_FLOAT32, 0, x, y));
}

Test(unary, refusals) {
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_tensor_info in = info(PLX_DTYPE_INT32, SHAPE(2)), out = in;
    plx_layer_view l = layer_of(PLX_OP_UNARY, &d, &in, 1, &out, 1);
    const char *why = plxk_check_unary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "sqrt"))));
    cr_assert(not(zero(ptr, strstr(why, "int32"))));
    d.func = PLX_UNARY_NEG;
    in.dtype = out.dtype = PLX_DTYPE_UINT8;
    cr_assert(not(zero(ptr, (void *)plxk_check_unary(&l, g_err, sizeof g_err))));
    d.func = PLX_UNARY_NOT;
    in.dtype = out.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(not(zero(ptr, (void *)plxk_check_unary(&l, g_err, sizeof g_err))));
    d.func = PLX_UNARY_EXP;
    in.dtype = out.dtype = PLX_DTYPE_BFLOAT16;
    cr_assert(not(zero(ptr, strstr(plxk_check_unary(&l, g_err, sizeof g_err), "bfloat16"))));
}

Test(unary, new_funcs_hand_values) {
    /* round: halves to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0, -1.5 -> -2,
     * 2.4999 -> 2, -2.5 -> -2, 3.5 -> 4 */
    float xr[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4999f, -2.5f, 3.5f}, y[8];
    cr_assert(unary_run(PLX_UNARY_ROUND, PLX_DTYPE_FLOAT32, 8, xr, y), "%s", g_err);
    float wr[] = {0, 2, 2, -0.0f, -2, 2, -2, 4};
    for (int i = 0; i < 8; i++) cr_assert(eq(flt, y[i], wr[i]), "round(%g)", (double)xr[i]);
    cr_assert(eq(int, signbit(y[3]) != 0, 1)); /* -0.5 rounds to -0 */
    /* sign: floats keep NaN; -1, 0, 1 otherwise */
    float xs[] = {-2.5f, 0.0f, 3.0f, NAN, -INFINITY, 1e-30f};
    cr_assert(unary_run(PLX_UNARY_SIGN, PLX_DTYPE_FLOAT32, 6, xs, y), "%s", g_err);
    cr_assert(eq(flt, y[0], -1.0f));
    cr_assert(eq(flt, y[1], 0.0f));
    cr_assert(eq(flt, y[2], 1.0f));
    cr_assert(isnan(y[3]));
    cr_assert(eq(flt, y[4], -1.0f));
    cr_assert(eq(flt, y[5], 1.0f));
    /* sign on signed integers, the extremes included */
    int8_t i8[] = {-128, 0, 127, -1}, o8[4];
    cr_assert(unary_run(PLX_UNARY_SIGN, PLX_DTYPE_INT8, 4, i8, o8), "%s", g_err);
    int8_t w8[] = {-1, 0, 1, -1};
    for (int i = 0; i < 4; i++) cr_assert(eq(i8, o8[i], w8[i]));
    int64_t i64[] = {INT64_MIN, INT64_MAX, 0}, o64[3];
    cr_assert(unary_run(PLX_UNARY_SIGN, PLX_DTYPE_INT64, 3, i64, o64), "%s", g_err);
    cr_assert(eq(i64, o64[0], -1));
    cr_assert(eq(i64, o64[1], 1));
    cr_assert(eq(i64, o64[2], 0));
    /* trigonometry at exact points; out of domain gives NaN, atanh(1) = inf */
    float xt[] = {0.0f, 1.0f};
    cr_assert(unary_run(PLX_UNARY_COS, PLX_DTYPE_FLOAT32, 2, xt, y), "%s", g_err);
    cr_assert(eq(flt, y[0], 1.0f));
    ASSERT_CLOSE(y[1], 0.54030231, 1e-6, "cos(1)");
    cr_assert(unary_run(PLX_UNARY_ATAN, PLX_DTYPE_FLOAT32, 2, xt, y), "%s", g_err);
    ASSERT_CLOSE(y[1], 0.78539816, 1e-6, "atan(1)");
    float xd[] = {2.0f, 0.5f, 1.0f};
    cr_assert(unary_run(PLX_UNARY_ASIN, PLX_DTYPE_FLOAT32, 1, xd, y), "%s", g_err);
    cr_assert(isnan(y[0]));
    cr_assert(unary_run(PLX_UNARY_ACOSH, PLX_DTYPE_FLOAT32, 3, xd, y), "%s", g_err);
    ASSERT_CLOSE(y[0], 1.3169579, 1e-6, "acosh(2)");
    cr_assert(isnan(y[1]));
    cr_assert(eq(flt, y[2], 0.0f));
    cr_assert(unary_run(PLX_UNARY_ATANH, PLX_DTYPE_FLOAT32, 3, xd, y), "%s", g_err);
    cr_assert(isnan(y[0]));
    ASSERT_CLOSE(y[1], 0.54930614, 1e-6, "atanh(0.5)");
    cr_assert(eq(flt, y[2], INFINITY));
    cr_assert(unary_run(PLX_UNARY_COSH, PLX_DTYPE_FLOAT32, 1, (float[]){100.0f}, y), "%s", g_err);
    cr_assert(eq(flt, y[0], INFINITY)); /* overflows float32 */
    /* refusals: round on int32, sign on uint8 and bool, an unknown func (R-19 (3)) */
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_ROUND);
    plx_tensor_info in = info(PLX_DTYPE_INT32, SHAPE(2)), out = in;
    plx_layer_view l = layer_of(PLX_OP_UNARY, &d, &in, 1, &out, 1);
    const char *why = plxk_check_unary(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "round"))), "%s", why);
    d.func = PLX_UNARY_SIGN;
    in.dtype = out.dtype = PLX_DTYPE_UINT8;
    cr_assert(not(zero(ptr, (void *)plxk_check_unary(&l, g_err, sizeof g_err))));
    in.dtype = out.dtype = PLX_DTYPE_BOOL;
    cr_assert(not(zero(ptr, (void *)plxk_check_unary(&l, g_err, sizeof g_err))));
    in.dtype = out.dtype = PLX_DTYPE_FLOAT32;
    d.func = (plx_unary_func)(PLX_UNARY_BITWISE_NOT + 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_unary(&l, g_err, sizeof g_err))));
}

Test(unary, random_new_funcs) {
    seed(23);
    float x[300], y[300];
    for (int f = PLX_UNARY_SIN; f <= PLX_UNARY_SIGN; f++) {
        for (int i = 0; i < 300; i++) {
            x[i] = rnd_f(-6, 6);
            if (f == PLX_UNARY_ASIN || f == PLX_UNARY_ACOS) x[i] = rnd_f(-1, 1);
            if (f == PLX_UNARY_ATANH) x[i] = rnd_f(-0.99f, 0.99f);
            if (f == PLX_UNARY_ACOSH) x[i] = rnd_f(1, 20);
            if (f == PLX_UNARY_TAN) x[i] = rnd_f(-1.4f, 1.4f); /* away from the poles */
            if (f == PLX_UNARY_ROUND && i % 3 == 0) x[i] = (float)rnd_i(-20, 20) / 2; /* halves */
        }
        cr_assert(unary_run((plx_unary_func)f, PLX_DTYPE_FLOAT32, 300, x, y), "%s", g_err);
        for (int i = 0; i < 300; i++) {
            ASSERT_CLOSE(y[i], ref_unary((plx_unary_func)f, x[i]), 2e-6, "f %d x %g", f, (double)x[i]);
        }
    }
    plx_dtype types[] = {PLX_DTYPE_INT8, PLX_DTYPE_INT16, PLX_DTYPE_INT32, PLX_DTYPE_INT64};
    for (int t = 0; t < 4; t++) {
        int64_t bx[50], by[50], lo, hi;
        int_limits(types[t], &lo, &hi);
        for (int i = 0; i < 50; i++) set_i(types[t], bx, (size_t)i, i % 5 == 0 ? 0 : rnd_i(lo, hi));
        cr_assert(unary_run(PLX_UNARY_SIGN, types[t], 50, bx, by), "%s", g_err);
        for (size_t i = 0; i < 50; i++) {
            int64_t v = get_i(types[t], bx, i);
            cr_assert(eq(i64, get_i(types[t], by, i), (int64_t)ref_unary(PLX_UNARY_SIGN, (double)v)));
        }
    }
}

/* ---- where -------------------------------------------------------------- */

static bool where_run(const plx_tensor_info *c, const plx_tensor_info *x, const plx_tensor_info *yv,
                      const plx_tensor_info *z, const void *pc, const void *px, const void *py, void *pz) {
    plx_tensor_info ins_i[3] = {*c, *x, *yv};
    plx_layer_view l = layer_of(PLX_OP_WHERE, NULL, ins_i, 3, z, 1);
    const void *ins[] = {pc, px, py};
    void *outs[] = {pz};
    return run_layer(plxk_run_where, &l, ins, outs);
}

Test(where, hand_three_way) {
    /* cond [3,1] = [1,0,1], X [1,4] = [1,2,3,4], Y scalar 9 -> rows 1,3 are X, row 2 is 9 */
    uint8_t c[] = {1, 0, 1};
    int64_t x[] = {1, 2, 3, 4}, yv = 9, z[12];
    plx_tensor_info tc = info(PLX_DTYPE_BOOL, SHAPE(3, 1)), tx = info(PLX_DTYPE_INT64, SHAPE(1, 4));
    plx_tensor_info ty = info(PLX_DTYPE_INT64, SCALAR), tz = info(PLX_DTYPE_INT64, SHAPE(3, 4));
    cr_assert(where_run(&tc, &tx, &ty, &tz, c, x, &yv, z), "%s", g_err);
    int64_t w[] = {1, 2, 3, 4, 9, 9, 9, 9, 1, 2, 3, 4};
    for (int i = 0; i < 12; i++) cr_assert(eq(i64, z[i], w[i]));
    /* cond must be bool */
    tc.dtype = PLX_DTYPE_UINT8;
    cr_assert(not(where_run(&tc, &tx, &ty, &tz, c, x, &yv, z)));
}

Test(where, random_all_dtypes) {
    plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16, PLX_DTYPE_INT8,
                         PLX_DTYPE_UINT8, PLX_DTYPE_INT16, PLX_DTYPE_INT32, PLX_DTYPE_INT64, PLX_DTYPE_BOOL};
    seed(7);
    uint8_t c[64], x[64 * 8], yv[64 * 8], z[64 * 8];
    for (int t = 0; t < 9; t++) {
        size_t es = plx_dtype_size(types[t]);
        /* cond [2,1,4], X [3,1], Y [2,3,1] -> [2,3,4] */
        plx_tensor_info tc = info(PLX_DTYPE_BOOL, SHAPE(2, 1, 4)), tx = info(types[t], SHAPE(3, 1));
        plx_tensor_info ty = info(types[t], SHAPE(2, 3, 1)), tz = info(types[t], SHAPE(2, 3, 4));
        for (size_t i = 0; i < sizeof x; i++) { x[i] = (uint8_t)rnd(); yv[i] = (uint8_t)rnd(); }
        for (size_t i = 0; i < 8; i++) c[i] = (uint8_t)(rnd() & 1);
        if (types[t] == PLX_DTYPE_BOOL) for (size_t i = 0; i < sizeof x; i++) { x[i] &= 1; yv[i] &= 1; }
        cr_assert(where_run(&tc, &tx, &ty, &tz, c, x, yv, z), "%s", g_err);
        for (size_t i = 0; i < 24; i++) {
            size_t ic = bcast_index(&tc, &tz, i), ix = bcast_index(&tx, &tz, i), iy = bcast_index(&ty, &tz, i);
            const uint8_t *want = c[ic] ? x + ix * es : yv + iy * es;
            cr_assert(zero(int, memcmp(z + i * es, want, es)), "dtype %s i %zu", plx_dtype_name(types[t]), i);
        }
    }
}

/* ---- cast --------------------------------------------------------------- */

static bool cast_run(plx_dtype from, plx_dtype to, size_t n, const void *x, void *y) {
    plx_cast_desc d = PLX_CAST_DESC_INIT(to);
    plx_tensor_info in = info(from, (const int64_t[]){(int64_t)n}, 1);
    plx_tensor_info out = info(to, (const int64_t[]){(int64_t)n}, 1);
    plx_layer_view l = layer_of(PLX_OP_CAST, &d, &in, 1, &out, 1);
    const void *ins[] = {x};
    void *outs[] = {y};
    return run_layer(plxk_run_cast, &l, ins, outs);
}

Test(cast, float_to_int_edges) {
    /* truncation toward zero; NaN -> 0; out of range saturates (documented) */
    float x[] = {-2.7f, 2.7f, NAN, 1e10f, -1e10f, INFINITY, -INFINITY, -0.9f, 300.0f, -1.0f};
    int32_t y32[10];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_INT32, 10, x, y32));
    int32_t w32[] = {-2, 2, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, 300, -1};
    for (int i = 0; i < 10; i++) cr_assert(eq(i32, y32[i], w32[i]), "i %d", i);
    uint8_t u8v[10];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_UINT8, 10, x, u8v));
    uint8_t wu[] = {0, 2, 0, 255, 0, 255, 0, 0, 255, 0};
    for (int i = 0; i < 10; i++) cr_assert(eq(u8, u8v[i], wu[i]), "i %d", i);
    int64_t y64[10];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, 10, x, y64));
    cr_assert(eq(i64, y64[3], 10000000000LL));
    cr_assert(eq(i64, y64[5], INT64_MAX));
    float big = 9.2233720e18f; /* exactly 2^63: saturates */
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, 1, &big, y64));
    cr_assert(eq(i64, y64[0], INT64_MAX));
    /* to bool: x != 0, NaN is true */
    uint8_t b[10];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_BOOL, 10, x, b));
    cr_assert(eq(u8, b[2], 1));
    cr_assert(eq(u8, b[7], 1));
    float zf[] = {0.0f, -0.0f};
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_BOOL, 2, zf, b));
    cr_assert(eq(u8, b[0], 0));
    cr_assert(eq(u8, b[1], 0));
}

Test(cast, int_and_bool_edges) {
    /* int -> int wraps modulo 2^bits: 300 -> int8 44, -1 -> uint8 255, 65536+5 -> int16 5 */
    int32_t x[] = {300, -1, 65541, -129};
    int8_t y8[4];
    cr_assert(cast_run(PLX_DTYPE_INT32, PLX_DTYPE_INT8, 4, x, y8));
    cr_assert(eq(i8, y8[0], 44));
    cr_assert(eq(i8, y8[1], -1));
    cr_assert(eq(i8, y8[3], 127));
    uint8_t u8v[4];
    cr_assert(cast_run(PLX_DTYPE_INT32, PLX_DTYPE_UINT8, 4, x, u8v));
    cr_assert(eq(u8, u8v[1], 255));
    int16_t y16[4];
    cr_assert(cast_run(PLX_DTYPE_INT32, PLX_DTYPE_INT16, 4, x, y16));
    cr_assert(eq(i16, y16[2], 5));
    /* bool -> float: 0/1, any non-zero byte reads as true */
    uint8_t b[] = {0, 1, 7};
    float f[3];
    cr_assert(cast_run(PLX_DTYPE_BOOL, PLX_DTYPE_FLOAT32, 3, b, f));
    cr_assert(eq(flt, f[0], 0.0f));
    cr_assert(eq(flt, f[1], 1.0f));
    cr_assert(eq(flt, f[2], 1.0f));
    uint8_t bb[3];
    cr_assert(cast_run(PLX_DTYPE_BOOL, PLX_DTYPE_BOOL, 3, b, bb));
    cr_assert(eq(u8, bb[2], 1));
    /* int -> bfloat16 must round once: 2^30 + 2^22 + 1 lies above the tie
     * between 2^30 and 2^30 + 2^23 (bf16 ulp at 2^30 is 2^23), so it rounds
     * up to 0x4e81; rounding via float32 first (which drops the +1) would
     * produce the tie and then 0x4e80 */
    int64_t v = (1LL << 30) + (1LL << 22) + 1;
    uint16_t h;
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_BFLOAT16, 1, &v, &h));
    cr_assert(eq(u16, h, 0x4e81));
    int32_t v32 = (int32_t)v;
    cr_assert(cast_run(PLX_DTYPE_INT32, PLX_DTYPE_BFLOAT16, 1, &v32, &h));
    cr_assert(eq(u16, h, 0x4e81));
    /* exact tie stays even: 2^30 + 2^22 -> 0x4e80 */
    v = (1LL << 30) + (1LL << 22);
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_BFLOAT16, 1, &v, &h));
    cr_assert(eq(u16, h, 0x4e80));
    /* int -> float16 overflow: 70000 -> inf; 65519 -> 65504; INT64_MIN -> -inf */
    int64_t vv[] = {70000, 65519, INT64_MIN, -3};
    uint16_t hh[4];
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_FLOAT16, 4, vv, hh));
    cr_assert(eq(u16, hh[0], 0x7c00));
    cr_assert(eq(u16, hh[1], 0x7bff));
    cr_assert(eq(u16, hh[2], 0xfc00));
    cr_assert(eq(u16, hh[3], 0xc200));
    /* float16 -> int8: 0x5bd0 = 250 saturates to 127; 0xc580 = -5.5 -> -5 */
    uint16_t hx[] = {0x5bd0, 0xc580, 0x7e00};
    int8_t o8[3];
    cr_assert(cast_run(PLX_DTYPE_FLOAT16, PLX_DTYPE_INT8, 3, hx, o8));
    cr_assert(eq(i8, o8[0], 127));
    cr_assert(eq(i8, o8[1], -5));
    cr_assert(eq(i8, o8[2], 0));
    /* bfloat16 -> float16: 1/3 in bf16 (0x3eab = 0.333984375) -> half 0x3558 */
    uint16_t bf = 0x3eab, hf;
    cr_assert(cast_run(PLX_DTYPE_BFLOAT16, PLX_DTYPE_FLOAT16, 1, &bf, &hf));
    cr_assert(eq(u16, hf, plx_float32_to_float16(0.333984375f)));
    cr_assert(eq(u16, hf, 0x3558));
}

/* Reference value of element i as double (exact for all test values). */
static double val_of(plx_dtype t, const void *p, size_t i) {
    switch (t) {
    case PLX_DTYPE_FLOAT32: return ((const float *)p)[i];
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)p)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
    default: return (double)get_i(t, p, i);
    }
}

/* The vectorised loops to float32: int32 (a quantized product's sum) and
 * int64 (a mask) round half to even above 2^24, int8 and uint8 keep their
 * values. */
Test(cast, int32_int64_and_8_bit_to_float32) {
    int32_t x[19];
    for (int i = 0; i < 19; i++) {
        x[i] = i * 1000 - 9000;
    }
    x[0] = 16777217;  /* 2^24 + 1: halfway, to even 2^24 */
    x[1] = 16777219;  /* to 2^24 + 4 */
    x[2] = INT32_MIN;
    x[3] = INT32_MAX; /* 2^31 */
    float f[19];
    cr_assert(cast_run(PLX_DTYPE_INT32, PLX_DTYPE_FLOAT32, 19, x, f));
    cr_assert(eq(flt, f[0], 16777216.0f));
    cr_assert(eq(flt, f[1], 16777220.0f));
    cr_assert(eq(flt, f[2], -2147483648.0f));
    cr_assert(eq(flt, f[3], 2147483648.0f));
    for (int i = 4; i < 19; i++) {
        cr_assert(eq(flt, f[i], (float)(i * 1000 - 9000)), "element %d", i);
    }
    int64_t x64[19];
    for (int i = 0; i < 19; i++) {
        x64[i] = (int64_t)i * 1000 - 9000;
    }
    x64[0] = 16777217;                    /* to 2^24 */
    x64[1] = ((int64_t)1 << 40) + 65537; /* 2^40 + 2^16 + 1: to 2^40 + 2^17 */
    x64[2] = INT64_MIN;
    x64[3] = -((int64_t)1 << 40) - 65536; /* a tie, to even: -(2^40) */
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_FLOAT32, 19, x64, f));
    cr_assert(eq(flt, f[0], 16777216.0f));
    cr_assert(eq(flt, f[1], 1099511758848.0f));
    cr_assert(eq(flt, f[2], -9223372036854775808.0f));
    cr_assert(eq(flt, f[3], -1099511627776.0f));
    for (int i = 4; i < 19; i++) {
        cr_assert(eq(flt, f[i], (float)(i * 1000 - 9000)), "int64 element %d", i);
    }
    int8_t s8[17];
    uint8_t u8v[17];
    for (int i = 0; i < 17; i++) {
        s8[i] = (int8_t)(i * 15 - 128);
        u8v[i] = (uint8_t)(i * 15);
    }
    cr_assert(cast_run(PLX_DTYPE_INT8, PLX_DTYPE_FLOAT32, 17, s8, f));
    for (int i = 0; i < 17; i++) {
        cr_assert(eq(flt, f[i], (float)(i * 15 - 128)), "int8 element %d", i);
    }
    cr_assert(cast_run(PLX_DTYPE_UINT8, PLX_DTYPE_FLOAT32, 17, u8v, f));
    for (int i = 0; i < 17; i++) {
        cr_assert(eq(flt, f[i], (float)(i * 15)), "uint8 element %d", i);
    }
}

Test(cast, every_pair_small_values) {
    /* values exact in every dtype (bool: 0/1 only), so every cast is exact */
    const double vals[] = {0, 1, 3, 7, 100, 127, 0, 1};
    plx_dtype all[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16, PLX_DTYPE_INT8,
                       PLX_DTYPE_UINT8, PLX_DTYPE_INT16, PLX_DTYPE_INT32, PLX_DTYPE_INT64, PLX_DTYPE_BOOL};
    for (int a = 0; a < 9; a++) {
        for (int b = 0; b < 9; b++) {
            int64_t src[8], dst[8];
            for (size_t i = 0; i < 8; i++) {
                double v = vals[i];
                if (all[a] == PLX_DTYPE_BOOL) v = v != 0;
                switch (all[a]) {
                case PLX_DTYPE_FLOAT32: ((float *)src)[i] = (float)v; break;
                case PLX_DTYPE_FLOAT16: ((uint16_t *)src)[i] = plx_float32_to_float16((float)v); break;
                case PLX_DTYPE_BFLOAT16: ((uint16_t *)src)[i] = plx_float32_to_bfloat16((float)v); break;
                default: set_i(all[a], src, i, (int64_t)v); break;
                }
            }
            cr_assert(cast_run(all[a], all[b], 8, src, dst), "%s -> %s: %s",
                      plx_dtype_name(all[a]), plx_dtype_name(all[b]), g_err);
            for (size_t i = 0; i < 8; i++) {
                double want = val_of(all[a], src, i);
                if (all[b] == PLX_DTYPE_BOOL) want = want != 0;
                cr_assert(eq(dbl, val_of(all[b], dst, i), want), "%s -> %s i %zu",
                          plx_dtype_name(all[a]), plx_dtype_name(all[b]), i);
            }
        }
    }
}

Test(cast, random_float_to_int_and_halfs) {
    seed(8);
    float x[500];
    for (int i = 0; i < 500; i++) x[i] = rnd_f(-40000, 40000) * (i % 3 ? 1.0f : 1e-4f);
    int16_t y[500];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_INT16, 500, x, y));
    for (int i = 0; i < 500; i++) {
        double t = trunc(x[i]);
        t = t < -32768 ? -32768 : t > 32767 ? 32767 : t; /* saturates */
        cr_assert(eq(i16, y[i], (int16_t)t), "x %g", (double)x[i]);
    }
    uint16_t h[500], bh[500];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, 500, x, h));
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_BFLOAT16, 500, x, bh));
    for (int i = 0; i < 500; i++) {
        cr_assert(eq(u16, h[i], ref_f32_to_f16(x[i])));
        cr_assert(eq(u16, bh[i], ref_f32_to_bf16(x[i])));
    }
    /* random int64 -> float16/bfloat16 against the reference applied to the
     * exact value (int64 -> double is exact below 2^53) */
    int64_t iv[500];
    for (int i = 0; i < 500; i++) iv[i] = rnd_i(-(1LL << 40), 1LL << 40) >> rnd_i(0, 30);
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_BFLOAT16, 500, iv, bh));
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_FLOAT16, 500, iv, h));
    for (int i = 0; i < 500; i++) {
        /* reference: nearest of the two bf16 neighbours of the exact value */
        double a = (double)iv[i];
        float trunc_f = (float)a; /* may round; pick neighbours around a */
        uint32_t u;
        memcpy(&u, &trunc_f, 4);
        uint16_t cand[3] = {(uint16_t)((u >> 16) - 1), (uint16_t)(u >> 16), (uint16_t)((u >> 16) + 1)};
        uint16_t best = cand[0];
        double bd = INFINITY;
        for (int k = 0; k < 3; k++) {
            double dv = fabs(plx_bfloat16_to_float32(cand[k]) - a);
            if (dv < bd || (dv == bd && !(cand[k] & 1))) { bd = dv; best = cand[k]; }
        }
        if (a == 0) best = 0;
        cr_assert(eq(u16, bh[i], best), "v %lld", (long long)iv[i]);
        if (fabs(a) < 65504) cr_assert(eq(u16, h[i], ref_f32_to_f16((float)a)), "v %lld", (long long)iv[i]);
    }
}

Test(cast, refusals) {
    plx_cast_desc d = PLX_CAST_DESC_INIT(PLX_DTYPE_INT8);
    plx_tensor_info in = info(PLX_DTYPE_FLOAT32, SHAPE(2)), out = info(PLX_DTYPE_INT32, SHAPE(2));
    plx_layer_view l = layer_of(PLX_OP_CAST, &d, &in, 1, &out, 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_cast(&l, g_err, sizeof g_err)))); /* desc disagrees */
    d.to = PLX_DTYPE_INT32;
    cr_assert(zero(ptr, (void *)plxk_check_cast(&l, g_err, sizeof g_err)));
    in.dtype = PLX_DTYPE_INVALID;
    cr_assert(not(zero(ptr, (void *)plxk_check_cast(&l, g_err, sizeof g_err))));
}

/* ---- quantize / dequantize ---------------------------------------------- */

static bool quant_run(plxk_run_fn fn, plx_op op, int32_t axis, const plx_tensor_info *x,
                      const plx_tensor_info *s, const plx_tensor_info *zp, const plx_tensor_info *y,
                      const void *px, const void *ps, const void *pz, void *py) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(y->dtype);
    d.axis = axis;
    plx_tensor_info ins_i[3] = {*x, *s, zp ? *zp : *s};
    plx_layer_view l = layer_of(op, &d, ins_i, zp ? 3 : 2, y, 1);
    const void *ins[] = {px, ps, pz};
    void *outs[] = {py};
    return run_layer(fn, &l, ins, outs);
}

Test(quantize, rounding_and_saturation) {
    /* scale 1, no zero point (uint8): 2.5 -> 2, 3.5 -> 4, 0.5 -> 0, 1.5 -> 2
     * (half to even); 300 -> 255, -1 -> 0 (saturate); NaN -> zero point 0 */
    float x[] = {2.5f, 3.5f, 0.5f, 1.5f, 300.0f, -1.0f, NAN, 2.4999998f};
    float s = 1.0f;
    uint8_t y[8];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(8)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info ty = info(PLX_DTYPE_UINT8, SHAPE(8));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, NULL, &ty, x, &s, NULL, y), "%s", g_err);
    uint8_t w[] = {2, 4, 0, 2, 255, 0, 0, 2};
    for (int i = 0; i < 8; i++) cr_assert(eq(u8, y[i], w[i]), "i %d", i);
    /* int8 with scale 0.5 and zero point -3: x/0.5 = 5, 7, 1, 3, 600, -2
     * -> +(-3): 2, 4, -2, 0, 127 (sat), -5; -2.5/0.5 = -5 -> -8 */
    int8_t zp = -3, y8[8];
    float x2[] = {2.5f, 3.5f, 0.5f, 1.5f, 300.0f, -1.0f, -2.5f, -1000.0f};
    s = 0.5f;
    plx_tensor_info tz = info(PLX_DTYPE_INT8, SCALAR), ty8 = info(PLX_DTYPE_INT8, SHAPE(8));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, &tz, &ty8, x2, &s, &zp, y8), "%s", g_err);
    int8_t w8[] = {2, 4, -2, 0, 127, -5, -8, -128};
    for (int i = 0; i < 8; i++) cr_assert(eq(i8, y8[i], w8[i]), "i %d", i);
    /* -2.5 / 1 = -2.5 -> -2 (even) with zero point 0 */
    float m = -2.5f;
    s = 1.0f;
    zp = 0;
    plx_tensor_info t1 = info(PLX_DTYPE_FLOAT32, SHAPE(1)), t1y = info(PLX_DTYPE_INT8, SHAPE(1));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &t1, &ts, &tz, &t1y, &m, &s, &zp, y8));
    cr_assert(eq(i8, y8[0], -2));
}

Test(quantize, per_axis_and_random) {
    /* x [2,3], per axis 1 scales {1, 2, 4}, zero points {0, 10, 20} (uint8):
     * row 0: 4/1+0 = 4, 4/2+10 = 12, 4/4+20 = 21; row 1: -4 -> 0 (sat), -4/2+10 = 8, 10/4 = 2.5 -> 2 + 20 = 22 */
    float x[] = {4, 4, 4, -4, -4, 10}, s[] = {1, 2, 4};
    uint8_t zp[] = {0, 10, 20}, y[6];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3)), ts = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    plx_tensor_info tz = info(PLX_DTYPE_UINT8, SHAPE(3)), ty = info(PLX_DTYPE_UINT8, SHAPE(2, 3));
    uint8_t w[] = {4, 12, 21, 0, 8, 22};
    for (int axis = 1; axis >= -1; axis -= 2) { /* 1 and -1 are the same axis */
        cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, axis, &tx, &ts, &tz, &ty, x, s, zp, y), "%s", g_err);
        for (int i = 0; i < 6; i++) cr_assert(eq(u8, y[i], w[i]), "axis %d i %d", axis, i);
    }
    /* axis 0 with a 3-element scale does not match dims[0] = 2: refused */
    cr_assert(not(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 0, &tx, &ts, &tz, &ty, x, s, zp, y)));
    /* random [3,4,5] per axis 1 (int8) and dequantize back */
    seed(9);
    float rx[60], rs[4], back[60];
    int8_t rz[4], ry[60];
    for (int i = 0; i < 60; i++) rx[i] = rnd_f(-30, 30);
    for (int i = 0; i < 4; i++) { rs[i] = rnd_f(0.05f, 0.5f); rz[i] = (int8_t)rnd_i(-20, 20); }
    plx_tensor_info rtx = info(PLX_DTYPE_FLOAT32, SHAPE(3, 4, 5)), rts = info(PLX_DTYPE_FLOAT32, SHAPE(4));
    plx_tensor_info rtz = info(PLX_DTYPE_INT8, SHAPE(4)), rty = info(PLX_DTYPE_INT8, SHAPE(3, 4, 5));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, -2, &rtx, &rts, &rtz, &rty, rx, rs, rz, ry), "%s", g_err);
    for (int i = 0; i < 60; i++) {
        int c = (i / 5) % 4;
        double q = rint((double)(rx[i] / rs[c])) + rz[c];
        q = q < -128 ? -128 : q > 127 ? 127 : q;
        cr_assert(eq(i8, ry[i], (int8_t)q), "i %d", i);
    }
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &rty, &rts, &rtz, &rtx, ry, rs, rz, back), "%s", g_err);
    for (int i = 0; i < 60; i++) {
        int c = (i / 5) % 4;
        cr_assert(eq(flt, back[i], (float)(ry[i] - rz[c]) * rs[c]), "i %d", i);
    }
}

Test(dequantize, dtypes) {
    /* uint8: (x - 128) * 0.5 -> 0 -> -64, 255 -> 63.5 */
    uint8_t u[] = {0, 128, 255}, uz = 128;
    float s = 0.5f, y[3];
    plx_tensor_info tx = info(PLX_DTYPE_UINT8, SHAPE(3)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info tz = info(PLX_DTYPE_UINT8, SCALAR), ty = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tx, &ts, &tz, &ty, u, &s, &uz, y), "%s", g_err);
    cr_assert(eq(flt, y[0], -64.0f));
    cr_assert(eq(flt, y[1], 0.0f));
    cr_assert(eq(flt, y[2], 63.5f));
    /* int32 without zero point: x * 0.5 */
    int32_t i32[] = {-4, 0, 1 << 20};
    tx.dtype = PLX_DTYPE_INT32;
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tx, &ts, NULL, &ty, i32, &s, NULL, y), "%s", g_err);
    cr_assert(eq(flt, y[0], -2.0f));
    cr_assert(eq(flt, y[2], 524288.0f));
    /* int8 per axis 0 of [3,1]: scales {1,2,3}, zps {1,2,3}: x = {5,5,5} -> 4, 6, 6 */
    int8_t i8[] = {5, 5, 5}, z8[] = {1, 2, 3};
    float s3[] = {1, 2, 3};
    plx_tensor_info tx8 = info(PLX_DTYPE_INT8, SHAPE(3, 1)), ts3 = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    plx_tensor_info tz3 = info(PLX_DTYPE_INT8, SHAPE(3)), ty3 = info(PLX_DTYPE_FLOAT32, SHAPE(3, 1));
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 0, &tx8, &ts3, &tz3, &ty3, i8, s3, z8, y), "%s", g_err);
    cr_assert(eq(flt, y[0], 4.0f));
    cr_assert(eq(flt, y[1], 6.0f));
    cr_assert(eq(flt, y[2], 6.0f));
    /* refusals: int64 input; zero point of another dtype; float16 output */
    tx.dtype = PLX_DTYPE_INT64;
    cr_assert(not(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tx, &ts, NULL, &ty, i32, &s, NULL, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "int64"))), "%s", g_err);
    tx.dtype = PLX_DTYPE_INT8;
    cr_assert(not(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tx, &ts, &tz, &ty, i32, &s, &uz, y)));
    tx.dtype = PLX_DTYPE_UINT8;
    ty.dtype = PLX_DTYPE_FLOAT16;
    cr_assert(not(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tx, &ts, &tz, &ty, u, &s, &uz, y)));
}

Test(quantize, refusals) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_UINT8);
    plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT16, SHAPE(2)), info(PLX_DTYPE_FLOAT32, SCALAR),
                              info(PLX_DTYPE_UINT8, SCALAR)};
    plx_tensor_info out = info(PLX_DTYPE_UINT8, SHAPE(2));
    plx_layer_view l = layer_of(PLX_OP_QUANTIZE, &d, ins, 3, &out, 1);
    cr_assert(not(zero(ptr, strstr(plxk_check_quantize(&l, g_err, sizeof g_err), "float16"))));
    ins[0].dtype = PLX_DTYPE_FLOAT32;
    cr_assert(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err)));
    out.dtype = PLX_DTYPE_INT8; /* zero point is uint8 */
    cr_assert(not(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err))));
    ins[2].dtype = PLX_DTYPE_INT8;
    cr_assert(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err)));
    out.dtype = ins[2].dtype = PLX_DTYPE_INT16; /* 16 bits: from ABI 1.3 */
    cr_assert(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err)));
    out.dtype = ins[2].dtype = PLX_DTYPE_INT32;
    cr_assert(not(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err))));
    out.dtype = ins[2].dtype = PLX_DTYPE_UINT8;
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2)); /* rank 2 without a block_size */
    cr_assert(not(zero(ptr, (void *)plxk_check_quantize(&l, g_err, sizeof g_err))));
    cr_assert(strstr(g_err, "needs a block_size") != NULL, "%s", g_err);
}

/* Blocked quantization (block_size, ABI 1.3): X [2, 7, 3] along axis 1 in
 * blocks of 3 (scales [2, 3, 3], the last block one row short), along
 * axis -1 in blocks of 2, and along axis 0 in one block, int8, uint8 and
 * int4, against the definition computed here; dequantize maps back with
 * the same entries; a scale of the wrong shape is refused. */
Test(quantize, blocked) {
    enum { N = 2 * 7 * 3 };
    const int64_t xd[3] = {2, 7, 3};
    const struct { int32_t axis; int64_t block; plx_dtype q; } cases[] = {
        {1, 3, PLX_DTYPE_INT8}, {-1, 2, PLX_DTYPE_UINT8}, {0, 2, PLX_DTYPE_INT4},
        {1, 7, PLX_DTYPE_INT8}, {1, 1, PLX_DTYPE_UINT8}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        seed(700 + t);
        uint32_t axis = cases[t].axis < 0 ? (uint32_t)(cases[t].axis + 3) : (uint32_t)cases[t].axis;
        int64_t sd[3] = {xd[0], xd[1], xd[2]};
        sd[axis] = (xd[axis] + cases[t].block - 1) / cases[t].block;
        size_t ns = (size_t)(sd[0] * sd[1] * sd[2]);
        float x[N], sc[N], back[N];
        int8_t zp[N], y[N]; /* one byte per element for every q type here */
        bool u8 = cases[t].q == PLX_DTYPE_UINT8;
        int64_t lo = u8 ? 0 : cases[t].q == PLX_DTYPE_INT4 ? -8 : -128;
        int64_t hi = u8 ? 255 : cases[t].q == PLX_DTYPE_INT4 ? 7 : 127;
        for (int i = 0; i < N; i++) x[i] = rnd_f(-20, 20);
        for (size_t i = 0; i < ns; i++) {
            sc[i] = rnd_f(0.05f, 0.4f);
            zp[i] = (int8_t)rnd_i(u8 ? 0 : lo / 2, u8 ? 40 : hi / 2);
        }
        plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(cases[t].q);
        d.axis = cases[t].axis;
        d.block_size = cases[t].block;
        plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT32, xd, 3), info(PLX_DTYPE_FLOAT32, sd, 3),
                                  info(cases[t].q, sd, 3)};
        plx_tensor_info out = info(cases[t].q, xd, 3);
        plx_layer_view l = layer_of(PLX_OP_QUANTIZE, &d, ins, 3, &out, 1);
        cr_assert(run_layer(plxk_run_quantize, &l, (const void *[]){x, sc, zp},
                            (void *[]){y}), "case %zu: %s", t, g_err);
        for (int i = 0; i < N; i++) {
            int64_t idx[3] = {i / 21, i / 3 % 7, i % 3};
            idx[axis] /= cases[t].block;
            size_t k = (size_t)((idx[0] * sd[1] + idx[1]) * sd[2] + idx[2]);
            int64_t z = u8 ? (uint8_t)zp[k] : zp[k];
            double q = nearbyint((double)(x[i] / sc[k])) + (double)z;
            q = q < (double)lo ? (double)lo : q > (double)hi ? (double)hi : q;
            int64_t got = u8 ? (uint8_t)y[i] : y[i];
            cr_assert(eq(i64, got, (int64_t)q), "case %zu element %d", t, i);
            (void)back;
        }
        plx_quantize_desc dd = d;
        dd.output_dtype = PLX_DTYPE_FLOAT32;
        plx_tensor_info dins[3] = {out, ins[1], ins[2]}, dout = ins[0];
        l = layer_of(PLX_OP_DEQUANTIZE, &dd, dins, 3, &dout, 1);
        cr_assert(run_layer(plxk_run_dequantize, &l, (const void *[]){y, sc, zp},
                            (void *[]){back}), "case %zu: %s", t, g_err);
        for (int i = 0; i < N; i++) {
            int64_t idx[3] = {i / 21, i / 3 % 7, i % 3};
            idx[axis] /= cases[t].block;
            size_t k = (size_t)((idx[0] * sd[1] + idx[1]) * sd[2] + idx[2]);
            int64_t q = u8 ? (uint8_t)y[i] : y[i], z = u8 ? (uint8_t)zp[k] : zp[k];
            cr_assert(eq(flt, back[i], (float)(q - z) * sc[k]), "case %zu element %d", t, i);
        }
        /* the scale one block short along the axis */
        ins[1].dims[axis] -= 1;
        ins[2] = ins[1];
        ins[2].dtype = cases[t].q;
        l = layer_of(PLX_OP_QUANTIZE, &d, ins, 3, &out, 1);
        const char *why = plxk_check_quantize(&l, g_err, sizeof g_err);
        cr_assert(why && strstr(why, "blocked scale") != NULL, "case %zu: %s", t,
                  why ? why : "(accepted)");
    }
}

/* ---- float64 and the unsigned types (ABI 1.3) --------------------------- */

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
static uint64_t umask(plx_dtype t) {
    size_t bits = 8 * plx_dtype_size(t);
    return bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1u;
}

/* The reference of the unsigned binary functions, in uint64 and then
 * reduced modulo 2^bits by the caller: numpy's uint arithmetic. */
static uint64_t ref_binary_u(plx_binary_func f, uint64_t a, uint64_t b, uint64_t mask) {
    switch (f) {
    case PLX_BINARY_ADD: return (a + b) & mask;
    case PLX_BINARY_SUB: return (a - b) & mask;
    case PLX_BINARY_MUL: return (a * b) & mask;
    case PLX_BINARY_DIV: return a / b;
    case PLX_BINARY_POW: {
        uint64_t r = 1;
        for (uint64_t i = 0; i < b; i++) r *= a;
        return r & mask;
    }
    case PLX_BINARY_MAX: return a > b ? a : b;
    case PLX_BINARY_MIN: return a < b ? a : b;
    case PLX_BINARY_MOD: return a % b;
    case PLX_BINARY_EQUAL: return a == b;
    case PLX_BINARY_LESS: return a < b;
    case PLX_BINARY_GREATER: return a > b;
    case PLX_BINARY_GREATER_EQUAL: return a >= b;
    case PLX_BINARY_LESS_EQUAL: return a <= b;
    default: return 0;
    }
}

/* Every arithmetic and compare function on float64 (against double
 * arithmetic) and on uint16, uint32 and uint64 (values across the whole
 * range, uint64's past INT64_MAX included), over broadcasts. */
Test(binary, random_float64_and_unsigned) {
    static const plx_binary_func funcs[] = {
        PLX_BINARY_ADD,   PLX_BINARY_SUB,     PLX_BINARY_MUL,           PLX_BINARY_DIV,
        PLX_BINARY_POW,   PLX_BINARY_MAX,     PLX_BINARY_MIN,           PLX_BINARY_MOD,
        PLX_BINARY_EQUAL, PLX_BINARY_LESS,    PLX_BINARY_GREATER,       PLX_BINARY_GREATER_EQUAL,
        PLX_BINARY_LESS_EQUAL,
    };
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16, PLX_DTYPE_UINT32,
                                      PLX_DTYPE_UINT64};
    seed(64);
    uint64_t ba[128], bb[128], by[128];
    for (size_t s = 0; s < sizeof g_bshapes / sizeof g_bshapes[0]; s++) {
        const shape_case *sc = &g_bshapes[s];
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            plx_dtype t = types[ti];
            bool fl = t == PLX_DTYPE_FLOAT64;
            for (size_t fi = 0; fi < sizeof funcs / sizeof funcs[0]; fi++) {
                plx_binary_func f = funcs[fi];
                bool cmp = plx_binary_func_is_compare(f);
                plx_tensor_info a = info(t, sc->a, sc->ra), b = info(t, sc->b, sc->rb);
                plx_tensor_info y = info(cmp ? PLX_DTYPE_BOOL : t, sc->y, sc->ry);
                for (size_t i = 0; i < numel(&a); i++) {
                    if (fl) {
                        ((double *)ba)[i] = (rnd_unit() - 0.5) * 1e6;
                    } else {
                        set_u(t, ba, i, f == PLX_BINARY_POW ? rnd() % 7 : rnd());
                    }
                }
                for (size_t i = 0; i < numel(&b); i++) {
                    if (fl) {
                        ((double *)bb)[i] = f == PLX_BINARY_POW ? rnd_unit() * 3
                                            : i % 3 == 0 && i < numel(&a) ? ((double *)ba)[i]
                                                                          : (rnd_unit() - 0.5) * 1e3;
                    } else {
                        uint64_t v = f == PLX_BINARY_POW ? rnd() % 5 : rnd() >> (rnd() % 64);
                        if (i % 4 == 0 && i < numel(&a)) v = get_u(t, ba, i); /* equal values */
                        set_u(t, bb, i, v == 0 && (f == PLX_BINARY_DIV || f == PLX_BINARY_MOD) ? 3 : v);
                    }
                }
                memset(by, 0xa5, sizeof by);
                cr_assert(binary_run(f, &a, &b, &y, ba, bb, by), "shape %zu %s %s: %s", s,
                          plx_dtype_name(t), plx_binary_func_name(f), g_err);
                for (size_t i = 0; i < numel(&y); i++) {
                    size_t ia = bcast_index(&a, &y, i), ib = bcast_index(&b, &y, i);
                    if (fl) {
                        double va = ((double *)ba)[ia], vb = ((double *)bb)[ib], want;
                        switch (f) {
                        case PLX_BINARY_ADD: want = va + vb; break;
                        case PLX_BINARY_SUB: want = va - vb; break;
                        case PLX_BINARY_MUL: want = va * vb; break;
                        case PLX_BINARY_DIV: want = va / vb; break;
                        case PLX_BINARY_POW: want = pow(va, vb); break;
                        case PLX_BINARY_MAX: want = va > vb ? va : vb; break;
                        case PLX_BINARY_MIN: want = va < vb ? va : vb; break;
                        case PLX_BINARY_MOD: want = fmod(va, vb); break;
                        case PLX_BINARY_EQUAL: want = va == vb; break;
                        case PLX_BINARY_LESS: want = va < vb; break;
                        case PLX_BINARY_GREATER: want = va > vb; break;
                        case PLX_BINARY_GREATER_EQUAL: want = va >= vb; break;
                        default: want = va <= vb; break;
                        }
                        if (cmp) {
                            cr_assert(eq(u8, ((uint8_t *)by)[i], (uint8_t)want));
                        } else if (isnan(want)) {
                            cr_assert(isnan(((double *)by)[i]), "%s i %zu", plx_binary_func_name(f), i);
                        } else {
                            cr_assert(eq(dbl, ((double *)by)[i], want), "%s i %zu",
                                      plx_binary_func_name(f), i);
                        }
                    } else {
                        uint64_t want = ref_binary_u(f, get_u(t, ba, ia), get_u(t, bb, ib), umask(t));
                        uint64_t got = cmp ? ((uint8_t *)by)[i] : get_u(t, by, i);
                        cr_assert(eq(u64, got, want), "%s %s i %zu (%" PRIu64 ", %" PRIu64 ")",
                                  plx_dtype_name(t), plx_binary_func_name(f), i, get_u(t, ba, ia),
                                  get_u(t, bb, ib));
                    }
                }
            }
        }
    }
}

/* uint64 where int64 would be wrong: max(2^63, 1) = 2^63, min = 1;
 * UINT64_MAX / 2 = 2^63 - 1; UINT64_MAX % 10 = 5; 2^63 > 1; a division
 * by zero fails naming the layer. float64: the mixed-sign fmod of ONNX's
 * node test, NaN in max and min, and 1e300 * 10 = 1e301 (float32 would
 * overflow). */
Test(binary, uint64_and_float64_hand) {
    plx_tensor_info t3 = info(PLX_DTYPE_UINT64, SHAPE(3)), b3 = info(PLX_DTYPE_BOOL, SHAPE(3));
    uint64_t a[3] = {UINT64_C(1) << 63, UINT64_MAX, UINT64_MAX}, b[3] = {1, 2, 10}, y[3];
    cr_assert(binary_run(PLX_BINARY_MAX, &t3, &t3, &t3, a, b, y), "%s", g_err);
    cr_assert(eq(u64, y[0], UINT64_C(1) << 63));
    cr_assert(eq(u64, y[1], UINT64_MAX));
    cr_assert(binary_run(PLX_BINARY_MIN, &t3, &t3, &t3, a, b, y), "%s", g_err);
    cr_assert(eq(u64, y[0], 1));
    cr_assert(binary_run(PLX_BINARY_DIV, &t3, &t3, &t3, a, b, y), "%s", g_err);
    cr_assert(eq(u64, y[0], UINT64_C(1) << 63));
    cr_assert(eq(u64, y[1], (UINT64_C(1) << 63) - 1));
    cr_assert(binary_run(PLX_BINARY_MOD, &t3, &t3, &t3, a, b, y), "%s", g_err);
    cr_assert(eq(u64, y[0], 0));
    cr_assert(eq(u64, y[1], 1));
    cr_assert(eq(u64, y[2], 5));
    uint8_t c[3];
    cr_assert(binary_run(PLX_BINARY_GREATER, &t3, &t3, &b3, a, b, c), "%s", g_err);
    cr_assert(c[0] == 1 && c[1] == 1 && c[2] == 1);
    b[1] = 0;
    cr_assert(not(binary_run(PLX_BINARY_DIV, &t3, &t3, &t3, a, b, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "'L1'"))), "%s", g_err);
    cr_assert(not(zero(ptr, strstr(g_err, "division by zero"))), "%s", g_err);
    cr_assert(not(binary_run(PLX_BINARY_MOD, &t3, &t3, &t3, a, b, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "modulo by zero"))), "%s", g_err);

    plx_tensor_info d6 = info(PLX_DTYPE_FLOAT64, SHAPE(6));
    double x[6] = {-4.3, 7.2, 5.0, 4.3, -7.2, 8.0}, m[6] = {2.1, -3.4, 8.0, -2.1, 3.4, 5.0}, r[6];
    cr_assert(binary_run(PLX_BINARY_MOD, &d6, &d6, &d6, x, m, r), "%s", g_err);
    for (int i = 0; i < 6; i++) cr_assert(eq(dbl, r[i], fmod(x[i], m[i])), "i %d", i);
    double n[6] = {NAN, 1, 1e300, -0.5, 2, 3}, k[6] = {1, NAN, 10, -0.25, 2, 3};
    cr_assert(binary_run(PLX_BINARY_MAX, &d6, &d6, &d6, n, k, r), "%s", g_err);
    cr_assert(isnan(r[0]) && isnan(r[1]));
    cr_assert(eq(dbl, r[3], -0.25));
    cr_assert(binary_run(PLX_BINARY_MUL, &d6, &d6, &d6, n, k, r), "%s", g_err);
    cr_assert(eq(dbl, r[2], 1e301));
    /* prelu on float64 and uint32 (never negative: itself) */
    double px[3] = {-2, 0.5, -1e-300}, ps[1] = {0.25}, py[3];
    plx_tensor_info d3 = info(PLX_DTYPE_FLOAT64, SHAPE(3)), d1 = info(PLX_DTYPE_FLOAT64, SHAPE(1));
    cr_assert(binary_run(PLX_BINARY_PRELU, &d3, &d1, &d3, px, ps, py), "%s", g_err);
    cr_assert(eq(dbl, py[0], -0.5));
    cr_assert(eq(dbl, py[1], 0.5));
    cr_assert(eq(dbl, py[2], -0.25e-300));
    uint32_t ux[2] = {UINT32_MAX, 0}, us[1] = {3}, uy[2];
    plx_tensor_info u2 = info(PLX_DTYPE_UINT32, SHAPE(2)), u1 = info(PLX_DTYPE_UINT32, SHAPE(1));
    cr_assert(binary_run(PLX_BINARY_PRELU, &u2, &u1, &u2, ux, us, uy), "%s", g_err);
    cr_assert(uy[0] == UINT32_MAX && uy[1] == 0);
}

/* Every float function on float64 against libm in double; abs of the
 * unsigned types is themselves; neg and sign of unsigned are refused. */
Test(unary, float64_and_unsigned) {
    static const plx_unary_func funcs[] = {
        PLX_UNARY_ABS,  PLX_UNARY_NEG,  PLX_UNARY_SQRT,  PLX_UNARY_RECIPROCAL, PLX_UNARY_EXP,
        PLX_UNARY_LOG,  PLX_UNARY_ERF,  PLX_UNARY_FLOOR, PLX_UNARY_CEIL,       PLX_UNARY_SIN,
        PLX_UNARY_COS,  PLX_UNARY_TAN,  PLX_UNARY_ASIN,  PLX_UNARY_ACOS,       PLX_UNARY_ATAN,
        PLX_UNARY_SINH, PLX_UNARY_COSH, PLX_UNARY_ASINH, PLX_UNARY_ACOSH,      PLX_UNARY_ATANH,
        PLX_UNARY_ROUND, PLX_UNARY_SIGN,
    };
    seed(65);
    enum { N = 97 };
    double x[N], y[N];
    for (size_t fi = 0; fi < sizeof funcs / sizeof funcs[0]; fi++) {
        plx_unary_func f = funcs[fi];
        for (int i = 0; i < N; i++) {
            x[i] = (rnd_unit() - 0.5) * (f == PLX_UNARY_EXP ? 100 : 4);
        }
        x[0] = 2.5; /* round: halves to even */
        x[1] = -0.0;
        x[2] = NAN;
        cr_assert(unary_run(f, PLX_DTYPE_FLOAT64, N, x, y), "%s: %s", plx_unary_func_name(f), g_err);
        for (int i = 0; i < N; i++) {
            double w;
            switch (f) {
            case PLX_UNARY_ABS: w = fabs(x[i]); break;
            case PLX_UNARY_NEG: w = -x[i]; break;
            case PLX_UNARY_SQRT: w = sqrt(x[i]); break;
            case PLX_UNARY_RECIPROCAL: w = 1 / x[i]; break;
            case PLX_UNARY_EXP: w = exp(x[i]); break;
            case PLX_UNARY_LOG: w = log(x[i]); break;
            case PLX_UNARY_ERF: w = erf(x[i]); break;
            case PLX_UNARY_FLOOR: w = floor(x[i]); break;
            case PLX_UNARY_CEIL: w = ceil(x[i]); break;
            case PLX_UNARY_SIN: w = sin(x[i]); break;
            case PLX_UNARY_COS: w = cos(x[i]); break;
            case PLX_UNARY_TAN: w = tan(x[i]); break;
            case PLX_UNARY_ASIN: w = asin(x[i]); break;
            case PLX_UNARY_ACOS: w = acos(x[i]); break;
            case PLX_UNARY_ATAN: w = atan(x[i]); break;
            case PLX_UNARY_SINH: w = sinh(x[i]); break;
            case PLX_UNARY_COSH: w = cosh(x[i]); break;
            case PLX_UNARY_ASINH: w = asinh(x[i]); break;
            case PLX_UNARY_ACOSH: w = acosh(x[i]); break;
            case PLX_UNARY_ATANH: w = atanh(x[i]); break;
            case PLX_UNARY_ROUND: w = nearbyint(x[i]); break;
            default: w = x[i] > 0 ? 1 : x[i] < 0 ? -1 : x[i]; break;
            }
            if (isnan(w)) {
                cr_assert(isnan(y[i]), "%s x %g", plx_unary_func_name(f), x[i]);
            } else {
                cr_assert(eq(dbl, y[i], w), "%s x %g", plx_unary_func_name(f), x[i]);
            }
        }
        cr_assert(f != PLX_UNARY_ROUND || y[0] == 2.0);
    }
    uint64_t u[3] = {0, UINT64_MAX, UINT64_C(1) << 63}, uy[3];
    cr_assert(unary_run(PLX_UNARY_ABS, PLX_DTYPE_UINT64, 3, u, uy), "%s", g_err);
    cr_assert(eq(int, memcmp(u, uy, sizeof u), 0));
    uint16_t h[2] = {65535, 7}, hy[2];
    cr_assert(unary_run(PLX_UNARY_ABS, PLX_DTYPE_UINT16, 2, h, hy), "%s", g_err);
    cr_assert(hy[0] == 65535 && hy[1] == 7);
    cr_assert(not(unary_run(PLX_UNARY_NEG, PLX_DTYPE_UINT32, 2, h, hy)));
    cr_assert(not(zero(ptr, strstr(g_err, "neg: dtype uint32 is not supported"))), "%s", g_err);
    cr_assert(not(unary_run(PLX_UNARY_SQRT, PLX_DTYPE_UINT64, 2, u, uy)));
}

/* Every activation on float64 against the test's reference in double
 * (the descriptor's alpha and beta are floats, widened); celu is float32
 * only (ONNX Celu) and refused. */
Test(activation, float64) {
    seed(66);
    enum { N = 203 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (rnd_unit() - 0.5) * 16;
    for (int f = PLX_ACT_RELU; f <= PLX_ACT_SCALED_TANH; f++) {
        plx_activation_desc d = PLX_ACTIVATION_DESC_INIT((plx_activation_func)f);
        d.alpha = f == PLX_ACT_CLIP ? -1.5f : 0.75f;
        d.beta = f == PLX_ACT_CLIP ? 2.25f : 0.5f;
        if (f == PLX_ACT_SHRINK) continue; /* tests/kernels/test_kernels_bitwise.c */
        plx_tensor_info in = info(PLX_DTYPE_FLOAT64, SHAPE(N)), out = in;
        plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
        if (f == PLX_ACT_CELU) {
            cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
            continue;
        }
        const void *ins[] = {x};
        void *outs[] = {y};
        cr_assert(run_layer(plxk_run_activation, &l, ins, outs), "%s: %s",
                  plx_activation_func_name((plx_activation_func)f), g_err);
        for (int i = 0; i < N; i++) {
            double w = ref_act((plx_activation_func)f, x[i], d.alpha, d.beta);
            cr_assert(fabs(y[i] - w) <= 1e-14 * (1 + fabs(w)), "%s x %.17g: got %.17g want %.17g",
                      plx_activation_func_name((plx_activation_func)f), x[i], y[i], w);
        }
    }
}

/* Integer clip on uint16 and uint32 narrows the float bounds to the
 * integers inside them; uint64 clip is refused. */
Test(activation, unsigned_clip) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    d.alpha = 2.5f;
    d.beta = 70000.0f;
    uint16_t x[4] = {0, 3, 65535, 2}, y[4];
    plx_tensor_info in = info(PLX_DTYPE_UINT16, SHAPE(4)), out = in;
    plx_layer_view l = layer_of(PLX_OP_ACTIVATION, &d, &in, 1, &out, 1);
    cr_assert(run_layer(plxk_run_activation, &l, (const void *const[]){x}, (void *const[]){y}),
              "%s", g_err);
    cr_assert(y[0] == 3 && y[1] == 3 && y[2] == 65535 && y[3] == 3);
    d.beta = 4e9f;
    in = info(PLX_DTYPE_UINT32, SHAPE(2));
    out = in;
    uint32_t x32[2] = {UINT32_MAX, 0}, y32[2];
    cr_assert(run_layer(plxk_run_activation, &l, (const void *const[]){x32}, (void *const[]){y32}),
              "%s", g_err);
    cr_assert(y32[0] == 4000000000u && y32[1] == 3);
    in.dtype = out.dtype = PLX_DTYPE_UINT64;
    cr_assert(not(zero(ptr, (void *)plxk_check_activation(&l, g_err, sizeof g_err))));
}

Test(where, float64_and_unsigned) {
    plx_dtype types[] = {PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16, PLX_DTYPE_UINT32, PLX_DTYPE_UINT64};
    seed(67);
    uint8_t c[8], x[3 * 8], yv[6 * 8], z[24 * 8];
    for (int t = 0; t < 4; t++) {
        size_t es = plx_dtype_size(types[t]);
        plx_tensor_info tc = info(PLX_DTYPE_BOOL, SHAPE(2, 1, 4)), tx = info(types[t], SHAPE(3, 1));
        plx_tensor_info ty = info(types[t], SHAPE(2, 3, 1)), tz = info(types[t], SHAPE(2, 3, 4));
        for (size_t i = 0; i < sizeof x; i++) x[i] = (uint8_t)rnd();
        for (size_t i = 0; i < sizeof yv; i++) yv[i] = (uint8_t)rnd();
        for (size_t i = 0; i < 8; i++) c[i] = (uint8_t)(rnd() & 1);
        cr_assert(where_run(&tc, &tx, &ty, &tz, c, x, yv, z), "%s", g_err);
        for (size_t i = 0; i < 24; i++) {
            size_t ic = bcast_index(&tc, &tz, i), ix = bcast_index(&tx, &tz, i), iy = bcast_index(&ty, &tz, i);
            const uint8_t *want = c[ic] ? x + ix * es : yv + iy * es;
            cr_assert(zero(int, memcmp(z + i * es, want, es)), "dtype %s i %zu", plx_dtype_name(types[t]), i);
        }
    }
}

/* float64 to float16 and bfloat16 rounds once: 1 + 2^-11 + 2^-40 lies
 * just above the tie between 1 and the next half (1 + 2^-10), so it rounds
 * up to 0x3c01, where rounding to float32 first (which drops the 2^-40)
 * would make the tie and give 0x3c00; likewise 1 + 2^-8 + 2^-40 to
 * bfloat16 0x3f81. Exact ties stay even; overflow is infinite; NaN stays
 * NaN. */
Test(cast, float64_to_halfs_rounds_once) {
    double x[6] = {1.0 + ldexp(1, -11) + ldexp(1, -40), 1.0 + ldexp(1, -11), 1e6, -1e300, NAN,
                   ldexp(1, -25) + ldexp(1, -60)};
    uint16_t h[6];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_FLOAT16, 6, x, h), "%s", g_err);
    cr_assert(eq(u16, h[0], 0x3c01));
    cr_assert(eq(u16, h[1], 0x3c00));
    cr_assert(eq(u16, h[2], 0x7c00));
    cr_assert(eq(u16, h[3], 0xfc00));
    bool nan16 = (h[4] & 0x7c00) == 0x7c00 && (h[4] & 0x3ff) != 0;
    cr_assert(nan16);
    cr_assert(eq(u16, h[5], 0x0001)); /* just above half the smallest subnormal */
    double b[4] = {1.0 + ldexp(1, -8) + ldexp(1, -40), 1.0 + ldexp(1, -8), 1e39, -0.0};
    uint16_t bh[4];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_BFLOAT16, 4, b, bh), "%s", g_err);
    cr_assert(eq(u16, bh[0], 0x3f81));
    cr_assert(eq(u16, bh[1], 0x3f80));
    cr_assert(eq(u16, bh[2], 0x7f80));
    cr_assert(eq(u16, bh[3], 0x8000));
    /* the SDK helpers themselves, and random doubles against the exact
     * nearest half found from the value's float32 neighbours */
    cr_assert(eq(u16, plx_float64_to_float16(x[0]), 0x3c01));
    cr_assert(eq(u16, plx_float64_to_bfloat16(b[0]), 0x3f81));
    seed(68);
    for (int i = 0; i < 2000; i++) {
        double v = ldexp(rnd_unit() + 0.5, (int)(rnd() % 40) - 20) * (i & 1 ? -1 : 1);
        uint16_t got = plx_float64_to_float16(v);
        /* the two halves around v: from the truncation toward zero */
        float f = (float)v;
        uint16_t lo = plx_float32_to_float16(f), best = lo;
        double bd = INFINITY;
        for (int k = -1; k <= 1; k++) {
            uint16_t c = (uint16_t)(lo + k);
            double cv = plx_float16_to_float32(c);
            if ((c & 0x7c00) == 0x7c00) continue;
            double dv = fabs(cv - v);
            if (dv < bd || (dv == bd && !(c & 1))) { bd = dv; best = c; }
        }
        if (fabs(v) < 65504) cr_assert(eq(u16, got, best), "v %a", v);
    }
}

/* float64 and the unsigned types against each other and the older types:
 * truncation and saturation into integers (NaN 0), unsigned conversions
 * of uint64 past 2^63 into floats, wrap-around between integers. */
Test(cast, float64_and_unsigned_edges) {
    double d[8] = {-2.7, 2.7, NAN, 1e20, -1e20, 65535.9, 70000.5, 18446744073709549568.0};
    uint16_t u16[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16, 8, d, u16), "%s", g_err);
    static const uint16_t w16[8] = {0, 2, 0, 65535, 0, 65535, 65535, 65535};
    for (int i = 0; i < 8; i++) cr_assert(eq(u16, u16[i], w16[i]), "i %d", i);
    uint32_t u32[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT32, 8, d, u32), "%s", g_err);
    cr_assert(u32[1] == 2 && u32[3] == UINT32_MAX && u32[4] == 0 && u32[6] == 70000);
    uint64_t u64[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT64, 8, d, u64), "%s", g_err);
    cr_assert(eq(u64, u64[0], 0));
    cr_assert(eq(u64, u64[2], 0));
    cr_assert(eq(u64, u64[3], UINT64_MAX));
    cr_assert(eq(u64, u64[7], UINT64_C(18446744073709549568))); /* 2^64 - 2^11: exact */
    int64_t i64[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_INT64, 8, d, i64), "%s", g_err);
    cr_assert(eq(i64, i64[0], -2));
    cr_assert(eq(i64, i64[3], INT64_MAX));
    cr_assert(eq(i64, i64[4], INT64_MIN));
    float f[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_FLOAT32, 8, d, f), "%s", g_err);
    cr_assert(eq(flt, f[0], -2.7f));
    cr_assert(eq(flt, f[3], 1e20f));
    uint8_t bo[8];
    cr_assert(cast_run(PLX_DTYPE_FLOAT64, PLX_DTYPE_BOOL, 8, d, bo), "%s", g_err);
    cr_assert(bo[0] == 1 && bo[2] == 1);
    /* float32 and float16 to float64 exactly */
    float fx[2] = {0.1f, -3.4e38f};
    double fd[2];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT64, 2, fx, fd), "%s", g_err);
    cr_assert(eq(dbl, fd[0], (double)0.1f));
    cr_assert(eq(dbl, fd[1], (double)-3.4e38f));
    uint16_t hx[2] = {0x3555, 0xfc00};
    cr_assert(cast_run(PLX_DTYPE_FLOAT16, PLX_DTYPE_FLOAT64, 2, hx, fd), "%s", g_err);
    cr_assert(eq(dbl, fd[0], (double)plx_float16_to_float32(0x3555)));
    cr_assert(isinf(fd[1]) && fd[1] < 0);
    /* uint64 past 2^63 to the floats, unsigned */
    uint64_t big[3] = {UINT64_MAX, (UINT64_C(1) << 63) + 1, 3};
    double bd[3];
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_FLOAT64, 3, big, bd), "%s", g_err);
    cr_assert(eq(dbl, bd[0], 18446744073709551616.0));
    cr_assert(eq(dbl, bd[1], 9223372036854775808.0));
    cr_assert(eq(dbl, bd[2], 3.0));
    float bf[3];
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_FLOAT32, 3, big, bf), "%s", g_err);
    cr_assert(eq(flt, bf[0], 18446744073709551616.0f));
    uint16_t bh[3];
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_FLOAT16, 3, big, bh), "%s", g_err);
    cr_assert(bh[0] == 0x7c00 && bh[2] == 0x4200);
    /* integers wrap: int64 -1 -> uint64 max, uint16 65535; uint64 max -> int64 -1, int8 -1 */
    int64_t m1 = -1;
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_UINT64, 1, &m1, u64), "%s", g_err);
    cr_assert(eq(u64, u64[0], UINT64_MAX));
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_UINT16, 1, &m1, u16), "%s", g_err);
    cr_assert(eq(u16, u16[0], 65535));
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_INT64, 3, big, i64), "%s", g_err);
    cr_assert(eq(i64, i64[0], -1));
    cr_assert(eq(i64, i64[1], INT64_MIN + 1));
    int8_t i8v[3];
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_INT8, 3, big, i8v), "%s", g_err);
    cr_assert(i8v[0] == -1 && i8v[1] == 1 && i8v[2] == 3);
    uint32_t w32[2] = {UINT32_MAX, 5};
    cr_assert(cast_run(PLX_DTYPE_UINT32, PLX_DTYPE_FLOAT64, 2, w32, bd), "%s", g_err);
    cr_assert(eq(dbl, bd[0], 4294967295.0));
    cr_assert(cast_run(PLX_DTYPE_UINT32, PLX_DTYPE_INT16, 2, w32, (int16_t *)u16), "%s", g_err);
    cr_assert(eq(i16, ((int16_t *)u16)[0], -1));
    uint8_t b[3] = {1, 0, 0};
    cr_assert(cast_run(PLX_DTYPE_BOOL, PLX_DTYPE_UINT64, 2, b, u64), "%s", g_err);
    cr_assert(u64[0] == 1 && u64[1] == 0);
    cr_assert(cast_run(PLX_DTYPE_UINT64, PLX_DTYPE_BOOL, 3, big, b), "%s", g_err);
    cr_assert(b[0] == 1 && b[1] == 1);
}

/* 16-bit quantization (ONNX QuantizeLinear/DequantizeLinear int16 and
 * uint16): rounding half to even and saturation at the 16-bit limits. */
Test(quantize, sixteen_bits) {
    float x[6] = {2.5f, -3.5f, 1e9f, -1e9f, NAN, 100.25f}, s = 0.5f, y[6];
    int16_t zp = -10, q[6];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(6)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info tz = info(PLX_DTYPE_INT16, SCALAR), ty = info(PLX_DTYPE_INT16, SHAPE(6));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, &tz, &ty, x, &s, &zp, q), "%s", g_err);
    /* 5 - 10, -7 - 10, saturated, saturated, NaN -> zp, 200.5 -> 200 - 10 */
    static const int16_t wq[6] = {-5, -17, 32767, -32768, -10, 190};
    for (int i = 0; i < 6; i++) cr_assert(eq(i16, q[i], wq[i]), "i %d", i);
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &ty, &ts, &tz, &tx, q, &s, &zp, y), "%s", g_err);
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], (float)(q[i] - zp) * s), "i %d", i);
    uint16_t uz = 30000, uq[6];
    plx_tensor_info tuz = info(PLX_DTYPE_UINT16, SCALAR), tuy = info(PLX_DTYPE_UINT16, SHAPE(6));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, &tuz, &tuy, x, &s, &uz, uq), "%s", g_err);
    static const uint16_t wu[6] = {30005, 29993, 65535, 0, 30000, 30200};
    for (int i = 0; i < 6; i++) cr_assert(eq(u16, uq[i], wu[i]), "i %d", i);
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tuy, &ts, &tuz, &tx, uq, &s, &uz, y), "%s", g_err);
    cr_assert(eq(flt, y[3], -15000.0f));
}

/* ---- float8 (ABI 1.3) ----------------------------------------------------- */

static bool cast_run_sat(plx_dtype from, plx_dtype to, bool saturate, size_t n, const void *x,
                         void *y) {
    plx_cast_desc d = PLX_CAST_DESC_INIT(to);
    d.saturate = saturate;
    plx_tensor_info in = info(from, (const int64_t[]){(int64_t)n}, 1);
    plx_tensor_info out = info(to, (const int64_t[]){(int64_t)n}, 1);
    plx_layer_view l = layer_of(PLX_OP_CAST, &d, &in, 1, &out, 1);
    const void *ins[] = {x};
    void *outs[] = {y};
    return run_layer(plxk_run_cast, &l, ins, outs);
}

Test(cast, to_float8_saturate_or_not) {
    /* e4m3fn: 1 = 0x38, 1.0625 ties to 1 (even), 1.0625 + a bit rounds up
     * to 1.125 = 0x39; 448 = 0x7e its largest; 500 and inf saturate to it
     * or give NaN (0x7f); -0 stays -0 (0x80); 2^-9 the smallest subnormal */
    float x[] = {1.0f, 1.0625f, 1.0626f, 448.0f, 500.0f, INFINITY, -500.0f, -0.0f, 0x1p-9f, NAN};
    uint8_t y[10];
    cr_assert(cast_run_sat(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT8E4M3FN, true, 10, x, y), "%s", g_err);
    uint8_t ws[] = {0x38, 0x38, 0x39, 0x7e, 0x7e, 0x7e, 0xfe, 0x80, 0x01, 0x7f};
    for (int i = 0; i < 10; i++) cr_assert(eq(u8, y[i], ws[i]), "saturating, i %d", i);
    cr_assert(cast_run_sat(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT8E4M3FN, false, 10, x, y), "%s", g_err);
    uint8_t wn[] = {0x38, 0x38, 0x39, 0x7e, 0x7f, 0x7f, 0xff, 0x80, 0x01, 0x7f};
    for (int i = 0; i < 10; i++) cr_assert(eq(u8, y[i], wn[i]), "not saturating, i %d", i);
    /* e5m2 has infinities: 1e5 gives inf (0x7c) unless saturating (57344,
     * 0x7b); e5m2fnuz has no -0 (0x00) and one NaN (0x80) */
    float x2[] = {1e5f, -1e5f, -0.0f, NAN};
    cr_assert(cast_run_sat(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT8E5M2, false, 4, x2, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 0x7c));
    cr_assert(eq(u8, y[1], 0xfc));
    cr_assert(cast_run_sat(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT8E5M2, true, 4, x2, y), "%s", g_err);
    cr_assert(eq(u8, y[0], 0x7b));
    cr_assert(eq(u8, y[1], 0xfb));
    cr_assert(cast_run_sat(PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT8E5M2FNUZ, false, 4, x2, y), "%s", g_err);
    uint8_t wz[] = {0x80, 0x80, 0x00, 0x80};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], wz[i]), "e5m2fnuz, i %d", i);
}

Test(cast, float8_to_every_type_against_the_decoded_value) {
    static const plx_dtype f8[] = {PLX_DTYPE_FLOAT8E4M3FN, PLX_DTYPE_FLOAT8E4M3FNUZ,
                                   PLX_DTYPE_FLOAT8E5M2, PLX_DTYPE_FLOAT8E5M2FNUZ};
    uint8_t x[256];
    for (int b = 0; b < 256; b++) x[b] = (uint8_t)b;
    for (int t = 0; t < 4; t++) {
        float y32[256];
        uint16_t y16[256];
        double y64[256];
        int32_t yi[256];
        uint8_t yb[256], y8[256];
        cr_assert(cast_run(f8[t], PLX_DTYPE_FLOAT32, 256, x, y32), "%s", g_err);
        cr_assert(cast_run(f8[t], PLX_DTYPE_FLOAT16, 256, x, y16), "%s", g_err);
        cr_assert(cast_run(f8[t], PLX_DTYPE_FLOAT64, 256, x, y64), "%s", g_err);
        cr_assert(cast_run(f8[t], PLX_DTYPE_INT32, 256, x, yi), "%s", g_err);
        cr_assert(cast_run(f8[t], PLX_DTYPE_BOOL, 256, x, yb), "%s", g_err);
        for (int b = 0; b < 256; b++) {
            float v = plx_float8_to_float32((uint8_t)b, f8[t]);
            if (isnan(v)) {
                cr_assert(isnan(y32[b]) && isnan(plx_float16_to_float32(y16[b])) && isnan(y64[b]));
                continue;
            }
            cr_assert(eq(flt, y32[b], v), "%s 0x%02x", plx_dtype_name(f8[t]), b);
            cr_assert(eq(flt, plx_float16_to_float32(y16[b]), v), "to float16 exactly");
            cr_assert(eq(dbl, y64[b], (double)v));
            cr_assert(eq(i32, yi[b], (int32_t)plx_dtype_int_from_double(v, PLX_DTYPE_INT32)));
            cr_assert(eq(u8, yb[b], v != 0));
        }
        /* to the other float8 types: the value re-encoded, saturating */
        for (int u = 0; u < 4; u++) {
            if (u == t) continue;
            cr_assert(cast_run(f8[t], f8[u], 256, x, y8), "%s", g_err);
            for (int b = 0; b < 256; b++) {
                float v = plx_float8_to_float32((uint8_t)b, f8[t]);
                uint8_t want = plx_float32_to_float8(v, f8[u], true);
                cr_assert(eq(u8, y8[b], want), "%s 0x%02x to %s", plx_dtype_name(f8[t]), b,
                          plx_dtype_name(f8[u]));
            }
        }
    }
    /* integers to float8: 17 is a tie in e4m3fn (16 and 18): even -> 16 */
    int64_t iv[] = {17, 19, -3, 1000, 0};
    uint8_t y[5];
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_FLOAT8E4M3FN, 5, iv, y), "%s", g_err);
    uint8_t w[] = {0x58, 0x5a, 0xc4, 0x7e, 0x00};
    for (int i = 0; i < 5; i++) cr_assert(eq(u8, y[i], w[i]), "i %d", i);
}

Test(quantize, float8) {
    /* y = x / scale as e4m3fn (zero point 0): 3/2 = 1.5 (0x3c); 1000/2 = 500
     * saturates to 448 (0x7e) or, with saturate false, is NaN (0x7f) */
    float x[] = {3.0f, 1000.0f, -1.0f, 0.0f};
    float s = 2.0f;
    uint8_t zp = 0, y[4];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(4)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info tz = info(PLX_DTYPE_FLOAT8E4M3FN, SHAPE(1));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT8E4M3FN, SHAPE(4));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, &tz, &ty, x, &s, &zp, y),
              "%s", g_err);
    uint8_t w[] = {0x3c, 0x7e, 0xb0, 0x00};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], w[i]), "i %d", i);
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT8E4M3FN);
    d.saturate = false;
    plx_tensor_info ins_i[2] = {tx, ts};
    plx_layer_view l = layer_of(PLX_OP_QUANTIZE, &d, ins_i, 2, &ty, 1);
    const void *ins[] = {x, &s};
    void *outs[] = {y};
    cr_assert(run_layer(plxk_run_quantize, &l, ins, outs), "%s", g_err);
    cr_assert(eq(u8, y[1], 0x7f), "not saturating: NaN");
    /* e5m2fnuz per axis: scales 1 and 4 */
    float x2[] = {1.0f, 8.0f, -2.0f, 1e9f};
    float s2[] = {1.0f, 4.0f};
    plx_tensor_info tx2 = info(PLX_DTYPE_FLOAT32, SHAPE(2, 2)), ts2 = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    plx_tensor_info ty2 = info(PLX_DTYPE_FLOAT8E5M2FNUZ, SHAPE(2, 2));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx2, &ts2, NULL, &ty2, x2, s2, NULL,
                        y), "%s", g_err);
    /* 1, 2, -2, max (57344 = 0x7f) */
    uint8_t w2[] = {plx_float32_to_float8(1.0f, PLX_DTYPE_FLOAT8E5M2FNUZ, true),
                    plx_float32_to_float8(2.0f, PLX_DTYPE_FLOAT8E5M2FNUZ, true),
                    plx_float32_to_float8(-2.0f, PLX_DTYPE_FLOAT8E5M2FNUZ, true), 0x7f};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, y[i], w2[i]), "per axis, i %d", i);
    cr_assert(eq(u8, w2[0], 0x40), "1 in e5m2fnuz: exponent 16, mantissa 0");
}

Test(dequantize, float8_to_float32_and_float16) {
    /* e4m3fn 0x3c = 1.5, 0xb0 = -0.5, 0x7e = 448, 0x7f NaN; zero point 0x38 = 1 */
    uint8_t q[] = {0x3c, 0xb0, 0x7e, 0x7f};
    uint8_t zp = 0x38;
    float s = 2.0f, y[4];
    plx_tensor_info tq = info(PLX_DTYPE_FLOAT8E4M3FN, SHAPE(4)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info tz = info(PLX_DTYPE_FLOAT8E4M3FN, SCALAR), ty = info(PLX_DTYPE_FLOAT32, SHAPE(4));
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tq, &ts, &tz, &ty, q, &s, &zp, y),
              "%s", g_err);
    cr_assert(eq(flt, y[0], 1.0f));
    cr_assert(eq(flt, y[1], -3.0f));
    cr_assert(eq(flt, y[2], 894.0f));
    cr_assert(isnan(y[3]));
    /* a float16 scale makes float16 */
    uint16_t s16 = plx_float32_to_float16(0.5f), y16[4];
    plx_tensor_info ts16 = info(PLX_DTYPE_FLOAT16, SCALAR), ty16 = info(PLX_DTYPE_FLOAT16, SHAPE(4));
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tq, &ts16, NULL, &ty16, q, &s16,
                        NULL, y16), "%s", g_err);
    cr_assert(eq(flt, plx_float16_to_float32(y16[0]), 0.75f));
    cr_assert(eq(flt, plx_float16_to_float32(y16[2]), 224.0f));
    /* the scale's dtype must be the output's */
    cr_assert(not(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &tq, &ts16, NULL, &ty, q,
                            &s16, NULL, y)));
}

/* ---- int4 and uint4 (ABI 1.3: one element per byte) ----------------------- */

Test(cast, int4_and_uint4) {
    /* to them: clamped, then rounded half to even (ONNX Cast); NaN gives 0 */
    float x[] = {-9.0f, -8.5f, -7.5f, -0.5f, 0.5f, 1.5f, 2.5f, 7.4f, 7.6f, 100.0f, NAN};
    int8_t y4[16];
    uint8_t yu[16];
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_INT4, 11, x, y4), "%s", g_err);
    const int8_t w4[] = {-8, -8, -8, 0, 0, 2, 2, 7, 7, 7, 0};
    for (int i = 0; i < 11; i++) cr_assert(eq(i8, y4[i], w4[i]), "int4, i %d", i);
    cr_assert(cast_run(PLX_DTYPE_FLOAT32, PLX_DTYPE_UINT4, 11, x, yu), "%s", g_err);
    const uint8_t wu[] = {0, 0, 0, 0, 0, 2, 2, 7, 8, 15, 0};
    for (int i = 0; i < 11; i++) cr_assert(eq(u8, yu[i], wu[i]), "uint4, i %d", i);
    int64_t iv[] = {20, -20, 5, -3};
    cr_assert(cast_run(PLX_DTYPE_INT64, PLX_DTYPE_INT4, 4, iv, y4), "%s", g_err);
    const int8_t wi[] = {7, -8, 5, -3};
    for (int i = 0; i < 4; i++) cr_assert(eq(i8, y4[i], wi[i]), "from int64, i %d", i);
    /* from them: every value exactly */
    int8_t all4[16];
    uint8_t allu[16];
    for (int i = 0; i < 16; i++) {
        all4[i] = (int8_t)(i - 8);
        allu[i] = (uint8_t)i;
    }
    float f[16];
    uint16_t h[16];
    int8_t i8v[16];
    int32_t i32v[16];
    cr_assert(cast_run(PLX_DTYPE_INT4, PLX_DTYPE_FLOAT32, 16, all4, f), "%s", g_err);
    cr_assert(cast_run(PLX_DTYPE_INT4, PLX_DTYPE_INT8, 16, all4, i8v), "%s", g_err);
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, f[i], (float)(i - 8)));
        cr_assert(eq(i8, i8v[i], (int8_t)(i - 8)));
    }
    cr_assert(cast_run(PLX_DTYPE_UINT4, PLX_DTYPE_FLOAT16, 16, allu, h), "%s", g_err);
    cr_assert(cast_run(PLX_DTYPE_UINT4, PLX_DTYPE_INT32, 16, allu, i32v), "%s", g_err);
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, plx_float16_to_float32(h[i]), (float)i));
        cr_assert(eq(i32, i32v[i], i));
    }
    /* int4 to uint4: negative values clamp to 0 */
    cr_assert(cast_run(PLX_DTYPE_INT4, PLX_DTYPE_UINT4, 16, all4, yu), "%s", g_err);
    for (int i = 0; i < 16; i++) cr_assert(eq(u8, yu[i], i < 8 ? 0 : i - 8), "i %d", i);
}

Test(quantize, int4_and_uint4) {
    /* x / 2 rounded half to even, + zero point 1, clamped to -8..7:
     * 3 -> 1.5 -> 2 -> 3; 100 -> 7; -100 -> -8; -5 -> -2.5 -> -2 -> -1 */
    float x[] = {3.0f, 100.0f, -100.0f, -5.0f};
    float s = 2.0f;
    int8_t zp = 1, y[4];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(4)), ts = info(PLX_DTYPE_FLOAT32, SCALAR);
    plx_tensor_info tz = info(PLX_DTYPE_INT4, SCALAR), ty = info(PLX_DTYPE_INT4, SHAPE(4));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, &tz, &ty, x, &s, &zp, y),
              "%s", g_err);
    const int8_t w[] = {3, 7, -8, -1};
    for (int i = 0; i < 4; i++) cr_assert(eq(i8, y[i], w[i]), "i %d", i);
    float back[4];
    plx_tensor_info tf = info(PLX_DTYPE_FLOAT32, SHAPE(4));
    cr_assert(quant_run(plxk_run_dequantize, PLX_OP_DEQUANTIZE, 1, &ty, &ts, &tz, &tf, y, &s, &zp,
                        back), "%s", g_err);
    const float wb[] = {4.0f, 12.0f, -18.0f, -4.0f};
    for (int i = 0; i < 4; i++) cr_assert(eq(flt, back[i], wb[i]), "i %d", i);
    /* uint4 without a zero point: 0..15 */
    uint8_t yu[4];
    plx_tensor_info tyu = info(PLX_DTYPE_UINT4, SHAPE(4));
    cr_assert(quant_run(plxk_run_quantize, PLX_OP_QUANTIZE, 1, &tx, &ts, NULL, &tyu, x, &s, NULL,
                        yu), "%s", g_err);
    const uint8_t wu[] = {2, 15, 0, 0};
    for (int i = 0; i < 4; i++) cr_assert(eq(u8, yu[i], wu[i]), "uint4, i %d", i);
}
