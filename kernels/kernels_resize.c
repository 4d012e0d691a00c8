/* resize: nearest, linear, cubic and their antialiased forms, every
 * coordinate transformation mode (ONNX semantics, opsets 10 to 19;
 * plexus/ops.h, plx_resize_desc, gives the contract).
 *
 * Every operator has a prepare function that checks what the kernel supports
 * of a layer the host validated (dtypes, attributes, shapes; the slot counts
 * and descriptor are the host's) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h.
 *
 * Two paths. Nearest and linear (but for tf_crop_and_resize) keep their
 * two taps per output row and column and loops of their own, which the
 * common upsamplings need fast. Everything else goes through spans: per
 * output row and column, the run of input indices it reads and one weight
 * each (the taps past an edge folded onto it, or dropped with
 * exclude_outside), a plane being resized along H into a row of the
 * thread's workspace, then along W out of it. */
#include "kernels_compute.h"

#include <plexus/geometry.h>

#include <stdint.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* resize                                                              */
/* ------------------------------------------------------------------ */

static bool resize_is_cubic(plx_resize_mode m) {
    return m == PLX_RESIZE_CUBIC || m == PLX_RESIZE_CUBIC_ANTIALIAS;
}

static bool resize_is_antialias(plx_resize_mode m) {
    return m == PLX_RESIZE_LINEAR_ANTIALIAS || m == PLX_RESIZE_CUBIC_ANTIALIAS;
}

/* Whether the layer takes the span path (module comment). */
static bool resize_uses_spans(const plx_resize_desc *d) {
    return d->mode != PLX_RESIZE_NEAREST && d->mode != PLX_RESIZE_LINEAR
               ? true
               : d->coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE;
}

/* The taps one output point reads along a dim of the span path before
 * they are folded: 1 (nearest), 2 (linear), 4 (cubic), or an antialiased
 * filter's footprint at `scale` (ONNX's reference: 2 - 2 * (floor(-k /
 * s) + 1) for the kernel's reach k of 1 or 2 and s = min(scale, 1)). */
static double resize_footprint(plx_resize_mode m, double scale) {
    double s = scale < 1.0 ? scale : 1.0;
    switch (m) {
    case PLX_RESIZE_NEAREST: return 1.0;
    case PLX_RESIZE_LINEAR: return 2.0;
    case PLX_RESIZE_CUBIC: return 4.0;
    default: {
        double reach = m == PLX_RESIZE_LINEAR_ANTIALIAS ? 1.0 : 2.0;
        return 2.0 - 2.0 * (floor(-reach / s) + 1.0);
    }
    }
}

/* Output point o along a dim reads `count` input indices from `first`
 * with the weights at `at` of the weight array; count 0: the
 * extrapolation value. */
typedef struct resize_span {
    int64_t first, count, at;
} resize_span;

/* What a run of the span path lays out in its workspace, per dim: the
 * spans of its out[d] output points and their weights, at most cap[d] =
 * min(footprint, in) each; then one row of in[1] floats per thread. */
typedef struct resize_plan {
    plx_resize_geom g;
    bool spans;
    int64_t taps[2]; /* the footprint */
    int64_t cap[2];
    size_t span_bytes, weight_bytes, row_bytes, threads;
} resize_plan;

/* The host validated mode, coordinate transformation, nearest mode, rank
 * 4 and Y's N and C (docs/backend-abi.md); what is left to refuse is a
 * dtype other than float32 (or int8/uint8 for nearest), an empty dim resized to a non-empty one, and
 * an antialiased filter wider than four times the input (a scale given
 * with sizes that it does not resemble: from a scale alone, an output of
 * one point or more means scale >= 1 / in). */
static const char *resize_prepare(const plx_layer_view *l, const plxk_compute *compute,
                                  resize_plan *p, char *buf, size_t size) {
    memset(p, 0, sizeof *p);
    const plx_resize_desc *desc = l->desc;
    plx_dtype xt = l->inputs[0].dtype;
    bool bytes = (xt == PLX_DTYPE_INT8 || xt == PLX_DTYPE_UINT8) &&
                 desc->mode == PLX_RESIZE_NEAREST && l->outputs[0].dtype == xt;
    const char *why = bytes ? NULL : plxk_require_float32(l, "resize", buf, size);
    if (why) {
        return why;
    }
    if ((unsigned)desc->mode > PLX_RESIZE_CUBIC_ANTIALIAS ||
        (unsigned)desc->coord > PLX_RESIZE_COORD_TF_CROP_AND_RESIZE) {
        return plxk_refuse(buf, size, "resize: mode %d or coordinate transformation %d "
                           "is unknown", (int)desc->mode, (int)desc->coord);
    }
    int dim = 0;
    plx_geom_status s =
        plx_resize_geom_of(&l->inputs[0], &l->outputs[0], desc->scales, &p->g, &dim);
    if (s == PLX_GEOM_BAD_RANK) {
        return plxk_refuse(buf, size, "resize takes rank-4 (NCHW) X and Y with X's N and C");
    }
    if (s != PLX_GEOM_OK) {
        return plxk_refuse(buf, size, "resize: %s (spatial dim %d)", plx_geom_status_text(s),
                        dim);
    }
    p->spans = resize_uses_spans(desc);
    if (bytes && p->spans) {
        return plxk_refuse(buf, size, "resize: %s with tf_crop_and_resize runs in float32 "
                           "only", plx_dtype_name(xt));
    }
    p->threads = plxk_pool_threads(plxk_pool_of(compute));
    if (!p->spans) {
        return NULL;
    }
    size_t weights = 0;
    for (int d = 0; d < 2; d++) {
        double taps = resize_footprint(desc->mode, p->g.scale[d]);
        int64_t in = p->g.in[d];
        if (p->g.out[d] > 0 && !(taps <= 4.0 * (double)in + 8.0)) {
            return plxk_refuse(buf, size, "resize: the antialiased filter along spatial "
                               "dim %d spans %g input points, more than 4 times its %lld (scale "
                               "%g)", d, taps, (long long)in, p->g.scale[d]);
        }
        p->taps[d] = (int64_t)taps;
        p->cap[d] = p->taps[d] < in ? p->taps[d] : in;
        weights += (size_t)(p->g.out[d] * (p->cap[d] > 0 ? p->cap[d] : 1));
    }
    p->span_bytes = plxk_round_ws((size_t)(p->g.out[0] + p->g.out[1]) * sizeof(resize_span));
    p->weight_bytes = plxk_round_ws(weights * sizeof(float));
    p->row_bytes = plxk_round_ws((size_t)p->g.in[1] * sizeof(float));
    return NULL;
}

const char *plxk_check_resize(const plx_layer_view *layer, char *buf, size_t size) {
    resize_plan p;
    return resize_prepare(layer, NULL, &p, buf, size);
}

/* The input coordinate of output index x along dim d (plx_resize_coord;
 * the older modes are the SDK's plx_resize_coordinate, bounded to [-2,
 * in + 1]); *outside says a tf_crop_and_resize point falls outside the
 * input (the extrapolation value). */
static double resize_coordinate(const plx_resize_desc *desc, int d, int64_t x, double scale,
                                int64_t in, int64_t out, bool *outside) {
    *outside = false;
    double out_len = scale * (double)in, xd = (double)x, c;
    switch (desc->coord) {
    case PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_len;
        double offset = (double)in / 2.0 * (1.0 - adjustment);
        c = offset + (xd + 0.5) / scale - 0.5;
        break;
    }
    case PLX_RESIZE_COORD_TF_CROP_AND_RESIZE: {
        double start = desc->roi_start[d], end = desc->roi_end[d], span = (double)in - 1.0;
        c = out_len == 1.0 ? (end - start) * span / 2.0 : xd * (end - start) * span / (out_len - 1.0);
        c += start * span;
        if (!(c >= 0.0 && c <= span)) { /* NaN too */
            *outside = true;
            return 0.0;
        }
        return c;
    }
    default:
        return plx_resize_coordinate(desc->coord, x, scale, in);
    }
    if (!(c > -2.0)) {
        return -2.0;
    }
    return c > (double)in + 1.0 ? (double)in + 1.0 : c;
}

/* ---- the two-tap path: nearest and linear --------------------------- */

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

/* ---- the span path ---------------------------------------------------- */

static size_t resize_ws_bytes(const resize_plan *p) {
    if (!p->spans) {
        return resize_taps_bytes(&p->g);
    }
    return p->span_bytes + p->weight_bytes + p->threads * p->row_bytes;
}

size_t plxk_workspace_resize(const plx_layer_view *layer, const plxk_compute *compute) {
    resize_plan p;
    char buf[8];
    return resize_prepare(layer, compute, &p, buf, sizeof buf) ? 0 : resize_ws_bytes(&p);
}

/* Keys' cubic convolution kernel of `a` at distance x (ONNX's reference's
 * antialiased cubic writes it so; its plain cubic, expanded, is the same). */
static double resize_keys(double x, double a) {
    x = fabs(x);
    if (x <= 1.0) {
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    }
    if (x < 2.0) {
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    }
    return 0.0;
}

/* The span of coordinate c along a dim of `in` points (p's cap at most),
 * written to *sp and w (cap floats), as ONNX's reference takes its
 * neighbours: the `taps` indices nearest c, the lower on ties, from
 * first = ceil(c) - taps / 2 (r = c - (ceil(c) - 1), in (0, 1], is the
 * weights' phase). Indices past an edge read the edge (their weights are
 * added to it) or, with exclude_outside, weigh 0 and the rest are divided
 * by their sum; the antialiased weights are divided by their sum first. */
static void resize_span_of(const plx_resize_desc *desc, double c, double scale, int64_t in,
                           int64_t taps, float *w, resize_span *sp) {
    if (desc->mode == PLX_RESIZE_NEAREST) {
        sp->first = plx_resize_nearest_index(desc->nearest, c, in);
        sp->count = 1;
        w[0] = 1.0f;
        return;
    }
    double f = ceil(c) - 1.0, r = c - f;
    int64_t first = (int64_t)f + 1 - taps / 2;
    double s = scale < 1.0 ? scale : 1.0, a = desc->cubic_coeff_a;
    double total = 0.0, kept = 0.0;
    int64_t lo = first < 0 ? 0 : first > in - 1 ? in - 1 : first;
    int64_t hi = first + taps - 1 > in - 1 ? in - 1 : first + taps - 1 < 0 ? 0 : first + taps - 1;
    sp->first = lo;
    sp->count = hi - lo + 1;
    for (int64_t j = 0; j < sp->count; j++) {
        w[j] = 0.0f;
    }
    /* two passes over the taps (no array for the antialiased footprint):
     * the sums, then the weights */
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t j = 0; j < taps; j++) {
            double t = (double)(j - taps / 2 + 1) - r; /* the tap's offset from c */
            double v;
            switch (desc->mode) {
            case PLX_RESIZE_LINEAR: v = j == 0 ? 1.0 - r : r; break;
            case PLX_RESIZE_CUBIC: v = resize_keys(t, a); break;
            case PLX_RESIZE_LINEAR_ANTIALIAS: {
                double u = 1.0 - fabs(t * s);
                v = u < 0.0 ? 0.0 : u > 1.0 ? 1.0 : u;
                break;
            }
            default: v = resize_keys(s * t, a); break;
            }
            int64_t i = first + j;
            bool in_range = i >= 0 && i < in;
            if (pass == 0) {
                total += v;
                kept += in_range ? v : 0.0;
                continue;
            }
            double norm = resize_is_antialias(desc->mode) ? total : 1.0;
            if (desc->exclude_outside && (resize_is_cubic(desc->mode) ||
                                          resize_is_antialias(desc->mode))) {
                if (!in_range) {
                    continue;
                }
                norm = kept;
            }
            int64_t k = (i < lo ? lo : i > hi ? hi : i) - lo;
            w[k] += (float)(norm != 0.0 ? v / norm : v);
        }
    }
}

typedef struct resize_job {
    const plx_resize_geom *g;
    bool bytes; /* int8/uint8 elements (nearest only); else float32 */
    bool nearest;
    int64_t repeat; /* nearest: s when output column ow reads ow / s (0: no such s) */
    const resize_tap *rows, *cols;
    const resize_span *srows, *scols;
    const float *weights;
    float *row_ws; /* the span path: threads rows of row_stride floats */
    size_t row_stride;
    float extrapolation;
    const float *x;
    float *y;
} resize_job;

/* Plane `task` of an 8-bit nearest resize: each output row a copy of the
 * row above when it reads the same input row, else gathered. */
static void resize_plane_bytes(const resize_job *j, size_t task) {
    const plx_resize_geom *g = j->g;
    const uint8_t *src = (const uint8_t *)(const void *)j->x + (int64_t)task * g->in[0] * g->in[1];
    uint8_t *dst = (uint8_t *)(void *)j->y + (int64_t)task * g->out[0] * g->out[1];
    int64_t ow_n = g->out[1], iw_n = g->in[1];
    for (int64_t oh = 0; oh < g->out[0]; oh++) {
        uint8_t *out = dst + oh * ow_n;
        const uint8_t *r0 = src + j->rows[oh].i0 * iw_n;
        if (oh > 0 && j->rows[oh].i0 == j->rows[oh - 1].i0) {
            memcpy(out, out - ow_n, (size_t)ow_n);
        } else if (j->repeat == 2) {
            for (int64_t iw = 0; iw < iw_n; iw++) {
                out[2 * iw] = out[2 * iw + 1] = r0[iw];
            }
        } else {
            for (int64_t ow = 0; ow < ow_n; ow++) {
                out[ow] = r0[j->cols[ow].i0];
            }
        }
    }
}

/* The weighted sum (1 - r) a + r b of the two taps, b taking no part at
 * r = 0: an infinity beside a point the output falls on does not make it
 * NaN (0 * inf), and inf mixed with a finite value stays inf (the form
 * a + r (b - a) gives NaN there). */
static inline float lerp(float a, float b, float r) {
    return r == 0.0f ? a : (1.0f - r) * a + r * b;
}

/* Plane `task`: linear interpolates along W (the two input rows a output
 * row needs), then along H, in float. */
static void resize_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const resize_job *j = ctx;
    if (j->bytes) {
        resize_plane_bytes(j, task);
        return;
    }
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
            float top = lerp(r0[tw->i0], r0[tw->i1], tw->r);
            float bot = lerp(r1[tw->i0], r1[tw->i1], tw->r);
            out[ow] = lerp(top, bot, rh);
        }
    }
}

/* Plane `task` on the span path: each output row is the weighted sum of
 * its span of input rows (into the thread's row), then each output point
 * the weighted sum of its span of that row. */
static void resize_plane_spans(void *ctx, size_t task, size_t thread) {
    const resize_job *j = ctx;
    const plx_resize_geom *g = j->g;
    const float *src = j->x + (int64_t)task * g->in[0] * g->in[1];
    float *dst = j->y + (int64_t)task * g->out[0] * g->out[1];
    float *row = j->row_ws + thread * j->row_stride;
    int64_t ow_n = g->out[1], iw_n = g->in[1];
    for (int64_t oh = 0; oh < g->out[0]; oh++) {
        const resize_span *sh = &j->srows[oh];
        float *out = dst + oh * ow_n;
        if (sh->count == 0) {
            for (int64_t ow = 0; ow < ow_n; ow++) {
                out[ow] = j->extrapolation;
            }
            continue;
        }
        const float *wh = j->weights + sh->at;
        const float *r0 = src + sh->first * iw_n;
        for (int64_t iw = 0; iw < iw_n; iw++) {
            row[iw] = wh[0] * r0[iw];
        }
        for (int64_t k = 1; k < sh->count; k++) {
            const float *rk = src + (sh->first + k) * iw_n;
            const float wk = wh[k];
            for (int64_t iw = 0; iw < iw_n; iw++) {
                row[iw] += wk * rk[iw];
            }
        }
        for (int64_t ow = 0; ow < ow_n; ow++) {
            const resize_span *sw = &j->scols[ow];
            if (sw->count == 0) {
                out[ow] = j->extrapolation;
                continue;
            }
            const float *ww = j->weights + sw->at, *rw = row + sw->first;
            float sum = 0.0f;
            for (int64_t k = 0; k < sw->count; k++) {
                sum += ww[k] * rw[k];
            }
            out[ow] = sum;
        }
    }
}

/* The span path: the spans and weights into the workspace, then the
 * planes. */
static bool resize_run_spans(const plxk_kernel_args *args, const resize_plan *p) {
    const plx_resize_desc *desc = args->layer->desc;
    const plx_resize_geom *g = &p->g;
    size_t left;
    char *ws = plxk_ws_at(args, 0, &left);
    if (!ws || left < resize_ws_bytes(p)) {
        return plxk_fail(args, "resize: a workspace of %zu bytes is too small for the "
                               "spans' %zu", args->workspace_size, resize_ws_bytes(p));
    }
    resize_span *spans = (resize_span *)(void *)ws;
    float *weights = (float *)(void *)(ws + p->span_bytes);
    int64_t at = 0;
    for (int d = 0; d < 2; d++) {
        resize_span *sp = d == 0 ? spans : spans + g->out[0];
        for (int64_t o = 0; o < g->out[d]; o++) {
            bool outside;
            double c = resize_coordinate(desc, d, o, g->scale[d], g->in[d], g->out[d], &outside);
            sp[o].at = at;
            if (outside) {
                sp[o].first = sp[o].count = 0;
                continue;
            }
            resize_span_of(desc, c, g->scale[d], g->in[d], p->taps[d], weights + at, &sp[o]);
            at += sp[o].count;
        }
    }
    resize_job job = {.g = g,
                      .srows = spans,
                      .scols = spans + g->out[0],
                      .weights = weights,
                      .row_ws = (float *)(void *)(ws + p->span_bytes + p->weight_bytes),
                      .row_stride = p->row_bytes / sizeof(float),
                      .extrapolation = desc->extrapolation_value,
                      .x = args->inputs[0],
                      .y = args->outputs[0]};
    double per_plane = (double)(g->out[0] * g->in[1]) * (double)p->cap[0] +
                       (double)(g->out[0] * g->out[1]) * (double)p->cap[1];
    plxk_pool_run(plxk_pool_of(args->compute), (size_t)g->nc, (double)g->nc * per_plane,
                  resize_plane_spans, &job);
    return true;
}

bool plxk_run_resize(const plxk_kernel_args *args) {
    char why[256];
    resize_plan p;
    if (resize_prepare(args->layer, args->compute, &p, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    if (p.g.nc * p.g.out[0] * p.g.out[1] == 0) {
        return true;
    }
    if (p.spans) {
        return resize_run_spans(args, &p);
    }
    const plx_resize_geom g = p.g;
    size_t left;
    resize_tap *taps = plxk_ws_at(args, 0, &left);
    if (!taps || left < resize_taps_bytes(&g)) {
        return plxk_fail(args, "resize: a workspace of %zu bytes is too small for the "
                               "taps' %zu", args->workspace_size, resize_taps_bytes(&g));
    }
    const plx_resize_desc *desc = args->layer->desc;
    bool nearest = desc->mode == PLX_RESIZE_NEAREST;
    for (int d = 0; d < 2; d++) {
        resize_tap *t = d == 0 ? taps : taps + g.out[0];
        for (int64_t o = 0; o < g.out[d]; o++) {
            bool outside; /* never: tf_crop_and_resize takes the span path */
            double c = resize_coordinate(desc, d, o, g.scale[d], g.in[d], g.out[d], &outside);
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
    plx_dtype xt = args->layer->inputs[0].dtype;
    resize_job job = {.g = &g,
                      .bytes = xt == PLX_DTYPE_INT8 || xt == PLX_DTYPE_UINT8,
                      .nearest = nearest,
                      .repeat = repeat,
                      .rows = taps,
                      .cols = taps + g.out[0],
                      .x = args->inputs[0],
                      .y = args->outputs[0]};
    plxk_pool_run(plxk_pool_of(args->compute), (size_t)g.nc,
                  (double)g.nc * (double)(g.out[0] * g.out[1]) * (nearest ? 0.5 : 2.0),
                  resize_plane, &job);
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW_WS(RESIZE, resize);
