/* gpu_opencl: tensor handles on cl_mem buffers, managed or wrapping imported
 * host memory in place; apart from workloads since their map and import
 * rules (and locking) are the subtle part of the backend. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl_backend.h"

/* ------------------------------------------------------------------------ */
/* Tensor handles                                                      */
/* ------------------------------------------------------------------------ */
plx_status ocl_create_tensor_handle(plx_factory *f, const plx_tensor_info *info,
                                                  const plx_tensor_handle_params *params,
                                                  plx_tensor_handle **out_handle) {
    const plx_host *host = f->host;
    size_t bytes = 0;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "invalid tensor info (dtype %d, rank %u)", (int)info->dtype,
                                   info->rank);
    }
    plx_tensor_handle *h = host->alloc(host, sizeof *h, 0);
    if (!h) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(h, 0, sizeof *h);
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        host->free(host, h);
        return host->status_create(host, PLX_INTERNAL, "pthread_mutex_init failed");
    }
    h->factory = f;
    h->bytes = bytes;
    h->element_size = plx_dtype_size(info->dtype);
    h->managed = params->managed;
    *out_handle = h;
    return NULL;
}

static void drop_memory(plx_tensor_handle *h) {
    if (h->owns_mem && h->mem) {
        clReleaseMemObject(h->mem);
    }
    h->mem = NULL;
    h->owns_mem = false;
    h->has_memory = false;
    h->imported = false;
    h->external = false;
    h->import_ptr = NULL;
    h->map_count = 0;
    h->map_ptr = NULL;
}

plx_status ocl_allocate_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (h->has_memory) {
        return NULL;
    }
    if (h->bytes == 0) {
        h->mem = f->empty;
        h->owns_mem = false;
        h->has_memory = true;
        return NULL;
    }
    cl_int rc = CL_SUCCESS;
    cl_mem m = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE, h->bytes, NULL, &rc);
    if (rc != CL_SUCCESS || !m) {
        return ocl_cl_failure(f->host, rc, PLX_INTERNAL, "clCreateBuffer(%zu bytes)", h->bytes);
    }
    h->mem = m;
    h->owns_mem = true;
    h->has_memory = true;
    return NULL;
}

void ocl_release_tensor_handle(plx_tensor_handle *h) {
    if (h->has_memory && !h->imported) {
        drop_memory(h);
    }
}

plx_status ocl_map_tensor_handle(plx_tensor_handle *h, void **out_data) {
    plx_factory *f = h->factory;
    plx_status s = NULL;
    pthread_mutex_lock(&h->lock);
    if (!h->has_memory) {
        s = f->host->status_create(f->host, PLX_FAILED_PRECONDITION,
                                   "the tensor has no memory (neither allocated nor imported)");
    } else if (h->bytes == 0) {
        h->map_count++;
        *out_data = h->empty_view;
    } else {
        if (h->map_count == 0) {
            /* Workloads finish (clFinish) before execute_workload returns,
             * and the host maps only between them (R-17 (5)): the blocking
             * map sees every result. A constant is only read once computed
             * (R-20 (4)), so mapping it never blocks kernels reading it. */
            cl_map_flags flags = h->constant ? CL_MAP_READ : (CL_MAP_READ | CL_MAP_WRITE);
            cl_int rc = CL_SUCCESS;
            void *p = clEnqueueMapBuffer(f->map_queue, h->mem, CL_TRUE, flags, 0, h->bytes, 0,
                                         NULL, NULL, &rc);
            if (rc != CL_SUCCESS || !p) {
                s = ocl_cl_failure(f->host, rc, PLX_INTERNAL, "clEnqueueMapBuffer(%zu bytes)",
                               h->bytes);
            } else {
                h->map_ptr = p;
            }
        }
        if (!s) {
            h->map_count++;
            *out_data = h->map_ptr;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* Ends a mapping and waits for it, so that what the host wrote is what the
 * next kernel reads, on whichever queue it runs. */
static cl_int unmap_now(plx_tensor_handle *h, void *ptr) {
    plx_factory *f = h->factory;
    cl_event ev = NULL;
    cl_int rc = clEnqueueUnmapMemObject(f->map_queue, h->mem, ptr, 0, NULL, &ev);
    if (rc == CL_SUCCESS) {
        rc = clWaitForEvents(1, &ev);
    }
    if (ev) {
        clReleaseEvent(ev);
    }
    return rc;
}

void ocl_unmap_tensor_handle(plx_tensor_handle *h) {
    pthread_mutex_lock(&h->lock);
    if (h->map_count > 0 && --h->map_count == 0 && h->bytes > 0 && h->map_ptr) {
        cl_int rc = unmap_now(h, h->map_ptr);
        if (rc != CL_SUCCESS) {
            char nb[32];
            h->factory->host->log(h->factory->host, PLX_LOG_WARN,
                                  "gpu_opencl: clEnqueueUnmapMemObject(%zu bytes): %s", h->bytes,
                                  ocl_error_name(rc, nb, sizeof nb));
        }
        h->map_ptr = NULL;
    }
    pthread_mutex_unlock(&h->lock);
}

/* Ends an import: when a workload wrote the handle (an exported output, a
 * planned tensor in host memory), maps and unmaps the wrapper first, which
 * is where OpenCL makes a CL_MEM_USE_HOST_PTR buffer's contents visible in
 * the host memory (R-17 (7)); a device that computes in place (PoCL,
 * integrated GPUs) does nothing then. A binding to a planned device buffer
 * has no host memory to update: its sub-buffer (or retained buffer)
 * is released, the planned buffer lives on until free_planned_buffer. */
void ocl_unimport_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (!h->imported) {
        return;
    }
    if (!h->external && h->written && h->bytes > 0 && h->mem) {
        cl_int rc = CL_SUCCESS;
        void *p = clEnqueueMapBuffer(f->map_queue, h->mem, CL_TRUE, CL_MAP_READ, 0, h->bytes, 0,
                                     NULL, NULL, &rc);
        if (rc == CL_SUCCESS && p) {
            rc = unmap_now(h, p);
        }
        if (rc != CL_SUCCESS) {
            char nb[32];
            f->host->log(f->host, PLX_LOG_WARN,
                         "gpu_opencl: unimport: synchronising %zu bytes at %p: %s", h->bytes,
                         h->import_ptr, ocl_error_name(rc, nb, sizeof nb));
        }
    }
    drop_memory(h);
}

/* Imports host memory in place with CL_MEM_USE_HOST_PTR. The pointer must be
 * aligned to the device's base address alignment, capped at the 64 bytes
 * the host's plans guarantee (R-21 (5)): such memory is used in place by
 * devices that share host memory. Less aligned memory is refused
 * (PLX_INVALID_ARGUMENT), never copied (R-17 (6)). */
plx_status ocl_import_tensor_handle(plx_tensor_handle *h, void *memory, size_t size,
                                                  plx_memory_source source) {
    plx_factory *f = h->factory;
    const plx_host *host = f->host;
    ocl_unimport_tensor_handle(h);
    if (h->has_memory) {
        /* The host imports into unmanaged handles only (R-17 (3)). */
        return host->status_create(host, PLX_FAILED_PRECONDITION,
                                   "cannot import into a tensor that holds allocated memory");
    }
    if (source != PLX_MEMORY_SOURCE_MALLOC) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "gpu_opencl imports malloc memory only, not source %d",
                                   (int)source);
    }
    if (!memory || size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "imported memory of %zu bytes is smaller than the tensor's %zu",
                                   memory ? size : 0, h->bytes);
    }
    size_t align = f->import_alignment > h->element_size ? f->import_alignment : h->element_size;
    if (align > 1 && (uintptr_t)memory % align != 0) {
        size_t has = 1;
        while (has < align && (uintptr_t)memory % (has * 2) == 0) {
            has *= 2;
        }
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "imported memory at %p is aligned to %zu bytes; gpu_opencl "
                                   "imports memory aligned to %zu (import_alignment)",
                                   memory, has, align);
    }
    if (h->bytes == 0) {
        h->mem = f->empty;
        h->owns_mem = false;
    } else {
        cl_int rc = CL_SUCCESS;
        cl_mem m = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                  h->bytes, memory, &rc);
        if (rc != CL_SUCCESS || !m) {
            plx_status s = ocl_cl_failure(host, rc, PLX_INVALID_ARGUMENT,
                                      "clCreateBuffer(%zu bytes, CL_MEM_USE_HOST_PTR %p)",
                                      h->bytes, memory);
            return s;
        }
        h->mem = m;
        h->owns_mem = true;
    }
    h->imported = true;
    h->import_ptr = memory;
    h->has_memory = true;
    return NULL;
}

void ocl_destroy_tensor_handle(plx_tensor_handle *h) {
    const plx_host *host = h->factory->host;
    if (h->imported) {
        ocl_unimport_tensor_handle(h);
    }
    drop_memory(h);
    pthread_mutex_destroy(&h->lock);
    host->free(host, h);
}


/* ------------------------------------------------------------------------ */
/* Planned device memory                                               */
/* ------------------------------------------------------------------------ */

/* One buffer of the memory plan, with planned_memory=device: a cl_mem of
 * the plan buffer's size, described as GPU_OPENCL_CL_MEM_KIND at offset 0.
 * The host binds each planned handle to a place in it
 * (ocl_import_external_memory). Its places are multiples of the device's
 * base address alignment, since import_alignment reports it in this mode
 * (gpu_opencl_backend.c); that, not the buffer's address, is what
 * params->alignment comes to for a cl_mem, which kernels reach only
 * through the object. */
plx_status ocl_allocate_planned_buffer(plx_factory *f, const plx_planned_buffer_params *params,
                                       plx_external_memory *out_memory) {
    const plx_host *host = f->host;
    if (!f->planned_device) {
        return host->status_create(host, PLX_FAILED_PRECONDITION,
                                   "gpu_opencl allocates planned buffers only with "
                                   "planned_memory=device");
    }
    if (params->size == 0 || params->size > (uint64_t)SIZE_MAX) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "a planned buffer of %" PRIu64 " bytes cannot be a cl_mem",
                                   params->size);
    }
    size_t size = (size_t)params->size;
    cl_int rc = CL_SUCCESS;
    cl_mem m = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE, size, NULL, &rc);
    if (rc != CL_SUCCESS || !m) {
        /* Too large for one allocation of the device is running out of
         * memory as well; ocl_cl_failure maps the other memory errors. */
        return ocl_cl_failure(host, rc,
                              rc == CL_INVALID_BUFFER_SIZE ? PLX_OUT_OF_MEMORY : PLX_INTERNAL,
                              "clCreateBuffer(%zu bytes, planned buffer %u of network %u)", size,
                              params->buffer, params->network_id);
    }
    out_memory->kind = GPU_OPENCL_CL_MEM_KIND;
    out_memory->handle = m;
    out_memory->fd = -1;
    out_memory->offset = 0;
    out_memory->size = params->size;
    out_memory->release = NULL;
    out_memory->release_data = NULL;
    return NULL;
}

void ocl_free_planned_buffer(plx_factory *f, const plx_external_memory *memory) {
    (void)f;
    if (memory->kind && strcmp(memory->kind, GPU_OPENCL_CL_MEM_KIND) == 0 && memory->handle) {
        clReleaseMemObject((cl_mem)memory->handle);
    }
}

/* Binds a planned handle to bytes [offset, offset + size) of a planned
 * buffer: the buffer itself (retained) at offset 0, else a sub-buffer of
 * the tensor's bytes there. Mapping the handle maps that sub-buffer, as
 * for a managed handle (ocl_map_tensor_handle); unimport releases it. */
plx_status ocl_import_external_memory(plx_tensor_handle *h, const plx_external_memory *memory) {
    plx_factory *f = h->factory;
    const plx_host *host = f->host;
    ocl_unimport_tensor_handle(h);
    if (h->has_memory) {
        return host->status_create(host, PLX_FAILED_PRECONDITION,
                                   "cannot import into a tensor that holds allocated memory");
    }
    if (!memory->kind || strcmp(memory->kind, GPU_OPENCL_CL_MEM_KIND) != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "gpu_opencl imports external memory of kind '"
                                   GPU_OPENCL_CL_MEM_KIND "' only, not '%s'",
                                   memory->kind ? memory->kind : "(null)");
    }
    if (!memory->handle) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "external memory of kind '" GPU_OPENCL_CL_MEM_KIND
                                   "' without a cl_mem");
    }
    if (memory->size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "external memory of %" PRIu64
                                   " bytes is smaller than the tensor's %zu",
                                   memory->size, h->bytes);
    }
    cl_mem buffer = (cl_mem)memory->handle;
    if (h->bytes == 0) {
        h->mem = f->empty;
        h->owns_mem = false;
    } else if (memory->offset == 0) {
        cl_int rc = clRetainMemObject(buffer);
        if (rc != CL_SUCCESS) {
            return ocl_cl_failure(host, rc, PLX_INVALID_ARGUMENT,
                                  "clRetainMemObject(planned buffer %p)", (void *)buffer);
        }
        h->mem = buffer;
        h->owns_mem = true;
    } else {
        if (memory->offset > (uint64_t)SIZE_MAX ||
            (f->base_align > 1 && memory->offset % f->base_align != 0)) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "external memory at offset %" PRIu64
                                       " is not a multiple of the device's base address "
                                       "alignment (%zu bytes), which a sub-buffer's origin "
                                       "must be",
                                       memory->offset, f->base_align);
        }
        cl_buffer_region region = {(size_t)memory->offset, h->bytes};
        cl_int rc = CL_SUCCESS;
        cl_mem m = clCreateSubBuffer(buffer, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                     &region, &rc);
        if (rc != CL_SUCCESS || !m) {
            return ocl_cl_failure(host, rc, PLX_INVALID_ARGUMENT,
                                  "clCreateSubBuffer(offset %zu, %zu bytes)", region.origin,
                                  region.size);
        }
        h->mem = m;
        h->owns_mem = true;
    }
    h->imported = true;
    h->external = true;
    h->import_ptr = NULL;
    h->has_memory = true;
    return NULL;
}
