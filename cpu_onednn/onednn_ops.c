/* cpu_onednn: the planners of the non-spatial operators (see
 * onednn_internal.h): inner product, gemm and matmul; activations, unary
 * and binary elementwise, and the precompiled product + activation layers
 * softmax, batch and layer normalisation; concat, reductions,
 * resize, and the reshape-like copies and transpose.
 *
 * One planner per operator reads the layer view (descriptor conventions as
 * ops.h states them, the host having validated the layer and inferred its
 * output infos), decides whether oneDNN computes exactly that, and if so
 * creates the primitive descriptors. Activations are bound in their plain
 * row-major layout (the layout tensor handles hold); constant weights of
 * convolution, deconvolution, inner product and matmul are given to oneDNN
 * as "any" so that it picks its blocked layout, and the workload reorders
 * them into it once. Anything else is refused with a reason; the host then
 * falls back to another backend (cpu_ref). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onednn_internal.h"

/* ---- inner product and matmul ------------------------------------------ */

plx_status odn_plan_fully_connected(const odn_context *ctx, const plx_layer_view *l,
                                    const odn_post_ops *po, odn_plan *plan) {
    const plx_fully_connected_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return odn_refuse(ctx, "runs fully_connected with X of rank 2 or more and "
                           "W of rank 2 only");
    }
    int64_t k = x->dims[x->rank - 1], n = 1;
    for (unsigned i = 0; i + 1 < x->rank; i++) {
        n *= x->dims[i];
    }
    int64_t m = d->weights_transposed ? w->dims[0] : w->dims[1];
    dnnl_memory_desc_t src, wu, wany, bias, dst;
    int64_t sd[2] = {n, k}, dd[2] = {n, m};
    ODN_PLAN_CALL(odn_plain_md(&src, sd, 2));
    ODN_PLAN_CALL(odn_plain_md(&dst, dd, 2));
    /* oneDNN's weights are [M, K]: W itself when transposed, else W^T. */
    dnnl_dims_t wd = {m, k}, ws;
    ws[0] = d->weights_transposed ? k : 1;
    ws[1] = d->weights_transposed ? 1 : m;
    ODN_PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, 2, wd, dnnl_f32, ws));
    ODN_PLAN_CALL(odn_any_md(&wany, &wu));
    bool has_bias = l->input_count > 2;
    if (has_bias) {
        int64_t bd[1] = {m};
        ODN_PLAN_CALL(odn_plain_md(&bias, bd, 1));
    }
    dnnl_inner_product_desc_t ipd;
    ODN_PLAN_CALL(dnnl_inner_product_forward_desc_init(&ipd, dnnl_forward_inference, &src,
                                                   odn_is_const(l, 1) ? &wany : &wu,
                                                   has_bias ? &bias : NULL, &dst));
    return odn_product_step(ctx, plan, &ipd, po, &src, &wu, odn_is_const(l, 1),
                            has_bias ? &bias : NULL, &dst);
}

plx_status odn_plan_gemm(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po_in, odn_plan *plan) {
    const plx_gemm_desc *d = l->desc;
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->rank != 2 || b->rank != 2 || y->rank != 2) {
        return odn_refuse(ctx, "runs gemm on rank-2 A and B only");
    }
    bool has_c = l->input_count > 2 && d->beta != 0.0f;
    if (has_c && d->beta != 1.0f) {
        return odn_refuse(ctx, "runs gemm with beta 0 or 1 only, not %g",
                          (double)d->beta);
    }
    if (po_in && po_in->count) {
        return odn_refuse(ctx, "gemm takes no fused post-operations yet");
    }
    int64_t m = y->dims[0], n = y->dims[1], k = d->trans_a ? a->dims[0] : a->dims[1];
    dnnl_dims_t ad = {m, k}, as, bd = {k, n}, bs;
    as[0] = d->trans_a ? 1 : k;
    as[1] = d->trans_a ? m : 1;
    bs[0] = d->trans_b ? 1 : n;
    bs[1] = d->trans_b ? k : 1;
    dnnl_memory_desc_t src, wu, wany, dst, cmd;
    ODN_PLAN_CALL(dnnl_memory_desc_init_by_strides(&src, 2, ad, dnnl_f32, as));
    ODN_PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, 2, bd, dnnl_f32, bs));
    ODN_PLAN_CALL(odn_any_md(&wany, &wu));
    ODN_PLAN_CALL(odn_info_md(&dst, y));
    /* alpha scales the product only; C is added after it (a binary post-op,
     * whose second operand oneDNN broadcasts over dims of size 1). */
    odn_post_op ops[2];
    odn_post_ops po = {ops, 0};
    if (d->alpha != 1.0f) {
        ops[po.count++] = (odn_post_op){.kind = ODN_POST_ELTWISE, .alg = dnnl_eltwise_linear,
                                        .alpha = d->alpha, .beta = 0.0f};
    }
    if (has_c) {
        const plx_tensor_info *c = &l->inputs[2];
        int64_t cd[2] = {1, 1};
        for (unsigned i = 0; i < c->rank; i++) {
            cd[2 - c->rank + i] = c->dims[i];
        }
        ODN_PLAN_CALL(odn_plain_md(&cmd, cd, 2));
        ops[po.count++] = (odn_post_op){.kind = ODN_POST_BINARY, .alg = dnnl_binary_add,
                                        .src1_md = cmd};
    }
    dnnl_matmul_desc_t mmd;
    ODN_PLAN_CALL(dnnl_matmul_desc_init(&mmd, &src, odn_is_const(l, 1) ? &wany : &wu, NULL, &dst));
    plx_status s =
        odn_product_step(ctx, plan, &mmd, &po, &src, &wu, odn_is_const(l, 1), NULL, &dst);
    if (s || !has_c) {
        return s;
    }
    return odn_bind(ctx, plan, DNNL_ARG_ATTR_MULTIPLE_POST_OP((int)po.count - 1) | DNNL_ARG_SRC_1,
                ODN_BIND_INPUT, 2, &cmd);
}

plx_status odn_matmul_dims(const odn_context *ctx, const plx_layer_view *l, int64_t *pa,
                           int64_t *pb, int64_t *pd, unsigned *rank) {
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1];
    /* numpy: a 1-D A is [1, K], a 1-D B is [K, 1]; batch dims broadcast. */
    int64_t ad[PLX_MAX_RANK + 1], bd[PLX_MAX_RANK + 1];
    unsigned ar = a->rank, br = b->rank;
    if (ar == 0 || br == 0) {
        return odn_refuse(ctx, "%s of a scalar", plx_op_name(l->op));
    }
    if (ar == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
        ar = 2;
    } else {
        memcpy(ad, a->dims, ar * sizeof ad[0]);
    }
    if (br == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
        br = 2;
    } else {
        memcpy(bd, b->dims, br * sizeof bd[0]);
    }
    unsigned r = ar > br ? ar : br;
    for (unsigned i = 0; i < r; i++) {
        pa[i] = i < r - ar ? 1 : ad[i - (r - ar)];
        pb[i] = i < r - br ? 1 : bd[i - (r - br)];
    }
    for (unsigned i = 0; i + 2 < r; i++) {
        pd[i] = pa[i] > pb[i] ? pa[i] : pb[i];
    }
    pd[r - 2] = pa[r - 2];
    pd[r - 1] = pb[r - 1];
    *rank = r;
    return NULL;
}

plx_status odn_plan_matmul(const odn_context *ctx, const plx_layer_view *l,
                           const odn_post_ops *po, odn_plan *plan) {
    int64_t pa[PLX_MAX_RANK + 1], pb[PLX_MAX_RANK + 1], pd[PLX_MAX_RANK + 1];
    unsigned r = 0;
    plx_status ds = odn_matmul_dims(ctx, l, pa, pb, pd, &r);
    if (ds) {
        return ds;
    }
    dnnl_memory_desc_t src, wu, wany, dst;
    ODN_PLAN_CALL(odn_plain_md(&src, pa, r));
    ODN_PLAN_CALL(odn_plain_md(&wu, pb, r));
    ODN_PLAN_CALL(odn_plain_md(&dst, pd, r));
    ODN_PLAN_CALL(odn_any_md(&wany, &wu));
    /* Packing pays off for a constant B that is not broadcast over a batch. */
    bool pack = odn_is_const(l, 1) && r == 2;
    dnnl_matmul_desc_t mmd;
    ODN_PLAN_CALL(dnnl_matmul_desc_init(&mmd, &src, pack ? &wany : &wu, NULL, &dst));
    return odn_product_step(ctx, plan, &mmd, po, &src, &wu, pack, NULL, &dst);
}

/* ---- elementwise -------------------------------------------------------- */

typedef struct elt {
    dnnl_alg_kind_t alg;
    float alpha, beta;
} elt;

/* Runs `n` eltwise primitives one after the other: the first from input 0
 * to output 0, the others in place on output 0, all in the layout input 0
 * is at hand in. */
static plx_status eltwise_chain(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan,
                                const elt *e, unsigned n) {
    dnnl_memory_desc_t md;
    ODN_PLAN_CALL(odn_input_md(ctx, l, 0, &md));
    ODN_ADD_MEM(mi, ODN_BIND_INPUT, 0, &md);
    ODN_ADD_MEM(mo, ODN_BIND_OUTPUT, 0, &md);
    odn_want_layouts(plan, 2);
    for (unsigned i = 0; i < n; i++) {
        dnnl_eltwise_desc_t ed;
        ODN_PLAN_CALL(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, e[i].alg, &md,
                                                 e[i].alpha, e[i].beta));
        plx_status s = odn_add_step(ctx, plan, &ed, NULL);
        if (s) {
            return s;
        }
        odn_step_set_arg(plan, DNNL_ARG_SRC, i == 0 ? mi : mo);
        odn_step_set_arg(plan, DNNL_ARG_DST, mo);
    }
    return NULL;
}

/* The eltwise steps (at most 3) that compute activation `d` of layer `l`
 * (alone, or fused into it), or the refusal. */
static plx_status activation_elts(const odn_context *ctx, const plx_layer_view *l,
                                  const plx_activation_desc *d, elt e[3], unsigned *count) {
    float a = d->alpha, b = d->beta;
    unsigned n = 1;
    /* relu (leaky with slope 0), clip and hard sigmoid's clip are max and
     * min instructions in oneDNN; the others keep NaN */
    bool max_min = d->func == PLX_ACT_RELU || d->func == PLX_ACT_CLIP ||
                   d->func == PLX_ACT_HARD_SIGMOID || (d->func == PLX_ACT_LEAKY_RELU && a == 0.0f);
    plx_status s = max_min ? odn_refuse_nan(ctx, l, plx_activation_func_name(d->func)) : NULL;
    if (s) {
        return s;
    }
    switch (d->func) {
    case PLX_ACT_RELU: e[0] = (elt){dnnl_eltwise_relu, 0.0f, 0.0f}; break;
    case PLX_ACT_LEAKY_RELU: e[0] = (elt){dnnl_eltwise_relu, a, 0.0f}; break;
    case PLX_ACT_CLIP: e[0] = (elt){dnnl_eltwise_clip_v2, a, b}; break;
    case PLX_ACT_ELU: e[0] = (elt){dnnl_eltwise_elu, a, 0.0f}; break;
    case PLX_ACT_SIGMOID: e[0] = (elt){dnnl_eltwise_logistic, 0.0f, 0.0f}; break;
    case PLX_ACT_TANH: e[0] = (elt){dnnl_eltwise_tanh, 0.0f, 0.0f}; break;
    case PLX_ACT_HARD_SIGMOID:
        e[0] = (elt){dnnl_eltwise_linear, a, b};
        e[1] = (elt){dnnl_eltwise_clip_v2, 0.0f, 1.0f};
        n = 2;
        break;
    case PLX_ACT_HARD_SWISH: e[0] = (elt){dnnl_eltwise_hardswish, 0.0f, 0.0f}; break;
    case PLX_ACT_GELU:
        e[0] = (elt){a != 0.0f ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf, 0.0f, 0.0f};
        break;
    case PLX_ACT_SOFTPLUS:
        /* soft_relu loses relative accuracy for large negative inputs
         * (ONNX's mish_expanded conformance case fails rtol 1e-3). */
        return odn_refuse(ctx, "does not run softplus (oneDNN 2.6's soft_relu is "
                           "not accurate enough for large negative inputs)");
    case PLX_ACT_SELU:
        e[0] = (elt){dnnl_eltwise_elu, a, 0.0f};
        e[1] = (elt){dnnl_eltwise_linear, b, 0.0f};
        n = 2;
        break;
    case PLX_ACT_MISH: e[0] = (elt){dnnl_eltwise_mish, 0.0f, 0.0f}; break;
    case PLX_ACT_AFFINE: e[0] = (elt){dnnl_eltwise_linear, a, b}; break;
    case PLX_ACT_SCALED_TANH:
        e[0] = (elt){dnnl_eltwise_linear, b, 0.0f};
        e[1] = (elt){dnnl_eltwise_tanh, 0.0f, 0.0f};
        e[2] = (elt){dnnl_eltwise_linear, a, 0.0f};
        n = 3;
        break;
    default: {
        const char *name = plx_activation_func_name(d->func);
        return name ? odn_refuse(ctx, "oneDNN 2.6 has no eltwise algorithm for %s", name)
                    : odn_refuse(ctx, "unknown activation %d", (int)d->func);
    }
    }
    *count = n;
    return NULL;
}

plx_status odn_plan_activation(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan) {
    elt e[3];
    unsigned n = 0;
    plx_status s = activation_elts(ctx, l, l->desc, e, &n);
    return s ? s : eltwise_chain(ctx, l, plan, e, n);
}

/* ---- precompiled: a product with its activation as post-ops (R-23) ------ */

static const odn_fused *fused_payload(const plx_layer_view *l) {
    const plx_precompiled_desc *d = l->desc;
    if (!d || d->size != sizeof(odn_fused) || !d->data) {
        return NULL;
    }
    const odn_fused *f = d->data;
    return f->magic == ODN_FUSED_MAGIC ? f : NULL;
}

plx_status odn_plan_precompiled(const odn_context *ctx, const plx_layer_view *l,
                                odn_plan *plan) {
    const odn_fused *f = fused_payload(l);
    if (!f) {
        return odn_refuse(ctx, "runs only its own precompiled layers");
    }
    odn_fused_planner_fn planner = f->op == PLX_OP_CONV             ? odn_plan_conv
                               : f->op == PLX_OP_CONV_TRANSPOSE ? odn_plan_conv_transpose
                               : f->op == PLX_OP_FULLY_CONNECTED ? odn_plan_fully_connected
                               : f->op == PLX_OP_MATMUL         ? odn_plan_matmul
                                                                : NULL;
    if (!planner) {
        return odn_refuse(ctx, "precompiled base %s is not fusable",
                          plx_op_name(f->op));
    }
    /* The activation, the depthwise convolution, its activation. */
    odn_post_op ops[7];
    unsigned n = 0;
    memset(ops, 0, sizeof ops);
    for (int part = 0; part < 3; part++) {
        const plx_activation_desc *act = part == 0 && f->has_activation ? &f->activation
                                         : part == 2 && f->dw_has_activation ? &f->dw_activation
                                                                             : NULL;
        if (part == 1 && f->has_dw) {
            const plx_tensor_info *dw_w = f->dw_slot < l->input_count ? &l->inputs[f->dw_slot]
                                                                       : NULL;
            if (f->op != PLX_OP_CONV || f->dw_slot + (f->dw_bias ? 2u : 1u) > l->input_count ||
                f->dw_slot < 2 || !odn_is_const(l, f->dw_slot) || dw_w->rank != 4 ||
                dw_w->dims[0] != f->pw_output.dims[1] || dw_w->dims[1] != 1 ||
                dw_w->dims[2] != 3 || dw_w->dims[3] != 3 ||
                (f->dw_bias && (l->inputs[f->dw_slot + 1].rank != 1 ||
                                l->inputs[f->dw_slot + 1].dims[0] != dw_w->dims[0]))) {
                return odn_refuse(ctx, "malformed depthwise fusion");
            }
            ops[n].kind = ODN_POST_DW;
            ops[n].stride = (unsigned)f->dw.strides[0];
            ops[n].slot = f->dw_slot;
            ops[n].bias = f->dw_bias;
            n++;
        }
        if (!act) {
            continue;
        }
        elt e[3];
        unsigned k = 0;
        plx_status s = activation_elts(ctx, l, act, e, &k);
        if (s) {
            return s;
        }
        for (unsigned i = 0; i < k; i++, n++) {
            ops[n].kind = ODN_POST_ELTWISE;
            ops[n].alg = e[i].alg;
            ops[n].alpha = e[i].alpha;
            ops[n].beta = e[i].beta;
        }
    }
    odn_post_ops po = {ops, n};
    plx_layer_view base = *l;
    base.op = f->op;
    base.desc = f->op == PLX_OP_MATMUL ? NULL : (const void *)&f->desc;
    if (f->has_dw) {
        base.input_count = f->dw_slot;
        base.outputs = &f->pw_output;
    }
    return planner(ctx, &base, &po, plan);
}

plx_status odn_plan_unary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_unary_desc *d = l->desc;
    elt e;
    switch (d->func) {
    case PLX_UNARY_ABS: e = (elt){dnnl_eltwise_abs, 0.0f, 0.0f}; break;
    case PLX_UNARY_NEG: e = (elt){dnnl_eltwise_linear, -1.0f, 0.0f}; break;
    case PLX_UNARY_SQRT: e = (elt){dnnl_eltwise_sqrt, 0.0f, 0.0f}; break;
    default: {
        const char *name = plx_unary_func_name(d->func);
        /* exp, log, round and the rest: oneDNN's results differ from
         * ONNX's at the edges (exp clamps its input first, so NaN gives
         * inf; log of negatives, halves) or it has no algorithm. */
        return name ? odn_refuse(ctx, "does not run unary %s (no exact oneDNN 2.6 "
                                  "eltwise algorithm)", name)
                    : odn_refuse(ctx, "unknown unary function %d", (int)d->func);
    }
    }
    return eltwise_chain(ctx, l, plan, &e, 1);
}

/* Pads `t`'s dims with leading 1s to `rank`. */
static void pad_dims(const plx_tensor_info *t, unsigned rank, int64_t *out) {
    for (unsigned i = 0; i < rank; i++) {
        out[i] = i < rank - t->rank ? 1 : t->dims[i - (rank - t->rank)];
    }
}

plx_status odn_plan_binary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_binary_desc *d = l->desc;
    dnnl_alg_kind_t alg;
    bool commutative = true;
    const char *nan = NULL;
    switch (d->func) {
    case PLX_BINARY_ADD: alg = dnnl_binary_add; break;
    case PLX_BINARY_MUL: alg = dnnl_binary_mul; break;
    case PLX_BINARY_MAX: alg = dnnl_binary_max; nan = "binary max"; break;
    case PLX_BINARY_MIN: alg = dnnl_binary_min; nan = "binary min"; break;
    case PLX_BINARY_SUB: alg = dnnl_binary_sub; commutative = false; break;
    case PLX_BINARY_DIV: alg = dnnl_binary_div; commutative = false; break;
    default: {
        const char *name = plx_binary_func_name(d->func);
        return name ? odn_refuse(ctx, "does not run binary %s", name)
                    : odn_refuse(ctx, "unknown binary function %d", (int)d->func);
    }
    }
    plx_status refused = nan ? odn_refuse_nan(ctx, l, nan) : NULL;
    if (refused) {
        return refused;
    }
    const plx_tensor_info *y = &l->outputs[0];
    unsigned r = y->rank ? y->rank : 1;
    int64_t a[PLX_MAX_RANK], b[PLX_MAX_RANK], yd[PLX_MAX_RANK];
    plx_tensor_info y1 = *y;
    if (y->rank == 0) {
        y1.rank = 1;
        y1.dims[0] = 1;
    }
    pad_dims(&l->inputs[0], r, a);
    pad_dims(&l->inputs[1], r, b);
    pad_dims(&y1, r, yd);
    bool a_full = memcmp(a, yd, r * sizeof a[0]) == 0;
    bool b_full = memcmp(b, yd, r * sizeof b[0]) == 0;
    unsigned first = 0;
    if (!a_full) {
        if (!b_full || !commutative) {
            return odn_refuse(ctx, "runs binary %s only when the first input has the "
                               "output's shape (oneDNN broadcasts the second input only)",
                          plx_binary_func_name(d->func));
        }
        first = 1; /* swap: op(a, b) == op(b, a) */
    }
    const plx_tensor_info *x0 = &l->inputs[first], *x1 = &l->inputs[1 - first];
    /* On quantized tensors (plexus/ops.h): sa/sy a + sb/sy b (sub: minus)
     * with oneDNN's source scales, the zero points folded into one constant
     * added by a linear post-op, y the f32 result rounded to nearest even
     * and saturated by oneDNN's conversion: the quantized result up to the
     * float rounding, one step at most where it falls on a tie (as for the
     * int8 convolutions, docs/cpu_onednn.md). A mul's zero points do not
     * fold so. */
    bool quantized = odn_is_quantized_binary(l);
    float scales[2] = {1.0f, 1.0f};
    odn_post_op shift = {.kind = ODN_POST_ELTWISE, .alg = dnnl_eltwise_linear, .alpha = 1.0f};
    if (quantized) {
        if (d->func != PLX_BINARY_ADD && d->func != PLX_BINARY_SUB) {
            return odn_refuse(ctx, "runs binary %s on quantized tensors only for add "
                              "and sub (a product's zero points do not fold into oneDNN's "
                              "source scales)", plx_binary_func_name(d->func));
        }
        float sy = y->quant.scale, sign = d->func == PLX_BINARY_SUB ? -1.0f : 1.0f;
        scales[0] = x0->quant.scale / sy;
        scales[1] = x1->quant.scale / sy;
        shift.beta = (float)y->quant.zero_point -
                     (scales[0] * (float)x0->quant.zero_point +
                      sign * scales[1] * (float)x1->quant.zero_point);
    }
    dnnl_data_type_t t0 = odn_dtype(x0->dtype), t1 = odn_dtype(x1->dtype), ty = odn_dtype(y->dtype);
    dnnl_memory_desc_t m0, m1, md;
    ODN_PLAN_CALL(odn_plain_md_as(&m0, first ? b : a, r, t0));
    ODN_PLAN_CALL(odn_plain_md_as(&m1, first ? a : b, r, t1));
    ODN_PLAN_CALL(odn_plain_md_as(&md, yd, r, ty));
    /* The full-shape input in the layout it is at hand in (a blocked one
     * when a convolution wrote it), the other in that layout too when it
     * has the same shape (odn_graph_plan reorders it if need be), and the
     * result in it. */
    dnnl_memory_desc_t held;
    ODN_PLAN_CALL(odn_input_md(ctx, l, first, &held));
    bool blocked = held.ndims == (int)r && !odn_md_is_plain(&held);
    if (blocked) {
        m0 = held;
        md = held;
        md.data_type = ty;
        if (a_full && b_full) {
            m1 = held;
            m1.data_type = t1;
        }
    }
    dnnl_binary_desc_t bd;
    ODN_PLAN_CALL(dnnl_binary_desc_init(&bd, alg, &m0, &m1, &md));
    odn_quant_attr q = {.src_scales = scales};
    odn_post_ops po = {&shift, 1};
    plx_status s = quantized ? odn_add_step_quant(ctx, plan, &bd, &po, &q)
                             : odn_add_step(ctx, plan, &bd, NULL);
    if (s || (s = odn_bind(ctx, plan, DNNL_ARG_SRC_0, ODN_BIND_INPUT, first, &m0)) ||
        (s = odn_bind(ctx, plan, DNNL_ARG_SRC_1, ODN_BIND_INPUT, 1 - first, &m1)) ||
        (s = odn_bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, &md))) {
        return s;
    }
    if (blocked) {
        plan->mems[plan->mem_count - 3].layout = true;
        plan->mems[plan->mem_count - 2].layout = a_full && b_full;
        plan->mems[plan->mem_count - 1].layout = true;
    }
    return NULL;
}

/* ---- normalisation, softmax --------------------------------------------- */

plx_status odn_plan_softmax(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_softmax_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank == 0) {
        return odn_refuse(ctx, "softmax of a scalar");
    }
    plx_status nan = odn_refuse_nan(ctx, l, d->log ? "log-softmax" : "softmax");
    if (nan) {
        return nan;
    }
    int axis = 0;
    plx_status s = odn_axis(ctx, "softmax", d->axis, x->rank, &axis);
    if (s) {
        return s;
    }
    dnnl_memory_desc_t md;
    ODN_PLAN_CALL(odn_info_md(&md, x));
    dnnl_softmax_v2_desc_t sd;
    ODN_PLAN_CALL(dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                d->log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                                &md, &md, axis));
    return odn_src_dst_step(ctx, plan, &sd, NULL, &md, &md);
}

plx_status odn_plan_batch_norm(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan) {
    const plx_batch_norm_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2 || x->rank > 5) {
        return odn_refuse(ctx, "runs batch_norm on tensors of rank 2 to 5 only");
    }
    for (unsigned i = 1; i < 5; i++) {
        size_t n = 0;
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || (int64_t)n != x->dims[1]) {
            return odn_refuse(ctx, "runs batch_norm with [C] scale, bias, mean and "
                               "variance only");
        }
    }
    dnnl_memory_desc_t md, cmd;
    ODN_PLAN_CALL(odn_info_md(&md, x));
    int64_t c[1] = {x->dims[1]};
    ODN_PLAN_CALL(odn_plain_md(&cmd, c, 1));
    dnnl_batch_normalization_desc_t bd;
    ODN_PLAN_CALL(dnnl_batch_normalization_forward_desc_init(
        &bd, dnnl_forward_inference, &md, d->epsilon,
        dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift));
    plx_status s = odn_src_dst_step(ctx, plan, &bd, NULL, &md, &md);
    /* Inputs 1 to 4: scale, shift, mean, variance, each [C]. */
    const int args[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (unsigned i = 0; !s && i < 4; i++) {
        s = odn_bind(ctx, plan, args[i], ODN_BIND_INPUT, 1 + i, &cmd);
    }
    return s;
}

plx_status odn_plan_layer_norm(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan) {
    const plx_layer_norm_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank == 0) {
        return odn_refuse(ctx, "layer_norm of a scalar");
    }
    int axis = 0;
    plx_status s = odn_axis(ctx, "layer_norm", d->axis, x->rank, &axis);
    if (s) {
        return s;
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < (int)x->rank; i++) {
        if (i < axis) {
            outer *= x->dims[i];
        } else {
            inner *= x->dims[i];
        }
    }
    /* oneDNN normalises over the last dim: X is viewed as [outer, inner];
     * scale and bias must have inner elements (no broadcasting). */
    for (unsigned i = 1; i < l->input_count; i++) {
        size_t n = 0;
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || (int64_t)n != inner) {
            return odn_refuse(ctx, "runs layer_norm only with a scale%s of the "
                               "normalised shape (no broadcasting)",
                          l->input_count > 2 ? " and bias" : "");
        }
    }
    bool has_bias = l->input_count > 2;
    int64_t dd[2] = {outer, inner}, sd[1] = {outer}, cd[1] = {inner};
    dnnl_memory_desc_t md, stat, cmd;
    ODN_PLAN_CALL(odn_plain_md(&md, dd, 2));
    ODN_PLAN_CALL(odn_plain_md(&stat, sd, 1));
    ODN_PLAN_CALL(odn_plain_md(&cmd, cd, 1));
    dnnl_layer_normalization_desc_t ld;
    ODN_PLAN_CALL(dnnl_layer_normalization_forward_desc_init(
        &ld, dnnl_forward_inference, &md, &stat, d->epsilon,
        dnnl_use_scale | (has_bias ? dnnl_use_shift : 0u)));
    s = odn_src_dst_step(ctx, plan, &ld, NULL, &md, &md);
    if (s || (s = odn_bind(ctx, plan, DNNL_ARG_SCALE, ODN_BIND_INPUT, 1, &cmd)) ||
        (has_bias && (s = odn_bind(ctx, plan, DNNL_ARG_SHIFT, ODN_BIND_INPUT, 2, &cmd)))) {
        return s;
    }
    /* Inference computes the statistics; oneDNN may still want buffers. */
    const int stat_args[2] = {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (unsigned i = 0; !s && i < 2; i++) {
        const dnnl_memory_desc_t *q = odn_step_md(plan, stat_args[i]);
        if (q && dnnl_memory_desc_get_size(q) > 0) {
            s = odn_bind(ctx, plan, stat_args[i], ODN_BIND_INTERNAL, 0, q);
        }
    }
    return s;
}

/* ---- data movement and reductions --------------------------------------- */

plx_status odn_plan_concat(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_axis_desc *d = l->desc;
    const plx_tensor_info *y = &l->outputs[0];
    if (y->rank == 0) {
        return odn_refuse(ctx, "concat of scalars");
    }
    if (l->input_count > 64) {
        return odn_refuse(ctx, "runs concat of at most 64 inputs, not %u",
                      l->input_count);
    }
    dnnl_memory_desc_t srcs[64], dst;
    for (unsigned i = 0; i < l->input_count; i++) {
        ODN_PLAN_CALL(odn_info_md(&srcs[i], &l->inputs[i]));
    }
    ODN_PLAN_CALL(odn_info_md(&dst, y));
    int axis = 0;
    plx_status s = odn_axis(ctx, "concat", d->axis, y->rank, &axis);
    if (!s) {
        s = odn_push_direct(ctx, plan, true, srcs, (int)l->input_count, axis, &dst,
                            "run this concat");
    }
    for (unsigned i = 0; !s && i < l->input_count; i++) {
        s = odn_bind(ctx, plan, DNNL_ARG_MULTIPLE_SRC + (int)i, ODN_BIND_INPUT, i, &srcs[i]);
    }
    return s ? s : odn_bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, &dst);
}

plx_status odn_plan_reduce(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_reduce_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    dnnl_alg_kind_t alg;
    float p = 0.0f;
    const char *nan = NULL;
    switch (d->func) {
    case PLX_REDUCE_MEAN: alg = dnnl_reduction_mean; break;
    case PLX_REDUCE_MAX: alg = dnnl_reduction_max; nan = "reduce max"; break;
    case PLX_REDUCE_MIN: alg = dnnl_reduction_min; nan = "reduce min"; break;
    case PLX_REDUCE_SUM: alg = dnnl_reduction_sum; break;
    case PLX_REDUCE_PROD: alg = dnnl_reduction_mul; break;
    case PLX_REDUCE_L1: alg = dnnl_reduction_norm_lp_sum; p = 1.0f; break;
    case PLX_REDUCE_L2: alg = dnnl_reduction_norm_lp_sum; p = 2.0f; break;
    case PLX_REDUCE_SUM_SQUARE: alg = dnnl_reduction_norm_lp_power_p_sum; p = 2.0f; break;
    default:
        return odn_refuse(ctx, "does not run reduce function %d (log_sum and "
                           "log_sum_exp have no oneDNN 2.6 reduction)", (int)d->func);
    }
    plx_status s = nan ? odn_refuse_nan(ctx, l, nan) : NULL;
    if (s) {
        return s;
    }
    if (x->rank == 0) {
        return odn_refuse(ctx, "reduce of a scalar");
    }
    if (d->axis_count == 0 && d->noop_with_empty_axes) {
        return odn_refuse(ctx,
                          "reduce with noop_with_empty_axes and no axes is a copy");
    }
    int64_t yd[PLX_MAX_RANK];
    memcpy(yd, x->dims, x->rank * sizeof yd[0]);
    if (d->axis_count == 0) {
        for (unsigned i = 0; i < x->rank; i++) {
            yd[i] = 1;
        }
    }
    for (unsigned i = 0; i < d->axis_count && i < PLX_MAX_RANK; i++) {
        int axis = 0;
        plx_status s = odn_axis(ctx, "reduce", d->axes[i], x->rank, &axis);
        if (s) {
            return s;
        }
        yd[axis] = 1;
    }
    /* keepdims false drops the 1s, which does not move any byte. */
    dnnl_memory_desc_t src, dst;
    ODN_PLAN_CALL(odn_info_md(&src, x));
    ODN_PLAN_CALL(odn_plain_md(&dst, yd, x->rank));
    if (dnnl_memory_desc_equal(&src, &dst)) {
        return odn_refuse(ctx, "reduce over axes of size 1 only is a copy");
    }
    dnnl_reduction_desc_t rd;
    ODN_PLAN_CALL(dnnl_reduction_desc_init(&rd, alg, &src, &dst, p, 0.0f));
    return odn_src_dst_step(ctx, plan, &rd, NULL, &src, &dst);
}

plx_status odn_plan_resize(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_resize_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    dnnl_alg_kind_t alg;
    if (d->mode != PLX_RESIZE_NEAREST && d->mode != PLX_RESIZE_LINEAR) {
        const char *name = plx_resize_mode_name(d->mode);
        return odn_refuse(ctx, "runs nearest and linear resize only, not %s",
                          name ? name : "an unknown mode");
    }
    /* oneDNN maps output index o to input coordinate (o + 0.5) / f - 0.5
     * (ONNX's half_pixel); nearest rounds halves up (round_prefer_ceil),
     * linear clamps at the edges as ONNX does. */
    if (d->coord != PLX_RESIZE_COORD_HALF_PIXEL &&
        !(d->coord == PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL && y->dims[2] > 1 && y->dims[3] > 1)) {
        return odn_refuse(ctx, "runs resize with half_pixel coordinates only (oneDNN's "
                           "only mapping)");
    }
    if (d->mode == PLX_RESIZE_LINEAR) {
        alg = dnnl_resampling_linear;
    } else if (d->mode == PLX_RESIZE_NEAREST &&
               d->nearest == PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL) {
        alg = dnnl_resampling_nearest;
    } else {
        return odn_refuse(ctx, "runs nearest resize with round_prefer_ceil only "
                           "(oneDNN rounds halves up)");
    }
    if (x->rank != 4) {
        return odn_refuse(ctx, "runs resize on rank-4 tensors only");
    }
    if (alg == dnnl_resampling_linear &&
        (y->dims[2] < x->dims[2] || y->dims[3] < x->dims[3])) {
        return odn_refuse(ctx, "runs linear resize for upsampling only (oneDNN's "
                           "downsampling differs from ONNX's)");
    }
    float factors[2];
    bool given = d->scales[0] > 0.0f && d->scales[1] > 0.0f;
    for (unsigned i = 0; i < 2; i++) {
        factors[i] = given ? d->scales[i] : (float)y->dims[2 + i] / (float)x->dims[2 + i];
        /* scales with sizes (ABI 1.3: ONNX's keep_aspect_ratio_policy)
         * map coordinates by a factor oneDNN would not size Y with */
        if (given && d->sizes[0] != 0 &&
            factors[i] != (float)y->dims[2 + i] / (float)x->dims[2 + i]) {
            return odn_refuse(ctx, "runs resize whose scales give its output size "
                                   "only");
        }
    }
    dnnl_memory_desc_t src, dst;
    ODN_PLAN_CALL(odn_info_md(&src, x));
    ODN_PLAN_CALL(odn_info_md(&dst, y));
    dnnl_resampling_desc_t rd;
    ODN_PLAN_CALL(dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, alg, factors, &src,
                                                &dst));
    return odn_src_dst_step(ctx, plan, &rd, NULL, &src, &dst);
}

/* Reshape-like operators move no byte: one reorder (a copy) between the
 * same plain layout. Transpose is a reorder from the input read through
 * permuted strides. */
plx_status odn_plan_copy(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    dnnl_memory_desc_t src, dst;
    ODN_PLAN_CALL(odn_info_md(&dst, y));
    if (l->op == PLX_OP_TRANSPOSE) {
        const plx_transpose_desc *d = l->desc;
        int64_t in_strides[PLX_MAX_RANK];
        plx_tensor_info_strides(x, in_strides);
        dnnl_dims_t dims, strides;
        if (y->rank == 0) {
            return odn_refuse(ctx, "transpose of a scalar");
        }
        for (unsigned i = 0; i < y->rank; i++) {
            unsigned p = d->perm_count ? d->perm[i] : y->rank - 1 - i;
            if (p >= x->rank) {
                return odn_refuse(ctx, "transpose permutation out of range");
            }
            dims[i] = y->dims[i];
            strides[i] = in_strides[p];
        }
        ODN_PLAN_CALL(
            dnnl_memory_desc_init_by_strides(&src, (int)y->rank, dims, dnnl_f32, strides));
    } else {
        src = dst;
    }
    char what[64];
    snprintf(what, sizeof what, "run this %s", plx_op_name(l->op));
    plx_status s = odn_push_direct(ctx, plan, false, &src, 1, 0, &dst, what);
    if (s || (s = odn_bind(ctx, plan, DNNL_ARG_FROM, ODN_BIND_INPUT, 0, &src))) {
        return s;
    }
    return odn_bind(ctx, plan, DNNL_ARG_TO, ODN_BIND_OUTPUT, 0, &dst);
}
