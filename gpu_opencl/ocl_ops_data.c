/* gpu_opencl data movement: reshape (also flatten, squeeze, unsqueeze) as
 * a buffer copy; transpose, slice, expand, split, concat, depth_to_space
 * and space_to_depth as strided copies; tile, pad, gather. Every dtype
 * (elements are moved as 1, 2, 4 or 8 bytes). Kernels in kernels/data.cl. */
#include "ocl_ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Element counts within the index limit, a dtype the copies move, and
 * every output of the first input's dtype. */
static const char *check_data(const plx_layer_view *l, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    plx_dtype t = l->inputs[0].dtype;
    if (!ocl_size_suffix(t)) {
        return ocl_refuse(buf, size, "%s: dtype %s is not supported", plx_op_name(l->op),
                          plx_dtype_name(t));
    }
    for (uint32_t i = 0; i < l->output_count; i++) {
        if (l->outputs[i].dtype != t) {
            return ocl_refuse(buf, size, "%s: output %u is %s, the input %s",
                              plx_op_name(l->op), i, plx_dtype_name(l->outputs[i].dtype),
                              plx_dtype_name(t));
        }
    }
    return NULL;
}

/* A strided copy launch: gather form (output `out` dense, input `in` read
 * at base + strides) or scatter form (input dense, output written at base
 * + strides), over the collapsed shape s (one stride set). */
static bool strided_launch(ocl_plan *plan, const ocl_device *dev, plx_dtype t, ocl_shape *s,
                           int64_t base, uint32_t in, uint32_t out, bool scatter, char *err,
                           size_t size) {
    int64_t n = 1;
    for (uint32_t d = 0; d < s->rank; d++) {
        n *= s->dims[d];
    }
    if (n == 0) {
        return true;
    }
    ocl_shape_collapse(s, 1);
    char name[40];
    snprintf(name, sizeof name, "%s_strided_%s", scatter ? "scatter" : "copy", ocl_size_suffix(t));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, in);
    ocl_arg_output(k, out);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)s->rank);
    cl_int8 dims = ocl_int8_of(s->dims, s->rank, 1), st = ocl_int8_of(s->st[0], s->rank, 0);
    ocl_arg_value(k, &dims, sizeof dims);
    ocl_arg_value(k, &st, sizeof st);
    ocl_arg_int(k, (int32_t)base);
    return true;
}

static void shape_of(const plx_tensor_info *t, ocl_shape *s) {
    memset(s, 0, sizeof *s);
    s->rank = t->rank;
    for (uint32_t d = 0; d < t->rank; d++) {
        s->dims[d] = t->dims[d];
    }
}

/* ---- reshape, flatten, squeeze, unsqueeze -------------------------------- */

const char *ocl_check_reshape(const ocl_device *dev, const plx_layer_view *l, char *buf,
                              size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    if (ocl_numel(&l->inputs[0]) != ocl_numel(&l->outputs[0])) {
        return ocl_refuse(buf, size, "%s: input and output sizes differ",
                          plx_op_name(l->op));
    }
    return NULL;
}

bool ocl_prepare_reshape(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                         char *err, size_t size) {
    (void)dev;
    size_t bytes = (size_t)ocl_numel(&l->outputs[0]) * plx_dtype_size(l->outputs[0].dtype);
    return bytes == 0 || ocl_plan_copy(plan, 0, 0, bytes, err, size);
}

/* ---- transpose ---------------------------------------------------------- */

static const char *transpose_perm(const plx_layer_view *l, uint32_t perm[PLX_MAX_RANK], char *buf,
                                  size_t size) {
    const plx_transpose_desc *d = l->desc;
    uint32_t rank = l->inputs[0].rank;
    if (d->perm_count != 0 && d->perm_count != rank) {
        return ocl_refuse(buf, size, "transpose: perm has %u entries for rank %u",
                          d->perm_count, rank);
    }
    bool seen[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < rank; i++) {
        perm[i] = d->perm_count ? d->perm[i] : rank - 1 - i;
        if (perm[i] >= rank || seen[perm[i]]) {
            return ocl_refuse(buf, size, "transpose: perm is not a permutation");
        }
        seen[perm[i]] = true;
    }
    return NULL;
}

const char *ocl_check_transpose(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    uint32_t perm[PLX_MAX_RANK];
    if ((why = transpose_perm(l, perm, buf, size))) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = x->dims[perm[i]];
    }
    return ocl_require_shape(l, 0, x->rank, dims, buf, size);
}

bool ocl_prepare_transpose(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                           char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t perm[PLX_MAX_RANK];
    char buf[8];
    transpose_perm(l, perm, buf, sizeof buf);
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    ocl_shape s;
    shape_of(&l->outputs[0], &s);
    for (uint32_t i = 0; i < x->rank; i++) {
        s.st[0][i] = xs[perm[i]];
    }
    return strided_launch(plan, dev, x->dtype, &s, 0, 0, 0, false, err, size);
}

/* ---- concat / split ----------------------------------------------------- */

static const char *check_parts(const plx_tensor_info *whole, const plx_tensor_info *parts,
                               uint32_t count, int32_t axis_in, uint32_t *out_axis,
                               const char *what, char *buf, size_t size) {
    uint32_t axis = 0;
    if (!plx_axis_normalize(axis_in, whole->rank, false, &axis)) {
        return ocl_refuse(buf, size, "%s: axis %d is out of range for rank %u", what,
                          (int)axis_in, whole->rank);
    }
    if (count > OCL_MAX_LAUNCHES) {
        return ocl_refuse(buf, size, "%s of %u parts is not implemented (at most %d)",
                          what, count, OCL_MAX_LAUNCHES);
    }
    int64_t sum = 0;
    for (uint32_t k = 0; k < count; k++) {
        if (parts[k].rank != whole->rank) {
            return ocl_refuse(buf, size, "%s: part %u has rank %u, expected %u", what,
                              k, parts[k].rank, whole->rank);
        }
        for (uint32_t d = 0; d < whole->rank; d++) {
            if (d != axis && parts[k].dims[d] != whole->dims[d]) {
                return ocl_refuse(buf, size, "%s: part %u differs in dim %u", what, k, d);
            }
        }
        sum += parts[k].dims[axis];
    }
    if (sum != whole->dims[axis]) {
        return ocl_refuse(buf, size, "%s: the parts do not add up along axis %u", what,
                          axis);
    }
    *out_axis = axis;
    return NULL;
}

const char *ocl_check_concat(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    for (uint32_t k = 1; k < l->input_count; k++) {
        if (l->inputs[k].dtype != l->inputs[0].dtype) {
            return ocl_refuse(buf, size, "concat: input %u is %s, input 0 %s", k,
                              plx_dtype_name(l->inputs[k].dtype), plx_dtype_name(l->inputs[0].dtype));
        }
    }
    /* a concat on quantized tensors requantizes the inputs whose
     * parameters are not Y's (plexus/ops.h); the copy here does not */
    const plx_quant_params *yq = &l->outputs[0].quant;
    for (uint32_t k = 0; yq->kind == PLX_QUANT_PER_TENSOR && k < l->input_count; k++) {
        const plx_quant_params *q = &l->inputs[k].quant;
        if (l->inputs[k].dtype != l->outputs[0].dtype || q->kind != PLX_QUANT_PER_TENSOR ||
            q->scale != yq->scale || q->zero_point != yq->zero_point) {
            return ocl_refuse(buf, size, "concat: input %u's quantization is not "
                              "the output's, and requantizing concat is not implemented", k);
        }
    }
    uint32_t axis;
    return check_parts(&l->outputs[0], l->inputs, l->input_count,
                       ((const plx_axis_desc *)l->desc)->axis, &axis, "concat", buf, size);
}

bool ocl_prepare_concat(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_tensor_info *y = &l->outputs[0];
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_axis_desc *)l->desc)->axis, y->rank, false, &axis);
    int64_t ys[PLX_MAX_RANK];
    plx_tensor_info_strides(y, ys);
    int64_t at = 0;
    for (uint32_t k = 0; k < l->input_count; k++) {
        ocl_shape s;
        shape_of(&l->inputs[k], &s);
        memcpy(s.st[0], ys, sizeof ys);
        if (!strided_launch(plan, dev, y->dtype, &s, at * ys[axis], k, 0, true, err, size)) {
            return false;
        }
        at += l->inputs[k].dims[axis];
    }
    return true;
}

const char *ocl_check_split(const ocl_device *dev, const plx_layer_view *l, char *buf,
                            size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    const plx_split_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if ((why = check_parts(x, l->outputs, l->output_count, d->axis, &axis, "split", buf, size))) {
        return why;
    }
    int64_t dim = x->dims[axis], n = l->output_count;
    int64_t chunk = (dim + n - 1) / n;
    for (uint32_t k = 0; k < l->output_count; k++) {
        int64_t want;
        if (d->sizes) {
            want = d->sizes[k];
        } else {
            want = dim - (int64_t)k * chunk;
            want = want < 0 ? 0 : want > chunk ? chunk : want;
        }
        if (l->outputs[k].dims[axis] != want) {
            return ocl_refuse(buf, size, "split: output %u has %lld along axis %u, expected %lld",
                              k, (long long)l->outputs[k].dims[axis], axis, (long long)want);
        }
    }
    return NULL;
}

bool ocl_prepare_split(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                       size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_split_desc *)l->desc)->axis, x->rank, false, &axis);
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    int64_t at = 0;
    for (uint32_t k = 0; k < l->output_count; k++) {
        ocl_shape s;
        shape_of(&l->outputs[k], &s);
        memcpy(s.st[0], xs, sizeof xs);
        if (!strided_launch(plan, dev, x->dtype, &s, at * xs[axis], 0, k, false, err, size)) {
            return false;
        }
        at += l->outputs[k].dims[axis];
    }
    return true;
}

/* ---- slice -------------------------------------------------------------- */

/* ONNX Slice's output dims, and the strides and offset with which it
 * reads X: plexus/geometry.h's plan, refused in gpu_opencl's words. */
static const char *slice_plan(const plx_layer_view *l, int64_t dims[PLX_MAX_RANK],
                              int64_t strides[PLX_MAX_RANK], int64_t *offset, char *buf,
                              size_t size) {
    const plx_slice_desc *d = l->desc;
    uint32_t i = 0;
    plx_geom_status s = plx_slice_plan(&l->inputs[0], d, dims, strides, offset, &i);
    if (s == PLX_GEOM_BAD_COUNT) {
        return ocl_refuse(buf, size, "slice: %u entries for rank %u", d->count,
                        l->inputs[0].rank);
    }
    if (s != PLX_GEOM_OK) {
        return ocl_refuse(buf, size, "slice: %s on axis %lld", plx_geom_status_text(s),
                        (long long)d->axes[i]);
    }
    return NULL;
}

const char *ocl_check_slice(const ocl_device *dev, const plx_layer_view *l, char *buf,
                            size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    int64_t dims[PLX_MAX_RANK], strides[PLX_MAX_RANK], offset = 0;
    if ((why = slice_plan(l, dims, strides, &offset, buf, size))) {
        return why;
    }
    return ocl_require_shape(l, 0, l->inputs[0].rank, dims, buf, size);
}

bool ocl_prepare_slice(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                       size_t size) {
    int64_t dims[PLX_MAX_RANK], offset = 0;
    ocl_shape s;
    shape_of(&l->outputs[0], &s);
    char buf[8];
    slice_plan(l, dims, s.st[0], &offset, buf, sizeof buf);
    if (ocl_numel(&l->outputs[0]) == 0) {
        return true;
    }
    return strided_launch(plan, dev, l->inputs[0].dtype, &s, offset, 0, 0, false, err, size);
}

/* ---- expand ------------------------------------------------------------- */

const char *ocl_check_expand(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    const plx_shape_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (d->rank > PLX_MAX_RANK) {
        return ocl_refuse(buf, size, "expand: shape of rank %u", d->rank);
    }
    uint32_t rank = 0, i = 0;
    int64_t dims[PLX_MAX_RANK];
    if (plx_broadcast_dims(x->dims, x->rank, d->dims, d->rank, dims, &rank, &i) != PLX_GEOM_OK) {
        return ocl_refuse(buf, size, "expand: dim %u does not broadcast", i);
    }
    return ocl_require_shape(l, 0, rank, dims, buf, size);
}

bool ocl_prepare_expand(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    ocl_shape s;
    shape_of(y, &s);
    uint32_t lead = y->rank - x->rank;
    for (uint32_t i = 0; i < y->rank; i++) {
        s.st[0][i] = i < lead || x->dims[i - lead] == 1 ? 0 : xs[i - lead];
    }
    return strided_launch(plan, dev, x->dtype, &s, 0, 0, 0, false, err, size);
}

/* ---- tile --------------------------------------------------------------- */

const char *ocl_check_tile(const ocl_device *dev, const plx_layer_view *l, char *buf,
                           size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tile_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (y->rank != x->rank) {
        return ocl_refuse(buf, size, "tile: output rank %u, expected %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t r = d->repeats[i];
        if (r < 0 || (r > 0 && x->dims[i] > INT64_MAX / r) || y->dims[i] != x->dims[i] * r) {
            return ocl_refuse(buf, size, "tile: output dim %u is not X's times the repeats", i);
        }
    }
    return NULL;
}

bool ocl_prepare_tile(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t n = ocl_numel(y);
    if (n == 0) {
        return true; /* else every dim of X is >= 1 */
    }
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    char name[32];
    snprintf(name, sizeof name, "tile_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    uint32_t rank = y->rank ? y->rank : 1;
    int64_t one = 1;
    cl_int8 yd = ocl_int8_of(y->rank ? y->dims : &one, rank, 1);
    cl_int8 xd = ocl_int8_of(x->rank ? x->dims : &one, rank, 1);
    cl_int8 st = ocl_int8_of(xs, x->rank, 0);
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)rank);
    ocl_arg_value(k, &yd, sizeof yd);
    ocl_arg_value(k, &xd, sizeof xd);
    ocl_arg_value(k, &st, sizeof st);
    return true;
}

/* ---- pad ---------------------------------------------------------------- */

#define PAD_LIMIT ((int64_t)1 << 29)

const char *ocl_check_pad(const ocl_device *dev, const plx_layer_view *l, char *buf, size_t size) {
    (void)dev;
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    const plx_pad_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (d->mode == PLX_PAD_WRAP) {
        return ocl_refuse(buf, size, "pad: mode wrap is not implemented");
    }
    if (d->mode != PLX_PAD_CONSTANT && d->mode != PLX_PAD_REFLECT && d->mode != PLX_PAD_EDGE) {
        return ocl_refuse(buf, size, "pad: unknown mode %d", (int)d->mode);
    }
    if (y->rank != x->rank) {
        return ocl_refuse(buf, size, "pad: output rank %u, input rank %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i];
        if (pb < -x->dims[i] || pe < -x->dims[i] || pb > PAD_LIMIT || pe > PAD_LIMIT ||
            x->dims[i] > PAD_LIMIT || y->dims[i] != x->dims[i] + pb + pe) {
            return ocl_refuse(buf, size, "pad: dim %u: output %lld, input %lld padded by %lld, %lld",
                              i, (long long)y->dims[i], (long long)x->dims[i], (long long)pb,
                              (long long)pe);
        }
        if (d->mode != PLX_PAD_CONSTANT && x->dims[i] == 0 && y->dims[i] > 0) {
            return ocl_refuse(buf, size, "pad: %s mode cannot pad the empty dim %u",
                              d->mode == PLX_PAD_REFLECT ? "reflect" : "edge", i);
        }
    }
    return NULL;
}

bool ocl_prepare_pad(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                     size_t size) {
    const plx_pad_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t n = ocl_numel(y);
    if (n == 0) {
        return true;
    }
    uint8_t value[8];
    plx_dtype_bytes_from_double(d->value, x->dtype, value); /* as cast converts */
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    char name[32];
    snprintf(name, sizeof name, "pad_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    uint32_t rank = y->rank;
    cl_int8 yd = ocl_int8_of(y->dims, rank, 1), xd = ocl_int8_of(x->dims, rank, 1);
    cl_int8 st = ocl_int8_of(xs, rank, 0), pb = ocl_int8_of(d->pads_begin, rank, 0);
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)rank);
    ocl_arg_value(k, &yd, sizeof yd);
    ocl_arg_value(k, &xd, sizeof xd);
    ocl_arg_value(k, &st, sizeof st);
    ocl_arg_value(k, &pb, sizeof pb);
    ocl_arg_int(k, (int32_t)d->mode);
    ocl_arg_value(k, value, plx_dtype_size(x->dtype));
    return true;
}

/* ---- gather ------------------------------------------------------------- */

/* Constant indices are normalised here and one out of range is refused
 * (the layer falls back, and the fallback reports it at run time);
 * indices read at run time are checked by the kernel (ocl_ops_index.c,
 * ocl_prepare_gather_dynamic). */
const char *ocl_check_gather(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1], *y = &l->outputs[0];
    if (!ocl_size_suffix(x->dtype) || y->dtype != x->dtype) {
        return ocl_refuse(buf, size, "gather: data %s, output %s",
                          plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    if (ind->dtype != PLX_DTYPE_INT32 && ind->dtype != PLX_DTYPE_INT64) {
        return ocl_refuse(buf, size, "gather: indices must be int32 or int64, got %s",
                          plx_dtype_name(ind->dtype));
    }
    uint32_t axis = 0;
    int32_t a = ((const plx_axis_desc *)l->desc)->axis;
    if (!plx_axis_normalize(a, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "gather: axis %d is out of range for rank %u",
                          (int)a, x->rank);
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank = x->rank - 1 + ind->rank;
    if (rank > PLX_MAX_RANK) {
        return ocl_refuse(buf, size, "gather: output rank %u", rank);
    }
    for (uint32_t i = 0; i < rank; i++) {
        dims[i] = i < axis ? x->dims[i]
                  : i < axis + ind->rank ? ind->dims[i - axis]
                                         : x->dims[i - ind->rank + 1];
    }
    if ((why = ocl_require_shape(l, 0, rank, dims, buf, size))) {
        return why;
    }
    const void *data = l->input_constants ? l->input_constants[1] : NULL;
    int64_t ni = ocl_numel(ind), dim = x->dims[axis];
    for (int64_t j = 0; data && j < ni; j++) {
        int64_t v = ind->dtype == PLX_DTYPE_INT32 ? ((const int32_t *)data)[j]
                                                  : ((const int64_t *)data)[j];
        if (v < -dim || v >= dim) {
            return ocl_refuse(buf, size,
                              "gather: index %lld (element %lld) is out of range for "
                              "axis %u of size %lld",
                              (long long)v, (long long)j, axis, (long long)dim);
        }
    }
    return NULL;
}

bool ocl_prepare_gather(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    const void *data = l->input_constants ? l->input_constants[1] : NULL;
    if (!data) {
        return ocl_prepare_gather_dynamic(dev, l, plan, err, size);
    }
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_axis_desc *)l->desc)->axis, x->rank, false, &axis);
    int64_t ni = ocl_numel(ind), dim = x->dims[axis];
    int64_t row = ocl_dim_product(x, axis + 1, x->rank);
    int32_t *idx = malloc((size_t)ni * sizeof *idx);
    if (!idx) {
        return ocl_fail(err, size, "gpu_opencl: gather: out of memory");
    }
    for (int64_t j = 0; j < ni; j++) {
        int64_t v = ind->dtype == PLX_DTYPE_INT32 ? ((const int32_t *)data)[j]
                                                  : ((const int64_t *)data)[j];
        idx[j] = (int32_t)(v < 0 ? v + dim : v);
    }
    uint32_t slot = 0;
    bool ok = ocl_plan_aux(plan, dev, idx, (size_t)ni * sizeof *idx, &slot, err, size);
    free(idx);
    if (!ok) {
        return false;
    }
    char name[32];
    snprintf(name, sizeof name, "gather_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_aux(k, slot);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)ni);
    ocl_arg_int(k, (int32_t)row);
    ocl_arg_int(k, (int32_t)dim);
    return true;
}

/* ---- depth_to_space / space_to_depth ------------------------------------ */

static const char *check_depth_space(const plx_layer_view *l, bool to_space, char *buf,
                                     size_t size) {
    const char *what = to_space ? "depth_to_space" : "space_to_depth";
    const char *why = check_data(l, buf, size);
    if (why) {
        return why;
    }
    const plx_depth_space_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t b = d->block_size;
    if (d->mode != PLX_DEPTH_SPACE_DCR && (d->mode != PLX_DEPTH_SPACE_CRD || !to_space)) {
        return ocl_refuse(buf, size, "%s: mode %d is not supported", what, (int)d->mode);
    }
    if (x->rank != 4 || b < 1 || b > 65536) {
        return ocl_refuse(buf, size, "%s needs a rank-4 input and a block size of 1 to 65536",
                          what);
    }
    int64_t want[4];
    if (to_space) {
        if (x->dims[1] % (b * b)) {
            return ocl_refuse(buf, size, "%s: channels not divisible by block^2", what);
        }
        want[0] = x->dims[0], want[1] = x->dims[1] / (b * b);
        want[2] = x->dims[2] * b, want[3] = x->dims[3] * b;
    } else {
        if (x->dims[2] % b || x->dims[3] % b) {
            return ocl_refuse(buf, size, "%s: H and W must be divisible by the block", what);
        }
        want[0] = x->dims[0], want[1] = x->dims[1] * b * b;
        want[2] = x->dims[2] / b, want[3] = x->dims[3] / b;
    }
    return ocl_require_shape(l, 0, 4, want, buf, size);
}

const char *ocl_check_depth_to_space(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                     size_t size) {
    (void)dev;
    return check_depth_space(l, true, buf, size);
}

bool ocl_prepare_depth_to_space(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                char *err, size_t size) {
    const plx_depth_space_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t b = d->block_size, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t c = C / (b * b), hw = H * W;
    /* the output as [N, c, H, b1, W, b2] */
    ocl_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 6;
    int64_t dims[6] = {N, c, H, b, W, b};
    memcpy(s.dims, dims, sizeof dims);
    s.st[0][0] = C * hw;
    s.st[0][2] = W;
    s.st[0][4] = 1;
    if (d->mode == PLX_DEPTH_SPACE_DCR) {
        s.st[0][1] = hw;
        s.st[0][3] = b * c * hw;
        s.st[0][5] = c * hw;
    } else {
        s.st[0][1] = b * b * hw;
        s.st[0][3] = b * hw;
        s.st[0][5] = hw;
    }
    return strided_launch(plan, dev, x->dtype, &s, 0, 0, 0, false, err, size);
}

const char *ocl_check_space_to_depth(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                     size_t size) {
    (void)dev;
    return check_depth_space(l, false, buf, size);
}

bool ocl_prepare_space_to_depth(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                char *err, size_t size) {
    const plx_depth_space_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t b = d->block_size, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    /* the output as [N, b1, b2, C, H/b, W/b] */
    ocl_shape s;
    memset(&s, 0, sizeof s);
    s.rank = 6;
    int64_t dims[6] = {N, b, b, C, H / b, W / b};
    int64_t st[6] = {C * H * W, W, 1, H * W, b * W, b};
    memcpy(s.dims, dims, sizeof dims);
    memcpy(s.st[0], st, sizeof st);
    return strided_launch(plan, dev, x->dtype, &s, 0, 0, 0, false, err, size);
}
