/* Internal to cpu_ref's GEMM: what each instruction-set build of
 * gemm_kernel.c (and depthwise_kernel.c and vecmath_kernel.c, built with it) gives gemm.c (the
 * driver, which splits the work into tiles and hands them to threads, and
 * dispatches the depthwise kernel with the same variant). */
#ifndef PLXK_GEMM_KERNEL_H
#define PLXK_GEMM_KERNEL_H

#include "depthwise.h"
#include "gemm.h"
#include "qmap.h"
#include "vecmath.h"

/* In the per-ISA builds (meson defines PLXK_GEMM_ISA_<NAME>), the name
 * of this build's copy of a symbol: PLXK_ISA_SYMBOL(plxk_gemm_impl_)
 * is plxk_gemm_impl_avx512 in the AVX-512 build. */
#if defined(PLXK_GEMM_ISA_AVX512)
#define PLXK_ISA_SUFFIX avx512
#elif defined(PLXK_GEMM_ISA_AVX2)
#define PLXK_ISA_SUFFIX avx2
#elif defined(PLXK_GEMM_ISA_PORTABLE)
#define PLXK_ISA_SUFFIX portable
#endif
#define PLXK_ISA_PASTE2(a, b) a##b
#define PLXK_ISA_PASTE(a, b) PLXK_ISA_PASTE2(a, b)
#define PLXK_ISA_SYMBOL(prefix) PLXK_ISA_PASTE(prefix, PLXK_ISA_SUFFIX)

/* A multiply as the kernels see it: the caller's arguments (ldc unused)
 * and C's strides, which are (ldc, 1) unless gemm.c transposed the problem
 * (C^T = op(B)^T op(A)^T: a matrix-vector product, N = 1, is computed as
 * 1 x M so that the micro-kernel's NR lanes are used). */
typedef struct plxk_gemm_problem {
    plxk_gemm_args args;
    ptrdiff_t c_rs, c_cs;
} plxk_gemm_problem;

typedef struct plxk_gemm_impl {
    plxk_gemm_blocking blocks;
    /* Computes the region rows [i0, i0+m) x columns [j0, j0+nc) of C
     * over the whole of K (k > 0), epilogue included: op(B)'s columns are
     * packed once per KC pass and serve all m rows, taken MC at a time.
     * nc <= blocks.nc; pack_a holds min(round_up(m, MR) * min(KC, k),
     * MC * KC) floats and pack_b round_up(nc, NR) * min(KC, k), both
     * 64-byte aligned. */
    void (*region)(const plxk_gemm_problem *problem, size_t i0, size_t m, size_t j0, size_t nc,
                   float *pack_a, float *pack_b);
    /* Packs op(A)'s rows [i0, i0+mc) x K [p0, p0+kc) as MR-row panels:
     * panel r (rows i0 + r MR ...) at out + r MR kc holds, for each p, the
     * MR values of column p, zero past mc. With i0 = p0 = 0, mc = M and
     * kc = K, the layout of plxk_gemm_pack_a, whose panel for rows i (a
     * multiple of MR) and pass p0 is at i K + p0 MR. */
    void (*pack_a)(const plxk_gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *out);
    /* Packs op(B)'s rows [p0, p0+kc) x columns [j0, j0+nc) as NR-column
     * panels: panel c (columns j0 + c NR ...) at out + c NR kc holds, for
     * each p, the NR values of row p, zero past nc. With p0 = 0 and kc = K
     * over all of N, the layout of plxk_gemm_pack_b, whose panel for
     * columns j (a multiple of NR) and pass p0 is at j K + p0 NR. */
    void (*pack_b)(const plxk_gemm_args *g, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *out);
    /* plxk_depthwise in this variant (depthwise_kernel.c). */
    void (*depthwise)(const plxk_depthwise_plane *plane);
    /* One row or one column of C (M or N is 1: a fully_connected layer on
     * one sample, a recurrent step), where the packed path would fill one
     * row of each MR x NR tile:
     *   out[o] = act(alpha * sum_p x[p] mat(p, o) + beta * out[o] + bias[o])
     * for o < count, mat(p, o) = mat[p * mp + o * mo], x[p] = x[p * xs],
     * bias[o] = bias[o * bs] (NULL: none). The calling thread does it
     * all; nothing allocates. */
    void (*gemv)(const plxk_gemm_args *g, size_t count, const float *mat, ptrdiff_t mp,
                 ptrdiff_t mo, const float *x, ptrdiff_t xs, float *out, ptrdiff_t os,
                 const float *bias, ptrdiff_t bs);
    /* plxk_vmap in this variant (vecmath_kernel.c); f is a plxk_vfunc. */
    void (*vmap)(plxk_vfunc f, const float *x, float *y, size_t n);
    /* plxk_vhard_sigmoid in this variant (vecmath_kernel.c). */
    void (*vhard_sigmoid)(float alpha, float beta, bool times_x, const float *x, float *y,
                          size_t n);
    /* plxk_vbinary in this variant (vecmath_kernel.c). */
    bool (*vbinary)(plx_binary_func f, const float *a, bool sa, const float *b, bool sb,
                    float *y, size_t n);
    /* plxk_qbinary, plxk_quantize8 and plxk_dequantize8 in this variant
     * (qmap_kernel.c). */
    void (*qbinary)(plxk_qfunc f, unsigned types, const void *a, bool da, const void *b,
                    bool db, void *y, size_t n, const plxk_qbin_params *p);
    void (*quantize8)(bool u8, const float *x, void *y, size_t n, float scale, int32_t zp);
    void (*dequantize8)(bool u8, const void *x, float *y, size_t n, float scale, int32_t zp);
    void (*requantize8)(bool u8, const float *acc, int32_t bias, float scale, int32_t zp,
                        void *y, size_t n);
    void (*max_pool_plane)(plx_dtype dt, const plx_window_geom *g, const void *x, void *y);
    bool (*float_range)(const float *x, size_t n, float *lo, float *hi);
    /* plxk_table8: the plain loop, and (AVX-512 builds, else NULL) the
     * VBMI one, for CPUs that have that extension. */
    void (*table8)(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
    void (*table8_vbmi)(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
} plxk_gemm_impl;

#if defined(PLXK_ISA_SUFFIX)
/* depthwise_kernel.c's, for this build's plxk_gemm_impl. */
void PLXK_ISA_SYMBOL(plxk_depthwise_)(const plxk_depthwise_plane *plane);
/* vecmath_kernel.c's. */
void PLXK_ISA_SYMBOL(plxk_vmap_)(plxk_vfunc f, const float *x, float *y, size_t n);
void PLXK_ISA_SYMBOL(plxk_vhard_sigmoid_)(float alpha, float beta, bool times_x, const float *x,
                                          float *y, size_t n);
bool PLXK_ISA_SYMBOL(plxk_vbinary_)(plx_binary_func f, const float *a, bool sa, const float *b,
                                    bool sb, float *y, size_t n);
/* qmap_kernel.c's. */
void PLXK_ISA_SYMBOL(plxk_qbinary_)(plxk_qfunc f, unsigned types, const void *a, bool da,
                                    const void *b, bool db, void *y, size_t n,
                                    const plxk_qbin_params *p);
void PLXK_ISA_SYMBOL(plxk_quantize8_)(bool u8, const float *x, void *y, size_t n, float scale,
                                      int32_t zp);
void PLXK_ISA_SYMBOL(plxk_dequantize8_)(bool u8, const void *x, float *y, size_t n, float scale,
                                        int32_t zp);
void PLXK_ISA_SYMBOL(plxk_requantize8_)(bool u8, const float *acc, int32_t bias, float scale,
                                        int32_t zp, void *y, size_t n);
void PLXK_ISA_SYMBOL(plxk_max_pool_plane_)(plx_dtype dt, const plx_window_geom *g, const void *x,
                                           void *y);
bool PLXK_ISA_SYMBOL(plxk_float_range_)(const float *x, size_t n, float *lo, float *hi);
void PLXK_ISA_SYMBOL(plxk_table8_)(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
#if defined(PLXK_GEMM_ISA_AVX512)
void plxk_table8_vbmi_avx512(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);
#endif
#endif

/* The fused activation of g (gemm.h) on one value. */
static inline float plxk_gemm_activate(const plxk_gemm_args *g, float v) {
    if (g->act == PLXK_ACT_RELU) { /* NaN stays NaN, as the unfused relu keeps it */
        return v < 0.0f ? 0.0f : v;
    }
    if (g->act == PLXK_ACT_CLIP) {
        return v < g->lo ? g->lo : v > g->hi ? g->hi : v;
    }
    if (g->act == PLXK_ACT_LEAKY) {
        return v < 0.0f ? g->slope * v : v;
    }
    return v;
}

/* One per build of gemm_kernel.c; AVX2 and AVX-512 exist in x86 builds only
 * (PLXK_GEMM_X86 defined). */
extern const plxk_gemm_impl plxk_gemm_impl_portable;
#if defined(PLXK_GEMM_X86)
extern const plxk_gemm_impl plxk_gemm_impl_avx2;
extern const plxk_gemm_impl plxk_gemm_impl_avx512;
#endif

#endif /* PLXK_GEMM_KERNEL_H */
