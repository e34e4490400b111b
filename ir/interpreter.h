// The reference interpreter: runs a graph node by node with each op's reference function. Plain loops,
// float math in double. It is the oracle every backend and pass is tested against.
#pragma once

#include "ir/graph.h"

#include <map>
#include <string>

namespace smelt {

/// Tensors by name (graph inputs, optionally parameters to override their initial values).
using TensorMap = std::map<std::string, Tensor, std::less<>>;

/// Runs `graph`. Every graph input must be fed with exactly its type; a feed named like a parameter
/// replaces that parameter's initial value. Returns the outputs in graph order.
Expected<std::vector<Tensor>> interpret(const Graph& graph, const TensorMap& feeds);

/// Runs one node on operand tensors (used by interpret and by constant folding).
Expected<std::vector<Tensor>> evaluateNode(const Graph& graph, const Node& node, std::span<const Tensor> operands);

}  // namespace smelt
