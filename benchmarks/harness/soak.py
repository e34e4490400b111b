"""Trust figures for the report (issue 19): the caching pool's rent/return cycle time over ten million
cycles, and a soak of training, predictor threads and compiles checking that nothing grows after the
warm-up (both `smelt_soak`, tests/soak/soak.cpp)."""
import os, re, subprocess

CYCLES = 10_000_000


def _run(binary, args, timeout):
    r = subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def measure(bin_dir, quick):
    binary = os.path.join(bin_dir, "smelt_soak")
    if not os.path.exists(binary):
        return {"error": "smelt_soak is not built"}
    out = {}
    cycles = CYCLES // 10 if quick else CYCLES
    rc, text = _run(binary, ["--device", "cpu", "--pool-cycles", str(cycles)], 600)
    m = re.search(r"pool: (\d+) rent/return cycles in ([\d.]+) s: ([\d.]+) ns each; (\d+) device allocations", text)
    out["pool"] = ({"cycles": int(m.group(1)), "seconds": float(m.group(2)), "ns": float(m.group(3)),
                    "allocations": int(m.group(4))} if rc == 0 and m else {"error": text.strip().splitlines()[-1]})
    seconds = 20 if quick else 120
    rc, text = _run(binary, ["--device", "cpu", "--seconds", str(seconds)], seconds + 300)
    m = re.search(r"soak: .*", text)
    line = [l for l in text.splitlines() if l.startswith("soak: ") and " s on " in l]
    out["soak"] = {"passed": rc == 0, "seconds": seconds, "summary": line[-1][6:] if line else text.strip()[-300:]}
    return out


def targets(results):
    if "error" in results:
        return [("pool: 10M rent/return cycles", "not run: " + results["error"], False)]
    pool, soak = results["pool"], results["soak"]
    rows = []
    if "error" in pool:
        rows.append(("pool: 10M rent/return cycles, no driver allocation after the first per size",
                     "failed: " + pool["error"], False))
    else:
        rows.append(("pool: %dM rent/return cycles, no driver allocation after the first per size" % (pool["cycles"] // 1_000_000),
                     "%.0f ns each, %d allocations" % (pool["ns"], pool["allocations"]), pool["allocations"] <= 4))
    rows.append(("soak (%d s): no growth of memory, pool or kernels after warm-up" % soak["seconds"],
                 "passed" if soak["passed"] else "FAILED", soak["passed"]))
    return rows


def markdown(results):
    md = ["### Trust: the pool's cycle time and a soak", ""]
    if "error" in results:
        return md + ["Not run: %s." % results["error"], ""]
    pool, soak = results["pool"], results["soak"]
    if "error" in pool:
        md += ["`smelt_soak --pool-cycles`: failed: %s." % pool["error"], ""]
    else:
        md += ["`smelt_soak --device cpu --pool-cycles %d`: rent and return blocks of 256 B, 4 KiB, 64 KiB and "
               "1 MiB in turn (`rentToOverwrite`: no fill timed): %d cycles in %.2f s, **%.0f ns per cycle**, %d "
               "allocations from the driver in all." % (pool["cycles"], pool["cycles"], pool["seconds"], pool["ns"],
                                                       pool["allocations"]), ""]
    md += ["`smelt_soak --device cpu --seconds %d` (training beside the CPU, three predictor threads and a rotation "
           "of compiles at once; docs/testing.md): %s. %s" % (soak["seconds"], "passed" if soak["passed"] else "FAILED",
                                                               soak["summary"]), ""]
    return md
