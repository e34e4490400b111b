#define SMELT_HW_F16 1
static __device__ inline float smelt_h2f(unsigned int h) {
  return (float)__builtin_bit_cast(_Float16, (unsigned short)h);
}
static __device__ inline unsigned int smelt_f2h(float f) { return __builtin_bit_cast(unsigned short, (_Float16)f); }
// f16 (IEEE binary16) and bf16 live in memory as 16-bit patterns and in registers as float. A
// dialect with hardware conversions defines SMELT_HW_F16 / SMELT_HW_BF16 and its own before this.
#ifndef SMELT_HW_F16
static __device__ inline float smelt_h2f(unsigned int h) {
  unsigned int sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0u) {
    float mag = (float)m * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}
static __device__ inline unsigned int smelt_f2h(float f) {
  unsigned int x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) return sign | (__float_as_uint(__uint_as_float(a) + 0.5f) - 0x3f000000u);
  return sign | ((a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13);
}
#endif
#ifndef SMELT_HW_BF16
static __device__ inline unsigned int smelt_f2bf(float f) {
  unsigned int x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#endif
// f32 rounded to the nearest f16 (what every f16 instruction does to its result).
static __device__ inline float smelt_rh(float f) { return smelt_h2f(smelt_f2h(f)); }
static __device__ inline float smelt_bf2f(unsigned int b) { return __uint_as_float(b << 16); }
static __device__ inline float smelt_rbf(float f) { return smelt_bf2f(smelt_f2bf(f)); }
// Float -> integer as the cast op: NaN -> 0, truncation, [2^63, 2^64) through u64, >= 2^64 -> 0,
// <= -2^63 -> INT64_MIN; the caller wraps the result to its width.
static __device__ inline long long smelt_f2i(float x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0f) return x >= 18446744073709551616.0f ? 0 : (long long)(unsigned long long)x;
  if (x <= -9223372036854775808.0f) return -9223372036854775807LL - 1;
  return (long long)x;
}
// Integer pow (ir/int_pow.h): exact, modulo 2^64; the caller wraps to its width.
static __device__ inline unsigned long long smelt_ipow(unsigned long long a, unsigned long long b) {
  unsigned long long r = 1;
  for (; b != 0; b >>= 1, a *= a) {
    if (b & 1) r *= a;
  }
  return r;
}
static __device__ inline long long smelt_d2i(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return x >= 18446744073709551616.0 ? 0 : (long long)(unsigned long long)x;
  if (x <= -9223372036854775808.0) return -9223372036854775807LL - 1;
  return (long long)x;
}
