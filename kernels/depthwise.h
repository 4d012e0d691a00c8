/* cpu_ref's depthwise convolution kernel (a conv with one input channel per
 * group): one output plane of one channel at a time, the kernel that
 * kernels_conv.c runs on the pool for every (image, channel).
 *
 * Like the GEMM's micro-kernel, its source (depthwise_kernel.c) is compiled
 * once per instruction set and the variant is the backend's `isa`: the
 * loops are plain C that the compiler vectorises, and the wider the
 * vectors, the faster (the baseline x86-64 build has 4 floats per vector,
 * AVX-512 16). */
#ifndef PLXK_DEPTHWISE_H
#define PLXK_DEPTHWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "gemm.h"

/* One output plane: y[oh][ow] = act(bias + sum over kh < k_h, kw < k_w of
 * w[kh][kw] * x[oh * stride_h - pad_top + kh * dil_h][ow * stride_w -
 * pad_left + kw * dil_w]), input positions outside the plane being 0 (the
 * padding). Planes are dense row-major; sizes, strides and dilations >= 1,
 * pads >= 0, and every product of them small enough for int64_t (the
 * caller's window geometry guarantees it). */
typedef struct plxk_depthwise_plane {
    const float *x;
    int64_t in_h, in_w;
    const float *w;
    int64_t k_h, k_w;
    int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    float bias;
    plxk_activation act;
    float lo, hi; /* PLXK_ACT_CLIP's bounds */
    float slope;  /* PLXK_ACT_LEAKY's */
    float *y;
    int64_t out_h, out_w;
    /* plxk_depthwise_scratch(plane) floats of scratch (64-byte aligned
     * is best), not shared with a concurrent call; NULL when that is 0. */
    float *scratch;
} plxk_depthwise_plane;

/* The most floats of scratch the phase path uses: 1 MiB, so that it stays
 * in L2 while the taps read it. */
#define PLXK_DEPTHWISE_SCRATCH_MAX ((int64_t)1 << 18)
/* Floats past the phase planes that the kernel's last block of sums may
 * read (8 vectors of 16 floats, AVX-512's, starting at the last output);
 * it zeroes them, and the sums they feed are not stored. */
#define PLXK_DEPTHWISE_SCRATCH_SLACK 128
/* The largest stride the phase path takes (it copies stride_h x stride_w
 * phases of the input, of which a small window reads few). */
#define PLXK_DEPTHWISE_PHASE_STRIDE_MAX 4

/* The phase planes of the flat-run path (see depthwise_kernel.c): the
 * input zero-padded as far as the windows reach, split by the strides into
 * stride_h x stride_w planes (phase (ph, pw) holds the padded rows ph,
 * ph + stride_h, ... and the columns pw, pw + stride_w, ...), each of
 * *rows x *cols floats. The caller sizes the scratch with it, the kernel
 * lays it out. */
static inline void plxk_depthwise_phases(const plxk_depthwise_plane *p, int64_t *rows,
                                         int64_t *cols) {
    int64_t reach_h = (p->out_h - 1) * p->stride_h + (p->k_h - 1) * p->dil_h + 1;
    int64_t reach_w = (p->out_w - 1) * p->stride_w + (p->k_w - 1) * p->dil_w + 1;
    *rows = (reach_h + p->stride_h - 1) / p->stride_h;
    *cols = (reach_w + p->stride_w - 1) / p->stride_w;
}

/* Floats of scratch a plane needs: the phase planes when both strides are
 * at most PLXK_DEPTHWISE_PHASE_STRIDE_MAX and they take at most
 * PLXK_DEPTHWISE_SCRATCH_MAX floats, else 0 (the kernel then works row by
 * row on the input itself). Needs only the sizes, strides, dilations and
 * pads. */
static inline int64_t plxk_depthwise_scratch(const plxk_depthwise_plane *p) {
    if (p->stride_h > PLXK_DEPTHWISE_PHASE_STRIDE_MAX ||
        p->stride_w > PLXK_DEPTHWISE_PHASE_STRIDE_MAX || p->out_h < 1 || p->out_w < 1) {
        return 0;
    }
    int64_t rows, cols, phases = p->stride_h * p->stride_w;
    plxk_depthwise_phases(p, &rows, &cols);
    if (rows > PLXK_DEPTHWISE_SCRATCH_MAX || cols > PLXK_DEPTHWISE_SCRATCH_MAX ||
        rows * cols > PLXK_DEPTHWISE_SCRATCH_MAX / phases) {
        return 0;
    }
    return phases * rows * cols + PLXK_DEPTHWISE_SCRATCH_SLACK;
}

/* The outputs [*lo, *hi) of [0, out) of a row whose input column
 * ow * stride + off lies in [0, in): the outputs one tap of a window (at
 * offset off = kw * dilation - pad) reads inside the row. stride >= 1. */
static inline void plxk_window_columns(int64_t off, int64_t stride, int64_t in, int64_t out,
                                          int64_t *lo, int64_t *hi) {
    int64_t first = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t end = in - off <= 0 ? 0 : (in - off - 1) / stride + 1;
    *lo = first < out ? first : out;
    *hi = end < *lo ? *lo : end < out ? end : out;
}

/* Computes one plane with variant `isa`; false, touching nothing, when the
 * variant is not supported (plxk_isa_supported). Allocates nothing;
 * thread-safe. */
bool plxk_depthwise(plxk_isa isa, const plxk_depthwise_plane *plane);

#endif /* PLXK_DEPTHWISE_H */
