// Fusion under a memory budget (passes/rematerialize.h): the planned peak of the MLP and the CNN of
// test_plan_memory, forward + backward, fits budgets below their unbudgeted peak, the graph computes
// what it did (reference interpreter, random inputs), a budget no plan fits is an error naming the
// buffers at the peak, recomputed nodes stay out of earlier kernels, and the pipeline syntax and byte
// counts that carry a budget.
#include "autodiff/gradient_tape.h"
#include "ir/interpreter.h"
#include "ir/support/byte_count.h"
#include "passes/fusion_groups.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "passes/rematerialize.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace smelt;

namespace {

constexpr const char* kRematMlp =
    R"(graph @mlp(%x: f32[64,64], %w1: f32[64,64], %w2: f32[64,64], %w3: f32[64,64], %w4: f32[64,10]) {
  %0 = matmul(%x, %w1) : f32[64,64]
  %1 = relu(%0) : f32[64,64]
  %2 = matmul(%1, %w2) : f32[64,64]
  %3 = tanh(%2) : f32[64,64]
  %4 = matmul(%3, %w3) : f32[64,64]
  %5 = relu(%4) : f32[64,64]
  %6 = matmul(%5, %w4) : f32[64,10]
  %7 = log_softmax(%6) {axis = 1} : f32[64,10]
  %8 = reduce_mean(%7) : f32[]
  return loss = %8
})";

constexpr const char* kRematCnn =
    R"(graph @cnn(%x: f32[4,3,16,16], %c1: f32[8,3,3,3], %s: f32[8], %bb: f32[8], %rm: f32[8], %rv: f32[8], %c2: f32[8,8,3,3], %c3: f32[8,8,3,3], %c4: f32[8,8,3,3], %fc: f32[10,8]) {
  %0 = conv2d(%x, %c1) {padding = [1, 1, 1, 1]} : f32[4,8,16,16]
  %1, %2, %3 = batch_norm_train(%0, %s, %bb, %rm, %rv) : f32[4,8,16,16], f32[8], f32[8]
  %4 = relu(%1) : f32[4,8,16,16]
  %5 = conv2d(%4, %c2) {padding = [1, 1, 1, 1]} : f32[4,8,16,16]
  %a = relu(%5) : f32[4,8,16,16]
  %b = conv2d(%a, %c3) {padding = [1, 1, 1, 1]} : f32[4,8,16,16]
  %c = tanh(%b) : f32[4,8,16,16]
  %d = conv2d(%c, %c4) {padding = [1, 1, 1, 1]} : f32[4,8,16,16]
  %6 = relu(%d) : f32[4,8,16,16]
  %7 = global_avg_pool2d(%6) : f32[4,8,1,1]
  %8 = flatten(%7) : f32[4,8]
  %9 = gemm(%8, %fc) {trans_b = 1} : f32[4,10]
  %10 = log_softmax(%9) {axis = 1} : f32[4,10]
  %11 = reduce_mean(%10) : f32[]
  return loss = %11
})";

/// `text` with the gradients of its output with respect to `weights` as outputs, after the default
/// pipeline's passes before fusion.
Graph training(const char* text, const std::vector<std::string>& weights) {
  Graph graph = testing::parseOrFail(text);
  Expected<std::vector<Value*>> grads = gradientOfOutputs(graph, weights);
  REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
  for (size_t i = 0; i < weights.size(); ++i) graph.addOutput(weights[i] + ".grad", (*grads)[i]);
  PassManagerOptions options;
  options.verify = true;
  auto pm = PassManager::fromPipeline("decompose,canonicalize,fold,cse,dce,split-reductions", options);
  REQUIRE(pm.ok());
  REQUIRE(pm->run(graph).ok());
  return graph;
}

int64_t fusedPeak(const Graph& graph) {
  Graph copy = graph.clone();
  auto pm = PassManager::fromPipeline("fuse");
  REQUIRE(pm.ok());
  REQUIRE(pm->run(copy).ok());
  return planMemory(copy).peakBytes;
}

void checkSameResults(const Graph& before, const Graph& after) {
  uint64_t seed = testing::testSeed();
  INFO("seed ", seed);
  TensorMap feeds = testing::randomFeeds(before, seed);
  auto expected = interpret(before, feeds);
  auto actual = interpret(after, feeds);
  REQUIRE(expected.ok());
  REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
  REQUIRE(expected->size() == actual->size());
  for (size_t i = 0; i < expected->size(); ++i) {
    std::string diff = testing::compareTensors((*actual)[i], (*expected)[i], 1e-5);
    CHECK_MESSAGE(diff.empty(), before.outputs()[i].name, ": ", diff);
  }
}

/// Fuses `graph` under budgets of `fractions` of its unbudgeted peak: each fits, verifies, computes the
/// same, and recomputes something; a tighter budget never recomputes fewer FLOPs.
void checkBudgets(const Graph& graph, std::initializer_list<double> fractions, const char* name) {
  int64_t peak = fusedPeak(graph);
  int64_t previousFlops = 0;
  for (double fraction : fractions) {
    int64_t budget = static_cast<int64_t>(fraction * static_cast<double>(peak));
    INFO(name, " under ", fraction, " of its peak ", peak, ": ", budget, " bytes");
    Graph copy = graph.clone();
    Expected<RematReport> report = fuseWithinBudget(copy, budget);
    REQUIRE_MESSAGE(report.ok(), (report.ok() ? "" : report.error().message()));
    MemoryPlan plan = planMemory(copy);
    CHECK(checkMemoryPlan(copy, plan).ok());
    CHECK(plan.peakBytes <= budget);
    CHECK(report->peakAfter == plan.peakBytes);
    CHECK(report->peakBefore == peak);
    CHECK(report->recomputedNodes > 0);
    CHECK(report->recomputedFlops >= previousFlops);
    previousFlops = report->recomputedFlops;
    CHECK(std::any_of(copy.nodes().begin(), copy.nodes().end(), [](const auto& n) { return n->opName() == "fused"; }));
    checkSameResults(graph, copy);
  }
}

}  // namespace

TEST_CASE("rematerialize: an MLP's forward + backward fits budgets below its peak and computes the same") {
  checkBudgets(training(kRematMlp, {"w1", "w2", "w3", "w4"}), {0.9, 0.75}, "mlp");
}

TEST_CASE("rematerialize: a CNN with batch norm fits budgets below its peak and computes the same") {
  checkBudgets(training(kRematCnn, {"c1", "c2", "c3", "c4", "fc"}), {0.9, 0.7}, "cnn");
}

TEST_CASE("rematerialize: a budget at or above the peak fuses as the fuse pass does") {
  Graph graph = training(kRematMlp, {"w1", "w2", "w3", "w4"});
  int64_t peak = fusedPeak(graph);
  Graph copy = graph.clone();
  Expected<RematReport> report = fuseWithinBudget(copy, peak);
  REQUIRE(report.ok());
  CHECK(report->recomputedNodes == 0);
  CHECK(report->peakAfter == peak);
}

TEST_CASE("rematerialize: a budget no plan fits names the buffers at the peak and the smallest budget found") {
  Graph graph = training(kRematMlp, {"w1", "w2", "w3", "w4"});
  size_t nodes = graph.numNodes();
  Expected<RematReport> report = fuseWithinBudget(graph, 4096);
  REQUIRE_FALSE(report.ok());
  std::string message = report.error().message();
  INFO(message);
  CHECK(message.find("memory budget 4.0 KiB (4096 bytes): no plan found fits") != std::string::npos);
  CHECK(message.find("the smallest found needs") != std::string::npos);
  CHECK(message.find("buffers live at its peak") != std::string::npos);
  CHECK(message.find("f32[64,64]") != std::string::npos);
  CHECK(message.find("grad of") != std::string::npos);  // backward nodes, named with their forward node
  CHECK(graph.numNodes() == nodes);                     // unchanged
  CHECK_FALSE(fuseWithinBudget(graph, 0).ok());
  // Long searches (recomputations that make earlier ones dead) end in a plan that fits or this error.
  for (const char* text : {kRematCnn, kRematMlp}) {
    Graph model = text == kRematCnn ? training(kRematCnn, {"c1", "c2", "c3", "c4", "fc"})
                                    : training(kRematMlp, {"w1", "w2", "w3", "w4"});
    int64_t peak = fusedPeak(model);
    for (int64_t percent : {25, 40, 50, 60}) {
      Graph copy = model.clone();
      Expected<RematReport> tight = fuseWithinBudget(copy, peak * percent / 100);
      if (tight.ok()) {
        CHECK(planMemory(copy).peakBytes <= peak * percent / 100);
      } else {
        CHECK(tight.error().message().find("no plan found fits") != std::string::npos);
      }
    }
  }
}

TEST_CASE("rematerialize: a recomputed node fuses with its consumers, never into a kernel placed before it") {
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[64]) {
  %0 = exp(%x) : f32[64]
  %1 = neg(%0) : f32[64]
  %2 = mul(%1, %1) : f32[64]
  %3 = neg(%0) : f32[64]
  %4 = add(%3, %2) : f32[64]
  return y = %4
})");
  const Node* early = graph.nodes()[1].get();
  const Node* recomputed = graph.nodes()[3].get();
  const Node* consumer = graph.nodes()[4].get();
  FusionPlan plain = planFusion(graph);
  REQUIRE(plain.groupOf.count(recomputed));
  CHECK(plain.groupOf.at(recomputed) == plain.groupOf.at(early));
  FusionOptions options;
  options.recomputedAt[recomputed] = 3;
  FusionPlan late = planFusion(graph, options);
  REQUIRE(late.groupOf.count(recomputed));
  CHECK(late.groupOf.at(recomputed) == late.groupOf.at(consumer));
  CHECK((!late.groupOf.count(early) || late.groupOf.at(early) != late.groupOf.at(recomputed)));
}

TEST_CASE("rematerialize: pipelines carry a budget as the fuse pass's option") {
  CHECK(PassManager::fromPipeline("cse,fuse{memory-budget=64K},dce").ok());
  auto split = splitPipeline("cse, fuse{memory-budget=1M,x=2} ,dce");
  REQUIRE(split.ok());
  CHECK(*split == std::vector<std::string>{"cse", "fuse{memory-budget=1M,x=2}", "dce"});
  auto unknown = PassManager::fromPipeline("fuse{memory-budget=1M,x=2}");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message().find("takes no option 'x'") != std::string::npos);
  auto none = PassManager::fromPipeline("dce{memory-budget=1M}");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message().find("pass 'dce' takes no option 'memory-budget'") != std::string::npos);
  CHECK_FALSE(PassManager::fromPipeline("fuse{memory-budget}").ok());
  CHECK_FALSE(PassManager::fromPipeline("fuse{memory-budget=lots}").ok());
  auto budgeted = pipelineWithMemoryBudget(kDefaultPipeline, 1000);
  REQUIRE(budgeted.ok());
  CHECK(budgeted->ends_with(",fuse{memory-budget=1000}"));
  CHECK_FALSE(pipelineWithMemoryBudget("cse,dce", 1000).ok());
  CHECK_FALSE(pipelineWithMemoryBudget("fuse{memory-budget=5}", 1000).ok());
}

TEST_CASE("byte counts: digits with binary units, and clear errors") {
  CHECK(parseByteCount("1048576").value() == 1048576);
  CHECK(parseByteCount("64K").value() == 65536);
  CHECK(parseByteCount("64kib").value() == 65536);
  CHECK(parseByteCount("2M").value() == 2 << 20);
  CHECK(parseByteCount("1.5GiB").value() == 3LL << 29);
  CHECK(parseByteCount("12B").value() == 12);
  for (const char* bad : {"", "K", "12x", "1.5", "1..5M", "-3", "99999999T"}) {
    auto parsed = parseByteCount(bad);
    CHECK_MESSAGE(!parsed.ok(), bad);
    if (!parsed.ok()) CHECK(parsed.error().message().find("is not a byte count") != std::string::npos);
  }
  CHECK(formatByteCount(100) == "100 bytes");
  CHECK(formatByteCount(3 << 20) == "3.0 MiB (3145728 bytes)");
}
