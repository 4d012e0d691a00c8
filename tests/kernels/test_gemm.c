/* cpu_ref's GEMM (kernels/gemm.h) against a naive double-accumulating
 * reference, for every ISA variant this CPU supports, on the calling thread
 * and on pools of 2 and 3 threads; the thread pool (kernels/threadpool.h),
 * concurrent callers included; and the backend options `threads` and `isa`
 * through the runtime. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <plexus/plexus.h>

#include "gemm.h"
#include "threadpool.h"

#ifndef CPU_REF_DIR
#error "CPU_REF_DIR must be defined by the build"
#endif

/* ---- helpers ------------------------------------------------------------ */

static uint32_t rng_state = 12345;

static float rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *random_buffer(size_t count) {
    float *p = malloc((count ? count : 1) * sizeof *p);
    cr_assert(not(zero(ptr, p)));
    for (size_t i = 0; i < count; i++) {
        p[i] = rnd();
    }
    return p;
}

/* A test case: the multiply, and how the operands are laid out. */
typedef struct gemm_case {
    size_t m, n, k;
    bool trans_a, trans_b; /* A stored [K, M] / B stored [N, K] */
    size_t pad_a, pad_b, pad_c; /* extra elements per stored row */
    float alpha, beta;
    int bias; /* 0 none, 1 per row, 2 per column, 3 a full matrix */
    plxk_activation act;
    unsigned packed; /* PACKED_B, PACKED_A: pre-packed for each variant */
} gemm_case;

enum { PACKED_B = 1, PACKED_A = 2 }; /* plxk_gemm_pack_b, plxk_gemm_pack_a */

/* The variants to test: every one compiled in and supported; the others
 * are reported on stderr (not cr_log, which leaks under LeakSanitizer). */
static size_t supported_isas(plxk_isa *out) {
    size_t n = 0;
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        if (plxk_isa_supported((plxk_isa)i)) {
            out[n++] = (plxk_isa)i;
        } else {
            fprintf(stderr, "ISA variant %s is not supported by this CPU or build: skipped\n",
                        plxk_isa_name((plxk_isa)i));
        }
    }
    return n;
}

/* Runs one case with every supported variant and pools of 1, 2 and 3
 * threads, against the reference; returns the number of runs checked. */
static size_t check_case(const gemm_case *tc, plxk_pool *const *pools, size_t pool_count) {
    size_t m = tc->m, n = tc->n, k = tc->k;
    size_t lda = (tc->trans_a ? m : k) + tc->pad_a, ldb = (tc->trans_b ? k : n) + tc->pad_b;
    size_t ldc = n + tc->pad_c;
    float *a = random_buffer((tc->trans_a ? k : m) * lda);
    float *b = random_buffer((tc->trans_b ? n : k) * ldb);
    float *c0 = random_buffer(m * ldc);
    float *c = malloc((m * ldc + 1) * sizeof *c);
    float *bias = random_buffer(m * n);
    double *expect = malloc((m * n + 1) * sizeof *expect);
    double *scale = malloc((m * n + 1) * sizeof *scale);
    cr_assert(not(zero(ptr, c)));
    cr_assert(not(zero(ptr, expect)));
    cr_assert(not(zero(ptr, scale)));
    plxk_gemm_args g = {.m = m, .n = n, .k = k, .alpha = tc->alpha, .beta = tc->beta,
                           .a = a, .b = b, .c = c, .ldc = ldc, .act = tc->act,
                           .lo = -0.5f, .hi = 0.75f, .slope = 0.125f};
    g.a_rs = tc->trans_a ? 1 : (ptrdiff_t)lda;
    g.a_cs = tc->trans_a ? (ptrdiff_t)lda : 1;
    g.b_rs = tc->trans_b ? 1 : (ptrdiff_t)ldb;
    g.b_cs = tc->trans_b ? (ptrdiff_t)ldb : 1;
    if (tc->bias) {
        g.bias = bias;
        g.bias_rs = tc->bias == 2 ? 0 : tc->bias == 1 ? 1 : (ptrdiff_t)n;
        g.bias_cs = tc->bias == 1 ? 0 : 1;
    }
    /* The reference, in double. */
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            double acc = 0, mag = 0;
            for (size_t p = 0; p < k; p++) {
                double t = (double)a[(ptrdiff_t)i * g.a_rs + (ptrdiff_t)p * g.a_cs] *
                           (double)b[(ptrdiff_t)p * g.b_rs + (ptrdiff_t)j * g.b_cs];
                acc += t;
                mag += fabs(t);
            }
            double v = tc->alpha * acc;
            mag = fabs((double)tc->alpha) * mag;
            if (tc->beta != 0.0f) {
                v += (double)tc->beta * c0[i * ldc + j];
                mag += fabs((double)tc->beta * c0[i * ldc + j]);
            }
            if (g.bias) {
                double bv = g.bias[(ptrdiff_t)i * g.bias_rs + (ptrdiff_t)j * g.bias_cs];
                v += bv;
                mag += fabs(bv);
            }
            if (tc->act == PLXK_ACT_RELU) {
                v = v > 0 ? v : 0;
            } else if (tc->act == PLXK_ACT_CLIP) {
                v = v < g.lo ? g.lo : v > g.hi ? g.hi : v;
            } else if (tc->act == PLXK_ACT_LEAKY) {
                v = v < 0 ? g.slope * v : v;
            }
            expect[i * n + j] = v;
            scale[i * n + j] = mag + 1.0;
        }
    }
    plxk_isa isas[PLXK_ISA_COUNT];
    size_t isa_count = supported_isas(isas), checked = 0;
    for (size_t ii = 0; ii < isa_count; ii++) {
        float *packed = NULL, *packed_a = NULL;
        if (tc->packed & PACKED_B) {
            size_t bytes = plxk_gemm_packed_b_size(isas[ii], n, k);
            packed = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
            cr_assert(not(zero(ptr, packed)));
            cr_assert(plxk_gemm_pack_b(isas[ii], &g, packed, bytes));
            g.packed_b = packed;
        }
        if (tc->packed & PACKED_A) {
            size_t bytes = plxk_gemm_packed_a_size(isas[ii], m, k);
            packed_a = malloc(bytes);
            cr_assert(not(zero(ptr, packed_a)));
            cr_assert(plxk_gemm_pack_a(isas[ii], &g, packed_a, bytes));
            g.packed_a = packed_a;
        }
        for (size_t pi = 0; pi < pool_count; pi++) {
            size_t threads = plxk_pool_threads(pools[pi]);
            size_t ws_size = plxk_gemm_workspace_size(isas[ii], m, n, k, threads);
            void *ws = malloc(ws_size ? ws_size : 1);
            cr_assert(not(zero(ptr, ws)));
            memcpy(c, c0, m * ldc * sizeof *c);
            if (tc->beta == 0.0f) { /* beta 0: C is never read, even NaN */
                for (size_t i = 0; i < m * ldc; i++) {
                    c[i] = NAN;
                }
            }
            cr_assert(plxk_gemm(isas[ii], pools[pi], &g, ws, ws_size),
                      "%s refused %zux%zux%zu", plxk_isa_name(isas[ii]), m, n, k);
            for (size_t i = 0; i < m; i++) {
                for (size_t j = 0; j < n; j++) {
                    double got = c[i * ldc + j], want = expect[i * n + j];
                    double tol = 1e-5 * (double)(k + 1) * scale[i * n + j];
                    if (!(fabs(got - want) <= tol)) {
                        cr_fatal("%s, %zu threads, M %zu N %zu K %zu trans %d%d pads %zu/%zu/%zu "
                                 "alpha %g beta %g bias %d act %d: C[%zu,%zu] = %.9g, expected "
                                 "%.9g (tolerance %.3g)",
                                 plxk_isa_name(isas[ii]), threads, m, n, k, tc->trans_a,
                                 tc->trans_b, tc->pad_a, tc->pad_b, tc->pad_c, tc->alpha,
                                 tc->beta, tc->bias, (int)tc->act, i, j, got, want, tol);
                    }
                }
                for (size_t j = n; j < ldc; j++) { /* the padding is not written */
                    float was = c0[i * ldc + j], now = c[i * ldc + j];
                    if (tc->beta == 0.0f) {
                        cr_assert(isnan(now), "C padding written at [%zu,%zu]", i, j);
                    } else {
                        cr_assert(eq(flt, now, was), "C padding written at [%zu,%zu]", i, j);
                    }
                }
            }
            free(ws);
            checked++;
        }
        free(packed);
        free(packed_a);
    }
    free(a);
    free(b);
    free(c0);
    free(c);
    free(bias);
    free(expect);
    free(scale);
    return checked;
}

typedef struct pools {
    plxk_pool *p[3];
} pools;

static pools make_pools(void) {
    pools ps = {{NULL, NULL, NULL}};
    char err[256];
    ps.p[1] = plxk_pool_create(2, err, sizeof err);
    cr_assert(not(zero(ptr, ps.p[1])), "%s", err);
    ps.p[2] = plxk_pool_create(3, err, sizeof err);
    cr_assert(not(zero(ptr, ps.p[2])), "%s", err);
    return ps;
}

static void free_pools(pools *ps) {
    for (int i = 0; i < 3; i++) {
        plxk_pool_destroy(ps->p[i]);
    }
}

/* ---- GEMM ----------------------------------------------------------------- */

/* Shapes around every variant's block edges (MR 4/6/8, NR 8/16/32, KC 256,
 * MC 120/128, NC 2048), primes, degenerate and matrix-vector shapes, each
 * with the four combinations of transposes and padded leading dims. */
Test(gemm, shapes_and_strides) {
    static const size_t shapes[][3] = {
        {1, 1, 1},     {7, 13, 29},   {2, 3, 1},     {1, 40, 5},    {40, 1, 5},
        {3, 1, 300},   {300, 1, 64},  {1, 300, 64},  {4, 8, 16},    {5, 9, 17},
        {6, 16, 256},  {7, 17, 257},  {8, 32, 255},  {9, 33, 513},  {13, 31, 100},
        {121, 33, 20}, {129, 65, 30}, {127, 2049, 3}, {64, 2050, 9}, {300, 500, 400},
        {100, 300, 600}, {200, 700, 40},
    };
    pools ps = make_pools();
    size_t checked = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int t = 0; t < 4; t++) {
            gemm_case tc = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, (t >> 1) & 1,
                            t == 3 ? 3 : 0, t == 3 ? 5 : 0, t ? 2 : 0, 1.0f, 0.0f, 0,
                            PLXK_ACT_NONE, 0};
            if (shapes[s][0] * shapes[s][1] * shapes[s][2] > 1000000 && t != 3 && t != 0) {
                continue; /* the large shape: plain and both transposed */
            }
            checked += check_case(&tc, ps.p, 3);
        }
    }
    fprintf(stderr, "gemm.shapes_and_strides: %zu runs checked\n", checked);
    free_pools(&ps);
}

/* Pre-packed operands: the shapes of shapes_and_strides that reach the
 * packed path (several MC blocks of rows, several KC passes, one block of
 * rows by chunks of B, regions split among threads) and those that do not
 * (matrix-vector rows, the transposed problem), both layouts of the packed
 * operand, with an epilogue. */
static const size_t packed_shapes[][3] = {
    {7, 13, 29},  {3, 1, 300},  {300, 1, 64}, {1, 300, 64}, {9, 33, 513},
    {40, 3, 50},  {121, 33, 20}, {129, 65, 30}, {64, 2050, 9}, {300, 500, 400},
    {250, 49, 600},
};

static void check_packed(unsigned packed, const char *name) {
    pools ps = make_pools();
    size_t checked = 0;
    for (size_t s = 0; s < sizeof packed_shapes / sizeof packed_shapes[0]; s++) {
        for (int t = 0; t < 2; t++) {
            gemm_case tc = {packed_shapes[s][0], packed_shapes[s][1], packed_shapes[s][2],
                            packed == PACKED_A && t == 1, packed != PACKED_A && t == 1, 0,
                            t ? 3 : 0, 1, 0.5f, t ? 0.25f : 0.0f, packed == PACKED_A ? 1 : 2,
                            PLXK_ACT_CLIP, packed};
            checked += check_case(&tc, ps.p, 3);
        }
    }
    fprintf(stderr, "gemm.%s: %zu runs checked\n", name, checked);
    free_pools(&ps);
}

Test(gemm, pre_packed_b) {
    check_packed(PACKED_B, "pre_packed_b");
}

Test(gemm, pre_packed_a) {
    check_packed(PACKED_A, "pre_packed_a");
}

Test(gemm, pre_packed_a_and_b) {
    check_packed(PACKED_A | PACKED_B, "pre_packed_a_and_b");
}

/* On the packed path the panels are what is multiplied: B's and A's own
 * values, changed after packing, are not read. And a short buffer is
 * refused. */
Test(gemm, pre_packed_operands_are_read) {
    const size_t m = 64, n = 70, k = 300;
    float *a = random_buffer(m * k), *b = random_buffer(k * n), *c = malloc(m * n * sizeof *c);
    float *want = malloc(m * n * sizeof *want);
    cr_assert(not(zero(ptr, c)));
    cr_assert(not(zero(ptr, want)));
    plxk_isa isas[PLXK_ISA_COUNT];
    size_t isa_count = supported_isas(isas);
    for (size_t ii = 0; ii < isa_count; ii++) {
        plxk_gemm_args g = {.m = m, .n = n, .k = k, .alpha = 1.0f, .a = a, .a_rs = (ptrdiff_t)k,
                            .a_cs = 1, .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .c = want,
                            .ldc = n};
        size_t ws_size = plxk_gemm_workspace_size(isas[ii], m, n, k, 1);
        void *ws = malloc(ws_size);
        cr_assert(not(zero(ptr, ws)));
        cr_assert(plxk_gemm(isas[ii], NULL, &g, ws, ws_size));
        /* B packed, then A packed too */
        float *packed[2], *other[2];
        for (int left = 0; left < 2; left++) {
            size_t rows = left ? m : n;
            size_t bytes = left ? plxk_gemm_packed_a_size(isas[ii], m, k)
                                : plxk_gemm_packed_b_size(isas[ii], n, k);
            bool (*pack)(plxk_isa, const plxk_gemm_args *, float *, size_t) =
                left ? plxk_gemm_pack_a : plxk_gemm_pack_b;
            cr_assert(ge(sz, bytes, rows * k * sizeof(float)));
            packed[left] = aligned_alloc(64, (bytes + 63) / 64 * 64);
            cr_assert(not(zero(ptr, packed[left])));
            cr_assert(not(pack(isas[ii], &g, packed[left], bytes - 1)), "a short buffer");
            cr_assert(pack(isas[ii], &g, packed[left], bytes));
            other[left] = random_buffer(rows * k); /* the operand changed after packing */
            if (left) {
                g.a = other[left];
                g.packed_a = packed[left];
            } else {
                g.b = other[left];
                g.packed_b = packed[left];
            }
            g.c = c;
            memset(c, 0, m * n * sizeof *c);
            cr_assert(plxk_gemm(isas[ii], NULL, &g, ws, ws_size));
            for (size_t i = 0; i < m * n; i++) {
                cr_assert(eq(flt, c[i], want[i]), "%s: C[%zu] = %g from %s's panels, %g before",
                          plxk_isa_name(isas[ii]), i, c[i], left ? "A" : "B", want[i]);
            }
        }
        for (int left = 0; left < 2; left++) {
            free(packed[left]);
            free(other[left]);
        }
        free(ws);
    }
    free(a);
    free(b);
    free(c);
    free(want);
}

/* alpha, beta, every kind of bias, every activation. */
Test(gemm, epilogue) {
    /* ... the matrix-vector rows: 3 rows; 3 columns of 40 rows, run
     * transposed; 2 rows of more than one chunk; B read in place by a
     * tile of few rows, with an edge panel and two passes over K; and, with
     * a small K, more rows than one MC block packed at once, multiplied by
     * B in several chunks and an edge */
    static const size_t shapes[][3] = {{7, 13, 29}, {33, 70, 300}, {1, 1, 1},    {50, 1, 20},
                                       {3, 70, 300}, {40, 3, 50},  {2, 1100, 9}, {20, 70, 300},
                                       {136, 300, 40}};
    static const float alphas[][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}, {0.0f, -1.0f}};
    static const plxk_activation acts[] = {PLXK_ACT_NONE, PLXK_ACT_RELU, PLXK_ACT_CLIP,
                                           PLXK_ACT_LEAKY};
    pools ps = make_pools();
    size_t checked = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t ab = 0; ab < 4; ab++) {
            for (int bias = 0; bias < 4; bias++) {
                for (size_t ac = 0; ac < 4; ac++) {
                    gemm_case tc = {shapes[s][0], shapes[s][1], shapes[s][2], ab == 2, ab == 3,
                                    0, 1, 1, alphas[ab][0], alphas[ab][1], bias, acts[ac],
                                    false};
                    checked += check_case(&tc, ps.p, 3);
                }
            }
        }
    }
    fprintf(stderr, "gemm.epilogue: %zu runs checked\n", checked);
    free_pools(&ps);
}

/* K = 0: C = act(beta * C + bias), A and B never read. */
/* The fused activations on values that are not finite, in every variant,
 * on full tiles and edges: relu takes -inf to 0 and keeps NaN (as the
 * unfused relu and ONNX's max(x, 0) do), clip keeps NaN and clamps the
 * infinities, leaky_relu scales -inf (gemm.h). C = A B with
 * K = 1 and B all ones, so C's row i is A's value i. */
Test(gemm, activations_of_non_finite_values) {
    enum { M = 16, N = 70 };
    const float vals[4] = {INFINITY, -INFINITY, NAN, 2.0f};
    float a[M], b[N], c[M * N];
    for (size_t i = 0; i < M; i++) {
        a[i] = vals[i % 4];
    }
    for (size_t j = 0; j < N; j++) {
        b[j] = 1.0f;
    }
    plxk_isa isas[PLXK_ISA_COUNT];
    size_t n_isas = supported_isas(isas);
    static const plxk_activation acts[] = {PLXK_ACT_RELU, PLXK_ACT_CLIP, PLXK_ACT_LEAKY};
    for (size_t ii = 0; ii < n_isas; ii++) {
        for (size_t ac = 0; ac < 3; ac++) {
            plxk_gemm_args g = {.m = M, .n = N, .k = 1, .alpha = 1.0f, .a = a, .a_rs = 1,
                                .a_cs = 1, .b = b, .b_rs = N, .b_cs = 1, .c = c, .ldc = N,
                                .act = acts[ac], .lo = -1.0f, .hi = 1.0f, .slope = 0.5f};
            size_t ws_size = plxk_gemm_workspace_size(isas[ii], M, N, 1, 1);
            void *ws = malloc(ws_size);
            cr_assert(plxk_gemm(isas[ii], NULL, &g, ws, ws_size));
            free(ws);
            for (size_t i = 0; i < M; i++) {
                float x = vals[i % 4], want;
                if (acts[ac] == PLXK_ACT_RELU) {
                    want = isnan(x) ? x : x > 0.0f ? x : 0.0f;
                } else if (acts[ac] == PLXK_ACT_CLIP) {
                    want = isnan(x) ? x : x < -1.0f ? -1.0f : x > 1.0f ? 1.0f : x;
                } else {
                    want = x < 0.0f ? 0.5f * x : x;
                }
                for (size_t j = 0; j < N; j++) {
                    float got = c[i * N + j];
                    cr_assert(isnan(want) ? isnan(got) : got == want,
                              "%s act %d: C[%zu,%zu] of %g is %g, not %g",
                              plxk_isa_name(isas[ii]), (int)acts[ac], i, j, (double)x,
                              (double)got, (double)want);
                }
            }
        }
    }
}

Test(gemm, k_zero) {
    pools ps = make_pools();
    for (int bias = 0; bias < 4; bias++) {
        gemm_case tc = {5, 7, 0, false, false, 0, 0, 1, 1.0f, 0.5f, bias, PLXK_ACT_RELU, true};
        check_case(&tc, ps.p, 3);
        gemm_case tc0 = {5, 7, 0, false, false, 0, 0, 0, 1.0f, 0.0f, bias, PLXK_ACT_NONE,
                         false};
        check_case(&tc0, ps.p, 3);
    }
    free_pools(&ps);
}

/* Unusable arguments are refused without touching C; M or N = 0 is a no-op. */
Test(gemm, refusals) {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {9, 9, 9, 9};
    plxk_gemm_args g = {.m = 2, .n = 2, .k = 2, .alpha = 1, .a = a, .a_rs = 2, .a_cs = 1,
                           .b = b, .b_rs = 2, .b_cs = 1, .c = c, .ldc = 2};
    plxk_isa isa = plxk_isa_best();
    size_t ws_size = plxk_gemm_workspace_size(isa, 2, 2, 2, 1);
    cr_assert(gt(sz, ws_size, 0));
    char *ws = malloc(ws_size);
    cr_assert(not(plxk_gemm(isa, NULL, NULL, ws, ws_size)));
    {
        /* 9 x 9 x 9: enough rows and columns for the packed path */
        static float a5[81], b5[81], c5[81] = {7};
        plxk_gemm_args g5 = {.m = 9, .n = 9, .k = 9, .alpha = 1, .a = a5, .a_rs = 9, .a_cs = 1,
                             .b = b5, .b_rs = 9, .b_cs = 1, .c = c5, .ldc = 9};
        cr_assert(not(plxk_gemm(isa, NULL, &g5, ws, 16)), "a workspace too small is refused");
        cr_assert(not(plxk_gemm(isa, NULL, &g5, NULL, 0)));
        cr_assert(eq(flt, c5[0], 7.0f));
    }
    cr_assert(not(plxk_gemm((plxk_isa)7, NULL, &g, ws, ws_size)));
    g.ldc = 1;
    cr_assert(not(plxk_gemm(isa, NULL, &g, ws, ws_size)), "ldc < n is refused");
    g.ldc = 2;
    g.a = NULL;
    cr_assert(not(plxk_gemm(isa, NULL, &g, ws, ws_size)));
    for (int i = 0; i < 4; i++) {
        cr_assert(eq(flt, c[i], 9.0f));
    }
    g.a = a;
    g.m = 0;
    cr_assert(plxk_gemm(isa, NULL, &g, NULL, 0), "M = 0 needs no workspace");
    g.m = 2;
    cr_assert(plxk_gemm(isa, NULL, &g, ws, ws_size));
    cr_assert(eq(flt, c[0], 1.0f));
    cr_assert(eq(flt, c[3], 4.0f));
    /* A misaligned workspace of the advertised size works. */
    char *odd = malloc(ws_size + 1);
    cr_assert(plxk_gemm(isa, NULL, &g, odd + 1, ws_size));
    free(odd);
    /* Two rows by an op(B) with contiguous rows go to the tiles, which
     * need the workspace; with contiguous columns (B read transposed: the
     * identity is its own transpose) they are dot products, which do not. */
    c[0] = c[3] = 9.0f;
    cr_assert(not(plxk_gemm(isa, NULL, &g, NULL, 0)));
    cr_assert(eq(flt, c[0], 9.0f));
    g.b_rs = 1;
    g.b_cs = 2;
    cr_assert(plxk_gemm(isa, NULL, &g, NULL, 0), "two rows run without a workspace");
    cr_assert(eq(flt, c[0], 1.0f));
    cr_assert(eq(flt, c[3], 4.0f));
    free(ws);
    cr_assert(eq(sz, plxk_gemm_workspace_size(isa, 0, 5, 5, 4), 0));
    /* Bounded by the blocks: huge shapes need no more than large ones. */
    cr_assert(eq(sz, plxk_gemm_workspace_size(isa, SIZE_MAX / 2, SIZE_MAX / 2, 1000, 256),
                 plxk_gemm_workspace_size(isa, 4096, 4096, 4096, 256)));
}

/* A pool whose threads outnumber the workspace's slices runs on the caller. */
Test(gemm, workspace_for_fewer_threads) {
    pools ps = make_pools();
    size_t m = 70, n = 90, k = 40;
    float *a = random_buffer(m * k), *b = random_buffer(k * n), *c1 = random_buffer(m * n);
    float *c3 = random_buffer(m * n);
    plxk_isa isa = plxk_isa_best();
    size_t ws1 = plxk_gemm_workspace_size(isa, m, n, k, 1);
    void *ws = malloc(ws1);
    plxk_gemm_args g = {.m = m, .n = n, .k = k, .alpha = 1, .a = a, .a_rs = (ptrdiff_t)k,
                           .a_cs = 1, .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .c = c1, .ldc = n};
    cr_assert(plxk_gemm(isa, NULL, &g, ws, ws1));
    g.c = c3;
    cr_assert(plxk_gemm(isa, ps.p[2], &g, ws, ws1));
    cr_assert(eq(int, memcmp(c1, c3, m * n * sizeof *c1), 0), "same tiles, same sums");
    free(a);
    free(b);
    free(c1);
    free(c3);
    free(ws);
    free_pools(&ps);
}

Test(gemm, isa_names) {
    plxk_isa isa;
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        cr_assert(plxk_isa_parse(plxk_isa_name((plxk_isa)i), &isa));
        cr_assert(eq(int, (int)isa, i));
    }
    cr_assert(plxk_isa_parse("auto", &isa));
    cr_assert(eq(int, (int)isa, (int)plxk_isa_best()));
    cr_assert(not(plxk_isa_parse("sse9", &isa)));
    cr_assert(not(plxk_isa_parse(NULL, &isa)));
    cr_assert(plxk_isa_supported(PLXK_ISA_PORTABLE));
    cr_assert(plxk_isa_supported(plxk_isa_best()));
    plxk_gemm_blocking blk;
    cr_assert(plxk_gemm_blocking_of(PLXK_ISA_PORTABLE, &blk));
    cr_assert(gt(sz, blk.mr, 0));
    cr_assert(eq(sz, blk.nc % blk.nr, 0));
    cr_assert(eq(sz, blk.mc % blk.mr, 0));
}

/* ---- thread pool ---------------------------------------------------------- */

typedef struct count_ctx {
    atomic_int *hits;
    size_t threads;
    atomic_int bad_thread;
} count_ctx;

static void count_task(void *ctx, size_t task, size_t thread) {
    count_ctx *c = ctx;
    atomic_fetch_add(&c->hits[task], 1);
    if (thread >= c->threads) {
        atomic_store(&c->bad_thread, 1);
    }
}

/* A cost that always wakes the workers (PLXK_POOL_MIN_COST_NS). */
#define COSTLY 1e9

static void run_and_count(plxk_pool *pool, size_t tasks) {
    atomic_int *hits = calloc(tasks ? tasks : 1, sizeof *hits);
    cr_assert(not(zero(ptr, hits)));
    count_ctx c = {hits, plxk_pool_threads(pool), 0};
    plxk_pool_run(pool, tasks, COSTLY, count_task, &c);
    for (size_t i = 0; i < tasks; i++) {
        cr_assert(eq(int, atomic_load(&hits[i]), 1), "task %zu of %zu ran %d times", i, tasks,
                  atomic_load(&hits[i]));
    }
    cr_assert(eq(int, atomic_load(&c.bad_thread), 0));
    free(hits);
}

Test(pool, many_and_zero_tasks) {
    for (size_t threads = 1; threads <= 4; threads++) {
        char err[256];
        plxk_pool *pool = plxk_pool_create(threads, err, sizeof err);
        cr_assert(not(zero(ptr, pool)), "%s", err);
        cr_assert(eq(sz, plxk_pool_threads(pool), threads));
        static const size_t counts[] = {0, 1, 2, 3, 7, 100, 10000};
        for (int rep = 0; rep < 20; rep++) {
            for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
                run_and_count(pool, counts[i]);
            }
        }
        plxk_pool_destroy(pool);
    }
    run_and_count(NULL, 50);
    cr_assert(eq(sz, plxk_pool_threads(NULL), 1));
    plxk_pool_destroy(NULL);
}

static void note_thread(void *ctx, size_t task, size_t thread) {
    (void)task;
    atomic_int *highest = ctx;
    if ((int)thread > atomic_load(highest)) {
        atomic_store(highest, (int)thread);
    }
}

/* A run cheaper than waking the workers stays on the calling thread. */
Test(pool, cheap_runs_stay_on_the_caller) {
    char err[256];
    plxk_pool *pool = plxk_pool_create(4, err, sizeof err);
    cr_assert(not(zero(ptr, pool)), "%s", err);
    for (int rep = 0; rep < 50; rep++) {
        atomic_int highest;
        atomic_init(&highest, 0);
        plxk_pool_run(pool, 100, PLXK_POOL_MIN_COST_NS / 2, note_thread, &highest);
        cr_assert(eq(int, atomic_load(&highest), 0));
    }
    plxk_pool_destroy(pool);
}

Test(pool, bad_sizes) {
    char err[256] = "";
    cr_assert(zero(ptr, plxk_pool_create(0, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, "not 0"))), "%s", err);
    cr_assert(zero(ptr, plxk_pool_create(PLXK_POOL_MAX_THREADS + 1, NULL, 0)));
    cr_assert(ge(sz, plxk_pool_default_threads(), 1));
}

/* Several threads run on one pool at once (the backend's concurrent
 * executions), and tasks that run the pool again (nested): every task of
 * every run exactly once, no deadlock, no race (ThreadSanitizer). */
typedef struct caller_ctx {
    plxk_pool *pool;
    atomic_int failures; /* outer_task may run on any thread */
} caller_ctx;

/* Runs the pool again from inside a task: inline, each of 3 tasks once. */
static void outer_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    caller_ctx *cc = ctx;
    if (task % 4 == 0) {
        atomic_int hits[3];
        for (size_t i = 0; i < 3; i++) {
            atomic_init(&hits[i], 0);
        }
        count_ctx c = {hits, plxk_pool_threads(cc->pool), 0};
        plxk_pool_run(cc->pool, 3, COSTLY, count_task, &c);
        for (size_t i = 0; i < 3; i++) {
            if (atomic_load(&hits[i]) != 1) {
                atomic_fetch_add(&cc->failures, 1);
            }
        }
    }
}

static void *caller_main(void *arg) {
    caller_ctx *cc = arg;
    for (int rep = 0; rep < 200; rep++) {
        size_t tasks = 1 + (size_t)(rep * 7) % 61;
        atomic_int hits[64];
        for (size_t i = 0; i < 64; i++) {
            atomic_init(&hits[i], 0);
        }
        count_ctx c = {hits, plxk_pool_threads(cc->pool), 0};
        plxk_pool_run(cc->pool, tasks, COSTLY, count_task, &c);
        for (size_t i = 0; i < tasks; i++) {
            if (atomic_load(&hits[i]) != 1) {
                atomic_fetch_add(&cc->failures, 1);
            }
        }
        if (rep % 10 == 0) {
            plxk_pool_run(cc->pool, 8, COSTLY, outer_task, cc);
        }
    }
    return NULL;
}

Test(pool, concurrent_callers) {
    char err[256];
    plxk_pool *pool = plxk_pool_create(3, err, sizeof err);
    cr_assert(not(zero(ptr, pool)), "%s", err);
    enum { CALLERS = 4 };
    pthread_t tids[CALLERS];
    caller_ctx ctx[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        ctx[i].pool = pool;
        atomic_init(&ctx[i].failures, 0);
        cr_assert(eq(int, pthread_create(&tids[i], NULL, caller_main, &ctx[i]), 0));
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(tids[i], NULL);
        cr_assert(eq(int, atomic_load(&ctx[i].failures), 0), "caller %d", i);
    }
    plxk_pool_destroy(pool);
}

/* GEMMs from several threads at once on one pool, each with its own
 * workspace: the results equal the single-threaded ones. */
typedef struct gemm_caller {
    plxk_pool *pool;
    const plxk_gemm_args *g;
    const float *expect;
    int failures;
} gemm_caller;

static void *gemm_caller_main(void *arg) {
    gemm_caller *gc = arg;
    plxk_gemm_args g = *gc->g;
    size_t count = g.m * g.n;
    g.c = malloc(count * sizeof *g.c);
    size_t ws_size = plxk_gemm_workspace_size(plxk_isa_best(), g.m, g.n, g.k,
                                                 plxk_pool_threads(gc->pool));
    void *ws = malloc(ws_size);
    for (int rep = 0; rep < 10; rep++) {
        if (!g.c || !ws || !plxk_gemm(plxk_isa_best(), gc->pool, &g, ws, ws_size) ||
            memcmp(g.c, gc->expect, count * sizeof *g.c) != 0) {
            gc->failures++;
        }
    }
    free(g.c);
    free(ws);
    return NULL;
}

Test(pool, concurrent_gemms) {
    char err[256];
    plxk_pool *pool = plxk_pool_create(3, err, sizeof err);
    cr_assert(not(zero(ptr, pool)), "%s", err);
    size_t m = 100, n = 130, k = 70;
    float *a = random_buffer(m * k), *b = random_buffer(k * n), *expect = random_buffer(m * n);
    plxk_gemm_args g = {.m = m, .n = n, .k = k, .alpha = 1, .a = a, .a_rs = (ptrdiff_t)k,
                           .a_cs = 1, .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .c = expect,
                           .ldc = n, .act = PLXK_ACT_RELU};
    size_t ws_size = plxk_gemm_workspace_size(plxk_isa_best(), m, n, k, 1);
    void *ws = malloc(ws_size);
    cr_assert(plxk_gemm(plxk_isa_best(), NULL, &g, ws, ws_size));
    free(ws);
    enum { CALLERS = 3 };
    pthread_t tids[CALLERS];
    gemm_caller gc[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        gc[i] = (gemm_caller){pool, &g, expect, 0};
        cr_assert(eq(int, pthread_create(&tids[i], NULL, gemm_caller_main, &gc[i]), 0));
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(tids[i], NULL);
        cr_assert(eq(int, gc[i].failures, 0), "caller %d", i);
    }
    free(a);
    free(b);
    free(expect);
    plxk_pool_destroy(pool);
}

/* ---- backend options (R-9, R-10) ------------------------------------------ */

static plx_runtime *cpu_ref_runtime(const char *key, const char *value) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.ignore_environment = true;
    o.skip_default_dir = true;
    const char *paths[] = {CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_backend_option opt = {"cpu_ref", key, value};
    if (key) {
        o.backend_options = &opt;
        o.backend_option_count = 1;
    }
    plx_runtime *rt = NULL;
    plx_status s = plx_runtime_create(&o, &rt);
    cr_assert(zero(ptr, (void *)s));
    return rt;
}

static const char *rejection_reason(const plx_runtime *rt) {
    for (size_t i = 0; i < plx_runtime_rejection_count(rt); i++) {
        const plx_rejection *r = plx_runtime_rejection(rt, i);
        if (r->id && strcmp(r->id, "cpu_ref") == 0) {
            return r->reason;
        }
    }
    return NULL;
}

Test(options, bad_values_name_the_key_and_value) {
    static const struct {
        const char *key, *value, *needle;
    } cases[] = {
        {"threads", "0", "invalid value '0' for option 'threads' of backend 'cpu_ref'"},
        {"threads", "abc", "invalid value 'abc' for option 'threads' of backend 'cpu_ref'"},
        {"threads", "257", "invalid value '257' for option 'threads'"},
        {"threads", "", "invalid value '' for option 'threads'"},
        {"threads", "2x", "invalid value '2x' for option 'threads'"},
        {"isa", "sse9", "invalid value 'sse9' for option 'isa' of backend 'cpu_ref'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plx_runtime *rt = cpu_ref_runtime(cases[i].key, cases[i].value);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "cpu_ref")), "%s=%s",
                  cases[i].key, cases[i].value);
        const char *reason = rejection_reason(rt);
        cr_assert(not(zero(ptr, (void *)reason)), "%s=%s: no rejection", cases[i].key,
                  cases[i].value);
        cr_assert(not(zero(ptr, strstr(reason, cases[i].needle))), "%s", reason);
        plx_runtime_destroy(&rt);
    }
    /* A variant the CPU cannot run is refused too (where there is one). */
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        if (plxk_isa_supported((plxk_isa)i)) {
            continue;
        }
        plx_runtime *rt = cpu_ref_runtime("isa", plxk_isa_name((plxk_isa)i));
        const char *reason = rejection_reason(rt);
        cr_assert(not(zero(ptr, (void *)reason)));
        cr_assert(not(zero(ptr, strstr(reason, "for option 'isa'"))), "%s", reason);
        plx_runtime_destroy(&rt);
    }
}

static void expect_caps(const char *key, const char *value, int64_t threads, const char *isa) {
    plx_runtime *rt = cpu_ref_runtime(key, value);
    const plx_backend_info *b = plx_runtime_find_backend(rt, "cpu_ref");
    cr_assert(not(zero(ptr, (void *)b)), "%s=%s: %s", key ? key : "", value ? value : "",
              rejection_reason(rt) ? rejection_reason(rt) : "");
    const plx_capability *t = plx_backend_info_capability(b, "cpu_ref.threads");
    const plx_capability *i = plx_backend_info_capability(b, "cpu_ref.isa");
    cr_assert(not(zero(ptr, (void *)t)));
    cr_assert(not(zero(ptr, (void *)i)));
    cr_assert(eq(int, (int)t->type, (int)PLX_VALUE_INT));
    cr_assert(eq(i64, t->int_value, threads));
    cr_assert(eq(int, (int)i->type, (int)PLX_VALUE_STRING));
    cr_assert(eq(str, (char *)i->string_value, (char *)isa));
    plx_runtime_destroy(&rt);
}

Test(options, threads_and_isa_show_in_capabilities) {
    const char *best = plxk_isa_name(plxk_isa_best());
    expect_caps(NULL, NULL, (int64_t)plxk_pool_default_threads(), best);
    expect_caps("threads", "2", 2, best);
    expect_caps("threads", "1", 1, best);
    expect_caps("isa", "auto", (int64_t)plxk_pool_default_threads(), best);
    expect_caps("isa", "portable", (int64_t)plxk_pool_default_threads(), "portable");
}

/* plx_runtime_options.intra_op_threads reaches every backend that declares
 * `threads`; a backend option for one backend wins over it; a caller built
 * before the field (a shorter struct_size) does not set it. */
static int64_t threads_with(uint32_t intra, const char *explicit_threads, uint32_t struct_size) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.ignore_environment = true;
    o.skip_default_dir = true;
    const char *paths[] = {CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    o.intra_op_threads = intra;
    plx_backend_option opt = {"cpu_ref", "threads", explicit_threads};
    if (explicit_threads) {
        o.backend_options = &opt;
        o.backend_option_count = 1;
    }
    if (struct_size) {
        o.struct_size = struct_size;
    }
    plx_runtime *rt = NULL;
    cr_assert(zero(ptr, (void *)plx_runtime_create(&o, &rt)));
    const plx_backend_info *b = plx_runtime_find_backend(rt, "cpu_ref");
    cr_assert(not(zero(ptr, (void *)b)), "%s", rejection_reason(rt) ? rejection_reason(rt) : "");
    const plx_capability *t = plx_backend_info_capability(b, "cpu_ref.threads");
    cr_assert(not(zero(ptr, (void *)t)));
    int64_t v = t->int_value;
    plx_runtime_destroy(&rt);
    return v;
}

Test(options, intra_op_threads_for_every_backend) {
    cr_expect(eq(i64, threads_with(3, NULL, 0), 3));
    cr_expect(eq(i64, threads_with(1, NULL, 0), 1));
    cr_expect(eq(i64, threads_with(3, "2", 0), 2), "the backend's own option wins");
    cr_expect(eq(i64, threads_with(0, NULL, 0), (int64_t)plxk_pool_default_threads()));
    uint32_t before = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_runtime_options, memory_strategy_count);
    cr_expect(eq(i64, threads_with(3, NULL, before), (int64_t)plxk_pool_default_threads()),
              "a struct_size that ends before intra_op_threads leaves it unset");
}
