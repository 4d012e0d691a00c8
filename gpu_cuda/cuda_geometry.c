/* The geometry of gpu_cuda's data-movement, pooling and normalisation
 * layers (cuda_geometry.h). The shapes come validated by the host's shape
 * inference; what is checked again here is what the kernels' indexing
 * relies on (an output of the size the geometry writes), so that an
 * inconsistent layer is refused instead of indexing out of bounds. The
 * ONNX rules themselves (slice plans, broadcasting, pool windows) are the
 * SDK's (plexus/geometry.h, plexus/window.h). */
#define _POSIX_C_SOURCE 200809L

#include "cuda_geometry.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <plexus/geometry.h>
#include <plexus/window.h>

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static const char *refuse(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

static int64_t count_of(const plx_tensor_info *t) {
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= t->dims[i];
    }
    return n;
}

static int64_t product(const plx_tensor_info *t, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t i = from; i < to; i++) {
        n *= t->dims[i];
    }
    return n;
}

size_t ck_copy_size(plx_dtype dtype) {
    if (dtype == PLX_DTYPE_INT4 || dtype == PLX_DTYPE_UINT4) {
        return 0;
    }
    return plx_dtype_size(dtype);
}

/* One dtype of a size the copies move, the same for inputs `first` on and
 * every output. */
static const char *same_dtype(const plx_layer_view *l, uint32_t first, char *buf, size_t size) {
    plx_dtype dt = l->outputs[0].dtype;
    if (ck_copy_size(dt) == 0) {
        return refuse(buf, size, "runs %s on dtypes of 1, 2, 4 or 8 bytes, not %s",
                      plx_op_name(l->op), plx_dtype_name(dt));
    }
    for (uint32_t i = first; i < l->input_count; i++) {
        if (l->inputs[i].dtype != dt) {
            return refuse(buf, size, "%s: input %u is %s, the output %s", plx_op_name(l->op), i,
                          plx_dtype_name(l->inputs[i].dtype), plx_dtype_name(dt));
        }
    }
    for (uint32_t j = 1; j < l->output_count; j++) {
        if (l->outputs[j].dtype != dt) {
            return refuse(buf, size, "%s: output %u is %s, output 0 %s", plx_op_name(l->op), j,
                          plx_dtype_name(l->outputs[j].dtype), plx_dtype_name(dt));
        }
    }
    return NULL;
}

static bool same_dims(const int64_t *a, uint32_t ra, const int64_t *b, uint32_t rb) {
    if (ra != rb) {
        return false;
    }
    for (uint32_t i = 0; i < ra; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    return true;
}

static void dense_strides(const int64_t *dims, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank; i-- > 0;) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* A view over `rank` dims reading the source at src_strides and writing
 * the destination densely (row-major over dims). */
static void view_into_dense(ck_view *v, int rank, const int64_t *dims, const int64_t *src_strides,
                            int64_t src_base) {
    memset(v, 0, sizeof *v);
    v->rank = rank;
    v->count = 1;
    for (int i = 0; i < rank; i++) {
        v->dims[i] = dims[i];
        v->src_strides[i] = src_strides[i];
        v->count *= dims[i];
    }
    dense_strides(v->dims, rank, v->dst_strides);
    v->src_base = src_base;
}

/* The output's dims of a permutation of the dense source `dims` (rank
 * at most 6 here): view `v` walks the output. */
static void view_permuted(ck_view *v, int rank, const int64_t *dims, const uint32_t *perm) {
    int64_t st[CK_VIEW_MAX_RANK], od[CK_VIEW_MAX_RANK], os[CK_VIEW_MAX_RANK];
    dense_strides(dims, rank, st);
    for (int i = 0; i < rank; i++) {
        od[i] = dims[perm[i]];
        os[i] = st[perm[i]];
    }
    view_into_dense(v, rank, od, os, 0);
}

/* The same copy over fewer dims, so that each element costs fewer
 * divisions: dims of size 1 dropped, and a dim merged into the one before
 * it where both the source and the destination walk them as one. */
static void view_coalesce(ck_view *v) {
    int r = 0;
    for (int k = 0; k < v->rank; k++) {
        if (v->dims[k] == 1) {
            continue;
        }
        if (r > 0 && v->src_strides[r - 1] == v->src_strides[k] * v->dims[k] &&
            v->dst_strides[r - 1] == v->dst_strides[k] * v->dims[k]) {
            v->dims[r - 1] *= v->dims[k];
            v->src_strides[r - 1] = v->src_strides[k];
            v->dst_strides[r - 1] = v->dst_strides[k];
            continue;
        }
        v->dims[r] = v->dims[k];
        v->src_strides[r] = v->src_strides[k];
        v->dst_strides[r] = v->dst_strides[k];
        r++;
    }
    v->rank = r;
}

uint32_t ck_view_count(const plx_layer_view *l) {
    return l->op == PLX_OP_CONCAT ? l->input_count
           : l->op == PLX_OP_SPLIT ? l->output_count
                                   : 1;
}

static const char *geom_transpose(const plx_layer_view *l, ck_view *v, char *buf, size_t size) {
    const plx_transpose_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    uint32_t perm[PLX_MAX_RANK];
    bool seen[PLX_MAX_RANK] = {false};
    if (d->perm_count != 0 && d->perm_count != x->rank) {
        return refuse(buf, size, "transpose: %u perm entries for rank %u", d->perm_count, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        perm[i] = d->perm_count ? d->perm[i] : x->rank - 1 - i;
        if (perm[i] >= x->rank || seen[perm[i]]) {
            return refuse(buf, size, "transpose: perm is not a permutation of 0..%u",
                          x->rank - 1);
        }
        seen[perm[i]] = true;
        if (y->rank != x->rank || y->dims[i] != x->dims[perm[i]]) {
            return refuse(buf, size, "transpose: output dim %u is not input dim %u", i, perm[i]);
        }
    }
    if (v) {
        view_permuted(v, (int)x->rank, x->dims, perm);
    }
    return NULL;
}

static const char *geom_slice(const plx_layer_view *l, ck_view *v, char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t dims[PLX_MAX_RANK], strides[PLX_MAX_RANK], offset = 0;
    uint32_t bad = 0;
    plx_geom_status s = plx_slice_plan(x, l->desc, dims, strides, &offset, &bad);
    if (s != PLX_GEOM_OK) {
        return refuse(buf, size, "slice: entry %u: %s", bad, plx_geom_status_text(s));
    }
    if (!same_dims(dims, x->rank, y->dims, y->rank)) {
        return refuse(buf, size, "slice: the output's shape is not the slice's");
    }
    if (v) {
        view_into_dense(v, (int)x->rank, dims, strides, offset);
    }
    return NULL;
}

static const char *geom_expand(const plx_layer_view *l, ck_view *v, char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t strides[PLX_MAX_RANK];
    if (plx_broadcast_strides(x->dims, x->rank, y->dims, y->rank, strides, NULL) !=
        PLX_GEOM_OK) {
        return refuse(buf, size, "expand: the input does not broadcast to the output");
    }
    if (v) {
        view_into_dense(v, (int)y->rank, y->dims, strides, 0);
    }
    return NULL;
}

static const char *geom_tile(const plx_layer_view *l, ck_view *v, char *buf, size_t size) {
    const plx_tile_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (y->rank != x->rank) {
        return refuse(buf, size, "tile: the output's rank is not the input's");
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (d->repeats[i] < 0 || y->dims[i] != x->dims[i] * d->repeats[i]) {
            return refuse(buf, size, "tile: output dim %u is not input dim %u times %lld", i, i,
                          (long long)d->repeats[i]);
        }
    }
    if (v) {
        int64_t xs[PLX_MAX_RANK], ys[PLX_MAX_RANK];
        plx_tensor_info_strides(x, xs);
        plx_tensor_info_strides(y, ys);
        memset(v, 0, sizeof *v);
        v->rank = 2 * (int)x->rank;
        v->count = count_of(y);
        /* Dim i of the output as (repeat, position in the input). */
        for (uint32_t i = 0; i < x->rank; i++) {
            v->dims[2 * i] = d->repeats[i];
            v->src_strides[2 * i] = 0;
            v->dst_strides[2 * i] = x->dims[i] * ys[i];
            v->dims[2 * i + 1] = x->dims[i];
            v->src_strides[2 * i + 1] = xs[i];
            v->dst_strides[2 * i + 1] = ys[i];
        }
    }
    return NULL;
}

/* concat (views[i] copies input i into its place in the output) and split
 * (views[j] copies its part of the input into output j). */
static const char *geom_concat_split(const plx_layer_view *l, ck_view *views, char *buf,
                                     size_t size) {
    bool concat = l->op == PLX_OP_CONCAT;
    const plx_tensor_info *whole = concat ? &l->outputs[0] : &l->inputs[0];
    const plx_tensor_info *parts = concat ? l->inputs : l->outputs;
    uint32_t n = concat ? l->input_count : l->output_count;
    int32_t a = concat ? ((const plx_axis_desc *)l->desc)->axis
                       : ((const plx_split_desc *)l->desc)->axis;
    uint32_t axis = 0;
    if (!plx_axis_normalize(a, whole->rank, false, &axis)) {
        return refuse(buf, size, "%s: axis %d is out of range for rank %u", plx_op_name(l->op),
                      (int)a, whole->rank);
    }
    int64_t ws[PLX_MAX_RANK], at = 0;
    plx_tensor_info_strides(whole, ws);
    for (uint32_t i = 0; i < n; i++) {
        const plx_tensor_info *p = &parts[i];
        bool fits = p->rank == whole->rank;
        for (uint32_t k = 0; fits && k < p->rank; k++) {
            fits = k == axis || p->dims[k] == whole->dims[k];
        }
        if (!fits) {
            return refuse(buf, size, "%s: part %u does not match the whole but along axis %u",
                          plx_op_name(l->op), i, axis);
        }
        if (views) {
            int64_t ps[PLX_MAX_RANK];
            plx_tensor_info_strides(p, ps);
            ck_view *v = &views[i];
            memset(v, 0, sizeof *v);
            v->rank = (int)p->rank;
            v->count = count_of(p);
            for (uint32_t k = 0; k < p->rank; k++) {
                v->dims[k] = p->dims[k];
                v->src_strides[k] = concat ? ps[k] : ws[k];
                v->dst_strides[k] = concat ? ws[k] : ps[k];
            }
            if (concat) {
                v->src_slot = i;
                v->dst_base = at * ws[axis];
            } else {
                v->dst_slot = i;
                v->src_base = at * ws[axis];
            }
        }
        at += p->dims[axis];
    }
    if (at != whole->dims[axis]) {
        return refuse(buf, size, "%s: the parts' sizes along axis %u add up to %lld, not %lld",
                      plx_op_name(l->op), axis, (long long)at, (long long)whole->dims[axis]);
    }
    return NULL;
}

/* depth_to_space and space_to_depth: a reshape to rank 6, a permutation,
 * a reshape back (ONNX's definitions). */
static const char *geom_depth_space(const plx_layer_view *l, ck_view *v, char *buf,
                                    size_t size) {
    const plx_depth_space_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t b = d->block_size;
    if (x->rank != 4 || y->rank != 4 || b < 1) {
        return refuse(buf, size, "%s: X and Y of rank 4 and a block size of at least 1 only",
                      plx_op_name(l->op));
    }
    int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    int64_t dims[6];
    static const uint32_t dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3},
                          s2d[6] = {0, 3, 5, 1, 2, 4};
    const uint32_t *perm;
    int64_t want[4];
    if (l->op == PLX_OP_DEPTH_TO_SPACE) {
        if (c % (b * b) != 0) {
            return refuse(buf, size, "depth_to_space: C %lld is not a multiple of %lld",
                          (long long)c, (long long)(b * b));
        }
        bool is_crd = d->mode == PLX_DEPTH_SPACE_CRD;
        int64_t rd[6] = {n, b, b, c / (b * b), h, w}, rc[6] = {n, c / (b * b), b, b, h, w};
        memcpy(dims, is_crd ? rc : rd, sizeof dims);
        perm = is_crd ? crd : dcr;
        int64_t wd[4] = {n, c / (b * b), h * b, w * b};
        memcpy(want, wd, sizeof want);
    } else {
        if (d->mode != PLX_DEPTH_SPACE_DCR || h % b != 0 || w % b != 0) {
            return refuse(buf, size, "space_to_depth: DCR mode with H and W multiples of the "
                          "block size only");
        }
        int64_t rs[6] = {n, c, h / b, b, w / b, b};
        memcpy(dims, rs, sizeof dims);
        perm = s2d;
        int64_t ws[4] = {n, c * b * b, h / b, w / b};
        memcpy(want, ws, sizeof want);
    }
    if (!same_dims(want, 4, y->dims, y->rank)) {
        return refuse(buf, size, "%s: the output's shape is not the rearranged input's",
                      plx_op_name(l->op));
    }
    if (v) {
        view_permuted(v, 6, dims, perm);
    }
    return NULL;
}

const char *ck_geom_views(const plx_layer_view *l, ck_view *views, char *buf, size_t size) {
    if (l->input_count < 1 || l->output_count < 1) {
        return refuse(buf, size, "%s without an input or an output", plx_op_name(l->op));
    }
    const char *why = same_dtype(l, 0, buf, size);
    if (why) {
        return why;
    }
    switch (l->op) {
    case PLX_OP_TRANSPOSE: why = geom_transpose(l, views, buf, size); break;
    case PLX_OP_SLICE: why = geom_slice(l, views, buf, size); break;
    case PLX_OP_EXPAND: why = geom_expand(l, views, buf, size); break;
    case PLX_OP_TILE: why = geom_tile(l, views, buf, size); break;
    case PLX_OP_CONCAT:
    case PLX_OP_SPLIT: why = geom_concat_split(l, views, buf, size); break;
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH: why = geom_depth_space(l, views, buf, size); break;
    default: return refuse(buf, size, "runs no %s as a copy", plx_op_name(l->op));
    }
    for (uint32_t i = 0; !why && views && i < ck_view_count(l); i++) {
        view_coalesce(&views[i]);
    }
    return why;
}

const char *ck_geom_same_bytes(const plx_layer_view *l, char *buf, size_t size) {
    if (l->input_count < 1 || l->output_count != 1) {
        return refuse(buf, size, "%s with one input and one output only", plx_op_name(l->op));
    }
    const char *why = same_dtype(l, 0, buf, size);
    if (why) {
        return why;
    }
    if (count_of(&l->inputs[0]) != count_of(&l->outputs[0])) {
        return refuse(buf, size, "%s: the output has not the input's element count",
                      plx_op_name(l->op));
    }
    return NULL;
}

const char *ck_geom_pad(const plx_layer_view *l, ck_pad *g, char *buf, size_t size) {
    const plx_pad_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const char *why = same_dtype(l, 0, buf, size);
    if (why) {
        return why;
    }
    if ((unsigned)d->mode > PLX_PAD_WRAP || y->rank != x->rank) {
        return refuse(buf, size, "pad: mode %d with the output's rank %u and the input's %u",
                      (int)d->mode, y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i];
        if (pb < -x->dims[i] || pe < -x->dims[i] || y->dims[i] != x->dims[i] + pb + pe) {
            return refuse(buf, size, "pad: output dim %u is not input dim %u padded by %lld, "
                          "%lld", i, i, (long long)pb, (long long)pe);
        }
        if (d->mode != PLX_PAD_CONSTANT && x->dims[i] == 0 && y->dims[i] > 0) {
            return refuse(buf, size, "pad: only the constant pads the empty dim %u", i);
        }
        if (d->mode == PLX_PAD_WRAP && (pb < 0 || pe < 0)) {
            return refuse(buf, size, "pad: wrap pads of dim %u must be >= 0", i);
        }
    }
    if (g) {
        memset(g, 0, sizeof *g);
        g->rank = (int)x->rank;
        g->mode = (int)d->mode;
        plx_tensor_info_strides(x, g->in_strides);
        for (uint32_t i = 0; i < x->rank; i++) {
            g->out_dims[i] = y->dims[i];
            g->in_dims[i] = x->dims[i];
            g->pads_begin[i] = d->pads_begin[i];
        }
        g->count = count_of(y);
        plx_dtype_bytes_from_double(d->value, x->dtype, g->value); /* as cast converts */
    }
    return NULL;
}

const char *ck_geom_gather(const plx_layer_view *l, ck_gather *g, char *buf, size_t size) {
    if (l->input_count != 2 || l->output_count != 1) {
        return refuse(buf, size, "gather with data and indices to one output only");
    }
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1], *y = &l->outputs[0];
    if (ind->dtype != PLX_DTYPE_INT32 && ind->dtype != PLX_DTYPE_INT64 &&
        ind->dtype != PLX_DTYPE_INT8 && ind->dtype != PLX_DTYPE_UINT8) {
        return refuse(buf, size, "runs gather with int8, uint8, int32 or int64 indices only, "
                      "not %s", plx_dtype_name(ind->dtype));
    }
    if (ck_copy_size(x->dtype) == 0 || y->dtype != x->dtype) {
        return refuse(buf, size, "gather: data of %s to an output of %s",
                      plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    uint32_t axis = 0;
    int32_t a = ((const plx_axis_desc *)l->desc)->axis;
    if (!plx_axis_normalize(a, x->rank, false, &axis)) {
        return refuse(buf, size, "gather: axis %d is out of range for rank %u", (int)a, x->rank);
    }
    if (y->rank != x->rank - 1 + ind->rank) {
        return refuse(buf, size, "gather: output rank %u, not %u", y->rank,
                      x->rank - 1 + ind->rank);
    }
    for (uint32_t i = 0; i < y->rank; i++) {
        int64_t want = i < axis                ? x->dims[i]
                       : i < axis + ind->rank ? ind->dims[i - axis]
                                               : x->dims[i - ind->rank + 1];
        if (y->dims[i] != want) {
            return refuse(buf, size, "gather: output dim %u is %lld, not %lld", i,
                          (long long)y->dims[i], (long long)want);
        }
    }
    if (g) {
        memset(g, 0, sizeof *g);
        g->outer = product(x, 0, axis);
        g->axis_dim = x->dims[axis];
        g->inner = product(x, axis + 1, x->rank);
        g->index_count = count_of(ind);
        g->count = count_of(y);
        g->index_bytes = (int)plx_dtype_size(ind->dtype);
        g->index_unsigned = ind->dtype == PLX_DTYPE_UINT8;
    }
    return NULL;
}

const char *ck_geom_where(const plx_layer_view *l, ck_where *g, char *buf, size_t size) {
    if (l->input_count != 3 || l->output_count != 1) {
        return refuse(buf, size, "where with cond, X and Y to one output only");
    }
    const plx_tensor_info *y = &l->outputs[0];
    if (l->inputs[0].dtype != PLX_DTYPE_BOOL) {
        return refuse(buf, size, "where: cond is %s, not bool", plx_dtype_name(l->inputs[0].dtype));
    }
    const char *why = same_dtype(l, 1, buf, size);
    if (why) {
        return why;
    }
    ck_where w;
    memset(&w, 0, sizeof w);
    int64_t *strides[3] = {w.c_strides, w.x_strides, w.y_strides};
    for (uint32_t i = 0; i < 3; i++) {
        const plx_tensor_info *t = &l->inputs[i];
        if (plx_broadcast_strides(t->dims, t->rank, y->dims, y->rank, strides[i], NULL) !=
            PLX_GEOM_OK) {
            return refuse(buf, size, "where: input %u does not broadcast to the output", i);
        }
    }
    if (g) {
        w.rank = (int)y->rank;
        for (uint32_t i = 0; i < y->rank; i++) {
            w.dims[i] = y->dims[i];
        }
        w.count = count_of(y);
        *g = w;
    }
    return NULL;
}

const char *ck_geom_pool(const plx_layer_view *l, ck_pool *g, char *buf, size_t size) {
    const plx_pool_desc *d = l->desc;
    if ((unsigned)d->kind > PLX_POOL_LP) {
        return refuse(buf, size, "runs no pool kind %d", (int)d->kind);
    }
    if (d->kind == PLX_POOL_LP && d->p < 1) {
        return refuse(buf, size, "pool: lp pooling needs p >= 1, not %lld", (long long)d->p);
    }
    if (l->inputs[0].dtype != PLX_DTYPE_FLOAT32 || l->outputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return refuse(buf, size, "runs pool on float32 only");
    }
    if (l->output_count > 1) {
        const plx_tensor_info *ind = &l->outputs[1];
        if (d->kind != PLX_POOL_MAX || ind->dtype != PLX_DTYPE_INT64 ||
            !same_dims(ind->dims, ind->rank, l->outputs[0].dims, l->outputs[0].rank)) {
            return refuse(buf, size, "pool: Indices come with max pools only, int64 of Y's "
                          "shape");
        }
        if (d->indices_column_major && l->inputs[0].rank > 4) {
            return refuse(buf, size, "pool: column-major Indices are for 1-D and 2-D pools");
        }
    }
    plx_window_geom w;
    char msg[200];
    if (plx_window_geom_pool_nd(l, (int64_t)1 << 30, &w, msg, sizeof msg)) {
        return refuse(buf, size, "%s", msg);
    }
    if (g) {
        memset(g, 0, sizeof *g);
        /* window.h's slots (0: H, 1: W, 2: D) in the order D, H, W. */
        static const int slot[3] = {2, 0, 1};
        for (int i = 0; i < 3; i++) {
            int s = slot[i];
            g->in[i] = w.in[s];
            g->out[i] = w.out[s];
            g->k[i] = w.k[s];
            g->s[i] = w.s[s];
            g->d[i] = w.d[s];
            g->pb[i] = w.pb[s];
            g->pe[i] = w.pe[s];
        }
        g->kind = (int)d->kind;
        g->p = (float)d->p;
        g->count_include_pad = d->count_include_pad;
        g->column_major = d->indices_column_major;
        g->count = count_of(&l->outputs[0]);
    }
    return NULL;
}

const char *ck_geom_global_pool(const plx_layer_view *l, ck_pool *g, char *buf, size_t size) {
    const plx_global_pool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32 || y->dtype != PLX_DTYPE_FLOAT32) {
        return refuse(buf, size, "runs global_pool on float32 only");
    }
    if ((unsigned)d->kind > PLX_POOL_LP || (d->kind == PLX_POOL_LP && d->p < 1)) {
        return refuse(buf, size, "runs no global_pool of kind %d with p %lld", (int)d->kind,
                      (long long)d->p);
    }
    if (x->rank < 3 || y->rank != x->rank || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1]) {
        return refuse(buf, size, "global_pool: X [N, C, ...] of rank 3 or more to Y [N, C, 1, "
                      "...]");
    }
    for (uint32_t i = 2; i < x->rank; i++) {
        if (y->dims[i] != 1) {
            return refuse(buf, size, "global_pool: Y's spatial dims are not 1");
        }
    }
    if (product(x, 2, x->rank) == 0 && x->dims[0] * x->dims[1] > 0) {
        return refuse(buf, size, "global_pool: pools no spatial element");
    }
    if (g) {
        uint32_t spatial = x->rank - 2;
        if (spatial > 3) {
            return refuse(buf, size, "runs global lp pools with p other than 1 and 2 over 3 "
                          "spatial dims at most, not %u", spatial);
        }
        memset(g, 0, sizeof *g);
        for (int i = 0; i < 3; i++) {
            /* the spatial dims at the end of depth, height, width */
            int k = i - (3 - (int)spatial);
            g->in[i] = k < 0 ? 1 : x->dims[2 + k];
            g->out[i] = 1;
            g->k[i] = g->in[i];
            g->s[i] = 1;
            g->d[i] = 1;
        }
        g->kind = (int)d->kind;
        g->p = (float)d->p;
        g->count = count_of(y);
    }
    return NULL;
}

static const char *require_float32(const plx_layer_view *l, char *buf, size_t size) {
    for (uint32_t i = 0; i < l->input_count; i++) {
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return refuse(buf, size, "runs %s in float32 only, not input %u of %s",
                          plx_op_name(l->op), i, plx_dtype_name(l->inputs[i].dtype));
        }
    }
    if (l->output_count != 1 || l->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        !same_dims(l->outputs[0].dims, l->outputs[0].rank, l->inputs[0].dims,
                   l->inputs[0].rank)) {
        return refuse(buf, size, "runs %s with one float32 output of X's shape only",
                      plx_op_name(l->op));
    }
    return NULL;
}

/* The strides at which layer_norm's parameter t is read over the row's
 * dims (X's from the axis on), broadcast; false when t does not broadcast
 * to X or varies along a dim before the axis. */
static bool along_row(const plx_tensor_info *t, const plx_tensor_info *x, uint32_t axis,
                      int64_t *row_strides) {
    int64_t st[PLX_MAX_RANK];
    if (plx_broadcast_strides(t->dims, t->rank, x->dims, x->rank, st, NULL) != PLX_GEOM_OK) {
        return false;
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i < axis && st[i] != 0) {
            return false;
        }
        if (i >= axis) {
            row_strides[i - axis] = st[i];
        }
    }
    return true;
}

const char *ck_geom_norm(const plx_layer_view *l, ck_norm *g, char *buf, size_t size) {
    const char *why = require_float32(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    ck_norm n;
    memset(&n, 0, sizeof n);
    n.has_bias = l->input_count > 2;
    if (l->op == PLX_OP_LAYER_NORM) {
        const plx_layer_norm_desc *d = l->desc;
        uint32_t axis = 0;
        if (!plx_axis_normalize(d->axis, x->rank, false, &axis)) {
            return refuse(buf, size, "layer_norm: axis %d is out of range for rank %u", d->axis,
                          x->rank);
        }
        if (!along_row(&l->inputs[1], x, axis, n.scale_strides) ||
            (n.has_bias && !along_row(&l->inputs[2], x, axis, n.bias_strides))) {
            return refuse(buf, size, "layer_norm: scale and bias must broadcast to the "
                          "normalised dims");
        }
        n.row_rank = (int)(x->rank - axis);
        for (uint32_t i = axis; i < x->rank; i++) {
            n.row_dims[i - axis] = x->dims[i];
        }
        n.rows = product(x, 0, axis);
        n.n = product(x, axis, x->rank);
        n.epsilon = d->epsilon;
    } else { /* instance_norm */
        if (x->rank < 3 || l->input_count != 3 || count_of(&l->inputs[1]) != x->dims[1] ||
            count_of(&l->inputs[2]) != x->dims[1]) {
            return refuse(buf, size, "instance_norm: X [N, C, ...] of rank 3 or more with a "
                          "scale and a bias of C elements only");
        }
        n.rows = x->dims[0] * x->dims[1];
        n.n = product(x, 2, x->rank);
        n.channels = x->dims[1];
        n.epsilon = ((const plx_instance_norm_desc *)l->desc)->epsilon;
    }
    if (n.n == 0 && n.rows > 0) {
        return refuse(buf, size, "%s: normalises no rows of no element", plx_op_name(l->op));
    }
    if (g) {
        *g = n;
    }
    return NULL;
}

const char *ck_geom_batch_norm(const plx_layer_view *l, ck_batch_norm *g, char *buf,
                               size_t size) {
    const char *why = require_float32(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2 || l->input_count != 5) {
        return refuse(buf, size, "batch_norm: X of rank 2 or more with scale, bias, mean and "
                      "var only");
    }
    for (uint32_t i = 1; i < 5; i++) {
        if (count_of(&l->inputs[i]) != x->dims[1]) {
            return refuse(buf, size, "batch_norm: input %u has not C = %lld elements", i,
                          (long long)x->dims[1]);
        }
    }
    if (g) {
        memset(g, 0, sizeof *g);
        g->channels = x->dims[1];
        g->inner = product(x, 2, x->rank);
        g->count = count_of(x);
        g->epsilon = ((const plx_batch_norm_desc *)l->desc)->epsilon;
    }
    return NULL;
}

static bool castable(plx_dtype t) {
    return t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT16 || t == PLX_DTYPE_INT32 ||
           t == PLX_DTYPE_INT64 || t == PLX_DTYPE_BOOL;
}

const char *ck_geom_cast(const plx_layer_view *l, char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (!castable(x->dtype) || !castable(y->dtype)) {
        return refuse(buf, size, "runs cast between float32, float16, int32, int64 and bool "
                      "only, not %s to %s", plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    if (!same_dims(x->dims, x->rank, y->dims, y->rank)) {
        return refuse(buf, size, "cast: the output has not the input's shape");
    }
    return NULL;
}

/* Keys' cubic convolution kernel of `a` at distance t. */
static double keys(double t, double a) {
    t = fabs(t);
    if (t <= 1.0) {
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    }
    if (t < 2.0) {
        return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    }
    return 0.0;
}

/* The taps of output coordinate o along spatial dim `dim` (0: H, 1: W) of
 * `in` points resized by `scale` to `out` (plexus/ops.h, plx_resize_desc:
 * the coordinate transformation, then the points nearest the
 * coordinate, the lower on ties; points past an edge read the edge, or
 * with exclude_outside weigh 0, the others divided by their sum). */
static void resize_taps(const plx_resize_desc *d, int dim, int64_t o, double scale, int64_t in,
                        int64_t out, ck_resize_tap *t) {
    double c;
    memset(t, 0, sizeof *t);
    if (d->coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE) {
        /* start * (in - 1) + o * (end - start) * (in - 1) / (out_len - 1), or
         * the middle of the crop when out_len is 1; outside [0, in - 1]:
         * the extrapolation value */
        double start = d->roi_start[dim], end = d->roi_end[dim], span = (double)in - 1.0;
        double out_len = scale * (double)in;
        c = start * span + (out_len == 1.0 ? (end - start) * span / 2.0
                                           : (double)o * (end - start) * span / (out_len - 1.0));
        if (!(c >= 0.0 && c <= span)) { /* NaN too */
            t->outside = true;
            return;
        }
    } else if (d->coord == PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC) {
        double out_len = scale * (double)in;
        c = (double)in / 2.0 * (1.0 - (double)out / out_len) + ((double)o + 0.5) / scale - 0.5;
        c = !(c > -2.0) ? -2.0 : c > (double)in + 1.0 ? (double)in + 1.0 : c;
    } else {
        c = plx_resize_coordinate(d->coord, o, scale, in);
    }
    if (d->mode == PLX_RESIZE_NEAREST) {
        t->at[0] = plx_resize_nearest_index(d->nearest, c, in);
        t->w[0] = 1.0f;
    } else if (d->mode == PLX_RESIZE_LINEAR) {
        double r = plx_resize_linear_taps(c, in, &t->at[0], &t->at[1]);
        t->w[0] = (float)(1.0 - r);
        t->w[1] = (float)r;
    } else { /* cubic: 4 points from ceil(c) - 2, r = c - (ceil(c) - 1) in (0, 1] */
        double f = ceil(c) - 1.0, r = c - f, w[4], kept = 0.0;
        int64_t first = (int64_t)f - 1;
        for (int j = 0; j < 4; j++) {
            int64_t i = first + j;
            w[j] = keys((double)(j - 1) - r, (double)d->cubic_coeff_a);
            if (d->exclude_outside && (i < 0 || i >= in)) {
                w[j] = 0.0;
            }
            kept += w[j];
            t->at[j] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
        }
        for (int j = 0; j < 4; j++) {
            t->w[j] = (float)(d->exclude_outside && kept != 0.0 ? w[j] / kept : w[j]);
        }
    }
}

const char *ck_geom_resize(const plx_layer_view *l, ck_resize *g, ck_resize_tap *taps, char *buf,
                           size_t size) {
    const plx_resize_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32 || y->dtype != PLX_DTYPE_FLOAT32) {
        return refuse(buf, size, "runs resize on float32 only");
    }
    if (d->mode != PLX_RESIZE_NEAREST && d->mode != PLX_RESIZE_LINEAR &&
        d->mode != PLX_RESIZE_CUBIC) {
        const char *name = plx_resize_mode_name(d->mode);
        return refuse(buf, size, "runs nearest, linear and cubic resize, not %s",
                      name ? name : "(unknown)");
    }
    if ((unsigned)d->coord > PLX_RESIZE_COORD_TF_CROP_AND_RESIZE ||
        (unsigned)d->nearest > PLX_RESIZE_NEAREST_CEIL) {
        const char *name = plx_resize_coord_name(d->coord);
        return refuse(buf, size, "runs no resize with the coordinate transformation %s or "
                      "nearest mode %d", name ? name : "(unknown)", (int)d->nearest);
    }
    plx_resize_geom rg;
    int dim = 0;
    plx_geom_status s = plx_resize_geom_of(x, y, d->scales, &rg, &dim);
    if (s == PLX_GEOM_BAD_RANK) {
        return refuse(buf, size, "resize takes rank-4 (NCHW) X and Y with X's N and C");
    }
    if (s != PLX_GEOM_OK) {
        return refuse(buf, size, "resize: %s (spatial dim %d)", plx_geom_status_text(s), dim);
    }
    if (g) {
        memset(g, 0, sizeof *g);
        g->in_h = rg.in[0];
        g->in_w = rg.in[1];
        g->out_h = rg.out[0];
        g->out_w = rg.out[1];
        g->count = count_of(y);
        g->taps = d->mode == PLX_RESIZE_NEAREST ? 1 : d->mode == PLX_RESIZE_LINEAR ? 2 : 4;
        g->extrapolation = d->extrapolation_value;
    }
    if (taps) {
        for (int k = 0; k < 2; k++) {
            for (int64_t o = 0; o < rg.out[k]; o++) {
                resize_taps(d, k, o, rg.scale[k], rg.in[k], rg.out[k],
                            &taps[(k ? rg.out[0] : 0) + o]);
            }
        }
    }
    return NULL;
}
