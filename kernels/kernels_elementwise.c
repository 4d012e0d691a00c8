/* cpu_ref's elementwise kernels: activation, binary, unary, where, cast,
 * quantize and dequantize (the float16/bfloat16 conversions are the
 * SDK's, plexus/tensor.h).
 *
 * Every run function first calls its check function, so a kernel never
 * trusts infos that would make it read or write out of bounds. Values are
 * loaded into a wide type (float for float32, float16 and bfloat16; double
 * for float64; int64_t for the integers and bool, uint64's bits included),
 * computed, and stored back with the target's rules: integer results wrap
 * modulo 2^bits as in numpy (signed overflow never happens in C: the
 * arithmetic is done on uint64_t). uint64, whose values from 2^63 read as
 * negative int64s, has its own division, modulo, maximum, minimum,
 * comparisons and conversions to floats; addition, subtraction,
 * multiplication and powers give the same bits either way. */
#include "kernels_compute.h"
#include "kernels_funcs.h"
#include "qmap.h"
#include "vecmath.h"

#include <plexus/geometry.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

static bool is_float_dtype(plx_dtype t) {
    return t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT16 || t == PLX_DTYPE_BFLOAT16;
}

static bool is_int_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT8 || t == PLX_DTYPE_UINT8 || t == PLX_DTYPE_INT16 ||
           t == PLX_DTYPE_INT32 || t == PLX_DTYPE_INT64 || t == PLX_DTYPE_UINT16 ||
           t == PLX_DTYPE_UINT32 || t == PLX_DTYPE_UINT64;
}

static bool is_unsigned_int_dtype(plx_dtype t) {
    return t == PLX_DTYPE_UINT8 || t == PLX_DTYPE_UINT16 || t == PLX_DTYPE_UINT32 ||
           t == PLX_DTYPE_UINT64;
}

static bool is_signed_int_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT8 || t == PLX_DTYPE_INT16 || t == PLX_DTYPE_INT32 ||
           t == PLX_DTYPE_INT64;
}

/* The range of an integer dtype (bool: 0..1) as int64; uint64's is cut
 * at INT64_MAX (its callers refuse uint64). */
static void int_range(plx_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case PLX_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case PLX_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; return;
    case PLX_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case PLX_DTYPE_UINT16: *lo = 0; *hi = UINT16_MAX; return;
    case PLX_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    case PLX_DTYPE_UINT32: *lo = 0; *hi = UINT32_MAX; return;
    case PLX_DTYPE_UINT64: *lo = 0; *hi = INT64_MAX; return;
    case PLX_DTYPE_BOOL: *lo = 0; *hi = 1; return;
    case PLX_DTYPE_INT4: *lo = -8; *hi = 7; return;
    case PLX_DTYPE_UINT4: *lo = 0; *hi = 15; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
    }
}

/* uint64_t -> int64_t modulo 2^64 without implementation-defined behaviour. */
static int64_t wrap_i64(uint64_t u) {
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static float load_float(plx_dtype t, const void *p, size_t i) {
    switch (t) {
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)p)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void store_float(plx_dtype t, void *p, size_t i, float v) {
    switch (t) {
    case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float32_to_float16(v); return;
    case PLX_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = plx_float32_to_bfloat16(v); return;
    default: ((float *)p)[i] = v; return;
    }
}

/* Integers and bool (any non-zero byte reads as 1); uint64 as its bits
 * (from 2^63 negative). */
static int64_t load_int(plx_dtype t, const void *p, size_t i) {
    switch (t) {
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_INT4: return ((const int8_t *)p)[i]; /* one per byte, sign-extended */
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_UINT4: return ((const uint8_t *)p)[i];
    case PLX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case PLX_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case PLX_DTYPE_INT32: return ((const int32_t *)p)[i];
    case PLX_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case PLX_DTYPE_INT64: return ((const int64_t *)p)[i];
    case PLX_DTYPE_UINT64: return wrap_i64(((const uint64_t *)p)[i]);
    case PLX_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

/* Stores v modulo 2^bits (bool: v != 0). */
static void store_int(plx_dtype t, void *p, size_t i, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (t) {
    case PLX_DTYPE_INT8: {
        int w = (int)(u & 0xffu);
        ((int8_t *)p)[i] = (int8_t)(w >= 0x80 ? w - 0x100 : w);
        return;
    }
    case PLX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)(u & 0xffu); return;
    case PLX_DTYPE_INT4: {
        int w = (int)(u & 0xfu);
        ((int8_t *)p)[i] = (int8_t)(w >= 8 ? w - 16 : w);
        return;
    }
    case PLX_DTYPE_UINT4: ((uint8_t *)p)[i] = (uint8_t)(u & 0xfu); return;
    case PLX_DTYPE_INT16: {
        long w = (long)(u & 0xffffu);
        ((int16_t *)p)[i] = (int16_t)(w >= 0x8000 ? w - 0x10000 : w);
        return;
    }
    case PLX_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)(u & 0xffffu); return;
    case PLX_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)(u & 0xffffffffu); return;
    case PLX_DTYPE_UINT64: ((uint64_t *)p)[i] = u; return;
    case PLX_DTYPE_INT32: {
        int64_t w = (int64_t)(u & 0xffffffffu);
        ((int32_t *)p)[i] = (int32_t)(w >= 0x80000000 ? w - 0x100000000 : w);
        return;
    }
    case PLX_DTYPE_INT64: ((int64_t *)p)[i] = v; return;
    case PLX_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    default: return;
    }
}

/* An integer of magnitude m (negative when neg) as float rounded to odd at
 * float32's 24 bits: a later rounding to float16 or bfloat16 (at most 11
 * bits) is then correctly rounded, which going through a round-to-nearest
 * float32 would not be. */
static float mag_to_float_odd(uint64_t m, bool neg) {
    int shift = 0;
    while ((m >> shift) >= (1u << 24)) {
        shift++;
    }
    uint64_t kept = m >> shift;
    if (shift && (m & ((UINT64_C(1) << shift) - 1u))) {
        kept |= 1u; /* sticky */
    }
    float f = ldexpf((float)kept, shift);
    return neg ? -f : f;
}

static float int_to_float_odd(int64_t v) {
    return mag_to_float_odd(v < 0 ? 0u - (uint64_t)v : (uint64_t)v, v < 0);
}

/* An N-d counter over a dense output with the offsets of up to three
 * broadcast inputs. */
typedef struct nd_iter {
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
    int64_t idx[PLX_MAX_RANK];
    int64_t strides[3][PLX_MAX_RANK];
    int64_t off[3];
} nd_iter;

static void nd_iter_init(nd_iter *it, const plx_tensor_info *out) {
    memset(it, 0, sizeof *it);
    it->rank = out->rank;
    for (uint32_t d = 0; d < out->rank; d++) {
        it->dims[d] = out->dims[d];
    }
}

static void nd_iter_next(nd_iter *it) {
    for (uint32_t d = it->rank; d-- > 0;) {
        if (++it->idx[d] < it->dims[d]) {
            for (int k = 0; k < 3; k++) {
                it->off[k] += it->strides[k][d];
            }
            return;
        }
        it->idx[d] = 0;
        for (int k = 0; k < 3; k++) {
            it->off[k] -= it->strides[k][d] * (it->dims[d] - 1);
        }
    }
}

/* Runs the layer's check; on a refusal fails with it. */
#define RUN_CHECK(name, args)                                                                    \
    do {                                                                                         \
        char why_buf_[192];                                                                      \
        const char *why_ = plxk_check_##name((args)->layer, why_buf_, sizeof why_buf_);       \
        if (why_) {                                                                              \
            return plxk_fail((args), "layer '%s': %s", plxk_layer_name((args)->layer), why_);      \
        }                                                                                        \
    } while (0)

/* ---- activation --------------------------------------------------------- */

const char *plxk_check_activation(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_activation_desc *d = layer->desc;
    const char *fname = plx_activation_func_name(d->func);
    if (!fname) {
        return plxk_refuse(buf, size, "activation: unknown func %d", (int)d->func);
    }
    if (d->func == PLX_ACT_SHRINK) {
        return plxk_check_shrink(layer, buf, size); /* kernels_bitwise.c */
    }
    plx_dtype t = layer->inputs[0].dtype;
    bool ok = t == PLX_DTYPE_FLOAT32 || (t == PLX_DTYPE_FLOAT64 && d->func != PLX_ACT_CELU) ||
              ((d->func == PLX_ACT_RELU || d->func == PLX_ACT_CLIP) && is_signed_int_dtype(t)) ||
              (d->func == PLX_ACT_CLIP &&
               (t == PLX_DTYPE_UINT8 || t == PLX_DTYPE_UINT16 || t == PLX_DTYPE_UINT32));
    if (!ok) {
        return plxk_refuse(buf, size, "activation %s: dtype %s is not supported", fname,
                      plx_dtype_name(t));
    }
    if (layer->outputs[0].dtype != t || !plxk_same_dims(&layer->inputs[0], &layer->outputs[0])) {
        return plxk_refuse(buf, size, "activation %s: the output must have the input's dtype and shape",
                      fname);
    }
    return NULL;
}

static float sigmoidf_(float x) {
    double v = x;
    if (v >= 0) {
        return (float)(1.0 / (1.0 + exp(-v)));
    }
    double e = exp(v);
    return (float)(e / (1.0 + e));
}

/* log(1 + exp(x)) without overflowing exp for large x */
static double softplus_(double v) {
    return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
}

static float activate(const plx_activation_desc *d, float x) {
    double v = x;
    switch (d->func) {
    case PLX_ACT_RELU: return x < 0 ? 0.0f : x;
    case PLX_ACT_CLIP:
        x = x < d->alpha ? d->alpha : x;
        return x > d->beta ? d->beta : x;
    case PLX_ACT_LEAKY_RELU: return x < 0 ? d->alpha * x : x;
    case PLX_ACT_ELU: return x < 0 ? (float)(d->alpha * expm1(v)) : x;
    case PLX_ACT_SIGMOID: return sigmoidf_(x);
    case PLX_ACT_HARD_SIGMOID: {
        float y = d->alpha * x + d->beta;
        return y < 0 ? 0.0f : y > 1 ? 1.0f : y;
    }
    case PLX_ACT_HARD_SWISH: {
        float y = (1.0f / 6.0f) * x + 0.5f;
        y = y < 0 ? 0.0f : y > 1 ? 1.0f : y;
        return x * y;
    }
    case PLX_ACT_TANH: return (float)tanh(v);
    case PLX_ACT_GELU:
        if (d->alpha != 0) {
            const double k = 0.79788456080286535588; /* sqrt(2 / pi) */
            return (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
        }
        return (float)(0.5 * v * (1.0 + erf(v * 0.70710678118654752440)));
    case PLX_ACT_SOFTPLUS: return (float)softplus_(v);
    case PLX_ACT_SELU: return (float)(d->beta * (v <= 0 ? d->alpha * expm1(v) : v));
    case PLX_ACT_MISH: return (float)(v * tanh(softplus_(v)));
    case PLX_ACT_SOFTSIGN: return (float)(v / (1.0 + fabs(v)));
    case PLX_ACT_THRESHOLDED_RELU: return x > d->alpha ? x : 0.0f;
    case PLX_ACT_CELU: {
        /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha != 0; NaN stays */
        if (isnan(v)) {
            return x;
        }
        double a = d->alpha, neg = a * expm1(v / a);
        return (float)((v > 0 ? v : 0.0) + (neg < 0 ? neg : 0.0));
    }
    case PLX_ACT_AFFINE: return (float)((double)d->alpha * v + d->beta);
    case PLX_ACT_SCALED_TANH: return (float)(d->alpha * tanh((double)d->beta * v));
    case PLX_ACT_SHRINK: break; /* plxk_run_shrink */
    }
    return x;
}

/* activate() for float64: every step in double, alpha and beta widened
 * from the descriptor's floats. */
static double activate_double(const plx_activation_desc *d, double v) {
    const double alpha = d->alpha, beta = d->beta;
    switch (d->func) {
    case PLX_ACT_RELU: return v < 0 ? 0.0 : v;
    case PLX_ACT_CLIP:
        v = v < alpha ? alpha : v;
        return v > beta ? beta : v;
    case PLX_ACT_LEAKY_RELU: return v < 0 ? alpha * v : v;
    case PLX_ACT_ELU: return v < 0 ? alpha * expm1(v) : v;
    case PLX_ACT_SIGMOID: {
        if (v >= 0) {
            return 1.0 / (1.0 + exp(-v));
        }
        double e = exp(v);
        return e / (1.0 + e);
    }
    case PLX_ACT_HARD_SIGMOID: {
        double y = alpha * v + beta;
        return y < 0 ? 0.0 : y > 1 ? 1.0 : y;
    }
    case PLX_ACT_HARD_SWISH: {
        double y = v / 6.0 + 0.5;
        y = y < 0 ? 0.0 : y > 1 ? 1.0 : y;
        return v * y;
    }
    case PLX_ACT_TANH: return tanh(v);
    case PLX_ACT_GELU:
        if (alpha != 0) {
            const double k = 0.79788456080286535588; /* sqrt(2 / pi) */
            return 0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v)));
        }
        return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
    case PLX_ACT_SOFTPLUS: return softplus_(v);
    case PLX_ACT_SELU: return beta * (v <= 0 ? alpha * expm1(v) : v);
    case PLX_ACT_MISH: return v * tanh(softplus_(v));
    case PLX_ACT_SOFTSIGN: return v / (1.0 + fabs(v));
    case PLX_ACT_THRESHOLDED_RELU: return v > alpha ? v : 0.0;
    case PLX_ACT_CELU: break; /* float32 only (ONNX Celu) */
    case PLX_ACT_AFFINE: return alpha * v + beta;
    case PLX_ACT_SCALED_TANH: return alpha * tanh(beta * v);
    case PLX_ACT_SHRINK: break; /* plxk_run_shrink */
    }
    return v;
}

/* y[0 .. n) = activation of x[0 .. n) in float32, ctx the layer's
 * plx_activation_desc (a plxk_float_map): the common functions as loops of
 * their own, parameters in locals, so that they vectorise (same results as
 * activate(), NaN passing through); the others through activate().
 * Hard-sigmoid and hard-swish go to the vector math instead
 * (hard_sigmoid_run). */
static void activate_floats(const void *ctx, const float *restrict xf, float *restrict yf,
                            size_t n) {
    const plx_activation_desc *d = ctx;
    const float alpha = d->alpha, beta = d->beta;
    switch (d->func) {
    case PLX_ACT_RELU:
    case PLX_ACT_CLIP: {
        const float lo = d->func == PLX_ACT_RELU ? 0.0f : alpha;
        const float hi = d->func == PLX_ACT_RELU ? INFINITY : beta;
        for (size_t i = 0; i < n; i++) {
            float v = xf[i] < lo ? lo : xf[i];
            yf[i] = v > hi ? hi : v;
        }
        return;
    }
    case PLX_ACT_LEAKY_RELU:
        for (size_t i = 0; i < n; i++) {
            yf[i] = xf[i] < 0 ? alpha * xf[i] : xf[i];
        }
        return;
    default:
        for (size_t i = 0; i < n; i++) {
            yf[i] = activate(d, xf[i]);
        }
        return;
    }
}

/* plxk_vhard_sigmoid over a chunk (a plxk_float_map). */
typedef struct hard_sigmoid_params {
    plxk_isa isa;
    float alpha, beta;
    bool times_x;
} hard_sigmoid_params;

static void hard_sigmoid_run(const void *ctx, const float *x, float *y, size_t n) {
    const hard_sigmoid_params *h = ctx;
    (void)plxk_vhard_sigmoid(h->isa, h->alpha, h->beta, h->times_x, x, y, n); /* isa checked */
}

bool plxk_run_activation(const plxk_kernel_args *args) {
    RUN_CHECK(activation, args);
    const plx_layer_view *layer = args->layer;
    const plx_activation_desc *d = layer->desc;
    if (d->func == PLX_ACT_SHRINK) {
        return plxk_run_shrink(args);
    }
    plx_dtype t = layer->inputs[0].dtype;
    size_t n = 0;
    plx_tensor_info_element_count(&layer->outputs[0], &n);
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    if (t == PLX_DTYPE_FLOAT32) {
        switch (d->func) {
        case PLX_ACT_SIGMOID:
        case PLX_ACT_TANH:
        case PLX_ACT_GELU: {
            plxk_vfunc vf = d->func == PLX_ACT_SIGMOID ? PLXK_VSIGMOID
                          : d->func == PLX_ACT_TANH    ? PLXK_VTANH
                          : d->alpha != 0              ? PLXK_VGELU_TANH
                                                       : PLXK_VGELU_ERF;
            return plxk_vmap_pooled(args, vf, x, y, n, "activation");
        }
        case PLX_ACT_HARD_SIGMOID:
        case PLX_ACT_HARD_SWISH: {
            /* in the backend's ISA variant, on the pool's threads;
             * hard-swish is x hard_sigmoid(x) with ONNX's alpha 1/6 and
             * beta 0.5 */
            const bool swish = d->func == PLX_ACT_HARD_SWISH;
            hard_sigmoid_params h = {PLXK_ISA_PORTABLE, swish ? 1.0f / 6.0f : d->alpha,
                                     swish ? 0.5f : d->beta, swish};
            if (!plxk_require_isa(args, "activation", &h.isa)) {
                return false;
            }
            plxk_map_pooled(plxk_pool_of(args->compute), hard_sigmoid_run, &h, x, y, n, 0.3);
            return true;
        }
        default:
            /* on the pool's threads (on the calling thread alone, relu of
             * 1M elements took 1.4 times ONNX Runtime's time at two
             * threads); a few tenths of a nanosecond an element: the common
             * functions' loops are as fast as memory */
            plxk_map_pooled(plxk_pool_of(args->compute), activate_floats, d, x, y, n, 0.3);
            return true;
        }
    }
    if (t == PLX_DTYPE_FLOAT64) {
        const double *restrict xd = x;
        double *restrict yd = y;
        for (size_t i = 0; i < n; i++) {
            yd[i] = activate_double(d, xd[i]);
        }
        return true;
    }
    /* integers: relu, or clip with float bounds narrowed to the integers
     * inside them (ceil of the lower, floor of the upper bound) */
    int64_t lo = 0, hi = 0;
    int_range(t, &lo, &hi);
    if (d->func == PLX_ACT_RELU) {
        lo = 0;
    } else {
        if (d->alpha >= (float)hi) {
            lo = hi;
        } else if (d->alpha > (float)lo) {
            lo = (int64_t)ceilf(d->alpha);
        }
        if (d->beta <= (float)lo) {
            hi = lo;
        } else if (d->beta < (float)hi) {
            hi = (int64_t)floorf(d->beta);
        }
        /* NaN bounds leave the range unchanged */
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = load_int(t, x, i);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        store_int(t, y, i, v);
    }
    return true;
}

/* ---- binary ------------------------------------------------------------- */

/* add, sub and mul whose inputs and output are int8/uint8 with per-tensor
 * quantization compute on the real values (plexus/ops.h, "Quantized
 * layers"): what dequantize, the float layer and quantize compute, in one
 * pass and the same float32 arithmetic. */
static bool is_quantized_binary(const plx_layer_view *l) {
    plx_binary_func f = ((const plx_binary_desc *)l->desc)->func;
    if (f != PLX_BINARY_ADD && f != PLX_BINARY_SUB && f != PLX_BINARY_MUL) {
        return false;
    }
    const plx_tensor_info *t[3] = {&l->inputs[0], &l->inputs[1], &l->outputs[0]};
    for (int i = 0; i < 3; i++) {
        if ((t[i]->dtype != PLX_DTYPE_INT8 && t[i]->dtype != PLX_DTYPE_UINT8) ||
            t[i]->quant.kind != PLX_QUANT_PER_TENSOR) {
            return false;
        }
    }
    return true;
}

const char *plxk_check_binary(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_binary_desc *d = layer->desc;
    const char *fname = plx_binary_func_name(d->func);
    if (!fname) {
        return plxk_refuse(buf, size, "binary: unknown func %d", (int)d->func);
    }
    if (plx_binary_func_is_bitwise(d->func)) {
        return plxk_check_binary_bitwise(layer, buf, size); /* kernels_bitwise.c */
    }
    if (is_quantized_binary(layer)) {
        const plx_tensor_info *ins[2] = {&layer->inputs[0], &layer->inputs[1]};
        return plx_tensor_info_is_broadcast_of(ins, 2, &layer->outputs[0])
                   ? NULL
                   : plxk_refuse(buf, size, "binary %s: the output must be the inputs' broadcast "
                                 "shape", fname);
    }
    plx_dtype t = layer->inputs[0].dtype;
    if (layer->inputs[1].dtype != t) {
        return plxk_refuse(buf, size, "binary %s: inputs of different dtypes (%s, %s) are not supported",
                      fname, plx_dtype_name(t), plx_dtype_name(layer->inputs[1].dtype));
    }
    bool compare = plx_binary_func_is_compare(d->func);
    bool logical = plx_binary_func_is_logical(d->func);
    bool ok;
    if (compare) {
        /* float16/bfloat16 compare exactly through float32 */
        ok = is_float_dtype(t) || t == PLX_DTYPE_FLOAT64 || is_int_dtype(t) ||
             (t == PLX_DTYPE_BOOL && d->func == PLX_BINARY_EQUAL);
    } else if (logical) {
        ok = t == PLX_DTYPE_BOOL;
    } else if (d->func == PLX_BINARY_PRELU) {
        ok = t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT64 || t == PLX_DTYPE_INT32 ||
             t == PLX_DTYPE_INT64 || t == PLX_DTYPE_UINT32 || t == PLX_DTYPE_UINT64;
    } else {
        /* float16 and bfloat16 compute in float32, each result rounded
         * once to the type (exact for the sum, product, quotient, max,
         * min and remainder of two such values) */
        ok = is_float_dtype(t) || t == PLX_DTYPE_FLOAT64 || is_int_dtype(t);
    }
    if (!ok) {
        return plxk_refuse(buf, size, "binary %s: dtype %s is not supported", fname,
                      plx_dtype_name(t));
    }
    plx_dtype want = compare || logical ? PLX_DTYPE_BOOL : t;
    if (layer->outputs[0].dtype != want) {
        return plxk_refuse(buf, size, "binary %s: output dtype %s, expected %s", fname,
                      plx_dtype_name(layer->outputs[0].dtype), plx_dtype_name(want));
    }
    if (d->func == PLX_BINARY_PRELU) {
        /* the slope broadcasts to X (A), whose shape the output has */
        int64_t strides[PLX_MAX_RANK];
        if (!plxk_same_dims(&layer->inputs[0], &layer->outputs[0]) ||
            !plx_tensor_info_broadcast_strides(&layer->inputs[1], &layer->outputs[0], strides)) {
            return plxk_refuse(buf, size, "binary prelu: the output must have A's shape and the "
                                  "slope B must broadcast to it");
        }
        return NULL;
    }
    const plx_tensor_info *ins[2] = {&layer->inputs[0], &layer->inputs[1]};
    if (!plx_tensor_info_is_broadcast_of(ins, 2, &layer->outputs[0])) {
        return plxk_refuse(buf, size, "binary %s: the output shape is not the broadcast of the inputs",
                      fname);
    }
    return NULL;
}

static float binary_float(plx_binary_func f, float a, float b) {
    switch (f) {
    case PLX_BINARY_ADD: return a + b;
    case PLX_BINARY_SUB: return a - b;
    case PLX_BINARY_MUL: return a * b;
    case PLX_BINARY_DIV: return a / b;
    case PLX_BINARY_POW: return (float)pow(a, b);
    /* numpy's maximum/minimum: a NaN in either operand gives NaN */
    case PLX_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case PLX_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case PLX_BINARY_PRELU: return a < 0 ? b * a : a;
    /* ONNX Mod with fmod=1, the only mode ONNX allows for floats: C's fmod,
     * the sign of the dividend */
    case PLX_BINARY_MOD: return fmodf(a, b);
    default: return 0.0f;
    }
}

/* binary_float in double, for float64. */
static double binary_double(plx_binary_func f, double a, double b) {
    switch (f) {
    case PLX_BINARY_ADD: return a + b;
    case PLX_BINARY_SUB: return a - b;
    case PLX_BINARY_MUL: return a * b;
    case PLX_BINARY_DIV: return a / b;
    case PLX_BINARY_POW: return pow(a, b);
    case PLX_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case PLX_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case PLX_BINARY_PRELU: return a < 0 ? b * a : a;
    case PLX_BINARY_MOD: return fmod(a, b);
    default: return 0.0;
    }
}

/* A float32 binary layer over broadcast operands as runs: the trailing
 * dims in which each operand is either dense or broadcast throughout merge
 * into one run (a [1,C,H,W] by [1,C,1,1] product runs H*W at a time, a
 * tensor by a scalar all at once), and the dims before it (the first d)
 * are counted out. */
typedef struct bcast_runs {
    plx_binary_func f;
    plxk_isa isa;     /* plxk_vbinary's variant */
    const nd_iter *shape;
    const float *a, *b;
    float *y;
    int64_t run;      /* elements per run */
    uint32_t d;       /* dims before the run */
    bool sa, sb;      /* operand dense along the run (else one value) */
    size_t runs;
    /* pool tasks: per_task whole runs each, or, for runs longer than
     * BCAST_TASK elements, one of `pieces` parts of BCAST_TASK of a run */
    size_t per_task, pieces;
} bcast_runs;

enum { BCAST_TASK = 16384 };

/* The operands' offsets and the indices of the first d dims at the start
 * of run k. */
static void bcast_start(const nd_iter *shape, uint32_t d, size_t k, int64_t *idx, int64_t *oa,
                        int64_t *ob) {
    *oa = *ob = 0;
    for (uint32_t e = d; e-- > 0;) {
        idx[e] = (int64_t)(k % (size_t)shape->dims[e]);
        k /= (size_t)shape->dims[e];
        *oa += idx[e] * shape->strides[0][e];
        *ob += idx[e] * shape->strides[1][e];
    }
}

/* From one run to the next: the first d dims counted on by one. */
static void bcast_next(const nd_iter *shape, uint32_t d, int64_t *idx, int64_t *oa, int64_t *ob) {
    for (uint32_t e = d; e-- > 0;) {
        if (++idx[e] < shape->dims[e]) {
            *oa += shape->strides[0][e];
            *ob += shape->strides[1][e];
            return;
        }
        idx[e] = 0;
        *oa -= shape->strides[0][e] * (shape->dims[e] - 1);
        *ob -= shape->strides[1][e] * (shape->dims[e] - 1);
    }
}

/* Runs [r0, r1) of r. */
static bool bcast_some_runs(const bcast_runs *r, size_t r0, size_t r1) {
    const nd_iter *shape = r->shape;
    int64_t idx[PLX_MAX_RANK] = {0}, oa, ob;
    bcast_start(shape, r->d, r0, idx, &oa, &ob);
    for (size_t k = r0; k < r1; k++) {
        if (!plxk_vbinary(r->isa, r->f, r->a + oa, r->sa, r->b + ob, r->sb,
                          r->y + k * (size_t)r->run, (size_t)r->run)) {
            return false;
        }
        bcast_next(shape, r->d, idx, &oa, &ob);
    }
    return true;
}

static void bcast_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const bcast_runs *r = ctx;
    if (r->pieces > 1) {
        size_t k = task / r->pieces, q = task % r->pieces * BCAST_TASK;
        size_t n = (size_t)r->run - q < BCAST_TASK ? (size_t)r->run - q : BCAST_TASK;
        int64_t idx[PLX_MAX_RANK], oa, ob;
        bcast_start(r->shape, r->d, k, idx, &oa, &ob);
        (void)plxk_vbinary(r->isa, r->f, r->a + oa + (r->sa ? (int64_t)q : 0), r->sa,
                           r->b + ob + (r->sb ? (int64_t)q : 0), r->sb,
                           r->y + k * (size_t)r->run + q, n);
        return;
    }
    size_t r0 = task * r->per_task, r1 = r0 + r->per_task < r->runs ? r0 + r->per_task : r->runs;
    (void)bcast_some_runs(r, r0, r1); /* plxk_vbinary cannot refuse these functions */
}

/* Runs the layer; false when the function has no run loop (or, for pow, an
 * exponent other than 2 somewhere). The functions whose loop never refuses
 * share their runs among the pool's threads, in tasks of about 16K
 * elements (a [1,64,1,128] by [1,1,128,1] product, runs of 128, took 0.27
 * ms on the calling thread alone at two threads, ONNX Runtime 0.18). */
static bool binary_broadcast_f32(const plxk_kernel_args *args, plx_binary_func f,
                                 const nd_iter *shape, const float *a, const float *b, float *y,
                                 size_t total) {
    bool dense[2];
    uint32_t d = 0;
    int64_t run = plxk_broadcast_run(shape->rank, shape->dims, shape->strides, dense, &d);
    if (run == 0 || total == 0) {
        return true;
    }
    bcast_runs r = {f, PLXK_ISA_PORTABLE, shape, a, b, y, run, d, dense[0], dense[1],
                    total / (size_t)run, 1, 1};
    if (!plxk_require_isa(args, "binary", &r.isa)) {
        return false;
    }
    if (f == PLX_BINARY_POW) { /* may refuse part-way: on this thread */
        return bcast_some_runs(&r, 0, r.runs);
    }
    if ((size_t)run > BCAST_TASK) {
        r.pieces = ((size_t)run + BCAST_TASK - 1) / BCAST_TASK;
    } else {
        r.per_task = BCAST_TASK / (size_t)run;
    }
    size_t tasks = r.pieces > 1 ? r.runs * r.pieces : (r.runs + r.per_task - 1) / r.per_task;
    switch (f) {
    case PLX_BINARY_ADD:
    case PLX_BINARY_SUB:
    case PLX_BINARY_MUL:
    case PLX_BINARY_DIV:
    case PLX_BINARY_MAX:
    case PLX_BINARY_MIN:
    case PLX_BINARY_PRELU:
        /* about 0.3 ns an element on one thread */
        plxk_pool_run(plxk_pool_of(args->compute), tasks, (double)total * 0.3, bcast_task, &r);
        return true;
    default:
        return false;
    }
}

/* Integer arithmetic modulo 2^64 (the store narrows modulo the dtype).
 * false on a division or modulo by zero or zero to a negative power. */
static bool binary_int(plx_binary_func f, int64_t a, int64_t b, int64_t *out) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (f) {
    case PLX_BINARY_ADD: *out = wrap_i64(ua + ub); return true;
    case PLX_BINARY_SUB: *out = wrap_i64(ua - ub); return true;
    case PLX_BINARY_MUL: *out = wrap_i64(ua * ub); return true;
    case PLX_BINARY_DIV:
        if (b == 0) {
            return false;
        }
        *out = (a == INT64_MIN && b == -1) ? INT64_MIN : a / b; /* C truncates toward zero */
        return true;
    case PLX_BINARY_POW:
        if (b < 0) {
            /* 1 / a^|b| truncated: 0 unless |a| == 1 */
            if (a == 0) {
                return false;
            }
            *out = a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
            return true;
        } else {
            uint64_t r = 1, base = ua;
            for (uint64_t e = ub; e; e >>= 1) {
                if (e & 1u) {
                    r *= base;
                }
                base *= base;
            }
            *out = wrap_i64(r);
            return true;
        }
    case PLX_BINARY_MAX: *out = a > b ? a : b; return true;
    case PLX_BINARY_MIN: *out = a < b ? a : b; return true;
    case PLX_BINARY_PRELU: *out = a < 0 ? wrap_i64(ub * ua) : a; return true;
    case PLX_BINARY_MOD:
        /* ONNX Mod with fmod=0 (Python's %): the sign of the divisor */
        if (b == 0) {
            return false;
        }
        if (b == -1) {
            *out = 0; /* INT64_MIN % -1 is undefined in C; the answer is 0 */
            return true;
        }
        *out = a % b; /* C: the sign of the dividend */
        if (*out != 0 && (*out < 0) != (b < 0)) {
            *out += b; /* |*out| < |b| and opposite signs: no overflow */
        }
        return true;
    default: *out = 0; return true;
    }
}

/* binary_int for uint64, whose values past INT64_MAX binary_int would
 * read as negative: division and modulo (ONNX Mod's two modes agree on
 * unsigned operands), maximum and minimum compare unsigned; the rest wrap
 * modulo 2^64. false on a division or modulo by zero. */
static bool binary_u64(plx_binary_func f, uint64_t a, uint64_t b, uint64_t *out) {
    switch (f) {
    case PLX_BINARY_ADD: *out = a + b; return true;
    case PLX_BINARY_SUB: *out = a - b; return true;
    case PLX_BINARY_MUL: *out = a * b; return true;
    case PLX_BINARY_DIV:
    case PLX_BINARY_MOD:
        if (b == 0) {
            return false;
        }
        *out = f == PLX_BINARY_DIV ? a / b : a % b;
        return true;
    case PLX_BINARY_POW: {
        uint64_t r = 1, base = a;
        for (uint64_t e = b; e; e >>= 1) {
            if (e & 1u) {
                r *= base;
            }
            base *= base;
        }
        *out = r;
        return true;
    }
    case PLX_BINARY_MAX: *out = a > b ? a : b; return true;
    case PLX_BINARY_MIN: *out = a < b ? a : b; return true;
    default: *out = a; return true; /* prelu: never negative */
    }
}

/* The quantized add, sub and mul as runs (bcast_runs), in the backend's
 * instruction-set variant (qmap.h). */
typedef struct qbin_job {
    plxk_isa isa;
    plxk_qfunc f;
    unsigned types;
    plxk_qbin_params p;
    const nd_iter *shape;
    const uint8_t *a, *b; /* one byte an element */
    uint8_t *y;
    int64_t run;
    uint32_t d;
    bool da, db;
    size_t runs, per_task;
} qbin_job;

static void qbin_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const qbin_job *j = ctx;
    size_t r0 = task * j->per_task, r1 = r0 + j->per_task < j->runs ? r0 + j->per_task : j->runs;
    int64_t idx[PLX_MAX_RANK] = {0}, oa, ob;
    bcast_start(j->shape, j->d, r0, idx, &oa, &ob);
    for (size_t k = r0; k < r1; k++) {
        plxk_qbinary(j->isa, j->f, j->types, j->a + oa, j->da, j->b + ob, j->db,
                     j->y + k * (size_t)j->run, (size_t)j->run, &j->p);
        bcast_next(j->shape, j->d, idx, &oa, &ob);
    }
}

static bool run_quantized_binary(const plxk_kernel_args *args) {
    const plx_layer_view *layer = args->layer;
    plx_binary_func f = ((const plx_binary_desc *)layer->desc)->func;
    const plx_tensor_info *out = &layer->outputs[0];
    const plx_quant_params *qa = &layer->inputs[0].quant, *qb = &layer->inputs[1].quant,
                           *qy = &out->quant;
    plx_dtype ta = layer->inputs[0].dtype, tb = layer->inputs[1].dtype, ty = out->dtype;
    int64_t lo = 0, hi = 0;
    int_range(ty, &lo, &hi);
    size_t n = plxk_element_count(out);
    if (n == 0) {
        return true;
    }
    nd_iter shape;
    nd_iter_init(&shape, out);
    plx_tensor_info_broadcast_strides(&layer->inputs[0], out, shape.strides[0]);
    plx_tensor_info_broadcast_strides(&layer->inputs[1], out, shape.strides[1]);
    bool dense[2];
    uint32_t d = 0;
    int64_t run = plxk_broadcast_run(shape.rank, shape.dims, (const int64_t(*)[PLX_MAX_RANK])shape.strides, dense, &d);
    plxk_isa isa;
    if (!plxk_require_isa(args, "binary", &isa)) {
        return false;
    }
    qbin_job j = {isa,
                  f == PLX_BINARY_ADD ? PLXK_QADD : f == PLX_BINARY_SUB ? PLXK_QSUB : PLXK_QMUL,
                  PLXK_QTYPES(ta == PLX_DTYPE_UINT8, tb == PLX_DTYPE_UINT8, ty == PLX_DTYPE_UINT8),
                  {qa->scale, qb->scale, qy->scale, (float)qy->zero_point, (float)lo, (float)hi,
                   qa->zero_point, qb->zero_point},
                  &shape, args->inputs[0], args->inputs[1], args->outputs[0], run, d, dense[0],
                  dense[1], n / (size_t)run, 0};
    /* tasks of about BCAST_TASK elements, whole runs each */
    j.per_task = (size_t)run >= BCAST_TASK ? 1 : BCAST_TASK / (size_t)run;
    /* about 1 ns an element on one thread */
    plxk_pool_run(plxk_pool_of(args->compute), (j.runs + j.per_task - 1) / j.per_task, (double)n,
                  qbin_task, &j);
    return true;
}

bool plxk_run_binary(const plxk_kernel_args *args) {
    RUN_CHECK(binary, args);
    const plx_layer_view *layer = args->layer;
    plx_binary_func f = ((const plx_binary_desc *)layer->desc)->func;
    if (plx_binary_func_is_bitwise(f)) {
        return plxk_run_binary_bitwise(args);
    }
    if (is_quantized_binary(layer)) {
        return run_quantized_binary(args);
    }
    plx_dtype t = layer->inputs[0].dtype;
    const plx_tensor_info *out = &layer->outputs[0];
    size_t n = 0;
    plx_tensor_info_element_count(out, &n);
    nd_iter it;
    nd_iter_init(&it, out);
    plx_tensor_info_broadcast_strides(&layer->inputs[0], out, it.strides[0]);
    plx_tensor_info_broadcast_strides(&layer->inputs[1], out, it.strides[1]);
    const void *a = args->inputs[0], *b = args->inputs[1];
    void *y = args->outputs[0];
    bool compare = plx_binary_func_is_compare(f), logical = plx_binary_func_is_logical(f);
    bool fl = is_float_dtype(t);
    if (t == PLX_DTYPE_FLOAT32 && !compare && binary_broadcast_f32(args, f, &it, a, b, y, n)) {
        return true;
    }
    for (size_t i = 0; i < n; i++, nd_iter_next(&it)) {
        size_t ia = (size_t)it.off[0], ib = (size_t)it.off[1];
        if (compare) {
            /* ordered comparisons with NaN are false, as in IEEE and numpy */
            int c; /* -1, 0, 1; 2 when unordered */
            if (fl) {
                float va = load_float(t, a, ia), vb = load_float(t, b, ib);
                c = va < vb ? -1 : va > vb ? 1 : va == vb ? 0 : 2;
            } else if (t == PLX_DTYPE_FLOAT64) {
                double va = ((const double *)a)[ia], vb = ((const double *)b)[ib];
                c = va < vb ? -1 : va > vb ? 1 : va == vb ? 0 : 2;
            } else if (t == PLX_DTYPE_UINT64) {
                uint64_t va = ((const uint64_t *)a)[ia], vb = ((const uint64_t *)b)[ib];
                c = va < vb ? -1 : va > vb ? 1 : 0;
            } else {
                int64_t va = load_int(t, a, ia), vb = load_int(t, b, ib);
                c = va < vb ? -1 : va > vb ? 1 : 0;
            }
            bool r = f == PLX_BINARY_EQUAL           ? c == 0
                     : f == PLX_BINARY_LESS          ? c == -1
                     : f == PLX_BINARY_GREATER       ? c == 1
                     : f == PLX_BINARY_GREATER_EQUAL ? c == 0 || c == 1
                                                     : c == 0 || c == -1;
            ((uint8_t *)y)[i] = r;
        } else if (logical) {
            bool va = ((const uint8_t *)a)[ia] != 0, vb = ((const uint8_t *)b)[ib] != 0;
            ((uint8_t *)y)[i] = f == PLX_BINARY_AND ? va && vb : f == PLX_BINARY_OR ? va || vb : va != vb;
        } else if (fl) {
            store_float(t, y, i, binary_float(f, load_float(t, a, ia), load_float(t, b, ib)));
        } else if (t == PLX_DTYPE_FLOAT64) {
            ((double *)y)[i] = binary_double(f, ((const double *)a)[ia], ((const double *)b)[ib]);
        } else {
            int64_t r;
            bool ok;
            if (t == PLX_DTYPE_UINT64) {
                uint64_t ur = 0;
                ok = binary_u64(f, ((const uint64_t *)a)[ia], ((const uint64_t *)b)[ib], &ur);
                r = wrap_i64(ur);
            } else {
                ok = binary_int(f, load_int(t, a, ia), load_int(t, b, ib), &r);
            }
            if (!ok) {
                return plxk_fail(args, "layer '%s' (binary %s): integer %s at output element %zu",
                                    plxk_layer_name(layer), plx_binary_func_name(f),
                                    f == PLX_BINARY_DIV   ? "division by zero"
                                    : f == PLX_BINARY_MOD ? "modulo by zero"
                                                          : "zero raised to a negative power",
                                    i);
            }
            store_int(t, y, i, r);
        }
    }
    return true;
}

/* ---- unary -------------------------------------------------------------- */

const char *plxk_check_unary(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_unary_desc *d = layer->desc;
    const char *fname = plx_unary_func_name(d->func);
    if (!fname) {
        return plxk_refuse(buf, size, "unary: unknown func %d", (int)d->func);
    }
    if (d->func >= PLX_UNARY_IS_NAN) {
        return plxk_check_unary_funcs(layer, buf, size); /* kernels_bitwise.c */
    }
    plx_dtype t = layer->inputs[0].dtype;
    bool ok;
    bool fl = t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT64;
    switch (d->func) {
    case PLX_UNARY_ABS: ok = fl || is_int_dtype(t); break;
    case PLX_UNARY_NEG:
    case PLX_UNARY_SIGN: ok = fl || is_signed_int_dtype(t); break;
    case PLX_UNARY_NOT: ok = t == PLX_DTYPE_BOOL; break;
    default: ok = fl; break;
    }
    if (!ok) {
        return plxk_refuse(buf, size, "unary %s: dtype %s is not supported", fname,
                      plx_dtype_name(t));
    }
    if (layer->outputs[0].dtype != t || !plxk_same_dims(&layer->inputs[0], &layer->outputs[0])) {
        return plxk_refuse(buf, size, "unary %s: the output must have the input's dtype and shape", fname);
    }
    return NULL;
}

static float unary_float(plx_unary_func f, float x) {
    double v = x;
    switch (f) {
    case PLX_UNARY_ABS: return fabsf(x);
    case PLX_UNARY_NEG: return -x;
    case PLX_UNARY_SQRT: return sqrtf(x);
    case PLX_UNARY_RECIPROCAL: return 1.0f / x;
    case PLX_UNARY_LOG: return (float)log(v);
    case PLX_UNARY_FLOOR: return floorf(x);
    case PLX_UNARY_CEIL: return ceilf(x);
    case PLX_UNARY_SIN: return (float)sin(v);
    case PLX_UNARY_COS: return (float)cos(v);
    case PLX_UNARY_TAN: return (float)tan(v);
    case PLX_UNARY_ASIN: return (float)asin(v);
    case PLX_UNARY_ACOS: return (float)acos(v);
    case PLX_UNARY_ATAN: return (float)atan(v);
    case PLX_UNARY_SINH: return (float)sinh(v);
    case PLX_UNARY_COSH: return (float)cosh(v);
    case PLX_UNARY_ASINH: return (float)asinh(v);
    case PLX_UNARY_ACOSH: return (float)acosh(v);
    case PLX_UNARY_ATANH: return (float)atanh(v);
    /* halves to even: rintf in the default rounding mode (round-to-nearest-
     * even), which nothing here changes */
    case PLX_UNARY_ROUND: return rintf(x);
    /* -1, 0 or 1; -0 and NaN stay as they are */
    case PLX_UNARY_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : x;
    default: return x;
    }
}

/* unary_float in double, for float64. */
static double unary_double(plx_unary_func f, double v) {
    switch (f) {
    case PLX_UNARY_ABS: return fabs(v);
    case PLX_UNARY_NEG: return -v;
    case PLX_UNARY_SQRT: return sqrt(v);
    case PLX_UNARY_RECIPROCAL: return 1.0 / v;
    case PLX_UNARY_EXP: return exp(v);
    case PLX_UNARY_LOG: return log(v);
    case PLX_UNARY_ERF: return erf(v);
    case PLX_UNARY_FLOOR: return floor(v);
    case PLX_UNARY_CEIL: return ceil(v);
    case PLX_UNARY_SIN: return sin(v);
    case PLX_UNARY_COS: return cos(v);
    case PLX_UNARY_TAN: return tan(v);
    case PLX_UNARY_ASIN: return asin(v);
    case PLX_UNARY_ACOS: return acos(v);
    case PLX_UNARY_ATAN: return atan(v);
    case PLX_UNARY_SINH: return sinh(v);
    case PLX_UNARY_COSH: return cosh(v);
    case PLX_UNARY_ASINH: return asinh(v);
    case PLX_UNARY_ACOSH: return acosh(v);
    case PLX_UNARY_ATANH: return atanh(v);
    case PLX_UNARY_ROUND: return rint(v); /* halves to even, as rintf above */
    case PLX_UNARY_SIGN: return v > 0 ? 1.0 : v < 0 ? -1.0 : v;
    default: return v;
    }
}

bool plxk_run_unary(const plxk_kernel_args *args) {
    RUN_CHECK(unary, args);
    const plx_layer_view *layer = args->layer;
    plx_unary_func f = ((const plx_unary_desc *)layer->desc)->func;
    if (f >= PLX_UNARY_IS_NAN) {
        return plxk_run_unary_funcs(args);
    }
    plx_dtype t = layer->inputs[0].dtype;
    size_t n = 0;
    plx_tensor_info_element_count(&layer->outputs[0], &n);
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    if (t == PLX_DTYPE_FLOAT32) {
        const float *restrict xf = x;
        float *restrict yf = y;
        switch (f) {
        case PLX_UNARY_EXP:
        case PLX_UNARY_ERF:
        case PLX_UNARY_SQRT:
            return plxk_vmap_pooled(args,
                                    f == PLX_UNARY_EXP   ? PLXK_VEXP
                                    : f == PLX_UNARY_ERF ? PLXK_VERF
                                                         : PLXK_VSQRT,
                                    xf, yf, n, "unary");
        case PLX_UNARY_NEG:
            for (size_t i = 0; i < n; i++) {
                yf[i] = -xf[i];
            }
            return true;
        case PLX_UNARY_RECIPROCAL:
            for (size_t i = 0; i < n; i++) {
                yf[i] = 1.0f / xf[i];
            }
            return true;
        default:
            for (size_t i = 0; i < n; i++) {
                yf[i] = unary_float(f, xf[i]);
            }
            return true;
        }
    }
    if (t == PLX_DTYPE_FLOAT64) {
        const double *restrict xd = x;
        double *restrict yd = y;
        for (size_t i = 0; i < n; i++) {
            yd[i] = unary_double(f, xd[i]);
        }
        return true;
    }
    if (is_unsigned_int_dtype(t)) {
        /* abs, the only function of unsigned integers here: themselves */
        if (n && x != y) {
            memmove(y, x, n * plx_dtype_size(t));
        }
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        if (t == PLX_DTYPE_BOOL) {
            ((uint8_t *)y)[i] = ((const uint8_t *)x)[i] == 0;
        } else if (f == PLX_UNARY_SIGN) {
            int64_t v = load_int(t, x, i);
            store_int(t, y, i, v > 0 ? 1 : v < 0 ? -1 : 0);
        } else {
            /* abs/neg wrap like numpy: abs(INT8_MIN) == INT8_MIN */
            int64_t v = load_int(t, x, i);
            uint64_t neg = 0u - (uint64_t)v;
            store_int(t, y, i, (f == PLX_UNARY_NEG || v < 0) ? wrap_i64(neg) : v);
        }
    }
    return true;
}

/* ---- where -------------------------------------------------------------- */

const char *plxk_check_where(const plx_layer_view *layer, char *buf, size_t size) {
    if (layer->inputs[0].dtype != PLX_DTYPE_BOOL) {
        return plxk_refuse(buf, size, "where: condition dtype %s is not supported (bool expected)",
                      plx_dtype_name(layer->inputs[0].dtype));
    }
    plx_dtype t = layer->inputs[1].dtype;
    if (layer->inputs[2].dtype != t || layer->outputs[0].dtype != t) {
        return plxk_refuse(buf, size, "where: X, Y and the output must have one dtype (%s, %s, %s)",
                      plx_dtype_name(t), plx_dtype_name(layer->inputs[2].dtype),
                      plx_dtype_name(layer->outputs[0].dtype));
    }
    const plx_tensor_info *ins[3] = {&layer->inputs[0], &layer->inputs[1], &layer->inputs[2]};
    if (!plx_tensor_info_is_broadcast_of(ins, 3, &layer->outputs[0])) {
        return plxk_refuse(buf, size, "where: the output shape is not the broadcast of the inputs");
    }
    return NULL;
}

bool plxk_run_where(const plxk_kernel_args *args) {
    RUN_CHECK(where, args);
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *out = &layer->outputs[0];
    size_t n = 0, es = plx_dtype_size(out->dtype);
    plx_tensor_info_element_count(out, &n);
    nd_iter it;
    nd_iter_init(&it, out);
    for (int k = 0; k < 3; k++) {
        plx_tensor_info_broadcast_strides(&layer->inputs[k], out, it.strides[k]);
    }
    const uint8_t *c = args->inputs[0];
    const uint8_t *x = args->inputs[1], *yv = args->inputs[2];
    uint8_t *z = args->outputs[0];
    for (size_t i = 0; i < n; i++, nd_iter_next(&it)) {
        const uint8_t *src = c[it.off[0]] ? x + (size_t)it.off[1] * es : yv + (size_t)it.off[2] * es;
        memcpy(z + i * es, src, es);
    }
    return true;
}

/* ---- cast --------------------------------------------------------------- */

static bool is_known_dtype(plx_dtype t) {
    return plx_dtype_size(t) != 0;
}

const char *plxk_check_cast(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_cast_desc *d = layer->desc;
    plx_dtype from = layer->inputs[0].dtype, to = layer->outputs[0].dtype;
    if (!is_known_dtype(from) || !is_known_dtype(to) || d->to != to) {
        return plxk_refuse(buf, size, "cast: %s to %s is not supported (descriptor says %s)",
                      plx_dtype_name(from), plx_dtype_name(to), plx_dtype_name(d->to));
    }
    if (!plxk_same_dims(&layer->inputs[0], &layer->outputs[0])) {
        return plxk_refuse(buf, size, "cast: the output must have the input's shape");
    }
    return NULL;
}

static bool is_int4_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT4 || t == PLX_DTYPE_UINT4;
}

/* A cast from or to a float8 type or int4/uint4: every element through a
 * double (exact for every source but 64-bit integers past 2^53, which
 * overflow any float8 and saturate any 4-bit type anyway), rounded once to
 * the target: to float8 by plx_float64_to_float8, to int4/uint4 clamped
 * and rounded to nearest even as ONNX Cast does (plx_int4_from_double). */
static void cast_via_double(plx_dtype from, plx_dtype to, bool saturate, const void *x, void *y,
                        size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v;
        if (plx_dtype_is_float8(from)) {
            v = plx_float8_to_float32(((const uint8_t *)x)[i], from);
        } else if (from == PLX_DTYPE_FLOAT64) {
            v = ((const double *)x)[i];
        } else if (is_float_dtype(from)) {
            v = load_float(from, x, i);
        } else if (from == PLX_DTYPE_UINT64) {
            v = (double)((const uint64_t *)x)[i];
        } else {
            v = (double)load_int(from, x, i); /* bool: 0 or 1 */
        }
        if (plx_dtype_is_float8(to)) {
            ((uint8_t *)y)[i] = plx_float64_to_float8(v, to, saturate);
        } else if (is_int4_dtype(to)) {
            store_int(to, y, i, plx_int4_from_double(v, to));
        } else if (to == PLX_DTYPE_FLOAT64) {
            ((double *)y)[i] = v;
        } else if (is_float_dtype(to)) {
            store_float(to, y, i, (float)v); /* from a float8: exact */
        } else if (to == PLX_DTYPE_BOOL) {
            ((uint8_t *)y)[i] = v != 0; /* NaN != 0: true, as numpy */
        } else {
            store_int(to, y, i, plx_dtype_int_from_double(v, to)); /* saturates */
        }
    }
}

bool plxk_run_cast(const plxk_kernel_args *args) {
    RUN_CHECK(cast, args);
    const plx_layer_view *layer = args->layer;
    plx_dtype from = layer->inputs[0].dtype, to = layer->outputs[0].dtype;
    size_t n = 0;
    plx_tensor_info_element_count(&layer->outputs[0], &n);
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    if (from == to) {
        if (n) {
            memmove(y, x, n * plx_dtype_size(to));
        }
        if (to == PLX_DTYPE_BOOL) {
            for (size_t i = 0; i < n; i++) {
                ((uint8_t *)y)[i] = ((uint8_t *)y)[i] != 0;
            }
        }
        return true;
    }
    if (plx_dtype_is_float8(from) || plx_dtype_is_float8(to) || is_int4_dtype(from) ||
        is_int4_dtype(to)) {
        cast_via_double(from, to, ((const plx_cast_desc *)layer->desc)->saturate, x, y, n);
        return true;
    }
    /* The casts of quantized models' products (an int32 accumulator, an
     * 8-bit tensor, to float32) and of int64 masks to float32 in loops of
     * their own, which vectorise; each gives what the general loop below
     * gives. */
    if (to == PLX_DTYPE_FLOAT32 && (from == PLX_DTYPE_INT32 || from == PLX_DTYPE_INT8 ||
                                    from == PLX_DTYPE_UINT8 || from == PLX_DTYPE_INT64)) {
        float *restrict yf = y;
        if (from == PLX_DTYPE_INT64) {
            const int64_t *restrict xi = x;
            for (size_t i = 0; i < n; i++) {
                yf[i] = (float)xi[i];
            }
        } else if (from == PLX_DTYPE_INT32) {
            const int32_t *restrict xi = x;
            for (size_t i = 0; i < n; i++) {
                yf[i] = (float)xi[i];
            }
        } else if (from == PLX_DTYPE_INT8) {
            const int8_t *restrict xi = x;
            for (size_t i = 0; i < n; i++) {
                yf[i] = (float)xi[i];
            }
        } else {
            const uint8_t *restrict xi = x;
            for (size_t i = 0; i < n; i++) {
                yf[i] = (float)xi[i];
            }
        }
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        if (from == PLX_DTYPE_FLOAT64) {
            double v = ((const double *)x)[i];
            if (to == PLX_DTYPE_FLOAT32) {
                ((float *)y)[i] = (float)v;
            } else if (to == PLX_DTYPE_FLOAT16) {
                ((uint16_t *)y)[i] = plx_float64_to_float16(v); /* rounded once */
            } else if (to == PLX_DTYPE_BFLOAT16) {
                ((uint16_t *)y)[i] = plx_float64_to_bfloat16(v);
            } else if (to == PLX_DTYPE_BOOL) {
                ((uint8_t *)y)[i] = v != 0; /* NaN != 0: true, as numpy */
            } else {
                store_int(to, y, i, plx_dtype_int_from_double(v, to)); /* saturates */
            }
        } else if (is_float_dtype(from)) {
            float v = load_float(from, x, i);
            if (is_float_dtype(to)) {
                store_float(to, y, i, v); /* float32 holds float16/bfloat16 exactly */
            } else if (to == PLX_DTYPE_FLOAT64) {
                ((double *)y)[i] = v; /* exact */
            } else if (to == PLX_DTYPE_BOOL) {
                ((uint8_t *)y)[i] = v != 0; /* NaN != 0: true, as numpy */
            } else {
                store_int(to, y, i, plx_dtype_int_from_double(v, to)); /* saturates */
            }
        } else if (from == PLX_DTYPE_UINT64 && (is_float_dtype(to) || to == PLX_DTYPE_FLOAT64)) {
            uint64_t v = ((const uint64_t *)x)[i];
            if (to == PLX_DTYPE_FLOAT64) {
                ((double *)y)[i] = (double)v;
            } else if (to == PLX_DTYPE_FLOAT32) {
                ((float *)y)[i] = (float)v;
            } else {
                store_float(to, y, i, mag_to_float_odd(v, false));
            }
        } else {
            int64_t v = load_int(from, x, i);
            if (to == PLX_DTYPE_FLOAT32) {
                ((float *)y)[i] = (float)v;
            } else if (to == PLX_DTYPE_FLOAT64) {
                ((double *)y)[i] = (double)v;
            } else if (is_float_dtype(to)) {
                store_float(to, y, i, int_to_float_odd(v));
            } else {
                store_int(to, y, i, v); /* integers wrap (uint64: its bits); bool is v != 0 */
            }
        }
    }
    return true;
}

/* ---- quantize / dequantize ---------------------------------------------- */

/* Where element i of X finds its scale and zero point: per tensor (one
 * element, rank 0 or 1), per axis (1-D of X's dims[axis]) or, with a
 * block_size (ABI 1.3), blocked: X's shape but ceil(dims[axis] /
 * block_size) along the axis, element i reading the entry of its block. */
typedef struct qparam_map {
    enum { QP_TENSOR, QP_AXIS, QP_BLOCKED } kind;
    size_t inner;  /* X's stride of the axis */
    size_t dim;    /* X's size along it */
    size_t block;  /* QP_BLOCKED: block_size */
    size_t blocks; /* QP_BLOCKED: the scale's size along the axis */
} qparam_map;

static inline size_t qparam_index(const qparam_map *m, size_t i) {
    switch (m->kind) {
    case QP_AXIS:
        return i / m->inner % m->dim;
    case QP_BLOCKED: {
        size_t outer = i / m->inner / m->dim, a = i / m->inner % m->dim;
        return (outer * m->blocks + a / m->block) * m->inner + i % m->inner;
    }
    default:
        return 0;
    }
}

/* The scale's (and zero point's) layout into *m, checked against X, the
 * descriptor's axis and block_size; also checks the output's shape. */
static const char *check_qparams(const plx_layer_view *layer, const char *what, qparam_map *m,
                                 char *buf, size_t size) {
    const plx_quantize_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *s = &layer->inputs[1];
    if (!is_float_dtype(s->dtype)) {
        return plxk_refuse(buf, size, "%s: scale dtype %s is not supported (float32, float16 or "
                           "bfloat16 expected)", what, plx_dtype_name(s->dtype));
    }
    size_t sn = 0;
    plx_tensor_info_element_count(s, &sn);
    int64_t block = d->block_size;
    memset(m, 0, sizeof *m);
    m->inner = m->dim = m->block = m->blocks = 1;
    uint32_t axis = 0;
    if ((block != 0 || (s->rank == 1 && sn != 1)) &&
        !plx_axis_normalize(d->axis, x->rank, false, &axis)) {
        return plxk_refuse(buf, size, "%s: axis %d is out of range for rank %u", what,
                           (int)d->axis, x->rank);
    }
    if (block != 0 || (s->rank == 1 && sn != 1)) {
        int64_t strides[PLX_MAX_RANK];
        plx_tensor_info_strides(x, strides);
        m->inner = (size_t)strides[axis];
        m->dim = (size_t)x->dims[axis];
    }
    if (block < 0) {
        return plxk_refuse(buf, size, "%s: block_size %lld is negative", what, (long long)block);
    } else if (block > 0) {
        int64_t blocks = (x->dims[axis] + block - 1) / block;
        bool fits = s->rank == x->rank;
        for (uint32_t k = 0; fits && k < x->rank; k++) {
            fits = s->dims[k] == (k == axis ? blocks : x->dims[k]);
        }
        if (!fits) {
            return plxk_refuse(buf, size, "%s: a blocked scale must have X's shape with "
                               "ceil(%lld / %lld) = %lld along axis %d", what,
                               (long long)x->dims[axis], (long long)block, (long long)blocks,
                               (int)d->axis);
        }
        m->kind = QP_BLOCKED;
        m->block = (size_t)block;
        m->blocks = (size_t)blocks;
    } else if (s->rank == 0 || (s->rank == 1 && sn == 1)) {
        m->kind = QP_TENSOR;
        if (sn != 1) {
            return plxk_refuse(buf, size, "%s: scale has %zu elements", what, sn);
        }
    } else if (s->rank == 1) {
        if (s->dims[0] != x->dims[axis]) {
            return plxk_refuse(buf, size, "%s: scale has %lld entries, X has %lld along axis %d", what,
                          (long long)s->dims[0], (long long)x->dims[axis], (int)d->axis);
        }
        m->kind = QP_AXIS;
    } else {
        return plxk_refuse(buf, size, "%s: a scale of rank %u needs a block_size", what, s->rank);
    }
    if (layer->input_count > 2 && !plxk_same_dims(&layer->inputs[2], s) &&
        !(sn == 1 && plxk_element_count(&layer->inputs[2]) == 1)) {
        return plxk_refuse(buf, size, "%s: zero_point must have the scale's shape", what);
    }
    if (!plxk_same_dims(x, &layer->outputs[0])) {
        return plxk_refuse(buf, size, "%s: the output must have the input's shape", what);
    }
    return NULL;
}

const char *plxk_check_quantize(const plx_layer_view *layer, char *buf, size_t size) {
    plx_dtype xt = layer->inputs[0].dtype, yt = layer->outputs[0].dtype;
    if (!is_float_dtype(xt) || layer->inputs[1].dtype != xt) {
        return plxk_refuse(buf, size, "quantize: input dtype %s with scale dtype %s is not "
                           "supported (float32, float16 or bfloat16, both the same)",
                           plx_dtype_name(xt), plx_dtype_name(layer->inputs[1].dtype));
    }
    if (yt != PLX_DTYPE_INT8 && yt != PLX_DTYPE_UINT8 && yt != PLX_DTYPE_INT16 &&
        yt != PLX_DTYPE_UINT16 && !is_int4_dtype(yt) && !plx_dtype_is_float8(yt)) {
        return plxk_refuse(buf, size, "quantize: output dtype %s is not supported (int4, uint4, "
                           "int8, uint8, int16, uint16 or a float8 type)", plx_dtype_name(yt));
    }
    if (layer->input_count > 2 && layer->inputs[2].dtype != yt) {
        return plxk_refuse(buf, size, "quantize: zero_point dtype %s differs from the output's %s",
                      plx_dtype_name(layer->inputs[2].dtype), plx_dtype_name(yt));
    }
    qparam_map m;
    return check_qparams(layer, "quantize", &m, buf, size);
}

bool plxk_run_quantize(const plxk_kernel_args *args) {
    RUN_CHECK(quantize, args);
    const plx_layer_view *layer = args->layer;
    char buf[8];
    qparam_map m;
    check_qparams(layer, "quantize", &m, buf, sizeof buf);
    size_t n = 0;
    plx_tensor_info_element_count(&layer->outputs[0], &n);
    plx_dtype xt = layer->inputs[0].dtype, yt = layer->outputs[0].dtype;
    const void *x = args->inputs[0], *scale = args->inputs[1];
    const void *zp = layer->input_count > 2 ? args->inputs[2] : NULL;
    if (plx_dtype_is_float8(yt)) {
        /* x / scale (+ the zero point, which ONNX requires to be 0) cast
         * to the float8 type */
        bool saturate = ((const plx_quantize_desc *)layer->desc)->saturate;
        for (size_t i = 0; i < n; i++) {
            size_t c = qparam_index(&m, i);
            float v = load_float(xt, x, i) / load_float(xt, scale, c);
            if (zp) {
                v += plx_float8_to_float32(((const uint8_t *)zp)[c], yt);
            }
            ((uint8_t *)args->outputs[0])[i] = plx_float32_to_float8(v, yt, saturate);
        }
        return true;
    }
    int64_t lo = 0, hi = 0;
    int_range(yt, &lo, &hi);
    if (xt == PLX_DTYPE_FLOAT32 && (yt == PLX_DTYPE_INT8 || yt == PLX_DTYPE_UINT8) &&
        m.kind != QP_BLOCKED) {
        /* runs of one scale: the whole tensor, or each run along the axis */
        const float *xf = x, *sf = scale;
        plxk_isa isa;
        if (!plxk_require_isa(args, "quantize", &isa)) {
            return false;
        }
        size_t len = m.kind == QP_AXIS ? m.inner : n;
        for (size_t i = 0; len && i < n; i += len) {
            size_t c = qparam_index(&m, i);
            (void)plxk_quantize8(isa, yt == PLX_DTYPE_UINT8, xf + i, (char *)args->outputs[0] + i,
                                 len, sf[c], zp ? (int32_t)load_int(yt, zp, c) : 0);
        }
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = qparam_index(&m, i);
        /* nearbyint rounds half to even in the default rounding mode; NaN
         * quantizes to the zero point */
        float r = nearbyintf(load_float(xt, x, i) / load_float(xt, scale, c));
        double v = (isnan(r) ? 0.0 : (double)r) + (zp ? (double)load_int(yt, zp, c) : 0.0);
        v = v < (double)lo ? (double)lo : v > (double)hi ? (double)hi : v;
        store_int(yt, args->outputs[0], i, (int64_t)v);
    }
    return true;
}

const char *plxk_check_dequantize(const plx_layer_view *layer, char *buf, size_t size) {
    plx_dtype xt = layer->inputs[0].dtype, yt = layer->outputs[0].dtype;
    if (xt != PLX_DTYPE_INT8 && xt != PLX_DTYPE_UINT8 && xt != PLX_DTYPE_INT16 &&
        xt != PLX_DTYPE_UINT16 && xt != PLX_DTYPE_INT32 && !is_int4_dtype(xt) &&
        !plx_dtype_is_float8(xt)) {
        return plxk_refuse(buf, size, "dequantize: input dtype %s is not supported (int4, uint4, "
                           "int8, uint8, int16, uint16, int32 or a float8 type)",
                           plx_dtype_name(xt));
    }
    if (!is_float_dtype(yt) || layer->inputs[1].dtype != yt) {
        return plxk_refuse(buf, size, "dequantize: output dtype %s with scale dtype %s is not "
                           "supported (float32, float16 or bfloat16, both the same)",
                           plx_dtype_name(yt), plx_dtype_name(layer->inputs[1].dtype));
    }
    if (layer->input_count > 2 && layer->inputs[2].dtype != xt) {
        return plxk_refuse(buf, size, "dequantize: zero_point dtype %s differs from the input's %s",
                      plx_dtype_name(layer->inputs[2].dtype), plx_dtype_name(xt));
    }
    qparam_map m;
    return check_qparams(layer, "dequantize", &m, buf, size);
}

bool plxk_run_dequantize(const plxk_kernel_args *args) {
    RUN_CHECK(dequantize, args);
    const plx_layer_view *layer = args->layer;
    char buf[8];
    qparam_map m;
    check_qparams(layer, "dequantize", &m, buf, sizeof buf);
    size_t n = 0;
    plx_tensor_info_element_count(&layer->outputs[0], &n);
    plx_dtype xt = layer->inputs[0].dtype, yt = layer->outputs[0].dtype;
    const void *scale = args->inputs[1];
    const void *zp = layer->input_count > 2 ? args->inputs[2] : NULL;
    void *y = args->outputs[0];
    if (yt == PLX_DTYPE_FLOAT32 && (xt == PLX_DTYPE_INT8 || xt == PLX_DTYPE_UINT8) &&
        m.kind != QP_BLOCKED) {
        const float *sf = scale;
        plxk_isa isa;
        if (!plxk_require_isa(args, "dequantize", &isa)) {
            return false;
        }
        size_t len = m.kind == QP_AXIS ? m.inner : n;
        for (size_t i = 0; len && i < n; i += len) {
            size_t c = qparam_index(&m, i);
            (void)plxk_dequantize8(isa, xt == PLX_DTYPE_UINT8, (const char *)args->inputs[0] + i,
                                   (float *)y + i, len, sf[c],
                                   zp ? (int32_t)load_int(xt, zp, c) : 0);
        }
        return true;
    }
    if (plx_dtype_is_float8(xt)) {
        const uint8_t *q8 = args->inputs[0];
        for (size_t i = 0; i < n; i++) {
            size_t c = qparam_index(&m, i);
            float v = plx_float8_to_float32(q8[i], xt);
            if (zp) {
                v -= plx_float8_to_float32(((const uint8_t *)zp)[c], xt);
            }
            store_float(yt, y, i, v * load_float(yt, scale, c));
        }
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = qparam_index(&m, i);
        int64_t q = load_int(xt, args->inputs[0], i) - (zp ? load_int(xt, zp, c) : 0);
        store_float(yt, y, i, (float)q * load_float(yt, scale, c));
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(ACTIVATION, activation);
PLXK_ROW(BINARY, binary);
PLXK_ROW(UNARY, unary);
PLXK_ROW(WHERE, where);
PLXK_ROW(CAST, cast);
PLXK_ROW(QUANTIZE, quantize);
PLXK_ROW(DEQUANTIZE, dequantize);
