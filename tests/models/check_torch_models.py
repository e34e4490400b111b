#!/usr/bin/python3
"""Real models exported from PyTorch give PyTorch's outputs through `smelt run` (relative error under
1e-4 in f32): an MLP, a small CNN with batch norm, and torchvision's resnet18 (random seeded weights).
Usage: check_torch_models.py PATH/TO/smelt [BACKEND]   (Debian's python3 with torch and torchvision)."""
import os, subprocess, sys, tempfile
import numpy as np
import torch, torch.nn as nn

SMELT = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "reference"
TOLERANCE = 1e-4


def models():
    torch.manual_seed(1234)
    mlp = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 5))
    yield "mlp", mlp, torch.randn(8, 20)
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(16), nn.GELU(),
                        nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10), nn.LogSoftmax(dim=1))
    # Non-trivial running statistics, so batch norm's inference form is really exercised.
    with torch.no_grad():
        for m in cnn.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    yield "cnn", cnn, torch.randn(4, 3, 16, 16)
    try:
        import torchvision
    except ImportError:
        print("torchvision is missing: install python3-torchvision"); sys.exit(1)
    resnet = torchvision.models.resnet18(weights=None)
    yield "resnet18", resnet, torch.randn(2, 3, 64, 64)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x in models():
            model.eval()
            with torch.no_grad():
                want = model(x).numpy()
            path = os.path.join(tmp, f"{name}.onnx")
            torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"], opset_version=14)
            np.save(os.path.join(tmp, f"{name}_in.npy"), x.numpy())
            out_dir = os.path.join(tmp, name)
            r = subprocess.run([SMELT, "run", path, "--backend", BACKEND, "--input",
                                f"input={tmp}/{name}_in.npy", "--output-dir", out_dir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: smelt run failed: {r.stderr.strip()}")
                failures += 1
                continue
            got = np.load(os.path.join(out_dir, "output.npy"))
            rel = float(np.abs(got - want).max() / np.abs(want).max())
            ok = got.shape == want.shape and rel < TOLERANCE
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: shape {got.shape}, max relative error {rel:.2e}")
    print(f"{3 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
