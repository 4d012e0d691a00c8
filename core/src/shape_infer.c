/* Operator rules of the core: arity, descriptor sizes, dtype rules and shape
 * inference, following ONNX as plexus/ops.h describes it.
 *
 * Every check produces a PLX_INVALID_ARGUMENT status whose message reads
 * "layer '<name>' (<op>): <what is wrong>", naming inputs by their role
 * (X, W, B, A, C, scale, ..., or "input N") and printing shapes as
 * "[1,3,224,224]"; descriptor fields by name ("strides[1] = 0 must be >= 1");
 * arity as "takes 2 to 3 inputs, got 1", "takes 2 inputs, got 3" or
 * "takes at least 1 input, got 0". Nothing here allocates except those
 * messages. On failure the caller's outputs are left as they were.
 *
 * Quantization of outputs (one rule for all ops):
 *   - mem_copy and mem_import copy the input's info unchanged, per-axis
 *     parameters included (the output is the same tensor in other memory);
 *   - data-movement ops (reshape, flatten, transpose, squeeze, unsqueeze,
 *     slice, pad, split, gather (data), expand, concat, depth_to_space,
 *     space_to_depth, tile), max pooling and topk's values (monotonic
 *     selections, valid because scales are > 0) pass per-tensor parameters
 *     through; concat only when every input has the same per-tensor
 *     parameters;
 *   - per-axis parameters are dropped (NONE) by every other op, because the
 *     axis may move, vanish or change length;
 *   - every other output is NONE: its parameters are not a function of the
 *     input's (quantize's scale and zero point are tensors, not attributes).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "shape_infer.h"

#define I64 "%" PRId64

/* Room for "[d0,...,d7]" with every dim as long as INT64_MIN. */
#define SHAPE_BUF 192
/* A shape string valid until the end of the enclosing block. */
#define SHP(info) plxi_format_shape((info), (char[SHAPE_BUF]){0}, SHAPE_BUF)

/* Dtype sets as bit masks. */
#define DT(x) (1u << PLX_DTYPE_##x)
#define DT_FLOAT (DT(FLOAT32) | DT(FLOAT16) | DT(BFLOAT16))
#define DT_SINT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define DT_INT (DT_SINT | DT(UINT8))
#define DT_NUM (DT_FLOAT | DT_INT)
#define DT_ANY (DT_NUM | DT(BOOL))
#define DT_MATMUL (DT_FLOAT | DT(INT32) | DT(INT64))

/* One call of plxi_infer_layer. `out` points to where single-output ops
 * write (a temporary, copied out on success). */
typedef struct layer_ctx {
    const char *name;
    plx_op op;
    const void *desc;
    const plx_tensor_info *in;
    uint32_t n_in;
    plx_tensor_info *out;
    uint32_t n_out;
} layer_ctx;

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */

static plx_status fail(const layer_ctx *c, const char *fmt, ...) PLXI_PRINTF(2, 3);

static plx_status fail(const layer_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *what = plxi_vasprintf(fmt, ap);
    va_end(ap);
    if (!what) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    plx_status s = plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s' (%s): %s",
                                      c->name ? c->name : "", plx_op_name(c->op), what);
    free(what);
    return s;
}

const char *plxi_format_shape(const plx_tensor_info *info, char *buf, size_t size) {
    if (!buf || size == 0) {
        return buf;
    }
    buf[0] = '\0';
    if (!info) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    if (info->rank > PLX_MAX_RANK) {
        snprintf(buf, size, "[rank %" PRIu32 "?]", info->rank);
        return buf;
    }
    size_t len = 0;
    bool truncated = false;
    for (uint32_t i = 0; i <= info->rank && !truncated; i++) {
        int n;
        if (i == info->rank) {
            n = snprintf(buf + len, size - len, "%s]", info->rank ? "" : "[");
        } else {
            n = snprintf(buf + len, size - len, "%s" I64, i ? "," : "[", info->dims[i]);
        }
        if (n < 0 || (size_t)n >= size - len) {
            truncated = true;
        } else {
            len += (size_t)n;
        }
    }
    if (truncated && size >= 4) {
        memcpy(buf + size - 4, "...", 4);
    }
    return buf;
}

/* The role name of input slot i: "X", "W", ..., or "input i" in buf. */
static const char *input_role(const layer_ctx *c, uint32_t i, char *buf, size_t size) {
    static const char *const xwb[] = {"X", "W", "B"};
    static const char *const ab[] = {"A", "B"};
    static const char *const abc[] = {"A", "B", "C"};
    static const char *const bn[] = {"X", "scale", "bias", "mean", "var"};
    static const char *const ln[] = {"X", "scale", "bias"}; /* also instance_norm */
    static const char *const gather[] = {"data", "indices"};
    static const char *const where[] = {"condition", "X", "Y"};
    static const char *const quant[] = {"X", "scale", "zero_point"};
    static const char *const rnn[] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                      "initial_c", "P"}; /* gru: the first 6 */
    static const char *const x[] = {"X"};
    const char *const *names = NULL;
    uint32_t n = 0;
    switch (c->op) {
    case PLX_OP_CONV:
    case PLX_OP_CONV_TRANSPOSE:
    case PLX_OP_FULLY_CONNECTED: names = xwb; n = 3; break;
    case PLX_OP_MATMUL:
    case PLX_OP_BINARY: names = ab; n = 2; break;
    case PLX_OP_GEMM: names = abc; n = 3; break;
    case PLX_OP_BATCH_NORM: names = bn; n = 5; break;
    case PLX_OP_LAYER_NORM:
    case PLX_OP_INSTANCE_NORM: names = ln; n = 3; break;
    case PLX_OP_GATHER: names = gather; n = 2; break;
    case PLX_OP_WHERE: names = where; n = 3; break;
    case PLX_OP_QUANTIZE:
    case PLX_OP_DEQUANTIZE: names = quant; n = 3; break;
    case PLX_OP_LSTM: names = rnn; n = 8; break;
    case PLX_OP_GRU: names = rnn; n = 6; break;
    case PLX_OP_CONCAT: break;
    default: names = x; n = 1; break;
    }
    if (i < n) {
        return names[i];
    }
    snprintf(buf, size, "input %" PRIu32, i);
    return buf;
}
#define ROLE(c, i) input_role((c), (i), (char[24]){0}, 24)

static const char *output_role(const layer_ctx *c, uint32_t i, char *buf, size_t size) {
    if (c->op == PLX_OP_SPLIT || c->n_out > 1) {
        snprintf(buf, size, "output %" PRIu32, i);
        return buf;
    }
    return c->op == PLX_OP_WHERE ? "Z" : "Y";
}
#define OUT_ROLE(c, i) output_role((c), (i), (char[24]){0}, 24)

/* "float32, float16 or bfloat16" */
static const char *dtype_list(unsigned mask, char *buf, size_t size) {
    size_t len = 0;
    unsigned left = 0;
    for (int d = 1; d < PLX_DTYPE_COUNT; d++) {
        left += (mask >> d) & 1u;
    }
    buf[0] = '\0';
    for (int d = 1; d < PLX_DTYPE_COUNT && len < size; d++) {
        if (!((mask >> d) & 1u)) {
            continue;
        }
        left--;
        int n = snprintf(buf + len, size - len, "%s%s", plx_dtype_name((plx_dtype)d),
                         left == 0 ? "" : left == 1 ? " or " : ", ");
        if (n < 0) {
            break;
        }
        len += (size_t)n;
    }
    return buf;
}
#define DTYPES(mask) dtype_list((mask), (char[160]){0}, 160)

static bool dtype_in(plx_dtype d, unsigned mask) {
    return (unsigned)d < PLX_DTYPE_COUNT && ((mask >> d) & 1u);
}

/* ------------------------------------------------------------------------ */
/* Arithmetic without wrapping                                              */

static bool add_i64(int64_t a, int64_t b, int64_t *r) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
        return false;
    }
    *r = a + b;
    return true;
}

/* a, b >= 0 */
static bool mul_nonneg(int64_t a, int64_t b, int64_t *r) {
    if (a != 0 && b > INT64_MAX / a) {
        return false;
    }
    *r = a * b;
    return true;
}

/* Product of dims[from..to-1] (all >= 0). */
static bool dims_product(const int64_t *dims, uint32_t from, uint32_t to, int64_t *r) {
    int64_t p = 1;
    for (uint32_t i = from; i < to; i++) {
        if (!mul_nonneg(p, dims[i], &p)) {
            return false;
        }
    }
    *r = p;
    return true;
}

/* Normalises an axis in [-rank, rank) (or [-rank, rank] with inclusive). */
static bool norm_axis(int64_t axis, uint32_t rank, bool inclusive, uint32_t *out) {
    int64_t r = (int64_t)rank;
    if (axis < -r || axis > r || (!inclusive && axis == r)) {
        return false;
    }
    *out = (uint32_t)(axis < 0 ? axis + r : axis);
    return true;
}

/* Numpy broadcasting of two shapes; false when incompatible. */
static bool broadcast(const int64_t *a, uint32_t ra, const int64_t *b, uint32_t rb,
                      int64_t *out, uint32_t *out_rank) {
    uint32_t r = ra > rb ? ra : rb;
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da == db || db == 1) {
            dims[i] = da;
        } else if (da == 1) {
            dims[i] = db;
        } else {
            return false;
        }
    }
    memcpy(out, dims, r * sizeof *dims);
    *out_rank = r;
    return true;
}

/* True when `from` broadcasts to `to` without changing `to`. */
static bool broadcasts_to(const int64_t *from, uint32_t rf, const int64_t *to, uint32_t rt) {
    if (rf > rt) {
        return false;
    }
    for (uint32_t i = 0; i < rf; i++) {
        int64_t f = from[rf - 1 - i], t = to[rt - 1 - i];
        if (f != t && f != 1) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Common checks                                                            */

static void info_init(plx_tensor_info *o, plx_dtype dtype, uint32_t rank) {
    memset(o, 0, sizeof *o);
    o->dtype = dtype;
    o->rank = rank;
}

static void info_set_dims(plx_tensor_info *o, const int64_t *dims, uint32_t rank) {
    o->rank = rank;
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        o->dims[i] = i < rank ? dims[i] : 0;
    }
}

/* See the rule at the top of the file. */
static plx_quant_params moved_quant(const plx_tensor_info *in) {
    plx_quant_params q;
    memset(&q, 0, sizeof q);
    if (in->quant.kind == PLX_QUANT_PER_TENSOR) {
        q.kind = PLX_QUANT_PER_TENSOR;
        q.scale = in->quant.scale;
        q.zero_point = in->quant.zero_point;
    }
    return q;
}

/* A tensor info as it may appear anywhere: valid dtype, rank and dims, a
 * byte size that fits size_t, consistent quantization. */
static plx_status check_info(const layer_ctx *c, const plx_tensor_info *t, const char *role) {
    if (plx_dtype_size(t->dtype) == 0) {
        return fail(c, "%s has an invalid dtype %d", role, (int)t->dtype);
    }
    if (t->rank > PLX_MAX_RANK) {
        return fail(c, "%s has rank %" PRIu32 ", more than %d", role, t->rank, PLX_MAX_RANK);
    }
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) {
            return fail(c, "%s %s has a negative dimension", role, SHP(t));
        }
    }
    size_t bytes;
    if (!plx_tensor_info_byte_size(t, &bytes)) {
        return fail(c, "%s %s (%s) is too large: its byte size overflows size_t", role, SHP(t),
                    plx_dtype_name(t->dtype));
    }
    const plx_quant_params *q = &t->quant;
    switch (q->kind) {
    case PLX_QUANT_NONE:
        break;
    case PLX_QUANT_PER_TENSOR:
        if (!(q->scale > 0.0f) || !isfinite(q->scale)) {
            return fail(c, "%s has quantization scale %g; it must be finite and > 0", role,
                        (double)q->scale);
        }
        if ((t->dtype == PLX_DTYPE_INT8 && (q->zero_point < -128 || q->zero_point > 127)) ||
            (t->dtype == PLX_DTYPE_UINT8 && (q->zero_point < 0 || q->zero_point > 255))) {
            return fail(c, "%s has zero point %" PRId32 ", out of range for %s", role,
                        q->zero_point, plx_dtype_name(t->dtype));
        }
        break;
    case PLX_QUANT_PER_AXIS:
        if (q->axis < 0 || (uint32_t)q->axis >= t->rank) {
            return fail(c, "%s %s has per-axis quantization along axis %" PRId32
                        ", out of range", role, SHP(t), q->axis);
        }
        if (!q->scales) {
            return fail(c, "%s has per-axis quantization without scales", role);
        }
        break;
    default:
        return fail(c, "%s has an invalid quantization kind %d", role, (int)q->kind);
    }
    return NULL;
}

static plx_status check_dtype(const layer_ctx *c, uint32_t i, unsigned mask, const char *what) {
    const plx_tensor_info *t = &c->in[i];
    if (dtype_in(t->dtype, mask)) {
        return NULL;
    }
    return fail(c, "%s has dtype %s, expected %s%s%s", ROLE(c, i), plx_dtype_name(t->dtype),
                DTYPES(mask), what ? " for " : "", what ? what : "");
}

/* Input j must have input i's dtype. */
static plx_status check_same_dtype(const layer_ctx *c, uint32_t j, uint32_t i) {
    if (c->in[j].dtype == c->in[i].dtype) {
        return NULL;
    }
    return fail(c, "%s has dtype %s but %s has %s; they must match", ROLE(c, j),
                plx_dtype_name(c->in[j].dtype), ROLE(c, i), plx_dtype_name(c->in[i].dtype));
}

static plx_status check_rank(const layer_ctx *c, uint32_t i, uint32_t min, uint32_t max) {
    const plx_tensor_info *t = &c->in[i];
    if (t->rank >= min && t->rank <= max) {
        return NULL;
    }
    if (min == max) {
        return fail(c, "%s %s must have rank %" PRIu32, ROLE(c, i), SHP(t), min);
    }
    if (max >= PLX_MAX_RANK) {
        return fail(c, "%s %s must have rank %" PRIu32 " or more", ROLE(c, i), SHP(t), min);
    }
    return fail(c, "%s %s must have rank %" PRIu32 " to %" PRIu32, ROLE(c, i), SHP(t), min, max);
}

/* Fields indexed by spatial dim: each of the first `n` must be >= min. */
static plx_status check_min(const layer_ctx *c, const char *field, const int64_t *v, uint32_t n,
                            int64_t min) {
    for (uint32_t i = 0; i < n; i++) {
        if (v[i] < min) {
            return fail(c, "%s[%" PRIu32 "] = " I64 " must be >= " I64, field, i, v[i], min);
        }
    }
    return NULL;
}

static plx_status check_axis(const layer_ctx *c, const char *field, int64_t axis, uint32_t i,
                             bool inclusive, uint32_t *out) {
    const plx_tensor_info *t = &c->in[i];
    if (norm_axis(axis, t->rank, inclusive, out)) {
        return NULL;
    }
    return fail(c, "%s " I64 " is out of range [-%" PRIu32 ", %" PRIu32 "%s for %s %s", field, axis,
                t->rank, t->rank, inclusive ? "]" : ")", ROLE(c, i), SHP(t));
}

/* Dtype and rank of N, C and 1 or 2 spatial dims. */
static plx_status check_spatial_input(const layer_ctx *c, unsigned dtypes, const char *what,
                                      uint32_t *out_spatial) {
    plx_status s = check_dtype(c, 0, dtypes, what);
    if (s) {
        return s;
    }
    const plx_tensor_info *x = &c->in[0];
    if (x->rank < 3 || x->rank > 2 + PLX_MAX_SPATIAL) {
        return fail(c, "X %s must have rank 3 or 4 (N, C and 1 or 2 spatial dims)", SHP(x));
    }
    *out_spatial = x->rank - 2;
    return NULL;
}

static plx_status check_auto_pad(const layer_ctx *c, plx_auto_pad ap) {
    if ((unsigned)ap > PLX_AUTO_PAD_VALID) {
        return fail(c, "auto_pad %d is not a plx_auto_pad", (int)ap);
    }
    return NULL;
}

/* Output size of a sliding window along spatial dim i (conv, pool). */
static plx_status window_out(const layer_ctx *c, uint32_t i, int64_t in, int64_t k, int64_t s,
                             int64_t d, int64_t pb, int64_t pe, plx_auto_pad ap, bool ceil_mode,
                             int64_t *out) {
    int64_t ek;
    if (!mul_nonneg(k - 1, d, &ek) || !add_i64(ek, 1, &ek)) {
        return fail(c, "the dilated kernel of spatial dim %" PRIu32 " overflows (kernel " I64
                    ", dilation " I64 ")", i, k, d);
    }
    if (ap == PLX_AUTO_PAD_SAME_UPPER || ap == PLX_AUTO_PAD_SAME_LOWER) {
        /* ONNX: ceil(in / stride); the pads only split the difference. */
        *out = in / s + (in % s != 0);
        return NULL;
    }
    if (ap == PLX_AUTO_PAD_VALID) {
        /* ONNX: ceil((in - ek + 1) / stride), which is this when in >= ek;
         * ceil_mode does not apply. */
        if (in < ek) {
            return fail(c, "X spatial dim %" PRIu32 " has size " I64
                        ", smaller than the dilated kernel " I64 " (auto_pad VALID)", i, in, ek);
        }
        *out = (in - ek) / s + 1;
        return NULL;
    }
    int64_t padded;
    if (!add_i64(in, pb, &padded) || !add_i64(padded, pe, &padded)) {
        return fail(c, "padded size of spatial dim %" PRIu32 " overflows", i);
    }
    if (padded < ek) {
        return fail(c, "X spatial dim %" PRIu32 " has size " I64 " (" I64
                    " with pads), smaller than the dilated kernel " I64, i, in, padded, ek);
    }
    int64_t num = padded - ek;
    int64_t o = num / s + 1;
    if (ceil_mode && num % s != 0) {
        /* One more window, unless it would start in the right padding. */
        o++;
        int64_t limit = in + pb; /* no overflow: <= padded */
        if (limit == 0 || o - 1 >= (limit - 1) / s + 1) {
            o--;
        }
    }
    *out = o;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Arity and descriptor sizes                                               */

bool plxi_op_arity(plx_op op, uint32_t *out_min_inputs, uint32_t *out_max_inputs,
                   uint32_t *out_min_outputs, uint32_t *out_max_outputs) {
    uint32_t min_in = 1, max_in = 1, min_out = 1, max_out = 1;
    switch (op) {
    case PLX_OP_INPUT:
    case PLX_OP_CONSTANT: min_in = max_in = 0; break;
    case PLX_OP_OUTPUT: min_out = max_out = 0; break;
    case PLX_OP_CONV:
    case PLX_OP_CONV_TRANSPOSE:
    case PLX_OP_FULLY_CONNECTED:
    case PLX_OP_GEMM: min_in = 2; max_in = 3; break;
    case PLX_OP_MATMUL:
    case PLX_OP_BINARY:
    case PLX_OP_GATHER: min_in = max_in = 2; break;
    case PLX_OP_BATCH_NORM: min_in = max_in = 5; break;
    case PLX_OP_LAYER_NORM:
    case PLX_OP_QUANTIZE:
    case PLX_OP_DEQUANTIZE: min_in = 2; max_in = 3; break;
    case PLX_OP_CONCAT: max_in = UINT32_MAX; break;
    case PLX_OP_SPLIT: max_out = UINT32_MAX; break;
    case PLX_OP_WHERE: min_in = max_in = 3; break;
    case PLX_OP_LSTM: min_in = max_in = 8; min_out = max_out = 3; break;
    case PLX_OP_GRU: min_in = max_in = 6; min_out = max_out = 2; break;
    case PLX_OP_TOPK: min_out = max_out = 2; break;
    case PLX_OP_INSTANCE_NORM: min_in = max_in = 3; break;
    case PLX_OP_TILE:
    case PLX_OP_ARG_REDUCE: break;
    /* A backend's replacement of other layers (R-23): any count. */
    case PLX_OP_PRECOMPILED: min_in = 0; max_in = UINT32_MAX; max_out = UINT32_MAX; break;
    case PLX_OP_POOL:
    case PLX_OP_GLOBAL_POOL:
    case PLX_OP_ACTIVATION:
    case PLX_OP_UNARY:
    case PLX_OP_SOFTMAX:
    case PLX_OP_REDUCE:
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_TRANSPOSE:
    case PLX_OP_SLICE:
    case PLX_OP_PAD:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_EXPAND:
    case PLX_OP_CAST:
    case PLX_OP_RESIZE:
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH:
    case PLX_OP_MEM_COPY:
    case PLX_OP_MEM_IMPORT: break;
    case PLX_OP_INVALID:
    default: return false;
    }
    if (out_min_inputs) {
        *out_min_inputs = min_in;
    }
    if (out_max_inputs) {
        *out_max_inputs = max_in;
    }
    if (out_min_outputs) {
        *out_min_outputs = min_out;
    }
    if (out_max_outputs) {
        *out_max_outputs = max_out;
    }
    return true;
}

size_t plxi_op_desc_size(plx_op op) {
    switch (op) {
    case PLX_OP_INPUT:
    case PLX_OP_OUTPUT: return sizeof(plx_io_desc);
    case PLX_OP_CONSTANT: return sizeof(plx_constant_desc);
    case PLX_OP_CONV: return sizeof(plx_conv_desc);
    case PLX_OP_CONV_TRANSPOSE: return sizeof(plx_conv_transpose_desc);
    case PLX_OP_FULLY_CONNECTED: return sizeof(plx_fully_connected_desc);
    case PLX_OP_GEMM: return sizeof(plx_gemm_desc);
    case PLX_OP_POOL: return sizeof(plx_pool_desc);
    case PLX_OP_GLOBAL_POOL: return sizeof(plx_global_pool_desc);
    case PLX_OP_ACTIVATION: return sizeof(plx_activation_desc);
    case PLX_OP_BINARY: return sizeof(plx_binary_desc);
    case PLX_OP_UNARY: return sizeof(plx_unary_desc);
    case PLX_OP_BATCH_NORM: return sizeof(plx_batch_norm_desc);
    case PLX_OP_LAYER_NORM: return sizeof(plx_layer_norm_desc);
    case PLX_OP_SOFTMAX: return sizeof(plx_softmax_desc);
    case PLX_OP_REDUCE: return sizeof(plx_reduce_desc);
    case PLX_OP_RESHAPE: return sizeof(plx_reshape_desc);
    case PLX_OP_FLATTEN:
    case PLX_OP_CONCAT:
    case PLX_OP_GATHER: return sizeof(plx_axis_desc);
    case PLX_OP_TRANSPOSE: return sizeof(plx_transpose_desc);
    case PLX_OP_SPLIT: return sizeof(plx_split_desc);
    case PLX_OP_SLICE: return sizeof(plx_slice_desc);
    case PLX_OP_PAD: return sizeof(plx_pad_desc);
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE: return sizeof(plx_axes_desc);
    case PLX_OP_EXPAND: return sizeof(plx_shape_desc);
    case PLX_OP_CAST: return sizeof(plx_cast_desc);
    case PLX_OP_RESIZE: return sizeof(plx_resize_desc);
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH: return sizeof(plx_depth_space_desc);
    case PLX_OP_QUANTIZE:
    case PLX_OP_DEQUANTIZE: return sizeof(plx_quantize_desc);
    case PLX_OP_LSTM: return sizeof(plx_lstm_desc);
    case PLX_OP_GRU: return sizeof(plx_gru_desc);
    case PLX_OP_TILE: return sizeof(plx_tile_desc);
    case PLX_OP_ARG_REDUCE: return sizeof(plx_arg_reduce_desc);
    case PLX_OP_TOPK: return sizeof(plx_topk_desc);
    case PLX_OP_INSTANCE_NORM: return sizeof(plx_instance_norm_desc);
    case PLX_OP_PRECOMPILED: return sizeof(plx_precompiled_desc);
    case PLX_OP_MATMUL:
    case PLX_OP_WHERE:
    case PLX_OP_MEM_COPY:
    case PLX_OP_MEM_IMPORT:
    case PLX_OP_INVALID:
    default: return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* Graph boundary                                                           */

static plx_status infer_input(const layer_ctx *c) {
    /* The caller sets the info; it only has to be valid. */
    return check_info(c, &c->out[0], "output 0");
}

static plx_status infer_constant(const layer_ctx *c) {
    const plx_constant_desc *d = c->desc;
    if (!d->data) {
        return fail(c, "descriptor data is NULL");
    }
    return check_info(c, &c->out[0], "output 0");
}

/* ------------------------------------------------------------------------ */
/* Convolutions and dense layers                                            */

static plx_status check_bias(const layer_ctx *c, uint32_t i, int64_t m, const char *of) {
    if (i >= c->n_in) {
        return NULL;
    }
    plx_status s = check_same_dtype(c, i, 0);
    if (s) {
        return s;
    }
    const plx_tensor_info *b = &c->in[i];
    if (b->rank != 1 || b->dims[0] != m) {
        return fail(c, "%s %s must be [" I64 "], one value per %s", ROLE(c, i), SHP(b), m, of);
    }
    return NULL;
}

static plx_status infer_conv(const layer_ctx *c) {
    const plx_conv_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    uint32_t ns = 0;
    plx_status s;
    if ((s = check_spatial_input(c, DT_FLOAT, NULL, &ns)) || (s = check_same_dtype(c, 1, 0)) ||
        (s = check_min(c, "strides", d->strides, ns, 1)) ||
        (s = check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = check_min(c, "pads_end", d->pads_end, ns, 0)) || (s = check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    if (d->group < 1) {
        return fail(c, "group " I64 " must be >= 1", d->group);
    }
    if (w->rank != x->rank) {
        return fail(c, "W %s must have rank %" PRIu32 " like X %s", SHP(w), x->rank, SHP(x));
    }
    int64_t ch = x->dims[1], m = w->dims[0];
    if (ch % d->group != 0) {
        return fail(c, "X %s has " I64 " channels, not divisible by group " I64, SHP(x), ch,
                    d->group);
    }
    if (w->dims[1] != ch / d->group) {
        return fail(c, "W has " I64 " input channels per group, X has " I64 " channels and group " I64,
                    w->dims[1], ch, d->group);
    }
    if (m % d->group != 0) {
        return fail(c, "W %s has " I64 " output channels, not divisible by group " I64, SHP(w), m,
                    d->group);
    }
    if ((s = check_bias(c, 2, m, "output channel"))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], m};
    for (uint32_t i = 0; i < ns; i++) {
        int64_t k = w->dims[2 + i];
        if (k < 1) {
            return fail(c, "W %s has an empty kernel along spatial dim %" PRIu32, SHP(w), i);
        }
        if ((s = window_out(c, i, x->dims[2 + i], k, d->strides[i], d->dilations[i],
                            d->pads_begin[i], d->pads_end[i], d->auto_pad, false, &dims[2 + i]))) {
            return s;
        }
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, dims, x->rank);
    return NULL;
}

static plx_status infer_conv_transpose(const layer_ctx *c) {
    const plx_conv_transpose_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    uint32_t ns = 0;
    plx_status s;
    if ((s = check_spatial_input(c, DT_FLOAT, NULL, &ns)) || (s = check_same_dtype(c, 1, 0)) ||
        (s = check_min(c, "strides", d->strides, ns, 1)) ||
        (s = check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = check_min(c, "pads_end", d->pads_end, ns, 0)) ||
        (s = check_min(c, "output_padding", d->output_padding, ns, 0)) ||
        (s = check_min(c, "output_shape", d->output_shape, ns, 0)) ||
        (s = check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    bool shape_given = false;
    for (uint32_t i = 0; i < ns; i++) {
        shape_given = shape_given || d->output_shape[i] != 0;
    }
    for (uint32_t i = 0; i < ns && shape_given; i++) {
        if (d->output_shape[i] == 0) {
            return fail(c, "output_shape[%" PRIu32 "] is 0: give every spatial dim or none", i);
        }
    }
    if (d->group < 1) {
        return fail(c, "group " I64 " must be >= 1", d->group);
    }
    if (w->rank != x->rank) {
        return fail(c, "W %s must have rank %" PRIu32 " like X %s", SHP(w), x->rank, SHP(x));
    }
    int64_t ch = x->dims[1], m;
    if (w->dims[0] != ch) {
        return fail(c, "W %s has " I64 " input channels, X %s has " I64, SHP(w), w->dims[0], SHP(x),
                    ch);
    }
    if (ch % d->group != 0) {
        return fail(c, "X %s has " I64 " channels, not divisible by group " I64, SHP(x), ch,
                    d->group);
    }
    if (!mul_nonneg(w->dims[1], d->group, &m)) {
        return fail(c, "output channels of W %s times group " I64 " overflow", SHP(w), d->group);
    }
    if ((s = check_bias(c, 2, m, "output channel"))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], m};
    for (uint32_t i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i], st = d->strides[i], full, ek, o;
        if (in < 1) {
            return fail(c, "X %s is empty along spatial dim %" PRIu32, SHP(x), i);
        }
        if (k < 1) {
            return fail(c, "W %s has an empty kernel along spatial dim %" PRIu32, SHP(w), i);
        }
        /* full = stride*(in-1) + output_padding + (k-1)*dilation + 1 */
        if (!mul_nonneg(k - 1, d->dilations[i], &ek) || !add_i64(ek, 1, &ek) ||
            !mul_nonneg(st, in - 1, &full) || !add_i64(full, d->output_padding[i], &full) ||
            !add_i64(full, ek, &full)) {
            return fail(c, "output size of spatial dim %" PRIu32 " overflows", i);
        }
        if (shape_given) {
            o = d->output_shape[i];
            if (o > full) {
                return fail(c, "output_shape[%" PRIu32 "] = " I64
                            " is larger than the full output " I64, i, o, full);
            }
        } else if (d->auto_pad == PLX_AUTO_PAD_SAME_UPPER ||
                   d->auto_pad == PLX_AUTO_PAD_SAME_LOWER) {
            if (!mul_nonneg(in, st, &o)) {
                return fail(c, "output size of spatial dim %" PRIu32 " overflows", i);
            }
        } else if (d->auto_pad == PLX_AUTO_PAD_VALID) {
            o = full;
        } else {
            o = full - d->pads_begin[i]; /* pads >= 0, full > 0: no overflow */
            if (o < 1 || o - d->pads_end[i] < 1) {
                return fail(c, "pads " I64 " + " I64 " leave no output along spatial dim %" PRIu32
                            " (full size " I64 ")", d->pads_begin[i], d->pads_end[i], i, full);
            }
            o -= d->pads_end[i];
        }
        dims[2 + i] = o;
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, dims, x->rank);
    return NULL;
}

static plx_status infer_fully_connected(const layer_ctx *c) {
    const plx_fully_connected_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *w = &c->in[1];
    plx_status s;
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_same_dtype(c, 1, 0)) ||
        (s = check_rank(c, 0, 2, PLX_MAX_RANK)) || (s = check_rank(c, 1, 2, 2))) {
        return s;
    }
    int64_t k = x->dims[x->rank - 1];
    int64_t wk = w->dims[d->weights_transposed ? 1 : 0], m = w->dims[d->weights_transposed ? 0 : 1];
    if (wk != k) {
        return fail(c, "X %s has " I64 " features but W %s has " I64 " (W is %s)", SHP(x), k,
                    SHP(w), wk, d->weights_transposed ? "[M,K]" : "[K,M]");
    }
    if ((s = check_bias(c, 2, m, "output feature"))) {
        return s;
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, x->dims, x->rank);
    c->out->dims[x->rank - 1] = m;
    return NULL;
}

static plx_status infer_matmul(const layer_ctx *c) {
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    plx_status s;
    if ((s = check_dtype(c, 0, DT_MATMUL, NULL)) || (s = check_same_dtype(c, 1, 0)) ||
        (s = check_rank(c, 0, 1, PLX_MAX_RANK)) || (s = check_rank(c, 1, 1, PLX_MAX_RANK))) {
        return s;
    }
    /* numpy: a 1-D A is [1,K] and a 1-D B is [K,1], the 1 removed afterwards. */
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    if (ka != kb) {
        return fail(c, "inner dimensions differ: A %s and B %s", SHP(a), SHP(b));
    }
    uint32_t ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t dims[PLX_MAX_RANK];
    if (!broadcast(a->dims, ba, b->dims, bb, dims, &r)) {
        return fail(c, "batch dimensions of A %s and B %s do not broadcast", SHP(a), SHP(b));
    }
    if (a->rank >= 2) {
        dims[r++] = a->dims[a->rank - 2];
    }
    if (b->rank >= 2) {
        dims[r++] = b->dims[b->rank - 1];
    }
    info_init(c->out, a->dtype, r);
    info_set_dims(c->out, dims, r);
    return NULL;
}

static plx_status infer_gemm(const layer_ctx *c) {
    const plx_gemm_desc *d = c->desc;
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    plx_status s;
    if ((s = check_dtype(c, 0, DT_MATMUL, NULL)) || (s = check_same_dtype(c, 1, 0)) ||
        (s = check_rank(c, 0, 2, 2)) || (s = check_rank(c, 1, 2, 2))) {
        return s;
    }
    int64_t m = a->dims[d->trans_a ? 1 : 0], ka = a->dims[d->trans_a ? 0 : 1];
    int64_t kb = b->dims[d->trans_b ? 1 : 0], n = b->dims[d->trans_b ? 0 : 1];
    if (ka != kb) {
        return fail(c, "inner dimensions differ: A %s%s and B %s%s", SHP(a),
                    d->trans_a ? " (transposed)" : "", SHP(b), d->trans_b ? " (transposed)" : "");
    }
    int64_t dims[2] = {m, n};
    if (c->n_in > 2) {
        const plx_tensor_info *cc = &c->in[2];
        if ((s = check_same_dtype(c, 2, 0))) {
            return s;
        }
        if (!broadcasts_to(cc->dims, cc->rank, dims, 2)) {
            return fail(c, "C %s does not broadcast to [M,N] = [" I64 "," I64 "]", SHP(cc), m, n);
        }
    }
    info_init(c->out, a->dtype, 2);
    info_set_dims(c->out, dims, 2);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */

static plx_status infer_pool(const layer_ctx *c) {
    const plx_pool_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t ns = 0;
    plx_status s;
    if ((unsigned)d->kind > PLX_POOL_AVERAGE) {
        return fail(c, "kind %d is not a plx_pool_kind", (int)d->kind);
    }
    bool is_max = d->kind == PLX_POOL_MAX;
    if ((s = check_spatial_input(c, is_max ? DT_FLOAT | DT(INT8) | DT(UINT8) : DT_FLOAT,
                                 is_max ? "max pooling" : "average pooling", &ns)) ||
        (s = check_min(c, "kernel", d->kernel, ns, 1)) ||
        (s = check_min(c, "strides", d->strides, ns, 1)) ||
        (s = check_min(c, "dilations", d->dilations, ns, 1)) ||
        (s = check_min(c, "pads_begin", d->pads_begin, ns, 0)) ||
        (s = check_min(c, "pads_end", d->pads_end, ns, 0)) || (s = check_auto_pad(c, d->auto_pad))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (uint32_t i = 0; i < ns; i++) {
        if (!is_max && d->dilations[i] != 1) {
            return fail(c, "average pooling needs dilations of 1, got dilations[%" PRIu32 "] = " I64,
                        i, d->dilations[i]);
        }
        if ((s = window_out(c, i, x->dims[2 + i], d->kernel[i], d->strides[i], d->dilations[i],
                            d->pads_begin[i], d->pads_end[i], d->auto_pad, d->ceil_mode,
                            &dims[2 + i]))) {
            return s;
        }
        /* A window entirely in the padding has no value (ONNX Runtime refuses
         * pads >= kernel too). ek cannot overflow: window_out checked it. */
        int64_t ek = (d->kernel[i] - 1) * d->dilations[i] + 1;
        if (d->auto_pad == PLX_AUTO_PAD_NOTSET && (d->pads_begin[i] >= ek || d->pads_end[i] >= ek)) {
            return fail(c, "pads " I64 " + " I64 " along spatial dim %" PRIu32
                        " must be smaller than the dilated kernel " I64,
                        d->pads_begin[i], d->pads_end[i], i, ek);
        }
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, dims, x->rank);
    if (is_max && x->quant.kind == PLX_QUANT_PER_TENSOR) {
        c->out->quant = moved_quant(x);
    }
    return NULL;
}

static plx_status infer_global_pool(const layer_ctx *c) {
    const plx_global_pool_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t ns = 0;
    plx_status s;
    if ((unsigned)d->kind > PLX_POOL_AVERAGE) {
        return fail(c, "kind %d is not a plx_pool_kind", (int)d->kind);
    }
    if ((s = check_spatial_input(c, DT_FLOAT, NULL, &ns))) {
        return s;
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, x->dims, x->rank);
    for (uint32_t i = 0; i < ns; i++) {
        c->out->dims[2 + i] = 1;
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */

static void same_as_input(const layer_ctx *c, plx_dtype dtype) {
    info_init(c->out, dtype, c->in[0].rank);
    info_set_dims(c->out, c->in[0].dims, c->in[0].rank);
}

static plx_status infer_activation(const layer_ctx *c) {
    const plx_activation_desc *d = c->desc;
    if ((unsigned)d->func > PLX_ACT_SCALED_TANH) {
        return fail(c, "func %d is not a plx_activation_func", (int)d->func);
    }
    unsigned mask = DT_FLOAT;
    if (d->func == PLX_ACT_RELU) {
        mask |= DT_SINT; /* ONNX Relu: signed integers too */
    } else if (d->func == PLX_ACT_CLIP) {
        mask |= DT_INT; /* ONNX Clip: every numeric type */
    } else if (d->func == PLX_ACT_CELU) {
        mask = DT(FLOAT32); /* ONNX Celu: float32 only */
    }
    plx_status s = check_dtype(c, 0, mask, plx_activation_func_name(d->func));
    if (s) {
        return s;
    }
    if (isnan(d->alpha) || isnan(d->beta)) {
        return fail(c, "alpha %g and beta %g must not be NaN", (double)d->alpha, (double)d->beta);
    }
    if (d->func == PLX_ACT_CELU && d->alpha == 0.0f) {
        return fail(c, "alpha 0 must be non-zero for celu (it divides x)");
    }
    same_as_input(c, c->in[0].dtype);
    return NULL;
}

static plx_status infer_unary(const layer_ctx *c) {
    const plx_unary_desc *d = c->desc;
    if ((unsigned)d->func > PLX_UNARY_SIGN) {
        return fail(c, "func %d is not a plx_unary_func", (int)d->func);
    }
    unsigned mask = DT_FLOAT; /* also sin .. atanh and round */
    if (d->func == PLX_UNARY_ABS) {
        mask = DT_NUM;
    } else if (d->func == PLX_UNARY_NEG || d->func == PLX_UNARY_SIGN) {
        mask = DT_FLOAT | DT_SINT;
    } else if (d->func == PLX_UNARY_NOT) {
        mask = DT(BOOL);
    }
    plx_status s = check_dtype(c, 0, mask, plx_unary_func_name(d->func));
    if (s) {
        return s;
    }
    same_as_input(c, c->in[0].dtype);
    return NULL;
}

static plx_status infer_binary(const layer_ctx *c) {
    const plx_binary_desc *d = c->desc;
    const plx_tensor_info *a = &c->in[0], *b = &c->in[1];
    if ((unsigned)d->func > PLX_BINARY_MOD) {
        return fail(c, "func %d is not a plx_binary_func", (int)d->func);
    }
    plx_binary_func f = d->func;
    bool logical = plx_binary_func_is_logical(f);
    bool compare = plx_binary_func_is_compare(f);
    unsigned mask = DT_NUM;
    if (f == PLX_BINARY_POW) {
        mask = DT_FLOAT | DT(INT32) | DT(INT64);
    } else if (f == PLX_BINARY_PRELU) {
        mask = DT_FLOAT | DT(INT32) | DT(INT64); /* ONNX PRelu */
    } else if (f == PLX_BINARY_EQUAL) {
        mask = DT_ANY;
    } else if (logical) {
        mask = DT(BOOL);
    }
    plx_status s;
    if ((s = check_dtype(c, 0, mask, plx_binary_func_name(f))) || (s = check_same_dtype(c, 1, 0))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (f == PLX_BINARY_PRELU) {
        /* The slope broadcasts to X's shape (unidirectionally): Y is A's shape. */
        if (!broadcasts_to(b->dims, b->rank, a->dims, a->rank)) {
            return fail(c, "slope B %s does not broadcast to the shape of A %s", SHP(b), SHP(a));
        }
        same_as_input(c, a->dtype);
        return NULL;
    }
    if (!broadcast(a->dims, a->rank, b->dims, b->rank, dims, &r)) {
        return fail(c, "A %s and B %s do not broadcast", SHP(a), SHP(b));
    }
    info_init(c->out, compare || logical ? PLX_DTYPE_BOOL : a->dtype, r);
    info_set_dims(c->out, dims, r);
    return NULL;
}

static plx_status infer_where(const layer_ctx *c) {
    const plx_tensor_info *cond = &c->in[0], *x = &c->in[1], *y = &c->in[2];
    plx_status s;
    if ((s = check_dtype(c, 0, DT(BOOL), NULL)) || (s = check_same_dtype(c, 2, 1))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (!broadcast(cond->dims, cond->rank, x->dims, x->rank, dims, &r) ||
        !broadcast(dims, r, y->dims, y->rank, dims, &r)) {
        return fail(c, "condition %s, X %s and Y %s do not broadcast", SHP(cond), SHP(x), SHP(y));
    }
    info_init(c->out, x->dtype, r);
    info_set_dims(c->out, dims, r);
    return NULL;
}

static plx_status infer_cast(const layer_ctx *c) {
    const plx_cast_desc *d = c->desc;
    if (plx_dtype_size(d->to) == 0) {
        return fail(c, "to %d is not a valid dtype", (int)d->to);
    }
    same_as_input(c, d->to);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Normalisation                                                            */

static plx_status check_epsilon(const layer_ctx *c, float eps) {
    if (!(eps >= 0.0f) || !isfinite(eps)) {
        return fail(c, "epsilon %g must be finite and >= 0", (double)eps);
    }
    return NULL;
}

static plx_status infer_batch_norm(const layer_ctx *c) {
    const plx_batch_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_rank(c, 0, 2, PLX_MAX_RANK)) ||
        (s = check_epsilon(c, d->epsilon))) {
        return s;
    }
    for (uint32_t i = 1; i < 5; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = check_same_dtype(c, i, 0))) {
            return s;
        }
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return fail(c, "%s %s must be [" I64 "], one value per channel of X %s", ROLE(c, i),
                        SHP(p), x->dims[1], SHP(x));
        }
    }
    same_as_input(c, x->dtype);
    return NULL;
}

static plx_status infer_layer_norm(const layer_ctx *c) {
    const plx_layer_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_epsilon(c, d->epsilon)) ||
        (s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    plx_tensor_info norm;
    info_init(&norm, x->dtype, 0);
    info_set_dims(&norm, x->dims + axis, x->rank - axis);
    for (uint32_t i = 1; i < c->n_in; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = check_same_dtype(c, i, 0))) {
            return s;
        }
        if (!broadcasts_to(p->dims, p->rank, norm.dims, norm.rank)) {
            return fail(c, "%s %s does not broadcast to the normalised dims %s of X %s", ROLE(c, i),
                        SHP(p), SHP(&norm), SHP(x));
        }
    }
    same_as_input(c, x->dtype);
    return NULL;
}

/* ONNX InstanceNormalization: X [N, C, D1, ...], scale and bias [C]. */
static plx_status infer_instance_norm(const layer_ctx *c) {
    const plx_instance_norm_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_rank(c, 0, 3, PLX_MAX_RANK)) ||
        (s = check_epsilon(c, d->epsilon))) {
        return s;
    }
    for (uint32_t i = 1; i < 3; i++) {
        const plx_tensor_info *p = &c->in[i];
        if ((s = check_same_dtype(c, i, 0))) {
            return s;
        }
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return fail(c, "%s %s must be [" I64 "], one value per channel of X %s", ROLE(c, i),
                        SHP(p), x->dims[1], SHP(x));
        }
    }
    same_as_input(c, x->dtype);
    return NULL;
}

static plx_status infer_softmax(const layer_ctx *c) {
    const plx_softmax_desc *d = c->desc;
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) ||
        (s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    same_as_input(c, c->in[0].dtype);
    return NULL;
}

static plx_status infer_reduce(const layer_ctx *c) {
    const plx_reduce_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    static const char *const names[] = {"mean", "max", "min", "sum", "prod", "l1", "l2",
                                        "sum_square", "log_sum", "log_sum_exp"};
    if ((unsigned)d->func > PLX_REDUCE_LOG_SUM_EXP) {
        return fail(c, "func %d is not a plx_reduce_func", (int)d->func);
    }
    /* ONNX ReduceProd, L1, L2, SumSquare, LogSum, LogSumExp: floats, int32
     * and int64; mean, max, min and sum: every numeric type. */
    unsigned mask = d->func <= PLX_REDUCE_SUM ? DT_NUM : DT_FLOAT | DT(INT32) | DT(INT64);
    if ((s = check_dtype(c, 0, mask, names[d->func]))) {
        return s;
    }
    if (d->axis_count > PLX_MAX_RANK) {
        return fail(c, "axis_count %" PRIu32 " is more than %d", d->axis_count, PLX_MAX_RANK);
    }
    bool reduced[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        if ((s = check_axis(c, field, d->axes[i], 0, false, &a))) {
            return s;
        }
        if (reduced[a]) {
            return fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i, d->axes[i], a);
        }
        reduced[a] = true;
    }
    if (d->axis_count == 0) {
        if (d->noop_with_empty_axes) {
            same_as_input(c, x->dtype);
            return NULL;
        }
        for (uint32_t i = 0; i < x->rank; i++) {
            reduced[i] = true;
        }
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (!reduced[i]) {
            dims[r++] = x->dims[i];
        } else if (d->keepdims) {
            dims[r++] = 1;
        }
    }
    info_init(c->out, x->dtype, r);
    info_set_dims(c->out, dims, r);
    return NULL;
}

/* ONNX ArgMax / ArgMin: int64 indices along one axis. */
static plx_status infer_arg_reduce(const layer_ctx *c) {
    const plx_arg_reduce_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_dtype(c, 0, DT_NUM, d->select_min ? "argmin" : "argmax")) ||
        (s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    bool empty_out = false;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != axis) {
            empty_out = empty_out || x->dims[i] == 0;
            dims[r++] = x->dims[i];
        } else if (d->keepdims) {
            dims[r++] = 1;
        }
    }
    if (x->dims[axis] == 0 && !empty_out) {
        return fail(c, "axis %" PRIu32 " of X %s is empty: there is no %s to index", axis, SHP(x),
                    d->select_min ? "minimum" : "maximum");
    }
    info_init(c->out, PLX_DTYPE_INT64, r);
    info_set_dims(c->out, dims, r);
    return NULL;
}

/* ONNX TopK: values (X's dtype) and int64 indices, k along the axis. */
static plx_status infer_topk(const layer_ctx *c) {
    const plx_topk_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_dtype(c, 0, DT_NUM, NULL)) ||
        (s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    if (d->k < 0) {
        return fail(c, "k " I64 " must be >= 0", d->k);
    }
    if (d->k > x->dims[axis]) {
        return fail(c, "k " I64 " is larger than axis %" PRIu32 " of X %s (size " I64 ")", d->k,
                    axis, SHP(x), x->dims[axis]);
    }
    /* Multi-output: written only now that nothing can fail. */
    plx_tensor_info *values = &c->out[0], *indices = &c->out[1];
    info_init(values, x->dtype, x->rank);
    info_set_dims(values, x->dims, x->rank);
    values->dims[axis] = d->k;
    values->quant = moved_quant(x);
    info_init(indices, PLX_DTYPE_INT64, x->rank);
    info_set_dims(indices, values->dims, x->rank);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */

/* Output with the input's dtype, given dims, and per-tensor quantization passed through. */
static void moved_output(plx_tensor_info *o, const plx_tensor_info *x, const int64_t *dims,
                         uint32_t rank) {
    info_init(o, x->dtype, rank);
    info_set_dims(o, dims, rank);
    o->quant = moved_quant(x);
}

static plx_status infer_reshape(const layer_ctx *c) {
    const plx_reshape_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->rank > PLX_MAX_RANK) {
        return fail(c, "rank %" PRIu32 " is more than %d", d->rank, PLX_MAX_RANK);
    }
    plx_tensor_info want;
    info_init(&want, x->dtype, 0);
    info_set_dims(&want, d->dims, d->rank);
    int64_t dims[PLX_MAX_RANK];
    int64_t known = 1, count;
    int32_t infer_at = -1;
    bool has_zero = false;
    if (!dims_product(x->dims, 0, x->rank, &count)) {
        return fail(c, "the element count of X %s overflows", SHP(x));
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        int64_t v = d->dims[i];
        if (v < -1) {
            return fail(c, "dims[%" PRIu32 "] = " I64 " must be >= -1", i, v);
        }
        if (v == -1) {
            if (infer_at >= 0) {
                return fail(c, "dims %s has more than one -1", SHP(&want));
            }
            infer_at = (int32_t)i;
            continue;
        }
        if (v == 0 && !d->allow_zero) {
            if (i >= x->rank) {
                return fail(c, "dims[%" PRIu32 "] = 0 copies a dim of X %s, which has rank %" PRIu32,
                            i, SHP(x), x->rank);
            }
            v = x->dims[i];
        }
        has_zero = has_zero || v == 0;
        dims[i] = v;
        if (!mul_nonneg(known, v, &known)) {
            return fail(c, "dims %s overflow the element count", SHP(&want));
        }
    }
    if (infer_at >= 0) {
        if (d->allow_zero && has_zero) {
            return fail(c, "dims %s has both -1 and 0 with allow_zero", SHP(&want));
        }
        if (known == 0 || count % known != 0) {
            return fail(c, "cannot infer the -1 of dims %s from X %s (" I64 " elements)",
                        SHP(&want), SHP(x), count);
        }
        dims[infer_at] = count / known;
    } else if (known != count) {
        plx_tensor_info got;
        info_init(&got, x->dtype, 0);
        info_set_dims(&got, dims, d->rank);
        return fail(c, "X %s has " I64 " elements, dims %s (%s) have " I64, SHP(x), count,
                    SHP(&want), SHP(&got), known);
    }
    moved_output(c->out, x, dims, d->rank);
    return NULL;
}

static plx_status infer_flatten(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s = check_axis(c, "axis", d->axis, 0, true, &axis);
    if (s) {
        return s;
    }
    int64_t dims[2];
    if (!dims_product(x->dims, 0, axis, &dims[0]) ||
        !dims_product(x->dims, axis, x->rank, &dims[1])) {
        return fail(c, "flattened dims of X %s overflow", SHP(x));
    }
    moved_output(c->out, x, dims, 2);
    return NULL;
}

static plx_status infer_transpose(const layer_ctx *c) {
    const plx_transpose_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    int64_t dims[PLX_MAX_RANK];
    if (d->perm_count == 0) {
        for (uint32_t i = 0; i < x->rank; i++) {
            dims[i] = x->dims[x->rank - 1 - i];
        }
    } else {
        if (d->perm_count != x->rank) {
            return fail(c, "perm has %" PRIu32 " entries, X %s has rank %" PRIu32, d->perm_count,
                        SHP(x), x->rank);
        }
        bool seen[PLX_MAX_RANK] = {false};
        for (uint32_t i = 0; i < x->rank; i++) {
            uint32_t p = d->perm[i];
            if (p >= x->rank || seen[p]) {
                return fail(c, "perm[%" PRIu32 "] = %" PRIu32 ": perm must be a permutation of 0..%"
                            PRIu32, i, p, x->rank - 1);
            }
            seen[p] = true;
            dims[i] = x->dims[p];
        }
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static bool same_quant(const plx_quant_params *a, const plx_quant_params *b) {
    return a->kind == PLX_QUANT_PER_TENSOR && b->kind == PLX_QUANT_PER_TENSOR &&
           a->scale == b->scale && a->zero_point == b->zero_point;
}

static plx_status infer_concat(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s = check_axis(c, "axis", d->axis, 0, false, &axis);
    if (s) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    bool quant = x->quant.kind == PLX_QUANT_PER_TENSOR;
    for (uint32_t i = 1; i < c->n_in; i++) {
        const plx_tensor_info *t = &c->in[i];
        if ((s = check_same_dtype(c, i, 0))) {
            return s;
        }
        bool ok = t->rank == x->rank;
        for (uint32_t k = 0; ok && k < x->rank; k++) {
            ok = k == axis || t->dims[k] == x->dims[k];
        }
        if (!ok) {
            return fail(c, "%s %s differs from input 0 %s outside axis %" PRIu32, ROLE(c, i),
                        SHP(t), SHP(x), axis);
        }
        if (!add_i64(dims[axis], t->dims[axis], &dims[axis])) {
            return fail(c, "the concatenated axis %" PRIu32 " overflows", axis);
        }
        quant = quant && same_quant(&x->quant, &t->quant);
    }
    info_init(c->out, x->dtype, x->rank);
    info_set_dims(c->out, dims, x->rank);
    if (quant) {
        c->out->quant = moved_quant(x);
    }
    return NULL;
}

static plx_status infer_split(const layer_ctx *c) {
    const plx_split_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0, n = c->n_out;
    plx_status s = check_axis(c, "axis", d->axis, 0, false, &axis);
    if (s) {
        return s;
    }
    int64_t size = x->dims[axis], chunk = 0, last = 0;
    if (d->sizes) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (d->sizes[i] < 0) {
                return fail(c, "sizes[%" PRIu32 "] = " I64 " must be >= 0", i, d->sizes[i]);
            }
            if (!add_i64(sum, d->sizes[i], &sum)) {
                return fail(c, "sizes overflow when summed");
            }
        }
        if (sum != size) {
            return fail(c, "sizes sum to " I64 ", but axis %" PRIu32 " of X %s has size " I64, sum,
                        axis, SHP(x), size);
        }
    } else {
        /* ONNX opset 18 num_outputs: ceil(size / n) each, the last smaller. */
        chunk = size / n + (size % n != 0);
        last = size - chunk * (int64_t)(n - 1); /* chunk * (n-1) <= size + n: no overflow */
        if (last < 0) {
            return fail(c, "axis %" PRIu32 " of X %s (size " I64 ") cannot be split into %" PRIu32
                        " parts of " I64, axis, SHP(x), size, n, chunk);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        plx_tensor_info *o = &c->out[i];
        moved_output(o, x, x->dims, x->rank);
        o->dims[axis] = d->sizes ? d->sizes[i] : i + 1 < n ? chunk : last;
    }
    return NULL;
}

static plx_status infer_slice(const layer_ctx *c) {
    const plx_slice_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->count > PLX_MAX_RANK) {
        return fail(c, "count %" PRIu32 " is more than %d", d->count, PLX_MAX_RANK);
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    bool seen[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->count; i++) {
        uint32_t a = 0;
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        plx_status s = check_axis(c, field, d->axes[i], 0, false, &a);
        if (s) {
            return s;
        }
        if (seen[a]) {
            return fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i, d->axes[i], a);
        }
        seen[a] = true;
        int64_t step = d->steps[i], dim = x->dims[a], start = d->starts[i], end = d->ends[i];
        if (step == 0) {
            return fail(c, "steps[%" PRIu32 "] is 0", i);
        }
        if (dim == 0) {
            dims[a] = 0;
            continue;
        }
        /* ONNX: negative values count from the end, then clamp. */
        if (start < 0) {
            start += dim;
        }
        if (end < 0) {
            end += dim;
        }
        if (step > 0) {
            start = start < 0 ? 0 : start > dim ? dim : start;
            end = end < 0 ? 0 : end > dim ? dim : end;
            dims[a] = end <= start ? 0 : (end - start - 1) / step + 1;
        } else {
            start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
            end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
            /* (start - end - 1) / step truncates toward zero: no negation of INT64_MIN */
            dims[a] = start <= end ? 0 : 1 - (start - end - 1) / step;
        }
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status infer_pad(const layer_ctx *c) {
    const plx_pad_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if ((unsigned)d->mode > PLX_PAD_EDGE) {
        return fail(c, "mode %d is not a plx_pad_mode", (int)d->mode);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i], in = x->dims[i], o;
        if (!add_i64(in, pb, &o) || !add_i64(o, pe, &o)) {
            return fail(c, "padded dim %" PRIu32 " overflows", i);
        }
        if (o < 0) {
            return fail(c, "pads " I64 " and " I64 " crop dim %" PRIu32 " of X %s below 0", pb, pe, i,
                        SHP(x));
        }
        if (d->mode == PLX_PAD_REFLECT && (pb >= in || pe >= in) && (pb > 0 || pe > 0)) {
            return fail(c, "reflect pads " I64 " and " I64 " must be smaller than dim %" PRIu32
                        " of X %s", pb, pe, i, SHP(x));
        }
        if (d->mode == PLX_PAD_EDGE && in == 0 && (pb > 0 || pe > 0)) {
            return fail(c, "edge padding of the empty dim %" PRIu32 " of X %s", i, SHP(x));
        }
        dims[i] = o;
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status infer_squeeze(const layer_ctx *c) {
    const plx_axes_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->axis_count > PLX_MAX_RANK) {
        return fail(c, "axis_count %" PRIu32 " is more than %d", d->axis_count, PLX_MAX_RANK);
    }
    bool drop[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        plx_status s = check_axis(c, field, d->axes[i], 0, false, &a);
        if (s) {
            return s;
        }
        if (drop[a]) {
            return fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i, d->axes[i], a);
        }
        if (x->dims[a] != 1) {
            return fail(c, "axis %" PRIu32 " of X %s has size " I64 ", not 1", a, SHP(x), x->dims[a]);
        }
        drop[a] = true;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (!(d->axis_count == 0 ? x->dims[i] == 1 : drop[i])) {
            dims[r++] = x->dims[i];
        }
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

static plx_status infer_unsqueeze(const layer_ctx *c) {
    const plx_axes_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->axis_count == 0) {
        return fail(c, "axis_count is 0: unsqueeze needs at least one axis");
    }
    if (d->axis_count > PLX_MAX_RANK || x->rank + d->axis_count > PLX_MAX_RANK) {
        return fail(c, "X %s with %" PRIu32 " more axes would exceed rank %d", SHP(x),
                    d->axis_count, PLX_MAX_RANK);
    }
    uint32_t r = x->rank + d->axis_count;
    bool add[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        if (!norm_axis(d->axes[i], r, false, &a)) {
            return fail(c, "axes[%" PRIu32 "] = %" PRId32 " is out of range [-%" PRIu32 ", %" PRIu32
                        ") for the output rank %" PRIu32, i, d->axes[i], r, r, r);
        }
        if (add[a]) {
            return fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i, d->axes[i], a);
        }
        add[a] = true;
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0, k = 0; i < r; i++) {
        dims[i] = add[i] ? 1 : x->dims[k++];
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

static plx_status infer_gather(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_dtype(c, 1, DT(INT32) | DT(INT64), NULL)) ||
        (s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    uint32_t r = x->rank - 1 + idx->rank;
    if (r > PLX_MAX_RANK) {
        return fail(c, "the output rank %" PRIu32 " of data %s and indices %s exceeds %d", r,
                    SHP(x), SHP(idx), PLX_MAX_RANK);
    }
    if (x->dims[axis] == 0) {
        size_t n;
        if (plx_tensor_info_element_count(idx, &n) && n > 0) {
            return fail(c, "indices %s index the empty axis %" PRIu32 " of data %s", SHP(idx), axis,
                        SHP(x));
        }
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t k = 0;
    for (uint32_t i = 0; i < axis; i++) {
        dims[k++] = x->dims[i];
    }
    for (uint32_t i = 0; i < idx->rank; i++) {
        dims[k++] = idx->dims[i];
    }
    for (uint32_t i = axis + 1; i < x->rank; i++) {
        dims[k++] = x->dims[i];
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

static plx_status infer_expand(const layer_ctx *c) {
    const plx_shape_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->rank > PLX_MAX_RANK) {
        return fail(c, "rank %" PRIu32 " is more than %d", d->rank, PLX_MAX_RANK);
    }
    plx_tensor_info want;
    info_init(&want, x->dtype, 0);
    info_set_dims(&want, d->dims, d->rank);
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->dims[i] < 0) {
            return fail(c, "dims[%" PRIu32 "] = " I64 " must be >= 0", i, d->dims[i]);
        }
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (!broadcast(x->dims, x->rank, d->dims, d->rank, dims, &r)) {
        return fail(c, "X %s does not broadcast with the shape %s", SHP(x), SHP(&want));
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

/* ONNX Tile: repeats[i] copies of X along each dim i. */
static plx_status infer_tile(const layer_ctx *c) {
    const plx_tile_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        int64_t rep = d->repeats[i];
        if (i >= x->rank) {
            /* ONNX wants exactly one entry per dim: one past the rank that
             * is not the default 1 was meant for a tensor of another rank. */
            if (rep != 1) {
                return fail(c, "repeats[%" PRIu32 "] = " I64 " is past the rank %" PRIu32
                            " of X %s: repeats has one entry per dim of X, the rest stay 1",
                            i, rep, x->rank, SHP(x));
            }
            continue;
        }
        if (rep < 0) {
            return fail(c, "repeats[%" PRIu32 "] = " I64 " must be >= 0", i, rep);
        }
        if (!mul_nonneg(x->dims[i], rep, &dims[i])) {
            return fail(c, "dim %" PRIu32 " of X %s times repeats[%" PRIu32 "] = " I64 " overflows",
                        i, SHP(x), i, rep);
        }
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status infer_depth_space(const layer_ctx *c) {
    const plx_depth_space_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    bool to_space = c->op == PLX_OP_DEPTH_TO_SPACE;
    plx_status s;
    if ((unsigned)d->mode > PLX_DEPTH_SPACE_CRD) {
        return fail(c, "mode %d is not a plx_depth_space_mode", (int)d->mode);
    }
    if (!to_space && d->mode != PLX_DEPTH_SPACE_DCR) {
        return fail(c, "mode CRD applies to depth_to_space only");
    }
    if (d->block_size < 1) {
        return fail(c, "block_size " I64 " must be >= 1", d->block_size);
    }
    if ((s = check_rank(c, 0, 4, 4))) {
        return s;
    }
    int64_t b = d->block_size, bb;
    int64_t dims[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    if (!mul_nonneg(b, b, &bb)) {
        return fail(c, "block_size " I64 " squared overflows", b);
    }
    if (to_space) {
        if (dims[1] % bb != 0) {
            return fail(c, "X %s has " I64 " channels, not divisible by block_size^2 = " I64, SHP(x),
                        dims[1], bb);
        }
        dims[1] /= bb;
        if (!mul_nonneg(dims[2], b, &dims[2]) || !mul_nonneg(dims[3], b, &dims[3])) {
            return fail(c, "output dims of X %s with block_size " I64 " overflow", SHP(x), b);
        }
    } else {
        if (dims[2] % b != 0 || dims[3] % b != 0) {
            return fail(c, "X %s has H and W not divisible by block_size " I64, SHP(x), b);
        }
        dims[2] /= b;
        dims[3] /= b;
        if (!mul_nonneg(dims[1], bb, &dims[1])) {
            return fail(c, "output dims of X %s with block_size " I64 " overflow", SHP(x), b);
        }
    }
    moved_output(c->out, x, dims, 4);
    return NULL;
}

static plx_status infer_resize(const layer_ctx *c) {
    const plx_resize_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((unsigned)d->mode > PLX_RESIZE_LINEAR) {
        return fail(c, "mode %d is not a plx_resize_mode", (int)d->mode);
    }
    if ((unsigned)d->coord > PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN) {
        return fail(c, "coord %d is not a plx_resize_coord", (int)d->coord);
    }
    if ((unsigned)d->nearest > PLX_RESIZE_NEAREST_CEIL) {
        return fail(c, "nearest %d is not a plx_resize_nearest", (int)d->nearest);
    }
    if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_rank(c, 0, 4, 4))) {
        return s;
    }
    bool sizes = d->sizes[0] != 0 || d->sizes[1] != 0;
    bool scales = d->scales[0] != 0.0f || d->scales[1] != 0.0f;
    if (sizes == scales) {
        return fail(c, "give either sizes or scales, not %s", sizes ? "both" : "neither");
    }
    int64_t dims[4] = {x->dims[0], x->dims[1], 0, 0};
    for (uint32_t i = 0; i < 2; i++) {
        if (sizes) {
            if (d->sizes[i] < 1) {
                return fail(c, "sizes[%" PRIu32 "] = " I64 " must be >= 1", i, d->sizes[i]);
            }
            dims[2 + i] = d->sizes[i];
            continue;
        }
        float sc = d->scales[i];
        if (!(sc > 0.0f) || !isfinite(sc)) {
            return fail(c, "scales[%" PRIu32 "] = %g must be finite and > 0", i, (double)sc);
        }
        /* ONNX: floor(in * scale), computed in double like its reference. */
        double o = (double)x->dims[2 + i] * (double)sc;
        if (!(o < 9.2e18)) {
            return fail(c, "output dim %" PRIu32 " of X %s times %g overflows", 2 + i, SHP(x),
                        (double)sc);
        }
        dims[2 + i] = (int64_t)o; /* o >= 0: truncation is floor */
    }
    info_init(c->out, x->dtype, 4);
    info_set_dims(c->out, dims, 4);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Quantization                                                             */

static plx_status infer_quantize(const layer_ctx *c) {
    const plx_quantize_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *scale = &c->in[1];
    bool quantize = c->op == PLX_OP_QUANTIZE;
    plx_status s;
    if (quantize) {
        if ((s = check_dtype(c, 0, DT_FLOAT, NULL)) || (s = check_same_dtype(c, 1, 0))) {
            return s;
        }
    } else if ((s = check_dtype(c, 0, DT(INT8) | DT(UINT8) | DT(INT32), NULL)) ||
               (s = check_dtype(c, 1, DT_FLOAT, NULL))) {
        return s;
    }
    /* Per tensor: a scalar scale (or one element, as ONNX Runtime accepts);
     * per axis: 1-D along `axis`, which is only checked then, as in ONNX. */
    if (scale->rank > 1) {
        return fail(c, "scale %s must be a scalar or 1-D", SHP(scale));
    }
    if (scale->rank == 1 && scale->dims[0] != 1) {
        uint32_t axis = 0;
        if ((s = check_axis(c, "axis", d->axis, 0, false, &axis))) {
            return s;
        }
        if (scale->dims[0] != x->dims[axis]) {
            return fail(c, "scale %s must have one entry per index of axis %" PRIu32 " of X %s",
                        SHP(scale), axis, SHP(x));
        }
    }
    plx_dtype out;
    if (c->n_in > 2) {
        const plx_tensor_info *zp = &c->in[2];
        if (quantize && (s = check_dtype(c, 2, DT(INT8) | DT(UINT8), NULL))) {
            return s;
        }
        if (!quantize && (s = check_same_dtype(c, 2, 0))) {
            return s;
        }
        bool same = zp->rank == scale->rank && (zp->rank == 0 || zp->dims[0] == scale->dims[0]);
        if (!same) {
            return fail(c, "zero_point %s must have the shape of scale %s", SHP(zp), SHP(scale));
        }
    }
    if (quantize) {
        if (d->output_dtype != PLX_DTYPE_INT8 && d->output_dtype != PLX_DTYPE_UINT8) {
            return fail(c, "output_dtype %s must be int8 or uint8", plx_dtype_name(d->output_dtype));
        }
        if (c->n_in > 2 && c->in[2].dtype != d->output_dtype) {
            return fail(c, "output_dtype %s differs from zero_point's dtype %s",
                        plx_dtype_name(d->output_dtype), plx_dtype_name(c->in[2].dtype));
        }
        out = d->output_dtype;
    } else {
        if (d->output_dtype != scale->dtype) {
            return fail(c, "output_dtype %s differs from scale's dtype %s",
                        plx_dtype_name(d->output_dtype), plx_dtype_name(scale->dtype));
        }
        out = scale->dtype;
    }
    same_as_input(c, out);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Recurrent layers                                                         */

/* Input i must be exactly `dims` (rank r), whose meaning `what` spells. */
static plx_status check_exact_shape(const layer_ctx *c, uint32_t i, const int64_t *dims, uint32_t r,
                                    const char *what) {
    const plx_tensor_info *t = &c->in[i];
    bool same = t->rank == r;
    for (uint32_t k = 0; same && k < r; k++) {
        same = t->dims[k] == dims[k];
    }
    if (same) {
        return NULL;
    }
    plx_tensor_info want;
    info_init(&want, t->dtype, 0);
    info_set_dims(&want, dims, r);
    return fail(c, "%s %s must be %s (%s)", ROLE(c, i), SHP(t), SHP(&want), what);
}

/* activations[dir][k] of a recurrent cell: one of the functions ONNX
 * lists for RNN, LSTM and GRU, with finite parameters. */
static plx_status check_rnn_activation(const layer_ctx *c, const plx_rnn_activation *a,
                                       uint32_t dir, uint32_t k) {
    switch (a->func) {
    case PLX_ACT_RELU:
    case PLX_ACT_TANH:
    case PLX_ACT_SIGMOID:
    case PLX_ACT_AFFINE:
    case PLX_ACT_LEAKY_RELU:
    case PLX_ACT_THRESHOLDED_RELU:
    case PLX_ACT_SCALED_TANH:
    case PLX_ACT_HARD_SIGMOID:
    case PLX_ACT_ELU:
    case PLX_ACT_SOFTSIGN:
    case PLX_ACT_SOFTPLUS: break;
    default:
        return fail(c, "activations[%" PRIu32 "][%" PRIu32 "].func %d is not a recurrent activation "
                    "(relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, "
                    "hard_sigmoid, elu, softsign or softplus)", dir, k, (int)a->func);
    }
    if (!isfinite(a->alpha) || !isfinite(a->beta)) {
        return fail(c, "activations[%" PRIu32 "][%" PRIu32 "] has alpha %g and beta %g; both must "
                    "be finite", dir, k, (double)a->alpha, (double)a->beta);
    }
    return NULL;
}

/* lstm and gru (ONNX, layout 0): X [seq_length, batch, input_size] and the
 * weights of `gates` gates per direction; see plexus/ops.h. */
static plx_status infer_rnn(const layer_ctx *c) {
    bool lstm = c->op == PLX_OP_LSTM;
    const plx_lstm_desc *ld = c->desc;
    const plx_gru_desc *gd = c->desc;
    plx_rnn_direction direction = lstm ? ld->direction : gd->direction;
    int64_t h = lstm ? ld->hidden_size : gd->hidden_size;
    float clip = lstm ? ld->clip : gd->clip;
    int64_t gates = lstm ? 4 : 3;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((unsigned)direction > PLX_RNN_BIDIRECTIONAL) {
        return fail(c, "direction %d is not a plx_rnn_direction", (int)direction);
    }
    if (h < 1) {
        return fail(c, "hidden_size " I64 " must be >= 1", h);
    }
    if (!(clip >= 0.0f) || !isfinite(clip)) {
        return fail(c, "clip %g must be finite and >= 0 (0: no clipping)", (double)clip);
    }
    int64_t d = direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1, gh, gh2, ph;
    if (!mul_nonneg(h, 2 * gates, &gh2)) {
        return fail(c, "hidden_size " I64 " is too large", h);
    }
    gh = gh2 / 2;
    ph = 3 * h; /* <= gh */
    for (uint32_t dir = 0; dir < (uint32_t)d; dir++) {
        for (uint32_t k = 0; k < (lstm ? 3u : 2u); k++) {
            if ((s = check_rnn_activation(c, lstm ? &ld->activations[dir][k] : &gd->activations[dir][k],
                                          dir, k))) {
                return s;
            }
        }
    }
    if ((s = check_dtype(c, 0, DT(FLOAT32), NULL)) || (s = check_rank(c, 0, 3, 3)) ||
        (s = check_dtype(c, 4, DT(INT32), NULL))) {
        return s;
    }
    for (uint32_t i = 1; i < c->n_in; i++) {
        if (i != 4 && (s = check_same_dtype(c, i, 0))) {
            return s;
        }
    }
    int64_t seq = x->dims[0], batch = x->dims[1], in = x->dims[2];
    const int64_t w[3] = {d, gh, in}, r[3] = {d, gh, h}, b[2] = {d, gh2}, lens[1] = {batch};
    const int64_t state[3] = {d, batch, h}, p[2] = {d, ph};
    if ((s = check_exact_shape(c, 1, w, 3, lstm ? "[num_directions, 4*hidden_size, input_size]"
                                                : "[num_directions, 3*hidden_size, input_size]")) ||
        (s = check_exact_shape(c, 2, r, 3, lstm ? "[num_directions, 4*hidden_size, hidden_size]"
                                                : "[num_directions, 3*hidden_size, hidden_size]")) ||
        (s = check_exact_shape(c, 3, b, 2, lstm ? "[num_directions, 8*hidden_size]"
                                                : "[num_directions, 6*hidden_size]")) ||
        (s = check_exact_shape(c, 4, lens, 1, "[batch_size]")) ||
        (s = check_exact_shape(c, 5, state, 3, "[num_directions, batch_size, hidden_size]")) ||
        (lstm && (s = check_exact_shape(c, 6, state, 3, "[num_directions, batch_size, hidden_size]"))) ||
        (lstm && (s = check_exact_shape(c, 7, p, 2, "[num_directions, 3*hidden_size]")))) {
        return s;
    }
    /* Every output is checked before any is written. */
    const int64_t y[4] = {seq, d, batch, h};
    plx_tensor_info outs[3];
    info_init(&outs[0], x->dtype, 4);
    info_set_dims(&outs[0], y, 4);
    for (uint32_t i = 1; i < c->n_out; i++) {
        info_init(&outs[i], x->dtype, 3);
        info_set_dims(&outs[i], state, 3);
    }
    for (uint32_t i = 0; i < c->n_out; i++) {
        size_t bytes;
        if (!plx_tensor_info_byte_size(&outs[i], &bytes)) {
            return fail(c, "%s %s (%s) is too large: its byte size overflows size_t",
                        OUT_ROLE(c, i), SHP(&outs[i]), plx_dtype_name(outs[i].dtype));
        }
    }
    for (uint32_t i = 0; i < c->n_out; i++) {
        c->out[i] = outs[i];
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Entry point                                                              */

static plx_status check_arity(const layer_ctx *c, const char *what, uint32_t min, uint32_t max,
                              uint32_t got) {
    if (got >= min && got <= max) {
        return NULL;
    }
    if (max == UINT32_MAX) {
        return fail(c, "takes at least %" PRIu32 " %s%s, got %" PRIu32, min, what,
                    min == 1 ? "" : "s", got);
    }
    if (min == max) {
        return fail(c, "takes %" PRIu32 " %s%s, got %" PRIu32, min, what, min == 1 ? "" : "s", got);
    }
    return fail(c, "takes %" PRIu32 " to %" PRIu32 " %ss, got %" PRIu32, min, max, what, got);
}

plx_status plxi_infer_layer(const char *layer_name, plx_op op, const void *desc,
                            const plx_tensor_info *inputs, uint32_t input_count,
                            plx_tensor_info *outputs, uint32_t output_count) {
    layer_ctx ctx = {layer_name, op, desc, inputs, input_count, outputs, output_count};
    const layer_ctx *c = &ctx;
    uint32_t min_in, max_in, min_out, max_out;
    if (!plxi_op_arity(op, &min_in, &max_in, &min_out, &max_out)) {
        return fail(c, "unknown operator %d", (int)op);
    }
    plx_status s;
    if ((s = check_arity(c, "input", min_in, max_in, input_count)) ||
        (s = check_arity(c, "output", min_out, max_out, output_count))) {
        return s;
    }
    if ((input_count && !inputs) || (output_count && !outputs)) {
        return fail(c, "%s is NULL", input_count && !inputs ? "inputs" : "outputs");
    }
    size_t desc_size = plxi_op_desc_size(op);
    if (desc_size && !desc) {
        return fail(c, "descriptor is NULL");
    }
    if (desc_size && *(const uint32_t *)desc < desc_size) {
        return fail(c, "descriptor struct_size %" PRIu32 " is smaller than %zu",
                    *(const uint32_t *)desc, desc_size);
    }
    for (uint32_t i = 0; i < input_count; i++) {
        if ((s = check_info(c, &inputs[i], ROLE(c, i)))) {
            return s;
        }
    }
    /* Single-output ops write a temporary, so that a failure leaves the
     * caller's outputs untouched (input and constant only read theirs). */
    plx_tensor_info tmp;
    memset(&tmp, 0, sizeof tmp);
    bool use_tmp = output_count == 1 && op != PLX_OP_INPUT && op != PLX_OP_CONSTANT;
    if (use_tmp) {
        ctx.out = &tmp;
    }
    switch (op) {
    case PLX_OP_INPUT: s = infer_input(c); break;
    case PLX_OP_OUTPUT: s = NULL; break;
    case PLX_OP_CONSTANT: s = infer_constant(c); break;
    case PLX_OP_CONV: s = infer_conv(c); break;
    case PLX_OP_CONV_TRANSPOSE: s = infer_conv_transpose(c); break;
    case PLX_OP_FULLY_CONNECTED: s = infer_fully_connected(c); break;
    case PLX_OP_MATMUL: s = infer_matmul(c); break;
    case PLX_OP_GEMM: s = infer_gemm(c); break;
    case PLX_OP_POOL: s = infer_pool(c); break;
    case PLX_OP_GLOBAL_POOL: s = infer_global_pool(c); break;
    case PLX_OP_ACTIVATION: s = infer_activation(c); break;
    case PLX_OP_BINARY: s = infer_binary(c); break;
    case PLX_OP_UNARY: s = infer_unary(c); break;
    case PLX_OP_BATCH_NORM: s = infer_batch_norm(c); break;
    case PLX_OP_LAYER_NORM: s = infer_layer_norm(c); break;
    case PLX_OP_SOFTMAX: s = infer_softmax(c); break;
    case PLX_OP_REDUCE: s = infer_reduce(c); break;
    case PLX_OP_RESHAPE: s = infer_reshape(c); break;
    case PLX_OP_FLATTEN: s = infer_flatten(c); break;
    case PLX_OP_TRANSPOSE: s = infer_transpose(c); break;
    case PLX_OP_CONCAT: s = infer_concat(c); break;
    case PLX_OP_SPLIT: s = infer_split(c); break;
    case PLX_OP_SLICE: s = infer_slice(c); break;
    case PLX_OP_PAD: s = infer_pad(c); break;
    case PLX_OP_SQUEEZE: s = infer_squeeze(c); break;
    case PLX_OP_UNSQUEEZE: s = infer_unsqueeze(c); break;
    case PLX_OP_GATHER: s = infer_gather(c); break;
    case PLX_OP_EXPAND: s = infer_expand(c); break;
    case PLX_OP_WHERE: s = infer_where(c); break;
    case PLX_OP_CAST: s = infer_cast(c); break;
    case PLX_OP_RESIZE: s = infer_resize(c); break;
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH: s = infer_depth_space(c); break;
    case PLX_OP_QUANTIZE:
    case PLX_OP_DEQUANTIZE: s = infer_quantize(c); break;
    case PLX_OP_LSTM:
    case PLX_OP_GRU: s = infer_rnn(c); break;
    case PLX_OP_MEM_COPY:
    case PLX_OP_MEM_IMPORT: *ctx.out = inputs[0]; s = NULL; break;
    case PLX_OP_TILE: s = infer_tile(c); break;
    case PLX_OP_ARG_REDUCE: s = infer_arg_reduce(c); break;
    case PLX_OP_TOPK: s = infer_topk(c); break;
    case PLX_OP_INSTANCE_NORM: s = infer_instance_norm(c); break;
    case PLX_OP_PRECOMPILED:
        s = fail(c, "precompiled layers come from backends, which give their outputs");
        break;
    case PLX_OP_INVALID:
    default: s = fail(c, "unknown operator %d", (int)op); break;
    }
    if (s) {
        return s;
    }
    for (uint32_t i = 0; i < output_count && op != PLX_OP_INPUT && op != PLX_OP_CONSTANT; i++) {
        size_t bytes;
        const plx_tensor_info *o = &ctx.out[i];
        if (!plx_tensor_info_byte_size(o, &bytes)) {
            return fail(c, "%s %s (%s) is too large: its byte size overflows size_t",
                        OUT_ROLE(c, i), SHP(o), plx_dtype_name(o->dtype));
        }
    }
    if (use_tmp) {
        outputs[0] = tmp;
    }
    return NULL;
}
