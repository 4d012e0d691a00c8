/* The 8-bit GEMM's packing and micro-kernels (qgemm_kernel.h). meson
 * compiles this file once per instruction set, defining one of
 * PLXK_GEMM_ISA_PORTABLE, _AVX2 or _AVX512 with that set's -m flags, as for
 * gemm_kernel.c; each build exports its plxk_qgemm_impl_<isa>.
 *
 * Every method is exact: products of a uint8 by an int8 summed in 32 bits.
 * - portable: plain C; A widened to 16 bits when packed, B read one K at a
 *   time (KG 1) and widened per row of the panel, products added in 32
 *   bits: the vectoriser's widening multiplies, no 16-bit sums.
 * - AVX2 and AVX-512 BW ("int16"): groups of 4 of K; B's bytes sign-extended
 *   to 16 bits (vpmovsxbw), A packed as 16 bits and broadcast 64 bits (its
 *   group) at a time, vpmaddwd multiplies and adds pairs into 32 bits (at
 *   most 2 x 255 x 128 in magnitude, far from its one saturating case,
 *   -32768 x -32768 twice), vpaddd accumulates. A 32-bit lane then holds
 *   half of a group's sum for one column (K 0-1 or 2-3 of each group); the
 *   halves are added when the tile is stored. vpmaddubsw, which would
 *   multiply the bytes directly, saturates its 16-bit pair sums (255 x 127
 *   x 2 > 32767) and is not used.
 * - AVX-512 VNNI: vpdpbusd multiplies 4 uint8 by 4 int8 and adds the four
 *   products to a 32-bit lane, without saturation: one instruction per
 *   group, 64 products per instruction. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qgemm_kernel.h"

#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Block sizes. A KC x NR panel of B (16 KiB at NR 32) stays in L1 while
 * the micro-kernel runs over the MC rows of A (in L2); the accumulators
 * (MR x NR 32-bit lanes) fill most of the vector registers. MC is a
 * multiple of every MR of the build. */
#if defined(PLXK_GEMM_ISA_AVX512)
#define NR 32
#define KG 4
#define KC 512
#define MC 120
#define NC 256
#define MR_INT16 6 /* 6 x 4 zmm accumulators, 4 for B, 1 for A */
#define MR_VNNI 8  /* 8 x 2 zmm accumulators */
#elif defined(PLXK_GEMM_ISA_AVX2)
#define NR 8
#define KG 4
#define KC 512
#define MC 120
#define NC 256
#define MR_INT16 6 /* 6 x 2 ymm accumulators, 2 for B, 1 for A */
#elif defined(PLXK_GEMM_ISA_PORTABLE)
#define NR 16
#define KG 1
#define KC 512
#define MC 128
#define NC 256
#define MR_C 4
#else
#error "define PLXK_GEMM_ISA_PORTABLE, _AVX2 or _AVX512"
#endif

static size_t min_size(size_t a, size_t b) {
    return a < b ? a : b;
}

static size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

/* ---- packing ------------------------------------------------------------- */

/* pack_b of qgemm_kernel.h. B's bytes are flipped to signed (x ^ 0x80)
 * when unsigned. A row-major B (b_cs == 1: [K, N], a matmul's weights) is
 * read a row at a time and dealt out to the panels; otherwise each column
 * is read along K (b_rs == 1: [N, K], conv's and fully_connected's
 * weights, read contiguously). */
static void pack_b(const plxk_qgemm_args *g, size_t j0, size_t nc, int8_t *restrict panels,
                   uint32_t *restrict sums) {
    const uint8_t *b = g->b;
    const uint8_t flip = g->b_signed ? 0 : 0x80;
    const size_t k = g->k, kp = round_up(k, KG), ncp = round_up(nc, NR);
    const size_t group_bytes = NR * KG, panel_bytes = NR * kp;
    memset(sums, 0, ncp * sizeof *sums);
    if (g->b_cs == 1 && g->b_rs != 1) {
        for (size_t p = 0; p < k; p++) {
            const uint8_t *row = b + (ptrdiff_t)p * g->b_rs + (ptrdiff_t)j0;
            int8_t *dst = panels + p / KG * group_bytes + p % KG;
            for (size_t c = 0; c < nc; c++) {
                int8_t v = (int8_t)(row[c] ^ flip);
                dst[c / NR * panel_bytes + c % NR * KG] = v;
                sums[c] += (uint32_t)(int32_t)v;
            }
        }
        for (size_t c = nc; c < ncp; c++) {
            int8_t *dst = panels + c / NR * panel_bytes + c % NR * KG;
            for (size_t p = 0; p < k; p++) {
                dst[p / KG * group_bytes + p % KG] = 0;
            }
        }
    } else {
        for (size_t c = 0; c < ncp; c++) {
            int8_t *dst = panels + c / NR * panel_bytes + c % NR * KG;
            if (c >= nc) {
                for (size_t p = 0; p < k; p++) {
                    dst[p / KG * group_bytes + p % KG] = 0;
                }
                continue;
            }
            const uint8_t *col = b + (ptrdiff_t)(j0 + c) * g->b_cs;
            uint32_t s = 0;
            for (size_t p = 0; p < k; p++) {
                int8_t v = (int8_t)(col[(ptrdiff_t)p * g->b_rs] ^ flip);
                dst[p / KG * group_bytes + p % KG] = v;
                s += (uint32_t)(int32_t)v;
            }
            sums[c] = s;
        }
    }
    /* K's padding up to a whole group, every column */
    for (size_t p = k; p < kp; p++) {
        for (size_t c = 0; c < ncp; c++) {
            panels[c / NR * panel_bytes + p / KG * group_bytes + c % NR * KG + p % KG] = 0;
        }
    }
}

/* pack_a of qgemm_kernel.h for MR rows per panel and values of `wide` ?
 * 16 : 8 bits. A signed A is flipped to unsigned (x ^ 0x80). With A's rows
 * contiguous (a_cs == 1, the usual im2col or activation matrix) a row is
 * copied a group at a time; otherwise (A read transposed: [K, M], a conv
 * whose columns are pixels) value by value. */
static ALWAYS_INLINE void pack_a_rows(const plxk_qgemm_args *g, size_t i0, size_t mc,
                                      size_t p0, size_t kc, void *out, uint32_t *rowsum,
                                      bool first, size_t mr, bool wide) {
    const uint8_t flip = g->a_signed ? 0x80 : 0;
    const size_t kcp = round_up(kc, KG), step = mr * KG;
    uint8_t *out8 = out;
    uint16_t *out16 = out;
    for (size_t r = 0; r < mc; r++) {
        const uint8_t *row = (const uint8_t *)g->a + (ptrdiff_t)(i0 + r) * g->a_rs +
                             (ptrdiff_t)p0 * g->a_cs;
        size_t base = r / mr * mr * kcp + r % mr * KG; /* the row's first value */
        uint32_t s = 0;
        if (g->a_cs == 1) {
            for (size_t p = 0; p < kc; p++) {
                s += (uint8_t)(row[p] ^ flip);
            }
            size_t q = 0;
            for (; q + KG <= kc; q += KG) {
                size_t at = base + q / KG * step;
                for (size_t u = 0; u < KG; u++) {
                    uint8_t v = (uint8_t)(row[q + u] ^ flip);
                    if (wide) {
                        out16[at + u] = v;
                    } else {
                        out8[at + u] = v;
                    }
                }
            }
            for (size_t u = 0; q + u < kcp; u++) {
                uint8_t v = q + u < kc ? (uint8_t)(row[q + u] ^ flip) : 0;
                if (wide) {
                    out16[base + q / KG * step + u] = v;
                } else {
                    out8[base + q / KG * step + u] = v;
                }
            }
        } else {
            for (size_t p = 0; p < kcp; p++) {
                uint8_t v = p < kc ? (uint8_t)(row[(ptrdiff_t)p * g->a_cs] ^ flip) : 0;
                s += v;
                size_t at = base + p / KG * step + p % KG;
                if (wide) {
                    out16[at] = v;
                } else {
                    out8[at] = v;
                }
            }
        }
        if (rowsum) {
            rowsum[r] = first ? s : rowsum[r] + s;
        }
    }
}

/* ---- micro-kernels ------------------------------------------------------- */

/* Each computes `rows` (<= its MR, a constant once inlined) rows x NR
 * columns over `groups` groups of K and stores them into c (ldc apart):
 * written on the first pass, added later. The dispatchers below call them
 * with every row count, so that the accumulators of a constant count stay
 * in registers. */

#if defined(PLXK_GEMM_ISA_PORTABLE)
static ALWAYS_INLINE void store_tile_row(uint32_t *c, const uint32_t *v, size_t n, bool first) {
    for (size_t j = 0; j < n; j++) {
        c[j] = first ? v[j] : c[j] + v[j];
    }
}

static ALWAYS_INLINE void tile_c(size_t rows, size_t kc, const uint16_t *restrict a,
                                 const int8_t *restrict b, uint32_t *c, size_t ldc, bool first) {
    uint32_t acc[MR_C][NR];
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < NR; j++) {
            acc[i][j] = 0;
        }
    }
    for (size_t p = 0; p < kc; p++) {
        int16_t bw[NR];
        for (size_t j = 0; j < NR; j++) {
            bw[j] = b[p * NR + j];
        }
        for (size_t i = 0; i < rows; i++) {
            int32_t ai = a[p * MR_C + i];
            for (size_t j = 0; j < NR; j++) {
                acc[i][j] += (uint32_t)(ai * bw[j]);
            }
        }
    }
    for (size_t i = 0; i < rows; i++) {
        store_tile_row(c + i * ldc, acc[i], NR, first);
    }
}

static void multiply_c(size_t mc, size_t nc, size_t kc, const void *a, const int8_t *b,
                       size_t b_panel, uint32_t *acc, size_t ldacc, bool first) {
    const uint16_t *pa = a;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const int8_t *bp = b + jr / NR * b_panel;
        for (size_t ir = 0; ir < mc; ir += MR_C) {
            const uint16_t *ap = pa + ir * kc;
            uint32_t *c = acc + ir * ldacc + jr;
            switch (min_size(MR_C, mc - ir)) {
            case 1:
                tile_c(1, kc, ap, bp, c, ldacc, first);
                break;
            case 2:
                tile_c(2, kc, ap, bp, c, ldacc, first);
                break;
            case 3:
                tile_c(3, kc, ap, bp, c, ldacc, first);
                break;
            default:
                tile_c(MR_C, kc, ap, bp, c, ldacc, first);
                break;
            }
        }
    }
}

static void pack_a_c(const plxk_qgemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                     void *out, uint32_t *rowsum, bool first) {
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_C, true);
}

const plxk_qgemm_impl plxk_qgemm_impl_portable = {
    .mr = MR_C, .nr = NR, .kg = KG, .kc = KC, .mc = MC, .nc = NC, .a_bytes = 2,
    .macs_per_ns = 8.0, .method = "c",
    .pack_b = pack_b, .pack_a = pack_a_c, .multiply = multiply_c,
};
#endif /* PLXK_GEMM_ISA_PORTABLE */

#if defined(PLXK_GEMM_ISA_AVX2)
/* Sums the two halves of each column (adjacent lanes) of a row's two
 * accumulators (columns 0-3 and 4-7) into the row's 8 columns. */
static ALWAYS_INLINE __m256i fold_halves(__m256i lo, __m256i hi) {
    /* hadd: c0 c1 c4 c5 | c2 c3 c6 c7; the permutation puts the 64-bit
     * pairs in order */
    return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
}

static ALWAYS_INLINE void tile_int16(size_t rows, size_t groups, const uint16_t *restrict a,
                                     const int8_t *restrict b, uint32_t *c, size_t ldc,
                                     bool first) {
    __m256i acc[MR_INT16][2];
    for (size_t i = 0; i < rows; i++) {
        acc[i][0] = _mm256_setzero_si256();
        acc[i][1] = _mm256_setzero_si256();
    }
    for (size_t g = 0; g < groups; g++) {
        const int8_t *bg = b + g * NR * KG;
        __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)bg));
        __m256i b1 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(bg + 16)));
        const uint16_t *ag = a + g * MR_INT16 * KG;
        for (size_t i = 0; i < rows; i++) {
            long long group;
            memcpy(&group, ag + i * KG, sizeof group);
            __m256i av = _mm256_set1_epi64x(group);
            acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
            acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
        }
    }
    for (size_t i = 0; i < rows; i++) {
        __m256i v = fold_halves(acc[i][0], acc[i][1]);
        uint32_t *ci = c + i * ldc;
        if (!first) {
            v = _mm256_add_epi32(v, _mm256_loadu_si256((const __m256i *)(const void *)ci));
        }
        _mm256_storeu_si256((__m256i *)(void *)ci, v);
    }
}
#endif /* PLXK_GEMM_ISA_AVX2 */

#if defined(PLXK_GEMM_ISA_AVX512)
static ALWAYS_INLINE void tile_int16(size_t rows, size_t groups, const uint16_t *restrict a,
                                     const int8_t *restrict b, uint32_t *c, size_t ldc,
                                     bool first) {
    /* acc[i][q]: columns 8q ... 8q+7 of row i, two lanes (halves) each */
    __m512i acc[MR_INT16][4];
    for (size_t i = 0; i < rows; i++) {
        for (size_t q = 0; q < 4; q++) {
            acc[i][q] = _mm512_setzero_si512();
        }
    }
    for (size_t g = 0; g < groups; g++) {
        const int8_t *bg = b + g * NR * KG;
        __m512i bq[4];
        for (size_t q = 0; q < 4; q++) {
            bq[q] = _mm512_cvtepi8_epi16(
                _mm256_loadu_si256((const __m256i *)(const void *)(bg + 32 * q)));
        }
        const uint16_t *ag = a + g * MR_INT16 * KG;
        for (size_t i = 0; i < rows; i++) {
            long long group;
            memcpy(&group, ag + i * KG, sizeof group);
            __m512i av = _mm512_set1_epi64(group);
            for (size_t q = 0; q < 4; q++) {
                acc[i][q] = _mm512_add_epi32(acc[i][q], _mm512_madd_epi16(av, bq[q]));
            }
        }
    }
    /* even lanes of (x, y) plus odd lanes: 16 columns from two accumulators */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
                                          29, 31);
    for (size_t i = 0; i < rows; i++) {
        uint32_t *ci = c + i * ldc;
        for (size_t h = 0; h < 2; h++) {
            __m512i x = acc[i][2 * h], y = acc[i][2 * h + 1];
            __m512i v = _mm512_add_epi32(_mm512_permutex2var_epi32(x, even, y),
                                         _mm512_permutex2var_epi32(x, odd, y));
            if (!first) {
                v = _mm512_add_epi32(v, _mm512_loadu_si512(ci + 16 * h));
            }
            _mm512_storeu_si512(ci + 16 * h, v);
        }
    }
}

/* The VNNI functions are compiled for that extension alone (the build's
 * flags are AVX-512 F/VL/BW/DQ); qgemm.c checks the CPU before it picks
 * them. */
#define VNNI_TARGET __attribute__((target("avx512vnni")))

static ALWAYS_INLINE VNNI_TARGET void tile_vnni(size_t rows, size_t groups,
                                                const uint8_t *restrict a,
                                                const int8_t *restrict b, uint32_t *c,
                                                size_t ldc, bool first) {
    __m512i acc[MR_VNNI][2];
    for (size_t i = 0; i < rows; i++) {
        acc[i][0] = _mm512_setzero_si512();
        acc[i][1] = _mm512_setzero_si512();
    }
    for (size_t g = 0; g < groups; g++) {
        const int8_t *bg = b + g * NR * KG;
        __m512i b0 = _mm512_loadu_si512(bg), b1 = _mm512_loadu_si512(bg + 64);
        const uint8_t *ag = a + g * MR_VNNI * KG;
        for (size_t i = 0; i < rows; i++) {
            int group;
            memcpy(&group, ag + i * KG, sizeof group);
            __m512i av = _mm512_set1_epi32(group);
            acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
        }
    }
    for (size_t i = 0; i < rows; i++) {
        uint32_t *ci = c + i * ldc;
        for (size_t h = 0; h < 2; h++) {
            __m512i v = acc[i][h];
            if (!first) {
                v = _mm512_add_epi32(v, _mm512_loadu_si512(ci + 16 * h));
            }
            _mm512_storeu_si512(ci + 16 * h, v);
        }
    }
}

static VNNI_TARGET void multiply_vnni(size_t mc, size_t nc, size_t kc, const void *a,
                                      const int8_t *b, size_t b_panel, uint32_t *acc,
                                      size_t ldacc, bool first) {
    const uint8_t *pa = a;
    const size_t kcp = round_up(kc, KG), groups = kcp / KG;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const int8_t *bp = b + jr / NR * b_panel;
        for (size_t ir = 0; ir < mc; ir += MR_VNNI) {
            const uint8_t *ap = pa + ir * kcp;
            uint32_t *c = acc + ir * ldacc + jr;
            switch (min_size(MR_VNNI, mc - ir)) {
            case 1:
                tile_vnni(1, groups, ap, bp, c, ldacc, first);
                break;
            case 2:
                tile_vnni(2, groups, ap, bp, c, ldacc, first);
                break;
            case 3:
                tile_vnni(3, groups, ap, bp, c, ldacc, first);
                break;
            case 4:
                tile_vnni(4, groups, ap, bp, c, ldacc, first);
                break;
            case 5:
                tile_vnni(5, groups, ap, bp, c, ldacc, first);
                break;
            case 6:
                tile_vnni(6, groups, ap, bp, c, ldacc, first);
                break;
            case 7:
                tile_vnni(7, groups, ap, bp, c, ldacc, first);
                break;
            default:
                tile_vnni(MR_VNNI, groups, ap, bp, c, ldacc, first);
                break;
            }
        }
    }
}

static void pack_a_vnni(const plxk_qgemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                        void *out, uint32_t *rowsum, bool first) {
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_VNNI, false);
}

const plxk_qgemm_impl plxk_qgemm_impl_avx512_vnni = {
    .mr = MR_VNNI, .nr = NR, .kg = KG, .kc = KC, .mc = MC, .nc = NC, .a_bytes = 1,
    .macs_per_ns = 64.0, .method = "vnni",
    .pack_b = pack_b, .pack_a = pack_a_vnni, .multiply = multiply_vnni,
};
#endif /* PLXK_GEMM_ISA_AVX512 */

#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
static void multiply_int16(size_t mc, size_t nc, size_t kc, const void *a, const int8_t *b,
                           size_t b_panel, uint32_t *acc, size_t ldacc, bool first) {
    const uint16_t *pa = a;
    const size_t kcp = round_up(kc, KG), groups = kcp / KG;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const int8_t *bp = b + jr / NR * b_panel;
        for (size_t ir = 0; ir < mc; ir += MR_INT16) {
            const uint16_t *ap = pa + ir * kcp;
            uint32_t *c = acc + ir * ldacc + jr;
            switch (min_size(MR_INT16, mc - ir)) {
            case 1:
                tile_int16(1, groups, ap, bp, c, ldacc, first);
                break;
            case 2:
                tile_int16(2, groups, ap, bp, c, ldacc, first);
                break;
            case 3:
                tile_int16(3, groups, ap, bp, c, ldacc, first);
                break;
            case 4:
                tile_int16(4, groups, ap, bp, c, ldacc, first);
                break;
            case 5:
                tile_int16(5, groups, ap, bp, c, ldacc, first);
                break;
            default:
                tile_int16(MR_INT16, groups, ap, bp, c, ldacc, first);
                break;
            }
        }
    }
}

static void pack_a_int16(const plxk_qgemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                         void *out, uint32_t *rowsum, bool first) {
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_INT16, true);
}

const plxk_qgemm_impl PLXK_ISA_SYMBOL(plxk_qgemm_impl_) = {
    .mr = MR_INT16, .nr = NR, .kg = KG, .kc = KC, .mc = MC, .nc = NC, .a_bytes = 2,
    .macs_per_ns = 24.0, .method = "int16",
    .pack_b = pack_b, .pack_a = pack_a_int16, .multiply = multiply_int16,
};
#endif
