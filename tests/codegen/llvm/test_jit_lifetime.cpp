// How long compiled CPU code lives: the kernels of dropped executables are unloaded (a process
// compiling graph after graph does not grow), shared kernels stay while any holder lives, and a cached
// object that passes its checksum but does not load is evicted and compiled again.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "codegen/cache/entry_format.h"
#include "codegen/cache/kernel_cache.h"
#include "codegen/llvm/llvm_jit.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

// A graph whose kernel is new to the cache: the constant differs per call and per test run.
Graph scaledTanh(double scale) {
  return testing::parseOrFail(fmt::format(R"(graph @g(%x: f32[8,16]) {{
  %0 = constant() {{value = dense<f32[]> [{}]}} : f32[]
  %1 = mul(%x, %0) : f32[8,16]
  %2 = tanh(%1) : f32[8,16]
  return y = %2
}})",
                                          scale));
}

void runAgainstReference(const Graph& graph) {
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  auto actual = (*exe)->run(feeds);
  REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  CHECK(testing::compareTensors((*actual)[0], (*expected)[0], 1e-5).empty());
}

// Random per process (not the test seed, which repeats): a rerun must compile new kernels too.
double freshScale(int i) {
  static const double base = 1.0 + static_cast<double>(std::random_device{}() % 1000000) * 1e-7;
  return base + i * 1e-3;
}

std::set<std::filesystem::path> cacheEntries() {
  std::set<std::filesystem::path> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(KernelCache::global().dir(), ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".kc") out.insert(it->path());
  }
  return out;
}

}  // namespace

TEST_CASE("llvm: the code of dropped executables is unloaded, and compiling it again works") {
  auto jit = codegen::LlvmJit::global();
  REQUIRE(jit.ok());
  size_t before = (*jit)->loadedKernels();
  for (int i = 0; i < 40; ++i) runAgainstReference(scaledTanh(freshScale(i)));
  CHECK((*jit)->loadedKernels() == before);
  // The same kernels again, after their code was unloaded: their symbols are defined afresh.
  for (int i = 0; i < 3; ++i) runAgainstReference(scaledTanh(freshScale(i)));
  CHECK((*jit)->loadedKernels() == before);
}

TEST_CASE("llvm: two executables of one graph share its kernels, loaded until the last is dropped") {
  auto jit = codegen::LlvmJit::global();
  REQUIRE(jit.ok());
  size_t before = (*jit)->loadedKernels();
  Graph graph = scaledTanh(freshScale(100));
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto first = Executable::compile(graph);
  REQUIRE(first.ok());
  size_t loaded = (*jit)->loadedKernels();
  CHECK(loaded > before);
  auto second = Executable::compile(graph);
  REQUIRE(second.ok());
  CHECK((*jit)->loadedKernels() == loaded);
  first->reset();
  CHECK((*jit)->loadedKernels() == loaded);
  auto out = (*second)->run(feeds);
  REQUIRE(out.ok());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  CHECK(testing::compareTensors((*out)[0], (*expected)[0], 1e-5).empty());
  second->reset();
  CHECK((*jit)->loadedKernels() == before);
}

TEST_CASE("kernel cache: an entry whose checksum holds but whose object does not load is evicted and rebuilt") {
  // A cache folder of its own: tests running beside this one add entries to the shared one. ctest runs
  // each case in its own process, where the cache is not created yet.
  std::filesystem::path own =
      std::filesystem::temp_directory_path() / fmt::format("smelt_evict_{}", std::random_device{}());
  setenv("SMELT_CACHE_DIR", own.c_str(), 1);
  if (KernelCache::global().dir() != own.string()) {
    MESSAGE("skipped: the process's kernel cache was created before this case (run it alone, as ctest does)");
    return;
  }
  REQUIRE(KernelCache::global().diskEnabled());
  Graph graph = scaledTanh(freshScale(200));
  std::set<std::filesystem::path> old = cacheEntries();
  runAgainstReference(graph);  // compiles and stores the new kernels
  std::vector<std::filesystem::path> added;
  for (const auto& p : cacheEntries()) {
    if (!old.count(p)) added.push_back(p);
  }
  REQUIRE(!added.empty());
  // Each new entry rewritten with a valid checksum over a payload that is not an object file.
  for (const auto& path : added) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 16);
    uint32_t keyLength = 0;
    std::memcpy(&keyLength, bytes.data() + 12, 4);  // after the magic and the version (entry_format.h)
    std::string key = bytes.substr(16, keyLength);
    std::string garbage = "not an object file";
    std::vector<std::byte> entry = encodeCacheEntry(key, std::as_bytes(std::span(garbage.data(), garbage.size())));
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(entry.data()), static_cast<std::streamsize>(entry.size()));
  }
  KernelCache::global().clearMemory();
  uint64_t evictedBefore = KernelCache::global().stats().evicted;
  runAgainstReference(graph);
  CHECK(KernelCache::global().stats().evicted - evictedBefore == added.size());
  // And the entries on disk hold objects again: a third compile loads them without evicting.
  KernelCache::global().clearMemory();
  runAgainstReference(graph);
  CHECK(KernelCache::global().stats().evicted - evictedBefore == added.size());
  std::filesystem::remove_all(own);
}
