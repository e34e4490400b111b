#!/usr/bin/env bash
# The README's first command: installs what is needed, builds, and runs the main job. Until the model
# API exists, the main job runs the bundled ONNX model (a small CNN exported from PyTorch) through the
# CLI and prints its outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh build
out=$(mktemp -d)
echo "== smelt run examples/models/tiny_cnn.onnx"
build/bin/smelt run examples/models/tiny_cnn.onnx --input image=examples/models/tiny_cnn_input.npy --output-dir "$out"
echo "== outputs written to $out"
