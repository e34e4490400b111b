// Fusion analysis: which nodes of a graph run together as one kernel. The fuse pass (fuse.cpp) outlines
// each group into a `fused` node; `smelt inspect` and codegen read a fused node's shape back with
// describeKernel. The rules (docs/passes.md has them with examples):
//   - a kernel iterates over one *domain*: a full shape S and a set A of reduced axes (empty for
//     elementwise kernels). Every op in it computes either at the full level (results of shape S) or at
//     the reduced level (S with A dropped or kept as 1s), so no value is ever computed twice;
//   - loop kernels: elementwise ops, broadcasts, and view ops (reshape, transpose, slice, ...) reading
//     the kernel's operands;
//   - reduce kernels: reductions over (S, A) with their elementwise producers and consumers;
//   - epilogue kernels: one matmul, gemm or conv with elementwise consumers of its result's shape;
//   - groups merge only along producer-consumer edges, and never when a path leaves the merged group
//     and comes back (a cycle).
#pragma once

#include "ir/graph.h"

#include <unordered_map>
#include <vector>

namespace smelt {

/// How a fused kernel iterates; printed as the `kind` attribute of a `fused` node.
enum class KernelKind { Loop, Reduce, Epilogue };

/// "loop", "reduce", "epilogue".
std::string_view kernelKindName(KernelKind kind);

/// The iteration space of a kernel: the full shape and the reduced axes (sorted; empty unless Reduce).
struct KernelDomain {
  Shape shape;
  std::vector<int64_t> axes;
};

/// One group of nodes that becomes one kernel.
struct FusionGroup {
  KernelKind kind = KernelKind::Loop;
  KernelDomain domain;
  /// The matmul/gemm/conv of an epilogue kernel.
  const Node* anchor = nullptr;
  /// Members in graph order; constants are never members (outlining copies scalar ones in).
  std::vector<const Node*> members;
};

/// The groups of a graph. Nodes outside every group (constants, ops that fuse with nothing) run alone.
struct FusionPlan {
  std::vector<FusionGroup> groups;
  /// Group index of each grouped node.
  std::unordered_map<const Node*, size_t> groupOf;
};

/// What else constrains grouping.
struct FusionOptions {
  /// Nodes a rematerialization placed late in the schedule (rematerialize.h), each with the position
  /// of the first node of its recomputation: a group holding one never holds a node placed before
  /// that, so the recomputation runs late (fused into its consumers) instead of joining the original
  /// computation's kernel and keeping its result alive across the peak.
  std::unordered_map<const Node*, size_t> recomputedAt;
};

/// Groups the nodes of `graph` by the rules above. Groups of one node are left out.
FusionPlan planFusion(const Graph& graph, const FusionOptions& options = {});

/// What one kernel (a `fused` node's body, or a lone node) does, for listings and codegen.
struct KernelSummary {
  KernelKind kind = KernelKind::Loop;
  KernelDomain domain;
  /// Ops in the kernel (constants excluded).
  int64_t ops = 0;
  /// How many times the kernel walks its reduced axes per output row: the longest chain of dependent
  /// reductions, plus one when full-level results are written after the last of them. A sum of
  /// squares is 1; layer_norm is 2; softmax (max, sum of exp(x - max), write) is 3.
  int64_t sweeps = 1;
};

/// Describes the kernel of a `fused` node (from its body) or of a lone op.
KernelSummary describeKernel(const Node& node);

/// The IR nodes a kernel comes from, for its source's comments and `smelt inspect`: the node's label
/// ("fused %4"), then each op it runs ("gemm %0", with the imported model's node name when there is
/// one: "gemm %0 (/fc1/Gemm)").
std::vector<std::string> kernelProvenance(const Graph& graph, const Node& node);

}  // namespace smelt
