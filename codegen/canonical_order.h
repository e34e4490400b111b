// canonical-order: the kernel's instructions in one order and numbering, whatever order the lowering
// emitted them in. Lowerings build values with nested calls (`e.max(e.min(x, hi), lo)`), whose
// arguments C++ evaluates in an unspecified order: GCC emitted `hi` before `x`, clang after, so the
// same graph printed two kernel texts, and a kernel cache filled by one build missed for the other.
//   %4 = const 1 : i64                 %4 = const 0 : i64            (operands first, left to right,
//   %5 = const 0 : i64        ->       ...                            each just before its first use;
//   %6 = min %3, %4 : i64                                             values numbered as defined)
// First the operands of commutative operations are ordered by a hash of what they compute (the
// builder orders them by id, that is by emission). Between stores and loops (which keep their
// places), the outer indices and run-time sizes come
// first, then each instruction is placed by a depth-first walk of what reads it: the statements after
// it in their order, operands left to right. Then every value is renumbered in order of definition
// (loop indices, carried values and results included).
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// Reorders and renumbers as above; returns whether the kernel's text changed.
bool canonicalOrder(Kernel& kernel);

}  // namespace smelt::codegen
