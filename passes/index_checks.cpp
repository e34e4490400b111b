// See index_checks.h.
#include "passes/index_checks.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "ir/builder.h"

namespace smelt {

namespace {

/// Whether every value of a constant lies in [lo, hi).
bool constantInRange(const Tensor& values, int64_t lo, int64_t hi) {
  for (int64_t i = 0; i < values.numel(); ++i) {
    const int64_t v = values.getInt(i);
    if (v < lo || v >= hi) return false;
  }
  return true;
}

/// Whether every value the dtype can hold lies in [lo, hi) (i32 indices along an axis longer than 2^31 - 1).
bool dtypeInRange(DType type, int64_t lo, int64_t hi) {
  switch (type) {
    case DType::i8: return lo <= INT8_MIN && hi > INT8_MAX;
    case DType::i16: return lo <= INT16_MIN && hi > INT16_MAX;
    case DType::i32: return lo <= INT32_MIN && hi > INT32_MAX;
    case DType::u8: return lo <= 0 && hi > UINT8_MAX;
    case DType::u16: return lo <= 0 && hi > UINT16_MAX;
    case DType::u32: return lo <= 0 && hi > UINT32_MAX;
    default: return lo == std::numeric_limits<int64_t>::min() && hi == std::numeric_limits<int64_t>::max();
  }
}

/// The node's call, for its facet.
OperandRange rangeOf(const Graph& graph, const Node& node) {
  std::vector<TensorType> operandTypes;
  for (const Value* v : node.operands()) operandTypes.push_back(v->type());
  OpCall call(node.op(), graph.labelOf(node), operandTypes, node.attrs());
  return node.op().checked->range(call);
}

}  // namespace

Expected<std::vector<IndexFlag>> buildIndexChecks(Graph& graph, CheckPlacement placement) {
  std::vector<IndexFlag> checks;
  std::set<std::tuple<const Value*, int64_t, int64_t>> checked;  // a gather and its gradient's scatter_add: one check
  struct Guarded {
    const Node* node;
    Value* values;
    OperandRange range;
    std::string label;  // as the graph numbers it before the checks' nodes go in
  };
  std::vector<Guarded> guarded;  // collected first: the checks add nodes
  for (const auto& node : graph.nodes()) {
    if (!node->op().checked) continue;
    guarded.push_back(
        {node.get(), node->operand(node->op().checked->operand), rangeOf(graph, *node), graph.labelOf(*node)});
  }
  for (const auto& [node, values, range, label] : guarded) {
    // Empty values hold nothing; a dtype whose every value is in range cannot leave it.
    if (values->type().numel() == 0 || dtypeInRange(values->dtype(), range.lo, range.hi)) continue;
    if (values->kind() == ValueKind::Result && values->producer()->opName() == "constant" &&
        constantInRange(std::get<Tensor>(values->producer()->attrs().at("value")), range.lo, range.hi)) {
      continue;
    }
    if (!checked.emplace(values, range.lo, range.hi).second) continue;
    if (placement == CheckPlacement::kBeforeGuarded) graph.setInsertionPoint(node);
    Builder b(graph, node->sourceName());
    const DType type = values->dtype();
    Value* outside = nullptr;
    // A bound the dtype cannot pass needs no comparison (and could not be written in it: -4 as a u8).
    if (isSignedInt(type) || range.lo > 0) outside = b.op("lt", {values, b.scalar(static_cast<double>(range.lo), type)});
    Value* above = b.op("ge", {values, b.scalar(static_cast<double>(range.hi), type)});
    outside = outside ? b.op("or", {outside, above}) : above;
    Value* raised = b.op("reduce_max", {b.cast(outside, DType::i32)});
    graph.clearInsertionPoint();
    SMELT_CHECK_OK(b.status());
    checks.push_back({{label, range.lo, range.hi, range.words}, raised});
  }
  // A check_range has done its work once checked: its operand goes on.
  std::vector<Node*> identities;
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "check_range") identities.push_back(node.get());
  }
  for (Node* node : identities) graph.replaceAllUsesWith(node->result(0), node->operand(0));
  return checks;
}

Expected<std::vector<IndexCheck>> addIndexChecks(Graph& graph) {
  SMELT_TRY(std::vector<IndexFlag> flags, buildIndexChecks(graph));
  std::vector<IndexCheck> checks;
  for (IndexFlag& flag : flags) {
    graph.addOutput(fmt::format("{}{}", kIndexCheckPrefix, checks.size()), flag.raised);
    checks.push_back(std::move(flag.check));
  }
  // The check_range nodes buildIndexChecks bypassed (and nothing else: a graph without them stays as it was).
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "check_range") {
      graph.removeDeadNodes();
      break;
    }
  }
  return checks;
}

Error indexCheckError(const IndexCheck& check) {
  return makeError("{}: {} (this run's results are not valid)", check.label, check.words);
}

}  // namespace smelt
