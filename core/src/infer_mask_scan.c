/* Shape inference of trilu, one_hot, hardmax and cum_sum (ABI 1.2): masks
 * of a matrix or a line (trilu, hardmax), the one-hot expansion of indices
 * and the running sum along an axis. */
#include <plexus/geometry.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ONNX Trilu: any dtype, rank >= 2; every k is valid. */
static plx_status plxi_infer_trilu(const layer_ctx *c) {
    plx_status s = plxi_check_rank(c, 0, 2, PLX_MAX_RANK);
    if (s) {
        return s;
    }
    plxi_same_as_input(c, c->in[0].dtype);
    return NULL;
}

/* ONNX OneHot: Y has values' dtype and indices' shape with depth inserted
 * at axis (in [-r-1, r], r the rank of indices). */
static plx_status plxi_infer_one_hot(const layer_ctx *c) {
    const plx_one_hot_desc *d = c->desc;
    const plx_tensor_info *ind = &c->in[0], *vals = &c->in[1];
    plx_status s = plxi_check_dtype(c, 0, DT_NUM, NULL);
    if (s) {
        return s;
    }
    if (vals->rank != 1 || vals->dims[0] != 2) {
        return plxi_fail(c, "values %s must be [2] ([off_value, on_value])", SHP(vals));
    }
    if (d->depth < 1) {
        return plxi_fail(c, "depth " I64 " must be >= 1", d->depth);
    }
    if (ind->rank >= PLX_MAX_RANK) {
        return plxi_fail(c, "indices %s has rank %" PRIu32 "; Y would have more than %d dims",
                         SHP(ind), ind->rank, PLX_MAX_RANK);
    }
    uint32_t axis = 0;
    if (!plx_axis_normalize(d->axis, ind->rank + 1, false, &axis)) {
        return plxi_fail(c, "axis %" PRId32 " is out of range [-%" PRIu32 ", %" PRIu32
                         "] for indices %s", d->axis, ind->rank + 1, ind->rank, SHP(ind));
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0, k = 0; i <= ind->rank; i++) {
        dims[i] = i == axis ? d->depth : ind->dims[k++];
    }
    int64_t n;
    if (!plxi_dims_product(dims, 0, ind->rank + 1, &n)) {
        return plxi_fail(c, "Y of indices %s with depth " I64 " has too many elements",
                         SHP(ind), d->depth);
    }
    plxi_info_init(c->out, vals->dtype, ind->rank + 1);
    plxi_info_set_dims(c->out, dims, ind->rank + 1);
    return NULL;
}

/* ONNX Hardmax (opset 13): floats, one axis. */
static plx_status plxi_infer_hardmax(const layer_ctx *c) {
    return plxi_infer_float_along_axis(c, ((const plx_axis_desc *)c->desc)->axis);
}

/* ONNX CumSum: the types of opset 14 that Plexus has; X of rank >= 1 (the
 * axis must name one of its dims). */
static plx_status plxi_infer_cum_sum(const layer_ctx *c) {
    const plx_cum_sum_desc *d = c->desc;
    uint32_t axis = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_WIDE, NULL)) ||
        (s = plxi_check_rank(c, 0, 1, PLX_MAX_RANK)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    plxi_same_as_input(c, c->in[0].dtype);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operator table's rows (infer_internal.h, PLXI_OP_ROW)                */

PLXI_OP_ROW(TRILU, 1, 1, 1, 1, ROLES("X"), plxi_infer_trilu);
PLXI_OP_ROW(ONE_HOT, 2, 2, 1, 1, ROLES("indices", "values"), plxi_infer_one_hot);
PLXI_OP_ROW(HARDMAX, 1, 1, 1, 1, ROLES("X"), plxi_infer_hardmax);
PLXI_OP_ROW(CUM_SUM, 1, 1, 1, 1, ROLES("X"), plxi_infer_cum_sum);
