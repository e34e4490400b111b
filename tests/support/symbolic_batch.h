// Test graphs with a symbolic batch: a static graph's leading extent made the symbol B, for checking
// that symbolic inference, once bound, is static inference (tests/runtime, tests/passes).
#pragma once

#include "ir/graph.h"

namespace smelt::testing {

/// `graph` with the leading extent `batch` of its inputs made the symbol B (inputs led by another
/// extent keep theirs), every node inferred again: an error where an op's inference refuses it.
Expected<Graph> withSymbolicBatch(const Graph& graph, int64_t batch);

/// `t` with every symbolic extent replaced by `n`.
TensorType substituteSymbols(TensorType t, int64_t n);

/// Empty when every value of `bound` (inputs, then each node's results, in order) has the type of the
/// same value of `symbolic` with its symbols replaced by `n`; else the first that differs.
std::string compareBoundTypes(const Graph& symbolic, const Graph& bound, int64_t n);

}  // namespace smelt::testing
