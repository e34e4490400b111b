// Work by kind: see graph_work.h.
#include "runtime/placement/graph_work.h"

#include "ir/op_registry.h"

#include <vector>

namespace smelt {

std::string_view workKindName(WorkKind kind) {
  switch (kind) {
    case WorkKind::kElementwise: return "elementwise";
    case WorkKind::kReduction: return "reduction";
    case WorkKind::kMatmul: return "matmul";
    case WorkKind::kConv: return "conv";
  }
  return "?";
}

std::optional<WorkKind> parseWorkKind(std::string_view name) {
  for (WorkKind kind : kWorkKinds) {
    if (workKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string_view workUnit(WorkKind kind) {
  return kind == WorkKind::kMatmul || kind == WorkKind::kConv ? "flops" : "elements";
}

WorkKind workKindOf(const OpDef& op) {
  if (op.name == "matmul" || op.name == "gemm") return WorkKind::kMatmul;
  if (op.name.starts_with("conv") || op.name == "locally_connected2d") return WorkKind::kConv;
  if (op.fusion == FusionKind::Reduction) return WorkKind::kReduction;
  return WorkKind::kElementwise;
}

namespace {

void addWork(const Graph& graph, GraphWork& work) {
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "fused") {
      addWork(*std::get<GraphRef>(node->attrs().at("body")), work);
      continue;
    }
    if (node->opName() == "constant") continue;
    const WorkKind kind = workKindOf(node->op());
    int64_t amount = 0;
    if (kind == WorkKind::kMatmul || kind == WorkKind::kConv) {
      std::vector<TensorType> operands, results;
      for (const Value* o : node->operands()) operands.push_back(o->type());
      for (const Value* r : node->results()) results.push_back(r->type());
      amount = flopsOf(OpCall(node->op(), graph.labelOf(*node), operands, node->attrs(), results));
    } else if (kind == WorkKind::kReduction) {
      if (!node->operands().empty()) amount = node->operands()[0]->type().numel();
    } else {
      for (const Value* r : node->results()) amount += r->type().numel();
    }
    work.of(kind) += amount;
  }
}

}  // namespace

GraphWork measureWork(const Graph& graph) {
  GraphWork work;
  addWork(graph, work);
  return work;
}

}  // namespace smelt
