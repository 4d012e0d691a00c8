/* gpu_cuda's matrix products through cuBLASLt (cuda_backend.h,
 * cuda_gemm_plan): gemm, matmul and fully_connected on float32, with the
 * bias as cuBLASLt's bias epilogue.
 *
 * cuBLASLt is column-major. A row-major [r, c] matrix with leading
 * dimension c is the column-major [c, r] matrix with the same leading
 * dimension, its transpose; so the row-major Y = op(A) op(B) is computed as
 * the column-major Y^T = op(B)^T op(A)^T: cuBLASLt's first operand is our
 * B, its second our A, and its output [n, m] is our Y. The bias epilogue
 * adds one value per row of cuBLASLt's output, that is per column of ours:
 * exactly a bias of n elements broadcast over the rows. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "cuda_backend.h"

/* Per workload; what cuBLASLt's heuristics may use for split-K and the like. */
#define GPU_CUDA_GEMM_WORKSPACE (4u << 20)

static const char *lt_error(cublasStatus_t st) {
    switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "an unknown cuBLAS status";
}

static plx_status lt_failure(const plx_host *host, cublasStatus_t st, const char *call) {
    return host->status_create(host,
                               st == CUBLAS_STATUS_ALLOC_FAILED ? PLX_OUT_OF_MEMORY : PLX_INTERNAL,
                               "%s: %s (%d)", call, lt_error(st), (int)st);
}

static cublasComputeType_t compute_type(cuda_precision p) {
    switch (p) {
    case CUDA_PRECISION_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case CUDA_PRECISION_FP16: return CUBLAS_COMPUTE_32F_FAST_16F;
    case CUDA_PRECISION_BF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case CUDA_PRECISION_FP32: break;
    }
    return CUBLAS_COMPUTE_32F;
}

void cuda_gemm_plan_destroy(cuda_gemm_plan *p) {
    if (p->y) {
        cublasLtMatrixLayoutDestroy(p->y);
    }
    if (p->c) {
        cublasLtMatrixLayoutDestroy(p->c);
    }
    if (p->b) {
        cublasLtMatrixLayoutDestroy(p->b);
    }
    if (p->a) {
        cublasLtMatrixLayoutDestroy(p->a);
    }
    if (p->desc) {
        cublasLtMatmulDescDestroy(p->desc);
    }
    if (p->lt) {
        cublasLtDestroy(p->lt);
    }
    if (p->workspace) {
        cudaFree(p->workspace);
    }
    memset(p, 0, sizeof *p);
}

/* A column-major layout of rows x cols with leading dimension ld, batched. */
static cublasStatus_t make_layout(cublasLtMatrixLayout_t *out, int64_t rows, int64_t cols,
                                  int64_t ld, int64_t batch, int64_t stride) {
    cublasStatus_t st = cublasLtMatrixLayoutCreate(out, CUDA_R_32F, (uint64_t)rows,
                                                   (uint64_t)cols, ld);
    if (st == CUBLAS_STATUS_SUCCESS && batch > 1) {
        int32_t count = (int32_t)batch;
        st = cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof count);
        if (st == CUBLAS_STATUS_SUCCESS) {
            st = cublasLtMatrixLayoutSetAttribute(
                *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
        }
    }
    return st;
}

/* The best algorithm cuBLASLt's heuristics give for operands aligned to
 * `alignment` bytes; false when there is none. */
static bool pick_algo(cuda_gemm_plan *p, uint32_t alignment, cublasLtMatmulAlgo_t *out) {
    cublasLtMatmulPreference_t pref = NULL;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) {
        return false;
    }
    uint64_t ws = p->workspace_size;
    bool ok = cublasLtMatmulPreferenceSetAttribute(
                  pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
              CUBLAS_STATUS_SUCCESS;
    const cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (size_t i = 0; ok && i < sizeof aligns / sizeof aligns[0]; i++) {
        ok = cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &alignment,
                                                  sizeof alignment) == CUBLAS_STATUS_SUCCESS;
    }
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    if (ok) {
        cublasLtMatrixLayout_t c = p->shape.has_c ? p->c : p->y;
        ok = cublasLtMatmulAlgoGetHeuristic(p->lt, p->desc, p->a, p->b, c, p->y, pref, 1,
                                            &result, &found) == CUBLAS_STATUS_SUCCESS &&
             found > 0;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (ok) {
        *out = result.algo;
    }
    return ok;
}

plx_status cuda_gemm_plan_create(plx_factory *f, const cuda_gemm_shape *shape,
                                 cuda_gemm_plan *p) {
    const plx_host *host = f->host;
    memset(p, 0, sizeof *p);
    p->shape = *shape;
    cublasStatus_t st = cublasLtCreate(&p->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        p->lt = NULL;
        return lt_failure(host, st, "cublasLtCreate");
    }
    const char *call = "cublasLtMatmulDescCreate";
    st = cublasLtMatmulDescCreate(&p->desc, compute_type(f->precision), CUDA_R_32F);
    /* cuBLASLt's first operand is our B: transposed when B is not stored
     * as the product reads it (see the top of the file). */
    cublasOperation_t op_first = shape->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_second = shape->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (st == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulDescSetAttribute(TRANSA)";
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                            sizeof op_first);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatmulDescSetAttribute(TRANSB)";
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                            sizeof op_second);
    }
    if (st == CUBLAS_STATUS_SUCCESS && (shape->has_bias || shape->relu)) {
        cublasLtEpilogue_t epilogue = !shape->relu    ? CUBLASLT_EPILOGUE_BIAS
                                      : shape->has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                        : CUBLASLT_EPILOGUE_RELU;
        call = "cublasLtMatmulDescSetAttribute(EPILOGUE)";
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue);
    }
    /* Our B, stored [k, n] (or [n, k] transposed): column-major [n, k] with
     * ld n (or [k, n] with ld k). Our A, stored [m, k] (or [k, m]):
     * column-major [k, m] with ld k (or [m, k] with ld m). Y: [n, m], ld n. */
    int64_t m = shape->m, n = shape->n, k = shape->k;
    if (st == CUBLAS_STATUS_SUCCESS) {
        call = "cublasLtMatrixLayoutCreate";
        st = shape->trans_b ? make_layout(&p->a, k, n, k, shape->batch, shape->stride_b)
                            : make_layout(&p->a, n, k, n, shape->batch, shape->stride_b);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        st = shape->trans_a ? make_layout(&p->b, m, k, m, shape->batch, shape->stride_a)
                            : make_layout(&p->b, k, m, k, shape->batch, shape->stride_a);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        st = make_layout(&p->y, n, m, n, shape->batch, shape->stride_y);
    }
    if (st == CUBLAS_STATUS_SUCCESS && shape->has_c) {
        st = make_layout(&p->c, n, m, n, shape->batch, shape->stride_y);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        cuda_gemm_plan_destroy(p);
        return lt_failure(host, st, call);
    }
    p->workspace_size = GPU_CUDA_GEMM_WORKSPACE;
    cudaError_t rc = cudaMalloc(&p->workspace, p->workspace_size);
    if (rc != cudaSuccess) {
        p->workspace = NULL;
        cuda_gemm_plan_destroy(p);
        return gpu_cuda_failure(host, rc, PLX_OUT_OF_MEMORY, "cudaMalloc(%u bytes of workspace)",
                                GPU_CUDA_GEMM_WORKSPACE);
    }
    p->have_aligned = pick_algo(p, 16, &p->algo_aligned);
    p->have_any = pick_algo(p, 4, &p->algo_any);
    if (!p->have_aligned && !p->have_any) {
        cuda_gemm_plan_destroy(p);
        return host->status_create(host, PLX_UNSUPPORTED,
                                   "cuBLASLt has no algorithm for a float32 product of [%lld, "
                                   "%lld] x [%lld, %lld] (batch %lld)",
                                   (long long)m, (long long)k, (long long)k, (long long)n,
                                   (long long)shape->batch);
    }
    return NULL;
}

static bool aligned16(const void *ptr) {
    return ((uintptr_t)ptr & 15u) == 0;
}

plx_status cuda_gemm_run(plx_factory *f, const cuda_gemm_plan *p, cudaStream_t stream,
                         const float *a, const float *b, const float *c, const float *bias,
                         float *y) {
    bool aligned = aligned16(a) && aligned16(b) && aligned16(y) && (!c || aligned16(c));
    const cublasLtMatmulAlgo_t *algo =
        aligned && p->have_aligned ? &p->algo_aligned : p->have_any ? &p->algo_any : NULL;
    if (!algo) {
        return f->host->status_create(f->host, PLX_INVALID_ARGUMENT,
                                      "cuBLASLt has an algorithm for operands aligned to 16 "
                                      "bytes only, and an operand is not");
    }
    if (p->shape.has_bias) {
        cublasStatus_t st = cublasLtMatmulDescSetAttribute(
            p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        if (st != CUBLAS_STATUS_SUCCESS) {
            return lt_failure(f->host, st, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
        }
    }
    float alpha = p->shape.alpha, beta = p->shape.has_c ? p->shape.beta : 0.0f;
    cublasStatus_t st = cublasLtMatmul(p->lt, p->desc, &alpha, b, p->a, a, p->b, &beta,
                                       p->shape.has_c ? (const void *)c : (const void *)y,
                                       p->shape.has_c ? p->c : p->y, y, p->y, algo,
                                       p->workspace, p->workspace_size, stream);
    return st == CUBLAS_STATUS_SUCCESS ? NULL : lt_failure(f->host, st, "cublasLtMatmul");
}
