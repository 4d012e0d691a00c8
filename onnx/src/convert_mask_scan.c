/* Converters of Trilu, OneHot, Hardmax and CumSum: each maps to one layer
 * (trilu, one_hot, hardmax, cum_sum), the inputs that act as attributes
 * (Trilu's k, OneHot's depth, CumSum's axis) read at import into the
 * descriptor; Hardmax before opset 13 coerces its input to 2-D, as
 * Softmax does. */
#include <math.h>
#include <string.h>

#include "onnx_internal.h"

/* The one value of a scalar (or one-element) integer input that must be
 * known at import. */
static plx_status const_int_scalar(const onnxi_ctx *c, onnxi_node *n, size_t i,
                                   const char *role, int64_t *out) {
    int64_t v[1];
    size_t cnt = 0;
    plx_status st = onnxi_const_ints(n, i, role, v, 1, &cnt);
    if (st) {
        return st;
    }
    if (cnt != 1) {
        return onnxi_invalid(c, n, "%s must have one element, it has none", role);
    }
    *out = v[0];
    return NULL;
}

/* Trilu (opset 14): k, when given, is input 1. */
plx_status onnxi_conv_trilu(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_trilu_desc d = PLX_TRILU_DESC_INIT;
    d.upper = onnxi_attr_i(n, "upper", 1) != 0;
    if (onnxi_has_in(n, 1)) {
        plx_dtype dt = n->in[1]->info.dtype;
        if (dt != PLX_DTYPE_INT64) {
            return onnxi_invalid(c, n, "k has type %s, expected int64", plx_dtype_name(dt));
        }
        if ((st = const_int_scalar(c, n, 1, "k", &d.k))) {
            return st;
        }
    }
    return onnxi_emit1(c, n, PLX_OP_TRILU, &d, n->in, 1);
}

/* OneHot (opset 9, 11): depth (input 1, any numeric type, cast to int64 as
 * ONNX says) goes into the descriptor; indices and values are the layer's
 * inputs. Negative indices in [-depth, -1] count from the end in both
 * opsets, as opset 11 says and as ONNX Runtime and ONNX's reference do for
 * opset 9 too. */
plx_status onnxi_conv_one_hot(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (!st) {
        st = onnxi_need_const(n, 1, "depth");
    }
    if (st) {
        return st;
    }
    const onnxi_value *dv = n->in[1];
    if (onnxi_elem_count(&dv->info) != 1) {
        return onnxi_invalid(c, n, "depth must have one element, it has %zu",
                             onnxi_elem_count(&dv->info));
    }
    plx_dtype dt = dv->info.dtype;
    plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(0);
    if (onnxi_dtype_is_float(dt)) {
        double v = onnxi_const_f64(dv, 0);
        if (!(v >= 1.0 && v < 9.2e18)) {
            return onnxi_invalid(c, n, "depth %g must be >= 1", v);
        }
        d.depth = (int64_t)v;
    } else if (dt == PLX_DTYPE_BOOL) {
        return onnxi_invalid(c, n, "depth has type bool, expected a numeric type");
    } else {
        d.depth = onnxi_const_i64(dv, 0);
    }
    if (d.depth < 1) {
        return onnxi_invalid(c, n, "depth %lld must be >= 1", (long long)d.depth);
    }
    d.axis = onnxi_attr_i32(n, "axis", -1);
    onnxi_value *in[2] = {n->in[0], n->in[2]};
    return onnxi_emit1(c, n, PLX_OP_ONE_HOT, &d, in, 2);
}

/* Hardmax: opset 13 along `axis` (default -1); before, the input is
 * coerced to 2-D at `axis` (default 1): flatten, hardmax along the last
 * axis, reshape back (as Softmax). */
plx_status onnxi_conv_hardmax(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    onnxi_value *x = n->in[0];
    int64_t rank = x->info.rank;
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    if (c->opset >= 13) {
        d.axis = onnxi_attr_i32(n, "axis", -1);
        return onnxi_emit1(c, n, PLX_OP_HARDMAX, &d, &x, 1);
    }
    int64_t axis = onnxi_attr_i(n, "axis", 1);
    if (axis < -rank || axis > rank || rank == 0) {
        return onnxi_invalid(c, n, "axis %lld is out of range for rank %lld", (long long)axis,
                             (long long)rank);
    }
    axis = axis < 0 ? axis + rank : axis;
    if (axis == rank - 1) {
        return onnxi_emit1(c, n, PLX_OP_HARDMAX, &d, &x, 1);
    }
    plx_axis_desc fd = PLX_AXIS_DESC_INIT((int32_t)axis);
    onnxi_value *flat, *hm, *out;
    st = onnxi_emit(c, n, PLX_OP_FLATTEN, &fd, &x, 1, 1, &flat);
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_HARDMAX, &d, &flat, 1, 1, &hm);
    }
    if (!st) {
        st = onnxi_reshape_to(c, n, hm, &x->info, &out);
    }
    return st ? st : onnxi_bind_out(c, n, 0, out);
}

/* CumSum (opset 11, 14): axis is input 1 (int32 or int64, one element). */
plx_status onnxi_conv_cum_sum(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_dtype dt = n->in[1]->info.dtype;
    if (dt != PLX_DTYPE_INT32 && dt != PLX_DTYPE_INT64) {
        return onnxi_invalid(c, n, "axis has type %s, expected int32 or int64",
                             plx_dtype_name(dt));
    }
    int64_t axis = 0;
    if ((st = const_int_scalar(c, n, 1, "axis", &axis))) {
        return st;
    }
    int64_t rank = n->in[0]->info.rank;
    if (axis < -rank || axis >= rank) {
        return onnxi_invalid(c, n, "axis %lld is out of range [-%lld, %lld) for rank %lld",
                             (long long)axis, (long long)rank, (long long)rank, (long long)rank);
    }
    plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT((int32_t)axis);
    d.exclusive = onnxi_attr_i(n, "exclusive", 0) != 0;
    d.reverse = onnxi_attr_i(n, "reverse", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_CUM_SUM, &d, n->in, 1);
}
