// Graph execution through lowered kernels on the kernel interpreter.
#include "tests/codegen/kernel/kernel_runner.h"

#include "codegen/kernel_interpreter.h"
#include "codegen/lower_kernel.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <unordered_map>

namespace smelt::testing {

void checkKernelRun(const Graph& graph, const TensorMap& feeds, const std::vector<Tensor>& expected, const char* how,
                    const std::string& what) {
  auto actual = runWithKernels(graph, feeds);
  REQUIRE_MESSAGE(actual.ok(), what, " (", how, "): ", (actual.ok() ? "" : actual.error().message()), "\n",
                  toText(graph));
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string d = compareTensors((*actual)[i], expected[i], kernelTolerance(expected[i].dtype()));
    CHECK_MESSAGE(d.empty(), what, " (", how, ") output ", graph.outputs()[i].name, ": ", d, "\n", toText(graph));
  }
}

Graph optimizedOrFail(const Graph& graph) {
  Graph g = graph.clone();
  auto pm = PassManager::defaultPipeline(PassManagerOptions{});
  REQUIRE_MESSAGE(pm.ok(), (pm.ok() ? "" : pm.error().message()));
  auto ran = pm->run(g);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  return g;
}

codegen::Kernel lastNodeKernelOrFail(const Graph& graph) {
  const Node* last = nullptr;
  for (const auto& n : graph.nodes()) {
    if (n->opName() != "constant") last = n.get();
  }
  REQUIRE(last != nullptr);
  auto kernel = codegen::lowerToKernel(graph, *last);
  REQUIRE_MESSAGE(kernel.ok(), (kernel.ok() ? "" : kernel.error().message()));
  return std::move(*kernel);
}

Expected<std::vector<Tensor>> runWithKernels(const Graph& graph, const TensorMap& feeds,
                                             const std::function<void(codegen::Kernel&)>& rewrite,
                                             std::string_view pipeline) {
  std::unordered_map<const Value*, Tensor> env;
  for (const Value* v : graph.inputs()) {
    auto it = feeds.find(v->name());
    if (it == feeds.end()) return makeError("input '{}' was not fed", v->name());
    env[v] = it->second;
  }
  for (const Value* v : graph.parameters()) env[v] = v->initialValue();
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant") {
      env[node->result()] = std::get<Tensor>(node->attrs().at("value"));
      continue;
    }
    SMELT_TRY(codegen::Kernel kernel, codegen::lowerToKernel(graph, *node, pipeline));
    if (rewrite) rewrite(kernel);
    std::vector<Tensor> tensors;
    for (const Value* o : node->operands()) tensors.push_back(env.at(o));
    for (const Value* r : node->results()) tensors.emplace_back(r->type());
    std::vector<Tensor*> buffers;
    for (Tensor& t : tensors) buffers.push_back(&t);
    SMELT_CHECK_OK(codegen::interpretKernel(kernel, buffers));
    for (size_t r = 0; r < node->results().size(); ++r) env[node->result(r)] = tensors[node->numOperands() + r];
  }
  std::vector<Tensor> outputs;
  for (const GraphOutput& o : graph.outputs()) outputs.push_back(env.at(o.value));
  return outputs;
}

double kernelTolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 2e-2;
    case DType::bf16: return 8e-2;
    case DType::f32: return 1e-5;
    case DType::f64: return 1e-12;
    default: return 0;
  }
}

}  // namespace smelt::testing
