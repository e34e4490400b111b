// See index_checks.h.
#include "passes/index_checks.h"

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <utility>

#include "ir/builder.h"

namespace smelt {

namespace {

/// Whether every index of a constant lies in [-dim, dim).
bool constantInRange(const Tensor& indices, int64_t dim) {
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t v = indices.getInt(i);
    if (v < -dim || v >= dim) return false;
  }
  return true;
}

}  // namespace

Expected<std::vector<IndexCheck>> addIndexChecks(Graph& graph) {
  std::vector<IndexCheck> checks;
  std::set<std::pair<const Value*, int64_t>> checked;   // a gather and its gradient's scatter_add: one check
  std::vector<std::pair<const Node*, Value*>> guarded;  // collected first: the checks add nodes
  for (const auto& node : graph.nodes()) {
    if (node->opName() != "gather" && node->opName() != "scatter_add") continue;
    guarded.emplace_back(node.get(), node->operand(1));
  }
  for (const auto& [node, indices] : guarded) {
    const Shape& data = node->operand(0)->shape();
    int64_t axis = std::get<int64_t>(node->attrs().at("axis"));
    if (axis < 0) axis += static_cast<int64_t>(data.size());
    const int64_t dim = data[static_cast<size_t>(axis)];
    // Empty indices read nothing; i32 indices of an axis longer than 2^31 - 1 cannot leave it.
    if (indices->type().numel() == 0 || (indices->dtype() == DType::i32 && dim > INT32_MAX)) continue;
    if (indices->kind() == ValueKind::Result && indices->producer()->opName() == "constant" &&
        constantInRange(std::get<Tensor>(indices->producer()->attrs().at("value")), dim)) {
      continue;
    }
    if (!checked.emplace(indices, dim).second) continue;
    Builder b(graph, node->sourceName());
    const DType type = indices->dtype();
    Value* below = b.op("lt", {indices, b.scalar(static_cast<double>(-dim), type)});
    Value* above = b.op("ge", {indices, b.scalar(static_cast<double>(dim), type)});
    Value* outside = b.cast(b.op("or", {below, above}), DType::i32);
    Value* raised = b.op("reduce_max", {outside});
    SMELT_CHECK_OK(b.status());
    graph.addOutput(fmt::format("{}{}", kIndexCheckPrefix, checks.size()), raised);
    checks.push_back({graph.labelOf(*node), axis, dim});
  }
  return checks;
}

Error indexCheckError(const IndexCheck& check) {
  return makeError("{}: an index is out of range [{}, {}) for axis {} of size {} (this run's results are not valid)",
                   check.label, -check.dim, check.dim, check.axis, check.dim);
}

}  // namespace smelt
