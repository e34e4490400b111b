"""Every registered op's example exported to ONNX and run by onnxruntime (ctest onnx/export_every_op):
for each op `smelt ops` lists, `smelt ops --example OP` (in f32 where the op takes it, else its first
dtype) is written with `smelt export`, onnxruntime runs the model on random inputs, and its outputs
must equal the reference interpreter's (`smelt run --backend reference`) on the same inputs: floats
within 1e-4 relative (ONNX's forms of a few ops are formulas, gelu's erf, a decomposed grid_sample),
integers and booleans exactly. Composite ops with no ONNX node of their own export their registry
decomposition. The ops that cannot export are listed below with the reason; the export must refuse
them with an error naming the node, and a listed op that starts exporting fails the check until it is
taken off the list, so the list stays true.
Usage: check_export_every_op.py SMELT_BINARY BUILD_DIR"""
import os
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_onnx_export import ensure_venv  # noqa: E402

# Op -> the words its refusal must hold: the node it names, and why.
REFUSED = {
    "all_reduce": ("all_reduce %0", "no ONNX equivalent"),  # collectives across ranks: ONNX has none
    "all_reduce_start": ("all_reduce_start %0", "no ONNX equivalent"),
    "all_reduce_wait": ("all_reduce_start %0", "no ONNX equivalent"),  # its example starts with the start
    "dropout": ("dropout %0", "no deterministic ONNX form"),  # a training mask drawn at run time
    "scatter_reduce": ("scatter_reduce %2", "opset 18"),  # the example's max reduction (its mul exports)
}
TOLERANCE = 1e-4
NUMPY = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
         "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}

RUN_ORT = r"""
import sys, numpy as np, onnxruntime as ort
model, out_dir = sys.argv[1], sys.argv[2]
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
feeds = {i.name: np.load("%s/in_%s.npy" % (out_dir, i.name)) for i in session.get_inputs()}
for o, value in zip(session.get_outputs(), session.run(None, feeds)):
    np.save("%s/ort_%s.npy" % (out_dir, o.name), np.asarray(value))
"""


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def listed_ops(smelt):
    """[(name, dtypes)] from `smelt ops`."""
    ops = []
    for line in run([smelt, "ops"]).stdout.splitlines():
        fields = line.split()
        if fields:
            ops.append((fields[0], fields[1].split("=", 1)[1].split(",")))
    return ops


def graph_inputs(ir_text):
    """[(name, dtype, shape)] of the example's graph inputs, from its signature line."""
    import re
    header = ir_text[ir_text.index("(") + 1:ir_text.index(") {")]
    inputs = []
    for name, dtype, dims in re.findall(r"%([\w.]+): (\w+)\[([^\]]*)\]", header):
        inputs.append((name, dtype, [int(d) for d in dims.split(",") if d.strip()]))
    return inputs


def random_inputs(inputs, seed, positive):
    import numpy as np
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, dtype, shape in inputs:
        if dtype == "bool":
            arrays[name] = rng.integers(0, 2, shape).astype(np.bool_)
        elif dtype[0] in "iu":
            # Small and non-negative: valid as indices, labels, counts and shifts in every example.
            arrays[name] = rng.integers(0, 2, shape).astype(NUMPY[dtype])
        else:
            x = rng.standard_normal(shape)
            arrays[name] = (np.abs(x) + 0.5 if positive else x).astype(NUMPY[dtype])
    return arrays


def widen_bf16_outputs(model):
    """The model with each bf16 output cast to f32 (onnxruntime's Python cannot return bf16 arrays)."""
    import onnx
    from onnx import TensorProto, helper
    m = onnx.load(model)
    changed = False
    for o in m.graph.output:
        if o.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            inner = o.name + "_bf16"
            for node in m.graph.node:
                node.output[:] = [inner if x == o.name else x for x in node.output]
            m.graph.node.append(helper.make_node("Cast", [inner], [o.name], to=TensorProto.FLOAT))
            o.type.tensor_type.elem_type = TensorProto.FLOAT
            changed = True
    if not changed:
        return model
    widened = model[:-5] + "_f32.onnx"
    onnx.save(m, widened)
    return widened


def load(path):
    """An .npy file; bf16 (written as ml_dtypes' 2-byte void dtype) widened to f32."""
    import numpy as np
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a


def compare(got, want):
    """The relative difference of two arrays, or a reason they cannot be compared."""
    import numpy as np
    if got.shape != want.shape:
        return "shapes differ: smelt %s, onnxruntime %s" % (got.shape, want.shape)
    if got.dtype.kind in "biu" or want.dtype.kind in "biu":
        return 0.0 if np.array_equal(got.astype(np.int64), want.astype(np.int64)) else "integer or boolean values differ"
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max() if got.size else 0.0) / scale


def check_op(smelt, python, name, dtypes, work):
    """None when the op passes, else why not."""
    import numpy as np
    dtype = "f32" if "f32" in dtypes else dtypes[0]
    example = run([smelt, "ops", "--example", name, "--dtype", dtype])
    if example.returncode != 0:
        return "no example: " + example.stderr.strip()
    folder = os.path.join(work, name)
    os.makedirs(folder)
    ir = os.path.join(folder, "example.ir")
    with open(ir, "w") as f:
        f.write(example.stdout)
    model = os.path.join(folder, "example.onnx")
    exported = run([smelt, "export", ir, "-o", model])
    if name in REFUSED:
        if exported.returncode == 0:
            return "exports now: take it off REFUSED in %s" % os.path.basename(__file__)
        missing = [w for w in REFUSED[name] if w not in exported.stderr]
        return "refused without naming %s: %s" % (missing, exported.stderr.strip()) if missing else None
    if exported.returncode != 0:
        return "export failed: " + exported.stderr.strip()

    inputs = graph_inputs(example.stdout)
    seed = zlib.crc32(name.encode()) + int(os.environ.get("SMELT_TEST_SEED", "0"))
    for positive in (False, True):  # both signs first; positive values where the op's domain needs them
        arrays = random_inputs(inputs, seed, positive)
        args = []
        for n, a in arrays.items():
            np.save(os.path.join(folder, "in_%s.npy" % n), a)
            args += ["--input", "%s=%s" % (n, os.path.join(folder, "in_%s.npy" % n))]
        reference = run([smelt, "run", ir, "--backend", "reference", "--output-dir", os.path.join(folder, "ref")] + args)
        if reference.returncode == 0:
            outs = [f[:-4] for f in os.listdir(os.path.join(folder, "ref"))]
            if all(np.isfinite(load(os.path.join(folder, "ref", o + ".npy")).astype(np.float64)).all() for o in outs):
                break
    if reference.returncode != 0:
        return "the reference run failed: " + reference.stderr.strip()
    ort = run([python, "-c", RUN_ORT, widen_bf16_outputs(model), folder])
    if ort.returncode != 0:
        return "onnxruntime failed: " + ort.stderr.strip().splitlines()[-1]
    worst = 0.0
    for o in outs:
        got = load(os.path.join(folder, "ref", o + ".npy"))
        ort_file = os.path.join(folder, "ort_%s.npy" % o)
        if not os.path.exists(ort_file):
            return "output %s missing from the exported model" % o
        d = compare(got, load(ort_file))
        if isinstance(d, str):
            return "output %s: %s" % (o, d)
        worst = max(worst, d)
    return None if worst <= TOLERANCE else "onnxruntime differs from the reference by %.2g (relative)" % worst


def main():
    smelt, build = sys.argv[1:3]
    python = ensure_venv(build)
    failures = []
    ops = listed_ops(smelt)
    with tempfile.TemporaryDirectory() as work:
        for name, dtypes in ops:
            why = check_op(smelt, python, name, dtypes, work)
            print("%s %s%s" % ("FAIL" if why else "ok  ", name, ": " + why if why else
                               (" (refused: %s)" % REFUSED[name][1] if name in REFUSED else "")))
            if why:
                failures.append(name)
    unknown = sorted(set(REFUSED) - {n for n, _ in ops})
    if unknown:
        print("FAIL REFUSED names ops that are not registered: %s" % ", ".join(unknown))
        failures += unknown
    print("%d ops: %d exported and matched onnxruntime, %d refused as listed, %d failed" % (
        len(ops), len(ops) - len(REFUSED) - len([f for f in failures if f not in REFUSED]),
        len(REFUSED), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
