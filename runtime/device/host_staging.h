// Host<->device copies through pinned (page-locked) staging memory, so transfers run as asynchronous
// DMA and overlap the work around them. A feed from ordinary (pageable) host memory is first copied
// into a pinned block from a per-device cache and the transfer from that block is enqueued on a
// stream: the call returns as soon as the caller's memory may be reused, while the transfer proceeds.
// Fetches go the other way: every transfer into pinned blocks is enqueued, the stream waited on once,
// and the blocks copied out. A block returns to the cache when an event after its transfer has
// passed. The CPU device copies directly (its "device" memory is host memory already), as do copies
// under kDirectCopyBelow bytes, where an event costs more than the copy, and copies for which no
// pinned memory could be had (they go from pageable memory, with one warning; blocks as large as
// one the driver refused are not asked for again).
//   auto staging = HostStaging::forDevice(device);
//   SMELT_CHECK_OK(staging->copyIn(memory, 0, batch.raw(), batch.byteSize(), copyStream));
//   SMELT_CHECK_OK(staging->copyOut({{loss.raw(), memory, 0, 4}}, device->defaultStream()));
#pragma once

#include "runtime/device/device.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace smelt {

struct StagingStats {
  std::size_t stagedCopies = 0;     // transfers through a pinned block
  std::size_t directCopies = 0;     // small or CPU copies made directly
  std::size_t stagedBytes = 0;
  std::size_t pinnedAllocations = 0;  // pinned blocks allocated from the driver
  std::size_t cachedBytes = 0;        // pinned bytes held for reuse now
  std::size_t pageableFallbacks = 0;  // copies made from pageable memory because pinning failed
};

/// One device->host transfer of a batch (copyOut).
struct HostFetch {
  void* dst = nullptr;
  DeviceMemory src;
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

/// See the file comment. Thread-safe.
class HostStaging {
 public:
  /// Copies under this many bytes skip the staging blocks.
  static constexpr std::size_t kDirectCopyBelow = 4096;
  /// Pinned memory the cache keeps at most; blocks beyond it are freed when they come back.
  static constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;

  /// The process's staging for `device` (one per device).
  static std::shared_ptr<HostStaging> forDevice(const std::shared_ptr<Device>& device);
  explicit HostStaging(std::shared_ptr<Device> device);
  ~HostStaging();

  /// Host to device: returns once `src` may be reused; the transfer runs on `stream`. `landed`, when
  /// given, receives the event after a staged transfer (null for a direct copy).
  Status copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes, DeviceStream& stream,
                std::shared_ptr<DeviceEvent>* landed = nullptr);
  /// Device to host, all of `fetches` on `stream`; returns when every `dst` holds its data.
  Status copyOut(std::span<const HostFetch> fetches, DeviceStream& stream);

  StagingStats stats() const;

 private:
  struct InFlight {
    std::unique_ptr<PinnedHostMemory> block;
    std::shared_ptr<DeviceEvent> done;
  };
  Expected<std::unique_ptr<PinnedHostMemory>> rent(std::size_t bytes);
  /// Moves blocks whose transfer has passed from inFlight_ to free_.
  void reclaimLocked();
  /// Lets go of the blocks and events of a device generation before the current one.
  void forgetStaleLocked();

  std::shared_ptr<Device> device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, std::unique_ptr<PinnedHostMemory>> free_;
  std::vector<InFlight> inFlight_;
  /// Blocks and events of a context a reset destroyed: kept, never freed (see forgetStaleLocked).
  std::vector<InFlight> retired_;
  StagingStats stats_;
  std::uint64_t generation_ = 0;
  bool warnedUnpinned_ = false;
  /// The smallest block size the driver refused to pin (0: none yet): blocks at least this large go
  /// pageable without asking again, as each asking would cost a failing driver call (page-locked memory
  /// runs out at a limit, ulimit -l or a container's cap, not by chance). A reset forgets it.
  std::size_t unpinnableFrom_ = 0;
};

}  // namespace smelt
