// Ulp error of f32 results against f64 references, and the table of functions the vecmath tests check.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "codegen/vecmath/scalar_emitter.h"
#include "codegen/vecmath/vector_math.h"

namespace smelt::vecmath::test {

/// Sign-magnitude f32 bits as a number line, so |a - b| counts the floats between (+0 and -0 coincide,
/// FLT_MAX and inf are neighbours).
inline int64_t orderedBits(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  return (b & 0x80000000u) ? -static_cast<int64_t>(b & 0x7fffffffu) : static_cast<int64_t>(b);
}

/// The error of one result: `dist` counts floats between it and the reference rounded to f32 (the
/// tests bound this); `ulps` is the distance to the unrounded f64 reference in ulps of the rounded
/// one (0.5 = correctly rounded; reported). A NaN where none belongs (or none where one does) is
/// reported as a distance of 2^32.
struct Err {
  int64_t dist = 0;
  double ulps = 0;
};

inline Err ulpError(float got, double ref) {
  float want = static_cast<float>(ref);
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? Err{} : Err{int64_t{1} << 32, 1e30};
  Err err;
  err.dist = std::llabs(orderedBits(got) - orderedBits(want));
  if (std::isinf(want) || std::isinf(got)) {
    err.ulps = static_cast<double>(err.dist);
    return err;
  }
  double a = std::fabs(ref);
  int exponent = a < 0x1p-126 ? -126 : std::ilogb(a);
  double ulp = std::ldexp(1.0, std::min(exponent, 127) - 23);
  err.ulps = std::fabs(static_cast<double>(got) - ref) / ulp;
  return err;
}

/// The worst error seen and where.
struct MaxErr {
  Err worst;
  float at = 0;
  float atY = 0;  // pow's second argument
  uint64_t count = 0;

  void add(Err err, float x, float y = 0) {
    ++count;
    if (err.dist > worst.dist || (err.dist == worst.dist && err.ulps > worst.ulps)) {
      worst = err;
      at = x;
      atY = y;
    }
  }
  void merge(const MaxErr& other) {
    count += other.count;
    if (other.worst.dist > worst.dist || (other.worst.dist == worst.dist && other.worst.ulps > worst.ulps)) {
      worst = other.worst;
      at = other.at;
      atY = other.atY;
    }
  }
  std::string describe(const char* name) const {
    return fmt::format("{}: max {} ulp ({:.3f} ulp against the f64 reference) at x = {:a} ({:.9g}){} over {} inputs",
                       name, worst.dist, worst.ulps, at, at,
                       atY != 0 ? fmt::format(", y = {:a} ({:.9g})", atY, atY) : std::string(), count);
  }
};

/// One unary function: the algorithm on ScalarEmitter and its f64 reference.
struct Unary {
  const char* name;
  float (*fast)(float);
  double (*ref)(double);
};

inline ScalarEmitter& scalar() {
  static ScalarEmitter e;
  return e;
}

inline const Unary kUnary[] = {
    {"exp", [](float x) { return vecmath::exp(scalar(), x); }, [](double x) { return std::exp(x); }},
    {"expm1", [](float x) { return vecmath::expm1(scalar(), x); }, [](double x) { return std::expm1(x); }},
    {"log", [](float x) { return vecmath::log(scalar(), x); }, [](double x) { return std::log(x); }},
    {"log1p", [](float x) { return vecmath::log1p(scalar(), x); }, [](double x) { return std::log1p(x); }},
    {"tanh", [](float x) { return vecmath::tanh(scalar(), x); }, [](double x) { return std::tanh(x); }},
    {"sigmoid", [](float x) { return vecmath::sigmoid(scalar(), x); },
     [](double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }},
    {"erf", [](float x) { return vecmath::erf(scalar(), x); }, [](double x) { return std::erf(x); }},
    {"sin", [](float x) { return vecmath::sin(scalar(), x); }, [](double x) { return std::sin(x); }},
    {"cos", [](float x) { return vecmath::cos(scalar(), x); }, [](double x) { return std::cos(x); }},
    {"tan", [](float x) { return vecmath::tan(scalar(), x); }, [](double x) { return std::tan(x); }},
};

inline bool isTrig(const Unary& f) {
  std::string n = f.name;
  return n == "sin" || n == "cos" || n == "tan";
}

inline float fastPow(float x, float y) { return vecmath::pow(scalar(), x, y); }
inline double refPow(double x, double y) { return std::pow(x, y); }

/// pow on 5n (x, y) pairs from a fixed-seed LCG. y is mostly chosen so that y log|x| lands where the
/// result is a finite nonzero float, since random bit pairs nearly always overflow or underflow.
inline void samplePow(uint64_t n, uint64_t seed, MaxErr& acc) {
  uint64_t state = seed;
  auto next = [&] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<uint32_t>(state >> 32);
  };
  auto randomFinite = [&] {
    for (;;) {
      float v = std::bit_cast<float>(next());
      if (std::isfinite(v)) return v;
    }
  };
  auto check = [&](float x, float y) { acc.add(ulpError(fastPow(x, y), refPow(x, y)), x, y); };
  for (uint64_t i = 0; i < n; ++i) {
    float x = std::fabs(randomFinite());
    double target = -105.0 + 195.0 * (next() / 4294967296.0);  // ln of the result
    float y = static_cast<float>(target / std::log(static_cast<double>(x)));
    check(x, y);
    check(x, std::nextafter(y, std::numeric_limits<float>::infinity()));
    // Negative bases with integral exponents (odd and even).
    float yi = std::rint(y);
    if (std::fabs(yi) < 0x1p24f) check(-x, yi);
    // Any bits at all (mostly overflow, underflow or NaN, which must be right too).
    check(randomFinite(), randomFinite());
    // Bases near 1 with large exponents: log|x| must be accurate far beyond f32 there.
    float near1 = std::bit_cast<float>(0x3f800000u + (next() % 4096) - 2048);
    check(near1, static_cast<float>(target / std::log(static_cast<double>(near1))));
  }
}

}  // namespace smelt::vecmath::test
