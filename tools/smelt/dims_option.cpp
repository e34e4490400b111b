// --dim NAME=EXTENT: binding a model's symbolic dimensions for a CLI command (see commands.h).
#include "frontend/model_loader.h"
#include "ir/dims.h"
#include "tools/smelt/commands.h"

namespace smelt::cli {

void addDimOption(CLI::App* cmd, std::vector<std::string>& dims) {
  cmd->add_option("--dim", dims,
                  "NAME=EXTENT: binds a symbolic dimension of the model (f32[N,784] with --dim N=8); repeatable. "
                  "Inputs given as arrays bind theirs from their shapes");
}

Status bindDimsForCommand(Graph& graph, const std::vector<std::string>& dims, const TensorMap& feeds) {
  DimBinding given;
  for (const std::string& d : dims) SMELT_CHECK_OK(parseDimAssignment(d, given));
  if (graph.symbolicDims().empty() && given.empty()) return Status::success();
  DimBinder binder(graph);
  for (const auto& [symbol, extent] : given) SMELT_CHECK_OK(binder.bind(symbol, extent, "--dim"));
  // Each given input binds the symbols of its declared type, and must agree with --dim.
  for (const Value* input : graph.inputs()) {
    if (auto it = feeds.find(input->name()); it != feeds.end())
      SMELT_CHECK_OK(binder.bindInput(*input, it->second.type()));
  }
  SMELT_TRY(DimBinding binding, binder.binding());
  SMELT_TRY(Graph bound, bindDims(graph, binding));
  graph = std::move(bound);
  return Status::success();
}

Expected<Graph> loadModelForCommand(const std::string& file, const std::vector<std::string>& dims,
                                    const TensorMap& given, bool keepSymbolic) {
  DimBinding sizes;
  for (const std::string& d : dims) SMELT_CHECK_OK(parseDimAssignment(d, sizes));
  bool sized = false;
  SMELT_TRY(Graph graph, loadModel(file, given, sizes, &sized));
  if (!sized && (!keepSymbolic || !dims.empty())) SMELT_CHECK_OK(bindDimsForCommand(graph, dims, given));
  return graph;
}

}  // namespace smelt::cli
