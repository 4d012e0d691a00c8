/* Tests of cpu_ref's resampling kernels, called directly with hand-built
 * layer views: grid_sample (kernels_grid_sample.c) and the resize modes
 * and coordinate transformations of ABI 1.3 (kernels_resize.c; the older
 * ones are tests/kernels/test_kernels_compute.c's). Hand-derived cases
 * (the derivation is in the comments) and seeded random cases checked
 * against references written here the way ONNX's reference
 * implementation works: grid_sample interpolates the outermost dim last,
 * over the values the inner dims' interpolations give for every index of
 * it, where the kernel sums the products of per-dim weights; resize picks
 * each point's neighbours by sorting the indices of an edge-padded line
 * by their distance, where the kernel computes a span. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "S1"
#include "kernel_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

/* uniform in [lo, hi) */
static float rnd_f(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 40) / (float)(1 << 24);
}

static void store_float(plx_dtype t, void *p, size_t i, float v) {
    if (t == PLX_DTYPE_FLOAT32) ((float *)p)[i] = v;
    else if (t == PLX_DTYPE_FLOAT16) ((uint16_t *)p)[i] = plx_float32_to_float16(v);
    else ((uint16_t *)p)[i] = plx_float32_to_bfloat16(v);
}
static float load_float(plx_dtype t, const void *p, size_t i) {
    if (t == PLX_DTYPE_FLOAT32) return ((const float *)p)[i];
    if (t == PLX_DTYPE_FLOAT16) return plx_float16_to_float32(((const uint16_t *)p)[i]);
    return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
}

static void expect_close(const float *got, const float *want, size_t n, double tol,
                         const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i]) || isnan(got[i])) {
            cr_assert(eq(int, isnan(want[i]) != 0, isnan(got[i]) != 0), "%s[%zu]: got %g want %g",
                      what, i, (double)got[i], (double)want[i]);
            continue;
        }
        double w = want[i], lim = tol * (fabs(w) > 1.0 ? fabs(w) : 1.0);
        cr_assert(le(dbl, fabs((double)got[i] - w), lim), "%s[%zu]: got %.9g want %.9g", what, i,
                  (double)got[i], w);
    }
}

#define BIG 20000
static uint8_t g_x[BIG * 4], g_grid[BIG * 4], g_y[BIG * 4];
static float g_xf[BIG], g_gf[BIG], g_want[BIG], g_got[BIG];

/* ---- grid_sample -------------------------------------------------------- */

static bool gs_run(plx_grid_sample_mode mode, plx_grid_sample_padding pad, bool align,
                   const plx_tensor_info *x, const plx_tensor_info *grid, const plx_tensor_info *y,
                   const void *px, const void *pg, void *py) {
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    d.mode = mode;
    d.padding = pad;
    d.align_corners = align;
    plx_tensor_info ins[2] = {*x, *grid};
    plx_layer_view l = layer_of(PLX_OP_GRID_SAMPLE, &d, ins, 2, y, 1);
    const void *in_ptrs[] = {px, pg};
    void *outs[] = {py};
    return run_layer(plxk_run_grid_sample, &l, in_ptrs, outs);
}

/* X = [[1, 2], [3, 4]] sampled at five points (x, y): the corners (-1, -1)
 * and (1, 1), the centre (0, 0), the top right corner (1, -1) and
 * (0.5, -0.25).
 *
 * align_corners: g -> (g + 1) / 2 * (2 - 1), so the points fall on
 * (w, h) = (0, 0), (1, 1), (0.5, 0.5), (1, 0), (0.75, 0.375). Linear:
 * 1, 4, the mean 2.5, 2, and (1 - .375)(1 + .75) + .375(3 + .75) = 2.5.
 * Without: g -> ((g + 1) * 2 - 1) / 2, the corners move half a pixel
 * out, to -0.5 and 1.5: with zeros padding (-1, -1) weighs X[0][0] by
 * 0.5 * 0.5 and the rest is outside: 0.25; (1, 1) likewise 0.25 * 4 = 1;
 * (1, -1) 0.25 * 2 = 0.5; (0.5, -0.25) falls on (1, 0.25): 2.5 again.
 * Border and reflection read the outside taps at -1 and 2 as 0 and 1:
 * the corners' own values.
 *
 * Nearest without align_corners: (0, 0) falls on (0.5, 0.5), which
 * rounds half to even, to (0, 0): 1; (1, 1) on (1.5, 1.5), rounded to 2:
 * outside, 0 with zeros padding, clamped (border) or mirrored at 1.5
 * (reflection) to 1: 4; (0.5, -0.25) on (1, 0.25): X[0][1] = 2.
 *
 * Cubic with align_corners at (0.5, 0.5): Keys' weights (a = -0.75) at
 * t = 0.5 are -0.09375, 0.59375, 0.59375, -0.09375 on -1, 0, 1, 2.
 * Zeros padding keeps the middle two along each dim: 0.59375^2 * (1 + 2 +
 * 3 + 4) = 3.525390625; border folds -1 onto 0 and 2 onto 1, 0.5 each:
 * 2.5. On whole coordinates (the corners) the weights are 0, 1, 0, 0:
 * the values themselves. */
Test(grid_sample, hand_modes_paddings_align) {
    float x[4] = {1, 2, 3, 4};
    float g[10] = {-1, -1, 1, 1, 0, 0, 1, -1, 0.5f, -0.25f};
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2, 2));
    plx_tensor_info tg = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 5, 2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 1, 5));
    struct {
        plx_grid_sample_mode mode;
        plx_grid_sample_padding pad;
        bool align;
        float want[5];
    } cases[] = {
        {PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_ZEROS, true, {1, 4, 2.5f, 2, 2.5f}},
        {PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_ZEROS, false, {0.25f, 1, 2.5f, 0.5f, 2.5f}},
        {PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_BORDER, false, {1, 4, 2.5f, 2, 2.5f}},
        {PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_REFLECTION, false, {1, 4, 2.5f, 2, 2.5f}},
        {PLX_GRID_SAMPLE_NEAREST, PLX_GRID_SAMPLE_ZEROS, false, {1, 0, 1, 0, 2}},
        {PLX_GRID_SAMPLE_NEAREST, PLX_GRID_SAMPLE_BORDER, false, {1, 4, 1, 2, 2}},
        {PLX_GRID_SAMPLE_NEAREST, PLX_GRID_SAMPLE_REFLECTION, false, {1, 4, 1, 2, 2}},
        {PLX_GRID_SAMPLE_CUBIC, PLX_GRID_SAMPLE_ZEROS, true, {1, 4, 3.525390625f, 2, NAN}},
        {PLX_GRID_SAMPLE_CUBIC, PLX_GRID_SAMPLE_BORDER, true, {1, 4, 2.5f, 2, NAN}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float y[5];
        cr_assert(gs_run(cases[i].mode, cases[i].pad, cases[i].align, &tx, &tg, &ty, x, g, y),
                  "%s", g_err);
        for (int k = 0; k < 5; k++) {
            if (isnan(cases[i].want[k])) {
                continue; /* not derived by hand: the random test covers it */
            }
            cr_assert(le(flt, fabsf(y[k] - cases[i].want[k]), 1e-6f),
                      "case %zu point %d: got %.9g want %.9g", i, k, (double)y[k],
                      (double)cases[i].want[k]);
        }
    }
}

/* Reflection far out: along a dim of 3 without align_corners the borders
 * are -0.5 and 2.5, a range of 3. Nearest at g = -3 falls on ((-2) * 3 -
 * 1) / 2 = -3.5, rounded half to even to -4: 3.5 before -0.5, one range
 * and 0.5 more, so it reflects off both borders to 2.5 - 0.5 = 2. At
 * g = 3: (4 * 3 - 1) / 2 = 5.5, rounded to 6: 3.5 past 2.5, to -0.5 + 0.5
 * = 0. A dim of size 1 with align_corners has no range: every point
 * reads index 0. */
Test(grid_sample, reflection_far_out_and_single_pixel) {
    float x[3] = {10, 20, 30}, g[2] = {-3, 3}, y[2];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3));
    plx_tensor_info tg = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 1));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2));
    cr_assert(gs_run(PLX_GRID_SAMPLE_NEAREST, PLX_GRID_SAMPLE_REFLECTION, false, &tx, &tg, &ty,
                     x, g, y), "%s", g_err);
    cr_assert(eq(flt, y[0], 30.0f));
    cr_assert(eq(flt, y[1], 10.0f));
    tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 1));
    for (int mode = 0; mode < 3; mode++) {
        cr_assert(gs_run((plx_grid_sample_mode)mode, PLX_GRID_SAMPLE_REFLECTION, true, &tx, &tg,
                         &ty, x, g, y), "%s", g_err);
        cr_assert(le(flt, fabsf(y[0] - 10.0f), 1e-5f), "mode %d: %g", mode, (double)y[0]);
        cr_assert(le(flt, fabsf(y[1] - 10.0f), 1e-5f), "mode %d: %g", mode, (double)y[1]);
    }
}

/* A NaN coordinate gives NaN in every channel; infinite ones read as far
 * outside (0 with zeros padding, the border value with border padding). */
Test(grid_sample, nan_and_infinite_coordinates) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float g[6] = {NAN, 0, INFINITY, 0, -INFINITY, 0};
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 2, 2));
    plx_tensor_info tg = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3, 2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 1, 3));
    float y[6];
    for (int mode = 0; mode < 3; mode++) {
        cr_assert(gs_run((plx_grid_sample_mode)mode, PLX_GRID_SAMPLE_ZEROS, false, &tx, &tg, &ty,
                         x, g, y), "%s", g_err);
        cr_assert(isnan(y[0]) && isnan(y[3]), "mode %d", mode);
        cr_assert(eq(flt, y[1], 0.0f));
        cr_assert(eq(flt, y[2], 0.0f));
        cr_assert(gs_run((plx_grid_sample_mode)mode, PLX_GRID_SAMPLE_BORDER, true, &tx, &tg, &ty,
                         x, g, y), "%s", g_err);
        /* x = +inf: the right column; y = 0 falls halfway between the
         * rows (their mean; nearest rounds the half to even: row 0) */
        cr_assert(le(flt, fabsf(y[1] - (mode == 1 ? 2.0f : 3.0f)), 1e-5f), "mode %d: %g", mode,
                  (double)y[1]);
        cr_assert(le(flt, fabsf(y[4] - (mode == 1 ? 6.0f : 7.0f)), 1e-5f), "mode %d: %g", mode,
                  (double)y[4]);
        cr_assert(gs_run((plx_grid_sample_mode)mode, PLX_GRID_SAMPLE_REFLECTION, false, &tx, &tg,
                         &ty, x, g, y), "%s", g_err);
        cr_assert(not(isnan(y[1]) || isnan(y[2])), "mode %d", mode);
    }
}

/* ---- the reference ----------------------------------------------------- */

typedef struct ref_gs {
    plx_grid_sample_mode mode;
    plx_grid_sample_padding pad;
    bool align;
} ref_gs;

/* ONNX's _gs_reflect, with its int() of the whole ranges crossed. */
static double ref_reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (rng == 0.0) {
        return lo;
    }
    if (x < lo) {
        double dx = lo - x;
        long long n = (long long)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        long long n = (long long)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

/* _pixel_at_array: the value at index i of a line of n values `v`. */
static double ref_pixel(const ref_gs *m, const double *v, int64_t n, int64_t i, double lo,
                        double hi) {
    if (m->pad == PLX_GRID_SAMPLE_ZEROS) {
        return i >= 0 && i < n ? v[i] : 0.0;
    }
    if (m->pad == PLX_GRID_SAMPLE_BORDER) {
        return v[i < 0 ? 0 : i > n - 1 ? n - 1 : i];
    }
    return v[(int64_t)ref_reflect((double)i, lo, hi)];
}

/* 1-D interpolation of the line v at x (_gs_linear/cubic_interpolation_1d_with_x). */
static double ref_1d(const ref_gs *m, const double *v, int64_t n, double x, double lo, double hi) {
    if (m->mode == PLX_GRID_SAMPLE_NEAREST) {
        return ref_pixel(m, v, n, (int64_t)x, lo, hi);
    }
    int64_t x0 = (int64_t)floor(x);
    double t = x - (double)x0;
    if (m->mode == PLX_GRID_SAMPLE_LINEAR) {
        return (1 - t) * ref_pixel(m, v, n, x0, lo, hi) + t * ref_pixel(m, v, n, x0 + 1, lo, hi);
    }
    const double a = -0.75;
    double c[4] = {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1,
                   ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                   ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
    double s = 0;
    for (int k = 0; k < 4; k++) {
        s += c[k] * ref_pixel(m, v, n, x0 - 1 + k, lo, hi);
    }
    return s;
}

/* The N-D interpolation of the r-dim block at `data` (dims, row-major) at
 * coordinates xs: every index of the outer dim interpolated over the
 * inner dims first, then one 1-D interpolation over those values. */
static double ref_nd(const ref_gs *m, const float *data, const int64_t *dims, uint32_t r,
                     const double *xs) {
    double lo = m->align ? 0.0 : -0.5;
    double hi = m->align ? (double)dims[0] - 1 : (double)dims[0] - 0.5;
    double line[64];
    int64_t inner = 1;
    for (uint32_t k = 1; k < r; k++) {
        inner *= dims[k];
    }
    for (int64_t i = 0; i < dims[0]; i++) {
        line[i] = r == 1 ? (double)data[i] : ref_nd(m, data + i * inner, dims + 1, r - 1, xs + 1);
    }
    return ref_1d(m, line, dims[0], xs[0], lo, hi);
}

/* Y of X (float values xf, [N, C, dims]) sampled at grid (float values
 * gf, [N, points, r]) into want. */
static void ref_grid_sample(const ref_gs *m, const float *xf, const float *gf, int64_t nb,
                            int64_t nc, const int64_t *dims, uint32_t r, int64_t points,
                            float *want) {
    int64_t plane = 1;
    for (uint32_t k = 0; k < r; k++) {
        plane *= dims[k];
    }
    for (int64_t n = 0; n < nb; n++) {
        for (int64_t p = 0; p < points; p++) {
            double xs[8];
            for (uint32_t k = 0; k < r; k++) {
                /* the grid holds x, y, z: reversed */
                float g = gf[(n * points + p) * r + (r - 1 - k)];
                float len = (float)dims[k];
                float xk = m->align ? (g + 1) / 2.0f * (len - 1) : ((g + 1) * len - 1) / 2.0f;
                if (m->mode == PLX_GRID_SAMPLE_NEAREST) {
                    xk = rintf(xk);
                }
                double lo = m->align ? 0.0 : -0.5;
                double hi = m->align ? (double)dims[k] - 1 : (double)dims[k] - 0.5;
                double v = xk;
                if (v < lo || v > hi) {
                    if (m->pad == PLX_GRID_SAMPLE_BORDER) {
                        v = v < 0 ? 0 : v > (double)dims[k] - 1 ? (double)dims[k] - 1 : v;
                    } else if (m->pad == PLX_GRID_SAMPLE_REFLECTION) {
                        v = ref_reflect(v, lo, hi);
                    }
                }
                xs[k] = (float)v;
            }
            for (int64_t c = 0; c < nc; c++) {
                want[(n * nc + c) * points + p] =
                    (float)ref_nd(m, xf + (n * nc + c) * plane, dims, r, xs);
            }
        }
    }
}

/* 1 to 3 spatial dims, every mode, padding and alignment, grid points
 * mostly within [-1.3, 1.3] (inside and just outside X) and some far out
 * (reflections several ranges away); X float32, float16 or bfloat16, the
 * grid of its own float type. The half types compare with the reference
 * on the values they hold, within their precision. */
Test(grid_sample, random_against_reference) {
    seed(3);
    static const plx_dtype fts[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16};
    for (int rep = 0; rep < 400; rep++) {
        ref_gs m = {(plx_grid_sample_mode)(rep % 3), (plx_grid_sample_padding)(rep / 3 % 3),
                    rep / 9 % 2 != 0};
        uint32_t r = (uint32_t)rnd_i(1, 3);
        plx_dtype xt = rep % 5 == 4 ? fts[rnd_i(1, 2)] : PLX_DTYPE_FLOAT32;
        plx_dtype gt = rep % 7 == 6 ? fts[rnd_i(0, 2)] : PLX_DTYPE_FLOAT32;
        int64_t nb = rnd_i(1, 2), nc = rnd_i(1, 3), dims[3], odims[3];
        int64_t plane = 1, points = 1;
        for (uint32_t k = 0; k < r; k++) {
            dims[k] = rnd_i(1, r == 3 ? 4 : 6);
            odims[k] = rnd_i(1, r == 3 ? 3 : 5);
            plane *= dims[k];
            points *= odims[k];
        }
        int64_t xdims[5] = {nb, nc}, gdims[5] = {nb}, ydims[5] = {nb, nc};
        for (uint32_t k = 0; k < r; k++) {
            xdims[2 + k] = dims[k];
            gdims[1 + k] = odims[k];
            ydims[2 + k] = odims[k];
        }
        gdims[1 + r] = r;
        plx_tensor_info tx = info(xt, xdims, r + 2), tg = info(gt, gdims, r + 2),
                        ty = info(xt, ydims, r + 2);
        size_t nx = (size_t)(nb * nc * plane), ng = (size_t)(nb * points * r),
               ny = (size_t)(nb * nc * points);
        for (size_t i = 0; i < nx; i++) {
            store_float(xt, g_x, i, rnd_f(-4, 4));
            g_xf[i] = load_float(xt, g_x, i);
        }
        for (size_t i = 0; i < ng; i++) {
            float v = rnd() % 8 == 0 ? rnd_f(-6, 6) : rnd_f(-1.3f, 1.3f);
            if (rnd() % 10 == 0) {
                v = (float)rnd_i(-4, 4) / 4.0f; /* on pixel centres and halves */
            }
            store_float(gt, g_grid, i, v);
            g_gf[i] = load_float(gt, g_grid, i);
        }
        cr_assert(gs_run(m.mode, m.pad, m.align, &tx, &tg, &ty, g_x, g_grid, g_y),
                  "rep %d: %s", rep, g_err);
        ref_grid_sample(&m, g_xf, g_gf, nb, nc, dims, r, points, g_want);
        for (size_t i = 0; i < ny; i++) {
            g_got[i] = load_float(xt, g_y, i);
        }
        char what[96];
        snprintf(what, sizeof what, "rep %d (mode %d pad %d align %d r %u %s)", rep, m.mode, m.pad,
                 m.align, r, plx_dtype_name(xt));
        expect_close(g_got, g_want, ny,
                     xt == PLX_DTYPE_FLOAT32 ? 1e-5 : xt == PLX_DTYPE_FLOAT16 ? 4e-3 : 2e-2, what);
    }
}

/* A larger case (many points, many channels) that the pool of
 * CPU_REF_TEST_THREADS threads splits, and 4 spatial dims with cubic
 * taps (256 combinations, walked per channel rather than listed). */
Test(grid_sample, large_and_four_dims) {
    seed(5);
    ref_gs m = {PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_BORDER, false};
    int64_t dims[2] = {9, 11};
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(2, 8, 9, 11));
    plx_tensor_info tg = info(PLX_DTYPE_FLOAT32, SHAPE(2, 30, 20, 2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(2, 8, 30, 20));
    float *x = (float *)(void *)g_x, *g = (float *)(void *)g_grid, *y = (float *)(void *)g_y;
    for (size_t i = 0; i < 2 * 8 * 99; i++) x[i] = rnd_f(-1, 1);
    for (size_t i = 0; i < 2 * 600 * 2; i++) g[i] = rnd_f(-1.2f, 1.2f);
    cr_assert(gs_run(m.mode, m.pad, m.align, &tx, &tg, &ty, x, g, y), "%s", g_err);
    ref_grid_sample(&m, x, g, 2, 8, dims, 2, 600, g_want);
    expect_close(y, g_want, 2 * 8 * 600, 1e-5, "large");

    /* 4 spatial dims, cubic: the kernel's walk; the reference recurses */
    plx_tensor_info x4 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 3, 2, 3, 2));
    plx_tensor_info g4 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 1, 2, 1, 4));
    plx_tensor_info y4 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 2, 1, 2, 1));
    for (size_t i = 0; i < 72; i++) x[i] = rnd_f(-1, 1);
    for (size_t i = 0; i < 16; i++) g[i] = rnd_f(-1.1f, 1.1f);
    int64_t d4[4] = {3, 2, 3, 2};
    for (int pad = 0; pad < 3; pad++) {
        ref_gs m4 = {PLX_GRID_SAMPLE_CUBIC, (plx_grid_sample_padding)pad, pad == 1};
        cr_assert(gs_run(m4.mode, m4.pad, m4.align, &x4, &g4, &y4, x, g, y), "%s", g_err);
        ref_grid_sample(&m4, x, g, 1, 2, d4, 4, 4, g_want);
        expect_close(y, g_want, 8, 1e-5, "4-D cubic");
    }
}

/* Empty tensors: no points (or no channels) is nothing to do; an empty
 * spatial dim to sample from is refused. */
Test(grid_sample, empty_and_refusals) {
    char buf[200];
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    plx_tensor_info ins[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 3, 3)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(1, 0, 4, 2))};
    plx_tensor_info y = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 0, 4));
    plx_layer_view l = layer_of(PLX_OP_GRID_SAMPLE, &d, ins, 2, &y, 1);
    cr_assert(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf)));
    float px[18] = {0}, pg[1] = {0}, py[1] = {0};
    const void *in_ptrs[] = {px, pg};
    void *outs[] = {py};
    cr_assert(run_layer(plxk_run_grid_sample, &l, in_ptrs, outs), "%s", g_err);
    /* X [1, 2, 0, 3] with points to sample */
    ins[0] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 0, 3));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 2));
    y = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 1, 4));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "grid_sample: X has an empty spatial dim to sample from"));
    cr_assert(not(run_layer(plxk_run_grid_sample, &l, in_ptrs, outs)));
    cr_assert(eq(str, g_err, "grid_sample: X has an empty spatial dim to sample from"));
    /* dtypes: integers, and Y not of X's */
    ins[0] = info(PLX_DTYPE_INT32, SHAPE(1, 2, 3, 3));
    y = info(PLX_DTYPE_INT32, SHAPE(1, 2, 1, 4));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "grid_sample: X int32, grid float32 and Y int32 must be float32, "
                 "float16 or bfloat16, Y X's"));
    ins[0] = info(PLX_DTYPE_FLOAT16, SHAPE(1, 2, 3, 3));
    cr_assert(not(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf))));
    y.dtype = PLX_DTYPE_FLOAT16;
    cr_assert(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf)));
    /* shapes: the grid's last dim must be the spatial rank, N must agree */
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 3));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "grid_sample: X, grid and Y must be [N, C, D1..Dr], [N, O1..Or, r] and "
                 "[N, C, O1..Or]"));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(2, 1, 4, 2));
    cr_assert(not(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf))));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 5, 2));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "grid_sample: Y's spatial dims must be grid's"));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 2));
    d.mode = (plx_grid_sample_mode)3;
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "grid_sample: mode 3 or padding 0 is unknown"));
}

/* ---- resize: the ABI 1.3 modes and coordinates ------------------------ */

typedef struct rs_case {
    plx_resize_desc d;
    int64_t in[2], out[2];
} rs_case;

static bool rs_run(const plx_resize_desc *d, int64_t nc, const int64_t in[2],
                   const int64_t out[2], const float *px, float *py) {
    plx_tensor_info x = info(PLX_DTYPE_FLOAT32, (const int64_t[]){1, nc, in[0], in[1]}, 4);
    plx_tensor_info y = info(PLX_DTYPE_FLOAT32, (const int64_t[]){1, nc, out[0], out[1]}, 4);
    plx_layer_view l = layer_of(PLX_OP_RESIZE, d, &x, 1, &y, 1);
    const void *ins[] = {px};
    void *outs[] = {py};
    return run_layer(plxk_run_resize, &l, ins, outs);
}

/* Cubic (a = -0.75), W doubled with asymmetric coordinates, X = [0, 10,
 * 20, 40]: output 1 falls on 0.5, where Keys' weights are -0.09375,
 * 0.59375, 0.59375, -0.09375 on -1, 0, 1, 2; -1 reads the edge 0:
 * 0.5 * 0 + 0.59375 * 10 - 0.09375 * 20 = 4.0625. Output 7 falls on 3.5:
 * -0.09375 * 20 + (0.59375 + 0.59375 - 0.09375) * 40 = 41.875 (4 and 5
 * read 3). With exclude_outside those taps weigh 0 and the rest are
 * divided by their sum: (0.59375 * 10 - 0.09375 * 20) / 1.09375 =
 * 3.7142857 and (-0.09375 * 20 + 0.59375 * 40) / 0.5 = 43.75. Whole
 * coordinates read their point: 0, 10, 20, 40 at 0, 2, 4, 6. (ONNX's
 * reference gives the same.) */
Test(resize, hand_cubic_and_exclude_outside) {
    float x[4] = {0, 10, 20, 40}, y[8];
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_CUBIC);
    d.coord = PLX_RESIZE_COORD_ASYMMETRIC;
    d.scales[0] = 1.0f;
    d.scales[1] = 2.0f;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, x, y), "%s", g_err);
    expect_close(y, (const float[]){0, 4.0625f, 10, 14.0625f, 20, 30.9375f, 40, 41.875f}, 8, 1e-6,
                 "cubic");
    d.exclude_outside = true;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, x, y), "%s", g_err);
    expect_close(y, (const float[]){0, 3.7142857f, 10, 14.0625f, 20, 31.714285f, 40, 43.75f}, 8,
                 1e-6, "cubic exclude_outside");
}

/* Linear antialiased, [1, 2, 3, 4] halved (half_pixel): output 0 falls
 * on 0.5; the filter stretched by 2 reaches 2 points either side, at -1,
 * 0, 1, 2 (distances 1.5, 0.5, 0.5, 1.5, times the scale 0.75, 0.25,
 * 0.25, 0.75), weighing 1 - that: 0.25, 0.75, 0.75, 0.25, divided by
 * their sum 2; -1 reads the edge: 0.125 + 0.375 + 0.75 + 0.375 = 1.625.
 * Output 1 falls on 2.5: 0.25 + 1.125 + 1.5 + 0.5 = 3.375. */
Test(resize, hand_linear_antialias) {
    float x[4] = {1, 2, 3, 4}, y[2];
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR_ANTIALIAS);
    d.scales[0] = 1.0f;
    d.scales[1] = 0.5f;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 4}, (const int64_t[]){1, 2}, x, y), "%s", g_err);
    expect_close(y, (const float[]){1.625f, 3.375f}, 2, 1e-6, "linear antialias");
    /* upscaling, the antialiased mode is plain linear */
    float up[8], plain[8];
    d.scales[1] = 2.0f;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, x, up), "%s", g_err);
    d.mode = PLX_RESIZE_LINEAR;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, x, plain), "%s",
              g_err);
    expect_close(up, plain, 8, 1e-6, "antialias upscaling");
}

/* tf_crop_and_resize, W [0, 10, 20, 30, 40] cropped to roi [0.25, 1.25]
 * and resized to 3: x_in = 0.25 * 4 + x * 1.0 * 4 / 2 = 1, 3, 5; 5 is
 * past the last point 4: the extrapolation value 7. H (1 point, roi
 * [0, 1]) falls on 0. */
Test(resize, hand_tf_crop_and_resize) {
    float x[5] = {0, 10, 20, 30, 40}, y[3];
    for (int mode = 0; mode < 3; mode++) {
        plx_resize_desc d = PLX_RESIZE_DESC_INIT((plx_resize_mode)mode);
        d.coord = PLX_RESIZE_COORD_TF_CROP_AND_RESIZE;
        d.sizes[0] = 1;
        d.sizes[1] = 3;
        d.roi_start[1] = 0.25f;
        d.roi_end[1] = 1.25f;
        d.extrapolation_value = 7.0f;
        cr_assert(rs_run(&d, 1, (const int64_t[]){1, 5}, (const int64_t[]){1, 3}, x, y), "%s",
                  g_err);
        expect_close(y, (const float[]){10, 30, 7}, 3, 1e-6, "tf_crop_and_resize");
    }
}

/* half_pixel_symmetric: [1, 2] times 2.3 is 4 points (floor 4.6); the
 * half_pixel coordinates shift by in / 2 * (1 - 4 / 4.6) = 0.1304348:
 * -0.152, 0.283, 0.717, 1.152, linear 1 (the edge), 1.2826087,
 * 1.7173913, 2 (half_pixel alone: 1, 1.1521739, 1.5869565, 2). */
Test(resize, hand_half_pixel_symmetric) {
    float x[2] = {1, 2}, y[4];
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.coord = PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC;
    d.scales[0] = 1.0f;
    d.scales[1] = 2.3f;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 2}, (const int64_t[]){1, 4}, x, y), "%s", g_err);
    expect_close(y, (const float[]){1, 1.2826087f, 1.7173913f, 2}, 4, 1e-6, "symmetric");
    d.coord = PLX_RESIZE_COORD_HALF_PIXEL;
    cr_assert(rs_run(&d, 1, (const int64_t[]){1, 2}, (const int64_t[]){1, 4}, x, y), "%s", g_err);
    expect_close(y, (const float[]){1, 1.1521739f, 1.5869565f, 2}, 4, 1e-6, "half_pixel");
}

/* Nearest on int8 and uint8 moves the same elements as on float32: scales
 * 2 (the doubled-column loop), 3, 0.5 and 1.7 x 2.5, every nearest mode
 * and coordinate; linear and tf_crop_and_resize stay float32 only. */
Test(resize, nearest_on_8_bit_matches_float32) {
    static const float scales[][2] = {{2, 2}, {3, 3}, {0.5f, 0.5f}, {1.7f, 2.5f}};
    const int64_t in[2] = {4, 6};
    float xf[2 * 24], yf[2 * 15 * 18];
    uint8_t xb[2 * 24], yb[2 * 15 * 18];
    for (int i = 0; i < 48; i++) {
        xb[i] = (uint8_t)(i * 37 + 5);
    }
    for (int t = 0; t < 2; t++) {
        plx_dtype dt = t ? PLX_DTYPE_UINT8 : PLX_DTYPE_INT8;
        for (int i = 0; i < 48; i++) {
            xf[i] = t ? (float)xb[i] : (float)(int8_t)xb[i];
        }
        for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
            for (int m = 0; m <= (int)PLX_RESIZE_NEAREST_CEIL; m++) {
                plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
                d.nearest = (plx_resize_nearest)m;
                d.coord = m % 2 ? PLX_RESIZE_COORD_ASYMMETRIC : PLX_RESIZE_COORD_HALF_PIXEL;
                d.scales[0] = scales[k][0];
                d.scales[1] = scales[k][1];
                int64_t out[2] = {(int64_t)(4 * scales[k][0]), (int64_t)(6 * scales[k][1])};
                cr_assert(rs_run(&d, 2, in, out, xf, yf), "%s", g_err);
                plx_tensor_info x = info(dt, (const int64_t[]){1, 2, in[0], in[1]}, 4);
                plx_tensor_info y = info(dt, (const int64_t[]){1, 2, out[0], out[1]}, 4);
                plx_layer_view l = layer_of(PLX_OP_RESIZE, &d, &x, 1, &y, 1);
                const void *ins[] = {xb};
                void *outs[] = {yb};
                cr_assert(run_layer(plxk_run_resize, &l, ins, outs), "%s", g_err);
                for (int64_t i = 0; i < 2 * out[0] * out[1]; i++) {
                    float got = t ? (float)yb[i] : (float)(int8_t)yb[i];
                    cr_assert(eq(flt, got, yf[i]), "%s scale %zu mode %d element %lld",
                              plx_dtype_name(dt), k, m, (long long)i);
                }
            }
        }
    }
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.scales[0] = d.scales[1] = 2.0f;
    plx_tensor_info x = info(PLX_DTYPE_UINT8, (const int64_t[]){1, 1, 2, 2}, 4);
    plx_tensor_info y = info(PLX_DTYPE_UINT8, (const int64_t[]){1, 1, 4, 4}, 4);
    plx_layer_view l = layer_of(PLX_OP_RESIZE, &d, &x, 1, &y, 1);
    char buf[160];
    cr_assert(eq(str, (char *)plxk_check_resize(&l, buf, sizeof buf),
                 "runs resize in float32 only, not uint8 (input 0)"));
    d.mode = PLX_RESIZE_NEAREST;
    d.coord = PLX_RESIZE_COORD_TF_CROP_AND_RESIZE;
    cr_assert(eq(str, (char *)plxk_check_resize(&l, buf, sizeof buf),
                 "resize: uint8 with tf_crop_and_resize runs in float32 only"));
}

/* Sizes with one scale (ONNX's keep_aspect_ratio_policy not_smaller on
 * [1..8] as 2x4 to at least 1x3): the scale max(1/2, 3/4) = 0.75 maps
 * coordinates, the sizes round(0.75 * 2, 0.75 * 4) = 2x3 size Y.
 * Nearest half_pixel: H at 0.1667, 1.5 -> 0, 1 (halves down); W at
 * 0.1667, 1.5, 2.8333 -> 0, 1, 3. */
Test(resize, hand_sizes_with_a_scale) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[6];
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    d.sizes[0] = 2;
    d.sizes[1] = 3;
    d.scales[0] = d.scales[1] = 0.75f;
    cr_assert(rs_run(&d, 1, (const int64_t[]){2, 4}, (const int64_t[]){2, 3}, x, y), "%s", g_err);
    expect_close(y, (const float[]){1, 2, 4, 5, 6, 8}, 6, 0, "keep aspect");
}

/* ONNX's reference implementation of Resize, along one dim. */
static double rs_keys(double x, double a) {
    x = fabs(x);
    if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0;
}

static double rs_ref_1d(const plx_resize_desc *d, int dim, const double *data, int64_t in,
                        double scale, int64_t out_int, int64_t x) {
    double out_len = scale * (double)in, xo;
    double xd = (double)x;
    switch (d->coord) {
    case PLX_RESIZE_COORD_ALIGN_CORNERS:
        xo = out_len == 1 ? 0 : xd * (double)(in - 1) / (out_len - 1);
        break;
    case PLX_RESIZE_COORD_ASYMMETRIC: xo = xd / scale; break;
    case PLX_RESIZE_COORD_TF_CROP_AND_RESIZE: {
        double r0 = d->roi_start[dim], r1 = d->roi_end[dim];
        xo = out_len == 1 ? (r1 - r0) * (double)(in - 1) / 2
                          : xd * (r1 - r0) * (double)(in - 1) / (out_len - 1);
        xo += r0 * (double)(in - 1);
        if (xo < 0 || xo > (double)(in - 1)) {
            return d->extrapolation_value;
        }
        break;
    }
    case PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL:
        xo = out_len == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
        break;
    case PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN: xo = (xd + 0.5) / scale; break;
    case PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out_int / out_len, centre = (double)in / 2;
        xo = centre * (1 - adj) + (xd + 0.5) / scale - 0.5;
        break;
    }
    default: xo = (xd + 0.5) / scale - 0.5; break;
    }
    double xi = floor(xo);
    double ratio = xo == xi ? 1.0 : xo - xi;
    double c[512];
    int n;
    double s = scale < 1 ? scale : 1, a = d->cubic_coeff_a;
    switch (d->mode) {
    case PLX_RESIZE_NEAREST:
        n = 2;
        if (ratio == 1.0) {
            c[0] = 0, c[1] = 1;
        } else if (d->nearest == PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR) {
            c[0] = ratio <= 0.5, c[1] = ratio > 0.5;
        } else if (d->nearest == PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL) {
            c[0] = ratio < 0.5, c[1] = ratio >= 0.5;
        } else if (d->nearest == PLX_RESIZE_NEAREST_FLOOR) {
            c[0] = 1, c[1] = 0;
        } else {
            c[0] = 0, c[1] = 1;
        }
        break;
    case PLX_RESIZE_LINEAR: n = 2, c[0] = 1 - ratio, c[1] = ratio; break;
    case PLX_RESIZE_CUBIC:
        n = 4;
        for (int k = 0; k < 4; k++) c[k] = rs_keys((double)(k - 1) - ratio, a);
        break;
    case PLX_RESIZE_LINEAR_ANTIALIAS: {
        int start = (int)(floor(-1 / s) + 1);
        n = 2 - 2 * start;
        double sum = 0;
        for (int k = 0; k < n; k++) {
            double v = 1 - fabs(((double)(start + k) - ratio) * s);
            c[k] = v < 0 ? 0 : v > 1 ? 1 : v;
            sum += c[k];
        }
        for (int k = 0; k < n; k++) c[k] /= sum;
        break;
    }
    default: {
        int start = (int)(floor(-2 / s) + 1);
        n = 2 - 2 * start;
        double sum = 0;
        for (int k = 0; k < n; k++) {
            c[k] = rs_keys(s * ((double)(start + k) - ratio), a);
            sum += c[k];
        }
        for (int k = 0; k < n; k++) c[k] /= sum;
        break;
    }
    }
    /* the n indices of the edge-padded line nearest xo, the lower on
     * ties, in ascending order. (ONNX's reference adds the padding to xo
     * first, which can round away a distance of 2^-51 and flip a pick:
     * half_pixel_symmetric's 3 + 2^-51 there reads index 2, here and in
     * the kernel 3. The distances here are taken from xo itself.) */
    int pad = (n + 1) / 2;
    int64_t len = in + 2 * pad;
    int64_t idx[512];
    bool taken[600] = {false};
    for (int k = 0; k < n; k++) {
        int64_t best = -1;
        for (int64_t i = 0; i < len; i++) {
            double di = fabs(xo - (double)(i - pad)), db = fabs(xo - (double)(best - pad));
            if (!taken[i] && (best < 0 || di < db)) {
                best = i;
            }
        }
        taken[best] = true;
    }
    for (int64_t i = 0, k = 0; i < len; i++) {
        if (taken[i]) idx[k++] = i - pad;
    }
    /* nearest ignores exclude_outside (plexus/ops.h; ONNX's reference
     * divides by 0 where its point is outside); linear reads the same
     * either way, which the reference here checks */
    if (d->exclude_outside && d->mode != PLX_RESIZE_NEAREST) {
        double sum = 0;
        for (int k = 0; k < n; k++) {
            if (idx[k] < 0 || idx[k] >= in) c[k] = 0;
            sum += c[k];
        }
        for (int k = 0; k < n; k++) c[k] /= sum;
    }
    double v = 0;
    for (int k = 0; k < n; k++) {
        int64_t i = idx[k] < 0 ? 0 : idx[k] >= in ? in - 1 : idx[k];
        v += c[k] * data[i];
    }
    return v;
}

/* Every ABI 1.3 mode and coordinate (and the older coordinates with the
 * new modes), with scales up and down, sizes, and sizes with a scale,
 * exclude_outside and two cubic coefficients, on 1 to 3 planes; the
 * reference resizes W first (every row), then H. */
Test(resize, random_new_modes_against_reference) {
    seed(9);
    for (int rep = 0; rep < 600; rep++) {
        plx_resize_mode mode = (plx_resize_mode)(rep % 5);
        plx_resize_coord coord = (plx_resize_coord)(rep / 5 % 7);
        if (mode <= PLX_RESIZE_LINEAR && coord < PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC) {
            coord = PLX_RESIZE_COORD_TF_CROP_AND_RESIZE - (rep & 1);
        }
        plx_resize_desc d = PLX_RESIZE_DESC_INIT(mode);
        d.coord = coord;
        d.nearest = (plx_resize_nearest)rnd_i(0, 3);
        d.exclude_outside = rnd() & 1;
        d.cubic_coeff_a = rnd() & 1 ? -0.75f : -0.5f;
        d.extrapolation_value = rnd_f(-2, 2);
        int64_t in[2], out[2];
        int how = (int)rnd_i(0, 2); /* scales, sizes, both */
        for (int k = 0; k < 2; k++) {
            in[k] = rnd_i(1, 7);
            float sc = rnd() % 3 == 0 ? rnd_f(0.15f, 1.0f) : rnd_f(0.3f, 3.0f);
            out[k] = (int64_t)((double)in[k] * (double)sc);
            if (out[k] < 1) {
                out[k] = 1;
                sc = 1.0f / (float)in[k] + 0.01f;
                out[k] = (int64_t)((double)in[k] * (double)sc);
            }
            if (how != 1) {
                d.scales[k] = sc;
            }
            if (how != 0) {
                if (how == 1) {
                    out[k] = rnd_i(1, 12);
                }
                d.sizes[k] = out[k];
            }
            d.roi_start[k] = rnd_f(-0.3f, 0.6f);
            d.roi_end[k] = rnd_f(0.4f, 1.3f);
        }
        int64_t nc = rnd_i(1, 3);
        for (int64_t i = 0; i < nc * in[0] * in[1]; i++) g_xf[i] = rnd_f(-3, 3);
        cr_assert(rs_run(&d, nc, in, out, g_xf, g_got), "rep %d: %s", rep, g_err);
        /* the reference, in double */
        double scale[2], row[64], col[64];
        for (int k = 0; k < 2; k++) {
            scale[k] = d.scales[k] > 0 ? (double)d.scales[k] : (double)out[k] / (double)in[k];
        }
        for (int64_t p = 0; p < nc; p++) {
            const float *src = g_xf + p * in[0] * in[1];
            for (int64_t oh = 0; oh < out[0]; oh++) {
                for (int64_t ow = 0; ow < out[1]; ow++) {
                    for (int64_t ih = 0; ih < in[0]; ih++) {
                        for (int64_t iw = 0; iw < in[1]; iw++) row[iw] = src[ih * in[1] + iw];
                        col[ih] = rs_ref_1d(&d, 1, row, in[1], scale[1], out[1], ow);
                    }
                    g_want[(p * out[0] + oh) * out[1] + ow] =
                        (float)rs_ref_1d(&d, 0, col, in[0], scale[0], out[0], oh);
                }
            }
        }
        char what[128];
        snprintf(what, sizeof what, "rep %d (mode %d coord %d nearest %d excl %d how %d %lldx%lld "
                 "-> %lldx%lld)", rep, mode, coord, d.nearest, d.exclude_outside, how,
                 (long long)in[0], (long long)in[1], (long long)out[0], (long long)out[1]);
        expect_close(g_got, g_want, (size_t)(nc * out[0] * out[1]), 1e-5, what);
    }
}

/* Large planes on the pool (per-thread rows of the workspace), and the
 * workspace the kernel asks for. */
Test(resize, large_cubic_antialias_threads) {
    seed(13);
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_CUBIC_ANTIALIAS);
    int64_t in[2] = {37, 53}, out[2] = {11, 90};
    d.sizes[0] = out[0];
    d.sizes[1] = out[1];
    for (int64_t i = 0; i < 6 * 37 * 53; i++) g_xf[i] = rnd_f(-1, 1);
    cr_assert(rs_run(&d, 6, in, out, g_xf, g_got), "%s", g_err);
    double row[64], col[64];
    for (int64_t p = 0; p < 6; p++) {
        for (int64_t oh = 0; oh < out[0]; oh++) {
            for (int64_t ow = 0; ow < out[1]; ow++) {
                for (int64_t ih = 0; ih < in[0]; ih++) {
                    for (int64_t iw = 0; iw < in[1]; iw++) row[iw] = g_xf[(p * 37 + ih) * 53 + iw];
                    col[ih] = rs_ref_1d(&d, 1, row, in[1], 90.0 / 53.0, out[1], ow);
                }
                g_want[(p * out[0] + oh) * out[1] + ow] =
                    (float)rs_ref_1d(&d, 0, col, in[0], 11.0 / 37.0, out[0], oh);
            }
        }
    }
    expect_close(g_got, g_want, 6 * 11 * 90, 1e-5, "large");
}

Test(resize, span_refusals_and_workspace) {
    char buf[256];
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR_ANTIALIAS);
    plx_tensor_info x = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 4));
    plx_tensor_info y = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 4));
    plx_layer_view l = layer_of(PLX_OP_RESIZE, &d, &x, 1, &y, 1);
    /* sizes with a scale they do not resemble: a filter of 2000 taps
     * over 4 points */
    d.sizes[0] = d.sizes[1] = 4;
    d.scales[0] = d.scales[1] = 0.001f;
    cr_assert(eq(str, (char *)plxk_check_resize(&l, buf, sizeof buf),
                 "resize: the antialiased filter along spatial dim 0 spans 2000 input "
                 "points, more than 4 times its 4 (scale 0.001)"));
    cr_assert(eq(sz, plxk_kernel_workspace(&l, NULL), 0));
    d.scales[0] = d.scales[1] = 0.0f;
    cr_assert(zero(ptr, (void *)plxk_check_resize(&l, buf, sizeof buf)));
    cr_assert(gt(sz, plxk_kernel_workspace(&l, NULL), 0));
    /* without its workspace the kernel fails rather than allocate */
    float px[16] = {0}, py[16];
    const void *ins[] = {px};
    void *outs[] = {py};
    plxk_kernel_args a = {.layer = &l, .inputs = ins, .outputs = outs, .error = g_err,
                          .error_size = sizeof g_err};
    cr_assert(not(plxk_run_resize(&a)));
    cr_assert(not(zero(ptr, strstr(g_err, "too small for the spans"))), "%s", g_err);
    d.mode = (plx_resize_mode)5;
    cr_assert(eq(str, (char *)plxk_check_resize(&l, buf, sizeof buf),
                 "resize: mode 5 or coordinate transformation 0 is unknown"));
}

/* ---- roi_align ------------------------------------------------------------ */

/* Runs roi_align on X [1, 1, 4, 4] = 4 y + x (a plane bilinear
 * interpolation reproduces exactly: the value at (y, x) is 4 y + x inside
 * [0, 3]^2) for one roi. */
static float roi_align_one(plx_roi_align_desc d, const float roi[4], bool *ok) {
    float x[16], y[1];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i;
    }
    int64_t bi[1] = {0};
    plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 4)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(1, 4)),
                              info(PLX_DTYPE_INT64, SHAPE(1))};
    plx_tensor_info out = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 1, 1));
    plx_layer_view l = layer_of(PLX_OP_ROI_ALIGN, &d, ins, 3, &out, 1);
    const char *why = plxk_check_roi_align(&l, g_err, sizeof g_err);
    cr_assert(zero(ptr, (void *)why), "%s", why);
    const void *in_data[3] = {x, roi, bi};
    void *out_data[1] = {y};
    *ok = run_layer(plxk_run_roi_align, &l, in_data, out_data);
    return y[0];
}

/* roi (0, 0, 2, 2), output 1 x 1, 2 x 2 samples at 0.5 and 1.5 per dim:
 * avg is the value at (1, 1), 5; max takes, per sample, the largest
 * corner times its weight 1/4: (0.5, 0.5) reads 0, 1, 4, 5 -> 1.25, ...,
 * (1.5, 1.5) reads 5, 6, 9, 10 -> 2.5, the largest. half_pixel moves the
 * roi by -0.5: (0.5, 0.5, 2.5, 2.5) is the same bin. The adaptive grid
 * of a 3 x 3 roi is 3 x 3 (samples at 0.5, 1.5, 2.5): mean 7.5. A sample
 * past the edge by less than a pixel is clamped to it ((4, 4) reads X[3,
 * 3] = 15); one further out reads 0. */
Test(roi_align, hand_modes) {
    bool ok;
    plx_roi_align_desc d = PLX_ROI_ALIGN_DESC_INIT;
    d.half_pixel = false;
    d.sampling_ratio = 2;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){0, 0, 2, 2}, &ok), 5.0f));
    cr_assert(ok, "%s", g_err);
    d.mode = PLX_ROI_ALIGN_MAX;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){0, 0, 2, 2}, &ok), 2.5f));
    d.mode = PLX_ROI_ALIGN_AVG;
    d.half_pixel = true;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){0.5f, 0.5f, 2.5f, 2.5f}, &ok), 5.0f));
    d.half_pixel = false;
    d.sampling_ratio = 0;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){0, 0, 3, 3}, &ok), 7.5f));
    d.sampling_ratio = 1;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){3, 3, 5, 5}, &ok), 15.0f));
    cr_assert(eq(flt, roi_align_one(d, (const float[]){-3, -3, -2, -2}, &ok), 0.0f));
    /* spatial_scale 0.5 maps (0, 0, 4, 4) onto (0, 0, 2, 2) */
    d.sampling_ratio = 2;
    d.spatial_scale = 0.5f;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){0, 0, 4, 4}, &ok), 5.0f));
    /* a roi smaller than a pixel counts as 1 x 1 without half_pixel: (1, 1,
     * 1.2, 1.2) samples 1.25 and 1.75 per dim, mean at (1.5, 1.5) */
    d.spatial_scale = 1.0f;
    cr_assert(eq(flt, roi_align_one(d, (const float[]){1, 1, 1.2f, 1.2f}, &ok), 7.5f));
}

/* Several rois over two batch entries and channels, int32 indices: each
 * output bin against the single-roi value of the same plane. A batch
 * index out of range and a non-finite roi are execution errors; the
 * dtypes and shapes are checked. */
Test(roi_align, batches_channels_and_refusals) {
    float x[2 * 2 * 16], y[3 * 2 * 2 * 2];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)(i % 16) + (float)(i / 16) * 100.0f; /* plane p: 4y + x + 100 p */
    }
    const float rois[12] = {0, 0, 2, 2, 1, 1, 3, 3, 0, 0, 3, 3};
    int32_t bi[3] = {1, 0, 1};
    plx_roi_align_desc d = PLX_ROI_ALIGN_DESC_INIT;
    d.half_pixel = false;
    d.output_height = 2;
    d.output_width = 2;
    d.sampling_ratio = 1;
    plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT32, SHAPE(2, 2, 4, 4)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(3, 4)),
                              info(PLX_DTYPE_INT32, SHAPE(3))};
    plx_tensor_info out = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2, 2, 2));
    plx_layer_view l = layer_of(PLX_OP_ROI_ALIGN, &d, ins, 3, &out, 1);
    cr_assert(zero(ptr, (void *)plxk_check_roi_align(&l, g_err, sizeof g_err)), "%s", g_err);
    const void *in_data[3] = {x, rois, bi};
    void *out_data[1] = {y};
    cr_assert(run_layer(plxk_run_roi_align, &l, in_data, out_data), "%s", g_err);
    for (int k = 0; k < 3; k++) {
        /* bins of size (roi / 2), one sample at each bin's centre */
        double bw = (rois[k * 4 + 2] - rois[k * 4]) / 2.0, bh = (rois[k * 4 + 3] - rois[k * 4 + 1]) / 2.0;
        for (int ch = 0; ch < 2; ch++) {
            for (int ph = 0; ph < 2; ph++) {
                for (int pw = 0; pw < 2; pw++) {
                    double sy = rois[k * 4 + 1] + (ph + 0.5) * bh, sx = rois[k * 4] + (pw + 0.5) * bw;
                    float want = (float)(4 * sy + sx + 100.0 * (bi[k] * 2 + ch));
                    float got = y[((k * 2 + ch) * 2 + ph) * 2 + pw];
                    cr_assert(le(flt, fabsf(got - want), 1e-4f), "roi %d c %d bin (%d, %d): %g, want %g",
                              k, ch, ph, pw, (double)got, (double)want);
                }
            }
        }
    }
    bi[2] = 2;
    cr_assert(not(run_layer(plxk_run_roi_align, &l, in_data, out_data)));
    cr_assert(not(zero(ptr, strstr(g_err, "batch_indices[2] = 2 is out of range [0, 2)"))), "%s",
              g_err);
    bi[2] = 1;
    float bad[12];
    memcpy(bad, rois, sizeof bad);
    bad[5] = NAN;
    in_data[1] = bad;
    cr_assert(not(run_layer(plxk_run_roi_align, &l, in_data, out_data)));
    cr_assert(not(zero(ptr, strstr(g_err, "roi 1 is not finite"))), "%s", g_err);
    ins[0].dtype = PLX_DTYPE_FLOAT16;
    const char *why = plxk_check_roi_align(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "float32 X, rois and Y"))), "%s", why);
    ins[0].dtype = PLX_DTYPE_FLOAT32;
    out.dims[2] = 3;
    why = plxk_check_roi_align(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "[R, C, output_height, output_width]"))), "%s", why);
}

/* ---- deform_conv ---------------------------------------------------------- */

/* A plain deform_conv: each output sums, over its group's input channels
 * and the kernel taps, W times the mask times X read at the tap's offset
 * position, the bilinear read written as a sum over every pixel of
 * max(0, 1 - |dy|) * max(0, 1 - |dx|). */
static void ref_deform_conv(const plx_deform_conv_desc *d, const int64_t *xd, const int64_t *wd,
                            int64_t oh, int64_t ow, const float *x, const float *w,
                            const float *off, const float *b, const float *mask, float *y) {
    int64_t n = xd[0], c = xd[1], h = xd[2], wi = xd[3], m = wd[0], cpg = wd[1], kh = wd[2],
            kw = wd[3];
    int64_t mpg = m / d->group, cpo = c / d->offset_group, og_n = d->offset_group;
    for (int64_t bn = 0; bn < n; bn++) {
        for (int64_t om = 0; om < m; om++) {
            int64_t grp = om / mpg;
            for (int64_t oy = 0; oy < oh; oy++) {
                for (int64_t ox = 0; ox < ow; ox++) {
                    double acc = b ? b[om] : 0.0;
                    for (int64_t cl = 0; cl < cpg; cl++) {
                        int64_t ch = grp * cpg + cl, og = ch / cpo;
                        for (int64_t i = 0; i < kh; i++) {
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t tap = (og * kh + i) * kw + j;
                                int64_t o = ((bn * og_n * kh * kw * 2 + 2 * tap) * oh + oy) * ow + ox;
                                double sy = (double)(oy * d->strides[0] - d->pads_begin[0] +
                                                     i * d->dilations[0]) + off[o];
                                double sx = (double)(ox * d->strides[1] - d->pads_begin[1] +
                                                     j * d->dilations[1]) + off[o + oh * ow];
                                double v = 0.0;
                                for (int64_t yy = 0; yy < h; yy++) {
                                    for (int64_t xx = 0; xx < wi; xx++) {
                                        double fy = fmax(0.0, 1.0 - fabs(sy - (double)yy));
                                        double fx = fmax(0.0, 1.0 - fabs(sx - (double)xx));
                                        v += fy * fx * x[((bn * c + ch) * h + yy) * wi + xx];
                                    }
                                }
                                double mk = mask ? mask[((bn * og_n * kh * kw + tap) * oh + oy) * ow + ox]
                                                 : 1.0;
                                acc += w[((om * cpg + cl) * kh + i) * kw + j] * v * mk;
                            }
                        }
                    }
                    y[((bn * m + om) * oh + oy) * ow + ox] = (float)acc;
                }
            }
        }
    }
}

/* X [1, 1, 3, 3] = 1..9, W [1, 1, 2, 2] of ones, no pads: zero offsets
 * give the plain convolution (output (0, 0) = 1 + 2 + 4 + 5 = 12); +1 along
 * W for every tap moves the window right (16 = 2 + 3 + 5 + 6, and 9 = 3 +
 * 6 at the right edge, the column past it reading 0); +0.5 along H
 * averages neighbouring rows (18 = 2.5 + 3.5 + 5.5 + 6.5; at the bottom
 * edge the row past it reads 0: 19.5 = 5.5 + 6.5 + 3.5 + 4). */
Test(deform_conv, hand_offsets) {
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, off[32], y[4];
    plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
    plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3, 3)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2, 2)),
                              info(PLX_DTYPE_FLOAT32, SHAPE(1, 8, 2, 2))};
    plx_tensor_info out = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2, 2));
    plx_layer_view l = layer_of(PLX_OP_DEFORM_CONV, &d, ins, 3, &out, 1);
    cr_assert(zero(ptr, (void *)plxk_check_deform_conv(&l, g_err, sizeof g_err)), "%s", g_err);
    const void *in_data[3] = {x, w, off};
    void *out_data[1] = {y};
    static const struct {
        float dh, dw, want[4];
    } cases[] = {{0, 0, {12, 16, 24, 28}}, {0, 1, {16, 9, 28, 15}}, {0.5f, 0, {18, 22, 19.5f, 22.5f}}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int t = 0; t < 4; t++) {
            for (int p = 0; p < 4; p++) {
                off[(2 * t) * 4 + p] = cases[k].dh;
                off[(2 * t + 1) * 4 + p] = cases[k].dw;
            }
        }
        cr_assert(run_layer(plxk_run_deform_conv, &l, in_data, out_data), "%s", g_err);
        for (int p = 0; p < 4; p++) {
            cr_assert(eq(flt, y[p], cases[k].want[p]), "case %zu y[%d] = %g", k, p, (double)y[p]);
        }
    }
}

/* Random offsets (up to 2.5 pixels either way, past the edges too), masks
 * and biases with groups, offset groups, strides, dilations and pads,
 * against ref_deform_conv. */
Test(deform_conv, random_against_reference) {
    static const struct {
        int64_t n, c, h, w, m, kh, kw, group, ogroup, stride, dil, pad;
        bool bias, mask;
    } cases[] = {
        {1, 2, 5, 6, 4, 3, 3, 2, 2, 1, 1, 1, true, true},
        {2, 4, 7, 5, 2, 2, 3, 1, 4, 2, 1, 0, false, true},
        {1, 3, 6, 6, 3, 3, 2, 3, 1, 1, 2, 2, true, false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        seed(300 + k);
        plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
        d.group = cases[k].group;
        d.offset_group = cases[k].ogroup;
        for (int a = 0; a < 2; a++) {
            d.strides[a] = cases[k].stride;
            d.dilations[a] = cases[k].dil;
            d.pads_begin[a] = d.pads_end[a] = cases[k].pad;
        }
        int64_t n = cases[k].n, c = cases[k].c, m = cases[k].m, kh = cases[k].kh, kw = cases[k].kw;
        int64_t oh = (cases[k].h + 2 * cases[k].pad - ((kh - 1) * cases[k].dil + 1)) / cases[k].stride + 1;
        int64_t ow = (cases[k].w + 2 * cases[k].pad - ((kw - 1) * cases[k].dil + 1)) / cases[k].stride + 1;
        int64_t xd[4] = {n, c, cases[k].h, cases[k].w}, wd[4] = {m, c / d.group, kh, kw};
        size_t nx = (size_t)(n * c * xd[2] * xd[3]), nw = (size_t)(m * wd[1] * kh * kw);
        size_t noff = (size_t)(n * d.offset_group * 2 * kh * kw * oh * ow);
        size_t nmask = noff / 2, ny = (size_t)(n * m * oh * ow);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *off = malloc(noff * 4);
        float *mask = malloc(nmask * 4), *b = malloc((size_t)m * 4), *y = malloc(ny * 4),
              *want = malloc(ny * 4);
        for (size_t i = 0; i < nx; i++) x[i] = rnd_f(-1, 1);
        for (size_t i = 0; i < nw; i++) w[i] = rnd_f(-1, 1);
        for (size_t i = 0; i < noff; i++) off[i] = rnd_f(-2.5f, 2.5f);
        for (size_t i = 0; i < nmask; i++) mask[i] = rnd_f(0, 1);
        for (int64_t i = 0; i < m; i++) b[i] = rnd_f(-1, 1);
        uint32_t n_in = cases[k].mask ? 5 : cases[k].bias ? 4 : 3;
        plx_tensor_info ins[5] = {info(PLX_DTYPE_FLOAT32, SHAPE(n, c, xd[2], xd[3])),
                                  info(PLX_DTYPE_FLOAT32, SHAPE(m, wd[1], kh, kw)),
                                  info(PLX_DTYPE_FLOAT32, SHAPE(n, d.offset_group * 2 * kh * kw, oh, ow)),
                                  info(PLX_DTYPE_FLOAT32, SHAPE(m)),
                                  info(PLX_DTYPE_FLOAT32, SHAPE(n, d.offset_group * kh * kw, oh, ow))};
        plx_tensor_info out = info(PLX_DTYPE_FLOAT32, SHAPE(n, m, oh, ow));
        float *bias_used = cases[k].bias || cases[k].mask ? b : NULL;
        if (cases[k].mask && !cases[k].bias) {
            memset(b, 0, (size_t)m * 4);
        }
        plx_layer_view l = layer_of(PLX_OP_DEFORM_CONV, &d, ins, n_in, &out, 1);
        cr_assert(zero(ptr, (void *)plxk_check_deform_conv(&l, g_err, sizeof g_err)), "%s", g_err);
        const void *in_data[5] = {x, w, off, b, mask};
        void *out_data[1] = {y};
        cr_assert(run_layer(plxk_run_deform_conv, &l, in_data, out_data), "%s", g_err);
        ref_deform_conv(&d, xd, wd, oh, ow, x, w, off, bias_used, cases[k].mask ? mask : NULL, want);
        expect_close(y, want, ny, 1e-4, "deform_conv");
        free(x), free(w), free(off), free(mask), free(b), free(y), free(want);
    }
}

Test(deform_conv, refusals) {
    plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
    plx_tensor_info ins[3] = {info(PLX_DTYPE_FLOAT16, SHAPE(1, 1, 3, 3)),
                              info(PLX_DTYPE_FLOAT16, SHAPE(1, 1, 2, 2)),
                              info(PLX_DTYPE_FLOAT16, SHAPE(1, 8, 2, 2))};
    plx_tensor_info out = info(PLX_DTYPE_FLOAT16, SHAPE(1, 1, 2, 2));
    plx_layer_view l = layer_of(PLX_OP_DEFORM_CONV, &d, ins, 3, &out, 1);
    const char *why = plxk_check_deform_conv(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "float32 only, not float16"))), "%s", why);
    for (int i = 0; i < 3; i++) {
        ins[i].dtype = PLX_DTYPE_FLOAT32;
    }
    out.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(zero(ptr, (void *)plxk_check_deform_conv(&l, g_err, sizeof g_err)), "%s", g_err);
    out.dims[3] = 3;
    why = plxk_check_deform_conv(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "does not match"))), "%s", why);
}

/* ---- max pool with Indices (kernels_pool.c) -------------------------------- */

/* X [2, 1, 2, 3] (two images), 2x2 windows, stride 1: plane 0 = [[1, 5,
 * 2], [5, 0, 7]] has maxima 5 (the first 5, at (0, 1): index 1, column
 * major 2) and 7 (at (1, 2): index 5, column major 5); plane 1 = [[9, 9,
 * 9], [9, 9, 9]] ties everywhere, the first in row-major order wins: (0,
 * 0) and (0, 1), offset by the plane's 6. An average pool, or int64 X,
 * cannot have Indices. */
Test(pool, max_with_indices) {
    float x[12] = {1, 5, 2, 5, 0, 7, 9, 9, 9, 9, 9, 9}, y[4];
    int64_t ind[4];
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    plx_tensor_info in = info(PLX_DTYPE_FLOAT32, SHAPE(2, 1, 2, 3));
    plx_tensor_info outs[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(2, 1, 1, 2)),
                               info(PLX_DTYPE_INT64, SHAPE(2, 1, 1, 2))};
    plx_layer_view l = layer_of(PLX_OP_POOL, &d, &in, 1, outs, 2);
    cr_assert(zero(ptr, (void *)plxk_check_pool(&l, g_err, sizeof g_err)), "%s", g_err);
    const void *in_data[1] = {x};
    void *out_data[2] = {y, ind};
    static const int64_t want[2][4] = {{1, 5, 6, 7}, {2, 5, 6, 8}};
    for (int cm = 0; cm < 2; cm++) {
        d.indices_column_major = cm;
        cr_assert(run_layer(plxk_run_pool, &l, in_data, out_data), "%s", g_err);
        cr_assert(eq(flt, y[0], 5.0f));
        cr_assert(eq(flt, y[1], 7.0f));
        cr_assert(eq(flt, y[2], 9.0f));
        for (int i = 0; i < 4; i++) {
            cr_assert(eq(i64, ind[i], want[cm][i]), "column major %d, index %d", cm, i);
        }
    }
    d.kind = PLX_POOL_AVERAGE;
    const char *why = plxk_check_pool(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "Indices come with float32 max pools only"))), "%s", why);
}
