// An AMD GPU as a backend of the one executable (runtime/exec): every kernel rendered to HIP (the
// CUDA dialect, codegen/hip) in one source per compile, compiled by HIPRTC in its helper process
// into a code object for the GPU's architecture ($SMELT_HIP_ARCH, else gfx90a), kept in the kernel
// cache and loaded once per process and device. Like CUDA, each executable runs on its own stream.
#pragma once

#include "runtime/exec/device_backend.h"

namespace smelt {

/// The code object for `kernels` on AMD architecture `arch`, through the kernel cache: what the
/// backend loads. Needs HIPRTC but no GPU (the tests build it here).
Expected<KernelImage> hipKernelImage(std::span<const codegen::Kernel* const> kernels,
                                     std::span<const std::string> symbols, const std::string& arch,
                                     KernelLoadInfo& info);

/// The architecture HIP kernels are built for: $SMELT_HIP_ARCH, else gfx90a.
std::string hipTargetArch();

class HipBackend final : public DeviceBackend {
 public:
  using DeviceBackend::DeviceBackend;
  bool ownStream() const override { return true; }
  std::string_view loweringPipeline() const override { return gpuLoweringPipeline(); }
  std::string_view kernelPipeline() const override { return gpuKernelPipeline(); }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                       std::span<const std::string> symbols,
                                                       KernelLoadInfo& info) const override;
};

}  // namespace smelt
