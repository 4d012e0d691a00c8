/* gpu_cuda's own CUDA kernels (cuda_kernels.cu, cuda_kernels_data.cu,
 * cuda_kernels_norm.cu), as C-callable launchers for the workloads
 * (cuda_workload.c, cuda_ops.c). Every launcher only enqueues on the given
 * stream and returns the launch's error (cudaGetLastError), never waiting.
 * Tensors are dense and row-major, float32 unless a launcher says
 * otherwise; the data-movement kernels copy elements of 1, 2, 4 or 8 bytes
 * of any dtype. Their index arithmetic is cuda_index.h's. Not exported. */
#ifndef GPU_CUDA_CUDA_KERNELS_H
#define GPU_CUDA_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cuda_index.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CK_MAX_RANK 8

/* The pointwise functions of one input: plx_unary_func and
 * plx_activation_func together (cuda_workload.c maps them), each with the
 * meaning ops.h gives it; alpha and beta are the activation's. */
typedef enum ck_pointwise {
    CK_ABS, CK_NEG, CK_SQRT, CK_RECIPROCAL, CK_EXP, CK_LOG, CK_ERF, CK_FLOOR, CK_CEIL,
    CK_SIN, CK_COS, CK_TAN, CK_ASIN, CK_ACOS, CK_ATAN, CK_SINH, CK_COSH, CK_ASINH,
    CK_ACOSH, CK_ATANH, CK_ROUND, CK_SIGN,
    CK_RELU, CK_CLIP, CK_LEAKY_RELU, CK_ELU, CK_SIGMOID, CK_HARD_SIGMOID, CK_HARD_SWISH,
    CK_TANH, CK_GELU, CK_GELU_TANH, CK_SOFTPLUS, CK_SELU, CK_MISH, CK_SOFTSIGN,
    CK_THRESHOLDED_RELU, CK_CELU, CK_AFFINE, CK_SCALED_TANH, CK_SHRINK
} ck_pointwise;

/* The binary functions on float32 (plx_binary_func's of the same names;
 * prelu: a < 0 ? b * a : a; mod: fmod, the sign of the dividend). */
typedef enum ck_binary {
    CK_ADD, CK_SUB, CK_MUL, CK_DIV, CK_POW, CK_MAX, CK_MIN, CK_PRELU, CK_MOD
} ck_binary;

/* Where the output's elements read their inputs: the output's dims, and
 * for each input the stride (in elements) it advances by along each output
 * dim, 0 along a broadcast one. rank 0: a scalar. */
typedef struct ck_broadcast {
    int rank;
    int64_t dims[CK_MAX_RANK];
    int64_t a_strides[CK_MAX_RANK];
    int64_t b_strides[CK_MAX_RANK];
} ck_broadcast;

/* The reduce functions (plx_reduce_func's of the same names). */
typedef enum ck_reduce {
    CK_R_MEAN, CK_R_MAX, CK_R_MIN, CK_R_SUM, CK_R_PROD, CK_R_L1, CK_R_L2, CK_R_SUM_SQUARE,
    CK_R_LOG_SUM, CK_R_LOG_SUM_EXP
} ck_reduce;

/* A reduction as two index spaces over the input: the kept dims (one output
 * element each combination, in row-major order) and the reduced dims (the
 * elements folded into it), each dim with its stride in the input. */
typedef struct ck_reduce_geometry {
    int kept_rank;
    int64_t kept_dims[CK_MAX_RANK];
    int64_t kept_strides[CK_MAX_RANK];
    int red_rank;
    int64_t red_dims[CK_MAX_RANK];
    int64_t red_strides[CK_MAX_RANK];
    int64_t outputs; /* product of kept_dims */
    int64_t reduced; /* product of red_dims, at least 1 */
} ck_reduce_geometry;

/* Pointwise steps applied one after another to each element (a fused
 * chain of unary and activation layers, cuda_workload.c). */
#define CK_CHAIN_MAX 4
typedef struct ck_chain {
    int count; /* 0 to CK_CHAIN_MAX */
    ck_pointwise f[CK_CHAIN_MAX];
    float alpha[CK_CHAIN_MAX], beta[CK_CHAIN_MAX];
} ck_chain;

cudaError_t ck_pointwise_launch(cudaStream_t stream, ck_pointwise func, float alpha, float beta,
                                const float *x, float *y, int64_t n);
/* y = the chain's steps applied to x, in one pass. */
cudaError_t ck_chain_launch(cudaStream_t stream, const ck_chain *chain, const float *x, float *y,
                            int64_t n);
/* y = the chain's steps applied to func(a, b), in one pass. */
cudaError_t ck_binary_chain_launch(cudaStream_t stream, ck_binary func, const float *a,
                                   const float *b, float *y, int64_t n,
                                   const ck_broadcast *geometry, const ck_chain *tail);
cudaError_t ck_binary_launch(cudaStream_t stream, ck_binary func, const float *a, const float *b,
                             float *y, int64_t n, const ck_broadcast *geometry);
/* Softmax (log: log-softmax) of x viewed as [outer, n, inner] along n. */
cudaError_t ck_softmax_launch(cudaStream_t stream, const float *x, float *y, int64_t outer,
                              int64_t n, int64_t inner, bool log);
cudaError_t ck_reduce_launch(cudaStream_t stream, ck_reduce func, const float *x, float *y,
                             const ck_reduce_geometry *geometry);

/* ---- data movement (cuda_kernels_data.cu); elem: the element size ---- */

/* One strided copy (cuda_index.h, ck_view) from src to dst. */
cudaError_t ck_view_launch(cudaStream_t stream, const void *src, void *dst, size_t elem,
                           const ck_view *view);
cudaError_t ck_pad_launch(cudaStream_t stream, const void *x, void *y, size_t elem,
                          const ck_pad *geometry);
/* An index out of range sets *bad (device memory) to 1 and gives zero
 * bytes for the elements it would have read. */
cudaError_t ck_gather_launch(cudaStream_t stream, const void *data, const void *indices, void *y,
                             size_t elem, const ck_gather *geometry, int *bad);
cudaError_t ck_where_launch(cudaStream_t stream, const unsigned char *cond, const void *x,
                            const void *y, void *z, size_t elem, const ck_where *geometry);

/* The dtypes cast converts between. */
typedef enum ck_dtype { CK_DT_F32, CK_DT_F16, CK_DT_I32, CK_DT_I64, CK_DT_BOOL } ck_dtype;
/* Float to integer truncates toward zero, anything to bool is x != 0. */
cudaError_t ck_cast_launch(cudaStream_t stream, ck_dtype from, ck_dtype to, const void *x, void *y,
                           int64_t n);
/* indices: NULL, or int64 of y's shape (max pools). */
cudaError_t ck_pool_launch(cudaStream_t stream, const float *x, float *y, int64_t *indices,
                           const ck_pool *geometry);

/* taps: the output rows' then the output columns' (device memory). */
cudaError_t ck_resize_launch(cudaStream_t stream, const float *x, float *y,
                             const ck_resize_tap *taps, const ck_resize *geometry);

/* ---- normalisation (cuda_kernels_norm.cu) ---- */

/* layer_norm and instance_norm; bias NULL when the geometry has none. */
cudaError_t ck_norm_launch(cudaStream_t stream, const float *x, const float *scale,
                           const float *bias, float *y, const ck_norm *geometry);
cudaError_t ck_batch_norm_launch(cudaStream_t stream, const float *x, const float *scale,
                                 const float *bias, const float *mean, const float *var, float *y,
                                 const ck_batch_norm *geometry);

#ifdef __cplusplus
}
#endif

#endif /* GPU_CUDA_CUDA_KERNELS_H */
