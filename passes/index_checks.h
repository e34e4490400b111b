// Index checks: a gather or scatter_add given an index outside [-dim, dim) is an error in the reference
// interpreter (docs/ops.md); a kernel cannot stop, so it reads a clamped position (gather) or matches
// nothing (scatter_add). Before compiling, every such node whose indices are not known to be in range
// gets a check computed beside it: one flag, 1 when any index is out of range, as an extra graph output
// after the graph's own; the executable reads it after each run and reports the node.
//   %0 = gather(%x, %i) {axis = 1} : f32[3,2]       ->  ... as before, plus
//   return r = %0                                      %1 = lt(%i, -4) ... %4 = reduce_max(%3) : i32[]
//                                                      return r = %0, __index_check_0 = %4
// The flag is an ordinary elementwise-and-reduce computation: it fuses with the indices' other readers
// and runs on every backend.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace smelt {

/// One check: the node it guards and the range its indices must lie in.
struct IndexCheck {
  std::string label;  // "gather %3 (Gather_7)"
  int64_t axis = 0;
  int64_t dim = 0;  // indices must lie in [-dim, dim)
};

/// The prefix of the checks' output names.
inline constexpr std::string_view kIndexCheckPrefix = "__index_check_";

/// Appends the checks' outputs to `graph` (after its own outputs, in node order) and returns what each
/// guards. Indices that are constants in range, or empty, need none.
Expected<std::vector<IndexCheck>> addIndexChecks(Graph& graph);

/// The error a raised check reports.
Error indexCheckError(const IndexCheck& check);

}  // namespace smelt
