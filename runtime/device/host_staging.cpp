// HostStaging: pinned blocks, their cache, and the transfers through them.
#include "runtime/device/host_staging.h"

#include <bit>
#include <cstring>
#include <unordered_map>

namespace smelt {

namespace {

/// Blocks come in powers of two from 64 KiB, so a block serves every copy up to its size.
std::size_t blockSize(std::size_t bytes) { return std::bit_ceil(std::max<std::size_t>(bytes, std::size_t{64} << 10)); }

}  // namespace

std::shared_ptr<HostStaging> HostStaging::forDevice(const std::shared_ptr<Device>& device) {
  static std::mutex mutex;
  // Never destroyed: devices live for the process, and waiting on a driver's events while the
  // process exits is no time to find it already torn down.
  static auto* stagings = new std::unordered_map<const Device*, std::shared_ptr<HostStaging>>();
  std::lock_guard lock(mutex);
  std::shared_ptr<HostStaging>& staging = (*stagings)[device.get()];
  if (!staging) staging = std::make_shared<HostStaging>(device);
  return staging;
}

HostStaging::HostStaging(std::shared_ptr<Device> device) : device_(std::move(device)) {}

HostStaging::~HostStaging() {
  // Transfers still running read or write the blocks: wait for them before the blocks are freed.
  for (InFlight& f : inFlight_) (void)f.done->synchronize();
}

void HostStaging::reclaimLocked() {
  for (size_t i = 0; i < inFlight_.size();) {
    Expected<bool> done = inFlight_[i].done->done();
    // A failed query (a lost device) also frees the block: nothing will write it any more.
    if (done.ok() && !*done) {
      ++i;
      continue;
    }
    std::unique_ptr<PinnedHostMemory> block = std::move(inFlight_[i].block);
    inFlight_.erase(inFlight_.begin() + static_cast<std::ptrdiff_t>(i));
    if (stats_.cachedBytes + block->bytes() <= kMaxCachedBytes) {
      stats_.cachedBytes += block->bytes();
      free_.emplace(block->bytes(), std::move(block));
    }
  }
}

Expected<std::unique_ptr<PinnedHostMemory>> HostStaging::rent(std::size_t bytes) {
  const std::size_t size = blockSize(bytes);
  {
    std::lock_guard lock(mutex_);
    reclaimLocked();
    if (auto it = free_.find(size); it != free_.end()) {
      std::unique_ptr<PinnedHostMemory> block = std::move(it->second);
      free_.erase(it);
      stats_.cachedBytes -= block->bytes();
      return block;
    }
    ++stats_.pinnedAllocations;
  }
  return device_->allocatePinned(size);
}

Status HostStaging::copyIn(DeviceMemory dst, std::size_t offset, const void* src, std::size_t bytes,
                           DeviceStream& stream, std::shared_ptr<DeviceEvent>* landed) {
  if (landed) landed->reset();
  if (device_->kind() == DeviceKind::kCpu || bytes < kDirectCopyBelow) {
    {
      std::lock_guard lock(mutex_);
      ++stats_.directCopies;
    }
    return device_->copyIn(dst, offset, src, bytes, stream);
  }
  SMELT_TRY(std::unique_ptr<PinnedHostMemory> block, rent(bytes));
  std::memcpy(block->data(), src, bytes);
  Expected<std::unique_ptr<DeviceEvent>> done = [&]() -> Expected<std::unique_ptr<DeviceEvent>> {
    SMELT_CHECK_OK(device_->copyIn(dst, offset, block->data(), bytes, stream));
    return stream.record();
  }();
  if (!done) {
    // The transfer may have been enqueued: the block must outlive it.
    (void)stream.synchronize();
    return done.error();
  }
  std::shared_ptr<DeviceEvent> event(std::move(*done));
  if (landed) *landed = event;
  std::lock_guard lock(mutex_);
  ++stats_.stagedCopies;
  stats_.stagedBytes += bytes;
  inFlight_.push_back({std::move(block), std::move(event)});
  return Status::success();
}

Status HostStaging::copyOut(std::span<const HostFetch> fetches, DeviceStream& stream) {
  std::vector<std::pair<const HostFetch*, std::unique_ptr<PinnedHostMemory>>> staged;
  size_t direct = 0;
  for (const HostFetch& f : fetches) {
    if (device_->kind() == DeviceKind::kCpu || f.bytes < kDirectCopyBelow) {
      SMELT_CHECK_OK(device_->copyOut(f.dst, f.src, f.offset, f.bytes, stream));
      ++direct;
      continue;
    }
    Expected<std::unique_ptr<PinnedHostMemory>> block = rent(f.bytes);
    Status enqueued = block ? device_->copyOut((*block)->data(), f.src, f.offset, f.bytes, stream) : block.error();
    if (!enqueued.ok()) {
      // Transfers enqueued before write into the blocks held here: let them finish first.
      if (!staged.empty()) (void)stream.synchronize();
      return enqueued;
    }
    staged.emplace_back(&f, std::move(*block));
  }
  Status waited = staged.empty() ? Status::success() : stream.synchronize();
  std::size_t bytes = 0;
  for (auto& [f, block] : staged) {
    if (waited.ok()) std::memcpy(f->dst, block->data(), f->bytes);
    bytes += f->bytes;
  }
  std::lock_guard lock(mutex_);
  stats_.directCopies += direct;
  stats_.stagedCopies += staged.size();
  stats_.stagedBytes += bytes;
  for (auto& [f, block] : staged) {
    if (stats_.cachedBytes + block->bytes() > kMaxCachedBytes) continue;
    stats_.cachedBytes += block->bytes();
    free_.emplace(block->bytes(), std::move(block));
  }
  return waited;
}

StagingStats HostStaging::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace smelt
