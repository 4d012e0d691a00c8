// gpu_cuda's own kernels (cuda_kernels.h): pointwise functions (one, or a
// fused chain of them), binary functions with broadcasting (and a chain
// after them), softmax and reductions, on float32. Each
// launcher enqueues one kernel on the caller's stream and returns the
// launch error; grids stride over their work, so any size launches with a
// bounded grid.
#include <math.h>
#include <stdint.h>

#include "cuda_kernels.h"

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill a large device several times over; the kernels
// stride over the rest.
constexpr int64_t kMaxBlocks = 65535;

unsigned grid_for(int64_t items, int64_t per_block) {
    int64_t blocks = (items + per_block - 1) / per_block;
    if (blocks < 1) {
        blocks = 1;
    }
    return (unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__device__ float softplus(float x) {
    // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
    return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
}

__device__ float pointwise(ck_pointwise f, float x, float alpha, float beta) {
    switch (f) {
    case CK_ABS: return fabsf(x);
    case CK_NEG: return -x;
    case CK_SQRT: return sqrtf(x);
    case CK_RECIPROCAL: return 1.0f / x;
    case CK_EXP: return expf(x);
    case CK_LOG: return logf(x);
    case CK_ERF: return erff(x);
    case CK_FLOOR: return floorf(x);
    case CK_CEIL: return ceilf(x);
    case CK_SIN: return sinf(x);
    case CK_COS: return cosf(x);
    case CK_TAN: return tanf(x);
    case CK_ASIN: return asinf(x);
    case CK_ACOS: return acosf(x);
    case CK_ATAN: return atanf(x);
    case CK_SINH: return sinhf(x);
    case CK_COSH: return coshf(x);
    case CK_ASINH: return asinhf(x);
    case CK_ACOSH: return acoshf(x);
    case CK_ATANH: return atanhf(x);
    case CK_ROUND: return rintf(x); // the default rounding mode: halves to even
    case CK_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; // 0 and NaN stay
    case CK_RELU: return x < 0.0f ? 0.0f : x;
    case CK_CLIP: return x < alpha ? alpha : x > beta ? beta : x;
    case CK_LEAKY_RELU: return x < 0.0f ? alpha * x : x;
    case CK_ELU: return x < 0.0f ? alpha * expm1f(x) : x;
    case CK_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case CK_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case CK_HARD_SWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case CK_TANH: return tanhf(x);
    case CK_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case CK_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case CK_SOFTPLUS: return softplus(x);
    case CK_SELU: return beta * (x <= 0.0f ? alpha * expm1f(x) : x);
    case CK_MISH: return x * tanhf(softplus(x));
    case CK_SOFTSIGN: return x / (1.0f + fabsf(x));
    case CK_THRESHOLDED_RELU: return x > alpha ? x : 0.0f;
    case CK_CELU: return fmaxf(0.0f, x) + fminf(0.0f, alpha * expm1f(x / alpha));
    case CK_AFFINE: return alpha * x + beta;
    case CK_SCALED_TANH: return alpha * tanhf(beta * x);
    case CK_SHRINK: return x < -alpha ? x + beta : x > alpha ? x - beta : 0.0f;
    }
    return x;
}

__device__ float apply_chain(const ck_chain &c, float v) {
    for (int k = 0; k < c.count; k++) {
        v = pointwise(c.f[k], v, c.alpha[k], c.beta[k]);
    }
    return v;
}

__global__ void pointwise_kernel(ck_chain c, const float *x, float *y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        y[i] = apply_chain(c, x[i]);
    }
}

// max and min propagate NaN, as numpy's maximum and minimum do.
__device__ float binary(ck_binary f, float a, float b) {
    switch (f) {
    case CK_ADD: return a + b;
    case CK_SUB: return a - b;
    case CK_MUL: return a * b;
    case CK_DIV: return a / b;
    case CK_POW: return powf(a, b);
    case CK_MAX: return isnan(a) || isnan(b) ? a + b : fmaxf(a, b);
    case CK_MIN: return isnan(a) || isnan(b) ? a + b : fminf(a, b);
    case CK_PRELU: return a < 0.0f ? b * a : a;
    case CK_MOD: return fmodf(a, b);
    }
    return a;
}

__global__ void binary_kernel(ck_binary f, const float *a, const float *b, float *y, int64_t n,
                              ck_broadcast g, ck_chain tail) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i, ia = 0, ib = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t c = rest % g.dims[d];
            rest /= g.dims[d];
            ia += c * g.a_strides[d];
            ib += c * g.b_strides[d];
        }
        y[i] = apply_chain(tail, binary(f, a[ia], b[ib]));
    }
}

// Combines one value per thread of the block through shared memory; every
// thread gets the result. Op is a functor (float, float) -> float.
template <typename Op>
__device__ float block_reduce(float v, Op op, float *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + s]);
        }
        __syncthreads();
    }
    float r = shared[0];
    __syncthreads(); // shared is reused by the caller's next reduction
    return r;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const {
        return isnan(a) || isnan(b) ? a + b : fmaxf(a, b);
    }
};
struct MinOp {
    __device__ float operator()(float a, float b) const {
        return isnan(a) || isnan(b) ? a + b : fminf(a, b);
    }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct ProdOp {
    __device__ float operator()(float a, float b) const { return a * b; }
};

// One block per row of the [outer, n, inner] view (outer * inner rows).
__global__ void softmax_kernel(const float *x, float *y, int64_t outer, int64_t n, int64_t inner,
                               bool log) {
    __shared__ float shared[kThreads];
    for (int64_t row = blockIdx.x; row < outer * inner; row += gridDim.x) {
        int64_t o = row / inner, i = row % inner;
        const float *xr = x + o * n * inner + i;
        float *yr = y + o * n * inner + i;
        float m = -INFINITY;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            m = fmaxf(m, xr[j * inner]);
        }
        m = block_reduce(m, MaxOp(), shared);
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            s += expf(xr[j * inner] - m);
        }
        s = block_reduce(s, SumOp(), shared);
        float log_s = logf(s);
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            float v = xr[j * inner] - m;
            yr[j * inner] = log ? v - log_s : expf(v) / s;
        }
    }
}

__device__ int64_t reduce_offset(int rank, const int64_t *dims, const int64_t *strides,
                                 int64_t index) {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        off += (index % dims[d]) * strides[d];
        index /= dims[d];
    }
    return off;
}

// One block per output element: the block's threads fold the reduced
// elements, then the block combines the threads' partial results.
__global__ void reduce_kernel(ck_reduce f, const float *x, float *y, ck_reduce_geometry g) {
    __shared__ float shared[kThreads];
    for (int64_t out = blockIdx.x; out < g.outputs; out += gridDim.x) {
        const float *base = x + reduce_offset(g.kept_rank, g.kept_dims, g.kept_strides, out);
        float r;
        if (f == CK_R_MAX || f == CK_R_MIN || f == CK_R_LOG_SUM_EXP) {
            float m = f == CK_R_MIN ? INFINITY : -INFINITY;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                float v = base[reduce_offset(g.red_rank, g.red_dims, g.red_strides, k)];
                m = f == CK_R_MIN ? MinOp()(m, v) : MaxOp()(m, v);
            }
            m = f == CK_R_MIN ? block_reduce(m, MinOp(), shared)
                              : block_reduce(m, MaxOp(), shared);
            r = m;
            if (f == CK_R_LOG_SUM_EXP && isfinite(m)) {
                float s = 0.0f;
                for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                    s += expf(base[reduce_offset(g.red_rank, g.red_dims, g.red_strides, k)] - m);
                }
                r = m + logf(block_reduce(s, SumOp(), shared));
            }
        } else if (f == CK_R_PROD) {
            float p = 1.0f;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                p *= base[reduce_offset(g.red_rank, g.red_dims, g.red_strides, k)];
            }
            r = block_reduce(p, ProdOp(), shared);
        } else {
            float s = 0.0f;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                float v = base[reduce_offset(g.red_rank, g.red_dims, g.red_strides, k)];
                s += f == CK_R_L1 ? fabsf(v) : (f == CK_R_L2 || f == CK_R_SUM_SQUARE) ? v * v : v;
            }
            s = block_reduce(s, SumOp(), shared);
            r = f == CK_R_MEAN     ? s / (float)g.reduced
                : f == CK_R_L2     ? sqrtf(s)
                : f == CK_R_LOG_SUM ? logf(s)
                                   : s;
        }
        if (threadIdx.x == 0) {
            y[out] = r;
        }
    }
}

} // namespace

extern "C" cudaError_t ck_chain_launch(cudaStream_t stream, const ck_chain *chain,
                                       const float *x, float *y, int64_t n) {
    if (n > 0) {
        pointwise_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(*chain, x, y, n);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_pointwise_launch(cudaStream_t stream, ck_pointwise func, float alpha,
                                           float beta, const float *x, float *y, int64_t n) {
    ck_chain one = {};
    one.count = 1;
    one.f[0] = func;
    one.alpha[0] = alpha;
    one.beta[0] = beta;
    return ck_chain_launch(stream, &one, x, y, n);
}

extern "C" cudaError_t ck_binary_chain_launch(cudaStream_t stream, ck_binary func,
                                              const float *a, const float *b, float *y,
                                              int64_t n, const ck_broadcast *geometry,
                                              const ck_chain *tail) {
    if (n > 0) {
        binary_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(func, a, b, y, n,
                                                                      *geometry, *tail);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_binary_launch(cudaStream_t stream, ck_binary func, const float *a,
                                        const float *b, float *y, int64_t n,
                                        const ck_broadcast *geometry) {
    ck_chain none = {};
    return ck_binary_chain_launch(stream, func, a, b, y, n, geometry, &none);
}

extern "C" cudaError_t ck_softmax_launch(cudaStream_t stream, const float *x, float *y,
                                         int64_t outer, int64_t n, int64_t inner, bool log) {
    if (outer > 0 && n > 0 && inner > 0) {
        softmax_kernel<<<grid_for(outer * inner, 1), kThreads, 0, stream>>>(x, y, outer, n,
                                                                            inner, log);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_reduce_launch(cudaStream_t stream, ck_reduce func, const float *x,
                                        float *y, const ck_reduce_geometry *geometry) {
    if (geometry->outputs > 0) {
        reduce_kernel<<<grid_for(geometry->outputs, 1), kThreads, 0, stream>>>(func, x, y,
                                                                               *geometry);
    }
    return cudaGetLastError();
}
