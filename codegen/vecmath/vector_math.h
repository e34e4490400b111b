// f32 exp, expm1, log, log1p, tanh, sigmoid, erf, sin, cos, tan and pow written once over an abstract emitter.
#pragma once

// Why an emitter: the LLVM CPU backend would otherwise call scalar libm once per element, which makes
// fused kernels compute bound. These algorithms are written once against the `Emitter` concept below
// and instantiated twice: with `ScalarEmitter` (plain floats: tests, constant folding) and with the
// LLVM renderer's emitter, which builds one IR instruction per call (the loop vectorizer widens them
// with the rest of the kernel). So the code here uses only operations that have a direct SIMD
// equivalent: no branches on data, no table lookups, no calls. Every "if" is a computed-both-ways
// `select`.
//
// Accuracy: at most 2 ulp from the correctly rounded result over every finite f32 input (sin, cos
// and tan: |x| <= kTrigMaxArg); measured over all inputs: 1 ulp, or 1.26 ulp against the exact value.
// Special values as libm: NaN in gives NaN out, ±inf and ±0 as libm (tanh(-0) = -0, expm1(-0) = -0,
// sin(-0) = -0, log(0) = -inf, log(-1) = NaN), overflow to inf and gradual underflow to denormals.
// docs/codegen.md ("Vector math") lists methods and measured errors. There are no f64 versions: they
// would need f64 emitter types and polynomials twice as long; f64 kernels call libm.
//
// Requirements on the generated code: IEEE f32 with denormals (no flush-to-zero), round to nearest,
// and no fast-math flags on the emitted ops (several steps compute rounding errors exactly, e.g.
// (a - (a + b)) + b, which reassociation would fold to 0; fma must stay fused, and a mul + add must
// not be contracted into one).

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "codegen/vecmath/coefficients.h"

namespace smelt::vecmath {

/// The operations the algorithms are written in; each maps to one LLVM IR vector instruction.
///
/// Types: `Value` holds f32 lanes, `Int` int32 lanes (same lane count), `Mask` one bool per lane.
///
///   constant(float) -> Value              splat of an f32 constant
///   iconstant(int32_t) -> Int             splat of an i32 constant
///   add, sub, mul, div(Value, Value)      IEEE f32, round to nearest (fadd, fsub, fmul, fdiv)
///   fma(a, b, c) -> Value                 a * b + c with ONE rounding (llvm.fma; must not be split)
///   neg(Value), abs(Value)                sign flip / clear, exact, also for NaN (fneg, llvm.fabs)
///   rint(Value)                           round to integral, ties to even (llvm.roundeven)
///   lt, le, gt, ge, eq(Value, Value) -> Mask   ordered compares: false if either is NaN (fcmp o..)
///   isnan(Value) -> Mask                  fcmp uno x, x
///   mand, mor(Mask, Mask), mnot(Mask)     lane-wise logic on masks (and, or, xor with true)
///   select(Mask, Value, Value) -> Value   per lane: mask ? first : second (select)
///   asInt(Value) -> Int, asFloat(Int) -> Value   bit casts (bitcast)
///   iadd, isub, iand, ior, ixor(Int, Int) -> Int   wrapping i32 arithmetic / bit logic
///   shl(Int, int), sra(Int, int)          shift by a constant 0..31; sra is arithmetic (shl, ashr)
///   ieq(Int, Int) -> Mask                 icmp eq
///   toInt(Value) -> Int                   truncation toward zero (fptosi); the algorithms only pass
///                                         integral values within int32 and never NaN (fptosi would
///                                         give poison)
///   toFloat(Int) -> Value                 sitofp (only used on |i| < 2^24, so exact)
///
/// The emitter is passed by reference and may carry state (an IRBuilder). No min/max: clamps are
/// compare + select so that NaN passes through them unchanged (llvm.minnum would drop it).
template <class E>
concept Emitter = requires(E& e, typename E::Value v, typename E::Int i, typename E::Mask m, float f,
                           int32_t k, int shift) {
  { e.constant(f) } -> std::same_as<typename E::Value>;
  { e.iconstant(k) } -> std::same_as<typename E::Int>;
  { e.add(v, v) } -> std::same_as<typename E::Value>;
  { e.sub(v, v) } -> std::same_as<typename E::Value>;
  { e.mul(v, v) } -> std::same_as<typename E::Value>;
  { e.div(v, v) } -> std::same_as<typename E::Value>;
  { e.fma(v, v, v) } -> std::same_as<typename E::Value>;
  { e.neg(v) } -> std::same_as<typename E::Value>;
  { e.abs(v) } -> std::same_as<typename E::Value>;
  { e.rint(v) } -> std::same_as<typename E::Value>;
  { e.lt(v, v) } -> std::same_as<typename E::Mask>;
  { e.le(v, v) } -> std::same_as<typename E::Mask>;
  { e.gt(v, v) } -> std::same_as<typename E::Mask>;
  { e.ge(v, v) } -> std::same_as<typename E::Mask>;
  { e.eq(v, v) } -> std::same_as<typename E::Mask>;
  { e.isnan(v) } -> std::same_as<typename E::Mask>;
  { e.mand(m, m) } -> std::same_as<typename E::Mask>;
  { e.mor(m, m) } -> std::same_as<typename E::Mask>;
  { e.mnot(m) } -> std::same_as<typename E::Mask>;
  { e.select(m, v, v) } -> std::same_as<typename E::Value>;
  { e.asInt(v) } -> std::same_as<typename E::Int>;
  { e.asFloat(i) } -> std::same_as<typename E::Value>;
  { e.iadd(i, i) } -> std::same_as<typename E::Int>;
  { e.isub(i, i) } -> std::same_as<typename E::Int>;
  { e.iand(i, i) } -> std::same_as<typename E::Int>;
  { e.ior(i, i) } -> std::same_as<typename E::Int>;
  { e.ixor(i, i) } -> std::same_as<typename E::Int>;
  { e.shl(i, shift) } -> std::same_as<typename E::Int>;
  { e.sra(i, shift) } -> std::same_as<typename E::Int>;
  { e.ieq(i, i) } -> std::same_as<typename E::Mask>;
  { e.toInt(v) } -> std::same_as<typename E::Int>;
  { e.toFloat(i) } -> std::same_as<typename E::Value>;
};

/// sin, cos and tan keep their accuracy bound for |x| <= kTrigMaxArg (about 2.5e7). The Cody-Waite
/// reduction needs the quadrant count to stay below 2^24; a Payne-Hanek reduction would need a table
/// of 2/pi bits indexed by the exponent, which an emitter cannot express. Finite |x| above it is out
/// of range: sin and tan return ±0 and cos 1 (finite and in range, not the true value); a caller that
/// needs huge arguments must route those lanes to libm.
inline constexpr float kTrigMaxArg = 0x1.8p+24f;

namespace detail {

template <Emitter E>
using V = typename E::Value;
template <Emitter E>
using I = typename E::Int;
template <Emitter E>
using M = typename E::Mask;

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr int32_t kSignBit = INT32_MIN;

/// Horner's rule with fma: c[0] + t * (c[1] + t * (...)).
template <Emitter E, std::size_t N>
V<E> poly(E& e, V<E> t, const std::array<float, N>& c) {
  V<E> p = e.constant(c[N - 1]);
  for (std::size_t i = N - 1; i-- > 0;) p = e.fma(p, t, e.constant(c[i]));
  return p;
}

/// min(x, hi) and max(x, lo) that let NaN through.
template <Emitter E>
V<E> clampAbove(E& e, V<E> x, float hi) {
  return e.select(e.gt(x, e.constant(hi)), e.constant(hi), x);
}
template <Emitter E>
V<E> clampBelow(E& e, V<E> x, float lo) {
  return e.select(e.lt(x, e.constant(lo)), e.constant(lo), x);
}

/// fptosi of an integral value, with NaN mapped to 0 first (fptosi(NaN) is poison in LLVM IR).
template <Emitter E>
I<E> toIntNanToZero(E& e, V<E> x) {
  return e.toInt(e.select(e.isnan(x), e.constant(0.0f), x));
}

template <Emitter E>
I<E> signBit(E& e, V<E> x) {
  return e.iand(e.asInt(x), e.iconstant(kSignBit));
}

/// x with `sign` (a sign bit or 0) xor'ed into its sign.
template <Emitter E>
V<E> xorSign(E& e, V<E> x, I<E> sign) {
  return e.asFloat(e.ixor(e.asInt(x), sign));
}

/// 2^k for -126 <= k <= 127, built from the exponent bits.
template <Emitter E>
V<E> pow2(E& e, I<E> k) {
  return e.asFloat(e.shl(e.iadd(k, e.iconstant(127)), 23));
}

/// p * 2^k for -252 <= k <= 254 in two exact steps, so a denormal result is rounded once.
template <Emitter E>
V<E> scalePow2(E& e, V<E> p, I<E> k) {
  I<E> k1 = e.sra(k, 1);
  return e.mul(e.mul(p, pow2(e, k1)), pow2(e, e.isub(k, k1)));
}

/// exp(x + lo) = (hi + lo') 2^k before the final scaling, |lo| <= ulp(x); lo may be null. x is clamped
/// to [-104, 89] (exp(-104) rounds to 0, exp(89) overflows), which keeps k in range; NaN passes.
template <Emitter E>
void expParts(E& e, V<E> x, const V<E>* lo, V<E>& hi, V<E>& loOut, I<E>& k) {
  x = clampBelow(e, clampAbove(e, x, 89.0f), -104.0f);
  // x = k ln2 + r, |r| <= ln2/2. The first step is exact: k * kLn2Hi is exact inside the fma, and for
  // k != 0 (|x| > 0.34) x - k * kLn2Hi is a multiple of 2^-25 below 2^-1, so it fits in 24 bits.
  V<E> kf = e.rint(e.mul(x, e.constant(coeff::kLog2e)));
  V<E> r = e.fma(kf, e.constant(-coeff::kLn2Hi), x);
  r = e.fma(kf, e.constant(-coeff::kLn2Lo), r);
  if (lo) r = e.add(r, *lo);
  // exp(r) = 1 + q, q = r + r^2 P(r); hi = 1 + q rounded once, loOut its rounding error (Fast2Sum).
  V<E> q = e.fma(e.mul(r, r), poly(e, r, coeff::kExp), r);
  hi = e.add(e.constant(1.0f), q);
  loOut = e.add(e.sub(e.constant(1.0f), hi), q);
  k = toIntNanToZero(e, kf);
}

/// exp(x + lo), |lo| <= ulp(x); lo may be null. NaN, ±inf, overflow and underflow come out right
/// without selects.
template <Emitter E>
V<E> expWithLow(E& e, V<E> x, const V<E>* lo) {
  V<E> hi, unused;
  I<E> k;
  expParts(e, x, lo, hi, unused, k);
  return scalePow2(e, hi, k);
}

/// expm1 without the -0 fix-up: clamped to [-30, 89] (expm1(-30) rounds to -1).
template <Emitter E>
V<E> expm1NoSignedZero(E& e, V<E> x) {
  x = clampBelow(e, clampAbove(e, x, 89.0f), -30.0f);
  V<E> kf = e.rint(e.mul(x, e.constant(coeff::kLog2e)));
  V<E> r = e.fma(kf, e.constant(-coeff::kLn2Hi), x);
  r = e.fma(kf, e.constant(-coeff::kLn2Lo), r);
  // expm1(r) = r + tail, kept apart: for k = 1, r < 0 the result 2 expm1(r) + 1 is about as small
  // as expm1(r), and rounding r + tail first would double that rounding error in the result.
  V<E> tail = e.mul(e.mul(r, r), poly(e, r, coeff::kExpm1));
  // expm1(x) = 2^k expm1(r) + (2^k - 1) = 2 (t r + (t - 1/2) + t tail) with t = 2^(k-1): t stays
  // finite for k = 128 (the doubling overflows exactly when the result does). t - 1/2 is exact for
  // k <= 24; above, the 1/2 joins the small tail instead and t is added last.
  V<E> t = pow2(e, e.isub(toIntNanToZero(e, kf), e.iconstant(1)));
  V<E> half = e.constant(0.5f);
  V<E> lowK = e.fma(t, tail, e.fma(t, r, e.sub(t, half)));
  V<E> highK = e.add(e.fma(t, r, e.fma(t, tail, e.neg(half))), t);
  V<E> big = e.mul(e.select(e.lt(kf, e.constant(25.0f)), lowK, highK), e.constant(2.0f));
  // k = 0: r + tail itself (the halving above would round a denormal).
  return e.select(e.eq(kf, e.constant(0.0f)), e.add(r, tail), big);
}

/// (ah + al) / (bh + bl) to about 0.5 ulp, for al and bl below ulp(ah) and ulp(bh).
template <Emitter E>
V<E> divDoubleFloat(E& e, V<E> ah, V<E> al, V<E> bh, V<E> bl) {
  V<E> rcp = e.div(e.constant(1.0f), bh);
  V<E> q0 = e.mul(ah, rcp);
  // ah + al - q0 (bh + bl), with ah - q0 bh exact in the fma.
  V<E> rem = e.add(e.fma(e.neg(q0), bh, ah), e.fma(e.neg(q0), bl, al));
  return e.fma(rem, rcp, q0);
}

/// ef * ln2 + log1p(f) + c for |f| in [sqrt(1/2) - 1, sqrt(2) - 1] and |c| tiny (a correction term).
template <Emitter E>
V<E> logFromParts(E& e, V<E> ef, V<E> f, V<E> c) {
  // log1p(f) = f + f^2 (-1/2 + f P(f)); f is exact and carries most of the value, so it is added last.
  V<E> tail = e.mul(e.mul(f, f), e.fma(f, poly(e, f, coeff::kLog1p), e.constant(-0.5f)));
  V<E> lo = e.fma(ef, e.constant(coeff::kLn2Lo), e.add(tail, c));
  return e.fma(ef, e.constant(coeff::kLn2Hi), e.add(f, lo));
}

/// x = 2^ef * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)) for positive normal x (bits only).
template <Emitter E>
void splitExponent(E& e, V<E> x, V<E>& ef, V<E>& f) {
  // Subtracting the bits of sqrt(1/2) moves the exponent boundary from 1 to sqrt(1/2).
  I<E> ix = e.isub(e.asInt(x), e.iconstant(0x3f3504f3));
  ef = e.toFloat(e.sra(ix, 23));
  V<E> m = e.asFloat(e.iadd(e.iand(ix, e.iconstant(0x007fffff)), e.iconstant(0x3f3504f3)));
  f = e.sub(m, e.constant(1.0f));  // exact (Sterbenz)
}

/// A reduced trigonometric argument: |x| = q pi/2 + s + c with |s| <= pi/4 (1 + 2^-20), |c| ~ ulp(s).
template <Emitter E>
struct TrigReduced {
  V<E> s, c;
  I<E> q;  // the quadrant count; only q mod 4 matters
};

/// Cody-Waite reduction of ax = |x| <= kTrigMaxArg with pi/2 in four f32 parts.
template <Emitter E>
TrigReduced<E> reduceTrig(E& e, V<E> ax) {
  // Out of range: evaluate at 0 (documented at kTrigMaxArg). ±inf stays, so it ends as NaN.
  M<E> huge = e.mand(e.gt(ax, e.constant(kTrigMaxArg)), e.lt(ax, e.constant(kInf)));
  ax = e.select(huge, e.constant(0.0f), ax);
  // q = nearest integer to ax * 2/pi. The f32 product alone can be off by up to 1/4 near 2^22, which
  // would push |s| towards 3pi/4; the low part of the product corrects q.
  V<E> yh = e.mul(ax, e.constant(coeff::kTwoOverPiHi));
  V<E> yl = e.fma(ax, e.constant(coeff::kTwoOverPiLo), e.fma(ax, e.constant(coeff::kTwoOverPiHi), e.neg(yh)));
  V<E> qf = e.rint(yh);
  qf = e.add(qf, e.rint(e.add(e.sub(yh, qf), yl)));
  // r1 = ax - q p1 is exact: q < 2^24 makes q p1 exact inside the fma, and the difference is a
  // multiple of 2^-24 below 2 in magnitude (|r1| <= pi/4 + q |p1 - pi/2|).
  V<E> r1 = e.fma(qf, e.constant(-coeff::kPiOver2_1), ax);
  // q p2 = ph + pl exactly; s + err = r1 - ph exactly (TwoSum, no ordering assumption).
  V<E> ph = e.mul(qf, e.constant(coeff::kPiOver2_2));
  V<E> pl = e.fma(qf, e.constant(coeff::kPiOver2_2), e.neg(ph));
  V<E> s = e.sub(r1, ph);
  V<E> bv = e.sub(s, r1);
  V<E> err = e.sub(e.sub(r1, e.sub(s, bv)), e.add(ph, bv));
  // Everything below ulp(s): rounding errors here are far below the result's ulp.
  V<E> c = e.fma(qf, e.constant(-coeff::kPiOver2_3), e.sub(err, pl));
  c = e.fma(qf, e.constant(-coeff::kPiOver2_4), c);
  return {s, c, toIntNanToZero(e, qf)};
}

/// sin(s + c) and cos(s + c) for a reduced argument, each as a rounded value plus its rounding error
/// (tan divides them and needs both to better than 0.5 ulp; sin and cos use the rounded values only).
template <Emitter E>
struct SinCos {
  V<E> sin, sinLo, cos, cosLo;
};

template <Emitter E>
SinCos<E> sinCosReduced(E& e, const TrigReduced<E>& r) {
  V<E> one = e.constant(1.0f);
  V<E> w = e.mul(r.s, r.s);
  V<E> hw = e.mul(w, e.constant(0.5f));
  // sin(s + c) = s + s^3 P(s^2) + c (1 - s^2/2).
  V<E> cAdj = e.fma(r.c, e.neg(hw), r.c);
  V<E> sinTail = e.fma(e.mul(r.s, w), poly(e, w, coeff::kSin), cAdj);
  V<E> sn = e.add(r.s, sinTail);
  // cos(s + c) = 1 - s^2/2 + s^4 P(s^2) - s c. 1 - hw is computed with its rounding error (t + corr
  // exact), and s^2 = w + wl exactly: the s^2/2 term is up to 0.31 and needs more than f32 precision.
  V<E> wl = e.fma(r.s, r.s, e.neg(w));
  V<E> t = e.sub(one, hw);
  V<E> corr = e.sub(e.sub(one, t), hw);
  V<E> small = e.sub(corr, e.fma(r.c, r.s, e.mul(wl, e.constant(0.5f))));
  V<E> cosTail = e.fma(e.mul(w, w), poly(e, w, coeff::kCos), small);
  V<E> cs = e.add(t, cosTail);
  // Fast2Sum errors: |s| >= |sinTail| and |t| >= |cosTail|.
  return {sn, e.sub(sinTail, e.sub(sn, r.s)), cs, e.sub(cosTail, e.sub(cs, t))};
}

/// log(ax) as hi + lo with about 2^-40 relative error, for positive finite ax (pow's inner log).
template <Emitter E>
void logDoubleFloat(E& e, V<E> ax, V<E>& hi, V<E>& lo) {
  M<E> tiny = e.lt(ax, e.constant(0x1p-126f));
  V<E> xs = e.select(tiny, e.mul(ax, e.constant(0x1p23f)), ax);
  V<E> ef, f;
  splitExponent(e, xs, ef, f);
  ef = e.add(ef, e.select(tiny, e.constant(-23.0f), e.constant(0.0f)));
  // s = f / (2 + f) = (m - 1) / (m + 1) as sh + sl; log(m) = 2 atanh(s).
  V<E> d = e.add(e.constant(2.0f), f);
  V<E> dl = e.add(e.sub(e.constant(2.0f), d), f);  // d + dl = 2 + f exactly (Fast2Sum, |f| < 2)
  V<E> rd = e.div(e.constant(1.0f), d);
  V<E> sh = e.mul(f, rd);
  V<E> sl = e.mul(e.sub(e.fma(e.neg(sh), d, f), e.mul(sh, dl)), rd);
  // log(m) = 2s + 2/3 s^3 + s^5 P(s^2). The s^3 term is up to 1% of the value, so it is kept to
  // about 2^-45 relative: s^3 and 2/3 as double-f32 products.
  V<E> s2h = e.mul(sh, sh);
  V<E> s2l = e.fma(sh, sh, e.neg(s2h));
  V<E> s3h = e.mul(s2h, sh);
  V<E> s3l = e.add(e.fma(s2h, sh, e.neg(s3h)), e.fma(s2l, sh, e.mul(e.mul(s2h, sl), e.constant(3.0f))));
  V<E> k3h = e.mul(e.constant(coeff::kTwoThirdsHi), s3h);
  V<E> k3l = e.add(e.fma(e.constant(coeff::kTwoThirdsHi), s3h, e.neg(k3h)),
                   e.fma(e.constant(coeff::kTwoThirdsHi), s3l, e.mul(e.constant(coeff::kTwoThirdsLo), s3h)));
  V<E> t5 = e.mul(e.mul(s2h, s3h), poly(e, s2h, coeff::kLogAtanh));
  // Sum ef ln2_hi16 (exact) + 2 sh + k3h with Fast2Sum, which needs each partial sum to be at least
  // as large as the next addend or zero: |ef ln2| >= 0.69 unless ef = 0, |2s| <= 0.35, |k3h| < |2s|/100.
  V<E> a = e.mul(ef, e.constant(coeff::kLn2Hi16));
  V<E> b = e.add(sh, sh);
  V<E> s1 = e.add(a, b);
  V<E> e1 = e.sub(b, e.sub(s1, a));
  V<E> s2 = e.add(s1, k3h);
  V<E> e2 = e.sub(k3h, e.sub(s2, s1));
  V<E> low = e.add(e.add(e1, e2), e.fma(ef, e.constant(coeff::kLn2Lo16), e.add(e.add(sl, sl), e.add(k3l, t5))));
  hi = e.add(s2, low);
  lo = e.sub(low, e.sub(hi, s2));
}

}  // namespace detail

/// e^x. Max error 1 ulp; exp(x) overflows to inf for x > 88.72 and underflows through denormals.
template <Emitter E>
typename E::Value exp(E& e, typename E::Value x) {
  return detail::expWithLow<E>(e, x, nullptr);
}

/// e^x - 1, accurate near 0; expm1(-0) = -0, expm1(-inf) = -1.
template <Emitter E>
typename E::Value expm1(E& e, typename E::Value x) {
  return e.select(e.eq(x, e.constant(0.0f)), x, detail::expm1NoSignedZero(e, x));
}

/// Natural log; log(±0) = -inf, log(x < 0) = NaN, log(inf) = inf, denormals exact in the exponent.
template <Emitter E>
typename E::Value log(E& e, typename E::Value x) {
  using V = typename E::Value;
  // Denormals are scaled into the normal range first (their exponent bits are 0).
  auto tiny = e.lt(x, e.constant(0x1p-126f));
  V xs = e.select(tiny, e.mul(x, e.constant(0x1p23f)), x);
  V ef, f;
  detail::splitExponent(e, xs, ef, f);
  ef = e.add(ef, e.select(tiny, e.constant(-23.0f), e.constant(0.0f)));
  V res = detail::logFromParts(e, ef, f, e.constant(0.0f));
  res = e.select(e.eq(x, e.constant(detail::kInf)), x, res);
  res = e.select(e.eq(x, e.constant(0.0f)), e.constant(-detail::kInf), res);
  return e.select(e.lt(x, e.constant(0.0f)), e.constant(detail::kNaN), e.select(e.isnan(x), x, res));
}

/// log(1 + x), accurate near 0; log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(-0) = -0.
template <Emitter E>
typename E::Value log1p(E& e, typename E::Value x) {
  using V = typename E::Value;
  // Near 0 (1 + x in [sqrt(1/2), sqrt(2))) the polynomial takes x itself: f = x, no rounding.
  auto direct = e.mand(e.ge(x, e.constant(-0x1.2bec34p-2f)), e.lt(x, e.constant(0x1.a8279ap-2f)));
  // Elsewhere u = 1 + x rounded, with its rounding error c (Fast2Sum, larger operand first):
  // log1p(x) = log(u) + log(1 + c/u) = log(u) + c/u.
  V u = e.add(e.constant(1.0f), x);
  V c = e.select(e.ge(e.abs(x), e.constant(1.0f)), e.sub(e.constant(1.0f), e.sub(u, x)),
                 e.sub(x, e.sub(u, e.constant(1.0f))));
  V ef, f;
  detail::splitExponent(e, u, ef, f);
  V corr = e.div(c, u);
  V res = detail::logFromParts(e, e.select(direct, e.constant(0.0f), ef), e.select(direct, x, f),
                               e.select(direct, e.constant(0.0f), corr));
  res = e.select(e.eq(x, e.constant(detail::kInf)), x, res);
  res = e.select(e.eq(x, e.constant(-1.0f)), e.constant(-detail::kInf), res);
  res = e.select(e.eq(x, e.constant(0.0f)), x, res);
  return e.select(e.lt(x, e.constant(-1.0f)), e.constant(detail::kNaN), e.select(e.isnan(x), x, res));
}

/// Hyperbolic tangent; odd, tanh(-0) = -0, ±1 beyond |x| = 9.1.
template <Emitter E>
typename E::Value tanh(E& e, typename E::Value x) {
  using V = typename E::Value;
  V ax = e.abs(x);
  // |x| < 0.625: x + x^3 P(x^2).
  V w = e.mul(ax, ax);
  V small = e.fma(e.mul(ax, w), detail::poly(e, w, coeff::kTanh), ax);
  // Otherwise tanh = em / (em + 2) with em = expm1(2|x|); |x| is capped at 10 (tanh(10) rounds to 1)
  // so em stays finite. em + 2 is carried with its rounding error: rounded, it would cost up to 1 ulp.
  V a2 = detail::clampAbove(e, ax, 10.0f);
  V em = detail::expm1NoSignedZero(e, e.add(a2, a2));
  V two = e.constant(2.0f);
  V dh = e.add(em, two);
  V dl = e.select(e.ge(em, two), e.add(e.sub(em, dh), two), e.add(e.sub(two, dh), em));  // Fast2Sum
  V large = detail::divDoubleFloat(e, em, e.constant(0.0f), dh, dl);
  V res = e.select(e.lt(ax, e.constant(0.625f)), small, large);
  return e.asFloat(e.ior(e.asInt(res), detail::signBit(e, x)));
}

/// The logistic function 1 / (1 + e^-x), without overflow for large |x|: with t = e^-|x| in [0, 1],
/// 1 / (1 + t) for x >= 0 and t / (1 + t) for x < 0 (which keeps relative accuracy down to denormals).
/// t and 1 + t are carried as double-f32 pairs: t rounded alone can be 1 ulp of t off, which is up to
/// 1.4 ulp of the result when t sits low in its binade and the result high in its own.
template <Emitter E>
typename E::Value sigmoid(E& e, typename E::Value x) {
  using V = typename E::Value;
  V ph, pl;
  typename E::Int k;
  detail::expParts(e, e.neg(e.abs(x)), nullptr, ph, pl, k);
  // t = (ph + pl) 2^k; the two scalings are exact except for denormal t, where t / (1 + t) = t anyway.
  typename E::Int k1 = e.sra(k, 1);
  V s1 = detail::pow2(e, k1), s2 = detail::pow2(e, e.isub(k, k1));
  V th = e.mul(e.mul(ph, s1), s2), tl = e.mul(e.mul(pl, s1), s2);
  V one = e.constant(1.0f);
  V dh = e.add(one, th);
  V dl = e.add(e.add(e.sub(one, dh), th), tl);  // Fast2Sum: 1 >= t
  auto neg = e.lt(x, e.constant(0.0f));
  return detail::divDoubleFloat(e, e.select(neg, th, one), e.select(neg, tl, e.constant(0.0f)), dh, dl);
}

/// The error function; odd, erf(-0) = -0, ±1 beyond |x| = 3.92.
template <Emitter E>
typename E::Value erf(E& e, typename E::Value x) {
  using V = typename E::Value;
  V ax = e.abs(x);
  // |x| < 1: x + x P(x^2).
  V small = e.fma(ax, detail::poly(e, e.mul(ax, ax), coeff::kErfSmall), ax);
  // 1 <= |x|: 1 - exp(-x^2) R(x). x^2 = w + wl exactly, and wl goes into exp's reduced argument:
  // exp(-x^2) is needed to the relative accuracy of erfc, and x^2 rounded would cost up to 8 ulp of it.
  V ac = detail::clampAbove(e, ax, 4.0f);  // erf rounds to 1 from 3.92 on
  V w = e.mul(ac, ac);
  V nwl = e.neg(e.fma(ac, ac, e.neg(w)));
  V ex = detail::expWithLow(e, e.neg(w), &nwl);
  V large = e.fma(e.neg(ex), detail::poly(e, e.sub(ac, e.constant(2.5f)), coeff::kErfc), e.constant(1.0f));
  V res = e.select(e.lt(ax, e.constant(1.0f)), small, large);
  return e.asFloat(e.ior(e.asInt(res), detail::signBit(e, x)));
}

/// Sine; odd, sin(-0) = -0, sin(±inf) = NaN. Accurate for |x| <= kTrigMaxArg (see there beyond).
template <Emitter E>
typename E::Value sin(E& e, typename E::Value x) {
  using V = typename E::Value;
  auto r = detail::reduceTrig(e, e.abs(x));
  auto sc = detail::sinCosReduced(e, r);
  // Quadrant q: sin, cos, -sin, -cos; then the sign of x (sin is odd).
  V res = e.select(e.ieq(e.iand(r.q, e.iconstant(1)), e.iconstant(0)), sc.sin, sc.cos);
  auto flip = e.ixor(e.shl(e.iand(r.q, e.iconstant(2)), 30), detail::signBit(e, x));
  return detail::xorSign(e, res, flip);
}

/// Cosine; even, cos(±inf) = NaN. Accurate for |x| <= kTrigMaxArg (see there beyond).
template <Emitter E>
typename E::Value cos(E& e, typename E::Value x) {
  using V = typename E::Value;
  auto r = detail::reduceTrig(e, e.abs(x));
  auto sc = detail::sinCosReduced(e, r);
  // Quadrant q: cos, -sin, -cos, sin.
  V res = e.select(e.ieq(e.iand(r.q, e.iconstant(1)), e.iconstant(0)), sc.cos, sc.sin);
  auto flip = e.shl(e.iand(e.iadd(r.q, e.iconstant(1)), e.iconstant(2)), 30);
  return detail::xorSign(e, res, flip);
}

/// Tangent; odd, tan(-0) = -0, tan(±inf) = NaN. Accurate for |x| <= kTrigMaxArg (see there beyond).
template <Emitter E>
typename E::Value tan(E& e, typename E::Value x) {
  using V = typename E::Value;
  auto r = detail::reduceTrig(e, e.abs(x));
  auto sc = detail::sinCosReduced(e, r);
  // Even quadrant: sin/cos; odd: -cos/sin. A quotient of two rounded values can be 3 ulp off (each
  // rounding is worth up to 2^-24 relative, and the result's ulp can be as small as that), so the
  // division takes both with their rounding errors.
  auto even = e.ieq(e.iand(r.q, e.iconstant(1)), e.iconstant(0));
  V res = detail::divDoubleFloat(e, e.select(even, sc.sin, e.neg(sc.cos)), e.select(even, sc.sinLo, e.neg(sc.cosLo)),
                                 e.select(even, sc.cos, sc.sin), e.select(even, sc.cosLo, sc.sinLo));
  return detail::xorSign(e, res, detail::signBit(e, x));
}

/// x^y as exp(y log|x|) with C99 powf's special cases (pow(x, ±0) = 1 and pow(1, y) = 1 even for NaN,
/// negative x only with integral y, signed zeros and infinities for odd integral y, ±inf exponents).
/// log|x| is kept as a double-f32 pair so y log|x| keeps ~2^-40 relative accuracy before exp.
/// Differs from libm only in that results which are exact (pow(3, 2) = 9) may be 1 ulp off.
template <Emitter E>
typename E::Value pow(E& e, typename E::Value x, typename E::Value y) {
  using V = typename E::Value;
  using M = typename E::Mask;
  V ax = e.abs(x), ay = e.abs(y);
  V lh, ll;
  detail::logDoubleFloat(e, ax, lh, ll);
  // y * log|x| = th + tl; tl is dropped where th is far out of exp's range (or not finite).
  V th = e.mul(y, lh);
  V tl = e.fma(y, ll, e.fma(y, lh, e.neg(th)));
  tl = e.select(e.lt(e.abs(th), e.constant(128.0f)), tl, e.constant(0.0f));
  V mag = detail::expWithLow(e, th, &tl);

  V inf = e.constant(detail::kInf), zero = e.constant(0.0f), one = e.constant(1.0f);
  M yneg = e.lt(y, zero);
  M yInt = e.eq(e.rint(y), y);  // also true for ±inf
  V hy = e.mul(y, e.constant(0.5f));
  M yOdd = e.mand(e.mand(yInt, e.lt(ay, e.constant(0x1p24f))), e.mnot(e.eq(e.rint(hy), hy)));
  // Limits: |x| = 0, |x| = inf, |y| = inf.
  mag = e.select(e.eq(ax, zero), e.select(yneg, inf, zero), mag);
  mag = e.select(e.eq(ax, inf), e.select(yneg, zero, inf), mag);
  M grows = e.mor(e.mand(e.lt(ax, one), yneg), e.mand(e.gt(ax, one), e.mnot(yneg)));
  V yInfMag = e.select(grows, inf, e.select(e.eq(ax, one), one, zero));
  mag = e.select(e.eq(ay, inf), yInfMag, mag);
  // Negative base: odd integral y keeps the sign (also -0 and -inf); finite x < 0 with non-integral
  // y has no real result.
  V res = e.select(yOdd, e.asFloat(e.ior(e.asInt(mag), detail::signBit(e, x))), mag);
  M noReal = e.mand(e.mand(e.lt(x, zero), e.gt(x, e.neg(inf))), e.mnot(yInt));
  res = e.select(noReal, e.constant(detail::kNaN), res);
  res = e.select(e.mor(e.isnan(x), e.isnan(y)), e.add(x, y), res);
  return e.select(e.mor(e.eq(y, zero), e.eq(x, one)), one, res);
}

}  // namespace smelt::vecmath
