// Graph verifier.
#include "ir/verifier.h"

#include <unordered_set>

namespace smelt {

Status verifyGraph(const Graph& graph) {
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names;
  for (const Value* v : graph.inputs()) {
    if (!names.insert(v->name()).second) return makeError("graph @{}: name '{}' is used twice", graph.name(), v->name());
    defined.insert(v);
  }
  for (const Value* v : graph.parameters()) {
    if (!names.insert(v->name()).second) return makeError("graph @{}: name '{}' is used twice", graph.name(), v->name());
    if (v->hasInitialValue() && !(v->initialValue().type() == v->type())) {
      return makeError("parameter '{}': initial value is {}, declared {}", v->name(),
                       v->initialValue().type().toString(), v->type().toString());
    }
    defined.insert(v);
  }
  for (const auto& node : graph.nodes()) {
    std::string label = graph.labelOf(*node);
    std::vector<TensorType> operandTypes;
    for (size_t i = 0; i < node->numOperands(); ++i) {
      const Value* o = node->operand(i);
      if (!defined.count(o)) return makeError("{}: operand #{} is used before it is defined", label, i);
      operandTypes.push_back(o->type());
    }
    SMELT_TRY(AttrMap attrs, completeAttributes(node->op(), label, node->numOperands(), node->attrs()));
    OpCall call(node->op(), label, operandTypes, attrs);
    SMELT_TRY(std::vector<TensorType> inferred, inferResultTypes(call));
    if (inferred.size() != node->results().size()) {
      return makeError("{}: has {} results, its op infers {}", label, node->results().size(), inferred.size());
    }
    for (size_t i = 0; i < inferred.size(); ++i) {
      if (!(inferred[i] == node->result(i)->type())) {
        return makeError("{}: result #{} has type {}, its op infers {}", label, i, node->result(i)->type().toString(),
                         inferred[i].toString());
      }
      defined.insert(node->result(i));
    }
  }
  std::unordered_set<std::string> outputNames;
  for (const GraphOutput& o : graph.outputs()) {
    if (!outputNames.insert(o.name).second) return makeError("graph @{}: output '{}' appears twice", graph.name(), o.name);
    if (!defined.count(o.value)) return makeError("graph @{}: output '{}' is not defined", graph.name(), o.name);
  }
  return Status::success();
}

}  // namespace smelt
