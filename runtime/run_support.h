// What every executable does around its kernels, whatever the device: check and bind the feeds, keep
// the caller's output tensors, and (SMELT_CHECK_KERNELS) compare a kernel's results with the reference.
#pragma once

#include "ir/interpreter.h"

#include <span>
#include <string>
#include <vector>

namespace smelt {

/// The feeds of one run, by graph position: every input (required, exactly its type) and the
/// parameters that were fed (null where the parameter keeps its value).
struct BoundFeeds {
  std::vector<const Tensor*> inputs;
  std::vector<const Tensor*> parameters;
};

/// Checks `feeds` against `graph` (missing inputs, wrong types, names that match nothing) and binds
/// them by position.
Expected<BoundFeeds> bindFeeds(const Graph& graph, const TensorMap& feeds);
/// Checks feeds given by position: one per input (exactly its type), one or null per parameter.
Status checkPositionalFeeds(const Graph& graph, std::span<const Tensor* const> inputs,
                            std::span<const Tensor* const> parameters);

/// Makes `outputs` hold one tensor of each graph output's type, keeping those that already match (no
/// allocation on repeated runs with the same vector).
void prepareOutputs(const Graph& graph, std::vector<Tensor>& outputs, const std::vector<bool>* skip = nullptr);

/// SMELT_CHECK_KERNELS: `node`'s results computed by a kernel against the reference interpreter on the
/// operands it read; each result off by more than 1e-3 (relative to its largest value) is logged as an
/// error naming `label`. A bisecting aid, not a test.
Status checkAgainstReference(const Graph& graph, const Node& node, const std::string& label,
                             const std::vector<Tensor>& operands, const std::vector<Tensor>& results);

}  // namespace smelt
