// Shared working memory (see working_memory.h).
#include "runtime/exec/working_memory.h"

#include "runtime/exec/arena_layout.h"

#include <algorithm>

namespace smelt {

Status SharedWorkingMemory::join(WorkingMemoryUser* user, const std::shared_ptr<Device>& device, int64_t bytes) {
  bytes = std::max<int64_t>(bytes, kArenaAlignment);  // some drivers refuse empty allocations
  const bool live = block_ && device_ == device && generation_ == device->generation();
  if (!live || bytes_ < bytes) {
    // The old block goes back to the pool once the device is done with it (after a reset, its work
    // died with the old context, and so did its users, which compile again).
    if (live) SMELT_CHECK_OK(device->defaultStream().synchronize());
    SMELT_TRY(PooledBuffer grown, MemoryPool::forDevice(device)->rent(static_cast<size_t>(bytes)));
    block_ = std::move(grown);
    bytes_ = bytes;
    device_ = device;
    generation_ = device->generation();
    ++rentals_;
    for (WorkingMemoryUser* other : users_) SMELT_CHECK_OK(other->rebindWorkingMemory());
  }
  users_.push_back(user);
  return Status::success();
}

void SharedWorkingMemory::leave(WorkingMemoryUser* user) {
  users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
}

}  // namespace smelt
