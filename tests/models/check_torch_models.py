#!/usr/bin/python3
"""Real models exported from PyTorch give PyTorch's outputs through `smelt run` (relative error under
1e-4 in f32): the models of torch_models.py (an MLP, a small CNN with batch norm, a transformer block
with layer norm, torchvision's resnet18), with random seeded weights; and each exported again with a
dynamic batch (dynamic_axes) runs at another batch size, its symbolic dimension bound from the input.
Usage: check_torch_models.py PATH/TO/smelt [BACKEND]   (Debian's python3 with torch and torchvision)."""
import os, subprocess, sys, tempfile
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import all_models  # noqa: E402

SMELT = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "reference"
TOLERANCE = 1e-4


def main():
    failures = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x, opset in all_models(1234):
            model.eval()
            with torch.no_grad():
                want = model(x).numpy()
            path = os.path.join(tmp, f"{name}.onnx")
            torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"], opset_version=opset)
            dynamic = os.path.join(tmp, f"{name}_dynamic.onnx")
            torch.onnx.export(model, x, dynamic, input_names=["input"], output_names=["output"], opset_version=opset,
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
            other = torch.randn(x.shape[0] + 2, *x.shape[1:], generator=torch.Generator().manual_seed(7))
            with torch.no_grad():
                want_other = model(other).numpy()
            for label, file, inputs, expected in ((name, path, x, want),
                                                  (f"{name} (dynamic batch, {other.shape[0]})", dynamic, other, want_other)):
                np.save(os.path.join(tmp, f"{name}_in.npy"), inputs.numpy())
                out_dir = os.path.join(tmp, name)
                r = subprocess.run([SMELT, "run", file, "--backend", BACKEND, "--input",
                                    f"input={tmp}/{name}_in.npy", "--output-dir", out_dir],
                                   capture_output=True, text=True)
                checked += 1
                if r.returncode != 0:
                    print(f"FAIL {label}: smelt run failed: {r.stderr.strip()}")
                    failures += 1
                    continue
                got = np.load(os.path.join(out_dir, "output.npy"))
                rel = float(np.abs(got - expected).max() / np.abs(expected).max())
                ok = got.shape == expected.shape and rel < TOLERANCE
                failures += 0 if ok else 1
                print(f"{'ok  ' if ok else 'FAIL'} {label}: shape {got.shape}, max relative error {rel:.2e}")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
