/* cpu_ref's 8-bit integer GEMM (kernels/qgemm.h) against a naive loop
 * written here: exact 64-bit sums of (a - za)(b - zb), then the output
 * stage as the header specifies it (float32 arithmetic, nearbyintf,
 * saturation). Every comparison is exact, floats included (bit for bit).
 *
 * Each test runs once per variant: portable, AVX2, AVX-512 with the 16-bit
 * method and AVX-512 with VNNI (the test is skipped, saying why, where the
 * CPU or the build lacks one), on the calling thread and on pools of 1 and
 * 2 threads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "qgemm.h"
#include "qgemm_kernel.h"
#include "threadpool.h"

/* ---- variants ------------------------------------------------------------- */

typedef struct variant {
    plxk_isa isa;
    bool vnni;
    const char *name;
} variant;

enum { V_PORTABLE, V_AVX2, V_AVX512_INT16, V_AVX512_VNNI, V_COUNT };

static const variant variants[V_COUNT] = {
    {PLXK_ISA_PORTABLE, false, "portable"},
    {PLXK_ISA_AVX2, false, "avx2"},
    {PLXK_ISA_AVX512, false, "avx512 (int16)"},
    {PLXK_ISA_AVX512, true, "avx512 (vnni)"},
};

/* Selects variant v for this test (its process: Criterion forks one per
 * test), or skips the test when this CPU or build cannot run it. */
static const variant *select_variant(int v) {
    const variant *var = &variants[v];
    if (!plxk_isa_supported(var->isa)) {
        cr_skip_test("%s: the variant is not supported by this CPU or build", var->name);
    }
    plxk_qgemm_allow_vnni(var->vnni);
    const char *method = plxk_qgemm_method(var->isa);
    const char *want = var->isa == PLXK_ISA_PORTABLE ? "c" : var->vnni ? "vnni" : "int16";
    if (!method || strcmp(method, want) != 0) {
        cr_skip_test("%s: this CPU lacks AVX-512 VNNI (the method would be %s)", var->name,
                     method ? method : "none");
    }
    return var;
}

/* One Criterion test per variant for each test body. */
#define VARIANT_TESTS(name)                                                                 \
    static void name(const variant *var);                                                  \
    Test(qgemm_portable, name) { name(select_variant(V_PORTABLE)); }                       \
    Test(qgemm_avx2, name) { name(select_variant(V_AVX2)); }                               \
    Test(qgemm_avx512_int16, name) { name(select_variant(V_AVX512_INT16)); }               \
    Test(qgemm_avx512_vnni, name) { name(select_variant(V_AVX512_VNNI)); }                 \
    static void name(const variant *var)

/* ---- random numbers ------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* in [lo, hi] */
static int32_t rnd_int(int32_t lo, int32_t hi) {
    return lo + (int32_t)(rnd_u32() % (uint32_t)(hi - lo + 1));
}

/* in [0, 1) */
static float rnd_unit(void) {
    return (float)(rnd_u32() >> 8) / 16777216.0f;
}

static void *xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    cr_assert(not(zero(ptr, p)));
    return p;
}

/* ---- a test case ------------------------------------------------------------ */

/* How the operands are stored and filled. */
typedef enum fill_kind {
    FILL_RANDOM = 0,  /* every byte value */
    FILL_EXTREME = 1, /* only the two ends of each range */
    FILL_MAX_MIN = 2, /* A at its largest and its zero point at its smallest, B
                       * at its smallest and its zero point at its largest:
                       * every term 255 x -255 */
    FILL_MAX_MAX = 3, /* both at their largest, zero points at their smallest:
                       * every term 255 x 255 */
} fill_kind;

typedef struct qcase {
    size_t m, n, k;
    bool a_signed, b_signed;
    bool trans_a, trans_b, trans_c; /* A [K, M], B [N, K], C [N, M] in memory */
    size_t step_a, step_b, step_c;  /* elements between neighbours along a stored row (1: dense) */
    size_t pad_a, pad_b, pad_c;     /* extra elements per stored row */
    int zp;                         /* 0: zero points 0; 1: random scalars; 2: B's per column */
    fill_kind fill;
    plxk_qgemm_output output;
    int scale;                      /* 0: one (stride 0); 1: per column; 2: the same, stride 3 */
    bool bias, fbias;
    plxk_activation act;
    int32_t out_zp;                 /* UINT8 / INT8 */
    bool random_out_zp;
    float scale_mul;                /* multiplies the random scales (0: 1) */
    bool packed;                    /* B pre-packed with plxk_qgemm_pack_b */
    bool per_row;                   /* bias and scale per row of C */
} qcase;

static size_t out_size(plxk_qgemm_output o) {
    return o == PLXK_QOUT_INT32 ? 4 : o == PLXK_QOUT_FLOAT ? 4 : 1;
}

static void describe(const qcase *tc, const variant *var, const char *pool, char *buf,
                     size_t size) {
    static const char *outs[] = {"int32", "float", "uint8", "int8"};
    snprintf(buf, size,
             "%s, %s: M %zu N %zu K %zu, A %s%s step %zu, B %s%s step %zu, C%s step %zu, zp %d, "
             "fill %d, out %s, scale %d, bias %d, fbias %d, act %d, out_zp %d, %s",
             var->name, pool, tc->m, tc->n, tc->k, tc->a_signed ? "s8" : "u8",
             tc->trans_a ? " transposed" : "", tc->step_a, tc->b_signed ? "s8" : "u8",
             tc->trans_b ? " transposed" : "", tc->step_b, tc->trans_c ? " transposed" : "",
             tc->step_c, tc->zp, (int)tc->fill, outs[tc->output], tc->scale, tc->bias, tc->fbias,
             (int)tc->act, tc->out_zp, tc->packed ? "packed B" : "B in place");
}

/* A stored matrix: rows x cols (logical) held as `outer` stored rows of
 * `inner` elements `step` apart, `ld` elements per stored row. */
typedef struct layout {
    ptrdiff_t rs, cs;
    size_t count; /* elements to allocate */
} layout;

static layout make_layout(size_t rows, size_t cols, bool trans, size_t step, size_t pad) {
    size_t outer = trans ? cols : rows, inner = trans ? rows : cols;
    size_t ld = (inner ? (inner - 1) * step + 1 : 0) + pad;
    layout l;
    l.rs = trans ? (ptrdiff_t)step : (ptrdiff_t)ld;
    l.cs = trans ? (ptrdiff_t)ld : (ptrdiff_t)step;
    l.count = outer * ld + 1;
    return l;
}

/* The output stage of qgemm.h on v for column j. */
static void reference_output(const plxk_qgemm_args *g, size_t i, size_t j, int32_t v,
                             void *out) {
    if (g->output == PLXK_QOUT_INT32) {
        memcpy(out, &v, sizeof v);
        return;
    }
    float s = g->scale[(ptrdiff_t)(g->per_row ? i : j) * g->scale_stride];
    float x = (float)v * s;
    if (g->output == PLXK_QOUT_FLOAT) {
        if (g->fbias) {
            x = x + g->fbias[j];
        }
        if (g->act == PLXK_ACT_RELU) {
            x = x > 0.0f ? x : 0.0f;
        } else if (g->act == PLXK_ACT_CLIP) {
            x = x < g->lo ? g->lo : x > g->hi ? g->hi : x;
        } else if (g->act == PLXK_ACT_LEAKY) {
            x = x < 0.0f ? g->slope * x : x;
        }
        memcpy(out, &x, sizeof x);
        return;
    }
    double r = isnan(x) ? 0.0 : (double)nearbyintf(x);
    r += g->out_zero_point;
    double lo = g->output == PLXK_QOUT_UINT8 ? 0 : -128;
    double hi = g->output == PLXK_QOUT_UINT8 ? 255 : 127;
    r = r < lo ? lo : r > hi ? hi : r;
    if (g->output == PLXK_QOUT_UINT8) {
        *(uint8_t *)out = (uint8_t)r;
    } else {
        *(int8_t *)out = (int8_t)r;
    }
}

static int32_t a_value(const plxk_qgemm_args *g, size_t i, size_t p) {
    const uint8_t *a = g->a;
    uint8_t byte = a[(ptrdiff_t)i * g->a_rs + (ptrdiff_t)p * g->a_cs];
    return g->a_signed ? (int32_t)(int8_t)byte : (int32_t)byte;
}

static int32_t b_value(const plxk_qgemm_args *g, const uint8_t *b, size_t p, size_t j) {
    uint8_t byte = b[(ptrdiff_t)p * g->b_rs + (ptrdiff_t)j * g->b_cs];
    return g->b_signed ? (int32_t)(int8_t)byte : (int32_t)byte;
}

/* Writes into `expect` (a copy of C's initial bytes) what plxk_qgemm must
 * leave in C. b is B's memory (args->b may be NULL when pre-packed). */
static void reference(const plxk_qgemm_args *g, const uint8_t *b, char *expect) {
    size_t es = out_size(g->output);
    for (size_t i = 0; i < g->m; i++) {
        for (size_t j = 0; j < g->n; j++) {
            int32_t zb = g->b_zero_points ? g->b_zero_points[j] : g->b_zero_point;
            int64_t acc = 0;
            for (size_t p = 0; p < g->k; p++) {
                acc += (int64_t)(a_value(g, i, p) - g->a_zero_point) *
                       (int64_t)(b_value(g, b, p, j) - zb);
            }
            if (g->bias) {
                acc += g->bias[g->per_row ? i : j];
            }
            /* the cases keep every sum in int32, where the result is exact */
            if (acc > INT32_MAX || acc < INT32_MIN) {
                cr_fail("the test's sum %lld leaves int32", (long long)acc);
            }
            reference_output(g, i, j, (int32_t)acc,
                             expect + ((ptrdiff_t)i * g->c_rs + (ptrdiff_t)j * g->c_cs) *
                                          (ptrdiff_t)es);
        }
    }
}

/* Fills a stored operand (count bytes; the padding gets random bytes too,
 * which must not matter). */
static void fill_operand(uint8_t *p, size_t count, fill_kind fill, bool is_signed, bool is_a) {
    for (size_t i = 0; i < count; i++) {
        uint8_t v = (uint8_t)rnd_u32();
        if (fill == FILL_EXTREME) {
            v = (rnd_u32() & 1) ? (is_signed ? 0x7f : 0xff) : (is_signed ? 0x80 : 0x00);
        } else if (fill == FILL_MAX_MIN) {
            /* A at its maximum, B at its minimum */
            v = is_a ? (is_signed ? 0x7f : 0xff) : (is_signed ? 0x80 : 0x00);
        } else if (fill == FILL_MAX_MAX) {
            /* A and B at their maximum (the zero points at their minimum) */
            v = is_signed ? 0x7f : 0xff;
        }
        p[i] = v;
    }
}

static int32_t zero_point_for(const qcase *tc, bool is_signed, bool is_a) {
    int32_t lowest = is_signed ? -128 : 0, highest = is_signed ? 127 : 255;
    if (tc->fill == FILL_MAX_MIN) {
        return is_a ? lowest : highest;
    }
    if (tc->fill == FILL_MAX_MAX) {
        return lowest;
    }
    if (tc->zp == 0) {
        return 0;
    }
    return rnd_int(lowest, highest);
}

typedef struct pools {
    plxk_pool *p[3]; /* NULL (the caller), 1 thread, 2 threads */
} pools;

static const char *const pool_names[3] = {"no pool", "pool of 1", "pool of 2"};

static pools make_pools(void) {
    pools ps = {{NULL, NULL, NULL}};
    char err[256];
    ps.p[1] = plxk_pool_create(1, err, sizeof err);
    cr_assert(not(zero(ptr, ps.p[1])), "%s", err);
    ps.p[2] = plxk_pool_create(2, err, sizeof err);
    cr_assert(not(zero(ptr, ps.p[2])), "%s", err);
    return ps;
}

static void free_pools(pools *ps) {
    plxk_pool_destroy(ps->p[1]);
    plxk_pool_destroy(ps->p[2]);
}

/* Runs one case with variant `var` on every pool against the reference;
 * C's bytes outside the M x N elements must stay as they were. */
static void check_case(const qcase *tc, const variant *var, const pools *ps) {
    size_t m = tc->m, n = tc->n, k = tc->k, es = out_size(tc->output);
    layout la = make_layout(m, k, tc->trans_a, tc->step_a ? tc->step_a : 1, tc->pad_a);
    layout lb = make_layout(k, n, tc->trans_b, tc->step_b ? tc->step_b : 1, tc->pad_b);
    layout lc = make_layout(m, n, tc->trans_c, tc->step_c ? tc->step_c : 1, tc->pad_c);
    uint8_t *a = xmalloc(la.count), *b = xmalloc(lb.count);
    fill_operand(a, la.count, tc->fill, tc->a_signed, true);
    fill_operand(b, lb.count, tc->fill, tc->b_signed, false);
    int32_t *zps = xmalloc(n * sizeof *zps), *bias = xmalloc((m > n ? m : n) * sizeof *bias);
    size_t per = tc->per_row ? m : n; /* biases and scales */
    float *scale = xmalloc(3 * (per > n ? per : n) * sizeof *scale), *fbias = xmalloc(n * sizeof *fbias);
    plxk_qgemm_args g = {.m = m, .n = n, .k = k, .a = a, .a_rs = la.rs, .a_cs = la.cs,
                         .a_signed = tc->a_signed, .b = b, .b_rs = lb.rs, .b_cs = lb.cs,
                         .b_signed = tc->b_signed, .output = tc->output,
                         .c_rs = lc.rs, .c_cs = lc.cs, .act = tc->act,
                         .lo = -3.5f, .hi = 7.25f, .slope = 0.125f};
    g.a_zero_point = zero_point_for(tc, tc->a_signed, true);
    g.b_zero_point = zero_point_for(tc, tc->b_signed, false);
    if (tc->zp == 2) {
        for (size_t j = 0; j < n; j++) {
            zps[j] = zero_point_for(tc, tc->b_signed, false);
        }
        g.b_zero_points = zps;
    }
    /* scales near 1 / (the typical |sum|) so that quantized outputs are
     * spread over their range, some saturated; some negative */
    float typical = 5500.0f * sqrtf((float)k + 1.0f) + (tc->bias ? 100000.0f : 0.0f);
    float mul = tc->scale_mul != 0.0f ? tc->scale_mul : 1.0f;
    for (size_t j = 0; j < 3 * per; j++) {
        float s = (0.25f + rnd_unit()) * 64.0f / typical * mul;
        scale[j] = (rnd_u32() % 5 == 0) ? -s : s;
    }
    for (size_t j = 0; j < per; j++) {
        bias[j] = rnd_int(-200000, 200000);
    }
    for (size_t j = 0; j < n; j++) {
        fbias[j] = (rnd_unit() - 0.5f) * 8.0f;
    }
    g.per_row = tc->per_row;
    g.scale = scale;
    g.scale_stride = tc->scale == 0 ? 0 : tc->scale == 1 ? 1 : 3;
    g.bias = tc->bias ? bias : NULL;
    g.fbias = tc->fbias ? fbias : NULL;
    g.out_zero_point = tc->out_zp;
    if (tc->random_out_zp) {
        g.out_zero_point = tc->output == PLXK_QOUT_UINT8 ? rnd_int(0, 255) : rnd_int(-128, 127);
    }
    size_t c_bytes = lc.count * es;
    char *c = xmalloc(c_bytes), *init = xmalloc(c_bytes), *expect = xmalloc(c_bytes);
    for (size_t i = 0; i < c_bytes; i++) {
        init[i] = (char)(rnd_u32() | 1); /* not a value of the right answer's bytes, mostly */
    }
    memcpy(expect, init, c_bytes);
    g.c = c;
    reference(&g, b, expect);

    void *packed = NULL;
    if (tc->packed) {
        size_t bytes = plxk_qgemm_packed_b_size(var->isa, n, k);
        cr_assert(gt(sz, bytes, 0));
        cr_assert(ne(sz, bytes, SIZE_MAX));
        packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
        cr_assert(not(zero(ptr, packed)));
        cr_assert(plxk_qgemm_pack_b(var->isa, &g, packed, bytes));
        g.packed_b = packed;
        g.b = NULL; /* a pre-packed B is not read */
    }
    for (int pi = 0; pi < 3; pi++) {
        size_t threads = plxk_pool_threads(ps->p[pi]);
        size_t ws_size = plxk_qgemm_workspace_size(var->isa, m, n, k, threads);
        cr_assert(ne(sz, ws_size, SIZE_MAX));
        /* misaligned on purpose: the workspace may start anywhere */
        char *ws = xmalloc(ws_size + 1);
        memcpy(c, init, c_bytes);
        char what[512];
        describe(tc, var, pool_names[pi], what, sizeof what);
        cr_assert(plxk_qgemm(var->isa, ps->p[pi], &g, ws + 1, ws_size), "refused: %s", what);
        for (size_t e = 0; e < lc.count; e++) {
            if (memcmp(c + e * es, expect + e * es, es) != 0) {
                char got[64], want[64];
                if (tc->output == PLXK_QOUT_FLOAT) {
                    float x, y;
                    memcpy(&x, c + e * es, 4);
                    memcpy(&y, expect + e * es, 4);
                    snprintf(got, sizeof got, "%a", (double)x);
                    snprintf(want, sizeof want, "%a", (double)y);
                } else if (tc->output == PLXK_QOUT_INT32) {
                    int32_t x, y;
                    memcpy(&x, c + e * es, 4);
                    memcpy(&y, expect + e * es, 4);
                    snprintf(got, sizeof got, "%d", (int)x);
                    snprintf(want, sizeof want, "%d", (int)y);
                } else {
                    snprintf(got, sizeof got, "%d", (int)(unsigned char)c[e]);
                    snprintf(want, sizeof want, "%d", (int)(unsigned char)expect[e]);
                }
                cr_fail("element %zu of C's memory: got %s, expected %s (%s)", e, got, want,
                        what);
                break;
            }
        }
        free(ws);
    }
    free(packed);
    free(a);
    free(b);
    free(zps);
    free(bias);
    free(scale);
    free(fbias);
    free(c);
    free(init);
    free(expect);
}

/* A random case with sizes up to max_m x max_n x max_k and every option
 * drawn at random. */
static qcase random_case(size_t max_m, size_t max_n, size_t max_k) {
    qcase tc = {0};
    tc.m = (size_t)rnd_int(1, (int32_t)max_m);
    tc.n = (size_t)rnd_int(1, (int32_t)max_n);
    tc.k = (size_t)rnd_int(1, (int32_t)max_k);
    tc.a_signed = rnd_u32() & 1;
    tc.b_signed = rnd_u32() & 1;
    tc.trans_a = rnd_u32() % 3 == 0;
    tc.trans_b = rnd_u32() % 3 == 0;
    tc.trans_c = rnd_u32() % 4 == 0;
    tc.step_a = rnd_u32() % 5 == 0 ? 2 : 1;
    tc.step_b = rnd_u32() % 5 == 0 ? 3 : 1;
    tc.step_c = rnd_u32() % 5 == 0 ? 2 : 1;
    tc.pad_a = rnd_u32() % 7;
    tc.pad_b = rnd_u32() % 7;
    tc.pad_c = rnd_u32() % 3;
    tc.zp = rnd_int(0, 2);
    tc.fill = rnd_u32() % 6 == 0 ? FILL_EXTREME : FILL_RANDOM;
    tc.output = (plxk_qgemm_output)rnd_int(0, 3);
    tc.scale = rnd_int(0, 2);
    tc.bias = rnd_u32() & 1;
    tc.fbias = rnd_u32() & 1;
    tc.act = (plxk_activation)rnd_int(0, 3);
    tc.random_out_zp = true;
    tc.per_row = rnd_u32() % 4 == 0;
    tc.packed = rnd_u32() & 1;
    return tc;
}

/* ---- tests ------------------------------------------------------------------ */

/* Small random shapes with every option at random. */
VARIANT_TESTS(random_small) {
    pools ps = make_pools();
    for (int t = 0; t < 150; t++) {
        qcase tc = random_case(20, 40, 70);
        check_case(&tc, var, &ps);
    }
    free_pools(&ps);
}

/* Shapes that cross the block sizes (MR, NR, MC, KC, NC) and that two
 * threads share. */
VARIANT_TESTS(random_large) {
    pools ps = make_pools();
    for (int t = 0; t < 10; t++) {
        qcase tc = random_case(300, 600, 1100);
        check_case(&tc, var, &ps);
    }
    free_pools(&ps);
}

/* M, N, K of 1 and around the multiples of the group (4), the register
 * blocks and the cache blocks. */
VARIANT_TESTS(edge_shapes) {
    pools ps = make_pools();
    static const size_t ms[] = {1, 2, 3, 5, 6, 7, 8, 9, 13, 119, 121, 129};
    static const size_t ns[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 257};
    static const size_t ks[] = {1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 511, 513, 1025};
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++) {
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            qcase tc = {.m = ms[mi], .n = ns[ni], .k = ks[(mi * 5 + ni) % (sizeof ks / sizeof *ks)],
                        .a_signed = mi & 1, .b_signed = ni & 1, .zp = (int)((mi + ni) % 3),
                        .output = PLXK_QOUT_INT32, .bias = true, .packed = (mi + ni) & 1};
            check_case(&tc, var, &ps);
        }
    }
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
        qcase tc = {.m = 1, .n = 1, .k = ks[ki], .zp = 1, .output = PLXK_QOUT_INT32};
        check_case(&tc, var, &ps);
        qcase tc2 = {.m = 10, .n = 40, .k = ks[ki], .a_signed = true, .zp = 2,
                     .output = PLXK_QOUT_INT32, .packed = true};
        check_case(&tc2, var, &ps);
    }
    free_pools(&ps);
}

/* Long sums of the largest products, which a 16-bit pair sum (vpmaddubsw)
 * would saturate: every term 255 x -255 or 255 x 255 after the zero points
 * (e.g. 127 - -128 times 0 - 255), the two ends of each range at random
 * with zero points 0 (255 x -128 and the like) and with random zero
 * points, K not a multiple of 4, every signedness, both B layouts. */
VARIANT_TESTS(saturation) {
    pools ps = make_pools();
    static const size_t ks[] = {4000, 4001, 4003};
    static const fill_kind fills[] = {FILL_MAX_MIN, FILL_MAX_MAX, FILL_EXTREME, FILL_EXTREME};
    for (int sa = 0; sa < 2; sa++) {
        for (int sb = 0; sb < 2; sb++) {
            for (size_t f = 0; f < 4; f++) {
                /* the last: random ends with zero points 0, e.g. 255 x -128 */
                qcase tc = {.m = 9, .n = 33, .k = ks[(size_t)(sa + sb) % 3], .a_signed = sa,
                            .b_signed = sb, .zp = f == 3 ? 0 : 2, .fill = fills[f],
                            .output = PLXK_QOUT_INT32, .trans_b = f == 1,
                            .packed = sa == sb};
                check_case(&tc, var, &ps);
            }
        }
    }
    free_pools(&ps);
}

/* An 8-bit C written transposed (c_rs 1: an NCHW output), larger than
 * the output stage's blocks of 64 rows and 64 columns: partial blocks in
 * both directions, per-column and single scales, B's zero points per
 * column or one, with and without bias. */
VARIANT_TESTS(transposed_8bit_output_in_blocks) {
    pools ps = make_pools();
    for (int mask = 0; mask < 16; mask++) {
        qcase tc = {.m = mask & 1 ? 150 : 64, .n = mask & 2 ? 130 : 64, .k = 40, .trans_c = true,
                    .pad_c = (size_t)(mask % 3), .a_signed = mask & 4, .b_signed = mask & 8,
                    .zp = 1 + mask % 2, .bias = mask % 3 != 0,
                    .output = mask & 4 ? PLXK_QOUT_INT8 : PLXK_QOUT_UINT8, .scale = mask % 2,
                    .random_out_zp = true, .per_row = mask % 3 == 1};
        check_case(&tc, var, &ps);
    }
    free_pools(&ps);
}

/* Every layout of A, B and C: row-major, transposed, strided, padded. */
VARIANT_TESTS(strides_and_transposes) {
    pools ps = make_pools();
    for (int mask = 0; mask < 64; mask++) {
        qcase tc = {.m = 23, .n = 37, .k = 45, .trans_a = mask & 1, .trans_b = (mask >> 1) & 1,
                    .trans_c = (mask >> 2) & 1, .step_a = (mask >> 3) & 1 ? 2 : 1,
                    .step_b = (mask >> 4) & 1 ? 3 : 1, .step_c = (mask >> 5) & 1 ? 2 : 1,
                    .pad_a = 3, .pad_b = 1, .pad_c = 2, .a_signed = mask & 1,
                    .b_signed = (mask >> 2) & 1, .zp = 1 + mask % 2,
                    .output = (plxk_qgemm_output)(mask % 4), .scale = 1, .random_out_zp = true,
                    .packed = (mask >> 3) & 1};
        check_case(&tc, var, &ps);
    }
    free_pools(&ps);
}

/* Past K = 33025 a sum can leave int32: every variant then gives the sum
 * modulo 2^32 (qgemm.h), here -255 x 255 x 40000 + 1000. */
VARIANT_TESTS(wraps_beyond_int32) {
    size_t m = 2, n = 3, k = 40000;
    uint8_t *a = xmalloc(m * k), *b = xmalloc(k * n);
    memset(a, 255, m * k);
    memset(b, 0, k * n);
    int32_t bias[3] = {1000, 0, -1000}, c[6];
    plxk_qgemm_args g = {.m = m, .n = n, .k = k, .a = a, .a_rs = (ptrdiff_t)k, .a_cs = 1,
                         .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .b_zero_point = 255,
                         .c = c, .c_rs = (ptrdiff_t)n, .c_cs = 1, .bias = bias};
    size_t ws_size = plxk_qgemm_workspace_size(var->isa, m, n, k, 1);
    void *ws = xmalloc(ws_size);
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws_size));
    for (size_t e = 0; e < m * n; e++) {
        int64_t exact = -255LL * 255 * (int64_t)k + bias[e % n];
        uint32_t wrapped = (uint32_t)(uint64_t)exact;
        int32_t want = wrapped <= INT32_MAX ? (int32_t)wrapped
                                            : (int32_t)(wrapped - 2147483648u) - INT32_MAX - 1;
        cr_assert(eq(i32, c[e], want), "element %zu", e);
    }
    free(ws);
    free(a);
    free(b);
}

/* Signed and unsigned A and B, zero points 0, scalar and per column. */
VARIANT_TESTS(zero_points) {
    pools ps = make_pools();
    for (int sa = 0; sa < 2; sa++) {
        for (int sb = 0; sb < 2; sb++) {
            for (int zp = 0; zp < 3; zp++) {
                for (int packed = 0; packed < 2; packed++) {
                    qcase tc = {.m = 17, .n = 50, .k = 77, .a_signed = sa, .b_signed = sb,
                                .zp = zp, .output = PLXK_QOUT_INT32, .bias = zp == 1,
                                .packed = packed};
                    check_case(&tc, var, &ps);
                }
            }
        }
    }
    free_pools(&ps);
}

/* The float output: scales (one, per column, strided), fbias, each
 * activation. */
VARIANT_TESTS(float_output) {
    pools ps = make_pools();
    for (int scale = 0; scale < 3; scale++) {
        for (int fb = 0; fb < 2; fb++) {
            for (int act = 0; act < 4; act++) {
                qcase tc = {.m = 19, .n = 45, .k = 70, .a_signed = act & 1, .b_signed = fb,
                            .zp = 2, .output = PLXK_QOUT_FLOAT, .scale = scale,
                            .bias = (act + scale) & 1, .fbias = fb,
                            .act = (plxk_activation)act, .scale_mul = 8.0f,
                            .packed = scale == 1};
                check_case(&tc, var, &ps);
            }
        }
    }
    free_pools(&ps);
}

/* The requantized outputs: saturation at both ends (large scales), zero
 * points at the ends of their ranges. */
VARIANT_TESTS(quantized_output) {
    pools ps = make_pools();
    static const int32_t u8_zps[] = {0, 1, 128, 254, 255};
    static const int32_t s8_zps[] = {-128, -127, 0, 126, 127};
    static const float muls[] = {1.0f, 40.0f, 0.01f};
    for (int o = 0; o < 2; o++) {
        for (size_t zi = 0; zi < 5; zi++) {
            for (size_t mi = 0; mi < 3; mi++) {
                qcase tc = {.m = 13, .n = 40, .k = 60, .a_signed = zi & 1, .b_signed = mi & 1,
                            .zp = 1 + (int)(zi % 2), .output = o ? PLXK_QOUT_INT8 : PLXK_QOUT_UINT8,
                            .scale = (int)(zi % 3), .bias = true,
                            .out_zp = o ? s8_zps[zi] : u8_zps[zi], .scale_mul = muls[mi],
                            .packed = mi == 1};
                check_case(&tc, var, &ps);
            }
        }
    }
    free_pools(&ps);
}

/* Runs an M x N x K = 1 x n x 0 product (v = bias) on variant `var`. */
static void run_k0(const variant *var, plxk_qgemm_args *g) {
    cr_assert(plxk_qgemm(var->isa, NULL, g, NULL, 0));
}

/* Round half to even: with K = 0, v is the bias, and scale 0.5 puts every
 * odd bias on a tie. */
VARIANT_TESTS(round_half_even) {
    int32_t bias[12] = {1, 3, 5, 7, -1, -3, -5, -7, 9, 11, 0, -9};
    uint8_t expect_u8[12] = {100, 102, 102, 104, 100, 98, 98, 96, 104, 106, 100, 96};
    int8_t expect_s8[12] = {0, 2, 2, 4, 0, -2, -2, -4, 4, 6, 0, -4};
    float scale = 0.5f;
    uint8_t c8[12];
    plxk_qgemm_args g = {.m = 1, .n = 12, .k = 0, .output = PLXK_QOUT_UINT8, .c = c8,
                         .c_rs = 12, .c_cs = 1, .bias = bias, .scale = &scale,
                         .out_zero_point = 100};
    run_k0(var, &g);
    for (int j = 0; j < 12; j++) {
        cr_assert(eq(u8, c8[j], expect_u8[j]), "bias %d x 0.5 + 100", (int)bias[j]);
    }
    int8_t s8[12];
    g.output = PLXK_QOUT_INT8;
    g.out_zero_point = 0;
    g.c = s8;
    run_k0(var, &g);
    for (int j = 0; j < 12; j++) {
        cr_assert(eq(i8, s8[j], expect_s8[j]), "bias %d x 0.5", (int)bias[j]);
    }
}

/* Exact ties from real sums: A and B small, scale 0.5 (every odd sum is a
 * tie), compared with the reference. */
VARIANT_TESTS(round_half_even_sums) {
    size_t m = 7, n = 40, k = 9;
    uint8_t a[7 * 9], b[9 * 40];
    for (size_t i = 0; i < sizeof a; i++) {
        a[i] = (uint8_t)rnd_int(0, 5);
    }
    for (size_t i = 0; i < sizeof b; i++) {
        b[i] = (uint8_t)rnd_int(0, 5);
    }
    float scale = 0.5f;
    uint8_t c[7 * 40];
    plxk_qgemm_args g = {.m = m, .n = n, .k = k, .a = a, .a_rs = 9, .a_cs = 1, .b = b,
                         .b_rs = 40, .b_cs = 1, .a_zero_point = 2, .b_zero_point = 3,
                         .output = PLXK_QOUT_UINT8, .c = c, .c_rs = 40, .c_cs = 1,
                         .scale = &scale, .out_zero_point = 128};
    size_t ws_size = plxk_qgemm_workspace_size(var->isa, m, n, k, 1);
    void *ws = xmalloc(ws_size);
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws_size));
    size_t ties = 0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (size_t p = 0; p < k; p++) {
                acc += (a[i * 9 + p] - 2) * (b[p * 40 + j] - 3);
            }
            /* acc / 2 rounded half to even, by integers */
            int32_t half = acc >= 0 ? acc / 2 : -((-acc) / 2);
            if (acc % 2 != 0) {
                ties++;
                if (half % 2 != 0) { /* odd: move away from zero to the even one */
                    half += acc > 0 ? 1 : -1;
                }
            }
            cr_assert(eq(u8, c[i * 40 + j], (uint8_t)(half + 128)), "sum %d x 0.5", (int)acc);
        }
    }
    cr_assert(gt(sz, ties, 20), "the data has ties");
    free(ws);
}

/* NaN and infinite scales: a NaN counts as 0 (the zero point), infinities
 * saturate; in FLOAT the values pass through. */
VARIANT_TESTS(non_finite_scales) {
    int32_t bias[4] = {5, -5, 0, 7};
    float scale[4] = {NAN, INFINITY, INFINITY, -INFINITY};
    uint8_t c8[4];
    plxk_qgemm_args g = {.m = 1, .n = 4, .k = 0, .output = PLXK_QOUT_UINT8, .c = c8,
                         .c_rs = 4, .c_cs = 1, .bias = bias, .scale = scale,
                         .scale_stride = 1, .out_zero_point = 10};
    run_k0(var, &g);
    /* NaN: 10; +inf x -5 = -inf: 0; inf x 0 = NaN: 10; -inf x 7: 0 */
    cr_assert(eq(u8, c8[0], 10));
    cr_assert(eq(u8, c8[1], 0));
    cr_assert(eq(u8, c8[2], 10));
    cr_assert(eq(u8, c8[3], 0));
    scale[3] = INFINITY;
    run_k0(var, &g);
    cr_assert(eq(u8, c8[3], 255));
}

/* Pre-packed B is what is read: b NULL works, and packing for other
 * shapes or variants is refused. */
VARIANT_TESTS(packed_b) {
    size_t m = 5, n = 70, k = 33;
    uint8_t *a = xmalloc(m * k), *b = xmalloc(k * n);
    fill_operand(a, m * k, FILL_RANDOM, false, true);
    fill_operand(b, k * n, FILL_RANDOM, true, false);
    int32_t c1[5 * 70], c2[5 * 70];
    plxk_qgemm_args g = {.m = m, .n = n, .k = k, .a = a, .a_rs = (ptrdiff_t)k, .a_cs = 1,
                         .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .b_signed = true,
                         .a_zero_point = 3, .b_zero_point = -7, .c = c1, .c_rs = (ptrdiff_t)n,
                         .c_cs = 1};
    size_t ws_size = plxk_qgemm_workspace_size(var->isa, m, n, k, 1);
    void *ws = xmalloc(ws_size);
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws_size));
    size_t bytes = plxk_qgemm_packed_b_size(var->isa, n, k);
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert(not(plxk_qgemm_pack_b(var->isa, &g, packed, bytes - 1)), "short is refused");
    plxk_qgemm_args nob = g;
    nob.b = NULL;
    cr_assert(not(plxk_qgemm_pack_b(var->isa, &nob, packed, bytes)), "no B is refused");
    cr_assert(plxk_qgemm_pack_b(var->isa, &g, packed, bytes));
    memset(b, 0, k * n); /* B itself changes: the packed copy is what counts */
    g.b = NULL;
    g.packed_b = packed;
    g.c = c2;
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws_size));
    cr_assert(eq(int, memcmp(c1, c2, sizeof c1), 0));
    /* packed for another N, K or variant */
    memset(c2, 0x55, sizeof c2);
    plxk_qgemm_args other = g;
    other.n = n - 1;
    cr_assert(not(plxk_qgemm(var->isa, NULL, &other, ws, ws_size)), "packed for another N");
    other = g;
    other.k = k - 1;
    cr_assert(not(plxk_qgemm(var->isa, NULL, &other, ws, ws_size)), "packed for another K");
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        if (i != (int)var->isa && plxk_isa_supported((plxk_isa)i)) {
            size_t ws2_size = plxk_qgemm_workspace_size((plxk_isa)i, m, n, k, 1);
            void *ws2 = xmalloc(ws2_size);
            cr_assert(not(plxk_qgemm((plxk_isa)i, NULL, &g, ws2, ws2_size)),
                      "packed for %s, run on %s", var->name, plxk_isa_name((plxk_isa)i));
            free(ws2);
        }
    }
    for (size_t i = 0; i < m * n; i++) {
        cr_assert(eq(i32, c2[i], 0x55555555), "a refusal touches nothing");
    }
    free(packed);
    free(ws);
    free(a);
    free(b);
}

/* A workspace sized for one thread makes a pool of 2 run on the caller,
 * with the same result. */
VARIANT_TESTS(workspace_for_fewer_threads) {
    pools ps = make_pools();
    size_t m = 150, n = 300, k = 200;
    uint8_t *a = xmalloc(m * k), *b = xmalloc(k * n);
    fill_operand(a, m * k, FILL_RANDOM, false, true);
    fill_operand(b, k * n, FILL_RANDOM, false, false);
    int32_t *c1 = xmalloc(m * n * 4), *c2 = xmalloc(m * n * 4);
    plxk_qgemm_args g = {.m = m, .n = n, .k = k, .a = a, .a_rs = (ptrdiff_t)k, .a_cs = 1,
                         .b = b, .b_rs = (ptrdiff_t)n, .b_cs = 1, .a_zero_point = 128,
                         .b_zero_point = 100, .c = c1, .c_rs = (ptrdiff_t)n, .c_cs = 1};
    size_t ws1 = plxk_qgemm_workspace_size(var->isa, m, n, k, 1);
    cr_assert(le(sz, ws1, plxk_qgemm_workspace_size(var->isa, m, n, k, 2)));
    void *ws = xmalloc(ws1);
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws1));
    g.c = c2;
    cr_assert(plxk_qgemm(var->isa, ps.p[2], &g, ws, ws1));
    cr_assert(eq(int, memcmp(c1, c2, m * n * 4), 0));
    free(ws);
    free(a);
    free(b);
    free(c1);
    free(c2);
    free_pools(&ps);
}

/* K = 0 gives v = bias (operands may be NULL); M or N = 0 does nothing. */
VARIANT_TESTS(k_zero_and_empty) {
    int32_t bias[3] = {-4, 0, 1000};
    int32_t c[6] = {9, 9, 9, 9, 9, 9};
    plxk_qgemm_args g = {.m = 2, .n = 3, .k = 0, .c = c, .c_rs = 3, .c_cs = 1, .bias = bias};
    cr_assert(plxk_qgemm(var->isa, NULL, &g, NULL, 0));
    for (int j = 0; j < 6; j++) {
        cr_assert(eq(i32, c[j], bias[j % 3]));
    }
    g.bias = NULL;
    cr_assert(plxk_qgemm(var->isa, NULL, &g, NULL, 0));
    for (int j = 0; j < 6; j++) {
        cr_assert(eq(i32, c[j], 0));
    }
    float f[6], scale = 2.0f, fbias[3] = {0.5f, -1.0f, 3.0f};
    g.output = PLXK_QOUT_FLOAT;
    g.c = f;
    g.bias = bias;
    g.scale = &scale;
    g.fbias = fbias;
    g.act = PLXK_ACT_RELU;
    cr_assert(plxk_qgemm(var->isa, NULL, &g, NULL, 0));
    cr_assert(eq(flt, f[0], 0.0f));
    cr_assert(eq(flt, f[1], 0.0f));
    cr_assert(eq(flt, f[2], 2003.0f));
    int32_t untouched[1] = {77};
    plxk_qgemm_args e = {.m = 0, .n = 3, .k = 5, .c = untouched};
    cr_assert(plxk_qgemm(var->isa, NULL, &e, NULL, 0));
    e.m = 3;
    e.n = 0;
    cr_assert(plxk_qgemm(var->isa, NULL, &e, NULL, 0));
    cr_assert(eq(i32, untouched[0], 77));
    cr_assert(eq(sz, plxk_qgemm_workspace_size(var->isa, 0, 5, 5, 1), 0));
    cr_assert(eq(sz, plxk_qgemm_workspace_size(var->isa, 5, 5, 0, 1), 0));
    cr_assert(eq(sz, plxk_qgemm_packed_b_size(var->isa, 0, 5), 0));
    cr_assert(eq(sz, plxk_qgemm_packed_b_size(var->isa, 5, 0), 0));
}

/* Unusable arguments are refused without touching C. */
VARIANT_TESTS(refusals) {
    uint8_t a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b[12] = {0};
    int32_t c[9];
    for (int i = 0; i < 9; i++) {
        c[i] = 1234;
    }
    float scale = 1.0f;
    const plxk_qgemm_args good = {.m = 3, .n = 3, .k = 4, .a = a, .a_rs = 4, .a_cs = 1, .b = b,
                                  .b_rs = 3, .b_cs = 1, .c = c, .c_rs = 3, .c_cs = 1,
                                  .scale = &scale};
    size_t ws_size = plxk_qgemm_workspace_size(var->isa, 3, 3, 4, 1);
    cr_assert(gt(sz, ws_size, 0));
    char *ws = xmalloc(ws_size);
    plxk_qgemm_args g;
    cr_assert(not(plxk_qgemm(var->isa, NULL, NULL, ws, ws_size)), "NULL args");
#define REFUSED(change, why)                                                                 \
    do {                                                                                   \
        g = good;                                                                          \
        change;                                                                            \
        cr_assert(not(plxk_qgemm(var->isa, NULL, &g, ws, ws_size)), why);                  \
    } while (0)
    REFUSED(g.a = NULL, "NULL A");
    REFUSED(g.b = NULL, "NULL B");
    REFUSED(g.c = NULL, "NULL C");
    REFUSED(g.a_zero_point = 256, "A's zero point above uint8");
    REFUSED(g.a_zero_point = -1, "A's zero point below uint8");
    REFUSED((g.a_signed = true, g.a_zero_point = 128), "A's zero point above int8");
    REFUSED((g.a_signed = true, g.a_zero_point = -129), "A's zero point below int8");
    REFUSED(g.b_zero_point = 300, "B's zero point above uint8");
    REFUSED((g.b_signed = true, g.b_zero_point = 200), "B's zero point above int8");
    static const int32_t bad_zps[3] = {0, 5, 256};
    REFUSED(g.b_zero_points = bad_zps, "a column's zero point above uint8");
    static const int32_t signed_zps[3] = {-128, 127, 128};
    REFUSED((g.b_signed = true, g.b_zero_points = signed_zps), "a column's zero point above int8");
    REFUSED((g.output = PLXK_QOUT_FLOAT, g.scale = NULL), "FLOAT without a scale");
    REFUSED((g.output = PLXK_QOUT_UINT8, g.scale = NULL), "UINT8 without a scale");
    REFUSED((g.output = PLXK_QOUT_INT8, g.scale = NULL), "INT8 without a scale");
    REFUSED((g.output = PLXK_QOUT_UINT8, g.out_zero_point = 256), "UINT8 zero point");
    REFUSED((g.output = PLXK_QOUT_UINT8, g.out_zero_point = -1), "UINT8 zero point");
    REFUSED((g.output = PLXK_QOUT_INT8, g.out_zero_point = 128), "INT8 zero point");
    REFUSED((g.output = PLXK_QOUT_INT8, g.out_zero_point = -129), "INT8 zero point");
    REFUSED(g.output = (plxk_qgemm_output)4, "an unknown output");
    REFUSED((g.output = PLXK_QOUT_FLOAT, g.act = (plxk_activation)9), "an unknown activation");
    /* the same refusals without a product to run (K = 0) */
    REFUSED((g.k = 0, g.a_zero_point = 256), "K = 0 with a bad zero point");
    REFUSED((g.k = 0, g.output = PLXK_QOUT_FLOAT, g.scale = NULL), "K = 0 without a scale");
#undef REFUSED
    g = good;
    cr_assert(not(plxk_qgemm(var->isa, NULL, &g, ws, ws_size - 1)), "workspace one byte short");
    cr_assert(not(plxk_qgemm(var->isa, NULL, &g, NULL, 0)), "no workspace");
    cr_assert(not(plxk_qgemm((plxk_isa)7, NULL, &g, ws, ws_size)), "an unknown variant");
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        if (!plxk_isa_supported((plxk_isa)i)) {
            cr_assert(not(plxk_qgemm((plxk_isa)i, NULL, &g, ws, ws_size)),
                      "an unsupported variant (%s)", plxk_isa_name((plxk_isa)i));
        }
    }
    for (int i = 0; i < 9; i++) {
        cr_assert(eq(i32, c[i], 1234), "a refusal touches nothing");
    }
    /* bad packing arguments */
    size_t bytes = plxk_qgemm_packed_b_size(var->isa, 3, 4);
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert(not(plxk_qgemm_pack_b(var->isa, NULL, packed, bytes)));
    cr_assert(not(plxk_qgemm_pack_b(var->isa, &good, NULL, bytes)));
    cr_assert(not(plxk_qgemm_pack_b((plxk_isa)7, &good, packed, bytes)));
    g = good;
    g.b_zero_point = -1;
    cr_assert(not(plxk_qgemm_pack_b(var->isa, &g, packed, bytes)), "a bad zero point");
    /* the good call works */
    g = good;
    cr_assert(plxk_qgemm(var->isa, NULL, &g, ws, ws_size));
    cr_assert(eq(i32, c[0], 0), "B is all 0");
    free(packed);
    free(ws);
}

/* The sizes: 0 for empty shapes, SIZE_MAX on overflow, never more for
 * smaller shapes, bounded by the blocks for huge M and N. */
VARIANT_TESTS(sizes) {
    plxk_isa isa = var->isa;
    cr_assert(eq(sz, plxk_qgemm_workspace_size((plxk_isa)7, 5, 5, 5, 1), 0));
    cr_assert(eq(sz, plxk_qgemm_packed_b_size((plxk_isa)7, 5, 5), 0));
    cr_assert(eq(sz, plxk_qgemm_packed_b_size(isa, SIZE_MAX, 2), SIZE_MAX));
    cr_assert(eq(sz, plxk_qgemm_packed_b_size(isa, SIZE_MAX / 4, SIZE_MAX / 4), SIZE_MAX));
    cr_assert(eq(sz, plxk_qgemm_workspace_size(isa, 10, 10, SIZE_MAX / 2, 1), SIZE_MAX));
    cr_assert(eq(sz, plxk_qgemm_workspace_size(isa, 100, 100, 100, SIZE_MAX / 2), SIZE_MAX));
    size_t prev = 0;
    for (size_t s = 1; s < 3000; s = s * 3 / 2 + 1) {
        size_t w = plxk_qgemm_workspace_size(isa, s, s, s, 1);
        cr_assert(ge(sz, w, prev), "monotone at %zu", s);
        cr_assert(le(sz, plxk_qgemm_workspace_size(isa, s / 2 + 1, s, s, 1), w));
        cr_assert(le(sz, plxk_qgemm_workspace_size(isa, s, s / 2 + 1, s, 1), w));
        cr_assert(le(sz, plxk_qgemm_workspace_size(isa, s, s, s / 2 + 1, 1), w));
        prev = w;
    }
    cr_assert(eq(sz, plxk_qgemm_workspace_size(isa, SIZE_MAX / 8, SIZE_MAX / 8, 1000, 1),
                 plxk_qgemm_workspace_size(isa, 100000, 100000, 1000, 1)));
}
