// Training under a memory budget (TrainStepOptions::memoryBudget): a CNN with batch norm trains under 70% of
// its step's planned peak, with a planned peak within the budget and the same losses and state as without a
// budget; a budget no plan fits fails to compile, naming layers and the smallest budget found.
#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

namespace {

nn::ModulePtr cnn() {
  return nn::sequential({nn::conv2d(3, 8, 3, {.padding = 1}), nn::batchNorm(8), nn::relu(),
                         nn::conv2d(8, 8, 3, {.padding = 1}), nn::batchNorm(8), nn::relu(),
                         nn::conv2d(8, 8, 3, {.padding = 1}), nn::relu(), nn::globalAvgPool2d(), nn::flatten(),
                         nn::linear(8, 5)});
}

const TensorType kImages{DType::f32, {8, 3, 12, 12}}, kLabels{DType::i64, {8}};

Expected<std::unique_ptr<nn::TrainStep>> step(nn::Model& model, int64_t budget) {
  nn::TrainStepOptions options;
  options.memoryBudget = budget;
  return nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.05, .momentum = 0.9}), kImages, kLabels,
                               options);
}

}  // namespace

TEST_CASE("memory budget: a CNN trains under 70% of its planned peak with the same losses and state") {
  nn::Model plainModel(cnn(), 4), budgetModel(cnn(), 4);
  auto plain = step(plainModel, 0);
  REQUIRE_MESSAGE(plain.ok(), (plain.ok() ? "" : plain.error().message()));
  int64_t peak = (*plain)->report().plannedBytes;
  REQUIRE(peak > 0);
  int64_t budget = peak * 7 / 10;
  auto budgeted = step(budgetModel, budget);
  REQUIRE_MESSAGE(budgeted.ok(), (budgeted.ok() ? "" : budgeted.error().message()));
  MESSAGE("planned peak ", peak, " bytes; under a budget of ", budget, ": ", (*budgeted)->report().plannedBytes);
  CHECK((*budgeted)->report().plannedBytes <= budget);
  for (int i = 0; i < 3; ++i) {
    Tensor x = testing::randomTensor(kImages, testing::testSeed() + static_cast<uint64_t>(i));
    Tensor y(kLabels);
    for (int64_t j = 0; j < kLabels.numel(); ++j) y.setInt(j, (j * 3 + i) % 5);
    auto a = (*plain)->run(x, y);
    auto b = (*budgeted)->run(x, y);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*b == doctest::Approx(*a).epsilon(1e-5));
  }
  double worst = 0;
  for (const auto& entry : plainModel.state) {
    const Tensor& want = entry.second;
    const Tensor& got = budgetModel.state.at(entry.first);
    for (int64_t i = 0; i < want.numel(); ++i) {
      worst =
          std::max(worst, std::abs(got.getDouble(i) - want.getDouble(i)) / std::max(1e-3, std::abs(want.getDouble(i))));
    }
  }
  CHECK_MESSAGE(worst < 1e-4, "worst relative difference of the state ", worst);
}

TEST_CASE("memory budget: a budget no plan fits names layers and the smallest budget found") {
  nn::Model model(cnn(), 4);
  auto tiny = step(model, 1024);
  REQUIRE_FALSE(tiny.ok());
  std::string message = tiny.error().message();
  INFO(message);
  CHECK(message.find("no plan found fits") != std::string::npos);
  CHECK(message.find("the smallest found needs") != std::string::npos);
  CHECK(message.find("Conv2D") != std::string::npos);  // the layer a buffer at the peak comes from
}
