// The pass manager: builds a pipeline from a string ("cse,fold,dce"), runs it, and makes every step
// visible: verify after each pass, dump the IR after each pass (SMELT_DUMP_DIR), stop after pass N for
// bisecting, time each pass and keep per-pass statistics.
//   auto pm = PassManager::fromPipeline("cse,dce");   // or PassManager::defaultPipeline()
//   SMELT_TRY(bool changed, pm->run(graph));
#pragma once

#include "passes/pass.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace smelt {

/// The optimizing pipeline `smelt opt` runs when no --passes is given.
inline constexpr std::string_view kDefaultPipeline = "decompose,canonicalize,fold,cse,dce,split-reductions,fuse";

/// A pass by name. `create` may return null for a pass that is declared but not written yet.
struct PassInfo {
  std::string name;
  std::function<std::unique_ptr<Pass>()> create;
};

/// Every pass smelt knows, by pipeline name: the one list (a new pass adds its factory to passes.h
/// and its row here).
const std::vector<PassInfo>& registeredPasses();

/// How a PassManager runs its pipeline.
struct PassManagerOptions {
  /// Run the verifier after every pass. On by default in debug builds (NDEBUG not defined).
  bool verify = kVerifyByDefault;
  /// When not empty, the IR is written to DIR/00-input.ir and after every pass to DIR/NN-<pass>.ir
  /// (DIR is created).
  std::string dumpDir;
  /// When set, only the first N passes run (N = 0 runs none): for bisecting a bad pipeline.
  std::optional<size_t> stopAfter;

#ifdef NDEBUG
  static constexpr bool kVerifyByDefault = false;
#else
  static constexpr bool kVerifyByDefault = true;
#endif
  /// The defaults, with dumpDir taken from the SMELT_DUMP_DIR environment variable when it is set.
  static PassManagerOptions fromEnvironment();
};

/// What one pass did in the last run.
struct PassRun {
  std::string name;
  double seconds = 0;
  bool changed = false;
};

/// An ordered list of passes and the machinery around running them.
class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = PassManagerOptions::fromEnvironment())
      : options_(std::move(options)) {}

  /// Builds a pipeline from comma-separated pass names. Unknown names are an error listing the known
  /// ones; a known pass whose factory returns null is "not available".
  static Expected<PassManager> fromPipeline(std::string_view pipeline,
                                            PassManagerOptions options = PassManagerOptions::fromEnvironment(),
                                            const std::vector<PassInfo>& registry = registeredPasses());
  /// fromPipeline(kDefaultPipeline).
  static Expected<PassManager> defaultPipeline(PassManagerOptions options = PassManagerOptions::fromEnvironment());

  /// Appends a pass (tests add hand-made ones).
  void addPass(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  /// The pipeline's pass names in order.
  std::vector<std::string> passNames() const;
  /// Stops the pipeline right after the first pass named `name`; an error when it is not in the
  /// pipeline (`smelt dump --after`).
  Status stopAfterPass(std::string_view name);

  PassManagerOptions& options() { return options_; }
  const PassManagerOptions& options() const { return options_; }

  /// Runs the passes in order (up to options().stopAfter). Errors name the pass that failed or that
  /// left an invalid graph. Returns true when any pass changed the graph.
  Expected<bool> run(Graph& graph);

  /// Statistics of every run so far, keyed "<pass>.<statistic>".
  const PassContext& context() const { return context_; }
  /// One entry per pass that ran in the last run.
  const std::vector<PassRun>& lastRun() const { return runs_; }
  /// A table of the last run's times, changes and statistics (`smelt opt --stats`).
  std::string report() const;

 private:
  Status dump(const Graph& graph, size_t index, std::string_view passName) const;

  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  PassContext context_;
  std::vector<PassRun> runs_;
};

/// Splits "a,b,c" into entries, trimming spaces; empty ones are an error. An entry may carry options
/// in braces, commas included: "fuse{memory-budget=64M}".
Expected<std::vector<std::string>> splitPipeline(std::string_view pipeline);

/// `pipeline` with its fuse pass fusing under a memory budget ("fuse{memory-budget=BYTES}",
/// rematerialize.h); an error when it has no fuse pass or one with options already.
Expected<std::string> pipelineWithMemoryBudget(std::string_view pipeline, int64_t bytes);

}  // namespace smelt
