"""Data-parallel training (issue 21): the all-reduce bandwidth smelt's collective group reaches (the all_reduce
op's path: joinMpiWorld, one communication thread, rank 0 hearing every rank arrive) against MPI_Allreduce called
directly on a buffer of the same size, on 2 ranks of this machine (Open MPI, shared memory), in alternating
processes (`mpirun -np 2 smelt_allreduce_bandwidth smelt|mpi MB REPEATS`). Target: at least 90% of
MPI_Allreduce's bandwidth on large buckets.

Overlap and scaling (measure_overlap): the MLP and ResNet-18 data-parallel training steps with each rank on a host
of its own (scripts/netns_hosts.sh: network namespaces, TCP over veth pairs slowed by tc), timed by smelt_dp_overlap
(its compute, comm, comm CPU and step medians) for each of CONFIGS (link rate, bucket size, ranks), one compute
thread per rank. Hidden: (compute + comm - step) / comm, target at least 70%; at most: (comm - comm CPU) / comm.
Scaling efficiency at N ranks (each on the workload's batch): the one-rank step's time over the N-rank step's."""
import os
import statistics
import subprocess

from . import runners

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(ROOT, "scripts", "netns_hosts.sh")
# (link rate of both directions of each host's link, DistributedOptions::bucketBytes in MB, ranks). 10 Gbit/s
# against a CPU core's step: communication a quarter of the computation, as between GPU hosts on 100 Gbit/s;
# but here TCP over veth costs about 1 ms of processor time per MB sent and received, so at 10 Gbit/s the
# communication is as much computation as transfer. 2.5 Gbit/s: about 600 flops per byte moved, a CPU cluster on
# 25 Gbit/s Ethernet. 25 MB buckets are DDP's default; 5 MB ones start the first buckets earlier in the backward
# pass. The 4-rank run (two ranks per core here) reports scaling.
CONFIGS = [("10gbit", 25, [2, 4]), ("10gbit", 5, [2]), ("2500mbit", 25, [2]), ("2500mbit", 5, [2])]
RATE_WORDS = {"10gbit": "10 Gbit/s", "2500mbit": "2.5 Gbit/s"}
WORKLOADS = ["mlp_train_step", "resnet18_train_step"]
HIDDEN_TARGET = 0.70

SIZES_MB = [4, 25, 64]
TARGET = 0.90


def _run(exe, mode, mb, repeats):
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "-np", "2", exe, mode, str(mb), str(repeats)]
    out, err = runners.run(cmd, 600, env=env)
    if err:
        return {"error": err}
    return runners.parse_pairs(out)


def measure(build_dir, quick, say):
    """{mb: {"smelt": [algbw...], "mpi": [algbw...], "error": ...}}"""
    exe = os.path.join(build_dir, "smelt_allreduce_bandwidth")
    if not os.path.exists(exe):
        return {"error": "smelt_allreduce_bandwidth was not built (no MPI)"}
    rounds, repeats = (1, 5) if quick else (5, 20)
    results = {}
    for mb in SIZES_MB:
        row = {"smelt": [], "mpi": []}
        for r in range(rounds):
            for mode in (("mpi", "smelt") if r % 2 == 0 else ("smelt", "mpi")):
                got = _run(exe, mode, mb, repeats)
                if "error" in got:
                    row["error"] = got["error"]
                else:
                    row[mode].append(float(got["algbw_gbs"]))
        results[mb] = row
        say("  all-reduce %3d MB on 2 ranks: smelt %s GB/s, MPI_Allreduce %s GB/s" % (
            mb, _median(row["smelt"]), _median(row["mpi"])))
    return results


def _median(values):
    return statistics.median(values) if values else None


def targets(results):
    if "error" in results:
        return [("all-reduce bandwidth >= 90% of MPI_Allreduce", results["error"], False)]
    rows = []
    big = max(SIZES_MB)
    s, m = _median(results[big]["smelt"]), _median(results[big]["mpi"])
    rows.append(("all-reduce of %d MB: >= 90%% of MPI_Allreduce's bandwidth" % big,
                 "%.0f%%" % (100 * s / m) if s and m else results[big].get("error", "not measured"),
                 bool(s and m and s >= TARGET * m)))
    return rows


def measure_overlap(build_dir, quick, say):
    """{"one": {workload: row}, (rate, bucket_mb): {ranks: {workload: row}}} or {"error": why}; a row holds
    compute_ms, comm_ms, comm_cpu_ms, step_ms, buckets, bucket_mb."""
    exe = os.path.join(build_dir, "smelt_dp_overlap")
    if not os.path.exists(exe):
        return {"error": "smelt_dp_overlap was not built (no MPI)"}
    steps = "4" if quick else "15"
    env = {"SMELT_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out, err = runners.run([exe, "--steps", steps], 1800, env=env)
    results = {"one": {"error": err} if err else _workloads(out)}
    for rate, bucket_mb, ranks in CONFIGS:
        up = subprocess.run(["bash", HOSTS, "up", str(max(ranks)), rate], capture_output=True, text=True)
        if up.returncode != 0:
            return {"error": "no test hosts (network namespaces need root): " + up.stderr.strip()[-200:]}
        config = results.setdefault((rate, bucket_mb), {})
        try:
            for n in ranks:
                hosts = ",".join("10.231.0.%d:1" % (2 + i) for i in range(n))
                forward = ["-x", "SMELT_NUM_THREADS"] + (["-x", "SMELT_CACHE_DIR"] if "SMELT_CACHE_DIR" in os.environ
                                                         else [])
                cmd = ["bash", HOSTS, "mpirun"] + forward + ["-np", str(n), "--host", hosts, exe, "--steps", steps,
                                                             "--bucket-mb", str(bucket_mb)]
                out, err = runners.run(cmd, 1800, env=env)
                if err:
                    config[n] = {"error": err}
                    continue
                config[n] = _workloads(out)
                for w, r in config[n].items():
                    say("  %-20s %d ranks, %s links, %d MB buckets: compute %s ms, comm %s ms (cpu %s), step %s ms" % (
                        w, n, rate, bucket_mb, r.get("compute_ms"), r.get("comm_ms", "-"), r.get("comm_cpu_ms", "-"),
                        r.get("step_ms", "-")))
        finally:
            subprocess.run(["bash", HOSTS, "down"], capture_output=True)
    return results


def _workloads(out):
    by = {}
    current = None
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2:
            continue
        key, value = parts
        if key == "workload":
            current = by.setdefault(value, {})
        elif current is not None:
            current[key] = value if key in ("bucket_mb", "compute_ms_each") else float(value)
    return by


def hidden(row):
    """The fraction of the step's communication hidden behind its computation (clamped to [0, 1])."""
    c, m, s = row.get("compute_ms"), row.get("comm_ms"), row.get("step_ms")
    if not (c and m and s):
        return None
    return max(0.0, min(1.0, (c + m - s) / m))


def hideable(row):
    """The most of the communication that can hide when every core computes: its wall time less the processor time
    it costs this rank (which the computation then waits for)."""
    m, cpu = row.get("comm_ms"), row.get("comm_cpu_ms")
    if not (m and cpu is not None):
        return None
    return max(0.0, min(1.0, (m - cpu) / m))


def efficiency(overlap, workload, n, config=None):
    one = overlap.get("one", {}).get(workload, {}).get("compute_ms")
    step = overlap.get(config or CONFIGS[0][:2], {}).get(n, {}).get(workload, {}).get("step_ms")
    return one / step if one and step else None


def _pct(v):
    return "%.0f%%" % (100 * v) if v is not None else "-"


def overlap_targets(overlap):
    if "error" in overlap:
        return [("communication hidden behind the backward pass >= 70%", overlap["error"], False),
                ("scaling efficiency at 2 and 4 ranks", overlap["error"], False)]
    rows = []
    for w in WORKLOADS:
        for rate in dict.fromkeys(r for r, _, _ in CONFIGS):
            # The bucket size is the user's option: the row names the better one.
            best = None
            for r, mb, _ in CONFIGS:
                row = overlap.get((r, mb), {}).get(2, {}).get(w, {}) if r == rate else {}
                h = hidden(row)
                if h is not None and (best is None or h > best[0]):
                    best = (h, mb, hideable(row))
            label = "%s on 2 hosts, %s links: communication hidden behind the computation >= 70%%" % (
                w, RATE_WORDS.get(rate, rate))
            if best is None:
                rows.append((label, "not measured", False))
            else:
                rows.append((label, "%s (%d MB buckets; at most %s here)" % (_pct(best[0]), best[1], _pct(best[2])),
                             best[0] >= HIDDEN_TARGET))
    for w in WORKLOADS:
        ranks = CONFIGS[0][2]
        effs = ["%d ranks %s" % (n, _pct(efficiency(overlap, w, n))) for n in ranks]
        # Reported, as the issue asks; 90% is the bar a data-parallel user expects from a fast link.
        ok = all(efficiency(overlap, w, n) and efficiency(overlap, w, n) >= 0.9 for n in ranks)
        rows.append(("%s: scaling efficiency (reported; >= 90%%)" % w, ", ".join(effs), ok))
    return rows


def overlap_markdown(overlap):
    md = ["### Data-parallel training: overlap and scaling across hosts", "",
          "The data-parallel training steps with every rank on a host of its own: network namespaces of this "
          "machine joined by veth pairs, each host's link slowed by tc (`scripts/netns_hosts.sh`), Open MPI over TCP "
          "between them, one compute thread per rank, each rank on the workload's whole batch (`smelt_dp_overlap`, "
          "medians). compute: the step without communication (all ranks at once; the slowest rank's median, which a "
          "synchronous step waits for); comm: the step's buckets all-reduced alone; comm CPU: the processor time "
          "this rank's process spends on them meanwhile (the communication thread and the kernel's TCP work, with "
          "the caller asleep); step: the data-parallel step. Hidden = (compute + comm - step) / comm, target at "
          "least 70%; *at most* = (comm - comm CPU) / comm, what can hide when the rank's one core computes "
          "(the processor time the transfer takes is time the computation waits for). Scaling efficiency: one "
          "rank's step over N ranks' (weak scaling: each rank a whole batch; 4 ranks share the 2 cores).", ""]
    if "error" in overlap:
        return md + [overlap["error"], ""]
    md += ["| workload | links | buckets (MB) | ranks | compute ms | comm ms | comm CPU ms | step ms | hidden | "
           "at most | scaling efficiency |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for w in WORKLOADS:
        one = overlap.get("one", {})
        row = one.get(w, {})
        md.append("| %s | - | - | 1 | %s | - | - | - | - | - | - |" % (w, one.get("error") or _ms(row.get("compute_ms"))))
        for rate, bucket_mb, ranks in CONFIGS:
            for n in ranks:
                r = overlap.get((rate, bucket_mb), {}).get(n, {})
                if "error" in r:
                    md.append("| %s | %s | %d | %d | %s | | | | | | |" % (w, RATE_WORDS.get(rate, rate), bucket_mb, n,
                                                                      r["error"]))
                    continue
                row = r.get(w, {})
                md.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                    w, RATE_WORDS.get(rate, rate), row.get("bucket_mb", "-"), n, _ms(row.get("compute_ms")),
                    _ms(row.get("comm_ms")), _ms(row.get("comm_cpu_ms")), _ms(row.get("step_ms")), _pct(hidden(row)),
                    _pct(hideable(row)), _pct(efficiency(overlap, w, n, (rate, bucket_mb)))))
    md.append("")
    return md


def _ms(v):
    return "%.1f" % v if v else "-"


def markdown(results):
    md = ["### Data-parallel training: all-reduce bandwidth", "",
          "An in-place f32 sum over 2 ranks of this machine (Open MPI 4.1, shared memory, `--oversubscribe` on its two "
          "cores), through smelt's collective group as the `all_reduce` op calls it, and MPI_Allreduce called "
          "directly, each repeat after a barrier, in alternating processes (median of each process's median; "
          "algorithm bandwidth, bytes / time). Target: at least 90% of MPI_Allreduce's on large buckets.", "",
          "| MB | smelt GB/s | MPI_Allreduce GB/s | smelt / MPI |", "|---|---|---|---|"]
    if "error" in results:
        return md + ["", results["error"], ""]
    for mb, row in results.items():
        s, m = _median(row["smelt"]), _median(row["mpi"])
        md.append("| %d | %s | %s | %s |" % (mb, "%.2f" % s if s else "-", "%.2f" % m if m else row.get("error", "-"),
                                            "%.0f%%" % (100 * s / m) if s and m else "-"))
    md.append("")
    return md
