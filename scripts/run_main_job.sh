#!/usr/bin/env bash
# The README's first command: installs what is needed, builds, and runs the main job: train_digits
# trains a small CNN on the handwritten digits shipped in data/digits with smelt's model API, saves a
# checkpoint and prints, as its last line, `test accuracy: X`. Arguments go to train_digits
# (`--mnist DIR` trains on real MNIST IDX files instead).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh build
build/bin/train_digits "$@"
