// How much of each kind of work a graph holds, the quantity placement compares with a device's
// measured crossovers. Four kinds, because CPUs and GPUs trade places at very different sizes for
// them: elementwise and data movement (counted in result elements), reductions (input elements),
// matrix products and convolutions (FLOPs, from each op's `flops` facet).
//   GraphWork work = measureWork(graph);
//   work.of(WorkKind::kMatmul);   // 2*m*n*k summed over the graph's products
#pragma once

#include "ir/graph.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace smelt {

enum class WorkKind { kElementwise, kReduction, kMatmul, kConv };
inline constexpr std::array<WorkKind, 4> kWorkKinds = {WorkKind::kElementwise, WorkKind::kReduction,
                                                       WorkKind::kMatmul, WorkKind::kConv};

/// "elementwise", "reduction", "matmul", "conv".
std::string_view workKindName(WorkKind kind);
std::optional<WorkKind> parseWorkKind(std::string_view name);
/// What the amounts of `kind` count: "elements" or "flops".
std::string_view workUnit(WorkKind kind);

/// The kind an op's work counts as: products (matmul, gemm) and convolutions by name, reductions by
/// fusion kind, everything else elementwise.
WorkKind workKindOf(const OpDef& op);

struct GraphWork {
  std::array<int64_t, kWorkKinds.size()> amounts{};
  int64_t of(WorkKind kind) const { return amounts[static_cast<size_t>(kind)]; }
  int64_t& of(WorkKind kind) { return amounts[static_cast<size_t>(kind)]; }
};

/// The graph's work by kind, summed over its nodes (fused nodes count their bodies). Constants and
/// other nodes without arithmetic or movement count nothing.
GraphWork measureWork(const Graph& graph);

}  // namespace smelt
