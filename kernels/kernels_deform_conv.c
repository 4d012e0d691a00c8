/* The reference kernel of deform_conv (ONNX DeformConv, 2-D; plexus/ops.h,
 * plx_deform_conv_desc, gives the contract), float32.
 *
 * Each tap (input channel, kernel position) of each output position reads
 * X once, bilinearly at its offset position, times its mask; the value is
 * then added into every output channel of the group with that tap's
 * weight, so that no sample is computed twice and nothing allocates. */
#include "kernels_compute.h"

#include <math.h>
#include <string.h>

typedef struct dc_geom {
    int64_t n, c, h, w, m, kh, kw, oh, ow, cpg, mpg, cpo;
} dc_geom;

static const char *dc_prepare(const plx_layer_view *l, dc_geom *g, char *buf, size_t size) {
    const plx_deform_conv_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *off = &l->inputs[2];
    const plx_tensor_info *y = &l->outputs[0];
    for (uint32_t i = 0; i < l->input_count; i++) {
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return plxk_refuse(buf, size, "runs deform_conv in float32 only, not %s "
                               "(input %u)", plx_dtype_name(l->inputs[i].dtype), i);
        }
    }
    if (y->dtype != PLX_DTYPE_FLOAT32) {
        return plxk_refuse(buf, size, "runs deform_conv in float32 only, not %s (Y)",
                           plx_dtype_name(y->dtype));
    }
    if (x->rank != 4 || w->rank != 4 || off->rank != 4 || y->rank != 4 || d->group < 1 ||
        d->offset_group < 1 || x->dims[1] % d->group != 0 || x->dims[1] % d->offset_group != 0 ||
        w->dims[0] % d->group != 0 || w->dims[1] != x->dims[1] / d->group) {
        return plxk_refuse(buf, size, "deform_conv: X, W, offset and Y must be 4-D, "
                           "with channels that group and offset_group divide");
    }
    for (int k = 0; k < 2; k++) {
        if (d->strides[k] < 1 || d->dilations[k] < 1 || d->pads_begin[k] < 0 ||
            d->pads_end[k] < 0) {
            return plxk_refuse(buf, size, "deform_conv: strides and dilations must be "
                               ">= 1, pads >= 0");
        }
    }
    g->n = x->dims[0], g->c = x->dims[1], g->h = x->dims[2], g->w = x->dims[3];
    g->m = w->dims[0], g->kh = w->dims[2], g->kw = w->dims[3];
    g->oh = y->dims[2], g->ow = y->dims[3];
    g->cpg = g->c / d->group, g->mpg = g->m / d->group, g->cpo = g->c / d->offset_group;
    int64_t taps = d->offset_group * g->kh * g->kw;
    if (y->dims[0] != g->n || y->dims[1] != g->m || off->dims[0] != g->n ||
        off->dims[1] != 2 * taps || off->dims[2] != g->oh || off->dims[3] != g->ow ||
        (l->input_count > 3 && (l->inputs[3].rank != 1 || l->inputs[3].dims[0] != g->m)) ||
        (l->input_count > 4 &&
         (l->inputs[4].rank != 4 || l->inputs[4].dims[0] != g->n ||
          l->inputs[4].dims[1] != taps || l->inputs[4].dims[2] != g->oh ||
          l->inputs[4].dims[3] != g->ow))) {
        return plxk_refuse(buf, size, "deform_conv: Y, offset, B or mask has a shape "
                           "that does not match X and W");
    }
    for (int k = 0; k < 2; k++) {
        int64_t in = k ? g->w : g->h, kk = k ? g->kw : g->kh, o = k ? g->ow : g->oh;
        int64_t span = (kk - 1) * d->dilations[k] + 1;
        int64_t padded = in + d->pads_begin[k] + d->pads_end[k];
        if (kk < 1 || padded < span || o != (padded - span) / d->strides[k] + 1) {
            return plxk_refuse(buf, size, "deform_conv: the output size does not match "
                               "the kernel, strides, dilations and pads");
        }
    }
    return NULL;
}

const char *plxk_check_deform_conv(const plx_layer_view *layer, char *buf, size_t size) {
    dc_geom g;
    return dc_prepare(layer, &g, buf, size);
}

/* Plane p ([h, w]) at (y, x), bilinearly; neighbours outside read 0 (ONNX
 * GridSample with align_corners and zeros padding, as ONNX's reference
 * samples). NaN coordinates give NaN. */
static double dc_sample(const float *p, int64_t h, int64_t w, double y, double x) {
    if (isnan(y) || isnan(x)) {
        return NAN;
    }
    if (!(y > -1.0 && y < (double)h && x > -1.0 && x < (double)w)) {
        return 0.0; /* every neighbour is outside (infinities too) */
    }
    double fy = floor(y), fx = floor(x), ly = y - fy, lx = x - fx;
    int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
    double v = 0.0;
    for (int dy = 0; dy < 2; dy++) {
        int64_t yy = y0 + dy;
        double wy = dy ? ly : 1.0 - ly;
        if (yy < 0 || yy >= h || wy == 0.0) {
            continue;
        }
        for (int dx = 0; dx < 2; dx++) {
            int64_t xx = x0 + dx;
            double wx = dx ? lx : 1.0 - lx;
            if (xx >= 0 && xx < w && wx != 0.0) {
                v += wy * wx * p[yy * w + xx];
            }
        }
    }
    return v;
}

bool plxk_run_deform_conv(const plxk_kernel_args *args) {
    char why[256];
    dc_geom g;
    const plx_layer_view *l = args->layer;
    if (dc_prepare(l, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_deform_conv_desc *d = l->desc;
    const float *x = args->inputs[0], *wt = args->inputs[1], *off = args->inputs[2];
    const float *bias = l->input_count > 3 ? args->inputs[3] : NULL;
    const float *mask = l->input_count > 4 ? args->inputs[4] : NULL;
    float *y = args->outputs[0];
    const int64_t plane = g.oh * g.ow, ktaps = g.kh * g.kw;
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t m = 0; m < g.m; m++) {
            float b = bias ? bias[m] : 0.0f;
            float *ym = y + (n * g.m + m) * plane;
            for (int64_t i = 0; i < plane; i++) {
                ym[i] = b;
            }
        }
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t c = 0; c < g.c; c++) {
            int64_t grp = c / g.cpg, cl = c % g.cpg, og = c / g.cpo;
            const float *xp = x + (n * g.c + c) * g.h * g.w;
            for (int64_t i = 0; i < g.kh; i++) {
                for (int64_t j = 0; j < g.kw; j++) {
                    int64_t tap = (og * g.kh + i) * g.kw + j;
                    const float *dh = off + (n * 2 * d->offset_group * ktaps + 2 * tap) * plane;
                    const float *dw = dh + plane;
                    const float *mk = mask ? mask + (n * d->offset_group * ktaps + tap) * plane
                                           : NULL;
                    for (int64_t oy = 0; oy < g.oh; oy++) {
                        for (int64_t ox = 0; ox < g.ow; ox++) {
                            int64_t o = oy * g.ow + ox;
                            double sy = (double)(oy * d->strides[0] - d->pads_begin[0] +
                                                 i * d->dilations[0]) + dh[o];
                            double sx = (double)(ox * d->strides[1] - d->pads_begin[1] +
                                                 j * d->dilations[1]) + dw[o];
                            double v = dc_sample(xp, g.h, g.w, sy, sx) * (mk ? mk[o] : 1.0f);
                            for (int64_t m = grp * g.mpg; m < (grp + 1) * g.mpg; m++) {
                                float wv = wt[((m * g.cpg + cl) * g.kh + i) * g.kw + j];
                                y[(n * g.m + m) * plane + o] += (float)(wv * v);
                            }
                        }
                    }
                }
            }
        }
    }
    return true;
}

/* The kernel table's row (kernels.h, PLXK_ROW). */
PLXK_ROW(DEFORM_CONV, deform_conv);
