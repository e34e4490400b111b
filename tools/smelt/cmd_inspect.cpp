// `smelt inspect FILE [--grad NAMES] [--json]`: what running a graph costs: kernels, FLOPs, bytes moved
// and the planned arena (plan_memory.h), with a per-kernel listing. Until fusion lands every
// non-constant node is one kernel.
#include "frontend/model_loader.h"
#include "passes/plan_memory.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace smelt::cli {

namespace {

/// One kernel's cost: each kernel reads its operands and writes its results once.
struct KernelCost {
  const Node* node;
  std::string types;
  int64_t flops = 0;
  int64_t bytes = 0;
};

KernelCost costOf(const Graph& graph, const Node& node) {
  std::vector<TensorType> operandTypes, resultTypes;
  KernelCost cost{&node, "", 0, 0};
  for (const Value* operand : node.operands()) {
    operandTypes.push_back(operand->type());
    cost.bytes += static_cast<int64_t>(operand->type().byteSize());
  }
  for (const Value* result : node.results()) {
    resultTypes.push_back(result->type());
    cost.bytes += static_cast<int64_t>(result->type().byteSize());
    cost.types += (cost.types.empty() ? "" : ", ") + result->type().toString();
  }
  OpCall call(node.op(), graph.labelOf(node), operandTypes, node.attrs(), resultTypes);
  cost.flops = flopsOf(call);
  return cost;
}

}  // namespace

Action addInspectCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string grad;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("inspect", "Kernels, FLOPs, bytes moved and the planned arena of a model");
  cmd->add_option("file", options->file, "Model file (.onnx or IR text; - for stdin)")->required();
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: cover forward + backward (gradient of the sum of all outputs)");
  cmd->add_flag("--json", options->json, "Print one JSON object");
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadModel(options->file));
    if (!options->grad.empty()) {
      SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->grad));
      Status added = addGradientOutputs(graph, names, true);
      if (!added) return fail(added.error().message());
    }
    std::vector<KernelCost> kernels;
    int64_t flops = 0, bytes = 0;
    for (const auto& node : graph.nodes()) {
      if (node->opName() == "constant") continue;  // baked in, not launched
      kernels.push_back(costOf(graph, *node));
      flops += kernels.back().flops;
      bytes += kernels.back().bytes;
    }
    MemoryPlan plan = planMemory(graph);
    double ratio = plan.lowerBoundBytes ? static_cast<double>(plan.peakBytes) / plan.lowerBoundBytes : 1.0;

    if (options->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const KernelCost& k : kernels) {
        list.push_back({{"op", k.node->opName()}, {"type", k.types}, {"flops", k.flops}, {"bytes", k.bytes}});
      }
      nlohmann::json out = {{"graph", graph.name()},
                            {"nodes", graph.numNodes()},
                            {"kernels", kernels.size()},
                            {"flops", flops},
                            {"bytes_moved", bytes},
                            {"peak_bytes", plan.peakBytes},
                            {"lower_bound_bytes", plan.lowerBoundBytes},
                            {"peak_over_lower_bound", ratio},
                            {"buffers", plan.numBuffers},
                            {"in_place_reuses", plan.inPlaceReuses},
                            {"kernels_list", std::move(list)}};
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    fmt::print("graph @{}: {} nodes, {} kernels (every non-constant node is one kernel until fusion)\n",
               graph.name(), graph.numNodes(), kernels.size());
    fmt::print("flops: {}\n", flops);
    fmt::print("bytes moved: {} (each kernel reads its operands and writes its results once)\n", bytes);
    fmt::print("arena: peak {} bytes, lower bound {} bytes (x{:.3f}), {} buffers, {} in place\n", plan.peakBytes,
               plan.lowerBoundBytes, ratio, plan.numBuffers, plan.inPlaceReuses);
    fmt::print("{:<20} {:<28} {:>14} {:>12}\n", "kernel", "result", "flops", "bytes");
    for (const KernelCost& k : kernels) {
      fmt::print("{:<20} {:<28} {:>14} {:>12}\n", k.node->opName(), k.types, k.flops, k.bytes);
    }
    return 0;
  };
}

}  // namespace smelt::cli
