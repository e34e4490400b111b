// tileColumns (codegen/tile_columns.h): which kernels it tiles, what the tiled kernel looks like, and
// that tiled kernels compute bit-identical results on the kernel interpreter in every dtype they cover.
#include "codegen/tile_columns.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>

using namespace smelt;

namespace {

/// The last non-constant node's kernel, tiled where tileColumns applies; `tiled` says whether it did.
codegen::Kernel lastKernel(const Graph& g, bool& tiled) {
  codegen::Kernel kernel = testing::lastNodeKernelOrFail(g);
  tiled = codegen::tileColumns(kernel);
  return kernel;
}

bool sameBits(const Tensor& a, const Tensor& b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0;
}

/// Runs `ir` ($T each dtype) on the kernel interpreter with and without tiling: the same bits, and
/// within tolerance of the reference.
void checkSameResults(std::string_view ir, std::initializer_list<DType> dtypes) {
  for (DType dtype : dtypes) {
    Graph graph = testing::parseOrFail(substituteDType(std::string(ir), dtypeName(dtype)));
    Graph g = testing::optimizedOrFail(graph);
    uint64_t seed = testing::testSeed();
    TensorMap feeds = testing::randomFeeds(graph, seed);
    auto plain = testing::runWithKernels(g, feeds);
    auto tiled = testing::runWithKernels(g, feeds, [](codegen::Kernel& k) { codegen::tileColumns(k); });
    auto reference = interpret(graph, feeds);
    REQUIRE(plain.ok());
    REQUIRE_MESSAGE(tiled.ok(), (tiled.ok() ? "" : tiled.error().message()));
    REQUIRE(reference.ok());
    for (size_t i = 0; i < plain->size(); ++i) {
      std::string what = fmt::format("{} output {} (seed {})", dtypeName(dtype), i, seed);
      CHECK_MESSAGE(sameBits((*tiled)[i], (*plain)[i]), what);
      std::string d = testing::compareTensors((*tiled)[i], (*reference)[i], testing::kernelTolerance(dtype));
      CHECK_MESSAGE(d.empty(), what, ": ", d);
    }
  }
}

// A bias gradient: relu's backward, and its sum down the batch (through a reshape, as autodiff emits).
constexpr std::string_view kBiasGradient = R"(graph @t(%h: $T[24,128], %g: $T[24,128]) {
  %z = constant() {value = dense<$T[]> [0]} : $T[]
  %m = le(%h, %z) : bool[24,128]
  %d = where(%m, %z, %g) : $T[24,128]
  %s = reduce_sum(%d) {axes = [0], keepdims = 1} : $T[1,128]
  %r = reshape(%s) {shape = [128]} : $T[128]
  return d = %d, s = %r
})";

}  // namespace

TEST_CASE("tileColumns: a bias gradient's column sums become tiles of columns walked row by row") {
  bool tiled = false;
  codegen::Kernel kernel = lastKernel(testing::optimizedOrFail(testing::parseOrFail(substituteDType(
                                          std::string(kBiasGradient), "f32"))),
                                      tiled);
  std::string text = codegen::printKernel(kernel);
  REQUIRE_MESSAGE(tiled, text);
  CHECK_MESSAGE(kernel.domain == std::vector<int64_t>{8}, text);  // 128 columns in tiles of 16
  CHECK_MESSAGE(text.find("loop %") != std::string::npos, text);
  // Rows outside, the tile's 16 columns inside.
  CHECK_MESSAGE(text.find("< 24 {\n    loop %") != std::string::npos, text);
  CHECK_MESSAGE(text.find("< 16 {") != std::string::npos, text);
}

TEST_CASE("tileColumns: tiled kernels give the same bits as untiled ones") {
  checkSameResults(kBiasGradient, {DType::f32, DType::f64, DType::f16, DType::i32});
  checkSameResults(R"(graph @t(%x: $T[7,64]) {
  %0 = reduce_max(%x) {axes = [0]} : $T[64]
  return y = %0
})",
                   {DType::f32, DType::i64});
}

TEST_CASE("tileColumns leaves alone row reductions, small domains and outputs that may share an input's memory") {
  bool tiled = true;
  lastKernel(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[64,128]) {
  %0 = reduce_sum(%x) {axes = [1]} : f32[64]
  return y = %0
})")),
             tiled);
  CHECK_FALSE(tiled);  // rows are contiguous already
  lastKernel(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[64,24]) {
  %0 = reduce_sum(%x) {axes = [0]} : f32[24]
  return y = %0
})")),
             tiled);
  CHECK_FALSE(tiled);  // 24 columns: fewer than 8 tiles of 8
  // colsum(x * b): the sum would live in the output between rows, and b is of the output's size and
  // dtype (an input the output could be written in place over), read in every row.
  lastKernel(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[16,128], %b: f32[128]) {
  %0 = mul(%x, %b) : f32[16,128]
  %1 = reduce_sum(%0) {axes = [0]} : f32[128]
  return y = %1
})")),
             tiled);
  CHECK_FALSE(tiled);
  // colsum(x) + b: the sum is not stored as it is, so it has no output to live in.
  lastKernel(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[16,128], %b: f32[128]) {
  %0 = reduce_sum(%x) {axes = [0]} : f32[128]
  %1 = add(%0, %b) : f32[128]
  return y = %1
})")),
             tiled);
  CHECK_FALSE(tiled);
}

TEST_CASE("tileColumns tiles an output of an input's size where the executable found the two apart") {
  // colsum(x * b) again, at a batch of 1 the shape of a bias gradient's [1, C] input and [C] output:
  // by sizes alone b, or x, could be the output's memory; an executable that planned the kernel's
  // buffers apart says so (Kernel::disjointBuffers) and the kernel is tiled as at every other size.
  constexpr std::string_view ir = R"(graph @t(%x: f32[1,128], %b: f32[128]) {
  %0 = mul(%x, %b) : f32[1,128]
  %1 = reduce_sum(%0) {axes = [0]} : f32[128]
  return y = %1
})";
  Graph g = testing::optimizedOrFail(testing::parseOrFail(ir));
  codegen::Kernel kernel = testing::lastNodeKernelOrFail(g);
  codegen::Kernel shared = kernel;
  CHECK_FALSE(codegen::tileColumns(shared));
  kernel.disjointBuffers = true;
  CHECK(codegen::tileColumns(kernel));
  // And the tiled kernel gives the untiled one's bits.
  Graph graph = testing::parseOrFail(ir);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto plain = testing::runWithKernels(g, feeds);
  auto tiled = testing::runWithKernels(g, feeds, [](codegen::Kernel& k) {
    k.disjointBuffers = true;
    codegen::tileColumns(k);
  });
  REQUIRE(plain.ok());
  REQUIRE(tiled.ok());
  CHECK(sameBits((*tiled)[0], (*plain)[0]));
}
