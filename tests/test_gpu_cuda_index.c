/* gpu_cuda's index arithmetic on the host: for small layers of each kind
 * the geometry gpu_cuda plans (gpu_cuda/cuda_geometry.c) and the
 * per-element functions its kernels call (gpu_cuda/cuda_index.h) run over
 * every output element here, and what they say each element reads must be
 * what cpu_ref computed for the same one-layer network. No CUDA device is
 * needed: this is the part of the kernels that the machines without one
 * can check. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cuda_geometry.h"
#include "test_util.h"

#define F32 PLX_DTYPE_FLOAT32
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_SLOTS 8

/* One layer run on cpu_ref, with its view as a backend sees it. */
typedef struct layer {
    plx_op op;
    const void *desc;
    tu_input ins[MAX_SLOTS];
    uint32_t n_in, n_out;
    plx_tensor_info in_info[MAX_SLOTS], out_info[MAX_SLOTS];
    void *outs[MAX_SLOTS];
    plx_layer_view view;
} layer;

static int64_t numel(const int64_t *dims, uint32_t rank) {
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        n *= dims[i];
    }
    return n;
}

/* Distinct values, so that reading the wrong element shows. */
static float *ramp(int64_t n, float start) {
    float *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    cr_assert(not(zero(ptr, x)));
    for (int64_t i = 0; i < n; i++) {
        x[i] = start + 0.25f * (float)i - 0.03125f * (float)(i % 7);
    }
    return x;
}

static void run(layer *l) {
    const char *paths[] = {CPU_REF_DIR};
    plx_runtime *rt = tu_runtime(paths, 1);
    tu_run_layer(rt, "cpu_ref", l->op, l->desc, l->ins, l->n_in, l->n_out, l->out_info, l->outs);
    plx_runtime_destroy(&rt);
    for (uint32_t i = 0; i < l->n_in; i++) {
        memset(&l->in_info[i], 0, sizeof l->in_info[i]);
        l->in_info[i].dtype = l->ins[i].dtype;
        l->in_info[i].rank = l->ins[i].rank;
        for (uint32_t k = 0; k < l->ins[i].rank; k++) {
            l->in_info[i].dims[k] = l->ins[i].dims[k];
        }
    }
    memset(&l->view, 0, sizeof l->view);
    l->view.struct_size = sizeof l->view;
    l->view.name = "op";
    l->view.op = l->op;
    l->view.desc = l->desc;
    l->view.inputs = l->in_info;
    l->view.input_count = l->n_in;
    l->view.outputs = l->out_info;
    l->view.output_count = l->n_out;
}

static void done(layer *l) {
    for (uint32_t j = 0; j < l->n_out; j++) {
        free(l->outs[j]);
    }
}

static int64_t out_count(const layer *l, uint32_t j) {
    return numel(l->out_info[j].dims, l->out_info[j].rank);
}

/* Equal, NaN equal to NaN; `tol` relative (absolute below 1). */
static void expect_near(float got, float want, float tol, const char *what, int64_t i) {
    if (isnan(want)) {
        cr_assert(isnan(got), "%s element %lld: %g, want NaN", what, (long long)i, (double)got);
        return;
    }
    float scale = fabsf(want) > 1.0f ? fabsf(want) : 1.0f;
    cr_assert(le(flt, fabsf(got - want), tol * scale), "%s element %lld: %.9g, want %.9g", what,
              (long long)i, (double)got, (double)want);
}

/* ---- strided copies ------------------------------------------------------ */

/* The tiled copy of a view as its kernel's threads run it: every tile's
 * loads into the shared tile, then its stores from it. */
static int tiled_views_seen;

static void check_tiles(const layer *l, const ck_view *v) {
    tiled_views_seen++;
    const float *src = l->ins[v->src_slot].data;
    const float *dst = l->outs[v->dst_slot];
    int64_t n = out_count(l, v->dst_slot);
    unsigned char *seen = calloc((size_t)n + 1, 1);
    float tile[CK_TILE][CK_TILE + 1];
    for (int64_t t = 0; t < ck_tile_count(v); t++) {
        for (int r = 0; r < CK_TILE; r++) {
            for (int lx = 0; lx < CK_TILE; lx++) {
                int64_t s;
                tile[r][lx] = ck_tile_load(v, t, lx, r, &s) ? src[s] : NAN;
            }
        }
        for (int r = 0; r < CK_TILE; r++) {
            for (int lx = 0; lx < CK_TILE; lx++) {
                int64_t d;
                if (!ck_tile_store(v, t, lx, r, &d)) {
                    continue;
                }
                cr_assert(ge(i64, d, 0));
                cr_assert(lt(i64, d, n));
                cr_assert(eq(u8, seen[d], 0), "tiled: element %lld stored twice", (long long)d);
                seen[d] = 1;
                cr_assert(eq(flt, tile[lx][r], dst[d]), "tiled: tile %lld thread (%d, %d) "
                          "stores %g to element %lld, cpu_ref has %g", (long long)t, lx, r,
                          (double)tile[lx][r], (long long)d, (double)dst[d]);
            }
        }
    }
    for (int64_t d = 0; d < v->count; d++) {
        cr_assert(eq(u8, seen[d], 1), "tiled: element %lld never stored", (long long)d);
    }
    free(seen);
}

/* The layer's views, run over every element: each output element written
 * once, with the input element cpu_ref put there. */
static void check_views(layer *l) {
    char buf[256];
    uint32_t nv = ck_view_count(&l->view);
    ck_view views[MAX_SLOTS];
    cr_assert(le(u32, nv, MAX_SLOTS));
    const char *why = ck_geom_views(&l->view, views, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "%s refused: %s", plx_op_name(l->op), why);
    unsigned char *seen[MAX_SLOTS];
    for (uint32_t j = 0; j < l->n_out; j++) {
        seen[j] = calloc((size_t)out_count(l, j) + 1, 1);
    }
    for (uint32_t v = 0; v < nv; v++) {
        const ck_view *cv = &views[v];
        const float *src = l->ins[cv->src_slot].data;
        const float *dst = l->outs[cv->dst_slot];
        int64_t in_n = numel(l->ins[cv->src_slot].dims, l->ins[cv->src_slot].rank);
        for (int64_t i = 0; i < cv->count; i++) {
            int64_t s, d;
            ck_view_offsets(cv, i, &s, &d);
            cr_assert(ge(i64, s, 0));
            cr_assert(lt(i64, s, in_n), "view %u element %lld reads %lld of %lld", v,
                      (long long)i, (long long)s, (long long)in_n);
            cr_assert(ge(i64, d, 0));
            cr_assert(lt(i64, d, out_count(l, cv->dst_slot)));
            cr_assert(eq(u8, seen[cv->dst_slot][d], 0), "output element %lld written twice",
                      (long long)d);
            seen[cv->dst_slot][d] = 1;
            cr_assert(eq(flt, dst[d], src[s]), "%s view %u: output %u element %lld is %g, the "
                      "view reads input %u element %lld (%g)", plx_op_name(l->op), v,
                      cv->dst_slot, (long long)d, (double)dst[d], cv->src_slot, (long long)s,
                      (double)src[s]);
        }
    }
    for (uint32_t j = 0; j < l->n_out; j++) {
        for (int64_t d = 0; d < out_count(l, j); d++) {
            cr_assert(eq(u8, seen[j][d], 1), "output %u element %lld is never written", j,
                      (long long)d);
        }
        free(seen[j]);
    }
    for (uint32_t v = 0; v < nv; v++) {
        if (ck_view_tiled(&views[v])) {
            check_tiles(l, &views[v]);
        }
    }
}

static void one_view(plx_op op, const void *desc, const int64_t *dims, uint32_t rank) {
    float *x = ramp(numel(dims, rank), -3.0f);
    layer l = {.op = op, .desc = desc, .n_in = 1, .n_out = 1};
    l.ins[0] = (tu_input){F32, rank, dims, x};
    run(&l);
    check_views(&l);
    done(&l);
    free(x);
}

Test(gpu_cuda_index, transpose) {
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    d.perm[0] = 2;
    d.perm[1] = 0;
    d.perm[2] = 1;
    d.perm_count = 3;
    one_view(PLX_OP_TRANSPOSE, &d, (const int64_t[]){2, 3, 4}, 3);
    plx_transpose_desc rev = PLX_TRANSPOSE_DESC_INIT; /* the reverse */
    one_view(PLX_OP_TRANSPOSE, &rev, (const int64_t[]){2, 1, 3, 2}, 4);
    /* two pairs of dims swapped: each pair is copied as one dim */
    plx_transpose_desc pairs = PLX_TRANSPOSE_DESC_INIT;
    pairs.perm_count = 4;
    pairs.perm[0] = 2;
    pairs.perm[1] = 3;
    pairs.perm[2] = 0;
    pairs.perm[3] = 1;
    one_view(PLX_OP_TRANSPOSE, &pairs, (const int64_t[]){2, 3, 4, 5}, 4);
}

/* The last two dims swapped: the tiled kernel, partial tiles included. */
Test(gpu_cuda_index, transpose_in_tiles) {
    tiled_views_seen = 0;
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    d.perm_count = 3;
    d.perm[0] = 0;
    d.perm[1] = 2;
    d.perm[2] = 1;
    one_view(PLX_OP_TRANSPOSE, &d, (const int64_t[]){3, 40, 36}, 3);
    plx_transpose_desc rev = PLX_TRANSPOSE_DESC_INIT;
    one_view(PLX_OP_TRANSPOSE, &rev, (const int64_t[]){64, 8}, 2);
    plx_transpose_desc e = PLX_TRANSPOSE_DESC_INIT; /* [2, 3, 9, 33] -> [2, 3, 33, 9] */
    e.perm_count = 4;
    e.perm[0] = 0;
    e.perm[1] = 1;
    e.perm[2] = 3;
    e.perm[3] = 2;
    one_view(PLX_OP_TRANSPOSE, &e, (const int64_t[]){2, 3, 9, 33}, 4);
    cr_assert(eq(int, tiled_views_seen, 3));
}

Test(gpu_cuda_index, slice_with_negative_steps) {
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.count = 2;
    d.axes[0] = 0;
    d.starts[0] = -1;
    d.ends[0] = INT64_MIN;
    d.steps[0] = -2;
    d.axes[1] = -1;
    d.starts[1] = 1;
    d.ends[1] = 100;
    d.steps[1] = 2;
    one_view(PLX_OP_SLICE, &d, (const int64_t[]){5, 6}, 2);
    plx_slice_desc e = PLX_SLICE_DESC_INIT;
    e.count = 1;
    e.axes[0] = 2;
    e.starts[0] = 4;
    e.ends[0] = 0;
    e.steps[0] = -1;
    one_view(PLX_OP_SLICE, &e, (const int64_t[]){3, 4, 5}, 3);
}

Test(gpu_cuda_index, expand_and_tile) {
    plx_shape_desc s = PLX_SHAPE_DESC_INIT;
    s.rank = 3;
    s.dims[0] = 2;
    s.dims[1] = 3;
    s.dims[2] = 4;
    one_view(PLX_OP_EXPAND, &s, (const int64_t[]){3, 1}, 2);
    plx_tile_desc t = PLX_TILE_DESC_INIT;
    t.repeats[0] = 2;
    t.repeats[1] = 3;
    one_view(PLX_OP_TILE, &t, (const int64_t[]){2, 3}, 2);
}

Test(gpu_cuda_index, depth_to_space_and_space_to_depth) {
    plx_depth_space_desc dcr = PLX_DEPTH_SPACE_DESC_INIT(2);
    one_view(PLX_OP_DEPTH_TO_SPACE, &dcr, (const int64_t[]){1, 8, 2, 3}, 4);
    plx_depth_space_desc crd = PLX_DEPTH_SPACE_DESC_INIT(2);
    crd.mode = PLX_DEPTH_SPACE_CRD;
    one_view(PLX_OP_DEPTH_TO_SPACE, &crd, (const int64_t[]){2, 8, 2, 3}, 4);
    plx_depth_space_desc s2d = PLX_DEPTH_SPACE_DESC_INIT(2);
    one_view(PLX_OP_SPACE_TO_DEPTH, &s2d, (const int64_t[]){1, 2, 4, 6}, 4);
}

Test(gpu_cuda_index, concat) {
    const int64_t d0[] = {2, 1, 3}, d1[] = {2, 2, 3}, d2[] = {2, 3, 3};
    float *x0 = ramp(6, 0.0f), *x1 = ramp(12, 10.0f), *x2 = ramp(18, 20.0f);
    plx_axis_desc axis = PLX_AXIS_DESC_INIT(-2);
    layer l = {.op = PLX_OP_CONCAT, .desc = &axis, .n_in = 3, .n_out = 1};
    l.ins[0] = (tu_input){F32, 3, d0, x0};
    l.ins[1] = (tu_input){F32, 3, d1, x1};
    l.ins[2] = (tu_input){F32, 3, d2, x2};
    run(&l);
    check_views(&l);
    done(&l);
    free(x0);
    free(x1);
    free(x2);
}

Test(gpu_cuda_index, split) {
    const int64_t sizes[] = {1, 2, 3};
    plx_split_desc d = PLX_SPLIT_DESC_INIT(1);
    d.sizes = sizes;
    float *x = ramp(24, -1.0f);
    layer l = {.op = PLX_OP_SPLIT, .desc = &d, .n_in = 1, .n_out = 3};
    l.ins[0] = (tu_input){F32, 2, (const int64_t[]){4, 6}, x};
    run(&l);
    check_views(&l);
    done(&l);
    /* equal parts, the last one smaller */
    plx_split_desc e = PLX_SPLIT_DESC_INIT(0);
    layer m = {.op = PLX_OP_SPLIT, .desc = &e, .n_in = 1, .n_out = 3};
    m.ins[0] = (tu_input){F32, 2, (const int64_t[]){7, 2}, x};
    run(&m);
    check_views(&m);
    done(&m);
    free(x);
}

/* ---- pad, gather, where --------------------------------------------------- */

static void check_pad(plx_pad_mode mode, const int64_t *pb, const int64_t *pe, double value) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(mode);
    d.pads_begin[0] = pb[0];
    d.pads_begin[1] = pb[1];
    d.pads_end[0] = pe[0];
    d.pads_end[1] = pe[1];
    d.value = value;
    float *x = ramp(12, 1.0f);
    layer l = {.op = PLX_OP_PAD, .desc = &d, .n_in = 1, .n_out = 1};
    l.ins[0] = (tu_input){F32, 2, (const int64_t[]){3, 4}, x};
    run(&l);
    ck_pad g;
    char buf[256];
    const char *why = ck_geom_pad(&l.view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "pad refused: %s", why);
    cr_assert(eq(i64, g.count, out_count(&l, 0)));
    float v;
    memcpy(&v, g.value, sizeof v);
    const float *y = l.outs[0];
    for (int64_t i = 0; i < g.count; i++) {
        int64_t s = ck_pad_source(&g, i);
        cr_assert(lt(i64, s, 12));
        cr_assert(eq(flt, y[i], s < 0 ? v : x[s]), "pad mode %d element %lld reads %lld",
                  (int)mode, (long long)i, (long long)s);
    }
    done(&l);
    free(x);
}

Test(gpu_cuda_index, pad_modes) {
    check_pad(PLX_PAD_CONSTANT, (const int64_t[]){-1, 2}, (const int64_t[]){1, -2}, 7.5);
    check_pad(PLX_PAD_REFLECT, (const int64_t[]){2, 3}, (const int64_t[]){2, 1}, 0.0);
    check_pad(PLX_PAD_EDGE, (const int64_t[]){4, 1}, (const int64_t[]){0, 5}, 0.0);
    check_pad(PLX_PAD_WRAP, (const int64_t[]){1, 5}, (const int64_t[]){2, 3}, 0.0);
}

static void check_gather(int32_t axis, plx_dtype index_dtype, const void *indices,
                         const int64_t *idims, uint32_t irank) {
    const int64_t dims[] = {3, 4, 2};
    float *x = ramp(24, 0.5f);
    plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
    layer l = {.op = PLX_OP_GATHER, .desc = &d, .n_in = 2, .n_out = 1};
    l.ins[0] = (tu_input){F32, 3, dims, x};
    l.ins[1] = (tu_input){index_dtype, irank, idims, indices};
    run(&l);
    ck_gather g;
    char buf[256];
    const char *why = ck_geom_gather(&l.view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "gather refused: %s", why);
    cr_assert(eq(i64, g.count, out_count(&l, 0)));
    const float *y = l.outs[0];
    for (int64_t i = 0; i < g.count; i++) {
        int64_t s = ck_gather_source(&g, i, ck_gather_index(&g, indices, ck_gather_index_at(&g, i)));
        cr_assert(ge(i64, s, 0));
        cr_assert(eq(flt, y[i], x[s]), "gather element %lld reads %lld", (long long)i,
                  (long long)s);
    }
    /* out of range, either way */
    cr_assert(eq(i64, ck_gather_source(&g, 0, g.axis_dim), -1));
    cr_assert(eq(i64, ck_gather_source(&g, 0, -g.axis_dim - 1), -1));
    done(&l);
    free(x);
}

Test(gpu_cuda_index, gather_negative_indices) {
    const int64_t i64[] = {-1, 0, 3, -4};
    check_gather(1, PLX_DTYPE_INT64, i64, (const int64_t[]){2, 2}, 2);
    const int32_t i32[] = {2, -3, 1};
    check_gather(0, PLX_DTYPE_INT32, i32, (const int64_t[]){3}, 1);
    const int64_t last[] = {1, -2, 0};
    check_gather(-1, PLX_DTYPE_INT64, last, (const int64_t[]){3}, 1);
    const int8_t i8[] = {-1, 3, -4, 0};
    check_gather(1, PLX_DTYPE_INT8, i8, (const int64_t[]){4}, 1);
    const uint8_t u8[] = {2, 0, 1, 2};
    check_gather(0, PLX_DTYPE_UINT8, u8, (const int64_t[]){2, 2}, 2);
}

Test(gpu_cuda_index, where_broadcasts) {
    const int64_t cd[] = {2, 1, 4}, xd[] = {3, 1}, yd[] = {2, 3, 4};
    uint8_t c[8] = {1, 0, 0, 1, 1, 1, 0, 0};
    float *x = ramp(3, 100.0f), *y = ramp(24, -50.0f);
    layer l = {.op = PLX_OP_WHERE, .n_in = 3, .n_out = 1};
    l.ins[0] = (tu_input){PLX_DTYPE_BOOL, 3, cd, c};
    l.ins[1] = (tu_input){F32, 2, xd, x};
    l.ins[2] = (tu_input){F32, 3, yd, y};
    run(&l);
    ck_where g;
    char buf[256];
    const char *why = ck_geom_where(&l.view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "where refused: %s", why);
    const float *z = l.outs[0];
    cr_assert(eq(i64, g.count, 24));
    for (int64_t i = 0; i < g.count; i++) {
        int64_t oc, ox, oy;
        ck_where_offsets(&g, i, &oc, &ox, &oy);
        cr_assert(eq(flt, z[i], c[oc] ? x[ox] : y[oy]), "where element %lld", (long long)i);
    }
    done(&l);
    free(x);
    free(y);
}

/* ---- pool ----------------------------------------------------------------- */

/* The pool (or, with `global`, a global_pool) over x of dims: its
 * geometry and ck_pool_value against cpu_ref. */
static void check_pool_of(plx_op op, const void *d, const int64_t *dims, uint32_t rank,
                          bool indices, bool nan) {
    float *x = ramp(numel(dims, rank), -4.0f);
    if (nan) { /* a NaN and ties, to test which maximum a window keeps */
        x[3] = NAN;
        x[7] = x[8];
    }
    layer l = {.op = op, .desc = d, .n_in = 1, .n_out = indices ? 2u : 1u};
    l.ins[0] = (tu_input){F32, rank, dims, x};
    run(&l);
    ck_pool g;
    char buf[256];
    const char *why = op == PLX_OP_POOL ? ck_geom_pool(&l.view, &g, buf, sizeof buf)
                                        : ck_geom_global_pool(&l.view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "pool refused: %s", why);
    cr_assert(eq(i64, g.count, out_count(&l, 0)));
    const float *y = l.outs[0];
    for (int64_t i = 0; i < g.count; i++) {
        int64_t at = 0;
        float v = ck_pool_value(&g, x, i, &at);
        expect_near(v, y[i], 1e-5f, plx_op_name(op), i);
        if (indices) {
            cr_assert(eq(i64, at, ((const int64_t *)l.outs[1])[i]), "Indices element %lld",
                      (long long)i);
        }
    }
    done(&l);
    free(x);
}

static void check_pool(const plx_pool_desc *d, const int64_t *dims, uint32_t rank,
                       bool indices) {
    check_pool_of(PLX_OP_POOL, d, dims, rank, indices, d->kind != PLX_POOL_LP);
}

Test(gpu_cuda_index, pool_windows) {
    /* 2-D max with Indices: dilations, asymmetric pads, ceil mode */
    plx_pool_desc m = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    m.kernel[0] = 3;
    m.kernel[1] = 2;
    m.strides[0] = 2;
    m.strides[1] = 2;
    m.dilations[1] = 2;
    m.pads_begin[0] = 1;
    m.pads_end[1] = 1;
    m.ceil_mode = true;
    check_pool(&m, (const int64_t[]){1, 2, 5, 6}, 4, true);
    m.indices_column_major = true;
    check_pool(&m, (const int64_t[]){2, 1, 5, 6}, 4, true);
    /* 2-D average counting the padding, in ceil mode */
    plx_pool_desc a = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    a.kernel[0] = 3;
    a.kernel[1] = 3;
    a.strides[0] = 2;
    a.strides[1] = 2;
    a.pads_begin[0] = 1;
    a.pads_begin[1] = 1;
    a.pads_end[0] = 1;
    a.pads_end[1] = 1;
    a.ceil_mode = true;
    a.count_include_pad = true;
    check_pool(&a, (const int64_t[]){2, 1, 5, 5}, 4, false);
    a.count_include_pad = false;
    check_pool(&a, (const int64_t[]){2, 1, 6, 5}, 4, false);
    /* 3-D average */
    plx_pool_desc v = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    v.kernel[0] = 2;
    v.kernel[1] = 2;
    v.kernel[2] = 3;
    v.strides[1] = 2;
    v.strides[2] = 2;
    v.pads_begin[1] = 1;
    v.pads_begin[2] = 1;
    v.pads_end[0] = 1;
    v.pads_end[2] = 1;
    check_pool(&v, (const int64_t[]){1, 2, 3, 4, 5}, 5, false);
    /* 1-D max, dilated */
    plx_pool_desc o = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    o.kernel[0] = 3;
    o.strides[0] = 2;
    o.dilations[0] = 2;
    o.pads_begin[0] = 2;
    o.pads_end[0] = 1;
    check_pool(&o, (const int64_t[]){2, 3, 9}, 3, true);
    /* lp, p 2 and 3, padded */
    plx_pool_desc lp = PLX_POOL_DESC_INIT(PLX_POOL_LP);
    lp.kernel[0] = 2;
    lp.kernel[1] = 3;
    lp.strides[1] = 2;
    lp.pads_begin[1] = 1;
    lp.pads_end[0] = 1;
    check_pool(&lp, (const int64_t[]){1, 2, 4, 5}, 4, false);
    lp.p = 3;
    check_pool(&lp, (const int64_t[]){1, 2, 4, 5}, 4, false);
}

/* global lp of a p other than 1 and 2: one window over the whole input. */
Test(gpu_cuda_index, global_lp_pool) {
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    d.p = 3;
    check_pool_of(PLX_OP_GLOBAL_POOL, &d, (const int64_t[]){2, 3, 4, 5}, 4, false, false);
    check_pool_of(PLX_OP_GLOBAL_POOL, &d, (const int64_t[]){2, 3, 7}, 3, false, false);
    check_pool_of(PLX_OP_GLOBAL_POOL, &d, (const int64_t[]){1, 2, 2, 3, 4}, 5, false, false);
}

/* ---- normalisation -------------------------------------------------------- */

/* What the normalisation kernel computes, from the geometry and the
 * parameter index of cuda_index.h, in double. */
static void check_norm(layer *l, float tol) {
    ck_norm g;
    char buf[256];
    const char *why = ck_geom_norm(&l->view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "%s refused: %s", plx_op_name(l->op), why);
    cr_assert(eq(i64, g.rows * g.n, out_count(l, 0)));
    const float *x = l->ins[0].data, *scale = l->ins[1].data;
    const float *bias = g.has_bias ? l->ins[2].data : NULL;
    const float *y = l->outs[0];
    for (int64_t r = 0; r < g.rows; r++) {
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < g.n; j++) {
            mean += x[r * g.n + j];
        }
        mean /= (double)g.n;
        for (int64_t j = 0; j < g.n; j++) {
            var += (x[r * g.n + j] - mean) * (x[r * g.n + j] - mean);
        }
        var /= (double)g.n;
        for (int64_t j = 0; j < g.n; j++) {
            double v = (x[r * g.n + j] - mean) / sqrt(var + g.epsilon) *
                       scale[ck_norm_param(&g, r, j, g.scale_strides)];
            if (bias) {
                v += bias[ck_norm_param(&g, r, j, g.bias_strides)];
            }
            expect_near(y[r * g.n + j], (float)v, tol, plx_op_name(l->op), r * g.n + j);
        }
    }
}

static void check_layer_norm(int32_t axis, const int64_t *sd, uint32_t sr, const int64_t *bd,
                             uint32_t br) {
    const int64_t dims[] = {2, 3, 4};
    float *x = ramp(24, -2.0f), *s = ramp(numel(sd, sr), 0.5f);
    float *b = bd ? ramp(numel(bd, br), -0.75f) : NULL;
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.axis = axis;
    layer l = {.op = PLX_OP_LAYER_NORM, .desc = &d, .n_in = bd ? 3u : 2u, .n_out = 1};
    l.ins[0] = (tu_input){F32, 3, dims, x};
    l.ins[1] = (tu_input){F32, sr, sd, s};
    if (bd) {
        l.ins[2] = (tu_input){F32, br, bd, b};
    }
    run(&l);
    check_norm(&l, 1e-5f);
    done(&l);
    free(x);
    free(s);
    free(b);
}

Test(gpu_cuda_index, layer_norm_rows_and_parameters) {
    check_layer_norm(-1, (const int64_t[]){4}, 1, (const int64_t[]){4}, 1);
    check_layer_norm(1, (const int64_t[]){3, 4}, 2, (const int64_t[]){3, 4}, 2);
    check_layer_norm(1, (const int64_t[]){1}, 1, NULL, 0);
    /* broadcast within the row: a bias over the last dim, a scale over the first */
    check_layer_norm(-2, (const int64_t[]){3, 4}, 2, (const int64_t[]){4}, 1);
    check_layer_norm(1, (const int64_t[]){3, 1}, 2, (const int64_t[]){1, 4}, 2);
    check_layer_norm(0, (const int64_t[]){2, 3, 4}, 3, (const int64_t[]){1}, 1);
}

Test(gpu_cuda_index, instance_norm_per_channel) {
    const int64_t dims[] = {2, 3, 5}, cd[] = {3};
    float *x = ramp(30, -1.0f), *s = ramp(3, 0.5f), *b = ramp(3, 2.0f);
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    layer l = {.op = PLX_OP_INSTANCE_NORM, .desc = &d, .n_in = 3, .n_out = 1};
    l.ins[0] = (tu_input){F32, 3, dims, x};
    l.ins[1] = (tu_input){F32, 1, cd, s};
    l.ins[2] = (tu_input){F32, 1, cd, b};
    run(&l);
    check_norm(&l, 1e-4f);
    done(&l);
    free(x);
    free(s);
    free(b);
}

Test(gpu_cuda_index, batch_norm_channels) {
    const int64_t dims[] = {2, 3, 2, 2}, cd[] = {3};
    float *x = ramp(24, -1.0f), *s = ramp(3, 0.5f), *b = ramp(3, 2.0f), *m = ramp(3, -0.5f);
    float var[3] = {0.5f, 2.0f, 1.25f};
    plx_batch_norm_desc d = PLX_BATCH_NORM_DESC_INIT;
    layer l = {.op = PLX_OP_BATCH_NORM, .desc = &d, .n_in = 5, .n_out = 1};
    l.ins[0] = (tu_input){F32, 4, dims, x};
    l.ins[1] = (tu_input){F32, 1, cd, s};
    l.ins[2] = (tu_input){F32, 1, cd, b};
    l.ins[3] = (tu_input){F32, 1, cd, m};
    l.ins[4] = (tu_input){F32, 1, cd, var};
    run(&l);
    ck_batch_norm g;
    char buf[256];
    const char *why = ck_geom_batch_norm(&l.view, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "batch_norm refused: %s", why);
    const float *y = l.outs[0];
    for (int64_t i = 0; i < g.count; i++) {
        int64_t c = ck_batch_norm_channel(&g, i);
        float want = (x[i] - m[c]) / sqrtf(var[c] + g.epsilon) * s[c] + b[c];
        expect_near(y[i], want, 1e-5f, "batch_norm", i);
    }
    done(&l);
    free(x);
    free(s);
    free(b);
    free(m);
}

/* ---- resize --------------------------------------------------------------- */

static void check_resize(plx_resize_mode mode, plx_resize_coord coord, plx_resize_nearest nearest,
                         const int64_t *in, const int64_t *out, float sh, float sw, bool exclude,
                         const float *roi) {
    const int64_t dims[] = {1, 2, in[0], in[1]};
    float *x = ramp(numel(dims, 4), -2.0f);
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(mode);
    d.coord = coord;
    d.nearest = nearest;
    d.scales[0] = sh;
    d.scales[1] = sw;
    d.sizes[0] = out[0];
    d.sizes[1] = out[1];
    d.exclude_outside = exclude;
    if (roi) { /* tf_crop_and_resize's crop of H and W, partly outside the input */
        d.roi_start[0] = roi[0];
        d.roi_start[1] = roi[1];
        d.roi_end[0] = roi[2];
        d.roi_end[1] = roi[3];
        d.extrapolation_value = 9.5f;
    }
    layer l = {.op = PLX_OP_RESIZE, .desc = &d, .n_in = 1, .n_out = 1};
    l.ins[0] = (tu_input){F32, 4, dims, x};
    run(&l);
    ck_resize g;
    ck_resize_tap taps[64];
    char buf[256];
    cr_assert(le(i64, out[0] + out[1], (int64_t)COUNT(taps)));
    const char *why = ck_geom_resize(&l.view, &g, taps, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "resize refused: %s", why);
    cr_assert(eq(i64, g.count, out_count(&l, 0)));
    const float *y = l.outs[0];
    for (int64_t i = 0; i < g.count; i++) {
        float v = ck_resize_value(&g, taps, taps + g.out_h, x, i);
        char what[64];
        snprintf(what, sizeof what, "resize %s %s", plx_resize_mode_name(mode),
                 plx_resize_coord_name(coord));
        expect_near(v, y[i], 1e-5f, what, i);
    }
    done(&l);
    free(x);
}

Test(gpu_cuda_index, resize_coordinates) {
    const int64_t in[] = {3, 4}, up[] = {7, 9}, down[] = {2, 3};
    const float roi[4] = {-0.2f, 0.1f, 0.9f, 1.3f};
    for (int c = PLX_RESIZE_COORD_HALF_PIXEL; c <= PLX_RESIZE_COORD_TF_CROP_AND_RESIZE; c++) {
        const float *r = c == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE ? roi : NULL;
        for (int n = PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR; n <= PLX_RESIZE_NEAREST_CEIL; n++) {
            check_resize(PLX_RESIZE_NEAREST, (plx_resize_coord)c, (plx_resize_nearest)n, in, up,
                         0.0f, 0.0f, false, r);
            check_resize(PLX_RESIZE_NEAREST, (plx_resize_coord)c, (plx_resize_nearest)n, in, down,
                         0.0f, 0.0f, false, r);
        }
        check_resize(PLX_RESIZE_LINEAR, (plx_resize_coord)c, 0, in, up, 0.0f, 0.0f, false, r);
        check_resize(PLX_RESIZE_LINEAR, (plx_resize_coord)c, 0, in, down, 0.0f, 0.0f, false, r);
        check_resize(PLX_RESIZE_CUBIC, (plx_resize_coord)c, 0, in, up, 0.0f, 0.0f, false, r);
        check_resize(PLX_RESIZE_CUBIC, (plx_resize_coord)c, 0, in, up, 0.0f, 0.0f, true, r);
        check_resize(PLX_RESIZE_CUBIC, (plx_resize_coord)c, 0, in, down, 0.0f, 0.0f, true, r);
    }
    /* explicit scales that do not divide the sizes */
    const int64_t odd[] = {7, 10};
    check_resize(PLX_RESIZE_LINEAR, PLX_RESIZE_COORD_ALIGN_CORNERS, 0, in, odd, 2.5f, 2.6f, false,
                 NULL);
    check_resize(PLX_RESIZE_NEAREST, PLX_RESIZE_COORD_ASYMMETRIC, 0, in, odd, 2.5f, 2.6f, false,
                 NULL);
}
