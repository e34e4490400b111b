// An OpenCL device (PoCL's CPU device by default) as a backend of the one executable (runtime/exec):
// every kernel rendered to OpenCL C 1.2 (codegen/opencl) in one program per compile, built once per
// process and device; f32/f64 products on CLBlast where it is installed, with generated epilogues;
// f64 kernels only where the device has cl_khr_fp64 (elsewhere those nodes run on the interpreter).
#pragma once

#include "runtime/exec/device_backend.h"

#include <string>

namespace smelt {

namespace opencl {
struct DeviceInfo;
}  // namespace opencl

/// The options every program is built with on `device`: OpenCL C 1.2, and correctly rounded f32
/// division and sqrt where the device has them (PoCL does).
std::string openClBuildOptions(const opencl::DeviceInfo& device);

class OpenClBackend final : public DeviceBackend {
 public:
  using DeviceBackend::DeviceBackend;
  std::string whyNotKernel(const Node& node) const override;
  std::optional<GemmPlan> planProduct(const Node& node, const CompileOptions& options) const override;
  Status runProduct(const GemmPlan& plan, const ProductBuffers& buffers, DeviceStream& stream) const override;
  std::string_view loweringPipeline() const override { return gpuLoweringPipeline(); }
  std::string_view kernelPipeline() const override { return gpuKernelPipeline(); }
  Expected<std::shared_ptr<DeviceKernels>> loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                       std::span<const std::string> symbols,
                                                       KernelLoadInfo& info) const override;
};

}  // namespace smelt
