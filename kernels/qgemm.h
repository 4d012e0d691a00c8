/* cpu_ref's 8-bit integer matrix multiply: the core of the quantized conv,
 * matmul and gemm layers and of matmul_integer / conv_integer.
 *
 *   acc[i,j] = sum_p (A[i,p] - za) (B[p,j] - zb[j])          (exact, int32)
 *
 * then one output stage per element (see plxk_qgemm_output). A holds the
 * activations (uint8 or int8, one zero point), B the weights (uint8 or
 * int8, one zero point or one per column). Results are exact: every
 * variant gives the same int32 accumulators (no 16-bit saturation), so the
 * float and requantized outputs are the same on every variant too. The
 * sums are taken modulo 2^32: exact whenever acc (and acc + bias) fits
 * int32, which every acc does for K <= 33025 (|acc| <= 255 x 255 x K);
 * beyond, every variant gives the same wrapped value.
 *
 * Like the float GEMM (gemm.h), the code is compiled once per instruction
 * set and chosen at run time with the same plxk_isa values: portable C,
 * AVX2 (16-bit products summed by vpmaddwd: exact), AVX-512 (AVX-512 VNNI's
 * vpdpbusd where the CPU has it, else the AVX-512 BW form of the AVX2
 * method). Nothing here allocates; workloads size the workspace when they
 * are created and pass it to every call. Thread-safe: concurrent calls need
 * separate workspaces. */
#ifndef PLXK_QGEMM_H
#define PLXK_QGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"
#include "threadpool.h"

/* What is written to C for acc[i,j] (v = acc[i,j] + bias[j], bias int32,
 * NULL for none; scale[j] is scale[j * scale_stride], stride 0 for one
 * scale for all columns; with per_row, bias[i] and scale[i * scale_stride]
 * instead, one per row of C: a convolution computed as W X, output
 * channels as rows):
 *   INT32: c_i32 = v
 *   FLOAT: c_f32 = (float)v * scale[j] (+ fbias[j] when fbias is not NULL)
 *   UINT8 / INT8: c = saturate(round_half_even((float)v * scale[j]) + out_zero_point)
 * The float arithmetic is float32: (float)v, one multiply by scale (and,
 * FLOAT only, one add of fbias: never fused into one rounding), then for
 * UINT8 / INT8 rounding to the nearest integer, ties to even (nearbyintf in
 * the default rounding mode, which the kernels assume) and the zero point,
 * as ONNX's QLinearConv / QLinearMatMul and ONNX Runtime do. A NaN product
 * (a NaN scale, or an infinite one times 0) counts as 0: the output is
 * out_zero_point; infinities saturate. Then, for FLOAT only, the activation
 * (act, lo, hi, slope as in gemm.h: NaN stays NaN). */
typedef enum plxk_qgemm_output {
    PLXK_QOUT_INT32 = 0,
    PLXK_QOUT_FLOAT = 1,
    PLXK_QOUT_UINT8 = 2,
    PLXK_QOUT_INT8 = 3,
} plxk_qgemm_output;

/* One multiply. Element (i, p) of A is a[i * a_rs + p * a_cs] and element
 * (p, j) of B is b[p * b_rs + j * b_cs] (bytes, read as uint8 or int8 as
 * a_signed / b_signed say); element (i, j) of C is at c + (i * c_rs + j *
 * c_cs) elements of the output type. So conv's [K, spatial] column matrix
 * read transposed, or an NCHW output written as [spatial, channels], costs
 * nothing. A zero-initialised struct is M = N = K = 0, INT32 output, zero
 * points 0. */
typedef struct plxk_qgemm_args {
    size_t m, n, k;
    const void *a;
    ptrdiff_t a_rs, a_cs;
    bool a_signed;
    int32_t a_zero_point; /* in A's range: 0..255, or -128..127 when signed */
    const void *b;
    ptrdiff_t b_rs, b_cs;
    bool b_signed;
    /* B's zero point of column j: b_zero_points[j] when not NULL (N
     * entries, each in B's range), else b_zero_point. */
    int32_t b_zero_point;
    const int32_t *b_zero_points;
    plxk_qgemm_output output;
    void *c;
    ptrdiff_t c_rs, c_cs;
    const int32_t *bias;   /* N entries (M with per_row) or NULL */
    const float *scale;    /* FLOAT, UINT8, INT8: scale[j * scale_stride] (i with per_row) */
    ptrdiff_t scale_stride;
    const float *fbias;    /* FLOAT only: N entries added after scaling, or NULL */
    int32_t out_zero_point; /* UINT8 / INT8 */
    plxk_activation act;   /* FLOAT only */
    float lo, hi, slope;
    /* NULL, or B as plxk_qgemm_pack_b packed it for the same variant, N, K,
     * zero points and signedness: then b is not read (it may be NULL). For
     * a constant operand (a layer's weights), packed once when the
     * workload is created. */
    const void *packed_b;
    /* bias and scale per row of C (M entries) instead of per column;
     * fbias stays per column */
    bool per_row;
} plxk_qgemm_args;

/* Bytes of workspace that plxk_qgemm needs for an M x N x K multiply in
 * variant `isa` on `threads` threads (use plxk_pool_threads). Never more
 * than for larger M, N, K. 0 when M, N or K is 0 or the variant was not
 * compiled in; SIZE_MAX on overflow. */
size_t plxk_qgemm_workspace_size(plxk_isa isa, size_t m, size_t n, size_t k, size_t threads);

/* Bytes plxk_qgemm_pack_b writes for a K x N B in variant `isa` (a header
 * naming the variant, N and K, the packed values, and per column the sum
 * of b - zb and the zero point). 0 when N or K is 0 or the variant was not
 * compiled in; SIZE_MAX on overflow. */
size_t plxk_qgemm_packed_b_size(plxk_isa isa, size_t n, size_t k);

/* Packs B of `args` (b, b_rs, b_cs, b_signed, b_zero_point(s), n, k;
 * nothing else is read) into `out` (size bytes, >= plxk_qgemm_packed_b_size,
 * 64-byte aligned). false, writing nothing, when the variant was not
 * compiled in or this CPU cannot run it (plxk_isa_supported), args, b or
 * out is NULL, size is short or a zero point is out of B's range. N or K of
 * 0 packs nothing and returns true. On AVX-512 the packing serves both
 * methods (VNNI or not). */
bool plxk_qgemm_pack_b(plxk_isa isa, const plxk_qgemm_args *args, void *out, size_t size);

/* Runs one multiply with variant `isa`, split into tiles that the pool's
 * threads share (NULL pool: the calling thread). Returns false, touching
 * nothing, when the arguments are unusable: NULL args, a NULL operand the
 * shapes need, a zero point out of its type's range, a missing scale for
 * an output that needs one, an unsupported variant or a workspace smaller
 * than plxk_qgemm_workspace_size(isa, m, n, k, 1), or a packed_b packed
 * for another variant, N or K. K = 0 gives v = bias (A, B and the workspace
 * may then be NULL). M or N of 0 writes nothing. When the workspace holds
 * fewer slices than the pool has threads, or the pool is busy with another
 * caller, the calling thread does everything (same result, slower).
 * Allocates nothing. */
bool plxk_qgemm(plxk_isa isa, plxk_pool *pool, const plxk_qgemm_args *args, void *workspace,
                size_t workspace_size);

#endif /* PLXK_QGEMM_H */
