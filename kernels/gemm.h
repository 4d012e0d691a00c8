/* cpu_ref's matrix multiply: the core of conv (im2col), matmul, gemm and
 * fully_connected.
 *
 *   C = act(alpha * op(A) op(B) + beta * C + bias)
 *
 * in float32, blocked like GotoBLAS/BLIS: panels of B (KC x NR) and of A
 * (MR x KC) are packed into a caller-provided workspace and an MR x NR
 * register-blocked micro-kernel, plain C that the compiler vectorises,
 * multiplies them. The same source (gemm_kernel.c) is compiled once per
 * instruction set (portable, AVX2+FMA, AVX-512) and the variant is chosen at
 * run time (plxk_isa_best, or the backend option `isa`).
 *
 * Nothing here allocates: workloads size the workspace when they are
 * created (plxk_gemm_workspace_size) and pass it to every call. Every
 * function is thread-safe: concurrent calls need separate workspaces. */
#ifndef PLXK_GEMM_H
#define PLXK_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "threadpool.h"

/* The instruction-set variants of the micro-kernel. */
typedef enum plxk_isa {
    PLXK_ISA_PORTABLE = 0, /* the compiler's baseline for the target (SSE2 on x86-64) */
    PLXK_ISA_AVX2 = 1,     /* x86-64 with AVX2 and FMA */
    PLXK_ISA_AVX512 = 2,   /* x86-64 with AVX-512 F, VL, BW and DQ (and AVX2, FMA) */
} plxk_isa;
#define PLXK_ISA_COUNT 3

/* "portable", "avx2" or "avx512"; "?" for a value out of range. */
const char *plxk_isa_name(plxk_isa isa);

/* Parses an ISA name as plxk_isa_name writes it, or "auto" (the best the
 * CPU supports). false for anything else (*out unchanged). It does not
 * check that the CPU can run the variant: see plxk_isa_supported. */
bool plxk_isa_parse(const char *name, plxk_isa *out);

/* true when the variant was compiled in (x86 builds only, for AVX2 and
 * AVX-512) and this CPU can run it. The portable variant always can. */
bool plxk_isa_supported(plxk_isa isa);

/* The fastest supported variant. Cheap; the backend asks once at create. */
plxk_isa plxk_isa_best(void);

/* The block sizes of a variant, in elements: the micro-kernel computes
 * MR x NR of C; one pass packs KC of K, MC rows of A and NC columns of B. */
typedef struct plxk_gemm_blocking {
    size_t mr, nr, kc, mc, nc;
} plxk_gemm_blocking;

/* The block sizes of `isa` (any variant, supported or not, as long as it
 * was compiled in); false when it was not. */
bool plxk_gemm_blocking_of(plxk_isa isa, plxk_gemm_blocking *out);

/* The activation applied last, element by element. */
typedef enum plxk_activation {
    PLXK_ACT_NONE = 0,
    PLXK_ACT_RELU = 1, /* max(v, 0); NaN stays NaN */
    PLXK_ACT_CLIP = 2, /* min(max(v, lo), hi); relu6 is clip(0, 6) */
    PLXK_ACT_LEAKY = 3, /* v < 0 ? slope * v : v */
} plxk_activation;

/* One multiply. Element (i, p) of op(A) is a[i * a_rs + p * a_cs] and
 * element (p, j) of op(B) is b[p * b_rs + j * b_cs], so a transposed or
 * strided operand costs nothing: a row-major A [M, K] has a_rs = K, a_cs = 1;
 * its transpose, stored [K, M], a_rs = 1, a_cs = M. C is row-major with
 * leading dimension ldc >= n: element (i, j) is c[i * ldc + j].
 *
 * Then, per element: v = alpha * sum_p op(A)[i,p] op(B)[p,j]; plus beta *
 * C[i,j] when beta != 0 (beta == 0: C is written only, never read, so it may
 * hold garbage); plus bias[i * bias_rs + j * bias_cs] when bias is not NULL
 * (a per-row bias, conv's per output channel: bias_rs = 1, bias_cs = 0; a
 * per-column bias, fully_connected's: bias_rs = 0, bias_cs = 1; a broadcast
 * matrix such as ONNX Gemm's C: its strides, 0 along broadcast dims); then
 * the activation. K = 0 leaves beta * C + bias, activated.
 *
 * A, B and bias must not overlap C. Zero-initialise and fill what you need:
 * {0} is M = N = K = 0, alpha 0, no bias, no activation. */
typedef struct plxk_gemm_args {
    size_t m, n, k;
    float alpha;
    const float *a;
    ptrdiff_t a_rs, a_cs;
    const float *b;
    ptrdiff_t b_rs, b_cs;
    float beta;
    float *c;
    size_t ldc;
    const float *bias; /* NULL: none */
    ptrdiff_t bias_rs, bias_cs;
    plxk_activation act;
    float lo, hi; /* PLXK_ACT_CLIP's bounds, lo <= hi */
    float slope;  /* PLXK_ACT_LEAKY's */
    /* NULL, or op(B) as plxk_gemm_pack_b packed it for the same variant, N
     * and K: the packed path then reads its panels instead of packing (or
     * reading in place) b, which must still be valid, since the
     * matrix-vector paths read it. For a constant operand (a layer's
     * weights), packed once when the workload is created. */
    const float *packed_b;
    /* NULL, or op(A) as plxk_gemm_pack_a packed it for the same variant,
     * M and K, read in place of a on the packed path (a must still be
     * valid, as b for packed_b): a conv's weights, packed once. */
    const float *packed_a;
} plxk_gemm_args;

/* Where a kernel runs its GEMMs: the variant and the backend's pool (NULL:
 * the calling thread only). The backend owns it; kernels see it through
 * plxk_kernel_args.compute. */
typedef struct plxk_compute {
    plxk_isa isa;
    plxk_pool *pool;
} plxk_compute;

/* Bytes of workspace that plxk_gemm needs for an M x N x K multiply in
 * variant `isa` on `threads` threads (one slice per thread, each a packed A
 * block and a packed B panel, 64-byte aligned inside; any alignment of the
 * workspace itself will do). Use plxk_pool_threads(pool) for threads. It
 * never exceeds the size for larger M, N, K, so a workload that multiplies
 * several shapes can size for the largest. 0 when M, N or K is 0 or the
 * variant was not compiled in; SIZE_MAX if the size overflows. */
size_t plxk_gemm_workspace_size(plxk_isa isa, size_t m, size_t n, size_t k, size_t threads);

/* true when plxk_gemm, in variant `isa`, reads packed_a and packed_b for
 * an M x N x K product with op(B)'s strides b_rs, b_cs (the packed path);
 * false when it runs it transposed or on matrix-vector loops, which read a
 * and b where they are, so that packing them would only take memory. */
bool plxk_gemm_reads_packed(plxk_isa isa, size_t m, size_t n, size_t k, ptrdiff_t b_rs,
                              ptrdiff_t b_cs);

/* Bytes that plxk_gemm_pack_b writes for an op(B) of K x N in variant
 * `isa`: N rounded up to the micro-kernel's NR, times K floats. 0 when N or
 * K is 0 or the variant was not compiled in; SIZE_MAX on overflow. */
size_t plxk_gemm_packed_b_size(plxk_isa isa, size_t n, size_t k);

/* Packs op(B) of `args` (b, b_rs, b_cs, n, k; nothing else is read) into
 * `out` (size bytes, at least plxk_gemm_packed_b_size, 64-byte aligned)
 * as the GEMM's NR-column panels of all of K, zero-padded past N, for
 * plxk_gemm_args.packed_b. false, writing nothing, when the variant was
 * not compiled in, b is NULL or the size is short. */
bool plxk_gemm_pack_b(plxk_isa isa, const plxk_gemm_args *args, float *out, size_t size);

/* Bytes that plxk_gemm_pack_a writes for an op(A) of M x K in variant
 * `isa`: M rounded up to the micro-kernel's MR, times K floats. 0 when M or
 * K is 0 or the variant was not compiled in; SIZE_MAX on overflow. */
size_t plxk_gemm_packed_a_size(plxk_isa isa, size_t m, size_t k);

/* Packs op(A) of `args` (a, a_rs, a_cs, m, k; nothing else is read) into
 * `out` (size bytes, at least plxk_gemm_packed_a_size) as the GEMM's
 * MR-row panels of all of K, zero-padded past M, for
 * plxk_gemm_args.packed_a. false, writing nothing, when the variant was
 * not compiled in, a is NULL or the size is short. */
bool plxk_gemm_pack_a(plxk_isa isa, const plxk_gemm_args *args, float *out, size_t size);

/* Runs one multiply with variant `isa`, splitting it into tiles that the
 * pool's threads share (NULL pool: the calling thread). When the workspace
 * holds fewer slices than the pool has threads, or the pool is busy with
 * another caller, the calling thread does everything (correct, slower).
 * Returns false, touching nothing, when the arguments are unusable: NULL
 * args, a NULL operand that the shapes need, ldc < n, a variant that is
 * not supported (plxk_isa_supported), or a workspace smaller than one
 * slice (plxk_gemm_workspace_size with threads = 1). A product with M or
 * N of 1, or with at most 8 rows (M, or N when that is below NR and M
 * larger: it then runs transposed) and an op(B) whose columns are
 * contiguous (b_rs = 1, K at most 4096), runs matrix-vector loops instead,
 * on the pool by rows, and needs no workspace. Allocates nothing. */
bool plxk_gemm(plxk_isa isa, plxk_pool *pool, const plxk_gemm_args *args,
                  void *workspace, size_t workspace_size);

#endif /* PLXK_GEMM_H */
