// `smelt export FILE -o OUT.onnx [--grad NAMES] [--dim N=8] [--passes P]`: the model as an ONNX model
// (opset 17; frontend/onnx/onnx_export.h): forward, or with --grad the training graph's gradients as
// outputs too; symbolic dimensions stay dim_params unless bound.
#include <fmt/format.h>

#include "frontend/onnx/onnx_export.h"
#include "passes/pass_manager.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

namespace smelt::cli {

Action addExportCommand(CLI::App& app) {
  struct Options {
    std::string file, output, grad, passes = "none";
    std::vector<std::string> dims;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("export", "Write a model (.onnx or IR text; - for stdin) as an ONNX model (opset 17)");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("-o,--output", options->output, "The .onnx file to write")->required();
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: export the training graph: the gradients of the outputs' sum w.r.t. these "
                  "inputs or parameters as outputs too");
  cmd->add_option("--passes", options->passes,
                  fmt::format("Pipeline to run first ('none', the default: the graph as written; fused nodes export as "
                              "their bodies), e.g. {}",
                              kDefaultPipeline));
  return [options]() {
    if (!onnxExportAvailable()) return fail("this smelt was built without ONNX (SMELT_WITH_ONNX=OFF)");
    SMELT_TRY_CLI(Graph graph, loadWithGradients(options->file, options->grad, options->dims, /*keepSymbolic=*/true));
    if (options->passes != "none" && !options->passes.empty()) {
      SMELT_TRY_CLI(PassManager manager, PassManager::fromPipeline(options->passes, PassManagerOptions{}));
      SMELT_TRY_CLI(bool changed, manager.run(graph));
      (void)changed;
    }
    if (Status written = exportOnnxFile(graph, options->output); !written) return fail(written.error().message());
    fmt::print("{}: {} nodes of @{} written as ONNX (opset 17)\n", options->output, graph.nodes().size(), graph.name());
    return 0;
  };
}

}  // namespace smelt::cli
