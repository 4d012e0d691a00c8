/* Internal to cpu_ref's GEMM: what each instruction-set build of
 * gemm_kernel.c gives gemm.c (the driver, which splits the work into tiles
 * and hands them to threads). */
#ifndef CPU_REF_GEMM_KERNEL_H
#define CPU_REF_GEMM_KERNEL_H

#include "gemm.h"

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
} cpu_ref_gemm_impl;

/* One per build of gemm_kernel.c; AVX2 and AVX-512 exist in x86 builds only
 * (CPU_REF_GEMM_X86 defined). */
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_portable;
#if defined(CPU_REF_GEMM_X86)
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_avx2;
extern const cpu_ref_gemm_impl cpu_ref_gemm_impl_avx512;
#endif

#endif /* CPU_REF_GEMM_KERNEL_H */
