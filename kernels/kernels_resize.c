/* resize: nearest and linear, every coordinate transformation mode (ONNX
 * semantics, opset 13+).
 *
 * Every operator has a prepare function that checks what the kernel supports
 * of a layer the host validated (dtypes, attributes, shapes; the slot counts
 * and descriptor are the host's) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h. */
#include "kernels_compute.h"

#include <plexus/geometry.h>

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
    const char *why = plxk_require_float32(l, "resize", buf, size);
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
        switch (plx_resize_scale(s, g->in[i], g->out[i], &g->scale[i])) {
        case PLX_GEOM_OK:
            break;
        case PLX_GEOM_BAD_SCALE:
            return plxk_refuse(buf, size, "cpu_ref resize: scale %g is not a finite non-negative number",
                       (double)s);
        default:
            return plxk_refuse(buf, size, "cpu_ref resize: cannot resize an empty dim to %lld",
                       (long long)g->out[i]);
        }
    }
    return NULL;
}

const char *plxk_check_resize(const plx_layer_view *layer, char *buf, size_t size) {
    resize_geom g;
    return resize_prepare(layer, &g, buf, size);
}

/* Bilinear interpolates along W first, then H, in double, as the
 * reference does. */
bool plxk_run_resize(const plxk_kernel_args *args) {
    char why[256];
    resize_geom g = {0};
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
            double ch = plx_resize_coordinate(desc->coord, oh, g.scale[0], g.in[0]);
            for (int64_t ow = 0; ow < g.out[1]; ow++) {
                double cw = plx_resize_coordinate(desc->coord, ow, g.scale[1], g.in[1]);
                double v;
                if (desc->mode == PLX_RESIZE_NEAREST) {
                    int64_t ih = plx_resize_nearest_index(desc->nearest, ch, g.in[0]);
                    int64_t iw = plx_resize_nearest_index(desc->nearest, cw, g.in[1]);
                    v = src[ih * g.in[1] + iw];
                } else {
                    int64_t h0, h1, w0, w1;
                    double rh = plx_resize_linear_taps(ch, g.in[0], &h0, &h1);
                    double rw = plx_resize_linear_taps(cw, g.in[1], &w0, &w1);
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
