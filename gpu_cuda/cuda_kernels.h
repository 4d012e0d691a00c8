/* gpu_cuda's own CUDA kernels (cuda_kernels.cu), as C-callable launchers
 * for the workloads (cuda_workload.c). Every launcher only enqueues on the
 * given stream and returns the launch's error (cudaGetLastError), never
 * waiting. Tensors are float32, dense and row-major. Not exported. */
#ifndef GPU_CUDA_CUDA_KERNELS_H
#define GPU_CUDA_CUDA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

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

cudaError_t ck_pointwise_launch(cudaStream_t stream, ck_pointwise func, float alpha, float beta,
                                const float *x, float *y, int64_t n);
cudaError_t ck_binary_launch(cudaStream_t stream, ck_binary func, const float *a, const float *b,
                             float *y, int64_t n, const ck_broadcast *geometry);
/* Softmax (log: log-softmax) of x viewed as [outer, n, inner] along n. */
cudaError_t ck_softmax_launch(cudaStream_t stream, const float *x, float *y, int64_t outer,
                              int64_t n, int64_t inner, bool log);
cudaError_t ck_reduce_launch(cudaStream_t stream, ck_reduce func, const float *x, float *y,
                             const ck_reduce_geometry *geometry);

#ifdef __cplusplus
}
#endif

#endif /* GPU_CUDA_CUDA_KERNELS_H */
