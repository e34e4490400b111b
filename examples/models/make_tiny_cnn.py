#!/usr/bin/python3
"""Regenerates the bundled example model: a tiny CNN classifier for 8x8 grey digits, exported to
ONNX by PyTorch, and one input image. Run with Debian's interpreter (python3-torch, python3-numpy):
    /usr/bin/python3 examples/models/make_tiny_cnn.py examples/models
The weights are random (seeded): the point is a small real exported model for `smelt run`."""
import sys, pathlib
import numpy as np
import torch, torch.nn as nn

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
    nn.Linear(16, 10), nn.Softmax(dim=1)).eval()
# A hand-drawn "7" on an 8x8 canvas with values in [0, 1].
seven = np.zeros((1, 1, 8, 8), dtype=np.float32)
seven[0, 0, 1, 1:7] = 1.0
for r in range(2, 7):
    seven[0, 0, r, 7 - r] = 1.0
torch.onnx.export(model, torch.from_numpy(seven), str(out / "tiny_cnn.onnx"), input_names=["image"],
                  output_names=["probabilities"], opset_version=14)
np.save(out / "tiny_cnn_input.npy", seven)
np.save(out / "tiny_cnn_expected.npy", model(torch.from_numpy(seven)).detach().numpy())
print("wrote", out / "tiny_cnn.onnx")
