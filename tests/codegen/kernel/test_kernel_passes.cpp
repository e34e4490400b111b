// Kernel passes as a pipeline (codegen/kernel_passes.h) and kernel text (codegen/kernel_parser.h):
// every kernel of random graphs prints, parses back and prints the same, before and after every
// pipeline a backend runs; each pass alone and each pipeline computes what the reference interpreter
// computes on fresh random inputs; and bad kernel text is an error naming its line.
#include "codegen/kernel_parser.h"
#include "codegen/kernel_passes.h"
#include "codegen/lower_kernel.h"
#include "ir/interpreter.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/passes/random_graph.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

constexpr int kGraphs = 40;

/// Every pipeline a kernel meets: as lowered, each pass alone, the lowering clean-up, and the clean-up
/// followed by each backend's passes.
std::vector<std::string> pipelines() {
  std::vector<std::string> all = {"none"};
  for (const codegen::KernelPass& p : codegen::kernelPasses()) all.emplace_back(p.name);
  const std::string lowering(codegen::kLoweringKernelPipeline);
  all.push_back(lowering);
  all.push_back(fmt::format("{},{}", lowering, codegen::kCpuKernelPipeline));
  all.push_back(fmt::format("{},{}", lowering, codegen::kGpuKernelPipeline));
  return all;
}

void checkRoundTrip(const codegen::Kernel& kernel, const std::string& where) {
  std::string text = codegen::printKernel(kernel);
  auto parsed = codegen::parseKernel(text);
  REQUIRE_MESSAGE(parsed.ok(), where, ": ", (parsed.ok() ? "" : parsed.error().message()), "\n", text);
  CHECK_MESSAGE(codegen::printKernel(*parsed) == text, where, ": printed differently after parsing\n", text, "\n",
                codegen::printKernel(*parsed));
}

}  // namespace

TEST_CASE("kernel passes: kernel text prints, parses back and prints the same after every pipeline") {
  for (uint64_t seed = 1; seed <= kGraphs; ++seed) {
    Graph graph = testing::optimizedOrFail(testing::randomGraph(seed));
    for (const auto& node : graph.nodes()) {
      if (node->opName() == "constant" || !codegen::canLower(*node)) continue;
      for (const std::string& pipeline : pipelines()) {
        auto kernel = codegen::lowerToKernel(graph, *node, pipeline);
        REQUIRE_MESSAGE(kernel.ok(), (kernel.ok() ? "" : kernel.error().message()));
        checkRoundTrip(*kernel, fmt::format("random graph {}, {}, kernel passes {}", seed, node->opName(), pipeline));
      }
    }
  }
}

TEST_CASE("kernel passes: each pass alone and every pipeline compute what the reference computes") {
  const uint64_t base = testing::testSeed();
  int checked = 0;
  for (uint64_t seed = 1; seed <= kGraphs; ++seed) {
    Graph graph = testing::optimizedOrFail(testing::randomGraph(seed));
    bool lowerable = true;
    for (const auto& node : graph.nodes())
      lowerable = lowerable && (node->opName() == "constant" || codegen::canLower(*node));
    if (!lowerable) continue;
    TensorMap feeds = testing::randomFeeds(graph, base + seed);
    auto expected = interpret(graph, feeds);
    REQUIRE_MESSAGE(expected.ok(), (expected.ok() ? "" : expected.error().message()));
    ++checked;
    for (const std::string& pipeline : pipelines()) {
      CAPTURE(seed);
      CAPTURE(pipeline);
      auto actual = testing::runWithKernels(graph, feeds, {}, pipeline);
      REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
      for (size_t i = 0; i < expected->size(); ++i) {
        const Tensor& e = (*expected)[i];
        std::string d = testing::compareTensors((*actual)[i], e, testing::kernelTolerance(e.dtype()));
        CHECK_MESSAGE(d.empty(), "output ", graph.outputs()[i].name, ": ", d);
      }
    }
  }
  MESSAGE(checked, " of ", kGraphs, " random graphs lower whole");
  CHECK(checked >= kGraphs / 2);
}

TEST_CASE("kernel passes: an unknown pass is an error naming it and the known ones") {
  auto bad = codegen::kernelPipeline("cse,no-such-pass");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("unknown kernel pass 'no-such-pass'") != std::string::npos);
  CHECK(bad.error().message().find("map-to-blocks") != std::string::npos);
  auto none = codegen::kernelPipeline("none");
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("kernel text: bad input is an error naming the line and the problem") {
  const std::string header = "kernel @k domain [4]\n  buffer %b0: f32[4] in \"p0\"\n  buffer %b1: f32[4] out \"r0\"\n";
  struct Case {
    std::string body;
    std::string message;
  };
  const Case cases[] = {
      {"  %0 = outer 0 : i64\n  store %b1[%0] = %3\n", "line 5: %3 is used before it is defined"},
      {"  %0 = outer 0 : i64\n  %0 = outer 0 : i64\n", "line 5: %0 is defined twice"},
      {"  %0 = outer 1 : i64\n", "line 4: `outer` takes a dimension of the domain"},
      {"  %0 = outer 0 : i64\n  %1 = frobnicate %0 : f32\n", "`frobnicate` is not a kernel instruction"},
      {"  %0 = outer 0 : i64\n  %1 = load %b7[%0] : f32\n", "line 5: expected `load %bN[%offset]`"},
      {"  %0 = outer 0 : i64\n  %1 = load %b0[%0] : f64\n", "a load's dtype must be its buffer's"},
      {"  %0 = outer 0 : i64\n  %1 = load %b0[%0] : f32\n  store %b0[%0] = %1\n", "%b0 is not an output"},
      {"  %99999999999 = outer 0 : i64\n", "expected a statement"},
      {"  %0 = const 1.0 : f32\n  %2 = loop %1 < 4 carry(%3 = %0 : f32) {\n", "1 loop(s) not closed"},
      {"  %0 = const 1.0 : f32\n  %2 = loop %1 < 4 carry(%3 = %0 : f32) {\n  }\n",
       "a loop that carries values ends with `yield`"},
      {"  %0 = const 1.0 : f32\n  %2 = loop %1 < 4 carry(%3 = %0 : f32) split {\n",
       "a combining loop combines each carried value"},
      {"  %0 = const 1.0 : f32\n  %2 = loop %1 < 4 carry(%3 = %0 : f32) split partial combine(add) {\n",
       "a partial split loop leaves its combine to an outer loop"},
      {"  %0 = const 1.0 : f32\n  %2, %5 = loop %1 < 4 carry(%3 = %0 : f32, %4 = %0 : f32) combine(add) {\n",
       "a combining loop combines each carried value"},
  };
  for (const Case& c : cases) {
    auto parsed = codegen::parseKernel(header + c.body);
    REQUIRE_MESSAGE(!parsed.ok(), c.body);
    CHECK_MESSAGE(parsed.error().message().find(c.message) != std::string::npos, parsed.error().message());
  }
  CHECK_FALSE(codegen::parseKernel("").ok());
  CHECK_FALSE(codegen::parseKernel("kernel @k domain [4] threads 100\n").ok());
}
