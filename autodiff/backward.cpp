// Reverse-mode sweep: accumulate result gradients node by node, newest first, calling each op's rule.
#include "autodiff/backward.h"

#include "ir/builder.h"

#include <unordered_map>

namespace smelt {

namespace {

std::string describe(const Graph& graph, const Value* v) {
  if (v->kind() != ValueKind::Result) return fmt::format("%{} ({})", v->name(), v->type().toString());
  return fmt::format("result #{} of {} ({})", v->resultIndex(), graph.labelOf(*v->producer()), v->type().toString());
}

class Sweep {
 public:
  Sweep(Graph& graph, const BackwardOptions& options) : graph_(graph), options_(options) {}

  Expected<std::vector<Value*>> run(std::span<Value* const> targets, std::span<Value* const> seeds,
                                    std::span<Value* const> sources) {
    for (Value* s : sources) {
      if (!isFloat(s->dtype())) {
        return makeError("gradient with respect to {}: integer and bool values have no gradient", describe(graph_, s));
      }
    }
    // Snapshot: the graph grows while gradients are emitted.
    std::vector<Node*> forward;
    for (const auto& n : graph_.nodes()) {
      if (!options_.recorded || options_.recorded->count(n.get())) forward.push_back(n.get());
    }
    markNeedsGradient(forward, sources);
    markReachesTarget(forward, targets);

    for (size_t i = 0; i < targets.size(); ++i) {
      Value* t = targets[i];
      if (!isFloat(t->dtype())) {
        return makeError("gradient of {}: integer and bool values have no gradient", describe(graph_, t));
      }
      Value* seed = i < seeds.size() ? seeds[i] : nullptr;
      if (seed && !(seed->type() == t->type())) {
        return makeError("the output gradient for {} must be {}, got {}", describe(graph_, t), t->type().toString(),
                         seed->type().toString());
      }
      if (!seed) {
        Builder b(graph_, "grad seed");
        seed = b.onesLike(t);
        SMELT_CHECK_OK(b.status());
      }
      SMELT_CHECK_OK(accumulate(t, seed));
    }
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) SMELT_CHECK_OK(backpropagate(**it));

    std::vector<Value*> result;
    Builder b(graph_, "grad zeros");
    for (Value* s : sources) {
      auto it = grads_.find(s);
      result.push_back(it != grads_.end() ? it->second : b.zerosLike(s));
    }
    SMELT_CHECK_OK(b.status());
    return result;
  }

 private:
  void markNeedsGradient(const std::vector<Node*>& forward, std::span<Value* const> sources) {
    for (Value* s : sources) needs_.insert(s);
    for (Node* n : forward) {
      bool any = false;
      for (Value* o : n->operands()) any = any || needs_.count(o);
      if (!any) continue;
      for (Value* r : n->results()) {
        if (isFloat(r->dtype())) needs_.insert(r);
      }
    }
  }

  void markReachesTarget(const std::vector<Node*>& forward, std::span<Value* const> targets) {
    for (Value* t : targets) reaches_.insert(t);
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      Node* n = *it;
      bool any = false;
      for (Value* r : n->results()) any = any || reaches_.count(r);
      if (!any) continue;
      for (Value* o : n->operands()) reaches_.insert(o);
    }
  }

  bool wanted(const Value* v) const { return needs_.count(v) && reaches_.count(v); }

  Status accumulate(Value* v, Value* g) {
    auto [it, inserted] = grads_.emplace(v, g);
    if (inserted) return Status::success();
    Builder b(graph_, "grad accumulate");
    it->second = b.add(it->second, g);
    return b.status();
  }

  Status backpropagate(Node& node) {
    std::vector<Value*> resultGrads;
    bool anyGrad = false;
    for (Value* r : node.results()) {
      auto it = grads_.find(r);
      resultGrads.push_back(it != grads_.end() ? it->second : nullptr);
      anyGrad = anyGrad || it != grads_.end();
    }
    bool anyOperand = false;
    for (Value* o : node.operands()) anyOperand = anyOperand || wanted(o);
    if (!anyGrad || !anyOperand) return Status::success();

    const OpDef& op = node.op();
    std::string label = graph_.labelOf(node);
    std::vector<Value*> operandGrads;
    if (op.gradient) {
      Builder b(graph_, "grad of " + label);
      GradientContext ctx(node, resultGrads);
      operandGrads = op.gradient(b, ctx);
      SMELT_CHECK_OK(b.status());
    } else if (op.decompose) {
      SMELT_TRY(operandGrads, throughDecomposition(node, label, resultGrads));
    } else {
      return makeError("{} is not differentiable, but the gradient flows through it", label);
    }
    if (operandGrads.size() != node.numOperands()) {
      return makeError("{}: its gradient rule returned {} gradients for {} operands", label, operandGrads.size(),
                       node.numOperands());
    }
    for (size_t i = 0; i < operandGrads.size(); ++i) {
      Value* o = node.operand(i);
      Value* g = operandGrads[i];
      if (!g || !wanted(o)) continue;
      if (!(g->type() == o->type())) {
        return makeError("{}: its gradient rule gave {} for operand #{} of type {}", label, g->type().toString(), i,
                         o->type().toString());
      }
      SMELT_CHECK_OK(accumulate(o, g));
    }
    return Status::success();
  }

  // Emits the op's decomposition (recomputing its results from the same operands) and differentiates
  // through the new nodes only.
  Expected<std::vector<Value*>> throughDecomposition(Node& node, const std::string& label,
                                                     const std::vector<Value*>& resultGrads) {
    size_t before = graph_.numNodes();
    Builder b(graph_, "decomposition of " + label);
    std::vector<Value*> results = node.op().decompose(b, node);
    SMELT_CHECK_OK(b.status());
    if (results.size() != node.results().size()) {
      return makeError("{}: its decomposition gave {} results, the op has {}", label, results.size(),
                       node.results().size());
    }
    std::unordered_set<const Node*> added;
    for (size_t i = before; i < graph_.numNodes(); ++i) added.insert(graph_.nodes()[i].get());
    std::vector<Value*> targets, seeds, sources;
    for (size_t i = 0; i < results.size(); ++i) {
      if (!resultGrads[i] || !isFloat(results[i]->dtype())) continue;
      if (!(results[i]->type() == node.result(i)->type())) {
        return makeError("{}: its decomposition gives {} for result #{} of type {}", label,
                         results[i]->type().toString(), i, node.result(i)->type().toString());
      }
      targets.push_back(results[i]);
      seeds.push_back(resultGrads[i]);
    }
    std::vector<size_t> sourceIndex;
    for (size_t i = 0; i < node.numOperands(); ++i) {
      if (wanted(node.operand(i))) {
        sources.push_back(node.operand(i));
        sourceIndex.push_back(i);
      }
    }
    BackwardOptions inner;
    inner.recorded = &added;
    SMELT_TRY(std::vector<Value*> grads, buildGradients(graph_, targets, seeds, sources, inner));
    std::vector<Value*> operandGrads(node.numOperands(), nullptr);
    for (size_t k = 0; k < sourceIndex.size(); ++k) operandGrads[sourceIndex[k]] = grads[k];
    return operandGrads;
  }

  Graph& graph_;
  const BackwardOptions& options_;
  std::unordered_set<const Value*> needs_;
  std::unordered_set<const Value*> reaches_;
  std::unordered_map<const Value*, Value*> grads_;
};

}  // namespace

Expected<std::vector<Value*>> buildGradients(Graph& graph, std::span<Value* const> targets,
                                             std::span<Value* const> seeds, std::span<Value* const> sources,
                                             const BackwardOptions& options) {
  Sweep sweep(graph, options);
  return sweep.run(targets, seeds, sources);
}

}  // namespace smelt
