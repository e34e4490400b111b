// Differential test of the default pipeline: thousands of random graphs (tests/passes/random_graph.h)
// must compute the same outputs on the reference interpreter before and after optimization, and the
// optimized graph must verify and round-trip as text. fold and canonicalize are exact, so floats must be
// equal as doubles, signed zeros included; only NaN payloads may differ (NaN matches NaN). A failure
// prints the seed, the input IR and the optimized IR: paste the input into a golden case.
//   SMELT_RANDOM_GRAPHS=20000 SMELT_TEST_SEED=123 build/bin/smelt_pass_manager_tests -tc='*random*'
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "tests/passes/random_graph.h"
#include "tests/support/random_tensors.h"

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

// Empty when equal: same types, floats equal as doubles with equal signs (NaN matches any NaN), other
// dtypes bit for bit.
std::string difference(const Tensor& before, const Tensor& after) {
  if (before.type() != after.type()) return "types differ";
  DType t = before.dtype();
  bool isFloat = t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
  if (!isFloat) return before.bitwiseEqual(after) ? "" : "values differ";
  for (int64_t i = 0; i < before.numel(); ++i) {
    double a = before.getDouble(i), b = after.getDouble(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a != b || std::signbit(a) != std::signbit(b))
      return fmt::format("element {}: {} before, {} after", i, printFloat(a), printFloat(b));
  }
  return "";
}

// Empty when the pipeline kept `graph`'s meaning; otherwise what went wrong.
std::string checkOne(const Graph& graph, uint64_t seed, std::string& optimizedText, std::map<std::string, int64_t>& stats,
                     size_t& nodesAfter) {
  if (Status s = verifyGraph(graph); !s.ok()) return "the generator built an invalid graph: " + s.error().message();
  Graph optimized = graph.clone();
  PassManagerOptions options;  // not fromEnvironment: SMELT_DUMP_DIR must not write thousands of dumps
  options.verify = true;
  auto pm = PassManager::defaultPipeline(options);
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
    std::string d = difference((*before)[i], (*after)[i]);
    if (!d.empty()) return fmt::format("output {} ({}): {}", i, graph.outputs()[i].name, d);
  }
  return "";
}

}  // namespace

TEST_CASE("the default pipeline preserves what random graphs compute") {
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
