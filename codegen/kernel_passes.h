// Kernel passes: the rewrites of a kernel description, each named, run from one pipeline string like
// the graph passes, dumped after each pass, and tested as kernel text in and kernel text out
// (tests/codegen/kernel/passes/<pass>/*.kernel).
//   runKernelPasses(kernel, kLoweringKernelPipeline);            // what lowerToKernel runs
//   runKernelPasses(kernel, "map-to-blocks");                     // what a GPU backend adds
// Every lowered kernel goes through kLoweringKernelPipeline; a backend then adds its own
// (DeviceBackend::kernelPipeline: tile-columns on CPUs, map-to-blocks and vectorize on GPUs). `smelt kernels --kernel-passes`
// runs any pipeline, and SMELT_DUMP_DIR receives the kernel after each pass.
#pragma once

#include "codegen/kernel.h"
#include "ir/support/expected.h"

#include <span>
#include <string_view>

namespace smelt::codegen {

/// One named kernel pass: `run` rewrites the kernel (computing exactly what it computed) and returns
/// whether it changed it.
struct KernelPass {
  std::string_view name;
  std::string_view summary;
  bool (*run)(Kernel&);
};

/// Every kernel pass, in the order the pipelines use them.
std::span<const KernelPass> kernelPasses();

/// The clean-up every lowered kernel gets (lowerToKernel runs it): sibling nests collapse first (so
/// they still fuse), loops fuse, then values are reused through outputs before reciprocals are
/// hoisted (they are numbered per loop and would hide a value's twin), twins are shared, what nothing
/// reads goes, and last the instructions take their canonical order (the kernel cache's key must not
/// depend on the order the C++ compiler evaluated a lowering's arguments in).
inline constexpr std::string_view kLoweringKernelPipeline =
    "collapse-loops,fuse-loops,reuse-through-output,hoist-reciprocals,cse,dce,canonical-order";
/// The clean-up GPU backends lower with instead: the same without reuse-through-output. On a GPU a
/// block's final sweep re-reads its row of the input from L1, where the value kept in the output would
/// come back through L2 after a second write of the whole output (softmax: exp once more per element,
/// one MUFU instruction, against a store and a load of every element).
inline constexpr std::string_view kGpuLoweringKernelPipeline =
    "collapse-loops,fuse-loops,hoist-reciprocals,cse,dce,canonical-order";
/// What CPU backends add (column kernels walk rows of tiles).
inline constexpr std::string_view kCpuKernelPipeline = "tile-columns";
/// What GPU backends add (long rows run as blocks of threads, flat elementwise kernels as vectors).
inline constexpr std::string_view kGpuKernelPipeline = "map-to-blocks,vectorize";

/// Checks a comma-separated pipeline ("none" or "" is empty) and returns its passes; an unknown name
/// is an error listing the known ones.
Expected<std::vector<const KernelPass*>> kernelPipeline(std::string_view pipeline);

/// Runs `pipeline` over `kernel`. When SMELT_DUMP_DIR is set, the kernel is written to DIR/kernels/
/// before the pipeline as <kernel>.00-before-<first pass>.kernel and after each pass as
/// <kernel>.NN-<pass>.kernel (text parseKernel reads back). Returns whether any pass changed it.
Expected<bool> runKernelPasses(Kernel& kernel, std::string_view pipeline);

}  // namespace smelt::codegen
