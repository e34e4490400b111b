// The OpenCL backend on PoCL against the reference interpreter: every op's IR example, in every dtype
// the op accepts, compiled into an Executable on the OpenCL device (default pipeline, kernels rendered to OpenCL C,
// one program per graph, one device arena) and run on fresh random inputs. The oracle and tolerances
// are the LLVM test's (tests/codegen/llvm): the reference on the graph as compiled.
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "runtime/opencl/opencl_runtime.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

using namespace smelt;

namespace {

/// The default device, or why there is none (the tests then pass with a message).
Expected<opencl::DeviceInfo> defaultDevice() {
  SMELT_TRY(opencl::Context context, opencl::Context::create());
  return context.device();
}

/// Runs the examples of every `shards`-th op starting at `shard` (two test cases, so ctest -j2 runs
/// both halves at once when PoCL's cache is cold).
void checkExamples(size_t shard, size_t shards) {
  auto device = defaultDevice();
  if (!device.ok()) {
    MESSAGE("no OpenCL device: ", device.error().message());
    return;
  }
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  auto start = std::chrono::steady_clock::now();
  int checked = 0, kernels = 0;
  double compileSeconds = 0, runSeconds = 0;  // program builds; runs (the first launch of a kernel compiles it)
  std::vector<std::string> interpreted, skipped;
  size_t index = 0;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant" || index++ % shards != shard) continue;
    // All dtypes of one op in one OpenCL program: a build costs ~30 ms even from PoCL's cache.
    std::vector<Graph> graphs;
    std::vector<std::string> names;
    for (DType dtype : op->dtypes.list()) {
      std::string what = fmt::format("{} ({})", op->name, dtypeName(dtype));
      if (dtype == DType::f64 && !device->fp64) {
        skipped.push_back(what);
        continue;
      }
      graphs.push_back(testing::parseOrFail(op->exampleIn(dtype)));
      names.push_back(what);
    }
    CAPTURE(op->name);
    if (std::getenv("SMELT_TEST_TRACE")) fmt::print(stderr, "{}\n", op->name);
    auto t0 = std::chrono::steady_clock::now();
    auto exes = Executable::compileAll(graphs, {.device = "opencl"});
    REQUIRE_MESSAGE(exes.ok(), op->name, ": ", (exes.ok() ? "" : exes.error().message()));
    compileSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t g = 0; g < graphs.size(); ++g) {
      const std::string& what = names[g];
      CAPTURE(what);
      Executable& exe = *(*exes)[g];
      TensorMap feeds = testing::randomFeeds(graphs[g], seed);
      if (exe.report().interpreted > 0) interpreted.push_back(what);
      kernels += static_cast<int>(exe.report().kernels);
      auto expected = interpret(exe.graph(), feeds);
      REQUIRE_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      t0 = std::chrono::steady_clock::now();
      auto actual = exe.run(feeds);
      runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      REQUIRE_MESSAGE(actual.ok(), what, ": ", (actual.ok() ? "" : actual.error().message()));
      // The compiled graph's outputs end with its run-time checks' flags (passes/index_checks.h), which runs do
      // not return: compare the caller's outputs.
      REQUIRE(actual->size() == graphs[g].outputs().size());
      for (size_t i = 0; i < actual->size(); ++i) {
        std::string d = testing::compareTensors((*actual)[i], (*expected)[i], testing::backendTolerance((*expected)[i].dtype()));
        CHECK_MESSAGE(d.empty(), what, " output ", graphs[g].outputs()[i].name, ": ", d, "\n", toText(exe.graph()),
                      "\n", exe.source());
      }
      ++checked;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(fmt::format("{} op/dtype examples ({} kernels) compiled and run on '{}' in {:.1f} s (compiles {:.1f} s, "
                      "first runs {:.1f} s); {} with a node on the reference interpreter; {} skipped (no fp64)",
                      checked, kernels, device->name, seconds, compileSeconds, runSeconds, interpreted.size(),
                      skipped.size()));
}

}  // namespace

TEST_CASE("c-renderers: opencl backend, every op's example matches the reference in every dtype (part 1 of 2)") {
  checkExamples(0, 2);
}
TEST_CASE("c-renderers: opencl backend, every op's example matches the reference in every dtype (part 2 of 2)") {
  checkExamples(1, 2);
}

TEST_CASE("c-renderers: opencl backend, an executable runs many times, parameters fed and restored, by name too") {
  auto device = defaultDevice();
  if (!device.ok()) {
    MESSAGE("no OpenCL device: ", device.error().message());
    return;
  }
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[64,128], %b: f32[128]) {
  param %w: f32[3] = [0.5, -1, 2]
  %0 = add(%x, %b) : f32[64,128]
  %1 = tanh(%0) : f32[64,128]
  %2 = softmax(%1) : f32[64,128]
  %3 = reduce_sum(%2) {axes = [0]} : f32[128]
  %4 = constant() {value = dense<f32[3]> [1, 2, 3]} : f32[3]
  %5 = mul(%w, %4) : f32[3]
  return y = %2, z = %3, v = %5, x = %x, w = %w
})");
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto exe = Executable::compile(graph, {.device = "opencl"});
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  std::vector<Tensor> outputs;
  for (int i = 0; i < 3; ++i) {
    REQUIRE((*exe)->run(feeds, outputs).ok());
    for (size_t o = 0; o < outputs.size(); ++o) {
      CHECK_MESSAGE(testing::compareTensors(outputs[o], (*expected)[o], 2e-5).empty(), graph.outputs()[o].name);
    }
  }
  // A fed parameter holds for that run only; the next run without it uses the initial value again.
  TensorMap withW = feeds;
  withW["w"] = Tensor::of<float>(Shape{3}, {4, 5, 6});
  auto fed = (*exe)->run(withW);
  REQUIRE(fed.ok());
  CHECK(testing::compareTensors((*fed)[2], Tensor::of<float>(Shape{3}, {4, 10, 18}), 0).empty());
  CHECK(testing::compareTensors((*fed)[4], withW["w"], 0).empty());
  auto again = (*exe)->run(feeds);
  REQUIRE(again.ok());
  CHECK(testing::compareTensors((*again)[2], (*expected)[2], 0).empty());
  // Errors name the input.
  TensorMap missing = feeds;
  missing.erase("x");
  auto error = (*exe)->run(missing);
  REQUIRE_FALSE(error.ok());
  CHECK(error.error().message().find("'x'") != std::string::npos);
  // A second compile of the same graph reuses the program; the backend runs it by name.
  auto second = Executable::compile(graph, {.device = "opencl"});
  REQUIRE(second.ok());
  CHECK((*second)->report().cacheHits == (*second)->report().kernels);
  auto viaBackend = runOnce(graph, feeds, "opencl");
  REQUIRE(viaBackend.ok());
  CHECK(testing::compareTensors((*viaBackend)[0], (*expected)[0], 2e-5).empty());
}
