// KernelCache: the memory layer, the counters and the debug log over the disk layer.
#include "codegen/cache/kernel_cache.h"

#include "codegen/cache/cache_dir.h"
#include "codegen/log.h"

#include <mutex>

namespace smelt {

KernelCache::KernelCache(std::string dir) : disk_(std::move(dir)) {}

KernelCache& KernelCache::global() {
  // Never destroyed: backends may still look kernels up in static destructors or detached threads.
  static KernelCache* instance = new KernelCache(defaultCacheDir());
  return *instance;
}

std::optional<std::vector<std::byte>> KernelCache::lookup(const CacheKey& key) {
  std::string text = key.text();
  {
    std::shared_lock lock(memoryMutex_);
    if (auto it = memory_.find(text); it != memory_.end()) {
      ++memoryHits_;
      // The digest costs a hash: compute it only when it will be printed.
      if (logger().should_log(spdlog::level::debug)) {
        logger().debug("kernel cache: memory hit {} ({})", key.digest(), key.backend);
      }
      return it->second;
    }
  }
  std::string digest = cacheDigest(text);
  DiskRead read = disk_.read(digest, text);
  if (read.rejected) ++rejected_;
  if (read.payload) {
    ++diskHits_;
    logger().debug("kernel cache: disk hit {} ({}, {} bytes)", digest, key.backend,
                   read.payload->size());
    std::unique_lock lock(memoryMutex_);
    // A concurrent store() of this key may have won; both hold the same kernel.
    if (!memory_.count(text)) keepInMemory(std::move(text), *read.payload);
    return std::move(read.payload);
  }
  ++misses_;
  logger().debug("kernel cache: miss {} ({})", digest, key.backend);
  return std::nullopt;
}

void KernelCache::store(const CacheKey& key, std::span<const std::byte> payload) {
  std::string text = key.text();
  std::string digest = cacheDigest(text);
  {
    std::unique_lock lock(memoryMutex_);
    keepInMemory(text, std::vector<std::byte>(payload.begin(), payload.end()));
  }
  ++stores_;
  logger().debug("kernel cache: store {} ({}, {} bytes)", digest, key.backend, payload.size());
  disk_.write(digest, text, payload);
}

void KernelCache::keepInMemory(std::string text, std::vector<std::byte> payload) {
  if (auto it = memory_.find(text); it != memory_.end()) {
    memoryBytes_ -= it->second.size();
    it->second = std::move(payload);
    memoryBytes_ += it->second.size();
  } else {
    memoryBytes_ += payload.size();
    memoryOrder_.push_back(text);
    memory_.emplace(std::move(text), std::move(payload));
  }
  // The newest entry always stays, however large.
  while (memoryBytes_ > kMemoryBytes && memoryOrder_.size() > 1) {
    auto it = memory_.find(memoryOrder_.front());
    if (it != memory_.end()) {
      memoryBytes_ -= it->second.size();
      memory_.erase(it);
    }
    memoryOrder_.pop_front();
  }
}

void KernelCache::evict(const CacheKey& key) {
  std::string text = key.text();
  {
    std::unique_lock lock(memoryMutex_);
    if (auto it = memory_.find(text); it != memory_.end()) {
      memoryBytes_ -= it->second.size();
      memory_.erase(it);
      // Its name stays in memoryOrder_ until it reaches the front; erasing an absent key is harmless.
    }
  }
  ++evicted_;
  std::string digest = cacheDigest(text);
  logger().warn("kernel cache: entry {} ({}) could not be loaded; evicted, the kernel will be recompiled", digest,
                key.backend);
  disk_.remove(digest);
}

CacheStats KernelCache::stats() const {
  return {memoryHits_.load(), diskHits_.load(), misses_.load(), stores_.load(), rejected_.load(), evicted_.load()};
}

void KernelCache::clearMemory() {
  std::unique_lock lock(memoryMutex_);
  memory_.clear();
  memoryOrder_.clear();
  memoryBytes_ = 0;
}

Expected<size_t> KernelCache::clear() {
  clearMemory();
  if (dir().empty()) return size_t{0};
  return disk_.clear();
}

}  // namespace smelt
