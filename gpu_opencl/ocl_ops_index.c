/* gpu_opencl indexing and scans: gather_elements, scatter_elements,
 * gather_nd, scatter_nd (and gather's indices read at run time, for
 * ocl_ops_data.c), trilu, one_hot, hardmax and cum_sum. Kernels in
 * kernels/index.cl.
 *
 * Indices read from a tensor at run time are checked on the device: each
 * plan carries an index check (ocl_ops.h, ocl_index_check), and an index
 * out of range fails the execution with an error naming the layer, the
 * index and its element in the indices tensor, as cpu_ref does
 * (docs/gpu_opencl.md, "Indices read at run time"). */
#include "ocl_ops_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- shared ------------------------------------------------------------- */

static bool is_index_dtype(plx_dtype t) {
    return t == PLX_DTYPE_INT32 || t == PLX_DTYPE_INT64;
}

/* Element counts within the index limit, data moved by size (every dtype
 * of 1, 2, 4 or 8 bytes), int32/int64 indices (input 1), output 0 of
 * data's dtype. */
static const char *check_indexing(const plx_layer_view *l, char *buf, size_t size) {
    const char *op = plx_op_name(l->op);
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1], *y = &l->outputs[0];
    if (!ocl_size_suffix(x->dtype) || x->dtype == PLX_DTYPE_INT4 || x->dtype == PLX_DTYPE_UINT4) {
        return ocl_refuse(buf, size, "%s: data of dtype %s is not supported", op,
                          plx_dtype_name(x->dtype));
    }
    if (!is_index_dtype(ind->dtype)) {
        return ocl_refuse(buf, size, "%s: indices must be int32 or int64, got %s", op,
                          plx_dtype_name(ind->dtype));
    }
    if (y->dtype != x->dtype) {
        return ocl_refuse(buf, size, "%s: the output is %s, data %s", op,
                          plx_dtype_name(y->dtype), plx_dtype_name(x->dtype));
    }
    return NULL;
}

/* The reduction of a scatter: none moves any dtype, the others float32
 * only. */
static const char *check_reduction(const plx_layer_view *l, char *buf, size_t size) {
    const plx_scatter_desc *d = l->desc;
    const char *op = plx_op_name(l->op);
    if (!plx_scatter_reduction_name(d->reduction)) {
        return ocl_refuse(buf, size, "%s: reduction %d is not supported", op,
                          (int)d->reduction);
    }
    if (d->reduction != PLX_SCATTER_NONE && l->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return ocl_refuse(buf, size, "%s: reduction %s needs float32, got %s", op,
                          plx_scatter_reduction_name(d->reduction),
                          plx_dtype_name(l->inputs[0].dtype));
    }
    const plx_tensor_info *u = &l->inputs[2];
    if (u->dtype != l->inputs[0].dtype) {
        return ocl_refuse(buf, size, "%s: updates are %s, data %s", op,
                          plx_dtype_name(u->dtype), plx_dtype_name(l->inputs[0].dtype));
    }
    if (!ocl_same_dims(&l->outputs[0], &l->inputs[0])) {
        return ocl_refuse(buf, size, "%s: the output's shape is not data's", op);
    }
    return NULL;
}

static void arg_int8(ocl_launch *k, const int64_t *v, uint32_t rank, int32_t fill) {
    cl_int8 w = ocl_int8_of(v, rank, fill);
    ocl_arg_value(k, &w, sizeof w);
}

/* The index check for input 1, its flag's aux slot in *flag. */
static bool add_check(ocl_plan *plan, const ocl_device *dev, const plx_layer_view *l,
                      uint32_t *flag, char *err, size_t size) {
    return ocl_plan_index_check(plan, dev, l->name, plx_op_name(l->op), 1,
                                l->inputs[1].dtype == PLX_DTYPE_INT64, flag, err, size);
}

/* ---- gather (indices read at run time) ---------------------------------- */

bool ocl_prepare_gather_dynamic(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    uint32_t axis = 0, flag = 0;
    plx_axis_normalize(((const plx_axis_desc *)l->desc)->axis, x->rank, false, &axis);
    if (!add_check(plan, dev, l, &flag, err, size)) {
        return false;
    }
    char name[32];
    snprintf(name, sizeof name, "gather_dyn_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_int(k, ind->dtype == PLX_DTYPE_INT64);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)ocl_numel(ind));
    ocl_arg_int(k, (int32_t)ocl_dim_product(x, axis + 1, x->rank));
    ocl_arg_int(k, (int32_t)x->dims[axis]);
    ocl_arg_aux(k, flag);
    return true;
}

/* ---- gather_elements / scatter_elements --------------------------------- */

/* indices of data's rank, each dim but the axis at most data's; *axis the
 * normalised axis. want: the shape the output must have. */
static const char *check_elements(const plx_layer_view *l, int32_t a, uint32_t *axis,
                                  const plx_tensor_info *want, char *buf, size_t size) {
    const char *op = plx_op_name(l->op);
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    if (!plx_axis_normalize(a, x->rank, false, axis)) {
        return ocl_refuse(buf, size, "%s: axis %d is out of range for rank %u", op,
                          (int)a, x->rank);
    }
    if (ind->rank != x->rank) {
        return ocl_refuse(buf, size, "%s: indices rank %u, data rank %u", op,
                          ind->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != *axis && ind->dims[i] > x->dims[i]) {
            return ocl_refuse(buf, size, "%s: indices dim %u is %lld, more than "
                              "data's %lld", op, i, (long long)ind->dims[i],
                              (long long)x->dims[i]);
        }
    }
    return ocl_require_shape(l, 0, want->rank, want->dims, buf, size);
}

const char *ocl_check_gather_elements(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                      size_t size) {
    (void)dev;
    const char *why = check_indexing(l, buf, size);
    uint32_t axis;
    return why ? why
               : check_elements(l, ((const plx_axis_desc *)l->desc)->axis, &axis, &l->inputs[1],
                                buf, size);
}

bool ocl_prepare_gather_elements(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                 char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    int64_t n = ocl_numel(ind);
    if (n == 0) {
        return true;
    }
    uint32_t axis = 0, flag = 0;
    plx_axis_normalize(((const plx_axis_desc *)l->desc)->axis, x->rank, false, &axis);
    if (!add_check(plan, dev, l, &flag, err, size)) {
        return false;
    }
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    char name[40];
    snprintf(name, sizeof name, "gather_elements_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_int(k, ind->dtype == PLX_DTYPE_INT64);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)ind->rank);
    arg_int8(k, ind->dims, ind->rank, 1);
    arg_int8(k, xs, x->rank, 0);
    ocl_arg_int(k, (int32_t)axis);
    ocl_arg_int(k, (int32_t)x->dims[axis]);
    ocl_arg_aux(k, flag);
    return true;
}

const char *ocl_check_scatter_elements(const ocl_device *dev, const plx_layer_view *l,
                                       char *buf, size_t size) {
    (void)dev;
    const char *why = check_indexing(l, buf, size);
    if (why || (why = check_reduction(l, buf, size))) {
        return why;
    }
    if (!ocl_same_dims(&l->inputs[2], &l->inputs[1])) {
        return ocl_refuse(buf, size, "scatter_elements: updates must have indices' "
                          "shape");
    }
    uint32_t axis;
    return check_elements(l, ((const plx_scatter_desc *)l->desc)->axis, &axis, &l->inputs[0],
                          buf, size);
}

/* A scatter's kernel, `base`_<element size> (reduction none) or
 * `base`_reduce_f32, over `count` work-items, with its first arguments:
 * the indices (and whether int64), the updates, the output. */
static bool scatter_launch(ocl_plan *plan, const ocl_device *dev, const char *base,
                           plx_scatter_reduction reduction, plx_dtype dt, plx_dtype index_dt,
                           int64_t count, ocl_launch **k, char *err, size_t size) {
    char name[48];
    if (reduction == PLX_SCATTER_NONE) {
        snprintf(name, sizeof name, "%s_%s", base, ocl_size_suffix(dt));
    } else {
        snprintf(name, sizeof name, "%s_reduce_f32", base);
    }
    if (!ocl_kernel_1d(plan, dev, name, count, k, err, size)) {
        return false;
    }
    ocl_arg_input(*k, 1);
    ocl_arg_int(*k, index_dt == PLX_DTYPE_INT64);
    ocl_arg_input(*k, 2);
    ocl_arg_output(*k, 0);
    return true;
}

bool ocl_prepare_scatter_elements(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                  char *err, size_t size) {
    const plx_scatter_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    size_t bytes = (size_t)ocl_numel(x) * plx_dtype_size(x->dtype);
    if (bytes == 0) {
        return true; /* then indices are empty too */
    }
    if (!ocl_plan_copy(plan, 0, 0, bytes, err, size)) {
        return false;
    }
    int64_t n = ocl_numel(ind);
    if (n == 0) {
        return true;
    }
    uint32_t axis = 0, flag = 0;
    plx_axis_normalize(d->axis, x->rank, false, &axis);
    if (!add_check(plan, dev, l, &flag, err, size)) {
        return false;
    }
    int64_t is[PLX_MAX_RANK], ys[PLX_MAX_RANK], ldims[PLX_MAX_RANK];
    plx_tensor_info_strides(ind, is);
    plx_tensor_info_strides(x, ys);
    memcpy(ldims, ind->dims, sizeof ldims);
    ldims[axis] = 1;
    int64_t len = ind->dims[axis], lines = n / len;
    ocl_launch *k;
    if (!scatter_launch(plan, dev, "scatter_elements", d->reduction, x->dtype, ind->dtype,
                        lines, &k, err, size)) {
        return false;
    }
    ocl_arg_int(k, (int32_t)lines);
    ocl_arg_int(k, (int32_t)x->rank);
    arg_int8(k, ldims, x->rank, 1);
    arg_int8(k, is, x->rank, 0);
    arg_int8(k, ys, x->rank, 0);
    ocl_arg_int(k, (int32_t)axis);
    ocl_arg_int(k, (int32_t)len);
    ocl_arg_int(k, (int32_t)x->dims[axis]);
    ocl_arg_int(k, (int32_t)d->reduction);
    ocl_arg_aux(k, flag);
    return true;
}

/* ---- gather_nd / scatter_nd --------------------------------------------- */

/* indices [..., k] with the first b dims data's, kmin <= k <= rank - b;
 * `want` (gather_nd's output, scatter_nd's updates) has indices' dims but
 * the last, then data's from b + k. */
static const char *check_nd(const plx_layer_view *l, uint32_t b, int64_t kmin,
                            const plx_tensor_info *want, char *buf, size_t size) {
    const char *op = plx_op_name(l->op);
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    if (x->rank < 1 || ind->rank < 1 || b >= x->rank || b >= ind->rank) {
        return ocl_refuse(buf, size, "%s: data rank %u and indices rank %u with %u "
                          "batch dims", op, x->rank, ind->rank, b);
    }
    for (uint32_t i = 0; i < b; i++) {
        if (ind->dims[i] != x->dims[i]) {
            return ocl_refuse(buf, size, "%s: indices and data differ in batch dim %u",
                              op, i);
        }
    }
    int64_t k = ind->dims[ind->rank - 1];
    if (k < kmin || k > (int64_t)(x->rank - b)) {
        return ocl_refuse(buf, size, "%s: the last dim of indices is %lld, data "
                          "rank %u", op, (long long)k, x->rank);
    }
    uint32_t r = ind->rank - 1 + x->rank - b - (uint32_t)k;
    bool ok = want->dtype == x->dtype && want->rank == r;
    for (uint32_t i = 0; ok && i < r; i++) {
        ok = want->dims[i] == (i < ind->rank - 1 ? ind->dims[i]
                                                 : x->dims[b + (uint32_t)k + i - (ind->rank - 1)]);
    }
    if (!ok) {
        return ocl_refuse(buf, size, "%s: the %s's dtype or shape does not match "
                          "data and indices", op, want == &l->outputs[0] ? "output" : "updates");
    }
    return NULL;
}

const char *ocl_check_gather_nd(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                size_t size) {
    (void)dev;
    int32_t b = ((const plx_gather_nd_desc *)l->desc)->batch_dims;
    const char *why = check_indexing(l, buf, size);
    if (why) {
        return why;
    }
    if (b < 0) {
        return ocl_refuse(buf, size, "gather_nd: batch_dims %d is negative", (int)b);
    }
    return check_nd(l, (uint32_t)b, 1, &l->outputs[0], buf, size);
}

bool ocl_prepare_gather_nd(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                           char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    uint32_t b = (uint32_t)((const plx_gather_nd_desc *)l->desc)->batch_dims;
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    int64_t k = ind->dims[ind->rank - 1];
    int64_t per = ocl_dim_product(ind, b, ind->rank - 1);
    int64_t slice = ocl_dim_product(x, b + (uint32_t)k, x->rank);
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    uint32_t flag = 0;
    if (!add_check(plan, dev, l, &flag, err, size)) {
        return false;
    }
    char name[32];
    snprintf(name, sizeof name, "gather_nd_%s", ocl_size_suffix(x->dtype));
    ocl_launch *kl;
    if (!ocl_kernel_1d(plan, dev, name, n, &kl, err, size)) {
        return false;
    }
    ocl_arg_input(kl, 0);
    ocl_arg_input(kl, 1);
    ocl_arg_int(kl, ind->dtype == PLX_DTYPE_INT64);
    ocl_arg_output(kl, 0);
    ocl_arg_int(kl, (int32_t)n);
    ocl_arg_int(kl, (int32_t)k);
    ocl_arg_int(kl, (int32_t)(per ? per : 1));
    ocl_arg_int(kl, (int32_t)slice);
    ocl_arg_int(kl, (int32_t)(b ? xs[b - 1] : 0));
    arg_int8(kl, x->dims + b, (uint32_t)k, 1);
    arg_int8(kl, xs + b, (uint32_t)k, 0);
    ocl_arg_aux(kl, flag);
    return true;
}

const char *ocl_check_scatter_nd(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    const plx_scatter_desc *d = l->desc;
    const char *why = check_indexing(l, buf, size);
    if (why || (why = check_reduction(l, buf, size))) {
        return why;
    }
    if (d->axis != 0) {
        return ocl_refuse(buf, size, "scatter_nd: axis %d is not supported",
                          (int)d->axis);
    }
    return check_nd(l, 0, 0, &l->inputs[2], buf, size);
}

bool ocl_prepare_scatter_nd(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_scatter_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1];
    size_t bytes = (size_t)ocl_numel(x) * plx_dtype_size(x->dtype);
    if (bytes == 0) {
        return true;
    }
    if (!ocl_plan_copy(plan, 0, 0, bytes, err, size)) {
        return false;
    }
    int64_t k = ind->dims[ind->rank - 1];
    int64_t tuples = ocl_dim_product(ind, 0, ind->rank - 1);
    int64_t slice = ocl_dim_product(x, (uint32_t)k, x->rank);
    if (tuples == 0 || slice == 0) {
        return true;
    }
    int64_t xs[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    uint32_t flag = 0;
    if (!add_check(plan, dev, l, &flag, err, size)) {
        return false;
    }
    ocl_launch *kl;
    if (!scatter_launch(plan, dev, "scatter_nd", d->reduction, x->dtype, ind->dtype, slice, &kl,
                        err, size)) {
        return false;
    }
    ocl_arg_int(kl, (int32_t)slice);
    ocl_arg_int(kl, (int32_t)tuples);
    ocl_arg_int(kl, (int32_t)k);
    arg_int8(kl, x->dims, (uint32_t)k, 1);
    arg_int8(kl, xs, (uint32_t)k, 0);
    ocl_arg_int(kl, (int32_t)d->reduction);
    ocl_arg_aux(kl, flag);
    return true;
}

/* ---- trilu -------------------------------------------------------------- */

const char *ocl_check_trilu(const ocl_device *dev, const plx_layer_view *l, char *buf,
                            size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (!ocl_size_suffix(x->dtype) || x->dtype == PLX_DTYPE_INT4 || x->dtype == PLX_DTYPE_UINT4) {
        return ocl_refuse(buf, size, "trilu: dtype %s is not supported",
                          plx_dtype_name(x->dtype));
    }
    if (x->rank < 2) {
        return ocl_refuse(buf, size, "trilu: X has rank %u, expected 2 or more",
                          x->rank);
    }
    if (y->dtype != x->dtype) {
        return ocl_refuse(buf, size, "trilu: the output is %s, X %s",
                          plx_dtype_name(y->dtype), plx_dtype_name(x->dtype));
    }
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

bool ocl_prepare_trilu(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                       size_t size) {
    const plx_trilu_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t n = ocl_numel(x);
    if (n == 0) {
        return true;
    }
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    /* past the matrix every k keeps all or nothing: clamped, it fits int */
    int64_t k = d->k < -rows - 1 ? -rows - 1 : d->k > cols + 1 ? cols + 1 : d->k;
    char name[32];
    snprintf(name, sizeof name, "trilu_%s", ocl_size_suffix(x->dtype));
    ocl_launch *kl;
    if (!ocl_kernel_1d(plan, dev, name, n, &kl, err, size)) {
        return false;
    }
    ocl_arg_input(kl, 0);
    ocl_arg_output(kl, 0);
    ocl_arg_int(kl, (int32_t)n);
    ocl_arg_int(kl, (int32_t)rows);
    ocl_arg_int(kl, (int32_t)cols);
    ocl_arg_int(kl, (int32_t)k);
    ocl_arg_int(kl, d->upper ? 1 : 0);
    return true;
}

/* ---- one_hot ------------------------------------------------------------ */

/* Y as [outer, depth, inner] around the inserted axis. */
static const char *one_hot_geom(const plx_layer_view *l, int64_t *outer, int64_t *inner,
                                char *buf, size_t size) {
    const plx_one_hot_desc *d = l->desc;
    const plx_tensor_info *ind = &l->inputs[0], *vals = &l->inputs[1], *y = &l->outputs[0];
    if (ind->dtype != PLX_DTYPE_INT32 && ind->dtype != PLX_DTYPE_INT64 &&
        ind->dtype != PLX_DTYPE_FLOAT32) {
        return ocl_refuse(buf, size, "one_hot: indices of dtype %s are not supported "
                          "(int32, int64 or float32)", plx_dtype_name(ind->dtype));
    }
    if (!ocl_size_suffix(vals->dtype) || vals->dtype == PLX_DTYPE_INT4 ||
        vals->dtype == PLX_DTYPE_UINT4) {
        return ocl_refuse(buf, size, "one_hot: values of dtype %s are not supported",
                          plx_dtype_name(vals->dtype));
    }
    if (vals->rank != 1 || vals->dims[0] != 2) {
        return ocl_refuse(buf, size, "one_hot: values must have 2 elements");
    }
    if (y->dtype != vals->dtype) {
        return ocl_refuse(buf, size, "one_hot: the output is %s, values %s",
                          plx_dtype_name(y->dtype), plx_dtype_name(vals->dtype));
    }
    if (d->depth < 1 || d->depth > OCL_INDEX_LIMIT || ind->rank >= PLX_MAX_RANK) {
        return ocl_refuse(buf, size, "one_hot: depth %lld or indices' rank %u is out "
                          "of range", (long long)d->depth, ind->rank);
    }
    uint32_t axis = 0;
    if (!plx_axis_normalize(d->axis, ind->rank + 1, false, &axis)) {
        return ocl_refuse(buf, size, "one_hot: axis %d is out of range for rank %u",
                          (int)d->axis, ind->rank + 1);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0, j = 0; i <= ind->rank; i++) {
        dims[i] = i == axis ? d->depth : ind->dims[j++];
    }
    *outer = ocl_dim_product(ind, 0, axis);
    *inner = ocl_dim_product(ind, axis, ind->rank);
    return ocl_require_shape(l, 0, ind->rank + 1, dims, buf, size);
}

const char *ocl_check_one_hot(const ocl_device *dev, const plx_layer_view *l, char *buf,
                              size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    int64_t outer, inner;
    return why ? why : one_hot_geom(l, &outer, &inner, buf, size);
}

bool ocl_prepare_one_hot(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                         char *err, size_t size) {
    const plx_one_hot_desc *d = l->desc;
    int64_t outer = 0, inner = 0, n = ocl_numel(&l->outputs[0]);
    char buf[8];
    one_hot_geom(l, &outer, &inner, buf, sizeof buf);
    if (n == 0) {
        return true;
    }
    plx_dtype it = l->inputs[0].dtype;
    char name[32];
    snprintf(name, sizeof name, "one_hot_%s", ocl_size_suffix(l->inputs[1].dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_int(k, it == PLX_DTYPE_INT32 ? 0 : it == PLX_DTYPE_INT64 ? 1 : 2);
    ocl_arg_input(k, 1);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)d->depth);
    ocl_arg_int(k, (int32_t)inner);
    return true;
}

/* ---- hardmax / cum_sum -------------------------------------------------- */

/* outer x len x inner around the axis; Y of X's dtype and shape. */
static const char *line_geom(const plx_layer_view *l, int32_t a, int64_t *outer, int64_t *len,
                             int64_t *inner, char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const char *op = plx_op_name(l->op);
    uint32_t axis = 0;
    if (!plx_axis_normalize(a, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "%s: axis %d is out of range for rank %u", op,
                          (int)a, x->rank);
    }
    if (y->dtype != x->dtype) {
        return ocl_refuse(buf, size, "%s: the output is %s, X %s", op,
                          plx_dtype_name(y->dtype), plx_dtype_name(x->dtype));
    }
    *outer = ocl_dim_product(x, 0, axis);
    *len = x->dims[axis];
    *inner = ocl_dim_product(x, axis + 1, x->rank);
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

static bool line_launch(ocl_plan *plan, const ocl_device *dev, const char *name, int64_t outer,
                        int64_t len, int64_t inner, ocl_launch **k, char *err, size_t size) {
    if (!ocl_kernel_1d(plan, dev, name, outer * inner, k, err, size)) {
        return false;
    }
    ocl_arg_input(*k, 0);
    ocl_arg_output(*k, 0);
    ocl_arg_int(*k, (int32_t)(outer * inner));
    ocl_arg_int(*k, (int32_t)len);
    ocl_arg_int(*k, (int32_t)inner);
    return true;
}

const char *ocl_check_hardmax(const ocl_device *dev, const plx_layer_view *l, char *buf,
                              size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    int64_t outer, len, inner;
    return line_geom(l, ((const plx_axis_desc *)l->desc)->axis, &outer, &len, &inner, buf, size);
}

bool ocl_prepare_hardmax(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                         char *err, size_t size) {
    int64_t outer = 0, len = 0, inner = 0;
    char buf[8];
    line_geom(l, ((const plx_axis_desc *)l->desc)->axis, &outer, &len, &inner, buf, sizeof buf);
    if (outer * len * inner == 0) {
        return true;
    }
    ocl_launch *k;
    return line_launch(plan, dev, "hardmax_f32", outer, len, inner, &k, err, size);
}

const char *ocl_check_cum_sum(const ocl_device *dev, const plx_layer_view *l, char *buf,
                              size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    plx_dtype t = l->inputs[0].dtype;
    if (t != PLX_DTYPE_FLOAT32 && t != PLX_DTYPE_INT32 && t != PLX_DTYPE_INT64 &&
        t != PLX_DTYPE_UINT32 && t != PLX_DTYPE_UINT64) {
        return ocl_refuse(buf, size, "cum_sum: dtype %s is not supported (float32 "
                          "or 32- and 64-bit integers)", plx_dtype_name(t));
    }
    int64_t outer, len, inner;
    return line_geom(l, ((const plx_cum_sum_desc *)l->desc)->axis, &outer, &len, &inner, buf,
                     size);
}

bool ocl_prepare_cum_sum(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                         char *err, size_t size) {
    const plx_cum_sum_desc *d = l->desc;
    int64_t outer = 0, len = 0, inner = 0;
    char buf[8];
    line_geom(l, d->axis, &outer, &len, &inner, buf, sizeof buf);
    if (outer * len * inner == 0) {
        return true;
    }
    plx_dtype t = l->inputs[0].dtype;
    const char *name = t == PLX_DTYPE_FLOAT32                             ? "cum_sum_f32"
                       : t == PLX_DTYPE_INT32 || t == PLX_DTYPE_UINT32 ? "cum_sum_u32"
                                                                         : "cum_sum_u64";
    ocl_launch *k;
    if (!line_launch(plan, dev, name, outer, len, inner, &k, err, size)) {
        return false;
    }
    ocl_arg_int(k, d->exclusive ? 1 : 0);
    ocl_arg_int(k, d->reverse ? 1 : 0);
    return true;
}

/* ---- topk --------------------------------------------------------------- */

const char *ocl_check_topk(const ocl_device *dev, const plx_layer_view *l, char *buf,
                           size_t size) {
    (void)dev;
    const plx_topk_desc *d = l->desc;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32 || l->output_count != 2 ||
        l->outputs[0].dtype != PLX_DTYPE_FLOAT32 || l->outputs[1].dtype != PLX_DTYPE_INT64) {
        return ocl_refuse(buf, size, "topk needs float32 X and values and int64 "
                          "indices, got %s", plx_dtype_name(x->dtype));
    }
    uint32_t axis = 0;
    if (!plx_axis_normalize(d->axis, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "topk: axis %d is out of range for rank %u",
                          (int)d->axis, x->rank);
    }
    if (d->k < 0 || d->k > x->dims[axis]) {
        return ocl_refuse(buf, size, "topk: k %lld is out of range [0, %lld]",
                          (long long)d->k, (long long)x->dims[axis]);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i == axis ? d->k : x->dims[i];
    }
    if ((why = ocl_require_shape(l, 0, x->rank, dims, buf, size)) ||
        (why = ocl_require_shape(l, 1, x->rank, dims, buf, size))) {
        return why;
    }
    return NULL;
}

bool ocl_prepare_topk(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    const plx_topk_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    plx_axis_normalize(d->axis, x->rank, false, &axis);
    if (ocl_numel(&l->outputs[0]) == 0) {
        return true;
    }
    int64_t n = ocl_numel(x);
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "topk_f32", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_output(k, 1);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)x->dims[axis]);
    ocl_arg_int(k, (int32_t)ocl_dim_product(x, axis + 1, x->rank));
    ocl_arg_int(k, (int32_t)d->k);
    ocl_arg_int(k, d->largest ? 1 : 0);
    return true;
}
