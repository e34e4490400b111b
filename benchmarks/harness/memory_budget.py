"""Training under a memory budget (issue 22): the MLP and ResNet-18 training steps compiled with
TrainStepOptions::memoryBudget at fractions of their unbudgeted planned peak (CompileReport::plannedBytes: the
intermediate values; parameters, state and the vendor products' scratch are not counted), timed against the
unbudgeted step in the same process, alternately (`smelt_train_steps --memory-budget F,...`), with the loss of 5
steps from the same initial model compared. Targets: ResNet-18 (batch 16, 64x64) under half its peak in at most
1.3x the time with the same loss trajectory; the MLP under 0.6x of its peak in at most 1.2x the time."""
import os

from . import runners

FRACTIONS = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
TARGETS = {"resnet18_train_step": (0.5, 1.3), "mlp_train_step": (0.6, 1.2)}


def _blocks(text):
    """`workload NAME` starts a block of `KEY VALUE` lines -> [{key: value}] (numbers as floats)."""
    blocks = []
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "workload":
            blocks.append({"workload": value})
        elif blocks and key:
            try:
                blocks[-1][key] = float(value)
            except ValueError:
                blocks[-1][key] = value
    return blocks


def measure(build_dir, quick, say):
    """{workload: [{budget, planned_bytes, budget_planned_bytes, median_ms, budget_median_ms, ...}]} or {"error"}"""
    exe = os.path.join(build_dir, "smelt_train_steps")
    if not os.path.exists(exe):
        return {"error": "smelt_train_steps was not built"}
    fractions = [0.8, 0.5] if quick else FRACTIONS
    results = {}
    for workload in TARGETS:
        out, err = runners.run([exe, "--only", workload, "--memory-budget", ",".join(map(str, fractions)),
                                "--seconds", "1" if quick else "4"], 1800)
        if err:
            results[workload] = [{"error": err}]
            continue
        results[workload] = _blocks(out)
        for b in results[workload]:
            if "budget_error" in b:
                say("  %s under %.0f%% of its peak: no plan fits" % (workload, 100 * b["budget"]))
            else:
                say("  %s under %.0f%% of its peak: %.1f -> %.1f MB planned, %.1f -> %.1f ms" % (
                    workload, 100 * b["budget"], b["planned_bytes"] / 1e6, b["budget_planned_bytes"] / 1e6,
                    b["median_ms"], b["budget_median_ms"]))
    return results


def _at(rows, fraction):
    for r in rows:
        if abs(r.get("budget", -1) - fraction) < 1e-6:
            return r
    return None


def targets(results):
    if "error" in results:
        return [("memory budget targets", results["error"], False)]
    out = []
    for workload, (fraction, limit) in TARGETS.items():
        label = "%s under %.0f%% of its peak: <= %.1fx the time" % (workload, 100 * fraction, limit)
        r = _at(results.get(workload, []), fraction)
        if r is None or "error" in r:
            out.append((label, (r or {}).get("error", "not measured"), False))
        elif "budget_error" in r:
            out.append((label, "no plan fits", False))
        else:
            ratio = r["budget_median_ms"] / r["median_ms"]
            same = r["loss_max_rel_diff"] <= 1e-5
            out.append((label, "%.2fx%s" % (ratio, "" if same else ", losses differ"),
                        ratio <= limit and same and r["budget_planned_bytes"] <= fraction * r["planned_bytes"]))
    return out


def markdown(results):
    md = ["### Training under a memory budget", "",
          "Each training step compiled with `TrainStepOptions::memoryBudget` at a fraction of its unbudgeted planned "
          "peak (the intermediate values the memory plan places: parameters, optimizer state, inputs and the vendor "
          "products' scratch are not counted), on this machine's CPU; times are medians of runs alternating with the "
          "unbudgeted step in the same process; the losses of 5 steps from the same initial model are compared. "
          "The fuse pass recomputes forward values in the backward pass (passes/rematerialize.h) until the plan "
          "fits; where it finds none, the row says so.", "",
          "| workload | budget | planned MB | under the budget MB | ms | ms under the budget | time ratio | "
          "losses (max rel. diff) |", "|---|---|---|---|---|---|---|---|"]
    if "error" in results:
        return md + ["", results["error"], ""]
    for workload, rows in results.items():
        for r in rows:
            if "error" in r:
                md.append("| %s | - | - | - | - | - | - | %s |" % (workload, r["error"]))
            elif "budget_error" in r:
                md.append("| %s | %.0f%% | %.1f | no plan fits (%s) | - | - | - | - |" % (
                    workload, 100 * r["budget"], r["planned_bytes"] / 1e6,
                    str(r["budget_error"]).split("(fused")[0].split("the smallest found needs ")[-1].strip()))
            else:
                md.append("| %s | %.0f%% | %.1f | %.1f | %.1f | %.1f | %.2fx | %.1g |" % (
                    workload, 100 * r["budget"], r["planned_bytes"] / 1e6, r["budget_planned_bytes"] / 1e6,
                    r["median_ms"], r["budget_median_ms"], r["budget_median_ms"] / r["median_ms"],
                    r["loss_max_rel_diff"]))
    md += ["",
           "Why the MLP has no plan under about 81% of its peak: its weight gradients are never stored (each is "
           "computed inside its Adam update's kernel, written in place over the weight), so the planned peak is "
           "activations only, and one point of the backward pass needs three of them (batch 256 x 1024 f32, 1 MiB "
           "each) at once. The second layer's update reads its output gradient dz1 and its input h0, and writes "
           "over W2, so it must run after dh0 = dz1 W2^T has read the old W2; at dh0, dz1, h0 (stored or "
           "recomputed: recomputing it needs the old W0, so before the first layer's update, which needs dh0) "
           "and dh0 are live: 3 MiB of the 3.5 MiB peak. Going lower would take a copy of a weight (4 MiB of "
           "state to save 1 MiB of activations) or splitting the products along the batch.", ""]
    return md
