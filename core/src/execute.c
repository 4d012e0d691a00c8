/* Executions (docs/loaded-network.md, "Executing" and "Executing
 * asynchronously"): the bindings are checked, inputs imported or copied in,
 * callers' output buffers imported into exported handles, the layers run in
 * order (copy layers by the host, import layers bound to their producer's
 * memory), outputs copied out and every import ended. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loaded_network.h"

/* ------------------------------------------------------------------------ */
/* Executing                                                                  */
/* ------------------------------------------------------------------------ */

size_t plxi_ln_find_io(const io_binding *list, size_t count, int32_t binding) {
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
        size_t k = plxi_ln_find_io(expected, count, b->binding_id);
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

plx_status plxi_ln_caller_mem(const plx_tensor_binding *b, size_t bytes, const char *what,
                              caller_mem *out) {
    *out = (caller_mem){.source = PLX_MEMORY_SOURCE_MALLOC, .data = b->data};
    if (b->source == 0 || b->source == PLX_MEMORY_SOURCE_MALLOC ||
        b->source == PLX_MEMORY_SOURCE_DMA_BUF) {
        out->source = b->source ? b->source : PLX_MEMORY_SOURCE_MALLOC;
        return NULL;
    }
    if (b->source != PLX_MEMORY_SOURCE_EXTERNAL) {
        return plxi_status_create(PLX_UNSUPPORTED,
                                  "%s: memory source %d is not one the host takes (malloc, "
                                  "dma_buf, external)", what, (int)b->source);
    }
    const plx_external_memory *e = b->data;
    if (e->struct_size < PLX_STRUCT_SIZE_UPTO(plx_external_memory, size)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: external memory struct_size %u is too small (set it to "
                                  "sizeof(plx_external_memory))", what, e->struct_size);
    }
    if (!e->kind) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: external memory kind is NULL",
                                  what);
    }
    if (e->size < bytes || e->offset > UINT64_MAX - e->size) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: external memory of kind '%s' holds %" PRIu64
                                  " bytes at offset %" PRIu64 ", the tensor needs %zu",
                                  what, e->kind, e->size, e->offset, bytes);
    }
    if (strcmp(e->kind, PLX_MEMORY_KIND_HOST) == 0) {
        if (!e->handle || e->offset > UINTPTR_MAX - (uintptr_t)e->handle) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: host memory handle is NULL or its offset overflows",
                                      what);
        }
        out->data = (char *)e->handle + e->offset;
        return NULL;
    }
    if (strcmp(e->kind, PLX_MEMORY_KIND_DMA_BUF) == 0 && e->fd < 0) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: dma-buf fd %d is not a descriptor",
                                  what, e->fd);
    }
    out->source = PLX_MEMORY_SOURCE_EXTERNAL;
    out->data = NULL;
    /* Copies what this ABI defines; a smaller struct of an older caller
     * leaves the rest (release) zero. */
    out->ext = (plx_external_memory){.struct_size = sizeof out->ext, .kind = e->kind,
                                     .handle = e->handle, .fd = e->fd, .offset = e->offset,
                                     .size = e->size};
    return NULL;
}

/* Is `m` a dma-buf: a whole one, or a description of one? */
static bool is_dma_buf(const caller_mem *m) {
    return m->source == PLX_MEMORY_SOURCE_DMA_BUF ||
           (m->source == PLX_MEMORY_SOURCE_EXTERNAL &&
            strcmp(m->ext.kind, PLX_MEMORY_KIND_DMA_BUF) == 0);
}

/* A view of caller memory the host maps for a copy. */
typedef struct view {
    void *bytes;    /* the tensor's first byte */
    void *mapping;  /* what to munmap, or NULL */
    size_t length;
} view;

/* The caller's memory as host bytes, for a copy: a host pointer as is, a
 * dma-buf mapped (MAP_SHARED, so writes reach it) from the page holding
 * its offset. Memory of a vendor kind cannot be read by the host. Undo
 * with caller_unview. */
/* Can the host copy to or from `m` (it reads no vendor kind)? */
static plx_status check_copyable(const caller_mem *m, int32_t binding, const char *kind) {
    if (m->source != PLX_MEMORY_SOURCE_EXTERNAL || is_dma_buf(m)) {
        return NULL;
    }
    return plxi_status_create(PLX_UNSUPPORTED,
                              "%s binding id %d: memory of kind '%s' is not zero copy in this "
                              "network, and the host cannot copy it (bind it to a backend that "
                              "lists the kind in %s, with %s enabled)",
                              kind, binding, m->ext.kind, PLX_CAP_IMPORT_MEMORY_KINDS,
                              strcmp(kind, "input") == 0 ? "import" : "export");
}

static plx_status caller_view(const caller_mem *m, size_t bytes, bool write, int32_t binding,
                              const char *kind, view *out) {
    *out = (view){m->data, NULL, 0};
    if (m->source == PLX_MEMORY_SOURCE_MALLOC) {
        return NULL;
    }
    plx_status s = check_copyable(m, binding, kind);
    if (s) {
        return s;
    }
    if (bytes == 0) {
        out->bytes = NULL;
        return NULL;
    }
    bool whole = m->source == PLX_MEMORY_SOURCE_DMA_BUF;
    int fd = whole ? *(const int *)m->data : m->ext.fd;
    uint64_t offset = whole ? 0 : m->ext.offset;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t skip = offset % page;
    if (offset - skip > (uint64_t)INT64_MAX || skip > SIZE_MAX - bytes) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s binding id %d: dma-buf offset %" PRIu64 " is too large",
                                  kind, binding, offset);
    }
    size_t length = (size_t)skip + bytes;
    void *p = mmap(NULL, length, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd,
                   (off_t)(offset - skip));
    if (p == MAP_FAILED) {
        return plxi_status_create(PLX_IO_ERROR,
                                  "%s binding id %d: cannot map dma-buf fd %d at offset %" PRIu64
                                  ": %s", kind, binding, fd, offset, strerror(errno));
    }
    *out = (view){(char *)p + skip, p, length};
    return NULL;
}

static void caller_unview(const view *v) {
    if (v->mapping) {
        munmap(v->mapping, v->length);
    }
}

/* Does `data` miss the alignment h's backend imports malloc memory at? */
bool plxi_ln_misaligned(const handle_slot *h, const void *data) {
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
    if (!plxi_ln_misaligned(h, data)) {
        return NULL;
    }
    uint64_t start = plxi_profiling(n->runtime) ? plxi_now_ns() : 0;
    if (!h->stage) {
        size_t align = h->import_alignment < sizeof(void *) ? sizeof(void *)
                                                            : h->import_alignment;
        if (posix_memalign(&h->stage, align, bytes ? bytes : 1) != 0) {
            h->stage = NULL;
            return plxi_status_create(PLX_OUT_OF_MEMORY,
                                      "%s: out of memory (a %zu-byte staging buffer for "
                                      "memory not aligned to %s's %zu bytes)", what, bytes,
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

/* Backend b's import_memory_kinds, or NULL. */
static const char *kinds_of(const plxi_backend_record *b) {
    const plx_capability *c = plx_backend_info_capability(&b->info, PLX_CAP_IMPORT_MEMORY_KINDS);
    return c && c->type == PLX_VALUE_STRING ? c->string_value : NULL;
}

/* Does backend `b` list memory kind `kind` in import_memory_kinds? */
static bool imports_kind(const plxi_backend_record *b, const char *kind) {
    const char *list = kinds_of(b);
    size_t len = strlen(kind);
    /* The registry checked the list: kinds separated by single commas. */
    for (const char *p = list ? list : ""; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && memcmp(p, kind, n) == 0) {
            return true;
        }
        p += n + (end ? 1 : 0);
    }
    return false;
}

/* how caller memory `m` reaches h's backend: by import_tensor_handle
 * with a source (*out_source, *out_data), by import_external_memory (true
 * in *out_external), or not at all (a status naming why). */
static plx_status import_route(const handle_slot *h, const caller_mem *m, int32_t binding,
                               const char *kind, plx_memory_source *out_source, void **out_data,
                               bool *out_external) {
    *out_external = false;
    *out_source = m->source;
    *out_data = m->data;
    if (m->source != PLX_MEMORY_SOURCE_EXTERNAL) {
        if (h->import_sources & m->source) {
            return NULL;
        }
        return plxi_status_create(PLX_UNSUPPORTED,
                                  "%s binding id %d is zero copy, but backend '%s' does not "
                                  "import %s memory", kind, binding, h->backend->info.id,
                                  m->source == PLX_MEMORY_SOURCE_DMA_BUF ? "dma_buf" : "this");
    }
    bool dma = is_dma_buf(m);
    if (dma && m->ext.offset == 0 && (h->import_sources & PLX_MEMORY_SOURCE_DMA_BUF)) {
        *out_source = PLX_MEMORY_SOURCE_DMA_BUF;
        *out_data = (void *)&m->ext.fd; /* read only, during the import */
        return NULL;
    }
    if (imports_kind(h->backend, m->ext.kind)) {
        *out_external = true;
        return NULL;
    }
    return plxi_status_create(PLX_UNSUPPORTED,
                              "%s binding id %d is zero copy, but backend '%s' does not import "
                              "memory of kind '%s'%s (its %s: %s)",
                              kind, binding, h->backend->info.id, m->ext.kind,
                              dma && m->ext.offset ? " at an offset (whole dma-bufs only)" : "",
                              PLX_CAP_IMPORT_MEMORY_KINDS,
                              kinds_of(h->backend) ? kinds_of(h->backend) : "none");
}

plx_status plxi_ln_import_caller(plx_loaded_network *n, handle_slot *h, const caller_mem *m,
                                 bool stage, int32_t binding, const char *kind) {
    plx_memory_source source;
    void *data;
    bool external;
    plx_status s = import_route(h, m, binding, kind, &source, &data, &external);
    if (s) {
        return s;
    }
    if (source == PLX_MEMORY_SOURCE_MALLOC && stage) {
        char what[48];
        snprintf(what, sizeof what, "%s binding id %d", kind, (int)binding);
        plx_status e = stage_if_misaligned(n, h, data, h->bytes, strcmp(kind, "input") == 0,
                                           what, &data);
        if (e) {
            return e;
        }
    }
    s = external ? h->backend->functions.import_external_memory(h->handle, &m->ext)
                 : h->backend->functions.import_tensor_handle(h->handle, data, h->bytes, source);
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
        return plxi_ln_at_layer(s, l, "cannot map the source tensor");
    }
    s = dst->backend->functions.map_tensor_handle(dst->handle, &to);
    if (s) {
        src->backend->functions.unmap_tensor_handle(src->handle);
        return plxi_ln_at_layer(s, l, "cannot map the destination tensor");
    }
    memcpy(to, from, dst->bytes);
    dst->backend->functions.unmap_tensor_handle(dst->handle);
    src->backend->functions.unmap_tensor_handle(src->handle);
    return NULL;
}

/* binds an import layer that lends its producer's memory as a
 * dma-buf: the producer's export_external_memory describes the memory (the
 * fd stays the producer's), and the consumer imports the descriptor
 * through import_tensor_handle, as it does a caller's dma-buf. The
 * producer is a computed tensor, allocated before its layer ran. */
static plx_status bind_dma_buf(layer_state *ls) {
    handle_slot *src = ls->inputs[0], *dst = ls->outputs[0];
    const plxi_layer *l = ls->layer;
    plx_external_memory m;
    memset(&m, 0, sizeof m);
    m.struct_size = (uint32_t)sizeof m;
    m.fd = -1;
    plx_status s = src->backend->functions.export_external_memory(
        src->handle, PLX_MEMORY_SOURCE_DMA_BUF, &m);
    if (s) {
        char what[128];
        snprintf(what, sizeof what, "%s cannot export the producer's memory as a dma-buf",
                 src->backend->info.id);
        return plxi_ln_at_layer(s, l, what);
    }
    const char *problem = NULL;
    if (!m.kind || strcmp(m.kind, PLX_MEMORY_KIND_DMA_BUF) != 0) {
        problem = "of another kind than dma_buf";
    } else if (m.fd < 0) {
        problem = "with no file descriptor";
    } else if (m.offset != 0) {
        problem = "at a non-zero offset (import_tensor_handle takes whole dma-bufs)";
    } else if (m.size < src->bytes) {
        problem = "smaller than the tensor";
    }
    if (problem) {
        return plxi_status_create(PLX_INTERNAL,
                                  "layer '%s': %s's export_external_memory described memory %s "
                                  "(kind '%s', fd %d, offset %llu, %llu bytes for a tensor of "
                                  "%zu)",
                                  l->name, src->backend->info.id, problem,
                                  m.kind ? m.kind : "(null)", m.fd,
                                  (unsigned long long)m.offset, (unsigned long long)m.size,
                                  src->bytes);
    }
    int fd = m.fd;
    s = dst->backend->functions.import_tensor_handle(dst->handle, &fd, (size_t)m.size,
                                                     PLX_MEMORY_SOURCE_DMA_BUF);
    if (s) {
        return plxi_ln_at_layer(s, l, "import of the producer's dma-buf failed");
    }
    dst->bound = true;
    return NULL;
}

/* Binds an import layer's handle to its producer's memory, for this
 * execution: the producer may be a zero-copy input, whose memory is the
 * caller's and changes every time. */
static plx_status bind_import(plx_loaded_network *n, layer_state *ls) {
    handle_slot *src = ls->inputs[0], *dst = ls->outputs[0];
    if (ls->layer->lend_source == PLX_MEMORY_SOURCE_DMA_BUF) {
        return bind_dma_buf(ls);
    }
    void *data = NULL;
    plx_status s = src->backend->functions.map_tensor_handle(src->handle, &data);
    if (s) {
        return plxi_ln_at_layer(s, ls->layer, "cannot map the producer's tensor for import");
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
        return plxi_ln_at_layer(s, ls->layer, "import of the producer's memory failed");
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

/* waits until everything enqueued on `q` has run; counts the wait,
 * and records it when profiling. The status names the backend and keeps
 * the backend's code and message (which names the layer when it can). */
static plx_status wait_for(plx_loaded_network *n, wm_queue *q, bool profile) {
    const plx_backend_functions *fns = &q->backend->functions;
    uint64_t start = profile ? plxi_now_ns() : 0;
    plx_fence *fence = NULL;
    plx_status s = fns->queue_signal(q->queue, &fence);
    if (!s && !fence) {
        s = plxi_status_create(PLX_INTERNAL, "queue_signal returned success but no fence");
    }
    if (!s) {
        s = fns->fence_wait(fence);
        fns->destroy_fence(fence);
    }
    atomic_fetch_add_explicit(&n->waits, 1, memory_order_relaxed);
    if (profile) {
        char name[96];
        snprintf(name, sizeof name, "wait for %s", q->backend->info.id);
        plxi_profile_record(n->runtime, name, "wait", "", q->backend->info.id, n->id, start,
                            plxi_now_ns());
    }
    if (!s) {
        return NULL;
    }
    plx_status r = plxi_status_create(plx_status_get_code(s), "%s (queued on %s)",
                                      plx_status_get_message(s), q->backend->info.id);
    plx_status_free(s);
    return r;
}

/* Enqueues the workload of `ls` on its queue. `*pending` is the
 * queue whose work nobody has waited for yet: when it is another queue of
 * the same fence domain, its fence is handed to this enqueue; of another
 * domain, the host waits for it first. On return *pending is this queue,
 * whose work now covers everything enqueued before; on failure the
 * caller waits for *pending. */
static plx_status enqueue(plx_loaded_network *n, layer_state *ls, wm_queue **pending,
                          bool profile) {
    const plxi_layer *l = ls->layer;
    wm_queue *q = ls->queue;
    wm_queue *before = *pending;
    plx_fence *handoff = NULL;
    if (before && before != q) {
        if (q->domain && before->domain && strcmp(q->domain, before->domain) == 0) {
            plx_status s = before->backend->functions.queue_signal(before->queue, &handoff);
            if (!s && !handoff) {
                s = plxi_status_create(PLX_INTERNAL, "queue_signal returned success but no "
                                                     "fence");
            }
            if (s) {
                return plxi_ln_at_layer(s, l, "cannot hand the previous backend's fence on");
            }
        } else {
            *pending = NULL;
            plx_status s = wait_for(n, before, profile);
            if (s) {
                return s;
            }
            before = NULL;
        }
    }
    uint64_t start = profile ? plxi_now_ns() : 0;
    plx_enqueue_params ep;
    memset(&ep, 0, sizeof ep);
    ep.struct_size = (uint32_t)sizeof ep;
    ep.workload = ls->workload;
    ep.wait_fences = handoff ? &handoff : NULL;
    ep.wait_fence_count = handoff ? 1u : 0u;
    ep.layer_name = l->name;
    ep.profile = profile;
    plx_status s = q->backend->functions.enqueue_workload(q->queue, &ep);
    if (handoff) {
        before->backend->functions.destroy_fence(handoff);
    }
    if (profile) {
        layer_event(n, l, "enqueue", start);
    }
    if (s) {
        /* What was enqueued on q before is pending too. */
        if (before && before != q) {
            plx_status w = wait_for(n, before, profile);
            plx_status_free(w);
        }
        *pending = q;
        return plxi_ln_at_layer(s, l, "enqueue failed");
    }
    *pending = q;
    return NULL;
}

static plx_status run_layers(plx_working_memory *wm, plx_debug_fn fn, void *user,
                             wm_queue **pending) {
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
        if (ls->queue) {
            s = enqueue(n, ls, pending, profile);
            if (s) {
                return s;
            }
        }
        if (!fn && (ls->queue || (!ls->workload && l->op != PLX_OP_MEM_COPY &&
                                  l->op != PLX_OP_MEM_IMPORT))) {
            continue; /* enqueued, or an in-place concat or split: nothing to run */
        }
        /* Everything else reads or writes memory now: what is queued must
         * have run. */
        if (*pending) {
            wm_queue *q = *pending;
            *pending = NULL;
            s = wait_for(n, q, profile);
            if (s) {
                return s;
            }
        }
        uint64_t start = profile ? plxi_now_ns() : 0;
        if (ls->queue) {
            /* Enqueued above; the debug callback shows its outputs. */
        } else if (ls->workload) {
            s = l->backend->functions.execute_workload(ls->workload);
            if (profile) {
                layer_event(n, l, "execute", start);
            }
            if (s) {
                return plxi_ln_at_layer(s, l, "execution failed");
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

/* Runs the layers and, whatever happened, waits for the work still queued,
 * so that nothing runs on the working memory once this returns. The
 * first failure wins. */
static plx_status run_and_wait(plx_working_memory *wm, plx_debug_fn fn, void *user) {
    wm_queue *pending = NULL;
    plx_status s = run_layers(wm, fn, user, &pending);
    if (pending) {
        plx_status w = wait_for(wm->network, pending, plxi_profiling(wm->network->runtime));
        if (s) {
            plx_status_free(w);
        } else {
            s = w;
        }
    }
    return s;
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

/* The memory of one input or output: its pre-import's, or its binding's. */
static plx_status resolve(const preimport *pre, const plx_tensor_binding *b,
                          const io_binding *io, const char *kind, caller_mem *out) {
    if (pre) {
        *out = pre->mem;
        return NULL;
    }
    char what[48];
    snprintf(what, sizeof what, "%s binding id %d", kind, (int)b->binding_id);
    return plxi_ln_caller_mem(b, io->bytes, what, out);
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
        s = resolve(wm->input_pre[i], wm->input_args[i], &n->inputs[i], "input", &wm->in_mem[i]);
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        s = resolve(wm->output_pre[i], wm->output_args[i], &n->outputs[i], "output",
                    &wm->out_mem[i]);
    }
    return s;
}

/* One prepared execution on `wm`, which the caller holds exclusively. */
static plx_status execute_on(plx_working_memory *wm, plx_debug_fn fn, void *user) {
    plx_loaded_network *n = wm->network;
    plx_status s = plxi_working_memory_ensure(wm);
    for (size_t i = 0; !s && i < n->input_count; i++) {
        const io_binding *b = &n->inputs[i];
        handle_slot *h = wm->layers[b->layer].outputs[0];
        if (b->zero_copy) {
            s = plxi_ln_import_caller(n, h, &wm->in_mem[i], true, b->binding_id, "input");
            continue;
        }
        void *mapped = NULL;
        view v;
        s = caller_view(&wm->in_mem[i], h->bytes, false, b->binding_id, "input", &v);
        if (!s) {
            s = map_slot(h, &mapped, "input", b->binding_id);
            if (!s) {
                memcpy(mapped, v.bytes, h->bytes);
                h->backend->functions.unmap_tensor_handle(h->handle);
            }
            caller_unview(&v);
        }
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        const io_binding *b = &n->outputs[i];
        if (b->zero_copy) {
            handle_slot *h = wm->layers[b->layer].outputs[b->slot];
            s = plxi_ln_import_caller(n, h, &wm->out_mem[i], true, b->binding_id, "output");
        } else {
            /* Refused before anything runs, not after. */
            s = check_copyable(&wm->out_mem[i], b->binding_id, "output");
        }
    }
    if (!s) {
        s = run_and_wait(wm, fn, user);
    }
    for (size_t i = 0; !s && i < n->output_count; i++) {
        const io_binding *b = &n->outputs[i];
        handle_slot *staged = wm->layers[b->layer].outputs[b->slot];
        if (b->zero_copy && staged->staged) {
            /* Ending the import makes everything written visible in the
             * stage (backend.h, unimport_tensor_handle). Only host memory
             * is staged. */
            staged->backend->functions.unimport_tensor_handle(staged->handle);
            staged->bound = false;
            memcpy(wm->out_mem[i].data, staged->stage, staged->bytes);
        }
        if (!b->zero_copy) {
            handle_slot *h = wm->layers[b->layer].outputs[b->slot];
            void *mapped = NULL;
            view v;
            s = caller_view(&wm->out_mem[i], h->bytes, true, b->binding_id, "output", &v);
            if (!s) {
                s = map_slot(h, &mapped, "output", b->binding_id);
                if (!s) {
                    memcpy(v.bytes, mapped, h->bytes);
                    h->backend->functions.unmap_tensor_handle(h->handle);
                }
                caller_unview(&v);
            }
        }
    }
    unbind_all(wm);
    return s;
}

static bool valid_args(const plx_execute_args *a) {
    return a && a->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_execute_args, preimported_output_count);
}

/* One execution in `working_memory`, or in the network's own under its
 * lock when that is NULL; plx_loaded_network_execute_with counts it. */
static plx_status execute_in(plx_loaded_network *loaded, plx_working_memory *working_memory,
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

PLX_API plx_status plx_loaded_network_execute_with(plx_loaded_network *loaded,
                                                   plx_working_memory *working_memory,
                                                   const plx_execute_args *args) {
    if (!loaded) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "loaded network is NULL");
    }
    plx_status s = execute_in(loaded, working_memory, args);
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
    return plx_loaded_network_execute_with(loaded, NULL, &a);
}

