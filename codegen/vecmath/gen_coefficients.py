#!/usr/bin/env python3
"""Derives the polynomial coefficients of vector_math.h by a weighted Remez exchange (mpmath).

Each fit minimizes the maximum *relative* error of the final function (not of the polynomial alone):
for a form f(t) = fixed(t) + basis(t) * P(t) the target is (f - fixed) / basis and the weight is
basis / f. The minimax coefficients are then rounded to f32, and the error of the rounded polynomial
is measured again (it is what the header's comments quote). The split constants (ln2, pi/2 in four
parts, ...) come from here too. Run it to regenerate coefficients.h:

    python3 codegen/vecmath/gen_coefficients.py > codegen/vecmath/coefficients.h

Needs mpmath (Debian python3-mpmath). Takes a few seconds; the fit errors go to stderr.
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 40


def to_f32(v):
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def guard(t):
    # The targets below divide by powers of t; keep t off zero (the limits are smooth).
    return t if abs(t) > mp.mpf("1e-12") else mp.mpf("1e-12")


def remez(target, weight, a, b, deg, iters=60, samples=600):
    """Minimax fit of target on [a, b] by a polynomial of degree deg, minimizing max |weight (target - P)|.

    Returns (coefficients c_0..c_deg, max weighted error)."""
    a, b = mp.mpf(a), mp.mpf(b)
    n = deg + 1

    def err(c, t):
        return weight(t) * (target(t) - sum(cj * t**j for j, cj in enumerate(c)))

    # Chebyshev points as the first reference (n + 1 of them).
    xs = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / n) for i in range(n + 1)]
    # Zero weight at t = 0 for most forms here: keep the first reference off it.
    xs = [t + (b - a) / 500 if abs(t) < (b - a) / 1000 else t for t in xs]
    grid = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (samples - 1)) for i in range(samples)]
    best = None
    for _ in range(iters):
        A = mp.matrix(n + 1, n + 1)
        rhs = mp.matrix(n + 1, 1)
        for i, t in enumerate(xs):
            for j in range(n):
                A[i, j] = t**j
            A[i, n] = (-1) ** i / weight(t)
            rhs[i] = target(t)
        sol = mp.lu_solve(A, rhs)
        c = [sol[k] for k in range(n)]
        # Alternating extrema of the error: one per run of equal sign, refined by golden section.
        es = [err(c, t) for t in grid]
        runs = []
        start = 0
        for i in range(1, samples + 1):
            if i == samples or mp.sign(es[i]) != mp.sign(es[start]):
                k = max(range(start, i), key=lambda m: abs(es[m]))
                runs.append(k)
                start = i
        ext = []
        for k in runs:
            lo = grid[max(k - 1, 0)]
            hi = grid[min(k + 1, samples - 1)]
            f = lambda t: -abs(err(c, t))
            gr = (mp.sqrt(5) - 1) / 2
            x1, x2 = hi - gr * (hi - lo), lo + gr * (hi - lo)
            for _ in range(40):
                if f(x1) < f(x2):
                    lo = x1
                    x1, x2 = x2, lo + gr * (hi - lo)
                else:
                    hi = x2
                    x2, x1 = x1, hi - gr * (hi - lo)
            cand = [grid[k], (lo + hi) / 2]
            ext.append(max(cand, key=lambda t: abs(err(c, t))))
        while len(ext) > n + 1:
            if abs(err(c, ext[0])) < abs(err(c, ext[-1])):
                ext.pop(0)
            else:
                ext.pop()
        emax = max(abs(err(c, t)) for t in grid + ext)
        if len(ext) < n + 1:
            best = (c, emax)
            break
        emin = min(abs(err(c, t)) for t in ext)
        best = (c, emax)
        xs = ext
        if emax / emin - 1 < mp.mpf("1e-4"):
            break
    return best


def fit_f32(name, target, weight, a, b, deg):
    """Remez fit with the coefficients rounded to f32; returns them and the rounded fit's error."""
    c, _ = remez(target, weight, a, b, deg)
    c = [to_f32(v) for v in c]
    # Error of the f32 polynomial on a dense grid (exact arithmetic: evaluation rounding excluded).
    grid = [mp.mpf(a) + (mp.mpf(b) - mp.mpf(a)) * i / 3000 for i in range(3001)]
    e32 = max(abs(weight(t) * (target(t) - sum(mp.mpf(cj) * t**j for j, cj in enumerate(c))))
              for t in grid)
    return c, e32


def hexf(v):
    """C++ hex float literal of an f32 value, without trailing zero digits."""
    if v == 0:
        return "0.0f"
    h = float(v).hex()
    mant, exp = h.split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}f"


def split(v, parts, bits=24):
    """v as a sum of f32 values, each the rounding of what is left to `bits` significant bits."""
    out = []
    rest = mp.mpf(v)
    for _ in range(parts):
        if bits >= 24:
            p = to_f32(rest)
        else:
            e = mp.floor(mp.log(abs(rest), 2))
            q = mp.mpf(2) ** (e - bits + 1)
            p = to_f32(mp.nint(rest / q) * q)
        out.append(p)
        rest -= mp.mpf(p)
    return out


def log2(v):
    return float(mp.log(v, 2)) if v > 0 else float("-inf")


FITS = []


def fit(name, doc, target, weight, a, b, deg):
    c, e = fit_f32(name, target, weight, a, b, deg)
    print(f"{name}: degree {deg} on [{float(a):.6g}, {float(b):.6g}], max rel err 2^{log2(e):.2f}",
          file=sys.stderr)
    FITS.append((name, doc, c, e, a, b))


def main():
    ln2 = mp.log(2)
    pio4 = mp.pi / 4
    # exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2 (plus slack: k comes from a rounded product).
    rr = ln2 / 2 * (1 + mp.mpf(2) ** -10)
    fit("kExp", "exp(r) = 1 + r + r^2 * P(r), |r| <= ln2/2",
        lambda r: (mp.exp(guard(r)) - 1 - guard(r)) / guard(r) ** 2,
        lambda r: guard(r) ** 2 / mp.exp(r), -rr, rr, 5)
    # expm1(r) = r + r^2 P(r), same interval.
    fit("kExpm1", "expm1(r) = r + r^2 * P(r), |r| <= ln2/2",
        lambda r: (mp.expm1(guard(r)) - guard(r)) / guard(r) ** 2,
        lambda r: guard(r) ** 2 / mp.expm1(guard(r)), -rr, rr, 6)
    # log1p(f) = f - f^2/2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1].
    fa, fb = mp.sqrt(0.5) - 1, mp.sqrt(2) - 1
    fit("kLog1p", "log1p(f) = f - f^2/2 + f^3 * P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]",
        lambda f: (mp.log1p(guard(f)) - guard(f) + guard(f) ** 2 / 2) / guard(f) ** 3,
        lambda f: guard(f) ** 3 / mp.log1p(guard(f)), fa, fb, 8)
    # tanh(x) = x + x^3 P(x^2), |x| < 0.625.
    ta = mp.mpf("0.625")
    fit("kTanh", "tanh(x) = x + x^3 * P(x^2), |x| < 0.625",
        lambda u: (mp.tanh(mp.sqrt(guard(u))) - mp.sqrt(guard(u))) / guard(u) ** 1.5,
        lambda u: guard(u) ** 1.5 / mp.tanh(mp.sqrt(guard(u))), 0, ta**2, 5)
    # erf(x) = x + x P(x^2), |x| < 1.
    ea = mp.mpf(1)
    fit("kErfSmall", "erf(x) = x + x * P(x^2), |x| < 1",
        lambda u: mp.erf(mp.sqrt(guard(u))) / mp.sqrt(guard(u)) - 1,
        lambda u: mp.sqrt(guard(u)) / mp.erf(mp.sqrt(guard(u))), 0, ea**2, 6)
    # erf(x) = 1 - exp(-x^2) R(x), 1 <= x <= 4, R as a polynomial in (x - 2.5). Weighted by the
    # error it causes in erf (exp(-x^2) / erf): beyond x ~ 2 R needs few bits.
    eb = mp.mpf(4)
    mid = mp.mpf("2.5")
    fit("kErfc", "erf(x) = 1 - exp(-x^2) * P(x - 2.5), 1 <= x <= 4 (error relative to erf)",
        lambda t: mp.erfc(t + mid) * mp.exp((t + mid) ** 2),
        lambda t: mp.exp(-(t + mid) ** 2) / mp.erf(t + mid), ea - mid, eb - mid, 8)
    # sin(r) = r + r^3 P(r^2), cos(r) = 1 - r^2/2 + r^4 P(r^2), |r| <= pi/4 (plus slack).
    sr = pio4 * (1 + mp.mpf(2) ** -8)
    fit("kSin", "sin(r) = r + r^3 * P(r^2), |r| <= pi/4",
        lambda u: (mp.sin(mp.sqrt(guard(u))) - mp.sqrt(guard(u))) / guard(u) ** 1.5,
        lambda u: guard(u) ** 1.5 / mp.sin(mp.sqrt(guard(u))), 0, sr**2, 3)
    fit("kCos", "cos(r) = 1 - r^2/2 + r^4 * P(r^2), |r| <= pi/4",
        lambda u: (mp.cos(mp.sqrt(guard(u))) - 1 + guard(u) / 2) / guard(u) ** 2,
        lambda u: guard(u) ** 2 / mp.cos(mp.sqrt(guard(u))), 0, sr**2, 2)
    # pow's log: log(m) = 2s + 2/3 s^3 + s^5 P(s^2), s = (m-1)/(m+1), |s| <= 3 - 2 sqrt(2).
    sm = (3 - 2 * mp.sqrt(2)) * (1 + mp.mpf(2) ** -10)
    fit("kLogAtanh", "log(m) = 2s + 2/3 s^3 + s^5 * P(s^2), s = (m-1)/(m+1), |s| <= 3 - 2 sqrt(2)",
        lambda v: (2 * mp.atanh(mp.sqrt(guard(v))) - 2 * mp.sqrt(guard(v))
                   - mp.mpf(2) / 3 * guard(v) ** 1.5) / guard(v) ** 2.5,
        lambda v: guard(v) ** 2.5 / (2 * mp.atanh(mp.sqrt(guard(v)))), 0, sm**2, 3)

    ln2hi, ln2lo = split(ln2, 2)
    ln2hi16, ln2lo16 = split(ln2, 1, bits=16) + split(ln2 - split(ln2, 1, bits=16)[0], 1)
    pio2 = split(mp.pi / 2, 4)
    twoopi = split(2 / mp.pi, 2)
    twothirds = split(mp.mpf(2) / 3, 2)
    consts = [
        ("kLn2Hi", ln2hi, "ln2 = kLn2Hi + kLn2Lo (kLn2Hi is ln2 rounded to f32)"),
        ("kLn2Lo", ln2lo, ""),
        ("kLn2Hi16", ln2hi16, "ln2 = kLn2Hi16 + kLn2Lo16; kLn2Hi16 has 16 significant bits, so e * kLn2Hi16 "
                              "is exact for |e| < 256"),
        ("kLn2Lo16", ln2lo16, ""),
        ("kLog2e", to_f32(1 / ln2), "1/ln2"),
        ("kTwoOverPiHi", twoopi[0], "2/pi = kTwoOverPiHi + kTwoOverPiLo"),
        ("kTwoOverPiLo", twoopi[1], ""),
        ("kPiOver2_1", pio2[0], "pi/2 = kPiOver2_1 + _2 + _3 + _4 (each the f32 rounding of what is left)"),
        ("kPiOver2_2", pio2[1], ""),
        ("kPiOver2_3", pio2[2], ""),
        ("kPiOver2_4", pio2[3], ""),
        ("kTwoThirdsHi", twothirds[0], "2/3 = kTwoThirdsHi + kTwoThirdsLo"),
        ("kTwoThirdsLo", twothirds[1], ""),
    ]
    out = sys.stdout
    out.write("// Polynomial coefficients of vector_math.h: generated by gen_coefficients.py, do not edit.\n")
    out.write("#pragma once\n\n#include <array>\n\nnamespace smelt::vecmath::coeff {\n")
    for name, doc, c, e, a, b in FITS:
        out.write(f"\n/// {doc}.\n/// Minimax relative error of the f32 coefficients: 2^{log2(e):.1f} "
                  f"(evaluation rounding excluded). Lowest degree first.\n")
        out.write(f"inline constexpr std::array<float, {len(c)}> {name} = {{\n")
        for v in c:
            out.write(f"    {hexf(v)},  // {float(v):.9g}\n")
        out.write("};\n")
    out.write("\n// Split constants for exact range reduction.\n")
    for name, v, doc in consts:
        if doc:
            out.write(f"/// {doc}.\n")
        out.write(f"inline constexpr float {name} = {hexf(v)};  // {float(v):.9g}\n")
    out.write("\n}  // namespace smelt::vecmath::coeff\n")


if __name__ == "__main__":
    main()
