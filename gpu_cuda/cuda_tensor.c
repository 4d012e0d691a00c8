/* gpu_cuda's tensor handles (cuda_backend.h, struct plx_tensor_handle):
 * device memory, owned (managed handles, cudaMalloc) or bound in place
 * a planned buffer of the backend's, or an application's device
 * pointer, both of kind GPU_CUDA_DEVICE_PTR_KIND), and the pinned staging
 * through which the host reads and writes them (map, unmap). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <string.h>

#include "cuda_backend.h"

/* cudaMalloc's alignment, which the runtime documents as at least 256
 * bytes: planned buffers need no more than that. */
#define GPU_CUDA_MALLOC_ALIGNMENT 256u

plx_status gpu_cuda_create_tensor_handle(plx_factory *f, const plx_tensor_info *info,
                                         const plx_tensor_handle_params *params,
                                         plx_tensor_handle **out_handle) {
    const plx_host *host = f->host;
    size_t bytes = 0;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "tensor too large");
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
    h->managed = params->managed;
    *out_handle = h;
    return NULL;
}

static void free_staging(plx_tensor_handle *h) {
    if (h->staging) {
        cudaFreeHost(h->staging);
        h->staging = NULL;
    }
}

void gpu_cuda_release_tensor_handle(plx_tensor_handle *h) {
    if (h->owns && h->dev) {
        cudaSetDevice(h->factory->device);
        cudaFree(h->dev);
    }
    h->dev = NULL;
    h->owns = false;
    h->constant = false;
    free_staging(h);
}

void gpu_cuda_destroy_tensor_handle(plx_tensor_handle *h) {
    if (!h) {
        return;
    }
    gpu_cuda_release_tensor_handle(h);
    pthread_mutex_destroy(&h->lock);
    h->factory->host->free(h->factory->host, h);
}

plx_status gpu_cuda_allocate_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (h->dev || h->bytes == 0) {
        return NULL;
    }
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaMalloc(&h->dev, h->bytes);
    }
    if (rc != cudaSuccess) {
        h->dev = NULL;
        return gpu_cuda_failure(f->host, rc, PLX_OUT_OF_MEMORY, "cudaMalloc(%zu bytes)",
                                h->bytes);
    }
    h->owns = true;
    return NULL;
}

/* Copies between the handle's device memory and its staging on the
 * factory's copy stream, and waits for the copy. */
static cudaError_t copy_and_wait(plx_tensor_handle *h, bool to_host) {
    plx_factory *f = h->factory;
    cudaError_t rc = cudaMemcpyAsync(to_host ? h->staging : h->dev,
                                     to_host ? h->dev : h->staging, h->bytes,
                                     to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                                     f->copy_stream);
    return rc == cudaSuccess ? cudaStreamSynchronize(f->copy_stream) : rc;
}

plx_status gpu_cuda_map_tensor_handle(plx_tensor_handle *h, void **out_data) {
    plx_factory *f = h->factory;
    if (h->bytes == 0) {
        *out_data = h->empty_view;
        return NULL;
    }
    if (!h->dev) {
        return f->host->status_create(f->host, PLX_INVALID_ARGUMENT,
                                      "the tensor handle has no memory to map");
    }
    pthread_mutex_lock(&h->lock);
    plx_status s = NULL;
    if (h->map_count == 0) {
        cudaError_t rc = cudaSetDevice(f->device);
        const char *call = "cudaSetDevice";
        if (rc == cudaSuccess && !h->staging) {
            call = "cudaMallocHost";
            rc = cudaMallocHost(&h->staging, h->bytes);
            if (rc != cudaSuccess) {
                h->staging = NULL;
            }
        }
        if (rc == cudaSuccess) {
            call = "cudaMemcpyAsync (device to host)";
            rc = copy_and_wait(h, true);
        }
        if (rc != cudaSuccess) {
            s = gpu_cuda_failure(f->host, rc, PLX_INTERNAL, "mapping %zu bytes: %s", h->bytes,
                                 call);
        }
    }
    if (!s) {
        h->map_count++;
        *out_data = h->staging;
    }
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* The host may have written the staging: the last unmap copies it back,
 * except for a constant's output, which is read-only (and which other
 * executions' kernels may be reading meanwhile). unmap cannot report a
 * failure: it is logged, and the next execution's kernels report the
 * device's state. */
void gpu_cuda_unmap_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (h->bytes == 0) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    if (h->map_count > 0 && --h->map_count == 0 && !h->constant && h->dev) {
        cudaError_t rc = cudaSetDevice(f->device);
        if (rc == cudaSuccess) {
            rc = copy_and_wait(h, false);
        }
        if (rc != cudaSuccess) {
            f->host->log(f->host, PLX_LOG_ERROR,
                         "gpu_cuda: copying %zu mapped bytes back to the device failed: %s",
                         h->bytes, cudaGetErrorString(rc));
        }
    }
    pthread_mutex_unlock(&h->lock);
}

void gpu_cuda_unimport_tensor_handle(plx_tensor_handle *h) {
    if (!h->owns) {
        h->dev = NULL;
    }
}

plx_status gpu_cuda_allocate_planned_buffer(plx_factory *f,
                                            const plx_planned_buffer_params *params,
                                            plx_external_memory *out_memory) {
    const plx_host *host = f->host;
    if (params->alignment > GPU_CUDA_MALLOC_ALIGNMENT) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "planned buffer %u asks for %" PRIu64 "-byte alignment; "
                                   "cudaMalloc gives %u",
                                   params->buffer, params->alignment, GPU_CUDA_MALLOC_ALIGNMENT);
    }
    if (params->size > SIZE_MAX) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "planned buffer %u: %" PRIu64
                                   " bytes do not fit in size_t", params->buffer, params->size);
    }
    void *p = NULL;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaMalloc(&p, (size_t)params->size);
    }
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_OUT_OF_MEMORY, "cudaMalloc(%" PRIu64 " bytes)",
                                params->size);
    }
    out_memory->kind = GPU_CUDA_DEVICE_PTR_KIND;
    out_memory->handle = p;
    out_memory->fd = -1;
    out_memory->offset = 0;
    out_memory->size = params->size;
    out_memory->release = NULL;
    out_memory->release_data = NULL;
    return NULL;
}

void gpu_cuda_free_planned_buffer(plx_factory *f, const plx_external_memory *memory) {
    if (memory->handle) {
        cudaSetDevice(f->device);
        cudaFree(memory->handle);
    }
}

/* Binds bytes [offset, offset + size) of a device allocation: a planned
 * buffer of ours or an application's device pointer, which must be device
 * memory of this instance's device, aligned to the element types we read
 * (4 bytes: float32). */
plx_status gpu_cuda_import_external_memory(plx_tensor_handle *h,
                                           const plx_external_memory *memory) {
    plx_factory *f = h->factory;
    const plx_host *host = f->host;
    if (h->managed) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "the tensor handle is managed: it takes no external memory");
    }
    if (!memory->kind || strcmp(memory->kind, GPU_CUDA_DEVICE_PTR_KIND) != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "memory of kind '%s': gpu_cuda imports only '%s'",
                                   memory->kind ? memory->kind : "(none)",
                                   GPU_CUDA_DEVICE_PTR_KIND);
    }
    if (!memory->handle) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "memory of kind '%s' with a NULL device pointer",
                                   GPU_CUDA_DEVICE_PTR_KIND);
    }
    if (memory->size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%" PRIu64 " bytes of device memory for a tensor of %zu bytes",
                                   memory->size, h->bytes);
    }
    uintptr_t addr = (uintptr_t)memory->handle + (uintptr_t)memory->offset;
    if (addr % 4u != 0) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "device pointer %p + offset %" PRIu64
                                   " is not aligned to 4 bytes",
                                   memory->handle, memory->offset);
    }
    struct cudaPointerAttributes attr;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaPointerGetAttributes(&attr, memory->handle);
    }
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INVALID_ARGUMENT, "cudaPointerGetAttributes(%p)",
                                memory->handle);
    }
    if (attr.type != cudaMemoryTypeDevice || attr.device != f->device) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%p is not device memory of CUDA device %d (type %d, device %d)",
                                   memory->handle, f->device, (int)attr.type, attr.device);
    }
    if (h->owns) {
        gpu_cuda_release_tensor_handle(h);
    }
    h->dev = (void *)addr;
    h->owns = false;
    return NULL;
}
