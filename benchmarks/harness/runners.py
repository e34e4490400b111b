"""One process per measurement: `smelt bench`, a peer script, STREAM, OpenBLAS. Each returns a dict:
{"ms": median milliseconds, ...} on success, {"error": why} on failure (never raises on a failed run)."""
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchmarks/
PEERS = os.path.join(HERE, "peers")
IR_DIR = os.path.join(HERE, "workloads")


@dataclass(frozen=True)
class Budget:
    """How long to time each workload in each contender (the same for all, so all get equal care)."""
    runs: int
    warmup: int
    min_runs: int
    max_seconds: float

    def args(self, runs=None):
        return ["--runs", str(self.runs if runs is None else runs), "--warmup", str(self.warmup),
                "--min-runs", str(self.min_runs), "--max-seconds", str(self.max_seconds)]


FULL = Budget(runs=40, warmup=3, min_runs=3, max_seconds=8.0)
QUICK = Budget(runs=3, warmup=1, min_runs=1, max_seconds=1.0)


def parse_pairs(text):
    """`NAME VALUE ...` lines -> {NAME: float(VALUE)}; other lines are ignored."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def run(cmd, timeout, env=None, cwd=None):
    """(stdout, None) or (None, why)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    except OSError as e:
        return None, str(e)
    if r.returncode != 0:
        lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
        return None, "exit %d: %s" % (r.returncode, lines[-1] if lines else "(no message)")
    return r.stdout, None


def smelt_bench(smelt, workload, budget, cache_dir, timeout=1800, runs=None, fresh_outputs=False):
    """`smelt bench` on the workload's IR file: median ms, compile ms (cold or warm as the cache dir is).
    With `fresh_outputs`, every run returns new output tensors, as the peers' calls do."""
    cmd = [smelt, "bench", os.path.join(IR_DIR, workload.ir)] + budget.args(runs)
    if fresh_outputs:
        cmd.append("--fresh-outputs")
    if workload.grad:
        cmd += ["--grad", workload.grad]
    t0 = time.perf_counter()
    out, err = run(cmd, timeout, env={"SMELT_CACHE_DIR": cache_dir})
    wall_ms = (time.perf_counter() - t0) * 1e3
    if err:
        return {"error": "smelt bench: " + err}
    pairs = parse_pairs(out)
    result = {"compile_ms": pairs.get("compile_ms"), "process_ms": wall_ms}
    if runs != 0:
        if "median_ms" not in pairs:
            return {"error": "smelt bench printed no median_ms"}
        result.update(ms=pairs["median_ms"], runs=int(pairs.get("runs", 0)))
    return result


def smelt_native(binary, workload, budget, cache_dir, timeout=1800, extra=()):
    """smelt_train_steps for a training workload (its name, or a Workload; `extra`: more arguments):
    median ms, compile ms, peak memory above the process's before the model was built (MB)."""
    name = getattr(workload, "name", workload)
    out, err = run([binary, "--only", name, "--seconds", str(budget.max_seconds)] + list(extra), timeout,
                   env={"SMELT_CACHE_DIR": cache_dir})
    if err:
        return {"error": "smelt_train_steps: " + err}
    pairs = parse_pairs(out)
    if "median_ms" not in pairs:
        return {"error": "smelt_train_steps printed no median_ms"}
    return {"ms": pairs["median_ms"], "compile_ms": pairs.get("compile_ms"), "peak_mb": pairs.get("peak_mb")}


def mlp_compile(smelt, workload, repeats, timeout=600):
    """Cold compiles (each in a fresh, empty kernel cache dir) and warm starts (a second process on the
    cache the first filled): the medians of `repeats` each, in ms, from smelt bench's compile_ms."""
    cold, warm, warm_process = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="smelt-bench-cache-") as cache:
            r = smelt_bench(smelt, workload, QUICK, cache, timeout, runs=0)
            if "error" in r:
                return r
            cold.append(r["compile_ms"])
            r = smelt_bench(smelt, workload, QUICK, cache, timeout, runs=0)
            if "error" in r:
                return r
            warm.append(r["compile_ms"])
            warm_process.append(r["process_ms"])
    med = lambda xs: sorted(xs)[len(xs) // 2]
    return {"cold_compile_ms": med(cold), "warm_compile_ms": med(warm), "warm_process_ms": med(warm_process),
            "cold_all": cold, "warm_all": warm}


def peer(python, script, names, budget, extra=(), env=None, timeout=1800):
    """A peer script for the workloads `names`: {NAME: ms, "NAME:compile": ms, ...} or {"error": why}."""
    cmd = [python, os.path.join(PEERS, script), "--only", ",".join(names)] + budget.args() + list(extra)
    out, err = run(cmd, timeout, env=env, cwd=PEERS)
    if err:
        return {"error": err}
    return parse_pairs(out)


def stream(binary, threads, mb=256, reps=20, timeout=600):
    out, err = run([binary, "--threads", str(threads), "--mb", str(mb), "--reps", str(reps)], timeout)
    if err:
        return {"error": "smelt_stream: " + err}
    p = parse_pairs(out)
    return {"copy_gbs": p.get("copy_gbs"), "triad_gbs": p.get("triad_gbs"), "threads": threads,
            "array_mb": int(p.get("array_mb", mb)), "reps": int(p.get("reps", reps))}


def sgemm(binary, library, threads, budget, coretype=None, timeout=1800):
    """A BLAS library's SGEMM 2048 timed directly (`smelt_sgemm --library openblas|onednn`); `coretype`
    forces OpenBLAS's kernels (OPENBLAS_CORETYPE) instead of its CPU detection."""
    cmd = [binary, "--library", library, "--size", "2048", "--threads", str(threads), "--runs", str(budget.runs),
           "--warmup", str(max(budget.warmup, 1)), "--max-seconds", str(budget.max_seconds)]
    out, err = run(cmd, timeout, env={"OPENBLAS_CORETYPE": coretype} if coretype else None)
    if err:
        return {"error": "smelt_sgemm: " + err}
    config = next((l[len("library "):] for l in out.splitlines() if l.startswith("library ")), "")
    return {"ms": parse_pairs(out).get("median_ms"), "config": config}
