#!/usr/bin/python3
"""Real models exported from PyTorch give PyTorch's outputs through `smelt run` (relative error under
1e-4 in f32): the models of torch_models.py (an MLP, a small CNN with batch norm, a transformer block
with layer norm, torchvision's resnet18), with random seeded weights.
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
            checked += 1
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: shape {got.shape}, max relative error {rel:.2e}")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
