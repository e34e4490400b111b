// Graph editing used by rewrites: insertion points, replacing uses, dead-node removal.
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

TEST_CASE("a rewrite inserts a replacement before the node it replaces, then removes the old node") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[4]) {
  %0 = neg(%x) : f32[4]
  %1 = neg(%0) : f32[4]
  %2 = exp(%1) : f32[4]
  return y = %2
})");
  Node* outer = g.nodes()[1].get();
  g.setInsertionPoint(outer);
  Value* replacement = *g.apply("relu", {g.inputs()[0]});
  g.clearInsertionPoint();
  g.replaceAllUsesWith(outer->result(), replacement);
  CHECK(g.removeDeadNodes() == 2);
  Status verified = verifyGraph(g);
  CHECK_MESSAGE(verified.ok(), (verified.ok() ? "" : verified.error().message()));
  CHECK(toText(g) == R"(graph @g(%x: f32[4]) {
  %0 = relu(%x) : f32[4]
  %1 = exp(%0) : f32[4]
  return y = %1
}
)");
  auto out = interpret(g, {{"x", testing::randomTensor({DType::f32, {4}}, testing::testSeed())}});
  CHECK(out.ok());
}
