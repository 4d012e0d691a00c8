/* cpu_ref's graph optimisation (backend.h optimize_subgraph, R-23 of
 * docs/backend-abi.md): a conv, fully_connected, gemm or matmul whose only
 * reader is an activation becomes one precompiled layer, "conv+relu",
 * without the intermediate tensor: relu, clip and leaky_relu are the GEMM's
 * (and the depthwise kernel's) epilogue
 * (applied as each block of the output is written); other activations run
 * in place on the output after the product. Its payload is
 * a plxk_fused: the base operator with its descriptor and the
 * activation's descriptor. */
#include <stdio.h>
#include <string.h>

#include "fusion.h"

#define FUSED_MAGIC 0x31465243u /* "CRF1" */

typedef struct plxk_fused {
    uint32_t magic;
    plx_op op;
    union {
        plx_conv_desc conv;
        plx_fully_connected_desc fc;
        plx_gemm_desc gemm;
    } desc;
    plx_activation_desc activation;
} plxk_fused;

static bool fusable_base(plx_op op) {
    return op == PLX_OP_CONV || op == PLX_OP_FULLY_CONNECTED || op == PLX_OP_GEMM ||
           op == PLX_OP_MATMUL;
}

/* The payload of a precompiled layer, or NULL when it is not cpu_ref's. */
static const plxk_fused *payload(const plx_layer_view *l) {
    const plx_precompiled_desc *d = l->desc;
    if (!d || d->size != sizeof(plxk_fused) || !d->data) {
        return NULL;
    }
    const plxk_fused *f = d->data;
    return f->magic == FUSED_MAGIC && fusable_base(f->op) && l->output_count == 1 ? f : NULL;
}

/* The base operator's view of the fused layer, and the activation's view of
 * its output (in place). */
static void split_views(const plx_layer_view *l, const plxk_fused *f, plx_layer_view *base,
                        plx_layer_view *act) {
    *base = *l;
    base->op = f->op;
    base->desc = f->op == PLX_OP_MATMUL ? NULL : (const void *)&f->desc;
    memset(act, 0, sizeof *act);
    act->struct_size = (uint32_t)sizeof *act;
    act->name = l->name;
    act->op = PLX_OP_ACTIVATION;
    act->desc = &f->activation;
    act->inputs = l->outputs;
    act->input_count = 1;
    act->outputs = l->outputs;
    act->output_count = 1;
}

const char *plxk_check_precompiled(const plx_layer_view *layer, char *buf, size_t size) {
    const plxk_fused *f = payload(layer);
    if (!f) {
        return plxk_refuse(buf, size, "runs only its own precompiled layers");
    }
    plx_layer_view base, act;
    split_views(layer, f, &base, &act);
    plxk_check_fn check;
    plxk_run_fn run;
    if (!plxk_kernel_lookup(f->op, &check, &run)) {
        return plxk_refuse(buf, size, "has no kernel for %s", plx_op_name(f->op));
    }
    const char *why = check(&base, buf, size);
    return why ? why : plxk_check_activation(&act, buf, size);
}

/* Relu, clip and leaky_relu go into the product's epilogue. */
static bool in_epilogue(const plxk_fused *f) {
    return f->activation.func == PLX_ACT_RELU || f->activation.func == PLX_ACT_CLIP ||
           f->activation.func == PLX_ACT_LEAKY_RELU;
}

/* The base operator's view of a precompiled layer; false when the layer
 * is not cpu_ref's. */
static bool base_view(const plx_layer_view *layer, plx_layer_view *base) {
    const plxk_fused *f = payload(layer);
    if (!f) {
        return false;
    }
    plx_layer_view act;
    split_views(layer, f, base, &act);
    return true;
}

size_t plxk_workspace_precompiled(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_layer_view base;
    return base_view(layer, &base) ? plxk_kernel_workspace(&base, compute) : 0;
}

size_t plxk_prepare_precompiled(const plx_layer_view *layer, const plxk_compute *compute,
                                void *out, size_t size) {
    plx_layer_view base;
    return base_view(layer, &base) ? plxk_kernel_prepare(&base, compute, out, size) : 0;
}

bool plxk_run_precompiled(const plxk_kernel_args *args) {
    const plxk_fused *f = payload(args->layer);
    plxk_check_fn check;
    plxk_run_fn run;
    if (!f || !plxk_kernel_lookup(f->op, &check, &run)) {
        return plxk_fail(args, "not a cpu_ref precompiled layer");
    }
    plx_layer_view base, act;
    split_views(args->layer, f, &base, &act);
    plxk_kernel_args b = *args;
    b.layer = &base;
    b.activation = in_epilogue(f) ? &f->activation : NULL;
    if (!run(&b)) {
        return false;
    }
    if (b.activation) {
        return true;
    }
    const void *in[1] = {args->outputs[0]};
    plxk_kernel_args a = *args;
    a.layer = &act;
    a.inputs = in;
    return plxk_run_activation(&a);
}

plx_status plxk_optimize_subgraph(const plx_host *host, const plx_subgraph_view *g,
                                     const plx_subgraph_editor *editor) {
    for (uint32_t a = 0; a < g->layer_count; a++) {
        const plx_subgraph_layer *base = &g->layers[a];
        if (!fusable_base(base->view.op) || base->view.outputs[0].dtype != PLX_DTYPE_FLOAT32) {
            continue;
        }
        uint32_t r = base->view.output_count == 1 ? plx_subgraph_sole_reader(g, a, NULL)
                                                  : UINT32_MAX;
        if (r == UINT32_MAX || g->layers[r].view.op != PLX_OP_ACTIVATION ||
            g->layers[r].view.input_count != 1) {
            continue;
        }
        plxk_fused f;
        memset(&f, 0, sizeof f);
        f.magic = FUSED_MAGIC;
        f.op = base->view.op;
        switch (f.op) {
        case PLX_OP_CONV: f.desc.conv = *(const plx_conv_desc *)base->view.desc; break;
        case PLX_OP_FULLY_CONNECTED:
            f.desc.fc = *(const plx_fully_connected_desc *)base->view.desc;
            break;
        case PLX_OP_GEMM: f.desc.gemm = *(const plx_gemm_desc *)base->view.desc; break;
        default: break;
        }
        f.activation = *(const plx_activation_desc *)g->layers[r].view.desc;
        char kind[64];
        snprintf(kind, sizeof kind, "%s+%s", plx_op_name(f.op),
                 plx_activation_func_name(f.activation.func)
                     ? plx_activation_func_name(f.activation.func)
                     : "activation");
        uint32_t set[2] = {a, r};
        plx_subgraph_source out = {r, 0};
        plx_substitution sub = {(uint32_t)sizeof sub,
                                set,
                                2,
                                base->inputs,
                                base->view.input_count,
                                &out,
                                1,
                                kind,
                                &f,
                                sizeof f};
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            /* Not this one (the host says why); the others still fuse. */
            host->status_free(host, s);
        }
    }
    return NULL;
}
