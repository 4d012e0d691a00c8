/* The reference kernel of grid_sample (ONNX GridSample; plexus/ops.h,
 * plx_grid_sample_desc, gives the contract), over any number r >= 1 of
 * spatial dims.
 *
 * Interpolation is separable: along each spatial dim a sampling point
 * reads 1 (nearest), 2 (linear) or 4 (cubic) input positions with one
 * weight each, the padding mode mapping each position to an input index
 * or to "reads 0". The point's value is the sum, over every combination
 * of one position per dim, of the product of their weights times the
 * input element there. The positions and weights depend on the point
 * only, so a point computes them once and applies them to all C
 * channels. Nothing allocates: a point's taps live in fixed arrays on the
 * stack (PLX_MAX_RANK dims of at most 4 taps). */
#include "kernels_compute.h"

#include <math.h>
#include <string.h>

/* The geometry of a grid_sample layer: r spatial dims of sizes in[],
 * `points` sampling points per (n, c), each reading `plane` inputs. */
typedef struct gs_geom {
    uint32_t r;
    int64_t n, c;
    int64_t in[PLX_MAX_RANK];
    int64_t stride[PLX_MAX_RANK]; /* of spatial dim k within one (n, c) plane */
    int64_t plane, points;
} gs_geom;

static bool gs_is_float(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16;
}

/* The host validated the descriptor, the dtypes and the shapes
 * (core/src/infer_movement.c); checked again here so that the loops never
 * trust an inconsistent view. An empty spatial dim of X with points to
 * sample is refused: no padding mode defines a value there. */
static const char *gs_prepare(const plx_layer_view *l, gs_geom *g, char *buf, size_t size) {
    const plx_grid_sample_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *grid = &l->inputs[1], *y = &l->outputs[0];
    if ((unsigned)d->mode > PLX_GRID_SAMPLE_CUBIC ||
        (unsigned)d->padding > PLX_GRID_SAMPLE_REFLECTION) {
        return plxk_refuse(buf, size, "grid_sample: mode %d or padding %d is unknown",
                           (int)d->mode, (int)d->padding);
    }
    if (!gs_is_float(x->dtype) || !gs_is_float(grid->dtype) || y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "grid_sample: X %s, grid %s and Y %s must be "
                           "float32, float16 or bfloat16, Y X's",
                           plx_dtype_name(x->dtype), plx_dtype_name(grid->dtype),
                           plx_dtype_name(y->dtype));
    }
    if (x->rank < 3 || grid->rank != x->rank || y->rank != x->rank ||
        grid->dims[0] != x->dims[0] || grid->dims[x->rank - 1] != (int64_t)(x->rank - 2) ||
        y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return plxk_refuse(buf, size, "grid_sample: X, grid and Y must be [N, C, D1..Dr], "
                           "[N, O1..Or, r] and [N, C, O1..Or]");
    }
    g->r = x->rank - 2;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->plane = 1;
    g->points = 1;
    for (uint32_t k = g->r; k-- > 0;) {
        if (y->dims[2 + k] != grid->dims[1 + k]) {
            return plxk_refuse(buf, size, "grid_sample: Y's spatial dims must be grid's");
        }
        g->in[k] = x->dims[2 + k];
        g->stride[k] = g->plane;
        g->plane *= g->in[k];
        g->points *= y->dims[2 + k];
    }
    if (g->plane == 0 && g->n * g->c * g->points > 0) {
        return plxk_refuse(buf, size, "grid_sample: X has an empty spatial dim to "
                           "sample from");
    }
    return NULL;
}

const char *plxk_check_grid_sample(const plx_layer_view *layer, char *buf, size_t size) {
    gs_geom g = {0};
    return gs_prepare(layer, &g, buf, size);
}

static inline float gs_load(plx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)p)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static inline void gs_store(plx_dtype dt, void *p, int64_t i, float v) {
    switch (dt) {
    case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float32_to_float16(v); break;
    case PLX_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = plx_float32_to_bfloat16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* Mirrors x at lo and hi until it lies in [lo, hi] (ONNX's reference
 * reflects by the nearer border, then by the other, and so on: the
 * count of whole ranges crossed says which border the rest counts from).
 * An empty range (a dim of size 1 with align_corners) gives lo. x is
 * finite. */
static double gs_reflect(double x, double lo, double hi) {
    double range = hi - lo;
    if (!(range > 0.0)) {
        return lo;
    }
    if (x >= lo && x <= hi) {
        return x;
    }
    double dx = x < lo ? lo - x : x - hi;
    double crossed = floor(dx / range);
    double rest = dx - crossed * range;
    bool even = fmod(crossed, 2.0) == 0.0;
    if (x < lo) {
        return even ? lo + rest : hi - rest;
    }
    return even ? hi - rest : lo + rest;
}

/* Keys' cubic convolution weights (a = -0.75) of the 4 positions floor - 1
 * .. floor + 2 around a coordinate t past its floor (0 <= t < 1), as
 * ONNX's reference writes them. */
static void gs_cubic_weights(float t, float w[4]) {
    const float a = -0.75f;
    float t1 = t + 1.0f, u = 1.0f - t, u1 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * u - (a + 3.0f)) * u * u + 1.0f;
    w[3] = ((a * u1 - 5.0f * a) * u1 + 8.0f * a) * u1 - 4.0f * a;
}

/* The taps of one point along one dim: count positions, each an element
 * offset within the plane (-1: reads 0) and a weight. */
typedef struct gs_taps {
    int count;
    int64_t off[4];
    float w[4];
} gs_taps;

/* Input index i (any integer) along a dim of size n as the padding mode
 * reads it: -1 for a 0 (zeros mode, outside), else in [0, n - 1]. */
static int64_t gs_index(plx_grid_sample_padding padding, int64_t i, int64_t n, double lo,
                        double hi) {
    if (i >= 0 && i < n) {
        return i;
    }
    switch (padding) {
    case PLX_GRID_SAMPLE_BORDER: return i < 0 ? 0 : n - 1;
    case PLX_GRID_SAMPLE_REFLECTION: {
        int64_t j = (int64_t)gs_reflect((double)i, lo, hi);
        return j < 0 ? 0 : j > n - 1 ? n - 1 : j;
    }
    default: return -1;
    }
}

/* The taps along dim k of size n for the normalised coordinate v; false
 * when v is NaN (the point's value is then NaN). */
static bool gs_dim_taps(const plx_grid_sample_desc *d, float v, int64_t n, int64_t stride,
                        gs_taps *t) {
    if (isnan(v)) {
        return false;
    }
    float fn = (float)n;
    /* the input coordinate, in float32 as ONNX's reference computes it */
    float x = d->align_corners ? (v + 1.0f) / 2.0f * (fn - 1.0f) : ((v + 1.0f) * fn - 1.0f) / 2.0f;
    if (isnan(x)) {
        return false; /* an infinite v times the 0 of a dim of size 1 with align_corners */
    }
    if (d->mode == PLX_GRID_SAMPLE_NEAREST) {
        x = nearbyintf(x); /* halves to even */
    }
    double lo = d->align_corners ? 0.0 : -0.5;
    double hi = d->align_corners ? (double)n - 1.0 : (double)n - 0.5;
    double xd = x;
    if (xd < lo || xd > hi) {
        if (d->padding == PLX_GRID_SAMPLE_BORDER) {
            xd = xd < 0.0 ? 0.0 : xd > (double)n - 1.0 ? (double)n - 1.0 : xd;
        } else if (d->padding == PLX_GRID_SAMPLE_REFLECTION) {
            xd = isinf(xd) ? (xd < 0.0 ? lo : hi) : gs_reflect(xd, lo, hi);
        } else {
            /* zeros: every tap of a point this far out is outside; the
             * bound keeps the index arithmetic exact */
            xd = xd < -8.0 ? -8.0 : xd > (double)n + 8.0 ? (double)n + 8.0 : xd;
        }
        x = (float)xd;
    }
    double f = floor((double)x);
    int64_t i0 = (int64_t)f;
    float frac = x - (float)f;
    switch (d->mode) {
    case PLX_GRID_SAMPLE_NEAREST:
        t->count = 1;
        t->w[0] = 1.0f;
        i0 = (int64_t)x; /* x is whole here: truncation is the reference's cast */
        t->off[0] = gs_index(d->padding, i0, n, lo, hi);
        break;
    case PLX_GRID_SAMPLE_LINEAR:
        t->count = 2;
        t->w[0] = 1.0f - frac;
        t->w[1] = frac;
        for (int j = 0; j < 2; j++) {
            t->off[j] = gs_index(d->padding, i0 + j, n, lo, hi);
        }
        break;
    default:
        t->count = 4;
        gs_cubic_weights(frac, t->w);
        for (int j = 0; j < 4; j++) {
            t->off[j] = gs_index(d->padding, i0 - 1 + j, n, lo, hi);
        }
        break;
    }
    for (int j = 0; j < t->count; j++) {
        if (t->off[j] >= 0) {
            t->off[j] *= stride;
        }
    }
    return true;
}

/* Up to this many tap combinations a point lists them once (offset and
 * weight product) for all its channels; past it (cubic over 4 or more
 * dims) each channel walks them itself. */
#define GS_MAX_LISTED 64

typedef struct gs_job {
    const plx_grid_sample_desc *d;
    const gs_geom *g;
    plx_dtype xt, gt;
    const void *x, *grid;
    void *y;
    int64_t chunk; /* points per task */
    int64_t chunks; /* tasks per batch entry */
} gs_job;

/* The sum over every combination of one tap per dim, for channel plane
 * `src` (element offset xbase): the odometer walk, for many combinations. */
static float gs_walk(const gs_job *j, const gs_taps *t, int64_t xbase) {
    uint32_t r = j->g->r;
    int at[PLX_MAX_RANK] = {0};
    float sum = 0.0f;
    for (;;) {
        float w = 1.0f;
        int64_t off = 0;
        bool zero = false;
        for (uint32_t k = 0; k < r; k++) {
            const int64_t o = t[k].off[at[k]];
            zero = zero || o < 0;
            off += o;
            w *= t[k].w[at[k]];
        }
        if (!zero) {
            sum += w * gs_load(j->xt, j->x, xbase + off);
        }
        uint32_t k = r;
        while (k-- > 0 && ++at[k] == t[k].count) {
            at[k] = 0;
        }
        if (k == UINT32_MAX) {
            return sum;
        }
    }
}

static void gs_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const gs_job *j = ctx;
    const gs_geom *g = j->g;
    int64_t n = (int64_t)task / j->chunks;
    int64_t p0 = ((int64_t)task % j->chunks) * j->chunk;
    int64_t p1 = p0 + j->chunk < g->points ? p0 + j->chunk : g->points;
    uint32_t r = g->r;
    for (int64_t p = p0; p < p1; p++) {
        gs_taps t[PLX_MAX_RANK];
        bool nan = false;
        int64_t combos = 1;
        const int64_t gbase = (n * g->points + p) * (int64_t)r;
        for (uint32_t k = 0; k < r; k++) {
            /* grid's last dim is x, y, ...: reversed against X's dims */
            float v = gs_load(j->gt, j->grid, gbase + (int64_t)(r - 1 - k));
            nan = nan || !gs_dim_taps(j->d, v, g->in[k], g->stride[k], &t[k]);
            combos *= nan ? 1 : t[k].count;
        }
        int64_t ybase = n * g->c * g->points + p;
        if (nan) {
            for (int64_t c = 0; c < g->c; c++) {
                gs_store(j->xt, j->y, ybase + c * g->points, NAN);
            }
            continue;
        }
        if (combos > GS_MAX_LISTED) {
            for (int64_t c = 0; c < g->c; c++) {
                gs_store(j->xt, j->y, ybase + c * g->points,
                         gs_walk(j, t, (n * g->c + c) * g->plane));
            }
            continue;
        }
        /* list the combinations that read an element, once */
        int64_t off[GS_MAX_LISTED];
        float w[GS_MAX_LISTED];
        int listed = 0;
        int at[PLX_MAX_RANK] = {0};
        for (int64_t q = 0; q < combos; q++) {
            float wq = 1.0f;
            int64_t oq = 0;
            bool zero = false;
            for (uint32_t k = 0; k < r; k++) {
                const int64_t o = t[k].off[at[k]];
                zero = zero || o < 0;
                oq += o;
                wq *= t[k].w[at[k]];
            }
            if (!zero) {
                off[listed] = oq;
                w[listed++] = wq;
            }
            for (uint32_t k = r; k-- > 0 && ++at[k] == t[k].count;) {
                at[k] = 0;
            }
        }
        for (int64_t c = 0; c < g->c; c++) {
            const int64_t xbase = (n * g->c + c) * g->plane;
            float sum = 0.0f;
            for (int q = 0; q < listed; q++) {
                sum += w[q] * gs_load(j->xt, j->x, xbase + off[q]);
            }
            gs_store(j->xt, j->y, ybase + c * g->points, sum);
        }
    }
}

bool plxk_run_grid_sample(const plxk_kernel_args *args) {
    char why[256];
    gs_geom g = {0};
    if (gs_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    if (g.n * g.c * g.points == 0) {
        return true;
    }
    const plx_layer_view *l = args->layer;
    gs_job j = {l->desc, &g, l->inputs[0].dtype, l->inputs[1].dtype, args->inputs[0],
                args->inputs[1], args->outputs[0], 256, 0};
    j.chunks = (g.points + j.chunk - 1) / j.chunk;
    const plx_grid_sample_desc *d = l->desc;
    double taps = d->mode == PLX_GRID_SAMPLE_NEAREST ? 1.0
                  : d->mode == PLX_GRID_SAMPLE_LINEAR ? pow(2.0, g.r) : pow(4.0, g.r);
    plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * j.chunks),
                  (double)(g.n * g.points) * (20.0 * g.r + (double)g.c * taps), gs_task, &j);
    return true;
}

/* The kernel table's row (kernels.h, PLXK_ROW). */
PLXK_ROW(GRID_SAMPLE, grid_sample);
