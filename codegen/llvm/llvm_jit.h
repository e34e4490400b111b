// The LLVM CPU backend's compiler: renders a kernel description to LLVM IR (llvm_renderer.h), optimizes
// it at O3 for the host CPU (its name and features, 512-bit vectors on AVX-512), emits an object file,
// keeps it in the kernel cache (codegen/cache) and links it into one process-wide ORC LLJIT. No LLVM
// type appears here, so only two files of smelt include LLVM's headers.
//   auto jit = LlvmJit::global();
//   SMELT_TRY(JitKernelHandle kernel, (*jit)->compile(description));
//   kernel->entry(buffers, 0, description.domainSize());
// A kernel's code stays loaded while a handle to it lives: executables hold theirs, and the code of
// dropped executables is unloaded (a process compiling graph after graph does not grow).
#pragma once

#include "codegen/cache/cache_key.h"
#include "codegen/kernel.h"

#include <memory>
#include <string>

namespace smelt::codegen {

/// A compiled kernel: runs the outer points [begin, end) of the kernel's domain (row-major linear
/// index) with `buffers[i]` as buffer i. Threads call it on disjoint ranges.
using KernelEntry = void (*)(char** buffers, int64_t begin, int64_t end);

/// A loaded kernel. Its code is unloaded when the last handle goes.
struct JitKernel {
  KernelEntry entry = nullptr;
};
using JitKernelHandle = std::shared_ptr<const JitKernel>;

/// What one compile did, for logs and `smelt inspect`.
struct CompileInfo {
  bool cacheHit = false;
  double seconds = 0;
  std::string cacheDigest;
};

/// The process-wide JIT; see the file comment. Thread-safe.
class LlvmJit {
 public:
  /// The JIT, created on first use (an error when LLVM cannot target this host).
  static Expected<LlvmJit*> global();
  ~LlvmJit();

  /// The entry point of `kernel`: already loaded (kernels of one computation share it), from the
  /// kernel cache, or compiled.
  Expected<JitKernelHandle> compile(const Kernel& kernel, CompileInfo* info = nullptr);
  /// The kernel cache's key for `kernel` here (what compile() looks up; `smelt cache explain`).
  CacheKey keyFor(const Kernel& kernel) const;
  /// How many distinct kernels are loaded now (for the tests of unloading).
  size_t loadedKernels();
  /// The optimized LLVM IR of `kernel` (for `smelt kernels --backend llvm`); compiles nothing.
  Expected<std::string> renderIr(const Kernel& kernel, bool optimize);
  /// "cpu=<name> features=<list>": part of every cache key.
  const std::string& target() const;

 private:
  LlvmJit();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt::codegen
