/* The memory plan of a loaded network: its planned tensors as blocks,
 * handed to the planner of memory_plan.c (docs/loaded-network.md,
 * Loading 7). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "loaded_network.h"


/* The memory plan of every backend whose intermediate tensors the host
 * manages (docs/loaded-network.md, Loading 7): one step per layer in execution
 * order; each planned tensor is a block from its producer's step to its
 * last reader's; a whole that has in-place parts lives from the first
 * part's producer to the last reader of any part. Imported inputs,
 * exported outputs, import layers' outputs and constants are not planned.
 * Planned on a scratch working memory's layout, which every working memory
 * shares. */
plx_status plxi_ln_plan_memory(plx_loaded_network *n) {
    if (!n->options.externally_managed_memory && !n->options.async_execution) {
        return NULL;
    }
    plx_runtime *rt = n->runtime;
    n->plans = calloc(n->factory_count + 1, sizeof *n->plans);
    n->blocks = calloc(n->factory_count + 1, sizeof *n->blocks);
    n->block_counts = calloc(n->factory_count + 1, sizeof *n->block_counts);
    if (!n->plans || !n->blocks || !n->block_counts) {
        return plxi_ln_oom();
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
        bp->backend_allocates = plxi_ln_backend_allocates(n, bp->backend);
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
        s = plxi_ln_oom();
    } else {
        s = plxi_working_memory_lay_out(layout, in_place);
    }
    free(in_place);
    /* Blocks per backend, with each whole's lifetime covering its parts. */
    size_t *first = calloc(n->slot_count + 1, sizeof *first);
    size_t *last = calloc(n->slot_count + 1, sizeof *last);
    if (!s && (!first || !last)) {
        s = plxi_ln_oom();
    }
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; !s && i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        for (uint32_t k = 0; k < l->output_count; k++) {
            size_t idx = n->slot_base[i] + k, end;
            bool feeds_output;
            plxi_ln_consumers(o, i, k, &feeds_output, &end);
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
            s = plxi_ln_oom();
            break;
        }
        /* what the backend's bindings need of a place, if more. */
        const plx_capability *pa =
            plx_backend_info_capability(&bp->backend->info, PLX_CAP_PLANNED_ALIGNMENT);
        size_t planned_alignment =
            pa && pa->type == PLX_VALUE_INT && pa->int_value > 0 ? (size_t)pa->int_value : 1;
        for (size_t idx = 0; idx < n->slot_count; idx++) {
            handle_slot *h = &layout->slots[idx];
            if (h->backend != bp->backend || !h->planned || h->parent) {
                continue;
            }
            /* All powers of two: the largest is a multiple of the others. */
            size_t align = h->import_alignment > PLAN_ALIGNMENT ? h->import_alignment
                                                                : PLAN_ALIGNMENT;
            align = planned_alignment > align ? planned_alignment : align;
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
            s = plxi_ln_oom();
        }
        for (size_t idx = 0; !s && idx < n->slot_count; idx++) {
            n->slot_block[idx] = layout->slots[idx].block;
        }
    }
    plxi_working_memory_free(layout); /* holds no handle or workload */
    return s;
}
