// Walking and renaming the values of a kernel description's statements, shared by the kernel-level
// rewrites (kernel_opt.cpp, reuse_through_output.cpp).
#pragma once

#include "codegen/kernel.h"

#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace smelt::codegen {

using LoopPtr = std::shared_ptr<KLoop>;

/// Every value a statement reads, loop bodies included, in reading order: operands left to right; a
/// loop's run-time extent, inits, body, then nexts.
void forEachUse(const KStmt& s, const std::function<void(int32_t)>& f);
void forEachUseInBlock(const KBlock& b, const std::function<void(int32_t)>& f);

/// Every value a statement defines, loop bodies included.
void forEachDef(const KStmt& s, const std::function<void(int32_t)>& f);

/// How many times each value is read in the block (loop bodies, inits and nexts included).
std::unordered_map<int32_t, int> useCounts(const KBlock& b);

/// True when the block (or a loop in it) stores.
bool hasStore(const KBlock& b);

/// `map[v]` where present, else v.
int32_t renamed(int32_t v, const std::unordered_map<int32_t, int32_t>& map);

/// Replaces every use of a mapped value (loop bodies, inits and nexts included).
void renameStmt(KStmt& s, const std::unordered_map<int32_t, int32_t>& map);
void renameBlock(KBlock& b, const std::unordered_map<int32_t, int32_t>& map);

/// Whether the statement / block (loop bodies included) loads from any of `buffers`.
bool loadsAny(const KStmt& s, const std::unordered_set<int64_t>& buffers);
bool loadsAny(const KBlock& b, const std::unordered_set<int64_t>& buffers);

/// The buffer whose memory `buffer` is (KBuffer::sameAs followed to its end): in-place pairs compare
/// equal through it.
int32_t memoryOf(const Kernel& kernel, int32_t buffer);

/// The inputs the memory planner may let output `buffer` overwrite in place: those of its dtype and
/// size (rewrites that write an output early must not read them afterwards); none in a kernel whose
/// executable found its buffers apart (Kernel::disjointBuffers: at a batch of 1 a bias gradient's
/// [1, C] input and [C] output have one size, yet a reduction is never written in place).
std::unordered_set<int64_t> inputsSharingMemoryWith(const Kernel& kernel, int32_t buffer);

/// Drops instructions whose results nothing reads (loads included: kernels' loads have no effects).
void removeDeadInstructions(Kernel& kernel);

}  // namespace smelt::codegen
