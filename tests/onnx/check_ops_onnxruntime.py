"""ONNX nodes in the forms the node tests leave out, against onnxruntime (ctest onnx/ops_onnxruntime):
LSTM, GRU and RNN with both directions and per-sequence lengths (a reverse pass starting at each
sequence's own last step), initial states, peepholes, clip, input_forget, linear_before_reset and
non-default activations with their alpha and beta; and GroupNormalization (opset 18's per-group and
opset 21's per-channel affine, newer than Debian's ONNX 1.12); and ScatterND and ScatterElements with the mul, max and
min reductions over repeated indices (opset 18). The models are written with Debian's onnx package;
onnxruntime (PyPI, in BUILD/onnx-export-venv, shared with onnx/export_onnxruntime) computes the
expected outputs; `smelt run` must match them (f32, 1e-5 relative).
Usage: check_ops_onnxruntime.py SMELT_BINARY BUILD_DIR"""
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_onnx_export import ensure_venv  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
LENGTHS = np.array([5, 2, 4], dtype=np.int32)


def case(name, op, gates, attrs, lengths=True, peepholes=False, initial=True):
    """A one-node model with random weights as initializers; its input X and its outputs."""
    rng = np.random.default_rng(zlib.crc32(name.encode()) + int(os.environ.get("SMELT_TEST_SEED", "0")))
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    inits = {
        "W": rng.uniform(-0.6, 0.6, (dirs, gates * HIDDEN, INPUT)),
        "R": rng.uniform(-0.6, 0.6, (dirs, gates * HIDDEN, HIDDEN)),
        "B": rng.uniform(-0.3, 0.3, (dirs, 2 * gates * HIDDEN)),
    }
    inputs = ["X", "W", "R", "B", "", "", "", ""]
    if lengths:
        inputs[4] = "L"
    if initial:
        inits["H0"] = rng.uniform(-0.5, 0.5, (dirs, BATCH, HIDDEN))
        inputs[5] = "H0"
        if op == "LSTM":
            inits["C0"] = rng.uniform(-0.5, 0.5, (dirs, BATCH, HIDDEN))
            inputs[6] = "C0"
    if peepholes:
        inits["P"] = rng.uniform(-0.5, 0.5, (dirs, 3 * HIDDEN))
        inputs[7] = "P"
    used = 8 if op == "LSTM" else 6
    while used > 0 and inputs[used - 1] == "":
        used -= 1
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, inputs[:used], outputs, hidden_size=HIDDEN, **attrs)
    initializers = [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v.astype(np.float32).ravel()) for k, v in inits.items()]
    if lengths:
        initializers.append(helper.make_tensor("L", TensorProto.INT32, LENGTHS.shape, LENGTHS))
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    return name, model, x, outputs


CASES = [
    case("lstm_bidirectional_lengths_peepholes", "LSTM", 4, {"direction": "bidirectional"}, peepholes=True),
    case("lstm_reverse_lengths_clip", "LSTM", 4, {"direction": "reverse", "clip": 0.7}),
    case("lstm_input_forget", "LSTM", 4, {"input_forget": 1}, lengths=False),
    case("lstm_activations", "LSTM", 4, {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"],
                                        "activation_alpha": [0.3, 0.05], "activation_beta": [0.6]}, lengths=False),
    case("gru_bidirectional_lengths_linear_before_reset", "GRU", 3,
         {"direction": "bidirectional", "linear_before_reset": 1}),
    case("gru_reverse_lengths", "GRU", 3, {"direction": "reverse"}, initial=False),
    case("gru_activations", "GRU", 3, {"activations": ["Sigmoid", "Softsign", "HardSigmoid", "Tanh"],
                                      "direction": "bidirectional"}, lengths=False),
    case("rnn_bidirectional_lengths_relu", "RNN", 1, {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}),
    case("rnn_reverse_lengths_affine", "RNN", 1, {"direction": "reverse", "activations": ["Affine"],
                                                 "activation_alpha": [0.5], "activation_beta": [0.1]}),
]

def group_norm_case(name, opset, affine_size):
    """GroupNormalization over X [2, 6, 3, 4] in 3 groups; its input X and output Y."""
    rng = np.random.default_rng(zlib.crc32(name.encode()) + int(os.environ.get("SMELT_TEST_SEED", "0")))
    node = helper.make_node("GroupNormalization", ["X", "scale", "bias"], ["Y"], num_groups=3, epsilon=1e-4)
    inits = [helper.make_tensor(k, TensorProto.FLOAT, [affine_size], rng.uniform(0.5, 1.5, affine_size).astype(np.float32))
             for k in ("scale", "bias")]
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 6, 3, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return name, model, rng.standard_normal((2, 6, 3, 4)).astype(np.float32), ["Y"]


CASES += [group_norm_case("group_norm_opset18_per_group", 18, 3),
          group_norm_case("group_norm_opset21_per_channel", 21, 6)]


def scatter_case(name, op, reduction):
    """ScatterND / ScatterElements (opset 18) of random updates into X [4, 3, 5] with a reduction; indices repeat,
    so the updates landing on one element combine in order."""
    rng = np.random.default_rng(zlib.crc32(name.encode()) + int(os.environ.get("SMELT_TEST_SEED", "0")))
    if op == "ScatterND":
        indices = np.array([[1, 2], [3, 0], [1, 2], [0, 1]], dtype=np.int64)  # [4, 2]: rows of X[i, j, :]
        updates = rng.standard_normal((4, 5)).astype(np.float32)
        attrs = {"reduction": reduction}
    else:
        indices = rng.integers(-3, 3, size=(4, 2, 5)).astype(np.int64)  # along axis 1 (3), negatives wrap
        updates = rng.standard_normal((4, 2, 5)).astype(np.float32)
        attrs = {"reduction": reduction, "axis": 1}
    node = helper.make_node(op, ["X", "indices", "updates"], ["Y"], **attrs)
    inits = [helper.make_tensor("indices", TensorProto.INT64, indices.shape, indices.flatten()),
             helper.make_tensor("updates", TensorProto.FLOAT, updates.shape, updates.flatten())]
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 3, 5])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return name, model, rng.standard_normal((4, 3, 5)).astype(np.float32), ["Y"]


CASES += [scatter_case(f"{op.lower()}_{reduction}", op, reduction)
          for op in ("ScatterND", "ScatterElements") for reduction in ("mul", "max", "min")]

RUN_ORT = """
import sys, numpy as np, onnxruntime as ort
work, names = sys.argv[1], sys.argv[2:]
for name in names:
    s = ort.InferenceSession(f"{work}/{name}.onnx", providers=["CPUExecutionProvider"])
    for out, value in zip([o.name for o in s.get_outputs()], s.run(None, {"X": np.load(f"{work}/{name}_x.npy")})):
        np.save(f"{work}/{name}_ort_{out}.npy", value)
"""


def main():
    smelt, build = sys.argv[1], sys.argv[2]
    python = ensure_venv(build)
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for name, model, x, _ in CASES:
            onnx.save(model, os.path.join(work, name + ".onnx"))
            np.save(os.path.join(work, name + "_x.npy"), x)
        subprocess.run([python, "-c", RUN_ORT, work] + [c[0] for c in CASES], check=True)
        for name, _, _, outputs in CASES:
            out_dir = os.path.join(work, name)
            r = subprocess.run([smelt, "run", os.path.join(work, name + ".onnx"), "--input",
                                "X=" + os.path.join(work, name + "_x.npy"), "--output-dir", out_dir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: smelt run failed: {r.stderr.strip()}")
                failures += 1
                continue
            worst = 0.0
            for o in outputs:
                want = np.load(os.path.join(work, f"{name}_ort_{o}.npy"))
                got = np.load(os.path.join(out_dir, o + ".npy"))
                err = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max())) if got.shape == want.shape else float("inf")
                worst = max(worst, err)
            ok = worst <= 1e-5
            failures += 0 if ok else 1
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(outputs)} outputs, worst relative error {worst:.2e}")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
