// fold: constant folding. A node whose operands are all `constant` results is evaluated with the
// reference interpreter and its results become `constant` nodes:
//   %0 = constant() {value = dense<i64[2]> [2, 3]} : i64[2]        %2 = constant() {value = dense<i64[]> 6} : i64[]
//   %1 = reduce_prod(%0) : i64[]                              ->   return n = %2
//   return n = %1
// Shape computations (the ONNX Shape -> Gather -> Concat chains) collapse this way. Results larger
// than kMaxFoldedElements stay unfolded so an `expand` of a scalar does not bloat the graph.
#include "ir/interpreter.h"
#include "passes/passes.h"

#include <algorithm>
#include <unordered_set>

namespace smelt {
namespace {

/// The largest result (in elements) folding materializes; bigger ones stay computed.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

bool isConstant(const Value* v) { return v->producer() && v->producer()->opName() == "constant"; }

/// Folds nodes with all-constant operands into constants.
class ConstantFolding final : public Pass {
 public:
  std::string_view name() const override { return "fold"; }
  std::string_view summary() const override {
    return "evaluates nodes whose operands are all constants and replaces them by constants";
  }

  Expected<bool> run(Graph& graph, PassContext& context) override {
    std::unordered_set<const Value*> outputs;
    for (const GraphOutput& out : graph.outputs()) outputs.insert(out.value);
    // Snapshot the order: folding inserts constants into the node list while we walk it. One sweep
    // suffices because a folded node's replacements are constants before its users.
    std::vector<Node*> order;
    for (const auto& node : graph.nodes()) order.push_back(node.get());

    int64_t folded = 0;
    for (Node* node : order) {
      if (!foldable(*node)) continue;
      std::vector<Tensor> operands;
      for (const Value* v : node->operands()) operands.push_back(std::get<Tensor>(v->producer()->attrs().at("value")));
      // A node that fails at run time (gather out of range) keeps failing there, where the error
      // names it, rather than in the optimizer.
      auto results = evaluateNode(graph, *node, operands);
      if (!results) continue;
      graph.setInsertionPoint(node);
      for (size_t i = 0; i < node->results().size(); ++i) {
        Value* result = node->result(i);
        if (result->users().empty() && !outputs.count(result)) continue;
        Value* replacement = graph.constant(std::move((*results)[i]));
        graph.replaceAllUsesWith(result, replacement);
        if (outputs.count(result)) {
          outputs.erase(result);
          outputs.insert(replacement);
        }
      }
      graph.clearInsertionPoint();
      ++folded;
    }
    if (folded == 0) return false;
    // The folded nodes (and the constants only they used) are now dead.
    graph.removeDeadNodes();
    context.count("nodes folded", folded);
    return true;
  }

 private:
  static bool foldable(const Node& node) {
    // Constants are already folded; an op without operands has nothing to fold from.
    if (node.opName() == "constant" || node.numOperands() == 0) return false;
    if (!std::all_of(node.operands().begin(), node.operands().end(), isConstant)) return false;
    // dropout draws from a counter-based stream seeded by an attribute, so it is deterministic and
    // folds like any other op. Results past the limit stay computed.
    return std::all_of(node.results().begin(), node.results().end(),
                       [](const Value* v) { return v->type().numel() <= kMaxFoldedElements; });
  }
};

}  // namespace

std::unique_ptr<Pass> createConstantFolding() { return std::make_unique<ConstantFolding>(); }

}  // namespace smelt
