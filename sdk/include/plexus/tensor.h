/* Tensors: data types, shapes, quantization parameters and tensor infos.
 * Shared by applications and backends. Includes only standard headers and
 * the other SDK headers; the helpers are static inline so that backends
 * need nothing from libplexus. */
#ifndef PLEXUS_TENSOR_H
#define PLEXUS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    PLX_DTYPE_BOOL = 9, /* one byte, 0 or 1 */
    /* ABI 1.3 */
    PLX_DTYPE_FLOAT64 = 10, /* IEEE binary64 */
    PLX_DTYPE_UINT16 = 11,
    PLX_DTYPE_UINT32 = 12,
    PLX_DTYPE_UINT64 = 13,
    /* ABI 1.3: 8-bit floats (one byte each, the ONNX types of the same
     * names; plx_float8_to_float32 gives their values) */
    PLX_DTYPE_FLOAT8E4M3FN = 14,   /* bias 7, no infinities, NaN 0x7f/0xff */
    PLX_DTYPE_FLOAT8E4M3FNUZ = 15, /* bias 8, no infinities or -0, NaN 0x80 */
    PLX_DTYPE_FLOAT8E5M2 = 16,     /* bias 15, IEEE-like: infinities and NaNs */
    PLX_DTYPE_FLOAT8E5M2FNUZ = 17, /* bias 16, no infinities or -0, NaN 0x80 */
    /* ABI 1.3: 4-bit integers, one element per byte (not packed two to a
     * byte as ONNX stores them): int4 sign-extended (-8..7), uint4 0..15 */
    PLX_DTYPE_INT4 = 18,
    PLX_DTYPE_UINT4 = 19
} plx_dtype;

#define PLX_DTYPE_COUNT 20

/* Bytes per element; 0 for PLX_DTYPE_INVALID or an unknown value. */
static inline size_t plx_dtype_size(plx_dtype dtype) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32:
    case PLX_DTYPE_INT32:
    case PLX_DTYPE_UINT32:
        return 4;
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_INT16:
    case PLX_DTYPE_UINT16:
        return 2;
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_BOOL:
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
    case PLX_DTYPE_INT4:
    case PLX_DTYPE_UINT4:
        return 1;
    case PLX_DTYPE_INT64:
    case PLX_DTYPE_FLOAT64:
    case PLX_DTYPE_UINT64:
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
    case PLX_DTYPE_FLOAT64: return "float64";
    case PLX_DTYPE_UINT16: return "uint16";
    case PLX_DTYPE_UINT32: return "uint32";
    case PLX_DTYPE_UINT64: return "uint64";
    case PLX_DTYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case PLX_DTYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case PLX_DTYPE_FLOAT8E5M2: return "float8e5m2";
    case PLX_DTYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case PLX_DTYPE_INT4: return "int4";
    case PLX_DTYPE_UINT4: return "uint4";
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

/* Element conversions, as every backend's cast and pad must make them.
 * Pure functions of their arguments (thread-safe), needing no libm. */

/* A float16 (IEEE binary16 bits) as float32: exact; infinities stay
 * infinite, a NaN stays a NaN with its payload. */
static inline float plx_float16_to_float32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in float32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, or NaN keeping its payload */
    } else {
        bits = sign | ((exp - 15u + 127u) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A float32 as float16 bits: rounded to nearest, ties to even; values past
 * the largest finite half (65504, up to the tie at 65520) become infinity,
 * values below half the smallest subnormal (2^-25, the tie included) a
 * signed zero; a NaN stays a quiet NaN with its sign and top payload
 * bits. */
static inline uint16_t plx_float32_to_float16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) {
        if (abs == 0x7f800000u) {
            return (uint16_t)(sign | 0x7c00u);
        }
        /* NaN: keep the top payload bits, force quiet so it stays a NaN */
        return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    }
    if (abs >= 0x47800000u) { /* >= 2^16: past the largest finite half */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (abs >= 0x38800000u) { /* >= 2^-14: a normal half (or rounds to inf) */
        uint32_t e = (abs >> 23) - 112u; /* rebias 127 -> 15 */
        uint32_t mant = abs & 0x7fffffu;
        uint32_t h = (e << 10) | (mant >> 13);
        uint32_t rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) {
            h++; /* a carry into the exponent is the correct result, up to inf */
        }
        return (uint16_t)(sign | h);
    }
    if (abs < 0x33000000u) { /* < 2^-25: rounds to zero (2^-25 itself ties to 0) */
        return sign;
    }
    /* subnormal half: the value in units of 2^-24 */
    uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - (abs >> 23); /* 14..24 */
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) {
        h++; /* 0x400 is the smallest normal: still correct */
    }
    return (uint16_t)(sign | h);
}

/* A bfloat16 (the top 16 bits of a float32) as float32: exact. */
static inline float plx_bfloat16_to_float32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A float32 as bfloat16 bits: rounded to nearest, ties to even (overflow
 * gives infinity); a NaN stays a quiet NaN with its sign. */
static inline uint16_t plx_float32_to_bfloat16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN, sign kept */
    }
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even; overflows to inf */
    return (uint16_t)(u >> 16);
}

/* A float64 as float32 rounded to odd: truncated toward zero, its last
 * bit set when that dropped anything (the infinities, NaN and the exact
 * values as they are). A later rounding to 11 bits or fewer (float16,
 * bfloat16) is then correctly rounded, which rounding to the nearest
 * float32 first would not be. */
static inline float plx_float64_to_float32_odd(double v) {
    float f = (float)v; /* nearest; infinite past the largest float32 */
    if (v != v || (double)f == v || v - v != 0) {
        return f; /* NaN, exact, or v itself infinite */
    }
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (!(u & 1u)) {
        /* even and inexact: the odd neighbour on v's side (from +-infinity
         * that is the largest finite value) */
        double mag_v = v < 0 ? -v : v, mag_f = f < 0 ? -(double)f : (double)f;
        u = mag_v > mag_f ? u + 1u : u - 1u;
        memcpy(&f, &u, sizeof f);
    }
    return f;
}

/* A float64 as float16 bits, correctly rounded as plx_float32_to_float16
 * rounds a float32. */
static inline uint16_t plx_float64_to_float16(double v) {
    return plx_float32_to_float16(plx_float64_to_float32_odd(v));
}

/* A float64 as bfloat16 bits, correctly rounded as plx_float32_to_bfloat16
 * rounds a float32. */
static inline uint16_t plx_float64_to_bfloat16(double v) {
    return plx_float32_to_bfloat16(plx_float64_to_float32_odd(v));
}

/* True for the four 8-bit float dtypes. */
static inline bool plx_dtype_is_float8(plx_dtype dtype) {
    return dtype == PLX_DTYPE_FLOAT8E4M3FN || dtype == PLX_DTYPE_FLOAT8E4M3FNUZ ||
           dtype == PLX_DTYPE_FLOAT8E5M2 || dtype == PLX_DTYPE_FLOAT8E5M2FNUZ;
}

/* A float8 of `dtype` (one of the four above) as float32: exact. The NaN
 * encodings give a quiet NaN with the byte's sign (FNUZ: positive), E5M2's
 * infinities infinity. Any other dtype gives NaN. */
static inline float plx_float8_to_float32(uint8_t b, plx_dtype dtype) {
    uint32_t man_bits, bias;
    bool fnuz = dtype == PLX_DTYPE_FLOAT8E4M3FNUZ || dtype == PLX_DTYPE_FLOAT8E5M2FNUZ;
    switch (dtype) {
    case PLX_DTYPE_FLOAT8E4M3FN: man_bits = 3; bias = 7; break;
    case PLX_DTYPE_FLOAT8E4M3FNUZ: man_bits = 3; bias = 8; break;
    case PLX_DTYPE_FLOAT8E5M2: man_bits = 2; bias = 15; break;
    case PLX_DTYPE_FLOAT8E5M2FNUZ: man_bits = 2; bias = 16; break;
    default: {
        uint32_t nan = 0x7fc00000u;
        float f;
        memcpy(&f, &nan, sizeof f);
        return f;
    }
    }
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t exp = (b & 0x7fu) >> man_bits;
    uint32_t man = b & ((1u << man_bits) - 1u);
    uint32_t exp_max = (1u << (7u - man_bits)) - 1u; /* 15 or 31 */
    uint32_t bits;
    if (fnuz && b == 0x80u) {
        bits = 0x7fc00000u; /* the only NaN */
    } else if (dtype == PLX_DTYPE_FLOAT8E4M3FN && (b & 0x7fu) == 0x7fu) {
        bits = sign | 0x7fc00000u;
    } else if (dtype == PLX_DTYPE_FLOAT8E5M2 && exp == exp_max) {
        bits = sign | (man ? 0x7fc00000u : 0x7f800000u);
    } else if (exp == 0) {
        /* zero or subnormal: man * 2^(1 - bias - man_bits), exact */
        float v = (float)man;
        for (uint32_t k = 0; k < bias - 1u + man_bits; k++) {
            v *= 0.5f;
        }
        return sign ? -v : v;
    } else {
        bits = sign | ((exp + 127u - bias) << 23) | (man << (23u - man_bits));
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A float32 as a float8 of `dtype` (one of the four above; any other gives
 * 0): rounded to nearest, ties to even. A NaN gives NaN (0x7f with the
 * sign for E4M3FN and E5M2, 0x80 for the FNUZ types). With `saturate`,
 * values beyond the largest finite value and the infinities give that
 * value with their sign (E4M3FN 448, E4M3FNUZ 240, E5M2 57344, E5M2FNUZ
 * 57344); without, what rounds beyond it gives infinity for E5M2 and NaN
 * for the others. The FNUZ types have no -0: a negative value that rounds
 * to zero gives +0. As ONNX Cast (opset 19) defines the conversion. */
static inline uint8_t plx_float32_to_float8(float f, plx_dtype dtype, bool saturate) {
    uint32_t man_bits, bias, max_code; /* max_code: the largest finite, no sign */
    bool fnuz = false;
    switch (dtype) {
    case PLX_DTYPE_FLOAT8E4M3FN: man_bits = 3; bias = 7; max_code = 0x7e; break;
    case PLX_DTYPE_FLOAT8E4M3FNUZ: man_bits = 3; bias = 8; max_code = 0x7f; fnuz = true; break;
    case PLX_DTYPE_FLOAT8E5M2: man_bits = 2; bias = 15; max_code = 0x7b; break;
    case PLX_DTYPE_FLOAT8E5M2FNUZ: man_bits = 2; bias = 16; max_code = 0x7f; fnuz = true; break;
    default: return 0;
    }
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t abs = u & 0x7fffffffu;
    uint8_t nan = fnuz ? 0x80u : (uint8_t)(sign | 0x7fu);
    uint8_t overflow = saturate ? (uint8_t)(sign | max_code)
                       : dtype == PLX_DTYPE_FLOAT8E5M2 ? (uint8_t)(sign | 0x7cu) : nan;
    if (abs > 0x7f800000u) {
        return nan;
    }
    if (abs == 0x7f800000u) {
        return overflow;
    }
    if (abs < 0x00800000u) {
        return fnuz ? 0 : sign; /* zero, or a float32 subnormal: far below any float8 */
    }
    /* abs = 1.m * 2^E. Round it to the float8 grid at its binade: ulp
     * 2^(E - man_bits) for a normal float8, 2^(emin - man_bits) below the
     * smallest normal 2^emin. */
    int32_t E = (int32_t)(abs >> 23) - 127;
    int32_t emin = 1 - (int32_t)bias;
    uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    int32_t sh = 23 - (int32_t)man_bits + (E < emin ? emin - E : 0);
    uint32_t q;
    if (sh >= 25) {
        q = 0; /* below half the smallest subnormal (m < 2^24) */
    } else {
        q = m >> sh;
        uint32_t rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) {
            q++;
        }
    }
    /* Codes count up the grid: subnormal codes are q itself; a normal one
     * is ((E - emin) << man_bits) + q, with q in [2^man_bits,
     * 2^(man_bits+1)] (a round up to 2^(man_bits+1) carries into the next
     * binade by the same sum). */
    uint32_t code;
    if (E < emin) {
        code = q;
    } else if (E - emin > 40) {
        code = 0xffffu; /* far beyond any float8 */
    } else {
        code = ((uint32_t)(E - emin) << man_bits) + q;
    }
    if (code > max_code) {
        return overflow;
    }
    if (code == 0 && fnuz) {
        return 0;
    }
    return (uint8_t)(sign | code);
}

/* A float64 as a float8 of `dtype`, correctly rounded as
 * plx_float32_to_float8 rounds a float32. */
static inline uint8_t plx_float64_to_float8(double v, plx_dtype dtype, bool saturate) {
    return plx_float32_to_float8(plx_float64_to_float32_odd(v), dtype, saturate);
}

/* v as a value of an integer dtype, as cast converts a float: truncated
 * toward zero, NaN gives 0, values outside the dtype's range (infinities
 * included) saturate to its minimum or maximum; for PLX_DTYPE_BOOL, v != 0
 * (so NaN gives 1, as numpy). For PLX_DTYPE_UINT64, whose values from 2^63
 * an int64_t cannot hold, the result is the uint64 value's bits (convert
 * it to uint64_t to read it). int4 and uint4 saturate to -8..7 and 0..15
 * like the others (ONNX Cast rounds instead: plx_int4_from_double). Any
 * other dtype is taken as int64. C leaves
 * out-of-range conversions undefined, so v is clamped before it is
 * converted. */
static inline int64_t plx_dtype_int_from_double(double v, plx_dtype dtype) {
    if (dtype == PLX_DTYPE_BOOL) {
        return v != 0;
    }
    if (dtype == PLX_DTYPE_UINT64) {
        uint64_t u;
        if (v != v || v <= 0) { /* NaN, or truncates to 0 or below */
            u = 0;
        } else if (v >= 18446744073709551616.0) {
            u = ~(uint64_t)0;
        } else {
            u = (uint64_t)v;
        }
        /* modulo 2^64 without implementation-defined behaviour */
        return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
    }
    int64_t i;
    if (v != v) { /* NaN */
        i = 0;
    } else if (v >= 9223372036854775808.0) {
        i = INT64_MAX;
    } else if (v <= -9223372036854775808.0) {
        i = INT64_MIN;
    } else {
        i = (int64_t)v; /* truncates toward zero */
    }
    switch (dtype) {
    case PLX_DTYPE_INT8: return i < INT8_MIN ? INT8_MIN : i > INT8_MAX ? INT8_MAX : i;
    case PLX_DTYPE_UINT8: return i < 0 ? 0 : i > UINT8_MAX ? UINT8_MAX : i;
    case PLX_DTYPE_INT16: return i < INT16_MIN ? INT16_MIN : i > INT16_MAX ? INT16_MAX : i;
    case PLX_DTYPE_UINT16: return i < 0 ? 0 : i > UINT16_MAX ? UINT16_MAX : i;
    case PLX_DTYPE_INT32: return i < INT32_MIN ? INT32_MIN : i > INT32_MAX ? INT32_MAX : i;
    case PLX_DTYPE_UINT32: return i < 0 ? 0 : i > (int64_t)UINT32_MAX ? (int64_t)UINT32_MAX : i;
    case PLX_DTYPE_INT4: return i < -8 ? -8 : i > 7 ? 7 : i;
    case PLX_DTYPE_UINT4: return i < 0 ? 0 : i > 15 ? 15 : i;
    default: return i;
    }
}

/* v as ONNX Cast converts a number to int4 or uint4 (`dtype` one of
 * them): clamped to -8..7 or 0..15, then rounded to nearest, ties to even;
 * NaN gives 0. */
static inline int64_t plx_int4_from_double(double v, plx_dtype dtype) {
    double lo = dtype == PLX_DTYPE_INT4 ? -8.0 : 0.0, hi = dtype == PLX_DTYPE_INT4 ? 7.0 : 15.0;
    if (v != v) {
        return 0;
    }
    v = v < lo ? lo : v > hi ? hi : v;
    int64_t i = (int64_t)v; /* toward zero */
    double f = v - (double)i;
    if (f > 0.5 || (f == 0.5 && (i & 1))) {
        i++;
    } else if (f < -0.5 || (f == -0.5 && (i & 1))) {
        i--;
    }
    return i;
}

/* v as one element of `dtype`, in the dtype's bytes (native byte order)
 * at the start of out: float64 v; float32 (float)v; float16 and bfloat16
 * correctly rounded (plx_float64_to_float16 / plx_float64_to_bfloat16);
 * the float8 types correctly rounded and saturating (plx_float64_to_float8);
 * integer dtypes and bool as plx_dtype_int_from_double. The rest of out is
 * zeroed.
 * Returns the element size, or 0 (out all zero) for an invalid dtype. */
static inline size_t plx_dtype_bytes_from_double(double v, plx_dtype dtype, uint8_t out[8]) {
    memset(out, 0, 8);
    int64_t i = plx_dtype_int_from_double(v, dtype);
    switch (dtype) {
    case PLX_DTYPE_FLOAT32: {
        float f = (float)v;
        memcpy(out, &f, 4);
        return 4;
    }
    case PLX_DTYPE_FLOAT64:
        memcpy(out, &v, 8);
        return 8;
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16: {
        uint16_t h = dtype == PLX_DTYPE_FLOAT16 ? plx_float64_to_float16(v)
                                                : plx_float64_to_bfloat16(v);
        memcpy(out, &h, 2);
        return 2;
    }
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_INT4: {
        int8_t w = (int8_t)i;
        memcpy(out, &w, 1);
        return 1;
    }
    case PLX_DTYPE_UINT4:
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_BOOL: {
        uint8_t w = (uint8_t)i;
        memcpy(out, &w, 1);
        return 1;
    }
    case PLX_DTYPE_INT16: {
        int16_t w = (int16_t)i;
        memcpy(out, &w, 2);
        return 2;
    }
    case PLX_DTYPE_UINT16: {
        uint16_t w = (uint16_t)i;
        memcpy(out, &w, 2);
        return 2;
    }
    case PLX_DTYPE_INT32: {
        int32_t w = (int32_t)i;
        memcpy(out, &w, 4);
        return 4;
    }
    case PLX_DTYPE_UINT32: {
        uint32_t w = (uint32_t)i;
        memcpy(out, &w, 4);
        return 4;
    }
    case PLX_DTYPE_INT64:
    case PLX_DTYPE_UINT64: /* the bits, plx_dtype_int_from_double */
        memcpy(out, &i, 8);
        return 8;
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
        out[0] = plx_float64_to_float8(v, dtype, true);
        return 1;
    case PLX_DTYPE_INVALID:
        break;
    }
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_TENSOR_H */
