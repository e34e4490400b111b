#!/usr/bin/python3
"""smelt's benchmark suite: each workload timed in smelt and in its peers (libtorch eager at 1 and 2
threads, torch.compile, jax.jit, OpenBLAS for the GEMM) in one run, beside STREAM bandwidth measured in
the same run; prints medians, ratios and targets, and writes docs/BENCHMARKS.md and docs/benchmarks.svg.

  /usr/bin/python3 benchmarks/run_benchmarks.py                  # everything (installs the peers' venvs)
  /usr/bin/python3 benchmarks/run_benchmarks.py --quick --only ew_chain,softmax_rows
  /usr/bin/python3 benchmarks/run_benchmarks.py --smoke          # the ctest smoke test: no timing, no peers

Standard library only; run it with Debian's /usr/bin/python3 (its python3-torch is the libtorch peer)."""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import analysis, chart, data_parallel, device_runtime, memory_budget, mixed_precision, report, runners, shared_core, soak, symbolic_batch, venvs  # noqa: E402
from harness.workloads import BY_NAME, WORKLOADS  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--only", default="", help="NAME,... of: " + ",".join(w.name for w in WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="few runs per workload: a smoke run, not a measurement")
    ap.add_argument("--no-peers", action="store_true", help="smelt and STREAM only")
    ap.add_argument("--no-install", action="store_true", help="never install the peers' virtualenvs")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat every measurement this many times (alternating the order) and take medians")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--smelt", help="the smelt binary (default: BUILD_DIR/bin/smelt)")
    ap.add_argument("--no-build", action="store_true", help="do not build the smelt_benchmarks target first")
    ap.add_argument("--output-dir", help="where BENCHMARKS.md and benchmarks.svg go (default: docs/; with "
                    "--quick or --smoke, BUILD_DIR/benchmarks-quick/ so a smoke run never replaces the report)")
    ap.add_argument("--no-device", action="store_true",
                    help="skip the device runtime's figures (caching pool, smelt tune's crossovers)")
    ap.add_argument("--no-shared-core", action="store_true",
                    help="skip the shared-machine figures (the workloads again with one core busy)")
    ap.add_argument("--no-symbolic", action="store_true",
                    help="skip the shape-polymorphic figures (workloads with a symbolic batch, kernels across sizes)")
    ap.add_argument("--no-soak", action="store_true",
                    help="skip the trust figures (the pool's cycle time over 10M cycles, a 2-minute soak)")
    ap.add_argument("--no-distributed", action="store_true",
                    help="skip the data-parallel figures (all-reduce bandwidth on 2 MPI ranks against MPI_Allreduce)")
    ap.add_argument("--no-memory-budget", action="store_true",
                    help="skip the memory-budget figures (training steps under fractions of their planned peak)")
    ap.add_argument("--no-mixed-precision", action="store_true",
                    help="skip the mixed-precision figures (training steps in f32, bf16, f16 beside torch.autocast)")
    ap.add_argument("--smoke", action="store_true",
                    help="check that every workload compiles, then a --quick --no-peers run of ew_chain")
    a = ap.parse_args(argv)
    if a.smoke:
        a.quick = a.no_peers = a.no_build = a.no_install = a.no_device = a.no_shared_core = a.no_symbolic = a.no_soak = True
        a.no_distributed = a.no_memory_budget = a.no_mixed_precision = True
        a.only = a.only or "ew_chain"
    a.smelt = a.smelt or os.path.join(a.build_dir, "bin", "smelt")
    if not a.output_dir:
        a.output_dir = os.path.join(a.build_dir, "benchmarks-quick") if a.quick else os.path.join(ROOT, "docs")
    names = [n for n in a.only.split(",") if n]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error("unknown workload(s) %s" % ",".join(unknown))
    a.workloads = [BY_NAME[n] for n in names] if names else WORKLOADS
    a.rounds = max(1, a.rounds)
    return a


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def build(a):
    cmd = ["cmake", "--build", a.build_dir, "-j2", "--target", "smelt_benchmarks"]
    say("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        say("build failed (going on with what is built):\n" + "\n".join((r.stdout + r.stderr).splitlines()[-15:]))


def compile_check(a, cache):
    """--smoke: every workload's IR parses, differentiates where it should, and compiles (the training
    workloads, built through the model API, compile in tests/nn instead)."""
    failed = 0
    for w in (w for w in WORKLOADS if not w.native):
        r = runners.smelt_bench(a.smelt, w, runners.QUICK, cache, timeout=300, runs=0)
        say("compile %-13s %s" % (w.name, r.get("error") or "ok (%.1f ms)" % r["compile_ms"]))
        failed += "error" in r
    return failed


def peer_result(out, name):
    """A peer script's output -> this workload's result."""
    if "error" in out:
        return {"error": out["error"]}
    if name not in out:
        return {"error": "printed no time for %s" % name}
    return {"ms": out[name], "compile_ms": out.get(name + ":compile"), "peak_mb": out.get(name + ":peak_mb")}


def around_stream(a, w, fn, streams):
    """smelt's runs of a memory-bound workload between two STREAM samples: this machine's bandwidth drifts
    (38 to 75 GB/s within minutes here), so the better of the two is that workload's reference."""
    def run():
        before = stream_sample(a, os.cpu_count(), a.quick)
        r = fn()
        after = stream_sample(a, os.cpu_count(), a.quick)
        streams.extend([("%s, before smelt" % w.name, before), ("%s, after smelt" % w.name, after)])
        ok = [s["copy_gbs"] for s in (before, after) if "error" not in s]
        if ok and "error" not in r:
            r["stream_copy_gbs"] = max(ok)
        return r
    return run


def measure_workload(a, w, budget, peers, cache, order_reversed, streams):
    """One round of one workload: {contender key: result}, each in its own process."""
    if w.native:
        native = os.path.join(os.path.dirname(a.smelt), "smelt_train_steps")
        steps = [("smelt", lambda: runners.smelt_native(native, w, budget, cache) if os.path.exists(native)
                  else {"error": "%s is not built" % native})]
    else:
        smelt = lambda: runners.smelt_bench(a.smelt, w, budget, cache)
        steps = [("smelt", around_stream(a, w, smelt, streams) if w.min_bytes else smelt),
                 ("smelt_fresh", lambda: runners.smelt_bench(a.smelt, w, budget, cache, fresh_outputs=True))]
    if not a.no_peers:
        for t in (1, 2):
            steps.append(("libtorch_t%d" % t, lambda t=t: peer_result(runners.peer(
                DEBIAN_PYTHON, "torch_workloads.py", [w.name], budget, ["--mode", "eager", "--threads", str(t)]),
                w.name)))
        tc = peers.get("torch.compile")
        if tc and tc.python:
            def torch_compile():
                # An empty Inductor cache, so the compile time printed for mlp_train is a cold one.
                with tempfile.TemporaryDirectory(prefix="inductor-") as d:
                    return peer_result(runners.peer(tc.python, "torch_workloads.py", [w.name], budget,
                                                    ["--mode", "compile"], env={"TORCHINDUCTOR_CACHE_DIR": d}), w.name)
            steps.append(("torch_compile", torch_compile))
        jx = peers.get("jax")
        if jx and jx.python:
            steps.append(("jax", lambda: peer_result(runners.peer(jx.python, "jax_workloads.py", [w.name], budget),
                                                     w.name)))
        blas = os.path.join(os.path.dirname(a.smelt), "smelt_sgemm")
        if w.name == "gemm2048":
            missing = None if os.path.exists(blas) else {"error": "%s is not built" % blas}
            for t in (1, 2):
                steps.append(("openblas_t%d" % t, lambda t=t: missing or runners.sgemm(blas, "openblas", t, budget)))
            # OpenBLAS 0.3.21 may not know this CPU and fall back to AVX2 (Haswell) kernels: time its
            # AVX-512 ones too where the CPU has them, so the best BLAS is the best it can do here.
            if "avx512f" in cpu_flags():
                steps.append(("openblas_avx512",
                              lambda: missing or runners.sgemm(blas, "openblas", 2, budget, "SkylakeX")))
            steps.append(("onednn", lambda: missing or runners.sgemm(blas, "onednn", 2, budget)))
    results = {}
    for key, fn in (reversed(steps) if order_reversed else steps):
        r = fn()
        results[key] = r
        say("  %-13s %-30s %s" % (w.name, analysis.LABELS[key], r.get("error") or "%s ms" % report.fmt_ms(r["ms"])))
    return {k: results[k] for k, _ in steps}  # report order, whatever the run order


def stream_sample(a, threads, quick):
    binary = os.path.join(os.path.dirname(a.smelt), "smelt_stream")
    if not os.path.exists(binary):
        return {"error": "%s is not built" % binary, "threads": threads}
    r = runners.stream(binary, threads, mb=256, reps=5 if quick else 20)  # 3 x 256 MB: far beyond the caches
    say("  STREAM %d thread(s): %s" % (threads, r.get("error") or "copy %.1f GB/s, triad %.1f GB/s" % (
        r["copy_gbs"], r["triad_gbs"])))
    return r


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return []


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
        with open("/proc/meminfo") as f:
            mem_gb = int(next(l.split()[1] for l in f if l.startswith("MemTotal"))) / 1e6
    except (OSError, StopIteration):
        mem_gb = 0
    os_name = platform.system()
    try:
        with open("/etc/os-release") as f:
            os_name = next((l.split("=", 1)[1].strip().strip('"') for l in f if l.startswith("PRETTY_NAME")), os_name)
    except OSError:
        pass
    return "%s, %d cores, %.0f GB memory, %s, Linux %s" % (cpu or platform.processor(), os.cpu_count(), mem_gb, os_name,
                                                          platform.release())


def git_commit():
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def libtorch_version():
    out, err = runners.run([DEBIAN_PYTHON, "-c", "import torch; print(torch.__version__)"], 300)
    return out.strip() if out else "not available (%s)" % err


def main(argv):
    a = parse_args(argv)
    if not a.no_build:
        build(a)
    if not os.access(a.smelt, os.X_OK) or os.path.getsize(a.smelt) == 0:
        say("no runnable smelt binary at %s (not built, or being rebuilt): cmake --build build --target smelt"
            % a.smelt)
        return 1
    scratch = tempfile.mkdtemp(prefix="smelt-bench-")
    try:
        # A snapshot of the binaries: the whole run measures one build, even if build/ is rebuilt meanwhile.
        bin_dir = os.path.join(scratch, "bin")
        os.makedirs(bin_dir)
        # Every helper the sections run (benchmarks/CMakeLists.txt's smelt_benchmarks): one left out here
        # reads as "not built" in the report.
        for name in ("smelt", "smelt_stream", "smelt_sgemm", "smelt_train_steps", "smelt_pool_allocations", "smelt_soak",
                     "smelt_allreduce_bandwidth", "smelt_dp_overlap"):
            src = os.path.join(os.path.dirname(a.smelt), name) if name != "smelt" else a.smelt
            if os.path.exists(src):
                shutil.copy2(src, os.path.join(bin_dir, name))
        a.smelt = os.path.join(bin_dir, "smelt")
        cache = os.path.join(scratch, "kernels")
        os.makedirs(cache)
        return run(a, cache)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(a, cache):
    load_start = os.getloadavg()[0]
    if load_start > 0.5 * os.cpu_count():
        say("note: the machine is busy (load average %.1f on %d cores): expect noisy figures" % (
            load_start, os.cpu_count()))
    if a.smoke and compile_check(a, cache):
        return 1
    peers = {}
    if not a.no_peers:
        root = os.path.join(a.build_dir, "bench-venvs")
        say("peers: checking (and installing where missing) the virtualenvs in %s" % root)
        peers = venvs.ensure_all(root, install=not a.no_install)
        for p in peers.values():
            say("  %s: %s" % (p.name, p.version or "not run: " + p.reason))
    budget = runners.QUICK if a.quick else runners.FULL
    samples = {w.name: {} for w in a.workloads}
    streams, compile_result = [], None
    for rnd in range(a.rounds):
        say("round %d of %d" % (rnd + 1, a.rounds))
        if rnd == 0:
            streams.append(("start, 1 thread", stream_sample(a, 1, a.quick)))
        streams.append(("round %d start" % (rnd + 1), stream_sample(a, os.cpu_count(), a.quick)))
        for w in a.workloads:
            for key, r in measure_workload(a, w, budget, peers, cache, rnd % 2 == 1, streams).items():
                samples[w.name].setdefault(key, []).append(r)
            if w.name == "mlp_train" and rnd == 0:
                compile_result = runners.mlp_compile(a.smelt, w, 1 if a.quick else 5)
                say("  mlp_train     smelt compile: %s" % (compile_result.get("error") or
                    "cold %.1f ms, warm start %.1f ms" % (compile_result["cold_compile_ms"],
                                                          compile_result["warm_compile_ms"])))
        streams.append(("round %d end" % (rnd + 1), stream_sample(a, os.cpu_count(), a.quick)))
    multi = [s for label, s in streams if "1 thread" not in label and "error" not in s]
    best = {"copy_gbs": max(s["copy_gbs"] for s in multi), "triad_gbs": max(s["triad_gbs"] for s in multi),
            "threads": multi[0]["threads"]} if multi else {}
    stream = {"samples": streams, "one_thread": streams[0][1] if "error" not in streams[0][1] else {}, "best": best}
    copy = stream["best"].get("copy_gbs")
    rows = [analysis.analyze(w, {k: analysis.merge_rounds(v) for k, v in samples[w.name].items()}, copy,
                             compile_result if w.name == "mlp_train" else None) for w in a.workloads]
    device = None
    if not a.no_device:
        say("device runtime: the caching pool over a training run, and smelt tune's crossovers")
        pool = device_runtime.pool_allocations(os.path.dirname(a.smelt), 30 if a.quick else 100)
        place = device_runtime.placement(a.smelt, a.quick)
        device = {"targets": [("device runtime",) + tuple(t) for t in device_runtime.targets(pool)],
                  "markdown": device_runtime.markdown(pool, place),
                  "pool": pool, "placement": place}
    def section(device, targets, markdown, area):
        """`device` with one more section's targets (named by `area` in the Targets table) and markdown."""
        device = device or {"targets": [], "markdown": []}
        device["targets"] = device["targets"] + [(area,) + tuple(t) for t in targets]
        device["markdown"] = device["markdown"] + markdown
        return device

    build_dir = os.path.dirname(a.smelt)
    if not a.no_shared_core:
        say("a shared machine: the workloads again with one core busy")
        shared = shared_core.measure(a, peers, budget, cache, say)
        device = section(device, shared_core.targets(shared), shared_core.markdown(shared), "shared machine")
    if not a.no_symbolic:
        say("shape-polymorphic graphs: the workloads with a symbolic batch, and kernels across batch sizes")
        sym = symbolic_batch.measure(a, budget, cache, 1 if a.quick else 5, say)
        steps = symbolic_batch.measure_steps(a, budget, cache, 1 if a.quick else 5, say)
        device = section(device, symbolic_batch.targets(sym, steps), symbolic_batch.markdown(sym, steps), "shape polymorphism")
    if not a.no_distributed:
        say("data-parallel training: all-reduce bandwidth on 2 MPI ranks")
        dp = data_parallel.measure(build_dir, a.quick, say)
        device = section(device, data_parallel.targets(dp), data_parallel.markdown(dp), "data-parallel")
        say("data-parallel training: overlap and scaling, ranks on hosts behind a slowed link")
        overlap = data_parallel.measure_overlap(build_dir, a.quick, say)
        device = section(device, data_parallel.overlap_targets(overlap), data_parallel.overlap_markdown(overlap), "data-parallel")
    if not a.no_memory_budget:
        say("training under a memory budget: the MLP and ResNet-18 steps at fractions of their planned peak")
        mb = memory_budget.measure(build_dir, a.quick, say)
        device = section(device, memory_budget.targets(mb), memory_budget.markdown(mb), "memory budget")
    if not a.no_mixed_precision:
        say("mixed precision: the MLP and ResNet-18 steps in f32, bf16 and f16, and PyTorch's autocast")
        mp = mixed_precision.measure(build_dir, DEBIAN_PYTHON, budget, a.quick, say)
        device = section(device, mixed_precision.targets(mp), mixed_precision.markdown(mp), "mixed precision")
    if not a.no_soak:
        say("trust: the pool's cycle time, and a soak")
        trust = soak.measure(build_dir, a.quick)
        device = section(device, soak.targets(trust), soak.markdown(trust), "trust")
    print(report.console(rows, stream, peers))
    for area, label, measured, met in (device or {}).get("targets", []):
        print("  %-18s %-50s %-14s %s" % (area, label, measured, "met" if met else "NOT MET"))
    info = describe(a, peers, rows, budget)
    info["load"] = "%.1f at the start, %.1f at the end" % (load_start, os.getloadavg()[0])
    gpu = os.path.join(ROOT, "docs", "gpu_check.md")
    if os.path.exists(gpu):
        with open(gpu) as f:
            info["gpu_summary"] = f.read()
    os.makedirs(a.output_dir, exist_ok=True)
    with open(os.path.join(a.output_dir, "BENCHMARKS.md"), "w") as f:
        f.write(report.markdown(rows, stream, peers, info, device))
    with open(os.path.join(a.output_dir, "benchmarks.svg"), "w") as f:
        f.write(chart.svg(rows, "smelt benchmarks, %s%s" % (info["date"], " (--quick)" if a.quick else "")))
    raw = os.path.join(a.build_dir, "benchmarks", "last-run.json")
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    with open(raw, "w") as f:
        json.dump({"info": {k: v for k, v in info.items() if isinstance(v, (str, int, float, list))},
                   "stream": stream, "samples": samples, "mlp_compile": compile_result,
                   "device": {k: v for k, v in (device or {}).items() if k in ("pool", "placement")}}, f, indent=1)
    say("wrote %s and benchmarks.svg (raw results: %s)" % (os.path.join(a.output_dir, "BENCHMARKS.md"), raw))
    # A failed smelt measurement fails the run; missed targets are reported above, not an error.
    return 1 if any("error" in r.times.get("smelt", {}) for r in rows) else 0


def describe(a, peers, rows, budget):
    rel = lambda p: os.path.relpath(p, ROOT) if p.startswith(ROOT) else p
    cmd = [rel(os.path.abspath(sys.argv[0]))] + sys.argv[1:]
    gemm = next((r for r in rows if r.workload.name == "gemm2048"), None)
    # "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": version and kernels.
    configs = {k: gemm.times[k]["config"].split() for k in ("openblas_t2", "openblas_avx512")
               if gemm and len(gemm.times.get(k, {}).get("config", "").split()) >= 3}
    blas = ""
    if "openblas_t2" in configs:
        blas = "%s, %s kernels by its own CPU detection" % (configs["openblas_t2"][1], configs["openblas_t2"][-2])
    if "openblas_avx512" in configs:
        blas += "; %s kernels when forced" % configs["openblas_avx512"][-2]
    return {
        "command": "/usr/bin/python3 " + " ".join(cmd),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "quick": a.quick,
        "commit": git_commit(),
        "machine": machine(),
        "budget": "up to %d timed runs after %d warm-up, no new run past about %g s per workload and "
                  "contender once the minimum of %d is done" % (budget.runs, budget.warmup, budget.max_seconds,
                                                                 budget.min_runs),
        "rounds_text": "" if a.rounds == 1 else ", repeated in %d rounds (alternating order; the median of "
                       "the rounds' medians)" % a.rounds,
        "libtorch_version": libtorch_version() if not a.no_peers else "not run (--no-peers)",
        "openblas_config": blas or None,
        "onednn": (gemm.times.get("onednn", {}).get("config") or None) if gemm else None,
        "rel": rel,
        "how_to_run": [
            "cmake --build build -j2 --target smelt_benchmarks   # smelt, smelt_stream, smelt_sgemm",
            "/usr/bin/python3 benchmarks/run_benchmarks.py       # all workloads, all peers; writes this page",
            "/usr/bin/python3 benchmarks/run_benchmarks.py --quick --only ew_chain   # a smoke run",
            "/usr/bin/python3 benchmarks/run_benchmarks.py --rounds 3   # steadier medians on a noisy machine",
            "ctest --test-dir build -R benchmarks/smoke   # every workload compiles, ew_chain runs once; no peers",
            "build/bin/smelt bench benchmarks/workloads/ew_chain.ir --runs 40   # one workload, smelt only",
            "build/bin/smelt bench benchmarks/workloads/mlp_train.ir --grad w1,b1,w2,b2,w3,b3",
            "build/bin/smelt_train_steps --only resnet18_train_step   # a training workload, smelt only",
            "SMELT_PROFILE=1 build/bin/smelt_train_steps --only resnet18_train_step   # where its time goes",
            "build/bin/smelt_pool_allocations --steps 100   # device allocations with and without the pool",
            "build/bin/smelt tune --quick   # this machine's CPU/device crossovers (stored for placement)",
        ],
        "method": [
            "Each workload runs in each contender in its own process, back to back: smelt (`smelt bench` on "
            "`benchmarks/workloads/NAME.ir`, random inputs, all cores), libtorch eager at 1 and 2 threads, "
            "torch.compile, jax.jit (`benchmarks/peers/`), and for gemm2048 OpenBLAS's cblas_sgemm called "
            "directly (`benchmarks/native/sgemm.cpp`) at 1 and 2 threads with the kernels it picks for this "
            "CPU, and on 2 threads with its SkylakeX (AVX-512) kernels forced by OPENBLAS_CORETYPE where the "
            "CPU has AVX-512 (OpenBLAS 0.3.21 may not know a newer CPU and fall back to AVX2 kernels), and "
            "oneDNN's dnnl_sgemm on 2 threads where libdnnl is installed.",
            "`smelt bench` writes each run's results into the output tensors of the run before (smelt's "
            "executables allocate nothing on repeated runs); every peer's call returns new tensors, and the "
            "first touch of a fresh 64 MB output costs this machine tens of ms in page faults. So smelt is also "
            "timed with `--fresh-outputs` (new outputs every run, the old ones freed, as a peer's dropped "
            "result is): the *smelt, new outputs* rows. The targets use the default figure.",
            "Every contender gets the same budget: warm-up runs, then timed runs until the run count or the "
            "time budget is reached (never fewer than the minimum); the figure is the median. Compile time "
            "is never part of a run's time.",
            "Bandwidth counts the fewest bytes a workload must move: each input read once, each output "
            "written once. % of STREAM is that over the STREAM copy bandwidth on all cores measured just "
            "before and just after smelt's runs of that workload (the better of the two): the bandwidth this "
            "VM gets drifts, 38 to 75 GB/s within minutes, so a run-wide figure would mislead.",
            "The best BLAS for gemm2048 is the fastest GEMM measured in this run among OpenBLAS (1 and 2 "
            "threads, its own kernels and AVX-512 ones), oneDNN, libtorch, torch.compile and jax.jit.",
            "mlp_train's runs time the forward and backward graph (loss and every parameter's gradient, no "
            "optimizer step) in every contender. smelt's cold compile is `smelt bench --grad ...` with an "
            "empty SMELT_CACHE_DIR (compile_ms: graph to ready executable, autodiff included); the warm "
            "start is a second process on the cache the first one filled; each is the median of 5 (1 with "
            "--quick). The peers' compile figures are their first call (tracing and compilation plus one run).",
            "The training workloads (mlp_train_step, resnet18_train_step, tiny_latency) are timed through "
            "each framework's model API: smelt's nn::TrainStep / nn::Predictor (`smelt_train_steps`, "
            "benchmarks/native/train_steps.cpp), torch.nn with torch.optim in eager mode and with the model "
            "and loss under torch.compile (the optimizer's step eager), and one jax.jit function per step "
            "(loss, gradients and the optimizer's update, parameters donated). A step includes the "
            "optimizer's update everywhere. Peak memory is the process's peak resident set (ru_maxrss) above "
            "its resident set just before the model was built, one workload per process; libtorch's "
            "figure for the memory target is that of its faster thread setting.",
            "Missed targets are listed as NOT MET with the measured figure; a contender that could not run "
            "is listed with the reason.",
        ],
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
