"""Data-parallel training (issue 21): the all-reduce bandwidth smelt's collective group reaches (the all_reduce
op's path: joinMpiWorld, one communication thread, rank 0 hearing every rank arrive) against MPI_Allreduce called
directly on a buffer of the same size, on 2 ranks of this machine (Open MPI, shared memory), in alternating
processes (`mpirun -np 2 smelt_allreduce_bandwidth smelt|mpi MB REPEATS`). Target: at least 90% of
MPI_Allreduce's bandwidth on large buckets. The overlap and scaling targets need ranks behind a slowed link (tc in
network namespaces) and more cores than this machine's two: reported as not measured."""
import os
import statistics

from . import runners

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
    rows.append(("communication hidden behind the backward pass >= 70%", "not measured (needs a slowed link)", False))
    rows.append(("scaling efficiency at 2 and 4 ranks", "not measured (2 cores here)", False))
    return rows


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
    md += ["", "Overlap (communication hidden behind the backward pass, with the link slowed by tc) and scaling "
           "at 2 and 4 ranks are not measured: that needs ranks in network namespaces behind a slowed link, and "
           "more cores than this machine's two.", ""]
    return md
