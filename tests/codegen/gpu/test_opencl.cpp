// OpenCL on PoCL's CPU device: discovery and selection, POCL_CACHE_DIR, a vector add and a
// work-group reduction that match the host, and build errors with their log.
#include "runtime/opencl/opencl_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

// The tests live in smelt::opencl rather than importing it: in a unity build another file's `using namespace
// smelt::cuda` would make Context ambiguous.
namespace smelt::opencl {
namespace {

/// The default context, or nullopt (with the reason as a MESSAGE) on machines without OpenCL.
std::optional<Context> openOrSkip() {
  auto context = Context::create();
  if (!context.ok()) {
    MESSAGE("skipped: " << context.error().message());
    return std::nullopt;
  }
  return std::move(context).value();
}

constexpr const char* kVectorAdd = R"(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
)";

// Each work-group sums its slice in local memory (tree reduction); the host adds the partial sums.
constexpr const char* kReduction = R"(
__kernel void partial_sums(__global const float* x, __global float* partial, __local float* scratch,
                           int n) {
  int lid = get_local_id(0);
  int gid = get_global_id(0);
  scratch[lid] = gid < n ? x[gid] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
)";

}  // namespace

TEST_CASE("opencl: discovery picks PoCL's CPU device and sets POCL_CACHE_DIR") {
  const char* preset = std::getenv("POCL_CACHE_DIR");
  const bool user_set = preset && *preset;
  auto context = openOrSkip();
  if (!context) return;
  const DeviceInfo& d = context->device();
  MESSAGE("device '" << d.name << "' on '" << d.platform_name << "': " << d.opencl_c_version << ", "
                     << d.compute_units << " CUs, " << (d.global_memory_bytes >> 20)
                     << " MiB, fp64=" << d.fp64 << " fp16=" << d.fp16);
  CHECK_FALSE(d.name.empty());
  CHECK(d.compute_units >= 1);
  CHECK(d.global_memory_bytes > 0);
  CHECK(d.max_allocation_bytes > 0);
  CHECK(d.max_work_group_size >= 1);
  CHECK(d.opencl_c_version.starts_with("OpenCL C 1."));
  if (std::getenv("SMELT_OPENCL_DEVICE") == nullptr &&
      d.platform_name == "Portable Computing Language") {
    CHECK(d.is_cpu);
    CHECK(d.fp64);
  }
  const std::string cache = poclCacheDir();
  CHECK(cache == std::getenv("POCL_CACHE_DIR"));
  if (!user_set) {
    CHECK(cache.ends_with("/pocl"));
    if (const char* smelt_cache = std::getenv("SMELT_CACHE_DIR"))
      CHECK(cache == std::string(smelt_cache) + "/pocl");
  }
}

TEST_CASE("opencl: devices are selected by substring, and a bad selector lists them") {
  auto devices = listDevices();
  if (!devices.ok()) {
    MESSAGE("skipped: " << devices.error().message());
    return;
  }
  const DeviceInfo& first = devices->front();
  auto by_name = Context::create(first.name.substr(0, 6));
  REQUIRE_MESSAGE(by_name.ok(), by_name.error().message());
  auto missing = Context::create("no-such-opencl-device");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("no OpenCL device matches 'no-such-opencl-device'") !=
        std::string::npos);
  CHECK(missing.error().message().find(first.name) != std::string::npos);
}

TEST_CASE("opencl: a vector add matches the host") {
  auto context = openOrSkip();
  if (!context) return;
  auto program = context->buildProgram(kVectorAdd);
  REQUIRE_MESSAGE(program.ok(), program.error().message());
  MESSAGE("PoCL build: " << program->buildMs() << " ms");
  auto kernel = program->createKernel("vadd");
  REQUIRE_MESSAGE(kernel.ok(), kernel.error().message());

  const int n = 10007;  // not a multiple of the local size: the kernel guards i < n
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.25f * static_cast<float>(i);
    b[i] = static_cast<float>(i % 13) - 6.0f;
  }
  const size_t bytes = n * sizeof(float);
  auto da = context->createBuffer(bytes, Access::kReadOnly, a.data());
  auto db = context->createBuffer(bytes, Access::kReadOnly);
  auto dc = context->createBuffer(bytes, Access::kWriteOnly);
  REQUIRE((da.ok() && db.ok() && dc.ok()));
  REQUIRE(context->write(*db, b.data(), bytes).ok());
  const size_t local = 64, global = (n + local - 1) / local * local;
  Status launched = context->launch(*kernel, {*da, *db, *dc, n}, NDRange(global), NDRange(local));
  REQUIRE_MESSAGE(launched.ok(), launched.error().message());
  REQUIRE(context->read(*dc, c.data(), bytes).ok());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) mismatches += c[i] != a[i] + b[i];
  CHECK(mismatches == 0);

  // Misuse is reported, naming what is wrong.
  Status uneven = context->enqueue(*kernel, NDRange(100), NDRange(64));
  REQUIRE_FALSE(uneven.ok());
  CHECK(uneven.error().message().find("global size 100 is not a multiple of local size 64") !=
        std::string::npos);
  Status overrun = context->read(*dc, c.data(), bytes, 4);
  CHECK_FALSE(overrun.ok());
  auto no_kernel = program->createKernel("vsub");
  REQUIRE_FALSE(no_kernel.ok());
  CHECK(no_kernel.error().message().find("vadd") != std::string::npos);  // lists what exists
}

TEST_CASE("opencl: launches of one kernel from several threads keep their own arguments") {
  auto context = openOrSkip();
  if (!context) return;
  auto program = context->buildProgram(kVectorAdd);
  REQUIRE_MESSAGE(program.ok(), program.error().message());
  auto kernel = program->createKernel("vadd");
  REQUIRE(kernel.ok());
  // Each thread adds its own constant; launch() holds the kernel's lock from setArg to enqueue, so
  // no thread can run with another's buffers.
  const int n = 4096, threads = 4, rounds = 20;
  std::vector<int> wrong(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> a(n, static_cast<float>(t)), b(n, 100.0f), c(n);
      auto da = context->createBuffer(n * sizeof(float), Access::kReadOnly, a.data());
      auto db = context->createBuffer(n * sizeof(float), Access::kReadOnly, b.data());
      auto dc = context->createBuffer(n * sizeof(float), Access::kWriteOnly);
      if (!da.ok() || !db.ok() || !dc.ok()) {
        wrong[t] = -1;
        return;
      }
      for (int r = 0; r < rounds; ++r) {
        if (!context->launch(*kernel, {*da, *db, *dc, n}, NDRange(n), NDRange(64)).ok() ||
            !context->read(*dc, c.data(), n * sizeof(float)).ok()) {
          wrong[t] = -1;
          return;
        }
        for (float v : c) wrong[t] += v != 100.0f + static_cast<float>(t);
      }
    });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) CHECK(wrong[t] == 0);
}

TEST_CASE("opencl: a work-group reduction matches the host") {
  auto context = openOrSkip();
  if (!context) return;
  auto program = context->buildProgram(kReduction, "-cl-std=CL1.2");
  REQUIRE_MESSAGE(program.ok(), program.error().message());
  auto kernel = program->createKernel("partial_sums");
  REQUIRE_MESSAGE(kernel.ok(), kernel.error().message());

  const int n = 100000;
  const size_t local = 128, groups = (n + local - 1) / local;
  std::vector<float> x(n);
  double expected = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::sin(0.001f * static_cast<float>(i)) + 0.5f;
    expected += x[i];
  }
  auto dx = context->createBuffer(n * sizeof(float), Access::kReadOnly, x.data());
  auto dpartial = context->createBuffer(groups * sizeof(float), Access::kWriteOnly);
  REQUIRE((dx.ok() && dpartial.ok()));
  Status launched =
      context->launch(*kernel, {*dx, *dpartial, LocalMemory{local * sizeof(float)}, n},
                      NDRange(groups * local), NDRange(local));
  REQUIRE_MESSAGE(launched.ok(), launched.error().message());
  REQUIRE(context->finish().ok());
  std::vector<float> partial(groups);
  REQUIRE(context->read(*dpartial, partial.data(), groups * sizeof(float)).ok());
  double sum = 0;
  for (float p : partial) sum += p;
  CHECK(sum == doctest::Approx(expected).epsilon(1e-5));
}

TEST_CASE("opencl: a build error returns the build log") {
  auto context = openOrSkip();
  if (!context) return;
  auto program = context->buildProgram(
      "__kernel void broken(__global float* x) { x[0] = undefined_name; }", "-DSMELT_TEST=1");
  REQUIRE_FALSE(program.ok());
  const std::string& message = program.error().message();
  CHECK(message.find("CL_BUILD_PROGRAM_FAILURE") != std::string::npos);
  CHECK(message.find("-DSMELT_TEST=1") != std::string::npos);
  CHECK(message.find("undefined_name") != std::string::npos);  // from the compiler's log
}

}  // namespace smelt::opencl
