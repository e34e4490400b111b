// Registry-wide gradient tests: every differentiable op's gradient (its rule, or the decomposition it
// is differentiated through) matches central finite differences in f64 on fresh random inputs, and so
// does its second-order Hessian-vector product. Built from each op's IR example: no per-op test code.
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/builder.h"
#include "tests/autodiff/gradient_check.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <set>

using namespace smelt;

namespace {

std::string f64Example(const OpDef& op) { return op.exampleIn(DType::f64); }

// Random inputs away from trouble: both signs first; magnitudes only when the op's domain needs it
// (log, sqrt, pow of negatives).
TensorMap feedsFor(const Graph& g, uint64_t seed) {
  TensorMap feeds = testing::randomFeedsF64(g, seed, false);
  if (testing::outputsFinite(g, feeds)) return feeds;
  return testing::randomFeedsF64(g, seed, true);
}

// Ops whose gradient differs from the derivative by definition: stop_gradient is the identity with
// a zero gradient. Checked by the tape tests instead.
bool checkable(const OpDef& op, const Graph& g) {
  if (op.name == "stop_gradient") return false;
  bool in = false, out = false;
  for (const Value* v : g.inputs()) in = in || v->dtype() == DType::f64;
  for (const GraphOutput& o : g.outputs()) out = out || o.value->dtype() == DType::f64;
  return in && out;
}

}  // namespace

TEST_CASE("every op with floating-point results is differentiable, except comparisons and logic") {
  // Ops whose results carry no gradient by nature: predicates and boolean logic (bool results) and
  // literals and ranges (no operands). Everything else that computes floats must have a gradient rule
  // or a decomposition. max_pool2d_indices' results are positions (integers), whatever its input's dtype.
  const std::set<std::string> exempt = {"constant", "range", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not",
                                        "max_pool2d_indices"};
  for (const OpDef* op : OpRegistry::global().all()) {
    CAPTURE(op->name);
    if (exempt.count(op->name)) {
      CHECK(!op->differentiable());
      continue;
    }
    if (op->dtypes.contains(DType::f64)) CHECK_MESSAGE(op->differentiable(), op->name << " has no gradient");
  }
}

TEST_CASE("every differentiable op's gradient matches central finite differences in f64") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  int checked = 0;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (!op->differentiable() || !op->dtypes.contains(DType::f64)) continue;
    CAPTURE(op->name);
    Graph g = testing::parseOrFail(f64Example(*op));
    if (!checkable(*op, g)) continue;
    TensorMap feeds = feedsFor(g, seed);
    REQUIRE_MESSAGE(testing::outputsFinite(g, feeds), "the example gives non-finite outputs on random inputs");
    testing::GradientCheck check = testing::checkGradients(g, feeds, seed);
    CHECK_MESSAGE(check.error.empty(), check.error);
    CHECK_MESSAGE(check.worstRelativeError < 1e-6, check.report);
    ++checked;
  }
  MESSAGE("checked " << checked << " ops");
}

TEST_CASE("every differentiable op's Hessian-vector product matches finite differences of its gradient") {
  uint64_t seed = testing::testSeed() + 1;
  CAPTURE(seed);
  for (const OpDef* op : OpRegistry::global().all()) {
    if (!op->differentiable() || !op->dtypes.contains(DType::f64)) continue;
    CAPTURE(op->name);
    Graph g = testing::parseOrFail(f64Example(*op));
    if (!checkable(*op, g)) continue;
    TensorMap feeds = feedsFor(g, seed);
    testing::GradientCheck check = testing::checkHessianVectorProducts(g, feeds, seed);
    CHECK_MESSAGE(check.error.empty(), check.error);
    CHECK_MESSAGE(check.worstRelativeError < 1e-5, check.report);
  }
}

TEST_CASE("every decomposition computes what its op computes") {
  uint64_t seed = testing::testSeed() + 2;
  CAPTURE(seed);
  for (const OpDef* op : OpRegistry::global().all()) {
    if (!op->decompose) continue;
    for (DType dtype : {DType::f64, DType::f32}) {
      if (!op->dtypes.contains(dtype)) continue;
      CAPTURE(op->name);
      CAPTURE(dtypeName(dtype));
      Graph g = testing::parseOrFail(op->exampleIn(dtype));
      // Emit each node's decomposition next to it (appended: its operands are all defined) and
      // compare the two as outputs.
      std::vector<Node*> nodes;
      for (const auto& n : g.nodes()) {
        if (&n->op() == op) nodes.push_back(n.get());
      }
      g.clearOutputs();
      for (Node* n : nodes) {
        Builder b(g, "decomposition");
        std::vector<Value*> results = op->decompose(b, *n);
        REQUIRE_MESSAGE(b.status().ok(), b.status().error().message());
        REQUIRE(results.size() == n->results().size());
        for (size_t i = 0; i < results.size(); ++i) {
          g.addOutput(fmt::format("op.{}", g.outputs().size()), n->result(i));
          g.addOutput(fmt::format("decomposed.{}", g.outputs().size()), results[i]);
        }
      }
      TensorMap feeds = feedsFor(g, seed);
      auto outs = interpret(g, feeds);
      REQUIRE_MESSAGE(outs.ok(), outs.error().message());
      for (size_t i = 0; i + 1 < outs->size(); i += 2) {
        std::string mismatch =
            testing::compareTensors((*outs)[i + 1], (*outs)[i], dtype == DType::f64 ? 1e-10 : 1e-5);
        CHECK_MESSAGE(mismatch.empty(), mismatch);
      }
    }
  }
}
