// The CUDA and HIP renderings compile: NVRTC to PTX and CUBIN for sm_90 and HIPRTC (in its helper
// process) to a gfx90a code object, for every kernel of every op's example in every dtype, the
// block-mapped kernels (reductions, normalizations and their gradients) and the edge kernels. Kernels are batched (NVRTC: one source per op, all its dtypes; HIPRTC: ~100 kernels per
// source) and two compiles run at once, so the ~20 ms (NVRTC) and ~250 ms (HIPRTC helper) fixed cost
// per compile is paid tens of times, not ~650. Without NVRTC or HIPRTC the tests pass with a MESSAGE (NVRTC's
// fails under SMELT_REQUIRE_GPU=1). The example kernels are shaped by the GPU pipelines, as an executable's are.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "codegen/vectorize.h"
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/hip/hip_renderer.h"
#include "codegen/hip/hiprtc_compiler.h"
#include "tests/codegen/c_renderers/render_test_util.h"
#include "tests/support/gpu_required.h"

using namespace smelt;

namespace {

/// One compile: a name for messages and the source.
struct Batch {
  std::string name;
  std::string source;
  size_t kernels = 0;
};

/// The examples' kernels rendered by `renderer`: one source per op (all its dtypes), or several ops
/// together until a source has `minKernels` kernels.
std::vector<Batch> batchesOf(const codegen::CRenderer& renderer, const std::vector<testing::ExampleKernels>& examples,
                             size_t minKernels = 1) {
  std::vector<Batch> batches;
  for (size_t e = 0; e < examples.size();) {
    Batch batch{examples[e].op, {}, 0};
    std::vector<const codegen::Kernel*> kernels;
    std::vector<std::string> symbols;
    std::string op = examples[e].op;
    for (; e < examples.size() && (examples[e].op == op || kernels.size() < minKernels); ++e) {
      if (examples[e].op != op) {
        op = examples[e].op;
        batch.name += ", " + op;
      }
      for (size_t k = 0; k < examples[e].kernels.size(); ++k) {
        kernels.push_back(&examples[e].kernels[k]);
        symbols.push_back(fmt::format("{}_{}_{}", op, dtypeName(examples[e].dtype),
                                      codegen::CRenderer::symbolFor(examples[e].kernels[k], k)));
      }
    }
    auto source = renderer.renderSource(kernels, symbols);
    REQUIRE_MESSAGE(source.ok(), batch.name, ": ", (source.ok() ? "" : source.error().message()));
    batch.source = std::move(*source);
    batch.kernels = kernels.size();
    batches.push_back(std::move(batch));
  }
  return batches;
}

/// Every op's examples (in `dtypes`, all when empty), then the block-mapped kernels, then the
/// convolutions' layout kernels in every dtype.
std::vector<Batch> exampleBatches(const codegen::CRenderer& renderer, const std::vector<DType>& dtypes = {},
                                  size_t minKernels = 1) {
  std::vector<Batch> batches = batchesOf(renderer, testing::exampleKernels(dtypes), minKernels);
  std::vector<testing::ExampleKernels> blocks;
  for (testing::ExampleKernels& e : testing::blockKernels()) {
    if (dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), e.dtype) != dtypes.end()) blocks.push_back(std::move(e));
  }
  std::vector<Batch> mapped = batchesOf(renderer, blocks, 1000);
  for (Batch& b : mapped) b.name = "block-mapped: " + b.name;
  batches.insert(batches.end(), mapped.begin(), mapped.end());
  std::vector<Batch> layouts = batchesOf(renderer, testing::convolutionLayoutKernels(), 1000);
  batches.insert(batches.end(), layouts.begin(), layouts.end());
  return batches;
}

/// The edge kernels as one source; `vectorized`: those codegen/vectorize.h takes, vectorized.
Batch edgeBatch(const codegen::CRenderer& renderer, bool vectorized = false) {
  std::vector<testing::EdgeKernel> edges = testing::edgeKernels();
  if (vectorized) std::erase_if(edges, [](testing::EdgeKernel& e) { return !codegen::vectorize(e.kernel, 0); });
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  for (size_t i = 0; i < edges.size(); ++i) {
    kernels.push_back(&edges[i].kernel);
    symbols.push_back(codegen::CRenderer::symbolFor(edges[i].kernel, i));
  }
  auto source = renderer.renderSource(kernels, symbols);
  REQUIRE(source.ok());
  return {vectorized ? "vectorized edge values" : "edge values", std::move(*source), kernels.size()};
}

/// The lines a compile log points at ("smelt_kernel.cu(123): error ..."), each with the kernel it is
/// in, so a failure in a batch names its kernel.
std::string quoteLogLines(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  std::regex at(R"([(:](\d+)[):])");
  int shown = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), at); it != std::sregex_iterator() && shown < 5; ++it) {
    size_t n = std::stoul((*it)[1]);
    if (n == 0 || n > lines.size()) continue;
    std::string kernel = "(prelude)";
    for (size_t l = n; l-- > 0;) {
      if (lines[l].rfind("// kernel @", 0) == 0) {
        kernel = lines[l];
        break;
      }
    }
    out += fmt::format("\n  line {} in {}: {}", n, kernel, lines[n - 1]);
    ++shown;
  }
  return out;
}

/// Runs `compile` on every batch on two threads; returns the failures and the wall time.
std::pair<std::vector<std::string>, double> compileAll(const std::vector<Batch>& batches,
                                                       const std::function<Status(const Batch&)>& compile) {
  auto start = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (size_t i = next++; i < batches.size(); i = next++) {
      Status s = compile(batches[i]);
      if (!s.ok()) {
        std::lock_guard lock(mutex);
        failures.push_back(fmt::format("{}: {}{}", batches[i].name, s.error().message(),
                                       quoteLogLines(s.error().message(), batches[i].source)));
      }
    }
  };
  std::thread other(worker);
  worker();
  other.join();
  return {failures, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

size_t kernelCount(const std::vector<Batch>& batches) {
  size_t n = 0;
  for (const Batch& b : batches) n += b.kernels;
  return n;
}

}  // namespace

// A warp shuffle that some lanes skip waits for them forever: on an H100, max's NaN-aware combine
// evaluated its shuffled operand inside `||` and `?:`, and softmax hung.
TEST_CASE("c-renderers: every warp shuffle is a statement of its own, run by every lane, never inside ?:, || or &&") {
  const std::regex alone(R"(^\s*[A-Za-z_][\w ]* v\d+_o = \([\w ]+\)__shfl_down(_sync)?\([^?|&]*\);$)");
  codegen::CudaRenderer cuda;
  codegen::HipRenderer hip;
  size_t shuffles = 0;
  for (const codegen::CRenderer* renderer : {static_cast<const codegen::CRenderer*>(&cuda), static_cast<const codegen::CRenderer*>(&hip)}) {
    for (const Batch& b : exampleBatches(*renderer)) {
      std::istringstream lines(b.source);
      for (std::string line; std::getline(lines, line);) {
        if (line.find("__shfl") == std::string::npos) continue;
        ++shuffles;
        CHECK_MESSAGE(std::regex_match(line, alone), renderer->backend(), " ", b.name, ": ", line);
      }
    }
  }
  CHECK(shuffles > 0);
}

TEST_CASE("c-renderers: NVRTC compiles the CUDA C of every op's kernels in every dtype to PTX and CUBIN for sm_90") {
  // NVRTC is part of every CUDA host's toolkit: missing, it fails under SMELT_REQUIRE_GPU (scripts/gpu_check.sh).
  if (auto version = cuda::nvrtcVersion(); !version.ok()) SMELT_SKIP_WITHOUT_GPU(version.error().message());
  codegen::CudaRenderer renderer;
  std::vector<Batch> batches = exampleBatches(renderer);
  batches.push_back(edgeBatch(renderer));
  batches.push_back(edgeBatch(renderer, true));
  auto [failures, seconds] = compileAll(batches, [](const Batch& b) -> Status {
    SMELT_TRY(cuda::NvrtcOutput out, cuda::compileCuda(b.source, {.arch = "sm_90"}));
    if (out.ptx.find(".target sm_90") == std::string::npos) return makeError("no PTX for sm_90");
    if (out.cubin.size() < 64 || out.cubin.compare(1, 3, "ELF") != 0) return makeError("no CUBIN for sm_90");
    return Status::success();
  });
  for (const std::string& f : failures) FAIL_CHECK(f);
  MESSAGE(fmt::format("NVRTC: {} kernels in {} sources compiled to PTX and CUBIN (sm_90) in {:.1f} s on 2 threads",
                      kernelCount(batches), batches.size(), seconds));
}

TEST_CASE("c-renderers: HIPRTC compiles the HIP of every op's kernels to a gfx90a code object") {
  if (auto version = hip::hiprtcVersion(); !version.ok()) {
    MESSAGE(version.error().message());
    return;
  }
  codegen::HipRenderer renderer;
  // f32 and f16 (~25 s on 2 busy cores; ~30 s of CPU for every dtype, 45-75 s there): the other
  // dtypes differ only in type names, and the edge kernels, compiled too, cover every dtype's
  // arithmetic, casts and conversions. SMELT_TEST_HIP_ALL_DTYPES=1 compiles every dtype's examples.
  std::vector<DType> dtypes;
  if (!std::getenv("SMELT_TEST_HIP_ALL_DTYPES")) dtypes = {DType::f32, DType::f16};
  // ~100 kernels per source: the helper process costs ~250 ms per compile.
  std::vector<Batch> batches = exampleBatches(renderer, dtypes, 100);
  batches.push_back(edgeBatch(renderer));
  batches.push_back(edgeBatch(renderer, true));
  auto [failures, seconds] = compileAll(batches, [](const Batch& b) -> Status {
    SMELT_TRY(hip::HiprtcOutput out, hip::compileHip(b.source, {.arch = "gfx90a", .flags = {"-O3"}}));
    if (out.code_object.size() < 64 || out.code_object.compare(1, 3, "ELF") != 0)
      return makeError("no ELF code object");
    return Status::success();
  });
  for (const std::string& f : failures) FAIL_CHECK(f);
  MESSAGE(fmt::format("HIPRTC: {} kernels in {} sources ({}) compiled for gfx90a in {:.1f} s on 2 threads",
                      kernelCount(batches), batches.size(),
                      dtypes.empty() ? "all dtypes" : "f32 and f16, edge kernels all", seconds));
}
