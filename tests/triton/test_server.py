"""Triton Inference Server with the Plexus backend (docs/triton.md): a
tritonserver started on loopback serves the digits model
(onnx/models/digits) through libtriton_plexus.so and is checked over KServe
v2 HTTP and gRPC. Run by scripts/test-triton.sh BUILD_DIR, which installs
the pinned server (tests/triton/requirements.txt) and sets
PLEXUS_BUILD_DIR."""

import concurrent.futures
import os
import pathlib
import subprocess

import numpy as np
import pytest

import triton_harness as th

BUILD = pathlib.Path(os.environ.get("PLEXUS_BUILD_DIR", th.ROOT / "build")).resolve()

DIGITS_CONFIG = """
name: "digits"
backend: "plexus"
max_batch_size: 0
input [ { name: "image" data_type: TYPE_FP32 dims: [ 1, 1, 8, 8 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 1, 10 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
"""

# The open-batch variant: requests of [b,1,8,8] gathered by the dynamic
# batcher into one execution; one instance, so that concurrent requests
# queue and are gathered.
BATCH_CONFIG = """
name: "digits_batch"
backend: "plexus"
max_batch_size: 8
input [ { name: "image" data_type: TYPE_FP32 dims: [ 1, 8, 8 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 50000 }
parameters { key: "backends" value: { string_value: "cpu_ref" } }
parameters { key: "threads" value: { string_value: "1" } }
"""

# The fixed-shape model behind a configuration that leaves its image
# size open: Triton passes a [1,1,4,16] request on to the backend, which
# must refuse it.
OPEN_CONFIG = """
name: "digits_open"
backend: "plexus"
max_batch_size: 0
input [ { name: "image" data_type: TYPE_FP32 dims: [ 1, 1, -1, -1 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 1, 10 ] } ]
parameters { key: "backends" value: { string_value: "cpu_ref" } }
parameters { key: "fallback" value: { string_value: "false" } }
"""

# Configurations that must fail to load, each with what its message names.
BAD_MODELS = {
    "bad_backend": ('parameters { key: "backends" value: { string_value: "cpu_ref,no_such" } }',
                    "no backend 'no_such'"),
    "bad_key": ('parameters { key: "thread" value: { string_value: "2" } }',
                "unknown parameter 'thread'"),
    "bad_threads": ('parameters { key: "threads" value: { string_value: "many" } }',
                    "parameter threads is 'many'"),
    "bad_fallback": ('parameters { key: "fallback" value: { string_value: "yes" } }',
                     "parameter fallback is 'yes'"),
    "bad_option": ('parameters { key: "backend_options" value: { string_value: "cpu_ref.no_such_key=1" } }',
                   "no_such_key"),
    "bad_dims": (None, "with the shapes of config.pbtxt: "),
    # The fixed-batch model cannot take the batches max_batch_size allows.
    "bad_batch": (None, "with the shapes of config.pbtxt and a batch of 4: "),
    "bad_dtype": (None, "is FP64 in config.pbtxt but FP32"),
}


def bad_config(name, parameters):
    dims, dtype = "1, 1, 8, 8", "TYPE_FP32"
    if name == "bad_dims":
        dims = "1, 1, 8, 9"
    if name == "bad_dtype":
        dtype = "TYPE_FP64"
    batch, out_dims = 0, "1, 10"
    if name == "bad_batch":
        batch, dims, out_dims = 4, "1, 8, 8", "10"
    return f"""
name: "{name}"
backend: "plexus"
max_batch_size: {batch}
input [ {{ name: "image" data_type: {dtype} dims: [ {dims} ] }} ]
output [ {{ name: "probabilities" data_type: TYPE_FP32 dims: [ {out_dims} ] }} ]
{parameters or ''}
"""


def digit(k):
    return np.load(th.DIGITS_INPUTS / f"digit-{k}.npy").astype(np.float32)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not (BUILD / "triton" / "libtriton_plexus.so").exists():
        pytest.fail(f"{BUILD}/triton/libtriton_plexus.so is missing (meson feature 'triton')")
    tmp = tmp_path_factory.mktemp("triton")
    repo = tmp / "models"
    th.add_model(repo, "digits", DIGITS_CONFIG, {"model.onnx": th.DIGITS})
    th.add_model(repo, "digits_batch", BATCH_CONFIG,
                 {"model.onnx": th.open_batch_model(th.DIGITS, tmp / "digits_batch.onnx")})
    th.add_model(repo, "digits_open", OPEN_CONFIG, {"model.onnx": th.DIGITS})
    for name, (parameters, _) in BAD_MODELS.items():
        th.add_model(repo, name, bad_config(name, parameters), {"model.onnx": th.DIGITS})
    backends = th.make_backend_dir(BUILD, tmp / "backends")
    srv = th.Server(repo, backends, th.plexus_env(BUILD), tmp / "tritonserver.log",
                    models=["digits", "digits_batch", "digits_open"])
    srv.start()
    yield srv
    srv.stop()
    # The server stopped by itself on SIGTERM, with no crash.
    log = (tmp / "tritonserver.log").read_text()
    assert "Segmentation fault" not in log and "Aborted" not in log


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """`plexus run --output-dir`'s probabilities for each digit image."""
    out = {}
    tmp = tmp_path_factory.mktemp("plexus-run")
    for k in range(10):
        d = tmp / str(k)
        subprocess.run([str(BUILD / "tools" / "plexus"), "run", str(th.DIGITS),
                        "--input", f"image={th.DIGITS_INPUTS / f'digit-{k}.npy'}",
                        "--output-dir", str(d), "--iterations", "1", "--warmup", "0"],
                       env=th.plexus_env(BUILD), check=True, stdout=subprocess.DEVNULL)
        out[k] = np.load(d / "probabilities.npy")
    return out


def test_health(server):
    assert server.request("/v2/health/live")[0] == 200
    assert server.request("/v2/health/ready")[0] == 200
    status, meta = server.request("/v2")
    assert status == 200 and meta["name"] == "triton"


def test_model_metadata_and_config(server):
    status, meta = server.request("/v2/models/digits")
    assert status == 200
    assert meta["platform"] == "plexus"
    assert meta["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [1, 1, 8, 8]}]
    assert meta["outputs"] == [{"name": "probabilities", "datatype": "FP32", "shape": [1, 10]}]
    assert server.request("/v2/models/digits/ready")[0] == 200
    status, config = server.request("/v2/models/digits_batch/config")
    assert status == 200
    assert config["backend"] == "plexus" and config["max_batch_size"] == 8
    assert config["parameters"]["backends"]["string_value"] == "cpu_ref"


@pytest.mark.parametrize("k", range(10))
def test_outputs_match_plexus_run(server, expected, k):
    status, out = server.infer("digits", {"image": digit(k)})
    assert status == 200, out
    assert out["probabilities"].shape == (1, 10)
    np.testing.assert_allclose(out["probabilities"], expected[k], rtol=1e-5, atol=1e-7)
    assert int(np.argmax(out["probabilities"])) == k


def test_grpc(server, expected):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        assert client.is_server_live() and client.is_model_ready("digits")
        inp = grpcclient.InferInput("image", [1, 1, 8, 8], "FP32")
        inp.set_data_from_numpy(digit(3))
        result = client.infer("digits", [inp])
        np.testing.assert_allclose(result.as_numpy("probabilities"), expected[3],
                                   rtol=1e-5, atol=1e-7)
    finally:
        client.close()


@pytest.mark.parametrize("inputs,message", [
    ({"image": digit(1).reshape(1, 1, 4, 16)}, "shape"),
    ({"image": digit(1).reshape(1, 64)}, "shape"),
    ({"image": (digit(1).astype(np.float64), "FP64")}, "FP64"),
    ({"image": digit(1), "extra": np.zeros((1,), np.float32)}, "extra"),
    ({"picture": digit(1)}, "picture"),
    ({}, "image"),
], ids=["wrong-shape", "wrong-rank", "wrong-dtype", "unknown-input", "unknown-only", "missing-input"])
def test_bad_requests_are_refused(server, expected, inputs, message):
    status, error = server.infer("digits", inputs)
    assert 400 <= status < 500, error
    assert message in error
    # The server keeps serving.
    status, out = server.infer("digits", {"image": digit(1)})
    assert status == 200
    np.testing.assert_allclose(out["probabilities"], expected[1], rtol=1e-5, atol=1e-7)


def test_backend_refuses_what_the_model_cannot_take(server, expected):
    # Triton accepts [1,1,4,16] for dims [1,1,-1,-1]; Plexus cannot import
    # the model with it: an INVALID_ARG response naming the input.
    status, error = server.infer("digits_open", {"image": digit(2).reshape(1, 1, 4, 16)})
    assert status == 400, error
    assert "image" in error
    status, out = server.infer("digits_open", {"image": digit(2)})
    assert status == 200, out
    np.testing.assert_allclose(out["probabilities"], expected[2], rtol=1e-5, atol=1e-7)


def test_requested_output_subset(server, expected):
    status, out = server.infer("digits", {"image": digit(5)}, outputs=["probabilities"])
    assert status == 200
    status, error = server.infer("digits", {"image": digit(5)}, outputs=["logits"])
    assert 400 <= status < 500 and "logits" in error


def test_instances_run_concurrently(server, expected):
    # digits has two instances: 64 requests from 8 clients all come back
    # right.
    def one(i):
        k = i % 10
        status, out = server.infer("digits", {"image": digit(k)})
        return k, status, out

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for k, status, out in pool.map(one, range(64)):
            assert status == 200, out
            np.testing.assert_allclose(out["probabilities"], expected[k], rtol=1e-5, atol=1e-7)


def test_dynamic_batching(server, expected):
    before_inf = server.metric("nv_inference_count", "digits_batch") or 0
    before_exec = server.metric("nv_inference_exec_count", "digits_batch") or 0
    # A batch of 3 in one request: the rows are the single results.
    batch = np.concatenate([digit(k) for k in (4, 5, 6)])
    status, out = server.infer("digits_batch", {"image": batch})
    assert status == 200, out
    for row, k in enumerate((4, 5, 6)):
        np.testing.assert_allclose(out["probabilities"][row], expected[k][0], rtol=1e-5,
                                   atol=1e-7)

    # 24 concurrent requests of 1 or 2 images: the dynamic batcher gathers
    # them into fewer executions, and each response has its own rows.
    def one(i):
        ks = [i % 10] if i % 3 else [i % 10, (i + 1) % 10]
        status, out = server.infer("digits_batch", {"image": np.concatenate([digit(k) for k in ks])})
        return ks, status, out

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        results = list(pool.map(one, range(24)))
    images = 3
    for ks, status, out in results:
        assert status == 200, out
        assert out["probabilities"].shape == (len(ks), 10)
        for row, k in enumerate(ks):
            np.testing.assert_allclose(out["probabilities"][row], expected[k][0], rtol=1e-5,
                                       atol=1e-7)
        images += len(ks)
    inferences = server.metric("nv_inference_count", "digits_batch") - before_inf
    executions = server.metric("nv_inference_exec_count", "digits_batch") - before_exec
    assert inferences == images
    assert executions < 25, f"{executions} executions for 25 requests: nothing was gathered"


def test_batch_over_max_is_refused(server):
    status, error = server.infer("digits_batch", {"image": np.zeros((9, 1, 8, 8), np.float32)})
    assert 400 <= status < 500, error


@pytest.mark.parametrize("name", list(BAD_MODELS))
def test_bad_configuration_fails_to_load(server, name):
    status, reply = server.request(f"/v2/repository/models/{name}/load", {})
    assert status == 400, reply
    assert BAD_MODELS[name][1] in reply["error"], reply["error"]
    assert server.request(f"/v2/models/{name}/ready")[0] != 200
    # The server survives and serves the others.
    assert server.request("/v2/health/live")[0] == 200
    assert server.infer("digits", {"image": digit(0)})[0] == 200


def test_metrics_count_executions(server):
    before_inf = server.metric("nv_inference_count", "digits")
    before_exec = server.metric("nv_inference_exec_count", "digits")
    before_ok = server.metric("nv_inference_request_success", "digits")
    for k in range(5):
        assert server.infer("digits", {"image": digit(k)})[0] == 200
    assert server.metric("nv_inference_count", "digits") == before_inf + 5
    assert server.metric("nv_inference_exec_count", "digits") == before_exec + 5
    assert server.metric("nv_inference_request_success", "digits") == before_ok + 5
    status, stats = server.request("/v2/models/digits/stats")
    assert status == 200
    assert stats["model_stats"][0]["inference_count"] >= 5
