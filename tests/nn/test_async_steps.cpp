// TrainStep::runAsync on every device (the CPU, PoCL, a GPU where present): steps queued on tensors
// already on the device give run()'s losses and state; a queued batch whose labels are out of range
// trains nothing, its loss is NaN, and the next sync() names the check; a gather's index out of range
// (an embedding) is the same error from run(), with the model's state as it was.
#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"
#include "runtime/device/memory_pool.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace smelt;

namespace {

const TensorType kQueuedInput{DType::f32, {16, 5}}, kQueuedLabels{DType::i64, {16}};

nn::ModulePtr queuedNet() { return nn::sequential({nn::linear(5, 12), nn::tanh(), nn::linear(12, 3)}); }

Tensor queuedLabels(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor y(kQueuedLabels);
  for (int64_t i = 0; i < y.numel(); ++i) y.setInt(i, static_cast<int64_t>(rng() % 3));
  return y;
}

std::unique_ptr<nn::TrainStep> makeQueuedStep(nn::Model& model, const std::string& device) {
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.02}), kQueuedInput, kQueuedLabels,
                                    {.device = device});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  return std::move(*step);
}

/// The largest difference between the two models' states, relative to each entry's largest magnitude.
double queuedStateDifference(nn::Model& a, nn::Model& b) {
  const nn::StateDict& x = a.hostState();
  const nn::StateDict& y = b.hostState();
  double worst = 0;
  for (const auto& [name, want] : x) {
    const Tensor& got = y.at(name);
    double scale = 1e-12;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.getDouble(i)));
    for (int64_t i = 0; i < want.numel(); ++i)
      worst = std::max(worst, std::abs(got.getDouble(i) - want.getDouble(i)) / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("async steps: runAsync's losses and state are run()'s, on every device") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    nn::Model synced(queuedNet(), 7), queued(queuedNet(), 7);
    auto syncStep = makeQueuedStep(synced, device->id());
    auto asyncStep = makeQueuedStep(queued, device->id());
    std::vector<double> want;
    std::vector<DeviceTensor> losses;
    for (int s = 0; s < 6; ++s) {
      Tensor x = testing::randomTensor(kQueuedInput, testing::testSeed() + static_cast<uint64_t>(s));
      Tensor y = queuedLabels(testing::testSeed() + 100 + static_cast<uint64_t>(s));
      auto loss = syncStep->run(x, y);
      REQUIRE_MESSAGE(loss.ok(), (loss.ok() ? "" : loss.error().message()));
      want.push_back(*loss);
      auto dx = DeviceTensor::fromHost(device, x);
      auto dy = DeviceTensor::fromHost(device, y);
      REQUIRE(dx.ok());
      REQUIRE(dy.ok());
      auto pending = asyncStep->runAsync(*dx, *dy);
      REQUIRE_MESSAGE(pending.ok(), (pending.ok() ? "" : pending.error().message()));
      losses.push_back(std::move(*pending));
    }
    Status synced_ = asyncStep->sync();
    REQUIRE_MESSAGE(synced_.ok(), (synced_.ok() ? "" : synced_.error().message()));
    CHECK(asyncStep->steps() == 6);
    for (size_t s = 0; s < losses.size(); ++s) {
      auto got = losses[s].toHost();
      REQUIRE(got.ok());
      CHECK(got->getDouble(0) == doctest::Approx(want[s]).epsilon(1e-6));
    }
    CHECK(queuedStateDifference(synced, queued) < 1e-6);
    if (device->kind() == DeviceKind::kCpu) continue;
    // Fed the same tensors, a queued step rents one block, the loss it hands back: every buffer of the step
    // (state, check counts, outputs) stays where it was, which a recorded run (a CUDA graph) needs.
    auto dx = DeviceTensor::fromHost(device, testing::randomTensor(kQueuedInput, 11));
    auto dy = DeviceTensor::fromHost(device, queuedLabels(12));
    REQUIRE(dx.ok());
    REQUIRE(dy.ok());
    std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
    const int64_t rentsBefore = pool->stats().rents;
    const int64_t replaysBefore = asyncStep->replays();
    for (int s = 0; s < 4; ++s) REQUIRE(asyncStep->runAsync(*dx, *dy).ok());
    REQUIRE(asyncStep->sync().ok());
    CHECK(pool->stats().rents - rentsBefore == 4);
    // A device that records its work (CUDA graphs) replays them, from the second one fed these tensors on.
    if (device->kind() == DeviceKind::kCuda) CHECK(asyncStep->replays() - replaysBefore >= 3);
    if (device->kind() == DeviceKind::kOpenCl) CHECK(asyncStep->replays() == 0);
  }
}

TEST_CASE("async steps: a model whose state is not all updated in place (batch norm) rents only its loss per step") {
  const TensorType images{DType::f32, {4, 3, 8, 8}}, classes{DType::i64, {4}};
  for (const auto& device : testing::everyAccelerator()) {
    CAPTURE(device->id());
    nn::Model model(nn::sequential({nn::conv2d(3, 4, 3, {.padding = 1}), nn::batchNorm(4), nn::relu(),
                                    nn::globalAvgPool2d(), nn::flatten(), nn::linear(4, 3)}),
                    2);
    auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.05, .momentum = 0.9}), images, classes,
                                      {.device = device->id()});
    REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
    auto x = DeviceTensor::fromHost(device, testing::randomTensor(images, 21));
    Tensor labels(classes);
    for (int64_t i = 0; i < labels.numel(); ++i) labels.setInt(i, i % 3);
    auto y = DeviceTensor::fromHost(device, labels);
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    for (int s = 0; s < 3; ++s) REQUIRE((*step)->runAsync(*x, *y).ok());  // warm: both buffers of each entry
    REQUIRE((*step)->sync().ok());
    std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
    const int64_t rentsBefore = pool->stats().rents;
    const int64_t replaysBefore = (*step)->replays();
    for (int s = 0; s < 4; ++s) REQUIRE((*step)->runAsync(*x, *y).ok());
    REQUIRE((*step)->sync().ok());
    CHECK(pool->stats().rents - rentsBefore == 4);
    // Its state's two buffers take turns: two recordings, each replayed (CUDA graphs).
    if (device->kind() == DeviceKind::kCuda) CHECK((*step)->replays() - replaysBefore == 4);
  }
}

TEST_CASE("async steps: a queued batch with a label out of range trains nothing, and sync() names the check") {
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    nn::Model reference(queuedNet(), 9), model(queuedNet(), 9);
    auto referenceStep = makeQueuedStep(reference, device->id());
    auto step = makeQueuedStep(model, device->id());
    Tensor x0 = testing::randomTensor(kQueuedInput, testing::testSeed() + 1),
           y0 = queuedLabels(testing::testSeed() + 2);
    Tensor x1 = testing::randomTensor(kQueuedInput, testing::testSeed() + 3),
           y1 = queuedLabels(testing::testSeed() + 4);
    Tensor bad = queuedLabels(testing::testSeed() + 5);
    bad.setInt(11, 3);  // three classes
    // The reference trains on the two good batches only.
    REQUIRE(referenceStep->run(x0, y0).ok());
    REQUIRE(referenceStep->run(x1, y1).ok());
    auto on = [&](const Tensor& t) {
      auto d = DeviceTensor::fromHost(device, t);
      REQUIRE(d.ok());
      return std::move(*d);
    };
    DeviceTensor dx0 = on(x0), dy0 = on(y0), dx1 = on(x1), dy1 = on(y1), dbad = on(bad);
    auto first = step->runAsync(dx0, dy0);
    auto rejected = step->runAsync(dx1, dbad);
    if (device->kind() == DeviceKind::kCpu) {
      // The CPU runs the step in the call, with run()'s checks on the host.
      REQUIRE(first.ok());
      REQUIRE_FALSE(rejected.ok());
      CHECK_MESSAGE(rejected.error().message().find("target: element 11 is 3, outside [0, 3)") != std::string::npos,
                    rejected.error().message());
    } else {
      REQUIRE(first.ok());
      REQUIRE_MESSAGE(rejected.ok(), (rejected.ok() ? "" : rejected.error().message()));
      auto lost = rejected->toHost();
      REQUIRE(lost.ok());
      CHECK(std::isnan(lost->getDouble(0)));
      Status checked = step->sync();
      REQUIRE_FALSE(checked.ok());
      const std::string message = checked.error().message();
      INFO(message);
      CHECK(message.find("check_range") != std::string::npos);
      CHECK(message.find("outside [0, 3)") != std::string::npos);
      CHECK(message.find("1 batch since the last check trained nothing") != std::string::npos);
      CHECK(step->sync().ok());  // reported once
    }
    CHECK(step->steps() == 1);
    auto last = step->runAsync(dx1, dy1);
    REQUIRE_MESSAGE(last.ok(), (last.ok() ? "" : last.error().message()));
    REQUIRE(step->sync().ok());
    CHECK(step->steps() == 2);
    CHECK(queuedStateDifference(reference, model) < 1e-6);
  }
}

TEST_CASE("async steps: a gather's index out of range fails run() naming it, with the state as it was") {
  const TensorType tokens{DType::i64, {4, 6}}, targets{DType::i64, {4}};
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    nn::Model model(nn::sequential({nn::embedding(10, 4), nn::flatten(), nn::linear(24, 3)}), 5);
    auto step =
        nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), tokens, targets, {.device = device->id()});
    REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
    Tensor x(tokens), y(targets);
    for (int64_t i = 0; i < x.numel(); ++i) x.setInt(i, (i * 7) % 10);
    for (int64_t i = 0; i < y.numel(); ++i) y.setInt(i, i % 3);
    REQUIRE((*step)->run(x, y).ok());
    nn::StateDict before = model.hostState();
    x.setInt(13, 10);
    auto failed = (*step)->run(x, y);
    REQUIRE_FALSE(failed.ok());
    const std::string message = failed.error().message();
    INFO(message);
    CHECK(message.find("gather") != std::string::npos);
    CHECK(message.find("out of range [-10, 10)") != std::string::npos);
    // The step's check says so; without LLVM the CPU's reference interpreter stops at the gather itself.
    if (device->kind() != DeviceKind::kCpu) CHECK(message.find("trained nothing") != std::string::npos);
    CHECK((*step)->steps() == 1);
    for (const auto& [name, value] : model.hostState()) {
      const Tensor& old = before.at(name);
      for (int64_t i = 0; i < value.numel(); ++i) CHECK(value.getDouble(i) == old.getDouble(i));
    }
  }
}

TEST_CASE("async steps: a batch on another device than the step's is an error naming both") {
  nn::Model model(queuedNet(), 3);
  auto step = makeQueuedStep(model, "cpu");
  for (const auto& device : testing::everyAccelerator()) {
    auto x = DeviceTensor::fromHost(device, testing::randomTensor(kQueuedInput, 1));
    auto y = DeviceTensor::fromHost(device, queuedLabels(2));
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    auto result = step->runAsync(*x, *y);
    REQUIRE_FALSE(result.ok());
    CHECK_MESSAGE(result.error().message().find(
                      fmt::format("the input lives on {}, the step runs on cpu", device->id())) != std::string::npos,
                  result.error().message());
  }
}
