// dropout: the pinned counter-based stream, determinism, y == x*mask/(1-ratio), the kept fraction,
// inference mode, and verifier errors.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

using testing::requireParseError;

namespace {

// Runs dropout on `x` (f32 of any shape) and returns (y, mask).
std::vector<Tensor> runDropout(const Tensor& x, std::string_view attrs) {
  std::string type = x.type().toString();
  std::string shape = type.substr(type.find('['));
  std::string text = fmt::format(R"(graph @t(%x: {}) {{
  %0, %1 = dropout(%x) {{{}}} : {}, bool{}
  return y = %0, mask = %1
}})",
                                 type, attrs, type, shape);
  return testing::runOutputs(text, {{"x", x}});
}

std::string maskBits(const Tensor& mask, int64_t count) {
  std::string bits;
  for (int64_t i = 0; i < count; ++i) bits += mask.getInt(i) ? '1' : '0';
  return bits;
}

}  // namespace

TEST_CASE("dropout's mask for a fixed seed is pinned") {
  // The stream of docs/ops.md, re-implemented independently in Python (big integers masked to 64
  // bits): keep_i = (splitmix64(seed * 0x9E3779B97F4A7C15 + i) >> 11) * 2**-53 >= ratio, ratio 0.5.
  // A change to the stream, the element order or the comparison changes these bits.
  Tensor x = testing::randomTensor({DType::f32, {4, 8}}, testing::testSeed());
  CHECK(maskBits(runDropout(x, "seed = 7")[1], 32) == "11110100011110110101001011001001");
  CHECK(maskBits(runDropout(x, "")[1], 32) == "11100010110011010101001111111111");
  CHECK(maskBits(runDropout(x, "seed = -3")[1], 32) == "00010011000100010011110101001101");
  // With seed 7 the first draws are u = 0.7715, 0.5231, 0.7391, 0.8887: ratio 0.75 keeps 0 and 3,
  // ratio 0.52 keeps the first four, ratio 0.53 drops element 1.
  CHECK(maskBits(runDropout(x, "ratio = 0.75, seed = 7")[1], 4) == "1001");
  CHECK(maskBits(runDropout(x, "ratio = 0.523, seed = 7")[1], 4) == "1111");
  CHECK(maskBits(runDropout(x, "ratio = 0.524, seed = 7")[1], 4) == "1011");
}

TEST_CASE("dropout is deterministic per seed and scales kept elements by 1/(1-ratio)") {
  Tensor x = testing::randomTensor({DType::f64, {3, 5, 7}}, testing::testSeed());
  auto a = runDropout(x, "ratio = 0.3, seed = 123");
  auto b = runDropout(x, "ratio = 0.3, seed = 123");
  auto c = runDropout(x, "ratio = 0.3, seed = 124");
  CHECK(a[0].bitwiseEqual(b[0]));
  CHECK(a[1].bitwiseEqual(b[1]));
  CHECK(!a[1].bitwiseEqual(c[1]));
  CHECK(a[1].dtype() == DType::boolean);
  for (int64_t i = 0; i < x.numel(); ++i) {
    CAPTURE(i);
    CHECK(a[0].getDouble(i) == x.getDouble(i) * static_cast<double>(a[1].getInt(i)) / (1 - 0.3));
  }
}

TEST_CASE("dropout keeps about 1 - ratio of a large input") {
  Tensor x(TensorType{DType::f32, {100000}});
  for (int64_t i = 0; i < x.numel(); ++i) x.setDouble(i, 1.0);
  for (double ratio : {0.1, 0.5, 0.9}) {
    for (int64_t seed : {0, 1, 99}) {
      CAPTURE(ratio);
      CAPTURE(seed);
      auto out = runDropout(x, fmt::format("ratio = {}, seed = {}", ratio, seed));
      int64_t kept = 0;
      for (int64_t i = 0; i < x.numel(); ++i) kept += out[1].getInt(i);
      // Binomial(n, 1-ratio): 5 sigma is ~0.0047 of n at ratio 0.5, so a biased stream fails.
      double n = static_cast<double>(x.numel());
      double sigma = std::sqrt(n * ratio * (1 - ratio));
      CHECK(std::fabs(static_cast<double>(kept) - n * (1 - ratio)) < 5 * sigma);
    }
  }
}

TEST_CASE("dropout with training 0 is the identity, ratio 0 keeps all, ratio 1 drops all") {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    CAPTURE(dtypeName(dtype));
    Tensor x = testing::randomTensor({dtype, {6, 9}}, testing::testSeed());
    auto eval = runDropout(x, "ratio = 0.9, seed = 5, training = 0");
    CHECK(eval[0].bitwiseEqual(x));
    auto none = runDropout(x, "ratio = 0.0");
    CHECK(none[0].bitwiseEqual(x));
    auto all = runDropout(x, "ratio = 1.0");
    for (int64_t i = 0; i < x.numel(); ++i) {
      CHECK(eval[1].getInt(i) == 1);
      CHECK(none[1].getInt(i) == 1);
      CHECK(all[1].getInt(i) == 0);
      CHECK(all[0].getDouble(i) == 0.0);
    }
  }
}

TEST_CASE("dropout rejects bad attributes and operands") {
  const std::pair<const char*, const char*> cases[] = {
      {"dropout(%x) {ratio = 1.5} : f32[4], bool[4]", "dropout %0: attribute 'ratio' must be in [0, 1], got 1.5"},
      {"dropout(%x) {ratio = -0.1} : f32[4], bool[4]", "dropout %0: attribute 'ratio' must be in [0, 1], got -0.1"},
      {"dropout(%x) {ratio = nan} : f32[4], bool[4]", "dropout %0: attribute 'ratio' must be in [0, 1], got nan"},
      {"dropout(%x) {training = 2} : f32[4], bool[4]", "dropout %0: attribute 'training' must be 0 or 1, got 2"},
      {"dropout(%i) : i32[4], bool[4]", "dropout %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32"},
  };
  for (const auto& [nodeText, message] : cases) {
    std::string node = nodeText;
    CAPTURE(node);
    std::string error = requireParseError(fmt::format(R"(graph @t(%x: f32[4], %i: i32[4]) {{
  %0, %1 = {}
  return y = %0
}})",
                                                      node));
    CHECK_MESSAGE(error.find(message) != std::string::npos, error);
  }
}
