// f32/f64 products on CLBlast in the OpenCL executable, with generated epilogues: batches, transposes,
// alpha and c, epilogues, and a product that must not land over an operand its epilogue still reads,
// each against the reference on fresh random inputs, with CLBlast on and off (SMELT_BLAS's switch).
#include "ir/printer.h"
#include "runtime/opencl/clblast.h"
#include "runtime/opencl/opencl_runtime.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

namespace {

/// Compiles `text` ($T = f32, and f64 where the device has it) with CLBlast on and off and checks both
/// against the reference; returns the CLBlast call count of the f32 compile (-1 without a device).
int64_t checkBothWays(const std::string& text) {
  auto context = opencl::Context::create();
  if (!context.ok()) {
    MESSAGE("no OpenCL device: ", context.error().message());
    return -1;
  }
  int64_t calls = -1;
  for (DType dtype : {DType::f32, DType::f64}) {
    if (dtype == DType::f64 && !context->device().fp64) continue;
    Graph graph = testing::parseOrFail(substituteDType(text, dtypeName(dtype)));
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    for (bool blas : {true, false}) {
      auto exe = Executable::compile(graph, {.device = "opencl", .blas = blas});
      REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
      if (blas && dtype == DType::f32) calls = (*exe)->report().blas;
      if (!blas) CHECK((*exe)->report().blas == 0);
      for (int run = 0; run < 2; ++run) {
        auto actual = (*exe)->run(feeds);
        REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
        for (size_t o = 0; o < expected->size(); ++o) {
          std::string d = testing::compareTensors((*actual)[o], (*expected)[o], testing::backendTolerance(dtype));
          CHECK_MESSAGE(d.empty(), dtypeName(dtype), (blas ? " with CLBlast" : " without"), " output ",
                        graph.outputs()[o].name, ": ", d, "\n", toText((*exe)->graph()));
        }
      }
    }
  }
  return calls;
}

}  // namespace

TEST_CASE("opencl clblast: batched matmul, gemm's transposes, alpha and c, epilogues, and the aliasing case") {
  if (!opencl::clblastAvailable(DType::f32)) {
    MESSAGE("CLBlast is not installed (libclblast1): products stay on generated kernels");
    return;
  }
  int64_t calls = checkBothWays(R"(graph @t(%a: $T[5,7], %b: $T[7,3], %ba: $T[2,5,7], %bb: $T[2,7,4], %p: $T[7,5], %q: $T[3,7], %c: $T[3], %r: $T[5,3]) {
  %0 = matmul(%a, %b) : $T[5,3]
  %1 = matmul(%ba, %bb) : $T[2,5,4]
  %2 = gemm(%p, %q, %c) {alpha = 0.5, beta = 0.25, trans_a = 1, trans_b = 1} : $T[5,3]
  %3 = relu(%2) : $T[5,3]
  %4 = gemm(%a, %b) {alpha = 2.0} : $T[5,3]
  %5 = add(%4, %r) : $T[5,3]
  %6 = tanh(%5) : $T[5,3]
  return y0 = %0, y1 = %1, y3 = %3, y6 = %6
})");
  if (calls >= 0) CHECK(calls == 4);
  // The residual %h dies at %0's epilogue, which reads it only at the written index: the planner puts
  // the epilogue's result over it, so the product needs its own slot.
  calls = checkBothWays(R"(graph @t(%x: $T[16,16], %w: $T[16,16], %u: $T[16,16]) {
  %h = matmul(%u, %u) : $T[16,16]
  %0 = matmul(%x, %w) : $T[16,16]
  %1 = add(%0, %h) : $T[16,16]
  %2 = relu(%1) : $T[16,16]
  return y = %2
})");
  if (calls >= 0) CHECK(calls == 2);
}
