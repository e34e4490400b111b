// Reverse-mode differentiation of a graph into more IR: the backward pass is ordinary nodes appended to
// the same graph, built from each op's registry gradient rule (or its decomposition), so passes and
// codegen treat it like any other graph and it can itself be differentiated again.
#pragma once

#include "ir/graph.h"

#include <span>
#include <unordered_set>
#include <vector>

namespace smelt {

/// Limits what buildGradients differentiates through.
struct BackwardOptions {
  /// Only these nodes carry gradients (a tape's recording); null means every node in the graph.
  const std::unordered_set<const Node*>* recorded = nullptr;
};

/// Appends to `graph` the gradient of  sum_i sum(targets[i] * seeds[i])  with respect to each source
/// (a null seed means all ones, so a non-scalar target contributes the sum of its elements). Sources not
/// connected to any target get zeros. Integer and bool sources or targets are errors, as is reaching an
/// op that is not differentiable.
Expected<std::vector<Value*>> buildGradients(Graph& graph, std::span<Value* const> targets,
                                             std::span<Value* const> seeds, std::span<Value* const> sources,
                                             const BackwardOptions& options = {});

}  // namespace smelt
