// See graph_context.h.
#include "frontend/nn/graph_context.h"

namespace smelt::nn {

GraphContext::GraphContext(Graph& graph, StateDict& state, bool training, uint64_t seed)
    : graph_(graph), builder_(graph), state_(state), training_(training), seed_(seed) {}

Value* GraphContext::parameter(const std::string& name, const Shape& shape, const Initializer& init, bool trainable) {
  std::string full = prefix_ + name;
  if (Value* existing = graph_.findParameter(full)) return existing;
  auto it = state_.find(full);
  if (it == state_.end()) it = state_.emplace(full, init(shape, seedFor(seed_, full))).first;
  if (!(it->second.type() == TensorType{DType::f32, shape})) {
    return builder_.fail(makeError("parameter '{}' is {} in the model's state, but the layer expects {}", full,
                                   it->second.type().toString(), TensorType{DType::f32, shape}.toString()));
  }
  // Declared by type only: the value stays in the state, which every run feeds (no copy in the graph).
  Value* p = graph_.addFedParameter(full, it->second.type(), trainable);
  if (trainable) trainable_.push_back(p);
  return p;
}

Value* GraphContext::stepInput() {
  if (Value* v = graph_.findInput("step")) return v;
  return graph_.addInput("step", TensorType{DType::i64, {}});
}

int64_t GraphContext::nextSeed() { return static_cast<int64_t>(seedFor(seed_, "draw" + std::to_string(draws_++)) >> 1); }

Value* GraphContext::requireRange(Value* value, int64_t lo, int64_t hi, std::string what) {
  if (!value) return nullptr;
  if (value->kind() == ValueKind::Input) inputRanges_.push_back({value->name(), lo, hi, what});
  return builder_.op("check_range", {value}, {{"lo", lo}, {"hi", hi}, {"what", std::move(what)}});
}

Status checkInputRange(const InputRange& range, const Tensor& values) {
  if (!isInteger(values.dtype())) return Status::success();
  for (int64_t i = 0; i < values.numel(); ++i) {
    int64_t v = values.getInt(i);
    if (v < range.lo || v >= range.hi) {
      return makeError("{}: element {} is {}, outside [{}, {}) ({})", range.input, i, v, range.lo, range.hi, range.what);
    }
  }
  return Status::success();
}

}  // namespace smelt::nn
