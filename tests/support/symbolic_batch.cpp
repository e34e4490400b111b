// See symbolic_batch.h.
#include "tests/support/symbolic_batch.h"

#include <fmt/format.h>

#include <unordered_map>

namespace smelt::testing {

Expected<Graph> withSymbolicBatch(const Graph& graph, int64_t batch) {
  Graph out(graph.name());
  std::unordered_map<const Value*, Value*> map;
  for (const Value* v : graph.inputs()) {
    TensorType t = v->type();
    if (t.rank() > 0 && t.shape[0] == batch) t.shape[0] = dimSymbol("B");
    map[v] = out.addInput(v->name(), t);
  }
  for (const Value* v : graph.parameters()) map[v] = out.addParameterLike(*v);
  for (const auto& node : graph.nodes()) {
    std::vector<Value*> operands;
    for (const Value* o : node->operands()) operands.push_back(map.at(o));
    SMELT_TRY(Node * n, out.addNode(node->opName(), std::move(operands), node->attrs(), node->sourceName()));
    for (size_t r = 0; r < node->results().size(); ++r) map[node->result(r)] = n->result(r);
  }
  for (const GraphOutput& o : graph.outputs()) out.addOutput(o.name, map.at(o.value));
  return out;
}

TensorType substituteSymbols(TensorType t, int64_t n) {
  for (int64_t& d : t.shape) d = isSymbolic(d) ? n : d;
  return t;
}

std::string compareBoundTypes(const Graph& symbolic, const Graph& bound, int64_t n) {
  if (symbolic.nodes().size() != bound.nodes().size()) return "the graphs have different node counts";
  for (size_t i = 0; i < symbolic.nodes().size(); ++i) {
    const Node& s = *symbolic.nodes()[i];
    const Node& b = *bound.nodes()[i];
    for (size_t r = 0; r < s.results().size(); ++r) {
      TensorType want = substituteSymbols(s.result(r)->type(), n);
      if (!(want == b.result(r)->type())) {
        return fmt::format("{} result #{}: symbolic {} bound to {} is {}, static inference gives {}",
                           symbolic.labelOf(s), r, s.result(r)->type().toString(), n, want.toString(),
                           b.result(r)->type().toString());
      }
    }
  }
  return "";
}

}  // namespace smelt::testing
