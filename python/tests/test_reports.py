"""The assignment, the memory report, the profiler's trace and the exceptions."""

import json

import numpy as np
import pytest

import plexus


def test_assignment(runtime, digits_path):
    model = runtime.load(digits_path, ["cpu_ref"])
    a = model.assignment
    names = [layer["layer"] for layer in a["layers"]]
    assert "image" in names and "softmax" in names
    # cpu_ref's fusion runs each conv with its relu as one layer.
    conv = a["layers"][names.index("conv1+relu1")]
    assert conv == {"layer": "conv1+relu1", "op": "precompiled", "backend": "cpu_ref",
                    "inserted": False, "refusals": [], "fused_from": ["conv1", "relu1"]}
    assert a["summary"].startswith(f"{len(names)} layers on cpu_ref")
    assert isinstance(a["notes"], list)


def test_memory_report(runtime, digits_path):
    model = runtime.load(digits_path, ["cpu_ref"])
    (report,) = model.memory_report()
    assert report["backend"] == "cpu_ref" and report["strategy"] == "greedy"
    assert report["bytes"] >= report["lower_bound"] > 0
    assert report["buffer_count"] >= 1 and report["tensor_count"] >= 1


def test_profiler_trace(digits_path, digit_images, tmp_path):
    rt = plexus.Runtime(ignore_environment=True)
    rt.enable_profiling(True)
    model = rt.load(digits_path, ["cpu_ref"])
    for image, _ in digit_images[:3]:
        model.run({"image": image})
    trace = rt.trace()
    assert trace["otherData"]["dropped_events"] == 0
    events = trace["traceEvents"]
    assert rt.trace_event_count() == sum(1 for e in events if e["ph"] == "X")
    loads = [e for e in events if e.get("cat") == "load"]
    assert "load" in [e["name"] for e in loads]
    fc = [e for e in events if e.get("cat") == "execute" and e["name"] == "fc"]
    assert len(fc) == 3
    assert fc[0]["args"]["backend"] == "cpu_ref" and fc[0]["args"]["op"] == "gemm"
    assert all(e["dur"] >= 0 for e in fc)
    path = tmp_path / "trace.json"
    rt.write_trace(path)
    assert json.loads(path.read_text())["traceEvents"] == events
    rt.enable_profiling(False)
    model.run({"image": digit_images[0][0]})
    assert rt.trace_event_count() == len([e for e in events if e["ph"] == "X"])
    rt.clear_trace()
    assert rt.trace_event_count() == 0
    with pytest.raises(plexus.IOFailedError, match="no-such-dir"):
        rt.write_trace(tmp_path / "no-such-dir" / "trace.json")


def test_error_classes():
    assert plexus.errors.BY_CODE[1] is plexus.InvalidArgumentError
    assert len(plexus.errors.BY_CODE) == 10
    for code, cls in plexus.errors.BY_CODE.items():
        assert issubclass(cls, plexus.Error) and cls.code == code
        e = cls("message")
        assert e.message == "message" and str(e) == "message" and e.code == code
    assert issubclass(plexus.InvalidArgumentError, ValueError)
    assert issubclass(plexus.OutOfMemoryError, MemoryError)
    e = plexus.Error("other", 7)
    assert e.code == 7 and e.code_name == "INCOMPATIBLE"


def test_docstrings():
    public = [plexus.Runtime, plexus.Model, plexus.load, plexus.info, plexus.default_runtime,
              plexus.TensorInfo, plexus.Error]
    public += [getattr(plexus.Runtime, n) for n in vars(plexus.Runtime) if not n.startswith("_")]
    public += [getattr(plexus.Model, n) for n in vars(plexus.Model) if not n.startswith("_")]
    for obj in public:
        assert (obj.__doc__ or "").strip(), obj


def test_stubs_match_the_extension():
    """python/plexus/_plexus.pyi names what the extension module has."""
    import ast
    import pathlib

    stub = ast.parse((pathlib.Path(plexus._plexus.__file__).parent / "_plexus.pyi").read_text())
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}
    assert set(classes) == {"Runtime", "Model"}
    for name, node in classes.items():
        real = getattr(plexus._plexus, name)
        members = [m.name for m in node.body if isinstance(m, ast.FunctionDef)]
        members += [m.target.id for m in node.body if isinstance(m, ast.AnnAssign)]
        for member in members:
            assert hasattr(real, member), f"{name}.{member}"
        public = {m for m in dir(real) if not m.startswith("_")}
        assert public <= set(members), f"{name}: {public - set(members)} not in the stub"
