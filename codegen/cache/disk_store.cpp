// The disk layer: safe-folder checks, atomic writes, checked reads, usage and clear.
#include "codegen/cache/disk_store.h"

#include "codegen/cache/cache_dir.h"
#include "codegen/cache/entry_format.h"
#include "codegen/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

namespace smelt {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kEntrySuffix = ".kc";
constexpr std::string_view kTempMarker = ".kc.tmp-";
// Far above any real kernel binary: a bigger file is damage, and reading it would waste memory.
constexpr off_t kMaxEntryBytes = off_t{1} << 30;

bool isHex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

enum class FileKind { Entry, Temporary, Other };

/// Classifies a file name inside a `<2 hex>` sub-folder by the names write() creates.
FileKind classify(std::string_view name) {
  if (name.size() < 32 || !isHex(name.substr(0, 32))) return FileKind::Other;
  std::string_view rest = name.substr(32);
  if (rest == kEntrySuffix) return FileKind::Entry;
  if (rest.starts_with(kTempMarker)) return FileKind::Temporary;
  return FileKind::Other;
}

std::string errnoText() { return std::strerror(errno); }

/// Calls `visit(path, kind, size)` for every entry and temporary under `dir`, then `leave(subdir)`
/// for each sub-folder. Symlinks and foreign names are skipped; nothing is followed out of `dir`.
Status walkCache(const std::string& dir,
                 const std::function<Status(const fs::path&, FileKind, uint64_t)>& visit,
                 const std::function<void(const fs::path&)>& leave = {}) {
  std::error_code ec;
  fs::directory_iterator top(dir, ec), end;
  if (ec == std::errc::no_such_file_or_directory) return Status::success();
  if (ec) return makeError("cannot list {}: {}", dir, ec.message());
  for (; top != end; top.increment(ec)) {
    if (ec) return makeError("cannot list {}: {}", dir, ec.message());
    std::string name = top->path().filename().string();
    bool isDir = top->symlink_status(ec).type() == fs::file_type::directory;
    if (name.size() != 2 || !isHex(name) || !isDir) continue;
    fs::directory_iterator files(top->path(), ec);
    if (ec) return makeError("cannot list {}: {}", top->path().string(), ec.message());
    for (; files != end; files.increment(ec)) {
      if (ec) return makeError("cannot list {}: {}", top->path().string(), ec.message());
      FileKind kind = classify(files->path().filename().string());
      bool isFile = files->symlink_status(ec).type() == fs::file_type::regular;
      if (kind == FileKind::Other || !isFile) continue;
      uint64_t size = files->file_size(ec);
      if (ec) size = 0;  // removed meanwhile by another process: nothing to count
      SMELT_CHECK_OK(visit(files->path(), kind, size));
    }
    if (leave) leave(top->path());
  }
  return Status::success();
}

/// Reads all of `fd`, which fstat said holds `size` bytes (it may shrink or grow meanwhile).
Expected<std::vector<std::byte>> readAll(int fd, off_t size) {
  std::vector<std::byte> data(static_cast<size_t>(size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return makeError("read failed: {}", errnoText());
    if (n == 0) break;  // shrank: the format check reports it as truncated
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

Status writeAll(int fd, std::span<const std::byte> data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return makeError("write failed: {}", errnoText());
    data = data.subspan(static_cast<size_t>(n));
  }
  return Status::success();
}

/// Removes `path` only if it is still the file `seen` describes: another process may have renamed a
/// fresh entry into place since we read the bad one, and that one must stay.
void removeIfUnchanged(const std::string& path, const struct stat& seen) {
  struct stat now;
  if (lstat(path.c_str(), &now) == 0 && now.st_dev == seen.st_dev && now.st_ino == seen.st_ino) {
    ::unlink(path.c_str());
  }
}

/// A process-unique suffix for temporaries: pid plus a counter (threads of one process never clash;
/// O_EXCL catches the rest, e.g. two hosts sharing the folder over NFS).
std::string tempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format(".tmp-{}-{}", getpid(), counter.fetch_add(1));
}

}  // namespace

namespace {

uint64_t maxBytesFromEnvironment() {
  const char* env = std::getenv("SMELT_CACHE_MAX_BYTES");
  if (!env || !*env) return DiskStore::kDefaultMaxBytes;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || env[0] == '-') {
    logger().warn("kernel cache: SMELT_CACHE_MAX_BYTES='{}' is not a byte count; the limit stays {} bytes", env,
                  DiskStore::kDefaultMaxBytes);
    return DiskStore::kDefaultMaxBytes;
  }
  return value;
}

}  // namespace

DiskStore::DiskStore(std::string dir) : dir_(std::move(dir)), maxBytes_(maxBytesFromEnvironment()) {
  if (dir_.empty()) {
    state_ = State::Disabled;
    reason_ = "no cache directory (no SMELT_CACHE_DIR, XDG_CACHE_HOME or home)";
  }
}

std::string DiskStore::disabledReason() const {
  std::lock_guard lock(stateMutex_);
  return reason_;
}

void DiskStore::disable(std::string reason) {
  logger().warn("kernel cache: disk cache disabled, memory only: {}", reason);
  reason_ = std::move(reason);
  state_.store(State::Disabled, std::memory_order_release);
}

bool DiskStore::ready(bool create) {
  State s = state_.load(std::memory_order_acquire);
  if (s != State::Unchecked) return s == State::Ready;
  std::lock_guard lock(stateMutex_);
  s = state_.load(std::memory_order_relaxed);
  if (s != State::Unchecked) return s == State::Ready;
  struct stat st;
  // A lookup before any store: the folder does not exist yet and there is nothing to check.
  if (!create && stat(dir_.c_str(), &st) != 0 && errno == ENOENT) return false;
  if (create) {
    if (Status made = createPrivateDir(dir_); !made.ok()) {
      disable(made.error().message());
      return false;
    }
  }
  if (Status safe = checkPrivateDir(dir_); !safe.ok()) {
    disable(safe.error().message());
    return false;
  }
  state_.store(State::Ready, std::memory_order_release);
  return true;
}

std::string DiskStore::entryPath(const std::string& digest) const {
  return fmt::format("{}/{}/{}{}", dir_, digest.substr(0, 2), digest, kEntrySuffix);
}

DiskRead DiskStore::read(const std::string& digest, const std::string& keyText) {
  DiskRead result;
  if (!ready(/*create=*/false)) return result;
  std::string path = entryPath(digest);
  // O_NOFOLLOW: an entry must be a file we wrote, not a link to one somewhere else. O_NONBLOCK: opening a FIFO
  // put in an entry's place would wait for a writer forever; so opened, it is refused below as not a regular
  // file (the flag changes nothing for one).
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return result;
    if (errno == ELOOP) {
      logger().warn("kernel cache: ignoring {}: a symlink, not an entry this cache wrote", path);
      result.rejected = true;
    } else {
      logger().warn("kernel cache: ignoring {}: cannot open it: {}", path, errnoText());
    }
    return result;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    logger().warn("kernel cache: ignoring {}: cannot stat it: {}", path, errnoText());
    ::close(fd);
    return result;
  }
  std::string why;
  Expected<std::vector<std::byte>> data = makeError("unread");
  if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != geteuid()) {
    // A cache entry is code that will run: never load one written by somebody else.
    ::close(fd);
    logger().warn("kernel cache: ignoring {}: owned by uid {}, not by this user (uid {})", path,
                  st.st_uid, geteuid());
    result.rejected = true;
    return result;
  } else if (st.st_size > kMaxEntryBytes) {
    why = fmt::format("{} bytes is too large for an entry", st.st_size);
  } else {
    data = readAll(fd, st.st_size);
    if (!data.ok()) why = data.error().message();
  }
  if (why.empty()) {
    Expected<std::vector<std::byte>> payload = decodeCacheEntry(*data, keyText);
    if (payload.ok()) {
      // A hit marks the entry recently used: trim() removes the least recently used first.
      ::futimens(fd, nullptr);
      ::close(fd);
      result.payload = std::move(payload).value();
      return result;
    }
    why = payload.error().message();
  }
  ::close(fd);
  logger().warn("kernel cache: rejected {}: {}; removed, the kernel will be recompiled", path, why);
  removeIfUnchanged(path, st);
  result.rejected = true;
  return result;
}

void DiskStore::write(const std::string& digest, const std::string& keyText,
                      std::span<const std::byte> payload) {
  if (!ready(/*create=*/true)) return;
  std::string subdir = fmt::format("{}/{}", dir_, digest.substr(0, 2));
  if (::mkdir(subdir.c_str(), 0700) == 0) {
    ::chmod(subdir.c_str(), 0700);  // as in createPrivateDir: do not let the umask decide
  } else if (errno != EEXIST) {
    logger().warn("kernel cache: cannot create {}: {}; entry kept in memory only", subdir,
                  errnoText());
    return;
  }
  std::string path = entryPath(digest);
  std::string temp = path + tempSuffix();  // "<hex>.kc.tmp-<pid>-<n>": never opened by read()
  std::vector<std::byte> bytes = encodeCacheEntry(keyText, payload);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    logger().warn("kernel cache: cannot create {}: {}; entry kept in memory only", temp,
                  errnoText());
    return;
  }
  // No fsync: after a crash a half-written entry fails its checksum and is recompiled, which is
  // cheaper than syncing every kernel.
  Status written = writeAll(fd, bytes);
  if (::close(fd) != 0 && written.ok()) written = makeError("close failed: {}", errnoText());
  if (written.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    written = makeError("rename to {} failed: {}", path, errnoText());
  }
  if (!written.ok()) {
    ::unlink(temp.c_str());
    logger().warn("kernel cache: cannot write {}: {}; entry kept in memory only", temp,
                  written.error().message());
    return;
  }
  uint64_t limit = maxBytes_.load();
  if (limit == 0) return;
  if (knownBytes_.load() < 0) {
    Expected<DiskUsage> counted = usage();
    knownBytes_ = counted ? static_cast<int64_t>(counted->bytes) : 0;
  } else {
    knownBytes_ += static_cast<int64_t>(bytes.size());
  }
  if (static_cast<uint64_t>(knownBytes_.load()) > limit) trim(limit / 10 * 8);
}

void DiskStore::remove(const std::string& digest) {
  if (!ready(/*create=*/false)) return;
  std::string path = entryPath(digest);
  if (::unlink(path.c_str()) == 0) logger().debug("kernel cache: removed {}", path);
}

void DiskStore::trim(uint64_t target) {
  struct Entry {
    fs::path path;
    uint64_t bytes;
    int64_t usedNs;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  Status walked = walkCache(dir_, [&](const fs::path& path, FileKind kind, uint64_t size) -> Status {
    if (kind != FileKind::Entry) return Status::success();
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return Status::success();
    entries.push_back({path, size, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec});
    total += size;
    return Status::success();
  });
  if (!walked.ok()) {
    logger().warn("kernel cache: cannot trim {}: {}", dir_, walked.error().message());
    return;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.usedNs < b.usedNs; });
  size_t removed = 0;
  uint64_t before = total;
  for (const Entry& e : entries) {
    if (total <= target) break;
    if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) {
      total -= std::min(total, e.bytes);
      ++removed;
    }
  }
  knownBytes_ = static_cast<int64_t>(total);
  logger().info("kernel cache: {} held {} bytes, over its limit of {} (SMELT_CACHE_MAX_BYTES); removed the {} least "
                "recently used entries",
                dir_, before, maxBytes_.load(), removed);
}

Expected<DiskUsage> DiskStore::usage() {
  DiskUsage usage;
  if (!ready(/*create=*/false)) {
    if (!enabled()) return makeError("kernel cache disk layer is disabled: {}", disabledReason());
    return usage;  // the folder does not exist yet
  }
  SMELT_CHECK_OK(walkCache(dir_, [&](const fs::path&, FileKind kind, uint64_t size) -> Status {
    if (kind == FileKind::Entry) {
      ++usage.entries;
      usage.bytes += size;
    }
    return Status::success();
  }));
  return usage;
}

Expected<size_t> DiskStore::clear() {
  size_t removed = 0;
  if (!ready(/*create=*/false)) {
    // An unsafe folder is not ours to empty.
    if (!enabled()) return makeError("kernel cache disk layer is disabled: {}", disabledReason());
    return removed;
  }
  auto remove = [&](const fs::path& path, FileKind kind, uint64_t) -> Status {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return makeError("cannot remove {}: {}", path.string(), errnoText());
    }
    if (kind == FileKind::Entry) ++removed;
    return Status::success();
  };
  // rmdir fails on a folder still holding something (another process's fresh entry): keep it.
  SMELT_CHECK_OK(walkCache(dir_, remove, [](const fs::path& subdir) { ::rmdir(subdir.c_str()); }));
  return removed;
}

}  // namespace smelt
