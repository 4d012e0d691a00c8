/* cpu_ref's vector math (kernels/vecmath.h) in every ISA variant this CPU
 * supports, against libm in double: relative error within a few float32
 * ulps over a dense sweep of each function's range, absolute error near
 * zeros of the function, the limits and NaN exact, in-place calls, and the
 * refusals. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "vecmath.h"

static double ref(plxk_vfunc f, double x) {
    switch (f) {
    case PLXK_VEXP: return exp(x);
    case PLXK_VSIGMOID: return 1.0 / (1.0 + exp(-x));
    case PLXK_VTANH: return tanh(x);
    case PLXK_VERF: return erf(x);
    /* 1 + erf(u) = erfc(-u) and (1 + tanh u) / 2 = 1 / (1 + e^-2u): the
     * reference too keeps the negative tail */
    case PLXK_VGELU_ERF: return 0.5 * x * erfc(-x / sqrt(2.0));
    case PLXK_VGELU_TANH:
        return x / (1.0 + exp(-2.0 * sqrt(2.0 / 3.14159265358979323846) *
                                    (x + 0.044715 * x * x * x)));
    case PLXK_VSQRT: return sqrt(x);
    }
    return NAN;
}

/* The sweep: n points evenly over [lo, hi], plus tiny arguments. */
#define SWEEP 20001

static void check_function(plxk_isa isa, plxk_vfunc f, double lo, double hi, double max_rel,
                           double abs_floor) {
    float *x = malloc(SWEEP * sizeof *x), *y = malloc(SWEEP * sizeof *y);
    cr_assert(not(zero(ptr, x)));
    cr_assert(not(zero(ptr, y)));
    for (int i = 0; i < SWEEP; i++) {
        x[i] = (float)(lo + (hi - lo) * i / (SWEEP - 1));
    }
    x[0] = 1e-30f; /* tiny arguments keep their relative accuracy */
    x[1] = -3e-7f;
    x[2] = 1e-3f;
    cr_assert(plxk_vmap(isa, f, x, y, SWEEP));
    double worst = 0.0;
    int at = 0;
    for (int i = 0; i < SWEEP; i++) {
        double want = ref(f, (double)x[i]);
        double err = fabs((double)y[i] - want) / fmax(fabs(want), abs_floor);
        if (isnan(y[i]) || isnan(want)) { /* a NaN only where libm gives one */
            err = isnan(y[i]) && isnan(want) ? 0.0 : INFINITY;
        }
        if (err > worst) {
            worst = err;
            at = i;
        }
    }
    cr_expect(le(dbl, worst, max_rel), "%s f=%d: error %.3g at x=%.9g (got %.9g, want %.9g)",
              plxk_isa_name(isa), (int)f, worst, (double)x[at], (double)y[at],
              ref(f, (double)x[at]));
    free(x);
    free(y);
}

/* float32's ulp is 2^-23 relative (1.2e-7): the bounds allow a few. */
#define ULPS(k) ((k) * 1.1920929e-7)

static void check_all(plxk_isa isa) {
    check_function(isa, PLXK_VEXP, -87.0, 88.5, ULPS(4), 0.0);
    check_function(isa, PLXK_VSIGMOID, -80.0, 80.0, ULPS(4), 0.0);
    check_function(isa, PLXK_VTANH, -12.0, 12.0, ULPS(4), 0.0);
    check_function(isa, PLXK_VTANH, -1.0, 1.0, ULPS(4), 0.0);
    check_function(isa, PLXK_VERF, -5.0, 5.0, ULPS(4), 0.0);
    check_function(isa, PLXK_VERF, -1.5, 1.5, ULPS(4), 0.0);
    /* GELU's negative tail falls like e^(-x^2 / 2): there, the rounding
     * of x / sqrt 2 (half an ulp) is magnified about x^2 times, so the
     * bound is wider than the others', which it meets away from the tail */
    check_function(isa, PLXK_VGELU_ERF, -5.0, 8.0, ULPS(24), 1e-30);
    check_function(isa, PLXK_VGELU_TANH, -5.0, 8.0, ULPS(24), 1e-30);
    check_function(isa, PLXK_VGELU_ERF, -20.0, 8.0, ULPS(48), 1e-9);
    check_function(isa, PLXK_VGELU_TANH, -20.0, 8.0, ULPS(48), 1e-9);
    check_function(isa, PLXK_VGELU_ERF, -2.0, 8.0, ULPS(6), 1e-30);
    check_function(isa, PLXK_VGELU_TANH, -2.0, 8.0, ULPS(6), 1e-30);
    /* correctly rounded: within half an ulp of the double result */
    check_function(isa, PLXK_VSQRT, 0.0, 1e6, ULPS(0.5), 0.0);
}

static void check_limits(plxk_isa isa) {
    float x[6] = {INFINITY, -INFINITY, NAN, 100.0f, -200.0f, 0.0f}, y[6];
    cr_assert(plxk_vmap(isa, PLXK_VEXP, x, y, 6));
    cr_expect(eq(flt, y[0], INFINITY));
    cr_expect(eq(flt, y[1], 0.0f));
    cr_expect(isnan(y[2]));
    cr_expect(eq(flt, y[3], INFINITY));
    cr_expect(eq(flt, y[4], 0.0f));
    cr_expect(eq(flt, y[5], 1.0f));
    cr_assert(plxk_vmap(isa, PLXK_VSIGMOID, x, y, 6));
    cr_expect(eq(flt, y[0], 1.0f));
    cr_expect(eq(flt, y[1], 0.0f));
    cr_expect(isnan(y[2]));
    cr_expect(eq(flt, y[5], 0.5f));
    cr_assert(plxk_vmap(isa, PLXK_VSQRT, x, y, 6));
    cr_expect(eq(flt, y[0], INFINITY));
    cr_expect(isnan(y[1]));
    cr_expect(isnan(y[2]));
    cr_expect(eq(flt, y[3], 10.0f));
    cr_expect(isnan(y[4]));
    cr_expect(eq(flt, y[5], 0.0f));
    cr_assert(plxk_vmap(isa, PLXK_VTANH, x, y, 6));
    cr_expect(eq(flt, y[0], 1.0f));
    cr_expect(eq(flt, y[1], -1.0f));
    cr_expect(isnan(y[2]));
    cr_expect(eq(flt, y[3], 1.0f));
    cr_expect(eq(flt, y[5], 0.0f));
    cr_assert(plxk_vmap(isa, PLXK_VERF, x, y, 6));
    cr_expect(eq(flt, y[0], 1.0f));
    cr_expect(eq(flt, y[1], -1.0f));
    cr_expect(isnan(y[2]));
    cr_expect(eq(flt, y[4], -1.0f));
    cr_expect(eq(flt, y[5], 0.0f));
    /* Both GELU forms: ONNX's formula x * (a factor that is 0 in float
     * below -14), so NaN at -inf (-inf * 0), as every backend gives
     * (tests/data/nonfinite). */
    for (plxk_vfunc f = PLXK_VGELU_ERF; f <= PLXK_VGELU_TANH; f++) {
        cr_assert(plxk_vmap(isa, f, x, y, 6));
        cr_expect(eq(flt, y[0], INFINITY));
        cr_expect(isnan(y[1]));
        cr_expect(isnan(y[2]));
        cr_expect(eq(flt, y[3], 100.0f));
        cr_expect(eq(flt, y[4], 0.0f));
        cr_expect(eq(flt, y[5], 0.0f));
    }
}

Test(vecmath, every_variant_against_libm) {
    int ran = 0;
    for (int v = 0; v < PLXK_ISA_COUNT; v++) {
        if (plxk_isa_supported((plxk_isa)v)) {
            check_all((plxk_isa)v);
            check_limits((plxk_isa)v);
            ran++;
        }
    }
    cr_expect(ge(int, ran, 1), "the portable variant always runs");
}

/* Hard-sigmoid (ONNX's default alpha 0.2, beta 0.5, and another pair) and
 * hard-swish in every variant, against the formula in double: within the
 * roundings of a x + b and of the product (a variant may fuse the
 * multiply-add), exact in the flat parts and at infinity, NaN staying NaN, over more values than a vector so that
 * the vector loop and its remainder both run, and in place. */
Test(vecmath, hard_sigmoid_and_hard_swish) {
    enum { N = 203 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i - 101) / 16.0f; /* -6.3 .. 6.3, the corners included */
    }
    x[0] = NAN;
    x[1] = -INFINITY;
    x[2] = INFINITY;
    x[3] = -0.0f;
    static const float params[][3] = {{0.2f, 0.5f, 0}, {0.125f, -0.25f, 0},
                                      {1.0f / 6.0f, 0.5f, 1}};
    for (int v = 0; v < PLXK_ISA_COUNT; v++) {
        if (!plxk_isa_supported((plxk_isa)v)) {
            continue;
        }
        for (size_t k = 0; k < sizeof params / sizeof params[0]; k++) {
            float a = params[k][0], b = params[k][1];
            bool swish = params[k][2] != 0;
            cr_assert(plxk_vhard_sigmoid((plxk_isa)v, a, b, swish, x, y, N));
            for (int i = 0; i < N; i++) {
                double h = (double)a * x[i] + b;
                h = h < 0 ? 0 : h > 1 ? 1 : h;
                double want = swish ? x[i] * h : h;
                if (isnan(x[i]) || (swish && isinf(x[i]) && h == 0)) {
                    cr_expect(isnan(y[i]), "%s: NaN expected at x=%g, got %g",
                              plxk_isa_name((plxk_isa)v), (double)x[i], (double)y[i]);
                    continue;
                }
                if (isinf(want)) {
                    cr_expect(eq(dbl, (double)y[i], want), "%s: f(%g) = %g",
                              plxk_isa_name((plxk_isa)v), (double)x[i], (double)y[i]);
                    continue;
                }
                /* a x + b rounds twice without a fused multiply-add: an
                 * ulp of each term, then of the product with x */
                double terms = (fabs((double)a * x[i]) + fabs((double)b)) * (swish ? fabs(x[i]) : 1);
                cr_expect(le(dbl, fabs(y[i] - want), 1.2e-7 * (2.0 * terms + fabs(want))),
                          "%s k=%zu: f(%g) = %.9g, want %.9g", plxk_isa_name((plxk_isa)v), k,
                          (double)x[i], (double)y[i], want);
            }
        }
        float z[N];
        memcpy(z, x, sizeof z);
        cr_assert(plxk_vhard_sigmoid((plxk_isa)v, 0.2f, 0.5f, false, z, z, N));
        cr_assert(plxk_vhard_sigmoid((plxk_isa)v, 0.2f, 0.5f, false, x, y, N));
        cr_expect(eq(int, memcmp(z, y, sizeof z), 0), "in place");
    }
    cr_expect(not(plxk_vhard_sigmoid((plxk_isa)PLXK_ISA_COUNT, 0.2f, 0.5f, false, x, y, N)));
}

Test(vecmath, in_place_and_empty) {
    float v[37];
    for (int i = 0; i < 37; i++) {
        v[i] = (float)i / 8.0f - 2.0f;
    }
    cr_assert(plxk_vmap(plxk_isa_best(), PLXK_VTANH, v, v, 37));
    for (int i = 0; i < 37; i++) {
        double want = tanh((double)i / 8.0 - 2.0);
        cr_expect(le(dbl, fabs(v[i] - want), 1e-6), "tanh in place at %d", i);
    }
    cr_assert(plxk_vmap(plxk_isa_best(), PLXK_VEXP, NULL, NULL, 0));
}

Test(vecmath, refusals) {
    float x = 1.0f, y = 0.0f;
    cr_expect(not(plxk_vmap(plxk_isa_best(), (plxk_vfunc)PLXK_VFUNC_COUNT, &x, &y, 1)));
    cr_expect(not(plxk_vmap((plxk_isa)PLXK_ISA_COUNT, PLXK_VEXP, &x, &y, 1)));
    cr_expect(eq(flt, y, 0.0f), "a refused call writes nothing");
}
