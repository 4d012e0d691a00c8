/* Assigning layers to backends (docs/loaded-network.md, "Optimising").
 *
 * Each layer goes to the first backend of the preference list that supports
 * it; every refusal on the way is kept with its reason. Network inputs run
 * on their first consumer's backend, outputs on their producer's, constants
 * on their first consumer's when it accepts them. Every connection between
 * layers on different backends then gets an import layer (the consumer's
 * handle imports the producer's memory: import enabled, and the producer
 * exports malloc memory that the consumer imports, or, from a computed
 * tensor, a dma-buf that the consumer imports, R-26) or a copy layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network_internal.h"
#include "assign.h"
#include "rewrite.h"
#include "shape_infer.h"
#include "subgraph.h"

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while optimising the network");
}

PLX_API void plx_optimize_options_init(plx_optimize_options *options) {
    if (!options) {
        return;
    }
    memset(options, 0, sizeof *options);
    options->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_optimize_options, graph_rewrites);
    options->allow_fallback = true;
    options->graph_rewrites = true;
}

PLX_API void plx_optimized_network_destroy(plx_optimized_network **optimized) {
    if (!optimized || !*optimized) {
        return;
    }
    plx_optimized_network *o = *optimized;
    *optimized = NULL;
    for (size_t i = 0; i < o->layers.count; i++) {
        plxi_layer_free(o->layers.items[i]);
    }
    plxi_ptr_vec_release(&o->layers);
    for (size_t i = 0; i < o->notes.count; i++) {
        free(o->notes.items[i]);
    }
    plxi_ptr_vec_release(&o->notes);
    free(o->assignments);
    free(o->summary);
    free(o);
}


/* A growable string for messages that list many things. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_add(strbuf *b, const char *fmt, ...) PLXI_PRINTF(2, 3);
static void sb_add(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *piece = plxi_vasprintf(fmt, ap);
    va_end(ap);
    if (!piece) {
        b->failed = true;
        return;
    }
    size_t n = strlen(piece);
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            free(piece);
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, piece, n + 1);
    b->len += n;
    free(piece);
}

/* The requested backends that can run layers, in preference order. */
static plx_status resolve_backends(plx_runtime *rt, const plx_optimize_options *opts,
                                   plx_optimized_network *o, plxi_backend_record **out,
                                   size_t *out_count) {
    size_t n = 0;
    for (size_t i = 0; i < opts->backend_count; i++) {
        const char *id = opts->backends[i];
        if (!id) {
            return plxi_status_create(PLX_INVALID_ARGUMENT, "backend id #%zu is NULL", i);
        }
        plxi_backend_record *rec = NULL;
        for (size_t k = 0; k < rt->backends.count; k++) {
            plxi_backend_record *r = rt->backends.items[k];
            if (strcmp(r->info.id, id) == 0) {
                rec = r;
            }
        }
        bool dup = false;
        for (size_t k = 0; k < n; k++) {
            dup = dup || out[k] == rec;
        }
        bool ok = false;
        if (!rec) {
            ok = plxi_optimizer_note(o, "backend '%s' is not loaded", id);
        } else if (!rec->info.available) {
            ok = plxi_optimizer_note(o, "backend '%s' is unavailable: %s", id, rec->info.reason);
        } else if (!plx_backend_info_runs_layers(&rec->info)) {
            ok = plxi_optimizer_note(o, "backend '%s' runs no layers: %s", id,
                                     plx_backend_info_no_layers_reason(&rec->info));
        } else if (dup) {
            ok = plxi_optimizer_note(o, "backend '%s' is requested twice; the first place counts", id);
        } else {
            out[n++] = rec;
            continue;
        }
        if (!ok) {
            return oom();
        }
    }
    if (n == 0) {
        strbuf b = {0};
        sb_add(&b, "none of the requested backends can run layers (asked for:");
        for (size_t i = 0; i < opts->backend_count; i++) {
            sb_add(&b, "%s %s", i ? "," : "", opts->backends[i]);
        }
        if (opts->backend_count == 0) {
            sb_add(&b, " nothing");
        }
        sb_add(&b, "; available:");
        size_t shown = 0;
        for (size_t k = 0; k < rt->backends.count; k++) {
            const plxi_backend_record *r = rt->backends.items[k];
            if (plx_backend_info_runs_layers(&r->info)) {
                sb_add(&b, "%s %s", shown++ ? "," : "", r->info.id);
            }
        }
        if (!shown) {
            sb_add(&b, " none");
        }
        for (size_t i = 0; i < o->notes.count; i++) {
            sb_add(&b, "; %s", (const char *)o->notes.items[i]);
        }
        sb_add(&b, ")");
        plx_status s = b.failed ? oom() : plxi_status_create(PLX_NOT_FOUND, "%s", b.s);
        free(b.s);
        return s;
    }
    *out_count = n;
    return NULL;
}

/* The first consumer (in order) of any output of layer `index`. */
static const plxi_layer *first_consumer(plxi_layer *const *layers, size_t count, uint32_t index) {
    for (size_t i = 0; i < count; i++) {
        const plxi_layer *c = layers[i];
        for (uint32_t k = 0; k < c->input_count; k++) {
            if (c->inputs[k].layer == index && c->op != PLX_OP_OUTPUT) {
                return c;
            }
        }
    }
    return NULL;
}

/* The source through which `producer`'s output can be lent to a layer on
 * `consumer` (an import layer), or 0 (a copy layer). Malloc: the host maps
 * the producer's handle and imports the pointer, preferred when both
 * backends share it. dma-buf: the producer's export_external_memory
 * describes the handle's memory and the consumer's import_tensor_handle
 * takes the descriptor; only for tensors a layer computes, since
 * the memory of network inputs (the caller's) and of constants (created
 * before any import layer is known) is not allocated for lending. */
static uint32_t lend_source(const plxi_layer *producer, const plxi_backend_record *consumer) {
    const plxi_backend_record *from = producer->backend;
    if (!consumer->functions.import_tensor_handle) {
        return 0;
    }
    uint32_t shared = plx_backend_info_export_sources(&from->info) &
                      plx_backend_info_import_sources(&consumer->info);
    if (shared & PLX_MEMORY_SOURCE_MALLOC) {
        return PLX_MEMORY_SOURCE_MALLOC;
    }
    if ((shared & PLX_MEMORY_SOURCE_DMA_BUF) && from->functions.export_external_memory &&
        producer->op != PLX_OP_INPUT && producer->op != PLX_OP_CONSTANT) {
        return PLX_MEMORY_SOURCE_DMA_BUF;
    }
    return 0;
}

/* The name of a memory source an import layer lends through. */
static const char *source_name(uint32_t source) {
    return source == PLX_MEMORY_SOURCE_DMA_BUF ? "dma_buf" : "malloc";
}

/* Inserts copy/import layers on connections between backends and writes
 * the final execution order into o->layers. `layers` (count entries, in
 * topological order) are consumed. */
static plx_status insert_edges(plx_optimized_network *o, plxi_layer **layers, size_t count) {
    /* new index of each original layer, and of the inserted layer per
     * (layer, slot, backend), found by a linear search over `inserted`. */
    uint32_t *new_index = malloc((count ? count : 1) * sizeof *new_index);
    if (!new_index) {
        return oom();
    }
    typedef struct {
        uint32_t layer, slot;
        const plxi_backend_record *backend;
        uint32_t index;
    } edge;
    edge *edges = NULL;
    size_t edge_count = 0, moved = 0;
    plx_status s = NULL;
    for (size_t i = 0; !s && i < count; i++) {
        plxi_layer *l = layers[i];
        for (uint32_t k = 0; !s && k < l->input_count; k++) {
            const plxi_layer *src = layers[l->inputs[k].layer];
            if (src->backend == l->backend) {
                l->inputs[k].layer = new_index[l->inputs[k].layer];
                continue;
            }
            uint32_t found = PLXI_NO_LAYER;
            for (size_t e = 0; e < edge_count; e++) {
                if (edges[e].layer == l->inputs[k].layer && edges[e].slot == l->inputs[k].slot &&
                    edges[e].backend == l->backend) {
                    found = edges[e].index;
                }
            }
            if (found == PLXI_NO_LAYER) {
                uint32_t lend = o->import_enabled ? lend_source(src, l->backend) : 0;
                bool import = lend != 0;
                plxi_layer *ins = calloc(1, sizeof *ins);
                edge *grown = realloc(edges, (edge_count + 1) * sizeof *edges);
                if (grown) {
                    edges = grown;
                }
                if (!ins || !grown) {
                    free(ins);
                    s = oom();
                    break;
                }
                ins->op = import ? PLX_OP_MEM_IMPORT : PLX_OP_MEM_COPY;
                ins->input_count = 1;
                ins->output_count = 1;
                ins->name = import ? plxi_asprintf("%s:%u -> %s (import, %s)", src->name,
                                                   l->inputs[k].slot, l->backend->info.id,
                                                   source_name(lend))
                                   : plxi_asprintf("%s:%u -> %s (copy)", src->name,
                                                   l->inputs[k].slot, l->backend->info.id);
                ins->lend_source = lend;
                ins->inputs = malloc(sizeof *ins->inputs);
                ins->outputs = malloc(sizeof *ins->outputs);
                ins->output_given = calloc(1, sizeof *ins->output_given);
                ins->backend = l->backend;
                ins->inserted = true;
                if (!ins->name || !ins->inputs || !ins->outputs || !ins->output_given) {
                    plxi_layer_free(ins);
                    s = oom();
                    break;
                }
                ins->inputs[0].layer = new_index[l->inputs[k].layer];
                ins->inputs[0].slot = l->inputs[k].slot;
                ins->outputs[0] = src->outputs[l->inputs[k].slot];
                if (!plxi_ptr_vec_push(&o->layers, ins)) {
                    plxi_layer_free(ins);
                    s = oom();
                    break;
                }
                found = (uint32_t)(o->layers.count - 1);
                edges[edge_count++] = (edge){l->inputs[k].layer, l->inputs[k].slot, l->backend,
                                             found};
            }
            l->inputs[k].layer = found;
            l->inputs[k].slot = 0;
        }
        if (s) {
            break;
        }
        if (!plxi_ptr_vec_push(&o->layers, l)) {
            s = oom();
            break;
        }
        moved = i + 1;
        new_index[i] = (uint32_t)(o->layers.count - 1);
    }
    /* Layers moved into o are its now; later ones stay the caller's. */
    for (size_t i = 0; i < moved; i++) {
        layers[i] = NULL;
    }
    free(edges);
    free(new_index);
    return s;
}

static plx_status build_summary(plx_optimized_network *o) {
    strbuf b = {0};
    /* Layers per backend, in order of first appearance. */
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        bool seen = false;
        for (size_t j = 0; j < i; j++) {
            seen = seen || ((const plxi_layer *)o->layers.items[j])->backend == l->backend;
        }
        if (seen) {
            continue;
        }
        size_t n = 0, inserted = 0;
        for (size_t j = i; j < o->layers.count; j++) {
            const plxi_layer *m = o->layers.items[j];
            if (m->backend == l->backend) {
                n += !m->inserted;
                inserted += m->inserted;
            }
        }
        sb_add(&b, "%s%zu layer%s on %s", b.len ? "; " : "", n, n == 1 ? "" : "s",
               l->backend->info.id);
        if (inserted) {
            sb_add(&b, " (+%zu inserted cop%s/import%s)", inserted, inserted == 1 ? "y" : "ies",
                   inserted == 1 ? "" : "s");
        }
    }
    /* Import layers: whose memory each reads in place, and how it is lent. */
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (l->op == PLX_OP_MEM_IMPORT) {
            const plxi_layer *src = o->layers.items[l->inputs[0].layer];
            sb_add(&b, "\nimport layer '%s' reads %s's memory in place on %s, lent as %s", l->name,
                   src->backend->info.id, l->backend->info.id, source_name(l->lend_source));
        }
    }
    /* A zero-copy input or output whose memory may miss its backend's import
     * alignment is copied through a staging buffer: say so at load. */
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        const plxi_backend_record *rec = l->backend;
        if (l->op == PLX_OP_OUTPUT && l->input_count == 1) {
            rec = ((const plxi_layer *)o->layers.items[l->inputs[0].layer])->backend;
        }
        bool may_import = (l->op == PLX_OP_INPUT && o->import_enabled) ||
                          (l->op == PLX_OP_OUTPUT && o->export_enabled);
        size_t align = rec ? plx_backend_info_import_alignment(&rec->info) : 1;
        if (may_import && align > 1 && rec->functions.import_tensor_handle &&
            (plx_backend_info_import_sources(&rec->info) & PLX_MEMORY_SOURCE_MALLOC)) {
            sb_add(&b, "\n%s '%s' is zero copy on %s when its memory is %zu-byte aligned; "
                       "otherwise it is copied through a staging buffer",
                   l->op == PLX_OP_INPUT ? "input" : "output", l->name, rec->info.id, align);
        }
    }
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        for (size_t r = 0; r < l->refusal_count; r++) {
            sb_add(&b, "\n'%s' (%s) fell back from %s to %s; %s: %s", l->name,
                   plx_op_name(l->op), l->refusals[r].backend_id, l->backend->info.id,
                   l->refusals[r].backend_id, l->refusals[r].reason);
        }
    }
    if (b.failed) {
        free(b.s);
        return oom();
    }
    o->summary = b.s ? b.s : plxi_strdup("no layers");
    return o->summary ? NULL : oom();
}

PLX_API plx_status plx_optimize(plx_runtime *runtime, plx_network *network,
                                const plx_optimize_options *options,
                                plx_optimized_network **out_optimized) {
    if (out_optimized) {
        *out_optimized = NULL;
    }
    if (!runtime || !network || !options || !out_optimized) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  !runtime ? "runtime"
                                  : !network ? "network"
                                  : !options ? "options"
                                             : "out_optimized");
    }
    if (options->struct_size < PLX_STRUCT_SIZE_UPTO(plx_optimize_options, export_enabled)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "options.struct_size is %u (initialise with "
                                  "plx_optimize_options_init)", options->struct_size);
    }
    if (options->backend_count && !options->backends) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "backend_count is %zu but backends is NULL",
                                  options->backend_count);
    }
    plx_status s = plx_network_validate(network);
    if (s) {
        return s;
    }
    plx_optimized_network *o = calloc(1, sizeof *o);
    plxi_backend_record **prefs = calloc(options->backend_count + 1, sizeof *prefs);
    size_t count = network->layers.count;
    plxi_layer **layers = calloc(count ? count : 1, sizeof *layers);
    if (!o || !prefs || !layers) {
        free(o);
        free(prefs);
        free(layers);
        return oom();
    }
    o->runtime = runtime;
    o->import_enabled = options->import_enabled;
    o->export_enabled = options->export_enabled;
    size_t pref_count = 0;
    s = resolve_backends(runtime, options, o, prefs, &pref_count);

    /* Work on copies in topological order, with inputs renumbered to it. */
    uint32_t *position = malloc((count ? count : 1) * sizeof *position);
    if (!s && !position) {
        s = oom();
    }
    for (size_t i = 0; !s && i < count; i++) {
        position[network->order[i]] = (uint32_t)i;
    }
    for (size_t i = 0; !s && i < count; i++) {
        layers[i] = plxi_layer_clone(network->layers.items[network->order[i]]);
        if (!layers[i]) {
            s = oom();
        }
    }
    for (size_t i = 0; !s && i < count; i++) {
        for (uint32_t k = 0; k < layers[i]->input_count; k++) {
            layers[i]->inputs[k].layer = position[layers[i]->inputs[k].layer];
        }
    }
    free(position);
    if (!s && (options->struct_size < PLX_STRUCT_SIZE_UPTO(plx_optimize_options, graph_rewrites) ||
               options->graph_rewrites)) {
        s = plxi_rewrite(o, layers, &count, prefs, pref_count);
    }

    /* Compute layers by preference; then backends optimise their subgraphs
     * constants last, to follow their consumers. */
    for (int pass = 0; !s && pass < 2; pass++) {
        if (pass == 1) {
            s = plxi_optimize_subgraphs(o, layers, &count, prefs, pref_count,
                                        options->allow_fallback);
        }
        for (size_t i = 0; !s && i < count; i++) {
            plxi_layer *l = layers[i];
            if (l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT ||
                (l->op == PLX_OP_CONSTANT) != (pass == 1)) {
                continue;
            }
            if (l->op == PLX_OP_CONSTANT) {
                const plxi_layer *c = first_consumer(layers, count, (uint32_t)i);
                bool failed = false;
                char *reason = c && c->backend ? plxi_optimizer_ask(c->backend, l, layers, &failed) : NULL;
                if (failed) {
                    s = oom();
                    break;
                }
                if (c && c->backend && !reason) {
                    l->backend = c->backend;
                    continue;
                }
                free(reason); /* the consumer's backend is not a preference */
            }
            if (!plxi_assign_by_preference(l, layers, prefs, pref_count, options->allow_fallback)) {
                s = oom();
            }
        }
    }
    /* Refused everywhere: one error listing every such layer and reason. */
    if (!s) {
        strbuf b = {0};
        size_t bad = 0;
        for (size_t i = 0; i < count; i++) {
            const plxi_layer *l = layers[i];
            if (l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT || l->backend) {
                continue;
            }
            bad++;
            sb_add(&b, "\n  layer '%s' (%s):", l->name, plx_op_name(l->op));
            for (size_t r = 0; r < l->refusal_count; r++) {
                sb_add(&b, " %s%s: %s", r ? "; " : "", l->refusals[r].backend_id,
                       l->refusals[r].reason);
            }
        }
        if (b.failed) {
            s = oom();
        } else if (bad) {
            s = plxi_status_create(PLX_UNSUPPORTED, "%zu layer%s cannot be assigned%s:%s", bad,
                                   bad == 1 ? "" : "s",
                                   options->allow_fallback ? "" : " (fallback is disabled)", b.s);
        }
        free(b.s);
    }
    /* Inputs follow their first consumer; outputs their producer. */
    for (size_t i = 0; !s && i < count; i++) {
        plxi_layer *l = layers[i];
        if (l->op == PLX_OP_INPUT) {
            const plxi_layer *c = first_consumer(layers, count, (uint32_t)i);
            l->backend = c ? c->backend : prefs[0];
        }
    }
    for (size_t i = 0; !s && i < count; i++) {
        plxi_layer *l = layers[i];
        if (l->op == PLX_OP_OUTPUT) {
            l->backend = layers[l->inputs[0].layer]->backend;
        }
    }
    if (!s) {
        s = insert_edges(o, layers, count);
    }
    for (size_t i = 0; i < count; i++) {
        plxi_layer_free(layers[i]); /* those not taken over by o */
    }
    free(layers);
    free(prefs);
    if (!s) {
        o->assignments = calloc(o->layers.count ? o->layers.count : 1, sizeof *o->assignments);
        s = o->assignments ? build_summary(o) : oom();
    }
    if (s) {
        plx_optimized_network_destroy(&o);
        return s;
    }
    for (size_t i = 0; i < o->layers.count; i++) {
        const plxi_layer *l = o->layers.items[i];
        o->assignments[i] = (plx_layer_assignment){l->name, l->op, l->backend->info.id,
                                                   l->inserted, l->refusals, l->refusal_count};
    }
    *out_optimized = o;
    return NULL;
}

PLX_API size_t plx_optimized_network_layer_count(const plx_optimized_network *optimized) {
    return optimized ? optimized->layers.count : 0;
}

PLX_API const plx_layer_assignment *plx_optimized_network_layer(
    const plx_optimized_network *optimized, size_t index) {
    return optimized && index < optimized->layers.count ? &optimized->assignments[index] : NULL;
}

PLX_API size_t plx_optimized_network_layer_fused_count(const plx_optimized_network *optimized,
                                                       size_t index) {
    if (!optimized || index >= optimized->layers.count) {
        return 0;
    }
    return ((const plxi_layer *)optimized->layers.items[index])->fused_from.count;
}

PLX_API const char *plx_optimized_network_layer_fused_from(
    const plx_optimized_network *optimized, size_t index, size_t k) {
    if (k >= plx_optimized_network_layer_fused_count(optimized, index)) {
        return NULL;
    }
    return ((const plxi_layer *)optimized->layers.items[index])->fused_from.items[k];
}

PLX_API size_t plx_optimized_network_note_count(const plx_optimized_network *optimized) {
    return optimized ? optimized->notes.count : 0;
}

PLX_API const char *plx_optimized_network_note(const plx_optimized_network *optimized,
                                               size_t index) {
    return optimized && index < optimized->notes.count ? optimized->notes.items[index] : NULL;
}

PLX_API const char *plx_optimized_network_summary(const plx_optimized_network *optimized) {
    return optimized ? optimized->summary : NULL;
}
