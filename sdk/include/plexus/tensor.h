/* Tensors: data types, shapes, quantization parameters and tensor infos.
 * Shared by applications and backends. Includes only standard headers and
 * the other SDK headers; the helpers are static inline so that backends
 * need nothing from libplexus. */
#ifndef PLEXUS_TENSOR_H
#define PLEXUS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Values are part of the ABI: only append. */
typedef enum plx_dtype {
    PLX_DTYPE_INVALID = 0,
    PLX_DTYPE_FLOAT32 = 1,
    PLX_DTYPE_FLOAT16 = 2,
    PLX_DTYPE_BFLOAT16 = 3,
    PLX_DTYPE_INT8 = 4,
    PLX_DTYPE_UINT8 = 5,
    PLX_DTYPE_INT16 = 6,
    PLX_DTYPE_INT32 = 7,
    PLX_DTYPE_INT64 = 8,
    PLX_DTYPE_BOOL = 9 /* one byte, 0 or 1 */
} plx_dtype;

#define PLX_DTYPE_COUNT 10

/* Bytes per element; 0 for PLX_DTYPE_INVALID or an unknown value. */
static inline size_t plx_dtype_size(plx_dtype dtype) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32:
    case PLX_DTYPE_INT32:
        return 4;
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_INT16:
        return 2;
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_BOOL:
        return 1;
    case PLX_DTYPE_INT64:
        return 8;
    case PLX_DTYPE_INVALID:
        break;
    }
    return 0;
}

/* "float32", "int64", ...; "invalid" for anything else. */
static inline const char *plx_dtype_name(plx_dtype dtype) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32: return "float32";
    case PLX_DTYPE_FLOAT16: return "float16";
    case PLX_DTYPE_BFLOAT16: return "bfloat16";
    case PLX_DTYPE_INT8: return "int8";
    case PLX_DTYPE_UINT8: return "uint8";
    case PLX_DTYPE_INT16: return "int16";
    case PLX_DTYPE_INT32: return "int32";
    case PLX_DTYPE_INT64: return "int64";
    case PLX_DTYPE_BOOL: return "bool";
    case PLX_DTYPE_INVALID: break;
    }
    return "invalid";
}

/* Tensors have rank 0 (a scalar) to PLX_MAX_RANK. */
#define PLX_MAX_RANK 8

/* Quantization of a tensor's values: real = (q - zero_point) * scale.
 * Per-tensor parameters live inline. Per-axis parameters point to arrays of
 * dims[axis] entries owned by whoever owns the tensor info (for layers of a
 * network: the network, for its lifetime). */
typedef enum plx_quant_kind {
    PLX_QUANT_NONE = 0,
    PLX_QUANT_PER_TENSOR = 1,
    PLX_QUANT_PER_AXIS = 2
} plx_quant_kind;

typedef struct plx_quant_params {
    plx_quant_kind kind;
    float scale;          /* PLX_QUANT_PER_TENSOR */
    int32_t zero_point;   /* PLX_QUANT_PER_TENSOR */
    int32_t axis;         /* PLX_QUANT_PER_AXIS: the channel axis, 0 <= axis < rank */
    const float *scales;  /* PLX_QUANT_PER_AXIS: dims[axis] entries */
    const int32_t *zero_points; /* PLX_QUANT_PER_AXIS: dims[axis] entries, or NULL for 0 */
} plx_quant_params;

/* What a tensor is: element type, shape, quantization. The layout is dense
 * and row-major (the last dimension varies fastest); plx_tensor_info_strides
 * gives the element strides of that layout. Layout frozen for ABI major 1
 * (tensor infos travel in arrays). */
typedef struct plx_tensor_info {
    plx_dtype dtype;
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK]; /* dims[0..rank-1] >= 0; the rest 0 */
    plx_quant_params quant;
} plx_tensor_info;

/* Number of elements (1 for rank 0). Returns false when a dimension is
 * negative, the rank is over PLX_MAX_RANK, or the product overflows size_t. */
static inline bool plx_tensor_info_element_count(const plx_tensor_info *info, size_t *out_count) {
    if (info->rank > PLX_MAX_RANK) {
        return false;
    }
    size_t n = 1;
    bool zero = false;
    for (uint32_t i = 0; i < info->rank; i++) {
        int64_t d = info->dims[i];
        if (d < 0) {
            return false;
        }
        if (d == 0) {
            zero = true; /* still check the other dims for sign and overflow */
            continue;
        }
        if ((uint64_t)d > SIZE_MAX / n) {
            return false;
        }
        n *= (size_t)d;
    }
    *out_count = zero ? 0 : n;
    return true;
}

/* Size in bytes of the dense tensor. Returns false on an invalid dtype or
 * shape, or when the size overflows size_t. */
static inline bool plx_tensor_info_byte_size(const plx_tensor_info *info, size_t *out_size) {
    size_t n, elem = plx_dtype_size(info->dtype);
    if (elem == 0 || !plx_tensor_info_element_count(info, &n) || n > SIZE_MAX / elem) {
        return false;
    }
    *out_size = n * elem;
    return true;
}

/* Element strides of the dense row-major layout: strides[rank-1] = 1.
 * Assumes a shape for which plx_tensor_info_element_count succeeded. */
static inline void plx_tensor_info_strides(const plx_tensor_info *info,
                                           int64_t strides[PLX_MAX_RANK]) {
    int64_t s = 1;
    for (uint32_t i = info->rank; i-- > 0;) {
        strides[i] = s;
        s *= info->dims[i] > 0 ? info->dims[i] : 1;
    }
    for (uint32_t i = info->rank; i < PLX_MAX_RANK; i++) {
        strides[i] = 0;
    }
}

/* True when dtype, rank and dims are equal (quantization is not compared). */
static inline bool plx_tensor_info_same_shape(const plx_tensor_info *a, const plx_tensor_info *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) {
        return false;
    }
    for (uint32_t i = 0; i < a->rank && i < PLX_MAX_RANK; i++) {
        if (a->dims[i] != b->dims[i]) {
            return false;
        }
    }
    return true;
}

/* The element strides with which dense tensor `in` is read when broadcast
 * (numpy's rules, aligned at the last dimension) to shape `out`: 0 along
 * the dimensions it is broadcast over, and past out's rank. false when `in`
 * does not broadcast to `out`. */
static inline bool plx_tensor_info_broadcast_strides(const plx_tensor_info *in,
                                                     const plx_tensor_info *out,
                                                     int64_t strides[PLX_MAX_RANK]) {
    if (in->rank > out->rank || out->rank > PLX_MAX_RANK) {
        return false;
    }
    int64_t in_strides[PLX_MAX_RANK];
    plx_tensor_info_strides(in, in_strides);
    uint32_t lead = out->rank - in->rank;
    for (uint32_t d = 0; d < out->rank; d++) {
        if (d < lead) {
            strides[d] = 0;
            continue;
        }
        int64_t di = in->dims[d - lead];
        if (di == out->dims[d]) {
            strides[d] = di == 1 ? 0 : in_strides[d - lead];
        } else if (di == 1) {
            strides[d] = 0;
        } else {
            return false;
        }
    }
    for (uint32_t d = out->rank; d < PLX_MAX_RANK; d++) {
        strides[d] = 0;
    }
    return true;
}

/* True when `out` is exactly the broadcast of the `count` shapes `ins`:
 * each broadcasts to it, and each of its dimensions other than 1 is some
 * input's. */
static inline bool plx_tensor_info_is_broadcast_of(const plx_tensor_info *const *ins,
                                                   uint32_t count, const plx_tensor_info *out) {
    int64_t strides[PLX_MAX_RANK];
    for (uint32_t k = 0; k < count; k++) {
        if (!plx_tensor_info_broadcast_strides(ins[k], out, strides)) {
            return false;
        }
    }
    for (uint32_t d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1) {
            continue;
        }
        bool found = false;
        for (uint32_t k = 0; k < count; k++) {
            uint32_t lead = out->rank - ins[k]->rank;
            if (d >= lead && ins[k]->dims[d - lead] == out->dims[d]) {
                found = true;
            }
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_TENSOR_H */
