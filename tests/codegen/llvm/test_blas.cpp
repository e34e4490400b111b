// f32/f64 products on the CPU's BLAS with generated epilogues (runtime/gemm_step): every way a product
// maps onto GEMM calls, and every place its result can land, against the reference interpreter on
// fresh random inputs, and the same graphs with SMELT_BLAS's switch off (generated kernels only).
#include "ir/printer.h"
#include "runtime/cpu/blas.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// Compiles `text` ($T = f32 and f64) with BLAS on and off, and checks both against the reference;
/// returns the BLAS call count of the f32 compile.
int64_t checkBothWays(const std::string& text) {
  int64_t blasCalls = -1;
  for (const char* dtype : {"f32", "f64"}) {
    Graph graph = testing::parseOrFail(substituteDType(text, dtype));
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    auto expected = interpret(graph, feeds);
    REQUIRE_MESSAGE(expected.ok(), (expected.ok() ? "" : expected.error().message()));
    for (bool blas : {true, false}) {
      CompileOptions options;
      options.blas = blas;
      auto exe = Executable::compile(graph, options);
      REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
      if (blas && std::string_view(dtype) == "f32") blasCalls = (*exe)->report().blas;
      if (!blas) CHECK((*exe)->report().blas == 0);
      for (int run = 0; run < 2; ++run) {  // a second run reuses the product buffer
        auto actual = (*exe)->run(feeds);
        REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
        for (size_t o = 0; o < expected->size(); ++o) {
          std::string d = testing::compareTensors((*actual)[o], (*expected)[o], testing::backendTolerance((*expected)[o].dtype()));
          CHECK_MESSAGE(d.empty(), dtype, (blas ? " with BLAS" : " without BLAS"), " output ", graph.outputs()[o].name,
                        ": ", d, "\n", toText((*exe)->graph()));
        }
      }
    }
  }
  return blasCalls;
}

}  // namespace

TEST_CASE("blas: matmul batches (own, shared and folded right-hand sides) and gemm's transposes, alpha and c") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;  // a build without BLAS: nothing to compare
  int64_t calls = checkBothWays(R"(graph @t(%a: $T[5,7], %b: $T[7,3], %ba: $T[2,3,5,7], %bb: $T[2,3,7,4], %sb: $T[7,6], %one: $T[1,7,2], %p: $T[7,5], %q: $T[3,7], %c: $T[3], %col: $T[5,1], %s: $T[]) {
  %0 = matmul(%a, %b) : $T[5,3]
  %1 = matmul(%ba, %bb) : $T[2,3,5,4]
  %2 = matmul(%ba, %sb) : $T[2,3,5,6]
  %3 = matmul(%ba, %one) : $T[2,3,5,2]
  %4 = gemm(%p, %q, %c) {alpha = 0.5, beta = 0.25, trans_a = 1, trans_b = 1} : $T[5,3]
  %5 = gemm(%a, %b, %col) {alpha = -2.0, beta = 3.0} : $T[5,3]
  %6 = gemm(%p, %q, %s) {trans_a = 1, trans_b = 1} : $T[5,3]
  %7 = gemm(%a, %b) {alpha = 1.5} : $T[5,3]
  %8 = gemm(%a, %b, %c) {beta = 0.0} : $T[5,3]
  return y0 = %0, y1 = %1, y2 = %2, y3 = %3, y4 = %4, y5 = %5, y6 = %6, y7 = %7, y8 = %8
})");
  CHECK(calls == 9);
}

TEST_CASE("blas: epilogues after the product: bias and relu, a residual, the product itself also returned") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  int64_t calls = checkBothWays(R"(graph @t(%x: $T[6,8], %w: $T[5,8], %b: $T[5], %r: $T[6,5], %v: $T[8,5]) {
  %0 = gemm(%x, %w, %b) {trans_b = 1} : $T[6,5]
  %1 = relu(%0) : $T[6,5]
  %2 = matmul(%x, %v) : $T[6,5]
  %3 = add(%2, %r) : $T[6,5]
  %4 = tanh(%3) : $T[6,5]
  %5 = matmul(%x, %v) : $T[6,5]
  %6 = sigmoid(%5) : $T[6,5]
  %7 = reduce_sum(%6) {axes = [1]} : $T[6]
  return y = %1, z = %4, raw = %5, s = %6
})");
  CHECK(calls >= 2);
}

TEST_CASE("blas: a product whose result would land over an operand its epilogue still reads goes to its own buffer") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  // The residual %h (another product, so not fused into the kernel) is an intermediate that dies at
  // the epilogue kernel of %0, which reads it only at the written index: the planner puts the kernel's
  // result %2 over it. The product must not go there.
  int64_t calls = checkBothWays(R"(graph @t(%x: $T[16,16], %w: $T[16,16], %u: $T[16,16]) {
  %h = matmul(%u, %u) : $T[16,16]
  %0 = matmul(%x, %w) : $T[16,16]
  %1 = add(%0, %h) : $T[16,16]
  %2 = relu(%1) : $T[16,16]
  %3 = matmul(%2, %w) : $T[16,16]
  %4 = add(%3, %2) : $T[16,16]
  return y = %4
})");
  CHECK(calls == 3);
}

TEST_CASE("blas: conv2d as W times im2col columns: stride, asymmetric padding, dilation, groups, 1x1, bias, epilogue") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  int64_t calls = checkBothWays(R"(graph @t(%x: $T[2,4,9,8], %w: $T[6,4,3,3], %b: $T[6], %wg: $T[6,2,3,2], %w1: $T[5,4,1,1], %r: $T[2,6,5,4]) {
  %0 = conv2d(%x, %w, %b) {padding = [1, 0, 2, 1], stride = [2, 2]} : $T[2,6,5,4]
  %1 = relu(%0) : $T[2,6,5,4]
  %2 = conv2d(%x, %wg) {dilation = [2, 1], groups = 2, padding = [1, 1, 1, 1]} : $T[2,6,7,9]
  %3 = conv2d(%x, %w1) : $T[2,5,9,8]
  %4 = conv2d(%x, %w, %b) {padding = [1, 0, 2, 1], stride = [2, 2]} : $T[2,6,5,4]
  %5 = add(%4, %r) : $T[2,6,5,4]
  %6 = tanh(%5) : $T[2,6,5,4]
  return y = %1, g = %2, pointwise = %3, z = %6
})");
  CHECK(calls >= 3);
}

TEST_CASE("blas: conv_transpose2d as one W^T X product for all images, then col2im: groups, strides, padding, dilation, bias, epilogue") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  // One image (no image transpose), two images, depthwise (a max-pool gradient's shape), taps that
  // land outside the output on both sides (padding wider than the kernel reach), and an epilogue.
  int64_t calls = checkBothWays(R"(graph @t(%x1: $T[1,4,3,3], %x: $T[2,4,3,3], %w: $T[4,3,3,2], %b: $T[6], %xs: $T[2,3,4,5], %ws: $T[3,2,2,3], %xd: $T[2,5,4,4], %wd: $T[5,1,3,3], %xp: $T[2,2,5,5], %wp: $T[2,3,3,3], %r: $T[2,6,8,4]) {
  %0 = conv_transpose2d(%x1, %w, %b) {groups = 2, output_padding = [1, 0], padding = [1, 0, 1, 1], stride = [2, 2]} : $T[1,6,6,5]
  %1 = conv_transpose2d(%x, %w, %b) {groups = 2, output_padding = [1, 0], padding = [1, 0, 1, 1], stride = [2, 2]} : $T[2,6,6,5]
  %2 = conv_transpose2d(%x, %w) {dilation = [2, 1], groups = 2, output_padding = [1, 0]} : $T[2,6,8,4]
  %3 = add(%2, %r) : $T[2,6,8,4]
  %4 = relu(%3) : $T[2,6,8,4]
  %5 = conv_transpose2d(%xs, %ws) {padding = [1, 2, 0, 1], stride = [3, 2]} : $T[2,2,10,8]
  %6 = conv_transpose2d(%xd, %wd) {groups = 5, padding = [1, 1, 1, 1], stride = [2, 2], output_padding = [1, 1]} : $T[2,5,8,8]
  %7 = conv_transpose2d(%xp, %wp) {padding = [2, 2, 2, 2]} : $T[2,3,3,3]
  return y0 = %0, y1 = %1, y2 = %4, y3 = %5, y4 = %6, y5 = %7
})");
  CHECK(calls == 6);
}

TEST_CASE("blas: conv2d_weight_grad as dy times im2col transposed: one image or several, groups, strides, dilation, padding, an update epilogue") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  int64_t calls = checkBothWays(R"(graph @t(%x1: $T[1,4,5,5], %d1: $T[1,6,3,3], %x: $T[3,4,5,5], %dy: $T[3,6,3,3], %dd: $T[3,4,5,2], %xs: $T[2,3,7,6], %ds: $T[2,5,3,3], %w: $T[6,2,3,3], %lr: $T[]) {
  %0 = conv2d_weight_grad(%x1, %d1) {groups = 2, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[6,2,3,3]
  %1 = conv2d_weight_grad(%x, %dy) {groups = 2, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[6,2,3,3]
  %2 = mul(%1, %lr) : $T[6,2,3,3]
  %3 = sub(%w, %2) : $T[6,2,3,3]
  %4 = conv2d_weight_grad(%x, %dd) {dilation = [2, 2], groups = 4, kernel = [3, 3], padding = [2, 1, 2, 0]} : $T[4,1,3,3]
  %5 = conv2d_weight_grad(%xs, %ds) {kernel = [3, 2], padding = [0, 1, 2, 0], stride = [3, 2], dilation = [1, 2]} : $T[5,3,3,2]
  return y0 = %0, y1 = %3, y2 = %4, y3 = %5
})");
  CHECK(calls == 4);
}

TEST_CASE("blas: a transposed right-hand side large enough to be transposed first, in bands on the thread pool") {
  if (!blas::available(DType::f32) || !blas::available(DType::f64)) return;
  // 3,300 rows of w: 51 bands of 64 and a partial one of 36 (f32 on oneDNN transposes w before the
  // product). K stays small: with K in the hundreds, f32 sums of the random +-[0.25, 2] terms land
  // near zero with rounding errors past the f32 tolerance, whatever computes them.
  int64_t calls = checkBothWays(R"(graph @t(%x: $T[70,20], %w: $T[3300,20], %b: $T[3300]) {
  %0 = gemm(%x, %w, %b) {trans_b = 1} : $T[70,3300]
  %1 = relu(%0) : $T[70,3300]
  return y = %1
})");
  CHECK(calls == 1);
}

TEST_CASE("blas: a very large product splits into wide column blocks, the last one narrower, as the kernel computes it") {
  // 512 x 2048 x 1030 (2^30 multiply-adds and more): on oneDNN with two threads, four blocks of 320 columns, the
  // last 70 wide. Against the generated kernel (the reference interpreter would take seconds here).
  if (!blas::available(DType::f32)) return;
  Graph graph = testing::parseOrFail(R"(graph @t(%a: f32[512,2048], %b: f32[2048,1030]) {
  %0 = matmul(%a, %b) : f32[512,1030]
  return y = %0
})");
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  std::vector<Tensor> results;
  for (bool blas : {true, false}) {
    CompileOptions options;
    options.blas = blas;
    auto exe = Executable::compile(graph, options);
    REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
    CHECK((*exe)->report().blas == (blas ? 1 : 0));
    auto out = (*exe)->run(feeds);
    REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
    results.push_back((*out)[0]);
  }
  // Sums of 2048 products of about 15 in magnitude, added in different orders (the sanitizer build's kernel is not
  // vectorized): up to 2048 roundings of 2^-24 at that scale apart. A block computed wrong or left out is far more.
  CHECK_MESSAGE(testing::compareTensors(results[0], results[1], 2e-3).empty(),
                testing::compareTensors(results[0], results[1], 2e-3));
}
