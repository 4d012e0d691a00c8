/* gpu_cuda internals shared by the backend's files (cuda_backend.c,
 * cuda_tensor.c, cuda_workload.c, cuda_gemm.c): the instance, factory,
 * tensor handle and workload, and the functions one file calls in another.
 * Not exported. */
#ifndef GPU_CUDA_CUDA_BACKEND_H
#define GPU_CUDA_CUDA_BACKEND_H

#include <pthread.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <plexus/backend.h>

#include "cuda_kernels.h"

#define GPU_CUDA_ID "gpu_cuda"

/* The vendor kind of external memory of this backend: `handle` is a
 * device pointer (cudaMalloc) on the instance's device. Its planned buffers
 * are described so, and applications bind device memory of theirs as
 * zero-copy inputs and outputs through it (import_memory_kinds). */
#define GPU_CUDA_DEVICE_PTR_KIND "gpu_cuda.device_ptr"

/* Option precision: the compute type of the matrix products (cuBLASLt) on
 * float32 tensors. The other kernels compute in float32 whatever it is. */
typedef enum cuda_precision {
    CUDA_PRECISION_FP32 = 0, /* CUBLAS_COMPUTE_32F */
    CUDA_PRECISION_TF32,     /* CUBLAS_COMPUTE_32F_FAST_TF32 */
    CUDA_PRECISION_FP16,     /* CUBLAS_COMPUTE_32F_FAST_16F */
    CUDA_PRECISION_BF16      /* CUBLAS_COMPUTE_32F_FAST_16BF */
} cuda_precision;

#define GPU_CUDA_MAX_CAPS 16

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    int device;           /* the CUDA device's index */
    cuda_precision precision;
    bool queued; /* option queued: queued execution (R-24, cuda_queue.c) */
    /* "gpu_cuda:instance=0x...": fences are this instance's own. */
    char fence_domain[64];
    plx_capability caps[GPU_CUDA_MAX_CAPS];
    size_t cap_count;
    /* Capability strings, alive until destroy. */
    char device_name[256];
    char uuid[48];            /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    char compute_capability[16];
    char versions[96];        /* runtime, driver, cuBLASLt */
    char choice[320];
};

struct plx_factory {
    plx_backend *backend;
    const plx_host *host;
    int device;
    cuda_precision precision;
    uint32_t network_id;
    /* Copies between handles and their pinned staging (map, unmap), for
     * every handle of the factory: a non-blocking stream, so that it never
     * waits for the legacy default stream. */
    cudaStream_t copy_stream;
};

/* A handle's memory is device memory: its own cudaMalloc (managed), or a
 * place in memory it does not own (a planned buffer of the backend's, or
 * an application's device pointer: import_external_memory). Mapping copies
 * it into pinned host memory the handle keeps until its memory is released
 * (so that mapping again allocates nothing), and unmapping copies it back,
 * except for a constant's output, which nothing changes after it ran. */
struct plx_tensor_handle {
    plx_factory *factory;
    size_t bytes;
    bool managed;
    bool constant; /* a constant's output, computed: read-only */
    void *dev;     /* NULL: no memory (or 0 bytes) */
    bool owns;     /* dev is ours to cudaFree */
    pthread_mutex_t lock; /* map state: several executions may map a constant */
    unsigned map_count;
    void *staging; /* cudaMallocHost, bytes long; NULL until the first map */
    unsigned char empty_view[8]; /* what mapping a tensor of 0 bytes gives */
};

/* ---- cuda_backend.c ---- */

/* A CUDA runtime failure as a status naming the call and the error
 * (R-12 (4)); cudaErrorMemoryAllocation keeps PLX_OUT_OF_MEMORY. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
plx_status gpu_cuda_failure(const plx_host *host, cudaError_t rc, plx_status_code code,
                            const char *call_fmt, ...);

/* ---- tensor handles (cuda_tensor.c) ---- */

plx_status gpu_cuda_create_tensor_handle(plx_factory *f, const plx_tensor_info *info,
                                         const plx_tensor_handle_params *params,
                                         plx_tensor_handle **out_handle);
void gpu_cuda_destroy_tensor_handle(plx_tensor_handle *h);
plx_status gpu_cuda_allocate_tensor_handle(plx_tensor_handle *h);
void gpu_cuda_release_tensor_handle(plx_tensor_handle *h);
plx_status gpu_cuda_map_tensor_handle(plx_tensor_handle *h, void **out_data);
void gpu_cuda_unmap_tensor_handle(plx_tensor_handle *h);
void gpu_cuda_unimport_tensor_handle(plx_tensor_handle *h);
plx_status gpu_cuda_allocate_planned_buffer(plx_factory *f,
                                            const plx_planned_buffer_params *params,
                                            plx_external_memory *out_memory);
void gpu_cuda_free_planned_buffer(plx_factory *f, const plx_external_memory *memory);
plx_status gpu_cuda_import_external_memory(plx_tensor_handle *h,
                                           const plx_external_memory *memory);

/* ---- matrix products through cuBLASLt (cuda_gemm.c) ---- */

/* One product Y = alpha * op(A) op(B) [+ beta * C] [+ bias], row-major,
 * batched with strides (0: the operand is shared by every batch). */
typedef struct cuda_gemm_shape {
    int64_t m, n, k;
    bool trans_a, trans_b;
    int64_t batch;
    int64_t stride_a, stride_b, stride_y; /* elements */
    float alpha, beta;
    bool has_c;    /* C of Y's shape [m, n], scaled by beta */
    bool has_bias; /* a bias of n elements, added to every row */
    bool relu;     /* max(0, .) of the result, in cuBLASLt's epilogue */
} cuda_gemm_shape;

/* The cuBLASLt objects of one product, planned once at create_workload:
 * the algorithm for operands aligned to 16 bytes, and one for any float
 * alignment (caller memory), chosen per run from the pointers. */
typedef struct cuda_gemm_plan {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, y;
    cublasLtMatmulAlgo_t algo_aligned, algo_any;
    bool have_aligned, have_any;
    void *workspace;
    size_t workspace_size;
    cuda_gemm_shape shape;
} cuda_gemm_plan;

/* Plans the product (cuBLASLt objects, algorithms, workspace) on the
 * factory's device; a status naming the failing call, or PLX_UNSUPPORTED
 * when cuBLASLt has no algorithm for it. */
plx_status cuda_gemm_plan_create(plx_factory *f, const cuda_gemm_shape *shape,
                                 cuda_gemm_plan *out_plan);
void cuda_gemm_plan_destroy(cuda_gemm_plan *plan);
/* Enqueues the product on `stream`; c and bias as the shape says (else NULL). */
plx_status cuda_gemm_run(plx_factory *f, const cuda_gemm_plan *plan, cudaStream_t stream,
                         const float *a, const float *b, const float *c, const float *bias,
                         float *y);

/* ---- workloads (cuda_workload.c, cuda_ops.c) ---- */

typedef enum workload_kind {
    WK_CONSTANT,
    WK_POINTWISE,
    WK_BINARY,
    WK_SOFTMAX,
    WK_REDUCE,
    WK_COPY, /* the input's bytes as they are: reduce's identity, reshape and the like */
    WK_GEMM,
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
    ck_binary binary;
    ck_broadcast broadcast;
    int64_t outer, axis_n, inner;
    bool log;
    ck_reduce reduce;
    ck_reduce_geometry reduce_geometry;
    cuda_gemm_plan gemm;
    int c_slot, bias_slot; /* input slots of gemm's C and of the bias; -1: none */
    bool post_activation;  /* a fused activation after the product: `pointwise` */
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


/* NULL when gpu_cuda runs the layer; else why not, written into buf. */
const char *gpu_cuda_op_check(const plx_layer_view *layer, char *buf, size_t size);
plx_status gpu_cuda_create_workload(plx_factory *f, const plx_layer_view *layer,
                                    plx_tensor_handle *const *inputs,
                                    plx_tensor_handle *const *outputs,
                                    plx_workload **out_workload);
void gpu_cuda_destroy_workload(plx_workload *w);
/* a product whose only reader is an activation becomes one
 * precompiled layer (cuda_workload.c). */
plx_status gpu_cuda_optimize_subgraph(plx_backend *b, const plx_subgraph_view *subgraph,
                                      const plx_subgraph_editor *editor);
plx_status gpu_cuda_execute_workload(plx_workload *w);
/* Enqueues the workload's launches on `stream` without waiting: a status
 * when nothing was enqueued (a launch error, a handle without memory). */
plx_status gpu_cuda_workload_enqueue(plx_workload *w, cudaStream_t stream);

/* ---- data movement, pooling, normalisation (cuda_ops.c) ---- */

/* Whether the op is one of cuda_ops.c's. */
bool gpu_cuda_ops_runs(plx_op op);
/* NULL when gpu_cuda runs the layer (an op gpu_cuda_ops_runs names);
 * else why not, written into buf. */
const char *gpu_cuda_ops_check(const plx_layer_view *layer, char *buf, size_t size);
/* How many views (ck_view) the layer's workload holds. */
uint32_t gpu_cuda_ops_view_count(const plx_layer_view *layer);
/* Plans the layer into w (handles, views and stream already set). */
plx_status gpu_cuda_ops_create(plx_workload *w, const plx_layer_view *layer);
/* Enqueues w's launches on `stream`; *what names a failing call other
 * than a launch. Every handle holds memory (the caller checked). */
cudaError_t gpu_cuda_ops_enqueue(plx_workload *w, cudaStream_t stream, const char **what);
/* After the wait of execute_workload: gather's index check. */
plx_status gpu_cuda_ops_after_wait(plx_workload *w);

/* ---- queued execution (cuda_queue.c, R-24) ---- */

plx_status gpu_cuda_create_queue(plx_factory *f, const plx_queue_params *params,
                                 plx_queue **out_queue);
void gpu_cuda_destroy_queue(plx_queue *q);
plx_status gpu_cuda_enqueue_workload(plx_queue *q, const plx_enqueue_params *params);
plx_status gpu_cuda_queue_signal(plx_queue *q, plx_fence **out_fence);
plx_status gpu_cuda_fence_wait(plx_fence *fence);
plx_status gpu_cuda_fence_query(plx_fence *fence, bool *out_signalled);
void gpu_cuda_destroy_fence(plx_fence *fence);

#endif /* GPU_CUDA_CUDA_BACKEND_H */
