// map-to-blocks, a kernel pass for GPUs: a kernel whose outer points each walk long rows (softmax,
// log_softmax, layer_norm, row reductions and their gradients) runs each outer point as one block of
// threads that share the rows, instead of one thread walking a whole row while its neighbours in the
// warp walk rows 16 KB away. The body's top-level loops become split loops (KLoop::split): each thread
// takes the iterations tid, tid + threads, ..., so a warp's loads are consecutive, and each carried
// value is combined across the block (a tree through shared/local memory) into a result every thread
// sees. Kernels it cannot map correctly or usefully stay one thread per point:
//   kernel @fused_0 domain [4096]                 kernel @fused_0 domain [4096] threads 256
//     %13 = loop %8 < 4096 carry(%9 = ...) {  ->    %13 = loop %8 < 4096 carry(%9 = ...) split combine(max) {
//       %12 = max %9, %11 : f32                       %12 = max %9, %11 : f32
// A loop is split only when every carried value is updated by one associative operation (add, mul,
// min, max, and, or) of itself and a value that does not depend on it, no store in it writes an
// offset independent of the loop index, no buffer is both read and written in it at different
// offsets, and every offset it reads or writes moves by 0 or 1 element per iteration (coalesced).
// A top-level loop that cannot split because it strides across rows (a batch norm's loop over the
// images around its loop over one channel's pixels) stays sequential in every thread while the loops
// in it split, when its own body holds no load or store (every thread computes the same values in it)
// and every store in the inner loops moves at least an inner loop's extent per outer iteration (no
// element is written in two outer iterations, by two threads). Where the outer loop's carried values
// only accumulate through the inner loops (a sum over the images of sums over the pixels), the inner
// loops keep per-thread partials (`split partial`) and the outer loop combines them once after its
// last iteration (`combine(...)` without `split`); otherwise each inner loop combines per iteration.
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// Rows shorter than this stay one thread per point: a block would idle most of its threads. In a nest
/// (see above), rows of at least kMinNestRow map to blocks when the nest walks kMinBlockRow elements in
/// all: a warp then idles at most three quarters of its threads, where one thread per point would walk
/// every element of the nest in sequence.
inline constexpr int64_t kMinBlockRow = 64;
inline constexpr int64_t kMinNestRow = 8;

/// Maps `kernel` to blocks of at most `maxThreads` threads (a power of two) where it can (see the
/// file comment); returns whether it did. Idempotent.
bool mapToBlocks(Kernel& kernel, int32_t maxThreads = 256);

}  // namespace smelt::codegen
