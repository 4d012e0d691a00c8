/* The matrix products: fully_connected, gemm and matmul (ONNX semantics,
 * opset 13+). Float32 runs on cpu_ref's GEMM (gemm.h) in the workspace the
 * caller sized with plxk_kernel_workspace, with a fused relu or clip in its
 * epilogue; matmul's integer types keep their own loops.
 *
 * Every operator has a prepare function that checks the layer (counts,
 * dtypes, attributes, shapes) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h. */
#include "kernels_compute.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* fully_connected, gemm                                               */
/* ------------------------------------------------------------------ */

typedef struct fc_geom {
    int64_t rows, k, m;
    bool transposed;
} fc_geom;

static const char *fc_prepare(const plx_layer_view *l, fc_geom *g, char *buf, size_t size) {
    const char *why = plxk_check_layer(l, "fully_connected", 2, 3, sizeof(plx_fully_connected_desc),
                                  buf, size);
    if (!why) {
        why = plxk_require_float32(l, "fully_connected", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_fully_connected_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected takes X of rank >= 2 and W of rank 2, not %u and %u",
                   x->rank, w->rank);
    }
    g->transposed = desc->weights_transposed;
    g->k = x->dims[x->rank - 1];
    g->rows = plxk_dim_product(x, 0, x->rank - 1);
    g->m = g->transposed ? w->dims[0] : w->dims[1];
    if ((g->transposed ? w->dims[1] : w->dims[0]) != g->k) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected: W [%lld,%lld]%s does not match X's K %lld",
                   (long long)w->dims[0], (long long)w->dims[1],
                   g->transposed ? " (transposed)" : "", (long long)g->k);
    }
    if (l->input_count == 3 && plxk_numel(&l->inputs[2]) != g->m) {
        return plxk_refuse(buf, size, "cpu_ref fully_connected: B has %lld elements, not %lld",
                   (long long)plxk_numel(&l->inputs[2]), (long long)g->m);
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[x->rank - 1] = g->m;
    return plxk_require_output_shape(l, "fully_connected", x->rank, dims, buf, size);
}

const char *plxk_check_fully_connected(const plx_layer_view *layer, char *buf, size_t size) {
    fc_geom g;
    return fc_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_fully_connected(const plx_layer_view *layer,
                                         const plxk_compute *compute) {
    fc_geom g;
    char buf[8];
    return fc_prepare(layer, &g, buf, sizeof buf) ? 0 : plxk_gemm_ws(compute, g.rows, g.m, g.k);
}

/* Y [rows, M] = X [rows, K] x W' [K, M] + B, W' = W or W^T. */
bool plxk_run_fully_connected(const plxk_kernel_args *args) {
    char why[256];
    fc_geom g;
    if (fc_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plxk_gemm_args ga = {0};
    ga.m = (size_t)g.rows;
    ga.n = (size_t)g.m;
    ga.k = (size_t)g.k;
    ga.alpha = 1.0f;
    ga.a = args->inputs[0];
    ga.a_rs = (ptrdiff_t)g.k;
    ga.a_cs = 1;
    ga.b = args->inputs[1];
    ga.b_rs = g.transposed ? 1 : (ptrdiff_t)g.m;
    ga.b_cs = g.transposed ? (ptrdiff_t)g.k : 1;
    ga.c = args->outputs[0];
    ga.ldc = (size_t)g.m;
    ga.bias = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    ga.bias_rs = 0;
    ga.bias_cs = 1;
    size_t left;
    void *ws = plxk_ws_at(args, 0, &left);
    return plxk_product(args, &ga, ws, left, "fully_connected");
}

typedef struct gemm_geom {
    int64_t m, n, k;
    int64_t a_sm, a_sk, b_sk, b_sn; /* element strides of A' and B' */
    int64_t c_sm, c_sn;             /* C's broadcast strides (0 along broadcast dims) */
} gemm_geom;

static const char *gemm_prepare(const plx_layer_view *l, gemm_geom *g, char *buf, size_t size) {
    const char *why = plxk_check_layer(l, "gemm", 2, 3, sizeof(plx_gemm_desc), buf, size);
    if (!why) {
        why = plxk_require_float32(l, "gemm", buf, size);
    }
    if (why) {
        return why;
    }
    const plx_gemm_desc *desc = l->desc;
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1];
    if (a->rank != 2 || b->rank != 2) {
        return plxk_refuse(buf, size, "cpu_ref gemm takes A and B of rank 2, not %u and %u", a->rank,
                   b->rank);
    }
    g->m = desc->trans_a ? a->dims[1] : a->dims[0];
    g->k = desc->trans_a ? a->dims[0] : a->dims[1];
    g->n = desc->trans_b ? b->dims[0] : b->dims[1];
    int64_t kb = desc->trans_b ? b->dims[1] : b->dims[0];
    if (kb != g->k) {
        return plxk_refuse(buf, size, "cpu_ref gemm: A' has K %lld, B' has K %lld", (long long)g->k,
                   (long long)kb);
    }
    g->a_sm = desc->trans_a ? 1 : a->dims[1];
    g->a_sk = desc->trans_a ? a->dims[1] : 1;
    g->b_sk = desc->trans_b ? 1 : b->dims[1];
    g->b_sn = desc->trans_b ? b->dims[1] : 1;
    g->c_sm = g->c_sn = 0;
    if (l->input_count == 3) {
        const plx_tensor_info *c = &l->inputs[2];
        int64_t cm = 1, cn = 1;
        if (c->rank == 2) {
            cm = c->dims[0];
            cn = c->dims[1];
        } else if (c->rank == 1) {
            cn = c->dims[0];
        } else if (c->rank != 0) {
            return plxk_refuse(buf, size, "cpu_ref gemm: C has rank %u (0 to 2)", c->rank);
        }
        if ((cm != 1 && cm != g->m) || (cn != 1 && cn != g->n)) {
            return plxk_refuse(buf, size, "cpu_ref gemm: C [%lld,%lld] does not broadcast to [%lld,%lld]",
                       (long long)cm, (long long)cn, (long long)g->m, (long long)g->n);
        }
        g->c_sn = cn == 1 ? 0 : 1;
        g->c_sm = cm == 1 ? 0 : cn;
    }
    int64_t dims[2] = {g->m, g->n};
    return plxk_require_output_shape(l, "gemm", 2, dims, buf, size);
}

const char *plxk_check_gemm(const plx_layer_view *layer, char *buf, size_t size) {
    gemm_geom g;
    return gemm_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_gemm(const plx_layer_view *layer, const plxk_compute *compute) {
    gemm_geom g;
    char buf[8];
    return gemm_prepare(layer, &g, buf, sizeof buf) ? 0 : plxk_gemm_ws(compute, g.m, g.n, g.k);
}

/* Y = alpha A' B' + beta C: C is the GEMM's (unscaled) strided bias when
 * beta is 1; otherwise Y starts as beta C, which the GEMM accumulates on. */
bool plxk_run_gemm(const plxk_kernel_args *args) {
    char why[256];
    gemm_geom g;
    if (gemm_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_gemm_desc *desc = args->layer->desc;
    const float *c = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    float *y = args->outputs[0];
    plxk_gemm_args ga = {0};
    ga.m = (size_t)g.m;
    ga.n = (size_t)g.n;
    ga.k = (size_t)g.k;
    ga.alpha = desc->alpha;
    ga.a = args->inputs[0];
    ga.a_rs = (ptrdiff_t)g.a_sm;
    ga.a_cs = (ptrdiff_t)g.a_sk;
    ga.b = args->inputs[1];
    ga.b_rs = (ptrdiff_t)g.b_sk;
    ga.b_cs = (ptrdiff_t)g.b_sn;
    ga.c = y;
    ga.ldc = (size_t)g.n;
    if (c && desc->beta == 1.0f) {
        ga.bias = c;
        ga.bias_rs = (ptrdiff_t)g.c_sm;
        ga.bias_cs = (ptrdiff_t)g.c_sn;
    } else if (c && desc->beta != 0.0f) {
        for (int64_t i = 0; i < g.m; i++) {
            for (int64_t j = 0; j < g.n; j++) {
                y[i * g.n + j] = desc->beta * c[i * g.c_sm + j * g.c_sn];
            }
        }
        ga.beta = 1.0f;
    }
    size_t left;
    void *ws = plxk_ws_at(args, 0, &left);
    return plxk_product(args, &ga, ws, left, "gemm");
}

/* ------------------------------------------------------------------ */
/* matmul                                                              */
/* ------------------------------------------------------------------ */

typedef struct matmul_geom {
    int64_t m, n, k;
    uint32_t batch_rank;
    int64_t batch[PLX_MAX_RANK];   /* broadcast batch dims */
    int64_t a_bs[PLX_MAX_RANK];    /* A's element stride per batch dim (0: broadcast) */
    int64_t b_bs[PLX_MAX_RANK];
} matmul_geom;

/* numpy matmul: a 1-D A is [1,K] and a 1-D B is [K,1], the added dim being
 * removed from the result; the batch dims (all but the last two)
 * broadcast. */
static const char *matmul_prepare(const plx_layer_view *l, matmul_geom *g, char *buf,
                                  size_t size) {
    const char *why = plxk_check_layer(l, "matmul", 2, 2, 0, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->dtype != PLX_DTYPE_FLOAT32 && !plxk_is_int_dtype(a->dtype)) {
        return plxk_refuse(buf, size, "cpu_ref runs matmul in float32, int32 and int64 only, not %s",
                   plx_dtype_name(a->dtype));
    }
    if (b->dtype != a->dtype || y->dtype != a->dtype) {
        return plxk_refuse(buf, size, "cpu_ref matmul: A is %s, B is %s, Y is %s (all must match)",
                   plx_dtype_name(a->dtype), plx_dtype_name(b->dtype), plx_dtype_name(y->dtype));
    }
    if (a->rank < 1 || b->rank < 1) {
        return plxk_refuse(buf, size, "cpu_ref matmul: operands must have rank >= 1, not %u and %u",
                   a->rank, b->rank);
    }
    g->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    g->k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    g->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != g->k) {
        return plxk_refuse(buf, size, "cpu_ref matmul: A has K %lld, B has K %lld", (long long)g->k,
                   (long long)kb);
    }
    uint32_t ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    g->batch_rank = ra > rb ? ra : rb;
    int64_t as = g->m * g->k, bs = g->k * g->n; /* strides, innermost batch dim first */
    for (uint32_t i = g->batch_rank; i-- > 0;) {
        /* batch dim i of the result is dim i-(batch_rank-ra) of A's batch */
        int64_t da = 1, db = 1;
        int64_t ia = (int64_t)i - (int64_t)(g->batch_rank - ra);
        int64_t ib = (int64_t)i - (int64_t)(g->batch_rank - rb);
        if (ia >= 0) {
            da = a->dims[ia];
        }
        if (ib >= 0) {
            db = b->dims[ib];
        }
        if (da != db && da != 1 && db != 1) {
            return plxk_refuse(buf, size, "cpu_ref matmul: batch dims %lld and %lld do not broadcast",
                       (long long)da, (long long)db);
        }
        g->batch[i] = da == 1 ? db : da;
        g->a_bs[i] = da == 1 ? 0 : as;
        g->b_bs[i] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank = g->batch_rank;
    memcpy(dims, g->batch, sizeof(int64_t) * rank);
    if (a->rank > 1) {
        dims[rank++] = g->m;
    }
    if (b->rank > 1) {
        dims[rank++] = g->n;
    }
    return plxk_require_output_shape(l, "matmul", rank, dims, buf, size);
}

const char *plxk_check_matmul(const plx_layer_view *layer, char *buf, size_t size) {
    matmul_geom g;
    return matmul_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_matmul(const plx_layer_view *layer, const plxk_compute *compute) {
    matmul_geom g;
    char buf[8];
    if (matmul_prepare(layer, &g, buf, sizeof buf) ||
        layer->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return 0;
    }
    return plxk_gemm_ws(compute, g.m, g.n, g.k);
}

/* Float32 runs one GEMM per (broadcast) batch; the integer types keep the
 * plain loops, with wrap-around arithmetic. */
bool plxk_run_matmul(const plxk_kernel_args *args) {
    char why[256];
    matmul_geom g;
    if (matmul_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *a = args->inputs[0], *b = args->inputs[1];
    void *y = args->outputs[0];
    int64_t batches = 1;
    for (uint32_t i = 0; i < g.batch_rank; i++) {
        batches *= g.batch[i];
    }
    int64_t idx[PLX_MAX_RANK] = {0};
    int64_t a0 = 0, b0 = 0; /* offsets of the current batch's matrices */
    size_t left;
    void *ws = plxk_ws_at(args, 0, &left);
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t y0 = bi * g.m * g.n;
        if (dt == PLX_DTYPE_FLOAT32) {
            plxk_gemm_args ga = {0};
            ga.m = (size_t)g.m;
            ga.n = (size_t)g.n;
            ga.k = (size_t)g.k;
            ga.alpha = 1.0f;
            ga.a = (const float *)a + a0;
            ga.a_rs = (ptrdiff_t)g.k;
            ga.a_cs = 1;
            ga.b = (const float *)b + b0;
            ga.b_rs = (ptrdiff_t)g.n;
            ga.b_cs = 1;
            ga.c = (float *)y + y0;
            ga.ldc = (size_t)g.n;
            if (!plxk_product(args, &ga, ws, left, "matmul")) {
                return false;
            }
        }
        for (int64_t i = 0; dt != PLX_DTYPE_FLOAT32 && i < g.m; i++) {
            for (int64_t j = 0; j < g.n; j++) {
                int64_t ai = a0 + i * g.k, bj = b0 + j;
                int64_t acc = 0;
                for (int64_t k = 0; k < g.k; k++) {
                    acc = plxk_wrap_add(acc, plxk_wrap_mul(plxk_load_int(a, dt, ai + k),
                                                 plxk_load_int(b, dt, bj + k * g.n)));
                }
                plxk_store_int(y, dt, y0 + i * g.n + j, acc);
            }
        }
        /* next batch index (odometer, last dim fastest) */
        for (uint32_t d = g.batch_rank; d-- > 0;) {
            a0 += g.a_bs[d];
            b0 += g.b_bs[d];
            if (++idx[d] < g.batch[d]) {
                break;
            }
            a0 -= g.a_bs[d] * g.batch[d];
            b0 -= g.b_bs[d] * g.batch[d];
            idx[d] = 0;
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW_WS(FULLY_CONNECTED, fully_connected);
PLXK_ROW_WS(GEMM, gemm);
PLXK_ROW_WS(MATMUL, matmul);
