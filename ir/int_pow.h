// Integer pow's one definition, which the reference, the kernel interpreter and every renderer
// follow: exact exponentiation by squaring modulo 2^64, so a narrower type wraps as its
// multiplication does (PyTorch's integer pow). A negative exponent gives 1 / a^-b truncated: 1 for
// a == 1, -1 or 1 for a == -1 (odd or even exponent), else 0.
// Going through a floating-point pow instead is exact only while a correctly rounded pow is at
// hand: CUDA's pow(3.0, 1.0) truncated to 2 on an H100.
#pragma once

#include <cstdint>

namespace smelt {

/// a^b modulo 2^64.
constexpr uint64_t wrappingPow(uint64_t a, uint64_t b) {
  uint64_t r = 1;
  for (; b != 0; b >>= 1, a *= a) {
    if (b & 1) r *= a;
  }
  return r;
}

/// a^b modulo 2^64 for signed operands (the caller wraps to its width).
constexpr int64_t wrappingPowSigned(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
  return static_cast<int64_t>(wrappingPow(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

}  // namespace smelt
