// The one arena of a device executable (OpenCL, CUDA): the memory plan's buffers first, then a slot
// per input, parameter, constant and computed graph output (the plan keeps outputs apart for the
// caller; a device executable reads them back from their slots), each kArenaAlignment-aligned.
//   DeviceArenaLayout arena = layoutDeviceArena(graph, plan);
//   int64_t at = arena.offsetOf(value, plan);   // any value a kernel reads or writes
#pragma once

#include "ir/graph.h"
#include "passes/plan_memory.h"

#include <map>
#include <vector>

namespace smelt {

/// Where an input, parameter or constant lives in the arena.
struct ArenaSlot {
  int64_t offset = 0;
  const Value* value = nullptr;
};

struct DeviceArenaLayout {
  std::vector<ArenaSlot> inputs, parameters, constants;
  std::map<const Value*, int64_t> slots;  // every slotted value (outputs included)
  int64_t bytes = 0;

  /// The byte offset of `v`: its slot, or its buffer in the plan (0 for empty tensors, never touched).
  int64_t offsetOf(const Value* v, const MemoryPlan& plan) const;
};

DeviceArenaLayout layoutDeviceArena(const Graph& graph, const MemoryPlan& plan);

/// x rounded up to a multiple of a.
inline int64_t alignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace smelt
