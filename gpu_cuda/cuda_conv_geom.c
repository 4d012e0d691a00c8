/* gpu_cuda's convolution geometry (cuda_conv_geom.h). */
#include <stdio.h>
#include <string.h>

#include <plexus/window.h>

#include "cuda_conv_geom.h"

/* Packed strides of dims[0..n), and the element count; -1 when the count
 * exceeds CUDA_CONV_MAX_ELEMENTS. */
static int64_t packed(const int64_t *dims, int n, int64_t *strides) {
    int64_t count = 1;
    for (int i = n; i-- > 0;) {
        strides[i] = count;
        count *= dims[i];
        if (count > CUDA_CONV_MAX_ELEMENTS) {
            return -1;
        }
    }
    return count;
}

/* conv_transpose's padding after: what makes the convolution from Y (out
 * positions) to X (in positions) give in outputs, the smallest such that
 * is not negative; false when there is none (cuDNN takes no negative
 * padding). */
static bool transpose_post_pad(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
                               int64_t pre, int64_t *post) {
    int64_t dk = (k - 1) * d + 1;
    int64_t p = (in - 1) * s + dk - out - pre; /* exact: (out + pre + p - dk) / s + 1 == in */
    if (p < 0) {
        p = 0; /* a floor division: the count holds while p stays below the exact one + s */
    }
    int64_t span = out + pre + p - dk;
    *post = p;
    return pre >= 0 && span >= 0 && span / s + 1 == in;
}

const char *cuda_conv_geometry(const plx_layer_view *l, cuda_conv_geom *g, char *buf,
                               size_t size) {
    bool transpose = l->op == PLX_OP_CONV_TRANSPOSE;
    const char *op = plx_op_name(l->op);
    if (l->input_count < 2 || l->input_count > 3 || l->output_count != 1) {
        snprintf(buf, size, "runs %s with X, W and an optional B to one Y, not %u inputs "
                 "and %u outputs", op, l->input_count, l->output_count);
        return buf;
    }
    for (uint32_t i = 0; i < l->input_count; i++) {
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            snprintf(buf, size, "runs %s in float32 only, not input %u of %s", op, i,
                     plx_dtype_name(l->inputs[i].dtype));
            return buf;
        }
    }
    if (l->outputs[0].dtype != PLX_DTYPE_FLOAT32) {
        snprintf(buf, size, "runs %s in float32 only, not an output of %s", op,
                 plx_dtype_name(l->outputs[0].dtype));
        return buf;
    }
    plx_window_geom wg;
    const char *why =
        transpose ? plx_window_geom_conv_transpose_nd(l, CUDA_CONV_DIM_LIMIT, &wg, buf, size)
                  : plx_window_geom_conv_nd(l, CUDA_CONV_DIM_LIMIT, &wg, buf, size);
    if (why) {
        return why;
    }
    memset(g, 0, sizeof *g);
    g->nb_dims = wg.spatial_rank == 3 ? 5 : 4;
    g->spatial = g->nb_dims - 2;
    g->transpose = transpose;
    g->group = wg.group;
    g->has_bias = l->input_count > 2;
    /* The window geometry's slots (plexus/window.h): H and W in 0 and 1,
     * the depth of a 3-D layer in 2, a trivial slot 0 for a 1-D layer. */
    static const int slots4[] = {0, 1}, slots5[] = {2, 0, 1};
    const int *slots = g->nb_dims == 5 ? slots5 : slots4;
    g->x[0] = wg.n;
    g->x[1] = wg.c;
    g->w[0] = transpose ? wg.c : wg.m;
    g->w[1] = transpose ? wg.m / wg.group : wg.c / wg.group;
    g->y[0] = wg.n;
    g->y[1] = wg.m;
    g->b[0] = 1;
    g->b[1] = wg.m;
    for (int i = 0; i < g->spatial; i++) {
        int s = slots[i];
        g->x[2 + i] = wg.in[s];
        g->w[2 + i] = wg.k[s];
        g->y[2 + i] = wg.out[s];
        g->b[2 + i] = 1;
        g->pre_pad[i] = wg.pb[s];
        g->post_pad[i] = wg.pe[s];
        g->stride[i] = wg.s[s];
        g->dilation[i] = wg.d[s];
        if (transpose && !transpose_post_pad(wg.in[s], wg.out[s], wg.k[s], wg.s[s], wg.d[s],
                                             wg.pb[s], &g->post_pad[i])) {
            snprintf(buf, size,
                     "runs no conv_transpose whose spatial dim %d (input %lld, output %lld, "
                     "padding before %lld) is no convolution without negative padding "
                     "(cuDNN's backward data)",
                     i, (long long)wg.in[s], (long long)wg.out[s], (long long)wg.pb[s]);
            return buf;
        }
    }
    const struct {
        const char *name;
        const int64_t *dims;
        int64_t *strides;
    } tensors[] = {{"X", g->x, g->x_strides},
                   {"W", g->w, g->w_strides},
                   {"Y", g->y, g->y_strides},
                   {"B", g->b, g->b_strides}};
    for (size_t t = 0; t < sizeof tensors / sizeof tensors[0]; t++) {
        for (int i = 0; i < g->nb_dims; i++) {
            if (tensors[t].dims[i] == 0) {
                snprintf(buf, size, "runs %s on tensors with elements only, and %s has "
                         "none", op, tensors[t].name);
                return buf;
            }
        }
        if (packed(tensors[t].dims, g->nb_dims, tensors[t].strides) < 0) {
            snprintf(buf, size, "runs %s on tensors of up to 2^31 - 1 elements (cuDNN's "
                     "limit), and %s is larger", op, tensors[t].name);
            return buf;
        }
    }
    return NULL;
}
