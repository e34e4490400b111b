// GradientTape and graph-level differentiation.
#include "autodiff/gradient_tape.h"

#include "ir/printer.h"

namespace smelt {

GradientTape::GradientTape(Graph& graph, bool persistent) : graph_(graph), persistent_(persistent) {
  graph_.addObserver(this);
}

GradientTape::~GradientTape() { stopRecording(); }

void GradientTape::stopRecording() {
  if (recording_) graph_.removeObserver(this);
  recording_ = false;
}

void GradientTape::onNodeAdded(Node* node) { recorded_.insert(node); }

Expected<std::vector<Value*>> GradientTape::gradient(Value* target, std::span<Value* const> sources,
                                                     Value* outputGradient) {
  if (used_ && !persistent_) {
    return makeError("this GradientTape is not persistent and its gradient() was already called; "
                     "create it with persistent = true to call gradient() more than once");
  }
  if (!target) return makeError("gradient: the target is missing");
  for (Value* s : sources) {
    if (!s) return makeError("gradient: a source is missing");
    bool ok = watched_.count(s) || (s->kind() == ValueKind::Parameter && s->trainable()) ||
              (s->producer() && recorded_.count(s->producer()));
    if (!ok) {
      std::string what = s->kind() == ValueKind::Result ? fmt::format("{} result", graph_.labelOf(*s->producer()))
                                                        : fmt::format("%{}", s->name());
      return makeError("gradient: {} is not watched by this tape (watch() it, or build it while the tape records)",
                       what);
    }
  }
  used_ = true;
  // The tape's own backward nodes are not recorded by itself (an enclosing tape still sees them).
  bool wasRecording = recording_;
  if (wasRecording) graph_.removeObserver(this);
  BackwardOptions options;
  options.recorded = &recorded_;
  Value* targets[1] = {target};
  Value* seeds[1] = {outputGradient};
  auto grads = buildGradients(graph_, targets, seeds, sources, options);
  if (wasRecording) graph_.addObserver(this);
  return grads;
}

Expected<Value*> GradientTape::gradient(Value* target, Value* source, Value* outputGradient) {
  Value* sources[1] = {source};
  SMELT_TRY(std::vector<Value*> grads, gradient(target, sources, outputGradient));
  return grads[0];
}

Expected<Value*> stopGradient(Graph& graph, Value* value) { return graph.apply("stop_gradient", {value}); }

Expected<std::vector<Value*>> gradientOfOutputs(Graph& graph, std::span<const std::string> wrt) {
  std::vector<Value*> sources;
  for (const std::string& name : wrt) {
    Value* v = graph.findInput(name);
    if (!v) v = graph.findParameter(name);
    if (!v) return makeError("--wrt '{}': the graph has no input or parameter of that name", name);
    sources.push_back(v);
  }
  std::vector<Value*> targets;
  for (const GraphOutput& out : graph.outputs()) {
    if (isFloat(out.value->dtype())) targets.push_back(out.value);
  }
  if (targets.empty()) return makeError("graph @{} has no floating-point output to differentiate", graph.name());
  return buildGradients(graph, targets, {}, sources);
}

}  // namespace smelt
