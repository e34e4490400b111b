#!/usr/bin/python3
"""Gradients of ONNX models exported from PyTorch match torch.autograd (relative error under 1e-4 in
f32): `smelt grad` of the sum of all outputs with respect to the input and every parameter, for an MLP,
a CNN with batch norm, an attention block with layer norm, and torchvision's resnet18.
Usage: check_torch_gradients.py PATH/TO/smelt [BACKEND]   (Debian's python3 with torch, torchvision)."""
import os, subprocess, sys, tempfile
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import all_models  # noqa: E402

SMELT = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "reference"
TOLERANCE = 1e-4


def relative_error(got, want, model_scale):
    """max |got - want| / max |want|. A gradient that is zero in exact arithmetic (an attention key
    bias: softmax ignores a shift shared by all keys) is rounding noise in both, so it is measured
    against the model's largest gradient instead."""
    scale = max(float(np.abs(want).max()), 1e-3 * model_scale)
    return float(np.abs(got - want).max()) / scale


def main():
    failures = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x, opset in all_models(4321):
            model.eval()
            # The exporter merges initializers with equal values (freshly initialized norm weights are
            # all ones) behind Identity nodes; perturbing every parameter keeps each one its own.
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(0.05 * torch.randn_like(p))
            path = os.path.join(tmp, f"{name}.onnx")
            # PRESERVE keeps eval-mode batch norm as BatchNormalization (EVAL would fold it into the
            # convolutions) and keeps the parameters under their PyTorch names.
            torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"], opset_version=opset,
                              do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
            x = x.clone().requires_grad_(True)
            params = dict(model.named_parameters())
            model(x).sum().backward()
            want = {"input": x.grad.numpy()}
            want.update({k: p.grad.numpy() for k, p in params.items()})
            np.save(os.path.join(tmp, f"{name}_in.npy"), x.detach().numpy())
            out_dir = os.path.join(tmp, name)
            r = subprocess.run([SMELT, "grad", path, "--backend", BACKEND, "--wrt", ",".join(want),
                                "--input", f"input={tmp}/{name}_in.npy", "--output-dir", out_dir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: smelt grad failed: {r.stderr.strip()}")
                failures += 1
                continue
            worst, worst_name = 0.0, ""
            model_scale = max(float(np.abs(w).max()) for w in want.values())
            for key, w in want.items():
                file = "".join(c if c.isalnum() or c in "._-" else "_" for c in key) + ".grad.npy"
                got = np.load(os.path.join(out_dir, file))
                err = relative_error(got, w, model_scale) if got.shape == w.shape else float("inf")
                if err > worst:
                    worst, worst_name = err, key
            ok = worst < TOLERANCE
            checked += 1
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(want)} gradients, worst relative error {worst:.2e}"
                  f" ({worst_name})")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
