// Golden pass tests: tests/passes/<pass>/<case>.ir (first line `// RUN: --passes=<pipeline>`) is parsed,
// run through the pipeline with verification on, printed, and compared exactly with the sibling
// <case>.expected.ir. The result must also compute what the input computed (reference interpreter on
// random inputs). A pass that reassociates float sums adds `--compare-in=f64` to the RUN line: both
// graphs are then run with f32 widened to f64 and compared within kReassociatedF64Tolerance, since in
// f32 the new order's rounding is real and shows wherever a sum cancels to near zero. ctest runs one case per test by setting SMELT_GOLDEN_CASE; without it every case
// under SMELT_PASS_GOLDEN_DIR runs. SMELT_UPDATE_GOLDEN=1 rewrites the .expected.ir files (review the
// diff before committing).
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace smelt;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kExpectedSuffix = ".expected.ir";
// Reordering an f64 sum of 10^5 terms of magnitude 1 moves it by about 1e-12 (measured: 1.7e-12 on a
// sum that cancelled to 0.017); a wrong split (a lost or doubled block) moves it by about 1.
constexpr double kReassociatedF64Tolerance = 1e-9;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool isCase(const fs::path& path) {
  std::string name = path.filename().string();
  return path.extension() == ".ir" && !name.ends_with(kExpectedSuffix);
}

fs::path expectedPath(const fs::path& input) {
  return input.parent_path() / (input.stem().string() + std::string(kExpectedSuffix));
}

// The case's first line, where `// RUN:` names the pipeline and options.
std::string_view runLine(std::string_view text) { return text.substr(0, text.find('\n')); }

// The pipeline named on the first line: `// RUN: --passes=cse,dce` (or `// RUN: smelt opt %s --passes=...`).
std::optional<std::string> runLinePipeline(std::string_view text) {
  std::string_view first = runLine(text);
  if (!first.starts_with("// RUN:")) return std::nullopt;
  size_t at = first.find("--passes=");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = first.substr(at + 9);
  return std::string(rest.substr(0, rest.find_first_of(" \t\r")));
}

// True when the RUN line asks for the numeric check in f64 (`--compare-in=f64`).
bool comparesInF64(std::string_view text) {
  return runLine(text).find("--compare-in=f64") != std::string_view::npos;
}

// `graph` with every f32 type and attribute widened to f64, through its lossless text form.
Expected<Graph> widenedToF64(const Graph& graph) {
  static const std::regex f32Token(R"(\bf32\b)");
  return parseGraph(std::regex_replace(toText(graph), f32Token, "f64"));
}

void checkCase(const fs::path& input) {
  INFO("golden case: ", input.string());
  std::string inputText = readFile(input);
  auto pipeline = runLinePipeline(inputText);
  if (!pipeline) {
    FAIL_CHECK("first line must be `// RUN: --passes=<pipeline>`");
    return;
  }
  ParseOptions parseOptions;
  parseOptions.sourceName = input.filename().string();
  parseOptions.externalDataDir = input.parent_path().string();
  auto graph = parseGraph(inputText, parseOptions);
  if (!graph) {
    FAIL_CHECK("input does not parse: ", graph.error().message());
    return;
  }
  Graph before = graph->clone();

  PassManagerOptions options = PassManagerOptions::fromEnvironment();
  options.verify = true;
  auto manager = PassManager::fromPipeline(*pipeline, options);
  if (!manager) {
    FAIL_CHECK(manager.error().message());
    return;
  }
  auto ran = manager->run(*graph);
  if (!ran) {
    FAIL_CHECK("pipeline '", *pipeline, "' failed: ", ran.error().message(), "\n--- input ---\n", inputText);
    return;
  }
  std::string actual = toText(*graph);

  fs::path expectedFile = expectedPath(input);
  if (const char* update = std::getenv("SMELT_UPDATE_GOLDEN"); update && std::string_view(update) == "1") {
    std::ofstream(expectedFile, std::ios::binary) << actual;
  }
  if (!fs::exists(expectedFile)) {
    FAIL_CHECK("missing ", expectedFile.string(), "; actual output:\n", actual);
    return;
  }
  std::string expected = readFile(expectedFile);
  if (actual != expected) {
    FAIL_CHECK("output differs from ", expectedFile.filename().string(), "\n--- input ---\n", inputText,
               "--- expected ---\n", expected, "--- actual ---\n", actual);
  }

  // The expected file is itself canonical IR: it parses and prints back unchanged.
  auto reparsed = parseGraph(expected, parseOptions);
  if (!reparsed) {
    FAIL_CHECK("expected file does not parse: ", reparsed.error().message());
  } else if (toText(*reparsed) != expected) {
    FAIL_CHECK("expected file is not in printed form; it prints as:\n", toText(*reparsed));
  }

  // The optimized graph computes what the input graph computed.
  Graph after = std::move(*graph);
  bool inF64 = comparesInF64(inputText);
  if (inF64) {
    auto wideBefore = widenedToF64(before);
    auto wideAfter = widenedToF64(after);
    REQUIRE_MESSAGE(wideBefore.ok(), (wideBefore.ok() ? "" : wideBefore.error().message()));
    REQUIRE_MESSAGE(wideAfter.ok(), (wideAfter.ok() ? "" : wideAfter.error().message()));
    before = std::move(*wideBefore);
    after = std::move(*wideAfter);
  }
  uint64_t seed = testing::testSeed();
  TensorMap feeds = testing::randomFeeds(before, seed);
  auto want = interpret(before, feeds);
  auto got = interpret(after, feeds);
  if (!want.ok()) {
    // An input that fails at run time (a gather index out of range) must still fail after the passes.
    CHECK_MESSAGE(!got.ok(), "the input fails at run time (", want.error().message(), ") but the output does not");
    return;
  }
  REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
  REQUIRE(want->size() == got->size());
  for (size_t i = 0; i < want->size(); ++i) {
    double tolerance = inF64 ? kReassociatedF64Tolerance : testing::defaultTolerance((*want)[i].type().dtype);
    std::string mismatch = testing::compareTensors((*got)[i], (*want)[i], tolerance);
    CHECK_MESSAGE(mismatch.empty(), "output #", i, " (seed ", seed, "): ", mismatch);
  }
}

}  // namespace

TEST_CASE("pass golden files") {
  std::vector<fs::path> cases;
  if (const char* only = std::getenv("SMELT_GOLDEN_CASE"); only && *only) {
    cases.emplace_back(only);
  } else {
    for (const auto& entry : fs::recursive_directory_iterator(SMELT_PASS_GOLDEN_DIR)) {
      if (entry.is_regular_file() && isCase(entry.path())) cases.push_back(entry.path());
    }
    std::sort(cases.begin(), cases.end());
  }
  REQUIRE(!cases.empty());
  for (const fs::path& input : cases) checkCase(input);
}
