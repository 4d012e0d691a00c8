/* The reference kernels of trilu, one_hot, hardmax and cum_sum (ONNX
 * semantics; plexus/ops.h gives each contract). Each walks its tensors
 * row by row or with a fixed stride, with no index arithmetic per element:
 * trilu copies the kept run of every matrix row and zeroes the rest (by
 * element size, any dtype), one_hot fills Y with `off` and then writes
 * `on` once per index, hardmax finds the first maximum of each line and
 * cum_sum adds whole rows of `inner` contiguous elements (the vectoriser's
 * loop; float64 in double, the integers as unsigned of their width),
 * float16 and bfloat16 through a float32 accumulator row in the
 * workspace. */
#include "kernels_compute.h"

#include <math.h>
#include <string.h>

#include <plexus/geometry.h>

/* ---- shared -------------------------------------------------------------- */

/* Refuses a layer whose output's dtype is not `dt`. */
static const char *require_output_dtype(const plx_layer_view *l, const char *op, plx_dtype dt,
                                        char *buf, size_t size) {
    if (l->outputs[0].dtype != dt) {
        return plxk_refuse(buf, size, "%s: the output is %s, expected %s", op,
                           plx_dtype_name(l->outputs[0].dtype), plx_dtype_name(dt));
    }
    return NULL;
}

/* outer x len x inner around axis `axis_in` of input 0 (negative: from the
 * end). */
static const char *axis_split(const plx_layer_view *l, const char *op, int64_t axis_in,
                              int64_t *outer, int64_t *len, int64_t *inner, char *buf,
                              size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if (!plx_axis_normalize(axis_in, x->rank, false, &axis)) {
        return plxk_refuse(buf, size, "%s: axis %lld is out of range for rank %u", op,
                           (long long)axis_in, x->rank);
    }
    *outer = plxk_dim_product(x, 0, axis);
    *len = x->dims[axis];
    *inner = plxk_dim_product(x, axis + 1, x->rank);
    return NULL;
}

/* Y has X's dtype and shape. */
static const char *require_same_as_input(const plx_layer_view *l, const char *op, char *buf,
                                         size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    const char *why = require_output_dtype(l, op, x->dtype, buf, size);
    return why ? why : plxk_require_output_shape(l, op, x->rank, x->dims, buf, size);
}

/* ---- trilu --------------------------------------------------------------- */

typedef struct trilu_geom {
    int64_t batch, rows, cols;
    size_t es;
} trilu_geom;

static const char *trilu_prepare(const plx_layer_view *l, trilu_geom *g, char *buf,
                                 size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2) {
        return plxk_refuse(buf, size, "trilu: X has rank %u, expected 2 or more",
                           x->rank);
    }
    const char *why = require_same_as_input(l, "trilu", buf, size);
    if (why) {
        return why;
    }
    g->batch = plxk_dim_product(x, 0, x->rank - 2);
    g->rows = x->dims[x->rank - 2];
    g->cols = x->dims[x->rank - 1];
    g->es = plx_dtype_size(x->dtype);
    return NULL;
}

const char *plxk_check_trilu(const plx_layer_view *layer, char *buf, size_t size) {
    trilu_geom g = {0};
    return trilu_prepare(layer, &g, buf, size);
}

/* Row i of every matrix keeps columns [lo, hi): j >= i + k (upper) or
 * j <= i + k (lower); the rest is zero, which is all-zero bytes in every
 * dtype. */
bool plxk_run_trilu(const plxk_kernel_args *args) {
    char why[256];
    trilu_geom g = {0};
    if (trilu_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_trilu_desc *d = args->layer->desc;
    /* past the matrix every k keeps all or nothing: clamping it keeps
     * i + k from overflowing */
    int64_t k = plxk_clamp_i64(d->k, -g.rows - 1, g.cols + 1);
    const unsigned char *x = args->inputs[0];
    unsigned char *y = args->outputs[0];
    size_t row_bytes = (size_t)g.cols * g.es;
    for (int64_t b = 0; b < g.batch; b++) {
        for (int64_t i = 0; i < g.rows; i++) {
            int64_t lo = d->upper ? plxk_clamp_i64(i + k, 0, g.cols) : 0;
            int64_t hi = d->upper ? g.cols : plxk_clamp_i64(i + k + 1, 0, g.cols);
            memset(y, 0, (size_t)lo * g.es);
            memcpy(y + (size_t)lo * g.es, x + (size_t)lo * g.es, (size_t)(hi - lo) * g.es);
            memset(y + (size_t)hi * g.es, 0, (size_t)(g.cols - hi) * g.es);
            x += row_bytes;
            y += row_bytes;
        }
    }
    return true;
}

/* ---- one_hot ------------------------------------------------------------- */

typedef struct one_hot_geom {
    int64_t outer, inner, depth;
    size_t es;
} one_hot_geom;

static const char *one_hot_prepare(const plx_layer_view *l, one_hot_geom *g, char *buf,
                                   size_t size) {
    const plx_one_hot_desc *d = l->desc;
    const plx_tensor_info *ind = &l->inputs[0], *vals = &l->inputs[1];
    switch (ind->dtype) {
    case PLX_DTYPE_FLOAT32:
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_FLOAT64:
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_INT16:
    case PLX_DTYPE_UINT16:
    case PLX_DTYPE_INT32:
    case PLX_DTYPE_UINT32:
    case PLX_DTYPE_INT64:
    case PLX_DTYPE_UINT64: break;
    default:
        return plxk_refuse(buf, size, "one_hot: indices of dtype %s are not supported",
                           plx_dtype_name(ind->dtype));
    }
    if (vals->rank != 1 || vals->dims[0] != 2) {
        return plxk_refuse(buf, size, "one_hot: values must have 2 elements");
    }
    if (d->depth < 1 || ind->rank >= PLX_MAX_RANK) {
        return plxk_refuse(buf, size, "one_hot: depth %lld or indices' rank %u is out "
                           "of range", (long long)d->depth, ind->rank);
    }
    uint32_t axis = 0;
    if (!plx_axis_normalize(d->axis, ind->rank + 1, false, &axis)) {
        return plxk_refuse(buf, size, "one_hot: axis %d is out of range for rank %u",
                           (int)d->axis, ind->rank + 1);
    }
    const char *why = require_output_dtype(l, "one_hot", vals->dtype, buf, size);
    if (why) {
        return why;
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0, k = 0; i <= ind->rank; i++) {
        dims[i] = i == axis ? d->depth : ind->dims[k++];
    }
    if ((why = plxk_require_output_shape(l, "one_hot", ind->rank + 1, dims, buf, size))) {
        return why;
    }
    g->outer = plxk_dim_product(ind, 0, axis);
    g->inner = plxk_dim_product(ind, axis, ind->rank);
    g->depth = d->depth;
    g->es = plx_dtype_size(vals->dtype);
    return NULL;
}

const char *plxk_check_one_hot(const plx_layer_view *layer, char *buf, size_t size) {
    one_hot_geom g = {0};
    return one_hot_prepare(layer, &g, buf, size);
}

/* Index i of indices as a position in [0, depth), or -1 when it is out of
 * range: floats truncated toward zero (NaN and values past any depth are
 * out of range), negatives counted from the end. */
static inline int64_t one_hot_position(plx_dtype dt, const void *p, int64_t i, int64_t depth) {
    int64_t v;
    double f;
    switch (dt) {
    case PLX_DTYPE_INT8: v = ((const int8_t *)p)[i]; break;
    case PLX_DTYPE_UINT8: v = ((const uint8_t *)p)[i]; break;
    case PLX_DTYPE_INT16: v = ((const int16_t *)p)[i]; break;
    case PLX_DTYPE_UINT16: v = ((const uint16_t *)p)[i]; break;
    case PLX_DTYPE_INT32: v = ((const int32_t *)p)[i]; break;
    case PLX_DTYPE_UINT32: v = ((const uint32_t *)p)[i]; break;
    case PLX_DTYPE_INT64: v = ((const int64_t *)p)[i]; break;
    case PLX_DTYPE_UINT64: {
        uint64_t u = ((const uint64_t *)p)[i];
        return u < (uint64_t)depth ? (int64_t)u : -1;
    }
    default:
        f = dt == PLX_DTYPE_FLOAT32    ? ((const float *)p)[i]
            : dt == PLX_DTYPE_FLOAT64  ? ((const double *)p)[i]
            : dt == PLX_DTYPE_FLOAT16 ? plx_float16_to_float32(((const uint16_t *)p)[i])
                                       : plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
        /* |f| < 2^62 (NaN fails too): the truncation is defined */
        if (!(fabs(f) < 4.611686e18)) {
            return -1;
        }
        v = (int64_t)f;
        break;
    }
    if (v < 0) {
        v = v >= -depth ? v + depth : -1;
    }
    return v < depth ? v : -1;
}

/* Fills n elements of es bytes with the element at `value`. */
static void fill_elements(void *y, const void *value, size_t es, int64_t n) {
    switch (es) {
    case 1: memset(y, *(const unsigned char *)value, (size_t)n); break;
    case 2: {
        uint16_t v, *p = y;
        memcpy(&v, value, 2);
        for (int64_t i = 0; i < n; i++) {
            p[i] = v;
        }
        break;
    }
    case 4: {
        uint32_t v, *p = y;
        memcpy(&v, value, 4);
        for (int64_t i = 0; i < n; i++) {
            p[i] = v;
        }
        break;
    }
    default: {
        uint64_t v, *p = y;
        memcpy(&v, value, 8);
        for (int64_t i = 0; i < n; i++) {
            p[i] = v;
        }
        break;
    }
    }
}

/* Y as [outer, depth, inner]: all `off`, then `on` at each index's
 * position; an index out of range leaves its line `off` (ONNX: not an
 * error). */
bool plxk_run_one_hot(const plxk_kernel_args *args) {
    char why[256];
    one_hot_geom g = {0};
    if (one_hot_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *ind = args->inputs[0];
    const unsigned char *vals = args->inputs[1];
    unsigned char *y = args->outputs[0];
    size_t es = g.es;
    fill_elements(y, vals, es, g.outer * g.depth * g.inner);
    const unsigned char *on = vals + es;
    for (int64_t o = 0; o < g.outer; o++) {
        const int64_t in_base = o * g.inner;
        unsigned char *yo = y + (size_t)(o * g.depth * g.inner) * es;
        for (int64_t in = 0; in < g.inner; in++) {
            int64_t pos = one_hot_position(dt, ind, in_base + in, g.depth);
            if (pos >= 0) {
                memcpy(yo + (size_t)(pos * g.inner + in) * es, on, es);
            }
        }
    }
    return true;
}

/* ---- hardmax ------------------------------------------------------------- */

typedef struct line_geom {
    int64_t outer, len, inner;
} line_geom;

static bool is_float_dtype(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16 ||
           dt == PLX_DTYPE_FLOAT64;
}

static const char *hardmax_prepare(const plx_layer_view *l, line_geom *g, char *buf,
                                   size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    if (!is_float_dtype(x->dtype)) {
        return plxk_refuse(buf, size, "hardmax: dtype %s is not supported",
                           plx_dtype_name(x->dtype));
    }
    const plx_axis_desc *d = l->desc;
    const char *why = axis_split(l, "hardmax", d->axis, &g->outer, &g->len, &g->inner, buf, size);
    return why ? why : require_same_as_input(l, "hardmax", buf, size);
}

const char *plxk_check_hardmax(const plx_layer_view *layer, char *buf, size_t size) {
    line_geom g = {0};
    return hardmax_prepare(layer, &g, buf, size);
}

/* The position of the first maximum of the n elements at p, `stride`
 * apart; the first NaN wins over every number (numpy's argmax). */
#define FIRST_MAX(type, load)                                                      \
    static int64_t first_max_##type(const type *p, int64_t n, int64_t stride) {    \
        int64_t best = 0;                                                          \
        double bv = load(p[0]);                                                    \
        for (int64_t j = 1; j < n && !isnan(bv); j++) {                            \
            p += stride;                                                           \
            double v = load(*p);                                                   \
            if (v > bv || isnan(v)) {                                              \
                best = j;                                                          \
                bv = v;                                                            \
            }                                                                      \
        }                                                                          \
        return best;                                                               \
    }
#define LOAD_AS_IS(v) (v)
typedef uint16_t f16_bits;
typedef uint16_t bf16_bits;
FIRST_MAX(float, LOAD_AS_IS)
FIRST_MAX(double, LOAD_AS_IS)
FIRST_MAX(f16_bits, plx_float16_to_float32)
FIRST_MAX(bf16_bits, plx_bfloat16_to_float32)
#undef FIRST_MAX
#undef LOAD_AS_IS

/* Y is zero (all-zero bytes) but for a 1 at each line's first maximum. */
bool plxk_run_hardmax(const plxk_kernel_args *args) {
    char why[256];
    line_geom g = {0};
    if (hardmax_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plx_dtype dt = args->layer->inputs[0].dtype;
    size_t es = plx_dtype_size(dt);
    const unsigned char *x = args->inputs[0];
    unsigned char *y = args->outputs[0];
    memset(y, 0, (size_t)(g.outer * g.len * g.inner) * es);
    if (g.len == 0) {
        return true;
    }
    uint8_t one[8];
    plx_dtype_bytes_from_double(1.0, dt, one);
    for (int64_t o = 0; o < g.outer; o++) {
        int64_t base = o * g.len * g.inner;
        for (int64_t in = 0; in < g.inner; in++) {
            const unsigned char *p = x + (size_t)(base + in) * es;
            int64_t best = dt == PLX_DTYPE_FLOAT32
                               ? first_max_float((const float *)(const void *)p, g.len, g.inner)
                           : dt == PLX_DTYPE_FLOAT64
                               ? first_max_double((const double *)(const void *)p, g.len, g.inner)
                           : dt == PLX_DTYPE_FLOAT16
                               ? first_max_f16_bits((const uint16_t *)(const void *)p, g.len,
                                                    g.inner)
                               : first_max_bf16_bits((const uint16_t *)(const void *)p, g.len,
                                                     g.inner);
            memcpy(y + (size_t)(base + best * g.inner + in) * es, one, es);
        }
    }
    return true;
}

/* ---- cum_sum ------------------------------------------------------------- */

static const char *cum_sum_prepare(const plx_layer_view *l, line_geom *g, char *buf,
                                   size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    if (!is_float_dtype(x->dtype) && !plxk_is_int_dtype(x->dtype) &&
        x->dtype != PLX_DTYPE_UINT32 && x->dtype != PLX_DTYPE_UINT64) {
        return plxk_refuse(buf, size, "cum_sum: dtype %s is not supported",
                           plx_dtype_name(x->dtype));
    }
    const plx_cum_sum_desc *d = l->desc;
    const char *why = axis_split(l, "cum_sum", d->axis, &g->outer, &g->len, &g->inner, buf, size);
    return why ? why : require_same_as_input(l, "cum_sum", buf, size);
}

const char *plxk_check_cum_sum(const plx_layer_view *layer, char *buf, size_t size) {
    line_geom g = {0};
    return cum_sum_prepare(layer, &g, buf, size);
}

/* float16 and bfloat16 sum in a float32 row of `inner` elements. */
size_t plxk_workspace_cum_sum(const plx_layer_view *layer, const plxk_compute *compute) {
    (void)compute;
    line_geom g = {0};
    plx_dtype dt = layer->inputs[0].dtype;
    if (cum_sum_prepare(layer, &g, NULL, 0) ||
        (dt != PLX_DTYPE_FLOAT16 && dt != PLX_DTYPE_BFLOAT16)) {
        return 0;
    }
    if ((uint64_t)g.inner > SIZE_MAX / sizeof(float) - PLXK_WS_ALIGN) {
        return SIZE_MAX;
    }
    return plxk_round_ws((size_t)g.inner * sizeof(float));
}

/* Each line of X walked in the sum's order (backwards when reverse), one
 * row of `inner` elements per step, `step` elements apart: the first row
 * is X's (0 when exclusive), each next row the previous one plus X's row
 * at the same step (the previous step's when exclusive). Integers add as
 * unsigned, which wraps as two's complement. Offsets rather than moving
 * pointers: a reverse walk never forms one before the buffer. */
#define CUM_SUM_ROWS(type)                                                                 \
    static void cum_sum_##type(const type *x, type *y, const line_geom *g, bool exclusive, \
                               bool reverse) {                                             \
        const int64_t inner = g->inner, step = reverse ? -inner : inner;                  \
        for (int64_t o = 0; o < g->outer; o++) {                                           \
            int64_t prev = o * g->len * inner + (reverse ? (g->len - 1) * inner : 0);      \
            for (int64_t i = 0; i < inner; i++) {                                          \
                y[prev + i] = exclusive ? 0 : x[prev + i];                                 \
            }                                                                              \
            for (int64_t t = 1; t < g->len; t++) {                                         \
                const int64_t cur = prev + step;                                           \
                const type *a = x + (exclusive ? prev : cur);                              \
                const type *yp = y + prev;                                                 \
                type *yn = y + cur;                                                        \
                for (int64_t i = 0; i < inner; i++) {                                      \
                    yn[i] = yp[i] + a[i];                                                  \
                }                                                                          \
                prev = cur;                                                                \
            }                                                                              \
        }                                                                                  \
    }
CUM_SUM_ROWS(float)
CUM_SUM_ROWS(double)
CUM_SUM_ROWS(uint32_t)
CUM_SUM_ROWS(uint64_t)
#undef CUM_SUM_ROWS

/* The same walk for float16 and bfloat16 bits, the running row in acc
 * (float32), each step rounded once into Y. */
static void cum_sum_half(const uint16_t *x, uint16_t *y, const line_geom *g, bool exclusive,
                         bool reverse, bool bf16, float *restrict acc) {
    const int64_t inner = g->inner, step = reverse ? -inner : inner;
    for (int64_t o = 0; o < g->outer; o++) {
        int64_t at = o * g->len * inner + (reverse ? (g->len - 1) * inner : 0);
        for (int64_t i = 0; i < inner; i++) {
            acc[i] = 0.0f;
        }
        for (int64_t t = 0; t < g->len; t++, at += step) {
            const uint16_t *xp = x + at;
            uint16_t *yp = y + at;
            if (exclusive) {
                for (int64_t i = 0; i < inner; i++) {
                    yp[i] = bf16 ? plx_float32_to_bfloat16(acc[i]) : plx_float32_to_float16(acc[i]);
                    acc[i] += bf16 ? plx_bfloat16_to_float32(xp[i]) : plx_float16_to_float32(xp[i]);
                }
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    acc[i] += bf16 ? plx_bfloat16_to_float32(xp[i]) : plx_float16_to_float32(xp[i]);
                    yp[i] = bf16 ? plx_float32_to_bfloat16(acc[i]) : plx_float32_to_float16(acc[i]);
                }
            }
        }
    }
}

bool plxk_run_cum_sum(const plxk_kernel_args *args) {
    char why[256];
    line_geom g = {0};
    if (cum_sum_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    if (g.len == 0 || g.outer * g.inner == 0) {
        return true;
    }
    const plx_cum_sum_desc *d = args->layer->desc;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    switch (args->layer->inputs[0].dtype) {
    case PLX_DTYPE_FLOAT32: cum_sum_float(x, y, &g, d->exclusive, d->reverse); break;
    case PLX_DTYPE_FLOAT64: cum_sum_double(x, y, &g, d->exclusive, d->reverse); break;
    case PLX_DTYPE_INT32:
    case PLX_DTYPE_UINT32: cum_sum_uint32_t(x, y, &g, d->exclusive, d->reverse); break;
    case PLX_DTYPE_INT64:
    case PLX_DTYPE_UINT64: cum_sum_uint64_t(x, y, &g, d->exclusive, d->reverse); break;
    default: {
        size_t need = (size_t)g.inner * sizeof(float);
        if (!args->workspace || args->workspace_size < need) {
            return plxk_fail(args, "cum_sum: a workspace of %zu bytes is needed, got %zu",
                             need, args->workspace ? args->workspace_size : (size_t)0);
        }
        cum_sum_half(x, y, &g, d->exclusive, d->reverse,
                     args->layer->inputs[0].dtype == PLX_DTYPE_BFLOAT16, args->workspace);
        break;
    }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(TRILU, trilu);
PLXK_ROW(ONE_HOT, one_hot);
PLXK_ROW(HARDMAX, hardmax);
PLXK_ROW_WS(CUM_SUM, cum_sum);
