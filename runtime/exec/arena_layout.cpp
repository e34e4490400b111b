// Arena layout (see arena_layout.h).
#include "runtime/exec/arena_layout.h"

namespace smelt {

ArenaLayout layoutArena(const Graph& graph, const MemoryPlan& plan, bool slots,
                        const std::vector<const Value*>& constants, int64_t scratchBytes) {
  ArenaLayout layout;
  int64_t end = 0;
  auto slot = [&](const Value* v) {
    end = alignUp(end, kArenaAlignment);
    int64_t at = end;
    end += static_cast<int64_t>(v->type().byteSize());
    return at;
  };
  if (slots) {
    for (const Value* v : graph.inputs()) layout.inputSlots.push_back(slot(v));
    for (const Value* v : graph.parameters()) layout.parameterSlots.push_back(slot(v));
    for (const Value* v : constants) layout.constantSlots.push_back(slot(v));
    // Computed outputs get slots of their own (the plan keeps them apart for the caller anyway); an
    // output that is an input, parameter or constant, or a value returned under a second name, is
    // read from where that lives.
    std::vector<const Value*> seen;
    for (const GraphOutput& o : graph.outputs()) {
      bool computed = o.value->kind() == ValueKind::Result && o.value->producer()->opName() != "constant";
      bool first = std::find(seen.begin(), seen.end(), o.value) == seen.end();
      layout.outputSlots.push_back(computed && first ? slot(o.value) : -1);
      seen.push_back(o.value);
    }
  }
  layout.slotBytes = end;
  layout.scratchOffset = alignUp(plan.peakBytes, kArenaAlignment);
  layout.workingBytes = layout.scratchOffset + scratchBytes;
  layout.bytes = layout.slotBytes + layout.workingBytes;
  return layout;
}

}  // namespace smelt
