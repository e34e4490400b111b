// vectorize, a kernel pass for GPUs: a flat elementwise kernel (one dimension, no loops) runs
// kVectorLanes consecutive points per thread, and every buffer it reads or writes at the point itself
// moves as one vector (16 bytes of f32, 8 of f16) instead of kVectorLanes scalar accesses:
//   kernel @fused_0 domain [16777216]        kernel @fused_0 domain [16777216] vector 4
//     %0 = outer 0 : i64                ->     (the same body; Kernel::pointsPerThread = 4)
//     %1 = load %b0[%0] : f32
// The renderers load those vectors, run the body once per lane, and store the vectors (CUDA and HIP
// only when every such buffer is aligned to the vector, checked once per thread; a thread with fewer
// than kVectorLanes points left, or unaligned buffers, runs its points one by one). A kernel stays
// scalar when a store's offset is not the point (a scatter), a buffer stored at the point is also read
// elsewhere (another lane may have written there), an element is wider than 4 bytes, or the domain is
// small (fewer threads would idle SMs).
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

inline constexpr int32_t kVectorLanes = 4;
/// Domains below this stay one point per thread.
inline constexpr int64_t kMinVectorPoints = 16384;

/// Sets kernel.pointsPerThread to kVectorLanes where the file comment allows (domains of at least
/// `minPoints`); returns whether it did.
bool vectorize(Kernel& kernel, int64_t minPoints = kMinVectorPoints);

}  // namespace smelt::codegen
