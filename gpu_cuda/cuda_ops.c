/* gpu_cuda's data-movement, pooling, resize and normalisation layers:
 * what runs (the geometry of cuda_geometry.c), the workloads' plans and
 * their launches (cuda_kernels_data.cu, cuda_kernels_norm.cu).
 * cuda_workload.c dispatches to these for the ops gpu_cuda_ops_runs names.
 *
 * reshape, flatten, squeeze and unsqueeze copy the bytes (nothing when the
 * output is the input's memory); global_pool is a reduction over the
 * spatial dims (the reduce kernel), but for lp of a p other than 1 and 2,
 * one pool window; resize's taps are planned on the host and copied to
 * the device at create_workload. A gather index out of range is an
 * execution error: the kernel raises a flag in device memory, which
 * execute_workload reads after its wait; queued (cuda_queue.c), where
 * nothing waits, such an index reads zero bytes instead. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "cuda_workload.h"
#include "cuda_geometry.h"

bool gpu_cuda_ops_runs(plx_op op) {
    switch (op) {
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_TRANSPOSE:
    case PLX_OP_SLICE:
    case PLX_OP_EXPAND:
    case PLX_OP_TILE:
    case PLX_OP_CONCAT:
    case PLX_OP_SPLIT:
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH:
    case PLX_OP_PAD:
    case PLX_OP_GATHER:
    case PLX_OP_WHERE:
    case PLX_OP_CAST:
    case PLX_OP_POOL:
    case PLX_OP_GLOBAL_POOL:
    case PLX_OP_RESIZE:
    case PLX_OP_LAYER_NORM:
    case PLX_OP_INSTANCE_NORM:
    case PLX_OP_BATCH_NORM:
        return true;
    default:
        return false;
    }
}

uint32_t gpu_cuda_ops_view_count(const plx_layer_view *l) {
    switch (l->op) {
    case PLX_OP_TRANSPOSE:
    case PLX_OP_SLICE:
    case PLX_OP_EXPAND:
    case PLX_OP_TILE:
    case PLX_OP_CONCAT:
    case PLX_OP_SPLIT:
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH:
        return ck_view_count(l);
    default:
        return 0;
    }
}

/* Whether a global_pool runs as a reduction over the spatial dims (the
 * reduce kernel, a thread block per output): average, max, and lp with p 1
 * or 2; else (lp with another p) as one pool window per output. */
static bool global_pool_reduces(const plx_layer_view *l, ck_reduce *func) {
    const plx_global_pool_desc *d = l->desc;
    switch (d->kind) {
    case PLX_POOL_AVERAGE: *func = CK_R_MEAN; return true;
    case PLX_POOL_MAX: *func = CK_R_MAX; return true;
    default:
        *func = d->p == 1 ? CK_R_L1 : CK_R_L2;
        return d->p == 1 || d->p == 2;
    }
}

/* global_pool as a reduction of X [N, C, spatial...] over the spatial
 * dims (ck_geom_global_pool checked it): N * C outputs of the spatial
 * product each. */
static void global_pool_geometry(const plx_layer_view *l, ck_reduce_geometry *g) {
    const plx_tensor_info *x = &l->inputs[0];
    int64_t spatial = 1;
    for (uint32_t i = 2; i < x->rank; i++) {
        spatial *= x->dims[i];
    }
    memset(g, 0, sizeof *g);
    g->kept_rank = 1;
    g->kept_dims[0] = x->dims[0] * x->dims[1];
    g->kept_strides[0] = spatial;
    g->red_rank = 1;
    g->red_dims[0] = spatial;
    g->red_strides[0] = 1;
    g->outputs = g->kept_dims[0];
    g->reduced = spatial;
}

const char *gpu_cuda_ops_check(const plx_layer_view *l, char *buf, size_t size) {
    switch (l->op) {
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
        return ck_geom_same_bytes(l, buf, size);
    case PLX_OP_PAD: return ck_geom_pad(l, NULL, buf, size);
    case PLX_OP_GATHER: return ck_geom_gather(l, NULL, buf, size);
    case PLX_OP_WHERE: return ck_geom_where(l, NULL, buf, size);
    case PLX_OP_CAST: return ck_geom_cast(l, buf, size);
    case PLX_OP_POOL: return ck_geom_pool(l, NULL, buf, size);
    case PLX_OP_RESIZE: return ck_geom_resize(l, NULL, NULL, buf, size);
    case PLX_OP_GLOBAL_POOL: {
        ck_reduce f;
        ck_pool g;
        return ck_geom_global_pool(l, global_pool_reduces(l, &f) ? NULL : &g, buf, size);
    }
    case PLX_OP_LAYER_NORM:
    case PLX_OP_INSTANCE_NORM: return ck_geom_norm(l, NULL, buf, size);
    case PLX_OP_BATCH_NORM: return ck_geom_batch_norm(l, NULL, buf, size);
    default: return ck_geom_views(l, NULL, buf, size);
    }
}

static ck_dtype cast_dtype(plx_dtype t) {
    switch (t) {
    case PLX_DTYPE_FLOAT16: return CK_DT_F16;
    case PLX_DTYPE_INT32: return CK_DT_I32;
    case PLX_DTYPE_INT64: return CK_DT_I64;
    case PLX_DTYPE_BOOL: return CK_DT_BOOL;
    default: return CK_DT_F32;
    }
}

/* resize's taps, planned on the host and copied to the device once. */
static plx_status resize_plan(plx_workload *w, const plx_layer_view *l) {
    const plx_host *host = w->factory->host;
    char buf[256];
    const char *why = ck_geom_resize(l, &w->geom.resize, NULL, buf, sizeof buf);
    if (why) {
        return host->status_create(host, PLX_UNSUPPORTED, "%s", why);
    }
    size_t bytes = (size_t)(w->geom.resize.out_h + w->geom.resize.out_w) * sizeof(ck_resize_tap);
    if (bytes == 0) {
        return NULL;
    }
    ck_resize_tap *taps = host->alloc(host, bytes, 0);
    if (!taps) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory (resize's taps)");
    }
    ck_geom_resize(l, &w->geom.resize, taps, buf, sizeof buf);
    cudaError_t rc = cudaMalloc((void **)&w->taps, bytes);
    const char *call = "cudaMalloc (resize's taps)";
    if (rc == cudaSuccess) {
        call = "cudaMemcpy (resize's taps)";
        rc = cudaMemcpy(w->taps, taps, bytes, cudaMemcpyHostToDevice);
    } else {
        w->taps = NULL;
    }
    host->free(host, taps);
    return rc == cudaSuccess ? NULL
                             : gpu_cuda_failure(host, rc, rc == cudaErrorMemoryAllocation
                                                              ? PLX_OUT_OF_MEMORY
                                                              : PLX_INTERNAL, "%s", call);
}

plx_status gpu_cuda_ops_create(plx_workload *w, const plx_layer_view *l) {
    const plx_host *host = w->factory->host;
    char buf[256];
    const char *why = NULL;
    w->elem = ck_copy_size(l->outputs[0].dtype);
    switch (l->op) {
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
        w->kind = WK_COPY;
        break;
    case PLX_OP_PAD:
        w->kind = WK_PAD;
        why = ck_geom_pad(l, &w->geom.pad, buf, sizeof buf);
        break;
    case PLX_OP_GATHER: {
        w->kind = WK_GATHER;
        why = ck_geom_gather(l, &w->geom.gather, buf, sizeof buf);
        cudaError_t rc = why ? cudaSuccess : cudaMalloc((void **)&w->bad, sizeof(int));
        if (rc != cudaSuccess) {
            w->bad = NULL;
            return gpu_cuda_failure(host, rc, PLX_OUT_OF_MEMORY, "cudaMalloc (gather's flag)");
        }
        w->gather_axis = ((const plx_axis_desc *)l->desc)->axis;
        break;
    }
    case PLX_OP_WHERE:
        w->kind = WK_WHERE;
        why = ck_geom_where(l, &w->geom.where, buf, sizeof buf);
        break;
    case PLX_OP_CAST:
        w->kind = WK_CAST;
        w->cast_from = cast_dtype(l->inputs[0].dtype);
        w->cast_to = cast_dtype(l->outputs[0].dtype);
        break;
    case PLX_OP_POOL:
        w->kind = WK_POOL;
        why = ck_geom_pool(l, &w->geom.pool, buf, sizeof buf);
        break;
    case PLX_OP_RESIZE:
        w->kind = WK_RESIZE;
        return resize_plan(w, l);
    case PLX_OP_GLOBAL_POOL:
        if (global_pool_reduces(l, &w->reduce)) {
            w->kind = WK_REDUCE;
            why = ck_geom_global_pool(l, NULL, buf, sizeof buf);
            global_pool_geometry(l, &w->reduce_geometry);
        } else {
            w->kind = WK_POOL;
            why = ck_geom_global_pool(l, &w->geom.pool, buf, sizeof buf);
        }
        break;
    case PLX_OP_LAYER_NORM:
    case PLX_OP_INSTANCE_NORM:
        w->kind = WK_NORM;
        why = ck_geom_norm(l, &w->geom.norm, buf, sizeof buf);
        break;
    case PLX_OP_BATCH_NORM:
        w->kind = WK_BATCH_NORM;
        why = ck_geom_batch_norm(l, &w->geom.batch_norm, buf, sizeof buf);
        break;
    default:
        w->kind = WK_VIEWS;
        why = ck_geom_views(l, w->views, buf, sizeof buf);
        break;
    }
    return why ? host->status_create(host, PLX_UNSUPPORTED, "%s", why) : NULL;
}

cudaError_t gpu_cuda_ops_enqueue(plx_workload *w, cudaStream_t stream, const char **what) {
    const void *x = w->inputs[0]->dev;
    void *y = w->outputs[0]->dev;
    switch (w->kind) {
    case WK_VIEWS:
        for (uint32_t i = 0; i < w->view_count; i++) {
            const ck_view *v = &w->views[i];
            cudaError_t rc = ck_view_launch(stream, w->inputs[v->src_slot]->dev,
                                            w->outputs[v->dst_slot]->dev, w->elem, v);
            if (rc != cudaSuccess) {
                return rc;
            }
        }
        return cudaSuccess;
    case WK_PAD: return ck_pad_launch(stream, x, y, w->elem, &w->geom.pad);
    case WK_GATHER: {
        *what = "cudaMemsetAsync (gather's flag)";
        cudaError_t rc = cudaMemsetAsync(w->bad, 0, sizeof(int), stream);
        if (rc != cudaSuccess) {
            return rc;
        }
        *what = "launch";
        return ck_gather_launch(stream, x, w->inputs[1]->dev, y, w->elem, &w->geom.gather,
                                w->bad);
    }
    case WK_WHERE:
        return ck_where_launch(stream, x, w->inputs[1]->dev, w->inputs[2]->dev, y, w->elem,
                               &w->geom.where);
    case WK_CAST: return ck_cast_launch(stream, w->cast_from, w->cast_to, x, y, w->count);
    case WK_POOL:
        return ck_pool_launch(stream, x, y, w->output_count > 1 ? w->outputs[1]->dev : NULL,
                              &w->geom.pool);
    case WK_RESIZE: return ck_resize_launch(stream, x, y, w->taps, &w->geom.resize);
    case WK_NORM:
        return ck_norm_launch(stream, x, w->inputs[1]->dev,
                              w->geom.norm.has_bias ? w->inputs[2]->dev : NULL, y,
                              &w->geom.norm);
    case WK_BATCH_NORM:
        return ck_batch_norm_launch(stream, x, w->inputs[1]->dev, w->inputs[2]->dev,
                                    w->inputs[3]->dev, w->inputs[4]->dev, y,
                                    &w->geom.batch_norm);
    default:
        *what = "dispatch";
        return cudaErrorInvalidValue;
    }
}

plx_status gpu_cuda_ops_after_wait(plx_workload *w) {
    if (w->kind != WK_GATHER || w->geom.gather.count == 0) {
        return NULL;
    }
    int bad = 0;
    cudaError_t rc = cudaMemcpy(&bad, w->bad, sizeof bad, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(w->factory->host, rc, PLX_INTERNAL,
                                "cudaMemcpy (gather's flag)");
    }
    if (bad) {
        return w->factory->host->status_create(
            w->factory->host, PLX_INVALID_ARGUMENT,
            "layer '%s' (gather): an index is out of range for axis %d of size %lld",
            w->layer_name, w->gather_axis,
            (long long)w->geom.gather.axis_dim);
    }
    return NULL;
}
