/* Working memories (docs/loaded-network.md, "Executing asynchronously" 1):
 * the handles, workloads and planned buffers of one execution, laid out at
 * creation and allocated at the first execution; the API that creates,
 * releases and destroys them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "loaded_network.h"

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
            plx_external_memory *dev = wm->device_buffers ? &wm->device_buffers[base + b] : NULL;
            if (dev && dev->kind) {
                bp->backend->functions.free_planned_buffer(
                    plxi_ln_factory_of(n, bp->backend), dev);
                memset(dev, 0, sizeof *dev);
            }
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

void plxi_working_memory_free(plx_working_memory *wm) {
    if (!wm) {
        return;
    }
    plx_loaded_network *n = wm->network;
    /* Queues go before the workloads; every execution waited for what it
     * enqueued, so none has work pending. */
    for (size_t q = 0; q < wm->queue_count; q++) {
        if (wm->queues[q].queue) {
            wm->queues[q].backend->functions.destroy_queue(wm->queues[q].queue);
        }
    }
    free(wm->queues);
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
    free(wm->device_buffers);
    free(wm->input_args);
    free(wm->output_args);
    free(wm->input_pre);
    free(wm->output_pre);
    free(wm->in_mem);
    free(wm->out_mem);
    free(wm);
}

/* How many inputs read output `slot` of layer `index`, whether one of them
 * is a network output, and the step of the last reader. */
size_t plxi_ln_consumers(const plx_optimized_network *o, size_t index, uint32_t slot,
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

bool plxi_ln_backend_allocates(const plx_loaded_network *n, const plxi_backend_record *b) {
    if (!plx_backend_info_has_capability(&b->info, PLX_CAP_ALLOCATES_PLANNED_MEMORY)) {
        return false;
    }
    const plx_runtime *rt = n->runtime;
    for (size_t k = 0; k < rt->allocator_count; k++) {
        if (strcmp(rt->allocators[k].backend_id, b->info.id) == 0) {
            return false;
        }
    }
    return true;
}

bool plxi_ln_imports_malloc(const plxi_backend_record *b) {
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

/* Whether a concat requantizes some input (a concat on quantized tensors,
 * plexus/ops.h: every input and the output 8-bit with per-tensor
 * parameters, some input's not the output's): it computes, so it cannot
 * run in place. */
static bool concat_requantizes(const layer_state *ls, uint32_t count) {
    const plx_tensor_info *y = ls->outputs[0]->info;
    bool any = false;
    for (uint32_t k = 0; k <= count; k++) {
        const plx_tensor_info *t = k < count ? ls->inputs[k]->info : y;
        if ((t->dtype != PLX_DTYPE_INT8 && t->dtype != PLX_DTYPE_UINT8) ||
            t->quant.kind != PLX_QUANT_PER_TENSOR) {
            return false;
        }
        any = any || t->dtype != y->dtype || t->quant.scale != y->quant.scale ||
              t->quant.zero_point != y->quant.zero_point;
    }
    return any;
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
                 owned(whole) && !whole->parent && !whole->is_parent &&
                 !concat_requantizes(ls, l->input_count);
            for (uint32_t k = 0; ok && k < l->input_count; k++) {
                const plxi_source *src = &l->inputs[k];
                const plxi_layer *p = o->layers.items[src->layer];
                bool feeds_output;
                ok = can_be_sub(ls->inputs[k], b) && p->op != PLX_OP_INPUT &&
                     plxi_ln_consumers(o, src->layer, src->slot, &feeds_output, NULL) == 1;
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
plx_status plxi_working_memory_lay_out(plx_working_memory *wm, bool *in_place) {
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
            s = plxi_ln_oom();
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
            size_t uses = plxi_ln_consumers(o, i, k, &feeds_output, NULL);
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
                                  plxi_ln_imports_malloc(l->backend);
            bool exported_output = o->export_enabled && feeds_output && uses == 1 &&
                                   l->output_count == 1 && l->op != PLX_OP_INPUT &&
                                   plxi_ln_imports_malloc(l->backend);
            h->caller_memory = imported_input || exported_output;
            bool unmanaged = h->caller_memory || l->op == PLX_OP_MEM_IMPORT;
            h->planned = !unmanaged && plxi_ln_plan_of(n, l->backend, NULL) != NULL;
            h->managed = !unmanaged && !h->planned;
            h->block = n->slot_block ? n->slot_block[idx] : 0;
            ls->outputs[k] = h;
        }
    }
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        for (uint32_t k = 0; k < ls->layer->input_count; k++) {
            const plxi_source *src = &ls->layer->inputs[k];
            handle_slot *h = wm->layers[src->layer].outputs[src->slot];
            ls->inputs[k] = h;
            if (ls->layer->op != PLX_OP_MEM_IMPORT) {
                continue;
            }
            h->exported = true;
            h->export_sources |= ls->layer->lend_source;
            /* a tensor lent as a dma-buf lives in memory its backend
             * allocates as one, not in a host-planned buffer. (The
             * optimiser lends only computed tensors that way, never caller
             * memory or constants.) */
            if ((ls->layer->lend_source & PLX_MEMORY_SOURCE_DMA_BUF) && h->planned) {
                h->planned = false;
                h->managed = true;
            }
        }
    }
    if (!s) {
        plan_in_place(wm, in_place);
    }
    return s;
}

/* Creates one working memory: slots, handles, workloads. The memory itself
 * comes at its first execution. */
/* a queue per queued backend that runs a workload of `wm`, made after
 * the workloads; the layers enqueued there point at it. */
static plx_status create_queues(plx_working_memory *wm) {
    plx_loaded_network *n = wm->network;
    wm->queues = calloc(n->factory_count ? n->factory_count : 1, sizeof *wm->queues);
    if (!wm->queues) {
        return plxi_ln_oom();
    }
    for (size_t i = 0; i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        plxi_backend_record *b = ls->layer->backend;
        if (!ls->workload || ls->layer->op == PLX_OP_CONSTANT ||
            !plx_backend_info_has_capability(&b->info, PLX_CAP_QUEUED_EXECUTION)) {
            continue;
        }
        size_t q = 0;
        while (q < wm->queue_count && wm->queues[q].backend != b) {
            q++;
        }
        if (q == wm->queue_count) {
            wm_queue *wq = &wm->queues[wm->queue_count];
            plx_queue_params qp = {(uint32_t)sizeof qp, n->id};
            plx_status s = b->functions.create_queue(plxi_ln_factory_of(n, b), &qp, &wq->queue);
            if (!s && !wq->queue) {
                s = plxi_status_create(PLX_INTERNAL, "create_queue returned success but no queue");
            }
            if (s) {
                plx_status r = plxi_status_create(plx_status_get_code(s),
                                                  "backend '%s' cannot create a queue: %s",
                                                  b->info.id, plx_status_get_message(s));
                plx_status_free(s);
                return r;
            }
            wq->backend = b;
            const plx_capability *c = plx_backend_info_capability(&b->info, PLX_CAP_FENCE_DOMAIN);
            wq->domain = c && c->type == PLX_VALUE_STRING ? c->string_value : NULL;
            wm->queue_count++;
        }
        ls->queue = &wm->queues[q];
    }
    return NULL;
}

plx_status plxi_working_memory_create(plx_loaded_network *n, plx_working_memory **out) {
    plx_optimized_network *o = n->optimized;
    plx_working_memory *wm = calloc(1, sizeof *wm);
    if (!wm) {
        return plxi_ln_oom();
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
    wm->device_buffers = calloc(buffers ? buffers : 1, sizeof *wm->device_buffers);
    size_t ins = n->input_layers + 1, outs = n->output_layers + 1;
    wm->input_args = calloc(ins, sizeof *wm->input_args);
    wm->output_args = calloc(outs, sizeof *wm->output_args);
    wm->input_pre = calloc(ins, sizeof *wm->input_pre);
    wm->output_pre = calloc(outs, sizeof *wm->output_pre);
    wm->in_mem = calloc(ins, sizeof *wm->in_mem);
    wm->out_mem = calloc(outs, sizeof *wm->out_mem);
    bool *in_place = calloc(n->layer_count ? n->layer_count : 1, sizeof *in_place);
    plx_status s = NULL;
    if (!wm->layers || !wm->slots || !wm->buffers || !wm->device_buffers || !wm->input_args ||
        !wm->output_args || !wm->input_pre || !wm->output_pre || !wm->in_mem ||
        !wm->out_mem || !in_place) {
        s = plxi_ln_oom();
    }
    if (!s) {
        s = plxi_working_memory_lay_out(wm, in_place);
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
                plx_factory *f = plxi_ln_factory_of(n, l->backend);
                if (h->parent) {
                    s = l->backend->functions.create_sub_tensor_handle(f, h->parent->handle,
                                                                       h->info, h->offset,
                                                                       &h->handle);
                } else {
                    /* Zero-copy handles take what the caller gives, in any
                     * source the backend imports; import layers' handles
                     * the source they lend through; the others host
                     * memory. */
                    uint32_t sources =
                        h->managed ? 0u
                        : h->caller_memory
                            ? plx_backend_info_import_sources(&l->backend->info)
                        : l->op == PLX_OP_MEM_IMPORT ? l->lend_source
                                                     : (uint32_t)PLX_MEMORY_SOURCE_MALLOC;
                    plx_tensor_handle_params hp = {
                        (uint32_t)sizeof hp, h->managed, sources,
                        h->exported ? h->export_sources : 0u};
                    s = l->backend->functions.create_tensor_handle(f, h->info, &hp, &h->handle);
                }
                if (s) {
                    s = plxi_ln_at_layer(s, l, "cannot create a tensor handle");
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
            s = plxi_ln_oom();
        } else {
            for (uint32_t k = 0; k < l->input_count; k++) {
                in_p[k] = ls->inputs[k]->handle;
            }
            for (uint32_t k = 0; k < l->output_count; k++) {
                out_p[k] = ls->outputs[k]->handle;
            }
            plx_layer_view view;
            plxi_layer_view(l, (plxi_layer *const *)o->layers.items, infos_p, constants_p, &view);
            s = l->backend->functions.create_workload(plxi_ln_factory_of(n, l->backend), &view, in_p,
                                                      out_p, &ls->workload);
            if (s) {
                s = plxi_ln_at_layer(s, l, "cannot create the workload");
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
    if (!s) {
        s = create_queues(wm);
    }
    if (s) {
        plxi_working_memory_free(wm);
        return s;
    }
    *out = wm;
    return NULL;
}

plx_status plxi_ln_allocate(handle_slot *h, const plxi_layer *l) {
    if (!h->managed || h->allocated) {
        return NULL;
    }
    plx_status s = h->backend->functions.allocate_tensor_handle(h->handle);
    if (s) {
        return plxi_ln_at_layer(s, l, "cannot allocate tensor memory");
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

/* buffer `b` of plan `bp` from its backend, checked; on failure
 * *out stays empty. */
static plx_status allocate_device_buffer(plx_working_memory *wm, const backend_plan *bp,
                                         size_t b, plx_external_memory *out) {
    plx_loaded_network *n = wm->network;
    plx_factory *f = plxi_ln_factory_of(n, bp->backend);
    plx_planned_buffer_params pp;
    memset(&pp, 0, sizeof pp);
    pp.struct_size = (uint32_t)sizeof pp;
    pp.size = bp->plan.buffer_sizes[b] ? bp->plan.buffer_sizes[b] : 1;
    pp.alignment = bp->plan.buffer_alignments[b] ? bp->plan.buffer_alignments[b] : 1;
    pp.network_id = n->id;
    pp.buffer = (uint32_t)b;
    plx_external_memory m;
    memset(&m, 0, sizeof m);
    m.struct_size = (uint32_t)sizeof m;
    m.fd = -1;
    plx_status e = bp->backend->functions.allocate_planned_buffer(f, &pp, &m);
    if (e) {
        plx_status r = plxi_status_create(plx_status_get_code(e),
                                          "backend '%s': cannot allocate a planned buffer of "
                                          "%" PRIu64 " bytes: %s",
                                          bp->backend->info.id, pp.size,
                                          plx_status_get_message(e));
        plx_status_free(e);
        return r;
    }
    if (!m.kind || m.size < pp.size) {
        plx_status r = plxi_status_create(
            PLX_INTERNAL, "backend '%s': allocate_planned_buffer returned %s", bp->backend->info.id,
            !m.kind ? "memory without a kind" : "less memory than asked");
        if (m.kind) {
            bp->backend->functions.free_planned_buffer(f, &m);
        }
        return r;
    }
    *out = m;
    return NULL;
}

/* docs/loaded-network.md, Loading 7 and 8: working memory at the first
 * execution: managed handles from their backends, planned ones from the
 * plan's buffers (imported at their offsets). */
plx_status plxi_working_memory_ensure(plx_working_memory *wm) {
    if (wm->memory_ready) {
        return NULL;
    }
    plx_loaded_network *n = wm->network;
    plx_status s = NULL;
    size_t base = 0;
    for (size_t p = 0; !s && p < n->plan_count; p++) {
        backend_plan *bp = &n->plans[p];
        for (size_t b = 0; b < bp->plan.buffer_count && bp->backend_allocates; b++) {
            s = allocate_device_buffer(wm, bp, b, &wm->device_buffers[base + b]);
            if (s) {
                break;
            }
        }
        for (size_t b = 0; b < bp->plan.buffer_count && !bp->backend_allocates; b++) {
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
                                       "backend '%s': out of memory (a planned buffer of %zu "
                                       "bytes%s)", bp->backend->info.id, bp->plan.buffer_sizes[b],
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
                backend_plan *bp = plxi_ln_plan_of(n, h->backend, &pi);
                for (size_t q = 0; q < pi; q++) {
                    first += n->plans[q].plan.buffer_count;
                }
                const plx_memory_placement *pl = &bp->plan.placements[h->block];
                plx_status e;
                if (bp->backend_allocates) {
                    /* the block's part of the backend's buffer. */
                    plx_external_memory part = wm->device_buffers[first + pl->buffer];
                    part.offset += pl->offset;
                    part.size = h->bytes;
                    part.release = NULL;
                    part.release_data = NULL;
                    e = h->backend->functions.import_external_memory(h->handle, &part);
                } else {
                    char *mem = (char *)wm->buffers[first + pl->buffer] + pl->offset;
                    e = h->backend->functions.import_tensor_handle(h->handle, mem, h->bytes,
                                                                   PLX_MEMORY_SOURCE_MALLOC);
                }
                if (e) {
                    s = plxi_ln_at_layer(e, ls->layer, "cannot import planned memory");
                } else {
                    h->bound = true;
                }
            } else {
                s = plxi_ln_allocate(h, ls->layer);
            }
        }
    }
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        layer_state *ls = &wm->layers[i];
        if (ls->workload && ls->layer->op != PLX_OP_CONSTANT &&
            ls->layer->backend->functions.configure_workload) {
            plx_status c = ls->layer->backend->functions.configure_workload(ls->workload);
            if (c) {
                s = plxi_ln_at_layer(c, ls->layer, "configure failed");
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
    plx_status s = plxi_working_memory_create(loaded, &wm);
    if (!s && !plxi_ptr_vec_push(&loaded->working_memories, wm)) {
        plxi_working_memory_free(wm);
        s = plxi_ln_oom();
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
    plxi_working_memory_free(wm);
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

