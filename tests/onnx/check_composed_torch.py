"""ONNX ops smelt composes from its own against torch (ctest onnx/composed_torch), in the forms the node
tests leave out, in f64: `smelt run` gives torch's result (relative 1e-10) and `smelt grad` of the
outputs' sum torch.autograd's gradients.
  - every converter that builds an op from smelt's (activations, normalizations, index ops, losses,
    Resize, GridSample, pooling with Indices, ...): the cases in composed_torch_cases.py;
  - Einsum against torch.einsum: ellipsis broadcasting, three operands, implicit outputs, outer
    products, diagonals, uppercase labels, labels summed before contracting;
  - TopK against torch.topk (sorted): largest and smallest, inner and outer axes, k = 1 and k = the
    whole axis; and with ties, whose order ONNX fixes (lower index first), against a stable argsort.
Usage: check_composed_torch.py SMELT_BINARY   (Debian's python3, with onnx and torch)"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from composed_torch_cases import Case, all_cases  # noqa: E402

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
    ("ii", [(4, 4)]),
    ("bii->bi", [(2, 3, 3)]),
]


# (shape, k, axis, largest)
TOPK_CASES = [((4, 7), 3, -1, 1), ((4, 7), 2, 0, 0), ((2, 5, 3), 5, 1, 1), ((6,), 1, 0, 0), ((3, 4, 5), 4, -1, 0)]


def einsum_cases(rng):
    """The Einsum forms as converter cases (composed_torch_cases.Case), every operand differentiated."""
    cases = []
    for eq, shapes in CASES:
        names = [f"x{i}" for i in range(len(shapes))]
        inputs = [(n, rng.standard_normal(shape), "wrt") for n, shape in zip(names, shapes)]
        cases.append(Case(f"Einsum {eq} {shapes}", "Einsum", {"equation": eq}, inputs,
                          lambda t, eq=eq, names=names: torch.einsum(eq, *[t[n] for n in names]), 14))
    return cases


def topk_model(shape, k, axis, largest):
    node = helper.make_node("TopK", ["x0", "k"], ["y", "i"], axis=axis, largest=largest)
    k_init = helper.make_tensor("k", TensorProto.INT64, [1], [k])
    graph = helper.make_graph([node], "topk", [helper.make_tensor_value_info("x0", TensorProto.DOUBLE, list(shape))],
                              [helper.make_tensor_value_info(o, t, None) for o, t in (("y", TensorProto.DOUBLE),
                                                                                      ("i", TensorProto.INT64))],
                              [k_init])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def check_topk(smelt, work, rng):
    failures = 0
    for k_case, (shape, k, axis, largest) in enumerate(TOPK_CASES):
        path = os.path.join(work, f"t{k_case}.onnx")
        onnx.save(topk_model(shape, k, axis, largest), path)
        for ties in (False, True):
            # With ties: values from a few levels, so equal elements compete for the same slots.
            x = rng.integers(0, 3, shape).astype(np.float64) if ties else rng.standard_normal(shape)
            np.save(os.path.join(work, "x0.npy"), x)
            out, grads = os.path.join(work, f"tout{k_case}{ties}"), os.path.join(work, f"tgrad{k_case}{ties}")
            rc1, err1 = run(smelt, "run", path, "--input", f"x0={work}/x0.npy", "--output-dir", out)
            rc2, err2 = run(smelt, "grad", path, "--wrt", "x0", "--input", f"x0={work}/x0.npy",
                            "--output-dir", grads)
            label = f"TopK {shape} k={k} axis={axis} largest={largest}{' with ties' if ties else ''}"
            if rc1 or rc2:
                print(f"FAIL {label}: {err1 or err2}")
                failures += 1
                continue
            # ONNX's order: by value, ties by lower index (a stable sort of -x, or of x for smallest).
            order = np.argsort(-x if largest else x, axis=axis, kind="stable")
            want_i = np.take(order, np.arange(k), axis=axis)
            want_y = np.take_along_axis(x, want_i, axis=axis)
            t = torch.tensor(x, requires_grad=True)
            if ties:
                ty = torch.take_along_dim(t, torch.tensor(want_i), dim=axis)
            else:
                ty, ti = torch.topk(t, k, dim=axis, largest=bool(largest), sorted=True)
                assert np.array_equal(ti.numpy(), want_i)
            ty.sum().backward()
            got_y, got_i = np.load(os.path.join(out, "y.npy")), np.load(os.path.join(out, "i.npy"))
            got_g = np.load(os.path.join(grads, "x0.grad.npy"))
            ok = (np.array_equal(got_i, want_i) and np.allclose(got_y, want_y, rtol=1e-12, atol=0)
                  and np.allclose(got_g, t.grad.numpy(), rtol=1e-12, atol=0))
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {label}: values, indices and gradient")
    return failures, 2 * len(TOPK_CASES)


def case_model(case, want):
    graph_inputs, initializers = [], []
    for name, value, role in case.inputs:
        if role == "init":
            initializers.append(numpy_helper.from_array(value, name))
        else:
            dtype = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype]  # Debian's onnx 1.12
            graph_inputs.append(helper.make_tensor_value_info(name, dtype, list(value.shape)))
    node = helper.make_node(case.op, [name for name, _, _ in case.inputs], list(case.outputs), **case.attrs)
    outputs = [helper.make_tensor_value_info(o, TensorProto.DOUBLE if w.is_floating_point() else TensorProto.INT64, None)
               for o, w in zip(case.outputs, want)]
    graph = helper.make_graph([node], case.op, graph_inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])


def check_converters(smelt, work, cases):
    """Each converter case: outputs (floats within 1e-10 relative, integers exactly) and the gradient of
    the sum of the float outputs for every "wrt" input."""
    failures = 0
    for case in cases:
        here = tempfile.mkdtemp(dir=work)  # a folder per case: no file of an earlier case is read
        feeds, wrt, tensors = [], [], {}
        for name, value, role in case.inputs:
            if role != "init":
                np.save(os.path.join(here, f"{name}.npy"), value)
                feeds += ["--input", f"{name}={here}/{name}.npy"]
            t = torch.tensor(value)
            if role == "wrt":
                t.requires_grad_(True)
                wrt.append(name)
            tensors[name] = t
        want = case.torch_fn(tensors)
        want = want if isinstance(want, tuple) else (want,)
        sum(w.sum() for w in want if w.is_floating_point()).backward()
        path = os.path.join(here, "model.onnx")
        onnx.save(case_model(case, want), path)
        out, grads = os.path.join(here, "out"), os.path.join(here, "grad")
        rc, err = run(smelt, "run", path, *feeds, "--output-dir", out)
        if not rc and wrt:
            rc, err = run(smelt, "grad", path, "--wrt", ",".join(wrt), *feeds, "--output-dir", grads)
        if rc:
            print(f"FAIL {case.label}: {err}")
            failures += 1
            continue
        pairs = [(f"output {o}", np.load(os.path.join(out, f"{o}.npy")), w.detach().numpy())
                 for o, w in zip(case.outputs, want)]
        pairs += [(f"d/d{n}", np.load(os.path.join(grads, f"{n}.grad.npy")), tensors[n].grad.numpy()) for n in wrt]
        worst, what = 0.0, ""
        for label, got, w in pairs:
            if got.shape != w.shape:
                error = float("inf")
            elif not np.issubdtype(w.dtype, np.floating):
                error = 0.0 if np.array_equal(got, w) else float("inf")
            else:
                error = float(np.abs(got - w).max(initial=0.0)) / max(1.0, float(np.abs(w).max(initial=0.0)))
            if error > worst:
                worst, what = error, f" ({label})"
        ok = worst <= 1e-10
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {case.label}: {len(case.outputs)} outputs and {len(wrt)} gradients, "
              f"worst relative error {worst:.1e}{what if not ok else ''}")
    return failures, len(cases)


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def main():
    smelt = sys.argv[1]
    rng = np.random.default_rng(int(os.environ.get("SMELT_TEST_SEED", "3")))
    with tempfile.TemporaryDirectory() as work:
        einsum_failures, einsum_count = check_converters(smelt, work, einsum_cases(rng))
        topk_failures, topk_count = check_topk(smelt, work, rng)
        converter_failures, converter_count = check_converters(smelt, work, all_cases(rng))
    failures = einsum_failures + topk_failures + converter_failures
    total = einsum_count + topk_count + converter_count
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
