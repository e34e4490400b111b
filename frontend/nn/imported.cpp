// See imported.h.
#include "frontend/nn/imported.h"

#include <fmt/format.h>

#include <unordered_map>

namespace smelt::nn {

namespace {

class Imported final : public Module {
 public:
  explicit Imported(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {}

  Value* forward(GraphContext& ctx, Value* x) override {
    const Graph& g = *graph_;
    if (g.inputs().size() != 1 || g.outputs().empty()) {
      return ctx.b().fail(makeError("imported @{}: a module needs a graph of one input and an output, it has {} inputs "
                                    "and {} outputs",
                                    g.name(), g.inputs().size(), g.outputs().size()));
    }
    std::unordered_map<const Value*, Value*> map{{g.inputs()[0], x}};
    for (const Value* p : g.parameters()) {
      const Tensor& initial = p->initialValue();
      if (initial.dtype() != DType::f32) {
        return ctx.b().fail(makeError("imported @{}: parameter '{}' is {}; modules train f32 parameters", g.name(),
                                      p->name(), initial.type().toString()));
      }
      Tensor start = initial;
      map[p] = ctx.parameter(p->name(), initial.shape(), [start](const Shape&, uint64_t) { return start; },
                             p->trainable());
    }
    for (const auto& node : g.nodes()) {
      std::vector<Value*> operands;
      for (const Value* o : node->operands()) operands.push_back(map.at(o));
      ctx.b().setSourceName(node->sourceName());
      std::vector<Value*> results = ctx.b().ops(node->opName(), operands, node->attrs());
      ctx.b().setSourceName({});
      if (results.size() != node->results().size()) return nullptr;
      for (size_t r = 0; r < results.size(); ++r) map[node->result(r)] = results[r];
    }
    return map.at(g.outputs()[0].value);
  }

  std::string describe() const override {
    return fmt::format("Imported(@{}: {} nodes, {} parameters)", graph_->name(), graph_->numNodes(), graph_->parameters().size());
  }

 private:
  std::shared_ptr<const Graph> graph_;
};

}  // namespace

ModulePtr imported(std::shared_ptr<const Graph> graph) { return std::make_shared<Imported>(std::move(graph)); }

}  // namespace smelt::nn
