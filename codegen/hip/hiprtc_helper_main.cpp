// smelt-hiprtc: compiles one HIP source (stdin) to an AMD code object (stdout or --output) in its
// own process. HIPRTC runs here, not in smelt, because it aborts the process for some archs and its
// LLVM cannot share a process with PoCL's (both register the same LLVM options and abort).
//   echo 'extern "C" __global__ void k(float* x) { x[0] = 1; }' | smelt-hiprtc --arch=gfx90a > k.co
// Exit codes (HelperExit in hiprtc_compiler.h): 0 code object written, 40 compile error (log on
// stderr), 41 usage, 42 HIPRTC not available, 43 arch not allowed, 44 I/O error. --version prints
// "MAJOR.MINOR LIBRARY". A crash inside HIPRTC ends the process by a signal, which smelt reports.
#include "codegen/hip/hip_arch.h"
#include "codegen/hip/hiprtc_compiler.h"
#include "codegen/dynamic_library.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if SMELT_HAVE_HIP
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hiprtc.h>
#endif

namespace {

using smelt::hip::HelperExit;

int fail(HelperExit code, const std::string& message) {
  std::fprintf(stderr, "smelt-hiprtc: %s\n", message.c_str());
  return static_cast<int>(code);
}

bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool readAll(int fd, std::string& out) {
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buffer, static_cast<size_t>(n));
  }
}

struct Args {
  std::string arch;
  std::string output;  // empty: the saved stdout
  std::string name = "smelt_kernel.hip";
  bool any_arch = false;
  bool version = false;
  std::vector<std::string> options;  // passed to hiprtcCompileProgram
};

bool parse(int argc, char** argv, Args& args, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string_view flag, std::string& slot) {
      if (!a.starts_with(flag) || a.size() <= flag.size() || a[flag.size()] != '=') return false;
      slot = std::string(a.substr(flag.size() + 1));
      return true;
    };
    if (a == "--") {
      for (++i; i < argc; ++i) args.options.emplace_back(argv[i]);
    } else if (a == "--version") {
      args.version = true;
    } else if (a == "--any-arch") {
      args.any_arch = true;
    } else if (!value("--arch", args.arch) && !value("--output", args.output) &&
               !value("--name", args.name)) {
      error = "unknown argument '" + std::string(a) + "'";
      return false;
    }
  }
  if (!args.version && args.arch.empty()) error = "--arch=gfxNNN is required";
  return error.empty();
}

#if SMELT_HAVE_HIP

/// The HIPRTC entry points the helper uses, typed from <hip/hiprtc.h>.
struct Hiprtc {
  smelt::DynamicLibrary library;
  decltype(&::hiprtcVersion) version = nullptr;
  decltype(&::hiprtcGetErrorString) errorString = nullptr;
  decltype(&::hiprtcCreateProgram) create = nullptr;
  decltype(&::hiprtcCompileProgram) compile = nullptr;
  decltype(&::hiprtcDestroyProgram) destroy = nullptr;
  decltype(&::hiprtcGetProgramLogSize) logSize = nullptr;
  decltype(&::hiprtcGetProgramLog) log = nullptr;
  decltype(&::hiprtcGetCodeSize) codeSize = nullptr;
  decltype(&::hiprtcGetCode) code = nullptr;
};

template <typename Fn>
bool bind(const smelt::DynamicLibrary& lib, Fn*& slot, const char* symbol, std::string& error) {
  auto f = lib.function<Fn>(symbol);
  if (!f)
    error = f.error().message();
  else
    slot = *f;
  return f.ok();
}

/// Loads HIPRTC: newer ROCm ships it as libhiprtc.so.7/.6; ROCm 5.2 (Debian 12) keeps it in
/// libamdhip64.
bool load(Hiprtc& h, std::string& error) {
  auto lib =
      smelt::DynamicLibrary::openFirst({"libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5"});
  if (!lib) {
    error = "HIP not installed (" + lib.error().message() +
            "); on Debian 12 install libamdhip64-5 and libamd-comgr2";
    return false;
  }
  h.library = std::move(lib).value();
  const smelt::DynamicLibrary& l = h.library;
  return bind(l, h.version, "hiprtcVersion", error) &&
         bind(l, h.errorString, "hiprtcGetErrorString", error) &&
         bind(l, h.create, "hiprtcCreateProgram", error) &&
         bind(l, h.compile, "hiprtcCompileProgram", error) &&
         bind(l, h.destroy, "hiprtcDestroyProgram", error) &&
         bind(l, h.logSize, "hiprtcGetProgramLogSize", error) &&
         bind(l, h.log, "hiprtcGetProgramLog", error) &&
         bind(l, h.codeSize, "hiprtcGetCodeSize", error) && bind(l, h.code, "hiprtcGetCode", error);
}

int run(const Args& args, int out_fd) {
  Hiprtc h;
  std::string error;
  if (!load(h, error)) return fail(HelperExit::kUnavailable, error);
  if (args.version) {
    int major = 0, minor = 0;
    if (h.version(&major, &minor) != HIPRTC_SUCCESS)
      return fail(HelperExit::kUnavailable, "hiprtcVersion failed");
    std::string text =
        std::to_string(major) + "." + std::to_string(minor) + " " + h.library.name() + "\n";
    return writeAll(out_fd, text.data(), text.size())
               ? 0
               : fail(HelperExit::kIoError, "cannot write stdout");
  }
  std::string source;
  if (!readAll(STDIN_FILENO, source))
    return fail(HelperExit::kIoError, std::string("reading stdin: ") + strerror(errno));

  hiprtcProgram program = nullptr;
  hiprtcResult rc = h.create(&program, source.c_str(), args.name.c_str(), 0, nullptr, nullptr);
  if (rc != HIPRTC_SUCCESS)
    return fail(HelperExit::kCompileError,
                std::string("hiprtcCreateProgram: ") + h.errorString(rc));
  std::vector<std::string> options = {"--gpu-architecture=" + args.arch};
  options.insert(options.end(), args.options.begin(), args.options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  rc = h.compile(program, static_cast<int>(argv.size()), argv.data());

  size_t log_size = 0;
  std::string log;
  if (h.logSize(program, &log_size) == HIPRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (h.log(program, log.data()) == HIPRTC_SUCCESS)
      log.resize(strnlen(log.data(), log.size()));
    else
      log.clear();
  }
  if (rc != HIPRTC_SUCCESS) {
    std::fprintf(stderr, "%s\n%s", h.errorString(rc), log.c_str());
    h.destroy(&program);
    return static_cast<int>(HelperExit::kCompileError);
  }
  if (!log.empty()) std::fprintf(stderr, "%s", log.c_str());  // warnings

  size_t code_size = 0;
  std::string code;
  if (h.codeSize(program, &code_size) == HIPRTC_SUCCESS && code_size > 0) {
    code.resize(code_size);
    if (h.code(program, code.data()) != HIPRTC_SUCCESS) code.clear();
  }
  h.destroy(&program);
  if (code.empty()) return fail(HelperExit::kCompileError, "HIPRTC produced no code object");

  int fd = out_fd;
  if (!args.output.empty()) {
    fd = open(args.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(HelperExit::kIoError, args.output + ": " + strerror(errno));
  }
  bool written = writeAll(fd, code.data(), code.size());
  if (fd != out_fd && close(fd) != 0) written = false;
  return written ? 0 : fail(HelperExit::kIoError, "cannot write the code object");
}

#else

int run(const Args&, int) {
  return fail(HelperExit::kUnavailable,
              "HIP not available: smelt was built without hip/hiprtc.h (libamdhip64-dev)");
}

#endif

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::string error;
  if (!parse(argc, argv, args, error))
    return fail(HelperExit::kUsage,
                error +
                    "\nusage: smelt-hiprtc --arch=gfxNNN [--output=FILE] [--name=NAME] "
                    "[--any-arch] [--version] [-- HIPRTC options] < source.hip");
  // The code object goes to the original stdout; anything HIPRTC or comgr prints goes to stderr,
  // so chatter can never corrupt the binary the parent reads.
  const int out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (out_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return fail(HelperExit::kIoError, "cannot set up stdout");
  if (!args.version && !args.any_arch) {
    if (smelt::Status s = smelt::hip::checkArch(args.arch); !s.ok())
      return fail(HelperExit::kArchNotAllowed, s.error().message());
  }
  return run(args, out_fd);
}
