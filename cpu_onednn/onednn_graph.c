/* cpu_onednn: the plan of a whole workload (see onednn_internal.h).
 *
 * A workload runs one layer, or a graph: the layers of a subgraph that
 * odn_optimize_subgraph replaced by one precompiled layer. Either way the
 * plan is assembled here, layer after layer, from odn_plan_build's plans:
 * each layer is told the layouts its inputs are at hand in, may choose its
 * output's (a convolution's blocked one), and where a layer reads a tensor
 * in a layout other than the one it is in, a reorder into a buffer of the
 * workload is inserted, once per tensor and layout. Tensors read or written
 * plain under other dims (a flatten, a binary's padded rank) share their
 * buffer. The workload's outputs are written plain: directly when the
 * producing layer writes plain, else through a reorder. */
#include <stdio.h>
#include <string.h>

#include "onednn_internal.h"

const odn_graph_payload *odn_graph_payload_of(const plx_layer_view *layer) {
    if (layer->op != PLX_OP_PRECOMPILED || !layer->desc) {
        return NULL;
    }
    const plx_precompiled_desc *d = layer->desc;
    const odn_graph_payload *p = d->data;
    if (!p || d->size < sizeof *p || p->magic != ODN_GRAPH_MAGIC ||
        p->layer_size != sizeof(odn_graph_layer) || p->layer_count == 0 ||
        p->input_count != layer->input_count || p->output_count != layer->output_count) {
        return NULL;
    }
    size_t want = sizeof *p + (size_t)p->layer_count * sizeof(odn_graph_layer) +
                  ((size_t)p->ref_count + p->output_count) * sizeof(uint32_t);
    if (d->size != want) {
        return NULL;
    }
    const odn_graph_layer *ls = odn_graph_layers(p);
    const uint32_t *refs = odn_graph_refs(p);
    for (uint32_t k = 0; k < p->layer_count; k++) {
        const odn_graph_layer *g = &ls[k];
        if (g->first_input > p->ref_count || g->input_count > p->ref_count - g->first_input ||
            g->input_count == 0 || g->output.rank > PLX_MAX_RANK) {
            return NULL;
        }
        for (uint32_t j = 0; j < g->input_count; j++) {
            if (refs[g->first_input + j] >= p->input_count + k) {
                return NULL; /* only inputs and earlier layers' outputs */
            }
        }
    }
    const uint32_t *outs = refs + p->ref_count;
    for (uint32_t i = 0; i < p->output_count; i++) {
        if (outs[i] < p->input_count || outs[i] >= p->input_count + p->layer_count) {
            return NULL;
        }
    }
    return p;
}

/* What the assembly works through: the layers, where their inputs come
 * from, and what the workload's outputs are. Tensors 0 .. inputs-1 are the
 * workload's inputs, inputs + k layer k's output. */
typedef struct graph {
    const plx_layer_view *layer; /* the workload's */
    const odn_graph_payload *payload; /* NULL: the layer alone */
    unsigned inputs, layers, max_inputs;
} graph;

static uint32_t layer_input(const graph *g, unsigned k, unsigned j) {
    return g->payload ? odn_graph_refs(g->payload)[odn_graph_layers(g->payload)[k].first_input + j]
                      : j;
}

static const plx_tensor_info *tensor_info(const graph *g, uint32_t t) {
    if (t < g->inputs) {
        return &g->layer->inputs[t];
    }
    return g->payload ? &odn_graph_layers(g->payload)[t - g->inputs].output
                      : &g->layer->outputs[0];
}

/* The workload's output slot tensor `t` is, or -1. */
static int output_slot(const graph *g, uint32_t t) {
    if (!g->payload) {
        return t == g->inputs ? 0 : -1;
    }
    const uint32_t *outs = odn_graph_refs(g->payload) + g->payload->ref_count;
    for (uint32_t i = 0; i < g->payload->output_count; i++) {
        if (outs[i] == t) {
            return (int)i;
        }
    }
    return -1;
}

/* Layer k's view, with its inputs' infos and constants in the caller's
 * arrays (g->max_inputs entries). */
static void layer_view(const graph *g, unsigned k, plx_layer_view *v, plx_tensor_info *infos,
                       const void **consts, plx_precompiled_desc *fused) {
    if (!g->payload) {
        *v = *g->layer;
        return;
    }
    const odn_graph_layer *gl = &odn_graph_layers(g->payload)[k];
    memset(v, 0, sizeof *v);
    v->struct_size = (uint32_t)sizeof *v;
    v->name = gl->name;
    v->op = gl->op;
    v->desc = gl->has_desc ? (const void *)&gl->desc : NULL;
    if (gl->op == PLX_OP_PRECOMPILED) {
        *fused = (plx_precompiled_desc){sizeof *fused, "fused", &gl->fused, sizeof gl->fused};
        v->desc = fused;
    }
    for (unsigned j = 0; j < gl->input_count; j++) {
        uint32_t t = layer_input(g, k, j);
        infos[j] = *tensor_info(g, t);
        consts[j] = t < g->inputs && g->layer->input_constants ? g->layer->input_constants[t]
                                                               : NULL;
    }
    v->inputs = infos;
    v->input_count = gl->input_count;
    v->outputs = &gl->output;
    v->output_count = 1;
    v->input_constants = consts;
}

/* Per tensor: the plan memory holding it in the layout its producer chose
 * (-1: not yet; inputs get theirs on first use), and the last conversion
 * made of it. */
typedef struct tensor_state {
    int mem;
    int converted;
} tensor_state;

typedef struct assembly {
    const odn_context *ctx;
    const graph *g;
    odn_plan *plan;
    tensor_state *ts;
} assembly;

static plx_status no_memory(const odn_context *ctx) {
    return ctx->host->status_create(ctx->host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
}

/* A memory over the buffer of memory `m`, seen as `md` (plain, same size). */
static int alias_of(assembly *a, int m, const dnnl_memory_desc_t *md) {
    const odn_mem *base = &a->plan->mems[m];
    if (base->binding == ODN_BIND_INPUT || base->binding == ODN_BIND_OUTPUT) {
        return odn_plan_add_mem(a->ctx, a->plan, base->binding, base->slot, md);
    }
    unsigned buffer = base->binding == ODN_BIND_ALIAS ? base->slot : (unsigned)m;
    return odn_plan_add_mem(a->ctx, a->plan, ODN_BIND_ALIAS, buffer, md);
}

static bool same_plain_bytes(const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *y) {
    return odn_md_is_plain(x) && odn_md_is_plain(y) &&
           dnnl_memory_desc_get_size(x) == dnnl_memory_desc_get_size(y);
}

static bool same_dims(const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *y) {
    return x->ndims == y->ndims &&
           memcmp(x->dims, y->dims, (size_t)x->ndims * sizeof x->dims[0]) == 0;
}

/* The memory holding tensor `t` now (its producer's; an input's plain). */
static int current_mem(assembly *a, uint32_t t) {
    if (a->ts[t].mem < 0 && t < a->g->inputs) {
        dnnl_memory_desc_t md;
        const plx_tensor_info *info = tensor_info(a->g, t);
        if (odn_info_md(&md, info) != dnnl_success) {
            return -1;
        }
        a->ts[t].mem = odn_plan_add_mem(a->ctx, a->plan, ODN_BIND_INPUT, t, &md);
    }
    return a->ts[t].mem;
}

/* A new internal memory `md` holding a reorder of memory `from`. */
static plx_status reorder_into(assembly *a, int from, const dnnl_memory_desc_t *md, int *out) {
    int to = odn_plan_add_mem(a->ctx, a->plan, ODN_BIND_INTERNAL, 0, md);
    if (to < 0) {
        return no_memory(a->ctx);
    }
    *out = to;
    return odn_plan_reorder(a->ctx, a->plan, from, to);
}

/* The memory through which a layer reads tensor `t` as `md`: the tensor's
 * own, an alias of it, or a conversion (made once per tensor and layout). */
static plx_status mem_for(assembly *a, uint32_t t, const dnnl_memory_desc_t *md, int *out) {
    int m = current_mem(a, t);
    if (m < 0) {
        return no_memory(a->ctx);
    }
    const dnnl_memory_desc_t *have = &a->plan->mems[m].md;
    int c = a->ts[t].converted;
    if (dnnl_memory_desc_equal(have, md)) {
        *out = m;
    } else if (same_plain_bytes(have, md)) {
        *out = alias_of(a, m, md);
    } else if (c >= 0 && dnnl_memory_desc_equal(&a->plan->mems[c].md, md)) {
        *out = c;
    } else if (c >= 0 && same_plain_bytes(&a->plan->mems[c].md, md)) {
        *out = alias_of(a, c, md);
    } else if (same_dims(have, md)) {
        plx_status s = reorder_into(a, m, md, out);
        if (s) {
            return s;
        }
        a->ts[t].converted = *out;
    } else {
        /* Other dims (a flatten of a blocked tensor): plain in the
         * producer's dims, then seen in the reader's, reordered again if
         * the reader wants a layout that is not plain. */
        dnnl_memory_desc_t plain, flat;
        if (odn_plain_md_as(&plain, have->dims, (unsigned)have->ndims, have->data_type) !=
                dnnl_success ||
            odn_plain_md_as(&flat, md->dims, (unsigned)md->ndims, md->data_type) !=
                dnnl_success) {
            return no_memory(a->ctx);
        }
        int p;
        plx_status s = mem_for(a, t, &plain, &p);
        if (s) {
            return s;
        }
        int v = alias_of(a, p, &flat);
        if (v < 0 || odn_md_is_plain(md)) {
            *out = v;
        } else if ((s = reorder_into(a, v, md, out))) {
            return s;
        }
    }
    return *out < 0 ? no_memory(a->ctx) : NULL;
}

/* Plans layer k with the layouts its inputs are at hand in; when it
 * refuses them, again with plain ones (which every planner takes). */
static plx_status plan_with_layouts(assembly *a, const plx_layer_view *v, unsigned k,
                                    const dnnl_memory_desc_t **mds, odn_plan *sub) {
    bool any = false;
    for (unsigned j = 0; j < v->input_count; j++) {
        uint32_t t = layer_input(a->g, k, j);
        int m = a->ts[t].mem;
        mds[j] = m >= 0 && !odn_md_is_plain(&a->plan->mems[m].md) ? &a->plan->mems[m].md : NULL;
        any = any || mds[j];
    }
    plx_status s = odn_plan_build(a->ctx, v, NULL, mds, sub);
    if (s && any && a->ctx->host->status_code(a->ctx->host, s) == PLX_UNSUPPORTED) {
        a->ctx->host->status_free(a->ctx->host, s);
        odn_plan_free(a->ctx, sub);
        s = odn_plan_build(a->ctx, v, NULL, NULL, sub);
    }
    return s;
}

/* Moves sub's steps to the plan, their memories mapped by `map`. */
static plx_status append_steps(assembly *a, odn_plan *sub, const int *map) {
    for (unsigned i = 0; i < sub->step_count; i++) {
        odn_step st = sub->steps[i];
        for (unsigned x = 0; x < st.arg_count; x++) {
            st.args[x].mem = (unsigned)map[st.args[x].mem];
        }
        plx_status s = odn_plan_push_step(a->ctx, a->plan, &st);
        if (s) {
            return s;
        }
        sub->steps[i].pd = NULL; /* the plan owns it now */
    }
    return NULL;
}

static bool is_reshape(plx_op op) {
    return op == PLX_OP_RESHAPE || op == PLX_OP_FLATTEN || op == PLX_OP_SQUEEZE ||
           op == PLX_OP_UNSQUEEZE;
}

/* Adds layer k of the graph to the plan. */
static plx_status add_layer(assembly *a, unsigned k, const plx_layer_view *v,
                            const dnnl_memory_desc_t **mds) {
    const odn_context *ctx = a->ctx;
    uint32_t t_out = a->g->inputs + k;
    int slot = output_slot(a->g, t_out);
    dnnl_memory_desc_t out_plain;
    if (odn_info_md(&out_plain, &v->outputs[0]) != dnnl_success) {
        /* A dtype oneDNN has no type for (bool, int64, ...): the planner
         * refuses the layer, and says why. */
        odn_plan sub;
        memset(&sub, 0, sizeof sub);
        plx_status s = odn_plan_build(ctx, v, NULL, NULL, &sub);
        odn_plan_free(ctx, &sub);
        return s ? s : odn_refuse(ctx, "has no oneDNN data type for %s",
                                  plx_dtype_name(v->outputs[0].dtype));
    }
    if (is_reshape(v->op) && slot < 0) {
        /* Inside a graph a reshape moves no data: its output is its input,
         * plain, under the output's dims. */
        dnnl_memory_desc_t in_plain;
        const plx_tensor_info *x = &v->inputs[0];
        if (odn_info_md(&in_plain, x) != dnnl_success) {
            return no_memory(ctx);
        }
        int m;
        plx_status s = mem_for(a, layer_input(a->g, k, 0), &in_plain, &m);
        if (s) {
            return s;
        }
        a->ts[t_out].mem = alias_of(a, m, &out_plain);
        return a->ts[t_out].mem < 0 ? no_memory(ctx) : NULL;
    }
    odn_plan sub;
    memset(&sub, 0, sizeof sub);
    plx_status s = plan_with_layouts(a, v, k, mds, &sub);
    int *map = NULL;
    if (!s && sub.mem_count) {
        map = ctx->host->alloc(ctx->host, sub.mem_count * sizeof *map, 0);
        s = map ? NULL : no_memory(ctx);
    }
    int reorder_out = -1;
    for (unsigned i = 0; !s && i < sub.mem_count; i++) {
        const odn_mem *m = &sub.mems[i];
        switch (m->binding) {
        case ODN_BIND_INPUT: {
            uint32_t t = layer_input(a->g, k, m->slot);
            if (m->layout) {
                s = mem_for(a, t, &m->md, &map[i]);
                break;
            }
            /* a view of the plain tensor */
            dnnl_memory_desc_t plain;
            const plx_tensor_info *info = tensor_info(a->g, t);
            int p = -1;
            s = odn_info_md(&plain, info) == dnnl_success
                    ? mem_for(a, t, &plain, &p)
                    : no_memory(ctx);
            if (!s) {
                map[i] = dnnl_memory_desc_equal(&plain, &m->md) ? p : alias_of(a, p, &m->md);
            }
            break;
        }
        case ODN_BIND_OUTPUT:
            if (a->ts[t_out].mem >= 0) {
                /* bound again (same buffer), maybe under another view */
                int o = a->ts[t_out].mem;
                map[i] = dnnl_memory_desc_equal(&a->plan->mems[o].md, &m->md)
                             ? o
                             : alias_of(a, o, &m->md);
            } else if (!m->layout) {
                /* a view of the plain output */
                int base = slot >= 0 ? odn_plan_add_mem(ctx, a->plan, ODN_BIND_OUTPUT,
                                                        (unsigned)slot, &out_plain)
                                     : odn_plan_add_mem(ctx, a->plan, ODN_BIND_INTERNAL, 0,
                                                        &out_plain);
                map[i] = base < 0 || dnnl_memory_desc_equal(&out_plain, &m->md)
                             ? base
                             : alias_of(a, base, &m->md);
                a->ts[t_out].mem = base;
            } else if (slot >= 0 && odn_md_is_plain(&m->md)) {
                map[i] = odn_plan_add_mem(ctx, a->plan, ODN_BIND_OUTPUT, (unsigned)slot, &m->md);
                a->ts[t_out].mem = map[i];
            } else {
                map[i] = odn_plan_add_mem(ctx, a->plan, ODN_BIND_INTERNAL, 0, &m->md);
                reorder_out = slot >= 0 ? map[i] : -1;
                a->ts[t_out].mem = map[i];
            }
            break;
        case ODN_BIND_PACKED: {
            uint32_t t = layer_input(a->g, k, m->slot);
            map[i] = odn_plan_add_mem(ctx, a->plan, ODN_BIND_PACKED, t, &m->md);
            if (map[i] >= 0) {
                a->plan->mems[map[i]].user_md = m->user_md;
                a->plan->mems[map[i]].unpack = m->unpack;
            }
            break;
        }
        case ODN_BIND_INTERNAL:
            map[i] = odn_plan_add_mem(ctx, a->plan, ODN_BIND_INTERNAL, 0, &m->md);
            break;
        case ODN_BIND_ALIAS: /* of an earlier memory of the same sub-plan */
            map[i] = m->slot < i && map[m->slot] >= 0 ? alias_of(a, map[m->slot], &m->md) : -1;
            break;
        }
        if (!s && map[i] < 0) {
            s = no_memory(ctx);
        }
    }
    if (!s) {
        s = append_steps(a, &sub, map);
    }
    if (!s && reorder_out >= 0) {
        int to = odn_plan_add_mem(ctx, a->plan, ODN_BIND_OUTPUT, (unsigned)slot, &out_plain);
        s = to < 0 ? no_memory(ctx) : odn_plan_reorder(ctx, a->plan, reorder_out, to);
        a->ts[t_out].converted = to; /* later readers of the plain tensor read it there */
    }
    ctx->host->free(ctx->host, map);
    odn_plan_free(ctx, &sub);
    return s;
}

plx_status odn_graph_plan(const odn_context *ctx, const plx_layer_view *layer, odn_plan *plan) {
    const plx_host *host = ctx->host;
    graph g = {layer, NULL, layer->input_count, 1, layer->input_count};
    if (layer->op == PLX_OP_PRECOMPILED && (g.payload = odn_graph_payload_of(layer))) {
        g.layers = g.payload->layer_count;
        g.max_inputs = 1;
        for (unsigned k = 0; k < g.layers; k++) {
            unsigned n = odn_graph_layers(g.payload)[k].input_count;
            g.max_inputs = n > g.max_inputs ? n : g.max_inputs;
        }
    } else if (layer->output_count != 1) {
        /* the planners refuse it, with their reason */
        return odn_plan_build(ctx, layer, NULL, NULL, plan);
    }
    unsigned nt = g.inputs + g.layers;
    tensor_state *ts = host->alloc(host, nt * sizeof *ts, 0);
    plx_tensor_info *infos = host->alloc(host, (g.max_inputs + 1) * sizeof *infos, 0);
    const void **consts = host->alloc(host, (g.max_inputs + 1) * sizeof *consts, 0);
    const dnnl_memory_desc_t **mds = host->alloc(host, (g.max_inputs + 1) * sizeof *mds, 0);
    plx_status s = ts && infos && consts && mds ? NULL : no_memory(ctx);
    for (unsigned t = 0; !s && t < nt; t++) {
        ts[t] = (tensor_state){-1, -1};
    }
    assembly a = {ctx, &g, plan, ts};
    for (unsigned k = 0; !s && k < g.layers; k++) {
        plx_layer_view v;
        plx_precompiled_desc fused;
        layer_view(&g, k, &v, infos, consts, &fused);
        s = add_layer(&a, k, &v, mds);
        if (s && g.payload) {
            plx_status named = host->status_create(host, host->status_code(host, s),
                                                   "%s (graph layer '%s')",
                                                   host->status_message(host, s), v.name);
            host->status_free(host, s);
            s = named;
        }
    }
    host->free(host, ts);
    host->free(host, infos);
    host->free(host, consts);
    host->free(host, mds);
    return s;
}

/* ---- graph optimisation (R-23) ------------------------------------------ */

/* The layer that alone reads layer a's output, and only as its input 0;
 * else UINT32_MAX. */
static uint32_t sole_reader(const plx_subgraph_view *g, uint32_t a) {
    uint32_t slot = 0, r = g->layers[a].view.output_count == 1
                               ? plx_subgraph_sole_reader(g, a, &slot)
                               : UINT32_MAX;
    return slot == 0 ? r : UINT32_MAX;
}

/* The activation that alone reads layer a's output, or UINT32_MAX. */
static uint32_t activation_after(const plx_subgraph_view *g, uint32_t a) {
    uint32_t r = sole_reader(g, a);
    return r != UINT32_MAX && g->layers[r].view.op == PLX_OP_ACTIVATION &&
                   g->layers[r].view.input_count == 1
               ? r
               : UINT32_MAX;
}

uint32_t odn_fusable_activation(const plx_subgraph_view *g, uint32_t a) {
    plx_op op = g->layers[a].view.op;
    if ((op != PLX_OP_CONV && op != PLX_OP_CONV_TRANSPOSE && op != PLX_OP_FULLY_CONNECTED &&
         op != PLX_OP_MATMUL) ||
        !odn_view_is_float(&g->layers[a].view)) {
        return UINT32_MAX;
    }
    return activation_after(g, a);
}

static bool const_input(const plx_layer_view *v, unsigned slot) {
    return v->input_constants && v->input_constants[slot];
}

/* Whether layer `a` is a 1x1 convolution (stride 1, no padding, one group,
 * constant weights), or `d` a depthwise 3x3 one (stride 1 or 2, padding
 * 1, constant weights) when `depthwise`: the shapes oneDNN's depthwise
 * post-op joins. */
static bool conv_shape(const plx_subgraph_view *g, uint32_t a, bool depthwise) {
    const plx_layer_view *v = &g->layers[a].view;
    if (v->op != PLX_OP_CONV || v->inputs[0].rank != 4 || !const_input(v, 1) ||
        !odn_view_is_float(v)) {
        return false; /* int8 convolutions take no post-ops */
    }
    const plx_conv_desc *d = v->desc;
    const plx_tensor_info *w = &v->inputs[1];
    int64_t c = v->inputs[0].dims[1], k = depthwise ? 3 : 1, p = depthwise ? 1 : 0;
    bool ok = d->auto_pad == PLX_AUTO_PAD_NOTSET && w->dims[2] == k && w->dims[3] == k &&
              d->strides[0] == d->strides[1] && d->strides[0] >= 1 &&
              d->strides[0] <= (depthwise ? 2 : 1);
    for (int i = 0; i < 2; i++) {
        ok = ok && d->dilations[i] == 1 && d->pads_begin[i] == p && d->pads_end[i] == p;
    }
    return ok && (depthwise ? d->group == c && w->dims[0] == c && w->dims[1] == 1
                            : d->group == 1);
}

void odn_fused_init(odn_fused *f, const plx_subgraph_view *g, uint32_t a, uint32_t r) {
    const plx_layer_view *base = &g->layers[a].view;
    memset(f, 0, sizeof *f);
    f->magic = ODN_FUSED_MAGIC;
    f->op = base->op;
    if (base->op == PLX_OP_CONV) {
        f->desc.conv = *(const plx_conv_desc *)base->desc;
    } else if (base->op == PLX_OP_CONV_TRANSPOSE) {
        f->desc.conv_transpose = *(const plx_conv_transpose_desc *)base->desc;
    } else if (base->op == PLX_OP_FULLY_CONNECTED) {
        f->desc.fc = *(const plx_fully_connected_desc *)base->desc;
    }
    f->has_activation = true;
    f->activation = *(const plx_activation_desc *)g->layers[r].view.desc;
}

/* Fusion groups: a product, its activation, and (for a 1x1 convolution) the
 * depthwise convolution that alone reads the result and its activation.
 * member[k] is a layer index or UINT32_MAX; member[0] is the head. */
typedef struct group {
    uint32_t member[4]; /* product, activation, depthwise, its activation */
} group;

/* The group headed by layer `a` at fusion level `level` (1: activations,
 * 2: depthwise too); a group of the head alone when nothing fuses. */
static group group_at(const plx_subgraph_view *g, uint32_t a, int level) {
    group gr = {{a, UINT32_MAX, UINT32_MAX, UINT32_MAX}};
    if (level < 1) {
        return gr;
    }
    gr.member[1] = odn_fusable_activation(g, a);
    uint32_t last = gr.member[1] != UINT32_MAX ? gr.member[1] : a;
    uint32_t d = level >= 2 && conv_shape(g, a, false) ? sole_reader(g, last) : UINT32_MAX;
    /* Its weights and bias must come from outside the subgraph (constants):
     * the group's layer takes them where the head is. */
    bool outside = d != UINT32_MAX;
    for (uint32_t j = 1; outside && j < g->layers[d].view.input_count; j++) {
        outside = g->layers[d].inputs[j].layer == PLX_SUBGRAPH_EXTERNAL;
    }
    if (outside && conv_shape(g, d, true)) {
        gr.member[2] = d;
        gr.member[3] = activation_after(g, d);
    }
    return gr;
}

/* The layer whose output is the group's. */
static uint32_t group_tail(const group *gr) {
    for (int k = 3; k > 0; k--) {
        if (gr->member[k] != UINT32_MAX) {
            return gr->member[k];
        }
    }
    return gr->member[0];
}

/* The payload of a group of more than its head. */
static void group_fused(odn_fused *f, const plx_subgraph_view *g, const group *gr) {
    uint32_t a = gr->member[0];
    if (gr->member[1] != UINT32_MAX) {
        odn_fused_init(f, g, a, gr->member[1]);
    } else {
        memset(f, 0, sizeof *f);
        f->magic = ODN_FUSED_MAGIC;
        f->op = g->layers[a].view.op;
        f->desc.conv = *(const plx_conv_desc *)g->layers[a].view.desc;
    }
    uint32_t d = gr->member[2];
    if (d != UINT32_MAX) {
        f->has_dw = true;
        f->dw = *(const plx_conv_desc *)g->layers[d].view.desc;
        f->dw_slot = g->layers[a].view.input_count;
        f->dw_bias = g->layers[d].view.input_count > 2;
        f->pw_output = g->layers[a].view.outputs[0];
        memset(&f->pw_output.quant, 0, sizeof f->pw_output.quant);
        if (gr->member[3] != UINT32_MAX) {
            f->dw_has_activation = true;
            f->dw_activation = *(const plx_activation_desc *)g->layers[gr->member[3]].view.desc;
        }
    }
}

/* The size of `op`'s descriptor when a graph may hold it (0: no
 * descriptor), or SIZE_MAX. */
static size_t graph_desc_size(plx_op op) {
    switch (op) {
    case PLX_OP_CONV: return sizeof(plx_conv_desc);
    case PLX_OP_CONV_TRANSPOSE: return sizeof(plx_conv_transpose_desc);
    case PLX_OP_FULLY_CONNECTED: return sizeof(plx_fully_connected_desc);
    case PLX_OP_GEMM: return sizeof(plx_gemm_desc);
    case PLX_OP_MATMUL: return 0;
    case PLX_OP_POOL: return sizeof(plx_pool_desc);
    case PLX_OP_GLOBAL_POOL: return sizeof(plx_global_pool_desc);
    case PLX_OP_ACTIVATION: return sizeof(plx_activation_desc);
    case PLX_OP_UNARY: return sizeof(plx_unary_desc);
    case PLX_OP_BINARY: return sizeof(plx_binary_desc);
    case PLX_OP_SOFTMAX: return sizeof(plx_softmax_desc);
    case PLX_OP_BATCH_NORM: return sizeof(plx_batch_norm_desc);
    case PLX_OP_LAYER_NORM: return sizeof(plx_layer_norm_desc);
    case PLX_OP_CONCAT:
    case PLX_OP_FLATTEN: return sizeof(plx_axis_desc);
    case PLX_OP_REDUCE: return sizeof(plx_reduce_desc);
    case PLX_OP_RESIZE: return sizeof(plx_resize_desc);
    case PLX_OP_RESHAPE: return sizeof(plx_reshape_desc);
    case PLX_OP_TRANSPOSE: return sizeof(plx_transpose_desc);
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE: return sizeof(plx_axes_desc);
    default: return SIZE_MAX;
    }
}

/* A graph payload under construction, with the substitution it goes with. */
typedef struct graph_build {
    const plx_host *host;
    void *payload; /* odn_graph_payload and what follows */
    size_t size;
    uint32_t *set;                 /* the replaced layers, in order */
    uint32_t set_count;
    plx_subgraph_source *inputs;   /* the precompiled layer's */
    plx_tensor_info *input_infos;
    const void **input_consts;
    uint32_t input_count;
    plx_subgraph_source *outputs;
    plx_tensor_info *output_infos;
    uint32_t output_count;
    uint32_t fused_activations, fused_depthwise; /* what the groups fused */
} graph_build;

static void graph_build_free(graph_build *b) {
    const plx_host *h = b->host;
    h->free(h, b->payload);
    h->free(h, b->set);
    h->free(h, b->inputs);
    h->free(h, b->input_infos);
    h->free(h, b->input_consts);
    h->free(h, b->outputs);
    h->free(h, b->output_infos);
    memset(b, 0, sizeof *b);
}

/* The input of the piece under construction that `src` is (an external
 * input of the subgraph, or an output of a layer before the piece), added
 * at its first use. */
static uint32_t piece_input(graph_build *b, const plx_subgraph_view *g, plx_subgraph_source src) {
    for (uint32_t k = 0; k < b->input_count; k++) {
        if (b->inputs[k].layer == src.layer && b->inputs[k].slot == src.slot) {
            return k;
        }
    }
    uint32_t k = b->input_count++;
    b->inputs[k] = src;
    if (src.layer == PLX_SUBGRAPH_EXTERNAL) {
        b->input_infos[k] = g->external_inputs[src.slot];
        b->input_consts[k] = g->external_constants ? g->external_constants[src.slot] : NULL;
    } else {
        b->input_infos[k] = g->layers[src.layer].view.outputs[src.slot];
        b->input_consts[k] = NULL;
    }
    return k;
}

/* An int8 product (onednn_int8.c) whose output is quantized per tensor
 * (or int32): the payload keeps its output's scale and zero point (no
 * pointers), and its weights' per-channel parameters come with the
 * workload's inputs. */
static bool int8_product(const plx_layer_view *v) {
    plx_op op = v->op;
    plx_dtype x = v->input_count ? v->inputs[0].dtype : PLX_DTYPE_FLOAT32;
    return (op == PLX_OP_CONV || op == PLX_OP_MATMUL) && (x == PLX_DTYPE_INT8 || x == PLX_DTYPE_UINT8) &&
           v->outputs[0].quant.kind != PLX_QUANT_PER_AXIS;
}

/* Whether graph_build_piece can carry layer `i`: float32 layers, the
 * int8 products, 8-bit max pools and quantized adds, so that a chain of
 * int8 convolutions, pools and residual adds passes its activations in
 * oneDNN's channels-last layout without a reorder to the plain one and
 * back between each two. */
static bool graph_carries(const plx_subgraph_view *g, uint32_t i) {
    const plx_layer_view *v = &g->layers[i].view;
    return graph_desc_size(v->op) != SIZE_MAX && v->output_count == 1 &&
           (odn_view_is_float(v) || int8_product(v) || odn_is_8bit_max_pool(v) ||
            odn_is_quantized_binary(v));
}

/* Builds the payload of layers lo .. hi-1 of `g` (a convex piece that
 * graph_carries whole: graph_pieces) as one graph, with the fusions of
 * `level` (group_at) that stay inside it. false when out of memory. */
static bool graph_build_piece(graph_build *b, const plx_subgraph_view *g, int level, uint32_t lo,
                              uint32_t hi) {
    const plx_host *h = b->host;
    uint32_t n = hi - lo, refs = 0;
    for (uint32_t i = lo; i < hi; i++) {
        refs += g->layers[i].view.input_count;
    }
    /* node[i - lo]: the graph layer computing layer i's output (the members
     * of a fusion group share their head's); member[i - lo]: whether layer
     * i is in a group it does not head; later[i - lo]: whether a subgraph
     * layer after the piece reads it. */
    uint32_t *node = h->alloc(h, n * sizeof *node, 0);
    bool *member = h->alloc(h, n * sizeof *member, 0);
    bool *later = h->alloc(h, n * sizeof *later, 0);
    uint32_t *from = h->alloc(h, (refs + 1) * sizeof *from, 0); /* per ref: its layer, or none */
    b->set = h->alloc(h, n * sizeof *b->set, 0);
    b->inputs = h->alloc(h, (refs + 1) * sizeof *b->inputs, 0);
    b->input_infos = h->alloc(h, (refs + 1) * sizeof *b->input_infos, 0);
    b->input_consts = h->alloc(h, (refs + 1) * sizeof *b->input_consts, 0);
    b->outputs = h->alloc(h, n * sizeof *b->outputs, 0);
    b->output_infos = h->alloc(h, n * sizeof *b->output_infos, 0);
    b->size = sizeof(odn_graph_payload) + (size_t)n * sizeof(odn_graph_layer) +
              ((size_t)refs + n) * sizeof(uint32_t);
    b->payload = h->alloc(h, b->size, 0);
    bool ok = node && member && later && from && b->set && b->inputs && b->input_infos &&
              b->input_consts && b->outputs && b->output_infos && b->payload;
    if (!ok) {
        goto done;
    }
    memset(b->payload, 0, b->size);
    for (uint32_t i = 0; i < n; i++) {
        member[i] = false;
        later[i] = false;
        b->set[i] = lo + i;
    }
    b->set_count = n;
    for (uint32_t i = hi; i < g->layer_count; i++) {
        const plx_subgraph_layer *sl = &g->layers[i];
        for (uint32_t j = 0; j < sl->view.input_count; j++) {
            uint32_t src = sl->inputs[j].layer;
            if (src != PLX_SUBGRAPH_EXTERNAL && src >= lo && src < hi) {
                later[src - lo] = true;
            }
        }
    }
    odn_graph_payload *p = b->payload;
    odn_graph_layer *layers = (odn_graph_layer *)(void *)(p + 1);
    uint32_t count = 0, ref = 0;
    /* First pass: the graph layers (a layer, or a fusion group), and the
     * inputs in order of first use. */
    uint32_t *refv = (uint32_t *)(void *)(layers + n);
    for (uint32_t i = lo; i < hi; i++) {
        if (member[i - lo]) {
            continue; /* node[i - lo] was set by its group's head */
        }
        const plx_subgraph_layer *sl = &g->layers[i];
        group gr = group_at(g, i, level);
        for (int k = 1; k < 4; k++) { /* members are in order: keep those inside */
            if (gr.member[k] != UINT32_MAX && gr.member[k] >= hi) {
                for (int r = k; r < 4; r++) {
                    gr.member[r] = UINT32_MAX;
                }
                break;
            }
        }
        odn_graph_layer *gl = &layers[count];
        snprintf(gl->name, sizeof gl->name, "%s", sl->view.name ? sl->view.name : "");
        gl->op = sl->view.op;
        size_t ds = graph_desc_size(gl->op);
        if (ds && sl->view.desc) {
            memcpy(&gl->desc, sl->view.desc, ds);
            gl->has_desc = true;
        }
        gl->output = g->layers[group_tail(&gr)].view.outputs[0];
        /* no host pointers in the payload: per-tensor quantization only */
        if (gl->output.quant.kind == PLX_QUANT_PER_AXIS) {
            memset(&gl->output.quant, 0, sizeof gl->output.quant);
        }
        if (group_tail(&gr) != i) {
            gl->op = PLX_OP_PRECOMPILED;
            group_fused(&gl->fused, g, &gr);
            b->fused_activations +=
                (gr.member[1] != UINT32_MAX) + (gr.member[3] != UINT32_MAX);
            b->fused_depthwise += gr.member[2] != UINT32_MAX;
        }
        for (int k = 0; k < 4; k++) {
            if (gr.member[k] != UINT32_MAX) {
                node[gr.member[k] - lo] = count;
                member[gr.member[k] - lo] = k > 0;
            }
        }
        gl->first_input = ref;
        /* The head's inputs, then the depthwise convolution's weights and
         * bias. */
        for (int part = 0; part < 2; part++) {
            uint32_t who = part == 0 ? i : gr.member[2];
            if (who == UINT32_MAX) {
                continue;
            }
            const plx_subgraph_layer *src_layer = &g->layers[who];
            for (uint32_t j = part; j < src_layer->view.input_count; j++) {
                plx_subgraph_source src = src_layer->inputs[j];
                if (src.layer == PLX_SUBGRAPH_EXTERNAL || src.layer < lo) {
                    from[ref] = UINT32_MAX;
                    refv[ref++] = piece_input(b, g, src);
                } else {
                    from[ref++] = src.layer; /* a tensor number once the inputs are known */
                }
            }
        }
        gl->input_count = ref - gl->first_input;
        count++;
    }
    /* Second pass: layer references become tensor numbers (node outputs
     * follow the inputs); outputs read outside the piece become the
     * layer's outputs. */
    for (uint32_t x = 0; x < ref; x++) {
        if (from[x] != UINT32_MAX) {
            refv[x] = b->input_count + node[from[x] - lo];
        }
    }
    uint32_t *outv = refv + ref;
    for (uint32_t i = lo; i < hi; i++) {
        if (g->layers[i].escapes[0] || later[i - lo]) {
            b->outputs[b->output_count] = (plx_subgraph_source){i, 0};
            b->output_infos[b->output_count] = g->layers[i].view.outputs[0];
            outv[b->output_count++] = b->input_count + node[i - lo];
        }
    }
    p->magic = ODN_GRAPH_MAGIC;
    p->layer_size = sizeof(odn_graph_layer);
    p->layer_count = count;
    p->input_count = b->input_count;
    p->ref_count = ref;
    p->output_count = b->output_count;
    /* The payload is packed: layers, refs, outputs follow each other. */
    if (count < n) {
        memmove(layers + count, refv, ((size_t)ref + b->output_count) * sizeof *refv);
    }
    b->size = sizeof *p + (size_t)count * sizeof *layers +
              ((size_t)ref + b->output_count) * sizeof *refv;
done:
    h->free(h, node);
    h->free(h, member);
    h->free(h, later);
    h->free(h, from);
    return ok;
}

/* Replaces layers lo .. hi-1 by one graph layer, at the highest fusion
 * level oneDNN plans; true when the editor took it. */
static bool graph_substitute_piece(const odn_context *ctx, const plx_subgraph_view *g,
                                   const plx_subgraph_editor *editor, uint32_t lo, uint32_t hi) {
    const plx_host *h = ctx->host;
    for (int level = 2; level >= 0;) {
        graph_build b;
        memset(&b, 0, sizeof b);
        b.host = h;
        if (!graph_build_piece(&b, g, level, lo, hi) || b.output_count == 0) {
            h->log(h, PLX_LOG_DEBUG, "cpu_onednn: no graph of %u layers: out of memory, or "
                   "nothing read outside them", hi - lo);
            graph_build_free(&b);
            return false;
        }
        /* Plan it now, as check_layer will: a graph oneDNN refuses is
         * better left to the per-layer fusions. */
        plx_precompiled_desc d = {sizeof d, "graph", b.payload, b.size};
        plx_layer_view v;
        memset(&v, 0, sizeof v);
        v.struct_size = (uint32_t)sizeof v;
        v.name = "graph";
        v.op = PLX_OP_PRECOMPILED;
        v.desc = &d;
        v.inputs = b.input_infos;
        v.input_count = b.input_count;
        v.outputs = b.output_infos;
        v.output_count = b.output_count;
        v.input_constants = b.input_consts;
        odn_plan plan;
        memset(&plan, 0, sizeof plan);
        plx_status s = odn_graph_payload_of(&v) ? odn_graph_plan(ctx, &v, &plan)
                                                : h->status_create(h, PLX_INTERNAL, "payload");
        odn_plan_free(ctx, &plan);
        if (s) {
            h->log(h, PLX_LOG_DEBUG, "cpu_onednn: no graph of %u layers%s: %s", hi - lo,
                   level == 2 ? " with depthwise and activation fusions"
                   : level == 1 ? " with activation fusions" : "",
                   h->status_message(h, s));
            h->status_free(h, s);
            /* The next level that builds another payload: without depthwise
             * groups level 2's is level 1's, without activations level 0's. */
            level = level == 2 && b.fused_depthwise > 0 ? 1 : b.fused_activations > 0 ? 0 : -1;
            graph_build_free(&b);
            continue;
        }
        plx_substitution sub = {(uint32_t)sizeof sub, b.set, b.set_count, b.inputs,
                                b.input_count, b.outputs, b.output_count, "graph",
                                b.payload, b.size};
        s = editor->substitute(editor, &sub);
        if (!s) {
            h->log(h, PLX_LOG_INFO, "cpu_onednn: a graph of %u layers runs as %u: %u activations "
                   "fused into the product before them, %u 1x1 convolutions with the "
                   "depthwise convolution after them", hi - lo,
                   ((const odn_graph_payload *)b.payload)->layer_count, b.fused_activations,
                   b.fused_depthwise);
            graph_build_free(&b);
            return true;
        }
        graph_build_free(&b);
        h->log(h, PLX_LOG_WARN, "cpu_onednn: the host refused a graph of %u layers: %s",
               hi - lo, h->status_message(h, s));
        h->status_free(h, s);
        return false;
    }
    return false;
}

/* Whether layer `i` reads a tensor from outside the subgraph that is not a
 * constant: the output of another backend's layer, or a network input. */
static bool reads_from_outside(const plx_subgraph_view *g, uint32_t i) {
    const plx_subgraph_layer *l = &g->layers[i];
    for (uint32_t j = 0; j < l->view.input_count; j++) {
        plx_subgraph_source src = l->inputs[j];
        if (src.layer == PLX_SUBGRAPH_EXTERNAL &&
            !(g->external_constants && g->external_constants[src.slot])) {
            return true;
        }
    }
    return false;
}

static bool escapes(const plx_subgraph_layer *l) {
    for (uint32_t k = 0; k < l->view.output_count; k++) {
        if (l->escapes[k]) {
            return true;
        }
    }
    return false;
}

uint32_t odn_graph_substitute(const odn_context *ctx, const plx_subgraph_view *g,
                              const plx_subgraph_editor *editor, bool *used) {
    /* The pieces: runs of layers in execution order that a graph carries,
     * each cut where a layer reads from outside the subgraph after an
     * earlier layer of the run was read outside it: the path between them
     * may pass through another backend's layers, and a piece must be
     * convex. Which outside layer reads what is not in the view; a cut
     * where no such path exists costs a reorder, no more. */
    uint32_t replaced = 0, lo = 0;
    bool escaped = false;
    for (uint32_t i = 0; i <= g->layer_count; i++) {
        bool carried = i < g->layer_count && graph_carries(g, i);
        bool cut = i == g->layer_count || !carried ||
                   (i > lo && escaped && reads_from_outside(g, i));
        if (cut) {
            if (i - lo >= 2 && graph_substitute_piece(ctx, g, editor, lo, i)) {
                for (uint32_t k = lo; k < i; k++) {
                    used[k] = true;
                }
                replaced += i - lo;
            }
            lo = carried ? i : i + 1;
            escaped = false;
        }
        if (carried && escapes(&g->layers[i])) {
            escaped = true;
        }
    }
    return replaced;
}
