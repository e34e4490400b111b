// HIP source -> AMD GPU code object through HIPRTC, compiled in the smelt-hiprtc helper process:
// HIPRTC 5.2 aborts the process for some archs, and its LLVM cannot share a process with PoCL's.
//   auto out = smelt::hip::compileHip(source, {.arch = "gfx90a"});
//   if (!out) log(out.error().message());   // the compile log, or "HIPRTC aborted compiling for
//   ..." else hipModuleLoadData(..., out->code_object.data());
#pragma once

#include "codegen/hip/hip_arch.h"
#include "ir/support/expected.h"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace smelt::hip {

/// Exit codes of the smelt-hiprtc helper. Any other status means it did not finish on its own
/// terms (a signal, or a sanitizer's exit code: ASan exits 1, LSan 23), reported as a crash.
enum class HelperExit : int {
  kOk = 0,
  kCompileError = 40,    ///< HIPRTC rejected the source; the log is on stderr
  kUsage = 41,           ///< bad command line
  kUnavailable = 42,     ///< no HIPRTC library could be loaded
  kArchNotAllowed = 43,  ///< the arch is not in kAllowedArchs
  kIoError = 44,
};

/// Options for one HIPRTC compile.
struct HiprtcOptions {
  /// An allowlisted arch (kAllowedArchs), optionally with features: "gfx90a:xnack-".
  std::string arch = "gfx90a";
  /// Extra HIPRTC options, e.g. "-O3", "-DBLOCK=256".
  std::vector<std::string> flags;
  /// Name shown in the compile log.
  std::string program_name = "smelt_kernel.hip";
  /// The helper is killed after this long.
  std::chrono::milliseconds timeout{60000};
  /// The helper's path; empty: findHiprtcHelper().
  std::string helper_path;
  /// Skips the allowlist (in smelt and in the helper), for probing new archs: a crash then comes
  /// back as an error, never takes smelt down.
  bool skip_allowlist = false;
};

/// What a successful compile produced.
struct HiprtcOutput {
  std::string code_object;  ///< an ELF64 EM_AMDGPU (224) image for hipModuleLoadData
  std::string log;          ///< warnings; empty for a clean compile
  double compile_ms = 0;    ///< wall time of the helper process
};

/// HIPRTC's version and the library the helper loaded.
struct HiprtcVersion {
  int major = 0;
  int minor = 0;
  std::string library;  ///< "libamdhip64.so.5"
};

/// The smelt-hiprtc executable: $SMELT_HIPRTC_HELPER, then next to the running executable
/// (/proc/self/exe), then the build tree's copy.
Expected<std::string> findHiprtcHelper();

/// Compiles `source` (HIP C++; kernels extern "C") for options.arch in a helper process. Errors:
/// an arch outside the allowlist, HIP not installed, the compile log, a crash ("HIPRTC aborted
/// compiling for gfx942 (signal 6, SIGABRT)") or a timeout. Thread-safe.
Expected<HiprtcOutput> compileHip(std::string_view source, const HiprtcOptions& options = {});

/// HIPRTC's version, asked of the helper (so it also tells whether HIP is installed).
Expected<HiprtcVersion> hiprtcVersion(const std::string& helper_path = {});

}  // namespace smelt::hip
