// Where an executable's buffers live: in its working memory (working_memory.h), the memory plan's
// buffers at their planned offsets, then one scratch region every vendor product shares (steps run one
// after another); and, on devices whose memory the host cannot address, in a slot block of its own, a
// slot per input, parameter, constant and computed graph output (host tensors are copied into them),
// each kArenaAlignment-aligned. The slots hold values between runs; the working memory does not, so
// graphs that never run at once can share it. Values a kernel reads or writes are bound to these or,
// by position, to what a run is fed and returns.
//   ArenaLayout arena = layoutArena(graph, plan, /*slots=*/true, constants, scratchBytes);
//   int64_t at = arena.inputSlots[0];  // in the slot block
#pragma once

#include "ir/graph.h"
#include "passes/plan_memory.h"

#include <cstdint>
#include <vector>

namespace smelt {

/// Where one of a kernel's buffers lives when it runs.
struct Binding {
  enum Kind : unsigned char { kArena, kInput, kParameter, kConstant, kOutput, kSizes };
  Kind kind = kArena;
  /// The working memory's byte offset (kArena), the input's, parameter's, constant's or output's position, or
  /// where a general kernel's run-time values start among the executable's (kSizes: an element).
  int64_t index = 0;
  /// Whether a run decides where it is (what it was fed, what it returns into).
  bool dynamic() const { return kind == kInput || kind == kParameter || kind == kOutput; }
  bool operator==(const Binding&) const = default;
};

struct ArenaLayout {
  /// Byte offsets of the slots in the slot block (empty without slots; -1 for an output no kernel
  /// computes), and the block's size.
  std::vector<int64_t> inputSlots, parameterSlots, constantSlots, outputSlots;
  int64_t slotBytes = 0;
  /// Where the products' shared scratch region starts in the working memory, after the plan's
  /// buffers, and the working memory's size.
  int64_t scratchOffset = 0;
  int64_t workingBytes = 0;
  /// Both.
  int64_t bytes = 0;
};

/// The layout for `graph` after `plan`: with `slots` for devices the host does not address directly;
/// `constants` lists the graph's constant values in the order bindings number them.
ArenaLayout layoutArena(const Graph& graph, const MemoryPlan& plan, bool slots,
                        const std::vector<const Value*>& constants, int64_t scratchBytes);

/// x rounded up to a multiple of a.
inline int64_t alignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace smelt
