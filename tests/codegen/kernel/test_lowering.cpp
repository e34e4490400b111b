// The lowering oracle test: every op with a lowering facet, for every dtype it accepts, runs its IR
// example through kernels (kernel interpreter) alone and after the default pipeline (fused), and must
// match the reference interpreter within the dtype's tolerance. Every op must have a lowering or a
// decomposition. No per-op test code.
#include "codegen/lower_kernel.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

TEST_CASE("every op with a lowering computes its example like the reference, alone and fused") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  std::vector<std::string> missing, offReference;
  int checked = 0;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant" || op->collective) continue;  // collectives run on the host (ir/collective.h)
    if (!op->lower && !op->decompose) {
      missing.push_back(op->name);
      continue;
    }
    for (DType dtype : op->dtypes.list()) {
      std::string what = fmt::format("{} ({})", op->name, dtypeName(dtype));
      Graph graph = testing::parseOrFail(op->exampleIn(dtype));
      TensorMap feeds = testing::randomFeeds(graph, seed);
      auto expected = interpret(graph, feeds);
      REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      // Composite ops run only decomposed; ops with a lowering also alone.
      if (op->lower) testing::checkKernelRun(graph, feeds, *expected, "alone", what);
      Graph optimized = graph.clone();
      auto pm = PassManager::defaultPipeline(PassManagerOptions{});
      REQUIRE(pm.ok());
      auto ran = pm->run(optimized);
      REQUIRE_MESSAGE(ran.ok(), what, ": ", (ran.ok() ? "" : ran.error().message()));
      for (const auto& n : optimized.nodes()) {
        bool lowerable = n->opName() == "constant" || codegen::canLower(*n);
        REQUIRE_MESSAGE(lowerable, what, ": ", optimized.labelOf(*n), " cannot be lowered after the default pipeline\n",
                        toText(optimized));
      }
      if (!op->decompose) {
        testing::checkKernelRun(optimized, feeds, *expected, "after the default pipeline", what);
      } else {
        // A decomposed op's kernels must compute what its decomposition computes (the reference
        // interpreter on the optimized graph). How close the decomposition comes to the op's own
        // reference is the decomposition test's business (tests/autodiff, f32 and f64); low-precision
        // dtypes that stray past the kernel tolerance are listed below rather than failed.
        auto decomposed = interpret(optimized, feeds);
        REQUIRE_MESSAGE(decomposed.ok(), what, ": ", (decomposed.ok() ? "" : decomposed.error().message()));
        testing::checkKernelRun(optimized, feeds, *decomposed, "after the default pipeline", what);
        for (size_t i = 0; i < expected->size(); ++i) {
          if (!testing::compareTensors((*decomposed)[i], (*expected)[i], testing::kernelTolerance(dtype)).empty()) {
            offReference.push_back(what);
            break;
          }
        }
      }
      ++checked;
    }
  }
  CHECK_MESSAGE(missing.empty(), "ops with neither a lowering nor a decomposition: ",
                fmt::format("{}", fmt::join(missing, ", ")));
  MESSAGE(fmt::format("{} op/dtype examples through kernels", checked));
  if (!offReference.empty()) {
    MESSAGE(fmt::format("decompositions off their op's reference by more than the kernel tolerance (seed {}): {}", seed,
                        fmt::join(offReference, ", ")));
  }
}
