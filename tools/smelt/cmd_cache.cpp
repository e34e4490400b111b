// `smelt cache stats|clear|explain`: what the persistent kernel cache ($SMELT_CACHE_DIR, else
// $XDG_CACHE_HOME/smelt, else ~/.cache/smelt) holds, emptying it, and what a model's kernels' keys are
// made of and why an entry missed.
#include "codegen/cache/cache_explain.h"
#include "codegen/cache/kernel_cache.h"
#include "runtime/device/device_list.h"
#include "runtime/exec/compiled_graph.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#ifdef SMELT_HAVE_LLVM
#include "codegen/llvm/llvm_jit.h"
#endif

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

struct ExplainOptions {
  std::string file, grad;
  std::vector<std::string> dims;
};

/// For each kernel `file` compiles to on the CPU: its key's digest, hit or miss, and for a miss the
/// entries holding the same kernel under another key with the fields that differ.
int explain(KernelCache& cache, const ExplainOptions& options) {
#ifdef SMELT_HAVE_LLVM
  SMELT_TRY_CLI(Graph graph, loadWithGradients(options.file, options.grad, options.dims));
  SMELT_TRY_CLI(auto cpu, openDevice("cpu"));
  SMELT_TRY_CLI(auto kernels, CompiledGraph::lowerKernels(graph, cpu, {.device = "cpu"}));
  SMELT_TRY_CLI(codegen::LlvmJit * jit, codegen::LlvmJit::global());
  fmt::print("cache: {}\n", cache.dir().empty() ? "(none: memory only)" : cache.dir());
  bool first = true;
  int hits = 0, misses = 0;
  for (const auto& [symbol, kernel] : kernels) {
    const CacheKey key = jit->keyFor(kernel);
    if (first) {
      // The fields every kernel's key shares here; the kernel's own text is the rest.
      fmt::print("key: smelt {}, backend {}, compiler {}, options {}\n     target {}\n", SMELT_VERSION, key.backend,
                 key.compilerVersion, key.options, key.target);
      first = false;
    }
    const bool hit = cache.lookup(key).has_value();
    hits += hit;
    misses += !hit;
    const std::string from = kernel.provenance.empty() ? "" : " (" + kernel.provenance.front() + ")";
    fmt::print("{}{}: {} {}\n", symbol, from, key.digest(), hit ? "hit" : "miss");
    if (hit || cache.dir().empty()) continue;
    std::vector<NearMiss> near = findNearMisses(cache.dir(), key);
    if (near.empty()) {
      fmt::print("  no entry holds this kernel: never compiled with this cache folder, or evicted (SMELT_CACHE_MAX_BYTES)\n");
    }
    for (const NearMiss& m : near) {
      fmt::print("  {} holds it under another key:\n", m.file);
      for (const std::string& d : m.differences) fmt::print("    {}\n", d);
    }
  }
  fmt::print("{} kernels: {} hit, {} missed\n", hits + misses, hits, misses);
  return 0;
#else
  (void)cache;
  (void)options;
  return fail("smelt cache explain: this smelt was built without LLVM (it explains the CPU's kernels)");
#endif
}

}  // namespace

Action addCacheCommand(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("cache", "Inspect or empty the compiled-kernel cache (SMELT_CACHE_DIR)");
  cmd->require_subcommand(1);
  auto* stats =
      cmd->add_subcommand("stats", "Print the cache folder, its entries and bytes, and counters");
  auto* clear = cmd->add_subcommand("clear", "Remove every cached kernel");
  auto* why = cmd->add_subcommand(
      "explain", "For each kernel a model compiles to on the CPU: its key, hit or miss, and why an entry missed");
  auto options = std::make_shared<ExplainOptions>();
  addModelFileArgument(why, options->file);
  addDimOption(why, options->dims);
  why->add_option("--grad", options->grad, "NAME[,NAME...]: include the backward graph's kernels");
  return [stats, clear, why, options]() {
    KernelCache& cache = KernelCache::global();
    if (stats->parsed()) return printStats(cache);
    if (clear->parsed()) return clearCache(cache);
    if (why->parsed()) return explain(cache, *options);
    return fail("cache: expected stats, clear or explain");
  };
}

}  // namespace smelt::cli
