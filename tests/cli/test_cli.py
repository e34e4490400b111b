#!/usr/bin/python3
"""End-to-end tests of the `smelt` CLI: ops, dump (text and dot), run (outputs, errors).
Usage: test_cli.py PATH/TO/smelt SOURCE_DIR   (run by ctest with Debian's python3 and numpy)."""
import os, subprocess, sys, tempfile, unittest
import numpy as np

SMELT = sys.argv[1] if len(sys.argv) > 1 else "build/bin/smelt"
SRC = sys.argv[2] if len(sys.argv) > 2 else "."
MODEL = os.path.join(SRC, "examples/models/tiny_cnn.onnx")
IMAGE = os.path.join(SRC, "examples/models/tiny_cnn_input.npy")
EXPECTED = os.path.join(SRC, "examples/models/tiny_cnn_expected.npy")

IR = """graph @scale(%x: f32[2,3], %k: f32[3]) {
  %0 = mul(%x, %k) : f32[2,3]
  %1 = add(%0, %x) : f32[2,3]
  return "y/out" = %1
}
"""


def smelt(*args, stdin=None):
    return subprocess.run([SMELT, *args], input=stdin, capture_output=True, text=True)


class Cli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write_ir(self):
        path = os.path.join(self.dir, "g.ir")
        with open(path, "w") as f:
            f.write(IR)
        return path

    def test_ops_lists_every_op_with_dtypes_and_backends(self):
        r = smelt("ops")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = {l.split()[0]: l for l in r.stdout.splitlines()}
        for op in ["add", "conv2d", "matmul", "reduce_sum", "softmax", "grid_sample", "dropout", "cast"]:
            self.assertIn(op, lines)
        self.assertIn("dtypes=f16,bf16,f32,f64", lines["exp"])
        self.assertIn("backends=reference", lines["exp"])

    def test_dump_text_round_trips_and_reads_stdin(self):
        r = smelt("dump", self.write_ir())
        self.assertEqual(r.returncode, 0, r.stderr)
        again = smelt("dump", "-", stdin=r.stdout)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, r.stdout)

    def test_dump_dot(self):
        r = smelt("dump", self.write_ir(), "--format", "dot")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("digraph"))
        self.assertIn("mul %0", r.stdout)

    def test_dump_onnx_model(self):
        r = smelt("dump", MODEL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("conv2d", r.stdout)
        self.assertIn("%image: f32[1,1,8,8]", r.stdout)

    def test_run_writes_outputs_with_sanitized_names(self):
        x = np.random.default_rng().uniform(0.5, 2, (2, 3)).astype(np.float32)
        k = np.random.default_rng().uniform(0.5, 2, (3,)).astype(np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        np.save(os.path.join(self.dir, "k.npy"), k)
        r = smelt("run", self.write_ir(), "--input", f"x={self.dir}/x.npy", "--input", f"k={self.dir}/k.npy",
                  "--output-dir", os.path.join(self.dir, "out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        y = np.load(os.path.join(self.dir, "out", "y_out.npy"))
        np.testing.assert_allclose(y, x * k + x, rtol=1e-6)

    def test_run_bundled_onnx_model_matches_pytorch(self):
        r = smelt("run", MODEL, "--input", f"image={IMAGE}", "--output-dir", self.dir, "--backend", "reference")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("probabilities: f32[1,10]", r.stdout)
        got = np.load(os.path.join(self.dir, "probabilities.npy"))
        want = np.load(EXPECTED)
        self.assertLess(np.abs(got - want).max() / np.abs(want).max(), 1e-4)

    def assert_one_line_error(self, r, *fragments):
        self.assertNotEqual(r.returncode, 0)
        err = r.stderr.strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        for f in fragments:
            self.assertIn(f, err)

    def test_missing_input_is_a_one_line_error(self):
        np.save(os.path.join(self.dir, "x.npy"), np.ones((2, 3), np.float32))
        r = smelt("run", self.write_ir(), "--input", f"x={self.dir}/x.npy")
        self.assert_one_line_error(r, "input 'k'", "missing")

    def test_wrong_shape_or_dtype_is_a_one_line_error(self):
        np.save(os.path.join(self.dir, "x.npy"), np.ones((3, 2), np.float32))
        np.save(os.path.join(self.dir, "k.npy"), np.ones((3,), np.float64))
        r = smelt("run", self.write_ir(), "--input", f"x={self.dir}/x.npy", "--input", f"k={self.dir}/k.npy")
        self.assert_one_line_error(r, "expects f32[2,3]", "f32[3,2]")
        np.save(os.path.join(self.dir, "x.npy"), np.ones((2, 3), np.float32))
        r = smelt("run", self.write_ir(), "--input", f"x={self.dir}/x.npy", "--input", f"k={self.dir}/k.npy")
        self.assert_one_line_error(r, "expects f32[3]", "f64[3]")

    def test_unreadable_files_are_one_line_errors(self):
        r = smelt("run", self.write_ir(), "--input", f"x={self.dir}/nope.npy")
        self.assert_one_line_error(r, "nope.npy")
        r = smelt("run", os.path.join(self.dir, "missing.onnx"))
        self.assert_one_line_error(r, "missing.onnx")
        garbage = os.path.join(self.dir, "garbage.onnx")
        with open(garbage, "wb") as f:
            f.write(os.urandom(300))
        r = smelt("run", garbage)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("error", r.stderr)

    def test_unknown_backend(self):
        r = smelt("run", self.write_ir(), "--backend", "tpu")
        self.assertNotEqual(r.returncode, 0)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
