/* The ONNX converters of quantized models: QuantizeLinear and
 * DequantizeLinear, the QOperator forms (QLinearConv, QLinearMatMul and,
 * from the com.microsoft domain that onnxruntime.quantization writes,
 * QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSoftmax
 * and QGemm) and the integer ones (MatMulInteger, ConvInteger,
 * DynamicQuantizeLinear).
 *
 * A QOperator node becomes what it means in QDQ form: dequantize of each
 * input, the float layer, quantize of the result. The optimiser's QDQ pass
 * (core/src/rewrite.c) then turns dequantize -> conv/matmul -> quantize into
 * one layer on quantized tensors wherever a backend runs it, so both forms
 * reach the int8 kernels the same way, and a network no backend runs in
 * int8 keeps the float path. Dequantize of a constant is therefore not
 * folded at import (onnxi_emit): the pass needs the int8 weights. The
 * integer forms map to matmul_integer, conv_integer and dynamic_quantize
 * one to one. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

plx_status onnxi_conv_quantize(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    bool quant = strcmp(n->proto->op_type, "QuantizeLinear") == 0;
    /* Plexus quantizes to 4, 8 and 16 bits and the float8 types (and
     * dequantizes int32 biases). */
    plx_dtype q = quant ? (onnxi_has_in(n, 2) ? n->in[2]->info.dtype : PLX_DTYPE_UINT8)
                        : n->in[0]->info.dtype;
    int32_t attr_out = quant ? onnxi_attr_i32(n, "output_dtype", 0) : 0; /* opset 21 */
    if (attr_out != 0 && !onnxi_has_in(n, 2)) {
        q = onnxi_dtype(attr_out);
    }
    bool q_ok = q == PLX_DTYPE_INT8 || q == PLX_DTYPE_UINT8 || q == PLX_DTYPE_INT16 ||
                q == PLX_DTYPE_UINT16 || q == PLX_DTYPE_INT4 || q == PLX_DTYPE_UINT4 ||
                plx_dtype_is_float8(q) ||
                (!quant && q == PLX_DTYPE_INT32);
    if (!q_ok) {
        return ONNXI_UNSUPPORTED("%s quantized data", plx_dtype_name(q));
    }
    /* dequantize makes the scale's dtype */
    plx_dtype out = quant ? q : n->in[1]->info.dtype;
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(out);
    d.axis = onnxi_attr_i32(n, "axis", 1);
    d.saturate = onnxi_attr_i(n, "saturate", 1) != 0; /* opset 19: float8 outputs */
    d.block_size = onnxi_attr_i(n, "block_size", 0); /* opset 21: blocked */
    return onnxi_emit1(c, n, quant ? PLX_OP_QUANTIZE : PLX_OP_DEQUANTIZE, &d, n->in,
                       onnxi_has_in(n, 2) ? 3 : 2);
}

/* A float16 or bfloat16 scale (QLinearMatMul of opset 21 allows them) as
 * float32, which the (de)quantize layers take; folded for a constant. */
static plx_status float32_scale(onnxi_ctx *c, onnxi_node *n, onnxi_value **scale) {
    plx_dtype dt = (*scale)->info.dtype;
    if (dt != PLX_DTYPE_FLOAT16 && dt != PLX_DTYPE_BFLOAT16) {
        return NULL;
    }
    plx_cast_desc d = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT32);
    return onnxi_emit(c, n, PLX_OP_CAST, &d, scale, 1, 1, scale);
}

/* dequantize(v; scale, zero_point) along `axis` (used when the scale is
 * 1-D with more than one entry). */
static plx_status dequantize(onnxi_ctx *c, onnxi_node *n, onnxi_value *v, onnxi_value *scale,
                             onnxi_value *zero_point, int32_t axis, onnxi_value **out) {
    if (!v || !scale) {
        return onnxi_invalid(c, n, "a quantized input or its scale is missing");
    }
    plx_status st = float32_scale(c, n, &scale);
    if (st) {
        return st;
    }
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    d.axis = axis;
    onnxi_value *in[3] = {v, scale, zero_point};
    return onnxi_emit(c, n, PLX_OP_DEQUANTIZE, &d, in, zero_point ? 3 : 2, 1, out);
}

/* quantize(y; scale, zero_point) bound to the node's output 0. */
static plx_status quantize_out(onnxi_ctx *c, onnxi_node *n, onnxi_value *y, onnxi_value *scale,
                               onnxi_value *zero_point) {
    if (!scale) {
        return onnxi_invalid(c, n, "the output's scale is missing");
    }
    plx_dtype out = zero_point ? zero_point->info.dtype : PLX_DTYPE_UINT8;
    if (out != PLX_DTYPE_INT8 && out != PLX_DTYPE_UINT8) {
        return ONNXI_UNSUPPORTED("%s quantized output", plx_dtype_name(out));
    }
    plx_status st = float32_scale(c, n, &scale);
    if (st) {
        return st;
    }
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(out);
    onnxi_value *in[3] = {y, scale, zero_point};
    return onnxi_emit1(c, n, PLX_OP_QUANTIZE, &d, in, zero_point ? 3 : 2);
}

/* The axis a 1-D scale of more than one entry quantizes along: `axis`;
 * any other scale is per tensor and the axis is not read. */
static int32_t scale_axis(const onnxi_value *scale, int32_t axis) {
    return scale && scale->info.rank == 1 && scale->info.dims[0] > 1 ? axis : 1;
}

/* dequantize of an int32 bias whose scale is x_scale * w_scale (per
 * output channel), which must be constants here to make that product. */
static plx_status bias_dequantize(onnxi_ctx *c, onnxi_node *n, onnxi_value *bias,
                                  const onnxi_value *xs, const onnxi_value *ws, onnxi_value **out) {
    if (xs->kind != ONNXI_CONST || ws->kind != ONNXI_CONST ||
        xs->info.dtype != PLX_DTYPE_FLOAT32 || ws->info.dtype != PLX_DTYPE_FLOAT32 ||
        onnxi_elem_count(&xs->info) != 1) {
        return ONNXI_UNSUPPORTED("a bias with input and weight scales that are not constant "
                                 "float32 (the input's a scalar)");
    }
    plx_tensor_info si = ws->info;
    void *data = NULL;
    plx_status st = onnxi_alloc_const(c, n, &si, &data);
    if (st) {
        return st;
    }
    size_t count = onnxi_elem_count(&si);
    for (size_t i = 0; i < count; i++) {
        ((float *)data)[i] = ((const float *)xs->data)[0] * ((const float *)ws->data)[i];
    }
    onnxi_value *bs;
    if ((st = onnxi_const_take(c, &si, data, &bs))) {
        return st;
    }
    return dequantize(c, n, bias, bs, NULL, 0, out);
}

/* QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
 * y_scale, y_zero_point, [B (int32, in units of x_scale * w_scale)]. */
static plx_status conv_qlinear_conv(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 8);
    if (st) {
        return st;
    }
    plx_conv_desc d;
    if ((st = onnxi_read_conv_desc(c, n, 3, &d))) {
        return st;
    }
    onnxi_value *x, *w, *b = NULL, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &x)) ||
        (st = dequantize(c, n, n->in[3], n->in[4], n->in[5], 0, &w))) {
        return st;
    }
    if (onnxi_has_in(n, 8) && (st = bias_dequantize(c, n, n->in[8], n->in[1], n->in[4], &b))) {
        return st;
    }
    onnxi_value *in[3] = {x, w, b};
    if ((st = onnxi_emit(c, n, PLX_OP_CONV, &d, in, b ? 3 : 2, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[6], n->in[7]);
}

/* QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
 * y_scale, y_zero_point; a 1-D a_scale is per row of A, b_scale per
 * column of B. */
static plx_status conv_qlinear_matmul(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 8);
    if (st) {
        return st;
    }
    const plx_tensor_info *ai = &n->in[0]->info, *bi = &n->in[3]->info;
    if (ai->rank < 2 || bi->rank < 2) {
        return ONNXI_UNSUPPORTED("QLinearMatMul of 1-D operands");
    }
    onnxi_value *a, *b, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2],
                         scale_axis(n->in[1], (int32_t)ai->rank - 2), &a)) ||
        (st = dequantize(c, n, n->in[3], n->in[4], n->in[5],
                         scale_axis(n->in[4], (int32_t)bi->rank - 1), &b))) {
        return st;
    }
    onnxi_value *in[2] = {a, b};
    if ((st = onnxi_emit(c, n, PLX_OP_MATMUL, NULL, in, 2, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[6], n->in[7]);
}

/* MatMulInteger and ConvInteger: A/X, B/W, [zero point], [zero point]; an
 * absent first zero point with a second one present becomes 0. */
static plx_status conv_integer_product(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    onnxi_value *in[4] = {n->in[0], n->in[1], n->in[2], n->in[3]};
    uint32_t count = onnxi_has_in(n, 3) ? 4 : onnxi_has_in(n, 2) ? 3 : 2;
    if (count == 4 && !in[2] &&
        (st = onnxi_scalar_const(c, n->in[0]->info.dtype, 0.0, &in[2]))) {
        return st;
    }
    return onnxi_emit1(c, n, op, desc, in, count);
}

static plx_status conv_matmul_integer(onnxi_ctx *c, onnxi_node *n) {
    return conv_integer_product(c, n, PLX_OP_MATMUL_INTEGER, NULL);
}

static plx_status conv_conv_integer(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    plx_conv_desc d;
    if (st || (st = onnxi_read_conv_desc(c, n, 1, &d))) {
        return st;
    }
    return conv_integer_product(c, n, PLX_OP_CONV_INTEGER, &d);
}

static plx_status conv_dynamic_quantize(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    onnxi_value *out[3];
    if ((st = onnxi_emit(c, n, PLX_OP_DYNAMIC_QUANTIZE, NULL, n->in, 1, 3, out))) {
        return st;
    }
    for (size_t k = 0; k < 3 && !st; k++) {
        st = onnxi_bind_out(c, n, k, out[k]);
    }
    return st;
}

/* ---- com.microsoft ------------------------------------------------------ */

/* QLinearAdd, QLinearMul: A, A_scale, A_zero_point, B, B_scale,
 * B_zero_point, C_scale, C_zero_point (broadcasting, per-tensor). */
static plx_status conv_qlinear_binary(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 7);
    if (st) {
        return st;
    }
    bool add = strcmp(n->proto->op_type, "QLinearAdd") == 0;
    onnxi_value *a, *b, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &a)) ||
        (st = dequantize(c, n, n->in[3], n->in[4], n->in[5], 1, &b))) {
        return st;
    }
    plx_binary_desc d = PLX_BINARY_DESC_INIT(add ? PLX_BINARY_ADD : PLX_BINARY_MUL);
    onnxi_value *in[2] = {a, b};
    if ((st = onnxi_emit(c, n, PLX_OP_BINARY, &d, in, 2, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[6], n->in[7]);
}

/* QLinearSigmoid, QLinearLeakyRelu (alpha): X, X_scale, X_zero_point,
 * Y_scale, Y_zero_point. */
static plx_status conv_qlinear_activation(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 4);
    if (st) {
        return st;
    }
    bool sigmoid = strcmp(n->proto->op_type, "QLinearSigmoid") == 0;
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(sigmoid ? PLX_ACT_SIGMOID : PLX_ACT_LEAKY_RELU);
    if (!sigmoid) {
        d.alpha = onnxi_attr_f(n, "alpha", d.alpha);
    }
    onnxi_value *x, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &x)) ||
        (st = onnxi_emit(c, n, PLX_OP_ACTIVATION, &d, &x, 1, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[3], n->in[4]);
}

/* QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale,
 * y_zero_point; channels_last 0 only. */
static plx_status conv_qlinear_global_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 4);
    if (st) {
        return st;
    }
    if (onnxi_attr_i(n, "channels_last", 0) != 0) {
        return ONNXI_UNSUPPORTED("channels_last = 1");
    }
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    onnxi_value *x, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &x)) ||
        (st = onnxi_emit(c, n, PLX_OP_GLOBAL_POOL, &d, &x, 1, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[3], n->in[4]);
}

/* QLinearAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point;
 * AveragePool's attributes; channels_last 0 only. */
static plx_status conv_qlinear_avg_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 4);
    if (st) {
        return st;
    }
    if (onnxi_attr_i(n, "channels_last", 0) != 0) {
        return ONNXI_UNSUPPORTED("channels_last = 1");
    }
    plx_pool_desc d;
    onnxi_value *x, *y;
    if ((st = onnxi_read_pool_desc(c, n, PLX_POOL_AVERAGE, &d)) ||
        (st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &x)) ||
        (st = onnxi_emit(c, n, PLX_OP_POOL, &d, &x, 1, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[3], n->in[4]);
}

/* QLinearConcat: Y_scale, Y_zero_point, then X, X_scale, X_zero_point per
 * input; axis. */
static plx_status conv_qlinear_concat(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 5);
    if (st) {
        return st;
    }
    if ((n->n_in - 2) % 3 != 0 || n->n_in > 2 + 3 * 4) {
        return n->n_in > 2 + 3 * 4 ? ONNXI_UNSUPPORTED("more than 4 inputs")
                                   : onnxi_invalid(c, n, "%zu inputs: expected Y_scale, "
                                                   "Y_zero_point and triples", n->n_in);
    }
    size_t k = (n->n_in - 2) / 3;
    onnxi_value *x[4], *y;
    for (size_t i = 0; i < k; i++) {
        if ((st = dequantize(c, n, n->in[2 + 3 * i], n->in[3 + 3 * i], n->in[4 + 3 * i], 1,
                             &x[i]))) {
            return st;
        }
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(onnxi_attr_i32(n, "axis", 0));
    if ((st = onnxi_emit(c, n, PLX_OP_CONCAT, &d, x, (uint32_t)k, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[0], n->in[1]);
}

/* QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point, [C (int32,
 * in units of a_scale * b_scale)], [y_scale, y_zero_point]; alpha, transA,
 * transB. Y = alpha A'B' + C, quantized when y_scale is given, float32
 * otherwise. */
static plx_status conv_qgemm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 6);
    if (st) {
        return st;
    }
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.alpha = onnxi_attr_f(n, "alpha", 1.0f);
    d.beta = 1.0f;
    d.trans_a = onnxi_attr_i(n, "transA", 0) != 0;
    d.trans_b = onnxi_attr_i(n, "transB", 0) != 0;
    onnxi_value *a, *b, *bias = NULL, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &a)) ||
        (st = dequantize(c, n, n->in[3], n->in[4], n->in[5],
                         scale_axis(n->in[4], d.trans_b ? 0 : 1), &b))) {
        return st;
    }
    if (onnxi_has_in(n, 6) && (st = bias_dequantize(c, n, n->in[6], n->in[1], n->in[4], &bias))) {
        return st;
    }
    onnxi_value *in[3] = {a, b, bias};
    if ((st = onnxi_emit(c, n, PLX_OP_GEMM, &d, in, bias ? 3 : 2, 1, &y))) {
        return st;
    }
    if (!onnxi_has_in(n, 7)) {
        return onnxi_bind_out(c, n, 0, y);
    }
    return quantize_out(c, n, y, n->in[7], onnxi_has_in(n, 8) ? n->in[8] : NULL);
}

/* QLinearSoftmax: X, X_scale, x_zero_point, y_scale, y_zero_point; axis
 * (default -1) and opset (of Softmax's semantics: before 13 the input is
 * coerced to 2-D at axis, which only the last axis leaves alone). */
static plx_status conv_qlinear_softmax(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 4);
    if (st) {
        return st;
    }
    int64_t rank = n->in[0]->info.rank, axis = onnxi_attr_i(n, "axis", -1);
    if (rank == 0 || axis < -rank || axis >= rank) {
        return onnxi_invalid(c, n, "axis %lld is out of range for rank %lld", (long long)axis,
                             (long long)rank);
    }
    axis = axis < 0 ? axis + rank : axis;
    if (onnxi_attr_i(n, "opset", 13) < 13 && axis != rank - 1) {
        return ONNXI_UNSUPPORTED("softmax of opset < 13 over an axis other than the last");
    }
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    d.axis = (int32_t)axis;
    onnxi_value *x, *y;
    if ((st = dequantize(c, n, n->in[0], n->in[1], n->in[2], 1, &x)) ||
        (st = onnxi_emit(c, n, PLX_OP_SOFTMAX, &d, &x, 1, 1, &y))) {
        return st;
    }
    return quantize_out(c, n, y, n->in[3], n->in[4]);
}

/* ---- dispatch ----------------------------------------------------------- */

plx_status onnxi_conv_quant_default(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    if (strcmp(op, "QLinearConv") == 0) {
        return conv_qlinear_conv(c, n);
    }
    if (strcmp(op, "QLinearMatMul") == 0) {
        return conv_qlinear_matmul(c, n);
    }
    if (strcmp(op, "MatMulInteger") == 0) {
        return conv_matmul_integer(c, n);
    }
    if (strcmp(op, "ConvInteger") == 0) {
        return conv_conv_integer(c, n);
    }
    return conv_dynamic_quantize(c, n);
}

static const struct {
    const char *op;
    plx_status (*fn)(onnxi_ctx *c, onnxi_node *n);
} microsoft[] = {
    {"QLinearAdd", conv_qlinear_binary},
    {"QLinearMul", conv_qlinear_binary},
    {"QLinearSigmoid", conv_qlinear_activation},
    {"QLinearLeakyRelu", conv_qlinear_activation},
    {"QLinearGlobalAveragePool", conv_qlinear_global_pool},
    {"QLinearAveragePool", conv_qlinear_avg_pool},
    {"QLinearConcat", conv_qlinear_concat},
    {"QGemm", conv_qgemm},
    {"QLinearSoftmax", conv_qlinear_softmax},
};

bool onnxi_microsoft_op_known(const char *op) {
    for (size_t i = 0; i < sizeof microsoft / sizeof microsoft[0]; i++) {
        if (strcmp(microsoft[i].op, op) == 0) {
            return true;
        }
    }
    return false;
}

plx_status onnxi_convert_microsoft(onnxi_ctx *c, onnxi_node *n) {
    for (size_t i = 0; i < sizeof microsoft / sizeof microsoft[0]; i++) {
        if (strcmp(microsoft[i].op, n->proto->op_type) == 0) {
            return microsoft[i].fn(c, n);
        }
    }
    return ONNXI_UNSUPPORTED("operator not supported");
}
