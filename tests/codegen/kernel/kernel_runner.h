// Runs a graph kernel by kernel on the kernel interpreter: each non-constant node lowered
// (codegen/lower_kernel.h) and interpreted. The lowering's oracle test compares it with the reference.
#pragma once

#include "ir/interpreter.h"

namespace smelt::testing {

/// The graph's outputs computed through lowered kernels; constants are taken as they are.
Expected<std::vector<Tensor>> runWithKernels(const Graph& graph, const TensorMap& feeds);

}  // namespace smelt::testing
