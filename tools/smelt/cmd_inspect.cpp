// `smelt inspect FILE [--grad NAMES] [--passes P] [--memory-budget BYTES] [--json]`: what running a graph
// costs once the optimizing pipeline (fusion included) has run: kernels, FLOPs, bytes moved and the
// planned arena (plan_memory.h), with a per-kernel listing (kind, ops, sweeps over the reduced axes).
// Under a memory budget the fuse pass recomputes forward values first (passes/rematerialize.h): the
// listing then says what was recomputed and what it costs.
#include "frontend/model_loader.h"
#include "ir/support/byte_count.h"
#include "passes/fusion_groups.h"
#include "passes/pass_manager.h"
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
  std::string label;
  std::string types;
  KernelSummary shape;
  std::vector<std::string> ops;
  std::vector<std::string> from;  // the IR nodes it runs (kernelProvenance, without the kernel's own label)
  int64_t flops = 0;
  int64_t bytes = 0;
};

KernelCost costOf(const Graph& graph, const Node& node) {
  std::vector<TensorType> operandTypes, resultTypes;
  KernelCost cost{&node, graph.labelOf(node), "", {}, {}, {}, 0, 0};
  std::vector<std::string> provenance = kernelProvenance(graph, node);
  cost.from.assign(provenance.begin() + (provenance.size() > 1 ? 1 : 0), provenance.end());
  if (node.opName() == "fused") {
    cost.shape = describeKernel(node);
    for (const auto& inner : std::get<GraphRef>(node.attrs().at("body"))->nodes()) {
      if (inner->opName() != "constant") cost.ops.push_back(inner->opName());
    }
  } else {
    cost.shape = describeKernel(node);
    cost.ops = {node.opName()};
  }
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
    std::vector<std::string> dims;
    std::string grad;
    std::string passes{kDefaultPipeline};
    std::string memoryBudget;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("inspect", "Kernels, FLOPs, bytes moved and the planned arena of a model");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: cover forward + backward (gradient of the sum of all outputs)");
  cmd->add_option("--passes", options->passes,
                  fmt::format("Pipeline to run first (default: {}; 'none': the graph as written)", kDefaultPipeline));
  cmd->add_option("--memory-budget", options->memoryBudget,
                  "BYTES (or 512K, 64M, 2G): recompute forward values until the planned peak fits (the pipeline's "
                  "fuse pass, rematerialize.h)");
  cmd->add_flag("--json", options->json, "Print one JSON object");
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadWithGradients(options->file, options->grad, options->dims));
    size_t nodesAsWritten = graph.numNodes();
    int64_t unfusedKernels = 0;
    for (const auto& node : graph.nodes()) unfusedKernels += node->opName() != "constant";
    if (options->passes == "none") options->passes.clear();
    int64_t budget = 0;
    if (!options->memoryBudget.empty()) {
      SMELT_TRY_CLI(budget, parseByteCount(options->memoryBudget));
      SMELT_TRY_CLI(options->passes, pipelineWithMemoryBudget(options->passes, budget));
    }
    SMELT_TRY_CLI(PassManager pm, PassManager::fromPipeline(options->passes, PassManagerOptions::fromEnvironment()));
    if (Expected<bool> ran = pm.run(graph); !ran) return fail(ran.error().message());
    auto statistic = [&](const char* name) {
      auto it = pm.context().statistics().find(std::string("fuse.") + name);
      return it == pm.context().statistics().end() ? int64_t{0} : it->second;
    };
    int64_t recomputedNodes = statistic("recomputed nodes"), recomputedFlops = statistic("recomputed flops");
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
    // Time estimate of the recomputation: its share of the FLOPs left (the kernels are compute bound
    // where it matters: products and convolutions).
    double extraTime = flops > recomputedFlops && recomputedFlops > 0
                           ? static_cast<double>(recomputedFlops) / static_cast<double>(flops - recomputedFlops)
                           : 0.0;

    if (options->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const KernelCost& k : kernels) {
        list.push_back({{"label", k.label},
                        {"op", k.node->opName()},
                        {"kind", kernelKindName(k.shape.kind)},
                        {"ops", k.ops},
                        {"from", k.from},
                        {"sweeps", k.shape.sweeps},
                        {"type", k.types},
                        {"flops", k.flops},
                        {"bytes", k.bytes}});
      }
      nlohmann::json out = {{"graph", graph.name()},
                            {"pipeline", options->passes},
                            {"nodes", nodesAsWritten},
                            {"nodes_after_passes", graph.numNodes()},
                            {"kernels", kernels.size()},
                            {"kernels_unfused", unfusedKernels},
                            {"flops", flops},
                            {"bytes_moved", bytes},
                            {"peak_bytes", plan.peakBytes},
                            {"lower_bound_bytes", plan.lowerBoundBytes},
                            {"peak_over_lower_bound", ratio},
                            {"buffers", plan.numBuffers},
                            {"in_place_reuses", plan.inPlaceReuses},
                            {"memory_budget", budget},
                            {"peak_bytes_without_recompute", budget ? statistic("peak bytes before") : plan.peakBytes},
                            {"recomputed_nodes", recomputedNodes},
                            {"recomputed_flops", recomputedFlops},
                            {"extra_time_estimate", extraTime},
                            {"kernels_list", std::move(list)}};
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    fmt::print("graph @{}: {} nodes; after {}: {} nodes, {} kernels ({} before fusion)\n", graph.name(),
               nodesAsWritten, options->passes.empty() ? "no passes" : options->passes, graph.numNodes(),
               kernels.size(), unfusedKernels);
    fmt::print("flops: {}\n", flops);
    fmt::print("bytes moved: {} (each kernel reads its operands and writes its results once)\n", bytes);
    fmt::print("arena: peak {} bytes, lower bound {} bytes (x{:.3f}), {} buffers, {} in place\n", plan.peakBytes,
               plan.lowerBoundBytes, ratio, plan.numBuffers, plan.inPlaceReuses);
    if (budget) {
      fmt::print("memory budget {}: peak {} bytes without recomputation; {} nodes recomputed, {} flops (+{:.1f}% time, "
                 "estimated from flops)\n",
                 budget, statistic("peak bytes before"), recomputedNodes, recomputedFlops, 100 * extraTime);
    }
    fmt::print("{:<14} {:<9} {:>6} {:<28} {:>14} {:>12}  {}\n", "kernel", "kind", "sweeps", "result", "flops", "bytes",
               "ops");
    for (const KernelCost& k : kernels) {
      std::string ops = fmt::format("{}", fmt::join(k.ops, " "));
      if (ops.size() > 80) ops = ops.substr(0, 77) + "...";
      fmt::print("{:<14} {:<9} {:>6} {:<28} {:>14} {:>12}  {}\n", k.label.substr(0, k.label.find(' ', k.label.find('%'))),
                 kernelKindName(k.shape.kind), k.shape.sweeps, k.types, k.flops, k.bytes, ops);
      if (k.node->opName() == "fused") fmt::print("{:<14} from {}\n", "", fmt::join(k.from, ", "));
    }
    return 0;
  };
}

}  // namespace smelt::cli
