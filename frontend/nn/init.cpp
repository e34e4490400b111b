// See init.h. Values come from std::mt19937_64 through explicit formulas (not std's distributions,
// whose output differs between standard libraries), so a seed gives the same tensor everywhere.
#include "frontend/nn/init.h"

#include <cmath>
#include <random>
#include <string>

namespace smelt::nn {

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Uniform in [0, 1) with 53 random bits.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1p-53; }

Initializer fill(std::function<double(std::mt19937_64&)> draw) {
  return [draw = std::move(draw)](const Shape& shape, uint64_t seed) {
    Tensor t(TensorType{DType::f32, shape});
    std::mt19937_64 rng(seed);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(draw(rng));
    return t;
  };
}

/// Standard normal by Box-Muller.
double gaussian(std::mt19937_64& rng) {
  double u = 1.0 - unit(rng), v = unit(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * kPi * v);
}

}  // namespace

Initializer constantValue(double value) {
  return fill([value](std::mt19937_64&) { return value; });
}
Initializer zeros() { return constantValue(0.0); }
Initializer ones() { return constantValue(1.0); }

Initializer uniform(double bound) {
  return fill([bound](std::mt19937_64& rng) { return (2.0 * unit(rng) - 1.0) * bound; });
}

Initializer normal(double stddev) {
  return fill([stddev](std::mt19937_64& rng) { return stddev * gaussian(rng); });
}

Initializer kaimingUniform(int64_t fanIn, double gain) {
  return uniform(gain * std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(fanIn, 1))));
}

Initializer kaimingNormal(int64_t fanIn, double gain) {
  return normal(gain / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1))));
}

Initializer xavierUniform(int64_t fanIn, int64_t fanOut, double gain) {
  return uniform(gain * std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(fanIn + fanOut, 1))));
}

Initializer xavierNormal(int64_t fanIn, int64_t fanOut, double gain) {
  return normal(gain * std::sqrt(2.0 / static_cast<double>(std::max<int64_t>(fanIn + fanOut, 1))));
}

uint64_t seedFor(uint64_t seed, const std::string& name) {
  // FNV-1a over the name, mixed with the seed (splitmix64's finalizer).
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  uint64_t z = h + seed * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace smelt::nn
