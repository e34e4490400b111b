// CUDA C source -> PTX (or CUBIN) through NVRTC, loaded with dlopen so smelt never links libnvrtc.
//   auto out = smelt::cuda::compileCuda(source, {.arch = "compute_90"});
//   if (!out) log(out.error().message());   // holds NVRTC's compile log
//   else loadPtx(out->ptx);
#pragma once

#include "ir/support/expected.h"

#include <string>
#include <string_view>
#include <vector>

namespace smelt::cuda {

/// Options for one NVRTC compile.
struct NvrtcOptions {
  /// "compute_XY" gives PTX (JIT-compiled by the driver, forward compatible); "sm_XY" gives a CUBIN
  /// for exactly that GPU (faster to load). Suffixes "a"/"f" (sm_90a) are passed through.
  std::string arch = "compute_90";
  /// Extra NVRTC options, e.g. "--use_fast_math", "-DBLOCK=256".
  std::vector<std::string> flags;
  /// Folder with cuda_fp16.h / cuda_bf16.h. Empty: found at run time by findCudaIncludeDir().
  std::string include_dir;
  /// File name shown in the compile log.
  std::string program_name = "smelt_kernel.cu";
};

/// What a successful compile produced.
struct NvrtcOutput {
  std::string ptx;    ///< PTX text (empty only if NVRTC produced none)
  std::string cubin;  ///< the CUBIN ELF for an "sm_XY" arch, else empty
  std::string log;    ///< warnings; empty for a clean compile
  double compile_ms = 0;
};

/// NVRTC's version (nvrtcVersion), e.g. 13.0.
struct NvrtcVersion {
  int major = 0;
  int minor = 0;
};

/// Whether libnvrtc could be loaded (loads it on first call).
bool nvrtcAvailable();

/// The loaded NVRTC's version, or why NVRTC is unavailable ("NVRTC not available: ...").
Expected<NvrtcVersion> nvrtcVersion();

/// The virtual architectures this NVRTC accepts as compute capabilities times ten (75, 80, 90,
/// ...).
Expected<std::vector<int>> nvrtcSupportedArchs();

/// Compiles `source` (CUDA C++; kernels should be extern "C" so the names are not mangled).
/// A failed compile's error message names the program and arch and carries NVRTC's whole log.
/// Thread-safe: each call uses its own NVRTC program.
Expected<NvrtcOutput> compileCuda(std::string_view source, const NvrtcOptions& options = {});

/// The CUDA include folder (holding cuda_fp16.h): $CUDA_HOME/include, $CUDA_PATH/include,
/// /usr/local/cuda/include, then the toolkit's include folder seen at build time.
Expected<std::string> findCudaIncludeDir();

/// The NVRTC arch for a compute capability: (9, 0) -> "compute_90", or "sm_90" when `cubin`.
std::string archForComputeCapability(int major, int minor, bool cubin = false);

}  // namespace smelt::cuda
