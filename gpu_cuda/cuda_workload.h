/* gpu_cuda's workload (cuda_workload.c, cuda_ops.c): the plan a layer's
 * create_workload makes. Only the files that make and run workloads
 * include this; the rest of the backend (the queue, cuda_queue.c) sees
 * the opaque plx_workload and cuda_backend.h's functions on it. */
#ifndef GPU_CUDA_CUDA_WORKLOAD_H
#define GPU_CUDA_CUDA_WORKLOAD_H

#include "cuda_backend.h"

typedef enum workload_kind {
    WK_CONSTANT,
    WK_POINTWISE,
    WK_BINARY,
    WK_SOFTMAX,
    WK_REDUCE,
    WK_COPY, /* the input's bytes as they are: reduce's identity, reshape and the like */
    WK_GEMM,
    WK_CONV, /* cuda_conv.c's plan */
    /* cuda_ops.c's */
    WK_VIEWS, /* strided copies: transpose, slice, concat, split, ... */
    WK_PAD,
    WK_GATHER,
    WK_WHERE,
    WK_CAST,
    WK_POOL,
    WK_RESIZE,
    WK_NORM, /* layer_norm, instance_norm */
    WK_BATCH_NORM
} workload_kind;

/* A layer's plan, made once at create_workload so that a run allocates
 * nothing. The handles and views live in the workload's own allocation
 * (host->alloc), after the struct. */
struct plx_workload {
    plx_factory *factory;
    workload_kind kind;
    cudaStream_t stream;
    plx_tensor_handle **inputs;
    uint32_t input_count;
    plx_tensor_handle **outputs;
    uint32_t output_count;
    const void *constant_data; /* plx_constant_desc.data: valid while the network lives */
    int64_t count;             /* output 0's elements */
    ck_pointwise pointwise;
    float alpha, beta;
    /* WK_POINTWISE: its function then the fused steps after it; WK_BINARY:
     * the fused steps after the binary function (count 0: none). */
    ck_chain chain;
    ck_binary binary;
    ck_broadcast broadcast;
    int64_t outer, axis_n, inner;
    bool log;
    ck_reduce reduce;
    ck_reduce_geometry reduce_geometry;
    cuda_gemm_plan gemm;
    int c_slot, bias_slot; /* input slots of gemm's C and of the bias; -1: none */
    bool post_activation;  /* a fused activation after the product: `pointwise` */
    cuda_conv_plan *conv;  /* WK_CONV */
    bool residual;         /* WK_CONV: a residual add in the graph (the last input) */
    /* cuda_ops.c's plans */
    size_t elem; /* the copies' element size */
    ck_view *views;
    uint32_t view_count;
    union {
        ck_pad pad;
        ck_gather gather;
        ck_where where;
        ck_pool pool;
        ck_resize resize;
        ck_norm norm;
        ck_batch_norm batch_norm;
    } geom;
    ck_dtype cast_from, cast_to;
    int *bad;         /* gather: device flag of an index out of range */
    ck_resize_tap *taps; /* resize: device memory, the output rows' then columns' */
    int gather_axis;  /* gather: the descriptor's axis, for the message */
    char layer_name[64]; /* for messages at execution */
};

#endif /* GPU_CUDA_CUDA_WORKLOAD_H */
