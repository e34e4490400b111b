// The CUDA driver (dlopen "libcuda.so.1"): a clean error without a driver; with a GPU, a vector add
// compiled by NVRTC runs and matches the host.
#include "codegen/cuda/nvrtc_compiler.h"
#include "runtime/cuda/cuda_driver.h"
#include "tests/support/gpu_required.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace smelt;
using namespace smelt::cuda;

TEST_CASE("cuda driver: a missing driver or GPU is a clean error, not a crash") {
  auto version = driverVersion();
  auto count = deviceCount();
  auto context = Context::open(0);
  if (version.ok()) {
    MESSAGE("CUDA driver " << version->major << "." << version->minor << " present, "
                           << (count.ok() ? *count : -1) << " device(s)");
    CHECK(count.ok());
    return;
  }
  const std::string& message = version.error().message();
  if (testing::gpuRequired()) FAIL("SMELT_REQUIRE_GPU=1 but no CUDA driver: " << message);
  MESSAGE("no CUDA driver: " << message);
  // No libcuda.so.1 at all (these machines), or a driver whose cuInit fails (no GPU, stub library).
  const bool not_found =
      message.starts_with("CUDA driver not found: libcuda.so.1: cannot open shared object file");
  const bool not_usable = message.starts_with("CUDA driver found but not usable: cuInit failed");
  CHECK((not_found || not_usable));
  // Every entry point reports the same reason.
  REQUIRE_FALSE(count.ok());
  CHECK(count.error().message() == message);
  REQUIRE_FALSE(context.ok());
  CHECK(context.error().message() == message);
  CHECK_FALSE(deviceInfo(0).ok());
}

TEST_CASE("cuda driver: a vector add compiled by NVRTC runs on the GPU") {
  auto count = deviceCount();
  if (!count.ok() || *count == 0) {
    SMELT_SKIP_WITHOUT_GPU("no CUDA GPU: " + (count.ok() ? std::string("0 devices") : count.error().message()));
  }
  if (!nvrtcAvailable()) SMELT_SKIP_WITHOUT_GPU(nvrtcVersion().error().message());
  auto context = Context::open(0);
  REQUIRE_MESSAGE(context.ok(), context.error().message());
  const DeviceInfo& device = context->device();
  MESSAGE("GPU: " << device.name << " sm_" << device.cc_major << device.cc_minor << ", "
                  << device.total_memory / (1 << 20) << " MiB");

  // PTX for the newest virtual arch NVRTC has that the device can run.
  auto archs = nvrtcSupportedArchs();
  REQUIRE(archs.ok());
  const int device_cc = device.cc_major * 10 + device.cc_minor;
  int arch = 0;
  for (int a : *archs)
    if (a <= device_cc) arch = std::max(arch, a);
  REQUIRE_MESSAGE(arch > 0, "NVRTC supports no arch <= sm_" << device_cc);
  auto nvrtc_version = nvrtcVersion();
  REQUIRE(nvrtc_version.ok());
  Status compatible = checkPtxCompatible(nvrtc_version->major);
  if (!compatible.ok()) SMELT_SKIP_WITHOUT_GPU(compatible.error().message());

  auto compiled = compileCuda(R"(
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
})",
                              {.arch = archForComputeCapability(arch / 10, arch % 10)});
  REQUIRE_MESSAGE(compiled.ok(), compiled.error().message());
  auto module = context->loadModule(compiled->ptx);
  REQUIRE_MESSAGE(module.ok(), module.error().message());
  auto vadd = module->function("vadd");
  REQUIRE_MESSAGE(vadd.ok(), vadd.error().message());
  CHECK_FALSE(module->function("no_such_kernel").ok());

  int n = 100003;  // not a multiple of the block size
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i);
    b[i] = 3.0f - static_cast<float>(i % 17);
  }
  const size_t bytes = n * sizeof(float);
  auto da = context->allocate(bytes), db = context->allocate(bytes), dc = context->allocate(bytes);
  REQUIRE((da.ok() && db.ok() && dc.ok()));
  REQUIRE(context->copyToDevice(*da, a.data(), bytes).ok());
  REQUIRE(context->copyToDevice(*db, b.data(), bytes).ok());
  std::uint64_t pa = da->address(), pb = db->address(), pc = dc->address();
  void* params[] = {&pa, &pb, &pc, &n};
  const unsigned block = 256;
  Status launched =
      context->launch(*vadd, {static_cast<unsigned>(n + block - 1) / block}, {block}, params);
  REQUIRE_MESSAGE(launched.ok(), launched.error().message());
  Status done = context->synchronize();
  REQUIRE_MESSAGE(done.ok(), done.error().message());
  REQUIRE(context->copyToHost(c.data(), *dc, bytes).ok());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) mismatches += c[i] != a[i] + b[i];
  CHECK(mismatches == 0);
}
