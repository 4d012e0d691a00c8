/* The matrix products: fully_connected, gemm and matmul (ONNX semantics,
 * opset 13+). Float32 runs on cpu_ref's GEMM (gemm.h) in the workspace the
 * caller sized with plxk_kernel_workspace, with a fused relu, clip or leaky_relu in its
 * epilogue; matmul's integer types keep their own loops.
 *
 * Every operator has a prepare function that checks what the kernel supports
 * of a layer the host validated (dtypes, attributes, shapes; the slot counts
 * and descriptor are the host's) and derives what the loops need. The check
 * function calls it and reports its reason; the run function calls it again
 * (it is cheap) so that no loop ever trusts an inconsistent shape: loops
 * index only within the tensor infos, so they never read or write out of
 * bounds. Nothing here allocates. The helpers shared with the other
 * dense-math files are in kernels_compute.h. */
#include "kernels_compute.h"

#include <plexus/geometry.h>

#include <stdint.h>
#include <string.h>

/* The prepared state of the three products (plxk_prepare_fn): op(B), when
 * it is the constant input 1 and the GEMM would read it packed for this M x
 * N x K (plxk_gemm_reads_packed), packed once (plxk_gemm_pack_b), so that
 * runs skip packing the weights. A transformer's weights against a few
 * dozen tokens were read in place, rows kilobytes apart: packed, the FFN's
 * 32 x 1536 x 384 product ran at 160 instead of 101 GFLOP/s (AVX-512). */
static size_t prepare_packed_b(const plx_layer_view *l, const plxk_compute *compute, int64_t m,
                               int64_t n, int64_t k, ptrdiff_t b_rs, ptrdiff_t b_cs, void *out,
                               size_t size) {
    const float *b = l->input_constants ? l->input_constants[1] : NULL;
    plxk_isa isa = plxk_isa_of(compute);
    if (!b || !plxk_gemm_reads_packed(isa, (size_t)m, (size_t)n, (size_t)k, b_rs, b_cs)) {
        return 0;
    }
    size_t need = plxk_gemm_packed_b_size(isa, (size_t)n, (size_t)k);
    if (need == SIZE_MAX || !out) {
        return need == SIZE_MAX ? 0 : need;
    }
    plxk_gemm_args g = {0};
    g.n = (size_t)n;
    g.k = (size_t)k;
    g.b = b;
    g.b_rs = b_rs;
    g.b_cs = b_cs;
    return plxk_gemm_pack_b(isa, &g, out, size) ? need : 0;
}

/* ------------------------------------------------------------------ */
/* fully_connected, gemm                                               */
/* ------------------------------------------------------------------ */

typedef struct fc_geom {
    int64_t rows, k, m;
    bool transposed;
    ptrdiff_t w_rs, w_cs; /* op(B) = W' [K, M] as the GEMM reads W */
} fc_geom;

static const char *fc_prepare(const plx_layer_view *l, fc_geom *g, char *buf, size_t size) {
    const char *why = plxk_require_float32(l, "fully_connected", buf, size);
    if (why) {
        return why;
    }
    const plx_fully_connected_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return plxk_refuse(buf, size, "fully_connected takes X of rank >= 2 and W of rank 2, not %u and %u",
                   x->rank, w->rank);
    }
    g->transposed = desc->weights_transposed;
    g->k = x->dims[x->rank - 1];
    g->rows = plxk_dim_product(x, 0, x->rank - 1);
    g->m = g->transposed ? w->dims[0] : w->dims[1];
    g->w_rs = g->transposed ? 1 : (ptrdiff_t)g->m;
    g->w_cs = g->transposed ? (ptrdiff_t)g->k : 1;
    if ((g->transposed ? w->dims[1] : w->dims[0]) != g->k) {
        return plxk_refuse(buf, size, "fully_connected: W [%lld,%lld]%s does not match X's K %lld",
                   (long long)w->dims[0], (long long)w->dims[1],
                   g->transposed ? " (transposed)" : "", (long long)g->k);
    }
    if (l->input_count == 3 && plxk_numel(&l->inputs[2]) != g->m) {
        return plxk_refuse(buf, size, "fully_connected: B has %lld elements, not %lld",
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

size_t plxk_prepare_fully_connected(const plx_layer_view *layer, const plxk_compute *compute,
                                    void *out, size_t size) {
    fc_geom g;
    char buf[8];
    if (fc_prepare(layer, &g, buf, sizeof buf)) {
        return 0;
    }
    return prepare_packed_b(layer, compute, g.rows, g.m, g.k, g.w_rs, g.w_cs, out, size);
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
    ga.b_rs = g.w_rs;
    ga.b_cs = g.w_cs;
    ga.c = args->outputs[0];
    ga.ldc = (size_t)g.m;
    ga.bias = args->layer->input_count == 3 ? args->inputs[2] : NULL;
    ga.bias_rs = 0;
    ga.bias_cs = 1;
    ga.packed_b = args->prepared;
    size_t left;
    void *ws = plxk_ws_at(args, 0, &left);
    return plxk_product(args, &ga, ws, left, "fully_connected");
}

/* The geometry of a gemm is the SDK's (plexus/geometry.h). */
static const char *gemm_prepare(const plx_layer_view *l, plx_gemm_geom *g, char *buf, size_t size) {
    const char *why = plxk_require_float32(l, "gemm", buf, size);
    if (why) {
        return why;
    }
    const plx_gemm_desc *desc = l->desc;
    switch (plx_gemm_geom_of(&l->inputs[0], &l->inputs[1], l->input_count == 3 ? &l->inputs[2] : NULL,
                             desc->trans_a, desc->trans_b, g)) {
    case PLX_GEOM_OK:
        break;
    case PLX_GEOM_BAD_RANK:
        return plxk_refuse(buf, size, "gemm takes A and B of rank 2, not %u and %u",
                   (unsigned)g->bad[0], (unsigned)g->bad[1]);
    case PLX_GEOM_K_MISMATCH:
        return plxk_refuse(buf, size, "gemm: A' has K %lld, B' has K %lld", (long long)g->bad[0],
                   (long long)g->bad[1]);
    case PLX_GEOM_BAD_BIAS_RANK:
        return plxk_refuse(buf, size, "gemm: C has rank %u (0 to 2)", (unsigned)g->bad[0]);
    default:
        return plxk_refuse(buf, size, "gemm: C [%lld,%lld] does not broadcast to [%lld,%lld]",
                   (long long)g->bad[0], (long long)g->bad[1], (long long)g->m, (long long)g->n);
    }
    int64_t dims[2] = {g->m, g->n};
    return plxk_require_output_shape(l, "gemm", 2, dims, buf, size);
}

const char *plxk_check_gemm(const plx_layer_view *layer, char *buf, size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_check_qgemm(layer, buf, size);
    }
    plx_gemm_geom g = {0};
    return gemm_prepare(layer, &g, buf, size);
}

size_t plxk_workspace_gemm(const plx_layer_view *layer, const plxk_compute *compute) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_workspace_qgemm(layer, compute);
    }
    plx_gemm_geom g = {0};
    char buf[8];
    return gemm_prepare(layer, &g, buf, sizeof buf) ? 0 : plxk_gemm_ws(compute, g.m, g.n, g.k);
}

size_t plxk_prepare_gemm(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                         size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_prepare_qgemm(layer, compute, out, size);
    }
    plx_gemm_geom g = {0};
    char buf[8];
    if (gemm_prepare(layer, &g, buf, sizeof buf)) {
        return 0;
    }
    return prepare_packed_b(layer, compute, g.m, g.n, g.k, (ptrdiff_t)g.b_sk, (ptrdiff_t)g.b_sn,
                            out, size);
}

/* Y = alpha A' B' + beta C: C is the GEMM's (unscaled) strided bias when
 * beta is 1; otherwise Y starts as beta C, which the GEMM accumulates on. */
bool plxk_run_gemm(const plxk_kernel_args *args) {
    if (plxk_is_quantized_product(args->layer)) {
        return plxk_run_qgemm(args);
    }
    char why[256];
    plx_gemm_geom g = {0};
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
    ga.packed_b = args->prepared;
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

/* numpy matmul (plexus/geometry.h): a 1-D A is [1,K] and a 1-D B is
 * [K,1], the added dim being removed from the result; the batch dims (all
 * but the last two) broadcast. */
static const char *matmul_prepare(const plx_layer_view *l, plx_matmul_geom *g, char *buf,
                                  size_t size) {
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    if (a->dtype != PLX_DTYPE_FLOAT32 && a->dtype != PLX_DTYPE_FLOAT64 &&
        !plxk_is_int_dtype(a->dtype)) {
        return plxk_refuse(buf, size,
                   "runs matmul in float32, float64, int32 and int64 only, not %s",
                   plx_dtype_name(a->dtype));
    }
    if (b->dtype != a->dtype || y->dtype != a->dtype) {
        return plxk_refuse(buf, size, "matmul: A is %s, B is %s, Y is %s (all must match)",
                   plx_dtype_name(a->dtype), plx_dtype_name(b->dtype), plx_dtype_name(y->dtype));
    }
    switch (plx_matmul_geom_of(a, b, g)) {
    case PLX_GEOM_OK:
        break;
    case PLX_GEOM_BAD_RANK:
        return plxk_refuse(buf, size, "matmul: operands must have rank >= 1, not %u and %u",
                   a->rank, b->rank);
    case PLX_GEOM_K_MISMATCH:
        return plxk_refuse(buf, size, "matmul: A has K %lld, B has K %lld", (long long)g->bad[0],
                   (long long)g->bad[1]);
    default:
        return plxk_refuse(buf, size, "matmul: batch dims %lld and %lld do not broadcast",
                   (long long)g->bad[0], (long long)g->bad[1]);
    }
    return plxk_require_output_shape(l, "matmul", g->rank, g->dims, buf, size);
}

const char *plxk_check_matmul(const plx_layer_view *layer, char *buf, size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_check_qmatmul(layer, buf, size);
    }
    plx_matmul_geom g;
    return matmul_prepare(layer, &g, buf, size);
}

/* One B for every batch and a dense A (a transformer's weights against
 * [batch, tokens, features]): the batches are rows of one product. */
static bool batches_fold(const plx_matmul_geom *g) {
    bool fold = g->batch_rank > 0;
    for (uint32_t d = 0; fold && d < g->batch_rank; d++) {
        fold = g->b_bs[d] == 0 && (g->a_bs[d] != 0 || g->batch[d] == 1);
    }
    return fold;
}

/* The rows of each float32 product: M, or M times the batches when they
 * fold into one. */
static int64_t matmul_rows(const plx_matmul_geom *g) {
    int64_t rows = g->m;
    bool fold = batches_fold(g);
    for (uint32_t d = 0; fold && d < g->batch_rank; d++) {
        rows *= g->batch[d];
    }
    return rows;
}

size_t plxk_workspace_matmul(const plx_layer_view *layer, const plxk_compute *compute) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_workspace_qmatmul(layer, compute);
    }
    plx_matmul_geom g;
    char buf[8];
    if (matmul_prepare(layer, &g, buf, sizeof buf) ||
        layer->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return 0;
    }
    return plxk_gemm_ws(compute, matmul_rows(&g), g.n, g.k);
}

/* Only a B that every batch shares (a weight matrix) is packed. */
size_t plxk_prepare_matmul(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                           size_t size) {
    if (plxk_is_quantized_product(layer)) {
        return plxk_prepare_qmatmul(layer, compute, out, size);
    }
    plx_matmul_geom g;
    char buf[8];
    if (matmul_prepare(layer, &g, buf, sizeof buf) ||
        layer->inputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return 0;
    }
    for (uint32_t d = 0; d < g.batch_rank; d++) {
        if (g.b_bs[d] != 0 && g.batch[d] > 1) {
            return 0;
        }
    }
    return prepare_packed_b(layer, compute, matmul_rows(&g), g.n, g.k, (ptrdiff_t)g.n, 1, out,
                            size);
}

/* Float32 runs one GEMM per (broadcast) batch, or one for all of them
 * (batches_fold); float64 (Einsum's products, convert_einsum.c) and the
 * integer types keep the plain loops, the integers with wrap-around
 * arithmetic. */
bool plxk_run_matmul(const plxk_kernel_args *args) {
    if (plxk_is_quantized_product(args->layer)) {
        return plxk_run_qmatmul(args);
    }
    char why[256];
    plx_matmul_geom g;
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
    int64_t rows = g.m;
    if (dt == PLX_DTYPE_FLOAT32 && batches_fold(&g)) {
        rows = matmul_rows(&g);
        batches = 1;
    }
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t y0 = bi * g.m * g.n;
        if (dt == PLX_DTYPE_FLOAT32) {
            plxk_gemm_args ga = {0};
            ga.m = (size_t)rows;
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
            ga.packed_b = args->prepared;
            if (!plxk_product(args, &ga, ws, left, "matmul")) {
                return false;
            }
        }
        for (int64_t i = 0; dt == PLX_DTYPE_FLOAT64 && i < g.m; i++) {
            const double *ad = (const double *)a + a0 + i * g.k, *bd = (const double *)b + b0;
            double *yd = (double *)y + y0 + i * g.n;
            for (int64_t j = 0; j < g.n; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < g.k; k++) {
                    acc += ad[k] * bd[j + k * g.n];
                }
                yd[j] = acc;
            }
        }
        for (int64_t i = 0; plxk_is_int_dtype(dt) && i < g.m; i++) {
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
PLXK_ROW_WS_PREP(FULLY_CONNECTED, fully_connected);
PLXK_ROW_WS_PREP(GEMM, gemm);
PLXK_ROW_WS_PREP(MATMUL, matmul);
