// Which concat and slice nodes only move one contiguous run of bytes (row-major), so a memory plan may lay their
// result and operands over the same bytes and the node need not run (passes/plan_memory.h: views).
//   if (auto start = contiguousSliceStart(node)) ...   // the result is the operand's elements [*start, +numel)
#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <optional>

namespace smelt {

/// For a slice whose result is one contiguous run of its operand's elements (steps of 1 where it cuts, every axis
/// after the first cut one whole, every axis before it a single index): the run's first flat index. Else (or with
/// symbolic or invalid attributes) nullopt.
std::optional<int64_t> contiguousSliceStart(const Node& node);

/// For a concat whose operands are consecutive runs of its result (every axis before `axis` of extent 1): true.
bool concatIsContiguous(const Node& node);

}  // namespace smelt
