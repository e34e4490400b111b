// vecmath: every function within 2 ulp over sampled f32 inputs, libm's special values, and an 8-lane
// emitter reproducing the scalar results bit for bit.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/codegen/vecmath/array_emitter.h"
#include "tests/codegen/vecmath/ulp_check.h"

namespace smelt::vecmath::test {
namespace {

// The sanitizer build samples 4x more sparsely (the loops are pure arithmetic, so ASan and UBSan
// cost little here, but that build runs everything else too).
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kStrideScale = 4;
#else
constexpr uint64_t kStrideScale = 1;
#endif

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMax = std::numeric_limits<float>::max();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();

const Unary& unary(const std::string& name) {
  for (const Unary& f : kUnary)
    if (name == f.name) return f;
  FAIL("no such function " << name);
  return kUnary[0];
}

float fromOrdered(int64_t o) {
  return std::bit_cast<float>(o < 0 ? static_cast<uint32_t>(-o) | 0x80000000u : static_cast<uint32_t>(o));
}

/// Every stride-th float in [lo, hi] (in number-line order), into `acc`.
void sweep(const Unary& f, float lo, float hi, uint64_t stride, MaxErr& acc) {
  stride *= kStrideScale;
  for (int64_t o = orderedBits(lo); o <= orderedBits(hi); o += static_cast<int64_t>(stride)) {
    float x = fromOrdered(o);
    acc.add(ulpError(f.fast(x), f.ref(x)), x);
  }
}

struct Range {
  float lo, hi;
  uint64_t stride;
};

/// The whole finite line every 509th float (8.4M inputs: both signs, all binades, denormals),
/// the function's critical ranges more densely, and listed hard inputs; at most 2 ulp everywhere.
void checkUlp(const std::string& name, std::vector<Range> critical, std::vector<float> hard = {}) {
  const Unary& f = unary(name);
  MaxErr acc;
  float top = isTrig(f) ? kTrigMaxArg : kMax;
  sweep(f, -top, top, 509, acc);
  for (const Range& r : critical) sweep(f, r.lo, r.hi, r.stride, acc);
  for (float x : hard) acc.add(ulpError(f.fast(x), f.ref(x)), x);
  MESSAGE(acc.describe(f.name));
  CHECK(acc.worst.dist <= 2);
}

/// Bitwise comparison that treats all NaNs as equal and tells -0 from +0.
bool sameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

#define CHECK_SAME(got, want)                                                    \
  do {                                                                           \
    float g_ = (got), w_ = (want);                                               \
    INFO(#got << " = " << g_ << " (" << std::bit_cast<uint32_t>(g_) << "), want " \
              << w_ << " (" << std::bit_cast<uint32_t>(w_) << ")");              \
    CHECK(sameFloat(g_, w_));                                                    \
  } while (0)

ScalarEmitter e;
static_assert(Emitter<ScalarEmitter>);
static_assert(Emitter<ArrayEmitter<8>>);

TEST_CASE("vecmath: exp within 2 ulp") {
  checkUlp("exp", {{-104.0f, -87.0f, 3}, {88.0f, 89.0f, 1}, {-1.0f, -0.25f, 7}, {0.25f, 1.0f, 7}});
}

TEST_CASE("vecmath: expm1 within 2 ulp") {
  checkUlp("expm1", {{-1.0f, -0x1p-8f, 31}, {0x1p-8f, 1.0f, 31}, {15.0f, 18.0f, 7}, {88.0f, 89.0f, 1},
                     {-20.0f, -15.0f, 13}});
}

TEST_CASE("vecmath: log within 2 ulp") {
  checkUlp("log", {{0.5f, 2.0f, 13}, {kDenormMin, 0x1p-126f, 257}, {0x1p100f, kMax, 4099}});
}

TEST_CASE("vecmath: log1p within 2 ulp") {
  checkUlp("log1p", {{-1.0f, -0.25f, 13}, {-0.3f, -0x1p-8f, 31}, {0x1p-8f, 0.42f, 31}, {0.4f, 2.0f, 13}});
}

TEST_CASE("vecmath: tanh within 2 ulp") {
  checkUlp("tanh", {{0.5f, 0.75f, 7}, {-10.0f, -0x1p-6f, 31}, {0x1p-6f, 10.0f, 31}});
}

TEST_CASE("vecmath: sigmoid within 2 ulp") {
  checkUlp("sigmoid", {{-20.0f, -0x1p-6f, 31}, {0x1p-6f, 20.0f, 31}, {-104.0f, -87.0f, 13}});
}

TEST_CASE("vecmath: erf within 2 ulp") {
  checkUlp("erf", {{0.9f, 1.1f, 7}, {3.8f, 4.1f, 1}, {-4.0f, -0x1p-6f, 31}, {0x1p-6f, 4.0f, 31}});
}

// The floats closest to a multiple of pi/2 in each binade up to kTrigMaxArg (found with quad precision).
const std::vector<float> kTrigHard = {
    0x1.921fb6p+0f,  0x1.921fb6p+1f,  0x1.2d97c8p+2f,  0x1.2d97c8p+3f,  0x1.2d97c8p+4f,  0x1.2d97c8p+5f,
    0x1.2d97c8p+6f,  0x1.f9cbe2p+7f,  0x1.f9cbe2p+8f,  0x1.f9cbe2p+9f,  0x1.f9cbe2p+10f, 0x1.17cc5p+11f,
    0x1.17cc5p+12f,  0x1.17cc5p+13f,  0x1.17cc5p+14f,  0x1.9a48dep+15f, 0x1.9a48dep+16f, 0x1.9a48dep+17f,
    0x1.04ccbcp+18f, 0x1.04ccbcp+19f, 0x1.04ccbcp+20f, 0x1.4ac55cp+21f, 0x1.4ac55cp+22f, 0x1.4ac55cp+23f,
    0x1.420648p+24f,
};

std::vector<float> withNegatives(std::vector<float> v) {
  size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

TEST_CASE("vecmath: sin within 2 ulp up to kTrigMaxArg") {
  checkUlp("sin", {{-8.0f, -0x1p-6f, 31}, {0x1p-6f, 8.0f, 31}, {0x1p17f, kTrigMaxArg, 97}}, withNegatives(kTrigHard));
}

TEST_CASE("vecmath: cos within 2 ulp up to kTrigMaxArg") {
  checkUlp("cos", {{-8.0f, -0x1p-6f, 31}, {0x1p-6f, 8.0f, 31}, {0x1p17f, kTrigMaxArg, 97}}, withNegatives(kTrigHard));
}

TEST_CASE("vecmath: tan within 2 ulp up to kTrigMaxArg") {
  checkUlp("tan", {{-8.0f, -0x1p-6f, 31}, {0x1p-6f, 8.0f, 31}, {0x1p17f, kTrigMaxArg, 97}}, withNegatives(kTrigHard));
}

TEST_CASE("vecmath: pow within 2 ulp") {
  MaxErr acc;
  samplePow(1'000'000 / kStrideScale, 0x9e3779b97f4a7c15u, acc);
  // Small integral exponents over a sweep of bases, both signs.
  for (int k = -40; k <= 40; ++k)
    for (uint32_t b = 0; b < 0x7f800000u; b += 100003 * kStrideScale)
      for (float x : {std::bit_cast<float>(b), -std::bit_cast<float>(b)})
        acc.add(ulpError(fastPow(x, static_cast<float>(k)), refPow(x, k)), x, static_cast<float>(k));
  MESSAGE(acc.describe("pow"));
  CHECK(acc.worst.dist <= 2);
}

TEST_CASE("vecmath: special values match libm") {
  // NaN in, NaN out, for every function.
  for (const Unary& f : kUnary) {
    INFO(f.name);
    CHECK(std::isnan(f.fast(kNaN)));
    CHECK(std::isnan(f.fast(-kNaN)));
  }
  // Signed zeros: odd functions keep the sign.
  for (const char* name : {"expm1", "log1p", "tanh", "erf", "sin", "tan"}) {
    INFO(name);
    CHECK_SAME(unary(name).fast(-0.0f), -0.0f);
    CHECK_SAME(unary(name).fast(0.0f), 0.0f);
  }
  CHECK_SAME(vecmath::exp(e, 0.0f), 1.0f);
  CHECK_SAME(vecmath::exp(e, -0.0f), 1.0f);
  CHECK_SAME(vecmath::cos(e, -0.0f), 1.0f);
  CHECK_SAME(vecmath::sigmoid(e, -0.0f), 0.5f);
  CHECK_SAME(vecmath::log(e, 1.0f), 0.0f);
  // Infinities.
  CHECK_SAME(vecmath::exp(e, kInf), kInf);
  CHECK_SAME(vecmath::exp(e, -kInf), 0.0f);
  CHECK_SAME(vecmath::expm1(e, kInf), kInf);
  CHECK_SAME(vecmath::expm1(e, -kInf), -1.0f);
  CHECK_SAME(vecmath::log(e, kInf), kInf);
  CHECK_SAME(vecmath::log1p(e, kInf), kInf);
  CHECK_SAME(vecmath::tanh(e, kInf), 1.0f);
  CHECK_SAME(vecmath::tanh(e, -kInf), -1.0f);
  CHECK_SAME(vecmath::sigmoid(e, kInf), 1.0f);
  CHECK_SAME(vecmath::sigmoid(e, -kInf), 0.0f);
  CHECK_SAME(vecmath::erf(e, kInf), 1.0f);
  CHECK_SAME(vecmath::erf(e, -kInf), -1.0f);
  for (float inf : {kInf, -kInf}) {
    CHECK(std::isnan(vecmath::sin(e, inf)));
    CHECK(std::isnan(vecmath::cos(e, inf)));
    CHECK(std::isnan(vecmath::tan(e, inf)));
  }
  // Domain edges of log and log1p.
  CHECK_SAME(vecmath::log(e, 0.0f), -kInf);
  CHECK_SAME(vecmath::log(e, -0.0f), -kInf);
  CHECK(std::isnan(vecmath::log(e, -1.0f)));
  CHECK(std::isnan(vecmath::log(e, -kDenormMin)));
  CHECK(std::isnan(vecmath::log(e, -kInf)));
  CHECK_SAME(vecmath::log(e, kDenormMin), std::log(kDenormMin));
  CHECK_SAME(vecmath::log1p(e, -1.0f), -kInf);
  CHECK(std::isnan(vecmath::log1p(e, -1.0000001f)));
  CHECK(std::isnan(vecmath::log1p(e, -kInf)));
  // Overflow and underflow thresholds land where libm's do.
  CHECK_SAME(vecmath::exp(e, 88.72283f), std::exp(88.72283f));
  CHECK_SAME(vecmath::exp(e, 88.72284f), kInf);
  CHECK_SAME(vecmath::exp(e, -103.972084f), std::exp(-103.972084f));  // the smallest denormal
  CHECK_SAME(vecmath::exp(e, -103.97209f), 0.0f);
  CHECK_SAME(vecmath::expm1(e, 88.72284f), kInf);
  CHECK_SAME(vecmath::sigmoid(e, -103.972084f), std::exp(-103.972084f));
  // Denormal arguments: the odd functions are x itself there, expm1 and log1p too.
  for (const char* name : {"expm1", "log1p", "tanh", "sin", "tan"}) {
    INFO(name);
    CHECK_SAME(unary(name).fast(kDenormMin), kDenormMin);
    CHECK_SAME(unary(name).fast(-0x1.fffffcp-127f), -0x1.fffffcp-127f);
  }
  // Out of the trig range: finite and in range (documented at kTrigMaxArg).
  CHECK_SAME(vecmath::sin(e, 1e30f), 0.0f);
  CHECK_SAME(vecmath::cos(e, -1e30f), 1.0f);
  CHECK_SAME(vecmath::tan(e, -kMax), -0.0f);
}

TEST_CASE("vecmath: pow special cases match std::pow(float, float)") {
  const float xs[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f, kInf, -kInf, kNaN,
                      kDenormMin, -kDenormMin, kMax, -kMax, 1.0000001f, 0.99999994f};
  const float ys[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f, -0.5f, 1.5f, kInf, -kInf, kNaN,
                      0x1p24f, -0x1p24f, 0x1p24f + 2, 16777215.0f, -16777215.0f, kMax, -kMax, 1e-45f, 150.0f, -150.0f};
  for (float x : xs)
    for (float y : ys) {
      float got = vecmath::pow(e, x, y), want = std::pow(x, y);
      INFO("pow(" << x << ", " << y << ") = " << got << ", want " << want);
      if (std::isnan(want) || std::isinf(want) || want == 0.0f) {
        CHECK(sameFloat(got, want));
      } else {
        CHECK(ulpError(got, std::pow(static_cast<double>(x), static_cast<double>(y))).dist <= 2);
        CHECK(std::signbit(got) == std::signbit(want));
      }
    }
}

TEST_CASE("vecmath: an 8-lane emitter gives the scalar results bit for bit") {
  // The algorithms compile for lanes of 8 (so they hold no branch on a value: a Mask of 8 bools does
  // not convert to bool) and agree lane by lane with ScalarEmitter.
  ArrayEmitter<8> ve;
  std::vector<float> inputs = {0.0f, -0.0f, 1.0f, -1.0f, kInf, -kInf, kNaN, kDenormMin, 0.3f, -0.7f, 2.5f, -3.9f,
                               88.7f, -104.0f, 1e30f, -1e-30f, 0x1.921fb6p+0f, 12345.678f, 0.625f, -0.29f};
  uint32_t bits = 12345;
  while (inputs.size() < 8 * 64) {
    bits = bits * 1664525u + 1013904223u;
    inputs.push_back(std::bit_cast<float>(bits));
  }
  using Fn = ArrayEmitter<8>::Value (*)(ArrayEmitter<8>&, ArrayEmitter<8>::Value);
  struct Lanes {
    const char* name;
    Fn fn;
  };
  const Lanes fns[] = {
      {"exp", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::exp(v, x); }},
      {"expm1", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::expm1(v, x); }},
      {"log", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::log(v, x); }},
      {"log1p", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::log1p(v, x); }},
      {"tanh", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::tanh(v, x); }},
      {"sigmoid", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::sigmoid(v, x); }},
      {"erf", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::erf(v, x); }},
      {"sin", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::sin(v, x); }},
      {"cos", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::cos(v, x); }},
      {"tan", [](ArrayEmitter<8>& v, ArrayEmitter<8>::Value x) { return vecmath::tan(v, x); }},
  };
  for (const Lanes& f : fns) {
    const Unary& scalarFn = unary(f.name);
    for (size_t i = 0; i + 8 <= inputs.size(); i += 8) {
      ArrayEmitter<8>::Value x;
      for (int l = 0; l < 8; ++l) x[l] = inputs[i + l];
      ArrayEmitter<8>::Value y = f.fn(ve, x);
      for (int l = 0; l < 8; ++l) {
        INFO(f.name << "(" << x[l] << ")");
        CHECK_SAME(y[l], scalarFn.fast(x[l]));
      }
    }
  }
  for (size_t i = 0; i + 8 <= inputs.size(); i += 8) {
    ArrayEmitter<8>::Value x, y;
    for (int l = 0; l < 8; ++l) {
      x[l] = inputs[i + l];
      y[l] = inputs[(i * 7 + l * 13) % inputs.size()];
    }
    ArrayEmitter<8>::Value z = vecmath::pow(ve, x, y);
    for (int l = 0; l < 8; ++l) {
      INFO("pow(" << x[l] << ", " << y[l] << ")");
      CHECK_SAME(z[l], fastPow(x[l], y[l]));
    }
  }
}

}  // namespace
}  // namespace smelt::vecmath::test
