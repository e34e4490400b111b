// What every executable does around its kernels, whatever the device: check and bind the feeds, keep
// the caller's output tensors, and (SMELT_CHECK_KERNELS) compare a kernel's results with the reference.
#pragma once

#include "ir/interpreter.h"

#include <map>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// The feeds of one run, by graph position: every input (required, exactly its type) and the
/// parameters that were fed (null where the parameter keeps its value). T: Tensor, or DeviceTensor
/// for device-resident runs.
template <typename T>
struct BoundFeedsOf {
  std::vector<const T*> inputs;
  std::vector<const T*> parameters;
};
using BoundFeeds = BoundFeedsOf<Tensor>;

/// Checks `feeds` against `graph` (missing inputs, wrong types, names that match nothing) and binds
/// them by position.
template <typename T>
Expected<BoundFeedsOf<T>> bindFeeds(const Graph& graph, const std::map<std::string, T, std::less<>>& feeds) {
  BoundFeedsOf<T> bound;
  for (const Value* v : graph.inputs()) {
    auto it = feeds.find(v->name());
    if (it == feeds.end()) return makeError("input '{}' ({}) was not fed", v->name(), v->type().toString());
    if (!(it->second.type() == v->type())) {
      return makeError("input '{}' expects {}, got {}", v->name(), v->type().toString(), it->second.type().toString());
    }
    bound.inputs.push_back(&it->second);
  }
  for (const Value* v : graph.parameters()) {
    auto it = feeds.find(v->name());
    if (it != feeds.end() && !(it->second.type() == v->type())) {
      return makeError("parameter '{}' expects {}, got {}", v->name(), v->type().toString(), it->second.type().toString());
    }
    bound.parameters.push_back(it != feeds.end() ? &it->second : nullptr);
  }
  for (const auto& [name, tensor] : feeds) {
    if (!graph.findInput(name) && !graph.findParameter(name)) {
      return makeError("feed '{}' names no input or parameter of graph @{}", name, graph.name());
    }
  }
  return bound;
}
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
