// NVRTC through dlopen: loads libnvrtc.so.13 (or .12) once per process, compiles CUDA C to
// PTX/CUBIN. Only the toolkit's <nvrtc.h> is used at build time (for the function types); nothing
// is linked.
#include "codegen/cuda/nvrtc_compiler.h"

#include "codegen/dynamic_library.h"
#include "codegen/log.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#if SMELT_HAVE_CUDA_TOOLKIT
#include <nvrtc.h>
#endif

namespace smelt::cuda {

std::string archForComputeCapability(int major, int minor, bool cubin) {
  return fmt::format("{}_{}{}", cubin ? "sm" : "compute", major, minor);
}

Expected<std::string> findCudaIncludeDir() {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root)
      candidates.push_back(fmt::format("{}/include", root));
  candidates.push_back("/usr/local/cuda/include");
#ifdef SMELT_CUDA_BUILD_INCLUDE_DIR
  candidates.push_back(SMELT_CUDA_BUILD_INCLUDE_DIR);
#endif
  std::error_code ec;
  for (const std::string& dir : candidates)
    if (fs::exists(fs::path(dir) / "cuda_fp16.h", ec)) return dir;
  return makeError(
      "CUDA headers (cuda_fp16.h) not found in {}; set CUDA_HOME or NvrtcOptions::include_dir",
      fmt::join(candidates, ", "));
}

#if SMELT_HAVE_CUDA_TOOLKIT

namespace {

/// The NVRTC entry points smelt uses, typed from <nvrtc.h>.
struct NvrtcApi {
  DynamicLibrary library;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) errorString = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) numSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) supportedArchs = nullptr;
  decltype(&::nvrtcCreateProgram) createProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) destroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) compileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) programLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) programLog = nullptr;
  decltype(&::nvrtcGetPTXSize) ptxSize = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubinSize = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
};

Expected<NvrtcApi*> loadNvrtc() {
  // Plain sonames first (ldconfig knows /usr/local/cuda/lib on these machines), then explicit paths
  // for installs that ldconfig does not know. 13 first: it is the CUDA these machines have.
  std::string home;
  if (const char* root = std::getenv("CUDA_HOME"); root && *root) home = root;
  auto library = DynamicLibrary::openFirst(
      {"libnvrtc.so.13", "libnvrtc.so.12",
       home.empty() ? std::string() : home + "/lib64/libnvrtc.so.13",
       home.empty() ? std::string() : home + "/lib64/libnvrtc.so.12",
       "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"});
  if (!library) return library.error().withContext("NVRTC not available");
  auto api = std::make_unique<NvrtcApi>();
  api->library = std::move(library).value();
  const DynamicLibrary& lib = api->library;
  for (Status s :
       {lib.bind(api->version, "nvrtcVersion"), lib.bind(api->errorString, "nvrtcGetErrorString"),
        lib.bind(api->numSupportedArchs, "nvrtcGetNumSupportedArchs"),
        lib.bind(api->supportedArchs, "nvrtcGetSupportedArchs"),
        lib.bind(api->createProgram, "nvrtcCreateProgram"),
        lib.bind(api->destroyProgram, "nvrtcDestroyProgram"),
        lib.bind(api->compileProgram, "nvrtcCompileProgram"),
        lib.bind(api->programLogSize, "nvrtcGetProgramLogSize"),
        lib.bind(api->programLog, "nvrtcGetProgramLog"),
        lib.bind(api->ptxSize, "nvrtcGetPTXSize"), lib.bind(api->ptx, "nvrtcGetPTX"),
        lib.bind(api->cubinSize, "nvrtcGetCUBINSize"), lib.bind(api->cubin, "nvrtcGetCUBIN")})
    if (!s.ok()) return s.error().withContext("NVRTC not available");
  api->library.leak();  // NVRTC stays loaded for the life of the process
  logger().debug("nvrtc: loaded {}", api->library.name());
  return api.release();
}

/// The process-wide NVRTC, loaded on first use (thread-safe static initialisation).
const Expected<NvrtcApi*>& nvrtc() {
  static const Expected<NvrtcApi*> api = loadNvrtc();
  return api;
}

/// Destroys an NVRTC program when the compile returns, whatever the path.
struct ProgramGuard {
  const NvrtcApi* api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api->destroyProgram(&program);
  }
};

std::string programLog(const NvrtcApi& api, nvrtcProgram program) {
  size_t size = 0;
  if (api.programLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api.programLog(program, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  while (!log.empty() && (log.back() == '\n' || log.back() == '\0')) log.pop_back();
  return log;
}

}  // namespace

bool nvrtcAvailable() { return nvrtc().ok(); }

Expected<NvrtcVersion> nvrtcVersion() {
  SMELT_TRY(const NvrtcApi* api, nvrtc());
  NvrtcVersion v;
  if (api->version(&v.major, &v.minor) != NVRTC_SUCCESS) return makeError("nvrtcVersion failed");
  return v;
}

Expected<std::vector<int>> nvrtcSupportedArchs() {
  SMELT_TRY(const NvrtcApi* api, nvrtc());
  int count = 0;
  if (api->numSupportedArchs(&count) != NVRTC_SUCCESS)
    return makeError("nvrtcGetNumSupportedArchs failed");
  std::vector<int> archs(count);
  if (count > 0 && api->supportedArchs(archs.data()) != NVRTC_SUCCESS)
    return makeError("nvrtcGetSupportedArchs failed");
  return archs;
}

Expected<NvrtcOutput> compileCuda(std::string_view source, const NvrtcOptions& options) {
  SMELT_TRY(const NvrtcApi* api, nvrtc());
  const auto start = std::chrono::steady_clock::now();

  // NVRTC needs the CUDA headers on its include path for cuda_fp16.h / cuda_bf16.h: it has no
  // default search list. A missing folder is not an error yet: kernels without them still compile.
  std::string include_dir = options.include_dir;
  if (include_dir.empty()) {
    if (auto found = findCudaIncludeDir()) include_dir = *found;
  }
  std::vector<std::string> args = {"--gpu-architecture=" + options.arch};
  if (!include_dir.empty()) args.push_back("-I" + include_dir);
  args.insert(args.end(), options.flags.begin(), options.flags.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  const std::string text(source);  // NVRTC wants a NUL-terminated string
  ProgramGuard guard{api};
  nvrtcResult rc = api->createProgram(&guard.program, text.c_str(), options.program_name.c_str(), 0,
                                      nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) return makeError("nvrtcCreateProgram failed: {}", api->errorString(rc));
  rc = api->compileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
  NvrtcOutput out;
  out.log = programLog(*api, guard.program);
  if (rc != NVRTC_SUCCESS) {
    std::string hint;
    if (include_dir.empty() && out.log.find("cuda_") != std::string::npos)
      hint = "\n(no CUDA include folder was found; set CUDA_HOME or NvrtcOptions::include_dir)";
    if (rc == NVRTC_ERROR_INVALID_OPTION) {
      if (auto archs = nvrtcSupportedArchs())
        hint += fmt::format("\n(supported archs: {})", fmt::join(*archs, " "));
    }
    return makeError("NVRTC could not compile {} for {} ({}):\n{}{}", options.program_name,
                     options.arch, api->errorString(rc), out.log, hint);
  }

  size_t size = 0;
  if (api->ptxSize(guard.program, &size) == NVRTC_SUCCESS && size > 1) {
    out.ptx.resize(size);
    if (api->ptx(guard.program, out.ptx.data()) != NVRTC_SUCCESS)
      return makeError("nvrtcGetPTX failed");
    out.ptx.resize(size - 1);  // PTX is NUL-terminated text
  }
  if (options.arch.starts_with("sm_") && api->cubinSize(guard.program, &size) == NVRTC_SUCCESS &&
      size > 0) {
    out.cubin.resize(size);
    if (api->cubin(guard.program, out.cubin.data()) != NVRTC_SUCCESS)
      return makeError("nvrtcGetCUBIN failed");
  }
  if (out.ptx.empty() && out.cubin.empty())
    return makeError("NVRTC compiled {} for {} but produced no code", options.program_name,
                     options.arch);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().debug("nvrtc: compiled {} for {} in {:.1f} ms ({} B PTX, {} B CUBIN)",
                 options.program_name, options.arch, out.compile_ms, out.ptx.size(),
                 out.cubin.size());
  return out;
}

#else  // !SMELT_HAVE_CUDA_TOOLKIT

namespace {
Error unavailable() {
  return Error("NVRTC not available: smelt was built without the CUDA toolkit headers (nvrtc.h)");
}
}  // namespace

bool nvrtcAvailable() { return false; }
Expected<NvrtcVersion> nvrtcVersion() { return unavailable(); }
Expected<std::vector<int>> nvrtcSupportedArchs() { return unavailable(); }
Expected<NvrtcOutput> compileCuda(std::string_view, const NvrtcOptions&) { return unavailable(); }

#endif

}  // namespace smelt::cuda
