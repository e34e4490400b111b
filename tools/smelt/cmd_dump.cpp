// `smelt dump FILE [--format text|dot] [--after PASS] [--no-values]`: the graph as IR text or Graphviz DOT, optionally
// as it is right after PASS in the default optimizing pipeline.
#include "frontend/model_loader.h"
#include "ir/dot.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

namespace smelt::cli {

Action addDumpCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> dims;
    std::string format = "text";
    std::string grad;
    std::string after;
    bool noValues = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("dump", "Print a model (.onnx or IR text; - for stdin) as IR text or DOT");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("--format", options->format, "text or dot")->check(CLI::IsMember({"text", "dot"}));
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: also build the backward graph (gradient of the sum of all outputs)");
  cmd->add_option("--after", options->after,
                  fmt::format("PASS: print the graph right after PASS in the default pipeline ({})",
                              kDefaultPipeline));
  cmd->add_flag("--no-values", options->noValues,
                "Print parameters and constants of more than 16 elements as `...` (a readable dump of a large "
                "model; not parseable)");
  return [options]() {
    auto graph = loadWithGradients(options->file, options->grad, options->dims, /*keepSymbolic=*/true);
    if (!graph) return fail(graph.error().message());
    if (!options->after.empty()) {
      SMELT_TRY_CLI(PassManager manager, PassManager::defaultPipeline());
      Status found = manager.stopAfterPass(options->after);
      if (!found) return fail(found.error().message());
      SMELT_TRY_CLI(bool changed, manager.run(*graph));
      (void)changed;
    }
    if (options->format == "dot") {
      fmt::print("{}", toDot(*graph));
      return 0;
    }
    PrintOptions print;
    print.printParameterValues = !options->noValues;
    auto text = printGraph(*graph, print);
    if (!text) return fail(text.error().message());
    fmt::print("{}", *text);
    return 0;
  };
}

}  // namespace smelt::cli
