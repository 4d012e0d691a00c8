/* The checking helpers of shape inference (infer_internal.h): messages,
 * overflow-checked arithmetic, broadcasting and window sizes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/geometry.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */


/* ------------------------------------------------------------------------ */
/* Messages                                                                 */

plx_status plxi_fail(const layer_ctx *c, const char *fmt, ...) {
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
const char *plxi_input_role(const layer_ctx *c, uint32_t i, char *buf, size_t size) {
    const plxi_op_row *row = plxi_op_lookup(c->op);
    if (row && i < row->input_count) {
        return row->inputs[i];
    }
    snprintf(buf, size, "input %" PRIu32, i);
    return buf;
}

const char *plxi_output_role(const layer_ctx *c, uint32_t i, char *buf, size_t size) {
    if (c->op == PLX_OP_SPLIT || c->n_out > 1) {
        snprintf(buf, size, "output %" PRIu32, i);
        return buf;
    }
    return c->op == PLX_OP_WHERE ? "Z" : "Y";
}

/* The dtypes in the order messages list them: the floats (the float8s
 * last), then the integers by width (signed first), then bool. The dtypes
 * before ABI 1.3 keep their enum order, which the messages have always
 * had. */
static const plx_dtype dtype_list_order[] = {
    PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16, PLX_DTYPE_FLOAT64,
    PLX_DTYPE_FLOAT8E4M3FN, PLX_DTYPE_FLOAT8E4M3FNUZ, PLX_DTYPE_FLOAT8E5M2,
    PLX_DTYPE_FLOAT8E5M2FNUZ,
    PLX_DTYPE_INT4,    PLX_DTYPE_UINT4,
    PLX_DTYPE_INT8,    PLX_DTYPE_UINT8,   PLX_DTYPE_INT16,    PLX_DTYPE_UINT16,
    PLX_DTYPE_INT32,   PLX_DTYPE_UINT32,  PLX_DTYPE_INT64,    PLX_DTYPE_UINT64,
    PLX_DTYPE_BOOL,
};
_Static_assert(sizeof dtype_list_order / sizeof dtype_list_order[0] == PLX_DTYPE_COUNT - 1,
               "every dtype but PLX_DTYPE_INVALID has its place in dtype_list_order");

/* "float32, float16 or bfloat16" */
const char *plxi_dtype_list(unsigned mask, char *buf, size_t size) {
    size_t len = 0;
    unsigned left = 0;
    for (int d = 1; d < PLX_DTYPE_COUNT; d++) {
        left += (mask >> d) & 1u;
    }
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof dtype_list_order / sizeof dtype_list_order[0] && len < size;
         k++) {
        plx_dtype d = dtype_list_order[k];
        if (!((mask >> d) & 1u)) {
            continue;
        }
        left--;
        int n = snprintf(buf + len, size - len, "%s%s", plx_dtype_name(d),
                         left == 0 ? "" : left == 1 ? " or " : ", ");
        if (n < 0) {
            break;
        }
        len += (size_t)n;
    }
    return buf;
}

bool plxi_dtype_in(plx_dtype d, unsigned mask) {
    return (unsigned)d < PLX_DTYPE_COUNT && ((mask >> d) & 1u);
}

/* ------------------------------------------------------------------------ */
/* Arithmetic without wrapping                                              */

bool plxi_add_i64(int64_t a, int64_t b, int64_t *r) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
        return false;
    }
    *r = a + b;
    return true;
}

/* a, b >= 0 */
bool plxi_mul_nonneg(int64_t a, int64_t b, int64_t *r) {
    if (a != 0 && b > INT64_MAX / a) {
        return false;
    }
    *r = a * b;
    return true;
}

/* Product of dims[from..to-1] (all >= 0). */
bool plxi_dims_product(const int64_t *dims, uint32_t from, uint32_t to, int64_t *r) {
    int64_t p = 1;
    for (uint32_t i = from; i < to; i++) {
        if (!plxi_mul_nonneg(p, dims[i], &p)) {
            return false;
        }
    }
    *r = p;
    return true;
}

/* Numpy broadcasting of two shapes (plexus/geometry.h's); false when
 * incompatible. */
bool plxi_broadcast(const int64_t *a, uint32_t ra, const int64_t *b, uint32_t rb,
                    int64_t *out, uint32_t *out_rank) {
    return plx_broadcast_dims(a, ra, b, rb, out, out_rank, NULL) == PLX_GEOM_OK;
}

/* True when `from` broadcasts to `to` without changing `to`. */
bool plxi_broadcasts_to(const int64_t *from, uint32_t rf, const int64_t *to, uint32_t rt) {
    return plx_broadcast_strides(from, rf, to, rt, NULL, NULL) == PLX_GEOM_OK;
}

/* ------------------------------------------------------------------------ */
/* Common checks                                                            */

void plxi_info_init(plx_tensor_info *o, plx_dtype dtype, uint32_t rank) {
    memset(o, 0, sizeof *o);
    o->dtype = dtype;
    o->rank = rank;
}

void plxi_info_set_dims(plx_tensor_info *o, const int64_t *dims, uint32_t rank) {
    o->rank = rank;
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        o->dims[i] = i < rank ? dims[i] : 0;
    }
}

/* The quantization rule at the top of shape_infer.c. */
plx_quant_params plxi_moved_quant(const plx_tensor_info *in) {
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
plx_status plxi_check_info(const layer_ctx *c, const plx_tensor_info *t, const char *role) {
    if (plx_dtype_size(t->dtype) == 0) {
        return plxi_fail(c, "%s has an invalid dtype %d", role, (int)t->dtype);
    }
    if (t->rank > PLX_MAX_RANK) {
        return plxi_fail(c, "%s has rank %" PRIu32 ", more than %d", role, t->rank, PLX_MAX_RANK);
    }
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) {
            return plxi_fail(c, "%s %s has a negative dimension", role, SHP(t));
        }
    }
    size_t bytes;
    if (!plx_tensor_info_byte_size(t, &bytes)) {
        return plxi_fail(c, "%s %s (%s) is too large: its byte size overflows size_t", role, SHP(t),
                         plx_dtype_name(t->dtype));
    }
    const plx_quant_params *q = &t->quant;
    switch (q->kind) {
    case PLX_QUANT_NONE:
        break;
    case PLX_QUANT_PER_TENSOR:
        if (!(q->scale > 0.0f) || !isfinite(q->scale)) {
            return plxi_fail(c, "%s has quantization scale %g; it must be finite and > 0", role,
                             (double)q->scale);
        }
        if ((t->dtype == PLX_DTYPE_INT8 && (q->zero_point < -128 || q->zero_point > 127)) ||
            (t->dtype == PLX_DTYPE_UINT8 && (q->zero_point < 0 || q->zero_point > 255))) {
            return plxi_fail(c, "%s has zero point %" PRId32 ", out of range for %s", role,
                             q->zero_point, plx_dtype_name(t->dtype));
        }
        break;
    case PLX_QUANT_PER_AXIS:
        if (q->axis < 0 || (uint32_t)q->axis >= t->rank) {
            return plxi_fail(c, "%s %s has per-axis quantization along axis %" PRId32
                             ", out of range", role, SHP(t), q->axis);
        }
        if (!q->scales) {
            return plxi_fail(c, "%s has per-axis quantization without scales", role);
        }
        break;
    default:
        return plxi_fail(c, "%s has an invalid quantization kind %d", role, (int)q->kind);
    }
    return NULL;
}

plx_status plxi_check_dtype(const layer_ctx *c, uint32_t i, unsigned mask, const char *what) {
    const plx_tensor_info *t = &c->in[i];
    if (plxi_dtype_in(t->dtype, mask)) {
        return NULL;
    }
    return plxi_fail(c, "%s has dtype %s, expected %s%s%s", ROLE(c, i), plx_dtype_name(t->dtype),
                     DTYPES(mask), what ? " for " : "", what ? what : "");
}

/* Input j must have input i's dtype. */
plx_status plxi_check_same_dtype(const layer_ctx *c, uint32_t j, uint32_t i) {
    if (c->in[j].dtype == c->in[i].dtype) {
        return NULL;
    }
    return plxi_fail(c, "%s has dtype %s but %s has %s; they must match", ROLE(c, j),
                     plx_dtype_name(c->in[j].dtype), ROLE(c, i), plx_dtype_name(c->in[i].dtype));
}

plx_status plxi_check_rank(const layer_ctx *c, uint32_t i, uint32_t min, uint32_t max) {
    const plx_tensor_info *t = &c->in[i];
    if (t->rank >= min && t->rank <= max) {
        return NULL;
    }
    if (min == max) {
        return plxi_fail(c, "%s %s must have rank %" PRIu32, ROLE(c, i), SHP(t), min);
    }
    if (max >= PLX_MAX_RANK) {
        return plxi_fail(c, "%s %s must have rank %" PRIu32 " or more", ROLE(c, i), SHP(t), min);
    }
    return plxi_fail(c, "%s %s must have rank %" PRIu32 " to %" PRIu32, ROLE(c, i), SHP(t), min,
                     max);
}

/* Fields indexed by spatial dim: each of the first `n` must be >= min. */
plx_status plxi_check_min(const layer_ctx *c, const char *field, const int64_t *v, uint32_t n,
                          int64_t min) {
    for (uint32_t i = 0; i < n; i++) {
        if (v[i] < min) {
            return plxi_fail(c, "%s[%" PRIu32 "] = " I64 " must be >= " I64, field, i, v[i], min);
        }
    }
    return NULL;
}

plx_status plxi_check_axis(const layer_ctx *c, const char *field, int64_t axis, uint32_t i,
                           bool inclusive, uint32_t *out) {
    const plx_tensor_info *t = &c->in[i];
    if (plx_axis_normalize(axis, t->rank, inclusive, out)) {
        return NULL;
    }
    return plxi_fail(c, "%s " I64 " is out of range [-%" PRIu32 ", %" PRIu32 "%s for %s %s", field,
                     axis,
                     t->rank, t->rank, inclusive ? "]" : ")", ROLE(c, i), SHP(t));
}

/* Dtype and rank of N, C and 1 to 3 spatial dims. */
plx_status plxi_check_spatial_input(const layer_ctx *c, unsigned dtypes, const char *what,
                                    uint32_t *out_spatial) {
    plx_status s = plxi_check_dtype(c, 0, dtypes, what);
    if (s) {
        return s;
    }
    const plx_tensor_info *x = &c->in[0];
    if (x->rank < 3 || x->rank > 2 + PLX_MAX_SPATIAL) {
        return plxi_fail(c, "X %s must have rank 3 to 5 (N, C and 1 to 3 spatial dims)", SHP(x));
    }
    *out_spatial = x->rank - 2;
    return NULL;
}

plx_status plxi_check_auto_pad(const layer_ctx *c, plx_auto_pad ap) {
    if ((unsigned)ap > PLX_AUTO_PAD_VALID) {
        return plxi_fail(c, "auto_pad %d is not a plx_auto_pad", (int)ap);
    }
    return NULL;
}

/* Output size of a sliding window along spatial dim i (conv, pool). */
plx_status plxi_window_out(const layer_ctx *c, uint32_t i, int64_t in, int64_t k, int64_t s,
                           int64_t d, int64_t pb, int64_t pe, plx_auto_pad ap, bool ceil_mode,
                           int64_t *out) {
    int64_t ek;
    if (!plxi_mul_nonneg(k - 1, d, &ek) || !plxi_add_i64(ek, 1, &ek)) {
        return plxi_fail(c, "the dilated kernel of spatial dim %" PRIu32 " overflows (kernel " I64
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
            return plxi_fail(c, "X spatial dim %" PRIu32 " has size " I64
                             ", smaller than the dilated kernel " I64 " (auto_pad VALID)", i, in, ek);
        }
        *out = (in - ek) / s + 1;
        return NULL;
    }
    int64_t padded;
    if (!plxi_add_i64(in, pb, &padded) || !plxi_add_i64(padded, pe, &padded)) {
        return plxi_fail(c, "padded size of spatial dim %" PRIu32 " overflows", i);
    }
    if (padded < ek) {
        return plxi_fail(c, "X spatial dim %" PRIu32 " has size " I64 " (" I64
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

void plxi_same_as_input(const layer_ctx *c, plx_dtype dtype) {
    plxi_info_init(c->out, dtype, c->in[0].rank);
    plxi_info_set_dims(c->out, c->in[0].dims, c->in[0].rank);
}
