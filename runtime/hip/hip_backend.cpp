// HipBackend (see hip_backend.h).
#include "runtime/hip/hip_backend.h"

#include "codegen/cache/cache_key.h"
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
  CacheKey key = imageKey(kernels, symbols, "hip", arch,
                          fmt::format("HIPRTC {}.{} hip {}", version.major, version.minor, cacheDigest(source)));
  KernelImage image{.format = KernelImage::Format::kAmdCodeObject};
  SMELT_TRY(image.data, cachedImage(key, kernels.size(), info, [&]() -> Expected<std::string> {
    SMELT_TRY(hip::HiprtcOutput out, hip::compileHip(source, {.arch = arch, .program_name = "smelt_graph.hip"}));
    if (!out.log.empty()) logger().debug("hip: HIPRTC log:\n{}", out.log);
    return std::move(out.code_object);
  }));
  info.source = std::move(source);
  info.target = arch;
  return image;
}

Expected<std::shared_ptr<DeviceKernels>> HipBackend::loadKernels(std::span<const codegen::Kernel* const> kernels,
                                                                std::span<const std::string> symbols,
                                                                KernelLoadInfo& info) const {
  return loadBuiltImage(kernels.size(), info, [&] { return hipKernelImage(kernels, symbols, hipTargetArch(), info); });
}

}  // namespace smelt
