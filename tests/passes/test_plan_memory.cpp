// plan-memory: in-place reuse and offsets on a small chain, the pass leaving the graph unchanged, and
// the arena of an MLP and a CNN, forward and forward + backward, unfused and after the default
// pipeline (fused kernels), within 1.1x of the lower bound with
// no two live buffers overlapping (checkMemoryPlan). resnet18 is checked by
// tests/models/check_memory_plan.py through `smelt inspect`.
#include "autodiff/gradient_tape.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "tests/passes/optimized.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

namespace {

// Weights are graph inputs so the text needs no values; gradients are taken with respect to them.
constexpr const char* kMlp = R"(graph @mlp(%x: f32[64,784], %w1: f32[784,256], %b1: f32[256], %w2: f32[256,128], %b2: f32[128], %w3: f32[128,10], %b3: f32[10]) {
  %h1 = matmul(%x, %w1) : f32[64,256]
  %a1 = add(%h1, %b1) : f32[64,256]
  %r1 = relu(%a1) : f32[64,256]
  %h2 = matmul(%r1, %w2) : f32[64,128]
  %a2 = add(%h2, %b2) : f32[64,128]
  %r2 = tanh(%a2) : f32[64,128]
  %h3 = matmul(%r2, %w3) : f32[64,10]
  %a3 = add(%h3, %b3) : f32[64,10]
  %lp = log_softmax(%a3) {axis = 1} : f32[64,10]
  %loss = reduce_mean(%lp) : f32[]
  return loss = %loss
})";

constexpr const char* kCnn = R"(graph @cnn(%x: f32[8,3,32,32], %c1: f32[16,3,3,3], %c1b: f32[16], %s: f32[16], %bb: f32[16], %rm: f32[16], %rv: f32[16], %c2: f32[32,16,3,3], %fc: f32[10,32], %fcb: f32[10]) {
  %0 = conv2d(%x, %c1, %c1b) {padding = [1, 1, 1, 1]} : f32[8,16,32,32]
  %1, %2, %3 = batch_norm_train(%0, %s, %bb, %rm, %rv) : f32[8,16,32,32], f32[16], f32[16]
  %4 = relu(%1) : f32[8,16,32,32]
  %5 = max_pool2d(%4) {kernel = [2, 2], stride = [2, 2]} : f32[8,16,16,16]
  %6 = conv2d(%5, %c2) {padding = [1, 1, 1, 1], stride = [2, 2]} : f32[8,32,8,8]
  %7 = relu(%6) : f32[8,32,8,8]
  %8 = global_avg_pool2d(%7) : f32[8,32,1,1]
  %9 = flatten(%8) : f32[8,32]
  %10 = gemm(%9, %fc, %fcb) {trans_b = 1} : f32[8,10]
  %11 = log_softmax(%10) {axis = 1} : f32[8,10]
  %12 = reduce_mean(%11) : f32[]
  return loss = %12
})";

// Plans `graph`, checks the plan, and checks the 1.1x target.
void checkPlan(const Graph& graph, const std::string& what) {
  MemoryPlan plan = planMemory(graph);
  Status valid = checkMemoryPlan(graph, plan);
  CHECK_MESSAGE(valid.ok(), what, ": ", (valid.ok() ? "" : valid.error().message()));
  double ratio = static_cast<double>(plan.peakBytes) / static_cast<double>(plan.lowerBoundBytes);
  MESSAGE(what, ": ", graph.numNodes(), " nodes, ", plan.numBuffers, " buffers, ", plan.inPlaceReuses,
          " in place, peak ", plan.peakBytes, " bytes, lower bound ", plan.lowerBoundBytes, ", ratio ", ratio);
  CHECK(plan.peakBytes >= plan.lowerBoundBytes);
  CHECK_MESSAGE(ratio <= 1.1, what, ": peak ", plan.peakBytes, " > 1.1 x lower bound ", plan.lowerBoundBytes);
}

// The graph after the default pipeline (fusion included): the schedule the arena is planned for when
// the graph runs.
Graph optimized(const Graph& graph) { return testing::optimizedOrFail(graph); }

// Unfused (every node a kernel) and fused, forward and forward + backward.
void checkForwardAndBackward(const char* text, std::vector<std::string> weights, const char* name) {
  Graph forward = testing::parseOrFail(text);
  checkPlan(forward, name);
  checkPlan(optimized(forward), std::string(name) + " fused");
  Graph training = testing::parseOrFail(text);
  Expected<std::vector<Value*>> grads = gradientOfOutputs(training, weights);
  REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
  for (size_t i = 0; i < weights.size(); ++i) training.addOutput(weights[i] + ".grad", (*grads)[i]);
  checkPlan(training, std::string(name) + " forward+backward");
  checkPlan(optimized(training), std::string(name) + " forward+backward fused");
}

}  // namespace

TEST_CASE("plan-memory: an elementwise chain runs in place in one buffer") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[256]) {
  %0 = exp(%x) : f32[256]
  %1 = neg(%0) : f32[256]
  %2 = mul(%1, %x) : f32[256]
  return y = %2
})");
  MemoryPlan plan = planMemory(g);
  REQUIRE(checkMemoryPlan(g, plan).ok());
  CHECK(plan.peakBytes == 1024);
  CHECK(plan.lowerBoundBytes == 1024);
  CHECK(plan.numBuffers == 1);
  CHECK(plan.inPlaceReuses == 1);  // %1 over %0
  // The input %x and the output %2 are the caller's: never in the arena, never written over.
  CHECK(plan.find(g.inputs()[0]) == nullptr);
  CHECK(plan.find(g.nodes()[2]->result()) == nullptr);
}

TEST_CASE("plan-memory: keeps live buffers apart, sizes aligned to 64 bytes") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[16]) {
  %0 = exp(%x) : f32[16]
  %1 = neg(%0) : f32[16]
  %2 = add(%1, %0) : f32[16]
  %3 = reduce_sum(%2) : f32[]
  %4 = mul(%3, %3) : f32[]
  return y = %4, z = %1
})");
  MemoryPlan plan = planMemory(g);
  REQUIRE(checkMemoryPlan(g, plan).ok());
  const auto& nodes = g.nodes();
  // %1 is an output (the caller's), so not in the arena. %0 is still read by %2; %2 takes %0's place
  // (%0 dies at %2), and the scalar %3 reserves 64 bytes while %2 is live: 128 bytes at %3.
  CHECK(plan.find(nodes[1]->result()) == nullptr);
  CHECK(plan.find(nodes[2]->result())->inPlaceOf == nodes[0]->result());
  CHECK(plan.find(nodes[3]->result())->offset != plan.find(nodes[2]->result())->offset);
  CHECK(plan.peakBytes == 128);
  CHECK(plan.lowerBoundBytes == 128);
}

TEST_CASE("plan-memory: the pass records the plan and does not change the graph") {
  Graph g = testing::parseOrFail(kMlp);
  std::string before = toText(g);
  PassManagerOptions options;
  options.verify = true;
  Expected<PassManager> manager = PassManager::fromPipeline("plan-memory", options);
  REQUIRE(manager.ok());
  Expected<bool> changed = manager->run(g);
  REQUIRE(changed.ok());
  CHECK_FALSE(*changed);
  CHECK(toText(g) == before);
  MemoryPlan plan = planMemory(g);
  const auto& stats = manager->context().statistics();
  CHECK(stats.at("plan-memory.peak bytes") == plan.peakBytes);
  CHECK(stats.at("plan-memory.lower bound bytes") == plan.lowerBoundBytes);
  CHECK(stats.at("plan-memory.buffers") == plan.numBuffers);
  CHECK(stats.at("plan-memory.in-place reuses") == plan.inPlaceReuses);
}

TEST_CASE("plan-memory: an MLP forward and forward+backward within 1.1x of the lower bound") {
  checkForwardAndBackward(kMlp, {"w1", "b1", "w2", "b2", "w3", "b3"}, "mlp");
}

TEST_CASE("plan-memory: a CNN forward and forward+backward within 1.1x of the lower bound") {
  checkForwardAndBackward(kCnn, {"x", "c1", "c1b", "s", "bb", "c2", "fc", "fcb"}, "cnn");
}

TEST_CASE("plan-memory: a contiguous concat's operands are written in its place, a contiguous slice read in its operand") {
  // 64 + 32 floats (256 and 128 bytes: each start 64-byte aligned) joined, then cut back at 64.
  Graph graph = testing::parseOrFail(R"(graph @v(%x: f32[64], %y: f32[32]) {
  %a = exp(%x) : f32[64]
  %b = exp(%y) : f32[32]
  %c = concat(%a, %b) {axis = 0} : f32[96]
  %d = exp(%c) : f32[96]
  %s = slice(%d) {starts = [64], ends = [96]} : f32[32]
  %t = slice(%d) {starts = [0], ends = [64]} : f32[64]
  %u = add(%s, %s) : f32[32]
  %w = reduce_sum(%t) : f32[]
  return u = %u, w = %w, d0 = %d
})");
  MemoryPlan plan = planMemory(graph);
  Status valid = checkMemoryPlan(graph, plan);
  CHECK_MESSAGE(valid.ok(), (valid.ok() ? "" : valid.error().message()));
  const Node* concat = nullptr;
  std::vector<const Node*> slices;
  for (const auto& n : graph.nodes()) {
    if (n->opName() == "concat") concat = n.get();
    if (n->opName() == "slice") slices.push_back(n.get());
  }
  REQUIRE(concat);
  CHECK(runsAsView(*concat, plan));
  const BufferAssignment* c = plan.find(concat->result());
  const BufferAssignment* b = plan.find(concat->operand(1));
  REQUIRE((c && b));
  CHECK(b->viewOf == concat->result());
  CHECK(b->offset == c->offset + 256);
  // %d is a graph output (the caller's tensor): its slices read it there and are not views of the arena.
  for (const Node* s : slices) CHECK_FALSE(runsAsView(*s, plan));
  CHECK(plan.views == 2);
}

TEST_CASE("plan-memory: views only where the bytes line up and nothing writes over them") {
  // Operands of 10 floats (40 bytes: the second would start unaligned); a slice with a step; a slice whose result
  // the next op overwrites in place (its bytes would change what the other slice reads).
  Graph graph = testing::parseOrFail(R"(graph @v(%x: f32[10], %y: f32[16], %z: f32[64]) {
  %a = exp(%x) : f32[10]
  %b = exp(%y) : f32[16]
  %c = concat(%a, %b) {axis = 0} : f32[26]
  %e = exp(%z) : f32[64]
  %s = slice(%e) {starts = [0], ends = [64], steps = [2]} : f32[32]
  %t = slice(%e) {starts = [0], ends = [32]} : f32[32]
  %n = neg(%t) : f32[32]
  %m = mul(%s, %n) : f32[32]
  return c = %c, m = %m
})");
  MemoryPlan plan = planMemoryWith(graph, true);
  CHECK(plan.views == 0);
  CHECK(checkMemoryPlan(graph, plan).ok());
}

TEST_CASE("plan-memory: a view that would raise the peak is not taken") {
  // The concat's first operand comes long before the second: laid in the concat's place it would keep all of it
  // alive from there, over the big temporaries between.
  Graph graph = testing::parseOrFail(R"(graph @v(%x: f32[16], %y: f32[4096], %z: f32[16]) {
  %a = exp(%x) : f32[16]
  %big = exp(%y) : f32[4096]
  %s = reduce_sum(%big) : f32[]
  %b = mul(%z, %s) : f32[16]
  %c = concat(%a, %b) {axis = 0} : f32[32]
  %d = exp(%c) : f32[32]
  return d = %d
})");
  MemoryPlan viewed = planMemoryWith(graph, true), plain = planMemoryWith(graph, false);
  REQUIRE(viewed.views > 0);
  CHECK(checkMemoryPlan(graph, viewed).ok());
  CHECK(viewed.peakBytes > plain.peakBytes);
  MemoryPlan chosen = planMemory(graph);
  CHECK(chosen.views == 0);
  CHECK(chosen.peakBytes == plain.peakBytes);
}

TEST_CASE("plan-memory: each view is taken where it keeps the peak, whatever the others do") {
  // %c's operands laid in its place would hold its bytes over %big, raising the peak; %g's are born right before
  // it, where its own bytes save the copy and lower what is live there: %g is a view, %c a copy.
  Graph graph = testing::parseOrFail(R"(graph @v(%x: f32[16], %y: f32[4096], %z: f32[16], %w: f32[16]) {
  %a = exp(%x) : f32[16]
  %big = exp(%y) : f32[4096]
  %s = reduce_sum(%big) : f32[]
  %b = mul(%z, %s) : f32[16]
  %c = concat(%a, %b) {axis = 0} : f32[32]
  %d = exp(%c) : f32[32]
  %e = exp(%w) : f32[16]
  %f = mul(%w, %w) : f32[16]
  %g = concat(%e, %f) {axis = 0} : f32[32]
  %h = add(%g, %d) : f32[32]
  return h = %h
})");
  MemoryPlan plain = planMemoryWith(graph, false);
  MemoryPlan chosen = planMemory(graph);
  Status valid = checkMemoryPlan(graph, chosen);
  CHECK_MESSAGE(valid.ok(), (valid.ok() ? "" : valid.error().message()));
  CHECK(chosen.peakBytes <= plain.peakBytes);
  const Node *c = nullptr, *g = nullptr;
  for (const auto& n : graph.nodes()) {
    if (n->opName() == "concat") (c ? g : c) = n.get();
  }
  REQUIRE((c && g));
  CHECK_FALSE(runsAsView(*c, chosen));
  CHECK(runsAsView(*g, chosen));
  CHECK(chosen.views == 2);
  // Without a budget both concats are views, and the peak grows.
  MemoryPlan unbounded = planMemoryWith(graph, true);
  CHECK(unbounded.views == 4);
  CHECK(unbounded.peakBytes > plain.peakBytes);
}
