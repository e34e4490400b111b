// Building one graph from modules: the graph and its builder, whether it is a training graph, the
// model's state (parameter values by name, shared by every graph built from the model), and the name
// prefix of the module being built ("features.0.").
//   nn::GraphContext ctx(graph, model.state(), /*training=*/true);
//   Value* w = ctx.parameter("weight", {out, in}, nn::kaimingUniform(in));   // "features.0.weight"
#pragma once

#include "frontend/nn/init.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

#include <map>
#include <string>
#include <vector>

namespace smelt::nn {

/// Tensors by name: a model's parameters and buffers, an optimizer's state. Ordered, as checkpoints
/// are; the executables' feed map type, so entries move between the two without copies.
using StateDict = TensorMap;

/// A range an integer graph input's values must lie in ([lo, hi)), checked on the host before each run:
/// class labels, whose out-of-range values a one-hot comparison would otherwise turn into a silent zero.
struct InputRange {
  std::string input;
  int64_t lo = 0, hi = 0;
  std::string what;  ///< "nll loss: labels of 10 classes"
};

/// The first value of `values` outside `range`, as an error naming it, its position and the range.
Status checkInputRange(const InputRange& range, const Tensor& values);

class GraphContext {
 public:
  /// Values missing from `state` are initialized there as parameters are first asked for, from
  /// `seed` and the parameter's name (so the same model and seed give the same values, in any order).
  GraphContext(Graph& graph, StateDict& state, bool training, uint64_t seed = 0);

  Graph& graph() { return graph_; }
  Builder& b() { return builder_; }
  bool training() const { return training_; }
  /// Whether batch norms normalize with statistics over every rank's batch (DistributedOptions::syncBatchNorm):
  /// their per-rank moments are averaged with an all_reduce, as PyTorch's SyncBatchNorm does.
  bool syncBatchNorm() const { return syncBatchNorm_; }
  void setSyncBatchNorm(bool sync) { syncBatchNorm_ = sync; }
  StateDict& state() { return state_; }

  /// The parameter `prefix + name` of `shape` (f32), created in this graph on first use; its value is
  /// the state's (which `init` makes when the state has none), fed on every run rather than copied
  /// into the graph. Trainable ones get gradients; the others (running statistics) are state the
  /// graph may update.
  Value* parameter(const std::string& name, const Shape& shape, const Initializer& init, bool trainable = true);
  /// The trainable parameters created so far, in creation order.
  const std::vector<Value*>& trainable() const { return trainable_; }
  /// New values for non-trainable parameters (a batch norm's running statistics), by full name.
  void assign(const std::string& fullName, Value* value) { assigned_.emplace_back(fullName, value); }
  const std::vector<std::pair<std::string, Value*>>& assigned() const { return assigned_; }

  /// Runs `build` with `part + "."` appended to the name prefix. With a `label` (the layer's
  /// description), the nodes it builds carry "<prefix><part> <label>" ("4 Linear(32 -> 2)") as their
  /// source name, so verifier errors, SMELT_PROFILE and `smelt inspect` name the layer.
  template <typename F>
  auto scoped(const std::string& part, F&& build, const std::string& label = {}) {
    std::string saved = prefix_, savedSource = builder_.sourceName();
    prefix_ += part + ".";
    if (!label.empty()) builder_.setSourceName(prefix_.substr(0, prefix_.size() - 1) + " " + label);
    auto result = build();
    prefix_ = std::move(saved);
    builder_.setSourceName(std::move(savedSource));
    return result;
  }
  const std::string& prefix() const { return prefix_; }

  /// Requires `value`'s integer elements to lie in [lo, hi) and returns the value to compute with: a
  /// check_range of it, which every executable checks on its device (a value outside is an error naming the
  /// node and `what`, never a silent result). When `value` is a graph input, training steps also check the fed
  /// tensor before running, naming the element.
  Value* requireRange(Value* value, int64_t lo, int64_t hi, std::string what);
  const std::vector<InputRange>& inputRanges() const { return inputRanges_; }

  /// A seed for a random op (dropout), distinct per call within the graph.
  int64_t nextSeed();
  /// The step number, an i64 scalar input named "step" that training steps feed (1, 2, ...): random
  /// ops add it to their seed, so one compiled step draws new masks every time.
  Value* stepInput();

 private:
  Graph& graph_;
  Builder builder_;
  StateDict& state_;
  bool training_;
  bool syncBatchNorm_ = false;
  uint64_t seed_;
  uint64_t draws_ = 0;
  std::string prefix_;
  std::vector<Value*> trainable_;
  std::vector<std::pair<std::string, Value*>> assigned_;
  std::vector<InputRange> inputRanges_;
};

}  // namespace smelt::nn
