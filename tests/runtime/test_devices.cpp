// Every device through the Device interface: memory, copies, fills, streams, events, pinned memory,
// kernel launches. The CPU and PoCL run for real; CUDA and HIP must say why they are absent.
#include "runtime/cpu/cpu_device.h"
#include "runtime/device/device_list.h"
#include "tests/support/devices.h"
#include "tests/support/gpu_required.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <vector>

using namespace smelt;

namespace {

std::vector<float> randomFloats(size_t n, uint64_t seed) {
  Tensor t = testing::randomTensor(TensorType{DType::f32, {static_cast<int64_t>(n)}}, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

}  // namespace

TEST_CASE("devices: copies in, across and out, fills, on the default and a second stream") {
  uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    const size_t n = 1000;
    std::vector<float> values = randomFloats(n, seed);
    auto a = device->allocate(n * sizeof(float));
    auto b = device->allocate(n * sizeof(float));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    DeviceStream& stream = device->defaultStream();
    REQUIRE(device->copyIn(*a, 0, values.data(), n * sizeof(float), stream).ok());
    // b = [a[500..], a[..500]] by two device-side copies, then the first 4 bytes set to 0xFF.
    REQUIRE(device->copy(*b, 0, *a, 500 * sizeof(float), 500 * sizeof(float), stream).ok());
    REQUIRE(device->copy(*b, 500 * sizeof(float), *a, 0, 500 * sizeof(float), stream).ok());
    REQUIRE(device->fill(*b, 0, sizeof(float), 0xFF, stream).ok());
    std::vector<float> back(n);
    REQUIRE(device->copyOut(back.data(), *b, 0, n * sizeof(float), stream).ok());
    CHECK(std::isnan(back[0]));
    for (size_t i = 1; i < n; ++i) REQUIRE(back[i] == values[(i + 500) % n]);

    // A second stream waits on an event of the first.
    auto second = device->createStream();
    REQUIRE(second.ok());
    REQUIRE(device->fill(*a, 0, n * sizeof(float), 0, stream).ok());
    auto event = stream.record();
    REQUIRE(event.ok());
    REQUIRE((*second)->wait(**event).ok());
    REQUIRE(device->copyOut(back.data(), *a, 0, n * sizeof(float), **second).ok());
    REQUIRE((*second)->synchronize().ok());
    auto done = (*event)->done();
    REQUIRE(done.ok());
    CHECK(*done);
    for (float v : back) REQUIRE(v == 0.0f);

    // Overruns are errors naming the device, not crashes.
    Status overrun = device->copyIn(*a, n * sizeof(float) - 4, values.data(), 8, stream);
    REQUIRE_FALSE(overrun.ok());
    CHECK(overrun.error().message().find(device->id()) != std::string::npos);
    device->release(*a);
    device->release(*b);
  }
}

TEST_CASE("devices: pinned host memory feeds asynchronous copies") {
  uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    const size_t n = 4096;
    auto pinned = device->allocatePinned(n * sizeof(float));
    REQUIRE(pinned.ok());
    std::vector<float> values = randomFloats(n, seed + 1);
    std::memcpy((*pinned)->data(), values.data(), n * sizeof(float));
    auto memory = device->allocate(n * sizeof(float));
    REQUIRE(memory.ok());
    auto stream = device->createStream();
    REQUIRE(stream.ok());
    // Asynchronous from pinned memory: the buffer stays untouched until the stream passes the copy.
    REQUIRE(device->copyIn(*memory, 0, (*pinned)->data(), n * sizeof(float), **stream).ok());
    REQUIRE((*stream)->synchronize().ok());
    std::memset((*pinned)->data(), 0, n * sizeof(float));
    REQUIRE(device->copyOut((*pinned)->data(), *memory, 0, n * sizeof(float), **stream).ok());
    REQUIRE((*stream)->synchronize().ok());
    CHECK(std::memcmp((*pinned)->data(), values.data(), n * sizeof(float)) == 0);
    device->release(*memory);
  }
}

TEST_CASE("devices: an OpenCL kernel launched through the interface") {
  auto device = openDevice("opencl");
  if (!device) {
    MESSAGE("no OpenCL device: ", device.error().message());
    return;
  }
  // The generated kernels' convention: (buffer, element offset) per buffer, then the point count.
  KernelImage image{KernelImage::Format::kOpenClSource,
                    "__kernel void axpy(__global float* x, long xo, __global float* y, long yo, long n) {\n"
                    "  long i = get_global_id(0); if (i < n) y[yo + i] += 2.0f * x[xo + i]; }\n",
                    "-cl-std=CL1.2"};
  auto kernels = (*device)->loadKernels(image);
  REQUIRE(kernels.ok());
  const size_t n = 300;
  std::vector<float> x = randomFloats(n, testing::testSeed() + 2), y = randomFloats(n, testing::testSeed() + 3);
  auto memory = (*device)->allocate(2 * n * sizeof(float));
  REQUIRE(memory.ok());
  DeviceStream& stream = (*device)->defaultStream();
  REQUIRE((*device)->copyIn(*memory, 0, x.data(), n * sizeof(float), stream).ok());
  REQUIRE((*device)->copyIn(*memory, n * sizeof(float), y.data(), n * sizeof(float), stream).ok());
  KernelBufferArg args[] = {{*memory, 0, 4}, {*memory, static_cast<int64_t>(n * sizeof(float)), 4}};
  REQUIRE((*kernels)->launch("axpy", args, static_cast<int64_t>(n), stream).ok());
  std::vector<float> back(n);
  REQUIRE((*device)->copyOut(back.data(), *memory, n * sizeof(float), n * sizeof(float), stream).ok());
  for (size_t i = 0; i < n; ++i) REQUIRE(back[i] == y[i] + 2.0f * x[i]);
  Status missing = (*kernels)->launch("nope", args, 1, stream);
  CHECK_FALSE(missing.ok());
  (*device)->release(*memory);
}

TEST_CASE("devices: timing events measure the device work between them (OpenCL's profiling queues, CUDA, HIP)") {
  for (const auto& device : testing::everyDevice()) {
    if (device->kind() == DeviceKind::kCpu) continue;  // host memory: the host times its own work
    CAPTURE(device->id());
    const size_t bytes = size_t{32} << 20;
    auto a = device->allocate(bytes);
    auto b = device->allocate(bytes);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    DeviceStream& stream = device->defaultStream();
    REQUIRE(device->fill(*a, 0, bytes, 0x3F, stream).ok());
    REQUIRE(stream.synchronize().ok());
    const auto hostStart = std::chrono::steady_clock::now();
    auto start = stream.record(true);
    REQUIRE(start.ok());
    for (int i = 0; i < 4; ++i) REQUIRE(device->copy(*b, 0, *a, 0, bytes, stream).ok());
    auto end = stream.record(true);
    REQUIRE(end.ok());
    REQUIRE((*end)->synchronize().ok());
    const double wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - hostStart).count();
    auto ms = (*end)->elapsedMsSince(**start);
    REQUIRE_MESSAGE(ms.ok(), ms.error().message());
    // 128 MB copied takes device time, and no more than the host waited for it.
    CHECK(*ms > 0.0);
    CHECK(*ms <= wallMs + 0.5);
    // Nothing between two events: (almost) no time.
    auto again = stream.record(true);
    REQUIRE(again.ok());
    REQUIRE((*again)->synchronize().ok());
    auto none = (*again)->elapsedMsSince(**end);
    REQUIRE(none.ok());
    CHECK(*none < *ms);
    device->release(*a);
    device->release(*b);
  }
}

TEST_CASE("devices: listing, ids, and absent devices are errors that say why") {
  std::vector<DeviceProbe> probes = probeDevices();
  REQUIRE(probes.size() == 4);
  CHECK(probes[0].devices.size() == 1);
  CHECK(probes[0].devices[0].id == "cpu");
  CHECK(probes[0].devices[0].memoryBytes > 0);
  for (const DeviceProbe& p : probes) {
    if (p.devices.empty()) CHECK_FALSE(p.unavailable.empty());  // a reason for every absent kind
  }
  CHECK(openDevice("cpu").ok());
  auto unknown = openDevice("tpu:0");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message().find("cpu") != std::string::npos);  // lists what there is
  CHECK_FALSE(openDevice("opencl:x").ok());
  if (probes[2].devices.empty()) {
    if (testing::gpuRequired()) FAIL_CHECK("SMELT_REQUIRE_GPU=1 but no CUDA device was found");
    auto cuda = openDevice("cuda:0");
    REQUIRE_FALSE(cuda.ok());
    MESSAGE("cuda: ", cuda.error().message());
  }
  if (probes[3].devices.empty()) {
    auto hip = openDevice("hip:0");
    REQUIRE_FALSE(hip.ok());
    MESSAGE("hip: ", hip.error().message());
  }
}
