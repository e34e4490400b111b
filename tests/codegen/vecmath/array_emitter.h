// ArrayEmitter<N>: the vecmath Emitter on N lanes of std::array, each op applied lane by lane.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "codegen/vecmath/scalar_emitter.h"

namespace smelt::vecmath::test {

/// Stands in for a SIMD emitter: an algorithm that branched on a value would not compile (a Mask is
/// N bools), and each op is ScalarEmitter's op per lane, so results must match the scalar ones.
template <std::size_t N>
struct ArrayEmitter {
  using Value = std::array<float, N>;
  using Int = std::array<int32_t, N>;
  using Mask = std::array<bool, N>;

  ScalarEmitter s;

  template <class R, class F, class... A>
  static R lanes(F f, const A&... a) {
    R r{};
    for (std::size_t i = 0; i < N; ++i) r[i] = f(a[i]...);
    return r;
  }
  template <class R, class T>
  static R splat(T v) {
    R r;
    r.fill(v);
    return r;
  }

  Value constant(float v) const { return splat<Value>(v); }
  Int iconstant(int32_t v) const { return splat<Int>(v); }
  Value add(const Value& a, const Value& b) const { return lanes<Value>([&](auto... v) { return s.add(v...); }, a, b); }
  Value sub(const Value& a, const Value& b) const { return lanes<Value>([&](auto... v) { return s.sub(v...); }, a, b); }
  Value mul(const Value& a, const Value& b) const { return lanes<Value>([&](auto... v) { return s.mul(v...); }, a, b); }
  Value div(const Value& a, const Value& b) const { return lanes<Value>([&](auto... v) { return s.div(v...); }, a, b); }
  Value fma(const Value& a, const Value& b, const Value& c) const {
    return lanes<Value>([&](auto... v) { return s.fma(v...); }, a, b, c);
  }
  Value neg(const Value& a) const { return lanes<Value>([&](auto... v) { return s.neg(v...); }, a); }
  Value abs(const Value& a) const { return lanes<Value>([&](auto... v) { return s.abs(v...); }, a); }
  Value rint(const Value& a) const { return lanes<Value>([&](auto... v) { return s.rint(v...); }, a); }
  Mask lt(const Value& a, const Value& b) const { return lanes<Mask>([&](auto... v) { return s.lt(v...); }, a, b); }
  Mask le(const Value& a, const Value& b) const { return lanes<Mask>([&](auto... v) { return s.le(v...); }, a, b); }
  Mask gt(const Value& a, const Value& b) const { return lanes<Mask>([&](auto... v) { return s.gt(v...); }, a, b); }
  Mask ge(const Value& a, const Value& b) const { return lanes<Mask>([&](auto... v) { return s.ge(v...); }, a, b); }
  Mask eq(const Value& a, const Value& b) const { return lanes<Mask>([&](auto... v) { return s.eq(v...); }, a, b); }
  Mask isnan(const Value& a) const { return lanes<Mask>([&](auto... v) { return s.isnan(v...); }, a); }
  Mask mand(const Mask& a, const Mask& b) const { return lanes<Mask>([&](auto... v) { return s.mand(v...); }, a, b); }
  Mask mor(const Mask& a, const Mask& b) const { return lanes<Mask>([&](auto... v) { return s.mor(v...); }, a, b); }
  Mask mnot(const Mask& a) const { return lanes<Mask>([&](auto... v) { return s.mnot(v...); }, a); }
  Value select(const Mask& m, const Value& a, const Value& b) const {
    return lanes<Value>([&](bool c, float x, float y) { return s.select(c, x, y); }, m, a, b);
  }
  Int asInt(const Value& a) const { return lanes<Int>([&](auto... v) { return s.asInt(v...); }, a); }
  Value asFloat(const Int& a) const { return lanes<Value>([&](auto... v) { return s.asFloat(v...); }, a); }
  Int iadd(const Int& a, const Int& b) const { return lanes<Int>([&](auto... v) { return s.iadd(v...); }, a, b); }
  Int isub(const Int& a, const Int& b) const { return lanes<Int>([&](auto... v) { return s.isub(v...); }, a, b); }
  Int iand(const Int& a, const Int& b) const { return lanes<Int>([&](auto... v) { return s.iand(v...); }, a, b); }
  Int ior(const Int& a, const Int& b) const { return lanes<Int>([&](auto... v) { return s.ior(v...); }, a, b); }
  Int ixor(const Int& a, const Int& b) const { return lanes<Int>([&](auto... v) { return s.ixor(v...); }, a, b); }
  Int shl(const Int& a, int sh) const { return lanes<Int>([&](int32_t x) { return s.shl(x, sh); }, a); }
  Int sra(const Int& a, int sh) const { return lanes<Int>([&](int32_t x) { return s.sra(x, sh); }, a); }
  Mask ieq(const Int& a, const Int& b) const { return lanes<Mask>([&](auto... v) { return s.ieq(v...); }, a, b); }
  Int toInt(const Value& a) const { return lanes<Int>([&](auto... v) { return s.toInt(v...); }, a); }
  Value toFloat(const Int& a) const { return lanes<Value>([&](auto... v) { return s.toFloat(v...); }, a); }
};

}  // namespace smelt::vecmath::test
