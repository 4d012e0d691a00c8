/* Tests of cpu_ref's det kernel (kernels_det.c), called directly with
 * hand-built layer views: hand-derived determinants (a swap of rows
 * needed, a singular matrix, NaN) and seeded random matrices of 1 to 6
 * rows against the Leibniz formula (the sum over permutations), summed
 * here in double. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "D1"
#include "kernel_test_util.h"


static bool det_run(const plx_tensor_info *x, const plx_tensor_info *y, const void *px, void *py) {
    plx_layer_view l = layer_of(PLX_OP_DET, NULL, x, 1, y, 1);
    return run_layer(plxk_run_det, &l, (const void *const[]){px}, (void *const[]){py});
}

/* [[0, 1], [2, 3]]: 0 * 3 - 1 * 2 = -2 (the first pivot needs a row
 * swap); [[1, 2], [2, 4]]: 0; [[2, 0, 0], [0, 3, 0], [0, 0, 4]]: 24; NaN
 * anywhere gives NaN. */
Test(det, hand_cases) {
    float x[8] = {0, 1, 2, 3, 1, 2, 2, 4}, y[2];
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(2, 2, 2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    cr_assert(det_run(&tx, &ty, x, y), "%s", g_err);
    cr_assert(eq(flt, y[0], -2.0f));
    cr_assert(eq(flt, y[1], 0.0f));
    double d3[9] = {2, 0, 0, 0, 3, 0, 0, 0, 4}, y3;
    plx_tensor_info t3 = info(PLX_DTYPE_FLOAT64, SHAPE(3, 3));
    plx_tensor_info s = info(PLX_DTYPE_FLOAT64, SCALAR);
    cr_assert(det_run(&t3, &s, d3, &y3), "%s", g_err);
    cr_assert(eq(dbl, y3, 24.0));
    d3[4] = NAN;
    cr_assert(det_run(&t3, &s, d3, &y3), "%s", g_err);
    cr_assert(isnan(y3));
}

/* The Leibniz sum over the permutations of m (Heap's order, tracking the
 * sign). */
static double leibniz(const double *a, int m) {
    int perm[6], c[6] = {0};
    for (int i = 0; i < m; i++) {
        perm[i] = i;
    }
    double sum = 0;
    int sign = 1;
    for (;;) {
        double p = sign;
        for (int i = 0; i < m; i++) {
            p *= a[i * m + perm[i]];
        }
        sum += p;
        int i = 1;
        while (i < m && c[i] >= i) {
            c[i++] = 0;
        }
        if (i >= m) {
            break;
        }
        int j = i % 2 ? c[i] : 0, t = perm[j];
        perm[j] = perm[i];
        perm[i] = t;
        sign = -sign;
        c[i]++;
    }
    return sum;
}

Test(det, random_against_leibniz) {
    seed(3);
    static double x[4 * 36], y[4];
    for (int t = 0; t < 60; t++) {
        const int m = (int)rnd_i(1, 6), b = (int)rnd_i(1, 4);
        for (int i = 0; i < b * m * m; i++) {
            x[i] = (double)rnd_i(-9, 9) / 4.0;
        }
        plx_tensor_info tx = info(PLX_DTYPE_FLOAT64, SHAPE(b, m, m));
        plx_tensor_info ty = info(PLX_DTYPE_FLOAT64, SHAPE(b));
        cr_assert(det_run(&tx, &ty, x, y), "%s", g_err);
        for (int k = 0; k < b; k++) {
            const double want = leibniz(x + k * m * m, m);
            cr_assert(le(dbl, fabs(y[k] - want), 1e-9 * (fabs(want) + 1.0)),
                      "case %d (m %d) batch %d: %.17g vs %.17g", t, m, k, y[k], want);
        }
    }
}

Test(det, refusals) {
    char buf[256];
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(2, 2));
    plx_tensor_info ty = info(PLX_DTYPE_INT32, SCALAR);
    plx_layer_view l = layer_of(PLX_OP_DET, NULL, &tx, 1, &ty, 1);
    const char *why = plxk_check_det(&l, buf, sizeof buf);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "int32"))), "%s", why);
    tx.dtype = ty.dtype = PLX_DTYPE_FLOAT32;
    tx.dims[1] = 3;
    cr_assert(not(zero(ptr, (void *)plxk_check_det(&l, buf, sizeof buf))));
}
