// Run-time value checks: a gather or scatter given an index outside [-dim, dim), or a check_range given a value
// outside its [lo, hi) (a loss's labels), is an error in the reference interpreter (docs/ops.md); a kernel cannot
// stop, so it would read a clamped position (gather), match nothing (the scatters, a one-hot comparison) or pass the
// value on. Before compiling, every node of an op with a checked operand (OpDef::checked) whose values are not known
// to be in range gets a check computed beside it: one flag, 1 when any value is out of range, as an extra graph
// output after the graph's own; the executable reads it after each run and reports the node. check_range nodes,
// checked so, are then replaced by their operand.
//   %0 = gather(%x, %i) {axis = 1} : f32[3,2]       ->  ... as before, plus
//   return r = %0                                      %1 = lt(%i, -4) ... %4 = reduce_max(%3) : i32[]
//                                                      return r = %0, __index_check_0 = %4
// The flag is an ordinary elementwise-and-reduce computation: it fuses with the values' other readers
// and runs on every backend.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace smelt {

/// One check: the node it guards, the range its checked operand's values must lie in, and what an error says.
struct IndexCheck {
  std::string label;  // "gather %3 (Gather_7)"
  int64_t lo = 0;     // values must lie in [lo, hi)
  int64_t hi = 0;
  std::string words;  // "an index is out of range [-4, 4) for axis 1 of size 4"
};

/// The prefix of the checks' output names.
inline constexpr std::string_view kIndexCheckPrefix = "__index_check_";

/// A check and its flag: an i32 scalar, 1 when a value was out of range in the run.
struct IndexFlag {
  IndexCheck check;
  Value* raised = nullptr;
};

/// Where a check's nodes go: after every node (the graph's own keep their numbers, which errors of the
/// reference interpreter print), or right before the node it guards (scheduled with it: a training step's
/// updates wait for its flags, which would otherwise come last).
enum class CheckPlacement { kAtEnd, kBeforeGuarded };

/// Computes the checks' flags in `graph` (in node order) without making them outputs, for a caller that
/// uses them itself (a training step counts them on the device and skips the update: frontend/nn/train_step.h),
/// and replaces the check_range nodes by their operands (dead from then on: the caller removes them once its
/// flags have users). Values that are constants in range, or empty, need none. Labels name the guarded
/// nodes as the graph numbered them before.
Expected<std::vector<IndexFlag>> buildIndexChecks(Graph& graph, CheckPlacement placement = CheckPlacement::kAtEnd);

/// Appends the checks' outputs to `graph` (after its own outputs, in node order) and returns what each
/// guards.
Expected<std::vector<IndexCheck>> addIndexChecks(Graph& graph);

/// The error a raised check reports.
Error indexCheckError(const IndexCheck& check);

}  // namespace smelt
