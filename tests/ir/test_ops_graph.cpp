// rbf_kernel and graph_conv: values against numpy, shape inference, and verifier errors.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

using testing::requireParseError;
using testing::runOutputs;

namespace {

// graph_conv inputs: 4 nodes, 3 features, 2 outputs. The adjacency has a self-loop (node 2), an
// asymmetric pair, and node 3 with no edges at all (its degree is 0: it must stay zero, not NaN).
const std::vector<double> kNodes = {1.0, -0.5, 0.25, 2.0, 0.0, 1.5, -1.0, 0.75, 0.5, 0.5, -2.0, 1.25};
const std::vector<double> kAdj = {0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0};
const std::vector<double> kWeight = {0.5, -1.0, 1.5, 0.25, -0.75, 2.0};
const std::vector<double> kBias = {0.1, -0.2};

}  // namespace

TEST_CASE("rbf_kernel matches numpy") {
  // numpy: d2 = ((x[:,None,:] - y[None,:,:])**2).sum(-1); np.exp(-gamma * d2), printed with "%.15g".
  TensorMap feeds{{"x", Tensor::of<double>({3, 3}, {0.5, -1.0, 2.0, 0.0, 1.5, -0.5, 1.0, 1.0, 1.0})},
                  {"y", Tensor::of<double>({2, 3}, {0.25, -1.0, 1.5, 2.0, 0.0, -0.75})}};
  auto out = runOutputs(R"(graph @t(%x: f64[3,3], %y: f64[2,3]) {
  %0 = rbf_kernel(%x, %y) : f64[3,2]
  %1 = rbf_kernel(%x, %y) {gamma = 0.3} : f64[3,2]
  return r = %0, s = %1
})",
                        feeds);
  std::vector<double> gamma1 = {0.731615628946642,   2.01460967099726e-05, 3.32152981673137e-05,
                                0.00181349383273462, 0.00812751548929221,  0.00632971542748575};
  std::vector<double> gamma03 = {0.910510361380034, 0.0390173055196118, 0.0453316416116763,
                                 0.150506350450355, 0.236040943404945,  0.218985447750784};
  CHECK(testing::compareTensors(out[0], Tensor::of<double>({3, 2}, gamma1), 1e-13) == "");
  CHECK(testing::compareTensors(out[1], Tensor::of<double>({3, 2}, gamma03), 1e-13) == "");
}

TEST_CASE("rbf_kernel of a point set with itself is symmetric with a unit diagonal") {
  Tensor x = testing::randomTensor({DType::f32, {6, 4}}, testing::testSeed());
  auto out = runOutputs(R"(graph @t(%x: f32[6,4]) {
  %0 = rbf_kernel(%x, %x) {gamma = 0.2} : f32[6,6]
  return r = %0
})",
                        {{"x", x}});
  for (int64_t i = 0; i < 6; ++i) {
    CHECK(out[0].getDouble(i * 6 + i) == 1.0);
    for (int64_t j = 0; j < 6; ++j) {
      CHECK(out[0].getDouble(i * 6 + j) == out[0].getDouble(j * 6 + i));
      CHECK(out[0].getDouble(i * 6 + j) > 0.0);
    }
  }
}

TEST_CASE("graph_conv matches numpy with and without symmetric normalization") {
  // numpy: adj @ (x @ w) + b; symmetric: d = adj.sum(1); s = where(d > 0, 1/sqrt(d), 0);
  // (s[:,None] * adj * s[None,:]) @ (x @ w) + b, printed with "%.15g".
  TensorMap feeds{{"x", Tensor::of<double>({4, 3}, kNodes)},
                  {"a", Tensor::of<double>({4, 4}, kAdj)},
                  {"w", Tensor::of<double>({3, 2}, kWeight)},
                  {"b", Tensor::of<double>({2}, kBias)}};
  auto out = runOutputs(R"(graph @t(%x: f64[4,3], %a: f64[4,4], %w: f64[3,2], %b: f64[2]) {
  %0 = graph_conv(%x, %a, %w, %b) : f64[4,2]
  %1 = graph_conv(%x, %a, %w, %b) {normalize = "symmetric"} : f64[4,2]
  %2 = graph_conv(%x, %a, %w) {normalize = "symmetric"} : f64[4,2]
  return plain = %0, sym = %1, nobias = %2
})",
                        feeds);
  std::vector<double> plain = {0.225, 2.9875, -0.3375, -0.825, -0.0875, 1.3625, 0.1, -0.2};
  std::vector<double> sym = {0.136611652351682, 1.60085678118655, -0.209359216769114, -0.641941738241592,
                             0.00625000000000003, 0.58125, 0.1, -0.2};
  std::vector<double> nobias = {0.0366116523516815, 1.80085678118655, -0.309359216769114, -0.441941738241592,
                                -0.09375, 0.78125, 0, 0};
  CHECK(testing::compareTensors(out[0], Tensor::of<double>({4, 2}, plain), 1e-13) == "");
  CHECK(testing::compareTensors(out[1], Tensor::of<double>({4, 2}, sym), 1e-13) == "");
  CHECK(testing::compareTensors(out[2], Tensor::of<double>({4, 2}, nobias), 1e-13) == "");
}

TEST_CASE("graph_conv with an identity adjacency is a dense layer") {
  uint64_t seed = testing::testSeed();
  Tensor x = testing::randomTensor({DType::f64, {5, 3}}, seed);
  Tensor w = testing::randomTensor({DType::f64, {3, 4}}, seed + 1);
  auto out = runOutputs(R"(graph @t(%x: f64[5,3], %w: f64[3,4]) {
  %i = constant() {value = dense<f64[5,5]> [1,0,0,0,0, 0,1,0,0,0, 0,0,1,0,0, 0,0,0,1,0, 0,0,0,0,1]} : f64[5,5]
  %0 = graph_conv(%x, %i, %w) {normalize = "symmetric"} : f64[5,4]
  return r = %0
})",
                        {{"x", x}, {"w", w}});
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      double expected = 0;
      for (int64_t k = 0; k < 3; ++k) expected += x.getDouble(i * 3 + k) * w.getDouble(k * 4 + j);
      CHECK(out[0].getDouble(i * 4 + j) == doctest::Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("rbf_kernel and graph_conv reject bad operands and attributes") {
  const std::pair<const char*, const char*> cases[] = {
      {"rbf_kernel(%x, %y3) : f32[4,5]", "rbf_kernel %0: operand #0 (x) has 3 features but operand #1 (y) has 2"},
      {"rbf_kernel(%x, %v) : f32[4,5]", "rbf_kernel %0: operand #1 (y) must have rank 2, got f32[3]"},
      {"rbf_kernel(%x, %xd) : f32[4,4]", "rbf_kernel %0: operand #0 (x) is f32[4,3] but operand #1 (y) is f64[4,3]"},
      {"rbf_kernel(%xi, %xi) : i32[4,4]", "rbf_kernel %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32"},
      {"rbf_kernel(%x, %x) {gamma = nan} : f32[4,4]", "rbf_kernel %0: attribute 'gamma' must be finite, got nan"},
      {"graph_conv(%x, %adj5, %w) : f32[4,2]",
       "graph_conv %0: operand #1 (adj) must be [4,4] for 4 nodes, got f32[5,5]"},
      {"graph_conv(%x, %adj, %w4) : f32[4,2]",
       "graph_conv %0: operand #2 (weight) has 4 input features but operand #0 (x) has 3"},
      {"graph_conv(%x, %adj, %w, %b3) : f32[4,2]", "graph_conv %0: operand #3 (bias) must be [2], got f32[3]"},
      {"graph_conv(%x, %adj, %wd) : f32[4,2]",
       "graph_conv %0: operand #0 (x) is f32[4,3] but operand #2 (weight) is f64[3,2]"},
      {"graph_conv(%x, %adj, %w) {normalize = \"row\"} : f32[4,2]",
       "graph_conv %0: attribute 'normalize' must be \"none\" or \"symmetric\", got \"row\""},
      {"graph_conv(%x, %v, %w) : f32[4,2]", "graph_conv %0: operand #1 (adj) must have rank 2, got f32[3]"},
  };
  for (const auto& [nodeText, message] : cases) {
    std::string node = nodeText;
    CAPTURE(node);
    std::string text = fmt::format(R"(graph @t(%x: f32[4,3], %y: f32[5,3], %y3: f32[5,2], %v: f32[3],
    %xd: f64[4,3], %xi: i32[4,3], %adj: f32[4,4], %adj5: f32[5,5], %w: f32[3,2], %w4: f32[4,2],
    %wd: f64[3,2], %b3: f32[3]) {{
  %0 = {}
  return r = %0
}})",
                                   node);
    std::string error = requireParseError(text);
    CHECK_MESSAGE(error.find(message) != std::string::npos, error);
  }
}
