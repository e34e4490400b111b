// dce: removes nodes whose results are unused and are not graph outputs. Parameters and inputs stay
// (they are the model's interface, even when nothing reads them).
//   %0 = exp(%x) : f32[4]        // unused
//   %1 = neg(%x) : f32[4]         ->   %0 = neg(%x) : f32[4]
//   return y = %1                      return y = %0
#include "passes/passes.h"

namespace smelt {

namespace {

class DeadCodeElimination final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  std::string_view summary() const override {
    return "Removes nodes whose results are unused and not graph outputs";
  }
  Expected<bool> run(Graph& graph, PassContext& context) override {
    // removeDeadNodes works back to front, so a whole dead chain goes in one call.
    size_t removed = graph.removeDeadNodes();
    if (removed) context.count("nodes removed", static_cast<int64_t>(removed));
    return removed > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> createDeadCodeElimination() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace smelt
