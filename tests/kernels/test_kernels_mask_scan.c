/* Tests of cpu_ref's trilu, one_hot, hardmax and cum_sum kernels
 * (kernels_mask_scan.c), called directly with hand-built layer views:
 * hand-derived cases (the derivation is in the comments, ONNX's own
 * examples among them) and seeded random cases checked against plain
 * reference loops written here, which walk every element by its
 * coordinates, independently of the kernels' row walks. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "M1"
#include "kernel_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

static bool run1(plxk_run_fn fn, plx_op op, const void *desc, const plx_tensor_info *x,
                 const plx_tensor_info *y, const void *px, void *py) {
    plx_layer_view l = layer_of(op, desc, x, 1, y, 1);
    const void *ins[] = {px};
    void *outs[] = {py};
    return run_layer(fn, &l, ins, outs);
}


static const plx_dtype g_all[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16,
                                  PLX_DTYPE_INT8,    PLX_DTYPE_UINT8,   PLX_DTYPE_INT16,
                                  PLX_DTYPE_INT32,   PLX_DTYPE_INT64,   PLX_DTYPE_BOOL,
                                  PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16,  PLX_DTYPE_UINT32,
                                  PLX_DTYPE_UINT64};
#define G_ALL_COUNT (sizeof g_all / sizeof g_all[0])

static void fill_bytes(void *p, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)rnd();
}

static void unravel(const plx_tensor_info *t, size_t i, int64_t *c) {
    for (uint32_t d = t->rank; d-- > 0;) {
        c[d] = (int64_t)(i % (size_t)t->dims[d]);
        i /= (size_t)t->dims[d];
    }
}
static size_t ravel(const plx_tensor_info *t, const int64_t *c) {
    size_t i = 0;
    for (uint32_t d = 0; d < t->rank; d++) i = i * (size_t)t->dims[d] + (size_t)c[d];
    return i;
}

/* A float value stored in a float dtype (exact for the small values used). */
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

#define BIG 8192
static uint8_t g_x[BIG * 8], g_y[BIG * 8], g_ref[BIG * 8];

/* ---- trilu -------------------------------------------------------------- */

static bool trilu_run(bool upper, int64_t k, const plx_tensor_info *x, const void *px, void *py) {
    plx_trilu_desc d = PLX_TRILU_DESC_INIT;
    d.upper = upper;
    d.k = k;
    return run1(plxk_run_trilu, PLX_OP_TRILU, &d, x, x, px, py);
}

Test(trilu, hand_upper_lower_and_far_k) {
    /* X = [[1,2,3,4],[5,6,7,8],[9,10,11,12]] */
    int32_t x[12], y[12];
    for (int i = 0; i < 12; i++) x[i] = i + 1;
    plx_tensor_info t = info(PLX_DTYPE_INT32, SHAPE(3, 4));
    /* upper, k=0: j >= i */
    cr_assert(trilu_run(true, 0, &t, x, y), "%s", g_err);
    int32_t u0[] = {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12};
    for (int i = 0; i < 12; i++) cr_assert(eq(i32, y[i], u0[i]), "upper k=0 i %d", i);
    /* upper, k=2: j >= i + 2 */
    cr_assert(trilu_run(true, 2, &t, x, y), "%s", g_err);
    int32_t u2[] = {0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0};
    for (int i = 0; i < 12; i++) cr_assert(eq(i32, y[i], u2[i]), "upper k=2 i %d", i);
    /* lower, k=-1: j <= i - 1 */
    cr_assert(trilu_run(false, -1, &t, x, y), "%s", g_err);
    int32_t lm1[] = {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0};
    for (int i = 0; i < 12; i++) cr_assert(eq(i32, y[i], lm1[i]), "lower k=-1 i %d", i);
    /* lower, k=1: j <= i + 1 */
    cr_assert(trilu_run(false, 1, &t, x, y), "%s", g_err);
    int32_t l1[] = {1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12};
    for (int i = 0; i < 12; i++) cr_assert(eq(i32, y[i], l1[i]), "lower k=1 i %d", i);
    /* k past the matrix, to the int64 limits: all or nothing kept */
    int64_t ks[] = {INT64_MIN, -4, 4, INT64_MAX};
    for (int q = 0; q < 4; q++) {
        for (int up = 0; up < 2; up++) {
            memset(y, 0x55, sizeof y);
            cr_assert(trilu_run(up, ks[q], &t, x, y), "%s", g_err);
            bool keep_all = up ? ks[q] < 0 : ks[q] > 0;
            for (int i = 0; i < 12; i++) {
                cr_assert(eq(i32, y[i], keep_all ? x[i] : 0), "k %lld upper %d i %d",
                          (long long)ks[q], up, i);
            }
        }
    }
}

Test(trilu, random_batched_all_dtypes) {
    seed(11);
    for (int rep = 0; rep < 300; rep++) {
        plx_dtype t = g_all[(size_t)rep % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        uint32_t rank = (uint32_t)rnd_i(2, 4);
        int64_t dims[4];
        for (uint32_t d = 0; d < rank; d++) dims[d] = rnd_i(rep % 23 == 0 ? 0 : 1, 6);
        plx_tensor_info tx = info(t, dims, rank);
        size_t n = numel(&tx);
        bool upper = rnd() & 1;
        int64_t k = rnd_i(-8, 8);
        fill_bytes(g_x, n * es);
        memset(g_y, 0xab, n * es + 1);
        cr_assert(trilu_run(upper, k, &tx, g_x, g_y), "%s", g_err);
        for (size_t e = 0; e < n; e++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&tx, e, c);
            int64_t i = c[rank - 2], j = c[rank - 1];
            bool keep = upper ? j - i >= k : j - i <= k;
            if (keep) memcpy(g_ref + e * es, g_x + e * es, es);
            else memset(g_ref + e * es, 0, es);
        }
        cr_assert(zero(int, memcmp(g_y, g_ref, n * es)), "rep %d", rep);
        cr_assert(eq(u8, g_y[n * es], 0xab), "rep %d wrote past Y", rep);
    }
}

Test(trilu, refusals) {
    char buf[160];
    plx_trilu_desc d = PLX_TRILU_DESC_INIT;
    plx_tensor_info x1 = info(PLX_DTYPE_FLOAT32, SHAPE(4)), x = info(PLX_DTYPE_FLOAT32, SHAPE(2, 2));
    plx_tensor_info yi = info(PLX_DTYPE_INT32, SHAPE(2, 2)), ys = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3));
    plx_layer_view l = layer_of(PLX_OP_TRILU, &d, &x1, 1, &x1, 1);
    cr_assert(eq(str, (char *)plxk_check_trilu(&l, buf, sizeof buf),
                 "trilu: X has rank 1, expected 2 or more"));
    l = layer_of(PLX_OP_TRILU, &d, &x, 1, &yi, 1);
    cr_assert(eq(str, (char *)plxk_check_trilu(&l, buf, sizeof buf),
                 "trilu: the output is int32, expected float32"));
    l = layer_of(PLX_OP_TRILU, &d, &x, 1, &ys, 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_trilu(&l, buf, sizeof buf))));
    l = layer_of(PLX_OP_TRILU, &d, &x, 1, &x, 1);
    cr_assert(zero(ptr, (void *)plxk_check_trilu(&l, buf, sizeof buf)));
}

/* ---- one_hot ------------------------------------------------------------ */

static bool one_hot_run(int32_t axis, int64_t depth, const plx_tensor_info *ind,
                        const plx_tensor_info *vals, const plx_tensor_info *y, const void *pi,
                        const void *pv, void *py) {
    plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(depth);
    d.axis = axis;
    plx_tensor_info ins[2] = {*ind, *vals};
    plx_layer_view l = layer_of(PLX_OP_ONE_HOT, &d, ins, 2, y, 1);
    const void *in_ptrs[] = {pi, pv};
    void *outs[] = {py};
    return run_layer(plxk_run_one_hot, &l, in_ptrs, outs);
}

Test(one_hot, hand_negative_out_of_range_and_float_indices) {
    /* ONNX's test_onehot_negative_indices: indices [0,-7,-8], depth 10,
     * values [1,3] -> rows 0, 3 (-7+10) and 2 (-8+10) are on */
    int64_t ind[] = {0, -7, -8};
    float vals[] = {1, 3}, y[30];
    plx_tensor_info ti = info(PLX_DTYPE_INT64, SHAPE(3)), tv = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(3, 10));
    cr_assert(one_hot_run(-1, 10, &ti, &tv, &ty, ind, vals, y), "%s", g_err);
    for (int r = 0; r < 3; r++) {
        int on = r == 0 ? 0 : r == 1 ? 3 : 2;
        for (int j = 0; j < 10; j++) {
            cr_assert(eq(flt, y[r * 10 + j], j == on ? 3.0f : 1.0f), "r %d j %d", r, j);
        }
    }
    /* out of range (3, -4 for depth 3) gives all-off rows; floats truncate
     * toward zero (2.9 -> 2, -0.5 -> 0, -2.5 -> -2 -> 1); NaN and inf are
     * out of range. Axis 0: Y is [depth, 7]. */
    float fi[] = {3.0f, -4.0f, 2.9f, -0.5f, -2.5f, NAN, INFINITY};
    int8_t v8[] = {-1, 7}, y8[21];
    plx_tensor_info tfi = info(PLX_DTYPE_FLOAT32, SHAPE(7)), tv8 = info(PLX_DTYPE_INT8, SHAPE(2));
    plx_tensor_info ty8 = info(PLX_DTYPE_INT8, SHAPE(3, 7));
    cr_assert(one_hot_run(0, 3, &tfi, &tv8, &ty8, fi, v8, y8), "%s", g_err);
    int on_at[] = {-1, -1, 2, 0, 1, -1, -1};
    for (int p = 0; p < 3; p++) {
        for (int i = 0; i < 7; i++) {
            cr_assert(eq(i8, y8[p * 7 + i], p == on_at[i] ? 7 : -1), "p %d i %d", p, i);
        }
    }
    /* scalar indices: Y is [depth] */
    int32_t s = 1;
    uint8_t bv[] = {0, 1}, by[4];
    plx_tensor_info ts = info(PLX_DTYPE_INT32, SCALAR), tbv = info(PLX_DTYPE_BOOL, SHAPE(2));
    plx_tensor_info tby = info(PLX_DTYPE_BOOL, SHAPE(4));
    cr_assert(one_hot_run(-1, 4, &ts, &tbv, &tby, &s, bv, by), "%s", g_err);
    uint8_t bw[] = {0, 1, 0, 0};
    cr_assert(zero(int, memcmp(by, bw, 4)));
}

static int64_t ref_index(plx_dtype t, const void *p, size_t i, bool *valid) {
    *valid = true;
    switch (t) {
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case PLX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case PLX_DTYPE_INT32: return ((const int32_t *)p)[i];
    case PLX_DTYPE_INT64: return ((const int64_t *)p)[i];
    default: {
        float f = load_float(t, p, i);
        *valid = isfinite(f);
        return *valid ? (int64_t)truncf(f) : 0;
    }
    }
}

Test(one_hot, random_axes_dtypes) {
    static const plx_dtype ind_types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16,
                                          PLX_DTYPE_INT8,    PLX_DTYPE_UINT8,   PLX_DTYPE_INT16,
                                          PLX_DTYPE_INT32,   PLX_DTYPE_INT64};
    seed(12);
    for (int rep = 0; rep < 300; rep++) {
        plx_dtype it = ind_types[rep % 8], vt = g_all[(size_t)(rep / 8) % G_ALL_COUNT];
        size_t ves = plx_dtype_size(vt);
        uint32_t r = (uint32_t)rnd_i(0, 3);
        int64_t idims[3], depth = rnd_i(1, 6);
        for (uint32_t d = 0; d < r; d++) idims[d] = rnd_i(rep % 31 == 0 ? 0 : 1, 4);
        int32_t axis = (int32_t)rnd_i(-(int64_t)r - 1, r);
        uint32_t a = (uint32_t)(axis < 0 ? axis + (int32_t)r + 1 : axis);
        int64_t ydims[4];
        for (uint32_t i = 0, k = 0; i <= r; i++) ydims[i] = i == a ? depth : idims[k++];
        plx_tensor_info ti = info(it, idims, r), tv = info(vt, SHAPE(2)), ty = info(vt, ydims, r + 1);
        size_t ni = numel(&ti), ny = numel(&ty);
        for (size_t i = 0; i < ni; i++) {
            int64_t v = rnd_i(-depth - 2, depth + 1); /* some out of range */
            switch (it) {
            case PLX_DTYPE_INT8: ((int8_t *)g_x)[i] = (int8_t)v; break;
            case PLX_DTYPE_UINT8: ((uint8_t *)g_x)[i] = (uint8_t)(v < 0 ? 200 : v); break;
            case PLX_DTYPE_INT16: ((int16_t *)g_x)[i] = (int16_t)v; break;
            case PLX_DTYPE_INT32: ((int32_t *)g_x)[i] = (int32_t)v; break;
            case PLX_DTYPE_INT64: ((int64_t *)g_x)[i] = v * (rnd() % 5 == 0 ? 1000000007 : 1); break;
            default: store_float(it, g_x, i, (float)v + (float)rnd_i(-3, 3) * 0.25f); break;
            }
        }
        uint8_t vals[16];
        fill_bytes(vals, 2 * ves);
        memset(g_y, 0xab, ny * ves + 1);
        cr_assert(one_hot_run(axis, depth, &ti, &tv, &ty, g_x, vals, g_y), "%s", g_err);
        for (size_t e = 0; e < ny; e++) {
            int64_t c[PLX_MAX_RANK], ic[PLX_MAX_RANK];
            unravel(&ty, e, c);
            for (uint32_t i = 0, k = 0; i <= r; i++) {
                if (i != a) ic[k++] = c[i];
            }
            bool valid;
            int64_t idx = ref_index(it, g_x, ravel(&ti, ic), &valid);
            if (idx < 0) idx += depth;
            bool on = valid && idx >= 0 && idx < depth && idx == c[a];
            memcpy(g_ref + e * ves, vals + (on ? ves : 0), ves);
        }
        cr_assert(zero(int, memcmp(g_y, g_ref, ny * ves)), "rep %d", rep);
        cr_assert(eq(u8, g_y[ny * ves], 0xab), "rep %d wrote past Y", rep);
    }
}

Test(one_hot, refusals) {
    char buf[160];
    plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(3);
    plx_tensor_info ins[2] = {info(PLX_DTYPE_BOOL, SHAPE(2)), info(PLX_DTYPE_FLOAT32, SHAPE(2))};
    plx_tensor_info y = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3));
    plx_layer_view l = layer_of(PLX_OP_ONE_HOT, &d, ins, 2, &y, 1);
    cr_assert(eq(str, (char *)plxk_check_one_hot(&l, buf, sizeof buf),
                 "one_hot: indices of dtype bool are not supported"));
    ins[0].dtype = PLX_DTYPE_INT64;
    cr_assert(zero(ptr, (void *)plxk_check_one_hot(&l, buf, sizeof buf)));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    cr_assert(eq(str, (char *)plxk_check_one_hot(&l, buf, sizeof buf),
                 "one_hot: values must have 2 elements"));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    d.axis = 2;
    cr_assert(eq(str, (char *)plxk_check_one_hot(&l, buf, sizeof buf),
                 "one_hot: axis 2 is out of range for rank 2"));
    d.axis = 0; /* Y would be [3,2] */
    cr_assert(not(zero(ptr, (void *)plxk_check_one_hot(&l, buf, sizeof buf))));
}

/* ---- hardmax ------------------------------------------------------------ */

static bool hardmax_run(int32_t axis, const plx_tensor_info *x, const void *px, void *py) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
    return run1(plxk_run_hardmax, PLX_OP_HARDMAX, &d, x, x, px, py);
}

Test(hardmax, hand_ties_nan_and_axes) {
    /* ONNX's test_hardmax_example: [[3,0,1,2],[2,5,1,0],[0,1,3,2],[0,1,2,3]] ->
     * the identity's rows 0, 1, 2, 3; with ties [1,3,3,2] the first 3 wins;
     * a NaN wins over every number, the first NaN over a later one */
    float x[] = {3, 0, 1, 2, 2, 5, 1, 0, 0, 1, 3, 2, 0, 1, 2, 3,
                 1, 3, 3, 2, 1, NAN, 5, NAN}, y[24];
    plx_tensor_info t = info(PLX_DTYPE_FLOAT32, SHAPE(6, 4));
    cr_assert(hardmax_run(-1, &t, x, y), "%s", g_err);
    int at[] = {0, 1, 2, 3, 1, 1};
    for (int r = 0; r < 6; r++) {
        for (int j = 0; j < 4; j++) {
            cr_assert(eq(flt, y[r * 4 + j], j == at[r] ? 1.0f : 0.0f), "r %d j %d", r, j);
        }
    }
    /* axis 0 of [2,3] float16: columns [1,4], [5,5], [-1,-2] -> 1, 0 (first), 0 */
    uint16_t h[6], hy[6];
    float hv[] = {1, 5, -1, 4, 5, -2};
    for (int i = 0; i < 6; i++) h[i] = plx_float32_to_float16(hv[i]);
    plx_tensor_info th = info(PLX_DTYPE_FLOAT16, SHAPE(2, 3));
    cr_assert(hardmax_run(0, &th, h, hy), "%s", g_err);
    float hw[] = {0, 1, 1, 1, 0, 0};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(flt, plx_float16_to_float32(hy[i]), hw[i]), "i %d", i);
    }
    /* an empty axis: nothing to write */
    float sentinel = 9.0f;
    plx_tensor_info te = info(PLX_DTYPE_FLOAT32, SHAPE(3, 0));
    cr_assert(hardmax_run(1, &te, x, &sentinel), "%s", g_err);
    cr_assert(eq(flt, sentinel, 9.0f));
}

Test(hardmax, random_axes_float_dtypes) {
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16};
    seed(13);
    for (int rep = 0; rep < 300; rep++) {
        plx_dtype t = types[rep % 3];
        size_t es = plx_dtype_size(t);
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        int64_t dims[4];
        for (uint32_t d = 0; d < rank; d++) dims[d] = rnd_i(rep % 29 == 0 ? 0 : 1, 5);
        int32_t axis = (int32_t)rnd_i(-(int64_t)rank, rank - 1);
        uint32_t a = (uint32_t)(axis < 0 ? axis + (int32_t)rank : axis);
        plx_tensor_info tx = info(t, dims, rank);
        size_t n = numel(&tx);
        for (size_t i = 0; i < n; i++) {
            /* few distinct values: many ties; now and then a NaN or -inf */
            uint64_t q = rnd() % 40;
            store_float(t, g_x, i, q == 0 ? NAN : q == 1 ? -INFINITY : (float)rnd_i(-3, 3));
        }
        memset(g_y, 0xab, n * es + 1);
        cr_assert(hardmax_run(axis, &tx, g_x, g_y), "%s", g_err);
        for (size_t e = 0; e < n; e++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&tx, e, c);
            /* the first maximum of the line through e, NaN the largest */
            int64_t best = 0;
            for (int64_t j = 0; j < dims[a]; j++) {
                c[a] = j;
                float v = load_float(t, g_x, ravel(&tx, c));
                c[a] = best;
                float bv = load_float(t, g_x, ravel(&tx, c));
                if (!isnan(bv) && (isnan(v) || v > bv)) best = j;
            }
            unravel(&tx, e, c);
            store_float(t, g_ref, e, c[a] == best ? 1.0f : 0.0f);
        }
        cr_assert(zero(int, memcmp(g_y, g_ref, n * es)), "rep %d", rep);
        cr_assert(eq(u8, g_y[n * es], 0xab), "rep %d wrote past Y", rep);
    }
}

Test(hardmax, refusals) {
    char buf[160];
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    plx_tensor_info x = info(PLX_DTYPE_INT32, SHAPE(2, 2));
    plx_layer_view l = layer_of(PLX_OP_HARDMAX, &d, &x, 1, &x, 1);
    cr_assert(eq(str, (char *)plxk_check_hardmax(&l, buf, sizeof buf),
                 "hardmax: dtype int32 is not supported"));
    x.dtype = PLX_DTYPE_BFLOAT16;
    cr_assert(zero(ptr, (void *)plxk_check_hardmax(&l, buf, sizeof buf)));
    d.axis = 2;
    cr_assert(eq(str, (char *)plxk_check_hardmax(&l, buf, sizeof buf),
                 "hardmax: axis 2 is out of range for rank 2"));
}

/* ---- cum_sum ------------------------------------------------------------ */

static bool cum_sum_run(int32_t axis, bool exclusive, bool reverse, const plx_tensor_info *x,
                        const void *px, void *py) {
    plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT(axis);
    d.exclusive = exclusive;
    d.reverse = reverse;
    return run1(plxk_run_cum_sum, PLX_OP_CUM_SUM, &d, x, x, px, py);
}

Test(cum_sum, hand_onnx_examples) {
    /* ONNX's test_cumsum_1d*: [1,2,3,4,5] */
    float x[] = {1, 2, 3, 4, 5}, y[5];
    plx_tensor_info t = info(PLX_DTYPE_FLOAT32, SHAPE(5));
    float want[4][5] = {{1, 3, 6, 10, 15},  /* plain */
                        {0, 1, 3, 6, 10},   /* exclusive */
                        {15, 14, 12, 9, 5}, /* reverse */
                        {14, 12, 9, 5, 0}}; /* reverse exclusive */
    for (int m = 0; m < 4; m++) {
        cr_assert(cum_sum_run(0, m & 1, m & 2, &t, x, y), "%s", g_err);
        for (int i = 0; i < 5; i++) cr_assert(eq(flt, y[i], want[m][i]), "mode %d i %d", m, i);
    }
    /* test_cumsum_2d_axis_0 / _1 / _negative_axis: [[1,2,3],[4,5,6]] */
    int64_t x2[] = {1, 2, 3, 4, 5, 6}, y2[6];
    plx_tensor_info t2 = info(PLX_DTYPE_INT64, SHAPE(2, 3));
    cr_assert(cum_sum_run(0, false, false, &t2, x2, y2), "%s", g_err);
    int64_t w0[] = {1, 2, 3, 5, 7, 9};
    for (int i = 0; i < 6; i++) cr_assert(eq(i64, y2[i], w0[i]), "axis 0 i %d", i);
    cr_assert(cum_sum_run(-1, false, false, &t2, x2, y2), "%s", g_err);
    int64_t w1[] = {1, 3, 6, 4, 9, 15};
    for (int i = 0; i < 6; i++) cr_assert(eq(i64, y2[i], w1[i]), "axis -1 i %d", i);
    /* int32 wraps: INT32_MAX + 1 is INT32_MIN */
    int32_t x3[] = {INT32_MAX, 1, -1}, y3[3];
    plx_tensor_info t3 = info(PLX_DTYPE_INT32, SHAPE(3));
    cr_assert(cum_sum_run(0, false, false, &t3, x3, y3), "%s", g_err);
    cr_assert(eq(i32, y3[1], INT32_MIN));
    cr_assert(eq(i32, y3[2], INT32_MAX));
    /* float16 sums in float32: 2048 + 1 + 1 is 2050 (in float16 steps,
     * 2048 + 1 would round back to 2048 twice) */
    uint16_t h[3], hy[3];
    float hv[] = {2048, 1, 1};
    for (int i = 0; i < 3; i++) h[i] = plx_float32_to_float16(hv[i]);
    plx_tensor_info th = info(PLX_DTYPE_FLOAT16, SHAPE(3));
    cr_assert(cum_sum_run(0, false, false, &th, h, hy), "%s", g_err);
    cr_assert(eq(flt, plx_float16_to_float32(hy[2]), 2050.0f));
}

Test(cum_sum, random_axes_modes_dtypes) {
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16,
                                      PLX_DTYPE_INT32, PLX_DTYPE_INT64};
    seed(14);
    for (int rep = 0; rep < 400; rep++) {
        plx_dtype t = types[rep % 5];
        size_t es = plx_dtype_size(t);
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        int64_t dims[4];
        for (uint32_t d = 0; d < rank; d++) dims[d] = rnd_i(rep % 37 == 0 ? 0 : 1, 6);
        int32_t axis = (int32_t)rnd_i(-(int64_t)rank, rank - 1);
        uint32_t a = (uint32_t)(axis < 0 ? axis + (int32_t)rank : axis);
        bool exclusive = rnd() & 1, reverse = rnd() & 1;
        plx_tensor_info tx = info(t, dims, rank);
        size_t n = numel(&tx);
        for (size_t i = 0; i < n; i++) {
            if (t == PLX_DTYPE_INT32) ((int32_t *)g_x)[i] = (int32_t)rnd();
            else if (t == PLX_DTYPE_INT64) ((int64_t *)g_x)[i] = (int64_t)rnd();
            else store_float(t, g_x, i, (float)rnd_i(-1000, 1000) / 7.0f);
        }
        memset(g_y, 0xab, n * es + 1);
        cr_assert(cum_sum_run(axis, exclusive, reverse, &tx, g_x, g_y), "%s", g_err);
        for (size_t e = 0; e < n; e++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&tx, e, c);
            int64_t pos = c[a], len = dims[a];
            float fs = 0.0f;
            uint64_t is = 0;
            /* in the sum's order: from the first (last when reverse) element */
            for (int64_t s = 0; s < len; s++) {
                int64_t j = reverse ? len - 1 - s : s;
                bool in = reverse ? (exclusive ? j > pos : j >= pos)
                                  : (exclusive ? j < pos : j <= pos);
                if (!in) continue;
                c[a] = j;
                size_t at = ravel(&tx, c);
                if (t == PLX_DTYPE_INT32) is += (uint64_t)(int64_t)((int32_t *)g_x)[at];
                else if (t == PLX_DTYPE_INT64) is += (uint64_t)((int64_t *)g_x)[at];
                else fs += load_float(t, g_x, at);
            }
            if (t == PLX_DTYPE_INT32) ((int32_t *)g_ref)[e] = (int32_t)(uint32_t)is;
            else if (t == PLX_DTYPE_INT64) ((int64_t *)g_ref)[e] = (int64_t)is;
            else store_float(t, g_ref, e, fs);
        }
        cr_assert(zero(int, memcmp(g_y, g_ref, n * es)), "rep %d", rep);
        cr_assert(eq(u8, g_y[n * es], 0xab), "rep %d wrote past Y", rep);
    }
}

Test(cum_sum, workspace_and_refusals) {
    char buf[160];
    plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT(0);
    plx_tensor_info x = info(PLX_DTYPE_INT8, SHAPE(3, 5));
    plx_layer_view l = layer_of(PLX_OP_CUM_SUM, &d, &x, 1, &x, 1);
    cr_assert(eq(str, (char *)plxk_check_cum_sum(&l, buf, sizeof buf),
                 "cum_sum: dtype int8 is not supported"));
    cr_assert(eq(sz, plxk_kernel_workspace(&l, NULL), 0));
    /* float16 and bfloat16 need a float32 row of `inner` (5) elements;
     * the others none */
    x.dtype = PLX_DTYPE_FLOAT16;
    cr_assert(zero(ptr, (void *)plxk_check_cum_sum(&l, buf, sizeof buf)));
    cr_assert(ge(sz, plxk_kernel_workspace(&l, NULL), 5 * sizeof(float)));
    x.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(eq(sz, plxk_kernel_workspace(&l, NULL), 0));
    /* without it, the float16 kernel fails rather than allocate */
    x.dtype = PLX_DTYPE_BFLOAT16;
    uint16_t px[15] = {0}, py[15];
    const void *ins[] = {px};
    void *outs[] = {py};
    plxk_kernel_args a = {.layer = &l, .inputs = ins, .outputs = outs, .error = g_err,
                          .error_size = sizeof g_err};
    cr_assert(not(plxk_run_cum_sum(&a)));
    cr_assert(eq(str, g_err, "cum_sum: a workspace of 20 bytes is needed, got 0"));
    d.axis = -3;
    cr_assert(eq(str, (char *)plxk_check_cum_sum(&l, buf, sizeof buf),
                 "cum_sum: axis -3 is out of range for rank 2"));
}

/* ---- float64 and the unsigned types (ABI 1.3) --------------------------- */

/* cum_sum on float64 (values in eighths, whose sums are exact, so the
 * order of the additions cannot matter) and on uint32 and uint64, which
 * wrap modulo 2^bits, against a reference walk over the coordinates. */
Test(cum_sum, random_float64_and_unsigned) {
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT32, PLX_DTYPE_UINT64};
    seed(15);
    for (int rep = 0; rep < 300; rep++) {
        plx_dtype t = types[rep % 3];
        size_t es = plx_dtype_size(t);
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        int64_t dims[4];
        for (uint32_t d = 0; d < rank; d++) dims[d] = rnd_i(rep % 37 == 0 ? 0 : 1, 6);
        int32_t axis = (int32_t)rnd_i(-(int64_t)rank, rank - 1);
        uint32_t a = (uint32_t)(axis < 0 ? axis + (int32_t)rank : axis);
        bool exclusive = rnd() & 1, reverse = rnd() & 1;
        plx_tensor_info tx = info(t, dims, rank);
        size_t n = numel(&tx);
        for (size_t i = 0; i < n; i++) {
            if (t == PLX_DTYPE_FLOAT64) ((double *)g_x)[i] = (double)rnd_i(-1000000, 1000000) / 8.0;
            else if (t == PLX_DTYPE_UINT32) ((uint32_t *)g_x)[i] = (uint32_t)rnd();
            else ((uint64_t *)g_x)[i] = rnd();
        }
        memset(g_y, 0xab, n * es + 1);
        cr_assert(cum_sum_run(axis, exclusive, reverse, &tx, g_x, g_y), "%s", g_err);
        for (size_t e = 0; e < n; e++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&tx, e, c);
            int64_t pos = c[a], len = dims[a];
            double fs = 0.0;
            uint64_t us = 0;
            for (int64_t j = 0; j < len; j++) {
                bool in = reverse ? (exclusive ? j > pos : j >= pos)
                                  : (exclusive ? j < pos : j <= pos);
                if (!in) continue;
                c[a] = j;
                size_t at = ravel(&tx, c);
                if (t == PLX_DTYPE_FLOAT64) fs += ((double *)g_x)[at];
                else if (t == PLX_DTYPE_UINT32) us += ((uint32_t *)g_x)[at];
                else us += ((uint64_t *)g_x)[at];
            }
            if (t == PLX_DTYPE_FLOAT64) ((double *)g_ref)[e] = fs;
            else if (t == PLX_DTYPE_UINT32) ((uint32_t *)g_ref)[e] = (uint32_t)us;
            else ((uint64_t *)g_ref)[e] = us;
        }
        cr_assert(zero(int, memcmp(g_y, g_ref, n * es)), "rep %d %s", rep, plx_dtype_name(t));
        cr_assert(eq(u8, g_y[n * es], 0xab), "rep %d wrote past Y", rep);
    }
    /* ONNX's test_cumsum_1d (float64) and a uint64 sum past 2^63 */
    double x[5] = {1, 2, 3, 4, 5}, y[5];
    plx_tensor_info t5 = info(PLX_DTYPE_FLOAT64, SHAPE(5));
    cr_assert(cum_sum_run(0, false, false, &t5, x, y), "%s", g_err);
    cr_assert(eq(dbl, y[4], 15.0));
    uint64_t u[3] = {UINT64_C(1) << 63, UINT64_C(1) << 62, UINT64_C(3) << 62}, uy[3];
    plx_tensor_info t3 = info(PLX_DTYPE_UINT64, SHAPE(3));
    cr_assert(cum_sum_run(0, false, false, &t3, u, uy), "%s", g_err);
    cr_assert(eq(u64, uy[1], UINT64_C(3) << 62));
    cr_assert(eq(u64, uy[2], UINT64_C(1) << 63)); /* 6 * 2^62 wraps to 2^63 */
}

/* hardmax on float64: the first maximum, a NaN winning, ties by position;
 * values that differ only past float32's precision are told apart. */
Test(hardmax, float64) {
    double x[12] = {1, 1 + 1e-12, 1, 0, 5, NAN, 7, NAN, -1, -1, -2, -3}, y[12];
    plx_tensor_info t = info(PLX_DTYPE_FLOAT64, SHAPE(3, 4));
    cr_assert(hardmax_run(-1, &t, x, y), "%s", g_err);
    int at[3] = {1, 1, 0};
    for (int r = 0; r < 3; r++) {
        for (int j = 0; j < 4; j++) {
            cr_assert(eq(dbl, y[r * 4 + j], j == at[r] ? 1.0 : 0.0), "r %d j %d", r, j);
        }
    }
    plx_tensor_info ti = info(PLX_DTYPE_UINT32, SHAPE(3, 4));
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    plx_layer_view l = layer_of(PLX_OP_HARDMAX, &d, &ti, 1, &ti, 1);
    cr_assert(eq(str, (char *)plxk_check_hardmax(&l, g_err, sizeof g_err),
                 "hardmax: dtype uint32 is not supported"));
}

/* one_hot indices of the new types: float64 truncates toward zero (NaN
 * and huge values are out of range), uint16/uint32 as they are, uint64
 * past INT64_MAX out of range (not a negative index). */
Test(one_hot, float64_and_unsigned_indices) {
    double d[6] = {2.9, -0.5, -1.0, NAN, 1e300, -3.5};
    uint64_t vals[2] = {0, UINT64_MAX}, y[18];
    plx_tensor_info td = info(PLX_DTYPE_FLOAT64, SHAPE(6)), tv = info(PLX_DTYPE_UINT64, SHAPE(2));
    plx_tensor_info ty = info(PLX_DTYPE_UINT64, SHAPE(6, 3));
    cr_assert(one_hot_run(-1, 3, &td, &tv, &ty, d, vals, y), "%s", g_err);
    /* 2.9 -> 2; -0.5 -> 0; -1 -> 2; NaN, 1e300 off; -3.5 -> -3 -> 0 */
    int on[6] = {2, 0, 2, -1, -1, 0};
    for (int r = 0; r < 6; r++) {
        for (int j = 0; j < 3; j++) {
            cr_assert(eq(u64, y[r * 3 + j], j == on[r] ? UINT64_MAX : 0), "r %d j %d", r, j);
        }
    }
    uint64_t u[3] = {1, UINT64_MAX, UINT64_C(1) << 63};
    plx_tensor_info tu = info(PLX_DTYPE_UINT64, SHAPE(3)), ty3 = info(PLX_DTYPE_UINT64, SHAPE(3, 3));
    cr_assert(one_hot_run(-1, 3, &tu, &tv, &ty3, u, vals, y), "%s", g_err);
    for (int r = 0; r < 3; r++) {
        for (int j = 0; j < 3; j++) {
            cr_assert(eq(u64, y[r * 3 + j], r == 0 && j == 1 ? UINT64_MAX : 0), "r %d j %d", r, j);
        }
    }
    uint16_t h[2] = {65535, 2};
    uint32_t w[2] = {4000000000u, 0};
    double dv[2] = {-1.5, 2.5}, dy[6];
    plx_tensor_info th = info(PLX_DTYPE_UINT16, SHAPE(2)), tw = info(PLX_DTYPE_UINT32, SHAPE(2));
    plx_tensor_info tdv = info(PLX_DTYPE_FLOAT64, SHAPE(2)), tdy = info(PLX_DTYPE_FLOAT64, SHAPE(2, 3));
    cr_assert(one_hot_run(-1, 3, &th, &tdv, &tdy, h, dv, dy), "%s", g_err);
    cr_assert(dy[0] == -1.5 && dy[1] == -1.5 && dy[2] == -1.5 && dy[5] == 2.5);
    cr_assert(one_hot_run(-1, 3, &tw, &tdv, &tdy, w, dv, dy), "%s", g_err);
    cr_assert(dy[2] == -1.5 && dy[3] == 2.5);
}
