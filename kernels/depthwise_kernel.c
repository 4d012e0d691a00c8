/* The depthwise convolution kernel (depthwise.h), in plain C that the
 * compiler vectorises; meson compiles it once per instruction set, like
 * gemm_kernel.c, into the same per-ISA library, whose plxk_gemm_impl
 * points to it.
 *
 * Sums are made CHUNK outputs at a time in a stack array (in L1) while
 * every tap of the window adds its weight times a run of the input; then
 * the activation is applied and the chunk is stored once. (Tap by tap over
 * the whole plane, the output would go through L2 once per tap.) The runs
 * must be long for the vectors to fill, so there are two paths:
 *
 * - unit strides (the 3x3 stride-1 convs of MobileNet): the input is first
 *   copied into a zero-padded plane (the caller's scratch), in which every
 *   tap is one constant shift: output (oh, ow) at flat index oh * cols + ow
 *   reads padded[oh * cols + ow + kh * dil_h * cols + kw * dil_w]. So each
 *   tap is a single run over the whole plane, whatever its width (a 7x7
 *   plane is one run of 7 * cols), and the columns past out_w, computed
 *   from the next row's data, are simply not stored;
 * - otherwise, row by row on the input itself: each tap adds only to the
 *   outputs whose input column lies inside the row, and skips input rows
 *   outside the plane. */
#include <stddef.h>
#include <string.h>

#include "depthwise.h"
#include "gemm_kernel.h"

#define CHUNK 512 /* outputs summed at once: 2 KiB of stack */

static int64_t max_i64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

static int64_t min_i64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* acc[j] += w * x[j * stride] for j < n. Unit stride (the common 3x3
 * stride-1 conv) and stride 2 get loops of their own, so that the compiler
 * sees a constant stride and vectorises with plain loads (and shuffles). */
static void add_tap(float *restrict acc, const float *restrict x, int64_t stride, float w,
                    int64_t n) {
    if (stride == 1) {
        for (int64_t j = 0; j < n; j++) {
            acc[j] += w * x[j];
        }
    } else if (stride == 2) {
        for (int64_t j = 0; j < n; j++) {
            acc[j] += w * x[2 * j];
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            acc[j] += w * x[j * stride];
        }
    }
}

/* The activation and the store of one chunk. The bounds are locals so that
 * the loops vectorise (see update_c in gemm_kernel.c). */
static void store_chunk(const plxk_depthwise_plane *p, const float *restrict acc,
                        float *restrict y, int64_t n) {
    const float lo = p->lo, hi = p->hi, slope = p->slope;
    if (p->act == PLXK_ACT_RELU) {
        for (int64_t j = 0; j < n; j++) {
            y[j] = acc[j] < 0.0f ? 0.0f : acc[j]; /* NaN stays NaN */
        }
    } else if (p->act == PLXK_ACT_CLIP) {
        for (int64_t j = 0; j < n; j++) {
            y[j] = acc[j] < lo ? lo : acc[j] > hi ? hi : acc[j];
        }
    } else if (p->act == PLXK_ACT_LEAKY) {
        for (int64_t j = 0; j < n; j++) {
            y[j] = acc[j] < 0.0f ? slope * acc[j] : acc[j];
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            y[j] = acc[j];
        }
    }
}

/* Row by row, on the input itself (any strides). */
static void by_rows(const plxk_depthwise_plane *p) {
    const int64_t sw = p->stride_w;
    for (int64_t oh = 0; oh < p->out_h; oh++) {
        for (int64_t ow0 = 0; ow0 < p->out_w; ow0 += CHUNK) {
            int64_t n = min_i64(CHUNK, p->out_w - ow0);
            float acc[CHUNK];
            for (int64_t j = 0; j < n; j++) {
                acc[j] = p->bias;
            }
            for (int64_t kh = 0; kh < p->k_h; kh++) {
                int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dil_h;
                if (ih < 0 || ih >= p->in_h) {
                    continue; /* a row of padding */
                }
                const float *xr = p->x + ih * p->in_w;
                for (int64_t kw = 0; kw < p->k_w; kw++) {
                    int64_t off = kw * p->dil_w - p->pad_left, lo, hi;
                    plxk_window_columns(off, sw, p->in_w, p->out_w, &lo, &hi);
                    lo = max_i64(lo, ow0);
                    hi = min_i64(hi, ow0 + n);
                    if (lo < hi) {
                        add_tap(acc + (lo - ow0), xr + lo * sw + off, sw,
                                p->w[kh * p->k_w + kw], hi - lo);
                    }
                }
            }
            store_chunk(p, acc, p->y + oh * p->out_w + ow0, n);
        }
    }
}

/* Unit strides, through the zero-padded copy of the input in p->scratch
 * (rows x cols, plxk_depthwise_padded). */
static void padded(const plxk_depthwise_plane *p) {
    int64_t rows, cols;
    plxk_depthwise_padded(p, &rows, &cols);
    float *xp = p->scratch;
    int64_t right = cols - p->pad_left - p->in_w;
    memset(xp, 0, (size_t)(p->pad_top * cols) * sizeof *xp);
    for (int64_t ih = 0; ih < p->in_h; ih++) {
        float *row = xp + (p->pad_top + ih) * cols;
        memset(row, 0, (size_t)p->pad_left * sizeof *row);
        memcpy(row + p->pad_left, p->x + ih * p->in_w, (size_t)p->in_w * sizeof *row);
        memset(row + p->pad_left + p->in_w, 0, (size_t)right * sizeof *row);
    }
    int64_t below = p->pad_top + p->in_h;
    memset(xp + below * cols, 0, (size_t)((rows - below) * cols) * sizeof *xp);
    /* Flat outputs [0, end): the last one is (out_h - 1, out_w - 1). */
    int64_t end = (p->out_h - 1) * cols + p->out_w;
    for (int64_t q0 = 0; q0 < end; q0 += CHUNK) {
        int64_t n = min_i64(CHUNK, end - q0);
        float acc[CHUNK];
        for (int64_t j = 0; j < n; j++) {
            acc[j] = p->bias;
        }
        for (int64_t kh = 0; kh < p->k_h; kh++) {
            for (int64_t kw = 0; kw < p->k_w; kw++) {
                add_tap(acc, xp + q0 + kh * p->dil_h * cols + kw * p->dil_w, 1,
                        p->w[kh * p->k_w + kw], n);
            }
        }
        /* Store the chunk's part of each output row it spans. */
        for (int64_t oh = q0 / cols; oh * cols < q0 + n; oh++) {
            int64_t lo = max_i64(q0, oh * cols), hi = min_i64(q0 + n, oh * cols + p->out_w);
            if (lo < hi) {
                store_chunk(p, acc + (lo - q0), p->y + oh * p->out_w + (lo - oh * cols), hi - lo);
            }
        }
    }
}

void PLXK_ISA_SYMBOL(plxk_depthwise_)(const plxk_depthwise_plane *p) {
    if (p->scratch && plxk_depthwise_scratch(p) > 0) {
        padded(p);
    } else {
        by_rows(p);
    }
}
