// The CUDA and HIP backends build what they load without a GPU (compile-verified here, run where a
// GPU exists): a graph's kernels, as the executable lowers them, become one CUBIN for sm_90 (H100,
// H200), PTX for a GPU newer than NVRTC knows, and one AMD code object for gfx90a; a second build is
// answered by the kernel cache. Without NVRTC or HIPRTC the tests say so (and fail under
// SMELT_REQUIRE_GPU=1 for NVRTC).
#include "codegen/c_renderer.h"
#include "codegen/cache/kernel_cache.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/hip/hiprtc_compiler.h"
#include "codegen/lower_kernel.h"
#include "passes/pass_manager.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/hip/hip_backend.h"
#include "tests/support/gpu_required.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

namespace {

constexpr std::string_view kGraph = R"(graph @images(%x: f32[64,96], %b: f32[96], %h: f16[64,96]) {
  %0 = add(%x, %b) : f32[64,96]
  %1 = tanh(%0) : f32[64,96]
  %2 = softmax(%1) : f32[64,96]
  %3 = reduce_sum(%2) {axes = [0]} : f32[96]
  %4 = exp(%h) : f16[64,96]
  return y = %2, z = %3, e = %4
})";

/// The graph's kernels as the executable compiles them (default pipeline), named as it names them.
struct Kernels {
  std::vector<codegen::Kernel> kernels;
  std::vector<std::string> symbols;
  std::vector<const codegen::Kernel*> pointers() const {
    std::vector<const codegen::Kernel*> p;
    for (const codegen::Kernel& k : kernels) p.push_back(&k);
    return p;
  }
};

Kernels lowered() {
  Graph graph = testing::parseOrFail(kGraph);
  auto pm = PassManager::fromPipeline(std::string(kDefaultPipeline));
  REQUIRE(pm.ok());
  REQUIRE(pm->run(graph).ok());
  Kernels out;
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant" || !codegen::canLower(*node)) continue;
    auto kernel = codegen::lowerToKernel(graph, *node);
    REQUIRE(kernel.ok());
    out.symbols.push_back(codegen::CRenderer::symbolFor(*kernel, out.kernels.size()));
    out.kernels.push_back(std::move(*kernel));
  }
  REQUIRE(out.kernels.size() >= 3);
  return out;
}

/// Whether `data` is an ELF image for machine `machine` (EM_CUDA 190, EM_AMDGPU 224).
bool elfFor(const std::string& data, int machine) {
  if (data.size() < 20 || data.compare(0, 4, "\x7f" "ELF") != 0) return false;
  int found = static_cast<unsigned char>(data[18]) | (static_cast<unsigned char>(data[19]) << 8);
  return found == machine;
}

}  // namespace

TEST_CASE("gpu images: the CUDA backend builds a CUBIN for sm_90, PTX beyond NVRTC's archs, cached") {
  if (!cuda::nvrtcAvailable()) SMELT_SKIP_WITHOUT_GPU(cuda::nvrtcVersion().error().message());
  Kernels k = lowered();
  KernelLoadInfo info;
  auto cubin = cudaKernelImage(k.pointers(), k.symbols, 9, 0, info);
  REQUIRE_MESSAGE(cubin.ok(), (cubin.ok() ? "" : cubin.error().message()));
  CHECK(cubin->format == KernelImage::Format::kCubin);
  CHECK(elfFor(cubin->data, 190));
  CHECK(info.target == "sm_90");
  CHECK(info.source.find("extern \"C\" __global__") != std::string::npos);
  // A compute capability NVRTC has no CUBIN for (a future 9.9): PTX for the newest arch below it.
  KernelLoadInfo future;
  auto ptx = cudaKernelImage(k.pointers(), k.symbols, 9, 9, future);
  REQUIRE(ptx.ok());
  CHECK(ptx->format == KernelImage::Format::kPtx);
  CHECK(future.target == "compute_90");
  for (const std::string& s : k.symbols) CHECK_MESSAGE(ptx->data.find(".entry " + s) != std::string::npos, s);
  // The second build of the same kernels comes from the kernel cache, byte for byte.
  KernelLoadInfo again;
  auto cached = cudaKernelImage(k.pointers(), k.symbols, 9, 0, again);
  REQUIRE(cached.ok());
  CHECK(cached->data == cubin->data);
  CHECK(std::all_of(again.cached.begin(), again.cached.end(), [](bool hit) { return hit; }));
  CHECK(again.cached.size() == k.kernels.size());
}

TEST_CASE("gpu images: the HIP backend builds an AMD code object for gfx90a, cached") {
  auto version = hip::hiprtcVersion();
  if (!version.ok()) {
    MESSAGE("skipped: ", version.error().message());
    return;
  }
  Kernels k = lowered();
  KernelLoadInfo info;
  auto image = hipKernelImage(k.pointers(), k.symbols, "gfx90a", info);
  REQUIRE_MESSAGE(image.ok(), (image.ok() ? "" : image.error().message()));
  CHECK(image->format == KernelImage::Format::kAmdCodeObject);
  CHECK(elfFor(image->data, 224));
  CHECK(info.target == "gfx90a");
  KernelLoadInfo again;
  auto cached = hipKernelImage(k.pointers(), k.symbols, "gfx90a", again);
  REQUIRE(cached.ok());
  CHECK(cached->data == image->data);
  CHECK(std::all_of(again.cached.begin(), again.cached.end(), [](bool hit) { return hit; }));
  // An arch HIPRTC would crash on is refused before anything runs.
  KernelLoadInfo refused;
  auto bad = hipKernelImage(k.pointers(), k.symbols, "gfx942", refused);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("gfx90a") != std::string::npos);
}

namespace {

/// A device of any kind that can do nothing: enough for backendFor, which only looks at the kind.
class KindOnlyDevice final : public Device {
 public:
  explicit KindOnlyDevice(DeviceKind kind) {
    description_.kind = kind;
    description_.id = std::string(deviceKindName(kind)) + ":9";
  }
  const DeviceDescription& description() const override { return description_; }
  Expected<DeviceMemory> allocate(std::size_t) override { return makeError("no memory"); }
  void release(DeviceMemory) override {}
  Status fill(DeviceMemory, std::size_t, std::size_t, std::uint8_t, DeviceStream&) override { return makeError("no"); }
  Status copyIn(DeviceMemory, std::size_t, const void*, std::size_t, DeviceStream&) override { return makeError("no"); }
  Status copyOut(void*, DeviceMemory, std::size_t, std::size_t, DeviceStream&) override { return makeError("no"); }
  Status copy(DeviceMemory, std::size_t, DeviceMemory, std::size_t, std::size_t, DeviceStream&) override {
    return makeError("no");
  }
  DeviceStream& defaultStream() override { std::abort(); }
  Expected<std::unique_ptr<DeviceStream>> createStream() override { return makeError("no"); }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(const KernelImage&, bool*) override { return makeError("no"); }
  Status synchronize() override { return Status::success(); }

 private:
  DeviceDescription description_;
};

}  // namespace

TEST_CASE("gpu images: every device kind has a backend in this build (OpenCL where its headers were found)") {
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kOpenCl, DeviceKind::kCuda, DeviceKind::kHip}) {
    CAPTURE(deviceKindName(kind));
    auto backend = backendFor(std::make_shared<KindOnlyDevice>(kind));
#ifndef SMELT_HAVE_OPENCL
    if (kind == DeviceKind::kOpenCl) {
      CHECK_FALSE(backend.ok());
      continue;
    }
#endif
    REQUIRE_MESSAGE(backend.ok(), (backend.ok() ? "" : backend.error().message()));
    CHECK((*backend)->hostMemory() == (kind == DeviceKind::kCpu));
    CHECK((*backend)->ownStream() == (kind == DeviceKind::kCuda || kind == DeviceKind::kHip));
  }
}
