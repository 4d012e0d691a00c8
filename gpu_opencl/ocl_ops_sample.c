/* gpu_opencl sampling and rearranging: grid_sample (float32). Kernels in
 * kernels/sample.cl. */
#include "ocl_ops_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- grid_sample -------------------------------------------------------- */

/* X [N, C, D1..Dr], grid [N, O1..Or, r], Y [N, C, O1..Or], all float32;
 * *points the product of the O's. */
static const char *grid_sample_geom(const plx_layer_view *l, int64_t *points, char *buf,
                                    size_t size) {
    const plx_grid_sample_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *grid = &l->inputs[1], *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if ((unsigned)d->mode > PLX_GRID_SAMPLE_CUBIC ||
        (unsigned)d->padding > PLX_GRID_SAMPLE_REFLECTION) {
        return ocl_refuse(buf, size, "gpu_opencl: grid_sample: mode %d or padding %d is unknown",
                          (int)d->mode, (int)d->padding);
    }
    if (x->rank < 3 || grid->rank != x->rank || y->rank != x->rank ||
        grid->dims[0] != x->dims[0] || grid->dims[x->rank - 1] != (int64_t)(x->rank - 2) ||
        y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return ocl_refuse(buf, size, "gpu_opencl: grid_sample: X, grid and Y must be [N, C, "
                          "D1..Dr], [N, O1..Or, r] and [N, C, O1..Or]");
    }
    uint32_t r = x->rank - 2;
    *points = 1;
    for (uint32_t k = 0; k < r; k++) {
        if (y->dims[2 + k] != grid->dims[1 + k]) {
            return ocl_refuse(buf, size, "gpu_opencl: grid_sample: Y's spatial dims must be "
                              "grid's");
        }
        *points *= y->dims[2 + k];
    }
    if (ocl_dim_product(x, 2, x->rank) == 0 && ocl_numel(y) > 0) {
        return ocl_refuse(buf, size, "gpu_opencl: grid_sample: X has an empty spatial dim to "
                          "sample from");
    }
    return NULL;
}

const char *ocl_check_grid_sample(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                  size_t size) {
    (void)dev;
    int64_t points;
    return grid_sample_geom(l, &points, buf, size);
}

bool ocl_prepare_grid_sample(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                             char *err, size_t size) {
    const plx_grid_sample_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t points = 0, n = ocl_numel(&l->outputs[0]);
    char buf[8];
    grid_sample_geom(l, &points, buf, sizeof buf);
    if (n == 0) {
        return true;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "grid_sample_f32", n, &k, err, size)) {
        return false;
    }
    uint32_t r = x->rank - 2;
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)x->dims[1]);
    ocl_arg_int(k, (int32_t)r);
    cl_int8 dims = ocl_int8_of(x->dims + 2, r, 1);
    ocl_arg_value(k, &dims, sizeof dims);
    ocl_arg_int(k, (int32_t)points);
    int32_t mode = d->mode == PLX_GRID_SAMPLE_LINEAR ? 0 : d->mode == PLX_GRID_SAMPLE_NEAREST ? 1 : 2;
    ocl_arg_int(k, mode);
    ocl_arg_int(k, (int32_t)d->padding);
    ocl_arg_int(k, d->align_corners ? 1 : 0);
    return true;
}
