#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SMELT_HW_F16 1
static inline float smelt_h2f(uint h) {
  ushort s = (ushort)h;
  return vload_half(0, (const half*)&s);
}
static inline uint smelt_f2h(float f) {
  ushort s;
  vstore_half_rte(f, 0, (half*)&s);
  return s;
}
// f16 (IEEE binary16) and bf16 live in memory as 16-bit patterns and in registers as float. A
// dialect with hardware conversions defines SMELT_HW_F16 / SMELT_HW_BF16 and its own before this.
#ifndef SMELT_HW_F16
static inline float smelt_h2f(uint h) {
  uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0u) {
    float mag = (float)m * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
static inline uint smelt_f2h(float f) {
  uint x = as_uint(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) return sign | (as_uint(as_float(a) + 0.5f) - 0x3f000000u);
  return sign | ((a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13);
}
#endif
#ifndef SMELT_HW_BF16
static inline uint smelt_f2bf(float f) {
  uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#endif
// f32 rounded to the nearest f16 (what every f16 instruction does to its result).
static inline float smelt_rh(float f) { return smelt_h2f(smelt_f2h(f)); }
static inline float smelt_bf2f(uint b) { return as_float(b << 16); }
static inline float smelt_rbf(float f) { return smelt_bf2f(smelt_f2bf(f)); }
// Float -> integer as the cast op: NaN -> 0, truncation, [2^63, 2^64) through u64, >= 2^64 -> 0,
// <= -2^63 -> INT64_MIN; the caller wraps the result to its width.
static inline long smelt_f2i(float x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0f) return x >= 18446744073709551616.0f ? 0 : (long)(ulong)x;
  if (x <= -9223372036854775808.0f) return -9223372036854775807L - 1;
  return (long)x;
}
// Integer pow (ir/int_pow.h): exact, modulo 2^64; the caller wraps to its width.
static inline ulong smelt_ipow(ulong a, ulong b) {
  ulong r = 1;
  for (; b != 0; b >>= 1, a *= a) {
    if (b & 1) r *= a;
  }
  return r;
}
static inline long smelt_d2i(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return x >= 18446744073709551616.0 ? 0 : (long)(ulong)x;
  if (x <= -9223372036854775808.0) return -9223372036854775807L - 1;
  return (long)x;
}
