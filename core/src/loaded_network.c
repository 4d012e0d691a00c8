/* The loaded network (docs/loaded-network.md, "Loading", "Executing",
 * "Pre-imported inputs and outputs", "Executing asynchronously").
 *
 * Load: one factory per backend used; constants' handles and workloads,
 * allocated and run at once (shared by every execution); the memory plan of
 * each backend whose intermediate tensors the host manages; then the
 * network's own working memory.
 *
 * A working memory (plx_working_memory) holds everything one execution
 * writes: a tensor handle per non-constant layer output, a workload per
 * compute layer, and, for planned backends, the buffers of the plan. The
 * network's own working memory serves plx_loaded_network_execute, one call
 * at a time under the network's mutex; applications create more for
 * concurrent executions. Memory is allocated at a working memory's first
 * execution and can be released.
 *
 * An execution validates the bindings, imports or copies inputs in, imports
 * callers' output buffers into exported handles, runs the layers in order
 * (the host does copy layers itself and binds import layers to their
 * producer's memory), copies outputs out and ends every import. Every array
 * an execution needs is sized beforehand, so a steady-state execution
 * allocates nothing. */
#include <pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memory_plan.h"
#include "network_internal.h"

/* Alignment of planned tensors inside their buffers: a cache line, which
 * also satisfies every element type. */
#define PLAN_ALIGNMENT 64

/* One tensor handle: an output slot of a layer. */
typedef struct handle_slot {
    plx_tensor_handle *handle;
    plxi_backend_record *backend;
    const plx_tensor_info *info;
    size_t bytes;
    bool managed;       /* the backend owns the memory */
    bool planned;       /* the host's plan gives it memory (imported) */
    bool constant;      /* allocated at load, kept until unload */
    bool allocated;     /* managed: allocate_tensor_handle was called */
    bool caller_memory; /* a zero-copy network input or output */
    bool exported;      /* an import layer reads it in place */
    uint32_t import_sources; /* what its backend imports, looked up once */
    size_t import_alignment; /* what its backend imports malloc memory at */
    bool bound;         /* holds an import that the execution must end */
    /* Caller memory that missed import_alignment is copied here and the
     * stage imported instead (allocated at the first need, freed with the
     * working memory's memory); staged: this execution did so. */
    void *stage;
    bool staged;
    /* A sub-tensor of `parent` at `offset` bytes (in-place concat/split). */
    struct handle_slot *parent;
    size_t offset;
    bool is_parent;
    uint32_t block;     /* planned: index of its block in its backend's plan */
} handle_slot;

typedef struct layer_state {
    plxi_layer *layer;
    plx_workload *workload;   /* compute layers (constants: the network's) */
    handle_slot **outputs;    /* output_count entries */
    handle_slot **inputs;     /* input_count entries: the producers' slots */
} layer_state;

/* The plan of one backend whose intermediate tensors the host manages. */
typedef struct backend_plan {
    plxi_backend_record *backend;
    const char *strategy_name;
    const plx_memory_strategy *strategy; /* NULL: the built-in by name */
    plxi_memory_plan plan;
    const plx_allocator *allocator; /* NULL: the host's aligned malloc */
    plx_memory_report report;
} backend_plan;

struct plx_working_memory {
    plx_loaded_network *network;
    layer_state *layers;      /* in execution order */
    handle_slot *slots;       /* every non-constant output slot */
    void **buffers;           /* per plan, per buffer */
    bool memory_ready;
    atomic_bool in_use;       /* refuses a second concurrent execution */
    /* Per execution: which binding or pre-import filled each input/output. */
    const plx_tensor_binding **input_args;
    const plx_tensor_binding **output_args;
    const struct preimport **input_pre;
    const struct preimport **output_pre;
    /* The memory each input/output uses in the current execution. */
    void **in_data;
    void **out_data;
    plx_memory_source *in_source;
    plx_memory_source *out_source;
};

typedef struct io_binding {
    int32_t binding_id;
    plx_tensor_info info;
    size_t bytes;
    size_t layer;             /* input: the input layer; output: the producer */
    uint32_t slot;            /* the producer's output slot */
    bool zero_copy;           /* input imported / output exported */
    const char *layer_name;
} io_binding;

/* A caller tensor imported once for many executions. */
typedef struct preimport {
    size_t io;                /* index in inputs or outputs */
    void *data;
    plx_memory_source source;
    bool cleared;
} preimport;

typedef struct factory_entry {
    plxi_backend_record *backend;
    plx_factory *factory;
} factory_entry;

struct plx_loaded_network {
    plx_runtime *runtime;
    uint32_t id;
    plx_optimized_network *optimized;
    plx_load_options options;
    pthread_mutex_t lock;     /* the network's own execution, pre-imports, lists */

    factory_entry *factories;
    size_t factory_count;
    size_t layer_count;
    size_t slot_count;
    size_t *slot_base;        /* per layer: index of its first output slot */
    handle_slot *constants;   /* slot_count entries; only constant slots used */
    plx_workload **constant_workloads; /* per layer */
    backend_plan *plans;
    size_t plan_count;
    plx_memory_block **blocks; /* per plan: its blocks (built at load) */
    size_t *block_counts;
    uint32_t *slot_block;     /* per slot: its block in its backend's plan */

    io_binding *inputs;
    size_t input_count;
    io_binding *outputs;
    size_t output_count;
    /* The network's input and output layers, counted before any working
     * memory exists (working memories size their arrays with them). */
    size_t input_layers;
    size_t output_layers;

    preimport *pre_inputs;
    size_t pre_input_count;
    preimport *pre_outputs;
    size_t pre_output_count;

    plx_working_memory *own;  /* for plx_loaded_network_execute */
    plxi_ptr_vec working_memories; /* created by the application */
    plx_debug_fn debug_fn;
    void *debug_user_data;
    _Atomic uint64_t staged_copies; /* plx_loaded_network_staged_copy_count */
    atomic_bool staged_warned;      /* the first staged copy logged a warning */
};

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while loading the network");
}

PLX_API void plx_load_options_init(plx_load_options *options) {
    if (options) {
        memset(options, 0, sizeof *options);
        options->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_load_options,
                                                               externally_managed_memory);
    }
}

PLX_API void plx_execute_args_init(plx_execute_args *args) {
    if (args) {
        memset(args, 0, sizeof *args);
        args->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_execute_args,
                                                            preimported_output_count);
    }
}

static plx_factory *factory_of(const plx_loaded_network *n, const plxi_backend_record *b) {
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].backend == b) {
            return n->factories[i].factory;
        }
    }
    return NULL;
}

static const plxi_layer *layer_at(const plx_loaded_network *n, size_t i) {
    return n->optimized->layers.items[i];
}

/* Annotates a backend's failure with where it happened; consumes `s`. */
static plx_status at_layer(plx_status s, const plxi_layer *l, const char *what) {
    plx_status r = plxi_status_create(plx_status_get_code(s), "layer '%s' (%s) on %s: %s: %s",
                                      l->name, plx_op_name(l->op), l->backend->info.id, what,
                                      plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

static backend_plan *plan_of(const plx_loaded_network *n, const plxi_backend_record *b,
                             size_t *out_index) {
    for (size_t i = 0; i < n->plan_count; i++) {
        if (n->plans[i].backend == b) {
            if (out_index) {
                *out_index = i;
            }
            return &n->plans[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Working memory: handles, workloads, memory                                 */
/* ------------------------------------------------------------------------ */

/* Releases a working memory's tensor memory (not its handles). */
static void release_memory(plx_working_memory *wm) {
    plx_loaded_network *n = wm->network;
    for (size_t i = 0; i < n->slot_count; i++) {
        handle_slot *h = &wm->slots[i];
        if (!h->handle) {
            continue;
        }
        if (h->allocated) {
            h->backend->functions.release_tensor_handle(h->handle);
            h->allocated = false;
        }
        if (h->planned && h->bound) {
            h->backend->functions.unimport_tensor_handle(h->handle);
            h->bound = false;
        }
        free(h->stage);
        h->stage = NULL;
    }
    size_t base = 0;
    for (size_t p = 0; p < n->plan_count; p++) {
        backend_plan *bp = &n->plans[p];
        for (size_t b = 0; b < bp->plan.buffer_count; b++) {
            void *mem = wm->buffers ? wm->buffers[base + b] : NULL;
            if (mem) {
                if (bp->allocator) {
                    bp->allocator->free(bp->allocator->user_data, mem);
                } else {
                    free(mem);
                }
                wm->buffers[base + b] = NULL;
            }
        }
        base += bp->plan.buffer_count;
    }
    wm->memory_ready = false;
}

static void destroy_working_memory(plx_working_memory *wm) {
    if (!wm) {
        return;
    }
    plx_loaded_network *n = wm->network;
    for (size_t i = 0; wm->layers && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        if (ls->workload && ls->layer->op != PLX_OP_CONSTANT) {
            ls->layer->backend->functions.destroy_workload(ls->workload);
        }
    }
    if (wm->slots) {
        release_memory(wm);
        /* Sub-tensors go before their parents. */
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < n->slot_count; i++) {
                handle_slot *h = &wm->slots[i];
                if (h->handle && (h->parent != NULL) == (pass == 0)) {
                    h->backend->functions.destroy_tensor_handle(h->handle);
                }
            }
        }
    }
    for (size_t i = 0; wm->layers && i < n->layer_count; i++) {
        free(wm->layers[i].outputs);
        free(wm->layers[i].inputs);
    }
    free(wm->layers);
    free(wm->slots);
    free(wm->buffers);
    free(wm->input_args);
    free(wm->output_args);
    free(wm->input_pre);
    free(wm->output_pre);
    free(wm->in_data);
    free(wm->out_data);
    free(wm->in_source);
    free(wm->out_source);
    free(wm);
}

/* How many inputs read output `slot` of layer `index`, whether one of them
 * is a network output, and the step of the last reader. */
static size_t consumers(const plx_optimized_network *o, size_t index, uint32_t slot,
                        bool *out_feeds_output, size_t *out_last) {
    size_t n = 0;
    *out_feeds_output = false;
    if (out_last) {
        *out_last = index;
    }
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *c = o->layers.items[i];
        for (uint32_t k = 0; k < c->input_count; k++) {
            if (c->inputs[k].layer == index && c->inputs[k].slot == slot) {
                n++;
                *out_feeds_output = *out_feeds_output || c->op == PLX_OP_OUTPUT;
                if (out_last && i > *out_last) {
                    *out_last = i;
                }
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

/* Memory the network owns for the execution: the backend's or the plan's. */
static bool owned(const handle_slot *h) {
    return h->managed || h->planned;
}

/* A slot that may become a sub-tensor: an ordinary working tensor. */
static bool can_be_sub(const handle_slot *h, const plxi_backend_record *b) {
    return h->backend == b && owned(h) && !h->constant && !h->parent && !h->is_parent &&
           !h->exported;
}

static void make_subs(handle_slot *parent, handle_slot **parts, uint32_t count) {
    size_t offset = 0;
    for (uint32_t k = 0; k < count; k++) {
        parts[k]->parent = parent;
        parts[k]->offset = offset;
        parts[k]->managed = false;
        parts[k]->planned = false;
        offset += parts[k]->bytes;
    }
    parent->is_parent = true;
}

/* Concats whose inputs are contiguous parts of the output, and splits whose
 * outputs are contiguous parts of the input, run in place on backends with
 * sub-tensors: the parts become sub-tensors of the whole, and the layer
 * needs no workload (backend.h, create_sub_tensor_handle). All or nothing
 * per layer; a tensor is a part of at most one whole. Deterministic, so
 * every working memory of a network gets the same layout. */
static void plan_in_place(plx_working_memory *wm, bool *in_place) {
    plx_loaded_network *n = wm->network;
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        const plxi_layer *l = ls->layer;
        const plxi_backend_record *b = l->backend;
        in_place[i] = false;
        if (!b->functions.create_sub_tensor_handle ||
            (l->op != PLX_OP_CONCAT && l->op != PLX_OP_SPLIT)) {
            continue;
        }
        int32_t axis = ((const plx_axis_desc *)l->desc)->axis;
        bool ok = true;
        if (l->op == PLX_OP_CONCAT) {
            handle_slot *whole = ls->outputs[0];
            ok = outer_count(whole->info, normalized_axis(axis, whole->info->rank)) == 1 &&
                 owned(whole) && !whole->parent && !whole->is_parent;
            for (uint32_t k = 0; ok && k < l->input_count; k++) {
                const plxi_source *src = &l->inputs[k];
                const plxi_layer *p = o->layers.items[src->layer];
                bool feeds_output;
                ok = can_be_sub(ls->inputs[k], b) && p->op != PLX_OP_INPUT &&
                     consumers(o, src->layer, src->slot, &feeds_output, NULL) == 1;
            }
            if (ok) {
                make_subs(whole, ls->inputs, l->input_count);
            }
        } else {
            handle_slot *whole = ls->inputs[0];
            ok = outer_count(whole->info, normalized_axis(axis, whole->info->rank)) == 1 &&
                 whole->backend == b && owned(whole) && !whole->constant && !whole->parent;
            for (uint32_t k = 0; ok && k < l->output_count; k++) {
                ok = can_be_sub(ls->outputs[k], b);
            }
            if (ok) {
                make_subs(whole, ls->outputs, l->output_count);
            }
        }
        in_place[i] = ok;
    }
}

/* Fills a working memory's layer states and slots (its layers and slots
 * arrays already allocated): who manages each tensor's memory
 * (docs/loaded-network.md, Loading 3), the producers' slots each layer reads,
 * and the in-place concats and splits. Calls no backend. */
static plx_status lay_out(plx_working_memory *wm, bool *in_place) {
    plx_loaded_network *n = wm->network;
    plx_optimized_network *o = n->optimized;
    plx_status s = NULL;
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        plxi_layer *l = o->layers.items[i];
        layer_state *ls = &wm->layers[i];
        ls->layer = l;
        ls->outputs = calloc(l->output_count ? l->output_count : 1, sizeof *ls->outputs);
        ls->inputs = calloc(l->input_count ? l->input_count : 1, sizeof *ls->inputs);
        if (!ls->outputs || !ls->inputs) {
            s = oom();
            break;
        }
        for (uint32_t k = 0; k < l->output_count; k++) {
            size_t idx = n->slot_base[i] + k;
            if (l->op == PLX_OP_CONSTANT) {
                ls->outputs[k] = &n->constants[idx];
                continue;
            }
            handle_slot *h = &wm->slots[idx];
            bool feeds_output;
            size_t uses = consumers(o, i, k, &feeds_output, NULL);
            h->backend = l->backend;
            h->info = &l->outputs[k];
            h->import_sources = plx_backend_info_import_sources(&l->backend->info);
            h->import_alignment = plx_backend_info_import_alignment(&l->backend->info);
            if (h->import_alignment < plx_dtype_size(l->outputs[k].dtype)) {
                h->import_alignment = plx_dtype_size(l->outputs[k].dtype);
            }
            plx_tensor_info_byte_size(&l->outputs[k], &h->bytes);
            /* docs/loaded-network.md, Loading 3: who manages the memory. */
            bool imported_input = l->op == PLX_OP_INPUT && o->import_enabled &&
                                  imports_malloc(l->backend);
            bool exported_output = o->export_enabled && feeds_output && uses == 1 &&
                                   l->output_count == 1 && l->op != PLX_OP_INPUT &&
                                   imports_malloc(l->backend);
            h->caller_memory = imported_input || exported_output;
            bool unmanaged = h->caller_memory || l->op == PLX_OP_MEM_IMPORT;
            h->planned = !unmanaged && plan_of(n, l->backend, NULL) != NULL;
            h->managed = !unmanaged && !h->planned;
            h->block = n->slot_block ? n->slot_block[idx] : 0;
            ls->outputs[k] = h;
        }
    }
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        for (uint32_t k = 0; k < ls->layer->input_count; k++) {
            const plxi_source *src = &ls->layer->inputs[k];
            ls->inputs[k] = wm->layers[src->layer].outputs[src->slot];
            ls->inputs[k]->exported |= ls->layer->op == PLX_OP_MEM_IMPORT;
        }
    }
    if (!s) {
        plan_in_place(wm, in_place);
    }
    return s;
}

/* Creates one working memory: slots, handles, workloads. The memory itself
 * comes at its first execution. */
static plx_status create_working_memory(plx_loaded_network *n, plx_working_memory **out) {
    plx_optimized_network *o = n->optimized;
    plx_working_memory *wm = calloc(1, sizeof *wm);
    if (!wm) {
        return oom();
    }
    wm->network = n;
    atomic_init(&wm->in_use, false);
    size_t buffers = 0;
    for (size_t p = 0; p < n->plan_count; p++) {
        buffers += n->plans[p].plan.buffer_count;
    }
    wm->layers = calloc(n->layer_count ? n->layer_count : 1, sizeof *wm->layers);
    wm->slots = calloc(n->slot_count ? n->slot_count : 1, sizeof *wm->slots);
    wm->buffers = calloc(buffers ? buffers : 1, sizeof *wm->buffers);
    size_t ins = n->input_layers + 1, outs = n->output_layers + 1;
    wm->input_args = calloc(ins, sizeof *wm->input_args);
    wm->output_args = calloc(outs, sizeof *wm->output_args);
    wm->input_pre = calloc(ins, sizeof *wm->input_pre);
    wm->output_pre = calloc(outs, sizeof *wm->output_pre);
    wm->in_data = calloc(ins, sizeof *wm->in_data);
    wm->out_data = calloc(outs, sizeof *wm->out_data);
    wm->in_source = calloc(ins, sizeof *wm->in_source);
    wm->out_source = calloc(outs, sizeof *wm->out_source);
    bool *in_place = calloc(n->layer_count ? n->layer_count : 1, sizeof *in_place);
    plx_status s = NULL;
    if (!wm->layers || !wm->slots || !wm->buffers || !wm->input_args || !wm->output_args ||
        !wm->input_pre || !wm->output_pre || !wm->in_data || !wm->out_data ||
        !wm->in_source || !wm->out_source || !in_place) {
        s = oom();
    }
    if (!s) {
        s = lay_out(wm, in_place);
    }
    /* Whole tensors first, then the sub-tensors that need their parents. */
    for (int pass = 0; !s && pass < 2; pass++) {
        for (size_t i = 0; !s && i < n->layer_count; i++) {
            layer_state *ls = &wm->layers[i];
            const plxi_layer *l = ls->layer;
            if (l->op == PLX_OP_CONSTANT) {
                continue;
            }
            for (uint32_t k = 0; !s && k < l->output_count; k++) {
                handle_slot *h = ls->outputs[k];
                if ((h->parent != NULL) != (pass == 1)) {
                    continue;
                }
                plx_factory *f = factory_of(n, l->backend);
                if (h->parent) {
                    s = l->backend->functions.create_sub_tensor_handle(f, h->parent->handle,
                                                                       h->info, h->offset,
                                                                       &h->handle);
                } else {
                    /* Zero-copy handles take what the caller gives, in any
                     * source the backend imports; the others host memory. */
                    uint32_t sources =
                        h->managed ? 0u
                        : h->caller_memory
                            ? plx_backend_info_import_sources(&l->backend->info)
                            : (uint32_t)PLX_MEMORY_SOURCE_MALLOC;
                    plx_tensor_handle_params hp = {
                        (uint32_t)sizeof hp, h->managed, sources,
                        h->exported ? (uint32_t)PLX_MEMORY_SOURCE_MALLOC : 0u};
                    s = l->backend->functions.create_tensor_handle(f, h->info, &hp, &h->handle);
                }
                if (s) {
                    s = at_layer(s, l, "cannot create a tensor handle");
                } else if (!h->handle) {
                    s = plxi_status_create(PLX_INTERNAL,
                                           "layer '%s' on %s: the backend created no tensor "
                                           "handle", l->name, l->backend->info.id);
                }
            }
        }
    }
    /* Workloads: compute layers, except in-place concats and splits. */
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        plxi_layer *l = ls->layer;
        if (l->op == PLX_OP_CONSTANT) {
            ls->workload = n->constant_workloads[i];
            continue;
        }
        if (l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT || l->op == PLX_OP_MEM_COPY ||
            l->op == PLX_OP_MEM_IMPORT || in_place[i]) {
            continue;
        }
        plx_tensor_info infos[PLX_MAX_RANK * 2];
        const void *constants[PLX_MAX_RANK * 2];
        plx_tensor_handle *in_h[PLX_MAX_RANK * 2];
        plx_tensor_info *infos_p = infos;
        const void **constants_p = constants;
        plx_tensor_handle **in_p = in_h;
        plx_tensor_handle **out_p = malloc((l->output_count + 1) * sizeof *out_p);
        if (l->input_count > PLX_MAX_RANK * 2) {
            infos_p = malloc(l->input_count * sizeof *infos_p);
            constants_p = malloc(l->input_count * sizeof *constants_p);
            in_p = malloc(l->input_count * sizeof *in_p);
        }
        if (!infos_p || !constants_p || !in_p || !out_p) {
            s = oom();
        } else {
            for (uint32_t k = 0; k < l->input_count; k++) {
                in_p[k] = ls->inputs[k]->handle;
            }
            for (uint32_t k = 0; k < l->output_count; k++) {
                out_p[k] = ls->outputs[k]->handle;
            }
            plx_layer_view view;
            plxi_layer_view(l, (plxi_layer *const *)o->layers.items, infos_p, constants_p, &view);
            s = l->backend->functions.create_workload(factory_of(n, l->backend), &view, in_p,
                                                      out_p, &ls->workload);
            if (s) {
                s = at_layer(s, l, "cannot create the workload");
            } else if (!ls->workload) {
                s = plxi_status_create(PLX_INTERNAL,
                                       "layer '%s' (%s) on %s: no workload was created", l->name,
                                       plx_op_name(l->op), l->backend->info.id);
            }
        }
        if (infos_p != infos) {
            free(infos_p);
            free((void *)constants_p);
            free(in_p);
        }
        free(out_p);
    }
    free(in_place);
    if (s) {
        destroy_working_memory(wm);
        return s;
    }
    *out = wm;
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

static void *allocate_buffer(const backend_plan *bp, size_t size, size_t alignment) {
    if (alignment < sizeof(void *)) {
        alignment = sizeof(void *);
    }
    if (bp->allocator) {
        return bp->allocator->allocate(bp->allocator->user_data, size ? size : 1, alignment);
    }
    void *p = NULL;
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

/* docs/loaded-network.md, Loading 7 and 8: working memory at the first
 * execution: managed handles from their backends, planned ones from the
 * plan's buffers (imported at their offsets). */
static plx_status ensure_memory(plx_working_memory *wm) {
    if (wm->memory_ready) {
        return NULL;
    }
    plx_loaded_network *n = wm->network;
    plx_status s = NULL;
    size_t base = 0;
    for (size_t p = 0; !s && p < n->plan_count; p++) {
        backend_plan *bp = &n->plans[p];
        for (size_t b = 0; b < bp->plan.buffer_count; b++) {
            size_t alignment = bp->plan.buffer_alignments[b];
            void *mem = allocate_buffer(bp, bp->plan.buffer_sizes[b], alignment);
            if (mem && alignment && (uintptr_t)mem % alignment) {
                s = plxi_status_create(PLX_INTERNAL,
                                       "backend '%s': the application's allocator returned "
                                       "memory at %p, not aligned to the %zu bytes asked",
                                       bp->backend->info.id, mem, alignment);
                bp->allocator->free(bp->allocator->user_data, mem);
                break;
            }
            wm->buffers[base + b] = mem;
            if (!wm->buffers[base + b]) {
                s = plxi_status_create(PLX_OUT_OF_MEMORY,
                                       "backend '%s': cannot allocate a planned buffer of %zu "
                                       "bytes%s", bp->backend->info.id, bp->plan.buffer_sizes[b],
                                       bp->allocator ? " from the application's allocator" : "");
                break;
            }
        }
        base += bp->plan.buffer_count;
    }
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        if (ls->layer->op == PLX_OP_CONSTANT) {
            continue;
        }
        for (uint32_t k = 0; !s && k < ls->layer->output_count; k++) {
            handle_slot *h = ls->outputs[k];
            if (h->planned) {
                size_t pi = 0, first = 0;
                backend_plan *bp = plan_of(n, h->backend, &pi);
                for (size_t q = 0; q < pi; q++) {
                    first += n->plans[q].plan.buffer_count;
                }
                const plx_memory_placement *pl = &bp->plan.placements[h->block];
                char *mem = (char *)wm->buffers[first + pl->buffer] + pl->offset;
                plx_status e = h->backend->functions.import_tensor_handle(
                    h->handle, mem, h->bytes, PLX_MEMORY_SOURCE_MALLOC);
                if (e) {
                    s = at_layer(e, ls->layer, "cannot import planned memory");
                } else {
                    h->bound = true;
                }
            } else {
                s = allocate(h, ls->layer);
            }
        }
    }
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        if (ls->workload && ls->layer->op != PLX_OP_CONSTANT &&
            ls->layer->backend->functions.configure_workload) {
            plx_status c = ls->layer->backend->functions.configure_workload(ls->workload);
            if (c) {
                s = at_layer(c, ls->layer, "configure failed");
            }
        }
    }
    if (s) {
        release_memory(wm);
        return s;
    }
    wm->memory_ready = true;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */
/* ------------------------------------------------------------------------ */

static plx_status create_factories(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (factory_of(n, l->backend) || l->op == PLX_OP_OUTPUT) {
            continue;
        }
        plx_factory_params params = {
            (uint32_t)sizeof params,
            o->import_enabled ? plx_backend_info_import_sources(&l->backend->info) : 0,
            o->export_enabled ? plx_backend_info_export_sources(&l->backend->info) : 0, n->id};
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
    return NULL;
}

/* docs/loaded-network.md, Loading 2: what the options require of the backends. */
static plx_status check_capabilities(plx_loaded_network *n) {
    for (size_t f = 0; f < n->factory_count; f++) {
        const plxi_backend_record *b = n->factories[f].backend;
        if (n->options.async_execution) {
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_ASYNC_EXECUTION)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report async_execution, which "
                                          "asynchronous execution needs", b->info.id);
            }
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report "
                                          "externally_managed_memory, which asynchronous "
                                          "execution needs", b->info.id);
            }
        }
        if (n->options.externally_managed_memory || n->options.async_execution) {
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report "
                                          "externally_managed_memory", b->info.id);
            }
            if (!imports_malloc(b)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' reports externally_managed_memory but "
                                          "cannot import malloc memory, which the host's plan "
                                          "gives it", b->info.id);
            }
        }
    }
    return NULL;
}

/* Constants: a handle and a workload each, allocated and run at load
 * (docs/loaded-network.md, Loading 5), shared by every working memory. */
static plx_status load_constants(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        plxi_layer *l = o->layers.items[i];
        if (l->op != PLX_OP_CONSTANT) {
            continue;
        }
        handle_slot *h = &n->constants[n->slot_base[i]];
        h->backend = l->backend;
        h->info = &l->outputs[0];
        h->managed = true;
        h->constant = true;
        plx_tensor_info_byte_size(&l->outputs[0], &h->bytes);
        plx_factory *f = factory_of(n, l->backend);
        plx_tensor_handle_params hp = {(uint32_t)sizeof hp, true, 0, 0};
        plx_status s = l->backend->functions.create_tensor_handle(f, h->info, &hp, &h->handle);
        if (s) {
            return at_layer(s, l, "cannot create a tensor handle");
        }
        if (!h->handle) {
            return plxi_status_create(PLX_INTERNAL, "layer '%s' on %s: no tensor handle",
                                      l->name, l->backend->info.id);
        }
        plx_layer_view view;
        plx_tensor_info none_i[1];
        const void *none_c[1];
        plxi_layer_view(l, (plxi_layer *const *)o->layers.items, none_i, none_c, &view);
        s = l->backend->functions.create_workload(f, &view, NULL, &h->handle,
                                                  &n->constant_workloads[i]);
        if (s) {
            return at_layer(s, l, "cannot create the workload");
        }
        if (!n->constant_workloads[i]) {
            return plxi_status_create(PLX_INTERNAL, "layer '%s' on %s: no workload was created",
                                      l->name, l->backend->info.id);
        }
        s = allocate(h, l);
        if (!s && l->backend->functions.configure_workload) {
            plx_status c = l->backend->functions.configure_workload(n->constant_workloads[i]);
            s = c ? at_layer(c, l, "configure failed") : NULL;
        }
        if (!s) {
            plx_status e = l->backend->functions.execute_workload(n->constant_workloads[i]);
            s = e ? at_layer(e, l, "constant workload failed") : NULL;
        }
        if (s) {
            return s;
        }
    }
    return NULL;
}

/* The memory plan of every backend whose intermediate tensors the host
 * manages (docs/loaded-network.md, Loading 7): one step per layer in execution
 * order; each planned tensor is a block from its producer's step to its
 * last reader's; a whole that has in-place parts lives from the first
 * part's producer to the last reader of any part. Imported inputs,
 * exported outputs, import layers' outputs and constants are not planned.
 * Planned on a scratch working memory's layout, which every working memory
 * shares. */
static plx_status plan_memory(plx_loaded_network *n) {
    if (!n->options.externally_managed_memory && !n->options.async_execution) {
        return NULL;
    }
    plx_runtime *rt = n->runtime;
    n->plans = calloc(n->factory_count + 1, sizeof *n->plans);
    n->blocks = calloc(n->factory_count + 1, sizeof *n->blocks);
    n->block_counts = calloc(n->factory_count + 1, sizeof *n->block_counts);
    if (!n->plans || !n->blocks || !n->block_counts) {
        return oom();
    }
    for (size_t f = 0; f < n->factory_count; f++) {
        backend_plan *bp = &n->plans[n->plan_count++];
        bp->backend = n->factories[f].backend;
        bp->strategy_name = "greedy";
        bp->strategy = NULL;
        /* The application's choice, else the backend's, else greedy. */
        bool chosen = false;
        for (size_t k = 0; k < rt->strategy_count; k++) {
            if (strcmp(rt->strategies[k].backend_id, bp->backend->info.id) == 0) {
                bp->strategy_name = rt->strategies[k].name;
                bp->strategy = rt->strategies[k].strategy;
                chosen = true;
            }
        }
        if (!chosen && bp->backend->functions.get_memory_strategy) {
            const plx_memory_strategy *own =
                bp->backend->functions.get_memory_strategy(bp->backend->instance);
            if (own) {
                bp->strategy = own;
                bp->strategy_name = own->name ? own->name : "(unnamed)";
            }
        }
        for (size_t k = 0; k < rt->allocator_count; k++) {
            if (strcmp(rt->allocators[k].backend_id, bp->backend->info.id) == 0) {
                bp->allocator = &rt->allocators[k].allocator;
            }
        }
    }
    /* The layout (which slots are planned, which are parts of wholes) is
     * the one every working memory gets; built without handles. */
    plx_status s = NULL;
    plx_working_memory *layout = calloc(1, sizeof *layout);
    bool *in_place = calloc(n->layer_count ? n->layer_count : 1, sizeof *in_place);
    if (layout) {
        layout->network = n;
        layout->layers = calloc(n->layer_count ? n->layer_count : 1, sizeof *layout->layers);
        layout->slots = calloc(n->slot_count ? n->slot_count : 1, sizeof *layout->slots);
    }
    if (!layout || !in_place || !layout->layers || !layout->slots) {
        s = oom();
    } else {
        s = lay_out(layout, in_place);
    }
    free(in_place);
    /* Blocks per backend, with each whole's lifetime covering its parts. */
    size_t *first = calloc(n->slot_count + 1, sizeof *first);
    size_t *last = calloc(n->slot_count + 1, sizeof *last);
    if (!s && (!first || !last)) {
        s = oom();
    }
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        for (uint32_t k = 0; k < l->output_count; k++) {
            size_t idx = n->slot_base[i] + k, end;
            bool feeds_output;
            consumers(o, i, k, &feeds_output, &end);
            /* Inputs are copied in before the first layer runs, outputs
             * copied out after the last. */
            first[idx] = l->op == PLX_OP_INPUT ? 0 : i;
            last[idx] = feeds_output ? n->layer_count - 1 : end;
        }
    }
    /* A tensor an import layer reads in place is read, through that layer's
     * handle, until the import layer's last reader. */
    for (size_t i = n->layer_count; !s && i-- > 0;) {
        const plxi_layer *l = o->layers.items[i];
        if (l->op == PLX_OP_MEM_IMPORT) {
            size_t src = n->slot_base[l->inputs[0].layer] + l->inputs[0].slot;
            size_t own = n->slot_base[i];
            last[src] = last[own] > last[src] ? last[own] : last[src];
        }
    }
    for (size_t idx = 0; !s && idx < n->slot_count; idx++) {
        const handle_slot *h = &layout->slots[idx];
        if (h->parent) {
            size_t root = (size_t)(h->parent - layout->slots);
            first[root] = first[idx] < first[root] ? first[idx] : first[root];
            last[root] = last[idx] > last[root] ? last[idx] : last[root];
        }
    }
    for (size_t p = 0; !s && p < n->plan_count; p++) {
        backend_plan *bp = &n->plans[p];
        n->blocks[p] = calloc(n->slot_count + 1, sizeof *n->blocks[p]);
        if (!n->blocks[p]) {
            s = oom();
            break;
        }
        for (size_t idx = 0; idx < n->slot_count; idx++) {
            handle_slot *h = &layout->slots[idx];
            if (h->backend != bp->backend || !h->planned || h->parent) {
                continue;
            }
            /* Both powers of two: the larger is a multiple of the other. */
            size_t align = h->import_alignment > PLAN_ALIGNMENT ? h->import_alignment
                                                                : PLAN_ALIGNMENT;
            size_t size = (h->bytes + align - 1) / align * align;
            h->block = (uint32_t)n->block_counts[p];
            n->blocks[p][n->block_counts[p]++] = (plx_memory_block){
                (uint32_t)first[idx], (uint32_t)last[idx], size, align};
        }
        const plx_memory_strategy *strategy = bp->strategy;
        if (!strategy) {
            strategy = plxi_memory_strategy_builtin(bp->strategy_name);
        }
        if (!strategy) {
            s = plxi_status_create(PLX_NOT_FOUND,
                                   "backend '%s': no memory strategy named '%s' (built in: none, "
                                   "greedy)", bp->backend->info.id, bp->strategy_name);
            break;
        }
        s = plxi_memory_plan_create(strategy, n->blocks[p], n->block_counts[p], &bp->plan);
        if (s) {
            plx_status r = plxi_status_create(plx_status_get_code(s), "backend '%s': %s",
                                              bp->backend->info.id, plx_status_get_message(s));
            plx_status_free(s);
            s = r;
            break;
        }
        bp->report = (plx_memory_report){bp->backend->info.id, bp->strategy_name,
                                         bp->plan.total_bytes, bp->plan.lower_bound,
                                         bp->plan.buffer_count, n->block_counts[p]};
    }
    free(first);
    free(last);
    /* Slot -> block numbers are what working memories need of the layout. */
    if (!s) {
        n->slot_block = calloc(n->slot_count + 1, sizeof *n->slot_block);
        if (!n->slot_block) {
            s = oom();
        }
        for (size_t idx = 0; !s && idx < n->slot_count; idx++) {
            n->slot_block[idx] = layout->slots[idx].block;
        }
    }
    destroy_working_memory(layout); /* holds no handle or workload */
    return s;
}

static plx_status collect_io(plx_loaded_network *n, const plx_working_memory *wm) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (l->op == PLX_OP_INPUT) {
            io_binding *b = &n->inputs[n->input_count++];
            const handle_slot *h = wm->layers[i].outputs[0];
            b->binding_id = l->binding_id;
            b->info = l->outputs[0];
            b->layer = i;
            b->slot = 0;
            b->bytes = h->bytes;
            b->zero_copy = h->caller_memory;
            b->layer_name = l->name;
        } else if (l->op == PLX_OP_OUTPUT) {
            io_binding *b = &n->outputs[n->output_count++];
            const plxi_layer *producer = o->layers.items[l->inputs[0].layer];
            const handle_slot *h = wm->layers[i].inputs[0];
            b->binding_id = l->binding_id;
            b->info = producer->outputs[l->inputs[0].slot];
            b->layer = l->inputs[0].layer;
            b->slot = l->inputs[0].slot;
            b->bytes = h->bytes;
            b->zero_copy = h->caller_memory && producer->op != PLX_OP_INPUT;
            b->layer_name = l->name;
        }
    }
    return NULL;
}

static void unload(plx_loaded_network *n) {
    for (size_t i = 0; i < n->working_memories.count; i++) {
        destroy_working_memory(n->working_memories.items[i]);
    }
    plxi_ptr_vec_release(&n->working_memories);
    destroy_working_memory(n->own);
    for (size_t i = 0; n->constant_workloads && i < n->layer_count; i++) {
        if (n->constant_workloads[i]) {
            layer_at(n, i)->backend->functions.destroy_workload(n->constant_workloads[i]);
        }
    }
    for (size_t i = 0; n->constants && i < n->slot_count; i++) {
        handle_slot *h = &n->constants[i];
        if (h->handle) {
            if (h->allocated) {
                h->backend->functions.release_tensor_handle(h->handle);
            }
            h->backend->functions.destroy_tensor_handle(h->handle);
        }
    }
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].factory) {
            n->factories[i].backend->functions.destroy_factory(n->factories[i].factory);
        }
    }
    for (size_t p = 0; p < n->plan_count; p++) {
        plxi_memory_plan_release(&n->plans[p].plan);
        free(n->blocks ? n->blocks[p] : NULL);
    }
    pthread_mutex_destroy(&n->lock);
    free(n->plans);
    free(n->blocks);
    free(n->block_counts);
    free(n->slot_block);
    free(n->factories);
    free(n->slot_base);
    free(n->constants);
    free(n->constant_workloads);
    free(n->inputs);
    free(n->outputs);
    free(n->pre_inputs);
    free(n->pre_outputs);
    plx_optimized_network_destroy(&n->optimized);
    free(n);
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
    /* Waits for the network's own execution; the application guarantees no
     * execution with its working memories is in flight. */
    pthread_mutex_lock(&n->lock);
    pthread_mutex_unlock(&n->lock);
    unload(n);
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

/* Runs one load phase, recording it as a "load" event when profiling. */
static plx_status load_phase(plx_loaded_network *n, bool profile, const char *name,
                             plx_status (*phase)(plx_loaded_network *)) {
    uint64_t start = profile ? plxi_now_ns() : 0;
    plx_status s = phase(n);
    if (profile) {
        plxi_profile_record(n->runtime, name, "load", "", "", n->id, start, plxi_now_ns());
    }
    return s;
}

static plx_status create_own_working_memory(plx_loaded_network *n) {
    return create_working_memory(n, &n->own);
}

PLX_API plx_status plx_runtime_load_network(plx_runtime *runtime,
                                            plx_optimized_network **optimized,
                                            const plx_load_options *options,
                                            plx_loaded_network **out_loaded) {
    if (out_loaded) {
        *out_loaded = NULL;
    }
    if (!optimized || !*optimized) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "optimized network is NULL");
    }
    plx_optimized_network *o = *optimized;
    *optimized = NULL;
    plx_load_options defaults;
    plx_load_options_init(&defaults);
    if (!options) {
        options = &defaults;
    }
    if (!runtime || !out_loaded || o->runtime != runtime ||
        options->struct_size < defaults.struct_size) {
        plx_optimized_network_destroy(&o);
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  !runtime       ? "runtime is NULL"
                                  : !out_loaded  ? "out_loaded is NULL"
                                  : o->runtime != runtime
                                      ? "the network was optimised for another runtime"
                                      : "load options: struct_size too small (initialise with "
                                        "plx_load_options_init)");
    }
    bool profile = plxi_profiling(runtime);
    uint64_t load_start = profile ? plxi_now_ns() : 0;
    plx_loaded_network *n = calloc(1, sizeof *n);
    if (!n) {
        plx_optimized_network_destroy(&o);
        return oom();
    }
    atomic_init(&n->staged_copies, 0);
    atomic_init(&n->staged_warned, false);
    n->runtime = runtime;
    n->optimized = o;
    n->options = *options;
    pthread_mutex_init(&n->lock, NULL);
    size_t count = o->layers.count, ins = 0, outs = 0;
    n->layer_count = count;
    n->slot_base = calloc(count + 1, sizeof *n->slot_base);
    for (size_t i = 0; n->slot_base && i < count; i++) {
        const plxi_layer *l = o->layers.items[i];
        n->slot_base[i] = n->slot_count;
        n->slot_count += l->output_count;
        ins += l->op == PLX_OP_INPUT;
        outs += l->op == PLX_OP_OUTPUT;
    }
    n->input_layers = ins;
    n->output_layers = outs;
    n->constants = calloc(n->slot_count + 1, sizeof *n->constants);
    n->constant_workloads = calloc(count + 1, sizeof *n->constant_workloads);
    n->factories = calloc(count + 1, sizeof *n->factories);
    n->inputs = calloc(ins + 1, sizeof *n->inputs);
    n->outputs = calloc(outs + 1, sizeof *n->outputs);
    pthread_mutex_lock(&runtime->loaded_lock);
    n->id = ++runtime->last_network_id;
    bool listed = plxi_ptr_vec_push(&runtime->loaded, n);
    pthread_mutex_unlock(&runtime->loaded_lock);
    plx_status s = NULL;
    if (!listed || !n->slot_base || !n->constants || !n->constant_workloads || !n->factories ||
        !n->inputs || !n->outputs) {
        s = oom();
    }
    if (!s) {
        s = load_phase(n, profile, "create factories", create_factories);
    }
    if (!s) {
        s = load_phase(n, profile, "check capabilities", check_capabilities);
    }
    if (!s) {
        s = load_phase(n, profile, "constants", load_constants);
    }
    if (!s) {
        s = load_phase(n, profile, "memory plan", plan_memory);
    }
    if (!s) {
        s = load_phase(n, profile, "working memory", create_own_working_memory);
    }
    /* docs/loaded-network.md, Loading 6: every workload of the load exists. */
    for (size_t i = 0; !s && i < n->factory_count; i++) {
        const plxi_backend_record *b = n->factories[i].backend;
        if (b->functions.factory_workloads_created) {
            plx_status e = b->functions.factory_workloads_created(n->factories[i].factory);
            if (e) {
                s = plxi_status_create(plx_status_get_code(e),
                                       "backend '%s': workloads_created hook failed: %s",
                                       b->info.id, plx_status_get_message(e));
                plx_status_free(e);
            }
        }
    }
    if (!s) {
        s = collect_io(n, n->own);
    }
    if (profile) {
        plxi_profile_record(runtime, "load", "load", "", "", n->id, load_start, plxi_now_ns());
    }
    if (s) {
        plx_loaded_network_unload(&n);
        return s;
    }
    atomic_fetch_add_explicit(&runtime->networks_loaded, 1, memory_order_relaxed);
    plxi_log(&runtime->logger, PLX_LOG_INFO, "plexus", "loaded network %u: %s", n->id,
             o->summary);
    *out_loaded = n;
    return NULL;
}

PLX_API uint64_t plx_loaded_network_staged_copy_count(const plx_loaded_network *loaded) {
    return loaded ? atomic_load_explicit(&((plx_loaded_network *)loaded)->staged_copies,
                                         memory_order_relaxed)
                  : 0;
}

PLX_API uint32_t plx_loaded_network_id(const plx_loaded_network *loaded) {
    return loaded ? loaded->id : 0;
}

/* ------------------------------------------------------------------------ */
/* Executing                                                                  */
/* ------------------------------------------------------------------------ */

static size_t find_io(const io_binding *list, size_t count, int32_t binding) {
    size_t k = 0;
    while (k < count && list[k].binding_id != binding) {
        k++;
    }
    return k;
}

/* docs/loaded-network.md, Executing 1 and Executing asynchronously 2: tensors
 * plus pre-imported ids cover every input (output) exactly once, every id
 * known, sizes right. */
static plx_status match(const char *kind, const io_binding *expected, size_t count,
                        const plx_tensor_binding *given, size_t given_count, const uint32_t *ids,
                        size_t id_count, const preimport *pre, size_t pre_count,
                        const plx_tensor_binding **args, const preimport **pres) {
    if (given_count + id_count != count) {
        if (id_count) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "the network has %zu %ss, the call gives %zu tensors and "
                                      "%zu pre-imported %ss", count, kind, given_count, id_count,
                                      kind);
        }
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "the network has %zu %ss, the call gives %zu", count, kind,
                                  given_count);
    }
    if ((given_count && !given) || (id_count && !ids)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s array is NULL",
                                  given_count && !given ? kind : "pre-imported id");
    }
    for (size_t i = 0; i < count; i++) {
        args[i] = NULL;
        pres[i] = NULL;
    }
    for (size_t g = 0; g < given_count; g++) {
        const plx_tensor_binding *b = &given[g];
        size_t k = find_io(expected, count, b->binding_id);
        if (k == count) {
            return plxi_status_create(PLX_NOT_FOUND, "%s binding id %d is not one of the "
                                                     "network's %ss", kind, b->binding_id, kind);
        }
        if (args[k]) {
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
        if (b->source != 0 && b->source != PLX_MEMORY_SOURCE_MALLOC &&
            b->source != PLX_MEMORY_SOURCE_DMA_BUF) {
            return plxi_status_create(PLX_UNSUPPORTED,
                                      "%s binding id %d: memory source %d is not one the host "
                                      "reads or writes (malloc, dma_buf)", kind, b->binding_id,
                                      (int)b->source);
        }
        args[k] = b;
    }
    for (size_t i = 0; i < id_count; i++) {
        uint32_t id = ids[i];
        /* An id equal to the number issued is unknown (Arm NN's off-by-one). */
        if (id >= pre_count) {
            return plxi_status_create(PLX_NOT_FOUND,
                                      "pre-imported %s id %u is unknown (%zu issued)", kind, id,
                                      pre_count);
        }
        if (pre[id].cleared) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "pre-imported %s id %u was cleared", kind, id);
        }
        size_t k = pre[id].io;
        if (pres[k]) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "pre-imported %s id %u is given more than once, or with "
                                      "another id for binding id %d", kind, id,
                                      expected[k].binding_id);
        }
        if (args[k]) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s binding id %d is given both as a tensor and as "
                                      "pre-imported id %u", kind, expected[k].binding_id, id);
        }
        pres[k] = &pre[id];
    }
    return NULL;
}

static plx_status map_slot(handle_slot *h, void **out, const char *what, int32_t binding) {
    plx_status s = h->backend->functions.map_tensor_handle(h->handle, out);
    if (!s) {
        return NULL;
    }
    plx_status r = plxi_status_create(plx_status_get_code(s),
                                      "%s binding id %d: cannot map the tensor on %s: %s", what,
                                      binding, h->backend->info.id, plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

static plx_memory_source source_of(plx_memory_source given) {
    return given ? given : PLX_MEMORY_SOURCE_MALLOC;
}

/* The caller's memory as host bytes: a host pointer as is, a dma-buf mapped
 * (MAP_SHARED, so writes reach it). Undo with caller_unview. */
static plx_status caller_view(void *data, plx_memory_source source, size_t bytes, bool write,
                              int32_t binding, const char *kind, void **out) {
    if (source != PLX_MEMORY_SOURCE_DMA_BUF) {
        *out = data;
        return NULL;
    }
    if (bytes == 0) {
        *out = NULL;
        return NULL;
    }
    void *p = mmap(NULL, bytes, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED,
                   *(const int *)data, 0);
    if (p == MAP_FAILED) {
        return plxi_status_create(PLX_IO_ERROR, "%s binding id %d: cannot map dma-buf fd %d: %s",
                                  kind, binding, *(const int *)data, strerror(errno));
    }
    *out = p;
    return NULL;
}

static void caller_unview(void *view, plx_memory_source source, size_t bytes) {
    if (source == PLX_MEMORY_SOURCE_DMA_BUF && view) {
        munmap(view, bytes);
    }
}

/* Does `data` miss the alignment h's backend imports malloc memory at? */
static bool misaligned(const handle_slot *h, const void *data) {
    return h->import_alignment > 1 && (uintptr_t)data % h->import_alignment != 0;
}

/* Memory for h's import: `data`, or, when that is malloc memory that
 * misses the backend's import alignment, h's staging buffer (holding a
 * copy of `data` when copy_in). Counts, logs and traces the staging; `what`
 * names the tensor. */
static plx_status stage_if_misaligned(plx_loaded_network *n, handle_slot *h, void *data,
                                      size_t bytes, bool copy_in, const char *what,
                                      void **out) {
    *out = data;
    if (!misaligned(h, data)) {
        return NULL;
    }
    uint64_t start = plxi_profiling(n->runtime) ? plxi_now_ns() : 0;
    if (!h->stage) {
        size_t align = h->import_alignment < sizeof(void *) ? sizeof(void *)
                                                            : h->import_alignment;
        if (posix_memalign(&h->stage, align, bytes ? bytes : 1) != 0) {
            h->stage = NULL;
            return plxi_status_create(PLX_OUT_OF_MEMORY,
                                      "%s: cannot allocate a %zu-byte staging buffer for "
                                      "memory not aligned to %s's %zu bytes", what, bytes,
                                      h->backend->info.id, h->import_alignment);
        }
    }
    if (copy_in) {
        memcpy(h->stage, data, bytes);
    }
    h->staged = true;
    *out = h->stage;
    atomic_fetch_add_explicit(&n->staged_copies, 1, memory_order_relaxed);
    bool first = !atomic_exchange(&n->staged_warned, true);
    plxi_log(&n->runtime->logger, first ? PLX_LOG_WARN : PLX_LOG_INFO, "plexus",
             "network %u: %s: memory at %p is not aligned to the %zu bytes %s imports; "
             "copied through a staging buffer (align it for zero copy)", n->id, what, data,
             h->import_alignment, h->backend->info.id);
    if (start) {
        char name[96];
        snprintf(name, sizeof name, "%s (staged)", what);
        plxi_profile_record(n->runtime, name, "copy", "", h->backend->info.id, n->id, start,
                            plxi_now_ns());
    }
    return NULL;
}

static plx_status import_caller(plx_loaded_network *n, handle_slot *h, void *data,
                                plx_memory_source source, int32_t binding, const char *kind) {
    if (!(h->import_sources & source)) {
        return plxi_status_create(PLX_UNSUPPORTED,
                                  "%s binding id %d is zero copy, but backend '%s' does not "
                                  "import %s memory", kind, binding, h->backend->info.id,
                                  source == PLX_MEMORY_SOURCE_DMA_BUF ? "dma_buf" : "this");
    }
    if (source == PLX_MEMORY_SOURCE_MALLOC) {
        char what[48];
        snprintf(what, sizeof what, "%s binding id %d", kind, (int)binding);
        plx_status e = stage_if_misaligned(n, h, data, h->bytes, strcmp(kind, "input") == 0,
                                           what, &data);
        if (e) {
            return e;
        }
    }
    plx_status s = h->backend->functions.import_tensor_handle(h->handle, data, h->bytes,
                                                              source);
    if (!s) {
        h->bound = true;
        return NULL;
    }
    plx_status r = plxi_status_create(plx_status_get_code(s),
                                      "%s binding id %d: import into %s failed: %s", kind, binding,
                                      h->backend->info.id, plx_status_get_message(s));
    plx_status_free(s);
    return r;
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

/* Binds an import layer's handle to its producer's memory, for this
 * execution: the producer may be a zero-copy input, whose memory is the
 * caller's and changes every time. */
static plx_status bind_import(plx_loaded_network *n, layer_state *ls) {
    handle_slot *src = ls->inputs[0], *dst = ls->outputs[0];
    void *data = NULL;
    plx_status s = src->backend->functions.map_tensor_handle(src->handle, &data);
    if (s) {
        return at_layer(s, ls->layer, "cannot map the producer's tensor for import");
    }
    /* A backend exporting malloc memory keeps this pointer valid while the
     * memory is allocated (backend.h, map_tensor_handle). */
    src->backend->functions.unmap_tensor_handle(src->handle);
    char what[160];
    snprintf(what, sizeof what, "layer '%.120s'", ls->layer->name);
    s = stage_if_misaligned(n, dst, data, src->bytes, true, what, &data);
    if (s) {
        return s;
    }
    s = dst->backend->functions.import_tensor_handle(dst->handle, data, src->bytes,
                                                     PLX_MEMORY_SOURCE_MALLOC);
    if (s) {
        return at_layer(s, ls->layer, "import of the producer's memory failed");
    }
    dst->bound = true;
    return NULL;
}

static void debug_outputs(plx_loaded_network *n, layer_state *ls, plx_debug_fn fn, void *user) {
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
        fn(user, ls->layer->name, ls->layer->op, ls->layer->backend->info.id, k,
           &ls->layer->outputs[k], data);
        h->backend->functions.unmap_tensor_handle(h->handle);
    }
}

/* Records the event of one layer of an execution (a failing one too). */
static void layer_event(plx_loaded_network *n, const plxi_layer *l, const char *category,
                        uint64_t start) {
    plxi_profile_record(n->runtime, l->name, category, plx_op_name(l->op), l->backend->info.id,
                        n->id, start, plxi_now_ns());
}

static plx_status run_layers(plx_working_memory *wm, plx_debug_fn fn, void *user) {
    plx_loaded_network *n = wm->network;
    /* Read once per execution: with profiling off this is all it costs. */
    bool profile = plxi_profiling(n->runtime);
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        const plxi_layer *l = ls->layer;
        plx_status s = NULL;
        if (l->op == PLX_OP_CONSTANT || l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT) {
            continue;
        }
        uint64_t start = profile ? plxi_now_ns() : 0;
        if (ls->workload) {
            s = l->backend->functions.execute_workload(ls->workload);
            if (profile) {
                layer_event(n, l, "execute", start);
            }
            if (s) {
                return at_layer(s, l, "execution failed");
            }
        } else if (l->op == PLX_OP_MEM_COPY) {
            s = copy_between(ls->inputs[0], ls->outputs[0], l);
            if (profile) {
                layer_event(n, l, "copy", start);
            }
            if (s) {
                return s;
            }
        } else if (l->op == PLX_OP_MEM_IMPORT) {
            s = bind_import(n, ls);
            if (profile) {
                layer_event(n, l, "import", start);
            }
            if (s) {
                return s;
            }
            continue;
        }
        /* Workloads, copies and in-place concats/splits show their outputs. */
        if (fn) {
            debug_outputs(n, ls, fn, user);
        }
    }
    return NULL;
}

/* Ends every import this execution made: callers' memory and import
 * layers' bindings (planned memory stays bound). */
static void unbind_all(plx_working_memory *wm) {
    for (size_t i = 0; i < wm->network->slot_count; i++) {
        handle_slot *h = &wm->slots[i];
        if (h->bound && !h->planned) {
            h->backend->functions.unimport_tensor_handle(h->handle);
            h->bound = false;
        }
        h->staged = false;
    }
}

/* Validates an execution's arguments and resolves the memory of every
 * input and output into wm. Reads the pre-imports: the caller holds the
 * network's lock. */
static plx_status prepare(plx_working_memory *wm, const plx_execute_args *a) {
    plx_loaded_network *n = wm->network;
    plx_status s = match("input", n->inputs, n->input_count, a->inputs, a->input_count,
                         a->preimported_inputs, a->preimported_input_count, n->pre_inputs,
                         n->pre_input_count, wm->input_args, wm->input_pre);
    if (!s) {
        s = match("output", n->outputs, n->output_count, a->outputs, a->output_count,
                  a->preimported_outputs, a->preimported_output_count, n->pre_outputs,
                  n->pre_output_count, wm->output_args, wm->output_pre);
    }
    for (size_t i = 0; !s && i < n->input_count; i++) {
        wm->in_data[i] = wm->input_pre[i] ? wm->input_pre[i]->data : wm->input_args[i]->data;
        wm->in_source[i] = source_of(wm->input_pre[i] ? wm->input_pre[i]->source
                                                      : wm->input_args[i]->source);
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        wm->out_data[i] = wm->output_pre[i] ? wm->output_pre[i]->data : wm->output_args[i]->data;
        wm->out_source[i] = source_of(wm->output_pre[i] ? wm->output_pre[i]->source
                                                        : wm->output_args[i]->source);
    }
    return s;
}

/* One prepared execution on `wm`, which the caller holds exclusively. */
static plx_status execute_on(plx_working_memory *wm, plx_debug_fn fn, void *user) {
    plx_loaded_network *n = wm->network;
    plx_status s = ensure_memory(wm);
    for (size_t i = 0; !s && i < n->input_count; i++) {
        const io_binding *b = &n->inputs[i];
        handle_slot *h = wm->layers[b->layer].outputs[0];
        if (b->zero_copy) {
            s = import_caller(n, h, wm->in_data[i], wm->in_source[i], b->binding_id, "input");
            continue;
        }
        void *mapped = NULL, *view = NULL;
        s = caller_view(wm->in_data[i], wm->in_source[i], h->bytes, false, b->binding_id, "input",
                        &view);
        if (!s) {
            s = map_slot(h, &mapped, "input", b->binding_id);
            if (!s) {
                memcpy(mapped, view, h->bytes);
                h->backend->functions.unmap_tensor_handle(h->handle);
            }
            caller_unview(view, wm->in_source[i], h->bytes);
        }
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        const io_binding *b = &n->outputs[i];
        if (b->zero_copy) {
            handle_slot *h = wm->layers[b->layer].outputs[b->slot];
            s = import_caller(n, h, wm->out_data[i], wm->out_source[i], b->binding_id,
                              "output");
        }
    }
    if (!s) {
        s = run_layers(wm, fn, user);
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        const io_binding *b = &n->outputs[i];
        handle_slot *staged = wm->layers[b->layer].outputs[b->slot];
        if (b->zero_copy && staged->staged) {
            /* Ending the import makes everything written visible in the
             * stage (backend.h, unimport_tensor_handle). */
            staged->backend->functions.unimport_tensor_handle(staged->handle);
            staged->bound = false;
            memcpy(wm->out_data[i], staged->stage, staged->bytes);
        }
        if (!b->zero_copy) {
            handle_slot *h = wm->layers[b->layer].outputs[b->slot];
            void *mapped = NULL, *view = NULL;
            s = caller_view(wm->out_data[i], wm->out_source[i], h->bytes, true, b->binding_id,
                            "output", &view);
            if (!s) {
                s = map_slot(h, &mapped, "output", b->binding_id);
                if (!s) {
                    memcpy(view, mapped, h->bytes);
                    h->backend->functions.unmap_tensor_handle(h->handle);
                }
                caller_unview(view, wm->out_source[i], h->bytes);
            }
        }
    }
    unbind_all(wm);
    return s;
}

static bool valid_args(const plx_execute_args *a) {
    return a && a->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_execute_args, preimported_output_count);
}

static plx_status run(plx_loaded_network *loaded, plx_working_memory *working_memory,
                      const plx_execute_args *args) {
    if (!valid_args(args)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "execute args are NULL or too small (initialise with "
                                  "plx_execute_args_init)");
    }
    plx_loaded_network *n = loaded;
    if (!working_memory) {
        pthread_mutex_lock(&n->lock);
        plx_status s = prepare(n->own, args);
        if (!s) {
            s = execute_on(n->own, n->debug_fn, n->debug_user_data);
        }
        pthread_mutex_unlock(&n->lock);
        return s;
    }
    if (working_memory->network != n) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "the working memory belongs to another network");
    }
    /* docs/loaded-network.md, Executing asynchronously 1: one execution per
     * working memory at a time; a second one is refused, never let in. */
    bool expected = false;
    if (!atomic_compare_exchange_strong(&working_memory->in_use, &expected, true)) {
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "the working memory is in use by another execution");
    }
    /* Pre-imports and the debug callback change only under the lock: the
     * arguments are resolved and the callback read under it, then the
     * execution runs beside others. */
    pthread_mutex_lock(&n->lock);
    plx_status s = prepare(working_memory, args);
    plx_debug_fn fn = n->debug_fn;
    void *user = n->debug_user_data;
    pthread_mutex_unlock(&n->lock);
    if (!s) {
        s = execute_on(working_memory, fn, user);
    }
    atomic_store(&working_memory->in_use, false);
    return s;
}

PLX_API plx_status plx_loaded_network_run(plx_loaded_network *loaded,
                                          plx_working_memory *working_memory,
                                          const plx_execute_args *args) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    plx_status s = run(loaded, working_memory, args);
    atomic_fetch_add_explicit(s ? &loaded->runtime->inferences_failed
                                : &loaded->runtime->inferences_run,
                              1, memory_order_relaxed);
    return s;
}

PLX_API plx_status plx_loaded_network_execute(plx_loaded_network *loaded,
                                              const plx_tensor_binding *inputs,
                                              size_t input_count,
                                              const plx_tensor_binding *outputs,
                                              size_t output_count) {
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = inputs;
    a.input_count = input_count;
    a.outputs = outputs;
    a.output_count = output_count;
    return plx_loaded_network_run(loaded, NULL, &a);
}

/* ------------------------------------------------------------------------ */
/* Working memories                                                           */
/* ------------------------------------------------------------------------ */

PLX_API plx_status plx_loaded_network_create_working_memory(plx_loaded_network *loaded,
                                                            plx_working_memory **out) {
    if (out) {
        *out = NULL;
    }
    if (!loaded || !out) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  loaded ? "out" : "loaded network");
    }
    if (!loaded->options.async_execution) {
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "network %u was not loaded for asynchronous execution "
                                  "(plx_load_options.async_execution)", loaded->id);
    }
    pthread_mutex_lock(&loaded->lock);
    plx_working_memory *wm = NULL;
    plx_status s = create_working_memory(loaded, &wm);
    if (!s && !plxi_ptr_vec_push(&loaded->working_memories, wm)) {
        destroy_working_memory(wm);
        s = oom();
    }
    pthread_mutex_unlock(&loaded->lock);
    if (!s) {
        *out = wm;
    }
    return s;
}

PLX_API void plx_working_memory_destroy(plx_working_memory **working_memory) {
    if (!working_memory || !*working_memory) {
        return;
    }
    plx_working_memory *wm = *working_memory;
    *working_memory = NULL;
    plx_loaded_network *n = wm->network;
    bool expected = false;
    if (!atomic_compare_exchange_strong(&wm->in_use, &expected, true)) {
        /* Freeing it under a running execution would crash that thread:
         * keep it (the network frees it at unload) and say so. */
        plxi_log(&n->runtime->logger, PLX_LOG_ERROR, "plexus",
                 "network %u: a working memory was destroyed while an execution used it; it "
                 "is kept until the network is unloaded", n->id);
        return;
    }
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < n->working_memories.count; i++) {
        if (n->working_memories.items[i] == wm) {
            n->working_memories.items[i] = n->working_memories.items[--n->working_memories.count];
            break;
        }
    }
    pthread_mutex_unlock(&n->lock);
    destroy_working_memory(wm);
}

PLX_API plx_status plx_working_memory_release(plx_working_memory *working_memory) {
    if (!working_memory) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "working memory is NULL");
    }
    bool expected = false;
    if (!atomic_compare_exchange_strong(&working_memory->in_use, &expected, true)) {
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "the working memory is in use by an execution");
    }
    release_memory(working_memory);
    atomic_store(&working_memory->in_use, false);
    return NULL;
}

PLX_API void plx_loaded_network_release_working_memory(plx_loaded_network *loaded) {
    if (!loaded) {
        return;
    }
    pthread_mutex_lock(&loaded->lock);
    release_memory(loaded->own);
    pthread_mutex_unlock(&loaded->lock);
}

/* ------------------------------------------------------------------------ */
/* Pre-imported inputs and outputs                                            */
/* ------------------------------------------------------------------------ */

/* Imports `count` caller tensors once (docs/loaded-network.md, "Pre-imported
 * inputs and outputs"). Each import is tried on the network's own handle
 * and ended at once: the backend checks source, size and alignment now,
 * and every later execution binds the memory again (for host-memory
 * backends a pointer swap). All or nothing. */
static plx_status preimport_set(plx_loaded_network *n, bool inputs,
                                const plx_tensor_binding *given,
                            size_t count, uint32_t *out_ids) {
    const char *kind = inputs ? "input" : "output";
    const io_binding *list = inputs ? n->inputs : n->outputs;
    size_t list_count = inputs ? n->input_count : n->output_count;
    preimport **pre = inputs ? &n->pre_inputs : &n->pre_outputs;
    size_t *pre_count = inputs ? &n->pre_input_count : &n->pre_output_count;
    if (count && (!given || !out_ids)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL", given ? "out_ids" : kind);
    }
    if (!(inputs ? n->optimized->import_enabled : n->optimized->export_enabled)) {
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "pre-importing %ss needs %s enabled when optimising", kind,
                                  inputs ? "import" : "export");
    }
    preimport *grown = realloc(*pre, (*pre_count + count + 1) * sizeof **pre);
    if (!grown) {
        return oom();
    }
    *pre = grown;
    size_t start = *pre_count;
    plx_status s = NULL;
    for (size_t i = 0; !s && i < count; i++) {
        const plx_tensor_binding *b = &given[i];
        size_t k = find_io(list, list_count, b->binding_id);
        if (k == list_count) {
            s = plxi_status_create(PLX_NOT_FOUND, "%s binding id %d is not one of the network's "
                                                  "%ss", kind, b->binding_id, kind);
            break;
        }
        const io_binding *io = &list[k];
        handle_slot *h = n->own->layers[io->layer].outputs[io->slot];
        if (!plx_backend_info_has_capability(&h->backend->info, PLX_CAP_PREIMPORT_IO_TENSORS)) {
            s = plxi_status_create(PLX_UNSUPPORTED,
                                   "%s binding id %d: backend '%s' does not report "
                                   "preimport_io_tensors", kind, b->binding_id,
                                   h->backend->info.id);
        } else if (!io->zero_copy) {
            s = plxi_status_create(PLX_UNSUPPORTED,
                                   "%s binding id %d is not zero copy in this network (its "
                                   "backend cannot import it, or the layer feeding it has "
                                   "other consumers)", kind, b->binding_id);
        } else if (!b->data || b->size != io->bytes) {
            s = plxi_status_create(PLX_INVALID_ARGUMENT,
                                   "%s binding id %d: %s", kind, b->binding_id,
                                   b->data ? "size differs from the tensor's" : "data is NULL");
        } else if (source_of(b->source) == PLX_MEMORY_SOURCE_MALLOC &&
                   misaligned(h, b->data)) {
            s = plxi_status_create(PLX_INVALID_ARGUMENT,
                                   "%s binding id %d: memory at %p is not aligned to the %zu "
                                   "bytes %s imports (a pre-import is never a copy)", kind,
                                   b->binding_id, b->data, h->import_alignment,
                                   h->backend->info.id);
        } else if (!(s = import_caller(n, h, b->data, source_of(b->source), b->binding_id,
                                       kind))) {
            h->backend->functions.unimport_tensor_handle(h->handle);
            h->bound = false;
            (*pre)[*pre_count] = (preimport){k, b->data, source_of(b->source), false};
            (*pre_count)++;
        }
    }
    if (s) {
        *pre_count = start; /* rolls back this call's imports */
        return s;
    }
    for (size_t i = 0; i < count; i++) {
        out_ids[i] = (uint32_t)(start + i); /* written only on success */
    }
    return NULL;
}

PLX_API plx_status plx_loaded_network_import_inputs(plx_loaded_network *loaded,
                                                    const plx_tensor_binding *inputs,
                                                    size_t count, uint32_t *out_ids) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    pthread_mutex_lock(&loaded->lock);
    plx_status s = preimport_set(loaded, true, inputs, count, out_ids);
    pthread_mutex_unlock(&loaded->lock);
    return s;
}

PLX_API plx_status plx_loaded_network_import_outputs(plx_loaded_network *loaded,
                                                     const plx_tensor_binding *outputs,
                                                     size_t count, uint32_t *out_ids) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    pthread_mutex_lock(&loaded->lock);
    plx_status s = preimport_set(loaded, false, outputs, count, out_ids);
    pthread_mutex_unlock(&loaded->lock);
    return s;
}

static plx_status clear(plx_loaded_network *n, bool inputs, const uint32_t *ids, size_t count) {
    const char *kind = inputs ? "input" : "output";
    preimport *pre = inputs ? n->pre_inputs : n->pre_outputs;
    size_t pre_count = inputs ? n->pre_input_count : n->pre_output_count;
    if (count && !ids) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "ids is NULL");
    }
    /* Check everything first, so that an error clears nothing. */
    for (size_t i = 0; i < count; i++) {
        if (ids[i] >= pre_count) {
            return plxi_status_create(PLX_NOT_FOUND,
                                      "pre-imported %s id %u is unknown (%zu issued)", kind,
                                      ids[i], pre_count);
        }
        if (pre[ids[i]].cleared) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "pre-imported %s id %u was already cleared", kind, ids[i]);
        }
        for (size_t j = 0; j < i; j++) {
            if (ids[j] == ids[i]) {
                return plxi_status_create(PLX_INVALID_ARGUMENT,
                                          "pre-imported %s id %u is given more than once", kind,
                                          ids[i]);
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        pre[ids[i]].cleared = true;
    }
    return NULL;
}

PLX_API plx_status plx_loaded_network_clear_imported_inputs(plx_loaded_network *loaded,
                                                            const uint32_t *ids, size_t count) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    pthread_mutex_lock(&loaded->lock);
    plx_status s = clear(loaded, true, ids, count);
    pthread_mutex_unlock(&loaded->lock);
    return s;
}

PLX_API plx_status plx_loaded_network_clear_imported_outputs(plx_loaded_network *loaded,
                                                             const uint32_t *ids, size_t count) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    pthread_mutex_lock(&loaded->lock);
    plx_status s = clear(loaded, false, ids, count);
    pthread_mutex_unlock(&loaded->lock);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                    */
/* ------------------------------------------------------------------------ */

static plx_status find_info(const io_binding *list, size_t count, int32_t binding,
                            const char *kind, plx_tensor_info *out) {
    size_t k = find_io(list, count, binding);
    if (k == count) {
        return plxi_status_create(PLX_NOT_FOUND,
                                  "%s binding id %d is not one of the network's %ss", kind,
                                  binding, kind);
    }
    *out = list[k].info;
    return NULL;
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

PLX_API size_t plx_loaded_network_memory_report_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->plan_count : 0;
}

PLX_API const plx_memory_report *plx_loaded_network_memory_report(
    const plx_loaded_network *loaded, size_t index) {
    return loaded && index < loaded->plan_count ? &loaded->plans[index].report : NULL;
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
