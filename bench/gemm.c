/* plexus-bench-gemm: GFLOP/s of cpu_ref's matrix multiply (kernels/gemm.h)
 * against the machine's measured peak.
 *
 * For every ISA variant this CPU supports, and for 1 and 2 threads (the
 * calling thread plus a pool worker), times square multiplies (64 to 1024)
 * and shapes taken from CNNs: a stem convolution as im2col (M=64 output
 * channels, N=112*112 pixels, K=3*3*3), 3x3 and 1x1 convolutions of
 * ResNet stages, the pointwise (1x1) convolutions of MobileNet, whose K is
 * small (32 to 1024 input channels) and N long (up to 112*112 pixels), and a
 * fully connected layer (M=1000, N=1, K=1024). The convolutions have the
 * epilogue of a fused conv+relu6 (a bias per output channel, clip(0, 6)). Each
 * figure is the median of several runs. The peak is a loop of independent
 * multiply-adds compiled with the same flags as the variant (gemm_peak.c),
 * run on each thread at once for ~0.2 s; it is reported per thread and for
 * the thread count, and every result as a percentage of the latter.
 * Built with OpenBLAS (libopenblas-dev), it times cblas_sgemm on the same
 * shapes with the same thread count beside each figure (the plain
 * product: BLAS has no epilogue, so it does less work on the conv rows).
 *
 * usage: plexus-bench-gemm [--json] [--runs N] [--isa NAME] [--threads N]
 *                          [--shape TEXT]
 * (--isa and --threads restrict the runs to one variant, one count;
 * --shape to the shapes whose name contains TEXT). */
#define _GNU_SOURCE /* clock_gettime */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"
#include "gemm_peak.h"

#if defined(BENCH_GEMM_OPENBLAS)
#include <cblas.h>
#endif

typedef float (*peak_fn)(size_t iterations, float x, float y, double *out_flops);

static peak_fn peak_of(plxk_isa isa) {
    switch (isa) {
    case PLXK_ISA_PORTABLE:
        return bench_gemm_peak_portable;
#if defined(BENCH_GEMM_X86)
    case PLXK_ISA_AVX2:
        return bench_gemm_peak_avx2;
    case PLXK_ISA_AVX512:
        return bench_gemm_peak_avx512;
#else
    default:
        break;
#endif
    }
    return NULL;
}

static void die(const char *what) {
    fprintf(stderr, "plexus-bench-gemm: %s\n", what);
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

/* ---- peak ------------------------------------------------------------------ */

typedef struct peak_job {
    peak_fn fn;
    size_t iterations;
    double gflops;
    float sink;
} peak_job;

static void *peak_thread(void *arg) {
    peak_job *j = arg;
    double flops;
    double t0 = now_s();
    j->sink = j->fn(j->iterations, 0.999999f, 1e-7f, &flops);
    j->gflops = flops / (now_s() - t0) * 1e-9;
    return NULL;
}

/* Iterations of `fn` that take about `seconds` on one thread. */
static size_t calibrate_peak(peak_fn fn, double seconds) {
    size_t iterations = 1000;
    for (;;) {
        peak_job j = {fn, iterations, 0, 0};
        double t0 = now_s();
        peak_thread(&j);
        double took = now_s() - t0;
        if (took > 0.02) {
            return (size_t)((double)iterations * seconds / took) + 1;
        }
        iterations *= 4;
    }
}

/* GFLOP/s of `threads` threads running `iterations` of the peak loop at
 * once. */
static double measure_peak(peak_fn fn, size_t iterations, int threads) {
    peak_job jobs[2];
    pthread_t tids[2];
    for (int t = 0; t < threads; t++) {
        jobs[t] = (peak_job){fn, iterations, 0, 0};
        if (t > 0 && pthread_create(&tids[t], NULL, peak_thread, &jobs[t]) != 0) {
            die("cannot start a thread");
        }
    }
    peak_thread(&jobs[0]);
    double total = jobs[0].gflops;
    for (int t = 1; t < threads; t++) {
        pthread_join(tids[t], NULL);
        total += jobs[t].gflops;
    }
    return total;
}

/* The peak, read again beside every timed run: the clock of this kind of
 * machine (a VM, turbo) moves by a fifth from one minute to the next, so a
 * percentage against one reading taken at the start says as much about
 * the clock as about the GEMM. Each run's percentage is of the reading
 * taken right after it (about 20 ms of the peak loop). */
typedef struct peak_probe {
    peak_fn fn;
    size_t iterations; /* ~20 ms on one thread */
    int threads;
} peak_probe;

/* ---- GEMM ------------------------------------------------------------------ */

/* conv: the epilogue of a fused conv+relu6 (a bias per row, clip(0, 6)),
 * which costs as much as the product itself when K is small, and A (the
 * weights) packed ahead (plxk_gemm_pack_a), as cpu_ref's conv packs its
 * constant weights when the workload is created. */
typedef struct shape {
    const char *name;
    size_t m, n, k;
    bool conv;
} shape;

static const shape shapes[] = {
    {"square 64", 64, 64, 64, false},
    {"square 128", 128, 128, 128, false},
    {"square 256", 256, 256, 256, false},
    {"square 512", 512, 512, 512, false},
    {"square 1024", 1024, 1024, 1024, false},
    {"conv stem 3x3 s2 (im2col)", 64, 112 * 112, 27, true},
    {"conv 3x3 64->128 @56", 128, 56 * 56, 64 * 9, true},
    {"conv 1x1 256->256 @28", 256, 28 * 28, 256, true},
    {"conv 1x1 32->64 @112", 64, 112 * 112, 32, true},
    {"conv 1x1 64->128 @56", 128, 56 * 56, 64, true},
    {"conv 1x1 128->128 @56", 128, 56 * 56, 128, true},
    {"conv 1x1 512->512 @14", 512, 14 * 14, 512, true},
    {"conv 1x1 1024->1024 @7", 1024, 7 * 7, 1024, true},
    {"fc 1024->1000", 1000, 1, 1024, false},
    {"ffn 384->1536, 32 tokens", 32, 1536, 384, false},
    {"ffn 1536->384, 32 tokens", 32, 384, 1536, false},
    {"proj 384->384, 32 tokens", 32, 384, 384, false},
};
#define SHAPE_COUNT (sizeof shapes / sizeof shapes[0])

static float *random_matrix(size_t count) {
    float *p = malloc((count ? count : 1) * sizeof *p);
    if (!p) {
        die("out of memory");
    }
    unsigned s = 12345;
    for (size_t i = 0; i < count; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

/* Median GFLOP/s of `runs` timed runs of `one`, each repeating it for at
 * least ~20 ms. With a probe, also the median of each run's GFLOP/s as a
 * percentage of the peak read right after it (*percent) and the median of
 * those readings (*peak_read). */
typedef struct timed {
    void (*one)(struct timed *t);
    double flops;
} timed;

static double median_gflops(timed *t, int runs, const peak_probe *peak, double *percent,
                            double *peak_read) {
    t->one(t); /* warm up, and count repetitions */
    double t0 = now_s();
    t->one(t);
    double once = now_s() - t0;
    size_t reps = once > 0.02 ? 1 : (size_t)(0.02 / (once > 1e-7 ? once : 1e-7)) + 1;
    double results[32], shares[32], peaks[32];
    if (runs > 32) {
        runs = 32;
    }
    for (int r = 0; r < runs; r++) {
        t0 = now_s();
        for (size_t i = 0; i < reps; i++) {
            t->one(t);
        }
        results[r] = t->flops * (double)reps / (now_s() - t0) * 1e-9;
        if (peak) {
            peaks[r] = measure_peak(peak->fn, peak->iterations, peak->threads);
            shares[r] = 100.0 * results[r] / peaks[r];
        }
    }
    qsort(results, (size_t)runs, sizeof results[0], cmp_double);
    if (peak) {
        qsort(shares, (size_t)runs, sizeof shares[0], cmp_double);
        qsort(peaks, (size_t)runs, sizeof peaks[0], cmp_double);
        *percent = shares[runs / 2];
        *peak_read = peaks[runs / 2];
    }
    return results[runs / 2];
}

typedef struct gemm_run {
    timed t;
    plxk_isa isa;
    plxk_pool *pool;
    plxk_gemm_args g;
    void *ws;
    size_t ws_size;
} gemm_run;

static void gemm_once(timed *t) {
    gemm_run *r = (gemm_run *)(void *)t;
    if (!plxk_gemm(r->isa, r->pool, &r->g, r->ws, r->ws_size)) {
        die("plxk_gemm refused the arguments");
    }
}

#if defined(BENCH_GEMM_OPENBLAS)
typedef struct blas_run {
    timed t;
    const shape *s;
    const float *a, *b;
    float *c;
} blas_run;

static void blas_once(timed *t) {
    blas_run *r = (blas_run *)(void *)t;
    int m = (int)r->s->m, n = (int)r->s->n, k = (int)r->s->k;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, r->a, k, r->b, n,
                0.0f, r->c, n);
}
#endif

/* One shape's figures: GFLOP/s and percentage of the peak (median_gflops)
 * of cpu_ref's GEMM and of OpenBLAS's (blas -1 without it). OpenBLAS's
 * percentage is of the median peak read beside cpu_ref's runs: read right
 * after OpenBLAS's, the peak would lose a core to its threads, which spin
 * on after each call. */
typedef struct figures {
    double gflops, percent;
    double blas, blas_percent;
} figures;

/* cpu_ref's GEMM on shape `s`, and OpenBLAS with `threads` threads. */
static figures time_gemm(plxk_isa isa, plxk_pool *pool, int threads, const shape *s, int runs,
                         const peak_probe *peak) {
    figures f = {0, 0, -1.0, 0};
    float *a = random_matrix(s->m * s->k), *b = random_matrix(s->k * s->n);
    float *c = random_matrix(s->m * s->n), *bias = random_matrix(s->m);
    size_t ws_size = plxk_gemm_workspace_size(isa, s->m, s->n, s->k,
                                                 plxk_pool_threads(pool));
    void *ws = malloc(ws_size);
    if (!ws) {
        die("out of memory");
    }
    plxk_gemm_args g = {.m = s->m, .n = s->n, .k = s->k, .alpha = 1.0f,
                           .a = a, .a_rs = (ptrdiff_t)s->k, .a_cs = 1,
                           .b = b, .b_rs = (ptrdiff_t)s->n, .b_cs = 1,
                           .c = c, .ldc = s->n};
    float *packed = NULL;
    if (s->conv) {
        g.bias = bias;
        g.bias_rs = 1;
        g.act = PLXK_ACT_CLIP;
        g.hi = 6.0f;
        size_t packed_size = plxk_gemm_packed_a_size(isa, s->m, s->k);
        packed = malloc(packed_size);
        if (!packed || !plxk_gemm_pack_a(isa, &g, packed, packed_size)) {
            die("could not pack A");
        }
        g.packed_a = packed;
    }
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    gemm_run gr = {{gemm_once, flops}, isa, pool, g, ws, ws_size};
    double peak_read = 0.0;
    f.gflops = median_gflops(&gr.t, runs, peak, &f.percent, &peak_read);
#if defined(BENCH_GEMM_OPENBLAS)
    openblas_set_num_threads(threads);
    blas_run br = {{blas_once, flops}, s, a, b, c};
    f.blas = median_gflops(&br.t, runs, NULL, NULL, NULL);
    f.blas_percent = 100.0 * f.blas / peak_read;
    /* OpenBLAS's threads spin for a while after a call (about 2^28
     * cycles) before they sleep; on a machine with as many cores as
     * threads they would take a core from the next shape's timing. */
    struct timespec idle = {0, 300 * 1000 * 1000};
    nanosleep(&idle, NULL);
#else
    (void)threads;
#endif
    free(a);
    free(b);
    free(c);
    free(bias);
    free(packed);
    free(ws);
    return f;
}

int main(int argc, char **argv) {
    bool json = false;
    int runs = 5;
    int only_isa = -1, only_threads = 0;
    const char *only_shape = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            plxk_isa isa;
            if (!plxk_isa_parse(argv[++i], &isa)) {
                die("--isa takes portable, avx2, avx512 or auto");
            }
            only_isa = (int)isa;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            only_threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            only_shape = argv[++i];
        } else {
            fprintf(stderr, "usage: plexus-bench-gemm [--json] [--runs N] [--isa NAME] "
                            "[--threads N] [--shape TEXT]\n");
            return 2;
        }
    }
    static const int thread_counts[] = {1, 2};
    bool first = true;
    if (json) {
        printf("{\"benchmark\": \"gemm\", \"results\": [");
    }
    for (int isa_i = PLXK_ISA_COUNT - 1; isa_i >= 0; isa_i--) {
        plxk_isa isa = (plxk_isa)isa_i;
        plxk_gemm_blocking blk;
        if (only_isa >= 0 && isa_i != only_isa) {
            continue;
        }
        if (!plxk_isa_supported(isa) || !peak_of(isa) || !plxk_gemm_blocking_of(isa, &blk)) {
            if (!json) {
                printf("%s: not supported by this CPU or build, skipped\n\n", plxk_isa_name(isa));
            }
            continue;
        }
        size_t iterations = calibrate_peak(peak_of(isa), 0.02);
        double peak1 = measure_peak(peak_of(isa), iterations * 10, 1);
        for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
            int threads = thread_counts[t];
            if (only_threads > 0 && threads != only_threads) {
                continue;
            }
            double peak = threads == 1 ? peak1 : measure_peak(peak_of(isa), iterations * 10, threads);
            peak_probe probe = {peak_of(isa), iterations, threads};
            char err[256];
            plxk_pool *pool = plxk_pool_create((size_t)threads, err, sizeof err);
            if (!pool) {
                die(err);
            }
            if (!json) {
                printf("%s (MR %zu, NR %zu, KC %zu, MC %zu, NC %zu), %d thread%s: peak %.1f "
                       "GFLOP/s per thread, %.1f for %d at the start (each %% is of the "
                       "peak read beside its run)\n",
                       plxk_isa_name(isa), blk.mr, blk.nr, blk.kc, blk.mc, blk.nc, threads,
                       threads == 1 ? "" : "s", peak1, peak, threads);
                printf("  %-28s %6s %6s %6s %9s %7s %9s %7s\n", "shape", "M", "N", "K",
                       "GFLOP/s", "% peak", "OpenBLAS", "% peak");
            }
            for (size_t s = 0; s < SHAPE_COUNT; s++) {
                if (only_shape && !strstr(shapes[s].name, only_shape)) {
                    continue;
                }
                figures f = time_gemm(isa, pool, threads, &shapes[s], runs, &probe);
                char blas_json[96] = "null, \"openblas_percent_of_peak\": null";
                char blas_text[32] = "        -       -";
                if (f.blas >= 0) {
                    snprintf(blas_json, sizeof blas_json,
                             "%.2f, \"openblas_percent_of_peak\": %.1f", f.blas,
                             f.blas_percent);
                    snprintf(blas_text, sizeof blas_text, "%9.1f %6.1f%%", f.blas,
                             f.blas_percent);
                }
                if (json) {
                    printf("%s\n  {\"isa\": \"%s\", \"threads\": %d, \"shape\": \"%s\", "
                           "\"m\": %zu, \"n\": %zu, \"k\": %zu, \"gflops\": %.2f, "
                           "\"peak_gflops_per_thread\": %.2f, \"peak_gflops\": %.2f, "
                           "\"percent_of_peak\": %.1f, \"openblas_gflops\": %s}",
                           first ? "" : ",", plxk_isa_name(isa), threads, shapes[s].name,
                           shapes[s].m, shapes[s].n, shapes[s].k, f.gflops, peak1, peak,
                           f.percent, blas_json);
                    first = false;
                } else {
                    printf("  %-28s %6zu %6zu %6zu %9.1f %6.1f%% %s\n", shapes[s].name,
                           shapes[s].m, shapes[s].n, shapes[s].k, f.gflops, f.percent,
                           blas_text);
                }
                fflush(stdout);
            }
            if (!json) {
                printf("\n");
            }
            plxk_pool_destroy(pool);
        }
    }
    if (json) {
        printf("\n]}\n");
    }
    return 0;
}
