#!/usr/bin/env python3
"""Plexus against ONNX Runtime: the same models, the same inputs, alternating runs.

usage: bench/vs_onnxruntime.py [--plexus PATH] [--backend-path PATH]...
           [--models DIR] [--no-example] [--only NAME,...]
           [--threads 1,2] [--configs cpu_ref,cpu_onednn+cpu_ref]
           [--rounds R] [--runs-per-round K] [--warmup W] [--json OUT]

For each model (every DIR/NAME.onnx with its input DIR/NAME.input.npy, as
written by scripts/make-bench-models.py, plus the example model
onnx/models/digits/digits.onnx on inputs/digit-7.npy), each thread count T
and each Plexus configuration (backend ids joined by '+', passed to
`plexus run --backends` joined by ','), R rounds alternate, the order
swapping every round:

  Plexus        one `plexus run MODEL --json --iterations K --warmup W`
                process; its JSON gives the median latency of its K runs
                (latency_ms.median; load time is not included);
  ONNX Runtime  W untimed and K timed session.run calls, in this process,
                intra_op_num_threads T, inter_op_num_threads 1,
                ORT_ENABLE_ALL, CPUExecutionProvider.

Reported per row: the median over the rounds of each round's median, for
both, and their ratio (Plexus / ONNX Runtime; below 1 Plexus is faster).
`plexus run --json` gives no per-iteration latencies, only their
statistics, so Plexus's per-round figure is its own median and ORT's is
computed the same way from its K samples.

Threads: T is the backends' intra-operator thread count. Plexus gets
`--option ID.threads=T` for each backend of the configuration that declares
a `threads` option in `plexus info --json`; one that does not runs as it is
and the row says "threads option absent". (`plexus run --threads` is
something else, concurrent requests, and is not used.)

The outputs of Plexus (written by the first round with --output-dir) and
ONNX Runtime are compared once per model and configuration: max abs diff.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(REPO, ".venv-bench")
EXAMPLE_MODEL = os.path.join(REPO, "onnx", "models", "digits", "digits.onnx")
EXAMPLE_INPUT = os.path.join(REPO, "onnx", "models", "digits", "inputs", "digit-7.npy")

INSTALL_HINT = f"""\
bench/vs_onnxruntime.py needs onnxruntime, onnx and numpy. Install them in a
virtual environment at the repository root (the script uses it by itself):

    apt-get install -y python3-venv      # Debian, if 'python3 -m venv' fails
    python3 -m venv {os.path.relpath(VENV)}
    {os.path.relpath(VENV)}/bin/pip install onnxruntime onnx numpy
"""


def import_deps():
    """numpy, onnxruntime; re-runs the script with .venv-bench's Python if
    they are missing here and that venv exists."""
    try:
        import numpy
        import onnxruntime
        return numpy, onnxruntime
    except ImportError as e:
        venv_python = os.path.join(VENV, "bin", "python")
        if (os.path.exists(venv_python) and not os.environ.get("PLEXUS_BENCH_REEXEC")
                and os.path.realpath(sys.prefix) != os.path.realpath(VENV)):
            os.environ["PLEXUS_BENCH_REEXEC"] = "1"
            os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])
        sys.stderr.write(f"error: {e}\n\n{INSTALL_HINT}")
        sys.exit(2)


def csv(s):
    return [x.strip() for x in s.split(",") if x.strip()]


def add_plexus_args(ap):
    """The options that find the plexus CLI and its backends."""
    ap.add_argument("--plexus", default=os.path.join(REPO, "build", "tools", "plexus"),
                    help="the plexus CLI (default: build/tools/plexus)")
    ap.add_argument("--backend-path", action="append", default=[],
                    help="passed to plexus (repeatable); with any, plexus also gets "
                         "--no-env --no-default-dir unless --default-dir")
    ap.add_argument("--default-dir", action="store_true",
                    help="let plexus also search PLEXUS_BACKEND_PATH and the installed directory")


def add_timing_args(ap, rounds, runs, warmup, timeout):
    """Threads, configurations, the alternating rounds and --json, with these
    defaults (timeout None: no limit)."""
    ap.add_argument("--threads", type=csv, default=["1", "2"], help="thread counts (default 1,2)")
    ap.add_argument("--configs", type=csv, default=["cpu_ref", "cpu_onednn+cpu_ref"],
                    help="Plexus backend lists, ids joined by '+' "
                         "(default cpu_ref,cpu_onednn+cpu_ref)")
    ap.add_argument("--rounds", type=int, default=rounds,
                    help=f"alternating rounds R (default {rounds})")
    ap.add_argument("--runs-per-round", type=int, default=runs,
                    help=f"timed runs K per round and runtime (default {runs})")
    ap.add_argument("--warmup", type=int, default=warmup,
                    help=f"untimed runs W before each round's timed runs (default {warmup})")
    ap.add_argument("--timeout", type=float, default=timeout,
                    help="seconds allowed to one plexus process (default: " +
                         (f"{timeout:g})" if timeout else "none)"))
    ap.add_argument("--json", dest="json_out", help="write every measurement to this file")


def parse_timing_args(ap):
    """ap.parse_args() with the thread counts as integers and the counts
    checked (add_timing_args)."""
    a = ap.parse_args()
    try:
        a.threads = [int(t) for t in a.threads]
    except ValueError:
        ap.error("--threads: a comma list of integers")
    if any(t < 1 for t in a.threads) or a.rounds < 1 or a.runs_per_round < 1 or a.warmup < 0:
        ap.error("threads, rounds and runs per round must be 1 or more; warmup 0 or more")
    return a


# After a timed round of ONNX Runtime at more than one intra-op thread: its
# idle threads spin for a while before they block, and on a machine with no
# more cores than threads they would take a core from the Plexus round that
# follows (a 40 us layer read 300 us on 2 cores).
ORT_IDLE_S = 0.2


def time_ort_round(call, warmup, runs, threads):
    """Milliseconds of `runs` calls after `warmup` untimed ones; then, at
    more than one thread, waits ORT_IDLE_S for ONNX Runtime's threads to
    stop spinning."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1e3)
    if threads > 1:
        time.sleep(ORT_IDLE_S)
    return samples


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def parse_args():
    ap = argparse.ArgumentParser(
        description="Plexus against ONNX Runtime on the same models and inputs, alternating runs.",
        epilog="Timings are medians of alternating runs; on a shared machine they are noisy.")
    add_plexus_args(ap)
    ap.add_argument("--models", help="directory of NAME.onnx + NAME.input.npy "
                                     "(scripts/make-bench-models.py DIR)")
    ap.add_argument("--no-example", action="store_true",
                    help="leave out the example model onnx/models/digits/digits.onnx")
    ap.add_argument("--only", type=csv, help="model names to run (file names without .onnx)")
    add_timing_args(ap, rounds=5, runs=10, warmup=2, timeout=None)
    return parse_timing_args(ap)


class Plexus:
    def __init__(self, exe, backend_paths, default_dir, timeout):
        self.exe = exe
        self.timeout = timeout
        self.common = []
        for p in backend_paths:
            self.common += ["--backend-path", p]
        if backend_paths and not default_dir:
            self.common += ["--no-env", "--no-default-dir"]

    def info(self):
        p = subprocess.run([self.exe, "info", "--json"] + self.common,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"error: {self.exe} info failed ({p.returncode}):\n{p.stderr}")
        return json.loads(p.stdout)

    def run(self, model, inputs, backends, options, iterations, warmup, output_dir=None):
        cmd = [self.exe, "run", model, "--json", "--backends", ",".join(backends),
               "--iterations", str(iterations), "--warmup", str(warmup)] + self.common
        for name, path in inputs.items():
            cmd += ["--input", f"{name}={path}"]
        for opt in options:
            cmd += ["--option", opt]
        if output_dir:
            cmd += ["--output-dir", output_dir]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {self.timeout} s", cmd
        if p.returncode != 0:
            err = (p.stderr.strip() or p.stdout.strip()).splitlines()
            return None, f"exit {p.returncode}: " + " | ".join(err[-6:]), cmd
        try:
            return json.loads(p.stdout), None, cmd
        except json.JSONDecodeError as e:
            return None, f"unreadable JSON ({e})", cmd


def backend_configs(plexus, exe, config_names):
    """plexus info, printed in one line, and the configurations (backend ids
    joined by '+') whose backends are all available: (info, backends by id,
    whether each has a threads option, [(config, ids)], [skipped with the
    reason]). Exits when none is."""
    info = plexus.info()
    backends = {b["id"]: b for b in info.get("backends", [])}
    available = {i for i, b in backends.items() if b.get("available")}
    has_threads = {i: any(o.get("key") == "threads" for o in b.get("options", []))
                   for i, b in backends.items()}
    print(f"plexus {info.get('version')} ({exe}); backends found: " +
          (", ".join(f"{i}{'' if i in available else ' (unavailable)'}"
                     f"{' [threads option]' if has_threads.get(i) else ''}"
                     for i in backends) or "none"))
    configs, skipped = [], []
    for c in config_names:
        ids = [i for i in c.split("+") if i]
        missing = [i for i in ids if i not in available]
        if missing:
            why = []
            for i in missing:
                if i in backends:
                    why.append(f"{i} unavailable: {backends[i].get('reason')}")
                else:
                    why.append(f"{i} not found in the search path "
                               f"({', '.join(e['path'] for e in info.get('search_path', []))})")
            print(f"skip config {c}: " + "; ".join(why))
            skipped.append({"config": c, "reason": "; ".join(why)})
        else:
            configs.append((c, ids))
    if not configs:
        sys.exit("error: no configuration has all its backends available")
    return info, backends, has_threads, configs, skipped


def assignment_summary(doc):
    """One line from the JSON's "assignment": layers per backend, inserted
    layers, fallbacks."""
    a = doc.get("assignment", {})
    layers = a.get("layers", {})
    inserted = a.get("inserted", {})
    parts = []
    for bid, n in layers.items():
        s = f"{bid} {n} layers"
        if inserted.get(bid):
            s += f" ({inserted[bid]} inserted)"
        parts.append(s)
    fb = a.get("fallbacks", [])
    if fb:
        pairs = {}
        for f in fb:
            k = f"{f.get('from')}->{f.get('to')}"
            pairs[k] = pairs.get(k, 0) + 1
        parts.append("fallbacks " + ", ".join(f"{n} {k}" for k, n in pairs.items()))
    else:
        parts.append("no fallbacks")
    # Notes such as "folded batch_norm 'bn1' into conv 'conv1'": counted by
    # their text up to the first quoted name.
    kinds = {}
    for n in a.get("notes", []):
        k = n.split("'")[0].strip() or n
        kinds[k] = kinds.get(k, 0) + 1
    if kinds:
        parts.append("notes: " + ", ".join(f"{n} x {k}" for k, n in kinds.items()))
    return "; ".join(parts)


def plexus_round_median(doc):
    """Per-iteration latencies if the JSON ever has them, else its median."""
    for key in ("latencies_ms", "samples_ms"):
        v = doc.get(key) or doc.get("latency_ms", {}).get(key)
        if isinstance(v, list) and v:
            return statistics.median(v), "median of per-iteration latencies"
    return doc["latency_ms"]["median"], "latency_ms.median of each plexus run"


def output_file(dirname, name):
    return os.path.join(dirname, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")


def find_models(args, onnx_input_names):
    models = []
    if args.models:
        if not os.path.isdir(args.models):
            sys.exit(f"error: --models {args.models}: not a directory "
                     "(make it with scripts/make-bench-models.py DIR)")
        for f in sorted(os.listdir(args.models)):
            if not f.endswith(".onnx"):
                continue
            name = f[:-5]
            path = os.path.join(args.models, f)
            names = onnx_input_names(path)
            inputs = {}
            for n in names:
                cands = [os.path.join(args.models, f"{name}.{n}.npy")]
                if len(names) == 1:
                    cands.insert(0, os.path.join(args.models, f"{name}.input.npy"))
                found = next((c for c in cands if os.path.exists(c)), None)
                if not found:
                    print(f"skip {name}: no input file for '{n}' ({' or '.join(cands)})")
                    inputs = None
                    break
                inputs[n] = found
            if inputs is not None:
                models.append((name, path, inputs))
    if not args.no_example:
        names = onnx_input_names(EXAMPLE_MODEL)
        models.append(("digits", EXAMPLE_MODEL, {names[0]: EXAMPLE_INPUT}))
    if args.only:
        models = [m for m in models if m[0] in args.only]
    if not models:
        sys.exit("error: no models (give --models DIR, or drop --no-example / --only)")
    return models


def fmt_ms(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.4f}"


def main():
    args = parse_args()
    np, ort = import_deps()
    if not (os.path.isfile(args.plexus) and os.access(args.plexus, os.X_OK)):
        sys.exit(f"error: --plexus {args.plexus}: not an executable (build it: meson compile -C build)")

    def onnx_input_names(path):
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return [i.name for i in s.get_inputs()]

    plexus = Plexus(args.plexus, args.backend_path, args.default_dir, args.timeout)
    info, backends, has_threads, configs, skipped = backend_configs(plexus, args.plexus,
                                                                    args.configs)
    print(f"onnxruntime {ort.__version__}; numpy {np.__version__}; "
          f"{os.cpu_count()} CPUs; {platform.machine()}")

    models = find_models(args, onnx_input_names)
    print(f"models: {', '.join(m[0] for m in models)}; threads {args.threads}; "
          f"configs {', '.join(c for c, _ in configs)}; {args.rounds} rounds x "
          f"{args.runs_per_round} runs after {args.warmup} warm-up runs\n")

    rows = []
    tmp = tempfile.mkdtemp(prefix="plexus-vs-ort.")
    try:
        for name, path, inputs in models:
            feeds = {n: np.load(p) for n, p in inputs.items()}
            checked = {}  # config -> max abs diff, once per model and config
            for t in args.threads:
                so = ort.SessionOptions()
                so.intra_op_num_threads = t
                so.inter_op_num_threads = 1
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                out_names = [o.name for o in sess.get_outputs()]
                ort_ref = None
                for cname, ids in configs:
                    opts = [f"{i}.threads={t}" for i in ids if has_threads.get(i)]
                    absent = [i for i in ids if not has_threads.get(i)]
                    note = ("threads option absent" + ("" if len(absent) == len(ids)
                                                       else f" ({', '.join(absent)})")) \
                        if absent else ""
                    row = {"model": name, "model_path": path, "inputs": inputs, "threads": t,
                           "config": cname, "backends": ids, "plexus_options": opts,
                           "threads_option_absent": absent, "note": note,
                           "plexus": {"round_medians_ms": [], "runs": []},
                           "ort": {"round_medians_ms": [], "samples_ms": []},
                           "max_abs_diff": None, "error": None}
                    label = f"{name} T={t} {cname}"
                    for r in range(args.rounds):
                        order = ("plexus", "ort") if r % 2 == 0 else ("ort", "plexus")
                        for who in order:
                            if who == "plexus":
                                odir = None
                                if cname not in checked:
                                    odir = os.path.join(tmp, f"{name}.{cname}")
                                    shutil.rmtree(odir, ignore_errors=True)
                                doc, err, cmd = plexus.run(path, inputs, ids, opts,
                                                           args.runs_per_round, args.warmup, odir)
                                if err:
                                    row["error"] = err
                                    row["plexus_command"] = cmd
                                    break
                                med, how = plexus_round_median(doc)
                                row["plexus"]["round_medians_ms"].append(med)
                                row["plexus"]["median_source"] = how
                                row["plexus"]["runs"].append({
                                    "latency_ms": doc.get("latency_ms"),
                                    "load_ms": doc.get("load_ms")})
                                row["assignment"] = doc.get("assignment")
                                row["assignment_summary"] = assignment_summary(doc)
                                row["plexus_command"] = cmd
                                if odir:
                                    if ort_ref is None:
                                        ort_ref = sess.run(None, feeds)
                                    diff = 0.0
                                    for n, ref in zip(out_names, ort_ref):
                                        got = np.load(output_file(odir, n))
                                        if got.shape != ref.shape:
                                            diff = float("inf")
                                            break
                                        d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
                                        diff = max(diff, float(np.max(d)) if d.size else 0.0)
                                    checked[cname] = diff
                            else:
                                samples = time_ort_round(partial(sess.run, None, feeds),
                                                         args.warmup, args.runs_per_round, t)
                                row["ort"]["samples_ms"].append(samples)
                                row["ort"]["round_medians_ms"].append(statistics.median(samples))
                        if row["error"]:
                            break
                    row["max_abs_diff"] = checked.get(cname)
                    pm = row["plexus"]["round_medians_ms"]
                    om = row["ort"]["round_medians_ms"]
                    row["plexus"]["median_ms"] = statistics.median(pm) if pm and not row["error"] else None
                    row["ort"]["median_ms"] = statistics.median(om) if om else None
                    row["ratio"] = (row["plexus"]["median_ms"] / row["ort"]["median_ms"]
                                    if row["plexus"]["median_ms"] and row["ort"]["median_ms"] else None)
                    if row["error"]:
                        print(f"{label}: plexus failed: {row['error']}")
                    else:
                        print(f"{label}: plexus {fmt_ms(row['plexus']['median_ms'])} ms, "
                              f"ort {fmt_ms(row['ort']['median_ms'])} ms, "
                              f"ratio {row['ratio']:.2f}" + (f"  [{note}]" if note else ""),
                              flush=True)
                    rows.append(row)
                del sess
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print_table(rows, args)
    if args.json_out:
        doc = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "arch": platform.machine(),
                        "python": platform.python_version()},
            "plexus": {"exe": args.plexus, "version": info.get("version"),
                       "backends": {i: {"available": b.get("available"),
                                        "path": b.get("path"),
                                        "threads_option": has_threads.get(i)}
                                    for i, b in backends.items()}},
            "onnxruntime": {"version": ort.__version__, "provider": "CPUExecutionProvider",
                            "graph_optimization_level": "ORT_ENABLE_ALL",
                            "inter_op_num_threads": 1},
            "settings": {"threads": args.threads, "configs": args.configs,
                         "rounds": args.rounds, "runs_per_round": args.runs_per_round,
                         "warmup": args.warmup},
            "method": "per row: median over rounds of each round's median; Plexus's round "
                      "median is latency_ms.median of one `plexus run --json` process; "
                      "rounds alternate Plexus and ONNX Runtime, the order swapping each round",
            "skipped_configs": skipped,
            "rows": rows,
        }
        with open(args.json_out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"\nwrote {args.json_out}")
    return 1 if any(r["error"] for r in rows) else 0


def print_table(rows, args):
    how = next((r["plexus"].get("median_source") for r in rows if r["plexus"].get("median_source")),
               "latency_ms.median of each plexus run")
    print(f"\nMedian over {args.rounds} alternating rounds of each round's median "
          f"({args.runs_per_round} runs after {args.warmup} warm-up runs); Plexus per round: {how}.")
    print("ratio = Plexus / ONNX Runtime (below 1: Plexus faster); diff = max abs difference "
          "of the outputs.\n")
    head = ["model", "thr", "config", "plexus ms", "ort ms", "ratio", "diff", "note"]
    table = []
    for r in rows:
        table.append([r["model"], str(r["threads"]), r["config"],
                      "FAILED" if r["error"] else fmt_ms(r["plexus"]["median_ms"]),
                      fmt_ms(r["ort"]["median_ms"]),
                      f"{r['ratio']:.2f}" if r["ratio"] else "-",
                      f"{r['max_abs_diff']:.2g}" if r["max_abs_diff"] is not None else "-",
                      r["note"] or ""])
    w = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(head)]
    right = {1, 3, 4, 5, 6}
    line = lambda cells: "  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i])
                                   for i, c in enumerate(cells)).rstrip()
    print(line(head))
    print(line(["-" * x for x in w]))
    for t in table:
        print(line(t))
    print("\nPer configuration and thread count: geometric mean of the ratios, the worst, "
          "and how many rows are above 1.3 and 2.0:")
    groups = {}
    for r in rows:
        groups.setdefault((r["config"], r["threads"]), []).append(r)
    for (cname, t), rs in groups.items():
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        failed = sum(1 for r in rs if r["error"])
        if not ratios:
            print(f"  {cname} T={t}: no ratios ({failed} failed)")
            continue
        geo = geomean(ratios)
        worst = max(rs, key=lambda r: r["ratio"] or 0)
        print(f"  {cname} T={t}: geomean {geo:.2f} over {len(ratios)} models, worst "
              f"{worst['ratio']:.2f} ({worst['model']}), above 1.3: "
              f"{sum(1 for x in ratios if x > 1.3)}, above 2.0: "
              f"{sum(1 for x in ratios if x > 2.0)}" + (f", {failed} failed" if failed else ""))
    print_quantized(rows)
    print("\nAssignment (from plexus run --json):")
    seen = set()
    for r in rows:
        key = (r["model"], r["config"], r.get("assignment_summary"))
        if key in seen:
            continue
        seen.add(key)
        print(f"  {r['model']} {r['config']}: "
              f"{r.get('assignment_summary') or 'failed: ' + str(r['error'])}")


QUANTIZED_SUFFIXES = ("-qdq", "-qop", "-dyn")


def print_quantized(rows):
    """The quantized files of scripts/quantize-models.py (NAME-qdq, NAME-qop,
    NAME-dyn) beside their float model NAME, when both ran: per config and
    thread count, Plexus's and ONNX Runtime's float32 and int8 medians, each
    runtime's speed-up from int8 (float / int8), and Plexus's int8 against
    ONNX Runtime's int8 of the same file."""
    by_key = {(r["model"], r["config"], r["threads"]): r for r in rows}
    table = []
    for r in rows:
        base = next((r["model"][: -len(x)] for x in QUANTIZED_SUFFIXES
                     if r["model"].endswith(x)), None)
        f = by_key.get((base, r["config"], r["threads"])) if base else None
        if not f or r["error"] or f["error"]:
            continue
        pf, pq = f["plexus"]["median_ms"], r["plexus"]["median_ms"]
        of, oq = f["ort"]["median_ms"], r["ort"]["median_ms"]
        if not (pf and pq and of and oq):
            continue
        table.append([r["model"], str(r["threads"]), r["config"], fmt_ms(pf), fmt_ms(pq),
                      f"{pf / pq:.2f}", fmt_ms(of), fmt_ms(oq), f"{of / oq:.2f}", f"{pq / oq:.2f}"])
    if not table:
        return
    print("\nQuantized files beside their float model: speed-up = float32 ms / int8 ms of the "
          "same runtime; vs ORT = Plexus int8 ms / ONNX Runtime int8 ms (below 1: Plexus "
          "faster).\n")
    head = ["model", "thr", "config", "plexus f32", "plexus int8", "speed-up", "ort f32",
            "ort int8", "ort speed-up", "vs ORT"]
    w = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w[i]) if i not in (0, 2) else c.ljust(w[i])
                                   for i, c in enumerate(cells)).rstrip()
    print(line(head))
    print(line(["-" * x for x in w]))
    for t in table:
        print(line(t))


if __name__ == "__main__":
    sys.exit(main())
