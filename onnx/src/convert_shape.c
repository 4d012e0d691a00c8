/* The ONNX converters for shapes, constants and data movement: Identity,
 * Constant, ConstantOfShape, Shape, Size, Range; Reshape, Flatten,
 * Transpose, Concat, Split, Slice, Pad, Squeeze/Unsqueeze, Gather, Expand,
 * Tile, DepthToSpace/SpaceToDepth and ReverseSequence (Resize is
 * convert_sample.c's). One
 * family per file keeps each converter file short. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- identity-like and constants ---------------------------------------- */

plx_status onnxi_conv_identity(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    if (strcmp(n->proto->op_type, "Dropout") == 0) {
        if (c->opset >= 12 && onnxi_has_in(n, 2)) {
            st = onnxi_need_const(n, 2, "training_mode");
            if (st) {
                return st;
            }
            if (onnxi_const_i64(n->in[2], 0)) {
                /* training: each element dropped with probability ratio
                 * (0.5 by default); only ratio 0, which drops nothing and
                 * scales by 1 / (1 - 0), is deterministic */
                double ratio = 0.5;
                if (onnxi_has_in(n, 1)) {
                    if ((st = onnxi_need_const(n, 1, "ratio"))) {
                        return st;
                    }
                    ratio = onnxi_const_f64(n->in[1], 0);
                }
                if (ratio != 0.0) {
                    return ONNXI_UNSUPPORTED("training_mode is true with ratio %g (random)",
                                             ratio);
                }
            }
        }
        if (n->n_out > 1) {
            /* The mask of an inference dropout, or of a training one
             * with ratio 0, is all true. */
            plx_tensor_info info = n->in[0]->info;
            info.dtype = PLX_DTYPE_BOOL;
            info.quant.kind = PLX_QUANT_NONE;
            void *ones;
            st = onnxi_alloc_const(c, n, &info, &ones);
            if (st) {
                return st;
            }
            memset(ones, 1, onnxi_elem_count(&info));
            onnxi_value *mask;
            st = onnxi_const_take(c, &info, ones, &mask);
            if (!st) {
                st = onnxi_bind_out(c, n, 1, mask);
            }
            if (st) {
                return st;
            }
        }
    }
    return onnxi_bind_out(c, n, 0, n->in[0]);
}

static plx_status tensor_attr_const(onnxi_ctx *c, onnxi_node *n, const Onnx__TensorProto *t,
                                    onnxi_value **out) {
    char *what = onnxi_asprintf("%s: node '%s' (%s): its tensor", c->file, n->name,
                                n->proto->op_type);
    if (!what) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    plx_tensor_info info;
    void *data;
    plx_status st = onnxi_tensor_decode(t, what, c->base_dir, &info, &data);
    free(what);
    if (st && plx_status_get_code(st) == PLX_UNSUPPORTED) {
        /* The reason without the file prefix: the report adds the node. */
        plx_status r = ONNXI_UNSUPPORTED("%s", plx_status_get_message(st));
        plx_status_free(st);
        return r;
    }
    return st ? st : onnxi_const_take(c, &info, data, out);
}

plx_status onnxi_conv_constant(onnxi_ctx *c, onnxi_node *n) {
    const Onnx__AttributeProto *a;
    onnxi_value *v = NULL;
    plx_status st = NULL;
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    if ((a = onnxi_attr(n, "value")) && a->t) {
        st = tensor_attr_const(c, n, a->t, &v);
    } else if ((a = onnxi_attr(n, "value_float")) && a->has_f) {
        info.dtype = PLX_DTYPE_FLOAT32;
        st = onnxi_const_copy(c, &info, &a->f, &v);
    } else if ((a = onnxi_attr(n, "value_int")) && a->has_i) {
        info.dtype = PLX_DTYPE_INT64;
        st = onnxi_const_copy(c, &info, &a->i, &v);
    } else if ((a = onnxi_attr(n, "value_floats"))) {
        info.dtype = PLX_DTYPE_FLOAT32;
        info.rank = 1;
        info.dims[0] = (int64_t)a->n_floats;
        st = onnxi_const_copy(c, &info, a->n_floats ? (const void *)a->floats : "", &v);
    } else if ((a = onnxi_attr(n, "value_ints"))) {
        info.dtype = PLX_DTYPE_INT64;
        info.rank = 1;
        info.dims[0] = (int64_t)a->n_ints;
        st = onnxi_const_copy(c, &info, a->n_ints ? (const void *)a->ints : "", &v);
    } else if (onnxi_attr(n, "sparse_value") || onnxi_attr(n, "value_string") ||
               onnxi_attr(n, "value_strings")) {
        return ONNXI_UNSUPPORTED("sparse and string constants are not supported");
    } else {
        return onnxi_invalid(c, n, "has no value attribute");
    }
    return st ? st : onnxi_bind_out(c, n, 0, v);
}

plx_status onnxi_conv_constant_of_shape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (!st) {
        st = onnxi_const_ints(n, 0, "shape", dims, PLX_MAX_RANK, &rank);
    }
    if (st) {
        return st;
    }
    onnxi_value *fill = NULL;
    const Onnx__AttributeProto *a = onnxi_attr(n, "value");
    if (a && a->t) {
        st = tensor_attr_const(c, n, a->t, &fill);
        if (st) {
            return st;
        }
        if (onnxi_elem_count(&fill->info) != 1) {
            return onnxi_invalid(c, n, "value must hold one element");
        }
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = fill ? fill->info.dtype : PLX_DTYPE_FLOAT32;
    info.rank = (uint32_t)rank;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            return onnxi_invalid(c, n, "shape[%zu] = %lld is negative", i, (long long)dims[i]);
        }
        info.dims[i] = dims[i];
    }
    void *mem;
    st = onnxi_alloc_const(c, n, &info, &mem);
    if (st) {
        return st;
    }
    unsigned char *data = mem;
    size_t count = onnxi_elem_count(&info);
    size_t es = plx_dtype_size(info.dtype);
    for (size_t i = 0; fill && i < count; i++) {
        memcpy(data + i * es, fill->data, es);
    }
    onnxi_value *v;
    st = onnxi_const_take(c, &info, data, &v);
    return st ? st : onnxi_bind_out(c, n, 0, v);
}

plx_status onnxi_conv_shape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    int64_t r = x->rank;
    int64_t start = onnxi_attr_i(n, "start", 0), end = onnxi_attr_i(n, "end", r);
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    int64_t dims[PLX_MAX_RANK];
    size_t count = 0;
    for (int64_t i = start; i < end; i++) {
        dims[count++] = x->dims[i];
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    info.rank = 1;
    info.dims[0] = (int64_t)count;
    onnxi_value *v;
    st = onnxi_const_copy(c, &info, dims, &v);
    return st ? st : onnxi_bind_out(c, n, 0, v);
}

plx_status onnxi_conv_size(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    int64_t count = (int64_t)onnxi_elem_count(&n->in[0]->info);
    onnxi_value *v;
    st = onnxi_const_copy(c, &info, &count, &v);
    return st ? st : onnxi_bind_out(c, n, 0, v);
}

plx_status onnxi_conv_range(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    for (size_t i = 0; i < 3 && !st; i++) {
        static const char *const roles[] = {"start", "limit", "delta"};
        st = onnxi_need_const(n, i, roles[i]);
        if (!st && onnxi_elem_count(&n->in[i]->info) != 1) {
            st = onnxi_invalid(c, n, "input %zu (%s) must be a scalar", i, roles[i]);
        }
    }
    if (st) {
        /* Its output's length depends on the values: without them the
         * shape is not static. */
        return st;
    }
    plx_dtype dt = n->in[0]->info.dtype;
    double start = onnxi_const_f64(n->in[0], 0), limit = onnxi_const_f64(n->in[1], 0),
           delta = onnxi_const_f64(n->in[2], 0);
    if (delta == 0) {
        return onnxi_invalid(c, n, "delta is 0");
    }
    double steps = ceil((limit - start) / delta);
    if (!(steps < 1e9)) {
        return onnxi_invalid(c, n, "the range has too many elements");
    }
    size_t count = steps > 0 ? (size_t)steps : 0;
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    info.rank = 1;
    info.dims[0] = (int64_t)count;
    void *mem;
    st = onnxi_alloc_const(c, n, &info, &mem);
    if (st) {
        return st;
    }
    unsigned char *data = mem;
    for (size_t i = 0; i < count; i++) {
        switch (dt) {
        case PLX_DTYPE_FLOAT32: {
            float s = (float)start, d = (float)delta;
            ((float *)(void *)data)[i] = s + (float)i * d;
            break;
        }
        case PLX_DTYPE_FLOAT64:
            ((double *)(void *)data)[i] = start + (double)i * delta;
            break;
        case PLX_DTYPE_INT64: {
            int64_t s = onnxi_const_i64(n->in[0], 0), d = onnxi_const_i64(n->in[2], 0);
            ((int64_t *)(void *)data)[i] = s + (int64_t)i * d;
            break;
        }
        case PLX_DTYPE_INT32:
            ((int32_t *)(void *)data)[i] = (int32_t)(onnxi_const_i64(n->in[0], 0) +
                                                     (int64_t)i * onnxi_const_i64(n->in[2], 0));
            break;
        case PLX_DTYPE_INT16:
            ((int16_t *)(void *)data)[i] = (int16_t)(onnxi_const_i64(n->in[0], 0) +
                                                     (int64_t)i * onnxi_const_i64(n->in[2], 0));
            break;
        default:
            free(data);
            return ONNXI_UNSUPPORTED("Range of %s", plx_dtype_name(dt));
        }
    }
    onnxi_value *v;
    st = onnxi_const_take(c, &info, data, &v);
    return st ? st : onnxi_bind_out(c, n, 0, v);
}
/* ---- data movement ------------------------------------------------------ */

plx_status onnxi_conv_reshape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (c->opset < 5) {
        st = onnxi_attr_ints(n, "shape", dims, PLX_MAX_RANK, &rank, NULL);
    } else {
        st = onnxi_need_inputs(c, n, 2);
        if (!st) {
            st = onnxi_const_ints(n, 1, "shape", dims, PLX_MAX_RANK, &rank);
        }
    }
    if (st) {
        return st;
    }
    for (size_t i = 0; i < rank; i++) {
        d.dims[i] = dims[i];
    }
    d.rank = (uint32_t)rank;
    d.allow_zero = onnxi_attr_i(n, "allowzero", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_RESHAPE, &d, n->in, 1);
}

plx_status onnxi_conv_flatten(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(onnxi_attr_i32(n, "axis", 1));
    return onnxi_emit1(c, n, PLX_OP_FLATTEN, &d, n->in, 1);
}

plx_status onnxi_conv_transpose(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    int64_t perm[PLX_MAX_RANK];
    size_t count;
    st = onnxi_attr_ints(n, "perm", perm, PLX_MAX_RANK, &count, NULL);
    if (st) {
        return st;
    }
    for (size_t i = 0; i < count; i++) {
        if (perm[i] < 0 || perm[i] >= PLX_MAX_RANK) {
            return onnxi_invalid(c, n, "perm[%zu] = %lld is out of range", i, (long long)perm[i]);
        }
        d.perm[i] = (uint32_t)perm[i];
    }
    d.perm_count = (uint32_t)count;
    return onnxi_emit1(c, n, PLX_OP_TRANSPOSE, &d, n->in, 1);
}

plx_status onnxi_conv_concat(onnxi_ctx *c, onnxi_node *n) {
    if (n->n_in == 0) {
        return onnxi_invalid(c, n, "needs at least one input");
    }
    plx_status st = onnxi_need_inputs(c, n, n->n_in);
    if (st) {
        return st;
    }
    const Onnx__AttributeProto *a = onnxi_attr(n, "axis");
    if (!a || !a->has_i) {
        return onnxi_invalid(c, n, "attribute axis is required");
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(onnxi_attr_i32(n, "axis", 0));
    return onnxi_emit1(c, n, PLX_OP_CONCAT, &d, n->in, (uint32_t)n->n_in);
}

plx_status onnxi_conv_split(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    size_t n_out = n->proto->n_output;
    if (n_out == 0 || n_out > 16) {
        return ONNXI_UNSUPPORTED("%zu outputs", n_out);
    }
    int64_t sizes[16];
    size_t count = 0;
    bool present = false;
    if (c->opset < 13) {
        st = onnxi_attr_ints(n, "split", sizes, 16, &count, &present);
    } else if (onnxi_has_in(n, 1)) {
        st = onnxi_const_ints(n, 1, "split", sizes, 16, &count);
        present = true;
    }
    if (st) {
        return st;
    }
    if (present && (st = onnxi_check_count(c, n, c->opset < 13 ? "attribute 'split'"
                                                                : "input 1 (split)",
                                           count, n_out, "one per output"))) {
        return st;
    }
    plx_split_desc d = PLX_SPLIT_DESC_INIT(onnxi_attr_i32(n, "axis", 0));
    d.sizes = present ? sizes : NULL;
    onnxi_value *outs[16];
    st = onnxi_emit(c, n, PLX_OP_SPLIT, &d, n->in, 1, (uint32_t)n_out, outs);
    for (size_t i = 0; i < n_out && !st; i++) {
        st = onnxi_bind_out(c, n, i, outs[i]);
    }
    return st;
}

plx_status onnxi_conv_slice(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    int64_t starts[PLX_MAX_RANK], ends[PLX_MAX_RANK], axes[PLX_MAX_RANK], steps[PLX_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    bool has_axes = false, has_steps = false;
    if (c->opset < 10) {
        st = onnxi_attr_ints(n, "starts", starts, PLX_MAX_RANK, &ns, NULL);
        if (!st) {
            st = onnxi_attr_ints(n, "ends", ends, PLX_MAX_RANK, &ne, NULL);
        }
        if (!st) {
            st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &na, &has_axes);
        }
    } else {
        st = onnxi_need_inputs(c, n, 3);
        if (!st) {
            st = onnxi_const_ints(n, 1, "starts", starts, PLX_MAX_RANK, &ns);
        }
        if (!st) {
            st = onnxi_const_ints(n, 2, "ends", ends, PLX_MAX_RANK, &ne);
        }
        if (!st && onnxi_has_in(n, 3)) {
            has_axes = true;
            st = onnxi_const_ints(n, 3, "axes", axes, PLX_MAX_RANK, &na);
        }
        if (!st && onnxi_has_in(n, 4)) {
            has_steps = true;
            st = onnxi_const_ints(n, 4, "steps", steps, PLX_MAX_RANK, &nst);
        }
    }
    if (st) {
        return st;
    }
    bool attrs = c->opset < 10;
    const char *per = "one per value of starts";
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    if ((st = onnxi_check_count(c, n, attrs ? "attribute 'ends'" : "input 2 (ends)", ne, ns,
                                per)) ||
        (has_axes && (st = onnxi_check_count(c, n, attrs ? "attribute 'axes'" : "input 3 (axes)",
                                             na, ns, per))) ||
        (has_steps && (st = onnxi_check_count(c, n, "input 4 (steps)", nst, ns, per))) ||
        (has_axes && (st = onnxi_axes(c, n, attrs ? "attribute 'axes'" : "input 3 (axes)", axes,
                                      na, n->in[0]->info.rank, d.axes)))) {
        return st;
    }
    for (size_t i = 0; i < ns; i++) {
        d.starts[i] = starts[i];
        d.ends[i] = ends[i];
        d.axes[i] = has_axes ? d.axes[i] : (int32_t)i;
        d.steps[i] = has_steps ? steps[i] : 1;
    }
    d.count = (uint32_t)ns;
    return onnxi_emit1(c, n, PLX_OP_SLICE, &d, n->in, 1);
}

/* Constant padding with a value computed at run time: the input padded
 * with zeros, then Where(mask, padded, value), the mask (true where the
 * input lands) folded at import from a padded tensor of ones. */
static plx_status pad_with_runtime_value(onnxi_ctx *c, onnxi_node *n, const plx_pad_desc *d) {
    onnxi_value *value = n->in[2];
    if (value->info.dtype != n->in[0]->info.dtype || onnxi_elem_count(&value->info) != 1) {
        return onnxi_invalid(c, n, "constant_value must be one value of the input's type");
    }
    plx_tensor_info ones_info = n->in[0]->info;
    ones_info.dtype = PLX_DTYPE_FLOAT32;
    ones_info.quant.kind = PLX_QUANT_NONE;
    float *ones = NULL;
    plx_status st = onnxi_alloc_const(c, n, &ones_info, (void **)&ones);
    onnxi_value *v_ones = NULL, *padded_ones = NULL, *mask = NULL, *padded = NULL;
    if (!st) {
        for (size_t i = 0; i < onnxi_elem_count(&ones_info); i++) {
            ones[i] = 1.0f;
        }
        st = onnxi_const_take(c, &ones_info, ones, &v_ones);
    }
    plx_pad_desc zero = *d;
    zero.value = 0.0;
    plx_cast_desc to_bool = PLX_CAST_DESC_INIT(PLX_DTYPE_BOOL);
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_PAD, &zero, &v_ones, 1, 1, &padded_ones);
    }
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_CAST, &to_bool, &padded_ones, 1, 1, &mask);
    }
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_PAD, &zero, n->in, 1, 1, &padded);
    }
    onnxi_value *where_in[3] = {mask, padded, value};
    return st ? st : onnxi_emit1(c, n, PLX_OP_WHERE, NULL, where_in, 3);
}

plx_status onnxi_conv_pad(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    char buf[32];
    const char *mode = onnxi_attr_s(n, "mode", "constant", buf, sizeof buf);
    plx_pad_mode m;
    if (strcmp(mode, "constant") == 0) {
        m = PLX_PAD_CONSTANT;
    } else if (strcmp(mode, "reflect") == 0) {
        m = PLX_PAD_REFLECT;
    } else if (strcmp(mode, "edge") == 0) {
        m = PLX_PAD_EDGE;
    } else if (strcmp(mode, "wrap") == 0) {
        m = PLX_PAD_WRAP;
    } else {
        return ONNXI_UNSUPPORTED("mode='%s'", mode);
    }
    plx_pad_desc d = PLX_PAD_DESC_INIT(m);
    uint32_t rank = n->in[0]->info.rank;
    int64_t pads[2 * PLX_MAX_RANK], axes[PLX_MAX_RANK];
    size_t np = 0, na = 0;
    if (c->opset < 11) {
        st = onnxi_attr_ints(n, "pads", pads, 2 * PLX_MAX_RANK, &np, NULL);
        d.value = onnxi_attr_f(n, "value", 0.0f);
    } else {
        st = onnxi_need_inputs(c, n, 2);
        if (!st) {
            st = onnxi_const_ints(n, 1, "pads", pads, 2 * PLX_MAX_RANK, &np);
        }
        if (!st && onnxi_has_in(n, 2) && n->in[2]->kind == ONNXI_CONST) {
            d.value = onnxi_elem_count(&n->in[2]->info) ? onnxi_const_f64(n->in[2], 0) : 0.0;
        }
        if (!st && onnxi_has_in(n, 3)) {
            st = onnxi_const_ints(n, 3, "axes", axes, PLX_MAX_RANK, &na);
        }
    }
    if (st) {
        return st;
    }
    const char *what = c->opset < 11 ? "attribute 'pads'" : "input 1 (pads)";
    if (na == 0) {
        if ((st = onnxi_check_count(c, n, what, np, 2 * (size_t)rank, "two per dim of X"))) {
            return st;
        }
        for (uint32_t i = 0; i < rank; i++) {
            d.pads_begin[i] = pads[i];
            d.pads_end[i] = pads[rank + i];
        }
    } else {
        int32_t a[PLX_MAX_RANK];
        if ((st = onnxi_axes(c, n, "input 3 (axes)", axes, na, rank, a)) ||
            (st = onnxi_check_count(c, n, what, np, 2 * na, "two per axis"))) {
            return st;
        }
        for (size_t i = 0; i < na; i++) {
            d.pads_begin[a[i]] = pads[i];
            d.pads_end[a[i]] = pads[na + i];
        }
    }
    if (m == PLX_PAD_CONSTANT && onnxi_has_in(n, 2) && n->in[2]->kind != ONNXI_CONST) {
        return pad_with_runtime_value(c, n, &d);
    }
    return onnxi_emit1(c, n, PLX_OP_PAD, &d, n->in, 1);
}

plx_status onnxi_conv_squeeze(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool unsqueeze = strcmp(n->proto->op_type, "Unsqueeze") == 0;
    int64_t axes[PLX_MAX_RANK];
    size_t count = 0;
    if (c->opset < 13) {
        st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &count, NULL);
    } else if (onnxi_has_in(n, 1)) {
        st = onnxi_const_ints(n, 1, "axes", axes, PLX_MAX_RANK, &count);
    }
    if (st) {
        return st;
    }
    if (unsqueeze && count == 0) {
        return onnxi_invalid(c, n, "axes is required");
    }
    /* Unsqueeze's axes index its output */
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    uint32_t rank = n->in[0]->info.rank + (unsqueeze ? (uint32_t)count : 0);
    if ((st = onnxi_axes(c, n, c->opset < 13 ? "attribute 'axes'" : "input 1 (axes)", axes, count,
                         rank, d.axes))) {
        return st;
    }
    d.axis_count = (uint32_t)count;
    return onnxi_emit1(c, n, unsqueeze ? PLX_OP_UNSQUEEZE : PLX_OP_SQUEEZE, &d, n->in, 1);
}

plx_status onnxi_conv_gather(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(onnxi_attr_i32(n, "axis", 0));
    return onnxi_emit1(c, n, PLX_OP_GATHER, &d, n->in, 2);
}

plx_status onnxi_conv_expand(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (!st) {
        st = onnxi_const_ints(n, 1, "shape", dims, PLX_MAX_RANK, &rank);
    }
    if (st) {
        return st;
    }
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    for (size_t i = 0; i < rank; i++) {
        d.dims[i] = dims[i];
    }
    d.rank = (uint32_t)rank;
    return onnxi_emit1(c, n, PLX_OP_EXPAND, &d, n->in, 1);
}

plx_status onnxi_conv_tile(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    int64_t reps[PLX_MAX_RANK];
    size_t count;
    if (!st) {
        st = onnxi_const_ints(n, 1, "repeats", reps, PLX_MAX_RANK, &count);
    }
    if (st) {
        return st;
    }
    if ((st = onnxi_check_count(c, n, "input 1 (repeats)", count, n->in[0]->info.rank,
                                "one per dim of X"))) {
        return st;
    }
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    for (size_t i = 0; i < count; i++) {
        d.repeats[i] = reps[i];
    }
    return onnxi_emit1(c, n, PLX_OP_TILE, &d, n->in, 1);
}

plx_status onnxi_conv_depth_space(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool d2s = strcmp(n->proto->op_type, "DepthToSpace") == 0;
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(onnxi_attr_i(n, "blocksize", 0));
    char buf[16];
    const char *mode = onnxi_attr_s(n, "mode", "DCR", buf, sizeof buf);
    if (d2s && strcmp(mode, "CRD") == 0) {
        d.mode = PLX_DEPTH_SPACE_CRD;
    } else if (strcmp(mode, "DCR") != 0) {
        return ONNXI_UNSUPPORTED("mode='%s'", mode);
    }
    return onnxi_emit1(c, n, d2s ? PLX_OP_DEPTH_TO_SPACE : PLX_OP_SPACE_TO_DEPTH, &d, n->in, 1);
}

/* ReverseSequence (opset 10): X and sequence_lens (a tensor, read at run
 * time); batch_axis (default 1) and time_axis (default 0), 0 and 1 in
 * either order (the layer checks them). */
plx_status onnxi_conv_reverse_sequence(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_reverse_sequence_desc d = PLX_REVERSE_SEQUENCE_DESC_INIT;
    int64_t b = onnxi_attr_i(n, "batch_axis", 1), t = onnxi_attr_i(n, "time_axis", 0);
    if (!((b == 0 && t == 1) || (b == 1 && t == 0))) {
        return onnxi_invalid(c, n, "batch_axis %lld and time_axis %lld must be 0 and 1 in "
                             "either order", (long long)b, (long long)t);
    }
    d.batch_axis = (int32_t)b;
    d.time_axis = (int32_t)t;
    return onnxi_emit1(c, n, PLX_OP_REVERSE_SEQUENCE, &d, n->in, 2);
}
