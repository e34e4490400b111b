// The LLVM CPU backend against the reference interpreter: every op's IR example, in every dtype the op
// accepts, compiled into an Executable (default pipeline, JIT kernels, one arena) and run on fresh
// random inputs. Also: a second compile of the same graph hits the kernel cache.
#include "codegen/llvm/llvm_jit.h"
#include "codegen/lower_kernel.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>

using namespace smelt;

TEST_CASE("llvm: every op's example matches the reference in every dtype") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  int checked = 0;
  std::vector<std::string> skipped;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant") continue;
    for (DType dtype : op->dtypes.list()) {
      std::string what = fmt::format("{} ({})", op->name, dtypeName(dtype));
      CAPTURE(what);
      if (std::getenv("SMELT_TEST_TRACE")) fmt::print(stderr, "{}\n", what);
      Graph graph = testing::parseOrFail(op->exampleIn(dtype));
      TensorMap feeds = testing::randomFeeds(graph, seed);
      auto expected = interpret(graph, feeds);
      REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      auto exe = Executable::compile(graph);
      REQUIRE_MESSAGE(exe.ok(), what, ": ", (exe.ok() ? "" : exe.error().message()));
      if ((*exe)->report().interpreted > 0) skipped.push_back(what);
      // The oracle is the reference on the graph as compiled (after decomposition and fusion):
      // decompositions round differently from a composite's own reference (in bf16 a floor can
      // flip); the registry's decomposition test covers that.
      expected = interpret((*exe)->graph(), feeds);
      REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      auto actual = (*exe)->run(feeds);
      REQUIRE_MESSAGE(actual.ok(), what, ": ", (actual.ok() ? "" : actual.error().message()));
      // The compiled graph's outputs end with its run-time checks' flags (passes/index_checks.h), which runs do
      // not return: compare the caller's outputs.
      REQUIRE(actual->size() == graph.outputs().size());
      for (size_t i = 0; i < actual->size(); ++i) {
        std::string d = testing::compareTensors((*actual)[i], (*expected)[i], testing::backendTolerance((*expected)[i].dtype()));
        CHECK_MESSAGE(d.empty(), what, " output ", graph.outputs()[i].name, ": ", d, "\n", toText((*exe)->graph()));
      }
      ++checked;
    }
  }
  MESSAGE(fmt::format("{} op/dtype examples compiled and run; {} with a node on the reference interpreter", checked,
                      skipped.size()));
}

TEST_CASE("llvm: an executable runs many times with the same results, and a recompile hits the cache") {
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[64,128], %b: f32[128]) {
  %0 = add(%x, %b) : f32[64,128]
  %1 = tanh(%0) : f32[64,128]
  %2 = softmax(%1) : f32[64,128]
  %3 = reduce_sum(%2) {axes = [0]} : f32[128]
  return y = %2, z = %3
})");
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  auto first = (*exe)->run(feeds);
  REQUIRE(first.ok());
  for (int i = 0; i < 5; ++i) {
    auto again = (*exe)->run(feeds);
    REQUIRE(again.ok());
    for (size_t o = 0; o < first->size(); ++o) CHECK(testing::compareTensors((*again)[o], (*first)[o], 0).empty());
  }
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  for (size_t o = 0; o < first->size(); ++o) CHECK(testing::compareTensors((*first)[o], (*expected)[o], 2e-5).empty());
  auto second = Executable::compile(graph);
  REQUIRE(second.ok());
  CHECK((*second)->report().cacheHits == (*second)->report().kernels);
}

TEST_CASE("llvm: a kernel writing a result in place over an operand still reads that operand for its other results") {
  // The planner puts r0 over x (x dies at the fused kernel {mul, add}, which reads it only at the
  // written index; r0 is not a graph output, so it lives in the arena); r1 reads x at the same
  // element, so the kernel must read it before r0 is stored.
  Graph graph = testing::parseOrFail(R"(graph @g(%a: f32[4,8], %c: f32[4,8], %b: f32[8,8]) {
  %x = concat(%a, %c) {axis = 0} : f32[8,8]
  %r0 = mul(%b, %b) : f32[8,8]
  %r1 = add(%x, %r0) : f32[8,8]
  %y = concat(%r0, %r1) {axis = 0} : f32[16,8]
  return y = %y
})");
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  auto actual = (*exe)->run(feeds);
  REQUIRE(actual.ok());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  for (size_t o = 0; o < expected->size(); ++o) {
    CHECK_MESSAGE(testing::compareTensors((*actual)[o], (*expected)[o], 1e-6).empty(), toText((*exe)->graph()));
  }
}

TEST_CASE("llvm: a result in the same memory as its operand vectorizes without an overlap check") {
  // Two pointers to one buffer make LLVM check their distance before its vector loop; the check fails
  // whenever they are equal and the whole loop runs scalar. KBuffer::sameAs gives both one pointer.
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[64,256]) {
  %0 = relu(%x) : f32[64,256]
  return y = %0
})");
  auto kernel = codegen::lowerToKernel(graph, *graph.nodes().back());
  REQUIRE_MESSAGE(kernel.ok(), (kernel.ok() ? "" : kernel.error().message()));
  auto jit = codegen::LlvmJit::global();
  REQUIRE(jit.ok());
  auto apart = (*jit)->renderIr(*kernel, true);
  REQUIRE(apart.ok());
  CHECK(apart->find("memcheck") != std::string::npos);  // two buffers that may overlap
  kernel->buffers[1].sameAs = 0;
  CHECK(codegen::printKernel(*kernel).find("buffer %b1: f32[16384] out \"r0\" same %b0") != std::string::npos);
  auto shared = (*jit)->renderIr(*kernel, true);
  REQUIRE(shared.ok());
  CHECK(shared->find("memcheck") == std::string::npos);
  CHECK(shared->find("<16 x float>") != std::string::npos);
  // And it computes in place: the same kernel run on one buffer for both.
  Tensor x = testing::randomFeeds(graph, testing::testSeed()).at("x");
  Tensor want = x;  // a copy (tensors are values)
  for (int64_t i = 0; i < want.numel(); ++i) want.data<float>()[i] = std::max(0.0f, want.data<float>()[i]);
  auto entry = (*jit)->compile(*kernel);
  REQUIRE(entry.ok());
  char* buffers[] = {reinterpret_cast<char*>(x.raw()), reinterpret_cast<char*>(x.raw())};
  (*entry)->entry(buffers, 0, kernel->domainSize());
  CHECK(testing::compareTensors(x, want, 0).empty());
}

/// `graph` (one output) compiled for the CPU, which must run its one node as the op's host implementation
/// (OpDef::host), and compiled without host implementations, which must not: both results on `feeds`, the host
/// one first.
namespace {
std::pair<Tensor, Tensor> hostAndKernelResults(const Graph& graph, const TensorMap& feeds) {
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  CHECK((*exe)->report().host == 1);
  auto viaHost = (*exe)->run(feeds);
  REQUIRE(viaHost.ok());
  CompileOptions kernelOnly;
  kernelOnly.host = false;
  auto viaKernel = Executable::compile(graph, kernelOnly);
  REQUIRE(viaKernel.ok());
  CHECK((*viaKernel)->report().host == 0);
  auto kernelResult = (*viaKernel)->run(feeds);
  REQUIRE(kernelResult.ok());
  return {(*viaHost)[0], (*kernelResult)[0]};
}
}  // namespace

TEST_CASE("llvm: max_pool2d's gradient runs as its op's host scatter, matching the reference") {
  // Overlapping 3x3 windows at stride 2 (ResNet's stem): the gradient is max_pool2d_indices and
  // max_pool2d_backward; the latter runs as OpDef::host, not as its gather kernel.
  for (const char* dtype : {"f32", "f64"}) {
    CAPTURE(dtype);
    Graph graph = testing::parseOrFail(substituteDType(R"(graph @g(%x: $T[2,3,9,8], %dy: $T[2,3,5,4]) {
  %i = max_pool2d_indices(%x) {kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : i64[2,3,5,4]
  %dx = max_pool2d_backward(%dy, %i) {input_size = [9, 8], kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : $T[2,3,9,8]
  return dx = %dx
})", dtype));
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    // (Not a structured binding: clang 14 cannot capture one in doctest's assertions.)
    const std::pair<Tensor, Tensor> results = hostAndKernelResults(graph, feeds);
    const Tensor& actual = results.first;
    const Tensor& kernelResult = results.second;
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    CHECK(testing::compareTensors(actual, (*expected)[0], testing::backendTolerance((*expected)[0].dtype())).empty());
    // Every window's dy lands somewhere: the gradient sums to dy's sum.
    double in = 0, out = 0;
    for (double v : feeds.at("dy").toDoubles()) in += v;
    for (double v : actual.toDoubles()) out += v;
    CHECK(out == doctest::Approx(in).epsilon(1e-5));
    // The gather kernel sums each element's windows in the same order: the same bits.
    CHECK(kernelResult.bitwiseEqual(actual));
  }
}

TEST_CASE("llvm: concat runs as its op's host copies, bit for bit the kernel's, on every axis and with empty operands") {
  // Flat gradient buckets (axis 0 of 1-D operands), an inner axis, the last axis with a zero-width operand, and
  // every dtype width (i64, f32, f16, bool).
  const char* graphs[] = {
      R"(graph @g(%a: $T[7], %b: $T[1], %c: $T[300], %d: $T[0]) {
  %0 = concat(%a, %b, %c, %d) {axis = 0} : $T[308]
  return r = %0
})",
      R"(graph @g(%a: $T[2,3,4], %b: $T[2,1,4], %c: $T[2,5,4]) {
  %0 = concat(%a, %b, %c) {axis = 1} : $T[2,9,4]
  return r = %0
})",
      R"(graph @g(%a: $T[3,2,5], %b: $T[3,2,0], %c: $T[3,2,1]) {
  %0 = concat(%a, %b, %c) {axis = -1} : $T[3,2,6]
  return r = %0
})"};
  for (const char* text : graphs) {
    for (const char* dtype : {"f32", "i64", "f16", "bool"}) {
      CAPTURE(text);
      CAPTURE(dtype);
      Graph graph = testing::parseOrFail(substituteDType(text, dtype));
      TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
      const std::pair<Tensor, Tensor> results = hostAndKernelResults(graph, feeds);
      const Tensor& actual = results.first;
      const Tensor& kernelResult = results.second;
      auto expected = interpret(graph, feeds);
      REQUIRE(expected.ok());
      CHECK(actual.bitwiseEqual((*expected)[0]));
      CHECK(kernelResult.bitwiseEqual(actual));
    }
  }
}

TEST_CASE("llvm: row reductions keep NaN, inf and -inf as the reference does, at every position of a vectorized row") {
  // max/min reductions render as maxnum plus a NaN flag and sums are reassociated into vector lanes:
  // a NaN in the vector body, the remainder or the first element must still make the row NaN, and an
  // infinite row must give what the reference gives. Rows of 37 and 100 elements put specials in the
  // vectorized body and in the scalar remainder; each row of x gets a different special at a different spot.
  for (int64_t len : {37, 100}) {
    CAPTURE(len);
    std::string text = fmt::format(R"(graph @g(%x: f32[12,{0}]) {{
  %0 = reduce_max(%x) {{axes = [1]}} : f32[12]
  %1 = reduce_min(%x) {{axes = [1]}} : f32[12]
  %2 = reduce_logsumexp(%x) {{axes = [1]}} : f32[12]
  %3 = softmax(%x) : f32[12,{0}]
  %4 = log_softmax(%x) : f32[12,{0}]
  %5 = reduce_variance(%x) {{axes = [1]}} : f32[12]
  return mx = %0, mn = %1, lse = %2, sm = %3, lsm = %4, var = %5
}})",
                                   len);
    Graph graph = testing::parseOrFail(text);
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    Tensor& x = feeds.at("x");
    const double specials[] = {NAN, INFINITY, -INFINITY};
    for (int64_t row = 0; row < 9; ++row) {
      int64_t at = (row / 3) == 0 ? 0 : (row / 3) == 1 ? len / 2 : len - 1;
      x.setDouble(row * len + at, specials[row % 3]);
    }
    for (int64_t c = 0; c < len; ++c) x.setDouble(9 * len + c, -INFINITY);  // a row of only -inf
    auto exe = Executable::compile(graph);
    REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
    auto actual = (*exe)->run(feeds);
    REQUIRE(actual.ok());
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    for (size_t o = 0; o < expected->size(); ++o) {
      CHECK_MESSAGE(testing::compareTensors((*actual)[o], (*expected)[o], 2e-5).empty(), graph.outputs()[o].name,
                    ": ", testing::compareTensors((*actual)[o], (*expected)[o], 2e-5));
    }
  }
}
