/* The ONNX converters of resampling: Resize and Upsample, one resize
 * layer over H and W whose scales, sizes and roi (inputs) are read at
 * import; GridSample, one grid_sample layer; RoiAlign, one roi_align
 * layer. Attributes go into the
 * descriptors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* GridSample (opsets 16, 20, 22): opset 16 names the modes bilinear and
 * bicubic and takes 4-D X only; from 20 they are linear and cubic, over
 * any number of spatial dims. Both spellings are taken at every opset. */
plx_status onnxi_conv_grid_sample(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->dtype != PLX_DTYPE_FLOAT32 && x->dtype != PLX_DTYPE_FLOAT16 &&
        x->dtype != PLX_DTYPE_BFLOAT16) {
        return ONNXI_UNSUPPORTED("X of type %s (grid_sample interpolates float types only)",
                                 plx_dtype_name(x->dtype));
    }
    if (c->opset < 20 && x->rank != 4) {
        return onnxi_invalid(c, n, "X has rank %u; GridSample before opset 20 takes 4-D X",
                             x->rank);
    }
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    char mbuf[32], pbuf[32];
    const char *mode = onnxi_attr_s(n, "mode", c->opset < 20 ? "bilinear" : "linear", mbuf,
                                    sizeof mbuf);
    if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0) {
        d.mode = PLX_GRID_SAMPLE_LINEAR;
    } else if (strcmp(mode, "nearest") == 0) {
        d.mode = PLX_GRID_SAMPLE_NEAREST;
    } else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0) {
        d.mode = PLX_GRID_SAMPLE_CUBIC;
    } else {
        return onnxi_invalid(c, n, "mode '%s' is not linear, nearest or cubic", mode);
    }
    const char *padding = onnxi_attr_s(n, "padding_mode", "zeros", pbuf, sizeof pbuf);
    if (strcmp(padding, "zeros") == 0) {
        d.padding = PLX_GRID_SAMPLE_ZEROS;
    } else if (strcmp(padding, "border") == 0) {
        d.padding = PLX_GRID_SAMPLE_BORDER;
    } else if (strcmp(padding, "reflection") == 0) {
        d.padding = PLX_GRID_SAMPLE_REFLECTION;
    } else {
        return onnxi_invalid(c, n, "padding_mode '%s' is not zeros, border or reflection",
                             padding);
    }
    d.align_corners = onnxi_attr_i(n, "align_corners", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_GRID_SAMPLE, &d, n->in, 2);
}

/* ---- RoiAlign ----------------------------------------------------------- */

/* RoiAlign (10, 16, 22): roi_align. coordinate_transformation_mode came
 * with opset 16 (default half_pixel); opset 10 has output_half_pixel's
 * behaviour only. */
plx_status onnxi_conv_roi_align(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    plx_roi_align_desc d = PLX_ROI_ALIGN_DESC_INIT;
    char mbuf[32], cbuf[32];
    const char *mode = onnxi_attr_s(n, "mode", "avg", mbuf, sizeof mbuf);
    if (strcmp(mode, "avg") == 0) {
        d.mode = PLX_ROI_ALIGN_AVG;
    } else if (strcmp(mode, "max") == 0) {
        d.mode = PLX_ROI_ALIGN_MAX;
    } else {
        return onnxi_invalid(c, n, "mode '%s' is not avg or max", mode);
    }
    const char *ctm = onnxi_attr_s(n, "coordinate_transformation_mode",
                                   c->opset < 16 ? "output_half_pixel" : "half_pixel", cbuf,
                                   sizeof cbuf);
    if (strcmp(ctm, "half_pixel") == 0) {
        d.half_pixel = true;
    } else if (strcmp(ctm, "output_half_pixel") == 0) {
        d.half_pixel = false;
    } else {
        return onnxi_invalid(c, n, "coordinate_transformation_mode '%s' is not half_pixel or "
                             "output_half_pixel", ctm);
    }
    d.output_height = onnxi_attr_i(n, "output_height", 1);
    d.output_width = onnxi_attr_i(n, "output_width", 1);
    d.sampling_ratio = onnxi_attr_i(n, "sampling_ratio", 0);
    d.spatial_scale = onnxi_attr_f(n, "spatial_scale", 1.0f);
    return onnxi_emit1(c, n, PLX_OP_ROI_ALIGN, &d, n->in, 3);
}

/* ---- Resize, Upsample --------------------------------------------------- */

/* The value of a string attribute among `names` (its index into `values`),
 * or an unsupported-attribute status. */
typedef struct resize_name {
    const char *name;
    int value;
} resize_name;

static plx_status resize_enum(const onnxi_node *n, const char *attr, const char *def,
                              const resize_name *names, size_t count, int *out) {
    char buf[48];
    const char *v = onnxi_attr_s(n, attr, def, buf, sizeof buf);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(names[i].name, v) == 0) {
            *out = names[i].value;
            return NULL;
        }
    }
    return ONNXI_UNSUPPORTED("%s='%s'", attr, v);
}

#define RESIZE_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The float values of constant input i (roi, scales), at most `max`. */
static plx_status resize_const_floats(onnxi_node *n, size_t i, const char *role, double *out,
                                      size_t max, size_t *count) {
    plx_status st = onnxi_need_const(n, i, role);
    if (st) {
        return st;
    }
    size_t cnt = onnxi_elem_count(&n->in[i]->info);
    if (cnt > max) {
        return ONNXI_UNSUPPORTED("%s has %zu values; at most %zu are supported", role, cnt, max);
    }
    for (size_t k = 0; k < cnt; k++) {
        out[k] = onnxi_const_f64(n->in[i], k);
    }
    *count = cnt;
    return NULL;
}

/* Resize (10, 11, 13, 18, 19) and Upsample (7, 9), on the H and W of an
 * NCHW X: scales, sizes and roi must be known at import and leave N and C
 * as they are; `axes` (18) says which dims they name, the others keep
 * scale 1 and their size. keep_aspect_ratio_policy (18) turns sizes into
 * one scale for the named dims (their sizes over the input's, the least
 * or the greatest), which maps coordinates, and rounded sizes; the
 * descriptor then carries both. antialias (18) selects the antialiased
 * linear or cubic mode (nearest has no antialiasing, ONNX says: ignored).
 * tf_crop_and_resize is taken with sizes only: with scales ONNX's text
 * computes the output size over the roi, its reference over the whole
 * input. */
plx_status onnxi_conv_resize(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    const char *op = n->proto->op_type;
    bool upsample = strcmp(op, "Upsample") == 0;
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank != 4) {
        return ONNXI_UNSUPPORTED("input X has rank %u; only rank 4 (NCHW) is supported", x->rank);
    }
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    static const resize_name modes[] = {{"nearest", PLX_RESIZE_NEAREST},
                                        {"linear", PLX_RESIZE_LINEAR},
                                        {"bilinear", PLX_RESIZE_LINEAR},
                                        {"cubic", PLX_RESIZE_CUBIC}};
    int v = 0;
    if ((st = resize_enum(n, "mode", "nearest", modes, RESIZE_COUNT(modes), &v))) {
        return st;
    }
    d.mode = (plx_resize_mode)v;
    /* Upsample and Resize-10: asymmetric coordinates, floor for nearest. */
    bool old = upsample || c->opset < 11;
    static const resize_name coords[] = {
        {"half_pixel", PLX_RESIZE_COORD_HALF_PIXEL},
        {"asymmetric", PLX_RESIZE_COORD_ASYMMETRIC},
        {"align_corners", PLX_RESIZE_COORD_ALIGN_CORNERS},
        {"pytorch_half_pixel", PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL},
        {"tf_half_pixel_for_nn", PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN},
        {"half_pixel_symmetric", PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC},
        {"tf_crop_and_resize", PLX_RESIZE_COORD_TF_CROP_AND_RESIZE}};
    static const resize_name nmodes[] = {
        {"round_prefer_floor", PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR},
        {"round_prefer_ceil", PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL},
        {"floor", PLX_RESIZE_NEAREST_FLOOR},
        {"ceil", PLX_RESIZE_NEAREST_CEIL}};
    if (old) {
        d.coord = PLX_RESIZE_COORD_ASYMMETRIC;
        d.nearest = PLX_RESIZE_NEAREST_FLOOR;
    } else {
        if ((st = resize_enum(n, "coordinate_transformation_mode", "half_pixel", coords,
                              RESIZE_COUNT(coords), &v))) {
            return st;
        }
        d.coord = (plx_resize_coord)v;
        if ((st = resize_enum(n, "nearest_mode", "round_prefer_floor", nmodes,
                              RESIZE_COUNT(nmodes), &v))) {
            return st;
        }
        d.nearest = (plx_resize_nearest)v;
    }
    d.cubic_coeff_a = onnxi_attr_f(n, "cubic_coeff_a", -0.75f);
    d.exclude_outside = onnxi_attr_i(n, "exclude_outside", 0) != 0;
    d.extrapolation_value = onnxi_attr_f(n, "extrapolation_value", 0.0f);
    if (onnxi_attr_i(n, "antialias", 0) != 0 && d.mode != PLX_RESIZE_NEAREST) {
        d.mode = d.mode == PLX_RESIZE_CUBIC ? PLX_RESIZE_CUBIC_ANTIALIAS
                                            : PLX_RESIZE_LINEAR_ANTIALIAS;
    }
    static const resize_name policies[] = {{"stretch", 0}, {"not_larger", 1}, {"not_smaller", 2}};
    int policy = 0;
    if ((st = resize_enum(n, "keep_aspect_ratio_policy", "stretch", policies,
                          RESIZE_COUNT(policies), &policy))) {
        return st;
    }
    /* axes: the dims that roi, scales and sizes name, in their order */
    int64_t axes[PLX_MAX_RANK];
    size_t naxes = 0;
    bool has_axes = false;
    if ((st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &naxes, &has_axes))) {
        return st;
    }
    if (!has_axes) {
        naxes = 4;
        for (size_t i = 0; i < 4; i++) {
            axes[i] = (int64_t)i;
        }
    }
    int32_t norm[PLX_MAX_RANK];
    if ((st = onnxi_axes(c, n, "attribute 'axes'", axes, naxes, 4, norm))) {
        return st;
    }
    for (size_t i = 0; i < naxes; i++) {
        axes[i] = norm[i];
    }
    /* Scales or sizes: attribute (Upsample-7), input 1 (Upsample-9,
     * Resize-10), inputs 2 and 3 (Resize-11+); roi input 1 (Resize-11+). */
    double scales[PLX_MAX_RANK], roi[2 * PLX_MAX_RANK];
    int64_t sizes[PLX_MAX_RANK];
    size_t ns = 0, nz = 0, nr = 0;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *a = onnxi_attr(n, "scales");
        if (!a || a->n_floats > PLX_MAX_RANK) {
            return onnxi_invalid(c, n, "attribute scales is required");
        }
        for (size_t i = 0; i < a->n_floats; i++) {
            scales[i] = a->floats[i];
        }
        ns = a->n_floats;
    } else {
        size_t si = old ? 1 : 2;
        if (onnxi_has_in(n, si) && onnxi_elem_count(&n->in[si]->info) > 0 &&
            (st = resize_const_floats(n, si, "scales", scales, PLX_MAX_RANK, &ns))) {
            return st;
        }
        if (!old && onnxi_has_in(n, 3) && onnxi_elem_count(&n->in[3]->info) > 0 &&
            (st = onnxi_const_ints(n, 3, "sizes", sizes, PLX_MAX_RANK, &nz))) {
            return st;
        }
        if (d.coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE && onnxi_has_in(n, 1) &&
            onnxi_elem_count(&n->in[1]->info) > 0 &&
            (st = resize_const_floats(n, 1, "roi", roi, 2 * PLX_MAX_RANK, &nr))) {
            return st;
        }
    }
    if (!ns && !nz) {
        return onnxi_invalid(c, n, "needs scales or sizes");
    }
    if (ns && nz) {
        return onnxi_invalid(c, n, "give scales or sizes, not both");
    }
    const char *scales_what = upsample && c->opset < 9 ? "attribute 'scales'"
                              : old                       ? "input 1 (scales)"
                                                          : "input 2 (scales)";
    if ((ns && (st = onnxi_check_count(c, n, scales_what, ns, naxes, "one per axis"))) ||
        (nz && (st = onnxi_check_count(c, n, "input 3 (sizes)", nz, naxes, "one per axis"))) ||
        (nr && (st = onnxi_check_count(c, n, "input 1 (roi)", nr, 2 * naxes, "two per axis")))) {
        return st;
    }
    /* the four dims' scale, size and roi */
    double scale4[4] = {1, 1, 1, 1}, start4[4] = {0, 0, 0, 0}, end4[4] = {1, 1, 1, 1};
    int64_t size4[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    for (size_t i = 0; i < naxes; i++) {
        int64_t a = axes[i];
        if (ns) {
            scale4[a] = scales[i];
        }
        if (nz) {
            size4[a] = sizes[i];
        }
        if (nr) {
            start4[a] = roi[i];
            end4[a] = roi[naxes + i];
        }
    }
    bool keep_aspect = nz && !ns && policy != 0;
    if (keep_aspect) {
        double s = 0.0;
        for (size_t i = 0; i < naxes; i++) {
            int64_t a = axes[i];
            if (x->dims[a] == 0) {
                return onnxi_invalid(c, n, "keep_aspect_ratio_policy on the empty dim %lld",
                                     (long long)a);
            }
            double r = (double)size4[a] / (double)x->dims[a];
            s = i == 0 ? r : policy == 1 ? fmin(s, r) : fmax(s, r);
        }
        for (size_t i = 0; i < naxes; i++) {
            int64_t a = axes[i];
            double o = s * (double)x->dims[a] + 0.5;
            if (!(o < 9.2e18)) {
                return onnxi_invalid(c, n, "the size of dim %lld overflows", (long long)a);
            }
            size4[a] = (int64_t)o; /* round half up, as ONNX says */
            scale4[a] = s;
        }
    }
    for (int a = 0; a < 2; a++) {
        if ((ns || keep_aspect) && scale4[a] != 1.0) {
            return ONNXI_UNSUPPORTED("a scale of %g on dim %d (only H and W are resized)",
                                     scale4[a], a);
        }
        if (nz && size4[a] != x->dims[a]) {
            return ONNXI_UNSUPPORTED("sizes that change N or C");
        }
        if (nr && x->dims[a] != 1 && (start4[a] != 0.0 || end4[a] != 1.0)) {
            return ONNXI_UNSUPPORTED("a roi that crops N or C");
        }
    }
    for (int i = 0; i < 2; i++) {
        if (ns || keep_aspect) {
            d.scales[i] = (float)scale4[2 + i];
        }
        if (nz) {
            d.sizes[i] = size4[2 + i];
        }
        d.roi_start[i] = (float)start4[2 + i];
        d.roi_end[i] = (float)end4[2 + i];
    }
    if (d.coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE && !nz) {
        return ONNXI_UNSUPPORTED("tf_crop_and_resize with scales (ONNX's text and its reference "
                                 "disagree on the output size)");
    }
    return onnxi_emit1(c, n, PLX_OP_RESIZE, &d, n->in, 1);
}
