#!/usr/bin/env python3
"""gpu_cuda against PyTorch on the same GPU, the same models, the same weights.

usage: bench/cuda_vs_torch.py --plexus build/tools/plexus --backend-path DIR...
           [--models resnet18,mobilenet_v2,encoder] [--batches 1,32]
           [--precisions fp32,tf32,fp16] [--compile-precisions LIST|none]
           [--iterations N] [--warmup W] [--work DIR] [--json OUT]
           [--device cuda|cpu] [--plexus-backends gpu_cuda,cpu_ref] [--option ID.K=V]...
           [--gemm-bench build/bench/plexus-bench-cuda-gemm] [--gemm-sizes 1024,4096,8192]

Each model is made here in PyTorch with a fixed seed: torchvision's
ResNet-18 and MobileNet-v2 (the architectures of the generated CNN
benchmark models of bench/README.md, built by torchvision rather than
written again), and a BERT-base-sized transformer encoder (12 layers of
torch.nn.TransformerEncoderLayer: width 768, 12 heads, feed-forward 3072,
GELU, post-norm, 128 tokens; its input is the embedded tokens). For each
batch size it is exported to ONNX (static shapes, torch.onnx.export), and
the same exported weights run on both sides:

  Plexus   `plexus run MODEL.onnx --input x=X.npy --backends <--plexus-backends>
           --option gpu_cuda.precision=P --iterations N --warmup W --json
           --output-dir ...`: latency_ms.median, the layers per backend and
           the fallbacks. Its inputs and outputs are host buffers, so every
           run includes their copies to and from the device.
  PyTorch  the nn.Module itself, eager and torch.compile (default mode, in
           the precisions --compile-precisions names, all by default: each
           compiles anew, tens of seconds per model and shape; where it
           fails, the reason is kept), timed over N runs after
           W warm-up runs, two ways: "host I/O" (the input copied from a host
           array and the output back, synchronised: like for like with
           `plexus run`), and "resident" (input and output stay on the
           device; for reference).

Precisions, the same on both sides: fp32 (no TF32 anywhere: PyTorch's
allow_tf32 flags off), tf32 (PyTorch's allow_tf32 on for matmul and cuDNN),
fp16 (PyTorch under torch.autocast(float16); Plexus's precision=fp16, whose
products and convolutions compute in float16 while tensors stay float32).

Reported per model, batch and precision: medians in ms, batch-32
throughput in samples/s, ratio = Plexus / PyTorch (host I/O; eager and the
best of eager and compiled), and the largest difference of Plexus's output
from PyTorch's fp32 eager output. Plexus's layers that fell back to another
backend are listed: a ratio means little when much of the model ran on
cpu_ref.

With --gemm-bench, plexus-bench-cuda-gemm's TFLOP/s (bench/cuda_gemm.c:
the matrix product through the runtime, device memory bound zero copy) in
each precision beside torch.matmul's on the same sizes.

With --device cpu --plexus-backends cpu_ref the whole procedure runs on a
machine without a GPU (a rehearsal of the export, the import, the outputs'
agreement and the report; its timings say nothing about gpu_cuda).

Needs torch, torchvision, onnx and numpy (the GPU machine's python3 has
them; bench/device-check.sh runs this script there).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plexus", required=True, help="the plexus CLI (build/tools/plexus)")
    ap.add_argument("--backend-path", action="append", default=[],
                    help="a directory of backend plug-ins (repeatable)")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,encoder")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp32,tf32,fp16")
    ap.add_argument("--compile-precisions", default=None,
                    help="precisions to run torch.compile in (default: all; none: skip it)")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--work", help="directory for the exported models (default: a temporary one)")
    ap.add_argument("--json", dest="json_out", help="write every figure to this file")
    ap.add_argument("--device", default="cuda", help="PyTorch's device (cuda, or cpu to rehearse)")
    ap.add_argument("--plexus-backends", default="gpu_cuda,cpu_ref")
    ap.add_argument("--option", action="append", default=[],
                    help="a further plexus --option ID.KEY=VALUE (repeatable)")
    ap.add_argument("--gemm-bench", help="plexus-bench-cuda-gemm: also compare the matrix "
                    "product's TFLOP/s with torch.matmul (needs a GPU)")
    ap.add_argument("--gemm-sizes", default="1024,4096,8192")
    return ap.parse_args()


# ---- the models ---------------------------------------------------------------

SEQ = 128
WIDTH = 768


def make_model(torch, name):
    torch.manual_seed(20261207)
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(weights=None), (3, 224, 224)
    if name == "mobilenet_v2":
        import torchvision
        return torchvision.models.mobilenet_v2(weights=None), (3, 224, 224)
    if name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(WIDTH, 12, 3072, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        # enable_nested_tensor off: the same dense computation on both sides.
        return (torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False),
                (SEQ, WIDTH))
    raise SystemExit(f"unknown model '{name}' (resnet18, mobilenet_v2, encoder)")


def export(torch, model, example, path):
    """Static-shape ONNX of the model in eval mode; the exporter's own choice
    of opset. The fused fast path of TransformerEncoderLayer is turned off
    so that the exported graph is the layer's plain operators."""
    if hasattr(torch.backends, "mha"):
        torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad():
        torch.onnx.export(model, (example,), path, input_names=["x"], output_names=["y"],
                          dynamo=True, external_data=False)


# ---- PyTorch's side ---------------------------------------------------------------

def set_precision(torch, precision):
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def torch_times(torch, fn, x_host, device, iterations, warmup, precision):
    """Median ms of fn over `iterations` runs, host I/O and resident."""
    import contextlib
    autocast = (torch.autocast(device_type=device, dtype=torch.float16)
                if precision == "fp16" else contextlib.nullcontext())
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    x_dev = x_host.to(device)
    out = {}
    with torch.no_grad(), autocast:
        for _ in range(warmup):
            fn(x_dev)
        sync()
        samples = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            y = fn(x_host.to(device)).float().cpu()
            samples.append((time.perf_counter() - t0) * 1e3)
        out["host_io_ms"] = statistics.median(samples)
        samples = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            fn(x_dev)
            sync()
            samples.append((time.perf_counter() - t0) * 1e3)
        out["resident_ms"] = statistics.median(samples)
    return out, y


# ---- Plexus's side ----------------------------------------------------------------

def plexus_run(args, onnx_path, x_path, precision, out_dir):
    cmd = [args.plexus, "run", onnx_path, "--input", f"x={x_path}", "--json",
           "--backends", args.plexus_backends, "--iterations", str(args.iterations),
           "--warmup", str(args.warmup), "--output-dir", out_dir, "--no-env"]
    for p in args.backend_path:
        cmd += ["--backend-path", p]
    if "gpu_cuda" in args.plexus_backends.split(","):
        cmd += ["--option", f"gpu_cuda.precision={precision}"]
    for o in args.option:
        cmd += ["--option", o]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip() or p.stdout.strip())[-2000:]
    return json.loads(p.stdout), None


def gemm_compare(args, torch):
    """plexus-bench-cuda-gemm's TFLOP/s beside torch.matmul's on the same
    square sizes: like for like (float32 tensors; tf32 through allow_tf32;
    fp16 and bf16 under autocast, which converts the operands each run as
    Plexus's precision option does) and, for fp16 and bf16, on half
    tensors (no conversion: the practical peak of the device)."""
    precisions = "fp32,tf32,fp16,bf16"
    p = subprocess.run([args.gemm_bench, "--json", "--sizes", args.gemm_sizes,
                        "--precisions", precisions] +
                       [a for d in args.backend_path for a in ("--backend-path", d)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip()[-2000:]}
    plexus = json.loads(p.stdout)["results"]
    halves = {"fp16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    for r in plexus:
        n, precision = r["n"], r["precision"]
        set_precision(torch, precision)
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")

        def timed(fn):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            samples = []
            for _ in range(20):
                start.record()
                fn()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end))
            ms = statistics.median(samples)
            return ms, 2.0 * n ** 3 / (ms * 1e-3) / 1e12

        if precision in halves:
            with torch.autocast(device_type="cuda", dtype=halves[precision]):
                ms, tflops = timed(lambda: a @ b)
            ah, bh = a.to(halves[precision]), b.to(halves[precision])
            half_ms, half_tflops = timed(lambda: ah @ bh)
        else:
            ms, tflops = timed(lambda: a @ b)
            half_ms = half_tflops = None
        rows.append({"n": n, "precision": precision, "plexus_ms": r["ms"],
                     "plexus_tflops": r["tflops"], "plexus_max_rel_err": r["max_rel_err"],
                     "torch_ms": ms, "torch_tflops": tflops,
                     "torch_half_tensors_tflops": half_tflops})
    set_precision(torch, "fp32")
    print("\n| precision | n | Plexus TFLOP/s | torch.matmul (same precision) | ratio |"
          " torch on half tensors | Plexus max rel err |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        half = f"{r['torch_half_tensors_tflops']:.1f}" if r["torch_half_tensors_tflops"] else "-"
        print(f"| {r['precision']} | {r['n']} | {r['plexus_tflops']:.1f} | "
              f"{r['torch_tflops']:.1f} | {r['plexus_tflops'] / r['torch_tflops']:.2f} | "
              f"{half} | {r['plexus_max_rel_err']:.1e} |")
    return {"rows": rows}


def main():
    args = parse_args()
    import numpy as np
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device (--device cpu rehearses without one)")
    compile_precisions = (args.precisions if args.compile_precisions is None
                          else args.compile_precisions).split(",")
    work = args.work or tempfile.mkdtemp(prefix="cuda-vs-torch-")
    os.makedirs(work, exist_ok=True)
    rows, notes = [], []
    env = {"torch": torch.__version__,
           "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
           "iterations": args.iterations, "warmup": args.warmup}
    print(f"# {env['device']}, torch {env['torch']}, {args.iterations} runs after "
          f"{args.warmup} warm-up runs, medians in ms", flush=True)
    for name in args.models.split(","):
        model, shape = make_model(torch, name)
        model.eval()
        compiled = None
        for batch in (int(b) for b in args.batches.split(",")):
            rng = np.random.default_rng(batch)
            x = rng.standard_normal((batch,) + shape).astype(np.float32)
            base = os.path.join(work, f"{name}-b{batch}")
            x_path = base + ".x.npy"
            np.save(x_path, x)
            onnx_path = base + ".onnx"
            try:
                export(torch, model, torch.from_numpy(x), onnx_path)
            except Exception as e:  # the exporter's own failure: say it and go on
                notes.append(f"{name} b{batch}: torch.onnx.export failed: {e}")
                print(notes[-1], flush=True)
                continue
            model_dev = model.to(args.device)
            x_host = torch.from_numpy(x)
            set_precision(torch, "fp32")
            with torch.no_grad():
                reference = model_dev(x_host.to(args.device)).float().cpu().numpy()
            for precision in args.precisions.split(","):
                set_precision(torch, precision)
                row = {"model": name, "batch": batch, "precision": precision}
                eager, _ = torch_times(torch, model_dev, x_host, args.device,
                                       args.iterations, args.warmup, precision)
                row["torch_eager"] = eager
                if precision in compile_precisions:
                    try:
                        if compiled is None:
                            compiled = torch.compile(model_dev)
                        t, _ = torch_times(torch, compiled, x_host, args.device,
                                           args.iterations, args.warmup, precision)
                        row["torch_compile"] = t
                    except Exception as e:
                        row["torch_compile_error"] = str(e).splitlines()[0][:300]
                out_dir = base + f".{precision}.out"
                doc, err = plexus_run(args, onnx_path, x_path, precision, out_dir)
                if doc is None:
                    row["plexus_error"] = err
                else:
                    row["plexus_ms"] = doc["latency_ms"]["median"]
                    a = doc["assignment"]
                    row["plexus_layers"] = a["layers"]
                    row["plexus_fallbacks"] = [
                        f"{f.get('layer')}: {f.get('reason', f.get('reasons'))}"
                        for f in a.get("fallbacks", [])][:20]
                    got = np.load(os.path.join(out_dir, "y.npy"))
                    row["max_abs_diff_vs_torch_fp32"] = float(np.max(np.abs(got - reference)))
                    row["max_abs_reference"] = float(np.max(np.abs(reference)))
                rows.append(row)
                print_row(row, flush=True)
        del model
    report = {"environment": env, "rows": rows, "notes": notes}
    if args.gemm_bench:
        report["gemm"] = gemm_compare(args, torch)
        if "error" in report["gemm"]:
            print(f"gemm: {report['gemm']['error']}")
    print_summary(rows)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=1)
    ok = rows and all("plexus_ms" in r for r in rows)
    return 0 if ok and "error" not in report.get("gemm", {}) else 1


def fmt(v):
    return f"{v:.3f}" if isinstance(v, float) else "-"


def print_row(r, flush=False):
    e = r["torch_eager"]["host_io_ms"]
    c = r.get("torch_compile", {}).get("host_io_ms")
    p = r.get("plexus_ms")
    line = (f"{r['model']:>12} b{r['batch']:<3} {r['precision']:>4}  plexus {fmt(p)}  "
            f"eager {fmt(e)} (resident {fmt(r['torch_eager']['resident_ms'])})  "
            f"compile {fmt(c) if c else r.get('torch_compile_error', '-')[:60]}")
    if p is not None:
        line += f"  ratio/eager {p / e:.2f}"
        line += (f"  layers {r['plexus_layers']}  diff {r['max_abs_diff_vs_torch_fp32']:.2e}"
                 f" (outputs up to {r['max_abs_reference']:.2e})")
    else:
        line += f"  plexus failed: {r.get('plexus_error', '')[:300]}"
    print(line, flush=flush)


def print_summary(rows):
    print("\n| model | batch | precision | Plexus ms | eager ms | compile ms | Plexus/eager |"
          " Plexus/best | samples/s (Plexus, best PyTorch) | layers | diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = r["torch_eager"]["host_io_ms"]
        c = r.get("torch_compile", {}).get("host_io_ms")
        best = min(e, c) if c else e
        p = r.get("plexus_ms")
        thr = (f"{r['batch'] * 1e3 / p:.0f}, {r['batch'] * 1e3 / best:.0f}" if p else "-")
        print(f"| {r['model']} | {r['batch']} | {r['precision']} | {fmt(p)} | {fmt(e)} | "
              f"{fmt(c) if c else '-'} | {fmt(p / e) if p else '-'} | "
              f"{fmt(p / best) if p else '-'} | {thr} | "
              f"{r.get('plexus_layers', '-')} | "
              f"{r['max_abs_diff_vs_torch_fp32']:.1e} |" if p else
              f"| {r['model']} | {r['batch']} | {r['precision']} | failed | {fmt(e)} | "
              f"{fmt(c) if c else '-'} | - | - | - | - | - |")


if __name__ == "__main__":
    sys.exit(main())
