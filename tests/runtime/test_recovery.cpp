// Faults on every device besides the CPU (PoCL here, a GPU where present) through SMELT_FAULTS'
// injector, which returns the drivers' own error codes at their calls: out of memory (retried after
// freeing the pool, then the CPU), a lost device (reset and compiled again, then the CPU), an op or
// dtype the device lacks (those nodes on the CPU), each with results equal to the reference. Also
// device-resident runs on every device, the CPU's too: tensors fed and fetched as DeviceTensors, state
// carried from step to step on the device, with no device allocations once the pool is warm.
#include "ir/interpreter.h"
#include "runtime/device/device_list.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/memory_pool.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace smelt;

namespace {

// One gradient-descent-like step: w' = w - 0.01 * x^T tanh(x w); also returns tanh(x w).
constexpr const char* kStep = R"(graph @step(%x: f32[64,32], %xt: f32[32,64]) {
  param %w: f32[32,16]
  %0 = matmul(%x, %w) : f32[64,16]
  %1 = tanh(%0) : f32[64,16]
  %2 = matmul(%xt, %1) : f32[32,16]
  %3 = constant() {value = dense<f32[]> [0.01]} : f32[]
  %4 = mul(%2, %3) : f32[32,16]
  %5 = sub(%w, %4) : f32[32,16]
  return w_next = %5, h = %1
}
)";

struct FaultScope {
  explicit FaultScope(std::string_view spec) { REQUIRE(faultInjector().configure(spec).ok()); }
  ~FaultScope() { (void)faultInjector().configure(""); }
};

TensorMap randomFeeds(uint64_t seed) {
  Tensor x = testing::randomTensor(TensorType{DType::f32, {64, 32}}, seed);
  Tensor xt(TensorType{DType::f32, {32, 64}});
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 32; ++j) xt.data<float>()[j * 64 + i] = x.data<float>()[i * 32 + j];
  return {{"x", x}, {"xt", xt}, {"w", testing::randomTensor(TensorType{DType::f32, {32, 16}}, seed + 1)}};
}

void checkClose(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    REQUIRE(got[o].type() == want[o].type());
    for (int64_t i = 0; i < got[o].numel(); ++i) {
      double a = got[o].getDouble(i), b = want[o].getDouble(i);
      REQUIRE(std::abs(a - b) <= 1e-5 + 1e-4 * std::abs(b));
    }
  }
}

/// The devices the faults are injected on (none: said once).
std::vector<std::shared_ptr<Device>> accelerators() {
  std::vector<std::shared_ptr<Device>> devices = testing::everyAccelerator();
  if (devices.empty()) MESSAGE("no device besides the CPU: nothing to inject faults into");
  return devices;
}

}  // namespace

TEST_CASE("recovery: out of memory on the device, the pool's cache is freed and the allocation retried") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed());
    auto pool = MemoryPool::forDevice(device);
    { auto warm = pool->rent(1 << 20); REQUIRE(warm.ok()); }  // something cached to give back
    int64_t retries = pool->stats().outOfMemoryRetries;
    FaultScope faults("oom=1");
    auto exe = Executable::compile(g, {.device = id});
    REQUIRE(exe.ok());
    CHECK((*exe)->deviceId() == id);
    CHECK(pool->stats().outOfMemoryRetries == retries + 1);
    auto out = (*exe)->run(feeds);
    REQUIRE(out.ok());
    checkClose(*out, interpret(g, feeds).value());
  }
}

TEST_CASE("recovery: out of memory even after freeing the pool falls back to the CPU, once") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed() + 10);
    MemoryPool::forDevice(device)->trim();  // else a cached block serves the arena
    FaultScope faults("oom=always");
    auto exe = Executable::compile(g, {.device = id});
    REQUIRE(exe.ok());
    CHECK((*exe)->deviceId() == "cpu");
    CHECK((*exe)->fallbacks() == 1);
    for (int run = 0; run < 2; ++run) {
      auto out = (*exe)->run(feeds);
      REQUIRE(out.ok());
      checkClose(*out, interpret(g, feeds).value());
    }
    CHECK((*exe)->fallbacks() == 1);
  }
}

TEST_CASE("recovery: a lost device is reinitialized and the run repeated on it") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed() + 20);
    auto exe = Executable::compile(g, {.device = id});
    REQUIRE(exe.ok());
    {
      FaultScope faults("lost=1");
      auto out = (*exe)->run(feeds);
      REQUIRE(out.ok());
      checkClose(*out, interpret(g, feeds).value());
      CHECK(faultInjector().injected(Fault::kDeviceLost) >= 1);
    }
    CHECK((*exe)->deviceId() == id);
    CHECK((*exe)->reinitializations() == 1);
    CHECK((*exe)->fallbacks() == 0);
  }
}

TEST_CASE("recovery: a device that stays lost hands the executable to the CPU") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed() + 30);
    auto exe = Executable::compile(g, {.device = id});
    REQUIRE(exe.ok());
    FaultScope faults("lost=always");
    auto out = (*exe)->run(feeds);
    REQUIRE(out.ok());
    checkClose(*out, interpret(g, feeds).value());
    CHECK((*exe)->deviceId() == "cpu");
    CHECK((*exe)->reinitializations() == 1);
    CHECK((*exe)->fallbacks() == 1);
  }
}

TEST_CASE("recovery: an op the device lacks runs on the CPU inside the device executable") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed() + 40);
    FaultScope faults("unsupported=tanh");
    auto exe = Executable::compile(g, {.pipeline = "", .device = id});  // unfused: tanh is a node of its own
    REQUIRE(exe.ok());
    CHECK((*exe)->report().interpreted == 1);
    auto out = (*exe)->run(feeds);
    REQUIRE(out.ok());
    checkClose(*out, interpret(g, feeds).value());
  }
}

TEST_CASE("recovery: a dtype the device lacks runs those kernels on the CPU inside the device executable") {
  for (const std::shared_ptr<Device>& device : accelerators()) {
    const std::string id = device->id();
    CAPTURE(id);
    // f32 work, one f64 detour (as a device without cl_khr_fp64 would lack): only the kernels touching
    // f64 leave the device.
    Graph g = testing::parseOrFail(R"(graph @mixed(%x: f32[16,8]) {
    %0 = tanh(%x) : f32[16,8]
    %1 = cast(%0) {to = "f64"} : f64[16,8]
    %2 = exp(%1) : f64[16,8]
    %3 = cast(%2) {to = "f32"} : f32[16,8]
    %4 = mul(%3, %x) : f32[16,8]
    return r = %4
  }
  )");
    TensorMap feeds = {{"x", testing::randomTensor(TensorType{DType::f32, {16, 8}}, testing::testSeed() + 45)}};
    FaultScope faults("unsupported=f64");
    auto exe = Executable::compile(g, {.pipeline = "", .device = id});
    REQUIRE(exe.ok());
    CHECK((*exe)->report().interpreted == 3);  // the two casts and exp in f64
    auto out = (*exe)->run(feeds);
    REQUIRE(out.ok());
    checkClose(*out, interpret(g, feeds).value());
  }
}
TEST_CASE("device-resident runs: state stays on the device across steps, no allocations once warm") {
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    const std::string id = device->id();
    CAPTURE(id);
    Graph g = testing::parseOrFail(kStep);
    TensorMap feeds = randomFeeds(testing::testSeed() + 50);
    auto exe = Executable::compile(g, {.device = id});
    REQUIRE(exe.ok());
    CHECK((*exe)->device() == device);
    DeviceTensorMap onDevice;
    for (const auto& [name, t] : feeds) onDevice[name] = DeviceTensor::fromHost(device, t).value();
    // Five steps, each feeding back the new weights, on the device and on the host reference.
    TensorMap hostFeeds = feeds;
    std::vector<DeviceTensor> outputs;
    std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
    int64_t allocationsAfterWarmUp = 0;
    for (int step = 0; step < 5; ++step) {
      REQUIRE((*exe)->run(onDevice, outputs).ok());
      onDevice["w"] = outputs[0];  // shares the output: the next run writes its output elsewhere
      hostFeeds["w"] = interpret(g, hostFeeds).value()[0];
      if (step == 1) allocationsAfterWarmUp = pool->stats().deviceAllocations;
    }
    CHECK(pool->stats().deviceAllocations == allocationsAfterWarmUp);
    Tensor w = onDevice["w"].toHost().value();
    checkClose({w}, {hostFeeds["w"]});
    // A feed from another device is an error naming both.
    std::vector<std::shared_ptr<Device>> all = testing::everyDevice();
    auto other = std::find_if(all.begin(), all.end(), [&](const auto& d) { return d != device; });
    if (other == all.end()) continue;
    DeviceTensorMap wrong = onDevice;
    wrong["x"] = DeviceTensor::fromHost(*other, feeds["x"]).value();
    Status s = (*exe)->run(wrong, outputs);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message().find((*other)->id()) != std::string::npos);
    CHECK(s.error().message().find(id) != std::string::npos);
  }
}
