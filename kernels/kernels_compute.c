/* cpu_ref's dense-math kernels: convolutions, matrix products, pooling,
 * normalisations, softmax, reductions (reduce, arg_reduce, topk) and
 * resize (ONNX semantics, opset 13+).
 *
 * Every operator has a prepare function that checks the layer (counts,
 * dtypes, attributes, shapes) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates: small scratch lives in stack arrays, and
 * the matrix products (conv, fully_connected, gemm, matmul in float32) run
 * on cpu_ref's GEMM (gemm.h) in the workspace their caller sized with
 * plxk_kernel_workspace, with a fused relu or clip in its epilogue. */
#include "kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <plexus/window.h>

#include "depthwise.h"

/* Window geometry values (sizes, pads, strides, dilations, window extents)
 * above this are refused so that index arithmetic in int64_t cannot
 * overflow whatever the descriptor holds. */
#define ATTR_LIMIT ((int64_t)1 << 30)

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* Formats a refusal into buf and returns it (a fixed text when there is no
 * buffer to write into). */
/* Element count of an info already checked by check_layer. */
static int64_t numel(const plx_tensor_info *t) {
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= t->dims[i];
    }
    return n;
}

/* Product of dims[from..to-1]. */
static int64_t dim_product(const plx_tensor_info *t, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t i = from; i < to; i++) {
        n *= t->dims[i];
    }
    return n;
}

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---- the GEMM, its workspace and the fused activation ---------------- */

#define WS_ALIGN 64

static size_t round_ws(size_t n) {
    return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN;
}

static plxk_isa isa_of(const plxk_compute *c) {
    return c ? c->isa : plxk_isa_best();
}

static plxk_pool *pool_of(const plxk_compute *c) {
    return c ? c->pool : NULL;
}

/* Workspace of an M x N x K product, saturating. */
static size_t gemm_ws(const plxk_compute *c, int64_t m, int64_t n, int64_t k) {
    size_t s = plxk_gemm_workspace_size(isa_of(c), (size_t)m, (size_t)n, (size_t)k,
                                           plxk_pool_threads(pool_of(c)));
    return s == SIZE_MAX ? SIZE_MAX : round_ws(s);
}

/* The workspace past its first `used` bytes (64-byte aligned). */
static void *ws_at(const plxk_kernel_args *a, size_t used, size_t *left) {
    if (!a->workspace || used > a->workspace_size) {
        *left = 0;
        return NULL;
    }
    *left = a->workspace_size - used;
    return (char *)a->workspace + used;
}

/* The fused activation (relu or clip only) as the GEMM's epilogue (and the
 * depthwise kernel's, which takes the same fields). */
static void set_epilogue(const plx_activation_desc *act, plxk_gemm_args *g) {
    g->act = PLXK_ACT_NONE;
    if (act && act->func == PLX_ACT_RELU) {
        g->act = PLXK_ACT_RELU;
    } else if (act && act->func == PLX_ACT_CLIP) {
        g->act = PLXK_ACT_CLIP;
        g->lo = act->alpha;
        g->hi = act->beta;
    }
}

static bool run_gemm(const plxk_kernel_args *a, plxk_gemm_args *g, void *ws, size_t left,
                     const char *op) {
    set_epilogue(a->activation, g);
    if (!plxk_gemm(isa_of(a->compute), pool_of(a->compute), g, ws, left)) {
        return plxk_fail(a, "cpu_ref %s: the matrix product could not run (workspace of "
                               "%zu bytes too small for %zu x %zu x %zu?)",
                            op, left, g->m, g->n, g->k);
    }
    return true;
}

/* What every layer needs: the view, the input/output counts, a descriptor
 * of at least desc_size bytes (0: none needed), and infos whose shapes have
 * a byte size (so element counts fit size_t and int64_t). */
static const char *check_layer(const plx_layer_view *l, const char *op, uint32_t min_in,
                               uint32_t max_in, size_t desc_size, char *buf, size_t size) {
    if (!l || l->struct_size < offsetof(plx_layer_view, output_count) + sizeof l->output_count) {
        return plxk_refuse(buf, size, "cpu_ref %s: the layer view is missing or too small", op);
    }
    if (l->input_count < min_in || l->input_count > max_in) {
        return plxk_refuse(buf, size, "cpu_ref %s takes %u to %u inputs, not %u", op, min_in, max_in,
                   l->input_count);
    }
    if (l->output_count != 1 || !l->outputs || !l->inputs) {
        return plxk_refuse(buf, size, "cpu_ref %s takes its inputs and exactly 1 output, not %u", op,
                   l->output_count);
    }
    if (desc_size) {
        if (!l->desc) {
            return plxk_refuse(buf, size, "cpu_ref %s needs a descriptor", op);
        }
        uint32_t ss;
        memcpy(&ss, l->desc, sizeof ss);
        if (ss < desc_size) {
            return plxk_refuse(buf, size, "cpu_ref %s: descriptor struct_size %u is smaller than %zu", op,
                       ss, desc_size);
        }
    }
    for (uint32_t i = 0; i <= l->input_count; i++) {
        const plx_tensor_info *t = i < l->input_count ? &l->inputs[i] : &l->outputs[0];
        size_t bytes;
        if (!plx_tensor_info_byte_size(t, &bytes) || bytes > (size_t)INT64_MAX / 8) {
            return plxk_refuse(buf, size, "cpu_ref %s: %s %u has an invalid dtype or shape", op,
                       i < l->input_count ? "input" : "output", i < l->input_count ? i : 0);
        }
    }
    return NULL;
}

/* Refuses any input or output whose dtype is not float32. */
static const char *require_float32(const plx_layer_view *l, const char *op, char *buf,
                                   size_t size) {
    for (uint32_t i = 0; i <= l->input_count; i++) {
        const plx_tensor_info *t = i < l->input_count ? &l->inputs[i] : &l->outputs[0];
        if (t->dtype != PLX_DTYPE_FLOAT32) {
            return plxk_refuse(buf, size, "cpu_ref runs %s in float32 only, not %s (%s %u)", op,
                       plx_dtype_name(t->dtype), i < l->input_count ? "input" : "output",
                       i < l->input_count ? i : 0);
        }
    }
    return NULL;
}

/* Refuses a layer whose output's shape differs from `dims`. */
static const char *require_output_shape(const plx_layer_view *l, const char *op, uint32_t rank,
                                        const int64_t *dims, char *buf, size_t size) {
    const plx_tensor_info *y = &l->outputs[0];
    bool same = y->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) {
        same = y->dims[i] == dims[i];
    }
    if (!same) {
        char want[160] = "", *p = want;
        for (uint32_t i = 0; i < rank && p < want + sizeof want - 24; i++) {
            p += snprintf(p, (size_t)(want + sizeof want - p), "%s%lld", i ? "," : "",
                          (long long)dims[i]);
        }
        return plxk_refuse(buf, size, "cpu_ref %s: the output info disagrees with the inputs (expected [%s])",
                   op, want);
    }
    return NULL;
}

static bool is_int_dtype(plx_dtype dt) {
    return dt == PLX_DTYPE_INT32 || dt == PLX_DTYPE_INT64;
}

/* Integer loads and stores for int32/int64 kernels. Sums wrap (two's
 * complement, through uint64_t) instead of overflowing, which would be UB. */
static int64_t load_int(const void *p, plx_dtype dt, int64_t i) {
    return dt == PLX_DTYPE_INT32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static void store_int(void *p, plx_dtype dt, int64_t i, int64_t v) {
    if (dt == PLX_DTYPE_INT32) {
        ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v;
    } else {
        ((int64_t *)p)[i] = v;
    }
}

static int64_t wrap_add(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wrap_mul(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* ------------------------------------------------------------------ */
/* Spatial windows (conv, conv_transpose, pool)                        */
/* ------------------------------------------------------------------ */

/* The geometry of a 1-D or 2-D windowed operator is the SDK's
 * (plx_window_geom, plexus/window.h): a 1-D operator uses slot 1 and
 * leaves slot 0 of size 1, so that one pair of loops serves both. Its
 * checks run within ATTR_LIMIT; its reasons get cpu_ref's prefix. */
static const char *window_refusal(const char *why, char *buf, size_t size) {
    return why ? plxk_refuse(buf, size, "cpu_ref %s", why) : NULL;
}

static int64_t geom_x_index(const plx_window_geom *g, int64_t n, int64_t c, int64_t h, int64_t w) {
    return ((n * g->c + c) * g->in[0] + h) * g->in[1] + w;
}

static int64_t geom_y_index(const plx_window_geom *g, int64_t n, int64_t m, int64_t h, int64_t w) {
    return ((n * g->m + m) * g->out[0] + h) * g->out[1] + w;
}

/* ------------------------------------------------------------------ */
/* conv                                                                */
/* ------------------------------------------------------------------ */

static const char *conv_prepare(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                size_t size) {
    const char *why = check_layer(l, "conv", 2, 3, sizeof(plx_conv_desc), buf, size);
    if (!why) {
        why = require_float32(l, "conv", buf, size);
    }
    if (why) {
        return why;
    }
    char msg[224];
    return window_refusal(plx_window_geom_conv(l, ATTR_LIMIT, g, msg, sizeof msg), buf, size);
}

const char *plxk_check_conv(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g = {0};
    return conv_prepare(layer, &g, buf, size);
}

/* One input channel per group: a direct kernel, no GEMM. */
static bool conv_is_depthwise(const plx_window_geom *g) {
    return g->c == g->group;
}

/* 1x1, unit stride, no padding: X itself is the GEMM's right operand. */
static bool conv_is_pointwise(const plx_window_geom *g) {
    for (int i = 0; i < 2; i++) {
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] != 0 || g->pe[i] != 0) {
            return false;
        }
    }
    return true;
}

/* im2col's whole column matrix, for the shared path of run_conv_shared:
 * [C/group * kh * kw, OH * OW] floats. */
static size_t conv_col_bytes(const plx_window_geom *g) {
    if (conv_is_depthwise(g) || conv_is_pointwise(g)) {
        return 0;
    }
    return round_ws((size_t)(g->c / g->group * g->k[0] * g->k[1] * g->out[0] * g->out[1]) *
                    sizeof(float));
}

/* The bytes of col that a slab may take. The whole col of a 3x3 conv is
 * large (7 MiB for 64 channels at 56x56): written by im2col, it leaves the
 * caches and comes back when the GEMM packs it, and at two threads that
 * traffic, more than the arithmetic, set the conv's time. A slab of this
 * size stays in a core's L2 (1 MiB and more on current x86) together with
 * the GEMM's packed blocks (a KC x slab panel of B, MC x KC of A). */
#define CONV_SLAB_BYTES ((size_t)512 * 1024)

/* The narrowest slab, in NR-wide panels of the GEMM. Each slab's GEMM
 * packs all of W_g again, and that copy is paid back only over enough
 * panels: with ResNet's last stage (K = 4608) in slabs of one panel, the
 * convs ran 1.5 times slower than on the whole col. A large K thus gets
 * slabs wider than CONV_SLAB_BYTES asks for. */
#define CONV_SLAB_MIN_PANELS 8

/* How the im2col path of a conv cuts its output pixels: per image and
 * group, `count` slabs of `width` columns (the last one narrower), a
 * multiple of the GEMM's NR. */
typedef struct conv_slabs {
    size_t width, count; /* columns of a slab, slabs per image and group */
    size_t tasks;        /* slabs of the whole conv: images x groups x count */
    size_t col;          /* bytes of one slab of col (K x width floats), rounded */
    size_t slice;        /* bytes of a thread's workspace: a slab of col and a 1-thread GEMM */
} conv_slabs;

static size_t ceil_div_size(size_t v, size_t by) {
    return (v + by - 1) / by;
}

/* The slabs of an im2col conv (neither depthwise nor pointwise) in variant
 * `isa` on `threads` threads. false sends the conv to the shared path
 * instead: when the output cannot give every thread a slab of the minimum
 * width (ResNet's last stage, 7x7, on two threads: there only the GEMM's
 * split of the output channels keeps every thread busy, and col is small
 * anyway), or when the sizes overflow. The slab count per image and group
 * is rounded up to a multiple of the threads so that they get equal
 * shares. */
static bool conv_slab_plan(const plx_window_geom *g, plxk_isa isa, size_t threads,
                           conv_slabs *s) {
    plxk_gemm_blocking b;
    if (conv_is_depthwise(g) || conv_is_pointwise(g) || !plxk_gemm_blocking_of(isa, &b)) {
        return false;
    }
    size_t images = (size_t)(g->n * g->group), narrowest = CONV_SLAB_MIN_PANELS * b.nr;
    size_t k = (size_t)(g->c / g->group * g->k[0] * g->k[1]), n = (size_t)(g->out[0] * g->out[1]);
    if (images * ceil_div_size(n, narrowest) < threads) {
        return false;
    }
    size_t fit = CONV_SLAB_BYTES / sizeof(float) / k / b.nr * b.nr;
    fit = fit < narrowest ? narrowest : fit;
    s->count = ceil_div_size(ceil_div_size(n, fit), threads) * threads;
    s->width = ceil_div_size(ceil_div_size(n, s->count), b.nr) * b.nr;
    s->count = ceil_div_size(n, s->width);
    s->tasks = images * s->count;
    size_t gemm = plxk_gemm_workspace_size(isa, (size_t)(g->m / g->group), s->width, k, 1);
    if (k > SIZE_MAX / 4 / sizeof(float) / s->width || gemm > SIZE_MAX / 2) {
        return false; /* (gemm is SIZE_MAX on overflow) */
    }
    s->col = round_ws(k * s->width * sizeof(float));
    s->slice = s->col + round_ws(gemm);
    return true;
}

/* A depthwise conv's plane geometry (pointers and bias left NULL, 0). */
static plxk_depthwise_plane depthwise_geometry(const plx_window_geom *g) {
    return (plxk_depthwise_plane){
        .in_h = g->in[0], .in_w = g->in[1], .k_h = g->k[0], .k_w = g->k[1],
        .stride_h = g->s[0], .stride_w = g->s[1], .dil_h = g->d[0], .dil_w = g->d[1],
        .pad_top = g->pb[0], .pad_left = g->pb[1], .out_h = g->out[0], .out_w = g->out[1],
    };
}

/* The depthwise kernel's scratch for one thread, in bytes. */
static size_t depthwise_slice(const plx_window_geom *g) {
    plxk_depthwise_plane p = depthwise_geometry(g);
    return round_ws((size_t)plxk_depthwise_scratch(&p) * sizeof(float));
}

size_t plxk_workspace_conv(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_window_geom g = {0};
    char buf[8];
    if (conv_prepare(layer, &g, buf, sizeof buf)) {
        return 0;
    }
    size_t threads = plxk_pool_threads(pool_of(compute));
    conv_slabs slabs;
    if (conv_is_depthwise(&g) || conv_slab_plan(&g, isa_of(compute), threads, &slabs)) {
        /* a slice per thread */
        size_t slice = conv_is_depthwise(&g) ? depthwise_slice(&g) : slabs.slice;
        return slice > SIZE_MAX / threads ? SIZE_MAX : slice * threads;
    }
    size_t gemm = gemm_ws(compute, g.m / g.group, g.out[0] * g.out[1],
                          g.c / g.group * g.k[0] * g.k[1]);
    size_t col = conv_col_bytes(&g);
    return gemm == SIZE_MAX || col > SIZE_MAX - gemm ? SIZE_MAX : col + gemm;
}

/* col[(c*kh + i)*kw + j][oh*OW + ow] = X[c][oh*s0 - pb0 + i*d0][ow*s1 - pb1 + j*d1],
 * 0 in the padding: row r = (c*kh + i)*kw + j of col, restricted to its
 * columns (output pixels) [j0, j1), into out[0 .. j1 - j0). The columns may
 * start and end inside an output row, so it goes output row by output row,
 * each run split into its padding on the left, its inside and its padding
 * on the right. x is the group's first input channel of one image. */
static void im2col_row(const plx_window_geom *g, const float *x, int64_t r, int64_t j0,
                       int64_t j1, float *out) {
    int64_t ow_n = g->out[1], s1 = g->s[1];
    int64_t c = r / (g->k[0] * g->k[1]), i = r / g->k[1] % g->k[0], j = r % g->k[1];
    int64_t off = j * g->d[1] - g->pb[1], lo, hi;
    plxk_window_columns(off, s1, g->in[1], ow_n, &lo, &hi);
    for (int64_t p = j0; p < j1;) {
        int64_t oh = p / ow_n, a = p % ow_n; /* the run [a, e) of output row oh */
        int64_t e = j1 - p < ow_n - a ? a + (j1 - p) : ow_n;
        int64_t ih = oh * g->s[0] - g->pb[0] + i * g->d[0];
        if (ih < 0 || ih >= g->in[0]) {
            memset(out, 0, (size_t)(e - a) * sizeof *out);
        } else {
            int64_t l = clamp_i64(lo, a, e), h = clamp_i64(hi, l, e);
            const float *xr = x + (c * g->in[0] + ih) * g->in[1];
            memset(out, 0, (size_t)(l - a) * sizeof *out);
            if (s1 == 1) { /* ResNet's 3x3 convs: the run is contiguous in X */
                memcpy(out + (l - a), xr + l + off, (size_t)(h - l) * sizeof *out);
            } else {
                for (int64_t ow = l; ow < h; ow++) {
                    out[ow - a] = xr[ow * s1 + off];
                }
            }
            memset(out + (h - a), 0, (size_t)(e - h) * sizeof *out);
        }
        out += e - a;
        p += e - a;
    }
}

/* What every part of an im2col + GEMM conv (or a pointwise one) reads. */
typedef struct conv_run {
    const plx_window_geom *g;
    const float *x, *w, *b;
    float *y;
    int64_t k, n;               /* col's rows (C/group * kh * kw) and columns (OH * OW) */
    plxk_isa isa;
    plxk_gemm_args epilogue; /* only its act, lo and hi */
    conv_slabs slabs;           /* the slab path's */
    char *ws;                   /* the slab path's: a slice per thread */
    int failed;                 /* the slab path's: a slab's GEMM refused (atomic) */
    float *col;                 /* the shared path's whole col; NULL: X is col (pointwise) */
} conv_run;

/* The first input channel of image n's group gi. */
static const float *conv_group_input(const conv_run *r, int64_t n, int64_t gi) {
    const plx_window_geom *g = r->g;
    return r->x + (n * g->c + gi * (g->c / g->group)) * g->in[0] * g->in[1];
}

/* Y_g[:, j0 .. j0 + cols) = W_g x B for image n and group gi, B being
 * K x cols with rows b_rs apart (a slab of col, the whole col or X), with
 * the bias per output channel and the fused activation. */
static plxk_gemm_args conv_gemm_args(const conv_run *r, int64_t n, int64_t gi, int64_t j0,
                                        int64_t cols, const float *b, int64_t b_rs) {
    const plx_window_geom *g = r->g;
    int64_t mg = g->m / g->group;
    plxk_gemm_args ga = r->epilogue;
    ga.m = (size_t)mg;
    ga.n = (size_t)cols;
    ga.k = (size_t)r->k;
    ga.alpha = 1.0f;
    ga.a = r->w + gi * mg * r->k;
    ga.a_rs = (ptrdiff_t)r->k;
    ga.a_cs = 1;
    ga.b = b;
    ga.b_rs = (ptrdiff_t)b_rs;
    ga.b_cs = 1;
    ga.c = r->y + (n * g->m + gi * mg) * r->n + j0;
    ga.ldc = (size_t)r->n;
    ga.bias = r->b ? r->b + gi * mg : NULL;
    ga.bias_rs = 1;
    ga.bias_cs = 0;
    return ga;
}

/* One slab (task = (image * group + group index) * count + slab) on the
 * thread that takes it, which needs no other thread: im2col writes the
 * slab into the thread's slice of the workspace and a one-thread GEMM
 * multiplies it there while it is still in the core's cache. */
static void conv_slab(void *ctx, size_t task, size_t thread) {
    const conv_run *r = ctx;
    const conv_slabs *s = &r->slabs;
    int64_t image_group = (int64_t)(task / s->count);
    int64_t img = image_group / r->g->group, gi = image_group % r->g->group;
    int64_t j0 = (int64_t)(task % s->count * s->width);
    int64_t cols = r->n - j0 < (int64_t)s->width ? r->n - j0 : (int64_t)s->width;
    char *slice = r->ws + thread * s->slice;
    float *col = (float *)(void *)slice;
    const float *x = conv_group_input(r, img, gi);
    for (int64_t row = 0; row < r->k; row++) {
        im2col_row(r->g, x, row, j0, j0 + cols, col + row * cols);
    }
    plxk_gemm_args ga = conv_gemm_args(r, img, gi, j0, cols, col, cols);
    /* run_conv_slabs checked the variant and the slice holds a one-thread
     * GEMM's workspace after the slab, so this is a bug if it happens; it
     * is reported after the run rather than lost. */
    if (!plxk_gemm(r->isa, NULL, &ga, slice + s->col, s->slice - s->col)) {
        __atomic_store_n(&((conv_run *)ctx)->failed, 1, __ATOMIC_RELAXED);
    }
}

/* The slab path (conv_slab_plan): every slab of every image and group is a
 * task of one run on the pool, so the threads meet once per conv. */
static bool run_conv_slabs(const plxk_kernel_args *args, conv_run *r) {
    if (!plxk_isa_supported(r->isa)) {
        return plxk_fail(args, "cpu_ref conv: the %s variant does not run on this CPU",
                            plxk_isa_name(r->isa));
    }
    size_t left;
    r->ws = ws_at(args, 0, &left);
    if (!r->ws || left < r->slabs.slice) {
        return plxk_fail(args, "cpu_ref conv: a workspace of %zu bytes is too small for "
                                  "a slab's %zu", args->workspace_size, r->slabs.slice);
    }
    plxk_pool *pool = pool_of(args->compute);
    if (left / r->slabs.slice < plxk_pool_threads(pool)) {
        pool = NULL; /* room for one thread only: run here */
    }
    double cost_ns = (double)r->slabs.tasks * (double)r->slabs.width * (double)r->k *
                     (double)(r->g->m / r->g->group) / 32.0; /* the GEMMs' */
    plxk_pool_run(pool, r->slabs.tasks, cost_ns, conv_slab, r);
    if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) {
        return plxk_fail(args, "cpu_ref conv: the GEMM of a slab refused its arguments");
    }
    return true;
}

typedef struct im2col_job {
    const conv_run *r;
    const float *x; /* the group's first input channel of one image */
} im2col_job;

/* Row `task` of the shared path's col, all its columns. */
static void im2col_whole_row(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const im2col_job *job = ctx;
    const conv_run *r = job->r;
    im2col_row(r->g, job->x, (int64_t)task, 0, r->n, r->col + (int64_t)task * r->n);
}

/* The shared path: a pointwise conv (X is col), or an output too small to
 * give every thread a slab. Per image and group, im2col writes the whole
 * col, its rows shared among the pool's threads, then the GEMM shares the
 * tiles of Y_g. */
static bool run_conv_shared(const plxk_kernel_args *args, conv_run *r) {
    const plx_window_geom *g = r->g;
    size_t col_bytes = conv_col_bytes(g), left;
    r->col = col_bytes ? ws_at(args, 0, &left) : NULL;
    void *ws = ws_at(args, col_bytes, &left);
    if (col_bytes && (!r->col || col_bytes > args->workspace_size)) {
        return plxk_fail(args, "cpu_ref conv: a workspace of %zu bytes is too small for "
                                  "im2col's %zu", args->workspace_size, col_bytes);
    }
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = conv_group_input(r, n, gi);
            if (r->col) {
                im2col_job job = {r, xg};
                plxk_pool_run(pool_of(args->compute), (size_t)r->k,
                                 (double)r->k * (double)r->n / 2.0, im2col_whole_row, &job);
            }
            plxk_gemm_args ga = conv_gemm_args(r, n, gi, 0, r->n, r->col ? r->col : xg, r->n);
            if (!run_gemm(args, &ga, ws, left, "conv")) {
                return false;
            }
        }
    }
    return true;
}

typedef struct depthwise_job {
    const plx_window_geom *g;
    const float *x, *w, *b;
    float *y;
    plxk_isa isa;
    plxk_gemm_args epilogue; /* only its act, lo and hi */
    char *scratch;              /* one slice per thread, or NULL */
    size_t slice;
} depthwise_job;

/* One output plane (image n, channel m) of a depthwise conv, by the
 * per-ISA kernel (depthwise.h). */
static void depthwise_plane(void *ctx, size_t task, size_t thread) {
    const depthwise_job *j = ctx;
    const plx_window_geom *g = j->g;
    int64_t mg = g->m / g->group, n = (int64_t)task / g->m, m = (int64_t)task % g->m;
    int64_t c = m / mg;
    plxk_depthwise_plane p = depthwise_geometry(g);
    p.x = j->x + (n * g->c + c) * g->in[0] * g->in[1];
    p.w = j->w + m * g->k[0] * g->k[1];
    p.bias = j->b ? j->b[m] : 0.0f;
    p.act = j->epilogue.act;
    p.lo = j->epilogue.lo;
    p.hi = j->epilogue.hi;
    p.y = j->y + (n * g->m + m) * g->out[0] * g->out[1];
    p.scratch = j->scratch ? (float *)(void *)(j->scratch + thread * j->slice) : NULL;
    plxk_depthwise(j->isa, &p); /* the variant was checked before the run */
}

/* Every plane of a depthwise conv, shared among the pool's threads, each
 * with its slice of the workspace (plxk_workspace_conv). */
static bool run_depthwise(const plxk_kernel_args *args, const plx_window_geom *g,
                          const float *x, const float *w, const float *b, float *y) {
    depthwise_job job = {g, x, w, b, y, isa_of(args->compute), {0}, NULL, depthwise_slice(g)};
    if (!plxk_isa_supported(job.isa)) {
        return plxk_fail(args, "cpu_ref conv: the %s variant does not run on this CPU",
                            plxk_isa_name(job.isa));
    }
    set_epilogue(args->activation, &job.epilogue);
    plxk_pool *pool = pool_of(args->compute);
    size_t threads = plxk_pool_threads(pool), left = 0;
    if (job.slice) {
        job.scratch = ws_at(args, 0, &left);
        if (!job.scratch || left < job.slice) {
            return plxk_fail(args, "cpu_ref conv: a workspace of %zu bytes is too small for "
                                      "the depthwise kernel's %zu",
                                args->workspace_size, job.slice);
        }
        if (left / job.slice < threads) {
            pool = NULL; /* room for one thread only: run here */
        }
    }
    double cost_ns = (double)(g->n * g->m) * (double)(g->out[0] * g->out[1]) *
                     (double)(g->k[0] * g->k[1]) / 8.0;
    plxk_pool_run(pool, (size_t)(g->n * g->m), cost_ns, depthwise_plane, &job);
    return true;
}

/* Per image and group, Y_g [M/group, OH*OW] = W_g [M/group, K] x col
 * [K, OH*OW], K = C/group * kh * kw, with the bias per output channel, in
 * slabs of columns when the output is large enough (conv_slab_plan), at
 * once otherwise; depthwise convs run a direct kernel, plane by plane, on
 * the pool. */
bool plxk_run_conv(const plxk_kernel_args *args) {
    char why[256];
    plx_window_geom g = {0};
    if (conv_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const float *x = args->inputs[0];
    const float *w = args->inputs[1];
    const float *b = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    if (conv_is_depthwise(&g)) {
        return run_depthwise(args, &g, x, w, b, y);
    }
    conv_run r = {.g = &g, .x = x, .w = w, .b = b, .y = y,
                  .k = g.c / g.group * g.k[0] * g.k[1], .n = g.out[0] * g.out[1],
                  .isa = isa_of(args->compute)};
    set_epilogue(args->activation, &r.epilogue);
    if (conv_slab_plan(&g, r.isa, plxk_pool_threads(pool_of(args->compute)), &r.slabs)) {
        return run_conv_slabs(args, &r);
    }
    return run_conv_shared(args, &r);
}

/* ------------------------------------------------------------------ */
/* conv_transpose                                                      */
/* ------------------------------------------------------------------ */

/* ONNX ConvTranspose: output sizes and padding as plx_conv_transpose_dim
 * (plexus/window.h) computes them. */
static const char *conv_transpose_prepare(const plx_layer_view *l, plx_window_geom *g,
                                          char *buf, size_t size) {
    const char *why = check_layer(l, "conv_transpose", 2, 3, sizeof(plx_conv_transpose_desc), buf,
                                  size);
    if (!why) {
        why = require_float32(l, "conv_transpose", buf, size);
    }
    if (why) {
        return why;
    }
    char msg[224];
    return window_refusal(plx_window_geom_conv_transpose(l, ATTR_LIMIT, g, msg, sizeof msg), buf,
                          size);
}

const char *plxk_check_conv_transpose(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g = {0};
    return conv_transpose_prepare(layer, &g, buf, size);
}

/* Gather form: output position o receives input i through kernel tap t
 * when i*s + t*d - pb == o. */
bool plxk_run_conv_transpose(const plxk_kernel_args *args) {
    char why[256];
    plx_window_geom g = {0};
    if (conv_transpose_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const float *x = args->inputs[0];
    const float *w = args->inputs[1];
    const float *b = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    int64_t cg = g.c / g.group, mg = g.m / g.group;
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t m = 0; m < g.m; m++) {
            int64_t c0 = (m / mg) * cg, mm = m % mg;
            for (int64_t oh = 0; oh < g.out[0]; oh++) {
                for (int64_t ow = 0; ow < g.out[1]; ow++) {
                    float acc = 0.0f;
                    for (int64_t c = 0; c < cg; c++) {
                        for (int64_t kh = 0; kh < g.k[0]; kh++) {
                            int64_t th = oh + g.pb[0] - kh * g.d[0];
                            if (th < 0 || th % g.s[0] || th / g.s[0] >= g.in[0]) {
                                continue;
                            }
                            for (int64_t kw = 0; kw < g.k[1]; kw++) {
                                int64_t tw = ow + g.pb[1] - kw * g.d[1];
                                if (tw < 0 || tw % g.s[1] || tw / g.s[1] >= g.in[1]) {
                                    continue;
                                }
                                acc += x[geom_x_index(&g, n, c0 + c, th / g.s[0], tw / g.s[1])] *
                                       w[(((c0 + c) * mg + mm) * g.k[0] + kh) * g.k[1] + kw];
                            }
                        }
                    }
                    y[geom_y_index(&g, n, m, oh, ow)] = b ? acc + b[m] : acc;
                }
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* fully_connected, gemm                                               */
/* ------------------------------------------------------------------ */

typedef struct fc_geom {
    int64_t rows, k, m;
    bool transposed;
} fc_geom;

static const char *fc_prepare(const plx_layer_view *l, fc_geom *g, char *buf, size_t size) {
    const char *why = check_layer(l, "fully_connected", 2, 3, sizeof(plx_fully_connected_desc),
                                  buf, size);
    if (!why) {
        why = require_float32(l, "fully_connected", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_fully_connected_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected takes X of rank >= 2 and W of rank 2, not %u and %u",
                   x->rank, w->rank);
    }
    g->transposed = desc->weights_transposed;
    g->k = x->dims[x->rank - 1];
    g->rows = dim_product(x, 0, x->rank - 1);
    g->m = g->transposed ? w->dims[0] : w->dims[1];
    if ((g->transposed ? w->dims[1] : w->dims[0]) != g->k) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected: W [%lld,%lld]%s does not match X's K %lld",
                   (long long)w->dims[0], (long long)w->dims[1],
                   g->transposed ? " (transposed)" : "", (long long)g->k);
    }
    if (l->input_count == 3 && numel(&l->inputs[2]) != g->m) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected: B has %lld elements, not %lld",
                   (long long)numel(&l->inputs[2]), (long long)g->m);
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[x->rank - 1] = g->m;
    return require_output_shape(l, "fully_connected", x->rank, dims, buf, size);
}

const char *plxk_check_fully_connected(const plx_layer_view *layer, char *buf, size_t size) {
    fc_geom g;
    return fc_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_fully_connected(const plx_layer_view *layer,
                                         const plxk_compute *compute) {
    fc_geom g;
    char buf[8];
    return fc_prepare(layer, &g, buf, sizeof buf) ? 0 : gemm_ws(compute, g.rows, g.m, g.k);
}

/* Y [rows, M] = X [rows, K] x W' [K, M] + B, W' = W or W^T. */
bool plxk_run_fully_connected(const plxk_kernel_args *args) {
    char why[256];
    fc_geom g;
    if (fc_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plxk_gemm_args ga = {0};
    ga.m = (size_t)g.rows;
    ga.n = (size_t)g.m;
    ga.k = (size_t)g.k;
    ga.alpha = 1.0f;
    ga.a = args->inputs[0];
    ga.a_rs = (ptrdiff_t)g.k;
    ga.a_cs = 1;
    ga.b = args->inputs[1];
    ga.b_rs = g.transposed ? 1 : (ptrdiff_t)g.m;
    ga.b_cs = g.transposed ? (ptrdiff_t)g.k : 1;
    ga.c = args->outputs[0];
    ga.ldc = (size_t)g.m;
    ga.bias = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    ga.bias_rs = 0;
    ga.bias_cs = 1;
    size_t left;
    void *ws = ws_at(args, 0, &left);
    return run_gemm(args, &ga, ws, left, "fully_connected");
}

typedef struct gemm_geom {
    int64_t m, n, k;
    int64_t a_sm, a_sk, b_sk, b_sn; /* element strides of A' and B' */
    int64_t c_sm, c_sn;             /* C's broadcast strides (0 along broadcast dims) */
} gemm_geom;

static const char *gemm_prepare(const plx_layer_view *l, gemm_geom *g, char *buf, size_t size) {
    const char *why = check_layer(l, "gemm", 2, 3, sizeof(plx_gemm_desc), buf, size);
    if (!why) {
        why = require_float32(l, "gemm", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_gemm_desc *desc = l->desc;
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1];
    if (a->rank != 2 || b->rank != 2) {
        return plxk_refuse(buf, size, "cpu_ref gemm takes A and B of rank 2, not %u and %u", a->rank,
                   b->rank);
    }
    g->m = desc->trans_a ? a->dims[1] : a->dims[0];
    g->k = desc->trans_a ? a->dims[0] : a->dims[1];
    g->n = desc->trans_b ? b->dims[0] : b->dims[1];
    int64_t kb = desc->trans_b ? b->dims[1] : b->dims[0];
    if (kb != g->k) {
        return plxk_refuse(buf, size, "cpu_ref gemm: A' has K %lld, B' has K %lld", (long long)g->k,
                   (long long)kb);
    }
    g->a_sm = desc->trans_a ? 1 : a->dims[1];
    g->a_sk = desc->trans_a ? a->dims[1] : 1;
    g->b_sk = desc->trans_b ? 1 : b->dims[1];
    g->b_sn = desc->trans_b ? b->dims[1] : 1;
    g->c_sm = g->c_sn = 0;
    if (l->input_count == 3) {
        const plx_tensor_info *c = &l->inputs[2];
        int64_t cm = 1, cn = 1;
        if (c->rank == 2) {
            cm = c->dims[0];
            cn = c->dims[1];
        } else if (c->rank == 1) {
            cn = c->dims[0];
        } else if (c->rank != 0) {
            return plxk_refuse(buf, size, "cpu_ref gemm: C has rank %u (0 to 2)", c->rank);
        }
        if ((cm != 1 && cm != g->m) || (cn != 1 && cn != g->n)) {
            return plxk_refuse(buf, size, "cpu_ref gemm: C [%lld,%lld] does not broadcast to [%lld,%lld]",
                       (long long)cm, (long long)cn, (long long)g->m, (long long)g->n);
        }
        g->c_sn = cn == 1 ? 0 : 1;
        g->c_sm = cm == 1 ? 0 : cn;
    }
    int64_t dims[2] = {g->m, g->n};
    return require_output_shape(l, "gemm", 2, dims, buf, size);
}

const char *plxk_check_gemm(const plx_layer_view *layer, char *buf, size_t size) {
    gemm_geom g;
    return gemm_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_gemm(const plx_layer_view *layer, const plxk_compute *compute) {
    gemm_geom g;
    char buf[8];
    return gemm_prepare(layer, &g, buf, sizeof buf) ? 0 : gemm_ws(compute, g.m, g.n, g.k);
}

/* Y = alpha A' B' + beta C: C is the GEMM's (unscaled) strided bias when
 * beta is 1; otherwise Y starts as beta C, which the GEMM accumulates on. */
bool plxk_run_gemm(const plxk_kernel_args *args) {
    char why[256];
    gemm_geom g;
    if (gemm_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_gemm_desc *desc = args->layer->desc;
    const float *c = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    plxk_gemm_args ga = {0};
    ga.m = (size_t)g.m;
    ga.n = (size_t)g.n;
    ga.k = (size_t)g.k;
    ga.alpha = desc->alpha;
    ga.a = args->inputs[0];
    ga.a_rs = (ptrdiff_t)g.a_sm;
    ga.a_cs = (ptrdiff_t)g.a_sk;
    ga.b = args->inputs[1];
    ga.b_rs = (ptrdiff_t)g.b_sk;
    ga.b_cs = (ptrdiff_t)g.b_sn;
    ga.c = y;
    ga.ldc = (size_t)g.n;
    if (c && desc->beta == 1.0f) {
        ga.bias = c;
        ga.bias_rs = (ptrdiff_t)g.c_sm;
        ga.bias_cs = (ptrdiff_t)g.c_sn;
    } else if (c && desc->beta != 0.0f) {
        for (int64_t i = 0; i < g.m; i++) {
            for (int64_t j = 0; j < g.n; j++) {
                y[i * g.n + j] = desc->beta * c[i * g.c_sm + j * g.c_sn];
            }
        }
        ga.beta = 1.0f;
    }
    size_t left;
    void *ws = ws_at(args, 0, &left);
    return run_gemm(args, &ga, ws, left, "gemm");
}

/* ------------------------------------------------------------------ */
/* matmul                                                              */
/* ------------------------------------------------------------------ */

typedef struct matmul_geom {
    int64_t m, n, k;
    uint32_t batch_rank;
    int64_t batch[PLX_MAX_RANK];   /* broadcast batch dims */
    int64_t a_bs[PLX_MAX_RANK];    /* A's element stride per batch dim (0: broadcast) */
    int64_t b_bs[PLX_MAX_RANK];
} matmul_geom;

/* numpy matmul: a 1-D A is [1,K] and a 1-D B is [K,1], the added dim being
 * removed from the result; the batch dims (all but the last two)
 * broadcast. */
static const char *matmul_prepare(const plx_layer_view *l, matmul_geom *g, char *buf,
                                  size_t size) {
    const char *why = check_layer(l, "matmul", 2, 2, 0, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->dtype != PLX_DTYPE_FLOAT32 && !is_int_dtype(a->dtype)) {
        return plxk_refuse(buf, size, "cpu_ref runs matmul in float32, int32 and int64 only, not %s",
                   plx_dtype_name(a->dtype));
    }
    if (b->dtype != a->dtype || y->dtype != a->dtype) {
        return plxk_refuse(buf, size, "cpu_ref matmul: A is %s, B is %s, Y is %s (all must match)",
                   plx_dtype_name(a->dtype), plx_dtype_name(b->dtype), plx_dtype_name(y->dtype));
    }
    if (a->rank < 1 || b->rank < 1) {
        return plxk_refuse(buf, size, "cpu_ref matmul: operands must have rank >= 1, not %u and %u",
                   a->rank, b->rank);
    }
    g->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    g->k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    g->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != g->k) {
        return plxk_refuse(buf, size, "cpu_ref matmul: A has K %lld, B has K %lld", (long long)g->k,
                   (long long)kb);
    }
    uint32_t ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    g->batch_rank = ra > rb ? ra : rb;
    int64_t as = g->m * g->k, bs = g->k * g->n; /* strides, innermost batch dim first */
    for (uint32_t i = g->batch_rank; i-- > 0;) {
        /* batch dim i of the result is dim i-(batch_rank-ra) of A's batch */
        int64_t da = 1, db = 1;
        int64_t ia = (int64_t)i - (int64_t)(g->batch_rank - ra);
        int64_t ib = (int64_t)i - (int64_t)(g->batch_rank - rb);
        if (ia >= 0) {
            da = a->dims[ia];
        }
        if (ib >= 0) {
            db = b->dims[ib];
        }
        if (da != db && da != 1 && db != 1) {
            return plxk_refuse(buf, size, "cpu_ref matmul: batch dims %lld and %lld do not broadcast",
                       (long long)da, (long long)db);
        }
        g->batch[i] = da == 1 ? db : da;
        g->a_bs[i] = da == 1 ? 0 : as;
        g->b_bs[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank = g->batch_rank;
    memcpy(dims, g->batch, sizeof(int64_t) * rank);
    if (a->rank > 1) {
        dims[rank++] = g->m;
    }
    if (b->rank > 1) {
        dims[rank++] = g->n;
    }
    return require_output_shape(l, "matmul", rank, dims, buf, size);
}

const char *plxk_check_matmul(const plx_layer_view *layer, char *buf, size_t size) {
    matmul_geom g;
    return matmul_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_matmul(const plx_layer_view *layer, const plxk_compute *compute) {
    matmul_geom g;
    char buf[8];
    if (matmul_prepare(layer, &g, buf, sizeof buf) ||
        layer->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return 0;
    }
    return gemm_ws(compute, g.m, g.n, g.k);
}

/* Float32 runs one GEMM per (broadcast) batch; the integer types keep the
 * plain loops, with wrap-around arithmetic. */
bool plxk_run_matmul(const plxk_kernel_args *args) {
    char why[256];
    matmul_geom g;
    if (matmul_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *a = args->inputs[0], *b = args->inputs[1];
    void *y = args->outputs[0];
    int64_t batches = 1;
    for (uint32_t i = 0; i < g.batch_rank; i++) {
        batches *= g.batch[i];
    }
    int64_t idx[PLX_MAX_RANK] = {0};
    int64_t a0 = 0, b0 = 0; /* offsets of the current batch's matrices */
    size_t left;
    void *ws = ws_at(args, 0, &left);
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t y0 = bi * g.m * g.n;
        if (dt == PLX_DTYPE_FLOAT32) {
            plxk_gemm_args ga = {0};
            ga.m = (size_t)g.m;
            ga.n = (size_t)g.n;
            ga.k = (size_t)g.k;
            ga.alpha = 1.0f;
            ga.a = (const float *)a + a0;
            ga.a_rs = (ptrdiff_t)g.k;
            ga.a_cs = 1;
            ga.b = (const float *)b + b0;
            ga.b_rs = (ptrdiff_t)g.n;
            ga.b_cs = 1;
            ga.c = (float *)y + y0;
            ga.ldc = (size_t)g.n;
            if (!run_gemm(args, &ga, ws, left, "matmul")) {
                return false;
            }
        }
        for (int64_t i = 0; dt != PLX_DTYPE_FLOAT32 && i < g.m; i++) {
            for (int64_t j = 0; j < g.n; j++) {
                int64_t ai = a0 + i * g.k, bj = b0 + j;
                int64_t acc = 0;
                for (int64_t k = 0; k < g.k; k++) {
                    acc = wrap_add(acc, wrap_mul(load_int(a, dt, ai + k),
                                                 load_int(b, dt, bj + k * g.n)));
                }
                store_int(y, dt, y0 + i * g.n + j, acc);
            }
        }
        /* next batch index (odometer, last dim fastest) */
        for (uint32_t d = g.batch_rank; d-- > 0;) {
            a0 += g.a_bs[d];
            b0 += g.b_bs[d];
            if (++idx[d] < g.batch[d]) {
                break;
            }
            a0 -= g.a_bs[d] * g.batch[d];
            b0 -= g.b_bs[d] * g.batch[d];
            idx[d] = 0;
        }
    }
    return true;
}

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
        return plxk_refuse(buf, size, "cpu_ref %s: pool kind %d is not implemented", op, (int)kind);
    }
    bool ok = dt == PLX_DTYPE_FLOAT32 ||
              (kind == PLX_POOL_MAX && (dt == PLX_DTYPE_INT8 || dt == PLX_DTYPE_UINT8));
    if (!ok) {
        return plxk_refuse(buf, size, "cpu_ref runs %s %s in %s only, not %s", kind == PLX_POOL_MAX ? "max" : "average",
                   op, kind == PLX_POOL_MAX ? "float32, int8 and uint8" : "float32",
                   plx_dtype_name(dt));
    }
    if (l->outputs[0].dtype != dt) {
        return plxk_refuse(buf, size, "cpu_ref %s: X is %s but Y is %s", op, plx_dtype_name(dt),
                   plx_dtype_name(l->outputs[0].dtype));
    }
    return NULL;
}

static const char *pool_prepare(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                size_t size) {
    const char *why = check_layer(l, "pool", 1, 1, sizeof(plx_pool_desc), buf, size);
    if (why) {
        return why;
    }
    const plx_pool_desc *desc = l->desc;
    if ((why = pool_dtype(l, "pool", desc->kind, buf, size))) {
        return why;
    }
    char msg[224];
    return window_refusal(plx_window_geom_pool(l, ATTR_LIMIT, g, msg, sizeof msg), buf, size);
}

const char *plxk_check_pool(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g = {0};
    return pool_prepare(layer, &g, buf, size);
}

typedef struct max_pool_job {
    const plx_window_geom *g;
    const float *x;
    float *y;
} max_pool_job;

/* One output plane (image n, channel c = task) of a float32 max pool, the
 * common case (ResNet's stem), on the pool's threads: each tap of the
 * window takes the maximum into a whole output row at once, over the
 * outputs whose input lies inside the row (plxk_window_columns). Taps
 * come in the same order and with the same NaN rule as the general loop
 * below, so the results are the same. */
static void max_pool_plane(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const max_pool_job *job = ctx;
    const plx_window_geom *g = job->g;
    const float *x = job->x + (int64_t)task * g->in[0] * g->in[1];
    float *y = job->y + (int64_t)task * g->out[0] * g->out[1];
    for (int64_t oh = 0; oh < g->out[0]; oh++) {
        float *restrict yr = y + oh * g->out[1]; /* restrict: lets the taps vectorise */
        for (int64_t ow = 0; ow < g->out[1]; ow++) {
            yr[ow] = -INFINITY;
        }
        for (int64_t kh = 0; kh < g->k[0]; kh++) {
            int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
            if (ih < 0 || ih >= g->in[0]) {
                continue;
            }
            const float *restrict xr = x + ih * g->in[1];
            for (int64_t kw = 0; kw < g->k[1]; kw++) {
                int64_t off = kw * g->d[1] - g->pb[1], lo, hi;
                plxk_window_columns(off, g->s[1], g->in[1], g->out[1], &lo, &hi);
                for (int64_t ow = lo; ow < hi; ow++) {
                    float v = xr[ow * g->s[1] + off];
                    yr[ow] = v > yr[ow] || isnan(v) ? v : yr[ow];
                }
            }
        }
    }
}

/* Average pools divide by the taps inside the input (count_include_pad
 * false) or inside input plus padding (true); taps past the padding, which
 * ceil_mode can create, never count, as in ONNX's reference and PyTorch.
 * A window with nothing to average gives NaN; a max over nothing gives the
 * lowest value of the dtype. */
bool plxk_run_pool(const plxk_kernel_args *args) {
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
    if (is_max && dt == PLX_DTYPE_FLOAT32) {
        max_pool_job job = {&g, x, y};
        double cost_ns = (double)(g.n * g.c) * (double)(g.out[0] * g.out[1]) *
                         (double)(g.k[0] * g.k[1]) / 4.0;
        plxk_pool_run(pool_of(args->compute), (size_t)(g.n * g.c), cost_ns, max_pool_plane,
                         &job);
        return true;
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t c = 0; c < g.c; c++) {
            for (int64_t oh = 0; oh < g.out[0]; oh++) {
                for (int64_t ow = 0; ow < g.out[1]; ow++) {
                    double best = lowest_value(dt);
                    float sum = 0.0f;
                    int64_t count = 0;
                    for (int64_t kh = 0; kh < g.k[0]; kh++) {
                        int64_t ih = oh * g.s[0] - g.pb[0] + kh * g.d[0];
                        bool h_in = ih >= 0 && ih < g.in[0];
                        bool h_pad = ih >= -g.pb[0] && ih < g.in[0] + g.pe[0];
                        for (int64_t kw = 0; kw < g.k[1]; kw++) {
                            int64_t iw = ow * g.s[1] - g.pb[1] + kw * g.d[1];
                            bool w_in = iw >= 0 && iw < g.in[1];
                            bool w_pad = iw >= -g.pb[1] && iw < g.in[1] + g.pe[1];
                            if (h_in && w_in) {
                                double v = load_real(x, dt, geom_x_index(&g, n, c, ih, iw));
                                if (is_max) {
                                    best = v > best || isnan(v) ? v : best;
                                } else {
                                    sum += (float)v;
                                }
                                count++;
                            } else if (desc->count_include_pad && h_pad && w_pad) {
                                count++;
                            }
                        }
                    }
                    int64_t yi = geom_y_index(&g, n, c, oh, ow);
                    if (is_max) {
                        store_real(y, dt, yi, best);
                    } else {
                        ((float *)y)[yi] = count ? sum / (float)count : NAN;
                    }
                }
            }
        }
    }
    return true;
}

static const char *global_pool_prepare(const plx_layer_view *l, int64_t *outer, int64_t *inner,
                                       char *buf, size_t size) {
    const char *why = check_layer(l, "global_pool", 1, 1, sizeof(plx_global_pool_desc), buf, size);
    if (why) {
        return why;
    }
    const plx_global_pool_desc *desc = l->desc;
    if ((why = pool_dtype(l, "global_pool", desc->kind, buf, size))) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return plxk_refuse(buf, size, "cpu_ref global_pool takes X of rank >= 3, not %u", x->rank);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
    }
    *outer = x->dims[0] * x->dims[1];
    *inner = dim_product(x, 2, x->rank);
    return require_output_shape(l, "global_pool", x->rank, dims, buf, size);
}

const char *plxk_check_global_pool(const plx_layer_view *layer, char *buf, size_t size) {
    int64_t outer = 0, inner = 0;
    return global_pool_prepare(layer, &outer, &inner, buf, size);
}

bool plxk_run_global_pool(const plxk_kernel_args *args) {
    char why[256];
    int64_t outer = 0, inner = 0;
    if (global_pool_prepare(args->layer, &outer, &inner, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_global_pool_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    for (int64_t o = 0; o < outer; o++) {
        if (desc->kind == PLX_POOL_MAX) {
            double best = lowest_value(dt);
            for (int64_t i = 0; i < inner; i++) {
                double v = load_real(args->inputs[0], dt, o * inner + i);
                best = v > best || isnan(v) ? v : best;
            }
            store_real(args->outputs[0], dt, o, best);
        } else {
            /* double: a whole feature map is summed at once */
            double sum = 0.0;
            for (int64_t i = 0; i < inner; i++) {
                sum += ((const float *)args->inputs[0])[o * inner + i];
            }
            ((float *)args->outputs[0])[o] = inner ? (float)(sum / (double)inner) : NAN;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* batch_norm, layer_norm                                              */
/* ------------------------------------------------------------------ */

static const char *batch_norm_prepare(const plx_layer_view *l, char *buf, size_t size) {
    const char *why = check_layer(l, "batch_norm", 5, 5, sizeof(plx_batch_norm_desc), buf, size);
    if (!why) {
        why = require_float32(l, "batch_norm", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2) {
        return plxk_refuse(buf, size, "cpu_ref batch_norm takes X of rank >= 2, not %u", x->rank);
    }
    static const char *const names[5] = {"X", "scale", "bias", "mean", "var"};
    for (uint32_t i = 1; i < 5; i++) {
        if (numel(&l->inputs[i]) != x->dims[1]) {
            return plxk_refuse(buf, size, "cpu_ref batch_norm: %s has %lld elements, X has %lld channels",
                       names[i], (long long)numel(&l->inputs[i]), (long long)x->dims[1]);
        }
    }
    return require_output_shape(l, "batch_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_batch_norm(const plx_layer_view *layer, char *buf, size_t size) {
    return batch_norm_prepare(layer, buf, size);
}

bool plxk_run_batch_norm(const plxk_kernel_args *args) {
    char why[256];
    if (batch_norm_prepare(args->layer, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_batch_norm_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    const float *x = args->inputs[0], *scale = args->inputs[1], *bias = args->inputs[2],
                *mean = args->inputs[3], *var = args->inputs[4];
    float *y = args->outputs[0];
    int64_t n = xi->dims[0], c = xi->dims[1], inner = dim_product(xi, 2, xi->rank);
    for (int64_t b = 0; b < n; b++) {
        for (int64_t ch = 0; ch < c; ch++) {
            float denom = sqrtf(var[ch] + desc->epsilon);
            int64_t base = (b * c + ch) * inner;
            for (int64_t i = 0; i < inner; i++) {
                y[base + i] = (x[base + i] - mean[ch]) / denom * scale[ch] + bias[ch];
            }
        }
    }
    return true;
}

typedef struct layer_norm_geom {
    int64_t outer, inner;
    int64_t scale_st[PLX_MAX_RANK]; /* broadcast strides of scale over X's dims */
    int64_t bias_st[PLX_MAX_RANK];
    uint32_t rank, axis;
} layer_norm_geom;

/* Strides of `t` broadcast (numpy, right-aligned) to X's shape; refuses
 * shapes that would broadcast X itself to something larger. */
static const char *broadcast_strides(const plx_tensor_info *t, const plx_tensor_info *x,
                                     const char *op, const char *name, int64_t *st, char *buf,
                                     size_t size) {
    if (t->rank > x->rank) {
        return plxk_refuse(buf, size, "cpu_ref %s: %s has rank %u, X has rank %u", op, name, t->rank,
                   x->rank);
    }
    int64_t s = 1;
    for (uint32_t i = x->rank; i-- > 0;) {
        int64_t ti = (int64_t)i - (int64_t)(x->rank - t->rank);
        int64_t d = ti >= 0 ? t->dims[ti] : 1;
        if (d != 1 && d != x->dims[i]) {
            return plxk_refuse(buf, size, "cpu_ref %s: %s does not broadcast to X (dim %u is %lld, not %lld)",
                       op, name, i, (long long)d, (long long)x->dims[i]);
        }
        st[i] = d == 1 ? 0 : s;
        s *= d;
    }
    return NULL;
}

static const char *layer_norm_prepare(const plx_layer_view *l, layer_norm_geom *g, char *buf,
                                      size_t size) {
    const char *why = check_layer(l, "layer_norm", 2, 3, sizeof(plx_layer_norm_desc), buf, size);
    if (!why) {
        why = require_float32(l, "layer_norm", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_layer_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t axis = desc->axis < 0 ? (int64_t)desc->axis + x->rank : desc->axis;
    if (x->rank == 0 || axis < 0 || axis >= (int64_t)x->rank) {
        return plxk_refuse(buf, size, "cpu_ref layer_norm: axis %d is out of range for rank %u",
                   desc->axis, x->rank);
    }
    g->rank = x->rank;
    g->axis = (uint32_t)axis;
    g->outer = dim_product(x, 0, g->axis);
    g->inner = dim_product(x, g->axis, x->rank);
    if ((why = broadcast_strides(&l->inputs[1], x, "layer_norm", "scale", g->scale_st, buf, size))) {
        return why;
    }
    if (l->input_count == 3 &&
        (why = broadcast_strides(&l->inputs[2], x, "layer_norm", "bias", g->bias_st, buf, size))) {
        return why;
    }
    return require_output_shape(l, "layer_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_layer_norm(const plx_layer_view *layer, char *buf, size_t size) {
    layer_norm_geom g;
    return layer_norm_prepare(layer, &g, buf, size);
}

/* Mean and variance are accumulated in double (two passes), which keeps
 * them accurate for long rows; the result is rounded to float once. */
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
    for (int64_t o = 0; o < g.outer; o++) {
        const float *row = x + o * g.inner;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < g.inner; i++) {
            mean += row[i];
        }
        mean /= (double)g.inner;
        for (int64_t i = 0; i < g.inner; i++) {
            var += (row[i] - mean) * (row[i] - mean);
        }
        var /= (double)g.inner;
        double inv = 1.0 / sqrt(var + (double)desc->epsilon);
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
    const char *why = check_layer(l, "instance_norm", 3, 3, sizeof(plx_instance_norm_desc), buf,
                                  size);
    if (!why) {
        why = require_float32(l, "instance_norm", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return plxk_refuse(buf, size, "cpu_ref instance_norm takes X of rank >= 3, not %u",
                              x->rank);
    }
    static const char *const names[3] = {"X", "scale", "bias"};
    for (uint32_t i = 1; i < 3; i++) {
        const plx_tensor_info *p = &l->inputs[i];
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return plxk_refuse(buf, size,
                                  "cpu_ref instance_norm: %s must be 1-D with %lld entries (X's channels)",
                                  names[i], (long long)x->dims[1]);
        }
    }
    return require_output_shape(l, "instance_norm", x->rank, x->dims, buf, size);
}

const char *plxk_check_instance_norm(const plx_layer_view *layer, char *buf, size_t size) {
    return instance_norm_prepare(layer, buf, size);
}

/* Each (n, c) plane by its own mean and (biased) variance, accumulated in
 * double over two passes like layer_norm. */
bool plxk_run_instance_norm(const plxk_kernel_args *args) {
    char why[256];
    if (instance_norm_prepare(args->layer, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_instance_norm_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    const float *x = args->inputs[0], *scale = args->inputs[1], *bias = args->inputs[2];
    float *y = args->outputs[0];
    int64_t n = xi->dims[0], c = xi->dims[1], inner = dim_product(xi, 2, xi->rank);
    for (int64_t b = 0; b < n; b++) {
        for (int64_t ch = 0; ch < c && inner > 0; ch++) {
            const float *plane = x + (b * c + ch) * inner;
            double mean = 0.0, var = 0.0;
            for (int64_t i = 0; i < inner; i++) {
                mean += plane[i];
            }
            mean /= (double)inner;
            for (int64_t i = 0; i < inner; i++) {
                var += (plane[i] - mean) * (plane[i] - mean);
            }
            var /= (double)inner;
            double k = (double)scale[ch] / sqrt(var + (double)desc->epsilon);
            for (int64_t i = 0; i < inner; i++) {
                y[(b * c + ch) * inner + i] = (float)((plane[i] - mean) * k + bias[ch]);
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
    const char *why = check_layer(l, "softmax", 1, 1, sizeof(plx_softmax_desc), buf, size);
    if (!why) {
        why = require_float32(l, "softmax", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_softmax_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t axis = desc->axis < 0 ? (int64_t)desc->axis + x->rank : desc->axis;
    if (x->rank == 0 || axis < 0 || axis >= (int64_t)x->rank) {
        return plxk_refuse(buf, size, "cpu_ref softmax: axis %d is out of range for rank %u", desc->axis,
                   x->rank);
    }
    *outer = dim_product(x, 0, (uint32_t)axis);
    *len = x->dims[axis];
    *inner = dim_product(x, (uint32_t)axis + 1, x->rank);
    return require_output_shape(l, "softmax", x->rank, x->dims, buf, size);
}

const char *plxk_check_softmax(const plx_layer_view *layer, char *buf, size_t size) {
    int64_t o, n, i;
    return softmax_prepare(layer, &o, &n, &i, buf, size);
}

/* Subtracts the max before exponentiating; the sum of exponentials is kept
 * in double (it is the one long accumulation here). */
bool plxk_run_softmax(const plxk_kernel_args *args) {
    char why[256];
    int64_t outer = 0, len = 0, inner = 0;
    if (softmax_prepare(args->layer, &outer, &len, &inner, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    bool log_form = ((const plx_softmax_desc *)args->layer->desc)->log;
    const float *x = args->inputs[0];
    float *y = args->outputs[0];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            float mx = -INFINITY;
            for (int64_t i = 0; i < len; i++) {
                float v = x[base + i * inner];
                mx = v > mx || isnan(v) ? v : mx;
            }
            double sum = 0.0;
            for (int64_t i = 0; i < len; i++) {
                sum += exp((double)(x[base + i * inner] - mx));
            }
            float log_sum = (float)log(sum);
            for (int64_t i = 0; i < len; i++) {
                float shifted = x[base + i * inner] - mx;
                y[base + i * inner] =
                    log_form ? shifted - log_sum : (float)(exp((double)shifted) / sum);
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* reduce                                                              */
/* ------------------------------------------------------------------ */

typedef struct reduce_geom {
    bool identity;
    uint32_t kept_rank, red_rank;
    int64_t kept_dims[PLX_MAX_RANK], kept_st[PLX_MAX_RANK]; /* X strides of kept dims */
    int64_t red_dims[PLX_MAX_RANK], red_st[PLX_MAX_RANK];
    int64_t count; /* elements reduced into each output */
} reduce_geom;

static const char *reduce_prepare(const plx_layer_view *l, reduce_geom *g, char *buf,
                                  size_t size) {
    const char *why = check_layer(l, "reduce", 1, 1, sizeof(plx_reduce_desc), buf, size);
    if (why) {
        return why;
    }
    const plx_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32 && !is_int_dtype(x->dtype)) {
        return plxk_refuse(buf, size, "cpu_ref runs reduce in float32, int32 and int64 only, not %s",
                   plx_dtype_name(x->dtype));
    }
    if (l->outputs[0].dtype != x->dtype) {
        return plxk_refuse(buf, size, "cpu_ref reduce: X is %s but Y is %s", plx_dtype_name(x->dtype),
                   plx_dtype_name(l->outputs[0].dtype));
    }
    if ((unsigned)desc->func > PLX_REDUCE_LOG_SUM_EXP) {
        return plxk_refuse(buf, size, "cpu_ref reduce: function %d is not implemented", (int)desc->func);
    }
    if (x->dtype != PLX_DTYPE_FLOAT32 &&
        (desc->func == PLX_REDUCE_L2 || desc->func == PLX_REDUCE_LOG_SUM ||
         desc->func == PLX_REDUCE_LOG_SUM_EXP)) {
        return plxk_refuse(buf, size, "cpu_ref runs reduce l2, log_sum and log_sum_exp in float32 only, not %s",
                   plx_dtype_name(x->dtype));
    }
    if (desc->axis_count > x->rank || desc->axis_count > PLX_MAX_RANK) {
        return plxk_refuse(buf, size, "cpu_ref reduce: %u axes for rank %u", desc->axis_count, x->rank);
    }
    bool reduced[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < desc->axis_count; i++) {
        int64_t a = desc->axes[i] < 0 ? (int64_t)desc->axes[i] + x->rank : desc->axes[i];
        if (a < 0 || a >= (int64_t)x->rank || reduced[a]) {
            return plxk_refuse(buf, size, "cpu_ref reduce: axis %d is out of range or repeated (rank %u)",
                       desc->axes[i], x->rank);
        }
        reduced[a] = true;
    }
    g->identity = desc->axis_count == 0 && desc->noop_with_empty_axes;
    if (g->identity) {
        return require_output_shape(l, "reduce", x->rank, x->dims, buf, size);
    }
    int64_t st[PLX_MAX_RANK], out_dims[PLX_MAX_RANK];
    uint32_t out_rank = 0;
    plx_tensor_info_strides(x, st);
    g->kept_rank = g->red_rank = 0;
    g->count = 1;
    for (uint32_t i = 0; i < x->rank; i++) {
        bool r = desc->axis_count == 0 || reduced[i];
        if (r) {
            g->red_dims[g->red_rank] = x->dims[i];
            g->red_st[g->red_rank++] = st[i];
            g->count *= x->dims[i];
            if (desc->keepdims) {
                out_dims[out_rank++] = 1;
            }
        } else {
            g->kept_dims[g->kept_rank] = x->dims[i];
            g->kept_st[g->kept_rank++] = st[i];
            out_dims[out_rank++] = x->dims[i];
        }
    }
    return require_output_shape(l, "reduce", out_rank, out_dims, buf, size);
}

const char *plxk_check_reduce(const plx_layer_view *layer, char *buf, size_t size) {
    reduce_geom g;
    return reduce_prepare(layer, &g, buf, size);
}

/* Steps the odometer over the reduced dims: `off` moves to the next
 * reduced element's offset (back to the first after the last). */
static void reduce_step(const reduce_geom *g, int64_t *ridx, int64_t *off) {
    for (uint32_t d = g->red_rank; d-- > 0;) {
        *off += g->red_st[d];
        if (++ridx[d] < g->red_dims[d]) {
            return;
        }
        *off -= g->red_st[d] * g->red_dims[d];
        ridx[d] = 0;
    }
}

/* The float reductions added in ABI 1.1 over the elements at base:
 * accumulated in double; log_sum_exp subtracts the maximum first (so no
 * exp overflows) and is the maximum itself when that is not finite (NaN,
 * +inf, or -inf for an empty set or all -inf). Over an empty set: prod 1,
 * l1, l2 and sum_square 0, log_sum -inf. */
static float reduce_float_more(const reduce_geom *g, plx_reduce_func func, const float *x,
                               int64_t base) {
    int64_t ridx[PLX_MAX_RANK] = {0}, off = 0;
    double mx = -INFINITY;
    if (func == PLX_REDUCE_LOG_SUM_EXP) {
        for (int64_t r = 0; r < g->count; r++) {
            double v = x[base + off];
            mx = v > mx || isnan(v) ? v : mx;
            reduce_step(g, ridx, &off);
        }
        if (!isfinite(mx)) {
            return (float)mx;
        }
    }
    double acc = func == PLX_REDUCE_PROD ? 1.0 : 0.0;
    for (int64_t r = 0; r < g->count; r++) {
        double v = x[base + off];
        switch (func) {
        case PLX_REDUCE_PROD: acc *= v; break;
        case PLX_REDUCE_L1: acc += fabs(v); break;
        case PLX_REDUCE_L2:
        case PLX_REDUCE_SUM_SQUARE: acc += v * v; break;
        case PLX_REDUCE_LOG_SUM_EXP: acc += exp(v - mx); break;
        default: acc += v; break; /* log_sum */
        }
        reduce_step(g, ridx, &off);
    }
    switch (func) {
    case PLX_REDUCE_L2: return (float)sqrt(acc);
    case PLX_REDUCE_LOG_SUM: return (float)log(acc);
    case PLX_REDUCE_LOG_SUM_EXP: return (float)(mx + log(acc));
    default: return (float)acc;
    }
}

/* Float sums and means accumulate in double. Integer sums wrap; an integer
 * mean is the sum divided by the count, truncated toward zero. Over an
 * empty set: sum 0, max -inf (or the dtype's minimum), min +inf (maximum),
 * float mean NaN, integer mean an error. Integer prod, l1 and sum_square
 * wrap like sums (prod of nothing is 1). */
bool plxk_run_reduce(const plxk_kernel_args *args) {
    char why[256];
    reduce_geom g;
    if (reduce_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_reduce_desc *desc = args->layer->desc;
    const plx_tensor_info *xi = &args->layer->inputs[0];
    plx_dtype dt = xi->dtype;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    int64_t total = numel(xi);
    if (g.identity) {
        if (total) {
            memcpy(y, x, (size_t)total * plx_dtype_size(dt));
        }
        return true;
    }
    bool is_float = dt == PLX_DTYPE_FLOAT32;
    if (!is_float && desc->func == PLX_REDUCE_MEAN && g.count == 0 && numel(&args->layer->outputs[0])) {
        return plxk_fail(args, "cpu_ref reduce: integer mean over an empty set");
    }
    int64_t int_min = dt == PLX_DTYPE_INT32 ? INT32_MIN : INT64_MIN;
    int64_t int_max = dt == PLX_DTYPE_INT32 ? INT32_MAX : INT64_MAX;
    int64_t outputs = 1;
    for (uint32_t i = 0; i < g.kept_rank; i++) {
        outputs *= g.kept_dims[i];
    }
    bool more = desc->func > PLX_REDUCE_SUM; /* prod .. log_sum_exp */
    int64_t count = is_float && more ? 0 : g.count; /* those: reduce_float_more */
    int64_t kidx[PLX_MAX_RANK] = {0}, base = 0;
    for (int64_t o = 0; o < outputs; o++) {
        int64_t ridx[PLX_MAX_RANK] = {0}, off = 0;
        double fsum = 0.0;
        float fbest = desc->func == PLX_REDUCE_MAX ? -INFINITY : INFINITY;
        int64_t isum = desc->func == PLX_REDUCE_PROD ? 1 : 0;
        int64_t ibest = desc->func == PLX_REDUCE_MAX ? int_min : int_max;
        for (int64_t r = 0; r < count; r++) {
            if (is_float) {
                float v = ((const float *)x)[base + off];
                if (desc->func == PLX_REDUCE_MAX) {
                    fbest = v > fbest || isnan(v) ? v : fbest;
                } else if (desc->func == PLX_REDUCE_MIN) {
                    fbest = v < fbest || isnan(v) ? v : fbest;
                } else {
                    fsum += v;
                }
            } else {
                int64_t v = load_int(x, dt, base + off);
                if (desc->func == PLX_REDUCE_MAX) {
                    ibest = v > ibest ? v : ibest;
                } else if (desc->func == PLX_REDUCE_MIN) {
                    ibest = v < ibest ? v : ibest;
                } else if (desc->func == PLX_REDUCE_PROD) {
                    isum = wrap_mul(isum, v);
                } else if (desc->func == PLX_REDUCE_L1) {
                    isum = wrap_add(isum, v < 0 ? wrap_mul(v, -1) : v);
                } else if (desc->func == PLX_REDUCE_SUM_SQUARE) {
                    isum = wrap_add(isum, wrap_mul(v, v));
                } else {
                    isum = wrap_add(isum, v);
                }
            }
            reduce_step(&g, ridx, &off);
        }
        if (is_float && more) {
            ((float *)y)[o] = reduce_float_more(&g, desc->func, x, base);
        } else if (is_float) {
            float v = desc->func == PLX_REDUCE_SUM    ? (float)fsum
                      : desc->func == PLX_REDUCE_MEAN ? (float)(fsum / (double)g.count)
                                                      : fbest;
            ((float *)y)[o] = v;
        } else {
            int64_t v = ibest;
            if (desc->func == PLX_REDUCE_SUM || more) {
                v = dt == PLX_DTYPE_INT32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)isum : isum;
            } else if (desc->func == PLX_REDUCE_MEAN) {
                /* int32 sums wrap at 32 bits like the result; the count may
                 * exceed int32's range, hence the division in int64 */
                int64_t s = dt == PLX_DTYPE_INT32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)isum
                                                  : isum;
                v = s / g.count;
            }
            store_int(y, dt, o, v);
        }
        for (uint32_t d = g.kept_rank; d-- > 0;) {
            base += g.kept_st[d];
            if (++kidx[d] < g.kept_dims[d]) {
                break;
            }
            base -= g.kept_st[d] * g.kept_dims[d];
            kidx[d] = 0;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* arg_reduce, topk                                                    */
/* ------------------------------------------------------------------ */

/* Both run on every numeric dtype: floats (float16 and bfloat16 through
 * float32, which holds them exactly) and integers compared exactly. */
static bool is_numeric_dtype(plx_dtype dt) {
    switch (dt) {
    case PLX_DTYPE_FLOAT32:
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_INT16:
    case PLX_DTYPE_INT32:
    case PLX_DTYPE_INT64: return true;
    default: return false;
    }
}

/* Orders elements i and j of a numeric tensor: < 0, 0 or > 0 as element
 * i is smaller, equal or larger. A NaN is larger than every number and
 * equal to another NaN, which makes the order total. */
static int compare_elements(plx_dtype dt, const void *p, int64_t i, int64_t j) {
    float a, b;
    int64_t ia, ib;
    switch (dt) {
    case PLX_DTYPE_FLOAT32: a = ((const float *)p)[i], b = ((const float *)p)[j]; break;
    case PLX_DTYPE_FLOAT16:
        a = plx_float16_to_float32(((const uint16_t *)p)[i]);
        b = plx_float16_to_float32(((const uint16_t *)p)[j]);
        break;
    case PLX_DTYPE_BFLOAT16:
        a = plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
        b = plx_bfloat16_to_float32(((const uint16_t *)p)[j]);
        break;
    default:
        switch (dt) {
        case PLX_DTYPE_INT8: ia = ((const int8_t *)p)[i], ib = ((const int8_t *)p)[j]; break;
        case PLX_DTYPE_UINT8: ia = ((const uint8_t *)p)[i], ib = ((const uint8_t *)p)[j]; break;
        case PLX_DTYPE_INT16: ia = ((const int16_t *)p)[i], ib = ((const int16_t *)p)[j]; break;
        default: ia = load_int(p, dt, i), ib = load_int(p, dt, j); break;
        }
        return (ia > ib) - (ia < ib);
    }
    if (isnan(a) || isnan(b)) {
        return (int)isnan(a) - (int)isnan(b);
    }
    return (a > b) - (a < b);
}

static bool is_nan_element(plx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_FLOAT32: return isnan(((const float *)p)[i]);
    case PLX_DTYPE_FLOAT16: return isnan(plx_float16_to_float32(((const uint16_t *)p)[i]));
    case PLX_DTYPE_BFLOAT16: return isnan(plx_bfloat16_to_float32(((const uint16_t *)p)[i]));
    default: return false;
    }
}

/* outer x len x inner around a normalised axis of X. */
static const char *axis_layout(const plx_layer_view *l, const char *op, int64_t axis_in,
                               uint32_t *axis, int64_t *outer, int64_t *len, int64_t *inner,
                               char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0];
    int64_t a = axis_in < 0 ? axis_in + (int64_t)x->rank : axis_in;
    if (a < 0 || a >= (int64_t)x->rank) {
        return plxk_refuse(buf, size, "cpu_ref %s: axis %lld is out of range for rank %u", op,
                              (long long)axis_in, x->rank);
    }
    *axis = (uint32_t)a;
    *outer = dim_product(x, 0, *axis);
    *len = x->dims[a];
    *inner = dim_product(x, *axis + 1, x->rank);
    return NULL;
}

typedef struct axis_geom {
    uint32_t axis;
    int64_t outer, len, inner;
} axis_geom;

static const char *arg_reduce_prepare(const plx_layer_view *l, axis_geom *g, char *buf,
                                      size_t size) {
    const char *why = check_layer(l, "arg_reduce", 1, 1, sizeof(plx_arg_reduce_desc), buf, size);
    if (why) {
        return why;
    }
    const plx_arg_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (!is_numeric_dtype(x->dtype)) {
        return plxk_refuse(buf, size, "cpu_ref arg_reduce: dtype %s is not supported",
                              plx_dtype_name(x->dtype));
    }
    if (l->outputs[0].dtype != PLX_DTYPE_INT64) {
        return plxk_refuse(buf, size, "cpu_ref arg_reduce: the output is %s, not int64",
                              plx_dtype_name(l->outputs[0].dtype));
    }
    if ((why = axis_layout(l, "arg_reduce", desc->axis, &g->axis, &g->outer, &g->len, &g->inner,
                           buf, size))) {
        return why;
    }
    if (g->len == 0 && g->outer * g->inner > 0) {
        return plxk_refuse(buf, size, "cpu_ref arg_reduce: axis %u of X is empty", g->axis);
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != g->axis) {
            dims[r++] = x->dims[i];
        } else if (desc->keepdims) {
            dims[r++] = 1;
        }
    }
    return require_output_shape(l, "arg_reduce", r, dims, buf, size);
}

const char *plxk_check_arg_reduce(const plx_layer_view *layer, char *buf, size_t size) {
    axis_geom g = {0};
    return arg_reduce_prepare(layer, &g, buf, size);
}

/* The index of the largest (smallest) element along the axis, the first
 * of equal ones or the last with select_last_index. A NaN wins over every
 * number in both (as numpy's argmax and argmin). */
bool plxk_run_arg_reduce(const plxk_kernel_args *args) {
    char why[256];
    axis_geom g = {0};
    if (arg_reduce_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_arg_reduce_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *x = args->inputs[0];
    int64_t *y = args->outputs[0];
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t in = 0; in < g.inner; in++) {
            int64_t base = o * g.len * g.inner + in, best = 0;
            for (int64_t j = 1; j < g.len; j++) {
                int64_t pj = base + j * g.inner, pb = base + best * g.inner;
                /* > 0: element j beats the best so far */
                int c = compare_elements(dt, x, pj, pb);
                if (desc->select_min) {
                    bool nj = is_nan_element(dt, x, pj), nb = is_nan_element(dt, x, pb);
                    c = nj || nb ? (int)nj - (int)nb : -c;
                }
                if (c > 0 || (c == 0 && desc->select_last_index)) {
                    best = j;
                }
            }
            y[o * g.inner + in] = best;
        }
    }
    return true;
}

static const char *topk_prepare(const plx_layer_view *l, axis_geom *g, char *buf, size_t size) {
    if (!l || l->struct_size < offsetof(plx_layer_view, output_count) + sizeof l->output_count) {
        return plxk_refuse(buf, size, "cpu_ref topk: the layer view is missing or too small");
    }
    if (l->input_count != 1 || l->output_count != 2 || !l->inputs || !l->outputs) {
        return plxk_refuse(buf, size, "cpu_ref topk takes 1 input and 2 outputs, not %u and %u",
                              l->input_count, l->output_count);
    }
    uint32_t ss = 0;
    if (l->desc) {
        memcpy(&ss, l->desc, sizeof ss);
    }
    if (ss < sizeof(plx_topk_desc)) {
        return plxk_refuse(buf, size, "cpu_ref topk: missing or too small descriptor");
    }
    const plx_tensor_info *infos[3] = {&l->inputs[0], &l->outputs[0], &l->outputs[1]};
    for (int i = 0; i < 3; i++) {
        size_t bytes;
        if (!plx_tensor_info_byte_size(infos[i], &bytes) || bytes > (size_t)INT64_MAX / 8) {
            return plxk_refuse(buf, size, "cpu_ref topk: %s has an invalid dtype or shape",
                                  i == 0 ? "X" : i == 1 ? "values" : "indices");
        }
    }
    const plx_topk_desc *desc = l->desc;
    plx_dtype dt = l->inputs[0].dtype;
    if (!is_numeric_dtype(dt)) {
        return plxk_refuse(buf, size, "cpu_ref topk: dtype %s is not supported",
                              plx_dtype_name(dt));
    }
    if (l->outputs[0].dtype != dt || l->outputs[1].dtype != PLX_DTYPE_INT64) {
        return plxk_refuse(buf, size, "cpu_ref topk: outputs %s and %s, expected %s and int64",
                              plx_dtype_name(l->outputs[0].dtype),
                              plx_dtype_name(l->outputs[1].dtype), plx_dtype_name(dt));
    }
    const char *why = axis_layout(l, "topk", desc->axis, &g->axis, &g->outer, &g->len, &g->inner,
                                  buf, size);
    if (why) {
        return why;
    }
    if (desc->k < 0 || desc->k > g->len) {
        return plxk_refuse(buf, size, "cpu_ref topk: k %lld is out of range [0, %lld]",
                              (long long)desc->k, (long long)g->len);
    }
    int64_t dims[PLX_MAX_RANK];
    const plx_tensor_info *x = &l->inputs[0];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i == g->axis ? desc->k : x->dims[i];
    }
    plx_layer_view indices = *l;
    indices.outputs = &l->outputs[1];
    if ((why = require_output_shape(l, "topk", x->rank, dims, buf, size))) {
        return why;
    }
    return require_output_shape(&indices, "topk", x->rank, dims, buf, size);
}

const char *plxk_check_topk(const plx_layer_view *layer, char *buf, size_t size) {
    axis_geom g = {0};
    return topk_prepare(layer, &g, buf, size);
}

/* Whether element a comes before element b (positions along the line
 * starting at base): larger (smaller) first, equal values by index. */
static bool topk_before(plx_dtype dt, const void *x, int64_t base, int64_t inner, int64_t a,
                        int64_t b, bool largest) {
    int c = compare_elements(dt, x, base + a * inner, base + b * inner);
    if (!largest) {
        c = -c;
    }
    return c > 0 || (c == 0 && a < b);
}

/* Without scratch memory: the t-th output is the first element, in topk
 * order, of those after the (t-1)-th; O(k * n) per line. The outputs are
 * sorted whatever `sorted` says. A NaN is larger than every number, as in
 * compare_elements. */
bool plxk_run_topk(const plxk_kernel_args *args) {
    char why[256];
    axis_geom g = {0};
    if (topk_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_topk_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    size_t es = plx_dtype_size(dt);
    const uint8_t *x = args->inputs[0];
    uint8_t *values = args->outputs[0];
    int64_t *indices = args->outputs[1];
    int64_t k = desc->k;
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t in = 0; in < g.inner; in++) {
            int64_t base = o * g.len * g.inner + in, out_base = o * k * g.inner + in, prev = -1;
            for (int64_t t = 0; t < k; t++) {
                int64_t pick = -1;
                for (int64_t j = 0; j < g.len; j++) {
                    if (prev >= 0 && !topk_before(dt, x, base, g.inner, prev, j, desc->largest)) {
                        continue; /* already taken */
                    }
                    if (pick < 0 || topk_before(dt, x, base, g.inner, j, pick, desc->largest)) {
                        pick = j;
                    }
                }
                /* k <= len: there is always one left */
                int64_t yo = out_base + t * g.inner;
                memcpy(values + (size_t)yo * es, x + (size_t)(base + pick * g.inner) * es, es);
                indices[yo] = pick;
                prev = pick;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* resize                                                              */
/* ------------------------------------------------------------------ */

typedef struct resize_geom {
    int64_t nc, in[2], out[2];
    double scale[2];
} resize_geom;

static const char *resize_prepare(const plx_layer_view *l, resize_geom *g, char *buf,
                                  size_t size) {
    const char *why = check_layer(l, "resize", 1, 1, sizeof(plx_resize_desc), buf, size);
    if (!why) {
        why = require_float32(l, "resize", buf, size);
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
    return clamp_i64(i, 0, in - 1);
}

/* Linear taps: lo, hi (clamped) and the weight of hi. */
static void resize_linear_taps(double c, int64_t in, int64_t *lo, int64_t *hi, double *w) {
    double f = floor(c);
    *w = c - f;
    *lo = clamp_i64((int64_t)f, 0, in - 1);
    *hi = clamp_i64((int64_t)f + 1, 0, in - 1);
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
