"""Data-parallel training (issue 21): the all-reduce bandwidth smelt's collective group reaches (the all_reduce
op's path: joinMpiWorld, one communication thread, rank 0 hearing every rank arrive) against MPI_Allreduce called
directly on a buffer of the same size, on 2 ranks of this machine (Open MPI, shared memory), in alternating
processes (`mpirun -np 2 smelt_allreduce_bandwidth smelt|mpi MB REPEATS`). Target: at least 90% of
MPI_Allreduce's bandwidth on large buckets.

Overlap and scaling (measure_overlap): the MLP and ResNet-18 data-parallel training steps with each rank on a host
of its own (scripts/netns_hosts.sh: network namespaces, TCP over veth pairs slowed by tc to LINK_RATE), timed by
smelt_dp_overlap (its compute, comm and step medians) on 1, 2 and 4 ranks, one compute thread per rank. Hidden:
(compute + comm - step) / comm, target at least 70%. Scaling efficiency at N ranks (each on the workload's batch):
the one-rank step's time over the N-rank step's."""
import os
import statistics
import subprocess

from . import runners

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(ROOT, "scripts", "netns_hosts.sh")
# Both directions of each host's link. 10 Gbit/s against a CPU's step: communication a quarter to a third of the
# computation, as data-parallel training between GPU hosts on 100 Gbit/s commonly sees.
LINK_RATE = "10gbit"
RANKS = [1, 2, 4]
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
    """{ranks: {workload: {"compute_ms", "comm_ms", "step_ms", "buckets", "bucket_mb"}}} or {"error": why}."""
    exe = os.path.join(build_dir, "smelt_dp_overlap")
    if not os.path.exists(exe):
        return {"error": "smelt_dp_overlap was not built (no MPI)"}
    up = subprocess.run(["bash", HOSTS, "up", str(max(RANKS)), LINK_RATE], capture_output=True, text=True)
    if up.returncode != 0:
        return {"error": "no test hosts (network namespaces need root): " + up.stderr.strip()[-200:]}
    steps = "4" if quick else "15"
    env = {"SMELT_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    results = {}
    try:
        for n in RANKS:
            if n == 1:
                cmd = [exe, "--steps", steps]
            else:
                hosts = ",".join("10.231.0.%d:1" % (2 + i) for i in range(n))
                forward = ["-x", "SMELT_NUM_THREADS"] + (["-x", "SMELT_CACHE_DIR"] if "SMELT_CACHE_DIR" in os.environ
                                                         else [])
                cmd = ["bash", HOSTS, "mpirun"] + forward + ["-np", str(n), "--host", hosts, exe, "--steps", steps]
            out, err = runners.run(cmd, 1800, env=env)
            if err:
                results[n] = {"error": err}
                continue
            results[n] = _workloads(out)
            for w, r in results[n].items():
                say("  %-20s %d rank(s): compute %s ms, comm %s ms, step %s ms" % (
                    w, n, r.get("compute_ms"), r.get("comm_ms", "-"), r.get("step_ms", "-")))
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


def efficiency(overlap, workload, n):
    one = overlap.get(1, {}).get(workload, {}).get("compute_ms")
    step = overlap.get(n, {}).get(workload, {}).get("step_ms")
    return one / step if one and step else None


def overlap_targets(overlap):
    if "error" in overlap:
        return [("communication hidden behind the backward pass >= 70%", overlap["error"], False),
                ("scaling efficiency at 2 and 4 ranks", overlap["error"], False)]
    rows = []
    for w in WORKLOADS:
        h = hidden(overlap.get(2, {}).get(w, {}))
        rows.append(("%s on 2 hosts: communication hidden behind the computation >= 70%%" % w,
                     "%.0f%%" % (100 * h) if h is not None else overlap.get(2, {}).get("error", "not measured"),
                     bool(h is not None and h >= HIDDEN_TARGET)))
    for w in WORKLOADS:
        effs = ["%d ranks %s" % (n, "%.0f%%" % (100 * e) if e else "-")
                for n in RANKS[1:] for e in [efficiency(overlap, w, n)]]
        # Reported, as the issue asks; 90% is the bar a data-parallel user expects from a fast link.
        ok = all(efficiency(overlap, w, n) and efficiency(overlap, w, n) >= 0.9 for n in RANKS[1:])
        rows.append(("%s: scaling efficiency (reported; >= 90%%)" % w, ", ".join(effs), ok))
    return rows


def overlap_markdown(overlap):
    md = ["### Data-parallel training: overlap and scaling across hosts", "",
          "The data-parallel training steps with every rank on a host of its own: network namespaces of this "
          "machine joined by veth pairs, each host's link slowed by tc to %s each way "
          "(`scripts/netns_hosts.sh`), Open MPI over TCP between them, one compute thread per rank, each rank on "
          "the workload's whole batch (`smelt_dp_overlap`, medians). compute: the step without communication "
          "(all ranks at once; the slowest rank's median, which a synchronous step waits for); comm: the step's buckets all-reduced alone; step: the data-parallel step. "
          "Hidden = (compute + comm - step) / comm, target at least 70%%. Scaling efficiency: one rank's step "
          "over N ranks' (weak scaling: each rank a whole batch)." % LINK_RATE, ""]
    if "error" in overlap:
        return md + [overlap["error"], ""]
    md += ["| workload | ranks | buckets (MB) | compute ms | comm ms | step ms | hidden | scaling efficiency |",
           "|---|---|---|---|---|---|---|---|"]
    for w in WORKLOADS:
        for n in RANKS:
            r = overlap.get(n, {})
            if "error" in r:
                md.append("| %s | %d | %s | | | | | |" % (w, n, r["error"]))
                continue
            row = r.get(w, {})
            h, e = hidden(row), efficiency(overlap, w, n) if n > 1 else None
            md.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                w, n, row.get("bucket_mb", "-"), _ms(row.get("compute_ms")), _ms(row.get("comm_ms")),
                _ms(row.get("step_ms")), "%.0f%%" % (100 * h) if h is not None else "-",
                "%.0f%%" % (100 * e) if e else "-"))
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
