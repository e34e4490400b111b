// Column kernels for CPUs: a kernel whose points are columns, each walking down its column in loops
// (a reduction over rows such as a bias gradient: point p loads x[r * C + p] for r < R), reads memory
// C elements apart at every step, so nothing vectorizes and rows 4 KiB apart fight over the same L1
// sets. tileColumns makes each point a tile of T adjacent columns and swaps the loops: rows outside,
// the tile's columns inside, which walk contiguous memory. Sums carried down a column live in the
// output they end in (it is stored at the column's own index) between rows.
//   domain [C]                                      domain [C/T]
//   %s = loop %r < R carry(%a = 0) {                loop %t < T { store s[q*T+t] = 0 }
//     yield %a + load x[r*C + p]            ->      loop %r < R { loop %t < T {
//   }                                                 store s[q*T+t] = load s[q*T+t] + load x[r*C + q*T+t] } }
//   store s[p] = %s
// The values each point computes are the same, in the same order, so results are bit-identical. For
// CPU backends only: GPUs want one thread per column, where neighbouring threads' loads coalesce.
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// Applies the rewrite when the kernel has that shape (one-dimensional domain of at least 8 tiles, loops
/// not nested, every access in a loop at p + f(r) or independent of p, at least one walking down a
/// column, each carried value stored unchanged at the point's own index of an output no loaded input
/// may share); returns true when it changed `kernel`.
bool tileColumns(Kernel& kernel);

}  // namespace smelt::codegen
