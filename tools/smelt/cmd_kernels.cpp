// `smelt kernels FILE [--grad NAMES] [--passes P] [--kernel-passes K] [--backend B]`: the kernel of every
// node after the optimizing pipeline and the kernel passes the backend runs (or K), printed as its
// backend-neutral description (codegen/kernel.h) with the IR nodes it came from, or as a backend renders
// it (LLVM IR after O3, OpenCL C, CUDA C, HIP).
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/hip/hip_renderer.h"
#include "codegen/lower_kernel.h"
#include "codegen/opencl/opencl_renderer.h"
#include "frontend/model_loader.h"
#include "passes/pass_manager.h"
#include "runtime/exec/device_backend.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

#include <optional>
#ifdef SMELT_HAVE_LLVM
#include "codegen/llvm/llvm_jit.h"
#endif

namespace smelt::cli {

Action addKernelsCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> dims;
    std::string grad;
    std::string passes{kDefaultPipeline};
    std::string backend = "kernel";
    std::optional<std::string> kernelPasses;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("kernels", "Print the kernels a model compiles to");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("--grad", options->grad, "NAME[,NAME...]: include the backward graph");
  cmd->add_option("--passes", options->passes,
                  fmt::format("Pipeline to run first (default: {}; 'none': the graph as written)", kDefaultPipeline));
  cmd->add_option("--backend", options->backend,
                  "kernel (the description, default), llvm (optimized LLVM IR), opencl, cuda or hip (source)")
      ->check(CLI::IsMember({"kernel", "llvm", "opencl", "cuda", "hip"}));
  std::vector<std::string_view> known;
  for (const codegen::KernelPass& p : codegen::kernelPasses()) known.push_back(p.name);
  cmd->add_option("--kernel-passes", options->kernelPasses,
                  fmt::format("Kernel passes after lowering (default: {}, then {} for llvm; {}, then {} for "
                              "opencl/cuda/hip; 'none': as lowered). Known: {}",
                              codegen::kLoweringKernelPipeline, codegen::kCpuKernelPipeline,
                              codegen::kGpuLoweringKernelPipeline, codegen::kGpuKernelPipeline, fmt::join(known, ", ")));
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadWithGradients(options->file, options->grad, options->dims));
    if (Status ran = runPipeline(graph, options->passes); !ran) return fail(ran.error().message());
    std::unique_ptr<codegen::CRenderer> renderer;
    if (options->backend == "opencl") renderer = std::make_unique<codegen::OpenClRenderer>();
    if (options->backend == "cuda") renderer = std::make_unique<codegen::CudaRenderer>();
    if (options->backend == "hip") renderer = std::make_unique<codegen::HipRenderer>();
    // What the backend's executable runs: the lowering clean-up, then its own kernel passes.
    std::string pipeline(renderer ? gpuLoweringPipeline() : codegen::kLoweringKernelPipeline);
    if (renderer && !gpuKernelPipeline().empty()) pipeline += fmt::format(",{}", gpuKernelPipeline());
    if (options->backend == "llvm") pipeline += fmt::format(",{}", codegen::kCpuKernelPipeline);
    if (options->kernelPasses) pipeline = *options->kernelPasses;
    if (auto checked = codegen::kernelPipeline(pipeline); !checked) return fail(checked.error().message());
    if (renderer) fmt::print("{}\n", renderer->prelude());
    size_t index = 0;
    for (const auto& node : graph.nodes()) {
      if (node->opName() == "constant") continue;
      auto kernel = codegen::lowerToKernel(graph, *node, pipeline);
      if (!kernel) return fail(kernel.error().message());
      if (renderer) {
        SMELT_TRY_CLI(std::string text, renderer->renderKernel(*kernel, codegen::CRenderer::symbolFor(*kernel, index)));
        fmt::print("{}\n", text);
      } else if (options->backend == "llvm") {
#ifdef SMELT_HAVE_LLVM
        SMELT_TRY_CLI(codegen::LlvmJit * jit, codegen::LlvmJit::global());
        SMELT_TRY_CLI(std::string ir, jit->renderIr(*kernel, true));
        fmt::print("{}\n", ir);
#else
        return fail("smelt kernels: this smelt was built without LLVM");
#endif
      } else {
        fmt::print("{}\n", codegen::printKernel(*kernel));
      }
      ++index;
    }
    return 0;
  };
}

}  // namespace smelt::cli
