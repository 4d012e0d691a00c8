/* Graph optimisation by backends (backend.h, optimize_subgraph; R-23 of
 * docs/backend-abi.md).
 *
 * After every compute layer is assigned, each backend of the preference
 * list that sets optimize_subgraph is offered, in order, each maximal
 * connected set of compute layers assigned to it. Through the editor it
 * may replace layers by one PLX_OP_PRECOMPILED layer and give layers back.
 * Every substitution is checked when the backend makes it (indices, inputs
 * read from outside the set, outputs read outside it listed, convexity),
 * recorded, and applied after the call: the new layer is first offered to
 * the backend's check_layer, and a refusal there rejects it with a note. A
 * layer given back is offered to the backends after this one. A failing
 * call changes nothing. Every change is an optimiser note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network_internal.h"
#include "assign.h"
#include "rewrite.h"
#include "subgraph.h"

#define MAX_KIND 63
#define MAX_DATA ((size_t)16 << 20)

typedef struct edit {
    bool give_back;
    uint32_t *layers; /* local indices */
    uint32_t layer_count;
    plxi_source *inputs; /* global: earlier edits of the offer may move them */
    uint32_t input_count;
    plx_subgraph_source *outputs;
    uint32_t output_count;
    char *kind;       /* give_back: the reason */
    void *data;
    size_t size;
} edit;

typedef struct offer {
    plxi_layer **layers;      /* the optimiser's array (global) */
    size_t count;
    plxi_backend_record *backend;
    uint32_t *global;         /* local -> global index */
    uint32_t local_count;
    uint32_t *local;          /* global -> local, or UINT32_MAX */
    plxi_source *external;    /* external input -> global source */
    uint32_t external_count;
    plx_subgraph_layer *view_layers;
    bool *used;               /* local layer substituted or given back */
    edit *edits;
    size_t edit_count;
    bool oom;
} offer;

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while optimising subgraphs");
}

static plx_status invalid(const offer *of, const char *what) {
    return plxi_status_create(PLX_INVALID_ARGUMENT, "backend '%s': %s", of->backend->info.id,
                              what);
}

static bool is_compute(const plxi_layer *l) {
    return l && l->op != PLX_OP_INPUT && l->op != PLX_OP_OUTPUT && l->op != PLX_OP_CONSTANT;
}

static bool same_source(plx_subgraph_source a, plx_subgraph_source b) {
    return a.layer == b.layer && a.slot == b.slot;
}

/* The subgraph source of global source `s`, as layer `of` sees it. */
static plx_subgraph_source local_source(const offer *of, plxi_source s) {
    if (of->local[s.layer] != UINT32_MAX) {
        return (plx_subgraph_source){of->local[s.layer], s.slot};
    }
    for (uint32_t e = 0; e < of->external_count; e++) {
        if (of->external[e].layer == s.layer && of->external[e].slot == s.slot) {
            return (plx_subgraph_source){PLX_SUBGRAPH_EXTERNAL, e};
        }
    }
    return (plx_subgraph_source){PLX_SUBGRAPH_EXTERNAL, UINT32_MAX};
}

static plxi_source global_source(const offer *of, plx_subgraph_source s) {
    return s.layer == PLX_SUBGRAPH_EXTERNAL ? of->external[s.slot]
                                            : (plxi_source){of->global[s.layer], s.slot};
}

static bool in_set(const uint32_t *set, uint32_t n, uint32_t local) {
    for (uint32_t i = 0; i < n; i++) {
        if (set[i] == local) {
            return true;
        }
    }
    return false;
}

/* Is (global) `index` a replaced layer? */
static bool global_in_set(const offer *of, const uint32_t *set, uint32_t n, size_t index) {
    uint32_t local = of->local[index];
    return local != UINT32_MAX && in_set(set, n, local);
}

/* No path from the set back into it through layers outside it. */
static plx_status check_convex(offer *of, const uint32_t *set, uint32_t n) {
    bool *seen = calloc(of->count ? of->count : 1, sizeof *seen);
    uint32_t *stack = malloc((of->count ? of->count : 1) * sizeof *stack);
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return oom();
    }
    size_t top = 0;
    plx_status s = NULL;
    /* Start from the readers outside the set of every replaced layer. */
    for (size_t i = 0; i < of->count; i++) {
        const plxi_layer *l = of->layers[i];
        if (!l || global_in_set(of, set, n, i)) {
            continue;
        }
        for (uint32_t k = 0; k < l->input_count; k++) {
            if (global_in_set(of, set, n, l->inputs[k].layer) && !seen[i]) {
                seen[i] = true;
                stack[top++] = (uint32_t)i;
            }
        }
    }
    while (!s && top) {
        uint32_t at = stack[--top];
        for (size_t i = 0; !s && i < of->count; i++) {
            const plxi_layer *l = of->layers[i];
            for (uint32_t k = 0; l && k < l->input_count; k++) {
                if (l->inputs[k].layer != at) {
                    continue;
                }
                if (global_in_set(of, set, n, i)) {
                    s = invalid(of, "the replaced layers are not convex: a path leaves them and "
                                    "comes back");
                    break;
                }
                if (!seen[i]) {
                    seen[i] = true;
                    stack[top++] = (uint32_t)i;
                }
            }
        }
    }
    free(seen);
    free(stack);
    return s;
}

static void free_edit(edit *e) {
    free(e->layers);
    free(e->inputs);
    free(e->outputs);
    free(e->kind);
    free(e->data);
}

static plx_status substitute(const plx_subgraph_editor *editor, const plx_substitution *sub) {
    offer *of = editor->host_data;
    if (!sub || sub->struct_size < PLX_STRUCT_SIZE_UPTO(plx_substitution, size)) {
        return invalid(of, "the substitution is NULL or its struct_size is too small");
    }
    if (!sub->layers || sub->layer_count == 0) {
        return invalid(of, "a substitution replaces at least one layer");
    }
    if (!sub->kind || !*sub->kind || strnlen(sub->kind, MAX_KIND + 1) > MAX_KIND) {
        return invalid(of, "a substitution's kind must be 1 to 63 bytes");
    }
    if (sub->size > MAX_DATA || (sub->size && !sub->data)) {
        return invalid(of, "a substitution's data is over 16 MiB, or NULL with a size");
    }
    if ((sub->input_count && !sub->inputs) || !sub->outputs || sub->output_count == 0) {
        return invalid(of, "a substitution needs its inputs (when counted) and at least one "
                           "output");
    }
    char msg[256];
    for (uint32_t i = 0; i < sub->layer_count; i++) {
        uint32_t l = sub->layers[i];
        if (l >= of->local_count || of->used[l] || in_set(sub->layers, i, l)) {
            snprintf(msg, sizeof msg, "replaced layer index %u is out of range (%u layers), "
                                      "already used or given twice", l, of->local_count);
            return invalid(of, msg);
        }
    }
    for (uint32_t i = 0; i < sub->input_count; i++) {
        plx_subgraph_source in = sub->inputs[i];
        bool read = false;
        for (uint32_t j = 0; !read && j < sub->layer_count; j++) {
            const plx_subgraph_layer *v = &of->view_layers[sub->layers[j]];
            for (uint32_t k = 0; k < v->view.input_count; k++) {
                read = read || (same_source(v->inputs[k], in) &&
                                (in.layer == PLX_SUBGRAPH_EXTERNAL ||
                                 !in_set(sub->layers, sub->layer_count, in.layer)));
            }
        }
        for (uint32_t j = 0; read && j < i; j++) {
            read = !same_source(sub->inputs[j], in);
        }
        if (!read) {
            snprintf(msg, sizeof msg, "input %u (layer %u, slot %u) is not a tensor the replaced "
                                      "layers read from outside, or is given twice",
                     i, in.layer, in.slot);
            return invalid(of, msg);
        }
    }
    for (uint32_t i = 0; i < sub->output_count; i++) {
        plx_subgraph_source out = sub->outputs[i];
        bool ok = out.layer != PLX_SUBGRAPH_EXTERNAL &&
                  in_set(sub->layers, sub->layer_count, out.layer) &&
                  out.slot < of->view_layers[out.layer].view.output_count;
        for (uint32_t j = 0; ok && j < i; j++) {
            ok = !same_source(sub->outputs[j], out);
        }
        if (!ok) {
            snprintf(msg, sizeof msg, "output %u (layer %u, slot %u) is not an output slot of a "
                                      "replaced layer, or is given twice", i, out.layer, out.slot);
            return invalid(of, msg);
        }
    }
    /* Every replaced output read outside the set is an output. */
    for (uint32_t j = 0; j < sub->layer_count; j++) {
        uint32_t l = sub->layers[j];
        const plx_subgraph_layer *v = &of->view_layers[l];
        for (uint32_t slot = 0; slot < v->view.output_count; slot++) {
            bool outside = v->escapes[slot];
            for (uint32_t r = 0; !outside && r < of->local_count; r++) {
                const plx_subgraph_layer *c = &of->view_layers[r];
                for (uint32_t k = 0; k < c->view.input_count; k++) {
                    outside = outside || (c->inputs[k].layer == l && c->inputs[k].slot == slot &&
                                          !in_set(sub->layers, sub->layer_count, r));
                }
            }
            bool listed = false;
            for (uint32_t i = 0; i < sub->output_count; i++) {
                listed = listed || same_source(sub->outputs[i], (plx_subgraph_source){l, slot});
            }
            if (outside && !listed) {
                snprintf(msg, sizeof msg, "output %u of layer '%.100s' is read outside the "
                                          "replaced layers but is not an output",
                         slot, v->view.name);
                return invalid(of, msg);
            }
        }
    }
    plx_status s = check_convex(of, sub->layers, sub->layer_count);
    if (s) {
        return s;
    }
    edit *grown = realloc(of->edits, (of->edit_count + 1) * sizeof *grown);
    if (!grown) {
        return oom();
    }
    of->edits = grown;
    edit *e = &grown[of->edit_count];
    memset(e, 0, sizeof *e);
    e->layers = malloc(sub->layer_count * sizeof *e->layers);
    e->inputs = malloc((sub->input_count ? sub->input_count : 1) * sizeof *e->inputs);
    e->outputs = malloc(sub->output_count * sizeof *e->outputs);
    e->kind = plxi_strdup(sub->kind);
    e->data = malloc(sub->size ? sub->size : 1);
    if (!e->layers || !e->inputs || !e->outputs || !e->kind || !e->data) {
        free_edit(e);
        return oom();
    }
    memcpy(e->layers, sub->layers, sub->layer_count * sizeof *e->layers);
    for (uint32_t i = 0; i < sub->input_count; i++) {
        e->inputs[i] = global_source(of, sub->inputs[i]);
    }
    memcpy(e->outputs, sub->outputs, sub->output_count * sizeof *e->outputs);
    if (sub->size) {
        memcpy(e->data, sub->data, sub->size);
    }
    e->layer_count = sub->layer_count;
    e->input_count = sub->input_count;
    e->output_count = sub->output_count;
    e->size = sub->size;
    of->edit_count++;
    for (uint32_t j = 0; j < sub->layer_count; j++) {
        of->used[sub->layers[j]] = true;
    }
    return NULL;
}

static plx_status give_back(const plx_subgraph_editor *editor, uint32_t layer,
                            const char *reason) {
    offer *of = editor->host_data;
    if (layer >= of->local_count || of->used[layer] || !reason) {
        char msg[160];
        snprintf(msg, sizeof msg, "layer index %u given back is out of range (%u layers), "
                                  "already used, or has no reason", layer, of->local_count);
        return invalid(of, msg);
    }
    edit *grown = realloc(of->edits, (of->edit_count + 1) * sizeof *grown);
    if (!grown) {
        return oom();
    }
    of->edits = grown;
    edit *e = &grown[of->edit_count];
    memset(e, 0, sizeof *e);
    e->give_back = true;
    e->layers = malloc(sizeof *e->layers);
    e->kind = plxi_strdup(reason);
    if (!e->layers || !e->kind) {
        free_edit(e);
        return oom();
    }
    e->layers[0] = layer;
    e->layer_count = 1;
    of->edit_count++;
    of->used[layer] = true;
    return NULL;
}

/* The view of the component whose local layers are set in of->global. */
static plx_status build_view(offer *of, plx_subgraph_view *view, plx_tensor_info **infos_out,
                             const void ***consts_out, void **scratch) {
    /* External inputs: distinct sources outside the component. */
    size_t max_ext = 0;
    for (uint32_t i = 0; i < of->local_count; i++) {
        max_ext += of->layers[of->global[i]]->input_count;
    }
    of->external = malloc((max_ext ? max_ext : 1) * sizeof *of->external);
    of->view_layers = calloc(of->local_count, sizeof *of->view_layers);
    if (!of->external || !of->view_layers) {
        return oom();
    }
    of->external_count = 0;
    for (uint32_t i = 0; i < of->local_count; i++) {
        const plxi_layer *l = of->layers[of->global[i]];
        for (uint32_t k = 0; k < l->input_count; k++) {
            plxi_source s = l->inputs[k];
            if (of->local[s.layer] != UINT32_MAX) {
                continue;
            }
            bool known = false;
            for (uint32_t e = 0; e < of->external_count && !known; e++) {
                known = of->external[e].layer == s.layer && of->external[e].slot == s.slot;
            }
            if (!known) {
                of->external[of->external_count++] = s;
            }
        }
    }
    /* One block for every per-layer array. */
    size_t ins = 0, outs = 0;
    for (uint32_t i = 0; i < of->local_count; i++) {
        ins += of->layers[of->global[i]]->input_count;
        outs += of->layers[of->global[i]]->output_count;
    }
    size_t bytes = ins * (sizeof(plx_tensor_info) + sizeof(void *) + sizeof(plx_subgraph_source)) +
                   outs * (sizeof(uint32_t) + sizeof(bool)) +
                   of->external_count * (sizeof(plx_tensor_info) + sizeof(void *)) + 64;
    char *block = calloc(1, bytes);
    if (!block) {
        return oom();
    }
    *scratch = block;
    plx_tensor_info *infos = (plx_tensor_info *)block;
    const void **consts = (const void **)(infos + ins + of->external_count);
    plx_subgraph_source *sources = (plx_subgraph_source *)(consts + ins + of->external_count);
    uint32_t *readers = (uint32_t *)(sources + ins);
    bool *escapes = (bool *)(readers + outs);
    *infos_out = infos;
    *consts_out = consts;
    for (uint32_t i = 0; i < of->local_count; i++) {
        uint32_t g = of->global[i];
        const plxi_layer *l = of->layers[g];
        plx_subgraph_layer *v = &of->view_layers[i];
        plxi_layer_view(l, of->layers, infos, consts, &v->view);
        for (uint32_t k = 0; k < l->input_count; k++) {
            sources[k] = local_source(of, l->inputs[k]);
        }
        v->inputs = sources;
        v->readers = readers;
        v->escapes = escapes;
        for (size_t r = 0; r < of->count; r++) {
            const plxi_layer *c = of->layers[r];
            for (uint32_t k = 0; c && k < c->input_count; k++) {
                if (c->inputs[k].layer != g) {
                    continue;
                }
                if (of->local[r] != UINT32_MAX) {
                    readers[c->inputs[k].slot]++;
                } else {
                    escapes[c->inputs[k].slot] = true;
                }
            }
        }
        infos += l->input_count;
        consts += l->input_count;
        sources += l->input_count;
        readers += l->output_count;
        escapes += l->output_count;
    }
    for (uint32_t e = 0; e < of->external_count; e++) {
        const plxi_layer *p = of->layers[of->external[e].layer];
        infos[e] = p->outputs[of->external[e].slot];
        consts[e] = plxi_constant_data(p);
    }
    memset(view, 0, sizeof *view);
    view->struct_size = (uint32_t)sizeof *view;
    view->layer_count = of->local_count;
    view->layers = of->view_layers;
    view->external_input_count = of->external_count;
    view->external_inputs = infos;
    view->external_constants = consts;
    return NULL;
}

/* The names of the layers edit `e` replaces, ", "-separated; NULL when
 * out of memory. */
static char *joined_names(const offer *of, const edit *e) {
    size_t len = 1;
    for (uint32_t i = 0; i < e->layer_count; i++) {
        len += strlen(of->layers[of->global[e->layers[i]]]->name) + 2;
    }
    char *s = malloc(len);
    if (!s) {
        return NULL;
    }
    s[0] = '\0';
    for (uint32_t i = 0; i < e->layer_count; i++) {
        if (i) {
            strcat(s, ", ");
        }
        strcat(s, of->layers[of->global[e->layers[i]]]->name);
    }
    return s;
}

/* The precompiled layer of edit `e`, which takes over e->kind and e->data
 * (set to NULL); NULL when out of memory (the edit keeps them). */
static plxi_layer *new_layer(const offer *of, edit *e) {
    plxi_layer *l = calloc(1, sizeof *l);
    if (!l) {
        return NULL;
    }
    /* Named after the layers it replaces, "a+b+c"; beyond three,
     * "first+...+last". */
    uint32_t named = e->layer_count > 3 ? 2 : e->layer_count;
    size_t name_len = 8;
    for (uint32_t i = 0; i < named; i++) {
        uint32_t k = i == 1 && named < e->layer_count ? e->layer_count - 1 : i;
        name_len += strlen(of->layers[of->global[e->layers[k]]]->name) + 1;
    }
    l->name = malloc(name_len);
    plx_precompiled_desc *d = calloc(1, sizeof *d);
    l->desc = d;
    l->inputs = malloc((e->input_count ? e->input_count : 1) * sizeof *l->inputs);
    l->outputs = calloc(e->output_count, sizeof *l->outputs);
    l->output_given = calloc(e->output_count, sizeof *l->output_given);
    if (!l->name || !d || !l->inputs || !l->outputs || !l->output_given) {
        plxi_layer_free(l);
        return NULL;
    }
    l->name[0] = '\0';
    for (uint32_t i = 0; i < named; i++) {
        uint32_t k = i == 1 && named < e->layer_count ? e->layer_count - 1 : i;
        strcat(l->name, i == 0 ? "" : k == i ? "+" : "+...+");
        strcat(l->name, of->layers[of->global[e->layers[k]]]->name);
    }
    for (uint32_t i = 0; i < e->layer_count; i++) {
        if (!plxi_layer_fuse(l, of->layers[of->global[e->layers[i]]])) {
            plxi_layer_free(l);
            return NULL;
        }
    }
    l->op = PLX_OP_PRECOMPILED;
    l->input_count = e->input_count;
    l->output_count = e->output_count;
    l->binding_id = -1;
    l->backend = of->backend;
    memcpy(l->inputs, e->inputs, e->input_count * sizeof *l->inputs);
    for (uint32_t i = 0; i < e->output_count; i++) {
        const plxi_layer *src = of->layers[of->global[e->outputs[i].layer]];
        l->outputs[i] = src->outputs[e->outputs[i].slot];
        if (!plxi_layer_own_quant(l, &l->outputs[i])) {
            plxi_layer_free(l);
            return NULL;
        }
    }
    if (!plxi_ptr_vec_push(&l->owned, e->kind)) {
        plxi_layer_free(l);
        return NULL;
    }
    if (!plxi_ptr_vec_push(&l->owned, e->data)) {
        l->owned.count--; /* kind stays the edit's */
        plxi_layer_free(l);
        return NULL;
    }
    d->struct_size = (uint32_t)sizeof *d;
    d->kind = e->kind;
    d->data = e->data;
    d->size = e->size;
    e->kind = NULL;
    e->data = NULL;
    return l;
}

/* Applies the recorded edits of one offer. */
static plx_status apply(plx_optimized_network *o, offer *of, plxi_backend_record *const *later,
                        size_t later_count, bool allow_fallback) {
    const char *id = of->backend->info.id;
    for (size_t x = 0; x < of->edit_count; x++) {
        edit *e = &of->edits[x];
        if (e->give_back) {
            continue;
        }
        plxi_layer *l = new_layer(of, e);
        if (!l) {
            return oom();
        }
        bool failed = false;
        char *reason = plxi_optimizer_ask(of->backend, l, of->layers, &failed);
        if (failed) {
            plxi_layer_free(l);
            return oom();
        }
        if (reason) {
            bool noted = plxi_optimizer_note(o, "backend '%s': substitution '%s' rejected: its "
                                                "check_layer refused it: %s",
                                             id, l->name, reason);
            free(reason);
            plxi_layer_free(l);
            if (!noted) {
                return oom();
            }
            continue;
        }
        /* Beyond three layers the name is "first+...+last": the note lists
         * them all, so that what runs where stays visible. */
        char *all = e->layer_count > 3 ? joined_names(of, e) : NULL;
        bool noted = (e->layer_count <= 3 || all) &&
                     plxi_optimizer_note(o, "backend '%s' replaced %u layer%s by '%s' (%s)%s%s",
                                         id, e->layer_count, e->layer_count == 1 ? "" : "s",
                                         l->name,
                                         ((const plx_precompiled_desc *)l->desc)->kind,
                                         all ? ": " : "", all ? all : "");
        free(all);
        if (!noted) {
            plxi_layer_free(l);
            return oom();
        }
        uint32_t place = of->global[e->layers[0]];
        /* Readers of the listed outputs, and the inputs of substitutions
         * still to apply, read the new layer. */
        for (uint32_t k = 0; k < e->output_count; k++) {
            plxi_source from = {of->global[e->outputs[k].layer], e->outputs[k].slot};
            for (size_t y = x + 1; y < of->edit_count; y++) {
                for (uint32_t i = 0; i < of->edits[y].input_count; i++) {
                    plxi_source *in = &of->edits[y].inputs[i];
                    if (in->layer == from.layer && in->slot == from.slot) {
                        *in = (plxi_source){place, k};
                    }
                }
            }
            for (size_t r = 0; r < of->count; r++) {
                plxi_layer *c = of->layers[r];
                if (!c || global_in_set(of, e->layers, e->layer_count, r)) {
                    continue;
                }
                for (uint32_t i = 0; i < c->input_count; i++) {
                    if (c->inputs[i].layer == from.layer && c->inputs[i].slot == from.slot) {
                        c->inputs[i] = (plxi_source){place, k};
                    }
                }
            }
        }
        for (uint32_t j = 0; j < e->layer_count; j++) {
            uint32_t g = of->global[e->layers[j]];
            plxi_layer_free(of->layers[g]);
            of->layers[g] = NULL;
        }
        of->layers[place] = l;
    }
    for (size_t x = 0; x < of->edit_count; x++) {
        edit *e = &of->edits[x];
        if (!e->give_back) {
            continue;
        }
        plxi_layer *l = of->layers[of->global[e->layers[0]]];
        const char *reason = plxi_refusal_text(id, e->kind);
        char *why = plxi_asprintf("given back: %s", reason);
        if (!why || !plxi_optimizer_refusal(l, id, why) ||
            !plxi_optimizer_note(o, "backend '%s' gave back layer '%s': %s", id, l->name,
                                 reason)) {
            return oom();
        }
        l->backend = NULL;
        if (allow_fallback && later_count &&
            !plxi_assign_by_preference(l, of->layers, later, later_count, true)) {
            return oom();
        }
    }
    return NULL;
}

static void release_offer(offer *of) {
    for (size_t x = 0; x < of->edit_count; x++) {
        free_edit(&of->edits[x]);
    }
    free(of->edits);
    free(of->external);
    free(of->view_layers);
    of->edits = NULL;
    of->edit_count = 0;
    of->external = NULL;
    of->view_layers = NULL;
}

/* Offers one component (local layers in of->global) to its backend. */
static plx_status offer_component(plx_optimized_network *o, offer *of,
                                  plxi_backend_record *const *later, size_t later_count,
                                  bool allow_fallback) {
    for (uint32_t i = 0; i < of->local_count; i++) {
        of->local[of->global[i]] = i;
        of->used[i] = false;
    }
    plx_subgraph_view view;
    plx_tensor_info *infos = NULL;
    const void **consts = NULL;
    void *scratch = NULL;
    plx_status s = build_view(of, &view, &infos, &consts, &scratch);
    if (!s) {
        plx_subgraph_editor editor = {(uint32_t)sizeof editor, substitute, give_back, of};
        plx_status b = of->backend->functions.optimize_subgraph(of->backend->instance, &view,
                                                                &editor);
        if (b) {
            bool noted = plxi_optimizer_note(
                o, "backend '%s': optimize_subgraph failed, its %u layer%s stay as assigned: %s",
                of->backend->info.id, of->local_count, of->local_count == 1 ? "" : "s",
                plx_status_get_message(b));
            plx_status_free(b);
            s = noted ? NULL : oom();
        } else {
            s = apply(o, of, later, later_count, allow_fallback);
        }
    }
    free(scratch);
    release_offer(of);
    for (uint32_t i = 0; i < of->local_count; i++) {
        of->local[of->global[i]] = UINT32_MAX;
    }
    return s;
}

/* Union-find over the compute layers of one backend. */
static uint32_t find(uint32_t *parent, uint32_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

plx_status plxi_optimize_subgraphs(plx_optimized_network *o, plxi_layer **layers,
                                   size_t *count, plxi_backend_record *const *prefs,
                                   size_t pref_count, bool allow_fallback) {
    size_t n = *count;
    offer of = {0};
    of.layers = layers;
    of.count = n;
    uint32_t *parent = malloc((n ? n : 1) * sizeof *parent);
    of.global = malloc((n ? n : 1) * sizeof *of.global);
    of.local = malloc((n ? n : 1) * sizeof *of.local);
    of.used = malloc((n ? n : 1) * sizeof *of.used);
    bool *done = malloc((n ? n : 1) * sizeof *done);
    plx_status s = parent && of.global && of.local && of.used && done ? NULL : oom();
    bool changed = false;
    for (size_t p = 0; !s && p < pref_count; p++) {
        plxi_backend_record *b = prefs[p];
        if (!b->functions.optimize_subgraph) {
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            parent[i] = (uint32_t)i;
            of.local[i] = UINT32_MAX;
            done[i] = false;
        }
        for (size_t i = 0; i < n; i++) {
            const plxi_layer *l = layers[i];
            if (!is_compute(l) || l->backend != b) {
                continue;
            }
            for (uint32_t k = 0; k < l->input_count; k++) {
                const plxi_layer *src = layers[l->inputs[k].layer];
                if (is_compute(src) && src->backend == b) {
                    parent[find(parent, (uint32_t)i)] = find(parent, l->inputs[k].layer);
                }
            }
        }
        of.backend = b;
        for (size_t i = 0; !s && i < n; i++) {
            const plxi_layer *l = layers[i];
            if (!is_compute(l) || l->backend != b || done[i]) {
                continue;
            }
            uint32_t root = find(parent, (uint32_t)i);
            of.local_count = 0;
            for (size_t j = i; j < n; j++) {
                const plxi_layer *m = layers[j];
                if (is_compute(m) && m->backend == b && !done[j] &&
                    find(parent, (uint32_t)j) == root) {
                    done[j] = true;
                    of.global[of.local_count++] = (uint32_t)j;
                }
            }
            size_t notes = o->notes.count;
            s = offer_component(o, &of, prefs + p + 1, pref_count - p - 1, allow_fallback);
            changed = changed || o->notes.count != notes;
        }
    }
    free(parent);
    free(of.global);
    free(of.local);
    free(of.used);
    free(done);
    if (!s && changed) {
        s = plxi_layers_sort(layers, count);
    }
    return s;
}
