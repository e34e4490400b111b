// `smelt grad FILE --wrt NAME[,NAME...] --input NAME=PATH.npy ... [--backend B] --output-dir DIR`:
// writes, for each name (a graph input or a parameter), the gradient of the sum of all elements of all
// floating-point outputs as DIR/NAME.grad.npy.
#include "autodiff/gradient_tape.h"
#include "frontend/model_loader.h"
#include "frontend/npy.h"
#include "passes/pass_manager.h"
#include "runtime/exec/executable.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

#include <filesystem>

namespace smelt::cli {

Expected<std::vector<std::string>> splitNames(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) return makeError("--wrt/--grad '{}' has an empty name", list);
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

Expected<Graph> loadWithGradients(const std::string& file, const std::string& grad, const std::vector<std::string>& dims,
                                  bool keepSymbolic) {
  SMELT_TRY(Graph graph, loadModelForCommand(file, dims, {}, keepSymbolic));
  if (!grad.empty()) {
    SMELT_TRY(std::vector<std::string> names, splitNames(grad));
    SMELT_CHECK_OK(addGradientOutputs(graph, names, true));
  }
  return graph;
}

Status runPipeline(Graph& graph, const std::string& pipeline) {
  SMELT_TRY(PassManager pm, PassManager::fromPipeline(pipeline == "none" ? "" : pipeline,
                                                     PassManagerOptions::fromEnvironment()));
  SMELT_TRY(bool changed, pm.run(graph));
  (void)changed;
  return Status::success();
}

Status addGradientOutputs(Graph& graph, const std::vector<std::string>& names, bool keepForwardOutputs) {
  SMELT_TRY(std::vector<Value*> grads, gradientOfOutputs(graph, names));
  if (!keepForwardOutputs) graph.clearOutputs();
  for (size_t i = 0; i < names.size(); ++i) graph.addOutput(names[i] + ".grad", grads[i]);
  return Status::success();
}

Action addGradCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string wrt;
    std::string backend;
    std::vector<std::string> inputs;
    std::vector<std::string> dims;
    std::string outputDir = ".";
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("grad", "Gradients of the sum of all outputs, written as NAME.grad.npy");
  addModelFileArgument(cmd, options->file);
  cmd->add_option("--wrt", options->wrt, "NAME[,NAME...]: graph inputs or parameters")->required();
  cmd->add_option("--input", options->inputs, "NAME=PATH.npy for each graph input");
  addBackendOption(cmd, options->backend, true);
  cmd->add_option("--output-dir", options->outputDir, "Folder for NAME.grad.npy files (default: .)");
  addDimOption(cmd, options->dims);
  return [options]() {
    SMELT_TRY_CLI(TensorMap given, readInputArrays(options->inputs));
    auto graph = loadModelForCommand(options->file, options->dims, given);
    if (!graph) return fail(graph.error().message());
    SMELT_TRY_CLI(TensorMap feeds, readFeeds(*graph, options->inputs));
    SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->wrt));
    Status added = addGradientOutputs(*graph, names, false);
    if (!added) return fail(added.error().message());
    auto grads = runOnce(*graph, feeds, options->backend);
    if (!grads) return fail(grads.error().message());
    std::error_code ec;
    std::filesystem::create_directories(options->outputDir, ec);
    if (ec) return fail(fmt::format("cannot create output folder '{}': {}", options->outputDir, ec.message()));
    for (size_t i = 0; i < names.size(); ++i) {
      std::string path =
          (std::filesystem::path(options->outputDir) / (sanitizeFileName(names[i]) + ".grad.npy")).string();
      Status written = writeNpy(path, (*grads)[i]);
      if (!written) return fail(fmt::format("gradient of '{}': {}", names[i], written.error().message()));
      fmt::print("{}.grad: {} -> {}\n", names[i], summarizeTensor((*grads)[i]), path);
    }
    return 0;
  };
}

}  // namespace smelt::cli
