// The graph verifier: structural checks plus re-running every op's inference. Runs after parsing and
// (from the passes issue on) after every pass in tests and debug builds.
#pragma once

#include "ir/graph.h"

namespace smelt {

/// Checks that every operand is defined before use, every node's result types are what its op infers,
/// names are unique, parameter values match their types, and outputs exist.
Status verifyGraph(const Graph& graph);

}  // namespace smelt
