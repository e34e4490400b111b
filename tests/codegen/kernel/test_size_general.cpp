// Kernels compiled once for every size (codegen/size_general.h): each op's example with a symbolic
// batch is lowered at two sizes to make the general kernels, and at a third; a general kernel run
// with the third size's numbers on the kernel interpreter computes exactly (bit for bit) what the
// third size's own kernel computes, and prints and parses back. Structural differences are refused.
#include "codegen/kernel_interpreter.h"
#include "codegen/kernel_parser.h"
#include "codegen/lower_kernel.h"
#include "codegen/size_general.h"
#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/symbolic_batch.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <regex>

using namespace smelt;
using namespace smelt::codegen;

namespace {

/// Every kernel of `symbolic` bound at B = n, after the default pipeline, lowered and shaped by the
/// kernel passes `devicePasses`, with the node's operands (from the reference on `seed`'s feeds).
struct Lowered {
  std::vector<Kernel> kernels;
  std::vector<std::vector<Tensor>> operands, results;
};

Lowered lowerAt(const Graph& symbolic, int64_t n, std::string_view devicePasses, uint64_t seed) {
  auto bound = bindDims(symbolic, {{"B", n}});
  REQUIRE_MESSAGE(bound.ok(), bound.error().message());
  Graph g = testing::optimizedOrFail(*bound);
  TensorMap feeds = testing::randomFeeds(g, seed);
  std::unordered_map<const Value*, Tensor> env;
  for (const Value* v : g.inputs()) env[v] = feeds.at(v->name());
  for (const Value* v : g.parameters()) env[v] = v->initialValue();
  Lowered out;
  for (const auto& node : g.nodes()) {
    std::vector<Tensor> operands;
    for (const Value* o : node->operands()) operands.push_back(env.at(o));
    auto results = evaluateNode(g, *node, operands);
    REQUIRE_MESSAGE(results.ok(), results.error().message());
    for (size_t r = 0; r < results->size(); ++r) env[node->result(r)] = (*results)[r];
    if (node->opName() == "constant") continue;
    auto kernel = lowerToKernel(g, *node);
    if (!kernel.ok()) continue;  // no kernel lowering: nothing to generalize
    auto passes = runKernelPasses(*kernel, devicePasses);
    REQUIRE_MESSAGE(passes.ok(), passes.error().message());
    out.kernels.push_back(std::move(*kernel));
    out.operands.push_back(std::move(operands));
    out.results.push_back(std::move(*results));
  }
  return out;
}

/// `kernel`'s outputs on the kernel interpreter (general when `sizes` is given).
std::vector<Tensor> runKernel(const Kernel& kernel, const std::vector<Tensor>& operands,
                              const std::vector<Tensor>& resultTypes, const std::vector<int64_t>* sizes,
                              int64_t firstExtent) {
  std::vector<Tensor> tensors = operands;
  for (const Tensor& r : resultTypes) tensors.emplace_back(r.type());
  if (sizes && !sizes->empty()) {
    Tensor s({DType::i64, {static_cast<int64_t>(sizes->size())}});
    for (size_t i = 0; i < sizes->size(); ++i) s.setInt(static_cast<int64_t>(i), (*sizes)[i]);
    tensors.push_back(std::move(s));
  }
  std::vector<Tensor*> buffers;
  for (Tensor& t : tensors) buffers.push_back(&t);
  Status ran = sizes ? interpretKernel(kernel, buffers, firstExtent) : interpretKernel(kernel, buffers);
  REQUIRE_MESSAGE(ran.ok(), ran.error().message());
  return {tensors.begin() + static_cast<std::ptrdiff_t>(operands.size()),
          tensors.begin() + static_cast<std::ptrdiff_t>(operands.size() + resultTypes.size())};
}

}  // namespace

TEST_CASE("size-general kernels: every op's example with a symbolic batch, general at two sizes, computes a third's kernel bit for bit") {
  const uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (std::string_view passes : {kCpuKernelPipeline, std::string_view("map-to-blocks,vectorize")}) {
    CAPTURE(passes);
    int kernels = 0, general = 0, instances = 0, withParams = 0, instancesAtOne = 0;
    std::vector<std::string> notGeneral, notAtOne;
    for (const OpDef* op : OpRegistry::global().all()) {
      if (!op->symbolicDims) continue;
      DType dtype = op->dtypes.contains(DType::f32) ? DType::f32 : op->dtypes.list().front();
      CAPTURE(op->name);
      Graph example = testing::parseOrFail(op->exampleIn(dtype));
      if (example.inputs().empty() || example.inputs()[0]->type().rank() == 0) continue;
      const int64_t batch = example.inputs()[0]->type().shape[0];
      auto symbolic = testing::withSymbolicBatch(example, batch);
      if (!symbolic.ok() || symbolic->symbolicDims().empty()) continue;
      // Two sizes make the general form; a third, of another parity, is run through it.
      const int64_t a = batch + 2, b = batch + 3, c = batch + 6;
      Lowered atA = lowerAt(*symbolic, a, passes, seed), atB = lowerAt(*symbolic, b, passes, seed),
              atC = lowerAt(*symbolic, c, passes, seed + 1), atOne = lowerAt(*symbolic, 1, passes, seed + 2);
      REQUIRE(atA.kernels.size() == atB.kernels.size());
      REQUIRE(atA.kernels.size() == atC.kernels.size());
      for (size_t k = 0; k < atA.kernels.size(); ++k) {
        ++kernels;
        std::optional<SizeGeneralKernel> g = generalizeSizes(atA.kernels[k], atB.kernels[k]);
        if (!g) {
          notGeneral.push_back(std::string(op->name));
          continue;
        }
        ++general;
        withParams += g->params() > 0;
        // Its text holds no size: the same general kernel, whichever two sizes made it (when the third
        // size keeps the kernel's shape: a GPU splits rows of 64 and more across a block's threads).
        std::optional<SizeGeneralKernel> fromOthers = generalizeSizes(atB.kernels[k], atC.kernels[k]);
        if (fromOthers) CHECK(printKernel(fromOthers->kernel) == printKernel(g->kernel));
        auto parsed = parseKernel(printKernel(g->kernel));
        REQUIRE_MESSAGE(parsed.ok(), parsed.error().message(), "\n", printKernel(g->kernel));
        CHECK(printKernel(*parsed) == printKernel(g->kernel));

        // The third size, then a batch of one (whose kernels keep the index of its domain dim of 1),
        // through the general kernel: bit for bit what their own kernels compute.
        auto runThrough = [&](const Lowered& at, const std::vector<int64_t>& values) {
          const Kernel& concrete = at.kernels[k];
          std::vector<Tensor> want = runKernel(concrete, at.operands[k], at.results[k], nullptr, 0);
          std::vector<Tensor> got = runKernel(*parsed, at.operands[k], at.results[k], &values,
                                              concrete.domain.empty() ? 0 : concrete.domain[0]);
          for (size_t r = 0; r < want.size(); ++r) {
            CHECK_MESSAGE(testing::compareTensors(got[r], want[r], 0).empty(), printKernel(g->kernel));
          }
        };
        std::optional<std::vector<int64_t>> sizes = paramsAt(*g, atC.kernels[k]);
        CHECK(sizes.has_value() == fromOthers.has_value());
        if (!sizes) continue;
        ++instances;
        runThrough(atC, *sizes);
        if (atOne.kernels.size() != atA.kernels.size()) {
          notAtOne.push_back(fmt::format("{} (another kernel count at 1)", op->name));
        } else if (std::optional<std::vector<int64_t>> ones = paramsAt(*g, atOne.kernels[k])) {
          ++instancesAtOne;
          runThrough(atOne, *ones);
        } else {
          notAtOne.push_back(std::string(op->name));
        }
      }
    }
    MESSAGE(fmt::format("{}: {} kernels, {} general at two sizes ({} with run-time values), {} run as a third's; "
                        "not general (the batch is not the outermost dimension of their domain): {}",
                        passes, kernels, general, withParams, instances, fmt::join(notGeneral, ", ")));
    // All but the few kernels that move the batch inward (a transpose) or index along it (the examples' gather
    // and scatters along axis 0: 8 of 123 here) keep their shape across sizes.
    CHECK(general * 100 >= kernels * 92);
    CHECK(instances * 100 >= general * 90);
    CHECK(withParams > 10);
    MESSAGE(fmt::format("{}: {} of {} run as a batch of one; not: {}", passes, instancesAtOne, instances,
                        fmt::join(notAtOne, ", ")));
    CHECK(instancesAtOne * 100 >= instances * 90);
  }
}

TEST_CASE("size-general kernels: the numbers that vary become run-time values, the rest stay, and a kernel of another shape is no instance") {
  constexpr const char* kLoss = R"(graph @loss(%x: f32[B,5], %w: f32[5]) {
  dim B in [1, 512]
  %0 = mul(%x, %w) : f32[B,5]
  %1 = reduce_sum(%0) {axes = [1]} : f32[B]
  %2 = reduce_mean(%1) : f32[]
  return loss = %2
})";
  Graph g = testing::parseOrFail(kLoss);
  const uint64_t seed = testing::testSeed();
  Lowered k7 = lowerAt(g, 7, kCpuKernelPipeline, seed), k8 = lowerAt(g, 8, kCpuKernelPipeline, seed),
          k100 = lowerAt(g, 100, kCpuKernelPipeline, seed);
  REQUIRE(k7.kernels.size() == 2);  // the row sums, then their mean
  std::optional<SizeGeneralKernel> rows = generalizeSizes(k7.kernels[0], k8.kernels[0]);
  std::optional<SizeGeneralKernel> mean = generalizeSizes(k7.kernels[1], k8.kernels[1]);
  REQUIRE(rows.has_value());
  REQUIRE(mean.has_value());
  // The row sums: the batch is the domain's first extent, given at launch; the width stays 5.
  const std::string rowsText = printKernel(rows->kernel);
  CHECK(rowsText.find("domain [?]") != std::string::npos);
  CHECK(rowsText.find("f32[?] in") != std::string::npos);
  CHECK(std::regex_search(rowsText, std::regex("loop %[0-9]+ < 5 ")));
  CHECK(rows->params() == 0);
  // The mean: its loop's extent and the divisor B are read at run time from the last buffer.
  const std::string meanText = printKernel(mean->kernel);
  CHECK(meanText.find("param 0") != std::string::npos);
  CHECK(meanText.find("param 1") != std::string::npos);
  CHECK(meanText.find("i64[2] in \"sizes\"") != std::string::npos);
  std::optional<std::vector<int64_t>> sizes = paramsAt(*mean, k100.kernels[1]);
  REQUIRE(sizes.has_value());
  CHECK(std::find(sizes->begin(), sizes->end(), 100) != sizes->end());
  CHECK(std::find(sizes->begin(), sizes->end(), int64_t{std::bit_cast<uint32_t>(100.0f)}) != sizes->end());
  // A kernel whose width differs is no instance: the width is no run-time value.
  std::string wider = kLoss;
  for (size_t at; (at = wider.find("5")) != std::string::npos;) wider.replace(at, 1, "6");
  Lowered w = lowerAt(testing::parseOrFail(wider), 100, kCpuKernelPipeline, seed);
  CHECK_FALSE(paramsAt(*rows, w.kernels[0]).has_value());
  CHECK(paramsAt(*rows, k100.kernels[0]).has_value());
  // A batch of one is an instance too: lowering keeps the index of a domain dim of 1 (ir/lowering.h).
  Lowered k1 = lowerAt(g, 1, kCpuKernelPipeline, seed);
  std::optional<std::vector<int64_t>> one = paramsAt(*rows, k1.kernels[0]);
  REQUIRE(one.has_value());
  std::vector<Tensor> want = runKernel(k1.kernels[0], k1.operands[0], k1.results[0], nullptr, 0);
  std::vector<Tensor> got = runKernel(rows->kernel, k1.operands[0], k1.results[0], &*one, 1);
  CHECK(testing::compareTensors(got[0], want[0], 0).empty());
  CHECK(generalizeSizes(k1.kernels[0], k7.kernels[0]).has_value());
}
