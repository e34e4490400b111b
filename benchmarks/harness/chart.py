"""docs/benchmarks.svg: three panels drawn from the run's rows, plain SVG (no plotting library).
  1. speedup over libtorch eager (log scale; bars grow up from 1x when faster, down when slower)
  2. the memory-bound workloads' bandwidth as a % of STREAM copy, with the targets as dashed lines
  3. the MLP training graph's compile times (log scale), with smelt's two targets"""
import math
from xml.sax.saxutils import escape

COLORS = {"smelt": "#e8590c", "smelt_fresh": "#ffa94d", "libtorch": "#4c6ef5", "torch_compile": "#7048e8",
          "jax": "#2f9e44", "openblas_t2": "#adb5bd", "openblas_avx512": "#495057", "onednn": "#1098ad",
          "target": "#c92a2a", "axis": "#495057", "grid": "#dee2e6"}
FONT = 'font-family="sans-serif"'


def _text(x, y, s, size=11, anchor="middle", color="#212529", weight="normal", rotate=None):
    rot = ' transform="rotate(%d %.1f %.1f)"' % (rotate, x, y) if rotate else ""
    return '<text x="%.1f" y="%.1f" %s font-size="%d" text-anchor="%s" fill="%s" font-weight="%s"%s>%s</text>' % (
        x, y, FONT, size, anchor, color, weight, rot, escape(s))


def _line(x1, y1, x2, y2, color, extra=""):
    return '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s/>' % (x1, y1, x2, y2, color, extra)


def _panel(x0, y0, width, height, title, groups, series, values, log, lo, hi, base, label, targets):
    """A grouped bar chart. values[group][key]: a number or None (drawn as 'n/a'); targets[group]: a list of
    (threshold, series key or None for the whole group)."""
    out = [_text(x0 + width / 2, y0 - 12, title, 13, weight="bold")]
    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    ypos = lambda v: y0 + height - (f(min(max(v, lo), hi)) - f(lo)) / (f(hi) - f(lo)) * height
    # Grid lines and their labels.
    ticks = [10 ** e for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)] if log else \
        [lo + i * (hi - lo) / 5 for i in range(6)]
    for t in ticks:
        out.append(_line(x0, ypos(t), x0 + width, ypos(t), COLORS["grid"]))
        out.append(_text(x0 - 6, ypos(t) + 4, ("%g" % t) + label, 10, "end", COLORS["axis"]))
    out.append(_line(x0, ypos(base), x0 + width, ypos(base), COLORS["axis"], ' stroke-width="1.5"'))
    gw = width / max(len(groups), 1)
    bw = min(28.0, gw * 0.85 / max(max(len(values.get(g, {})) for g in groups), 1))
    for gi, g in enumerate(groups):
        present = [s for s in series if s[0] in values.get(g, {})]  # this workload's contenders only
        gx = x0 + gi * gw + (gw - bw * len(present)) / 2
        for si, (key, _, color) in enumerate(present):
            v = values[g][key]
            bx = gx + si * bw
            if v is None or v <= 0:
                out.append(_text(bx + bw / 2, ypos(base) - 4, "n/a", 9, color=COLORS["axis"], rotate=-90))
                continue
            top, bottom = sorted((ypos(v), ypos(base)))
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.4g</title>'
                       '</rect>' % (bx + 1, top, bw - 2, max(bottom - top, 1), color, escape(g), escape(key), v))
            ty = top - 3 if ypos(v) <= ypos(base) else bottom + 10
            out.append(_text(bx + bw / 2, ty, _short(v), 9))
        for threshold, key in targets.get(g, []):
            if key is None:
                x1, x2 = gx - 2, gx + bw * len(present) + 2
            elif key in values.get(g, {}):
                si = [s[0] for s in present].index(key)
                x1, x2 = gx + si * bw - 2, gx + (si + 1) * bw + 2
            else:
                continue
            out.append(_line(x1, ypos(threshold), x2, ypos(threshold), COLORS["target"],
                             ' stroke-width="2" stroke-dasharray="4 2"'))
        out.append(_text(x0 + gi * gw + gw / 2, y0 + height + 16, g, 11))
    # Legend, wrapping onto a second row when it would pass the panel's right edge.
    lx, ly = x0, y0 + height + 28
    for key, name, color in series + [("target", "target", COLORS["target"])]:
        step = 24 + 6 * len(name)
        if lx + step > x0 + width + 20:
            lx, ly = x0, ly + 16
        out.append('<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>' % (lx, ly, color))
        out.append(_text(lx + 14, ly + 9, name, 10, "start"))
        lx += step
    return out


def _short(v):
    """Two significant digits (the tables carry the precision); whole numbers from 10 up."""
    return "%.0f" % v if v >= 10 else "%.2g" % v


def _range(vals, lo, hi):
    vals = [v for v in vals if v]
    if vals:
        lo = min(lo, 10 ** math.floor(math.log10(min(vals))))
        hi = max(hi, 10 ** math.ceil(math.log10(max(vals))))
    return lo, hi


def svg(rows, title):
    width, panel_h = 860, 230
    parts = []
    y = 60
    # 1. speedup over libtorch eager.
    series = [("smelt", "smelt", COLORS["smelt"]), ("smelt_fresh", "smelt, new outputs", COLORS["smelt_fresh"]),
              ("torch_compile", "torch.compile", COLORS["torch_compile"]),
              ("jax", "jax.jit", COLORS["jax"]), ("openblas_t2", "OpenBLAS", COLORS["openblas_t2"]),
              ("openblas_avx512", "OpenBLAS, AVX-512 kernels", COLORS["openblas_avx512"]),
              ("onednn", "oneDNN", COLORS["onednn"])]
    values, targets = {}, {}
    for row in rows:
        best = row.ms(row.libtorch_best) if row.libtorch_best else None
        values[row.workload.name] = {k: (best / row.ms(k) if best and row.ms(k) else None)
                                     for k, _, _ in series if k in row.times}
        targets[row.workload.name] = [(v.target.threshold, "smelt") for v in row.verdicts
                                      if v.target.metric == "speedup_libtorch"]
    lo, hi = _range([v for g in values.values() for v in g.values()], 0.1, 100)
    parts += _panel(90, y, width - 120, panel_h, "Speedup over libtorch eager (its better thread count), log scale",
                    [r.workload.name for r in rows], series, values, True, lo, hi, 1, "x", targets)
    y += panel_h + 110
    # 2. % of STREAM copy for the memory-bound workloads.
    mem = [r for r in rows if r.workload.min_bytes]
    if mem:
        series = [("smelt", "smelt", COLORS["smelt"]), ("smelt_fresh", "smelt, new outputs", COLORS["smelt_fresh"]),
                  ("libtorch", "libtorch eager (best)", COLORS["libtorch"]),
                  ("torch_compile", "torch.compile", COLORS["torch_compile"]), ("jax", "jax.jit", COLORS["jax"])]
        values, targets = {}, {}
        for row in mem:
            pct = row.metrics.get("stream_pct") or {}
            keys = {"smelt": "smelt", "smelt_fresh": "smelt_fresh", "libtorch": row.libtorch_best,
                    "torch_compile": "torch_compile", "jax": "jax"}
            values[row.workload.name] = {k: pct.get(t) for k, t in keys.items() if t in row.times}
            targets[row.workload.name] = [(v.target.threshold, "smelt") for v in row.verdicts
                                          if v.target.metric == "stream_pct"]
        top = max([100] + [v for g in values.values() for v in g.values() if v])
        parts += _panel(90, y, width - 120, panel_h, "Bandwidth, % of STREAM copy (fewest bytes)",
                        [r.workload.name for r in mem], series, values, False, 0, math.ceil(top / 20) * 20, 0, "%",
                        targets)
        y += panel_h + 110
    # 3. compile times of the training graph.
    mlp = next((r for r in rows if r.workload.name == "mlp_train"), None)
    if mlp:
        m = mlp.metrics
        series = [("smelt_cold", "smelt cold", COLORS["smelt"]),
                  ("smelt_warm", "smelt warm start", COLORS["smelt_fresh"]),
                  ("torch_compile", "torch.compile first call", COLORS["torch_compile"]),
                  ("jax", "jax.jit first call", COLORS["jax"])]
        v = {"smelt_cold": m.get("cold_compile_ms"), "smelt_warm": m.get("warm_compile_ms")}
        v.update({k: mlp.times[k].get("compile_ms") for k in ("torch_compile", "jax") if k in mlp.times})
        lo, hi = _range(list(v.values()), 1, 10000)
        t = [(tv.target.threshold, "smelt_cold" if tv.target.metric == "cold_compile_ms" else "smelt_warm")
             for tv in mlp.verdicts]
        parts += _panel(90, y, width - 120, panel_h, "MLP training graph: compile time (ms), log scale",
                        ["mlp_train"], series, {"mlp_train": v}, True, lo, hi, lo, " ms", {"mlp_train": t})
        y += panel_h + 110
    height = y - 40
    head = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">' % (
        width, height, width, height), '<rect width="100%" height="100%" fill="white"/>',
        _text(width / 2, 24, title, 14, weight="bold")]
    return "\n".join(head + parts + ["</svg>", ""])
