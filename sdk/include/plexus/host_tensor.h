/* Plexus backend SDK: tensor handles in plain host memory, for CPU backends.
 *
 * A backend whose tensors are dense row-major bytes in the process's memory
 * (cpu_ref, cpu_onednn, a vendor's CPU library) implements the ABI's
 * tensor-handle calls (backend.h, R-17) the same way: owned memory from the
 * host's allocator, memory the host imports (malloc) used in place,
 * sub-tensors as a range of their parent's, map returning the memory
 * itself. plx_host_tensor is that implementation, as static inline
 * functions that cross no boundary (nothing to link, R-3): the backend puts
 * one at the start of its `struct plx_tensor_handle` and forwards each call.
 *
 * Messages begin with the backend id given at init ("cpu_ref: ..."), as
 * R-12 asks. Thread-safety is the ABI's: the host never makes two calls on
 * one handle at once, and map of a handle keeps no per-call state, so one
 * may be mapped by several executions at once. */
#ifndef PLEXUS_HOST_TENSOR_H
#define PLEXUS_HOST_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <plexus/backend.h>
#include <plexus/tensor.h>

typedef struct plx_host_tensor {
    const plx_host *host;
    const char *backend_id;         /* for messages; a static string */
    size_t bytes;                   /* the tensor's byte size */
    size_t element_size;            /* what imported memory must be aligned to */
    size_t allocation_alignment;    /* of owned memory */
    void *owned;                    /* allocated by plx_host_tensor_allocate, or NULL */
    void *data;                     /* owned, imported, or NULL */
    struct plx_host_tensor *parent; /* sub-tensors: their bytes are the parent's + offset */
    size_t offset;
} plx_host_tensor;

/* Initialises `t` for a tensor of `info` (no memory yet); its owned memory
 * will be aligned to `allocation_alignment` (a power of two; 64 suits
 * vector loads). PLX_INVALID_ARGUMENT for an info without a byte size. */
static inline plx_status plx_host_tensor_init(plx_host_tensor *t, const plx_host *host,
                                              const char *backend_id,
                                              const plx_tensor_info *info,
                                              size_t allocation_alignment) {
    size_t bytes = 0;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s: invalid tensor info (dtype %d, rank %u)", backend_id,
                                   (int)info->dtype, info->rank);
    }
    t->host = host;
    t->backend_id = backend_id;
    t->bytes = bytes;
    t->element_size = plx_dtype_size(info->dtype);
    t->allocation_alignment = allocation_alignment;
    t->owned = NULL;
    t->data = NULL;
    t->parent = NULL;
    t->offset = 0;
    return NULL;
}

/* Initialises `t` as the range of `parent` at `byte_offset` that holds a
 * tensor of `info` (create_sub_tensor_handle, R-17 (9)): its bytes are the
 * parent's wherever they are. PLX_INVALID_ARGUMENT, naming the sizes, when
 * the range does not fit the parent or the offset is not a multiple of the
 * element size. */
static inline plx_status plx_host_tensor_init_sub(plx_host_tensor *t, plx_host_tensor *parent,
                                                  const plx_tensor_info *info,
                                                  size_t byte_offset) {
    const plx_host *host = parent->host;
    plx_status s = plx_host_tensor_init(t, host, parent->backend_id, info,
                                        parent->allocation_alignment);
    if (s) {
        return s;
    }
    if (byte_offset > parent->bytes || t->bytes > parent->bytes - byte_offset) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s: a sub-tensor of %zu bytes at offset %zu does not fit "
                                   "its parent of %zu bytes", t->backend_id, t->bytes,
                                   byte_offset, parent->bytes);
    }
    if (t->element_size == 0 || byte_offset % t->element_size != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s: sub-tensor offset %zu is not a multiple of the element "
                                   "size", t->backend_id, byte_offset);
    }
    t->parent = parent;
    t->offset = byte_offset;
    return NULL;
}

/* Where the tensor's bytes are now; NULL when it has none. */
static inline void *plx_host_tensor_data(const plx_host_tensor *t) {
    if (t->parent) {
        char *base = (char *)plx_host_tensor_data(t->parent);
        return base ? base + t->offset : NULL;
    }
    return t->data;
}

/* allocate_tensor_handle: owned memory, once (again: nothing to do). */
static inline plx_status plx_host_tensor_allocate(plx_host_tensor *t) {
    if (t->owned) {
        return NULL;
    }
    t->owned = t->host->alloc(t->host, t->bytes ? t->bytes : 1, t->allocation_alignment);
    if (!t->owned) {
        return t->host->status_create(t->host, PLX_OUT_OF_MEMORY,
                                      "%s: out of memory (%zu bytes)", t->backend_id, t->bytes);
    }
    t->data = t->owned;
    return NULL;
}

/* release_tensor_handle: frees the owned memory (imported memory is the
 * caller's and stays in use until unimport). */
static inline void plx_host_tensor_release(plx_host_tensor *t) {
    if (t->data == t->owned) {
        t->data = NULL;
    }
    t->host->free(t->host, t->owned);
    t->owned = NULL;
}

/* map_tensor_handle: the memory itself (plain host memory needs no copy;
 * unmap has nothing to write back). PLX_FAILED_PRECONDITION when the
 * tensor has no memory. */
static inline plx_status plx_host_tensor_map(const plx_host_tensor *t, void **out_data) {
    void *data = plx_host_tensor_data(t);
    if (!data) {
        return t->host->status_create(t->host, PLX_FAILED_PRECONDITION,
                                      "%s: the tensor has no memory (neither allocated nor "
                                      "imported)", t->backend_id);
    }
    *out_data = data;
    return NULL;
}

/* import_tensor_handle of malloc memory: used in place, zero copy, from
 * now until unimport. PLX_INVALID_ARGUMENT when it is smaller than the
 * tensor or not aligned to the element size. */
static inline plx_status plx_host_tensor_import(plx_host_tensor *t, void *memory, size_t size) {
    const plx_host *host = t->host;
    if (!memory || size < t->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s: imported memory of %zu bytes is smaller than the "
                                   "tensor's %zu", t->backend_id, memory ? size : 0, t->bytes);
    }
    if (t->element_size && (uintptr_t)memory % t->element_size != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s: imported memory at %p is not aligned to the element "
                                   "size (%zu bytes)", t->backend_id, memory, t->element_size);
    }
    t->data = memory;
    return NULL;
}

/* unimport_tensor_handle: back to the owned memory, if any. */
static inline void plx_host_tensor_unimport(plx_host_tensor *t) {
    t->data = t->owned;
}

#endif /* PLEXUS_HOST_TENSOR_H */
