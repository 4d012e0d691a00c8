/* The GEMM's packing, micro-kernel and epilogue, in plain C that the
 * compiler vectorises. meson compiles this file once per instruction set,
 * defining one of PLXK_GEMM_ISA_PORTABLE, _AVX2 or _AVX512 together with
 * that set's -m flags; each build exports its own plxk_gemm_impl_<isa>
 * (gemm_kernel.h) with block sizes chosen for its registers and caches.
 *
 * A region of C (any number of rows, at most NC columns) is computed over
 * K in passes of KC: pack op(B)'s KC x NC block as NR-wide column panels,
 * then, for each MC block of rows, op(A)'s MC x KC block as MR-high row
 * panels (zero-padded at the edges), and for every NR panel of B and every
 * MR panel of A run the micro-kernel and fold its MR x NR result into C;
 * the last panel of B, when narrower than NR, only as wide as it is
 * (edge_tiles). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "gemm_kernel.h"

#if defined(__SSE__)
#include <immintrin.h>
#endif

/* Block sizes. MR x NR accumulators must fit the vector registers (AVX-512:
 * 8 x 2 zmm of 32; AVX2: 6 x 2 ymm of 16; SSE2: 4 x 2 xmm of 16); a KC x NR
 * panel of B stays in L1, the MC x KC block of A in L2, and the KC x NC
 * panel of B in L2/L3. */
#if defined(PLXK_GEMM_ISA_AVX512)
#define VL 16 /* floats per vector register */
#define MR 8
#define NR 32
#define KC 256
#define MC 128
#define NC 2048
#elif defined(PLXK_GEMM_ISA_AVX2)
#define VL 8
#define MR 6
#define NR 16
#define KC 256
#define MC 120
#define NC 2048
#elif defined(PLXK_GEMM_ISA_PORTABLE)
#define VL 4
#define MR 4
#define NR 8
#define KC 256
#define MC 128
#define NC 2048
#else
#error "define PLXK_GEMM_ISA_PORTABLE, _AVX2 or _AVX512"
#endif

static size_t min_size(size_t a, size_t b) {
    return a < b ? a : b;
}

/* Packs op(A) rows [i0, i0+mc) x K [p0, p0+kc) as MR-row panels: panel r
 * holds, for p = 0..kc-1, the MR values of column p (rows past mc are 0).
 * With i0 = p0 = 0, mc = M and kc = K, the layout of plxk_gemm_pack_a.
 * A row-major A (a_cs = 1) is transposed in blocks of MR rows x PACK_A_BLOCK
 * columns, read as contiguous rows into a local block first: in that form
 * the compiler turns the transposition into vector shuffles, about three
 * times faster than copying value by value. */
#define PACK_A_BLOCK 16
#define NV (NR / VL) /* vectors per row of the tile */

static void pack_a(const plxk_gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *restrict out) {
    for (size_t ir = 0; ir < mc; ir += MR) {
        size_t mr = min_size(MR, mc - ir);
        float *restrict panel = out + ir * kc;
        const float *rows = g->a + (ptrdiff_t)(i0 + ir) * g->a_rs + (ptrdiff_t)p0 * g->a_cs;
        size_t p = 0;
        if (mr == MR && g->a_cs == 1) {
            for (; p + PACK_A_BLOCK <= kc; p += PACK_A_BLOCK) {
                float block[MR][PACK_A_BLOCK];
                for (size_t i = 0; i < MR; i++) {
                    memcpy(block[i], rows + (ptrdiff_t)i * g->a_rs + (ptrdiff_t)p,
                           sizeof block[i]);
                }
                for (size_t q = 0; q < PACK_A_BLOCK; q++) {
                    for (size_t i = 0; i < MR; i++) {
                        panel[(p + q) * MR + i] = block[i][q];
                    }
                }
            }
        }
        for (size_t i = 0; i < MR; i++) {
            if (i < mr) {
                const float *row = rows + (ptrdiff_t)i * g->a_rs;
                for (size_t q = p; q < kc; q++) {
                    panel[q * MR + i] = row[(ptrdiff_t)q * g->a_cs];
                }
            } else {
                for (size_t q = p; q < kc; q++) {
                    panel[q * MR + i] = 0.0f;
                }
            }
        }
    }
}

/* dst[0..NR) = src[0..NR): a panel row. Written as vector loads and
 * stores where GNU vectors exist; as a plain loop, GCC turned it into a
 * call to memmove (or a rep movs) per row. */
#if defined(__GNUC__)
typedef float vfloat __attribute__((vector_size(VL * sizeof(float))));

static inline void copy_nr(float *restrict dst, const float *restrict src) {
    for (size_t v = 0; v < NV; v++) {
        vfloat x;
        memcpy(&x, src + v * VL, sizeof x);
        memcpy(dst + v * VL, &x, sizeof x);
    }
}
#else
static inline void copy_nr(float *restrict dst, const float *restrict src) {
    for (size_t j = 0; j < NR; j++) {
        dst[j] = src[j];
    }
}
#endif

/* Packs op(B) K [p0, p0+kc) x columns [j0, j0+nc) as NR-column panels:
 * panel c holds, for p = 0..kc-1, the NR values of row p (columns past nc
 * are 0). */
static void pack_b(const plxk_gemm_args *g, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *restrict out) {
    if (g->b_cs == 1) {
        /* op(B)'s rows are contiguous: read each row once, in order (a
         * panel at a time would read a few cache lines per row from rows
         * apart, which the hardware prefetcher does not follow), and
         * deal it out to the panels */
        size_t full = nc / NR * NR;
        for (size_t p = 0; p < kc; p++) {
            const float *row = g->b + (ptrdiff_t)(p0 + p) * g->b_rs + (ptrdiff_t)j0;
            for (size_t jr = 0; jr < full; jr += NR) {
                copy_nr(out + jr * kc + p * NR, row + jr);
            }
            if (full < nc) {
                float *dst = out + full * kc + p * NR;
                for (size_t j = 0; j < NR; j++) {
                    dst[j] = full + j < nc ? row[full + j] : 0.0f;
                }
            }
        }
        return;
    }
    for (size_t jr = 0; jr < nc; jr += NR) {
        size_t nr = min_size(NR, nc - jr);
        float *panel = out + jr * kc;
        if (g->b_rs == 1 && g->b_cs != 1) {
            /* op(B)'s columns are contiguous (a weight matrix read
             * transposed): each column read along p, written down the
             * panel */
            for (size_t j = 0; j < NR; j++) {
                const float *col = g->b + (ptrdiff_t)p0 + (ptrdiff_t)(j0 + jr + j) * g->b_cs;
                if (j < nr) {
                    for (size_t p = 0; p < kc; p++) {
                        panel[p * NR + j] = col[p];
                    }
                } else {
                    for (size_t p = 0; p < kc; p++) {
                        panel[p * NR + j] = 0.0f;
                    }
                }
            }
            continue;
        }
        for (size_t p = 0; p < kc; p++) {
            const float *row = g->b + (ptrdiff_t)(p0 + p) * g->b_rs +
                               (ptrdiff_t)(j0 + jr) * g->b_cs;
            float *dst = panel + p * NR;
            for (size_t j = 0; j < NR; j++) {
                dst[j] = j < nr ? row[(ptrdiff_t)j * g->b_cs] : 0.0f;
            }
        }
    }
}

/* acc = the kc-long product of an A panel (kc x MR) and a B panel (kc x
 * NR): every step multiplies one broadcast A value by a row of B into a
 * row of accumulators.
 *
 * With GCC and Clang the accumulators are vectors of VL floats (the
 * register width of the ISA; GNU vector extensions, which compile to the
 * same instructions as the vectoriser would), because GCC does not keep a
 * plain float acc[MR][NR] in registers across the K loop: it stores it to
 * the stack on every step. Other compilers get the plain loop. Inlined
 * into its callers, so that acc stays in registers after the loop too. */
#if defined(__GNUC__)
_Static_assert(NV == 2, "micro_kernel's narrow form computes one vector of the two");

static inline __attribute__((always_inline)) void
k_loop(size_t kc, const float *restrict a, const float *restrict b, ptrdiff_t ldb,
       vfloat acc[MR][NV], size_t nv) {
    for (size_t i = 0; i < MR; i++) {
        for (size_t v = 0; v < nv; v++) {
            acc[i][v] = (vfloat){0};
        }
    }
    for (size_t p = 0; p < kc; p++) {
        vfloat bv[NV];
        for (size_t v = 0; v < nv; v++) {
            /* NR is a multiple of VL; packed panels are 64-byte aligned,
             * rows of B read in place need not be */
            memcpy(&bv[v], b + (ptrdiff_t)p * ldb + (ptrdiff_t)(v * VL), sizeof bv[v]);
        }
        const float *ap = a + p * MR;
        for (size_t i = 0; i < MR; i++) {
            vfloat ai = ap[i] - (vfloat){0}; /* broadcast; x - 0 is exactly x */
            for (size_t v = 0; v < nv; v++) {
                acc[i][v] += ai * bv[v];
            }
        }
    }
}

/* The first nv * VL columns of the tile (nv is 1 or NV); the others are
 * left as they are. */
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         ptrdiff_t ldb, float acc_out[MR][NR], size_t nv) {
    vfloat acc[MR][NV];
    if (nv == NV) {
        k_loop(kc, a, b, ldb, acc, NV);
    } else {
        k_loop(kc, a, b, ldb, acc, 1);
    }
    for (size_t i = 0; i < MR; i++) {
        for (size_t v = 0; v < nv; v++) {
            memcpy(&acc_out[i][v * VL], &acc[i][v], sizeof acc[i][v]);
        }
    }
}
#else
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         ptrdiff_t ldb, float acc_out[MR][NR], size_t nv) {
    float acc[MR][NR] = {{0}};
    for (size_t p = 0; p < kc; p++) {
        for (size_t i = 0; i < MR; i++) {
            float ai = a[p * MR + i];
            for (size_t j = 0; j < NR; j++) {
                acc[i][j] += ai * b[(ptrdiff_t)p * ldb + (ptrdiff_t)j];
            }
        }
    }
    for (size_t i = 0; i < MR; i++) {
        memcpy(acc_out[i], acc[i], nv * VL * sizeof acc[i][0]);
    }
}
#endif

/* Folds an mr x nr result of one KC pass into C at (i0, j0): the first
 * pass applies beta, later ones accumulate, the last adds the bias and
 * applies the activation. Each step is its own simple loop over the row,
 * over all NR columns where only registers are touched, so that it
 * vectorises: with a small K (a pointwise conv has K = input channels)
 * this runs about as often per flop as the micro-kernel's K loop, and a
 * scalar epilogue would cost more than the product. The arguments are
 * copied into locals first: read through `g`, they might alias the stores
 * to C, and the compiler would then keep every loop scalar. */
#if defined(__GNUC__)
typedef int vint __attribute__((vector_size(VL * sizeof(int))));

/* m ? a : b per lane, m from a vector comparison (all ones or zeros). */
static inline vfloat vselect(vint m, vfloat a, vfloat b) {
    return (vfloat)((m & (vint)a) | (~m & (vint)b));
}

/* max(lo, x) and min(hi, x) per lane, NaN kept, as plxk_gemm_activate's
 * relu and clip. On x86, maxps and minps return their second operand when
 * either is NaN: one instruction each, where the select takes three (a
 * compare and two logic operations), which with a small K made the
 * epilogue a fifth of the time. */
#if defined(__AVX512F__) && VL == 16
#define VMINMAX(op, a, b) (vfloat) _mm512_##op##_ps((__m512)(a), (__m512)(b))
#elif defined(__AVX__) && VL == 8
#define VMINMAX(op, a, b) (vfloat) _mm256_##op##_ps((__m256)(a), (__m256)(b))
#elif defined(__SSE__) && VL == 4
#define VMINMAX(op, a, b) (vfloat) _mm_##op##_ps((__m128)(a), (__m128)(b))
#endif

static inline vfloat vmax_of(vfloat lo, vfloat x) {
#if defined(VMINMAX)
    return VMINMAX(max, lo, x);
#else
    return vselect(lo > x, lo, x);
#endif
}

static inline vfloat vmin_of(vfloat hi, vfloat x) {
#if defined(VMINMAX)
    return VMINMAX(min, hi, x);
#else
    return vselect(hi < x, hi, x);
#endif
}
#undef VMINMAX

/* One full row of a tile, C contiguous (the common case), in vector
 * operations: in the AVX2 build, GCC left the scalar loops below scalar,
 * and the epilogue then cost more than the product at small K. */
static void update_row(float *restrict c, const float *restrict acc, float alpha, float beta,
                       const float *restrict bias, ptrdiff_t bias_cs, plxk_activation act,
                       float lo, float hi, float slope) {
    for (size_t u = 0; u < NV; u++) {
        vfloat v, x;
        memcpy(&v, acc + u * VL, sizeof v);
        v *= alpha;
        if (beta != 0.0f) {
            memcpy(&x, c + u * VL, sizeof x);
            v += beta * x;
        }
        if (bias && bias_cs == 0) {
            v += *bias;
        } else if (bias) {
            memcpy(&x, bias + u * VL, sizeof x);
            v += x;
        }
        /* as plxk_gemm_activate: NaN stays NaN through each */
        if (act == PLXK_ACT_RELU) {
            v = vmax_of((vfloat){0}, v);
        } else if (act == PLXK_ACT_CLIP) {
            v = vmin_of((vfloat){0} + hi, vmax_of((vfloat){0} + lo, v));
        } else if (act == PLXK_ACT_LEAKY) {
            v = vselect(v < 0.0f, slope * v, v);
        }
        memcpy(c + u * VL, &v, sizeof v);
    }
}
#endif

static void update_c(const plxk_gemm_problem *pr, float acc[MR][NR], size_t i0, size_t j0,
                     size_t mr, size_t nr, bool first, bool last) {
    const plxk_gemm_args *g = &pr->args;
    const float alpha = g->alpha, beta = first ? g->beta : 1.0f, lo = g->lo, hi = g->hi;
    const float slope = g->slope;
    const float *bias = last ? g->bias : NULL;
    const plxk_activation act = last ? g->act : PLXK_ACT_NONE;
    const ptrdiff_t rs = pr->c_rs, cs = pr->c_cs, bias_rs = g->bias_rs, bias_cs = g->bias_cs;
    for (size_t i = 0; i < mr; i++) {
        float *restrict c = g->c + (ptrdiff_t)(i0 + i) * rs + (ptrdiff_t)j0 * cs;
#if defined(__GNUC__)
        if (cs == 1 && nr == NR && (!bias || bias_cs == 0 || bias_cs == 1)) {
            update_row(c, acc[i], alpha, beta,
                       bias ? bias + (ptrdiff_t)(i0 + i) * bias_rs + (ptrdiff_t)j0 * bias_cs
                            : NULL,
                       bias_cs, act, lo, hi, slope);
            continue;
        }
#endif
        float v[NR];
        for (size_t j = 0; j < NR; j++) {
            v[j] = alpha * acc[i][j];
        }
        if (beta != 0.0f && cs == 1) {
            for (size_t j = 0; j < nr; j++) {
                v[j] += beta * c[j];
            }
        } else if (beta != 0.0f) {
            for (size_t j = 0; j < nr; j++) {
                v[j] += beta * c[(ptrdiff_t)j * cs];
            }
        }
        if (bias) {
            const float *b = bias + (ptrdiff_t)(i0 + i) * bias_rs + (ptrdiff_t)j0 * bias_cs;
            if (bias_cs == 0) { /* one per row: conv's per output channel */
                float bi = *b;
                for (size_t j = 0; j < NR; j++) {
                    v[j] += bi;
                }
            } else {
                for (size_t j = 0; j < nr; j++) {
                    v[j] += b[(ptrdiff_t)j * bias_cs];
                }
            }
        }
        if (act == PLXK_ACT_RELU) {
            for (size_t j = 0; j < NR; j++) {
                v[j] = v[j] < 0.0f ? 0.0f : v[j];
            }
        } else if (act == PLXK_ACT_CLIP) {
            for (size_t j = 0; j < NR; j++) {
                v[j] = v[j] < lo ? lo : v[j] > hi ? hi : v[j];
            }
        } else if (act == PLXK_ACT_LEAKY) {
            for (size_t j = 0; j < NR; j++) {
                v[j] = v[j] < 0.0f ? slope * v[j] : v[j];
            }
        }
        if (cs == 1) {
            for (size_t j = 0; j < nr; j++) {
                c[j] = v[j];
            }
        } else {
            for (size_t j = 0; j < nr; j++) {
                c[(ptrdiff_t)j * cs] = v[j];
            }
        }
    }
}

#if defined(__GNUC__)
/* A full MR x NR tile of C with contiguous rows (C's row stride ldc):
 * the product and update_c's epilogue while the accumulators are still in
 * registers, without the round trip through memory that update_c's
 * interface costs (with a small K, as a pointwise conv's, that round trip
 * and update_c's per-row branches took as long as the product). beta is
 * this pass's (update_c's), bias NULL but on the last pass, where it
 * points at the tile's first row and column (bias_cs 0 or 1). */
static inline __attribute__((always_inline)) void
full_tile(size_t kc, const float *restrict a, const float *restrict b, ptrdiff_t ldb,
          float *restrict c, ptrdiff_t ldc, float alpha, float beta, const float *restrict bias,
          ptrdiff_t bias_rs, ptrdiff_t bias_cs, plxk_activation act, float lo, float hi,
          float slope) {
    vfloat acc[MR][NV];
    k_loop(kc, a, b, ldb, acc, NV);
    /* each step a loop over the whole tile, its condition outside: with
     * the conditions per vector, GCC kept the tile in registers but
     * branched ten times per vector */
#define TILE_LOOP(body)                                                                   \
    _Pragma("GCC unroll 16") for (size_t i = 0; i < MR; i++) {                            \
        _Pragma("GCC unroll 4") for (size_t v = 0; v < NV; v++) {                         \
            body;                                                                         \
        }                                                                                 \
    }
    vfloat y;
    if (alpha != 1.0f) {
        TILE_LOOP(acc[i][v] *= alpha)
    }
    if (beta != 0.0f) {
        TILE_LOOP(memcpy(&y, c + (ptrdiff_t)i * ldc + (ptrdiff_t)(v * VL), sizeof y);
                  acc[i][v] += beta * y)
    }
    if (bias && bias_cs == 0) {
        TILE_LOOP(acc[i][v] += bias[(ptrdiff_t)i * bias_rs])
    } else if (bias) {
        TILE_LOOP(memcpy(&y, bias + (ptrdiff_t)i * bias_rs + (ptrdiff_t)(v * VL), sizeof y);
                  acc[i][v] += y)
    }
    /* as plxk_gemm_activate: NaN stays NaN through each */
    const vfloat vlo = (vfloat){0} + lo, vhi = (vfloat){0} + hi;
    if (act == PLXK_ACT_RELU) {
        TILE_LOOP(acc[i][v] = vmax_of((vfloat){0}, acc[i][v]))
    } else if (act == PLXK_ACT_CLIP) {
        TILE_LOOP(acc[i][v] = vmin_of(vhi, vmax_of(vlo, acc[i][v])))
    } else if (act == PLXK_ACT_LEAKY) {
        TILE_LOOP(acc[i][v] = vselect(acc[i][v] < 0.0f, slope * acc[i][v], acc[i][v]))
    }
    TILE_LOOP(memcpy(c + (ptrdiff_t)i * ldc + (ptrdiff_t)(v * VL), &acc[i][v], sizeof y))
#undef TILE_LOOP
}
#endif

/* Asks for the rows of C's mr x nr block at (i0, j0) ahead of update_c,
 * so that they arrive while the micro-kernel runs: the rows are ldc apart
 * (kilobytes) and no prefetcher follows them. In a profile of square
 * 1024, a sixth of the samples sat on update_c's loads of C; the prefetch
 * gained 2 to 3% there. */
static inline void prefetch_c(const plxk_gemm_problem *pr, size_t i0, size_t j0, size_t mr,
                              size_t nr) {
#if defined(__GNUC__)
    if (pr->c_cs != 1) {
        return;
    }
    for (size_t i = 0; i < mr; i++) {
        const float *row = pr->args.c + (ptrdiff_t)(i0 + i) * pr->c_rs + (ptrdiff_t)j0;
        for (size_t j = 0; j < nr; j += 64 / sizeof(float)) {
            __builtin_prefetch(row + j, 1, 3);
        }
    }
#else
    (void)pr, (void)i0, (void)j0, (void)mr, (void)nr;
#endif
}

/* With few rows in the region, each panel of B serves at most
 * DIRECT_B_PANELS panels of A: a row-major B is then read where it is,
 * rather than copied into panels first (a transformer's weights with a
 * few dozen tokens: the copy cost as much as the product). */
#define DIRECT_B_PANELS 4

static size_t round_up_size(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

/* When all of the region's rows of op(A) fit one MC x KC block (a small
 * K lets more than MC rows in), op(B) is packed a chunk of about
 * CHUNK_B_BYTES at a time, each chunk multiplied
 * before the next is packed, so that the chunk is written and read back in
 * L1. Packed whole, a pass of B is written out to L2 (a line fill for
 * every store) and read back from there: with a pointwise conv's small K
 * that copy took a seventh of the product's time. */
#define CHUNK_B_BYTES (16 * 1024)
/* ... but at least this many columns (a multiple of NR): a chunk reads
 * that much of each row of B, and with only a panel's 128 bytes per row
 * the hardware prefetchers did not follow (a 3x3 conv's K = 576: 53% of
 * the peak against 60% with a chunk of 256). With a large K the chunk
 * then sits in L2 rather than L1. */
#define CHUNK_B_MIN_COLUMNS 256

/* What one KC pass of region() multiplies. */
typedef struct pass {
    const plxk_gemm_problem *pr;
    size_t i0, j0;   /* the region's first row and column */
    size_t p0, kc;   /* the pass's rows of op(B) */
    bool first, last;
    size_t full;     /* columns [0, full) of the region read in place */
    bool in_registers;
} pass;

/* The MR-row panels of op(A) for the region's rows [ic, ic + mc) in this
 * pass: packed into buf, or, from a pre-packed op(A) (plxk_gemm_pack_a,
 * panels of all of K), found where they are. *stride is the distance
 * between two panels, in floats. */
static const float *a_panels(const pass *ps, size_t ic, size_t mc, float *buf, size_t *stride) {
    const plxk_gemm_args *g = &ps->pr->args;
    if (g->packed_a) {
        /* the region's first row and MC are multiples of MR */
        *stride = MR * g->k;
        return g->packed_a + (ps->i0 + ic) * g->k + ps->p0 * MR;
    }
    pack_a(g, ps->i0 + ic, mc, ps->p0, ps->kc, buf);
    *stride = MR * ps->kc;
    return buf;
}

/* The region's last panel of B when it is narrower than NR: the conv
 * shapes of 7 x 7 feature maps have N = 49, which padded to whole panels
 * left a quarter of the multiply-adds on zeros (AVX-512: 64 columns for
 * 49). The tiles there compute only the vectors they need (nv of VL
 * columns) and take up to EDGE_COLUMNS further columns one at a time
 * (column_sums), whose multiply-adds use a vector over a panel's MR rows:
 * 49 on AVX-512 is one vector of 16 and one column of the 32-column
 * panel, on AVX2 one column of the 16. */
#define EDGE_COLUMNS (VL / 4)
/* ... for this many panels of A at once: their sums are independent, so
 * that the multiply-adds overlap (one accumulator waits for the previous
 * multiply-add's result). */
#define EDGE_PANELS 8

/* acc[q][i][col] = the kc-long product of row i of A panel q (of
 * `panels`, a_stride floats apart) and the column of B at b (rows ldb
 * apart), for q < panels, each summed over p in order as a lane of k_loop
 * sums. A panel's MR values of one p make one vector (MR_LANES,
 * zero-padded when MR is less, as AVX2's 6). */
#if defined(__GNUC__)
#define MR_LANES (MR > 4 ? 8 : 4)
typedef float vrow __attribute__((vector_size(MR_LANES * sizeof(float))));

static inline __attribute__((always_inline)) vrow load_row(const float *src) {
#if MR == MR_LANES
    vrow x;
    memcpy(&x, src, sizeof x);
    return x;
#elif defined(__AVX__) && MR_LANES == 8
    /* a masked load of MR lanes: a copy of MR floats into a zeroed vector
     * kept the sums in memory */
    const __m256i mask = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, MR > 6 ? -1 : 0, 0);
    return (vrow)_mm256_maskload_ps(src, mask);
#else
    vrow x = {0};
    memcpy(&x, src, MR * sizeof(float));
    return x;
#endif
}

/* Not inlined: inlined into edge_tiles, in the AVX2 build, the N = 49
 * shape (plexus-bench-gemm) ran at 40% of the peak instead of 80%. */
static __attribute__((noinline)) void column_sums(size_t kc, const float *restrict a,
                                                  size_t a_stride, size_t panels,
                                                  const float *restrict b, ptrdiff_t ldb,
                                                  float acc[][MR][NR], size_t col) {
    vrow s[EDGE_PANELS];
    for (size_t q = 0; q < EDGE_PANELS; q++) {
        s[q] = (vrow){0};
    }
    if (panels == EDGE_PANELS) {
        /* constant bounds, so that s lives in registers */
        for (size_t p = 0; p < kc; p++) {
            vrow bp = b[(ptrdiff_t)p * ldb] - (vrow){0};
            for (size_t q = 0; q < EDGE_PANELS; q++) {
                s[q] += load_row(a + q * a_stride + p * MR) * bp;
            }
        }
    } else {
        for (size_t q = 0; q < panels; q++) {
            vrow t = {0};
            for (size_t p = 0; p < kc; p++) {
                t += load_row(a + q * a_stride + p * MR) * (b[(ptrdiff_t)p * ldb] - (vrow){0});
            }
            s[q] = t;
        }
    }
    for (size_t q = 0; q < panels; q++) {
        for (size_t i = 0; i < MR; i++) {
            acc[q][i][col] = s[q][i];
        }
    }
}
#else
static void column_sums(size_t kc, const float *restrict a, size_t a_stride, size_t panels,
                        const float *restrict b, ptrdiff_t ldb, float acc[][MR][NR],
                        size_t col) {
    for (size_t q = 0; q < panels; q++) {
        for (size_t i = 0; i < MR; i++) {
            float t = 0.0f;
            for (size_t p = 0; p < kc; p++) {
                t += a[q * a_stride + p * MR + i] * b[(ptrdiff_t)p * ldb];
            }
            acc[q][i][col] = t;
        }
    }
}
#endif

/* The tiles of rows [ic, ic + mc) by the region's last nr < NR columns,
 * at j of C: panel of B at bp, rows ldb apart. */
static void edge_tiles(const pass *ps, size_t ic, size_t mc, const float *a, size_t a_stride,
                       const float *bp, ptrdiff_t ldb, size_t j, size_t nr) {
    size_t nv = nr / VL, cols = nr % VL;
    if (cols > EDGE_COLUMNS) {
        nv++;
        cols = 0;
    }
    for (size_t ir = 0; ir < mc; ir += EDGE_PANELS * MR) {
        size_t panels = min_size(EDGE_PANELS, (mc - ir + MR - 1) / MR);
        const float *ap = a + ir / MR * a_stride;
        float acc[EDGE_PANELS][MR][NR];
        for (size_t q = 0; q < panels; q++) {
            prefetch_c(ps->pr, ps->i0 + ic + ir + q * MR, j,
                       min_size(MR, mc - ir - q * MR), nr);
            if (nv > 0) {
                micro_kernel(ps->kc, ap + q * a_stride, bp, ldb, acc[q], nv);
            }
        }
        for (size_t c = 0; c < cols; c++) {
            column_sums(ps->kc, ap, a_stride, panels, bp + nv * VL + c, ldb, acc, nv * VL + c);
        }
        for (size_t q = 0; q < panels; q++) {
            /* update_c reads all NR columns and stores nr: the rest are
             * zeros, not left undefined */
            for (size_t i = 0; i < MR; i++) {
                memset(&acc[q][i][nr], 0, (NR - nr) * sizeof acc[q][i][0]);
            }
            update_c(ps->pr, acc[q], ps->i0 + ic + ir + q * MR, j,
                     min_size(MR, mc - ir - q * MR), nr, ps->first, ps->last);
        }
    }
}

/* The tiles of rows [ic, ic + mc) (their panels of A at a, a_stride floats
 * apart) by the region's columns [jlo, jhi): panel c of B (columns jlo + c
 * NR ...) at panels + c panel_floats, rows NR floats apart, except the
 * columns below `full`. */
static void pass_tiles(const pass *ps, size_t ic, size_t mc, const float *a, size_t a_stride,
                       size_t jlo, size_t jhi, const float *panels, size_t panel_floats) {
    const plxk_gemm_problem *pr = ps->pr;
    const plxk_gemm_args *g = &pr->args;
    size_t kc = ps->kc;
    for (size_t jr = jlo; jr < jhi; jr += NR) {
        const float *bp = panels + (jr - jlo) / NR * panel_floats;
        ptrdiff_t ldb = NR;
        if (jr < ps->full) {
            bp = g->b + (ptrdiff_t)ps->p0 * g->b_rs + (ptrdiff_t)(ps->j0 + jr);
            ldb = g->b_rs;
        }
        if (jhi - jr < NR) {
            edge_tiles(ps, ic, mc, a, a_stride, bp, ldb, ps->j0 + jr, jhi - jr);
            continue;
        }
        for (size_t ir = 0; ir < mc; ir += MR) {
            size_t i = ps->i0 + ic + ir, j = ps->j0 + jr;
            size_t mr = min_size(MR, mc - ir);
            prefetch_c(pr, i, j, mr, NR);
#if defined(__GNUC__)
            if (ps->in_registers && mr == MR) {
                full_tile(kc, a + ir / MR * a_stride, bp, ldb,
                          g->c + (ptrdiff_t)i * pr->c_rs + (ptrdiff_t)j, pr->c_rs, g->alpha,
                          ps->first ? g->beta : 1.0f,
                          ps->last && g->bias ? g->bias + (ptrdiff_t)i * g->bias_rs +
                                                    (ptrdiff_t)j * g->bias_cs
                                              : NULL,
                          g->bias_rs, g->bias_cs, ps->last ? g->act : PLXK_ACT_NONE, g->lo,
                          g->hi, g->slope);
                continue;
            }
#endif
            float acc[MR][NR];
            micro_kernel(kc, a + ir / MR * a_stride, bp, ldb, acc, NV);
            update_c(pr, acc, i, j, mr, NR, ps->first, ps->last);
        }
    }
}

/* plxk_gemm_impl.region, in the loop order of Goto's GEMM: for each KC
 * pass, op(B)'s kc x nc block is packed once and serves every MC block of
 * the region's rows; each MC block of op(A) is packed and multiplied by
 * every NR panel of B (kc x NR, which stays in L1) against every MR panel
 * of A (in L2). A pre-packed op(B) or op(A) (plxk_gemm_args.packed_b,
 * packed_a) is read where it is instead; with A in one block, B is packed
 * by chunks (CHUNK_B_BYTES). */
static void region(const plxk_gemm_problem *pr, size_t i0, size_t m, size_t j0, size_t nc,
                   float *pack_a_buf, float *pack_b_buf) {
    const plxk_gemm_args *g = &pr->args;
    bool direct = !g->packed_b && g->b_cs == 1 && m <= DIRECT_B_PANELS * MR;
    pass ps = {.pr = pr, .i0 = i0, .j0 = j0,
               .full = direct ? nc / NR * NR : 0, /* columns read in place */
               /* full tiles go through full_tile when C's rows are contiguous */
               .in_registers = pr->c_cs == 1 &&
                               (!g->bias || g->bias_cs == 0 || g->bias_cs == 1)};
    for (size_t p0 = 0; p0 < g->k; p0 += KC) {
        size_t kc = min_size(KC, g->k - p0);
        ps.p0 = p0;
        ps.kc = kc;
        ps.first = p0 == 0;
        ps.last = p0 + kc == g->k;
        if (g->packed_b) {
            /* pre-packed (plxk_gemm_pack_b): panels of all of K; j0 is a
             * multiple of NR */
            for (size_t ic = 0; ic < m; ic += MC) {
                size_t mc = min_size(MC, m - ic), a_stride;
                const float *a = a_panels(&ps, ic, mc, pack_a_buf, &a_stride);
                pass_tiles(&ps, ic, mc, a, a_stride, 0, nc, g->packed_b + j0 * g->k + p0 * NR,
                           NR * g->k);
            }
            continue;
        }
        if (round_up_size(m, MR) * kc <= MC * KC && ps.full < nc) {
            size_t chunk = CHUNK_B_BYTES / sizeof(float) / kc / NR * NR, a_stride;
            chunk = chunk < CHUNK_B_MIN_COLUMNS ? CHUNK_B_MIN_COLUMNS : chunk;
            const float *a = a_panels(&ps, 0, m, pack_a_buf, &a_stride);
            for (size_t jc = ps.full; jc < nc; jc += chunk) {
                size_t jend = min_size(nc, jc + chunk);
                pack_b(g, p0, kc, j0 + jc, jend - jc, pack_b_buf);
                pass_tiles(&ps, 0, m, a, a_stride, jc, jend, pack_b_buf, NR * kc);
            }
            if (ps.full > 0) {
                pass_tiles(&ps, 0, m, a, a_stride, 0, ps.full, pack_b_buf, NR * kc);
            }
            continue;
        }
        /* packed panels; with `direct`, only the edge, padded with zeros,
         * at its usual place */
        if (ps.full < nc) {
            pack_b(g, p0, kc, j0 + ps.full, nc - ps.full, pack_b_buf + ps.full * kc);
        }
        for (size_t ic = 0; ic < m; ic += MC) {
            size_t mc = min_size(MC, m - ic), a_stride;
            const float *a = a_panels(&ps, ic, mc, pack_a_buf, &a_stride);
            pass_tiles(&ps, ic, mc, a, a_stride, 0, nc, pack_b_buf, NR * kc);
        }
    }
}

/* plxk_gemm_impl.gemv. Sums go to a stack block of CHUNK outputs at a
 * time. With mo == 1 the inner loop runs along contiguous outputs; with
 * mp == 1 and xs == 1 (a dot product of contiguous rows, R x h of a
 * recurrent step, W x of a fully_connected layer) along p in LANES partial
 * sums, which the compiler keeps in vector registers; otherwise along p
 * with four scalar partial sums. */
static void gemv(const plxk_gemm_args *g, size_t count, const float *mat, ptrdiff_t mp,
                 ptrdiff_t mo, const float *x, ptrdiff_t xs, float *out, ptrdiff_t os,
                 const float *bias, ptrdiff_t bs) {
    enum { CHUNK = 256, LANES = 16, BLOCK = 64 };
    float acc[CHUNK];
    for (size_t o0 = 0; o0 < count; o0 += CHUNK) {
        size_t n = count - o0 < CHUNK ? count - o0 : CHUNK;
        if (mo == 1) {
            /* blocks of BLOCK outputs whose sums stay in registers over
             * the whole of k, then the rest */
            size_t o = 0;
            for (; o + BLOCK <= n; o += BLOCK) {
                float part[BLOCK] = {0};
                for (size_t p = 0; p < g->k; p++) {
                    float xp = x[(ptrdiff_t)p * xs];
                    const float *restrict row = mat + (ptrdiff_t)p * mp + (ptrdiff_t)(o0 + o);
                    for (size_t l = 0; l < BLOCK; l++) {
                        part[l] += xp * row[l];
                    }
                }
                memcpy(acc + o, part, sizeof part);
            }
            if (o < n) {
                memset(acc + o, 0, (n - o) * sizeof *acc);
                for (size_t p = 0; p < g->k; p++) {
                    float xp = x[(ptrdiff_t)p * xs];
                    const float *row = mat + (ptrdiff_t)p * mp + (ptrdiff_t)o0;
                    for (size_t q = o; q < n; q++) {
                        acc[q] += xp * row[q];
                    }
                }
            }
        } else if (mp == 1 && xs == 1) {
            size_t k_main = g->k / LANES * LANES;
            for (size_t o = 0; o < n; o++) {
                const float *restrict col = mat + (ptrdiff_t)(o0 + o) * mo;
                float part[LANES] = {0};
                for (size_t p = 0; p < k_main; p += LANES) {
                    for (size_t l = 0; l < LANES; l++) {
                        part[l] += x[p + l] * col[p + l];
                    }
                }
                for (size_t p = k_main; p < g->k; p++) {
                    part[p - k_main] += x[p] * col[p];
                }
                /* halving, so that each level is one vector add */
                for (size_t w = LANES / 2; w > 0; w /= 2) {
                    for (size_t l = 0; l < w; l++) {
                        part[l] += part[l + w];
                    }
                }
                acc[o] = part[0];
            }
        } else {
            for (size_t o = 0; o < n; o++) {
                const float *col = mat + (ptrdiff_t)(o0 + o) * mo;
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                size_t p = 0;
                for (; p + 4 <= g->k; p += 4) {
                    s0 += x[(ptrdiff_t)p * xs] * col[(ptrdiff_t)p * mp];
                    s1 += x[(ptrdiff_t)(p + 1) * xs] * col[(ptrdiff_t)(p + 1) * mp];
                    s2 += x[(ptrdiff_t)(p + 2) * xs] * col[(ptrdiff_t)(p + 2) * mp];
                    s3 += x[(ptrdiff_t)(p + 3) * xs] * col[(ptrdiff_t)(p + 3) * mp];
                }
                for (; p < g->k; p++) {
                    s0 += x[(ptrdiff_t)p * xs] * col[(ptrdiff_t)p * mp];
                }
                acc[o] = (s0 + s1) + (s2 + s3);
            }
        }
        for (size_t o = 0; o < n; o++) {
            float *c = out + (ptrdiff_t)(o0 + o) * os;
            float v = g->alpha * acc[o];
            if (g->beta != 0.0f) {
                v += g->beta * *c;
            }
            if (bias) {
                v += bias[(ptrdiff_t)(o0 + o) * bs];
            }
            *c = plxk_gemm_activate(g, v);
        }
    }
}

const plxk_gemm_impl PLXK_ISA_SYMBOL(plxk_gemm_impl_) = {
    .blocks = {.mr = MR, .nr = NR, .kc = KC, .mc = MC, .nc = NC},
    .region = region,
    .pack_a = pack_a,
    .pack_b = pack_b,
    .depthwise = PLXK_ISA_SYMBOL(plxk_depthwise_),
    .gemv = gemv,
    .vmap = PLXK_ISA_SYMBOL(plxk_vmap_),
    .vhard_sigmoid = PLXK_ISA_SYMBOL(plxk_vhard_sigmoid_),
    .vbinary = PLXK_ISA_SYMBOL(plxk_vbinary_),
    .qbinary = PLXK_ISA_SYMBOL(plxk_qbinary_),
    .quantize8 = PLXK_ISA_SYMBOL(plxk_quantize8_),
    .dequantize8 = PLXK_ISA_SYMBOL(plxk_dequantize8_),
    .requantize8 = PLXK_ISA_SYMBOL(plxk_requantize8_),
    .max_pool_plane = PLXK_ISA_SYMBOL(plxk_max_pool_plane_),
    .float_range = PLXK_ISA_SYMBOL(plxk_float_range_),
    .table8 = PLXK_ISA_SYMBOL(plxk_table8_),
#if defined(PLXK_GEMM_ISA_AVX512)
    .table8_vbmi = plxk_table8_vbmi_avx512,
#endif
};
