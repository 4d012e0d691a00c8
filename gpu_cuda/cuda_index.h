/* The index arithmetic of gpu_cuda's data-movement, pooling and
 * normalisation kernels: which source element an output element reads,
 * pool windows, pad coordinates. Plain C11 that also compiles under nvcc,
 * where every function is __host__ __device__: the kernels
 * (cuda_kernels_data.cu, cuda_kernels_norm.cu) call these functions, and
 * tests/test_gpu_cuda_index.c calls the same ones on the host over every
 * output element of small cases and compares with cpu_ref. The geometry
 * structs are filled by cuda_geometry.c from a layer's shapes and
 * descriptor; they are passed to kernels by value. Not exported. */
#ifndef GPU_CUDA_CUDA_INDEX_H
#define GPU_CUDA_CUDA_INDEX_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define CK_HD __host__ __device__ static inline
#else
#define CK_HD static inline
#endif

#define CK_INDEX_MAX_RANK 8
/* A view doubles the rank for tile (a repeat dim and an input dim per dim). */
#define CK_VIEW_MAX_RANK 16

/* A strided copy of one tensor into another: an iteration space of `count`
 * elements over `dims`, each dim with the stride (in elements) at which the
 * source and the destination advance along it, from src_base and dst_base.
 * Transpose, slice, expand, tile, concat (one view per input), split (one
 * per output), depth_to_space and space_to_depth are each such views. */
typedef struct ck_view {
    int rank;
    int64_t dims[CK_VIEW_MAX_RANK];
    int64_t src_strides[CK_VIEW_MAX_RANK];
    int64_t dst_strides[CK_VIEW_MAX_RANK];
    int64_t src_base, dst_base;
    int64_t count;
    uint32_t src_slot, dst_slot; /* the layer's input and output they copy */
} ck_view;

/* The source and destination element offsets of element i of the view. */
CK_HD void ck_view_offsets(const ck_view *v, int64_t i, int64_t *src, int64_t *dst) {
    int64_t s = v->src_base, d = v->dst_base;
    for (int k = v->rank - 1; k >= 0; k--) {
        int64_t c = i % v->dims[k];
        i /= v->dims[k];
        s += c * v->src_strides[k];
        d += c * v->dst_strides[k];
    }
    *src = s;
    *dst = d;
}

/* A view whose two innermost dims are swapped between the source and the
 * destination (the source walks the next-to-last one contiguously, the
 * destination the last one) is copied in square tiles of CK_TILE x
 * CK_TILE elements through shared memory, so that both the reads and the
 * writes of a warp are contiguous: a thread block loads a tile with its
 * threads along the source's contiguous dim, and stores it with them
 * along the destination's. Tiles are numbered over the outer dims, then
 * the tiles of the next-to-last dim, then of the last. Thread (lx, r) of
 * a tile, lx and r in [0, CK_TILE), loads the element at (row r, column
 * lx) of the tile's [last dim][next-to-last dim] storage, and stores the
 * one at (row lx, column r). */
#define CK_TILE 32

CK_HD bool ck_view_tiled(const ck_view *v) {
    return v->rank >= 2 && v->src_strides[v->rank - 2] == 1 && v->dst_strides[v->rank - 1] == 1 &&
           v->src_strides[v->rank - 1] != 1 && v->dims[v->rank - 2] >= 8 &&
           v->dims[v->rank - 1] >= 8;
}

CK_HD int64_t ck_tile_count(const ck_view *v) {
    int64_t a = v->dims[v->rank - 2], b = v->dims[v->rank - 1];
    return v->count / (a * b) * ((a + CK_TILE - 1) / CK_TILE) * ((b + CK_TILE - 1) / CK_TILE);
}

/* Offsets of element (i, j) of the two innermost dims of tile `tile`'s
 * outer index; false when (i, j) lies past the view. */
CK_HD bool ck_tile_element(const ck_view *v, int64_t tile, int64_t di, int64_t dj, int64_t *src,
                           int64_t *dst) {
    int n = v->rank;
    int64_t a = v->dims[n - 2], b = v->dims[n - 1];
    int64_t ta = (a + CK_TILE - 1) / CK_TILE, tb = (b + CK_TILE - 1) / CK_TILE;
    int64_t i = (tile / tb) % ta * CK_TILE + di, j = tile % tb * CK_TILE + dj;
    if (i >= a || j >= b) {
        return false;
    }
    int64_t o = tile / (ta * tb), s = v->src_base, d = v->dst_base;
    for (int k = n - 3; k >= 0; k--) {
        int64_t c = o % v->dims[k];
        o /= v->dims[k];
        s += c * v->src_strides[k];
        d += c * v->dst_strides[k];
    }
    *src = s + i * v->src_strides[n - 2] + j * v->src_strides[n - 1];
    *dst = d + i * v->dst_strides[n - 2] + j * v->dst_strides[n - 1];
    return true;
}

/* Thread (lx, r)'s load: the source element for storage [r][lx]. */
CK_HD bool ck_tile_load(const ck_view *v, int64_t tile, int lx, int r, int64_t *src) {
    int64_t dst;
    return ck_tile_element(v, tile, lx, r, src, &dst);
}

/* Thread (lx, r)'s store: the destination of storage [lx][r]. */
CK_HD bool ck_tile_store(const ck_view *v, int64_t tile, int lx, int r, int64_t *dst) {
    int64_t src;
    return ck_tile_element(v, tile, r, lx, &src, dst);
}

/* Pad modes, the values of plx_pad_mode. */
enum { CK_PAD_CONSTANT = 0, CK_PAD_REFLECT = 1, CK_PAD_EDGE = 2, CK_PAD_WRAP = 3 };

typedef struct ck_pad {
    int rank;
    int mode;
    int64_t out_dims[CK_INDEX_MAX_RANK];
    int64_t in_dims[CK_INDEX_MAX_RANK];
    int64_t in_strides[CK_INDEX_MAX_RANK];
    int64_t pads_begin[CK_INDEX_MAX_RANK]; /* negative: a crop */
    int64_t count;                         /* output elements */
    unsigned char value[8];                /* the constant, in the tensor's dtype */
} ck_pad;

/* The input coordinate that coordinate c (possibly outside [0, n)) of a
 * padded dim of n elements reads; -1 for the constant. Reflect mirrors
 * without repeating the edge, as often as the pad needs; wrap repeats the
 * dim. */
CK_HD int64_t ck_pad_coord(int mode, int64_t c, int64_t n) {
    if (c >= 0 && c < n) {
        return c;
    }
    if (mode == CK_PAD_CONSTANT) {
        return -1;
    }
    if (mode == CK_PAD_WRAP) {
        int64_t m = c % n;
        return m < 0 ? m + n : m;
    }
    if (mode == CK_PAD_EDGE || n == 1) {
        return c < 0 ? 0 : n - 1;
    }
    int64_t period = 2 * (n - 1);
    int64_t m = c % period;
    m = m < 0 ? m + period : m;
    return m < n ? m : period - m;
}

/* The input element that output element i reads; -1 for the constant. */
CK_HD int64_t ck_pad_source(const ck_pad *g, int64_t i) {
    int64_t off = 0;
    for (int k = g->rank - 1; k >= 0; k--) {
        int64_t c = ck_pad_coord(g->mode, i % g->out_dims[k] - g->pads_begin[k], g->in_dims[k]);
        i /= g->out_dims[k];
        if (c < 0) {
            return -1;
        }
        off += c * g->in_strides[k];
    }
    return off;
}

/* Gather along one axis: data as [outer, axis_dim, inner], indices as
 * `index_count` values, the output as [outer, index_count, inner]. */
typedef struct ck_gather {
    int64_t outer, axis_dim, inner, index_count;
    int64_t count; /* output elements */
    int index_bytes; /* 1: int8 or uint8, 4: int32, 8: int64 */
    bool index_unsigned; /* uint8 */
} ck_gather;

/* The index at position `at` of the indices. */
CK_HD int64_t ck_gather_index(const ck_gather *g, const void *indices, int64_t at) {
    switch (g->index_bytes) {
    case 1:
        return g->index_unsigned ? (int64_t)((const uint8_t *)indices)[at]
                                 : (int64_t)((const int8_t *)indices)[at];
    case 4: return ((const int32_t *)indices)[at];
    default: return ((const int64_t *)indices)[at];
    }
}

/* The position in the indices of the index output element i reads through. */
CK_HD int64_t ck_gather_index_at(const ck_gather *g, int64_t i) {
    return (i / g->inner) % g->index_count;
}

/* The data element output element i reads, given that index's value
 * (negative counts from the end); -1 when it is out of range. */
CK_HD int64_t ck_gather_source(const ck_gather *g, int64_t i, int64_t index) {
    if (index < -g->axis_dim || index >= g->axis_dim) {
        return -1;
    }
    if (index < 0) {
        index += g->axis_dim;
    }
    int64_t o = i / (g->inner * g->index_count);
    return (o * g->axis_dim + index) * g->inner + i % g->inner;
}

/* Where: the output's dims and each operand's broadcast strides. */
typedef struct ck_where {
    int rank;
    int64_t dims[CK_INDEX_MAX_RANK];
    int64_t c_strides[CK_INDEX_MAX_RANK];
    int64_t x_strides[CK_INDEX_MAX_RANK];
    int64_t y_strides[CK_INDEX_MAX_RANK];
    int64_t count;
} ck_where;

CK_HD void ck_where_offsets(const ck_where *g, int64_t i, int64_t *c, int64_t *x, int64_t *y) {
    int64_t oc = 0, ox = 0, oy = 0;
    for (int k = g->rank - 1; k >= 0; k--) {
        int64_t p = i % g->dims[k];
        i /= g->dims[k];
        oc += p * g->c_strides[k];
        ox += p * g->x_strides[k];
        oy += p * g->y_strides[k];
    }
    *c = oc;
    *x = ox;
    *y = oy;
}

/* Pool kinds, the values of plx_pool_kind. */
enum { CK_POOL_MAX = 0, CK_POOL_AVERAGE = 1, CK_POOL_LP = 2 };

/* A max, average or lp pool over up to three spatial dims, in the order
 * depth, height, width (a pool of fewer dims has trivial leading ones:
 * in, out, k, s, d 1, pads 0); the planes (N * C) follow from count. A
 * global pool is one window of the whole input. */
typedef struct ck_pool {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int kind;
    float p; /* lp */
    bool count_include_pad;
    bool column_major; /* Indices of 1-D and 2-D pools: h + w * H */
    int64_t count;     /* output elements */
} ck_pool;

/* The input position of tap t of output position o along dim `dim`. */
CK_HD int64_t ck_pool_tap(const ck_pool *g, int dim, int64_t o, int64_t t) {
    return o * g->s[dim] - g->pb[dim] + t * g->d[dim];
}

/* Output element i of the pool over x: the window's maximum (the first in
 * the window's row-major order, a NaN counting as larger than any number;
 * -inf and index -1 for a window with nothing inside X) with its position
 * in X flattened into *index (when not NULL), or its average over the taps
 * inside X (and, with count_include_pad, those in the padding but not
 * past it; NaN for an average of nothing), or (sum of |x|^p)^(1/p) over
 * the taps inside X (padding adds nothing: 0 for a window of padding). */
CK_HD float ck_pool_value(const ck_pool *g, const float *x, int64_t i, int64_t *index) {
    int64_t o[3];
    int64_t r = i;
    for (int k = 2; k >= 0; k--) {
        o[k] = r % g->out[k];
        r /= g->out[k];
    }
    int64_t plane = r * g->in[0] * g->in[1] * g->in[2];
    float best = -INFINITY, sum = 0.0f;
    int64_t at = -1, count = 0;
    for (int64_t td = 0; td < g->k[0]; td++) {
        int64_t id = ck_pool_tap(g, 0, o[0], td);
        bool d_in = id >= 0 && id < g->in[0];
        bool d_pad = id >= -g->pb[0] && id < g->in[0] + g->pe[0];
        for (int64_t th = 0; th < g->k[1]; th++) {
            int64_t ih = ck_pool_tap(g, 1, o[1], th);
            bool h_in = d_in && ih >= 0 && ih < g->in[1];
            bool h_pad = d_pad && ih >= -g->pb[1] && ih < g->in[1] + g->pe[1];
            for (int64_t tw = 0; tw < g->k[2]; tw++) {
                int64_t iw = ck_pool_tap(g, 2, o[2], tw);
                if (h_in && iw >= 0 && iw < g->in[2]) {
                    float v = x[plane + (id * g->in[1] + ih) * g->in[2] + iw];
                    if (g->kind == CK_POOL_MAX) {
                        if (at < 0 || (v > best && !isnan(best)) || (isnan(v) && !isnan(best))) {
                            best = v;
                            at = plane + (g->column_major ? ih + iw * g->in[1]
                                                          : (id * g->in[1] + ih) * g->in[2] + iw);
                        }
                    } else if (g->kind == CK_POOL_LP) {
                        float a = fabsf(v);
                        sum += g->p == 1.0f ? a : g->p == 2.0f ? a * a : powf(a, g->p);
                    } else {
                        sum += v;
                    }
                    count++;
                } else if (g->count_include_pad && h_pad && iw >= -g->pb[2] &&
                           iw < g->in[2] + g->pe[2]) {
                    count++;
                }
            }
        }
    }
    if (index) {
        *index = at;
    }
    if (g->kind == CK_POOL_MAX) {
        return best;
    }
    if (g->kind == CK_POOL_LP) {
        return g->p == 1.0f ? sum : g->p == 2.0f ? sqrtf(sum) : powf(sum, 1.0f / g->p);
    }
    return count ? sum / (float)count : NAN;
}

/* Resize of the last two dims of NCHW, separable: output row oy reads the
 * input rows rows[oy].at[0..taps-1] with weights rows[oy].w, and output
 * column ox the columns cols[ox]; nearest takes 1 tap (weight 1), linear
 * 2 and cubic 4. The taps are planned on the host (cuda_geometry.c) from
 * the SDK's coordinate rules, so that the kernel only weighs. */
#define CK_RESIZE_MAX_TAPS 4
typedef struct ck_resize_tap {
    int64_t at[CK_RESIZE_MAX_TAPS];
    float w[CK_RESIZE_MAX_TAPS];
    bool outside; /* tf_crop_and_resize: the extrapolation value */
} ck_resize_tap;

typedef struct ck_resize {
    int64_t in_h, in_w, out_h, out_w;
    int64_t count; /* output elements */
    int taps;
    float extrapolation;
} ck_resize;

CK_HD float ck_resize_value(const ck_resize *g, const ck_resize_tap *rows,
                            const ck_resize_tap *cols, const float *x, int64_t i) {
    int64_t ox = i % g->out_w, r = i / g->out_w;
    int64_t oy = r % g->out_h, plane = r / g->out_h;
    const float *xp = x + plane * g->in_h * g->in_w;
    const ck_resize_tap *ty = &rows[oy], *tx = &cols[ox];
    if (ty->outside || tx->outside) {
        return g->extrapolation;
    }
    /* Taps of weight 0 take no part, so that an infinity beside the point
     * the output falls on does not make it NaN (0 * inf). */
    float acc = 0.0f;
    for (int a = 0; a < g->taps; a++) {
        if (ty->w[a] == 0.0f) {
            continue;
        }
        float row = 0.0f;
        for (int b = 0; b < g->taps; b++) {
            if (tx->w[b] != 0.0f) {
                row += tx->w[b] * xp[ty->at[a] * g->in_w + tx->at[b]];
            }
        }
        acc += ty->w[a] * row;
    }
    return acc;
}

/* The normalisations over rows: layer_norm (a row is the dims from the
 * axis on, row_dims; scale and bias broadcast over them, read at their
 * strides) and instance_norm (a row is one channel of one image; scale
 * and bias per channel). */
typedef struct ck_norm {
    int64_t rows, n;    /* rows of n elements */
    int64_t channels;   /* instance_norm: C; layer_norm: 0 */
    int row_rank;       /* layer_norm */
    int64_t row_dims[CK_INDEX_MAX_RANK];
    int64_t scale_strides[CK_INDEX_MAX_RANK];
    int64_t bias_strides[CK_INDEX_MAX_RANK];
    bool has_bias;
    float epsilon;
} ck_norm;

/* The element of scale or bias (its strides) that element j of row `row`
 * uses. */
CK_HD int64_t ck_norm_param(const ck_norm *g, int64_t row, int64_t j, const int64_t *strides) {
    if (g->channels > 0) {
        return row % g->channels;
    }
    int64_t off = 0;
    for (int k = g->row_rank - 1; k >= 0; k--) {
        off += (j % g->row_dims[k]) * strides[k];
        j /= g->row_dims[k];
    }
    return off;
}

/* batch_norm (inference): X as [N, channels, inner]. */
typedef struct ck_batch_norm {
    int64_t channels, inner, count;
    float epsilon;
} ck_batch_norm;

CK_HD int64_t ck_batch_norm_channel(const ck_batch_norm *g, int64_t i) {
    return (i / g->inner) % g->channels;
}

#endif /* GPU_CUDA_CUDA_INDEX_H */
