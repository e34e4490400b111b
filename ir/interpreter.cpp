// Reference interpreter.
#include "ir/interpreter.h"

#include "ir/dims.h"

#include <unordered_map>

namespace smelt {

Expected<std::vector<Tensor>> evaluateNode(const Graph& graph, const Node& node, std::span<const Tensor> operands) {
  std::vector<TensorType> operandTypes;
  for (const Tensor& t : operands) operandTypes.push_back(t.type());
  std::vector<TensorType> resultTypes = node.resultTypes();
  OpCall call(node.op(), graph.labelOf(node), operandTypes, node.attrs(), resultTypes);
  if (!node.op().reference) return call.error("has no reference implementation");
  SMELT_TRY(std::vector<Tensor> results, node.op().reference(call, operands));
  if (results.size() != resultTypes.size()) {
    return call.error("reference produced {} results, expected {}", results.size(), resultTypes.size());
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (!(results[i].type() == resultTypes[i])) {
      return call.error("reference result #{} is {}, expected {}", i, results[i].type().toString(),
                        resultTypes[i].toString());
    }
  }
  return results;
}

Expected<std::vector<Tensor>> interpret(const Graph& graph, const TensorMap& feeds) {
  if (!graph.symbolicDims().empty()) {
    // The feeds bind the symbolic dimensions; the static graph they give is what runs.
    std::vector<TensorType> fed;
    for (const Value* v : graph.inputs()) {
      auto it = feeds.find(v->name());
      if (it == feeds.end()) return makeError("input '{}' ({}) was not fed", v->name(), v->type().toString());
      if (!typeAccepts(v->type(), it->second.type())) {
        return makeError("input '{}' expects {}, got {}", v->name(), v->type().toString(), it->second.type().toString());
      }
      fed.push_back(it->second.type());
    }
    SMELT_TRY(DimBinding binding, bindingFromInputs(graph, fed));
    SMELT_TRY(Graph bound, bindDims(graph, binding));
    return interpret(bound, feeds);
  }
  std::unordered_map<const Value*, Tensor> env;
  for (const auto& [name, tensor] : feeds) {
    Value* v = graph.findInput(name);
    if (!v) v = graph.findParameter(name);
    if (!v) return makeError("feed '{}' names no input or parameter of graph @{}", name, graph.name());
    if (!(v->type() == tensor.type())) {
      return makeError("{} '{}' expects {}, got {}", v->kind() == ValueKind::Input ? "input" : "parameter", name,
                       v->type().toString(), tensor.type().toString());
    }
    env[v] = tensor;
  }
  for (const Value* v : graph.inputs()) {
    if (!env.count(v)) return makeError("input '{}' ({}) was not fed", v->name(), v->type().toString());
  }
  for (const Value* v : graph.parameters()) {
    if (env.count(v)) continue;
    if (!v->hasInitialValue()) return makeError("parameter '{}' ({}) has no value: feed it", v->name(), v->type().toString());
    env[v] = v->initialValue();
  }
  // Count remaining uses so intermediates are freed after their last use.
  std::unordered_map<const Value*, size_t> remaining;
  for (const auto& node : graph.nodes()) {
    for (const Value* o : node->operands()) ++remaining[o];
  }
  for (const GraphOutput& o : graph.outputs()) ++remaining[o.value];

  for (const auto& node : graph.nodes()) {
    std::vector<Tensor> operands;
    operands.reserve(node->numOperands());
    for (const Value* o : node->operands()) {
      auto it = env.find(o);
      if (it == env.end()) return makeError("{}: operand is not computed yet (graph is not in order)", graph.labelOf(*node));
      operands.push_back(it->second);
    }
    SMELT_TRY(std::vector<Tensor> results, evaluateNode(graph, *node, operands));
    for (size_t i = 0; i < results.size(); ++i) env[node->result(i)] = std::move(results[i]);
    for (const Value* o : node->operands()) {
      if (--remaining[o] == 0 && o->kind() == ValueKind::Result) env.erase(o);
    }
  }
  std::vector<Tensor> outputs;
  for (const GraphOutput& o : graph.outputs()) {
    auto it = env.find(o.value);
    if (it == env.end()) return makeError("output '{}' was not computed", o.name);
    outputs.push_back(it->second);
  }
  return outputs;
}

}  // namespace smelt
