/* Plexus backend SDK: tensor handles in plain host memory, for CPU backends.
 *
 * A backend whose tensors are dense row-major bytes in the process's memory
 * (cpu_ref, cpu_onednn, the sample, a vendor's CPU library) implements the
 * ABI's tensor-handle calls (backend.h, R-17) the same way: owned memory
 * from the host's allocator, memory the host imports used in place (a host
 * pointer as it is, a dma-buf mapped, R-22), sub-tensors as a range of
 * their parent's, map returning the memory itself. plx_host_tensor is that
 * implementation, as static inline functions that cross no boundary
 * (nothing to link, R-3). Two ways to use it:
 *
 *   - the whole tensor-handle group ready made: the backend's
 *     `struct plx_factory` begins with a plx_host_tensor_factory, its
 *     handles are plx_host_tensor objects (it need not define
 *     `struct plx_tensor_handle`; plx_host_tensor_of gives a handle's
 *     plx_host_tensor), and PLX_HOST_TENSOR_FUNCTIONS fills the nine
 *     handle entries of its plx_backend_functions. What the handles can do
 *     is PLX_HOST_TENSOR_CAPABILITIES (plugins/sample/sample_backend.c);
 *   - one plx_host_tensor at the start of a `struct plx_tensor_handle` of
 *     the backend's own, its calls forwarded to the plx_host_tensor_*
 *     functions below, for a backend whose handles hold more.
 *
 * Messages name what is at fault and not the backend: the host prefixes
 * every status of these calls with the layer and the backend id
 * (R-12 (7)). Thread-safety is the ABI's: the host never makes two
 * calls on one handle at once, except map and unmap of a constant's
 * handle, which keep no per-call state here, so one may be mapped by
 * several executions at once. Every function returns NULL or a status the
 * caller owns (R-12 (3)). */
#ifndef PLEXUS_HOST_TENSOR_H
#define PLEXUS_HOST_TENSOR_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <plexus/backend.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor's memory. Owned by the backend (inside its handle, or the
 * handle itself); every field is the helpers' to keep, read-only for the
 * backend. */
typedef struct plx_host_tensor {
    const plx_host *host;           /* valid until the backend is destroyed */
    size_t bytes;                   /* the tensor's byte size */
    size_t element_size;            /* what imported memory must be aligned to */
    size_t allocation_alignment;    /* of owned memory */
    void *owned;                    /* allocated by plx_host_tensor_allocate, or NULL */
    void *data;                     /* owned, imported, or NULL */
    void *mapping;                  /* an imported dma-buf mapped (bytes long), or NULL */
    struct plx_host_tensor *parent; /* sub-tensors: their bytes are the parent's + offset */
    size_t offset;
} plx_host_tensor;

/* Initialises `t` for a tensor of `info` (no memory yet); its owned memory
 * will be aligned to `allocation_alignment` (0 or a power of two, as
 * host->alloc takes it; 64 suits vector loads). PLX_INVALID_ARGUMENT for
 * an info without a byte size. `host` must stay valid as long as `t`. */
static inline plx_status plx_host_tensor_init(plx_host_tensor *t, const plx_host *host,
                                              const plx_tensor_info *info,
                                              size_t allocation_alignment) {
    size_t bytes = 0;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "invalid tensor info (dtype %d, rank %u)", (int)info->dtype,
                                   info->rank);
    }
    t->host = host;
    t->bytes = bytes;
    t->element_size = plx_dtype_size(info->dtype);
    t->allocation_alignment = allocation_alignment;
    t->owned = NULL;
    t->data = NULL;
    t->mapping = NULL;
    t->parent = NULL;
    t->offset = 0;
    return NULL;
}

/* Initialises `t` as the range of `parent` at `byte_offset` that holds a
 * tensor of `info` (create_sub_tensor_handle, R-17 (9)): its bytes are the
 * parent's wherever they are, so `parent` must outlive `t` (the host
 * destroys sub-tensors first). PLX_INVALID_ARGUMENT, naming the sizes,
 * when the range does not fit the parent or the offset is not a multiple
 * of the element size. */
static inline plx_status plx_host_tensor_init_sub(plx_host_tensor *t, plx_host_tensor *parent,
                                                  const plx_tensor_info *info,
                                                  size_t byte_offset) {
    const plx_host *host = parent->host;
    plx_status s = plx_host_tensor_init(t, host, info, parent->allocation_alignment);
    if (s) {
        return s;
    }
    if (byte_offset > parent->bytes || t->bytes > parent->bytes - byte_offset) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "a sub-tensor of %zu bytes at offset %zu does not fit its "
                                   "parent of %zu bytes", t->bytes, byte_offset, parent->bytes);
    }
    if (t->element_size == 0 || byte_offset % t->element_size != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "sub-tensor offset %zu is not a multiple of the element "
                                   "size", byte_offset);
    }
    t->parent = parent;
    t->offset = byte_offset;
    return NULL;
}

/* Where the tensor's bytes are now; NULL when it has none. A workload looks
 * this up at each execution: an imported handle's memory may move between
 * executions (R-18 (6)). */
static inline void *plx_host_tensor_data(const plx_host_tensor *t) {
    if (t->parent) {
        char *base = (char *)plx_host_tensor_data(t->parent);
        return base ? base + t->offset : NULL;
    }
    return t->data;
}

/* allocate_tensor_handle (R-17 (2)): owned memory from host->alloc, once
 * (again: nothing to do). PLX_OUT_OF_MEMORY naming the size. */
static inline plx_status plx_host_tensor_allocate(plx_host_tensor *t) {
    if (t->owned) {
        return NULL;
    }
    t->owned = t->host->alloc(t->host, t->bytes ? t->bytes : 1, t->allocation_alignment);
    if (!t->owned) {
        return t->host->status_create(t->host, PLX_OUT_OF_MEMORY, "out of memory (%zu bytes)",
                                      t->bytes);
    }
    t->data = t->owned;
    return NULL;
}

/* release_tensor_handle (R-17 (2)): frees the owned memory (imported memory
 * is the caller's and stays in use until unimport). */
static inline void plx_host_tensor_release(plx_host_tensor *t) {
    if (t->data == t->owned) {
        t->data = NULL;
    }
    t->host->free(t->host, t->owned);
    t->owned = NULL;
}

/* map_tensor_handle (R-17 (4)): the memory itself (plain host memory needs
 * no copy; unmap has nothing to write back), which stays valid after the
 * unmap while it is allocated or imported, as memory_export_malloc
 * promises. PLX_FAILED_PRECONDITION when the tensor has no memory. */
static inline plx_status plx_host_tensor_map(const plx_host_tensor *t, void **out_data) {
    void *data = plx_host_tensor_data(t);
    if (!data) {
        return t->host->status_create(t->host, PLX_FAILED_PRECONDITION,
                                      "the tensor has no memory (neither allocated nor "
                                      "imported)");
    }
    *out_data = data;
    return NULL;
}

/* unimport_tensor_handle (R-17 (7)): unmaps an imported dma-buf (with
 * MAP_SHARED, what workloads wrote is in the buffer already) and goes back
 * to the owned memory, if any. No-op without an import. */
static inline void plx_host_tensor_unimport(plx_host_tensor *t) {
    if (t->mapping) {
        munmap(t->mapping, t->bytes);
        t->mapping = NULL;
    }
    t->data = t->owned;
}

/* import_tensor_handle (R-17 (6), R-22): makes `memory` the tensor's, in
 * place, zero copy, until unimport or the next import (which ends this
 * one first). The memory stays the caller's.
 *   - PLX_MEMORY_SOURCE_MALLOC: `memory` is a host pointer of at least the
 *     tensor's byte size, aligned to the element size;
 *   - PLX_MEMORY_SOURCE_DMA_BUF: `memory` points to an int holding a
 *     dma-buf (or memfd) descriptor whose first `size` bytes are the
 *     tensor; it is mapped shared, read and write, from offset 0 (the
 *     descriptor's value is read now, the caller keeps owning it, and it
 *     is never closed here) and unmapped at unimport.
 * PLX_INVALID_ARGUMENT, naming the fault, for memory smaller than the
 * tensor, a misaligned pointer, a descriptor that cannot be mapped, and
 * any other source ("memory source 4 (dma_buf_protected) is not
 * imported"); never a copy. */
static inline plx_status plx_host_tensor_import(plx_host_tensor *t, void *memory, size_t size,
                                                plx_memory_source source) {
    const plx_host *host = t->host;
    plx_host_tensor_unimport(t);
    if (source != PLX_MEMORY_SOURCE_MALLOC && source != PLX_MEMORY_SOURCE_DMA_BUF) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "memory source %u (%s) is not imported: host tensors import "
                                   "malloc and dma_buf memory", (unsigned)source,
                                   source == PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED
                                       ? "dma_buf_protected" : "unknown");
    }
    const char *what = source == PLX_MEMORY_SOURCE_MALLOC ? "imported memory" : "dma-buf";
    if (!memory || size < t->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%s of %zu bytes is smaller than the tensor's %zu", what,
                                   memory ? size : 0, t->bytes);
    }
    if (source == PLX_MEMORY_SOURCE_MALLOC) {
        if (t->element_size && (uintptr_t)memory % t->element_size != 0) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "imported memory at %p is not aligned to the element "
                                       "size (%zu bytes)", memory, t->element_size);
        }
        t->data = memory;
        return NULL;
    }
    int fd = *(const int *)memory;
    /* A descriptor whose size is known (a memfd, a dma-buf) must hold the
     * tensor: mapping past its end would fault at the first access. */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "dma-buf fd %d: %s", fd,
                                   strerror(errno));
    }
    if ((S_ISREG(st.st_mode) || st.st_size > 0) && (uintmax_t)st.st_size < t->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "dma-buf fd %d holds %jd bytes, the tensor's are %zu", fd,
                                   (intmax_t)st.st_size, t->bytes);
    }
    if (t->bytes == 0) {
        /* Nothing to map; any non-NULL address serves a tensor of no bytes. */
        t->data = t;
        return NULL;
    }
    void *map = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "cannot map dma-buf fd %d (%zu bytes): %s", fd, t->bytes,
                                   strerror(errno));
    }
    t->mapping = map;
    t->data = map;
    return NULL;
}

/* What destroy_tensor_handle does to the tensor: ends an import and frees
 * the owned memory. `t` itself is the caller's to free. */
static inline void plx_host_tensor_destroy(plx_host_tensor *t) {
    plx_host_tensor_unimport(t);
    plx_host_tensor_release(t);
}

/* ---- the tensor-handle group, ready made ---------------------------------- */

/* What the ready-made handle functions need from a factory: the first
 * member of the backend's `struct plx_factory`, set with
 * plx_host_tensor_factory_init in create_factory. */
typedef struct plx_host_tensor_factory {
    const plx_host *host;        /* the backend's (create's), valid until destroy */
    size_t allocation_alignment; /* of the handles' owned memory */
} plx_host_tensor_factory;

static inline void plx_host_tensor_factory_init(plx_host_tensor_factory *f, const plx_host *host,
                                                size_t allocation_alignment) {
    f->host = host;
    f->allocation_alignment = allocation_alignment;
}

/* A handle of the ready-made functions is a plx_host_tensor: the tensor of
 * a handle, for workloads (plx_host_tensor_data(plx_host_tensor_of(h)) is
 * where its bytes are). */
static inline plx_host_tensor *plx_host_tensor_of(plx_tensor_handle *handle) {
    return (plx_host_tensor *)(void *)handle;
}

/* create_tensor_handle (R-17 (1)): a plx_host_tensor from host->alloc,
 * without memory. Managed or not, the calls that follow are the same:
 * allocate for managed handles, import for the others. */
static inline plx_status plx_host_tensor_create_handle(plx_factory *factory,
                                                       const plx_tensor_info *info,
                                                       const plx_tensor_handle_params *params,
                                                       plx_tensor_handle **out_handle) {
    (void)params;
    const plx_host_tensor_factory *f = (const plx_host_tensor_factory *)(void *)factory;
    plx_host_tensor *t = (plx_host_tensor *)f->host->alloc(f->host, sizeof *t, 0);
    if (!t) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY,
                                      "out of memory (a tensor handle)");
    }
    plx_status s = plx_host_tensor_init(t, f->host, info, f->allocation_alignment);
    if (s) {
        f->host->free(f->host, t);
        return s;
    }
    *out_handle = (plx_tensor_handle *)(void *)t;
    return NULL;
}

/* create_sub_tensor_handle (R-17 (9)): the range of `parent` at
 * `byte_offset` (plx_host_tensor_init_sub). */
static inline plx_status plx_host_tensor_create_sub_handle(plx_factory *factory,
                                                           plx_tensor_handle *parent,
                                                           const plx_tensor_info *info,
                                                           size_t byte_offset,
                                                           plx_tensor_handle **out_handle) {
    const plx_host_tensor_factory *f = (const plx_host_tensor_factory *)(void *)factory;
    plx_host_tensor *t = (plx_host_tensor *)f->host->alloc(f->host, sizeof *t, 0);
    if (!t) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY,
                                      "out of memory (a sub-tensor handle)");
    }
    plx_status s = plx_host_tensor_init_sub(t, plx_host_tensor_of(parent), info, byte_offset);
    if (s) {
        f->host->free(f->host, t);
        return s;
    }
    *out_handle = (plx_tensor_handle *)(void *)t;
    return NULL;
}

/* destroy_tensor_handle (R-17 (8)): ends an import, frees the owned memory
 * and the handle. */
static inline void plx_host_tensor_destroy_handle(plx_tensor_handle *handle) {
    plx_host_tensor *t = plx_host_tensor_of(handle);
    const plx_host *host = t->host;
    plx_host_tensor_destroy(t);
    host->free(host, t);
}

/* allocate, release, map, unmap, import and unimport_tensor_handle: the
 * plx_host_tensor function of the same name on the handle's tensor, with
 * its contract (above). */
static inline plx_status plx_host_tensor_allocate_handle(plx_tensor_handle *handle) {
    return plx_host_tensor_allocate(plx_host_tensor_of(handle));
}

static inline void plx_host_tensor_release_handle(plx_tensor_handle *handle) {
    plx_host_tensor_release(plx_host_tensor_of(handle));
}

static inline plx_status plx_host_tensor_map_handle(plx_tensor_handle *handle, void **out_data) {
    return plx_host_tensor_map(plx_host_tensor_of(handle), out_data);
}

/* (unmap: host memory has nothing to write back.) */
static inline void plx_host_tensor_unmap_handle(plx_tensor_handle *handle) {
    (void)handle;
}

static inline plx_status plx_host_tensor_import_handle(plx_tensor_handle *handle, void *memory,
                                                       size_t size, plx_memory_source source) {
    return plx_host_tensor_import(plx_host_tensor_of(handle), memory, size, source);
}

static inline void plx_host_tensor_unimport_handle(plx_tensor_handle *handle) {
    plx_host_tensor_unimport(plx_host_tensor_of(handle));
}

/* The nine tensor-handle entries of a plx_backend_functions initializer
 * (C designated initializers), from create_tensor_handle to
 * create_sub_tensor_handle:
 *
 *     static const plx_backend_functions functions = {
 *         .struct_size = sizeof(plx_backend_functions),
 *         ...
 *         PLX_HOST_TENSOR_FUNCTIONS,
 *         .create_workload = ...,
 *     };
 *
 * create_sub_tensor_handle lies after execute_workload in the table: the
 * table's struct_size must reach it, or the host never sees it
 * (sizeof, the whole table of this SDK with NULL for what is not set,
 * reaches everything). */
#define PLX_HOST_TENSOR_FUNCTIONS                                   \
    .create_tensor_handle = plx_host_tensor_create_handle,          \
    .destroy_tensor_handle = plx_host_tensor_destroy_handle,        \
    .allocate_tensor_handle = plx_host_tensor_allocate_handle,      \
    .release_tensor_handle = plx_host_tensor_release_handle,        \
    .map_tensor_handle = plx_host_tensor_map_handle,                \
    .unmap_tensor_handle = plx_host_tensor_unmap_handle,            \
    .import_tensor_handle = plx_host_tensor_import_handle,          \
    .unimport_tensor_handle = plx_host_tensor_unimport_handle,      \
    .create_sub_tensor_handle = plx_host_tensor_create_sub_handle

/* The memory capabilities these handles deliver, as plx_capability
 * initializers for the backend's list: malloc and dma-buf import (R-17 (6),
 * R-22) and malloc export (map gives the memory itself, R-17 (4)). */
#define PLX_HOST_TENSOR_CAPABILITIES                                          \
    {.key = PLX_CAP_IMPORT_MALLOC, .type = PLX_VALUE_BOOL, .bool_value = true}, \
    {.key = PLX_CAP_IMPORT_DMA_BUF, .type = PLX_VALUE_BOOL, .bool_value = true}, \
    {.key = PLX_CAP_EXPORT_MALLOC, .type = PLX_VALUE_BOOL, .bool_value = true}

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_HOST_TENSOR_H */
