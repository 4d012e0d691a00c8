/* Operators whose output's shape depends on their input's values: NonZero,
 * Compress and Unique. Backends see static shapes only, so what decides the shape
 * must be known at import: a constant, or a value a dynamic model
 * specialises on (a valued input, or a tensor a probe computes, see
 * plexus/dynamic.h). The values needed are reported with
 * onnxi_need_const like any attribute-like input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* NonZero(X): the indices of X's non-zero elements, int64 [rank, count],
 * in row-major order. Computed here from X's values. */
plx_status onnxi_conv_nonzero(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (!st) {
        st = onnxi_need_const(n, 0, "X, whose values decide the output's shape");
    }
    if (st) {
        return st;
    }
    const onnxi_value *x = n->in[0];
    uint32_t rank = x->info.rank;
    if (rank == 0) {
        return ONNXI_UNSUPPORTED("a scalar input");
    }
    size_t total = onnxi_elem_count(&x->info), count = 0;
    for (size_t i = 0; i < total; i++) {
        count += onnxi_const_f64(x, i) != 0.0;
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    info.rank = 2;
    info.dims[0] = rank;
    info.dims[1] = (int64_t)count;
    int64_t *out = NULL;
    st = onnxi_alloc_const(c, n, &info, (void **)&out);
    if (st) {
        return st;
    }
    size_t k = 0;
    for (size_t i = 0; i < total; i++) {
        if (onnxi_const_f64(x, i) == 0.0) {
            continue;
        }
        size_t rest = i;
        for (uint32_t d = rank; d-- > 0;) {
            out[d * count + k] = (int64_t)(rest % (size_t)x->info.dims[d]);
            rest /= (size_t)x->info.dims[d];
        }
        k++;
    }
    onnxi_value *v = NULL;
    st = onnxi_const_take(c, &info, out, &v);
    return st ? st : onnxi_bind_out(c, n, 0, v);
}

/* Compress(input, condition[, axis]): the slices of input along axis (or
 * of the flattened input) where condition is true, as a gather of the
 * positions the condition selects. */
plx_status onnxi_conv_compress(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (!st) {
        st = onnxi_need_const(n, 1, "condition");
    }
    if (st) {
        return st;
    }
    const onnxi_value *cond = n->in[1];
    if (cond->info.rank != 1) {
        return onnxi_invalid(c, n, "condition must have rank 1");
    }
    onnxi_value *x = n->in[0];
    bool has_axis = onnxi_attr(n, "axis") != NULL;
    int64_t axis = onnxi_attr_i(n, "axis", 0), rank = x->info.rank;
    if (has_axis && (axis < -rank || axis >= rank)) {
        return onnxi_invalid(c, n, "axis %lld is out of range for rank %lld", (long long)axis,
                             (long long)rank);
    }
    if (axis < 0) {
        axis += rank;
    }
    if (!has_axis) {
        /* Over the flattened input. */
        plx_tensor_info flat;
        memset(&flat, 0, sizeof flat);
        flat.dtype = x->info.dtype;
        flat.rank = 1;
        flat.dims[0] = (int64_t)onnxi_elem_count(&x->info);
        st = onnxi_reshape_to(c, n, x, &flat, &x);
        if (st) {
            return st;
        }
    }
    int64_t len = x->info.dims[axis];
    if (cond->info.dims[0] > len) {
        return onnxi_invalid(c, n, "condition has %lld values for a length of %lld",
                             (long long)cond->info.dims[0], (long long)len);
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    info.rank = 1;
    for (int64_t i = 0; i < cond->info.dims[0]; i++) {
        info.dims[0] += onnxi_const_i64(cond, (size_t)i) != 0;
    }
    int64_t *idx = NULL;
    st = onnxi_alloc_const(c, n, &info, (void **)&idx);
    if (st) {
        return st;
    }
    size_t k = 0;
    for (int64_t i = 0; i < cond->info.dims[0]; i++) {
        if (onnxi_const_i64(cond, (size_t)i) != 0) {
            idx[k++] = i;
        }
    }
    onnxi_value *indices = NULL;
    st = onnxi_const_take(c, &info, idx, &indices);
    onnxi_value *ins[2] = {x, indices};
    plx_axis_desc d = PLX_AXIS_DESC_INIT((int32_t)axis);
    return st ? st : onnxi_emit1(c, n, PLX_OP_GATHER, &d, ins, 2);
}

/* Unique's view of X: `count` items (elements, or slices along the axis),
 * each `width` elements, item i's element j at flat index
 * (i / inner_items... ) as item_index() computes. */
typedef struct unique_view {
    const onnxi_value *x;
    size_t count, width;
    size_t outer, inner; /* the axis splits X into outer x count x inner */
    bool is_float;       /* compared as doubles */
    bool is_u64;         /* compared as uint64 (int64 would saturate them) */
} unique_view;

/* The flat index of element j of item i. */
static size_t item_index(const unique_view *u, size_t i, size_t j) {
    size_t o = j / u->inner, in = j % u->inner;
    return (o * u->count + i) * u->inner + in;
}

/* Items a and b compared element by element (-1, 0, 1). */
static int item_cmp(const unique_view *u, size_t a, size_t b) {
    for (size_t j = 0; j < u->width; j++) {
        size_t ia = item_index(u, a, j), ib = item_index(u, b, j);
        if (u->is_float) {
            double x = onnxi_const_f64(u->x, ia), y = onnxi_const_f64(u->x, ib);
            if (x != y) {
                return x < y ? -1 : 1;
            }
        } else if (u->is_u64) {
            uint64_t x = ((const uint64_t *)u->x->data)[ia], y = ((const uint64_t *)u->x->data)[ib];
            if (x != y) {
                return x < y ? -1 : 1;
            }
        } else {
            int64_t x = onnxi_const_i64(u->x, ia), y = onnxi_const_i64(u->x, ib);
            if (x != y) {
                return x < y ? -1 : 1;
            }
        }
    }
    return 0;
}

/* A constant int64 [n] bound to output k (when the node names it). */
static plx_status bind_i64(onnxi_ctx *c, onnxi_node *n, size_t k, int64_t *data, size_t count) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    info.rank = 1;
    info.dims[0] = (int64_t)count;
    onnxi_value *v = NULL;
    plx_status st = onnxi_const_take(c, &info, data, &v);
    return st ? st : onnxi_bind_out(c, n, k, v);
}

/* Unique(X): its distinct elements (or slices along `axis`), sorted or in
 * order of first occurrence, with the index of each one's first
 * occurrence, each item's index among them, and their counts. Computed
 * here from X's values. */
plx_status onnxi_conv_unique(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (!st) {
        st = onnxi_need_const(n, 0, "X, whose values decide the outputs' shapes");
    }
    if (st) {
        return st;
    }
    const onnxi_value *x = n->in[0];
    unique_view u = {x, onnxi_elem_count(&x->info), 1, 1, 1, onnxi_dtype_is_float(x->info.dtype),
                     x->info.dtype == PLX_DTYPE_UINT64};
    bool has_axis = onnxi_attr(n, "axis") != NULL, sorted = onnxi_attr_i(n, "sorted", 1) != 0;
    int64_t axis = onnxi_attr_i(n, "axis", 0), rank = x->info.rank;
    if (has_axis) {
        if (axis < -rank || axis >= rank) {
            return onnxi_invalid(c, n, "axis %lld is out of range for rank %lld",
                                 (long long)axis, (long long)rank);
        }
        axis += axis < 0 ? rank : 0;
        u.count = (size_t)x->info.dims[axis];
        for (int64_t d = 0; d < rank; d++) {
            u.outer *= d < axis ? (size_t)x->info.dims[d] : 1;
            u.inner *= d > axis ? (size_t)x->info.dims[d] : 1;
        }
        u.width = u.outer * u.inner;
    }
    /* firsts: the first occurrence of each distinct item, in order of
     * occurrence; then sorted when asked (insertion: the values are at
     * most a few thousand, being known at import). */
    size_t *firsts = malloc((u.count + 1) * sizeof *firsts), k = 0;
    int64_t *inverse = malloc((u.count + 1) * sizeof *inverse);
    if (!firsts || !inverse) {
        free(firsts);
        free(inverse);
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
    }
    for (size_t i = 0; i < u.count; i++) {
        size_t f = 0;
        while (f < k && item_cmp(&u, firsts[f], i) != 0) {
            f++;
        }
        if (f == k) {
            firsts[k++] = i;
        }
    }
    for (size_t a = 1; sorted && a < k; a++) {
        size_t item = firsts[a], b = a;
        for (; b > 0 && item_cmp(&u, firsts[b - 1], item) > 0; b--) {
            firsts[b] = firsts[b - 1];
        }
        firsts[b] = item;
    }
    int64_t *indices = malloc((k + 1) * sizeof *indices);
    int64_t *counts = calloc(k + 1, sizeof *counts);
    plx_tensor_info yi = x->info;
    yi.quant.kind = PLX_QUANT_NONE;
    if (has_axis) {
        yi.dims[axis] = (int64_t)k;
    } else {
        memset(yi.dims, 0, sizeof yi.dims);
        yi.rank = 1;
        yi.dims[0] = (int64_t)k;
    }
    size_t esize = plx_dtype_size(x->info.dtype);
    unsigned char *y = NULL;
    st = indices && counts ? onnxi_alloc_const(c, n, &yi, (void **)&y)
                           : plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
    for (size_t i = 0; !st && i < u.count; i++) {
        size_t f = 0;
        while (item_cmp(&u, firsts[f], i) != 0) {
            f++;
        }
        inverse[i] = (int64_t)f;
        counts[f]++;
    }
    /* Y: item firsts[f] at position f (along the axis, or flat). */
    unique_view out = u;
    out.count = k;
    for (size_t f = 0; !st && f < k; f++) {
        indices[f] = (int64_t)firsts[f];
        for (size_t j = 0; j < u.width; j++) {
            memcpy(y + item_index(&out, f, j) * esize,
                   (const unsigned char *)x->data + item_index(&u, firsts[f], j) * esize, esize);
        }
    }
    free(firsts);
    onnxi_value *yv = NULL;
    if (!st) {
        st = onnxi_const_take(c, &yi, y, &yv);
        y = NULL;
    }
    if (!st) {
        st = onnxi_bind_out(c, n, 0, yv);
    }
    /* bind_i64 takes the arrays; those not reached are freed here. */
    if (!st) {
        st = bind_i64(c, n, 1, indices, k);
        indices = NULL;
    }
    if (!st) {
        st = bind_i64(c, n, 2, inverse, u.count);
        inverse = NULL;
    }
    if (!st) {
        st = bind_i64(c, n, 3, counts, k);
        counts = NULL;
    }
    free(y);
    free(indices);
    free(inverse);
    free(counts);
    return st;
}
