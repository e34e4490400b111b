// The lowering oracle test: every op with a lowering facet, for every dtype it accepts, runs its IR
// example through kernels (kernel interpreter) alone and after the default pipeline (fused), and must
// match the reference interpreter within the dtype's tolerance. No per-op test code.
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

std::string substitute(std::string text, std::string_view dtype) {
  for (size_t at = text.find("$T"); at != std::string::npos; at = text.find("$T", at)) text.replace(at, 2, dtype);
  return text;
}

// Kernels compute f32 in f32 and accumulate reductions in f32 (the reference: double, rounded once),
// and f16/bf16 in f32 rounded per instruction: a few ulps more than the reference's own rounding.
double kernelTolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 2e-2;
    case DType::bf16: return 8e-2;
    case DType::f32: return 1e-5;
    case DType::f64: return 1e-12;
    default: return 0;
  }
}

void checkRun(const Graph& graph, const TensorMap& feeds, const std::vector<Tensor>& expected, const char* how,
              const std::string& what) {
  auto actual = testing::runWithKernels(graph, feeds);
  REQUIRE_MESSAGE(actual.ok(), what, " (", how, "): ", (actual.ok() ? "" : actual.error().message()), "\n",
                  toText(graph));
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string d = testing::compareTensors((*actual)[i], expected[i], kernelTolerance(expected[i].dtype()));
    CHECK_MESSAGE(d.empty(), what, " (", how, ") output ", graph.outputs()[i].name, ": ", d, "\n", toText(graph));
  }
}

}  // namespace

TEST_CASE("every op with a lowering computes its example like the reference, alone and fused") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  std::vector<std::string> missing;
  int checked = 0;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant") continue;
    if (!op->lower && !op->decompose) {
      missing.push_back(op->name);
      continue;
    }
    for (DType dtype : op->dtypes.list()) {
      std::string what = fmt::format("{} ({})", op->name, dtypeName(dtype));
      Graph graph = testing::parseOrFail(substitute(op->example, dtypeName(dtype)));
      TensorMap feeds = testing::randomFeeds(graph, seed);
      auto expected = interpret(graph, feeds);
      REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      // Composite ops run only decomposed; ops with a lowering also alone.
      if (op->lower) checkRun(graph, feeds, *expected, "alone", what);
      Graph optimized = graph.clone();
      auto pm = PassManager::defaultPipeline(PassManagerOptions{});
      REQUIRE(pm.ok());
      auto ran = pm->run(optimized);
      REQUIRE_MESSAGE(ran.ok(), what, ": ", (ran.ok() ? "" : ran.error().message()));
      bool lowerable = true;
      for (const auto& n : optimized.nodes()) lowerable = lowerable && (n->opName() == "constant" || n->op().lower || n->opName() == "fused");
      if (lowerable) checkRun(optimized, feeds, *expected, "after the default pipeline", what);
      ++checked;
    }
  }
  MESSAGE(fmt::format("{} op/dtype examples through kernels; no lowering yet: {}", checked, fmt::join(missing, ", ")));
}
