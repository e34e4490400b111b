#!/usr/bin/python3
"""resnet18's arena: `smelt inspect --json` of torchvision's resnet18 exported to ONNX, forward and
forward + backward (gradients for the input and every parameter), as written (every node a kernel) and
after the default pipeline (fused kernels), peak within 1.1x of the lower bound.
Usage: check_memory_plan.py PATH/TO/smelt   (Debian's python3 with torch and torchvision)."""
import json, os, subprocess, sys, tempfile
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import resnet18  # noqa: E402

SMELT = sys.argv[1] if len(sys.argv) > 1 else "build/bin/smelt"


def main():
    torch.manual_seed(1)
    name, model, x, opset = resnet18()
    model.eval()
    # The exporter merges equal initializers (fresh norm weights are all ones) behind Identity nodes;
    # perturbing every parameter keeps each one its own, so every name can be differentiated.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.onnx")
        torch.onnx.export(model, x, path, input_names=["input"], output_names=["output"], opset_version=opset,
                          do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
        wrt = ["input"] + [k for k, _ in model.named_parameters()]
        runs = [(f"{what}{suffix}", grad + passes)
                for what, grad in (("forward", []), ("forward+backward", ["--grad", ",".join(wrt)]))
                for suffix, passes in ((" unfused", ["--passes", "none"]), (" fused", []))]
        for label, extra in runs:
            r = subprocess.run([SMELT, "inspect", path, "--json", *extra], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name} {label}: smelt inspect failed: {r.stderr.strip()}")
                failures += 1
                continue
            info = json.loads(r.stdout)
            ratio = info["peak_bytes"] / info["lower_bound_bytes"]
            ok = info["lower_bound_bytes"] <= info["peak_bytes"] <= 1.1 * info["lower_bound_bytes"]
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} {label}: {info['nodes']} nodes, {info['kernels']} kernels "
                  f"({info['kernels_unfused']} unfused), {info['buffers']} buffers, "
                  f"{info['in_place_reuses']} in place, peak {info['peak_bytes']} bytes, lower bound "
                  f"{info['lower_bound_bytes']}, ratio {ratio:.3f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
