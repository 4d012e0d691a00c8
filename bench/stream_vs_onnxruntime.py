#!/usr/bin/env python3
"""A stateful streaming model, chunk after chunk, in Plexus and in ONNX
Runtime: the same signal, the same state carried from chunk to chunk, the
outputs compared.

usage: bench/stream_vs_onnxruntime.py MODEL --input NAME --chunk N
           --state IN=OUT:DIMS... --output NAME [--value NAME=INT]...
           [--configs cpu_ref,cpu_onednn+cpu_ref] [--backend-path DIR]...
           [--seconds S] [--threads T] [--tolerance X]

The signal is S seconds (default 4) of 16 kHz audio, silence then a tone
in noise, fixed seed. Plexus runs it with build/bench/plexus-bench-stream
(one dynamic model, every chunk an acquire, an execute and a release; it
reports the specialisations made and the heap allocations per chunk).
ONNX Runtime runs the same loop with session.run (CPUExecutionProvider,
intra_op_num_threads T, default 1; Plexus's backends get
--option ID.threads=T). Reported per configuration: chunks,
specialisations, allocations per chunk, median chunk latency of both, and
the max abs difference of the outputs. Exits 1 when a configuration fails
or differs by more than the tolerance (default 1e-4).

--value NAME=INT gives an int64 scalar input for every chunk (Plexus: a
value of the signature, frozen into the one specialisation).

Examples (scripts/fetch-real-models.py's Silero VAD: its 16 kHz model, and
the full model, which branches with `If` on the sample rate it is given):

    .venv-bench/bin/python bench/stream_vs_onnxruntime.py \\
        build/real-models/silero_vad_half.onnx --input input --chunk 512 \\
        --state state=stateN:2x1x128 --output output
    .venv-bench/bin/python bench/stream_vs_onnxruntime.py \\
        build/real-models/silero_vad.onnx --input input --chunk 512 \\
        --state state=stateN:2x1x128 --output output --value sr=16000
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--input", required=True)
    ap.add_argument("--chunk", type=int, required=True)
    ap.add_argument("--state", action="append", default=[], required=True,
                    help="IN=OUT:DIMS, e.g. state=stateN:2x1x128 (repeatable)")
    ap.add_argument("--output", required=True)
    ap.add_argument("--value", action="append", default=[],
                    help="NAME=INT, an int64 scalar input (repeatable)")
    ap.add_argument("--configs", default="cpu_ref,cpu_onednn+cpu_ref")
    ap.add_argument("--backend-path", action="append", default=[])
    ap.add_argument("--stream", default=os.path.join(REPO, "build", "bench", "plexus-bench-stream"))
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    a = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        sys.exit(f"error: {e} (bench/README.md: .venv-bench)")

    paths = a.backend_path or [os.path.join(REPO, "build", d)
                               for d in ("cpu_ref", "cpu_onednn", "gpu_opencl")]
    rng = np.random.default_rng(20261204)
    t = np.arange(int(16000 * a.seconds)) / 16000.0
    signal = (0.3 * np.sin(2 * np.pi * 440.0 * t) * (t > a.seconds / 4)
              + 0.02 * rng.standard_normal(t.size)).astype(np.float32)
    chunks = signal.size // a.chunk
    states = []
    for s in a.state:
        io, dims = s.split(":")
        i, o = io.split("=")
        states.append((i, o, [int(d) for d in dims.split("x")]))

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    values = {}
    for v in a.value:
        name, num = v.split("=")
        values[name] = np.array(int(num), dtype=np.int64)
    state = {i: np.zeros(d, np.float32) for i, _, d in states}
    ref, ort_ms = [], []
    for c in range(chunks):
        feed = {a.input: signal[None, c * a.chunk:(c + 1) * a.chunk]}
        feed.update(state)
        feed.update(values)
        t0 = time.perf_counter()
        res = dict(zip(out_names, sess.run(None, feed)))
        ort_ms.append((time.perf_counter() - t0) * 1e3)
        ref.append(res[a.output].reshape(-1))
        for i, o, _ in states:
            state[i] = res[o]
    ref = np.stack(ref)

    failed = False
    rows = []
    with tempfile.TemporaryDirectory(prefix="plexus-stream.") as tmp:
        audio = os.path.join(tmp, "signal.npy")
        np.save(audio, signal)
        for config in a.configs.split(","):
            ids = [i for i in config.split("+") if i]
            out = os.path.join(tmp, f"{config}.npy")
            cmd = [a.stream, a.model, "--input", f"{a.input}={audio}", "--chunk", str(a.chunk),
                   "--output", a.output, "--out", out, "--backends", ",".join(ids)]
            for s in a.state:
                cmd += ["--state", s]
            for name, v in values.items():
                vfile = os.path.join(tmp, f"value-{name}.npy")
                np.save(vfile, v)
                cmd += ["--value", f"{name}={vfile}"]
            for p in paths:
                if os.path.exists(p):
                    cmd += ["--backend-path", p]
            for i in ids:
                cmd += ["--option", f"{i}.threads={a.threads}"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                rows.append((config, "FAILED: " + (p.stderr.strip().splitlines() or ["?"])[-1]))
                failed = True
                continue
            got = np.load(out)
            diff = float(np.max(np.abs(got.astype(np.float64) - ref))) \
                if got.shape == ref.shape else float("inf")
            failed |= not diff <= a.tolerance
            rows.append((config, f"{p.stdout.strip()}; max abs diff {diff:.2g}"))
    print(f"{a.model}: {chunks} chunks of {a.chunk} samples; ONNX Runtime {ort.__version__} "
          f"median chunk {statistics.median(ort_ms):.4f} ms ({a.threads} thread(s))")
    for config, text in rows:
        print(f"  {config}: {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
