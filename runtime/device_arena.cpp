// Device arena layout (see device_arena.h).
#include "runtime/device_arena.h"

namespace smelt {

DeviceArenaLayout layoutDeviceArena(const Graph& graph, const MemoryPlan& plan) {
  DeviceArenaLayout layout;
  int64_t end = plan.peakBytes;
  auto slot = [&](const Value* v) {
    end = alignUp(end, kArenaAlignment);
    layout.slots[v] = end;
    end += static_cast<int64_t>(v->type().byteSize());
    return end - static_cast<int64_t>(v->type().byteSize());
  };
  for (const Value* v : graph.inputs()) layout.inputs.push_back({slot(v), v});
  for (const Value* v : graph.parameters()) layout.parameters.push_back({slot(v), v});
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant") layout.constants.push_back({slot(node->result(0)), node->result(0)});
  }
  for (const GraphOutput& o : graph.outputs()) {
    if (o.value->kind() == ValueKind::Result && !layout.slots.count(o.value)) slot(o.value);
  }
  layout.bytes = end;
  return layout;
}

int64_t DeviceArenaLayout::offsetOf(const Value* v, const MemoryPlan& plan) const {
  if (auto it = slots.find(v); it != slots.end()) return it->second;
  const BufferAssignment* a = plan.find(v);
  return a ? a->offset : 0;
}

}  // namespace smelt
