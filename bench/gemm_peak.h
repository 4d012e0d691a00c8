/* Peak loops of plexus-bench-gemm, one per instruction set (gemm_peak.c):
 * run `iterations` rounds of multiply-adds acc = acc * x + y and return a
 * checksum (so the work is not optimised away), with the floating-point
 * operations done in *out_flops. */
#ifndef BENCH_GEMM_PEAK_H
#define BENCH_GEMM_PEAK_H

#include <stddef.h>

float bench_gemm_peak_portable(size_t iterations, float x, float y, double *out_flops);
float bench_gemm_peak_avx2(size_t iterations, float x, float y, double *out_flops);
float bench_gemm_peak_avx512(size_t iterations, float x, float y, double *out_flops);

#endif /* BENCH_GEMM_PEAK_H */
