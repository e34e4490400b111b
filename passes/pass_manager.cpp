// The pass manager: pipelines from strings, and verify / dump / stop-after / timing around each pass.
#include "passes/pass_manager.h"

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/passes.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace smelt {

namespace {

// Past this many nodes a verification error names the dump folder instead of embedding the IR.
constexpr size_t kMaxNodesInError = 100;

std::string knownPassNames(const std::vector<PassInfo>& registry) {
  std::string names;
  for (const PassInfo& info : registry) names += (names.empty() ? "" : ", ") + info.name;
  return names;
}

/// One pipeline entry: "name" or "name{key=value,key=value}".
struct PassSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
};

Expected<PassSpec> parsePassSpec(std::string_view entry) {
  size_t open = entry.find('{');
  PassSpec spec{std::string(entry.substr(0, open)), {}};
  if (open == std::string_view::npos) return spec;
  if (entry.back() != '}') return makeError("pipeline entry '{}': options must end with '}}'", entry);
  std::string_view options = entry.substr(open + 1, entry.size() - open - 2);
  while (!options.empty()) {
    size_t comma = options.find(',');
    std::string_view item = options.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return makeError("pipeline entry '{}': option '{}' is not key=value", entry, item);
    }
    spec.options.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
  }
  return spec;
}

}  // namespace

const std::vector<PassInfo>& registeredPasses() {
  static const std::vector<PassInfo> passes = {
      {"canonicalize", createCanonicalize},
      {"cse", createCommonSubexpressionElimination},
      {"dce", createDeadCodeElimination},
      {"decompose", createDecompose},
      {"fold", createConstantFolding},
      {"fuse", createFuse},
      {"plan-memory", createPlanMemory},
      {"split-reductions", createSplitReductions},
      {"widen-products", createWidenProducts},
  };
  return passes;
}

PassManagerOptions PassManagerOptions::fromEnvironment() {
  PassManagerOptions options;
  if (const char* dir = std::getenv("SMELT_DUMP_DIR"); dir && *dir) options.dumpDir = dir;
  return options;
}

Expected<std::vector<std::string>> splitPipeline(std::string_view pipeline) {
  std::vector<std::string> names;
  size_t start = 0;
  // A comma inside a pass's options ("fuse{a=1,b=2}") does not end the pass.
  auto nextComma = [&](size_t from) {
    int depth = 0;
    for (size_t i = from; i < pipeline.size(); ++i) {
      if (pipeline[i] == '{') ++depth;
      if (pipeline[i] == '}') --depth;
      if (pipeline[i] == ',' && depth == 0) return i;
    }
    return std::string_view::npos;
  };
  while (true) {
    size_t comma = nextComma(start);
    std::string_view piece = pipeline.substr(start, comma == std::string_view::npos ? comma : comma - start);
    while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    if (piece.empty()) return makeError("pipeline '{}': empty pass name", pipeline);
    names.emplace_back(piece);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

Expected<std::string> pipelineWithMemoryBudget(std::string_view pipeline, int64_t bytes) {
  SMELT_TRY(std::vector<std::string> entries, splitPipeline(pipeline));
  bool found = false;
  std::string out;
  for (std::string& entry : entries) {
    if (entry.starts_with("fuse{")) {
      return makeError("pipeline '{}': its fuse pass has options already; add memory-budget there", pipeline);
    }
    if (entry == "fuse") {
      entry = fmt::format("fuse{{memory-budget={}}}", bytes);
      found = true;
    }
    out += (out.empty() ? "" : ",") + entry;
  }
  if (!found) return makeError("pipeline '{}' has no fuse pass to fit a memory budget of {} bytes", pipeline, bytes);
  return out;
}

Expected<PassManager> PassManager::fromPipeline(std::string_view pipeline, PassManagerOptions options,
                                                const std::vector<PassInfo>& registry) {
  PassManager manager(std::move(options));
  // An empty pipeline is valid and does nothing (useful to round-trip a file through `smelt opt`).
  if (pipeline.empty()) return manager;
  SMELT_TRY(std::vector<std::string> names, splitPipeline(pipeline));
  for (const std::string& entry : names) {
    SMELT_TRY(PassSpec spec, parsePassSpec(entry));
    const std::string& name = spec.name;
    auto info = std::find_if(registry.begin(), registry.end(), [&](const PassInfo& i) { return i.name == name; });
    if (info == registry.end()) {
      return makeError("unknown pass '{}' (known passes: {})", name, knownPassNames(registry));
    }
    std::unique_ptr<Pass> pass = info->create ? info->create() : nullptr;
    if (!pass) return makeError("pass '{}' is not available", name);
    for (const auto& [key, value] : spec.options) {
      if (Status set = pass->setOption(key, value); !set) return set.error().withContext(fmt::format("pipeline entry '{}'", entry));
    }
    manager.addPass(std::move(pass));
  }
  return manager;
}

Expected<PassManager> PassManager::defaultPipeline(PassManagerOptions options) {
  return fromPipeline(kDefaultPipeline, std::move(options));
}

std::vector<std::string> PassManager::passNames() const {
  std::vector<std::string> names;
  for (const auto& pass : passes_) names.emplace_back(pass->name());
  return names;
}

Status PassManager::stopAfterPass(std::string_view name) {
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (passes_[i]->name() == name) {
      options_.stopAfter = i + 1;
      return Status::success();
    }
  }
  std::string pipeline;
  for (const std::string& n : passNames()) pipeline += (pipeline.empty() ? "" : ",") + n;
  return makeError("pass '{}' is not in the pipeline '{}'", name, pipeline);
}

Status PassManager::dump(const Graph& graph, size_t index, std::string_view passName) const {
  std::error_code ec;
  std::filesystem::create_directories(options_.dumpDir, ec);
  if (ec) return makeError("SMELT_DUMP_DIR '{}': cannot create: {}", options_.dumpDir, ec.message());
  auto path = std::filesystem::path(options_.dumpDir) / fmt::format("{:02}-{}.ir", index, passName);
  // Printed with full parameter values so every dump parses back: `smelt opt NN-x.ir --passes=...`.
  SMELT_TRY(std::string text, printGraph(graph));
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return makeError("cannot write IR dump '{}'", path.string());
  return Status::success();
}

Expected<bool> PassManager::run(Graph& graph) {
  runs_.clear();
  bool dumping = !options_.dumpDir.empty();
  if (dumping) SMELT_CHECK_OK(dump(graph, 0, "input"));
  size_t count = std::min(passes_.size(), options_.stopAfter.value_or(passes_.size()));
  bool anyChanged = false;
  for (size_t i = 0; i < count; ++i) {
    Pass& pass = *passes_[i];
    std::string name(pass.name());
    context_.setCurrentPass(name);
    auto start = std::chrono::steady_clock::now();
    Expected<bool> changed = pass.run(graph, context_);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!changed) return changed.error().withContext(fmt::format("pass '{}'", name));
    runs_.push_back({name, seconds, *changed});
    anyChanged |= *changed;
    // Dump before verifying, so a graph the verifier rejects is on disk to look at.
    if (dumping) SMELT_CHECK_OK(dump(graph, i + 1, name));
    if (options_.verify) {
      Status valid = verifyGraph(graph);
      if (!valid) {
        std::string where = graph.numNodes() <= kMaxNodesInError
                                ? "graph after it:\n" + toText(graph)
                                : "set SMELT_DUMP_DIR to keep the graph after each pass";
        return makeError("pass '{}' (#{} in the pipeline) left an invalid graph: {}\n{}", name, i + 1,
                         valid.error().message(), where);
      }
    }
  }
  context_.setCurrentPass("");
  return anyChanged;
}

std::string PassManager::report() const {
  std::string text = fmt::format("{:<16} {:>10}  {}\n", "pass", "time (ms)", "changed");
  double total = 0;
  for (const PassRun& run : runs_) {
    text += fmt::format("{:<16} {:>10.3f}  {}\n", run.name, run.seconds * 1e3, run.changed ? "yes" : "no");
    total += run.seconds;
  }
  text += fmt::format("{:<16} {:>10.3f}\n", "total", total * 1e3);
  for (const auto& [statistic, value] : context_.statistics()) text += fmt::format("{} = {}\n", statistic, value);
  return text;
}

}  // namespace smelt
