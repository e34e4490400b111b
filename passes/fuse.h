// Fusion as a function, for passes that weigh fusion's outcome (rematerialize.cpp): the fused graph,
// and where each of its values and kernels came from.
//   SMELT_TRY(FusedGraph fused, fuseGraph(graph));
//   const Value* source = fused.sourceOf.at(fused.graph.nodes()[3]->result());
#pragma once

#include "passes/fusion_groups.h"

#include <unordered_map>

namespace smelt {

struct FusedGraph {
  Graph graph;
  /// Each result of a node of `graph` -> the value of the source graph it stands for.
  std::unordered_map<const Value*, const Value*> sourceOf;
  /// Each node of the source graph that runs -> the node of `graph` (a `fused` node or its copy).
  std::unordered_map<const Node*, const Node*> kernelOf;
};

/// What the fuse pass does to `graph` (which is not changed), with the maps above.
Expected<FusedGraph> fuseGraph(const Graph& graph, const FusionOptions& options = {});

}  // namespace smelt
