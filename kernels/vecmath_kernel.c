/* The functions of vecmath.h, compiled once per instruction set (meson
 * builds this file with each variant's flags, beside gemm_kernel.c).
 *
 * Every function is a loop of straight-line float arithmetic and selects
 * (`c ? a : b` on values both computed), which GCC and Clang vectorise at
 * -O3; no libm call, no table, no branch on the data.
 *
 * exp: x = n ln 2 + r with n the nearest integer to x / ln 2 (rounded by
 * adding and subtracting 1.5 * 2^23) and |r| <= ln 2 / 2 (ln 2 in two parts
 * so that r is exact); e^r by a degree-7 polynomial with the Taylor
 * coefficients, whose remainder r^8 / 8! is below 2^-30 there; 2^n built
 * in the exponent bits. Arguments below -87.3 (results in float32's
 * subnormals) give 0, above 88.72 infinity.
 * sigmoid: 1 / (1 + e^-x), exact in the limits (e^-x infinite gives 0).
 * tanh: a rational function of x^2 (tanh_one); |x| >= 9 gives +-1.
 * erf: a rational function of x^2 (erf_one); |x| >= 4 gives +-1, which is
 * erf in float32.
 * erfc, for GELU's tail: for |x| < 1, 1 - x times the Taylor series of
 * degree 10 in x^2 (remainder below 2^-26); beyond, a Chebyshev fit in
 * t = 1 / (1 + |x| / 2) times e^-x^2 (relative error below 1.3e-7).
 * GELU: the erf form takes 1 + erf(u) as erfc(-u) for u <= -1, the tanh
 * form is x sigmoid(2u), so that neither loses its negative tail to
 * cancellation. */
#include "gemm_kernel.h"
#include "vecmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float exp_one(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float shifter = 12582912.0f; /* 1.5 * 2^23 */
    /* no clamp: outside [-87.3, 88.72] the selects below replace whatever
     * the arithmetic gave, and a NaN goes through it as a NaN */
    float t = x * log2e + shifter;
    float n = t - shifter;
    float r = x - n * ln2_hi;
    r = r - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* p 2^n by adding n to p's exponent field. t's bits are those of
     * 1.5 * 2^23 plus n, all of the constant's at bit 22 and above, so
     * that t's bits shifted by 23 are n's. The exponent stays normal:
     * n = 128 only for x above 127.5 ln 2, where r < 0 and p < 1, and
     * n = -126 only for x at or above -87.3, where r > 0 and p >= 1. */
    float y = bits_to_float(float_to_bits(p) + (float_to_bits(t) << 23));
    y = x > 88.72283f ? (float)INFINITY : y;
    return x < -87.3f ? 0.0f : y;
}

/* tanh x as x P(x^2) / Q(x^2) over |x| <= 9 (beyond, tanh rounds to +-1 in
 * float32), a rational fit of degrees 4 and 4 in x^2 made for this file
 * (least squares on the relative error, reweighted towards the largest):
 * relative error 2e-8 in double; evaluated in float32, at most 2.8 ulps
 * with FMA and 3.2 without (a sweep of 2^24 values over [-20, 20]).
 * Both polynomials have positive coefficients, so Q has no zero. One
 * division, where sign(x) (1 - 2 / (e^2|x| + 1)) took an exp and a
 * division and the small arguments a polynomial of degree 15 besides: on
 * AVX-512, 0.54 -> 0.36 ns per value on Zen 4. The result is kept within
 * [-1, 1], which the fit may pass by an ulp near |x| = 9. */
static inline float tanh_one(float x) {
    float xc = x < -9.0f ? -9.0f : x > 9.0f ? 9.0f : x;
    float z = xc * xc;
    float p = 1.335525780e-08f;
    p = p * z + 2.060953921e-05f;
    p = p * z + 3.495617377e-03f;
    p = p * z + 1.338105089e-01f;
    p = p * z + 9.999999795e-01f;
    float q = 7.776809691e-07f;
    q = q * z + 3.285681535e-04f;
    q = q * z + 2.587709532e-02f;
    q = q * z + 4.671436653e-01f;
    q = q * z + 1.0f;
    float y = xc * p / q;
    y = y > 1.0f ? 1.0f : y;
    return y < -1.0f ? -1.0f : y; /* a NaN goes through every step */
}

static inline float sigmoid_one(float x) {
    return 1.0f / (1.0f + exp_one(-x));
}

/* erfc(a) for a >= 1: t e^(-a^2 + P(t)), t = 1 / (1 + a / 2). */
static inline float erfc_big(float a) {
    float t = 1.0f / (1.0f + 0.5f * a);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    return t * exp_one(p - a * a);
}

/* erf(x) for |x| < 1: 2 / sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)), k <= 10. */
static inline float erf_small(float x) {
    float z = x * x;
    float q = 1.0f / (3628800.0f * 21.0f);
    q = q * z - 1.0f / (362880.0f * 19.0f);
    q = q * z + 1.0f / (40320.0f * 17.0f);
    q = q * z - 1.0f / (5040.0f * 15.0f);
    q = q * z + 1.0f / (720.0f * 13.0f);
    q = q * z - 1.0f / (120.0f * 11.0f);
    q = q * z + 1.0f / (24.0f * 9.0f);
    q = q * z - 1.0f / (6.0f * 7.0f);
    q = q * z + 1.0f / (2.0f * 5.0f);
    q = q * z - 1.0f / 3.0f;
    return 1.12837916709551257f * (x + x * z * q);
}

/* erf(x) as x P(x^2) / Q(x^2) over |x| <= 4, a rational fit of degrees 6
 * and 5 in x^2 made for this file (weighted least squares towards the
 * smallest largest error): relative error below 3.7e-7 in float32, about
 * three ulps; one division instead of erf_small and erfc_big's exp, both of
 * which a vector loop would have to evaluate for every element. */
static inline float erf_one(float x) {
    float a = x < 0 ? -x : x;
    float xc = a > 4.0f ? (x < 0 ? -4.0f : 4.0f) : x;
    float z = xc * xc;
    float p = -1.3667292e-08f;
    p = p * z + 4.7806220e-06f;
    p = p * z + 3.8269986e-04f;
    p = p * z + 3.8396837e-03f;
    p = p * z + 5.4333128e-02f;
    p = p * z + 1.8471360e-01f;
    p = p * z + 1.1283792f;
    float q = 6.4010244e-05f;
    q = q * z + 1.3096224e-03f;
    q = q * z + 1.5453839e-02f;
    q = q * z + 1.1382774e-01f;
    q = q * z + 4.9703172e-01f;
    q = q * z + 1.0f;
    float y = xc * p / q;
    y = a >= 4.0f ? (x < 0 ? -1.0f : 1.0f) : y;
    return x != x ? x : y;
}

/* x / 2 (1 + erf(x / sqrt 2)), with 1 + erf(u) = erfc(-u) for u <= -1 so
 * that the negative tail keeps its relative accuracy. */
static inline float gelu_erf_one(float x) {
    float u = x * 0.70710678118654752f, a = u < 0 ? -u : u;
    float c = erfc_big(a < 1.0f ? 1.0f : a > 10.0f ? 10.0f : a);
    float one_plus = u < 0 ? c : 2.0f - c;
    one_plus = a < 1.0f ? 1.0f + erf_small(a < 1.0f ? u : 0.0f) : one_plus;
    float y = 0.5f * x * one_plus;
    y = x > 10.0f ? x : y;
    y = x < -14.0f ? 0.0f * x : y; /* the formula's x * 0: -0, NaN at -inf */
    return x != x ? x : y;
}

/* x / 2 (1 + tanh u) = x sigmoid(2u): no cancellation in the negative tail. */
static inline float gelu_tanh_one(float x) {
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    float y = x * sigmoid_one(2.0f * u);
    y = x < -14.0f ? 0.0f * x : y; /* the formula's x * 0: -0, NaN at -inf */
    return x != x ? x : y;
}

#define VMAP_LOOP(EXPR)                      \
    for (size_t i = 0; i < n; i++) {         \
        float v = x[i];                      \
        y[i] = (EXPR);                       \
    }

void PLXK_ISA_SYMBOL(plxk_vmap_)(plxk_vfunc f, const float *x, float *y, size_t n) {
    switch (f) {
    case PLXK_VEXP: VMAP_LOOP(exp_one(v)); break;
    case PLXK_VSIGMOID: VMAP_LOOP(sigmoid_one(v)); break;
    case PLXK_VTANH: VMAP_LOOP(tanh_one(v)); break;
    case PLXK_VERF: VMAP_LOOP(erf_one(v)); break;
    case PLXK_VGELU_ERF: VMAP_LOOP(gelu_erf_one(v)); break;
    case PLXK_VGELU_TANH: VMAP_LOOP(gelu_tanh_one(v)); break;
    /* sqrtps: meson builds these files with -fno-math-errno, without
     * which a call that may set errno is never vectorised */
    case PLXK_VSQRT: VMAP_LOOP(sqrtf(v)); break;
    }
}

/* The clip's shape of loop (bounds in locals, two selects), one loop per
 * form so that neither carries the other's branch. In the baseline build
 * of kernels_elementwise.c (SSE2) it took 2.1 times ONNX Runtime's time on
 * 1x64x128x128 (Zen 4). */
void PLXK_ISA_SYMBOL(plxk_vhard_sigmoid_)(float alpha, float beta, bool times_x, const float *x,
                                          float *y, size_t n) {
    const float lo = 0.0f, hi = 1.0f;
    if (times_x) {
        for (size_t i = 0; i < n; i++) {
            float v = alpha * x[i] + beta;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            y[i] = x[i] * v;
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float v = alpha * x[i] + beta;
        v = v < lo ? lo : v;
        y[i] = v > hi ? hi : v;
    }
}

/* One float32 operation over a run of n outputs, each operand advancing
 * by one element (step 1) or staying on one (step 0): four loops per
 * operation, so that each vectorises. */
#define BINARY_RUN(EXPR)                                                                   \
    do {                                                                                   \
        if (sa && sb) {                                                                    \
            for (size_t i = 0; i < n; i++) {                                               \
                float x = a[i], z = b[i];                                                  \
                y[i] = (EXPR);                                                             \
            }                                                                              \
        } else if (sa) {                                                                   \
            const float z = b[0];                                                          \
            for (size_t i = 0; i < n; i++) {                                               \
                float x = a[i];                                                            \
                y[i] = (EXPR);                                                             \
            }                                                                              \
        } else if (sb) {                                                                   \
            const float x = a[0];                                                          \
            for (size_t i = 0; i < n; i++) {                                               \
                float z = b[i];                                                            \
                y[i] = (EXPR);                                                             \
            }                                                                              \
        } else {                                                                           \
            const float x = a[0], z = b[0];                                                \
            const float v = (EXPR);                                                        \
            for (size_t i = 0; i < n; i++) {                                               \
                y[i] = v;                                                                  \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* plxk_vbinary in this variant: one loop per operand form (BINARY_RUN).
 * In the baseline SSE2 build, where it was, numpy's max against a scalar
 * (openWakeWord's, a compare, a NaN test and a blend per element) took 2.1
 * times ONNX Runtime's time on 1M elements. */
bool PLXK_ISA_SYMBOL(plxk_vbinary_)(plx_binary_func f, const float *restrict a, bool sa,
                                    const float *restrict b, bool sb, float *restrict y,
                                    size_t n) {
    switch (f) {
    case PLX_BINARY_ADD: BINARY_RUN(x + z); return true;
    case PLX_BINARY_SUB: BINARY_RUN(x - z); return true;
    case PLX_BINARY_MUL: BINARY_RUN(x * z); return true;
    case PLX_BINARY_DIV: BINARY_RUN(x / z); return true;
    /* numpy's maximum/minimum: a NaN in either operand gives NaN */
    case PLX_BINARY_MAX: BINARY_RUN(x != x || z != z ? NAN : x > z ? x : z); return true;
    case PLX_BINARY_MIN: BINARY_RUN(x != x || z != z ? NAN : x < z ? x : z); return true;
    case PLX_BINARY_PRELU: BINARY_RUN(x < 0 ? z * x : x); return true;
    case PLX_BINARY_POW:
        /* x^2 (a squared magnitude, a variance): the product, which is the
         * correctly rounded square that pow gives too */
        if (sb || b[0] != 2.0f) {
            return false;
        }
        if (sa) {
            for (size_t i = 0; i < n; i++) {
                y[i] = a[i] * a[i];
            }
        } else {
            const float v = a[0] * a[0];
            for (size_t i = 0; i < n; i++) {
                y[i] = v;
            }
        }
        return true;
    default: return false;
    }
}
#undef BINARY_RUN
