// GradientTape: records the ops built while it is alive (an RAII scope over a Graph) and derives
// gradients as more IR in the same graph. Tapes nest: an outer tape records the backward ops an inner
// tape emits, so the gradient of a gradient works.
//
//   Graph g;  Value* x = g.addInput("x", {DType::f64, {3}});
//   GradientTape tape(g);
//   tape.watch(x);
//   Value* y = *g.apply("exp", {x});
//   auto dx = tape.gradient(y, x);          // sum(exp(x)) differentiated: exp(x)
#pragma once

#include "autodiff/backward.h"

#include <unordered_set>

namespace smelt {

/// Records nodes added to a graph while it is alive, and differentiates through them.
class GradientTape final : public GraphObserver {
 public:
  /// Starts recording on `graph`. A non-persistent tape allows one gradient() call; a persistent one
  /// any number.
  explicit GradientTape(Graph& graph, bool persistent = false);
  ~GradientTape() override;
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Marks a value that is not a trainable parameter (a graph input, a constant, an intermediate
  /// built before the tape) as a source gradients may be taken with respect to.
  void watch(Value* value) { watched_.insert(value); }
  /// Stops recording; later nodes are invisible to this tape.
  void stopRecording();

  /// Gradients of `target` with respect to each source, as values in the same graph. A non-scalar
  /// target contributes the sum of its elements; `outputGradient` (same type as target) instead gives
  /// the vector-Jacobian product. Sources must be trainable parameters, watched values, or results of
  /// recorded nodes; sources the target does not depend on get zeros.
  Expected<std::vector<Value*>> gradient(Value* target, std::span<Value* const> sources,
                                         Value* outputGradient = nullptr);
  /// Single-source convenience.
  Expected<Value*> gradient(Value* target, Value* source, Value* outputGradient = nullptr);

 private:
  void onNodeAdded(Node* node) override;

  Graph& graph_;
  bool persistent_;
  bool recording_ = true;
  bool used_ = false;
  std::unordered_set<const Node*> recorded_;
  std::unordered_set<const Value*> watched_;
};

/// Stops gradients: the identity in the forward pass, zero gradient backward. Emits a `stop_gradient`.
Expected<Value*> stopGradient(Graph& graph, Value* value);

/// Graph-level differentiation (for imported models): the gradient of the sum of all elements of all
/// floating-point outputs with respect to each named graph input or parameter. Appends the backward
/// nodes and returns one gradient value per name.
Expected<std::vector<Value*>> gradientOfOutputs(Graph& graph, std::span<const std::string> wrt);

}  // namespace smelt
