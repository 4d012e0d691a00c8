"""plexus.info() and Runtime: search paths, backends, rejections, the environment."""

import os

import pytest

import plexus


def test_info_lists_the_package_backends():
    info = plexus.info(ignore_environment=True)
    assert info["version"] == plexus.__version__
    assert info["abi"]["major"] == 1 and info["abi"]["minor"] >= 4
    assert "onnx" in info["model_formats"]
    assert info["search_path"] == [
        {"path": plexus.BACKEND_DIR, "source": "application", "problem": None}]
    ids = [b["id"] for b in info["backends"]]
    assert "cpu_ref" in ids
    for b in info["backends"]:
        assert os.path.dirname(b["path"]) == os.path.realpath(plexus.BACKEND_DIR)
    ref = next(b for b in info["backends"] if b["id"] == "cpu_ref")
    assert ref["available"] and ref["runs_layers"] and ref["reason"] is None
    assert ref["capabilities"]["async_execution"] is True
    assert "malloc" in ref["memory_sources"]["import"]
    assert any(o["key"] == "threads" for o in ref["options"])
    assert info["rejected"] == [] and info["skipped"] == []


def test_the_installed_default_directory_is_never_searched():
    for ignore in (True, False):
        sources = [e["source"] for e in plexus.info(ignore_environment=ignore)["search_path"]]
        assert "default" not in sources


def test_environment_search_path_is_honoured(monkeypatch, tmp_path):
    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("PLEXUS_BACKEND_PATH", str(missing))
    entries = plexus.Runtime().info()["search_path"]
    assert entries[-1] == {"path": str(missing), "source": "environment",
                           "problem": entries[-1]["problem"]}
    assert entries[-1]["problem"]
    assert all(e["source"] != "environment"
               for e in plexus.Runtime(ignore_environment=True).info()["search_path"])


def test_plexus_backends_selects_backends(monkeypatch):
    monkeypatch.setenv("PLEXUS_BACKENDS", "cpu_ref")
    info = plexus.Runtime().info()
    assert [b["id"] for b in info["backends"]] == ["cpu_ref"]
    assert info["skipped"] and all(s["reason"] for s in info["skipped"])


def test_search_paths_come_first_and_rejections_have_reasons(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not a shared object")
    rt = plexus.Runtime([tmp_path], ignore_environment=True)
    info = rt.info()
    assert [e["path"] for e in info["search_path"]] == [str(tmp_path), plexus.BACKEND_DIR]
    assert len(info["rejected"]) == 1
    rejected = info["rejected"][0]
    assert rejected["path"].endswith("bogus.so") and rejected["reason"]


def test_without_package_backends_nothing_is_found():
    info = plexus.info(package_backends=False, ignore_environment=True)
    assert info["backends"] == [] and info["search_path"] == []


def test_backend_option_unknown_key_rejects_the_backend(digits_path):
    rt = plexus.Runtime(backend_options={"cpu_ref": {"no_such_option": "1"}},
                        ignore_environment=True)
    info = rt.info()
    assert "cpu_ref" not in [b["id"] for b in info["backends"] if b["available"]]
    reasons = [r["reason"] for r in info["rejected"] if r["id"] == "cpu_ref"]
    assert reasons and "no_such_option" in reasons[0]
    with pytest.raises(plexus.Error) as e:
        rt.load(digits_path, ["cpu_ref"], fallback=False)
    assert "cpu_ref" in str(e.value)


def test_backend_option_is_applied(digits_path, digit_images):
    rt = plexus.Runtime(backend_options={"cpu_ref": {"threads": 1}}, ignore_environment=True)
    assert "cpu_ref" in [b["id"] for b in rt.info()["backends"] if b["available"]]
    image, expected = digit_images[3]
    out = rt.load(digits_path, ["cpu_ref"]).run({"image": image})
    assert abs(out["probabilities"] - expected).max() < 1e-5


def test_bad_runtime_arguments():
    with pytest.raises(plexus.InvalidArgumentError, match="log_level 'loud'"):
        plexus.Runtime(log_level="loud")
    with pytest.raises(TypeError, match="cpu_ref.threads"):
        plexus.Runtime(backend_options={"cpu_ref": {"threads": 1.5}})
    with pytest.raises(TypeError, match="sequence of paths"):
        plexus.Runtime("/some/dir")


def test_counters(runtime, digits_path, digit_images):
    rt = plexus.Runtime(ignore_environment=True)
    model = rt.load(digits_path)
    model.run({"image": digit_images[0][0]})
    with pytest.raises(plexus.InvalidArgumentError):
        model.run({"image": digit_images[0][0][0]})
    c = rt.counters()
    assert c == {"networks_loaded": 1, "inferences_run": 1, "inferences_failed": 0}
