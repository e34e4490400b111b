// Training under a memory budget: fusion that recomputes forward values in the backward pass until the
// planned arena fits. A value computed in the forward pass and read again in the backward pass lives
// across the peak of the schedule (the end of the forward pass); recomputing it right before its
// late readers, from values that are live there anyway, frees its bytes at the peak for the FLOPs of
// the recomputation. The pass weighs each choice on the fused graph and its memory plan, the graph
// that runs: a recomputation that fusion would merge back into the original kernel, or that keeps a
// larger operand alive, is not a saving.
//   %h = relu(%z)            forward, read by the next layer and by the weight gradient
//   ...                      the peak
//   %h2 = relu(%z)           recomputed here (z is live for relu's backward anyway)
//   %gw = matmul(%h2, %dy)   the weight gradient reads the recomputation
// Choice: among the values live at the peak, those whose readers all run before or after it, each
// recomputed through its cheap elementwise/view producers back to values live at the peak (a layer
// is recomputed whole when its product is the value itself), ranked by FLOPs per byte freed; the best
// few are tried, the first that lowers the plan's excess over the budget is kept, and the search
// repeats until the plan fits. Recomputed nodes fuse with their consumers, never with the nodes
// placed before them (FusionOptions::recomputedAt).
#pragma once

#include "ir/graph.h"

#include <cstdint>

namespace smelt {

/// What fuseWithinBudget did.
struct RematReport {
  int64_t budget = 0;
  /// The planned arena (planMemory's peakBytes) of the fused graph without and with recomputation.
  int64_t peakBefore = 0;
  int64_t peakAfter = 0;
  /// planMemory's lowerBoundBytes after.
  int64_t lowerBoundAfter = 0;
  int64_t recomputedNodes = 0;
  int64_t recomputedFlops = 0;
  /// FLOPs of every kernel after, recomputation included: recomputedFlops / flops estimates the extra time.
  int64_t flops = 0;
};

/// Fuses `graph` (as the fuse pass does) after recomputing forward values late, so that the memory
/// plan of the result needs at most `budget` bytes. When no choice found fits, `graph` is unchanged
/// and the error lists the largest buffers live at the peak (their IR nodes, with layer names) and
/// the smallest budget a plan was found for.
Expected<RematReport> fuseWithinBudget(Graph& graph, int64_t budget);

}  // namespace smelt
