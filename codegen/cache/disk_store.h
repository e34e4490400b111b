// The kernel cache's disk layer: one file per key, written atomically, read back only when it is
// ours, whole and for the same key. Safe across threads and processes: writers rename into place.
#pragma once

#include "ir/support/expected.h"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// What the cache folder holds.
struct DiskUsage {
  size_t entries = 0;  ///< entry files (`*.kc`)
  uint64_t bytes = 0;  ///< their total size
};

/// The result of reading one entry: a payload on a hit; `rejected` when a file was there but was
/// refused (corrupt, truncated, foreign, another key's), which the caller counts.
struct DiskRead {
  std::optional<std::vector<std::byte>> payload;
  bool rejected = false;
};

/// Entries live at `<dir>/<first 2 hex digits>/<32 hex digits>.kc`; a write goes to a temporary
/// `<hex>.kc.tmp-<pid>-<n>` in the same folder and is renamed over the entry, so readers see the
/// old file or the new one, never half of one, and an interrupted write leaves only a temporary
/// that no lookup opens. The folder is created with mode 0700 on the first write; a folder owned by
/// someone else or writable by group/others disables this layer (warned once), as its entries could
/// be anybody's code.
class DiskStore {
 public:
  /// An empty `dir` disables the disk layer.
  explicit DiskStore(std::string dir);

  const std::string& dir() const { return dir_; }
  /// False once the folder was found unusable (see disabledReason()), or when dir() is empty.
  bool enabled() const { return state_.load(std::memory_order_acquire) != State::Disabled; }
  /// Why the disk layer is off; empty while it is on.
  std::string disabledReason() const;

  /// Reads the entry named `digest`; `keyText` must match the key stored in it. A bad entry is
  /// warned about (file and reason) and removed, except foreign-owned ones, which are only ignored.
  DiskRead read(const std::string& digest, const std::string& keyText);
  /// Writes the entry atomically. A failure is only warned about: the memory layer still has it.
  /// When the folder then holds more than maxBytes(), the least recently used entries are removed
  /// until it holds at most 80% of it.
  void write(const std::string& digest, const std::string& keyText,
             std::span<const std::byte> payload);
  /// Removes the entry named `digest` (one that read back whole but could not be loaded).
  void remove(const std::string& digest);

  /// The folder's size limit: $SMELT_CACHE_MAX_BYTES, else kDefaultMaxBytes; 0 means no limit.
  uint64_t maxBytes() const { return maxBytes_; }
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{2} << 30;

  /// Counts the entries and their bytes (temporaries are not entries).
  Expected<DiskUsage> usage();
  /// Removes every entry, stale temporaries and the then-empty sub-folders; returns the entry
  /// count. Only names the cache writes are touched, so a mistaken SMELT_CACHE_DIR loses no other
  /// files.
  Expected<size_t> clear();

 private:
  enum class State { Unchecked, Ready, Disabled };
  /// True when the folder is usable; checks it once. With `create`, a missing folder is created
  /// (mode 0700); without, a missing folder is simply not ready yet (a lookup before any store).
  bool ready(bool create);
  void disable(std::string reason);
  std::string entryPath(const std::string& digest) const;
  /// Removes least recently used entries (oldest modification time: a hit touches its entry) until
  /// the folder holds at most `target` bytes.
  void trim(uint64_t target);

  std::string dir_;
  std::atomic<State> state_{State::Unchecked};
  mutable std::mutex stateMutex_;  // guards the Unchecked -> Ready/Disabled step and reason_
  std::string reason_;
  std::atomic<uint64_t> maxBytes_;
  // The folder's size as this process last counted it plus what it wrote since (-1: not counted yet):
  // other processes' writes are seen at the next trim, which recounts.
  std::atomic<int64_t> knownBytes_{-1};
};

}  // namespace smelt
