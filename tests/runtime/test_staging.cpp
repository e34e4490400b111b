// Host transfers through pinned staging memory (runtime/device/host_staging.h): every size round
// trips exactly; the caller's memory is free on return while the transfer may still run; blocks are
// reused rather than allocated per copy; and a training loop that uploads the next batch on a second
// stream while the current step runs (DeviceTensor::fromHostAsync) computes what the reference does. Block
// sizes past 64 MiB grow in 2 MiB steps, and a refused pinned allocation falls back to pageable copies.
#include "ir/interpreter.h"
#include "runtime/device/device_list.h"
#include "runtime/device/device_tensor.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/host_staging.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace smelt;

namespace {

/// The devices whose transfers stage (every one but the CPU, whose memory is the host's).
std::vector<std::shared_ptr<Device>> stagingDevices() {
  std::vector<std::shared_ptr<Device>> devices = testing::everyAccelerator();
  if (devices.empty()) MESSAGE("no device besides the CPU: nothing stages");
  return devices;
}

std::vector<unsigned char> randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> bytes(n);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng() | 1);  // never zero
  return bytes;
}

// One step of a linear model trained by gradient descent on a new batch each step:
// w' = w - 0.01 x^T tanh(x w), with the batch's transpose fed beside it.
constexpr const char* kStagedStep = R"(graph @step(%x: f32[128,96], %xt: f32[96,128]) {
  param %w: f32[96,32]
  %0 = matmul(%x, %w) : f32[128,32]
  %1 = tanh(%0) : f32[128,32]
  %2 = matmul(%xt, %1) : f32[96,32]
  %3 = constant() {value = dense<f32[]> [0.01]} : f32[]
  %4 = mul(%2, %3) : f32[96,32]
  %5 = sub(%w, %4) : f32[96,32]
  return w_next = %5
}
)";

Tensor transposed(const Tensor& x) {
  const int64_t rows = x.type().shape[0], cols = x.type().shape[1];
  Tensor t(TensorType{DType::f32, {cols, rows}});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t.data<float>()[j * rows + i] = x.data<float>()[i * cols + j];
  return t;
}

}  // namespace

TEST_CASE("staging: every size round trips, and the source is free on return") {
  for (const std::shared_ptr<Device>& device : stagingDevices()) {
    CAPTURE(device->id());
    HostStaging staging(device);
    DeviceStream& stream = device->defaultStream();
    uint64_t seed = testing::testSeed();
    auto roundTrips = [&](size_t bytes) {
      CAPTURE(bytes);
      Expected<DeviceMemory> memory = device->allocate(bytes + 64);
      REQUIRE(memory.ok());
      std::vector<unsigned char> data = randomBytes(bytes, seed++), source = data;
      REQUIRE(staging.copyIn(*memory, 64, source.data(), bytes, stream).ok());
      // The transfer may still be running: the caller's memory is its own again all the same.
      std::memset(source.data(), 0, bytes);
      std::vector<unsigned char> back(bytes);
      const HostFetch fetch{back.data(), *memory, 64, bytes};
      REQUIRE(staging.copyOut({&fetch, 1}, stream).ok());
      CHECK(back == data);
      device->release(*memory);
    };
    const std::vector<size_t> sizes = {1, 4095, 4096, 65537, size_t{1} << 20, (size_t{3} << 20) + 5};
    for (int pass = 0; pass < 3; ++pass) {
      for (size_t bytes : sizes) roundTrips(bytes);
    }
    StagingStats stats = staging.stats();
    CHECK(stats.directCopies == 2 * 2 * 3);  // 1 and 4095 bytes, each way, three times
    CHECK(stats.stagedCopies == 4 * 2 * 3);
    // Blocks are reused: at most two per size class over all passes (an upload's block may still be
    // in flight when the fetch rents one), never one per copy.
    CHECK(stats.pinnedAllocations <= 4 * 2);
  }
}

TEST_CASE("staging: blocks are powers of two up to 64 MiB and whole 2 MiB steps past it, never double a large feed") {
  for (const std::shared_ptr<Device>& device : stagingDevices()) {
    CAPTURE(device->id());
    auto pinnedFor = [&](size_t bytes) {
      CAPTURE(bytes);
      HostStaging staging(device);
      Expected<DeviceMemory> memory = device->allocate(bytes);
      REQUIRE(memory.ok());
      std::vector<unsigned char> data = randomBytes(bytes, testing::testSeed() + bytes), back(bytes);
      REQUIRE(staging.copyIn(*memory, 0, data.data(), bytes, device->defaultStream()).ok());
      const HostFetch fetch{back.data(), *memory, 0, bytes};
      REQUIRE(staging.copyOut({&fetch, 1}, device->defaultStream()).ok());
      CHECK(back == data);
      device->release(*memory);
      // The fetch's block went back to the cache (the upload's is still counted in flight until the next rent).
      return staging.stats().cachedBytes;
    };
    CHECK(pinnedFor(5000) == size_t{64} << 10);            // the smallest block
    CHECK(pinnedFor((size_t{1} << 20) + 1) == size_t{2} << 20);
    CHECK(pinnedFor((size_t{70} << 20) + 1) == size_t{72} << 20);  // was 128 MiB: a 2.2 GB feed pinned 4 GB
  }
}

TEST_CASE("staging: when the driver refuses pinned memory, copies go through pageable memory, correct, asking once") {
  for (const std::shared_ptr<Device>& device : stagingDevices()) {
    CAPTURE(device->id());
    HostStaging staging(device);
    DeviceStream& stream = device->defaultStream();
    constexpr size_t kBytes = 300 << 10;
    Expected<DeviceMemory> memory = device->allocate(kBytes);
    REQUIRE(memory.ok());
    // The next allocation fails as the driver's would (out of memory): the pinned block's.
    REQUIRE(faultInjector().configure("oom=1").ok());
    const int injectedBefore = faultInjector().injected(Fault::kOutOfMemory);
    std::vector<unsigned char> data = randomBytes(kBytes, testing::testSeed() + 3), source = data, back(kBytes);
    Status in = staging.copyIn(*memory, 0, source.data(), kBytes, stream);
    (void)faultInjector().configure("");
    REQUIRE_MESSAGE(in.ok(), in.error().message());
    CHECK(faultInjector().injected(Fault::kOutOfMemory) == injectedBefore + 1);
    std::memset(source.data(), 0, kBytes);  // pageable: the copy is done on return
    const HostFetch fetch{back.data(), *memory, 0, kBytes};
    REQUIRE(staging.copyOut({&fetch, 1}, stream).ok());
    CHECK(back == data);
    StagingStats stats = staging.stats();
    CHECK(stats.pageableFallbacks == 2);  // the upload, and the fetch of the same size without asking again
    CHECK(stats.pinnedAllocations == 1);  // the refused one
    CHECK(stats.stagedCopies == 0);
    // A smaller block is still asked for, and pinned.
    std::vector<unsigned char> small = randomBytes(8192, 5), smallBack(8192);
    REQUIRE(staging.copyIn(*memory, 0, small.data(), small.size(), stream).ok());
    const HostFetch smallFetch{smallBack.data(), *memory, 0, small.size()};
    REQUIRE(staging.copyOut({&smallFetch, 1}, stream).ok());
    CHECK(smallBack == small);
    CHECK(staging.stats().stagedCopies == 2);
    device->release(*memory);
  }
}

TEST_CASE("staging: blocks are reused, never shared by two transfers in flight") {
  for (const std::shared_ptr<Device>& device : stagingDevices()) {
    CAPTURE(device->id());
    HostStaging staging(device);
    DeviceStream& stream = device->defaultStream();
    constexpr size_t kBytes = 256 << 10;
    constexpr int kCopies = 24;
    Expected<DeviceMemory> memory = device->allocate(kBytes * kCopies);
    REQUIRE(memory.ok());
    uint64_t seed = testing::testSeed() + 7;
    // Many uploads enqueued back to back, each from the same host buffer rewritten in between: each
    // must land with the values it had when its call returned.
    std::vector<unsigned char> source(kBytes);
    std::vector<std::vector<unsigned char>> sent;
    for (int i = 0; i < kCopies; ++i) {
      sent.push_back(randomBytes(kBytes, seed + i));
      source = sent.back();
      REQUIRE(staging.copyIn(*memory, i * kBytes, source.data(), kBytes, stream).ok());
    }
    std::vector<unsigned char> back(kBytes * kCopies);
    const HostFetch fetch{back.data(), *memory, 0, back.size()};
    REQUIRE(staging.copyOut({&fetch, 1}, stream).ok());
    for (int i = 0; i < kCopies; ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(back.data() + i * kBytes, sent[i].data(), kBytes) == 0);
    }
    // Once the queue has drained, later uploads reuse the blocks.
    REQUIRE(device->synchronize().ok());
    size_t before = staging.stats().pinnedAllocations;
    for (int i = 0; i < 8; ++i) {
      REQUIRE(staging.copyIn(*memory, 0, source.data(), kBytes, stream).ok());
      REQUIRE(stream.synchronize().ok());
    }
    CHECK(staging.stats().pinnedAllocations == before);
    device->release(*memory);
  }
}

TEST_CASE("staging: the next batch uploads on a second stream while the step runs, as the reference computes") {
  for (const std::shared_ptr<Device>& device : stagingDevices()) {
    CAPTURE(device->id());
    Graph g = testing::parseOrFail(kStagedStep);
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    CHECK((*exe)->device() == device);
    Expected<std::unique_ptr<DeviceStream>> copyStream = device->createStream();
    REQUIRE(copyStream.ok());
    uint64_t seed = testing::testSeed() + 11;
    Tensor w = testing::randomTensor(TensorType{DType::f32, {96, 32}}, seed);
    TensorMap reference = {{"w", w}};
    DeviceTensorMap feeds;
    feeds["w"] = DeviceTensor::fromHost(device, w).value();
    // One host batch buffer, refilled for every step as a data loader's would be.
    Tensor batch(TensorType{DType::f32, {128, 96}});
    auto loadBatch = [&](int step) -> std::pair<DeviceTensor, DeviceTensor> {
      batch = testing::randomTensor(batch.type(), seed + 100 + step);
      Tensor t = transposed(batch);
      reference["x"] = batch;
      reference["xt"] = t;
      return {DeviceTensor::fromHostAsync(device, batch, **copyStream).value(),
              DeviceTensor::fromHostAsync(device, t, **copyStream).value()};
    };
    constexpr int kSteps = 6;
    std::vector<TensorMap> batches;
    auto next = loadBatch(0);
    batches.push_back(reference);
    std::vector<DeviceTensor> outputs;
    for (int step = 0; step < kSteps; ++step) {
      feeds["x"] = next.first;
      feeds["xt"] = next.second;
      REQUIRE((*exe)->run(feeds, outputs).ok());
      feeds["w"] = outputs[0];
      outputs.clear();
      // Prefetch: the next batch goes up while this step's kernels run.
      if (step + 1 < kSteps) {
        next = loadBatch(step + 1);
        batches.push_back(reference);
      }
    }
    Tensor got = feeds["w"].toHost().value();
    TensorMap host = {{"w", w}};
    for (int step = 0; step < kSteps; ++step) {
      host["x"] = batches[step].at("x");
      host["xt"] = batches[step].at("xt");
      host["w"] = interpret(g, host).value()[0];
    }
    for (int64_t i = 0; i < got.numel(); ++i) {
      double a = got.getDouble(i), b = host["w"].getDouble(i);
      REQUIRE(std::abs(a - b) <= 1e-4 + 1e-3 * std::abs(b));
    }
    // The feeds went through pinned staging.
    CHECK(HostStaging::forDevice(device)->stats().stagedCopies >= 2 * kSteps);
  }
}
