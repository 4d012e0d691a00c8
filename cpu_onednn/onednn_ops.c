/* cpu_onednn: layers to oneDNN primitives (see onednn_internal.h).
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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>
#include <plexus/window.h>

#include "onednn_internal.h"

plx_status odn_status(const plx_host *host, plx_status_code code, const char *call,
                      dnnl_status_t st) {
    return host->status_create(host, code, "cpu_onednn: %s failed: %s", call,
                               dnnl_status2str(st));
}

/* A refusal: PLX_UNSUPPORTED with a printf message (shown to users as is,
 * R-18 (1)). */
static plx_status refuse(const odn_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static plx_status refuse(const odn_context *ctx, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ctx->host->status_create(ctx->host, PLX_UNSUPPORTED, "%s", buf);
}

/* A oneDNN call made while planning: a failure means oneDNN cannot express
 * or run the layer, which is a refusal naming the call and its status. */
#define PLAN_CALL(call)                                                                   \
    do {                                                                                  \
        dnnl_status_t plan_st_ = (call);                                                  \
        if (plan_st_ != dnnl_success) {                                                   \
            return refuse(ctx, "oneDNN cannot run this layer: %s: %s", #call,             \
                          dnnl_status2str(plan_st_));                                     \
        }                                                                                 \
    } while (0)

dnnl_status_t odn_plain_md(dnnl_memory_desc_t *md, const int64_t *dims, unsigned rank) {
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
    return dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, s);
}

static dnnl_status_t info_md(dnnl_memory_desc_t *md, const plx_tensor_info *t) {
    return odn_plain_md(md, t->dims, t->rank);
}

bool odn_md_is_plain(const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t p;
    return odn_plain_md(&p, md->dims, (unsigned)md->ndims) == dnnl_success &&
           dnnl_memory_desc_equal(&p, md);
}

/* The layout input `slot` of `l` is at hand in (odn_plan_build's
 * input_mds) when it has the input's dims, else the plain one. */
static dnnl_status_t input_md(const odn_context *ctx, const plx_layer_view *l, unsigned slot,
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
    return info_md(md, t);
}

/* The "any" descriptor (oneDNN picks the layout) of `like`'s dims. */
static dnnl_status_t any_md(dnnl_memory_desc_t *md, const dnnl_memory_desc_t *like) {
    return dnnl_memory_desc_init_by_tag(md, like->ndims, like->dims, dnnl_f32,
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

#define ADD_MEM(var, binding, slot, md)                                                       \
    int var = odn_plan_add_mem(ctx, plan, (binding), (slot), (md));                           \
    if (var < 0) {                                                                            \
        return out_of_memory(ctx);                                                            \
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

static plx_status out_of_memory(const odn_context *ctx) {
    return ctx->host->status_create(ctx->host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
}

plx_status odn_plan_push_step(const odn_context *ctx, odn_plan *plan, const odn_step *step) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        return out_of_memory(ctx);
    }
    *s = *step;
    plan->step_count++;
    return NULL;
}

/* Creates the primitive descriptor of one step (user scratchpad, and
 * `post_ops` when given) and appends the step; its arguments are added with
 * step_arg. */
static plx_status add_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                           const odn_post_ops *post_ops) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        return out_of_memory(ctx);
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) {
        st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
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
        return refuse(ctx, "oneDNN has no implementation for this layer "
                           "(dnnl_primitive_desc_create: %s)", dnnl_status2str(st));
    }
    plan->step_count++;
    return NULL;
}

/* A step whose descriptor oneDNN creates directly (concat, reorder). */
static plx_status push_pd(const odn_context *ctx, odn_plan *plan, dnnl_primitive_desc_t pd) {
    odn_step *s = next_step(ctx, plan);
    if (!s) {
        dnnl_primitive_desc_destroy(pd);
        return out_of_memory(ctx);
    }
    s->pd = pd;
    plan->step_count++;
    return NULL;
}

static void step_arg(odn_plan *plan, int arg, int mem) {
    odn_step *s = &plan->steps[plan->step_count - 1];
    if (s->arg_count < ODN_MAX_STEP_ARGS) {
        s->args[s->arg_count].arg = arg;
        s->args[s->arg_count].mem = (unsigned)mem;
        s->arg_count++;
    }
}

/* The memory descriptor the last step's primitive chose for `arg`. */
static const dnnl_memory_desc_t *step_md(odn_plan *plan, int arg) {
    return dnnl_primitive_desc_query_md(plan->steps[plan->step_count - 1].pd,
                                        dnnl_query_exec_arg_md, arg);
}

/* Adds a memory (`binding`, `slot`, described by `md`) and binds it as
 * argument `arg` of the last step. NULL, or PLX_OUT_OF_MEMORY. */
static plx_status bind(const odn_context *ctx, odn_plan *plan, int arg, odn_binding binding,
                       unsigned slot, const dnnl_memory_desc_t *md) {
    ADD_MEM(m, binding, slot, md);
    step_arg(plan, arg, m);
    return NULL;
}

/* Marks the plan's last `n` memories as wanting their layout (odn_mem). */
static void want_layouts(odn_plan *plan, unsigned n) {
    for (unsigned i = plan->mem_count - n; i < plan->mem_count; i++) {
        plan->mems[i].layout = true;
    }
}

/* Binds the layer's input 0 as the last step's DNNL_ARG_SRC (described by
 * `src`), then its output 0 as DNNL_ARG_DST (`dst`). */
static plx_status bind_src_dst(const odn_context *ctx, odn_plan *plan,
                               const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst) {
    plx_status s = bind(ctx, plan, DNNL_ARG_SRC, ODN_BIND_INPUT, 0, src);
    return s ? s : bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, dst);
}

/* Appends the step of `desc` (with `post_ops`, may be NULL) reading input 0
 * as `src` and writing output 0 as `dst`; further arguments are the
 * caller's. */
static plx_status src_dst_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                               const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *dst) {
    plx_status s = add_step(ctx, plan, desc, post_ops);
    return s ? s : bind_src_dst(ctx, plan, src, dst);
}

/* Binds input `slot` as the last step's weights: when `pack` (a constant
 * the primitive was created for as "any"), reordered once from its plain
 * layout `user_md` into the layout the primitive chose; otherwise read as
 * it is, which the caller arranged by creating the primitive with
 * `user_md`. */
static plx_status bind_weights(const odn_context *ctx, odn_plan *plan, unsigned slot,
                               const dnnl_memory_desc_t *user_md, bool pack) {
    if (!pack) {
        return bind(ctx, plan, DNNL_ARG_WEIGHTS, ODN_BIND_INPUT, slot, user_md);
    }
    ADD_MEM(m, ODN_BIND_PACKED, slot, step_md(plan, DNNL_ARG_WEIGHTS));
    plan->mems[m].user_md = *user_md;
    step_arg(plan, DNNL_ARG_WEIGHTS, m);
    return NULL;
}

/* Binds, after the last step's source and destination, its weights (input
 * 1, see bind_weights) and, when `bias` is given, its bias (input 2). */
static plx_status bind_weights_bias(const odn_context *ctx, odn_plan *plan,
                                    const dnnl_memory_desc_t *wu, bool pack,
                                    const dnnl_memory_desc_t *bias) {
    plx_status s = bind_weights(ctx, plan, 1, wu, pack);
    if (s || !bias) {
        return s;
    }
    return bind(ctx, plan, DNNL_ARG_BIAS, ODN_BIND_INPUT, 2, bias);
}

/* Appends the step of product `desc` (convolution, deconvolution, inner
 * product, matmul; `post_ops` appended) and binds input 0 (`src`), output 0
 * (`dst`), the weights (input 1, packed when `pack`) and the bias (input 2,
 * when `bias` is given). */
static plx_status product_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                               const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *wu, bool pack,
                               const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst) {
    plx_status s = src_dst_step(ctx, plan, desc, post_ops, src, dst);
    return s ? s : bind_weights_bias(ctx, plan, wu, pack, bias);
}

static bool is_const(const plx_layer_view *l, unsigned slot) {
    return l->input_constants && l->input_constants[slot];
}

static int norm_axis(int64_t axis, unsigned rank) {
    return (int)(axis < 0 ? axis + (int64_t)rank : axis);
}

/* Appends, without arguments, a step whose descriptor oneDNN creates
 * directly (user scratchpad): the concat of srcs[0..n) along `axis` into
 * `dst` when `concat`, else the reorder from srcs[0] to `dst`. A failure is
 * the refusal "oneDNN cannot <what> (<the creating call>: <status>)". */
static plx_status push_direct(const odn_context *ctx, odn_plan *plan, bool concat,
                              const dnnl_memory_desc_t *srcs, int n, int axis,
                              const dnnl_memory_desc_t *dst, const char *what) {
    dnnl_primitive_attr_t attr = NULL;
    PLAN_CALL(dnnl_primitive_attr_create(&attr));
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
        return refuse(ctx, "oneDNN cannot %s (%s: %s)", what, call, dnnl_status2str(st));
    }
    return push_pd(ctx, plan, pd);
}

/* ---- convolution and deconvolution ------------------------------------- */

plx_status odn_plan_reorder(const odn_context *ctx, odn_plan *plan, int from, int to) {
    plx_status s = push_direct(ctx, plan, false, &plan->mems[from].md, 1, 0,
                               &plan->mems[to].md, "reorder between layouts");
    if (s) {
        return s;
    }
    step_arg(plan, DNNL_ARG_FROM, from);
    step_arg(plan, DNNL_ARG_TO, to);
    return NULL;
}

/* The descriptors of a convolution or deconvolution that its weights' plain
 * layout *wu (the caller's) does not decide: input 0 (*src), output 0
 * (*dst), the bias (input 2, when the layer has one: *bias), and *wany,
 * the weights with the layout left to oneDNN. */
static dnnl_status_t conv_mds(const plx_layer_view *l, const dnnl_memory_desc_t *wu,
                              dnnl_memory_desc_t *src, dnnl_memory_desc_t *wany,
                              dnnl_memory_desc_t *bias, dnnl_memory_desc_t *dst) {
    dnnl_status_t st = info_md(src, &l->inputs[0]);
    if (st == dnnl_success) {
        st = info_md(dst, &l->outputs[0]);
    }
    if (st == dnnl_success) {
        st = any_md(wany, wu);
    }
    if (st == dnnl_success && l->input_count > 2) {
        st = info_md(bias, &l->inputs[2]);
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
    PLAN_CALL(any_md(&sany, src));
    PLAN_CALL(any_md(&dany, dst));
    if (dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &sany, wany, bias,
                                                   &dany, strides, dil, pl, pr) != dnnl_success) {
        return NULL;
    }
    plx_status s = add_step(ctx, plan, cd, po);
    if (s) {
        plx_status_code code = ctx->host->status_code(ctx->host, s);
        ctx->host->status_free(ctx->host, s);
        odn_plan_free(ctx, plan);
        return code == PLX_OUT_OF_MEMORY ? out_of_memory(ctx) : NULL;
    }
    dnnl_memory_desc_t csrc = *step_md(plan, DNNL_ARG_SRC), cdst = *step_md(plan, DNNL_ARG_DST);
    if ((s = bind_src_dst(ctx, plan, &csrc, &cdst))) {
        return s;
    }
    want_layouts(plan, 2);
    dnnl_memory_desc_t wu;
    /* The plain weights: the caller's wany with plain strides. */
    PLAN_CALL(odn_plain_md(&wu, wany->dims, (unsigned)wany->ndims));
    if ((s = bind_weights_bias(ctx, plan, &wu, is_const(l, 1), bias))) {
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
        PLAN_CALL(odn_plain_md(&dwu, wd, 5));
        int arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
        const dnnl_memory_desc_t *dw_md = step_md(plan, arg);
        if (!dw_md || dw_md->ndims != 5) {
            return refuse(ctx, "oneDNN gave no weights layout for the depthwise post-op");
        }
        ADD_MEM(m, ODN_BIND_PACKED, p->slot, dw_md);
        plan->mems[m].user_md = dwu;
        step_arg(plan, arg, m);
        if (p->bias) {
            PLAN_CALL(odn_plain_md(&dwb, wd, 1));
            if ((s = bind(ctx, plan, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, ODN_BIND_INPUT,
                          p->slot + 1, &dwb))) {
                return s;
            }
        }
    }
    return NULL;
}

static plx_status plan_conv(const odn_context *ctx, const plx_layer_view *l,
                            const odn_post_ops *po, odn_plan *plan) {
    const plx_conv_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    unsigned sp = x->rank - 2;
    if (x->rank < 3 || x->rank > 4 || w->rank != x->rank) {
        return refuse(ctx, "cpu_onednn runs conv with 1 or 2 spatial dimensions only");
    }
    int64_t g = d->group;
    dnnl_dims_t strides, dil, pl, pr;
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, pe, n;
        if (plx_window_dim(d->auto_pad, x->dims[2 + i], w->dims[2 + i], d->strides[i],
                           d->dilations[i], d->pads_begin[i], d->pads_end[i], false, &pb, &pe,
                           &n) != PLX_WINDOW_OK || n != y->dims[2 + i]) {
            return refuse(ctx, "cpu_onednn: conv window does not match the output shape");
        }
        int64_t dk = (w->dims[2 + i] - 1) * d->dilations[i] + 1;
        strides[i] = d->strides[i];
        dil[i] = d->dilations[i] - 1;
        pl[i] = pb;
        pr[i] = (n - 1) * d->strides[i] + dk - x->dims[2 + i] - pb; /* what oneDNN's output needs */
        if (pr[i] < 0) {
            pr[i] = pe; /* the windows stop before the end padding; keep it as given */
        }
    }
    dnnl_dims_t wd;
    int wnd;
    if (g == 1) {
        wnd = (int)w->rank;
        for (unsigned i = 0; i < w->rank; i++) {
            wd[i] = w->dims[i];
        }
    } else {
        /* [C_out, C_in/g, k...] is [g, C_out/g, C_in/g, k...] in memory order. */
        wnd = (int)w->rank + 1;
        wd[0] = g;
        wd[1] = w->dims[0] / g;
        for (unsigned i = 1; i < w->rank; i++) {
            wd[i + 1] = w->dims[i];
        }
    }
    dnnl_memory_desc_t src, wu, wany, bias, dst;
    PLAN_CALL(odn_plain_md(&wu, wd, (unsigned)wnd));
    PLAN_CALL(conv_mds(l, &wu, &src, &wany, &bias, &dst));
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
    if (is_const(l, 1) && no_operand) {
        plx_status s = plan_conv_blocked(ctx, l, po, &cd, &src, &wany, has_bias ? &bias : NULL,
                                         &dst, strides, dil, pl, pr, plan);
        if (s || plan->step_count) {
            return s;
        }
    }
    if (dw) {
        return refuse(ctx, "oneDNN has no implementation of this convolution with a "
                           "depthwise post-op");
    }
    PLAN_CALL(dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &src, is_const(l, 1) ? &wany : &wu,
        has_bias ? &bias : NULL, &dst, strides, dil, pl, pr));
    return product_step(ctx, plan, &cd, po, &src, &wu, is_const(l, 1), has_bias ? &bias : NULL,
                        &dst);
}

static plx_status plan_conv_transpose(const odn_context *ctx, const plx_layer_view *l,
                                      const odn_post_ops *po, odn_plan *plan) {
    const plx_conv_transpose_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    unsigned sp = x->rank - 2;
    if (x->rank < 3 || x->rank > 4 || w->rank != x->rank) {
        return refuse(ctx, "cpu_onednn runs conv_transpose with 1 or 2 spatial dimensions only");
    }
    int64_t g = d->group;
    dnnl_dims_t strides, dil, pl, pr;
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, out;
        if (plx_conv_transpose_dim(d->auto_pad, x->dims[2 + i], w->dims[2 + i], d->strides[i],
                                   d->dilations[i], d->output_padding[i], d->output_shape[i],
                                   d->pads_begin[i], d->pads_end[i], &pb,
                                   &out) != PLX_WINDOW_OK || out != y->dims[2 + i]) {
            return refuse(ctx, "cpu_onednn: conv_transpose geometry does not match the output");
        }
        int64_t dk = (w->dims[2 + i] - 1) * d->dilations[i] + 1;
        strides[i] = d->strides[i];
        dil[i] = d->dilations[i] - 1;
        pl[i] = pb;
        pr[i] = (x->dims[2 + i] - 1) * d->strides[i] + dk - pb - out;
        if (pb < 0 || pr[i] < 0) {
            return refuse(ctx, "cpu_onednn runs conv_transpose only when the output lies within "
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
    PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, wnd, wd, dnnl_f32, ws));
    PLAN_CALL(conv_mds(l, &wu, &src, &wany, &bias, &dst));
    bool has_bias = l->input_count > 2;
    dnnl_deconvolution_desc_t dd;
    PLAN_CALL(dnnl_dilated_deconvolution_forward_desc_init(
        &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &src,
        is_const(l, 1) ? &wany : &wu, has_bias ? &bias : NULL, &dst, strides, dil, pl, pr));
    return product_step(ctx, plan, &dd, po, &src, &wu, is_const(l, 1), has_bias ? &bias : NULL,
                        &dst);
}

/* ---- inner product and matmul ------------------------------------------ */

static plx_status plan_fully_connected(const odn_context *ctx, const plx_layer_view *l,
                                       const odn_post_ops *po, odn_plan *plan) {
    const plx_fully_connected_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return refuse(ctx, "cpu_onednn runs fully_connected with X of rank 2 or more and "
                           "W of rank 2 only");
    }
    int64_t k = x->dims[x->rank - 1], n = 1;
    for (unsigned i = 0; i + 1 < x->rank; i++) {
        n *= x->dims[i];
    }
    int64_t m = d->weights_transposed ? w->dims[0] : w->dims[1];
    dnnl_memory_desc_t src, wu, wany, bias, dst;
    int64_t sd[2] = {n, k}, dd[2] = {n, m};
    PLAN_CALL(odn_plain_md(&src, sd, 2));
    PLAN_CALL(odn_plain_md(&dst, dd, 2));
    /* oneDNN's weights are [M, K]: W itself when transposed, else W^T. */
    dnnl_dims_t wd = {m, k}, ws;
    ws[0] = d->weights_transposed ? k : 1;
    ws[1] = d->weights_transposed ? 1 : m;
    PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, 2, wd, dnnl_f32, ws));
    PLAN_CALL(any_md(&wany, &wu));
    bool has_bias = l->input_count > 2;
    if (has_bias) {
        int64_t bd[1] = {m};
        PLAN_CALL(odn_plain_md(&bias, bd, 1));
    }
    dnnl_inner_product_desc_t ipd;
    PLAN_CALL(dnnl_inner_product_forward_desc_init(&ipd, dnnl_forward_inference, &src,
                                                   is_const(l, 1) ? &wany : &wu,
                                                   has_bias ? &bias : NULL, &dst));
    return product_step(ctx, plan, &ipd, po, &src, &wu, is_const(l, 1), has_bias ? &bias : NULL,
                        &dst);
}

static plx_status plan_gemm(const odn_context *ctx, const plx_layer_view *l,
                            const odn_post_ops *po_in, odn_plan *plan) {
    const plx_gemm_desc *d = l->desc;
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->rank != 2 || b->rank != 2 || y->rank != 2) {
        return refuse(ctx, "cpu_onednn runs gemm on rank-2 A and B only");
    }
    bool has_c = l->input_count > 2 && d->beta != 0.0f;
    if (has_c && d->beta != 1.0f) {
        return refuse(ctx, "cpu_onednn runs gemm with beta 0 or 1 only, not %g", (double)d->beta);
    }
    if (po_in && po_in->count) {
        return refuse(ctx, "cpu_onednn: gemm takes no fused post-operations yet");
    }
    int64_t m = y->dims[0], n = y->dims[1], k = d->trans_a ? a->dims[0] : a->dims[1];
    dnnl_dims_t ad = {m, k}, as, bd = {k, n}, bs;
    as[0] = d->trans_a ? 1 : k;
    as[1] = d->trans_a ? m : 1;
    bs[0] = d->trans_b ? 1 : n;
    bs[1] = d->trans_b ? k : 1;
    dnnl_memory_desc_t src, wu, wany, dst, cmd;
    PLAN_CALL(dnnl_memory_desc_init_by_strides(&src, 2, ad, dnnl_f32, as));
    PLAN_CALL(dnnl_memory_desc_init_by_strides(&wu, 2, bd, dnnl_f32, bs));
    PLAN_CALL(any_md(&wany, &wu));
    PLAN_CALL(info_md(&dst, y));
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
        PLAN_CALL(odn_plain_md(&cmd, cd, 2));
        ops[po.count++] = (odn_post_op){.kind = ODN_POST_BINARY, .alg = dnnl_binary_add,
                                        .src1_md = cmd};
    }
    dnnl_matmul_desc_t mmd;
    PLAN_CALL(dnnl_matmul_desc_init(&mmd, &src, is_const(l, 1) ? &wany : &wu, NULL, &dst));
    plx_status s = product_step(ctx, plan, &mmd, &po, &src, &wu, is_const(l, 1), NULL, &dst);
    if (s || !has_c) {
        return s;
    }
    return bind(ctx, plan, DNNL_ARG_ATTR_MULTIPLE_POST_OP((int)po.count - 1) | DNNL_ARG_SRC_1,
                ODN_BIND_INPUT, 2, &cmd);
}

static plx_status plan_matmul(const odn_context *ctx, const plx_layer_view *l,
                              const odn_post_ops *po, odn_plan *plan) {
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1];
    /* numpy: a 1-D A is [1, K], a 1-D B is [K, 1]; batch dims broadcast. */
    int64_t ad[PLX_MAX_RANK + 1], bd[PLX_MAX_RANK + 1];
    unsigned ar = a->rank, br = b->rank;
    if (ar == 0 || br == 0) {
        return refuse(ctx, "cpu_onednn: matmul of a scalar");
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
    int64_t pa[PLX_MAX_RANK + 1], pb[PLX_MAX_RANK + 1], pd[PLX_MAX_RANK + 1];
    for (unsigned i = 0; i < r; i++) {
        pa[i] = i < r - ar ? 1 : ad[i - (r - ar)];
        pb[i] = i < r - br ? 1 : bd[i - (r - br)];
    }
    for (unsigned i = 0; i + 2 < r; i++) {
        pd[i] = pa[i] > pb[i] ? pa[i] : pb[i];
    }
    pd[r - 2] = pa[r - 2];
    pd[r - 1] = pb[r - 1];
    dnnl_memory_desc_t src, wu, wany, dst;
    PLAN_CALL(odn_plain_md(&src, pa, r));
    PLAN_CALL(odn_plain_md(&wu, pb, r));
    PLAN_CALL(odn_plain_md(&dst, pd, r));
    PLAN_CALL(any_md(&wany, &wu));
    /* Packing pays off for a constant B that is not broadcast over a batch. */
    bool pack = is_const(l, 1) && r == 2;
    dnnl_matmul_desc_t mmd;
    PLAN_CALL(dnnl_matmul_desc_init(&mmd, &src, pack ? &wany : &wu, NULL, &dst));
    return product_step(ctx, plan, &mmd, po, &src, &wu, pack, NULL, &dst);
}

/* ---- pooling ------------------------------------------------------------ */

static plx_status pooling_step(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan,
                               dnnl_alg_kind_t alg, const dnnl_dims_t strides,
                               const dnnl_dims_t kernel, const dnnl_dims_t dil,
                               const dnnl_dims_t pl, const dnnl_dims_t pr) {
    /* The source as it is at hand; the destination in the layout oneDNN
     * picks for it (the source's, for a blocked one). */
    dnnl_memory_desc_t src, dst, dany;
    PLAN_CALL(input_md(ctx, l, 0, &src));
    PLAN_CALL(info_md(&dst, &l->outputs[0]));
    PLAN_CALL(any_md(&dany, &dst));
    dnnl_pooling_v2_desc_t pd;
    PLAN_CALL(dnnl_pooling_v2_forward_desc_init(&pd, dnnl_forward_inference, alg, &src, &dany,
                                                strides, kernel, dil, pl, pr));
    plx_status s = add_step(ctx, plan, &pd, NULL);
    if (s) {
        return s;
    }
    dst = *step_md(plan, DNNL_ARG_DST);
    if ((s = bind_src_dst(ctx, plan, &src, &dst))) {
        return s;
    }
    want_layouts(plan, 2);
    return NULL;
}

static plx_status plan_pool(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_pool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->rank < 3 || x->rank > 4) {
        return refuse(ctx, "cpu_onednn runs pool with 1 or 2 spatial dimensions only");
    }
    bool avg = d->kind == PLX_POOL_AVERAGE;
    if (d->kind != PLX_POOL_MAX && !avg) {
        return refuse(ctx, "cpu_onednn: unknown pool kind %d", (int)d->kind);
    }
    unsigned sp = x->rank - 2;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (unsigned i = 0; i < sp; i++) {
        int64_t pb, pe, n, k = d->kernel[i], s = d->strides[i];
        int64_t dd = avg ? 1 : d->dilations[i];
        if (plx_window_dim(d->auto_pad, x->dims[2 + i], k, s, dd, d->pads_begin[i],
                           d->pads_end[i], d->ceil_mode, &pb, &pe, &n) != PLX_WINDOW_OK ||
            n != y->dims[2 + i]) {
            return refuse(ctx, "cpu_onednn: pool window does not match the output shape");
        }
        int64_t dk = (k - 1) * dd + 1;
        /* oneDNN has no ceil mode: the end padding it needs for n windows. */
        int64_t need = (n - 1) * s + dk - x->dims[2 + i] - pb;
        if (need > pe && avg && d->count_include_pad) {
            return refuse(ctx, "cpu_onednn cannot run average pool with count_include_pad "
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
            return refuse(ctx, "cpu_onednn: pool padding of %lld or more is not smaller than "
                               "the kernel (%lld), which oneDNN requires",
                          (long long)(pl[i] > pr[i] ? pl[i] : pr[i]), (long long)dk);
        }
    }
    dnnl_alg_kind_t alg = !avg ? dnnl_pooling_max
                          : d->count_include_pad ? dnnl_pooling_avg_include_padding
                                                 : dnnl_pooling_avg_exclude_padding;
    return pooling_step(ctx, l, plan, alg, strides, kernel, dil, pl, pr);
}

static plx_status plan_global_pool(const odn_context *ctx, const plx_layer_view *l,
                                   odn_plan *plan) {
    const plx_global_pool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3 || x->rank > 5) {
        return refuse(ctx, "cpu_onednn runs global_pool with 1 to 3 spatial dimensions only");
    }
    if (d->kind != PLX_POOL_MAX && d->kind != PLX_POOL_AVERAGE) {
        return refuse(ctx, "cpu_onednn: unknown pool kind %d", (int)d->kind);
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
    PLAN_CALL(input_md(ctx, l, 0, &md));
    ADD_MEM(mi, ODN_BIND_INPUT, 0, &md);
    ADD_MEM(mo, ODN_BIND_OUTPUT, 0, &md);
    want_layouts(plan, 2);
    for (unsigned i = 0; i < n; i++) {
        dnnl_eltwise_desc_t ed;
        PLAN_CALL(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, e[i].alg, &md,
                                                 e[i].alpha, e[i].beta));
        plx_status s = add_step(ctx, plan, &ed, NULL);
        if (s) {
            return s;
        }
        step_arg(plan, DNNL_ARG_SRC, i == 0 ? mi : mo);
        step_arg(plan, DNNL_ARG_DST, mo);
    }
    return NULL;
}

/* The eltwise steps (at most 3) that compute activation `d`, or the
 * refusal. */
static plx_status activation_elts(const odn_context *ctx, const plx_activation_desc *d,
                                  elt e[3], unsigned *count) {
    float a = d->alpha, b = d->beta;
    unsigned n = 1;
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
        return refuse(ctx, "cpu_onednn does not run softplus (oneDNN 2.6's soft_relu is "
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
        return name ? refuse(ctx, "oneDNN 2.6 has no eltwise algorithm for %s", name)
                    : refuse(ctx, "cpu_onednn: unknown activation %d", (int)d->func);
    }
    }
    *count = n;
    return NULL;
}

static plx_status plan_activation(const odn_context *ctx, const plx_layer_view *l,
                                  odn_plan *plan) {
    elt e[3];
    unsigned n = 0;
    plx_status s = activation_elts(ctx, l->desc, e, &n);
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

typedef plx_status (*fused_planner_fn)(const odn_context *ctx, const plx_layer_view *l,
                                       const odn_post_ops *po, odn_plan *plan);

static plx_status plan_precompiled(const odn_context *ctx, const plx_layer_view *l,
                                   odn_plan *plan) {
    const odn_fused *f = fused_payload(l);
    if (!f) {
        return refuse(ctx, "cpu_onednn runs only its own precompiled layers");
    }
    fused_planner_fn planner = f->op == PLX_OP_CONV             ? plan_conv
                               : f->op == PLX_OP_CONV_TRANSPOSE ? plan_conv_transpose
                               : f->op == PLX_OP_FULLY_CONNECTED ? plan_fully_connected
                               : f->op == PLX_OP_MATMUL         ? plan_matmul
                                                                : NULL;
    if (!planner) {
        return refuse(ctx, "cpu_onednn: precompiled base %s is not fusable", plx_op_name(f->op));
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
                f->dw_slot < 2 || !is_const(l, f->dw_slot) || dw_w->rank != 4 ||
                dw_w->dims[0] != f->pw_output.dims[1] || dw_w->dims[1] != 1 ||
                dw_w->dims[2] != 3 || dw_w->dims[3] != 3 ||
                (f->dw_bias && (l->inputs[f->dw_slot + 1].rank != 1 ||
                                l->inputs[f->dw_slot + 1].dims[0] != dw_w->dims[0]))) {
                return refuse(ctx, "cpu_onednn: malformed depthwise fusion");
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
        plx_status s = activation_elts(ctx, act, e, &k);
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

static plx_status plan_unary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_unary_desc *d = l->desc;
    elt e;
    switch (d->func) {
    case PLX_UNARY_ABS: e = (elt){dnnl_eltwise_abs, 0.0f, 0.0f}; break;
    case PLX_UNARY_NEG: e = (elt){dnnl_eltwise_linear, -1.0f, 0.0f}; break;
    case PLX_UNARY_SQRT: e = (elt){dnnl_eltwise_sqrt, 0.0f, 0.0f}; break;
    case PLX_UNARY_EXP: e = (elt){dnnl_eltwise_exp, 0.0f, 0.0f}; break;
    default: {
        const char *name = plx_unary_func_name(d->func);
        /* log, round and the rest: oneDNN's results differ from ONNX's at
         * the edges (negative inputs, halves) or it has no algorithm. */
        return name ? refuse(ctx, "cpu_onednn does not run unary %s (no exact oneDNN 2.6 "
                                  "eltwise algorithm)", name)
                    : refuse(ctx, "cpu_onednn: unknown unary function %d", (int)d->func);
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

static plx_status plan_binary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_binary_desc *d = l->desc;
    dnnl_alg_kind_t alg;
    bool commutative = true;
    switch (d->func) {
    case PLX_BINARY_ADD: alg = dnnl_binary_add; break;
    case PLX_BINARY_MUL: alg = dnnl_binary_mul; break;
    case PLX_BINARY_MAX: alg = dnnl_binary_max; break;
    case PLX_BINARY_MIN: alg = dnnl_binary_min; break;
    case PLX_BINARY_SUB: alg = dnnl_binary_sub; commutative = false; break;
    case PLX_BINARY_DIV: alg = dnnl_binary_div; commutative = false; break;
    default: {
        const char *name = plx_binary_func_name(d->func);
        return name ? refuse(ctx, "cpu_onednn does not run binary %s", name)
                    : refuse(ctx, "cpu_onednn: unknown binary function %d", (int)d->func);
    }
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
            return refuse(ctx, "cpu_onednn runs binary %s only when the first input has the "
                               "output's shape (oneDNN broadcasts the second input only)",
                          plx_binary_func_name(d->func));
        }
        first = 1; /* swap: op(a, b) == op(b, a) */
    }
    dnnl_memory_desc_t m0, m1, md;
    PLAN_CALL(odn_plain_md(&m0, first ? b : a, r));
    PLAN_CALL(odn_plain_md(&m1, first ? a : b, r));
    PLAN_CALL(odn_plain_md(&md, yd, r));
    /* The full-shape input in the layout it is at hand in (a blocked one
     * when a convolution wrote it), the other in that layout too when it
     * has the same shape (odn_graph_plan reorders it if need be), and the
     * result in it. */
    dnnl_memory_desc_t held;
    PLAN_CALL(input_md(ctx, l, first, &held));
    bool blocked = held.ndims == (int)r && !odn_md_is_plain(&held);
    if (blocked) {
        m0 = held;
        md = held;
        if (a_full && b_full) {
            m1 = held;
        }
    }
    dnnl_binary_desc_t bd;
    PLAN_CALL(dnnl_binary_desc_init(&bd, alg, &m0, &m1, &md));
    plx_status s = add_step(ctx, plan, &bd, NULL);
    if (s || (s = bind(ctx, plan, DNNL_ARG_SRC_0, ODN_BIND_INPUT, first, &m0)) ||
        (s = bind(ctx, plan, DNNL_ARG_SRC_1, ODN_BIND_INPUT, 1 - first, &m1)) ||
        (s = bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, &md))) {
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

static plx_status plan_softmax(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_softmax_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank == 0) {
        return refuse(ctx, "cpu_onednn: softmax of a scalar");
    }
    dnnl_memory_desc_t md;
    PLAN_CALL(info_md(&md, x));
    dnnl_softmax_v2_desc_t sd;
    PLAN_CALL(dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                                d->log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                                &md, &md, norm_axis(d->axis, x->rank)));
    return src_dst_step(ctx, plan, &sd, NULL, &md, &md);
}

static plx_status plan_batch_norm(const odn_context *ctx, const plx_layer_view *l,
                                  odn_plan *plan) {
    const plx_batch_norm_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2 || x->rank > 5) {
        return refuse(ctx, "cpu_onednn runs batch_norm on tensors of rank 2 to 5 only");
    }
    for (unsigned i = 1; i < 5; i++) {
        size_t n = 0;
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || (int64_t)n != x->dims[1]) {
            return refuse(ctx, "cpu_onednn runs batch_norm with [C] scale, bias, mean and "
                               "variance only");
        }
    }
    dnnl_memory_desc_t md, cmd;
    PLAN_CALL(info_md(&md, x));
    int64_t c[1] = {x->dims[1]};
    PLAN_CALL(odn_plain_md(&cmd, c, 1));
    dnnl_batch_normalization_desc_t bd;
    PLAN_CALL(dnnl_batch_normalization_forward_desc_init(
        &bd, dnnl_forward_inference, &md, d->epsilon,
        dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift));
    plx_status s = src_dst_step(ctx, plan, &bd, NULL, &md, &md);
    /* Inputs 1 to 4: scale, shift, mean, variance, each [C]. */
    const int args[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (unsigned i = 0; !s && i < 4; i++) {
        s = bind(ctx, plan, args[i], ODN_BIND_INPUT, 1 + i, &cmd);
    }
    return s;
}

static plx_status plan_layer_norm(const odn_context *ctx, const plx_layer_view *l,
                                  odn_plan *plan) {
    const plx_layer_norm_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank == 0) {
        return refuse(ctx, "cpu_onednn: layer_norm of a scalar");
    }
    int axis = norm_axis(d->axis, x->rank);
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
            return refuse(ctx, "cpu_onednn runs layer_norm only with a scale%s of the "
                               "normalised shape (no broadcasting)",
                          l->input_count > 2 ? " and bias" : "");
        }
    }
    bool has_bias = l->input_count > 2;
    int64_t dd[2] = {outer, inner}, sd[1] = {outer}, cd[1] = {inner};
    dnnl_memory_desc_t md, stat, cmd;
    PLAN_CALL(odn_plain_md(&md, dd, 2));
    PLAN_CALL(odn_plain_md(&stat, sd, 1));
    PLAN_CALL(odn_plain_md(&cmd, cd, 1));
    dnnl_layer_normalization_desc_t ld;
    PLAN_CALL(dnnl_layer_normalization_forward_desc_init(
        &ld, dnnl_forward_inference, &md, &stat, d->epsilon,
        dnnl_use_scale | (has_bias ? dnnl_use_shift : 0u)));
    plx_status s = src_dst_step(ctx, plan, &ld, NULL, &md, &md);
    if (s || (s = bind(ctx, plan, DNNL_ARG_SCALE, ODN_BIND_INPUT, 1, &cmd)) ||
        (has_bias && (s = bind(ctx, plan, DNNL_ARG_SHIFT, ODN_BIND_INPUT, 2, &cmd)))) {
        return s;
    }
    /* Inference computes the statistics; oneDNN may still want buffers. */
    const int stat_args[2] = {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (unsigned i = 0; !s && i < 2; i++) {
        const dnnl_memory_desc_t *q = step_md(plan, stat_args[i]);
        if (q && dnnl_memory_desc_get_size(q) > 0) {
            s = bind(ctx, plan, stat_args[i], ODN_BIND_INTERNAL, 0, q);
        }
    }
    return s;
}

/* ---- data movement and reductions --------------------------------------- */

static plx_status plan_concat(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_axis_desc *d = l->desc;
    const plx_tensor_info *y = &l->outputs[0];
    if (y->rank == 0) {
        return refuse(ctx, "cpu_onednn: concat of scalars");
    }
    if (l->input_count > 64) {
        return refuse(ctx, "cpu_onednn runs concat of at most 64 inputs, not %u",
                      l->input_count);
    }
    dnnl_memory_desc_t srcs[64], dst;
    for (unsigned i = 0; i < l->input_count; i++) {
        PLAN_CALL(info_md(&srcs[i], &l->inputs[i]));
    }
    PLAN_CALL(info_md(&dst, y));
    plx_status s = push_direct(ctx, plan, true, srcs, (int)l->input_count,
                               norm_axis(d->axis, y->rank), &dst, "run this concat");
    for (unsigned i = 0; !s && i < l->input_count; i++) {
        s = bind(ctx, plan, DNNL_ARG_MULTIPLE_SRC + (int)i, ODN_BIND_INPUT, i, &srcs[i]);
    }
    return s ? s : bind(ctx, plan, DNNL_ARG_DST, ODN_BIND_OUTPUT, 0, &dst);
}

static plx_status plan_reduce(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_reduce_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    dnnl_alg_kind_t alg;
    float p = 0.0f;
    switch (d->func) {
    case PLX_REDUCE_MEAN: alg = dnnl_reduction_mean; break;
    case PLX_REDUCE_MAX: alg = dnnl_reduction_max; break;
    case PLX_REDUCE_MIN: alg = dnnl_reduction_min; break;
    case PLX_REDUCE_SUM: alg = dnnl_reduction_sum; break;
    case PLX_REDUCE_PROD: alg = dnnl_reduction_mul; break;
    case PLX_REDUCE_L1: alg = dnnl_reduction_norm_lp_sum; p = 1.0f; break;
    case PLX_REDUCE_L2: alg = dnnl_reduction_norm_lp_sum; p = 2.0f; break;
    case PLX_REDUCE_SUM_SQUARE: alg = dnnl_reduction_norm_lp_power_p_sum; p = 2.0f; break;
    default:
        return refuse(ctx, "cpu_onednn does not run reduce function %d (log_sum and "
                           "log_sum_exp have no oneDNN 2.6 reduction)", (int)d->func);
    }
    if (x->rank == 0) {
        return refuse(ctx, "cpu_onednn: reduce of a scalar");
    }
    if (d->axis_count == 0 && d->noop_with_empty_axes) {
        return refuse(ctx, "cpu_onednn: reduce with noop_with_empty_axes and no axes is a copy");
    }
    int64_t yd[PLX_MAX_RANK];
    memcpy(yd, x->dims, x->rank * sizeof yd[0]);
    if (d->axis_count == 0) {
        for (unsigned i = 0; i < x->rank; i++) {
            yd[i] = 1;
        }
    }
    for (unsigned i = 0; i < d->axis_count && i < PLX_MAX_RANK; i++) {
        yd[norm_axis(d->axes[i], x->rank)] = 1;
    }
    /* keepdims false drops the 1s, which does not move any byte. */
    dnnl_memory_desc_t src, dst;
    PLAN_CALL(info_md(&src, x));
    PLAN_CALL(odn_plain_md(&dst, yd, x->rank));
    if (dnnl_memory_desc_equal(&src, &dst)) {
        return refuse(ctx, "cpu_onednn: reduce over axes of size 1 only is a copy");
    }
    dnnl_reduction_desc_t rd;
    PLAN_CALL(dnnl_reduction_desc_init(&rd, alg, &src, &dst, p, 0.0f));
    return src_dst_step(ctx, plan, &rd, NULL, &src, &dst);
}

static plx_status plan_resize(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_resize_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    dnnl_alg_kind_t alg;
    /* oneDNN maps output index o to input coordinate (o + 0.5) / f - 0.5
     * (ONNX's half_pixel); nearest rounds halves up (round_prefer_ceil),
     * linear clamps at the edges as ONNX does. */
    if (d->coord != PLX_RESIZE_COORD_HALF_PIXEL &&
        !(d->coord == PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL && y->dims[2] > 1 && y->dims[3] > 1)) {
        return refuse(ctx, "cpu_onednn runs resize with half_pixel coordinates only (oneDNN's "
                           "only mapping)");
    }
    if (d->mode == PLX_RESIZE_LINEAR) {
        alg = dnnl_resampling_linear;
    } else if (d->mode == PLX_RESIZE_NEAREST && d->nearest == PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL) {
        alg = dnnl_resampling_nearest;
    } else {
        return refuse(ctx, "cpu_onednn runs nearest resize with round_prefer_ceil only "
                           "(oneDNN rounds halves up)");
    }
    if (x->rank != 4) {
        return refuse(ctx, "cpu_onednn runs resize on rank-4 tensors only");
    }
    if (alg == dnnl_resampling_linear &&
        (y->dims[2] < x->dims[2] || y->dims[3] < x->dims[3])) {
        return refuse(ctx, "cpu_onednn runs linear resize for upsampling only (oneDNN's "
                           "downsampling differs from ONNX's)");
    }
    float factors[2];
    bool given = d->scales[0] > 0.0f && d->scales[1] > 0.0f && d->sizes[0] == 0;
    for (unsigned i = 0; i < 2; i++) {
        factors[i] = given ? d->scales[i] : (float)y->dims[2 + i] / (float)x->dims[2 + i];
    }
    dnnl_memory_desc_t src, dst;
    PLAN_CALL(info_md(&src, x));
    PLAN_CALL(info_md(&dst, y));
    dnnl_resampling_desc_t rd;
    PLAN_CALL(dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, alg, factors, &src,
                                                &dst));
    return src_dst_step(ctx, plan, &rd, NULL, &src, &dst);
}

/* ---- the dispatcher ----------------------------------------------------- */

/* Reshape-like operators move no byte: one reorder (a copy) between the
 * same plain layout. Transpose is a reorder from the input read through
 * permuted strides. */
static plx_status plan_copy(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    dnnl_memory_desc_t src, dst;
    PLAN_CALL(info_md(&dst, y));
    if (l->op == PLX_OP_TRANSPOSE) {
        const plx_transpose_desc *d = l->desc;
        int64_t in_strides[PLX_MAX_RANK];
        plx_tensor_info_strides(x, in_strides);
        dnnl_dims_t dims, strides;
        if (y->rank == 0) {
            return refuse(ctx, "cpu_onednn: transpose of a scalar");
        }
        for (unsigned i = 0; i < y->rank; i++) {
            unsigned p = d->perm_count ? d->perm[i] : y->rank - 1 - i;
            if (p >= x->rank) {
                return refuse(ctx, "cpu_onednn: transpose permutation out of range");
            }
            dims[i] = y->dims[i];
            strides[i] = in_strides[p];
        }
        PLAN_CALL(dnnl_memory_desc_init_by_strides(&src, (int)y->rank, dims, dnnl_f32, strides));
    } else {
        src = dst;
    }
    char what[64];
    snprintf(what, sizeof what, "run this %s", plx_op_name(l->op));
    plx_status s = push_direct(ctx, plan, false, &src, 1, 0, &dst, what);
    if (s || (s = bind(ctx, plan, DNNL_ARG_FROM, ODN_BIND_INPUT, 0, &src))) {
        return s;
    }
    return bind(ctx, plan, DNNL_ARG_TO, ODN_BIND_OUTPUT, 0, &dst);
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
    fused_planner_fn fused = NULL;
    switch (l->op) {
    case PLX_OP_CONV: fused = plan_conv; break;
    case PLX_OP_CONV_TRANSPOSE: fused = plan_conv_transpose; break;
    case PLX_OP_FULLY_CONNECTED: fused = plan_fully_connected; break;
    case PLX_OP_GEMM: fused = plan_gemm; break;
    case PLX_OP_MATMUL: fused = plan_matmul; break;
    case PLX_OP_POOL: plain = plan_pool; break;
    case PLX_OP_GLOBAL_POOL: plain = plan_global_pool; break;
    case PLX_OP_ACTIVATION: plain = plan_activation; break;
    case PLX_OP_UNARY: plain = plan_unary; break;
    case PLX_OP_BINARY: plain = plan_binary; break;
    case PLX_OP_SOFTMAX: plain = plan_softmax; break;
    case PLX_OP_BATCH_NORM: plain = plan_batch_norm; break;
    case PLX_OP_LAYER_NORM: plain = plan_layer_norm; break;
    case PLX_OP_CONCAT: plain = plan_concat; break;
    case PLX_OP_REDUCE: plain = plan_reduce; break;
    case PLX_OP_RESIZE: plain = plan_resize; break;
    case PLX_OP_PRECOMPILED: plain = plan_precompiled; break;
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_TRANSPOSE: plain = plan_copy; break;
    default:
        /* R-19 (3): also every operator this build does not know. */
        return refuse(ctx, "cpu_onednn has no oneDNN primitive for %s", plx_op_name(l->op));
    }
    for (unsigned i = 0; i < l->input_count; i++) {
        size_t n = 0;
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return refuse(ctx, "cpu_onednn runs %s in float32 only, not %s (input %u)",
                          plx_op_name(l->op), plx_dtype_name(l->inputs[i].dtype), i);
        }
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || n == 0) {
            return refuse(ctx, "cpu_onednn runs no tensors without elements");
        }
    }
    for (unsigned i = 0; i < l->output_count; i++) {
        size_t n = 0;
        if (l->outputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return refuse(ctx, "cpu_onednn runs %s in float32 only, not %s (output %u)",
                          plx_op_name(l->op), plx_dtype_name(l->outputs[i].dtype), i);
        }
        if (!plx_tensor_info_element_count(&l->outputs[i], &n) || n == 0) {
            return refuse(ctx, "cpu_onednn runs no tensors without elements");
        }
    }
    if (l->output_count != 1 || l->input_count == 0) {
        return refuse(ctx, "cpu_onednn runs %s with one output only", plx_op_name(l->op));
    }
    return fused ? fused(ctx, l, post_ops, plan) : plain(ctx, l, plan);
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
