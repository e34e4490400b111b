"""The C API (include/smelt/c_api.h) from Python through ctypes, as a caller without a binding package
would use it: load an IR model with a symbolic batch, feed numpy arrays, run, read the outputs back as
arrays and compare them with numpy's arithmetic; train it with cross-entropy and check that the loss
falls; and read an error's message. Usage: test_c_api.py PATH/TO/libsmelt.so"""
import ctypes
import os
import sys
import tempfile

import numpy as np

MODEL = """graph @regress(%x: f32[N,4]) {
  param %w: f32[4,3] = [0.5, -1, 0.25, 2, 0.125, -0.5, 1, 0, 0.75, -0.25, 1.5, 0.5]
  %0 = matmul(%x, %w) : f32[N,3]
  %1 = tanh(%0) : f32[N,3]
  return y = %1
}
"""
W = np.array([0.5, -1, 0.25, 2, 0.125, -0.5, 1, 0, 0.75, -0.25, 1.5, 0.5], np.float32).reshape(4, 3)

F32, I64 = 0, 7
OK, INVALID_ARGUMENT, FAILED = 0, 1, 2


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_size_t), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t)]


class TrainOptions(ctypes.Structure):
    _fields_ = [("loss", ctypes.c_char_p), ("optimizer", ctypes.c_char_p), ("learning_rate", ctypes.c_double),
                ("momentum", ctypes.c_double), ("weight_decay", ctypes.c_double), ("device", ctypes.c_char_p)]


def view(array, dtype):
    """A smelt_tensor over a C-contiguous numpy array (the array must outlive the call)."""
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    t = Tensor(dtype, array.ndim, shape, array.ctypes.data, array.nbytes)
    t._keep = (array, shape)
    return t


def to_numpy(t):
    shape = tuple(t.shape[i] for i in range(t.rank))
    buffer = (ctypes.c_char * t.bytes).from_address(t.data)
    return np.frombuffer(buffer, dtype=np.float32).reshape(shape).copy()


def main(library):
    lib = ctypes.CDLL(library)
    lib.smelt_last_error.restype = ctypes.c_char_p
    lib.smelt_version.restype = ctypes.c_char_p
    lib.smelt_model_input_name.restype = ctypes.c_char_p
    lib.smelt_model_input_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.smelt_model_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.smelt_model_set_input.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Tensor)]
    lib.smelt_model_run.argtypes = [ctypes.c_void_p]
    lib.smelt_model_output.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Tensor)]
    lib.smelt_model_destroy.argtypes = [ctypes.c_void_p]
    lib.smelt_train_step_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(TrainOptions), ctypes.POINTER(Tensor),
                                            ctypes.POINTER(Tensor), ctypes.POINTER(ctypes.c_void_p)]
    lib.smelt_train_step_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor),
                                         ctypes.POINTER(ctypes.c_double)]
    lib.smelt_train_step_destroy.argtypes = [ctypes.c_void_p]
    assert lib.smelt_c_api_version() == 1
    print("smelt", lib.smelt_version().decode())

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "regress.ir").encode()
        with open(path, "w") as f:
            f.write(MODEL)
        model = ctypes.c_void_p()
        assert lib.smelt_model_load(path, b"cpu", ctypes.byref(model)) == OK, lib.smelt_last_error()
        assert lib.smelt_model_input_name(model, 0) == b"x"
        rng = np.random.default_rng(int(os.environ.get("SMELT_TEST_SEED", "7")))
        for n in (3, 10):
            x = rng.standard_normal((n, 4)).astype(np.float32)
            assert lib.smelt_model_set_input(model, b"x", ctypes.byref(view(x, F32))) == OK, lib.smelt_last_error()
            assert lib.smelt_model_run(model) == OK, lib.smelt_last_error()
            out = Tensor()
            assert lib.smelt_model_output(model, 0, ctypes.byref(out)) == OK, lib.smelt_last_error()
            y = to_numpy(out)
            want = np.tanh(x.astype(np.float64) @ W.astype(np.float64))
            assert y.shape == (n, 3), y.shape
            assert np.allclose(y, want, rtol=1e-5, atol=1e-6), (y, want)
        # An error: status and message.
        bad = np.zeros((2, 5), np.float32)
        assert lib.smelt_model_set_input(model, b"z", ctypes.byref(view(bad, F32))) == INVALID_ARGUMENT
        assert b"'z'" in lib.smelt_last_error(), lib.smelt_last_error()
        lib.smelt_model_destroy(model)

        # Training: a regression target through tanh, mean squared error, Adam.
        x = rng.standard_normal((16, 4)).astype(np.float32)
        target = np.tanh(x @ (W * 0.5)).astype(np.float32)
        options = TrainOptions(b"mse", b"adam", 0.05, 0.0, 0.0, b"cpu")
        step = ctypes.c_void_p()
        xv, tv = view(x, F32), view(target, F32)
        assert lib.smelt_train_step_create(path, ctypes.byref(options), ctypes.byref(xv), ctypes.byref(tv),
                                           ctypes.byref(step)) == OK, lib.smelt_last_error()
        losses = []
        for _ in range(100):
            loss = ctypes.c_double()
            assert lib.smelt_train_step_run(step, ctypes.byref(xv), ctypes.byref(tv), ctypes.byref(loss)) == OK
            losses.append(loss.value)
        lib.smelt_train_step_destroy(step)
        assert losses[-1] < losses[0] * 0.2, (losses[0], losses[-1])
        print("ctypes: outputs match numpy; mse fell from %.4f to %.4f" % (losses[0], losses[-1]))


if __name__ == "__main__":
    main(sys.argv[1])
