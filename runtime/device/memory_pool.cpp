// MemoryPool: size classes, the cache, out-of-memory retries and counters.
#include "runtime/device/memory_pool.h"

#include "codegen/log.h"

#include <chrono>
#include <cstdlib>
#include <string_view>

namespace smelt {

namespace {

constexpr std::size_t kPoolMinBlock = 512;
constexpr std::size_t kPoolLargeStep = std::size_t{1} << 20;
constexpr std::uint8_t kPoison = 0xFF;

bool envIs(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v && std::string_view(v) == value;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PoolOptions PoolOptions::fromEnvironment() {
  PoolOptions o;
  o.caching = !envIs("SMELT_POOL", "0");
#ifndef NDEBUG
  o.poison = true;
#endif
  if (envIs("SMELT_POOL_POISON", "1")) o.poison = true;
  if (envIs("SMELT_POOL_POISON", "0")) o.poison = false;
  return o;
}

// --- PooledBuffer

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : pool_(std::move(other.pool_)),
      memory_(std::exchange(other.memory_, {})),
      bytes_(std::exchange(other.bytes_, 0)),
      generation_(other.generation_) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    memory_ = std::exchange(other.memory_, {});
    bytes_ = std::exchange(other.bytes_, 0);
    generation_ = other.generation_;
  }
  return *this;
}

PooledBuffer::~PooledBuffer() { reset(); }

void PooledBuffer::reset() {
  if (pool_ && memory_) pool_->giveBack(memory_, generation_);
  pool_.reset();
  memory_ = {};
  bytes_ = 0;
}

// --- MemoryPool

MemoryPool::MemoryPool(std::shared_ptr<Device> device, PoolOptions options)
    : device_(std::move(device)), options_(options) {}

std::shared_ptr<MemoryPool> MemoryPool::create(std::shared_ptr<Device> device, PoolOptions options) {
  return std::shared_ptr<MemoryPool>(new MemoryPool(std::move(device), options));
}

std::shared_ptr<MemoryPool> MemoryPool::forDevice(const std::shared_ptr<Device>& device) {
  static std::mutex mutex;
  static auto* pools = new std::map<const Device*, std::shared_ptr<MemoryPool>>();  // for the process
  std::lock_guard lock(mutex);
  auto& pool = (*pools)[device.get()];
  if (!pool) pool = create(device);
  return pool;
}

MemoryPool::~MemoryPool() {
  std::lock_guard lock(mutex_);
  trimLocked();
}

std::size_t MemoryPool::roundSize(std::size_t bytes) {
  if (bytes <= kPoolMinBlock) return kPoolMinBlock;
  if (bytes <= kPoolLargeStep) {
    std::size_t size = kPoolMinBlock;
    while (size < bytes) size <<= 1;
    return size;
  }
  return (bytes + kPoolLargeStep - 1) / kPoolLargeStep * kPoolLargeStep;
}

Expected<DeviceMemory> MemoryPool::allocateLocked(std::size_t rounded) {
  auto start = std::chrono::steady_clock::now();
  Expected<DeviceMemory> memory = device_->allocate(rounded);
  if (!memory && isOutOfMemory(memory.error()) && !cached_.empty()) {
    // What the cache holds may be what the device lacks: give it all back and try once more.
    logger().info("{}: out of memory for {} bytes; freeing {} cached bytes and retrying", device_->id(), rounded,
                  stats_.cachedBytes);
    ++stats_.outOfMemoryRetries;
    trimLocked();
    memory = device_->allocate(rounded);
  }
  stats_.allocationSeconds += secondsSince(start);
  if (!memory) {
    return memory.error().withContext(fmt::format("{}: allocating {} bytes ({} in use, {} cached)", device_->id(),
                                                  rounded, stats_.inUseBytes, stats_.cachedBytes));
  }
  ++stats_.deviceAllocations;
  return memory;
}

Expected<PooledBuffer> MemoryPool::rent(std::size_t bytes) { return rentFrom(bytes, 0); }

Expected<PooledBuffer> MemoryPool::rentToOverwrite(std::size_t bytes) { return rentFrom(bytes, bytes); }

void MemoryPool::forgetStaleLocked() {
  const std::uint64_t now = device_->generation();
  if (now == generation_) return;
  // The device was reset: its old memory is gone with its context. Nothing cached may be handed out.
  for (auto& [size, memory] : cached_) device_->forget(memory);
  cached_.clear();
  stats_.cachedBytes = 0;
  generation_ = now;
}

Expected<PooledBuffer> MemoryPool::rentFrom(std::size_t bytes, std::size_t zeroFrom) {
  std::size_t rounded = roundSize(bytes);
  PooledBuffer buffer;
  bool recycled = false;
  {
    std::lock_guard lock(mutex_);
    forgetStaleLocked();
    buffer.generation_ = generation_;
    ++stats_.rents;
    // The smallest cached block that fits, if it wastes at most a quarter (exact for small classes).
    auto it = options_.caching ? cached_.lower_bound(rounded) : cached_.end();
    if (it != cached_.end() && it->first <= rounded + rounded / 4) {
      buffer.memory_ = it->second;
      stats_.cachedBytes -= static_cast<std::int64_t>(it->first);
      cached_.erase(it);
      ++stats_.hits;
      recycled = true;
    } else {
      SMELT_TRY(buffer.memory_, allocateLocked(rounded));
    }
    stats_.inUseBytes += static_cast<std::int64_t>(buffer.memory_.bytes);
    stats_.peakBytes = std::max(stats_.peakBytes, stats_.inUseBytes + stats_.cachedBytes);
  }
  buffer.pool_ = shared_from_this();
  buffer.bytes_ = bytes;
  // A recycled block held another tensor: zero it (from `zeroFrom`: the renter overwrites the rest)
  // unless it was poisoned on return.
  // The zeros must have landed before the renter's first use, which may be on a stream of its own
  // that nothing orders after the default one (CUDA's non-blocking streams): wait for them here.
  // On an H100 a graph's constants, uploaded on its own stream into a recycled arena, were zeroed
  // after the upload.
  if (recycled && !options_.poison && zeroFrom < buffer.memory_.bytes) {
    DeviceStream& stream = device_->defaultStream();
    SMELT_CHECK_OK(device_->fill(buffer.memory_, zeroFrom, buffer.memory_.bytes - zeroFrom, 0, stream));
    SMELT_CHECK_OK(stream.synchronize());
  }
  return buffer;
}

void MemoryPool::giveBack(DeviceMemory memory, std::uint64_t generation) {
  if (generation != device_->generation()) {
    // Rented before a reset: the memory died with the old context.
    std::lock_guard lock(mutex_);
    stats_.inUseBytes -= static_cast<std::int64_t>(memory.bytes);
    device_->forget(memory);
    return;
  }
  if (options_.caching && options_.poison) {
    // Best effort: a failed fill (a lost device) must not keep the block from being freed below.
    // Waited for, as rentFrom's zeros are: the next renter's stream is not ordered after this one.
    DeviceStream& stream = device_->defaultStream();
    if (!device_->fill(memory, 0, memory.bytes, kPoison, stream).ok() || !stream.synchronize().ok()) {
      std::lock_guard lock(mutex_);
      stats_.inUseBytes -= static_cast<std::int64_t>(memory.bytes);
      device_->release(memory);
      ++stats_.deviceFrees;
      return;
    }
  }
  std::lock_guard lock(mutex_);
  stats_.inUseBytes -= static_cast<std::int64_t>(memory.bytes);
  if (options_.caching) {
    cached_.emplace(memory.bytes, memory);
    stats_.cachedBytes += static_cast<std::int64_t>(memory.bytes);
    return;
  }
  auto start = std::chrono::steady_clock::now();
  device_->release(memory);
  stats_.allocationSeconds += secondsSince(start);
  ++stats_.deviceFrees;
}

void MemoryPool::trim() {
  std::lock_guard lock(mutex_);
  trimLocked();
}

void MemoryPool::trimLocked() {
  forgetStaleLocked();
  auto start = std::chrono::steady_clock::now();
  for (auto& [size, memory] : cached_) {
    device_->release(memory);
    ++stats_.deviceFrees;
  }
  cached_.clear();
  stats_.cachedBytes = 0;
  stats_.allocationSeconds += secondsSince(start);
}

PoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void MemoryPool::resetCounters() {
  std::lock_guard lock(mutex_);
  PoolStats fresh;
  fresh.inUseBytes = stats_.inUseBytes;
  fresh.cachedBytes = stats_.cachedBytes;
  fresh.peakBytes = stats_.inUseBytes + stats_.cachedBytes;
  stats_ = fresh;
}

}  // namespace smelt
