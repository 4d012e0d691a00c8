#!/usr/bin/env python3
"""Load test of Triton Inference Server with the Plexus backend and, side by
side in the same server, ONNX Runtime: Triton's python backend hosting an
onnxruntime InferenceSession (the nvidia-pytriton wheel has no onnxruntime
backend). Concurrent gRPC clients on loopback send a fixed number of
requests per concurrency level; the figures are requests per second and
the p50 and p99 latency, per model, side and level, and the backend's mean
compute time per request from Triton's statistics (docs/triton.md).

usage: bench/triton_load.py [--build DIR] [--models DIR] [--requests N]
           [--concurrency 1,2,4,8] [--threads N] [--instances N]
           [--plexus-backends ID,...]

Models: onnx/models/digits/digits.onnx (its digit-7 image), and each
NAME.onnx of --models with its inputs NAME.input.npy or NAME.INPUT.npy, as
scripts/fetch-real-models.py writes them. Plexus' intra-op threads
(parameter threads) and ONNX Runtime's (intra_op_num_threads) are the same
--threads; both sides have --instances model instances. The clients run on
the same machine as the server. The first response of each side is checked
against ONNX Runtime run in this process.

Needs the venv of scripts/test-triton.sh with onnxruntime added:
    scripts/test-triton.sh build &&
    build/triton-venv/bin/pip install onnxruntime==1.20.1 &&
    build/triton-venv/bin/python bench/triton_load.py --build build --models DIR
"""

import argparse
import concurrent.futures
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "triton"))
import triton_harness as th  # noqa: E402

# The python backend's model: one ONNX Runtime session per instance, with
# the configuration's threads as its intra-op threads.
ORT_MODEL_PY = '''
import json
import os

import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(config["parameters"]["threads"]["string_value"])
        options.inter_op_num_threads = 1
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [i["name"] for i in config["input"]]
        self.outputs = [o["name"] for o in config["output"]]

    def execute(self, requests):
        responses = []
        for request in requests:
            feeds = {n: pb_utils.get_input_tensor_by_name(request, n).as_numpy()
                     for n in self.inputs}
            results = self.session.run(self.outputs, feeds)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor(n, r) for n, r in zip(self.outputs, results)]))
        return responses
'''

TYPES = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32",
         np.dtype(np.uint8): "UINT8"}


def find_models(models_dir):
    """(name, onnx path, {input: array}) for digits and each model of
    models_dir."""
    found = [("digits", th.DIGITS,
              {"image": np.load(th.DIGITS_INPUTS / "digit-7.npy").astype(np.float32)})]
    for path in sorted(pathlib.Path(models_dir).glob("*.onnx")) if models_dir else []:
        import onnx

        names = [i.name for i in onnx.load(str(path)).graph.input]
        single = path.with_suffix(".input.npy")
        if len(names) == 1 and single.exists():
            inputs = {names[0]: np.load(single)}
        else:
            inputs = {n: np.load(path.with_name(f"{path.stem}.{n}.npy")) for n in names}
        found.append((path.stem, path, inputs))
    return found


def config(name, backend, inputs, outputs, threads, instances, extra):
    def io(n, a):
        dims = ", ".join(str(d) for d in a.shape)
        return f'{{ name: "{n}" data_type: TYPE_{TYPES[a.dtype]} dims: [ {dims} ] }}'

    return (f'name: "{name}"\nbackend: "{backend}"\nmax_batch_size: 0\n'
            f'input [ {", ".join(io(n, a) for n, a in inputs.items())} ]\n'
            f'output [ {", ".join(io(n, a) for n, a in outputs.items())} ]\n'
            f"instance_group [ {{ count: {instances} kind: KIND_CPU }} ]\n"
            f'parameters {{ key: "threads" value: {{ string_value: "{threads}" }} }}\n' + extra)


def run_level(server, model, inputs, requests, concurrency):
    """Latencies (s) of `requests` requests from `concurrency` clients, and
    the wall time."""
    import tritonclient.grpc as grpcclient

    per_client = [requests // concurrency + (i < requests % concurrency)
                  for i in range(concurrency)]

    def client(count):
        c = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        infer_inputs = []
        for n, a in inputs.items():
            i = grpcclient.InferInput(n, list(a.shape), TYPES[a.dtype])
            i.set_data_from_numpy(a)
            infer_inputs.append(i)
        c.infer(model, infer_inputs)  # the connection made before timing
        lat = []
        for _ in range(count):
            t = time.perf_counter()
            c.infer(model, infer_inputs)
            lat.append(time.perf_counter() - t)
        c.close()
        return lat

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        start = time.perf_counter()
        lats = [x for part in pool.map(client, per_client) for x in part]
        wall = time.perf_counter() - start
    return lats, wall


def compute_stats(server, model):
    """(executions, nanoseconds) of the backend's compute so far, from
    Triton's statistics (compute_infer: from the inputs given to the
    backend to its outputs made; for the python backend, the round trip to
    its stub process included)."""
    stats = server.request(f"/v2/models/{model}/stats")[1]["model_stats"][0]["inference_stats"]
    return int(stats["compute_infer"]["count"]), int(stats["compute_infer"]["ns"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--models", help="directory of published models (scripts/fetch-real-models.py)")
    ap.add_argument("--requests", type=int, default=2000, help="requests per level (default 2000)")
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--plexus-backends", default="",
                    help="the Plexus backends parameter (default: every available one)")
    args = ap.parse_args()
    import onnxruntime as ort

    levels = [int(c) for c in args.concurrency.split(",")]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="triton-load-"))
    repo = tmp / "models"
    models = find_models(args.models)
    reference = {}
    for name, path, inputs in models:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outs = session.get_outputs()
        results = session.run(None, inputs)
        reference[name] = {o.name: r for o, r in zip(outs, results)}
        extra = (f'parameters {{ key: "backends" value: {{ string_value: "{args.plexus_backends}" }} }}\n'
                 if args.plexus_backends else "")
        th.add_model(repo, f"{name}_plexus",
                     config(f"{name}_plexus", "plexus", inputs, reference[name], args.threads,
                            args.instances, extra),
                     {"model.onnx": pathlib.Path(path)})
        th.add_model(repo, f"{name}_ort",
                     config(f"{name}_ort", "python", inputs, reference[name], args.threads,
                            args.instances, ""),
                     {"model.onnx": pathlib.Path(path), "model.py": ORT_MODEL_PY})
    env = th.plexus_env(args.build)
    # The python backend's stub embeds the system's libpython 3.11, which
    # takes its prefix from the python3 first on PATH: this venv's, with
    # onnxruntime and numpy.
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}:{env['PATH']}"
    backends = th.make_backend_dir(args.build, tmp / "backends")
    with th.Server(repo, backends, env, tmp / "tritonserver.log") as server:
        print(f"Triton {server.request('/v2')[1]['version']}, {args.instances} instances, "
              f"{args.threads} intra-op thread(s) per instance, {args.requests} requests per "
              f"level, gRPC clients on the same machine\n")
        print("| model | side | clients | req/s | p50 ms | p99 ms | compute us |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name, _, inputs in models:
            for side in ("plexus", "ort"):
                model = f"{name}_{side}"
                status, out = server.infer(model, {n: (a, TYPES[a.dtype]) for n, a in inputs.items()})
                if status != 200:
                    sys.exit(f"{model}: {out}")
                for o, want in reference[name].items():
                    np.testing.assert_allclose(out[o], want, rtol=1e-3, atol=1e-5,
                                               err_msg=f"{model} output {o}")
                for c in levels:
                    before = compute_stats(server, model)
                    lats, wall = run_level(server, model, inputs, args.requests, c)
                    after = compute_stats(server, model)
                    compute_us = (after[1] - before[1]) / max(after[0] - before[0], 1) / 1e3
                    ms = np.array(lats) * 1e3
                    print(f"| {name} | {'Plexus' if side == 'plexus' else 'ONNX Runtime (python backend)'} "
                          f"| {c} | {len(lats) / wall:.0f} | {np.percentile(ms, 50):.2f} "
                          f"| {np.percentile(ms, 99):.2f} | {compute_us:.0f} |", flush=True)


if __name__ == "__main__":
    main()
