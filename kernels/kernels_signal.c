/* The reference kernels of signal processing: dft and stft (ONNX DFT and
 * STFT; plexus/ops.h, plx_dft_desc and plx_stft_desc, give the
 * contracts).
 *
 * Both transform lines of complex numbers, in double whatever the
 * tensors' float type, with a fast Fourier transform planned once per
 * run in the workspace: an iterative radix-2 transform for lengths that
 * are powers of two, and Bluestein's algorithm for the others, which
 * writes a transform of length L as a convolution with the chirp
 * exp(-pi i k^2 / L) and computes that convolution with radix-2
 * transforms of a power of two M >= 2 L - 1. Every length thus costs
 * O(L log L). The inverse transform is the forward one of the conjugate,
 * conjugated and divided by L. Nothing allocates: the plan, its tables
 * and the line being transformed live in the workspace
 * (plxk_workspace_dft, plxk_workspace_stft). */
#include "kernels_compute.h"

#include <math.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- the FFT ------------------------------------------------------------ */

/* A transform of length n. Complex numbers are pairs of doubles (real,
 * imaginary). tw holds exp(-2 pi i k / m) for k < m / 2, where m is n
 * (pow2) or the Bluestein length; chirp exp(-pi i k^2 / n) for k < n;
 * bf the transform of the convolution kernel (the conjugate chirp,
 * wrapped around to length m); a the scratch line of length m. */
typedef struct fft_plan {
    int64_t n, m;
    bool pow2;
    double *tw, *chirp, *bf, *a;
} fft_plan;

static bool fft_is_pow2(int64_t n) {
    return n > 0 && (n & (n - 1)) == 0;
}

/* The doubles a plan of length n needs (its tables and scratch); 0 for a
 * length past int64 arithmetic. */
static uint64_t fft_plan_doubles(int64_t n) {
    if (n < 1 || n > (int64_t)1 << 40) {
        return 0;
    }
    if (fft_is_pow2(n)) {
        return (uint64_t)n; /* n / 2 twiddles of 2 doubles; at least 1 */
    }
    int64_t m = 1;
    while (m < 2 * n - 1) {
        m <<= 1;
    }
    return (uint64_t)(2 * n + 2 * m + 2 * m + m); /* chirp, bf, a, tw */
}

/* Radix-2, in place, decimation in time, over m (a power of two)
 * complex numbers, with tw from fft_twiddles(m). */
static void fft_radix2(double *x, int64_t m, const double *tw) {
    for (int64_t i = 1, j = 0; i < m; i++) {
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) {
            j ^= bit;
        }
        j ^= bit;
        if (i < j) {
            double r = x[2 * i], im = x[2 * i + 1];
            x[2 * i] = x[2 * j];
            x[2 * i + 1] = x[2 * j + 1];
            x[2 * j] = r;
            x[2 * j + 1] = im;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        const int64_t half = len / 2, step = m / len;
        for (int64_t s = 0; s < m; s += len) {
            for (int64_t k = 0; k < half; k++) {
                const double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
                double *u = x + 2 * (s + k), *v = x + 2 * (s + k + half);
                const double tr = v[0] * wr - v[1] * wi, ti = v[0] * wi + v[1] * wr;
                v[0] = u[0] - tr;
                v[1] = u[1] - ti;
                u[0] += tr;
                u[1] += ti;
            }
        }
    }
}

static void fft_twiddles(double *tw, int64_t m) {
    for (int64_t k = 0; k < m / 2; k++) {
        const double t = -2.0 * M_PI * (double)k / (double)m;
        tw[2 * k] = cos(t);
        tw[2 * k + 1] = sin(t);
    }
}

/* Fills the plan's tables in `mem` (fft_plan_doubles(n) doubles). */
static void fft_plan_init(fft_plan *p, int64_t n, double *mem) {
    p->n = n;
    p->pow2 = fft_is_pow2(n);
    if (p->pow2) {
        p->m = n;
        p->tw = mem;
        p->chirp = p->bf = p->a = NULL;
        fft_twiddles(p->tw, n);
        return;
    }
    int64_t m = 1;
    while (m < 2 * n - 1) {
        m <<= 1;
    }
    p->m = m;
    p->chirp = mem;
    p->bf = p->chirp + 2 * n;
    p->a = p->bf + 2 * m;
    p->tw = p->a + 2 * m;
    fft_twiddles(p->tw, m);
    for (int64_t k = 0; k < n; k++) {
        /* k^2 mod 2n keeps the angle exact for large k */
        const int64_t q = (int64_t)(((uint64_t)k * (uint64_t)k) % (uint64_t)(2 * n));
        const double t = -M_PI * (double)q / (double)n;
        p->chirp[2 * k] = cos(t);
        p->chirp[2 * k + 1] = sin(t);
    }
    memset(p->bf, 0, (size_t)(2 * m) * sizeof(double));
    for (int64_t k = 0; k < n; k++) {
        p->bf[2 * k] = p->chirp[2 * k];
        p->bf[2 * k + 1] = -p->chirp[2 * k + 1];
        if (k > 0) {
            p->bf[2 * (m - k)] = p->chirp[2 * k];
            p->bf[2 * (m - k) + 1] = -p->chirp[2 * k + 1];
        }
    }
    fft_radix2(p->bf, m, p->tw);
}

/* The forward transform of x (n complex numbers), in place. */
static void fft_forward(const fft_plan *p, double *x) {
    const int64_t n = p->n, m = p->m;
    if (p->pow2) {
        fft_radix2(x, n, p->tw);
        return;
    }
    double *a = p->a;
    const double *w = p->chirp;
    for (int64_t k = 0; k < n; k++) {
        a[2 * k] = x[2 * k] * w[2 * k] - x[2 * k + 1] * w[2 * k + 1];
        a[2 * k + 1] = x[2 * k] * w[2 * k + 1] + x[2 * k + 1] * w[2 * k];
    }
    memset(a + 2 * n, 0, (size_t)(2 * (m - n)) * sizeof(double));
    fft_radix2(a, m, p->tw);
    /* multiply by bf and conjugate: the inverse transform is then a
     * forward one, conjugated again below and divided by m */
    for (int64_t k = 0; k < m; k++) {
        const double r = a[2 * k] * p->bf[2 * k] - a[2 * k + 1] * p->bf[2 * k + 1];
        const double i = a[2 * k] * p->bf[2 * k + 1] + a[2 * k + 1] * p->bf[2 * k];
        a[2 * k] = r;
        a[2 * k + 1] = -i;
    }
    fft_radix2(a, m, p->tw);
    const double scale = 1.0 / (double)m;
    for (int64_t k = 0; k < n; k++) {
        const double r = a[2 * k] * scale, i = -a[2 * k + 1] * scale;
        x[2 * k] = r * w[2 * k] - i * w[2 * k + 1];
        x[2 * k + 1] = r * w[2 * k + 1] + i * w[2 * k];
    }
}

/* ---- element access ----------------------------------------------------- */

static bool sig_is_float(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT64 || dt == PLX_DTYPE_FLOAT16 ||
           dt == PLX_DTYPE_BFLOAT16;
}

static inline double sig_load(plx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_FLOAT64: return ((const double *)p)[i];
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)p)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static inline void sig_store(plx_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case PLX_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float64_to_float16(v); break;
    case PLX_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = plx_float64_to_bfloat16(v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

/* The workspace of a transform of length n: the plan's doubles and one
 * line of n complex numbers; SIZE_MAX when that overflows, 0 for a bad
 * length. */
static size_t sig_workspace(int64_t n) {
    uint64_t d = fft_plan_doubles(n);
    if (d == 0) {
        return 0;
    }
    d += 2 * (uint64_t)n;
    if (d > (SIZE_MAX - 2 * PLXK_WS_ALIGN) / sizeof(double)) {
        return SIZE_MAX;
    }
    return plxk_round_ws((size_t)d * sizeof(double));
}

static bool sig_need_workspace(const plxk_kernel_args *args, const char *op, size_t need) {
    if (!args->workspace || args->workspace_size < need) {
        return plxk_fail(args, "%s: a workspace of %zu bytes is needed, got %zu", op, need,
                         args->workspace ? args->workspace_size : (size_t)0);
    }
    return true;
}

/* ---- dft ---------------------------------------------------------------- */

/* X as [outer, n, inner, comp], Y as [outer, out, inner, 2]. */
typedef struct dft_geom {
    int64_t outer, n, inner, comp, len, out;
} dft_geom;

/* The host validated the layer (core/src/infer_other.c); checked again so
 * that the loops never trust an inconsistent view. */
static const char *dft_prepare(const plx_layer_view *l, dft_geom *g, char *buf, size_t size) {
    const plx_dft_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (!sig_is_float(x->dtype) || y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "dft: X %s and Y %s must be of one float type",
                           plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    const uint32_t r = x->rank;
    const int64_t axis = d->axis < 0 ? d->axis + (int64_t)r : d->axis;
    if (r < 2 || r > PLX_MAX_RANK || axis < 0 || axis >= (int64_t)r - 1 || y->rank != r ||
        (x->dims[r - 1] != 1 && x->dims[r - 1] != 2) || y->dims[r - 1] != 2 ||
        (d->inverse && d->onesided)) {
        return plxk_refuse(buf, size, "dft: X %u-D with axis %d, inverse %d and "
                           "onesided %d is not a transform it runs", (unsigned)r, (int)d->axis,
                           (int)d->inverse, (int)d->onesided);
    }
    g->outer = 1;
    g->inner = 1;
    for (int64_t i = 0; i < (int64_t)r - 1; i++) {
        if (i != axis && y->dims[i] != x->dims[i]) {
            return plxk_refuse(buf, size, "dft: Y's dims must be X's but along axis");
        }
        if (i < axis) {
            g->outer *= x->dims[i];
        } else if (i > axis) {
            g->inner *= x->dims[i];
        }
    }
    g->n = x->dims[axis];
    g->comp = x->dims[r - 1];
    g->len = d->length ? d->length : g->n;
    g->out = d->onesided ? g->len / 2 + 1 : g->len;
    if (g->len < 1 || y->dims[axis] != g->out || sig_workspace(g->len) == 0) {
        return plxk_refuse(buf, size, "dft: the length along axis is not Y's");
    }
    return NULL;
}

const char *plxk_check_dft(const plx_layer_view *layer, char *buf, size_t size) {
    dft_geom g = {0};
    return dft_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_dft(const plx_layer_view *layer, const plxk_compute *compute) {
    (void)compute;
    dft_geom g = {0};
    if (dft_prepare(layer, &g, NULL, 0)) {
        return 0;
    }
    return sig_workspace(g.len);
}

bool plxk_run_dft(const plxk_kernel_args *args) {
    char why[256];
    dft_geom g = {0};
    const plx_layer_view *l = args->layer;
    if (dft_prepare(l, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    if (g.outer * g.inner == 0) {
        return true;
    }
    if (!sig_need_workspace(args, "dft", sig_workspace(g.len))) {
        return false;
    }
    const plx_dft_desc *d = l->desc;
    const plx_dtype dt = l->inputs[0].dtype;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    double *line = args->workspace;
    fft_plan plan;
    fft_plan_init(&plan, g.len, line + 2 * g.len);
    const int64_t take = g.n < g.len ? g.n : g.len;
    const double sign = d->inverse ? -1.0 : 1.0, scale = d->inverse ? 1.0 / (double)g.len : 1.0;
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t i = 0; i < g.inner; i++) {
            for (int64_t j = 0; j < take; j++) {
                const int64_t at = ((o * g.n + j) * g.inner + i) * g.comp;
                line[2 * j] = sig_load(dt, x, at);
                line[2 * j + 1] = g.comp == 2 ? sign * sig_load(dt, x, at + 1) : 0.0;
            }
            for (int64_t j = take; j < g.len; j++) {
                line[2 * j] = line[2 * j + 1] = 0.0;
            }
            fft_forward(&plan, line);
            for (int64_t k = 0; k < g.out; k++) {
                const int64_t at = ((o * g.out + k) * g.inner + i) * 2;
                sig_store(dt, y, at, line[2 * k] * scale);
                sig_store(dt, y, at + 1, sign * line[2 * k + 1] * scale);
            }
        }
    }
    return true;
}

/* ---- stft --------------------------------------------------------------- */

typedef struct stft_geom {
    int64_t batch, len, comp, frames, bins;
} stft_geom;

static const char *stft_prepare(const plx_layer_view *l, stft_geom *g, char *buf, size_t size) {
    const plx_stft_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    const plx_tensor_info *w = l->input_count > 1 ? &l->inputs[1] : NULL;
    if (!sig_is_float(x->dtype) || y->dtype != x->dtype || (w && w->dtype != x->dtype)) {
        return plxk_refuse(buf, size, "stft: signal %s, window and Y %s must be of one "
                           "float type", plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2) || d->frame_step < 1 ||
        d->frame_length < 1 || d->frame_length > x->dims[1] ||
        sig_workspace(d->frame_length) == 0 || (w && (w->rank != 1 ||
                                                      w->dims[0] != d->frame_length))) {
        return plxk_refuse(buf, size, "stft: signal must be [B, len, 1 or 2] with "
                           "1 <= frame_length <= len, window [frame_length], frame_step >= 1");
    }
    g->batch = x->dims[0];
    g->len = x->dims[1];
    g->comp = x->dims[2];
    g->frames = 1 + (g->len - d->frame_length) / d->frame_step;
    g->bins = d->onesided ? d->frame_length / 2 + 1 : d->frame_length;
    if (y->rank != 4 || y->dims[0] != g->batch || y->dims[1] != g->frames ||
        y->dims[2] != g->bins || y->dims[3] != 2) {
        return plxk_refuse(buf, size, "stft: Y must be [B, frames, bins, 2]");
    }
    return NULL;
}

const char *plxk_check_stft(const plx_layer_view *layer, char *buf, size_t size) {
    stft_geom g = {0};
    return stft_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_stft(const plx_layer_view *layer, const plxk_compute *compute) {
    (void)compute;
    stft_geom g = {0};
    if (stft_prepare(layer, &g, NULL, 0)) {
        return 0;
    }
    return sig_workspace(((const plx_stft_desc *)layer->desc)->frame_length);
}

bool plxk_run_stft(const plxk_kernel_args *args) {
    char why[256];
    stft_geom g = {0};
    const plx_layer_view *l = args->layer;
    if (stft_prepare(l, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_stft_desc *d = l->desc;
    const int64_t len = d->frame_length;
    if (g.batch * g.frames == 0) {
        return true;
    }
    if (!sig_need_workspace(args, "stft", sig_workspace(len))) {
        return false;
    }
    const plx_dtype dt = l->inputs[0].dtype;
    const void *x = args->inputs[0];
    const void *win = l->input_count > 1 ? args->inputs[1] : NULL;
    void *y = args->outputs[0];
    double *line = args->workspace;
    fft_plan plan;
    fft_plan_init(&plan, len, line + 2 * len);
    for (int64_t b = 0; b < g.batch; b++) {
        for (int64_t f = 0; f < g.frames; f++) {
            for (int64_t j = 0; j < len; j++) {
                const int64_t at = (b * g.len + f * d->frame_step + j) * g.comp;
                const double w = win ? sig_load(dt, win, j) : 1.0;
                line[2 * j] = w * sig_load(dt, x, at);
                line[2 * j + 1] = g.comp == 2 ? w * sig_load(dt, x, at + 1) : 0.0;
            }
            fft_forward(&plan, line);
            for (int64_t k = 0; k < g.bins; k++) {
                const int64_t at = ((b * g.frames + f) * g.bins + k) * 2;
                sig_store(dt, y, at, line[2 * k]);
                sig_store(dt, y, at + 1, line[2 * k + 1]);
            }
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW_WS). */
PLXK_ROW_WS(DFT, dft);
PLXK_ROW_WS(STFT, stft);
