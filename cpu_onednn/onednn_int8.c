/* cpu_onednn: the planners of the int8 products (plexus/ops.h, "Quantized
 * layers"): conv and matmul on quantized tensors, conv_integer and
 * matmul_integer, on oneDNN 2.6's int8 convolution and matmul.
 *
 * What oneDNN 2.6 has, and so what is accepted: a u8 or s8 source with one
 * zero point; s8 weights (no u8 weights), without a zero point for the
 * convolution, with one for the matmul; an s32 bias in the accumulator's
 * units; output scales, one or one per output channel (column); a u8, s8
 * or s32 destination with one zero point. Everything else is refused with
 * the reason, and cpu_ref runs it; so is every int8 layer on a CPU without
 * VNNI, where oneDNN's int8 kernels saturate 16-bit sums or halve the
 * weights.
 *
 * The plan is the float convolution's (onednn_conv.c): the activations in
 * the layout oneDNN picks (channels last for its int8 kernels), which
 * odn_graph_plan reorders from and to the handles' plain one, and the
 * constant weights packed once at workload creation into the primitive's
 * layout, which for int8 carries the compensations oneDNN adds for an s8
 * source and for the source's zero point (the weights reorder computes
 * them). Zero points that are tensors (conv_integer, matmul_integer) are
 * given at execution: a one-element reorder turns each into the s32 that
 * oneDNN reads as DNNL_ARG_ATTR_ZERO_POINTS. Int8 layers take no post-ops;
 * conv and matmul with a per-tensor quantized output join graphs
 * (onednn_graph.c), so that consecutive ones keep oneDNN's layout.
 *
 * Rounding: cpu_ref computes round_half_even((float)acc * scale) + zy;
 * oneDNN adds zy in float before its one rounding (also to nearest even),
 * so the two differ only where the scaled value is a tie and zy is odd, or
 * where float addition rounds: by at most one quantization step
 * (tests/test_cpu_onednn_int8.c checks it). The integer products' int32
 * results are exact. */
#include <string.h>

#include "onednn_internal.h"

static bool is_q8(plx_dtype d) {
    return d == PLX_DTYPE_INT8 || d == PLX_DTYPE_UINT8;
}

/* What one int8 product reads and writes, checked against what oneDNN 2.6
 * computes: the attributes of its primitive, and the inputs that are zero
 * points given at execution (slots, or 0 for none). */
typedef struct int8_product {
    bool integer; /* conv_integer / matmul_integer */
    bool conv;
    int64_t channels; /* conv: M; matmul: N */
    odn_quant_attr attr;
    unsigned src_zp_slot, wei_zp_slot;
} int8_product;

/* The weights' zero point of channel j (quantized tensors). */
static int32_t weight_zero_point(const plx_quant_params *q, int64_t j) {
    if (q->kind == PLX_QUANT_PER_AXIS) {
        return q->zero_points ? q->zero_points[j] : 0;
    }
    return q->kind == PLX_QUANT_PER_TENSOR ? q->zero_point : 0;
}

/* Element i of an int8 or uint8 constant. */
static int32_t load_q8(const void *p, plx_dtype d, size_t i) {
    return d == PLX_DTYPE_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* The weights' zero points of a product on quantized tensors: none for a
 * convolution; one (every channel's the same) for a matmul. */
static plx_status quantized_weight_zero_point(const odn_context *ctx, const plx_layer_view *l,
                                              int8_product *p) {
    const plx_quant_params *wq = &l->inputs[1].quant;
    int64_t n = wq->kind == PLX_QUANT_PER_AXIS ? p->channels : 1;
    int32_t first = weight_zero_point(wq, 0);
    for (int64_t j = 0; j < n; j++) {
        int32_t z = weight_zero_point(wq, j);
        if (p->conv && z != 0) {
            return odn_refuse(ctx, "oneDNN 2.6's int8 convolution has no weights zero point: W's "
                              "zero point is %d (output channel %lld), not 0", (int)z,
                              (long long)j);
        }
        if (z != first) {
            return odn_refuse(ctx, "oneDNN 2.6's int8 matmul takes one zero point for B, not one "
                              "per column (columns 0 and %lld: %d and %d)", (long long)j,
                              (int)first, (int)z);
        }
    }
    p->attr.wei_zp = first;
    return NULL;
}

/* The zero point of the weights of conv_integer / matmul_integer (input
 * 3): absent, a constant (a convolution's must be 0), or for a matmul a
 * scalar given at execution. */
static plx_status integer_weight_zero_point(const odn_context *ctx, const plx_layer_view *l,
                                            int8_product *p) {
    if (l->input_count < 4) {
        return NULL;
    }
    const plx_tensor_info *z = &l->inputs[3];
    size_t n = 0;
    plx_tensor_info_element_count(z, &n);
    const void *data = odn_is_const(l, 3) ? l->input_constants[3] : NULL;
    for (size_t j = 0; data && j < n; j++) {
        int32_t v = load_q8(data, z->dtype, j);
        if (p->conv && v != 0) {
            return odn_refuse(ctx, "oneDNN 2.6's int8 convolution has no weights zero point: "
                              "w_zero_point is %d (output channel %zu), not 0", (int)v, j);
        }
        if (v != load_q8(data, z->dtype, 0)) {
            return odn_refuse(ctx, "oneDNN 2.6's int8 matmul takes one zero point for B, not one "
                              "per column");
        }
    }
    if (data) {
        p->attr.wei_zp = load_q8(data, z->dtype, 0);
        return NULL;
    }
    if (p->conv) {
        return odn_refuse(ctx, "runs conv_integer with a constant w_zero_point of "
                          "zeros only (oneDNN 2.6's int8 convolution has no weights zero point)");
    }
    if (n != 1) {
        return odn_refuse(ctx, "oneDNN 2.6's int8 matmul takes one zero point for B, not one "
                          "per column");
    }
    p->attr.runtime_wei_zp = true;
    p->wei_zp_slot = 3;
    return NULL;
}

/* Checks the dtypes and quantization of product `l` against what oneDNN
 * 2.6 computes, and sets p's attributes; the output scales go to *scales
 * (allocated from the host when the weights are quantized per channel; the
 * caller frees them). */
static plx_status check_product(const odn_context *ctx, const plx_layer_view *l,
                                int8_product *p, float *one_scale, float **scales) {
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    const char *op = plx_op_name(l->op);
    *scales = NULL;
    if (!is_q8(x->dtype) || !is_q8(w->dtype)) {
        return odn_refuse(ctx, "%s multiplies int8 and uint8 operands, not %s and %s",
                          op, plx_dtype_name(x->dtype), plx_dtype_name(w->dtype));
    }
    if (w->dtype != PLX_DTYPE_INT8) {
        return odn_refuse(ctx, "oneDNN 2.6's int8 %s takes int8 weights only, not %s (input 1)",
                          p->conv ? "convolution" : "matmul", plx_dtype_name(w->dtype));
    }
    if (p->integer) {
        if (y->dtype != PLX_DTYPE_INT32) {
            return odn_refuse(ctx, "%s's output must be int32, not %s", op,
                              plx_dtype_name(y->dtype));
        }
        if (l->input_count > 2) {
            size_t n = 0;
            plx_tensor_info_element_count(&l->inputs[2], &n);
            if (n != 1) {
                return odn_refuse(ctx, "oneDNN 2.6's int8 %s takes one zero point for %s, not "
                                  "one per row", p->conv ? "convolution" : "matmul",
                                  p->conv ? "X" : "A");
            }
            p->attr.runtime_src_zp = true;
            p->src_zp_slot = 2;
        }
        return integer_weight_zero_point(ctx, l, p);
    }
    if (x->quant.kind != PLX_QUANT_PER_TENSOR || !is_q8(y->dtype) ||
        y->quant.kind != PLX_QUANT_PER_TENSOR || w->quant.kind == PLX_QUANT_NONE) {
        return odn_refuse(ctx, "a quantized %s needs per-tensor parameters on its "
                          "input and output and parameters on its weights", op);
    }
    bool per_axis = w->quant.kind == PLX_QUANT_PER_AXIS;
    if (per_axis && (w->quant.axis < 0 || (uint32_t)w->quant.axis >= w->rank ||
                     w->dims[w->quant.axis] != p->channels || !w->quant.scales)) {
        return odn_refuse(ctx, "the weights' per-axis parameters of %s are not per "
                          "output channel", op);
    }
    if (p->conv && l->input_count > 2 && l->inputs[2].dtype != PLX_DTYPE_INT32) {
        return odn_refuse(ctx, "a quantized conv's bias must be int32, not %s",
                          plx_dtype_name(l->inputs[2].dtype));
    }
    plx_status s = quantized_weight_zero_point(ctx, l, p);
    if (s) {
        return s;
    }
    /* sx * sw[c] / sy in float32, as cpu_ref computes it (kernels_quant.c). */
    int64_t n = per_axis ? p->channels : 1;
    float *out = one_scale;
    if (per_axis) {
        out = ctx->host->alloc(ctx->host, (size_t)n * sizeof *out, 0);
        if (!out) {
            return odn_out_of_memory(ctx);
        }
        *scales = out;
    }
    for (int64_t j = 0; j < n; j++) {
        float sw = per_axis ? w->quant.scales[j] : w->quant.scale;
        out[j] = x->quant.scale * sw / y->quant.scale;
    }
    p->attr.scales = out;
    p->attr.scale_count = n;
    p->attr.src_zp = x->quant.zero_point;
    p->attr.dst_zp = y->quant.zero_point;
    return NULL;
}

/* Appends the reorder of zero-point input `slot` (one int8 or uint8
 * value) into a new s32 memory of the workload, *out_mem. */
static plx_status zero_point_step(const odn_context *ctx, const plx_layer_view *l, unsigned slot,
                                  odn_plan *plan, int *out_mem) {
    int64_t one = 1;
    dnnl_memory_desc_t from, to;
    ODN_PLAN_CALL(odn_plain_md_as(&from, &one, 1, odn_dtype(l->inputs[slot].dtype)));
    ODN_PLAN_CALL(odn_plain_md_as(&to, &one, 1, dnnl_s32));
    ODN_ADD_MEM(mi, ODN_BIND_INPUT, slot, &from);
    ODN_ADD_MEM(mo, ODN_BIND_INTERNAL, 0, &to);
    *out_mem = mo;
    return odn_plan_reorder(ctx, plan, mi, mo);
}

/* The zero-point reorders of p, before the product's step. */
static plx_status zero_point_steps(const odn_context *ctx, const plx_layer_view *l,
                                   const int8_product *p, odn_plan *plan, int mems[2]) {
    mems[0] = mems[1] = -1;
    plx_status s = NULL;
    if (p->src_zp_slot) {
        s = zero_point_step(ctx, l, p->src_zp_slot, plan, &mems[0]);
    }
    if (!s && p->wei_zp_slot) {
        s = zero_point_step(ctx, l, p->wei_zp_slot, plan, &mems[1]);
    }
    return s;
}

/* Binds the zero-point memories of zero_point_steps to the last step. */
static void bind_zero_points(odn_plan *plan, const int mems[2]) {
    if (mems[0] >= 0) {
        odn_step_set_arg(plan, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, mems[0]);
    }
    if (mems[1] >= 0) {
        odn_step_set_arg(plan, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, mems[1]);
    }
}

/* Without VNNI oneDNN 2.6 scales s8 weights by 0.5 in their reorder
 * (odn_plan_int8 refuses such CPUs first; this is the check of what the
 * primitive chose). */
static plx_status check_weights_md(const odn_context *ctx, const dnnl_memory_desc_t *md) {
    if (md && (md->extra.flags & dnnl_memory_extra_flag_scale_adjust) &&
        md->extra.scale_adjust != 1.0f) {
        return odn_refuse(ctx, "oneDNN would scale the int8 weights by %g on this CPU (%s), "
                          "which loses their low bit", (double)md->extra.scale_adjust, ctx->isa);
    }
    return NULL;
}

static plx_status plan_conv(const odn_context *ctx, const plx_layer_view *l,
                            const int8_product *p, odn_plan *plan) {
    odn_conv_geom geom;
    plx_status s = odn_conv_geometry(ctx, l, &geom);
    if (s) {
        return s;
    }
    if (!odn_is_const(l, 1)) {
        return odn_refuse(ctx, "runs %s with constant weights only (oneDNN 2.6 "
                          "reorders int8 weights with their compensations, once)",
                          plx_op_name(l->op));
    }
    bool has_bias = !p->integer && l->input_count > 2;
    dnnl_memory_desc_t src, dst, sany, dany, wu, wany, bias;
    ODN_PLAN_CALL(odn_info_md(&src, &l->inputs[0]));
    ODN_PLAN_CALL(odn_info_md(&dst, &l->outputs[0]));
    ODN_PLAN_CALL(odn_any_md(&sany, &src));
    ODN_PLAN_CALL(odn_any_md(&dany, &dst));
    ODN_PLAN_CALL(odn_plain_md_as(&wu, geom.wd, (unsigned)geom.wnd, dnnl_s8));
    ODN_PLAN_CALL(odn_any_md(&wany, &wu));
    if (has_bias) {
        ODN_PLAN_CALL(odn_info_md(&bias, &l->inputs[2]));
    }
    dnnl_convolution_desc_t cd;
    ODN_PLAN_CALL(dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &sany, &wany,
        has_bias ? &bias : NULL, &dany, geom.strides, geom.dil, geom.pl, geom.pr));
    int zp_mems[2];
    if ((s = zero_point_steps(ctx, l, p, plan, zp_mems)) ||
        (s = odn_add_step_quant(ctx, plan, &cd, NULL, &p->attr)) ||
        (s = check_weights_md(ctx, odn_step_md(plan, DNNL_ARG_WEIGHTS)))) {
        return s;
    }
    /* The activations in the layouts the primitive chose (channels last):
     * odn_graph_plan reorders the handles' plain tensors. */
    dnnl_memory_desc_t csrc = *odn_step_md(plan, DNNL_ARG_SRC),
                       cdst = *odn_step_md(plan, DNNL_ARG_DST);
    if ((s = odn_bind_src_dst(ctx, plan, &csrc, &cdst))) {
        return s;
    }
    odn_want_layouts(plan, 2);
    if ((s = odn_bind_weights_bias(ctx, plan, &wu, true, has_bias ? &bias : NULL))) {
        return s;
    }
    bind_zero_points(plan, zp_mems);
    return NULL;
}

static plx_status plan_matmul(const odn_context *ctx, const plx_layer_view *l,
                              const int8_product *p, unsigned r, const int64_t *pa,
                              const int64_t *pb, const int64_t *pd, odn_plan *plan) {
    dnnl_memory_desc_t src, wu, wany, dst;
    ODN_PLAN_CALL(odn_plain_md_as(&src, pa, r, odn_dtype(l->inputs[0].dtype)));
    ODN_PLAN_CALL(odn_plain_md_as(&wu, pb, r, dnnl_s8));
    ODN_PLAN_CALL(odn_plain_md_as(&dst, pd, r, odn_dtype(l->outputs[0].dtype)));
    ODN_PLAN_CALL(odn_any_md(&wany, &wu));
    /* As the float matmul: a constant B not broadcast over a batch is
     * packed once. */
    bool pack = odn_is_const(l, 1) && r == 2;
    dnnl_matmul_desc_t mmd;
    ODN_PLAN_CALL(dnnl_matmul_desc_init(&mmd, &src, pack ? &wany : &wu, NULL, &dst));
    int zp_mems[2];
    plx_status s;
    if ((s = zero_point_steps(ctx, l, p, plan, zp_mems)) ||
        (s = odn_add_step_quant(ctx, plan, &mmd, NULL, &p->attr)) ||
        (s = check_weights_md(ctx, odn_step_md(plan, DNNL_ARG_WEIGHTS))) ||
        (s = odn_bind_src_dst(ctx, plan, &src, &dst)) ||
        (s = odn_bind_weights_bias(ctx, plan, &wu, pack, NULL))) {
        return s;
    }
    bind_zero_points(plan, zp_mems);
    return NULL;
}

plx_status odn_plan_int8(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po, odn_plan *plan) {
    const char *op = plx_op_name(l->op);
    if (!ctx->vnni) {
        return odn_refuse(ctx, "runs int8 layers only on CPUs with VNNI, not on this "
                          "one (%s): without it oneDNN 2.6 adds pairs of 8-bit products in 16 "
                          "bits, which saturate, or halves int8 weights", ctx->isa);
    }
    if (po && po->count) {
        return odn_refuse(ctx, "fuses nothing into an int8 %s", op);
    }
    int8_product p;
    memset(&p, 0, sizeof p);
    p.integer = l->op == PLX_OP_CONV_INTEGER || l->op == PLX_OP_MATMUL_INTEGER;
    p.conv = l->op == PLX_OP_CONV || l->op == PLX_OP_CONV_INTEGER;
    if (l->input_count < 2) {
        return odn_refuse(ctx, "%s needs two operands", op);
    }
    int64_t pa[PLX_MAX_RANK + 1], pb[PLX_MAX_RANK + 1], pd[PLX_MAX_RANK + 1];
    unsigned r = 0;
    if (p.conv) {
        p.channels = l->inputs[1].rank ? l->inputs[1].dims[0] : 0;
    } else {
        plx_status s = odn_matmul_dims(ctx, l, pa, pb, pd, &r);
        if (s) {
            return s;
        }
        if (l->inputs[1].rank < 2 && l->inputs[1].quant.kind == PLX_QUANT_PER_AXIS) {
            return odn_refuse(ctx, "per-axis parameters on a 1-D B of %s", op);
        }
        p.channels = pd[r - 1];
    }
    float one_scale = 1.0f, *scales = NULL;
    plx_status s = check_product(ctx, l, &p, &one_scale, &scales);
    if (!s) {
        /* One output scale, or one per output channel: dims 1 of the
         * convolution's destination, the last of the matmul's. */
        p.attr.scale_mask = p.attr.scale_count > 1 ? 1 << (p.conv ? 1 : (int)r - 1) : 0;
        s = p.conv ? plan_conv(ctx, l, &p, plan) : plan_matmul(ctx, l, &p, r, pa, pb, pd, plan);
    }
    ctx->host->free(ctx->host, scales);
    return s;
}
