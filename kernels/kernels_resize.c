/* resize: nearest and linear, every coordinate transformation mode (ONNX
 * semantics, opset 13+).
 *
 * Every operator has a prepare function that checks the layer (counts,
 * dtypes, attributes, shapes) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h. */
#include "kernels_compute.h"

#include <stdint.h>
#include <math.h>

/* ------------------------------------------------------------------ */
/* resize                                                              */
/* ------------------------------------------------------------------ */

typedef struct resize_geom {
    int64_t nc, in[2], out[2];
    double scale[2];
} resize_geom;

static const char *resize_prepare(const plx_layer_view *l, resize_geom *g, char *buf,
                                  size_t size) {
    const char *why = plxk_check_layer(l, "resize", 1, 1, sizeof(plx_resize_desc), buf, size);
    if (!why) {
        why = plxk_require_float32(l, "resize", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_resize_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (x->rank != 4) {
        return plxk_refuse(buf, size, "cpu_ref resize takes rank-4 (NCHW) inputs, not rank %u", x->rank);
    }
    if (desc->mode != PLX_RESIZE_NEAREST && desc->mode != PLX_RESIZE_LINEAR) {
        return plxk_refuse(buf, size, "cpu_ref resize: mode %d is not implemented", (int)desc->mode);
    }
    if ((unsigned)desc->coord > PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN) {
        return plxk_refuse(buf, size, "cpu_ref resize: coordinate transformation %d is not implemented",
                   (int)desc->coord);
    }
    if (desc->mode == PLX_RESIZE_NEAREST && (unsigned)desc->nearest > PLX_RESIZE_NEAREST_CEIL) {
        return plxk_refuse(buf, size, "cpu_ref resize: nearest mode %d is not implemented",
                   (int)desc->nearest);
    }
    if (y->rank != 4 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return plxk_refuse(buf, size, "cpu_ref resize: Y must be rank 4 with X's N and C");
    }
    g->nc = x->dims[0] * x->dims[1];
    for (int i = 0; i < 2; i++) {
        g->in[i] = x->dims[2 + i];
        g->out[i] = y->dims[2 + i];
        float s = desc->scales[i];
        if (!(s >= 0.0f) || isinf(s)) {
            return plxk_refuse(buf, size, "cpu_ref resize: scale %g is not a finite non-negative number",
                       (double)s);
        }
        if (g->in[i] == 0 && g->out[i] != 0) {
            return plxk_refuse(buf, size, "cpu_ref resize: cannot resize an empty dim to %lld",
                       (long long)g->out[i]);
        }
        g->scale[i] = s > 0.0f ? (double)s
                      : g->in[i]  ? (double)g->out[i] / (double)g->in[i]
                                  : 1.0;
    }
    return NULL;
}

const char *plxk_check_resize(const plx_layer_view *layer, char *buf, size_t size) {
    resize_geom g;
    return resize_prepare(layer, &g, buf, size);
}

/* Input coordinate of output coordinate x, as ONNX's reference computes it
 * (in double). Like the reference, align_corners and pytorch_half_pixel use
 * the scaled length scale*in, which equals the output size unless explicit
 * scales do not divide it. */
static double resize_source(plx_resize_coord mode, double x, double scale, int64_t in) {
    double out_len = scale * (double)in;
    switch (mode) {
    case PLX_RESIZE_COORD_ASYMMETRIC:
        return x / scale;
    case PLX_RESIZE_COORD_ALIGN_CORNERS:
        return out_len == 1.0 ? 0.0 : x * (double)(in - 1) / (out_len - 1.0);
    case PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL:
        return out_len == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
    case PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN:
        return (x + 0.5) / scale;
    case PLX_RESIZE_COORD_HALF_PIXEL:
    default:
        return (x + 0.5) / scale - 0.5;
    }
}

/* Bounds a source coordinate so that converting it to an integer is safe;
 * indices get clamped to the input later anyway (edge padding). */
static double bound_coord(double c, int64_t in) {
    if (!(c > -2.0)) { /* also NaN */
        return -2.0;
    }
    return c > (double)in + 1.0 ? (double)in + 1.0 : c;
}

/* ONNX's nearest rules: an integer coordinate is itself; otherwise the
 * fraction picks floor or floor+1 (round_prefer_floor rounds .5 down,
 * round_prefer_ceil up). The index is clamped to the input. */
static int64_t resize_nearest_index(plx_resize_nearest mode, double c, int64_t in) {
    double f = floor(c);
    int64_t i = (int64_t)f;
    if (c != f) {
        double r = c - f;
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
    return plxk_clamp_i64(i, 0, in - 1);
}

/* Linear taps: lo, hi (clamped) and the weight of hi. */
static void resize_linear_taps(double c, int64_t in, int64_t *lo, int64_t *hi, double *w) {
    double f = floor(c);
    *w = c - f;
    *lo = plxk_clamp_i64((int64_t)f, 0, in - 1);
    *hi = plxk_clamp_i64((int64_t)f + 1, 0, in - 1);
}

/* Bilinear interpolates along W first, then H, in double, as the
 * reference does. */
bool plxk_run_resize(const plxk_kernel_args *args) {
    char why[256];
    resize_geom g;
    if (resize_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_resize_desc *desc = args->layer->desc;
    const float *x = args->inputs[0];
    float *y = args->outputs[0];
    int64_t in_plane = g.in[0] * g.in[1], out_plane = g.out[0] * g.out[1];
    for (int64_t p = 0; p < g.nc; p++) {
        const float *src = x + p * in_plane;
        float *dst = y + p * out_plane;
        for (int64_t oh = 0; oh < g.out[0]; oh++) {
            double ch = bound_coord(resize_source(desc->coord, (double)oh, g.scale[0], g.in[0]),
                                    g.in[0]);
            for (int64_t ow = 0; ow < g.out[1]; ow++) {
                double cw = bound_coord(
                    resize_source(desc->coord, (double)ow, g.scale[1], g.in[1]), g.in[1]);
                double v;
                if (desc->mode == PLX_RESIZE_NEAREST) {
                    int64_t ih = resize_nearest_index(desc->nearest, ch, g.in[0]);
                    int64_t iw = resize_nearest_index(desc->nearest, cw, g.in[1]);
                    v = src[ih * g.in[1] + iw];
                } else {
                    int64_t h0, h1, w0, w1;
                    double rh, rw;
                    resize_linear_taps(ch, g.in[0], &h0, &h1, &rh);
                    resize_linear_taps(cw, g.in[1], &w0, &w1, &rw);
                    double top = (1.0 - rw) * src[h0 * g.in[1] + w0] + rw * src[h0 * g.in[1] + w1];
                    double bot = (1.0 - rw) * src[h1 * g.in[1] + w0] + rw * src[h1 * g.in[1] + w1];
                    v = (1.0 - rh) * top + rh * bot;
                }
                dst[oh * g.out[1] + ow] = (float)v;
            }
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(RESIZE, resize);
