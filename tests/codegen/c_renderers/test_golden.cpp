// Golden rendered kernels: a few graphs' kernels as OpenCL C, CUDA C and HIP, compared as text with
// tests/codegen/c_renderers/golden/<case>.<cl|cu|hip> (and each dialect's prelude), so a change to a
// renderer, or to the lowering feeding it, shows up in review as a diff of generated code.
// SMELT_UPDATE_GOLDEN=1 rewrites the files instead of comparing.
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/hip/hip_renderer.h"
#include "codegen/lower_kernel.h"
#include "codegen/map_to_blocks.h"
#include "codegen/opencl/opencl_renderer.h"
#include "passes/pass_manager.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

using namespace smelt;

namespace {

struct GoldenCase {
  const char* name;
  const char* ir;
  /// Mapped to blocks of threads as the GPU backends do (codegen/map_to_blocks.h).
  bool blocks = false;
};

const GoldenCase kCases[] = {
    // A fused elementwise chain with a broadcast operand.
    {"elementwise_chain", R"(graph @chain(%x: f32[64,128], %b: f32[128]) {
  %0 = add(%x, %b) : f32[64,128]
  %1 = tanh(%0) : f32[64,128]
  %2 = mul(%1, %x) : f32[64,128]
  %3 = relu(%2) : f32[64,128]
  return y = %3
})"},
    // A row reduction: softmax's online max-and-sum loop, then the normalizing store loop.
    {"softmax", R"(graph @softmax(%x: f32[32,100]) {
  %0 = softmax(%x) {axis = -1} : f32[32,100]
  return y = %0
})"},
    // f16 storage, compute in float rounded per instruction, and the float -> integer cast.
    {"f16_cast", R"(graph @half(%x: f16[16], %y: f16[16]) {
  %0 = mul(%x, %y) : f16[16]
  %1 = cast(%0) {to = "i32"} : i32[16]
  %2 = div(%1, %1) : i32[16]
  return p = %0, q = %2
})"},
    // Rows long enough for blocks: split loops, the combine tree, barriers, every thread storing.
    {"softmax_blocks", R"(graph @softmax(%x: f32[32,1000]) {
  %0 = softmax(%x) {axis = -1} : f32[32,1000]
  return y = %0
})",
     true},
    // Rows of whole blocks: the row stays in registers from the mean's sweep to the output's
    // (codegen/row_cache.h).
    {"layer_norm_blocks", R"(graph @layer_norm(%x: f32[16,1024], %w: f32[1024], %b: f32[1024]) {
  %0 = layer_norm(%x, %w, %b) {axis = -1, epsilon = 1e-5} : f32[16,1024]
  return y = %0
})",
     true},
    // A full reduction, then element loops reading its result (a clip by the global norm).
    {"clip_blocks", R"(graph @clip(%g: f32[4096], %m: f32[4096]) {
  %0 = mul(%g, %g) : f32[4096]
  %1 = reduce_sum(%0) : f32[]
  %2 = rsqrt(%1) : f32[]
  %3 = mul(%g, %2) : f32[4096]
  %4 = add(%m, %3) : f32[4096]
  return n = %1, m = %4
})",
     true},
};

struct Dialect {
  const char* extension;
  std::unique_ptr<codegen::CRenderer> renderer;
};

std::vector<Dialect> dialects() {
  std::vector<Dialect> d;
  d.push_back({"cl", std::make_unique<codegen::OpenClRenderer>()});
  d.push_back({"cu", std::make_unique<codegen::CudaRenderer>()});
  d.push_back({"hip", std::make_unique<codegen::HipRenderer>()});
  return d;
}

std::string render(const codegen::CRenderer& renderer, const GoldenCase& c) {
  Graph graph = testing::parseOrFail(c.ir);
  auto pm = PassManager::fromPipeline(kDefaultPipeline, PassManagerOptions{});
  REQUIRE(pm.ok());
  auto ran = pm->run(graph);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  std::string text;
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant") continue;
    // Block cases are lowered as the GPU backends lower them.
    auto kernel = codegen::lowerToKernel(
        graph, *node, c.blocks ? codegen::kGpuLoweringKernelPipeline : codegen::kLoweringKernelPipeline);
    REQUIRE_MESSAGE(kernel.ok(), c.name, ": ", (kernel.ok() ? "" : kernel.error().message()));
    if (c.blocks) REQUIRE_MESSAGE(codegen::mapToBlocks(*kernel), c.name, ": not mapped to blocks");
    auto source = renderer.renderKernel(*kernel, codegen::CRenderer::symbolFor(*kernel, index++));
    REQUIRE_MESSAGE(source.ok(), c.name, ": ", (source.ok() ? "" : source.error().message()));
    text += (text.empty() ? "" : "\n") + *source;
  }
  return text;
}

/// Compares `text` with the golden file (or rewrites it under SMELT_UPDATE_GOLDEN=1).
void checkGolden(const std::string& file, const std::string& text) {
  std::string path = std::string(SMELT_GOLDEN_DIR) + "/" + file;
  if (std::getenv("SMELT_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << text;
    MESSAGE("updated ", path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path, " is missing: run with SMELT_UPDATE_GOLDEN=1 to write it");
  std::stringstream golden;
  golden << in.rdbuf();
  if (golden.str() == text) return;
  // The first differing line, then the whole rendering.
  std::istringstream want(golden.str()), got(text);
  std::string w, g;
  int line = 1;
  while (std::getline(want, w) && std::getline(got, g) && w == g) ++line;
  FAIL_CHECK(path, " differs at line ", line, ":\n  golden:   ", w, "\n  rendered: ", g,
             "\n(SMELT_UPDATE_GOLDEN=1 rewrites it after review)\n--- rendered ---\n", text);
}

}  // namespace

TEST_CASE("c-renderers: golden rendered kernels and preludes of OpenCL C, CUDA C and HIP") {
  for (const Dialect& d : dialects()) {
    CAPTURE(std::string(d.extension));
    checkGolden(fmt::format("prelude.{}", d.extension), d.renderer->prelude());
    for (const GoldenCase& c : kCases) checkGolden(fmt::format("{}.{}", c.name, d.extension), render(*d.renderer, c));
  }
}
