/* Tests of cpu_ref's data-movement kernels (kernels_data.c), called
 * directly with hand-built layer views: hand-derived cases (the derivation
 * is in the comments) and seeded random cases checked against plain
 * reference loops written here, independently of the kernels. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* ---- helpers ------------------------------------------------------------ */

#define KT_LAYER_NAME "D1"
#include "kernel_test_util.h"

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

/* unravel / ravel */
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
static uint8_t g_x[BIG * 8], g_y[BIG * 8], g_ref[BIG * 8];

/* ---- constant, mem_copy, reshape ---------------------------------------- */

Test(copy, constant_mem_copy_reshape) {
    int32_t data[] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    plx_constant_desc cd = {sizeof(plx_constant_desc), data};
    plx_tensor_info t = info(PLX_DTYPE_INT32, SHAPE(2, 3));
    plx_layer_view l = layer_of(PLX_OP_CONSTANT, &cd, NULL, 0, &t, 1);
    void *outs[] = {y};
    cr_assert(run_layer(plxk_run_constant, &l, NULL, outs), "%s", g_err);
    cr_assert(zero(int, memcmp(y, data, sizeof data)));
    cd.data = NULL;
    cr_assert(not(zero(ptr, (void *)plxk_check_constant(&l, g_err, sizeof g_err))));
    /* mem_copy and reshape: the same bytes; [2,3] -> [3,2] or [6] */
    int32_t z[6] = {0};
    plx_tensor_info t6 = info(PLX_DTYPE_INT32, SHAPE(6));
    cr_assert(run1(plxk_run_mem_copy, PLX_OP_MEM_COPY, NULL, &t, &t, data, z), "%s", g_err);
    cr_assert(zero(int, memcmp(z, data, sizeof data)));
    memset(z, 0, sizeof z);
    plx_reshape_desc rd = PLX_RESHAPE_DESC_INIT;
    cr_assert(run1(plxk_run_reshape, PLX_OP_RESHAPE, &rd, &t, &t6, data, z), "%s", g_err);
    cr_assert(zero(int, memcmp(z, data, sizeof data)));
    plx_axes_desc ad = PLX_AXES_DESC_INIT;
    plx_tensor_info t1 = info(PLX_DTYPE_INT32, SHAPE(1, 6, 1));
    memset(z, 0, sizeof z);
    cr_assert(run1(plxk_run_reshape, PLX_OP_SQUEEZE, &ad, &t1, &t6, data, z), "%s", g_err);
    cr_assert(zero(int, memcmp(z, data, sizeof data)));
    /* byte sizes differ: refused, naming the op */
    plx_tensor_info t5 = info(PLX_DTYPE_INT32, SHAPE(5));
    plx_layer_view bad = layer_of(PLX_OP_FLATTEN, &ad, &t, 1, &t5, 1);
    const char *why = plxk_check_reshape(&bad, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "flatten"))), "%s", why);
    /* empty and scalar */
    plx_tensor_info e = info(PLX_DTYPE_INT64, SHAPE(0, 3)), e2 = info(PLX_DTYPE_INT64, SHAPE(3, 0));
    cr_assert(run1(plxk_run_reshape, PLX_OP_RESHAPE, &rd, &e, &e2, data, z));
    plx_tensor_info s = info(PLX_DTYPE_INT32, SCALAR), s1 = info(PLX_DTYPE_INT32, SHAPE(1));
    cr_assert(run1(plxk_run_reshape, PLX_OP_UNSQUEEZE, &ad, &s, &s1, data, z));
    cr_assert(eq(i32, z[0], 1));
}

/* ---- transpose ---------------------------------------------------------- */

Test(transpose, hand) {
    /* [[1,2,3],[4,5,6]]^T = [[1,4],[2,5],[3,6]] */
    int16_t x[] = {1, 2, 3, 4, 5, 6}, y[6];
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    plx_tensor_info tx = info(PLX_DTYPE_INT16, SHAPE(2, 3)), ty = info(PLX_DTYPE_INT16, SHAPE(3, 2));
    cr_assert(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &ty, x, y), "%s", g_err);
    int16_t w[] = {1, 4, 2, 5, 3, 6};
    for (int i = 0; i < 6; i++) cr_assert(eq(i16, y[i], w[i]));
    /* reverse of rank 3 [1,2,3] -> [3,2,1]: y[k][j][0] = x[0][j][k] */
    plx_tensor_info t3 = info(PLX_DTYPE_INT16, SHAPE(1, 2, 3)), t3r = info(PLX_DTYPE_INT16, SHAPE(3, 2, 1));
    cr_assert(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &t3, &t3r, x, y), "%s", g_err);
    for (int i = 0; i < 6; i++) cr_assert(eq(i16, y[i], w[i]));
    /* explicit perm (1, 0) on [2,3] matches; bad perms refused */
    d.perm_count = 2;
    d.perm[0] = 1;
    d.perm[1] = 0;
    cr_assert(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &ty, x, y));
    d.perm[1] = 1;
    cr_assert(not(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &ty, x, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "'D1'"))), "%s", g_err);
    d.perm[1] = 0;
    cr_assert(not(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &tx, x, y))); /* dims */
}

Test(transpose, random_perms_up_to_rank6) {
    seed(11);
    for (int rep = 0; rep < 300; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 6);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int64_t dims[6];
        for (uint32_t i = 0; i < rank; i++) dims[i] = rnd_i(rep % 17 == 0 ? 0 : 1, 4);
        plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
        d.perm_count = rank;
        for (uint32_t i = 0; i < rank; i++) d.perm[i] = i;
        for (uint32_t i = rank; i-- > 1;) { /* Fisher-Yates */
            uint32_t j = (uint32_t)rnd_i(0, i), tmp = d.perm[i];
            d.perm[i] = d.perm[j];
            d.perm[j] = tmp;
        }
        plx_tensor_info tx = info(t, dims, rank), ty = tx;
        for (uint32_t i = 0; i < rank; i++) ty.dims[i] = dims[d.perm[i]];
        size_t n = numel(&tx);
        fill_bytes(g_x, n * es);
        cr_assert(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &ty, g_x, g_y), "%s", g_err);
        for (size_t i = 0; i < n; i++) {
            int64_t oc[8], ic[8];
            unravel(&ty, i, oc);
            for (uint32_t k = 0; k < rank; k++) ic[d.perm[k]] = oc[k];
            cr_assert(zero(int, memcmp(g_y + i * es, g_x + ravel(&tx, ic) * es, es)), "rep %d", rep);
        }
    }
}

/* Dims wider than the copy's 16 x 16 tiles, with partial tiles at both
 * edges, in every element size: the NCHW <-> NHWC moves and a full
 * reversal (the tiled path), and a trailing dim of 1. */
Test(transpose, tiles_of_wide_dims) {
    static const struct {
        uint32_t rank;
        int64_t dims[4];
        uint32_t perm[4];
    } cases[] = {
        {3, {3, 37, 50}, {0, 2, 1}},      {4, {2, 19, 5, 33}, {0, 2, 3, 1}},
        {4, {2, 33, 7, 18}, {0, 3, 1, 2}}, {3, {30, 17, 31}, {2, 1, 0}},
        {3, {40, 1, 35}, {2, 0, 1}},      {2, {1, 300}, {1, 0}},
    };
    static const plx_dtype types[] = {PLX_DTYPE_INT8, PLX_DTYPE_FLOAT16, PLX_DTYPE_FLOAT32,
                                      PLX_DTYPE_INT64};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            uint32_t rank = cases[c].rank;
            size_t es = plx_dtype_size(types[ti]);
            plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
            d.perm_count = rank;
            memcpy(d.perm, cases[c].perm, rank * sizeof *d.perm);
            plx_tensor_info tx = info(types[ti], cases[c].dims, rank), ty = tx;
            for (uint32_t i = 0; i < rank; i++) ty.dims[i] = cases[c].dims[d.perm[i]];
            size_t n = numel(&tx);
            cr_assert(le(sz, n, (size_t)BIG));
            fill_bytes(g_x, n * es);
            cr_assert(run1(plxk_run_transpose, PLX_OP_TRANSPOSE, &d, &tx, &ty, g_x, g_y), "%s",
                      g_err);
            for (size_t i = 0; i < n; i++) {
                int64_t oc[8], ic[8];
                unravel(&ty, i, oc);
                for (uint32_t k = 0; k < rank; k++) ic[d.perm[k]] = oc[k];
                cr_assert(zero(int, memcmp(g_y + i * es, g_x + ravel(&tx, ic) * es, es)),
                          "case %zu, %zu-byte elements, element %zu", c, es, i);
            }
        }
    }
}

/* ---- concat / split ----------------------------------------------------- */

Test(concat, hand_and_negative_axis) {
    /* axis 1: [[1,2],[3,4]] ++ [[5],[6]] = [[1,2,5],[3,4,6]]; axis -1 is the same */
    int8_t a[] = {1, 2, 3, 4}, b[] = {5, 6}, y[6];
    plx_tensor_info ins[2] = {info(PLX_DTYPE_INT8, SHAPE(2, 2)), info(PLX_DTYPE_INT8, SHAPE(2, 1))};
    plx_tensor_info ty = info(PLX_DTYPE_INT8, SHAPE(2, 3));
    const void *pin[] = {a, b};
    void *pout[] = {y};
    int8_t w[] = {1, 2, 5, 3, 4, 6};
    for (int axis = 1; axis >= -1; axis -= 2) {
        plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
        plx_layer_view l = layer_of(PLX_OP_CONCAT, &d, ins, 2, &ty, 1);
        cr_assert(run_layer(plxk_run_concat, &l, pin, pout), "%s", g_err);
        for (int i = 0; i < 6; i++) cr_assert(eq(i8, y[i], w[i]));
    }
    /* axis 0 with a shape mismatch in dim 1: refused */
    plx_axis_desc d0 = PLX_AXIS_DESC_INIT(0);
    plx_layer_view l0 = layer_of(PLX_OP_CONCAT, &d0, ins, 2, &ty, 1);
    cr_assert(not(zero(ptr, (void *)plxk_check_concat(&l0, g_err, sizeof g_err))));
    /* an empty part along the axis is allowed */
    plx_tensor_info ins2[2] = {info(PLX_DTYPE_INT8, SHAPE(2, 0)), info(PLX_DTYPE_INT8, SHAPE(2, 3))};
    plx_axis_desc d1 = PLX_AXIS_DESC_INIT(1);
    plx_layer_view l1 = layer_of(PLX_OP_CONCAT, &d1, ins2, 2, &ty, 1);
    const void *pin2[] = {a, w};
    cr_assert(run_layer(plxk_run_concat, &l1, pin2, pout), "%s", g_err);
    for (int i = 0; i < 6; i++) cr_assert(eq(i8, y[i], w[i]));
}

/* Parts large enough that the copies are cut into 64 KiB pieces and shared
 * by a pool of two threads (kernels_data.c, concat_task): an outer dim of
 * 3, blocks of 1, 2.5 and 0 pieces' worth and a last one of 37 bytes. */
Test(concat, large_parts_on_two_threads) {
    seed(31);
    char err[128];
    plxk_compute two = {plxk_isa_best(), plxk_pool_create(2, err, sizeof err)};
    cr_assert(not(zero(ptr, two.pool)), "%s", err);
    const int64_t widths[4] = {65536, 163840, 0, 37}; /* bytes per outer index */
    plx_tensor_info ins[4];
    uint8_t *parts[4];
    int64_t total = 0;
    for (int p = 0; p < 4; p++) {
        ins[p] = info(PLX_DTYPE_UINT8, SHAPE(3, widths[p]));
        parts[p] = malloc((size_t)(3 * widths[p]) + 1);
        cr_assert(not(zero(ptr, parts[p])));
        fill_bytes(parts[p], (size_t)(3 * widths[p]));
        total += widths[p];
    }
    plx_tensor_info ty = info(PLX_DTYPE_UINT8, SHAPE(3, total));
    uint8_t *y = malloc((size_t)(3 * total));
    cr_assert(not(zero(ptr, y)));
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_layer_view l = layer_of(PLX_OP_CONCAT, &d, ins, 4, &ty, 1);
    const void *pin[4] = {parts[0], parts[1], parts[2], parts[3]};
    void *pout[] = {y};
    plxk_kernel_args a = {.layer = &l, .inputs = pin, .outputs = pout, .error = g_err,
                          .error_size = sizeof g_err, .compute = &two};
    cr_assert(plxk_run_concat(&a), "%s", g_err);
    for (int64_t o = 0, at = 0; o < 3; o++) {
        for (int p = 0; p < 4; p++) {
            cr_assert(zero(int, memcmp(y + at, parts[p] + o * widths[p], (size_t)widths[p])),
                      "outer %lld, part %d", (long long)o, p);
            at += widths[p];
        }
    }
    for (int p = 0; p < 4; p++) {
        free(parts[p]);
    }
    free(y);
    plxk_pool_destroy(two.pool);
}

Test(concat_split, random_round_trip) {
    seed(12);
    uint8_t parts[4][BIG], back[4][BIG];
    for (int rep = 0; rep < 100; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 4), k = (uint32_t)rnd_i(1, 4);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int32_t axis = (int32_t)rnd_i(-(int64_t)rank, rank - 1);
        uint32_t ax = axis < 0 ? (uint32_t)(axis + (int32_t)rank) : (uint32_t)axis;
        int64_t dims[4];
        for (uint32_t i = 0; i < rank; i++) dims[i] = rnd_i(1, 4);
        plx_tensor_info ins[4], outs[4];
        int64_t total = 0, sizes[4];
        for (uint32_t p = 0; p < k; p++) {
            ins[p] = info(t, dims, rank);
            ins[p].dims[ax] = sizes[p] = rnd_i(0, 3);
            total += sizes[p];
            fill_bytes(parts[p], numel(&ins[p]) * es);
        }
        plx_tensor_info ty = info(t, dims, rank);
        ty.dims[ax] = total;
        plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
        plx_layer_view l = layer_of(PLX_OP_CONCAT, &d, ins, k, &ty, 1);
        const void *pin[4] = {parts[0], parts[1], parts[2], parts[3]};
        void *pout[] = {g_y};
        cr_assert(run_layer(plxk_run_concat, &l, pin, pout), "%s", g_err);
        /* reference: output element -> (part, coordinate - offset) */
        for (size_t i = 0; i < numel(&ty); i++) {
            int64_t c[8];
            unravel(&ty, i, c);
            uint32_t p = 0;
            while (c[ax] >= ins[p].dims[ax]) c[ax] -= ins[p++].dims[ax];
            cr_assert(zero(int, memcmp(g_y + i * es, parts[p] + ravel(&ins[p], c) * es, es)));
        }
        /* split back with explicit sizes */
        for (uint32_t p = 0; p < k; p++) outs[p] = ins[p];
        plx_split_desc sd = PLX_SPLIT_DESC_INIT(axis);
        sd.sizes = sizes;
        plx_layer_view ls = layer_of(PLX_OP_SPLIT, &sd, &ty, 1, outs, k);
        const void *sin[] = {g_y};
        void *sout[4] = {back[0], back[1], back[2], back[3]};
        cr_assert(run_layer(plxk_run_split, &ls, sin, sout), "%s", g_err);
        for (uint32_t p = 0; p < k; p++) {
            cr_assert(zero(int, memcmp(back[p], parts[p], numel(&ins[p]) * es)), "rep %d part %u", rep, p);
        }
    }
}

Test(split, equal_and_explicit) {
    /* equal split of 7 into 3 (ONNX 18): ceil(7/3) = 3 -> 3, 3, 1 */
    int32_t x[7] = {0, 1, 2, 3, 4, 5, 6}, y0[3], y1[3], y2[1];
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(7));
    plx_tensor_info outs[3] = {info(PLX_DTYPE_INT32, SHAPE(3)), info(PLX_DTYPE_INT32, SHAPE(3)),
                               info(PLX_DTYPE_INT32, SHAPE(1))};
    plx_split_desc d = PLX_SPLIT_DESC_INIT(-1);
    plx_layer_view l = layer_of(PLX_OP_SPLIT, &d, &tx, 1, outs, 3);
    const void *pin[] = {x};
    void *pout[] = {y0, y1, y2};
    cr_assert(run_layer(plxk_run_split, &l, pin, pout), "%s", g_err);
    cr_assert(eq(i32, y0[2], 2));
    cr_assert(eq(i32, y1[0], 3));
    cr_assert(eq(i32, y2[0], 6));
    /* 2, 2, 3 is not the equal split: refused; with explicit sizes it runs */
    outs[0].dims[0] = 2;
    outs[1].dims[0] = 2;
    outs[2].dims[0] = 3;
    cr_assert(not(zero(ptr, (void *)plxk_check_split(&l, g_err, sizeof g_err))));
    int64_t sizes[] = {2, 2, 3};
    d.sizes = sizes;
    int32_t z2[3];
    void *pout2[] = {y0, y1, z2};
    cr_assert(run_layer(plxk_run_split, &l, pin, pout2), "%s", g_err);
    cr_assert(eq(i32, y1[1], 3));
    cr_assert(eq(i32, z2[0], 4));
    cr_assert(eq(i32, z2[2], 6));
    /* [2,4] split in 2 along axis 1: [[0,1],[4,5]] and [[2,3],[6,7]] */
    int32_t m[] = {0, 1, 2, 3, 4, 5, 6, 7}, a[4], b[4];
    plx_tensor_info tm = info(PLX_DTYPE_INT32, SHAPE(2, 4));
    plx_tensor_info o2[2] = {info(PLX_DTYPE_INT32, SHAPE(2, 2)), info(PLX_DTYPE_INT32, SHAPE(2, 2))};
    plx_split_desc d1 = PLX_SPLIT_DESC_INIT(1);
    plx_layer_view l1 = layer_of(PLX_OP_SPLIT, &d1, &tm, 1, o2, 2);
    const void *pin1[] = {m};
    void *pout1[] = {a, b};
    cr_assert(run_layer(plxk_run_split, &l1, pin1, pout1), "%s", g_err);
    int32_t wa[] = {0, 1, 4, 5}, wb[] = {2, 3, 6, 7};
    cr_assert(zero(int, memcmp(a, wa, sizeof wa)));
    cr_assert(zero(int, memcmp(b, wb, sizeof wb)));
}

/* ---- slice -------------------------------------------------------------- */

static plx_slice_desc slice1(int64_t start, int64_t end, int32_t axis, int64_t step) {
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.starts[0] = start;
    d.ends[0] = end;
    d.axes[0] = axis;
    d.steps[0] = step;
    d.count = 1;
    return d;
}

static void slice_expect(plx_slice_desc d, const int32_t *want, int64_t n) {
    int32_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y[10];
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(10)), ty = info(PLX_DTYPE_INT32, (const int64_t[]){n}, 1);
    cr_assert(run1(plxk_run_slice, PLX_OP_SLICE, &d, &tx, &ty, x, y), "%s", g_err);
    for (int64_t i = 0; i < n; i++) cr_assert(eq(i32, y[i], want[i]), "i %lld", (long long)i);
}

Test(slice, hand_onnx_rules) {
    /* -1 -> 9; end INT64_MIN clamps to -1 (past the front); step -3: 9, 6, 3, 0 */
    slice_expect(slice1(-1, INT64_MIN, 0, -3), (const int32_t[]){9, 6, 3, 0}, 4);
    /* start 100 clamps to 9 for a negative step, end -100 -> -90 -> -1: full reverse */
    slice_expect(slice1(100, -100, -1, -1), (const int32_t[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10);
    /* start -3 -> 7, end 100 -> 10: 7, 8, 9 */
    slice_expect(slice1(-3, 100, 0, 1), (const int32_t[]){7, 8, 9}, 3);
    /* 1..8 step 3: 1, 4, 7 */
    slice_expect(slice1(1, 8, 0, 3), (const int32_t[]){1, 4, 7}, 3);
    /* 8 down to 2 (exclusive) step -2: 8, 6, 4 */
    slice_expect(slice1(8, 2, 0, -2), (const int32_t[]){8, 6, 4}, 3);
    /* empty: start 5 end 2 step 1 */
    slice_expect(slice1(5, 2, 0, 1), NULL, 0);
    /* wrong output size and step 0 are refused */
    int32_t x[10] = {0}, y[10];
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(10)), ty = info(PLX_DTYPE_INT32, SHAPE(4));
    plx_slice_desc d = slice1(0, 10, 0, 2);
    cr_assert(not(run1(plxk_run_slice, PLX_OP_SLICE, &d, &tx, &ty, x, y)));
    d = slice1(0, 10, 0, 0);
    cr_assert(not(run1(plxk_run_slice, PLX_OP_SLICE, &d, &tx, &ty, x, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "step 0"))), "%s", g_err);
}

/* ONNX Slice written as the spec's pseudo-code: list the kept indices. */
static int64_t ref_slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *out) {
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t n = 0;
    if (step > 0) {
        if (start < 0) start = 0;
        if (start > dim) start = dim;
        if (end < 0) end = 0;
        if (end > dim) end = dim;
        for (int64_t i = start; i < end; i += step) out[n++] = i;
    } else {
        if (start < 0) start = 0;
        if (start > dim - 1) start = dim - 1;
        if (end < -1) end = -1;
        if (end > dim - 1) end = dim - 1;
        for (int64_t i = start; i > end; i += step) out[n++] = i;
    }
    return n;
}

Test(slice, random_multi_axis) {
    seed(13);
    for (int rep = 0; rep < 300; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int64_t dims[4];
        for (uint32_t i = 0; i < rank; i++) dims[i] = rnd_i(0, 6);
        plx_tensor_info tx = info(t, dims, rank), ty = tx;
        plx_slice_desc d = PLX_SLICE_DESC_INIT;
        int64_t idx[4][8];
        int64_t cnt[4];
        for (uint32_t i = 0; i < rank; i++) {
            cnt[i] = dims[i];
            for (int64_t j = 0; j < dims[i]; j++) idx[i][j] = j;
        }
        /* a random subset of axes, in random order, some negative */
        for (uint32_t i = 0; i < rank; i++) {
            if (rnd() % 3 == 0) continue;
            uint32_t c = d.count++;
            d.axes[c] = (int32_t)i - (rnd() & 1 ? (int32_t)rank : 0);
            d.starts[c] = rnd_i(-9, 9);
            d.ends[c] = rnd() % 5 == 0 ? (rnd() & 1 ? INT64_MAX : INT64_MIN) : rnd_i(-9, 9);
            d.steps[c] = rnd_i(1, 3) * (rnd() & 1 ? 1 : -1);
            cnt[i] = ref_slice_indices(dims[i], d.starts[c], d.ends[c], d.steps[c], idx[i]);
            ty.dims[i] = cnt[i];
        }
        if (d.count == 2) { /* swap the two entries: order must not matter */
            plx_slice_desc e = d;
            d.axes[0] = e.axes[1], d.axes[1] = e.axes[0];
            d.starts[0] = e.starts[1], d.starts[1] = e.starts[0];
            d.ends[0] = e.ends[1], d.ends[1] = e.ends[0];
            d.steps[0] = e.steps[1], d.steps[1] = e.steps[0];
        }
        fill_bytes(g_x, numel(&tx) * es);
        cr_assert(run1(plxk_run_slice, PLX_OP_SLICE, &d, &tx, &ty, g_x, g_y), "rep %d: %s", rep, g_err);
        for (size_t i = 0; i < numel(&ty); i++) {
            int64_t c[8];
            unravel(&ty, i, c);
            for (uint32_t k = 0; k < rank; k++) c[k] = idx[k][c[k]];
            cr_assert(zero(int, memcmp(g_y + i * es, g_x + ravel(&tx, c) * es, es)), "rep %d", rep);
        }
    }
}

/* ---- pad ---------------------------------------------------------------- */

static void pad1(plx_pad_mode mode, int64_t pb, int64_t pe, double value, const float *want, int64_t n) {
    float x[] = {1, 2, 3, 4}, y[16];
    plx_pad_desc d = PLX_PAD_DESC_INIT(mode);
    d.pads_begin[0] = pb;
    d.pads_end[0] = pe;
    d.value = value;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(4)), ty = info(PLX_DTYPE_FLOAT32, (const int64_t[]){n}, 1);
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &d, &tx, &ty, x, y), "%s", g_err);
    for (int64_t i = 0; i < n; i++) cr_assert(eq(flt, y[i], want[i]), "mode %d i %lld", mode, (long long)i);
}

Test(pad, hand_modes) {
    /* reflect [1,2,3,4] by 2, 2: mirror without the edge: 3 2 | 1 2 3 4 | 3 2 */
    pad1(PLX_PAD_REFLECT, 2, 2, 0, (const float[]){3, 2, 1, 2, 3, 4, 3, 2}, 8);
    /* edge: 1 1 | 1 2 3 4 | 4 4 */
    pad1(PLX_PAD_EDGE, 2, 2, 0, (const float[]){1, 1, 1, 2, 3, 4, 4, 4}, 8);
    /* constant 9.5: 9.5 | 1 2 3 4 | 9.5 9.5 */
    pad1(PLX_PAD_CONSTANT, 1, 2, 9.5, (const float[]){9.5f, 1, 2, 3, 4, 9.5f, 9.5f}, 7);
    /* negative pads crop: -1 at the front, +1 at the back: 2 3 4 | v */
    pad1(PLX_PAD_CONSTANT, -1, 1, 7, (const float[]){2, 3, 4, 7}, 4);
    pad1(PLX_PAD_REFLECT, -2, -1, 0, (const float[]){3}, 1);
    /* reflect further than the size repeats the mirror (numpy): period 6:
     * index -5 -> 1 -> value 2 ... */
    pad1(PLX_PAD_REFLECT, 5, 0, 0, (const float[]){2, 3, 4, 3, 2, 1, 2, 3, 4}, 9);
    /* wrap repeats the dim: 3 4 | 1 2 3 4 | 1; past one period: index -5
     * is 3 (mod 4) -> 4, then 1 2 3 4 | 1 2 3 4 | 1 2 3 4 */
    pad1(PLX_PAD_WRAP, 2, 1, 0, (const float[]){3, 4, 1, 2, 3, 4, 1}, 7);
    pad1(PLX_PAD_WRAP, 5, 6, 0, (const float[]){4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2}, 15);
    /* 2-D reflect on [[1,2,3],[4,5,6]], pads (1,1) before and after:
     * rows -1 -> 1, 2 -> 0; cols likewise */
    float x[] = {1, 2, 3, 4, 5, 6}, y[20];
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_REFLECT);
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(2, 3)), ty = info(PLX_DTYPE_FLOAT32, SHAPE(4, 5));
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &d, &tx, &ty, x, y), "%s", g_err);
    float w[] = {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2};
    for (int i = 0; i < 20; i++) cr_assert(eq(flt, y[i], w[i]), "i %d", i);
    /* constant value converted to the dtype: int8 with 3.7 -> 3, -300 -> -128;
     * bool with 2 -> 1; float16 with 0.5 -> 0x3800 */
    int8_t i8[] = {1}, o8[3];
    plx_pad_desc dc = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    dc.pads_begin[0] = dc.pads_end[0] = 1;
    dc.value = 3.7;
    plx_tensor_info t1 = info(PLX_DTYPE_INT8, SHAPE(1)), t3 = info(PLX_DTYPE_INT8, SHAPE(3));
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &dc, &t1, &t3, i8, o8));
    cr_assert(eq(i8, o8[0], 3));
    cr_assert(eq(i8, o8[1], 1));
    dc.value = -300;
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &dc, &t1, &t3, i8, o8));
    cr_assert(eq(i8, o8[2], -128));
    t1.dtype = t3.dtype = PLX_DTYPE_BOOL;
    dc.value = 2;
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &dc, &t1, &t3, i8, o8));
    cr_assert(eq(u8, (uint8_t)o8[0], 1));
    uint16_t h[] = {0x3c00}, ho[3];
    t1.dtype = t3.dtype = PLX_DTYPE_FLOAT16;
    dc.value = 0.5;
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &dc, &t1, &t3, h, ho));
    cr_assert(eq(u16, ho[0], 0x3800));
    cr_assert(eq(u16, ho[1], 0x3c00));
    /* refusals: reflect of an empty dim, wrong output dims */
    plx_tensor_info te = info(PLX_DTYPE_FLOAT32, SHAPE(0)), t2 = info(PLX_DTYPE_FLOAT32, SHAPE(2));
    plx_pad_desc dr = PLX_PAD_DESC_INIT(PLX_PAD_REFLECT);
    dr.pads_begin[0] = dr.pads_end[0] = 1;
    cr_assert(not(run1(plxk_run_pad, PLX_OP_PAD, &dr, &te, &t2, x, y)));
    dr.mode = PLX_PAD_CONSTANT; /* constant pads an empty dim fine */
    cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &dr, &te, &t2, x, y), "%s", g_err);
    cr_assert(eq(flt, y[0], 0.0f));
    cr_assert(not(run1(plxk_run_pad, PLX_OP_PAD, &dr, &t2, &t2, x, y)));
    /* wrap refuses a crop */
    plx_pad_desc dw = PLX_PAD_DESC_INIT(PLX_PAD_WRAP);
    dw.pads_begin[0] = -1;
    dw.pads_end[0] = 1;
    plx_tensor_info t4 = info(PLX_DTYPE_FLOAT32, SHAPE(4));
    cr_assert(not(run1(plxk_run_pad, PLX_OP_PAD, &dw, &t4, &t4, x, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "wrap pads of dim 0 must be >= 0"))), "%s", g_err);
}

/* numpy's pad index rule, written as repeated folding */
static int64_t ref_pad_index(plx_pad_mode mode, int64_t c, int64_t n) {
    if (c >= 0 && c < n) return c;
    if (mode == PLX_PAD_CONSTANT) return -1;
    if (mode == PLX_PAD_EDGE || n == 1) return c < 0 ? 0 : n - 1;
    while (c < 0 || c >= n) {
        if (c < 0) c = -c;
        if (c >= n) c = 2 * (n - 1) - c;
    }
    return c;
}

Test(pad, random_modes) {
    seed(14);
    for (int rep = 0; rep < 300; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 4);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        plx_pad_desc d = PLX_PAD_DESC_INIT((plx_pad_mode)(rep % 3));
        d.value = 0;
        int64_t dims[4];
        plx_tensor_info tx, ty;
        for (uint32_t i = 0; i < rank; i++) {
            dims[i] = rnd_i(1, 4);
            d.pads_begin[i] = rnd_i(-dims[i] / 2, 3);
            d.pads_end[i] = rnd_i(-dims[i] / 2, 3);
        }
        tx = info(t, dims, rank);
        ty = tx;
        for (uint32_t i = 0; i < rank; i++) ty.dims[i] = dims[i] + d.pads_begin[i] + d.pads_end[i];
        fill_bytes(g_x, numel(&tx) * es);
        cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &d, &tx, &ty, g_x, g_y), "%s", g_err);
        static const uint8_t zeros[8] = {0};
        for (size_t i = 0; i < numel(&ty); i++) {
            int64_t c[8];
            unravel(&ty, i, c);
            bool pad = false;
            for (uint32_t k = 0; k < rank; k++) {
                c[k] = ref_pad_index(d.mode, c[k] - d.pads_begin[k], dims[k]);
                pad = pad || c[k] < 0;
            }
            const uint8_t *want = pad ? zeros : g_x + ravel(&tx, c) * es;
            cr_assert(zero(int, memcmp(g_y + i * es, want, es)), "rep %d i %zu", rep, i);
        }
    }
}

/* A constant pad of the ABI 1.3 types converts the descriptor's double
 * value as a cast does: float64 exactly, uint16 saturated, uint64 from a
 * negative value 0 and from 1e19 exactly. */
Test(pad, constant_value_of_new_dtypes) {
    const struct {
        plx_dtype t;
        double value;
        uint64_t want; /* the element's bits */
    } cases[] = {
        {PLX_DTYPE_FLOAT64, 0.1, 0},
        {PLX_DTYPE_UINT16, 70000.0, 65535},
        {PLX_DTYPE_UINT32, 3.9, 3},
        {PLX_DTYPE_UINT64, -5.0, 0},
        {PLX_DTYPE_UINT64, 1e19, UINT64_C(10000000000000000000)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
        d.value = cases[k].value;
        d.pads_begin[0] = 1;
        d.pads_end[0] = 1;
        size_t es = plx_dtype_size(cases[k].t);
        plx_tensor_info tx = info(cases[k].t, SHAPE(2)), ty = info(cases[k].t, SHAPE(4));
        fill_bytes(g_x, 2 * es);
        cr_assert(run1(plxk_run_pad, PLX_OP_PAD, &d, &tx, &ty, g_x, g_y), "%s", g_err);
        uint64_t want = cases[k].want;
        if (cases[k].t == PLX_DTYPE_FLOAT64) memcpy(&want, &cases[k].value, 8);
        cr_assert(zero(int, memcmp(g_y, &want, es)), "case %zu", k);
        cr_assert(zero(int, memcmp(g_y + 3 * es, &want, es)), "case %zu", k);
        cr_assert(zero(int, memcmp(g_y + es, g_x, 2 * es)), "case %zu", k);
    }
}

/* ---- gather ------------------------------------------------------------- */

static bool gather_run(int32_t axis, const plx_tensor_info *x, const plx_tensor_info *ind,
                       const plx_tensor_info *y, const void *px, const void *pi, void *py) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
    plx_tensor_info ins_i[2] = {*x, *ind};
    plx_layer_view l = layer_of(PLX_OP_GATHER, &d, ins_i, 2, y, 1);
    const void *ins[] = {px, pi};
    void *outs[] = {py};
    return run_layer(plxk_run_gather, &l, ins, outs);
}

Test(gather, hand_and_errors) {
    /* data [[1,2],[3,4],[5,6]], indices [2, -3, -1] on axis 0:
     * rows 2, 0 (-3+3), 2 (-1+3) -> [[5,6],[1,2],[5,6]] */
    float x[] = {1, 2, 3, 4, 5, 6}, y[8];
    int64_t i64[] = {2, -3, -1};
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2)), ti = info(PLX_DTYPE_INT64, SHAPE(3));
    plx_tensor_info ty = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2));
    cr_assert(gather_run(0, &tx, &ti, &ty, x, i64, y), "%s", g_err);
    float w[] = {5, 6, 1, 2, 5, 6};
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], w[i]));
    /* axis -1 with int32 indices [[1],[0]] (shape [2,1]) -> y [3,2,1]:
     * y[r][j][0] = x[r][ind[j]] -> 2,1, 4,3, 6,5 */
    int32_t i32[] = {1, 0};
    plx_tensor_info ti2 = info(PLX_DTYPE_INT32, SHAPE(2, 1)), ty2 = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2, 1));
    cr_assert(gather_run(-1, &tx, &ti2, &ty2, x, i32, y), "%s", g_err);
    float w2[] = {2, 1, 4, 3, 6, 5};
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], w2[i]));
    /* scalar index on axis 1: column 1 -> [2,4,6] */
    int32_t one = 1;
    plx_tensor_info ts = info(PLX_DTYPE_INT32, SCALAR), ty3 = info(PLX_DTYPE_FLOAT32, SHAPE(3));
    cr_assert(gather_run(1, &tx, &ts, &ty3, x, &one, y), "%s", g_err);
    cr_assert(eq(flt, y[2], 6.0f));
    /* out of range: 3 and -4 on an axis of size 3 are errors naming layer and index */
    int64_t bad[] = {0, 3, 1};
    cr_assert(not(gather_run(0, &tx, &ti, &ty, x, bad, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "'D1'"))), "%s", g_err);
    cr_assert(not(zero(ptr, strstr(g_err, "index 3"))), "%s", g_err);
    bad[1] = -4;
    cr_assert(not(gather_run(0, &tx, &ti, &ty, x, bad, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "index -4"))), "%s", g_err);
    /* 8-bit indices: int8 -1 and -3 count from the end -> rows 2, 0 */
    int8_t s8[] = {-1, 1, -3};
    ti.dtype = PLX_DTYPE_INT8;
    cr_assert(gather_run(0, &tx, &ti, &ty, x, s8, y), "%s", g_err);
    float w3[] = {5, 6, 3, 4, 1, 2};
    for (int i = 0; i < 6; i++) cr_assert(eq(flt, y[i], w3[i]));
    uint8_t u8bad[] = {0, 3, 1};
    ti.dtype = PLX_DTYPE_UINT8;
    cr_assert(not(gather_run(0, &tx, &ti, &ty, x, u8bad, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "index 3"))), "%s", g_err);
    /* a 256-byte table by 8-bit indices (the lookup path): int8 -128..-1
     * read entries 128..255 */
    uint8_t table[256], idx[300], got[300];
    for (int i = 0; i < 256; i++) table[i] = (uint8_t)(i * 7 + 3);
    for (int i = 0; i < 300; i++) idx[i] = (uint8_t)(i * 13);
    for (int t = 0; t < 2; t++) {
        plx_tensor_info tt = info(t ? PLX_DTYPE_UINT8 : PLX_DTYPE_INT8, SHAPE(256));
        plx_tensor_info tk = info(t ? PLX_DTYPE_INT8 : PLX_DTYPE_UINT8, SHAPE(3, 100));
        plx_tensor_info to = info(tt.dtype, SHAPE(3, 100));
        cr_assert(gather_run(0, &tt, &tk, &to, table, idx, got), "%s", g_err);
        for (int i = 0; i < 300; i++) {
            int v = t ? (int8_t)idx[i] : idx[i];
            cr_assert(eq(u8, got[i], table[v < 0 ? v + 256 : v]), "element %d", i);
        }
    }
    /* refused: float indices, wrong output shape */
    ti.dtype = PLX_DTYPE_FLOAT32;
    cr_assert(not(gather_run(0, &tx, &ti, &ty, x, i64, y)));
    ti.dtype = PLX_DTYPE_INT64;
    cr_assert(not(gather_run(0, &tx, &ti, &ty2, x, i64, y)));
}

Test(gather, random) {
    seed(15);
    for (int rep = 0; rep < 200; rep++) {
        uint32_t rank = (uint32_t)rnd_i(1, 3), qrank = (uint32_t)rnd_i(0, 2);
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int64_t dims[3], qd[2];
        for (uint32_t i = 0; i < rank; i++) dims[i] = rnd_i(1, 4);
        for (uint32_t i = 0; i < qrank; i++) qd[i] = rnd_i(0, 3);
        int32_t axis = (int32_t)rnd_i(-(int64_t)rank, rank - 1);
        uint32_t ax = axis < 0 ? (uint32_t)(axis + (int32_t)rank) : (uint32_t)axis;
        plx_tensor_info tx = info(t, dims, rank);
        plx_tensor_info ti = info(rnd() & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, qd, qrank);
        plx_tensor_info ty = info(t, NULL, 0);
        ty.rank = rank - 1 + qrank;
        for (uint32_t i = 0, o = 0; i < rank; i++) {
            if (i == ax) for (uint32_t j = 0; j < qrank; j++) ty.dims[o++] = qd[j];
            else ty.dims[o++] = dims[i];
        }
        int64_t ind[16];
        for (size_t j = 0; j < numel(&ti); j++) {
            ind[j] = rnd_i(-dims[ax], dims[ax] - 1);
            if (ti.dtype == PLX_DTYPE_INT32) ((int32_t *)g_ref)[j] = (int32_t)ind[j];
            else ((int64_t *)g_ref)[j] = ind[j];
        }
        fill_bytes(g_x, numel(&tx) * es);
        cr_assert(gather_run(axis, &tx, &ti, &ty, g_x, g_ref, g_y), "%s", g_err);
        for (size_t i = 0; i < numel(&ty); i++) {
            int64_t c[8], xc[8], qc[8];
            unravel(&ty, i, c);
            for (uint32_t j = 0; j < qrank; j++) qc[j] = c[ax + j];
            int64_t v = ind[ravel(&ti, qc)];
            for (uint32_t k = 0; k < rank; k++) {
                xc[k] = k < ax ? c[k] : k == ax ? (v < 0 ? v + dims[ax] : v) : c[k + qrank - 1];
            }
            cr_assert(zero(int, memcmp(g_y + i * es, g_x + ravel(&tx, xc) * es, es)), "rep %d", rep);
        }
    }
}

/* ---- expand ------------------------------------------------------------- */

Test(expand, hand_and_random) {
    /* [3,1] = [1,2,3] expanded by shape [2,1,4] -> [2,3,4]: each row repeats its value */
    int64_t x[] = {1, 2, 3}, y[24];
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    d.rank = 3;
    d.dims[0] = 2, d.dims[1] = 1, d.dims[2] = 4;
    plx_tensor_info tx = info(PLX_DTYPE_INT64, SHAPE(3, 1)), ty = info(PLX_DTYPE_INT64, SHAPE(2, 3, 4));
    cr_assert(run1(plxk_run_expand, PLX_OP_EXPAND, &d, &tx, &ty, x, y), "%s", g_err);
    for (int i = 0; i < 24; i++) cr_assert(eq(i64, y[i], (i / 4) % 3 + 1));
    /* shape smaller than the input ([1] on [3,1]): output is the input's shape */
    plx_shape_desc d1 = PLX_SHAPE_DESC_INIT;
    d1.rank = 1;
    d1.dims[0] = 1;
    cr_assert(run1(plxk_run_expand, PLX_OP_EXPAND, &d1, &tx, &tx, x, y), "%s", g_err);
    cr_assert(eq(i64, y[2], 3));
    /* [3,1] to [2,4] does not broadcast: refused */
    plx_shape_desc d2 = PLX_SHAPE_DESC_INIT;
    d2.rank = 2;
    d2.dims[0] = 2, d2.dims[1] = 4;
    plx_tensor_info bad = info(PLX_DTYPE_INT64, SHAPE(2, 4));
    cr_assert(not(run1(plxk_run_expand, PLX_OP_EXPAND, &d2, &tx, &bad, x, y)));
    seed(16);
    for (int rep = 0; rep < 100; rep++) {
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        uint32_t ry = (uint32_t)rnd_i(0, 4), rx = (uint32_t)rnd_i(0, ry);
        plx_shape_desc ds = PLX_SHAPE_DESC_INIT;
        ds.rank = ry;
        plx_tensor_info oy = info(t, NULL, 0), ox = info(t, NULL, 0);
        oy.rank = ry;
        ox.rank = rx;
        for (uint32_t i = 0; i < ry; i++) {
            oy.dims[i] = rnd_i(1, 3);
            ds.dims[i] = rnd() & 1 ? oy.dims[i] : 1;
            if (i >= ry - rx) {
                ox.dims[i - (ry - rx)] = ds.dims[i] == 1 ? oy.dims[i] : (rnd() & 1 ? oy.dims[i] : 1);
            }
            if (ds.dims[i] == 1 && (i < ry - rx)) oy.dims[i] = 1;
        }
        fill_bytes(g_x, numel(&ox) * es);
        cr_assert(run1(plxk_run_expand, PLX_OP_EXPAND, &ds, &ox, &oy, g_x, g_y), "rep %d: %s", rep, g_err);
        for (size_t i = 0; i < numel(&oy); i++) {
            int64_t c[8], xc[8];
            unravel(&oy, i, c);
            for (uint32_t k = 0; k < rx; k++) xc[k] = ox.dims[k] == 1 ? 0 : c[k + ry - rx];
            cr_assert(zero(int, memcmp(g_y + i * es, g_x + ravel(&ox, xc) * es, es)), "rep %d", rep);
        }
    }
}

/* ---- depth_to_space / space_to_depth ------------------------------------ */

Test(depth_space, onnx_doc_examples) {
    /* ONNX DepthToSpace docs: x = arange(48) as [1,8,2,3], blocksize 2 */
    float x[48], y[48];
    for (int i = 0; i < 48; i++) x[i] = (float)i;
    plx_tensor_info tx = info(PLX_DTYPE_FLOAT32, SHAPE(1, 8, 2, 3)), ty = info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 4, 6));
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(2);
    cr_assert(run1(plxk_run_depth_to_space, PLX_OP_DEPTH_TO_SPACE, &d, &tx, &ty, x, y), "%s", g_err);
    const float dcr[] = {0,  12, 1,  13, 2,  14, 24, 36, 25, 37, 26, 38, 3,  15, 4,  16, 5,  17, 27, 39, 28, 40, 29, 41,
                         6,  18, 7,  19, 8,  20, 30, 42, 31, 43, 32, 44, 9,  21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47};
    for (int i = 0; i < 48; i++) cr_assert(eq(flt, y[i], dcr[i]), "DCR i %d", i);
    d.mode = PLX_DEPTH_SPACE_CRD;
    cr_assert(run1(plxk_run_depth_to_space, PLX_OP_DEPTH_TO_SPACE, &d, &tx, &ty, x, y), "%s", g_err);
    const float crd[] = {0,  6,  1,  7,  2,  8,  12, 18, 13, 19, 14, 20, 3,  9,  4,  10, 5,  11, 15, 21, 16, 22, 17, 23,
                         24, 30, 25, 31, 26, 32, 36, 42, 37, 43, 38, 44, 27, 33, 28, 34, 29, 35, 39, 45, 40, 46, 41, 47};
    for (int i = 0; i < 48; i++) cr_assert(eq(flt, y[i], crd[i]), "CRD i %d", i);
    /* space_to_depth inverts DCR depth_to_space */
    float back[48];
    d.mode = PLX_DEPTH_SPACE_DCR;
    cr_assert(run1(plxk_run_depth_to_space, PLX_OP_DEPTH_TO_SPACE, &d, &tx, &ty, x, y));
    cr_assert(run1(plxk_run_space_to_depth, PLX_OP_SPACE_TO_DEPTH, &d, &ty, &tx, y, back), "%s", g_err);
    for (int i = 0; i < 48; i++) cr_assert(eq(flt, back[i], x[i]));
    /* space_to_depth has no CRD mode; channels not divisible refused */
    d.mode = PLX_DEPTH_SPACE_CRD;
    cr_assert(not(run1(plxk_run_space_to_depth, PLX_OP_SPACE_TO_DEPTH, &d, &ty, &tx, y, back)));
    d.mode = PLX_DEPTH_SPACE_DCR;
    d.block_size = 3;
    cr_assert(not(run1(plxk_run_depth_to_space, PLX_OP_DEPTH_TO_SPACE, &d, &tx, &ty, x, y)));
}

Test(depth_space, random_against_reference) {
    seed(17);
    for (int rep = 0; rep < 100; rep++) {
        plx_dtype t = g_all[rnd() % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        int64_t b = rnd_i(1, 3), N = rnd_i(1, 2), c = rnd_i(1, 3), H = rnd_i(1, 3), W = rnd_i(1, 3);
        plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(b);
        d.mode = rep & 1 ? PLX_DEPTH_SPACE_CRD : PLX_DEPTH_SPACE_DCR;
        plx_tensor_info tx = info(t, SHAPE(N, c * b * b, H, W)), ty = info(t, SHAPE(N, c, H * b, W * b));
        fill_bytes(g_x, numel(&tx) * es);
        cr_assert(run1(plxk_run_depth_to_space, PLX_OP_DEPTH_TO_SPACE, &d, &tx, &ty, g_x, g_y), "%s", g_err);
        /* reference: y[n, ch, h, w] with h = hh*b + i, w = ww*b + j reads
         * x[n, DCR: (i*b + j)*c + ch | CRD: ch*b*b + i*b + j, hh, ww] */
        for (size_t k = 0; k < numel(&ty); k++) {
            int64_t yc[4], xc[4];
            unravel(&ty, k, yc);
            int64_t i = yc[2] % b, j = yc[3] % b;
            xc[0] = yc[0];
            xc[1] = d.mode == PLX_DEPTH_SPACE_DCR ? (i * b + j) * c + yc[1] : yc[1] * b * b + i * b + j;
            xc[2] = yc[2] / b;
            xc[3] = yc[3] / b;
            cr_assert(zero(int, memcmp(g_y + k * es, g_x + ravel(&tx, xc) * es, es)), "rep %d", rep);
        }
        if (d.mode == PLX_DEPTH_SPACE_DCR) {
            d.mode = PLX_DEPTH_SPACE_DCR;
            cr_assert(run1(plxk_run_space_to_depth, PLX_OP_SPACE_TO_DEPTH, &d, &ty, &tx, g_y, g_ref), "%s", g_err);
            cr_assert(zero(int, memcmp(g_ref, g_x, numel(&tx) * es)));
        }
    }
}

/* ---- tile --------------------------------------------------------------- */

static bool tile_run(const int64_t *repeats, const plx_tensor_info *x, const plx_tensor_info *y,
                     const void *px, void *py) {
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    for (uint32_t i = 0; i < x->rank; i++) d.repeats[i] = repeats[i];
    return run1(plxk_run_tile, PLX_OP_TILE, &d, x, y, px, py);
}

Test(tile, hand_repeats_and_zero) {
    /* [[1,2],[3,4]] tiled (2,3) -> [4,6]: each row of X repeated 3 times across,
     * the whole block twice down */
    int32_t x[] = {1, 2, 3, 4}, y[24];
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(2, 2)), ty = info(PLX_DTYPE_INT32, SHAPE(4, 6));
    cr_assert(tile_run((const int64_t[]){2, 3}, &tx, &ty, x, y), "%s", g_err);
    int32_t want[] = {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                      1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4};
    for (int i = 0; i < 24; i++) cr_assert(eq(i32, y[i], want[i]), "i %d", i);
    /* a repeat of 0 empties the output; nothing is written */
    int32_t sentinel = 77;
    plx_tensor_info t0 = info(PLX_DTYPE_INT32, SHAPE(0, 2));
    cr_assert(tile_run((const int64_t[]){0, 1}, &tx, &t0, x, &sentinel), "%s", g_err);
    cr_assert(eq(i32, sentinel, 77));
    /* rank 3 with 1s: [1,2,1] x (3,1,2) -> [3,2,2] */
    uint8_t b[] = {1, 0}, by[12];
    plx_tensor_info tb = info(PLX_DTYPE_BOOL, SHAPE(1, 2, 1)), tby = info(PLX_DTYPE_BOOL, SHAPE(3, 2, 2));
    cr_assert(tile_run((const int64_t[]){3, 1, 2}, &tb, &tby, b, by), "%s", g_err);
    uint8_t bw[] = {1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0};
    cr_assert(zero(int, memcmp(by, bw, 12)));
    /* a scalar is copied as it is */
    float f = 2.5f, fy = 0;
    plx_tensor_info tf = info(PLX_DTYPE_FLOAT32, SCALAR);
    cr_assert(tile_run(NULL, &tf, &tf, &f, &fy), "%s", g_err);
    cr_assert(eq(flt, fy, 2.5f));
}

Test(tile, random_rank3_all_dtypes) {
    seed(40);
    for (int rep = 0; rep < 40; rep++) {
        plx_dtype t = g_all[(size_t)rep % G_ALL_COUNT];
        size_t es = plx_dtype_size(t);
        uint32_t rank = rep % 2 == 0 ? 3 : (uint32_t)rnd_i(1, 4); /* rank 3 half the time */
        int64_t xd[4], yd[4], r[4];
        for (uint32_t d = 0; d < rank; d++) {
            xd[d] = rnd_i(1, 4);
            r[d] = rnd_i(rep % 7 == 0 ? 0 : 1, 3); /* some repeats of 0 */
            yd[d] = xd[d] * r[d];
        }
        plx_tensor_info tx = info(t, xd, rank), ty = info(t, yd, rank);
        size_t nx = numel(&tx), ny = numel(&ty);
        fill_bytes(g_x, nx * es);
        memset(g_y, 0xab, ny * es + 1);
        cr_assert(tile_run(r, &tx, &ty, g_x, g_y), "%s", g_err);
        /* reference: output coordinate modulo X's dims */
        for (size_t i = 0; i < ny; i++) {
            int64_t c[PLX_MAX_RANK];
            unravel(&ty, i, c);
            for (uint32_t d = 0; d < rank; d++) c[d] %= xd[d];
            size_t src = ravel(&tx, c);
            cr_assert(zero(int, memcmp(g_y + i * es, g_x + src * es, es)), "rep %d elem %zu", rep, i);
        }
        cr_assert(eq(u8, g_y[ny * es], 0xab), "wrote past the output");
    }
}

Test(tile, refusals) {
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    d.repeats[0] = 2;
    plx_tensor_info x = info(PLX_DTYPE_FLOAT32, SHAPE(3, 2)), y = info(PLX_DTYPE_FLOAT32, SHAPE(6, 2));
    plx_layer_view l = layer_of(PLX_OP_TILE, &d, &x, 1, &y, 1);
    cr_assert(zero(ptr, (void *)plxk_check_tile(&l, g_err, sizeof g_err)), "%s", g_err);
    y.dims[0] = 5; /* not X's dim times the repeat */
    const char *why = plxk_check_tile(&l, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "tile"))), "%s", why);
    y.dims[0] = 6;
    d.repeats[1] = -1;
    cr_assert(not(zero(ptr, (void *)plxk_check_tile(&l, g_err, sizeof g_err))));
    d.repeats[1] = 1;
    y.dtype = PLX_DTYPE_INT32; /* dtype change */
    cr_assert(not(zero(ptr, (void *)plxk_check_tile(&l, g_err, sizeof g_err))));
    y.dtype = PLX_DTYPE_FLOAT32;
    y.rank = 3; /* rank change */
    cr_assert(not(zero(ptr, (void *)plxk_check_tile(&l, g_err, sizeof g_err))));
    /* run refuses too, naming the layer */
    float bx[6] = {0}, by[12];
    const void *ins[] = {bx};
    void *outs[] = {by};
    cr_assert(not(run_layer(plxk_run_tile, &l, ins, outs)));
    cr_assert(not(zero(ptr, strstr(g_err, "'D1'"))), "%s", g_err);
}

/* ---- reverse_sequence ------------------------------------------------- */

static bool rs_run(int32_t batch_axis, const plx_tensor_info *x, const plx_tensor_info *len,
                   const void *px, const void *plen, void *py) {
    plx_reverse_sequence_desc d = PLX_REVERSE_SEQUENCE_DESC_INIT;
    d.batch_axis = batch_axis;
    d.time_axis = 1 - batch_axis;
    plx_tensor_info ins[2] = {*x, *len};
    plx_layer_view l = layer_of(PLX_OP_REVERSE_SEQUENCE, &d, ins, 2, x, 1);
    return run_layer(plxk_run_reverse_sequence, &l, (const void *const[]){px, plen},
                     (void *const[]){py});
}

/* X [4, 3] = 0..11 with batch_axis 0: row b reversed over its first
 * lens[b] elements: lens {0, 1, 2, 3} leave rows 0 and 1, swap the first
 * two of row 2 (7 6 8) and reverse row 3 (11 10 9). With batch_axis 1 and
 * X [3, 2] = 0..5 (columns are batches), lens {3, 2}: column 0 (0 2 4)
 * becomes 4 2 0, column 1 (1 3 5) 3 1 5. */
Test(reverse_sequence, hand_both_layouts) {
    int32_t x[12], y[12];
    for (int i = 0; i < 12; i++) {
        x[i] = i;
    }
    plx_tensor_info tx = info(PLX_DTYPE_INT32, SHAPE(4, 3));
    plx_tensor_info tl = info(PLX_DTYPE_INT64, SHAPE(4));
    cr_assert(rs_run(0, &tx, &tl, x, (const int64_t[]){0, 1, 2, 3}, y), "%s", g_err);
    const int32_t want[12] = {0, 1, 2, 3, 4, 5, 7, 6, 8, 11, 10, 9};
    for (int i = 0; i < 12; i++) {
        cr_assert(eq(i32, y[i], want[i]), "element %d", i);
    }
    plx_tensor_info t2 = info(PLX_DTYPE_INT32, SHAPE(3, 2));
    plx_tensor_info tl2 = info(PLX_DTYPE_INT32, SHAPE(2));
    cr_assert(rs_run(1, &t2, &tl2, x, (const int32_t[]){3, 2}, y), "%s", g_err);
    const int32_t want2[6] = {4, 3, 2, 1, 0, 5};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(i32, y[i], want2[i]), "element %d", i);
    }
    /* a length past T fails the run, naming the layer and the element */
    cr_assert(not(rs_run(1, &t2, &tl2, x, (const int32_t[]){3, 4}, y)));
    cr_assert(not(zero(ptr, strstr(g_err, "sequence_lens[1] = 4 is outside [0, 3]"))), "%s",
              g_err);
}

/* Random float X [B, T, inner] or [T, B, inner] against a loop over the
 * reversed index. */
Test(reverse_sequence, random_against_loop) {
    seed(41);
    static float x[4096], y[4096];
    for (int t = 0; t < 50; t++) {
        const int64_t b = rnd_i(1, 5), tm = rnd_i(1, 6), in = rnd_i(1, 4);
        const int32_t ba = (int32_t)rnd_i(0, 1);
        int64_t lens[5];
        for (int64_t i = 0; i < b; i++) {
            lens[i] = rnd_i(0, tm);
        }
        plx_tensor_info tx = ba == 0 ? info(PLX_DTYPE_FLOAT32, SHAPE(b, tm, in))
                                     : info(PLX_DTYPE_FLOAT32, SHAPE(tm, b, in));
        plx_tensor_info tl = info(PLX_DTYPE_INT64, SHAPE(b));
        for (int64_t i = 0; i < b * tm * in; i++) {
            x[i] = (float)rnd_i(-1000, 1000);
        }
        cr_assert(rs_run(ba, &tx, &tl, x, lens, y), "%s", g_err);
        for (int64_t bb = 0; bb < b; bb++) {
            for (int64_t tt = 0; tt < tm; tt++) {
                const int64_t src = tt < lens[bb] ? lens[bb] - 1 - tt : tt;
                for (int64_t i = 0; i < in; i++) {
                    const int64_t yo = (ba == 0 ? bb * tm + tt : tt * b + bb) * in + i;
                    const int64_t xo = (ba == 0 ? bb * tm + src : src * b + bb) * in + i;
                    cr_assert(eq(flt, y[yo], x[xo]), "case %d (%lld, %lld, %lld)", t,
                              (long long)bb, (long long)tt, (long long)i);
                }
            }
        }
    }
}
