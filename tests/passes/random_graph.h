// A random-graph generator for differential testing of the passes: from a seed it builds a valid graph
// of random inputs (random ranks and broadcastable shapes, scalars), constants (0, 1, -0.0 among them, so
// the algebraic rewrites fire) and ops drawn from the registry (elementwise, where, clip, cast,
// reductions, softmax, matmul, layout ops, concat, slice, pad, gather), with deliberate duplicates (cse)
// and dead branches (dce), and sometimes the gradients of its float outputs (autodiff) as extra outputs.
// Inference is the verifier: a candidate node an op rejects is simply not added and another is tried.
//   Graph g = smelt::testing::randomGraph(seed);   // same seed, same graph
#pragma once

#include "ir/graph.h"

#include <cstdint>

namespace smelt::testing {

struct RandomGraphOptions {
  /// Nodes (constants included) the forward graph gets, drawn uniformly from [minNodes, maxNodes].
  int minNodes = 3;
  int maxNodes = 30;
  /// Chance of appending the gradient of the sum of the float outputs w.r.t. the float inputs.
  double gradientProbability = 1.0 / 3.0;
};

/// The graph for `seed` (deterministic). Always valid: it verifies and has at least one output.
Graph randomGraph(uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace smelt::testing
