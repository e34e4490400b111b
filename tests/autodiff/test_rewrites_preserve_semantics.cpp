// fold and canonicalize keep results bit-identical: every registry op example, for every dtype, runs
// on the reference interpreter before and after the passes (once with its inputs fed, once with them
// turned into constants so fold evaluates the whole graph), and a graph hitting every canonicalize
// row runs on special values (NaN, +-0, +-inf, INT_MIN). Lives with the autodiff tests until the
// passes have a test binary of their own.
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace smelt;

namespace {

/// Runs fold then canonicalize then dead-node removal on `graph` and checks it still verifies.
void simplify(Graph& graph) {
  PassContext context;
  for (auto& pass : {createConstantFolding(), createCanonicalize()}) {
    context.setCurrentPass(std::string(pass->name()));
    auto changed = pass->run(graph, context);
    REQUIRE_MESSAGE(changed.ok(), (changed.ok() ? "" : changed.error().message()));
  }
  graph.removeDeadNodes();
  Status verified = verifyGraph(graph);
  REQUIRE_MESSAGE(verified.ok(), (verified.ok() ? "" : verified.error().message() + "\n" + toText(graph)));
}

/// Checks that `graph` gives bitwise the same outputs on `feeds` before and after simplify().
void checkPreserved(const Graph& graph, const TensorMap& feeds) {
  auto before = interpret(graph, feeds);
  if (!before) return;  // an example that fails on these inputs has nothing to preserve
  Graph simplified = graph.clone();
  simplify(simplified);
  auto after = interpret(simplified, feeds);
  REQUIRE_MESSAGE(after.ok(), (after.ok() ? "" : after.error().message() + "\n" + toText(simplified)));
  REQUIRE(after->size() == before->size());
  for (size_t i = 0; i < before->size(); ++i) {
    CAPTURE(i);
    CHECK_MESSAGE((*after)[i].bitwiseEqual((*before)[i]), "before:\n" << toText(graph) << "after:\n" << toText(simplified));
  }
}

/// Replaces each graph input's uses with a constant holding its feed.
void constantizeInputs(Graph& graph, const TensorMap& feeds) {
  if (graph.nodes().empty()) return;
  graph.setInsertionPoint(graph.nodes().front().get());
  for (Value* input : graph.inputs()) graph.replaceAllUsesWith(input, graph.constant(feeds.find(input->name())->second));
  graph.clearInsertionPoint();
}

}  // namespace

TEST_CASE("fold and canonicalize preserve every op example's outputs bit for bit") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (const OpDef* op : OpRegistry::global().all()) {
    for (DType dtype : op->dtypes.list()) {
      CAPTURE(op->name);
      CAPTURE(dtypeName(dtype));
      auto graph = parseGraph(op->exampleIn(dtype));
      REQUIRE(graph.ok());
      TensorMap feeds = testing::randomFeeds(*graph, seed);
      checkPreserved(*graph, feeds);
      constantizeInputs(*graph, feeds);
      checkPreserved(*graph, feeds);
    }
  }
}

TEST_CASE("canonicalize rewrites give the same bits on special values") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[8], %i: i32[8]) {
  %0 = constant() {value = dense<f32[]> [1.0]} : f32[]
  %1 = constant() {value = dense<f32[]> [-0.0]} : f32[]
  %2 = constant() {value = dense<f32[]> [0.0]} : f32[]
  %3 = mul(%x, %0) : f32[8]
  %4 = div(%3, %0) : f32[8]
  %5 = add(%4, %1) : f32[8]
  %6 = add(%1, %5) : f32[8]
  %7 = sub(%6, %2) : f32[8]
  %8 = neg(%7) : f32[8]
  %9 = neg(%8) : f32[8]
  %10 = add(%x, %2) : f32[8]
  %11 = mul(%x, %2) : f32[8]
  %12 = sub(%x, %x) : f32[8]
  %13 = cast(%9) {to = "f32"} : f32[8]
  %14 = constant() {value = dense<i32[]> [0]} : i32[]
  %15 = mul(%i, %14) : i32[8]
  %16 = sub(%i, %i) : i32[8]
  %17 = neg(%i) : i32[8]
  %18 = neg(%17) : i32[8]
  %19 = add(%18, %14) : i32[8]
  return a = %13, b = %10, c = %11, d = %12, e = %15, f = %16, g = %19
})");
  constexpr float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  TensorMap feeds{{"x", Tensor::of<float>({8}, {0.0f, -0.0f, nan, inf, -inf, 1.0f, -2.5f, 1e-40f})},
                  {"i", Tensor::of<int32_t>({8}, {0, 1, -1, 7, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max(), 3, -9})}};
  checkPreserved(g, feeds);
  Graph simplified = g.clone();
  simplify(simplified);
  // The float rows that are not exact (x+0.0, x*0, x-x) must have stayed.
  std::string text = toText(simplified);
  CHECK(text.find("add(%x") != std::string::npos);
  CHECK(text.find("mul(%x") != std::string::npos);
  CHECK(text.find("sub(%x, %x)") != std::string::npos);
  CHECK(text.find("neg") == std::string::npos);
}
