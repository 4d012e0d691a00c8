/* Shape inference of elementwise operators, normalisations, softmax and
 * reductions. */
#include <math.h>
#include <stdio.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */

static plx_status plxi_infer_activation(const layer_ctx *c) {
    const plx_activation_desc *d = c->desc;
    if ((unsigned)d->func > PLX_ACT_SHRINK) {
        return plxi_fail(c, "func %d is not a plx_activation_func", (int)d->func);
    }
    unsigned mask = DT_FLOAT;
    if (d->func == PLX_ACT_RELU) {
        mask |= DT_SINT; /* ONNX Relu: signed integers too */
    } else if (d->func == PLX_ACT_CLIP) {
        mask |= DT_INT; /* ONNX Clip: every numeric type */
    } else if (d->func == PLX_ACT_CELU) {
        mask = DT(FLOAT32); /* ONNX Celu: float32 only */
    } else if (d->func == PLX_ACT_SHRINK) {
        mask |= DT_INT; /* ONNX Shrink: every numeric type */
    }
    plx_status s = plxi_check_dtype(c, 0, mask, plx_activation_func_name(d->func));
    if (s) {
        return s;
    }
    if (isnan(d->alpha) || isnan(d->beta)) {
        return plxi_fail(c, "alpha %g and beta %g must not be NaN", (double)d->alpha,
                         (double)d->beta);
    }
    if (d->func == PLX_ACT_CELU && d->alpha == 0.0f) {
        return plxi_fail(c, "alpha 0 must be non-zero for celu (it divides x)");
    }
    plxi_same_as_input(c, c->in[0].dtype);
    return NULL;
}

static plx_status plxi_infer_unary(const layer_ctx *c) {
    const plx_unary_desc *d = c->desc;
    if ((unsigned)d->func > PLX_UNARY_BITWISE_NOT) {
        return plxi_fail(c, "func %d is not a plx_unary_func", (int)d->func);
    }
    unsigned mask = DT_FLOAT; /* also sin .. atanh and round */
    if (d->func == PLX_UNARY_ABS) {
        mask = DT_NUM;
    } else if (d->func == PLX_UNARY_NEG || d->func == PLX_UNARY_SIGN) {
        mask = DT_FLOAT | DT_SINT;
    } else if (d->func == PLX_UNARY_NOT) {
        mask = DT(BOOL);
    } else if (d->func == PLX_UNARY_BITWISE_NOT) {
        mask = DT_INT;
    }
    plx_status s = plxi_check_dtype(c, 0, mask, plx_unary_func_name(d->func));
    if (s) {
        return s;
    }
    /* is_nan and the is_inf tests: bool, as the comparisons */
    plxi_same_as_input(c, plx_unary_func_is_test(d->func) ? PLX_DTYPE_BOOL : c->in[0].dtype);
    return NULL;
}

static plx_status plxi_infer_binary(const layer_ctx *c) {
    const plx_binary_desc *d = c->desc;
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    if ((unsigned)d->func > PLX_BINARY_SHIFT_RIGHT) {
        return plxi_fail(c, "func %d is not a plx_binary_func", (int)d->func);
    }
    plx_binary_func f = d->func;
    bool logical = plx_binary_func_is_logical(f);
    bool compare = plx_binary_func_is_compare(f);
    unsigned mask = DT_NUM;
    if (f == PLX_BINARY_POW) {
        mask = DT_FLOAT | DT(INT32) | DT(INT64);
    } else if (f == PLX_BINARY_PRELU) {
        mask = DT_WIDE; /* ONNX PRelu */
    } else if (f == PLX_BINARY_EQUAL) {
        mask = DT_ANY;
    } else if (logical) {
        mask = DT(BOOL);
    } else if (f == PLX_BINARY_SHIFT_LEFT || f == PLX_BINARY_SHIFT_RIGHT) {
        mask = DT_UINT; /* ONNX BitShift: unsigned types */
    } else if (plx_binary_func_is_bitwise(f)) {
        mask = DT_INT;
    }
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, mask,
                              plx_binary_func_name(f))) || (s = plxi_check_same_dtype(c, 1, 0))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (f == PLX_BINARY_PRELU) {
        /* The slope broadcasts to X's shape (unidirectionally): Y is A's shape. */
        if (!plxi_broadcasts_to(b->dims, b->rank, a->dims, a->rank)) {
            return plxi_fail(c, "slope B %s does not broadcast to the shape of A %s", SHP(b),
                             SHP(a));
        }
        plxi_same_as_input(c, a->dtype);
        return NULL;
    }
    if (!plxi_broadcast(a->dims, a->rank, b->dims, b->rank, dims, &r)) {
        return plxi_fail(c, "A %s and B %s do not broadcast", SHP(a), SHP(b));
    }
    plxi_info_init(c->out, compare || logical ? PLX_DTYPE_BOOL : a->dtype, r);
    plxi_info_set_dims(c->out, dims, r);
    return NULL;
}

static plx_status plxi_infer_where(const layer_ctx *c) {
    const plx_tensor_info *cond = &c->in[0], *x = &c->in[1], *y = &c->in[2];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT(BOOL), NULL)) || (s = plxi_check_same_dtype(c, 2, 1))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (!plxi_broadcast(cond->dims, cond->rank, x->dims, x->rank, dims, &r) ||
        !plxi_broadcast(dims, r, y->dims, y->rank, dims, &r)) {
        return plxi_fail(c, "condition %s, X %s and Y %s do not broadcast", SHP(cond), SHP(x),
                         SHP(y));
    }
    plxi_info_init(c->out, x->dtype, r);
    plxi_info_set_dims(c->out, dims, r);
    return NULL;
}

static plx_status plxi_infer_cast(const layer_ctx *c) {
    const plx_cast_desc *d = c->desc;
    if (plx_dtype_size(d->to) == 0) {
        return plxi_fail(c, "to %d is not a valid dtype", (int)d->to);
    }
    plxi_same_as_input(c, d->to);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Normalisation                                                            */

static plx_status check_epsilon(const layer_ctx *c, float eps) {
    if (!(eps >= 0.0f) || !isfinite(eps)) {
        return plxi_fail(c, "epsilon %g must be finite and >= 0", (double)eps);
    }
    return NULL;
}

static plx_status plxi_infer_batch_norm(const layer_ctx *c) {
    const plx_batch_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 2,
                                                                             PLX_MAX_RANK)) ||
        (s = check_epsilon(c, d->epsilon))) {
        return s;
    }
    for (uint32_t i = 1; i < 5; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = plxi_check_same_dtype(c, i, 0))) {
            return s;
        }
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return plxi_fail(c, "%s %s must be [" I64 "], one value per channel of X %s", ROLE(c,
                                                                                               i),
                             SHP(p), x->dims[1], SHP(x));
        }
    }
    plxi_same_as_input(c, x->dtype);
    return NULL;
}

static plx_status plxi_infer_layer_norm(const layer_ctx *c) {
    const plx_layer_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_epsilon(c, d->epsilon)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    plx_tensor_info norm;
    plxi_info_init(&norm, x->dtype, 0);
    plxi_info_set_dims(&norm, x->dims + axis, x->rank - axis);
    for (uint32_t i = 1; i < c->n_in; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = plxi_check_same_dtype(c, i, 0))) {
            return s;
        }
        if (!plxi_broadcasts_to(p->dims, p->rank, norm.dims, norm.rank)) {
            return plxi_fail(c, "%s %s does not broadcast to the normalised dims %s of X %s",
                             ROLE(c, i),
                             SHP(p), SHP(&norm), SHP(x));
        }
    }
    plxi_same_as_input(c, x->dtype);
    return NULL;
}

/* ONNX InstanceNormalization: X [N, C, D1, ...], scale and bias [C]. */
static plx_status plxi_infer_instance_norm(const layer_ctx *c) {
    const plx_instance_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 3,
                                                                             PLX_MAX_RANK)) ||
        (s = check_epsilon(c, d->epsilon))) {
        return s;
    }
    for (uint32_t i = 1; i < 3; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = plxi_check_same_dtype(c, i, 0))) {
            return s;
        }
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return plxi_fail(c, "%s %s must be [" I64 "], one value per channel of X %s", ROLE(c,
                                                                                               i),
                             SHP(p), x->dims[1], SHP(x));
        }
    }
    plxi_same_as_input(c, x->dtype);
    return NULL;
}

plx_status plxi_infer_float_along_axis(const layer_ctx *c, int32_t axis) {
    uint32_t a = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) ||
        (s = plxi_check_axis(c, "axis", axis, 0, false, &a))) {
        return s;
    }
    plxi_same_as_input(c, c->in[0].dtype);
    return NULL;
}

static plx_status plxi_infer_softmax(const layer_ctx *c) {
    return plxi_infer_float_along_axis(c, ((const plx_softmax_desc *)c->desc)->axis);
}

static plx_status plxi_infer_reduce(const layer_ctx *c) {
    const plx_reduce_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    static const char *const names[] = {"mean", "max", "min", "sum", "prod", "l1", "l2",
                                        "sum_square", "log_sum", "log_sum_exp"};
    if ((unsigned)d->func > PLX_REDUCE_LOG_SUM_EXP) {
        return plxi_fail(c, "func %d is not a plx_reduce_func", (int)d->func);
    }
    /* ONNX ReduceProd, L1, L2, SumSquare, LogSum, LogSumExp: floats and
     * the 32- and 64-bit integers; mean, max, min and sum: every numeric
     * type. */
    unsigned mask = d->func <= PLX_REDUCE_SUM ? DT_NUM : DT_WIDE;
    if ((s = plxi_check_dtype(c, 0, mask, names[d->func]))) {
        return s;
    }
    if (d->axis_count > PLX_MAX_RANK) {
        return plxi_fail(c, "axis_count %" PRIu32 " is more than %d", d->axis_count, PLX_MAX_RANK);
    }
    bool reduced[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        if ((s = plxi_check_axis(c, field, d->axes[i], 0, false, &a))) {
            return s;
        }
        if (reduced[a]) {
            return plxi_fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i,
                             d->axes[i], a);
        }
        reduced[a] = true;
    }
    if (d->axis_count == 0) {
        if (d->noop_with_empty_axes) {
            plxi_same_as_input(c, x->dtype);
            return NULL;
        }
        for (uint32_t i = 0; i < x->rank; i++) {
            reduced[i] = true;
        }
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (!reduced[i]) {
            dims[r++] = x->dims[i];
        } else if (d->keepdims) {
            dims[r++] = 1;
        }
    }
    plxi_info_init(c->out, x->dtype, r);
    plxi_info_set_dims(c->out, dims, r);
    return NULL;
}

/* ONNX ArgMax / ArgMin: int64 indices along one axis. */
static plx_status plxi_infer_arg_reduce(const layer_ctx *c) {
    const plx_arg_reduce_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_NUM, d->select_min ? "argmin" : "argmax")) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    bool empty_out = false;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != axis) {
            empty_out = empty_out || x->dims[i] == 0;
            dims[r++] = x->dims[i];
        } else if (d->keepdims) {
            dims[r++] = 1;
        }
    }
    if (x->dims[axis] == 0 && !empty_out) {
        return plxi_fail(c, "axis %" PRIu32 " of X %s is empty: there is no %s to index", axis,
                         SHP(x),
                         d->select_min ? "minimum" : "maximum");
    }
    plxi_info_init(c->out, PLX_DTYPE_INT64, r);
    plxi_info_set_dims(c->out, dims, r);
    return NULL;
}

/* ONNX TopK: values (X's dtype) and int64 indices, k along the axis. */
static plx_status plxi_infer_topk(const layer_ctx *c) {
    const plx_topk_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_NUM, NULL)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    if (d->k < 0) {
        return plxi_fail(c, "k " I64 " must be >= 0", d->k);
    }
    if (d->k > x->dims[axis]) {
        return plxi_fail(c, "k " I64 " is larger than axis %" PRIu32 " of X %s (size " I64 ")",
                         d->k,
                         axis, SHP(x), x->dims[axis]);
    }
    /* Multi-output: written only now that nothing can fail. */
    plx_tensor_info *values = &c->out[0], *indices = &c->out[1];
    plxi_info_init(values, x->dtype, x->rank);
    plxi_info_set_dims(values, x->dims, x->rank);
    values->dims[axis] = d->k;
    values->quant = plxi_moved_quant(x);
    plxi_info_init(indices, PLX_DTYPE_INT64, x->rank);
    plxi_info_set_dims(indices, values->dims, x->rank);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operator table's rows (infer_internal.h, PLXI_OP_ROW)                */

PLXI_OP_ROW(ACTIVATION, 1, 1, 1, 1, ROLES("X"), plxi_infer_activation);
PLXI_OP_ROW(UNARY, 1, 1, 1, 1, ROLES("X"), plxi_infer_unary);
PLXI_OP_ROW(BINARY, 2, 2, 1, 1, ROLES("A", "B"), plxi_infer_binary);
PLXI_OP_ROW(WHERE, 3, 3, 1, 1, ROLES("condition", "X", "Y"), plxi_infer_where);
PLXI_OP_ROW(CAST, 1, 1, 1, 1, ROLES("X"), plxi_infer_cast);
PLXI_OP_ROW(BATCH_NORM, 5, 5, 1, 1, ROLES("X", "scale", "bias", "mean", "var"),
            plxi_infer_batch_norm);
PLXI_OP_ROW(LAYER_NORM, 2, 3, 1, 1, ROLES("X", "scale", "bias"), plxi_infer_layer_norm);
PLXI_OP_ROW(INSTANCE_NORM, 3, 3, 1, 1, ROLES("X", "scale", "bias"), plxi_infer_instance_norm);
PLXI_OP_ROW(SOFTMAX, 1, 1, 1, 1, ROLES("X"), plxi_infer_softmax);
PLXI_OP_ROW(REDUCE, 1, 1, 1, 1, ROLES("X"), plxi_infer_reduce);
PLXI_OP_ROW(ARG_REDUCE, 1, 1, 1, 1, ROLES("X"), plxi_infer_arg_reduce);
PLXI_OP_ROW(TOPK, 1, 1, 2, 2, ROLES("X"), plxi_infer_topk);
