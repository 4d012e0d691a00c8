/* The reductions: reduce (every plx_reduce_func on float32 and float64,
 * the integer ones on int32 and int64), arg_reduce and topk (every numeric
 * type) (ONNX semantics, opset 13+).
 *
 * Every operator has a prepare function that checks what the kernel supports
 * of a layer the host validated (dtypes, attributes, shapes; the slot counts
 * and descriptor are the host's) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h. */
#include "kernels_compute.h"

#include <stdint.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* reduce                                                              */
/* ------------------------------------------------------------------ */

typedef struct reduce_geom {
    bool identity;
    uint32_t kept_rank, red_rank;
    int64_t kept_dims[PLX_MAX_RANK], kept_st[PLX_MAX_RANK]; /* X strides of kept dims */
    int64_t red_dims[PLX_MAX_RANK], red_st[PLX_MAX_RANK];
    int64_t count; /* elements reduced into each output */
    /* X seen as [outer, count, inner] when the reduced axes that are not
     * 1 are adjacent (every axis reduced but 1s: outer = inner = 1) */
    bool blocked;
    int64_t outer, inner;
} reduce_geom;

static const char *reduce_prepare(const plx_layer_view *l, reduce_geom *g, char *buf,
                                  size_t size) {
    const plx_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    bool fl = x->dtype == PLX_DTYPE_FLOAT32 || x->dtype == PLX_DTYPE_FLOAT64;
    if (!fl && !plxk_is_int_dtype(x->dtype)) {
        return plxk_refuse(buf, size, "runs reduce in float32, float64, int32 and int64 "
                           "only, not %s", plx_dtype_name(x->dtype));
    }
    if (l->outputs[0].dtype != x->dtype) {
        return plxk_refuse(buf, size, "reduce: X is %s but Y is %s", plx_dtype_name(x->dtype),
                   plx_dtype_name(l->outputs[0].dtype));
    }
    if ((unsigned)desc->func > PLX_REDUCE_LOG_SUM_EXP) {
        return plxk_refuse(buf, size, "reduce: function %d is not implemented", (int)desc->func);
    }
    if (!fl && (desc->func == PLX_REDUCE_L2 || desc->func == PLX_REDUCE_LOG_SUM ||
                desc->func == PLX_REDUCE_LOG_SUM_EXP)) {
        return plxk_refuse(buf, size, "runs reduce l2, log_sum and log_sum_exp in float32 "
                           "and float64 only, not %s", plx_dtype_name(x->dtype));
    }
    if (desc->axis_count > x->rank || desc->axis_count > PLX_MAX_RANK) {
        return plxk_refuse(buf, size, "reduce: %u axes for rank %u", desc->axis_count, x->rank);
    }
    bool reduced[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < desc->axis_count; i++) {
        int64_t a = desc->axes[i] < 0 ? (int64_t)desc->axes[i] + x->rank : desc->axes[i];
        if (a < 0 || a >= (int64_t)x->rank || reduced[a]) {
            return plxk_refuse(buf, size, "reduce: axis %d is out of range or repeated (rank %u)",
                       desc->axes[i], x->rank);
        }
        reduced[a] = true;
    }
    g->identity = desc->axis_count == 0 && desc->noop_with_empty_axes;
    if (g->identity) {
        return plxk_require_output_shape(l, "reduce", x->rank, x->dims, buf, size);
    }
    int64_t st[PLX_MAX_RANK], out_dims[PLX_MAX_RANK];
    uint32_t out_rank = 0;
    plx_tensor_info_strides(x, st);
    g->kept_rank = g->red_rank = 0;
    g->count = 1;
    for (uint32_t i = 0; i < x->rank; i++) {
        bool r = desc->axis_count == 0 || reduced[i];
        if (r) {
            g->red_dims[g->red_rank] = x->dims[i];
            g->red_st[g->red_rank++] = st[i];
            g->count *= x->dims[i];
            if (desc->keepdims) {
                out_dims[out_rank++] = 1;
            }
        } else {
            g->kept_dims[g->kept_rank] = x->dims[i];
            g->kept_st[g->kept_rank++] = st[i];
            out_dims[out_rank++] = x->dims[i];
        }
    }
    /* the reduced axes longer than 1 lie in [first, last]; blocked when
     * every axis between them is reduced or 1 */
    uint32_t first = x->rank, last = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if ((desc->axis_count == 0 || reduced[i]) && x->dims[i] != 1) {
            first = first < i ? first : i;
            last = i;
        }
    }
    g->blocked = first < x->rank;
    g->outer = g->inner = 1;
    for (uint32_t i = 0; g->blocked && i < x->rank; i++) {
        if (i < first) {
            g->outer *= x->dims[i];
        } else if (i > last) {
            g->inner *= x->dims[i];
        } else if (!(desc->axis_count == 0 || reduced[i]) && x->dims[i] != 1) {
            g->blocked = false;
        }
    }
    return plxk_require_output_shape(l, "reduce", out_rank, out_dims, buf, size);
}

/* The larger (max) or smaller of a running value and v, NaN winning as
 * plxk_run_reduce's loop has it. */
static inline float pick(bool max, float best, float v) {
    return (max ? v > best : v < best) || v != v ? v : best;
}

/* Float sum, mean, max and min over a blocked layout (reduce_geom): with
 * inner 1, each output reduces a contiguous run (plxk_sum_floats, or 16
 * lanes of maxima); otherwise it combines whole rows of inner values,
 * CHUNK columns at a time, so that every loop runs along contiguous
 * memory. Sums accumulate in double, as the general loop's do. */
static void reduce_blocked(const reduce_geom *g, plx_reduce_func func, const float *x, float *y) {
    enum { LANES = 16, CHUNK = 256 };
    bool is_max = func == PLX_REDUCE_MAX, is_sum = func == PLX_REDUCE_SUM || func == PLX_REDUCE_MEAN;
    double divisor = func == PLX_REDUCE_MEAN ? (double)g->count : 1.0;
    size_t count = (size_t)g->count, inner = (size_t)g->inner;
    for (int64_t o = 0; o < g->outer; o++) {
        const float *block = x + (size_t)o * count * inner;
        float *out = y + (size_t)o * inner;
        if (inner == 1 && is_sum) {
            *out = (float)(plxk_sum_floats(block, count, 0.0f, false) / divisor);
            continue;
        }
        if (inner == 1) {
            /* lanes of v > m ? v : m (x86's max, and min likewise), which
             * pass over a NaN in v; nan[] keeps any NaN seen */
            float lane[LANES], nan[LANES] = {0};
            for (size_t l = 0; l < LANES; l++) {
                lane[l] = block[0];
            }
            size_t main_len = count / LANES * LANES;
            for (size_t i = 0; i < main_len; i += LANES) {
                for (size_t l = 0; l < LANES; l++) {
                    float v = block[i + l];
                    lane[l] = (is_max ? v > lane[l] : v < lane[l]) ? v : lane[l];
                    nan[l] = v != v ? v : nan[l];
                }
            }
            float best = block[0];
            for (size_t l = 0; l < LANES; l++) {
                best = pick(is_max, best, lane[l]);
                best = nan[l] != nan[l] ? nan[l] : best;
            }
            for (size_t i = main_len; i < count; i++) {
                best = pick(is_max, best, block[i]);
            }
            *out = best;
            continue;
        }
        for (size_t j0 = 0; j0 < inner; j0 += CHUNK) {
            size_t n = inner - j0 < CHUNK ? inner - j0 : CHUNK;
            if (is_sum) {
                double acc[CHUNK] = {0};
                for (size_t r = 0; r < count; r++) {
                    const float *restrict row = block + r * inner + j0;
                    for (size_t j = 0; j < n; j++) {
                        acc[j] += row[j];
                    }
                }
                for (size_t j = 0; j < n; j++) {
                    out[j0 + j] = (float)(acc[j] / divisor);
                }
            } else {
                float acc[CHUNK];
                memcpy(acc, block + j0, n * sizeof *acc);
                for (size_t r = 1; r < count; r++) {
                    const float *restrict row = block + r * inner + j0;
                    for (size_t j = 0; j < n; j++) {
                        acc[j] = pick(is_max, acc[j], row[j]);
                    }
                }
                memcpy(out + j0, acc, n * sizeof *acc);
            }
        }
    }
}

const char *plxk_check_reduce(const plx_layer_view *layer, char *buf, size_t size) {
    reduce_geom g;
    return reduce_prepare(layer, &g, buf, size);
}

/* Steps the odometer over the reduced dims: `off` moves to the next
 * reduced element's offset (back to the first after the last). */
static void reduce_step(const reduce_geom *g, int64_t *ridx, int64_t *off) {
    for (uint32_t d = g->red_rank; d-- > 0;) {
        *off += g->red_st[d];
        if (++ridx[d] < g->red_dims[d]) {
            return;
        }
        *off -= g->red_st[d] * g->red_dims[d];
        ridx[d] = 0;
    }
}

/* The float reductions added in ABI 1.1 over the elements at base:
 * accumulated in double; log_sum_exp subtracts the maximum first (so no
 * exp overflows) and is the maximum itself when that is not finite (NaN,
 * +inf, or -inf for an empty set or all -inf). Over an empty set: prod 1,
 * l1, l2 and sum_square 0, log_sum -inf. */
static float reduce_float_more(const reduce_geom *g, plx_reduce_func func, const float *x,
                               int64_t base) {
    int64_t ridx[PLX_MAX_RANK] = {0}, off = 0;
    double mx = -INFINITY;
    if (func == PLX_REDUCE_LOG_SUM_EXP) {
        for (int64_t r = 0; r < g->count; r++) {
            double v = x[base + off];
            mx = v > mx || isnan(v) ? v : mx;
            reduce_step(g, ridx, &off);
        }
        if (!isfinite(mx)) {
            return (float)mx;
        }
    }
    double acc = func == PLX_REDUCE_PROD ? 1.0 : 0.0;
    for (int64_t r = 0; r < g->count; r++) {
        double v = x[base + off];
        switch (func) {
        case PLX_REDUCE_PROD: acc *= v; break;
        case PLX_REDUCE_L1: acc += fabs(v); break;
        case PLX_REDUCE_L2:
        case PLX_REDUCE_SUM_SQUARE: acc += v * v; break;
        case PLX_REDUCE_LOG_SUM_EXP: acc += exp(v - mx); break;
        default: acc += v; break; /* log_sum */
        }
        reduce_step(g, ridx, &off);
    }
    switch (func) {
    case PLX_REDUCE_L2: return (float)sqrt(acc);
    case PLX_REDUCE_LOG_SUM: return (float)log(acc);
    case PLX_REDUCE_LOG_SUM_EXP: return (float)(mx + log(acc));
    default: return (float)acc;
    }
}

/* Every reduce function over the float64 elements at base, in double, with
 * the float32 loops' rules: a NaN wins max and min; over an empty set sum
 * 0, mean NaN, max -inf, min +inf, and the others as reduce_float_more. */
static double reduce_double(const reduce_geom *g, plx_reduce_func func, const double *x,
                            int64_t base) {
    int64_t ridx[PLX_MAX_RANK] = {0}, off = 0;
    double mx = -INFINITY;
    if (func == PLX_REDUCE_LOG_SUM_EXP) {
        for (int64_t r = 0; r < g->count; r++) {
            double v = x[base + off];
            mx = v > mx || isnan(v) ? v : mx;
            reduce_step(g, ridx, &off);
        }
        if (!isfinite(mx)) {
            return mx;
        }
    }
    double acc = func == PLX_REDUCE_PROD  ? 1.0
                 : func == PLX_REDUCE_MAX ? -INFINITY
                 : func == PLX_REDUCE_MIN ? INFINITY
                                          : 0.0;
    for (int64_t r = 0; r < g->count; r++) {
        double v = x[base + off];
        switch (func) {
        case PLX_REDUCE_MAX: acc = v > acc || isnan(v) ? v : acc; break;
        case PLX_REDUCE_MIN: acc = v < acc || isnan(v) ? v : acc; break;
        case PLX_REDUCE_PROD: acc *= v; break;
        case PLX_REDUCE_L1: acc += fabs(v); break;
        case PLX_REDUCE_L2:
        case PLX_REDUCE_SUM_SQUARE: acc += v * v; break;
        case PLX_REDUCE_LOG_SUM_EXP: acc += exp(v - mx); break;
        default: acc += v; break; /* sum, mean, log_sum */
        }
        reduce_step(g, ridx, &off);
    }
    switch (func) {
    case PLX_REDUCE_MEAN: return acc / (double)g->count;
    case PLX_REDUCE_L2: return sqrt(acc);
    case PLX_REDUCE_LOG_SUM: return log(acc);
    case PLX_REDUCE_LOG_SUM_EXP: return mx + log(acc);
    default: return acc;
    }
}

/* Steps the odometer over the kept dims: `base` moves to the next output's
 * first element in X. */
static void kept_step(const reduce_geom *g, int64_t *kidx, int64_t *base) {
    for (uint32_t d = g->kept_rank; d-- > 0;) {
        *base += g->kept_st[d];
        if (++kidx[d] < g->kept_dims[d]) {
            return;
        }
        *base -= g->kept_st[d] * g->kept_dims[d];
        kidx[d] = 0;
    }
}

/* Float sums and means accumulate in double. Integer sums wrap; an integer
 * mean is the sum divided by the count, truncated toward zero. Over an
 * empty set: sum 0, max -inf (or the dtype's minimum), min +inf (maximum),
 * float mean NaN, integer mean an error. Integer prod, l1 and sum_square
 * wrap like sums (prod of nothing is 1). */
bool plxk_run_reduce(const plxk_kernel_args *args) {
    char why[256];
    reduce_geom g;
    if (reduce_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_reduce_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    plx_dtype dt = xi->dtype;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    int64_t total = plxk_numel(xi);
    if (g.identity) {
        if (total) {
            memcpy(y, x, (size_t)total * plx_dtype_size(dt));
        }
        return true;
    }
    bool is_float = dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT64;
    if (!is_float && desc->func == PLX_REDUCE_MEAN && g.count == 0 && plxk_numel(&args->layer->outputs[0])) {
        return plxk_fail(args, "reduce: integer mean over an empty set");
    }
    int64_t int_min = dt == PLX_DTYPE_INT32 ? INT32_MIN : INT64_MIN;
    int64_t int_max = dt == PLX_DTYPE_INT32 ? INT32_MAX : INT64_MAX;
    int64_t outputs = 1;
    for (uint32_t i = 0; i < g.kept_rank; i++) {
        outputs *= g.kept_dims[i];
    }
    if (dt == PLX_DTYPE_FLOAT64) {
        int64_t kidx[PLX_MAX_RANK] = {0}, base = 0;
        for (int64_t o = 0; o < outputs; o++) {
            ((double *)y)[o] = reduce_double(&g, desc->func, x, base);
            kept_step(&g, kidx, &base);
        }
        return true;
    }
    bool more = desc->func > PLX_REDUCE_SUM; /* prod .. log_sum_exp */
    if (is_float && !more && g.blocked && g.count > 0) {
        reduce_blocked(&g, desc->func, x, y);
        return true;
    }
    int64_t count = is_float && more ? 0 : g.count; /* those: reduce_float_more */
    int64_t kidx[PLX_MAX_RANK] = {0}, base = 0;
    for (int64_t o = 0; o < outputs; o++) {
        int64_t ridx[PLX_MAX_RANK] = {0}, off = 0;
        double fsum = 0.0;
        float fbest = desc->func == PLX_REDUCE_MAX ? -INFINITY : INFINITY;
        int64_t isum = desc->func == PLX_REDUCE_PROD ? 1 : 0;
        int64_t ibest = desc->func == PLX_REDUCE_MAX ? int_min : int_max;
        for (int64_t r = 0; r < count; r++) {
            if (is_float) {
                float v = ((const float *)x)[base + off];
                if (desc->func == PLX_REDUCE_MAX) {
                    fbest = v > fbest || isnan(v) ? v : fbest;
                } else if (desc->func == PLX_REDUCE_MIN) {
                    fbest = v < fbest || isnan(v) ? v : fbest;
                } else {
                    fsum += v;
                }
            } else {
                int64_t v = plxk_load_int(x, dt, base + off);
                if (desc->func == PLX_REDUCE_MAX) {
                    ibest = v > ibest ? v : ibest;
                } else if (desc->func == PLX_REDUCE_MIN) {
                    ibest = v < ibest ? v : ibest;
                } else if (desc->func == PLX_REDUCE_PROD) {
                    isum = plxk_wrap_mul(isum, v);
                } else if (desc->func == PLX_REDUCE_L1) {
                    isum = plxk_wrap_add(isum, v < 0 ? plxk_wrap_mul(v, -1) : v);
                } else if (desc->func == PLX_REDUCE_SUM_SQUARE) {
                    isum = plxk_wrap_add(isum, plxk_wrap_mul(v, v));
                } else {
                    isum = plxk_wrap_add(isum, v);
                }
            }
            reduce_step(&g, ridx, &off);
        }
        if (is_float && more) {
            ((float *)y)[o] = reduce_float_more(&g, desc->func, x, base);
        } else if (is_float) {
            float v = desc->func == PLX_REDUCE_SUM    ? (float)fsum
                      : desc->func == PLX_REDUCE_MEAN ? (float)(fsum / (double)g.count)
                                                      : fbest;
            ((float *)y)[o] = v;
        } else {
            int64_t v = ibest;
            if (desc->func == PLX_REDUCE_SUM || more) {
                v = dt == PLX_DTYPE_INT32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)isum : isum;
            } else if (desc->func == PLX_REDUCE_MEAN) {
                /* int32 sums wrap at 32 bits like the result; the count may
                 * exceed int32's range, hence the division in int64 */
                int64_t s = dt == PLX_DTYPE_INT32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)isum
                                                  : isum;
                v = s / g.count;
            }
            plxk_store_int(y, dt, o, v);
        }
        kept_step(&g, kidx, &base);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* arg_reduce, topk                                                    */
/* ------------------------------------------------------------------ */

/* Both run on every numeric dtype: floats (float16 and bfloat16 through
 * float32, which holds them exactly; float64 as double) and integers
 * compared exactly (uint64 as unsigned). */
static bool is_numeric_dtype(plx_dtype dt) {
    switch (dt) {
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
    case PLX_DTYPE_UINT64: return true;
    default: return false;
    }
}

/* Orders elements i and j of a numeric tensor: < 0, 0 or > 0 as element
 * i is smaller, equal or larger. A NaN is larger than every number and
 * equal to another NaN, which makes the order total. */
static int compare_elements(plx_dtype dt, const void *p, int64_t i, int64_t j) {
    double a, b;
    int64_t ia, ib;
    switch (dt) {
    case PLX_DTYPE_FLOAT32: a = ((const float *)p)[i], b = ((const float *)p)[j]; break;
    case PLX_DTYPE_FLOAT64: a = ((const double *)p)[i], b = ((const double *)p)[j]; break;
    case PLX_DTYPE_UINT64: {
        uint64_t ua = ((const uint64_t *)p)[i], ub = ((const uint64_t *)p)[j];
        return (ua > ub) - (ua < ub);
    }
    case PLX_DTYPE_FLOAT16:
        a = plx_float16_to_float32(((const uint16_t *)p)[i]);
        b = plx_float16_to_float32(((const uint16_t *)p)[j]);
        break;
    case PLX_DTYPE_BFLOAT16:
        a = plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
        b = plx_bfloat16_to_float32(((const uint16_t *)p)[j]);
        break;
    default:
        switch (dt) {
        case PLX_DTYPE_INT8: ia = ((const int8_t *)p)[i], ib = ((const int8_t *)p)[j]; break;
        case PLX_DTYPE_UINT8: ia = ((const uint8_t *)p)[i], ib = ((const uint8_t *)p)[j]; break;
        case PLX_DTYPE_INT16: ia = ((const int16_t *)p)[i], ib = ((const int16_t *)p)[j]; break;
        case PLX_DTYPE_UINT16: ia = ((const uint16_t *)p)[i], ib = ((const uint16_t *)p)[j]; break;
        case PLX_DTYPE_UINT32: ia = ((const uint32_t *)p)[i], ib = ((const uint32_t *)p)[j]; break;
        default: ia = plxk_load_int(p, dt, i), ib = plxk_load_int(p, dt, j); break;
        }
        return (ia > ib) - (ia < ib);
    }
    if (isnan(a) || isnan(b)) {
        return (int)isnan(a) - (int)isnan(b);
    }
    return (a > b) - (a < b);
}

static bool is_nan_element(plx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_FLOAT32: return isnan(((const float *)p)[i]);
    case PLX_DTYPE_FLOAT16: return isnan(plx_float16_to_float32(((const uint16_t *)p)[i]));
    case PLX_DTYPE_BFLOAT16: return isnan(plx_bfloat16_to_float32(((const uint16_t *)p)[i]));
    case PLX_DTYPE_FLOAT64: return isnan(((const double *)p)[i]);
    default: return false;
    }
}

/* outer x len x inner around a normalised axis of X. */
static const char *axis_layout(const plx_layer_view *l, const char *op, int64_t axis_in,
                               uint32_t *axis, int64_t *outer, int64_t *len, int64_t *inner,
                               char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    int64_t a = axis_in < 0 ? axis_in + (int64_t)x->rank : axis_in;
    if (a < 0 || a >= (int64_t)x->rank) {
        return plxk_refuse(buf, size, "%s: axis %lld is out of range for rank %u", op,
                              (long long)axis_in, x->rank);
    }
    *axis = (uint32_t)a;
    *outer = plxk_dim_product(x, 0, *axis);
    *len = x->dims[a];
    *inner = plxk_dim_product(x, *axis + 1, x->rank);
    return NULL;
}

typedef struct axis_geom {
    uint32_t axis;
    int64_t outer, len, inner;
} axis_geom;

static const char *arg_reduce_prepare(const plx_layer_view *l, axis_geom *g, char *buf,
                                      size_t size) {
    const plx_arg_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (!is_numeric_dtype(x->dtype)) {
        return plxk_refuse(buf, size, "arg_reduce: dtype %s is not supported",
                              plx_dtype_name(x->dtype));
    }
    if (l->outputs[0].dtype != PLX_DTYPE_INT64) {
        return plxk_refuse(buf, size, "arg_reduce: the output is %s, not int64",
                              plx_dtype_name(l->outputs[0].dtype));
    }
    const char *why = axis_layout(l, "arg_reduce", desc->axis, &g->axis, &g->outer, &g->len,
                                  &g->inner, buf, size);
    if (why) {
        return why;
    }
    if (g->len == 0 && g->outer * g->inner > 0) {
        return plxk_refuse(buf, size, "arg_reduce: axis %u of X is empty", g->axis);
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != g->axis) {
            dims[r++] = x->dims[i];
        } else if (desc->keepdims) {
            dims[r++] = 1;
        }
    }
    return plxk_require_output_shape(l, "arg_reduce", r, dims, buf, size);
}

const char *plxk_check_arg_reduce(const plx_layer_view *layer, char *buf, size_t size) {
    axis_geom g = {0};
    return arg_reduce_prepare(layer, &g, buf, size);
}

/* The index of the largest (smallest) element along the axis, the first
 * of equal ones or the last with select_last_index. A NaN wins over every
 * number in both (as numpy's argmax and argmin). */
bool plxk_run_arg_reduce(const plxk_kernel_args *args) {
    char why[256];
    axis_geom g = {0};
    if (arg_reduce_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_arg_reduce_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *x = args->inputs[0];
    int64_t *y = args->outputs[0];
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t in = 0; in < g.inner; in++) {
            int64_t base = o * g.len * g.inner + in, best = 0;
            for (int64_t j = 1; j < g.len; j++) {
                int64_t pj = base + j * g.inner, pb = base + best * g.inner;
                /* > 0: element j beats the best so far */
                int c = compare_elements(dt, x, pj, pb);
                if (desc->select_min) {
                    bool nj = is_nan_element(dt, x, pj), nb = is_nan_element(dt, x, pb);
                    c = nj || nb ? (int)nj - (int)nb : -c;
                }
                if (c > 0 || (c == 0 && desc->select_last_index)) {
                    best = j;
                }
            }
            y[o * g.inner + in] = best;
        }
    }
    return true;
}

static const char *topk_prepare(const plx_layer_view *l, axis_geom *g, char *buf, size_t size) {
    const plx_topk_desc *desc = l->desc;
    plx_dtype dt = l->inputs[0].dtype;
    if (!is_numeric_dtype(dt)) {
        return plxk_refuse(buf, size, "topk: dtype %s is not supported",
                              plx_dtype_name(dt));
    }
    if (l->outputs[0].dtype != dt || l->outputs[1].dtype != PLX_DTYPE_INT64) {
        return plxk_refuse(buf, size, "topk: outputs %s and %s, expected %s and int64",
                              plx_dtype_name(l->outputs[0].dtype),
                              plx_dtype_name(l->outputs[1].dtype), plx_dtype_name(dt));
    }
    const char *why = axis_layout(l, "topk", desc->axis, &g->axis, &g->outer, &g->len, &g->inner,
                                  buf, size);
    if (why) {
        return why;
    }
    if (desc->k < 0 || desc->k > g->len) {
        return plxk_refuse(buf, size, "topk: k %lld is out of range [0, %lld]",
                              (long long)desc->k, (long long)g->len);
    }
    int64_t dims[PLX_MAX_RANK];
    const plx_tensor_info *x = &l->inputs[0];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i == g->axis ? desc->k : x->dims[i];
    }
    plx_layer_view indices = *l;
    indices.outputs = &l->outputs[1];
    if ((why = plxk_require_output_shape(l, "topk", x->rank, dims, buf, size))) {
        return why;
    }
    return plxk_require_output_shape(&indices, "topk", x->rank, dims, buf, size);
}

const char *plxk_check_topk(const plx_layer_view *layer, char *buf, size_t size) {
    axis_geom g = {0};
    return topk_prepare(layer, &g, buf, size);
}

/* Whether element a comes before element b (positions along the line
 * starting at base): larger (smaller) first, equal values by index. */
static bool topk_before(plx_dtype dt, const void *x, int64_t base, int64_t inner, int64_t a,
                        int64_t b, bool largest) {
    int c = compare_elements(dt, x, base + a * inner, base + b * inner);
    if (!largest) {
        c = -c;
    }
    return c > 0 || (c == 0 && a < b);
}

/* Without scratch memory: the t-th output is the first element, in topk
 * order, of those after the (t-1)-th; O(k * n) per line. The outputs are
 * sorted whatever `sorted` says. A NaN is larger than every number, as in
 * compare_elements. */
bool plxk_run_topk(const plxk_kernel_args *args) {
    char why[256];
    axis_geom g = {0};
    if (topk_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_topk_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    size_t es = plx_dtype_size(dt);
    const uint8_t *x = args->inputs[0];
    uint8_t *values = args->outputs[0];
    int64_t *indices = args->outputs[1];
    int64_t k = desc->k;
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t in = 0; in < g.inner; in++) {
            int64_t base = o * g.len * g.inner + in, out_base = o * k * g.inner + in, prev = -1;
            for (int64_t t = 0; t < k; t++) {
                int64_t pick = -1;
                for (int64_t j = 0; j < g.len; j++) {
                    if (prev >= 0 && !topk_before(dt, x, base, g.inner, prev, j, desc->largest)) {
                        continue; /* already taken */
                    }
                    if (pick < 0 || topk_before(dt, x, base, g.inner, j, pick, desc->largest)) {
                        pick = j;
                    }
                }
                /* k <= len: there is always one left */
                int64_t yo = out_base + t * g.inner;
                memcpy(values + (size_t)yo * es, x + (size_t)(base + pick * g.inner) * es, es);
                indices[yo] = pick;
                prev = pick;
            }
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(REDUCE, reduce);
PLXK_ROW(ARG_REDUCE, arg_reduce);
PLXK_ROW(TOPK, topk);
