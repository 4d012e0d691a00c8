/* Shape inference of convolutions, dense layers, pooling, col2im and
 * max_unpool. */
#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------ */
/* Convolutions and dense layers                                            */

static plx_status check_bias(const layer_ctx *c, uint32_t i, int64_t m, const char *of) {
    if (i >= c->n_in) {
        return NULL;
    }
    plx_status s = plxi_check_same_dtype(c, i, 0);
    if (s) {
        return s;
    }
    const plx_tensor_info *b = &c->in[i];
    if (b->rank != 1 || b->dims[0] != m) {
        return plxi_fail(c, "%s %s must be [" I64 "], one value per %s", ROLE(c, i), SHP(b), m, of);
    }
    return NULL;
}

/* Quantized conv and matmul (plexus/ops.h): X per-tensor, W per-tensor or
 * per axis `w_axis`, the output's int8/uint8 dtype and per-tensor
 * parameters preset in c->out (the builder's; validation passes the given
 * info). *out_q gets them. */
static plx_status check_quantized(const layer_ctx *c, uint32_t w_axis, plx_tensor_info *out_q) {
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    plx_status s;
    if ((s = plxi_check_dtype(c, 1, DT_Q8, NULL))) {
        return s;
    }
    if (x->quant.kind != PLX_QUANT_PER_TENSOR) {
        return plxi_fail(c, "%s is %s without per-tensor quantization parameters", ROLE(c, 0),
                         plx_dtype_name(x->dtype));
    }
    if (w->quant.kind == PLX_QUANT_NONE ||
        (w->quant.kind == PLX_QUANT_PER_AXIS && (uint32_t)w->quant.axis != w_axis)) {
        return plxi_fail(c, "%s %s needs per-tensor quantization parameters or per-axis ones "
                         "along axis %" PRIu32, ROLE(c, 1), SHP(w), w_axis);
    }
    if (c->n_in > 2 && (s = plxi_check_dtype(c, 2, DT(INT32), NULL))) {
        return s;
    }
    const plx_tensor_info *y = &c->out[0];
    if (!plxi_dtype_in(y->dtype, DT_Q8) || y->quant.kind != PLX_QUANT_PER_TENSOR) {
        return plxi_fail(c, "a quantized %s needs its output's dtype (int8 or uint8) and "
                         "per-tensor quantization set by the builder (plx_network_set_output_info)",
                         plx_op_name(c->op));
    }
    *out_q = *y;
    return NULL;
}

/* conv_integer's zero points: x_zero_point a scalar of X's dtype,
 * w_zero_point a scalar or [M] of W's. */
static plx_status check_zero_point(const layer_ctx *c, uint32_t i, uint32_t of, int64_t per) {
    if (i >= c->n_in) {
        return NULL;
    }
    plx_status s = plxi_check_same_dtype(c, i, of);
    if (s) {
        return s;
    }
    const plx_tensor_info *z = &c->in[i];
    size_t n = 0;
    plx_tensor_info_element_count(z, &n);
    if (z->rank > 1 || (n != 1 && (per < 0 || z->rank != 1 || z->dims[0] != per))) {
        if (per < 0) {
            return plxi_fail(c, "%s %s must be a scalar", ROLE(c, i), SHP(z));
        }
        return plxi_fail(c, "%s %s must be a scalar or [" I64 "]", ROLE(c, i), SHP(z), per);
    }
    return NULL;
}

/* conv in float, conv on quantized tensors, and conv_integer. */
static plx_status plxi_infer_conv(const layer_ctx *c) {
    const plx_conv_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    bool integer = c->op == PLX_OP_CONV_INTEGER;
    bool quantized = !integer && plxi_dtype_in(x->dtype, DT_Q8);
    plx_tensor_info q = {0};
    uint32_t ns = 0;
    plx_status s;
    if ((s = plxi_check_spatial_input(c, integer || quantized ? DT_Q8 : DT_FLOAT, NULL, &ns)) ||
        (s = integer ? plxi_check_dtype(c, 1, DT_Q8, NULL)
                     : quantized ? check_quantized(c, 0, &q) : plxi_check_same_dtype(c, 1, 0)) ||
        (s = plxi_check_min(c, "strides", d->strides, ns, 1)) ||
        (s = plxi_check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, ns, 0)) ||
        (s = plxi_check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    if (d->group < 1) {
        return plxi_fail(c, "group " I64 " must be >= 1", d->group);
    }
    if (w->rank != x->rank) {
        return plxi_fail(c, "W %s must have rank %" PRIu32 " like X %s", SHP(w), x->rank, SHP(x));
    }
    int64_t ch = x->dims[1], m = w->dims[0];
    if (ch % d->group != 0) {
        return plxi_fail(c, "X %s has " I64 " channels, not divisible by group " I64, SHP(x), ch,
                         d->group);
    }
    if (w->dims[1] != ch / d->group) {
        return plxi_fail(c,
                         "W has " I64 " input channels per group, X has " I64 " channels and group " I64,
                         w->dims[1], ch, d->group);
    }
    if (m % d->group != 0) {
        return plxi_fail(c, "W %s has " I64 " output channels, not divisible by group " I64,
                         SHP(w), m,
                         d->group);
    }
    if (integer) {
        s = check_zero_point(c, 2, 0, -1);
        s = s ? s : check_zero_point(c, 3, 1, m);
    } else if (quantized && c->n_in > 2 && (c->in[2].rank != 1 || c->in[2].dims[0] != m)) {
        s = plxi_fail(c, "B %s must be [" I64 "], one value per output channel", SHP(&c->in[2]), m);
    } else if (!quantized) {
        s = check_bias(c, 2, m, "output channel");
    }
    if (s) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], m};
    for (uint32_t i = 0; i < ns; i++) {
        int64_t k = w->dims[2 + i];
        if (k < 1) {
            return plxi_fail(c, "W %s has an empty kernel along spatial dim %" PRIu32, SHP(w), i);
        }
        if ((s = plxi_window_out(c, i, x->dims[2 + i], k, d->strides[i], d->dilations[i],
                                 d->pads_begin[i], d->pads_end[i], d->auto_pad, false, &dims[2 + i]))) {
            return s;
        }
    }
    plxi_info_init(c->out, integer ? PLX_DTYPE_INT32 : quantized ? q.dtype : x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    if (quantized) {
        c->out->quant = plxi_moved_quant(&q);
    }
    return NULL;
}

static plx_status plxi_infer_conv_transpose(const layer_ctx *c) {
    const plx_conv_transpose_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    uint32_t ns = 0;
    plx_status s;
    if ((s = plxi_check_spatial_input(c, DT_FLOAT, NULL, &ns)) || (s = plxi_check_same_dtype(c, 1,
                                                                                             0)) ||
        (s = plxi_check_min(c, "strides", d->strides, ns, 1)) ||
        (s = plxi_check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, ns, 0)) ||
        (s = plxi_check_min(c, "output_padding", d->output_padding, ns, 0)) ||
        (s = plxi_check_min(c, "output_shape", d->output_shape, ns, 0)) ||
        (s = plxi_check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    bool shape_given = false;
    for (uint32_t i = 0; i < ns; i++) {
        shape_given = shape_given || d->output_shape[i] != 0;
    }
    for (uint32_t i = 0; i < ns && shape_given; i++) {
        if (d->output_shape[i] == 0) {
            return plxi_fail(c, "output_shape[%" PRIu32 "] is 0: give every spatial dim or none",
                             i);
        }
    }
    if (d->group < 1) {
        return plxi_fail(c, "group " I64 " must be >= 1", d->group);
    }
    if (w->rank != x->rank) {
        return plxi_fail(c, "W %s must have rank %" PRIu32 " like X %s", SHP(w), x->rank, SHP(x));
    }
    int64_t ch = x->dims[1], m;
    if (w->dims[0] != ch) {
        return plxi_fail(c, "W %s has " I64 " input channels, X %s has " I64, SHP(w), w->dims[0],
                         SHP(x),
                         ch);
    }
    if (ch % d->group != 0) {
        return plxi_fail(c, "X %s has " I64 " channels, not divisible by group " I64, SHP(x), ch,
                         d->group);
    }
    if (!plxi_mul_nonneg(w->dims[1], d->group, &m)) {
        return plxi_fail(c, "output channels of W %s times group " I64 " overflow", SHP(w),
                         d->group);
    }
    if ((s = check_bias(c, 2, m, "output channel"))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], m};
    for (uint32_t i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i], st = d->strides[i], full, ek, o;
        if (in < 1) {
            return plxi_fail(c, "X %s is empty along spatial dim %" PRIu32, SHP(x), i);
        }
        if (k < 1) {
            return plxi_fail(c, "W %s has an empty kernel along spatial dim %" PRIu32, SHP(w), i);
        }
        /* full = stride*(in-1) + output_padding + (k-1)*dilation + 1 */
        if (!plxi_mul_nonneg(k - 1, d->dilations[i], &ek) || !plxi_add_i64(ek, 1, &ek) ||
            !plxi_mul_nonneg(st, in - 1, &full) || !plxi_add_i64(full, d->output_padding[i],
                                                                 &full) ||
            !plxi_add_i64(full, ek, &full)) {
            return plxi_fail(c, "output size of spatial dim %" PRIu32 " overflows", i);
        }
        if (shape_given) {
            o = d->output_shape[i];
            if (o > full) {
                return plxi_fail(c, "output_shape[%" PRIu32 "] = " I64
                                 " is larger than the full output " I64, i, o, full);
            }
        } else if (d->auto_pad == PLX_AUTO_PAD_SAME_UPPER ||
                   d->auto_pad == PLX_AUTO_PAD_SAME_LOWER) {
            if (!plxi_mul_nonneg(in, st, &o)) {
                return plxi_fail(c, "output size of spatial dim %" PRIu32 " overflows", i);
            }
        } else if (d->auto_pad == PLX_AUTO_PAD_VALID) {
            o = full;
        } else {
            o = full - d->pads_begin[i]; /* pads >= 0, full > 0: no overflow */
            if (o < 1 || o - d->pads_end[i] < 1) {
                return plxi_fail(c,
                                 "pads " I64 " + " I64 " leave no output along spatial dim %" PRIu32
                                 " (full size " I64 ")", d->pads_begin[i], d->pads_end[i], i, full);
            }
            o -= d->pads_end[i];
        }
        dims[2 + i] = o;
    }
    plxi_info_init(c->out, x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    return NULL;
}

static plx_status plxi_infer_fully_connected(const layer_ctx *c) {
    const plx_fully_connected_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_same_dtype(c, 1, 0)) ||
        (s = plxi_check_rank(c, 0, 2, PLX_MAX_RANK)) || (s = plxi_check_rank(c, 1, 2, 2))) {
        return s;
    }
    int64_t k = x->dims[x->rank - 1];
    int64_t wk = w->dims[d->weights_transposed ? 1 : 0], m = w->dims[d->weights_transposed ? 0 : 1];
    if (wk != k) {
        return plxi_fail(c, "X %s has " I64 " features but W %s has " I64 " (W is %s)", SHP(x), k,
                         SHP(w), wk, d->weights_transposed ? "[M,K]" : "[K,M]");
    }
    if ((s = check_bias(c, 2, m, "output feature"))) {
        return s;
    }
    plxi_info_init(c->out, x->dtype, x->rank);
    plxi_info_set_dims(c->out, x->dims, x->rank);
    c->out->dims[x->rank - 1] = m;
    return NULL;
}

/* matmul in float or int32/int64, matmul on quantized tensors, and
 * matmul_integer. */
static plx_status plxi_infer_matmul(const layer_ctx *c) {
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    bool integer = c->op == PLX_OP_MATMUL_INTEGER;
    bool quantized = !integer && plxi_dtype_in(a->dtype, DT_Q8);
    plx_tensor_info q = {0};
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, integer || quantized ? DT_Q8 : DT_MATMUL, NULL)) ||
        (s = plxi_check_rank(c, 0, 1, PLX_MAX_RANK)) || (s = plxi_check_rank(c, 1, 1,
                                                                             PLX_MAX_RANK)) ||
        (s = integer ? plxi_check_dtype(c, 1, DT_Q8, NULL)
                     : quantized ? check_quantized(c, b->rank - 1, &q)
                                 : plxi_check_same_dtype(c, 1, 0))) {
        return s;
    }
    /* numpy: a 1-D A is [1,K] and a 1-D B is [K,1], the 1 removed afterwards. */
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (ka != kb) {
        return plxi_fail(c, "inner dimensions differ: A %s and B %s", SHP(a), SHP(b));
    }
    if (integer) {
        s = check_zero_point(c, 2, 0, a->rank >= 2 ? a->dims[a->rank - 2] : -1);
        s = s ? s : check_zero_point(c, 3, 1, b->rank >= 2 ? b->dims[b->rank - 1] : -1);
        if (s) {
            return s;
        }
    }
    uint32_t ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t dims[PLX_MAX_RANK];
    if (!plxi_broadcast(a->dims, ba, b->dims, bb, dims, &r)) {
        return plxi_fail(c, "batch dimensions of A %s and B %s do not broadcast", SHP(a), SHP(b));
    }
    if (a->rank >= 2) {
        dims[r++] = a->dims[a->rank - 2];
    }
    if (b->rank >= 2) {
        dims[r++] = b->dims[b->rank - 1];
    }
    plxi_info_init(c->out, integer ? PLX_DTYPE_INT32 : quantized ? q.dtype : a->dtype, r);
    plxi_info_set_dims(c->out, dims, r);
    if (quantized) {
        c->out->quant = plxi_moved_quant(&q);
    }
    return NULL;
}

/* gemm in float or int32/int64, and on quantized tensors (A int8/uint8:
 * alpha and beta 1, C an int32 bias per column). */
static plx_status plxi_infer_gemm(const layer_ctx *c) {
    const plx_gemm_desc *d = c->desc;
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    bool quantized = plxi_dtype_in(a->dtype, DT_Q8);
    plx_tensor_info q = {0};
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, quantized ? DT_Q8 : DT_MATMUL, NULL)) ||
        (s = plxi_check_rank(c, 0, 2, 2)) || (s = plxi_check_rank(c, 1, 2, 2)) ||
        (s = quantized ? check_quantized(c, d->trans_b ? 0 : 1, &q)
                       : plxi_check_same_dtype(c, 1, 0))) {
        return s;
    }
    if (quantized && (d->alpha != 1.0f || d->beta != 1.0f)) {
        return plxi_fail(c, "a quantized gemm takes alpha = beta = 1, not %g and %g",
                         (double)d->alpha, (double)d->beta);
    }
    int64_t m = a->dims[d->trans_a ? 1 : 0], ka = a->dims[d->trans_a ? 0 : 1];
    int64_t kb = b->dims[d->trans_b ? 1 : 0], n = b->dims[d->trans_b ? 0 : 1];
    if (ka != kb) {
        return plxi_fail(c, "inner dimensions differ: A %s%s and B %s%s", SHP(a),
                         d->trans_a ? " (transposed)" : "", SHP(b), d->trans_b ? " (transposed)" : "");
    }
    int64_t dims[2] = {m, n};
    if (c->n_in > 2 && quantized) {
        const plx_tensor_info *cc = &c->in[2];
        if (cc->dims[cc->rank ? cc->rank - 1 : 0] != n || (cc->rank == 2 && cc->dims[0] != 1) ||
            cc->rank == 0 || cc->rank > 2) {
            return plxi_fail(c, "C %s of a quantized gemm must be [" I64 "] or [1," I64 "], a bias "
                             "per column", SHP(cc), n, n);
        }
    } else if (c->n_in > 2) {
        const plx_tensor_info *cc = &c->in[2];
        if ((s = plxi_check_same_dtype(c, 2, 0))) {
            return s;
        }
        if (!plxi_broadcasts_to(cc->dims, cc->rank, dims, 2)) {
            return plxi_fail(c, "C %s does not broadcast to [M,N] = [" I64 "," I64 "]", SHP(cc), m,
                             n);
        }
    }
    plxi_info_init(c->out, quantized ? q.dtype : a->dtype, 2);
    plxi_info_set_dims(c->out, dims, 2);
    if (quantized) {
        c->out->quant = plxi_moved_quant(&q);
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */

static plx_status plxi_infer_pool(const layer_ctx *c) {
    const plx_pool_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t ns = 0;
    plx_status s;
    if ((unsigned)d->kind > PLX_POOL_LP) {
        return plxi_fail(c, "kind %d is not a plx_pool_kind", (int)d->kind);
    }
    bool is_max = d->kind == PLX_POOL_MAX, is_lp = d->kind == PLX_POOL_LP;
    if (is_lp && d->p < 1) {
        return plxi_fail(c, "p " I64 " must be at least 1 for lp pooling", d->p);
    }
    /* int8/uint8: max keeps X's per-tensor quantization; average is a
     * quantized layer (plexus/ops.h), its output's parameters preset */
    plx_tensor_info y = *c->out;
    bool requant = d->kind == PLX_POOL_AVERAGE && plxi_dtype_in(x->dtype, DT_Q8);
    if ((s = plxi_check_spatial_input(c, is_lp ? DT_FLOAT : DT_FLOAT | DT_Q8,
                                      is_max  ? "max pooling"
                                      : is_lp ? "lp pooling"
                                              : "average pooling",
                                      &ns)) ||
        (s = plxi_check_min(c, "kernel", d->kernel, ns, 1)) ||
        (s = plxi_check_min(c, "strides", d->strides, ns, 1)) ||
        (s = plxi_check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, ns, 0)) ||
        (s = plxi_check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    if (requant && (x->quant.kind != PLX_QUANT_PER_TENSOR || !plxi_dtype_in(y.dtype, DT_Q8) ||
                    y.quant.kind != PLX_QUANT_PER_TENSOR)) {
        return plxi_fail(c, "an average pool of %s needs per-tensor quantization on X and on the "
                         "output, which the builder sets", plx_dtype_name(x->dtype));
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (uint32_t i = 0; i < ns; i++) {
        if ((s = plxi_window_out(c, i, x->dims[2 + i], d->kernel[i], d->strides[i], d->dilations[i],
                                 d->pads_begin[i], d->pads_end[i], d->auto_pad, d->ceil_mode,
                                 &dims[2 + i]))) {
            return s;
        }
        /* A window entirely in the padding has no value (ONNX Runtime refuses
         * pads >= kernel too); an lp pool's is 0, padding counting as 0
         * (ONNX's test_lppool_2d_pads has pads 2 around a kernel of 2). ek
         * cannot overflow: window_out checked it. */
        int64_t ek = (d->kernel[i] - 1) * d->dilations[i] + 1;
        if (!is_lp && d->auto_pad == PLX_AUTO_PAD_NOTSET &&
            (d->pads_begin[i] >= ek || d->pads_end[i] >= ek)) {
            return plxi_fail(c, "pads " I64 " + " I64 " along spatial dim %" PRIu32
                             " must be smaller than the dilated kernel " I64,
                             d->pads_begin[i], d->pads_end[i], i, ek);
        }
    }
    if (c->n_out > 1 && (!is_max || x->dtype != PLX_DTYPE_FLOAT32)) {
        return plxi_fail(c, "Indices (output 1) come with float32 max pools only, not %s %s "
                         "pools", plx_dtype_name(x->dtype), is_lp ? "lp" : is_max ? "max" : "average");
    }
    plxi_info_init(c->out, requant ? y.dtype : x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    if (requant) {
        c->out->quant = plxi_moved_quant(&y);
    } else if (is_max && x->quant.kind == PLX_QUANT_PER_TENSOR) {
        c->out->quant = plxi_moved_quant(x);
    }
    if (c->n_out > 1) {
        plxi_info_init(&c->out[1], PLX_DTYPE_INT64, x->rank);
        plxi_info_set_dims(&c->out[1], dims, x->rank);
    }
    return NULL;
}

static plx_status plxi_infer_global_pool(const layer_ctx *c) {
    const plx_global_pool_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t ns = 0;
    plx_status s;
    if ((unsigned)d->kind > PLX_POOL_LP) {
        return plxi_fail(c, "kind %d is not a plx_pool_kind", (int)d->kind);
    }
    if (d->kind == PLX_POOL_LP && d->p < 1) {
        return plxi_fail(c, "p " I64 " must be at least 1 for lp pooling", d->p);
    }
    /* int8/uint8: max keeps X's per-tensor quantization; average is a
     * quantized layer (plexus/ops.h), its output's parameters preset */
    bool q8 = plxi_dtype_in(x->dtype, DT_Q8);
    plx_tensor_info y = *c->out;
    if ((s = plxi_check_spatial_input(c, DT_FLOAT | (d->kind != PLX_POOL_LP ? DT_Q8 : 0), NULL,
                                      &ns))) {
        return s;
    }
    if (q8 && d->kind == PLX_POOL_AVERAGE &&
        (x->quant.kind != PLX_QUANT_PER_TENSOR || !plxi_dtype_in(y.dtype, DT_Q8) ||
         y.quant.kind != PLX_QUANT_PER_TENSOR)) {
        return plxi_fail(c, "an average pool of %s needs per-tensor quantization on X and on the "
                         "output, which the builder sets", plx_dtype_name(x->dtype));
    }
    bool requant = q8 && d->kind == PLX_POOL_AVERAGE;
    plxi_info_init(c->out, requant ? y.dtype : x->dtype, x->rank);
    plxi_info_set_dims(c->out, x->dims, x->rank);
    for (uint32_t i = 0; i < ns; i++) {
        c->out->dims[2 + i] = 1;
    }
    c->out->quant = plxi_moved_quant(requant ? &y : x);
    return NULL;
}

/* deform_conv (ONNX DeformConv, 2-D): see plx_deform_conv_desc. */
static plx_status plxi_infer_deform_conv(const layer_ctx *c) {
    const plx_deform_conv_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1], *off = &c->in[2];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 4, 4)) ||
        (s = plxi_check_same_dtype(c, 1, 0)) || (s = plxi_check_same_dtype(c, 2, 0)) ||
        (s = plxi_check_min(c, "strides", d->strides, 2, 1)) ||
        (s = plxi_check_min(c, "dilations", d->dilations, 2, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, 2, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, 2, 0))) {
        return s;
    }
    if (d->group < 1 || d->offset_group < 1) {
        return plxi_fail(c, "group " I64 " and offset_group " I64 " must be >= 1", d->group,
                         d->offset_group);
    }
    int64_t ch = x->dims[1], m = w->dims[0];
    if (w->rank != 4 || ch % d->group != 0 || w->dims[1] != ch / d->group ||
        m % d->group != 0) {
        return plxi_fail(c, "W %s must be [M, C/group, kH, kW] with M divisible by group " I64
                         " for X %s", SHP(w), d->group, SHP(x));
    }
    if (ch % d->offset_group != 0) {
        return plxi_fail(c, "X %s has " I64 " channels, not divisible by offset_group " I64,
                         SHP(x), ch, d->offset_group);
    }
    int64_t out[2];
    for (int k = 0; k < 2; k++) {
        int64_t kext, span, padded;
        if (!plxi_mul_nonneg(w->dims[2 + k] - (w->dims[2 + k] > 0 ? 1 : 0), d->dilations[k],
                             &kext) ||
            d->pads_begin[k] > INT64_MAX - d->pads_end[k] ||
            x->dims[2 + k] > INT64_MAX - d->pads_begin[k] - d->pads_end[k]) {
            return plxi_fail(c, "the padded input or the dilated kernel overflows");
        }
        padded = x->dims[2 + k] + d->pads_begin[k] + d->pads_end[k];
        span = kext + 1;
        if (w->dims[2 + k] < 1 || padded < span) {
            return plxi_fail(c, "the dilated kernel of W %s does not fit X %s with its pads",
                             SHP(w), SHP(x));
        }
        out[k] = (padded - span) / d->strides[k] + 1;
    }
    int64_t taps, otaps, o2;
    if (!plxi_mul_nonneg(w->dims[2], w->dims[3], &taps) ||
        !plxi_mul_nonneg(taps, d->offset_group, &otaps) || !plxi_mul_nonneg(otaps, 2, &o2)) {
        return plxi_fail(c, "the kernel of W %s has too many taps", SHP(w));
    }
    if (off->rank != 4 || off->dims[0] != x->dims[0] || off->dims[1] != o2 ||
        off->dims[2] != out[0] || off->dims[3] != out[1]) {
        return plxi_fail(c, "offset %s must be [" I64 ", " I64 ", " I64 ", " I64 "] "
                         "([N, offset_group * 2 * kH * kW, oH, oW])", SHP(off), x->dims[0], o2,
                         out[0], out[1]);
    }
    if ((s = check_bias(c, 3, m, "output channel"))) {
        return s;
    }
    if (c->n_in > 4) {
        const plx_tensor_info *mask = &c->in[4];
        if ((s = plxi_check_same_dtype(c, 4, 0))) {
            return s;
        }
        if (mask->rank != 4 || mask->dims[0] != x->dims[0] || mask->dims[1] != otaps ||
            mask->dims[2] != out[0] || mask->dims[3] != out[1]) {
            return plxi_fail(c, "mask %s must be [" I64 ", " I64 ", " I64 ", " I64 "] "
                             "([N, offset_group * kH * kW, oH, oW])", SHP(mask), x->dims[0],
                             otaps, out[0], out[1]);
        }
    }
    int64_t dims[4] = {x->dims[0], m, out[0], out[1]}, n;
    if (!plxi_dims_product(dims, 0, 4, &n)) {
        return plxi_fail(c, "Y has too many elements");
    }
    plxi_info_init(c->out, x->dtype, 4);
    plxi_info_set_dims(c->out, dims, 4);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* col2im                                                                   */

/* X [N, C * prod(block), L] -> Y [N, C, image...] (plx_col2im_desc). */
static plx_status plxi_infer_col2im(const layer_ctx *c) {
    const plx_col2im_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_NUM, NULL)) || (s = plxi_check_rank(c, 0, 3, 3))) {
        return s;
    }
    const uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL) {
        return plxi_fail(c, "spatial %" PRIu32 " must be 1 to %d", r, PLX_COL2IM_MAX_SPATIAL);
    }
    if ((s = plxi_check_min(c, "image_shape", d->image_shape, r, 1)) ||
        (s = plxi_check_min(c, "block_shape", d->block_shape, r, 1)) ||
        (s = plxi_check_min(c, "strides", d->strides, r, 1)) ||
        (s = plxi_check_min(c, "dilations", d->dilations, r, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, r, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, r, 0))) {
        return s;
    }
    int64_t block = 1, blocks = 1;
    for (uint32_t i = 0; i < r; i++) {
        int64_t span, padded, n;
        if (!plxi_mul_nonneg(d->dilations[i], d->block_shape[i] - 1, &span) ||
            !plxi_add_i64(d->image_shape[i], d->pads_begin[i], &padded) ||
            !plxi_add_i64(padded, d->pads_end[i], &padded) || padded - span - 1 < 0) {
            return plxi_fail(c, "the block of dim %" PRIu32 " (" I64 ", dilation " I64 ") does "
                             "not fit the padded image (" I64 ")", i, d->block_shape[i],
                             d->dilations[i], d->image_shape[i]);
        }
        n = (padded - span - 1) / d->strides[i] + 1;
        if (!plxi_mul_nonneg(block, d->block_shape[i], &block) ||
            !plxi_mul_nonneg(blocks, n, &blocks)) {
            return plxi_fail(c, "block_shape or the block count overflows");
        }
    }
    if (x->dims[1] % block != 0 || x->dims[2] != blocks) {
        return plxi_fail(c, "X %s must be [N, C * " I64 " (the block's size), " I64
                         " (the blocks)]", SHP(x), block, blocks);
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], x->dims[1] / block}, n;
    for (uint32_t i = 0; i < r; i++) {
        dims[2 + i] = d->image_shape[i];
    }
    if (!plxi_dims_product(dims, 0, r + 2, &n) || n > (int64_t)1 << 48) {
        return plxi_fail(c, "Y of X %s has too many elements", SHP(x));
    }
    plxi_info_init(c->out, x->dtype, r + 2);
    plxi_info_set_dims(c->out, dims, r + 2);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* max_unpool                                                               */

/* X [N, C, D1..Dr] (any numeric dtype), I (int64, X's shape) -> Y [N, C,
 * O1..Or] (plx_max_unpool_desc). */
static plx_status plxi_infer_max_unpool(const layer_ctx *c) {
    const plx_max_unpool_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *ind = &c->in[1];
    plx_status s;
    const uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL) {
        return plxi_fail(c, "spatial %" PRIu32 " must be 1 to %d", r, PLX_COL2IM_MAX_SPATIAL);
    }
    if ((s = plxi_check_dtype(c, 0, DT_NUM, NULL)) || (s = plxi_check_rank(c, 0, r + 2, r + 2)) ||
        (s = plxi_check_dtype(c, 1, DT(INT64), NULL))) {
        return s;
    }
    bool same = ind->rank == x->rank;
    for (uint32_t i = 0; same && i < x->rank; i++) {
        same = ind->dims[i] == x->dims[i];
    }
    if (!same) {
        return plxi_fail(c, "I %s must have X %s's shape", SHP(ind), SHP(x));
    }
    if ((s = plxi_check_min(c, "kernel", d->kernel, r, 1)) ||
        (s = plxi_check_min(c, "strides", d->strides, r, 1)) ||
        (s = plxi_check_min(c, "pads_begin", d->pads_begin, r, 0)) ||
        (s = plxi_check_min(c, "pads_end", d->pads_end, r, 0)) ||
        (s = plxi_check_min(c, "output_shape", d->output_shape, r, 0))) {
        return s;
    }
    bool given = false;
    for (uint32_t i = 0; i < r; i++) {
        given = given || d->output_shape[i] != 0;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], x->dims[1]}, n;
    for (uint32_t i = 0; i < r; i++) {
        int64_t full;
        if (!plxi_mul_nonneg(x->dims[2 + i] > 0 ? x->dims[2 + i] - 1 : 0, d->strides[i], &full) ||
            !plxi_add_i64(full, d->kernel[i] - d->pads_begin[i] - d->pads_end[i], &full) ||
            full < 1) {
            return plxi_fail(c, "the unpooled dim %" PRIu32 " of X %s (kernel " I64 ", stride "
                             I64 ", pads " I64 " and " I64 ") is empty", i, SHP(x), d->kernel[i],
                             d->strides[i], d->pads_begin[i], d->pads_end[i]);
        }
        if (given && d->output_shape[i] < 1) {
            return plxi_fail(c, "output_shape[%" PRIu32 "] = 0 where others are given", i);
        }
        dims[2 + i] = given ? d->output_shape[i] : full;
    }
    if (!plxi_dims_product(dims, 0, r + 2, &n) || n > (int64_t)1 << 48) {
        return plxi_fail(c, "Y of X %s has too many elements", SHP(x));
    }
    plxi_info_init(c->out, x->dtype, r + 2);
    plxi_info_set_dims(c->out, dims, r + 2);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operator table's rows (infer_internal.h, PLXI_OP_ROW)                */

PLXI_OP_ROW(CONV, 2, 3, 1, 1, ROLES("X", "W", "B"), plxi_infer_conv);
PLXI_OP_ROW(DEFORM_CONV, 3, 5, 1, 1, ROLES("X", "W", "offset", "B", "mask"),
            plxi_infer_deform_conv);
PLXI_OP_ROW(CONV_TRANSPOSE, 2, 3, 1, 1, ROLES("X", "W", "B"), plxi_infer_conv_transpose);
PLXI_OP_ROW(FULLY_CONNECTED, 2, 3, 1, 1, ROLES("X", "W", "B"), plxi_infer_fully_connected);
PLXI_OP_ROW(MATMUL, 2, 2, 1, 1, ROLES("A", "B"), plxi_infer_matmul);
PLXI_OP_ROW(MATMUL_INTEGER, 2, 4, 1, 1, ROLES("A", "B", "a_zero_point", "b_zero_point"),
            plxi_infer_matmul);
PLXI_OP_ROW(CONV_INTEGER, 2, 4, 1, 1, ROLES("X", "W", "x_zero_point", "w_zero_point"),
            plxi_infer_conv);
PLXI_OP_ROW(GEMM, 2, 3, 1, 1, ROLES("A", "B", "C"), plxi_infer_gemm);
PLXI_OP_ROW(POOL, 1, 1, 1, 2, ROLES("X"), plxi_infer_pool);
PLXI_OP_ROW(GLOBAL_POOL, 1, 1, 1, 1, ROLES("X"), plxi_infer_global_pool);
PLXI_OP_ROW(COL2IM, 1, 1, 1, 1, ROLES("X"), plxi_infer_col2im);
PLXI_OP_ROW(MAX_UNPOOL, 2, 2, 1, 1, ROLES("X", "I"), plxi_infer_max_unpool);
