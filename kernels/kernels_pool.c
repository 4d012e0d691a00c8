/* The pools: pool (max and average, windows as the convolutions') and
 * global_pool (ONNX semantics, opset 13+).
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
#include "kernels_funcs.h"

#include <stdint.h>
#include <math.h>

#include "depthwise.h"
#include "qmap.h"

/* ------------------------------------------------------------------ */
/* pool, global_pool                                                   */
/* ------------------------------------------------------------------ */

/* Max pools also run on int8/uint8; values pass through double, which
 * holds float32, int8 and uint8 exactly. */
static double load_real(const void *p, plx_dtype dt, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

static void store_real(void *p, plx_dtype dt, int64_t i, double v) {
    switch (dt) {
    case PLX_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case PLX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

/* Value of a max over no element (a window entirely in padding). */
static double lowest_value(plx_dtype dt) {
    return dt == PLX_DTYPE_INT8 ? -128.0 : dt == PLX_DTYPE_UINT8 ? 0.0 : -INFINITY;
}

static const char *pool_dtype(const plx_layer_view *l, const char *op, plx_pool_kind kind,
                              char *buf, size_t size) {
    plx_dtype dt = l->inputs[0].dtype;
    if (kind != PLX_POOL_MAX && kind != PLX_POOL_AVERAGE) {
        return plxk_refuse(buf, size, "%s: pool kind %d is not implemented", op, (int)kind);
    }
    bool ok = dt == PLX_DTYPE_FLOAT32 ||
              (kind == PLX_POOL_MAX && (dt == PLX_DTYPE_INT8 || dt == PLX_DTYPE_UINT8));
    if (!ok) {
        return plxk_refuse(buf, size, "runs %s %s in %s only, not %s", kind == PLX_POOL_MAX ? "max" : "average",
                   op, kind == PLX_POOL_MAX ? "float32, int8 and uint8"
                                   : "float32 (int8 and uint8 with per-tensor quantization on "
                                     "X and Y)",
                   plx_dtype_name(dt));
    }
    if (l->outputs[0].dtype != dt) {
        return plxk_refuse(buf, size, "%s: X is %s but Y is %s", op, plx_dtype_name(dt),
                   plx_dtype_name(l->outputs[0].dtype));
    }
    return NULL;
}

/* An average of int8/uint8 values with per-tensor quantization on X and Y:
 * the mean of the real values, requantized (plexus/ops.h, "Quantized
 * layers"); `kind` the pool's. */
static bool quantized_average_of(const plx_layer_view *l, plx_pool_kind kind) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    return kind == PLX_POOL_AVERAGE &&
           (x->dtype == PLX_DTYPE_INT8 || x->dtype == PLX_DTYPE_UINT8) &&
           (y->dtype == PLX_DTYPE_INT8 || y->dtype == PLX_DTYPE_UINT8) &&
           x->quant.kind == PLX_QUANT_PER_TENSOR && y->quant.kind == PLX_QUANT_PER_TENSOR;
}

/* The mean of `count` real values whose quantized sum, less count times
 * X's zero point, is `centered`, in Y's parameters: the exact integer sum
 * scaled in double and rounded once to float32 (the float layer's value up
 * to the rounding of its float sum), then quantized as quantize does (ties
 * to even, saturated). No value (count 0) is the real value 0. */
static double requantize_mean(int64_t centered, int64_t count, const plx_quant_params *qx,
                              const plx_quant_params *qy, plx_dtype yt) {
    double lo = yt == PLX_DTYPE_INT8 ? -128.0 : 0.0, hi = yt == PLX_DTYPE_INT8 ? 127.0 : 255.0;
    float mean = count ? (float)((double)centered * (double)qx->scale / (double)count) : 0.0f;
    double r = (double)nearbyintf(mean / qy->scale) + (double)qy->zero_point;
    return r < lo ? lo : r > hi ? hi : r;
}

static const char *pool_prepare(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                size_t size) {
    const plx_pool_desc *desc = l->desc;
    const char *why = quantized_average_of(l, desc->kind)
                          ? NULL
                          : pool_dtype(l, "pool", desc->kind, buf, size);
    if (why) {
        return why;
    }
    if (l->output_count > 1) {
        const plx_tensor_info *y = &l->outputs[0], *ind = &l->outputs[1];
        bool same = ind->rank == y->rank;
        for (uint32_t i = 0; same && i < y->rank; i++) {
            same = ind->dims[i] == y->dims[i];
        }
        if (desc->kind != PLX_POOL_MAX || l->inputs[0].dtype != PLX_DTYPE_FLOAT32 ||
            ind->dtype != PLX_DTYPE_INT64 || !same) {
            return plxk_refuse(buf, size, "pool: Indices come with float32 max pools "
                               "only, int64 of Y's shape");
        }
        if (desc->indices_column_major && l->inputs[0].rank > 4) {
            return plxk_refuse(buf, size, "pool: column-major Indices are for 1-D and "
                               "2-D pools, not 3-D");
        }
    }
    char msg[224];
    return plxk_window_refusal(plx_window_geom_pool_nd(l, PLXK_ATTR_LIMIT, g, msg, sizeof msg),
                               buf, size);
}

/* The window of output position (od, oh, ow) along one slot: input
 * position of tap k, whether it lies inside X, and whether inside X and
 * its padding (taps past the padding, which ceil_mode can create). */
static inline int64_t tap_at(const plx_window_geom *g, int slot, int64_t o, int64_t k) {
    return o * g->s[slot] - g->pb[slot] + k * g->d[slot];
}

static inline bool tap_in(const plx_window_geom *g, int slot, int64_t i) {
    return i >= 0 && i < g->in[slot];
}

static inline bool tap_in_pad(const plx_window_geom *g, int slot, int64_t i) {
    return i >= -g->pb[slot] && i < g->in[slot] + g->pe[slot];
}

/* A float32 max pool with its Indices (plx_pool_desc): the first maximum
 * of each window in row-major order, a NaN counting as larger than any
 * number; a window with nothing inside X gives -inf and index -1. */
static void max_pool_indices(const plx_window_geom *g, bool column_major, const float *x,
                             float *y, int64_t *ind) {
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t c = 0; c < g->c; c++) {
            int64_t plane = (n * g->c + c) * plxk_geom_in_plane(g);
            for (int64_t od = 0; od < g->out[2]; od++) {
                for (int64_t oh = 0; oh < g->out[0]; oh++) {
                    for (int64_t ow = 0; ow < g->out[1]; ow++) {
                        float best = -INFINITY;
                        int64_t at = -1;
                        for (int64_t kd = 0; kd < g->k[2]; kd++) {
                            int64_t id = tap_at(g, 2, od, kd);
                            for (int64_t kh = 0; tap_in(g, 2, id) && kh < g->k[0]; kh++) {
                                int64_t ih = tap_at(g, 0, oh, kh);
                                for (int64_t kw = 0; tap_in(g, 0, ih) && kw < g->k[1]; kw++) {
                                    int64_t iw = tap_at(g, 1, ow, kw);
                                    if (!tap_in(g, 1, iw)) {
                                        continue;
                                    }
                                    float v = x[plxk_geom_x_index3(g, n, c, id, ih, iw)];
                                    if (at < 0 || (v > best && !isnan(best)) ||
                                        (isnan(v) && !isnan(best))) {
                                        best = v;
                                        /* column-major: 1-D and 2-D only (pool_prepare) */
                                        at = plane + (column_major
                                                          ? ih + iw * g->in[0]
                                                          : (id * g->in[0] + ih) * g->in[1] + iw);
                                    }
                                }
                            }
                        }
                        int64_t yi = plxk_geom_y_index3(g, n, c, od, oh, ow);
                        y[yi] = best;
                        ind[yi] = at;
                    }
                }
            }
        }
    }
}

/* One window of a max or average pool (output position o: depth, row,
 * column): its maximum, or its average (the float sum over the count);
 * NaN for an average of nothing. */
static double pool_window(const plx_window_geom *g, const plx_pool_desc *desc, plx_dtype dt,
                          const void *x, int64_t n, int64_t c, const int64_t o[3]) {
    bool is_max = desc->kind == PLX_POOL_MAX;
    double best = lowest_value(dt);
    float sum = 0.0f;
    int64_t count = 0;
    for (int64_t kd = 0; kd < g->k[2]; kd++) {
        int64_t id = tap_at(g, 2, o[0], kd);
        bool d_in = tap_in(g, 2, id), d_pad = tap_in_pad(g, 2, id);
        for (int64_t kh = 0; kh < g->k[0]; kh++) {
            int64_t ih = tap_at(g, 0, o[1], kh);
            bool h_in = d_in && tap_in(g, 0, ih), h_pad = d_pad && tap_in_pad(g, 0, ih);
            for (int64_t kw = 0; kw < g->k[1]; kw++) {
                int64_t iw = tap_at(g, 1, o[2], kw);
                if (h_in && tap_in(g, 1, iw)) {
                    double v = load_real(x, dt, plxk_geom_x_index3(g, n, c, id, ih, iw));
                    if (is_max) {
                        best = v > best || isnan(v) ? v : best;
                    } else {
                        sum += (float)v;
                    }
                    count++;
                } else if (desc->count_include_pad && h_pad && tap_in_pad(g, 1, iw)) {
                    count++;
                }
            }
        }
    }
    return is_max ? best : count ? (double)(sum / (float)count) : NAN;
}

const char *plxk_check_pool(const plx_layer_view *layer, char *buf, size_t size) {
    if (((const plx_pool_desc *)layer->desc)->kind == PLX_POOL_LP) {
        return plxk_check_lp_pool(layer, buf, size); /* kernels_lppool.c */
    }
    plx_window_geom g = {0};
    return pool_prepare(layer, &g, buf, size);
}

typedef struct max_pool_job {
    const plx_window_geom *g;
    plxk_isa isa;
    plx_dtype dt;
    const void *x;
    void *y;
} max_pool_job;

/* One output plane (image n, channel c = task) of a max pool, the common
 * case (ResNet's stem), on the pool's threads: plxk_max_pool_plane
 * (qmap.h), compiled per instruction set (the strided taps of a stride-2
 * window vectorise with the shuffles of AVX2 and AVX-512). */
static void max_pool_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const max_pool_job *job = ctx;
    const plx_window_geom *g = job->g;
    size_t es = plx_dtype_size(job->dt);
    (void)plxk_max_pool_plane(job->isa, job->dt, g,
                              (const char *)job->x + (size_t)task * (size_t)(g->in[0] * g->in[1]) * es,
                              (char *)job->y + (size_t)task * (size_t)(g->out[0] * g->out[1]) * es);
}

/* Taps k = 0 .. taps-1 of a window starting at `start` with dilation d
 * whose position start + k d lies in [lo, hi). */
static int64_t taps_within(int64_t start, int64_t taps, int64_t d, int64_t lo, int64_t hi) {
    int64_t first = start >= lo ? 0 : (lo - start + d - 1) / d;
    int64_t end = start >= hi ? 0 : (hi - start + d - 1) / d;
    end = end < taps ? end : taps;
    return end > first ? end - first : 0;
}

/* An average pool's planes: float32 (average_plane) or quantized
 * (q_average_plane, which reads the layer's quantization). */
typedef struct average_job {
    const plx_window_geom *g;
    const plx_layer_view *layer;
    bool count_include_pad;
    const void *x;
    void *y;
} average_job;

/* One output plane (task = n * C + c) of a float32 1-D or 2-D average
 * pool, as pool_window computes it, by rows: each tap inside X adds its
 * (strided) row of inputs to the output row of sums, in pool_window's tap
 * order, so that every sum rounds as there; then each sum is divided by
 * its window's count, which is the product of the window's rows and its
 * columns inside X (or inside X and its padding: count_include_pad). The
 * columns whose whole window lies inside X share one count; only the edges
 * count theirs. pool_window's per-output loop over taps in double took
 * five times ONNX Runtime's time on a 2x2 pool of 64x80x80. */
static void average_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const average_job *job = ctx;
    const plx_window_geom *g = job->g;
    const float *x = (const float *)job->x + (size_t)task * (size_t)(g->in[0] * g->in[1]);
    float *y = (float *)job->y + (size_t)task * (size_t)(g->out[0] * g->out[1]);
    int64_t lo_w = job->count_include_pad ? -g->pb[1] : 0;
    int64_t hi_w = job->count_include_pad ? g->in[1] + g->pe[1] : g->in[1];
    int64_t lo_h = job->count_include_pad ? -g->pb[0] : 0;
    int64_t hi_h = job->count_include_pad ? g->in[0] + g->pe[0] : g->in[0];
    /* the outputs whose every column tap is inside X: [inner_lo, inner_hi) */
    int64_t inner_lo, inner_hi, lo, hi;
    plxk_window_columns(-g->pb[1], g->s[1], g->in[1], g->out[1], &inner_lo, &hi);
    plxk_window_columns((g->k[1] - 1) * g->d[1] - g->pb[1], g->s[1], g->in[1], g->out[1], &lo,
                        &inner_hi);
    inner_hi = inner_hi > inner_lo ? inner_hi : inner_lo;
    for (int64_t oh = 0; oh < g->out[0]; oh++) {
        float *restrict yr = y + oh * g->out[1];
        for (int64_t ow = 0; ow < g->out[1]; ow++) {
            yr[ow] = 0.0f;
        }
        for (int64_t kh = 0; kh < g->k[0]; kh++) {
            int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
            if (ih < 0 || ih >= g->in[0]) {
                continue;
            }
            const float *restrict xr = x + ih * g->in[1];
            for (int64_t kw = 0; kw < g->k[1]; kw++) {
                int64_t off = kw * g->d[1] - g->pb[1];
                plxk_window_columns(off, g->s[1], g->in[1], g->out[1], &lo, &hi);
                if (g->s[1] == 1) {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        yr[ow] += xr[ow + off];
                    }
                } else if (g->s[1] == 2) {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        yr[ow] += xr[2 * ow + off];
                    }
                } else {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        yr[ow] += xr[ow * g->s[1] + off];
                    }
                }
            }
        }
        int64_t rows = taps_within(oh * g->s[0] - g->pb[0], g->k[0], g->d[0], lo_h, hi_h);
        for (int64_t ow = 0; ow < g->out[1]; ow++) {
            if (ow == inner_lo && inner_hi > inner_lo) {
                float count = (float)(rows * g->k[1]);
                for (; ow < inner_hi; ow++) {
                    yr[ow] = rows ? yr[ow] / count : NAN;
                }
                if (ow == g->out[1]) {
                    break;
                }
            }
            int64_t count = rows * taps_within(ow * g->s[1] - g->pb[1], g->k[1], g->d[1], lo_w,
                                               hi_w);
            yr[ow] = count ? yr[ow] / (float)count : NAN;
        }
    }
}

/* One output plane (task = n * C + c) of an int8/uint8 average pool: per
 * window the exact integer sum of the taps inside X, and the taps counted
 * as the float kernel counts them (below), requantized once
 * (requantize_mean). The loops run over the geometry's three slots in
 * memory order (the depth, slot 2, outermost; plexus/window.h), an
 * odometer over each window's taps. */
static void q_average_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const average_job *job = ctx;
    const plx_window_geom *g = job->g;
    enum { SLOTS = 3 };
    static const int slot_of[SLOTS] = {2, 0, 1}; /* D, H, W */
    const plx_tensor_info *xi = &job->layer->inputs[0], *yi = &job->layer->outputs[0];
    int64_t in_plane = plxk_geom_in_plane(g), out_plane = plxk_geom_out_plane(g);
    int64_t taps = plxk_geom_taps(g);
    const uint8_t *xu = (const uint8_t *)job->x + (size_t)task * (size_t)in_plane;
    const int8_t *xs = (const int8_t *)job->x + (size_t)task * (size_t)in_plane;
    bool x_signed = xi->dtype == PLX_DTYPE_INT8;
    int64_t zx = xi->quant.zero_point;
    for (int64_t o = 0; o < out_plane; o++) {
        int64_t start[SLOTS], tap[SLOTS] = {0}, rest = o;
        for (int k = SLOTS - 1; k >= 0; k--) {
            int d = slot_of[k];
            start[k] = (rest % g->out[d]) * g->s[d] - g->pb[d];
            rest /= g->out[d];
        }
        int64_t sum = 0, count = 0;
        for (int64_t t = 0; t < taps; t++) {
            bool in = true, pad = true;
            int64_t at = 0;
            for (int k = 0; k < SLOTS; k++) {
                int d = slot_of[k];
                int64_t i = start[k] + tap[k] * g->d[d];
                in = in && i >= 0 && i < g->in[d];
                pad = pad && i >= -g->pb[d] && i < g->in[d] + g->pe[d];
                at = at * g->in[d] + i;
            }
            if (in) {
                sum += (x_signed ? (int64_t)xs[at] : (int64_t)xu[at]) - zx;
                count++;
            } else if (job->count_include_pad && pad) {
                count++;
            }
            for (int k = SLOTS - 1; k >= 0 && ++tap[k] == g->k[slot_of[k]]; k--) {
                tap[k] = 0;
            }
        }
        double r = requantize_mean(sum, count, &xi->quant, &yi->quant, yi->dtype);
        store_real(job->y, yi->dtype, (int64_t)task * out_plane + o, r);
    }
}

/* Average pools divide by the taps inside the input (count_include_pad
 * false) or inside input plus padding (true); taps past the padding, which
 * ceil_mode can create, never count, as in ONNX's reference and PyTorch.
 * A window with nothing to average gives NaN; a max over nothing gives the
 * lowest value of the dtype. */
bool plxk_run_pool(const plxk_kernel_args *args) {
    if (((const plx_pool_desc *)args->layer->desc)->kind == PLX_POOL_LP) {
        return plxk_run_lp_pool(args);
    }
    char why[256];
    plx_window_geom g = {0};
    if (pool_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_pool_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    bool is_max = desc->kind == PLX_POOL_MAX;
    if (args->layer->output_count > 1) {
        max_pool_indices(&g, desc->indices_column_major, x, y, args->outputs[1]);
        return true;
    }
    if (quantized_average_of(args->layer, desc->kind)) {
        average_job job = {&g, args->layer, desc->count_include_pad, x, y};
        double cost_ns = (double)(g.n * g.c) * (double)plxk_geom_out_plane(&g) *
                         (double)plxk_geom_taps(&g);
        plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * g.c), cost_ns,
                      q_average_plane, &job);
        return true;
    }
    if (is_max && g.spatial_rank < 3) {
        max_pool_job job = {&g, PLXK_ISA_PORTABLE, dt, x, y};
        if (!plxk_require_isa(args, "pool", &job.isa)) {
            return false;
        }
        double cost_ns = (double)(g.n * g.c) * (double)(g.out[0] * g.out[1]) *
                         (double)(g.k[0] * g.k[1]) / 4.0;
        plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * g.c), cost_ns, max_pool_plane,
                      &job);
        return true;
    }
    if (!is_max && g.spatial_rank < 3 && dt == PLX_DTYPE_FLOAT32) {
        average_job job = {&g, args->layer, desc->count_include_pad, x, y};
        double cost_ns = (double)(g.n * g.c) * (double)(g.out[0] * g.out[1]) *
                         (double)(g.k[0] * g.k[1]) / 4.0;
        plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * g.c), cost_ns, average_plane,
                      &job);
        return true;
    }
    /* 3-D pools */
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t c = 0; c < g.c; c++) {
            for (int64_t od = 0; od < g.out[2]; od++) {
                for (int64_t oh = 0; oh < g.out[0]; oh++) {
                    for (int64_t ow = 0; ow < g.out[1]; ow++) {
                        double v = pool_window(&g, desc, dt, x, n, c, (int64_t[]){od, oh, ow});
                        int64_t yi = plxk_geom_y_index3(&g, n, c, od, oh, ow);
                        if (is_max) {
                            store_real(y, dt, yi, v);
                        } else {
                            ((float *)y)[yi] = (float)v;
                        }
                    }
                }
            }
        }
    }
    return true;
}

static bool quantized_average(const plx_layer_view *l) {
    return quantized_average_of(l, ((const plx_global_pool_desc *)l->desc)->kind);
}

static const char *global_pool_prepare(const plx_layer_view *l, int64_t *outer, int64_t *inner,
                                       char *buf, size_t size) {
    const plx_global_pool_desc *desc = l->desc;
    const char *why = quantized_average(l) ? NULL : pool_dtype(l, "global_pool", desc->kind, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return plxk_refuse(buf, size, "global_pool takes X of rank >= 3, not %u", x->rank);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
    }
    *outer = x->dims[0] * x->dims[1];
    *inner = plxk_dim_product(x, 2, x->rank);
    return plxk_require_output_shape(l, "global_pool", x->rank, dims, buf, size);
}

const char *plxk_check_global_pool(const plx_layer_view *layer, char *buf, size_t size) {
    if (((const plx_global_pool_desc *)layer->desc)->kind == PLX_POOL_LP) {
        return plxk_check_global_lp_pool(layer, buf, size); /* kernels_lppool.c */
    }
    int64_t outer = 0, inner = 0;
    return global_pool_prepare(layer, &outer, &inner, buf, size);
}

bool plxk_run_global_pool(const plxk_kernel_args *args) {
    if (((const plx_global_pool_desc *)args->layer->desc)->kind == PLX_POOL_LP) {
        return plxk_run_global_lp_pool(args);
    }
    char why[256];
    int64_t outer = 0, inner = 0;
    if (global_pool_prepare(args->layer, &outer, &inner, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_global_pool_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    if (quantized_average(args->layer)) {
        /* the integer sum is exact (requantize_mean) */
        const plx_quant_params *qx = &args->layer->inputs[0].quant,
                               *qy = &args->layer->outputs[0].quant;
        plx_dtype yt = args->layer->outputs[0].dtype;
        for (int64_t o = 0; o < outer; o++) {
            int64_t sum = 0;
            if (dt == PLX_DTYPE_INT8) {
                const int8_t *x = (const int8_t *)args->inputs[0] + o * inner;
                for (int64_t i = 0; i < inner; i++) {
                    sum += x[i];
                }
            } else {
                const uint8_t *x = (const uint8_t *)args->inputs[0] + o * inner;
                for (int64_t i = 0; i < inner; i++) {
                    sum += x[i];
                }
            }
            store_real(args->outputs[0], yt, o,
                       requantize_mean(sum - inner * (int64_t)qx->zero_point, inner, qx, qy, yt));
        }
        return true;
    }
    for (int64_t o = 0; o < outer; o++) {
        if (desc->kind == PLX_POOL_MAX) {
            double best = lowest_value(dt);
            for (int64_t i = 0; i < inner; i++) {
                double v = load_real(args->inputs[0], dt, o * inner + i);
                best = v > best || isnan(v) ? v : best;
            }
            store_real(args->outputs[0], dt, o, best);
        } else {
            /* a whole feature map at once: in float lanes, block totals in
             * double (a plain double loop ran at 0.6 ns a value: 0.058 ms
             * for 64 maps of 40 x 40, ONNX Runtime 0.027) */
            double sum = plxk_sum_floats((const float *)args->inputs[0] + o * inner,
                                         (size_t)inner, 0.0f, false);
            ((float *)args->outputs[0])[o] = inner ? (float)(sum / (double)inner) : NAN;
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(POOL, pool);
PLXK_ROW(GLOBAL_POOL, global_pool);
