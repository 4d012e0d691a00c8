/* Tests of cpu_ref's kernels that scatter values into images
 * (kernels_col2im.c), called directly with hand-built layer views:
 * col2im on a hand-derived case, and on seeded random geometries (1 to 3
 * spatial dims, strides, dilations, pads) through its adjoint: col2im is
 * the transpose of im2col, so for any X and image Z, the sum of
 * col2im(X) * Z equals the sum of X * im2col(Z), with im2col written here
 * as the plain gather it is. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "C1"
#include "kernel_test_util.h"

static double rnd_d(void) {
    return -1.0 + 2.0 * (double)(rnd() >> 11) / 9007199254740992.0;
}

static bool c2i_run(const plx_col2im_desc *d, const plx_tensor_info *x,
                    const plx_tensor_info *y, const void *px, void *py) {
    plx_layer_view l = layer_of(PLX_OP_COL2IM, d, x, 1, y, 1);
    return run_layer(plxk_run_col2im, &l, (const void *const[]){px}, (void *const[]){py});
}

/* Image 3 x 3, blocks 2 x 2, stride 1: 4 blocks (2 x 2), X [1, 4, 4]
 * with X[b][l] = 1 everywhere counts how many blocks cover each pixel:
 * corners 1, edges 2, the centre 4. With pads 1 on every side and stride
 * 2 the padded image is 5 x 5 and the 4 blocks start at padded (0, 0),
 * (0, 2), (2, 0), (2, 2): each image pixel is covered once. */
Test(col2im, hand_counts) {
    float x[16], y[9];
    for (int i = 0; i < 16; i++) {
        x[i] = 1.0f;
    }
    plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
    d.spatial = 2;
    d.image_shape[0] = d.image_shape[1] = 3;
    d.block_shape[0] = d.block_shape[1] = 2;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 4, 4));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3, 3));
    cr_assert(c2i_run(&d, &tx, &ty, x, y), "%s", g_err);
    const float want[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    for (int i = 0; i < 9; i++) {
        cr_assert(eq(flt, y[i], want[i]), "pixel %d: %g", i, (double)y[i]);
    }
    d.strides[0] = d.strides[1] = 2;
    for (int i = 0; i < 2; i++) {
        d.pads_begin[i] = d.pads_end[i] = 1;
    }
    cr_assert(c2i_run(&d, &tx, &ty, x, y), "%s", g_err);
    for (int i = 0; i < 9; i++) {
        cr_assert(eq(flt, y[i], 1.0f), "pixel %d: %g", i, (double)y[i]);
    }
}

#define BIG 20000
static double g_x[BIG], g_y[BIG], g_z[BIG];

Test(col2im, random_adjoint_of_im2col) {
    seed(5);
    for (int t = 0; t < 200; t++) {
        plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
        const uint32_t r = (uint32_t)rnd_i(1, 3);
        d.spatial = r;
        int64_t block = 1, blocks = 1, plane = 1, nblk[3];
        for (uint32_t i = 0; i < r; i++) {
            d.image_shape[i] = rnd_i(1, r == 3 ? 5 : 8);
            d.block_shape[i] = rnd_i(1, 3);
            d.strides[i] = rnd_i(1, 3);
            d.dilations[i] = rnd_i(1, 2);
            d.pads_begin[i] = rnd_i(0, 2);
            d.pads_end[i] = rnd_i(0, 2);
            int64_t span = d.dilations[i] * (d.block_shape[i] - 1) + 1;
            int64_t padded = d.image_shape[i] + d.pads_begin[i] + d.pads_end[i];
            if (padded < span) {
                d.pads_end[i] += span - padded;
                padded = span;
            }
            nblk[i] = (padded - span) / d.strides[i] + 1;
            block *= d.block_shape[i];
            blocks *= nblk[i];
            plane *= d.image_shape[i];
        }
        const int64_t n = rnd_i(1, 2), c = rnd_i(1, 3);
        cr_assert(le(i64, n * c * block * blocks, BIG));
        plx_tensor_info tx = info(PLX_DTYPE_FLOAT64, SHAPE(n, c * block, blocks));
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT64, SHAPE(n, c, 1, 1, 1));
        ty.rank = r + 2;
        for (uint32_t i = 0; i < r; i++) {
            ty.dims[2 + i] = d.image_shape[i];
        }
        for (int64_t i = 0; i < n * c * block * blocks; i++) {
            g_x[i] = rnd_d();
        }
        for (int64_t i = 0; i < n * c * plane; i++) {
            g_z[i] = rnd_d();
        }
        cr_assert(c2i_run(&d, &tx, &ty, g_x, g_y), "%s", g_err);
        double lhs = 0, rhs = 0, mag = 0;
        for (int64_t i = 0; i < n * c * plane; i++) {
            lhs += g_y[i] * g_z[i];
        }
        /* im2col(Z)[n, c * block + b, l] = Z[n, c, pixel] or 0 in the padding */
        for (int64_t nc = 0; nc < n * c; nc++) {
            for (int64_t b = 0; b < block; b++) {
                for (int64_t l = 0; l < blocks; l++) {
                    int64_t rb = b, rl = l, off = 0, unit = 1;
                    bool inside = true;
                    for (uint32_t i = r; i-- > 0;) {
                        int64_t kb = rb % d.block_shape[i], kl = rl % nblk[i];
                        rb /= d.block_shape[i];
                        rl /= nblk[i];
                        int64_t p = kl * d.strides[i] - d.pads_begin[i] + kb * d.dilations[i];
                        inside = inside && p >= 0 && p < d.image_shape[i];
                        off += p * unit;
                        unit *= d.image_shape[i];
                    }
                    const double xv = g_x[(nc * block + b) * blocks + l];
                    if (inside) {
                        rhs += xv * g_z[nc * plane + off];
                    }
                    mag += fabs(xv);
                }
            }
        }
        cr_assert(le(dbl, fabs(lhs - rhs), 1e-12 * (mag + 1.0)), "case %d (r %u): %.17g vs %.17g",
                  t, r, lhs, rhs);
    }
}

Test(col2im, refusals) {
    char buf[256];
    plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
    d.spatial = 1;
    d.image_shape[0] = 4;
    d.block_shape[0] = 2;
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(1, 2, 3));
    plx_tensor_info ty = info(PLX_DTYPE_INT32, SHAPE(1, 1, 4));
    plx_layer_view l = layer_of(PLX_OP_COL2IM, &d, &tx, 1, &ty, 1);
    const char *why = plxk_check_col2im(&l, buf, sizeof buf);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "int32"))), "%s", why);
    tx.dtype = ty.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(zero(ptr, (void *)plxk_check_col2im(&l, buf, sizeof buf)), "%s", buf);
    tx.dims[2] = 4; /* 3 blocks of 2 over 4 pixels, not 4 */
    cr_assert(not(zero(ptr, (void *)plxk_check_col2im(&l, buf, sizeof buf))));
}

/* ---- max_unpool ---------------------------------------------------------- */

static bool unpool_run(const plx_max_unpool_desc *d, const plx_tensor_info *x,
                       const plx_tensor_info *y, const void *px, const int64_t *pi, void *py) {
    plx_tensor_info ins[2] = {*x, *x};
    ins[1].dtype = PLX_DTYPE_INT64;
    plx_layer_view l = layer_of(PLX_OP_MAX_UNPOOL, d, ins, 2, y, 1);
    return run_layer(plxk_run_max_unpool, &l, (const void *const[]){px, pi}, (void *const[]){py});
}

/* X [1, 1, 2, 2] = 5 6 7 8 at indices 5 7 13 15 of the 4 x 4 input of a
 * 2 x 2 pool with stride 2: Y 4 x 4 is 0 but at (1, 1), (1, 3), (3, 1),
 * (3, 3). With output_shape 5 x 5 the same coordinates hold them (offsets
 * 6, 8, 16, 18); with 3 x 3, only (1, 1) is left. */
Test(max_unpool, hand_output_shapes) {
    const float x[4] = {5, 6, 7, 8};
    const int64_t ind[4] = {5, 7, 13, 15};
    float y[25];
    plx_max_unpool_desc d = PLX_MAX_UNPOOL_DESC_INIT;
    d.spatial = 2;
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 2, 2));
    plx_tensor_info t4 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 4, 4));
    cr_assert(unpool_run(&d, &tx, &t4, x, ind, y), "%s", g_err);
    for (int i = 0; i < 16; i++) {
        const float want = i == 5 ? 5 : i == 7 ? 6 : i == 13 ? 7 : i == 15 ? 8 : 0;
        cr_assert(eq(flt, y[i], want), "4x4 %d", i);
    }
    d.output_shape[0] = d.output_shape[1] = 5;
    plx_tensor_info t5 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 5, 5));
    cr_assert(unpool_run(&d, &tx, &t5, x, ind, y), "%s", g_err);
    for (int i = 0; i < 25; i++) {
        const float want = i == 6 ? 5 : i == 8 ? 6 : i == 16 ? 7 : i == 18 ? 8 : 0;
        cr_assert(eq(flt, y[i], want), "5x5 %d", i);
    }
    d.output_shape[0] = d.output_shape[1] = 3;
    plx_tensor_info t3 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3, 3));
    cr_assert(unpool_run(&d, &tx, &t3, x, ind, y), "%s", g_err);
    for (int i = 0; i < 9; i++) {
        cr_assert(eq(flt, y[i], i == 4 ? 5.0f : 0.0f), "3x3 %d", i);
    }
    /* an index past the 16 positions fails the run */
    const int64_t bad[4] = {5, 7, 13, 16};
    cr_assert(not(unpool_run(&d, &tx, &t3, x, bad, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "index 16 (I element 3) is outside the 16"))), "%s",
              g_err);
}

/* Random 1-D and 2-D unpools (N, C > 1, so indices count the planes too)
 * against a loop over Y's coordinates looking each one up in S. */
Test(max_unpool, random_against_loop) {
    seed(9);
    static double x[512], y[4096];
    static int64_t ind[512];
    for (int t = 0; t < 100; t++) {
        const uint32_t r = (uint32_t)rnd_i(1, 2);
        plx_max_unpool_desc d = PLX_MAX_UNPOOL_DESC_INIT;
        d.spatial = r;
        const int64_t n = rnd_i(1, 2), c = rnd_i(1, 3);
        int64_t in[2], full[2], out[2], s_count = n * c, x_count = n * c, y_count = n * c;
        const bool given = rnd_i(0, 1);
        for (uint32_t i = 0; i < r; i++) {
            in[i] = rnd_i(1, 4);
            d.kernel[i] = rnd_i(1, 3);
            d.strides[i] = rnd_i(1, 3);
            d.pads_begin[i] = rnd_i(0, d.kernel[i] - 1);
            d.pads_end[i] = rnd_i(0, d.kernel[i] - 1);
            full[i] = (in[i] - 1) * d.strides[i] + d.kernel[i] - d.pads_begin[i] - d.pads_end[i];
            if (full[i] < 1) {
                d.pads_end[i] = 0;
                d.pads_begin[i] = 0;
                full[i] = (in[i] - 1) * d.strides[i] + d.kernel[i];
            }
            out[i] = given ? rnd_i(1, full[i] + 2) : full[i];
            d.output_shape[i] = given ? out[i] : 0;
            s_count *= full[i];
            x_count *= in[i];
            y_count *= out[i];
        }
        plx_tensor_info tx = info(PLX_DTYPE_FLOAT64, SHAPE(n, c, 1, 1));
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT64, SHAPE(n, c, 1, 1));
        tx.rank = ty.rank = r + 2;
        for (uint32_t i = 0; i < r; i++) {
            tx.dims[2 + i] = in[i];
            ty.dims[2 + i] = out[i];
        }
        for (int64_t e = 0; e < x_count; e++) {
            x[e] = (double)(e + 1);
            ind[e] = rnd_i(0, s_count - 1);
        }
        cr_assert(unpool_run(&d, &tx, &ty, x, ind, y), "%s", g_err);
        for (int64_t o = 0; o < y_count; o++) {
            /* Y's coordinates, then the position in S, the last X element there */
            int64_t rest = o, coord[4], dims_y[4] = {n, c, out[0], r > 1 ? out[1] : 1};
            int64_t dims_s[4] = {n, c, full[0], r > 1 ? full[1] : 1};
            for (int i = (int)r + 1; i >= 0; i--) {
                coord[i] = rest % dims_y[i];
                rest /= dims_y[i];
            }
            bool in_s = true;
            int64_t pos = 0;
            for (uint32_t i = 0; i < r + 2; i++) {
                in_s = in_s && coord[i] < dims_s[i];
                pos = pos * dims_s[i] + coord[i];
            }
            double want = 0;
            for (int64_t e = 0; in_s && e < x_count; e++) {
                if (ind[e] == pos) {
                    want = x[e];
                }
            }
            cr_assert(eq(dbl, y[o], want), "case %d Y[%lld]", t, (long long)o);
        }
    }
}
