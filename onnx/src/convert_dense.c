/* The ONNX converters for the dense operators: Conv and ConvTranspose, the
 * pools (with the spatial attributes they share), MatMul, Gemm, Det,
 * Col2Im, MaxUnpool and DeformConv. One
 * family per file keeps each converter file short. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* Why the spatial attributes have their lengths (onnxi_check_count). */
#define ONE_PER_SPATIAL "one per spatial dim of X"
#define TWO_PER_SPATIAL "two per spatial dim of X"

/* ---- dense -------------------------------------------------------------- */

static plx_status auto_pad(const onnxi_node *n, plx_auto_pad *out) {
    char buf[32];
    const char *s = onnxi_attr_s(n, "auto_pad", "NOTSET", buf, sizeof buf);
    if (strcmp(s, "NOTSET") == 0) {
        *out = PLX_AUTO_PAD_NOTSET;
    } else if (strcmp(s, "SAME_UPPER") == 0) {
        *out = PLX_AUTO_PAD_SAME_UPPER;
    } else if (strcmp(s, "SAME_LOWER") == 0) {
        *out = PLX_AUTO_PAD_SAME_LOWER;
    } else if (strcmp(s, "VALID") == 0) {
        *out = PLX_AUTO_PAD_VALID;
    } else {
        return ONNXI_UNSUPPORTED("auto_pad='%s'", s);
    }
    return NULL;
}

/* Spatial attributes shared by Conv, ConvTranspose and the pools. */
typedef struct spatial_attrs {
    size_t sp;
    int64_t kernel[PLX_MAX_SPATIAL];
    bool has_kernel;
    int64_t strides[PLX_MAX_SPATIAL];
    int64_t dilations[PLX_MAX_SPATIAL];
    int64_t pads_begin[PLX_MAX_SPATIAL];
    int64_t pads_end[PLX_MAX_SPATIAL];
    plx_auto_pad auto_pad;
} spatial_attrs;

static plx_status read_spatial(const onnxi_ctx *c, const onnxi_node *n, spatial_attrs *s) {
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank < 3 || x->rank > 2 + PLX_MAX_SPATIAL) {
        return ONNXI_UNSUPPORTED("input X has rank %u; Plexus supports 1 to 3 spatial dimensions "
                                 "(rank 3 to 5)", x->rank);
    }
    s->sp = x->rank - 2;
    int64_t v[2 * PLX_MAX_SPATIAL];
    static const char *const names[] = {"kernel_shape", "strides", "dilations"};
    int64_t *dst[] = {s->kernel, s->strides, s->dilations};
    for (int k = 0; k < 3; k++) {
        bool present;
        plx_status st = onnxi_attr_ints_n(c, n, names[k], v, s->sp, ONE_PER_SPATIAL, &present);
        if (st) {
            return st;
        }
        for (size_t i = 0; i < PLX_MAX_SPATIAL; i++) {
            dst[k][i] = present && i < s->sp ? v[i] : 1;
        }
        if (k == 0) {
            s->has_kernel = present;
        }
    }
    bool present;
    plx_status st = onnxi_attr_ints_n(c, n, "pads", v, 2 * s->sp, TWO_PER_SPATIAL, &present);
    if (st) {
        return st;
    }
    for (size_t i = 0; i < PLX_MAX_SPATIAL; i++) {
        s->pads_begin[i] = present && i < s->sp ? v[i] : 0;
        s->pads_end[i] = present && i < s->sp ? v[s->sp + i] : 0;
    }
    return auto_pad(n, &s->auto_pad);
}

/* kernel_shape, when given, must be W's spatial dims (dims 2...): ONNX
 * infers it from W, and a model that says otherwise is malformed. */
static plx_status check_kernel_shape(const onnxi_ctx *c, const onnxi_node *n,
                                     const spatial_attrs *s, size_t w_index) {
    const plx_tensor_info *w = w_index < n->n_in && n->in[w_index] ? &n->in[w_index]->info : NULL;
    if (!s->has_kernel || !w) {
        return NULL;
    }
    if (w->rank != s->sp + 2) {
        return onnxi_invalid(c, n, "W has rank %u, X has %zu spatial dimensions (rank %zu "
                             "expected)", w->rank, s->sp, s->sp + 2);
    }
    for (size_t i = 0; i < s->sp; i++) {
        if (w->dims[2 + i] >= 0 && s->kernel[i] != w->dims[2 + i]) {
            return onnxi_invalid(c, n, "kernel_shape[%zu] = %lld is not W's dim %zu (%lld)", i,
                                 (long long)s->kernel[i], 2 + i, (long long)w->dims[2 + i]);
        }
    }
    return NULL;
}

plx_status onnxi_read_conv_desc(const onnxi_ctx *c, const onnxi_node *n, size_t w_index,
                                plx_conv_desc *d) {
    spatial_attrs s;
    plx_status st = read_spatial(c, n, &s);
    if (!st) {
        st = check_kernel_shape(c, n, &s, w_index);
    }
    if (st) {
        return st;
    }
    *d = (plx_conv_desc)PLX_CONV_DESC_INIT;
    memcpy(d->strides, s.strides, sizeof d->strides);
    memcpy(d->dilations, s.dilations, sizeof d->dilations);
    memcpy(d->pads_begin, s.pads_begin, sizeof d->pads_begin);
    memcpy(d->pads_end, s.pads_end, sizeof d->pads_end);
    d->auto_pad = s.auto_pad;
    d->group = onnxi_attr_i(n, "group", 1);
    return NULL;
}

plx_status onnxi_conv_conv(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    bool transpose = strcmp(n->proto->op_type, "ConvTranspose") == 0;
    uint32_t n_in = onnxi_has_in(n, 2) ? 3 : 2;
    if (!transpose) {
        plx_conv_desc d;
        st = onnxi_read_conv_desc(c, n, 1, &d);
        return st ? st : onnxi_emit1(c, n, PLX_OP_CONV, &d, n->in, n_in);
    }
    spatial_attrs s;
    if ((st = read_spatial(c, n, &s)) || (st = check_kernel_shape(c, n, &s, 1))) {
        return st;
    }
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    memcpy(d.strides, s.strides, sizeof d.strides);
    memcpy(d.dilations, s.dilations, sizeof d.dilations);
    memcpy(d.pads_begin, s.pads_begin, sizeof d.pads_begin);
    memcpy(d.pads_end, s.pads_end, sizeof d.pads_end);
    d.auto_pad = s.auto_pad;
    d.group = onnxi_attr_i(n, "group", 1);
    int64_t v[PLX_MAX_RANK];
    size_t cnt;
    bool present;
    st = onnxi_attr_ints_n(c, n, "output_padding", v, s.sp, ONE_PER_SPATIAL, &present);
    for (size_t i = 0; !st && present && i < s.sp; i++) {
        d.output_padding[i] = v[i];
    }
    if (!st) {
        st = onnxi_attr_ints(n, "output_shape", v, PLX_MAX_RANK, &cnt, &present);
    }
    if (!st && present) {
        /* Either the spatial sizes or the full shape. */
        size_t off = cnt == s.sp + 2 ? 2 : 0;
        if (cnt != s.sp && cnt != s.sp + 2) {
            return onnxi_invalid(c, n, "attribute 'output_shape' has %zu values; it needs %zu "
                                 "(one per spatial dim of X) or %zu (one per dim)", cnt, s.sp,
                                 s.sp + 2);
        }
        for (size_t i = 0; i < s.sp; i++) {
            d.output_shape[i] = v[off + i];
            /* A requested size past the full output needs negative padding. */
            const plx_tensor_info *w = &n->in[1]->info;
            int64_t in = n->in[0]->info.dims[2 + i];
            int64_t k = w->rank == s.sp + 2 ? w->dims[2 + i] : 1;
            int64_t full = d.strides[i] * (in - 1) + d.output_padding[i] +
                           (k - 1) * d.dilations[i] + 1;
            if (d.output_shape[i] > full) {
                return ONNXI_UNSUPPORTED("output_shape[%zu] = %lld is larger than the full output "
                                         "%lld (negative padding)", i, (long long)d.output_shape[i],
                                         (long long)full);
            }
        }
    }
    return st ? st : onnxi_emit1(c, n, PLX_OP_CONV_TRANSPOSE, &d, n->in, n_in);
}

plx_status onnxi_read_pool_desc(onnxi_ctx *c, onnxi_node *n, plx_pool_kind kind,
                                plx_pool_desc *out) {
    spatial_attrs s;
    plx_status st = read_spatial(c, n, &s);
    if (st) {
        return st;
    }
    bool is_max = kind == PLX_POOL_MAX, is_lp = kind == PLX_POOL_LP;
    int64_t p = 2;
    if (is_lp && (st = onnxi_lp_p(c, n, &p))) {
        return st;
    }
    if (!s.has_kernel) {
        return onnxi_invalid(c, n, "attribute 'kernel_shape' is required");
    }
    plx_pool_desc d =
        PLX_POOL_DESC_INIT(is_max ? PLX_POOL_MAX : is_lp ? PLX_POOL_LP : PLX_POOL_AVERAGE);
    d.p = p;
    memcpy(d.kernel, s.kernel, sizeof d.kernel);
    memcpy(d.strides, s.strides, sizeof d.strides);
    memcpy(d.dilations, s.dilations, sizeof d.dilations);
    memcpy(d.pads_begin, s.pads_begin, sizeof d.pads_begin);
    memcpy(d.pads_end, s.pads_end, sizeof d.pads_end);
    d.auto_pad = s.auto_pad;
    d.ceil_mode = onnxi_attr_i(n, "ceil_mode", 0) != 0;
    d.count_include_pad = onnxi_attr_i(n, "count_include_pad", 0) != 0;
    /* Indices (MaxPool's output 1): storage_order 1 counts positions
     * column by column */
    d.indices_column_major = is_max && onnxi_attr_i(n, "storage_order", 0) != 0;
    *out = d;
    return NULL;
}

plx_status onnxi_conv_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    bool is_max = strcmp(n->proto->op_type, "MaxPool") == 0;
    if (!st && !is_max) {
        st = onnxi_single_output(n, "Indices");
    }
    if (st) {
        return st;
    }
    plx_pool_desc d;
    st = onnxi_read_pool_desc(c, n,
                              is_max                                           ? PLX_POOL_MAX
                              : strcmp(n->proto->op_type, "LpPool") == 0 ? PLX_POOL_LP
                                                                         : PLX_POOL_AVERAGE,
                              &d);
    if (st) {
        return st;
    }
    if (is_max && n->n_out > 1) {
        onnxi_value *outs[2];
        if ((st = onnxi_emit(c, n, PLX_OP_POOL, &d, n->in, 1, 2, outs)) ||
            (st = onnxi_bind_out(c, n, 0, outs[0]))) {
            return st;
        }
        return onnxi_bind_out(c, n, 1, outs[1]);
    }
    return onnxi_emit1(c, n, PLX_OP_POOL, &d, n->in, 1);
}

plx_status onnxi_conv_global_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool is_max = strcmp(n->proto->op_type, "GlobalMaxPool") == 0;
    bool is_lp = strcmp(n->proto->op_type, "GlobalLpPool") == 0;
    plx_global_pool_desc d =
        PLX_GLOBAL_POOL_DESC_INIT(is_max ? PLX_POOL_MAX : is_lp ? PLX_POOL_LP : PLX_POOL_AVERAGE);
    if (is_lp && (st = onnxi_lp_p(c, n, &d.p))) {
        return st;
    }
    return onnxi_emit1(c, n, PLX_OP_GLOBAL_POOL, &d, n->in, 1);
}

/* DeformConv (19, 22), 2-D: deform_conv. kernel_shape, when given, must
 * be W's; an absent B with a mask present becomes zeros. */
plx_status onnxi_conv_deform_conv(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info, *w = &n->in[1]->info;
    if (x->rank != 4 || w->rank != 4) {
        return ONNXI_UNSUPPORTED("DeformConv of X rank %u and W rank %u (2-D only)", x->rank,
                                 w->rank);
    }
    plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
    static const char *const names[4] = {"strides", "dilations", "pads", "kernel_shape"};
    for (int a = 0; a < 4; a++) {
        int64_t v[4];
        bool present;
        if ((st = onnxi_attr_ints_n(c, n, names[a], v, a == 2 ? 4 : 2,
                                    a == 2 ? TWO_PER_SPATIAL : ONE_PER_SPATIAL, &present))) {
            return st;
        }
        if (!present) {
            continue;
        }
        for (int k = 0; k < 2; k++) {
            switch (a) {
            case 0: d.strides[k] = v[k]; break;
            case 1: d.dilations[k] = v[k]; break;
            case 2: d.pads_begin[k] = v[k], d.pads_end[k] = v[2 + k]; break;
            default:
                if (v[k] != w->dims[2 + k]) {
                    return onnxi_invalid(c, n, "kernel_shape [%lld, %lld] is not W's [%lld, %lld]",
                                         (long long)v[0], (long long)v[1],
                                         (long long)w->dims[2], (long long)w->dims[3]);
                }
            }
        }
    }
    d.group = onnxi_attr_i(n, "group", 1);
    d.offset_group = onnxi_attr_i(n, "offset_group", 1);
    onnxi_value *ins[5] = {n->in[0], n->in[1], n->in[2], n->in[3], n->in[4]};
    uint32_t n_in = onnxi_has_in(n, 4) ? 5 : onnxi_has_in(n, 3) ? 4 : 3;
    if (n_in == 5 && !ins[3]) {
        int64_t m = w->dims[0];
        if ((st = onnxi_zeros(c, n, x->dtype, 1, &m, &ins[3]))) {
            return st;
        }
    }
    return onnxi_emit1(c, n, PLX_OP_DEFORM_CONV, &d, ins, n_in);
}

plx_status onnxi_conv_matmul(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    return st ? st : onnxi_emit1(c, n, PLX_OP_MATMUL, NULL, n->in, 2);
}

plx_status onnxi_conv_gemm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.alpha = onnxi_attr_f(n, "alpha", 1.0f);
    d.beta = onnxi_attr_f(n, "beta", 1.0f);
    d.trans_a = onnxi_attr_i(n, "transA", 0) != 0;
    d.trans_b = onnxi_attr_i(n, "transB", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_GEMM, &d, n->in, onnxi_has_in(n, 2) ? 3 : 2);
}

/* ---- Col2Im -------------------------------------------------------------- */

/* Col2Im (opset 18): image_shape and block_shape are inputs that must be
 * known at import (one value per spatial dim, up to
 * PLX_COL2IM_MAX_SPATIAL); strides, dilations and pads attributes (pads
 * as all begins, then all ends). */
plx_status onnxi_conv_col2im(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
    int64_t block[PLX_COL2IM_MAX_SPATIAL], pads[2 * PLX_COL2IM_MAX_SPATIAL];
    size_t r, rb;
    bool present;
    if ((st = onnxi_const_ints(n, 1, "image_shape", d.image_shape, PLX_COL2IM_MAX_SPATIAL, &r)) ||
        (st = onnxi_const_ints(n, 2, "block_shape", block, PLX_COL2IM_MAX_SPATIAL, &rb))) {
        return st;
    }
    if (r == 0) {
        return onnxi_invalid(c, n, "input 1 (image_shape) is empty; it needs one value per "
                             "spatial dim");
    }
    if ((st = onnxi_check_count(c, n, "input 2 (block_shape)", rb, r,
                                "one per value of image_shape"))) {
        return st;
    }
    d.spatial = (uint32_t)r;
    memcpy(d.block_shape, block, r * sizeof block[0]);
    static const char *const names[2] = {"strides", "dilations"};
    int64_t *fields[2] = {d.strides, d.dilations};
    for (int f = 0; f < 2; f++) {
        if ((st = onnxi_attr_ints_n(c, n, names[f], fields[f], r, "one per value of image_shape",
                                    &present))) {
            return st;
        }
    }
    if ((st = onnxi_attr_ints_n(c, n, "pads", pads, 2 * r, "two per value of image_shape",
                                &present))) {
        return st;
    }
    for (size_t i = 0; present && i < r; i++) {
        d.pads_begin[i] = pads[i];
        d.pads_end[i] = pads[r + i];
    }
    return onnxi_emit1(c, n, PLX_OP_COL2IM, &d, n->in, 1);
}

/* ---- Det ----------------------------------------------------------------- */

/* Det (opsets 11, 22): one det layer. */
plx_status onnxi_conv_det(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    return st ? st : onnxi_emit1(c, n, PLX_OP_DET, NULL, n->in, 1);
}

/* ---- MaxUnpool ----------------------------------------------------------- */

/* MaxUnpool (opsets 9, 11, 22): X, I and, from opset 11, output_shape (the
 * full shape [N, C, O1..Or], known at import; its N and C must be X's);
 * kernel_shape (required), strides and pads (all begins, then all ends)
 * attributes, one value per spatial dim. */
plx_status onnxi_conv_max_unpool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank < 3 || x->rank > 2 + PLX_COL2IM_MAX_SPATIAL) {
        return onnxi_invalid(c, n, "X has rank %u; MaxUnpool takes [N, C, D1..Dr], r from 1 to %d",
                             x->rank, PLX_COL2IM_MAX_SPATIAL);
    }
    const size_t r = x->rank - 2;
    plx_max_unpool_desc d = PLX_MAX_UNPOOL_DESC_INIT;
    d.spatial = (uint32_t)r;
    int64_t pads[2 * PLX_COL2IM_MAX_SPATIAL], shape[PLX_MAX_RANK];
    size_t k;
    bool present;
    if ((st = onnxi_attr_ints_n(c, n, "kernel_shape", d.kernel, r, ONE_PER_SPATIAL,
                                &present))) {
        return st;
    }
    if (!present) {
        return onnxi_invalid(c, n, "attribute 'kernel_shape' is required");
    }
    if ((st = onnxi_attr_ints_n(c, n, "strides", d.strides, r, ONE_PER_SPATIAL, &present))) {
        return st;
    }
    if ((st = onnxi_attr_ints_n(c, n, "pads", pads, 2 * r, TWO_PER_SPATIAL, &present))) {
        return st;
    }
    for (size_t i = 0; present && i < r; i++) {
        d.pads_begin[i] = pads[i];
        d.pads_end[i] = pads[r + i];
    }
    if (onnxi_has_in(n, 2)) {
        if ((st = onnxi_const_ints(n, 2, "output_shape", shape, PLX_MAX_RANK, &k)) ||
            (st = onnxi_check_count(c, n, "input 2 (output_shape)", k, r + 2,
                                    "one per dim of X"))) {
            return st;
        }
        if (shape[0] != x->dims[0] || shape[1] != x->dims[1]) {
            return onnxi_invalid(c, n, "input 2 (output_shape) must be [N, C, O1..O%zu] with "
                                 "X's N and C", r);
        }
        for (size_t i = 0; i < r; i++) {
            if (shape[2 + i] < 1) {
                return onnxi_invalid(c, n, "input 2 (output_shape)'s spatial dims must be 1 or "
                                     "more");
            }
            d.output_shape[i] = shape[2 + i];
        }
    }
    return onnxi_emit1(c, n, PLX_OP_MAX_UNPOOL, &d, n->in, 2);
}
