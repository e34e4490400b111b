// Which fused epilogue kernels a vendor GEMM can compute whole (runtime/exec/gemm_plan.h: vendorEpilogueOf, what the
// CUDA backend hands to cuBLASLt's BIAS, RELU_BIAS and GELU_BIAS epilogues): a linear layer's product, its bias
// along the columns, then relu or tanh-approximated gelu. Anything else (another activation, the activation before
// the bias, a bias of another shape, a product read twice, a batch) keeps the generated epilogue.
#include "passes/pass_manager.h"
#include "runtime/exec/gemm_plan.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// The vendor epilogue of the graph's first node, `body` being its fused body's nodes after
/// `%0 = matmul(%p0, %p1) : f32[8,16]` (or `anchor` instead), over inputs x [8,4], w [4,16] and `extra`.
std::optional<VendorEpilogue> epilogueOf(const std::string& body, const std::string& extra = "%b: f32[16]",
                                         const std::string& anchor = "%0 = matmul(%p0, %p1) : f32[8,16]") {
  const std::string bodyExtra = extra.empty() ? "" : ", %p2: " + extra.substr(extra.find(": ") + 2);
  const std::string operandExtra = extra.empty() ? "" : ", " + extra.substr(0, extra.find(':'));
  const std::string text = fmt::format(R"(graph @g(%x: f32[8,4], %w: f32[4,16]{}) {{
  %0 = fused(%x, %w{}) {{kind = "epilogue"}} : f32[8,16] body = graph @fused(%p0: f32[8,4], %p1: f32[4,16]{}) {{
    {}
    {}
  }}
  return y = %0
}})",
                                       extra.empty() ? "" : ", " + extra, operandExtra, bodyExtra, anchor, body);
  Graph graph = testing::parseOrFail(text);
  const Node& node = *graph.nodes().front();
  std::optional<GemmPlan> plan = planGemm(node, [](DType) { return true; });
  REQUIRE_MESSAGE(plan.has_value(), text);
  return vendorEpilogueOf(node, *plan);
}

}  // namespace

TEST_CASE("vendor epilogue: a linear layer's bias, then relu or tanh-approximated gelu") {
  using Activation = VendorEpilogue::Activation;
  auto bias = epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    return r0 = %1");
  REQUIRE(bias.has_value());
  CHECK(bias->activation == Activation::kNone);
  CHECK(bias->bias == 2);
  auto relu = epilogueOf("%1 = add(%p2, %0) : f32[8,16]\n    %2 = relu(%1) : f32[8,16]\n    return r0 = %2");
  REQUIRE(relu.has_value());
  CHECK(relu->activation == Activation::kRelu);
  auto gelu = epilogueOf(
      "%1 = add(%0, %p2) : f32[8,16]\n    %2 = gelu(%1) {approximate = \"tanh\"} : f32[8,16]\n    return r0 = %2");
  REQUIRE(gelu.has_value());
  CHECK(gelu->activation == Activation::kGeluTanh);
  // A bias of [1, n] broadcasts the same way.
  auto row = epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    %2 = relu(%1) : f32[8,16]\n    return r0 = %2",
                        "%b: f32[1,16]");
  REQUIRE(row.has_value());
  CHECK(row->activation == Activation::kRelu);
  // gemm's c with beta 1 is the bias.
  auto gemm = epilogueOf("%1 = relu(%0) : f32[8,16]\n    return r0 = %1", "%b: f32[16]",
                         "%0 = gemm(%p0, %p1, %p2) {alpha = 0.5, beta = 1.0} : f32[8,16]");
  REQUIRE(gemm.has_value());
  CHECK(gemm->activation == Activation::kRelu);
  CHECK(gemm->bias == 2);
}

TEST_CASE("vendor epilogue: anything else keeps the generated epilogue kernel") {
  // The erf gelu, another activation, the activation before the bias, no bias at all.
  CHECK_FALSE(epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    %2 = gelu(%1) : f32[8,16]\n    return r0 = %2"));
  CHECK_FALSE(epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    %2 = tanh(%1) : f32[8,16]\n    return r0 = %2"));
  CHECK_FALSE(epilogueOf("%1 = relu(%0) : f32[8,16]\n    %2 = add(%1, %p2) : f32[8,16]\n    return r0 = %2"));
  CHECK_FALSE(epilogueOf("%1 = relu(%0) : f32[8,16]\n    return r0 = %1", ""));
  // A bias along the rows, or per element; two biases; a residual read twice.
  CHECK_FALSE(epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    return r0 = %1", "%b: f32[8,1]"));
  CHECK_FALSE(epilogueOf("%1 = add(%0, %p2) : f32[8,16]\n    return r0 = %1", "%b: f32[8,16]"));
  CHECK_FALSE(epilogueOf(
      "%1 = add(%0, %p2) : f32[8,16]\n    %2 = add(%1, %p2) : f32[8,16]\n    return r0 = %2"));
  CHECK_FALSE(epilogueOf("%1 = add(%0, %0) : f32[8,16]\n    return r0 = %1", ""));
  // gemm's c scaled by a beta other than 1, or a bias of another dtype.
  CHECK_FALSE(epilogueOf("return r0 = %0", "%b: f32[16]",
                         "%0 = gemm(%p0, %p1, %p2) {beta = 0.5} : f32[8,16]"));
  CHECK_FALSE(epilogueOf("%1 = cast(%p2) {to = \"f32\"} : f32[16]\n    %2 = add(%0, %1) : f32[8,16]\n"
                         "    return r0 = %2",
                         "%b: f16[16]"));
}

TEST_CASE("vendor epilogue: the fuse pass leaves linear layers in the form a vendor GEMM takes whole") {
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[64,96], %w: f32[96,80], %u: f32[96,80], %v: f32[80,96],
                %b: f32[80], %c: f32[1,80]) {
  %0 = matmul(%x, %w) : f32[64,80]
  %1 = add(%0, %b) : f32[64,80]
  %2 = gemm(%x, %v, %b) {trans_b = 1, alpha = 0.5, beta = 1.0} : f32[64,80]
  %3 = relu(%2) : f32[64,80]
  %4 = matmul(%x, %u) : f32[64,80]
  %5 = add(%4, %c) : f32[64,80]
  %6 = gelu(%5) {approximate = "tanh"} : f32[64,80]
  return bias = %1, relu = %3, gelu = %6
})");
  auto pm = PassManager::defaultPipeline();
  REQUIRE(pm.ok());
  REQUIRE(pm->run(graph).ok());
  std::vector<VendorEpilogue::Activation> found;
  for (const auto& node : graph.nodes()) {
    std::optional<GemmPlan> plan = planGemm(*node, [](DType) { return true; });
    REQUIRE(plan.has_value());
    auto epilogue = vendorEpilogueOf(*node, *plan);
    REQUIRE(epilogue.has_value());
    found.push_back(epilogue->activation);
  }
  using A = VendorEpilogue::Activation;
  CHECK(found == std::vector<A>{A::kNone, A::kRelu, A::kGeluTanh});
}
