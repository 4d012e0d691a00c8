/* Tests of cpu_ref's indexing kernels (kernels_index.c): gather_elements,
 * scatter_elements, scatter_nd and gather_nd, called directly with
 * hand-built layer views: the ONNX operator documents' examples and other
 * hand-derived cases (the derivation is in the comments), seeded random
 * cases over every dtype, index dtype and reduction against plain
 * reference loops written here (unravel/ravel per element, independently
 * of the kernels' counters), index errors and refusals. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "X1"
#include "kernel_test_util.h"

/* ---- helpers ------------------------------------------------------------ */


static const plx_dtype g_all[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16,
                                  PLX_DTYPE_INT8,    PLX_DTYPE_UINT8,   PLX_DTYPE_INT16,
                                  PLX_DTYPE_INT32,   PLX_DTYPE_INT64,   PLX_DTYPE_BOOL,
                                  PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16,  PLX_DTYPE_UINT32,
                                  PLX_DTYPE_UINT64};
#define G_ALL_COUNT (sizeof g_all / sizeof g_all[0])

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

#define BIG 16384
static uint8_t g_x[BIG * 8], g_u[BIG * 8], g_y[BIG * 8], g_ref[BIG * 8], g_ind[BIG * 8];

/* Random values of dtype t: small halves for the float types (a NaN now
 * and then when nan is set), any bits for the integers, 0/1 for bool. */
static void fill_values(plx_dtype t, void *p, size_t n, bool nan) {
    for (size_t i = 0; i < n; i++) {
        float f = (float)rnd_i(-8, 8) * 0.5f;
        if (nan && rnd() % 16 == 0) f = NAN;
        switch (t) {
        case PLX_DTYPE_FLOAT32: ((float *)p)[i] = f; break;
        case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float32_to_float16(f); break;
        case PLX_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = plx_float32_to_bfloat16(f); break;
        case PLX_DTYPE_FLOAT64: ((double *)p)[i] = f == f ? f + (double)rnd_i(-9, 9) * 1e-12 : f; break;
        case PLX_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(rnd() & 1); break;
        default: {
            uint64_t v = rnd();
            memcpy((uint8_t *)p + i * plx_dtype_size(t), &v, plx_dtype_size(t));
        }
        }
    }
}

/* Index j of a run-time indices buffer of dtype t (int32 or int64). */
static void set_index(plx_dtype t, void *p, size_t j, int64_t v) {
    if (t == PLX_DTYPE_INT32) ((int32_t *)p)[j] = (int32_t)v;
    else ((int64_t *)p)[j] = v;
}

/* The reference combination of the scatter reductions, written plainly:
 * floats through float, integers through int64 keeping the low bytes
 * (little-endian, as the machines these tests run on), bool through 0/1. */
static float ref_load_f(plx_dtype t, const uint8_t *p) {
    uint16_t h;
    float f;
    switch (t) {
    case PLX_DTYPE_FLOAT16: memcpy(&h, p, 2); return plx_float16_to_float32(h);
    case PLX_DTYPE_BFLOAT16: memcpy(&h, p, 2); return plx_bfloat16_to_float32(h);
    default: memcpy(&f, p, 4); return f;
    }
}
static void ref_store_f(plx_dtype t, uint8_t *p, float f) {
    uint16_t h;
    switch (t) {
    case PLX_DTYPE_FLOAT16: h = plx_float32_to_float16(f); memcpy(p, &h, 2); return;
    case PLX_DTYPE_BFLOAT16: h = plx_float32_to_bfloat16(f); memcpy(p, &h, 2); return;
    default: memcpy(p, &f, 4); return;
    }
}
static int64_t ref_load_i(plx_dtype t, const uint8_t *p) {
    switch (t) {
    case PLX_DTYPE_INT8: return (int8_t)p[0];
    case PLX_DTYPE_UINT8: return p[0];
    case PLX_DTYPE_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case PLX_DTYPE_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}
static void ref_combine(plx_dtype t, plx_scatter_reduction red, uint8_t *dst,
                        const uint8_t *src) {
    size_t es = plx_dtype_size(t);
    if (red == PLX_SCATTER_NONE) {
        memcpy(dst, src, es);
        return;
    }
    if (t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT16 || t == PLX_DTYPE_BFLOAT16) {
        float x = ref_load_f(t, dst), y = ref_load_f(t, src), r;
        switch (red) {
        case PLX_SCATTER_ADD: r = x + y; break;
        case PLX_SCATTER_MUL: r = x * y; break;
        case PLX_SCATTER_MAX: r = isnan(x) ? x : isnan(y) ? y : fmaxf(x, y); break;
        default: r = isnan(x) ? x : isnan(y) ? y : fminf(x, y); break;
        }
        ref_store_f(t, dst, r);
        return;
    }
    if (t == PLX_DTYPE_FLOAT64) {
        double x, y, r;
        memcpy(&x, dst, 8);
        memcpy(&y, src, 8);
        switch (red) {
        case PLX_SCATTER_ADD: r = x + y; break;
        case PLX_SCATTER_MUL: r = x * y; break;
        case PLX_SCATTER_MAX: r = isnan(x) ? x : isnan(y) ? y : fmax(x, y); break;
        default: r = isnan(x) ? x : isnan(y) ? y : fmin(x, y); break;
        }
        memcpy(dst, &r, 8);
        return;
    }
    if (t == PLX_DTYPE_UINT16 || t == PLX_DTYPE_UINT32 || t == PLX_DTYPE_UINT64) {
        /* unsigned: zero-extended, compared as unsigned */
        uint64_t x = 0, y = 0, r;
        memcpy(&x, dst, es);
        memcpy(&y, src, es);
        switch (red) {
        case PLX_SCATTER_ADD: r = x + y; break;
        case PLX_SCATTER_MUL: r = x * y; break;
        case PLX_SCATTER_MAX: r = x > y ? x : y; break;
        default: r = x < y ? x : y; break;
        }
        memcpy(dst, &r, es);
        return;
    }
    if (t == PLX_DTYPE_BOOL) {
        bool x = dst[0] != 0, y = src[0] != 0;
        dst[0] = red == PLX_SCATTER_ADD || red == PLX_SCATTER_MAX ? (x || y) : (x && y);
        return;
    }
    int64_t x = ref_load_i(t, dst), y = ref_load_i(t, src);
    uint64_t r;
    switch (red) {
    case PLX_SCATTER_ADD: r = (uint64_t)x + (uint64_t)y; break;
    case PLX_SCATTER_MUL: r = (uint64_t)x * (uint64_t)y; break;
    case PLX_SCATTER_MAX: r = (uint64_t)(x > y ? x : y); break;
    default: r = (uint64_t)(x < y ? x : y); break;
    }
    memcpy(dst, &r, es); /* the low bytes: modulo 2^bits */
}

/* Compares two buffers of n elements of t, reporting the first difference. */
static void same_bytes(const void *got, const void *want, size_t n, plx_dtype t, const char *what,
                       int rep) {
    size_t es = plx_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        cr_assert(zero(int, memcmp((const uint8_t *)got + i * es, (const uint8_t *)want + i * es,
                                   es)),
                  "%s rep %d: element %zu differs (%s)", what, rep, i, plx_dtype_name(t));
    }
}

static void err_has(const char *text) {
    cr_assert(not(zero(ptr, strstr(g_err, text))), "\"%s\" lacks \"%s\"", g_err, text);
}

static bool run2(plxk_run_fn fn, plx_op op, const void *desc, const plx_tensor_info *x,
                 const plx_tensor_info *ind, const plx_tensor_info *y, const void *px,
                 const void *pi, void *py) {
    plx_tensor_info ins_i[2] = {*x, *ind};
    plx_layer_view l = layer_of(op, desc, ins_i, 2, y, 1);
    const void *ins[] = {px, pi};
    void *outs[] = {py};
    return run_layer(fn, &l, ins, outs);
}

static bool run3(plxk_run_fn fn, plx_op op, const void *desc, const plx_tensor_info *x,
                 const plx_tensor_info *ind, const plx_tensor_info *u, const plx_tensor_info *y,
                 const void *px, const void *pi, const void *pu, void *py) {
    plx_tensor_info ins_i[3] = {*x, *ind, *u};
    plx_layer_view l = layer_of(op, desc, ins_i, 3, y, 1);
    const void *ins[] = {px, pi, pu};
    void *outs[] = {py};
    return run_layer(fn, &l, ins, outs);
}

/* ---- gather_elements ---------------------------------------------------- */

Test(gather_elements, onnx_examples_and_errors) {
    /* ONNX's example 1: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1:
     * y[i][j] = data[i][indices[i][j]] -> [[1,1],[4,3]] */
    float x[] = {1, 2, 3, 4}, y[6];
    int64_t i1[] = {0, 0, 1, 0};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_tensor_info t22 = info(PLX_DTYPE_FLOAT32, SHAPE(2, 2));
    plx_tensor_info ti = info(PLX_DTYPE_INT64, SHAPE(2, 2));
    cr_assert(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t22, &ti, &t22, x, i1,
                   y), "%s", g_err);
    float w1[] = {1, 1, 4, 3};
    for (int i = 0; i < 4; i++) cr_assert(eq(flt, y[i], w1[i]), "element %d", i);
    /* example 2: data [[1,2,3],[4,5,6],[7,8,9]], indices [[1,2,0],[2,0,0]],
     * axis 0: y[i][j] = data[indices[i][j]][j] -> [[4,8,3],[7,2,3]]; the
     * same with int32 indices written negatively ([-2,-1,-3],[-1,0,0]) */
    int32_t x3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y3[6];
    int32_t i2[] = {-2, -1, -3, -1, 0, 0};
    d.axis = 0;
    plx_tensor_info t33 = info(PLX_DTYPE_INT32, SHAPE(3, 3)), t23 = info(PLX_DTYPE_INT32, SHAPE(2, 3));
    cr_assert(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t23, &t23, x3, i2,
                   y3), "%s", g_err);
    int32_t w2[] = {4, 8, 3, 7, 2, 3};
    for (int i = 0; i < 6; i++) cr_assert(eq(i32, y3[i], w2[i]), "element %d", i);
    /* an index out of range: the layer, the value and its position */
    int32_t bad[] = {1, 2, 0, 2, 3, 0};
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t23, &t23, x3,
                       bad, y3)));
    cr_assert(eq(str, g_err,
                 "layer 'X1' (gather_elements): index 3 (indices element 4) is out of range for "
                 "axis 0 of size 3"));
    bad[4] = 0;
    bad[5] = -4;
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t23, &t23, x3,
                       bad, y3)));
    err_has("index -4 (indices element 5)");
    /* refusals: float indices, an output not of indices' shape, indices
     * wider than data outside the axis, another rank */
    plx_tensor_info tf = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3));
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &tf, &t23, x3,
                       i2, y3)));
    err_has("indices dtype float32");
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t23, &t33, x3,
                       i2, y3)));
    plx_tensor_info t24 = info(PLX_DTYPE_INT32, SHAPE(2, 4));
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t24, &t24, x3,
                       i2, y3)));
    plx_tensor_info t6 = info(PLX_DTYPE_INT32, SHAPE(6));
    cr_assert(not(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &t33, &t6, &t6, x3,
                       i2, y3)));
}

/* y[p] = x[p with p[axis] = ind[p]] by unravel/ravel. */
static void ref_gather_elements(const plx_tensor_info *tx, const plx_tensor_info *ti,
                                const void *ind, uint32_t axis, const uint8_t *x, uint8_t *y) {
    size_t es = plx_dtype_size(tx->dtype);
    for (size_t i = 0; i < numel(ti); i++) {
        int64_t c[PLX_MAX_RANK];
        unravel(ti, i, c);
        int64_t v = ti->dtype == PLX_DTYPE_INT32 ? ((const int32_t *)ind)[i]
                                                 : ((const int64_t *)ind)[i];
        c[axis] = v < 0 ? v + tx->dims[axis] : v;
        memcpy(y + i * es, x + ravel(tx, c) * es, es);
    }
}

Test(gather_elements, random) {
    seed(41);
    for (int rep = 0; rep < 300; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        int64_t dims[4], idims[4];
        uint32_t axis = (uint32_t)rnd_i(0, rank - 1);
        for (uint32_t i = 0; i < rank; i++) {
            dims[i] = rnd_i(1, 5);
            idims[i] = i == axis ? rnd_i(0, 7) : rnd_i(0, dims[i]);
        }
        if (rep % 50 == 0) {
            /* a long last dim: several chunks of indices per row */
            rank = 2;
            axis = (uint32_t)(rep / 50 % 2);
            dims[0] = 3, dims[1] = 700, idims[0] = 2, idims[1] = axis == 1 ? 1100 : 600;
        }
        plx_tensor_info tx = info(t, dims, rank);
        plx_tensor_info ti = info(rnd() & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, idims, rank);
        plx_tensor_info ty = info(t, idims, rank);
        for (size_t j = 0; j < numel(&ti); j++) {
            set_index(ti.dtype, g_ind, j, rnd_i(-dims[axis], dims[axis] - 1));
        }
        fill_values(t, g_x, numel(&tx), true);
        plx_axis_desc d = PLX_AXIS_DESC_INIT(rnd() & 1 ? (int32_t)axis : (int32_t)axis - (int32_t)rank);
        cr_assert(run2(plxk_run_gather_elements, PLX_OP_GATHER_ELEMENTS, &d, &tx, &ti, &ty, g_x,
                       g_ind, g_y), "rep %d: %s", rep, g_err);
        ref_gather_elements(&tx, &ti, g_ind, axis, g_x, g_ref);
        same_bytes(g_y, g_ref, numel(&ty), t, "gather_elements", rep);
    }
}

/* ---- scatter_elements --------------------------------------------------- */

Test(scatter_elements, onnx_examples_and_errors) {
    /* ONNX's example 1: data zeros [3,3], indices [[1,0,2],[0,2,1]],
     * updates [[1.0,1.1,1.2],[2.0,2.1,2.2]], axis 0:
     * y[indices[i][j]][j] = updates[i][j] -> [[2.0,1.1,0],[1.0,0,2.2],[0,2.1,1.2]] */
    float x[9] = {0}, u[] = {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}, y[9];
    int64_t ind[] = {1, 0, 2, 0, 2, 1};
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    plx_tensor_info t33 = info(PLX_DTYPE_FLOAT32, SHAPE(3, 3));
    plx_tensor_info ti = info(PLX_DTYPE_INT64, SHAPE(2, 3)), tu = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3));
    cr_assert(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t33, &ti, &tu, &t33, x,
                   ind, u, y), "%s", g_err);
    float w1[] = {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f};
    for (int i = 0; i < 9; i++) cr_assert(eq(flt, y[i], w1[i]), "element %d", i);
    /* example 2: data [[1,2,3,4,5]], indices [[1,3]], updates [[1.1,2.1]],
     * axis 1 -> [[1,1.1,3,2.1,5]]; with indices [[1,-4]] (duplicates):
     * none: the last update wins (2.1); add: 2 + 1.1 + 2.1; mul: 2 * 1.1 * 2.1;
     * max: 2.1; min: 1.1 */
    float x5[] = {1, 2, 3, 4, 5}, u2[] = {1.1f, 2.1f}, y5[5];
    int32_t i13[] = {1, 3}, i11[] = {1, -4};
    plx_tensor_info t15 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 5)), ti12 = info(PLX_DTYPE_INT32, SHAPE(1, 2));
    plx_tensor_info tu12 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2));
    d.axis = 1;
    cr_assert(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12,
                   &t15, x5, i13, u2, y5), "%s", g_err);
    float w2[] = {1, 1.1f, 3, 2.1f, 5};
    for (int i = 0; i < 5; i++) cr_assert(eq(flt, y5[i], w2[i]), "element %d", i);
    float want[] = {2.1f, 2.0f + 1.1f + 2.1f, 2.0f * 1.1f * 2.1f, 2.1f, 1.1f};
    for (int r = 0; r <= PLX_SCATTER_MIN; r++) {
        d.reduction = (plx_scatter_reduction)r;
        cr_assert(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12,
                       &t15, x5, i11, u2, y5), "%s", g_err);
        cr_assert(eq(flt, y5[1], want[r]), "reduction %s", plx_scatter_reduction_name(d.reduction));
        cr_assert(eq(flt, y5[0], 1.0f));
        cr_assert(eq(flt, y5[4], 5.0f));
    }
    /* in place (the output is data's buffer), as a runtime may run it */
    d.reduction = PLX_SCATTER_ADD;
    float inplace[] = {1, 2, 3, 4, 5};
    cr_assert(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12,
                   &t15, inplace, i13, u2, inplace), "%s", g_err);
    cr_assert(eq(flt, inplace[1], 2.0f + 1.1f));
    cr_assert(eq(flt, inplace[3], 4.0f + 2.1f));
    /* an index out of range */
    int32_t bad[] = {1, 5};
    cr_assert(not(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12,
                       &t15, x5, bad, u2, y5)));
    cr_assert(eq(str, g_err,
                 "layer 'X1' (scatter_elements): index 5 (indices element 1) is out of range for "
                 "axis 1 of size 5"));
    /* refusals: updates of another shape or dtype, a reduction out of range */
    plx_tensor_info tu13 = info(PLX_DTYPE_FLOAT32, SHAPE(1, 3));
    cr_assert(not(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu13,
                       &t15, x5, i13, u2, y5)));
    plx_tensor_info tu12i = info(PLX_DTYPE_INT32, SHAPE(1, 2));
    cr_assert(not(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12i,
                       &t15, x5, i13, u2, y5)));
    d.reduction = (plx_scatter_reduction)7;
    cr_assert(not(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &t15, &ti12, &tu12,
                       &t15, x5, i13, u2, y5)));
    err_has("reduction 7");
}

Test(scatter_elements, random) {
    seed(42);
    for (int rep = 0; rep < 400; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        plx_scatter_reduction red = (plx_scatter_reduction)rnd_i(0, 4);
        size_t es = plx_dtype_size(t);
        int64_t dims[4], idims[4];
        uint32_t axis = (uint32_t)rnd_i(0, rank - 1);
        for (uint32_t i = 0; i < rank; i++) {
            dims[i] = rnd_i(1, 5);
            idims[i] = i == axis ? rnd_i(0, 9) : rnd_i(0, dims[i]);
        }
        if (rep % 50 == 0) {
            rank = 2;
            axis = (uint32_t)(rep / 50 % 2);
            dims[0] = 3, dims[1] = 500, idims[0] = axis == 0 ? 7 : 3, idims[1] = axis == 1 ? 900 : 400;
        }
        plx_tensor_info tx = info(t, dims, rank), ty = tx;
        plx_tensor_info ti = info(rnd() & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, idims, rank);
        plx_tensor_info tu = info(t, idims, rank);
        for (size_t j = 0; j < numel(&ti); j++) {
            set_index(ti.dtype, g_ind, j, rnd_i(-dims[axis], dims[axis] - 1));
        }
        fill_values(t, g_x, numel(&tx), true);
        fill_values(t, g_u, numel(&tu), true);
        plx_scatter_desc d = {sizeof d, rnd() & 1 ? (int32_t)axis : (int32_t)axis - (int32_t)rank,
                              red};
        cr_assert(run3(plxk_run_scatter_elements, PLX_OP_SCATTER_ELEMENTS, &d, &tx, &ti, &tu, &ty,
                       g_x, g_ind, g_u, g_y), "rep %d: %s", rep, g_err);
        /* the reference: data, then every update in row-major order */
        memcpy(g_ref, g_x, numel(&tx) * es);
        for (size_t i = 0; i < numel(&ti); i++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&ti, i, c);
            int64_t v = ti.dtype == PLX_DTYPE_INT32 ? ((int32_t *)g_ind)[i] : ((int64_t *)g_ind)[i];
            c[axis] = v < 0 ? v + dims[axis] : v;
            ref_combine(t, red, g_ref + ravel(&tx, c) * es, g_u + i * es);
        }
        same_bytes(g_y, g_ref, numel(&ty), t, plx_scatter_reduction_name(red), rep);
    }
}

/* ---- scatter_nd --------------------------------------------------------- */

Test(scatter_nd, onnx_examples_and_errors) {
    /* ONNX's example 1: data [1..8], indices [[4],[3],[1],[7]], updates
     * [9,10,11,12] -> [1,11,3,10,9,6,7,12] */
    int64_t x[] = {1, 2, 3, 4, 5, 6, 7, 8}, ind[] = {4, 3, 1, 7}, u[] = {9, 10, 11, 12}, y[8];
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    plx_tensor_info t8 = info(PLX_DTYPE_INT64, SHAPE(8)), ti = info(PLX_DTYPE_INT64, SHAPE(4, 1));
    plx_tensor_info tu = info(PLX_DTYPE_INT64, SHAPE(4));
    cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t8, &ti, &tu, &t8, x, ind, u, y),
              "%s", g_err);
    int64_t w1[] = {1, 11, 3, 10, 9, 6, 7, 12};
    for (int i = 0; i < 8; i++) cr_assert(eq(i64, y[i], w1[i]), "element %d", i);
    /* example 2: data [4,4,4] (d[i][j][k] = 100 i + 10 j + k), indices
     * [[0],[2]] (int32), updates [2,4,4] of 5s and 6s: slices 0 and 2
     * replaced, 1 and 3 kept; with add and indices [[-4],[0]] slice 0
     * gets both (+5 +6) */
    float x3[64], u3[32], y3[64];
    for (int i = 0; i < 64; i++) x3[i] = (float)(i / 16 * 100 + i / 4 % 4 * 10 + i % 4);
    for (int i = 0; i < 32; i++) u3[i] = i < 16 ? 5.0f : 6.0f;
    int32_t i02[] = {0, 2}, i00[] = {-4, 0};
    plx_tensor_info t444 = info(PLX_DTYPE_FLOAT32, SHAPE(4, 4, 4));
    plx_tensor_info ti21 = info(PLX_DTYPE_INT32, SHAPE(2, 1)), tu244 = info(PLX_DTYPE_FLOAT32, SHAPE(2, 4, 4));
    cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t444, &ti21, &tu244, &t444, x3,
                   i02, u3, y3), "%s", g_err);
    for (int i = 0; i < 64; i++) {
        float w = i < 16 ? 5.0f : i >= 32 && i < 48 ? 6.0f : x3[i];
        cr_assert(eq(flt, y3[i], w), "element %d", i);
    }
    d.reduction = PLX_SCATTER_ADD;
    cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t444, &ti21, &tu244, &t444, x3,
                   i00, u3, y3), "%s", g_err);
    for (int i = 0; i < 64; i++) {
        cr_assert(eq(flt, y3[i], i < 16 ? x3[i] + 11.0f : x3[i]), "element %d", i);
    }
    /* k = 0: every update is the whole tensor; with mul: x * u0 * u1 */
    int64_t i0[1];
    plx_tensor_info ti20 = info(PLX_DTYPE_INT64, SHAPE(2, 0)), tu2 = info(PLX_DTYPE_INT64, SHAPE(2, 8));
    int64_t u28[16];
    for (int i = 0; i < 16; i++) u28[i] = i < 8 ? 2 : 3;
    d.reduction = PLX_SCATTER_MUL;
    cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t8, &ti20, &tu2, &t8, x, i0, u28,
                   y), "%s", g_err);
    for (int i = 0; i < 8; i++) cr_assert(eq(i64, y[i], x[i] * 6), "element %d", i);
    /* an index out of range: its value and position in indices */
    int64_t bad[] = {4, 3, 8, 7};
    d.reduction = PLX_SCATTER_NONE;
    cr_assert(not(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t8, &ti, &tu, &t8, x, bad, u,
                       y)));
    cr_assert(eq(str, g_err,
                 "layer 'X1' (scatter_nd): index 8 (indices element 2) is out of range for data "
                 "dim 0 of size 8"));
    int32_t bad2[] = {0, 1, 2, -5};
    plx_tensor_info t44 = info(PLX_DTYPE_FLOAT32, SHAPE(4, 4)), ti22 = info(PLX_DTYPE_INT32, SHAPE(2, 2));
    plx_tensor_info tu2f = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    cr_assert(not(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t44, &ti22, &tu2f, &t44, x3,
                       bad2, u3, y3)));
    err_has("index -5 (indices element 3) is out of range for data dim 1 of size 4");
    /* refusals: updates of the wrong shape, a tuple longer than data's rank, an axis */
    cr_assert(not(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t44, &ti22, &tu244, &t44, x3,
                       i02, u3, y3)));
    plx_tensor_info ti3 = info(PLX_DTYPE_INT32, SHAPE(1, 3)), tu1 = info(PLX_DTYPE_FLOAT32, SHAPE(1));
    cr_assert(not(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t44, &ti3, &tu1, &t44, x3,
                       i02, u3, y3)));
    d.axis = 1;
    cr_assert(not(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &t444, &ti21, &tu244, &t444, x3,
                       i02, u3, y3)));
}

/* A KV-cache update: cache [b, h, T, d] gets the new step's [b, h, 1, d] at
 * position t per batch entry, through indices [b, h, 1, 3] = (b, h, t):
 * every other position keeps its value. */
Test(scatter_nd, kv_cache_update) {
    enum { B = 2, H = 3, T = 5, D = 4 };
    float cache[B * H * T * D], upd[B * H * D], y[B * H * T * D];
    int64_t ind[B * H * 3];
    int64_t pos[B] = {3, -1}; /* -1: the last position */
    for (int i = 0; i < B * H * T * D; i++) cache[i] = (float)i;
    for (int i = 0; i < B * H * D; i++) upd[i] = -1.0f - (float)i;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            ind[(b * H + h) * 3 + 0] = b;
            ind[(b * H + h) * 3 + 1] = h;
            ind[(b * H + h) * 3 + 2] = pos[b];
        }
    }
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    plx_tensor_info tc = info(PLX_DTYPE_FLOAT32, SHAPE(B, H, T, D));
    plx_tensor_info ti = info(PLX_DTYPE_INT64, SHAPE(B, H, 1, 3));
    plx_tensor_info tu = info(PLX_DTYPE_FLOAT32, SHAPE(B, H, 1, D));
    cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &tc, &ti, &tu, &tc, cache, ind, upd,
                   y), "%s", g_err);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int k = 0; k < D; k++) {
                    int i = ((b * H + h) * T + t) * D + k;
                    int at = pos[b] < 0 ? (int)pos[b] + T : (int)pos[b];
                    float w = t == at ? upd[(b * H + h) * D + k] : cache[i];
                    cr_assert(eq(flt, y[i], w), "b %d h %d t %d d %d", b, h, t, k);
                }
            }
        }
    }
}

Test(scatter_nd, random) {
    seed(43);
    for (int rep = 0; rep < 400; rep++) {
        uint32_t r = (uint32_t)rnd_i(1, 4), k = (uint32_t)rnd_i(0, r), lead = (uint32_t)rnd_i(0, 2);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        plx_scatter_reduction red = (plx_scatter_reduction)rnd_i(0, 4);
        size_t es = plx_dtype_size(t);
        int64_t dims[4], idims[3], udims[8];
        for (uint32_t i = 0; i < r; i++) dims[i] = rnd_i(1, 4);
        for (uint32_t i = 0; i < lead; i++) idims[i] = rnd_i(0, 4);
        if (rep % 40 == 0) {
            /* many tuples: several chunks of them */
            r = 2, k = rep % 80 == 0 ? 2 : 1, lead = 1, dims[0] = 9, dims[1] = rep % 80 == 0 ? 1 : 7;
            idims[0] = 700;
        }
        idims[lead] = k;
        uint32_t ur = 0;
        for (uint32_t i = 0; i < lead; i++) udims[ur++] = idims[i];
        for (uint32_t i = k; i < r; i++) udims[ur++] = dims[i];
        plx_tensor_info tx = info(t, dims, r), ty = tx;
        plx_tensor_info ti = info(rnd() & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, idims, lead + 1);
        plx_tensor_info tu = info(t, udims, ur);
        size_t tuples = numel(&ti) / (k ? k : 1), slice = 1;
        if (k == 0) {
            tuples = 1;
            for (uint32_t i = 0; i < lead; i++) tuples *= (size_t)idims[i];
        }
        for (uint32_t i = k; i < r; i++) slice *= (size_t)dims[i];
        for (size_t j = 0; j < tuples; j++) {
            for (uint32_t c = 0; c < k; c++) {
                set_index(ti.dtype, g_ind, j * k + c, rnd_i(-dims[c], dims[c] - 1));
            }
        }
        fill_values(t, g_x, numel(&tx), true);
        fill_values(t, g_u, numel(&tu), true);
        plx_scatter_desc d = {sizeof d, 0, red};
        cr_assert(run3(plxk_run_scatter_nd, PLX_OP_SCATTER_ND, &d, &tx, &ti, &tu, &ty, g_x, g_ind,
                       g_u, g_y), "rep %d: %s", rep, g_err);
        memcpy(g_ref, g_x, numel(&tx) * es);
        for (size_t j = 0; j < tuples; j++) {
            int64_t c[PLX_MAX_RANK] = {0};
            for (uint32_t q = 0; q < k; q++) {
                int64_t v = ti.dtype == PLX_DTYPE_INT32 ? ((int32_t *)g_ind)[j * k + q]
                                                        : ((int64_t *)g_ind)[j * k + q];
                c[q] = v < 0 ? v + dims[q] : v;
            }
            size_t base = ravel(&tx, c); /* the slice's first element: the rest of c is 0 */
            for (size_t s = 0; s < slice; s++) {
                ref_combine(t, red, g_ref + (base + s) * es, g_u + (j * slice + s) * es);
            }
        }
        same_bytes(g_y, g_ref, numel(&ty), t, plx_scatter_reduction_name(red), rep);
    }
}

/* ---- gather_nd ---------------------------------------------------------- */

Test(gather_nd, onnx_examples_and_errors) {
    plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
    /* example 1: data [[0,1],[2,3]], indices [[0,0],[1,1]] -> [0,3] */
    int32_t x[] = {0, 1, 2, 3}, y[8];
    int64_t i1[] = {0, 0, 1, 1};
    plx_tensor_info t22 = info(PLX_DTYPE_INT32, SHAPE(2, 2)), ti22 = info(PLX_DTYPE_INT64, SHAPE(2, 2));
    plx_tensor_info t2 = info(PLX_DTYPE_INT32, SHAPE(2));
    cr_assert(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti22, &t2, x, i1, y), "%s",
              g_err);
    cr_assert(eq(i32, y[0], 0));
    cr_assert(eq(i32, y[1], 3));
    /* example 2: indices [[1],[0]] -> rows [[2,3],[0,1]] */
    int64_t i2[] = {1, 0};
    plx_tensor_info ti21 = info(PLX_DTYPE_INT64, SHAPE(2, 1));
    cr_assert(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti21, &t22, x, i2, y), "%s",
              g_err);
    int32_t w2[] = {2, 3, 0, 1};
    for (int i = 0; i < 4; i++) cr_assert(eq(i32, y[i], w2[i]), "element %d", i);
    /* example 5 (batch_dims 1): data [[[0,1],[2,3]],[[4,5],[6,7]]], indices
     * [[1],[0]] -> batch 0 row 1, batch 1 row 0: [[2,3],[4,5]]; with int32
     * indices [[-1],[-2]] the same */
    int32_t x3[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int32_t i5[] = {-1, -2};
    plx_tensor_info t222 = info(PLX_DTYPE_INT32, SHAPE(2, 2, 2)), ti5 = info(PLX_DTYPE_INT32, SHAPE(2, 1));
    d.batch_dims = 1;
    cr_assert(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t222, &ti5, &t22, x3, i5, y), "%s",
              g_err);
    int32_t w5[] = {2, 3, 4, 5};
    for (int i = 0; i < 4; i++) cr_assert(eq(i32, y[i], w5[i]), "element %d", i);
    /* out of range */
    int32_t bad[] = {0, 2};
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t222, &ti5, &t22, x3, bad, y)));
    cr_assert(eq(str, g_err,
                 "layer 'X1' (gather_nd): index 2 (indices element 1) is out of range for data "
                 "dim 1 of size 2"));
    d.batch_dims = 0;
    int64_t bad2[] = {0, 0, 1, -3};
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti22, &t2, x, bad2, y)));
    err_has("index -3 (indices element 3)");
    /* refusals: batch dims that differ, a tuple of 0 or too long, a wrong output */
    d.batch_dims = 1;
    plx_tensor_info ti31 = info(PLX_DTYPE_INT32, SHAPE(3, 1)), t32 = info(PLX_DTYPE_INT32, SHAPE(3, 2));
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t222, &ti31, &t32, x3, i5, y)));
    d.batch_dims = 0;
    plx_tensor_info ti20 = info(PLX_DTYPE_INT64, SHAPE(2, 0));
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti20, &t222, x, i1, y)));
    plx_tensor_info ti23 = info(PLX_DTYPE_INT64, SHAPE(2, 3));
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti23, &t2, x, i1, y)));
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti22, &t22, x, i1, y)));
    d.batch_dims = -1;
    cr_assert(not(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &t22, &ti22, &t2, x, i1, y)));
}

Test(gather_nd, random) {
    seed(44);
    for (int rep = 0; rep < 400; rep++) {
        uint32_t r = (uint32_t)rnd_i(1, 4), b = (uint32_t)rnd_i(0, r - 1);
        uint32_t k = (uint32_t)rnd_i(1, r - b), lead = (uint32_t)rnd_i(0, 2);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int64_t dims[4], idims[8], ydims[8];
        for (uint32_t i = 0; i < r; i++) dims[i] = rnd_i(1, 4);
        uint32_t q = 0;
        for (uint32_t i = 0; i < b; i++) idims[q++] = dims[i];
        for (uint32_t i = 0; i < lead; i++) idims[q++] = rnd_i(0, 3);
        if (rep % 40 == 0) {
            /* many tuples per batch entry: several chunks each */
            r = 3, b = 1, k = rep % 80 == 0 ? 2 : 1, lead = 1, q = 2;
            dims[0] = 2, dims[1] = 5, dims[2] = 3;
            idims[0] = 2, idims[1] = 600;
        }
        idims[q++] = k;
        uint32_t yr = 0;
        for (uint32_t i = 0; i + 1 < q; i++) ydims[yr++] = idims[i];
        for (uint32_t i = b + k; i < r; i++) ydims[yr++] = dims[i];
        plx_tensor_info tx = info(t, dims, r), ty = info(t, ydims, yr);
        plx_tensor_info ti = info(rnd() & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, idims, q);
        size_t tuples = numel(&ti) / k, per = tuples, batches = 1, slice = 1;
        for (uint32_t i = 0; i < b; i++) batches *= (size_t)dims[i];
        per = batches ? tuples / batches : 0;
        for (uint32_t i = b + k; i < r; i++) slice *= (size_t)dims[i];
        for (size_t j = 0; j < tuples; j++) {
            for (uint32_t c = 0; c < k; c++) {
                set_index(ti.dtype, g_ind, j * k + c, rnd_i(-dims[b + c], dims[b + c] - 1));
            }
        }
        fill_values(t, g_x, numel(&tx), true);
        plx_gather_nd_desc d = {sizeof d, (int32_t)b};
        cr_assert(run2(plxk_run_gather_nd, PLX_OP_GATHER_ND, &d, &tx, &ti, &ty, g_x, g_ind, g_y),
                  "rep %d: %s", rep, g_err);
        for (size_t j = 0; j < tuples; j++) {
            /* tuple j: batch coordinates from j / per, then the tuple's */
            int64_t c[PLX_MAX_RANK] = {0}, bc[PLX_MAX_RANK];
            plx_tensor_info tb = info(t, dims, b);
            if (b) unravel(&tb, j / per, bc);
            for (uint32_t i = 0; i < b; i++) c[i] = bc[i];
            for (uint32_t q2 = 0; q2 < k; q2++) {
                int64_t v = ti.dtype == PLX_DTYPE_INT32 ? ((int32_t *)g_ind)[j * k + q2]
                                                        : ((int64_t *)g_ind)[j * k + q2];
                c[b + q2] = v < 0 ? v + dims[b + q2] : v;
            }
            size_t base = ravel(&tx, c);
            memcpy(g_ref + j * slice * es, g_x + base * es, slice * es);
        }
        same_bytes(g_y, g_ref, numel(&ty), t, "gather_nd", rep);
    }
}
