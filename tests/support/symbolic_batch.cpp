// See symbolic_batch.h.
#include "tests/support/symbolic_batch.h"

#include "ir/dims.h"
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <fmt/format.h>

namespace smelt::testing {

Expected<Graph> withSymbolicBatch(const Graph& graph, int64_t batch) {
  return withInputTypes(graph, [&](TensorType t) -> Expected<TensorType> {
    if (t.rank() > 0 && t.shape[0] == batch) t.shape[0] = dimSymbol("B");
    return t;
  });
}

void checkSymbolicRunsAsBound(const Graph& symbolic, const Graph& bound, uint64_t seed) {
  TensorMap feeds = randomFeeds(bound, seed);
  auto viaSymbolic = interpret(symbolic, feeds);
  auto viaStatic = interpret(bound, feeds);
  REQUIRE_MESSAGE(viaSymbolic.ok(), viaSymbolic.error().message());
  REQUIRE_MESSAGE(viaStatic.ok(), viaStatic.error().message());
  REQUIRE(viaSymbolic->size() == viaStatic->size());
  for (size_t i = 0; i < viaStatic->size(); ++i) checkClose((*viaSymbolic)[i], (*viaStatic)[i], 0);
}

TensorType substituteSymbols(TensorType t, int64_t n) {
  for (int64_t& d : t.shape) {
    if (!isSymbolic(d)) continue;
    d = evaluateSymbolicExtent(d, [n](const std::string&) {
          return std::optional<int64_t>(n);
        }).value();  // each symbol n
  }
  return t;
}

std::string compareBoundTypes(const Graph& symbolic, const Graph& bound, int64_t n) {
  if (symbolic.nodes().size() != bound.nodes().size()) return "the graphs have different node counts";
  for (size_t i = 0; i < symbolic.nodes().size(); ++i) {
    const Node& s = *symbolic.nodes()[i];
    const Node& b = *bound.nodes()[i];
    for (size_t r = 0; r < s.results().size(); ++r) {
      TensorType want = substituteSymbols(s.result(r)->type(), n);
      if (!(want == b.result(r)->type())) {
        return fmt::format("{} result #{}: symbolic {} bound to {} is {}, static inference gives {}",
                           symbolic.labelOf(s), r, s.result(r)->type().toString(), n, want.toString(),
                           b.result(r)->type().toString());
      }
    }
  }
  return "";
}

}  // namespace smelt::testing
