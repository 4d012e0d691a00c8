"""Models with open dims: fixed at load (shapes=) or chosen per run (dynamic=True)."""

import numpy as np
import pytest

import plexus


def test_open_dim_needs_a_size_or_dynamic(runtime, open_batch_path):
    path, _ = open_batch_path
    with pytest.raises(plexus.InvalidArgumentError, match="input 'x' dim 0 \\('N'\\) has no size"):
        runtime.load(path)


def test_shapes_fix_open_dims(runtime, open_batch_path):
    path, reference = open_batch_path
    model = runtime.load(path, shapes={"x": [2, 4]})
    assert model.inputs == [plexus.TensorInfo("x", "float32", (2, 4))]
    assert model.outputs == [plexus.TensorInfo("y", "float32", (2, 3))]
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    assert np.allclose(model.run({"x": x})["y"], reference(x), atol=1e-6)
    with pytest.raises(plexus.InvalidArgumentError, match="the model says 4"):
        runtime.load(path, shapes={"x": [2, 5]})


@pytest.mark.parametrize("backends", [None, ["cpu_ref"]])
def test_dynamic_batch_sizes(runtime, open_batch_path, backends):
    path, reference = open_batch_path
    model = runtime.load(path, backends, dynamic=True, cache_capacity=2)
    assert model.dynamic and model.inputs is None and model.outputs is None
    assert model.assignment is None and model.memory_report() == []
    rng = np.random.default_rng(0)
    for n in (1, 5, 3, 5, 1, 700):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        y = model.run({"x": x})["y"]
        assert y.shape == (n, 3) and y.dtype == np.float32
        assert np.allclose(y, reference(x), atol=1e-5)
    stats = model.dynamic_stats()
    assert stats["misses"] >= 4 and stats["failures"] == 0
    assert stats["cached"] <= 2 and stats["evictions"] >= 2


def test_dynamic_errors(runtime, open_batch_path):
    path, _ = open_batch_path
    model = runtime.load(path, dynamic=True)
    with pytest.raises(plexus.InvalidArgumentError, match="input 'x' has dtype float64"):
        model.run({"x": np.zeros((2, 4))})
    with pytest.raises(plexus.InvalidArgumentError, match="'x'"):
        model.run({"x": np.zeros((2, 5), np.float32)})
    with pytest.raises(plexus.Error, match="'z'"):
        model.run({"x": np.zeros((2, 4), np.float32), "z": np.zeros(1, np.float32)})
    with pytest.raises(plexus.Error, match="'x'"):
        model.run({})
    given = np.empty((2, 3), np.float32)
    out = model.run({"x": np.ones((2, 4), np.float32)}, outputs={"y": given})
    assert out["y"] is given
    with pytest.raises(plexus.InvalidArgumentError, match="'w' is not an output"):
        model.run({"x": np.ones((2, 4), np.float32)}, outputs={"w": given})


def test_dynamic_missing_file(runtime, tmp_path):
    with pytest.raises(plexus.IOFailedError, match="missing.onnx"):
        runtime.load(tmp_path / "missing.onnx", dynamic=True)
    with pytest.raises(plexus.InvalidArgumentError, match="cache_capacity"):
        runtime.load(tmp_path / "missing.onnx", dynamic=True, cache_capacity=-1)
