"""The run's results as text: the console table and docs/BENCHMARKS.md (markdown). Every figure comes
from this run's measurements; a target missed or not measured is stated as such."""
from .analysis import LABELS


def fmt_ms(ms):
    if ms is None:
        return "n/a"
    return "%.3g" % ms if ms < 10 else "%.1f" % ms


def fmt_x(x):
    return "n/a" if x is None else ("%.2fx" % x if x < 10 else "%.1fx" % x)


def fmt_pct(p):
    return "n/a" if p is None else "%.0f%%" % p


def fmt_value(target, value):
    if value is None:
        return "n/a"
    if target.metric.endswith("_pct"):
        return "%.1f%%" % value
    if target.metric.endswith("_ms"):
        return "%.1f ms" % value
    return fmt_x(value)


def verdict_text(v):
    if v.met is None:
        return "not measured (%s)" % v.why
    return "met" if v.met else "NOT MET"


def _cell(row, key):
    r = row.times.get(key)
    if not r:
        return "-"
    if "error" in r:
        return "failed"
    return fmt_ms(r.get("ms"))


def _libtorch_cell(row, suffix):
    """The better libtorch time with its thread count: '31.9 (1t)'."""
    if not row.libtorch_best:
        return _cell(row, "libtorch_t2")
    return "%s (%s%s)" % (fmt_ms(row.ms(row.libtorch_best)), row.libtorch_best[-1], suffix)


# ---- console ---------------------------------------------------------------------------------------

def console(rows, stream, peers):
    out = []
    s2 = stream.get("best") or {}
    s1 = stream.get("one_thread") or {}
    out.append("STREAM (best in this run): copy %s GB/s, triad %s GB/s on %s threads; 1 thread: copy %s GB/s" % (
        _num(s2.get("copy_gbs")), _num(s2.get("triad_gbs")), s2.get("threads", "?"), _num(s1.get("copy_gbs"))))
    header = "%-13s %9s %9s %13s %10s %9s %8s %10s %9s %8s %9s %8s" % (
        "workload", "smelt ms", "new-outs", "libtorch ms", "t.comp ms", "jax ms", "vs lt", "(new-outs)",
        "vs t.comp", "vs jax", "smelt GB/s", "%STREAM")
    out += ["", "median ms per run (lower is better); vs X = X's time / smelt's time (above 1: smelt faster); "
            "new-outs: smelt allocating its outputs every run, as the peers do",
            header, "-" * len(header)]
    for row in rows:
        m = row.metrics
        lt = _libtorch_cell(row, "t")
        gbs = m.get("gbs", {}).get("smelt")
        pct = (m.get("stream_pct") or {}).get("smelt")
        out.append("%-13s %9s %9s %13s %10s %9s %8s %10s %9s %8s %9s %8s" % (
            row.workload.name, _cell(row, "smelt"), _cell(row, "smelt_fresh"), lt, _cell(row, "torch_compile"),
            _cell(row, "jax"), fmt_x(m.get("speedup_libtorch")), fmt_x(m.get("fresh_speedup_libtorch")),
            fmt_x(m.get("speedup_torch_compile")), fmt_x(m.get("speedup_jax")), _num(gbs), fmt_pct(pct)))
    extra = []
    for row in rows:
        m = row.metrics
        if "best_gemm" in m:
            extra.append("gemm2048: smelt %s GFLOP/s; best GEMM %s (%s) %s GFLOP/s; smelt at %s of it, at %s of "
                         "OpenBLAS with its default kernels" % (
                             _num(m["gflops"].get("smelt")), LABELS[m["best_gemm"]],
                             fmt_ms(row.ms(m["best_gemm"])) + " ms", _num(m["gflops"].get(m["best_gemm"])),
                             fmt_pct(m.get("best_gemm_pct")), fmt_pct(m.get("openblas_pct"))))
        if "cold_compile_ms" in m or "compile_error" in m:
            extra.append("mlp_train compile: smelt cold %s ms, warm start %s ms (whole warm process %s ms); "
                         "first call: torch.compile %s ms, jax.jit %s ms" % (
                             fmt_ms(m.get("cold_compile_ms")), fmt_ms(m.get("warm_compile_ms")),
                             fmt_ms(m.get("warm_process_ms")),
                             fmt_ms(row.times.get("torch_compile", {}).get("compile_ms")),
                             fmt_ms(row.times.get("jax", {}).get("compile_ms"))))
    for row in rows:
        if row.workload.native:
            peaks = ", ".join("%s %s MB" % (LABELS[k], _num(r.get("peak_mb"))) for k, r in row.times.items()
                              if r.get("peak_mb") is not None)
            if peaks:
                extra.append("%s peak memory above baseline: %s" % (row.workload.name, peaks))
    out += [""] + extra if extra else []
    failures = [(row.workload.name, LABELS[k], r["error"])
                for row in rows for k, r in row.times.items() if "error" in r]
    if failures:
        out += ["", "failed measurements:"] + ["  %s / %s: %s" % f for f in failures]
    out += ["", "targets:"]
    for row in rows:
        for v in row.verdicts:
            out.append("  %-13s %-34s %12s  %s" % (row.workload.name, v.target.label, fmt_value(v.target, v.value),
                                                    verdict_text(v)))
    unavailable = [p for p in peers.values() if p.python is None]
    if unavailable:
        out += ["", "peers not run:"] + ["  %s: %s" % (p.name, p.reason) for p in unavailable]
    return "\n".join(out)


def _num(x):
    return "n/a" if x is None else "%.1f" % x


# ---- markdown --------------------------------------------------------------------------------------

def _gpu_section(info):
    """The last GPU check's summary (scripts/gpu_check.sh on a lent GPU; its summary.md kept as
    docs/gpu_check.md, naming the card, driver and date), or how to get one."""
    summary = info.get("gpu_summary")
    md = ["## GPU", ""]
    if not summary:
        md += ["No GPU run yet: none has been available to this project's sessions since the GPU check "
               "exists. On a CUDA host, `bash scripts/gpu_check.sh` (README, \"On a GPU host\") builds, "
               "tests and times smelt beside PyTorch eager and torch.compile on the same card; its "
               "summary goes to docs/gpu_check.md and into this section.", ""]
    else:
        md += ["From `scripts/gpu_check.sh` (docs/gpu_check.md): smelt's kernel time with the inputs on the "
               "GPU between CUDA events, and host-to-host time, beside PyTorch on the same card.", ""] + \
            summary.splitlines() + [""]
    if summary and "### Targets" in summary:
        return md  # the check's own table, with its figures
    measured = "see the summary above" if summary else "not measured: no GPU"
    md += ["### Targets of the GPU-kernels issue (H100 or H200)", "",
           "| target | measured | status |", "|---|---|---|"]
    for target in GPU_TARGETS:
        md.append("| %s | %s | %s |" % (target, measured, "to check" if summary else "NOT MET (not measured)"))
    return md + [""]


# The GPU-kernels issue's targets, measured by scripts/gpu_check.sh on a lent H100/H200.
GPU_TARGETS = [
    "ew_chain (16M f32, fused): at least 85% of the card's measured device-to-device copy bandwidth",
    "softmax (4096x4096 f32): at least 80% of that bandwidth",
    "layer_norm (8192x1024 f32): at least 80% of that bandwidth",
    "gemm 4096^3: within 5% of torch.matmul in the same dtype and TF32 setting",
    "MLP training step (784-1024-1024-10, batch 256, Adam): at least 1.2x torch.compile",
    "ResNet-18 training step: at least 1.0x torch.compile",
    "host time per replayed training step (CUDA graphs): at most 10 us",
]


def markdown(rows, stream, peers, info, device=None):
    md = ["# Benchmarks", ""]
    md.append("Generated by `%s` on %s%s, smelt commit `%s`. **Do not edit by hand**: rerun the command." % (
        info["command"], info["date"], " (**--quick: a smoke run, figures indicative only**)" if info["quick"] else "",
        info["commit"]))
    md += ["", "Machine: %s. Load average (1 min): %s." % (info["machine"], info["load"]), "",
           "The machine is shared and noisy: every time below is a median of many runs (%s), all contenders "
           "ran in this same run, one after another per workload%s, and the ratios are what to compare "
           "across runs, never one absolute time." % (info["budget"], info["rounds_text"]), ""]
    md += ["## Targets", "", "| workload | target | measured | met? |", "|---|---|---|---|"]
    for row in rows:
        for v in row.verdicts:
            md.append("| %s | %s | %s | %s |" % (row.workload.name, v.target.label, fmt_value(v.target, v.value),
                                                 "**met**" if v.met else verdict_text(v)))
    for area, label, measured, met in (device or {}).get("targets", []):
        md.append("| %s | %s | %s | %s |" % (area, label, measured, "**met**" if met else "NOT MET"))
    md += ["", "## Summary", "",
           "Median milliseconds per run (lower is better). *vs X* is X's time over smelt's: above 1, smelt "
           "is faster. libtorch is eager PyTorch at its better thread count (1 or 2) for each workload. "
           "*smelt* writes into the output tensors of its previous run (`smelt bench`'s default; what the "
           "targets use); *smelt, new outputs* allocates them on every run, as every peer's call does, so "
           "the first touch of fresh pages is timed for both (see Method).", "",
           "| workload | smelt | smelt, new outputs | libtorch (threads) | torch.compile | jax.jit | vs libtorch | "
           "vs libtorch, new outputs | vs torch.compile | vs jax.jit | smelt % of STREAM copy |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m = row.metrics
        lt = _libtorch_cell(row, "")
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row.workload.name, _cell(row, "smelt"), _cell(row, "smelt_fresh"), lt, _cell(row, "torch_compile"),
            _cell(row, "jax"), fmt_x(m.get("speedup_libtorch")), fmt_x(m.get("fresh_speedup_libtorch")),
            fmt_x(m.get("speedup_torch_compile")), fmt_x(m.get("speedup_jax")),
            fmt_pct((m.get("stream_pct") or {}).get("smelt")) if row.workload.min_bytes else "-"))
    md += ["", "![speedups, bandwidth and compile times](benchmarks.svg)", ""]
    md += ["## Workloads", ""]
    for row in rows:
        md += _workload_section(row)
    md += (device or {}).get("markdown", [])
    md += _gpu_section(info)
    md += _stream_section(stream)
    md += _peers_section(peers, info)
    md += ["## How to run", "", "```sh"] + info["how_to_run"] + ["```", ""]
    md += ["## Method", ""] + ["- " + line for line in info["method"]] + [""]
    return "\n".join(md)


def _workload_section(row):
    w, m = row.workload, row.metrics
    md = ["### %s" % w.name, "", w.summary + ".", ""]
    if w.min_bytes:
        md += ["Fewest bytes moved: %.1f MB (each input read once, each output written once). STREAM copy "
               "reference: %s GB/s (the better of the samples taken just before and just after smelt's runs)." % (
                   w.min_bytes / 1e6, _num(m.get("stream_ref_gbs"))), ""]
    if w.flops:
        md += ["Work: %.2f GFLOP." % (w.flops / 1e9), ""]
    head = "| contender | median ms | smelt speedup (its ms / smelt's) |"
    sep = "|---|---|---|"
    if w.min_bytes:
        head, sep = head + " GB/s | % of STREAM copy |", sep + "---|---|"
    if w.flops:
        head, sep = head + " GFLOP/s |", sep + "---|"
    if w.native:
        head, sep = head + " peak memory MB (above its baseline) | first call / compile ms |", sep + "---|---|"
    md += [head, sep]
    smelt = row.ms("smelt")
    for key, r in row.times.items():
        label = LABELS[key] + (" (best libtorch)" if key == row.libtorch_best else "")
        if "error" in r:
            md.append("| %s | failed: %s |%s" % (label, r["error"].replace("|", "/"), " |" * (sep.count("|") - 3)))
            continue
        ms = r.get("ms")
        cells = [label, fmt_ms(ms), "1" if key == "smelt" else fmt_x(ms / smelt if ms and smelt else None)]
        if w.min_bytes:
            cells += ["%.1f" % m["gbs"][key] if key in m.get("gbs", {}) else "n/a",
                      fmt_pct((m.get("stream_pct") or {}).get(key))]
        if w.flops:
            cells.append("%.1f" % m["gflops"][key] if key in m.get("gflops", {}) else "n/a")
        if w.native:
            cells += [_num(r.get("peak_mb")), fmt_ms(r.get("compile_ms"))]
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    if "best_gemm" in m:
        md += ["Best GEMM on the machine in this run: %s at %s GFLOP/s; smelt reaches %s of it (and %s of "
               "OpenBLAS on 2 threads with the kernels it picks by itself)." % (
                   LABELS[m["best_gemm"]], "%.1f" % m["gflops"][m["best_gemm"]], fmt_pct(m.get("best_gemm_pct")),
                   fmt_pct(m.get("openblas_pct"))), ""]
    if "cold_compile_ms" in m or "compile_error" in m:
        tc = row.times.get("torch_compile", {}).get("compile_ms")
        jx = row.times.get("jax", {}).get("compile_ms")
        md += ["Compile time of the training graph (forward and backward):", "",
               "| | ms |", "|---|---|"]
        if "compile_error" in m:
            md.append("| smelt | failed: %s |" % m["compile_error"])
        else:
            md += ["| smelt, cold: empty kernel cache dir (graph to ready executable, autodiff included) | %s |"
                   % fmt_ms(m.get("cold_compile_ms")),
                   "| smelt, warm start: a second process on the disk cache | %s |" % fmt_ms(m.get("warm_compile_ms")),
                   "| smelt, that whole second process (start, parse, compile, exit) | %s |"
                   % fmt_ms(m.get("warm_process_ms"))]
        md += ["| torch.compile, first call (tracing, AOTAutograd, Inductor; empty Inductor cache) | %s |" % fmt_ms(tc),
               "| jax.jit, first call (tracing, XLA compile) | %s |" % fmt_ms(jx), ""]
    return md


def _stream_section(stream):
    sizes = sorted({(s["array_mb"], s["reps"]) for _, s in stream.get("samples", []) if "error" not in s})
    size = " or ".join("%d MB of doubles, best of %d" % sr for sr in sizes) or "(not run)"
    md = ["## Memory bandwidth (STREAM)", "",
          "`benchmarks/native/stream.cpp`: McCalpin's copy and triad loops over 3 arrays of %s, split over "
          "the threads; copy counts 2 arrays per element, triad 3 (write-allocate traffic not counted, as "
          "STREAM does). Run at the start and the end of each round, and just before and after smelt's runs "
          "of each memory-bound workload: this machine's bandwidth drifts, so each such workload is held "
          "against the better of its own two samples." % size, "",
          "| run | threads | copy GB/s | triad GB/s |", "|---|---|---|---|"]
    for label, s in stream.get("samples", []):
        if "error" in s:
            md.append("| %s | | failed: %s | |" % (label, s["error"]))
        else:
            md.append("| %s | %s | %s | %s |" % (label, s["threads"], _num(s["copy_gbs"]), _num(s["triad_gbs"])))
    return md + [""]


def _peers_section(peers, info):
    md = ["## Peers", "", "| peer | version | how |", "|---|---|---|"]
    md.append("| libtorch eager | %s | Debian's python3-torch under /usr/bin/python3, at 1 and 2 threads "
              "(torch.set_num_threads) |" % info["libtorch_version"])
    if not peers:
        md.append("| torch.compile, jax.jit | - | not run (--no-peers) |")
    for p in peers.values():
        if p.python:
            md.append("| %s | %s | virtualenv %s%s |" % (p.name, p.version, info["rel"](p.python),
                                                         ", installed by this run" if p.installed_now else ""))
        else:
            md.append("| %s | - | **not run**: %s |" % (p.name, p.reason.replace("|", "/")))
    md.append("| OpenBLAS sgemm | %s | `benchmarks/native/sgemm.cpp`, cblas_sgemm called directly |" % (
        info.get("openblas_config") or "not run"))
    md.append("| oneDNN sgemm | %s | `benchmarks/native/sgemm.cpp`, dnnl_sgemm called directly |" % (
        info.get("onednn") or "not run"))
    return md + [""]
