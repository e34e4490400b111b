// A CUDA GPU as a backend of the one executable (runtime/exec): every kernel rendered to CUDA C
// (codegen/cuda) in one source per compile, compiled by NVRTC into a CUBIN for the GPU's exact
// architecture (no driver JIT) or, for a GPU newer than NVRTC knows, PTX for the newest virtual
// architecture below it; kept in the kernel cache and loaded once per process and device. Each
// executable runs on a stream of its own, so waiting for a run waits for it alone. Products go to cuBLAS,
// convolutions to cuDNN, the data-parallel all-reduces to NCCL, each where it loads.
#pragma once

#include "runtime/exec/device_backend.h"

#include <vector>

namespace smelt {

/// The NVRTC options every CUDA source is compiled with (besides the arch): IEEE semantics as the
/// reference computes them, so no FMA contraction (NVRTC's default contracts a*b+c).
std::vector<std::string> cudaNvrtcFlags();

/// The image for `kernels` on a GPU of compute capability major.minor, through the kernel cache:
/// what the backend loads. Needs NVRTC but no driver or GPU (the tests build it here).
Expected<KernelImage> cudaKernelImage(std::span<const codegen::Kernel* const> kernels,
                                      std::span<const std::string> symbols, int ccMajor, int ccMinor,
                                      KernelLoadInfo& info);

class CudaBackend final : public DeviceBackend {
 public:
  using DeviceBackend::DeviceBackend;
  bool ownStream() const override { return true; }
  std::string whyNotKernel(const Node& node) const override { return whyNotCommon(node); }
  std::string_view loweringPipeline() const override { return gpuLoweringPipeline(); }
  std::string_view kernelPipeline() const override { return gpuKernelPipeline(); }
  /// matmul, gemm and their batches on cuBLAS (runtime/cuda/cublas.h) when it loads, a linear layer's bias and
  /// relu or gelu fused into cuBLASLt's GEMM (cublas_lt.h) where its heuristic has an algorithm for the shape, and
  /// convolutions on cuDNN (cudnn.h) in f16 and bf16 (in f32 with SMELT_CUDNN=1), else layout kernels around cuBLAS.
  std::optional<GemmPlan> planProduct(const Node& node, const CompileOptions& options) const override;
  Status runProduct(const GemmPlan& plan, const ProductBuffers& buffers, DeviceStream& stream) const override;
  /// All-reduces on NCCL (runtime/cuda/nccl.h) when it loads, unless $SMELT_NCCL is 0; the communicator is
  /// bootstrapped through the collective group (rank 0's unique id broadcast), a world of one without one.
  bool allReducesOnDevice(DType dtype) const override;
  Status allReduce(const KernelBufferArg& send, const KernelBufferArg& recv, int64_t count, DType dtype, bool mean,
                   DeviceStream& stream) const override;
  Status collectivesHealthy() const override;
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                       std::span<const std::string> symbols,
                                                       KernelLoadInfo& info) const override;
};

}  // namespace smelt
