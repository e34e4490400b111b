// The pass manager: pipeline strings, unavailable passes, stop-after, IR dumps, verification, errors.
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace smelt;
namespace fs = std::filesystem;

namespace {

// One exp computed twice and an unused neg: cse merges the exps, dce removes the twin and the neg.
constexpr const char* kTwins = R"(graph @g(%x: f32[4]) {
  %0 = exp(%x) : f32[4]
  %1 = exp(%x) : f32[4]
  %2 = neg(%x) : f32[4]
  %3 = add(%0, %1) : f32[4]
  return y = %3
})";

PassManagerOptions quietOptions() {
  PassManagerOptions options;  // not fromEnvironment: a developer's SMELT_DUMP_DIR must not leak in
  options.verify = true;
  return options;
}

// A pass that points a value's uses at a value of another type: the verifier must catch it.
class BreakTypes final : public Pass {
 public:
  std::string_view name() const override { return "break-types"; }
  std::string_view summary() const override { return "test: leaves an ill-typed graph"; }
  Expected<bool> run(Graph& graph, PassContext&) override {
    graph.replaceAllUsesWith(graph.nodes()[0]->result(), graph.findInput("y"));
    return true;
  }
};

class Failing final : public Pass {
 public:
  std::string_view name() const override { return "failing"; }
  std::string_view summary() const override { return "test: always fails"; }
  Expected<bool> run(Graph&, PassContext&) override { return makeError("cannot do this"); }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("an unknown pass name is an error listing the known passes") {
  auto pm = PassManager::fromPipeline("cse,fuse-everything", quietOptions());
  REQUIRE(!pm.ok());
  CHECK(pm.error().message() == "unknown pass 'fuse-everything' (known passes: canonicalize, cse, dce, decompose, fold, fuse, plan-memory, split-reductions, widen-products)");
  auto empty = PassManager::fromPipeline("cse,,dce", quietOptions());
  REQUIRE(!empty.ok());
  CHECK(empty.error().message().find("empty pass name") != std::string::npos);
}

TEST_CASE("a declared pass whose factory returns null is reported as not available") {
  std::vector<PassInfo> registry = {{"dce", createDeadCodeElimination}, {"later", [] { return std::unique_ptr<Pass>(); }}};
  auto pm = PassManager::fromPipeline("dce,later", quietOptions(), registry);
  REQUIRE(!pm.ok());
  CHECK(pm.error().message() == "pass 'later' is not available");
}

TEST_CASE("the pipeline runs in order, counts statistics and can stop after pass N") {
  auto full = PassManager::fromPipeline("cse, dce", quietOptions());
  REQUIRE(full.ok());
  CHECK(full->passNames() == std::vector<std::string>{"cse", "dce"});
  Graph g = testing::parseOrFail(kTwins);
  auto changed = full->run(g);
  REQUIRE(changed.ok());
  CHECK(*changed);
  CHECK(toText(g) == "graph @g(%x: f32[4]) {\n  %0 = exp(%x) : f32[4]\n  %1 = add(%0, %0) : f32[4]\n  return y = %1\n}\n");
  CHECK(full->context().statistics().at("cse.nodes merged") == 1);
  CHECK(full->context().statistics().at("dce.nodes removed") == 2);
  CHECK(full->lastRun().size() == 2);
  CHECK(full->report().find("dce.nodes removed = 2") != std::string::npos);

  // Stopping after pass 1 leaves cse's dead twin in place.
  PassManagerOptions options = quietOptions();
  options.stopAfter = 1;
  auto bisect = PassManager::fromPipeline("cse,dce", options);
  REQUIRE(bisect.ok());
  Graph h = testing::parseOrFail(kTwins);
  REQUIRE(bisect->run(h).ok());
  CHECK(h.numNodes() == 4);
  CHECK(bisect->lastRun().size() == 1);

  // stopAfterPass is stop-after by name (smelt dump --after).
  auto byName = PassManager::fromPipeline("cse,dce", quietOptions());
  REQUIRE(byName.ok());
  REQUIRE(byName->stopAfterPass("cse").ok());
  CHECK(byName->options().stopAfter == 1u);
  Status missing = byName->stopAfterPass("fold");
  REQUIRE(!missing.ok());
  CHECK(missing.error().message() == "pass 'fold' is not in the pipeline 'cse,dce'");
}

TEST_CASE("with a dump folder the IR is written before the pipeline and after every pass") {
  fs::path dir = fs::temp_directory_path() / fmt::format("smelt-dump-{}", testing::testSeed());
  fs::remove_all(dir);
  PassManagerOptions options = quietOptions();
  options.dumpDir = (dir / "nested").string();  // created on demand
  auto pm = PassManager::fromPipeline("cse,dce", options);
  REQUIRE(pm.ok());
  Graph g = testing::parseOrFail(kTwins);
  REQUIRE(pm->run(g).ok());
  CHECK(fs::exists(dir / "nested" / "00-input.ir"));
  CHECK(fs::exists(dir / "nested" / "01-cse.ir"));
  CHECK(fs::exists(dir / "nested" / "02-dce.ir"));
  // Each dump parses back, so it can be fed to `smelt opt` directly.
  Graph afterCse = testing::parseOrFail(slurp(dir / "nested" / "01-cse.ir"));
  CHECK(afterCse.numNodes() == 4);
  CHECK(slurp(dir / "nested" / "02-dce.ir") == toText(g));
  fs::remove_all(dir);

  // SMELT_DUMP_DIR is where the default options come from.
  setenv("SMELT_DUMP_DIR", "/tmp/smelt-dump-env", 1);
  CHECK(PassManagerOptions::fromEnvironment().dumpDir == "/tmp/smelt-dump-env");
  unsetenv("SMELT_DUMP_DIR");
  CHECK(PassManagerOptions::fromEnvironment().dumpDir.empty());
}

TEST_CASE("verification after each pass catches a pass that breaks the graph, and errors name the pass") {
  const char* text = R"(graph @g(%x: f32[4], %y: f32[2]) {
  %0 = neg(%x) : f32[4]
  %1 = exp(%0) : f32[4]
  return z = %1
})";
  PassManager pm(quietOptions());
  pm.addPass(std::make_unique<BreakTypes>());
  Graph g = testing::parseOrFail(text);
  auto ran = pm.run(g);
  REQUIRE(!ran.ok());
  INFO(ran.error().message());
  CHECK(ran.error().message().starts_with("pass 'break-types' (#1 in the pipeline) left an invalid graph: "));
  CHECK(ran.error().message().find("exp(%y)") != std::string::npos);  // the broken IR is in the message

  // With verification off the same pass goes unnoticed (release builds trade this check for speed).
  PassManagerOptions off = quietOptions();
  off.verify = false;
  PassManager unchecked(off);
  unchecked.addPass(std::make_unique<BreakTypes>());
  Graph h = testing::parseOrFail(text);
  CHECK(unchecked.run(h).ok());

  PassManager failing(quietOptions());
  failing.addPass(std::make_unique<Failing>());
  auto failed = failing.run(h);
  REQUIRE(!failed.ok());
  CHECK(failed.error().message() == "pass 'failing': cannot do this");
}

TEST_CASE("pass manager: widen-products keeps the products a pipeline names, and refuses what is none") {
  CHECK(PassManager::fromPipeline("widen-products{keep-dtypes=bf16+f16,keep-ops=matmul+conv2d_weight_grad}").ok());
  auto op = PassManager::fromPipeline("widen-products{keep-ops=matmul+relu}");
  REQUIRE_FALSE(op.ok());
  CHECK(op.error().message().find("keep-ops: 'relu' is not a product op") != std::string::npos);
  auto dtype = PassManager::fromPipeline("widen-products{keep-dtypes=f32}");
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.error().message().find("keep-dtypes: 'f32' is not bf16 or f16") != std::string::npos);
  CHECK_FALSE(PassManager::fromPipeline("widen-products{keep=bf16}").ok());
}
