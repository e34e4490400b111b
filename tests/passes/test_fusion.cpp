// Fusion on whole forward and backward graphs: how many kernels, how many sweeps the row-reduction
// kernels take (softmax, log_softmax and layer_norm: at most two, forward and backward), relu's
// backward inside a kernel, and fused graphs that still print, parse back, run and differentiate.
// Op-level cases are the golden files in tests/passes/fuse/.
#include "autodiff/gradient_tape.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/fusion_groups.h"
#include "passes/pass_manager.h"
#include "tests/passes/optimized.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

using namespace smelt;

namespace {

Graph optimized(const Graph& graph) { return testing::optimizedOrFail(graph); }

/// `text` with gradients of its outputs' sum for `wrt` appended as outputs.
Graph withGradients(const char* text, std::vector<std::string> wrt) {
  Graph graph = testing::parseOrFail(text);
  auto grads = gradientOfOutputs(graph, wrt);
  REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
  for (size_t i = 0; i < wrt.size(); ++i) graph.addOutput(wrt[i] + ".grad", (*grads)[i]);
  return graph;
}

int64_t kernelsOf(const Graph& graph) {
  int64_t n = 0;
  for (const auto& node : graph.nodes()) n += node->opName() != "constant";
  return n;
}

/// The kernels (fused or lone) that reduce over `axes` of `shape`, with their sweeps.
std::vector<KernelSummary> rowKernels(const Graph& graph, const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<KernelSummary> found;
  for (const auto& node : graph.nodes()) {
    if (node->opName() != "fused") continue;
    KernelSummary k = describeKernel(*node);
    if (k.kind == KernelKind::Reduce && k.domain.shape == shape && k.domain.axes == axes) found.push_back(k);
  }
  return found;
}

/// Runs both graphs on the same random inputs; every output must agree to `tolerance` (relative).
void checkSameResults(const Graph& before, const Graph& after, double tolerance) {
  uint64_t seed = testing::testSeed();
  TensorMap feeds = testing::randomFeeds(before, seed);
  auto a = interpret(before, feeds);
  auto b = interpret(after, feeds);
  REQUIRE_MESSAGE(a.ok(), (a.ok() ? "" : a.error().message()));
  REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().message()));
  REQUIRE(a->size() == b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    for (int64_t e = 0; e < (*a)[i].numel(); ++e) {
      double x = (*a)[i].getDouble(e), y = (*b)[i].getDouble(e);
      CHECK_MESSAGE(std::abs(x - y) <= tolerance * std::max(1.0, std::abs(x)), "output ", before.outputs()[i].name,
                    " element ", e, ": ", x, " vs ", y, " (SMELT_TEST_SEED=", seed, ")");
    }
  }
}

// loss = sum(tanh(op(x) @ v)), as in attention: the incoming gradient of op comes back through a matmul
// of values that depend on the forward, so forward and backward are separate kernels.
constexpr const char* kSoftmax = R"(graph @g(%x: f64[16,64], %v: f64[64,8]) {
  %0 = softmax(%x) : f64[16,64]
  %1 = matmul(%0, %v) : f64[16,8]
  %2 = tanh(%1) : f64[16,8]
  %3 = reduce_sum(%2) : f64[]
  return loss = %3
})";
constexpr const char* kLogSoftmax = R"(graph @g(%x: f64[16,64], %v: f64[64,8]) {
  %0 = log_softmax(%x) : f64[16,64]
  %1 = matmul(%0, %v) : f64[16,8]
  %2 = tanh(%1) : f64[16,8]
  %3 = reduce_sum(%2) : f64[]
  return loss = %3
})";
constexpr const char* kLayerNorm = R"(graph @g(%x: f64[16,64], %s: f64[64], %b: f64[64], %v: f64[64,8]) {
  %0 = layer_norm(%x, %s, %b) : f64[16,64]
  %1 = matmul(%0, %v) : f64[16,8]
  %2 = tanh(%1) : f64[16,8]
  %3 = reduce_sum(%2) : f64[]
  return loss = %3
})";
// loss = sum(op(x) * w): nothing between forward and backward, which then share one kernel.
constexpr const char* kSoftmaxAdjacent = R"(graph @g(%x: f64[16,64], %w: f64[16,64]) {
  %0 = softmax(%x) : f64[16,64]
  %1 = mul(%0, %w) : f64[16,64]
  %2 = reduce_sum(%1) : f64[]
  return loss = %2
})";

std::string describeRows(const std::vector<KernelSummary>& rows) {
  std::string text;
  for (const KernelSummary& k : rows) text += fmt::format("{}{} ops/{} sweeps", text.empty() ? "" : ", ", k.ops, k.sweeps);
  return text;
}

/// Forward: one row kernel of at most `forwardSweeps` sweeps. Forward + backward: one more row kernel
/// for the backward, of at most 2 sweeps.
void checkRowSweeps(const char* text, std::vector<std::string> wrt, std::string name, int64_t forwardSweeps) {
  Graph forward = testing::parseOrFail(text);
  Graph fusedForward = optimized(forward);
  auto rows = rowKernels(fusedForward, {16, 64}, {1});
  REQUIRE_MESSAGE(rows.size() == 1, name, " forward:\n", toText(fusedForward));
  CHECK_MESSAGE(rows[0].sweeps <= forwardSweeps, name, " forward takes ", rows[0].sweeps, " sweeps:\n", toText(fusedForward));
  checkSameResults(forward, fusedForward, 1e-12);

  Graph training = withGradients(text, wrt);
  Graph fusedTraining = optimized(training);
  rows = rowKernels(fusedTraining, {16, 64}, {1});
  MESSAGE(name, " forward+backward: row kernels ", describeRows(rows), "; ", kernelsOf(training), " -> ",
          kernelsOf(fusedTraining), " kernels");
  CHECK_MESSAGE(rows.size() == 2, name, " forward+backward:\n", toText(fusedTraining));
  if (rows.size() == 2) CHECK_MESSAGE(rows[1].sweeps <= 2, name, " backward takes ", rows[1].sweeps, " sweeps");
  for (const KernelSummary& k : rows) {
    CHECK_MESSAGE(k.sweeps <= std::max<int64_t>(forwardSweeps, 2), name, " forward+backward has a ", k.sweeps, "-sweep row kernel:\n",
                  toText(fusedTraining));
  }
  checkSameResults(training, fusedTraining, 1e-12);
}

}  // namespace

// softmax and log_softmax forward sweep a row three times (max, sum of exp(x - max), write), as the
// reference and PyTorch compute them; a row that fits in cache is still read from memory once.
TEST_CASE("fusion: softmax is one kernel of three sweeps forward and two backward") {
  checkRowSweeps(kSoftmax, {"x"}, "softmax", 3);
}

TEST_CASE("fusion: log_softmax is one kernel of three sweeps forward and two backward") {
  checkRowSweeps(kLogSoftmax, {"x"}, "log_softmax", 3);
}

TEST_CASE("fusion: layer_norm is one kernel of two sweeps, forward and backward") {
  checkRowSweeps(kLayerNorm, {"x", "s", "b"}, "layer_norm", 2);
}

TEST_CASE("fusion: softmax's forward and backward with nothing between share one kernel of four sweeps") {
  // Cheaper than two kernels of 3 + 2 sweeps: y never goes to memory and x and w are read in one kernel.
  Graph training = withGradients(kSoftmaxAdjacent, {"x"});
  Graph fused = optimized(training);
  auto rows = rowKernels(fused, {16, 64}, {1});
  REQUIRE_MESSAGE(rows.size() == 1, toText(fused));
  CHECK(rows[0].sweeps == 4);
  checkSameResults(training, fused, 1e-12);
}

TEST_CASE("fusion: a sum of squares is one kernel of one sweep") {
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[32,128]) {
  %0 = mul(%x, %x) : f32[32,128]
  %1 = reduce_sum(%0) {axes = [1]} : f32[32]
  return y = %1
})");
  Graph fused = optimized(graph);
  REQUIRE(kernelsOf(fused) == 1);
  auto rows = rowKernels(fused, {32, 128}, {1});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].sweeps == 1);
  CHECK(rows[0].ops == 2);
}

constexpr const char* kMlpTraining = R"(graph @mlp(%x: f32[64,784], %t: f32[64,10], %w1: f32[784,256], %b1: f32[256], %w2: f32[256,10], %b2: f32[10]) {
  %h1 = matmul(%x, %w1) : f32[64,256]
  %a1 = add(%h1, %b1) : f32[64,256]
  %r1 = relu(%a1) : f32[64,256]
  %h2 = matmul(%r1, %w2) : f32[64,10]
  %a2 = add(%h2, %b2) : f32[64,10]
  %lp = log_softmax(%a2) {axis = 1} : f32[64,10]
  %m = mul(%lp, %t) : f32[64,10]
  %s = reduce_mean(%m) : f32[]
  %loss = neg(%s) : f32[]
  return loss = %loss
})";

TEST_CASE("fusion: an MLP training graph, relu's backward inside a kernel with the incoming gradient") {
  Graph training = withGradients(kMlpTraining, {"w1", "b1", "w2", "b2"});
  Graph fused = optimized(training);
  MESSAGE("mlp forward+backward: ", training.numNodes(), " nodes, ", kernelsOf(training), " kernels -> ",
          kernelsOf(fused), " kernels");
  CHECK(kernelsOf(fused) * 3 <= kernelsOf(training));
  // Every op of relu's backward runs inside a fused kernel that also reads the incoming gradient (the
  // result of the matmul that carries it back from the next layer).
  bool foundReluBackward = false;
  for (const auto& node : fused.nodes()) {
    CHECK_MESSAGE(node->sourceName().find("grad of relu") == std::string::npos, "a lone relu-backward kernel: ",
                  fused.labelOf(*node));
    if (node->opName() != "fused") continue;
    const Graph& body = *std::get<GraphRef>(node->attrs().at("body"));
    for (const auto& inner : body.nodes()) {
      if (inner->opName() != "where" || inner->sourceName().find("grad of relu") == std::string::npos) continue;
      foundReluBackward = true;
      // The where selects the incoming gradient: one of its operands is a kernel input produced by a
      // matmul/gemm (the incoming gradient), not recomputed here.
      bool readsIncoming = false;
      for (size_t i = 0; i < node->numOperands(); ++i) {
        const Node* producer = node->operand(i)->producer();
        bool fromGemm = producer && (producer->opName() == "gemm" || producer->opName() == "matmul");
        for (const Value* o : inner->operands()) readsIncoming = readsIncoming || (fromGemm && o == body.inputs()[i]);
      }
      CHECK(readsIncoming);
    }
  }
  CHECK(foundReluBackward);
  // f32: the decomposed log_softmax rounds x - logsumexp(x) to f32 where the reference rounds the
  // result once, a few ulps of the logits' magnitude, which the backward carries on.
  checkSameResults(training, fused, 1e-3);
}

TEST_CASE("fusion: a fused graph prints, parses back the same, and differentiates like the unfused one") {
  Graph forward = testing::parseOrFail(R"(graph @g(%x: f64[8,16], %w: f64[16,16], %b: f64[16]) {
  %0 = matmul(%x, %w) : f64[8,16]
  %1 = add(%0, %b) : f64[8,16]
  %2 = tanh(%1) : f64[8,16]
  %3 = softmax(%2) : f64[8,16]
  %4 = mul(%3, %3) : f64[8,16]
  %5 = reduce_sum(%4) : f64[]
  return y = %5
})");
  Graph fused = optimized(forward);
  std::string text = toText(fused);
  auto reparsed = parseGraph(text);
  REQUIRE_MESSAGE(reparsed.ok(), (reparsed.ok() ? "" : reparsed.error().message()));
  CHECK(toText(*reparsed) == text);
  // Gradients through `fused` nodes come from their bodies (the op's decomposition).
  Graph gradUnfused = forward.clone();
  Graph gradFused = fused.clone();
  std::vector<std::string> wrt = {"x", "w", "b"};
  auto g1 = gradientOfOutputs(gradUnfused, wrt);
  auto g2 = gradientOfOutputs(gradFused, wrt);
  REQUIRE_MESSAGE(g2.ok(), (g2.ok() ? "" : g2.error().message()));
  REQUIRE(g1.ok());
  for (size_t i = 0; i < wrt.size(); ++i) {
    gradUnfused.addOutput(wrt[i] + ".grad", (*g1)[i]);
    gradFused.addOutput(wrt[i] + ".grad", (*g2)[i]);
  }
  checkSameResults(gradUnfused, gradFused, 1e-12);
}
