#!/usr/bin/python3
"""The model API's layers against torch.nn's modules on the same weights (ctest models/torch_layers): for each
case of tests/models/torch_layer_check.cpp, PyTorch's module with random weights writes them as safetensors;
smelt's layer loads them (strictly), runs in evaluation mode on the same input, and its output and the gradients
of the output's sum (input and every parameter) must match torch.autograd's (f32, relative 1e-4 of the largest).
Usage: check_torch_layers.py PATH/TO/smelt_torch_layer_check   (Debian's python3 with torch)"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn


def causal(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def padding(keys):
    mask = torch.zeros(2, keys, dtype=torch.bool)
    mask[1, keys - 2:] = True
    return mask


def mha():
    m = nn.MultiheadAttention(16, 4, batch_first=True)
    return m, torch.randn(2, 5, 16), lambda x: m(x, x, x, attn_mask=causal(5), key_padding_mask=padding(5),
                                                 need_weights=False)[0]


def encoder_norm_first():
    m = nn.TransformerEncoderLayer(16, 4, 24, activation="gelu", batch_first=True, norm_first=True)
    return m, torch.randn(2, 5, 16), lambda x: m(x, src_mask=causal(5), src_key_padding_mask=padding(5))


def plain(module, x):
    return module, x, module


CASES = {
    "lstm": lambda: plain(nn.LSTM(5, 7, num_layers=2, bidirectional=True), torch.randn(4, 3, 5)),
    "lstm_batch_first": lambda: plain(nn.LSTM(5, 6, batch_first=True, bias=False), torch.randn(3, 4, 5)),
    "gru": lambda: plain(nn.GRU(5, 6, num_layers=2, bidirectional=True, batch_first=True), torch.randn(3, 4, 5)),
    "mha": mha,
    "encoder": lambda: plain(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1), torch.randn(5, 2, 16)),
    "encoder_norm_first_gelu": encoder_norm_first,
    "group_norm": lambda: plain(nn.GroupNorm(3, 6), torch.randn(2, 6, 4, 5)),
    "upsample_nearest": lambda: plain(nn.Upsample(scale_factor=2, mode="nearest"), torch.randn(2, 3, 4, 5)),
    "upsample_bilinear": lambda: plain(nn.Upsample(scale_factor=1.5, mode="bilinear"), torch.randn(2, 3, 4, 6)),
    "upsample_bilinear_align": lambda: plain(nn.Upsample(size=(7, 9), mode="bilinear", align_corners=True),
                                             torch.randn(2, 3, 4, 6)),
    "upsample_bicubic": lambda: plain(nn.Upsample(scale_factor=2, mode="bicubic"), torch.randn(1, 2, 4, 5)),
    "pixel_shuffle": lambda: plain(nn.PixelShuffle(2), torch.randn(2, 8, 3, 4)),
    "embedding_padding": lambda: plain(nn.Embedding(10, 4, padding_idx=3), torch.tensor([[3, 1, 9, 3, 0], [2, 3, 5, 7, 3]])),
}


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().numpy().astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def output_of(result):
    return result[0] if isinstance(result, tuple) else result


def main():
    tool = sys.argv[1]
    torch.manual_seed(int(os.environ.get("SMELT_TEST_SEED", "11")))
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for name, make in CASES.items():
            module, x, call = make()
            module.eval()
            with torch.no_grad():  # away from the initial values (zero biases, unit norms)
                for p in module.parameters():
                    p.add_(0.1 * torch.randn_like(p))
            params = dict(module.named_parameters())
            weights, inp, out = (os.path.join(work, f"{name}{s}") for s in (".safetensors", "_in.npy", ""))
            save_safetensors(weights, params)
            np.save(inp, x.numpy())
            os.makedirs(out)
            floating = x.is_floating_point()
            if floating:
                x = x.clone().requires_grad_(True)
            want_y = output_of(call(x))
            want_y.sum().backward()
            want = {"output": want_y.detach().numpy()}
            if floating:
                want["input.grad"] = x.grad.numpy()
            want.update({f"{k}.grad": p.grad.numpy() for k, p in params.items()})
            r = subprocess.run([tool, name, weights, inp, out], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: {r.stderr.strip()}")
                failures += 1
                continue
            worst, worst_name = 0.0, ""
            for key, w in want.items():
                got = np.load(os.path.join(out, key + ".npy"))
                err = float(np.abs(got - w).max()) / max(float(np.abs(w).max()), 1e-6) if got.shape == w.shape else float("inf")
                if err > worst:
                    worst, worst_name = err, key
            ok = worst < 1e-4
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: output and {len(want) - 1} gradients, worst relative error "
                  f"{worst:.1e} ({worst_name})")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
