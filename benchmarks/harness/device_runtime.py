"""The device runtime's figures for the report: device allocations over a training run with the caching
pool and without (`smelt_pool_allocations`), and the placement crossovers `smelt tune` measures here."""
import json, os, subprocess, tempfile

POOL_TARGET = 5.0  # issue 7: at least 5x fewer device allocations, and less allocation time


def pool_allocations(bin_dir, steps=100):
    binary = os.path.join(bin_dir, "smelt_pool_allocations")
    if not os.path.exists(binary):
        return {"error": "smelt_pool_allocations is not built (no OpenCL at build time)"}
    r = subprocess.run([binary, "--steps", str(steps), "--json"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or "exit %d" % r.returncode).splitlines()[-1]}
    out = json.loads(r.stdout)
    pooled, unpooled = out["pooled"], out["unpooled"]
    out["fewer_allocations"] = unpooled["allocations"] / max(1, pooled["allocations"])
    out["less_time"] = unpooled["allocation_seconds"] / max(1e-9, pooled["allocation_seconds"])
    return out


def placement(smelt, quick):
    """`smelt tune` on every OpenCL/CUDA device into a scratch cache folder: {device id: table}."""
    with tempfile.TemporaryDirectory(prefix="smelt-tune-") as cache:
        env = dict(os.environ, SMELT_CACHE_DIR=cache)
        cmd = [smelt, "tune", "--repeats", "3" if quick else "7"] + (["--quick"] if quick else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        if r.returncode != 0:
            return {"error": (r.stderr.strip() or "exit %d" % r.returncode).splitlines()[-1]}
        folder = os.path.join(cache, "placement")
        tables = {}
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name)) as f:
                table = json.load(f)
            tables[table["device"]] = table
        return {"tables": tables}


def targets(pool):
    """(label, measured text, met) rows for the targets table."""
    if "error" in pool:
        return [("caching pool: >= 5x fewer device allocations", "not run: " + pool["error"], False)]
    return [("caching pool: >= 5x fewer device allocations", "%.0fx" % pool["fewer_allocations"],
             pool["fewer_allocations"] >= POOL_TARGET),
            ("caching pool: less allocation time", "%.0fx less" % pool["less_time"], pool["less_time"] > 1)]


def _amount(x):
    return "%.3g" % x if x >= 100000 else str(x)


def markdown(pool, place):
    md = ["## Device runtime", "",
          "### Caching memory pool", ""]
    if "error" in pool:
        md += ["Not run: %s." % pool["error"], ""]
    else:
        md += ["`smelt_pool_allocations --steps %d`: a training run on the OpenCL device (PoCL here), w' = w - lr "
               "x^T tanh(x w) with batch 256 and 784 -> 256, device-resident: a new batch uploaded each step, w kept "
               "on the device, a scalar fetched. Each setting runs in its own process." % pool["steps"], "",
               "| | device allocations | frees | time in the driver's allocate/free | pool hit rate | ms per step |",
               "|---|---|---|---|---|---|"]
        for label, r in (("pool (default)", pool["pooled"]), ("`SMELT_POOL=0`", pool["unpooled"])):
            md.append("| %s | %d | %d | %.3f ms | %.3f | %.2f |" % (label, r["allocations"], r["frees"],
                                                                   r["allocation_seconds"] * 1e3, r["hit_rate"],
                                                                   r["step_ms"]))
        md += ["", "With the pool: **%.0fx fewer device allocations** and **%.0fx less time allocating**. PoCL's "
               "allocations are host mallocs, so the step time barely moves here; on a GPU each avoided "
               "cudaMalloc-class call is tens of microseconds and a synchronization." % (
                   pool["fewer_allocations"], pool["less_time"]), ""]
    md += ["### Placement crossovers (`smelt tune`)", ""]
    if "error" in place:
        md += ["Not run: %s." % place["error"], ""]
    elif not place["tables"]:
        md += ["No OpenCL or CUDA device here: every graph runs on the CPU.", ""]
    for device, table in sorted(place.get("tables", {}).items()):
        md += ["%s (%s), %s. Median ms per run from host feeds to host outputs, CPU against the device:" % (
            device, table["name"], table["source"]), "",
            "| kind | size | CPU | %s | crossover |" % device, "|---|---|---|---|---|"]
        for k in table["kinds"]:
            cross = "never" if k["crossover"] is None else "%s %s" % (_amount(k["crossover"]), k["unit"])
            for i, p in enumerate(k["points"]):
                md.append("| %s | %s %s | %.3f | %.3f | %s |" % (k["kind"] if i == 0 else "", _amount(p["amount"]),
                                                                 k["unit"], p["cpu_seconds"] * 1e3,
                                                                 p["device_seconds"] * 1e3, cross if i == 0 else ""))
        md.append("")
    return md
