// What an executable does around its kernels, whatever the device: check and bind the feeds, keep
// the caller's output tensors, and (SMELT_CHECK_KERNELS) compare a kernel's results with the reference.
#pragma once

#include "ir/dims.h"
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
    if (!typeAccepts(v->type(), it->second.type())) {
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
/// Checks feeds given by position: one per input (exactly its type), one or null per parameter (null
/// only where the parameter has a value). T: Tensor or DeviceTensor.
template <typename T>
Status checkPositionalFeeds(const Graph& graph, std::span<const T* const> inputs, std::span<const T* const> parameters) {
  if (inputs.size() != graph.inputs().size() || parameters.size() != graph.parameters().size()) {
    return makeError("graph @{} takes {} inputs and {} parameters, given {} and {}", graph.name(), graph.inputs().size(),
                     graph.parameters().size(), inputs.size(), parameters.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = graph.inputs()[i];
    if (!inputs[i]) return makeError("input '{}' ({}) was not fed", v->name(), v->type().toString());
    if (!(inputs[i]->type() == v->type())) {
      return makeError("input '{}' expects {}, got {}", v->name(), v->type().toString(), inputs[i]->type().toString());
    }
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Value* v = graph.parameters()[i];
    if (!parameters[i] && !v->hasInitialValue()) {
      return makeError("parameter '{}' ({}) has no value: feed it", v->name(), v->type().toString());
    }
    if (parameters[i] && !(parameters[i]->type() == v->type())) {
      return makeError("parameter '{}' expects {}, got {}", v->name(), v->type().toString(), parameters[i]->type().toString());
    }
  }
  return Status::success();
}

/// Makes `outputs` hold one tensor of each graph output's type, keeping those that already match (no
/// allocation on repeated runs with the same vector).
void prepareOutputs(const Graph& graph, std::vector<Tensor>& outputs, const std::vector<bool>* skip = nullptr);

/// " (16x64x16x16, 64x64x3x3)": the node's operand shapes, for profiles.
std::string describeShape(const Node* node);

/// SMELT_CHECK_KERNELS: `node`'s results computed by a kernel against the reference interpreter on the
/// operands it read; each result off by more than 1e-3 (relative to its largest value) is logged as an
/// error naming `label`. A bisecting aid, not a test.
Status checkAgainstReference(const Graph& graph, const Node& node, const std::string& label,
                             const std::vector<Tensor>& operands, const std::vector<Tensor>& results);

}  // namespace smelt
