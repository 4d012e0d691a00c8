#!/usr/bin/env python3
"""Generate the benchmark models: MobileNet-like and ResNet-like ONNX networks.

usage: scripts/make-bench-models.py OUT_DIR [--seed N] [--check-ort]

Writes into OUT_DIR, for NAME in mobilenet_like and resnet_like:

  NAME.onnx         float32 model, input "input" [1,3,224,224], output
                    "logits" [1,1000]; opset 13, IR version 8
  NAME.input.npy    a seeded random input for it (standard normal, float32)

  mobilenet_like    MobileNet-v1: 3x3 stride-2 conv stem (32 channels), 13
                    depthwise-separable blocks (depthwise 3x3 conv, group =
                    channels, BatchNormalization, Clip(0,6) = ReLU6; pointwise
                    1x1 conv, BatchNormalization, ReLU6), widths 64, 128, 128,
                    256, 256, 512 x 6, 1024, 1024, strides as MobileNet-v1,
                    then GlobalAveragePool, Flatten, Gemm 1024 -> 1000.
  resnet_like       ResNet-18: 7x7 stride-2 conv, BN, Relu, 3x3 stride-2
                    MaxPool, 4 stages of 2 basic blocks (3x3 conv, BN, Relu,
                    3x3 conv, BN, Add with the shortcut (1x1 stride-2 conv + BN
                    where the shape changes), Relu), widths 64/128/256/512,
                    GlobalAveragePool, Flatten, Gemm 512 -> 1000.

Weights are random (numpy.random.default_rng(seed), He-normal convolutions)
and BatchNormalization is kept as separate nodes, convolutions before it
having no bias, as an unfused export of a trained network would be. So that
activations neither explode nor vanish, each BatchNormalization's mean and
variance are those of its input on NAME.input.npy (computed by a NumPy forward
pass in float64, slightly perturbed), with scales near 1 and small shifts:
every BN output is O(1), like a trained network on real data. The logits are
O(1) too.

Deterministic: the same seed gives the same files (up to the last bits of
the calibration statistics where BLAS sums in another order).

Needs numpy and onnx (the onnx.helper / numpy_helper API). Each model is
checked with onnx.checker; with --check-ort (needs onnxruntime), it is also
run by ONNX Runtime and compared with the NumPy forward pass.
"""

import argparse
import os
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    sys.exit("make-bench-models.py needs the onnx package: "
             "python3 -m venv .venv-bench && .venv-bench/bin/pip install onnx numpy onnxruntime")

OPSET = 13
IR_VERSION = 8          # opset 13 needs IR 7+; onnx 1.17 reads up to 10
INPUT_SHAPE = (1, 3, 224, 224)
CLASSES = 1000
PRODUCER = "plexus scripts/make-bench-models.py"


# ---------------------------------------------------------------------------
# NumPy forward pass (batch 1, float64): used to calibrate BatchNormalization
# and, with --check-ort, as the reference.

def np_conv(x, w, stride, pad, group):
    """x [C,H,W], w [M, C/group, k, k] -> [M, Ho, Wo]."""
    c, h, wd = x.shape
    m, cg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    ho = (h + 2 * pad - k) // stride + 1
    wo = (wd + 2 * pad - k) // stride + 1
    out = np.zeros((m, ho, wo))
    for kh in range(k):
        for kw in range(k):
            sl = xp[:, kh:kh + stride * (ho - 1) + 1:stride,
                    kw:kw + stride * (wo - 1) + 1:stride]
            if group == 1:
                out += np.tensordot(w[:, :, kh, kw], sl, axes=(1, 0))
            elif group == c and cg == 1 and m == c:
                out += w[:, 0, kh, kw][:, None, None] * sl
            else:
                raise ValueError("only group 1 or depthwise")
    return out


def np_maxpool(x, k, stride, pad):
    c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    ho = (h + 2 * pad - k) // stride + 1
    wo = (wd + 2 * pad - k) // stride + 1
    out = np.full((c, ho, wo), -np.inf)
    for kh in range(k):
        for kw in range(k):
            out = np.maximum(out, xp[:, kh:kh + stride * (ho - 1) + 1:stride,
                                     kw:kw + stride * (wo - 1) + 1:stride])
    return out


# ---------------------------------------------------------------------------
# Graph builder: adds ONNX nodes and initializers and runs the NumPy forward
# pass alongside, so each BatchNormalization sees its real input.

class Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.counter = {}

    def _name(self, base):
        n = self.counter.get(base, 0)
        self.counter[base] = n + 1
        return f"{base}{n}" if n else base

    def _init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def conv(self, x, name, cout, k, stride, pad, group=1):
        xv, xn = x
        cin = xv.shape[0]
        fan_in = (cin // group) * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        w = w.astype(np.float32)
        self._init(f"{name}.weight", w)
        out = f"{name}.out"
        self.nodes.append(helper.make_node(
            "Conv", [xn, f"{name}.weight"], [out], name=name,
            kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad, pad, pad, pad], group=group, dilations=[1, 1]))
        return np_conv(xv, w.astype(np.float64), stride, pad, group), out

    def bn(self, x, name):
        xv, xn = x
        c = xv.shape[0]
        mean = xv.reshape(c, -1).mean(axis=1)
        var = xv.reshape(c, -1).var(axis=1)
        # Statistics "from training": close to, not exactly, this input's.
        mean = mean + self.rng.normal(0.0, 0.05, c) * np.sqrt(var + 1e-3)
        var = (var + 1e-3) * self.rng.uniform(0.8, 1.25, c)
        scale = self.rng.uniform(0.7, 1.3, c)
        bias = self.rng.normal(0.0, 0.1, c)
        eps = 1e-5
        f32 = lambda a: a.astype(np.float32)
        for suffix, v in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
            self._init(f"{name}.{suffix}", f32(v))
        out = f"{name}.out"
        self.nodes.append(helper.make_node(
            "BatchNormalization",
            [xn, f"{name}.scale", f"{name}.bias", f"{name}.mean", f"{name}.var"],
            [out], name=name, epsilon=eps))
        sv, bv, mv, vv = (f32(a).astype(np.float64) for a in (scale, bias, mean, var))
        y = (xv - mv[:, None, None]) / np.sqrt(vv[:, None, None] + eps) * sv[:, None, None] \
            + bv[:, None, None]
        return y, out

    def relu(self, x, name):
        xv, xn = x
        out = f"{name}.out"
        self.nodes.append(helper.make_node("Relu", [xn], [out], name=name))
        return np.maximum(xv, 0.0), out

    def relu6(self, x, name):
        xv, xn = x
        if "relu6.min" not in self.counter:
            self.counter["relu6.min"] = 1
            self._init("relu6.min", np.array(0.0, dtype=np.float32))
            self._init("relu6.max", np.array(6.0, dtype=np.float32))
        out = f"{name}.out"
        self.nodes.append(helper.make_node(
            "Clip", [xn, "relu6.min", "relu6.max"], [out], name=name))
        return np.clip(xv, 0.0, 6.0), out

    def add(self, a, b, name):
        out = f"{name}.out"
        self.nodes.append(helper.make_node("Add", [a[1], b[1]], [out], name=name))
        return a[0] + b[0], out

    def maxpool(self, x, name, k, stride, pad):
        xv, xn = x
        out = f"{name}.out"
        self.nodes.append(helper.make_node(
            "MaxPool", [xn], [out], name=name, kernel_shape=[k, k],
            strides=[stride, stride], pads=[pad, pad, pad, pad]))
        return np_maxpool(xv, k, stride, pad), out

    def head(self, x, output_name):
        """GlobalAveragePool, Flatten, Gemm to CLASSES logits."""
        xv, xn = x
        c = xv.shape[0]
        self.nodes.append(helper.make_node("GlobalAveragePool", [xn], ["gap.out"], name="gap"))
        self.nodes.append(helper.make_node("Flatten", ["gap.out"], ["flatten.out"],
                                           name="flatten", axis=1))
        w = (self.rng.standard_normal((CLASSES, c)) * np.sqrt(1.0 / c)).astype(np.float32)
        b = self.rng.normal(0.0, 0.01, CLASSES).astype(np.float32)
        self._init("fc.weight", w)
        self._init("fc.bias", b)
        self.nodes.append(helper.make_node(
            "Gemm", ["flatten.out", "fc.weight", "fc.bias"], [output_name], name="fc",
            alpha=1.0, beta=1.0, transB=1))
        pooled = xv.reshape(c, -1).mean(axis=1)
        return (w.astype(np.float64) @ pooled + b)[None, :], output_name

    def model(self, graph_name, input_name, output, doc):
        yv, yn = output
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, list(INPUT_SHAPE))],
            [helper.make_tensor_value_info(yn, TensorProto.FLOAT, list(yv.shape))],
            initializer=self.inits)
        graph.doc_string = doc
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=PRODUCER, producer_version="1")
        m.ir_version = IR_VERSION
        return m


def mobilenet_like(x0, rng):
    b = Builder(rng)
    x = (x0[0].astype(np.float64), "input")
    x = b.relu6(b.bn(b.conv(x, "stem.conv", 32, 3, 2, 1), "stem.bn"), "stem.relu6")
    # (output channels, stride) of MobileNet-v1's 13 depthwise-separable blocks
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
              (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]
    for i, (cout, stride) in enumerate(blocks, 1):
        p = f"block{i}"
        cin = x[0].shape[0]
        x = b.conv(x, f"{p}.dw", cin, 3, stride, 1, group=cin)
        x = b.relu6(b.bn(x, f"{p}.dw_bn"), f"{p}.dw_relu6")
        x = b.conv(x, f"{p}.pw", cout, 1, 1, 0)
        x = b.relu6(b.bn(x, f"{p}.pw_bn"), f"{p}.pw_relu6")
    y = b.head(x, "logits")
    return b.model("mobilenet_like", "input", y,
                   "MobileNet-v1-like, random weights (scripts/make-bench-models.py)"), y[0]


def resnet_like(x0, rng):
    b = Builder(rng)
    x = (x0[0].astype(np.float64), "input")
    x = b.relu(b.bn(b.conv(x, "stem.conv", 64, 7, 2, 3), "stem.bn"), "stem.relu")
    x = b.maxpool(x, "stem.pool", 3, 2, 1)
    for s, width in enumerate((64, 128, 256, 512), 1):
        for blk in (1, 2):
            p = f"layer{s}.{blk}"
            stride = 2 if (s > 1 and blk == 1) else 1
            shortcut = x
            if stride != 1 or x[0].shape[0] != width:
                shortcut = b.bn(b.conv(x, f"{p}.down", width, 1, stride, 0), f"{p}.down_bn")
            y = b.relu(b.bn(b.conv(x, f"{p}.conv1", width, 3, stride, 1), f"{p}.bn1"),
                       f"{p}.relu1")
            y = b.bn(b.conv(y, f"{p}.conv2", width, 3, 1, 1), f"{p}.bn2")
            x = b.relu(b.add(y, shortcut, f"{p}.add"), f"{p}.relu2")
    y = b.head(x, "logits")
    return b.model("resnet_like", "input", y,
                   "ResNet-18-like, random weights (scripts/make-bench-models.py)"), y[0]


MODELS = [("mobilenet_like", mobilenet_like, 1), ("resnet_like", resnet_like, 2)]


def check_ort(path, x, reference):
    try:
        import onnxruntime as ort
    except ImportError:
        print("  onnxruntime: not installed, not checked")
        return True
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out = sess.run(None, {"input": x})[0]
    diff = float(np.max(np.abs(out.astype(np.float64) - reference)))
    scale = float(np.max(np.abs(reference)))
    ok = diff <= 1e-3 * max(scale, 1.0)
    print(f"  onnxruntime {ort.__version__} vs NumPy float64: max abs diff {diff:.3g} "
          f"(max |logit| {scale:.3g}) {'ok' if ok else 'TOO LARGE'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=20240601,
                    help="base seed (each model adds its own offset)")
    ap.add_argument("--check-ort", action="store_true",
                    help="run each model with onnxruntime and compare with the NumPy forward pass")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    ok = True
    for name, build, offset in MODELS:
        rng = np.random.default_rng(args.seed + offset)
        x = rng.standard_normal(INPUT_SHAPE).astype(np.float32)
        model, ref = build(x, rng)
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(args.out_dir, f"{name}.onnx")
        onnx.save(model, path)
        np.save(os.path.join(args.out_dir, f"{name}.input.npy"), x)
        params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print(f"{path}: {len(model.graph.node)} nodes, {params / 1e6:.2f} M parameters, "
              f"{os.path.getsize(path) / 2**20:.1f} MiB; logits range "
              f"[{ref.min():.2f}, {ref.max():.2f}]")
        if args.check_ort:
            ok = check_ort(path, x, ref) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
