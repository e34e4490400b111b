// ScalarEmitter: the vecmath Emitter on plain float / int32_t / bool, for tests and constant folding.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace smelt::vecmath {

/// Evaluates the vector_math.h algorithms on one f32 value, with the same IEEE semantics the LLVM
/// emitter's instructions have. Build users with -ffp-contract=off (GCC may otherwise fuse a mul and
/// an add from two calls into one fma after inlining when FMA instructions are enabled).
struct ScalarEmitter {
  using Value = float;
  using Int = int32_t;
  using Mask = bool;

  Value constant(float v) const { return v; }
  Int iconstant(int32_t v) const { return v; }
  Value add(Value a, Value b) const { return a + b; }
  Value sub(Value a, Value b) const { return a - b; }
  Value mul(Value a, Value b) const { return a * b; }
  Value div(Value a, Value b) const { return a / b; }
  Value fma(Value a, Value b, Value c) const { return std::fma(a, b, c); }
  Value neg(Value a) const { return -a; }
  Value abs(Value a) const { return std::fabs(a); }
  /// Ties to even: the default rounding mode, which smelt never changes.
  Value rint(Value a) const { return std::nearbyint(a); }
  Mask lt(Value a, Value b) const { return a < b; }
  Mask le(Value a, Value b) const { return a <= b; }
  Mask gt(Value a, Value b) const { return a > b; }
  Mask ge(Value a, Value b) const { return a >= b; }
  Mask eq(Value a, Value b) const { return a == b; }
  Mask isnan(Value a) const { return a != a; }
  Mask mand(Mask a, Mask b) const { return a && b; }
  Mask mor(Mask a, Mask b) const { return a || b; }
  Mask mnot(Mask a) const { return !a; }
  Value select(Mask m, Value a, Value b) const { return m ? a : b; }
  Int asInt(Value a) const { return std::bit_cast<Int>(a); }
  Value asFloat(Int a) const { return std::bit_cast<Value>(a); }
  // Wrapping arithmetic and shifts go through uint32_t: signed overflow and shifting into the sign
  // bit are undefined or implementation-defined for int32_t, defined for i32 in LLVM IR.
  Int iadd(Int a, Int b) const { return static_cast<Int>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b)); }
  Int isub(Int a, Int b) const { return static_cast<Int>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b)); }
  Int iand(Int a, Int b) const { return a & b; }
  Int ior(Int a, Int b) const { return a | b; }
  Int ixor(Int a, Int b) const { return a ^ b; }
  Int shl(Int a, int s) const { return static_cast<Int>(static_cast<uint32_t>(a) << s); }
  Int sra(Int a, int s) const { return a >> s; }  // arithmetic since C++20
  Mask ieq(Int a, Int b) const { return a == b; }
  Int toInt(Value a) const { return static_cast<Int>(a); }
  Value toFloat(Int a) const { return static_cast<Value>(a); }
};

}  // namespace smelt::vecmath
