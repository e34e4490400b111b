// A caching allocator per device, as PyTorch's CUDA caching allocator: memory returned to the pool
// is kept and handed out again instead of going back to the driver (cuMemAlloc and clCreateBuffer
// cost microseconds to milliseconds and synchronize). Sizes are rounded to classes so blocks are
// reusable: powers of two from 512 bytes to 1 MiB, whole MiB above, where a cached block at most a
// quarter larger than asked serves. When the device is out of memory the pool frees every cached
// block and tries once more. A recycled block is zeroed before it is handed out, or, when poisoning
// (debug builds, SMELT_POOL_POISON=1), filled with 0xFF bytes (NaN in every float type) when returned,
// so one tensor's data never shows up in another. SMELT_POOL=0 turns caching off (every rent is a
// driver allocation, every return a free) for comparison. After the device is reset (Device::reset)
// the blocks of its old context are dropped, never handed out again.
//   std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
//   SMELT_TRY(PooledBuffer buffer, pool->rent(bytes));   // returned when `buffer` is destroyed
//   PoolStats s = pool->stats();                          // allocated, cached, peak, hit rate
#pragma once

#include "runtime/device/device.h"

#include <map>
#include <memory>
#include <mutex>

namespace smelt {

struct PoolOptions {
  /// Keep returned blocks for reuse ($SMELT_POOL=0: no).
  bool caching = true;
  /// Fill returned blocks with 0xFF instead of zeroing them when rented again (debug builds, or
  /// $SMELT_POOL_POISON=1).
  bool poison = false;
  /// Options from the environment.
  static PoolOptions fromEnvironment();
};

struct PoolStats {
  std::int64_t inUseBytes = 0;    ///< rented and not yet returned (rounded sizes)
  std::int64_t cachedBytes = 0;   ///< held by the pool, free to rent
  std::int64_t peakBytes = 0;     ///< the most in use plus cached at once (what the device gave)
  std::int64_t rents = 0;
  std::int64_t hits = 0;          ///< rents served from the cache
  std::int64_t deviceAllocations = 0;
  std::int64_t deviceFrees = 0;
  std::int64_t outOfMemoryRetries = 0;  ///< times the cache was freed to retry an allocation
  double allocationSeconds = 0;   ///< time spent in the driver's allocate and free calls
  double hitRate() const { return rents ? static_cast<double>(hits) / static_cast<double>(rents) : 0.0; }
};

class MemoryPool;

/// Rented device memory, returned to its pool on destruction. Move-only.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer();

  /// The block (its `bytes` is the rounded size, at least what was asked).
  DeviceMemory memory() const { return memory_; }
  /// What was asked for.
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return static_cast<bool>(memory_); }
  /// Returns the block now.
  void reset();

 private:
  friend class MemoryPool;
  std::shared_ptr<MemoryPool> pool_;
  DeviceMemory memory_;
  std::size_t bytes_ = 0;
  std::uint64_t generation_ = 0;  // the device's when rented (see Device::reset)
};

/// See the file comment. Thread-safe.
class MemoryPool : public std::enable_shared_from_this<MemoryPool> {
 public:
  static std::shared_ptr<MemoryPool> create(std::shared_ptr<Device> device, PoolOptions options = PoolOptions::fromEnvironment());
  /// The process's pool for `device` (one per device, created on first use).
  static std::shared_ptr<MemoryPool> forDevice(const std::shared_ptr<Device>& device);
  ~MemoryPool();

  /// At least `bytes` of device memory, zeroed (or poisoned, see the file comment) on the device's
  /// default stream. Out of memory after freeing the cache is an error naming the device, the size
  /// and what the pool holds.
  Expected<PooledBuffer> rent(std::size_t bytes);
  /// The same for a caller that overwrites all of [0, bytes) before anything reads it (a copy into
  /// it, enqueued right away): only a recycled block's tail past `bytes` is zeroed, which spares a
  /// device-wide fill per uploaded batch or fetched output.
  Expected<PooledBuffer> rentToOverwrite(std::size_t bytes);
  /// Frees every cached block back to the device.
  void trim();
  PoolStats stats() const;
  /// Zeroes the counters (not the blocks), for measuring one phase.
  void resetCounters();
  Device& device() const { return *device_; }
  const PoolOptions& options() const { return options_; }

  /// The size class `bytes` rounds to.
  static std::size_t roundSize(std::size_t bytes);

 private:
  friend class PooledBuffer;
  MemoryPool(std::shared_ptr<Device> device, PoolOptions options);
  void giveBack(DeviceMemory memory, std::uint64_t generation);
  /// Drops the cached blocks of a device generation before the current one.
  void forgetStaleLocked();
  Expected<DeviceMemory> allocateLocked(std::size_t rounded);
  Expected<PooledBuffer> rentFrom(std::size_t bytes, std::size_t zeroFrom);
  void trimLocked();

  std::shared_ptr<Device> device_;
  PoolOptions options_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, DeviceMemory> cached_;  // by rounded size
  PoolStats stats_;
  std::uint64_t generation_ = 0;  // the device's generation the cache belongs to
};

}  // namespace smelt
