/* The reference kernel of roi_align (ONNX RoiAlign; plexus/ops.h,
 * plx_roi_align_desc, gives the contract), float32.
 *
 * Each roi's geometry (its bins, the sampling grid, the bilinear taps of
 * every sampling point) depends on the roi alone; the points are
 * recomputed for each channel rather than kept, so that nothing
 * allocates. Coordinates, weights and sums are in double, as ONNX's
 * reference computes them. */
#include "kernels_compute.h"

#include <math.h>
#include <string.h>

/* A roi whose adaptive grid has more sampling points per bin than this is
 * an execution error (no real roi has: it would be larger than any
 * image). */
#define ROI_MAX_GRID ((int64_t)1 << 24)

static const char *ra_prepare(const plx_layer_view *l, char *buf, size_t size) {
    const plx_roi_align_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *rois = &l->inputs[1], *bi = &l->inputs[2];
    const plx_tensor_info *y = &l->outputs[0];
    if ((unsigned)d->mode > PLX_ROI_ALIGN_MAX || d->output_height < 1 || d->output_width < 1 ||
        d->sampling_ratio < 0 || !isfinite(d->spatial_scale)) {
        return plxk_refuse(buf, size, "roi_align: the descriptor is invalid (mode %d, "
                           "output %lld x %lld, sampling_ratio %lld)", (int)d->mode,
                           (long long)d->output_height, (long long)d->output_width,
                           (long long)d->sampling_ratio);
    }
    if (x->dtype != PLX_DTYPE_FLOAT32 || rois->dtype != PLX_DTYPE_FLOAT32 ||
        y->dtype != PLX_DTYPE_FLOAT32 ||
        (bi->dtype != PLX_DTYPE_INT32 && bi->dtype != PLX_DTYPE_INT64)) {
        return plxk_refuse(buf, size, "runs roi_align with float32 X, rois and Y and "
                           "int32 or int64 batch_indices, not %s, %s, %s and %s",
                           plx_dtype_name(x->dtype), plx_dtype_name(rois->dtype),
                           plx_dtype_name(y->dtype), plx_dtype_name(bi->dtype));
    }
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 ||
        bi->dims[0] != rois->dims[0] || y->rank != 4 || y->dims[0] != rois->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != d->output_height ||
        y->dims[3] != d->output_width) {
        return plxk_refuse(buf, size, "roi_align: X, rois, batch_indices and Y must be "
                           "[N, C, H, W], [R, 4], [R] and [R, C, output_height, output_width]");
    }
    if ((x->dims[2] == 0 || x->dims[3] == 0) && y->dims[0] * y->dims[1] > 0) {
        return plxk_refuse(buf, size, "roi_align: X has an empty plane to sample from");
    }
    return NULL;
}

const char *plxk_check_roi_align(const plx_layer_view *layer, char *buf, size_t size) {
    return ra_prepare(layer, buf, size);
}

/* One roi's bins and sampling grid. */
typedef struct ra_roi {
    double start_h, start_w, bin_h, bin_w;
    int64_t grid_h, grid_w; /* <= 0: no points (the bin is 0) */
    double count;           /* grid_h * grid_w, at least 1 */
} ra_roi;

/* The grid of one dim: sampling_ratio, or ceil(size / bins) (adaptive).
 * false: too many points. */
static bool ra_grid(int64_t ratio, double size, int64_t bins, int64_t *out) {
    if (ratio > 0) {
        *out = ratio;
        return ratio <= ROI_MAX_GRID;
    }
    double g = ceil(size / (double)bins);
    if (!(g <= (double)ROI_MAX_GRID)) {
        return false;
    }
    *out = g < 0 ? 0 : (int64_t)g;
    return true;
}

/* The value of channel plane `p` ([h, w]) at the sampling point (y, x),
 * pooled as `mode` says: the bilinear sum, or the largest weighted corner. */
static double ra_sample(const float *p, int64_t h, int64_t w, double y, double x, bool max) {
    if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) {
        return 0.0;
    }
    y = y < 0 ? 0 : y;
    x = x < 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= h - 1) {
        y1 = y0 = h - 1;
        y = (double)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= w - 1) {
        x1 = x0 = w - 1;
        x = (double)x0;
    } else {
        x1 = x0 + 1;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1.0 - ly, hx = 1.0 - lx;
    double v1 = hy * hx * p[y0 * w + x0], v2 = hy * lx * p[y0 * w + x1];
    double v3 = ly * hx * p[y1 * w + x0], v4 = ly * lx * p[y1 * w + x1];
    if (!max) {
        return v1 + v2 + v3 + v4;
    }
    double m = v1 > v2 ? v1 : v2;
    m = m > v3 ? m : v3;
    return m > v4 ? m : v4;
}

bool plxk_run_roi_align(const plxk_kernel_args *args) {
    char why[256];
    const plx_layer_view *l = args->layer;
    if (ra_prepare(l, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_roi_align_desc *d = l->desc;
    const float *x = args->inputs[0], *rois = args->inputs[1];
    const void *bi = args->inputs[2];
    float *y = args->outputs[0];
    const int64_t n = l->inputs[0].dims[0], c = l->inputs[0].dims[1];
    const int64_t h = l->inputs[0].dims[2], w = l->inputs[0].dims[3];
    const int64_t r = l->inputs[1].dims[0], oh = d->output_height, ow = d->output_width;
    const bool max = d->mode == PLX_ROI_ALIGN_MAX;
    const double offset = d->half_pixel ? 0.5 : 0.0, scale = d->spatial_scale;
    /* every roi is checked before anything is written */
    ra_roi geo;
    for (int64_t k = 0; k < r; k++) {
        int64_t b = l->inputs[2].dtype == PLX_DTYPE_INT32 ? ((const int32_t *)bi)[k]
                                                          : ((const int64_t *)bi)[k];
        if (b < 0 || b >= n) {
            return plxk_fail(args, "layer '%s' (roi_align): batch_indices[%lld] = %lld is out of "
                             "range [0, %lld)", l->name ? l->name : "", (long long)k,
                             (long long)b, (long long)n);
        }
        const float *q = rois + k * 4;
        double hgt = (q[3] - (double)q[1]) * scale, wid = (q[2] - (double)q[0]) * scale;
        if (!isfinite(q[0]) || !isfinite(q[1]) || !isfinite(q[2]) || !isfinite(q[3]) ||
            !isfinite(hgt) || !isfinite(wid)) {
            return plxk_fail(args, "layer '%s' (roi_align): roi %lld is not finite",
                             l->name ? l->name : "", (long long)k);
        }
        if (!d->half_pixel) {
            hgt = hgt > 1.0 ? hgt : 1.0;
            wid = wid > 1.0 ? wid : 1.0;
        }
        if (!ra_grid(d->sampling_ratio, hgt, oh, &geo.grid_h) ||
            !ra_grid(d->sampling_ratio, wid, ow, &geo.grid_w) ||
            (geo.grid_h > 0 && geo.grid_w > ROI_MAX_GRID / geo.grid_h)) {
            return plxk_fail(args, "layer '%s' (roi_align): roi %lld samples more than %lld "
                             "points per bin", l->name ? l->name : "", (long long)k,
                             (long long)ROI_MAX_GRID);
        }
    }
    for (int64_t k = 0; k < r; k++) {
        int64_t b = l->inputs[2].dtype == PLX_DTYPE_INT32 ? ((const int32_t *)bi)[k]
                                                          : ((const int64_t *)bi)[k];
        const float *q = rois + k * 4;
        geo.start_w = q[0] * scale - offset;
        geo.start_h = q[1] * scale - offset;
        double wid = q[2] * scale - offset - geo.start_w;
        double hgt = q[3] * scale - offset - geo.start_h;
        if (!d->half_pixel) {
            hgt = hgt > 1.0 ? hgt : 1.0;
            wid = wid > 1.0 ? wid : 1.0;
        }
        geo.bin_h = hgt / (double)oh;
        geo.bin_w = wid / (double)ow;
        (void)ra_grid(d->sampling_ratio, hgt, oh, &geo.grid_h);
        (void)ra_grid(d->sampling_ratio, wid, ow, &geo.grid_w);
        int64_t pts = geo.grid_h > 0 && geo.grid_w > 0 ? geo.grid_h * geo.grid_w : 0;
        geo.count = pts > 1 ? (double)pts : 1.0;
        for (int64_t ch = 0; ch < c; ch++) {
            const float *plane = x + (b * c + ch) * h * w;
            float *out = y + (k * c + ch) * oh * ow;
            for (int64_t ph = 0; ph < oh; ph++) {
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = 0.0;
                    bool first = true;
                    for (int64_t iy = 0; iy < geo.grid_h; iy++) {
                        double yy = geo.start_h + (double)ph * geo.bin_h +
                                    ((double)iy + 0.5) * geo.bin_h / (double)geo.grid_h;
                        for (int64_t ix = 0; ix < geo.grid_w; ix++) {
                            double xx = geo.start_w + (double)pw * geo.bin_w +
                                        ((double)ix + 0.5) * geo.bin_w / (double)geo.grid_w;
                            double v = ra_sample(plane, h, w, yy, xx, max);
                            if (!max) {
                                acc += v;
                            } else if (first || v > acc) {
                                acc = v;
                            }
                            first = false;
                        }
                    }
                    out[ph * ow + pw] = (float)(max ? acc : acc / geo.count);
                }
            }
        }
    }
    return true;
}

/* The kernel table's row (kernels.h, PLXK_ROW). */
PLXK_ROW(ROI_ALIGN, roi_align);
