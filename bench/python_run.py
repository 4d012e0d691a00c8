#!/usr/bin/env python3
"""Latency of Model.run from Python (the plexus package, docs/python.md), side
by side with ONNX Runtime's InferenceSession.run on the same model and input
when onnxruntime is installed, and the throughput of several threads running
one model. Run by hand with the Python of a venv that has the package:

    .venv-python/bin/pip install onnxruntime   # optional, for the comparison
    .venv-python/bin/python bench/python_run.py                       # digits
    .venv-python/bin/python bench/python_run.py MODEL.onnx NAME=INPUT.npy --backends cpu_ref

Prints the median and p90 latency per run in microseconds, after warm-up runs.
"""

import argparse
import pathlib
import statistics
import threading
import time

import numpy as np

import plexus

DIGITS = pathlib.Path(__file__).resolve().parents[1] / "onnx" / "models" / "digits"


def latencies(fn, iterations, warmup):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(iterations):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def report(label, us):
    us = sorted(us)
    print(f"{label:<34} median {statistics.median(us):9.1f} us   "
          f"p90 {us[int(len(us) * 0.9)]:9.1f} us")


def threaded_throughput(fn, threads, seconds):
    stop = time.perf_counter() + seconds
    counts = [0] * threads

    def work(i):
        while time.perf_counter() < stop:
            fn()
            counts[i] += 1

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=str(DIGITS / "digits.onnx"))
    ap.add_argument("inputs", nargs="*", metavar="NAME=FILE.npy",
                    default=[f"image={DIGITS / 'inputs' / 'digit-7.npy'}"])
    ap.add_argument("--backends", default=None, help="comma-separated, in order of preference")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--threads", default="1,2", help="thread counts for the throughput")
    args = ap.parse_args()

    feeds = {}
    for spec in args.inputs:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)
    backends = args.backends.split(",") if args.backends else None
    # One intra-op thread on both sides (every backend's `threads` option,
    # ONNX Runtime's intra_op_num_threads); open dims take the inputs' sizes.
    runtime = plexus.Runtime(intra_op_threads=1)
    model = runtime.load(args.model, backends,
                         shapes={name: array.shape for name, array in feeds.items()})
    print(f"model {args.model}; {model.assignment['summary'].splitlines()[0]}; "
          f"concurrent {model.concurrent}")
    report("plexus Model.run", latencies(lambda: model.run(feeds), args.iterations, args.warmup))
    outputs = {o.name: np.empty(o.shape, o.dtype) for o in model.outputs}
    report("plexus Model.run, outputs given",
           latencies(lambda: model.run(feeds, outputs), args.iterations, args.warmup))
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
        print("onnxruntime is not installed: no comparison")
    if ort:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
        report(f"onnxruntime {ort.__version__} run (1 thread)",
               latencies(lambda: session.run(None, feeds), args.iterations, args.warmup))
    for n in (int(t) for t in args.threads.split(",")):
        rate = threaded_throughput(lambda: model.run(feeds), n, 2.0)
        print(f"plexus {n} thread(s): {rate:10.0f} runs/s")


if __name__ == "__main__":
    main()
