/* The ONNX converters of resampling: GridSample, one grid_sample layer
 * whose attributes go into the descriptor. */
#include <string.h>

#include "onnx_internal.h"

/* GridSample (opsets 16, 20, 22): opset 16 names the modes bilinear and
 * bicubic and takes 4-D X only; from 20 they are linear and cubic, over
 * any number of spatial dims. Both spellings are taken at every opset. */
plx_status onnxi_conv_grid_sample(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->dtype != PLX_DTYPE_FLOAT32 && x->dtype != PLX_DTYPE_FLOAT16 &&
        x->dtype != PLX_DTYPE_BFLOAT16) {
        return ONNXI_UNSUPPORTED("X of type %s (grid_sample interpolates float types only)",
                                 plx_dtype_name(x->dtype));
    }
    if (c->opset < 20 && x->rank != 4) {
        return onnxi_invalid(c, n, "X has rank %u; GridSample before opset 20 takes 4-D X",
                             x->rank);
    }
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    char mbuf[32], pbuf[32];
    const char *mode = onnxi_attr_s(n, "mode", c->opset < 20 ? "bilinear" : "linear", mbuf,
                                    sizeof mbuf);
    if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0) {
        d.mode = PLX_GRID_SAMPLE_LINEAR;
    } else if (strcmp(mode, "nearest") == 0) {
        d.mode = PLX_GRID_SAMPLE_NEAREST;
    } else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0) {
        d.mode = PLX_GRID_SAMPLE_CUBIC;
    } else {
        return onnxi_invalid(c, n, "mode '%s' is not linear, nearest or cubic", mode);
    }
    const char *padding = onnxi_attr_s(n, "padding_mode", "zeros", pbuf, sizeof pbuf);
    if (strcmp(padding, "zeros") == 0) {
        d.padding = PLX_GRID_SAMPLE_ZEROS;
    } else if (strcmp(padding, "border") == 0) {
        d.padding = PLX_GRID_SAMPLE_BORDER;
    } else if (strcmp(padding, "reflection") == 0) {
        d.padding = PLX_GRID_SAMPLE_REFLECTION;
    } else {
        return onnxi_invalid(c, n, "padding_mode '%s' is not zeros, border or reflection",
                             padding);
    }
    d.align_corners = onnxi_attr_i(n, "align_corners", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_GRID_SAMPLE, &d, n->in, 2);
}
