/* The loaded network (LOADED-NETWORK.md, "Loading" and "Executing").
 *
 * Load: one factory per backend used; tensor handles for every layer
 * output (before workloads); one workload per compute and constant layer;
 * constants allocated and their workloads run at once; the factories told
 * that every workload exists. Working memory (every other managed handle)
 * is allocated at the first execution and can be released.
 *
 * Execute, under the network's mutex: validate the bindings, import or copy
 * inputs in, import callers' output buffers into exported handles, run the
 * layers in order (the core does copy layers itself and binds import
 * layers to their producer's memory), then copy outputs out and end every
 * import. Every array execution needs is sized at load,
 * so a steady-state execution allocates nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "network_internal.h"

/* One tensor handle: an output slot of a layer. */
typedef struct handle_slot {
    plx_tensor_handle *handle;
    plxi_backend_record *backend;
    const plx_tensor_info *info;
    size_t bytes;
    bool managed;
    bool constant;    /* allocated at load, kept until unload */
    bool allocated;
    /* A sub-tensor of `parent` at `offset` bytes (in-place concat/split). */
    struct handle_slot *parent;
    size_t offset;
    bool is_parent;
    bool exported;    /* an import layer reads it in place */
    bool caller_memory; /* a zero-copy network input or output */
} handle_slot;

typedef struct layer_state {
    plxi_layer *layer;
    bool import_bound;        /* an import layer's handle holds its producer's memory */
    bool in_place;            /* a concat or split done by sub-tensors: no workload */
    plx_workload *workload;   /* compute and constant layers */
    handle_slot **outputs;    /* output_count entries */
    handle_slot **inputs;     /* input_count entries: the producers' slots */
} layer_state;

typedef struct io_binding {
    int32_t binding_id;
    plx_tensor_info info;
    size_t bytes;
    handle_slot *slot;        /* input: the input layer's handle; output: the producer's */
    bool zero_copy;           /* input imported / output exported */
    const char *layer_name;
} io_binding;

typedef struct factory_entry {
    plxi_backend_record *backend;
    plx_factory *factory;
} factory_entry;

struct plx_loaded_network {
    plx_runtime *runtime;
    uint32_t id;
    plx_optimized_network *optimized;
    pthread_mutex_t lock;

    factory_entry *factories;
    size_t factory_count;
    layer_state *layers;      /* in execution order */
    size_t layer_count;
    handle_slot *slots;       /* every handle */
    size_t slot_count;

    io_binding *inputs;
    size_t input_count;
    io_binding *outputs;
    size_t output_count;
    /* Per execution: which input/output of the network each binding filled. */
    const plx_tensor_binding **input_args;
    const plx_tensor_binding **output_args;

    bool working_memory;      /* managed handles are allocated */
    plx_debug_fn debug_fn;
    void *debug_user_data;
};

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while loading the network");
}

static plx_factory *factory_of(plx_loaded_network *n, const plxi_backend_record *b) {
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].backend == b) {
            return n->factories[i].factory;
        }
    }
    return NULL;
}

/* Annotates a backend's failure with where it happened; consumes `s`. */
static plx_status at_layer(plx_status s, const plxi_layer *l, const char *what) {
    plx_status r = plxi_status_create(plx_status_get_code(s), "layer '%s' (%s) on %s: %s: %s",
                                      l->name, plx_op_name(l->op), l->backend->info.id, what,
                                      plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

static void release_memory(plx_loaded_network *n, bool constants_too) {
    for (size_t i = 0; i < n->slot_count; i++) {
        handle_slot *h = &n->slots[i];
        if (h->allocated && (constants_too || !h->constant)) {
            h->backend->functions.release_tensor_handle(h->handle);
            h->allocated = false;
        }
    }
    n->working_memory = false;
}

PLX_API void plx_loaded_network_unload(plx_loaded_network **loaded) {
    if (!loaded || !*loaded) {
        return;
    }
    plx_loaded_network *n = *loaded;
    *loaded = NULL;
    plx_runtime *rt = n->runtime;
    pthread_mutex_lock(&rt->loaded_lock);
    for (size_t i = 0; i < rt->loaded.count; i++) {
        if (rt->loaded.items[i] == n) {
            rt->loaded.items[i] = rt->loaded.items[--rt->loaded.count];
            break;
        }
    }
    pthread_mutex_unlock(&rt->loaded_lock);

    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; n->layers && i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        if (ls->workload) {
            ls->layer->backend->functions.destroy_workload(ls->workload);
        }
    }
    release_memory(n, true);
    /* Sub-tensors go before their parents. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; n->slots && i < n->slot_count; i++) {
            handle_slot *h = &n->slots[i];
            if (h->handle && (h->parent != NULL) == (pass == 0)) {
                h->backend->functions.destroy_tensor_handle(h->handle);
            }
        }
    }
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].factory) {
            n->factories[i].backend->functions.destroy_factory(n->factories[i].factory);
        }
    }
    for (size_t i = 0; n->layers && i < n->layer_count; i++) {
        free(n->layers[i].outputs);
        free(n->layers[i].inputs);
    }
    pthread_mutex_unlock(&n->lock);
    pthread_mutex_destroy(&n->lock);
    free(n->layers);
    free(n->slots);
    free(n->factories);
    free(n->inputs);
    free(n->outputs);
    free(n->input_args);
    free(n->output_args);
    plx_optimized_network_destroy(&n->optimized);
    free(n);
}

void plxi_runtime_unload_all(plx_runtime *rt) {
    while (rt->loaded.count) {
        plx_loaded_network *n = rt->loaded.items[rt->loaded.count - 1];
        plxi_log(&rt->logger, PLX_LOG_WARN, "plexus",
                 "network %u was still loaded when its runtime was destroyed; unloading it",
                 n->id);
        plx_loaded_network_unload(&n);
    }
}

/* How many inputs read output `slot` of layer `index`, and whether one of
 * them is a network output. */
static size_t consumers(const plx_optimized_network *o, size_t index, uint32_t slot,
                        bool *out_feeds_output) {
    size_t n = 0;
    *out_feeds_output = false;
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *c = o->layers.items[i];
        for (uint32_t k = 0; k < c->input_count; k++) {
            if (c->inputs[k].layer == index && c->inputs[k].slot == slot) {
                n++;
                *out_feeds_output = *out_feeds_output || c->op == PLX_OP_OUTPUT;
            }
        }
    }
    return n;
}

static bool imports_malloc(const plxi_backend_record *b) {
    return b->functions.import_tensor_handle &&
           (plx_backend_info_import_sources(&b->info) & PLX_MEMORY_SOURCE_MALLOC);
}

/* Product of the dims before `axis`: 1 when every part along the axis is
 * one contiguous byte range of the whole. */
static int64_t outer_count(const plx_tensor_info *t, int32_t axis) {
    int64_t n = 1;
    for (int32_t i = 0; i < axis; i++) {
        n *= t->dims[i];
    }
    return n;
}

static int32_t normalized_axis(int32_t axis, uint32_t rank) {
    return axis < 0 ? axis + (int32_t)rank : axis;
}

/* A slot that may become a sub-tensor: a managed, ordinary handle. */
static bool can_be_sub(const handle_slot *h, const plxi_backend_record *b) {
    return h->backend == b && h->managed && !h->constant && !h->parent && !h->is_parent &&
           !h->exported;
}

static void make_subs(handle_slot *parent, handle_slot **parts, uint32_t count) {
    size_t offset = 0;
    for (uint32_t k = 0; k < count; k++) {
        parts[k]->parent = parent;
        parts[k]->offset = offset;
        parts[k]->managed = false;
        offset += parts[k]->bytes;
    }
    parent->is_parent = true;
}

/* Concats whose inputs are contiguous parts of the output, and splits whose
 * outputs are contiguous parts of the input, run in place on backends with
 * sub-tensors: the parts become sub-tensors of the whole, and the layer
 * needs no workload (backend.h, create_sub_tensor_handle). All or nothing
 * per layer; a tensor is a part of at most one whole. */
static void plan_in_place(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        const plxi_layer *l = ls->layer;
        const plxi_backend_record *b = l->backend;
        if (!b->functions.create_sub_tensor_handle ||
            (l->op != PLX_OP_CONCAT && l->op != PLX_OP_SPLIT)) {
            continue;
        }
        int32_t axis = ((const plx_axis_desc *)l->desc)->axis;
        bool ok = true;
        if (l->op == PLX_OP_CONCAT) {
            handle_slot *whole = ls->outputs[0];
            ok = outer_count(whole->info, normalized_axis(axis, whole->info->rank)) == 1 &&
                 whole->managed && !whole->parent && !whole->is_parent;
            for (uint32_t k = 0; ok && k < l->input_count; k++) {
                const plxi_source *src = &l->inputs[k];
                const plxi_layer *p = o->layers.items[src->layer];
                bool feeds_output;
                ok = can_be_sub(ls->inputs[k], b) && p->op != PLX_OP_INPUT &&
                     consumers(o, src->layer, src->slot, &feeds_output) == 1;
            }
            if (ok) {
                make_subs(whole, ls->inputs, l->input_count);
            }
        } else {
            handle_slot *whole = ls->inputs[0];
            ok = outer_count(whole->info, normalized_axis(axis, whole->info->rank)) == 1 &&
                 whole->backend == b && whole->managed && !whole->constant && !whole->parent;
            for (uint32_t k = 0; ok && k < l->output_count; k++) {
                ok = can_be_sub(ls->outputs[k], b);
            }
            if (ok) {
                make_subs(whole, ls->outputs, l->output_count);
            }
        }
        ls->in_place = ok;
        if (ok) {
            plxi_log(&n->runtime->logger, PLX_LOG_DEBUG, "plexus",
                     "network %u: '%s' (%s) runs in place on %s (sub-tensors)", n->id, l->name,
                     plx_op_name(l->op), b->info.id);
        }
    }
}

/* Creates the factories and every tensor handle. */
static plx_status create_handles(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (factory_of(n, l->backend) || l->op == PLX_OP_OUTPUT) {
            continue;
        }
        plx_factory_params params = {(uint32_t)sizeof params,
                                     o->import_enabled ? plx_backend_info_import_sources(&l->backend->info) : 0,
                                     o->export_enabled ? plx_backend_info_export_sources(&l->backend->info) : 0,
                                     n->id};
        factory_entry *e = &n->factories[n->factory_count];
        e->backend = l->backend;
        plx_status s = l->backend->functions.create_factory(l->backend->instance, &params,
                                                              &e->factory);
        if (s) {
            plx_status r = plxi_status_create(plx_status_get_code(s),
                                              "backend '%s': cannot create a workload factory: "
                                              "%s", l->backend->info.id,
                                              plx_status_get_message(s));
            plx_status_free(s);
            return r;
        }
        if (!e->factory) {
            return plxi_status_create(PLX_INTERNAL,
                                      "backend '%s': create_factory succeeded without a factory",
                                      l->backend->info.id);
        }
        n->factory_count++;
    }
    for (size_t i = 0; i < o->layers.count; i++) {
        plxi_layer *l = o->layers.items[i];
        layer_state *ls = &n->layers[i];
        ls->layer = l;
        ls->outputs = calloc(l->output_count ? l->output_count : 1, sizeof *ls->outputs);
        ls->inputs = calloc(l->input_count ? l->input_count : 1, sizeof *ls->inputs);
        if (!ls->outputs || !ls->inputs) {
            return oom();
        }
        for (uint32_t k = 0; k < l->output_count; k++) {
            handle_slot *h = &n->slots[n->slot_count++];
            bool feeds_output;
            size_t uses = consumers(o, i, k, &feeds_output);
            h->backend = l->backend;
            h->info = &l->outputs[k];
            h->constant = l->op == PLX_OP_CONSTANT;
            plx_tensor_info_byte_size(&l->outputs[k], &h->bytes);
            /* LOADED-NETWORK.md, Loading 3: who manages the memory. */
            bool imported_input = l->op == PLX_OP_INPUT && o->import_enabled &&
                                  imports_malloc(l->backend);
            bool exported_output = o->export_enabled && feeds_output && uses == 1 &&
                                   l->output_count == 1 && l->op != PLX_OP_INPUT &&
                                   l->op != PLX_OP_CONSTANT && imports_malloc(l->backend);
            h->managed = !(imported_input || exported_output || l->op == PLX_OP_MEM_IMPORT);
            h->caller_memory = imported_input || exported_output;
            ls->outputs[k] = h;
        }
    }
    for (size_t i = 0; i < o->layers.count; i++) {
        layer_state *ls = &n->layers[i];
        for (uint32_t k = 0; k < ls->layer->input_count; k++) {
            const plxi_source *src = &ls->layer->inputs[k];
            ls->inputs[k] = n->layers[src->layer].outputs[src->slot];
            ls->inputs[k]->exported |= ls->layer->op == PLX_OP_MEM_IMPORT;
        }
    }
    plan_in_place(n);
    /* Whole tensors first, then the sub-tensors that need their parents. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < o->layers.count; i++) {
            layer_state *ls = &n->layers[i];
            const plxi_layer *l = ls->layer;
            for (uint32_t k = 0; k < l->output_count; k++) {
                handle_slot *h = ls->outputs[k];
                if ((h->parent != NULL) != (pass == 1)) {
                    continue;
                }
                plx_status s;
                if (h->parent) {
                    s = l->backend->functions.create_sub_tensor_handle(
                        factory_of(n, l->backend), h->parent->handle, h->info, h->offset,
                        &h->handle);
                } else {
                    plx_tensor_handle_params hp = {
                        (uint32_t)sizeof hp, h->managed,
                        h->managed ? 0u : (uint32_t)PLX_MEMORY_SOURCE_MALLOC,
                        h->exported ? (uint32_t)PLX_MEMORY_SOURCE_MALLOC : 0u};
                    s = l->backend->functions.create_tensor_handle(factory_of(n, l->backend),
                                                                   h->info, &hp, &h->handle);
                }
                if (s) {
                    return at_layer(s, l, "cannot create a tensor handle");
                }
                if (!h->handle) {
                    return plxi_status_create(PLX_INTERNAL,
                                              "layer '%s' on %s: the backend created no tensor "
                                              "handle", l->name, l->backend->info.id);
                }
            }
        }
    }
    return NULL;
}

static plx_status allocate(handle_slot *h, const plxi_layer *l) {
    if (!h->managed || h->allocated) {
        return NULL;
    }
    plx_status s = h->backend->functions.allocate_tensor_handle(h->handle);
    if (s) {
        return at_layer(s, l, "cannot allocate tensor memory");
    }
    h->allocated = true;
    return NULL;
}

/* Binds an import layer's handle to its producer's memory. */
static plx_status bind_import(layer_state *ls) {
    handle_slot *src = ls->inputs[0], *dst = ls->outputs[0];
    void *data = NULL;
    plx_status s = src->backend->functions.map_tensor_handle(src->handle, &data);
    if (s) {
        return at_layer(s, ls->layer, "cannot map the producer's tensor for import");
    }
    /* A backend exporting malloc memory keeps this pointer valid while the
     * memory is allocated (backend.h, map_tensor_handle); the import is
     * ended at the end of the execution. */
    src->backend->functions.unmap_tensor_handle(src->handle);
    s = dst->backend->functions.import_tensor_handle(dst->handle, data, src->bytes,
                                                     PLX_MEMORY_SOURCE_MALLOC);
    return s ? at_layer(s, ls->layer, "import of the producer's memory failed") : NULL;
}

static void configure_all(plx_loaded_network *n, plx_status *s) {
    for (size_t i = 0; !*s && i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        if (ls->workload && ls->layer->op != PLX_OP_CONSTANT &&
            ls->layer->backend->functions.configure_workload) {
            plx_status c = ls->layer->backend->functions.configure_workload(ls->workload);
            if (c) {
                *s = at_layer(c, ls->layer, "configure failed");
            }
        }
    }
}

/* LOADED-NETWORK.md, Loading 8: working memory at the first execution. */
static plx_status ensure_working_memory(plx_loaded_network *n) {
    if (n->working_memory) {
        return NULL;
    }
    plx_status s = NULL;
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        for (uint32_t k = 0; !s && k < ls->layer->output_count; k++) {
            s = allocate(ls->outputs[k], ls->layer);
        }
    }
    configure_all(n, &s);
    if (s) {
        release_memory(n, false);
        return s;
    }
    n->working_memory = true;
    return NULL;
}

static plx_status copy_between(handle_slot *src, handle_slot *dst, const plxi_layer *l) {
    void *from = NULL, *to = NULL;
    plx_status s = src->backend->functions.map_tensor_handle(src->handle, &from);
    if (s) {
        return at_layer(s, l, "cannot map the source tensor");
    }
    s = dst->backend->functions.map_tensor_handle(dst->handle, &to);
    if (s) {
        src->backend->functions.unmap_tensor_handle(src->handle);
        return at_layer(s, l, "cannot map the destination tensor");
    }
    memcpy(to, from, dst->bytes);
    dst->backend->functions.unmap_tensor_handle(dst->handle);
    src->backend->functions.unmap_tensor_handle(src->handle);
    return NULL;
}

static void debug_outputs(plx_loaded_network *n, layer_state *ls) {
    for (uint32_t k = 0; k < ls->layer->output_count; k++) {
        handle_slot *h = ls->outputs[k];
        void *data = NULL;
        plx_status s = h->backend->functions.map_tensor_handle(h->handle, &data);
        if (s) {
            plxi_log(&n->runtime->logger, PLX_LOG_WARN, "plexus",
                     "debug callback: cannot map output %u of '%s': %s", k, ls->layer->name,
                     plx_status_get_message(s));
            plx_status_free(s);
            continue;
        }
        n->debug_fn(n->debug_user_data, ls->layer->name, ls->layer->op,
                    ls->layer->backend->info.id, k, &ls->layer->outputs[k], data);
        h->backend->functions.unmap_tensor_handle(h->handle);
    }
}

static plx_status create_workloads(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    plxi_layer *const *layers = (plxi_layer *const *)o->layers.items;
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        plxi_layer *l = ls->layer;
        if (l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT || l->op == PLX_OP_MEM_COPY ||
            l->op == PLX_OP_MEM_IMPORT || ls->in_place) {
            continue;
        }
        plx_tensor_info in_small[16];
        const void *const_small[16];
        plx_tensor_info *infos = in_small;
        const void **constants = const_small;
        if (l->input_count > 16) {
            infos = malloc(l->input_count * sizeof *infos);
            constants = malloc(l->input_count * sizeof *constants);
        }
        plx_tensor_handle **in_h = malloc((l->input_count + 1) * sizeof *in_h);
        plx_tensor_handle **out_h = malloc((l->output_count + 1) * sizeof *out_h);
        plx_status s = NULL;
        if (!infos || !constants || !in_h || !out_h) {
            s = oom();
        } else {
            for (uint32_t k = 0; k < l->input_count; k++) {
                in_h[k] = ls->inputs[k]->handle;
            }
            for (uint32_t k = 0; k < l->output_count; k++) {
                out_h[k] = ls->outputs[k]->handle;
            }
            plx_layer_view view;
            plxi_layer_view(l, layers, infos, constants, &view);
            s = l->backend->functions.create_workload(factory_of(n, l->backend), &view, in_h,
                                                      out_h, &ls->workload);
            if (s) {
                s = at_layer(s, l, "cannot create the workload");
            } else if (!ls->workload) {
                s = plxi_status_create(PLX_INTERNAL,
                                       "layer '%s' (%s) on %s: no workload was created",
                                       l->name, plx_op_name(l->op), l->backend->info.id);
            }
        }
        if (infos != in_small) {
            free(infos);
            free((void *)constants);
        }
        free(in_h);
        free(out_h);
        if (s) {
            return s;
        }
    }
    for (size_t i = 0; i < n->factory_count; i++) {
        const plxi_backend_record *b = n->factories[i].backend;
        if (b->functions.factory_workloads_created) {
            plx_status s = b->functions.factory_workloads_created(n->factories[i].factory);
            if (s) {
                plx_status r = plxi_status_create(plx_status_get_code(s),
                                                  "backend '%s': workloads_created hook failed: "
                                                  "%s", b->info.id, plx_status_get_message(s));
                plx_status_free(s);
                return r;
            }
        }
    }
    return NULL;
}

/* LOADED-NETWORK.md, Loading 5: constants are computed once, at load. */
static plx_status run_constants(plx_loaded_network *n) {
    plx_status s = NULL;
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        if (ls->layer->op != PLX_OP_CONSTANT) {
            continue;
        }
        s = allocate(ls->outputs[0], ls->layer);
        if (!s && ls->layer->backend->functions.configure_workload) {
            plx_status c = ls->layer->backend->functions.configure_workload(ls->workload);
            s = c ? at_layer(c, ls->layer, "configure failed") : NULL;
        }
        if (!s) {
            plx_status e = ls->layer->backend->functions.execute_workload(ls->workload);
            s = e ? at_layer(e, ls->layer, "constant workload failed") : NULL;
        }
    }
    return s;
}

static plx_status collect_io(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        plxi_layer *l = ls->layer;
        if (l->op == PLX_OP_INPUT) {
            io_binding *b = &n->inputs[n->input_count++];
            b->binding_id = l->binding_id;
            b->info = l->outputs[0];
            b->slot = ls->outputs[0];
            b->bytes = b->slot->bytes;
            b->zero_copy = b->slot->caller_memory;
            b->layer_name = l->name;
        } else if (l->op == PLX_OP_OUTPUT) {
            io_binding *b = &n->outputs[n->output_count++];
            const plxi_layer *producer = o->layers.items[l->inputs[0].layer];
            b->binding_id = l->binding_id;
            b->info = producer->outputs[l->inputs[0].slot];
            b->slot = ls->inputs[0];
            b->bytes = b->slot->bytes;
            b->zero_copy = b->slot->caller_memory && producer->op != PLX_OP_INPUT;
            b->layer_name = l->name;
        }
    }
    return NULL;
}

PLX_API plx_status plx_runtime_load_network(plx_runtime *runtime,
                                            plx_optimized_network **optimized,
                                            plx_loaded_network **out_loaded) {
    if (out_loaded) {
        *out_loaded = NULL;
    }
    if (!optimized || !*optimized) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "optimized network is NULL");
    }
    plx_optimized_network *o = *optimized;
    *optimized = NULL;
    if (!runtime || !out_loaded || o->runtime != runtime) {
        plx_optimized_network_destroy(&o);
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  !runtime ? "runtime is NULL"
                                  : !out_loaded ? "out_loaded is NULL"
                                                : "the network was optimised for another runtime");
    }
    plx_loaded_network *n = calloc(1, sizeof *n);
    if (!n) {
        plx_optimized_network_destroy(&o);
        return oom();
    }
    n->runtime = runtime;
    n->optimized = o;
    pthread_mutex_init(&n->lock, NULL);
    size_t count = o->layers.count, slots = 0, ins = 0, outs = 0;
    for (size_t i = 0; i < count; i++) {
        const plxi_layer *l = o->layers.items[i];
        slots += l->output_count;
        ins += l->op == PLX_OP_INPUT;
        outs += l->op == PLX_OP_OUTPUT;
    }
    n->layer_count = count;
    n->layers = calloc(count ? count : 1, sizeof *n->layers);
    n->slots = calloc(slots ? slots : 1, sizeof *n->slots);
    n->factories = calloc(count ? count : 1, sizeof *n->factories);
    n->inputs = calloc(ins ? ins : 1, sizeof *n->inputs);
    n->outputs = calloc(outs ? outs : 1, sizeof *n->outputs);
    n->input_args = calloc(ins ? ins : 1, sizeof *n->input_args);
    n->output_args = calloc(outs ? outs : 1, sizeof *n->output_args);
    pthread_mutex_lock(&runtime->loaded_lock);
    n->id = ++runtime->last_network_id;
    bool listed = plxi_ptr_vec_push(&runtime->loaded, n);
    pthread_mutex_unlock(&runtime->loaded_lock);
    plx_status s = NULL;
    if (!listed || !n->layers || !n->slots || !n->factories || !n->inputs || !n->outputs ||
        !n->input_args || !n->output_args) {
        s = oom();
    }
    if (!s) {
        s = create_handles(n);
    }
    if (!s) {
        s = create_workloads(n);
    }
    if (!s) {
        s = run_constants(n);
    }
    if (!s) {
        s = collect_io(n);
    }
    if (s) {
        plx_loaded_network_unload(&n);
        return s;
    }
    plxi_log(&runtime->logger, PLX_LOG_INFO, "plexus", "loaded network %u: %s", n->id,
             o->summary);
    *out_loaded = n;
    return NULL;
}

PLX_API uint32_t plx_loaded_network_id(const plx_loaded_network *loaded) {
    return loaded ? loaded->id : 0;
}

/* LOADED-NETWORK.md, Executing 1: counts, known ids, each once, sizes. */
static plx_status match_bindings(const char *kind, const io_binding *expected, size_t count,
                                 const plx_tensor_binding *given, size_t given_count,
                                 const plx_tensor_binding **slots) {
    if (given_count != count) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "the network has %zu %ss, the call gives %zu", count, kind,
                                  given_count);
    }
    if (count && !given) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%ss is NULL", kind);
    }
    for (size_t i = 0; i < count; i++) {
        slots[i] = NULL;
    }
    for (size_t g = 0; g < given_count; g++) {
        const plx_tensor_binding *b = &given[g];
        size_t k = 0;
        while (k < count && expected[k].binding_id != b->binding_id) {
            k++;
        }
        if (k == count) {
            return plxi_status_create(PLX_NOT_FOUND, "%s binding id %d is not one of the "
                                                     "network's %ss", kind, b->binding_id, kind);
        }
        if (slots[k]) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s binding id %d is given more than once", kind,
                                      b->binding_id);
        }
        if (!b->data) {
            return plxi_status_create(PLX_INVALID_ARGUMENT, "%s binding id %d: data is NULL",
                                      kind, b->binding_id);
        }
        if (b->size != expected[k].bytes) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s binding id %d ('%s'): %zu bytes given, the tensor "
                                      "needs %zu", kind, b->binding_id, expected[k].layer_name,
                                      b->size, expected[k].bytes);
        }
        slots[k] = b;
    }
    return NULL;
}

/* Copies caller data into (or out of) a handle. */
static plx_status copy_host(handle_slot *h, void *data, bool into, int32_t binding,
                            const char *kind) {
    void *mapped = NULL;
    plx_status s = h->backend->functions.map_tensor_handle(h->handle, &mapped);
    if (s) {
        plx_status r = plxi_status_create(plx_status_get_code(s),
                                          "%s binding id %d: cannot map the tensor on %s: %s",
                                          kind, binding, h->backend->info.id,
                                          plx_status_get_message(s));
        plx_status_free(s);
        return r;
    }
    if (into) {
        memcpy(mapped, data, h->bytes);
    } else {
        memcpy(data, mapped, h->bytes);
    }
    h->backend->functions.unmap_tensor_handle(h->handle);
    return NULL;
}

static plx_status import_caller(handle_slot *h, void *data, int32_t binding, const char *kind) {
    plx_status s = h->backend->functions.import_tensor_handle(h->handle, data, h->bytes,
                                                              PLX_MEMORY_SOURCE_MALLOC);
    if (!s) {
        return NULL;
    }
    plx_status r = plxi_status_create(plx_status_get_code(s),
                                      "%s binding id %d: import into %s failed: %s", kind, binding,
                                      h->backend->info.id, plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

static plx_status run_layers(plx_loaded_network *n) {
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        const plxi_layer *l = ls->layer;
        plx_status s = NULL;
        if (ls->workload && l->op != PLX_OP_CONSTANT) {
            s = l->backend->functions.execute_workload(ls->workload);
            if (s) {
                return at_layer(s, l, "execution failed");
            }
        } else if (l->op == PLX_OP_MEM_COPY) {
            s = copy_between(ls->inputs[0], ls->outputs[0], l);
            if (s) {
                return s;
            }
        } else if (l->op == PLX_OP_MEM_IMPORT) {
            /* Bound per execution: the producer may be a zero-copy input,
             * whose memory is the caller's and changes every time. */
            s = bind_import(ls);
            if (s) {
                return s;
            }
            ls->import_bound = true;
            continue;
        } else if (!ls->in_place) {
            continue;
        }
        if (n->debug_fn) {
            debug_outputs(n, ls);
        }
    }
    return NULL;
}

PLX_API plx_status plx_loaded_network_execute(plx_loaded_network *loaded,
                                              const plx_tensor_binding *inputs,
                                              size_t input_count,
                                              const plx_tensor_binding *outputs,
                                              size_t output_count) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    plx_loaded_network *n = loaded;
    pthread_mutex_lock(&n->lock);
    plx_status s = match_bindings("input", n->inputs, n->input_count, inputs, input_count,
                                  n->input_args);
    if (!s) {
        s = match_bindings("output", n->outputs, n->output_count, outputs, output_count,
                           n->output_args);
    }
    if (!s) {
        s = ensure_working_memory(n);
    }
    /* Imports made so far, undone whatever happens. */
    size_t imported_in = 0, imported_out = 0;
    for (; !s && imported_in < n->input_count; imported_in++) {
        io_binding *b = &n->inputs[imported_in];
        void *data = n->input_args[imported_in]->data;
        s = b->zero_copy ? import_caller(b->slot, data, b->binding_id, "input")
                         : copy_host(b->slot, data, true, b->binding_id, "input");
        if (s && b->zero_copy) {
            break; /* this one did not import */
        }
    }
    for (; !s && imported_out < n->output_count; imported_out++) {
        io_binding *b = &n->outputs[imported_out];
        if (b->zero_copy) {
            s = import_caller(b->slot, n->output_args[imported_out]->data, b->binding_id,
                              "output");
            if (s) {
                break;
            }
        }
    }
    if (!s) {
        s = run_layers(n);
    }
    for (size_t i = 0; i < n->output_count; i++) {
        io_binding *b = &n->outputs[i];
        if (b->zero_copy && i < imported_out) {
            b->slot->backend->functions.unimport_tensor_handle(b->slot->handle);
        } else if (!s && !b->zero_copy) {
            s = copy_host(b->slot, n->output_args[i]->data, false, b->binding_id, "output");
        }
    }
    for (size_t i = 0; i < imported_in && i < n->input_count; i++) {
        io_binding *b = &n->inputs[i];
        if (b->zero_copy) {
            b->slot->backend->functions.unimport_tensor_handle(b->slot->handle);
        }
    }
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &n->layers[i];
        if (ls->import_bound) {
            handle_slot *h = ls->outputs[0];
            h->backend->functions.unimport_tensor_handle(h->handle);
            ls->import_bound = false;
        }
    }
    pthread_mutex_unlock(&n->lock);
    return s;
}

static plx_status find_info(const io_binding *list, size_t count, int32_t binding,
                            const char *kind, plx_tensor_info *out) {
    for (size_t i = 0; i < count; i++) {
        if (list[i].binding_id == binding) {
            *out = list[i].info;
            return NULL;
        }
    }
    return plxi_status_create(PLX_NOT_FOUND, "%s binding id %d is not one of the network's %ss",
                              kind, binding, kind);
}

PLX_API plx_status plx_loaded_network_input_info(const plx_loaded_network *loaded,
                                                 int32_t binding_id, plx_tensor_info *out_info) {
    if (!loaded || !out_info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  loaded ? "out_info" : "loaded network");
    }
    return find_info(loaded->inputs, loaded->input_count, binding_id, "input", out_info);
}

PLX_API plx_status plx_loaded_network_output_info(const plx_loaded_network *loaded,
                                                  int32_t binding_id, plx_tensor_info *out_info) {
    if (!loaded || !out_info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  loaded ? "out_info" : "loaded network");
    }
    return find_info(loaded->outputs, loaded->output_count, binding_id, "output", out_info);
}

PLX_API size_t plx_loaded_network_input_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->input_count : 0;
}

PLX_API int32_t plx_loaded_network_input_binding(const plx_loaded_network *loaded, size_t index) {
    return loaded && index < loaded->input_count ? loaded->inputs[index].binding_id : -1;
}

PLX_API size_t plx_loaded_network_output_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->output_count : 0;
}

PLX_API int32_t plx_loaded_network_output_binding(const plx_loaded_network *loaded,
                                                  size_t index) {
    return loaded && index < loaded->output_count ? loaded->outputs[index].binding_id : -1;
}

PLX_API void plx_loaded_network_release_working_memory(plx_loaded_network *loaded) {
    if (!loaded) {
        return;
    }
    pthread_mutex_lock(&loaded->lock);
    release_memory(loaded, false);
    pthread_mutex_unlock(&loaded->lock);
}

PLX_API void plx_loaded_network_set_debug_callback(plx_loaded_network *loaded, plx_debug_fn fn,
                                                   void *user_data) {
    if (!loaded) {
        return;
    }
    pthread_mutex_lock(&loaded->lock);
    loaded->debug_fn = fn;
    loaded->debug_user_data = user_data;
    pthread_mutex_unlock(&loaded->lock);
}
