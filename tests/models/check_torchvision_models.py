#!/usr/bin/python3
"""Real architectures in and out (ctest models/torchvision_onnx): torchvision's Swin-T and ViT-B/16 (their
window partition and attention heads reshape the batch into products such as 16*batch) and its
three segmentation models (LR-ASPP and DeepLabV3 on MobileNetV3, FCN on ResNet-50), at small image sizes,
plus the models of torch_models.py, each with random seeded weights (zero-initialized ones, as ViT's head,
drawn too), exported from PyTorch with a dynamic batch (ResNet-18 also with a dynamic height and width, which
smelt keeps symbolic: its strided convolutions and pooling give sizes such as (height+1)/2):
  - `smelt run` (llvm) gives PyTorch's outputs at the exported batch and at another (relative error under
    1e-4), the batch symbolic unless FIXED_BATCH says why not (smelt's log then shows the import at the
    fed shapes, which is checked both ways);
  - `smelt export` writes the model smelt imported back to ONNX (opset 17), and onnxruntime (from PyPI, in
    BUILD/onnx-export-venv, as onnx/export_onnxruntime installs it) runs that file with PyTorch's outputs.
Usage: check_torchvision_models.py PATH/TO/smelt SOURCE_DIR BUILD_DIR   (Debian's python3: torch, torchvision)"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision

SMELT, SOURCE, BUILD = sys.argv[1:4]
sys.path.insert(0, os.path.join(SOURCE, "tests", "models"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "onnx"))
from torch_models import all_models  # noqa: E402
from test_onnx_export import ensure_venv  # noqa: E402

TOLERANCE = 1e-4
# Dynamic exports smelt imports at each fed batch rather than once with a symbolic one, and why.
FIXED_BATCH = {
    "volume": "3-D convolution and pooling are composed with a static batch",
}
# Exported with a dynamic height and width as well, and run at another image size too.
DYNAMIC_IMAGE = {"resnet18_hw"}
ORT_RUN = """import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
np.save(sys.argv[3], s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[2])})[0])
"""


class Output(torch.nn.Module):
    """The model's tensor output (segmentation models return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y["out"] if isinstance(y, dict) else y


def torchvision_models():
    seg = torchvision.models.segmentation
    return [
        ("swin_t", torchvision.models.swin_t(), (1, 3, 112, 112)),
        ("vit_b_16", torchvision.models.vit_b_16(image_size=64), (1, 3, 64, 64)),
        ("lraspp", seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5), (1, 3, 64, 64)),
        ("deeplabv3", seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5,
                                                       aux_loss=False), (1, 3, 64, 64)),
        ("fcn", seg.fcn_resnet50(weights=None, weights_backbone=None, num_classes=5, aux_loss=False), (1, 3, 64, 48)),
        ("resnet18_hw", torchvision.models.resnet18(num_classes=10), (1, 3, 64, 64)),
    ]


def relative(got, want):
    if got.shape != want.shape:
        return float("inf")
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def main():
    torch.manual_seed(1234)
    ort_python = ensure_venv(BUILD)
    cases = [(name, model, shape, 17) for name, model, shape in torchvision_models()]
    cases += [(name, model, tuple(x.shape), opset) for name, model, x, opset in all_models(1234)]
    failures = checked = 0
    env = dict(os.environ, SMELT_LOG="info")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, shape, opset in cases:
            model = Output(model).eval()
            with torch.no_grad():
                for p in model.parameters():
                    if p.numel() and float(p.abs().max()) == 0:
                        p.normal_(0, 0.05)  # ViT's zero-initialized head would make every output 0
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(5))
            image = name in DYNAMIC_IMAGE
            other_shape = (shape[0] + 1, shape[1], shape[2] + 8, shape[3] - 11) if image else (shape[0] + 1, *shape[1:])
            other = torch.randn(*other_shape, generator=torch.Generator().manual_seed(6))
            onnx_path = os.path.join(tmp, f"{name}.onnx")
            axes = {0: "batch", 2: "height", 3: "width"} if image else {0: "batch"}
            torch.onnx.export(model, x, onnx_path, input_names=["input"], output_names=["output"], opset_version=opset,
                              dynamic_axes={"input": axes, "output": {0: "batch"}})
            for label, inputs in ((f"{name} {list(shape)}", x), (f"{name} {list(other.shape)}", other)):
                with torch.no_grad():
                    want = model(inputs).numpy().astype(np.float64)
                feed = os.path.join(tmp, f"{name}_in.npy")
                np.save(feed, inputs.numpy())
                out_dir = os.path.join(tmp, name)
                r = subprocess.run([SMELT, "run", onnx_path, "--backend", "llvm", "--input", f"input={feed}",
                                    "--output-dir", out_dir], capture_output=True, text=True, env=env)
                checked += 1
                if r.returncode != 0:
                    print(f"FAIL {label}: smelt run: {r.stderr.strip()[-500:]}")
                    failures += 1
                    continue
                rel = relative(np.load(os.path.join(out_dir, "output.npy")), want)
                fixed = "imported at the fed inputs' shapes" in r.stderr
                why = ""
                if fixed != (name in FIXED_BATCH):
                    why = "; imported at the fed batch" if fixed else "; stayed symbolic: take it off FIXED_BATCH"
                ok = rel < TOLERANCE and not why
                failures += 0 if ok else 1
                print(f"{'ok  ' if ok else 'FAIL'} {label}: smelt run, max relative error {rel:.2e}"
                      f"{' (fixed batch: ' + FIXED_BATCH[name] + ')' if fixed else ''}{why}")

            # smelt's own export of what it imported, run by onnxruntime.
            exported = os.path.join(tmp, f"{name}_smelt.onnx")
            r = subprocess.run([SMELT, "export", onnx_path, "-o", exported] +
                               (["--dim", f"batch={shape[0]}"] if name in FIXED_BATCH else []),
                               capture_output=True, text=True)
            checked += 1
            if r.returncode != 0:
                print(f"FAIL {name}: smelt export: {r.stderr.strip()[-500:]}")
                failures += 1
                continue
            np.save(os.path.join(tmp, f"{name}_in.npy"), x.numpy())
            got_path = os.path.join(tmp, f"{name}_ort.npy")
            r = subprocess.run([ort_python, "-c", ORT_RUN, exported, os.path.join(tmp, f"{name}_in.npy"), got_path],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: onnxruntime on smelt's export: {r.stderr.strip()[-500:]}")
                failures += 1
                continue
            with torch.no_grad():
                want = model(x).numpy().astype(np.float64)
            rel = relative(np.load(got_path), want)
            ok = rel < TOLERANCE
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: smelt's export in onnxruntime, max relative error {rel:.2e}")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
