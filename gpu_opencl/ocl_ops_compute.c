/* gpu_opencl dense math, float32 only: conv (direct, 1x1 as a GEMM,
 * im2col + GEMM), conv_transpose (direct), fully_connected, matmul, gemm,
 * pool, global_pool, batch_norm, layer_norm, instance_norm, softmax,
 * reduce, arg_reduce, resize. Window geometry (padding rules, output
 * sizes) is the SDK's (plexus/window.h), as cpu_ref's is, and checked
 * against the output infos. Kernels in kernels/conv.cl, gemm.cl,
 * pool.cl, reduce.cl, norm.cl, resize.cl. */
#include "ocl_ops_internal.h"

#include <plexus/window.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Geometry values (sizes, pads, strides, dilations, window extents) are at
 * most this, so that kernel index arithmetic in int cannot overflow. */
#define GEOM_LIMIT ((int64_t)1 << 24)

/* Scratch for im2col at most this many bytes; larger convolutions run
 * the direct kernel. */
#define IM2COL_LIMIT ((int64_t)256 << 20)

/* ---- spatial windows ---------------------------------------------------- */

/* The geometry of a 1-D, 2-D or 3-D windowed operator is the SDK's
 * (plx_window_geom, plexus/window.h, from its _nd functions: a 1-D one
 * uses slot 1 and leaves slot 0 of size 1, a 3-D one has its depth in slot
 * 2, of size 1 otherwise), checked within GEOM_LIMIT; its reasons get
 * gpu_opencl's prefix. The kernels take slots 0 and 1 in an int16 and the
 * depth in an int8 (depth_geom_arg). */
static const char *window_refusal(const char *why, char *buf, size_t size) {
    return why ? ocl_refuse(buf, size, "%s", why) : NULL;
}

/* The int16 geometry of conv.cl. */
static cl_int16 conv_geom_arg(const plx_window_geom *g) {
    int64_t v[16] = {g->n,    g->c,    g->in[0], g->in[1], g->m,    g->out[0], g->out[1], g->k[0],
                     g->k[1], g->s[0], g->s[1],  g->d[0],  g->d[1], g->pb[0],  g->pb[1],  g->group};
    cl_int16 r;
    for (int i = 0; i < 16; i++) {
        r.s[i] = (cl_int)v[i];
    }
    return r;
}

/* The int8 depth geometry of conv.cl and pool.cl: D, OD, KD, SD, DD, the
 * pads before and after. */
static cl_int8 depth_geom_arg(const plx_window_geom *g) {
    int64_t v[8] = {g->in[2], g->out[2], g->k[2], g->s[2], g->d[2], g->pb[2], g->pe[2], 0};
    cl_int8 r;
    for (int i = 0; i < 8; i++) {
        r.s[i] = (cl_int)v[i];
    }
    return r;
}

/* ---- conv --------------------------------------------------------------- */

static const char *conv_prepare_geom(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                     size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    char msg[224];
    return window_refusal(plx_window_geom_conv_nd(l, GEOM_LIMIT, g, msg, sizeof msg), buf, size);
}

const char *ocl_check_conv(const ocl_device *dev, const plx_layer_view *l, char *buf, size_t size) {
    (void)dev;
    plx_window_geom g;
    return conv_prepare_geom(l, &g, buf, size);
}

static bool conv_direct(const ocl_device *dev, const plx_layer_view *l, const plx_window_geom *g,
                        const char *name, ocl_plan *plan, char *err, size_t size) {
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, name, ocl_numel(&l->outputs[0]), &k, err, size)) {
        return false;
    }
    bool has_bias = l->input_count == 3;
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, has_bias ? 2 : 1);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, has_bias ? 1 : 0);
    cl_int16 geom = conv_geom_arg(g);
    cl_int8 depth = depth_geom_arg(g);
    ocl_arg_value(k, &geom, sizeof geom);
    ocl_arg_value(k, &depth, sizeof depth);
    return true;
}

/* Depthwise (one input channel per group) and convolutions whose im2col
 * would be too large run the direct kernel; 1x1 convolutions with stride
 * 1 and no padding are one GEMM per image and group over X itself; the
 * rest im2col into a scratch buffer, then GEMM. */
bool ocl_prepare_conv(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    plx_window_geom g;
    char buf[8];
    conv_prepare_geom(l, &g, buf, sizeof buf);
    if (ocl_numel(&l->outputs[0]) == 0) {
        return true;
    }
    int64_t cg = g.c / g.group, mg = g.m / g.group;
    int64_t kk = g.k[0] * g.k[1] * g.k[2], P = g.out[0] * g.out[1] * g.out[2];
    int64_t col_elems = g.n * g.c * kk * P;
    bool pointwise = kk == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && g.pb[0] == 0 &&
                     g.pb[1] == 0 && g.pb[2] == 0 && g.out[0] == g.in[0] &&
                     g.out[1] == g.in[1] && g.out[2] == g.in[2];
    bool direct = cg == 1 || (!pointwise && (col_elems > OCL_INDEX_LIMIT ||
                                             col_elems * 4 > IM2COL_LIMIT));
    if (direct) {
        return conv_direct(dev, l, &g, "conv2d_direct", plan, err, size);
    }
    ocl_gemm_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.m = mg;
    gd.n = P;
    gd.k = cg * kk;
    gd.a_sm = cg * kk;
    gd.a_sk = 1;
    gd.b_sk = P;
    gd.b_sn = 1;
    gd.c_sm = 1;
    gd.c_sn = 0;
    gd.y_sm = P;
    gd.alpha = 1.0f;
    gd.beta = 1.0f;
    gd.a_slot = 1;
    gd.has_c = l->input_count == 3;
    gd.c_slot = 2;
    gd.batches = g.n * g.group;
    if (!pointwise) {
        uint32_t col = 0;
        if (!ocl_plan_aux(plan, dev, NULL, (size_t)col_elems * sizeof(float), &col, err, size)) {
            return false;
        }
        ocl_launch *k;
        if (!ocl_kernel_1d(plan, dev, "im2col", col_elems, &k, err, size)) {
            return false;
        }
        ocl_arg_input(k, 0);
        ocl_arg_aux(k, col);
        cl_int16 geom = conv_geom_arg(&g);
        cl_int8 depth = depth_geom_arg(&g);
        ocl_arg_value(k, &geom, sizeof geom);
        ocl_arg_value(k, &depth, sizeof depth);
        gd.b_aux = true;
        gd.b_slot = col;
    }
    int32_t *off = malloc((size_t)gd.batches * 4 * sizeof *off);
    if (!off) {
        return ocl_fail(err, size, "gpu_opencl: conv: out of memory");
    }
    for (int64_t n = 0; n < g.n; n++) {
        for (int64_t gr = 0; gr < g.group; gr++) {
            int32_t *o = off + 4 * (n * g.group + gr);
            o[0] = (int32_t)(gr * mg * cg * kk);
            o[1] = (int32_t)(pointwise ? (n * g.c + gr * cg) * P : (n * g.c + gr * cg) * kk * P);
            o[2] = (int32_t)(gr * mg);
            o[3] = (int32_t)((n * g.m + gr * mg) * P);
        }
    }
    gd.offsets = off;
    bool ok = ocl_plan_gemm(plan, dev, &gd, err, size);
    free(off);
    return ok;
}

/* ---- conv_transpose ----------------------------------------------------- */

static const char *conv_transpose_geom(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                       size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    char msg[224];
    return window_refusal(plx_window_geom_conv_transpose_nd(l, GEOM_LIMIT, g, msg, sizeof msg),
                          buf, size);
}

const char *ocl_check_conv_transpose(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                     size_t size) {
    (void)dev;
    plx_window_geom g;
    return conv_transpose_geom(l, &g, buf, size);
}

bool ocl_prepare_conv_transpose(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                char *err, size_t size) {
    plx_window_geom g;
    char buf[8];
    conv_transpose_geom(l, &g, buf, sizeof buf);
    if (ocl_numel(&l->outputs[0]) == 0) {
        return true;
    }
    return conv_direct(dev, l, &g, "conv_transpose2d", plan, err, size);
}

/* ---- fully_connected, gemm, matmul -------------------------------------- */

static bool one_batch_gemm(const ocl_device *dev, ocl_plan *plan, ocl_gemm_desc *gd, char *err,
                           size_t size) {
    static const int32_t zero[4] = {0, 0, 0, 0};
    gd->batches = 1;
    gd->offsets = zero;
    return ocl_plan_gemm(plan, dev, gd, err, size);
}

const char *ocl_check_fully_connected(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                      size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_fully_connected_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (x->rank < 2 || w->rank != 2) {
        return ocl_refuse(buf, size, "fully_connected takes X of rank >= 2 and W of rank 2");
    }
    int64_t k = x->dims[x->rank - 1];
    int64_t m = desc->weights_transposed ? w->dims[0] : w->dims[1];
    if ((desc->weights_transposed ? w->dims[1] : w->dims[0]) != k) {
        return ocl_refuse(buf, size, "fully_connected: W does not match X's K %lld",
                          (long long)k);
    }
    if (l->input_count == 3 && ocl_numel(&l->inputs[2]) != m) {
        return ocl_refuse(buf, size, "fully_connected: B has %lld elements, not %lld",
                          (long long)ocl_numel(&l->inputs[2]), (long long)m);
    }
    int64_t dims[PLX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[x->rank - 1] = m;
    return ocl_require_shape(l, 0, x->rank, dims, buf, size);
}

bool ocl_prepare_fully_connected(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                 char *err, size_t size) {
    const plx_fully_connected_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1];
    if (ocl_numel(&l->outputs[0]) == 0) {
        return true;
    }
    ocl_gemm_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.k = x->dims[x->rank - 1];
    gd.m = ocl_dim_product(x, 0, x->rank - 1);
    gd.n = desc->weights_transposed ? w->dims[0] : w->dims[1];
    gd.a_sm = gd.k;
    gd.a_sk = 1;
    gd.b_sk = desc->weights_transposed ? 1 : gd.n;
    gd.b_sn = desc->weights_transposed ? gd.k : 1;
    gd.c_sm = 0;
    gd.c_sn = 1;
    gd.y_sm = gd.n;
    gd.alpha = 1.0f;
    gd.beta = 1.0f;
    gd.a_slot = 0;
    gd.b_slot = 1;
    gd.has_c = l->input_count == 3;
    gd.c_slot = 2;
    return one_batch_gemm(dev, plan, &gd, err, size);
}

/* The geometry of a gemm is the SDK's (plexus/geometry.h). */
static const char *gemm_geom_of(const plx_layer_view *l, plx_gemm_geom *g, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_gemm_desc *desc = l->desc;
    switch (plx_gemm_geom_of(&l->inputs[0], &l->inputs[1], l->input_count == 3 ? &l->inputs[2] : NULL,
                             desc->trans_a, desc->trans_b, g)) {
    case PLX_GEOM_OK:
        break;
    case PLX_GEOM_BAD_RANK:
        return ocl_refuse(buf, size, "gemm takes A and B of rank 2, not %u and %u",
                          (unsigned)g->bad[0], (unsigned)g->bad[1]);
    case PLX_GEOM_K_MISMATCH:
        return ocl_refuse(buf, size, "gemm: A' and B' disagree on K");
    case PLX_GEOM_BAD_BIAS_RANK:
        return ocl_refuse(buf, size, "gemm: C has rank %u (0 to 2)", (unsigned)g->bad[0]);
    default:
        return ocl_refuse(buf, size, "gemm: C does not broadcast to [%lld,%lld]",
                          (long long)g->m, (long long)g->n);
    }
    int64_t dims[2] = {g->m, g->n};
    return ocl_require_shape(l, 0, 2, dims, buf, size);
}

const char *ocl_check_gemm(const ocl_device *dev, const plx_layer_view *l, char *buf, size_t size) {
    (void)dev;
    plx_gemm_geom g;
    return gemm_geom_of(l, &g, buf, size);
}

bool ocl_prepare_gemm(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    const plx_gemm_desc *desc = l->desc;
    plx_gemm_geom g;
    char buf[8];
    gemm_geom_of(l, &g, buf, sizeof buf);
    if (g.m == 0 || g.n == 0) {
        return true;
    }
    ocl_gemm_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.m = g.m;
    gd.n = g.n;
    gd.k = g.k;
    gd.a_sm = g.a_sm;
    gd.a_sk = g.a_sk;
    gd.b_sk = g.b_sk;
    gd.b_sn = g.b_sn;
    gd.c_sm = g.c_sm;
    gd.c_sn = g.c_sn;
    gd.y_sm = g.n;
    gd.alpha = desc->alpha;
    gd.beta = desc->beta;
    gd.a_slot = 0;
    gd.b_slot = 1;
    gd.has_c = l->input_count == 3;
    gd.c_slot = 2;
    return one_batch_gemm(dev, plan, &gd, err, size);
}

/* numpy matmul (plexus/geometry.h): 1-D operands get a dim of 1 added and
 * removed; batch dims broadcast. */

static const char *matmul_geom_of(const plx_layer_view *l, plx_matmul_geom *g, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    switch (plx_matmul_geom_of(&l->inputs[0], &l->inputs[1], g)) {
    case PLX_GEOM_OK:
        break;
    case PLX_GEOM_BAD_RANK:
        return ocl_refuse(buf, size, "matmul: operands must have rank >= 1");
    case PLX_GEOM_K_MISMATCH:
        return ocl_refuse(buf, size, "matmul: A has K %lld, B has K %lld",
                          (long long)g->bad[0], (long long)g->bad[1]);
    default:
        return ocl_refuse(buf, size, "matmul: batch dims do not broadcast");
    }
    return ocl_require_shape(l, 0, g->rank, g->dims, buf, size);
}

const char *ocl_check_matmul(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    plx_matmul_geom g;
    return matmul_geom_of(l, &g, buf, size);
}

bool ocl_prepare_matmul(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    plx_matmul_geom g;
    char buf[8];
    matmul_geom_of(l, &g, buf, sizeof buf);
    int64_t batches = 1;
    for (uint32_t i = 0; i < g.batch_rank; i++) {
        batches *= g.batch[i];
    }
    if (batches == 0 || g.m == 0 || g.n == 0) {
        return true;
    }
    int32_t *off = malloc((size_t)batches * 4 * sizeof *off);
    if (!off) {
        return ocl_fail(err, size, "gpu_opencl: matmul: out of memory");
    }
    int64_t idx[PLX_MAX_RANK] = {0}, a0 = 0, b0 = 0;
    for (int64_t bi = 0; bi < batches; bi++) {
        off[4 * bi] = (int32_t)a0;
        off[4 * bi + 1] = (int32_t)b0;
        off[4 * bi + 2] = 0;
        off[4 * bi + 3] = (int32_t)(bi * g.m * g.n);
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
    ocl_gemm_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.m = g.m;
    gd.n = g.n;
    gd.k = g.k;
    gd.a_sm = g.k;
    gd.a_sk = 1;
    gd.b_sk = g.n;
    gd.b_sn = 1;
    gd.y_sm = g.n;
    gd.alpha = 1.0f;
    gd.beta = 0.0f;
    gd.a_slot = 0;
    gd.b_slot = 1;
    gd.batches = batches;
    gd.offsets = off;
    bool ok = ocl_plan_gemm(plan, dev, &gd, err, size);
    free(off);
    return ok;
}

/* ---- pool, global_pool -------------------------------------------------- */

static const char *pool_geom(const plx_layer_view *l, plx_window_geom *g, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_pool_desc *desc = l->desc;
    if (desc->kind != PLX_POOL_MAX && desc->kind != PLX_POOL_AVERAGE &&
        desc->kind != PLX_POOL_LP) {
        return ocl_refuse(buf, size, "pool: kind %d is not implemented", (int)desc->kind);
    }
    if (desc->kind == PLX_POOL_LP && (desc->p < 1 || desc->p > 65536)) {
        return ocl_refuse(buf, size, "pool: lp pooling needs p in [1, 65536], got %lld",
                          (long long)desc->p);
    }
    if (l->output_count > 1) {
        const plx_tensor_info *ind = &l->outputs[1];
        if (desc->kind != PLX_POOL_MAX || ind->dtype != PLX_DTYPE_INT64 ||
            !ocl_same_dims(ind, &l->outputs[0]) || l->inputs[0].dtype != PLX_DTYPE_FLOAT32 ||
            l->outputs[0].dtype != PLX_DTYPE_FLOAT32) {
            return ocl_refuse(buf, size, "pool: Indices come with float32 max pools "
                              "only, int64 of Y's shape");
        }
    } else if ((why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (l->output_count > 1 && desc->indices_column_major && l->inputs[0].rank > 4) {
        return ocl_refuse(buf, size, "pool: column-major Indices are for 1-D and 2-D "
                          "pools, not 3-D");
    }
    char msg[224];
    return window_refusal(plx_window_geom_pool_nd(l, GEOM_LIMIT, g, msg, sizeof msg), buf, size);
}

const char *ocl_check_pool(const ocl_device *dev, const plx_layer_view *l, char *buf, size_t size) {
    (void)dev;
    if (l->output_count > 2) {
        return ocl_refuse(buf, size, "pool: %u outputs", l->output_count);
    }
    plx_window_geom g;
    return pool_geom(l, &g, buf, size);
}

bool ocl_prepare_pool(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    const plx_pool_desc *desc = l->desc;
    plx_window_geom g;
    char buf[8];
    pool_geom(l, &g, buf, sizeof buf);
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    bool with_indices = l->output_count > 1;
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, with_indices ? "max_pool2d_indices_f32" : "pool2d_f32", n, &k,
                       err, size)) {
        return false;
    }
    int64_t v[16] = {g.n,    g.c,    g.in[0], g.in[1], g.out[0], g.out[1], g.k[0],  g.k[1],
                     g.s[0], g.s[1], g.d[0],  g.d[1],  g.pb[0],  g.pb[1],  g.pe[0], g.pe[1]};
    cl_int16 geom;
    for (int i = 0; i < 16; i++) {
        geom.s[i] = (cl_int)v[i];
    }
    cl_int8 depth = depth_geom_arg(&g);
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    if (with_indices) {
        ocl_arg_output(k, 1);
        ocl_arg_value(k, &geom, sizeof geom);
        ocl_arg_value(k, &depth, sizeof depth);
        ocl_arg_int(k, desc->indices_column_major ? 1 : 0);
        return true;
    }
    ocl_arg_value(k, &geom, sizeof geom);
    ocl_arg_value(k, &depth, sizeof depth);
    ocl_arg_int(k, desc->kind == PLX_POOL_MAX ? 0 : desc->kind == PLX_POOL_AVERAGE ? 1 : 2);
    ocl_arg_int(k, desc->count_include_pad ? 1 : 0);
    ocl_arg_int(k, (int32_t)(desc->kind == PLX_POOL_LP ? desc->p : 1));
    return true;
}

/* A reduce_f32 launch: `outputs` groups, each over `count` elements; the
 * kept and reduced dims with their X strides (collapsed here). */
static bool reduce_launch(const ocl_device *dev, ocl_plan *plan, int func, ocl_shape *kept,
                          ocl_shape *red, char *err, size_t size) {
    int64_t outputs = 1, count = 1;
    for (uint32_t d = 0; d < kept->rank; d++) {
        outputs *= kept->dims[d];
    }
    for (uint32_t d = 0; d < red->rank; d++) {
        count *= red->dims[d];
    }
    if (outputs == 0) {
        return true;
    }
    ocl_shape_collapse(kept, 1);
    ocl_shape_collapse(red, 1);
    ocl_launch *k;
    size_t wg = 1;
    if (!ocl_kernel_groups(plan, dev, "reduce_f32", outputs, count, &k, &wg, err, size)) {
        return false;
    }
    cl_int8 kd = ocl_int8_of(kept->dims, kept->rank, 1), ks = ocl_int8_of(kept->st[0], kept->rank, 0);
    cl_int8 rd = ocl_int8_of(red->dims, red->rank, 1), rs = ocl_int8_of(red->st[0], red->rank, 0);
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)outputs);
    ocl_arg_int(k, (int32_t)count);
    ocl_arg_int(k, func);
    ocl_arg_int(k, (int32_t)kept->rank);
    ocl_arg_value(k, &kd, sizeof kd);
    ocl_arg_value(k, &ks, sizeof ks);
    ocl_arg_int(k, (int32_t)red->rank);
    ocl_arg_value(k, &rd, sizeof rd);
    ocl_arg_value(k, &rs, sizeof rs);
    ocl_arg_local(k, wg * sizeof(float));
    return true;
}

const char *ocl_check_global_pool(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                  size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_global_pool_desc *desc = l->desc;
    if (desc->kind != PLX_POOL_MAX && desc->kind != PLX_POOL_AVERAGE &&
        desc->kind != PLX_POOL_LP) {
        return ocl_refuse(buf, size, "global_pool: kind %d is not implemented",
                          (int)desc->kind);
    }
    if (desc->kind == PLX_POOL_LP && desc->p != 1 && desc->p != 2) {
        return ocl_refuse(buf, size, "global_pool: lp with p %lld is not implemented "
                          "(1 or 2)", (long long)desc->p);
    }
    if ((why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return ocl_refuse(buf, size, "global_pool takes X of rank >= 3, not %u", x->rank);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
    }
    return ocl_require_shape(l, 0, x->rank, dims, buf, size);
}

bool ocl_prepare_global_pool(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                             char *err, size_t size) {
    const plx_global_pool_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t inner = ocl_dim_product(x, 2, x->rank);
    ocl_shape kept, red;
    memset(&kept, 0, sizeof kept);
    memset(&red, 0, sizeof red);
    kept.rank = red.rank = 1;
    kept.dims[0] = x->dims[0] * x->dims[1];
    kept.st[0][0] = inner;
    red.dims[0] = inner;
    red.st[0][0] = 1;
    int func = desc->kind == PLX_POOL_MAX       ? PLX_REDUCE_MAX
               : desc->kind == PLX_POOL_AVERAGE ? PLX_REDUCE_MEAN
               : desc->p == 1                   ? PLX_REDUCE_L1
                                                : PLX_REDUCE_L2; /* lp: sum |x|, sqrt(sum x^2) */
    return reduce_launch(dev, plan, func, &kept, &red, err, size);
}

/* ---- batch_norm, layer_norm, instance_norm ------------------------------ */

const char *ocl_check_batch_norm(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 2) {
        return ocl_refuse(buf, size, "batch_norm takes X of rank >= 2, not %u", x->rank);
    }
    for (uint32_t i = 1; i < 5; i++) {
        if (ocl_numel(&l->inputs[i]) != x->dims[1]) {
            return ocl_refuse(buf, size, "batch_norm: input %u has %lld elements, X %lld channels",
                              i, (long long)ocl_numel(&l->inputs[i]), (long long)x->dims[1]);
        }
    }
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

bool ocl_prepare_batch_norm(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_batch_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t n = ocl_numel(x);
    if (n == 0) {
        return true;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "batch_norm_f32", n, &k, err, size)) {
        return false;
    }
    for (uint32_t i = 0; i < 5; i++) {
        ocl_arg_input(k, i);
    }
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)n);
    ocl_arg_int(k, (int32_t)x->dims[1]);
    ocl_arg_int(k, (int32_t)ocl_dim_product(x, 2, x->rank));
    ocl_arg_float(k, desc->epsilon);
    return true;
}

/* Strides of t broadcast (numpy, right-aligned) to X's shape
 * (plexus/geometry.h's), refusing shapes that would broadcast X itself. */
static const char *norm_broadcast(const plx_tensor_info *t, const plx_tensor_info *x,
                                  const char *name, int64_t *st, char *buf, size_t size) {
    switch (plx_broadcast_strides(t->dims, t->rank, x->dims, x->rank, st, NULL)) {
    case PLX_GEOM_OK:
        return NULL;
    case PLX_GEOM_BAD_RANK:
        return ocl_refuse(buf, size, "layer_norm: %s has rank %u, X %u", name, t->rank,
                          x->rank);
    default:
        return ocl_refuse(buf, size, "layer_norm: %s does not broadcast to X", name);
    }
}

typedef struct layer_norm_geom {
    uint32_t axis;
    int64_t outer, inner;
    int64_t scale_st[PLX_MAX_RANK], bias_st[PLX_MAX_RANK];
} layer_norm_geom;

static const char *layer_norm_geom_of(const plx_layer_view *l, layer_norm_geom *g, char *buf,
                                      size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_layer_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if (!plx_axis_normalize(desc->axis, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "layer_norm: axis %d is out of range for rank %u",
                          desc->axis, x->rank);
    }
    g->axis = axis;
    g->outer = ocl_dim_product(x, 0, g->axis);
    g->inner = ocl_dim_product(x, g->axis, x->rank);
    memset(g->bias_st, 0, sizeof g->bias_st);
    if ((why = norm_broadcast(&l->inputs[1], x, "scale", g->scale_st, buf, size))) {
        return why;
    }
    if (l->input_count == 3 &&
        (why = norm_broadcast(&l->inputs[2], x, "bias", g->bias_st, buf, size))) {
        return why;
    }
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

const char *ocl_check_layer_norm(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    layer_norm_geom g;
    return layer_norm_geom_of(l, &g, buf, size);
}

bool ocl_prepare_layer_norm(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_layer_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    layer_norm_geom g;
    char buf[8];
    layer_norm_geom_of(l, &g, buf, sizeof buf);
    if (g.outer == 0 || g.inner == 0) {
        return true;
    }
    ocl_launch *k;
    size_t wg = 1;
    if (!ocl_kernel_groups(plan, dev, "layer_norm_f32", g.outer, g.inner, &k, &wg, err, size)) {
        return false;
    }
    bool has_bias = l->input_count == 3;
    /* collapse X's dims with both stride sets */
    ocl_shape s;
    memset(&s, 0, sizeof s);
    s.rank = x->rank;
    for (uint32_t d = 0; d < x->rank; d++) {
        s.dims[d] = x->dims[d];
        s.st[0][d] = g.scale_st[d];
        s.st[1][d] = g.bias_st[d];
    }
    ocl_shape_collapse(&s, 2);
    cl_int8 xd = ocl_int8_of(s.dims, s.rank, 1);
    cl_int8 ss = ocl_int8_of(s.st[0], s.rank, 0), bs = ocl_int8_of(s.st[1], s.rank, 0);
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, has_bias ? 2 : 1);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, has_bias ? 1 : 0);
    ocl_arg_int(k, (int32_t)g.outer);
    ocl_arg_int(k, (int32_t)g.inner);
    ocl_arg_int(k, (int32_t)s.rank);
    ocl_arg_value(k, &xd, sizeof xd);
    ocl_arg_value(k, &ss, sizeof ss);
    ocl_arg_value(k, &bs, sizeof bs);
    ocl_arg_float(k, desc->epsilon);
    ocl_arg_local(k, wg * sizeof(float));
    return true;
}

const char *ocl_check_instance_norm(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                    size_t size) {
    (void)dev;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return ocl_refuse(buf, size, "instance_norm takes X of rank >= 3, not %u", x->rank);
    }
    for (uint32_t i = 1; i < 3; i++) {
        const plx_tensor_info *p = &l->inputs[i];
        if (p->rank != 1 || p->dims[0] != x->dims[1]) {
            return ocl_refuse(buf, size, "instance_norm: input %u must be 1-D with X's %lld channels",
                              i, (long long)x->dims[1]);
        }
    }
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

bool ocl_prepare_instance_norm(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                               char *err, size_t size) {
    const plx_instance_norm_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    int64_t planes = x->dims[0] * x->dims[1], inner = ocl_dim_product(x, 2, x->rank);
    if (planes == 0 || inner == 0) {
        return true;
    }
    ocl_launch *k;
    size_t wg = 1;
    if (!ocl_kernel_groups(plan, dev, "instance_norm_f32", planes, inner, &k, &wg, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, 2);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)planes);
    ocl_arg_int(k, (int32_t)x->dims[1]);
    ocl_arg_int(k, (int32_t)inner);
    ocl_arg_float(k, desc->epsilon);
    ocl_arg_local(k, wg * sizeof(float));
    return true;
}

/* ---- softmax ------------------------------------------------------------ */

static const char *softmax_geom(const plx_layer_view *l, int64_t *outer, int64_t *len,
                                int64_t *inner, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (!why) {
        why = ocl_require_f32(l, buf, size);
    }
    if (why) {
        return why;
    }
    const plx_softmax_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    uint32_t axis = 0;
    if (!plx_axis_normalize(desc->axis, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "softmax: axis %d is out of range for rank %u",
                          desc->axis, x->rank);
    }
    *outer = ocl_dim_product(x, 0, (uint32_t)axis);
    *len = x->dims[axis];
    *inner = ocl_dim_product(x, (uint32_t)axis + 1, x->rank);
    return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
}

const char *ocl_check_softmax(const ocl_device *dev, const plx_layer_view *l, char *buf,
                              size_t size) {
    (void)dev;
    int64_t o, n, i;
    return softmax_geom(l, &o, &n, &i, buf, size);
}

bool ocl_prepare_softmax(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                         char *err, size_t size) {
    int64_t outer, len, inner;
    char buf[8];
    softmax_geom(l, &outer, &len, &inner, buf, sizeof buf);
    int64_t lines = outer * inner;
    if (lines == 0 || len == 0) {
        return true;
    }
    ocl_launch *k;
    size_t wg = 1;
    if (!ocl_kernel_groups(plan, dev, "softmax_f32", lines, len, &k, &wg, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)lines);
    ocl_arg_int(k, (int32_t)len);
    ocl_arg_int(k, (int32_t)inner);
    ocl_arg_int(k, ((const plx_softmax_desc *)l->desc)->log ? 1 : 0);
    ocl_arg_local(k, wg * sizeof(float));
    return true;
}

/* ---- reduce, arg_reduce ------------------------------------------------- */

typedef struct reduce_geom {
    bool identity;
    ocl_shape kept, red;
} reduce_geom;

static const char *reduce_geom_of(const plx_layer_view *l, reduce_geom *g, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if ((unsigned)desc->func > PLX_REDUCE_LOG_SUM_EXP) {
        return ocl_refuse(buf, size, "reduce: function %d is not implemented",
                          (int)desc->func);
    }
    if ((why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (desc->axis_count > x->rank || desc->axis_count > PLX_MAX_RANK) {
        return ocl_refuse(buf, size, "reduce: %u axes for rank %u", desc->axis_count,
                          x->rank);
    }
    bool reduced[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < desc->axis_count; i++) {
        uint32_t a = 0;
        if (!plx_axis_normalize(desc->axes[i], x->rank, false, &a) || reduced[a]) {
            return ocl_refuse(buf, size, "reduce: axis %d is out of range or repeated",
                              desc->axes[i]);
        }
        reduced[a] = true;
    }
    g->identity = desc->axis_count == 0 && desc->noop_with_empty_axes;
    if (g->identity) {
        return ocl_require_shape(l, 0, x->rank, x->dims, buf, size);
    }
    int64_t st[PLX_MAX_RANK], out_dims[PLX_MAX_RANK];
    uint32_t out_rank = 0;
    plx_tensor_info_strides(x, st);
    memset(&g->kept, 0, sizeof g->kept);
    memset(&g->red, 0, sizeof g->red);
    for (uint32_t i = 0; i < x->rank; i++) {
        if (desc->axis_count == 0 || reduced[i]) {
            g->red.dims[g->red.rank] = x->dims[i];
            g->red.st[0][g->red.rank++] = st[i];
            if (desc->keepdims) {
                out_dims[out_rank++] = 1;
            }
        } else {
            g->kept.dims[g->kept.rank] = x->dims[i];
            g->kept.st[0][g->kept.rank++] = st[i];
            out_dims[out_rank++] = x->dims[i];
        }
    }
    return ocl_require_shape(l, 0, out_rank, out_dims, buf, size);
}

const char *ocl_check_reduce(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    reduce_geom g;
    return reduce_geom_of(l, &g, buf, size);
}

bool ocl_prepare_reduce(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    reduce_geom g;
    char buf[8];
    reduce_geom_of(l, &g, buf, sizeof buf);
    if (g.identity) {
        size_t bytes = (size_t)ocl_numel(&l->inputs[0]) * sizeof(float);
        return bytes == 0 || ocl_plan_copy(plan, 0, 0, bytes, err, size);
    }
    return reduce_launch(dev, plan, (int)((const plx_reduce_desc *)l->desc)->func, &g.kept, &g.red,
                         err, size);
}

static const char *arg_reduce_geom(const plx_layer_view *l, int64_t *outer, int64_t *len,
                                   int64_t *inner, char *buf, size_t size) {
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    const plx_arg_reduce_desc *desc = l->desc;
    const plx_tensor_info *x = &l->inputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32) {
        return ocl_refuse(buf, size, "arg_reduce needs float32, got %s",
                          plx_dtype_name(x->dtype));
    }
    if (l->outputs[0].dtype != PLX_DTYPE_INT64) {
        return ocl_refuse(buf, size, "arg_reduce: the output is %s, not int64",
                          plx_dtype_name(l->outputs[0].dtype));
    }
    uint32_t axis = 0;
    if (!plx_axis_normalize(desc->axis, x->rank, false, &axis)) {
        return ocl_refuse(buf, size, "arg_reduce: axis %d is out of range for rank %u",
                          (int)desc->axis, x->rank);
    }
    *outer = ocl_dim_product(x, 0, axis);
    *len = x->dims[axis];
    *inner = ocl_dim_product(x, axis + 1, x->rank);
    if (*len == 0 && *outer * *inner > 0) {
        return ocl_refuse(buf, size, "arg_reduce: axis %u of X is empty", axis);
    }
    int64_t dims[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (i != axis) {
            dims[r++] = x->dims[i];
        } else if (desc->keepdims) {
            dims[r++] = 1;
        }
    }
    return ocl_require_shape(l, 0, r, dims, buf, size);
}

const char *ocl_check_arg_reduce(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                 size_t size) {
    (void)dev;
    int64_t o, n, i;
    return arg_reduce_geom(l, &o, &n, &i, buf, size);
}

bool ocl_prepare_arg_reduce(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                            char *err, size_t size) {
    const plx_arg_reduce_desc *desc = l->desc;
    int64_t outer, len, inner;
    char buf[8];
    arg_reduce_geom(l, &outer, &len, &inner, buf, sizeof buf);
    int64_t outputs = outer * inner;
    if (outputs == 0) {
        return true;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "arg_reduce_f32", outputs, &k, err, size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_int(k, (int32_t)outputs);
    ocl_arg_int(k, (int32_t)len);
    ocl_arg_int(k, (int32_t)inner);
    ocl_arg_int(k, desc->select_min ? 1 : 0);
    ocl_arg_int(k, desc->select_last_index ? 1 : 0);
    return true;
}

/* ---- resize ------------------------------------------------------------- */

/* The host validated mode, coordinate transformation, nearest mode, rank
 * 4 and Y's N and C (docs/backend-abi.md); left to refuse: the modes and
 * coordinate transformations of ABI 1.3 (cubic, antialiased,
 * half_pixel_symmetric, tf_crop_and_resize), the index limit, a dtype
 * other than float32, an empty dim resized to a non-empty one. */
static const char *resize_geom_of(const plx_layer_view *l, plx_resize_geom *g, char *buf,
                                  size_t size) {
    const plx_resize_desc *desc = l->desc;
    if (desc->mode != PLX_RESIZE_NEAREST && desc->mode != PLX_RESIZE_LINEAR) {
        const char *name = plx_resize_mode_name(desc->mode);
        return ocl_refuse(buf, size, "resize runs nearest and linear modes only, "
                          "not %s", name ? name : "an unknown mode");
    }
    if ((unsigned)desc->coord > PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN) {
        const char *name = plx_resize_coord_name(desc->coord);
        return ocl_refuse(buf, size, "resize does not run %s coordinates",
                          name ? name : "unknown");
    }
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    int dim = 0;
    plx_geom_status s =
        plx_resize_geom_of(&l->inputs[0], &l->outputs[0], desc->scales, g, &dim);
    if (s == PLX_GEOM_BAD_RANK) {
        return ocl_refuse(buf, size, "resize takes rank-4 (NCHW) X and Y with X's N and C");
    }
    if (s != PLX_GEOM_OK) {
        return ocl_refuse(buf, size, "resize: %s (spatial dim %d)", plx_geom_status_text(s),
                        dim);
    }
    return NULL;
}

const char *ocl_check_resize(const ocl_device *dev, const plx_layer_view *l, char *buf,
                             size_t size) {
    (void)dev;
    plx_resize_geom g;
    return resize_geom_of(l, &g, buf, size);
}

/* Source rows then columns: nearest indices (OH + OW ints), or linear taps
 * (h0, h1, w0, w1: 2*OH + 2*OW ints) and second-tap weights (OH + OW
 * floats). */
bool ocl_prepare_resize(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                        char *err, size_t size) {
    const plx_resize_desc *desc = l->desc;
    plx_resize_geom g;
    char buf[8];
    resize_geom_of(l, &g, buf, sizeof buf);
    int64_t n = ocl_numel(&l->outputs[0]);
    if (n == 0) {
        return true;
    }
    bool linear = desc->mode == PLX_RESIZE_LINEAR;
    int64_t oh = g.out[0], ow = g.out[1];
    size_t ni = (size_t)(linear ? 2 * (oh + ow) : oh + ow);
    int32_t *idx = malloc(ni * sizeof *idx);
    float *wt = malloc((size_t)(oh + ow) * sizeof *wt);
    if (!idx || !wt) {
        free(idx);
        free(wt);
        return ocl_fail(err, size, "gpu_opencl: resize: out of memory");
    }
    for (int axis = 0; axis < 2; axis++) {
        int64_t out = g.out[axis], in = g.in[axis];
        for (int64_t o = 0; o < out; o++) {
            double c = plx_resize_coordinate(desc->coord, o, g.scale[axis], in);
            if (!linear) {
                idx[(axis ? oh : 0) + o] = (int32_t)plx_resize_nearest_index(desc->nearest, c, in);
                continue;
            }
            int64_t lo, hi;
            float w = (float)plx_resize_linear_taps(c, in, &lo, &hi);
            if (axis == 0) {
                idx[o] = (int32_t)lo;
                idx[oh + o] = (int32_t)hi;
                wt[o] = w;
            } else {
                idx[2 * oh + o] = (int32_t)lo;
                idx[2 * oh + ow + o] = (int32_t)hi;
                wt[oh + o] = w;
            }
        }
    }
    uint32_t idx_slot = 0, wt_slot = 0;
    bool ok = ocl_plan_aux(plan, dev, idx, ni * sizeof *idx, &idx_slot, err, size) &&
              (!linear ||
               ocl_plan_aux(plan, dev, wt, (size_t)(oh + ow) * sizeof *wt, &wt_slot, err, size));
    free(idx);
    free(wt);
    if (!ok) {
        return false;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, linear ? "resize_linear_f32" : "resize_nearest_f32", n, &k, err,
                       size)) {
        return false;
    }
    ocl_arg_input(k, 0);
    ocl_arg_output(k, 0);
    ocl_arg_aux(k, idx_slot);
    if (linear) {
        ocl_arg_aux(k, wt_slot);
    }
    ocl_arg_int(k, (int32_t)g.nc);
    ocl_arg_int(k, (int32_t)g.in[0]);
    ocl_arg_int(k, (int32_t)g.in[1]);
    ocl_arg_int(k, (int32_t)oh);
    ocl_arg_int(k, (int32_t)ow);
    return true;
}

/* ---- deform_conv -------------------------------------------------------- */

const char *ocl_check_deform_conv(const ocl_device *dev, const plx_layer_view *l, char *buf,
                                  size_t size) {
    (void)dev;
    const plx_deform_conv_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *off = &l->inputs[2];
    const plx_tensor_info *y = &l->outputs[0];
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why || (why = ocl_require_f32(l, buf, size))) {
        return why;
    }
    if (x->rank != 4 || w->rank != 4 || off->rank != 4 || y->rank != 4 || d->group < 1 ||
        d->offset_group < 1 || d->group > x->dims[1] || d->offset_group > x->dims[1] ||
        x->dims[1] % d->group != 0 || x->dims[1] % d->offset_group != 0 ||
        w->dims[0] % d->group != 0 || w->dims[1] != x->dims[1] / d->group) {
        return ocl_refuse(buf, size, "deform_conv: X, W, offset and Y must be 4-D, "
                          "with channels that group and offset_group divide");
    }
    int64_t taps = d->offset_group * w->dims[2] * w->dims[3];
    if (y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0] || off->dims[0] != x->dims[0] ||
        off->dims[1] != 2 * taps || off->dims[2] != y->dims[2] || off->dims[3] != y->dims[3] ||
        (l->input_count > 3 && (l->inputs[3].rank != 1 || l->inputs[3].dims[0] != w->dims[0])) ||
        (l->input_count > 4 &&
         (l->inputs[4].rank != 4 || l->inputs[4].dims[0] != x->dims[0] ||
          l->inputs[4].dims[1] != taps || l->inputs[4].dims[2] != y->dims[2] ||
          l->inputs[4].dims[3] != y->dims[3]))) {
        return ocl_refuse(buf, size, "deform_conv: Y, offset, B or mask has a shape "
                          "that does not match X and W");
    }
    for (int k = 0; k < 2; k++) {
        int64_t in = x->dims[2 + k], kk = w->dims[2 + k], o = y->dims[2 + k];
        if (d->strides[k] < 1 || d->dilations[k] < 1 || d->pads_begin[k] < 0 ||
            d->pads_end[k] < 0 || d->strides[k] > GEOM_LIMIT || d->dilations[k] > GEOM_LIMIT ||
            d->pads_begin[k] > GEOM_LIMIT || d->pads_end[k] > GEOM_LIMIT || kk < 1 ||
            kk > GEOM_LIMIT) {
            return ocl_refuse(buf, size, "deform_conv: strides and dilations must be "
                              ">= 1, pads >= 0, all within the kernels' int range");
        }
        int64_t span = (kk - 1) * d->dilations[k] + 1, padded = in + d->pads_begin[k] + d->pads_end[k];
        if (padded < span || o != (padded - span) / d->strides[k] + 1) {
            return ocl_refuse(buf, size, "deform_conv: the output size does not match "
                              "the kernel, strides, dilations and pads");
        }
    }
    return NULL;
}

bool ocl_prepare_deform_conv(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                             char *err, size_t size) {
    const plx_deform_conv_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    int64_t n = ocl_numel(y);
    if (n == 0) {
        return true;
    }
    ocl_launch *k;
    if (!ocl_kernel_1d(plan, dev, "deform_conv_f32", n, &k, err, size)) {
        return false;
    }
    bool has_bias = l->input_count > 3, has_mask = l->input_count > 4;
    ocl_arg_input(k, 0);
    ocl_arg_input(k, 1);
    ocl_arg_input(k, 2);
    ocl_arg_input(k, has_bias ? 3 : 0); /* unread without */
    ocl_arg_input(k, has_mask ? 4 : 0);
    ocl_arg_output(k, 0);
    const int64_t v[16] = {x->dims[0],       x->dims[1],       x->dims[2],     x->dims[3],
                           w->dims[0],       w->dims[2],       w->dims[3],     y->dims[2],
                           y->dims[3],       d->strides[0],    d->strides[1],  d->dilations[0],
                           d->dilations[1],  d->pads_begin[0], d->pads_begin[1], d->group};
    cl_int16 geom;
    for (int i = 0; i < 16; i++) {
        geom.s[i] = (cl_int)v[i];
    }
    ocl_arg_value(k, &geom, sizeof geom);
    ocl_arg_int(k, (int32_t)d->offset_group);
    ocl_arg_int(k, has_bias ? 1 : 0);
    ocl_arg_int(k, has_mask ? 1 : 0);
    return true;
}

/* ---- lstm, gru, rnn ----------------------------------------------------- */

/* The attributes of the three recurrent descriptors that the kernels read. */
typedef struct rnn_attrs {
    plx_rnn_direction direction;
    int64_t hidden;
    float clip;
    const plx_rnn_activation *acts; /* per direction `per` of them */
    uint32_t per;
} rnn_attrs;

static void rnn_attrs_of(const plx_layer_view *l, rnn_attrs *at) {
    if (l->op == PLX_OP_LSTM) {
        const plx_lstm_desc *d = l->desc;
        *at = (rnn_attrs){d->direction, d->hidden_size, d->clip, &d->activations[0][0], 3};
    } else if (l->op == PLX_OP_GRU) {
        const plx_gru_desc *d = l->desc;
        *at = (rnn_attrs){d->direction, d->hidden_size, d->clip, &d->activations[0][0], 2};
    } else {
        const plx_rnn_desc *d = l->desc;
        *at = (rnn_attrs){d->direction, d->hidden_size, d->clip, &d->activations[0][0], 1};
    }
}

static bool rnn_act_ok(plx_activation_func f) {
    switch (f) {
    case PLX_ACT_RELU:
    case PLX_ACT_TANH:
    case PLX_ACT_SIGMOID:
    case PLX_ACT_AFFINE:
    case PLX_ACT_LEAKY_RELU:
    case PLX_ACT_THRESHOLDED_RELU:
    case PLX_ACT_SCALED_TANH:
    case PLX_ACT_HARD_SIGMOID:
    case PLX_ACT_ELU:
    case PLX_ACT_SOFTSIGN:
    case PLX_ACT_SOFTPLUS: return true;
    default: return false;
    }
}

static bool rnn_dims_are(const plx_tensor_info *t, const int64_t *dims, uint32_t rank) {
    if (t->rank != rank) {
        return false;
    }
    for (uint32_t i = 0; i < rank; i++) {
        if (t->dims[i] != dims[i]) {
            return false;
        }
    }
    return true;
}

const char *ocl_check_lstm(const ocl_device *dev, const plx_layer_view *l, char *buf,
                           size_t size) {
    (void)dev;
    const char *op = plx_op_name(l->op);
    bool lstm = l->op == PLX_OP_LSTM;
    int64_t gates = lstm ? 4 : l->op == PLX_OP_GRU ? 3 : 1;
    uint32_t n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2;
    const char *why = ocl_check_index_limit(l, buf, size);
    if (why) {
        return why;
    }
    if (l->input_count != n_in || l->output_count != n_out) {
        return ocl_refuse(buf, size, "%s needs %u inputs and %u outputs", op, n_in,
                          n_out);
    }
    for (uint32_t i = 0; i < n_in + n_out; i++) {
        const plx_tensor_info *t = i < n_in ? &l->inputs[i] : &l->outputs[i - n_in];
        plx_dtype want = i == 4 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32;
        if (t->dtype != want) {
            return ocl_refuse(buf, size, "%s needs float32 (sequence_lens int32), got "
                              "%s (%s %u)", op, plx_dtype_name(t->dtype),
                              i < n_in ? "input" : "output", i < n_in ? i : i - n_in);
        }
    }
    rnn_attrs at;
    rnn_attrs_of(l, &at);
    if ((unsigned)at.direction > PLX_RNN_BIDIRECTIONAL || at.hidden < 1 ||
        at.hidden > OCL_INDEX_LIMIT / 8 || !(at.clip >= 0.0f) || !isfinite(at.clip)) {
        return ocl_refuse(buf, size, "%s: direction %d, hidden_size %lld or clip %g "
                          "is out of range", op, (int)at.direction, (long long)at.hidden,
                          (double)at.clip);
    }
    int64_t D = at.direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    for (int64_t d = 0; d < D; d++) {
        for (uint32_t k = 0; k < at.per; k++) {
            const plx_rnn_activation *a = &at.acts[d * at.per + k];
            if (!rnn_act_ok(a->func) || !isfinite(a->alpha) || !isfinite(a->beta)) {
                return ocl_refuse(buf, size, "%s: activations[%lld][%u] is not a "
                                  "recurrent activation with finite alpha and beta", op,
                                  (long long)d, k);
            }
        }
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank != 3) {
        return ocl_refuse(buf, size, "%s: X must have rank 3, not %u", op, x->rank);
    }
    int64_t S = x->dims[0], B = x->dims[1], I = x->dims[2], H = at.hidden;
    const int64_t w[3] = {D, gates * H, I}, r[3] = {D, gates * H, H};
    const int64_t bb[2] = {D, 2 * gates * H}, lens[1] = {B}, p[2] = {D, 3 * H};
    const int64_t state[3] = {D, B, H}, y[4] = {S, D, B, H};
    if (!rnn_dims_are(&l->inputs[1], w, 3) || !rnn_dims_are(&l->inputs[2], r, 3) ||
        !rnn_dims_are(&l->inputs[3], bb, 2) || !rnn_dims_are(&l->inputs[4], lens, 1) ||
        !rnn_dims_are(&l->inputs[5], state, 3) ||
        (lstm && (!rnn_dims_are(&l->inputs[6], state, 3) || !rnn_dims_are(&l->inputs[7], p, 2))) ||
        !rnn_dims_are(&l->outputs[0], y, 4) || !rnn_dims_are(&l->outputs[1], state, 3) ||
        (lstm && !rnn_dims_are(&l->outputs[2], state, 3))) {
        return ocl_refuse(buf, size, "%s: an input or output's shape does not match "
                          "X and hidden_size", op);
    }
    if (D * B * (gates + 1) * H > OCL_INDEX_LIMIT) {
        return ocl_refuse(buf, size, "%s: the gate scratch would be too large", op);
    }
    return NULL;
}

bool ocl_prepare_lstm(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan, char *err,
                      size_t size) {
    bool lstm = l->op == PLX_OP_LSTM, gru = l->op == PLX_OP_GRU;
    int64_t gates = lstm ? 4 : gru ? 3 : 1;
    rnn_attrs at;
    rnn_attrs_of(l, &at);
    const plx_tensor_info *x = &l->inputs[0];
    int64_t S = x->dims[0], B = x->dims[1], I = x->dims[2], H = at.hidden;
    int64_t D = at.direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    if (S * B == 0) {
        return true;
    }
    int64_t per_group = gates * H + (gru ? H : 0);
    uint32_t scratch = 0, flag = 0;
    if (!ocl_plan_aux(plan, dev, NULL, (size_t)(D * B * per_group) * sizeof(cl_float), &scratch,
                      err, size) ||
        !ocl_plan_index_check(plan, dev, l->name, plx_op_name(l->op), 4, false, &flag, err,
                              size)) {
        return false;
    }
    snprintf(plan->check.value_name, sizeof plan->check.value_name, "length");
    snprintf(plan->check.tensor_name, sizeof plan->check.tensor_name, "sequence_lens");
    const char *name = lstm ? "lstm_f32" : gru ? "gru_f32" : "rnn_f32";
    ocl_launch *k;
    size_t wg = 1;
    if (!ocl_kernel_groups(plan, dev, name, D * B, gates * H, &k, &wg, err, size)) {
        return false;
    }
    for (uint32_t i = 0; i < l->input_count; i++) {
        ocl_arg_input(k, i);
    }
    for (uint32_t i = 0; i < l->output_count; i++) {
        ocl_arg_output(k, i);
    }
    ocl_arg_aux(k, scratch);
    ocl_arg_int(k, (int32_t)S);
    ocl_arg_int(k, (int32_t)B);
    ocl_arg_int(k, (int32_t)I);
    ocl_arg_int(k, (int32_t)H);
    ocl_arg_int(k, (int32_t)D);
    ocl_arg_int(k, (int32_t)at.direction);
    ocl_arg_float(k, at.clip);
    ocl_arg_int(k, lstm ? ((const plx_lstm_desc *)l->desc)->input_forget
                   : gru ? ((const plx_gru_desc *)l->desc)->linear_before_reset
                         : 0);
    cl_int8 funcs;
    cl_float8 alphas, betas;
    memset(&funcs, 0, sizeof funcs);
    memset(&alphas, 0, sizeof alphas);
    memset(&betas, 0, sizeof betas);
    for (uint32_t i = 0; i < 2 * at.per; i++) {
        funcs.s[i] = (cl_int)at.acts[i].func;
        alphas.s[i] = at.acts[i].alpha;
        betas.s[i] = at.acts[i].beta;
    }
    ocl_arg_value(k, &funcs, sizeof funcs);
    ocl_arg_value(k, &alphas, sizeof alphas);
    ocl_arg_value(k, &betas, sizeof betas);
    ocl_arg_aux(k, flag);
    return true;
}
