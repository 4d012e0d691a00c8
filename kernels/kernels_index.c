/* cpu_ref's indexing kernels: gather_elements, scatter_elements (also ONNX's
 * old Scatter), scatter_nd and gather_nd.
 *
 * Each run walks its indices once with N-d counters (no division or modulo
 * per element), a chunk of CHUNK indices at a time: the indices are loaded
 * as int64, range-checked and turned into element offsets into data, then
 * one typed loop per chunk moves or combines the elements (by element size
 * for plain moves, by dtype for the reductions, plexus/ops.h's
 * plx_scatter_reduction). An index out of range fails the run naming the
 * layer, the index and its position in indices; the output is then
 * undefined. Every run function first calls its check function, which
 * verifies the infos against each other, so no offset leaves the buffers. */
#include "kernels.h"

#include <plexus/geometry.h>

#include <stdint.h>
#include <string.h>

/* Indices handled per chunk (the offsets live on the stack). */
#define CHUNK 256

/* ---- helpers ------------------------------------------------------------ */

static bool is_index_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT32 || t == PLX_DTYPE_INT64;
}

/* out[t] = indices[first + t] for t < m, as int64. */
static void load_indices(const void *p, plx_dtype dt, size_t first, size_t m, int64_t *out) {
    if (dt == PLX_DTYPE_INT32) {
        const int32_t *q = (const int32_t *)p + first;
        for (size_t t = 0; t < m; t++) {
            out[t] = q[t];
        }
    } else {
        memcpy(out, (const int64_t *)p + first, m * sizeof *out);
    }
}

/* Whether v is outside [-s, s) (s >= 0, any v: no overflow). */
static inline bool index_bad(int64_t v, int64_t s) {
    return (uint64_t)v + (uint64_t)s >= 2u * (uint64_t)s;
}

/* Integer results modulo 2^bits, without implementation-defined
 * conversions. */
static inline int8_t wrap8(uint64_t u) {
    int w = (int)(u & 0xffu);
    return (int8_t)(w >= 0x80 ? w - 0x100 : w);
}
static inline int16_t wrap16(uint64_t u) {
    long w = (long)(u & 0xffffu);
    return (int16_t)(w >= 0x8000 ? w - 0x10000 : w);
}
static inline int32_t wrap32(uint64_t u) {
    int64_t w = (int64_t)(u & 0xffffffffu);
    return (int32_t)(w >= 0x80000000 ? w - 0x100000000 : w);
}
static inline int64_t wrap64(uint64_t u) {
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}
static inline uint8_t wrapu8(uint64_t u) {
    return (uint8_t)(u & 0xffu);
}
static inline uint16_t wrapu16(uint64_t u) {
    return (uint16_t)(u & 0xffffu);
}
static inline uint32_t wrapu32(uint64_t u) {
    return (uint32_t)(u & 0xffffffffu);
}

/* numpy's maximum and minimum: a NaN wins. */
static inline float max_nan(float x, float y) {
    return x != x ? x : y != y ? y : x > y ? x : y;
}
static inline float min_nan(float x, float y) {
    return x != x ? x : y != y ? y : x < y ? x : y;
}
static inline double max_nan_d(double x, double y) {
    return x != x ? x : y != y ? y : x > y ? x : y;
}
static inline double min_nan_d(double x, double y) {
    return x != x ? x : y != y ? y : x < y ? x : y;
}

/* ---- moving and combining elements -------------------------------------- */

/* For t < m: element D(t) of dst and S(t) of src, where D(t) = doffs[t]
 * (or t when doffs is NULL) and S(t) likewise. */
#define D_AT_(t) (doffs ? doffs[t] : (int64_t)(t))
#define S_AT_(t) (soffs ? soffs[t] : (int64_t)(t))

/* dst[D(t)] = src[S(t)], by element size. */
static void move_elems(size_t es, void *dst, const int64_t *doffs, const void *src,
                       const int64_t *soffs, size_t m) {
#define MOVE_(T)                                                    \
    for (size_t t = 0; t < m; t++) {                                \
        ((T *)dst)[D_AT_(t)] = ((const T *)src)[S_AT_(t)];          \
    }                                                               \
    return
    switch (es) {
    case 1: MOVE_(uint8_t);
    case 2: MOVE_(uint16_t);
    case 4: MOVE_(uint32_t);
    case 8: MOVE_(uint64_t);
    default:
        for (size_t t = 0; t < m; t++) {
            memcpy((uint8_t *)dst + (size_t)D_AT_(t) * es,
                   (const uint8_t *)src + (size_t)S_AT_(t) * es, es);
        }
        return;
    }
#undef MOVE_
}

/* dst[D(t)] = f(dst[D(t)], src[S(t)]) with W the wide type, LOAD from T to
 * W and STORE from the expression back to T. */
#define COMBINE_(T, W, LOAD, STORE, EXPR)                              \
    for (size_t t = 0; t < m; t++) {                                   \
        T *p_ = (T *)dst + D_AT_(t);                                   \
        W x = LOAD(*p_), y = LOAD(((const T *)src)[S_AT_(t)]);         \
        *p_ = STORE(EXPR);                                             \
    }                                                                  \
    return

#define ID_(v) (v)
#define TO_U64_(v) ((uint64_t)(v))
#define BYTE01_(v) ((uint8_t)((v) != 0))

#define FLOAT_COMBINE_(T, LOAD, STORE)                                 \
    switch (red) {                                                     \
    case PLX_SCATTER_ADD: COMBINE_(T, float, LOAD, STORE, x + y);      \
    case PLX_SCATTER_MUL: COMBINE_(T, float, LOAD, STORE, x * y);      \
    case PLX_SCATTER_MAX: COMBINE_(T, float, LOAD, STORE, max_nan(x, y)); \
    default: COMBINE_(T, float, LOAD, STORE, min_nan(x, y));           \
    }

#define INT_COMBINE_(T, STORE)                                                         \
    switch (red) {                                                                     \
    case PLX_SCATTER_ADD: COMBINE_(T, int64_t, ID_, STORE, TO_U64_(x) + TO_U64_(y));  \
    case PLX_SCATTER_MUL: COMBINE_(T, int64_t, ID_, STORE, TO_U64_(x) * TO_U64_(y));  \
    case PLX_SCATTER_MAX: COMBINE_(T, int64_t, ID_, STORE, TO_U64_(x > y ? x : y));   \
    default: COMBINE_(T, int64_t, ID_, STORE, TO_U64_(x < y ? x : y));                \
    }

/* The dtypes ONNX defines no arithmetic on (the float8 types, int4 and
 * uint4): scatter moves them but refuses to reduce them. */
static bool no_reduction_dtype(plx_dtype dt) {
    return plx_dtype_is_float8(dt) || dt == PLX_DTYPE_INT4 || dt == PLX_DTYPE_UINT4;
}

static void combine_elems(plx_dtype dt, plx_scatter_reduction red, void *dst,
                          const int64_t *doffs, const void *src, const int64_t *soffs,
                          size_t m) {
    if (red == PLX_SCATTER_NONE) {
        move_elems(plx_dtype_size(dt), dst, doffs, src, soffs, m);
        return;
    }
    switch (dt) {
    case PLX_DTYPE_FLOAT32: FLOAT_COMBINE_(float, ID_, ID_)
    case PLX_DTYPE_FLOAT16:
        FLOAT_COMBINE_(uint16_t, plx_float16_to_float32, plx_float32_to_float16)
    case PLX_DTYPE_BFLOAT16:
        FLOAT_COMBINE_(uint16_t, plx_bfloat16_to_float32, plx_float32_to_bfloat16)
    case PLX_DTYPE_INT8: INT_COMBINE_(int8_t, wrap8)
    case PLX_DTYPE_UINT8: INT_COMBINE_(uint8_t, wrapu8)
    case PLX_DTYPE_INT16: INT_COMBINE_(int16_t, wrap16)
    case PLX_DTYPE_INT32: INT_COMBINE_(int32_t, wrap32)
    case PLX_DTYPE_INT64: INT_COMBINE_(int64_t, wrap64)
    case PLX_DTYPE_UINT16: INT_COMBINE_(uint16_t, wrapu16)
    case PLX_DTYPE_UINT32: INT_COMBINE_(uint32_t, wrapu32)
    case PLX_DTYPE_UINT64:
        /* in uint64 itself: int64 would order the values from 2^63 wrongly */
        switch (red) {
        case PLX_SCATTER_ADD: COMBINE_(uint64_t, uint64_t, ID_, ID_, x + y);
        case PLX_SCATTER_MUL: COMBINE_(uint64_t, uint64_t, ID_, ID_, x * y);
        case PLX_SCATTER_MAX: COMBINE_(uint64_t, uint64_t, ID_, ID_, x > y ? x : y);
        default: COMBINE_(uint64_t, uint64_t, ID_, ID_, x < y ? x : y);
        }
    case PLX_DTYPE_FLOAT64:
        switch (red) {
        case PLX_SCATTER_ADD: COMBINE_(double, double, ID_, ID_, x + y);
        case PLX_SCATTER_MUL: COMBINE_(double, double, ID_, ID_, x * y);
        case PLX_SCATTER_MAX: COMBINE_(double, double, ID_, ID_, max_nan_d(x, y));
        default: COMBINE_(double, double, ID_, ID_, min_nan_d(x, y));
        }
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
    case PLX_DTYPE_INT4:
    case PLX_DTYPE_UINT4:
        break; /* the scatter checks refuse reductions on them */
    case PLX_DTYPE_BOOL:
        /* numpy's bool arithmetic: add and max are or, mul and min and */
        if (red == PLX_SCATTER_ADD || red == PLX_SCATTER_MAX) {
            COMBINE_(uint8_t, int, BYTE01_, BYTE01_, x | y);
        }
        COMBINE_(uint8_t, int, BYTE01_, BYTE01_, x & y);
    case PLX_DTYPE_INVALID:
        return;
    }
}

#undef FLOAT_COMBINE_
#undef INT_COMBINE_
#undef COMBINE_
#undef D_AT_
#undef S_AT_

/* ---- walking the indices ------------------------------------------------ */

/* Called per chunk of indices: `first` is the chunk's first position (an
 * indices element for the elementwise ops, an index tuple for the ND ones),
 * offs[t] the data offset of position first + t, for t < m. */
typedef void (*visit_fn)(const plxk_kernel_args *args, size_t first, size_t m,
                         const int64_t *offs);

/* gather_elements and scatter_elements: position p of indices (data's
 * rank) stands for data's element at p with p[axis] = indices[p]. */
static bool walk_elements(const plxk_kernel_args *args, const char *op, uint32_t axis,
                          visit_fn visit) {
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1];
    size_t n = plxk_element_count(ind);
    if (n == 0) {
        return true;
    }
    uint32_t r = x->rank;
    int64_t xs[PLX_MAX_RANK], cs[PLX_MAX_RANK], cnt[PLX_MAX_RANK] = {0};
    plx_tensor_info_strides(x, xs);
    for (uint32_t d = 0; d < r; d++) {
        cs[d] = d == axis ? 0 : xs[d]; /* the axis' coordinate is the index */
    }
    int64_t s = x->dims[axis], sa = xs[axis], step = cs[r - 1], base = 0;
    size_t last = (size_t)ind->dims[r - 1];
    int64_t vals[CHUNK], offs[CHUNK];
    for (size_t o = 0; o < n; o += last) {
        for (size_t t0 = 0; t0 < last; t0 += CHUNK) {
            size_t m = last - t0 < CHUNK ? last - t0 : CHUNK;
            load_indices(args->inputs[1], ind->dtype, o + t0, m, vals);
            bool bad = false;
            int64_t at = base + (int64_t)t0 * step;
            for (size_t t = 0; t < m; t++) {
                int64_t v = vals[t];
                bad |= index_bad(v, s);
                offs[t] = at + (v < 0 ? v + s : v) * sa;
                at += step;
            }
            if (bad) {
                for (size_t t = 0; t < m; t++) {
                    if (index_bad(vals[t], s)) {
                        return plxk_fail(args,
                                         "layer '%s' (%s): index %lld (indices element %zu) is "
                                         "out of range for axis %u of size %lld",
                                         plxk_layer_name(layer), op, (long long)vals[t], o + t0 + t,
                                         axis, (long long)s);
                    }
                }
            }
            visit(args, o + t0, m, offs);
        }
        for (uint32_t d = r - 1; d-- > 0;) {
            if (++cnt[d] < ind->dims[d]) {
                base += cs[d];
                break;
            }
            cnt[d] = 0;
            base -= cs[d] * (ind->dims[d] - 1);
        }
    }
    return true;
}

/* gather_nd and scatter_nd: indices [B.., M.., k] (B the b batch dims,
 * shared with data); tuple j of batch i stands for data's slice at
 * [i, tuple j, ...]. */
static bool walk_nd(const plxk_kernel_args *args, const char *op, uint32_t b, visit_fn visit) {
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1];
    uint32_t q = ind->rank;
    size_t k = (size_t)ind->dims[q - 1], batches = 1, per = 1;
    for (uint32_t d = 0; d < q - 1; d++) {
        *(d < b ? &batches : &per) *= (size_t)ind->dims[d];
    }
    if (batches == 0 || per == 0) {
        return true;
    }
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    int64_t bs = b ? xs[b - 1] : 0;
    const int64_t *dims = x->dims + b, *strides = xs + b;
    size_t per_chunk = k ? CHUNK / k : CHUNK;
    int64_t vals[CHUNK], offs[CHUNK];
    for (size_t bi = 0; bi < batches; bi++) {
        for (size_t j0 = 0; j0 < per; j0 += per_chunk) {
            size_t m = per - j0 < per_chunk ? per - j0 : per_chunk, first = bi * per + j0;
            load_indices(args->inputs[1], ind->dtype, first * k, m * k, vals);
            bool bad = false;
            const int64_t *v = vals;
            for (size_t j = 0; j < m; j++, v += k) {
                int64_t off = (int64_t)bi * bs;
                for (size_t c = 0; c < k; c++) {
                    bad |= index_bad(v[c], dims[c]);
                    off += (v[c] < 0 ? v[c] + dims[c] : v[c]) * strides[c];
                }
                offs[j] = off;
            }
            if (bad) {
                for (size_t j = 0, t = 0; j < m; j++) {
                    for (size_t c = 0; c < k; c++, t++) {
                        if (index_bad(vals[t], dims[c])) {
                            return plxk_fail(args,
                                             "layer '%s' (%s): index %lld (indices element %zu) "
                                             "is out of range for data dim %u of size %lld",
                                             plxk_layer_name(layer), op, (long long)vals[t],
                                             first * k + t, (unsigned)(b + c),
                                             (long long)dims[c]);
                        }
                    }
                }
            }
            visit(args, first, m, offs);
        }
    }
    return true;
}

/* ---- shared checks ------------------------------------------------------ */

/* indices int32/int64 of data's rank, each dim but axis at most data's;
 * output (and updates) of the right dtype and shape. */
static const char *check_elements(const plx_layer_view *layer, const char *op, int32_t a,
                                  bool scatter, uint32_t *axis, char *buf, size_t size) {
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1],
                          *y = &layer->outputs[0];
    if (!is_index_dtype(ind->dtype)) {
        return plxk_refuse(buf, size, "%s: indices dtype %s is not supported (int32 or int64)", op,
                           plx_dtype_name(ind->dtype));
    }
    if (y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "%s: output is %s, data %s", op, plx_dtype_name(y->dtype),
                           plx_dtype_name(x->dtype));
    }
    if (!plx_axis_normalize(a, x->rank, false, axis)) {
        return plxk_refuse(buf, size, "%s: axis %d is out of range for rank %u", op, (int)a,
                           x->rank);
    }
    if (ind->rank != x->rank) {
        return plxk_refuse(buf, size, "%s: indices rank %u, data rank %u", op, ind->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != *axis && ind->dims[i] > x->dims[i]) {
            return plxk_refuse(buf, size, "%s: indices dim %u is %lld, more than data's %lld", op,
                               i, (long long)ind->dims[i], (long long)x->dims[i]);
        }
    }
    if (!plxk_same_dims(y, scatter ? x : ind)) {
        return plxk_refuse(buf, size, "%s: the output's shape is not %s's", op,
                           scatter ? "data" : "indices");
    }
    if (scatter) {
        const plx_tensor_info *u = &layer->inputs[2];
        if (u->dtype != x->dtype || !plxk_same_dims(u, ind)) {
            return plxk_refuse(buf, size, "%s: updates (%s) must have data's dtype (%s) and "
                               "indices' shape", op, plx_dtype_name(u->dtype),
                               plx_dtype_name(x->dtype));
        }
    }
    return NULL;
}

/* indices int32/int64 [..., k], 1 <= rank, the first b dims data's,
 * kmin <= k <= data's rank - b; `want` (the output of gather_nd, the
 * updates of scatter_nd) has indices' dims but the last, then data's from
 * b + k. */
static const char *check_nd(const plx_layer_view *layer, const char *op, uint32_t b,
                            int64_t kmin, const plx_tensor_info *want, char *buf, size_t size) {
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1];
    if (!is_index_dtype(ind->dtype)) {
        return plxk_refuse(buf, size, "%s: indices dtype %s is not supported (int32 or int64)", op,
                           plx_dtype_name(ind->dtype));
    }
    if (x->rank < 1 || ind->rank < 1 || b >= x->rank || b >= ind->rank) {
        return plxk_refuse(buf, size, "%s: data rank %u and indices rank %u with %u batch dims",
                           op, x->rank, ind->rank, b);
    }
    for (uint32_t i = 0; i < b; i++) {
        if (ind->dims[i] != x->dims[i]) {
            return plxk_refuse(buf, size, "%s: indices and data differ in batch dim %u", op, i);
        }
    }
    int64_t k = ind->dims[ind->rank - 1];
    if (k < kmin || k > (int64_t)(x->rank - b)) {
        return plxk_refuse(buf, size, "%s: the last dim of indices is %lld, data rank %u", op,
                           (long long)k, x->rank);
    }
    uint32_t r = ind->rank - 1 + x->rank - b - (uint32_t)k;
    bool ok = want->dtype == x->dtype && want->rank == r;
    for (uint32_t i = 0; ok && i < r; i++) {
        ok = want->dims[i] == (i < ind->rank - 1 ? ind->dims[i]
                                                 : x->dims[b + (uint32_t)k + i - (ind->rank - 1)]);
    }
    if (!ok) {
        return plxk_refuse(buf, size, "%s: the %s's dtype or shape does not match data and indices",
                           op, want == &layer->outputs[0] ? "output" : "updates");
    }
    return NULL;
}

/* Runs the layer's check; on a refusal fails with it. */
#define RUN_CHECK(name, args)                                                          \
    do {                                                                               \
        char why_buf_[192];                                                            \
        const char *why_ = plxk_check_##name((args)->layer, why_buf_, sizeof why_buf_); \
        if (why_) {                                                                    \
            return plxk_fail((args), "layer '%s': %s", plxk_layer_name((args)->layer), why_); \
        }                                                                              \
    } while (0)

/* Scatters start from a copy of data. */
static void copy_data(const plxk_kernel_args *args) {
    size_t bytes = plxk_element_count(&args->layer->inputs[0]) * plx_dtype_size(args->layer->inputs[0].dtype);
    if (bytes && args->outputs[0] != args->inputs[0]) {
        memcpy(args->outputs[0], args->inputs[0], bytes);
    }
}

/* ---- gather_elements ---------------------------------------------------- */

const char *plxk_check_gather_elements(const plx_layer_view *layer, char *buf, size_t size) {
    uint32_t axis;
    return check_elements(layer, "gather_elements", ((const plx_axis_desc *)layer->desc)->axis,
                          false, &axis, buf, size);
}

static void visit_gather_elements(const plxk_kernel_args *args, size_t first, size_t m,
                                  const int64_t *offs) {
    size_t es = plx_dtype_size(args->layer->inputs[0].dtype);
    move_elems(es, (uint8_t *)args->outputs[0] + first * es, NULL, args->inputs[0], offs, m);
}

bool plxk_run_gather_elements(const plxk_kernel_args *args) {
    RUN_CHECK(gather_elements, args);
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_axis_desc *)args->layer->desc)->axis,
                       args->layer->inputs[0].rank, false, &axis);
    return walk_elements(args, "gather_elements", axis, visit_gather_elements);
}

/* ---- scatter_elements --------------------------------------------------- */

const char *plxk_check_scatter_elements(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_scatter_desc *d = layer->desc;
    if (!plx_scatter_reduction_name(d->reduction)) {
        return plxk_refuse(buf, size, "scatter_elements: reduction %d is not supported",
                           (int)d->reduction);
    }
    if (d->reduction != PLX_SCATTER_NONE && no_reduction_dtype(layer->inputs[0].dtype)) {
        return plxk_refuse(buf, size, "scatter_elements: reduction %s on %s is not supported",
                           plx_scatter_reduction_name(d->reduction),
                           plx_dtype_name(layer->inputs[0].dtype));
    }
    uint32_t axis;
    return check_elements(layer, "scatter_elements", d->axis, true, &axis, buf, size);
}

static void visit_scatter_elements(const plxk_kernel_args *args, size_t first, size_t m,
                                   const int64_t *offs) {
    const plx_tensor_info *u = &args->layer->inputs[2];
    size_t es = plx_dtype_size(u->dtype);
    combine_elems(u->dtype, ((const plx_scatter_desc *)args->layer->desc)->reduction,
                  args->outputs[0], offs, (const uint8_t *)args->inputs[2] + first * es, NULL, m);
}

bool plxk_run_scatter_elements(const plxk_kernel_args *args) {
    RUN_CHECK(scatter_elements, args);
    const plx_scatter_desc *d = args->layer->desc;
    uint32_t axis = 0;
    plx_axis_normalize(d->axis, args->layer->inputs[0].rank, false, &axis);
    copy_data(args);
    return walk_elements(args, "scatter_elements", axis, visit_scatter_elements);
}

/* ---- scatter_nd --------------------------------------------------------- */

const char *plxk_check_scatter_nd(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_scatter_desc *d = layer->desc;
    if (!plx_scatter_reduction_name(d->reduction) || d->axis != 0) {
        return plxk_refuse(buf, size, "scatter_nd: reduction %d, axis %d are not supported",
                           (int)d->reduction, (int)d->axis);
    }
    if (d->reduction != PLX_SCATTER_NONE && no_reduction_dtype(layer->inputs[0].dtype)) {
        return plxk_refuse(buf, size, "scatter_nd: reduction %s on %s is not supported",
                           plx_scatter_reduction_name(d->reduction),
                           plx_dtype_name(layer->inputs[0].dtype));
    }
    if (!plxk_same_dims(&layer->outputs[0], &layer->inputs[0]) ||
        layer->outputs[0].dtype != layer->inputs[0].dtype) {
        return plxk_refuse(buf, size, "scatter_nd: the output's dtype or shape is not data's");
    }
    return check_nd(layer, "scatter_nd", 0, 0, &layer->inputs[2], buf, size);
}

/* The elements of one index tuple's slice (data's dims past the tuple). */
static size_t slice_of(const plx_tensor_info *x, uint32_t from) {
    size_t n = 1;
    for (uint32_t i = from; i < x->rank; i++) {
        n *= (size_t)x->dims[i];
    }
    return n;
}

static void visit_scatter_nd(const plxk_kernel_args *args, size_t first, size_t m,
                             const int64_t *offs) {
    const plx_tensor_info *x = &args->layer->inputs[0], *ind = &args->layer->inputs[1];
    plx_scatter_reduction red = ((const plx_scatter_desc *)args->layer->desc)->reduction;
    size_t es = plx_dtype_size(x->dtype);
    size_t slice = slice_of(x, (uint32_t)ind->dims[ind->rank - 1]);
    const uint8_t *src = (const uint8_t *)args->inputs[2] + first * slice * es;
    uint8_t *dst = args->outputs[0];
    if (slice == 1) {
        combine_elems(x->dtype, red, dst, offs, src, NULL, m);
        return;
    }
    for (size_t j = 0; j < m; j++) {
        if (red == PLX_SCATTER_NONE) {
            memcpy(dst + (size_t)offs[j] * es, src + j * slice * es, slice * es);
        } else {
            combine_elems(x->dtype, red, dst + (size_t)offs[j] * es, NULL, src + j * slice * es,
                          NULL, slice);
        }
    }
}

bool plxk_run_scatter_nd(const plxk_kernel_args *args) {
    RUN_CHECK(scatter_nd, args);
    copy_data(args);
    return walk_nd(args, "scatter_nd", 0, visit_scatter_nd);
}

/* ---- gather_nd ---------------------------------------------------------- */

const char *plxk_check_gather_nd(const plx_layer_view *layer, char *buf, size_t size) {
    int32_t b = ((const plx_gather_nd_desc *)layer->desc)->batch_dims;
    if (b < 0) {
        return plxk_refuse(buf, size, "gather_nd: batch_dims %d is negative", (int)b);
    }
    return check_nd(layer, "gather_nd", (uint32_t)b, 1, &layer->outputs[0], buf, size);
}

static void visit_gather_nd(const plxk_kernel_args *args, size_t first, size_t m,
                            const int64_t *offs) {
    const plx_tensor_info *x = &args->layer->inputs[0], *ind = &args->layer->inputs[1];
    uint32_t b = (uint32_t)((const plx_gather_nd_desc *)args->layer->desc)->batch_dims;
    size_t es = plx_dtype_size(x->dtype);
    size_t slice = slice_of(x, b + (uint32_t)ind->dims[ind->rank - 1]);
    uint8_t *dst = (uint8_t *)args->outputs[0] + first * slice * es;
    const uint8_t *src = args->inputs[0];
    if (slice == 1) {
        move_elems(es, dst, NULL, src, offs, m);
        return;
    }
    for (size_t j = 0; j < m; j++) {
        memcpy(dst + j * slice * es, src + (size_t)offs[j] * es, slice * es);
    }
}

bool plxk_run_gather_nd(const plxk_kernel_args *args) {
    RUN_CHECK(gather_nd, args);
    uint32_t b = (uint32_t)((const plx_gather_nd_desc *)args->layer->desc)->batch_dims;
    return walk_nd(args, "gather_nd", b, visit_gather_nd);
}

/* ---- the operators' rows (kernels.h, PLXK_ROW) --------------------------- */

PLXK_ROW(GATHER_ELEMENTS, gather_elements);
PLXK_ROW(SCATTER_ELEMENTS, scatter_elements);
PLXK_ROW(SCATTER_ND, scatter_nd);
PLXK_ROW(GATHER_ND, gather_nd);
