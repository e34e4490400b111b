// CudaBackend (see cuda_backend.h).
#include "runtime/cuda/cuda_backend.h"

#include "codegen/cache/cache_key.h"
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/log.h"
#include "ir/collective.h"
#include "ir/support/env_switch.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cublas_lt.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/nccl.h"
#include "runtime/exec/executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace smelt {

std::vector<std::string> cudaNvrtcFlags() {
  // NVRTC's other defaults already match the reference: IEEE division and sqrt (-prec-div,
  // -prec-sqrt), no flush to zero. Never --use_fast_math: the NaN tests are x != x.
  return {"--fmad=false"};
}

Expected<KernelImage> cudaKernelImage(std::span<const codegen::Kernel* const> kernels,
                                      std::span<const std::string> symbols, int ccMajor, int ccMinor,
                                      KernelLoadInfo& info) {
  SMELT_TRY(cuda::NvrtcVersion nvrtc, cuda::nvrtcVersion());
  SMELT_TRY(std::vector<int> archs, cuda::nvrtcSupportedArchs());
  const int cc = ccMajor * 10 + ccMinor;
  // A CUBIN for exactly this GPU where NVRTC knows it: nothing for the driver to JIT, and no PTX
  // version for an older driver to refuse. Else PTX for the newest virtual arch the GPU runs.
  const bool exact = std::find(archs.begin(), archs.end(), cc) != archs.end();
  int best = 0;
  for (int a : archs) {
    if (a <= cc) best = std::max(best, a);
  }
  if (best == 0) {
    return makeError("NVRTC {}.{} supports no arch at or below the GPU's sm_{} (supported: {})", nvrtc.major,
                     nvrtc.minor, cc, fmt::join(archs, " "));
  }
  const std::string arch = cuda::archForComputeCapability(best / 10, best % 10, exact);
  codegen::CudaRenderer renderer;
  SMELT_TRY(std::string source, renderer.renderSource(kernels, symbols));
  std::vector<std::string> flags = cudaNvrtcFlags();
  // The C renderers carry no version number: the rendered source's digest stands in for one (the
  // LLVM backend puts its renderer version in the same field), so a renderer change never loads a
  // stale image.
  CacheKey key = imageKey(kernels, symbols, "cuda", arch,
                          fmt::format("NVRTC {}.{} cuda-c {}", nvrtc.major, nvrtc.minor, cacheDigest(source)),
                          fmt::format("{}", fmt::join(flags, " ")));
  KernelImage image{.format = exact ? KernelImage::Format::kCubin : KernelImage::Format::kPtx};
  SMELT_TRY(image.data, cachedImage(key, kernels.size(), info, [&]() -> Expected<std::string> {
    SMELT_TRY(cuda::NvrtcOutput out,
              cuda::compileCuda(source, {.arch = arch, .flags = flags, .program_name = "smelt_graph.cu"}));
    if (!out.log.empty()) logger().debug("cuda: NVRTC log:\n{}", out.log);
    logger().debug("cuda: {} kernels compiled for {} ({}) in {:.1f} ms", kernels.size(), arch, key.digest(),
                   out.compile_ms);
    info.assembly = out.ptx;
    return exact ? std::move(out.cubin) : std::move(out.ptx);
  }));
  if (!exact && info.assembly.empty()) info.assembly = image.data;
  info.source = std::move(source);
  info.target = arch;
  return image;
}

namespace {

/// A convolution plan as the forward conv2d cuDNN describes it (see cudnn.h): a transposed
/// convolution is the data gradient of the conv2d from its output to its input.
cuda::CudnnConvolution cudnnConvolutionOf(const GemmPlan& plan) {
  const ConvGeometry& g = *plan.conv;
  cuda::CudnnConvolution c{.dtype = plan.dtype, .tf32 = plan.tf32, .n = g.n, .c = g.c, .h = g.h, .w = g.w, .o = g.o,
                           .oh = g.oh, .ow = g.ow, .kh = g.kh, .kw = g.kw, .padH = g.padTop, .padW = g.padLeft,
                           .strideH = g.strideH, .strideW = g.strideW, .dilationH = g.dilationH,
                           .dilationW = g.dilationW, .groups = g.groups};
  switch (g.kind) {
    case ConvGeometry::Forward: c.kind = cuda::CudnnConvolution::Forward; break;
    case ConvGeometry::WeightGrad: c.kind = cuda::CudnnConvolution::BackwardFilter; break;
    case ConvGeometry::Transposed:
      c.kind = cuda::CudnnConvolution::BackwardData;
      std::swap(c.c, c.o);
      std::swap(c.h, c.oh);
      std::swap(c.w, c.ow);
      break;
  }
  return c;
}

/// Whether linear layers' epilogues may go to cuBLASLt ($SMELT_CUBLASLT=0: never, to compare or bisect).
bool cublasLtEnabled() {
  static const bool off = switchedOff("SMELT_CUBLASLT");
  return !off;
}

/// The cuBLASLt call of a product plan and its fused epilogue, without addresses.
cuda::CublasLtGemm cublasLtCallOf(const GemmPlan& p, const VendorEpilogue& e) {
  using Activation = VendorEpilogue::Activation;
  using Epilogue = cuda::CublasLtGemm::Epilogue;
  return {.epilogue = e.activation == Activation::kRelu       ? Epilogue::kReluBias
                      : e.activation == Activation::kGeluTanh ? Epilogue::kGeluTanhBias
                                                              : Epilogue::kBias,
          .dtype = p.dtype, .transA = p.transA, .transB = p.transB, .m = p.m, .n = p.n, .k = p.k, .alpha = p.alpha,
          .tf32 = p.tf32};
}

}  // namespace

std::optional<GemmPlan> CudaBackend::planProduct(const Node& node, const CompileOptions& options) const {
  std::optional<GemmPlan> plan = planGemm(node, &cuda::cublasAvailable);
  if (!plan || plan->transposeB) return std::nullopt;
  plan->tf32 = options.tf32;
  // A linear layer's bias and relu or gelu applied by cuBLASLt as it writes the product, where its heuristic
  // has an algorithm for the shape: one launch, and the product is not read back by an epilogue kernel.
  if (auto fused = vendorEpilogueOf(node, *plan); fused && cublasLtEnabled()) {
    cuda::CublasLtGemm call = cublasLtCallOf(*plan, *fused);
    if (cuda::cublasLtSupports(cudaContextOf(*device_), call)) {
      plan->vendorEpilogue = fused;
      plan->epilogue = false;
      const auto element = static_cast<int64_t>(dtypeSize(plan->dtype));
      plan->columnElements = (cuda::kCublasLtWorkspaceBytes + element - 1) / element;  // its workspace
    }
  }
  // Convolutions in f16 and bf16 on cuDNN where it loads and expresses the window, with the workspace
  // it asks for; else layout kernels around a GEMM on cuBLAS (runtime/exec/device_convolution.cpp).
  if (plan->conv && cuda::cudnnAvailable() && cuda::cudnnPreferred(plan->dtype)) {
    Expected<size_t> workspace = cuda::cudnnWorkspace(cudaContextOf(*device_), cudnnConvolutionOf(*plan));
    if (workspace.ok()) {
      plan->nativeConvolution = true;
      const auto element = static_cast<int64_t>(dtypeSize(plan->dtype));
      plan->columnElements = (static_cast<int64_t>(*workspace) + element - 1) / element;
    } else {
      logger().debug("{}: {}; im2col and cuBLAS instead", node.opName(), workspace.error().message());
    }
  }
  return plan;
}

Status CudaBackend::runProduct(const GemmPlan& p, const ProductBuffers& buffers, DeviceStream& stream) const {
  auto address = [&](const KernelBufferArg& arg) {
    return cudaAddressOf(arg.memory) + static_cast<std::uint64_t>(arg.byteOffset);
  };
  if (p.nativeConvolution) {
    const auto workspace = static_cast<size_t>(p.columnElements) * dtypeSize(p.dtype);
    return cuda::cudnnConvolve(cudaContextOf(*device_), cudaStreamOf(stream), cudnnConvolutionOf(p),
                               address(buffers.operands[p.operandA]), address(buffers.operands[p.operandB]),
                               address(buffers.product), address(buffers.scratch), workspace);
  }
  if (p.vendorEpilogue) {
    cuda::CublasLtGemm call = cublasLtCallOf(p, *p.vendorEpilogue);
    call.a = address(buffers.operands[p.operandA]);
    call.b = address(buffers.operands[p.operandB]);
    call.c = address(buffers.product);
    call.bias = address(buffers.operands[p.vendorEpilogue->bias]);
    call.workspace = address(buffers.scratch);
    return cuda::cublasLtGemm(cudaContextOf(*device_), cudaStreamOf(stream), call);
  }
  cuda::CublasGemm call{.dtype = p.dtype, .transA = p.transA, .transB = p.transB, .m = p.m, .n = p.n, .k = p.k,
                        .alpha = p.alpha, .a = address(buffers.operands[p.operandA]),
                        .b = address(buffers.operands[p.operandB]), .c = address(buffers.product),
                        .lda = p.transA ? p.m : p.k, .ldb = p.transB ? p.k : p.n, .ldc = p.n, .batch = p.batch,
                        .strideA = p.strideA, .strideB = p.strideB, .strideC = p.strideC, .tf32 = p.tf32};
  return cuda::cublasGemm(cudaContextOf(*device_), cudaStreamOf(stream), call);
}

bool CudaBackend::allReducesOnDevice(DType dtype) const {
  static const bool off = switchedOff("SMELT_NCCL");
  return !off && cuda::ncclAvailable(dtype);
}

Status CudaBackend::allReduce(const KernelBufferArg& send, const KernelBufferArg& recv, int64_t count, DType dtype,
                              bool mean, DeviceStream& stream) const {
  // The process's collective group (MPI's ranks), or a world of one: the same NCCL path either way.
  const std::shared_ptr<CollectiveGroup>& group = collectiveGroup();
  const int rank = group ? group->rank() : 0, size = group ? group->size() : 1;
  const double timeout = group ? group->timeoutSeconds() : kDefaultCollectiveTimeoutSeconds;
  cuda::Context& context = cudaContextOf(*device_);
  SMELT_TRY(cuda::NcclCommunicator * comm,
            cuda::ncclCommunicator(context, rank, size, group.get(), timeout, [&]() -> Expected<cuda::NcclUniqueId> {
              // Rank 0 makes the id and broadcasts it; every rank takes part, in the same order.
              cuda::NcclUniqueId id{};
              if (rank == 0) {
                SMELT_TRY(id, cuda::ncclNewUniqueId());
              }
              if (size == 1) return id;
              Tensor bytes(TensorType{DType::u8, {static_cast<int64_t>(id.size())}});
              std::memcpy(bytes.raw(), id.data(), id.size());
              if (Status sent = group->broadcast(bytes, 0); !sent.ok()) {
                return sent.error().withContext("sharing NCCL's unique id from rank 0");
              }
              std::memcpy(id.data(), bytes.raw(), id.size());
              return id;
            }));
  auto address = [](const KernelBufferArg& arg) {
    return cudaAddressOf(arg.memory) + static_cast<std::uint64_t>(arg.byteOffset);
  };
  return cuda::ncclAllReduce(
      context, *comm, cudaStreamOf(stream),
      {.dtype = dtype, .count = count, .send = address(send), .recv = address(recv), .mean = mean});
}

Status CudaBackend::collectivesHealthy() const { return cuda::ncclHealthy(cudaContextOf(*device_)); }

Expected<std::shared_ptr<DeviceKernels>> CudaBackend::loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                                 std::span<const std::string> symbols,
                                                                 KernelLoadInfo& info) const {
  SMELT_TRY(cuda::DeviceInfo gpu, cuda::deviceInfo(device_->description().ordinal));
  SMELT_TRY(cuda::NvrtcVersion nvrtc, cuda::nvrtcVersion());
  // An image of a newer CUDA than the driver would fail in cuModuleLoadDataEx: say why up front.
  SMELT_CHECK_OK(cuda::checkPtxCompatible(nvrtc.major));
  return loadBuiltImage(kernels.size(), info,
                        [&] { return cudaKernelImage(kernels, symbols, gpu.cc_major, gpu.cc_minor, info); });
}

}  // namespace smelt
