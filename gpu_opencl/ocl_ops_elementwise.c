/* gpu_opencl elementwise operators: activation, unary, binary (numpy
 * broadcasting), where, cast. Kernels in kernels/elementwise.cl. */
#include "ocl_ops_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- broadcasting ------------------------------------------------------- */

/* The output's dims with the inputs' broadcast strides, collapsed. */
static void broadcast_shape(const plx_layer_view *l, uint32_t first, uint32_t count,
                            ocl_shape *s) {
    const plx_tensor_info *out = &l->outputs[0];
    memset(s, 0, sizeof *s);
    s->rank = out->rank;
    for (uint32_t d = 0; d < out->rank; d++) {
        s->dims[d] = out->dims[d];
    }
    for (uint32_t k = 0; k < count; k++) {
        plx_tensor_info_broadcast_strides(&l->inputs[first + k], out, s->st[k]);
    }
    ocl_shape_collapse(s, count);
}

static void arg_shape(ocl_launch *l, const ocl_shape *s, uint32_t count) {
    ocl_arg_int(l, (int32_t)s->rank);
    cl_int8 dims = ocl_int8_of(s->dims, s->rank, 1);
    ocl_arg_value(l, &dims, sizeof dims);
    for (uint32_t k = 0; k < count; k++) {
        cl_int8 st = ocl_int8_of(s->st[k], s->rank, 0);
        ocl_arg_value(l, &st, sizeof st);
    }
}

/* ---- activation --------------------------------------------------------- */

const char *ocl_check_activation(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_activation_desc *d = l->desc;
    if (!plx_activation_func_name(d->func)) {
        return ocl_refuse(buf, size, "activation: unknown func %d", (int)d->func);
    }
    if (d->func > PLX_ACT_SHRINK) { /* the kernel's switch ends there */
        return ocl_refuse(buf, size, "activation %s is not implemented",
                          plx_activation_func_name(d->func));
    }
    if ((why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (d->func == PLX_ACT_SHRINK && (d->alpha != d->alpha || d->beta != d->beta)) {
        return ocl_refuse(buf, size, "activation shrink: lambd (alpha) and bias "
                          "(beta) must not be NaN");
    }
    if (!ocl_same_dims(&l->inputs[0], &l->outputs[0])) {
        return ocl_refuse(buf, size, "activation %s: the output must have the input's shape",
                          plx_activation_func_name(d->func));
    }
    return NULL;
}

bool ocl_prepare_activation(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_activation_desc *d = l->desc;
    int64_t n = ocl_numel(&l->outputs[0]);
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "activation_f32", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)d->func);
    ocl_arg_float(k, d->alpha);
    ocl_arg_float(k, d->beta);
    return true;
}

/* ---- unary -------------------------------------------------------------- */

const char *ocl_check_unary(const ocl_device *dev, const plx_layer_view *l, char *buf,
                            size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_unary_desc *d = l->desc;
    if (!plx_unary_func_name(d->func)) {
        return ocl_refuse(buf, size, "unary: unknown func %d", (int)d->func);
    }
    if (plx_unary_func_is_test(d->func)) {
        if (l->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
            return ocl_refuse(buf, size, "unary %s needs float32, got %s",
                              plx_unary_func_name(d->func), plx_dtype_name(l->inputs[0].dtype));
        }
        if (l->outputs[0].dtype != PLX_DTYPE_BOOL ||
            !ocl_same_dims(&l->inputs[0], &l->outputs[0])) {
            return ocl_refuse(buf, size, "unary %s: the output must be bool of the "
                              "input's shape", plx_unary_func_name(d->func));
        }
        return NULL;
    }
    if (d->func > PLX_UNARY_SIGN) { /* the kernel's switch ends there: bitwise_not */
        return ocl_refuse(buf, size, "unary %s is not implemented",
                          plx_unary_func_name(d->func));
    }
    plx_dtype t = l->inputs[0].dtype;
    plx_dtype want = d->func == PLX_UNARY_NOT ? PLX_DTYPE_BOOL : PLX_DTYPE_FLOAT32;
    if (t != want) {
        return ocl_refuse(buf, size, "unary %s needs %s, got %s", plx_unary_func_name(d->func),
                          plx_dtype_name(want), plx_dtype_name(t));
    }
    if (l->outputs[0].dtype != t || !ocl_same_dims(&l->inputs[0], &l->outputs[0])) {
        return ocl_refuse(buf, size,
                          "unary %s: the output must have the input's dtype and shape",
                          plx_unary_func_name(d->func));
    }
    return NULL;
}

bool ocl_prepare_unary(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                       size_t size) {
    const plx_unary_desc *d = l->desc;
    int64_t n = ocl_numel(&l->outputs[0]);
    bool is_not = d->func == PLX_UNARY_NOT;
    const char *name = is_not                             ? "not_bool"
                       : plx_unary_func_is_test(d->func) ? "unary_test_f32"
                                                         : "unary_f32";
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    if (!is_not) {
        ocl_arg_int(k, (int32_t)d->func);
    }
    return true;
}

/* ---- binary ------------------------------------------------------------- */

const char *ocl_check_binary(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_binary_desc *d = l->desc;
    const char *fname = plx_binary_func_name(d->func);
    if (!fname) {
        return ocl_refuse(buf, size, "binary: unknown func %d", (int)d->func);
    }
    if (d->func > PLX_BINARY_MOD) { /* the kernels' switches end there: bitwise_and and later */
        return ocl_refuse(buf, size, "binary %s is not implemented", fname);
    }
    plx_dtype t = l->inputs[0].dtype;
    if (l->inputs[1].dtype != t) {
        return ocl_refuse(buf, size, "binary %s: inputs of different dtypes (%s, %s)",
                          fname, plx_dtype_name(t), plx_dtype_name(l->inputs[1].dtype));
    }
    bool compare = plx_binary_func_is_compare(d->func), logical = plx_binary_func_is_logical(d->func);
    /* float32 for arithmetic and comparisons; bool for logic and equal */
    bool ok = t == PLX_DTYPE_FLOAT32 ? !logical
                                     : t == PLX_DTYPE_BOOL && (logical || d->func == PLX_BINARY_EQUAL);
    if (!ok) {
        return ocl_refuse(buf, size, "binary %s needs %s, got %s", fname,
                          logical ? "bool" : "float32", plx_dtype_name(t));
    }
    plx_dtype want = compare || logical ? PLX_DTYPE_BOOL : t;
    if (l->outputs[0].dtype != want) {
        return ocl_refuse(buf, size, "binary %s: output dtype %s, expected %s", fname,
                          plx_dtype_name(l->outputs[0].dtype), plx_dtype_name(want));
    }
    if (d->func == PLX_BINARY_PRELU) {
        int64_t strides[PLX_MAX_RANK];
        if (!ocl_same_dims(&l->inputs[0], &l->outputs[0]) ||
            !plx_tensor_info_broadcast_strides(&l->inputs[1], &l->outputs[0], strides)) {
            return ocl_refuse(buf, size,
                              "binary prelu: the output must have A's shape and the "
                              "slope B must broadcast to it");
        }
        return NULL;
    }
    const plx_tensor_info *ins[2] = {&l->inputs[0], &l->inputs[1]};
    if (!plx_tensor_info_is_broadcast_of(ins, 2, &l->outputs[0])) {
        return ocl_refuse(buf, size,
                          "binary %s: the output shape is not the broadcast of the inputs",
                          fname);
    }
    return NULL;
}

bool ocl_prepare_binary(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_binary_desc *d = l->desc;
    int64_t n = ocl_numel(&l->outputs[0]);
    const char *name = l->inputs[0].dtype == PLX_DTYPE_BOOL ? "logical_bool"
                       : plx_binary_func_is_compare(d->func)               ? "compare_f32"
                                                           : "binary_f32";
    ocl_shape s;
    broadcast_shape(l, 0, 2, &s);
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)d->func);
    arg_shape(k, &s, 2);
    return true;
}

/* ---- where -------------------------------------------------------------- */

const char *ocl_check_where(const ocl_device *dev, const plx_layer_view *l, char *buf,
                            size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    if (l->inputs[0].dtype != PLX_DTYPE_BOOL) {
        return ocl_refuse(buf, size, "where: the condition must be bool, got %s",
                          plx_dtype_name(l->inputs[0].dtype));
    }
    plx_dtype t = l->inputs[1].dtype;
    if (l->inputs[2].dtype != t || l->outputs[0].dtype != t || !ocl_size_suffix(t)) {
        return ocl_refuse(buf, size, "where: X, Y and the output must have one dtype (%s, %s, %s)",
                          plx_dtype_name(t), plx_dtype_name(l->inputs[2].dtype),
                          plx_dtype_name(l->outputs[0].dtype));
    }
    const plx_tensor_info *ins[3] = {&l->inputs[0], &l->inputs[1], &l->inputs[2]};
    if (!plx_tensor_info_is_broadcast_of(ins, 3, &l->outputs[0])) {
        return ocl_refuse(buf, size, "where: the output shape is not the broadcast of the inputs");
    }
    return NULL;
}

bool ocl_prepare_where(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                       size_t size) {
    int64_t n = ocl_numel(&l->outputs[0]);
    char name[32];
    snprintf(name, sizeof name, "where_%s", ocl_size_suffix(l->outputs[0].dtype));
    ocl_shape s;
    broadcast_shape(l, 0, 3, &s);
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, 2);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    arg_shape(k, &s, 3);
    return true;
}

/* ---- cast --------------------------------------------------------------- */

static bool cast_dtype(plx_dtype t) {
    return t == PLX_DTYPE_FLOAT32 || t == PLX_DTYPE_FLOAT16 || t == PLX_DTYPE_INT8 || t == PLX_DTYPE_UINT8 ||
           t == PLX_DTYPE_INT32 || t == PLX_DTYPE_INT64 || t == PLX_DTYPE_BOOL;
}

const char *ocl_check_cast(const ocl_device *dev, const plx_layer_view *l, char *buf,
                           size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_cast_desc *d = l->desc;
    plx_dtype from = l->inputs[0].dtype, to = l->outputs[0].dtype;
    if (d->to != to) {
        return ocl_refuse(buf, size, "cast: the output is %s, the descriptor says %s",
                          plx_dtype_name(to), plx_dtype_name(d->to));
    }
    if (!cast_dtype(from) || !cast_dtype(to)) {
        return ocl_refuse(buf, size,
                          "cast from %s to %s is not implemented (float32, "
                          "float16, int8, uint8, int32, int64, bool)",
                          plx_dtype_name(from), plx_dtype_name(to));
    }
    if (!ocl_same_dims(&l->inputs[0], &l->outputs[0])) {
        return ocl_refuse(buf, size, "cast: the output must have the input's shape");
    }
    return NULL;
}

bool ocl_prepare_cast(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    plx_dtype from = l->inputs[0].dtype, to = l->outputs[0].dtype;
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    if (from == to && to != PLX_DTYPE_BOOL) {
        return ocl_plan_copy(plan, 0, 0, (size_t)n * plx_dtype_size(to), err, size);
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "cast_any", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)from);
    ocl_arg_int(k, (int32_t)to);
    return true;
}
