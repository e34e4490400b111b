// Large host buffers kept for reuse, as a device's caching pool keeps device memory
// (runtime/device/memory_pool.h): a tensor's storage of 1 MiB or more comes from here and goes back
// here. A fresh 64 MB output from malloc is a fresh mmap whose every page faults on first touch
// (measured: a 16M-element elementwise chain ran 2.8x slower into new output tensors than into reused
// ones); a cached block's pages are already there. Sizes round up to whole MiB, and a block serves
// requests that round to its size. The cache holds at most 1 GiB or an eighth of the machine's
// memory, whichever is less, and frees what does not fit. SMELT_HOST_CACHE=0 turns it off (and it is
// off under AddressSanitizer, whose use-after-free checks it would hide). Thread-safe.
//   void* p = allocateHostBlock(bytes);   // 64-byte aligned
//   freeHostBlock(p, bytes);              // the same `bytes`
#pragma once

#include <cstddef>
#include <cstdint>

namespace smelt {

/// Blocks below this come from operator new and go back to it.
inline constexpr std::size_t kHostBlockCacheFrom = std::size_t{1} << 20;

/// `bytes` of host memory, 64-byte aligned (never null: std::bad_alloc when the system has none).
void* allocateHostBlock(std::size_t bytes);
/// Returns a block from allocateHostBlock of the same `bytes`.
void freeHostBlock(void* block, std::size_t bytes) noexcept;

/// What the cache did (for tests and benchmarks).
struct HostBlockStats {
  std::int64_t allocations = 0;  ///< blocks taken from the system
  std::int64_t reuses = 0;       ///< blocks served from the cache
  std::int64_t cachedBytes = 0;  ///< held for reuse now
};
HostBlockStats hostBlockStats();
/// Frees every cached block.
void trimHostBlocks();

}  // namespace smelt
