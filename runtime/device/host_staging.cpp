// HostStaging: pinned blocks, their cache, and the transfers through them.
#include "runtime/device/host_staging.h"

#include "codegen/log.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace smelt {

namespace {

constexpr std::size_t kStagingLargeBlock = std::size_t{64} << 20;
constexpr std::size_t kStagingLargeStep = std::size_t{2} << 20;

/// Blocks come in powers of two from 64 KiB to 64 MiB, so a block serves every copy up to its size;
/// above that in steps of 2 MiB (a 2.2 GB feed pins 2.2 GB, not 4).
std::size_t blockSize(std::size_t bytes) {
  if (bytes > kStagingLargeBlock) return (bytes + kStagingLargeStep - 1) / kStagingLargeStep * kStagingLargeStep;
  return std::bit_ceil(std::max<std::size_t>(bytes, std::size_t{64} << 10));
}

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

void HostStaging::forgetStaleLocked() {
  const std::uint64_t now = device_->generation();
  if (now == generation_) return;
  // The device was reset: its pinned memory and events died with the old context. Freeing them now
  // could free what a new allocation reuses, so they are set aside, never freed (a reset is rare).
  for (auto& [size, block] : free_) retired_.push_back({std::move(block), nullptr});
  for (InFlight& f : inFlight_) retired_.push_back(std::move(f));
  free_.clear();
  inFlight_.clear();
  stats_.cachedBytes = 0;
  unpinnableFrom_ = 0;
  generation_ = now;
}

Expected<std::unique_ptr<PinnedHostMemory>> HostStaging::rent(std::size_t bytes) {
  const std::size_t size = blockSize(bytes);
  {
    std::lock_guard lock(mutex_);
    forgetStaleLocked();
    reclaimLocked();
    // The smallest free block that fits, wasting at most an eighth of it.
    if (auto it = free_.lower_bound(size); it != free_.end() && it->first <= size + size / 8) {
      std::unique_ptr<PinnedHostMemory> block = std::move(it->second);
      free_.erase(it);
      stats_.cachedBytes -= block->bytes();
      return block;
    }
    if (unpinnableFrom_ != 0 && size >= unpinnableFrom_) {
      ++stats_.pageableFallbacks;
      return makeError("{}: {} bytes of pinned memory were refused before", device_->id(), unpinnableFrom_);
    }
    ++stats_.pinnedAllocations;
  }
  Expected<std::unique_ptr<PinnedHostMemory>> block = device_->allocatePinned(size);
  if (!block) {
    // Page-locked memory is a limited resource (ulimit -l, a container's cap): without it the copy
    // goes from pageable memory instead, slower but correct. Said once.
    std::lock_guard lock(mutex_);
    if (!warnedUnpinned_) {
      logger().warn("{}: {}; host copies go through pageable memory", device_->id(), block.error().message());
      warnedUnpinned_ = true;
    }
    unpinnableFrom_ = unpinnableFrom_ == 0 ? size : std::min(unpinnableFrom_, size);
    ++stats_.pageableFallbacks;
  }
  return block;
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
  Expected<std::unique_ptr<PinnedHostMemory>> rented = rent(bytes);
  if (!rented) return device_->copyIn(dst, offset, src, bytes, stream);  // pageable: done with src on return
  std::unique_ptr<PinnedHostMemory> block = std::move(*rented);
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
    if (!block) {
      // Into pageable memory: the copy waits for the stream, so the data is there on return.
      SMELT_CHECK_OK(device_->copyOut(f.dst, f.src, f.offset, f.bytes, stream));
      ++direct;
      continue;
    }
    Status enqueued = device_->copyOut((*block)->data(), f.src, f.offset, f.bytes, stream);
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
