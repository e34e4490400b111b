// decompose: rewrites composite ops (those with a `decompose` facet: softmax, log_softmax, layer_norm,
// batch_norm, grid_sample, ...) into the primitives they are made of, so fusion and codegen only ever
// see primitives. softmax becomes e / sum(e) with e = exp(x - max(x)), the reference's own formula:
//   %0 = softmax(%x) : f32[4,8]      ->   %0 = reduce_max(%x) {axes = [1], keepdims = 1} : f32[4,1]
//                                          %1 = sub(%x, %0) : f32[4,8]
//                                          %2 = exp(%1) : f32[4,8]
//                                          %3 = reduce_sum(%2) {axes = [1], keepdims = 1} : f32[4,1]
//                                          %4 = div(%2, %3) : f32[4,8]
// `fused` also has a decomposition (its body inlined) but is left alone: it is already a kernel.
#include "ir/builder.h"
#include "passes/passes.h"

namespace smelt {

namespace {

class Decompose final : public Pass {
 public:
  std::string_view name() const override { return "decompose"; }
  std::string_view summary() const override {
    return "Rewrites composite ops (softmax, layer_norm, batch_norm, ...) into the primitives they are made of";
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    // Snapshot the composite nodes first: rewriting inserts nodes, and a decomposition may itself
    // contain composites (it never does today, so one sweep suffices; the loop below re-checks).
    bool changed = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      std::vector<Node*> composites;
      for (const auto& node : graph.nodes()) {
        if (node->op().decompose && node->opName() != "fused") composites.push_back(node.get());
      }
      if (composites.empty()) return changed;
      for (Node* node : composites) {
        std::string label = graph.labelOf(*node);
        Builder b(graph, node->sourceName());
        graph.setInsertionPoint(node);
        std::vector<Value*> results = node->op().decompose(b, *node);
        graph.clearInsertionPoint();
        if (!b.ok()) return b.status().error().withContext(fmt::format("decomposing {}", label));
        if (results.size() != node->results().size()) {
          return makeError("decomposing {}: got {} results, the op has {}", label, results.size(),
                           node->results().size());
        }
        for (size_t i = 0; i < results.size(); ++i) graph.replaceAllUsesWith(node->result(i), results[i]);
        context.count(fmt::format("{} decomposed", node->opName()));
        changed = true;
      }
      graph.removeDeadNodes();
    }
    return makeError("composite ops still remain after {} rounds of decomposition", kMaxRounds);
  }

 private:
  static constexpr int kMaxRounds = 4;
};

}  // namespace

std::unique_ptr<Pass> createDecompose() { return std::make_unique<Decompose>(); }

}  // namespace smelt
