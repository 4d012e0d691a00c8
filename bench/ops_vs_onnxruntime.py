#!/usr/bin/env python3
"""Plexus against ONNX Runtime, one operator at a time.

usage: bench/ops_vs_onnxruntime.py [--plexus PATH] [--backend-path PATH]...
           [--only SUBSTRING,...] [--list] [--threads 1,2]
           [--configs cpu_ref,cpu_onednn+cpu_ref] [--rounds R]
           [--runs-per-round K] [--warmup W] [--timeout S] [--ort-iobinding]
           [--json OUT] [--keep DIR]

The script builds single-operator ONNX models with onnx.helper (opset 17
unless the operator needs another: Gelu is opset 20), float32, weights as
initializers with fixed-seed random values, inputs as graph inputs of fixed
shapes, each checked with onnx.checker. The shapes are those of real models:
PaddleOCR's MobileNetV3-style detector and recogniser, openWakeWord's audio
networks, Silero VAD and the MiniLM transformer. Each case is named by its
operator, its variant and its shapes, e.g. `add/per_channel
1x64x128x128+1x64x1x1` (`--list` prints them all). Models and their inputs
(CASE.INPUT.npy, the case name with characters outside [A-Za-z0-9._-] made
'_') go to a temporary directory, or to --keep DIR, which is kept.

For each case, each thread count T and each Plexus configuration (backend
ids joined by '+', passed to `plexus run --backends` joined by ','), R
rounds alternate, the order swapping every round:

  Plexus        one `plexus run MODEL --json --iterations K --warmup W`
                process; the round's figure is its latency_ms.median (load
                time is not included);
  ONNX Runtime  W untimed and K timed session.run calls, in this process,
                intra_op_num_threads T, inter_op_num_threads 1,
                ORT_ENABLE_ALL, CPUExecutionProvider; the round's figure is
                the median of the K. Each call is timed from Python, so it
                includes ONNX Runtime's binding overhead (a few microseconds),
                which is not negligible for the smallest cases and favours
                Plexus there (--ort-iobinding times run_with_iobinding on
                inputs bound once instead, which takes some of it away).

Per row: the median over the rounds of the round medians, for both, and
ratio = Plexus / ONNX Runtime (below 1 Plexus is faster, 2.0 means Plexus
takes twice as long).

Threads: Plexus gets `--option ID.threads=T` for each backend of the
configuration that declares a `threads` option in `plexus info --json`.

Outputs: once per case and configuration (the first round of the first
thread count), Plexus writes its outputs (--output-dir) and they are
compared with ONNX Runtime's on the same inputs: max abs diff, flagged '!'
when above 1e-4 + 1e-3 * max|ONNX Runtime's output|. The backend column
says which backend ran the operator, from the JSON's assignment:
`cpu_onednn`, or `cpu_ref (fallback: OP)` when the first backend refused it.

A case that Plexus fails to load or run is reported with the error and
counted; the others go on. Printed: one line per measurement as it goes;
per configuration and thread count a table, worst ratio first; a summary
(cases, geometric mean of the ratios, how many above 1.5, how many failed);
and the best configuration per case and thread count (the lowest ratio over
the configurations), worst first, with its geometric mean and the count
above 1.5. Exit status 1 if any case failed, else 0.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import zlib

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
VENV = os.path.join(REPO, ".venv-bench")
sys.path.insert(0, BENCH)
sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
import vs_onnxruntime as vo  # noqa: E402  (defines only; needs nothing at import)

SLOW = 1.5  # the goal: no case slower than 1.5x ONNX Runtime


def import_deps():
    """numpy, onnx, onnxruntime; re-runs this script with .venv-bench's
    Python if they are missing here and that venv exists (as
    vs_onnxruntime.import_deps does for itself)."""
    try:
        import numpy
        import onnx
        import onnxruntime
        return numpy, onnx, onnxruntime
    except ImportError as e:
        venv_python = os.path.join(VENV, "bin", "python")
        if (os.path.exists(venv_python) and not os.environ.get("PLEXUS_BENCH_REEXEC")
                and os.path.realpath(sys.prefix) != os.path.realpath(VENV)):
            os.environ["PLEXUS_BENCH_REEXEC"] = "1"
            os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])
        sys.stderr.write(f"error: {e}\n\n" + vo.INSTALL_HINT.replace(
            "bench/vs_onnxruntime.py", "bench/ops_vs_onnxruntime.py"))
        sys.exit(2)


# ---------------------------------------------------------------------------
# The cases. Each is (name, build) where build(np, rng) returns a spec:
#   nodes: [(op_type, inputs, outputs, attrs)], inputs: {name: array},
#   inits: {name: array}, outputs: [names], opset.
# Nothing is built until a case is selected, so --list is instant.

def dims(shape):
    return "x".join(str(d) for d in shape)


def spec(nodes, inputs, inits=None, outputs=("y",), opset=17):
    return {"nodes": nodes, "inputs": inputs, "inits": inits or {},
            "outputs": list(outputs), "opset": opset}


def randn(np, rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


CASES = []


def case(name):
    def deco(fn):
        CASES.append((name, fn))
        return fn
    return deco


def add_case(name, fn):
    CASES.append((name, fn))


# -- elementwise binary ------------------------------------------------------
# pattern -> (small (a, b), large (a, b)); None for b means a scalar constant.
# 'row' is a bias vector as a transformer has it, an initializer.
BCAST = {
    "same": (([1, 16, 16, 16], [1, 16, 16, 16]), ([1, 64, 128, 128], [1, 64, 128, 128])),
    "per_channel": (([1, 16, 16, 16], [1, 16, 1, 1]), ([1, 64, 128, 128], [1, 64, 1, 1])),
    "scalar": (([1, 16, 16, 16], None), ([1, 64, 128, 128], None)),
    "row": (([16, 384], [384]), ([2048, 512], [512])),
    "column": (([16, 384], [16, 1]), ([2048, 512], [2048, 1])),
    "both_bcast": (([1, 16, 1, 16], [1, 1, 16, 1]), ([1, 64, 1, 128], [1, 1, 128, 1])),
}
BINARY = {
    # op: [(pattern, size), ...]
    "Add": [(p, s) for p in BCAST for s in ("small", "large")],
    "Mul": [("same", "small"), ("same", "large"), ("per_channel", "small"),
            ("per_channel", "large"), ("scalar", "large"), ("row", "small"),
            ("both_bcast", "large")],
    "Sub": [("same", "large"), ("column", "small"), ("column", "large"), ("scalar", "small")],
    "Div": [("same", "large"), ("per_channel", "large"), ("column", "small"),
            ("scalar", "large")],
    "Max": [("same", "large"), ("per_channel", "small"), ("scalar", "large")],
}


def binary_case(op, pattern, size):
    a_shape, b_shape = BCAST[pattern][0 if size == "small" else 1]
    const_b = b_shape is None or pattern == "row"
    if b_shape is None:
        shapes = f"{dims(a_shape)}+scalar const"
    else:
        shapes = f"{dims(a_shape)}+{dims(b_shape)}" + (" const" if const_b else "")
    name = f"{op.lower()}/{pattern} {shapes}"

    def build(np, rng):
        a = randn(np, rng, a_shape)
        if b_shape is None:
            b = np.array(0.5 if op != "Div" else 1.7, dtype=np.float32)
        elif op == "Div":  # keep the divisor away from zero
            b = (rng.uniform(0.5, 2.0, b_shape) * rng.choice([-1.0, 1.0], b_shape)).astype(np.float32)
        else:
            b = randn(np, rng, b_shape)
        inputs, inits = {"a": a}, {}
        (inits if const_b else inputs)["b"] = b
        return spec([(op, ["a", "b"], ["y"], {})], inputs, inits)
    add_case(name, build)


for _op, _variants in BINARY.items():
    for _p, _s in _variants:
        binary_case(_op, _p, _s)

# Pow with a constant exponent 2 (x * x in disguise, as exported models have it).
@case("pow/square 1x64x128x128^2 const")
def _(np, rng):
    return spec([("Pow", ["x", "e"], ["y"], {})], {"x": randn(np, rng, [1, 64, 128, 128])},
                {"e": np.array(2.0, dtype=np.float32)})


# -- unary and activations -----------------------------------------------------
LARGE = [1, 64, 128, 128]
SMALL = [1, 16, 16, 16]
UNARY = [
    # (name, op, attrs, input kind, shapes)
    ("relu", "Relu", {}, "normal", [LARGE, SMALL]),
    ("sigmoid", "Sigmoid", {}, "normal", [LARGE, SMALL]),
    ("tanh", "Tanh", {}, "normal", [LARGE, SMALL]),
    ("exp", "Exp", {}, "normal", [LARGE]),
    ("erf", "Erf", {}, "normal", [LARGE, [2, 16, 1536]]),
    ("leakyrelu", "LeakyRelu", {"alpha": 0.01}, "normal", [LARGE]),
    ("hardsigmoid", "HardSigmoid", {"alpha": 1.0 / 6, "beta": 0.5}, "normal", [LARGE, SMALL]),
    ("hardswish", "HardSwish", {}, "normal", [LARGE, SMALL]),
    ("sqrt", "Sqrt", {}, "positive", [LARGE]),
]
for _n, _op, _attrs, _kind, _shapes in UNARY:
    for _shape in _shapes:
        def _build(np, rng, op=_op, attrs=_attrs, kind=_kind, shape=_shape):
            x = randn(np, rng, shape, 2.0)
            if kind == "positive":
                x = np.abs(x) + np.float32(1e-3)
            return spec([(op, ["x"], ["y"], attrs)], {"x": x})
        add_case(f"{_n} {dims(_shape)}", _build)


@case("clip/relu6 1x64x128x128")
def _(np, rng):
    return spec([("Clip", ["x", "lo", "hi"], ["y"], {})], {"x": randn(np, rng, LARGE, 4.0)},
                {"lo": np.array(0.0, dtype=np.float32), "hi": np.array(6.0, dtype=np.float32)})


@case("gelu 2x16x1536 (opset 20)")
def _(np, rng):
    return spec([("Gelu", ["x"], ["y"], {})], {"x": randn(np, rng, [2, 16, 1536], 2.0)}, opset=20)


# -- convolutions ------------------------------------------------------------------
def conv_case(name, x_shape, out_ch, kernel, strides=None, pads=None, group=1, dilations=None):
    def build(np, rng):
        cin = x_shape[1]
        w_shape = [out_ch, cin // group] + list(kernel)
        fan_in = (cin // group) * math.prod(kernel)
        attrs = {"kernel_shape": list(kernel), "group": group}
        if strides:
            attrs["strides"] = strides
        if pads:
            attrs["pads"] = pads
        if dilations:
            attrs["dilations"] = dilations
        return spec([("Conv", ["x", "w", "b"], ["y"], attrs)], {"x": randn(np, rng, x_shape)},
                    {"w": randn(np, rng, w_shape, math.sqrt(2.0 / fan_in)),
                     "b": randn(np, rng, [out_ch], 0.1)})
    add_case(name, build)


# pointwise
conv_case("conv/1x1 1x64x80x80->64", [1, 64, 80, 80], 64, [1, 1])
conv_case("conv/1x1 1x64x80x80->128", [1, 64, 80, 80], 128, [1, 1])
conv_case("conv/1x1 1x160x10x10->960", [1, 160, 10, 10], 960, [1, 1])
# 3x3 dense
conv_case("conv/3x3 1x64x80x80->64", [1, 64, 80, 80], 64, [3, 3], pads=[1, 1, 1, 1])
conv_case("conv/3x3 s2 1x64x80x80->128", [1, 64, 80, 80], 128, [3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1])
# depthwise
conv_case("conv/dw3x3 1x64x80x80 g64", [1, 64, 80, 80], 64, [3, 3], pads=[1, 1, 1, 1], group=64)
conv_case("conv/dw3x3 s2 1x64x80x80 g64", [1, 64, 80, 80], 64, [3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1], group=64)
conv_case("conv/dw5x5 1x120x20x20 g120", [1, 120, 20, 20], 120, [5, 5], pads=[2, 2, 2, 2],
          group=120)
conv_case("conv/dw5x5 s2 1x72x40x40 g72", [1, 72, 40, 40], 72, [5, 5], strides=[2, 2],
          pads=[2, 2, 2, 2], group=72)
# grouped, dilated
conv_case("conv/3x3 g4 1x64x40x40->64", [1, 64, 40, 40], 64, [3, 3], pads=[1, 1, 1, 1], group=4)
conv_case("conv/3x3 d2 1x64x40x40->64", [1, 64, 40, 40], 64, [3, 3], pads=[2, 2, 2, 2],
          dilations=[2, 2])
# first layers: few input channels
conv_case("conv/3x3 s2 1x3x320x320->16", [1, 3, 320, 320], 16, [3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1])
conv_case("conv/3x3 s2 1x3x48x320->16", [1, 3, 48, 320], 16, [3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1])
conv_case("conv/3x3 1x1x76x32->32", [1, 1, 76, 32], 32, [3, 3], pads=[1, 1, 1, 1])
# tall and narrow
conv_case("conv/3x1 1x32x76x1->32", [1, 32, 76, 1], 32, [3, 1], pads=[1, 0, 1, 0])
# 1-D (Silero VAD: the STFT as a conv, then the encoder)
conv_case("conv1d/stft 1x1x640 k256 s128->258", [1, 1, 640], 258, [256], strides=[128])
conv_case("conv1d/k3 1x129x4->128", [1, 129, 4], 128, [3], pads=[1, 1])
conv_case("conv1d/k3 1x257x64->128", [1, 257, 64], 128, [3], pads=[1, 1])


def convtranspose_case(name, x_shape, out_ch, kernel, strides, pads=None):
    def build(np, rng):
        cin = x_shape[1]
        attrs = {"kernel_shape": kernel, "strides": strides}
        if pads:
            attrs["pads"] = pads
        return spec([("ConvTranspose", ["x", "w", "b"], ["y"], attrs)],
                    {"x": randn(np, rng, x_shape)},
                    {"w": randn(np, rng, [cin, out_ch] + kernel, math.sqrt(1.0 / cin)),
                     "b": randn(np, rng, [out_ch], 0.1)})
    add_case(name, build)


convtranspose_case("convtranspose/2x2 s2 1x64x40x40->32", [1, 64, 40, 40], 32, [2, 2], [2, 2])
convtranspose_case("convtranspose/4x4 s2 1x64x40x40->32", [1, 64, 40, 40], 32, [4, 4], [2, 2],
                   pads=[1, 1, 1, 1])


# -- matrix products -----------------------------------------------------------------
def matmul_case(name, a_shape, b_shape, const_b):
    def build(np, rng):
        a = randn(np, rng, a_shape)
        b = randn(np, rng, b_shape, 1.0 / math.sqrt(b_shape[-2]))
        inputs, inits = {"a": a}, {}
        (inits if const_b else inputs)["b"] = b
        return spec([("MatMul", ["a", "b"], ["y"], {})], inputs, inits)
    add_case(name, build)


matmul_case("matmul/attn_qk 2x12x16x32*2x12x32x16", [2, 12, 16, 32], [2, 12, 32, 16], False)
matmul_case("matmul/attn_v 2x12x16x16*2x12x16x32", [2, 12, 16, 16], [2, 12, 16, 32], False)
matmul_case("matmul/proj 2x16x384*384x384 const", [2, 16, 384], [384, 384], True)
matmul_case("matmul/ffn_up 32x384*384x1536 const", [32, 384], [384, 1536], True)
matmul_case("matmul/ffn_down 32x1536*1536x384 const", [32, 1536], [1536, 384], True)
matmul_case("matmul/square 256x256*256x256 const", [256, 256], [256, 256], True)


@case("gemm/fc 1x512*(1000x512)^T+bias")
def _(np, rng):
    return spec([("Gemm", ["a", "w", "c"], ["y"], {"transB": 1})],
                {"a": randn(np, rng, [1, 512])},
                {"w": randn(np, rng, [1000, 512], 1.0 / math.sqrt(512)),
                 "c": randn(np, rng, [1000], 0.1)})


# -- pooling -----------------------------------------------------------------------
@case("maxpool/3x3 s2 1x64x80x80")
def _(np, rng):
    return spec([("MaxPool", ["x"], ["y"], {"kernel_shape": [3, 3], "strides": [2, 2],
                                             "pads": [1, 1, 1, 1]})],
                {"x": randn(np, rng, [1, 64, 80, 80])})


@case("maxpool/2x2 s2 1x64x40x40")
def _(np, rng):
    return spec([("MaxPool", ["x"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})],
                {"x": randn(np, rng, [1, 64, 40, 40])})


# the audio embedding network's (openWakeWord): small planes, 1x2 windows
@case("maxpool/2x2 s2 1x24x72x32")
def _(np, rng):
    return spec([("MaxPool", ["x"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})],
                {"x": randn(np, rng, [1, 24, 72, 32])})


@case("maxpool/1x2 s1,2 1x48x32x16")
def _(np, rng):
    return spec([("MaxPool", ["x"], ["y"], {"kernel_shape": [1, 2], "strides": [1, 2]})],
                {"x": randn(np, rng, [1, 48, 32, 16])})


@case("averagepool/2x2 s2 1x64x80x80")
def _(np, rng):
    return spec([("AveragePool", ["x"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})],
                {"x": randn(np, rng, [1, 64, 80, 80])})


for _shape in ([1, 64, 40, 40], [1, 960, 7, 7]):
    def _build(np, rng, shape=_shape):
        return spec([("GlobalAveragePool", ["x"], ["y"], {})], {"x": randn(np, rng, shape)})
    add_case(f"globalaveragepool {dims(_shape)}", _build)


# -- normalisation ------------------------------------------------------------------
@case("batchnorm 1x64x80x80")
def _(np, rng):
    c = 64
    return spec([("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], {"epsilon": 1e-5})],
                {"x": randn(np, rng, [1, c, 80, 80])},
                {"s": (1 + randn(np, rng, [c], 0.1)), "b": randn(np, rng, [c], 0.1),
                 "m": randn(np, rng, [c], 0.1),
                 "v": rng.uniform(0.5, 1.5, [c]).astype(np.float32)})


@case("layernorm 2x16x384 axis-1")
def _(np, rng):
    return spec([("LayerNormalization", ["x", "s", "b"], ["y"], {"axis": -1, "epsilon": 1e-12})],
                {"x": randn(np, rng, [2, 16, 384])},
                {"s": (1 + randn(np, rng, [384], 0.1)), "b": randn(np, rng, [384], 0.1)})


@case("instancenorm 1x64x40x40")
def _(np, rng):
    return spec([("InstanceNormalization", ["x", "s", "b"], ["y"], {"epsilon": 1e-5})],
                {"x": randn(np, rng, [1, 64, 40, 40])},
                {"s": (1 + randn(np, rng, [64], 0.1)), "b": randn(np, rng, [64], 0.1)})


# -- softmax ----------------------------------------------------------------------------
for _shape, _axis in (([2, 12, 16, 16], -1), ([1, 1000], -1), ([2, 12, 16, 16], 1)):
    def _build(np, rng, shape=_shape, axis=_axis):
        return spec([("Softmax", ["x"], ["y"], {"axis": axis})], {"x": randn(np, rng, shape, 3.0)})
    add_case(f"softmax/{'last' if _axis == -1 else f'axis{_axis}'} {dims(_shape)}", _build)


# -- reductions (opset 17: axes an attribute, but ReduceSum's an input since 13) ------
def reduce_case(op, variant, shape, axes):
    def build(np, rng):
        x = {"x": randn(np, rng, shape)}
        if op == "ReduceSum":
            return spec([(op, ["x", "axes"], ["y"], {"keepdims": 1})], x,
                        {"axes": np.array(axes, dtype=np.int64)})
        return spec([(op, ["x"], ["y"], {"axes": axes, "keepdims": 1})], x)
    add_case(f"{op.lower()}/{variant} {dims(shape)} keepdims", build)


reduce_case("ReduceMean", "last", [2, 16, 384], [-1])
reduce_case("ReduceMean", "hw", [1, 64, 40, 40], [2, 3])
reduce_case("ReduceSum", "last", [2, 16, 384], [-1])
reduce_case("ReduceSum", "hw", [1, 64, 40, 40], [2, 3])
reduce_case("ReduceMax", "last", [2, 16, 384], [-1])
reduce_case("ReduceMax", "channels", [1, 64, 40, 40], [1])


# -- resize --------------------------------------------------------------------------------
for _mode, _ctm in (("nearest", "asymmetric"), ("nearest", "half_pixel"),
                    ("linear", "asymmetric"), ("linear", "half_pixel")):
    def _build(np, rng, mode=_mode, ctm=_ctm):
        attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
        if mode == "nearest":
            attrs["nearest_mode"] = "floor" if ctm == "asymmetric" else "round_prefer_floor"
        return spec([("Resize", ["x", "", "scales"], ["y"], attrs)],
                    {"x": randn(np, rng, [1, 64, 40, 40])},
                    {"scales": np.array([1, 1, 2, 2], dtype=np.float32)})
    add_case(f"resize/{_mode} {_ctm} 2x 1x64x40x40", _build)


# -- data movement ------------------------------------------------------------------------
for _shape, _perm, _v in (([2, 16, 12, 32], [0, 2, 1, 3], "0213"),
                          ([1, 64, 80, 80], [0, 2, 3, 1], "nhwc")):
    def _build(np, rng, shape=_shape, perm=_perm):
        return spec([("Transpose", ["x"], ["y"], {"perm": perm})], {"x": randn(np, rng, shape)})
    add_case(f"transpose/{_v} {dims(_shape)} perm {','.join(map(str, _perm))}", _build)


@case("concat/channels 4x 1x64x40x40")
def _(np, rng):
    names = ["a", "b", "c", "d"]
    return spec([("Concat", names, ["y"], {"axis": 1})],
                {n: randn(np, rng, [1, 64, 40, 40]) for n in names})


@case("gather/embedding 30522x384 const [2x16] int64")
def _(np, rng):
    return spec([("Gather", ["table", "ids"], ["y"], {"axis": 0})],
                {"ids": rng.integers(0, 30522, [2, 16]).astype(np.int64)},
                {"table": randn(np, rng, [30522, 384], 0.05)})


@case("gather/axis1 2x16x384 [0] const")
def _(np, rng):
    return spec([("Gather", ["x", "i"], ["y"], {"axis": 1})],
                {"x": randn(np, rng, [2, 16, 384])}, {"i": np.array(0, dtype=np.int64)})


@case("slice/channels 1x64x80x80[:,0:32]")
def _(np, rng):
    i64 = lambda v: np.array(v, dtype=np.int64)
    return spec([("Slice", ["x", "st", "en", "ax"], ["y"], {})],
                {"x": randn(np, rng, [1, 64, 80, 80])},
                {"st": i64([0]), "en": i64([32]), "ax": i64([1])})


@case("slice/step2 1x64x80x80[:,:,::2,::2]")
def _(np, rng):
    i64 = lambda v: np.array(v, dtype=np.int64)
    return spec([("Slice", ["x", "st", "en", "ax", "sp"], ["y"], {})],
                {"x": randn(np, rng, [1, 64, 80, 80])},
                {"st": i64([0, 0]), "en": i64([80, 80]), "ax": i64([2, 3]), "sp": i64([2, 2])})


@case("reshape 2x16x384->2x16x12x32")
def _(np, rng):
    return spec([("Reshape", ["x", "shape"], ["y"], {})], {"x": randn(np, rng, [2, 16, 384])},
                {"shape": np.array([2, 16, 12, 32], dtype=np.int64)})


# -- recurrent --------------------------------------------------------------------------
def rnn_case(name, op, seq, inp, hidden, with_state):
    gates = 4 if op == "LSTM" else 3

    def build(np, rng):
        s = 1.0 / math.sqrt(hidden)
        inits = {"W": randn(np, rng, [1, gates * hidden, inp], s),
                 "R": randn(np, rng, [1, gates * hidden, hidden], s),
                 "B": randn(np, rng, [1, 2 * gates * hidden], s)}
        inputs = {"x": randn(np, rng, [seq, 1, inp])}
        attrs = {"hidden_size": hidden}
        if op == "GRU":
            attrs["linear_before_reset"] = 1  # as PyTorch exports it
        ins = ["x", "W", "R", "B"]
        outs = ["y"]
        if with_state:
            inputs["h0"] = randn(np, rng, [1, 1, hidden], 0.5)
            ins += ["", "h0"]
            outs += ["y_h"]
            if op == "LSTM":
                inputs["c0"] = randn(np, rng, [1, 1, hidden], 0.5)
                ins += ["c0"]
                outs += ["y_c"]
        return spec([(op, ins, outs, attrs)], inputs, inits, outputs=outs)
    add_case(name, build)


rnn_case("lstm 16x1x96 h64", "LSTM", 16, 96, 64, False)
rnn_case("lstm/state 1x1x128 h128 (h0,c0 in; y,y_h,y_c out)", "LSTM", 1, 128, 128, True)
rnn_case("gru 16x1x96 h64", "GRU", 16, 96, 64, False)


# ---------------------------------------------------------------------------

def slug(name):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


def build_model(onnx, np, name, sp):
    """The ONNX model of a spec, shapes inferred and checked."""
    from onnx import helper, numpy_helper, TensorProto
    dt = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    nodes = [helper.make_node(op, ins, outs, name=f"{op.lower()}_{i}", **attrs)
             for i, (op, ins, outs, attrs) in enumerate(sp["nodes"])]
    g_in = [helper.make_tensor_value_info(n, dt[a.dtype], list(a.shape))
            for n, a in sp["inputs"].items()]
    inits = [numpy_helper.from_array(a, n) for n, a in sp["inits"].items()]
    g_out = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in sp["outputs"]]
    graph = helper.make_graph(nodes, slug(name), g_in, g_out, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", sp["opset"])],
                              producer_name="plexus-bench-ops")
    # The oldest IR version that carries the opset: Plexus reads IR 3 to 10.
    model.ir_version = 8 if sp["opset"] <= 17 else 9
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in model.graph.output:
        v = known.get(o.name)
        if v is not None and v.type.tensor_type.HasField("shape"):
            o.type.CopyFrom(v.type)
    onnx.checker.check_model(model, full_check=True)
    return model


def backend_label(doc, ids):
    """Which backend ran the operator, from the JSON's assignment."""
    a = doc.get("assignment", {})
    layers = {b: n for b, n in a.get("layers", {}).items() if n}
    ran = [b for b in ids if b in layers] + [b for b in layers if b not in ids]
    fb = [f for f in a.get("fallbacks", [])
          if f.get("op") not in ("input", "output", "constant")]
    if not fb:
        return "+".join(ran) or "?"
    tos = sorted({f.get("to") for f in fb})
    ops = ",".join(sorted({str(f.get("op")) for f in fb}))
    if set(ran) <= set(tos):
        return f"{'+'.join(tos)} (fallback: {ops})"
    return f"{'+'.join(ran)} (fallback: {ops} -> {'+'.join(tos)})"


def parse_args():
    ap = argparse.ArgumentParser(
        description="Plexus against ONNX Runtime on single-operator models, alternating runs.",
        epilog="Timings are medians of alternating runs; on a shared machine they are noisy.")
    vo.add_plexus_args(ap)
    ap.add_argument("--only", type=vo.csv,
                    help="cases whose name contains any of these substrings (case-insensitive)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    vo.add_timing_args(ap, rounds=3, runs=20, warmup=3, timeout=300)
    ap.add_argument("--ort-iobinding", action="store_true",
                    help="time ONNX Runtime's run_with_iobinding on inputs bound once instead "
                         "of session.run (less Python overhead, which matters only for the "
                         "smallest cases)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the models and inputs to DIR and keep them "
                         "(default: a temporary directory, removed)")
    return vo.parse_timing_args(ap)


def select_cases(args):
    if not args.only:
        return list(CASES)
    subs = [s.lower() for s in args.only]
    return [c for c in CASES if any(s in c[0].lower() for s in subs)]


def print_rows(head, table, right):
    w = [max([len(h)] + [len(t[i]) for t in table]) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i])
                                   for i, c in enumerate(cells)).rstrip()
    print(line(head))
    print(line(["-" * x for x in w]))
    for t in table:
        print(line(t))


def fmt_diff(r):
    if r["max_abs_diff"] is None:
        return "-"
    return f"{r['max_abs_diff']:.1e}" + (" !" if r["diff_over_tolerance"] else "")


def main():
    args = parse_args()
    cases = select_cases(args)
    if args.list:
        for name, _ in CASES if not args.only else cases:
            print(name)
        return 0
    if not cases:
        sys.exit("error: no case matches --only (see --list)")
    np, onnx, ort = import_deps()
    if not (os.path.isfile(args.plexus) and os.access(args.plexus, os.X_OK)):
        sys.exit(f"error: --plexus {args.plexus}: not an executable "
                 "(build it: meson compile -C build)")

    plexus = vo.Plexus(args.plexus, args.backend_path, args.default_dir, args.timeout)
    info, backends, has_threads, configs, skipped = vo.backend_configs(plexus, args.plexus,
                                                                       args.configs)
    print(f"onnxruntime {ort.__version__}; onnx {onnx.__version__}; numpy {np.__version__}; "
          f"{os.cpu_count()} CPUs; {platform.machine()}")
    print(f"{len(cases)} cases; threads {args.threads}; configs "
          f"{', '.join(c for c, _ in configs)}; {args.rounds} rounds x {args.runs_per_round} "
          f"runs after {args.warmup} warm-up runs\n", flush=True)

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir = args.keep
    else:
        workdir = tempfile.mkdtemp(prefix="plexus-ops-vs-ort.")
    rows, case_docs = [], []
    try:
        for name, build in cases:
            rows_of_case = run_case(args, np, onnx, ort, plexus, configs, has_threads,
                                    workdir, name, build, case_docs)
            rows.extend(rows_of_case)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    report(rows, configs, args)
    if args.json_out:
        doc = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "arch": platform.machine(),
                        "python": platform.python_version()},
            "plexus": {"exe": args.plexus, "version": info.get("version"),
                       "backends": {i: {"available": b.get("available"), "path": b.get("path"),
                                        "threads_option": has_threads.get(i)}
                                    for i, b in backends.items()}},
            "onnxruntime": {"version": ort.__version__, "provider": "CPUExecutionProvider",
                            "graph_optimization_level": "ORT_ENABLE_ALL",
                            "inter_op_num_threads": 1},
            "settings": {"threads": args.threads, "configs": args.configs,
                         "rounds": args.rounds, "runs_per_round": args.runs_per_round,
                         "warmup": args.warmup, "only": args.only,
                         "ort_call": "run_with_iobinding" if args.ort_iobinding
                         else "session.run"},
            "method": "per row: median over rounds of each round's median; Plexus's round "
                      "median is latency_ms.median of one `plexus run --json` process; "
                      "rounds alternate Plexus and ONNX Runtime, the order swapping each round",
            "skipped_configs": skipped,
            "cases": case_docs,
            "rows": rows,
        }
        with open(args.json_out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"\nwrote {args.json_out}")
    return 1 if any(r["error"] for r in rows) else 0


def run_case(args, np, onnx, ort, plexus, configs, has_threads, workdir, name, build, case_docs):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    base = slug(name)
    model_path = os.path.join(workdir, base + ".onnx")
    rows = []

    def failed_rows(err):
        print(f"{name}: {err}", flush=True)
        done = {(r["threads"], r["config"]) for r in rows}
        for t in args.threads:
            for cname, ids in configs:
                if (t, cname) in done:
                    continue
                rows.append({"case": name, "model_path": model_path, "threads": t,
                             "config": cname, "backends": ids, "error": err,
                             "plexus": {"median_ms": None}, "ort": {"median_ms": None},
                             "ratio": None, "max_abs_diff": None, "diff_over_tolerance": False,
                             "backend": None})
        return rows

    try:
        sp = build(np, rng)
        model = build_model(onnx, np, name, sp)
    except Exception as e:  # a bug in a case: say so and go on
        case_docs.append({"case": name, "error": f"model not built: {e}"})
        return failed_rows(f"model not built: {type(e).__name__}: {e}")
    onnx.save(model, model_path)
    inputs = {}
    for n, a in sp["inputs"].items():
        p = os.path.join(workdir, f"{base}.{n}.npy")
        np.save(p, a)
        inputs[n] = p
    feeds = dict(sp["inputs"])
    case_docs.append({"case": name, "model": model_path, "inputs": inputs,
                      "opset": sp["opset"],
                      "nodes": [{"op": op, "attrs": {k: (v if not hasattr(v, "tolist") else
                                                          v.tolist()) for k, v in at.items()}}
                                for op, _, _, at in sp["nodes"]]})

    ort_ref = None
    checked = set()  # configs whose outputs were compared
    for t in args.threads:
        so = ort.SessionOptions()
        so.intra_op_num_threads = t
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
            out_names = [o.name for o in sess.get_outputs()]
            if ort_ref is None:
                ort_ref = sess.run(None, feeds)
        except Exception as e:
            return failed_rows(f"ONNX Runtime refused the model: {e}")
        if args.ort_iobinding:
            binding = sess.io_binding()
            for n, a in feeds.items():
                binding.bind_cpu_input(n, a)
            for n in out_names:
                binding.bind_output(n, "cpu")
            ort_call = lambda s=sess, b=binding: s.run_with_iobinding(b)
        else:
            ort_call = lambda s=sess: s.run(None, feeds)
        for cname, ids in configs:
            opts = [f"{i}.threads={t}" for i in ids if has_threads.get(i)]
            row = {"case": name, "model_path": model_path, "inputs": inputs, "threads": t,
                   "config": cname, "backends": ids, "plexus_options": opts,
                   "threads_option_absent": [i for i in ids if not has_threads.get(i)],
                   "plexus": {"round_medians_ms": [], "runs": []},
                   "ort": {"round_medians_ms": [], "samples_ms": []},
                   "max_abs_diff": None, "diff_tolerance": None, "diff_over_tolerance": False,
                   "backend": None, "error": None}
            for r in range(args.rounds):
                order = ("plexus", "ort") if r % 2 == 0 else ("ort", "plexus")
                for who in order:
                    if who == "plexus":
                        odir = None
                        if cname not in checked:
                            odir = os.path.join(workdir, f"{base}.out.{slug(cname)}")
                            shutil.rmtree(odir, ignore_errors=True)
                        doc, err, cmd = plexus.run(model_path, inputs, ids, opts,
                                                   args.runs_per_round, args.warmup, odir)
                        row["plexus_command"] = cmd
                        if err:
                            row["error"] = err
                            break
                        med, how = vo.plexus_round_median(doc)
                        row["plexus"]["round_medians_ms"].append(med)
                        row["plexus"]["median_source"] = how
                        row["plexus"]["runs"].append({"latency_ms": doc.get("latency_ms"),
                                                      "load_ms": doc.get("load_ms")})
                        row["assignment"] = doc.get("assignment")
                        row["assignment_summary"] = vo.assignment_summary(doc)
                        row["backend"] = backend_label(doc, ids)
                        if odir:
                            compare(np, row, odir, out_names, ort_ref)
                            checked.add(cname)
                            if not args.keep:
                                shutil.rmtree(odir, ignore_errors=True)
                    else:
                        samples = vo.time_ort_round(ort_call, args.warmup, args.runs_per_round, t)
                        row["ort"]["samples_ms"].append(samples)
                        row["ort"]["round_medians_ms"].append(statistics.median(samples))
                if row["error"]:
                    break
            pm = row["plexus"]["round_medians_ms"]
            om = row["ort"]["round_medians_ms"]
            row["plexus"]["median_ms"] = statistics.median(pm) if pm and not row["error"] else None
            row["ort"]["median_ms"] = statistics.median(om) if om else None
            row["ratio"] = (row["plexus"]["median_ms"] / row["ort"]["median_ms"]
                            if row["plexus"]["median_ms"] and row["ort"]["median_ms"] else None)
            label = f"{name} T={t} {cname}"
            if row["error"]:
                print(f"{label}: plexus FAILED: {row['error']}", flush=True)
            else:
                diff = "" if row["max_abs_diff"] is None else f", diff {fmt_diff(row)}"
                print(f"{label}: plexus {vo.fmt_ms(row['plexus']['median_ms'])} ms, "
                      f"ort {vo.fmt_ms(row['ort']['median_ms'])} ms, ratio {row['ratio']:.2f}"
                      f"{diff}, {row['backend']}", flush=True)
            rows.append(row)
        del sess
    # The check's figures on every row of the configuration, not only the first.
    for cname, _ in configs:
        first = next((r for r in rows if r["config"] == cname and r["max_abs_diff"] is not None),
                     None)
        if first:
            for r in rows:
                if r["config"] == cname and r["max_abs_diff"] is None:
                    for k in ("max_abs_diff", "diff_tolerance", "diff_over_tolerance",
                              "diff_problem"):
                        if k in first:
                            r[k] = first[k]
    return rows


def compare(np, row, odir, out_names, ort_ref):
    """Max abs diff of Plexus's outputs against ONNX Runtime's; over
    1e-4 + 1e-3 * max|ref| (per output) is flagged."""
    diff, over, problem, tol_min = 0.0, False, None, None
    for n, ref in zip(out_names, ort_ref):
        path = vo.output_file(odir, n)
        if not os.path.exists(path):
            diff, over, problem = float("inf"), True, f"output {n} not written"
            break
        got = np.load(path)
        if got.shape != ref.shape:
            diff, over = float("inf"), True
            problem = f"output {n}: shape {list(got.shape)}, ONNX Runtime {list(ref.shape)}"
            break
        ref64 = ref.astype(np.float64)
        d = np.abs(got.astype(np.float64) - ref64)
        dmax = float(np.nanmax(d)) if d.size else 0.0
        if d.size and np.isnan(d).any():
            dmax, problem = float("inf"), f"output {n}: NaN where ONNX Runtime has none"
        tol = 1e-4 + 1e-3 * (float(np.max(np.abs(ref64))) if ref.size else 0.0)
        tol_min = tol if tol_min is None else min(tol_min, tol)
        over = over or dmax > tol
        diff = max(diff, dmax)
    row["max_abs_diff"] = diff
    row["diff_tolerance"] = tol_min
    row["diff_over_tolerance"] = over
    if problem:
        row["diff_problem"] = problem


def report(rows, configs, args):
    print(f"\nMedian over {args.rounds} alternating rounds of each round's median "
          f"({args.runs_per_round} runs after {args.warmup} warm-up runs); ONNX Runtime timed "
          f"per {'run_with_iobinding' if args.ort_iobinding else 'session.run'} call.")
    print("ratio = Plexus / ONNX Runtime (below 1: Plexus faster); diff = max abs difference "
          "of the outputs ('!': above 1e-4 + 1e-3 * max|output|).")
    groups = {}
    for r in rows:
        groups.setdefault((r["config"], r["threads"]), []).append(r)
    head = ["case", "plexus ms", "ort ms", "ratio", "diff", "backend"]
    for (cname, t), rs in groups.items():
        print(f"\n== {cname}, {t} thread{'s' if t != 1 else ''} ==")
        rs = sorted(rs, key=lambda r: (r["error"] is None, -(r["ratio"] or 0)))
        print_rows(head, [[r["case"], "FAILED" if r["error"] else vo.fmt_ms(r["plexus"]["median_ms"]),
                           vo.fmt_ms(r["ort"]["median_ms"]),
                           f"{r['ratio']:.2f}" if r["ratio"] else "-", fmt_diff(r),
                           r["backend"] or ""] for r in rs], {1, 2, 3, 4})
        for r in rs:
            if r["error"]:
                print(f"  FAILED {r['case']}: {r['error']}")

    print("\nSummary per configuration and thread count (ratio = Plexus / ONNX Runtime):")
    table = []
    for (cname, t), rs in groups.items():
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        g = vo.geomean(ratios)
        worst = max((r for r in rs if r["ratio"]), key=lambda r: r["ratio"], default=None)
        table.append([cname, str(t), str(len(rs)), f"{g:.2f}" if g else "-",
                      str(sum(1 for x in ratios if x > SLOW)),
                      str(sum(1 for r in rs if r["error"])),
                      str(sum(1 for r in rs if r["diff_over_tolerance"])),
                      f"{worst['ratio']:.2f} {worst['case']}" if worst else "-"])
    print_rows(["config", "thr", "cases", "geomean", f"> {SLOW}x", "failed", "diff !", "worst"],
               table, {1, 2, 3, 4, 5, 6})

    print("\nBest configuration per case and thread count (the lowest ratio over "
          f"{', '.join(c for c, _ in configs)}), worst first:")
    best = {}
    for r in rows:
        k = (r["case"], r["threads"])
        b = best.get(k)
        if b is None or (r["ratio"] and (b["ratio"] is None or r["ratio"] < b["ratio"])):
            best[k] = r
    for t in args.threads:
        bs = [b for (c, th), b in best.items() if th == t]
        bs.sort(key=lambda r: (r["ratio"] is not None, -(r["ratio"] or 0)))
        print(f"\n-- {t} thread{'s' if t != 1 else ''} --")
        print_rows(["case", "best config", "plexus ms", "ort ms", "ratio", "diff", "backend"],
                   [[b["case"], b["config"] if b["ratio"] else "-",
                     "FAILED" if b["ratio"] is None else vo.fmt_ms(b["plexus"]["median_ms"]),
                     vo.fmt_ms(b["ort"]["median_ms"]),
                     f"{b['ratio']:.2f}" if b["ratio"] else "-", fmt_diff(b), b["backend"] or ""]
                    for b in bs], {2, 3, 4, 5})
        ratios = [b["ratio"] for b in bs if b["ratio"]]
        g = vo.geomean(ratios)
        print(f"best of configs, {t} thread{'s' if t != 1 else ''}: {len(bs)} cases, geomean "
              f"{f'{g:.2f}' if g else '-'}, {sum(1 for x in ratios if x > SLOW)} above {SLOW}x, "
              f"{sum(1 for b in bs if b['ratio'] is None)} failed on every config")

    differ = [r for r in rows if r["diff_over_tolerance"]]
    if differ:
        print("\nOutputs that differ from ONNX Runtime's beyond the tolerance:")
        seen = set()
        for r in differ:
            if (r["case"], r["config"]) in seen:
                continue
            seen.add((r["case"], r["config"]))
            print(f"  {r['case']} {r['config']}: max abs diff {r['max_abs_diff']:.3g} "
                  f"(tolerance {r['diff_tolerance']:.3g})"
                  + (f"; {r['diff_problem']}" if r.get("diff_problem") else ""))
    fallbacks = {}
    for r in rows:
        for f in (r.get("assignment") or {}).get("fallbacks", []):
            if f.get("op") not in ("input", "output", "constant"):
                fallbacks.setdefault((r["case"], r["config"]), set()).add(
                    f"{f.get('op')} {f.get('from')} -> {f.get('to')}: {f.get('reason')}")
    if fallbacks:
        print("\nFallbacks (from plexus run --json):")
        for (c, cfg), rs in fallbacks.items():
            for x in sorted(rs):
                print(f"  {c} [{cfg}]: {x}")
    failed = sorted({(r["case"], r["config"], r["error"]) for r in rows if r["error"]})
    if failed:
        print(f"\nFailed ({len(failed)} case and configuration pairs):")
        for c, cfg, e in failed:
            print(f"  {c} [{cfg}]: {e}")


if __name__ == "__main__":
    sys.exit(main())
