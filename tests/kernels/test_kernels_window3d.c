/* Tests of cpu_ref's window kernels on 3-D layers (X [N, C, D, H, W]):
 * conv (its im2col + GEMM paths: pointwise, whole col, slabs), conv_transpose
 * and pool (max with and without Indices, average with and without the
 * padding counted, lp), called directly with hand-built layer views, on
 * seeded random geometries (strides, dilations, pads, auto_pad, groups,
 * ceil_mode) against direct loops written here over any spatial rank, the
 * definitions rather than the kernels' im2col; a few 1-D and 2-D cases run
 * through the same references, and a 3-D layer of depth 1 must give its
 * 2-D twin's values. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "W3"
#include "kernel_test_util.h"

enum { MAXSP = 3 };

/* A window layer's geometry: spatial rank, sizes per spatial dim. */
typedef struct geom {
    int sp;
    int64_t n, c, m, group;
    int64_t in[MAXSP], k[MAXSP], s[MAXSP], d[MAXSP], pb[MAXSP], pe[MAXSP];
    plx_auto_pad ap;
    bool ceil_mode;
    /* derived by derive(): output sizes and the start padding in effect */
    int64_t out[MAXSP], pad[MAXSP], pad_end[MAXSP];
} geom;

static float rnd_f(void) {
    return (float)(-1.0 + 2.0 * (double)(rnd() >> 11) / 9007199254740992.0);
}

static float *rand_floats(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert(p != NULL);
    for (size_t i = 0; i < n; i++) {
        p[i] = rnd_f();
    }
    return p;
}

/* ONNX's output size and padding of a conv or pool window, computed here
 * from the operator's definition. */
static void derive(geom *g) {
    for (int i = 0; i < g->sp; i++) {
        int64_t ext = (g->k[i] - 1) * g->d[i] + 1;
        if (g->ap == PLX_AUTO_PAD_SAME_UPPER || g->ap == PLX_AUTO_PAD_SAME_LOWER) {
            g->out[i] = (g->in[i] + g->s[i] - 1) / g->s[i];
            int64_t total = (g->out[i] - 1) * g->s[i] + ext - g->in[i];
            total = total > 0 ? total : 0;
            g->pad[i] = g->ap == PLX_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            g->pad_end[i] = total - g->pad[i];
            continue;
        }
        int64_t pb = g->ap == PLX_AUTO_PAD_VALID ? 0 : g->pb[i];
        int64_t pe = g->ap == PLX_AUTO_PAD_VALID ? 0 : g->pe[i];
        double q = (double)(g->in[i] + pb + pe - ext) / (double)g->s[i];
        g->out[i] = (int64_t)(g->ceil_mode ? ceil(q) : floor(q)) + 1;
        if (g->ceil_mode && (g->out[i] - 1) * g->s[i] >= g->in[i] + pb) {
            g->out[i]--;
        }
        g->pad[i] = pb;
        g->pad_end[i] = pe;
    }
}

static int64_t prod(const int64_t *v, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        p *= v[i];
    }
    return p;
}

/* Multi-index of flat position f over sizes[0 .. n) (row-major). */
static void unflat(int64_t f, const int64_t *sizes, int n, int64_t *idx) {
    for (int i = n - 1; i >= 0; i--) {
        idx[i] = f % sizes[i];
        f /= sizes[i];
    }
}

static plx_tensor_info nd_info(int64_t a, int64_t b, const int64_t *sp, int nsp) {
    int64_t dims[2 + MAXSP] = {a, b};
    for (int i = 0; i < nsp; i++) {
        dims[2 + i] = sp[i];
    }
    return info(PLX_DTYPE_FLOAT32, dims, (uint32_t)(2 + nsp));
}

/* Y[n, m, o] = B[m] + sum over the group's channels c and taps t of
 * W[m, c, t] * X[n, c, o * s - pad + t * d] (0 outside X). */
static void ref_conv(const geom *g, const float *x, const float *w, const float *b, float *y) {
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t taps = prod(g->k, g->sp), plane = prod(g->out, g->sp), inplane = prod(g->in, g->sp);
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t m = 0; m < g->m; m++) {
            for (int64_t o = 0; o < plane; o++) {
                int64_t oi[MAXSP], ti[MAXSP];
                unflat(o, g->out, g->sp, oi);
                double acc = b ? b[m] : 0.0;
                for (int64_t c = 0; c < cg; c++) {
                    int64_t xc = n * g->c + m / mg * cg + c;
                    for (int64_t t = 0; t < taps; t++) {
                        unflat(t, g->k, g->sp, ti);
                        int64_t at = 0;
                        bool inside = true;
                        for (int i = 0; i < g->sp; i++) {
                            int64_t p = oi[i] * g->s[i] - g->pad[i] + ti[i] * g->d[i];
                            inside = inside && p >= 0 && p < g->in[i];
                            at = at * g->in[i] + p;
                        }
                        if (inside) {
                            acc += (double)w[(m * cg + c) * taps + t] * x[xc * inplane + at];
                        }
                    }
                }
                y[(n * g->m + m) * plane + o] = (float)acc;
            }
        }
    }
}

static void expect_close(const float *got, const float *want, size_t n, double tol,
                         const char *what) {
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)want[i]);
        cr_assert(err <= tol * (1.0 + fabs((double)want[i])) ||
                      (isnan(got[i]) && isnan(want[i])),
                  "%s: element %zu: got %.9g, want %.9g", what, i, (double)got[i],
                  (double)want[i]);
    }
}

static plx_conv_desc conv_desc_of(const geom *g) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    for (int i = 0; i < g->sp; i++) {
        d.strides[i] = g->s[i];
        d.dilations[i] = g->d[i];
        d.pads_begin[i] = g->pb[i];
        d.pads_end[i] = g->pe[i];
    }
    d.auto_pad = g->ap;
    d.group = g->group;
    return d;
}

/* The kernel's conv of random X, W, B against ref_conv; its output in
 * *out (the caller frees it) when out is not NULL. */
static void conv_case(geom g, bool bias, uint32_t s, float **out) {
    seed(s);
    derive(&g);
    plx_conv_desc d = conv_desc_of(&g);
    plx_tensor_info in[3] = {nd_info(g.n, g.c, g.in, g.sp),
                             nd_info(g.m, g.c / g.group, g.k, g.sp),
                             info(PLX_DTYPE_FLOAT32, SHAPE(g.m))};
    plx_tensor_info yi = nd_info(g.n, g.m, g.out, g.sp);
    float *x = rand_floats(numel(&in[0])), *w = rand_floats(numel(&in[1])),
          *b = rand_floats(numel(&in[2]));
    size_t ny = numel(&yi);
    float *y = calloc(ny + 1, sizeof *y), *want = calloc(ny + 1, sizeof *want);
    plx_layer_view l = layer_of(PLX_OP_CONV, &d, in, bias ? 3 : 2, &yi, 1);
    char why[256];
    cr_assert(zero(ptr, (void *)plxk_check_conv(&l, why, sizeof why)), "refused: %s", why);
    cr_assert(run_layer(plxk_run_conv, &l, (const void *const[]){x, w, b}, (void *const[]){y}),
              "%s", g_err);
    ref_conv(&g, x, w, bias ? b : NULL, want);
    /* float sums in the kernel, double here: the bound grows with K */
    double k = (double)(g.c / g.group * prod(g.k, g.sp));
    expect_close(y, want, ny, 2e-5 * (k > 64 ? k / 64.0 : 1.0), "conv");
    free(x), free(w), free(b), free(want);
    if (out) {
        *out = y;
    } else {
        free(y);
    }
}

#define G3(n_, c_, m_, grp, i0, i1, i2, k0, k1, k2)                                           \
    (geom) {                                                                                   \
        .sp = 3, .n = (n_), .c = (c_), .m = (m_), .group = (grp), .in = {i0, i1, i2},          \
        .k = {k0, k1, k2}, .s = {1, 1, 1}, .d = {1, 1, 1}, .ap = PLX_AUTO_PAD_NOTSET           \
    }

Test(conv3d, random_geometries) {
    geom a = G3(2, 3, 4, 1, 5, 6, 7, 3, 2, 3); /* whole col */
    a.pb[0] = 1, a.pe[0] = 2, a.pb[2] = 1, a.pe[1] = 1;
    conv_case(a, true, 1, NULL);
    geom b = G3(1, 4, 6, 2, 7, 5, 6, 3, 3, 2); /* groups, strides, dilations */
    b.s[0] = 2, b.s[2] = 3, b.d[1] = 2, b.pb[1] = 2, b.pe[2] = 1;
    conv_case(b, false, 2, NULL);
    geom c = G3(1, 3, 3, 3, 6, 6, 6, 3, 3, 3); /* one channel per group */
    c.ap = PLX_AUTO_PAD_SAME_UPPER, c.s[0] = 2;
    conv_case(c, true, 3, NULL);
    geom d = G3(1, 2, 3, 1, 5, 7, 4, 2, 4, 3);
    d.ap = PLX_AUTO_PAD_SAME_LOWER, d.d[2] = 2;
    conv_case(d, true, 4, NULL);
    geom e = G3(1, 5, 7, 1, 4, 5, 6, 1, 1, 1); /* pointwise: X is the GEMM's operand */
    conv_case(e, true, 5, NULL);
    geom f = G3(1, 2, 2, 1, 3, 3, 3, 3, 3, 3); /* pads larger than needed */
    f.pb[0] = f.pb[1] = f.pb[2] = 3, f.pe[0] = f.pe[1] = f.pe[2] = 2;
    conv_case(f, false, 6, NULL);
    geom v = G3(1, 2, 3, 1, 9, 8, 7, 3, 3, 3);
    v.ap = PLX_AUTO_PAD_VALID, v.s[1] = 2;
    conv_case(v, true, 7, NULL);
}

/* Outputs of more than 4900 pixels and K of 500 and more: cut into
 * slabs of output columns that start and end inside output rows and
 * depth slices, on one thread and on several. */
Test(conv3d, slabs) {
    geom a = G3(1, 3, 4, 1, 18, 20, 22, 3, 3, 3);
    a.pb[0] = a.pb[1] = a.pb[2] = a.pe[0] = a.pe[1] = a.pe[2] = 1;
    conv_case(a, true, 11, NULL);
    geom b = G3(2, 24, 5, 1, 8, 9, 10, 3, 3, 3);
    b.pb[1] = b.pe[2] = 1;
    conv_case(b, true, 12, NULL);
}

/* A 3-D conv of depth 1 (input, kernel and output) is its 2-D twin. */
Test(conv3d, depth_one_is_2d) {
    geom g3 = G3(1, 3, 4, 1, 1, 9, 8, 1, 3, 3);
    g3.s[1] = 2, g3.pb[2] = 1, g3.pe[2] = 1;
    geom g2 = {.sp = 2, .n = 1, .c = 3, .m = 4, .group = 1, .in = {9, 8}, .k = {3, 3},
               .s = {2, 1}, .d = {1, 1}, .pb = {0, 1}, .pe = {0, 1}, .ap = PLX_AUTO_PAD_NOTSET};
    float *y3, *y2;
    conv_case(g3, true, 21, &y3);
    conv_case(g2, true, 21, &y2); /* the same seed: the same X, W and B values */
    geom d2 = g2;
    derive(&d2);
    for (int64_t i = 0; i < 4 * prod(d2.out, 2); i++) {
        cr_assert(eq(flt, y3[i], y2[i]), "element %lld", (long long)i);
    }
    free(y3), free(y2);
    /* and the 1-D and 2-D references agree with the kernels */
    geom g1 = {.sp = 1, .n = 2, .c = 4, .m = 2, .group = 2, .in = {11}, .k = {3}, .s = {2},
               .d = {2}, .pb = {1}, .pe = {2}, .ap = PLX_AUTO_PAD_NOTSET};
    conv_case(g1, true, 22, NULL);
}

/* conv_transpose: Y[n, m, i * s - pad + t * d] += X[n, c, i] * W[c, m', t]
 * over the group's input channels c (m' = m's index in its group), Y
 * starting as B; pads here are explicit (NOTSET, no output_shape). */
Test(conv3d, conv_transpose) {
    for (uint32_t s = 0; s < 4; s++) {
        seed(30 + s);
        geom g = G3(1 + s % 2, 2 * (1 + s % 2), 3 * (1 + s % 2), 1 + s % 2, 3 + s, 4, 3, 2, 3, 2);
        g.s[0] = 1 + s % 3, g.s[2] = 2, g.d[1] = 1 + s % 2;
        g.pb[1] = s % 2, g.pe[2] = 1, g.pb[0] = s / 2;
        plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
        int64_t mg = g.m / g.group, cg = g.c / g.group;
        int64_t m = g.m;
        for (int i = 0; i < 3; i++) {
            d.strides[i] = g.s[i];
            d.dilations[i] = g.d[i];
            d.pads_begin[i] = g.pb[i];
            d.pads_end[i] = g.pe[i];
            g.out[i] = g.s[i] * (g.in[i] - 1) + (g.k[i] - 1) * g.d[i] + 1 - g.pb[i] - g.pe[i];
        }
        d.group = g.group;
        plx_tensor_info in[3] = {nd_info(g.n, g.c, g.in, 3), nd_info(g.c, mg, g.k, 3),
                                 info(PLX_DTYPE_FLOAT32, SHAPE(m))};
        plx_tensor_info yi = nd_info(g.n, m, g.out, 3);
        float *x = rand_floats(numel(&in[0])), *w = rand_floats(numel(&in[1])),
              *b = rand_floats(numel(&in[2]));
        size_t ny = numel(&yi);
        float *y = calloc(ny, sizeof *y), *want = calloc(ny, sizeof *want);
        plx_layer_view l = layer_of(PLX_OP_CONV_TRANSPOSE, &d, in, 3, &yi, 1);
        cr_assert(run_layer(plxk_run_conv_transpose, &l, (const void *const[]){x, w, b},
                            (void *const[]){y}),
                  "%s", g_err);
        int64_t plane = prod(g.out, 3), inplane = prod(g.in, 3), taps = prod(g.k, 3);
        double *acc = calloc(ny, sizeof *acc);
        for (int64_t n = 0; n < g.n; n++) {
            for (int64_t c = 0; c < g.c; c++) {
                for (int64_t p = 0; p < inplane; p++) {
                    int64_t ii[3], ti[3];
                    unflat(p, g.in, 3, ii);
                    for (int64_t mm = 0; mm < mg; mm++) {
                        int64_t om = c / cg * mg + mm;
                        for (int64_t t = 0; t < taps; t++) {
                            unflat(t, g.k, 3, ti);
                            int64_t at = 0;
                            bool inside = true;
                            for (int i = 0; i < 3; i++) {
                                int64_t o = ii[i] * g.s[i] - g.pb[i] + ti[i] * g.d[i];
                                inside = inside && o >= 0 && o < g.out[i];
                                at = at * g.out[i] + o;
                            }
                            if (inside) {
                                acc[(n * m + om) * plane + at] +=
                                    (double)x[(n * g.c + c) * inplane + p] *
                                    w[(c * mg + mm) * taps + t];
                            }
                        }
                    }
                }
            }
        }
        for (size_t i = 0; i < ny; i++) {
            want[i] = (float)(acc[i] + b[i / (size_t)plane % (size_t)m]);
        }
        expect_close(y, want, ny, 2e-5, "conv_transpose");
        free(x), free(w), free(b), free(y), free(want), free(acc);
    }
}

/* ---- pools --------------------------------------------------------------- */

/* The reference pool: max (first maximum in row-major order, NaN the
 * largest; its flat index in X), average over the taps inside X, or
 * inside X and its pads (count_include_pad), or lp with exponent p. */
static void ref_pool(const geom *g, plx_pool_kind kind, bool include_pad, int64_t p,
                     const float *x, float *y, int64_t *ind) {
    int64_t plane = prod(g->out, g->sp), inplane = prod(g->in, g->sp), taps = prod(g->k, g->sp);
    for (int64_t nc = 0; nc < g->n * g->c; nc++) {
        for (int64_t o = 0; o < plane; o++) {
            int64_t oi[MAXSP], ti[MAXSP];
            unflat(o, g->out, g->sp, oi);
            double sum = 0.0, best = -INFINITY;
            int64_t count = 0, at_best = -1;
            for (int64_t t = 0; t < taps; t++) {
                unflat(t, g->k, g->sp, ti);
                int64_t at = 0;
                bool inside = true, in_pad = true;
                for (int i = 0; i < g->sp; i++) {
                    int64_t q = oi[i] * g->s[i] - g->pad[i] + ti[i] * g->d[i];
                    inside = inside && q >= 0 && q < g->in[i];
                    in_pad = in_pad && q >= -g->pad[i] && q < g->in[i] + g->pad_end[i];
                    at = at * g->in[i] + q;
                }
                if (inside) {
                    double v = x[nc * inplane + at];
                    if (at_best < 0 || (v > best && !isnan(best)) || (isnan(v) && !isnan(best))) {
                        best = v;
                        at_best = nc * inplane + at;
                    }
                    sum += kind == PLX_POOL_LP ? pow(fabs(v), (double)p) : v;
                    count++;
                } else if (include_pad && in_pad) {
                    count++;
                }
            }
            double r = kind == PLX_POOL_MAX       ? best
                       : kind == PLX_POOL_LP      ? pow(sum, 1.0 / (double)p)
                       : count ? sum / (double)count : NAN;
            y[nc * plane + o] = (float)r;
            if (ind) {
                ind[nc * plane + o] = at_best;
            }
        }
    }
}

static void pool_case(geom g, plx_pool_kind kind, bool include_pad, int64_t p, bool indices,
                      uint32_t s) {
    seed(s);
    derive(&g);
    g.m = g.c;
    plx_pool_desc d = PLX_POOL_DESC_INIT(kind);
    for (int i = 0; i < g.sp; i++) {
        d.kernel[i] = g.k[i];
        d.strides[i] = g.s[i];
        d.dilations[i] = g.d[i];
        d.pads_begin[i] = g.pb[i];
        d.pads_end[i] = g.pe[i];
    }
    d.auto_pad = g.ap;
    d.ceil_mode = g.ceil_mode;
    d.count_include_pad = include_pad;
    d.p = p;
    plx_tensor_info xi = nd_info(g.n, g.c, g.in, g.sp);
    plx_tensor_info yi[2] = {nd_info(g.n, g.c, g.out, g.sp), nd_info(g.n, g.c, g.out, g.sp)};
    yi[1].dtype = PLX_DTYPE_INT64;
    float *x = rand_floats(numel(&xi));
    size_t ny = numel(&yi[0]);
    float *y = calloc(ny, sizeof *y), *want = calloc(ny, sizeof *want);
    int64_t *ind = calloc(ny, sizeof *ind), *want_ind = calloc(ny, sizeof *want_ind);
    plx_layer_view l = layer_of(PLX_OP_POOL, &d, &xi, 1, yi, indices ? 2 : 1);
    char why[256];
    cr_assert(zero(ptr, (void *)plxk_check_pool(&l, why, sizeof why)), "refused: %s", why);
    cr_assert(run_layer(plxk_run_pool, &l, (const void *const[]){x}, (void *const[]){y, ind}),
              "%s", g_err);
    ref_pool(&g, kind, include_pad, p, x, want, want_ind);
    expect_close(y, want, ny, 2e-6, kind == PLX_POOL_MAX ? "max pool" : "pool");
    for (size_t i = 0; indices && i < ny; i++) {
        cr_assert(eq(i64, ind[i], want_ind[i]), "Indices element %zu", i);
    }
    free(x), free(y), free(want), free(ind), free(want_ind);
}

Test(pool3d, max_average_lp) {
    geom a = G3(2, 3, 3, 3, 6, 7, 5, 3, 2, 3);
    a.s[0] = 2, a.s[2] = 2, a.pb[0] = 1, a.pe[1] = 1, a.pb[2] = 1;
    geom b = G3(1, 2, 2, 2, 9, 8, 10, 3, 2, 3); /* dilations, ceil_mode */
    b.s[0] = 2, b.s[1] = 3, b.s[2] = 3, b.d[0] = 2, b.d[2] = 2, b.pe[1] = 1;
    b.ceil_mode = true;
    geom c = G3(1, 2, 2, 2, 5, 6, 7, 2, 3, 3);
    c.ap = PLX_AUTO_PAD_SAME_UPPER, c.s[1] = 2;
    geom d = G3(1, 1, 1, 1, 7, 7, 7, 3, 3, 3);
    d.ap = PLX_AUTO_PAD_SAME_LOWER, d.s[0] = d.s[1] = d.s[2] = 2;
    const geom cases[] = {a, b, c, d};
    for (uint32_t i = 0; i < 4; i++) {
        pool_case(cases[i], PLX_POOL_MAX, false, 2, false, 40 + i);
        pool_case(cases[i], PLX_POOL_MAX, false, 2, true, 50 + i);
        pool_case(cases[i], PLX_POOL_AVERAGE, false, 2, false, 60 + i);
        pool_case(cases[i], PLX_POOL_AVERAGE, true, 2, false, 70 + i);
        pool_case(cases[i], PLX_POOL_LP, false, 2, false, 80 + i);
        pool_case(cases[i], PLX_POOL_LP, false, 3, false, 90 + i);
    }
    /* the same references on a 2-D pool */
    geom t = {.sp = 2, .n = 1, .c = 2, .in = {7, 6}, .k = {3, 2}, .s = {2, 1}, .d = {1, 2},
              .pb = {1, 0}, .pe = {1, 1}, .ap = PLX_AUTO_PAD_NOTSET, .ceil_mode = true};
    pool_case(t, PLX_POOL_AVERAGE, true, 2, false, 99);
    pool_case(t, PLX_POOL_MAX, false, 2, true, 98);
}

/* An int8 average pool in 3-D (uint8 in, int8 out, their own parameters):
 * the exact sum of x - zx over the taps inside X, the taps counted as the
 * float pool counts them, the mean rounded once into Y's parameters. */
Test(pool3d, quantized_average) {
    for (uint32_t t = 0; t < 2; t++) {
        seed(120 + t);
        geom g = G3(1, 3, 3, 3, 5, 6, 7, 3, 2, 3);
        g.s[0] = 2, g.s[2] = 2, g.pb[0] = 1, g.pe[1] = 1, g.pb[2] = 1, g.d[1] = 2;
        g.ceil_mode = t == 1;
        derive(&g);
        plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
        for (int i = 0; i < 3; i++) {
            d.kernel[i] = g.k[i];
            d.strides[i] = g.s[i];
            d.dilations[i] = g.d[i];
            d.pads_begin[i] = g.pb[i];
            d.pads_end[i] = g.pe[i];
        }
        d.ceil_mode = g.ceil_mode;
        d.count_include_pad = t == 1;
        plx_tensor_info xi = nd_info(g.n, g.c, g.in, 3), yi = nd_info(g.n, g.c, g.out, 3);
        xi.dtype = PLX_DTYPE_UINT8;
        xi.quant.kind = PLX_QUANT_PER_TENSOR;
        xi.quant.scale = 0.05f;
        xi.quant.zero_point = 100;
        yi.dtype = PLX_DTYPE_INT8;
        yi.quant.kind = PLX_QUANT_PER_TENSOR;
        yi.quant.scale = 0.02f;
        yi.quant.zero_point = -10;
        size_t nx = numel(&xi), ny = numel(&yi);
        uint8_t *x = malloc(nx);
        int8_t *y = calloc(ny, 1);
        cr_assert(x != NULL && y != NULL);
        for (size_t i = 0; i < nx; i++) {
            x[i] = (uint8_t)rnd_i(0, 255);
        }
        plx_layer_view l = layer_of(PLX_OP_POOL, &d, &xi, 1, &yi, 1);
        char why[256];
        cr_assert(zero(ptr, (void *)plxk_check_pool(&l, why, sizeof why)), "refused: %s", why);
        cr_assert(run_layer(plxk_run_pool, &l, (const void *const[]){x}, (void *const[]){y}),
                  "%s", g_err);
        int64_t plane = prod(g.out, 3), inplane = prod(g.in, 3), taps = prod(g.k, 3);
        for (int64_t nc = 0; nc < g.c; nc++) {
            for (int64_t o = 0; o < plane; o++) {
                int64_t oi[3], ti[3], sum = 0, count = 0;
                unflat(o, g.out, 3, oi);
                for (int64_t k = 0; k < taps; k++) {
                    unflat(k, g.k, 3, ti);
                    int64_t at = 0;
                    bool inside = true, in_pad = true;
                    for (int i = 0; i < 3; i++) {
                        int64_t q = oi[i] * g.s[i] - g.pad[i] + ti[i] * g.d[i];
                        inside = inside && q >= 0 && q < g.in[i];
                        in_pad = in_pad && q >= -g.pad[i] && q < g.in[i] + g.pad_end[i];
                        at = at * g.in[i] + q;
                    }
                    if (inside) {
                        sum += (int64_t)x[nc * inplane + at] - 100;
                        count++;
                    } else if (d.count_include_pad && in_pad) {
                        count++;
                    }
                }
                float mean = count ? (float)((double)sum * 0.05f / (double)count) : 0.0f;
                double r = (double)nearbyintf(mean / 0.02f) - 10.0;
                r = r < -128.0 ? -128.0 : r > 127.0 ? 127.0 : r;
                cr_assert(eq(i8, y[nc * plane + o], (int8_t)r), "case %u channel %lld output %lld",
                          t, (long long)nc, (long long)o);
            }
        }
        free(x), free(y);
    }
}

/* What cpu_ref does not run in 3-D: column-major Indices (ONNX's
 * storage_order, a 2-D notion), and int8 convolutions, which stay on the
 * float path (their kernel is 1-D and 2-D). */
Test(pool3d, refusals) {
    geom g = G3(1, 1, 1, 1, 4, 4, 4, 2, 2, 2);
    derive(&g);
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = d.kernel[2] = 2;
    d.indices_column_major = true;
    plx_tensor_info xi = nd_info(1, 1, g.in, 3);
    plx_tensor_info yi[2] = {nd_info(1, 1, g.out, 3), nd_info(1, 1, g.out, 3)};
    yi[1].dtype = PLX_DTYPE_INT64;
    plx_layer_view l = layer_of(PLX_OP_POOL, &d, &xi, 1, yi, 2);
    char why[256];
    const char *r = plxk_check_pool(&l, why, sizeof why);
    cr_assert(r && strstr(r, "column-major"), "%s", r ? r : "(accepted)");

    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    plx_tensor_info in[2] = {nd_info(1, 1, g.in, 3), nd_info(1, 1, g.k, 3)};
    plx_tensor_info yo = nd_info(1, 1, (const int64_t[]){3, 3, 3}, 3);
    for (int i = 0; i < 2; i++) {
        in[i].dtype = PLX_DTYPE_UINT8;
        in[i].quant.kind = PLX_QUANT_PER_TENSOR;
        in[i].quant.scale = 0.5f;
    }
    yo.dtype = PLX_DTYPE_UINT8;
    yo.quant = in[0].quant;
    plx_layer_view q = layer_of(PLX_OP_CONV, &cd, in, 2, &yo, 1);
    r = plxk_check_conv(&q, why, sizeof why);
    cr_assert(r && strstr(r, "rank 5"), "%s", r ? r : "(accepted)");
}
