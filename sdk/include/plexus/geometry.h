/* Plexus tensor geometry: ONNX's rules for the shapes and index maps of
 * the operators that are not windows (those are plexus/window.h's): axis
 * normalisation, the plan of a slice, numpy broadcasting (of two shapes,
 * and the strides with which one is read as another), the geometry of
 * gemm and of numpy matmul, and resize's coordinate transformation and
 * rounding; for backends to compute their kernels' geometry the way the
 * host's shape inference does, and for the host to do it with them.
 *
 * Header-only helpers (static inline): nothing crosses the ABI, a backend
 * compiles them in, and they keep no state and allocate nothing
 * (thread-safe); they need no libm. Each returns whether it succeeded (a
 * bool, or a plx_geom_status saying what is at fault, with the values at
 * fault where the caller may want to name them) and prints nothing: the
 * wording of a refusal is the caller's, in its own style
 * (plx_geom_status_text gives a short phrase for each status). They read only
 * their arguments and write only their outputs, and write the outputs only
 * on success unless a function says otherwise. Shapes are the caller's to
 * validate first: ranks at most PLX_MAX_RANK and dims at least 0 (what
 * plx_tensor_info_byte_size accepts), unless a function says what it
 * checks itself. */
#ifndef PLEXUS_GEOMETRY_H
#define PLEXUS_GEOMETRY_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plx_geom_status {
    PLX_GEOM_OK = 0,
    /* An axis outside its range (plx_axis_normalize). */
    PLX_GEOM_BAD_AXIS = 1,
    /* An axis given twice. */
    PLX_GEOM_REPEATED_AXIS = 2,
    /* A slice step of 0. */
    PLX_GEOM_ZERO_STEP = 3,
    /* More entries than PLX_MAX_RANK. */
    PLX_GEOM_BAD_COUNT = 4,
    /* An operand of a rank the operator does not take. */
    PLX_GEOM_BAD_RANK = 5,
    /* gemm's C of a rank other than 0, 1 or 2. */
    PLX_GEOM_BAD_BIAS_RANK = 6,
    /* The operands disagree on the contracted size K. */
    PLX_GEOM_K_MISMATCH = 7,
    /* Dims that do not broadcast (numpy's rules). */
    PLX_GEOM_NO_BROADCAST = 8,
    /* A resize scale that is negative, infinite or NaN. */
    PLX_GEOM_BAD_SCALE = 9,
    /* A resize of an empty dim to a non-empty one. */
    PLX_GEOM_EMPTY_INPUT = 10
} plx_geom_status;

/* What a status says, for a backend's refusal ("slice: axis out of
 * range"): a static string, "unknown geometry status" for a value outside
 * the enum. */
static inline const char *plx_geom_status_text(plx_geom_status s) {
    switch (s) {
    case PLX_GEOM_OK: return "ok";
    case PLX_GEOM_BAD_AXIS: return "axis out of range";
    case PLX_GEOM_REPEATED_AXIS: return "axis repeated";
    case PLX_GEOM_ZERO_STEP: return "step 0";
    case PLX_GEOM_BAD_COUNT: return "more entries than the rank";
    case PLX_GEOM_BAD_RANK: return "operand of a rank the operator does not take";
    case PLX_GEOM_BAD_BIAS_RANK: return "bias of a rank other than 0, 1 or 2";
    case PLX_GEOM_K_MISMATCH: return "operands disagree on the contracted size";
    case PLX_GEOM_NO_BROADCAST: return "dims that do not broadcast";
    case PLX_GEOM_BAD_SCALE: return "scale negative, infinite or NaN";
    case PLX_GEOM_EMPTY_INPUT: return "empty dim resized to a non-empty one";
    }
    return "unknown geometry status";
}

/* ---- axes ---------------------------------------------------------------- */

/* An axis of a tensor of rank `rank` into 0..rank-1, counting a negative
 * axis from the end: axis in [-rank, rank), or [-rank, rank] with
 * `inclusive` (an axis that names a position between dims, such as
 * flatten's, rank meaning after the last). false when
 * outside, *out untouched. Negative axes reach -rank either way. Any
 * int64_t axis is safe (no overflow). */
static inline bool plx_axis_normalize(int64_t axis, uint32_t rank, bool inclusive, uint32_t *out) {
    int64_t r = (int64_t)rank;
    if (axis < -r || axis > r || (!inclusive && axis == r)) {
        return false;
    }
    *out = (uint32_t)(axis < 0 ? axis + r : axis);
    return true;
}

/* ---- slice ---------------------------------------------------------------- */

/* ONNX Slice along one dim of size `dim` (at least 0): from start to end
 * (exclusive) by step, negative start and end counting from the end, then
 * clamped to the dim (to [0, dim] for a positive step, to [-1, dim - 1]
 * for a negative one, where -1 is before the first element). The first
 * element taken and the number taken (0 and 0 for an empty dim). Any
 * int64_t start, end and step other than 0 are safe, INT64_MIN included (a
 * step of INT64_MIN takes one element); false for step 0, outputs
 * untouched. */
static inline bool plx_slice_dim(int64_t dim, int64_t start, int64_t end, int64_t step,
                                 int64_t *out_start, int64_t *out_count) {
    if (step == 0) {
        return false;
    }
    if (dim == 0) {
        *out_start = 0;
        *out_count = 0;
        return true;
    }
    /* INT64_MIN + dim does not overflow: dim >= 0 */
    start = start < 0 ? start + dim : start;
    end = end < 0 ? end + dim : end;
    int64_t count;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        /* (start - end - 1) / step truncates toward zero: -step is never
         * taken, so INT64_MIN needs no case of its own */
        count = start > end ? 1 - (start - end - 1) / step : 0;
    }
    *out_start = start;
    *out_count = count;
    return true;
}

/* The whole plan of a slice of dense x by d: per dim of x the output
 * size (x's dim for the dims d does not name) and the element stride with
 * which the output walks x (step times x's dense stride; 0 along a dim of
 * at most one output element, which never steps), and the element offset
 * in x of the output's first element; each entry i of d applied by
 * plx_slice_dim to the dim plx_axis_normalize(d->axes[i], x->rank, false)
 * gives. The offset and the strides' magnitudes are at most x's element
 * count, any int64_t start, end and step notwithstanding. Refuses, at the
 * first entry at fault (its index in *bad_entry, when not NULL): more than
 * PLX_MAX_RANK entries, or x of a rank above it (PLX_GEOM_BAD_COUNT,
 * *bad_entry 0; more entries than x's rank but no more than PLX_MAX_RANK
 * must repeat an axis or have one out of range, and are refused as such),
 * an axis out of range
 * (PLX_GEOM_BAD_AXIS), an axis an earlier entry named
 * (PLX_GEOM_REPEATED_AXIS), a step of 0 (PLX_GEOM_ZERO_STEP). The arrays
 * are written up to x's rank, and may be partly written on refusal. */
static inline plx_geom_status plx_slice_plan(const plx_tensor_info *x, const plx_slice_desc *d,
                                             int64_t dims[PLX_MAX_RANK],
                                             int64_t strides[PLX_MAX_RANK], int64_t *offset,
                                             uint32_t *bad_entry) {
    uint32_t at = 0;
    if (!bad_entry) {
        bad_entry = &at;
    }
    *bad_entry = 0;
    if (d->count > PLX_MAX_RANK || x->rank > PLX_MAX_RANK) {
        return PLX_GEOM_BAD_COUNT;
    }
    int64_t start[PLX_MAX_RANK], step[PLX_MAX_RANK];
    bool seen[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < x->rank; i++) {
        start[i] = 0;
        step[i] = 1;
        dims[i] = x->dims[i];
    }
    for (uint32_t i = 0; i < d->count; i++) {
        uint32_t axis = 0;
        *bad_entry = i;
        if (!plx_axis_normalize(d->axes[i], x->rank, false, &axis)) {
            return PLX_GEOM_BAD_AXIS;
        }
        if (seen[axis]) {
            return PLX_GEOM_REPEATED_AXIS;
        }
        seen[axis] = true;
        if (!plx_slice_dim(x->dims[axis], d->starts[i], d->ends[i], d->steps[i], &start[axis],
                           &dims[axis])) {
            return PLX_GEOM_ZERO_STEP;
        }
        step[axis] = d->steps[i];
    }
    *bad_entry = 0;
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    *offset = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        *offset += start[i] * xs[i];
        /* two or more elements: |step| < the dim, so the product stays in range */
        strides[i] = dims[i] > 1 ? step[i] * xs[i] : 0;
    }
    return PLX_GEOM_OK;
}

/* ---- broadcasting ---------------------------------------------------------- */

/* numpy's broadcast of shapes a (rank ra) and b (rank rb), aligned at the
 * last dim: per dim the size both share, or the one other than 1. Into
 * *out_rank, max(ra, rb), and that many dims of out (which may be a or b
 * when large enough). PLX_GEOM_BAD_RANK
 * for a rank above PLX_MAX_RANK; PLX_GEOM_NO_BROADCAST where two sizes
 * differ and neither is 1, the output dim at fault in *bad_dim (when not
 * NULL). */
static inline plx_geom_status plx_broadcast_dims(const int64_t *a, uint32_t ra, const int64_t *b,
                                                 uint32_t rb, int64_t *out, uint32_t *out_rank,
                                                 uint32_t *bad_dim) {
    if (ra > PLX_MAX_RANK || rb > PLX_MAX_RANK) {
        return PLX_GEOM_BAD_RANK;
    }
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
            if (bad_dim) {
                *bad_dim = i;
            }
            return PLX_GEOM_NO_BROADCAST;
        }
    }
    for (uint32_t i = 0; i < r; i++) {
        out[i] = dims[i];
    }
    *out_rank = r;
    return PLX_GEOM_OK;
}

/* Whether shape `from` (rank rf) broadcasts to shape `to` (rank rt)
 * without changing it (numpy's unidirectional broadcasting: each of from's
 * dims, aligned at the last, is to's or 1), and when `strides` is not NULL
 * the element strides with which dense `from` is read as `to`: 0 along
 * the dims it is broadcast over and past rt. PLX_GEOM_BAD_RANK when rf >
 * rt or rt > PLX_MAX_RANK; PLX_GEOM_NO_BROADCAST at the first dim of `to`
 * from the last that disagrees, its index in *bad_dim (when not NULL);
 * strides may be partly written on refusal. */
static inline plx_geom_status plx_broadcast_strides(const int64_t *from, uint32_t rf,
                                                    const int64_t *to, uint32_t rt,
                                                    int64_t strides[PLX_MAX_RANK],
                                                    uint32_t *bad_dim) {
    if (rf > rt || rt > PLX_MAX_RANK) {
        return PLX_GEOM_BAD_RANK;
    }
    int64_t s = 1;
    for (uint32_t i = rt; i-- > 0;) {
        int64_t d = i >= rt - rf ? from[i - (rt - rf)] : 1;
        if (d != 1 && d != to[i]) {
            if (bad_dim) {
                *bad_dim = i;
            }
            return PLX_GEOM_NO_BROADCAST;
        }
        if (strides) {
            strides[i] = d == 1 ? 0 : s;
        }
        s *= d;
    }
    for (uint32_t i = rt; strides && i < PLX_MAX_RANK; i++) {
        strides[i] = 0;
    }
    return PLX_GEOM_OK;
}

/* ---- gemm and matmul -------------------------------------------------------- */

/* The geometry of Y = alpha A' B' + beta C (PLX_OP_GEMM): A' is A [M, K]
 * or, transposed, A [K, M]; B' is B [K, N] or [N, K]; the element strides
 * of A' and B' along their rows and columns in dense A and B; and C's
 * strides over [M, N] (0 along the dims it is broadcast over, and both 0
 * without C). */
typedef struct plx_gemm_geom {
    int64_t m, n, k;
    int64_t a_sm, a_sk, b_sk, b_sn;
    int64_t c_sm, c_sn;
    /* On refusal, the values at fault: the ranks of A and B
     * (PLX_GEOM_BAD_RANK), C's rank (PLX_GEOM_BAD_BIAS_RANK, in bad[0]), A's
     * and B's K (PLX_GEOM_K_MISMATCH), C's [rows, cols] as rank 2
     * (PLX_GEOM_NO_BROADCAST). */
    int64_t bad[2];
} plx_gemm_geom;

/* The geometry of a gemm of A and B (both rank 2), transposed as trans_a
 * and trans_b say, with C (NULL: none) of rank 0 to 2 broadcasting to [M,
 * N]. Refuses A or B of another rank (PLX_GEOM_BAD_RANK), C of a rank
 * above 2 (PLX_GEOM_BAD_BIAS_RANK), A' and B' of different K
 * (PLX_GEOM_K_MISMATCH) and C that does not broadcast
 * (PLX_GEOM_NO_BROADCAST), with g->bad set and the rest of g partly
 * written. The output shape [M, N] is the caller's to check. */
static inline plx_geom_status plx_gemm_geom_of(const plx_tensor_info *a, const plx_tensor_info *b,
                                               const plx_tensor_info *c, bool trans_a,
                                               bool trans_b, plx_gemm_geom *g) {
    if (a->rank != 2 || b->rank != 2) {
        g->bad[0] = a->rank;
        g->bad[1] = b->rank;
        return PLX_GEOM_BAD_RANK;
    }
    g->m = trans_a ? a->dims[1] : a->dims[0];
    g->k = trans_a ? a->dims[0] : a->dims[1];
    g->n = trans_b ? b->dims[0] : b->dims[1];
    int64_t kb = trans_b ? b->dims[1] : b->dims[0];
    if (kb != g->k) {
        g->bad[0] = g->k;
        g->bad[1] = kb;
        return PLX_GEOM_K_MISMATCH;
    }
    g->a_sm = trans_a ? 1 : a->dims[1];
    g->a_sk = trans_a ? a->dims[1] : 1;
    g->b_sk = trans_b ? 1 : b->dims[1];
    g->b_sn = trans_b ? b->dims[1] : 1;
    g->c_sm = g->c_sn = 0;
    if (c) {
        int64_t cm = 1, cn = 1;
        if (c->rank == 2) {
            cm = c->dims[0];
            cn = c->dims[1];
        } else if (c->rank == 1) {
            cn = c->dims[0];
        } else if (c->rank != 0) {
            g->bad[0] = c->rank;
            g->bad[1] = 0;
            return PLX_GEOM_BAD_BIAS_RANK;
        }
        if ((cm != 1 && cm != g->m) || (cn != 1 && cn != g->n)) {
            g->bad[0] = cm;
            g->bad[1] = cn;
            return PLX_GEOM_NO_BROADCAST;
        }
        g->c_sn = cn == 1 ? 0 : 1;
        g->c_sm = cm == 1 ? 0 : cn;
    }
    return PLX_GEOM_OK;
}

/* The geometry of numpy's matmul (PLX_OP_MATMUL): the product's M, N and
 * K; the batch dims (all but A's and B's last two, broadcast) and, per
 * batch dim, the element stride of A's and B's matrices in dense A and B
 * (0 where that operand is broadcast over the dim); and the output shape. */
typedef struct plx_matmul_geom {
    int64_t m, n, k;
    uint32_t batch_rank;
    int64_t batch[PLX_MAX_RANK];
    int64_t a_bs[PLX_MAX_RANK], b_bs[PLX_MAX_RANK];
    uint32_t rank; /* the output's */
    int64_t dims[PLX_MAX_RANK];
    /* On refusal, the values at fault: the ranks of A and B
     * (PLX_GEOM_BAD_RANK), A's and B's K (PLX_GEOM_K_MISMATCH), the two
     * batch dims (PLX_GEOM_NO_BROADCAST). */
    int64_t bad[2];
} plx_matmul_geom;

/* The geometry of a matmul of A and B, numpy's way: a 1-D A is [1, K] and
 * a 1-D B is [K, 1], the dim added removed from the output; the batch
 * dims broadcast. Refuses an operand of rank 0 or above PLX_MAX_RANK
 * (PLX_GEOM_BAD_RANK), A and B of different K (PLX_GEOM_K_MISMATCH) and
 * batch dims that do not broadcast (PLX_GEOM_NO_BROADCAST, innermost
 * first), with g->bad set and the rest of g partly written. The output
 * shape is the caller's to check against g->rank and g->dims. */
static inline plx_geom_status plx_matmul_geom_of(const plx_tensor_info *a,
                                                 const plx_tensor_info *b, plx_matmul_geom *g) {
    if (a->rank < 1 || b->rank < 1 || a->rank > PLX_MAX_RANK || b->rank > PLX_MAX_RANK) {
        g->bad[0] = a->rank;
        g->bad[1] = b->rank;
        return PLX_GEOM_BAD_RANK;
    }
    g->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    g->k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    g->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != g->k) {
        g->bad[0] = g->k;
        g->bad[1] = kb;
        return PLX_GEOM_K_MISMATCH;
    }
    uint32_t ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    g->batch_rank = ra > rb ? ra : rb;
    int64_t as = g->m * g->k, bs = g->k * g->n; /* strides, innermost batch dim first */
    for (uint32_t i = g->batch_rank; i-- > 0;) {
        int64_t da = i >= g->batch_rank - ra ? a->dims[i - (g->batch_rank - ra)] : 1;
        int64_t db = i >= g->batch_rank - rb ? b->dims[i - (g->batch_rank - rb)] : 1;
        if (da != db && da != 1 && db != 1) {
            g->bad[0] = da;
            g->bad[1] = db;
            return PLX_GEOM_NO_BROADCAST;
        }
        g->batch[i] = da == 1 ? db : da;
        g->a_bs[i] = da == 1 ? 0 : as;
        g->b_bs[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
    }
    g->rank = g->batch_rank;
    for (uint32_t i = 0; i < g->batch_rank; i++) {
        g->dims[i] = g->batch[i];
    }
    if (a->rank > 1) {
        g->dims[g->rank++] = g->m;
    }
    if (b->rank > 1) {
        g->dims[g->rank++] = g->n;
    }
    return PLX_GEOM_OK;
}

/* ---- resize ------------------------------------------------------------------ */

/* The scale of a resize along one dim of size `in` to size `out`: the
 * descriptor's `scale` when above 0, else out / in (1 for an empty dim).
 * Refuses a scale that is negative, infinite or NaN (PLX_GEOM_BAD_SCALE)
 * and an empty input dim with a non-empty output (PLX_GEOM_EMPTY_INPUT). */
static inline plx_geom_status plx_resize_scale(float scale, int64_t in, int64_t out,
                                               double *out_scale) {
    if (!(scale >= 0.0f && scale <= FLT_MAX)) {
        return PLX_GEOM_BAD_SCALE;
    }
    if (in == 0 && out != 0) {
        return PLX_GEOM_EMPTY_INPUT;
    }
    *out_scale = scale > 0.0f ? (double)scale : in ? (double)out / (double)in : 1.0;
    return PLX_GEOM_OK;
}

/* A 2-D (NCHW) resize: the N*C planes, and per spatial dim (H, W) the
 * input and output sizes and plx_resize_scale's scale. */
typedef struct plx_resize_geom {
    int64_t nc;
    int64_t in[2], out[2];
    double scale[2];
} plx_resize_geom;

/* The geometry of resize from x to y, both rank 4 (NCHW) with the same N
 * and C, as the host validates a resize layer (docs/backend-abi.md), with
 * the descriptor's `scales`. Refuses another rank or other N, C
 * (PLX_GEOM_BAD_RANK) and what plx_resize_scale refuses, with *bad_dim
 * (when not NULL) set to the spatial dim, 0 (H) or 1 (W); g is partly
 * written then. */
static inline plx_geom_status plx_resize_geom_of(const plx_tensor_info *x,
                                                 const plx_tensor_info *y,
                                                 const float scales[2], plx_resize_geom *g,
                                                 int *bad_dim) {
    if (x->rank != 4 || y->rank != 4 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return PLX_GEOM_BAD_RANK;
    }
    g->nc = x->dims[0] * x->dims[1];
    for (int i = 0; i < 2; i++) {
        g->in[i] = x->dims[2 + i];
        g->out[i] = y->dims[2 + i];
        plx_geom_status s = plx_resize_scale(scales[i], g->in[i], g->out[i], &g->scale[i]);
        if (s != PLX_GEOM_OK) {
            if (bad_dim) {
                *bad_dim = i;
            }
            return s;
        }
    }
    return PLX_GEOM_OK;
}

/* The input coordinate of output coordinate x along a dim of size `in`
 * (1 to 2^52) resized by `scale` (plx_resize_scale's), as ONNX's reference
 * computes it (in double), bounded to [-2, in + 1] (NaN to -2) so that it
 * converts to an integer safely: plx_resize_nearest_index and
 * plx_resize_linear_taps clamp to the input anyway (edge padding). Like
 * the reference, align_corners and pytorch_half_pixel use the scaled
 * length scale * in, which equals the output size unless explicit scales
 * do not divide it. A mode outside plx_resize_coord is taken as
 * half_pixel, and so are half_pixel_symmetric and tf_crop_and_resize (ABI
 * 1.3), which need the output size and the roi that this helper does
 * not take: a backend that calls it refuses those two (cpu_ref computes
 * them in kernels/kernels_resize.c). */
static inline double plx_resize_coordinate(plx_resize_coord mode, int64_t x, double scale,
                                           int64_t in) {
    double out_len = scale * (double)in, xd = (double)x, c;
    switch (mode) {
    case PLX_RESIZE_COORD_ASYMMETRIC:
        c = xd / scale;
        break;
    case PLX_RESIZE_COORD_ALIGN_CORNERS:
        c = out_len == 1.0 ? 0.0 : xd * (double)(in - 1) / (out_len - 1.0);
        break;
    case PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL:
        c = out_len == 1.0 ? -0.5 : (xd + 0.5) / scale - 0.5;
        break;
    case PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN:
        c = (xd + 0.5) / scale;
        break;
    case PLX_RESIZE_COORD_HALF_PIXEL:
    default:
        c = (xd + 0.5) / scale - 0.5;
        break;
    }
    if (!(c > -2.0)) { /* also NaN */
        return -2.0;
    }
    return c > (double)in + 1.0 ? (double)in + 1.0 : c;
}

/* Internal to this header: floor of a coordinate plx_resize_coordinate
 * bounded (exact: its magnitude is below 2^53). */
static inline int64_t plx_resize_floor_(double c) {
    int64_t i = (int64_t)c;
    return (double)i > c ? i - 1 : i;
}

static inline int64_t plx_resize_clamp_(int64_t i, int64_t in) {
    return i < 0 ? 0 : i > in - 1 ? in - 1 : i;
}

/* The input index nearest resize takes for coordinate c (from
 * plx_resize_coordinate) along a dim of size `in`, by ONNX's rules: an
 * integer coordinate is itself; otherwise the fraction picks floor or
 * floor + 1 (round_prefer_floor rounds .5 down, round_prefer_ceil up;
 * floor and ceil as named; a mode outside plx_resize_nearest as
 * round_prefer_floor). Clamped to [0, in - 1]. */
static inline int64_t plx_resize_nearest_index(plx_resize_nearest mode, double c, int64_t in) {
    int64_t i = plx_resize_floor_(c);
    double r = c - (double)i;
    if (r != 0.0) {
        bool up;
        switch (mode) {
        case PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL: up = r >= 0.5; break;
        case PLX_RESIZE_NEAREST_FLOOR: up = false; break;
        case PLX_RESIZE_NEAREST_CEIL: up = true; break;
        case PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR:
        default: up = r > 0.5; break;
        }
        i += up;
    }
    return plx_resize_clamp_(i, in);
}

/* The two taps linear resize interpolates between for coordinate c (from
 * plx_resize_coordinate) along a dim of size `in`: floor(c) and floor(c) +
 * 1, each clamped to [0, in - 1]; returns the weight of the second, c -
 * floor(c). */
static inline double plx_resize_linear_taps(double c, int64_t in, int64_t *lo, int64_t *hi) {
    int64_t f = plx_resize_floor_(c);
    *lo = plx_resize_clamp_(f, in);
    *hi = plx_resize_clamp_(f + 1, in);
    return c - (double)f;
}

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_GEOMETRY_H */
