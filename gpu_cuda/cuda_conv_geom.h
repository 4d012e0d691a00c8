/* gpu_cuda's convolution geometry in plain C (no CUDA, no cuDNN): what a
 * conv or conv_transpose layer asks for, checked, and turned into the
 * tensor and convolution attributes cuDNN's graph API takes (cuda_conv.c). Kept apart so that a
 * host test (tests/test_gpu_cuda_conv.c) runs the same translation on a
 * machine without a GPU and checks it against cpu_ref's results. */
#ifndef GPU_CUDA_CUDA_CONV_GEOM_H
#define GPU_CUDA_CUDA_CONV_GEOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/backend.h>

/* cuDNN's convolutions take 4-D (NCHW) or 5-D (NCDHW) tensors: a 1-D
 * layer [N, C, W] is run as [N, C, 1, W] with a kernel of height 1. */
#define CUDA_CONV_MAX_DIMS 5

/* The largest tensor (in elements) and dim given to cuDNN: its legacy
 * convolution engines index with 32-bit integers. */
#define CUDA_CONV_MAX_ELEMENTS INT32_MAX
#define CUDA_CONV_DIM_LIMIT ((int64_t)1 << 30)

/* A conv or conv_transpose layer as cuDNN runs it: packed (row-major)
 * float32 tensors of nb_dims dims, the layer's input X [N, C, spatial...],
 * its weights W, its output Y [N, M, out...] and the bias [1, M, 1, ...];
 * and the convolution (per spatial dim, spatial = nb_dims - 2, in the
 * tensors' order: the padding before and after, with auto_pad resolved as
 * the host resolves it, the stride and the dilation). cuDNN's convolution
 * is a cross-correlation, grouped when W's second dim is a fraction of its
 * input's channels.
 *
 * conv (transpose false): the convolution runs from X to Y, W [M, C /
 * group, kernel...]; output channel m of group m / (M / group) reads input
 * channels [g * C / group, (g + 1) * C / group).
 *
 * conv_transpose (transpose true): the convolution runs from Y to X, W [C,
 * M / group, kernel...], and the layer is its backward data: Y position o
 * receives X position i through kernel tap t when i * stride - pre_pad +
 * t * dilation == o. Its padding after is what makes that convolution's
 * output X's size (never negative). */
typedef struct cuda_conv_geom {
    int nb_dims;
    int spatial;
    bool transpose;
    int64_t group;
    bool has_bias;
    int64_t x[CUDA_CONV_MAX_DIMS], w[CUDA_CONV_MAX_DIMS], y[CUDA_CONV_MAX_DIMS],
        b[CUDA_CONV_MAX_DIMS];
    int64_t x_strides[CUDA_CONV_MAX_DIMS], w_strides[CUDA_CONV_MAX_DIMS],
        y_strides[CUDA_CONV_MAX_DIMS], b_strides[CUDA_CONV_MAX_DIMS];
    int64_t pre_pad[CUDA_CONV_MAX_DIMS - 2], post_pad[CUDA_CONV_MAX_DIMS - 2];
    int64_t stride[CUDA_CONV_MAX_DIMS - 2], dilation[CUDA_CONV_MAX_DIMS - 2];
} cuda_conv_geom;

/* The geometry of a conv layer (PLX_OP_CONV: X, W, [B] -> Y, a
 * plx_conv_desc) or a conv_transpose layer (PLX_OP_CONV_TRANSPOSE, a
 * plx_conv_transpose_desc): NULL, g filled; else why gpu_cuda does not run
 * it, written into buf: a dtype other than float32, a rank other than 3 to
 * 5, an inconsistent shape or descriptor (plexus/window.h's checks, in
 * its words: "conv: ..."), an empty tensor, or one larger than
 * CUDA_CONV_MAX_ELEMENTS; for conv_transpose also a padding
 * that cuDNN's convolution cannot express (negative before, or an
 * output_padding beyond what the padding after absorbs). Pure
 * (thread-safe). */
const char *cuda_conv_geometry(const plx_layer_view *l, cuda_conv_geom *g, char *buf,
                               size_t size);

#endif /* GPU_CUDA_CUDA_CONV_GEOM_H */
