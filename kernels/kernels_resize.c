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
#include <string.h>

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

/* The taps of one output coordinate along one dim: nearest uses i0; linear
 * takes (1 - r) of i0 and r of i1. The coordinates are the same for every
 * plane, so a run computes them once per output row and column, in double
 * as the reference does, into the workspace. */
typedef struct resize_tap {
    int64_t i0, i1;
    float r;
} resize_tap;

static size_t resize_taps_bytes(const plx_resize_geom *g) {
    return plxk_round_ws((size_t)(g->out[0] + g->out[1]) * sizeof(resize_tap));
}

size_t plxk_workspace_resize(const plx_layer_view *layer, const plxk_compute *compute) {
    (void)compute;
    plx_resize_geom g = {0};
    char buf[8];
    return resize_prepare(layer, &g, buf, sizeof buf) ? 0 : resize_taps_bytes(&g);
}

typedef struct resize_job {
    const plx_resize_geom *g;
    bool nearest;
    int64_t repeat; /* nearest: s when output column ow reads ow / s (0: no such s) */
    const resize_tap *rows, *cols;
    const float *x;
    float *y;
} resize_job;

/* Plane `task`: linear interpolates along W (the two input rows a output
 * row needs), then along H, in float. */
static void resize_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const resize_job *j = ctx;
    const plx_resize_geom *g = j->g;
    const float *src = j->x + (int64_t)task * g->in[0] * g->in[1];
    float *dst = j->y + (int64_t)task * g->out[0] * g->out[1];
    int64_t ow_n = g->out[1], iw_n = g->in[1];
    for (int64_t oh = 0; oh < g->out[0]; oh++) {
        const resize_tap *th = &j->rows[oh];
        float *out = dst + oh * ow_n;
        const float *r0 = src + th->i0 * iw_n;
        if (j->nearest && oh > 0 && th->i0 == j->rows[oh - 1].i0) {
            memcpy(out, out - ow_n, (size_t)ow_n * sizeof *out); /* the row above's */
            continue;
        }
        if (j->nearest && j->repeat == 2) {
            /* the common 2x as its own loop: with the count a constant
             * the compiler interleaves vectors (0.06 ms on 1x64x40x40 ->
             * 80x80; the general loop below, 0.15) */
            for (int64_t iw = 0; iw < iw_n; iw++) {
                out[2 * iw] = out[2 * iw + 1] = r0[iw];
            }
            continue;
        }
        if (j->nearest && j->repeat > 0) {
            for (int64_t iw = 0; iw < iw_n; iw++) {
                for (int64_t k = 0; k < j->repeat; k++) {
                    out[iw * j->repeat + k] = r0[iw];
                }
            }
            continue;
        }
        if (j->nearest) {
            for (int64_t ow = 0; ow < ow_n; ow++) {
                out[ow] = r0[j->cols[ow].i0];
            }
            continue;
        }
        const float *r1 = src + th->i1 * iw_n;
        float rh = th->r;
        for (int64_t ow = 0; ow < ow_n; ow++) {
            const resize_tap *tw = &j->cols[ow];
            float top = r0[tw->i0] + tw->r * (r0[tw->i1] - r0[tw->i0]);
            float bot = r1[tw->i0] + tw->r * (r1[tw->i1] - r1[tw->i0]);
            out[ow] = top + rh * (bot - top);
        }
    }
}

bool plxk_run_resize(const plxk_kernel_args *args) {
    char why[256];
    plx_resize_geom g = {0};
    if (resize_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    size_t left;
    resize_tap *taps = plxk_ws_at(args, 0, &left);
    if (!taps || left < resize_taps_bytes(&g)) {
        return plxk_fail(args, "cpu_ref resize: a workspace of %zu bytes is too small for the "
                               "taps' %zu", args->workspace_size, resize_taps_bytes(&g));
    }
    const plx_resize_desc *desc = args->layer->desc;
    bool nearest = desc->mode == PLX_RESIZE_NEAREST;
    for (int d = 0; d < 2; d++) {
        resize_tap *t = d == 0 ? taps : taps + g.out[0];
        for (int64_t o = 0; o < g.out[d]; o++) {
            double c = plx_resize_coordinate(desc->coord, o, g.scale[d], g.in[d]);
            if (nearest) {
                t[o].i0 = t[o].i1 = plx_resize_nearest_index(desc->nearest, c, g.in[d]);
                t[o].r = 0.0f;
            } else {
                t[o].r = (float)plx_resize_linear_taps(c, g.in[d], &t[o].i0, &t[o].i1);
            }
        }
    }
    /* an integer upscale along W whose taps are ow / s: whole runs of
     * copies instead of a lookup per output */
    int64_t repeat = 0;
    if (nearest && g.in[1] > 0 && g.out[1] % g.in[1] == 0) {
        repeat = g.out[1] / g.in[1];
        const resize_tap *cols = taps + g.out[0];
        for (int64_t o = 0; o < g.out[1] && repeat; o++) {
            repeat = cols[o].i0 == o / repeat ? repeat : 0;
        }
    }
    resize_job job = {&g, nearest, repeat, taps, taps + g.out[0], args->inputs[0],
                      args->outputs[0]};
    plxk_pool_run(plxk_pool_of(args->compute), (size_t)g.nc,
                  (double)g.nc * (double)(g.out[0] * g.out[1]) * (nearest ? 0.5 : 2.0),
                  resize_plane, &job);
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW_WS(RESIZE, resize);
