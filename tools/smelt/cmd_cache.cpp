// `smelt cache stats|clear`: what the persistent kernel cache ($SMELT_CACHE_DIR, else
// $XDG_CACHE_HOME/smelt, else ~/.cache/smelt) holds, and emptying it.
#include "codegen/cache/kernel_cache.h"
#include "tools/smelt/commands.h"

#include <fmt/format.h>

namespace smelt::cli {

namespace {

int printStats(KernelCache& cache) {
  fmt::print("dir: {}\n", cache.dir().empty() ? "(none: memory only)" : cache.dir());
  Expected<DiskUsage> usage = cache.diskUsage();
  if (usage.ok()) {
    fmt::print("disk: enabled\nentries: {}\nbytes: {}\n", usage->entries, usage->bytes);
  } else {
    // Still a success: the folder being refused is what the user asked to see.
    fmt::print("disk: disabled ({})\nentries: 0\nbytes: 0\n", cache.disabledReason());
  }
  // Counters of this process only; a compiling command reports its own under SMELT_LOG=debug.
  CacheStats s = cache.stats();
  fmt::print("memory hits: {}\ndisk hits: {}\nmisses: {}\nstores: {}\nrejected: {}\n", s.memoryHits,
             s.diskHits, s.misses, s.stores, s.rejected);
  return 0;
}

int clearCache(KernelCache& cache) {
  Expected<size_t> removed = cache.clear();
  if (!removed.ok()) return fail(removed.error().message());
  fmt::print("removed {} entr{} from {}\n", *removed, *removed == 1 ? "y" : "ies",
             cache.dir().empty() ? "(none: memory only)" : cache.dir());
  return 0;
}

}  // namespace

Action addCacheCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("cache", "Inspect or empty the compiled-kernel cache (SMELT_CACHE_DIR)");
  cmd->require_subcommand(1);
  auto* stats =
      cmd->add_subcommand("stats", "Print the cache folder, its entries and bytes, and counters");
  auto* clear = cmd->add_subcommand("clear", "Remove every cached kernel");
  return [stats, clear]() {
    KernelCache& cache = KernelCache::global();
    if (stats->parsed()) return printStats(cache);
    if (clear->parsed()) return clearCache(cache);
    return fail("cache: expected stats or clear");
  };
}

}  // namespace smelt::cli
