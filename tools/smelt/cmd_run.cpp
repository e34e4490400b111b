// `smelt run FILE [--backend NAME] --input NAME=PATH.npy ... [--output-dir DIR]`: runs the graph and
// writes each output as DIR/OUTPUTNAME.npy, printing a short summary of each.
#include "frontend/model_loader.h"
#include "frontend/npy.h"
#include "runtime/exec/executable.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

#include <filesystem>

namespace smelt::cli {

Action addRunCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string backend;
    std::vector<std::string> inputs;
    std::vector<std::string> dims;
    std::string outputDir = ".";
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Run a model and write its outputs as .npy files");
  addModelFileArgument(cmd, options->file);
  addBackendOption(cmd, options->backend, true);
  cmd->add_option("--input", options->inputs, "NAME=PATH.npy for each graph input");
  cmd->add_option("--output-dir", options->outputDir, "Folder for OUTPUTNAME.npy files (default: .)");
  addDimOption(cmd, options->dims);
  return [options]() {
    SMELT_TRY_CLI(TensorMap given, readInputArrays(options->inputs));
    // Kept symbolic (unless --dim binds it): the executable binds the --input arrays' shapes itself and
    // compiles the kernels every size shares, so a later run at another size finds them in the disk cache.
    auto graph = loadModelForCommand(options->file, options->dims, given, /*keepSymbolic=*/true);
    if (!graph) return fail(graph.error().message());
    SMELT_TRY_CLI(TensorMap feeds, readFeeds(*graph, options->inputs));
    auto outputs = runOnce(*graph, feeds, options->backend);
    if (!outputs) return fail(outputs.error().message());
    std::error_code ec;
    std::filesystem::create_directories(options->outputDir, ec);
    if (ec) return fail(fmt::format("cannot create output folder '{}': {}", options->outputDir, ec.message()));
    for (size_t i = 0; i < outputs->size(); ++i) {
      const std::string& name = graph->outputs()[i].name;
      std::string path = (std::filesystem::path(options->outputDir) / (sanitizeFileName(name) + ".npy")).string();
      Status written = writeNpy(path, (*outputs)[i]);
      if (!written) return fail(fmt::format("output '{}': {}", name, written.error().message()));
      fmt::print("{}: {} -> {}\n", name, summarizeTensor((*outputs)[i]), path);
    }
    return 0;
  };
}

}  // namespace smelt::cli
