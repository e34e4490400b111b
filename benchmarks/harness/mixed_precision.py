"""Mixed precision (issue 22): the MLP and ResNet-18 training steps in f32, bf16 and f16 in smelt
(`smelt_train_steps --precision P`: products and convolutions in the low precision from f32 masters; f16 with
dynamic loss scaling on the device) beside PyTorch eager in f32 and under torch.autocast (bf16, f16) on the same
CPU (Debian's torch, all cores), each in its own process, rounds alternating. smelt's CPU executables widen
low-precision products to f32 ones on its f32 BLAS (passes/widen_products.cpp); PyTorch's bf16 runs oneDNN's bf16
kernels (this CPU has AVX-512 BF16)."""
import os
import statistics

from . import runners

WORKLOADS = ["mlp_train_step", "resnet18_train_step"]
PRECISIONS = ["f32", "bf16", "f16"]


def measure(build_dir, peers_python, budget, quick, say):
    """{workload: {contender: [ms, ...]}} or {"error": why}"""
    exe = os.path.join(build_dir, "smelt_train_steps")
    if not os.path.exists(exe):
        return {"error": "smelt_train_steps was not built"}
    rounds = 1 if quick else 3
    results = {}
    for workload in WORKLOADS:
        row = {}
        for r in range(rounds):
            for p in PRECISIONS:
                out, err = runners.run([exe, "--only", workload, "--precision", p, "--seconds",
                                        "1" if quick else "3"], 1800)
                if not err:
                    row.setdefault("smelt " + p, []).append(runners.parse_pairs(out)["median_ms"])
                else:
                    row.setdefault("smelt " + p + " error", [err])
                extra = ["--mode", "eager", "--threads", str(os.cpu_count() or 2)]
                if p != "f32":
                    extra += ["--autocast", p]
                got = runners.peer(peers_python, "torch_workloads.py", [workload], budget, extra)
                if workload in got:
                    row.setdefault("torch " + p, []).append(got[workload])
                else:
                    row.setdefault("torch " + p + " error", [got.get("error", "no time printed")])
        results[workload] = row
        say("  %s: %s" % (workload, ", ".join("%s %.1f ms" % (k, statistics.median(v)) for k, v in row.items()
                                               if not k.endswith("error"))))
    return results


def _median(row, key):
    values = row.get(key)
    return statistics.median(values) if values and not key.endswith("error") else None


def markdown(results):
    md = ["### Mixed precision on the CPU", "",
          "Each training step in f32 and with its products and convolutions in bf16 or f16 (f32 master weights; "
          "smelt's f16 with dynamic loss scaling on the device, PyTorch's forward under `torch.autocast`, its "
          "f16 without a GradScaler), each in its own process (median ms; rounds alternate). smelt's CPU "
          "executables run bf16 products and convolutions on oneDNN's bf16 GEMM where the CPU has AVX-512 BF16 (as "
          "this one; im2col layouts around it for the convolutions) and f16 ones as f32 products of the widened "
          "operands, rounded once (passes/widen_products.cpp); PyTorch's bf16 autocast runs oneDNN's bf16 "
          "primitives (direct convolutions); its CPU autocast refuses f16.", "",
          "| workload | smelt f32 | smelt bf16 | smelt f16 | torch f32 | torch bf16 autocast | torch f16 autocast | "
          "smelt bf16 / torch bf16 |", "|---|---|---|---|---|---|---|---|"]
    if "error" in results:
        return md + ["", results["error"], ""]
    for workload, row in results.items():
        cells = []
        for key in ("smelt f32", "smelt bf16", "smelt f16", "torch f32", "torch bf16", "torch f16"):
            v = _median(row, key)
            error = row.get(key + " error", ["-"])[0]
            cells.append("%.1f" % v if v else ("not supported" if "only support" in error else error[:60] or "-"))
        sb, tb = _median(row, "smelt bf16"), _median(row, "torch bf16")
        ratio = "%.2fx faster" % (tb / sb) if sb and tb and tb >= sb else ("%.2fx slower" % (sb / tb) if sb and tb else "-")
        md.append("| %s | %s | %s |" % (workload, " | ".join(cells), ratio))
    md.append("")
    return md


def targets(results):
    """No speed target: the issue asks for the comparison, reported in the section."""
    return []
