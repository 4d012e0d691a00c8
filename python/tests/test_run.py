"""Loading and running models: the digits model, backend preferences and
fallback, dtype and shape checks, memory used in place."""

import numpy as np
import pytest

import plexus
from plexus import _prepare_input

BACKENDS = ["cpu_ref", "cpu_onednn", "gpu_opencl"]


def available(runtime, backend_id):
    return any(b["id"] == backend_id and b["available"] for b in runtime.info()["backends"])


def test_load_and_run_digits(runtime, digits_path, digit_images):
    model = runtime.load(digits_path)
    assert model.inputs == [plexus.TensorInfo("image", "float32", (1, 1, 8, 8))]
    assert model.outputs == [plexus.TensorInfo("probabilities", "float32", (1, 10))]
    assert not model.dynamic
    for digit, (image, expected) in enumerate(digit_images):
        out = model.run({"image": image})
        assert list(out) == ["probabilities"]
        p = out["probabilities"]
        assert p.dtype == np.float32 and p.shape == (1, 10)
        assert abs(p - expected).max() < 1e-5
        assert p.argmax() == digit


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend(runtime, digits_path, digit_images, backend):
    if not available(runtime, backend):
        pytest.skip(f"{backend} is not available here")
    model = runtime.load(digits_path, [backend], fallback=False)
    assert {layer["backend"] for layer in model.assignment["layers"]} == {backend}
    image, expected = digit_images[7]
    assert abs(model.run({"image": image})["probabilities"] - expected).max() < 1e-5


def test_module_load_uses_the_default_runtime(digits_path, digit_images):
    model = plexus.load(digits_path, "cpu_ref")
    assert model.runtime is plexus.default_runtime()
    assert model.run({"image": digit_images[1][0]})["probabilities"].argmax() == 1


def test_fallback_and_its_reasons(runtime, add_int32_path):
    if not available(runtime, "cpu_onednn"):
        pytest.skip("cpu_onednn is not available here")
    model = runtime.load(add_int32_path, ["cpu_onednn", "cpu_ref"])
    add = next(layer for layer in model.assignment["layers"] if layer["op"] == "binary")
    assert add["backend"] == "cpu_ref"
    assert add["refusals"][0]["backend"] == "cpu_onednn"
    assert "int32" in add["refusals"][0]["reason"]
    assert "fell back from cpu_onednn to cpu_ref" in model.assignment["summary"]
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert (model.run({"a": a, "b": a * 10})["c"] == a * 11).all()
    with pytest.raises(plexus.UnsupportedError, match="fallback is disabled") as e:
        runtime.load(add_int32_path, ["cpu_onednn"], fallback=False)
    assert e.value.code == 5 and e.value.code_name == "UNSUPPORTED"


def test_inputs_from_lists_and_noncontiguous_arrays(runtime, add_int32_path):
    model = runtime.load(add_int32_path, ["cpu_ref"])
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:2, :3]  # not contiguous
    b = [[1, 1, 1], [2, 2, 2]]
    with pytest.raises(plexus.InvalidArgumentError, match="input 'b' has dtype int64"):
        model.run({"a": a, "b": b})
    out = model.run({"a": a, "b": np.array(b, dtype=np.int32)})
    assert (out["c"] == a + np.array(b)).all()


def test_wrong_dtype_shape_name(runtime, digits_path, digit_images):
    model = runtime.load(digits_path)
    image = digit_images[0][0]
    with pytest.raises(plexus.InvalidArgumentError,
                       match=r"input 'image' has dtype float64 .*expects float32"):
        model.run({"image": image.astype(np.float64)})
    with pytest.raises(plexus.InvalidArgumentError,
                       match=r"input 'image' has shape \(8, 8\), the model expects \(1, 1, 8, 8\)"):
        model.run({"image": image[0, 0]})
    with pytest.raises(plexus.InvalidArgumentError, match="'picture' is not an input"):
        model.run({"image": image, "picture": image})
    with pytest.raises(plexus.InvalidArgumentError, match="input 'image' is missing"):
        model.run({})
    with pytest.raises(plexus.InvalidArgumentError, match="'logits' is not an output"):
        model.run({"image": image}, outputs={"logits": np.empty((1, 10), np.float32)})
    with pytest.raises(plexus.InvalidArgumentError,
                       match="output 'probabilities' has shape"):
        model.run({"image": image}, outputs={"probabilities": np.empty(10, np.float32)})
    with pytest.raises(plexus.InvalidArgumentError, match="output 'probabilities'.*writable"):
        ro = np.empty((1, 10), np.float32)
        ro.flags.writeable = False
        model.run({"image": image}, outputs={"probabilities": ro})
    # The model still runs after the errors.
    assert model.run({"image": image})["probabilities"].argmax() == 0


def test_load_errors(runtime, tmp_path, digits_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(plexus.IOFailedError) as e:
        runtime.load(missing)
    assert str(missing) in str(e.value) and e.value.code == 8
    assert isinstance(e.value, OSError) and isinstance(e.value, plexus.Error)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\x00 not a model")
    with pytest.raises(plexus.Error, match="garbage.onnx"):
        runtime.load(garbage)
    with pytest.raises(plexus.InvalidArgumentError, match="model.xyz"):
        runtime.load(tmp_path / "model.xyz")
    with pytest.raises(plexus.Error, match="no_such_backend"):
        runtime.load(digits_path, ["no_such_backend"], fallback=False)


def test_outputs_written_in_place(runtime, digits_path, digit_images):
    model = runtime.load(digits_path)
    image, expected = digit_images[5]
    given = np.full((1, 10), np.nan, dtype=np.float32)
    out = model.run({"image": image}, outputs={"probabilities": given})
    assert out["probabilities"] is given
    assert abs(given - expected).max() < 1e-5


def test_arrays_made_by_run_are_aligned(runtime, digits_path, digit_images):
    for backend in ("cpu_ref", "gpu_opencl"):
        if not available(runtime, backend):
            continue
        model = runtime.load(digits_path, [backend])
        p = model.run({"image": digit_images[2][0]})["probabilities"]
        assert p.ctypes.data % model.alignment == 0 and p.flags.c_contiguous


def test_inputs_read_in_place_when_aligned(runtime, digits_path, digit_images):
    if not available(runtime, "gpu_opencl"):
        pytest.skip("gpu_opencl is not available here")
    model = runtime.load(digits_path, ["gpu_opencl"])
    # gpu_opencl imports 64-byte aligned memory: an array so aligned is bound
    # as it is, another is copied into aligned memory first.
    assert model.alignment == 64
    image, expected = digit_images[4]
    raw = np.empty(64 * 2 + image.nbytes, np.uint8)
    off = -raw.ctypes.data % 64
    aligned = raw[off:off + image.nbytes].view(np.float32).reshape(image.shape)
    aligned[...] = image
    raw2 = np.empty(64 * 2 + image.nbytes, np.uint8)
    off2 = -raw2.ctypes.data % 64 + 4
    misaligned = raw2[off2:off2 + image.nbytes].view(np.float32).reshape(image.shape)
    misaligned[...] = image
    assert _prepare_input(misaligned, 64) is not misaligned
    assert _prepare_input(aligned, 64) is aligned
    for x in (aligned, misaligned, image):
        assert abs(model.run({"image": x})["probabilities"] - expected).max() < 1e-5
    # ...and no staging copy by the core: every input and output in place.
    assert model.staged_copy_count() == 0
    assert "input 'image' is zero copy on gpu_opencl" in model.assignment["summary"]
