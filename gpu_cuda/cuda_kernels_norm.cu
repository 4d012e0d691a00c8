// gpu_cuda's normalisation kernels (cuda_kernels.h): layer_norm and
// instance_norm (a warp per row of up to kWarpRow elements, a thread block
// per longer row: the mean, then the variance as the mean of the squared
// deviations from it, two passes over the row, which stays accurate where
// E[x^2] - E[x]^2 would cancel), and batch_norm (inference: per channel,
// elementwise).
#include <math.h>
#include <stdint.h>

#include "cuda_kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocks = 65535;
// Rows up to this long go a warp each (a transformer's widths): a block of
// 256 threads would leave most of them idle and wait on its barriers.
constexpr int64_t kWarpRow = 1024;

unsigned grid_for(int64_t items, int64_t per_block) {
    int64_t blocks = (items + per_block - 1) / per_block;
    if (blocks < 1) {
        blocks = 1;
    }
    return (unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The sum of one value per thread of the block, for every thread: warp
// shuffles, then one value per warp through shared memory.
__device__ float block_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, o);
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x / 32) ? shared[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, o);
        }
        if (lane == 0) {
            shared[0] = v;
        }
    }
    __syncthreads();
    float r = shared[0];
    __syncthreads(); // shared is reused by the caller's next sum
    return r;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v; // every lane has the sum
}

// The row's values normalised, scaled and shifted, from its mean and
// 1 / sqrt(variance + epsilon); j from `first` by `step`.
__device__ void norm_write(const float *xr, float *yr, const float *scale, const float *bias,
                           const ck_norm &g, int64_t row, float mean, float inv, int64_t first,
                           int64_t step) {
    for (int64_t j = first; j < g.n; j += step) {
        float v = (xr[j] - mean) * inv * scale[ck_norm_param(&g, row, j, g.scale_strides)];
        if (g.has_bias) {
            v += bias[ck_norm_param(&g, row, j, g.bias_strides)];
        }
        yr[j] = v;
    }
}

__global__ void norm_warp_kernel(const float *x, const float *scale, const float *bias, float *y,
                                 ck_norm g) {
    int lane = threadIdx.x % 32;
    int64_t warps = (int64_t)gridDim.x * kWarps;
    for (int64_t row = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32; row < g.rows;
         row += warps) {
        const float *xr = x + row * g.n;
        float s = 0.0f;
        for (int64_t j = lane; j < g.n; j += 32) {
            s += xr[j];
        }
        float mean = warp_sum(s) / (float)g.n;
        float q = 0.0f;
        for (int64_t j = lane; j < g.n; j += 32) {
            float d = xr[j] - mean;
            q += d * d;
        }
        float inv = 1.0f / sqrtf(warp_sum(q) / (float)g.n + g.epsilon);
        norm_write(xr, y + row * g.n, scale, bias, g, row, mean, inv, lane, 32);
    }
}

__global__ void norm_kernel(const float *x, const float *scale, const float *bias, float *y,
                            ck_norm g) {
    __shared__ float shared[kThreads / 32];
    for (int64_t row = blockIdx.x; row < g.rows; row += gridDim.x) {
        const float *xr = x + row * g.n;
        float *yr = y + row * g.n;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < g.n; j += blockDim.x) {
            s += xr[j];
        }
        float mean = block_sum(s, shared) / (float)g.n;
        float q = 0.0f;
        for (int64_t j = threadIdx.x; j < g.n; j += blockDim.x) {
            float d = xr[j] - mean;
            q += d * d;
        }
        float inv = 1.0f / sqrtf(block_sum(q, shared) / (float)g.n + g.epsilon);
        norm_write(xr, yr, scale, bias, g, row, mean, inv, threadIdx.x, blockDim.x);
    }
}

__global__ void batch_norm_kernel(const float *x, const float *scale, const float *bias,
                                  const float *mean, const float *var, float *y,
                                  ck_batch_norm g) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.count;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = ck_batch_norm_channel(&g, i);
        y[i] = (x[i] - mean[c]) / sqrtf(var[c] + g.epsilon) * scale[c] + bias[c];
    }
}

} // namespace

extern "C" cudaError_t ck_norm_launch(cudaStream_t stream, const float *x, const float *scale,
                                      const float *bias, float *y, const ck_norm *geometry) {
    if (geometry->rows > 0 && geometry->n > 0 && geometry->n <= kWarpRow) {
        norm_warp_kernel<<<grid_for(geometry->rows, kWarps), kThreads, 0, stream>>>(
            x, scale, bias, y, *geometry);
    } else if (geometry->rows > 0 && geometry->n > 0) {
        norm_kernel<<<grid_for(geometry->rows, 1), kThreads, 0, stream>>>(x, scale, bias, y,
                                                                          *geometry);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_batch_norm_launch(cudaStream_t stream, const float *x,
                                            const float *scale, const float *bias,
                                            const float *mean, const float *var, float *y,
                                            const ck_batch_norm *geometry) {
    if (geometry->count > 0) {
        batch_norm_kernel<<<grid_for(geometry->count, kThreads), kThreads, 0, stream>>>(
            x, scale, bias, mean, var, y, *geometry);
    }
    return cudaGetLastError();
}
