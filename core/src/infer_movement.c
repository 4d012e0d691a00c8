/* Shape inference of data movement: reshape, transpose, concat, split,
 * slice, pad, squeeze, gather, expand, tile, depth/space, resize,
 * grid_sample, roi_align, gather_elements, scatter_elements, scatter_nd and gather_nd. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <plexus/geometry.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------ */
/* Data movement                                                            */

/* Output with the input's dtype, given dims, and per-tensor quantization passed through. */
static void moved_output(plx_tensor_info *o, const plx_tensor_info *x, const int64_t *dims,
                         uint32_t rank) {
    plxi_info_init(o, x->dtype, rank);
    plxi_info_set_dims(o, dims, rank);
    o->quant = plxi_moved_quant(x);
}

static plx_status plxi_infer_reshape(const layer_ctx *c) {
    const plx_reshape_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->rank > PLX_MAX_RANK) {
        return plxi_fail(c, "rank %" PRIu32 " is more than %d", d->rank, PLX_MAX_RANK);
    }
    plx_tensor_info want;
    plxi_info_init(&want, x->dtype, 0);
    plxi_info_set_dims(&want, d->dims, d->rank);
    int64_t dims[PLX_MAX_RANK];
    int64_t known = 1, count;
    int32_t infer_at = -1;
    bool has_zero = false;
    if (!plxi_dims_product(x->dims, 0, x->rank, &count)) {
        return plxi_fail(c, "the element count of X %s overflows", SHP(x));
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        int64_t v = d->dims[i];
        if (v < -1) {
            return plxi_fail(c, "dims[%" PRIu32 "] = " I64 " must be >= -1", i, v);
        }
        if (v == -1) {
            if (infer_at >= 0) {
                return plxi_fail(c, "dims %s has more than one -1", SHP(&want));
            }
            infer_at = (int32_t)i;
            continue;
        }
        if (v == 0 && !d->allow_zero) {
            if (i >= x->rank) {
                return plxi_fail(c,
                                 "dims[%" PRIu32 "] = 0 copies a dim of X %s, which has rank %" PRIu32,
                                 i, SHP(x), x->rank);
            }
            v = x->dims[i];
        }
        has_zero = has_zero || v == 0;
        dims[i] = v;
        if (!plxi_mul_nonneg(known, v, &known)) {
            return plxi_fail(c, "dims %s overflow the element count", SHP(&want));
        }
    }
    if (infer_at >= 0) {
        if (d->allow_zero && has_zero) {
            return plxi_fail(c, "dims %s has both -1 and 0 with allow_zero", SHP(&want));
        }
        if (known == 0 || count % known != 0) {
            return plxi_fail(c, "cannot infer the -1 of dims %s from X %s (" I64 " elements)",
                             SHP(&want), SHP(x), count);
        }
        dims[infer_at] = count / known;
    } else if (known != count) {
        plx_tensor_info got;
        plxi_info_init(&got, x->dtype, 0);
        plxi_info_set_dims(&got, dims, d->rank);
        return plxi_fail(c, "X %s has " I64 " elements, dims %s (%s) have " I64, SHP(x), count,
                         SHP(&want), SHP(&got), known);
    }
    moved_output(c->out, x, dims, d->rank);
    return NULL;
}

static plx_status plxi_infer_flatten(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s = plxi_check_axis(c, "axis", d->axis, 0, true, &axis);
    if (s) {
        return s;
    }
    int64_t dims[2];
    if (!plxi_dims_product(x->dims, 0, axis, &dims[0]) ||
        !plxi_dims_product(x->dims, axis, x->rank, &dims[1])) {
        return plxi_fail(c, "flattened dims of X %s overflow", SHP(x));
    }
    moved_output(c->out, x, dims, 2);
    return NULL;
}

static plx_status plxi_infer_transpose(const layer_ctx *c) {
    const plx_transpose_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    int64_t dims[PLX_MAX_RANK];
    if (d->perm_count == 0) {
        for (uint32_t i = 0; i < x->rank; i++) {
            dims[i] = x->dims[x->rank - 1 - i];
        }
    } else {
        if (d->perm_count != x->rank) {
            return plxi_fail(c, "perm has %" PRIu32 " entries, X %s has rank %" PRIu32,
                             d->perm_count,
                             SHP(x), x->rank);
        }
        bool seen[PLX_MAX_RANK] = {false};
        for (uint32_t i = 0; i < x->rank; i++) {
            uint32_t p = d->perm[i];
            if (p >= x->rank || seen[p]) {
                return plxi_fail(c,
                                 "perm[%" PRIu32 "] = %" PRIu32 ": perm must be a permutation of 0..%"
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

static plx_status plxi_infer_concat(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0;
    plx_status s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis);
    if (s) {
        return s;
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    bool quant = x->quant.kind == PLX_QUANT_PER_TENSOR;
    /* 8-bit inputs with per-tensor parameters and an output whose 8-bit
     * dtype and parameters the builder set: a concat on quantized tensors
     * (plexus/ops.h), each input requantized into Y's, dtypes mixed */
    plx_tensor_info y = *c->out;
    bool requant = plxi_dtype_in(y.dtype, DT_Q8) && y.quant.kind == PLX_QUANT_PER_TENSOR;
    for (uint32_t i = 0; requant && i < c->n_in; i++) {
        requant = plxi_dtype_in(c->in[i].dtype, DT_Q8) &&
                  c->in[i].quant.kind == PLX_QUANT_PER_TENSOR;
    }
    for (uint32_t i = 1; i < c->n_in; i++) {
        const plx_tensor_info *t = &c->in[i];
        if (!requant && (s = plxi_check_same_dtype(c, i, 0))) {
            return s;
        }
        bool ok = t->rank == x->rank;
        for (uint32_t k = 0; ok && k < x->rank; k++) {
            ok = k == axis || t->dims[k] == x->dims[k];
        }
        if (!ok) {
            return plxi_fail(c, "%s %s differs from input 0 %s outside axis %" PRIu32, ROLE(c, i),
                             SHP(t), SHP(x), axis);
        }
        if (!plxi_add_i64(dims[axis], t->dims[axis], &dims[axis])) {
            return plxi_fail(c, "the concatenated axis %" PRIu32 " overflows", axis);
        }
        quant = quant && same_quant(&x->quant, &t->quant);
    }
    plxi_info_init(c->out, requant ? y.dtype : x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    if (requant || quant) {
        c->out->quant = plxi_moved_quant(requant ? &y : x);
    }
    return NULL;
}

static plx_status plxi_infer_split(const layer_ctx *c) {
    const plx_split_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    uint32_t axis = 0, n = c->n_out;
    plx_status s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis);
    if (s) {
        return s;
    }
    int64_t size = x->dims[axis], chunk = 0, last = 0;
    if (d->sizes) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (d->sizes[i] < 0) {
                return plxi_fail(c, "sizes[%" PRIu32 "] = " I64 " must be >= 0", i, d->sizes[i]);
            }
            if (!plxi_add_i64(sum, d->sizes[i], &sum)) {
                return plxi_fail(c, "sizes overflow when summed");
            }
        }
        if (sum != size) {
            return plxi_fail(c, "sizes sum to " I64 ", but axis %" PRIu32 " of X %s has size " I64,
                             sum,
                             axis, SHP(x), size);
        }
    } else {
        /* ONNX opset 18 num_outputs: ceil(size / n) each, the last smaller. */
        chunk = size / n + (size % n != 0);
        last = size - chunk * (int64_t)(n - 1); /* chunk * (n-1) <= size + n: no overflow */
        if (last < 0) {
            return plxi_fail(c,
                             "axis %" PRIu32 " of X %s (size " I64 ") cannot be split into %" PRIu32
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

static plx_status plxi_infer_slice(const layer_ctx *c) {
    const plx_slice_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    int64_t dims[PLX_MAX_RANK], strides[PLX_MAX_RANK], offset = 0;
    uint32_t i = 0, a = 0;
    switch (plx_slice_plan(x, d, dims, strides, &offset, &i)) {
    case PLX_GEOM_OK:
        break;
    case PLX_GEOM_BAD_COUNT:
        return plxi_fail(c, "count %" PRIu32 " is more than %d", d->count, PLX_MAX_RANK);
    case PLX_GEOM_BAD_AXIS: {
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        return plxi_check_axis(c, field, d->axes[i], 0, false, &a);
    }
    case PLX_GEOM_REPEATED_AXIS:
        plx_axis_normalize(d->axes[i], x->rank, false, &a);
        return plxi_fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i,
                         d->axes[i], a);
    case PLX_GEOM_ZERO_STEP:
    default:
        return plxi_fail(c, "steps[%" PRIu32 "] is 0", i);
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status plxi_infer_pad(const layer_ctx *c) {
    const plx_pad_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if ((unsigned)d->mode > PLX_PAD_WRAP) {
        return plxi_fail(c, "mode %d is not a plx_pad_mode", (int)d->mode);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i], in = x->dims[i], o;
        if (!plxi_add_i64(in, pb, &o) || !plxi_add_i64(o, pe, &o)) {
            return plxi_fail(c, "padded dim %" PRIu32 " overflows", i);
        }
        if (o < 0) {
            return plxi_fail(c, "pads " I64 " and " I64 " crop dim %" PRIu32 " of X %s below 0",
                             pb, pe, i,
                             SHP(x));
        }
        if (d->mode == PLX_PAD_REFLECT && (pb >= in || pe >= in) && (pb > 0 || pe > 0)) {
            return plxi_fail(c, "reflect pads " I64 " and " I64 " must be smaller than dim %" PRIu32
                             " of X %s", pb, pe, i, SHP(x));
        }
        if (d->mode == PLX_PAD_EDGE && in == 0 && (pb > 0 || pe > 0)) {
            return plxi_fail(c, "edge padding of the empty dim %" PRIu32 " of X %s", i, SHP(x));
        }
        if (d->mode == PLX_PAD_WRAP && (pb < 0 || pe < 0)) {
            return plxi_fail(c, "wrap pads " I64 " and " I64 " of dim %" PRIu32 " must be >= 0",
                             pb, pe, i);
        }
        if (d->mode == PLX_PAD_WRAP && in == 0 && (pb > 0 || pe > 0)) {
            return plxi_fail(c, "wrap padding of the empty dim %" PRIu32 " of X %s", i, SHP(x));
        }
        dims[i] = o;
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status plxi_infer_squeeze(const layer_ctx *c) {
    const plx_axes_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->axis_count > PLX_MAX_RANK) {
        return plxi_fail(c, "axis_count %" PRIu32 " is more than %d", d->axis_count, PLX_MAX_RANK);
    }
    bool drop[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        char field[24];
        snprintf(field, sizeof field, "axes[%" PRIu32 "]", i);
        plx_status s = plxi_check_axis(c, field, d->axes[i], 0, false, &a);
        if (s) {
            return s;
        }
        if (drop[a]) {
            return plxi_fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i,
                             d->axes[i], a);
        }
        if (x->dims[a] != 1) {
            return plxi_fail(c, "axis %" PRIu32 " of X %s has size " I64 ", not 1", a, SHP(x),
                             x->dims[a]);
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

static plx_status plxi_infer_unsqueeze(const layer_ctx *c) {
    const plx_axes_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->axis_count == 0) {
        return plxi_fail(c, "axis_count is 0: unsqueeze needs at least one axis");
    }
    if (d->axis_count > PLX_MAX_RANK || x->rank + d->axis_count > PLX_MAX_RANK) {
        return plxi_fail(c, "X %s with %" PRIu32 " more axes would exceed rank %d", SHP(x),
                         d->axis_count, PLX_MAX_RANK);
    }
    uint32_t r = x->rank + d->axis_count;
    bool add[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < d->axis_count; i++) {
        uint32_t a = 0;
        if (!plx_axis_normalize(d->axes[i], r, false, &a)) {
            return plxi_fail(c,
                             "axes[%" PRIu32 "] = %" PRId32 " is out of range [-%" PRIu32 ", %" PRIu32
                             ") for the output rank %" PRIu32, i, d->axes[i], r, r, r);
        }
        if (add[a]) {
            return plxi_fail(c, "axes[%" PRIu32 "] = %" PRId32 " repeats axis %" PRIu32, i,
                             d->axes[i], a);
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

static plx_status plxi_infer_gather(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    uint32_t axis = 0;
    plx_status s;
    /* ABI 1.3: 8-bit indices too (a 256-entry table looked up by the raw
     * bytes of an int8 or uint8 tensor; int8's negative values count from
     * the end like any negative index) */
    if ((s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64) | DT(INT8) | DT(UINT8), NULL)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    uint32_t r = x->rank - 1 + idx->rank;
    if (r > PLX_MAX_RANK) {
        return plxi_fail(c, "the output rank %" PRIu32 " of data %s and indices %s exceeds %d", r,
                         SHP(x), SHP(idx), PLX_MAX_RANK);
    }
    if (x->dims[axis] == 0) {
        size_t n;
        if (plx_tensor_info_element_count(idx, &n) && n > 0) {
            return plxi_fail(c, "indices %s index the empty axis %" PRIu32 " of data %s", SHP(idx),
                             axis,
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

static plx_status plxi_infer_expand(const layer_ctx *c) {
    const plx_shape_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    if (d->rank > PLX_MAX_RANK) {
        return plxi_fail(c, "rank %" PRIu32 " is more than %d", d->rank, PLX_MAX_RANK);
    }
    plx_tensor_info want;
    plxi_info_init(&want, x->dtype, 0);
    plxi_info_set_dims(&want, d->dims, d->rank);
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->dims[i] < 0) {
            return plxi_fail(c, "dims[%" PRIu32 "] = " I64 " must be >= 0", i, d->dims[i]);
        }
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r;
    if (!plxi_broadcast(x->dims, x->rank, d->dims, d->rank, dims, &r)) {
        return plxi_fail(c, "X %s does not broadcast with the shape %s", SHP(x), SHP(&want));
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

/* ONNX Tile: repeats[i] copies of X along each dim i. */
static plx_status plxi_infer_tile(const layer_ctx *c) {
    const plx_tile_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        int64_t rep = d->repeats[i];
        if (i >= x->rank) {
            /* ONNX wants exactly one entry per dim: one past the rank that
             * is not the default 1 was meant for a tensor of another rank. */
            if (rep != 1) {
                return plxi_fail(c, "repeats[%" PRIu32 "] = " I64 " is past the rank %" PRIu32
                                 " of X %s: repeats has one entry per dim of X, the rest stay 1",
                                 i, rep, x->rank, SHP(x));
            }
            continue;
        }
        if (rep < 0) {
            return plxi_fail(c, "repeats[%" PRIu32 "] = " I64 " must be >= 0", i, rep);
        }
        if (!plxi_mul_nonneg(x->dims[i], rep, &dims[i])) {
            return plxi_fail(c,
                             "dim %" PRIu32 " of X %s times repeats[%" PRIu32 "] = " I64 " overflows",
                             i, SHP(x), i, rep);
        }
    }
    moved_output(c->out, x, dims, x->rank);
    return NULL;
}

static plx_status plxi_infer_depth_space(const layer_ctx *c) {
    const plx_depth_space_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    bool to_space = c->op == PLX_OP_DEPTH_TO_SPACE;
    plx_status s;
    if ((unsigned)d->mode > PLX_DEPTH_SPACE_CRD) {
        return plxi_fail(c, "mode %d is not a plx_depth_space_mode", (int)d->mode);
    }
    if (!to_space && d->mode != PLX_DEPTH_SPACE_DCR) {
        return plxi_fail(c, "mode CRD applies to depth_to_space only");
    }
    if (d->block_size < 1) {
        return plxi_fail(c, "block_size " I64 " must be >= 1", d->block_size);
    }
    if ((s = plxi_check_rank(c, 0, 4, 4))) {
        return s;
    }
    int64_t b = d->block_size, bb;
    int64_t dims[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    if (!plxi_mul_nonneg(b, b, &bb)) {
        return plxi_fail(c, "block_size " I64 " squared overflows", b);
    }
    if (to_space) {
        if (dims[1] % bb != 0) {
            return plxi_fail(c, "X %s has " I64 " channels, not divisible by block_size^2 = " I64,
                             SHP(x),
                             dims[1], bb);
        }
        dims[1] /= bb;
        if (!plxi_mul_nonneg(dims[2], b, &dims[2]) || !plxi_mul_nonneg(dims[3], b, &dims[3])) {
            return plxi_fail(c, "output dims of X %s with block_size " I64 " overflow", SHP(x), b);
        }
    } else {
        if (dims[2] % b != 0 || dims[3] % b != 0) {
            return plxi_fail(c, "X %s has H and W not divisible by block_size " I64, SHP(x), b);
        }
        dims[2] /= b;
        dims[3] /= b;
        if (!plxi_mul_nonneg(dims[1], bb, &dims[1])) {
            return plxi_fail(c, "output dims of X %s with block_size " I64 " overflow", SHP(x), b);
        }
    }
    moved_output(c->out, x, dims, 4);
    return NULL;
}

/* Resize: sizes give Y's H and W when set, else floor(in * scales); both
 * may be set (scales then only map coordinates). The 1.3 fields are
 * checked where their mode or coordinate transformation reads them. */
static plx_status plxi_infer_resize(const layer_ctx *c) {
    const plx_resize_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((unsigned)d->mode > PLX_RESIZE_CUBIC_ANTIALIAS) {
        return plxi_fail(c, "mode %d is not a plx_resize_mode", (int)d->mode);
    }
    if ((unsigned)d->coord > PLX_RESIZE_COORD_TF_CROP_AND_RESIZE) {
        return plxi_fail(c, "coord %d is not a plx_resize_coord", (int)d->coord);
    }
    if ((unsigned)d->nearest > PLX_RESIZE_NEAREST_CEIL) {
        return plxi_fail(c, "nearest %d is not a plx_resize_nearest", (int)d->nearest);
    }
    bool cubic = d->mode == PLX_RESIZE_CUBIC || d->mode == PLX_RESIZE_CUBIC_ANTIALIAS;
    if (cubic && !isfinite(d->cubic_coeff_a)) {
        return plxi_fail(c, "cubic_coeff_a %g must be finite", (double)d->cubic_coeff_a);
    }
    if (d->coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE) {
        for (uint32_t i = 0; i < 2; i++) {
            if (!isfinite(d->roi_start[i]) || !isfinite(d->roi_end[i])) {
                return plxi_fail(c, "roi of dim %" PRIu32 " [%g, %g] must be finite", 2 + i,
                                 (double)d->roi_start[i], (double)d->roi_end[i]);
            }
        }
    }
    /* nearest moves values: it also takes 8-bit tensors, and keeps their
     * per-tensor quantization */
    bool nearest = d->mode == PLX_RESIZE_NEAREST;
    if ((s = plxi_check_dtype(c, 0, nearest ? DT_FLOAT | DT(INT8) | DT(UINT8) : DT_FLOAT,
                              NULL)) ||
        (s = plxi_check_rank(c, 0, 4, 4))) {
        return s;
    }
    bool sizes = d->sizes[0] != 0 || d->sizes[1] != 0;
    bool scales = d->scales[0] != 0.0f || d->scales[1] != 0.0f;
    if (!sizes && !scales) {
        return plxi_fail(c, "give sizes or scales");
    }
    int64_t dims[4] = {x->dims[0], x->dims[1], 0, 0};
    for (uint32_t i = 0; i < 2; i++) {
        float sc = d->scales[i];
        if (scales && (!(sc > 0.0f) || !isfinite(sc))) {
            return plxi_fail(c, "scales[%" PRIu32 "] = %g must be finite and > 0", i, (double)sc);
        }
        if (sizes) {
            if (d->sizes[i] < 1) {
                return plxi_fail(c, "sizes[%" PRIu32 "] = " I64 " must be >= 1", i, d->sizes[i]);
            }
            dims[2 + i] = d->sizes[i];
            continue;
        }
        /* ONNX: floor(in * scale), computed in double like its reference. */
        double o = (double)x->dims[2 + i] * (double)sc;
        if (!(o < 9.2e18)) {
            return plxi_fail(c, "output dim %" PRIu32 " of X %s times %g overflows", 2 + i, SHP(x),
                             (double)sc);
        }
        dims[2 + i] = (int64_t)o; /* o >= 0: truncation is floor */
    }
    plxi_info_init(c->out, x->dtype, 4);
    plxi_info_set_dims(c->out, dims, 4);
    if (nearest) {
        c->out->quant = plxi_moved_quant(x);
    }
    return NULL;
}

/* ONNX GridSample: X [N, C, D1..Dr] (r >= 1) and grid [N, O1..Or, r], both
 * of float types (each its own); Y [N, C, O1..Or] of X's dtype, without
 * X's quantization (an interpolated value is not a moved one). */
static plx_status plxi_infer_grid_sample(const layer_ctx *c) {
    const plx_grid_sample_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *g = &c->in[1];
    plx_status s;
    if ((unsigned)d->mode > PLX_GRID_SAMPLE_CUBIC) {
        return plxi_fail(c, "mode %d is not a plx_grid_sample_mode", (int)d->mode);
    }
    if ((unsigned)d->padding > PLX_GRID_SAMPLE_REFLECTION) {
        return plxi_fail(c, "padding %d is not a plx_grid_sample_padding", (int)d->padding);
    }
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_dtype(c, 1, DT_FLOAT, NULL)) ||
        (s = plxi_check_rank(c, 0, 3, PLX_MAX_RANK))) {
        return s;
    }
    uint32_t r = x->rank - 2;
    if (g->rank != x->rank || g->dims[0] != x->dims[0] || g->dims[g->rank - 1] != (int64_t)r) {
        return plxi_fail(c, "grid %s must be [N, O1, .., O%" PRIu32 ", %" PRIu32 "] for X %s "
                         "(N = " I64 ")", SHP(g), r, r, SHP(x), x->dims[0]);
    }
    int64_t dims[PLX_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (uint32_t i = 0; i < r; i++) {
        dims[2 + i] = g->dims[1 + i];
    }
    int64_t n;
    if (!plxi_dims_product(dims, 0, x->rank, &n)) {
        return plxi_fail(c, "Y of X %s and grid %s has too many elements", SHP(x), SHP(g));
    }
    plxi_info_init(c->out, x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    return NULL;
}

/* ONNX ReverseSequence: X (rank >= 2, any dtype) and sequence_lens
 * [X.dims[batch_axis]] (int32 or int64); batch_axis and time_axis are 0
 * and 1 in either order. Y is X's tensor, quantization included. */
static plx_status plxi_infer_reverse_sequence(const layer_ctx *c) {
    const plx_reverse_sequence_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *len = &c->in[1];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_ANY, NULL)) || (s = plxi_check_rank(c, 0, 2, PLX_MAX_RANK)) ||
        (s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64), NULL))) {
        return s;
    }
    if (!((d->batch_axis == 0 && d->time_axis == 1) || (d->batch_axis == 1 && d->time_axis == 0))) {
        return plxi_fail(c, "batch_axis %" PRId32 " and time_axis %" PRId32 " must be 0 and 1 "
                         "in either order", d->batch_axis, d->time_axis);
    }
    if (len->rank != 1 || len->dims[0] != x->dims[d->batch_axis]) {
        return plxi_fail(c, "sequence_lens %s must be [" I64 "] (X %s along batch_axis %" PRId32
                         ")", SHP(len), x->dims[d->batch_axis], SHP(x), d->batch_axis);
    }
    *c->out = *x;
    c->out->quant = plxi_moved_quant(x);
    return NULL;
}

/* ONNX RoiAlign: X [N, C, H, W] of a float type, rois [R, 4] of X's type,
 * batch_indices [R] int32 or int64; Y [R, C, output_height, output_width]
 * of X's dtype, without X's quantization. */
static plx_status plxi_infer_roi_align(const layer_ctx *c) {
    const plx_roi_align_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *rois = &c->in[1], *bi = &c->in[2];
    plx_status s;
    if ((unsigned)d->mode > PLX_ROI_ALIGN_MAX) {
        return plxi_fail(c, "mode %d is not a plx_roi_align_mode", (int)d->mode);
    }
    if (d->output_height < 1 || d->output_width < 1) {
        return plxi_fail(c, "output_height " I64 " and output_width " I64 " must be >= 1",
                         d->output_height, d->output_width);
    }
    if (d->sampling_ratio < 0) {
        return plxi_fail(c, "sampling_ratio " I64 " must be >= 0 (0: adaptive)",
                         d->sampling_ratio);
    }
    if (!isfinite(d->spatial_scale)) {
        return plxi_fail(c, "spatial_scale %g must be finite", (double)d->spatial_scale);
    }
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 4, 4)) ||
        (s = plxi_check_same_dtype(c, 1, 0)) ||
        (s = plxi_check_dtype(c, 2, DT(INT32) | DT(INT64), NULL))) {
        return s;
    }
    if (rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
        bi->dims[0] != rois->dims[0]) {
        return plxi_fail(c, "rois %s and batch_indices %s must be [R, 4] and [R]", SHP(rois),
                         SHP(bi));
    }
    int64_t dims[4] = {rois->dims[0], x->dims[1], d->output_height, d->output_width}, n;
    if (!plxi_dims_product(dims, 0, 4, &n)) {
        return plxi_fail(c, "Y [" I64 ", " I64 ", " I64 ", " I64 "] has too many elements",
                         dims[0], dims[1], dims[2], dims[3]);
    }
    plxi_info_init(c->out, x->dtype, 4);
    plxi_info_set_dims(c->out, dims, 4);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operator table's rows (infer_internal.h, PLXI_OP_ROW)                */

PLXI_OP_ROW(RESHAPE, 1, 1, 1, 1, ROLES("X"), plxi_infer_reshape);
PLXI_OP_ROW(FLATTEN, 1, 1, 1, 1, ROLES("X"), plxi_infer_flatten);
PLXI_OP_ROW(TRANSPOSE, 1, 1, 1, 1, ROLES("X"), plxi_infer_transpose);
PLXI_OP_ROW(CONCAT, 1, ANY, 1, 1, NO_ROLES, plxi_infer_concat);
PLXI_OP_ROW(SPLIT, 1, 1, 1, ANY, ROLES("X"), plxi_infer_split);
PLXI_OP_ROW(SLICE, 1, 1, 1, 1, ROLES("X"), plxi_infer_slice);
PLXI_OP_ROW(PAD, 1, 1, 1, 1, ROLES("X"), plxi_infer_pad);
PLXI_OP_ROW(SQUEEZE, 1, 1, 1, 1, ROLES("X"), plxi_infer_squeeze);
PLXI_OP_ROW(UNSQUEEZE, 1, 1, 1, 1, ROLES("X"), plxi_infer_unsqueeze);
PLXI_OP_ROW(GATHER, 2, 2, 1, 1, ROLES("data", "indices"), plxi_infer_gather);
PLXI_OP_ROW(EXPAND, 1, 1, 1, 1, ROLES("X"), plxi_infer_expand);
PLXI_OP_ROW(TILE, 1, 1, 1, 1, ROLES("X"), plxi_infer_tile);
PLXI_OP_ROW(DEPTH_TO_SPACE, 1, 1, 1, 1, ROLES("X"), plxi_infer_depth_space);
PLXI_OP_ROW(SPACE_TO_DEPTH, 1, 1, 1, 1, ROLES("X"), plxi_infer_depth_space);
PLXI_OP_ROW(RESIZE, 1, 1, 1, 1, ROLES("X"), plxi_infer_resize);
PLXI_OP_ROW(GRID_SAMPLE, 2, 2, 1, 1, ROLES("X", "grid"), plxi_infer_grid_sample);
PLXI_OP_ROW(ROI_ALIGN, 3, 3, 1, 1, ROLES("X", "rois", "batch_indices"), plxi_infer_roi_align);

/* ------------------------------------------------------------------------ */
/* Indexing by tensors: gather_elements, scatter_elements, scatter_nd,      */
/* gather_nd                                                                */

/* indices of data's rank, each dim but `axis` at most data's, and no index
 * into an empty axis (gather_elements, scatter_elements). */
static plx_status check_elements_indices(const layer_ctx *c, uint32_t axis) {
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    if (idx->rank != x->rank) {
        return plxi_fail(c, "indices %s must have the rank of data %s (%" PRIu32 ")", SHP(idx),
                         SHP(x), x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != axis && idx->dims[i] > x->dims[i]) {
            return plxi_fail(c, "indices %s is larger than data %s in dim %" PRIu32
                             " (only axis %" PRIu32 " may be)", SHP(idx), SHP(x), i, axis);
        }
    }
    size_t n;
    if (x->dims[axis] == 0 && plx_tensor_info_element_count(idx, &n) && n > 0) {
        return plxi_fail(c, "indices %s index the empty axis %" PRIu32 " of data %s", SHP(idx),
                         axis, SHP(x));
    }
    return NULL;
}

static plx_status check_reduction(const layer_ctx *c, plx_scatter_reduction r) {
    if (!plx_scatter_reduction_name(r)) {
        return plxi_fail(c, "reduction %d is not a plx_scatter_reduction", (int)r);
    }
    return NULL;
}

/* Scatter outputs keep data's per-tensor quantization when the updates
 * have the same and the reduction only selects values (none, max, min). */
static void scatter_output(const layer_ctx *c, plx_scatter_reduction r) {
    const plx_tensor_info *x = &c->in[0], *u = &c->in[2];
    plxi_info_init(c->out, x->dtype, x->rank);
    plxi_info_set_dims(c->out, x->dims, x->rank);
    if ((r == PLX_SCATTER_NONE || r == PLX_SCATTER_MAX || r == PLX_SCATTER_MIN) &&
        same_quant(&x->quant, &u->quant)) {
        c->out->quant = plxi_moved_quant(x);
    }
}

static plx_status plxi_infer_gather_elements(const layer_ctx *c) {
    const plx_axis_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    uint32_t axis = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64), NULL)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis)) ||
        (s = check_elements_indices(c, axis))) {
        return s;
    }
    moved_output(c->out, x, idx->dims, idx->rank);
    return NULL;
}

static plx_status plxi_infer_scatter_elements(const layer_ctx *c) {
    const plx_scatter_desc *d = c->desc;
    const plx_tensor_info *idx = &c->in[1], *u = &c->in[2];
    uint32_t axis = 0;
    plx_status s;
    if ((s = check_reduction(c, d->reduction)) ||
        (s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64), NULL)) ||
        (s = plxi_check_same_dtype(c, 2, 0)) ||
        (s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    bool same = u->rank == idx->rank;
    for (uint32_t i = 0; same && i < idx->rank; i++) {
        same = u->dims[i] == idx->dims[i];
    }
    if (!same) {
        return plxi_fail(c, "updates %s must have the shape of indices %s", SHP(u), SHP(idx));
    }
    if ((s = check_elements_indices(c, axis))) {
        return s;
    }
    scatter_output(c, d->reduction);
    return NULL;
}

/* The index tuples of an ND gather or scatter: indices [..., k] into data's
 * dims from..from+k-1 (k from kmin to data's rank minus from), none into an
 * empty dim. Sets *k. */
static plx_status check_nd_indices(const layer_ctx *c, uint32_t from, int64_t kmin,
                                   uint32_t *k) {
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    int64_t last = idx->dims[idx->rank - 1], kmax = (int64_t)(x->rank - from);
    if (last < kmin || last > kmax) {
        return plxi_fail(c, "the last dim of indices %s is " I64 "; it must be " I64 " to " I64
                         " (the rank of data %s%s)", SHP(idx), last, kmin, kmax, SHP(x),
                         from ? " minus batch_dims" : "");
    }
    *k = (uint32_t)last;
    int64_t tuples;
    if (!plxi_dims_product(idx->dims, 0, idx->rank - 1, &tuples)) {
        return plxi_fail(c, "the element count of indices %s overflows", SHP(idx));
    }
    for (uint32_t j = 0; j < *k && tuples > 0; j++) {
        if (x->dims[from + j] == 0) {
            return plxi_fail(c, "indices %s index the empty dim %" PRIu32 " of data %s", SHP(idx),
                             from + j, SHP(x));
        }
    }
    return NULL;
}

static plx_status plxi_infer_scatter_nd(const layer_ctx *c) {
    const plx_scatter_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1], *u = &c->in[2];
    uint32_t k = 0;
    plx_status s;
    if ((s = check_reduction(c, d->reduction))) {
        return s;
    }
    if (d->axis != 0) {
        return plxi_fail(c, "axis %" PRId32 " must be 0: scatter_nd has no axis", d->axis);
    }
    if ((s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64), NULL)) ||
        (s = plxi_check_same_dtype(c, 2, 0)) || (s = plxi_check_rank(c, 0, 1, PLX_MAX_RANK)) ||
        (s = plxi_check_rank(c, 1, 1, PLX_MAX_RANK)) ||
        (s = check_nd_indices(c, 0, 0, &k))) {
        return s;
    }
    /* updates: indices' dims but the last, then data's from k */
    uint32_t ur = idx->rank - 1 + x->rank - k;
    bool same = u->rank == ur;
    for (uint32_t i = 0; same && i < ur; i++) {
        same = u->dims[i] == (i < idx->rank - 1 ? idx->dims[i] : x->dims[k + i - (idx->rank - 1)]);
    }
    if (!same) {
        if (ur > PLX_MAX_RANK) {
            return plxi_fail(c, "updates %s must have rank %" PRIu32 " for data %s and indices %s, "
                             "more than %d", SHP(u), ur, SHP(x), SHP(idx), PLX_MAX_RANK);
        }
        int64_t dims[PLX_MAX_RANK];
        for (uint32_t i = 0; i < ur; i++) {
            dims[i] = i < idx->rank - 1 ? idx->dims[i] : x->dims[k + i - (idx->rank - 1)];
        }
        plx_tensor_info want;
        plxi_info_init(&want, x->dtype, 0);
        plxi_info_set_dims(&want, dims, ur);
        return plxi_fail(c, "updates %s must have the shape %s (indices %s but its last dim, "
                         "then data %s from dim %" PRIu32 ")", SHP(u), SHP(&want), SHP(idx),
                         SHP(x), k);
    }
    scatter_output(c, d->reduction);
    return NULL;
}

static plx_status plxi_infer_gather_nd(const layer_ctx *c) {
    const plx_gather_nd_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *idx = &c->in[1];
    uint32_t k = 0;
    plx_status s;
    if ((s = plxi_check_dtype(c, 1, DT(INT32) | DT(INT64), NULL)) ||
        (s = plxi_check_rank(c, 0, 1, PLX_MAX_RANK)) ||
        (s = plxi_check_rank(c, 1, 1, PLX_MAX_RANK))) {
        return s;
    }
    uint32_t lim = x->rank < idx->rank ? x->rank : idx->rank;
    if (d->batch_dims < 0 || (uint32_t)d->batch_dims >= lim) {
        return plxi_fail(c, "batch_dims %" PRId32 " is out of range [0, %" PRIu32
                         ") for data %s and indices %s", d->batch_dims, lim, SHP(x), SHP(idx));
    }
    uint32_t b = (uint32_t)d->batch_dims;
    for (uint32_t i = 0; i < b; i++) {
        if (idx->dims[i] != x->dims[i]) {
            return plxi_fail(c, "indices %s and data %s differ in batch dim %" PRIu32, SHP(idx),
                             SHP(x), i);
        }
    }
    if ((s = check_nd_indices(c, b, 1, &k))) {
        return s;
    }
    /* indices' dims but the last, then data's past the indexed ones */
    uint32_t r = idx->rank - 1 + x->rank - b - k;
    if (r > PLX_MAX_RANK) {
        return plxi_fail(c, "the output rank %" PRIu32 " of data %s and indices %s exceeds %d", r,
                         SHP(x), SHP(idx), PLX_MAX_RANK);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        dims[i] = i < idx->rank - 1 ? idx->dims[i] : x->dims[b + k + i - (idx->rank - 1)];
    }
    moved_output(c->out, x, dims, r);
    return NULL;
}

PLXI_OP_ROW(GATHER_ELEMENTS, 2, 2, 1, 1, ROLES("data", "indices"), plxi_infer_gather_elements);
PLXI_OP_ROW(SCATTER_ELEMENTS, 3, 3, 1, 1, ROLES("data", "indices", "updates"),
            plxi_infer_scatter_elements);
PLXI_OP_ROW(SCATTER_ND, 3, 3, 1, 1, ROLES("data", "indices", "updates"), plxi_infer_scatter_nd);
PLXI_OP_ROW(GATHER_ND, 2, 2, 1, 1, ROLES("data", "indices"), plxi_infer_gather_nd);
PLXI_OP_ROW(REVERSE_SEQUENCE, 2, 2, 1, 1, ROLES("X", "sequence_lens"),
            plxi_infer_reverse_sequence);
