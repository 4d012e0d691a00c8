/* Internal to cpu_ref's GEMM: what each instruction-set build of
 * gemm_kernel.c (and depthwise_kernel.c, built with it) gives gemm.c (the
 * driver, which splits the work into tiles and hands them to threads, and
 * dispatches the depthwise kernel with the same variant). */
#ifndef CPU_REF_GEMM_KERNEL_H
#define CPU_REF_GEMM_KERNEL_H

#include "depthwise.h"
#include "gemm.h"

/* In the per-ISA builds (meson defines CPU_REF_GEMM_ISA_<NAME>), the name
 * of this build's copy of a symbol: CPU_REF_ISA_SYMBOL(cpu_ref_gemm_impl_)
 * is cpu_ref_gemm_impl_avx512 in the AVX-512 build. */
#if defined(CPU_REF_GEMM_ISA_AVX512)
#define CPU_REF_ISA_SUFFIX avx512
#elif defined(CPU_REF_GEMM_ISA_AVX2)
#define CPU_REF_ISA_SUFFIX avx2
#elif defined(CPU_REF_GEMM_ISA_PORTABLE)
#define CPU_REF_ISA_SUFFIX portable
#endif
#define CPU_REF_ISA_PASTE2(a, b) a##b
#define CPU_REF_ISA_PASTE(a, b) CPU_REF_ISA_PASTE2(a, b)
#define CPU_REF_ISA_SYMBOL(prefix) CPU_REF_ISA_PASTE(prefix, CPU_REF_ISA_SUFFIX)

/* A multiply as the kernels see it: the caller's arguments (ldc unused)
 * and C's strides, which are (ldc, 1) unless gemm.c transposed the problem
 * (C^T = op(B)^T op(A)^T: a matrix-vector product, N = 1, is computed as
 * 1 x M so that the micro-kernel's NR lanes are used). */
typedef struct cpu_ref_gemm_problem {
    cpu_ref_gemm_args args;
    ptrdiff_t c_rs, c_cs;
} cpu_ref_gemm_problem;

typedef struct cpu_ref_gemm_impl {
    cpu_ref_gemm_blocking blocks;
    /* Computes the tile rows [i0, i0+mc) x columns [j0, j0+nc) of C over
     * the whole of K (k > 0), epilogue included. mc <= blocks.mc, nc <=
     * blocks.nc; pack_a holds round_up(mc, MR) * min(KC, k) floats and
     * pack_b round_up(nc, NR) * min(KC, k), both 64-byte aligned. */
    void (*tile)(const cpu_ref_gemm_problem *problem, size_t i0, size_t mc, size_t j0, size_t nc,
                 float *pack_a, float *pack_b);
    /* cpu_ref_depthwise in this variant (depthwise_kernel.c). */
    void (*depthwise)(const cpu_ref_depthwise_plane *plane);
} cpu_ref_gemm_impl;

#if defined(CPU_REF_ISA_SUFFIX)
/* depthwise_kernel.c's, for this build's cpu_ref_gemm_impl. */
void CPU_REF_ISA_SYMBOL(cpu_ref_depthwise_)(const cpu_ref_depthwise_plane *plane);
#endif

/* One per build of gemm_kernel.c; AVX2 and AVX-512 exist in x86 builds only
 * (CPU_REF_GEMM_X86 defined). */
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_portable;
#if defined(CPU_REF_GEMM_X86)
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_avx2;
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_avx512;
#endif

#endif /* CPU_REF_GEMM_KERNEL_H */
