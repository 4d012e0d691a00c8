#!/usr/bin/env python3
"""Writes the small ONNX models of the `plexus run` tests (tests/test_cli_run.c)
into this directory. The .onnx files are committed; run this script again
only to change them:

    python3 tests/data/onnx/make-models.py

It needs the `onnx` package (onnx==1.17.0, as in scripts/requirements-train.txt;
for example the .venv-train virtual environment). The output is
deterministic: the same files every time.

Models (opset 13, IR version 8, producer "plexus-tests"):

dynamic_batch.onnx
    x: float32 [N, 4], N a dim_param (no size) -> Relu -> y: float32 [N, 4].
    Importing it needs a size for N (`plexus run --shape x=3x4`); without
    one the importer fails naming the input x and the dimension N.

two_inputs.onnx
    a: float32 [4, 3], idx: int64 [2] -> Gather(a, idx, axis 0) -> g [2, 3];
    b: float32 [2, 3]; y = Add(g, b): float32 [2, 3].
    Inputs of two dtypes, one an integer index: `plexus run` fills those
    not given with random values (indices 0 or 1, valid here). The Gather
    is refused by the test-only `testdev` backend (it runs only relu and
    add), so with `--backends testdev,cpu_ref` it falls back to cpu_ref
    while the Add stays on testdev.

unsupported.onnx
    x: float32 [2, 2] -> RandomUniformLike -> t: float32 [2, 2], and
    x -> StringNormalizer -> d: float32 [2, 2]: two operators Plexus does
    not import (random values, and strings, which Plexus has no dtype for),
    side by side; importing fails listing both.

add_int32.onnx
    a, b: int32 [4] -> Add -> c: int32 [4]: integer inputs and outputs,
    for random integer inputs and .npy outputs of another dtype.

odd_names.onnx
    "in:0": float32 [3] -> Relu -> "scores/out:0": float32 [3], and
    -> Neg -> "..": float32 [3]: output names that are not file names
    (`--output-dir` writes scores_out_0.npy and _...npy).

branch_on_rate.onnx
    x: float32 [N], sr: int64 [] -> If(Equal(sr, 16000)) then Relu(x) else
    Neg(x) -> y: float32 [N]: an `If` whose condition comes from a small
    input, as voice-activity models test their sample rate; a dynamic
    model specialises on sr's value.

slice_of_big.onnx
    x: float32 [6], big: int64 [600] -> Reshape(x, Slice(big, [0], [2]))
    -> y: float32 [?, ?]: a reshape target computed from an input too big
    (4,800 bytes) to specialise on; the target itself (16 bytes) is small.

all_of_big.onnx
    The same with the whole of `big` as the target (Identity): a value
    needed at import that is too big to specialise on.

branch_on_energy.onnx
    x: float32 [N] -> If(ReduceSum(x * x) > 1) then Relu(x) else Neg(x)
    -> y: float32 [N]: an If whose condition is computed from the data.
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 13)]


def save(graph, name):
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="plexus-tests",
                              ir_version=8)
    onnx.checker.check_model(model)
    path = os.path.join(HERE, name)
    onnx.save(model, path)
    print("wrote", path)


def dynamic_batch():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    save(helper.make_graph([relu], "dynamic_batch", [x], [y]), "dynamic_batch.onnx")


def two_inputs():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 3])
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [2])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    gather = helper.make_node("Gather", ["a", "idx"], ["g"], name="gather", axis=0)
    add = helper.make_node("Add", ["g", "b"], ["y"], name="add")
    save(helper.make_graph([gather, add], "two_inputs", [a, idx, b], [y]), "two_inputs.onnx")


def unsupported():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 2])
    d = helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 2])
    random = helper.make_node("RandomUniformLike", ["x"], ["t"], name="random")
    norm = helper.make_node("StringNormalizer", ["x"], ["d"], name="norm")
    save(helper.make_graph([random, norm], "unsupported", [x], [t, d]), "unsupported.onnx")


def add_int32():
    a = helper.make_tensor_value_info("a", TensorProto.INT32, [4])
    b = helper.make_tensor_value_info("b", TensorProto.INT32, [4])
    c = helper.make_tensor_value_info("c", TensorProto.INT32, [4])
    add = helper.make_node("Add", ["a", "b"], ["c"], name="add")
    save(helper.make_graph([add], "add_int32", [a, b], [c]), "add_int32.onnx")


def odd_names():
    x = helper.make_tensor_value_info("in:0", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("scores/out:0", TensorProto.FLOAT, [3])
    z = helper.make_tensor_value_info("..", TensorProto.FLOAT, [3])
    relu = helper.make_node("Relu", ["in:0"], ["scores/out:0"], name="relu")
    neg = helper.make_node("Neg", ["in:0"], [".."], name="neg")
    save(helper.make_graph([relu, neg], "odd_names", [x], [y, z]), "odd_names.onnx")


def reshape_by_input():
    """Reshape whose shape is a graph input: needs --constant shape=..."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])
    reshape = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    save(helper.make_graph([reshape], "reshape_by_input", [x, shape], [y]),
         "reshape_by_input.onnx")


def relu_or_neg(cond):
    """If(cond) then y = Relu(x) else y = Neg(x), x and y float32 [N]."""
    then_out = helper.make_tensor_value_info("t", TensorProto.FLOAT, ["N"])
    else_out = helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N"])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="relu")],
                               "then", [], [then_out])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="neg")],
                               "else", [], [else_out])
    return helper.make_node("If", [cond], ["y"], name="branch", then_branch=then_g,
                            else_branch=else_g)


def branch_on_rate():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])
    rate = helper.make_tensor("rate", TensorProto.INT64, [], [16000])
    equal = helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="is16k")
    branch = relu_or_neg("is16k")
    save(helper.make_graph([equal, branch], "branch_on_rate", [x, sr], [y], [rate]),
         "branch_on_rate.onnx")


def slice_of_big():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])
    big = helper.make_tensor_value_info("big", TensorProto.INT64, [600])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])
    starts = helper.make_tensor("starts", TensorProto.INT64, [1], [0])
    ends = helper.make_tensor("ends", TensorProto.INT64, [1], [2])
    head = helper.make_node("Slice", ["big", "starts", "ends"], ["target"], name="head")
    reshape = helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")
    save(helper.make_graph([head, reshape], "slice_of_big", [x, big], [y], [starts, ends]),
         "slice_of_big.onnx")


def all_of_big():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])
    big = helper.make_tensor_value_info("big", TensorProto.INT64, [600])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])
    whole = helper.make_node("Identity", ["big"], ["target"], name="whole")
    reshape = helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")
    save(helper.make_graph([whole, reshape], "all_of_big", [x, big], [y]), "all_of_big.onnx")


def branch_on_energy():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    square = helper.make_node("Mul", ["x", "x"], ["x2"], name="square")
    energy = helper.make_node("ReduceSum", ["x2"], ["energy"], name="energy", keepdims=0)
    loud = helper.make_node("Greater", ["energy", "one"], ["loud"], name="loud")
    branch = relu_or_neg("loud")
    save(helper.make_graph([square, energy, loud, branch], "branch_on_energy", [x], [y], [one]),
         "branch_on_energy.onnx")


if __name__ == "__main__":
    dynamic_batch()
    two_inputs()
    unsupported()
    add_int32()
    odd_names()
    reshape_by_input()
    branch_on_rate()
    slice_of_big()
    all_of_big()
    branch_on_energy()
