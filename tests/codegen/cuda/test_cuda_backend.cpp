// The CUDA backend (runtime/cuda_executable.h). Everywhere: without a driver or GPU, compiling is a
// clear "cuda backend: ..." error through every entry point and nothing crashes; the executable's
// NVRTC options compile a graph's kernels and leave products uncontracted. With a GPU
// (deviceCount() > 0): every op's IR example in every dtype against the reference interpreter (as
// the OpenCL test does on PoCL), the edge-value kernels against the kernel interpreter, an executable
// run repeatedly with the same results, fed and restored parameters, a second compile answered by
// the kernel cache, SMELT_CHECK_KERNELS, linear layers' epilogues inside cuBLASLt's GEMM, and all-reduces on NCCL
// (a world of one). GPU tests pass with a MESSAGE
// where there is none.
#include "codegen/cache/kernel_cache.h"
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/lower_kernel.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/exec/executable.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cublas_lt.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/nccl.h"
#include "runtime/cuda/pending_collectives.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/exec/executable.h"
#include "tests/codegen/c_renderers/render_test_util.h"
#include "tests/support/gpu_required.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

using namespace smelt;

namespace {

constexpr std::string_view kGraph = R"(graph @g(%x: f32[64,128], %b: f32[128]) {
  param %w: f32[3] = [0.5, -1, 2]
  %0 = add(%x, %b) : f32[64,128]
  %1 = tanh(%0) : f32[64,128]
  %2 = softmax(%1) : f32[64,128]
  %3 = reduce_sum(%2) {axes = [0]} : f32[128]
  %4 = constant() {value = dense<f32[3]> [1, 2, 3]} : f32[3]
  %5 = mul(%w, %4) : f32[3]
  return y = %2, z = %3, v = %5, x = %x, w = %w
})";

/// Why the GPU tests cannot run here (no driver, no device, no NVRTC, a driver older than NVRTC's
/// PTX), or empty when they can.
std::string gpuMissing() {
  auto count = cuda::deviceCount();
  if (!count.ok()) return count.error().message();
  if (*count == 0) return "the CUDA driver reports no device";
  auto nvrtc = cuda::nvrtcVersion();
  if (!nvrtc.ok()) return nvrtc.error().message();
  if (Status s = cuda::checkPtxCompatible(nvrtc->major); !s.ok()) return s.error().message();
  return "";
}

/// Skips the calling test with a MESSAGE when there is no usable GPU (fails under SMELT_REQUIRE_GPU=1).
#define SKIP_WITHOUT_GPU()                                                          \
  do {                                                                              \
    if (std::string why = gpuMissing(); !why.empty()) SMELT_SKIP_WITHOUT_GPU("no usable CUDA GPU: " + why); \
  } while (0)

/// Runs the examples of every `shards`-th op starting at `shard`, all dtypes of one op in one module.
void checkExamples(size_t shard, size_t shards) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  auto start = std::chrono::steady_clock::now();
  int checked = 0, kernels = 0;
  double compileSeconds = 0;
  std::vector<std::string> interpreted;
  std::string device;
  size_t index = 0;
  for (const OpDef* op : OpRegistry::global().all()) {
    if (op->name == "constant" || index++ % shards != shard) continue;
    std::vector<Graph> graphs;
    std::vector<std::string> names;
    // The CUDA renderer has every dtype (f64 natively, f16/bf16 as 16-bit patterns computed in f32).
    for (DType dtype : op->dtypes.list()) {
      graphs.push_back(testing::parseOrFail(op->exampleIn(dtype)));
      names.push_back(fmt::format("{} ({})", op->name, dtypeName(dtype)));
    }
    CAPTURE(op->name);
    if (std::getenv("SMELT_TEST_TRACE")) fmt::print(stderr, "{}\n", op->name);
    auto t0 = std::chrono::steady_clock::now();
    // CHECK and go on, never REQUIRE: a first run on a new GPU should show every failing op at once.
    auto exes = Executable::compileAll(graphs, {.device = "cuda", .fallback = false});
    CHECK_MESSAGE(exes.ok(), op->name, ": ", (exes.ok() ? "" : exes.error().message()));
    if (!exes.ok()) continue;
    compileSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t g = 0; g < graphs.size(); ++g) {
      const std::string& what = names[g];
      CAPTURE(what);
      Executable& exe = *(*exes)[g];
      device = exe.device()->description().name;
      TensorMap feeds = testing::randomFeeds(graphs[g], seed);
      if (exe.report().interpreted > 0) interpreted.push_back(what);
      kernels += static_cast<int>(exe.report().kernels);
      auto expected = interpret(exe.graph(), feeds);
      CHECK_MESSAGE(expected.ok(), what, ": ", (expected.ok() ? "" : expected.error().message()));
      auto actual = exe.run(feeds);
      CHECK_MESSAGE(actual.ok(), what, ": ", (actual.ok() ? "" : actual.error().message()));
      if (!expected.ok() || !actual.ok()) continue;
      // The compiled graph's outputs end with its run-time checks' flags (passes/index_checks.h), which runs do
      // not return: compare the caller's outputs.
      REQUIRE(actual->size() == graphs[g].outputs().size());
      for (size_t i = 0; i < actual->size(); ++i) {
        std::string d =
            testing::compareTensors((*actual)[i], (*expected)[i], testing::backendTolerance((*expected)[i].dtype()));
        CHECK_MESSAGE(d.empty(), what, " output ", graphs[g].outputs()[i].name, ": ", d, "\n", toText(exe.graph()),
                      "\n", exe.source());
      }
      ++checked;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(fmt::format("{} op/dtype examples ({} kernels) compiled and run on '{}' in {:.1f} s (compiles {:.1f} s); "
                      "{} with a node on the reference interpreter",
                      checked, kernels, device, seconds, compileSeconds, interpreted.size()));
}

}  // namespace

TEST_CASE("cuda backend: without a driver or GPU, compiling is a clear error and nothing crashes") {
  Graph graph = testing::parseOrFail(kGraph);
  auto count = cuda::deviceCount();
  if (count.ok() && *count > 0) {
    MESSAGE("a CUDA GPU is present (", *count, " devices): the GPU tests cover this backend");
    return;
  }
  // On a GPU host this test's premise is false; say so rather than check errors there.
  if (testing::gpuRequired()) FAIL("SMELT_REQUIRE_GPU=1 but no GPU: ", count.ok() ? "0 devices" : count.error().message());
  auto exe = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE_FALSE(exe.ok());
  const std::string& message = exe.error().message();
  MESSAGE(message);
  // The device named, the devices there are, and the driver's own reason, whole: on these machines
  // "CUDA driver not found: libcuda.so.1: cannot open shared object file: No such file or directory";
  // with a driver but no GPU, cuInit's.
  CHECK(message.starts_with("device 'cuda' (devices here: cpu"));
  if (!count.ok()) {
    CHECK(message.ends_with(": " + count.error().message()));
    const bool notFound = message.find(": CUDA driver not found: libcuda.so.1: ") != std::string::npos;
    const bool notUsable = message.find(": CUDA driver found but not usable: ") != std::string::npos;
    const bool notBuilt = message.find(": CUDA driver support not built") != std::string::npos;
    CHECK((notFound || notUsable || notBuilt));
  }
  // Every way in says the same, again and again (the failed driver load is remembered, not retried
  // into a crash).
  std::vector<Graph> graphs;
  graphs.push_back(graph.clone());
  graphs.push_back(testing::parseOrFail(substituteDType(
      "graph @h(%a: $T[8]) {\n  %0 = neg(%a) : $T[8]\n  return y = %0\n}", "f64")));
  auto all = Executable::compileAll(graphs, {.device = "cuda", .fallback = false});
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message() == message);
  auto again = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message() == message);
  // The backend is listed (it is built), and by name it fails with the same message, as
  // `smelt run --backend cuda` prints it; with fallback on, a failed device open is still an error
  // (falling back is for devices that fail while in use, not for ones that are not there).
  std::vector<std::string> names = backendNames();
  CHECK(std::find(names.begin(), names.end(), "cuda") != names.end());
  auto ran = runOnce(graph, testing::randomFeeds(graph, 1), "cuda");
  REQUIRE_FALSE(ran.ok());
  CHECK(ran.error().message() == message);
}

TEST_CASE("cuda backend: NVRTC compiles a graph's kernels with the executable's options (no GPU needed)") {
  auto version = cuda::nvrtcVersion();
  if (!version.ok()) SMELT_SKIP_WITHOUT_GPU(version.error().message());
  // The graph as the executable renders it: default pipeline, one source, prefixed symbols.
  Graph graph = testing::parseOrFail(kGraph);
  auto pm = PassManager::fromPipeline(std::string(kDefaultPipeline));
  REQUIRE(pm.ok());
  REQUIRE(pm->run(graph).ok());
  std::vector<codegen::Kernel> kernels;
  std::vector<std::string> symbols;
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant" || !codegen::canLower(*node)) continue;
    auto kernel = codegen::lowerToKernel(graph, *node);
    REQUIRE(kernel.ok());
    symbols.push_back("g0_" + codegen::CRenderer::symbolFor(*kernel, kernels.size()));
    kernels.push_back(std::move(*kernel));
  }
  REQUIRE_FALSE(kernels.empty());
  std::vector<const codegen::Kernel*> pointers;
  for (const codegen::Kernel& k : kernels) pointers.push_back(&k);
  auto source = codegen::CudaRenderer().renderSource(pointers, symbols);
  REQUIRE(source.ok());
  auto out = cuda::compileCuda(*source, {.arch = "compute_90", .flags = cudaNvrtcFlags()});
  REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
  for (const std::string& s : symbols) CHECK_MESSAGE(out->ptx.find(".entry " + s) != std::string::npos, s);
}

TEST_CASE("cuda backend: products are rounded before they are added, as the reference does (no FMA)") {
  auto version = cuda::nvrtcVersion();
  if (!version.ok()) SMELT_SKIP_WITHOUT_GPU(version.error().message());
  // x * y + z in one fused kernel: NVRTC's default would contract it into one fma.rn.f32.
  Graph graph = testing::parseOrFail(R"(graph @muladd(%x: f32[64], %y: f32[64], %z: f32[64]) {
  %0 = mul(%x, %y) : f32[64]
  %1 = add(%0, %z) : f32[64]
  return y = %1
})");
  auto pm = PassManager::fromPipeline(std::string(kDefaultPipeline));
  REQUIRE(pm.ok());
  REQUIRE(pm->run(graph).ok());
  std::vector<codegen::Kernel> kernels;
  std::vector<std::string> symbols;
  for (const auto& node : graph.nodes()) {
    auto kernel = codegen::lowerToKernel(graph, *node);
    REQUIRE(kernel.ok());
    symbols.push_back(codegen::CRenderer::symbolFor(*kernel, kernels.size()));
    kernels.push_back(std::move(*kernel));
  }
  REQUIRE(kernels.size() == 1);
  const codegen::Kernel* kernel = &kernels[0];
  auto source = codegen::CudaRenderer().renderSource({&kernel, 1}, symbols);
  REQUIRE(source.ok());
  auto contracted = cuda::compileCuda(*source, {.arch = "compute_90"});
  auto exact = cuda::compileCuda(*source, {.arch = "compute_90", .flags = cudaNvrtcFlags()});
  REQUIRE(contracted.ok());
  REQUIRE(exact.ok());
  CHECK(contracted->ptx.find("fma.rn.f32") != std::string::npos);  // the check below means something
  CHECK(exact->ptx.find("fma.rn.f32") == std::string::npos);
  CHECK(exact->ptx.find("mul.rn.f32") != std::string::npos);
}

TEST_CASE("cuda backend: CUDA C on edge values matches the kernel interpreter exactly") {
  // test_opencl_semantics.cpp's check on the GPU: every binary and unary op and every cast in every
  // dtype on edge values, through the driver directly (one buffer per kernel buffer).
  SKIP_WITHOUT_GPU();
  auto context = cuda::Context::open(0);
  REQUIRE_MESSAGE(context.ok(), (context.ok() ? "" : context.error().message()));
  std::vector<testing::EdgeKernel> edges = testing::edgeKernels();
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  for (size_t i = 0; i < edges.size(); ++i) {
    kernels.push_back(&edges[i].kernel);
    symbols.push_back(codegen::CRenderer::symbolFor(edges[i].kernel, i));
  }
  auto source = codegen::CudaRenderer().renderSource(kernels, symbols);
  REQUIRE(source.ok());
  const cuda::DeviceInfo& device = context->device();
  // compute_90 runs on any device from sm_90 on; older ones get their own arch.
  std::string arch = device.cc_major * 10 + device.cc_minor >= 90
                         ? std::string("compute_90")
                         : cuda::archForComputeCapability(device.cc_major, device.cc_minor);
  auto ptx = cuda::compileCuda(*source, {.arch = arch, .flags = cudaNvrtcFlags()});
  REQUIRE_MESSAGE(ptx.ok(), (ptx.ok() ? "" : ptx.error().message()));
  auto module = context->loadModule(ptx->ptx);
  REQUIRE_MESSAGE(module.ok(), (module.ok() ? "" : module.error().message()));
  for (size_t i = 0; i < edges.size(); ++i) {
    const testing::EdgeKernel& edge = edges[i];
    CAPTURE(edge.kernel.name);
    auto function = module->function(symbols[i]);
    REQUIRE(function.ok());
    std::vector<cuda::DeviceMemory> buffers;
    std::vector<uint64_t> args;
    for (const Tensor& t : edge.buffers) {
      auto b = context->allocate(std::max<size_t>(t.byteSize(), 1));
      REQUIRE(b.ok());
      REQUIRE(context->copyToDevice(*b, t.raw(), t.byteSize()).ok());
      args.push_back(b->address());
      buffers.push_back(std::move(*b));
    }
    const int64_t points = edge.kernel.domainSize();
    args.push_back(static_cast<uint64_t>(points));
    std::vector<void*> params;
    for (uint64_t& a : args) params.push_back(&a);
    auto blocks = static_cast<unsigned>((points + 255) / 256);
    REQUIRE(context->launch(*function, {std::max(blocks, 1u), 1, 1}, {256, 1, 1}, params).ok());
    REQUIRE(context->synchronize().ok());
    std::vector<Tensor> actual = edge.buffers;
    for (size_t b = 0; b < buffers.size(); ++b) {
      REQUIRE(context->copyToHost(actual[b].raw(), buffers[b], actual[b].byteSize()).ok());
    }
    std::string diff = testing::compareWithInterpreter(edge, actual);
    CHECK_MESSAGE(diff.empty(), diff);
  }
  MESSAGE(fmt::format("{} edge kernels run on '{}' ({})", edges.size(), device.name, arch));
}

TEST_CASE("cuda backend: every op's example matches the reference in every dtype (part 1 of 2)") {
  checkExamples(0, 2);
}
TEST_CASE("cuda backend: every op's example matches the reference in every dtype (part 2 of 2)") {
  checkExamples(1, 2);
}

TEST_CASE("cuda backend: an executable runs many times with the same results, parameters fed and restored") {
  SKIP_WITHOUT_GPU();
  Graph graph = testing::parseOrFail(kGraph);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto exe = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  MESSAGE("device '", (*exe)->device()->description().name, "', ", (*exe)->target(), ", ", (*exe)->report().kernels,
          " kernels");
  // A CUBIN for the GPU's own arch where NVRTC knows it, else PTX for the newest below.
  CHECK(((*exe)->target().starts_with("sm_") || (*exe)->target().starts_with("compute_")));
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  std::vector<Tensor> outputs, first;
  for (int i = 0; i < 3; ++i) {
    REQUIRE((*exe)->run(feeds, outputs).ok());
    for (size_t o = 0; o < outputs.size(); ++o) {
      CHECK_MESSAGE(testing::compareTensors(outputs[o], (*expected)[o], 2e-5).empty(), graph.outputs()[o].name);
      // Every run computes the same bits.
      if (i > 0) CHECK_MESSAGE(testing::compareTensors(outputs[o], first[o], 0).empty(), graph.outputs()[o].name);
    }
    if (i == 0) first = outputs;
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
  // The backend runs it by name.
  auto viaBackend = runOnce(graph, feeds, "cuda");
  REQUIRE_MESSAGE(viaBackend.ok(), (viaBackend.ok() ? "" : viaBackend.error().message()));
  CHECK(testing::compareTensors((*viaBackend)[0], (*expected)[0], 2e-5).empty());
}

TEST_CASE("cuda backend: a second compile of a graph is answered by the kernel cache") {
  SKIP_WITHOUT_GPU();
  // Its own graph, so no other test case compiled it in this process.
  Graph graph = testing::parseOrFail(R"(graph @cached(%x: f32[1000], %y: f32[1000]) {
  %0 = mul(%x, %y) : f32[1000]
  %1 = exp(%0) : f32[1000]
  %2 = reduce_max(%1) {axes = [0]} : f32[]
  return a = %1, b = %2
})");
  KernelCache& cache = KernelCache::global();
  CacheStats before = cache.stats();
  auto first = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE_MESSAGE(first.ok(), (first.ok() ? "" : first.error().message()));
  CacheStats between = cache.stats();
  // The first compile stored its PTX, or found it on disk from an earlier run of this test.
  CHECK(between.stores + between.diskHits > before.stores + before.diskHits);
  auto second = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE(second.ok());
  CacheStats after = cache.stats();
  CHECK(after.memoryHits == between.memoryHits + 1);
  CHECK(after.stores == between.stores);
  const CompileReport& report = (*second)->report();
  CHECK(report.kernels > 0);
  CHECK(report.cacheHits == report.kernels);
  CHECK((*second)->target() == (*first)->target());
  // Both run, to the same bits.
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto a = (*first)->run(feeds);
  auto b = (*second)->run(feeds);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (size_t o = 0; o < a->size(); ++o) CHECK(testing::compareTensors((*a)[o], (*b)[o], 0).empty());
}

TEST_CASE("cuda backend: SMELT_CHECK_KERNELS compares each kernel with the reference as it runs") {
  SKIP_WITHOUT_GPU();
  Graph graph = testing::parseOrFail(kGraph);
  setenv("SMELT_CHECK_KERNELS", "1", 1);
  auto exe = Executable::compile(graph, {.device = "cuda", .fallback = false});
  unsetenv("SMELT_CHECK_KERNELS");
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  auto actual = (*exe)->run(feeds);
  REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
  for (size_t o = 0; o < actual->size(); ++o) {
    CHECK(testing::compareTensors((*actual)[o], (*expected)[o], 2e-5).empty());
  }
}

TEST_CASE("cuda backend: cuDNN loads where the host keeps it, or says where it looked (no GPU needed)") {
  std::string description = cuda::cudnnDescription();
  if (!cuda::cudnnAvailable()) {
    CHECK_MESSAGE(description.find("libcudnn.so.9") != std::string::npos, description);
    SMELT_SKIP_WITHOUT_GPU(description);
  }
  CHECK_MESSAGE(description.starts_with("cuDNN 9."), description);
  MESSAGE(description);
}

TEST_CASE("cuda backend: cuDNN takes the windows its symmetric padding expresses (no GPU needed)") {
  // x [2, 4, 9, 10] under a 3x3 window.
  cuda::CudnnConvolution c{.n = 2, .c = 4, .h = 9, .w = 10, .o = 6, .oh = 9, .ow = 10, .kh = 3, .kw = 3, .padH = 1,
                           .padW = 1};
  CHECK(cuda::cudnnExpresses(c));  // padding 1 on every side
  c.oh = 8;                        // padding [1, 0] along the height: one row fewer
  CHECK_FALSE(cuda::cudnnExpresses(c));
  c.padH = 0, c.oh = 7;
  CHECK(cuda::cudnnExpresses(c));
  // Stride 2: padding [1, 0] gives what padding [1, 1] gives (the last window starts at the same
  // row), so cuDNN's pad of 1 computes it exactly.
  c.strideH = 2, c.padH = 1, c.h = 10, c.oh = 5;
  CHECK(cuda::cudnnExpresses(c));
  // More padding at the end (ONNX's SAME_UPPER with an even kernel): not expressible.
  cuda::CudnnConvolution same{.n = 1, .c = 2, .h = 6, .w = 6, .o = 2, .oh = 6, .ow = 6, .kh = 2, .kw = 2};
  CHECK_FALSE(cuda::cudnnExpresses(same));
  // Groups must divide both channel counts; dilation widens the window.
  c = {.n = 1, .c = 4, .h = 9, .w = 9, .o = 6, .oh = 5, .ow = 5, .kh = 3, .kw = 3, .dilationH = 2, .dilationW = 2,
       .groups = 2};
  CHECK(cuda::cudnnExpresses(c));
  c.groups = 3;
  CHECK_FALSE(cuda::cudnnExpresses(c));
}

TEST_CASE("cuda backend: cuBLAS loads where the host keeps it, or says where it looked (no GPU needed)") {
  // Loading needs no driver: here the toolkit's /usr/local/cuda/lib64 has it, on a GPU host a wheel.
  std::string description = cuda::cublasDescription();
  if (!cuda::cublasAvailable(DType::f32)) {
    CHECK_MESSAGE(description.find("cuBLAS not found") != std::string::npos, description);
    CHECK(description.find("nvidia/cublas/lib") != std::string::npos);
    SMELT_SKIP_WITHOUT_GPU(description);
  }
  CHECK_MESSAGE(description.starts_with("cuBLAS 1"), description);
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) CHECK(cuda::cublasAvailable(t));
  CHECK_FALSE(cuda::cublasAvailable(DType::i32));
  MESSAGE(description);
}

TEST_CASE("cuda backend: NCCL loads where the host keeps it and makes unique ids (no GPU needed)") {
  // ncclGetVersion and ncclGetUniqueId need no GPU: here the toolkit's /usr/local/cuda/lib64 has NCCL.
  std::string description = cuda::ncclDescription();
  if (!cuda::ncclAvailable(DType::f32)) {
    CHECK_MESSAGE(description.find("NCCL") != std::string::npos, description);
    SMELT_SKIP_WITHOUT_GPU(description);
  }
  CHECK_MESSAGE(description.starts_with("NCCL 2."), description);
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) CHECK(cuda::ncclAvailable(t));
  CHECK_FALSE(cuda::ncclAvailable(DType::i32));
  auto a = cuda::ncclNewUniqueId(), b = cuda::ncclNewUniqueId();
  REQUIRE_MESSAGE(a.ok(), (a.ok() ? "" : a.error().message()));
  REQUIRE(b.ok());
  CHECK(*a != *b);
  MESSAGE(description);
}

TEST_CASE("cuda backend: a collective pending past the timeout is named for the NCCL watchdog (no GPU needed)") {
  // The bookkeeping the watchdog runs over each communicator, with stand-ins for the events: the finished ones
  // at the front are dropped (and their events kept for reuse), the oldest unfinished one past the timeout is
  // named, and one within it is not.
  using Clock = cuda::PendingCollectives::Clock;
  using std::chrono::seconds;
  cuda::PendingCollectives pending;
  int events[4] = {};
  const Clock::time_point t0 = Clock::now();
  pending.add(&events[0], "ncclAllReduce #1 (f32 10 elements, rank 0 of 2)", t0);
  pending.add(&events[1], "ncclAllReduce #2 (f32 20 elements, rank 0 of 2)", t0 + seconds(1));
  pending.add(&events[2], "ncclAllReduce #3 (f32 30 elements, rank 0 of 2)", t0 + seconds(2));
  std::set<void*> finished = {&events[0], &events[2]};  // #3 done before #2 never happens; it is not dropped
  std::vector<void*> recycled;
  auto isFinished = [&](void* e) { return finished.count(e) > 0; };
  auto recycle = [&](void* e) { recycled.push_back(e); };

  CHECK_FALSE(pending.overdue(isFinished, recycle, t0 + seconds(5), seconds(10)).has_value());
  CHECK(recycled == std::vector<void*>{&events[0]});
  CHECK(pending.size() == 2);
  std::optional<std::string> late = pending.overdue(isFinished, recycle, t0 + seconds(12), seconds(10));
  REQUIRE(late.has_value());
  CHECK_MESSAGE(late->find("ncclAllReduce #2 (f32 20 elements, rank 0 of 2) did not complete within 10 s (waiting 11 s)") !=
                    std::string::npos,
                *late);
  finished.insert(&events[1]);
  CHECK_FALSE(pending.overdue(isFinished, recycle, t0 + seconds(60), seconds(10)).has_value());
  CHECK(pending.size() == 0);
  CHECK(recycled.size() == 3);
  pending.add(&events[3], "ncclAllReduce #4", t0 + seconds(60));
  CHECK(pending.takeEvents() == std::vector<void*>{&events[3]});
  CHECK(pending.size() == 0);
}

TEST_CASE("cuda backend: all-reduces run on NCCL over the GPU's buffers (a world of one)") {
  SKIP_WITHOUT_GPU();
  if (!cuda::ncclAvailable(DType::f32)) SMELT_SKIP_WITHOUT_GPU(cuda::ncclDescription());
  // A blocking all_reduce, and a start/wait pair with work between them; in f32 and f64. One process is a world of
  // one: the sum and the mean are the operand, through the same NCCL calls as N ranks.
  Graph graph = testing::parseOrFail(R"(graph @g(%x: f32[1000], %y: f64[3,33]) {
  %0 = all_reduce(%x) {op = "mean"} : f32[1000]
  %1 = mul(%x, %x) : f32[1000]
  %s = all_reduce_start(%1) {op = "sum", tag = 1} : f32[1000]
  %2 = add(%x, %0) : f32[1000]
  %w = all_reduce_wait(%s) {op = "sum", tag = 1} : f32[1000]
  %3 = sub(%w, %2) : f32[1000]
  %t = all_reduce_start(%y) {op = "mean", tag = 2} : f64[3,33]
  %v = all_reduce_wait(%t) {op = "mean", tag = 2} : f64[3,33]
  %4 = exp(%v) : f64[3,33]
  return a = %0, b = %3, c = %4
})");
  auto exe = Executable::compile(graph, {.device = "cuda", .fallback = false});
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  // On the device: nothing on the reference interpreter (a collective on the host would be).
  CHECK((*exe)->report().interpreted == 0);
  // Three runs: step by step, recorded into a CUDA graph, replayed.
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed() + static_cast<uint64_t>(run));
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    auto actual = (*exe)->run(feeds);
    REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
    for (size_t o = 0; o < actual->size(); ++o) {
      CHECK_MESSAGE(testing::compareTensors((*actual)[o], (*expected)[o], 1e-6).empty(), graph.outputs()[o].name);
    }
  }
}

TEST_CASE("cuda backend: cuBLASLt loads where the host keeps it, or says where it looked (no GPU needed)") {
  std::string description = cuda::cublasLtDescription();
  if (description.find("not found") != std::string::npos) {
    CHECK(description.find("nvidia/cublas/lib") != std::string::npos);
    SMELT_SKIP_WITHOUT_GPU(description);
  }
  CHECK_MESSAGE(description.starts_with("cuBLASLt 1"), description);
  MESSAGE(description);
}

TEST_CASE("cuda backend: a linear layer's bias and activation run inside cuBLASLt's GEMM") {
  SKIP_WITHOUT_GPU();
  // Each layer is one fused epilogue kernel (product, bias, activation), which the backend hands to cuBLASLt whole:
  // nothing is left to compile. x W + b, relu(x W^T + b) through gemm's transB, gelu_tanh(x W + b) with a [1, n] bias.
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    CAPTURE(dtype);
    const std::string text = fmt::format(R"(graph @g(%x: {0}[64,96], %w: {0}[96,80], %u: {0}[96,80], %v: {0}[80,96],
                %b: {0}[80], %c: {0}[1,80]) {{
  %0 = matmul(%x, %w) : {0}[64,80]
  %1 = add(%0, %b) : {0}[64,80]
  %2 = gemm(%x, %v, %b) {{trans_b = 1, alpha = 0.5, beta = 1.0}} : {0}[64,80]
  %3 = relu(%2) : {0}[64,80]
  %4 = matmul(%x, %u) : {0}[64,80]
  %5 = add(%4, %c) : {0}[64,80]
  %6 = gelu(%5) {{approximate = "tanh"}} : {0}[64,80]
  return bias = %1, relu = %3, gelu = %6
}})",
                                         dtype);
    Graph graph = testing::parseOrFail(text);
    auto exe = Executable::compile(graph, {.device = "cuda", .fallback = false});
    REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
    MESSAGE(dtype, ": ", (*exe)->report().blas, " products, ", (*exe)->report().kernels, " kernels");
    CHECK((*exe)->report().blas == 3);
    CHECK((*exe)->report().kernels == 0);
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    for (int run = 0; run < 3; ++run) {  // step by step, recorded, replayed
      auto actual = (*exe)->run(feeds);
      REQUIRE_MESSAGE(actual.ok(), (actual.ok() ? "" : actual.error().message()));
      for (size_t o = 0; o < actual->size(); ++o) {
        const double tolerance = std::string_view(dtype) == "f32" ? 1e-4 : 3e-2;
        CHECK_MESSAGE(testing::compareTensors((*actual)[o], (*expected)[o], tolerance).empty(),
                      graph.outputs()[o].name);
      }
    }
  }
}
