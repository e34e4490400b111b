// DeviceBackend's defaults and backendFor(): the one place that maps a device kind to its hooks.
#include "runtime/exec/device_backend.h"

#include "codegen/cache/kernel_cache.h"
#include "codegen/log.h"
#include "codegen/lower_kernel.h"
#include "ir/support/env_switch.h"
#include "codegen/kernel_passes.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/device/fault_injection.h"
#include "runtime/exec/executable.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl/opencl_backend.h"
#endif
#include "runtime/cuda/cuda_backend.h"
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

Status DeviceBackend::allReduce(const KernelBufferArg&, const KernelBufferArg&, int64_t, DType, bool,
                                DeviceStream&) const {
  return makeError("{}: no collectives on the device's buffers", device_->id());
}

Expected<std::shared_ptr<DeviceKernels>> DeviceBackend::loadImage(const KernelImage& image, size_t kernels,
                                                                  KernelLoadInfo& info) const {
  bool reused = false;
  SMELT_TRY(std::shared_ptr<DeviceKernels> loaded, device_->loadKernels(image, &reused));
  if (reused) info.cached.assign(kernels, true);
  return loaded;
}

Expected<std::shared_ptr<DeviceKernels>> DeviceBackend::loadBuiltImage(
    size_t kernels, KernelLoadInfo& info, const std::function<Expected<KernelImage>()>& build) const {
  info.imageFromCache.reset();
  SMELT_TRY(KernelImage image, build());
  Expected<std::shared_ptr<DeviceKernels>> loaded = loadImage(image, kernels, info);
  if (loaded || !info.imageFromCache) return loaded;
  logger().warn("{}: the cached kernel image does not load ({}); building it again", device_->id(),
                loaded.error().message());
  KernelCache::global().evict(*info.imageFromCache);
  info.imageFromCache.reset();
  SMELT_TRY(image, build());
  return loadImage(image, kernels, info);
}

std::string_view gpuKernelPipeline() {
  static const bool enabled = !switchedOff("SMELT_BLOCKS");
  return enabled ? codegen::kGpuKernelPipeline : "";
}

std::string_view gpuLoweringPipeline() {
  return gpuKernelPipeline().empty() ? codegen::kLoweringKernelPipeline : codegen::kGpuLoweringKernelPipeline;
}

CacheKey imageKey(std::span<const codegen::Kernel* const> kernels, std::span<const std::string> symbols,
                  std::string backend, std::string target, std::string compilerVersion, std::string options) {
  CacheKey key;
  for (size_t k = 0; k < kernels.size(); ++k) key.kernel += fmt::format("kernel {}\n{}", symbols[k], printKernel(*kernels[k]));
  key.backend = std::move(backend);
  key.target = std::move(target);
  key.compilerVersion = std::move(compilerVersion);
  key.options = std::move(options);
  return key;
}

Expected<std::string> cachedImage(const CacheKey& key, size_t kernels, KernelLoadInfo& info,
                                  const std::function<Expected<std::string>()>& compile) {
  KernelCache& cache = KernelCache::global();
  if (std::optional<std::vector<std::byte>> cached = cache.lookup(key)) {
    info.cached.assign(kernels, true);
    info.imageFromCache = key;
    return std::string(reinterpret_cast<const char*>(cached->data()), cached->size());
  }
  SMELT_TRY(std::string image, compile());
  cache.store(key, std::as_bytes(std::span(image.data(), image.size())));
  info.cached.assign(kernels, false);
  return image;
}

LaunchShape DeviceBackend::shapeOf(const codegen::Kernel& kernel, const CompileOptions&) const {
  return LaunchShape{.points = kernel.domainSize(), .parallel = true, .threadsPerPoint = kernel.blockThreads,
                     .pointsPerThread = kernel.pointsPerThread};
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
    case DeviceKind::kCuda: return std::unique_ptr<DeviceBackend>(std::make_unique<CudaBackend>(device));
    case DeviceKind::kHip: return std::unique_ptr<DeviceBackend>(std::make_unique<HipBackend>(device));
  }
  return makeError("no backend for {} devices in this build", deviceKindName(device->kind()));
}

}  // namespace smelt
