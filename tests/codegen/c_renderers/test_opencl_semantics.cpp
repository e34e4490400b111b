// The OpenCL C rendering on PoCL against the kernel interpreter, bit for bit, on edge values: every
// binary and unary op and every cast in every dtype (integer wrap, division by 0 and by -1, shifts
// past the width or negative, NaN-propagating min/max, the float -> integer cast rule, f16/bf16
// rounding and specials), and loops whose carried values swap. All kernels are one program. Then
// the same kernels vectorized (codegen/vectorize.h), whose element counts leave partial vectors.
#include "codegen/opencl/opencl_renderer.h"
#include "codegen/vectorize.h"
#include "runtime/opencl/opencl_runtime.h"
#include "runtime/opencl/opencl_backend.h"
#include "tests/codegen/c_renderers/render_test_util.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// The edge kernels on PoCL; `vectorized`: those codegen/vectorize.h takes, as vectors of 4 points.
void checkEdgeKernels(bool vectorized) {
  auto context = opencl::Context::create();
  if (!context.ok()) {
    MESSAGE("no OpenCL device: ", context.error().message());
    return;
  }
  std::vector<testing::EdgeKernel> edges = testing::edgeKernels();
  if (vectorized) {
    std::erase_if(edges, [](testing::EdgeKernel& e) { return !codegen::vectorize(e.kernel, 0); });
    REQUIRE_MESSAGE(edges.size() >= 10, "only ", edges.size(), " edge kernels vectorized");
  }
  if (!context->device().fp64) {
    std::erase_if(edges, [](const testing::EdgeKernel& e) {
      return std::find(e.kernel.types.begin(), e.kernel.types.end(), DType::f64) != e.kernel.types.end();
    });
  }
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  for (size_t i = 0; i < edges.size(); ++i) {
    kernels.push_back(&edges[i].kernel);
    symbols.push_back(codegen::CRenderer::symbolFor(edges[i].kernel, i));
  }
  codegen::OpenClRenderer renderer(context->device().fp64);
  auto source = renderer.renderSource(kernels, symbols);
  REQUIRE_MESSAGE(source.ok(), (source.ok() ? "" : source.error().message()));
  auto program = context->buildProgram(*source, openClBuildOptions(context->device()));
  REQUIRE_MESSAGE(program.ok(), (program.ok() ? "" : program.error().message()));
  for (size_t i = 0; i < edges.size(); ++i) {
    const testing::EdgeKernel& edge = edges[i];
    CAPTURE(edge.kernel.name);
    auto kernel = program->createKernel(symbols[i]);
    REQUIRE(kernel.ok());
    // One device buffer per kernel buffer, each at element offset 0.
    std::vector<opencl::Buffer> buffers;
    for (const Tensor& t : edge.buffers) {
      auto b = context->createBuffer(t.byteSize(), opencl::Access::kReadWrite, t.raw());
      REQUIRE(b.ok());
      buffers.push_back(std::move(*b));
    }
    unsigned arg = 0;
    const cl_long zero = 0, points = edge.kernel.domainSize();
    for (const opencl::Buffer& b : buffers) {
      REQUIRE(kernel->setArg(arg++, b).ok());
      REQUIRE(kernel->setArg(arg++, zero).ok());
    }
    REQUIRE(kernel->setArg(arg++, points).ok());
    const int64_t threads = (points + edge.kernel.pointsPerThread - 1) / edge.kernel.pointsPerThread;
    size_t global = (static_cast<size_t>(threads) + 63) / 64 * 64;
    REQUIRE(context->enqueue(*kernel, opencl::NDRange(global), opencl::NDRange(64)).ok());
    std::vector<Tensor> actual = edge.buffers;
    for (size_t b = 0; b < buffers.size(); ++b) {
      REQUIRE(context->read(buffers[b], actual[b].raw(), actual[b].byteSize()).ok());
    }
    std::string diff = testing::compareWithInterpreter(edge, actual);
    CHECK_MESSAGE(diff.empty(), diff);
  }
  MESSAGE(fmt::format("{} edge kernels ({} bytes of OpenCL C) built in {:.0f} ms", edges.size(), source->size(),
                      program->buildMs()));
}

}  // namespace

TEST_CASE("c-renderers: opencl C on edge values matches the kernel interpreter exactly") { checkEdgeKernels(false); }

TEST_CASE("c-renderers: opencl C of vectorized kernels (4 points per work-item) on edge values, exactly") {
  checkEdgeKernels(true);
}
