// `smelt dump FILE [--format text|dot]`: the graph as IR text or Graphviz DOT.
#include "frontend/model_loader.h"
#include "ir/dot.h"
#include "ir/printer.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

namespace smelt::cli {

Action addDumpCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string format = "text";
    std::string grad;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("dump", "Print a model (.onnx or IR text; - for stdin) as IR text or DOT");
  cmd->add_option("file", options->file, "Model file")->required();
  cmd->add_option("--format", options->format, "text or dot")->check(CLI::IsMember({"text", "dot"}));
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: also build the backward graph (gradient of the sum of all outputs)");
  return [options]() {
    auto graph = loadModel(options->file);
    if (!graph) return fail(graph.error().message());
    if (!options->grad.empty()) {
      SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->grad));
      Status added = addGradientOutputs(*graph, names, true);
      if (!added) return fail(added.error().message());
    }
    if (options->format == "dot") {
      fmt::print("{}", toDot(*graph));
      return 0;
    }
    auto text = printGraph(*graph);
    if (!text) return fail(text.error().message());
    fmt::print("{}", *text);
    return 0;
  };
}

}  // namespace smelt::cli
