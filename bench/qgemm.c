/* plexus-bench-qgemm: GOP/s (2 M N K per second) of cpu_ref's 8-bit
 * integer GEMM (kernels/qgemm.h) per variant, beside the float GEMM
 * (kernels/gemm.h) of the same instruction set on the same shape, and
 * their ratio.
 *
 * Variants: AVX-512 with VNNI (where the CPU has it), AVX-512 with the
 * 16-bit method, AVX2, portable; the float figure is plxk_gemm of the same
 * plxk_isa. Shapes: squares of 256, 512 and 1024 and layers as the
 * quantized conv and matmul run them (M = output pixels or tokens, N =
 * output channels, K = the reduction): a 3x3 conv of 64 channels at 56x56,
 * one of 256 at 14x14, a 1x1 conv of 1024 channels at 7x7, and the
 * attention projection and feed-forward of a 768-wide transformer on 16
 * tokens. As a layer runs them: B (the weights) pre-packed, A row-major,
 * the int8 product with a per-column scale and an int32 bias written as
 * uint8 (--output int32|float|uint8 to change), the float product with a
 * per-column bias. Each figure is the median of --runs timed runs (each at
 * least ~20 ms of repetitions).
 *
 * usage: plexus-bench-qgemm [--json] [--runs N] [--threads N] [--output NAME] */
#define _GNU_SOURCE /* clock_gettime */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"
#include "qgemm.h"
#include "qgemm_kernel.h"

static void die(const char *what) {
    fprintf(stderr, "plexus-bench-qgemm: %s\n", what);
    exit(1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *xalloc(size_t size) {
    /* 64-byte aligned, as the packed operands must be */
    void *p = aligned_alloc(64, (size + 63) / 64 * 64 + 64);
    if (!p) {
        die("out of memory");
    }
    return p;
}

typedef struct shape {
    const char *name;
    size_t m, n, k;
} shape;

static const shape shapes[] = {
    {"square 256", 256, 256, 256},
    {"square 512", 512, 512, 512},
    {"square 1024", 1024, 1024, 1024},
    {"conv 3x3 64->64 @56", 56 * 56, 64, 64 * 9},
    {"conv 3x3 256->256 @14", 14 * 14, 256, 256 * 9},
    {"conv 1x1 1024->1024 @7", 7 * 7, 1024, 1024},
    {"proj 768->768, 16 tokens", 16, 768, 768},
    {"ffn 768->3072, 16 tokens", 16, 3072, 768},
};
#define SHAPE_COUNT (sizeof shapes / sizeof shapes[0])

/* The variants timed: the int8 method and the float GEMM's plxk_isa. */
typedef struct variant {
    const char *name;
    plxk_isa isa;
    bool vnni;
} variant;

static const variant variants[] = {
    {"avx512 vnni", PLXK_ISA_AVX512, true},
    {"avx512 int16", PLXK_ISA_AVX512, false},
    {"avx2", PLXK_ISA_AVX2, false},
    {"portable", PLXK_ISA_PORTABLE, false},
};
#define VARIANT_COUNT (sizeof variants / sizeof variants[0])

/* Median GOP/s of `runs` timed runs of one(ctx), each repeating it for at
 * least ~20 ms. */
static double median_gops(void (*one)(void *), void *ctx, double ops, int runs) {
    one(ctx); /* warm up */
    double t0 = now_s();
    one(ctx);
    double once = now_s() - t0;
    size_t reps = once > 0.02 ? 1 : (size_t)(0.02 / (once > 1e-7 ? once : 1e-7)) + 1;
    double results[64];
    if (runs > 64) {
        runs = 64;
    }
    for (int r = 0; r < runs; r++) {
        t0 = now_s();
        for (size_t i = 0; i < reps; i++) {
            one(ctx);
        }
        results[r] = ops * (double)reps / (now_s() - t0) * 1e-9;
    }
    qsort(results, (size_t)runs, sizeof results[0], cmp_double);
    return results[runs / 2];
}

typedef struct q_run {
    plxk_isa isa;
    plxk_pool *pool;
    plxk_qgemm_args g;
    void *ws;
    size_t ws_size;
} q_run;

static void q_once(void *ctx) {
    q_run *r = ctx;
    if (!plxk_qgemm(r->isa, r->pool, &r->g, r->ws, r->ws_size)) {
        die("plxk_qgemm refused the arguments");
    }
}

typedef struct f_run {
    plxk_isa isa;
    plxk_pool *pool;
    plxk_gemm_args g;
    void *ws;
    size_t ws_size;
} f_run;

static void f_once(void *ctx) {
    f_run *r = ctx;
    if (!plxk_gemm(r->isa, r->pool, &r->g, r->ws, r->ws_size)) {
        die("plxk_gemm refused the arguments");
    }
}

static double time_int8(plxk_isa isa, plxk_pool *pool, const shape *s,
                        plxk_qgemm_output output, int runs) {
    size_t m = s->m, n = s->n, k = s->k;
    uint8_t *a = xalloc(m * k);
    int8_t *b = xalloc(k * n);
    unsigned seed = 12345;
    for (size_t i = 0; i < m * k; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (uint8_t)(seed >> 16);
    }
    for (size_t i = 0; i < k * n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (int8_t)(seed >> 16);
    }
    int32_t *bias = xalloc(n * sizeof *bias);
    float *scale = xalloc(n * sizeof *scale);
    for (size_t j = 0; j < n; j++) {
        bias[j] = (int32_t)(j * 37 % 1000) - 500;
        scale[j] = 1.0f / 4096.0f / (1.0f + (float)(j % 7));
    }
    void *c = xalloc(m * n * 4);
    q_run r = {isa, pool, {0}, NULL, 0};
    r.g = (plxk_qgemm_args){.m = m, .n = n, .k = k, .a = a, .a_rs = (ptrdiff_t)k, .a_cs = 1,
                            .a_zero_point = 128, .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1,
                            .b_signed = true, .output = output, .c = c, .c_rs = (ptrdiff_t)n,
                            .c_cs = 1, .bias = bias, .scale = scale, .scale_stride = 1,
                            .out_zero_point = 128};
    size_t packed_size = plxk_qgemm_packed_b_size(isa, n, k);
    void *packed = xalloc(packed_size);
    if (!plxk_qgemm_pack_b(isa, &r.g, packed, packed_size)) {
        die("plxk_qgemm_pack_b refused the arguments");
    }
    r.g.packed_b = packed;
    r.ws_size = plxk_qgemm_workspace_size(isa, m, n, k, plxk_pool_threads(pool));
    r.ws = xalloc(r.ws_size);
    double gops = median_gops(q_once, &r, 2.0 * (double)m * (double)n * (double)k, runs);
    free(a);
    free(b);
    free(bias);
    free(scale);
    free(c);
    free(packed);
    free(r.ws);
    return gops;
}

static double time_float(plxk_isa isa, plxk_pool *pool, const shape *s, int runs) {
    size_t m = s->m, n = s->n, k = s->k;
    float *a = xalloc(m * k * sizeof *a), *b = xalloc(k * n * sizeof *b);
    float *bias = xalloc(n * sizeof *bias), *c = xalloc(m * n * sizeof *c);
    unsigned seed = 777;
    for (size_t i = 0; i < m * k; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    for (size_t i = 0; i < k * n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (float)((seed >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    for (size_t j = 0; j < n; j++) {
        bias[j] = (float)j * 0.01f;
    }
    f_run r = {isa, pool, {0}, NULL, 0};
    r.g = (plxk_gemm_args){.m = m, .n = n, .k = k, .alpha = 1.0f, .a = a, .a_rs = (ptrdiff_t)k,
                           .a_cs = 1, .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .c = c,
                           .ldc = n, .bias = bias, .bias_rs = 0, .bias_cs = 1};
    float *packed = NULL;
    if (plxk_gemm_reads_packed(isa, m, n, k, r.g.b_rs, r.g.b_cs)) {
        size_t packed_size = plxk_gemm_packed_b_size(isa, n, k);
        packed = xalloc(packed_size);
        if (!plxk_gemm_pack_b(isa, &r.g, packed, packed_size)) {
            die("plxk_gemm_pack_b refused the arguments");
        }
        r.g.packed_b = packed;
    }
    r.ws_size = plxk_gemm_workspace_size(isa, m, n, k, plxk_pool_threads(pool));
    r.ws = xalloc(r.ws_size);
    double gflops = median_gops(f_once, &r, 2.0 * (double)m * (double)n * (double)k, runs);
    free(a);
    free(b);
    free(bias);
    free(c);
    free(packed);
    free(r.ws);
    return gflops;
}

int main(int argc, char **argv) {
    bool json = false;
    int runs = 7, threads = 1;
    plxk_qgemm_output output = PLXK_QOUT_UINT8;
    static const char *const output_names[] = {"int32", "float", "uint8", "int8"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) {
            const char *name = argv[++i];
            int found = -1;
            for (int o = 0; o < 4; o++) {
                if (strcmp(name, output_names[o]) == 0) {
                    found = o;
                }
            }
            if (found < 0) {
                die("--output takes int32, float, uint8 or int8");
            }
            output = (plxk_qgemm_output)found;
        } else {
            fprintf(stderr, "usage: plexus-bench-qgemm [--json] [--runs N] [--threads N] "
                            "[--output int32|float|uint8|int8]\n");
            return 2;
        }
    }
    char err[256];
    plxk_pool *pool = plxk_pool_create((size_t)threads, err, sizeof err);
    if (!pool) {
        die(err);
    }
    bool first = true;
    if (json) {
        printf("{\"benchmark\": \"qgemm\", \"threads\": %d, \"output\": \"%s\", \"results\": [",
               threads, output_names[output]);
    }
    for (size_t vi = 0; vi < VARIANT_COUNT; vi++) {
        const variant *v = &variants[vi];
        plxk_qgemm_allow_vnni(v->vnni);
        const char *method = plxk_qgemm_method(v->isa);
        bool method_ok = method && (strcmp(method, "vnni") == 0) == v->vnni;
        if (!plxk_isa_supported(v->isa) || !method_ok) {
            if (!json) {
                printf("%s: not supported by this CPU or build, skipped\n\n", v->name);
            }
            continue;
        }
        if (!json) {
            printf("%s (int8 method %s, float GEMM %s), %d thread%s, int8 output %s\n", v->name,
                   method, plxk_isa_name(v->isa), threads, threads == 1 ? "" : "s",
                   output_names[output]);
            printf("  %-26s %6s %6s %6s %10s %12s %7s\n", "shape", "M", "N", "K", "int8 GOP/s",
                   "f32 GFLOP/s", "ratio");
        }
        for (size_t s = 0; s < SHAPE_COUNT; s++) {
            double q = time_int8(v->isa, pool, &shapes[s], output, runs);
            double f = time_float(v->isa, pool, &shapes[s], runs);
            if (json) {
                printf("%s\n  {\"variant\": \"%s\", \"method\": \"%s\", \"isa\": \"%s\", "
                       "\"shape\": \"%s\", \"m\": %zu, \"n\": %zu, \"k\": %zu, "
                       "\"int8_gops\": %.2f, \"float_gflops\": %.2f, \"ratio\": %.3f}",
                       first ? "" : ",", v->name, method, plxk_isa_name(v->isa),
                       shapes[s].name, shapes[s].m, shapes[s].n, shapes[s].k, q, f, q / f);
                first = false;
            } else {
                printf("  %-26s %6zu %6zu %6zu %10.1f %12.1f %6.2fx\n", shapes[s].name,
                       shapes[s].m, shapes[s].n, shapes[s].k, q, f, q / f);
            }
            fflush(stdout);
        }
        if (!json) {
            printf("\n");
        }
    }
    plxk_qgemm_allow_vnni(true);
    if (json) {
        printf("\n]}\n");
    }
    plxk_pool_destroy(pool);
    return 0;
}
