// Registry-wide tests: every op's IR example, for every dtype the op accepts, parses, verifies,
// prints and parses back to the same text, and runs on the reference interpreter with random inputs.
// No per-op test code: adding an op to the registry adds it here.
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

TEST_CASE("every op declares a summary, dtypes, inference, a reference and an example") {
  for (const OpDef* op : OpRegistry::global().all()) {
    CAPTURE(op->name);
    CHECK(!op->summary.empty());
    CHECK(!op->dtypes.empty());
    CHECK(op->infer);
    CHECK(op->reference);
    CHECK(!op->example.empty());
  }
}

TEST_CASE("every op's example parses, verifies, round-trips and runs for every dtype it accepts") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (const OpDef* op : OpRegistry::global().all()) {
    for (DType dtype : op->dtypes.list()) {
      std::string text = op->exampleIn(dtype);
      CAPTURE(op->name);
      CAPTURE(dtypeName(dtype));
      auto graph = parseGraph(text);
      if (!graph) {
        FAIL_CHECK(graph.error().message());
        continue;
      }
      Status verified = verifyGraph(*graph);
      CHECK_MESSAGE(verified.ok(), (verified.ok() ? "" : verified.error().message()));
      std::string printed = toText(*graph);
      auto reparsed = parseGraph(printed);
      REQUIRE_MESSAGE(reparsed.ok(), (reparsed.ok() ? "" : reparsed.error().message() + "\n" + printed));
      CHECK(toText(*reparsed) == printed);
      auto outputs = interpret(*graph, testing::randomFeeds(*graph, seed));
      if (!outputs) {
        FAIL_CHECK(outputs.error().message());
        continue;
      }
      REQUIRE(outputs->size() == graph->outputs().size());
      for (size_t i = 0; i < outputs->size(); ++i) CHECK((*outputs)[i].type() == graph->outputs()[i].value->type());
    }
  }
}
