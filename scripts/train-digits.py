#!/usr/bin/env python3
"""Train Plexus's example model: a tiny convolutional digit classifier.

The data is scikit-learn's bundled handwritten digits set (1797 greyscale
images of 8x8 pixels, values 0..16, shipped inside the package, so nothing is
downloaded).  The network is written and trained in NumPy alone:

    image [1,1,8,8]
      conv1  Conv 1->8, 3x3, pad 1     -> [N,8,8,8]
      relu1  Relu
      pool1  MaxPool 2x2, stride 2     -> [N,8,4,4]
      conv2  Conv 8->16, 3x3, pad 1    -> [N,16,4,4]
      relu2  Relu
      pool2  MaxPool 2x2, stride 2     -> [N,16,2,2]
      flatten Flatten                  -> [N,64]
      fc     Gemm 64->10 (transB=1)    -> [N,10]
      softmax Softmax(axis=1)          -> probabilities [1,10]

It is exported as ONNX (opset 13, IR version 7), checked, evaluated with
onnx.reference.ReferenceEvaluator against the NumPy forward pass, and written
together with one example input per class, the reference output for each, and
a README.

Everything is seeded and BLAS is held to one thread, so two runs on the same
machine with the pinned packages (scripts/requirements-train.txt) write
byte-identical files.

Usage:
    python3 -m venv .venv-train
    .venv-train/bin/pip install -r scripts/requirements-train.txt
    .venv-train/bin/python scripts/train-digits.py [--out DIR] [--epochs N]
"""

import os

# Determinism: a multi-threaded BLAS may split a matrix product differently
# from run to run and so sum in a different order.  Hold every BLAS/OpenMP
# back end to one thread; this must happen before NumPy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "onnx" / "models" / "digits"

SEED = 0
TEST_FRACTION = 0.2
BATCH_SIZE = 32
LEARNING_RATE = 0.01       # Adam step size, decayed by cosine to 0 over the run
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
DEFAULT_EPOCHS = 30
MIN_TEST_ACCURACY = 0.95   # the run fails below this

OPSET = 13
IR_VERSION = 7
INPUT_NAME = "image"
OUTPUT_NAME = "probabilities"

DTYPE = np.float32


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def load_data():
    """Return (x_train, y_train, idx_train, x_test, y_test, idx_test).

    x: float32 [N,1,8,8] in [0,1] (pixel / 16); y: int64 labels 0..9;
    idx: the image's index in sklearn's load_digits() order.
    """
    digits = load_digits()
    x = (digits.images.astype(DTYPE) / DTYPE(16.0))[:, None, :, :]
    y = digits.target.astype(np.int64)
    idx = np.arange(len(y))
    x_tr, x_te, y_tr, y_te, i_tr, i_te = train_test_split(
        x, y, idx, test_size=TEST_FRACTION, stratify=y, random_state=SEED)
    return x_tr, y_tr, i_tr, x_te, y_te, i_te


# --------------------------------------------------------------------------
# Layers (forward returns (output, cache); backward takes the cache)
# --------------------------------------------------------------------------

def im2col_3x3(x):
    """[N,C,H,W] -> [N*H*W, C*9]: the 3x3 neighbourhood (zero padding 1) of
    every pixel, ordered (c, kh, kw) to match an ONNX weight [F,C,3,3]."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    # win: [N,C,H,W,3,3] -> [N,H,W,C,3,3]
    return np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(n * h * w, c * 9)


def col2im_3x3(dcols, shape):
    """Adjoint of im2col_3x3: scatter-add patch gradients back to [N,C,H,W]."""
    n, c, h, w = shape
    d = dcols.reshape(n, h, w, c, 3, 3)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dcols.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + h, j:j + w] += d[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dxp[:, :, 1:-1, 1:-1]


def conv_forward(x, weight, bias):
    """3x3 convolution, stride 1, padding 1 (ONNX Conv semantics)."""
    n, _, h, w = x.shape
    f = weight.shape[0]
    cols = im2col_3x3(x)
    out = cols @ weight.reshape(f, -1).T + bias          # [N*H*W, F]
    out = out.reshape(n, h, w, f).transpose(0, 3, 1, 2)  # [N,F,H,W]
    return np.ascontiguousarray(out), (x.shape, cols, weight)


def conv_backward(dout, cache):
    x_shape, cols, weight = cache
    f = weight.shape[0]
    d = dout.transpose(0, 2, 3, 1).reshape(-1, f)         # [N*H*W, F]
    dweight = (d.T @ cols).reshape(weight.shape)
    dbias = d.sum(axis=0)
    dx = col2im_3x3(d @ weight.reshape(f, -1), x_shape)
    return dx, dweight, dbias


def relu_forward(x):
    return np.maximum(x, 0), x


def relu_backward(dout, x):
    return dout * (x > 0)


def maxpool_forward(x):
    """2x2 max pooling, stride 2 (H and W are even here)."""
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    win = win.reshape(n, c, h // 2, w // 2, 4)
    arg = win.argmax(axis=-1)                             # first max on ties
    out = np.take_along_axis(win, arg[..., None], axis=-1)[..., 0]
    return out, (x.shape, arg)


def maxpool_backward(dout, cache):
    (n, c, h, w), arg = cache
    dwin = np.zeros((n, c, h // 2, w // 2, 4), dtype=dout.dtype)
    np.put_along_axis(dwin, arg[..., None], dout[..., None], axis=-1)
    dwin = dwin.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
    return dwin.reshape(n, c, h, w)


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

def init_params(rng):
    """He-normal weights, zero biases; names are the ONNX initializer names."""
    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(DTYPE)

    return {
        "conv1.weight": he((8, 1, 3, 3), 1 * 9),
        "conv1.bias": np.zeros(8, DTYPE),
        "conv2.weight": he((16, 8, 3, 3), 8 * 9),
        "conv2.bias": np.zeros(16, DTYPE),
        "fc.weight": he((10, 64), 64),   # Gemm B with transB=1: [out, in]
        "fc.bias": np.zeros(10, DTYPE),
    }


def forward(params, x):
    """Return (logits [N,10], caches for backward)."""
    h, c1 = conv_forward(x, params["conv1.weight"], params["conv1.bias"])
    h, r1 = relu_forward(h)
    h, p1 = maxpool_forward(h)
    h, c2 = conv_forward(h, params["conv2.weight"], params["conv2.bias"])
    h, r2 = relu_forward(h)
    h, p2 = maxpool_forward(h)
    flat_shape = h.shape
    h = h.reshape(h.shape[0], -1)                        # Flatten(axis=1)
    logits = h @ params["fc.weight"].T + params["fc.bias"]
    return logits, (c1, r1, p1, c2, r2, p2, flat_shape, h)


def predict_proba(params, x):
    return softmax(forward(params, x)[0])


def loss_and_grads(params, x, y):
    """Mean cross-entropy of softmax(logits) and its gradients."""
    logits, (c1, r1, p1, c2, r2, p2, flat_shape, flat) = forward(params, x)
    n = x.shape[0]
    prob = softmax(logits)
    loss = -np.log(prob[np.arange(n), y] + 1e-12).mean()

    dlogits = prob
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    g = {"fc.weight": dlogits.T @ flat, "fc.bias": dlogits.sum(axis=0)}
    d = (dlogits @ params["fc.weight"]).reshape(flat_shape)
    d = maxpool_backward(d, p2)
    d = relu_backward(d, r2)
    d, g["conv2.weight"], g["conv2.bias"] = conv_backward(d, c2)
    d = maxpool_backward(d, p1)
    d = relu_backward(d, r1)
    _, g["conv1.weight"], g["conv1.bias"] = conv_backward(d, c1)
    return float(loss), g


def accuracy(params, x, y):
    return float((predict_proba(params, x).argmax(axis=1) == y).mean())


def train(params, x, y, epochs, rng, x_test, y_test):
    """Mini-batch Adam with a cosine-decayed step size."""
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    b1, b2 = ADAM_BETAS
    steps_per_epoch = -(-len(y) // BATCH_SIZE)
    total = epochs * steps_per_epoch
    step = 0
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(y))
        losses = []
        for start in range(0, len(y), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            loss, grads = loss_and_grads(params, x[batch], y[batch])
            losses.append(loss * len(batch))
            lr = LEARNING_RATE * 0.5 * (1 + np.cos(np.pi * step / total))
            step += 1
            for k in params:
                m[k] = b1 * m[k] + (1 - b1) * grads[k]
                v[k] = b2 * v[k] + (1 - b2) * grads[k] * grads[k]
                m_hat = m[k] / (1 - b1 ** step)
                v_hat = v[k] / (1 - b2 ** step)
                params[k] = (params[k] - lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)).astype(DTYPE)
        print(f"epoch {epoch:3d}/{epochs}  loss {sum(losses) / len(y):.4f}  "
              f"train acc {accuracy(params, x, y):.4f}  "
              f"test acc {accuracy(params, x_test, y_test):.4f}", flush=True)
    return params


# --------------------------------------------------------------------------
# ONNX export and verification
# --------------------------------------------------------------------------

def export_onnx(params, doc):
    node = helper.make_node
    nodes = [
        node("Conv", [INPUT_NAME, "conv1.weight", "conv1.bias"], ["conv1_out"], name="conv1",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
        node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1",
             kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["pool1_out", "conv2.weight", "conv2.bias"], ["conv2_out"], name="conv2",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        node("Relu", ["conv2_out"], ["relu2_out"], name="relu2"),
        node("MaxPool", ["relu2_out"], ["pool2_out"], name="pool2",
             kernel_shape=[2, 2], strides=[2, 2]),
        node("Flatten", ["pool2_out"], ["flatten_out"], name="flatten", axis=1),
        node("Gemm", ["flatten_out", "fc.weight", "fc.bias"], ["fc_out"], name="fc",
             alpha=1.0, beta=1.0, transB=1),
        node("Softmax", ["fc_out"], [OUTPUT_NAME], name="softmax", axis=1),
    ]
    initializers = [numpy_helper.from_array(np.ascontiguousarray(a, dtype=DTYPE), name=k)
                    for k, a in params.items()]
    graph = helper.make_graph(
        nodes, "digits",
        inputs=[helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, 1, 8, 8])],
        outputs=[helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [1, 10])],
        initializer=initializers,
        doc_string="8x8 greyscale digit (pixel/16) -> class probabilities for 0..9")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="plexus scripts/train-digits.py",
                              producer_version="1", doc_string=doc)
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def reference_outputs(model, x):
    """Run the ONNX graph one image at a time (its batch is fixed at 1)."""
    sess = ReferenceEvaluator(model)
    return np.concatenate([sess.run(None, {INPUT_NAME: x[i:i + 1]})[0] for i in range(len(x))])


# --------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------

def write_readme(path, test_acc, train_acc, n_train, n_test, epochs, n_params, examples):
    rows = "\n".join(
        f"| `inputs/digit-{lab}.npy` | `expected/digit-{lab}.npy` | {idx} | {lab} | {pred} | "
        f"{conf:.4f} |{'' if lab == pred else ' **misclassified**'}"
        for lab, idx, pred, conf in examples)
    text = f"""# digits: Plexus's example model

A tiny convolutional classifier of handwritten digits, trained from real data by
[`scripts/train-digits.py`](../../../scripts/train-digits.py) and exported as
ONNX (opset {OPSET}, IR version {IR_VERSION}). Everything in this folder is
written by that script; do not edit it by hand.

## Data

scikit-learn's bundled handwritten digits set (`sklearn.datasets.load_digits`:
1797 greyscale images, 8x8 pixels, values 0..16, labels 0..9), split 80/20,
stratified by label, `random_state=0`: {n_train} training and {n_test} test images.

## Network

| node | op | output shape |
|---|---|---|
| `conv1` | Conv 1->8, 3x3, pads 1, strides 1 | [1,8,8,8] |
| `relu1` | Relu | [1,8,8,8] |
| `pool1` | MaxPool 2x2, strides 2 | [1,8,4,4] |
| `conv2` | Conv 8->16, 3x3, pads 1, strides 1 | [1,16,4,4] |
| `relu2` | Relu | [1,16,4,4] |
| `pool2` | MaxPool 2x2, strides 2 | [1,16,2,2] |
| `flatten` | Flatten, axis 1 | [1,64] |
| `fc` | Gemm 64->10, transB 1 | [1,10] |
| `softmax` | Softmax, axis 1 | [1,10] |

{n_params} float32 parameters (initializers `conv1.weight`, `conv1.bias`,
`conv2.weight`, `conv2.bias`, `fc.weight`, `fc.bias`).

- **Input** `image`: float32 `[1,1,8,8]` (fixed batch 1).
- **Output** `probabilities`: float32 `[1,10]`, the softmax over the digits 0..9;
  the prediction is the argmax.
- **Preprocessing**: the raw 0..16 pixel values divided by 16 (so in [0,1]),
  row-major, nothing else.

## Training and accuracy

NumPy only (im2col convolutions), cross-entropy loss, Adam (step size
{LEARNING_RATE} decayed by cosine to 0), mini-batches of {BATCH_SIZE}, {epochs} epochs,
He-normal initialisation, all seeded with `numpy.random.default_rng(0)`.

- training accuracy: {train_acc * 100:.2f}%
- **test accuracy: {test_acc * 100:.2f}%** ({round(test_acc * n_test)}/{n_test})

The script checks the exported graph with `onnx.checker.check_model` and runs it
with `onnx.reference.ReferenceEvaluator` over the whole test set: its
probabilities agree with the NumPy model's to 1e-5 and its accuracy is the same.

## Example inputs

The first test-set image of each class (in split order), whatever the model
predicts for it. `inputs/digit-<label>.npy` is the preprocessed image, float32
`[1,1,8,8]`; `expected/digit-<label>.npy` is the reference evaluator's
`probabilities` for it, float32 `[1,10]` (both `numpy.save` format).

| input | expected output | `load_digits` index | true label | predicted | probability of predicted |
|---|---|---|---|---|---|
{rows}

## Regenerating

From the repository root:

```sh
python3 -m venv .venv-train && .venv-train/bin/pip install -r scripts/requirements-train.txt && .venv-train/bin/python scripts/train-digits.py
```

Options: `--out DIR` (default `onnx/models/digits`), `--epochs N` (default
{DEFAULT_EPOCHS}). The run is deterministic: the seed is fixed and the script
holds BLAS to one thread, so two runs on one machine with the pinned packages
write byte-identical files (a different CPU or BLAS build may change the last
bits of the weights).
"""
    path.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                    help="output folder (default: %(default)s)")
    ap.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS,
                    help="training epochs (default: %(default)s)")
    args = ap.parse_args()
    if args.epochs < 1:
        ap.error("--epochs must be at least 1")

    x_tr, y_tr, _, x_te, y_te, i_te = load_data()
    print(f"data: {len(y_tr)} train, {len(y_te)} test images of 8x8")

    rng = np.random.default_rng(SEED)
    params = init_params(rng)
    n_params = sum(p.size for p in params.values())
    print(f"model: {n_params} parameters ({n_params * 4} bytes of float32)")

    t0 = time.perf_counter()
    params = train(params, x_tr, y_tr, args.epochs, rng, x_te, y_te)
    train_seconds = time.perf_counter() - t0

    prob_np = predict_proba(params, x_te)
    train_acc = accuracy(params, x_tr, y_tr)
    test_acc = float((prob_np.argmax(axis=1) == y_te).mean())
    print(f"training took {train_seconds:.1f} s")
    print(f"final train accuracy {train_acc:.4f}, test accuracy {test_acc:.4f}")

    doc = (f"Plexus example model 'digits': a small CNN (conv1 8x3x3, maxpool, conv2 16x3x3, "
           f"maxpool, fc 64->10, softmax) classifying 8x8 handwritten digits. Input 'image' "
           f"float32 [1,1,8,8] = sklearn load_digits pixels (0..16) / 16; output "
           f"'probabilities' float32 [1,10]. Trained by scripts/train-digits.py in NumPy: "
           f"Adam lr {LEARNING_RATE} cosine-decayed, batch {BATCH_SIZE}, {args.epochs} epochs, "
           f"seed {SEED}, on a stratified 80/20 split (random_state={SEED}) of the 1797 images. "
           f"Test accuracy {test_acc * 100:.2f}% ({round(test_acc * len(y_te))}/{len(y_te)}).")
    model = export_onnx(params, doc)

    # Verify: the ONNX graph, run by the reference evaluator, must reproduce
    # the NumPy model on the whole test set.
    prob_ref = reference_outputs(model, x_te)
    max_diff = float(np.abs(prob_ref - prob_np).max())
    ref_acc = float((prob_ref.argmax(axis=1) == y_te).mean())
    print(f"onnx reference evaluator: test accuracy {ref_acc:.4f}, "
          f"max |p_onnx - p_numpy| = {max_diff:.2e}")
    assert prob_ref.dtype == np.float32 and prob_ref.shape == (len(y_te), 10)
    assert np.allclose(prob_ref, prob_np, rtol=0, atol=1e-5), max_diff
    assert ref_acc == test_acc, (ref_acc, test_acc)
    if test_acc < MIN_TEST_ACCURACY:
        sys.exit(f"error: test accuracy {test_acc:.4f} is below {MIN_TEST_ACCURACY}")

    out = args.out
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    (out / "expected").mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, out / "digits.onnx")

    # Example inputs: the first test image of each class, right or wrong.
    examples = []
    for label in range(10):
        i = int(np.flatnonzero(y_te == label)[0])
        x = np.ascontiguousarray(x_te[i:i + 1], dtype=np.float32)       # [1,1,8,8]
        expected = np.ascontiguousarray(prob_ref[i:i + 1], dtype=np.float32)  # [1,10]
        np.save(out / "inputs" / f"digit-{label}.npy", x)
        np.save(out / "expected" / f"digit-{label}.npy", expected)
        pred = int(expected.argmax())
        examples.append((label, int(i_te[i]), pred, float(expected[0, pred])))
        print(f"example digit-{label}: load_digits index {i_te[i]}, predicted {pred} "
              f"(p={expected[0, pred]:.4f}){'' if pred == label else '  MISCLASSIFIED'}")

    write_readme(out / "README.md", test_acc, train_acc, len(y_tr), len(y_te),
                 args.epochs, n_params, examples)
    print(f"wrote {out / 'digits.onnx'} ({(out / 'digits.onnx').stat().st_size} bytes), "
          f"{out / 'inputs'}, {out / 'expected'}, {out / 'README.md'}")


if __name__ == "__main__":
    main()
