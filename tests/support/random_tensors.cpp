// Test input generation and comparison.
#include "tests/support/random_tensors.h"

#include "ir/parser.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

namespace smelt::testing {

Tensor randomTensor(const TensorType& type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t(type);
  std::uniform_real_distribution<double> magnitude(0.25, 2.0);
  std::uniform_int_distribution<int> coin(0, 1);
  std::uniform_int_distribution<int> small(1, 5);
  std::uniform_int_distribution<int> smallUnsigned(1, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isFloat(type.dtype)) {
      t.setDouble(i, coin(rng) ? magnitude(rng) : -magnitude(rng));
    } else if (isSignedInt(type.dtype)) {
      t.setInt(i, coin(rng) ? small(rng) : -small(rng));
    } else if (isUnsignedInt(type.dtype)) {
      t.setInt(i, smallUnsigned(rng));
    } else {
      t.setInt(i, coin(rng));
    }
  }
  return t;
}

TensorMap randomFeeds(const Graph& graph, uint64_t seed) {
  TensorMap feeds;
  for (const Value* v : graph.inputs()) feeds[v->name()] = randomTensor(v->type(), seed++);
  return feeds;
}

uint64_t testSeed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("SMELT_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 10));
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  return seed;
}

double defaultTolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 1e-2;
    case DType::bf16: return 4e-2;
    case DType::f32: return 1e-5;
    case DType::f64: return 1e-12;
    default: return 0.0;
  }
}

std::string compareTensors(const Tensor& actual, const Tensor& expected, double tolerance) {
  if (!(actual.type() == expected.type())) {
    return fmt::format("type {} differs from expected {}", actual.type().toString(), expected.type().toString());
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    if (isFloat(actual.dtype())) {
      double a = actual.getDouble(i);
      double e = expected.getDouble(i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (a == e) continue;
      if (std::fabs(a - e) <= tolerance * (1.0 + std::fabs(e))) continue;
      return fmt::format("element {}: got {}, expected {} (tolerance {})", i, a, e, tolerance);
    }
    if (actual.getInt(i) != expected.getInt(i)) {
      return fmt::format("element {}: got {}, expected {}", i, actual.getInt(i), expected.getInt(i));
    }
  }
  return {};
}

Graph parseOrFail(std::string_view text) {
  auto graph = parseGraph(text);
  if (!graph) FAIL_CHECK(graph.error().message() << "\n--- IR ---\n" << text);
  REQUIRE(graph.ok());
  return std::move(graph).value();
}

double backendTolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 2e-2;
    case DType::bf16: return 8e-2;
    case DType::f32: return 2e-5;
    case DType::f64: return 1e-12;
    default: return 0;
  }
}

}  // namespace smelt::testing
