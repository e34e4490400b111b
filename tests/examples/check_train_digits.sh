#!/usr/bin/env bash
# The main job end to end: train_digits with its defaults (and any further arguments, such as
# `--backend opencl`) must end with `test accuracy: X`, X >= 0.97, and leave a loadable checkpoint
# where it says it saved one. $SMELT_LAUNCHER, when set, runs it (`mpirun -np 2`: data-parallel; rank 0 prints).
set -euo pipefail
exe=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
${SMELT_LAUNCHER:-} "$exe" --checkpoint "$dir/digits.safetensors" "$@" > "$dir/out.txt"
cat "$dir/out.txt"
last=$(tail -n 1 "$dir/out.txt")
[[ $last =~ ^test\ accuracy:\ ([0-9.]+)$ ]] || { echo "FAIL: last line is not 'test accuracy: X': $last"; exit 1; }
accuracy=${BASH_REMATCH[1]}
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.97) }' || { echo "FAIL: test accuracy $accuracy < 0.97"; exit 1; }
grep -q "checkpoint.*: $dir/digits.safetensors" "$dir/out.txt" || { echo "FAIL: the checkpoint's path is not reported"; exit 1; }
[ -s "$dir/digits.safetensors" ] || { echo "FAIL: no checkpoint at $dir/digits.safetensors"; exit 1; }
echo "ok: test accuracy $accuracy"
