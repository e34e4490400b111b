// Graphviz DOT rendering of a graph, for `smelt dump --format dot`.
#pragma once

#include "ir/graph.h"

#include <string>

namespace smelt {

/// The graph as a DOT digraph: inputs, parameters, ops and outputs as nodes; edges labeled with types.
std::string toDot(const Graph& graph);

}  // namespace smelt
