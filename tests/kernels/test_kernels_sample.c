/* Tests of cpu_ref's grid_sample kernel (kernels_grid_sample.c), called
 * directly with hand-built layer views: hand-derived cases (the
 * derivation is in the comments) and seeded random cases over 1 to 3
 * spatial dims checked against a reference written here the way ONNX's
 * reference implementation (onnx/reference/ops/op_grid_sample.py) works:
 * it interpolates the outermost dim last, over the values the inner dims'
 * interpolations give for every index of it, where the kernel sums the
 * products of per-dim weights. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "S1"
#include "kernel_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t g_rng;
static void seed(uint64_t s) { g_rng = s * 2654435761u + 88172645463325252u; }
static uint64_t rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717u;
}
static int64_t rnd_i(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
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
                 "cpu_ref grid_sample: X has an empty spatial dim to sample from"));
    cr_assert(not(run_layer(plxk_run_grid_sample, &l, in_ptrs, outs)));
    cr_assert(eq(str, g_err, "cpu_ref grid_sample: X has an empty spatial dim to sample from"));
    /* dtypes: integers, and Y not of X's */
    ins[0] = info(PLX_DTYPE_INT32, SHAPE(1, 2, 3, 3));
    y = info(PLX_DTYPE_INT32, SHAPE(1, 2, 1, 4));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "cpu_ref grid_sample: X int32, grid float32 and Y int32 must be float32, "
                 "float16 or bfloat16, Y X's"));
    ins[0] = info(PLX_DTYPE_FLOAT16, SHAPE(1, 2, 3, 3));
    cr_assert(not(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf))));
    y.dtype = PLX_DTYPE_FLOAT16;
    cr_assert(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf)));
    /* shapes: the grid's last dim must be the spatial rank, N must agree */
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 3));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "cpu_ref grid_sample: X, grid and Y must be [N, C, D1..Dr], [N, O1..Or, r] and "
                 "[N, C, O1..Or]"));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(2, 1, 4, 2));
    cr_assert(not(zero(ptr, (void *)plxk_check_grid_sample(&l, buf, sizeof buf))));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 5, 2));
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "cpu_ref grid_sample: Y's spatial dims must be grid's"));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 2));
    d.mode = (plx_grid_sample_mode)3;
    cr_assert(eq(str, (char *)plxk_check_grid_sample(&l, buf, sizeof buf),
                 "cpu_ref grid_sample: mode 3 or padding 0 is unknown"));
}
