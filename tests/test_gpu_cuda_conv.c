/* gpu_cuda's convolution geometry (gpu_cuda/cuda_conv_geom.c), on the
 * host: what cuDNN is told about a conv or conv_transpose layer (its
 * tensors' dims and strides, the pads before and after, strides,
 * dilations, the group) must compute what cpu_ref computes. For each case
 * a one-layer network runs on cpu_ref, and a direct cross-correlation (for
 * conv_transpose, its backward data) that reads nothing but the geometry,
 * over every element, must match it; the output size cuDNN derives from
 * the pads after must be the one it is given. And what the geometry
 * refuses, it refuses with the reason. Runs everywhere: no CUDA is
 * called.
 *
 * Built a second time with GPU_CUDA_CONV_CUDNN (test gpu_cuda_conv_cudnn,
 * where gpu_cuda is built), it also has cuDNN itself check each case: the
 * operations gpu_cuda/cuda_conv_graph.c makes of the geometry (the
 * convolution alone, and with bias, residual and activation) must
 * finalise, which needs no handle and no device; and a geometry off by one
 * must not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "cuda_conv_geom.h"
#include "test_util.h"

#ifdef GPU_CUDA_CONV_CUDNN
#include "cuda_conv_graph.h"

/* The operations of each graph gpu_cuda may make of g, built and finalised
 * by cuDNN without a handle: the status and the failing call. */
static cudnnStatus_t cudnn_check(const cuda_conv_geom *g, bool bias, bool residual, bool act,
                                 cudnnPointwiseMode_t mode, const char **call) {
    cuda_conv_graph cg;
    memset(&cg, 0, sizeof cg);
    cg.geom = g;
    cr_assert(zero(ptr, cuda_conv_graph_build(&cg, NULL, bias, residual, act, mode)));
    cudnnStatus_t st = cg.st;
    *call = cg.call;
    cuda_conv_graph_reset(&cg);
    return st;
}

/* Every graph gpu_cuda may make: the convolution alone, with the bias,
 * with each activation cuda_conv.c puts in the graph, with all three. */
static void cudnn_accepts(const cuda_conv_geom *g, const char *name) {
    static const struct {
        bool bias, residual, act;
        cudnnPointwiseMode_t mode;
    } graphs[] = {{false, false, false, CUDNN_POINTWISE_RELU_FWD},
                  {true, false, false, CUDNN_POINTWISE_RELU_FWD},
                  {false, false, true, CUDNN_POINTWISE_RELU_FWD},
                  {false, false, true, CUDNN_POINTWISE_TANH_FWD},
                  {false, false, true, CUDNN_POINTWISE_SIGMOID_FWD},
                  {false, false, true, CUDNN_POINTWISE_GELU_FWD},
                  {false, false, true, CUDNN_POINTWISE_GELU_APPROX_TANH_FWD},
                  {true, true, true, CUDNN_POINTWISE_RELU_FWD}};
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        const char *call = NULL;
        cudnnStatus_t st = cudnn_check(g, graphs[i].bias, graphs[i].residual, graphs[i].act,
                                       graphs[i].mode, &call);
        char detail[512] = "";
        cudnnGetLastErrorString(detail, sizeof detail);
        cr_assert(eq(int, (int)st, (int)CUDNN_STATUS_SUCCESS), "%s (graph %zu): %s: %s: %s", name,
                  i, call ? call : "", cudnnGetErrorString(st), detail);
    }
}
#endif

#ifndef CPU_REF_DIR
#error "CPU_REF_DIR must be defined by the build"
#endif

/* Y of a cross-correlation as cuDNN defines it, from the geometry alone. */
static void conv_from_geometry(const cuda_conv_geom *g, const float *x, const float *w,
                               const float *b, float *y) {
    int nd = g->nb_dims, sp = g->spatial;
    int64_t cpg = g->w[1], mpg = g->y[1] / g->group, kcount = 1;
    for (int s = 0; s < sp; s++) {
        kcount *= g->w[2 + s];
    }
    int64_t count = g->y[0] * g->y_strides[0];
    for (int64_t i = 0; i < count; i++) {
        int64_t idx[CUDA_CONV_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            idx[d] = i / g->y_strides[d] % g->y[d];
        }
        int64_t n = idx[0], m = idx[1], grp = m / mpg;
        double acc = b ? b[m] : 0.0;
        for (int64_t c = 0; c < cpg; c++) {
            for (int64_t k = 0; k < kcount; k++) {
                int64_t xo = n * g->x_strides[0] + (grp * cpg + c) * g->x_strides[1];
                int64_t wo = m * g->w_strides[0] + c * g->w_strides[1];
                bool inside = true;
                int64_t rest = k;
                for (int s = sp - 1; s >= 0; s--) {
                    int64_t kp = rest % g->w[2 + s];
                    rest /= g->w[2 + s];
                    int64_t pos = idx[2 + s] * g->stride[s] - g->pre_pad[s] + kp * g->dilation[s];
                    inside = inside && pos >= 0 && pos < g->x[2 + s];
                    xo += pos * g->x_strides[2 + s];
                    wo += kp * g->w_strides[2 + s];
                }
                if (inside) {
                    acc += (double)x[xo] * (double)w[wo];
                }
            }
        }
        y[i] = (float)acc;
    }
}

/* Y of conv_transpose as cuDNN's backward data of the convolution from Y
 * to X computes it, from the geometry alone: each X element scattered
 * through the kernel into Y, then the bias. */
static void conv_transpose_from_geometry(const cuda_conv_geom *g, const float *x, const float *w,
                                         const float *b, float *y) {
    int nd = g->nb_dims, sp = g->spatial;
    int64_t cpg = g->x[1] / g->group, mpg = g->w[1], kcount = 1;
    for (int s = 0; s < sp; s++) {
        kcount *= g->w[2 + s];
    }
    int64_t ny = g->y[0] * g->y_strides[0], nx = g->x[0] * g->x_strides[0];
    double *acc = calloc((size_t)ny, sizeof *acc);
    cr_assert(not(zero(ptr, acc)));
    for (int64_t i = 0; i < nx; i++) {
        int64_t idx[CUDA_CONV_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            idx[d] = i / g->x_strides[d] % g->x[d];
        }
        int64_t n = idx[0], c = idx[1], grp = c / cpg;
        for (int64_t mm = 0; mm < mpg; mm++) {
            for (int64_t k = 0; k < kcount; k++) {
                int64_t yo = n * g->y_strides[0] + (grp * mpg + mm) * g->y_strides[1];
                int64_t wo = c * g->w_strides[0] + mm * g->w_strides[1];
                bool inside = true;
                int64_t rest = k;
                for (int s = sp - 1; s >= 0; s--) {
                    int64_t kp = rest % g->w[2 + s];
                    rest /= g->w[2 + s];
                    int64_t pos = idx[2 + s] * g->stride[s] - g->pre_pad[s] + kp * g->dilation[s];
                    inside = inside && pos >= 0 && pos < g->y[2 + s];
                    yo += pos * g->y_strides[2 + s];
                    wo += kp * g->w_strides[2 + s];
                }
                if (inside) {
                    acc[yo] += (double)x[i] * (double)w[wo];
                }
            }
        }
    }
    for (int64_t i = 0; i < ny; i++) {
        y[i] = (float)(acc[i] + (b ? b[i / g->y_strides[1] % g->y[1]] : 0.0));
    }
    free(acc);
}

static size_t numel(const plx_tensor_info *t) {
    size_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= (size_t)t->dims[i];
    }
    return n;
}

static plx_tensor_info info_of(uint32_t rank, const int64_t *dims) {
    return tu_f32(rank, dims);
}

static void fill(float *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        v[i] = (float)((seed * 131u + (unsigned)i * 37u) % 61u) / 15.0f - 2.0f;
    }
}

typedef struct conv_case {
    const char *name;
    uint32_t rank; /* X's and W's */
    int64_t x[5], w[5];
    bool bias;
    plx_conv_desc desc;
} conv_case;

typedef struct layer_case {
    const char *name;
    plx_op op;
    const void *desc;
    uint32_t rank;
    const int64_t *x, *w;
    int64_t m; /* output channels: the bias's size */
    bool bias;
} layer_case;

static void check_layer(const layer_case *cc);

/* The case on cpu_ref against the geometry's cross-correlation. */
static void check_case(const conv_case *cc) {
    layer_case lc = {cc->name, PLX_OP_CONV, &cc->desc, cc->rank, cc->x, cc->w, cc->w[0],
                     cc->bias};
    check_layer(&lc);
}

static void check_layer(const layer_case *cc) {
    plx_tensor_info infos[3] = {info_of(cc->rank, cc->x), info_of(cc->rank, cc->w),
                                info_of(1, &cc->m)};
    size_t nx = numel(&infos[0]), nw = numel(&infos[1]), nb = (size_t)cc->m;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(nb * sizeof *b);
    cr_assert(x && w && b);
    fill(x, nx, 1);
    fill(w, nw, 2);
    fill(b, nb, 3);
    const void *data[3] = {NULL, w, b};
    uint32_t inputs = cc->bias ? 3 : 2;
    plx_tensor_info yi;
    plx_network *n = tu_layer_network(cc->op, cc->desc, infos, data, inputs, NULL, &yi);

    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.name = cc->name;
    l.op = cc->op;
    l.desc = cc->desc;
    l.inputs = infos;
    l.input_count = inputs;
    l.outputs = &yi;
    l.output_count = 1;
    cuda_conv_geom g;
    char buf[256];
    const char *why = cuda_conv_geometry(&l, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "%s: %s", cc->name, why);
#ifdef GPU_CUDA_CONV_CUDNN
    cudnn_accepts(&g, cc->name);
#endif

    /* The layer's output, as cuDNN's dims: 1-D layers gain a height of 1. */
    size_t ny = numel(&yi);
    cr_assert(eq(i64, g.nb_dims, cc->rank == 5 ? 5 : 4), "%s", cc->name);
    cr_assert(eq(i64, g.y[0] * g.y_strides[0], (int64_t)ny), "%s", cc->name);
    int64_t want_y[CUDA_CONV_MAX_DIMS] = {yi.dims[0], yi.dims[1], 1, 1, 1};
    for (uint32_t d = 2; d < yi.rank; d++) {
        want_y[d + (uint32_t)g.nb_dims - yi.rank] = yi.dims[d];
    }
    for (int d = 0; d < g.nb_dims; d++) {
        cr_assert(eq(i64, g.y[d], want_y[d]), "%s: Y dim %d", cc->name, d);
    }
    /* cuDNN derives the convolution's output size from both pads (never
     * negative): it must be Y's (conv_transpose: the convolution runs from
     * Y to X, and X's). */
    bool tr = cc->op == PLX_OP_CONV_TRANSPOSE;
    for (int s = 0; s < g.spatial; s++) {
        int64_t dk = (g.w[2 + s] - 1) * g.dilation[s] + 1;
        int64_t in = tr ? g.y[2 + s] : g.x[2 + s], want = tr ? g.x[2 + s] : g.y[2 + s];
        int64_t out = (in + g.pre_pad[s] + g.post_pad[s] - dk) / g.stride[s] + 1;
        cr_assert(eq(i64, out, want), "%s: spatial dim %d", cc->name, s);
        cr_assert(ge(i64, g.pre_pad[s], 0), "%s", cc->name);
        cr_assert(ge(i64, g.post_pad[s], 0), "%s", cc->name);
    }

    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    cr_assert(want && got);
    const char *paths[] = {CPU_REF_DIR};
    plx_runtime *rt = tu_runtime(paths, 1);
    tu_run_network_on(rt, n, "cpu_ref", x, nx * sizeof *x, want, ny * sizeof *want, NULL, 0);
    if (tr) {
        conv_transpose_from_geometry(&g, x, w, cc->bias ? b : NULL, got);
    } else {
        conv_from_geometry(&g, x, w, cc->bias ? b : NULL, got);
    }
    for (size_t i = 0; i < ny; i++) {
        cr_assert(le(dbl, fabs((double)got[i] - (double)want[i]),
                     1e-4 * (1.0 + fabs((double)want[i]))),
                  "%s: y[%zu] %g, cpu_ref %g", cc->name, i, (double)got[i], (double)want[i]);
    }
    plx_runtime_destroy(&rt);
    plx_network_destroy(&n);
    free(x);
    free(w);
    free(b);
    free(want);
    free(got);
}

static plx_conv_desc conv_desc(void) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    return d;
}

Test(gpu_cuda_conv, conv2d_grouped_strided_dilated_asymmetric_pads) {
    conv_case cc = {"conv2d", 4, {2, 4, 7, 6}, {6, 2, 3, 2}, true, conv_desc()};
    cc.desc.group = 2;
    cc.desc.strides[0] = 2;
    cc.desc.dilations[1] = 2;
    cc.desc.pads_begin[0] = 1;
    cc.desc.pads_end[0] = 2;
    cc.desc.pads_end[1] = 1;
    check_case(&cc);
}

Test(gpu_cuda_conv, depthwise_same_upper_stride_2) {
    conv_case cc = {"depthwise", 4, {1, 3, 6, 5}, {3, 1, 3, 3}, false, conv_desc()};
    cc.desc.group = 3;
    cc.desc.strides[0] = 2;
    cc.desc.strides[1] = 2;
    cc.desc.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    check_case(&cc);
}

Test(gpu_cuda_conv, conv2d_same_lower_and_valid_ignoring_pads) {
    conv_case cc = {"same_lower", 4, {1, 2, 5, 4}, {3, 2, 2, 3}, true, conv_desc()};
    cc.desc.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    cc.desc.dilations[0] = 2;
    check_case(&cc);
    conv_case valid = {"valid", 4, {1, 2, 5, 4}, {3, 2, 2, 3}, true, conv_desc()};
    valid.desc.auto_pad = PLX_AUTO_PAD_VALID;
    valid.desc.pads_begin[0] = 3; /* ignored */
    check_case(&valid);
}

Test(gpu_cuda_conv, conv1d_grouped_strided_dilated_as_a_height_of_one) {
    conv_case cc = {"conv1d", 3, {2, 4, 11}, {4, 2, 3}, true, conv_desc()};
    cc.desc.group = 2;
    cc.desc.strides[0] = 2;
    cc.desc.dilations[0] = 2;
    cc.desc.pads_begin[0] = 1;
    cc.desc.pads_end[0] = 2;
    check_case(&cc);
}

Test(gpu_cuda_conv, conv3d_asymmetric_pads_and_same_lower) {
    conv_case cc = {"conv3d", 5, {1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, true, conv_desc()};
    cc.desc.strides[1] = 2;
    cc.desc.dilations[0] = 2;
    cc.desc.pads_begin[0] = 1;
    cc.desc.pads_end[1] = 1;
    cc.desc.pads_begin[2] = 1;
    cc.desc.pads_end[2] = 1;
    check_case(&cc);
    conv_case same = {"conv3d_same_lower", 5, {2, 4, 3, 4, 5}, {4, 2, 2, 2, 3}, false,
                      conv_desc()};
    same.desc.group = 2;
    same.desc.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    same.desc.strides[2] = 2;
    check_case(&same);
}

/* ---- conv_transpose ----------------------------------------------------------- */

Test(gpu_cuda_conv, conv_transpose2d_grouped_strided_output_padding) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.group = 2;
    d.strides[0] = 2;
    d.strides[1] = 3;
    d.dilations[0] = 2;
    d.pads_begin[0] = 1;
    d.pads_end[1] = 2;
    d.output_padding[0] = 1;
    d.output_padding[1] = 2;
    int64_t x[] = {2, 4, 3, 4}, w[] = {4, 3, 3, 4};
    layer_case lc = {"conv_transpose2d", PLX_OP_CONV_TRANSPOSE, &d, 4, x, w, 6, true};
    check_layer(&lc);
}

Test(gpu_cuda_conv, conv_transpose1d_and_3d_and_output_shape) {
    plx_conv_transpose_desc d1 = PLX_CONV_TRANSPOSE_DESC_INIT;
    d1.strides[0] = 3;
    d1.pads_begin[0] = 2;
    d1.pads_end[0] = 1;
    int64_t x1[] = {2, 3, 5}, w1[] = {3, 2, 4};
    layer_case c1 = {"conv_transpose1d", PLX_OP_CONV_TRANSPOSE, &d1, 3, x1, w1, 2, true};
    check_layer(&c1);

    plx_conv_transpose_desc d3 = PLX_CONV_TRANSPOSE_DESC_INIT;
    d3.strides[0] = 2;
    d3.strides[2] = 2;
    d3.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    int64_t x3[] = {1, 2, 3, 2, 3}, w3[] = {2, 3, 3, 2, 3};
    layer_case c3 = {"conv_transpose3d same_upper", PLX_OP_CONV_TRANSPOSE, &d3, 5, x3, w3, 3,
                     false};
    check_layer(&c3);

    plx_conv_transpose_desc ds = PLX_CONV_TRANSPOSE_DESC_INIT;
    ds.strides[0] = ds.strides[1] = 2;
    ds.output_shape[0] = 9;
    ds.output_shape[1] = 7;
    int64_t xs[] = {1, 2, 4, 4}, ws[] = {2, 2, 3, 3};
    layer_case cs = {"conv_transpose output_shape", PLX_OP_CONV_TRANSPOSE, &ds, 4, xs, ws, 2,
                     true};
    check_layer(&cs);
}

#ifdef GPU_CUDA_CONV_CUDNN
/* cuDNN's checks can fail: an output one wider than the convolution gives,
 * or a W whose channels do not divide X's, is refused at the operation. */
Test(gpu_cuda_conv, cudnn_refuses_a_geometry_off_by_one) {
    int64_t xd[] = {1, 4, 6, 6}, wd[] = {6, 2, 3, 3}, yd[] = {1, 6, 4, 4};
    plx_tensor_info in[2] = {info_of(4, xd), info_of(4, wd)}, y = info_of(4, yd);
    plx_conv_desc d = conv_desc();
    d.group = 2;
    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.name = "conv";
    l.op = PLX_OP_CONV;
    l.desc = &d;
    l.inputs = in;
    l.input_count = 2;
    l.outputs = &y;
    l.output_count = 1;
    cuda_conv_geom g;
    char buf[256];
    cr_assert(zero(ptr, (void *)cuda_conv_geometry(&l, &g, buf, sizeof buf)), "%s", buf);
    cudnn_accepts(&g, "conv");
    const char *call = NULL;
    cuda_conv_geom wide = g;
    wide.y[3] += 1;
    wide.y_strides[2] = wide.y[3];
    wide.y_strides[1] = wide.y[2] * wide.y[3];
    wide.y_strides[0] = wide.y[1] * wide.y_strides[1];
    cudnnStatus_t st_wide =
        cudnn_check(&wide, false, false, false, CUDNN_POINTWISE_RELU_FWD, &call);
    cr_assert(not(eq(int, (int)st_wide, (int)CUDNN_STATUS_SUCCESS)));
    cr_assert(not(zero(ptr, strstr(call, "OPERATION_CONVOLUTION_FORWARD"))), "%s", call);
    cuda_conv_geom groups = g;
    groups.w[1] = 3;
    groups.w_strides[0] = 3 * 9;
    cudnnStatus_t st_groups =
        cudnn_check(&groups, false, false, false, CUDNN_POINTWISE_RELU_FWD, &call);
    cr_assert(not(eq(int, (int)st_groups, (int)CUDNN_STATUS_SUCCESS)));
    cr_assert(not(zero(ptr, strstr(call, "OPERATION_CONVOLUTION_FORWARD"))), "%s", call);
}
#endif

/* ---- what the geometry refuses ---------------------------------------------- */

static const char *refusal(const plx_tensor_info *infos, uint32_t input_count,
                           const plx_tensor_info *y, const plx_conv_desc *d, char *buf,
                           size_t size) {
    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.name = "conv";
    l.op = PLX_OP_CONV;
    l.desc = d;
    l.inputs = infos;
    l.input_count = input_count;
    l.outputs = y;
    l.output_count = 1;
    cuda_conv_geom g;
    return cuda_conv_geometry(&l, &g, buf, size);
}

#define REFUSED(infos, count, y, d, needle)                                                 \
    do {                                                                                    \
        char buf_[256];                                                                     \
        const char *why_ = refusal((infos), (count), (y), (d), buf_, sizeof buf_);          \
        cr_assert(not(zero(ptr, (void *)why_)), "not refused: %s", (needle));               \
        cr_assert(not(zero(ptr, strstr(why_, (needle)))), "'%s' lacks '%s'", why_, (needle)); \
    } while (0)

Test(gpu_cuda_conv, refusals_name_the_reason) {
    plx_conv_desc d = conv_desc();
    int64_t xd[] = {1, 2, 5, 5}, wd[] = {3, 2, 3, 3}, yd[] = {1, 3, 3, 3}, bd[] = {3};
    plx_tensor_info ok[3] = {info_of(4, xd), info_of(4, wd), info_of(1, bd)};
    plx_tensor_info y = info_of(4, yd);
    char buf[256];
    cr_assert(zero(ptr, (void *)refusal(ok, 3, &y, &d, buf, sizeof buf)), "%s", buf);

    plx_tensor_info half[3] = {ok[0], ok[1], ok[2]};
    half[0].dtype = PLX_DTYPE_FLOAT16;
    REFUSED(half, 3, &y, &d, "float32 only, not input 0 of float16");
    plx_tensor_info y16 = y;
    y16.dtype = PLX_DTYPE_BFLOAT16;
    REFUSED(ok, 3, &y16, &d, "float32 only, not an output of bfloat16");

    int64_t x6[] = {1, 2, 3, 3, 3, 3}, w6[] = {3, 2, 1, 1, 1, 1};
    plx_tensor_info rank6[2] = {info_of(6, x6), info_of(6, w6)};
    REFUSED(rank6, 2, &y, &d, "rank 3 to 5), not rank 6");

    plx_conv_desc groups = d;
    groups.group = 3;
    REFUSED(ok, 3, &y, &groups, "group 3 does not fit");

    int64_t b4[] = {4};
    plx_tensor_info bad_bias[3] = {ok[0], ok[1], info_of(1, b4)};
    REFUSED(bad_bias, 3, &y, &d, "B has 4 elements");

    int64_t y_wrong[] = {1, 3, 4, 3};
    plx_tensor_info yw = info_of(4, y_wrong);
    REFUSED(ok, 3, &yw, &d, "expected [1,3,3,3]");

    int64_t x0[] = {0, 2, 5, 5}, y0[] = {0, 3, 3, 3};
    plx_tensor_info empty[2] = {info_of(4, x0), ok[1]};
    plx_tensor_info ye = info_of(4, y0);
    REFUSED(empty, 2, &ye, &d, "X has none");

    /* 2^31 elements or more: cuDNN's limit. */
    int64_t xb[] = {1, 1, 65536, 32768}, wb[] = {1, 1, 1, 1}, yb[] = {1, 1, 65536, 32768};
    plx_tensor_info big[2] = {info_of(4, xb), info_of(4, wb)};
    plx_tensor_info ybig = info_of(4, yb);
    REFUSED(big, 2, &ybig, &d, "up to 2^31 - 1 elements (cuDNN's limit), and X");

    REFUSED(ok, 1, &y, &d, "not 1 inputs");

    /* conv_transpose with SAME_UPPER and a stride beyond the kernel: its
     * padding before is negative, which cuDNN's convolution cannot take. */
    plx_conv_transpose_desc td = PLX_CONV_TRANSPOSE_DESC_INIT;
    td.strides[0] = td.strides[1] = 3;
    td.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    int64_t tx[] = {1, 1, 2, 2}, tw[] = {1, 1, 1, 1}, ty[] = {1, 1, 6, 6};
    plx_tensor_info tin[2] = {info_of(4, tx), info_of(4, tw)};
    plx_tensor_info tout = info_of(4, ty);
    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.name = "conv_transpose";
    l.op = PLX_OP_CONV_TRANSPOSE;
    l.desc = &td;
    l.inputs = tin;
    l.input_count = 2;
    l.outputs = &tout;
    l.output_count = 1;
    cuda_conv_geom g;
    const char *why = cuda_conv_geometry(&l, &g, buf, sizeof buf);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "is no convolution without negative padding"))), "%s",
              why);
    tin[0].dtype = PLX_DTYPE_INT8;
    why = cuda_conv_geometry(&l, &g, buf, sizeof buf);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "runs conv_transpose in float32 only"))), "%s", why);
}
