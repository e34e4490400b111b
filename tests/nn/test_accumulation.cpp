// Gradient accumulation (TrainStepOptions::accumulate): k micro-batches then one update train as one step on
// their concatenation does (equal micro-batches: the mean of their mean gradients is the whole batch's).
#include "frontend/nn/data_parallel.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

namespace {

nn::ModulePtr mlp() { return nn::sequential({nn::linear(6, 16), nn::tanh(), nn::linear(16, 3)}); }

}  // namespace

TEST_CASE("gradient accumulation: three micro-batches and one update equal one step on the whole batch") {
  const TensorType xType{DType::f32, {24, 6}}, yType{DType::i64, {24}};
  nn::Model whole(mlp(), 2), micro(mlp(), 2);
  auto one = nn::TrainStep::create(whole, nn::crossEntropy, nn::adam({.lr = 0.02}), xType, yType);
  auto acc = nn::TrainStep::create(micro, nn::crossEntropy, nn::adam({.lr = 0.02}), TensorType{DType::f32, {8, 6}},
                                   TensorType{DType::i64, {8}}, {.accumulate = 3});
  REQUIRE_MESSAGE(acc.ok(), (acc.ok() ? "" : acc.error().message()));
  REQUIRE(one.ok());
  for (int update = 0; update < 2; ++update) {
    Tensor x = testing::randomTensor(xType, testing::testSeed() + static_cast<uint64_t>(update));
    Tensor y(yType);
    for (int64_t i = 0; i < 24; ++i) y.setInt(i, (i * 7 + update) % 3);
    REQUIRE((*one)->run(x, y).ok());
    for (int64_t m = 0; m < 3; ++m) {
      CHECK((*acc)->steps() == update);  // no update until the third micro-batch
      REQUIRE((*acc)->run(nn::shardOf(x, static_cast<int>(m), 3), nn::shardOf(y, static_cast<int>(m), 3)).ok());  // rows 8m..8m+7
    }
    CHECK((*acc)->steps() == update + 1);
  }
  double worst = 0;
  for (const auto& entry : whole.state) {
    // Named, not bound: clang 14 cannot capture structured bindings (REQUIRE_MESSAGE).
    const std::string& name = entry.first;
    const Tensor& want = entry.second;
    REQUIRE_MESSAGE(micro.state.count(name), name);
    const Tensor& got = micro.state.at(name);
    double scale = 1e-3;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.getDouble(i)));
    for (int64_t i = 0; i < want.numel(); ++i)
      worst = std::max(worst, std::abs(got.getDouble(i) - want.getDouble(i)) / scale);
  }
  CHECK_MESSAGE(worst < 1e-5, "worst relative difference ", worst);
  // The accumulators are state of their own, cleared by the update.
  CHECK(micro.state.count("accum.0.weight"));
  for (int64_t i = 0; i < micro.state.at("accum.0.weight").numel(); ++i) {
    CHECK(micro.state.at("accum.0.weight").getDouble(i) == 0.0);
  }
}

TEST_CASE("gradient accumulation: accumulate below 1 is an error") {
  nn::Model model(mlp(), 2);
  auto bad = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), TensorType{DType::f32, {8, 6}},
                                   TensorType{DType::i64, {8}}, {.accumulate = 0});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("accumulate") != std::string::npos);
}
