// HipBackend (see hip_backend.h).
#include "runtime/hip/hip_backend.h"

#include "codegen/cache/kernel_cache.h"
#include "codegen/hip/hip_renderer.h"
#include "codegen/hip/hiprtc_compiler.h"
#include "codegen/log.h"

#include <fmt/format.h>

#include <cstdlib>

namespace smelt {

std::string hipTargetArch() {
  const char* env = std::getenv("SMELT_HIP_ARCH");
  return env && *env ? env : "gfx90a";
}

Expected<KernelImage> hipKernelImage(std::span<const codegen::Kernel* const> kernels,
                                     std::span<const std::string> symbols, const std::string& arch,
                                     KernelLoadInfo& info) {
  SMELT_CHECK_OK(hip::checkArch(arch));
  codegen::HipRenderer renderer;
  SMELT_TRY(std::string source, renderer.renderSource(kernels, symbols));
  SMELT_TRY(hip::HiprtcVersion version, hip::hiprtcVersion());
  CacheKey key;
  for (size_t k = 0; k < kernels.size(); ++k) key.kernel += fmt::format("kernel {}\n{}", symbols[k], printKernel(*kernels[k]));
  key.backend = "hip";
  key.target = arch;
  key.compilerVersion = fmt::format("HIPRTC {}.{} hip {}", version.major, version.minor, cacheDigest(source));
  KernelImage image{.format = KernelImage::Format::kAmdCodeObject};
  KernelCache& cache = KernelCache::global();
  if (std::optional<std::vector<std::byte>> cached = cache.lookup(key)) {
    image.data.assign(reinterpret_cast<const char*>(cached->data()), cached->size());
    info.cached.assign(kernels.size(), true);
  } else {
    SMELT_TRY(hip::HiprtcOutput out, hip::compileHip(source, {.arch = arch, .program_name = "smelt_graph.hip"}));
    if (!out.log.empty()) logger().debug("hip: HIPRTC log:\n{}", out.log);
    image.data = std::move(out.code_object);
    cache.store(key, std::as_bytes(std::span(image.data.data(), image.data.size())));
    info.cached.assign(kernels.size(), false);
  }
  info.source = std::move(source);
  info.target = arch;
  return image;
}

Expected<std::shared_ptr<DeviceKernels>> HipBackend::loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                                std::span<const std::string> symbols,
                                                                KernelLoadInfo& info) const {
  SMELT_TRY(KernelImage image, hipKernelImage(kernels, symbols, hipTargetArch(), info));
  bool reused = false;
  SMELT_TRY(std::shared_ptr<DeviceKernels> loaded, device_->loadKernels(image, &reused));
  if (reused) info.cached.assign(kernels.size(), true);
  return loaded;
}

}  // namespace smelt
