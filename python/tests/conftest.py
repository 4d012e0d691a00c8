"""Fixtures of the plexus package's tests (docs/python.md, "Tests"): they run
against the installed package and see only its own backends."""

import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import plexus

REPO = pathlib.Path(__file__).resolve().parents[2]
DIGITS = REPO / "onnx" / "models" / "digits"

# The environment's backends are not the package's: a runtime made by a
# test reads PLEXUS_BACKEND_PATH only where the test sets it.
for _var in ("PLEXUS_BACKEND_PATH", "PLEXUS_BACKENDS", "PLEXUS_SKIP_DEFAULT_DIR"):
    os.environ.pop(_var, None)


def pytest_sessionstart(session):
    # The installed package, not python/plexus of the source tree.
    here = pathlib.Path(plexus.__file__).resolve()
    assert REPO / "python" not in here.parents, f"tests import {here}, not the installed package"


@pytest.fixture(scope="session")
def runtime():
    return plexus.Runtime(ignore_environment=True)


@pytest.fixture(scope="session")
def digits_path():
    return str(DIGITS / "digits.onnx")


@pytest.fixture(scope="session")
def digit_images():
    """(image, expected probabilities) for each digit."""
    return [(np.load(DIGITS / "inputs" / f"digit-{d}.npy"),
             np.load(DIGITS / "expected" / f"digit-{d}.npy")) for d in range(10)]


def save_model(path, nodes, inputs, outputs, initializers=()):
    """Writes an ONNX model (opset 13) of one graph to `path`; returns it as str."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def open_batch_path(tmp_path_factory):
    """y = relu(x @ W + b), x float32 [N, 4] with N open, y [N, 3]."""
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10 - 0.5
    b = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    path = save_model(
        tmp_path_factory.mktemp("models") / "open_batch.onnx",
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "B"], ["z"]),
         helper.make_node("Relu", ["z"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor("W", TensorProto.FLOAT, [4, 3], w.ravel()),
         helper.make_tensor("B", TensorProto.FLOAT, [3], b)])
    return path, (lambda x: np.maximum(x @ w + b, 0))


@pytest.fixture(scope="session")
def add_int32_path(tmp_path_factory):
    """c = a + b, int32 [2, 3]: cpu_onednn refuses it (float32 only)."""
    return save_model(
        tmp_path_factory.mktemp("models") / "add_int32.onnx",
        [helper.make_node("Add", ["a", "b"], ["c"])],
        [helper.make_tensor_value_info("a", TensorProto.INT32, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.INT32, [2, 3])],
        [helper.make_tensor_value_info("c", TensorProto.INT32, [2, 3])])


@pytest.fixture(scope="session")
def matmul_chain_path(tmp_path_factory):
    """Four 256x256 matmuls in a row: an execution long enough (some ms) for
    executions of several threads to overlap."""
    rng = np.random.default_rng(1)
    ws = [(rng.standard_normal((256, 256)) / 16).astype(np.float32) for _ in range(4)]
    nodes = [helper.make_node("MatMul", [f"h{i}", f"W{i}"], [f"h{i + 1}" if i < 3 else "y"])
             for i in range(4)]
    nodes[0].input[0] = "x"
    path = save_model(
        tmp_path_factory.mktemp("models") / "matmul_chain.onnx", nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor(f"W{i}", TensorProto.FLOAT, [256, 256], w.ravel())
         for i, w in enumerate(ws)])

    def reference(x):
        for w in ws:
            x = x @ w
        return x
    return path, reference
