/* The table that maps each ONNX op type to its converter, and the entry
 * points the importer calls. One converter per ONNX operator (in the
 * convert_*.c files, by family): reads the node's attributes (and the
 * inputs that act as attributes, which must be known at import), emits
 * Plexus layers through onnxi_emit (which folds them when their inputs are
 * constants) and binds the node's outputs. A converter that cannot map a
 * node returns PLX_UNSUPPORTED with the reason only; the importer adds the
 * node's name, op type and opset. Semantics follow the ONNX operator
 * documents of each opset (https://onnx.ai/onnx/operators/). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef plx_status (*convert_fn)(onnxi_ctx *c, onnxi_node *n);

/* ---- dispatch ----------------------------------------------------------- */

static const struct {
    const char *op;
    convert_fn fn;
    int64_t since; /* the first opset with this form */
} converters[] = {
    {"Abs", onnxi_conv_unary, 1}, {"Acos", onnxi_conv_unary, 7}, {"Acosh", onnxi_conv_unary, 9},
    {"Add", onnxi_conv_binary, 1}, {"AffineGrid", onnxi_conv_affine_grid, 20},
    {"And", onnxi_conv_binary, 1},
    {"ArgMax", onnxi_conv_arg_reduce, 1}, {"ArgMin", onnxi_conv_arg_reduce, 1},
    {"Asin", onnxi_conv_unary, 7}, {"Asinh", onnxi_conv_unary, 9}, {"Atan", onnxi_conv_unary, 7},
    {"Atanh", onnxi_conv_unary, 9}, {"AveragePool", onnxi_conv_pool, 1},
    {"BatchNormalization", onnxi_conv_batch_norm, 1}, {"BitShift", onnxi_conv_bitshift, 11},
    {"BlackmanWindow", onnxi_conv_window, 17},
    {"BitwiseAnd", onnxi_conv_binary, 18}, {"BitwiseNot", onnxi_conv_unary, 18},
    {"BitwiseOr", onnxi_conv_binary, 18}, {"BitwiseXor", onnxi_conv_binary, 18},
    {"Cast", onnxi_conv_cast, 1}, {"CastLike", onnxi_conv_cast, 15}, {"Ceil", onnxi_conv_unary, 1},
    {"Celu", onnxi_conv_activation, 12}, {"CenterCropPad", onnxi_conv_center_crop_pad, 18},
    {"Clip", onnxi_conv_clip, 1}, {"Col2Im", onnxi_conv_col2im, 18},
    {"Compress", onnxi_conv_compress, 9}, {"Concat", onnxi_conv_concat, 1}, {"Constant", onnxi_conv_constant, 1},
    {"ConstantOfShape", onnxi_conv_constant_of_shape, 9}, {"Conv", onnxi_conv_conv, 1},
    {"ConvInteger", onnxi_conv_quant_default, 10},
    {"ConvTranspose", onnxi_conv_conv, 1}, {"Cos", onnxi_conv_unary, 7},
    {"Cosh", onnxi_conv_unary, 9}, {"CumSum", onnxi_conv_cum_sum, 11},
    {"DFT", onnxi_conv_dft, 17},
    {"DeformConv", onnxi_conv_deform_conv, 19}, {"DepthToSpace", onnxi_conv_depth_space, 1},
    {"DequantizeLinear", onnxi_conv_quantize, 10}, {"Det", onnxi_conv_det, 11},
    {"Div", onnxi_conv_binary, 1},
    {"DynamicQuantizeLinear", onnxi_conv_quant_default, 11},
    {"Dropout", onnxi_conv_identity, 1}, {"Einsum", onnxi_conv_einsum, 12},
    {"Elu", onnxi_conv_activation, 1},
    {"Equal", onnxi_conv_binary, 1}, {"Erf", onnxi_conv_unary, 9}, {"Exp", onnxi_conv_unary, 1},
    {"Expand", onnxi_conv_expand, 8}, {"EyeLike", onnxi_conv_eye_like, 9},
    {"Flatten", onnxi_conv_flatten, 1},
    {"Floor", onnxi_conv_unary, 1}, {"GRU", onnxi_conv_rnn, 1}, {"Gather", onnxi_conv_gather, 1},
    {"GatherElements", onnxi_conv_gather_elements, 11}, {"GatherND", onnxi_conv_gather_nd, 11},
    {"Gelu", onnxi_conv_activation, 20}, {"Gemm", onnxi_conv_gemm, 1},
    {"GlobalAveragePool", onnxi_conv_global_pool, 1}, {"GlobalLpPool", onnxi_conv_global_pool, 2},
    {"GlobalMaxPool", onnxi_conv_global_pool, 1},
    {"Greater", onnxi_conv_binary, 1}, {"GreaterOrEqual", onnxi_conv_binary, 12},
    {"GridSample", onnxi_conv_grid_sample, 16},
    {"GroupNormalization", onnxi_conv_group_norm, 18},
    {"HammingWindow", onnxi_conv_window, 17}, {"HannWindow", onnxi_conv_window, 17},
    {"HardSigmoid", onnxi_conv_activation, 1}, {"HardSwish", onnxi_conv_activation, 14},
    {"Hardmax", onnxi_conv_hardmax, 1},
    {"Identity", onnxi_conv_identity, 1}, {"If", onnxi_conv_if, 1},
    {"InstanceNormalization", onnxi_conv_instance_norm, 1}, {"IsInf", onnxi_conv_isinf, 10},
    {"IsNaN", onnxi_conv_unary, 9}, {"LRN", onnxi_conv_lrn, 1}, {"LSTM", onnxi_conv_rnn, 1},
    {"LayerNormalization", onnxi_conv_layer_norm, 17}, {"LeakyRelu", onnxi_conv_activation, 1},
    {"Less", onnxi_conv_binary, 1}, {"LessOrEqual", onnxi_conv_binary, 12},
    {"Log", onnxi_conv_unary, 1}, {"LogSoftmax", onnxi_conv_softmax, 1},
    {"Loop", onnxi_conv_loop, 1}, {"LpPool", onnxi_conv_pool, 2},
    {"MatMul", onnxi_conv_matmul, 1}, {"MatMulInteger", onnxi_conv_quant_default, 10}, {"Max", onnxi_conv_variadic, 1},
    {"MaxPool", onnxi_conv_pool, 1}, {"MaxUnpool", onnxi_conv_max_unpool, 9},
    {"Mean", onnxi_conv_variadic, 1},
    {"MeanVarianceNormalization", onnxi_conv_mvn, 9},
    {"MelWeightMatrix", onnxi_conv_mel_weight_matrix, 17},
    {"Min", onnxi_conv_variadic, 1}, {"Mish", onnxi_conv_activation, 18},
    {"Mod", onnxi_conv_binary, 10}, {"Mul", onnxi_conv_binary, 1}, {"Neg", onnxi_conv_unary, 1},
    {"NonMaxSuppression", onnxi_conv_nms, 10},
    {"NonZero", onnxi_conv_nonzero, 9}, {"Not", onnxi_conv_unary, 1},
    {"OneHot", onnxi_conv_one_hot, 9},
    {"Or", onnxi_conv_binary, 1}, {"PRelu", onnxi_conv_binary, 1},
    {"Pad", onnxi_conv_pad, 1}, {"Pow", onnxi_conv_binary, 1},
    {"QLinearConv", onnxi_conv_quant_default, 10},
    {"QLinearMatMul", onnxi_conv_quant_default, 10}, {"QuantizeLinear", onnxi_conv_quantize, 10},
    {"RNN", onnxi_conv_rnn, 1}, {"Range", onnxi_conv_range, 11},
    {"RoiAlign", onnxi_conv_roi_align, 10},
    {"Reciprocal", onnxi_conv_unary, 1}, {"ReduceL1", onnxi_conv_reduce, 1},
    {"ReduceL2", onnxi_conv_reduce, 1}, {"ReduceLogSum", onnxi_conv_reduce, 1},
    {"ReduceLogSumExp", onnxi_conv_reduce, 1}, {"ReduceMax", onnxi_conv_reduce, 1},
    {"ReduceMean", onnxi_conv_reduce, 1}, {"ReduceMin", onnxi_conv_reduce, 1},
    {"ReduceProd", onnxi_conv_reduce, 1}, {"ReduceSum", onnxi_conv_reduce, 1},
    {"ReduceSumSquare", onnxi_conv_reduce, 1}, {"Relu", onnxi_conv_activation, 1},
    {"Reshape", onnxi_conv_reshape, 1}, {"Resize", onnxi_conv_resize, 10},
    {"ReverseSequence", onnxi_conv_reverse_sequence, 10},
    {"Round", onnxi_conv_unary, 11}, {"STFT", onnxi_conv_stft, 17},
    {"Scan", onnxi_conv_scan, 8},
    {"Scatter", onnxi_conv_scatter_elements, 9},
    {"ScatterElements", onnxi_conv_scatter_elements, 11}, {"ScatterND", onnxi_conv_scatter_nd, 11},
    {"Selu", onnxi_conv_activation, 1},
    {"Shape", onnxi_conv_shape, 1}, {"Shrink", onnxi_conv_activation, 9},
    {"Sigmoid", onnxi_conv_activation, 1},
    {"Sign", onnxi_conv_unary, 9}, {"Sin", onnxi_conv_unary, 7}, {"Sinh", onnxi_conv_unary, 9},
    {"Size", onnxi_conv_size, 1}, {"Slice", onnxi_conv_slice, 1},
    {"Softmax", onnxi_conv_softmax, 1}, {"Softplus", onnxi_conv_activation, 1},
    {"Softsign", onnxi_conv_activation, 1}, {"SpaceToDepth", onnxi_conv_depth_space, 1},
    {"Split", onnxi_conv_split, 1}, {"Sqrt", onnxi_conv_unary, 1},
    {"Squeeze", onnxi_conv_squeeze, 1}, {"Sub", onnxi_conv_binary, 1},
    {"Sum", onnxi_conv_variadic, 1}, {"Tan", onnxi_conv_unary, 7},
    {"Tanh", onnxi_conv_activation, 1}, {"ThresholdedRelu", onnxi_conv_activation, 10},
    {"Tile", onnxi_conv_tile, 6}, {"TopK", onnxi_conv_topk, 1},
    {"Transpose", onnxi_conv_transpose, 1}, {"Trilu", onnxi_conv_trilu, 14},
    {"Unique", onnxi_conv_unique, 11},
    {"Unsqueeze", onnxi_conv_squeeze, 1},
    {"Upsample", onnxi_conv_resize, 7}, {"Where", onnxi_conv_where, 9},
    {"Xor", onnxi_conv_binary, 1},
};

bool onnxi_op_known(const char *op) {
    for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++) {
        if (strcmp(converters[i].op, op) == 0) {
            return true;
        }
    }
    return false;
}

plx_status onnxi_convert(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    if (n->proto->domain && strcmp(n->proto->domain, "com.microsoft") == 0) {
        return onnxi_convert_microsoft(c, n);
    }
    for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++) {
        if (strcmp(converters[i].op, op) == 0) {
            if (c->opset < converters[i].since) {
                return ONNXI_UNSUPPORTED("the operator does not exist in opset %lld",
                                         (long long)c->opset);
            }
            return converters[i].fn(c, n);
        }
    }
    return ONNXI_UNSUPPORTED("operator not supported");
}
