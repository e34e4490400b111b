// Where data-parallel training's collectives run in the step's graph (frontend/nn/data_parallel.h): buckets fill
// in the order the backward pass produces the gradients, each start right after its bucket's last gradient, and
// runWaitsLate moves each wait to its first use with the earlier buckets' updates ahead of it. With no group of
// ranks the collectives pass values through, so the reordered graph must compute what the original does.
#include "frontend/nn/data_parallel.h"
#include "autodiff/gradient_tape.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "passes/plan_memory.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace smelt;

namespace {

// A three-layer MLP's SGD step whose parameters are listed first layer first but named so that a name-sorted
// state would list them otherwise; the backward pass produces the last layer's gradients first.
struct Step {
  Graph graph;
  std::vector<Value*> params;
};

Step mlpStep(int64_t bucketBytes, bool average = true) {
  Step s;
  Graph& g = s.graph;
  Value* x = g.addInput("x", {DType::f32, {6, 5}});
  const std::vector<std::pair<int64_t, int64_t>> layers{{5, 16}, {16, 12}, {12, 3}};
  std::vector<Value*> weights;
  for (size_t i = 0; i < layers.size(); ++i) {
    weights.push_back(g.addInput("w" + std::to_string(i), {DType::f32, {layers[i].first, layers[i].second}}));
  }
  // Listed as a state sorted by other names might list them: reversing this order is not the backward's.
  s.params = {weights[1], weights[0], weights[2]};
  GradientTape tape(g);
  for (Value* p : s.params) tape.watch(p);
  Builder b(g);
  Value* h = x;
  for (size_t i = 0; i < weights.size(); ++i) {
    h = b.op("matmul", {h, weights[i]});
    if (i + 1 < weights.size()) h = b.op("tanh", {h});
  }
  Value* loss = b.op("reduce_mean", {b.square(h)});
  auto grads = tape.gradient(loss, s.params);
  REQUIRE(grads.ok());
  tape.stopRecording();
  nn::DistributedOptions options;
  options.firstBucketBytes = bucketBytes;
  options.bucketBytes = bucketBytes;
  std::vector<Value*> averaged = average ? nn::averageOverRanks(b, *grads, options) : *grads;
  for (size_t i = 0; i < s.params.size(); ++i) {
    g.addOutput("new." + s.params[i]->name(), b.sub(s.params[i], b.scale(averaged[i], 0.1)));
  }
  g.addOutput("loss", loss);
  REQUIRE(b.status().ok());
  return s;
}

size_t positionOf(const Graph& g, const Node* node) {
  for (size_t i = 0; i < g.numNodes(); ++i) {
    if (g.nodes()[i].get() == node) return i;
  }
  return g.numNodes();
}

std::vector<const Node*> nodesOf(const Graph& g, std::string_view op) {
  std::vector<const Node*> out;
  for (const auto& n : g.nodes()) {
    if (n->opName() == op) out.push_back(n.get());
  }
  return out;
}

}  // namespace

TEST_CASE("data-parallel schedule: buckets follow the backward pass, each wait runs at its first use") {
  // One gradient per bucket (every gradient is larger than 64 bytes).
  Step s = mlpStep(64);
  Graph& g = s.graph;
  const auto starts = nodesOf(g, "all_reduce_start");
  REQUIRE(starts.size() == 3);
  // The last layer's gradient is produced first: the first bucket holds w2's, the last w0's.
  CHECK(starts[0]->operand(0)->type().numel() == 12 * 3);
  CHECK(starts[2]->operand(0)->type().numel() == 5 * 16);
  // Each start runs right after its bucket's gradient is complete, before the next layer's gradients.
  for (size_t k = 0; k + 1 < starts.size(); ++k) CHECK(positionOf(g, starts[k]) < positionOf(g, starts[k + 1]));

  Graph before = g.clone();
  REQUIRE(nn::runWaitsLate(g).ok());
  const auto waits = nodesOf(g, "all_reduce_wait");
  REQUIRE(waits.size() == 3);
  // The starts keep their order and places relative to each other; each wait comes after its start.
  const auto startsAfter = nodesOf(g, "all_reduce_start");
  for (size_t k = 0; k < 3; ++k) {
    CHECK(std::get<int64_t>(startsAfter[k]->attrs().at("tag")) == std::get<int64_t>(waits[k]->attrs().at("tag")));
    CHECK(positionOf(g, startsAfter[k]) < positionOf(g, waits[k]));
  }
  // Bucket k's update (the sub writing new.w(2-k)) runs before bucket k+1's wait.
  auto update = [&](const std::string& name) -> const Node* {
    for (const GraphOutput& out : g.outputs()) {
      if (out.name == name) return out.value->producer();
    }
    return nullptr;
  };
  for (size_t k = 0; k + 1 < waits.size(); ++k) {
    CHECK(positionOf(g, update("new.w" + std::to_string(2 - k))) < positionOf(g, waits[k + 1]));
  }
  // The same step, values for values.
  TensorMap feeds;
  uint64_t seed = testing::testSeed();
  for (const Value* in : g.inputs()) feeds.emplace(in->name(), testing::randomTensor(in->type(), seed++));
  auto expected = interpret(before, feeds);
  auto got = interpret(g, feeds);
  REQUIRE(expected.ok());
  REQUIRE(got.ok());
  REQUIRE(got->size() == expected->size());
  for (size_t i = 0; i < got->size(); ++i) testing::checkClose((*got)[i], (*expected)[i], 0.0);
}

TEST_CASE("data-parallel schedule: a graph without waits keeps its order") {
  Graph g;
  Value* x = g.addInput("x", {DType::f32, {4}});
  Builder b(g);
  g.addOutput("y", b.op("tanh", {b.square(x)}));
  std::vector<const Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  REQUIRE(nn::runWaitsLate(g).ok());
  for (size_t i = 0; i < order.size(); ++i) CHECK(g.nodes()[i].get() == order[i]);
}

TEST_CASE("graph: reorderNodes takes a valid order and refuses others, changing nothing") {
  Graph g;
  Value* x = g.addInput("x", {DType::f32, {4}});
  Builder b(g);
  Value* a = b.square(x);
  Value* c = b.op("tanh", {x});
  Value* d = b.add(a, c);
  g.addOutput("d", d);
  const Node *na = a->producer(), *nc = c->producer(), *nd = d->producer();
  REQUIRE(nn::runWaitsLate(g).ok());
  CHECK(g.reorderNodes({nc, na, nd}).ok());
  CHECK(g.nodes()[0].get() == nc);
  auto late = g.reorderNodes({nd, nc, na});
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().message().find("which produces its operand") != std::string::npos);
  CHECK(g.nodes()[0].get() == nc);  // unchanged
  CHECK_FALSE(g.reorderNodes({nc, na}).ok());
  CHECK_FALSE(g.reorderNodes({nc, nc, nd}).ok());
}


TEST_CASE("data-parallel buckets: whole arena alignments first, so each gradient starts aligned in its bucket") {
  // One bucket of every gradient: w2's (12x3 floats, 144 bytes) is produced first but goes last, after w1's (768
  // bytes) and w0's (320), so that the planner may lay each producer's buffer at its offset in the bucket.
  Step s = mlpStep(1 << 20);
  const auto concats = nodesOf(s.graph, "concat");
  REQUIRE(concats.size() == 1);
  std::vector<int64_t> sizes;
  for (const Value* operand : concats[0]->operands()) sizes.push_back(operand->type().numel());
  CHECK(sizes == std::vector<int64_t>{16 * 12, 5 * 16, 12 * 3});
  int64_t offset = 0;
  for (size_t k = 0; k + 1 < sizes.size(); ++k) CHECK((offset += sizes[k] * 4) % kArenaAlignment == 0);
  // Each update reads its own gradient back: the step (a world of one averages nothing) is the plain SGD step's.
  Step plain = mlpStep(1 << 20, false);
  TensorMap feeds;
  uint64_t seed = testing::testSeed();
  for (const Value* in : s.graph.inputs()) feeds.emplace(in->name(), testing::randomTensor(in->type(), seed++));
  auto got = interpret(s.graph, feeds);
  auto expected = interpret(plain.graph, feeds);
  REQUIRE(got.ok());
  REQUIRE(expected.ok());
  REQUIRE(got->size() == expected->size());
  for (size_t i = 0; i < got->size(); ++i) testing::checkClose((*got)[i], (*expected)[i], 0.0);
}
