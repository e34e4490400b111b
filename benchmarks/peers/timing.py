"""Shared by the peer scripts: time a callable the way `smelt bench` does, and print results.

Each peer prints one line per result, `NAME MILLISECONDS`: `ew_chain 12.3456` for the median of one run,
and `mlp_train:compile 1234.5` for a first call (tracing plus compilation) where a peer compiles.
Runs with any python3 (Debian's for libtorch 1.13, the virtualenvs' for torch.compile and jax)."""
import argparse
import os
import resource
import statistics
import time

TRAINING = ["mlp_train_step", "resnet18_train_step", "tiny_latency"]
WORKLOADS = ["ew_chain", "softmax_rows", "layernorm", "gemm2048", "linear_relu", "mlp_train"] + TRAINING


def arguments(description):
    """The options every peer takes: which workloads, and how long to time each."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--only", default="", help="NAME,... (default: all of %s)" % ",".join(WORKLOADS))
    ap.add_argument("--runs", type=int, default=20, help="timed runs at most")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    ap.add_argument("--min-runs", type=int, default=3, help="timed runs at least, whatever --max-seconds")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="budget per workload (0: none)")
    return ap


def selected(args):
    names = [n for n in args.only.split(",") if n] or WORKLOADS
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise SystemExit("unknown workload(s): %s (known: %s)" % (",".join(unknown), ",".join(WORKLOADS)))
    return names


def median_ms(fn, args):
    """Median milliseconds of `fn()` (which must wait for its result), like smelt bench's budget:
    warm-up stops early past a quarter of the budget, timed runs past the budget once min-runs are done."""
    start = time.perf_counter()
    for i in range(args.warmup):
        if i > 0 and args.max_seconds > 0 and time.perf_counter() - start > args.max_seconds / 4:
            break
        fn()
    times = []
    at_least = max(1, min(args.min_runs, args.runs))
    for i in range(max(args.runs, 1)):
        if i >= at_least and args.max_seconds > 0 and time.perf_counter() - start > args.max_seconds:
            break
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median_high(times) * 1e3


def first_call_ms(fn):
    """Milliseconds of the first call: where a peer compiles lazily, tracing plus compilation plus one run."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def resident_mb():
    """The process's resident memory now (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def peak_mb():
    """The process's peak resident memory so far (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(name, ms):
    print("%s %.4f" % (name, ms), flush=True)
