/* The machine's measured peak for plexus-bench-gemm: a loop of independent
 * multiply-adds over enough accumulators to hide the latency, in the widest
 * vectors of one instruction set. bench/meson.build compiles this file once
 * per cpu_ref ISA variant, with that variant's flags and one of
 * GEMM_PEAK_PORTABLE, GEMM_PEAK_AVX2 or GEMM_PEAK_AVX512 defined; each build
 * defines bench_gemm_peak_<isa>. */
#include <stddef.h>

#include "gemm_peak.h"

#if defined(GEMM_PEAK_AVX512)
#define WIDTH 16
#define NAME bench_gemm_peak_avx512
#elif defined(GEMM_PEAK_AVX2)
#define WIDTH 8
#define NAME bench_gemm_peak_avx2
#else
#define WIDTH 4
#define NAME bench_gemm_peak_portable
#endif
#define ACCUMULATORS 12 /* independent chains: latency (4) x ports (2), and some */

float NAME(size_t iterations, float x, float y, double *out_flops) {
    float acc[ACCUMULATORS][WIDTH];
    for (size_t a = 0; a < ACCUMULATORS; a++) {
        for (size_t j = 0; j < WIDTH; j++) {
            acc[a][j] = (float)(a * WIDTH + j) * 1e-3f;
        }
    }
    for (size_t it = 0; it < iterations; it++) {
        for (size_t a = 0; a < ACCUMULATORS; a++) {
            for (size_t j = 0; j < WIDTH; j++) {
                acc[a][j] = acc[a][j] * x + y;
            }
        }
    }
    float sum = 0.0f;
    for (size_t a = 0; a < ACCUMULATORS; a++) {
        for (size_t j = 0; j < WIDTH; j++) {
            sum += acc[a][j];
        }
    }
    *out_flops = 2.0 * ACCUMULATORS * WIDTH * (double)iterations;
    return sum;
}
