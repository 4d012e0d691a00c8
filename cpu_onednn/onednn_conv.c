/* cpu_onednn: the planners of the spatial operators (see onednn_internal.h):
 * convolution and deconvolution (plain, or with activations in oneDNN's
 * blocked layouts and weights packed once) and pooling, local and global.
 * They share the convolution descriptor helpers and the sliding-window
 * conventions, apart from the dense and elementwise operators of
 * onednn_ops.c. */
#include <string.h>

#include <plexus/window.h>

#include "onednn_internal.h"

/* ---- convolution and deconvolution ------------------------------------- */

/* The descriptors of a convolution or deconvolution that its weights' plain
 * layout *wu (the caller's) does not decide: input 0 (*src), output 0
 * (*dst), the bias (input 2, when the layer has one: *bias), and *wany,
 * the weights with the layout left to oneDNN. */
static dnnl_status_t conv_mds(const plx_layer_view *l, const dnnl_memory_desc_t *wu,
                              dnnl_memory_desc_t *src, dnnl_memory_desc_t *wany,
                              dnnl_memory_desc_t *bias, dnnl_memory_desc_t *dst) {
    dnnl_status_t st = odn_info_md(src, &l->inputs[0]);
    if (st == dnnl_success) {
        st = odn_info_md(dst, &l->outputs[0]);
    }
    if (st == dnnl_success) {
        st = odn_any_md(wany, wu);
    }
    if (st == dnnl_success && l->input_count > 2) {
        st = odn_info_md(bias, &l->inputs[2]);
    }
    return st;
}

/* The convolution with activations in the layouts oneDNN prefers (blocked,
 * for its direct kernels): the plan reads input 0 and writes output 0 in
 * them, and odn_graph_plan reorders where the tensors are in other layouts.
 * Leaves the plan empty (and returns NULL) when oneDNN has no such
 * implementation; the caller then plans the plain convolution. `po` holds
 * eltwise post-ops (fused activations) and depthwise ones, whose weights
 * and bias are bound here. */
static plx_status plan_conv_blocked(const odn_context *ctx, const plx_layer_view *l,
                                    const odn_post_ops *po,
                                    dnnl_convolution_desc_t *cd, const dnnl_memory_desc_t *src,
                                    const dnnl_memory_desc_t *wany, const dnnl_memory_desc_t *bias,
                                    const dnnl_memory_desc_t *dst, const dnnl_dims_t strides,
                                    const dnnl_dims_t dil, const dnnl_dims_t pl,
                                    const dnnl_dims_t pr, odn_plan *plan) {
    dnnl_memory_desc_t sany, dany;
    ODN_PLAN_CALL(odn_any_md(&sany, src));
    ODN_PLAN_CALL(odn_any_md(&dany, dst));
    if (dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &sany, wany, bias,
                                                   &dany, strides, dil, pl, pr) != dnnl_success) {
        return NULL;
    }
    plx_status s = odn_add_step(ctx, plan, cd, po);
    if (s) {
        plx_status_code code = ctx->host->status_code(ctx->host, s);
        ctx->host->status_free(ctx->host, s);
        odn_plan_free(ctx, plan);
        return code == PLX_OUT_OF_MEMORY ? odn_out_of_memory(ctx) : NULL;
    }
    dnnl_memory_desc_t csrc = *odn_step_md(plan, DNNL_ARG_SRC),
                       cdst = *odn_step_md(plan, DNNL_ARG_DST);
    if ((s = odn_bind_src_dst(ctx, plan, &csrc, &cdst))) {
        return s;
    }
    odn_want_layouts(plan, 2);
    dnnl_memory_desc_t wu;
    /* The plain weights: the caller's wany with plain strides. */
    ODN_PLAN_CALL(odn_plain_md(&wu, wany->dims, (unsigned)wany->ndims));
    if ((s = odn_bind_weights_bias(ctx, plan, &wu, odn_is_const(l, 1), bias))) {
        return s;
    }
    for (unsigned i = 0; po && i < po->count; i++) {
        const odn_post_op *p = &po->ops[i];
        if (p->kind != ODN_POST_DW) {
            continue;
        }
        /* [C, 1, 3, 3] is [g = C, 1, 1, 3, 3] in memory order. */
        dnnl_dims_t wd = {cdst.dims[1], 1, 1, 3, 3};
        dnnl_memory_desc_t dwu, dwb;
        ODN_PLAN_CALL(odn_plain_md(&dwu, wd, 5));
        int arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
        const dnnl_memory_desc_t *dw_md = odn_step_md(plan, arg);
        if (!dw_md || dw_md->ndims != 5) {
            return odn_refuse(ctx, "oneDNN gave no weights layout for the depthwise post-op");
        }
        ODN_ADD_MEM(m, ODN_BIND_PACKED, p->slot, dw_md);
        plan->mems[m].user_md = dwu;
        odn_step_set_arg(plan, arg, m);
        if (p->bias) {
            ODN_PLAN_CALL(odn_plain_md(&dwb, wd, 1));
            if ((s = odn_bind(ctx, plan, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, ODN_BIND_INPUT,
                          p->slot + 1, &dwb))) {
                return s;
            }
        }
    }
    return NULL;
}

plx_status odn_conv_geometry(const odn_context *ctx, const plx_layer_view *l,
                             odn_conv_geom *out) {
    const plx_conv_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) {
        return odn_refuse(ctx, "runs %s with 1 to 3 spatial dimensions only",
                          plx_op_name(l->op));
    }
    unsigned sp = x->rank - 2;
    int64_t g = d->group;
    odn_conv_geom geom;
    memset(&geom, 0, sizeof geom);
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, pe, n;
        if (plx_window_dim(d->auto_pad, x->dims[2 + i], w->dims[2 + i], d->strides[i],
                           d->dilations[i], d->pads_begin[i], d->pads_end[i], false, &pb, &pe,
                           &n) != PLX_WINDOW_OK || n != y->dims[2 + i]) {
            return odn_refuse(ctx, "%s window does not match the output shape",
                              plx_op_name(l->op));
        }
        int64_t dk = (w->dims[2 + i] - 1) * d->dilations[i] + 1;
        geom.strides[i] = d->strides[i];
        geom.dil[i] = d->dilations[i] - 1;
        geom.pl[i] = pb;
        /* what oneDNN's output needs */
        geom.pr[i] = (n - 1) * d->strides[i] + dk - x->dims[2 + i] - pb;
        if (geom.pr[i] < 0) {
            geom.pr[i] = pe; /* the windows stop before the end padding; keep it as given */
        }
    }
    if (g == 1) {
        geom.wnd = (int)w->rank;
        for (unsigned i = 0; i < w->rank; i++) {
            geom.wd[i] = w->dims[i];
        }
    } else {
        /* [C_out, C_in/g, k...] is [g, C_out/g, C_in/g, k...] in memory order. */
        geom.wnd = (int)w->rank + 1;
        geom.wd[0] = g;
        geom.wd[1] = w->dims[0] / g;
        for (unsigned i = 1; i < w->rank; i++) {
            geom.wd[i + 1] = w->dims[i];
        }
    }
    *out = geom;
    return NULL;
}

plx_status odn_plan_conv(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po, odn_plan *plan) {
    odn_conv_geom geom;
    plx_status gs = odn_conv_geometry(ctx, l, &geom);
    if (gs) {
        return gs;
    }
    const dnnl_dim_t *strides = geom.strides, *dil = geom.dil, *pl = geom.pl, *pr = geom.pr;
    dnnl_memory_desc_t src, wu, wany, bias, dst;
    ODN_PLAN_CALL(odn_plain_md(&wu, geom.wd, (unsigned)geom.wnd));
    ODN_PLAN_CALL(conv_mds(l, &wu, &src, &wany, &bias, &dst));
    bool has_bias = l->input_count > 2;
    dnnl_convolution_desc_t cd;
    /* With constant weights and at most a fused activation, oneDNN also
     * picks the activations' layouts. */
    bool no_operand = true, dw = false;
    for (unsigned i = 0; po && i < po->count; i++) {
        no_operand = no_operand && (po->ops[i].kind == ODN_POST_ELTWISE ||
                                    po->ops[i].kind == ODN_POST_DW);
        dw = dw || po->ops[i].kind == ODN_POST_DW;
    }
    if (odn_is_const(l, 1) && no_operand) {
        plx_status s = plan_conv_blocked(ctx, l, po, &cd, &src, &wany, has_bias ? &bias : NULL,
                                         &dst, strides, dil, pl, pr, plan);
        if (s || plan->step_count) {
            return s;
        }
    }
    if (dw) {
        return odn_refuse(ctx, "oneDNN has no implementation of this convolution with a "
                           "depthwise post-op");
    }
    ODN_PLAN_CALL(dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &src,
        odn_is_const(l, 1) ? &wany : &wu, has_bias ? &bias : NULL, &dst, strides, dil, pl, pr));
    return odn_product_step(ctx, plan, &cd, po, &src, &wu, odn_is_const(l, 1),
                            has_bias ? &bias : NULL, &dst);
}

plx_status odn_plan_conv_transpose(const odn_context *ctx, const plx_layer_view *l,
                                   const odn_post_ops *po, odn_plan *plan) {
    const plx_conv_transpose_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    unsigned sp = x->rank - 2;
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) {
        return odn_refuse(ctx,
                          "runs conv_transpose with 1 to 3 spatial dimensions only");
    }
    int64_t g = d->group;
    dnnl_dims_t strides, dil, pl, pr;
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, out;
        if (plx_conv_transpose_dim(d->auto_pad, x->dims[2 + i], w->dims[2 + i], d->strides[i],
                                   d->dilations[i], d->output_padding[i], d->output_shape[i],
                                   d->pads_begin[i], d->pads_end[i], &pb,
                                   &out) != PLX_WINDOW_OK || out != y->dims[2 + i]) {
            return odn_refuse(ctx, "conv_transpose geometry does not match the output");
        }
        int64_t dk = (w->dims[2 + i] - 1) * d->dilations[i] + 1;
        strides[i] = d->strides[i];
        dil[i] = d->dilations[i] - 1;
        pl[i] = pb;
        pr[i] = (x->dims[2 + i] - 1) * d->strides[i] + dk - pb - out;
        if (pb < 0 || pr[i] < 0) {
            return odn_refuse(ctx,
                              "runs conv_transpose only when the output lies within "
                              "the full result (no negative padding: output_padding or "
                              "output_shape extend it)");
        }
    }
    /* W is [C_in, C_out/g, k...]; oneDNN's logical weights are
     * [g, C_out/g, C_in/g, k...] (or [C_out, C_in, k...]): strided views. */
    int64_t cin_g = w->dims[0] / g, cout_g = w->dims[1], ksz = 1;
    for (unsigned i = 2; i < w->rank; i++) {
        ksz *= w->dims[i];
    }
    dnnl_dims_t wd, ws;
    int wnd = 0;
    if (g > 1) {
        wd[wnd] = g;
        ws[wnd++] = cin_g * cout_g * ksz;
    }
    wd[wnd] = cout_g;
    ws[wnd++] = ksz;
    wd[wnd] = cin_g;
    ws[wnd++] = cout_g * ksz;
    int64_t kstride = ksz;
    for (unsigned i = 2; i < w->rank; i++) {
        kstride /= w->dims[i];
        wd[wnd] = w->dims[i];
        ws[wnd++] = kstride;
    }
    dnnl_memory_desc_t src, wu, wany, bias, dst;
    ODN_PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, wnd, wd, dnnl_f32, ws));
    ODN_PLAN_CALL(conv_mds(l, &wu, &src, &wany, &bias, &dst));
    bool has_bias = l->input_count > 2;
    dnnl_deconvolution_desc_t dd;
    ODN_PLAN_CALL(dnnl_dilated_deconvolution_forward_desc_init(
        &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src,
        odn_is_const(l, 1) ? &wany : &wu, has_bias ? &bias : NULL, &dst, strides, dil, pl, pr));
    return odn_product_step(ctx, plan, &dd, po, &src, &wu, odn_is_const(l, 1),
                            has_bias ? &bias : NULL, &dst);
}

/* ---- pooling ------------------------------------------------------------ */

static plx_status pooling_step(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan,
                               dnnl_alg_kind_t alg, const dnnl_dims_t strides,
                               const dnnl_dims_t kernel, const dnnl_dims_t dil,
                               const dnnl_dims_t pl, const dnnl_dims_t pr) {
    /* The source as it is at hand; the destination in the layout oneDNN
     * picks for it (the source's, for a blocked one). An 8-bit max pool
     * reads a plain source in channels-last instead (odn_graph_plan
     * reorders it there): oneDNN's int8 pooling has only its reference
     * implementation for the plain layout. */
    dnnl_memory_desc_t src, dst, dany;
    ODN_PLAN_CALL(odn_input_md(ctx, l, 0, &src));
    if (odn_is_8bit_max_pool(l) && odn_md_is_plain(&src)) {
        static const dnnl_format_tag_t last[] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
        ODN_PLAN_CALL(dnnl_memory_desc_init_by_tag(&src, src.ndims, src.dims, src.data_type,
                                                   last[src.ndims - 3]));
    }
    ODN_PLAN_CALL(odn_info_md(&dst, &l->outputs[0]));
    ODN_PLAN_CALL(odn_any_md(&dany, &dst));
    dnnl_pooling_v2_desc_t pd;
    ODN_PLAN_CALL(dnnl_pooling_v2_forward_desc_init(&pd, dnnl_forward_inference, alg, &src, &dany,
                                                strides, kernel, dil, pl, pr));
    plx_status s = odn_add_step(ctx, plan, &pd, NULL);
    if (s) {
        return s;
    }
    dst = *odn_step_md(plan, DNNL_ARG_DST);
    if ((s = odn_bind_src_dst(ctx, plan, &src, &dst))) {
        return s;
    }
    odn_want_layouts(plan, 2);
    return NULL;
}

plx_status odn_plan_pool(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_pool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->rank < 3 || x->rank > 5) {
        return odn_refuse(ctx, "runs pool with 1 to 3 spatial dimensions only");
    }
    bool avg = d->kind == PLX_POOL_AVERAGE;
    if (l->output_count != 1) {
        return odn_refuse(ctx, "runs pool without the Indices output only");
    }
    if (d->kind != PLX_POOL_MAX && !avg) {
        return odn_refuse(ctx, "unknown pool kind %d", (int)d->kind);
    }
    plx_status nan = avg ? NULL : odn_refuse_nan(ctx, l, "max pooling");
    if (nan) {
        return nan;
    }
    unsigned sp = x->rank - 2;
    for (unsigned i = 0; avg && i < sp; i++) {
        if (d->dilations[i] != 1) {
            return odn_refuse(ctx, "runs average pool with dilations of 1 only");
        }
    }
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, pe, n, k = d->kernel[i], s = d->strides[i];
        int64_t dd = avg ? 1 : d->dilations[i];
        if (plx_window_dim(d->auto_pad, x->dims[2 + i], k, s, dd, d->pads_begin[i],
                           d->pads_end[i], d->ceil_mode, &pb, &pe, &n) != PLX_WINDOW_OK ||
            n != y->dims[2 + i]) {
            return odn_refuse(ctx, "pool window does not match the output shape");
        }
        int64_t dk = (k - 1) * dd + 1;
        /* oneDNN has no ceil mode: the end padding it needs for n windows. */
        int64_t need = (n - 1) * s + dk - x->dims[2 + i] - pb;
        if (need > pe && avg && d->count_include_pad) {
            return odn_refuse(ctx, "cannot run average pool with count_include_pad "
                               "when ceil_mode adds windows past the end padding (oneDNN "
                               "would count the extra padding)");
        }
        strides[i] = s;
        kernel[i] = k;
        dil[i] = dd - 1;
        pl[i] = pb;
        pr[i] = need > pe ? need : pe;
        /* oneDNN wants the padding to give exactly n windows. */
        if ((x->dims[2 + i] + pl[i] + pr[i] - dk) / s + 1 != n) {
            pr[i] = need;
        }
        if (pr[i] < 0) {
            pr[i] = 0;
        }
        if (pl[i] >= dk || pr[i] >= dk) {
            return odn_refuse(ctx, "pool padding of %lld or more is not smaller than "
                               "the kernel (%lld), which oneDNN requires",
                          (long long)(pl[i] > pr[i] ? pl[i] : pr[i]), (long long)dk);
        }
    }
    dnnl_alg_kind_t alg = !avg ? dnnl_pooling_max
                          : d->count_include_pad ? dnnl_pooling_avg_include_padding
                                                 : dnnl_pooling_avg_exclude_padding;
    return pooling_step(ctx, l, plan, alg, strides, kernel, dil, pl, pr);
}

plx_status odn_plan_global_pool(const odn_context *ctx, const plx_layer_view *l,
                                odn_plan *plan) {
    const plx_global_pool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3 || x->rank > 5) {
        return odn_refuse(ctx, "runs global_pool with 1 to 3 spatial dimensions only");
    }
    if (d->kind != PLX_POOL_MAX && d->kind != PLX_POOL_AVERAGE) {
        return odn_refuse(ctx, "unknown pool kind %d", (int)d->kind);
    }
    plx_status nan = d->kind == PLX_POOL_MAX ? odn_refuse_nan(ctx, l, "max pooling") : NULL;
    if (nan) {
        return nan;
    }
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (unsigned i = 0; i < x->rank - 2; i++) {
        strides[i] = 1;
        kernel[i] = x->dims[2 + i];
        dil[i] = 0;
        pl[i] = pr[i] = 0;
    }
    return pooling_step(ctx, l, plan,
                        d->kind == PLX_POOL_MAX ? dnnl_pooling_max
                                                : dnnl_pooling_avg_exclude_padding,
                        strides, kernel, dil, pl, pr);
}
