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
 * planned tensor), maps and unmaps the wrapper first, which is where OpenCL
 * makes a CL_MEM_USE_HOST_PTR buffer's contents visible in the host memory
 * (R-17 (7)); a device that computes in place (PoCL, integrated GPUs) does
 * nothing then. */
void ocl_unimport_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (!h->imported) {
        return;
    }
    if (h->written && h->bytes > 0 && h->mem) {
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

