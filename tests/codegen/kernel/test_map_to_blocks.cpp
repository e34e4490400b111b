// mapToBlocks (codegen/map_to_blocks.h): which kernels it maps to blocks of threads, how many threads,
// what the split loops combine with, and that mapped kernels still compute the reference's results on
// the kernel interpreter (which runs split loops sequentially). The parallel execution itself is
// tested on PoCL (tests/codegen/c_renderers/test_block_kernels.cpp).
#include "autodiff/gradient_tape.h"
#include "codegen/map_to_blocks.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// The kernel of the graph's last node after the default pipeline, mapped where mapToBlocks applies.
codegen::Kernel mappedKernel(std::string_view ir, bool& mapped) {
  codegen::Kernel kernel = testing::lastNodeKernelOrFail(testing::optimizedOrFail(testing::parseOrFail(ir)));
  mapped = codegen::mapToBlocks(kernel);
  return kernel;
}

/// Every kernel of `graph` run on the kernel interpreter with mapToBlocks applied: the reference's
/// results; returns how many kernels were mapped.
int checkMappedResults(const Graph& graph) {
  Graph g = testing::optimizedOrFail(graph);
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  TensorMap feeds = testing::randomFeeds(graph, seed);
  int mapped = 0;
  auto actual = testing::runWithKernels(g, feeds, [&](codegen::Kernel& k) { mapped += codegen::mapToBlocks(k); });
  auto reference = interpret(graph, feeds);
  REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
  REQUIRE(reference.ok());
  for (size_t i = 0; i < actual->size(); ++i) {
    std::string d = testing::compareTensors((*actual)[i], (*reference)[i], testing::kernelTolerance((*reference)[i].dtype()));
    CHECK_MESSAGE(d.empty(), "output ", graph.outputs()[i].name, ": ", d);
  }
  return mapped;
}

}  // namespace

TEST_CASE("mapToBlocks: softmax's rows become blocks whose loops combine by max and by add") {
  bool mapped = false;
  codegen::Kernel k = mappedKernel(R"(graph @t(%x: f32[8,1000]) {
  %0 = softmax(%x) {axis = 1} : f32[8,1000]
  return y = %0
})",
                                   mapped);
  std::string text = codegen::printKernel(k);
  REQUIRE_MESSAGE(mapped, text);
  CHECK(k.blockThreads == 256);
  CHECK_MESSAGE(text.find("kernel @fused_0 domain [8] threads 256\n") == 0, text);
  CHECK_MESSAGE(text.find("< 1000 carry(%5 = %1 : f32) split combine(max) {") != std::string::npos, text);
  CHECK_MESSAGE(text.find("split combine(add) {") != std::string::npos, text);
  // The normalizing loop carries nothing: split, nothing to combine.
  CHECK_MESSAGE(text.find("< 1000 split {") != std::string::npos, text);
  CHECK_FALSE(codegen::mapToBlocks(k));  // idempotent
  CHECK(codegen::printKernel(k) == text);
}

TEST_CASE("mapToBlocks: a block has the row's length rounded up to a power of two, 32 to 256 threads") {
  bool mapped = false;
  codegen::Kernel k = mappedKernel(R"(graph @t(%x: f32[16,100]) {
  %0 = reduce_sum(%x) {axes = [1]} : f32[16]
  return y = %0
})",
                                   mapped);
  CHECK(mapped);
  CHECK(k.blockThreads == 128);
  k = mappedKernel(R"(graph @t(%x: f32[3,64]) {
  %0 = reduce_max(%x) {axes = [1]} : f32[3]
  return y = %0
})",
                   mapped);
  CHECK(mapped);
  CHECK(k.blockThreads == 64);
  codegen::Kernel small = testing::lastNodeKernelOrFail(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[3,64]) {
  %0 = reduce_max(%x) {axes = [1]} : f32[3]
  return y = %0
})")));
  CHECK(codegen::mapToBlocks(small, 32));
  CHECK(small.blockThreads == 32);
}

TEST_CASE("mapToBlocks leaves alone short rows, strided rows, data-dependent offsets and order-dependent loops") {
  bool mapped = true;
  // Rows of 32: a block would idle most of its threads.
  mappedKernel(R"(graph @t(%x: f32[256,32]) {
  %0 = softmax(%x) {axis = 1} : f32[256,32]
  return y = %0
})",
               mapped);
  CHECK_FALSE(mapped);
  // A column sum: consecutive iterations are 64 elements apart (threads would not coalesce; a thread
  // per column does).
  mappedKernel(R"(graph @t(%x: f32[512,64]) {
  %0 = reduce_sum(%x) {axes = [0]} : f32[64]
  return y = %0
})",
               mapped);
  CHECK_FALSE(mapped);
  // A sum of gathered rows: the offsets depend on the data.
  mappedKernel(R"(graph @t(%x: f32[512,8], %i: i64[256]) {
  %0 = gather(%x, %i) {axis = 0} : f32[256,8]
  %1 = reduce_sum(%0) {axes = [0]} : f32[8]
  return y = %1
})",
               mapped);
  CHECK_FALSE(mapped);
  // reduce_logsumexp is split like softmax; its max-shifted sum is fine, but a running value that
  // feeds the next iteration in any other way (not one associative update) is not splittable.
  codegen::Kernel k = testing::lastNodeKernelOrFail(testing::optimizedOrFail(testing::parseOrFail(R"(graph @t(%x: f32[4,512]) {
  %0 = reduce_sum(%x) {axes = [1]} : f32[4]
  return y = %0
})")));
  // Make the sum's update read the carried value twice (next = c + c * x): no longer one update of
  // the carried value by an independent term.
  auto& loop = *std::get<std::shared_ptr<codegen::KLoop>>(
      *std::find_if(k.body.stmts.begin(), k.body.stmts.end(),
                    [](const codegen::KStmt& s) { return std::holds_alternative<std::shared_ptr<codegen::KLoop>>(s); }));
  auto& update = std::get<codegen::KInst>(loop.body.stmts.back());
  REQUIRE(update.result == loop.next[0]);
  codegen::KInst product = update;
  product.result = static_cast<int32_t>(k.types.size());
  k.types.push_back(DType::f32);
  product.binary = KBinary::Mul;
  product.a = loop.carried[0];
  update.b = product.result;
  update.a = loop.carried[0];
  loop.body.stmts.insert(loop.body.stmts.end() - 1, product);
  CHECK_FALSE(codegen::mapToBlocks(k));
  CHECK(k.blockThreads == 0);
}

TEST_CASE("mapToBlocks: mapped kernels compute the reference's results (softmax, layer_norm, Adam's clipped update, "
          "and their gradients)") {
  CHECK(checkMappedResults(testing::parseOrFail(R"(graph @t(%x: f32[6,300], %w: f32[300], %b: f32[300]) {
  %0 = softmax(%x) {axis = 1} : f32[6,300]
  %1 = log_softmax(%x) {axis = 1} : f32[6,300]
  %2 = layer_norm(%x, %w, %b) {axis = 1, epsilon = 1e-5} : f32[6,300]
  %3 = reduce_logsumexp(%x) {axes = [1]} : f32[6]
  return a = %0, b = %1, c = %2, d = %3
})")) >= 3);
  // A gradient clip by the global norm feeding Adam's moments: one full reduction, then three
  // element loops in one kernel (the shape PoCL once skipped a loop of).
  CHECK(checkMappedResults(testing::parseOrFail(R"(graph @t(%g: f32[24,16], %m: f32[24,16], %v: f32[24,16], %p: f32[24,16]) {
  %0 = mul(%g, %g) : f32[24,16]
  %1 = reduce_sum(%0) : f32[]
  %2 = sqrt(%1) : f32[]
  %c1 = constant() {value = dense<f32[]> [1]} : f32[]
  %3 = div(%c1, %2) : f32[]
  %4 = min(%3, %c1) : f32[]
  %5 = mul(%g, %4) : f32[24,16]
  %c9 = constant() {value = dense<f32[]> [0.9]} : f32[]
  %6 = mul(%m, %c9) : f32[24,16]
  %7 = add(%6, %5) : f32[24,16]
  %8 = mul(%5, %5) : f32[24,16]
  %9 = add(%v, %8) : f32[24,16]
  %10 = sqrt(%9) : f32[24,16]
  %11 = div(%7, %10) : f32[24,16]
  %12 = sub(%p, %11) : f32[24,16]
  return scale = %4, m = %7, v = %9, p = %12
})")) >= 1);
  // The backward of softmax and layer_norm: row reductions of products of the upstream gradient.
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[5,200], %w: f32[200], %b: f32[200], %t: f32[5,200]) {
  %0 = layer_norm(%x, %w, %b) {axis = 1, epsilon = 1e-5} : f32[5,200]
  %1 = softmax(%0) {axis = 1} : f32[5,200]
  %2 = mul(%1, %t) : f32[5,200]
  %3 = reduce_sum(%2) : f32[]
  return loss = %3
})");
  std::vector<std::string> names = {"x", "w", "b"};
  auto grads = gradientOfOutputs(g, names);
  REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
  for (size_t i = 0; i < names.size(); ++i) g.addOutput(names[i] + ".grad", (*grads)[i]);
  CHECK(checkMappedResults(g) >= 2);
}
