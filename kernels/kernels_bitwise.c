/* cpu_ref's kernels for the bit-level and test functions of the
 * elementwise operators (kernels_funcs.h): unary is_nan, is_inf,
 * is_pos_inf, is_neg_inf (float32, float16, bfloat16, float64 in, bool
 * out) and bitwise_not (integers); binary bitwise_and, bitwise_or,
 * bitwise_xor (integers) and shift_left, shift_right (unsigned integers);
 * activation shrink (float and integer types).
 *
 * Each function has loops of its own, picked once per layer, so that no
 * loop switches on the function per element and each vectorises: the
 * tests read the floats' bits (a NaN's exponent is all ones and its
 * mantissa not zero, an infinity's mantissa zero), the bitwise functions
 * work on the elements' bits whatever their signedness (two's
 * complement), and the binary ones run over broadcast operands as the
 * float32 arithmetic does (kernels_elementwise.c): the trailing dims in
 * which each operand is either dense or broadcast throughout make one run,
 * with four loops per function (each operand stepping or staying). */
#include "kernels_compute.h"
#include "kernels_funcs.h"

#include <math.h>
#include <string.h>

static bool is_float_dtype(plx_dtype t) {
    return t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT16 || t == PLX_DTYPE_BFLOAT16 ||
           t == PLX_DTYPE_FLOAT64;
}

static bool is_unsigned_dtype(plx_dtype t) {
    return t == PLX_DTYPE_UINT8 || t == PLX_DTYPE_UINT16 || t == PLX_DTYPE_UINT32 ||
           t == PLX_DTYPE_UINT64;
}

static bool is_int_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT8 || t == PLX_DTYPE_INT16 || t == PLX_DTYPE_INT32 ||
           t == PLX_DTYPE_INT64 || is_unsigned_dtype(t);
}

/* ---- unary: the tests and bitwise_not ---------------------------------- */

const char *plxk_check_unary_funcs(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_unary_desc *d = layer->desc;
    const char *fname = plx_unary_func_name(d->func);
    if (!fname || d->func < PLX_UNARY_IS_NAN) {
        return plxk_refuse(buf, size, "unary: func %d has no kernel here", (int)d->func);
    }
    plx_dtype t = layer->inputs[0].dtype;
    bool test = plx_unary_func_is_test(d->func);
    if (test ? !is_float_dtype(t) : !is_int_dtype(t)) {
        return plxk_refuse(buf, size, "unary %s: dtype %s is not supported (%s)", fname,
                           plx_dtype_name(t), test ? "float types only" : "integer types only");
    }
    plx_dtype want = test ? PLX_DTYPE_BOOL : t;
    if (layer->outputs[0].dtype != want || !plxk_same_dims(&layer->inputs[0], &layer->outputs[0])) {
        return plxk_refuse(buf, size, "unary %s: the output must be %s of the input's shape", fname,
                           plx_dtype_name(want));
    }
    return NULL;
}

/* y[i] = EXPR of the bits v of x[i], read as T (memcpy: the floats' bits
 * without breaking aliasing; it compiles to a plain load). */
#define BITS_LOOP(T, EXPR)                                                                     \
    do {                                                                                       \
        for (size_t i = 0; i < n; i++) {                                                       \
            T v;                                                                               \
            memcpy(&v, xb + i * sizeof v, sizeof v);                                           \
            y[i] = (uint8_t)(EXPR);                                                            \
        }                                                                                      \
    } while (0)

/* One test over n floats of T's width: mag the bits less the sign, inf
 * the bits of +infinity, sign the sign bit. */
#define FLOAT_TEST(T, INF, SIGN)                                                               \
    do {                                                                                       \
        const T inf = (INF), neg_inf = (T)((INF) | (SIGN)), mag = (T)~(T)(SIGN);               \
        switch (f) {                                                                           \
        case PLX_UNARY_IS_NAN: BITS_LOOP(T, (T)(v & mag) > inf); break;                        \
        case PLX_UNARY_IS_INF: BITS_LOOP(T, (T)(v & mag) == inf); break;                       \
        case PLX_UNARY_IS_POS_INF: BITS_LOOP(T, v == inf); break;                              \
        default: BITS_LOOP(T, v == neg_inf); break;                                            \
        }                                                                                      \
    } while (0)

static void float_test(plx_unary_func f, plx_dtype t, const unsigned char *restrict xb,
                       uint8_t *restrict y, size_t n) {
    switch (t) {
    case PLX_DTYPE_FLOAT32: FLOAT_TEST(uint32_t, UINT32_C(0x7f800000), UINT32_C(0x80000000)); break;
    case PLX_DTYPE_FLOAT64:
        FLOAT_TEST(uint64_t, UINT64_C(0x7ff0000000000000), UINT64_C(0x8000000000000000));
        break;
    case PLX_DTYPE_FLOAT16: FLOAT_TEST(uint16_t, 0x7c00u, 0x8000u); break;
    default: FLOAT_TEST(uint16_t, 0x7f80u, 0x8000u); break; /* bfloat16 */
    }
}

#define NOT_LOOP(T)                                                                            \
    do {                                                                                       \
        const T *restrict xs = x;                                                              \
        T *restrict ys = y;                                                                    \
        for (size_t i = 0; i < n; i++) {                                                       \
            ys[i] = (T)~xs[i];                                                                 \
        }                                                                                      \
    } while (0)

bool plxk_run_unary_funcs(const plxk_kernel_args *args) {
    const plx_layer_view *layer = args->layer;
    char why[192];
    if (plxk_check_unary_funcs(layer, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", plxk_layer_name(layer), why);
    }
    plx_unary_func f = ((const plx_unary_desc *)layer->desc)->func;
    plx_dtype t = layer->inputs[0].dtype;
    size_t n = plxk_element_count(&layer->outputs[0]);
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    if (plx_unary_func_is_test(f)) {
        float_test(f, t, x, y, n);
        return true;
    }
    /* bitwise_not: the bits, whatever the signedness */
    switch (plx_dtype_size(t)) {
    case 1: NOT_LOOP(uint8_t); break;
    case 2: NOT_LOOP(uint16_t); break;
    case 4: NOT_LOOP(uint32_t); break;
    default: NOT_LOOP(uint64_t); break;
    }
    return true;
}

/* ---- binary: bitwise_and, _or, _xor, shift_left, shift_right ----------- */

const char *plxk_check_binary_bitwise(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_binary_desc *d = layer->desc;
    const char *fname = plx_binary_func_name(d->func);
    if (!fname || !plx_binary_func_is_bitwise(d->func)) {
        return plxk_refuse(buf, size, "binary: func %d has no kernel here", (int)d->func);
    }
    plx_dtype t = layer->inputs[0].dtype;
    if (layer->inputs[1].dtype != t) {
        return plxk_refuse(buf, size, "binary %s: inputs of different dtypes (%s, %s) are not supported",
                           fname, plx_dtype_name(t), plx_dtype_name(layer->inputs[1].dtype));
    }
    bool shift = d->func == PLX_BINARY_SHIFT_LEFT || d->func == PLX_BINARY_SHIFT_RIGHT;
    if (shift ? !is_unsigned_dtype(t) : !is_int_dtype(t)) {
        return plxk_refuse(buf, size, "binary %s: dtype %s is not supported (%s)", fname,
                           plx_dtype_name(t), shift ? "unsigned types only" : "integer types only");
    }
    if (layer->outputs[0].dtype != t) {
        return plxk_refuse(buf, size, "binary %s: output dtype %s, expected %s", fname,
                           plx_dtype_name(layer->outputs[0].dtype), plx_dtype_name(t));
    }
    const plx_tensor_info *ins[2] = {&layer->inputs[0], &layer->inputs[1]};
    if (!plx_tensor_info_is_broadcast_of(ins, 2, &layer->outputs[0])) {
        return plxk_refuse(buf, size, "binary %s: the output shape is not the broadcast of the inputs",
                           fname);
    }
    return NULL;
}

/* y[0..n) = EXPR of x (from a) and z (from b), each operand stepping by
 * one element (sa, sb) or staying on its first. */
typedef void (*bit_run_fn)(const void *a, bool sa, const void *b, bool sb, void *y, size_t n);

#define BIT_RUN(NAME, T, EXPR)                                                                 \
    static void NAME(const void *va, bool sa, const void *vb, bool sb, void *vy, size_t n) {   \
        const T *restrict a = va, *restrict b = vb;                                            \
        T *restrict y = vy;                                                                    \
        if (sa && sb) {                                                                        \
            for (size_t i = 0; i < n; i++) {                                                   \
                T x = a[i], z = b[i];                                                          \
                y[i] = (T)(EXPR);                                                              \
            }                                                                                  \
        } else if (sa) {                                                                       \
            const T z = b[0];                                                                  \
            for (size_t i = 0; i < n; i++) {                                                   \
                T x = a[i];                                                                    \
                y[i] = (T)(EXPR);                                                              \
            }                                                                                  \
        } else if (sb) {                                                                       \
            const T x = a[0];                                                                  \
            for (size_t i = 0; i < n; i++) {                                                   \
                T z = b[i];                                                                    \
                y[i] = (T)(EXPR);                                                              \
            }                                                                                  \
        } else {                                                                               \
            const T x = a[0], z = b[0];                                                        \
            const T v = (T)(EXPR);                                                             \
            for (size_t i = 0; i < n; i++) {                                                   \
                y[i] = v;                                                                      \
            }                                                                                  \
        }                                                                                      \
    }

BIT_RUN(and_8, uint8_t, x & z)
BIT_RUN(and_16, uint16_t, x & z)
BIT_RUN(and_32, uint32_t, x & z)
BIT_RUN(and_64, uint64_t, x & z)
BIT_RUN(or_8, uint8_t, x | z)
BIT_RUN(or_16, uint16_t, x | z)
BIT_RUN(or_32, uint32_t, x | z)
BIT_RUN(or_64, uint64_t, x | z)
BIT_RUN(xor_8, uint8_t, x ^ z)
BIT_RUN(xor_16, uint16_t, x ^ z)
BIT_RUN(xor_32, uint32_t, x ^ z)
BIT_RUN(xor_64, uint64_t, x ^ z)
/* A shift by the bit width or more gives 0 (C leaves it undefined; numpy
 * and ONNX Runtime give 0 for uint8 and uint16, whose operands promote to
 * int, and ONNX's reference for the wider ones). The narrow types shift
 * as unsigned int, the 64-bit one as itself. */
BIT_RUN(shl_8, uint8_t, z < 8 ? (unsigned)x << z : 0u)
BIT_RUN(shr_8, uint8_t, z < 8 ? (unsigned)x >> z : 0u)
BIT_RUN(shl_16, uint16_t, z < 16 ? (unsigned)x << z : 0u)
BIT_RUN(shr_16, uint16_t, z < 16 ? (unsigned)x >> z : 0u)
BIT_RUN(shl_32, uint32_t, z < 32 ? (uint32_t)(x << z) : 0u)
BIT_RUN(shr_32, uint32_t, z < 32 ? x >> z : 0u)
BIT_RUN(shl_64, uint64_t, z < 64 ? x << z : 0u)
BIT_RUN(shr_64, uint64_t, z < 64 ? x >> z : 0u)

static bit_run_fn bit_run_of(plx_binary_func f, size_t es) {
    static const bit_run_fn table[5][4] = {{and_8, and_16, and_32, and_64},
                                           {or_8, or_16, or_32, or_64},
                                           {xor_8, xor_16, xor_32, xor_64},
                                           {shl_8, shl_16, shl_32, shl_64},
                                           {shr_8, shr_16, shr_32, shr_64}};
    int w = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
    switch (f) {
    case PLX_BINARY_BITWISE_AND: return table[0][w];
    case PLX_BINARY_BITWISE_OR: return table[1][w];
    case PLX_BINARY_BITWISE_XOR: return table[2][w];
    case PLX_BINARY_SHIFT_LEFT: return table[3][w];
    default: return table[4][w];
    }
}

bool plxk_run_binary_bitwise(const plxk_kernel_args *args) {
    const plx_layer_view *layer = args->layer;
    char why[192];
    if (plxk_check_binary_bitwise(layer, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", plxk_layer_name(layer), why);
    }
    plx_binary_func f = ((const plx_binary_desc *)layer->desc)->func;
    size_t es = plx_dtype_size(layer->inputs[0].dtype);
    bit_run_fn run_fn = bit_run_of(f, es);
    const plx_tensor_info *out = &layer->outputs[0];
    size_t total = plxk_element_count(out);
    if (total == 0) {
        return true;
    }
    int64_t st[2][PLX_MAX_RANK];
    plx_tensor_info_broadcast_strides(&layer->inputs[0], out, st[0]);
    plx_tensor_info_broadcast_strides(&layer->inputs[1], out, st[1]);
    bool dense[2];
    uint32_t d = 0;
    int64_t run = plxk_broadcast_run(out->rank, out->dims, (const int64_t(*)[PLX_MAX_RANK])st,
                                     dense, &d);
    bool sa = dense[0], sb = dense[1];
    const unsigned char *a = args->inputs[0], *b = args->inputs[1];
    unsigned char *y = args->outputs[0];
    /* the dims before the run, counted out */
    int64_t idx[PLX_MAX_RANK] = {0}, oa = 0, ob = 0;
    size_t runs = total / (size_t)run;
    for (size_t k = 0; k < runs; k++) {
        run_fn(a + (size_t)oa * es, sa, b + (size_t)ob * es, sb, y + k * (size_t)run * es,
               (size_t)run);
        for (uint32_t e = d; e-- > 0;) {
            if (++idx[e] < out->dims[e]) {
                oa += st[0][e];
                ob += st[1][e];
                break;
            }
            idx[e] = 0;
            oa -= st[0][e] * (out->dims[e] - 1);
            ob -= st[1][e] * (out->dims[e] - 1);
        }
    }
    return true;
}

/* ---- activation shrink ------------------------------------------------- */

const char *plxk_check_shrink(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_activation_desc *d = layer->desc;
    if (d->func != PLX_ACT_SHRINK) {
        return plxk_refuse(buf, size, "activation: func %d has no kernel here", (int)d->func);
    }
    plx_dtype t = layer->inputs[0].dtype;
    if (!is_float_dtype(t) && !is_int_dtype(t)) {
        return plxk_refuse(buf, size, "activation shrink: dtype %s is not supported",
                           plx_dtype_name(t));
    }
    if (isnan(d->alpha) || isnan(d->beta)) {
        return plxk_refuse(buf, size, "activation shrink: lambd (alpha) and bias (beta) must not be NaN");
    }
    if (layer->outputs[0].dtype != t || !plxk_same_dims(&layer->inputs[0], &layer->outputs[0])) {
        return plxk_refuse(buf, size, "activation shrink: the output must have the input's dtype and shape");
    }
    return NULL;
}

/* An integer shrink's value in double (exact for int8..int32; int64
 * beyond 2^53 rounds, as ONNX Runtime's float arithmetic does), truncated
 * toward zero as a C or numpy cast and saturated to the dtype's range
 * (where such a cast is undefined). */
static int64_t shrink_int(int64_t x, double lambd, double bias, int64_t lo, int64_t hi) {
    double v = (double)x;
    double r = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
    if (r <= (double)lo) {
        return lo;
    }
    if (r >= (double)hi) {
        return hi;
    }
    return (int64_t)r;
}

#define SHRINK_INT(T, LO, HI)                                                                  \
    do {                                                                                       \
        const T *restrict x = args->inputs[0];                                                 \
        T *restrict y = args->outputs[0];                                                      \
        for (size_t i = 0; i < n; i++) {                                                       \
            y[i] = (T)shrink_int(x[i], lambd, bias, (LO), (HI));                               \
        }                                                                                      \
    } while (0)

bool plxk_run_shrink(const plxk_kernel_args *args) {
    const plx_layer_view *layer = args->layer;
    char why[192];
    if (plxk_check_shrink(layer, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", plxk_layer_name(layer), why);
    }
    const plx_activation_desc *d = layer->desc;
    plx_dtype t = layer->inputs[0].dtype;
    size_t n = plxk_element_count(&layer->outputs[0]);
    /* NaN compares false both ways: 0, as ONNX's reference and Runtime */
    const float lambd = d->alpha, neg = -d->alpha, bias = d->beta;
    switch (t) {
    case PLX_DTYPE_FLOAT32: {
        const float *restrict x = args->inputs[0];
        float *restrict y = args->outputs[0];
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            y[i] = v < neg ? v + bias : v > lambd ? v - bias : 0.0f;
        }
        return true;
    }
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16: {
        /* in float32, rounded once to the dtype */
        const uint16_t *restrict x = args->inputs[0];
        uint16_t *restrict y = args->outputs[0];
        bool h = t == PLX_DTYPE_FLOAT16;
        for (size_t i = 0; i < n; i++) {
            float v = h ? plx_float16_to_float32(x[i]) : plx_bfloat16_to_float32(x[i]);
            float r = v < neg ? v + bias : v > lambd ? v - bias : 0.0f;
            y[i] = h ? plx_float32_to_float16(r) : plx_float32_to_bfloat16(r);
        }
        return true;
    }
    case PLX_DTYPE_FLOAT64: {
        /* in double, lambd and bias widened from the descriptor's floats */
        const double *restrict x = args->inputs[0];
        double *restrict y = args->outputs[0];
        const double l = lambd, nl = neg, b = bias;
        for (size_t i = 0; i < n; i++) {
            double v = x[i];
            y[i] = v < nl ? v + b : v > l ? v - b : 0.0;
        }
        return true;
    }
    case PLX_DTYPE_INT8: SHRINK_INT(int8_t, INT8_MIN, INT8_MAX); return true;
    case PLX_DTYPE_UINT8: SHRINK_INT(uint8_t, 0, UINT8_MAX); return true;
    case PLX_DTYPE_INT16: SHRINK_INT(int16_t, INT16_MIN, INT16_MAX); return true;
    case PLX_DTYPE_UINT16: SHRINK_INT(uint16_t, 0, UINT16_MAX); return true;
    case PLX_DTYPE_INT32: SHRINK_INT(int32_t, INT32_MIN, INT32_MAX); return true;
    case PLX_DTYPE_UINT32: SHRINK_INT(uint32_t, 0, (int64_t)UINT32_MAX); return true;
    case PLX_DTYPE_UINT64: {
        /* shrink_int's arithmetic in double, saturated to uint64's range */
        const uint64_t *restrict x = args->inputs[0];
        uint64_t *restrict y = args->outputs[0];
        for (size_t i = 0; i < n; i++) {
            double v = (double)x[i];
            double r = v < -(double)lambd ? v + bias : v > lambd ? v - bias : 0.0;
            y[i] = (uint64_t)plx_dtype_int_from_double(r, PLX_DTYPE_UINT64);
        }
        return true;
    }
    default: SHRINK_INT(int64_t, INT64_MIN, INT64_MAX); return true;
    }
}
