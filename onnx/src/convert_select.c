/* Operators whose output's shape depends on their input's values: NonZero
 * and Compress. Backends see static shapes only, so what decides the shape
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
