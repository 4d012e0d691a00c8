/* The normalisations: batch_norm, layer_norm and instance_norm, and
 * softmax (ONNX semantics, opset 13+), accumulating in double.
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
#include "vecmath.h"

#include <plexus/geometry.h>

#include <stdint.h>
#include <math.h>

/* ------------------------------------------------------------------ */
/* batch_norm, layer_norm                                              */
/* ------------------------------------------------------------------ */

static const char *batch_norm_prepare(const plx_layer_view *l, char *buf, size_t size) {
    const char *why = plxk_require_float32(l, "batch_norm", buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2) {
        return plxk_refuse(buf, size, "batch_norm takes X of rank >= 2, not %u", x->rank);
    }
    static const char *const names[5] = {"X", "scale", "bias", "mean", "var"};
    for (uint32_t i = 1; i < 5; i++) {
        if (plxk_numel(&l->inputs[i]) != x->dims[1]) {
            return plxk_refuse(buf, size, "batch_norm: %s has %lld elements, X has %lld channels",
                       names[i], (long long)plxk_numel(&l->inputs[i]), (long long)x->dims[1]);
        }
    }
    return plxk_require_output_shape(l, "batch_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_batch_norm(const plx_layer_view *layer, char *buf, size_t size) {
    return batch_norm_prepare(layer, buf, size);
}

/* One plane (image, channel) of a batch_norm: y = x a + b. */
typedef struct batch_norm_job {
    const float *x, *scale, *bias, *mean, *var;
    float *y;
    float epsilon;
    int64_t c, inner;
} batch_norm_job;

/* a = scale / sqrt(var + epsilon) and b = bias - mean a per channel, in
 * double, so that each element takes one multiply-add: (x - mean) / denom
 * * scale + bias, a division per element, took 1.8 times ONNX Runtime's
 * time on 1x64x80x80 (one thread), which folds it the same way. */
static void batch_norm_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const batch_norm_job *j = ctx;
    int64_t ch = (int64_t)task % j->c, base = (int64_t)task * j->inner;
    double ad = (double)j->scale[ch] / sqrt((double)j->var[ch] + (double)j->epsilon);
    const float a = (float)ad, b = (float)((double)j->bias[ch] - (double)j->mean[ch] * ad);
    const float *restrict x = j->x + base;
    float *restrict y = j->y + base;
    for (int64_t i = 0; i < j->inner; i++) {
        y[i] = x[i] * a + b;
    }
}

bool plxk_run_batch_norm(const plxk_kernel_args *args) {
    char why[256];
    if (batch_norm_prepare(args->layer, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_batch_norm_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    batch_norm_job j = {.x = args->inputs[0], .scale = args->inputs[1], .bias = args->inputs[2],
                        .mean = args->inputs[3], .var = args->inputs[4], .y = args->outputs[0],
                        .epsilon = desc->epsilon, .c = xi->dims[1],
                        .inner = plxk_dim_product(xi, 2, xi->rank)};
    size_t planes = (size_t)(xi->dims[0] * j.c);
    plxk_pool_run(plxk_pool_of(args->compute), planes, (double)planes * (double)j.inner * 0.2,
                  batch_norm_plane, &j);
    return true;
}

typedef struct layer_norm_geom {
    int64_t outer, inner;
    int64_t scale_st[PLX_MAX_RANK]; /* broadcast strides of scale over X's dims */
    int64_t bias_st[PLX_MAX_RANK];
    uint32_t rank, axis;
} layer_norm_geom;

/* Strides of `t` broadcast (numpy, right-aligned) to X's shape
 * (plexus/geometry.h's); refuses shapes that would broadcast X itself to
 * something larger. */
static const char *broadcast_strides(const plx_tensor_info *t, const plx_tensor_info *x,
                                     const char *op, const char *name, int64_t *st, char *buf,
                                     size_t size) {
    uint32_t i = 0;
    switch (plx_broadcast_strides(t->dims, t->rank, x->dims, x->rank, st, &i)) {
    case PLX_GEOM_OK:
        return NULL;
    case PLX_GEOM_BAD_RANK:
        return plxk_refuse(buf, size, "%s: %s has rank %u, X has rank %u", op, name, t->rank,
                   x->rank);
    default:
        return plxk_refuse(buf, size, "%s: %s does not broadcast to X (dim %u is %lld, not %lld)",
                   op, name, i, (long long)t->dims[i - (x->rank - t->rank)],
                   (long long)x->dims[i]);
    }
}

static const char *layer_norm_prepare(const plx_layer_view *l, layer_norm_geom *g, char *buf,
                                      size_t size) {
    const char *why = plxk_require_float32(l, "layer_norm", buf, size);
    if (why) {
        return why;
    }
    const plx_layer_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if (!plx_axis_normalize(desc->axis, x->rank, false, &axis)) {
        return plxk_refuse(buf, size, "layer_norm: axis %d is out of range for rank %u",
                   desc->axis, x->rank);
    }
    g->rank = x->rank;
    g->axis = axis;
    g->outer = plxk_dim_product(x, 0, g->axis);
    g->inner = plxk_dim_product(x, g->axis, x->rank);
    if ((why = broadcast_strides(&l->inputs[1], x, "layer_norm", "scale", g->scale_st, buf, size))) {
        return why;
    }
    if (l->input_count == 3 &&
        (why = broadcast_strides(&l->inputs[2], x, "layer_norm", "bias", g->bias_st, buf, size))) {
        return why;
    }
    return plxk_require_output_shape(l, "layer_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_layer_norm(const plx_layer_view *layer, char *buf, size_t size) {
    layer_norm_geom g;
    return layer_norm_prepare(layer, &g, buf, size);
}

/* Mean and (biased) variance of n contiguous floats, in two passes of
 * plxk_sum_floats. */
static void mean_and_variance(const float *x, size_t n, double *mean, double *var) {
    *mean = plxk_sum_floats(x, n, 0.0f, false) / (double)n;
    *var = plxk_sum_floats(x, n, (float)*mean, true) / (double)n;
}

/* Whether broadcast strides st over x's dims read one value per position
 * of a normalised row, the same for every row: st is 0 over the outer dims
 * and row-major over [axis, rank) (a scale of the row's own shape, the
 * usual case), so that the row can be scaled without index arithmetic. */
static bool along_the_row(const int64_t *st, const plx_tensor_info *x, uint32_t axis) {
    int64_t step = 1;
    for (uint32_t d = x->rank; d-- > 0;) {
        if (d < axis ? st[d] != 0 : (x->dims[d] != 1 && st[d] != step)) {
            return false;
        }
        if (d >= axis) {
            step *= x->dims[d];
        }
    }
    return true;
}

/* Mean and variance as mean_and_variance gives them; the result is
 * rounded to float once. */
bool plxk_run_layer_norm(const plxk_kernel_args *args) {
    char why[256];
    layer_norm_geom g;
    if (layer_norm_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_layer_norm_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    const float *x = args->inputs[0], *scale = args->inputs[1];
    const float *bias = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    int64_t idx[PLX_MAX_RANK] = {0};
    bool plain = along_the_row(g.scale_st, xi, g.axis) &&
                 (!bias || along_the_row(g.bias_st, xi, g.axis));
    for (int64_t o = 0; o < g.outer; o++) {
        const float *row = x + o * g.inner;
        double mean, var;
        mean_and_variance(row, (size_t)g.inner, &mean, &var);
        double inv = 1.0 / sqrt(var + (double)desc->epsilon);
        if (plain) {
            const float m = (float)mean, k = (float)inv;
            float *restrict out = y + o * g.inner;
            for (int64_t i = 0; i < g.inner; i++) {
                out[i] = (row[i] - m) * k * scale[i] + (bias ? bias[i] : 0.0f);
            }
            continue;
        }
        for (int64_t i = 0; i < g.inner; i++) {
            int64_t so = 0, bo = 0;
            for (uint32_t d = 0; d < g.rank; d++) {
                so += idx[d] * g.scale_st[d];
                bo += idx[d] * (bias ? g.bias_st[d] : 0);
            }
            double v = (row[i] - mean) * inv * scale[so] + (bias ? bias[bo] : 0.0f);
            y[o * g.inner + i] = (float)v;
            for (uint32_t d = g.rank; d-- > 0;) {
                if (++idx[d] < xi->dims[d]) {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* instance_norm                                                       */
/* ------------------------------------------------------------------ */

static const char *instance_norm_prepare(const plx_layer_view *l, char *buf, size_t size) {
    const char *why = plxk_require_float32(l, "instance_norm", buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return plxk_refuse(buf, size, "instance_norm takes X of rank >= 3, not %u",
                              x->rank);
    }
    static const char *const names[3] = {"X", "scale", "bias"};
    for (uint32_t i = 1; i < 3; i++) {
        const plx_tensor_info *p = &l->inputs[i];
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return plxk_refuse(buf, size,
                                  "instance_norm: %s must be 1-D with %lld entries (X's channels)",
                                  names[i], (long long)x->dims[1]);
        }
    }
    return plxk_require_output_shape(l, "instance_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_instance_norm(const plx_layer_view *layer, char *buf, size_t size) {
    return instance_norm_prepare(layer, buf, size);
}

/* Each (n, c) plane by its own mean and (biased) variance
 * (mean_and_variance), then scaled in float. */
bool plxk_run_instance_norm(const plxk_kernel_args *args) {
    char why[256];
    if (instance_norm_prepare(args->layer, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_instance_norm_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    const float *x = args->inputs[0], *scale = args->inputs[1], *bias = args->inputs[2];
    float *y = args->outputs[0];
    int64_t n = xi->dims[0], c = xi->dims[1], inner = plxk_dim_product(xi, 2, xi->rank);
    for (int64_t b = 0; b < n; b++) {
        for (int64_t ch = 0; ch < c && inner > 0; ch++) {
            const float *plane = x + (b * c + ch) * inner;
            double mean, var;
            mean_and_variance(plane, (size_t)inner, &mean, &var);
            const float m = (float)mean, bi = bias[ch];
            const float k = (float)((double)scale[ch] / sqrt(var + (double)desc->epsilon));
            float *restrict out = y + (b * c + ch) * inner;
            for (int64_t i = 0; i < inner; i++) {
                out[i] = (plane[i] - m) * k + bi;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* softmax                                                             */
/* ------------------------------------------------------------------ */

static const char *softmax_prepare(const plx_layer_view *l, int64_t *outer, int64_t *len,
                                   int64_t *inner, char *buf, size_t size) {
    const char *why = plxk_require_float32(l, "softmax", buf, size);
    if (why) {
        return why;
    }
    const plx_softmax_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if (!plx_axis_normalize(desc->axis, x->rank, false, &axis)) {
        return plxk_refuse(buf, size, "softmax: axis %d is out of range for rank %u", desc->axis,
                   x->rank);
    }
    *outer = plxk_dim_product(x, 0, (uint32_t)axis);
    *len = x->dims[axis];
    *inner = plxk_dim_product(x, (uint32_t)axis + 1, x->rank);
    return plxk_require_output_shape(l, "softmax", x->rank, x->dims, buf, size);
}

const char *plxk_check_softmax(const plx_layer_view *layer, char *buf, size_t size) {
    int64_t o, n, i;
    return softmax_prepare(layer, &o, &n, &i, buf, size);
}

/* Softmax (or log_softmax) over the middle axis of [outer, len, inner],
 * inner > 1: SOFTMAX_CHUNK positions of the inner axis at a time, every
 * step along the softmax axis a contiguous run of them, whose
 * exponentials come from the vector math (with one scalar double exp per
 * value, strided, a softmax over axis 1 of 2x12x16x16 took 1.4 times ONNX
 * Runtime's time). The sums are in double. y may be x: each value of x is
 * read before the same place of y is written, and the exponentials of the
 * log form go to a buffer of their own. */
enum { SOFTMAX_CHUNK = 256 };

static void softmax_across(plxk_isa isa, bool log_form, const float *x, float *y,
                           int64_t outer, int64_t len, int64_t inner) {
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j0 = 0; j0 < inner; j0 += SOFTMAX_CHUNK) {
            int64_t n = inner - j0 < SOFTMAX_CHUNK ? inner - j0 : SOFTMAX_CHUNK;
            const float *xb = x + o * len * inner + j0;
            float *yb = y + o * len * inner + j0;
            float mx[SOFTMAX_CHUNK], e[SOFTMAX_CHUNK], last[SOFTMAX_CHUNK];
            double sum[SOFTMAX_CHUNK];
            for (int64_t j = 0; j < n; j++) {
                mx[j] = -INFINITY;
                sum[j] = 0.0;
            }
            for (int64_t i = 0; i < len; i++) {
                const float *xr = xb + i * inner;
                for (int64_t j = 0; j < n; j++) {
                    mx[j] = xr[j] > mx[j] || isnan(xr[j]) ? xr[j] : mx[j];
                }
            }
            for (int64_t i = 0; i < len; i++) {
                const float *xr = xb + i * inner;
                float *t = log_form ? e : yb + i * inner;
                for (int64_t j = 0; j < n; j++) {
                    t[j] = xr[j] - mx[j];
                }
                (void)plxk_vmap(isa, PLXK_VEXP, t, t, (size_t)n); /* isa checked */
                for (int64_t j = 0; j < n; j++) {
                    sum[j] += t[j];
                }
            }
            for (int64_t j = 0; j < n; j++) { /* log(sum), or 1 / sum */
                last[j] = log_form ? (float)log(sum[j]) : (float)(1.0 / sum[j]);
            }
            for (int64_t i = 0; i < len; i++) {
                const float *xr = xb + i * inner;
                float *yr = yb + i * inner;
                if (log_form) {
                    for (int64_t j = 0; j < n; j++) {
                        yr[j] = (xr[j] - mx[j]) - last[j];
                    }
                } else {
                    for (int64_t j = 0; j < n; j++) {
                        yr[j] *= last[j];
                    }
                }
            }
        }
    }
}

/* Subtracts the max before exponentiating; the sum of exponentials is kept
 * in double (it is the one long accumulation here). The exponentials come
 * from the vector math (vecmath.h), but for log_softmax along the last
 * axis. */
bool plxk_run_softmax(const plxk_kernel_args *args) {
    char why[256];
    int64_t outer = 0, len = 0, inner = 0;
    if (softmax_prepare(args->layer, &outer, &len, &inner, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    bool log_form = ((const plx_softmax_desc *)args->layer->desc)->log;
    const float *x = args->inputs[0];
    float *y = args->outputs[0];
    plxk_isa isa;
    if (!plxk_require_isa(args, "softmax", &isa)) {
        return false;
    }
    if (inner > 1) {
        softmax_across(isa, log_form, x, y, outer, len, inner);
        return true;
    }
    if (!log_form) {
        /* along the last axis (attention's): the exponentials on the
         * vector math, in the output rows, then scaled; short rows a block
         * of them per call of the vector math (attention's rows of 16
         * tokens, one call each, took 1.3 to 2 times ONNX Runtime's time) */
        int64_t block = len < SOFTMAX_CHUNK ? SOFTMAX_CHUNK / len : 1;
        for (int64_t o0 = 0; o0 < outer; o0 += block) {
            int64_t rows = outer - o0 < block ? outer - o0 : block;
            for (int64_t o = o0; o < o0 + rows; o++) {
                const float *xr = x + o * len;
                float *yr = y + o * len;
                float mx = -INFINITY;
                for (int64_t i = 0; i < len; i++) {
                    mx = xr[i] > mx || isnan(xr[i]) ? xr[i] : mx;
                }
                for (int64_t i = 0; i < len; i++) {
                    yr[i] = xr[i] - mx;
                }
            }
            (void)plxk_vmap(isa, PLXK_VEXP, y + o0 * len, y + o0 * len,
                            (size_t)(rows * len)); /* isa checked above */
            for (int64_t o = o0; o < o0 + rows; o++) {
                float *yr = y + o * len;
                double sum = 0.0;
                for (int64_t i = 0; i < len; i++) {
                    sum += yr[i];
                }
                float scale = (float)(1.0 / sum);
                for (int64_t i = 0; i < len; i++) {
                    yr[i] *= scale;
                }
            }
        }
        return true;
    }
    /* log_softmax along the last axis */
    for (int64_t o = 0; o < outer; o++) {
        const float *xr = x + o * len;
        float *yr = y + o * len;
        float mx = -INFINITY;
        for (int64_t i = 0; i < len; i++) {
            mx = xr[i] > mx || isnan(xr[i]) ? xr[i] : mx;
        }
        double sum = 0.0;
        for (int64_t i = 0; i < len; i++) {
            sum += exp((double)(xr[i] - mx));
        }
        float log_sum = (float)log(sum);
        for (int64_t i = 0; i < len; i++) {
            yr[i] = (xr[i] - mx) - log_sum;
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(BATCH_NORM, batch_norm);
PLXK_ROW(LAYER_NORM, layer_norm);
PLXK_ROW(INSTANCE_NORM, instance_norm);
PLXK_ROW(SOFTMAX, softmax);
