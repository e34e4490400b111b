// Memory planning: places every intermediate result of a graph in one arena, in the graph's node order
// (the schedule), so buffers whose lifetimes do not intersect share bytes.
//   MemoryPlan plan = planMemory(graph);
//   fmt::print("{} bytes (lower bound {})\n", plan.peakBytes, plan.lowerBoundBytes);
// Every non-constant node is one kernel; after the fuse pass a `fused` node's results are its kernel's
// buffers, and values inside its body live in registers and get none.
#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace smelt {

/// Offsets in the arena are multiples of this, and each buffer reserves its size rounded up to it.
inline constexpr int64_t kArenaAlignment = 64;

/// Where one node result lives in the arena, and when.
struct BufferAssignment {
  const Value* value = nullptr;
  int64_t offset = 0;
  /// type().byteSize(); the arena reserves it rounded up to kArenaAlignment.
  int64_t size = 0;
  /// Live from the producing node's index to the last user's index (inclusive).
  int64_t begin = 0;
  int64_t end = 0;
  /// Set when this result is written in place over an operand that dies at its producer.
  const Value* inPlaceOf = nullptr;
  /// Set when this buffer lies inside another's bytes, at viewOffset: an operand of a contiguous concat inside its
  /// result (the producer writes straight into the concat's place), a contiguous slice's result inside its
  /// operand. The concat or slice then has nothing to run.
  const Value* viewOf = nullptr;
  int64_t viewOffset = 0;
};

/// The arena layout of a graph: one assignment per node result in the arena. Graph inputs, parameters,
/// constants, graph outputs (the caller's tensors, which kernels write directly) and empty results are
/// kept apart and have none.
struct MemoryPlan {
  std::vector<BufferAssignment> buffers;
  /// Bytes the arena needs: the largest offset + aligned size.
  int64_t peakBytes = 0;
  /// The largest total of aligned bytes live at once over the schedule (after in-place sharing): no
  /// offset assignment of these buffers needs less.
  int64_t lowerBoundBytes = 0;
  /// Distinct arena buffers (results written in place share their operand's).
  int64_t numBuffers = 0;
  int64_t inPlaceReuses = 0;
  /// Concat operands and slice results laid inside another buffer (BufferAssignment::viewOf).
  int64_t views = 0;

  /// The assignment of `value`, or null when it is not in the arena.
  const BufferAssignment* find(const Value* value) const;

 private:
  friend MemoryPlan planMemoryWith(const Graph& graph, bool views, int64_t viewBudget);
  std::unordered_map<const Value*, size_t> index_;
};

/// Plans the arena for `graph` in its node order: liveness, in-place reuse for elementwise nodes, views (contiguous
/// concats and slices over their operands' bytes, each where it does not raise the peak), and offsets by the best
/// of a few greedy orders (largest first, then longest-lived first, ...).
MemoryPlan planMemory(const Graph& graph);
/// The plan with views (see BufferAssignment::viewOf) or without: with them, each view (in node order) is taken
/// where the aligned bytes live at once then stay within `viewBudget`, whatever the offsets give. planMemory
/// passes the plain plan's peak.
MemoryPlan planMemoryWith(const Graph& graph, bool views, int64_t viewBudget = std::numeric_limits<int64_t>::max());

/// Whether `node` (a concat, a slice, a reshape) has nothing to run under `plan`: its operands and result are views
/// of one another's bytes, or the reshape's result lies where its operand does.
bool runsAsView(const Node& node, const MemoryPlan& plan);

/// True when `node` reads `operand` only at the index it writes each result element to (elementwise
/// ops, collectives, reshape in row-major order; fused loop and epilogue kernels reading it only through
/// elementwise ops of its shape), so a result may be written over it in place.
bool readsOnlyAtWrittenIndex(const Node& node, const Value* operand);

/// Checks `plan` against `graph` from scratch: every non-constant result with bytes has a 64-aligned
/// buffer of its size, and no two buffers live at the same time overlap in the arena, except a
/// result written in place over an operand that dies at its producer.
Status checkMemoryPlan(const Graph& graph, const MemoryPlan& plan);

}  // namespace smelt
