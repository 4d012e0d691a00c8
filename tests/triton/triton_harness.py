"""Runs Triton Inference Server with the Plexus backend on loopback: what
tests/triton/test_server.py and bench/triton_load.py share (docs/triton.md).

The server is the tritonserver binary of the nvidia-pytriton wheel
(tests/triton/requirements.txt). The backend is BUILD/triton/
libtriton_plexus.so, found through a backend directory made in a temporary
directory (<dir>/plexus/libtriton_plexus.so, as Triton looks for it; the
wheel's python backend beside it), and the Plexus backends are those of the
build tree, as `meson devenv` sets them."""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIGITS = ROOT / "onnx" / "models" / "digits" / "digits.onnx"
DIGITS_INPUTS = ROOT / "onnx" / "models" / "digits" / "inputs"


def tritonserver_dir():
    import pytriton

    return pathlib.Path(pytriton.__file__).parent / "tritonserver"


def plexus_env(build):
    """The environment of a process that runs Plexus from the build tree:
    its backends (in the order `meson devenv` gives), not installed ones,
    and libplexus for libtriton_plexus.so."""
    build = pathlib.Path(build)
    paths = [str(build / d) for d in ("cpu_onednn", "cpu_ref", "gpu_opencl") if (build / d).is_dir()]
    env = dict(os.environ)
    env["PLEXUS_BACKEND_PATH"] = ":".join(paths)
    env["PLEXUS_SKIP_DEFAULT_DIR"] = "1"
    env["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(build), env.get("LD_LIBRARY_PATH", "")]))
    return env


def make_backend_dir(build, where):
    """<where>/plexus/libtriton_plexus.so (a link to the build's) and
    <where>/python (the wheel's python backend, with the stub for this
    Python)."""
    where = pathlib.Path(where)
    (where / "plexus").mkdir(parents=True, exist_ok=True)
    link = where / "plexus" / "libtriton_plexus.so"
    if not link.exists():
        link.symlink_to(pathlib.Path(build).resolve() / "triton" / "libtriton_plexus.so")
    python = where / "python"
    if not python.exists():
        python.mkdir()
        for f in (tritonserver_dir() / "backends" / "python").iterdir():
            (python / f.name).symlink_to(f)
        # The stub process that runs model.py, for this Python's version.
        stub = (tritonserver_dir() / "python_backend_stubs" /
                f"{sys.version_info[0]}.{sys.version_info[1]}" / "triton_python_backend_stub")
        (python / stub.name).symlink_to(stub)
    return where


def add_model(repo, name, config, files):
    """repo/name/config.pbtxt and repo/name/1/<file> for each file of
    `files`: a copy of a pathlib.Path, or the text of a str."""
    model = pathlib.Path(repo) / name
    (model / "1").mkdir(parents=True, exist_ok=True)
    (model / "config.pbtxt").write_text(config)
    for file, source in files.items():
        if isinstance(source, pathlib.Path):
            shutil.copyfile(source, model / "1" / file)
        else:
            (model / "1" / file).write_text(source)
    return model


def open_batch_model(source, dest):
    """A copy of an ONNX model whose inputs' and outputs' first dim is the
    symbolic batch 'N'."""
    import onnx

    model = onnx.load(str(source))
    for value in list(model.graph.input) + list(model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "N"
    onnx.save(model, str(dest))
    return dest


def free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Server:
    """tritonserver on loopback, started by start() and stopped by stop()
    (or as a context manager)."""

    def __init__(self, repo, backend_dir, env, log_path, models=None, extra_args=()):
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        args = [
            str(tritonserver_dir() / "bin" / "tritonserver"),
            f"--model-repository={repo}",
            f"--backend-directory={backend_dir}",
            "--http-address=127.0.0.1",
            f"--http-port={self.http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={self.metrics_port}",
            "--allow-metrics=true",
            "--allow-gpu-metrics=false",
        ]
        if models is not None:
            args.append("--model-control-mode=explicit")
            args += [f"--load-model={m}" for m in models]
        self.args = args + list(extra_args)
        self.env = env
        self.log_path = pathlib.Path(log_path)
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, timeout=120):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {self.proc.returncode}:\n"
                                   + self.log_path.read_text()[-4000:])
            try:
                if self.request("/v2/health/ready")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("tritonserver did not get ready:\n" + self.log_path.read_text()[-4000:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def request(self, path, body=None, raw=False):
        """(HTTP status, parsed JSON or text) of a GET, or of a POST of
        `body` (JSON)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        if raw:
            return status, text
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text

    def infer(self, model, inputs, outputs=None):
        """KServe v2 JSON inference: inputs {name: array} (any dtype name
        via (array, "FP32") pairs); returns (status, {name: array} or the
        error text)."""
        body = {"inputs": []}
        for name, value in inputs.items():
            array, dtype = value if isinstance(value, tuple) else (value, "FP32")
            body["inputs"].append({"name": name, "shape": list(array.shape), "datatype": dtype,
                                   "data": np.asarray(array).ravel().tolist()})
        if outputs:
            body["outputs"] = [{"name": o} for o in outputs]
        status, reply = self.request(f"/v2/models/{model}/infer", body)
        if status != 200:
            return status, reply["error"] if isinstance(reply, dict) else reply
        return status, {o["name"]: np.array(o["data"], dtype=np.float32).reshape(o["shape"])
                        for o in reply["outputs"]}

    def metric(self, name, model):
        """The value of Prometheus metric `name` for `model`'s version 1."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=30) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith(name + "{") and f'model="{model}"' in line:
                return float(line.rsplit(" ", 1)[1])
        return None
