// collapseNestedLoops (codegen/collapse_loops.h), which lowering runs on every kernel: which nests
// become one loop, which stay, and that the kernels still compute what the reference does.
#include "codegen/collapse_loops.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// `ir` ($T each dtype) through lowered kernels matches the reference; returns the last kernel's text.
std::string checkAgainstReference(std::string_view ir, std::initializer_list<DType> dtypes) {
  std::string text;
  for (DType dtype : dtypes) {
    Graph graph = testing::parseOrFail(substituteDType(std::string(ir), dtypeName(dtype)));
    Graph g = testing::optimizedOrFail(graph);
    uint64_t seed = testing::testSeed();
    TensorMap feeds = testing::randomFeeds(graph, seed);
    auto actual = testing::runWithKernels(g, feeds);
    auto reference = interpret(graph, feeds);
    REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
    REQUIRE(reference.ok());
    for (size_t i = 0; i < actual->size(); ++i) {
      std::string d = testing::compareTensors((*actual)[i], (*reference)[i], testing::kernelTolerance(dtype));
      CHECK_MESSAGE(d.empty(), dtypeName(dtype), " output ", i, " (seed ", seed, "): ", d);
    }
    text = codegen::printKernel(testing::lastNodeKernelOrFail(g));
  }
  return text;
}

// Batch norm's statistics and normalization over [N, C, 4, 4]: one point per channel walking the
// images, each image's 4 x 4 plane contiguous.
constexpr std::string_view kChannelNorm = R"(graph @t(%x: $T[3,8,4,4]) {
  %m = reduce_mean(%x) {axes = [0, 2, 3], keepdims = 1} : $T[1,8,1,1]
  %d = sub(%x, %m) : $T[3,8,4,4]
  %s = mul(%d, %d) : $T[3,8,4,4]
  %v = reduce_mean(%s) {axes = [0, 2, 3], keepdims = 1} : $T[1,8,1,1]
  %y = div(%d, %v) : $T[3,8,4,4]
  return y = %y, v = %v
})";

}  // namespace

TEST_CASE("collapseNestedLoops: a channel's 4x4 planes are walked as one loop of 16, and it still computes the same") {
  std::string text = checkAgainstReference(kChannelNorm, {DType::f32, DType::f64, DType::f16});
  CHECK_MESSAGE(text.find("< 16 ") != std::string::npos, text);
  CHECK_MESSAGE(text.find("< 4 ") == std::string::npos, text);  // no 4-iteration loop left
  CHECK_MESSAGE(text.find("< 3 ") != std::string::npos, text);  // the images stay a loop: not contiguous
}

TEST_CASE("collapseNestedLoops: a whole contiguous reduction nest becomes one loop") {
  std::string text = checkAgainstReference(R"(graph @t(%x: $T[5,6,7,8]) {
  %0 = reduce_sum(%x) {axes = [1, 2, 3]} : $T[5]
  return y = %0
})",
                                           {DType::f32, DType::i32});
  CHECK_MESSAGE(text.find("< 336 ") != std::string::npos, text);  // 6 * 7 * 8
}

TEST_CASE("collapseNestedLoops leaves nests whose indices are not one contiguous walk") {
  // Reducing a transposed input: the inner index steps by the outer extent's stride, not by one.
  std::string text = checkAgainstReference(R"(graph @t(%x: $T[4,6,5]) {
  %t = transpose(%x) {perm = [0, 2, 1]} : $T[4,5,6]
  %0 = reduce_sum(%t) {axes = [1, 2]} : $T[4]
  return y = %0
})",
                                           {DType::f32, DType::i64});
  CHECK_MESSAGE(text.find("< 30 ") == std::string::npos, text);
  // The outer index also read on its own (a per-row scale): the nest stays.
  text = checkAgainstReference(R"(graph @t(%x: $T[4,6,5], %r: $T[6,1]) {
  %0 = mul(%x, %r) : $T[4,6,5]
  %1 = reduce_sum(%0) {axes = [1, 2]} : $T[4]
  return y = %1
})",
                               {DType::f32});
  CHECK_MESSAGE(text.find("< 30 ") == std::string::npos, text);
}
