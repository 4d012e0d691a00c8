#!/usr/bin/env python3
"""Quantizes float models with ONNX Runtime's own tool and checks Plexus's
int8 results against ONNX Runtime's on the same files.

usage: scripts/quantize-models.py SRC OUT [--only NAME,...] [--formats qdq,qop,dyn]
           [--check] [--plexus PATH] [--backend-path PATH]... [--backends ID,...]

SRC holds float models as scripts/fetch-real-models.py (published models)
and scripts/make-bench-models.py write them: NAME.onnx with its inputs
NAME.input.npy (one input) or NAME.INPUT.npy; the example model
onnx/models/digits/digits.onnx is added as "digits" with its ten images.
For each model and format, OUT gets NAME-FORMAT.onnx and a copy of the
inputs under that name (the layout bench/vs_onnxruntime.py reads, so that
it times the int8 files beside the float ones), made by
onnxruntime.quantization from the model as its quant_pre_process leaves it
(NAME.pre.onnx: batch norms folded into convolutions, as ONNX Runtime's
documentation asks before quantizing):

  qdq  quantize_static, QuantFormat.QDQ (QuantizeLinear/DequantizeLinear
       around each quantized operator), int8 activations and weights,
       per-channel weights;
  qop  quantize_static, QuantFormat.QOperator (QLinearConv, QLinearMatMul
       and com.microsoft QLinear*/QGemm), uint8 activations, int8 weights;
  dyn  quantize_dynamic (DynamicQuantizeLinear, MatMulInteger,
       ConvInteger), int8 weights.

Static calibration runs the model's inputs and 15 perturbed copies of them
(deterministic noise of 5% of their range), or, for digits, its ten images.

--check runs each quantized file with `plexus run` and with ONNX Runtime
(CPUExecutionProvider, one thread) on the same inputs, twice: with
ORT_DISABLE_ALL (the file as written: a QDQ file then runs its float
layers between quantize and dequantize, a QOperator file its int8
kernels) and with ORT_ENABLE_ALL (what a user gets: QDQ groups fused into
ONNX Runtime's int8 kernels), and reports per output:

  int8/uint8 outputs  the largest difference in quantization steps; the
                      documented tolerance is 1 step (float rounding of the
                      requantization scale may move a value across a tie);
  float outputs       the largest absolute difference, beside the output's
                      largest magnitude (an int8 model's float output is a
                      dequantized int8 tensor put through float layers, so a
                      difference is whole quantization steps of that tensor
                      carried through them);

and, for digits, top-1 agreement with the float model over its ten images.
--write-expected writes the test data of onnx/models/digits/quantized.
Needs onnxruntime, onnx, numpy and ml_dtypes (the .venv-bench of
bench/README.md).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(REPO, "onnx", "models", "digits")


def model_inputs(src, name):
    """{input name: .npy path} of SRC/NAME.onnx."""
    one = os.path.join(src, name + ".input.npy")
    if os.path.exists(one):
        import onnx
        m = onnx.load(os.path.join(src, name + ".onnx"), load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        names = [i.name for i in m.graph.input if i.name not in inits]
        return {names[0]: one}
    out = {}
    for path in sorted(glob.glob(os.path.join(src, glob.escape(name) + ".*.npy"))):
        out[os.path.basename(path)[len(name) + 1:-4]] = path
    return out


def calibration(inputs, count=16):
    import numpy as np
    base = {k: np.load(v) for k, v in inputs.items()}
    rng = np.random.default_rng(7)
    feeds = [base]
    for _ in range(count - 1):
        f = {}
        for k, v in base.items():
            if v.dtype.kind == "f":
                span = float(v.max() - v.min()) or 1.0
                f[k] = (v + rng.normal(0, 0.05 * span, v.shape)).astype(v.dtype)
            else:
                f[k] = v
        feeds.append(f)
    return feeds


def preprocess(model, out):
    """ONNX Runtime's recommended step before quantizing (quant_pre_process:
    shape inference and its graph optimisations, which fold batch norms into
    the convolutions before them). Returns the file to quantize: `out`, or
    the model itself when the step fails (reported)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process
    try:
        quant_pre_process(model, out, skip_symbolic_shape=True)
    except Exception as e:  # the tool's own limits: quantize the file as it is
        print(f"{os.path.basename(model)}: quant_pre_process failed, quantizing the file as is: "
              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return model
    return at_least_opset_13(out)


def at_least_opset_13(path):
    """Per-channel QDQ needs DequantizeLinear's `axis`, which came with
    opset 13; onnxruntime.quantization writes it into older models all the
    same, and ONNX Runtime then refuses the file. A model of an older
    opset is converted to 13 (onnx's version converter) before quantizing."""
    import onnx
    from onnx import version_converter
    m = onnx.load(path)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= 13:
        return path
    onnx.save(version_converter.convert_version(m, 13), path)
    print(f"{os.path.basename(path)}: opset {opset} converted to 13 for per-channel quantization")
    return path


def quantize(model, out, fmt, feeds):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    if fmt == "dyn":
        quantize_dynamic(model, out, weight_type=QuantType.QInt8)
    elif fmt == "qdq":
        quantize_static(model, out, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        per_channel=True)
    else:
        quantize_static(model, out, Reader(), quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def run_ort(path, feeds, optimize=False):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feeds)))


def run_plexus(args, path, inputs):
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.plexus, "run", path, "--output-dir", tmp, "--iterations", "1", "--warmup", "0",
               "--no-default-dir"]
        for p in args.backend_path:
            cmd += ["--backend-path", p]
        if args.backends:
            cmd += ["--backends", args.backends]
        for k, v in inputs.items():
            cmd += ["--input", f"{k}={v}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return None, (r.stderr or r.stdout).strip().splitlines()[-1:]
        notes = [ln.strip() for ln in r.stdout.splitlines() if "run as one int8 layer" in ln]
        outs = {}
        for f in glob.glob(os.path.join(tmp, "*.npy")):
            outs[os.path.basename(f)[:-4]] = np.load(f)
        return outs, notes


def compare(ours, theirs):
    """[(output, what, value)] for each output."""
    import numpy as np
    rows = []
    for name, t in theirs.items():
        o = ours.get(name.replace("/", "_"))
        if o is None:
            rows.append((name, "missing", None))
            continue
        if t.dtype in (np.int8, np.uint8):
            steps = int(np.max(np.abs(o.astype(np.int32) - t.astype(np.int32)))) if t.size else 0
            rows.append((name, "steps", steps))
        else:
            m = float(np.max(np.abs(t))) if t.size else 0.0
            d = float(np.max(np.abs(o.astype(np.float64) - t))) if t.size else 0.0
            rows.append((name, "abs", (d, m)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--only", help="model names, comma-separated")
    ap.add_argument("--formats", default="qdq,qop,dyn")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--plexus", default=os.path.join(REPO, "build", "tools", "plexus"))
    ap.add_argument("--backend-path", action="append", default=[])
    ap.add_argument("--backends", help="plexus run --backends")
    ap.add_argument("--write-expected", action="store_true",
                    help="for digits: also write ONNX Runtime's outputs (ORT_DISABLE_ALL) on "
                         "each image as OUT/digits-FORMAT.expected/digit-N.npy")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime
        onnxruntime.set_default_logger_severity(3)  # the quantizer's warnings drown the report
    except ImportError as e:
        sys.exit(f"quantize-models: {e}; see bench/README.md for the .venv-bench")
    os.makedirs(args.out, exist_ok=True)
    models = {}
    for path in sorted(glob.glob(os.path.join(args.src, "*.onnx"))):
        name = os.path.basename(path)[:-5]
        ins = model_inputs(args.src, name)
        if ins:
            models[name] = (path, ins)
    digit_images = sorted(glob.glob(os.path.join(DIGITS, "inputs", "digit-*.npy")))
    models["digits"] = (os.path.join(DIGITS, "digits.onnx"), {"image": digit_images[7]})
    only = set(args.only.split(",")) if args.only else None
    failures = 0
    for name, (path, ins) in models.items():
        if only and name not in only:
            continue
        if name == "digits":
            feeds = [{"image": np.load(p)} for p in digit_images]
        else:
            feeds = calibration(ins)
        source = preprocess(path, os.path.join(args.out, name + ".pre.onnx"))
        for fmt in args.formats.split(","):
            qname = f"{name}-{fmt}"
            qpath = os.path.join(args.out, qname + ".onnx")
            try:
                quantize(source, qpath, fmt, feeds)
            except Exception as e:  # the quantizer's own limits, reported and skipped
                print(f"{qname}: onnxruntime.quantization failed: {str(e).splitlines()[0]}")
                continue
            qins = {}
            for k, v in ins.items():
                dst = os.path.join(args.out, f"{qname}.{'input' if len(ins) == 1 else k}.npy")
                shutil.copyfile(v, dst)
                qins[k] = dst
            if name == "digits" and args.write_expected:
                exp = os.path.join(args.out, qname + ".expected")
                os.makedirs(exp, exist_ok=True)
                for p in digit_images:
                    out = run_ort(qpath, {"image": np.load(p)})
                    np.save(os.path.join(exp, os.path.basename(p)), list(out.values())[0])
            if not args.check:
                print(f"{qname}: written")
                continue
            feed = {k: np.load(v) for k, v in qins.items()}
            ours, notes = run_plexus(args, qpath, qins)
            if ours is None:
                print(f"{qname}: plexus failed: {' '.join(notes)}")
                failures += 1
                continue
            for optimize in (False, True):
                rows = compare(ours, run_ort(qpath, feed, optimize))
                desc = ", ".join(f"{o}: {v} step{'s' if v != 1 else ''}" if w == "steps"
                                 else f"{o}: max abs diff {v[0]:.2e} (max |value| {v[1]:.2e})"
                                 if w == "abs" else f"{o}: missing"
                                 for o, w, v in rows)
                print(f"{qname}: {len(notes)} int8 layers; vs ONNX Runtime "
                      f"({'ORT_ENABLE_ALL' if optimize else 'ORT_DISABLE_ALL'}) {desc}")
            if name == "digits":
                agree = 0
                for p in digit_images:
                    f = run_ort(path, {"image": np.load(p)})
                    q, _ = run_plexus(args, qpath, {"image": p})
                    agree += int(np.argmax(list(f.values())[0]) ==
                                 np.argmax(list(q.values())[0]))
                print(f"{qname}: top-1 agreement with the float model {agree}/{len(digit_images)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
