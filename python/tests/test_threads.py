"""Runs from several Python threads: the GIL is released during execution and
each concurrent execution has its own working memory."""

import threading

import numpy as np
import pytest

import plexus


def run_threads(count, target):
    errors = []

    def guarded(i):
        try:
            target(i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("backend", [None, "cpu_ref"])
def test_threads_share_one_model(runtime, digits_path, digit_images, backend):
    model = runtime.load(digits_path, backend and [backend])
    assert model.concurrent

    def work(i):
        for k in range(200):
            digit = (i + k) % 10
            image, expected = digit_images[digit]
            p = model.run({"image": image})["probabilities"]
            assert abs(p - expected).max() < 1e-5, (i, k, digit)

    run_threads(8, work)


def test_dynamic_model_from_threads(runtime, open_batch_path):
    path, reference = open_batch_path
    model = runtime.load(path, dynamic=True, cache_capacity=3)

    def work(i):
        rng = np.random.default_rng(i)
        for k in range(40):
            x = rng.standard_normal((1 + (i + k) % 4, 4)).astype(np.float32)
            assert np.allclose(model.run({"x": x})["y"], reference(x), atol=1e-5)

    run_threads(6, work)


def test_executions_overlap(matmul_chain_path):
    """Executions of different threads run at the same time: in the trace, two
    executions on different threads overlap (impossible with the GIL held)."""
    path, reference = matmul_chain_path
    rt = plexus.Runtime(backend_options={"cpu_ref": {"threads": 1}}, ignore_environment=True)
    model = rt.load(path, ["cpu_ref"])
    assert model.concurrent
    x = np.random.default_rng(2).standard_normal((64, 256)).astype(np.float32)
    expected = reference(x)
    rt.enable_profiling(True)
    barrier = threading.Barrier(2)

    def work(i):
        barrier.wait()
        for _ in range(10):
            assert np.allclose(model.run({"x": x})["y"], expected, rtol=1e-4, atol=1e-4)

    overlapped = False
    for _ in range(10):  # one round almost always overlaps; a busy machine may need more
        rt.clear_trace()
        run_threads(2, work)
        spans = [(e["tid"], e["ts"], e["ts"] + e["dur"])
                 for e in rt.trace()["traceEvents"] if e.get("cat") == "execute"]
        assert len({tid for tid, _, _ in spans}) == 2
        overlapped = any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2]
                         for a in spans for b in spans)
        if overlapped:
            break
    assert overlapped, "no two executions of different threads overlapped"
