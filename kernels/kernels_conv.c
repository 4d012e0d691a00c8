/* The convolutions: conv (depthwise kernel, pointwise or im2col products
 * on cpu_ref's GEMM (gemm.h), in the workspace their caller sized with
 * plxk_kernel_workspace, with a fused relu, clip or leaky_relu in its epilogue) and
 * conv_transpose (ONNX semantics, opset 13+: a GEMM and a scatter).
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

#include <stdint.h>
#include <string.h>

#include "depthwise.h"

/* ------------------------------------------------------------------ */
/* conv                                                                */
/* ------------------------------------------------------------------ */

/* A 2-D conv along H only (X and the kernel one column wide, no padding
 * along W: openWakeWord's 3x1 convs over 76x1 planes) is, with the same
 * memory layout of X, W and Y, the conv along W of the transposed planes:
 * the geometry's two slots are swapped, so that im2col copies runs of the
 * output's height instead of one value per output row (a 3x1 conv of
 * 1x32x76x1 took 2.5 times ONNX Runtime's time, four fifths of it in
 * im2col's per-run work). */
static void conv_rows_as_columns(plx_window_geom *g) {
    if (g->spatial_rank != 2 || g->in[1] != 1 || g->k[1] != 1 || g->pb[1] != 0 ||
        g->pe[1] != 0 || g->in[0] == 1) {
        return;
    }
    int64_t *slots[] = {g->in, g->out, g->k, g->s, g->d, g->pb, g->pe};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        int64_t t = slots[i][0];
        slots[i][0] = slots[i][1];
        slots[i][1] = t;
    }
}

static const char *conv_prepare(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                size_t size) {
    const char *why = plxk_require_float32(l, "conv", buf, size);
    if (why) {
        return why;
    }
    char msg[224];
    why = plxk_window_refusal(plx_window_geom_conv_nd(l, PLXK_ATTR_LIMIT, g, msg, sizeof msg),
                              buf, size);
    if (!why) {
        conv_rows_as_columns(g);
    }
    return why;
}

const char *plxk_check_conv(const plx_layer_view *layer, char *buf, size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_check_qconv(layer, buf, size);
    }
    plx_window_geom g = {0};
    return conv_prepare(layer, &g, buf, size);
}

/* One input channel per group, several groups: a direct kernel, no GEMM.
 * A single-channel input with one group is not: its planes share the
 * input, so im2col + GEMM multiplies every output channel at once (a 1-D
 * conv of 257 channels with a 512-tap kernel at stride 160, an audio
 * front end's STFT, ran 25 times slower through the direct kernel). */
static bool conv_is_depthwise(const plx_window_geom *g) {
    return g->c == g->group && g->group > 1 && g->spatial_rank < 3;
}

/* 1x1, unit stride, no padding: X itself is the GEMM's right operand. */
static bool conv_is_pointwise(const plx_window_geom *g) {
    for (int i = 0; i < 3; i++) {
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] != 0 || g->pe[i] != 0) {
            return false;
        }
    }
    return true;
}

/* The bytes of one group's W_g packed as the GEMM's op(A) (rounded to
 * the workspace's alignment), for a conv on the GEMM whose product reads
 * it packed (plxk_gemm_reads_packed: not one output channel per group, nor
 * an output plane narrower than the GEMM's NR); 0 otherwise or on
 * overflow. */
static size_t conv_packed_group_bytes(const plx_window_geom *g, plxk_isa isa) {
    size_t mg = (size_t)(g->m / g->group), n = (size_t)plxk_geom_out_plane(g);
    size_t k = (size_t)(g->c / g->group * plxk_geom_taps(g));
    if (conv_is_depthwise(g) || !plxk_gemm_reads_packed(isa, mg, n, k, (ptrdiff_t)n, 1)) {
        return 0;
    }
    size_t bytes = plxk_gemm_packed_a_size(isa, mg, k);
    return bytes == SIZE_MAX ? 0 : plxk_round_ws(bytes);
}

/* im2col's whole column matrix, for the shared path of run_conv_shared:
 * [C/group * (kd *) kh * kw, (OD *) OH * OW] floats. */
static size_t conv_col_bytes(const plx_window_geom *g) {
    if (conv_is_depthwise(g) || conv_is_pointwise(g)) {
        return 0;
    }
    return plxk_round_ws((size_t)(g->c / g->group * plxk_geom_taps(g) * plxk_geom_out_plane(g)) *
                         sizeof(float));
}

/* The bytes of col that a slab may take. The whole col of a 3x3 conv is
 * large (7 MiB for 64 channels at 56x56): written by im2col, it leaves the
 * caches and comes back when the GEMM packs it, and at two threads that
 * traffic, more than the arithmetic, set the conv's time. A slab of this
 * size stays in a core's L2 (1 MiB and more on current x86) together with
 * the GEMM's packed blocks (a KC x slab panel of B, MC x KC of A). */
#define CONV_SLAB_BYTES ((size_t)512 * 1024)

/* The narrowest slab, in NR-wide panels of the GEMM. Unless the weights
 * are packed ahead (plxk_prepare_conv), each slab's GEMM packs all of W_g
 * again, and that copy is paid back only over enough panels: with
 * ResNet's last stage (K = 4608) in slabs of one panel, the convs ran 1.5
 * times slower than on the whole col. A large K thus gets
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
    size_t k = (size_t)(g->c / g->group * plxk_geom_taps(g)), n = (size_t)plxk_geom_out_plane(g);
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
    s->col = plxk_round_ws(k * s->width * sizeof(float));
    s->slice = s->col + plxk_round_ws(gemm);
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
    return plxk_round_ws((size_t)plxk_depthwise_scratch(&p) * sizeof(float));
}

size_t plxk_workspace_conv(const plx_layer_view *layer, const plxk_compute *compute) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_workspace_qconv(layer, compute);
    }
    plx_window_geom g = {0};
    char buf[8];
    if (conv_prepare(layer, &g, buf, sizeof buf)) {
        return 0;
    }
    size_t threads = plxk_pool_threads(plxk_pool_of(compute));
    conv_slabs slabs;
    if (conv_is_depthwise(&g) || conv_slab_plan(&g, plxk_isa_of(compute), threads, &slabs)) {
        /* a slice per thread */
        size_t slice = conv_is_depthwise(&g) ? depthwise_slice(&g) : slabs.slice;
        return slice > SIZE_MAX / threads ? SIZE_MAX : slice * threads;
    }
    size_t gemm = plxk_gemm_ws(compute, g.m / g.group, plxk_geom_out_plane(&g),
                               g.c / g.group * plxk_geom_taps(&g));
    size_t col = conv_col_bytes(&g);
    return gemm == SIZE_MAX || col > SIZE_MAX - gemm ? SIZE_MAX : col + gemm;
}

/* dst[0 .. n) = src[0 .. n) or 0, for the short runs of im2col_row, in
 * plain loops: a narrow image (openWakeWord's embedding network convolves
 * rows of 8 to 32 pixels) makes tens of thousands of runs per conv, and a
 * call to memcpy and two to memset for each cost more than the conv's
 * product. GCC turns such loops into those very calls (loop distribution
 * into library patterns), which IM2COL_INLINE turns off for these three
 * functions. */
#if defined(__GNUC__) && !defined(__clang__)
#define IM2COL_INLINE __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define IM2COL_INLINE
#endif

IM2COL_INLINE static inline void im2col_copy(float *restrict dst, const float *restrict src,
                                             int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        dst[i] = src[i];
    }
}

IM2COL_INLINE static inline void im2col_zero(float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        dst[i] = 0.0f;
    }
}

/* col[((c*kd + t)*kh + i)*kw + j][(od*OH + oh)*OW + ow] =
 * X[c][od*s2 - pb2 + t*d2][oh*s0 - pb0 + i*d0][ow*s1 - pb1 + j*d1], 0 in
 * the padding (a 1-D or 2-D conv has the trivial depth slot: kd = OD = 1,
 * t = od = 0): row r of col, restricted to its columns (output pixels)
 * [j0, j1), into out[0 .. j1 - j0). The columns may start and end inside
 * an output row, so it goes output row by output row, each run split into
 * its padding on the left, its inside and its padding on the right. x is
 * the group's first input channel of one image. */

/* im2col_row of a 2-D conv with both strides 1 whose output rows are as
 * wide as its input rows (openWakeWord's 1x3 and 3x1 convs, ResNet's 3x3
 * ones with padding 1): output pixel p = oh * W + ow of the row (tap (i,
 * j) of channel c) reads X's pixel p + shift of the channel, so the
 * columns [j0, j1) within the output rows whose input row lies in X are
 * one copy of X; then the columns outside [lo, hi) of those rows, which
 * the copy filled from the neighbouring row (or left), are zeroed. Row by
 * row, narrow rows made tens of thousands of runs per conv, and im2col
 * took longer than the GEMM. */
IM2COL_INLINE static void im2col_flat_row(const plx_window_geom *g, const float *xc, int64_t i,
                                          int64_t off, int64_t lo, int64_t hi, int64_t j0,
                                          int64_t j1, float *out) {
    const int64_t w = g->out[1], h = g->in[0], dh = i * g->d[0] - g->pb[0];
    const int64_t shift = dh * w + off;
    /* the pixels of the output rows whose input row oh + dh is in X */
    int64_t plo = plxk_clamp_i64((dh < 0 ? -dh : 0) * w, j0, j1);
    int64_t phi = plxk_clamp_i64((h - dh) * w, plo, j1);
    im2col_zero(out, plo - j0);
    int64_t clo = plxk_clamp_i64(-shift, plo, phi), chi = plxk_clamp_i64(h * w - shift, clo, phi);
    im2col_copy(out + (clo - j0), xc + clo + shift, chi - clo);
    im2col_zero(out + (phi - j0), j1 - phi);
    if (lo == 0 && hi == w) {
        return; /* [plo, clo) and [chi, phi) are then empty */
    }
    for (int64_t row = plo - plo % w; row < phi; row += w) {
        int64_t a = plxk_clamp_i64(row, plo, phi), b = plxk_clamp_i64(row + lo, a, phi);
        im2col_zero(out + (a - j0), b - a);
        a = plxk_clamp_i64(row + hi, plo, phi);
        b = plxk_clamp_i64(row + w, a, phi);
        im2col_zero(out + (a - j0), b - a);
    }
}

/* Row (c, t, i, j) of col: channel c, tap (t, i, j). */
IM2COL_INLINE static void im2col_row(const plx_window_geom *g, const float *x, int64_t c,
                                     int64_t t, int64_t i, int64_t j, int64_t j0, int64_t j1,
                                     float *out) {
    int64_t ow_n = g->out[1], s1 = g->s[1];
    int64_t off = j * g->d[1] - g->pb[1], lo, hi;
    plxk_window_columns(off, s1, g->in[1], ow_n, &lo, &hi);
    if (s1 == 1 && g->s[0] == 1 && g->in[1] == ow_n && g->in[2] == 1 && g->out[2] == 1 &&
        g->k[2] == 1) {
        im2col_flat_row(g, x + c * g->in[0] * g->in[1], i, off, lo, hi, j0, j1, out);
        return;
    }
    /* the run [a, e) of output row q = od * OH + oh; after the first,
     * whole rows */
    int64_t q = j0 / ow_n, a = j0 % ow_n;
    int64_t od = q / g->out[0], oh = q % g->out[0];
    for (int64_t p = j0; p < j1; a = 0) {
        int64_t e = j1 - p < ow_n - a ? a + (j1 - p) : ow_n;
        int64_t id = od * g->s[2] - g->pb[2] + t * g->d[2];
        int64_t ih = oh * g->s[0] - g->pb[0] + i * g->d[0];
        if (ih < 0 || ih >= g->in[0] || id < 0 || id >= g->in[2]) {
            im2col_zero(out, e - a);
        } else {
            int64_t l = plxk_clamp_i64(lo, a, e), h = plxk_clamp_i64(hi, l, e);
            const float *xr = x + ((c * g->in[2] + id) * g->in[0] + ih) * g->in[1];
            im2col_zero(out, l - a);
            if (s1 == 1) { /* ResNet's 3x3 convs: the run is contiguous in X */
                im2col_copy(out + (l - a), xr + l + off, h - l);
            } else {
                for (int64_t ow = l; ow < h; ow++) {
                    out[ow - a] = xr[ow * s1 + off];
                }
            }
            im2col_zero(out + (h - a), e - h);
        }
        out += e - a;
        p += e - a;
        if (++oh == g->out[0]) {
            oh = 0;
            od++;
        }
    }
}

/* Rows [r0, r1) of col, restricted to its columns [j0, j1), each into
 * out (rows `stride` floats apart): the row's channel and tap counted
 * along (a conv of a 1-D signal, openWakeWord's mel front end, has
 * 512-row cols of 5 columns, whose per-row divisions took a fifth of
 * the model). */
IM2COL_INLINE static void im2col_rows(const plx_window_geom *g, const float *x, int64_t r0,
                                      int64_t r1, int64_t j0, int64_t j1, float *out,
                                      int64_t stride) {
    int64_t c = r0 / plxk_geom_taps(g), t = r0 / (g->k[0] * g->k[1]) % g->k[2];
    int64_t i = r0 / g->k[1] % g->k[0], j = r0 % g->k[1];
    for (int64_t r = r0; r < r1; r++, out += stride) {
        im2col_row(g, x, c, t, i, j, j0, j1, out);
        if (++j == g->k[1]) {
            j = 0;
            if (++i == g->k[0]) {
                i = 0;
                if (++t == g->k[2]) {
                    t = 0;
                    c++;
                }
            }
        }
    }
}

/* What every part of an im2col + GEMM conv (or a pointwise one) reads. */
typedef struct conv_run {
    const plx_window_geom *g;
    const float *x, *w, *b;
    float *y;
    int64_t k, n;               /* col's rows (C/group * taps) and columns (output plane) */
    plxk_isa isa;
    plxk_gemm_args epilogue; /* only its act, lo and hi */
    const char *packed_w;       /* NULL, or W_g packed (plxk_prepare_conv) */
    size_t packed_group;        /* bytes from one group's packed W_g to the next */
    conv_slabs slabs;           /* the slab path's */
    char *ws;                   /* the slab path's: a slice per thread */
    int failed;                 /* the slab path's: a slab's GEMM refused (atomic) */
    float *col;                 /* the shared path's whole col; NULL: X is col (pointwise) */
} conv_run;

/* The first input channel of image n's group gi. */
static const float *conv_group_input(const conv_run *r, int64_t n, int64_t gi) {
    const plx_window_geom *g = r->g;
    return r->x + (n * g->c + gi * (g->c / g->group)) * plxk_geom_in_plane(g);
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
    ga.packed_a = r->packed_w ? (const float *)(const void *)(r->packed_w +
                                                              (size_t)gi * r->packed_group)
                              : NULL;
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
    im2col_rows(r->g, x, 0, r->k, j0, j0 + cols, col, cols);
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
    if (!plxk_require_isa(args, "conv", &r->isa)) {
        return false;
    }
    size_t left;
    r->ws = plxk_ws_at(args, 0, &left);
    if (!r->ws || left < r->slabs.slice) {
        return plxk_fail(args, "conv: a workspace of %zu bytes is too small for "
                                  "a slab's %zu", args->workspace_size, r->slabs.slice);
    }
    plxk_pool *pool = plxk_pool_of(args->compute);
    if (left / r->slabs.slice < plxk_pool_threads(pool)) {
        pool = NULL; /* room for one thread only: run here */
    }
    double cost_ns = (double)r->slabs.tasks * (double)r->slabs.width * (double)r->k *
                     (double)(r->g->m / r->g->group) / 32.0; /* the GEMMs' */
    plxk_pool_run(pool, r->slabs.tasks, cost_ns, conv_slab, r);
    if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) {
        return plxk_fail(args, "conv: the GEMM of a slab refused its arguments");
    }
    return true;
}

typedef struct im2col_job {
    const conv_run *r;
    const float *x; /* the group's first input channel of one image */
} im2col_job;

/* Rows of col per task of the shared path's im2col. */
#define IM2COL_TASK_ROWS 16

/* Rows [task, task + 1) x IM2COL_TASK_ROWS of the shared path's col, all
 * their columns. */
static void im2col_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const im2col_job *job = ctx;
    const conv_run *r = job->r;
    int64_t r0 = (int64_t)task * IM2COL_TASK_ROWS;
    int64_t r1 = r0 + IM2COL_TASK_ROWS < r->k ? r0 + IM2COL_TASK_ROWS : r->k;
    im2col_rows(r->g, job->x, r0, r1, 0, r->n, r->col + r0 * r->n, r->n);
}

/* The shared path: a pointwise conv (X is col), or an output too small to
 * give every thread a slab. Per image and group, im2col writes the whole
 * col, its rows shared among the pool's threads, then the GEMM shares the
 * tiles of Y_g. */
static bool run_conv_shared(const plxk_kernel_args *args, conv_run *r) {
    const plx_window_geom *g = r->g;
    size_t col_bytes = conv_col_bytes(g), left;
    r->col = col_bytes ? plxk_ws_at(args, 0, &left) : NULL;
    void *ws = plxk_ws_at(args, col_bytes, &left);
    if (col_bytes && (!r->col || col_bytes > args->workspace_size)) {
        return plxk_fail(args, "conv: a workspace of %zu bytes is too small for "
                                  "im2col's %zu", args->workspace_size, col_bytes);
    }
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = conv_group_input(r, n, gi);
            if (r->col) {
                im2col_job job = {r, xg};
                plxk_pool_run(plxk_pool_of(args->compute),
                              (size_t)((r->k + IM2COL_TASK_ROWS - 1) / IM2COL_TASK_ROWS),
                              (double)r->k * (double)r->n / 2.0, im2col_task, &job);
            }
            plxk_gemm_args ga = conv_gemm_args(r, n, gi, 0, r->n, r->col ? r->col : xg, r->n);
            if (!plxk_product(args, &ga, ws, left, "conv")) {
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
    p.slope = j->epilogue.slope;
    p.hi = j->epilogue.hi;
    p.y = j->y + (n * g->m + m) * g->out[0] * g->out[1];
    p.scratch = j->scratch ? (float *)(void *)(j->scratch + thread * j->slice) : NULL;
    plxk_depthwise(j->isa, &p); /* the variant was checked before the run */
}

/* Every plane of a depthwise conv, shared among the pool's threads, each
 * with its slice of the workspace (plxk_workspace_conv). */
static bool run_depthwise(const plxk_kernel_args *args, const plx_window_geom *g,
                          const float *x, const float *w, const float *b, float *y) {
    depthwise_job job = {g, x, w, b, y, PLXK_ISA_PORTABLE, {0}, NULL, depthwise_slice(g)};
    if (!plxk_require_isa(args, "conv", &job.isa)) {
        return false;
    }
    plxk_set_epilogue(args->activation, &job.epilogue);
    plxk_pool *pool = plxk_pool_of(args->compute);
    size_t threads = plxk_pool_threads(pool), left = 0;
    if (job.slice) {
        job.scratch = plxk_ws_at(args, 0, &left);
        if (!job.scratch || left < job.slice) {
            return plxk_fail(args, "conv: a workspace of %zu bytes is too small for "
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

/* Per image and group, Y_g [M/group, (OD*) OH*OW] = W_g [M/group, K] x col
 * [K, (OD*) OH*OW], K = C/group * (kd *) kh * kw, with the bias per output channel, in
 * slabs of columns when the output is large enough (conv_slab_plan), at
 * once otherwise; depthwise convs run a direct kernel, plane by plane, on
 * the pool. */
bool plxk_run_conv(const plxk_kernel_args *args) {
    if (plxk_is_quantized_product(args->layer)) {
        return plxk_run_qconv(args);
    }
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
                  .k = g.c / g.group * plxk_geom_taps(&g), .n = plxk_geom_out_plane(&g),
                  .isa = plxk_isa_of(args->compute)};
    r.packed_group = args->prepared ? conv_packed_group_bytes(&g, r.isa) : 0;
    r.packed_w = r.packed_group ? args->prepared : NULL; /* as plxk_prepare_conv laid it out */
    plxk_set_epilogue(args->activation, &r.epilogue);
    if (conv_slab_plan(&g, r.isa, plxk_pool_threads(plxk_pool_of(args->compute)), &r.slabs)) {
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
    const char *why = plxk_require_float32(l, "conv_transpose", buf, size);
    if (why) {
        return why;
    }
    char msg[224];
    return plxk_window_refusal(
        plx_window_geom_conv_transpose_nd(l, PLXK_ATTR_LIMIT, g, msg, sizeof msg), buf, size);
}

const char *plxk_check_conv_transpose(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g = {0};
    return conv_transpose_prepare(layer, &g, buf, size);
}

/* conv_transpose as a product and a scatter: per image and group,
 * col [mg * kh * kw, pixels] = W_g^T [mg * kh * kw, C/group] x X_g
 * [C/group, pixels] on the GEMM, then each row of col (output channel mm,
 * tap (i, j)) is added into Y where input pixel (ih, iw) lands through that
 * tap: oh = ih * s0 - pb0 + i * d0, ow = iw * s1 - pb1 + j * d1. The input
 * pixels go in slabs so that col stays in the cache between the two; Y
 * starts as the bias. The GEMM shares its tiles among the pool's threads,
 * and the scatter its output channels (the taps of one channel add to the
 * same outputs, so a channel's rows stay on one thread: on the calling
 * thread alone, a 2x2 stride-2 conv_transpose of 64 -> 32 channels at
 * 40x40 took 0.38 ms at two threads, ONNX Runtime 0.24). */
typedef struct convt_plan {
    size_t rows;  /* col's rows: mg * kh * kw */
    size_t width; /* input pixels per slab */
    size_t col;   /* bytes of one slab of col, rounded */
} convt_plan;

static bool convt_plan_of(const plx_window_geom *g, plxk_isa isa, convt_plan *p) {
    plxk_gemm_blocking b;
    if (!plxk_gemm_blocking_of(isa, &b)) {
        return false;
    }
    size_t pixels = (size_t)plxk_geom_in_plane(g);
    p->rows = (size_t)(g->m / g->group * plxk_geom_taps(g));
    size_t fit = CONV_SLAB_BYTES / sizeof(float) / p->rows / b.nr * b.nr;
    size_t narrowest = CONV_SLAB_MIN_PANELS * b.nr;
    p->width = fit < narrowest ? narrowest : fit;
    p->width = p->width < pixels ? p->width : pixels;
    if (p->width && p->rows > SIZE_MAX / 4 / sizeof(float) / p->width) {
        return false;
    }
    p->col = plxk_round_ws(p->rows * p->width * sizeof(float));
    return true;
}

size_t plxk_workspace_conv_transpose(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_window_geom g = {0};
    char buf[8];
    convt_plan p;
    if (conv_transpose_prepare(layer, &g, buf, sizeof buf) ||
        !convt_plan_of(&g, plxk_isa_of(compute), &p)) {
        return 0;
    }
    size_t gemm = plxk_gemm_ws(compute, (int64_t)p.rows, (int64_t)p.width, g.c / g.group);
    return gemm == SIZE_MAX || p.col > SIZE_MAX - gemm ? SIZE_MAX : p.col + gemm;
}

/* The input pixels iw whose output column iw * s1 + off_w lies inside
 * the output row: [*lo, *hi). */
static void convt_columns(const plx_window_geom *g, int64_t off_w, int64_t *lo, int64_t *hi) {
    int64_t s1 = g->s[1], out_w = g->out[1];
    *lo = off_w >= 0 ? 0 : (-off_w + s1 - 1) / s1;
    *hi = out_w - off_w <= 0 ? 0 : (out_w - off_w + s1 - 1) / s1;
    *hi = *hi < g->in[1] ? *hi : g->in[1];
}

/* dst[iw * s1] += src[iw] for iw in [l, h) (dst and src at iw = 0). */
static void convt_add(float *dst, const float *src, int64_t s1, int64_t l, int64_t h) {
    if (s1 == 1) {
        for (int64_t iw = l; iw < h; iw++) {
            dst[iw] += src[iw];
        }
    } else {
        for (int64_t iw = l; iw < h; iw++) {
            dst[iw * s1] += src[iw];
        }
    }
}

/* Adds row `row` of a slab of col (input pixels [j0, j0 + cols) of the
 * group's image) into output channel plane y through tap `tap` = (t * kh
 * + i) * kw + j (t the depth tap, 0 but in a 3-D layer); with `next` (not
 * NULL), the row of tap + 1 too, which must be tap (t, i, j + 1) of a
 * layer with column stride 2 and dilation 1: the two land on the
 * neighbouring columns 2 iw + off_w and 2 iw + off_w + 1, added in one
 * loop whose stores are contiguous. (Alone, each added every other float
 * of the output row, which the compiler left scalar: a 2x2 stride-2
 * ConvTranspose spent half its time there.) */
static void convt_scatter_row(const plx_window_geom *g, const float *row, const float *next,
                              int64_t tap, int64_t j0, int64_t cols, float *y) {
    int64_t t = tap / (g->k[0] * g->k[1]), i = tap / g->k[1] % g->k[0], j = tap % g->k[1];
    int64_t off_d = t * g->d[2] - g->pb[2];
    int64_t off_h = i * g->d[0] - g->pb[0], off_w = j * g->d[1] - g->pb[1];
    int64_t s1 = g->s[1], in_w = g->in[1], out_w = g->out[1];
    int64_t lo, hi, lo1 = 0, hi1 = 0;
    convt_columns(g, off_w, &lo, &hi);
    if (next) {
        convt_columns(g, off_w + 1, &lo1, &hi1);
    }
    for (int64_t p = j0; p < j0 + cols;) {
        int64_t q = p / in_w, a = p % in_w; /* input row q = id * H + ih */
        int64_t e = j0 + cols - p < in_w - a ? a + (j0 + cols - p) : in_w;
        int64_t od = q / g->in[0] * g->s[2] + off_d, oh = q % g->in[0] * g->s[0] + off_h;
        if (oh >= 0 && oh < g->out[0] && od >= 0 && od < g->out[2]) {
            /* at iw = 0 of this input row */
            const float *src = row + (p - j0) - a;
            float *dst = y + (od * g->out[0] + oh) * out_w + off_w;
            int64_t l = plxk_clamp_i64(lo, a, e), h = plxk_clamp_i64(hi, l, e);
            if (!next) {
                convt_add(dst, src, s1, l, h);
            } else {
                /* tap j + 1's column is one further right, so its pixels
                 * start and end no later: l1 <= l and h1 <= h. Both on
                 * [l, h1), j + 1 alone on [l1, l), j alone on [h1, h). */
                const float *src1 = next + (p - j0) - a;
                int64_t l1 = plxk_clamp_i64(lo1, a, e), h1 = plxk_clamp_i64(hi1, l1, e);
                int64_t both = h1 > l ? h1 : l;
                for (int64_t iw = l; iw < both; iw++) {
                    dst[2 * iw] += src[iw];
                    dst[2 * iw + 1] += src1[iw];
                }
                convt_add(dst + 1, src1, 2, l1, l < h1 ? l : h1);
                convt_add(dst, src, 2, both, h);
            }
        }
        p += e - a;
    }
}

/* One slab's scatter, a task per output channel of the group. */
typedef struct convt_scatter_job {
    const plx_window_geom *g;
    const float *col;      /* the slab: rows of `cols` floats */
    int64_t taps, j0, cols;
    int64_t plane;         /* floats of an output channel plane */
    float *yg;             /* the group's first output channel */
} convt_scatter_job;

static void convt_scatter_channel(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const convt_scatter_job *job = ctx;
    const plx_window_geom *g = job->g;
    /* taps (t, i, j) and (t, i, j + 1) in pairs at column stride 2 */
    bool pairs = g->s[1] == 2 && g->d[1] == 1 && g->k[1] % 2 == 0;
    for (int64_t t = 0; t < job->taps; t += pairs ? 2 : 1) {
        int64_t r = (int64_t)task * job->taps + t;
        convt_scatter_row(g, job->col + r * job->cols, pairs ? job->col + (r + 1) * job->cols
                                                             : NULL,
                          t, job->j0, job->cols, job->yg + (int64_t)task * job->plane);
    }
}

bool plxk_run_conv_transpose(const plxk_kernel_args *args) {
    char why[256];
    plx_window_geom g = {0};
    if (conv_transpose_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    convt_plan plan;
    if (!convt_plan_of(&g, plxk_isa_of(args->compute), &plan)) {
        return plxk_fail(args, "conv_transpose: the %s variant was not compiled in",
                            plxk_isa_name(plxk_isa_of(args->compute)));
    }
    size_t left;
    float *col = plxk_ws_at(args, 0, &left);
    if (!col || left < plan.col) {
        return plxk_fail(args, "conv_transpose: a workspace of %zu bytes is too small "
                                  "for a slab's %zu", args->workspace_size, plan.col);
    }
    void *ws = plxk_ws_at(args, plan.col, &left);
    const float *x = args->inputs[0];
    const float *w = args->inputs[1];
    const float *b = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    int64_t cg = g.c / g.group, mg = g.m / g.group, taps = plxk_geom_taps(&g);
    int64_t pixels = plxk_geom_in_plane(&g), plane = plxk_geom_out_plane(&g);
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t m = 0; m < g.m; m++) {
            float *ym = y + (n * g.m + m) * plane, v = b ? b[m] : 0.0f;
            for (int64_t o = 0; o < plane; o++) {
                ym[o] = v;
            }
        }
        for (int64_t gi = 0; gi < g.group; gi++) {
            const float *xg = x + (n * g.c + gi * cg) * pixels;
            float *yg = y + (n * g.m + gi * mg) * plane;
            for (int64_t j0 = 0; j0 < pixels; j0 += (int64_t)plan.width) {
                int64_t cols = pixels - j0 < (int64_t)plan.width ? pixels - j0
                                                                 : (int64_t)plan.width;
                plxk_gemm_args ga = {0};
                ga.m = plan.rows;
                ga.n = (size_t)cols;
                ga.k = (size_t)cg;
                ga.alpha = 1.0f;
                ga.a = w + gi * cg * mg * taps;
                ga.a_rs = 1;
                ga.a_cs = (ptrdiff_t)(mg * taps);
                ga.b = xg + j0;
                ga.b_rs = (ptrdiff_t)pixels;
                ga.b_cs = 1;
                ga.c = col;
                ga.ldc = (size_t)cols;
                if (!plxk_product(args, &ga, ws, left, "conv_transpose")) {
                    return false;
                }
                convt_scatter_job job = {&g, col, taps, j0, cols, plane, yg};
                plxk_pool_run(plxk_pool_of(args->compute), (size_t)mg,
                              (double)plan.rows * (double)cols / 2.0, convt_scatter_channel,
                              &job);
            }
        }
    }
    return true;
}

/* What a conv prepares: a quantized conv, its weights packed for the int8
 * GEMM; a float conv on the GEMM, every group's W_g packed as op(A)
 * (plxk_gemm_pack_a), each group conv_packed_group_bytes apart, when W is
 * constant. */
size_t plxk_prepare_conv(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                         size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_prepare_qconv(layer, compute, out, size);
    }
    plx_window_geom g = {0};
    char buf[8];
    const float *w = layer->input_constants ? layer->input_constants[1] : NULL;
    if (!w || conv_prepare(layer, &g, buf, sizeof buf)) {
        return 0;
    }
    plxk_isa isa = plxk_isa_of(compute);
    size_t per = conv_packed_group_bytes(&g, isa);
    if (per == 0 || per > SIZE_MAX / (size_t)g.group) {
        return 0;
    }
    size_t need = per * (size_t)g.group;
    if (!out) {
        return need;
    }
    if (size < need) {
        return 0;
    }
    int64_t mg = g.m / g.group, k = g.c / g.group * plxk_geom_taps(&g);
    for (int64_t gi = 0; gi < g.group; gi++) {
        plxk_gemm_args ga = {.m = (size_t)mg, .k = (size_t)k, .a = w + gi * mg * k,
                             .a_rs = (ptrdiff_t)k, .a_cs = 1};
        if (!plxk_gemm_pack_a(isa, &ga, (float *)(void *)((char *)out + (size_t)gi * per),
                              per)) {
            return 0;
        }
    }
    return need;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW_WS_PREP(CONV, conv);
PLXK_ROW_WS(CONV_TRANSPOSE, conv_transpose);
