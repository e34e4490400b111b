// Focused lowering cases: the attribute combinations the ops' IR examples leave out (strided, dilated,
// grouped and padded convolutions, output_padding, pools whose windows lie in the padding, reflect and
// edge pads with crops, negative-step slices, negative gather/scatter indices, batched and broadcast
// matmul, every gemm path). Each graph runs through kernels (kernel interpreter) alone and after the
// default pipeline, in each listed dtype, and must match the reference interpreter within
// kernelTolerance, as in test_lowering.cpp.
#include "codegen/lower_kernel.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// Runs `ir` ($T = each dtype of `dtypes`) through kernels alone and after the default pipeline.
void checkKernels(std::string_view name, std::string_view ir, DTypeSet dtypes) {
  uint64_t seed = testing::testSeed();
  for (DType dtype : dtypes.list()) {
    std::string what = fmt::format("{} ({}, seed {})", name, dtypeName(dtype), seed);
    Graph graph = testing::parseOrFail(substituteDType(std::string(ir), dtypeName(dtype)));
    TensorMap feeds = testing::randomFeeds(graph, seed);
    auto expected = interpret(graph, feeds);
    REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
    testing::checkKernelRun(graph, feeds, *expected, "alone", what);
    Graph optimized = graph.clone();
    auto pm = PassManager::defaultPipeline(PassManagerOptions{});
    REQUIRE(pm.ok());
    auto ran = pm->run(optimized);
    REQUIRE_MESSAGE(ran.ok(), what, ": ", (ran.ok() ? "" : ran.error().message()));
    testing::checkKernelRun(optimized, feeds, *expected, "after the default pipeline", what);
  }
}

}  // namespace

TEST_CASE("conv2d kernels: groups, stride, dilation, asymmetric padding, windows all in padding") {
  // a: 3 groups, stride [2,3], dilation [2,1], padding top/left/bottom/right [1,2,3,0], bias.
  // b: depthwise with padding 4 and stride 3: the first row and column of windows read only padding
  //    (the bias alone). c: 1x1 kernel, stride 2, no bias. d: dilation [3,2], uneven padding.
  checkKernels("conv2d", R"(graph @t(%x: $T[2,6,7,6], %w: $T[9,2,3,2], %b: $T[9], %y: $T[1,4,5,5], %dw: $T[4,1,3,3], %db: $T[4], %z: $T[2,3,5,4], %pw: $T[5,3,1,1], %u: $T[1,2,4,5], %uw: $T[2,2,2,3]) {
  %0 = conv2d(%x, %w, %b) {dilation = [2, 1], groups = 3, padding = [1, 2, 3, 0], stride = [2, 3]} : $T[2,9,4,3]
  %1 = conv2d(%y, %dw, %db) {groups = 4, padding = [4, 4, 4, 4], stride = [3, 3]} : $T[1,4,4,4]
  %2 = conv2d(%z, %pw) {stride = [2, 2]} : $T[2,5,3,2]
  %3 = conv2d(%u, %uw) {dilation = [3, 2], padding = [0, 3, 2, 1]} : $T[1,2,3,5]
  return a = %0, b = %1, c = %2, d = %3
})",
               dtypes::kFloat);
}

TEST_CASE("conv_transpose2d kernels: groups, stride, dilation, padding, output_padding") {
  // a: 3 groups, stride [3,2], dilation [2,3], output_padding [2,1] (rows only the bias reaches), bias.
  // b: stride 1, dilation 3, output_padding 2. c: padding 3 on every side crops the scattered result.
  checkKernels("conv_transpose2d", R"(graph @t(%x: $T[2,6,3,2], %w: $T[6,2,3,2], %b: $T[6], %y: $T[1,2,4,3], %v: $T[2,3,2,2], %z: $T[1,2,5,5], %u: $T[2,2,3,3], %ub: $T[4]) {
  %0 = conv_transpose2d(%x, %w, %b) {dilation = [2, 3], groups = 3, output_padding = [2, 1], padding = [1, 0, 2, 1], stride = [3, 2]} : $T[2,6,10,6]
  %1 = conv_transpose2d(%y, %v) {dilation = [3, 3], output_padding = [2, 0], padding = [0, 1, 0, 1]} : $T[1,3,9,4]
  %2 = conv_transpose2d(%z, %u, %ub) {groups = 2, padding = [3, 3, 3, 3], stride = [2, 2]} : $T[1,4,5,5]
  return a = %0, b = %1, c = %2
})",
               dtypes::kFloat);
}

TEST_CASE("max_pool2d kernels: windows all in padding, ceil_mode with dilation, every numeric dtype") {
  // a: padding 3 with a 2x2 window: the corner windows hold no input (-inf, or the dtype's lowest).
  // b: ceil_mode with dilation, asymmetric padding and unequal strides.
  checkKernels("max_pool2d", R"(graph @t(%x: $T[1,2,5,5], %y: $T[2,3,7,8]) {
  %0 = max_pool2d(%x) {kernel = [2, 2], padding = [3, 3, 3, 3], stride = [2, 2]} : $T[1,2,5,5]
  %1 = max_pool2d(%y) {ceil_mode = 1, dilation = [2, 2], kernel = [3, 2], padding = [1, 0, 2, 1], stride = [2, 3]} : $T[2,3,4,3]
  return a = %0, b = %1
})",
               dtypes::kNumeric);
}

TEST_CASE("max_pool2d kernels propagate NaN") {
  checkKernels("max_pool2d NaN", R"(graph @t(%x: $T[1,1,4,4]) {
  %n = constant() {value = dense<$T[1,1,4,4]> [0, 0, 0, 0, 0, nan, 0, 0, 0, 0, 0, 0, 0, 0, 0, nan]} : $T[1,1,4,4]
  %y = add(%x, %n) : $T[1,1,4,4]
  %0 = max_pool2d(%y) {kernel = [2, 2], padding = [1, 1, 0, 0], stride = [1, 1]} : $T[1,1,4,4]
  return a = %0
})",
               dtypes::kFloat);
}

TEST_CASE("max_pool2d_indices and max_pool2d_backward kernels: NaN, ties, -inf, windows of padding only, stray indices") {
  // a: NaN windows give -1; windows of two equal zeros name the first. b: a 1x1 kernel with padding
  // 2 makes windows of padding only (-1), and -inf entries are still found as maxima. c: dy routed by
  // a, and by hand-made indices partly outside their windows (those send nothing).
  checkKernels("max_pool2d_indices", R"(graph @t(%x: $T[1,1,4,4], %dy: $T[1,1,4,4], %stray: i64[1,1,4,4]) {
  %n = constant() {value = dense<$T[1,1,4,4]> [0, 0, 0, 0, 0, nan, 0, 0, 0, 0, 0, 0, 0, 0, 0, nan]} : $T[1,1,4,4]
  %z = constant() {value = dense<$T[1,1,4,4]> [0, 0, 1, 1, 0, 0, -inf, 1, 2, 2, -inf, -inf, 3, 3, -inf, -inf]} : $T[1,1,4,4]
  %y = add(%x, %n) : $T[1,1,4,4]
  %0 = max_pool2d_indices(%y) {kernel = [2, 2], padding = [1, 1, 0, 0], stride = [1, 1]} : i64[1,1,4,4]
  %1 = max_pool2d_indices(%z) {kernel = [2, 2], padding = [1, 1, 0, 0], stride = [1, 1]} : i64[1,1,4,4]
  %2 = max_pool2d_indices(%z) {kernel = [1, 1], padding = [2, 2, 0, 0], stride = [2, 2]} : i64[1,1,3,3]
  %3 = max_pool2d_backward(%dy, %0) {input_size = [4, 4], kernel = [2, 2], padding = [1, 1, 0, 0], stride = [1, 1]} : $T[1,1,4,4]
  %4 = max_pool2d_backward(%dy, %stray) {input_size = [4, 4], kernel = [2, 2], padding = [1, 1, 0, 0], stride = [1, 1]} : $T[1,1,4,4]
  return a = %0, b = %1, c = %2, d = %3, e = %4
})",
               dtypes::kFloat);
}

TEST_CASE("avg_pool2d kernels: count_include_pad, ceil_mode windows clipped, windows all in padding") {
  // a, b: padding 2 with a 2x2 window: corner windows are padding only (0/0 = NaN without
  //       count_include_pad, 0 with it). c, d: ceil_mode's last window is clipped to the padded input.
  // e: asymmetric padding and strides.
  checkKernels("avg_pool2d", R"(graph @t(%x: $T[1,2,4,4], %y: $T[2,3,6,7], %z: $T[1,1,4,5]) {
  %0 = avg_pool2d(%x) {kernel = [2, 2], padding = [2, 2, 2, 2], stride = [2, 2]} : $T[1,2,4,4]
  %1 = avg_pool2d(%x) {count_include_pad = 1, kernel = [2, 2], padding = [2, 2, 2, 2], stride = [2, 2]} : $T[1,2,4,4]
  %2 = avg_pool2d(%y) {ceil_mode = 1, count_include_pad = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,3,4,4]
  %3 = avg_pool2d(%y) {ceil_mode = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,3,4,4]
  %4 = avg_pool2d(%z) {count_include_pad = 1, kernel = [2, 3], padding = [0, 2, 1, 0], stride = [1, 2]} : $T[1,1,4,3]
  return a = %0, b = %1, c = %2, d = %3, e = %4
})",
               dtypes::kFloat);
}

TEST_CASE("pad kernels: reflect and edge with crops, constant fill in every dtype, everything cropped") {
  // a: reflect on three dims. b: reflect after cropping. c: edge after cropping. d: a fractional fill
  // converted as cast would (-3 for integers, wrapped for unsigned, true for bool). e: a dim cropped
  // away entirely, so the result is all fill and nothing is read.
  checkKernels("pad", R"(graph @t(%x: $T[3,4,5], %y: $T[3,4], %z: $T[2,3]) {
  %0 = pad(%x) {mode = "reflect", pads = [2, 1, 3, 1, 2, 0]} : $T[6,7,8]
  %1 = pad(%x) {mode = "reflect", pads = [-1, 2, 0, 1, -1, 3]} : $T[3,5,8]
  %2 = pad(%y) {mode = "edge", pads = [2, -2, 3, 1]} : $T[8,3]
  %3 = pad(%x) {pads = [1, -1, 2, 0, 2, -1], value = -3.7} : $T[4,5,6]
  %4 = pad(%z) {pads = [0, -3, 1, 2], value = 2.5} : $T[3,2]
  return a = %0, b = %1, c = %2, d = %3, e = %4
})",
               dtypes::kAll);
}

TEST_CASE("slice kernels: negative steps, clamped starts and ends, empty results") {
  // a: starts past the end clamp (step -2 from the last row; step 3 from 0). b: a full reversal of the
  // last axis. c: a step larger than the axis takes one element. d: an empty slice.
  checkKernels("slice", R"(graph @t(%x: $T[5,7,3]) {
  %0 = slice(%x) {axes = [0, 1], ends = [-100, 100], starts = [10, -10], steps = [-2, 3]} : $T[3,3,3]
  %1 = slice(%x) {axes = [-1], ends = [-1000], starts = [-1], steps = [-1]} : $T[5,7,3]
  %2 = slice(%x) {axes = [1], ends = [-100], starts = [4], steps = [-5]} : $T[5,1,3]
  %3 = slice(%x) {axes = [1], ends = [1], starts = [3]} : $T[5,0,3]
  return a = %0, b = %1, c = %2, d = %3
})",
               dtypes::kAll);
}

TEST_CASE("gather kernels: negative indices, a middle axis, scalar and i32 indices") {
  checkKernels("gather", R"(graph @t(%x: $T[4,3,5]) {
  %i = constant() {value = dense<i64[2,3]> [-1, 0, 2, -3, 1, -2]} : i64[2,3]
  %0 = gather(%x, %i) {axis = 1} : $T[4,2,3,5]
  %j = constant() {value = dense<i32[]> [-5]} : i32[]
  %1 = gather(%x, %j) {axis = -1} : $T[4,3]
  %k = constant() {value = dense<i32[5]> [3, -4, 0, -1, 3]} : i32[5]
  %2 = gather(%x, %k) : $T[5,3,5]
  return a = %0, b = %1, c = %2
})",
               dtypes::kAll);
}

TEST_CASE("scatter_add kernels: repeated and negative indices accumulate in order") {
  // a: position 2 of the middle axis is hit three times (2, -1, 2). b: i32 indices on axis 0, 0 hit
  // twice. c: rank-3 indices on the last axis.
  checkKernels("scatter_add", R"(graph @t(%x: $T[4,3,5], %u: $T[4,2,2,5], %y: $T[4,3], %v: $T[3,3], %z: $T[2,3], %w: $T[2,2,1,2]) {
  %i = constant() {value = dense<i64[2,2]> [2, -1, 0, 2]} : i64[2,2]
  %0 = scatter_add(%x, %i, %u) {axis = 1} : $T[4,3,5]
  %j = constant() {value = dense<i32[3]> [-4, 3, 0]} : i32[3]
  %1 = scatter_add(%y, %j, %v) : $T[4,3]
  %k = constant() {value = dense<i64[2,1,2]> [0, -1, -3, 1]} : i64[2,1,2]
  %2 = scatter_add(%z, %k, %w) {axis = -1} : $T[2,3]
  return a = %0, b = %1, c = %2
})",
               dtypes::kNumeric);
}

TEST_CASE("concat kernels: an empty input, a middle axis, a single input") {
  checkKernels("concat", R"(graph @t(%a: $T[2,3], %e: $T[0,3], %b: $T[1,3], %p: $T[2,1,3], %q: $T[2,4,3], %r: $T[2,2,3]) {
  %0 = concat(%a, %e, %b) {axis = 0} : $T[3,3]
  %1 = concat(%p, %q, %r) {axis = 1} : $T[2,7,3]
  %2 = concat(%a) {axis = -1} : $T[2,3]
  return a = %0, b = %1, c = %2
})",
               dtypes::kAll);
}

TEST_CASE("matmul kernels: batch broadcasting, vectors, empty K, integer sums wrap") {
  // K = 8 makes u8 and i8 sums of random values wrap.
  checkKernels("matmul", R"(graph @t(%a: $T[3,1,2,4], %b: $T[5,4,3], %v: $T[4], %c: $T[2,4,3], %d: $T[2,3,4], %s: $T[8], %e: $T[2,0], %f: $T[0,3], %g: $T[1,2,8], %h: $T[3,8,2]) {
  %0 = matmul(%a, %b) : $T[3,5,2,3]
  %1 = matmul(%v, %c) : $T[2,3]
  %2 = matmul(%d, %v) : $T[2,3]
  %3 = matmul(%s, %s) : $T[]
  %4 = matmul(%e, %f) : $T[2,3]
  %5 = matmul(%g, %h) : $T[3,2,2]
  return a = %0, b = %1, c = %2, d = %3, e = %4, f = %5
})",
               dtypes::kNumeric);
}

TEST_CASE("gemm kernels: transposes, alpha and beta, every shape of c, integral and fractional scales") {
  // On integers, a and c (fractional scales) go through double from the 64-bit sum, which K = 8
  // makes wrap differently from a sum in u8/i8; b and e have integral scales (exact, wrapping).
  checkKernels("gemm", R"(graph @t(%a: $T[8,3], %b: $T[4,8], %c: $T[4], %p: $T[3,8], %q: $T[8,4], %col: $T[3,1], %m: $T[3,4], %s: $T[]) {
  %0 = gemm(%a, %b, %c) {alpha = 0.5, beta = 0.25, trans_a = 1, trans_b = 1} : $T[3,4]
  %1 = gemm(%p, %b, %col) {alpha = -2.0, beta = 3.0, trans_b = 1} : $T[3,4]
  %2 = gemm(%p, %q) {alpha = 0.75} : $T[3,4]
  %3 = gemm(%a, %q, %m) {beta = 0.0, trans_a = 1} : $T[3,4]
  %4 = gemm(%p, %q, %s) {beta = 1.5} : $T[3,4]
  %5 = gemm(%a, %q) {trans_a = 1} : $T[3,4]
  return a = %0, b = %1, c = %2, d = %3, e = %4, f = %5
})",
               dtypes::kNumeric);
}

namespace {

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// The default pipeline's graph and the text of its one fused kernel.
std::pair<Graph, std::string> fusedKernel(const Graph& graph) {
  Graph optimized = graph.clone();
  auto pm = PassManager::defaultPipeline(PassManagerOptions{});
  REQUIRE(pm.ok());
  REQUIRE(pm->run(optimized).ok());
  const Node* fused = nullptr;
  for (const auto& n : optimized.nodes()) {
    if (n->opName() == "fused") fused = n.get();
  }
  REQUIRE(fused != nullptr);
  auto kernel = codegen::lowerToKernel(optimized, *fused);
  REQUIRE_MESSAGE(kernel.ok(), (kernel.ok() ? "" : kernel.error().message()));
  return {std::move(optimized), codegen::printKernel(*kernel)};
}

}  // namespace

TEST_CASE("a float division inside a loop by a per-row value becomes a multiplication, except under floor") {
  // softmax's e / sum: the kernel optimizer takes 1 / sum once before the write loop. floor(x / m) keeps
  // its division, or an exact quotient could round down to the integer below.
  Graph graph = testing::parseOrFail(R"(graph @t(%x: f32[4,64]) {
  %0 = softmax(%x) : f32[4,64]
  %1 = reduce_max(%x) {axes = [1], keepdims = 1} : f32[4,1]
  %2 = div(%x, %1) : f32[4,64]
  %3 = floor(%2) : f32[4,64]
  %4 = add(%3, %0) : f32[4,64]
  return y = %4
})");
  // Not a structured binding: clang 14 cannot capture those (the CHECK_MESSAGEs below do).
  auto [optimized, kernelText] = fusedKernel(graph);
  const std::string& text = kernelText;
  // One division left in the write loop (floor's), one reciprocal before it.
  size_t loopAt = text.rfind("loop ");
  REQUIRE(loopAt != std::string::npos);
  std::string before = text.substr(0, loopAt), inside = text.substr(loopAt);
  CHECK_MESSAGE(occurrences(inside, " = div ") == 1, text);
  CHECK_MESSAGE(occurrences(inside, " = mul ") >= 1, text);
  CHECK_MESSAGE(occurrences(before, " = div ") >= 1, text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  testing::checkKernelRun(optimized, feeds, *expected, "after the default pipeline", "softmax and floor(x / max)");
}


TEST_CASE("softmax computes exp once: its sum sweep keeps exp in the output, the write sweep reads it back") {
  Graph graph = testing::parseOrFail(R"(graph @t(%x: f32[5,77], %w: f32[77]) {
  %0 = mul(%x, %w) : f32[5,77]
  %1 = softmax(%0) {axis = 1} : f32[5,77]
  return y = %1
})");
  // Not a structured binding: clang 14 cannot capture those (the CHECK_MESSAGEs below do).
  auto [optimized, kernelText] = fusedKernel(graph);
  const std::string& text = kernelText;
  CHECK_MESSAGE(occurrences(text, " = exp ") == 1, text);
  CHECK_MESSAGE(occurrences(text, "store %b2[") == 2, text);
  CHECK_MESSAGE(occurrences(text, "load %b2[") == 1, text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  testing::checkKernelRun(optimized, feeds, *expected, "after the default pipeline", "softmax of x * w");
}

TEST_CASE("exp is computed again when the output may be written in place over an input the write sweep reads") {
  // y = softmax(x) + z: y may take z's buffer (z is read only at y's index), so storing exp into y early
  // would overwrite z before the write sweep reads it.
  Graph graph = testing::parseOrFail(R"(graph @t(%x: f32[5,77], %z: f32[5,77]) {
  %0 = softmax(%x) {axis = 1} : f32[5,77]
  %1 = add(%0, %z) : f32[5,77]
  return y = %1
})");
  // Not a structured binding: clang 14 cannot capture those (the CHECK_MESSAGEs below do).
  auto [optimized, kernelText] = fusedKernel(graph);
  const std::string& text = kernelText;
  CHECK_MESSAGE(occurrences(text, " = exp ") == 2, text);
  CHECK_MESSAGE(occurrences(text, "store ") == 1, text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  testing::checkKernelRun(optimized, feeds, *expected, "after the default pipeline", "softmax(x) + z");
}
