/* cpu_ref's 8-bit integer GEMM driver (qgemm.h): checks the arguments,
 * picks the instruction-set variant (and, on AVX-512, VNNI or the 16-bit
 * method), splits C into regions of at most NC columns that the pool's
 * threads take, and per region: packs B (unless pre-packed), then for each
 * MC block of rows packs A a KC pass at a time, lets the micro-kernels
 * accumulate the block into 32-bit sums (qgemm_kernel.c) and writes the
 * block through the output stage, which applies the zero points (the
 * identity in qgemm_kernel.h), the bias and the conversion. Each thread
 * works in its own slice of the workspace. */
#include "qgemm.h"

#include <stdatomic.h>
#include <string.h>

#include "qgemm_kernel.h"

#define WORKSPACE_ALIGNMENT 64

/* ---- variants ------------------------------------------------------------ */

static atomic_bool vnni_allowed = true;

void plxk_qgemm_allow_vnni(bool allow) {
    atomic_store_explicit(&vnni_allowed, allow, memory_order_relaxed);
}

#if defined(PLXK_GEMM_X86)
static bool cpu_has_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni");
}
#endif

/* The kernels plxk_qgemm runs for `isa` (compiled in, not necessarily
 * supported). */
static const plxk_qgemm_impl *impl_of(plxk_isa isa) {
    switch (isa) {
    case PLXK_ISA_PORTABLE:
        return &plxk_qgemm_impl_portable;
#if defined(PLXK_GEMM_X86)
    case PLXK_ISA_AVX2:
        return &plxk_qgemm_impl_avx2;
    case PLXK_ISA_AVX512:
        if (atomic_load_explicit(&vnni_allowed, memory_order_relaxed) && cpu_has_vnni()) {
            return &plxk_qgemm_impl_avx512_vnni;
        }
        return &plxk_qgemm_impl_avx512;
#else
    case PLXK_ISA_AVX2:
    case PLXK_ISA_AVX512:
        break;
#endif
    }
    return NULL;
}

const char *plxk_qgemm_method(plxk_isa isa) {
    const plxk_qgemm_impl *impl = impl_of(isa);
    return impl ? impl->method : NULL;
}

/* ---- sizes --------------------------------------------------------------- */

static size_t min_size(size_t a, size_t b) {
    return a < b ? a : b;
}

static size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

static size_t ceil_div(size_t v, size_t by) {
    return (v + by - 1) / by;
}

/* a + b and a * b, saturating at SIZE_MAX (the overflow marker) */
static size_t add_sat(size_t a, size_t b) {
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b) {
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

static size_t align_bytes(size_t n) {
    return n > SIZE_MAX - WORKSPACE_ALIGNMENT ? SIZE_MAX : round_up(n, WORKSPACE_ALIGNMENT);
}

/* The packed B of `ncp` columns (a multiple of NR) over K rounded up to
 * KG: the panels, then three int32 per column, each array 64-byte
 * aligned: csum (sum over K of b - zb), zbs (B's zero point in the signed
 * form of the packed values) and, in a workspace slice only, the column's
 * constant term of the output stage. plxk_qgemm_pack_b's output is a
 * header followed by the panels, csum and zbs. */
typedef struct b_layout {
    size_t panels, csum, zbs, colterm, end; /* byte offsets */
} b_layout;

static b_layout layout_b(const plxk_qgemm_impl *impl, size_t ncp, size_t k) {
    b_layout l;
    size_t column_array = align_bytes(mul_sat(ncp, sizeof(uint32_t)));
    l.panels = 0;
    l.csum = align_bytes(mul_sat(ncp, round_up(k, impl->kg)));
    l.zbs = add_sat(l.csum, column_array);
    l.colterm = add_sat(l.zbs, column_array);
    l.end = add_sat(l.colterm, column_array);
    return l;
}

/* plxk_qgemm_pack_b's header: what the packing was for, checked by
 * plxk_qgemm. */
typedef struct packed_header {
    uint32_t magic, isa;
    uint64_t n, k;
    uint32_t zbs_nonzero; /* some column has a zero point (signed form) other than 0 */
} packed_header;
#define PACKED_MAGIC 0x42385150u /* "PQ8B" */
#define PACKED_HEADER_BYTES 64

/* One thread's slice of the workspace: B of a region (when not
 * pre-packed) and the columns' terms, a packed A block of one pass, the
 * block rows' sums of A and the block's 32-bit sums, each 64-byte aligned.
 * The region's columns, at most min(round_up(n, NR), NC), and the block's
 * rows, at most MC, bound every size, so that a slice sized for the
 * largest plan (one thread) serves any plan. */
typedef struct slice_layout {
    b_layout b;
    size_t a, rowsum, acc, end; /* byte offsets */
} slice_layout;

static slice_layout layout_slice(const plxk_qgemm_impl *impl, size_t m, size_t n, size_t k) {
    slice_layout s;
    size_t ncp = min_size(round_up(n, impl->nr), impl->nc);
    size_t mcp = min_size(round_up(m, impl->mr), impl->mc);
    size_t kcp = min_size(round_up(k, impl->kg), impl->kc);
    s.b = layout_b(impl, ncp, k);
    s.a = align_bytes(s.b.end);
    s.rowsum = add_sat(s.a, align_bytes(mul_sat(mul_sat(mcp, kcp), impl->a_bytes)));
    s.acc = add_sat(s.rowsum, align_bytes(mul_sat(mcp, sizeof(uint32_t))));
    s.end = add_sat(s.acc, align_bytes(mul_sat(mul_sat(mcp, ncp), sizeof(uint32_t))));
    return s;
}

/* Bytes of one slice for `isa`: on AVX-512 enough for either method, so
 * that plxk_qgemm_allow_vnni changes nothing the caller sized. */
static size_t slice_bytes(plxk_isa isa, const plxk_qgemm_impl *impl, size_t m, size_t n,
                          size_t k) {
    size_t bytes = layout_slice(impl, m, n, k).end;
#if defined(PLXK_GEMM_X86)
    if (isa == PLXK_ISA_AVX512) {
        size_t other = layout_slice(impl == &plxk_qgemm_impl_avx512 ? &plxk_qgemm_impl_avx512_vnni
                                                                    : &plxk_qgemm_impl_avx512,
                                    m, n, k)
                           .end;
        bytes = other > bytes ? other : bytes;
    }
#else
    (void)isa;
#endif
    return bytes;
}

size_t plxk_qgemm_workspace_size(plxk_isa isa, size_t m, size_t n, size_t k, size_t threads) {
    const plxk_qgemm_impl *impl = impl_of(isa);
    if (!impl || m == 0 || n == 0 || k == 0) {
        return 0;
    }
    size_t slice = slice_bytes(isa, impl, m, n, k);
    if (threads == 0) {
        threads = 1;
    }
    if (slice == SIZE_MAX || slice > (SIZE_MAX - WORKSPACE_ALIGNMENT) / threads) {
        return SIZE_MAX;
    }
    return slice * threads + WORKSPACE_ALIGNMENT;
}

size_t plxk_qgemm_packed_b_size(plxk_isa isa, size_t n, size_t k) {
    const plxk_qgemm_impl *impl = impl_of(isa);
    if (!impl || n == 0 || k == 0) {
        return 0;
    }
    size_t ncp = round_up(n, impl->nr);
    if (ncp < n) {
        return SIZE_MAX;
    }
    /* the panels, csum and zbs (no colterm) */
    return add_sat(PACKED_HEADER_BYTES, layout_b(impl, ncp, k).colterm);
}

/* ---- arguments ----------------------------------------------------------- */

static bool in_range(int32_t v, bool is_signed) {
    return is_signed ? v >= -128 && v <= 127 : v >= 0 && v <= 255;
}

/* B's zero point of column j, as given (not yet in the signed form). */
static int32_t b_zero_point(const plxk_qgemm_args *g, size_t j) {
    return g->b_zero_points ? g->b_zero_points[j] : g->b_zero_point;
}

static bool b_zero_points_valid(const plxk_qgemm_args *g) {
    if (!g->b_zero_points) {
        return in_range(g->b_zero_point, g->b_signed);
    }
    for (size_t j = 0; j < g->n; j++) {
        if (!in_range(g->b_zero_points[j], g->b_signed)) {
            return false;
        }
    }
    return true;
}

/* B's zero point in the form of the packed (signed) values. */
static int32_t b_zero_point_packed(const plxk_qgemm_args *g, size_t j) {
    return g->b_signed ? b_zero_point(g, j) : b_zero_point(g, j) - 128;
}

/* Whether some column's zero point, in the signed form, is not 0: then
 * the output stage needs the sums of A's rows. */
static bool b_zero_points_nonzero(const plxk_qgemm_args *g) {
    if (!g->b_zero_points) {
        return b_zero_point_packed(g, 0) != 0;
    }
    for (size_t j = 0; j < g->n; j++) {
        if (b_zero_point_packed(g, j) != 0) {
            return true;
        }
    }
    return false;
}

/* ---- packing B ----------------------------------------------------------- */

/* Columns [j0, j0+nc) of B into `body` (layout_b for round_up(nc, NR)
 * columns): the kernel's panels and sums, then csum and zbs. */
static void pack_body(const plxk_qgemm_impl *impl, const plxk_qgemm_args *g, size_t j0,
                      size_t nc, char *body) {
    size_t ncp = round_up(nc, impl->nr);
    b_layout l = layout_b(impl, ncp, g->k);
    uint32_t *csum = (uint32_t *)(void *)(body + l.csum);
    int32_t *zbs = (int32_t *)(void *)(body + l.zbs);
    impl->pack_b(g, j0, nc, (int8_t *)body, csum);
    for (size_t c = 0; c < ncp; c++) {
        int32_t zb = c < nc ? b_zero_point_packed(g, j0 + c) : 0;
        /* sum (b - zb) = sum b - K zb, modulo 2^32 */
        csum[c] -= (uint32_t)g->k * (uint32_t)zb;
        zbs[c] = zb;
    }
}

bool plxk_qgemm_pack_b(plxk_isa isa, const plxk_qgemm_args *args, void *out, size_t size) {
    const plxk_qgemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa) || !args || !args->b || !out) {
        return false;
    }
    size_t need = plxk_qgemm_packed_b_size(isa, args->n, args->k);
    if (need == SIZE_MAX || size < need || !b_zero_points_valid(args)) {
        return false;
    }
    if (need == 0) {
        return true;
    }
    packed_header h = {PACKED_MAGIC, (uint32_t)isa, args->n, args->k,
                       b_zero_points_nonzero(args)};
    memset(out, 0, PACKED_HEADER_BYTES);
    memcpy(out, &h, sizeof h);
    pack_body(impl, args, 0, args->n, (char *)out + PACKED_HEADER_BYTES);
    return true;
}

/* ---- the output stage ---------------------------------------------------- */

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

static ALWAYS_INLINE int32_t as_int32(uint32_t u) {
    /* the two's complement value, without implementation-defined casts
     * (compiles to nothing) */
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* Columns are converted STORE_CHUNK at a time through arrays on the stack,
 * each step a simple loop that the compiler vectorises. */
enum { STORE_CHUNK = 64 };

/* x * 1 rounded to an integer, ties to even, for |x| <= 2^22: adding
 * 1.5 x 2^23 leaves no fraction bits, so the addition rounds (in the
 * current rounding mode, to nearest-even by default) and the subtraction
 * is exact. The same as nearbyintf there, and vectorisable. */
#define ROUND_MAGIC 12582912.0f

/* Row i's bias as an addend: bias[i] with per_row, else 0 (the columns'
 * biases are in colterm). */
static ALWAYS_INLINE uint32_t row_bias(const plxk_qgemm_args *g, size_t i) {
    return g->per_row && g->bias ? (uint32_t)g->bias[i] : 0u;
}

/* cn (<= STORE_CHUNK) values of one row of a UINT8 / INT8 output stage
 * (store_rows_body) into q: the same operations as its general path, in
 * the same order, as one loop the compiler vectorises; scale s[c * ss]
 * (ss 0 or 1); rowadd: the row's bias (per_row), else 0. */
static ALWAYS_INLINE void q8_chunk(const plxk_qgemm_args *g, size_t cn, const uint32_t *acc,
                                   const uint32_t *colterm, const int32_t *zbs, uint32_t rs,
                                   bool has_rowsum, uint32_t rowadd, const float *s,
                                   ptrdiff_t ss, uint8_t *q) {
    const int32_t zp = g->out_zero_point;
    const bool u8 = g->output == PLXK_QOUT_UINT8;
    const int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    for (size_t c = 0; c < cn; c++) {
        uint32_t u = acc[c] + rowadd;
        u += colterm ? colterm[c] : 0u;
        u -= has_rowsum ? (uint32_t)zbs[c] * rs : 0u;
        float t = (float)as_int32(u) * s[(ptrdiff_t)c * ss];
        t = t < -1024.0f ? -1024.0f : t > 1024.0f ? 1024.0f : t == t ? t : 0.0f;
        t = (t + ROUND_MAGIC) - ROUND_MAGIC;
        int32_t rq = (int32_t)t + zp;
        q[c] = (uint8_t)(rq < lo ? lo : rq > hi ? hi : rq);
    }
}

/* Transposes the 8 x 8 bytes held as 8 little-endian rows (byte j of x[i]
 * is element (i, j)): swaps of the off-diagonal bytes, 16-bit pairs and
 * 32-bit halves of 2 x 2 blocks. */
static ALWAYS_INLINE void transpose_8x8_bytes(uint64_t x[8]) {
    for (size_t i = 0; i < 8; i += 2) {
        uint64_t t = ((x[i] >> 8) ^ x[i + 1]) & 0x00FF00FF00FF00FFull;
        x[i + 1] ^= t;
        x[i] ^= t << 8;
    }
    for (size_t i = 0; i < 8; i += (i % 4 == 1) ? 3 : 1) {
        uint64_t t = ((x[i] >> 16) ^ x[i + 2]) & 0x0000FFFF0000FFFFull;
        x[i + 2] ^= t;
        x[i] ^= t << 16;
    }
    for (size_t i = 0; i < 4; i++) {
        uint64_t t = ((x[i] >> 32) ^ x[i + 4]) & 0x00000000FFFFFFFFull;
        x[i + 4] ^= t;
        x[i] ^= t << 32;
    }
}

/* The UINT8 / INT8 stage of rows [i0, i0+rows) x columns [j0, j0+n) into
 * a C whose rows are adjacent (c_rs 1, an NCHW output written as [pixels,
 * channels]): blocks of 64 x STORE_CHUNK values are made row by row and
 * written column by column, each column a run of adjacent bytes. */
static ALWAYS_INLINE void store_q8_columns(const plxk_qgemm_args *g, size_t i0, size_t rows,
                                           size_t j0, size_t n, const uint32_t *acc,
                                           size_t ldacc, const uint32_t *colterm,
                                           const int32_t *zbs, const uint32_t *rowsum) {
    enum { RB = 64 };
    const ptrdiff_t cs = g->c_cs, ss = g->scale_stride;
    const bool per_row = g->per_row;
    const int32_t *bias = g->bias;
    const float *s = per_row ? g->scale : g->scale + (ptrdiff_t)j0 * ss;
    uint8_t blk[RB][STORE_CHUNK];
    for (size_t r0 = 0; r0 < rows; r0 += RB) {
        const size_t rb = min_size(RB, rows - r0);
        for (size_t c0 = 0; c0 < n; c0 += STORE_CHUNK) {
            const size_t cn = min_size(STORE_CHUNK, n - c0);
            for (size_t r = 0; r < rb; r++) {
                const size_t i = i0 + r0 + r;
                if (per_row) {
                    q8_chunk(g, cn, acc + (r0 + r) * ldacc + c0, colterm ? colterm + c0 : NULL,
                             zbs + c0, rowsum ? rowsum[r0 + r] : 0u, rowsum != NULL,
                             bias ? (uint32_t)bias[i] : 0u, s + (ptrdiff_t)i * ss, 0, blk[r]);
                } else {
                    q8_chunk(g, cn, acc + (r0 + r) * ldacc + c0, colterm ? colterm + c0 : NULL,
                             zbs + c0, rowsum ? rowsum[r0 + r] : 0u, rowsum != NULL, 0u,
                             s + (ptrdiff_t)c0 * ss, ss, blk[r]);
                }
            }
            uint8_t *dst = (uint8_t *)g->c + (ptrdiff_t)(i0 + r0) + (ptrdiff_t)(j0 + c0) * cs;
            const size_t rb8 = rb / 8 * 8, cn8 = cn / 8 * 8;
            for (size_t c = 0; c < cn8; c += 8) {
                for (size_t r = 0; r < rb8; r += 8) {
                    uint64_t x[8];
                    for (size_t i = 0; i < 8; i++) {
                        memcpy(&x[i], &blk[r + i][c], 8);
                    }
                    transpose_8x8_bytes(x);
                    for (size_t i = 0; i < 8; i++) {
                        memcpy(dst + (ptrdiff_t)(c + i) * cs + (ptrdiff_t)r, &x[i], 8);
                    }
                }
                for (size_t i = 0; i < 8; i++) {
                    for (size_t r = rb8; r < rb; r++) {
                        dst[(ptrdiff_t)(c + i) * cs + (ptrdiff_t)r] = blk[r][c + i];
                    }
                }
            }
            for (size_t c = cn8; c < cn; c++) {
                for (size_t r = 0; r < rb; r++) {
                    dst[(ptrdiff_t)c * cs + (ptrdiff_t)r] = blk[r][c];
                }
            }
        }
    }
}

/* Writes rows [i0, i0+rows) x columns [j0, j0+n) of C: row r from the
 * 32-bit sums acc + r ldacc (acc NULL: all 0, K = 0), plus colterm[c]
 * (NULL: 0), minus zbs[c] rowsum[r] (rowsum NULL: no such term). Compiled
 * once more for AVX2 and AVX-512 (store_rows_of): without contraction of
 * multiplies and adds (ISO C's default, -ffp-contract=off), so every copy
 * rounds as the contract says. */
static ALWAYS_INLINE void store_rows_body(const plxk_qgemm_args *g, size_t i0, size_t rows,
                                          size_t j0, size_t n, const uint32_t *acc,
                                          size_t ldacc, const uint32_t *colterm,
                                          const int32_t *zbs, const uint32_t *rowsum) {
    const ptrdiff_t cs = g->c_cs, ss = g->scale_stride;
    const plxk_qgemm_output output = g->output;
    const bool q8 = output == PLXK_QOUT_UINT8 || output == PLXK_QOUT_INT8;
    if (q8 && acc && ss <= 1 && g->c_rs == 1 && cs != 1) {
        store_q8_columns(g, i0, rows, j0, n, acc, ldacc, colterm, zbs, rowsum);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        const ptrdiff_t at = (ptrdiff_t)(i0 + r) * g->c_rs + (ptrdiff_t)j0 * cs; /* elements */
        const uint32_t *acc_row = acc ? acc + r * ldacc : NULL;
        const uint32_t rs = rowsum ? rowsum[r] : 0, radd = row_bias(g, i0 + r);
        /* the scales of this row's columns: s[c * css] */
        const float *srow = g->per_row ? g->scale + (ptrdiff_t)(i0 + r) * ss
                                       : g->scale + (ptrdiff_t)j0 * ss;
        const ptrdiff_t css = g->per_row ? 0 : ss;
        if (acc_row && q8 && ss <= 1) {
            for (size_t c0 = 0; c0 < n; c0 += STORE_CHUNK) {
                const size_t cn = min_size(STORE_CHUNK, n - c0);
                uint8_t q[STORE_CHUNK];
                if (g->per_row) {
                    q8_chunk(g, cn, acc_row + c0, colterm ? colterm + c0 : NULL, zbs + c0, rs,
                             rowsum != NULL, radd, srow, 0, q);
                } else {
                    q8_chunk(g, cn, acc_row + c0, colterm ? colterm + c0 : NULL, zbs + c0, rs,
                             rowsum != NULL, 0u, srow + (ptrdiff_t)c0 * ss, ss, q);
                }
                uint8_t *dst = (uint8_t *)g->c + at + (ptrdiff_t)c0 * cs;
                for (size_t c = 0; c < cn; c++) {
                    dst[(ptrdiff_t)c * cs] = q[c];
                }
            }
            continue;
        }
        for (size_t c0 = 0; c0 < n; c0 += STORE_CHUNK) {
            const size_t cn = min_size(STORE_CHUNK, n - c0);
            const ptrdiff_t base = at + (ptrdiff_t)c0 * cs;
            uint32_t u[STORE_CHUNK];
            if (acc_row) {
                memcpy(u, acc_row + c0, cn * sizeof *u);
            } else {
                memset(u, 0, cn * sizeof *u);
            }
            for (size_t c = 0; radd && c < cn; c++) {
                u[c] += radd;
            }
            if (colterm) {
                for (size_t c = 0; c < cn; c++) {
                    u[c] += colterm[c0 + c];
                }
            }
            if (rowsum) {
                for (size_t c = 0; c < cn; c++) {
                    u[c] -= (uint32_t)zbs[c0 + c] * rs;
                }
            }
            int32_t v[STORE_CHUNK];
            for (size_t c = 0; c < cn; c++) {
                v[c] = as_int32(u[c]);
            }
            if (output == PLXK_QOUT_INT32) {
                int32_t *dst = (int32_t *)g->c + base;
                if (cs == 1) {
                    memcpy(dst, v, cn * sizeof *v);
                } else {
                    for (size_t c = 0; c < cn; c++) {
                        dst[(ptrdiff_t)c * cs] = v[c];
                    }
                }
                continue;
            }
            float x[STORE_CHUNK];
            const float *s = srow + (ptrdiff_t)c0 * css;
            if (css == 0) {
                const float s0 = s[0];
                for (size_t c = 0; c < cn; c++) {
                    x[c] = (float)v[c] * s0;
                }
            } else if (css == 1) {
                for (size_t c = 0; c < cn; c++) {
                    x[c] = (float)v[c] * s[c];
                }
            } else {
                for (size_t c = 0; c < cn; c++) {
                    x[c] = (float)v[c] * s[(ptrdiff_t)c * css];
                }
            }
            if (output == PLXK_QOUT_FLOAT) {
                if (g->fbias) {
                    const float *fb = g->fbias + j0 + c0;
                    for (size_t c = 0; c < cn; c++) {
                        x[c] += fb[c];
                    }
                }
                /* as plxk_gemm_activate (gemm_kernel.h): NaN stays NaN */
                if (g->act == PLXK_ACT_RELU) {
                    for (size_t c = 0; c < cn; c++) {
                        x[c] = x[c] < 0.0f ? 0.0f : x[c];
                    }
                } else if (g->act == PLXK_ACT_CLIP) {
                    const float lo = g->lo, hi = g->hi;
                    for (size_t c = 0; c < cn; c++) {
                        x[c] = x[c] < lo ? lo : x[c] > hi ? hi : x[c];
                    }
                } else if (g->act == PLXK_ACT_LEAKY) {
                    const float slope = g->slope;
                    for (size_t c = 0; c < cn; c++) {
                        x[c] = x[c] < 0.0f ? slope * x[c] : x[c];
                    }
                }
                float *dst = (float *)g->c + base;
                if (cs == 1) {
                    memcpy(dst, x, cn * sizeof *x);
                } else {
                    for (size_t c = 0; c < cn; c++) {
                        dst[(ptrdiff_t)c * cs] = x[c];
                    }
                }
                continue;
            }
            /* UINT8 / INT8: beyond +-1024 every zero point saturates, so
             * the value is clamped there first (a NaN, from a NaN or
             * infinite scale, counts as 0), rounded, shifted by the zero
             * point and saturated */
            const int32_t zp = g->out_zero_point;
            const int32_t lo = output == PLXK_QOUT_UINT8 ? 0 : -128;
            const int32_t hi = output == PLXK_QOUT_UINT8 ? 255 : 127;
            int32_t q[STORE_CHUNK];
            for (size_t c = 0; c < cn; c++) {
                float t = x[c];
                t = t < -1024.0f ? -1024.0f : t > 1024.0f ? 1024.0f : t == t ? t : 0.0f;
                t = (t + ROUND_MAGIC) - ROUND_MAGIC;
                int32_t rq = (int32_t)t + zp;
                q[c] = rq < lo ? lo : rq > hi ? hi : rq;
            }
            if (output == PLXK_QOUT_UINT8) {
                uint8_t *dst = (uint8_t *)g->c + base;
                if (cs == 1) {
                    for (size_t c = 0; c < cn; c++) {
                        dst[c] = (uint8_t)q[c];
                    }
                } else {
                    for (size_t c = 0; c < cn; c++) {
                        dst[(ptrdiff_t)c * cs] = (uint8_t)q[c];
                    }
                }
            } else {
                int8_t *dst = (int8_t *)g->c + base;
                if (cs == 1) {
                    for (size_t c = 0; c < cn; c++) {
                        dst[c] = (int8_t)q[c];
                    }
                } else {
                    for (size_t c = 0; c < cn; c++) {
                        dst[(ptrdiff_t)c * cs] = (int8_t)q[c];
                    }
                }
            }
        }
    }
}

typedef void (*store_rows_fn)(const plxk_qgemm_args *g, size_t i0, size_t rows, size_t j0,
                              size_t n, const uint32_t *acc, size_t ldacc,
                              const uint32_t *colterm, const int32_t *zbs,
                              const uint32_t *rowsum);

static void store_rows_portable(const plxk_qgemm_args *g, size_t i0, size_t rows, size_t j0,
                                size_t n, const uint32_t *acc, size_t ldacc,
                                const uint32_t *colterm, const int32_t *zbs,
                                const uint32_t *rowsum) {
    store_rows_body(g, i0, rows, j0, n, acc, ldacc, colterm, zbs, rowsum);
}

#if defined(PLXK_GEMM_X86)
__attribute__((target("avx2"))) static void store_rows_avx2(
    const plxk_qgemm_args *g, size_t i0, size_t rows, size_t j0, size_t n, const uint32_t *acc,
    size_t ldacc, const uint32_t *colterm, const int32_t *zbs, const uint32_t *rowsum) {
    store_rows_body(g, i0, rows, j0, n, acc, ldacc, colterm, zbs, rowsum);
}

/* GCC vectorises for 256-bit vectors unless told otherwise; Clang has no
 * such target option */
#if defined(__clang__)
#define STORE_AVX512_TARGET "avx512f,avx512vl,avx512bw,avx512dq,avx2"
#else
#define STORE_AVX512_TARGET "avx512f,avx512vl,avx512bw,avx512dq,avx2,prefer-vector-width=512"
#endif
__attribute__((target(STORE_AVX512_TARGET))) static void store_rows_avx512(
    const plxk_qgemm_args *g, size_t i0, size_t rows, size_t j0, size_t n, const uint32_t *acc,
    size_t ldacc, const uint32_t *colterm, const int32_t *zbs, const uint32_t *rowsum) {
    store_rows_body(g, i0, rows, j0, n, acc, ldacc, colterm, zbs, rowsum);
}
#endif

/* The output stage for `isa` (a supported one). */
static store_rows_fn store_rows_of(plxk_isa isa) {
#if defined(PLXK_GEMM_X86)
    if (isa == PLXK_ISA_AVX512) {
        return store_rows_avx512;
    }
    if (isa == PLXK_ISA_AVX2) {
        return store_rows_avx2;
    }
#else
    (void)isa;
#endif
    return store_rows_portable;
}

/* ---- planning ------------------------------------------------------------ */

/* parts_m x parts_n regions of at most rows x nc (rows a multiple of MR,
 * nc of NR), as gemm.c cuts its products. */
typedef struct plan {
    size_t rows, nc, parts_m, parts_n;
} plan;

static void set_parts(plan *p, const plxk_qgemm_impl *impl, size_t m, size_t n, size_t parts_m,
                      size_t parts_n) {
    p->rows = round_up(ceil_div(m, parts_m), impl->mr);
    p->nc = round_up(ceil_div(n, parts_n), impl->nr);
    p->parts_m = ceil_div(m, p->rows);
    p->parts_n = ceil_div(n, p->nc);
}

/* One region per NC columns, then cuts until every thread has one and the
 * count is a multiple of the threads (or at least 8 per thread). Cutting
 * the columns packs A again; cutting the rows packs B again (when it is
 * not pre-packed): the longer side is cut. */
static plan make_plan(const plxk_qgemm_impl *impl, size_t m, size_t n, size_t threads) {
    plan p;
    set_parts(&p, impl, m, n, 1, ceil_div(n, impl->nc));
    for (;;) {
        size_t parts = p.parts_m * p.parts_n;
        if (threads <= 1 || (parts >= threads && (parts % threads == 0 || parts >= 8 * threads))) {
            break;
        }
        plan cut_m = p, cut_n = p;
        set_parts(&cut_m, impl, m, n, p.parts_m + 1, p.parts_n);
        set_parts(&cut_n, impl, m, n, p.parts_m, p.parts_n + 1);
        bool can_m = cut_m.parts_m > p.parts_m, can_n = cut_n.parts_n > p.parts_n;
        if (can_n && (p.nc >= p.rows || !can_m)) {
            p = cut_n;
        } else if (can_m) {
            p = cut_m;
        } else {
            break;
        }
    }
    return p;
}

/* ---- running ------------------------------------------------------------- */

typedef struct qgemm_run {
    const plxk_qgemm_impl *impl;
    const plxk_qgemm_args *g;
    plan plan;
    slice_layout slice; /* offsets in each thread's slice */
    char *slices;       /* aligned; slice t belongs to thread t */
    size_t slice_bytes;
    const char *packed; /* the pre-packed B's body (past the header), or NULL */
    b_layout packed_layout;
    bool need_rowsum;   /* some column's zero point (signed form) is not 0 */
    store_rows_fn store;
    uint32_t za;        /* A's zero point in the unsigned form */
} qgemm_run;

static void run_region(void *ctx, size_t task, size_t thread) {
    const qgemm_run *r = ctx;
    const plxk_qgemm_impl *impl = r->impl;
    const plxk_qgemm_args *g = r->g;
    size_t ti = task / r->plan.parts_n, tj = task % r->plan.parts_n;
    size_t i0 = ti * r->plan.rows, j0 = tj * r->plan.nc;
    size_t m = min_size(r->plan.rows, g->m - i0), nc = min_size(r->plan.nc, g->n - j0);
    size_t ncp = round_up(nc, impl->nr), kp = round_up(g->k, impl->kg);
    char *slice = r->slices + thread * r->slice_bytes;
    /* B's panels and column sums: the pre-packed ones, or packed here */
    const int8_t *panels;
    const uint32_t *csum;
    const int32_t *zbs;
    if (r->packed) {
        panels = (const int8_t *)r->packed + j0 * kp;
        csum = (const uint32_t *)(const void *)(r->packed + r->packed_layout.csum) + j0;
        zbs = (const int32_t *)(const void *)(r->packed + r->packed_layout.zbs) + j0;
    } else {
        b_layout l = layout_b(impl, ncp, g->k);
        pack_body(impl, g, j0, nc, slice);
        panels = (const int8_t *)slice;
        csum = (const uint32_t *)(void *)(slice + l.csum);
        zbs = (const int32_t *)(void *)(slice + l.zbs);
    }
    /* the column's constant: bias - za csum */
    uint32_t *colterm = (uint32_t *)(void *)(slice + r->slice.b.colterm);
    for (size_t c = 0; c < nc; c++) {
        colterm[c] = (g->bias && !g->per_row ? (uint32_t)g->bias[j0 + c] : 0u) - r->za * csum[c];
    }
    void *pack_a = slice + r->slice.a;
    uint32_t *rowsum = r->need_rowsum ? (uint32_t *)(void *)(slice + r->slice.rowsum) : NULL;
    uint32_t *acc = (uint32_t *)(void *)(slice + r->slice.acc);
    /* passes of equal length (a multiple of KG), at most KC */
    size_t passes = ceil_div(g->k, impl->kc);
    size_t kc_pass = round_up(ceil_div(g->k, passes), impl->kg);
    for (size_t ic = 0; ic < m; ic += impl->mc) {
        size_t mc = min_size(impl->mc, m - ic);
        for (size_t p0 = 0; p0 < g->k; p0 += kc_pass) {
            size_t kc = min_size(kc_pass, g->k - p0);
            impl->pack_a(g, i0 + ic, mc, p0, kc, pack_a, rowsum, p0 == 0);
            impl->multiply(mc, nc, kc, pack_a, panels + p0 * impl->nr, impl->nr * kp, acc,
                           ncp, p0 == 0);
        }
        r->store(g, i0 + ic, mc, j0, nc, acc, ncp, colterm, zbs, rowsum);
    }
}

/* The checks of plxk_qgemm that need no workspace. */
static bool args_valid(const plxk_qgemm_args *g) {
    if (!in_range(g->a_zero_point, g->a_signed) || !b_zero_points_valid(g)) {
        return false;
    }
    if ((unsigned)g->output > (unsigned)PLXK_QOUT_INT8) {
        return false;
    }
    if (g->output != PLXK_QOUT_INT32 && !g->scale) {
        return false;
    }
    if (g->output == PLXK_QOUT_FLOAT && (unsigned)g->act > (unsigned)PLXK_ACT_LEAKY) {
        return false;
    }
    if (g->output == PLXK_QOUT_UINT8 || g->output == PLXK_QOUT_INT8) {
        return in_range(g->out_zero_point, g->output == PLXK_QOUT_INT8);
    }
    return true;
}

bool plxk_qgemm(plxk_isa isa, plxk_pool *pool, const plxk_qgemm_args *args, void *workspace,
                size_t workspace_size) {
    const plxk_qgemm_impl *impl = impl_of(isa);
    if (!args || !impl || !plxk_isa_supported(isa)) {
        return false;
    }
    const plxk_qgemm_args *g = args;
    if (g->m == 0 || g->n == 0) {
        return args_valid(g);
    }
    if (!args_valid(g) || !g->c) {
        return false;
    }
    if (g->k == 0) { /* v = bias */
        store_rows_of(isa)(g, 0, g->m, 0, g->n, NULL, 0,
                           g->per_row ? NULL : (const uint32_t *)(const void *)g->bias, NULL,
                           NULL);
        return true;
    }
    if (!g->a || (!g->b && !g->packed_b)) {
        return false;
    }
    qgemm_run r = {.impl = impl, .g = g, .store = store_rows_of(isa)};
    if (g->packed_b) {
        packed_header h;
        memcpy(&h, g->packed_b, sizeof h);
        if (h.magic != PACKED_MAGIC || h.isa != (uint32_t)isa || h.n != g->n || h.k != g->k) {
            return false;
        }
        r.packed = (const char *)g->packed_b + PACKED_HEADER_BYTES;
        r.packed_layout = layout_b(impl, round_up(g->n, impl->nr), g->k);
        r.need_rowsum = h.zbs_nonzero != 0;
    } else {
        r.need_rowsum = b_zero_points_nonzero(g);
    }
    r.za = (uint32_t)(g->a_signed ? g->a_zero_point + 128 : g->a_zero_point);
    /* the slices that fit after aligning the workspace's start */
    uintptr_t start = (uintptr_t)workspace;
    size_t skip = (size_t)(round_up(start, WORKSPACE_ALIGNMENT) - start);
    size_t usable = workspace && workspace_size > skip ? workspace_size - skip : 0;
    size_t slice = slice_bytes(isa, impl, g->m, g->n, g->k);
    if (slice == SIZE_MAX || usable < slice ||
        workspace_size < plxk_qgemm_workspace_size(isa, g->m, g->n, g->k, 1)) {
        return false;
    }
    size_t threads = plxk_pool_threads(pool);
    if (usable / slice < threads) {
        pool = NULL; /* not enough room for every thread: run here */
        threads = 1;
    }
    r.plan = make_plan(impl, g->m, g->n, threads);
    r.slice = layout_slice(impl, g->m, g->n, g->k);
    r.slices = (char *)workspace + skip;
    r.slice_bytes = slice;
    double cost_ns = (double)g->m * (double)g->n * (double)g->k / impl->macs_per_ns;
    plxk_pool_run(pool, r.plan.parts_m * r.plan.parts_n, cost_ns, run_region, &r);
    return true;
}
