// Test helper shared by the pass tests: a graph after the default pipeline, or a failed test.
#pragma once

#include "passes/pass_manager.h"

#include <doctest/doctest.h>

namespace smelt::testing {

/// `graph` after the default optimizing pipeline (fusion included), run with verification; a pipeline
/// error fails the current test.
inline Graph optimizedOrFail(const Graph& graph) {
  Graph copy = graph.clone();
  PassManagerOptions options;
  options.verify = true;
  auto pm = PassManager::defaultPipeline(options);
  REQUIRE(pm.ok());
  auto ran = pm->run(copy);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  return copy;
}

}  // namespace smelt::testing
