// OpenClBackend (see opencl_backend.h).
#include "runtime/opencl/opencl_backend.h"

#include "codegen/opencl/opencl_renderer.h"
#include "runtime/opencl/clblast.h"
#include "runtime/opencl/opencl_device.h"

namespace smelt {

std::string openClBuildOptions(const opencl::DeviceInfo& device) {
  // Never fast math: NaN checks (x != x) and NaN-propagating min/max depend on IEEE semantics.
  std::string options = "-cl-std=CL1.2";
  // Correctly rounded f32 division and sqrt, as the reference computes them; the option is an error
  // on devices that cannot (CL_INVALID_BUILD_OPTIONS), which then get OpenCL's 2.5-ulp division.
  cl_device_fp_config config = 0;
  if (clGetDeviceInfo(device.id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config, nullptr) == CL_SUCCESS &&
      (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0) {
    options += " -cl-fp32-correctly-rounded-divide-sqrt";
  }
  return options;
}

namespace {

bool lacksDtype(DType dtype, const Device& device) { return dtype == DType::f64 && !device.description().fp64; }

}  // namespace

std::string OpenClBackend::whyNotKernel(const Node& node) const { return whyNotCommon(node, &lacksDtype); }

std::optional<GemmPlan> OpenClBackend::planProduct(const Node& node, const CompileOptions&) const {
  std::optional<GemmPlan> plan = planGemm(node, &opencl::clblastAvailable);
  // Convolutions run as layout kernels around a GEMM (runtime/exec/device_convolution.cpp), and f64
  // only where the device has doubles.
  if (!plan || lacksDtype(plan->dtype, *device_)) return std::nullopt;
  return plan;
}

Status OpenClBackend::runProduct(const GemmPlan& p, const ProductBuffers& buffers, DeviceStream& stream) const {
  auto elements = [&](const KernelBufferArg& arg) {
    return arg.byteOffset / static_cast<int64_t>(dtypeSize(p.dtype));
  };
  const KernelBufferArg& a = buffers.operands[p.operandA];
  const KernelBufferArg& b = buffers.operands[p.operandB];
  // One call per batch item.
  for (int64_t i = 0; i < p.batch; ++i) {
    opencl::GemmCall call{.dtype = p.dtype, .transA = p.transA, .transB = p.transB, .m = p.m, .n = p.n, .k = p.k,
                          .alpha = p.alpha, .a = clMemOf(a.memory), .b = clMemOf(b.memory),
                          .c = clMemOf(buffers.product.memory), .offsetA = elements(a) + i * p.strideA,
                          .lda = p.transA ? p.m : p.k, .offsetB = elements(b) + i * p.strideB,
                          .ldb = p.transB ? p.k : p.n, .offsetC = elements(buffers.product) + i * p.strideC,
                          .ldc = p.n};
    SMELT_CHECK_OK(opencl::clblastGemm(openClQueue(stream), call));
  }
  return Status::success();
}

Expected<std::shared_ptr<DeviceKernels>> OpenClBackend::loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                                   std::span<const std::string> symbols,
                                                                   KernelLoadInfo& info) const {
  const opencl::DeviceInfo& described = openClContext(*device_).device();
  codegen::OpenClRenderer renderer(described.fp64);
  SMELT_TRY(std::string source, renderer.renderSource(kernels, symbols));
  KernelImage image{.format = KernelImage::Format::kOpenClSource, .data = std::move(source),
                    .options = openClBuildOptions(described)};
  source = image.data;
  info.cached.assign(kernels.size(), false);
  info.source = std::move(source);
  info.target = described.opencl_c_version;
  return loadImage(image, kernels.size(), info);
}

}  // namespace smelt
