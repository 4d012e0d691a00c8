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
#define MR_INT16 5 /* 5 x 4 zmm accumulators, 4 for B, 1 for A (at 6, GCC spills) */
#define MR_VNNI 8  /* 8 x 2 zmm accumulators */
#elif defined(PLXK_GEMM_ISA_AVX2)
#define NR 8
#define KG 4
#define KC 512
#define MC 120
#define NC 256
#define MR_INT16 4 /* 4 x 2 ymm accumulators, 2 for B, A (at 5 and 6, GCC spills) */
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
 * when unsigned. A row-major B (b_cs == 1: [K, N], a matmul's weights or
 * a product of activations) is read KG rows at a time and dealt out panel
 * by panel (in the x86 builds with byte shuffles, 16 or 8 columns at a
 * time); otherwise each column is read along K (b_rs == 1: [N, K], conv's
 * and fully_connected's weights, read contiguously). */
#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
/* The sums of each column's 4 bytes in a dealt vector (4 columns) added
 * to sums[0..3]: pairs of signed bytes (at most 256 in magnitude) by
 * vpmaddubsw with ones as the unsigned operand, then the pairs. */
static ALWAYS_INLINE void add_column_sums(__m128i dealt, uint32_t *sums) {
    __m128i s = _mm_madd_epi16(_mm_maddubs_epi16(_mm_set1_epi8(1), dealt), _mm_set1_epi16(1));
    __m128i old = _mm_loadu_si128((const __m128i *)(const void *)sums);
    _mm_storeu_si128((__m128i *)(void *)sums, _mm_add_epi32(old, s));
}

/* 4 rows of B (row u at src + u rs) x `cols` (16 or 8) columns -> the
 * columns' groups: column c's 4 bytes at dst + 4 c. */
static ALWAYS_INLINE void deal_b_rows(const uint8_t *src, ptrdiff_t rs, size_t cols,
                                      __m128i flip, int8_t *dst, uint32_t *sums) {
    __m128i r[4];
    for (size_t u = 0; u < 4; u++) {
        const void *row = src + (ptrdiff_t)u * rs;
        r[u] = cols == 16 ? _mm_loadu_si128((const __m128i *)row)
                          : _mm_loadl_epi64((const __m128i *)row);
        r[u] = _mm_xor_si128(r[u], flip);
    }
    __m128i a = _mm_unpacklo_epi8(r[0], r[1]), b = _mm_unpacklo_epi8(r[2], r[3]);
    __m128i out[4] = {_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)};
    if (cols == 16) {
        a = _mm_unpackhi_epi8(r[0], r[1]);
        b = _mm_unpackhi_epi8(r[2], r[3]);
        out[2] = _mm_unpacklo_epi16(a, b);
        out[3] = _mm_unpackhi_epi16(a, b);
    }
    for (size_t v = 0; v < cols / 4; v++) {
        _mm_storeu_si128((__m128i *)(void *)(dst + 16 * v), out[v]);
        add_column_sums(out[v], sums + 4 * v);
    }
}
#endif

static void pack_b(const plxk_qgemm_args *g, size_t j0, size_t nc, int8_t *restrict panels,
                   uint32_t *restrict sums) {
    const uint8_t *b = g->b;
    const uint8_t flip = g->b_signed ? 0 : 0x80;
    const size_t k = g->k, kp = round_up(k, KG), ncp = round_up(nc, NR);
    const size_t group_bytes = NR * KG, panel_bytes = NR * kp;
    memset(sums, 0, ncp * sizeof *sums);
    if (g->b_cs == 1 && g->b_rs != 1) {
        for (size_t p = 0; p < kp; p += KG) {
            const uint8_t *rows = b + (ptrdiff_t)p * g->b_rs + (ptrdiff_t)j0;
            for (size_t q = 0; q < ncp; q += NR) {
                /* the group of rows p ... p+KG-1 of panel q / NR */
                int8_t *dst = panels + q * kp + p * NR;
                const size_t cols = min_size(NR, nc - q); /* q < nc: ncp - nc < NR */
                size_t c = 0;
#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
                if (p + KG <= k) {
                    const __m128i f = _mm_set1_epi8((char)flip);
                    for (; c + 16 <= cols; c += 16) {
                        deal_b_rows(rows + q + c, g->b_rs, 16, f, dst + c * KG, sums + q + c);
                    }
                    for (; c + 8 <= cols; c += 8) {
                        deal_b_rows(rows + q + c, g->b_rs, 8, f, dst + c * KG, sums + q + c);
                    }
                }
#endif
                for (; c < NR; c++) {
                    for (size_t u = 0; u < KG; u++) {
                        int8_t v = c < cols && p + u < k
                                       ? (int8_t)(rows[(ptrdiff_t)u * g->b_rs +
                                                       (ptrdiff_t)(q + c)] ^
                                                  flip)
                                       : 0;
                        dst[c * KG + u] = v;
                        sums[q + c] += (uint32_t)(int32_t)v;
                    }
                }
            }
        }
        return;
    }
    for (size_t c = 0; c < ncp; c++) {
        int8_t *dst = panels + c / NR * panel_bytes + c % NR * KG;
        if (c >= nc) {
            for (size_t p = 0; p < kp; p++) {
                dst[p / KG * group_bytes + p % KG] = 0;
            }
            continue;
        }
        const uint8_t *col = b + (ptrdiff_t)(j0 + c) * g->b_cs;
        uint32_t s = 0;
        for (size_t p = 0; p < kp; p++) {
            int8_t v = p < k ? (int8_t)(col[(ptrdiff_t)p * g->b_rs] ^ flip) : 0;
            dst[p / KG * group_bytes + p % KG] = v;
            s += (uint32_t)(int32_t)v;
        }
        sums[c] = s;
    }
}

/* pack_a of qgemm_kernel.h for `mr` rows per panel and values of `wide` ?
 * 16 : 8 bits (both constants once inlined). A signed A is flipped to
 * unsigned (x ^ 0x80). The rows of a panel are gathered PACK_BLOCK values
 * of K at a time into a local block: with A's rows contiguous (a_cs == 1,
 * an activation matrix) a row is one copy; with its columns contiguous
 * (a_rs == 1, conv's [K, pixels] column matrix read transposed) each
 * value of K gives the panel's rows in one read. The block is then dealt
 * out group by group: for KG 4 a transposition of 32-bit words, which the
 * compiler turns into vector shuffles (written value by value, the packing
 * cost more than the VNNI product of a 64-column conv). */
#define PACK_BLOCK 64
#define PACK_MAX_MR 8
#if defined(MR_VNNI)
_Static_assert(MR_VNNI <= PACK_MAX_MR, "pack_a_rows holds at most PACK_MAX_MR rows");
#endif
#if defined(MR_INT16)
_Static_assert(MR_INT16 <= PACK_MAX_MR, "pack_a_rows holds at most PACK_MAX_MR rows");
#endif
#if defined(MR_C)
_Static_assert(MR_C <= PACK_MAX_MR, "pack_a_rows holds at most PACK_MAX_MR rows");
#endif

/* The x86 builds deal whole panels out with shuffles, 32 (VNNI: 8 rows
 * of uint8) or 16 (AVX2: 4 rows of int16) values of K at a time, from rows
 * (a_cs == 1) or from columns (a_rs == 1) of A; the rest, and the other
 * shapes, take the block path below. Each returns the values of K it
 * packed (a multiple of 4, at most kc) and adds the rows' sums of the
 * packed values to sums[] when asked. */
#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
enum { DEAL_NONE = 0, DEAL_U8_8 = 1, DEAL_I16_4 = 2 };

/* 8 rows (src + i rs, 32 bytes each) -> 8 groups of 8 rows x 4 bytes. */
static ALWAYS_INLINE void deal_u8_8_rows(const uint8_t *src, ptrdiff_t rs, __m256i flip,
                                         uint8_t *out, __m256i *sums, bool sum) {
    __m256i r[8], t[8], u[8];
    for (size_t i = 0; i < 8; i++) {
        r[i] = _mm256_xor_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(src + (ptrdiff_t)i * rs)), flip);
    }
    /* per 128-bit lane L: t[2k] holds groups 4L, 4L+1 of rows 2k, 2k+1,
     * t[2k+1] groups 4L+2, 4L+3 */
    for (size_t k = 0; k < 4; k++) {
        t[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    /* u[m] (m < 4): group 4L+m of rows 0-3; u[4+m]: of rows 4-7 */
    for (size_t h = 0; h < 2; h++) {
        __m256i *th = t + 4 * h, *uh = u + 4 * h;
        uh[0] = _mm256_unpacklo_epi64(th[0], th[2]);
        uh[1] = _mm256_unpackhi_epi64(th[0], th[2]);
        uh[2] = _mm256_unpacklo_epi64(th[1], th[3]);
        uh[3] = _mm256_unpackhi_epi64(th[1], th[3]);
    }
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (size_t m = 0; m < 4; m++) {
        __m256i lo = _mm256_permute2x128_si256(u[m], u[4 + m], 0x20); /* group m */
        __m256i hi = _mm256_permute2x128_si256(u[m], u[4 + m], 0x31); /* group 4+m */
        _mm256_storeu_si256((__m256i *)(void *)(out + 32 * m), lo);
        _mm256_storeu_si256((__m256i *)(void *)(out + 32 * (4 + m)), hi);
        if (sum) {
            /* per row: its 4 bytes summed (pairs of at most 510: no
             * saturation) */
            *sums = _mm256_add_epi32(
                *sums, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ones8), ones16));
            *sums = _mm256_add_epi32(
                *sums, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ones8), ones16));
        }
    }
}

/* 32 values of K (src + q cs, 8 rows' bytes each) -> 8 groups. */
static ALWAYS_INLINE void deal_u8_8_cols(const uint8_t *src, ptrdiff_t cs, __m256i flip,
                                         uint8_t *out, __m256i *sums, bool sum) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (size_t q = 0; q < 8; q++) {
        __m128i x[4];
        for (size_t v = 0; v < 4; v++) {
            x[v] = _mm_loadl_epi64(
                (const __m128i *)(const void *)(src + (ptrdiff_t)(4 * q + v) * cs));
        }
        __m128i a = _mm_unpacklo_epi8(x[0], x[1]), b = _mm_unpacklo_epi8(x[2], x[3]);
        __m256i grp = _mm256_xor_si256(
            _mm256_setr_m128i(_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)), flip);
        _mm256_storeu_si256((__m256i *)(void *)(out + 32 * q), grp);
        if (sum) {
            *sums = _mm256_add_epi32(
                *sums, _mm256_madd_epi16(_mm256_maddubs_epi16(grp, ones8), ones16));
        }
    }
}

/* One group of 4 rows (16 bytes) widened and stored; its rows' sums. */
static ALWAYS_INLINE void store_i16_4(__m128i grp, int16_t *out, __m256i *sums, bool sum) {
    __m256i w = _mm256_cvtepu8_epi16(grp);
    _mm256_storeu_si256((__m256i *)(void *)out, w);
    if (sum) {
        /* lanes 2i, 2i+1: row i's two pairs */
        *sums = _mm256_add_epi32(*sums, _mm256_madd_epi16(w, _mm256_set1_epi16(1)));
    }
}

/* 4 rows (16 bytes each) -> 4 groups of 4 rows x 4 int16. */
static ALWAYS_INLINE void deal_i16_4_rows(const uint8_t *src, ptrdiff_t rs, __m128i flip,
                                          int16_t *out, __m256i *sums, bool sum) {
    __m128i r[4];
    for (size_t i = 0; i < 4; i++) {
        r[i] = _mm_xor_si128(
            _mm_loadu_si128((const __m128i *)(const void *)(src + (ptrdiff_t)i * rs)), flip);
    }
    __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpackhi_epi32(r[0], r[1]);
    __m128i t2 = _mm_unpacklo_epi32(r[2], r[3]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
    store_i16_4(_mm_unpacklo_epi64(t0, t2), out, sums, sum);
    store_i16_4(_mm_unpackhi_epi64(t0, t2), out + 16, sums, sum);
    store_i16_4(_mm_unpacklo_epi64(t1, t3), out + 32, sums, sum);
    store_i16_4(_mm_unpackhi_epi64(t1, t3), out + 48, sums, sum);
}

/* 16 values of K (src + q cs, 4 rows' bytes each) -> 4 groups. */
static ALWAYS_INLINE void deal_i16_4_cols(const uint8_t *src, ptrdiff_t cs, __m128i flip,
                                          int16_t *out, __m256i *sums, bool sum) {
    for (size_t q = 0; q < 4; q++) {
        __m128i x[4];
        for (size_t v = 0; v < 4; v++) {
            int word;
            memcpy(&word, src + (ptrdiff_t)(4 * q + v) * cs, sizeof word);
            x[v] = _mm_cvtsi32_si128(word);
        }
        __m128i a = _mm_unpacklo_epi8(x[0], x[1]), b = _mm_unpacklo_epi8(x[2], x[3]);
        store_i16_4(_mm_xor_si128(_mm_unpacklo_epi16(a, b), flip), out + 16 * q, sums, sum);
    }
}

static ALWAYS_INLINE size_t deal_fast(int deal, const uint8_t *base, ptrdiff_t rs,
                                      ptrdiff_t cs, size_t kc, uint8_t flip, void *panel,
                                      uint32_t *sums, bool sum) {
    size_t q = 0;
    __m256i acc = _mm256_setzero_si256();
    if (deal == DEAL_U8_8) {
        const __m256i f = _mm256_set1_epi8((char)flip);
        uint8_t *out = panel;
        if (cs == 1) {
            for (; q + 32 <= kc; q += 32) {
                deal_u8_8_rows(base + q, rs, f, out + 8 * q, &acc, sum);
            }
        } else if (rs == 1) {
            for (; q + 32 <= kc; q += 32) {
                deal_u8_8_cols(base + (ptrdiff_t)q * cs, cs, f, out + 8 * q, &acc, sum);
            }
        }
        if (sum) {
            uint32_t lanes[8];
            _mm256_storeu_si256((__m256i *)(void *)lanes, acc);
            for (size_t i = 0; i < 8; i++) {
                sums[i] += lanes[i];
            }
        }
    } else if (deal == DEAL_I16_4) {
        const __m128i f = _mm_set1_epi8((char)flip);
        int16_t *out = panel;
        if (cs == 1) {
            for (; q + 16 <= kc; q += 16) {
                deal_i16_4_rows(base + q, rs, f, out + 4 * q, &acc, sum);
            }
        } else if (rs == 1) {
            for (; q + 16 <= kc; q += 16) {
                deal_i16_4_cols(base + (ptrdiff_t)q * cs, cs, f, out + 4 * q, &acc, sum);
            }
        }
        if (sum) {
            uint32_t lanes[8];
            _mm256_storeu_si256((__m256i *)(void *)lanes, acc);
            for (size_t i = 0; i < 4; i++) {
                sums[i] += lanes[2 * i] + lanes[2 * i + 1];
            }
        }
    }
    return q;
}
#endif

static ALWAYS_INLINE void pack_a_rows(const plxk_qgemm_args *g, size_t i0, size_t mc,
                                      size_t p0, size_t kc, void *out, uint32_t *rowsum,
                                      bool first, size_t mr, bool wide, int deal) {
    const uint8_t flip = g->a_signed ? 0x80 : 0;
    const size_t kcp = round_up(kc, KG);
    const ptrdiff_t rs = g->a_rs, cs = g->a_cs;
    for (size_t ir = 0; ir < mc; ir += mr) {
        const size_t rows = min_size(mr, mc - ir);
        const uint8_t *base =
            (const uint8_t *)g->a + (ptrdiff_t)(i0 + ir) * rs + (ptrdiff_t)p0 * cs;
        uint32_t sums[PACK_MAX_MR] = {0};
        size_t start = 0;
#if defined(PLXK_GEMM_ISA_AVX2) || defined(PLXK_GEMM_ISA_AVX512)
        if (deal != DEAL_NONE && rows == mr) {
            start = deal_fast(deal, base, rs, cs, kc, flip,
                              (char *)out + ir * kcp * (wide ? 2 : 1), sums, rowsum != NULL);
        }
#else
        (void)deal;
#endif
        for (size_t q0 = start; q0 < kcp; q0 += PACK_BLOCK) {
            /* a multiple of KG: kcp and PACK_BLOCK are */
            const size_t qn = min_size(PACK_BLOCK, kcp - q0);
            uint8_t blk[PACK_MAX_MR][PACK_BLOCK];
            if (rows == mr && qn == PACK_BLOCK && q0 + PACK_BLOCK <= kc && (cs == 1 || rs == 1)) {
                if (cs == 1) {
                    for (size_t i = 0; i < mr; i++) {
                        memcpy(blk[i], base + (ptrdiff_t)i * rs + (ptrdiff_t)q0, PACK_BLOCK);
                    }
                } else {
                    for (size_t q = 0; q < PACK_BLOCK; q++) {
                        const uint8_t *col = base + (ptrdiff_t)(q0 + q) * cs;
                        for (size_t i = 0; i < mr; i++) {
                            blk[i][q] = col[i];
                        }
                    }
                }
                for (size_t i = 0; i < mr; i++) {
                    for (size_t q = 0; q < PACK_BLOCK; q++) {
                        blk[i][q] ^= flip;
                    }
                }
            } else {
                /* the edges: rows past the block and K past kc give 0 */
                for (size_t i = 0; i < mr; i++) {
                    for (size_t q = 0; q < qn; q++) {
                        blk[i][q] = i < rows && q0 + q < kc
                                        ? (uint8_t)(base[(ptrdiff_t)i * rs +
                                                         (ptrdiff_t)(q0 + q) * cs] ^
                                                    flip)
                                        : 0;
                    }
                }
            }
            if (rowsum) {
                for (size_t i = 0; i < mr; i++) {
                    uint32_t s = 0;
                    for (size_t q = 0; q < qn; q++) {
                        s += blk[i][q];
                    }
                    sums[i] += s;
                }
            }
            /* deal out: group q of row i to out[(q0/KG + q) mr + i] (in
             * units of KG values) */
            const size_t at = ir * kcp + q0 * mr; /* in values */
            if (KG == 4) {
                uint32_t words[PACK_MAX_MR][PACK_BLOCK / 4], dealt[PACK_BLOCK / 4][PACK_MAX_MR];
                memcpy(words, blk, sizeof words);
                for (size_t q = 0; q < PACK_BLOCK / 4; q++) {
                    for (size_t i = 0; i < mr; i++) {
                        dealt[q][i] = words[i][q];
                    }
                }
                const size_t groups = qn / 4;
                if (wide) {
                    int16_t *dst = (int16_t *)out + at;
                    for (size_t q = 0; q < groups; q++) {
                        const uint8_t *bytes = (const uint8_t *)dealt[q];
                        for (size_t x = 0; x < 4 * mr; x++) {
                            dst[q * 4 * mr + x] = bytes[x];
                        }
                    }
                } else {
                    uint8_t *dst = (uint8_t *)out + at;
                    for (size_t q = 0; q < groups; q++) {
                        memcpy(dst + q * 4 * mr, dealt[q], 4 * mr);
                    }
                }
            } else {
                /* KG 1 (portable, always wide) */
                int16_t *dst = (int16_t *)out + at;
                for (size_t q = 0; q < qn; q++) {
                    for (size_t i = 0; i < mr; i++) {
                        dst[q * mr + i] = blk[i][q];
                    }
                }
            }
        }
        if (rowsum) {
            for (size_t i = 0; i < rows; i++) {
                rowsum[ir + i] = first ? sums[i] : rowsum[ir + i] + sums[i];
            }
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

static ALWAYS_INLINE void tile_c(size_t rows, size_t kc, const int16_t *restrict a,
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
    const int16_t *pa = a;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const int8_t *bp = b + jr / NR * b_panel;
        for (size_t ir = 0; ir < mc; ir += MR_C) {
            const int16_t *ap = pa + ir * kc;
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
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_C, true, 0);
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

static ALWAYS_INLINE void tile_int16(size_t rows, size_t groups, const int16_t *restrict a,
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
        const int16_t *ag = a + g * MR_INT16 * KG;
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
static ALWAYS_INLINE void tile_int16(size_t rows, size_t groups, const int16_t *restrict a,
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
        const int16_t *ag = a + g * MR_INT16 * KG;
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
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_VNNI, false, DEAL_U8_8);
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
    const int16_t *pa = a;
    const size_t kcp = round_up(kc, KG), groups = kcp / KG;
    for (size_t jr = 0; jr < nc; jr += NR) {
        const int8_t *bp = b + jr / NR * b_panel;
        for (size_t ir = 0; ir < mc; ir += MR_INT16) {
            const int16_t *ap = pa + ir * kcp;
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
#if MR_INT16 > 4
            case 4:
                tile_int16(4, groups, ap, bp, c, ldacc, first);
                break;
#endif
            default:
                tile_int16(MR_INT16, groups, ap, bp, c, ldacc, first);
                break;
            }
        }
    }
}

static void pack_a_int16(const plxk_qgemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                         void *out, uint32_t *rowsum, bool first) {
    pack_a_rows(g, i0, mc, p0, kc, out, rowsum, first, MR_INT16, true,
                MR_INT16 == 4 ? DEAL_I16_4 : DEAL_NONE);
}

const plxk_qgemm_impl PLXK_ISA_SYMBOL(plxk_qgemm_impl_) = {
    .mr = MR_INT16, .nr = NR, .kg = KG, .kc = KC, .mc = MC, .nc = NC, .a_bytes = 2,
    .macs_per_ns = 24.0, .method = "int16",
    .pack_b = pack_b, .pack_a = pack_a_int16, .multiply = multiply_int16,
};
#endif
