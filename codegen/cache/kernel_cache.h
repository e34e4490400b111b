// KernelCache: compiled kernels kept in memory and on disk, keyed by CacheKey, so a kernel compiles
// once per machine rather than once per process. Thread-safe; one shared instance per process.
#pragma once

#include "codegen/cache/cache_key.h"
#include "codegen/cache/disk_store.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace smelt {

/// This process's cache counters (since the cache was created).
struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  uint64_t misses = 0;
  uint64_t stores = 0;
  /// Disk entries refused: corrupt, truncated, another key's, not owned by this user.
  uint64_t rejected = 0;
  /// Entries evicted because the backend could not load them (evict()).
  uint64_t evicted = 0;
};

/// Compiled kernels by key: a memory layer, then a disk layer (DiskStore) under dir(). Backends do
///   if (auto binary = KernelCache::global().lookup(key)) return load(*binary);
///   std::vector<std::byte> binary = compile(...);
///   KernelCache::global().store(key, binary);
/// Any failure of the disk layer (bad entry, unsafe or read-only folder) is logged and reads as a
/// miss, so the worst case is a recompile. The memory layer keeps at most kMemoryBytes of payloads
/// (the oldest stored go first: a backend keeps what it loaded, so this layer only saves disk reads). Two threads missing on one key both compile it; the second store wins,
/// harmlessly. SMELT_LOG=debug logs every hit, miss and store with the key's digest and backend.
class KernelCache {
 public:
  /// A cache whose disk layer lives in `dir` (created with mode 0700 on the first store); an empty
  /// `dir` keeps kernels in memory only.
  explicit KernelCache(std::string dir);
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The process-wide cache, in defaultCacheDir(): SMELT_CACHE_DIR, else ~/.cache/smelt or XDG's.
  static KernelCache& global();

  /// The compiled kernel stored under `key`, from memory or else from disk (then kept in memory).
  std::optional<std::vector<std::byte>> lookup(const CacheKey& key);
  /// Keeps `payload` under `key` in memory and writes it to disk; replaces what was there.
  void store(const CacheKey& key, std::span<const std::byte> payload);

  /// Removes `key`'s entry from memory and disk: its payload read back whole (the checksum held) but
  /// the backend could not load it (another driver or linker wrote it, or damage the checksum cannot
  /// see). The caller compiles it again and stores the result.
  void evict(const CacheKey& key);

  /// This process's counters.
  CacheStats stats() const;
  /// Entries and bytes on disk (all processes'); an error when the disk layer is disabled.
  Expected<DiskUsage> diskUsage() { return disk_.usage(); }
  /// Frees the memory layer; the disk entries stay (a long-running process returning memory).
  void clearMemory();
  /// Empties the memory layer and removes every disk entry; returns how many disk entries went.
  Expected<size_t> clear();

  /// The cache folder ("" when memory only).
  const std::string& dir() const { return disk_.dir(); }
  /// Whether the disk layer is in use: false for an unsafe or unusable folder (disabledReason()).
  bool diskEnabled() const { return disk_.enabled(); }
  /// Why the disk layer is off; empty while it is on.
  std::string disabledReason() const { return disk_.disabledReason(); }

 private:
  static constexpr uint64_t kMemoryBytes = uint64_t{64} << 20;
  void keepInMemory(std::string text, std::vector<std::byte> payload);  // memoryMutex_ held

  // Keyed by the full key text, not its digest: in memory a hash collision cannot even happen.
  std::unordered_map<std::string, std::vector<std::byte>> memory_;
  std::deque<std::string> memoryOrder_;  // keys in the order stored, for the size bound
  uint64_t memoryBytes_ = 0;
  mutable std::shared_mutex memoryMutex_;
  DiskStore disk_;
  std::atomic<uint64_t> memoryHits_{0}, diskHits_{0}, misses_{0}, stores_{0}, rejected_{0}, evicted_{0};
};

}  // namespace smelt
