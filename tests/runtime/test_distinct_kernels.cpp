// Distinct kernels (runtime/exec/distinct_kernels.h): kernels that compute the same thing under other
// names are compiled once per image and launched through the one compiled, on every device, with the
// reference's results; kernels that differ in anything the code shows (a constant, an extent, a dtype,
// the disjoint-buffers promise) are compiled each.
#include <doctest/doctest.h>

#include "codegen/lower_kernel.h"
#include "ir/interpreter.h"
#include "runtime/exec/distinct_kernels.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

/// Records the symbols it is asked to prepare.
class RecordingKernels final : public DeviceKernels {
 public:
  std::vector<std::string> prepared;
  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg>,
                                                    const LaunchShape&) override {
    prepared.push_back(symbol);
    return makeError("recorded");
  }
};

std::vector<codegen::Kernel> lowerEach(const Graph& graph) {
  std::vector<codegen::Kernel> kernels;
  for (const auto& node : graph.nodes()) {
    auto kernel = codegen::lowerToKernel(graph, *node);
    REQUIRE_MESSAGE(kernel.ok(), kernel.error().message());
    kernels.push_back(std::move(*kernel));
  }
  return kernels;
}

}  // namespace

TEST_CASE("distinct kernels: the same computation under other names is compiled once, any other difference is not") {
  Graph graph = testing::parseOrFail(R"(graph @k(%x: f32[64,96], %y: f32[64,96], %z: f32[64,95], %h: f64[64,96]) {
  %0 = tanh(%x) : f32[64,96]
  %1 = tanh(%y) : f32[64,96]
  %2 = tanh(%z) : f32[64,95]
  %3 = exp(%x) : f32[64,96]
  %4 = tanh(%h) : f64[64,96]
  %5 = tanh(%0) : f32[64,96]
  return a = %0, b = %1, c = %2, d = %3, e = %4, f = %5
})");
  std::vector<codegen::Kernel> kernels = lowerEach(graph);
  REQUIRE(kernels.size() == 6);
  kernels[1].name = "renamed";
  kernels[1].provenance = {"tanh %1 (Tanh_7)"};
  for (codegen::KBuffer& b : kernels[1].buffers) b.name += "_other";
  codegen::Kernel promised = kernels[5];
  promised.disjointBuffers = true;
  kernels.push_back(promised);
  std::vector<const codegen::Kernel*> pointers;
  std::vector<std::string> symbols;
  for (size_t k = 0; k < kernels.size(); ++k) {
    pointers.push_back(&kernels[k]);
    symbols.push_back("k" + std::to_string(k));
  }
  CHECK(codegen::computationText(kernels[0]) == codegen::computationText(kernels[1]));
  CHECK(codegen::printKernel(kernels[0]) != codegen::printKernel(kernels[1]));

  DistinctKernels distinct = distinctKernels(pointers, symbols);
  // %1 (renamed, other provenance and buffer names) and %5 (tanh of a computed value: same kernel) share
  // %0's code; the other extent, the other op, f64 and the disjoint promise are their own.
  CHECK(distinct.symbols == std::vector<std::string>{"k0", "k2", "k3", "k4", "k6"});
  CHECK(distinct.compiledAs == std::vector<size_t>{0, 0, 1, 2, 3, 0, 4});
  CHECK(distinct.aliases == std::map<std::string, std::string>{{"k1", "k0"}, {"k5", "k0"}});
  REQUIRE(distinct.kernels.size() == 5);
  CHECK(distinct.kernels[4] == &kernels[6]);

  auto recording = std::make_shared<RecordingKernels>();
  std::shared_ptr<DeviceKernels> aliased = withAliases(recording, distinct.aliases);
  for (const char* symbol : {"k0", "k1", "k2", "k5"}) CHECK_FALSE(aliased->prepare(symbol, {}, LaunchShape{}).ok());
  CHECK(recording->prepared == std::vector<std::string>{"k0", "k0", "k2", "k0"});
  CHECK(withAliases(recording, {}) == recording);
}

TEST_CASE("distinct kernels: a graph's repeated kernels share one compiled kernel on every device, with the reference's results") {
  // Two layers of one shape: their products' softmaxes are kernels of one computation.
  Graph graph = testing::parseOrFail(R"(graph @repeat(%x: f32[32,128], %w: f32[128,128], %v: f32[128,128]) {
  %0 = softmax(%x) {axis = 1} : f32[32,128]
  %1 = matmul(%0, %w) : f32[32,128]
  %2 = softmax(%1) {axis = 1} : f32[32,128]
  %3 = matmul(%2, %v) : f32[32,128]
  %4 = softmax(%3) {axis = 1} : f32[32,128]
  return y = %4
})");
  const uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(graph, {.device = device->id(), .fallback = false});
    REQUIRE_MESSAGE(exe.ok(), exe.error().message());
    const CompileReport& report = (*exe)->report();
    if (report.kernels == 0) continue;  // the CPU without LLVM: the interpreter
    CHECK_MESSAGE(report.sharedKernels >= 2, report.kernels, " kernels, ", report.sharedKernels, " shared");
    CHECK(report.cacheHits >= report.sharedKernels);
    for (uint64_t run = 0; run < 2; ++run) {
      TensorMap feeds = testing::randomFeeds(graph, seed + run);
      std::vector<Tensor> outputs;
      REQUIRE((*exe)->run(feeds, outputs).ok());
      auto expected = interpret(graph, feeds);
      REQUIRE(expected.ok());
      REQUIRE(outputs.size() == expected->size());
      for (size_t o = 0; o < outputs.size(); ++o) {
        CHECK_MESSAGE(testing::compareTensors(outputs[o], (*expected)[o], 1e-5).empty(), "output ", o);
      }
    }
  }
}
