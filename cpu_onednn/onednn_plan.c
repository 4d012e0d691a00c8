/* cpu_onednn: the planning side shared by every operator (see
 * onednn_internal.h): the oneDNN status and refusal helpers, the memory
 * descriptors of tensors, the plan's memories and steps and their argument
 * bindings, and the dispatcher odn_plan_build that checks a layer's dtypes
 * and shapes and hands it to its operator's planner (onednn_conv.c,
 * onednn_ops.c). Kept apart from the planners so that each planner file
 * holds operators only, on helpers with one definition. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <plexus/geometry.h>

#include "onednn_internal.h"

plx_status odn_status(const plx_host *host, plx_status_code code, const char *call,
                      dnnl_status_t st) {
    return host->status_create(host, code, "cpu_onednn: %s failed: %s", call,
                               dnnl_status2str(st));
}

plx_status odn_refuse(const odn_context *ctx, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ctx->host->status_create(ctx->host, PLX_UNSUPPORTED, "%s", buf);
}

plx_status odn_refuse_nan(const odn_context *ctx, const plx_layer_view *l, const char *what) {
    if (!ctx->exact_nan || !odn_view_is_float(l)) {
        return NULL;
    }
    return odn_refuse(ctx, "oneDNN 2.6's %s turns NaN into a number (option exact_nan is on)",
                      what);
}

dnnl_data_type_t odn_dtype(plx_dtype dtype) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32: return dnnl_f32;
    case PLX_DTYPE_INT8: return dnnl_s8;
    case PLX_DTYPE_UINT8: return dnnl_u8;
    case PLX_DTYPE_INT32: return dnnl_s32;
    default: return dnnl_data_type_undef;
    }
}

dnnl_status_t odn_plain_md(dnnl_memory_desc_t *md, const int64_t *dims, unsigned rank) {
    return odn_plain_md_as(md, dims, rank, dnnl_f32);
}

dnnl_status_t odn_plain_md_as(dnnl_memory_desc_t *md, const int64_t *dims, unsigned rank,
                              dnnl_data_type_t dt) {
    dnnl_dims_t d, s;
    if (rank > DNNL_MAX_NDIMS) {
        return dnnl_invalid_arguments;
    }
    int nd = rank ? (int)rank : 1;
    if (rank == 0) {
        d[0] = 1;
    } else {
        for (unsigned i = 0; i < rank; i++) {
            d[i] = dims[i];
        }
    }
    dnnl_dim_t stride = 1;
    for (int i = nd; i-- > 0;) {
        s[i] = stride;
        stride *= d[i];
    }
    if (dt == dnnl_data_type_undef) {
        return dnnl_invalid_arguments;
    }
    return dnnl_memory_desc_init_by_strides(md, nd, d, dt, s);
}

dnnl_status_t odn_info_md(dnnl_memory_desc_t *md, const plx_tensor_info *t) {
    return odn_plain_md_as(md, t->dims, t->rank, odn_dtype(t->dtype));
}

bool odn_md_is_plain(const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t p;
    return odn_plain_md_as(&p, md->dims, (unsigned)md->ndims, md->data_type) == dnnl_success &&
           dnnl_memory_desc_equal(&p, md);
}

dnnl_status_t odn_input_md(const odn_context *ctx, const plx_layer_view *l, unsigned slot,
                           dnnl_memory_desc_t *md) {
    const dnnl_memory_desc_t *h = ctx->input_mds ? ctx->input_mds[slot] : NULL;
    const plx_tensor_info *t = &l->inputs[slot];
    bool same = h && t->rank > 0 && h->ndims == (int)t->rank;
    for (unsigned i = 0; same && i < t->rank; i++) {
        same = h->dims[i] == t->dims[i];
    }
    if (same) {
        *md = *h;
        return dnnl_success;
    }
    return odn_info_md(md, t);
}

dnnl_status_t odn_any_md(dnnl_memory_desc_t *md, const dnnl_memory_desc_t *like) {
    return dnnl_memory_desc_init_by_tag(md, like->ndims, like->dims, like->data_type,
                                        dnnl_format_tag_any);
}

/* Makes room for one more element in the plan's array *items (count used
 * of *capacity, `size` bytes each): doubles it, from `first`. false when
 * out of memory (the array is left as it was). */
static bool make_room(const odn_context *ctx, void **items, unsigned count, unsigned *capacity,
                      size_t size, unsigned first) {
    if (count < *capacity) {
        return true;
    }
    unsigned cap = *capacity ? *capacity * 2 : first;
    void *grown = ctx->host->alloc(ctx->host, cap * size, 0);
    if (!grown) {
        return false;
    }
    if (count) {
        memcpy(grown, *items, count * size);
    }
    ctx->host->free(ctx->host, *items);
    *items = grown;
    *capacity = cap;
    return true;
}

int odn_plan_add_mem(const odn_context *ctx, odn_plan *plan, odn_binding binding,
                     unsigned slot, const dnnl_memory_desc_t *md) {
    void *mems = plan->mems;
    if (!make_room(ctx, &mems, plan->mem_count, &plan->mem_capacity, sizeof(odn_mem), 8)) {
        return -1;
    }
    plan->mems = mems;
    odn_mem *m = &plan->mems[plan->mem_count];
    memset(m, 0, sizeof *m);
    m->binding = binding;
    m->slot = slot;
    m->md = *md;
    return (int)plan->mem_count++;
}

/* A new zeroed step at the end of the plan (not counted until the caller
 * increments step_count), or NULL when out of memory. */
static odn_step *next_step(const odn_context *ctx, odn_plan *plan) {
    void *steps = plan->steps;
    if (!make_room(ctx, &steps, plan->step_count, &plan->step_capacity, sizeof(odn_step), 4)) {
        return NULL;
    }
    plan->steps = steps;
    odn_step *s = &plan->steps[plan->step_count];
    memset(s, 0, sizeof *s);
    return s;
}

plx_status odn_out_of_memory(const odn_context *ctx) {
    return ctx->host->status_create(ctx->host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
}

plx_status odn_plan_push_step(const odn_context *ctx, odn_plan *plan, const odn_step *step) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        return odn_out_of_memory(ctx);
    }
    *s = *step;
    plan->step_count++;
    return NULL;
}

plx_status odn_add_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                        const odn_post_ops *post_ops) {
    return odn_add_step_quant(ctx, plan, desc, post_ops, NULL);
}

/* What a slow implementation that oneDNN chose is (for the refusal), or
 * NULL for one worth running: its reference implementation ("ref:...",
 * plain loops), its batch normalisation on plain layouts ("ncsp_bnorm",
 * C++ loops: 0.42 ms on 1x64x80x80 at one thread, where cpu_ref takes 0.06
 * and ONNX Runtime 0.05, Zen 4), and its simple concat ("simple:any",
 * which in oneDNN 2.6 copies element by element through a function call:
 * 0.75 ms for 4 x 1x64x40x40 at one thread, where cpu_ref takes 0.03,
 * Zen 5; the plan's concat is always of plain layouts). */
static const char *slow_implementation(const char *impl, bool concat) {
    if (strncmp(impl, "ref:", 4) == 0) {
        return "its reference implementation";
    }
    if (strncmp(impl, "ncsp_bnorm", 10) == 0) {
        return "a slow batch normalisation on this layout";
    }
    if (concat && strncmp(impl, "simple:", 7) == 0) {
        return "a concat that copies element by element";
    }
    return NULL;
}

/* NULL when *pd is worth running; else destroys it (*pd NULL) and refuses
 * the layer, naming the implementation, unless option reference=on. */
static plx_status refuse_slow(const odn_context *ctx, dnnl_primitive_desc_t *pd, bool concat) {
    const char *impl = NULL, *slow = NULL;
    if (ctx->reference ||
        dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl || (slow = slow_implementation(impl, concat)) == NULL) {
        return NULL;
    }
    plx_status s = odn_refuse(ctx, "oneDNN offers only %s (%s) for this layer (option "
                              "reference=on runs it)", slow, impl);
    dnnl_primitive_desc_destroy(*pd);
    *pd = NULL;
    return s;
}

/* Sets the output scales and zero points of `q` on `attr`. */
static dnnl_status_t set_quant_attr(dnnl_primitive_attr_t attr, const odn_quant_attr *q) {
    static const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    dnnl_status_t st = dnnl_success;
    if (q->scale_count > 0) {
        st = dnnl_primitive_attr_set_output_scales(attr, q->scale_count, q->scale_mask,
                                                   q->scales);
    }
    for (int i = 0; i < 2 && st == dnnl_success && q->src_scales; i++) {
        st = dnnl_primitive_attr_set_scales(attr, i ? DNNL_ARG_SRC_1 : DNNL_ARG_SRC_0, 1, 0,
                                            &q->src_scales[i]);
    }
    const struct {
        int arg;
        bool runtime;
        const int32_t *value;
    } zps[3] = {{DNNL_ARG_SRC, q->runtime_src_zp, &q->src_zp},
                {DNNL_ARG_WEIGHTS, q->runtime_wei_zp, &q->wei_zp},
                {DNNL_ARG_DST, false, &q->dst_zp}};
    for (int i = 0; i < 3 && st == dnnl_success; i++) {
        if (zps[i].runtime || *zps[i].value != 0) {
            st = dnnl_primitive_attr_set_zero_points(attr, zps[i].arg, 1, 0,
                                                     zps[i].runtime ? &runtime : zps[i].value);
        }
    }
    return st;
}

plx_status odn_add_step_quant(const odn_context *ctx, odn_plan *plan,
                              const_dnnl_op_desc_t desc, const odn_post_ops *post_ops,
                              const odn_quant_attr *quant) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        return odn_out_of_memory(ctx);
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) {
        st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    }
    if (st == dnnl_success && quant) {
        st = set_quant_attr(attr, quant);
    }
    if (st == dnnl_success && post_ops && post_ops->count) {
        st = dnnl_post_ops_create(&po);
        for (unsigned i = 0; st == dnnl_success && i < post_ops->count; i++) {
            const odn_post_op *p = &post_ops->ops[i];
            switch (p->kind) {
            case ODN_POST_ELTWISE:
                st = dnnl_post_ops_append_eltwise(po, 1.0f, p->alg, p->alpha, p->beta);
                break;
            case ODN_POST_SUM:
                st = dnnl_post_ops_append_sum(po, p->scale);
                break;
            case ODN_POST_BINARY:
                st = dnnl_post_ops_append_binary(po, p->alg, &p->src1_md);
                break;
            case ODN_POST_DW:
                st = dnnl_post_ops_append_dw(po, dnnl_f32,
                                             p->bias ? dnnl_f32 : dnnl_data_type_undef,
                                             dnnl_f32, 3, p->stride, 1, 0, 0, NULL);
                break;
            }
        }
        if (st == dnnl_success) {
            st = dnnl_primitive_attr_set_post_ops(attr, po);
        }
    }
    if (st == dnnl_success) {
        st = dnnl_primitive_desc_create(&s->pd, desc, attr, ctx->engine, NULL);
    }
    if (po) {
        dnnl_post_ops_destroy(po);
    }
    if (attr) {
        dnnl_primitive_attr_destroy(attr);
    }
    if (st != dnnl_success) {
        s->pd = NULL;
        if (st == dnnl_out_of_memory) {
            return odn_status(ctx->host, PLX_OUT_OF_MEMORY, "dnnl_primitive_desc_create", st);
        }
        return odn_refuse(ctx, "oneDNN has no implementation for this layer "
                           "(dnnl_primitive_desc_create: %s)", dnnl_status2str(st));
    }
    plx_status slow = refuse_slow(ctx, &s->pd, false);
    if (slow) {
        return slow;
    }
    plan->step_count++;
    return NULL;
}

/* A step whose descriptor oneDNN creates directly (concat, reorder). */
static plx_status push_pd(const odn_context *ctx, odn_plan *plan, dnnl_primitive_desc_t pd) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        dnnl_primitive_desc_destroy(pd);
        return odn_out_of_memory(ctx);
    }
    s->pd = pd;
    plan->step_count++;
    return NULL;
}

void odn_step_set_arg(odn_plan *plan, int arg, int mem) {
    odn_step *s = &plan->steps[plan->step_count - 1];
    if (s->arg_count < ODN_MAX_STEP_ARGS) {
        s->args[s->arg_count].arg = arg;
        s->args[s->arg_count].mem = (unsigned)mem;
        s->arg_count++;
    }
}

const dnnl_memory_desc_t *odn_step_md(odn_plan *plan, int arg) {
    return dnnl_primitive_desc_query_md(plan->steps[plan->step_count - 1].pd,
                                        dnnl_query_exec_arg_md, arg);
}

plx_status odn_bind(const odn_context *ctx, odn_plan *plan, int arg, odn_binding binding,
                    unsigned slot, const dnnl_memory_desc_t *md) {
    ODN_ADD_MEM(m, binding, slot, md);
    odn_step_set_arg(plan, arg, m);
    return NULL;
}

void odn_want_layouts(odn_plan *plan, unsigned n) {
    for (unsigned i = plan->mem_count - n; i < plan->mem_count; i++) {
        plan->mems[i].layout = true;
    }
}

plx_status odn_bind_src_dst(const odn_context *ctx, odn_plan *plan,
                            const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst) {
    plx_status s = odn_bind(ctx, plan, DNNL_ARG_SRC, ODN_BIND_INPUT, 0, src);
    return s ? s : odn_bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, dst);
}

plx_status odn_src_dst_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                            const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                            const dnnl_memory_desc_t *dst) {
    plx_status s = odn_add_step(ctx, plan, desc, post_ops);
    return s ? s : odn_bind_src_dst(ctx, plan, src, dst);
}

/* Binds input `slot` as the last step's weights: when `pack` (a constant
 * the primitive was created for as "any"), reordered once from its plain
 * layout `user_md` into the layout the primitive chose; otherwise read as
 * it is, which the caller arranged by creating the primitive with
 * `user_md`. */
static plx_status bind_weights(const odn_context *ctx, odn_plan *plan, unsigned slot,
                               const dnnl_memory_desc_t *user_md, bool pack) {
    if (!pack) {
        return odn_bind(ctx, plan, DNNL_ARG_WEIGHTS, ODN_BIND_INPUT, slot, user_md);
    }
    ODN_ADD_MEM(m, ODN_BIND_PACKED, slot, odn_step_md(plan, DNNL_ARG_WEIGHTS));
    plan->mems[m].user_md = *user_md;
    odn_step_set_arg(plan, DNNL_ARG_WEIGHTS, m);
    return NULL;
}

plx_status odn_bind_weights_bias(const odn_context *ctx, odn_plan *plan,
                                 const dnnl_memory_desc_t *wu, bool pack,
                                 const dnnl_memory_desc_t *bias) {
    plx_status s = bind_weights(ctx, plan, 1, wu, pack);
    if (s || !bias) {
        return s;
    }
    return odn_bind(ctx, plan, DNNL_ARG_BIAS, ODN_BIND_INPUT, 2, bias);
}

plx_status odn_product_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                            const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                            const dnnl_memory_desc_t *wu, bool pack,
                            const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst) {
    plx_status s = odn_src_dst_step(ctx, plan, desc, post_ops, src, dst);
    return s ? s : odn_bind_weights_bias(ctx, plan, wu, pack, bias);
}

bool odn_is_const(const plx_layer_view *l, unsigned slot) {
    return l->input_constants && l->input_constants[slot];
}

plx_status odn_axis(const odn_context *ctx, const char *op, int64_t axis, unsigned rank, int *out) {
    uint32_t a = 0;
    if (!plx_axis_normalize(axis, rank, false, &a)) {
        return odn_refuse(ctx, "%s: axis %lld is out of range for rank %u", op,
                          (long long)axis, rank);
    }
    *out = (int)a;
    return NULL;
}

plx_status odn_push_direct(const odn_context *ctx, odn_plan *plan, bool concat,
                           const dnnl_memory_desc_t *srcs, int n, int axis,
                           const dnnl_memory_desc_t *dst, const char *what) {
    dnnl_primitive_attr_t attr = NULL;
    ODN_PLAN_CALL(dnnl_primitive_attr_create(&attr));
    dnnl_status_t st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    dnnl_primitive_desc_t pd = NULL;
    const char *call = concat ? "dnnl_concat_primitive_desc_create"
                              : "dnnl_reorder_primitive_desc_create";
    if (st == dnnl_success && concat) {
        st = dnnl_concat_primitive_desc_create(&pd, dst, n, axis, srcs, attr, ctx->engine);
    } else if (st == dnnl_success) {
        st = dnnl_reorder_primitive_desc_create(&pd, srcs, ctx->engine, dst, ctx->engine, attr);
    }
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        return odn_refuse(ctx, "oneDNN cannot %s (%s: %s)", what, call, dnnl_status2str(st));
    }
    plx_status slow = concat ? refuse_slow(ctx, &pd, true) : NULL;
    return slow ? slow : push_pd(ctx, plan, pd);
}

plx_status odn_plan_reorder(const odn_context *ctx, odn_plan *plan, int from, int to) {
    plx_status s = odn_push_direct(ctx, plan, false, &plan->mems[from].md, 1, 0,
                               &plan->mems[to].md, "reorder between layouts");
    if (s) {
        return s;
    }
    odn_step_set_arg(plan, DNNL_ARG_FROM, from);
    odn_step_set_arg(plan, DNNL_ARG_TO, to);
    return NULL;
}

/* ---- the dispatcher ----------------------------------------------------- */

typedef plx_status (*planner_fn)(const odn_context *ctx, const plx_layer_view *l,
                                 odn_plan *plan);

static plx_status plan_layer(const odn_context *ctx, const plx_layer_view *l,
                             const odn_post_ops *post_ops, odn_plan *plan);

plx_status odn_plan_build(const odn_context *ctx, const plx_layer_view *l,
                          const odn_post_ops *post_ops,
                          const dnnl_memory_desc_t *const *input_mds, odn_plan *plan) {
    odn_context c = *ctx;
    c.input_mds = input_mds;
    return plan_layer(&c, l, post_ops, plan);
}

static plx_status plan_layer(const odn_context *ctx, const plx_layer_view *l,
                             const odn_post_ops *post_ops, odn_plan *plan) {
    planner_fn plain = NULL;
    odn_fused_planner_fn fused = NULL;
    if (l->op == PLX_OP_LSTM || l->op == PLX_OP_GRU || l->op == PLX_OP_RNN) {
        return odn_plan_rnn(ctx, l, plan);
    }
    switch (l->op) {
    case PLX_OP_CONV: fused = odn_plan_conv; break;
    case PLX_OP_CONV_TRANSPOSE: fused = odn_plan_conv_transpose; break;
    case PLX_OP_FULLY_CONNECTED: fused = odn_plan_fully_connected; break;
    case PLX_OP_GEMM: fused = odn_plan_gemm; break;
    case PLX_OP_MATMUL: fused = odn_plan_matmul; break;
    case PLX_OP_POOL: plain = odn_plan_pool; break;
    case PLX_OP_GLOBAL_POOL: plain = odn_plan_global_pool; break;
    case PLX_OP_ACTIVATION: plain = odn_plan_activation; break;
    case PLX_OP_UNARY: plain = odn_plan_unary; break;
    case PLX_OP_BINARY: plain = odn_plan_binary; break;
    case PLX_OP_SOFTMAX: plain = odn_plan_softmax; break;
    case PLX_OP_BATCH_NORM: plain = odn_plan_batch_norm; break;
    case PLX_OP_LAYER_NORM: plain = odn_plan_layer_norm; break;
    case PLX_OP_CONCAT: plain = odn_plan_concat; break;
    case PLX_OP_REDUCE: plain = odn_plan_reduce; break;
    case PLX_OP_RESIZE: plain = odn_plan_resize; break;
    case PLX_OP_PRECOMPILED: plain = odn_plan_precompiled; break;
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_TRANSPOSE: plain = odn_plan_copy; break;
    case PLX_OP_CONV_INTEGER:
    case PLX_OP_MATMUL_INTEGER: fused = odn_plan_int8; break;
    default:
        /* R-19 (3): also every operator this build does not know. */
        return odn_refuse(ctx, "has no oneDNN primitive for %s", plx_op_name(l->op));
    }
    /* conv and matmul on quantized tensors: the int8 planner checks their
     * dtypes */
    plx_dtype x = l->input_count ? l->inputs[0].dtype : PLX_DTYPE_FLOAT32;
    if ((l->op == PLX_OP_CONV || l->op == PLX_OP_MATMUL) &&
        (x == PLX_DTYPE_INT8 || x == PLX_DTYPE_UINT8)) {
        fused = odn_plan_int8;
    }
    bool int8 = fused == odn_plan_int8 || odn_is_8bit_max_pool(l) ||
                odn_is_quantized_binary(l);
    for (unsigned i = 0; i < l->input_count; i++) {
        size_t n = 0;
        if (!int8 && l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return odn_refuse(ctx, "runs %s in float32 only, not %s (input %u)",
                          plx_op_name(l->op), plx_dtype_name(l->inputs[i].dtype), i);
        }
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || n == 0) {
            return odn_refuse(ctx, "runs no tensors without elements");
        }
    }
    for (unsigned i = 0; i < l->output_count; i++) {
        size_t n = 0;
        if (!int8 && l->outputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return odn_refuse(ctx, "runs %s in float32 only, not %s (output %u)",
                          plx_op_name(l->op), plx_dtype_name(l->outputs[i].dtype), i);
        }
        if (!plx_tensor_info_element_count(&l->outputs[i], &n) || n == 0) {
            return odn_refuse(ctx, "runs no tensors without elements");
        }
    }
    if (l->output_count != 1 || l->input_count == 0) {
        return odn_refuse(ctx, "runs %s with one output only", plx_op_name(l->op));
    }
    return fused ? fused(ctx, l, post_ops, plan) : plain(ctx, l, plan);
}

bool odn_is_8bit_max_pool(const plx_layer_view *l) {
    if (l->op != PLX_OP_POOL || l->input_count != 1 || l->output_count != 1 ||
        ((const plx_pool_desc *)l->desc)->kind != PLX_POOL_MAX) {
        return false;
    }
    plx_dtype x = l->inputs[0].dtype;
    return (x == PLX_DTYPE_INT8 || x == PLX_DTYPE_UINT8) && l->outputs[0].dtype == x;
}

static bool q8_per_tensor(const plx_tensor_info *t) {
    return (t->dtype == PLX_DTYPE_INT8 || t->dtype == PLX_DTYPE_UINT8) &&
           t->quant.kind == PLX_QUANT_PER_TENSOR;
}

bool odn_is_quantized_binary(const plx_layer_view *l) {
    return l->op == PLX_OP_BINARY && l->input_count == 2 && l->output_count == 1 &&
           q8_per_tensor(&l->inputs[0]) && q8_per_tensor(&l->inputs[1]) &&
           q8_per_tensor(&l->outputs[0]);
}

bool odn_view_is_float(const plx_layer_view *l) {
    for (unsigned i = 0; i < l->input_count; i++) {
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return false;
        }
    }
    for (unsigned i = 0; i < l->output_count; i++) {
        if (l->outputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return false;
        }
    }
    return true;
}

void odn_plan_free(const odn_context *ctx, odn_plan *plan) {
    for (unsigned i = 0; i < plan->step_count; i++) {
        if (plan->steps[i].pd) {
            dnnl_primitive_desc_destroy(plan->steps[i].pd);
        }
    }
    ctx->host->free(ctx->host, plan->steps);
    ctx->host->free(ctx->host, plan->mems);
    memset(plan, 0, sizeof *plan);
}
