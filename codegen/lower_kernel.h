// Lowering from IR to kernel descriptions: one kernel per `fused` node (its body composed through each
// op's lowering facet, ir/lowering.h) or per lone op. Buffers are numbered operands first (buffer i is
// operand i), then results (buffer numOperands + r is result r).
//   Expected<Kernel> k = lowerToKernel(graph, *node);   // fused or lone, never a constant
#pragma once

#include "codegen/kernel.h"
#include "codegen/kernel_passes.h"
#include "ir/graph.h"

namespace smelt::codegen {

/// The kernel computing `node` (a `fused` node or any op with a lowering facet; not a constant), after
/// the kernel passes of `pipeline` ("none": as lowered, for kernel-pass tests and dumps).
Expected<Kernel> lowerToKernel(const Graph& graph, const Node& node,
                               std::string_view pipeline = kLoweringKernelPipeline);

/// The kernel computing `node` with `anchor` (a matmul, gemm or conv2d: `node` itself or in its body)
/// computed elsewhere (by a BLAS): its value alpha * op(a) op(b) (a convolution without its bias)
/// comes from one more buffer, numbered after the results, and a gemm's beta * c or a convolution's
/// bias is added in the kernel. What remains is the epilogue.
Expected<Kernel> lowerEpilogue(const Graph& graph, const Node& node, const Node& anchor);

/// True when every op `node` runs (its body's, for a `fused` node) has a lowering facet.
bool canLower(const Node& node);

}  // namespace smelt::codegen
