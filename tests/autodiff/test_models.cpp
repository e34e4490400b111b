// Whole-model gradient checks in f64: an MLP with a cross-entropy loss and a small CNN (convolution,
// batch norm in training form, max pooling, grouped strided convolution, global pooling, gemm,
// softmax), against central finite differences for the input and every parameter.
#include "ir/printer.h"
#include "tests/autodiff/gradient_check.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

namespace {

// IR text declaring f64 parameters with fresh random values of the given shapes, scaled by
// 1/sqrt(fan-in) as real initializers are: unscaled weights saturate tanh and log_softmax, and a
// saturated model's tiny gradients drown in finite-difference rounding.
std::string parameters(const std::vector<std::pair<std::string, Shape>>& params, uint64_t seed) {
  std::string out;
  PrintOptions options;
  options.maxListElements = 0;  // always hex: exact and compact
  for (const auto& [name, shape] : params) {
    Tensor t = testing::randomTensor({DType::f64, shape}, seed++);
    int64_t fanIn = shape.size() > 1 ? numElements(shape) / shape[shape.size() == 2 ? 1 : 0] : 1;
    for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, t.getDouble(i) / std::sqrt(static_cast<double>(fanIn)));
    out += fmt::format("  param %{}: {} = {}\n", name, t.type().toString(), printTensorBody(t, options));
  }
  return out;
}

void check(const std::string& text, uint64_t seed) {
  Graph g = testing::parseOrFail(text);
  TensorMap feeds = testing::randomFeedsF64(g, seed, false);
  REQUIRE(testing::outputsFinite(g, feeds));
  testing::GradientCheck result = testing::checkGradients(g, feeds, seed, 24, /*includeParameters=*/true);
  CHECK_MESSAGE(result.error.empty(), result.error);
  CHECK_MESSAGE(result.worstRelativeError < 1e-6, result.report);
  MESSAGE(result.report);
}

}  // namespace

TEST_CASE("an MLP with a cross-entropy loss: gradients match finite differences") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  std::string text = "graph @mlp(%x: f64[8,5]) {\n" +
                     parameters({{"w1", {5, 16}}, {"b1", {16}}, {"w2", {16, 3}}, {"b2", {3}}}, seed) + R"(
  %labels = constant() {value = dense<i64[8]> [0, 2, 1, 1, 0, 2, 2, 1]} : i64[8]
  %h = matmul(%x, %w1) : f64[8,16]
  %hb = add(%h, %b1) : f64[8,16]
  %a = relu(%hb) : f64[8,16]
  %o = matmul(%a, %w2) : f64[8,3]
  %ob = add(%o, %b2) : f64[8,3]
  %t = tanh(%ob) : f64[8,3]
  %lp = log_softmax(%t) {axis = 1} : f64[8,3]
  %pick = gather(%lp, %labels) {axis = 1} : f64[8,8]
  %loss = reduce_mean(%pick) : f64[]
  %nl = neg(%loss) : f64[]
  return loss = %nl
})";
  check(text, seed);
}

TEST_CASE("a small CNN with batch norm and pooling: gradients match finite differences") {
  uint64_t seed = testing::testSeed() + 7;
  CAPTURE(seed);
  std::string text = "graph @cnn(%x: f64[2,3,8,8]) {\n" +
                     parameters({{"c1", {4, 3, 3, 3}},
                                 {"c1b", {4}},
                                 {"bn_scale", {4}},
                                 {"bn_bias", {4}},
                                 {"c2", {6, 2, 3, 3}},
                                 {"fc", {3, 6}},
                                 {"fcb", {3}}},
                                seed) +
                     R"(  state %rm: f64[4] = [0, 0, 0, 0]
  state %rv: f64[4] = [1, 1, 1, 1]
  %0 = conv2d(%x, %c1, %c1b) {padding = [1, 1, 1, 1]} : f64[2,4,8,8]
  %1, %2, %3 = batch_norm_train(%0, %bn_scale, %bn_bias, %rm, %rv) : f64[2,4,8,8], f64[4], f64[4]
  %4 = relu(%1) : f64[2,4,8,8]
  %5 = max_pool2d(%4) {kernel = [2, 2]} : f64[2,4,4,4]
  %6 = conv2d(%5, %c2) {groups = 2, padding = [1, 1, 1, 1], stride = [2, 2]} : f64[2,6,2,2]
  %7 = global_avg_pool2d(%6) : f64[2,6,1,1]
  %8 = flatten(%7) : f64[2,6]
  %9 = gemm(%8, %fc, %fcb) {trans_b = 1} : f64[2,3]
  %10 = log_softmax(%9) : f64[2,3]
  return p = %10
})";
  check(text, seed);
}
