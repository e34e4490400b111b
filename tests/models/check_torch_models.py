#!/usr/bin/python3
"""Real models exported from PyTorch give PyTorch's outputs through `smelt run` (relative error under
1e-4 in f32): the models of torch_models.py (an MLP, a small CNN with batch norm, a transformer block
with layer norm, torchvision's resnet18, ...), with random seeded weights; and each exported again with a
dynamic batch (dynamic_axes) runs at another batch size, its symbolic dimension bound from the input.
With the C API's library (libsmelt.so) as well, each dynamic export is also loaded once through it and
run at three batch sizes in one process, where it must stay symbolic (one compile, its kernels shared by
every size: smelt's log shows no re-import at the fed shapes) unless listed in FIXED_BATCH with why.
Usage: check_torch_models.py PATH/TO/smelt [BACKEND [PATH/TO/libsmelt.so]]
(Debian's python3 with torch and torchvision)."""
import ctypes, os, subprocess, sys, tempfile
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import all_models  # noqa: E402

SMELT = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "reference"
LIBRARY = sys.argv[3] if len(sys.argv) > 3 else None
TOLERANCE = 1e-4
# Dynamic exports that import at each fed batch instead of once with a symbolic one, and why.
FIXED_BATCH = {
    "volume": "3-D convolution and pooling are composed with a static batch (frontend/onnx/onnx_volume.cpp)",
}
# ModelExecutable's log line when the symbolic import failed and the model is imported at the fed shapes.
REIMPORTED = "and the fed shapes"


class CTensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_size_t), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t)]


def c_api():
    lib = ctypes.CDLL(LIBRARY)
    lib.smelt_last_error.restype = ctypes.c_char_p
    lib.smelt_model_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.smelt_model_set_input.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(CTensor)]
    lib.smelt_model_run.argtypes = [ctypes.c_void_p]
    lib.smelt_model_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(CTensor)]
    lib.smelt_model_destroy.argtypes = [ctypes.c_void_p]
    return lib


def run_sizes(lib, path, model, sizes, log_path):
    """The dynamic export loaded once through the C API and run at each batch size of `sizes`: the largest
    relative error against PyTorch, and what smelt logged (SMELT_LOG=info, stderr into `log_path`)."""
    saved = os.dup(2)
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 2)
    try:
        handle = ctypes.c_void_p()
        device = b"cpu" if BACKEND in ("reference", "llvm") else BACKEND.encode()
        if lib.smelt_model_load(path.encode(), device, ctypes.byref(handle)) != 0:
            raise RuntimeError(lib.smelt_last_error().decode())
        worst = 0.0
        try:
            for n in sizes:
                x = torch.randn(n, *model.input_shape[1:], generator=torch.Generator().manual_seed(n))
                with torch.no_grad():
                    want = model(x).numpy()
                data = np.ascontiguousarray(x.numpy(), np.float32)
                shape = (ctypes.c_int64 * data.ndim)(*data.shape)
                t = CTensor(0, data.ndim, shape, data.ctypes.data, data.nbytes)
                if lib.smelt_model_set_input(handle, b"input", ctypes.byref(t)) != 0 or lib.smelt_model_run(handle) != 0:
                    raise RuntimeError(f"batch {n}: {lib.smelt_last_error().decode()}")
                out = CTensor()
                if lib.smelt_model_output(handle, 0, ctypes.byref(out)) != 0:
                    raise RuntimeError(lib.smelt_last_error().decode())
                got_shape = tuple(out.shape[i] for i in range(out.rank))
                got = np.frombuffer((ctypes.c_char * out.bytes).from_address(out.data), np.float32).reshape(got_shape)
                if got.shape != want.shape:
                    raise RuntimeError(f"batch {n}: shape {got.shape}, PyTorch's {want.shape}")
                worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
        finally:
            lib.smelt_model_destroy(handle)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
    with open(log_path) as log:
        return worst, log.read()


def main():
    failures = checked = 0
    if LIBRARY:
        os.environ["SMELT_LOG"] = "info"  # read by the library's logger when it starts
    lib = c_api() if LIBRARY else None
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x, opset in all_models(1234):
            model.eval()
            model.input_shape = tuple(x.shape)
            with torch.no_grad():
                want = model(x).numpy()
            path = os.path.join(tmp, f"{name}.onnx")
            torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"], opset_version=opset)
            dynamic = os.path.join(tmp, f"{name}_dynamic.onnx")
            torch.onnx.export(model, x, dynamic, input_names=["input"], output_names=["output"], opset_version=opset,
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
            other = torch.randn(x.shape[0] + 2, *x.shape[1:], generator=torch.Generator().manual_seed(7))
            with torch.no_grad():
                want_other = model(other).numpy()
            for label, file, inputs, expected in ((name, path, x, want),
                                                  (f"{name} (dynamic batch, {other.shape[0]})", dynamic, other, want_other)):
                np.save(os.path.join(tmp, f"{name}_in.npy"), inputs.numpy())
                out_dir = os.path.join(tmp, name)
                r = subprocess.run([SMELT, "run", file, "--backend", BACKEND, "--input",
                                    f"input={tmp}/{name}_in.npy", "--output-dir", out_dir],
                                   capture_output=True, text=True)
                checked += 1
                if r.returncode != 0:
                    print(f"FAIL {label}: smelt run failed: {r.stderr.strip()}")
                    failures += 1
                    continue
                got = np.load(os.path.join(out_dir, "output.npy"))
                rel = float(np.abs(got - expected).max() / np.abs(expected).max())
                ok = got.shape == expected.shape and rel < TOLERANCE
                failures += 0 if ok else 1
                print(f"{'ok  ' if ok else 'FAIL'} {label}: shape {got.shape}, max relative error {rel:.2e}")
            if lib:
                sizes = [1, x.shape[0] + 3, x.shape[0]]
                label = f"{name} (dynamic batch through the C API, batches {sizes} in one process)"
                checked += 1
                try:
                    rel, log = run_sizes(lib, dynamic, model, sizes, os.path.join(tmp, f"{name}_c_api.log"))
                except RuntimeError as e:
                    print(f"FAIL {label}: {e}")
                    failures += 1
                    continue
                reimported = REIMPORTED in log
                why = ""
                if reimported and name not in FIXED_BATCH:
                    why = "; imported at each fed batch instead of once with a symbolic one"
                elif not reimported and name in FIXED_BATCH:
                    why = "; stayed symbolic: take it off FIXED_BATCH"
                ok = rel < TOLERANCE and not why
                failures += 0 if ok else 1
                note = f" (fixed batch: {FIXED_BATCH[name]})" if name in FIXED_BATCH else ", one symbolic import"
                print(f"{'ok  ' if ok else 'FAIL'} {label}: max relative error {rel:.2e}{note}{why}")
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
