/* gpu_cuda internals shared by the backend's files (cuda_backend.c,
 * cuda_tensor.c, cuda_workload.c, cuda_gemm.c, cuda_conv.c): the instance, factory,
 * tensor handle and workload, and the functions one file calls in another.
 * Not exported. */
#ifndef GPU_CUDA_CUDA_BACKEND_H
#define GPU_CUDA_CUDA_BACKEND_H

#include <pthread.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <plexus/backend.h>

#include "cuda_conv_geom.h"
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

#define GPU_CUDA_MAX_CAPS 24

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    int device;           /* the CUDA device's index */
    cuda_precision precision;
    bool queued; /* option queued: queued execution (R-24, cuda_queue.c) */
    bool graphs; /* option graphs: queued segments replayed as CUDA graphs (cuda_queue.c) */
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
    /* check_layer's cuDNN handle (cuda_conv_probe), made at the first
     * probe; both under conv_lock, since check_layer may run concurrently. */
    pthread_mutex_t conv_lock;
    struct cudnnContext *cudnn; /* a cudnnHandle_t */
};

struct plx_factory {
    plx_backend *backend;
    const plx_host *host;
    int device;
    cuda_precision precision;
    uint32_t network_id;
    /* The host has now_ns and record_event: profiled executions
     * time their launches (cuda_queue.c). */
    bool profiling;
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

/* ---- convolutions through cuDNN (cuda_conv.c) ---- */

/* A conv layer's cuDNN plan, made once at create_workload (its handle,
 * execution plan, workspace; opaque outside cuda_conv.c). */
typedef struct cuda_conv_plan cuda_conv_plan;

/* Plans conv or conv_transpose layer `l` (its own view: op PLX_OP_CONV or
 * PLX_OP_CONV_TRANSPOSE), with the bias and, when `residual`, the add of a
 * tensor of Y's shape after it in cuDNN's graph, and with activation `act`
 * (NULL: none) when cuDNN runs it there: *out_act_in_graph says whether it
 * does, else the caller runs the activation on Y after cuda_conv_run.
 * PLX_UNSUPPORTED with the reason when cuDNN has no engine for it; a
 * status naming the failing call. */
plx_status cuda_conv_plan_create(plx_factory *f, const plx_layer_view *l,
                                 const plx_activation_desc *act, bool residual,
                                 bool *out_act_in_graph, cuda_conv_plan **out_plan);
void cuda_conv_plan_destroy(cuda_conv_plan *plan, const plx_host *host);
/* For check_layer: whether cuDNN has an engine the option precision admits
 * for conv or conv_transpose layer `l`'s convolution alone (what
 * cuda_conv_plan_create falls back to), planned with the instance's handle
 * and thrown away. NULL, or why not (written into buf). */
const char *cuda_conv_probe(plx_backend *b, const plx_layer_view *l, char *buf, size_t size);
/* The instance's cuDNN handle, when a probe made one. */
void cuda_conv_probe_release(plx_backend *b);
/* Enqueues the (transposed) convolution, the bias and the residual add on
 * `stream`; bias NULL when the layer has none, z NULL without a residual. */
plx_status cuda_conv_run(plx_factory *f, cuda_conv_plan *plan, cudaStream_t stream,
                         const void *x, const void *w, const void *bias, const void *z,
                         float *y);

/* ---- workloads (cuda_workload.c, cuda_ops.c; the struct: cuda_workload.h) ---- */

/* NULL when gpu_cuda runs the layer; else why not, written into buf. */
const char *gpu_cuda_op_check(const plx_layer_view *layer, char *buf, size_t size);
/* What only the device can say, after gpu_cuda_op_check passed: for a
 * convolution (plain or fused), whether cuDNN has an engine for it
 * (cuda_conv_probe). NULL, or why not (into buf). */
const char *gpu_cuda_device_check(plx_backend *b, const plx_layer_view *layer, char *buf,
                                  size_t size);
plx_status gpu_cuda_create_workload(plx_factory *f, const plx_layer_view *layer,
                                    plx_tensor_handle *const *inputs,
                                    plx_tensor_handle *const *outputs,
                                    plx_workload **out_workload);
void gpu_cuda_destroy_workload(plx_workload *w);
/* a product or a convolution whose only reader is an activation
 * becomes one precompiled layer (cuda_workload.c). */
plx_status gpu_cuda_optimize_subgraph(plx_backend *b, const plx_subgraph_view *subgraph,
                                      const plx_subgraph_editor *editor);
plx_status gpu_cuda_execute_workload(plx_workload *w);
/* Enqueues the workload's launches on `stream` without waiting: a status
 * when nothing was enqueued (a launch error, a handle without memory).
 * What it enqueues depends only on the workload and the device pointers
 * gpu_cuda_workload_pointers gives, so that it can be captured into a
 * CUDA graph and replayed while those pointers stay the same. */
plx_status gpu_cuda_workload_enqueue(plx_workload *w, cudaStream_t stream);
/* The device pointers the workload's launches use now (its inputs' and
 * outputs' memory, in a fixed order), written to out[0 .. cap); returns how
 * many there are, which may exceed cap (then out holds the first cap). */
uint32_t gpu_cuda_workload_pointers(const plx_workload *w, const void **out, uint32_t cap);
/* What the workload runs, for profiling events ("gemm (cuBLASLt)",
 * "binary", ...): a static string. */
const char *gpu_cuda_workload_name(const plx_workload *w);
/* Whether the workload's launches raise a device flag that must be read
 * once they completed (gather's index check), and reading it: NULL, or
 * the failure, naming the layer. Queued, the wait on the fence that
 * covers the launches reads it (cuda_queue.c); else execute_workload. */
bool gpu_cuda_workload_has_check(const plx_workload *w);
plx_status gpu_cuda_workload_check(plx_workload *w);

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
/* Once the launches completed: gather's index check
 * (gpu_cuda_workload_check). */
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
