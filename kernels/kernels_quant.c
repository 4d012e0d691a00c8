/* The 8-bit integer products (plexus/ops.h, "Quantized layers"): conv and
 * matmul on quantized tensors, conv_integer and matmul_integer, all on
 * cpu_ref's int8 GEMM (qgemm.h), and dynamic_quantize.
 *
 * A conv is one GEMM per image and group with the activations as A (rows
 * are output pixels, columns the taps: im2col writes [pixels, taps], a
 * pointwise conv reads X's [channels, pixels] in place as A transposed) and
 * the weights as B (W's [M, taps] read transposed: packed once when W is
 * constant); the result is written straight into NCHW (C transposed: the
 * GEMM's output stage writes 8-bit columns in blocks, qgemm.c). A conv
 * with many more pixels than output channels takes the channel-rows form
 * instead (qconv_by_rows): W times X's columns, one row of C per output
 * channel. Depthwise convs
 * (one input channel per group) run a direct loop instead, since a GEMM
 * with one output column per group would waste its tiles. Padding reads
 * X's zero point: the real value 0.
 *
 * As in kernels_conv.c, the prepare functions check what the kernel
 * supports of a validated layer and are called again by the run functions
 * so that no loop trusts an inconsistent shape. Running allocates nothing:
 * im2col's columns, X's channels-last copy, the per-channel scales and zero
 * points and the GEMM's panels live in the workspace the caller sized with
 * plxk_kernel_workspace (preparing, once at load, takes a temporary for
 * the reordered weights it packs). */
#include "kernels_compute.h"
#include "depthwise.h"
#include "qgemm.h"
#include "qmap.h"

#include <math.h>
#include <plexus/geometry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool is_q8(plx_dtype d) {
    return d == PLX_DTYPE_INT8 || d == PLX_DTYPE_UINT8;
}

static int32_t tensor_zero_point(const plx_tensor_info *t) {
    return t->quant.kind == PLX_QUANT_PER_TENSOR ? t->quant.zero_point : 0;
}

/* Element i of an int8 or uint8 buffer. */
static int32_t load_q8(const void *p, plx_dtype d, size_t i) {
    return d == PLX_DTYPE_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* How one quantized or integer product reads its zero points and writes
 * its output: from the tensor infos (conv, matmul on quantized tensors) or
 * from the zero-point inputs (conv_integer, matmul_integer). */
typedef struct qproduct {
    bool integer;          /* conv_integer / matmul_integer: int32 output, zero points from inputs */
    bool w_zp_input;       /* the weights' zero points are input 3 */
    bool w_zp_per_channel; /* ... one per output channel or column */
    int64_t channels;      /* M (conv) or N (matmul) */
} qproduct;

/* Checks the dtypes and zero points of a quantized or integer product: X
 * (or A) and W (or B) int8/uint8; zero-point inputs of their operand's
 * dtype, X's one value (cpu_ref has no per-row zero points of A), W's one
 * or `channels`. */
static const char *qproduct_prepare(const plx_layer_view *l, const char *op, int64_t channels,
                                    qproduct *q, char *buf, size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *w = &l->inputs[1], *y = &l->outputs[0];
    memset(q, 0, sizeof *q);
    q->integer = l->op == PLX_OP_CONV_INTEGER || l->op == PLX_OP_MATMUL_INTEGER;
    q->channels = channels;
    if (!is_q8(x->dtype) || !is_q8(w->dtype)) {
        return plxk_refuse(buf, size, "%s: multiplies int8 and uint8 operands, not %s and %s",
                           op, plx_dtype_name(x->dtype), plx_dtype_name(w->dtype));
    }
    if (q->integer) {
        if (y->dtype != PLX_DTYPE_INT32) {
            return plxk_refuse(buf, size, "%s: output must be int32, not %s", op,
                               plx_dtype_name(y->dtype));
        }
        if (l->input_count > 2 && (l->inputs[2].dtype != x->dtype ||
                                   plxk_element_count(&l->inputs[2]) != 1)) {
            return plxk_refuse(buf, size, "%s: takes one zero point of %s's dtype for the "
                               "first operand, not %s of %lld values", op,
                               plx_dtype_name(x->dtype), plx_dtype_name(l->inputs[2].dtype),
                               (long long)plxk_element_count(&l->inputs[2]));
        }
        if (l->input_count > 3) {
            size_t nz = plxk_element_count(&l->inputs[3]);
            if (l->inputs[3].dtype != w->dtype || (nz != 1 && (int64_t)nz != channels)) {
                return plxk_refuse(buf, size, "%s: the second operand's zero point must be %s, "
                                   "one value or %lld", op, plx_dtype_name(w->dtype),
                                   (long long)channels);
            }
            q->w_zp_input = true;
            q->w_zp_per_channel = nz != 1;
        }
        return NULL;
    }
    if (x->quant.kind != PLX_QUANT_PER_TENSOR || !is_q8(y->dtype) ||
        y->quant.kind != PLX_QUANT_PER_TENSOR || w->quant.kind == PLX_QUANT_NONE) {
        return plxk_refuse(buf, size, "%s: a quantized product needs per-tensor parameters on its "
                           "input and output and parameters on its weights", op);
    }
    if (w->quant.kind == PLX_QUANT_PER_AXIS && w->dims[w->quant.axis] != channels) {
        return plxk_refuse(buf, size, "%s: the weights' per-axis parameters are not per output "
                           "channel", op);
    }
    if (l->input_count > 2 && l->inputs[2].dtype != PLX_DTYPE_INT32) {
        return plxk_refuse(buf, size, "%s: a quantized bias must be int32, not %s", op,
                           plx_dtype_name(l->inputs[2].dtype));
    }
    return NULL;
}

/* The weights' zero point of channel j (tensor info or input 3). */
static int32_t weight_zero_point(const qproduct *q, const plx_layer_view *l, const void *zp_data,
                                 int64_t j) {
    if (q->integer) {
        if (!q->w_zp_input) {
            return 0;
        }
        return load_q8(zp_data, l->inputs[3].dtype, q->w_zp_per_channel ? (size_t)j : 0);
    }
    const plx_quant_params *wq = &l->inputs[1].quant;
    if (wq->kind == PLX_QUANT_PER_AXIS) {
        return wq->zero_points ? wq->zero_points[j] : 0;
    }
    return wq->zero_point;
}

/* Requantization scale of channel j: sx * sw[j] / sy, in float32 as ONNX
 * Runtime computes it. */
static float requant_scale(const plx_layer_view *l, int64_t j) {
    const plx_quant_params *xq = &l->inputs[0].quant, *wq = &l->inputs[1].quant;
    float sw = wq->kind == PLX_QUANT_PER_AXIS ? wq->scales[j] : wq->scale;
    return xq->scale * sw / l->outputs[0].quant.scale;
}

/* The per-channel arrays a run needs in its workspace: the output scales
 * (quantized) and the weights' zero points as int32 (both kinds). */
static size_t channel_arrays_bytes(int64_t channels) {
    return 2 * plxk_round_ws((size_t)channels * 4);
}

static void fill_channel_arrays(const qproduct *q, const plxk_kernel_args *a, void *ws,
                                float **scales, int32_t **zps) {
    const plx_layer_view *l = a->layer;
    size_t off = plxk_round_ws((size_t)q->channels * 4);
    *scales = ws;
    *zps = (int32_t *)((char *)ws + off);
    const void *zp_data = q->w_zp_input ? a->inputs[3] : NULL;
    for (int64_t j = 0; j < q->channels; j++) {
        (*scales)[j] = q->integer ? 1.0f : requant_scale(l, j);
        (*zps)[j] = weight_zero_point(q, l, zp_data, j);
    }
}

/* The workspace of a run: the per-channel arrays filled (scales, zero
 * points), *left bytes of it, from ws, past them. NULL, with args failed,
 * when it is short. */
static char *channel_workspace(const plxk_kernel_args *args, const qproduct *q, int64_t channels,
                               float **scales, int32_t **zps, size_t *left) {
    void *ws = plxk_ws_at(args, 0, left);
    size_t arrays = channel_arrays_bytes(channels);
    if (!ws || *left < arrays) {
        plxk_fail(args, "%s: layer '%s': workspace of %zu bytes is short",
                  plx_op_name(args->layer->op), plxk_layer_name(args->layer), *left);
        return NULL;
    }
    fill_channel_arrays(q, args, ws, scales, zps);
    *left -= arrays;
    return (char *)ws + arrays;
}

/* The common arguments of one product: operands' signedness and zero
 * points, the output stage. */
static plxk_qgemm_args qgemm_base(const qproduct *q, const plxk_kernel_args *a,
                                  const float *scales, const int32_t *zps) {
    const plx_layer_view *l = a->layer;
    plxk_qgemm_args g;
    memset(&g, 0, sizeof g);
    g.a_signed = l->inputs[0].dtype == PLX_DTYPE_INT8;
    g.b_signed = l->inputs[1].dtype == PLX_DTYPE_INT8;
    if (q->integer) {
        g.a_zero_point = l->input_count > 2 ? load_q8(a->inputs[2], l->inputs[2].dtype, 0) : 0;
        g.output = PLXK_QOUT_INT32;
    } else {
        g.a_zero_point = tensor_zero_point(&l->inputs[0]);
        g.output = l->outputs[0].dtype == PLX_DTYPE_INT8 ? PLXK_QOUT_INT8 : PLXK_QOUT_UINT8;
        g.scale = scales;
        g.scale_stride = 1;
        g.out_zero_point = l->outputs[0].quant.zero_point;
    }
    g.b_zero_points = zps;
    return g;
}

static bool run_qgemm(const plxk_kernel_args *a, const plxk_qgemm_args *g, void *ws, size_t left,
                      const char *op) {
    if (!plxk_qgemm(plxk_isa_of(a->compute), plxk_pool_of(a->compute), g, ws, left)) {
        return plxk_fail(a, "%s: layer '%s': the int8 product of %zu x %zu x %zu could not run "
                         "(workspace of %zu bytes)", op, plxk_layer_name(a->layer), g->m, g->n,
                         g->k, left);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* conv on quantized tensors, conv_integer                             */
/* ------------------------------------------------------------------ */

static const char *qconv_prepare(const plx_layer_view *l, plx_window_geom *g, qproduct *q,
                                 char *buf, size_t size) {
    char msg[224];
    /* conv_integer's inputs 2 and 3 are zero points, not a bias: the
     * geometry sees X and W only */
    plx_layer_view xw = *l;
    if (l->op == PLX_OP_CONV_INTEGER) {
        xw.input_count = 2;
    }
    const char *why = plx_window_geom_conv(&xw, PLXK_ATTR_LIMIT, g, msg, sizeof msg);
    if (why) {
        return plxk_refuse(buf, size, "%s", why);
    }
    return qproduct_prepare(l, plx_op_name(l->op), g->m, q, buf, size);
}

/* A depthwise conv (one input and one output channel per group) whose sums
 * are exact in float32: every product (x - zx)(w - zw) is at most 255 * 255
 * in magnitude, so with at most QDW_MAX_TAPS taps every partial sum is an
 * integer below 2^24, which float32 holds exactly (fused multiply-adds
 * too). Such a conv runs on cpu_ref's float depthwise kernel and gives the
 * integer sums bit for bit; a larger kernel takes the GEMM path. */
#define QDW_MAX_TAPS 258

static bool qconv_depthwise(const plx_window_geom *g) {
    return g->c == g->group && g->m == g->group && g->group > 1 &&
           g->k[0] * g->k[1] <= QDW_MAX_TAPS;
}

static bool qconv_pointwise(const plx_window_geom *g) {
    for (int i = 0; i < 2; i++) {
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] != 0 || g->pe[i] != 0) {
            return false;
        }
    }
    return true;
}

/* The extent of X padded as far as the windows reach: the pads, or more
 * where strides do not divide evenly. */
static void padded_dims(const plx_window_geom *g, int64_t *ph, int64_t *pw) {
    *ph = g->pb[0] + g->in[0] + g->pe[0];
    *pw = g->pb[1] + g->in[1] + g->pe[1];
    /* windows may reach past pe where strides do not divide evenly */
    int64_t need_h = (g->out[0] - 1) * g->s[0] + (g->k[0] - 1) * g->d[0] + 1;
    int64_t need_w = (g->out[1] - 1) * g->s[1] + (g->k[1] - 1) * g->d[1] + 1;
    *ph = *ph > need_h ? *ph : need_h;
    *pw = *pw > need_w ? *pw : need_w;
}

/* A conv that is not pointwise gathers its taps from a channels-last copy
 * of X: the K order of its GEMM is (ky, kx, channel), so that the taps of
 * one kernel row are one copy of kw x C/group bytes (dilation 1) or kw
 * copies of C/group. */
/* The padded channels-last copy of one image's group: [ph, pw, cg], the
 * padded extent of padded_dims. */
static size_t qconv_nhwc_bytes(const plx_window_geom *g) {
    int64_t ph, pw;
    padded_dims(g, &ph, &pw);
    return plxk_round_ws((size_t)(ph * pw) * (size_t)(g->c / g->group));
}

/* W's [M, C/g, kh, kw] in the (ky, kx, channel) order of the channels-last
 * taps: [M, kh, kw, C/g]. */
static void reorder_weights(const plx_window_geom *g, const uint8_t *w, uint8_t *out) {
    size_t cg = (size_t)(g->c / g->group), taps = (size_t)(g->k[0] * g->k[1]);
    for (size_t j = 0; j < (size_t)g->m; j++) {
        const uint8_t *src = w + j * cg * taps;
        uint8_t *dst = out + j * cg * taps;
        for (size_t c = 0; c < cg; c++) {
            for (size_t t = 0; t < taps; t++) {
                dst[t * cg + c] = src[c * taps + t];
            }
        }
    }
}

/* The float depthwise kernel's plane of one channel (plxk_depthwise_plane,
 * depthwise.h), without its data pointers. */
static plxk_depthwise_plane qdw_geometry(const plx_window_geom *g) {
    plxk_depthwise_plane p;
    memset(&p, 0, sizeof p);
    p.in_h = g->in[0];
    p.in_w = g->in[1];
    p.k_h = g->k[0];
    p.k_w = g->k[1];
    p.stride_h = g->s[0];
    p.stride_w = g->s[1];
    p.dil_h = g->d[0];
    p.dil_w = g->d[1];
    p.pad_top = g->pb[0];
    p.pad_left = g->pb[1];
    p.out_h = g->out[0];
    p.out_w = g->out[1];
    p.act = PLXK_ACT_NONE;
    return p;
}

/* A thread's slice: X - zx and the sums as float planes, the taps, and the
 * kernel's own scratch. */
static size_t qdw_slice_bytes(const plx_window_geom *g) {
    plxk_depthwise_plane p = qdw_geometry(g);
    return plxk_round_ws((size_t)(g->in[0] * g->in[1]) * sizeof(float)) +
           plxk_round_ws((size_t)(g->out[0] * g->out[1]) * sizeof(float)) +
           plxk_round_ws((size_t)(g->k[0] * g->k[1]) * sizeof(float)) +
           plxk_round_ws((size_t)plxk_depthwise_scratch(&p) * sizeof(float));
}

/* The GEMM shape of one image and group: M pixels, N output channels of
 * the group, K taps. */
static void qconv_dims(const plx_window_geom *g, size_t *m, size_t *n, size_t *k) {
    *m = (size_t)(g->out[0] * g->out[1]);
    *n = (size_t)(g->m / g->group);
    *k = (size_t)(g->c / g->group * g->k[0] * g->k[1]);
}

/* The channel-rows form: Y's [n, pixels] of a group as W's [n, k] times
 * the group's columns [k, pixels] (X itself for a pointwise conv, else its
 * (channel, ky, kx) taps gathered plane by plane), with the GEMM's output
 * stage per row (qgemm.h, per_row). Every row of C is a long run of one
 * output channel's pixels, so the requantizing stage costs per row, not
 * per pixel: the form of convolutions with many more pixels than output
 * channels (stems and the early layers of mobile networks, 16 or 32
 * channels over 100K pixels, where the pixel-rows form spent most of its
 * time in the output stage). W's zero points must be one value (a quantized
 * conv with per-tensor W, or per-channel W whose zero points are equal, as
 * symmetric quantization makes them); conv_integer keeps the other form. */
static bool qconv_by_rows(const plx_layer_view *l, const plx_window_geom *g, const qproduct *q) {
    if (q->integer || qconv_depthwise(g)) {
        return false;
    }
    const plx_quant_params *wq = &l->inputs[1].quant;
    if (wq->kind == PLX_QUANT_PER_AXIS) {
        for (int64_t j = 1; j < g->m; j++) {
            if (!wq->zero_points || wq->zero_points[j] != wq->zero_points[0]) {
                return false;
            }
        }
    }
    size_t m, n, k;
    qconv_dims(g, &m, &n, &k);
    return m >= 8 * n;
}

/* The channel-rows form's columns of one image's group: row (c, ky, kx)
 * holds the pixels' taps of channel c at (ky, kx), X's zero point where the
 * window leaves X. */
typedef struct qcols_job {
    const plx_window_geom *g;
    const uint8_t *x; /* the group's first channel */
    uint8_t *col;
    uint8_t pad;
} qcols_job;

static void qcols_row(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const qcols_job *j = ctx;
    const plx_window_geom *g = j->g;
    int64_t taps = g->k[0] * g->k[1], c = (int64_t)task / taps, t = (int64_t)task % taps;
    int64_t ky = t / g->k[1], kx = t % g->k[1];
    int64_t ih = g->in[0], iw = g->in[1], oh = g->out[0], ow = g->out[1];
    const uint8_t *plane = j->x + c * ih * iw;
    uint8_t *dst = j->col + (size_t)task * (size_t)(oh * ow);
    /* the output columns whose input column is inside X: [lo, hi) */
    int64_t off = kx * g->d[1] - g->pb[1], lo = 0, hi = ow;
    while (lo < ow && lo * g->s[1] + off < 0) {
        lo++;
    }
    while (hi > lo && (hi - 1) * g->s[1] + off >= iw) {
        hi--;
    }
    for (int64_t y = 0; y < oh; y++, dst += ow) {
        int64_t iy = y * g->s[0] + ky * g->d[0] - g->pb[0];
        if (iy < 0 || iy >= ih) {
            memset(dst, j->pad, (size_t)ow);
            continue;
        }
        const uint8_t *src = plane + iy * iw + off;
        memset(dst, j->pad, (size_t)lo);
        if (g->s[1] == 1) {
            memcpy(dst + lo, src + lo, (size_t)(hi - lo));
        } else {
            for (int64_t x = lo; x < hi; x++) {
                dst[x] = src[x * g->s[1]];
            }
        }
        memset(dst + hi, j->pad, (size_t)(ow - hi));
    }
}

/* The channel-rows form of one image's group (qconv_by_rows). */
static bool qconv_rows(const plxk_kernel_args *args, const plx_window_geom *g, const qproduct *q,
                       const float *scales, const int32_t *zps, int64_t img, int64_t gi,
                       uint8_t *col, void *gws, size_t gleft) {
    const plx_layer_view *l = args->layer;
    size_t m, n, k;
    qconv_dims(g, &m, &n, &k);
    size_t cg = (size_t)(g->c / g->group), plane = (size_t)(g->in[0] * g->in[1]);
    const uint8_t *xg = (const uint8_t *)args->inputs[0] +
                        ((size_t)img * (size_t)g->c + (size_t)gi * cg) * plane;
    int32_t zx = tensor_zero_point(&l->inputs[0]);
    plxk_qgemm_args a = qgemm_base(q, args, scales + gi * (int64_t)n, zps);
    a.m = n;
    a.n = m;
    a.k = k;
    a.a = (const uint8_t *)args->inputs[1] + (size_t)gi * n * k;
    a.a_rs = (ptrdiff_t)k;
    a.a_cs = 1;
    a.a_signed = l->inputs[1].dtype == PLX_DTYPE_INT8;
    a.a_zero_point = zps[0];
    if (qconv_pointwise(g)) {
        a.b = xg;
    } else {
        qcols_job job = {g, xg, col, (uint8_t)zx};
        plxk_pool_run(plxk_pool_of(args->compute), k, (double)(k * m) * 0.1, qcols_row, &job);
        a.b = col;
    }
    a.b_rs = (ptrdiff_t)m;
    a.b_cs = 1;
    a.b_signed = l->inputs[0].dtype == PLX_DTYPE_INT8;
    a.b_zero_point = zx;
    a.b_zero_points = NULL;
    a.per_row = true;
    a.bias = l->input_count > 2 ? (const int32_t *)args->inputs[2] + gi * (int64_t)n : NULL;
    a.c = (uint8_t *)args->outputs[0] + ((size_t)img * (size_t)g->m + (size_t)gi * n) * m;
    a.c_rs = (ptrdiff_t)m;
    a.c_cs = 1;
    return run_qgemm(args, &a, gws, gleft, plx_op_name(l->op));
}

static size_t qconv_packed_group_bytes(const plx_window_geom *g, plxk_isa isa) {
    size_t m, n, k;
    qconv_dims(g, &m, &n, &k);
    size_t b = plxk_qgemm_packed_b_size(isa, n, k);
    return b == SIZE_MAX ? SIZE_MAX : plxk_round_ws(b);
}

size_t plxk_workspace_qconv(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_window_geom g;
    qproduct q;
    char buf[8];
    if (qconv_prepare(layer, &g, &q, buf, sizeof buf)) {
        return 0;
    }
    size_t arrays = channel_arrays_bytes(g.m);
    if (qconv_depthwise(&g)) {
        size_t threads = plxk_pool_threads(plxk_pool_of(compute)), slice = qdw_slice_bytes(&g);
        return slice > (SIZE_MAX - arrays) / threads ? SIZE_MAX : arrays + slice * threads;
    }
    size_t m, n, k;
    qconv_dims(&g, &m, &n, &k);
    size_t threads = plxk_pool_threads(plxk_pool_of(compute));
    if (qconv_by_rows(layer, &g, &q)) {
        size_t gemm = plxk_qgemm_workspace_size(plxk_isa_of(compute), n, m, k, threads);
        if (gemm == SIZE_MAX || k > SIZE_MAX / 2 / (m ? m : 1)) {
            return SIZE_MAX;
        }
        /* the columns, unless X is them */
        size_t cols = qconv_pointwise(&g) ? 0 : plxk_round_ws(m * k);
        return arrays + cols + plxk_round_ws(gemm);
    }
    size_t gemm = plxk_qgemm_workspace_size(plxk_isa_of(compute), m, n, k, threads);
    if (gemm == SIZE_MAX || k > SIZE_MAX / 2 / (m ? m : 1)) {
        return SIZE_MAX;
    }
    /* for the channels-last path, im2col's A, X's padded copy and the
     * reordered weights (when they are not prepared) */
    size_t extra = 0;
    if (!qconv_pointwise(&g)) {
        extra = plxk_round_ws(m * k) + qconv_nhwc_bytes(&g) + plxk_round_ws((size_t)g.m * k);
    }
    return arrays + extra + plxk_round_ws(gemm);
}

/* Each group's weights packed, one after the other, when W (and, for
 * conv_integer, its zero point) is constant. */
size_t plxk_prepare_qconv(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                          size_t size) {
    plx_window_geom g;
    qproduct q;
    char buf[8];
    const void *const *cst = layer->input_constants;
    if (qconv_prepare(layer, &g, &q, buf, sizeof buf) || qconv_depthwise(&g) || !cst || !cst[1] ||
        (q.w_zp_input && !cst[3]) || qconv_by_rows(layer, &g, &q)) {
        return 0; /* the channel-rows form reads W as it is */
    }
    plxk_isa isa = plxk_isa_of(compute);
    size_t per = qconv_packed_group_bytes(&g, isa);
    if (per == 0 || per == SIZE_MAX || per > SIZE_MAX / 2 / (size_t)g.group) {
        return 0;
    }
    /* conv_integer's per-channel zero points, as int32, after the packs */
    bool zp_array = q.w_zp_input && q.w_zp_per_channel;
    size_t packs = per * (size_t)g.group;
    size_t need = packs + (zp_array ? plxk_round_ws((size_t)g.m * 4) : 0);
    if (!out) {
        return need;
    }
    if (size < need) {
        return 0;
    }
    size_t m, n, k;
    qconv_dims(&g, &m, &n, &k);
    const plx_quant_params *wq = &layer->inputs[1].quant;
    int32_t *zps = zp_array ? (int32_t *)((char *)out + packs) : NULL;
    const uint8_t *weights = cst[1];
    uint8_t *reordered = NULL;
    if (!qconv_pointwise(&g)) {
        /* preparing runs once at load: a temporary for the reordered W */
        reordered = malloc((size_t)g.m * k);
        if (!reordered) {
            return 0;
        }
        reorder_weights(&g, cst[1], reordered);
        weights = reordered;
    }
    for (int64_t j = 0; zps && j < g.m; j++) {
        zps[j] = weight_zero_point(&q, layer, cst[3], j);
    }
    for (int64_t gi = 0; gi < g.group; gi++) {
        plxk_qgemm_args a;
        memset(&a, 0, sizeof a);
        a.n = n;
        a.k = k;
        a.b = weights + (size_t)gi * n * k;
        a.b_rs = 1;
        a.b_cs = (ptrdiff_t)k;
        a.b_signed = layer->inputs[1].dtype == PLX_DTYPE_INT8;
        if (zps) {
            a.b_zero_points = zps + gi * (int64_t)n;
        } else if (!q.integer && wq->kind == PLX_QUANT_PER_AXIS) {
            a.b_zero_points = wq->zero_points ? wq->zero_points + gi * (int64_t)n : NULL;
        } else {
            a.b_zero_point = weight_zero_point(&q, layer, q.w_zp_input ? cst[3] : NULL, 0);
        }
        if (!plxk_qgemm_pack_b(isa, &a, (char *)out + (size_t)gi * per, per)) {
            free(reordered);
            return 0;
        }
    }
    free(reordered);
    return need;
}

/* The channels-last path: X's group copied once into a padded [ph, pw, cg]
 * plane of X's zero point, then each pixel's row of A is kh copies of kw x
 * cg bytes (kh x kw copies of cg when dilated). */
typedef struct qnhwc_job {
    const plx_window_geom *g;
    const uint8_t *x; /* the group's first channel */
    uint8_t *nhwc, *col;
    size_t pw, cg, k;
} qnhwc_job;

static void qnhwc_fill_rows(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const qnhwc_job *j = ctx;
    const plx_window_geom *g = j->g;
    size_t iy = task, in_w = (size_t)g->in[1], plane = (size_t)(g->in[0] * g->in[1]);
    uint8_t *row = j->nhwc + ((iy + (size_t)g->pb[0]) * j->pw + (size_t)g->pb[1]) * j->cg;
    for (size_t c = 0; c < j->cg; c++) {
        const uint8_t *src = j->x + c * plane + iy * in_w;
        for (size_t ix = 0; ix < in_w; ix++) {
            row[ix * j->cg + c] = src[ix];
        }
    }
}

static void qnhwc_im2col_rows(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const qnhwc_job *j = ctx;
    const plx_window_geom *g = j->g;
    int64_t oy = (int64_t)task;
    size_t run = (size_t)g->k[1] * j->cg; /* one kernel row's taps */
    for (int64_t ox = 0; ox < g->out[1]; ox++) {
        uint8_t *dst = j->col + (size_t)(oy * g->out[1] + ox) * j->k;
        for (int64_t ky = 0; ky < g->k[0]; ky++) {
            const uint8_t *src = j->nhwc + ((size_t)(oy * g->s[0] + ky * g->d[0]) * j->pw +
                                            (size_t)(ox * g->s[1])) * j->cg;
            if (g->d[1] == 1) {
                memcpy(dst, src, run);
                dst += run;
                continue;
            }
            for (int64_t kx = 0; kx < g->k[1]; kx++) {
                memcpy(dst, src + (size_t)(kx * g->d[1]) * j->cg, j->cg);
                dst += j->cg;
            }
        }
    }
}

/* Depthwise: per channel, X - zx and W - zw as floats through cpu_ref's
 * float depthwise kernel (exact: qconv_depthwise), then the bias and the
 * output stage of the GEMM (qgemm.h) on the integer sums. Each thread has
 * its slice of the workspace. */
typedef struct qdw_job {
    const plx_window_geom *g;
    const plxk_kernel_args *a;
    const qproduct *q;
    const float *scales;
    const int32_t *zps;
    plxk_isa isa;
    char *slices;
    size_t slice;
} qdw_job;

static void qdw_channel(void *ctx, size_t task, size_t thread) {
    const qdw_job *j = ctx;
    const plx_window_geom *g = j->g;
    const plx_layer_view *l = j->a->layer;
    int64_t n = (int64_t)task / g->c, ch = (int64_t)task % g->c;
    plx_dtype xd = l->inputs[0].dtype, wd = l->inputs[1].dtype, yd = l->outputs[0].dtype;
    int32_t zx = j->q->integer ? (l->input_count > 2 ? load_q8(j->a->inputs[2], l->inputs[2].dtype, 0) : 0)
                               : tensor_zero_point(&l->inputs[0]);
    int32_t zw = j->zps[ch];
    int32_t bias = !j->q->integer && l->input_count > 2 ? ((const int32_t *)j->a->inputs[2])[ch] : 0;
    size_t plane_in = (size_t)(g->in[0] * g->in[1]), plane_out = (size_t)(g->out[0] * g->out[1]);
    size_t taps = (size_t)(g->k[0] * g->k[1]);
    char *slice = j->slices + thread * j->slice;
    float *restrict xf = (float *)(void *)slice;
    float *restrict acc = (float *)(void *)(slice + plxk_round_ws(plane_in * sizeof(float)));
    float *restrict wf = (float *)(void *)((char *)acc + plxk_round_ws(plane_out * sizeof(float)));
    float *scratch = (float *)(void *)((char *)wf + plxk_round_ws(taps * sizeof(float)));
    size_t x0 = (size_t)(n * g->c + ch) * plane_in;
    /* X's plane less its zero point, as floats (the variant was checked
     * before the run) */
    (void)plxk_dequantize8(j->isa, xd == PLX_DTYPE_UINT8, (const uint8_t *)j->a->inputs[0] + x0,
                           xf, plane_in, 1.0f, zx);
    for (size_t t = 0; t < taps; t++) {
        wf[t] = (float)(load_q8(j->a->inputs[1], wd, (size_t)ch * taps + t) - zw);
    }
    plxk_depthwise_plane p = qdw_geometry(g);
    p.x = xf;
    p.w = wf;
    p.y = acc;
    p.scratch = plxk_depthwise_scratch(&p) ? scratch : NULL;
    plxk_depthwise(j->isa, &p); /* the variant was checked before the run */
    size_t y0 = (size_t)(n * g->m + ch) * plane_out;
    if (j->q->integer) {
        int32_t *y = (int32_t *)j->a->outputs[0] + y0;
        for (size_t i = 0; i < plane_out; i++) {
            y[i] = (int32_t)acc[i];
        }
        return;
    }
    (void)plxk_requantize8(j->isa, yd == PLX_DTYPE_UINT8, acc, bias, j->scales[ch],
                           l->outputs[0].quant.zero_point, (char *)j->a->outputs[0] + y0,
                           plane_out);
}

static bool run_qconv(const plxk_kernel_args *args) {
    char why[256];
    plx_window_geom g;
    qproduct q;
    const plx_layer_view *l = args->layer;
    if (qconv_prepare(l, &g, &q, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    size_t left;
    float *scales;
    int32_t *zps;
    char *ws = channel_workspace(args, &q, g.m, &scales, &zps, &left);
    if (!ws) {
        return false;
    }
    if (qconv_depthwise(&g)) {
        size_t slice = qdw_slice_bytes(&g), threads = plxk_pool_threads(plxk_pool_of(args->compute));
        if (left / slice < threads) {
            return plxk_fail(args, "%s: layer '%s': workspace of %zu bytes is short",
                             plx_op_name(l->op), plxk_layer_name(l), left);
        }
        qdw_job job = {&g, args, &q, scales, zps, PLXK_ISA_PORTABLE, ws, slice};
        if (!plxk_require_isa(args, plx_op_name(l->op), &job.isa)) {
            return false;
        }
        plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * g.c),
                      (double)(g.n * g.m * g.out[0] * g.out[1] * g.k[0] * g.k[1]), qdw_channel,
                      &job);
        return true;
    }
    size_t m, n, k;
    qconv_dims(&g, &m, &n, &k);
    if (qconv_by_rows(l, &g, &q)) {
        size_t cols = qconv_pointwise(&g) ? 0 : plxk_round_ws(m * k);
        if (left < cols) {
            return plxk_fail(args, "%s: layer '%s': workspace of %zu bytes is short",
                             plx_op_name(l->op), plxk_layer_name(l), left);
        }
        for (int64_t img = 0; img < g.n; img++) {
            for (int64_t gi = 0; gi < g.group; gi++) {
                if (!qconv_rows(args, &g, &q, scales, zps, img, gi, (uint8_t *)ws,
                                (char *)ws + cols, left - cols)) {
                    return false;
                }
            }
        }
        return true;
    }
    /* the channels-last path's im2col columns, X's padded copy and the
     * reordered weights, then the GEMM's workspace */
    bool pointwise = qconv_pointwise(&g), nhwc_path = !pointwise;
    size_t col_bytes = nhwc_path ? plxk_round_ws(m * k) : 0;
    size_t nhwc_bytes = nhwc_path ? qconv_nhwc_bytes(&g) : 0;
    size_t wr_bytes = nhwc_path ? plxk_round_ws((size_t)g.m * k) : 0;
    if (left < col_bytes + nhwc_bytes + wr_bytes) {
        return plxk_fail(args, "%s: layer '%s': workspace of %zu bytes is short", plx_op_name(l->op),
                         plxk_layer_name(l), left);
    }
    uint8_t *col = (uint8_t *)ws, *nhwc = col + col_bytes, *wr = NULL;
    void *gws = nhwc + nhwc_bytes + wr_bytes;
    size_t gleft = left - col_bytes - nhwc_bytes - wr_bytes;
    size_t esize = q.integer ? 4 : 1;
    plxk_isa isa = plxk_isa_of(args->compute);
    size_t packed_per = args->prepared ? qconv_packed_group_bytes(&g, isa) : 0;
    int32_t pad = q.integer ? (l->input_count > 2 ? load_q8(args->inputs[2], l->inputs[2].dtype, 0) : 0)
                            : tensor_zero_point(&l->inputs[0]);
    size_t cg = (size_t)(g.c / g.group), plane = (size_t)(g.in[0] * g.in[1]);
    const uint8_t *weights = args->inputs[1];
    if (nhwc_path && !packed_per) {
        wr = nhwc + nhwc_bytes;
        reorder_weights(&g, args->inputs[1], wr);
        weights = wr;
    }
    int64_t ph, pw;
    padded_dims(&g, &ph, &pw);
    for (int64_t img = 0; img < g.n; img++) {
        for (int64_t gi = 0; gi < g.group; gi++) {
            const uint8_t *xg = (const uint8_t *)args->inputs[0] +
                                ((size_t)img * (size_t)g.c + (size_t)gi * cg) * plane;
            if (nhwc_path) {
                memset(nhwc, (uint8_t)pad, nhwc_bytes);
                qnhwc_job job = {&g, xg, nhwc, col, (size_t)pw, cg, k};
                plxk_pool_run(plxk_pool_of(args->compute), (size_t)g.in[0],
                              (double)(plane * cg) * 0.5, qnhwc_fill_rows, &job);
                plxk_pool_run(plxk_pool_of(args->compute), (size_t)g.out[0],
                              (double)(m * k) * 0.1, qnhwc_im2col_rows, &job);
            }
            plxk_qgemm_args a = qgemm_base(&q, args, scales + gi * (int64_t)n, zps + gi * (int64_t)n);
            a.m = m;
            a.n = n;
            a.k = k;
            a.a = pointwise ? (const void *)xg : (const void *)col;
            a.a_rs = pointwise ? 1 : (ptrdiff_t)k;
            a.a_cs = pointwise ? (ptrdiff_t)plane : 1;
            a.b = weights + (size_t)gi * n * k;
            a.b_rs = 1;
            a.b_cs = (ptrdiff_t)k;
            char *y = (char *)args->outputs[0] + ((size_t)img * (size_t)g.m + (size_t)gi * n) * m * esize;
            a.c = y; /* NCHW: element (pixel, channel) */
            a.c_rs = 1;
            a.c_cs = (ptrdiff_t)m;
            a.bias = !q.integer && l->input_count > 2 ? (const int32_t *)args->inputs[2] + gi * (int64_t)n
                                                      : NULL;
            a.packed_b = packed_per ? (const char *)args->prepared + (size_t)gi * packed_per : NULL;
            if (!run_qgemm(args, &a, gws, gleft, plx_op_name(l->op))) {
                return false;
            }
        }
    }
    return true;
}

const char *plxk_check_qconv(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g;
    qproduct q;
    return qconv_prepare(layer, &g, &q, buf, size);
}

bool plxk_run_qconv(const plxk_kernel_args *args) {
    return run_qconv(args);
}

/* ------------------------------------------------------------------ */
/* matmul on quantized tensors, matmul_integer                         */
/* ------------------------------------------------------------------ */

static const char *qmatmul_prepare(const plx_layer_view *l, plx_matmul_geom *g, qproduct *q,
                                   char *buf, size_t size) {
    const char *op = plx_op_name(l->op);
    if (plx_matmul_geom_of(&l->inputs[0], &l->inputs[1], g) != PLX_GEOM_OK) {
        return plxk_refuse(buf, size, "%s: A %u-D and B %u-D do not multiply", op,
                           l->inputs[0].rank, l->inputs[1].rank);
    }
    const char *why = plxk_require_output_shape(l, op, g->rank, g->dims, buf, size);
    return why ? why : qproduct_prepare(l, op, g->n, q, buf, size);
}

/* One B for all batches: the batches are rows of one product (as
 * kernels_matmul.c folds them). */
static bool qbatches_fold(const plx_matmul_geom *g) {
    bool fold = g->batch_rank > 0;
    for (uint32_t d = 0; fold && d < g->batch_rank; d++) {
        fold = g->b_bs[d] == 0 && (g->a_bs[d] != 0 || g->batch[d] == 1);
    }
    return fold;
}

static int64_t qmatmul_rows(const plx_matmul_geom *g) {
    int64_t rows = g->m;
    for (uint32_t d = 0; qbatches_fold(g) && d < g->batch_rank; d++) {
        rows *= g->batch[d];
    }
    return rows;
}

size_t plxk_workspace_qmatmul(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_matmul_geom g;
    qproduct q;
    char buf[8];
    if (qmatmul_prepare(layer, &g, &q, buf, sizeof buf)) {
        return 0;
    }
    size_t gemm = plxk_qgemm_workspace_size(plxk_isa_of(compute), (size_t)qmatmul_rows(&g),
                                            (size_t)g.n, (size_t)g.k,
                                            plxk_pool_threads(plxk_pool_of(compute)));
    return gemm == SIZE_MAX ? SIZE_MAX : channel_arrays_bytes(g.n) + plxk_round_ws(gemm);
}

/* B packed once when it is constant, shared by every batch and (for
 * matmul_integer) its zero point is constant too. */
size_t plxk_prepare_qmatmul(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                            size_t size) {
    plx_matmul_geom g;
    qproduct q;
    char buf[8];
    const void *const *cst = layer->input_constants;
    if (qmatmul_prepare(layer, &g, &q, buf, sizeof buf) || !cst || !cst[1] ||
        (q.w_zp_input && !cst[3])) {
        return 0;
    }
    for (uint32_t d = 0; d < g.batch_rank; d++) {
        if (g.b_bs[d] != 0 && g.batch[d] > 1) {
            return 0;
        }
    }
    plxk_isa isa = plxk_isa_of(compute);
    size_t packed = plxk_qgemm_packed_b_size(isa, (size_t)g.n, (size_t)g.k);
    if (packed == 0 || packed == SIZE_MAX) {
        return 0;
    }
    /* matmul_integer's per-column zero points, as int32, after the packed B */
    bool zp_array = q.w_zp_input && q.w_zp_per_channel;
    size_t need = plxk_round_ws(packed) + (zp_array ? plxk_round_ws((size_t)g.n * 4) : 0);
    if (!out) {
        return need;
    }
    if (size < need) {
        return 0;
    }
    plxk_qgemm_args a;
    memset(&a, 0, sizeof a);
    a.n = (size_t)g.n;
    a.k = (size_t)g.k;
    a.b = cst[1];
    a.b_rs = (ptrdiff_t)g.n;
    a.b_cs = 1;
    a.b_signed = layer->inputs[1].dtype == PLX_DTYPE_INT8;
    const plx_quant_params *wq = &layer->inputs[1].quant;
    if (zp_array) {
        int32_t *zps = (int32_t *)((char *)out + plxk_round_ws(packed));
        for (int64_t j = 0; j < g.n; j++) {
            zps[j] = weight_zero_point(&q, layer, cst[3], j);
        }
        a.b_zero_points = zps;
    } else if (!q.integer && wq->kind == PLX_QUANT_PER_AXIS) {
        a.b_zero_points = wq->zero_points; /* NULL: all 0 */
    } else {
        a.b_zero_point = weight_zero_point(&q, layer, q.w_zp_input ? cst[3] : NULL, 0);
    }
    return plxk_qgemm_pack_b(isa, &a, out, packed) ? need : 0;
}

const char *plxk_check_qmatmul(const plx_layer_view *layer, char *buf, size_t size) {
    plx_matmul_geom g;
    qproduct q;
    return qmatmul_prepare(layer, &g, &q, buf, size);
}

bool plxk_run_qmatmul(const plxk_kernel_args *args) {
    char why[256];
    plx_matmul_geom g;
    qproduct q;
    const plx_layer_view *l = args->layer;
    if (qmatmul_prepare(l, &g, &q, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    size_t left;
    float *scales;
    int32_t *zps;
    char *ws = channel_workspace(args, &q, g.n, &scales, &zps, &left);
    if (!ws) {
        return false;
    }
    void *gws = ws;
    size_t gleft = left;
    int64_t batches = 1, rows = g.m;
    for (uint32_t i = 0; i < g.batch_rank; i++) {
        batches *= g.batch[i];
    }
    if (qbatches_fold(&g)) {
        rows = qmatmul_rows(&g);
        batches = 1;
    }
    size_t esize = q.integer ? 4 : 1;
    int64_t idx[PLX_MAX_RANK] = {0};
    int64_t a0 = 0, b0 = 0;
    for (int64_t bi = 0; bi < batches; bi++) {
        plxk_qgemm_args a = qgemm_base(&q, args, scales, zps);
        a.m = (size_t)rows;
        a.n = (size_t)g.n;
        a.k = (size_t)g.k;
        a.a = (const uint8_t *)args->inputs[0] + a0;
        a.a_rs = (ptrdiff_t)g.k;
        a.a_cs = 1;
        a.b = (const uint8_t *)args->inputs[1] + b0;
        a.b_rs = (ptrdiff_t)g.n;
        a.b_cs = 1;
        a.c = (char *)args->outputs[0] + (size_t)(bi * g.m * g.n) * esize;
        a.c_rs = (ptrdiff_t)g.n;
        a.c_cs = 1;
        a.packed_b = args->prepared;
        if (!run_qgemm(args, &a, gws, gleft, plx_op_name(l->op))) {
            return false;
        }
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

/* ------------------------------------------------------------------ */
/* gemm on quantized tensors                                           */
/* ------------------------------------------------------------------ */

/* Y = A' B' + C requantized: alpha and beta 1, C an int32 bias per column
 * (shape inference's rules), A' and B' read through their strides. */
static const char *qgemm_layer_prepare(const plx_layer_view *l, plx_gemm_geom *g, qproduct *q,
                                       char *buf, size_t size) {
    const plx_gemm_desc *d = l->desc;
    const plx_tensor_info *c = l->input_count > 2 ? &l->inputs[2] : NULL;
    if (plx_gemm_geom_of(&l->inputs[0], &l->inputs[1], c, d->trans_a, d->trans_b, g) !=
            PLX_GEOM_OK ||
        d->alpha != 1.0f || d->beta != 1.0f || (c && (g->c_sm != 0 || (g->n > 1 && g->c_sn != 1)))) {
        return plxk_refuse(buf, size, "gemm: runs a quantized gemm with alpha = beta = 1 "
                           "and a bias per column");
    }
    int64_t dims[2] = {g->m, g->n};
    const char *why = plxk_require_output_shape(l, "gemm", 2, dims, buf, size);
    return why ? why : qproduct_prepare(l, "gemm", g->n, q, buf, size);
}

const char *plxk_check_qgemm(const plx_layer_view *layer, char *buf, size_t size) {
    plx_gemm_geom g = {0};
    qproduct q;
    return qgemm_layer_prepare(layer, &g, &q, buf, size);
}

size_t plxk_workspace_qgemm(const plx_layer_view *layer, const plxk_compute *compute) {
    plx_gemm_geom g = {0};
    qproduct q;
    char buf[8];
    if (qgemm_layer_prepare(layer, &g, &q, buf, sizeof buf)) {
        return 0;
    }
    size_t gemm = plxk_qgemm_workspace_size(plxk_isa_of(compute), (size_t)g.m, (size_t)g.n,
                                            (size_t)g.k, plxk_pool_threads(plxk_pool_of(compute)));
    return gemm == SIZE_MAX ? SIZE_MAX : channel_arrays_bytes(g.n) + plxk_round_ws(gemm);
}

size_t plxk_prepare_qgemm(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                          size_t size) {
    plx_gemm_geom g = {0};
    qproduct q;
    char buf[8];
    const void *const *cst = layer->input_constants;
    if (qgemm_layer_prepare(layer, &g, &q, buf, sizeof buf) || !cst || !cst[1]) {
        return 0;
    }
    plxk_isa isa = plxk_isa_of(compute);
    size_t need = plxk_qgemm_packed_b_size(isa, (size_t)g.n, (size_t)g.k);
    if (need == 0 || need == SIZE_MAX || !out) {
        return need == SIZE_MAX ? 0 : need;
    }
    if (size < need) {
        return 0;
    }
    const plx_quant_params *wq = &layer->inputs[1].quant;
    plxk_qgemm_args a;
    memset(&a, 0, sizeof a);
    a.n = (size_t)g.n;
    a.k = (size_t)g.k;
    a.b = cst[1];
    a.b_rs = (ptrdiff_t)g.b_sk;
    a.b_cs = (ptrdiff_t)g.b_sn;
    a.b_signed = layer->inputs[1].dtype == PLX_DTYPE_INT8;
    if (wq->kind == PLX_QUANT_PER_AXIS) {
        a.b_zero_points = wq->zero_points;
    } else {
        a.b_zero_point = wq->zero_point;
    }
    return plxk_qgemm_pack_b(isa, &a, out, size) ? need : 0;
}

bool plxk_run_qgemm(const plxk_kernel_args *args) {
    char why[256];
    plx_gemm_geom g = {0};
    qproduct q;
    const plx_layer_view *l = args->layer;
    if (qgemm_layer_prepare(l, &g, &q, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    size_t left;
    float *scales;
    int32_t *zps;
    char *ws = channel_workspace(args, &q, g.n, &scales, &zps, &left);
    if (!ws) {
        return false;
    }
    plxk_qgemm_args a = qgemm_base(&q, args, scales, zps);
    a.m = (size_t)g.m;
    a.n = (size_t)g.n;
    a.k = (size_t)g.k;
    a.a = args->inputs[0];
    a.a_rs = (ptrdiff_t)g.a_sm;
    a.a_cs = (ptrdiff_t)g.a_sk;
    a.b = args->inputs[1];
    a.b_rs = (ptrdiff_t)g.b_sk;
    a.b_cs = (ptrdiff_t)g.b_sn;
    a.c = args->outputs[0];
    a.c_rs = (ptrdiff_t)g.n;
    a.c_cs = 1;
    a.bias = l->input_count > 2 ? args->inputs[2] : NULL;
    a.packed_b = args->prepared;
    return run_qgemm(args, &a, ws, left, "gemm");
}

/* ------------------------------------------------------------------ */
/* conv_integer and matmul_integer: the kernels above, int32 out        */
/* ------------------------------------------------------------------ */

const char *plxk_check_conv_integer(const plx_layer_view *layer, char *buf, size_t size) {
    return plxk_check_qconv(layer, buf, size);
}
bool plxk_run_conv_integer(const plxk_kernel_args *args) {
    return run_qconv(args);
}
size_t plxk_workspace_conv_integer(const plx_layer_view *layer, const plxk_compute *compute) {
    return plxk_workspace_qconv(layer, compute);
}
size_t plxk_prepare_conv_integer(const plx_layer_view *layer, const plxk_compute *compute,
                                 void *out, size_t size) {
    return plxk_prepare_qconv(layer, compute, out, size);
}
const char *plxk_check_matmul_integer(const plx_layer_view *layer, char *buf, size_t size) {
    return plxk_check_qmatmul(layer, buf, size);
}
bool plxk_run_matmul_integer(const plxk_kernel_args *args) {
    return plxk_run_qmatmul(args);
}
size_t plxk_workspace_matmul_integer(const plx_layer_view *layer, const plxk_compute *compute) {
    return plxk_workspace_qmatmul(layer, compute);
}
size_t plxk_prepare_matmul_integer(const plx_layer_view *layer, const plxk_compute *compute,
                                   void *out, size_t size) {
    return plxk_prepare_qmatmul(layer, compute, out, size);
}

/* ------------------------------------------------------------------ */
/* dynamic_quantize                                                    */
/* ------------------------------------------------------------------ */

const char *plxk_check_dynamic_quantize(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_tensor_info *x = &layer->inputs[0];
    if (x->dtype != PLX_DTYPE_FLOAT32 || layer->output_count != 3 ||
        layer->outputs[0].dtype != PLX_DTYPE_UINT8 || !plxk_same_dims(x, &layer->outputs[0]) ||
        layer->outputs[1].dtype != PLX_DTYPE_FLOAT32 || plxk_element_count(&layer->outputs[1]) != 1 ||
        layer->outputs[2].dtype != PLX_DTYPE_UINT8 || plxk_element_count(&layer->outputs[2]) != 1) {
        return plxk_refuse(buf, size, "dynamic_quantize: takes float32 X and gives uint8 Y "
                           "of X's shape, a float32 scale and a uint8 zero point");
    }
    return NULL;
}

static uint8_t saturate_u8(float v) {
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

bool plxk_run_dynamic_quantize(const plxk_kernel_args *args) {
    char why[256];
    if (plxk_check_dynamic_quantize(args->layer, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const float *x = args->inputs[0];
    size_t n = plxk_element_count(&args->layer->inputs[0]);
    plxk_isa isa;
    float lo = 0.0f, hi = 0.0f;
    bool finite = true;
    if (!plxk_require_isa(args, "dynamic_quantize", &isa)) {
        return false;
    }
    (void)plxk_float_range(isa, x, n, &lo, &hi, &finite); /* isa checked above */
    if (!finite) {
        return plxk_fail(args, "dynamic_quantize: layer '%s': X holds NaN or infinity, which has "
                         "no uint8 quantization", plxk_layer_name(args->layer));
    }
    /* the range always holds 0 (ONNX's adjustment) */
    lo = lo < 0.0f ? lo : 0.0f;
    hi = hi > 0.0f ? hi : 0.0f;
    /* ONNX Runtime's choice where ONNX divides by zero (X all zeros): scale 1 */
    float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    float zf = -lo / scale;
    uint8_t zp = saturate_u8(nearbyintf(zf < 0.0f ? 0.0f : zf > 255.0f ? 255.0f : zf));
    /* round(x / scale) + zp, saturated: qmap's quantize, the same bytes */
    (void)plxk_quantize8(isa, true, x, args->outputs[0], n, scale, zp);
    *(float *)args->outputs[1] = scale;
    *(uint8_t *)args->outputs[2] = zp;
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW); conv and matmul reach
 * plxk_*_qconv / plxk_*_qmatmul from their own rows when X is int8/uint8. */
PLXK_ROW_WS_PREP(CONV_INTEGER, conv_integer);
PLXK_ROW_WS_PREP(MATMUL_INTEGER, matmul_integer);
PLXK_ROW(DYNAMIC_QUANTIZE, dynamic_quantize);
