// KernelCache: memory and disk hits, repair of bad entries, folder security, concurrency, clear.
#include "codegen/cache/cache_dir.h"
#include "codegen/cache/cache_explain.h"
#include "codegen/cache/kernel_cache.h"
#include "tests/codegen/cache/cache_test_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <thread>

namespace smelt {

namespace {

using test::entryPathOf;
using test::fakeBinary;
using test::makeKey;

mode_t modeOf(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("kernel cache: a store is a memory hit here, a disk hit for a second cache on the dir") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @add { ... }");
  std::vector<std::byte> binary = fakeBinary("add");
  {
    KernelCache first(tmp.path());
    CHECK(!first.lookup(key).has_value());
    first.store(key, binary);
    std::optional<std::vector<std::byte>> hit = first.lookup(key);
    REQUIRE(hit.has_value());
    CHECK(*hit == binary);
    CacheStats s = first.stats();
    CHECK((s.memoryHits == 1 && s.diskHits == 0 && s.misses == 1 && s.stores == 1 &&
           s.rejected == 0));
  }
  // A second instance shares nothing in memory with the first: what another process would see.
  KernelCache second(tmp.path());
  std::optional<std::vector<std::byte>> hit = second.lookup(key);
  REQUIRE(hit.has_value());
  CHECK(*hit == binary);
  CHECK(second.lookup(key).has_value());  // now from memory
  CacheStats s = second.stats();
  CHECK((s.memoryHits == 1 && s.diskHits == 1 && s.misses == 0));
  Expected<DiskUsage> usage = second.diskUsage();
  REQUIRE(usage.ok());
  CHECK(usage->entries == 1);
  CHECK(usage->bytes > binary.size());
}

/// Runs `body` in a forked child process (its own memory: only the folder is shared) and returns
/// its exit status.
template <typename F>
int inChildProcess(F body) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(body());
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

TEST_CASE("kernel cache: another process sees this one's entries, and this one sees its") {
  test::TempDir tmp;
  CacheKey mine = makeKey("kernel @mine {}"), theirs = makeKey("kernel @theirs {}");
  KernelCache cache(tmp.path());
  cache.store(mine, fakeBinary("mine"));
  int child = inChildProcess([&] {
    KernelCache other(tmp.path());
    if (other.lookup(mine) != fakeBinary("mine") || other.stats().diskHits != 1) return 1;
    other.store(theirs, fakeBinary("theirs"));
    return 0;
  });
  CHECK(child == 0);
  CHECK(cache.lookup(theirs) == fakeBinary("theirs"));
  CHECK(cache.stats().diskHits == 1);
}

TEST_CASE("kernel cache: keys differing in backend, target, options or driver share nothing") {
  test::TempDir tmp;
  KernelCache cache(tmp.path());
  CacheKey base = makeKey("kernel @k {}");
  cache.store(base, fakeBinary("base"));
  std::vector<CacheKey> others(4, base);
  others[0].backend = "hip";
  others[1].target = "sm_80";
  others[2].options = "-O0";
  others[3].driverVersion = "CUDA driver 11080";
  KernelCache fresh(tmp.path());
  for (const CacheKey& k : others) {
    CHECK(!cache.lookup(k).has_value());
    CHECK(!fresh.lookup(k).has_value());
  }
  CHECK(fresh.lookup(base).has_value());
}

TEST_CASE("kernel cache: SMELT_LOG=debug logs hits, misses and stores with digest and backend") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}", "opencl");
  std::string digest = key.digest();
  test::LogCapture log(spdlog::level::debug);
  KernelCache cache(tmp.path());
  (void)cache.lookup(key);
  cache.store(key, fakeBinary("k"));
  (void)cache.lookup(key);
  KernelCache other(tmp.path());
  (void)other.lookup(key);
  std::string text = log.text();
  CHECK(contains(text, "[debug] kernel cache: miss " + digest + " (opencl)"));
  CHECK(contains(text, "[debug] kernel cache: store " + digest + " (opencl, 64 bytes)"));
  CHECK(contains(text, "[debug] kernel cache: memory hit " + digest + " (opencl)"));
  CHECK(contains(text, "[debug] kernel cache: disk hit " + digest + " (opencl, 64 bytes)"));
}

TEST_CASE("kernel cache: a truncated entry is rejected, logged, a miss, and a store repairs it") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k"));
  std::string path = entryPathOf(tmp.path(), key);
  std::vector<char> bytes = test::readFile(path);
  bytes.resize(bytes.size() / 2);
  test::writeFile(path, bytes);

  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(cache.stats().rejected == 1);
  CHECK(cache.stats().misses == 1);
  CHECK(contains(log.text(), "[warning] kernel cache: rejected " + path + ": "));
  CHECK(!std::filesystem::exists(path));

  cache.store(key, fakeBinary("k"));
  std::optional<std::vector<std::byte>> again = KernelCache(tmp.path()).lookup(key);
  REQUIRE(again.has_value());
  CHECK(*again == fakeBinary("k"));
}

TEST_CASE("kernel cache: a flipped byte is rejected as a bad checksum, and a store repairs it") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k", 200));
  std::string path = entryPathOf(tmp.path(), key);
  std::vector<char> bytes = test::readFile(path);
  bytes[bytes.size() - 50] ^= 0x10;  // inside the payload
  test::writeFile(path, bytes);

  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(cache.stats().rejected == 1);
  CHECK(contains(log.text(), "rejected " + path + ": bad checksum"));
  cache.store(key, fakeBinary("k", 200));
  CHECK(KernelCache(tmp.path()).lookup(key) == fakeBinary("k", 200));
}

TEST_CASE("kernel cache: another key's entry under the same name (a hash collision) is a miss") {
  test::TempDir tmp;
  CacheKey a = makeKey("kernel @a {}"), b = makeKey("kernel @b {}");
  KernelCache(tmp.path()).store(a, fakeBinary("a"));
  // Plant a's entry where b's would be, as a digest collision would.
  std::filesystem::create_directories(
      std::filesystem::path(entryPathOf(tmp.path(), b)).parent_path());
  test::writeFile(entryPathOf(tmp.path(), b), test::readFile(entryPathOf(tmp.path(), a)));
  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(b).has_value());
  CHECK(contains(log.text(), "key mismatch"));
  CHECK(cache.lookup(a) == fakeBinary("a"));
}

TEST_CASE("kernel cache: the folder and its parents are created with mode 0700, entries 0600") {
  test::TempDir tmp;
  std::string dir = tmp / "a/b/cache";
  mode_t old = umask(0);  // even with a permissive umask
  KernelCache cache(dir);
  CacheKey key = makeKey("kernel @k {}");
  cache.store(key, fakeBinary("k"));
  umask(old);
  CHECK(cache.diskEnabled());
  CHECK(modeOf(tmp / "a") == 0700);
  CHECK(modeOf(tmp / "a/b") == 0700);
  CHECK(modeOf(dir) == 0700);
  std::string entry = entryPathOf(dir, key);
  CHECK(modeOf(std::filesystem::path(entry).parent_path().string()) == 0700);
  CHECK(modeOf(entry) == 0600);
}

TEST_CASE("kernel cache: a lookup before any store creates nothing") {
  test::TempDir tmp;
  KernelCache cache(tmp / "later");
  CHECK(!cache.lookup(makeKey("k")).has_value());
  CHECK(!std::filesystem::exists(tmp / "later"));
  CHECK(cache.diskUsage().ok());
  CHECK(cache.diskEnabled());
}

TEST_CASE("kernel cache: an entry owned by another user is ignored with a warning") {
  if (geteuid() != 0) {
    MESSAGE("skipped: chown to uid 65534 needs root");
    return;
  }
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k"));
  std::string path = entryPathOf(tmp.path(), key);
  REQUIRE(chown(path.c_str(), 65534, 65534) == 0);

  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(cache.stats().rejected == 1);
  CHECK(contains(log.text(), "ignoring " + path + ": owned by uid 65534"));
  CHECK(std::filesystem::exists(path));  // ignored, not deleted
  // Storing replaces it with our own file.
  cache.store(key, fakeBinary("k"));
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(st.st_uid == geteuid());
  CHECK(KernelCache(tmp.path()).lookup(key) == fakeBinary("k"));
}

TEST_CASE("kernel cache: an entry that is a symlink is not followed") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k"));
  std::string path = entryPathOf(tmp.path(), key);
  std::filesystem::rename(path, tmp / "elsewhere.kc");
  std::filesystem::create_symlink(tmp / "elsewhere.kc", path);
  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(contains(log.text(), "ignoring " + path));
}

TEST_CASE("kernel cache: a FIFO in an entry's place is refused at once, never waited on") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k"));
  std::string path = entryPathOf(tmp.path(), key);
  std::filesystem::remove(path);
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());  // before the fix: blocked here waiting for a writer
  CHECK(contains(log.text(), "rejected " + path + ": not a regular file"));
}

TEST_CASE("kernel cache: a folder writable by others disables the disk layer, memory still works") {
  test::TempDir tmp;
  std::string dir = tmp / "open";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  REQUIRE(chmod(dir.c_str(), 0777) == 0);
  test::LogCapture log;
  KernelCache cache(dir);
  CacheKey key = makeKey("kernel @k {}");
  cache.store(key, fakeBinary("k"));
  CHECK(!cache.diskEnabled());
  CHECK(contains(cache.disabledReason(), "mode 0777"));
  CHECK(contains(log.text(), "disk cache disabled, memory only: " + dir + " has mode 0777"));
  CHECK(cache.lookup(key) == fakeBinary("k"));
  CHECK(std::filesystem::is_empty(dir));
  CHECK(!cache.diskUsage().ok());
  CHECK(!cache.clear().ok());  // not ours to empty

  // Entries someone put there are not read either.
  test::TempDir safe;
  KernelCache(safe.path()).store(key, fakeBinary("k"));
  std::filesystem::copy(safe.path(), dir, std::filesystem::copy_options::recursive);
  CHECK(!KernelCache(dir).lookup(key).has_value());
}

TEST_CASE("kernel cache: a folder owned by another user disables the disk layer") {
  if (geteuid() != 0) {
    MESSAGE("skipped: chown to uid 65534 needs root");
    return;
  }
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  KernelCache(tmp.path()).store(key, fakeBinary("k"));
  REQUIRE(chown(tmp.path().c_str(), 65534, 65534) == 0);
  test::LogCapture log;
  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(!cache.diskEnabled());
  CHECK(contains(log.text(), "owned by uid 65534"));
}

TEST_CASE("kernel cache: temporaries of an interrupted write are never read, clear removes them") {
  test::TempDir tmp;
  CacheKey key = makeKey("kernel @k {}");
  test::TempDir scratch;
  KernelCache(scratch.path()).store(key, fakeBinary("k"));
  // A complete entry under a temporary's name (the writer died before its rename) and a half one.
  std::string path = entryPathOf(tmp.path(), key);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::vector<char> whole = test::readFile(entryPathOf(scratch.path(), key));
  test::writeFile(path + ".tmp-4242-0", whole);
  test::writeFile(path + ".tmp-4242-1", std::vector<char>(whole.begin(), whole.begin() + 10));

  KernelCache cache(tmp.path());
  CHECK(!cache.lookup(key).has_value());
  CHECK(cache.stats().rejected == 0);
  CHECK(cache.diskUsage()->entries == 0);
  Expected<size_t> removed = cache.clear();
  REQUIRE(removed.ok());
  CHECK(*removed == 0);
  CHECK(std::filesystem::is_empty(tmp.path()));
}

TEST_CASE("kernel cache: 8 threads storing and looking up 200 keys agree") {
  test::TempDir tmp;
  constexpr int kThreads = 8, kKeys = 200;
  // Two caches on one folder: threads of two "processes" racing on the same files.
  KernelCache a(tmp.path()), b(tmp.path());
  std::atomic<int> wrong{0}, lookups{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      KernelCache& cache = t % 2 ? a : b;
      std::vector<int> order(kKeys);
      for (int i = 0; i < kKeys; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(t));
      for (int i : order) {
        CacheKey key = makeKey(fmt::format("kernel @k{} {{}}", i));
        std::vector<std::byte> expected = fakeBinary(key.kernel, 32 + i);
        ++lookups;
        std::optional<std::vector<std::byte>> got = cache.lookup(key);
        if (got && *got != expected) ++wrong;
        if (!got) cache.store(key, expected);
        ++lookups;
        if (cache.lookup(key) != expected) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(wrong == 0);
  CacheStats sa = a.stats(), sb = b.stats();
  CHECK(sa.rejected + sb.rejected == 0);
  CHECK(sa.memoryHits + sa.diskHits + sa.misses + sb.memoryHits + sb.diskHits + sb.misses ==
        uint64_t(lookups));
  CHECK(sa.stores + sb.stores == sa.misses + sb.misses);
  KernelCache fresh(tmp.path());
  CHECK(fresh.diskUsage()->entries == kKeys);
  for (int i = 0; i < kKeys; ++i) {
    CacheKey key = makeKey(fmt::format("kernel @k{} {{}}", i));
    CHECK(fresh.lookup(key) == fakeBinary(key.kernel, 32 + i));
  }
  CHECK(fresh.stats().diskHits == kKeys);
}

TEST_CASE("kernel cache: clear empties memory and disk and says how many entries went") {
  test::TempDir tmp;
  KernelCache cache(tmp.path());
  for (int i = 0; i < 10; ++i) cache.store(makeKey(fmt::format("k{}", i)), fakeBinary("x"));
  // A file that is not the cache's own stays (a mistaken SMELT_CACHE_DIR must not lose files).
  test::writeFile(tmp / "notes.txt", {'h', 'i'});
  Expected<size_t> removed = cache.clear();
  REQUIRE(removed.ok());
  CHECK(*removed == 10);
  CHECK(cache.diskUsage()->entries == 0);
  CHECK(!cache.lookup(makeKey("k3")).has_value());
  CHECK(!KernelCache(tmp.path()).lookup(makeKey("k3")).has_value());
  CHECK(std::filesystem::exists(tmp / "notes.txt"));
  // The sub-folders went too.
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()), {}) == 1);
}

TEST_CASE("kernel cache: an empty folder name keeps kernels in memory only") {
  KernelCache cache("");
  cache.store(makeKey("k"), fakeBinary("k"));
  CHECK(cache.lookup(makeKey("k")) == fakeBinary("k"));
  CHECK(!cache.diskEnabled());
  CHECK(cache.clear().ok());
}

TEST_CASE("kernel cache: the default dir is SMELT_CACHE_DIR, else XDG_CACHE_HOME, else HOME") {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) {
      setenv(name, v->c_str(), 1);
    } else {
      unsetenv(name);
    }
  };
  auto smelt = saved("SMELT_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  setenv("SMELT_CACHE_DIR", "/x/smelt-cache", 1);
  setenv("XDG_CACHE_HOME", "/x/xdg", 1);
  setenv("HOME", "/x/home", 1);
  CHECK(defaultCacheDir() == "/x/smelt-cache");
  unsetenv("SMELT_CACHE_DIR");
  CHECK(defaultCacheDir() == "/x/xdg/smelt");
  setenv("XDG_CACHE_HOME", "relative", 1);  // invalid per the XDG spec: ignored
  CHECK(defaultCacheDir() == "/x/home/.cache/smelt");
  unsetenv("XDG_CACHE_HOME");
  CHECK(defaultCacheDir() == "/x/home/.cache/smelt");
  restore("SMELT_CACHE_DIR", smelt);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}


TEST_CASE("kernel cache: past SMELT_CACHE_MAX_BYTES the least recently used entries go first") {
  test::TempDir tmp;
  setenv("SMELT_CACHE_MAX_BYTES", "40000", 1);
  KernelCache cache(tmp.path());
  unsetenv("SMELT_CACHE_MAX_BYTES");
  std::vector<std::byte> payload(4000, std::byte{7});
  std::vector<CacheKey> keys;
  for (int i = 0; i < 8; ++i) {
    keys.push_back(makeKey(fmt::format("kernel @k{} {{ ... }}", i)));
    cache.store(keys.back(), payload);
  }
  // Entry 0 read back (a hit marks it used); its mtime then is the newest. Times are set apart
  // explicitly: a file system's clock may not tick between two stores.
  for (int i = 0; i < 8; ++i) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000000 + i, 0}};
    REQUIRE(utimensat(AT_FDCWD, entryPathOf(tmp.path(), keys[static_cast<size_t>(i)]).c_str(), times, 0) == 0);
  }
  cache.clearMemory();
  REQUIRE(cache.lookup(keys[0]).has_value());
  // Six more entries pass the 40,000-byte limit twice: each time the folder is trimmed to 80% of it.
  for (int i = 8; i < 14; ++i) {
    keys.push_back(makeKey(fmt::format("kernel @k{} {{ ... }}", i)));
    cache.store(keys.back(), payload);
  }
  Expected<DiskUsage> usage = cache.diskUsage();
  REQUIRE(usage.ok());
  CHECK(usage->bytes <= 40000);
  CHECK(usage->entries >= 7);
  auto onDisk = [&](size_t i) { return std::filesystem::exists(entryPathOf(tmp.path(), keys[i])); };
  CHECK(onDisk(0));    // used most recently among the old ones
  CHECK(!onDisk(1));   // the least recently used went
  CHECK(onDisk(13));   // the newest stays
}

TEST_CASE("kernel cache: the memory layer is bounded, the newest entries stay") {
  test::TempDir tmp;
  KernelCache cache("");  // memory only
  std::vector<std::byte> payload(size_t{8} << 20, std::byte{1});  // 8 MiB each, 64 MiB bound
  for (int i = 0; i < 12; ++i) cache.store(makeKey(fmt::format("kernel @big{} {{ ... }}", i)), payload);
  CHECK(!cache.lookup(makeKey("kernel @big0 { ... }")).has_value());
  CHECK(cache.lookup(makeKey("kernel @big11 { ... }")).has_value());
}


TEST_CASE("kernel cache: explain finds the entries holding a missed kernel under another key, and how they differ") {
  test::TempDir tmp;
  KernelCache cache(tmp.path());
  CacheKey stored = makeKey("kernel @k domain [4]");
  stored.target = "sm_80";
  cache.store(stored, fakeBinary("sm_80"));
  cache.store(makeKey("kernel @other domain [8]"), fakeBinary("other"));
  CacheKey wanted = stored;
  wanted.target = "sm_90";
  wanted.options = "-O2";
  CHECK_FALSE(cache.lookup(wanted).has_value());
  std::vector<NearMiss> near = findNearMisses(tmp.path(), wanted);
  REQUIRE(near.size() == 1);
  CHECK(near[0].file.find(stored.digest()) != std::string::npos);
  REQUIRE(near[0].differences.size() == 2);
  CHECK(near[0].differences[0] == "options: '" + stored.options + "' in the entry, '-O2' here");
  CHECK(near[0].differences[1] == "target: 'sm_80' in the entry, 'sm_90' here");
  // A kernel no entry holds: nothing near.
  CHECK(findNearMisses(tmp.path(), makeKey("kernel @new domain [2]")).empty());
  // The key text parses back into its fields.
  auto fields = parseCacheKeyText(wanted.text());
  REQUIRE(fields.ok());
  REQUIRE(fields->size() == 7);
  CHECK(fields->back() == std::pair<std::string, std::string>{"kernel", "kernel @k domain [4]"});
}

}  // namespace smelt
