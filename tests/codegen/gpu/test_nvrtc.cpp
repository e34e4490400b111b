// NVRTC (dlopen'ed): __half kernels to PTX for two archs, a CUBIN, and compile errors with their
// log.
#include "codegen/cuda/nvrtc_compiler.h"

#include <doctest/doctest.h>

#include "tests/support/gpu_required.h"

#include <algorithm>

using namespace smelt;
using namespace smelt::cuda;

namespace {

// Uses cuda_fp16.h, so it also proves the CUDA include folder was found at run time.
constexpr const char* kHalfKernel = R"(
#include <cuda_fp16.h>
extern "C" __global__ void scale_half(const __half* x, __half* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hmul(x[i], __float2half(s));
}
)";

/// Whether NVRTC is missing (said in a message; under SMELT_REQUIRE_GPU=1 a failure).
bool skipWithoutNvrtc() {
  if (nvrtcAvailable()) return false;
  if (testing::gpuRequired()) FAIL_CHECK("SMELT_REQUIRE_GPU=1 but no NVRTC: " << nvrtcVersion().error().message());
  MESSAGE("skipped: " << nvrtcVersion().error().message());
  return true;
}

}  // namespace

TEST_CASE("nvrtc: reports its version and supported archs") {
  if (skipWithoutNvrtc()) return;
  auto version = nvrtcVersion();
  REQUIRE(version.ok());
  CHECK(version->major >= 12);
  auto archs = nvrtcSupportedArchs();
  REQUIRE(archs.ok());
  CHECK(std::find(archs->begin(), archs->end(), 80) != archs->end());
  CHECK(std::find(archs->begin(), archs->end(), 90) != archs->end());
  MESSAGE("NVRTC " << version->major << "." << version->minor << ", " << archs->size() << " archs");
}

TEST_CASE("nvrtc: compiles a __half kernel to PTX for compute_80 and compute_90") {
  if (skipWithoutNvrtc()) return;
  for (int cc : {80, 90}) {
    CAPTURE(cc);
    auto out = compileCuda(kHalfKernel, {.arch = archForComputeCapability(cc / 10, cc % 10)});
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    CHECK(out->ptx.find(".target sm_" + std::to_string(cc)) != std::string::npos);
    CHECK(out->ptx.find(".entry scale_half") != std::string::npos);
    CHECK(out->cubin.empty());
    MESSAGE("compute_" << cc << ": " << out->ptx.size() << " B PTX in " << out->compile_ms
                       << " ms");
  }
}

TEST_CASE("nvrtc: an sm_XY arch gives a CUBIN") {
  if (skipWithoutNvrtc()) return;
  auto out = compileCuda(kHalfKernel, {.arch = "sm_90"});
  REQUIRE_MESSAGE(out.ok(), out.error().message());
  REQUIRE(out->cubin.size() > 16);
  CHECK(out->cubin.compare(0, 4, "\177ELF") == 0);
}

TEST_CASE("nvrtc: a syntax error comes back with NVRTC's log") {
  if (skipWithoutNvrtc()) return;
  auto out = compileCuda("extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name }",
                         {.arch = "compute_90", .program_name = "broken.cu"});
  REQUIRE_FALSE(out.ok());
  const std::string& message = out.error().message();
  CHECK(message.find("broken.cu") != std::string::npos);
  CHECK(message.find("compute_90") != std::string::npos);
  CHECK(message.find("NVRTC_ERROR_COMPILATION") != std::string::npos);
  CHECK(message.find("undefined_name") != std::string::npos);  // the log's own line
}

TEST_CASE("nvrtc: an include folder without cuda_fp16.h fails with the log naming the header") {
  if (skipWithoutNvrtc()) return;
  auto out = compileCuda(kHalfKernel, {.include_dir = "/nonexistent/cuda/include"});
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().message().find("cuda_fp16.h") != std::string::npos);
}

TEST_CASE("nvrtc: a bad arch lists the supported ones") {
  if (skipWithoutNvrtc()) return;
  auto out = compileCuda("extern \"C\" __global__ void k() {}", {.arch = "compute_12"});
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().message().find("supported archs") != std::string::npos);
}
