// HIPRTC through the smelt-hiprtc helper: code objects for the allowlisted archs, the allowlist, a
// crash and a hang in the helper as errors, and compile errors with their log.
#include "codegen/hip/hiprtc_compiler.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace smelt;
using namespace smelt::hip;

namespace {

// __half and __hmul come from HIPRTC's own preamble: including hip_fp16.h breaks on ROCm 5.2.
constexpr const char* kHipHalfKernel = R"(
extern "C" __global__ void axpy_half(const __half* x, __half* y, __half a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);
}
)";

/// Skips (with the reason) when HIP is not installed.
bool skipWithoutHip() {
  auto version = hiprtcVersion();
  if (version.ok()) return false;
  MESSAGE("skipped: " << version.error().message());
  return true;
}

std::uint16_t elfMachine(const std::string& elf) {
  std::uint16_t machine = 0;
  std::memcpy(&machine, elf.data() + 18, sizeof(machine));  // e_machine, little-endian on x86 hosts
  return machine;
}

}  // namespace

TEST_CASE("hiprtc: the helper reports HIPRTC's version") {
  auto version = hiprtcVersion();
  if (!version.ok()) {
    CHECK(version.error().message().starts_with("HIPRTC not available"));
    MESSAGE("skipped: " << version.error().message());
    return;
  }
  CHECK(version->major >= 5);
  CHECK_FALSE(version->library.empty());
  MESSAGE("HIPRTC " << version->major << "." << version->minor << " from " << version->library);
}

TEST_CASE("hiprtc: compiles a __half kernel for gfx90a and gfx1030 to AMDGPU ELF code objects") {
  if (skipWithoutHip()) return;
  for (std::string arch : {"gfx90a", "gfx1030"}) {
    CAPTURE(arch);
    auto out = compileHip(kHipHalfKernel, {.arch = arch, .flags = {"-O3"}});
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    const std::string& elf = out->code_object;
    REQUIRE(elf.size() > 64);
    CHECK(elf.compare(0, 4, "\177ELF") == 0);
    CHECK(elf[4] == 2);                          // ELFCLASS64
    CHECK(elfMachine(elf) == 224);               // EM_AMDGPU
    CHECK(elf.find(arch) != std::string::npos);  // the target triple names the arch
    MESSAGE(arch << ": " << elf.size() << " B code object in " << out->compile_ms
                 << " ms (helper process)");
  }
}

TEST_CASE("hiprtc: archs outside the allowlist are refused before anything runs") {
  CHECK(checkArch("gfx90a").ok());
  CHECK(checkArch("gfx1030").ok());
  CHECK(checkArch("gfx90a:sramecc+:xnack-").ok());
  CHECK_FALSE(checkArch("gfx90a:bogus").ok());
  auto out = compileHip(kHipHalfKernel, {.arch = "gfx942"});
  REQUIRE_FALSE(out.ok());
  const std::string& message = out.error().message();
  CHECK(message.find("'gfx942' is not in smelt's allowlist (gfx90a, gfx1030)") !=
        std::string::npos);
}

TEST_CASE("hiprtc: a HIPRTC crash in the helper comes back as an error") {
  if (skipWithoutHip()) return;
  // HIPRTC 5.2 aborts (or segfaults) for gfx942; with the allowlist skipped, the helper dies, smelt
  // does not. Under ASan the helper exits 1 instead of dying by a signal: the same error.
  auto out = compileHip(kHipHalfKernel, {.arch = "gfx942", .skip_allowlist = true});
  REQUIRE_FALSE(out.ok());
  CHECK(out.error().message().starts_with("HIPRTC aborted compiling for gfx942 ("));
  MESSAGE(out.error().message());
}

TEST_CASE("hiprtc: a broken source comes back with the compile log") {
  if (skipWithoutHip()) return;
  auto out = compileHip("extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }",
                        {.arch = "gfx1030", .program_name = "broken.hip"});
  REQUIRE_FALSE(out.ok());
  const std::string& message = out.error().message();
  CHECK(message.starts_with("HIPRTC could not compile broken.hip for gfx1030"));
  CHECK(message.find("undeclared identifier 'undefined_name'") != std::string::npos);
}

TEST_CASE("hiprtc: a missing helper, missing HIP or a hanging helper is a clear error") {
  // Missing: SMELT_HIPRTC_HELPER points nowhere.
  setenv("SMELT_HIPRTC_HELPER", "/nonexistent/smelt-hiprtc", 1);
  auto missing = compileHip(kHipHalfKernel);
  unsetenv("SMELT_HIPRTC_HELPER");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("SMELT_HIPRTC_HELPER=/nonexistent/smelt-hiprtc") !=
        std::string::npos);

  // Stand-in helpers: one answering as the real one does without HIP, one that hangs.
  char dir[] = "/tmp/smelt-hiprtc-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string no_hip = std::string(dir) + "/no-hip-helper",
                    sleepy = std::string(dir) + "/sleepy-helper";
  std::ofstream(no_hip)
      << "#!/bin/sh\necho 'smelt-hiprtc: HIP not installed (libamdhip64.so.5: cannot open)' >&2\n"
      << "exit " << static_cast<int>(HelperExit::kUnavailable) << "\n";
  std::ofstream(sleepy) << "#!/bin/sh\nexec sleep 30\n";
  REQUIRE(chmod(no_hip.c_str(), 0700) == 0);
  REQUIRE(chmod(sleepy.c_str(), 0700) == 0);
  auto unavailable = compileHip(kHipHalfKernel, {.helper_path = no_hip});
  auto hung = compileHip(kHipHalfKernel, {.timeout = std::chrono::milliseconds(300), .helper_path = sleepy});
  unlink(no_hip.c_str());
  unlink(sleepy.c_str());
  rmdir(dir);
  REQUIRE_FALSE(unavailable.ok());
  CHECK(unavailable.error().message().starts_with(
      "HIPRTC not available: smelt-hiprtc: HIP not installed"));
  REQUIRE_FALSE(hung.ok());
  CHECK(hung.error().message().starts_with("HIPRTC timed out after 300 ms"));
}
