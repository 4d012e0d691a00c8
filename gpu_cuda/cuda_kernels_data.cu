// gpu_cuda's data-movement and pooling kernels (cuda_kernels.h): strided
// copies (ck_view; in shared-memory tiles where they swap the two innermost
// dims), pad, gather, where, cast, pool and resize. The copies move
// elements of 1, 2, 4 or 8 bytes as unsigned integers of that size, so
// one kernel serves every dtype. What each output element reads is
// cuda_index.h's arithmetic; grids stride over their work, so any size
// launches with a bounded grid.
#include <stdint.h>
#include <string.h>

#include <cuda_fp16.h>

#include "cuda_kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

unsigned grid_for(int64_t items) {
    int64_t blocks = (items + kThreads - 1) / kThreads;
    if (blocks < 1) {
        blocks = 1;
    }
    return (unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

#define CK_GRID_STRIDE(i, n)                                                         \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ void view_kernel(const T *src, T *dst, ck_view v) {
    CK_GRID_STRIDE(i, v.count) {
        int64_t s, d;
        ck_view_offsets(&v, i, &s, &d);
        dst[d] = src[s];
    }
}

// One tile per block iteration, CK_TILE x 8 threads (cuda_index.h).
constexpr int kTileRows = 8;

template <typename T>
__global__ void tiled_view_kernel(const T *src, T *dst, ck_view v, int64_t tiles) {
    __shared__ T tile[CK_TILE][CK_TILE + 1]; // +1: no bank conflicts on the column reads
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        for (int r = threadIdx.y; r < CK_TILE; r += kTileRows) {
            int64_t s;
            if (ck_tile_load(&v, t, threadIdx.x, r, &s)) {
                tile[r][threadIdx.x] = src[s];
            }
        }
        __syncthreads();
        for (int r = threadIdx.y; r < CK_TILE; r += kTileRows) {
            int64_t d;
            if (ck_tile_store(&v, t, threadIdx.x, r, &d)) {
                dst[d] = tile[threadIdx.x][r];
            }
        }
        __syncthreads(); // the tile is reloaded by the next iteration
    }
}

template <typename T>
__global__ void pad_kernel(const T *x, T *y, ck_pad g, T value) {
    CK_GRID_STRIDE(i, g.count) {
        int64_t s = ck_pad_source(&g, i);
        y[i] = s < 0 ? value : x[s];
    }
}

template <typename T>
__global__ void gather_kernel(const T *data, const void *indices, T *y, ck_gather g, int *bad) {
    CK_GRID_STRIDE(i, g.count) {
        int64_t s = ck_gather_source(&g, i, ck_gather_index(&g, indices, ck_gather_index_at(&g, i)));
        if (s < 0) {
            *bad = 1;
            y[i] = T(0);
        } else {
            y[i] = data[s];
        }
    }
}

template <typename T>
__global__ void where_kernel(const unsigned char *cond, const T *x, const T *y, T *z, ck_where g) {
    CK_GRID_STRIDE(i, g.count) {
        int64_t c, a, b;
        ck_where_offsets(&g, i, &c, &a, &b);
        z[i] = cond[c] ? x[a] : y[b];
    }
}

// Launches kernel K<T> for the unsigned type of `elem` bytes.
template <template <typename> class K, typename... Args>
cudaError_t launch_sized(size_t elem, Args... args) {
    switch (elem) {
    case 1: K<uint8_t>::run(args...); break;
    case 2: K<uint16_t>::run(args...); break;
    case 4: K<uint32_t>::run(args...); break;
    case 8: K<unsigned long long>::run(args...); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

template <typename T> struct ViewLaunch {
    static void run(cudaStream_t s, const void *src, void *dst, const ck_view *v) {
        if (ck_view_tiled(v)) {
            int64_t tiles = ck_tile_count(v);
            unsigned grid = (unsigned)(tiles < kMaxBlocks ? tiles : kMaxBlocks);
            tiled_view_kernel<T><<<grid, dim3(CK_TILE, kTileRows), 0, s>>>(
                (const T *)src, (T *)dst, *v, tiles);
        } else {
            view_kernel<T><<<grid_for(v->count), kThreads, 0, s>>>((const T *)src, (T *)dst, *v);
        }
    }
};

template <typename T> struct PadLaunch {
    static void run(cudaStream_t s, const void *x, void *y, const ck_pad *g) {
        T value;
        memcpy(&value, g->value, sizeof value);
        pad_kernel<T><<<grid_for(g->count), kThreads, 0, s>>>((const T *)x, (T *)y, *g, value);
    }
};

template <typename T> struct GatherLaunch {
    static void run(cudaStream_t s, const void *data, const void *indices, void *y,
                    const ck_gather *g, int *bad) {
        gather_kernel<T><<<grid_for(g->count), kThreads, 0, s>>>((const T *)data, indices, (T *)y,
                                                                 *g, bad);
    }
};

template <typename T> struct WhereLaunch {
    static void run(cudaStream_t s, const unsigned char *cond, const void *x, const void *y,
                    void *z, const ck_where *g) {
        where_kernel<T><<<grid_for(g->count), kThreads, 0, s>>>(cond, (const T *)x, (const T *)y,
                                                                (T *)z, *g);
    }
};

// Cast: integers pass through int64_t, floats through float, so that
// int64 to int32 and the like are exact (modulo 2^32, as C converts).
__device__ bool cast_is_int(ck_dtype t) { return t == CK_DT_I32 || t == CK_DT_I64 || t == CK_DT_BOOL; }

__device__ float load_float(ck_dtype t, const void *p, int64_t i) {
    switch (t) {
    case CK_DT_F16: return __half2float(((const __half *)p)[i]);
    case CK_DT_I32: return (float)((const int32_t *)p)[i];
    case CK_DT_I64: return (float)((const int64_t *)p)[i];
    case CK_DT_BOOL: return ((const unsigned char *)p)[i] ? 1.0f : 0.0f;
    default: return ((const float *)p)[i];
    }
}

__device__ int64_t load_int(ck_dtype t, const void *p, int64_t i) {
    switch (t) {
    case CK_DT_I32: return ((const int32_t *)p)[i];
    case CK_DT_I64: return ((const int64_t *)p)[i];
    default: return ((const unsigned char *)p)[i] ? 1 : 0;
    }
}

__global__ void cast_kernel(ck_dtype from, ck_dtype to, const void *x, void *y, int64_t n) {
    CK_GRID_STRIDE(i, n) {
        if (cast_is_int(from)) {
            int64_t v = load_int(from, x, i);
            switch (to) {
            case CK_DT_F32: ((float *)y)[i] = (float)v; break;
            case CK_DT_F16: ((__half *)y)[i] = __float2half_rn((float)v); break;
            case CK_DT_I32: ((int32_t *)y)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
            case CK_DT_I64: ((int64_t *)y)[i] = v; break;
            case CK_DT_BOOL: ((unsigned char *)y)[i] = v != 0; break;
            }
        } else {
            float v = load_float(from, x, i);
            switch (to) {
            case CK_DT_F32: ((float *)y)[i] = v; break;
            case CK_DT_F16: ((__half *)y)[i] = __float2half_rn(v); break;
            case CK_DT_I32: ((int32_t *)y)[i] = (int32_t)v; break;
            case CK_DT_I64: ((int64_t *)y)[i] = (int64_t)v; break;
            case CK_DT_BOOL: ((unsigned char *)y)[i] = v != 0.0f; break;
            }
        }
    }
}

__global__ void pool_kernel(const float *x, float *y, int64_t *indices, ck_pool g) {
    CK_GRID_STRIDE(i, g.count) {
        int64_t at;
        y[i] = ck_pool_value(&g, x, i, &at);
        if (indices) {
            indices[i] = at;
        }
    }
}

__global__ void resize_kernel(const float *x, float *y, const ck_resize_tap *taps, ck_resize g) {
    CK_GRID_STRIDE(i, g.count) {
        y[i] = ck_resize_value(&g, taps, taps + g.out_h, x, i);
    }
}

} // namespace

extern "C" cudaError_t ck_view_launch(cudaStream_t stream, const void *src, void *dst, size_t elem,
                                      const ck_view *view) {
    if (view->count <= 0) {
        return cudaGetLastError();
    }
    return launch_sized<ViewLaunch>(elem, stream, src, dst, view);
}

extern "C" cudaError_t ck_pad_launch(cudaStream_t stream, const void *x, void *y, size_t elem,
                                     const ck_pad *geometry) {
    if (geometry->count <= 0) {
        return cudaGetLastError();
    }
    return launch_sized<PadLaunch>(elem, stream, x, y, geometry);
}

extern "C" cudaError_t ck_gather_launch(cudaStream_t stream, const void *data, const void *indices,
                                        void *y, size_t elem, const ck_gather *geometry,
                                        int *bad) {
    if (geometry->count <= 0) {
        return cudaGetLastError();
    }
    return launch_sized<GatherLaunch>(elem, stream, data, indices, y, geometry, bad);
}

extern "C" cudaError_t ck_where_launch(cudaStream_t stream, const unsigned char *cond,
                                       const void *x, const void *y, void *z, size_t elem,
                                       const ck_where *geometry) {
    if (geometry->count <= 0) {
        return cudaGetLastError();
    }
    return launch_sized<WhereLaunch>(elem, stream, cond, x, y, z, geometry);
}

extern "C" cudaError_t ck_cast_launch(cudaStream_t stream, ck_dtype from, ck_dtype to,
                                      const void *x, void *y, int64_t n) {
    if (n > 0) {
        cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(from, to, x, y, n);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_resize_launch(cudaStream_t stream, const float *x, float *y,
                                        const ck_resize_tap *taps, const ck_resize *geometry) {
    if (geometry->count > 0) {
        resize_kernel<<<grid_for(geometry->count), kThreads, 0, stream>>>(x, y, taps, *geometry);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ck_pool_launch(cudaStream_t stream, const float *x, float *y,
                                      int64_t *indices, const ck_pool *geometry) {
    if (geometry->count > 0) {
        pool_kernel<<<grid_for(geometry->count), kThreads, 0, stream>>>(x, y, indices, *geometry);
    }
    return cudaGetLastError();
}
