#!/usr/bin/python3
"""End-to-end tests of the `smelt` CLI: ops, dump (text and dot), run (outputs, errors).
Usage: test_cli.py PATH/TO/smelt SOURCE_DIR [HAVE_ONNX]   (run by ctest with Debian's python3 and numpy;
HAVE_ONNX 0: the build has no ONNX import, and the tests on the bundled ONNX model are skipped)."""
import json, os, subprocess, sys, tempfile, unittest
import numpy as np

SMELT = sys.argv[1] if len(sys.argv) > 1 else "build/bin/smelt"
SRC = sys.argv[2] if len(sys.argv) > 2 else "."
MODEL = os.path.join(SRC, "examples/models/tiny_cnn.onnx")
IMAGE = os.path.join(SRC, "examples/models/tiny_cnn_input.npy")
EXPECTED = os.path.join(SRC, "examples/models/tiny_cnn_expected.npy")
HAVE_ONNX = (sys.argv[3] if len(sys.argv) > 3 else "1") == "1"
needs_onnx = unittest.skipUnless(HAVE_ONNX, "this build has no ONNX import (SMELT_WITH_ONNX=OFF)")

IR = """graph @scale(%x: f32[2,3], %k: f32[3]) {
  %0 = mul(%x, %k) : f32[2,3]
  %1 = add(%0, %x) : f32[2,3]
  return "y/out" = %1
}
"""


def smelt(*args, stdin=None, env=None):
    return subprocess.run([SMELT, *args], input=stdin, capture_output=True, text=True,
                          env=None if env is None else dict(os.environ, **env))


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
        self.assertIn("backends=reference,llvm", lines["exp"])
        self.assertRegex(lines["matmul"], r"backends=reference,llvm(,opencl)?,cuda,hip +differentiable=yes")

    def test_ops_example_prints_a_graph_that_runs_in_the_dtype_asked(self):
        r = smelt("ops", "--example", "softmax")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("softmax(", r.stdout)
        self.assertIn("f32[", r.stdout)
        self.assertNotIn("$T", r.stdout)
        f64 = smelt("ops", "--example", "softmax", "--dtype", "f64")
        self.assertEqual(f64.returncode, 0, f64.stderr)
        self.assertIn("f64[", f64.stdout)
        self.assertNotIn("f32[", f64.stdout)
        again = smelt("dump", "-", stdin=f64.stdout)
        self.assertEqual(again.returncode, 0, again.stderr)
        # An op without f32 is written in its first dtype; unknown ops and dtypes it does not take are errors.
        self.assertIn("bool[", smelt("ops", "--example", "not").stdout)
        bad = smelt("ops", "--example", "no_such_op")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("no op named 'no_such_op'", bad.stderr)
        wrong = smelt("ops", "--example", "exp", "--dtype", "i32")
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("exp takes f16,bf16,f32,f64, not 'i32'", wrong.stderr)

    def test_dump_text_round_trips_and_reads_stdin(self):
        r = smelt("dump", self.write_ir())
        self.assertEqual(r.returncode, 0, r.stderr)
        again = smelt("dump", "-", stdin=r.stdout)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, r.stdout)

    def test_kernels_runs_named_kernel_passes_and_dumps_each(self):
        softmax = os.path.join(self.dir, "softmax.ir")
        with open(softmax, "w") as f:
            f.write("graph @s(%x: f32[4,512]) {\n  %0 = softmax(%x) {axis = 1} : f32[4,512]\n  return y = %0\n}\n")
        raw = smelt("kernels", softmax, "--kernel-passes", "none")
        self.assertEqual(raw.returncode, 0, raw.stderr)
        self.assertNotIn("threads", raw.stdout)
        blocks = smelt("kernels", softmax, "--kernel-passes", "map-to-blocks")
        self.assertEqual(blocks.returncode, 0, blocks.stderr)
        self.assertIn("domain [4] threads 256", blocks.stdout)
        self.assertIn("split combine(max)", blocks.stdout)
        bad = smelt("kernels", softmax, "--kernel-passes", "cse,unroll")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("unknown kernel pass 'unroll'", bad.stderr)
        dumps = os.path.join(self.dir, "dumps")
        env = dict(os.environ, SMELT_DUMP_DIR=dumps)
        r = subprocess.run([SMELT, "kernels", softmax], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        names = sorted(os.listdir(os.path.join(dumps, "kernels")))
        self.assertIn("fused_0.00-before-collapse-loops.kernel", names)
        self.assertIn("fused_0.06-dce.kernel", names)

    def test_profile_names_each_kernels_ops_and_how_it_was_timed(self):
        softmax = os.path.join(self.dir, "softmax.ir")
        with open(softmax, "w") as f:
            f.write("graph @s(%x: f32[4,512]) {\n  %0 = softmax(%x) {axis = 1} : f32[4,512]\n  return y = %0\n}\n")
        env = dict(os.environ, SMELT_PROFILE="1")
        r = subprocess.run([SMELT, "bench", softmax, "--runs", "3"], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(timed: host)", r.stderr)
        self.assertIn("fused %0 = fused (4x512) [reduce_max %0, sub %1, exp %2, reduce_sum %3, div %4]", r.stderr)
        # On OpenCL (PoCL here) each step is timed on the device between two events of the profiling queue,
        # as on CUDA; `bench --device-time` times resident runs the same way.
        if "opencl:0" in smelt("devices").stdout:
            r = subprocess.run([SMELT, "bench", softmax, "--runs", "3", "--backend", "opencl", "--device-time"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("(timed: device events)", r.stderr)
            self.assertIn("(device events)", r.stdout)

    def test_dump_dot(self):
        r = smelt("dump", self.write_ir(), "--format", "dot")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("digraph"))
        self.assertIn("mul %0", r.stdout)

    @needs_onnx
    def test_dump_onnx_model(self):
        r = smelt("dump", MODEL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("conv2d", r.stdout)
        self.assertIn("%image: f32[1,1,8,8]", r.stdout)

    @needs_onnx
    def test_dump_no_values_elides_weights(self):
        full = smelt("dump", MODEL)
        short = smelt("dump", "--no-values", MODEL)
        self.assertEqual(short.returncode, 0, short.stderr)
        self.assertIn("conv2d", short.stdout)
        self.assertIn("...", short.stdout)
        self.assertNotRegex(short.stdout, r'x"[0-9a-f]{8}')  # no hex bodies
        self.assertLess(len(short.stdout), len(full.stdout) / 2)

    def test_version(self):
        r = smelt("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^smelt \d+\.\d+\.\d+")
        self.assertIn("backends:", r.stdout)

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

    @needs_onnx
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

    SYMBOLIC_IR = """graph @rows(%x: f32[N,3], %k: f32[3]) {
  dim N in [1, 64]
  %0 = mul(%x, %k) : f32[N,3]
  %1 = softmax(%0) {axis = 1} : f32[N,3]
  return y = %1
}
"""

    def test_symbolic_dims_bind_from_inputs_or_dim(self):
        path = os.path.join(self.dir, "rows.ir")
        with open(path, "w") as f:
            f.write(self.SYMBOLIC_IR)
        k = np.random.default_rng().uniform(0.5, 2, (3,)).astype(np.float32)
        np.save(os.path.join(self.dir, "k.npy"), k)
        # run keeps the graph symbolic: the second process, at another size, finds every kernel in the cache.
        env = {"SMELT_CACHE_DIR": os.path.join(self.dir, "cache"), "SMELT_LOG": "info"}
        for n in (1, 5):
            x = np.random.default_rng().uniform(-2, 2, (n, 3)).astype(np.float32)
            np.save(os.path.join(self.dir, "x.npy"), x)
            r = smelt("run", path, "--input", f"x={self.dir}/x.npy", "--input", f"k={self.dir}/k.npy",
                      "--output-dir", self.dir, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"y: f32[{n},3]", r.stdout)
            self.assertIn(f"N={n}: ", r.stderr)
            if n == 5:
                self.assertIn("of them shared by every size, 0 compiled (not from a cache)", r.stderr)
            e = np.exp(x * k - (x * k).max(axis=1, keepdims=True))
            np.testing.assert_allclose(np.load(os.path.join(self.dir, "y.npy")), e / e.sum(axis=1, keepdims=True),
                                       rtol=1e-5)
        # dump keeps the symbols; the commands that compile bind them with --dim.
        r = smelt("dump", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dim N in [1, 64]", r.stdout)
        self.assertIn("%x: f32[N,3]", r.stdout)
        r = smelt("dump", path, "--dim", "N=8")
        self.assertIn("%x: f32[8,3]", r.stdout)
        r = smelt("kernels", path, "--dim", "N=8")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kernel", r.stdout)
        r = smelt("bench", path, "--dim", "N=16", "--runs", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("median_ms", r.stdout)
        self.assert_one_line_error(smelt("kernels", path), "dimension N is not bound", "--dim N=")
        self.assert_one_line_error(smelt("bench", path, "--dim", "N=65", "--runs", "1"), "N = 65 is outside its range [1, 64]")
        self.assert_one_line_error(smelt("kernels", path, "--dim", "M=3"), "no symbolic dimension M")
        self.assert_one_line_error(smelt("run", path, "--dim", "N=2", "--input", f"x={self.dir}/x.npy",
                                         "--input", f"k={self.dir}/k.npy"), "input 'x' dimension #0 is N = 5, but --dim made N = 2")
        self.assert_one_line_error(smelt("kernels", path, "--dim", "N=x"), "--dim 'N=x'")

    @needs_onnx
    def test_onnx_static_operands_given_as_inputs_take_their_values(self):
        import onnx
        from onnx import helper, TensorProto
        graph = helper.make_graph(
            [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_by_input")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6]),
             helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        path = os.path.join(self.dir, "reshape.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        x = np.random.default_rng().uniform(-2, 2, (4, 6)).astype(np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        for shape in ((4, 3, 2), (2, 2, 6)):
            np.save(os.path.join(self.dir, "shape.npy"), np.array(shape, np.int64))
            r = smelt("run", path, "--input", f"x={self.dir}/x.npy", "--input", f"shape={self.dir}/shape.npy",
                      "--output-dir", self.dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            np.testing.assert_array_equal(np.load(os.path.join(self.dir, "y.npy")), x.reshape(shape))
        self.assert_one_line_error(smelt("kernels", path, "--dim", "batch=4"), "reshape_by_input", "must be static")

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

    def test_ops_says_which_ops_are_differentiable(self):
        lines = {l.split()[0]: l for l in smelt("ops").stdout.splitlines()}
        self.assertIn("differentiable=yes", lines["conv2d"])
        self.assertIn("differentiable=yes", lines["softmax"])
        self.assertIn("differentiable=no", lines["eq"])

    def test_grad_writes_gradients_of_the_sum_of_outputs(self):
        rng = np.random.default_rng()
        x = rng.uniform(0.5, 2, (2, 3)).astype(np.float32)
        k = rng.uniform(0.5, 2, (3,)).astype(np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        np.save(os.path.join(self.dir, "k.npy"), k)
        out = os.path.join(self.dir, "grads")
        r = smelt("grad", self.write_ir(), "--wrt", "x,k", "--input", f"x={self.dir}/x.npy",
                  "--input", f"k={self.dir}/k.npy", "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        # y = x*k + x, so d sum(y)/dx = k + 1 (broadcast over rows) and d sum(y)/dk = sum of x's rows.
        np.testing.assert_allclose(np.load(os.path.join(out, "x.grad.npy")), np.broadcast_to(k + 1, (2, 3)), rtol=1e-6)
        np.testing.assert_allclose(np.load(os.path.join(out, "k.grad.npy")), x.sum(axis=0), rtol=1e-6)

    @needs_onnx
    def test_grad_of_an_onnx_parameter_sanitizes_the_file_name(self):
        r = smelt("dump", MODEL)
        param = next(l.split()[1] for l in r.stdout.splitlines() if l.strip().startswith("param"))
        name = param.rstrip(":").lstrip("%").strip('"')
        r = smelt("grad", MODEL, "--wrt", name, "--input", f"image={IMAGE}", "--output-dir", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        self.assertTrue(os.path.exists(os.path.join(self.dir, safe + ".grad.npy")), os.listdir(self.dir))

    def test_grad_errors(self):
        r = smelt("grad", self.write_ir(), "--wrt", "nope", "--input", f"x={IMAGE}")
        self.assertNotEqual(r.returncode, 0)
        int_ir = os.path.join(self.dir, "int.ir")
        with open(int_ir, "w") as f:
            f.write("graph @g(%i: i64[2]) {\n  %0 = cast(%i) {to = \"f32\"} : f32[2]\n  return y = %0\n}\n")
        np.save(os.path.join(self.dir, "i.npy"), np.array([1, 2], np.int64))
        r = smelt("grad", int_ir, "--wrt", "i", "--input", f"i={self.dir}/i.npy")
        self.assert_one_line_error(r, "integer and bool values have no gradient")

    def test_dump_grad_shows_forward_and_backward(self):
        r = smelt("dump", self.write_ir(), "--grad", "x,k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"y/out" = ', r.stdout)
        self.assertIn("x.grad = ", r.stdout)
        self.assertIn("k.grad = ", r.stdout)
        self.assertIn("reduce_sum", r.stdout)  # the broadcast in mul is undone in the backward pass
        again = smelt("dump", "-", stdin=r.stdout)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, r.stdout)

    def test_opt_runs_a_pipeline_and_dumps_each_pass(self):
        path = os.path.join(self.dir, "opt.ir")
        with open(path, "w") as f:
            f.write("graph @g(%x: i32[4]) {\n  %0 = neg(%x) : i32[4]\n  %1 = neg(%0) : i32[4]\n"
                    "  %2 = neg(%x) : i32[4]\n  %3 = add(%1, %2) : i32[4]\n  return y = %3\n}\n")
        r = smelt("opt", path, "--passes=canonicalize,cse,dce")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "graph @g(%x: i32[4]) {\n  %0 = neg(%x) : i32[4]\n"
                                   "  %1 = add(%x, %0) : i32[4]\n  return y = %1\n}\n")
        dumps = os.path.join(self.dir, "dumps")
        env = dict(os.environ, SMELT_DUMP_DIR=dumps)
        r = subprocess.run([SMELT, "opt", path], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(dumps)),
                         ["00-input.ir", "01-decompose.ir", "02-canonicalize.ir", "03-fold.ir", "04-cse.ir",
                          "05-dce.ir", "06-split-reductions.ir", "07-fuse.ir"])
        with open(os.path.join(dumps, "07-fuse.ir")) as f:
            self.assertIn('fused(%x) {kind = "loop"}', f.read())
        after = smelt("dump", path, "--after", "cse")
        self.assertEqual(after.returncode, 0, after.stderr)
        bad = smelt("opt", path, "--passes=nope")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("nope", bad.stderr)

    def test_inspect_json_reports_kernels_flops_and_the_arena(self):
        r = smelt("inspect", self.write_ir(), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        for key in ("nodes", "kernels", "flops", "bytes_moved", "peak_bytes", "lower_bound_bytes", "kernels_list"):
            self.assertIn(key, info)
        # mul then add fuse into one loop kernel; --passes none shows the graph as written.
        self.assertEqual((info["nodes"], info["kernels"], info["kernels_unfused"], info["flops"]), (2, 1, 2, 12))
        self.assertEqual([(k["op"], k["kind"], k["ops"], k["sweeps"]) for k in info["kernels_list"]],
                         [("fused", "loop", ["mul", "add"], 1)])
        unfused = json.loads(smelt("inspect", self.write_ir(), "--passes", "none", "--json").stdout)
        self.assertEqual([k["op"] for k in unfused["kernels_list"]], ["mul", "add"])
        self.assertGreaterEqual(info["peak_bytes"], info["lower_bound_bytes"])
        grad = json.loads(smelt("inspect", self.write_ir(), "--grad", "x,k", "--json").stdout)
        self.assertGreater(grad["kernels"], info["kernels"])
        self.assertGreaterEqual(grad["peak_bytes"], grad["lower_bound_bytes"])
        if HAVE_ONNX:
            text = smelt("inspect", MODEL)
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn("lower bound", text.stdout)

    def test_inspect_memory_budget_recomputes_until_the_peak_fits(self):
        # A 4-layer MLP's forward + backward (the golden case of the fuse pass under a budget).
        golden = os.path.join(SRC, "tests", "passes", "fuse", "remat_mlp_budget.ir")
        passes = ["--passes", "canonicalize,cse,dce,fuse"]
        plain = json.loads(smelt("inspect", golden, *passes, "--json").stdout)
        self.assertEqual((plain["memory_budget"], plain["recomputed_nodes"], plain["recomputed_flops"]), (0, 0, 0))
        r = smelt("inspect", golden, *passes, "--memory-budget", "60K", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["memory_budget"], 60 * 1024)
        self.assertLessEqual(info["peak_bytes"], 60 * 1024)
        self.assertEqual(info["peak_bytes_without_recompute"], plain["peak_bytes"])
        self.assertGreater(info["recomputed_nodes"], 0)
        self.assertGreater(info["extra_time_estimate"], 0)
        self.assertIn("fuse{memory-budget=61440}", info["pipeline"])
        text = smelt("inspect", golden, *passes, "--memory-budget", "60K")
        self.assertIn("nodes recomputed", text.stdout)
        # No plan fits: the buffers at the peak and the smallest budget found; a bad count names itself.
        tight = smelt("inspect", golden, *passes, "--memory-budget", "4K")
        self.assertNotEqual(tight.returncode, 0)
        self.assertIn("no plan found fits; the smallest found needs", tight.stderr)
        self.assertIn("grad of", tight.stderr)
        bad = smelt("inspect", golden, "--memory-budget", "lots")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("'lots' is not a byte count", bad.stderr)
        nofuse = smelt("inspect", golden, "--passes", "cse", "--memory-budget", "60K")
        self.assertIn("has no fuse pass", nofuse.stderr)

    def test_devices(self):
        # The CPU always; every other kind either lists devices or says why it has none.
        r = subprocess.run([SMELT, "devices", "--json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        entries = json.loads(r.stdout)
        self.assertEqual(entries[0]["id"], "cpu")
        self.assertGreater(entries[0]["memory_bytes"], 0)
        self.assertEqual({e["kind"] for e in entries} >= {"cpu", "opencl", "cuda", "hip"}, True)
        for e in entries:
            self.assertTrue("id" in e or e.get("unavailable"), e)
        r = subprocess.run([SMELT, "devices"], capture_output=True, text=True)
        self.assertTrue(r.stdout.startswith("cpu "), r.stdout)

    def test_tune_measures_stores_shows_and_explains(self):
        env = dict(os.environ, SMELT_CACHE_DIR=os.path.join(self.dir, "cache"))
        env.pop("SMELT_DEVICE", None)
        tune = lambda *a: subprocess.run([SMELT, "tune", *a], capture_output=True, text=True, env=env)
        self.assert_one_line_error(tune("--kinds", "gemv"), "unknown kind 'gemv'")
        self.assert_one_line_error(tune("--device", "nosuch:3"), "nosuch")
        r = tune("--show")
        self.assertEqual(r.returncode, 0, r.stderr)
        devices = json.loads(smelt("devices", "--json").stdout)
        opencl = [d for d in devices if d.get("kind") == "opencl" and "id" in d]
        if not opencl:
            self.assertIn("no placement tables", r.stdout)
            return
        d = opencl[0]
        r = tune("--device", d["id"], "--quick", "--repeats", "1", "--kinds", "elementwise")
        self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(self.dir, "cache", "placement", d["id"].replace(":", "-") + ".json")
        self.assertIn(f"stored in {path}", r.stdout)
        with open(path) as f:
            table = json.load(f)
        self.assertEqual((table["device"], table["name"], table["driver"]), (d["id"], d["name"], d["driver"]))
        [kind] = table["kinds"]
        self.assertEqual(len(kind["points"]), 3)
        self.assertTrue(all(p["cpu_seconds"] > 0 and p["device_seconds"] > 0 for p in kind["points"]))
        self.assertIn(f"{d['id']} ({d['name']}): smelt tune", tune("--show").stdout)
        # A table where the device wins from 10 elements on: the 2x3 graph (12 elements of elementwise
        # work) goes to it; one where it never wins keeps the graph on the CPU.
        kind["crossover"] = 10
        with open(path, "w") as f:
            json.dump(table, f)
        r = tune("--explain", self.write_ir())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("elementwise  12 elements\n", r.stdout)
        self.assertIn(f"runs on {d['id']}: elementwise 12 elements >= crossover 10 on {d['id']}", r.stdout)
        kind["crossover"] = None
        with open(path, "w") as f:
            json.dump(table, f)
        self.assertIn("runs on cpu:", tune("--explain", self.write_ir()).stdout)
        r = subprocess.run([SMELT, "tune", "--explain", self.write_ir()], capture_output=True, text=True,
                           env=dict(env, SMELT_DEVICE="cpu"))
        self.assertIn("runs on cpu (set by SMELT_DEVICE)", r.stdout)

    def test_cache_explain_says_hit_or_miss_and_why(self):
        env = dict(os.environ, SMELT_CACHE_DIR=os.path.join(self.dir, "cache"))
        run = lambda *a: subprocess.run([SMELT, *a], capture_output=True, text=True, env=env)
        ir = self.write_ir()
        r = run("cache", "explain", ir)
        if "built without LLVM" in r.stderr:  # the build a GPU host makes: the CPU compiles nothing
            self.assert_one_line_error(r, "smelt: error: smelt cache explain: this smelt was built without LLVM")
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("key: smelt ", r.stdout)
        self.assertIn("backend llvm", r.stdout)
        self.assertRegex(r.stdout, r"\(fused %\d+\): [0-9a-f]{32} miss\n  no entry holds this kernel")
        self.assertRegex(r.stdout, r"(\d+) kernels: 0 hit, \1 missed")
        self.assertEqual(run("bench", ir, "--runs", "1", "--warmup", "0").returncode, 0)
        r = run("cache", "explain", ir)
        self.assertNotIn(" miss\n", r.stdout)
        self.assertRegex(r.stdout, r"(\d+) kernels: \1 hit, 0 missed")

    def test_cache_stats_and_clear(self):
        cache = os.path.join(self.dir, "cache")
        env = dict(os.environ, SMELT_CACHE_DIR=cache)
        cache_cmd = lambda *a: subprocess.run([SMELT, "cache", *a], capture_output=True, text=True, env=env)
        r = cache_cmd("stats")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"dir: {cache}\n", r.stdout)
        self.assertIn("entries: 0\n", r.stdout)
        self.assertIn("misses: 0\n", r.stdout)
        # Entries as the cache names them (<2 hex>/<32 hex>.kc); stats and clear go by name, not content.
        for digest, size in (("ab" + "0" * 30, 100), ("cd" + "1" * 30, 28)):
            os.makedirs(os.path.join(cache, digest[:2]), mode=0o700, exist_ok=True)
            with open(os.path.join(cache, digest[:2], digest + ".kc"), "wb") as f:
                f.write(b"x" * size)
        os.chmod(cache, 0o700)
        with open(os.path.join(cache, "keep.txt"), "w") as f:
            f.write("not an entry")
        r = cache_cmd("stats")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("disk: enabled\nentries: 2\nbytes: 128\n", r.stdout)
        r = cache_cmd("clear")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"removed 2 entries from {cache}\n")
        self.assertEqual(os.listdir(cache), ["keep.txt"])
        self.assertIn("entries: 0\n", cache_cmd("stats").stdout)
        # A folder others can write to is refused: stats says why, clear fails and touches nothing.
        os.chmod(cache, 0o777)
        r = cache_cmd("stats")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("disk: disabled", r.stdout)
        self.assertIn("writable by group or others", r.stdout)
        r = cache_cmd("clear")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("smelt: error: kernel cache disk layer is disabled", r.stderr)

    def test_cuda_backend_runs_or_says_why_not(self):
        """--backend cuda for run, grad and bench: where there is no driver or GPU, a one-line error with
        the driver's reason and a non-zero exit; on a GPU, the right outputs and a second process's
        compile answered by the kernel cache."""
        rng = np.random.default_rng()
        x = rng.uniform(0.5, 2, (2, 3)).astype(np.float32)
        k = rng.uniform(0.5, 2, (3,)).astype(np.float32)
        np.save(os.path.join(self.dir, "x.npy"), x)
        np.save(os.path.join(self.dir, "k.npy"), k)
        ir = self.write_ir()
        feeds = ["--input", f"x={self.dir}/x.npy", "--input", f"k={self.dir}/k.npy"]
        out = os.path.join(self.dir, "out")
        env = dict(os.environ, SMELT_CACHE_DIR=os.path.join(self.dir, "cache"))
        run = lambda *a: subprocess.run([SMELT, *a], capture_output=True, text=True, env=env)
        r = run("run", ir, "--backend", "cuda", *feeds, "--output-dir", out)
        bench = lambda: run("bench", ir, "--backend", "cuda", "--runs", "1", "--warmup", "0")
        if r.returncode != 0:
            # No GPU here: the same one-line reason from every command, naming the backends there are.
            why = "smelt: error: --backend: 'cuda' has no device here ("
            self.assert_one_line_error(r, why)
            self.assertIn("CUDA driver", r.stderr)
            self.assert_one_line_error(run("grad", ir, "--wrt", "x", "--backend", "cuda", *feeds,
                                           "--output-dir", out), why)
            self.assert_one_line_error(bench(), why)
            return
        np.testing.assert_allclose(np.load(os.path.join(out, "y_out.npy")), x * k + x, rtol=1e-6)
        r = run("grad", ir, "--wrt", "x,k", "--backend", "cuda", *feeds, "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_allclose(np.load(os.path.join(out, "k.grad.npy")), x.sum(axis=0), rtol=1e-6)
        first, second = bench(), bench()
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertIn("median_ms", first.stdout)
        # "compile_ms X (N kernels, N from the cache, 0 on the interpreter; ...)" in the second process.
        line = next(l for l in second.stdout.splitlines() if l.startswith("compile_ms"))
        kernels = int(line.split("(")[1].split()[0])
        self.assertIn(f"{kernels} from the cache", line)

    def test_unknown_backend(self):
        """An unknown backend, or one this command does not run, is a one-line error listing the backends
        this machine has (the CPU's names, each device kind with a device and its ids, auto)."""
        here = smelt("devices").stdout
        r = smelt("run", self.write_ir(), "--backend", "tpu")
        self.assert_one_line_error(r, "smelt: error: --backend: 'tpu' is not a backend; here: llvm, cpu",
                                   "auto, reference")
        if "opencl:0" in here:
            self.assertIn("opencl, opencl:0", r.stderr)
        if "cuda:0" not in here:
            self.assertNotIn("cuda", r.stderr)
        r = smelt("bench", self.write_ir(), "--backend", "reference")
        self.assert_one_line_error(r, "'reference' is not for this command")
        self.assertNotIn("reference", r.stderr.split("here:")[1])
        if "opencl:0" in here:
            self.assert_one_line_error(smelt("run", self.write_ir(), "--backend", "opencl:9"),
                                       "'opencl:9' is not a device here")

    def test_every_subcommand_describes_the_model_file_and_backend_alike(self):
        for command in [["dump"], ["run"], ["grad"], ["opt"], ["inspect"], ["kernels"], ["bench"], ["export"],
                        ["cache", "explain"], ["tune"]]:
            text = " ".join(smelt(*command, "--help").stdout.split())
            self.assertIn("Model file (.onnx or IR text; - for stdin)", text, command)
        for command in ["run", "grad", "bench"]:
            text = " ".join(smelt(command, "--help").stdout.split())
            self.assertIn("Where to run: llvm (the CPU), opencl, cuda, hip, a device id (cuda:1), auto (measured "
                          "placement)", text, command)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
