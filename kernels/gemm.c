/* cpu_ref's GEMM driver (gemm.h): picks the instruction-set variant (for
 * the depthwise kernel of depthwise.h too), splits C into regions of at
 * most NC columns (one per thread at least), and lets the pool's threads
 * take regions;
 * each thread packs into its own slice of the workspace, so threads share
 * nothing but the read-only operands and write disjoint parts of C. The
 * packing and the micro-kernel are in gemm_kernel.c. */
#include "gemm.h"

#include <stdint.h>
#include <string.h>

#include "gemm_kernel.h"

#define WORKSPACE_ALIGNMENT 64

const char *plxk_isa_name(plxk_isa isa) {
    switch (isa) {
    case PLXK_ISA_PORTABLE:
        return "portable";
    case PLXK_ISA_AVX2:
        return "avx2";
    case PLXK_ISA_AVX512:
        return "avx512";
    }
    return "?";
}

bool plxk_isa_parse(const char *name, plxk_isa *out) {
    if (!name) {
        return false;
    }
    if (strcmp(name, "auto") == 0) {
        *out = plxk_isa_best();
        return true;
    }
    for (int i = 0; i < PLXK_ISA_COUNT; i++) {
        if (strcmp(name, plxk_isa_name((plxk_isa)i)) == 0) {
            *out = (plxk_isa)i;
            return true;
        }
    }
    return false;
}

static const plxk_gemm_impl *impl_of(plxk_isa isa) {
    switch (isa) {
    case PLXK_ISA_PORTABLE:
        return &plxk_gemm_impl_portable;
#if defined(PLXK_GEMM_X86)
    case PLXK_ISA_AVX2:
        return &plxk_gemm_impl_avx2;
    case PLXK_ISA_AVX512:
        return &plxk_gemm_impl_avx512;
#else
    case PLXK_ISA_AVX2:
    case PLXK_ISA_AVX512:
        break;
#endif
    }
    return NULL;
}

bool plxk_isa_supported(plxk_isa isa) {
    if (!impl_of(isa)) {
        return false;
    }
#if defined(PLXK_GEMM_X86)
    __builtin_cpu_init();
    switch (isa) {
    case PLXK_ISA_PORTABLE:
        return true;
    case PLXK_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case PLXK_ISA_AVX512:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    }
    return false;
#else
    return isa == PLXK_ISA_PORTABLE;
#endif
}

plxk_isa plxk_isa_best(void) {
    if (plxk_isa_supported(PLXK_ISA_AVX512)) {
        return PLXK_ISA_AVX512;
    }
    if (plxk_isa_supported(PLXK_ISA_AVX2)) {
        return PLXK_ISA_AVX2;
    }
    return PLXK_ISA_PORTABLE;
}

bool plxk_gemm_blocking_of(plxk_isa isa, plxk_gemm_blocking *out) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl) {
        return false;
    }
    *out = impl->blocks;
    return true;
}

bool plxk_depthwise(plxk_isa isa, const plxk_depthwise_plane *plane) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plane || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->depthwise(plane);
    return true;
}

bool plxk_vmap(plxk_isa isa, plxk_vfunc f, const float *x, float *y, size_t n) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || (unsigned)f >= PLXK_VFUNC_COUNT || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->vmap(f, x, y, n);
    return true;
}

bool plxk_vbinary(plxk_isa isa, plx_binary_func f, const float *a, bool sa, const float *b,
                  bool sb, float *y, size_t n) {
    const plxk_gemm_impl *impl = impl_of(isa);
    return impl && plxk_isa_supported(isa) && impl->vbinary(f, a, sa, b, sb, y, n);
}

bool plxk_vhard_sigmoid(plxk_isa isa, float alpha, float beta, bool times_x, const float *x,
                        float *y, size_t n) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->vhard_sigmoid(alpha, beta, times_x, x, y, n);
    return true;
}

bool plxk_qbinary(plxk_isa isa, plxk_qfunc f, unsigned types, const void *a, bool da,
                  const void *b, bool db, void *y, size_t n, const plxk_qbin_params *p) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || (unsigned)f > PLXK_QMUL || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->qbinary(f, types, a, da, b, db, y, n, p);
    return true;
}

bool plxk_quantize8(plxk_isa isa, bool u8, const float *x, void *y, size_t n, float scale,
                    int32_t zp) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->quantize8(u8, x, y, n, scale, zp);
    return true;
}

bool plxk_float_range(plxk_isa isa, const float *x, size_t n, float *lo, float *hi,
                      bool *finite) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    *finite = impl->float_range(x, n, lo, hi);
    return true;
}

bool plxk_table8(plxk_isa isa, const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
#if defined(__GNUC__) && defined(PLXK_GEMM_X86)
    if (impl->table8_vbmi && __builtin_cpu_supports("avx512vbmi")) {
        impl->table8_vbmi(table, x, y, n);
        return true;
    }
#endif
    impl->table8(table, x, y, n);
    return true;
}

bool plxk_dequantize8(plxk_isa isa, bool u8, const void *x, float *y, size_t n, float scale,
                      int32_t zp) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->dequantize8(u8, x, y, n, scale, zp);
    return true;
}

bool plxk_max_pool_plane(plxk_isa isa, plx_dtype dt, const plx_window_geom *g, const void *x,
                         void *y) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->max_pool_plane(dt, g, x, y);
    return true;
}

bool plxk_requantize8(plxk_isa isa, bool u8, const float *acc, int32_t bias, float scale,
                      int32_t zp, void *y, size_t n) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !plxk_isa_supported(isa)) {
        return false;
    }
    impl->requantize8(u8, acc, bias, scale, zp, y, n);
    return true;
}

/* ---- planning ------------------------------------------------------------ */

static size_t min_size(size_t a, size_t b) {
    return a < b ? a : b;
}

static size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

static size_t ceil_div(size_t v, size_t by) {
    return (v + by - 1) / by;
}

/* How a multiply is cut: parts_m x parts_n regions of at most rows x nc
 * (the rows of a region are taken MC at a time inside it), and the floats
 * of one thread's workspace slice (a packed A block and a packed B block). */
typedef struct plan {
    size_t rows, nc, kc;
    size_t parts_m, parts_n;
    size_t slice_a, slice_b; /* floats, each rounded to the alignment */
} plan;

static size_t align_floats(size_t n) {
    return round_up(n, WORKSPACE_ALIGNMENT / sizeof(float));
}

/* Region sizes for parts_m x parts_n parts of equal size (in multiples of
 * MR and NR); the counts are then those that these sizes need. */
static void set_parts(plan *p, const plxk_gemm_blocking *b, size_t m, size_t n,
                      size_t parts_m, size_t parts_n) {
    p->rows = round_up(ceil_div(m, parts_m), b->mr);
    p->nc = round_up(ceil_div(n, parts_n), b->nr);
    p->parts_m = ceil_div(m, p->rows);
    p->parts_n = ceil_div(n, p->nc);
}

/* One region per NC columns, all rows in each. Slice sizes are computed
 * from this plan, and make_plan only ever shrinks the regions. */
static plan largest_plan(const plxk_gemm_blocking *b, size_t m, size_t n, size_t k) {
    plan p;
    set_parts(&p, b, m, n, 1, ceil_div(n, b->nc));
    p.kc = min_size(b->kc, k);
    /* all of a region's rows when they fit one MC x KC block (rows is a
     * multiple of MR) */
    size_t block = b->mc * b->kc;
    p.slice_a = align_floats(p.rows <= block / p.kc ? p.rows * p.kc : block);
    p.slice_b = align_floats(p.nc * p.kc);
    return p;
}

/* Splits the regions until every thread has one, and their number is a
 * multiple of the threads (up to 8 per thread), when the problem allows
 * it. A region packs its columns of op(B) and its rows of op(A) per KC
 * pass: cutting the columns packs A again, cutting the rows packs B again,
 * so the longer side is cut, which repeats the smaller of the two. */
static plan make_plan(const plxk_gemm_blocking *b, size_t m, size_t n, size_t k,
                      size_t threads) {
    plan p = largest_plan(b, m, n, k);
    for (;;) {
        size_t parts = p.parts_m * p.parts_n;
        if (threads <= 1 || (parts >= threads && (parts % threads == 0 || parts >= 8 * threads))) {
            break;
        }
        /* a cut that would not add a region (rounding to MR or NR) is
         * no cut */
        plan cut_m = p, cut_n = p;
        set_parts(&cut_m, b, m, n, p.parts_m + 1, p.parts_n);
        set_parts(&cut_n, b, m, n, p.parts_m, p.parts_n + 1);
        bool can_m = cut_m.parts_m > p.parts_m, can_n = cut_n.parts_n > p.parts_n;
        if (can_n && (p.nc >= p.rows || !can_m)) {
            p = cut_n;
        } else if (can_m) {
            p = cut_m;
        } else {
            break;
        }
    }
    return p;
}

static size_t slice_bytes(const plan *p) {
    return (p->slice_a + p->slice_b) * sizeof(float);
}

size_t plxk_gemm_workspace_size(plxk_isa isa, size_t m, size_t n, size_t k,
                                   size_t threads) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || m == 0 || n == 0 || k == 0) {
        return 0;
    }
    /* plxk_gemm may run the problem transposed: room for either way. */
    plan p = largest_plan(&impl->blocks, m, n, k), t = largest_plan(&impl->blocks, n, m, k);
    size_t slice = slice_bytes(&p) > slice_bytes(&t) ? slice_bytes(&p) : slice_bytes(&t);
    if (threads == 0) {
        threads = 1;
    }
    if (slice > (SIZE_MAX - WORKSPACE_ALIGNMENT) / threads) {
        return SIZE_MAX;
    }
    return slice * threads + WORKSPACE_ALIGNMENT;
}

/* ---- running ------------------------------------------------------------- */

typedef struct gemm_run {
    const plxk_gemm_impl *impl;
    plxk_gemm_problem problem;
    plan plan;
    char *slices; /* aligned; slice t belongs to thread t */
    size_t slice_bytes;
} gemm_run;

static void run_region(void *ctx, size_t task, size_t thread) {
    const gemm_run *r = ctx;
    const plxk_gemm_args *g = &r->problem.args;
    size_t ti = task / r->plan.parts_n, tj = task % r->plan.parts_n;
    size_t i0 = ti * r->plan.rows, j0 = tj * r->plan.nc;
    float *pack_a = (float *)(void *)(r->slices + thread * r->slice_bytes);
    float *pack_b = pack_a + r->plan.slice_a;
    r->impl->region(&r->problem, i0, min_size(r->plan.rows, g->m - i0), j0,
                    min_size(r->plan.nc, g->n - j0), pack_a, pack_b);
}

/* Rows of C by matrix-vector products: task t is row t / chunks, columns
 * [c * GEMV_CHUNK, ...) of it, c = t % chunks. With op(B)'s rows
 * contiguous the gemv adds rows of B scaled by the row of A; with its
 * columns contiguous it takes dot products, for which the row of A is
 * copied first when it is strided (k at most GEMV_MAX_K). */
enum { GEMV_ROWS = 8, GEMV_CHUNK = 512, GEMV_MAX_K = 4096 };

typedef struct gemv_run {
    const plxk_gemm_impl *impl;
    const plxk_gemm_problem *problem;
    size_t chunks;
} gemv_run;

static void gemv_rows(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const gemv_run *r = ctx;
    const plxk_gemm_args *g = &r->problem->args;
    size_t i = task / r->chunks, j0 = task % r->chunks * GEMV_CHUNK;
    size_t n = min_size(GEMV_CHUNK, g->n - j0);
    const float *bias = g->bias ? g->bias + (ptrdiff_t)i * g->bias_rs +
                                      (ptrdiff_t)j0 * g->bias_cs
                                : NULL;
    const float *x = g->a + (ptrdiff_t)i * g->a_rs;
    ptrdiff_t xs = g->a_cs;
    float row[GEMV_MAX_K];
    if (g->b_cs != 1 && g->b_rs == 1 && xs != 1 && g->k <= GEMV_MAX_K) {
        for (size_t p = 0; p < g->k; p++) {
            row[p] = x[(ptrdiff_t)p * xs];
        }
        x = row;
        xs = 1;
    }
    r->impl->gemv(g, n, g->b + (ptrdiff_t)j0 * g->b_cs, g->b_rs, g->b_cs, x, xs,
                  g->c + (ptrdiff_t)i * r->problem->c_rs + (ptrdiff_t)j0 * r->problem->c_cs,
                  r->problem->c_cs, bias, g->bias_cs);
}

/* K = 0: C = act(beta * C + bias). */
static void epilogue_only(const plxk_gemm_args *g) {
    for (size_t i = 0; i < g->m; i++) {
        float *c = g->c + i * g->ldc;
        for (size_t j = 0; j < g->n; j++) {
            float v = g->beta != 0.0f ? g->beta * c[j] : 0.0f;
            if (g->bias) {
                v += g->bias[(ptrdiff_t)i * g->bias_rs + (ptrdiff_t)j * g->bias_cs];
            }
            c[j] = plxk_gemm_activate(g, v);
        }
    }
}

/* A matrix-vector product (N smaller than NR, M larger) runs transposed
 * (plxk_gemm). */
static bool runs_transposed(const plxk_gemm_impl *impl, size_t m, size_t n) {
    return n < impl->blocks.nr && m > n;
}

/* One row, or a few rows (after the transposition: a few output columns,
 * as a strided 1-D convolution's) whose op(B) has contiguous columns, run
 * as one matrix-vector product per row, reading op(B) where it is
 * (gemv_rows): packing op(B) would not pay for itself. A few rows with
 * contiguous rows of op(B) go to the tiles, which read B in place too
 * (region's `direct`) and read it once for all rows where gemv_rows reads
 * it once per row: 84 against 8 GFLOP/s for 8 x 12544 x 32 (AVX-512, one
 * thread), 24 against 9 for 2 rows. */
static bool runs_by_rows(size_t m, size_t k, ptrdiff_t b_rs, ptrdiff_t b_cs) {
    return m == 1 || (m <= GEMV_ROWS && b_cs != 1 && b_rs == 1 && k <= GEMV_MAX_K);
}

bool plxk_gemm_reads_packed(plxk_isa isa, size_t m, size_t n, size_t k, ptrdiff_t b_rs,
                              ptrdiff_t b_cs) {
    const plxk_gemm_impl *impl = impl_of(isa);
    return impl && m > 0 && n > 0 && k > 0 && !runs_transposed(impl, m, n) &&
           !runs_by_rows(m, k, b_rs, b_cs);
}

/* Bytes of `rows` x k floats, rows rounded up to `block`: a packed
 * operand's panels. */
static size_t panels_size(size_t rows, size_t block, size_t k) {
    if (rows == 0 || k == 0) {
        return 0;
    }
    size_t padded = round_up(rows, block);
    if (padded < rows || k > SIZE_MAX / sizeof(float) / padded) {
        return SIZE_MAX;
    }
    return padded * k * sizeof(float);
}

size_t plxk_gemm_packed_b_size(plxk_isa isa, size_t n, size_t k) {
    const plxk_gemm_impl *impl = impl_of(isa);
    return impl ? panels_size(n, impl->blocks.nr, k) : 0;
}

size_t plxk_gemm_packed_a_size(plxk_isa isa, size_t m, size_t k) {
    const plxk_gemm_impl *impl = impl_of(isa);
    return impl ? panels_size(m, impl->blocks.mr, k) : 0;
}

/* plxk_gemm_pack_a (left) or plxk_gemm_pack_b: op(A)'s rows or op(B)'s
 * columns as panels of all of K. */
static bool pack_operand(plxk_isa isa, const plxk_gemm_args *args, bool left, float *out,
                         size_t size) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!impl || !args || !(left ? args->a : args->b) || !out) {
        return false;
    }
    size_t need = left ? panels_size(args->m, impl->blocks.mr, args->k)
                       : panels_size(args->n, impl->blocks.nr, args->k);
    if (need == SIZE_MAX || size < need) {
        return false;
    }
    if (need && left) {
        impl->pack_a(args, 0, args->m, 0, args->k, out);
    } else if (need) {
        impl->pack_b(args, 0, args->k, 0, args->n, out);
    }
    return true;
}

bool plxk_gemm_pack_a(plxk_isa isa, const plxk_gemm_args *args, float *out, size_t size) {
    return pack_operand(isa, args, true, out, size);
}

bool plxk_gemm_pack_b(plxk_isa isa, const plxk_gemm_args *args, float *out, size_t size) {
    return pack_operand(isa, args, false, out, size);
}

bool plxk_gemm(plxk_isa isa, plxk_pool *pool, const plxk_gemm_args *args,
                  void *workspace, size_t workspace_size) {
    const plxk_gemm_impl *impl = impl_of(isa);
    if (!args || !impl || !plxk_isa_supported(isa)) {
        return false;
    }
    const plxk_gemm_args *g = args;
    if (g->m == 0 || g->n == 0) {
        return true;
    }
    if (!g->c || g->ldc < g->n || (g->k > 0 && (!g->a || !g->b))) {
        return false;
    }
    if (g->k == 0) {
        epilogue_only(g);
        return true;
    }
    if (g->n == 1 && g->m > 1) { /* C[i, 0] over A's rows; x is B's only column */
        impl->gemv(g, g->m, g->a, g->a_cs, g->a_rs, g->b, g->b_rs, g->c, (ptrdiff_t)g->ldc,
                   g->bias, g->bias_rs);
        return true;
    }
    /* A matrix-vector product (N smaller than NR, M larger) runs transposed:
     * C^T = op(B)^T op(A)^T, so that the long dimension fills the vectors. */
    plxk_gemm_problem pr = {*g, (ptrdiff_t)g->ldc, 1};
    if (runs_transposed(impl, g->m, g->n)) {
        plxk_gemm_args *t = &pr.args;
        t->m = g->n;
        t->n = g->m;
        t->a = g->b;
        t->a_rs = g->b_cs;
        t->a_cs = g->b_rs;
        t->b = g->a;
        t->b_rs = g->a_cs;
        t->b_cs = g->a_rs;
        t->bias_rs = g->bias_cs;
        t->bias_cs = g->bias_rs;
        t->packed_a = NULL; /* the operands changed places */
        t->packed_b = NULL;
        pr.c_rs = 1;
        pr.c_cs = (ptrdiff_t)g->ldc;
        g = t;
    }
    if (runs_by_rows(g->m, g->k, g->b_rs, g->b_cs)) {
        gemv_run r = {impl, &pr, ceil_div(g->n, GEMV_CHUNK)};
        /* about 16 multiply-adds a nanosecond: every row's */
        double cost_ns = (double)g->m * (double)g->n * (double)g->k / 16.0;
        plxk_pool_run(pool, g->m * r.chunks, cost_ns, gemv_rows, &r);
        return true;
    }
    /* The slices that fit after aligning the workspace's start. */
    uintptr_t start = (uintptr_t)workspace;
    size_t skip = (size_t)(round_up(start, WORKSPACE_ALIGNMENT) - start);
    size_t usable = workspace && workspace_size > skip ? workspace_size - skip : 0;
    size_t threads = plxk_pool_threads(pool);
    plan p = make_plan(&impl->blocks, g->m, g->n, g->k, threads);
    plan largest = largest_plan(&impl->blocks, g->m, g->n, g->k);
    size_t slice = slice_bytes(&largest);
    size_t slices = usable / slice;
    if (slices == 0) {
        return false;
    }
    if (slices < threads) {
        pool = NULL; /* not enough room for every thread: run here */
        p = make_plan(&impl->blocks, g->m, g->n, g->k, 1);
    }
    gemm_run r = {impl, pr, p, (char *)workspace + skip, slice};
    /* About 32 multiply-adds a nanosecond on one core (AVX-512). */
    double cost_ns = (double)g->m * (double)g->n * (double)g->k / 32.0;
    plxk_pool_run(pool, p.parts_m * p.parts_n, cost_ns, run_region, &r);
    return true;
}
