#!/usr/bin/env python3
"""Writes the non-finite cases: one directory per operator (or fused pair)
in the layout of ONNX's backend node tests (model.onnx,
test_data_set_0/input_K.pb, output_K.pb), whose inputs hold NaN, +inf,
-inf and signed zeros among ordinary values. tests/meson.build runs them on
every backend with tests/conformance/run_conformance.c (the `nonfinite`
test): every backend must give these outputs, NaN where they hold NaN.
The directories are committed; run this script again only to change them:

    python3 tests/data/nonfinite/make-cases.py

It needs onnx==1.17.0 and numpy (tests/conformance/requirements.txt; the
.venv-conformance virtual environment). The output is deterministic.

Expected outputs: ONNX's formula for each operator evaluated in IEEE
float32 (onnx.reference, which is numpy), so NaN propagates through max,
min, clip, pooling and reductions as numpy's maximum and minimum do, and
an operator whose formula gives NaN at an infinity (Softsign, Mish, Gelu
and HardSwish at -inf, x/(1+|x|) or x * 0 there) gives NaN. One
exception: where onnx.reference's implementation departs from its formula,
these cases expect the formula, computed here with numpy:
- MaxPool, AveragePool and LpPool: onnx.reference pads with NaN and
  filters NaN out of each window, so a NaN in the data is dropped too; the
  window's max, mean or p-norm keeps it.
- Resize: onnx.reference weighs every point of a fixed window, most with
  weight 0, so an infinity or NaN anywhere in it gives NaN (0 * inf). Here
  an output is the weighted sum of the input points with a nonzero weight:
  nearest copies one point, linear mixes the two neighbours on each axis,
  and a coordinate that falls on a point (or is clamped to the edge) takes
  that point alone."""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 20
NAN, INF = np.nan, np.inf

# x: [1, 2, 4, 4]. Its 2x2 windows (stride 2) hold a NaN (max NaN), an
# infinity, both infinities, or neither.
X = np.array([
    [NAN, 1.0, -1.0, 2.0],
    [0.5, -3.0, INF, -0.5],
    [-INF, 4.0, 1.5, -2.5],
    [2.5, -INF, 0.25, NAN],
    [1.0, -1.0, 3.0, 0.0],
    [-0.0, 2.0, -INF, 5.0],
    [INF, NAN, -4.0, 1.0],
    [0.75, -0.25, INF, -INF],
], dtype=np.float32).reshape(1, 2, 4, 4)
# b: [1, 2, 1, 4], broadcast against x by the binary operators
B = np.array([NAN, -INF, 0.5, -0.0, INF, 2.0, -1.0, NAN],
             dtype=np.float32).reshape(1, 2, 1, 4)

rng = np.random.default_rng(18)


def weights(*shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def tensor(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def value_info(name, a):
    a = np.asarray(a)
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))


def write_case(name, nodes, inputs, inits=(), expected=None):
    """nodes: onnx NodeProto list, reading the graph inputs (name -> array)
    and initializers (name -> array), writing y (and y1.. for several)."""
    init_list = [tensor(n, a) for n, a in inits]
    feeds = dict(inputs)
    if expected is None:
        # the graph's outputs: every node output no node reads
        read = {i for n in nodes for i in n.input}
        outs = [o for n in nodes for o in n.output if o not in read]
        probe = helper.make_graph(nodes, name, [value_info(k, v) for k, v in inputs],
                                  [helper.make_tensor_value_info(o, 0, None) for o in outs],
                                  init_list)
        ref = ReferenceEvaluator(helper.make_model(
            probe, opset_imports=[helper.make_opsetid("", OPSET)]))
        with np.errstate(all="ignore"):
            got = ref.run(None, feeds)
        expected = list(zip(outs, got))
    graph = helper.make_graph(
        nodes, name, [value_info(k, v) for k, v in inputs],
        [value_info(k, v) for k, v in expected], init_list)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="plexus-tests")
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(HERE, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs):
        onnx.save_tensor(tensor(k, v), os.path.join(d, "test_data_set_0", f"input_{i}.pb"))
    for i, (k, v) in enumerate(expected):
        onnx.save_tensor(tensor(k, np.asarray(v)),
                         os.path.join(d, "test_data_set_0", f"output_{i}.pb"))


def node(op, inputs, outputs="y", **attrs):
    return helper.make_node(op, inputs.split(",") if inputs else [], outputs.split(","),
                            **attrs)


def unary(op, **attrs):
    write_case(f"{op.lower()}", [node(op, "x", **attrs)], [("x", X)])


def pool_2d(x, k, s, pad, f):
    """f over each window (numpy: NaN when the window holds one); padding
    takes no part."""
    n, c, h, w = x.shape
    oh, ow = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    y = np.empty((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - pad, j * s - pad
            win = x[:, :, max(r0, 0):r0 + k, max(c0, 0):c0 + k]
            with np.errstate(all="ignore"):
                y[:, :, i, j] = f(win.astype(np.float64), axis=(2, 3))
    return y


def l2(a, axis):
    return np.sqrt(np.sum(a * a, axis=axis))


def resize_axis(a, axis, scale, linear):
    """half_pixel coordinates; nearest rounds halves down (ONNX's defaults)."""
    n = a.shape[axis]
    out = []
    for i in range(int(n * scale)):
        x = min(max((i + 0.5) / scale - 0.5, 0.0), n - 1.0)
        if not linear:
            r = int(np.ceil(x - 0.5))
            out.append(np.take(a, r, axis=axis))
            continue
        i0 = int(np.floor(x))
        t = x - i0
        a0 = np.take(a, i0, axis=axis)
        if t == 0.0:
            out.append(a0)
        else:
            with np.errstate(all="ignore"):
                out.append((1.0 - t) * a0 + t * np.take(a, i0 + 1, axis=axis))
    return np.stack(out, axis=axis)


def resize_2x(x, linear):
    y = resize_axis(x.astype(np.float64), 2, 2.0, linear)
    return resize_axis(y, 3, 2.0, linear).astype(np.float32)


def main():
    for entry in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, entry)):
            shutil.rmtree(os.path.join(HERE, entry))

    # activations and unary functions
    for op in ["Relu", "Sigmoid", "Tanh", "Elu", "Selu", "Softplus", "Softsign",
               "HardSwish", "Mish", "Abs", "Neg", "Sqrt", "Exp", "Log", "Ceil",
               "Floor", "Round", "Sign", "Reciprocal", "Sin", "Cos", "Erf",
               "IsNaN", "Identity"]:
        unary(op)
    unary("LeakyRelu", alpha=0.1)
    unary("HardSigmoid", alpha=0.2, beta=0.5)
    unary("ThresholdedRelu", alpha=0.5)
    unary("Celu", alpha=1.5)
    unary("Gelu")
    write_case("gelu_tanh", [node("Gelu", "x", approximate="tanh")], [("x", X)])
    write_case("isinf", [node("IsInf", "x")], [("x", X)])
    write_case("clip", [node("Clip", "x,lo,hi")], [("x", X)],
               [("lo", np.float32(-1.0)), ("hi", np.float32(2.0))])
    write_case("clip_min_only", [node("Clip", "x,lo")], [("x", X)], [("lo", np.float32(0.0))])
    write_case("prelu", [node("PRelu", "x,s")], [("x", X)],
               [("s", np.array([0.25, -0.5], np.float32).reshape(2, 1, 1))])

    # binary, broadcast, with NaN and infinities on both sides
    for op in ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum"]:
        write_case(op.lower(), [node(op, "x,b")], [("x", X), ("b", B)])
    for op in ["Greater", "Less", "Equal"]:
        write_case(op.lower(), [node(op, "x,b")], [("x", X), ("b", B)])
    write_case("max_three", [node("Max", "x,b,c")], [("x", X), ("b", B)],
               [("c", np.float32(0.0))])

    # pooling
    write_case("maxpool", [node("MaxPool", "x", kernel_shape=[2, 2], strides=[2, 2])],
               [("x", X)], expected=[("y", pool_2d(X, 2, 2, 0, np.max))])
    write_case("maxpool_3x3_pad", [node("MaxPool", "x", kernel_shape=[3, 3],
                                        pads=[1, 1, 1, 1])],
               [("x", X)], expected=[("y", pool_2d(X, 3, 1, 1, np.max))])
    write_case("globalmaxpool", [node("GlobalMaxPool", "x")], [("x", X)])
    write_case("averagepool", [node("AveragePool", "x", kernel_shape=[2, 2], strides=[2, 2])],
               [("x", X)], expected=[("y", pool_2d(X, 2, 2, 0, np.mean))])
    write_case("globalaveragepool", [node("GlobalAveragePool", "x")], [("x", X)])
    write_case("lppool", [node("LpPool", "x", kernel_shape=[2, 2], strides=[2, 2], p=2)],
               [("x", X)], expected=[("y", pool_2d(X, 2, 2, 0, l2))])

    # reductions, over the last axis and over the two spatial axes
    for op in ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd",
               "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]:
        write_case(op.lower(), [node(op, "x,axes")], [("x", X)],
                   [("axes", np.array([3], np.int64))])
        write_case(op.lower() + "_spatial", [node(op, "x,axes")], [("x", X)],
                   [("axes", np.array([2, 3], np.int64))])

    # products, alone and with the activations the optimiser fuses into them
    w1 = weights(3, 2, 1, 1)
    w3 = weights(3, 2, 3, 3)
    bias = weights(3)
    write_case("conv_1x1", [node("Conv", "x,w,bias")], [("x", X)], [("w", w1), ("bias", bias)])
    write_case("conv_3x3", [node("Conv", "x,w", pads=[1, 1, 1, 1])], [("x", X)], [("w", w3)])
    write_case("conv_relu", [node("Conv", "x,w,bias", "c"), node("Relu", "c")],
               [("x", X)], [("w", w1), ("bias", bias)])
    write_case("conv_clip", [node("Conv", "x,w,bias", "c"), node("Clip", "c,lo,hi")],
               [("x", X)], [("w", w1), ("bias", bias), ("lo", np.float32(0.0)),
                            ("hi", np.float32(6.0))])
    write_case("conv_leakyrelu", [node("Conv", "x,w", "c"), node("LeakyRelu", "c", alpha=0.1)],
               [("x", X)], [("w", w1)])
    write_case("conv_sigmoid", [node("Conv", "x,w", "c"), node("Sigmoid", "c")],
               [("x", X)], [("w", w1)])
    write_case("conv_3x3_relu", [node("Conv", "x,w", "c", pads=[1, 1, 1, 1]),
                                 node("Relu", "c")], [("x", X)], [("w", w3)])
    write_case("depthwise_relu", [node("Conv", "x,w", "c", group=2, pads=[1, 1, 1, 1]),
                                  node("Relu", "c")], [("x", X)], [("w", weights(2, 1, 3, 3))])
    write_case("conv_add_relu", [node("Conv", "x,w", "c"), node("Add", "c,x", "s"),
                                 node("Relu", "s")],
               [("x", X)], [("w", weights(2, 2, 1, 1))])
    write_case("convtranspose", [node("ConvTranspose", "x,w", strides=[2, 2])], [("x", X)],
               [("w", weights(2, 3, 2, 2))])
    a = X.reshape(4, 8)
    write_case("gemm", [node("Gemm", "a,w,bias")], [("a", a)],
               [("w", weights(8, 3)), ("bias", bias)])
    write_case("gemm_relu", [node("Gemm", "a,w,bias", "c"), node("Relu", "c")], [("a", a)],
               [("w", weights(8, 3)), ("bias", bias)])
    write_case("matmul", [node("MatMul", "x,w")], [("x", X)], [("w", weights(4, 3))])
    write_case("matmul_relu", [node("MatMul", "a,w", "c"), node("Relu", "c")], [("a", a)],
               [("w", weights(8, 3))])

    # normalisation
    write_case("softmax", [node("Softmax", "x", axis=-1)], [("x", X)])
    write_case("logsoftmax", [node("LogSoftmax", "x", axis=-1)], [("x", X)])
    write_case("batchnormalization", [node("BatchNormalization", "x,s,b,m,v")], [("x", X)],
               [("s", weights(2)), ("b", weights(2)), ("m", weights(2)),
                ("v", np.array([0.5, 2.0], np.float32))])
    write_case("layernormalization", [node("LayerNormalization", "x,s,b", axis=-1)],
               [("x", X)], [("s", weights(4)), ("b", weights(4))])
    write_case("instancenormalization", [node("InstanceNormalization", "x,s,b")], [("x", X)],
               [("s", weights(2)), ("b", weights(2))])

    # data movement: values pass untouched
    write_case("transpose", [node("Transpose", "x", perm=[0, 3, 1, 2])], [("x", X)])
    write_case("concat", [node("Concat", "x,x", axis=1)], [("x", X)])
    scales = [("scales", np.array([1, 1, 2, 2], np.float32))]
    write_case("resize_nearest", [node("Resize", "x,,scales", mode="nearest")], [("x", X)],
               scales, expected=[("y", resize_2x(X, False))])
    write_case("resize_linear", [node("Resize", "x,,scales", mode="linear")], [("x", X)],
               scales, expected=[("y", resize_2x(X, True))])
    write_case("pad_reflect", [node("Pad", "x,pads", mode="reflect")], [("x", X)],
               [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
    write_case("where", [node("IsNaN", "x", "m"), node("Where", "m,b,x")], [("x", X), ("b", B)])
    write_case("cumsum", [node("CumSum", "x,axis")], [("x", X)],
               [("axis", np.array(3, np.int64))])


if __name__ == "__main__":
    main()
