// 16-bit float storage types (IEEE half and bfloat16) with round-to-nearest-even conversions.
// Arithmetic on them always goes through float/double; these types only store.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace smelt {

/// IEEE 754 binary16 storage.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value) : bits(fromFloat(value)) {}
  explicit Half(double value) : Half(static_cast<float>(value)) {}
  operator float() const { return toFloat(bits); }
  static Half fromBits(uint16_t b) { Half h; h.bits = b; return h; }

  static uint16_t fromFloat(float value) {
    uint32_t f = std::bit_cast<uint32_t>(value);
    uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t absf = f & 0x7fffffffu;
    if (absf >= 0x7f800000u) {  // inf or nan: keep nan quiet and non-zero
      return static_cast<uint16_t>(sign | 0x7c00u | (absf > 0x7f800000u ? 0x200u | ((absf >> 13) & 0x3ffu) : 0u));
    }
    if (absf >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (absf < 0x38800000u) {  // subnormal half (or zero): scale with an exact float add
      float magnitude = std::bit_cast<float>(absf);
      // Adding 0.5 moves the half-subnormal bits to the low mantissa bits, rounding to nearest even.
      uint32_t r = std::bit_cast<uint32_t>(magnitude + 0.5f) - 0x3f000000u;
      return static_cast<uint16_t>(sign | r);
    }
    uint32_t mantOdd = (absf >> 13) & 1u;
    absf += 0xc8000fffu + mantOdd;  // re-bias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (absf >> 13));
  }

  static float toFloat(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: value = mant * 2^-24
      float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return sign ? -magnitude : magnitude;
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16 storage: the top half of an f32.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(fromFloat(value)) {}
  explicit BFloat16(double value) : BFloat16(static_cast<float>(value)) {}
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  static BFloat16 fromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }

  static uint16_t fromFloat(float value) {
    uint32_t f = std::bit_cast<uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // quiet nan
    uint32_t lsb = (f >> 16) & 1u;
    return static_cast<uint16_t>((f + 0x7fffu + lsb) >> 16);
  }
};

}  // namespace smelt
