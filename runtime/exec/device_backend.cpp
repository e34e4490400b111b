// DeviceBackend's defaults and backendFor(): the one place that maps a device kind to its hooks.
#include "runtime/exec/device_backend.h"

#include "codegen/lower_kernel.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/device/fault_injection.h"
#include "runtime/exec/executable.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl/opencl_backend.h"
#endif
#ifdef SMELT_HAVE_CUDA
#include "runtime/cuda/cuda_backend.h"
#endif
#include "runtime/hip/hip_backend.h"

#include <fmt/format.h>

#include <set>

namespace smelt {

namespace {

/// Every dtype `node` computes in: its operands' and results', and for a fused kernel its body's.
void collectDtypes(const Node& node, std::set<DType>& dtypes) {
  for (const Value* v : node.operands()) dtypes.insert(v->type().dtype);
  for (const Value* v : node.results()) dtypes.insert(v->type().dtype);
  if (node.opName() == "fused") {
    for (const auto& inner : std::get<GraphRef>(node.attrs().at("body"))->nodes()) collectDtypes(*inner, dtypes);
  }
}

}  // namespace

std::string DeviceBackend::whyNotCommon(const Node& node, bool (*lacks)(DType, const Device&)) const {
  if (!codegen::canLower(node)) return "no kernel lowering";
  if (faultInjector().unsupported(node.opName())) return "unsupported (SMELT_FAULTS)";
  std::set<DType> dtypes;
  collectDtypes(node, dtypes);
  for (DType dtype : dtypes) {
    if (lacks && lacks(dtype, *device_)) return fmt::format("{}, which the device lacks,", dtypeName(dtype));
    if (faultInjector().unsupported(dtypeName(dtype))) return fmt::format("{} unsupported (SMELT_FAULTS)", dtypeName(dtype));
  }
  return "";
}

std::string DeviceBackend::whyNotKernel(const Node& node) const { return whyNotCommon(node); }

std::optional<GemmPlan> DeviceBackend::planProduct(const Node&, const CompileOptions&) const { return std::nullopt; }

Status DeviceBackend::runProduct(const GemmPlan&, const ProductBuffers&, DeviceStream&) const {
  return makeError("{}: no vendor products on this device", device_->id());
}

LaunchShape DeviceBackend::shapeOf(const codegen::Kernel& kernel, const CompileOptions&) const {
  return LaunchShape{.points = kernel.domainSize(), .parallel = true};
}

Expected<std::unique_ptr<DeviceBackend>> backendFor(const std::shared_ptr<Device>& device) {
  switch (device->kind()) {
    case DeviceKind::kCpu: return std::unique_ptr<DeviceBackend>(std::make_unique<CpuBackend>(device));
    case DeviceKind::kOpenCl:
#ifdef SMELT_HAVE_OPENCL
      return std::unique_ptr<DeviceBackend>(std::make_unique<OpenClBackend>(device));
#else
      break;
#endif
    case DeviceKind::kCuda:
#ifdef SMELT_HAVE_CUDA
      return std::unique_ptr<DeviceBackend>(std::make_unique<CudaBackend>(device));
#else
      break;
#endif
    case DeviceKind::kHip: return std::unique_ptr<DeviceBackend>(std::make_unique<HipBackend>(device));
  }
  return makeError("no backend for {} devices in this build", deviceKindName(device->kind()));
}

}  // namespace smelt
