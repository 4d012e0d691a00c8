/* gpu_cuda: queued execution. A working memory's queue is one
 * non-blocking CUDA stream: enqueue_workload puts a layer's launches on it
 * and returns; queue_signal records a CUDA event after them, the fence; the
 * host waits on a fence (cudaEventSynchronize) only where a tensor leaves
 * the backend or the execution ends. Fences of this instance (its
 * fence_domain) that a workload must wait for become cudaStreamWaitEvent on
 * the queue's stream, so one queue waits for another on the device, without
 * the host.
 *
 * A fence owns its event and outlives its queue if the host destroys them
 * in that order: CUDA events do not belong to a stream. A failure while the
 * work runs is the CUDA context's (sticky, reported by every later call),
 * so a fence reports it without naming a layer of its own: it names the
 * last layer enqueued before it. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "cuda_backend.h"

struct plx_queue {
    plx_factory *factory;
    cudaStream_t stream;
    const char *last_layer; /* plx_enqueue_params.layer_name: valid while the network is loaded */
};

struct plx_fence {
    plx_backend *backend; /* whose fence: enqueue_workload takes only its own */
    const plx_host *host;
    int device;
    cudaEvent_t event;
    const char *last_layer; /* the last layer enqueued before it, or NULL */
};

plx_status gpu_cuda_create_queue(plx_factory *f, const plx_queue_params *params,
                                 plx_queue **out_queue) {
    (void)params;
    const plx_host *host = f->host;
    plx_queue *q = host->alloc(host, sizeof *q, 0);
    if (!q) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate the queue");
    }
    memset(q, 0, sizeof *q);
    q->factory = f;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking);
    }
    if (rc != cudaSuccess) {
        host->free(host, q);
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamCreateWithFlags (queue)");
    }
    *out_queue = q;
    return NULL;
}

/* The host destroys a queue once its work was waited on; should it not
 * have been (a failed queue_signal), the stream's work is finished first. */
void gpu_cuda_destroy_queue(plx_queue *q) {
    if (!q) {
        return;
    }
    cudaSetDevice(q->factory->device);
    cudaStreamSynchronize(q->stream);
    cudaStreamDestroy(q->stream);
    q->factory->host->free(q->factory->host, q);
}

plx_status gpu_cuda_enqueue_workload(plx_queue *q, const plx_enqueue_params *p) {
    plx_factory *f = q->factory;
    const plx_host *host = f->host;
    if (!p || p->struct_size < PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, layer_name) ||
        !p->workload) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "enqueue_workload: no workload, or parameters of %u bytes",
                                   p ? p->struct_size : 0u);
    }
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaSetDevice(%d)", f->device);
    }
    uint32_t waits = p->wait_fences ? p->wait_fence_count : 0;
    for (uint32_t i = 0; i < waits; i++) {
        const plx_fence *fence = p->wait_fences[i];
        if (!fence || fence->backend != f->backend) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "enqueue_workload: wait fence %u is not this gpu_cuda "
                                       "instance's",
                                       i);
        }
        rc = cudaStreamWaitEvent(q->stream, fence->event, 0);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamWaitEvent");
        }
    }
    plx_status s = gpu_cuda_workload_enqueue(p->workload, q->stream);
    if (!s) {
        q->last_layer = p->layer_name;
    }
    return s;
}

plx_status gpu_cuda_queue_signal(plx_queue *q, plx_fence **out_fence) {
    plx_factory *f = q->factory;
    const plx_host *host = f->host;
    plx_fence *fence = host->alloc(host, sizeof *fence, 0);
    if (!fence) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate a fence");
    }
    memset(fence, 0, sizeof *fence);
    fence->backend = f->backend;
    fence->host = host;
    fence->device = f->device;
    fence->last_layer = q->last_layer;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaEventCreateWithFlags(&fence->event, cudaEventDisableTiming);
        if (rc == cudaSuccess) {
            rc = cudaEventRecord(fence->event, q->stream);
            if (rc != cudaSuccess) {
                cudaEventDestroy(fence->event);
            }
        }
    }
    if (rc != cudaSuccess) {
        host->free(host, fence);
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "recording a fence (cudaEventRecord)");
    }
    *out_fence = fence;
    return NULL;
}

plx_status gpu_cuda_fence_wait(plx_fence *fence) {
    cudaError_t rc = cudaSetDevice(fence->device);
    if (rc == cudaSuccess) {
        rc = cudaEventSynchronize(fence->event);
    }
    if (rc == cudaSuccess) {
        return NULL;
    }
    if (fence->last_layer) {
        return gpu_cuda_failure(fence->host, rc, PLX_INTERNAL,
                                "the device failed in the work up to layer '%s'",
                                fence->last_layer);
    }
    return gpu_cuda_failure(fence->host, rc, PLX_INTERNAL, "the device failed");
}

plx_status gpu_cuda_fence_query(plx_fence *fence, bool *out_signalled) {
    cudaError_t rc = cudaSetDevice(fence->device);
    if (rc == cudaSuccess) {
        rc = cudaEventQuery(fence->event);
    }
    if (rc == cudaSuccess || rc == cudaErrorNotReady) {
        *out_signalled = rc == cudaSuccess;
        return NULL;
    }
    /* The work failed: signalled, and fence_wait gives the verdict. */
    *out_signalled = true;
    return NULL;
}

void gpu_cuda_destroy_fence(plx_fence *fence) {
    if (!fence) {
        return;
    }
    cudaSetDevice(fence->device);
    cudaEventDestroy(fence->event);
    fence->host->free(fence->host, fence);
}
