"""From measurements to what the report states: medians over rounds, ratios (smelt vs each peer),
bandwidth as a % of STREAM copy, and each target met or not. Nothing is rounded or dropped here."""
import statistics
from dataclasses import dataclass, field
from typing import Optional

# Contender keys, in report order, and how the report names them.
LABELS = {
    "smelt": "smelt",
    "smelt_fresh": "smelt, new outputs every run",
    "libtorch_t1": "libtorch eager, 1 thread",
    "libtorch_t2": "libtorch eager, 2 threads",
    "torch_compile": "torch.compile",
    "jax": "jax.jit",
    "openblas_t1": "OpenBLAS sgemm, 1 thread",
    "openblas_t2": "OpenBLAS sgemm, 2 threads",
    "openblas_avx512": "OpenBLAS sgemm, 2 threads, SkylakeX (AVX-512) kernels",
    "onednn": "oneDNN sgemm, 2 threads",
}
PEER_KEYS = ["torch_compile", "jax"]


def merge_rounds(samples):
    """One contender's per-round results -> one: the median of the successful rounds' medians (their
    compile times likewise); the error when every round failed."""
    ok = [s for s in samples if "error" not in s and s.get("ms") is not None]
    if not ok:
        return samples[-1] if samples else {"error": "not run"}
    merged = {"ms": statistics.median(s["ms"] for s in ok), "rounds": [s["ms"] for s in ok]}
    refs = [s["stream_copy_gbs"] for s in ok if s.get("stream_copy_gbs")]
    if refs:
        merged["stream_copy_gbs"] = statistics.median(refs)
    compiles = [s["compile_ms"] for s in ok if s.get("compile_ms") is not None]
    if compiles:
        merged["compile_ms"] = statistics.median(compiles)
    peaks = [s["peak_mb"] for s in ok if s.get("peak_mb") is not None]
    if peaks:
        merged["peak_mb"] = statistics.median(peaks)
    for key in ("config",):
        if key in ok[-1]:
            merged[key] = ok[-1][key]
    return merged


@dataclass
class Verdict:
    target: object
    value: Optional[float]
    met: Optional[bool]  # None: could not be measured
    why: str = ""        # when not measured


@dataclass
class Row:
    """Everything the report says about one workload."""
    workload: object
    times: dict                     # contender key -> merged result
    libtorch_best: Optional[str]    # the faster of libtorch_t1 / libtorch_t2
    metrics: dict = field(default_factory=dict)
    verdicts: list = field(default_factory=list)

    def ms(self, key):
        r = self.times.get(key) or {}
        return r.get("ms")


def _ratio(num, den):
    return num / den if num is not None and den else None


def analyze(workload, times, stream_copy_gbs, compile_result=None):
    """`stream_copy_gbs` is the run's best; a memory-bound workload measured between its own STREAM
    samples is held against those instead (the bandwidth drifts)."""
    stream_copy_gbs = times.get("smelt", {}).get("stream_copy_gbs") or stream_copy_gbs
    lt = {k: times[k]["ms"] for k in ("libtorch_t1", "libtorch_t2") if times.get(k, {}).get("ms")}
    best = min(lt, key=lt.get) if lt else None
    row = Row(workload, times, best)
    smelt = row.ms("smelt")
    m = row.metrics
    m["speedup_libtorch"] = _ratio(row.ms(best), smelt) if best else None
    for key in PEER_KEYS:
        m["speedup_" + key] = _ratio(row.ms(key), smelt)
    # Peak memory above the process's baseline (training workloads), smelt's over libtorch's.
    peak = lambda key: (times.get(key) or {}).get("peak_mb")
    m["memory_ratio_libtorch"] = _ratio(peak("smelt"), peak(best)) if best and peak(best) else None
    # The same with smelt allocating its outputs on every run as the peers do.
    m["fresh_speedup_libtorch"] = _ratio(row.ms(best), row.ms("smelt_fresh")) if best else None
    # New outputs every run against outputs reused (the runtime issue: within 1.2x).
    m["fresh_over_reused"] = _ratio(row.ms("smelt_fresh"), smelt)
    # Throughput of every contender (for the tables), and smelt's bandwidth against STREAM.
    m["gbs"], m["gflops"] = {}, {}
    for key, r in times.items():
        if r.get("ms"):
            if workload.min_bytes:
                m["gbs"][key] = workload.min_bytes / (r["ms"] * 1e-3) / 1e9
            if workload.flops:
                m["gflops"][key] = workload.flops / (r["ms"] * 1e-3) / 1e9
    if workload.min_bytes and stream_copy_gbs:
        m["stream_ref_gbs"] = stream_copy_gbs
        m["stream_pct"] = {k: 100 * v / stream_copy_gbs for k, v in m["gbs"].items()}
    if workload.name == "gemm2048":
        # The best GEMM on the machine: OpenBLAS timed directly, and every peer's matmul.
        others = {k: r["ms"] for k, r in times.items() if not k.startswith("smelt") and r.get("ms")}
        if others:
            m["best_gemm"] = min(others, key=others.get)
            m["best_gemm_pct"] = _ratio(100 * others[m["best_gemm"]], smelt)
        # Against OpenBLAS as it loads by default (the library smelt's GEMM calls), for information.
        if row.ms("openblas_t2"):
            m["openblas_pct"] = _ratio(100 * row.ms("openblas_t2"), smelt)
    if compile_result:
        m.update({k: v for k, v in compile_result.items() if k.endswith("_ms")})
        if "error" in compile_result:
            m["compile_error"] = compile_result["error"]
    for t in workload.targets:
        value = m.get(t.metric)
        if t.metric == "stream_pct":
            value = (m.get("stream_pct") or {}).get("smelt")
        if value is None:
            row.verdicts.append(Verdict(t, None, None, _why_missing(t, row, stream_copy_gbs)))
        else:
            row.verdicts.append(Verdict(t, value, t.met(value)))
    return row


def _why_missing(target, row, stream_copy_gbs):
    smelt = row.times.get("smelt", {})
    if target.metric.endswith("compile_ms"):
        return row.metrics.get("compile_error", "compile not measured")
    if "error" in smelt:
        return smelt["error"]
    if target.metric == "stream_pct" and not stream_copy_gbs:
        return "STREAM not measured"
    if target.metric == "speedup_libtorch":
        errs = [row.times.get(k, {}).get("error") for k in ("libtorch_t1", "libtorch_t2")]
        return "libtorch not measured: %s" % "; ".join(e for e in errs if e) if any(errs) else "libtorch not run"
    if target.metric == "best_gemm_pct":
        return "no other GEMM measured"
    return "smelt not measured"
