/* Tests of cpu_ref's signal-processing kernels (kernels_signal.c), called
 * directly with hand-built layer views: dft and stft on hand-derived
 * cases, and on seeded random ones against the definition summed
 * directly in double (O(L^2) per line), over lengths that take the
 * radix-2 path (powers of two) and Bluestein's (the others, primes
 * among them). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "F1"
#include "kernel_test_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static float rnd_f(void) {
    return -1.0f + 2.0f * (float)(rnd() >> 40) / (float)(1 << 24);
}

#define BIG 40000
static float g_x[BIG], g_w[BIG], g_y[BIG];
static double g_want[BIG];

static bool dft_run(const plx_dft_desc *d, const plx_tensor_info *x, const plx_tensor_info *y,
                    const void *px, void *py) {
    plx_layer_view l = layer_of(PLX_OP_DFT, d, x, 1, y, 1);
    const void *ins[] = {px};
    void *outs[] = {py};
    return run_layer(plxk_run_dft, &l, ins, outs);
}

static void expect_close(const float *got, const double *want, size_t n, double tol,
                         const char *what) {
    for (size_t i = 0; i < n; i++) {
        double lim = tol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);
        cr_assert(le(dbl, fabs((double)got[i] - want[i]), lim), "%s[%zu]: got %.9g want %.9g",
                  what, i, (double)got[i], want[i]);
    }
}

/* [1, 2, 3, 4] as a real line of 4: Y[k] = sum x[j] (-i)^(jk):
 * Y0 = 10, Y1 = 1 - 2i - 3 + 4i = -2 + 2i, Y2 = 1 - 2 + 3 - 4 = -2,
 * Y3 = -2 - 2i. The inverse of that gives the line back (imaginary 0).
 * Onesided keeps Y0..Y2. dft_length 3 cuts the line to [1, 2, 3]:
 * Y0 = 6, Y1 = 1 + 2 w + 3 w^2 with w = exp(-2 pi i / 3) = -1/2 -
 * (sqrt 3 / 2) i, w^2 = conj w: 1 - 5/2 + (-sqrt 3 + 3 sqrt 3 / 2) i =
 * -1.5 + 0.866 i, Y2 its conjugate. dft_length 6 pads with zeros:
 * Y3 = 1 - 2 + 3 - 4 = -2. */
Test(dft, hand_cases) {
    float x[4] = {1, 2, 3, 4}, y[12], back[8];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(4, 1));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(4, 2));
    plx_dft_desc d = PLX_DFT_DESC_INIT;
    d.axis = 0;
    cr_assert(dft_run(&d, &tx, &ty, x, y), "%s", g_err);
    const double want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
    expect_close(y, want, 8, 1e-6, "forward");

    d.inverse = true;
    cr_assert(dft_run(&d, &ty, &ty, y, back), "%s", g_err);
    const double line[8] = {1, 0, 2, 0, 3, 0, 4, 0};
    expect_close(back, line, 8, 1e-6, "inverse");

    d.inverse = false;
    d.onesided = true;
    plx_tensor_info t3 = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2));
    cr_assert(dft_run(&d, &tx, &t3, x, y), "%s", g_err);
    expect_close(y, want, 6, 1e-6, "onesided");

    d.onesided = false;
    d.length = 3;
    cr_assert(dft_run(&d, &tx, &t3, x, y), "%s", g_err);
    const double cut[6] = {6, 0, -1.5, sqrt(3.0) / 2, -1.5, -sqrt(3.0) / 2};
    expect_close(y, cut, 6, 1e-6, "dft_length 3");

    d.length = 6;
    plx_tensor_info t6 = info(PLX_DTYPE_FLOAT32, SHAPE(6, 2));
    cr_assert(dft_run(&d, &tx, &t6, x, y), "%s", g_err);
    const double y3[2] = {-2, 0};
    expect_close(y + 6, y3, 2, 1e-6, "dft_length 6, Y3");
}

/* Random X [outer, n, inner, comp] against the definition, over every
 * transform length from 1 to 40 and a few large ones. */
Test(dft, random_against_definition) {
    seed(17);
    const int64_t lens[] = {64, 97, 128, 243, 1000, 1024};
    for (int t = 0; t < 60; t++) {
        const int64_t n = t < 40 ? t + 1 : lens[(t - 40) % 6] + (t >= 46 ? rnd_i(0, 7) : 0);
        const int64_t outer = rnd_i(1, 2), inner = n > 100 ? 1 : rnd_i(1, 3);
        const int64_t comp = rnd_i(1, 2);
        plx_dft_desc d = PLX_DFT_DESC_INIT;
        d.axis = rnd_i(0, 1) ? 1 : -3;
        d.inverse = comp == 2 && rnd_i(0, 1);
        d.onesided = !d.inverse && rnd_i(0, 1);
        d.length = rnd_i(0, 2) == 0 ? rnd_i(1, n + 5) : 0;
        const int64_t len = d.length ? d.length : n;
        const int64_t out = d.onesided ? len / 2 + 1 : len;
        plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(outer, n, inner, comp));
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(outer, out, inner, 2));
        cr_assert(le(sz, numel(&ty), (size_t)BIG));
        for (size_t i = 0; i < numel(&tx); i++) {
            g_x[i] = rnd_f();
        }
        const double sign = d.inverse ? 1.0 : -1.0, scale = d.inverse ? 1.0 / (double)len : 1.0;
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t i = 0; i < inner; i++) {
                for (int64_t k = 0; k < out; k++) {
                    double re = 0, im = 0;
                    for (int64_t j = 0; j < n && j < len; j++) {
                        const int64_t at = ((o * n + j) * inner + i) * comp;
                        const double xr = g_x[at], xi = comp == 2 ? g_x[at + 1] : 0.0;
                        const double a = sign * 2.0 * M_PI * (double)((j * k) % len) / (double)len;
                        re += xr * cos(a) - xi * sin(a);
                        im += xr * sin(a) + xi * cos(a);
                    }
                    const int64_t at = ((o * out + k) * inner + i) * 2;
                    g_want[at] = re * scale;
                    g_want[at + 1] = im * scale;
                }
            }
        }
        cr_assert(dft_run(&d, &tx, &ty, g_x, g_y), "%s", g_err);
        char what[96];
        snprintf(what, sizeof what, "n %lld length %lld comp %lld inverse %d onesided %d",
                 (long long)n, (long long)len, (long long)comp, d.inverse, d.onesided);
        expect_close(g_y, g_want, numel(&ty), 1e-5 * sqrt((double)len), what);
    }
}

/* float64 keeps what the double transform computes: a prime length (7,
 * Bluestein) to 1e-12 of the definition. */
Test(dft, float64_prime_length) {
    double x[7], y[14];
    for (int j = 0; j < 7; j++) {
        x[j] = j * j - 3.5;
    }
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT64, SHAPE(7, 1));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT64, SHAPE(7, 2));
    plx_dft_desc d = PLX_DFT_DESC_INIT;
    cr_assert(dft_run(&d, &tx, &ty, x, y), "%s", g_err);
    for (int k = 0; k < 7; k++) {
        double re = 0, im = 0;
        for (int j = 0; j < 7; j++) {
            re += x[j] * cos(-2.0 * M_PI * j * k / 7);
            im += x[j] * sin(-2.0 * M_PI * j * k / 7);
        }
        cr_assert(le(dbl, fabs(y[2 * k] - re), 1e-12), "re %d: %.17g vs %.17g", k, y[2 * k], re);
        cr_assert(le(dbl, fabs(y[2 * k + 1] - im), 1e-12), "im %d", k);
    }
}

Test(dft, refusals) {
    char buf[256];
    plx_dft_desc d = PLX_DFT_DESC_INIT;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(4, 2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2));
    d.axis = 0;
    d.inverse = true;
    d.onesided = true;
    plx_layer_view l = layer_of(PLX_OP_DFT, &d, &tx, 1, &ty, 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_dft(&l, buf, sizeof buf))));
    d.inverse = false;
    cr_assert(zero(ptr, (void *)plxk_check_dft(&l, buf, sizeof buf)));
    d.axis = 1; /* the complex dim */
    cr_assert(not(zero(ptr, (void *)plxk_check_dft(&l, buf, sizeof buf))));
    d.axis = 0;
    tx.dtype = PLX_DTYPE_INT32;
    const char *why = plxk_check_dft(&l, buf, sizeof buf);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "int32"))), "%s", why);
}

/* ---- stft --------------------------------------------------------------- */

static bool stft_run(const plx_stft_desc *d, const plx_tensor_info *x, const plx_tensor_info *w,
                     const plx_tensor_info *y, const void *px, const void *pw, void *py) {
    plx_tensor_info ins[2] = {*x, w ? *w : *x};
    plx_layer_view l = layer_of(PLX_OP_STFT, d, ins, w ? 2 : 1, y, 1);
    const void *in_ptrs[] = {px, pw};
    void *outs[] = {py};
    return run_layer(plxk_run_stft, &l, in_ptrs, outs);
}

/* signal [1, 2, 3, 4, 5], frames of 2 every 2: [1, 2] and [3, 4] (5 is
 * left over); their transforms [3, -1] and [7, -1]; with window [1, 0.5]:
 * [1, 1] -> [2, 0] and [3, 2] -> [5, 1]. Onesided keeps 2 / 2 + 1 = 2
 * bins: all of them. */
Test(stft, hand_case) {
    float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 0.5f}, y[8];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 5, 1));
    plx_tensor_info tw = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 2, 2));
    plx_stft_desc d = PLX_STFT_DESC_INIT(2, 2);
    cr_assert(stft_run(&d, &tx, NULL, &ty, x, NULL, y), "%s", g_err);
    const double plain[8] = {3, 0, -1, 0, 7, 0, -1, 0};
    expect_close(y, plain, 8, 1e-6, "no window");
    cr_assert(stft_run(&d, &tx, &tw, &ty, x, w, y), "%s", g_err);
    const double windowed[8] = {2, 0, 0, 0, 5, 0, 1, 0};
    expect_close(y, windowed, 8, 1e-6, "window");
}

/* Random signals against frames cut and summed here. */
Test(stft, random_against_definition) {
    seed(23);
    for (int t = 0; t < 30; t++) {
        const int64_t b = rnd_i(1, 2), len = rnd_i(1, 60), comp = rnd_i(1, 2);
        const int64_t fl = rnd_i(1, len), step = rnd_i(1, 5);
        plx_stft_desc d = PLX_STFT_DESC_INIT(step, fl);
        d.onesided = rnd_i(0, 1);
        const bool window = rnd_i(0, 1);
        const int64_t frames = 1 + (len - fl) / step, bins = d.onesided ? fl / 2 + 1 : fl;
        plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(b, len, comp));
        plx_tensor_info tw = info(PLX_DTYPE_FLOAT32, SHAPE(fl));
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(b, frames, bins, 2));
        for (size_t i = 0; i < numel(&tx); i++) {
            g_x[i] = rnd_f();
        }
        for (int64_t j = 0; j < fl; j++) {
            g_w[j] = rnd_f();
        }
        for (int64_t bb = 0; bb < b; bb++) {
            for (int64_t f = 0; f < frames; f++) {
                for (int64_t k = 0; k < bins; k++) {
                    double re = 0, im = 0;
                    for (int64_t j = 0; j < fl; j++) {
                        const int64_t at = (bb * len + f * step + j) * comp;
                        const double wj = window ? g_w[j] : 1.0;
                        const double xr = wj * g_x[at], xi = comp == 2 ? wj * g_x[at + 1] : 0.0;
                        const double a = -2.0 * M_PI * (double)((j * k) % fl) / (double)fl;
                        re += xr * cos(a) - xi * sin(a);
                        im += xr * sin(a) + xi * cos(a);
                    }
                    const int64_t at = ((bb * frames + f) * bins + k) * 2;
                    g_want[at] = re;
                    g_want[at + 1] = im;
                }
            }
        }
        cr_assert(stft_run(&d, &tx, window ? &tw : NULL, &ty, g_x, g_w, g_y), "%s", g_err);
        expect_close(g_y, g_want, numel(&ty), 1e-5 * sqrt((double)fl), "stft");
    }
}

Test(stft, refusals) {
    char buf[256];
    plx_stft_desc d = PLX_STFT_DESC_INIT(2, 6);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 5, 1)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(6))};
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 2));
    plx_layer_view l = layer_of(PLX_OP_STFT, &d, ins, 1, &ty, 1);
    /* frame_length 6 over a signal of 5 */
    cr_assert(not(zero(ptr, (void *)plxk_check_stft(&l, buf, sizeof buf))));
    d.frame_length = 5;
    ty.dims[2] = 3;
    cr_assert(zero(ptr, (void *)plxk_check_stft(&l, buf, sizeof buf)), "%s", buf);
    l.input_count = 2; /* a window of 6 for frames of 5 */
    cr_assert(not(zero(ptr, (void *)plxk_check_stft(&l, buf, sizeof buf))));
}
