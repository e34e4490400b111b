// --dim NAME=EXTENT: binding a model's symbolic dimensions for a CLI command (see commands.h).
#include "ir/dims.h"
#include "tools/smelt/commands.h"

namespace smelt::cli {

void addDimOption(CLI::App* cmd, std::vector<std::string>& dims) {
  cmd->add_option("--dim", dims,
                  "NAME=EXTENT: binds a symbolic dimension of the model (f32[N,784] with --dim N=8); repeatable. "
                  "Inputs given as arrays bind theirs from their shapes");
}

Status bindDimsForCommand(Graph& graph, const std::vector<std::string>& dims, const TensorMap& feeds) {
  DimBinding binding;
  for (const std::string& d : dims) SMELT_CHECK_OK(parseDimAssignment(d, binding));
  if (graph.symbolicDims().empty() && binding.empty()) return Status::success();
  // Each given input binds the symbols of its declared type, and must agree with --dim.
  for (const Value* input : graph.inputs()) {
    auto it = feeds.find(input->name());
    if (it == feeds.end()) continue;
    for (size_t d = 0; d < input->shape().size() && d < it->second.shape().size(); ++d) {
      std::string symbol = dimSymbolName(input->shape()[d]);
      if (symbol.empty()) continue;
      int64_t extent = it->second.shape()[d];
      if (auto [at, added] = binding.emplace(symbol, extent); !added && at->second != extent) {
        return makeError(
            "input '{}' has {} = {} (dimension #{}), but {} = {} was bound before (--dim or another input)",
            input->name(), symbol, extent, d, symbol, at->second);
      }
    }
  }
  SMELT_TRY(Graph bound, bindDims(graph, binding));
  graph = std::move(bound);
  return Status::success();
}

}  // namespace smelt::cli
