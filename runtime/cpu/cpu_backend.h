// The CPU as a backend of the one executable (runtime/exec): kernels rendered to LLVM IR and
// JIT-compiled (through the kernel cache), each run over the thread pool; products on the CPU's BLAS
// (oneDNN, OpenBLAS) with generated epilogues; ops' own host implementations where they have one; host
// tensors bound in place. Without LLVM in the build every kernel node runs on the reference
// interpreter instead.
#pragma once

#include "codegen/kernel_passes.h"
#include "runtime/exec/device_backend.h"

namespace smelt {

class CpuBackend final : public DeviceBackend {
 public:
  using DeviceBackend::DeviceBackend;
  bool hostMemory() const override { return true; }
  LowPrecisionProducts lowPrecisionProducts(bool vendorLibraries) const override;
  std::string whyNotKernel(const Node& node) const override;
  std::optional<GemmPlan> planProduct(const Node& node, const CompileOptions& options) const override;
  Status runProduct(const GemmPlan& plan, const ProductBuffers& buffers, DeviceStream& stream) const override;
  std::string_view kernelPipeline() const override { return codegen::kCpuKernelPipeline; }
  LaunchShape shapeOf(const codegen::Kernel& kernel, const CompileOptions& options) const override;
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                       std::span<const std::string> symbols,
                                                       KernelLoadInfo& info) const override;
};

}  // namespace smelt
