// A costly value that a reduction sweep computes and the final sweep computes again is kept in the
// output instead: the reduction sweep stores it where the final sweep writes its result, and the final
// sweep loads it back from there (softmax's exp: computed once, not twice).
//   %s = loop %i < n carry(%a = 0) {            %s = loop %i < n carry(%a = 0) {
//     %e = exp(load b0[o(i)] - m)                  %e = exp(load b0[o(i)] - m)
//     yield %a + %e                                store b1[o(i)] = %e
//   }                                        ->      yield %a + %e
//   loop %j < n {                                }
//     %f = exp(load b0[o(j)] - m)                loop %j < n {
//     store b1[o(j)] = %f / %s                     store b1[o(j)] = load b1[o(j)] / %s
//   }                                            }
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// Applies the rewrite above wherever it is safe; returns true when it changed `kernel`. Safe means:
/// both loops sit in one block with the same extent, the stored value has the output's dtype, the final
/// sweep stores to that output at the offset the earlier loop also computes, and after the earlier loop
/// nothing loads an input the output could overwrite in place (one of the output's dtype and size).
bool reuseThroughOutput(Kernel& kernel);

}  // namespace smelt::codegen
