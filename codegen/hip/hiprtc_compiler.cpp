// compileHip: finds the smelt-hiprtc helper, runs it with the source on stdin and a private TMPDIR,
// and turns its exit code, signal or timeout into a Status.
#include "codegen/hip/hiprtc_compiler.h"

#include "codegen/hip/subprocess.h"
#include "codegen/log.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace smelt::hip {

namespace {

namespace fs = std::filesystem;

bool isExecutable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

/// The last `limit` bytes of a helper's stderr: enough to see why it failed.
std::string tail(const std::string& text, size_t limit = 4000) {
  std::string t = text.size() > limit ? "..." + text.substr(text.size() - limit) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

/// A private temporary folder for one helper run, removed afterwards. comgr writes its
/// /tmp/comgr-XXXXXX folders under $TMPDIR and leaks them when it crashes; this sweeps them up.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/smelt-hiprtc-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Runs the helper with `args`; common to compiles and --version.
Expected<ProcessResult> runHelper(const std::string& helper_path, std::vector<std::string> args,
                                  std::string input, std::chrono::milliseconds timeout,
                                  const ScratchDir& scratch) {
  std::string helper = helper_path;
  if (helper.empty()) {
    SMELT_TRY(helper, findHiprtcHelper());
  }
  ProcessSpec spec;
  spec.argv.push_back(helper);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.input = std::move(input);
  spec.timeout = timeout;
  if (!scratch.path().empty()) spec.environment.emplace_back("TMPDIR", scratch.path());
  return runProcess(spec);
}

}  // namespace

Expected<std::string> findHiprtcHelper() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("SMELT_HIPRTC_HELPER"); env && *env) {
    if (isExecutable(env)) return std::string(env);
    return makeError("SMELT_HIPRTC_HELPER={} is not an executable file", env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::string next_to_self = (self.parent_path() / "smelt-hiprtc").string();
    if (isExecutable(next_to_self)) return next_to_self;
    tried.push_back(next_to_self);
  }
#ifdef SMELT_HIPRTC_HELPER_BUILD_PATH
  if (isExecutable(SMELT_HIPRTC_HELPER_BUILD_PATH))
    return std::string(SMELT_HIPRTC_HELPER_BUILD_PATH);
  tried.push_back(SMELT_HIPRTC_HELPER_BUILD_PATH);
#endif
  return makeError("the smelt-hiprtc helper was not found (looked at {}); set SMELT_HIPRTC_HELPER",
                   fmt::join(tried, ", "));
}

Expected<HiprtcOutput> compileHip(std::string_view source, const HiprtcOptions& options) {
  // Refuse unknown archs here too: cheaper than a process, and the error is the same.
  if (!options.skip_allowlist) SMELT_CHECK_OK(checkArch(options.arch));
  std::vector<std::string> args = {"--arch=" + options.arch, "--name=" + options.program_name};
  if (options.skip_allowlist) args.push_back("--any-arch");
  if (!options.flags.empty()) {
    args.push_back("--");
    args.insert(args.end(), options.flags.begin(), options.flags.end());
  }
  ScratchDir scratch;
  SMELT_TRY(ProcessResult r, runHelper(options.helper_path, std::move(args), std::string(source),
                                       options.timeout, scratch));
  if (r.timed_out)
    return makeError("HIPRTC timed out after {} ms compiling {} for {}", options.timeout.count(),
                     options.program_name, options.arch);
  if (r.signal != 0) {
    const std::string detail = tail(r.err);
    return makeError(
        "HIPRTC aborted compiling for {} (signal {}, {}){}{}", options.arch, r.signal,
        sigabbrev_np(r.signal) ? fmt::format("SIG{}", sigabbrev_np(r.signal)) : "unknown",
        detail.empty() ? "" : ": ", detail);
  }
  switch (static_cast<HelperExit>(r.exit_code)) {
    case HelperExit::kOk:
      break;
    case HelperExit::kCompileError:
      return makeError("HIPRTC could not compile {} for {}:\n{}", options.program_name,
                       options.arch, tail(r.err, 64000));
    case HelperExit::kUnavailable:
      return makeError("HIPRTC not available: {}", tail(r.err));
    case HelperExit::kArchNotAllowed:
      return makeError("{}", tail(r.err));
    case HelperExit::kUsage:
    case HelperExit::kIoError:
      return makeError("smelt-hiprtc failed (exit code {}): {}", r.exit_code, tail(r.err));
    default: {
      // Not one of the helper's own codes: something ended it early (under a sanitizer, a SEGV in
      // HIPRTC is an exit code instead of a signal).
      const std::string detail = tail(r.err);
      return makeError("HIPRTC aborted compiling for {} (exit code {}){}{}", options.arch,
                       r.exit_code, detail.empty() ? "" : ": ", detail);
    }
  }
  // An AMD code object is an ELF file; anything else means the helper's stdout was polluted.
  if (r.out.size() < 20 || r.out.compare(0, 4, "\177ELF") != 0)
    return makeError("smelt-hiprtc returned {} bytes that are not an ELF code object",
                     r.out.size());
  HiprtcOutput out;
  out.code_object = std::move(r.out);
  out.log = tail(r.err, 64000);
  out.compile_ms = r.wall_ms;
  logger().debug("hiprtc: compiled {} for {} in {:.1f} ms ({} B code object)", options.program_name,
                 options.arch, out.compile_ms, out.code_object.size());
  return out;
}

Expected<HiprtcVersion> hiprtcVersion(const std::string& helper_path) {
  ScratchDir scratch;
  SMELT_TRY(ProcessResult r,
            runHelper(helper_path, {"--version"}, {}, std::chrono::milliseconds(30000), scratch));
  if (r.exit_code == static_cast<int>(HelperExit::kUnavailable))
    return makeError("HIPRTC not available: {}", tail(r.err));
  HiprtcVersion v;
  char library[256] = {};
  if (r.exit_code != 0 || sscanf(r.out.c_str(), "%d.%d %255s", &v.major, &v.minor, library) != 3)
    return makeError("smelt-hiprtc --version failed (exit code {}, signal {}): {}", r.exit_code,
                     r.signal, tail(r.err));
  v.library = library;
  return v;
}

}  // namespace smelt::hip
