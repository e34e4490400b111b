// The pass interface: a named graph-to-graph transformation that says whether it changed anything.
//   class DeadCodeElimination final : public Pass { ... name() = "dce" ... };
// Passes are run by the PassManager (pass_manager.h), which verifies, dumps and times each one.
#pragma once

#include "ir/graph.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace smelt {

/// Shared state of one pipeline run: per-pass statistics ("nodes removed" -> 3) for reports.
class PassContext {
 public:
  /// Adds `amount` to statistic `name` of the running pass.
  void count(std::string_view name, int64_t amount = 1) { stats_[currentPass_ + "." + std::string(name)] += amount; }
  const std::map<std::string, int64_t>& statistics() const { return stats_; }
  void setCurrentPass(std::string name) { currentPass_ = std::move(name); }

 private:
  std::string currentPass_;
  std::map<std::string, int64_t> stats_;
};

/// One transformation of a graph.
class Pass {
 public:
  virtual ~Pass() = default;
  /// The kebab-case name used in pipelines, dumps and test folders ("cse", "fold").
  virtual std::string_view name() const = 0;
  /// One line for `smelt opt --help`-style listings.
  virtual std::string_view summary() const = 0;
  /// Transforms `graph` in place; returns true when it changed anything.
  virtual Expected<bool> run(Graph& graph, PassContext& context) = 0;
  /// Sets one option from a pipeline ("fuse{memory-budget=64M}"); passes without options refuse all.
  virtual Status setOption(std::string_view key, std::string_view value) {
    (void)value;
    return makeError("pass '{}' takes no option '{}'", name(), key);
  }
};

}  // namespace smelt
