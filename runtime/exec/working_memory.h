// Working memory: where a compiled graph's memory plan and vendor-product scratch live while it runs,
// the part of its arena that holds nothing between runs (inputs, parameters and constants have slots
// of their own: arena_layout.h). Graphs that never run at once share one block: the specializations
// of a symbolic executable (one per binding of its dimensions) and a training step's batch sizes.
// The block is sized for the largest of them seen so far: a smaller one runs in it at its own plan's
// offsets, and a larger one grows it, the others then rebound to the new block (their offsets stay;
// only the base moves: no re-planning), so however many bindings are kept, one block is held.
//   auto shared = std::make_shared<SharedWorkingMemory>();
//   options.workingMemory = shared;  // every executable compiled with these options joins it
#pragma once

#include "runtime/device/memory_pool.h"

#include <memory>
#include <vector>

namespace smelt {

/// One graph that runs in shared working memory (CompiledGraph's state).
class WorkingMemoryUser {
 public:
  virtual ~WorkingMemoryUser() = default;
  /// Binds its kernels' arguments to the block now shared (SharedWorkingMemory::memory()).
  virtual Status rebindWorkingMemory() = 0;
};

/// See the file comment. Its users run one after another, never at once (as one Executable's runs;
/// not thread-safe). Nothing waits on the host when they take turns: every run on a device joins the
/// default stream at its start and the default stream follows it at its end (compiled_graph_run.cpp),
/// so one user's kernels start on the device after the last one's finished.
class SharedWorkingMemory {
 public:
  SharedWorkingMemory() = default;
  SharedWorkingMemory(const SharedWorkingMemory&) = delete;
  SharedWorkingMemory& operator=(const SharedWorkingMemory&) = delete;

  /// Whether a graph on `device` can join: the block's device, or no block yet.
  bool accepts(const std::shared_ptr<Device>& device) const { return !device_ || device_ == device; }
  /// Adds `user`, which needs `bytes`: the block grows to them first when it is smaller (or was
  /// rented before a reset of the device), every other user rebound to the new block once the
  /// device finished with the old one. Then memory() is where `user` works.
  Status join(WorkingMemoryUser* user, const std::shared_ptr<Device>& device, int64_t bytes);
  /// Removes `user` (its destructor).
  void leave(WorkingMemoryUser* user);

  DeviceMemory memory() const { return block_.memory(); }
  /// The block's size: the largest need of its users so far.
  int64_t bytes() const { return bytes_; }
  /// How many blocks it rented: 1, plus one per growth and per device reset.
  int rentals() const { return rentals_; }

 private:
  std::shared_ptr<Device> device_;
  PooledBuffer block_;
  int64_t bytes_ = 0;
  std::uint64_t generation_ = 0;
  int rentals_ = 0;
  std::vector<WorkingMemoryUser*> users_;
};

}  // namespace smelt
