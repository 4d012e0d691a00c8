#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "loaded_network.h"

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
        return plxi_ln_oom();
    }
    *pre = grown;
    size_t start = *pre_count;
    plx_status s = NULL;
    for (size_t i = 0; !s && i < count; i++) {
        const plx_tensor_binding *b = &given[i];
        size_t k = plxi_ln_find_io(list, list_count, b->binding_id);
        if (k == list_count) {
            s = plxi_status_create(PLX_NOT_FOUND, "%s binding id %d is not one of the network's "
                                                  "%ss", kind, b->binding_id, kind);
            break;
        }
        const io_binding *io = &list[k];
        handle_slot *h = n->own->layers[io->layer].outputs[io->slot];
        char what[48];
        snprintf(what, sizeof what, "%s binding id %d", kind, (int)b->binding_id);
        preimport p = {.io = k};
        if (!plx_backend_info_has_capability(&h->backend->info, PLX_CAP_PREIMPORT_IO_TENSORS)) {
            s = plxi_status_create(PLX_UNSUPPORTED,
                                   "%s: backend '%s' does not report preimport_io_tensors", what,
                                   h->backend->info.id);
        } else if (!io->zero_copy) {
            s = plxi_status_create(PLX_UNSUPPORTED,
                                   "%s is not zero copy in this network (its backend cannot "
                                   "import it, or the layer feeding it has other consumers)",
                                   what);
        } else if (!b->data || b->size != io->bytes) {
            s = plxi_status_create(PLX_INVALID_ARGUMENT, "%s: %s", what,
                                   b->data ? "size differs from the tensor's" : "data is NULL");
        } else if (!(s = plxi_ln_caller_mem(b, io->bytes, what, &p.mem)) &&
                   p.mem.source == PLX_MEMORY_SOURCE_MALLOC && plxi_ln_misaligned(h, p.mem.data)) {
            s = plxi_status_create(PLX_INVALID_ARGUMENT,
                                   "%s: memory at %p is not aligned to the %zu bytes %s imports "
                                   "(a pre-import is never a copy)", what, p.mem.data,
                                   h->import_alignment, h->backend->info.id);
        } else if (!s && !(s = plxi_ln_import_caller(n, h, &p.mem, false, b->binding_id, kind))) {
            h->backend->functions.unimport_tensor_handle(h->handle);
            h->bound = false;
            /* The description is the caller's: keep a copy of its kind. */
            if (p.mem.source == PLX_MEMORY_SOURCE_EXTERNAL) {
                p.kind = strdup(p.mem.ext.kind);
                if (!p.kind) {
                    s = plxi_ln_oom();
                    break;
                }
                p.mem.ext.kind = p.kind;
            }
            (*pre)[(*pre_count)++] = p;
        }
    }
    if (s) {
        /* Rolls back this call's imports. */
        while (*pre_count > start) {
            free((*pre)[--*pre_count].kind);
        }
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

