#!/usr/bin/env python3
"""Write the UCI optical handwritten digits (scikit-learn's 8x8 "digits") as
MNIST-style IDX files, split 1437 train / 360 test.

Input: scikit-learn's digits.csv.gz (1797 rows; each row is 64 pixel values
0..16, row-major 8x8, followed by the label 0..9). Debian's python3-sklearn
installs it at DEFAULT_CSV; `--csv PATH` names another copy.

Output (into this script's directory unless --out is given):
  train-images-idx3-ubyte  magic 0x00000803, dims (1437, 8, 8), u8
  train-labels-idx1-ubyte  magic 0x00000801, dim  (1437,),      u8
  t10k-images-idx3-ubyte   magic 0x00000803, dims (360, 8, 8),  u8
  t10k-labels-idx1-ubyte   magic 0x00000801, dim  (360,),       u8
Header integers are big-endian u32, as in MNIST; the files are uncompressed.

Pixels: v (0..16) -> v * 255 // 16 (0 -> 0, 8 -> 127, 16 -> 255), so a loader
written for MNIST's u8 0..255 works unchanged.

Split: stratified by label with numpy.random.default_rng(0). Each digit's
test share is its count * 360 / 1797, rounded by largest remainder (ties to
the smaller digit) so the shares add up to exactly 360. One permutation of
all rows is drawn; for each digit, its first rows in that permutation go to
the test set. Within each file, rows keep their order in the csv.

Usage:
  /usr/bin/python3 data/digits/make_idx.py            # write the four files
  /usr/bin/python3 data/digits/make_idx.py --verify   # read them back, check
Needs only the standard library and numpy.
"""

import argparse
import gzip
import hashlib
import os
import struct
import sys

import numpy as np

DEFAULT_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
N_TEST = 360
SEED = 0
IMAGES_MAGIC = 0x00000803  # u8 data, 3 dims
LABELS_MAGIC = 0x00000801  # u8 data, 1 dim
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def load_csv(path):
    """Return (pixels (N, 64) u8 in 0..16, labels (N,) u8 in 0..9)."""
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    if rows.shape != (1797, 65):
        sys.exit(f"{path}: expected 1797 rows of 65 values, got {rows.shape}")
    if not np.array_equal(rows, np.round(rows)):
        sys.exit(f"{path}: non-integer values")
    rows = rows.astype(np.int64)
    pixels, labels = rows[:, :64], rows[:, 64]
    if pixels.min() < 0 or pixels.max() > 16 or labels.min() < 0 or labels.max() > 9:
        sys.exit(f"{path}: values out of range")
    return pixels.astype(np.uint8), labels.astype(np.uint8)


def to_u8(pixels):
    """0..16 -> 0..255 by v * 255 // 16."""
    return (pixels.astype(np.uint16) * 255 // 16).astype(np.uint8)


def test_counts(labels):
    """Per-digit test counts: count * N_TEST / N by largest remainder."""
    counts = np.bincount(labels, minlength=10)
    exact = counts * N_TEST
    k = exact // len(labels)
    remainder = exact % len(labels)
    # Stable sort on -remainder: larger remainder first, ties to smaller digit.
    for c in np.argsort(-remainder, kind="stable")[: N_TEST - k.sum()]:
        k[c] += 1
    return k


def split(labels):
    """Return (train_rows, test_rows), each in ascending csv row order."""
    order = np.random.default_rng(SEED).permutation(len(labels))
    k = test_counts(labels)
    is_test = np.zeros(len(labels), dtype=bool)
    for c in range(10):
        is_test[order[labels[order] == c][: k[c]]] = True
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def images_idx(images):
    n = images.shape[0]
    return struct.pack(">IIII", IMAGES_MAGIC, n, 8, 8) + images.reshape(n, 64).tobytes()


def labels_idx(labels):
    return struct.pack(">II", LABELS_MAGIC, len(labels)) + labels.tobytes()


def read_idx(path, magic, dims):
    """Read an IDX u8 file; check its magic and (where given) its dims."""
    with open(path, "rb") as f:
        data = f.read()
    ndim = magic & 0xFF
    header = struct.unpack(">" + "I" * (1 + ndim), data[: 4 * (1 + ndim)])
    if header[0] != magic:
        sys.exit(f"{path}: magic {header[0]:#010x}, expected {magic:#010x}")
    shape = header[1:]
    if any(d is not None and d != s for d, s in zip(dims, shape)):
        sys.exit(f"{path}: dims {shape}, expected {dims}")
    body = data[4 * (1 + ndim):]
    if len(body) != int(np.prod(shape)):
        sys.exit(f"{path}: {len(body)} data bytes for dims {shape}")
    return np.frombuffer(body, dtype=np.uint8).reshape(shape)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def print_summary(out, split_labels):
    for name in ("train", "test"):
        for fname in FILES[name]:
            path = os.path.join(out, fname)
            print(f"{sha256(path)}  {fname}  ({os.path.getsize(path)} bytes)")
    for name, labels in split_labels.items():
        counts = np.bincount(labels, minlength=10)
        print(f"{name:5s} {len(labels):4d}: " + " ".join(f"{c}:{n}" for c, n in enumerate(counts)))


def write(csv, out):
    pixels, labels = load_csv(csv)
    images = to_u8(pixels).reshape(-1, 8, 8)
    train, test = split(labels)
    for name, rows in (("train", train), ("test", test)):
        img_file, lbl_file = FILES[name]
        with open(os.path.join(out, img_file), "wb") as f:
            f.write(images_idx(images[rows]))
        with open(os.path.join(out, lbl_file), "wb") as f:
            f.write(labels_idx(labels[rows]))
    print_summary(out, {"train": labels[train], "test": labels[test]})


def verify(csv, out):
    pixels, labels = load_csv(csv)
    expected_test = test_counts(labels)
    expected = {"train": np.bincount(labels, minlength=10) - expected_test, "test": expected_test}
    got_images, got_labels = [], []
    for name in ("train", "test"):
        n = int(expected[name].sum())
        img_file, lbl_file = FILES[name]
        imgs = read_idx(os.path.join(out, img_file), IMAGES_MAGIC, (n, 8, 8))
        lbls = read_idx(os.path.join(out, lbl_file), LABELS_MAGIC, (n,))
        if lbls.max() > 9:
            sys.exit(f"{lbl_file}: label {lbls.max()} out of range 0..9")
        if not np.array_equal(np.bincount(lbls, minlength=10), expected[name]):
            sys.exit(f"{lbl_file}: per-digit counts differ from the stratified split")
        got_images.append(imgs.reshape(n, 64))
        got_labels.append(lbls)
    # train + test must be exactly the csv's rows, as a multiset of (image, label).
    def rows(imgs, lbls):
        return sorted(bytes(i) + bytes([l]) for i, l in zip(imgs, lbls))
    if rows(np.concatenate(got_images), np.concatenate(got_labels)) != rows(to_u8(pixels), labels):
        sys.exit("train + test rows are not the csv's 1797 rows")
    print_summary(out, {"train": got_labels[0], "test": got_labels[1]})
    print("verify: OK (magic, dims, label range, per-digit counts, "
          "train + test == the 1797 csv rows as a multiset)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=DEFAULT_CSV, help="scikit-learn's digits.csv.gz")
    ap.add_argument("--out", default=here, help="directory of the IDX files")
    ap.add_argument("--verify", action="store_true", help="check the IDX files instead of writing them")
    args = ap.parse_args()
    (verify if args.verify else write)(args.csv, args.out)


if __name__ == "__main__":
    main()
