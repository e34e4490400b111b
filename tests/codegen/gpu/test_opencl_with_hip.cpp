// PoCL and HIPRTC in one process. Loaded together they abort (both register the same LLVM 15
// options); compiling HIP in the smelt-hiprtc helper keeps them apart, which this test proves.
#include "codegen/hip/hiprtc_compiler.h"
#include "runtime/opencl/opencl_runtime.h"

#include <doctest/doctest.h>

#include <vector>

using namespace smelt;

namespace {

/// Builds and runs out[i] = in[i] * k on OpenCL; true when it matched.
bool runScale(const opencl::Context& context, float k) {
  auto program = context.buildProgram(
      "__kernel void scale(__global const float* x, __global float* y, float k) {"
      "  int i = get_global_id(0); y[i] = x[i] * k; }");
  REQUIRE_MESSAGE(program.ok(), program.error().message());
  auto kernel = program->createKernel("scale");
  REQUIRE(kernel.ok());
  std::vector<float> x(256), y(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i);
  auto dx = context.createBuffer(x.size() * sizeof(float), opencl::Access::kReadOnly, x.data());
  auto dy = context.createBuffer(y.size() * sizeof(float));
  REQUIRE((dx.ok() && dy.ok()));
  REQUIRE(context.launch(*kernel, {*dx, *dy, k}, opencl::NDRange(256), opencl::NDRange(64)).ok());
  REQUIRE(context.read(*dy, y.data(), y.size() * sizeof(float)).ok());
  for (int i = 0; i < 256; ++i)
    if (y[i] != x[i] * k) return false;
  return true;
}

}  // namespace

TEST_CASE("opencl and hiprtc: an OpenCL program and a HIP compile in the same process") {
  auto context = opencl::Context::create();
  if (!context.ok()) {
    MESSAGE("skipped: " << context.error().message());
    return;
  }
  CHECK(runScale(*context, 2.0f));  // PoCL (and its LLVM) is now loaded in this process

  auto hip = hip::compileHip(
      R"(extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 3.0f; })", {.arch = "gfx90a"});
  if (!hip.ok() && hip.error().message().starts_with("HIPRTC not available")) {
    MESSAGE("HIP part skipped: " << hip.error().message());
    return;
  }
  REQUIRE_MESSAGE(hip.ok(), hip.error().message());
  CHECK(hip->code_object.compare(0, 4, "\177ELF") == 0);

  CHECK(runScale(*context, 3.0f));  // OpenCL still works after the HIP compile
}
