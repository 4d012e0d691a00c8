/* The loops of qmap.h, compiled once per instruction set (kernels/meson.build)
 * like gemm_kernel.c; gemm.c dispatches to them through plxk_gemm_impl. */
#include <math.h>
#include <string.h>

#include "gemm_kernel.h"

#if defined(PLXK_GEMM_ISA_AVX512)
#include <immintrin.h>
#endif

/* plxk_round_even_small of kernels_compute.h: v + 1.5 2^23 - 1.5 2^23
 * rounds |v| < 2^22 to an integer, half to even, in the default rounding
 * mode. */
static inline float round_even_small(float v) {
    const float magic = 12582912.0f;
    return (v + magic) - magic;
}

/* y = the quantization of `expr` (the real result): rounded half to even,
 * plus the output's zero point, saturated. Clamped to +-4096 first, far
 * outside any 8-bit range, so that the rounding is exact. */
#define QBIN_STORE(ty, dst, expr)                                         \
    do {                                                                  \
        float v_ = (expr) / p->sy;                                        \
        v_ = v_ < -4096.0f ? -4096.0f : v_ > 4096.0f ? 4096.0f : v_;      \
        v_ = round_even_small(v_) + p->zy;                                \
        dst = (ty)(v_ < p->lo ? p->lo : v_ > p->hi ? p->hi : v_);         \
    } while (0)
#define QBIN_LOOP(name, ta, tb, ty, op)                                                       \
    static void name(const void *pa, bool da, const void *pb, bool db, void *py, size_t n,   \
                     const plxk_qbin_params *p) {                                             \
        const ta *restrict a = pa;                                                            \
        const tb *restrict b = pb;                                                            \
        ty *restrict y = py;                                                                  \
        if (da && db) {                                                                       \
            for (size_t i = 0; i < n; i++) {                                                  \
                QBIN_STORE(ty, y[i], (float)((int32_t)a[i] - p->za) * p->sa op                \
                                         (float)((int32_t)b[i] - p->zb) * p->sb);             \
            }                                                                                 \
        } else if (da) {                                                                      \
            const float vb = (float)((int32_t)b[0] - p->zb) * p->sb;                          \
            for (size_t i = 0; i < n; i++) {                                                  \
                QBIN_STORE(ty, y[i], (float)((int32_t)a[i] - p->za) * p->sa op vb);           \
            }                                                                                 \
        } else if (db) {                                                                      \
            const float va = (float)((int32_t)a[0] - p->za) * p->sa;                          \
            for (size_t i = 0; i < n; i++) {                                                  \
                QBIN_STORE(ty, y[i], va op(float)((int32_t)b[i] - p->zb) * p->sb);            \
            }                                                                                 \
        } else {                                                                              \
            ty v;                                                                             \
            QBIN_STORE(ty, v, (float)((int32_t)a[0] - p->za) * p->sa op                       \
                                  (float)((int32_t)b[0] - p->zb) * p->sb);                    \
            for (size_t i = 0; i < n; i++) {                                                  \
                y[i] = v;                                                                     \
            }                                                                                 \
        }                                                                                     \
    }
#define QBIN_FUNCS(suffix, ta, tb, ty)                 \
    QBIN_LOOP(qbin_add_##suffix, ta, tb, ty, +)        \
    QBIN_LOOP(qbin_sub_##suffix, ta, tb, ty, -)        \
    QBIN_LOOP(qbin_mul_##suffix, ta, tb, ty, *)
QBIN_FUNCS(sss, int8_t, int8_t, int8_t)
QBIN_FUNCS(ssu, int8_t, int8_t, uint8_t)
QBIN_FUNCS(sus, int8_t, uint8_t, int8_t)
QBIN_FUNCS(suu, int8_t, uint8_t, uint8_t)
QBIN_FUNCS(uss, uint8_t, int8_t, int8_t)
QBIN_FUNCS(usu, uint8_t, int8_t, uint8_t)
QBIN_FUNCS(uus, uint8_t, uint8_t, int8_t)
QBIN_FUNCS(uuu, uint8_t, uint8_t, uint8_t)
#undef QBIN_FUNCS
#undef QBIN_LOOP
#undef QBIN_STORE

typedef void (*qbin_fn)(const void *, bool, const void *, bool, void *, size_t,
                        const plxk_qbin_params *);

/* [func][types (PLXK_QTYPES)] */
static const qbin_fn qbin_table[3][8] = {
    {qbin_add_sss, qbin_add_ssu, qbin_add_sus, qbin_add_suu, qbin_add_uss, qbin_add_usu,
     qbin_add_uus, qbin_add_uuu},
    {qbin_sub_sss, qbin_sub_ssu, qbin_sub_sus, qbin_sub_suu, qbin_sub_uss, qbin_sub_usu,
     qbin_sub_uus, qbin_sub_uuu},
    {qbin_mul_sss, qbin_mul_ssu, qbin_mul_sus, qbin_mul_suu, qbin_mul_uss, qbin_mul_usu,
     qbin_mul_uus, qbin_mul_uuu},
};

void PLXK_ISA_SYMBOL(plxk_qbinary_)(plxk_qfunc f, unsigned types, const void *a, bool da,
                                    const void *b, bool db, void *y, size_t n,
                                    const plxk_qbin_params *p) {
    qbin_table[f][types & 7u](a, da, b, db, y, n, p);
}

/* x / scale clamped to the output's range less the zero point, then
 * rounded (the bounds are integers, so clamping first gives what rounding
 * first would, and keeps the rounding exact); NaN gives the zero point. */
#define QUANTIZE_LOOP(type, lo, hi)                                                \
    do {                                                                           \
        type *restrict out = y;                                                    \
        const float a = (float)((lo) - zp), b = (float)((hi) - zp), z = (float)zp; \
        for (size_t i = 0; i < n; i++) {                                           \
            float v = x[i] / scale;                                                \
            v = v == v ? v : 0.0f;                                                 \
            v = v < a ? a : v > b ? b : v;                                         \
            out[i] = (type)(round_even_small(v) + z);                              \
        }                                                                          \
    } while (0)

void PLXK_ISA_SYMBOL(plxk_quantize8_)(bool u8, const float *restrict x, void *restrict y,
                                      size_t n, float scale, int32_t zp) {
    if (u8) {
        QUANTIZE_LOOP(uint8_t, 0, 255);
    } else {
        QUANTIZE_LOOP(int8_t, -128, 127);
    }
}
#undef QUANTIZE_LOOP

#define REQUANTIZE_LOOP(type, lo, hi)                                              \
    do {                                                                           \
        type *restrict out = y;                                                    \
        const float z = (float)zp;                                                 \
        for (size_t i = 0; i < n; i++) {                                           \
            float v = (float)((int32_t)acc[i] + bias) * scale;                     \
            v = v < -4096.0f ? -4096.0f : v > 4096.0f ? 4096.0f : v;               \
            v = round_even_small(v) + z;                                           \
            out[i] = (type)(v < (lo) ? (lo) : v > (hi) ? (hi) : v);                \
        }                                                                          \
    } while (0)

void PLXK_ISA_SYMBOL(plxk_requantize8_)(bool u8, const float *restrict acc, int32_t bias,
                                        float scale, int32_t zp, void *restrict y, size_t n) {
    if (u8) {
        REQUANTIZE_LOOP(uint8_t, 0.0f, 255.0f);
    } else {
        REQUANTIZE_LOOP(int8_t, -128.0f, 127.0f);
    }
}
#undef REQUANTIZE_LOOP

#define DEQUANTIZE_LOOP(type)                                \
    do {                                                     \
        const type *restrict in = x;                         \
        for (size_t i = 0; i < n; i++) {                     \
            y[i] = (float)((int32_t)in[i] - zp) * scale;     \
        }                                                    \
    } while (0)

void PLXK_ISA_SYMBOL(plxk_dequantize8_)(bool u8, const void *restrict x, float *restrict y,
                                        size_t n, float scale, int32_t zp) {
    if (u8) {
        DEQUANTIZE_LOOP(uint8_t);
    } else {
        DEQUANTIZE_LOOP(int8_t);
    }
}
#undef DEQUANTIZE_LOOP

/* One plane of a max pool (qmap.h): each tap of the window takes the
 * maximum into a whole output row at once, over the outputs whose input
 * lies inside the row (plxk_window_columns), in the order and with the
 * NaN rule of kernels_pool.c's general loop, so the results are the
 * same. int8/uint8 serve quantized tensors: max commutes with
 * dequantizing, scales being > 0. */
enum { POOL_COLUMNS_KEPT = 16 };

/* Whether output pixel p = oh OW + ow of every tap (kh, kw) reads input
 * pixel p s1 + (kh d0 - pb0) IW + kw d1, so that a tap is one run over
 * the whole plane (rows outside X excepted): the windows step down one
 * row at a time, and along a row they do not overlap, need no padding and
 * tile the row exactly (openWakeWord's 1x2 pools of stride (1, 2), whose
 * rows of 8 or 2 outputs, a run per row, were short of a vector). */
static bool pool_is_flat(const plx_window_geom *g) {
    return g->s[0] == 1 && g->pb[1] == 0 && g->in[1] == g->out[1] * g->s[1] &&
           (g->k[1] - 1) * g->d[1] < g->s[1];
}

#define MAX_POOL_PLANE(name, type, lowest, take)                                         \
    static void name(const plx_window_geom *g, const void *px, void *py) {              \
        const type *x = px;                                                              \
        type *y = py;                                                                    \
        /* each tap's output columns, the same for every row (two                   \
         * divisions per tap and row were most of a small plane's time) */           \
        int64_t lo_of[POOL_COLUMNS_KEPT], hi_of[POOL_COLUMNS_KEPT];                      \
        for (int64_t kw = 0; kw < g->k[1] && kw < POOL_COLUMNS_KEPT; kw++) {             \
            plxk_window_columns(kw * g->d[1] - g->pb[1], g->s[1], g->in[1], g->out[1],   \
                                &lo_of[kw], &hi_of[kw]);                                 \
        }                                                                                \
        if (pool_is_flat(g)) {                                                           \
            /* the whole plane as one run per tap (pool_is_flat) */                      \
            type *restrict yr = y;                                                       \
            const int64_t n = g->out[0] * g->out[1], s1 = g->s[1];                       \
            for (int64_t ow = 0; ow < n; ow++) {                                         \
                yr[ow] = (lowest);                                                       \
            }                                                                            \
            for (int64_t kh = 0; kh < g->k[0]; kh++) {                                   \
                int64_t dh = kh * g->d[0] - g->pb[0], lo, hi;                            \
                plxk_window_columns(dh, 1, g->in[0], g->out[0], &lo, &hi);               \
                lo *= g->out[1];                                                         \
                hi *= g->out[1];                                                         \
                for (int64_t kw = 0; kw < g->k[1]; kw++) {                               \
                    const type *restrict xr = x + dh * g->in[1] + kw * g->d[1];          \
                    if (s1 == 1) {                                                       \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[ow];                                             \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    } else if (s1 == 2) {                                                \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[2 * ow];                                         \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    } else {                                                             \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[ow * s1];                                        \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        for (int64_t oh = 0; oh < g->out[0]; oh++) {                                     \
            type *restrict yr = y + oh * g->out[1]; /* restrict: the taps vectorise */   \
            for (int64_t ow = 0; ow < g->out[1]; ow++) {                                 \
                yr[ow] = (lowest);                                                       \
            }                                                                            \
            for (int64_t kh = 0; kh < g->k[0]; kh++) {                                   \
                int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];                     \
                if (ih < 0 || ih >= g->in[0]) {                                          \
                    continue;                                                            \
                }                                                                        \
                const type *restrict xr = x + ih * g->in[1];                             \
                for (int64_t kw = 0; kw < g->k[1]; kw++) {                               \
                    int64_t off = kw * g->d[1] - g->pb[1], lo, hi;                       \
                    if (kw < POOL_COLUMNS_KEPT) {                                        \
                        lo = lo_of[kw];                                                  \
                        hi = hi_of[kw];                                                  \
                    } else {                                                             \
                        plxk_window_columns(off, g->s[1], g->in[1], g->out[1], &lo, &hi); \
                    }                                                                    \
                    /* strides 1 and 2 as constants, which the compiler turns  \
                     * into vector loads and shuffles */                         \
                    if (g->s[1] == 1) {                                                  \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[ow + off];                                       \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    } else if (g->s[1] == 2) {                                           \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[2 * ow + off];                                   \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    } else {                                                             \
                        for (int64_t ow = lo; ow < hi; ow++) {                           \
                            type v = xr[ow * g->s[1] + off];                             \
                            yr[ow] = (take) ? v : yr[ow];                                \
                        }                                                                \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }
/* A float plane with a NaN goes through the NaN rule (v > y || isnan(v));
 * every other plane through v > y alone, a max that the scalar loops
 * compute with maxss and the vector ones with a compare and a blend. With
 * the NaN rule in every plane, GCC kept the short rows of a small plane
 * (8 to 16 outputs: below a vector of AVX-512) scalar, with a branch per
 * tap that mispredicted on every other value: a 1x2 pool of 48x32x16 took
 * 83 us, 5.6 times ONNX Runtime. */
MAX_POOL_PLANE(max_pool_plane_f32_nan, float, -INFINITY, v > yr[ow] || isnan(v))
MAX_POOL_PLANE(max_pool_plane_f32, float, -INFINITY, v > yr[ow])

static bool plane_has_nan(const float *x, size_t n) {
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        any |= x[i] != x[i];
    }
    return any != 0;
}
MAX_POOL_PLANE(max_pool_plane_i8, int8_t, INT8_MIN, v > yr[ow])
MAX_POOL_PLANE(max_pool_plane_u8, uint8_t, 0, v > yr[ow])
#undef MAX_POOL_PLANE

void PLXK_ISA_SYMBOL(plxk_max_pool_plane_)(plx_dtype dt, const plx_window_geom *g, const void *x,
                                           void *y) {
    if (dt == PLX_DTYPE_FLOAT32 && plane_has_nan(x, (size_t)(g->in[0] * g->in[1]))) {
        max_pool_plane_f32_nan(g, x, y);
    } else if (dt == PLX_DTYPE_FLOAT32) {
        max_pool_plane_f32(g, x, y);
    } else if (dt == PLX_DTYPE_INT8) {
        max_pool_plane_i8(g, x, y);
    } else {
        max_pool_plane_u8(g, x, y);
    }
}

/* plxk_float_range: on the bits, as integers that order as the floats do
 * (a negative float's magnitude bits inverted; -0 below +0), whose minimum
 * and maximum are integer reductions that vectorise exactly (a float one
 * would need -ffinite-math-only); a NaN or an infinity is an exponent of
 * all ones. Returns whether every value is finite. */
static int32_t float_order_key(uint32_t u) {
    return (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) & 0x7fffffffu));
}

static float float_of_order_key(int32_t k) {
    uint32_t u = (uint32_t)k ^ ((uint32_t)(k >> 31) & 0x7fffffffu);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

bool PLXK_ISA_SYMBOL(plxk_float_range_)(const float *restrict x, size_t n, float *lo,
                                         float *hi) {
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    uint32_t special = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        int32_t k = float_order_key(u);
        mn = k < mn ? k : mn;
        mx = k > mx ? k : mx;
        special |= (~u & 0x7f800000u) ? 0u : 1u;
    }
    *lo = n ? float_of_order_key(mn) : 0.0f;
    *hi = n ? float_of_order_key(mx) : 0.0f;
    return special == 0;
}

/* plxk_table8's plain loop. */
void PLXK_ISA_SYMBOL(plxk_table8_)(const uint8_t *restrict table, const uint8_t *restrict x,
                                   uint8_t *restrict y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        y[i] = table[x[i]];
    }
}

#if defined(PLXK_GEMM_ISA_AVX512)
/* plxk_table8 with AVX-512 VBMI (gemm.c checks the CPU has it): vpermi2b
 * looks 64 indices up in 128 bytes at once (an index's bit 6 picks one of
 * two 64-byte registers, bits 0 to 5 the byte), so the low and the high
 * half of the table give two candidates, and bit 7 picks between them. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void
plxk_table8_vbmi_avx512(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i ix = _mm512_loadu_si512(x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, ix, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, ix, t3);
        _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(ix), lo, hi));
    }
    if (i < n) {
        __mmask64 m = _cvtu64_mask64(~0ULL >> (64 - (n - i)));
        __m512i ix = _mm512_maskz_loadu_epi8(m, x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, ix, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, ix, t3);
        _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(ix), lo, hi));
    }
}
#endif
