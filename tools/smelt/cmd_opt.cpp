// `smelt opt FILE [--passes=a,b,c]`: runs a pass pipeline (the default optimizing one without
// --passes) and prints the resulting IR. Every pass bug reduces to `smelt opt bug.ir --passes=...`.
#include "frontend/model_loader.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

namespace smelt::cli {

Action addOptCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> dims;
    std::optional<std::string> passes;
    std::optional<size_t> stopAfter;
    bool verify = false;
    bool stats = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("opt", "Run passes over a model (.onnx or IR text; - for stdin) and print the IR");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("--passes", options->passes,
                  fmt::format("Comma-separated pipeline (default: {})", kDefaultPipeline));
  cmd->add_option("--stop-after", options->stopAfter, "Run only the first N passes (for bisecting)");
  cmd->add_flag("--verify", options->verify, "Verify the graph after every pass (always on in debug builds)");
  cmd->add_flag("--stats", options->stats, "Print per-pass times and statistics to stderr");
  return [options]() {
    PassManagerOptions pmOptions = PassManagerOptions::fromEnvironment();
    pmOptions.verify |= options->verify;
    pmOptions.stopAfter = options->stopAfter;
    SMELT_TRY_CLI(PassManager manager, options->passes ? PassManager::fromPipeline(*options->passes, pmOptions)
                                                       : PassManager::defaultPipeline(pmOptions));
    SMELT_TRY_CLI(Graph graph, loadModelForCommand(options->file, options->dims));
    SMELT_TRY_CLI(bool changed, manager.run(graph));
    (void)changed;
    if (options->stats) fmt::print(stderr, "{}", manager.report());
    SMELT_TRY_CLI(std::string text, printGraph(graph));
    fmt::print("{}", text);
    return 0;
  };
}

}  // namespace smelt::cli
