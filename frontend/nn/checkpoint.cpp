// See checkpoint.h.
#include "frontend/nn/checkpoint.h"

#include "frontend/nn/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace smelt::nn {

namespace {

/// At most ten names, then how many more.
std::string listed(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(names.size(), 10)));
  return fmt::format("{}{}", fmt::join(shown, ", "), names.size() > 10 ? fmt::format(" and {} more", names.size() - 10) : "");
}

/// A hint for the usual cause: every unexpected name is a missing one behind a prefix (DataParallel's
/// `module.`, a wrapper's `model.`).
std::string prefixHint(const std::vector<std::string>& missing, const std::vector<std::string>& unexpected) {
  if (missing.empty() || unexpected.empty()) return "";
  const std::string& first = unexpected.front();
  for (const std::string& m : missing) {
    if (first.size() > m.size() && first.ends_with(m)) {
      const std::string prefix = first.substr(0, first.size() - m.size());
      const bool all = std::all_of(unexpected.begin(), unexpected.end(), [&](const std::string& u) {
        return u.starts_with(prefix) &&
               std::find(missing.begin(), missing.end(), u.substr(prefix.size())) != missing.end();
      });
      if (all) return fmt::format(" (the file's names carry a '{}' prefix the model's do not)", prefix);
    }
  }
  return "";
}

}  // namespace

Expected<LoadReport> loadCheckpoint(Model& model, const std::string& path, const TensorType& input,
                                    const LoadOptions& options) {
  LoadReport report;
  SMELT_TRY(StateDict file, loadSafetensors(path, &report.metadata));
  // The model's state as its first step makes it (new entries initialized from its seed).
  SMELT_TRY(const StateDict* current, model.syncedHostState());
  StateDict made = *current;
  {
    Graph graph;
    graph.setName("load");
    Value* x = graph.addInput("input", input);
    GraphContext ctx(graph, made, /*training=*/false, model.seed);
    model.net->forward(ctx, x);
    SMELT_CHECK_OK(ctx.b().status());
  }
  auto ignored = [&](const std::string& name) {
    return (options.ignoreOptimizerState && name.starts_with("optim.")) ||
           (options.ignoreBatchCounters && name.ends_with("num_batches_tracked"));
  };
  for (const auto& [name, t] : made) {
    if (ignored(name)) continue;
    auto it = file.find(name);
    if (it == file.end()) {
      report.missing.push_back(name);
    } else if (!(it->second.type() == t.type())) {
      return makeError("{}: tensor '{}' is {} in the checkpoint, {} in the model", path, name,
                       it->second.type().toString(), t.type().toString());
    }
  }
  for (const auto& [name, t] : file) {
    if (!ignored(name) && !made.count(name)) report.unexpected.push_back(name);
  }
  if (options.strict && (!report.missing.empty() || !report.unexpected.empty())) {
    std::string what;
    if (!report.missing.empty()) what += fmt::format("missing from the file: {}", listed(report.missing));
    if (!report.unexpected.empty()) {
      what += fmt::format("{}not in the model: {}", what.empty() ? "" : "; ", listed(report.unexpected));
    }
    return makeError("{}: the checkpoint does not match the model ({}){}", path, what,
                     prefixHint(report.missing, report.unexpected));
  }
  for (auto& [name, t] : file) {
    if (ignored(name) || !made.count(name)) continue;
    made[name] = std::move(t);
    report.loaded.push_back(name);
  }
  model.state = std::move(made);
  model.stateChanged();
  return report;
}

}  // namespace smelt::nn
