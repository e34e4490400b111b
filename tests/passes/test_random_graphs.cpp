// Differential test of the default pipeline: thousands of random graphs (tests/passes/random_graph.h)
// must compute the same outputs on the reference interpreter before and after optimization, and the
// optimized graph must verify and round-trip as text. Every pass but decompose is exact (fusion only
// moves ops into kernel bodies), so the default pipeline without decompose must give floats equal as
// doubles, signed zeros included; only NaN payloads may differ (NaN matches NaN). decompose rounds
// differently (softmax becomes exp(x - logsumexp(x))), so the whole default pipeline is compared within
// a tolerance, on f64 graphs, where no rounding difference can flip a comparison downstream; the
// registry's decomposition test covers every dtype op by op. A failure prints the seed, the input IR
// and the optimized IR: paste the input into a golden case.
//   SMELT_RANDOM_GRAPHS=20000 SMELT_TEST_SEED=123 build/bin/smelt_pass_manager_tests -tc='*random*'
#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "tests/passes/random_graph.h"
#include "tests/support/random_tensors.h"
#include "tests/support/symbolic_batch.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

using namespace smelt;

namespace {

#if defined(__SANITIZE_ADDRESS__)
#define SMELT_RANDOM_GRAPHS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SMELT_RANDOM_GRAPHS_SANITIZED 1
#endif
#endif

// 2000 graphs take a few seconds in a RelWithDebInfo build. ASan makes everything several times slower,
// and CI runs this under ASan too: there 500 graphs keep the test well under two minutes.
// SMELT_RANDOM_GRAPHS overrides either.
int graphCount() {
  if (const char* env = std::getenv("SMELT_RANDOM_GRAPHS")) return std::atoi(env);
#ifdef SMELT_RANDOM_GRAPHS_SANITIZED
  return 500;
#else
  return 2000;
#endif
}

// The exact passes, and the whole pipeline.
constexpr std::string_view kExactPipeline = "canonicalize,fold,cse,dce,fuse";
static_assert(kDefaultPipeline == "decompose,canonicalize,fold,cse,dce,split-reductions,fuse",
              "keep kExactPipeline the default pipeline minus its inexact passes");

// Empty when equal: same types, floats equal as doubles with equal signs (NaN matches any NaN), other
// dtypes bit for bit. With a tolerance, floats may differ by tolerance * max(1, |before|).
std::string difference(const Tensor& before, const Tensor& after, double tolerance = 0) {
  if (before.type() != after.type()) return "types differ";
  DType t = before.dtype();
  bool isFloat = t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
  if (!isFloat) return before.bitwiseEqual(after) ? "" : "values differ";
  for (int64_t i = 0; i < before.numel(); ++i) {
    double a = before.getDouble(i), b = after.getDouble(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    bool same = tolerance > 0 ? (a == b || std::abs(a - b) <= tolerance * std::max(1.0, std::abs(a)))
                              : (a == b && std::signbit(a) == std::signbit(b));
    if (!same) return fmt::format("element {}: {} before, {} after", i, printFloat(a), printFloat(b));
  }
  return "";
}

// True when every float the graph holds is f64 (casts to narrower floats would round the decomposed
// results' last-bit differences into visible ones).
bool onlyF64Floats(const Graph& graph) {
  auto narrow = [](const Value* v) { return isFloat(v->dtype()) && v->dtype() != DType::f64; };
  for (const Value* v : graph.inputs()) {
    if (narrow(v)) return false;
  }
  for (const Value* v : graph.parameters()) {
    if (narrow(v)) return false;
  }
  for (const auto& node : graph.nodes()) {
    for (const Value* r : node->results()) {
      if (narrow(r)) return false;
    }
  }
  return true;
}

// Empty when `pipeline` kept `graph`'s meaning (within `tolerance`; 0 = exactly); otherwise what went
// wrong.
std::string checkPipeline(const Graph& graph, uint64_t seed, std::string_view pipeline, double tolerance,
                          std::string& optimizedText, std::map<std::string, int64_t>& stats, size_t& nodesAfter) {
  Graph optimized = graph.clone();
  PassManagerOptions options;  // not fromEnvironment: SMELT_DUMP_DIR must not write thousands of dumps
  options.verify = true;
  auto pm = PassManager::fromPipeline(pipeline, options);
  if (!pm.ok()) return pm.error().message();
  auto ran = pm->run(optimized);
  optimizedText = toText(optimized);
  nodesAfter += optimized.numNodes();
  if (!ran.ok()) return "pipeline failed: " + ran.error().message();
  for (const auto& [name, value] : pm->context().statistics()) stats[name] += value;
  if (Status s = verifyGraph(optimized); !s.ok()) return "optimized graph does not verify: " + s.error().message();
  auto reparsed = parseGraph(optimizedText);
  if (!reparsed.ok()) return "optimized IR does not parse: " + reparsed.error().message();
  if (toText(*reparsed) != optimizedText) return "optimized IR does not round-trip:\n" + toText(*reparsed);

  TensorMap feeds = testing::randomFeeds(graph, seed);
  auto before = interpret(graph, feeds);
  auto after = interpret(optimized, feeds);
  // A graph that fails at run time is not compared: the optimizer may legitimately remove a failing dead
  // node. (The generator's gather indices are valid, so this is rare.)
  if (!before.ok()) {
    ++stats["(graphs failing at run time, not compared)"];
    return "";
  }
  if (!after.ok()) return "optimized graph fails at run time: " + after.error().message();
  if (before->size() != after->size()) return "output count differs";
  for (size_t i = 0; i < before->size(); ++i) {
    std::string d = difference((*before)[i], (*after)[i], tolerance);
    if (!d.empty()) return fmt::format("output {} ({}): {}", i, graph.outputs()[i].name, d);
  }
  return "";
}

// The exact pipeline bit for bit; on f64 graphs also the whole default pipeline, within 1e-9.
std::string checkOne(const Graph& graph, uint64_t seed, std::string& optimizedText, std::map<std::string, int64_t>& stats,
                     size_t& nodesAfter) {
  if (Status s = verifyGraph(graph); !s.ok()) return "the generator built an invalid graph: " + s.error().message();
  std::string problem = checkPipeline(graph, seed, kExactPipeline, 0, optimizedText, stats, nodesAfter);
  if (!problem.empty() || !onlyF64Floats(graph)) return problem;
  ++stats["(f64 graphs through the whole default pipeline)"];
  std::map<std::string, int64_t> ignored;
  size_t ignoredNodes = 0;
  problem = checkPipeline(graph, seed, kDefaultPipeline, 1e-9, optimizedText, ignored, ignoredNodes);
  return problem.empty() ? "" : fmt::format("default pipeline ({}): {}", kDefaultPipeline, problem);
}

}  // namespace

TEST_CASE("the default pipeline preserves what random graphs compute") {
  // (Run as documented in the file comment: exact passes exactly, the whole pipeline within 1e-9 on f64.)
  const int count = graphCount();
  const uint64_t base = testing::testSeed();
  MESSAGE(fmt::format("{} random graphs, seeds {} + i (SMELT_TEST_SEED={} reproduces)", count, base, base));
  std::map<std::string, int64_t> stats;
  int failures = 0;
  size_t nodesBefore = 0, nodesAfter = 0;
  for (int i = 0; i < count && failures < 5; ++i) {
    uint64_t seed = base + static_cast<uint64_t>(i);
    Graph graph = testing::randomGraph(seed);
    std::string optimizedText;
    std::string problem = checkOne(graph, seed, optimizedText, stats, nodesAfter);
    nodesBefore += graph.numNodes();
    if (graph.outputs().back().name[0] == 'd') ++stats["(graphs with gradients)"];
    if (problem.empty()) continue;
    ++failures;
    FAIL_CHECK(fmt::format("random graph seed {} (SMELT_TEST_SEED={} SMELT_RANDOM_GRAPHS={}): {}\n"
                           "--- input IR ---\n{}\n--- optimized IR ---\n{}",
                           seed, base, i + 1, problem, toText(graph), optimizedText));
  }
  std::string summary = fmt::format("nodes {} -> {}", nodesBefore, nodesAfter);
  for (const auto& [name, value] : stats) summary += fmt::format("; {} {}", name, value);
  MESSAGE(summary);
}

// Random graphs (broadcasts, reductions with and without keepdims, softmax, matmul, reshapes, pads ...)
// with their first input's leading extent made symbolic: inference bound at another size is static
// inference of every value, the text form round-trips, and the reference computes the same on the
// symbolic graph as on the bound one. Graphs whose ops refuse the symbol must say which node.
TEST_CASE("random graphs with a symbolic batch infer, bound, what their static graphs infer") {
  const uint64_t base = testing::testSeed();
  const int count = std::getenv("SMELT_RANDOM_GRAPHS") ? std::atoi(std::getenv("SMELT_RANDOM_GRAPHS")) : 2000;
  int checked = 0, refused = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    CAPTURE(seed);
    Graph g = testing::randomGraph(seed, {.gradientProbability = 0});
    if (g.inputs().empty() || g.inputs()[0]->type().rank() == 0) continue;
    const int64_t batch = g.inputs()[0]->type().shape[0];
    auto symbolic = testing::withSymbolicBatch(g, batch);
    if (!symbolic.ok()) {
      CHECK_MESSAGE(symbolic.error().message().find('%') != std::string::npos, symbolic.error().message());
      ++refused;
      continue;
    }
    std::string text = toText(*symbolic);
    auto again = parseGraph(text);
    REQUIRE_MESSAGE(again.ok(), again.error().message(), "\n", text);
    CHECK(toText(*again) == text);
    for (int64_t n : {batch, batch + 2}) {
      auto bound = bindDims(*symbolic, {{"B", n}});
      REQUIRE_MESSAGE(bound.ok(), bound.error().message(), "\n", text);
      std::string differs = testing::compareBoundTypes(*symbolic, *bound, n);
      CHECK_MESSAGE(differs.empty(), differs, "\n", text);
      if (n == batch) CHECK(toText(*bound) == toText(g));
      TensorMap feeds = testing::randomFeeds(*bound, seed);
      auto viaSymbolic = interpret(*symbolic, feeds);
      auto viaBound = interpret(*bound, feeds);
      REQUIRE(viaSymbolic.ok() == viaBound.ok());
      if (!viaBound.ok()) continue;
      for (size_t o = 0; o < viaBound->size(); ++o) CHECK(testing::compareTensors((*viaSymbolic)[o], (*viaBound)[o], 0).empty());
    }
    ++checked;
  }
  MESSAGE(fmt::format("{} random graphs with a symbolic batch checked; {} refused by an op, naming it", checked, refused));
  CHECK(checked >= count / 10);  // most draw an op that does not take symbols yet (concat, slice, gather)
}
