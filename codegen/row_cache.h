// Rows kept in registers between the sweeps of a block-mapped GPU kernel. layer_norm's kernel sweeps
// its row three times (the mean, the variance, the normalized output) and softmax's too (the max, the
// sum of exponentials, the output), each sweep loading the row again: from L1 at best, after the
// barriers of the combine between them. When the sweeps are split loops of one constant extent, each
// thread visits the same elements in each (tid, tid + threads, ...), so the first sweep can keep what
// it loads in a per-thread array and the later ones read it there: one load per element instead of
// three, as hand-written GPU layer norms and Inductor's persistent reductions do.
//
// The plan is the renderers' (codegen/c_renderer.cpp renders it for CUDA, HIP and OpenCL alike); the
// kernel description does not change, so the kernel interpreter and the LLVM renderer ignore it.
#pragma once

#include "codegen/kernel.h"

#include <map>
#include <vector>

namespace smelt::codegen {

/// The most registers (32-bit words) per thread the cached rows of one kernel may take.
inline constexpr int64_t kMaxRowCacheWords = 32;

struct RowCachePlan {
  /// One per-thread array: the loaded values of one buffer at one row offset, one per iteration.
  struct Array {
    DType dtype = DType::f32;
    int64_t length = 0;  // the split loops' iterations per thread
    const KLoop* filledIn = nullptr;  // the first sweep, before which the array is declared
  };
  /// A load kept in an array: the first sweep's fills it, the later sweeps' read it instead of memory.
  struct CachedLoad {
    size_t array = 0;
    bool fills = false;
  };
  std::vector<Array> arrays;
  std::map<const KInst*, CachedLoad> loads;
};

/// The loads of `kernel` (block-mapped: Kernel::blockThreads > 0) to keep in registers: a load directly
/// in the body of a top-level split loop, of a constant extent that is a multiple of the block (at most
/// kMaxRowCacheWords iterations per thread), at the loop's index plus a value from outside the loop,
/// which later split loops of the same extent load at the same offset: those before the first store to
/// that buffer's memory (or to an output that may share it) read the first one's registers.
RowCachePlan planRowCaches(const Kernel& kernel);

}  // namespace smelt::codegen
