// max_pool2d's gradient on both of its paths (windows tiling the input, the general tap scatter):
// ties route dy to the first maximum of each window in scan order, as PyTorch's indices do, and both
// paths agree with each other and with finite differences.
#include "autodiff/backward.h"
#include "tests/autodiff/gradient_check.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace smelt;

namespace {

/// d sum(max_pool2d(x) * w) / dx for `attrs` on x [1, 1, 4, 4].
std::vector<double> poolGradient(const Tensor& x, const std::string& attrs, const Shape& out) {
  Graph g = testing::parseOrFail(fmt::format(R"(graph @t(%x: f64[1,1,4,4], %w: f64{}) {{
  %0 = max_pool2d(%x) {{{}}} : f64{}
  %1 = mul(%0, %w) : f64{}
  %2 = reduce_sum(%1) : f64[]
  return y = %2
}})",
                                             TensorType{DType::f64, out}.toString().substr(3), attrs,
                                             TensorType{DType::f64, out}.toString().substr(3),
                                             TensorType{DType::f64, out}.toString().substr(3)));
  Value* target = g.outputs()[0].value;
  Value* source = g.inputs()[0];
  Value* seed = nullptr;
  auto dx = buildGradients(g, std::span<Value* const>(&target, 1), std::span<Value* const>(&seed, 1),
                           std::span<Value* const>(&source, 1));
  REQUIRE_MESSAGE(dx.ok(), (dx.ok() ? "" : dx.error().message()));
  g.addOutput("dx", (*dx)[0]);
  Tensor w(TensorType{DType::f64, out});
  for (int64_t i = 0; i < w.numel(); ++i) w.setDouble(i, static_cast<double>(i + 1));
  auto r = interpret(g, {{"x", x}, {"w", w}});
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message()));
  return (*r)[1].toDoubles();
}

}  // namespace

TEST_CASE("max_pool2d gradient: ties go to the first maximum, on the tiled and the general path alike") {
  // Every window of 2x2 holds one repeated maximum: 5 at (0,1) and (1,0) of the first window, etc.
  Tensor x = Tensor::of<double>({1, 1, 4, 4}, {1, 5, 2, 2,  //
                                               5, 3, 2, 2,  //
                                               7, 0, 4, 9,  //
                                               7, 7, 9, 1});
  std::vector<double> tiled = poolGradient(x, "kernel = [2, 2]", {1, 1, 2, 2});
  std::vector<double> expected{0, 1, 2, 0,  //
                               0, 0, 0, 0,  //
                               3, 0, 0, 4,  //
                               0, 0, 0, 0};
  CHECK_MESSAGE(tiled == expected, fmt::format("{}", fmt::join(tiled, " ")));
  // Overlapping windows (stride 1 across) take the general path: each window's first maximum gets its
  // weight, summed where windows share it.
  std::vector<double> general = poolGradient(x, "kernel = [2, 2], stride = [2, 1]", {1, 1, 2, 3});
  std::vector<double> expectedGeneral{0, 3, 3, 0,  //
                                      0, 0, 0, 0,  //
                                      4, 0, 0, 6,  //
                                      0, 0, 5, 0};
  CHECK_MESSAGE(general == expectedGeneral, fmt::format("{}", fmt::join(general, " ")));
}

TEST_CASE("max_pool2d gradient on the tiled path matches finite differences in f64") {
  Graph g = testing::parseOrFail(R"(graph @t(%x: f64[2,3,6,4]) {
  %0 = max_pool2d(%x) {kernel = [3, 2]} : f64[2,3,2,2]
  %1 = tanh(%0) : f64[2,3,2,2]
  return y = %1
})");
  TensorMap feeds = testing::randomFeedsF64(g, testing::testSeed(), false);
  testing::GradientCheck result = testing::checkGradients(g, feeds, testing::testSeed(), 24, false);
  CHECK_MESSAGE(result.error.empty(), result.error);
  CHECK_MESSAGE(result.worstRelativeError < 1e-6, result.report);
}
