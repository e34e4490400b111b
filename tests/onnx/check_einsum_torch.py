"""ONNX Einsum against torch.einsum (ctest onnx/einsum_torch): for equations the node tests leave out
(ellipsis broadcasting, three operands, implicit outputs, outer products, diagonals, uppercase labels,
labels summed before contracting), `smelt run` gives torch's result and `smelt grad` of the output's sum
torch.autograd's gradients, in f64 (relative 1e-10).
Usage: check_einsum_torch.py SMELT_BINARY   (Debian's python3, with onnx and torch)"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

# (equation, operand shapes)
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,kj", [(3, 4), (5, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("abc,cd->", [(2, 3, 4), (4, 2)]),
    ("Ab,bC->CA", [(3, 2), (2, 4)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("...i,i", [(2, 3, 4), (4,)]),
    ("ij->ji", [(3, 5)]),
]


def model(eq, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=eq)
    inputs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, list(s)) for n, s in zip(names, shapes)]
    graph = helper.make_graph([node], "einsum", inputs, [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), names


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def main():
    smelt = sys.argv[1]
    rng = np.random.default_rng(int(os.environ.get("SMELT_TEST_SEED", "3")))
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for k, (eq, shapes) in enumerate(CASES):
            m, names = model(eq, shapes)
            path = os.path.join(work, f"e{k}.onnx")
            onnx.save(m, path)
            xs = [rng.standard_normal(s) for s in shapes]
            feeds = []
            for n, x in zip(names, xs):
                np.save(os.path.join(work, f"{n}.npy"), x)
                feeds += ["--input", f"{n}={work}/{n}.npy"]
            ts = [torch.tensor(x, requires_grad=True) for x in xs]
            want = torch.einsum(eq, *ts)
            want.sum().backward()
            out, grads = os.path.join(work, f"out{k}"), os.path.join(work, f"grad{k}")
            rc1, err1 = run(smelt, "run", path, *feeds, "--output-dir", out)
            rc2, err2 = run(smelt, "grad", path, "--wrt", ",".join(names), *feeds, "--output-dir", grads)
            if rc1 or rc2:
                print(f"FAIL {eq}: {err1 or err2}")
                failures += 1
                continue
            pairs = [(np.load(os.path.join(out, "y.npy")), want.detach().numpy())]
            pairs += [(np.load(os.path.join(grads, f"{n}.grad.npy")), t.grad.numpy()) for n, t in zip(names, ts)]
            worst = max(float(np.abs(g - w).max()) / max(1.0, float(np.abs(w).max())) if g.shape == w.shape
                        else float("inf") for g, w in pairs)
            ok = worst <= 1e-10
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {eq} {shapes}: output and {len(names)} gradients, worst relative error {worst:.1e}")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
