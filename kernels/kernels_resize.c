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

/* The host validated mode, coordinate transformation, nearest mode, rank
 * 4 and Y's N and C (docs/backend-abi.md); what is left to refuse is a
 * dtype other than float32 and an empty dim resized to a non-empty one. */
static const char *resize_prepare(const plx_layer_view *l, plx_resize_geom *g, char *buf,
                                  size_t size) {
    const char *why = plxk_require_float32(l, "resize", buf, size);
    if (why) {
        return why;
    }
    const plx_resize_desc *desc = l->desc;
    int dim = 0;
    plx_geom_status s =
        plx_resize_geom_of(&l->inputs[0], &l->outputs[0], desc->scales, g, &dim);
    if (s == PLX_GEOM_BAD_RANK) {
        return plxk_refuse(buf, size, "cpu_ref resize takes rank-4 (NCHW) X and Y with X's N and C");
    }
    if (s != PLX_GEOM_OK) {
        return plxk_refuse(buf, size, "cpu_ref resize: %s (spatial dim %d)", plx_geom_status_text(s),
                        dim);
    }
    return NULL;
}

const char *plxk_check_resize(const plx_layer_view *layer, char *buf, size_t size) {
    plx_resize_geom g;
    return resize_prepare(layer, &g, buf, size);
}

/* Bilinear interpolates along W first, then H, in double, as the
 * reference does. */
bool plxk_run_resize(const plxk_kernel_args *args) {
    char why[256];
    plx_resize_geom g = {0};
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
