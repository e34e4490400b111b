// `smelt kernels FILE [--grad NAMES] [--passes P]`: the kernel of every node after the optimizing
// pipeline, printed as its backend-neutral description (codegen/kernel.h) with the IR nodes it came from.
#include "codegen/lower_kernel.h"
#include "frontend/model_loader.h"
#include "passes/pass_manager.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

namespace smelt::cli {

Action addKernelsCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string grad;
    std::string passes{kDefaultPipeline};
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("kernels", "Print the kernels a model compiles to");
  cmd->add_option("file", options->file, "Model file (.onnx or IR text; - for stdin)")->required();
  cmd->add_option("--grad", options->grad, "NAME[,NAME...]: include the backward graph");
  cmd->add_option("--passes", options->passes,
                  fmt::format("Pipeline to run first (default: {}; 'none': the graph as written)", kDefaultPipeline));
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadModel(options->file));
    if (!options->grad.empty()) {
      SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->grad));
      Status added = addGradientOutputs(graph, names, true);
      if (!added) return fail(added.error().message());
    }
    if (options->passes == "none") options->passes.clear();
    SMELT_TRY_CLI(PassManager pm, PassManager::fromPipeline(options->passes, PassManagerOptions::fromEnvironment()));
    if (auto ran = pm.run(graph); !ran) return fail(ran.error().message());
    for (const auto& node : graph.nodes()) {
      if (node->opName() == "constant") continue;
      auto kernel = codegen::lowerToKernel(graph, *node);
      if (!kernel) return fail(kernel.error().message());
      fmt::print("{}\n", codegen::printKernel(*kernel));
    }
    return 0;
  };
}

}  // namespace smelt::cli
