// Runs a graph kernel by kernel on the kernel interpreter: each non-constant node lowered
// (codegen/lower_kernel.h) and interpreted. The lowering's oracle test compares it with the reference.
#pragma once

#include "codegen/kernel.h"
#include "codegen/kernel_passes.h"
#include "ir/interpreter.h"

#include <functional>

namespace smelt::testing {

/// The graph's outputs computed through lowered kernels; constants are taken as they are. `rewrite`,
/// when given, changes each kernel before it runs (a backend's own kernel rewrite under test); each
/// kernel is lowered with the kernel passes of `pipeline` (codegen/kernel_passes.h).
Expected<std::vector<Tensor>> runWithKernels(const Graph& graph, const TensorMap& feeds,
                                             const std::function<void(codegen::Kernel&)>& rewrite = {},
                                             std::string_view pipeline = codegen::kLoweringKernelPipeline);

/// `graph` after the default pipeline (fusion included), as an executable would compile it; a failing
/// pass fails the test.
Graph optimizedOrFail(const Graph& graph);

/// Runs `graph` through lowered kernels and checks each output against `expected` within
/// kernelTolerance(); a failure names `what`, `how` it ran (alone, after a pipeline) and the graph.
void checkKernelRun(const Graph& graph, const TensorMap& feeds, const std::vector<Tensor>& expected, const char* how,
                    const std::string& what);

/// The kernel lowered from the graph's last node that is not a constant; a failure fails the test.
codegen::Kernel lastNodeKernelOrFail(const Graph& graph);

/// How far kernel results may be from the reference's (relative, plus the same absolute): kernels
/// compute f32 in f32 and accumulate reductions in f32 (the reference: double, rounded once), and
/// f16/bf16 in f32 rounded per instruction, a few ulps more than the reference's own rounding.
/// Integers and bool are exact.
double kernelTolerance(DType dtype);

}  // namespace smelt::testing
