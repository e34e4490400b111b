// The model API on every device there is (PoCL here, a GPU where present): a TrainStep on the device
// gives the CPU's losses and state step after step (parameters and Adam's moments stay on the device,
// updated in place), a Predictor on the device predicts from that state, the host state comes back
// when asked, a model trained on the device goes on training on the CPU from where it was, and a lost
// device sends the model back to its last copy on the host, from which training goes on. And "auto" places
// a TrainStep and a Predictor where the measured crossovers say.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"
#include "runtime/device/device_list.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/memory_pool.h"
#include "runtime/placement/placement.h"

using namespace smelt;

namespace {

void makeGaussianBatch(std::mt19937_64& rng, Tensor& x, Tensor& y) {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < x.numel(); ++i) x.setDouble(i, normal(rng));
  for (int64_t i = 0; i < y.numel(); ++i) y.setInt(i, static_cast<int64_t>(rng() % 3));
}

nn::ModulePtr gaussianClassifier() {
  return nn::sequential({nn::linear(6, 24), nn::tanh(), nn::linear(24, 24), nn::relu(), nn::linear(24, 3)});
}

/// The largest difference between two tensors relative to the larger's largest magnitude.
double relativeDifference(const Tensor& a, const Tensor& b) {
  double scale = 1e-12, worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) scale = std::max({scale, std::abs(a.getDouble(i)), std::abs(b.getDouble(i))});
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.getDouble(i) - b.getDouble(i)));
  return worst / scale;
}

/// Every device but the CPU that opens here.
std::vector<std::string> devices() {
  std::vector<std::string> ids;
  for (const DeviceDescription& d : listDevices()) {
    if (d.kind != DeviceKind::kCpu) ids.push_back(d.id);
  }
  return ids;
}

}  // namespace

TEST_CASE("training on devices: the device's losses and state are the CPU's, step after step") {
  std::vector<std::string> ids = devices();
  if (ids.empty()) MESSAGE("no device besides the CPU: nothing to compare");
  for (const std::string& id : ids) {
    CAPTURE(id);
    TensorType xType{DType::f32, {32, 6}}, yType{DType::i64, {32}};
    nn::Model onCpu(gaussianClassifier(), 3), onDevice(gaussianClassifier(), 3);
    nn::TrainStepOptions cpuOptions{.device = "cpu", .clipNorm = 1.0};
    nn::TrainStepOptions deviceOptions{.device = id, .clipNorm = 1.0};
    auto cpuStep = nn::TrainStep::create(onCpu, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, cpuOptions);
    auto deviceStep =
        nn::TrainStep::create(onDevice, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, deviceOptions);
    REQUIRE_MESSAGE(cpuStep.ok(), (cpuStep.ok() ? "" : cpuStep.error().message()));
    REQUIRE_MESSAGE(deviceStep.ok(), (deviceStep.ok() ? "" : deviceStep.error().message()));
    CHECK((*deviceStep)->deviceId() == id);
    std::mt19937_64 rng(21);
    Tensor x(xType), y(yType), cpuLogits, deviceLogits;
    std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(*openDevice(id));
    int64_t allocationsWarm = 0;
    for (int s = 0; s < 12; ++s) {
      makeGaussianBatch(rng, x, y);
      auto a = (*cpuStep)->run(x, y, &cpuLogits);
      auto b = (*deviceStep)->run(x, y, &deviceLogits);
      REQUIRE(a.ok());
      REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().message()));
      CHECK_MESSAGE(std::abs(*a - *b) <= 1e-4 * (1 + std::abs(*a)), "step ", s, ": ", *a, " vs ", *b);
      CHECK(relativeDifference(cpuLogits, deviceLogits) < 1e-4);
      // Once warm, a step on the device allocates nothing from the driver (the pool recycles).
      if (s == 2) allocationsWarm = pool->stats().deviceAllocations;
    }
    CHECK(pool->stats().deviceAllocations == allocationsWarm);
    // The state comes back to the host when asked: parameters and Adam's moments, as the CPU's.
    auto state = onDevice.syncedHostState();
    REQUIRE(state.ok());
    REQUIRE((*state)->size() == onCpu.state.size());
    for (const auto& entry : onCpu.state) {
      // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
      const auto& name = entry.first;
      const auto& t = entry.second;
      CAPTURE(name);
      REQUIRE((*state)->count(name));
      CHECK(relativeDifference(t, (*state)->at(name)) < 1e-4);
    }
    // A predictor on the device predicts from the device's state, as the CPU's does from its own.
    auto devicePredict = nn::Predictor::create(onDevice, xType, {.device = id});
    auto cpuPredict = nn::Predictor::create(onCpu, xType, {.device = "cpu"});
    REQUIRE(devicePredict.ok());
    REQUIRE(cpuPredict.ok());
    CHECK((*devicePredict)->deviceId() == id);
    makeGaussianBatch(rng, x, y);
    auto p = (*devicePredict)->run(x);
    auto q = (*cpuPredict)->run(x);
    REQUIRE(p.ok());
    REQUIRE(q.ok());
    CHECK(relativeDifference(*p, *q) < 1e-4);
    // The model trained on the device goes on training on the CPU from where it was.
    auto thenCpu = nn::TrainStep::create(onDevice, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, cpuOptions);
    REQUIRE(thenCpu.ok());
    makeGaussianBatch(rng, x, y);
    auto c = (*cpuStep)->run(x, y);
    auto d = (*thenCpu)->run(x, y);
    REQUIRE(c.ok());
    REQUIRE(d.ok());
    // (Adam's step count starts again in the new step: compare the loss, which comes before the update.)
    CHECK(std::abs(*c - *d) <= 1e-4 * (1 + std::abs(*c)));
  }
}

TEST_CASE(
    "training on devices: a lost device is an error naming the lost steps, and training goes on from the last host "
    "copy") {
  std::vector<std::string> ids = devices();
  if (ids.empty()) MESSAGE("no device besides the CPU: nothing to lose");
  for (const std::string& id : ids) {
    CAPTURE(id);
    TensorType xType{DType::f32, {32, 6}}, yType{DType::i64, {32}};
    nn::Model onCpu(gaussianClassifier(), 5), onDevice(gaussianClassifier(), 5);
    auto cpuStep =
        nn::TrainStep::create(onCpu, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, {.device = "cpu"});
    auto deviceStep =
        nn::TrainStep::create(onDevice, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, {.device = id});
    REQUIRE(cpuStep.ok());
    REQUIRE(deviceStep.ok());
    std::mt19937_64 rng(8);
    std::vector<std::pair<Tensor, Tensor>> batches;
    for (int b = 0; b < 7; ++b) {
      batches.emplace_back(Tensor(xType), Tensor(yType));
      makeGaussianBatch(rng, batches.back().first, batches.back().second);
    }
    // Three steps on both; the device's state copied to the host; two more on the device only.
    for (int b = 0; b < 3; ++b) {
      REQUIRE((*cpuStep)->run(batches[b].first, batches[b].second).ok());
      REQUIRE((*deviceStep)->run(batches[b].first, batches[b].second).ok());
    }
    REQUIRE(onDevice.syncedHostState().ok());
    for (int b = 3; b < 5; ++b) REQUIRE((*deviceStep)->run(batches[b].first, batches[b].second).ok());
    CHECK(onDevice.unsyncedSteps() == 2);
    // The device is lost during the sixth step.
    REQUIRE(faultInjector().configure("lost=1").ok());
    auto lost = (*deviceStep)->run(batches[5].first, batches[5].second);
    REQUIRE(faultInjector().configure("").ok());
    REQUIRE_FALSE(lost.ok());
    const std::string message = lost.error().message();
    CHECK_MESSAGE(message.find("training step 6: " + id + " was lost") != std::string::npos, message);
    CHECK_MESSAGE(message.find("2 steps ago (step 3)") != std::string::npos, message);
    CHECK((*deviceStep)->steps() == 3);
    // Training goes on from the step-3 state, as the CPU's does from its own step 3.
    Tensor cpuLogits, deviceLogits;
    for (int b = 3; b < 7; ++b) {
      auto a = (*cpuStep)->run(batches[b].first, batches[b].second, &cpuLogits);
      auto d = (*deviceStep)->run(batches[b].first, batches[b].second, &deviceLogits);
      REQUIRE(a.ok());
      REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.error().message()));
      CHECK_MESSAGE(std::abs(*a - *d) <= 1e-4 * (1 + std::abs(*a)), "batch ", b, ": ", *a, " vs ", *d);
      CHECK(relativeDifference(cpuLogits, deviceLogits) < 1e-4);
    }
    CHECK((*deviceStep)->steps() == 7);
  }
}

TEST_CASE("training on devices: 'auto' places a TrainStep and a Predictor by the measured crossovers") {
  Expected<std::shared_ptr<Device>> opencl = openDevice("opencl");
  if (!opencl) {
    MESSAGE("no OpenCL device: " << opencl.error().message());
    return;
  }
  const char* deviceEnv = std::getenv("SMELT_DEVICE");
  REQUIRE_MESSAGE(!(deviceEnv && *deviceEnv), "SMELT_DEVICE is set; this test needs the automatic choice");
  // The placement tables live in the kernel cache's folder: one of this test's own.
  const char* cacheEnv = std::getenv("SMELT_CACHE_DIR");
  const std::string oldCache = cacheEnv ? cacheEnv : "";
  const std::string dir = fmt::format("{}/auto-placement-{}", std::filesystem::temp_directory_path().string(), getpid());
  setenv("SMELT_CACHE_DIR", dir.c_str(), 1);
  // As if `smelt tune` had found PoCL faster from a million multiply-adds of products.
  const DeviceDescription& d = (*opencl)->description();
  PlacementTable table{d.id, d.name, d.driver, "test", {}};
  table.kinds.push_back({WorkKind::kMatmul, {{1 << 20, 2e-3, 1e-3}}, int64_t{1} << 20});
  REQUIRE(savePlacementTable(table, d).ok());
  forgetPlacementTables();

  auto trainOn = [&](int64_t width, int64_t batch) {
    CAPTURE(width);
    TensorType xType{DType::f32, {batch, width}}, yType{DType::i64, {batch}};
    auto model = [&] { return nn::sequential({nn::linear(width, width), nn::relu(), nn::linear(width, 3)}); };
    nn::Model placed(model(), 8), onCpu(model(), 8);
    auto automatic = nn::TrainStep::create(placed, nn::crossEntropy, nn::sgd({.lr = 0.1}), xType, yType, {.device = "auto"});
    auto cpu = nn::TrainStep::create(onCpu, nn::crossEntropy, nn::sgd({.lr = 0.1}), xType, yType, {.device = "cpu"});
    REQUIRE_MESSAGE(automatic.ok(), (automatic.ok() ? "" : automatic.error().message()));
    REQUIRE(cpu.ok());
    std::mt19937_64 rng(4);
    Tensor x(xType), y(yType);
    for (int s = 0; s < 3; ++s) {
      makeGaussianBatch(rng, x, y);
      auto a = (*automatic)->run(x, y);
      auto b = (*cpu)->run(x, y);
      REQUIRE_MESSAGE(a.ok(), (a.ok() ? "" : a.error().message()));
      REQUIRE(b.ok());
      CHECK(std::abs(*a - *b) <= 1e-4 * (1 + std::abs(*b)));
    }
    auto predict = nn::Predictor::create(placed, xType, {.device = "auto"});
    REQUIRE(predict.ok());
    return std::pair((*automatic)->deviceId(), (*predict)->deviceId());
  };
  // 6x6 products of 8 rows: far below the crossover, on the CPU; 256x256 of 64 rows: above it, on PoCL.
  CHECK(trainOn(6, 8) == std::pair<std::string, std::string>("cpu", "cpu"));
  CHECK(trainOn(256, 64) == std::pair<std::string, std::string>(d.id, d.id));

  std::filesystem::remove_all(dir);
  if (cacheEnv) {
    setenv("SMELT_CACHE_DIR", oldCache.c_str(), 1);
  } else {
    unsetenv("SMELT_CACHE_DIR");
  }
  forgetPlacementTables();
}
