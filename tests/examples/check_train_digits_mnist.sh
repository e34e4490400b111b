#!/usr/bin/env bash
# train_digits --mnist DIR on MNIST-shaped IDX files (28x28, written here from random strokes, as real
# MNIST cannot be downloaded on these machines): the larger images take the network with a hidden
# layer, one epoch runs, and the last line is still `test accuracy: X`.
set -euo pipefail
exe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 - "$dir" <<'PY'
import struct, sys, random
out = sys.argv[1]
random.seed(0)
def write(name, magic, dims, data):
    with open(f"{out}/{name}", "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data))
for split, n in (("train", 96), ("t10k", 40)):
    labels = [i % 10 for i in range(n)]
    pixels = []
    for label in labels:
        img = [0] * (28 * 28)
        for r in range(4, 24):  # a vertical stroke whose column encodes the label
            img[r * 28 + 4 + 2 * label] = 255
        pixels += img
    write(f"{split}-images-idx3-ubyte", 0x803, (n, 28, 28), pixels)
    write(f"{split}-labels-idx1-ubyte", 0x801, (n,), labels)
PY
"$exe" --mnist "$dir" --epochs 2 --checkpoint "$dir/c.safetensors" > "$dir/out.txt"
cat "$dir/out.txt"
grep -q "of 28x28" "$dir/out.txt" || { echo "FAIL: did not read the 28x28 files"; exit 1; }
grep -q "Linear(3136 -> 128)" "$dir/out.txt" || { echo "FAIL: no hidden layer for 28x28 images"; exit 1; }
tail -n 1 "$dir/out.txt" | grep -Eq '^test accuracy: [0-9.]+$' || { echo "FAIL: last line"; exit 1; }
