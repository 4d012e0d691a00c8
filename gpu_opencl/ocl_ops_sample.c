/* gpu_opencl sampling and rearranging: grid_sample, reverse_sequence,
 * max_unpool, col2im, det and roi_align. Kernels in kernels/sample.cl. */
#include "ocl_ops_internal.h"

#include <math.h>
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
        return ocl_refuse(buf, size, "grid_sample: mode %d or padding %d is unknown",
                          (int)d->mode, (int)d->padding);
    }
    if (x->rank < 3 || grid->rank != x->rank || y->rank != x->rank ||
        grid->dims[0] != x->dims[0] || grid->dims[x->rank - 1] != (int64_t)(x->rank - 2) ||
        y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return ocl_refuse(buf, size, "grid_sample: X, grid and Y must be [N, C, "
                          "D1..Dr], [N, O1..Or, r] and [N, C, O1..Or]");
    }
    uint32_t r = x->rank - 2;
    *points = 1;
    for (uint32_t k = 0; k < r; k++) {
        if (y->dims[2 + k] != grid->dims[1 + k]) {
            return ocl_refuse(buf, size, "grid_sample: Y's spatial dims must be "
                              "grid's");
        }
        *points *= y->dims[2 + k];
    }
    if (ocl_dim_product(x, 2, x->rank) == 0 && ocl_numel(y) > 0) {
        return ocl_refuse(buf, size, "grid_sample: X has an empty spatial dim to "
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

/* ---- reverse_sequence --------------------------------------------------- */

const char *ocl_check_reverse_sequence(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                       size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_reverse_sequence_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *lens = &l->inputs[1], *y = &l->outputs[0];
    if (!ocl_size_suffix(x->dtype) || x->dtype == PLX_DTYPE_INT4 || x->dtype == PLX_DTYPE_UINT4 ||
        y->dtype != x->dtype) {
        return ocl_refuse(buf, size, "reverse_sequence: X %s and Y %s",
                          plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    if (lens->dtype != PLX_DTYPE_INT32 && lens->dtype != PLX_DTYPE_INT64) {
        return ocl_refuse(buf, size, "reverse_sequence: sequence_lens must be int32 "
                          "or int64, got %s", plx_dtype_name(lens->dtype));
    }
    if (x->rank < 2 || !((d->batch_axis == 0 && d->time_axis == 1) ||
                         (d->batch_axis == 1 && d->time_axis == 0))) {
        return ocl_refuse(buf, size, "reverse_sequence: X of rank %u with batch axis "
                          "%d and time axis %d (rank >= 2, axes 0 and 1)", x->rank,
                          (int)d->batch_axis, (int)d->time_axis);
    }
    if (lens->rank != 1 || lens->dims[0] != x->dims[d->batch_axis]) {
        return ocl_refuse(buf, size, "reverse_sequence: sequence_lens must be "
                          "[batch]");
    }
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

bool ocl_prepare_reverse_sequence(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                  char *err, size_t size) {
    const plx_reverse_sequence_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t n = ocl_numel(x);
    if (n == 0) {
        return true;
    }
    uint32_t flag = 0;
    if (!ocl_plan_index_check(plan, dev, l->name, "reverse_sequence", 1,
                              l->inputs[1].dtype == PLX_DTYPE_INT64, &flag, err, size)) {
        return false;
    }
    snprintf(plan->check.value_name, sizeof plan->check.value_name, "length");
    snprintf(plan->check.tensor_name, sizeof plan->check.tensor_name, "sequence_lens");
    char name[40];
    snprintf(name, sizeof name, "reverse_sequence_%s", ocl_size_suffix(x->dtype));
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_int(k, l->inputs[1].dtype == PLX_DTYPE_INT64);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)x->dims[1]);
    ocl_arg_int(k, (int32_t)ocl_dim_product(x, 2, x->rank));
    ocl_arg_int(k, d->batch_axis);
    ocl_arg_int(k, (int32_t)x->dims[d->time_axis]);
    ocl_arg_aux(k, flag);
    return true;
}

/* ---- max_unpool --------------------------------------------------------- */

/* S's dims (the pool's input) and Y's, of rank r + 2; *full_count S's
 * element count. */
static const char *unpool_geom(const plx_layer_view *l, int64_t full[PLX_MAX_RANK],
                               int64_t *full_count, char *buf, size_t size) {
    const plx_max_unpool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1], *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL || x->rank != r + 2 || y->rank != r + 2 ||
        ind->dtype != PLX_DTYPE_INT64 || !ocl_same_dims(x, ind) || y->dtype != x->dtype ||
        !ocl_size_suffix(x->dtype) || x->dtype == PLX_DTYPE_INT4 || x->dtype == PLX_DTYPE_UINT4 ||
        y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return ocl_refuse(buf, size, "max_unpool: X [N, C, D1..Dr], I (int64, X's "
                          "shape) and Y [N, C, O1..Or] of X's dtype expected");
    }
    *full_count = x->dims[0] * x->dims[1];
    full[0] = x->dims[0];
    full[1] = x->dims[1];
    for (uint32_t i = 0; i < r; i++) {
        int64_t f = (x->dims[2 + i] > 0 ? x->dims[2 + i] - 1 : 0) * d->strides[i] + d->kernel[i] -
                    d->pads_begin[i] - d->pads_end[i];
        if (d->kernel[i] < 1 || d->strides[i] < 1 || f < 1 || f > OCL_INDEX_LIMIT ||
            y->dims[2 + i] < 1) {
            return ocl_refuse(buf, size, "max_unpool: dim %u of the pool's input is "
                              "empty or too large", (unsigned)i);
        }
        full[2 + i] = f;
        if (*full_count > OCL_INDEX_LIMIT / f) {
            return ocl_refuse(buf, size, "max_unpool: the pool's input has too many "
                              "elements (2^31 - 2^16 at most)");
        }
        *full_count *= f;
    }
    return NULL;
}

const char *ocl_check_max_unpool(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    int64_t full[PLX_MAX_RANK], count;
    return unpool_geom(l, full, &count, buf, size);
}

bool ocl_prepare_max_unpool(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    int64_t full[PLX_MAX_RANK] = {0}, full_count = 0;
    char buf[8];
    unpool_geom(l, full, &full_count, buf, sizeof buf);
    int64_t ny = ocl_numel(y), nx = ocl_numel(x);
    if (ny == 0) {
        return true;
    }
    uint32_t winner = 0, flag = 0;
    if (!ocl_plan_aux(plan, dev, NULL, (size_t)ny * sizeof(cl_int), &winner, err, size) ||
        !ocl_plan_index_check(plan, dev, l->name, "max_unpool", 1, true, &flag, err, size)) {
        return false;
    }
    snprintf(plan->check.tensor_name, sizeof plan->check.tensor_name, "I");
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "fill_i32", ny, &k, err, size)) {
        return false;
    }
    ocl_arg_aux(k, winner);
    ocl_arg_int(k, (int32_t)ny);
    ocl_arg_int(k, -1);
    if (nx > 0) {
        if (!ocl_kernel_1d(plan, dev, "max_unpool_mark", nx, &k, err, size)) {
            return false;
        }
        ocl_arg_input(k, 1);
        ocl_arg_aux(k, winner);
        ocl_arg_int(k, (int32_t)nx);
        ocl_arg_int(k, (int32_t)y->rank);
        cl_int8 fd = ocl_int8_of(full, y->rank, 1), od = ocl_int8_of(y->dims, y->rank, 1);
        ocl_arg_value(k, &fd, sizeof fd);
        ocl_arg_value(k, &od, sizeof od);
        cl_long fc = full_count;
        ocl_arg_value(k, &fc, sizeof fc);
        ocl_arg_aux(k, flag);
    }
    char name[40];
    snprintf(name, sizeof name, "max_unpool_write_%s", ocl_size_suffix(x->dtype));
    if (!ocl_kernel_1d(plan, dev, name, ny, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_aux(k, winner);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)ny);
    return true;
}

/* ---- col2im ------------------------------------------------------------- */

static const char *col2im_geom(const plx_layer_view *l, int64_t nblk[PLX_MAX_RANK],
                               int64_t *block, int64_t *blocks, char *buf, size_t size) {
    const plx_col2im_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL || x->rank != 3 || y->rank != r + 2) {
        return ocl_refuse(buf, size, "col2im: X must be [N, C * block, L] and Y "
                          "[N, C, image...] over 1 to %d spatial dims", PLX_COL2IM_MAX_SPATIAL);
    }
    *block = 1;
    *blocks = 1;
    for (uint32_t i = 0; i < r; i++) {
        int64_t span = d->dilations[i] * (d->block_shape[i] - 1) + 1;
        int64_t padded = d->image_shape[i] + d->pads_begin[i] + d->pads_end[i];
        if (d->image_shape[i] < 1 || d->block_shape[i] < 1 || d->strides[i] < 1 ||
            d->dilations[i] < 1 || d->pads_begin[i] < 0 || d->pads_end[i] < 0 ||
            padded < span || y->dims[2 + i] != d->image_shape[i] ||
            padded > OCL_INDEX_LIMIT || span > OCL_INDEX_LIMIT) {
            return ocl_refuse(buf, size, "col2im: the geometry of dim %u does not "
                              "match Y", (unsigned)i);
        }
        nblk[i] = (padded - span) / d->strides[i] + 1;
        *block *= d->block_shape[i];
        *blocks *= nblk[i];
    }
    if (y->dims[0] != x->dims[0] || x->dims[1] != y->dims[1] * *block || x->dims[2] != *blocks) {
        return ocl_refuse(buf, size, "col2im: X's dims are not Y's channels times "
                          "the block and the block count");
    }
    return NULL;
}

const char *ocl_check_col2im(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    int64_t nblk[PLX_MAX_RANK], block, blocks;
    return col2im_geom(l, nblk, &block, &blocks, buf, size);
}

bool ocl_prepare_col2im(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_col2im_desc *d = l->desc;
    const plx_tensor_info *y = &l->outputs[0];
    int64_t nblk[PLX_MAX_RANK] = {0}, block = 0, blocks = 0;
    char buf[8];
    col2im_geom(l, nblk, &block, &blocks, buf, sizeof buf);
    int64_t n = ocl_numel(y);
    if (n == 0) {
        return true;
    }
    uint32_t r = d->spatial;
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "col2im_f32", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)r);
    ocl_arg_int(k, (int32_t)ocl_dim_product(y, 2, y->rank));
    ocl_arg_int(k, (int32_t)block);
    ocl_arg_int(k, (int32_t)blocks);
    const int64_t *arrays[6] = {d->image_shape, d->block_shape, d->strides, d->dilations,
                                d->pads_begin, nblk};
    for (int a = 0; a < 6; a++) {
        cl_int8 v = ocl_int8_of(arrays[a], r, 1);
        ocl_arg_value(k, &v, sizeof v);
    }
    return true;
}

/* ---- det ---------------------------------------------------------------- */

/* One work-item per matrix, O(M^3) each: M is capped so that a run stays
 * short. */
#define DET_MAX_M 256

static const char *det_geom(const plx_layer_view *l, int64_t *count, int64_t *m, char *buf,
                            size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (x->rank < 2 || y->rank != x->rank - 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        return ocl_refuse(buf, size, "det: X must be [.., M, M] and Y [..]");
    }
    *m = x->dims[x->rank - 1];
    if (*m > DET_MAX_M) {
        return ocl_refuse(buf, size, "det: matrices of %lld x %lld are not "
                          "implemented (M up to %d)", (long long)*m, (long long)*m, DET_MAX_M);
    }
    *count = ocl_dim_product(x, 0, x->rank - 2);
    return ocl_require_shape(l, 0, x->rank - 2, x->dims, buf, size);
}

const char *ocl_check_det(const ocl_device *dev, const plx_layer_view *l, char *buf,
                          size_t size) {
    (void)dev;
    int64_t count, m;
    return det_geom(l, &count, &m, buf, size);
}

bool ocl_prepare_det(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                     size_t size) {
    int64_t count = 0, m = 0;
    char buf[8];
    det_geom(l, &count, &m, buf, sizeof buf);
    if (count == 0) {
        return true;
    }
    uint32_t scratch = 0;
    if (!ocl_plan_aux(plan, dev, NULL, (size_t)(count * m * m) * sizeof(cl_float), &scratch, err,
                      size)) {
        return false;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "det_f32", count, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_aux(k, scratch);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)count);
    ocl_arg_int(k, (int32_t)m);
    return true;
}

/* ---- roi_align ---------------------------------------------------------- */

const char *ocl_check_roi_align(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                size_t size) {
    (void)dev;
    const plx_roi_align_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *rois = &l->inputs[1], *bi = &l->inputs[2];
    const plx_tensor_info *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    if ((unsigned)d->mode > PLX_ROI_ALIGN_MAX || d->output_height < 1 || d->output_width < 1 ||
        d->sampling_ratio < 0 || d->sampling_ratio > ((int64_t)1 << 24) ||
        !isfinite(d->spatial_scale)) {
        return ocl_refuse(buf, size, "roi_align: the descriptor is invalid (mode %d, "
                          "output %lld x %lld, sampling_ratio %lld)", (int)d->mode,
                          (long long)d->output_height, (long long)d->output_width,
                          (long long)d->sampling_ratio);
    }
    if (x->dtype != PLX_DTYPE_FLOAT32 || rois->dtype != PLX_DTYPE_FLOAT32 ||
        y->dtype != PLX_DTYPE_FLOAT32 ||
        (bi->dtype != PLX_DTYPE_INT32 && bi->dtype != PLX_DTYPE_INT64)) {
        return ocl_refuse(buf, size, "roi_align needs float32 X, rois and Y and int32 "
                          "or int64 batch_indices, got %s, %s, %s and %s",
                          plx_dtype_name(x->dtype), plx_dtype_name(rois->dtype),
                          plx_dtype_name(y->dtype), plx_dtype_name(bi->dtype));
    }
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
        bi->dims[0] != rois->dims[0] || y->rank != 4 || y->dims[0] != rois->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != d->output_height ||
        y->dims[3] != d->output_width) {
        return ocl_refuse(buf, size, "roi_align: X, rois, batch_indices and Y must be "
                          "[N, C, H, W], [R, 4], [R] and [R, C, output_height, output_width]");
    }
    if ((x->dims[2] == 0 || x->dims[3] == 0) && ocl_numel(y) > 0) {
        return ocl_refuse(buf, size, "roi_align: X has an empty plane to sample "
                          "from");
    }
    return NULL;
}

bool ocl_prepare_roi_align(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                           char *err, size_t size) {
    const plx_roi_align_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    uint32_t flag = 0;
    bool is64 = l->inputs[2].dtype == PLX_DTYPE_INT64;
    if (!ocl_plan_index_check(plan, dev, l->name, "roi_align", 2, is64, &flag, err, size)) {
        return false;
    }
    snprintf(plan->check.tensor_name, sizeof plan->check.tensor_name, "batch_indices");
    snprintf(plan->check.other_noun, sizeof plan->check.other_noun, "roi");
    snprintf(plan->check.other_text, sizeof plan->check.other_text,
             "is not finite or samples more than 2^24 points per bin");
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "roi_align_f32", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, 2);
    ocl_arg_int(k, is64);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    for (int i = 0; i < 4; i++) {
        ocl_arg_int(k, (int32_t)x->dims[i]);
    }
    ocl_arg_int(k, (int32_t)d->output_height);
    ocl_arg_int(k, (int32_t)d->output_width);
    ocl_arg_int(k, (int32_t)d->sampling_ratio);
    ocl_arg_float(k, d->spatial_scale);
    ocl_arg_int(k, d->half_pixel ? 1 : 0);
    ocl_arg_int(k, d->mode == PLX_ROI_ALIGN_MAX ? 1 : 0);
    ocl_arg_aux(k, flag);
    return true;
}

/* ---- dft, stft ---------------------------------------------------------- */

/* One line per (outer, inner) pair (dft) or (batch, frame) (stft): the
 * launch of dft_f32 over out bins of each. */
typedef struct dft_geom {
    int64_t lines, out, inner, frames, a_stride, f_stride, j_stride, comp, len, take;
} dft_geom;

static const char *dft_geom_of(const plx_layer_view *l, dft_geom *g, char *buf, size_t size) {
    const plx_dft_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    uint32_t r = x->rank;
    int64_t axis = d->axis < 0 ? d->axis + (int64_t)r : d->axis;
    if (r < 2 || axis < 0 || axis >= (int64_t)r - 1 || y->rank != r ||
        (x->dims[r - 1] != 1 && x->dims[r - 1] != 2) || y->dims[r - 1] != 2 ||
        (d->inverse && d->onesided)) {
        return ocl_refuse(buf, size, "dft: X %u-D with axis %d, inverse %d and "
                          "onesided %d is not a transform it runs", (unsigned)r, (int)d->axis,
                          (int)d->inverse, (int)d->onesided);
    }
    int64_t outer = 1;
    g->inner = 1;
    for (int64_t i = 0; i < (int64_t)r - 1; i++) {
        if (i != axis && y->dims[i] != x->dims[i]) {
            return ocl_refuse(buf, size, "dft: Y's dims must be X's but along axis");
        }
        if (i < axis) {
            outer *= x->dims[i];
        } else if (i > axis) {
            g->inner *= x->dims[i];
        }
    }
    int64_t n = x->dims[axis];
    g->comp = x->dims[r - 1];
    g->len = d->length ? d->length : n;
    g->out = d->onesided ? g->len / 2 + 1 : g->len;
    if (g->len < 1 || g->len > OCL_INDEX_LIMIT || y->dims[axis] != g->out) {
        return ocl_refuse(buf, size, "dft: the length along axis is not Y's");
    }
    g->take = n < g->len ? n : g->len;
    g->lines = outer;
    g->frames = 1;
    g->a_stride = n * g->inner * g->comp;
    g->f_stride = 0;
    g->j_stride = g->inner * g->comp;
    return NULL;
}

static const char *stft_geom_of(const plx_layer_view *l, dft_geom *g, char *buf, size_t size) {
    const plx_stft_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const plx_tensor_info *w = l->input_count > 1 ? &l->inputs[1] : NULL;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2) || d->frame_step < 1 ||
        d->frame_length < 1 || d->frame_length > x->dims[1] ||
        (w && (w->rank != 1 || w->dims[0] != d->frame_length))) {
        return ocl_refuse(buf, size, "stft: signal must be [B, len, 1 or 2] with 1 <= "
                          "frame_length <= len, window [frame_length], frame_step >= 1");
    }
    int64_t frames = 1 + (x->dims[1] - d->frame_length) / d->frame_step;
    g->out = d->onesided ? d->frame_length / 2 + 1 : d->frame_length;
    if (y->rank != 4 || y->dims[0] != x->dims[0] || y->dims[1] != frames ||
        y->dims[2] != g->out || y->dims[3] != 2 || d->frame_step > OCL_INDEX_LIMIT) {
        return ocl_refuse(buf, size, "stft: Y must be [B, frames, bins, 2]");
    }
    g->comp = x->dims[2];
    g->len = g->take = d->frame_length;
    g->inner = 1;
    g->frames = frames;
    g->lines = x->dims[0] * frames;
    g->a_stride = x->dims[1] * g->comp;
    g->f_stride = d->frame_step * g->comp;
    g->j_stride = g->comp;
    return NULL;
}

static bool dft_launch(ocl_plan *plan, const ocl_device *dev, const dft_geom *g, bool inverse,
                       bool window, char *err, size_t size) {
    int64_t n = g->lines * g->out * g->inner;
    if (n == 0) {
        return true;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "dft_f32", n, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, window ? 1 : 0);
    ocl_arg_output(k, 0);
    const int64_t v[12] = {n,          g->out,     g->inner,   g->frames, g->a_stride,
                           g->f_stride, g->j_stride, g->comp,    g->len,    g->take,
                           inverse,    window};
    for (int i = 0; i < 12; i++) {
        ocl_arg_int(k, (int32_t)v[i]);
    }
    return true;
}

const char *ocl_check_dft(const ocl_device *dev, const plx_layer_view *l, char *buf,
                          size_t size) {
    (void)dev;
    dft_geom g;
    return dft_geom_of(l, &g, buf, size);
}

bool ocl_prepare_dft(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                     size_t size) {
    dft_geom g;
    memset(&g, 0, sizeof g);
    char buf[8];
    dft_geom_of(l, &g, buf, sizeof buf);
    return dft_launch(plan, dev, &g, ((const plx_dft_desc *)l->desc)->inverse, false, err, size);
}

const char *ocl_check_stft(const ocl_device *dev, const plx_layer_view *l, char *buf,
                           size_t size) {
    (void)dev;
    dft_geom g;
    return stft_geom_of(l, &g, buf, size);
}

bool ocl_prepare_stft(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    dft_geom g;
    memset(&g, 0, sizeof g);
    char buf[8];
    stft_geom_of(l, &g, buf, sizeof buf);
    return dft_launch(plan, dev, &g, false, l->input_count > 1, err, size);
}
