"""Shape-polymorphic graphs (issue 18): each workload compiled with its batch (the first input's leading
extent) a symbolic dimension, beside the static compile of the same size, in alternating processes; and
the kernels a symbolic compile builds across batch sizes 1..256 (a fresh kernel cache), against one
size's. Targets: the symbolic executable within 5% of the static one; as many kernels for every size as
for one. The model API's training steps (smelt_train_steps) are measured the same way: created for
their batch, and created for a larger one and fed their batch as a partial one (the step of that size
runs the kernels every size shares)."""
import os
import tempfile

from . import runners
from .workloads import BY_NAME

WORKLOADS = ["ew_chain", "softmax_rows", "layernorm", "mlp_train"]
# Model-API workloads and the batch their steps are created for when fed theirs as a partial batch.
STEP_WORKLOADS = {"mlp_train_step": 512, "resnet18_train_step": 32}
SIZES = 256
SLACK = 1.05


def _bench(a, w, budget, cache, extra):
    cmd = [a.smelt, "bench", os.path.join(runners.IR_DIR, w.ir)] + budget.args() + extra
    if w.grad:
        cmd += ["--grad", w.grad]
    out, err = runners.run(cmd, 1800, env={"SMELT_CACHE_DIR": cache})
    if err:
        return {"error": err}
    return {"out": out, **runners.parse_pairs(out)}


def _train_step(a, name, budget, cache, compiled_batch):
    native = os.path.join(os.path.dirname(a.smelt), "smelt_train_steps")
    extra = ["--compiled-batch", str(compiled_batch)] if compiled_batch else []
    return runners.smelt_native(native, name, budget, cache, extra=extra)


def measure_steps(a, budget, cache, rounds, say):
    """{workload: {"static": [ms...], "symbolic": [ms...], "compiled_batch": n, "error": ...}}: a training
    step created for the workload's batch, and one created for a larger batch fed the workload's."""
    results = {}
    for name, compiled_batch in STEP_WORKLOADS.items():
        row = {"static": [], "symbolic": [], "compiled_batch": compiled_batch}
        for r in range(rounds):
            order = ("static", "symbolic") if r % 2 == 0 else ("symbolic", "static")
            got_round = {}
            for kind in order:
                got = _train_step(a, name, budget, cache, compiled_batch if kind == "symbolic" else 0)
                if "error" in got:
                    row["error"] = "%s: %s" % (kind, got["error"])
                else:
                    row[kind].append(got["ms"])
                    got_round[kind] = got["ms"]
            _pair(row, got_round)
        results[name] = row
        say("  partial batch %-20s created for its batch %s ms, for %d %s ms, paired ratio %s%s" % (
            name, _median(row["static"]), compiled_batch, _median(row["symbolic"]), _ratio(row),
            " (%s)" % row["error"] if "error" in row else ""))
    return results


def measure(a, budget, cache, rounds, say):
    """{workload: {"static": [ms...], "symbolic": [ms...], "compiled_all": n, "compiled_one": n, "error": ...}}"""
    results = {}
    for name in WORKLOADS:
        w = BY_NAME[name]
        row = {"static": [], "symbolic": []}
        for r in range(rounds):
            order = ("static", "symbolic") if r % 2 == 0 else ("symbolic", "static")
            got_round = {}
            for kind in order:
                got = _bench(a, w, budget, cache, ["--symbolic-batch"] if kind == "symbolic" else [])
                if "error" in got:
                    row["error"] = "%s: %s" % (kind, got["error"])
                elif "median_ms" in got:
                    row[kind].append(got["median_ms"])
                    got_round[kind] = got["median_ms"]
            _pair(row, got_round)
        with tempfile.TemporaryDirectory(prefix="smelt-sizes-") as fresh:
            got = _bench(a, w, runners.Budget(runs=1, warmup=0, min_runs=1, max_seconds=1), fresh,
                         ["--symbolic-batch", "--sweep-sizes", str(SIZES)])
        if "error" in got:
            row["error"] = "sweep: " + got["error"]
        else:
            row["compiled_all"] = got.get("sweep_kernels_compiled")
            row["compiled_batch1"] = got.get("sweep_kernels_compiled_batch_of_one")
            line = [l for l in got["out"].splitlines() if l.startswith("sweep_kernels_compiled")]
            row["sweep_line"] = line[0] if line else ""
            working = [l for l in got["out"].splitlines() if l.startswith("sweep_working_bytes")]
            if working:  # "sweep_working_bytes B (one block for every binding; K kept apart would hold A)"
                row["working_shared"] = int(working[0].split()[1])
                row["working_apart"] = int(working[0].rstrip(")").split()[-1])
            one = [l for l in got["out"].splitlines() if "one size compiled" in l]
            row["compiled_one"] = float(one[0].split("one size compiled ")[1].split(",")[0]) if one else None
        results[name] = row
        say("  symbolic batch %-14s static %s ms, symbolic %s ms, paired ratio %s; kernels compiled for sizes 1..%d: %s (one size: %s)%s" % (
            name, _median(row["static"]), _median(row["symbolic"]), _ratio(row), SIZES, row.get("compiled_all"),
            row.get("compiled_one"), " (%s)" % row["error"] if "error" in row else ""))
    return results


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def _pair(row, got_round):
    """Keeps one round's symbolic / static ratio: the two ran back to back, so a drift of the shared
    machine's speed between rounds (tens of percent within minutes) cancels in it."""
    if "static" in got_round and "symbolic" in got_round:
        row.setdefault("ratios", []).append(got_round["symbolic"] / got_round["static"])


def _ratio(row):
    """The median of the rounds' paired ratios (None without one)."""
    return _median(row.get("ratios", []))


def targets(results, steps=None):
    rows = []
    for name, row in results.items():
        ratio = _ratio(row)
        if ratio:
            rows.append(("%s: symbolic batch within 5%% of static" % name, "x%.3f" % ratio, ratio <= SLACK))
        if row.get("compiled_all") is not None and row.get("compiled_one") is not None:
            rows.append(("%s: kernels compiled for batch 1..%d = one size's" % (name, SIZES),
                         "%d vs %d" % (row["compiled_all"], row["compiled_one"]),
                         row["compiled_all"] <= row["compiled_one"]))
    for name, row in (steps or {}).items():
        ratio = _ratio(row)
        if ratio:
            rows.append(("%s: a partial batch's step within 5%% of the step compiled for that batch" % name,
                         "x%.3f" % ratio, ratio <= SLACK))
        else:
            rows.append(("%s: a partial batch's step within 5%% of the step compiled for that batch" % name,
                         row.get("error", "not measured"), False))
    return rows


def markdown(results, steps=None):
    md = ["### Shape-polymorphic graphs: a symbolic batch", "",
          "Each workload compiled twice, static and with its batch (the first input's leading extent) a "
          "symbolic dimension N in [1, max(batch, %d)], run at the file's size in alternating processes "
          "(`smelt bench W [--symbolic-batch]`, back to back in each of several rounds, order alternating; times are medians "
          "over rounds, the ratio the median of the rounds' paired ratios, so that the machine's drift between "
          "rounds cancels); then one process running the symbolic "
          "executable once at every batch size 1..%d from an empty kernel cache "
          "(`--sweep-sizes %d`), counting the kernels compiled rather than found in the cache. Kernels "
          "whose numbers alone change with the batch compile once and read those numbers at run time "
          "(codegen/size_general.h), a batch of 1 too (lowering keeps the index of a dim of 1, and a bias "
          "gradient whose [1, C] input has its [C] output's size is still tiled: the executable knows the two "
          "apart); a kernel whose shape changes with the size would compile its own. Targets: symbolic within 5%% of static; as many kernels for every size as for one. "
          "The bindings' memory plans share one working block (runtime/exec/working_memory.h), the largest one's: "
          "*working memory* is that block after the sweep, against what the (at most 32) kept bindings would hold "
          "each in a block of its own." % (SIZES, SIZES, SIZES),
          "",
          "| workload | static ms | symbolic ms | symbolic / static | kernels, one size | kernels, sizes 1..%d | of which batch 1 | working memory, one block | kept bindings apart |" % SIZES,
          "|---|---|---|---|---|---|---|---|---|"]
    mib = lambda b: "%.2f MiB" % (b / 2.0**20) if b is not None else "-"
    f = lambda v: "%.3f" % v if v else "-"
    for name, row in results.items():
        s, y = _median(row["static"]), _median(row["symbolic"])
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, f(s), f(y), "%.3f" % _ratio(row) if _ratio(row) else "-",
            "%d" % row["compiled_one"] if row.get("compiled_one") is not None else "-",
            "%d" % row["compiled_all"] if row.get("compiled_all") is not None else row.get("error", "-"),
            "%d" % row["compiled_batch1"] if row.get("compiled_batch1") is not None else "-",
            mib(row.get("working_shared")), mib(row.get("working_apart"))))
    md.append("")
    if steps:
        md += ["The model API's training steps (`smelt_train_steps --only W [--compiled-batch B]`, alternating "
               "processes, back to back in each round: medians over rounds, the ratio the median of paired ratios): "
               "created for the workload's batch, and created for a batch of "
               "B and fed the workload's as a partial batch, whose step compiles on its first run from the "
               "kernels every size shares (nn::TrainStep; outside the timing).", "",
               "| workload | created for its batch, ms | created for B, fed its batch, ms | ratio | B |",
               "|---|---|---|---|---|"]
        for name, row in steps.items():
            s, y = _median(row["static"]), _median(row["symbolic"])
            md.append("| %s | %s | %s | %s | %d |" % (name, f(s), f(y), "%.3f" % _ratio(row) if _ratio(row) else
                                                      row.get("error", "-"), row["compiled_batch"]))
        md.append("")
    return md
