// The host block cache (see host_block_cache.h).
#include "ir/support/host_block_cache.h"

#include "ir/support/env_switch.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unistd.h>

namespace smelt {

namespace {

constexpr std::size_t kStep = std::size_t{1} << 20;
constexpr std::size_t kAlignment = 64;

bool cachingEnabled() {
#if defined(__SANITIZE_ADDRESS__)
  return false;  // a reused block would hide a use after free from AddressSanitizer
#else
  return !switchedOff("SMELT_HOST_CACHE");
#endif
}

/// An eighth of physical memory, at most 1 GiB.
std::size_t capacity() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  std::size_t physical = pages > 0 && pageSize > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(pageSize)
                                                   : std::size_t{8} << 30;
  return std::min(physical / 8, std::size_t{1} << 30);
}

struct Cache {
  std::mutex mutex;
  std::multimap<std::size_t, void*> free;  // by rounded size
  HostBlockStats stats;
  const bool enabled = cachingEnabled();
  const std::size_t limit = capacity();
};

Cache& cache() {
  static auto* c = new Cache();  // never destroyed: tensors may be freed during exit
  return *c;
}

std::size_t rounded(std::size_t bytes) { return (bytes + kStep - 1) / kStep * kStep; }

void* systemBlock(std::size_t size) {
  void* p = std::aligned_alloc(kAlignment, size);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* allocateHostBlock(std::size_t bytes) {
  if (bytes < kHostBlockCacheFrom) return ::operator new(std::max<std::size_t>(bytes, 1), std::align_val_t{kAlignment});
  const std::size_t size = rounded(bytes);
  Cache& c = cache();
  if (c.enabled) {
    std::lock_guard lock(c.mutex);
    // A cached block of the same rounded size (a training loop's tensors come back at the sizes
    // they left with); freeHostBlock files a block under that size again.
    if (auto it = c.free.find(size); it != c.free.end()) {
      void* p = it->second;
      c.stats.cachedBytes -= static_cast<std::int64_t>(size);
      c.free.erase(it);
      ++c.stats.reuses;
      return p;
    }
    ++c.stats.allocations;
  }
  return systemBlock(size);
}

void freeHostBlock(void* block, std::size_t bytes) noexcept {
  if (!block) return;
  if (bytes < kHostBlockCacheFrom) {
    ::operator delete(block, std::align_val_t{kAlignment});
    return;
  }
  const std::size_t size = rounded(bytes);
  Cache& c = cache();
  if (c.enabled) {
    std::lock_guard lock(c.mutex);
    if (static_cast<std::size_t>(c.stats.cachedBytes) + size <= c.limit) {
      c.free.emplace(size, block);
      c.stats.cachedBytes += static_cast<std::int64_t>(size);
      return;
    }
  }
  std::free(block);
}

HostBlockStats hostBlockStats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.stats;
}

void trimHostBlocks() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  for (auto& [size, block] : c.free) std::free(block);
  c.free.clear();
  c.stats.cachedBytes = 0;
}

}  // namespace smelt
