"""ONNX export run by onnxruntime (ctest onnx/export_onnxruntime): `smelt export` writes each model, and
onnxruntime (from PyPI, installed into BUILD/onnx-export-venv on first use) runs it on random inputs;
its outputs must equal smelt's (`smelt run` / `smelt grad` on the CPU, f32 within 1e-5 relative):
  - tests/onnx/export_cnn.ir: conv, relu, pools, softmax, gelu, layer norm, variance, rsqrt, with a
    symbolic batch run at two sizes;
  - tests/onnx/export_mlp.ir with --grad: the training graph (the gradients as outputs);
  - tests/onnx/export_scatter.ir: scatter_reduce (mul) and scatter_add as ScatterND, and scatter_reduce max refused
    (ScatterND's max is opset 18);
  - tests/onnx/export_conv_train.ir with --grad: a CNN's training graph (convolution weight gradients
    of a strided, dilated, grouped convolution, ConvTranspose input gradients, an overlapping max pool's
    through its indices, an average pool's, a gather's with repeated and negative indices);
  - examples/models/tiny_cnn.onnx (a PyTorch export) imported by smelt and exported again, against
    onnxruntime on the original file.
Usage: test_onnx_export.py SMELT_BINARY SOURCE_DIR BUILD_DIR"""
import os
import subprocess
import sys
import tempfile
import venv


def ensure_venv(build_dir):
    """A virtualenv with onnxruntime and numpy; its python."""
    root = os.path.join(build_dir, "onnx-export-venv")
    python = os.path.join(root, "bin", "python")
    probe = [python, "-c", "import onnxruntime, numpy"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "onnxruntime", "numpy"], check=True, timeout=900)
    return python


def smelt(binary, *args):
    r = subprocess.run([binary] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("smelt %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def compare(name, got, want):
    import numpy as np
    assert got.shape == want.shape, (name, got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
    assert err <= 1e-5, "%s: onnxruntime differs from smelt by %g (relative)" % (name, err)
    return err


def inside(binary, source, work):
    import numpy as np
    import onnxruntime as ort
    rng = np.random.default_rng(int(os.environ.get("SMELT_TEST_SEED", "5")))
    worst = 0.0

    cnn = os.path.join(source, "tests", "onnx", "export_cnn.ir")
    smelt(binary, "export", cnn, "-o", os.path.join(work, "cnn.onnx"))
    session = ort.InferenceSession(os.path.join(work, "cnn.onnx"), providers=["CPUExecutionProvider"])
    for batch in (1, 6):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.save(os.path.join(work, "x.npy"), x)
        out = os.path.join(work, "cnn_%d" % batch)
        smelt(binary, "run", cnn, "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out)
        for name, value in zip(["y", "z"], session.run(None, {"x": x})):
            worst = max(worst, compare("cnn %s at batch %d" % (name, batch), value, np.load(os.path.join(out, name + ".npy"))))

    mlp = os.path.join(source, "tests", "onnx", "export_mlp.ir")
    smelt(binary, "export", mlp, "--grad", "w1,b1,w2", "-o", os.path.join(work, "mlp_train.onnx"))
    session = ort.InferenceSession(os.path.join(work, "mlp_train.onnx"), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((9, 6)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, "mlp")
    smelt(binary, "grad", mlp, "--wrt", "w1,b1,w2", "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out)
    names = [o.name for o in session.get_outputs()]
    assert names == ["y", "w1.grad", "b1.grad", "w2.grad"], names
    for name, value in zip(names[1:], session.run(None, {"x": x})[1:]):
        worst = max(worst, compare("mlp " + name, value, np.load(os.path.join(out, name + ".npy"))))

    conv = os.path.join(source, "tests", "onnx", "export_conv_train.ir")
    smelt(binary, "export", conv, "--grad", "w1,b1,w2,table", "--dim", "N=3", "-o",
          os.path.join(work, "conv_train.onnx"))
    session = ort.InferenceSession(os.path.join(work, "conv_train.onnx"), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((3, 4, 9, 9)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, "conv")
    smelt(binary, "grad", conv, "--wrt", "w1,b1,w2,table", "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out)
    names = [o.name for o in session.get_outputs()]
    assert names == ["y", "w1.grad", "b1.grad", "w2.grad", "table.grad"], names
    for name, value in zip(names[1:], session.run(None, {"x": x})[1:]):
        worst = max(worst, compare("conv training graph " + name, value, np.load(os.path.join(out, name + ".npy"))))

    scatter = os.path.join(source, "tests", "onnx", "export_scatter.ir")
    smelt(binary, "export", scatter, "-o", os.path.join(work, "scatter.onnx"))
    session = ort.InferenceSession(os.path.join(work, "scatter.onnx"), providers=["CPUExecutionProvider"])
    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32), "u": rng.standard_normal((3, 2, 2)).astype(np.float32)}
    for name, value in feeds.items():
        np.save(os.path.join(work, name + ".npy"), value)
    out = os.path.join(work, "scatter")
    smelt(binary, "run", scatter, "--input", "x=" + os.path.join(work, "x.npy"), "--input",
          "u=" + os.path.join(work, "u.npy"), "--output-dir", out)
    for name, value in zip(["y", "z"], session.run(None, feeds)):
        worst = max(worst, compare("scatter " + name, value, np.load(os.path.join(out, name + ".npy"))))
    with open(os.path.join(work, "scatter_max.ir"), "w") as f:
        f.write(open(scatter).read().replace('reduction = "mul"', 'reduction = "max"'))
    refused = subprocess.run([binary, "export", os.path.join(work, "scatter_max.ir"), "-o",
                              os.path.join(work, "max.onnx")], capture_output=True, text=True)
    assert refused.returncode != 0 and "opset 18" in refused.stderr, refused.stderr

    tiny = os.path.join(source, "examples", "models", "tiny_cnn.onnx")
    smelt(binary, "export", tiny, "-o", os.path.join(work, "tiny_again.onnx"))
    original = ort.InferenceSession(tiny, providers=["CPUExecutionProvider"])
    again = ort.InferenceSession(os.path.join(work, "tiny_again.onnx"), providers=["CPUExecutionProvider"])
    feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in original.get_inputs()}
    for a, b in zip(again.run(None, feed), original.run(None, feed)):
        worst = max(worst, compare("tiny_cnn exported again", a, b))
    print("onnx export: onnxruntime %s ran every export; largest relative difference %.2g" % (ort.__version__, worst))


def main():
    binary, source, build = sys.argv[1:4]
    if len(sys.argv) > 4 and sys.argv[4] == "--inside":
        with tempfile.TemporaryDirectory() as work:
            inside(binary, source, work)
        return
    python = ensure_venv(build)
    sys.exit(subprocess.run([python, os.path.abspath(__file__), binary, source, build, "--inside"]).returncode)


if __name__ == "__main__":
    main()
