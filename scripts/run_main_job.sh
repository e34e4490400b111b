#!/usr/bin/env bash
# The README's first command: installs what is needed, builds, and runs the main job: train_digits
# trains a small CNN on the handwritten digits shipped in data/digits with smelt's model API, saves a
# checkpoint and prints, as its last line, `test accuracy: X`. Arguments go to train_digits
# (`--mnist DIR` trains on real MNIST IDX files instead).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
# A unity build, as scripts/test.sh's (it reuses this folder): a fresh build compiles in about a third
# of the time. For small edits afterwards, `bash scripts/build.sh build -DCMAKE_UNITY_BUILD=OFF`
# recompiles one file per edited source instead of its batch of eight.
bash scripts/build.sh build -DCMAKE_UNITY_BUILD=ON
build/bin/train_digits "$@"
