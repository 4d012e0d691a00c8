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
 * - strides up to PLXK_DEPTHWISE_PHASE_STRIDE_MAX (MobileNet's 3x3 and
 *   5x5, stride 1 or 2): the input is first copied, zero-padded, into
 *   stride_h x stride_w phase planes (the caller's scratch;
 *   plxk_depthwise_phases), phase (ph, pw) holding the padded rows ph,
 *   ph + stride_h, ... and columns pw, pw + stride_w, ... In its phase
 *   every tap is one constant shift: output (oh, ow), at flat index
 *   oh * cols + ow, reads for tap (kh, kw), with r = kh dil_h and
 *   c = kw dil_w, phase (r % stride_h, c % stride_w) at that index plus
 *   (r / stride_h) cols + c / stride_w. So each tap is a single unit-stride
 *   run over the whole plane, whatever its width (a 7x7 plane is one run of
 *   7 * cols), and the columns past out_w, computed from the next row's
 *   data, are simply not stored. (Row by row with stride 2, a 40x40 plane's
 *   5x5 taps were 25 runs of 20 per row: 3.5 times ONNX Runtime's time.)
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

/* GCC turns a plain copy or fill loop into a call to memcpy or memset
 * (loop distribution into library patterns). The runs here are a plane's
 * rows or parts of them, a few hundred bytes, thousands per conv, and the
 * calls took a third of a 3x3 conv of 64 planes of 80x80; SHORT_RUNS keeps
 * the loops inline in the functions that make such runs. */
#if defined(__GNUC__) && !defined(__clang__)
#define SHORT_RUNS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define SHORT_RUNS
#endif

/* The activation and the store of one chunk. The bounds are locals so that
 * the loops vectorise (see update_c in gemm_kernel.c). */
SHORT_RUNS static void store_chunk(const plxk_depthwise_plane *p, const float *restrict acc,
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

/* add_tap(acc, x, 1, w, n), never inlined: the taps of several phases
 * (below) address them with divisions, which are not affine in the tap
 * loop, and GCC, inlining, moved that loop inside the loop over outputs,
 * which then ran scalar (a 5x5 conv of 20x20 planes four times slower). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void add_run(float *restrict acc, const float *restrict x, float w, int64_t n) {
    add_tap(acc, x, 1, w, n);
}

/* Stores flat outputs [q0, q0 + n) of the phased path (sums in acc): the
 * part of each output row they span, without the columns past out_w. */
static void store_flat(const plxk_depthwise_plane *p, const float *acc, int64_t q0, int64_t n,
                       int64_t cols) {
    for (int64_t oh = q0 / cols; oh * cols < q0 + n; oh++) {
        int64_t lo = max_i64(q0, oh * cols), hi = min_i64(q0 + n, oh * cols + p->out_w);
        if (lo < hi) {
            store_chunk(p, acc + (lo - q0), p->y + oh * p->out_w + (lo - oh * cols), hi - lo);
        }
    }
}

#if defined(__GNUC__)
/* Blocks of BLOCK_VECS vectors of outputs whose sums stay in registers
 * over all the taps (GNU vectors of the ISA's width, as the GEMM's
 * micro-kernel), for kernels of up to BLOCK_MAX_TAPS taps. Summed in a
 * stack array a tap at a time, every tap loaded and stored the sums again:
 * a 3x3 conv of 64 planes of 80x80 took 1.9 times ONNX Runtime's time
 * (AVX-512, Zen 4). */
#if defined(PLXK_GEMM_ISA_AVX512)
#define BLOCK_VL 16
#elif defined(PLXK_GEMM_ISA_AVX2)
#define BLOCK_VL 8
#else
#define BLOCK_VL 4
#endif
#define BLOCK_VECS 8
#define BLOCK (BLOCK_VL * BLOCK_VECS)
#define BLOCK_MAX_TAPS 64
typedef float block_vfloat __attribute__((vector_size(BLOCK_VL * sizeof(float))));

_Static_assert(BLOCK - 1 <= PLXK_DEPTHWISE_SCRATCH_SLACK, "the last block reads the slack");

/* out[0 .. BLOCK) = bias + sum over the taps t < count of w[t] times the
 * run at taps[t] + q0. */
static inline void block_sums(const float *const *taps, const float *w, int64_t count,
                              int64_t q0, float bias, float *out) {
    block_vfloat acc[BLOCK_VECS];
    for (int v = 0; v < BLOCK_VECS; v++) {
        acc[v] = (block_vfloat){0} + bias;
    }
    for (int64_t t = 0; t < count; t++) {
        const float *src = taps[t] + q0;
        block_vfloat wv = (block_vfloat){0} + w[t];
        for (int v = 0; v < BLOCK_VECS; v++) {
            block_vfloat x;
            memcpy(&x, src + v * BLOCK_VL, sizeof x);
            acc[v] += wv * x;
        }
    }
    memcpy(out, acc, sizeof acc);
}
#endif

/* copy_columns' two-operand shuffle is GCC's __builtin_shuffle (Clang
 * has only constant-index shuffles); other compilers take the loops. */
#if defined(__GNUC__) && !defined(__clang__)
#define COPY_COLUMNS 1
typedef int block_vint __attribute__((vector_size(BLOCK_VL * sizeof(int))));

/* dst[c] = src[stride c] for c < n, stride 1 or 2, a vector at a time
 * (for stride 2 from two loads and a shuffle) and the last vector
 * overlapping the one before, which leaves no scalar remainder and reads
 * nothing past src[stride (n - 1)]. A phase plane's rows are short (40
 * columns for an 80-wide input at stride 2), and the compiler's own loop
 * left 8 of each 40 to scalar code: the copy then took half of a
 * stride-2 3x3 conv. */
static inline void copy_columns(float *restrict dst, const float *restrict src, int64_t n,
                                int64_t stride) {
    if (n <= BLOCK_VL) {
        for (int64_t c = 0; c < n; c++) {
            dst[c] = src[c * stride];
        }
        return;
    }
    block_vfloat a, b;
    if (stride == 1) {
        for (int64_t c = 0; c < n; c += BLOCK_VL) {
            c = c + BLOCK_VL > n ? n - BLOCK_VL : c; /* the last overlaps */
            memcpy(&a, src + c, sizeof a);
            memcpy(dst + c, &a, sizeof a);
        }
        return;
    }
    block_vint even, odd;
    for (int i = 0; i < BLOCK_VL; i++) {
        even[i] = 2 * i;
        odd[i] = 2 * i + 1;
    }
    int64_t c = 0;
    for (; c + BLOCK_VL < n; c += BLOCK_VL) { /* reads up to src[2 c + 2 VL - 1] */
        memcpy(&a, src + 2 * c, sizeof a);
        memcpy(&b, src + 2 * c + BLOCK_VL, sizeof b);
        a = __builtin_shuffle(a, b, even);
        memcpy(dst + c, &a, sizeof a);
    }
    /* the last vector from src[2 c - 1 .. 2 n - 2], c = n - VL >= 1: its
     * values at the odd places */
    c = n - BLOCK_VL;
    memcpy(&a, src + 2 * c - 1, sizeof a);
    memcpy(&b, src + 2 * c - 1 + BLOCK_VL, sizeof b);
    a = __builtin_shuffle(a, b, odd);
    memcpy(dst + c, &a, sizeof a);
}
#endif

/* Through the phase planes in p->scratch (rows x cols each,
 * plxk_depthwise_phases). */
SHORT_RUNS static void phased(const plxk_depthwise_plane *p) {
    int64_t rows, cols;
    plxk_depthwise_phases(p, &rows, &cols);
    const int64_t sh = p->stride_h, sw = p->stride_w, plane = rows * cols;
    for (int64_t ph = 0; ph < sh; ph++) {
        for (int64_t pw = 0; pw < sw; pw++) {
            float *xp = p->scratch + (ph * sw + pw) * plane;
            /* the phase's columns c whose input column c sw + off is in X */
            int64_t off = pw - p->pad_left, lo, hi;
            plxk_window_columns(off, sw, p->in_w, cols, &lo, &hi);
            for (int64_t r = 0; r < rows; r++) {
                float *row = xp + r * cols;
                int64_t ih = r * sh + ph - p->pad_top;
                if (ih < 0 || ih >= p->in_h) {
                    memset(row, 0, (size_t)cols * sizeof *row);
                    continue;
                }
                const float *restrict xr = p->x + ih * p->in_w;
                for (int64_t c = 0; c < lo; c++) {
                    row[c] = 0.0f;
                }
#if defined(COPY_COLUMNS)
                if (sw <= 2) {
                    copy_columns(row + lo, xr + lo * sw + off, hi - lo, sw);
                } else
#endif
                if (sw == 1) {
                    for (int64_t c = lo; c < hi; c++) {
                        row[c] = xr[c + off];
                    }
                } else if (sw == 2) { /* a constant stride, which vectorises */
                    for (int64_t c = lo; c < hi; c++) {
                        row[c] = xr[2 * c + off];
                    }
                } else {
                    for (int64_t c = lo; c < hi; c++) {
                        row[c] = xr[c * sw + off];
                    }
                }
                for (int64_t c = hi; c < cols; c++) {
                    row[c] = 0.0f;
                }
            }
        }
    }
    /* Flat outputs [0, end): the last one is (out_h - 1, out_w - 1). */
    int64_t end = (p->out_h - 1) * cols + p->out_w, q = 0;
#if defined(__GNUC__)
    int64_t count = p->k_h * p->k_w;
    if (count <= BLOCK_MAX_TAPS) {
        /* the last block of sums reads up to BLOCK - 1 floats past the
         * planes: zeros, so that those lanes compute nothing odd */
        for (int64_t i = 0; i < PLXK_DEPTHWISE_SCRATCH_SLACK; i++) {
            p->scratch[sh * sw * plane + i] = 0.0f;
        }
        /* each tap's start: phase (r % sh, c % sw), row r / sh, column
         * c / sw, counted without divisions (which, per plane, took a
         * tenth of a 5x5 conv of 20x20 planes) */
        const float *taps[BLOCK_MAX_TAPS];
        int64_t rq = 0, rr = 0;
        for (int64_t kh = 0; kh < p->k_h; kh++) {
            int64_t cq = 0, cr = 0;
            for (int64_t kw = 0; kw < p->k_w; kw++) {
                taps[kh * p->k_w + kw] = p->scratch + (rr * sw + cr) * plane + rq * cols + cq;
                for (cr += p->dil_w; cr >= sw; cr -= sw) {
                    cq++;
                }
            }
            for (rr += p->dil_h; rr >= sh; rr -= sh) {
                rq++;
            }
        }
        /* the last block partly stored: the rest tap by tap (below) took
         * a tenth of that conv, and a vector at a time, each vector's sum
         * waiting on the one before, a sixth */
        float sums[BLOCK];
        for (; q < end; q += BLOCK) {
            block_sums(taps, p->w, count, q, p->bias, sums);
            store_flat(p, sums, q, min_i64(BLOCK, end - q), cols);
        }
    }
#endif
    /* the rest (or all, for a larger kernel) CHUNK at a time, tap by tap */
    for (int64_t q0 = q; q0 < end; q0 += CHUNK) {
        int64_t n = min_i64(CHUNK, end - q0);
        float acc[CHUNK];
        for (int64_t j = 0; j < n; j++) {
            acc[j] = p->bias;
        }
        for (int64_t kh = 0; kh < p->k_h; kh++) {
            int64_t r = kh * p->dil_h;
            for (int64_t kw = 0; kw < p->k_w; kw++) {
                int64_t c = kw * p->dil_w;
                float w = p->w[kh * p->k_w + kw];
                if (sh == 1 && sw == 1) { /* one phase: affine, inlined */
                    add_tap(acc, p->scratch + q0 + r * cols + c, 1, w, n);
                } else {
                    add_run(acc, p->scratch + ((r % sh) * sw + c % sw) * plane + q0 +
                                     (r / sh) * cols + c / sw,
                            w, n);
                }
            }
        }
        store_flat(p, acc, q0, n, cols);
    }
}

void PLXK_ISA_SYMBOL(plxk_depthwise_)(const plxk_depthwise_plane *p) {
    if (p->scratch && plxk_depthwise_scratch(p) > 0) {
        phased(p);
    } else {
        by_rows(p);
    }
}
