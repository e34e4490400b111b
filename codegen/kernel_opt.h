// Three kernel passes of the clean-up after lowering (codegen/kernel_passes.h runs them by name):
//   fuse-loops          sibling loops of one extent that do not depend on each other become one sweep
//                       (layer_norm's mean and variance read x once, not twice)
//   hoist-reciprocals   a float division inside a loop by a value from outside it becomes a product
//                       with its reciprocal, taken once before the loop (softmax's e / sum)
//   cse                 identical instructions in one scope are shared, and a loop's twin carried
//                       values (layer_norm's two sums of one row) become one
//   %a = loop %i < 8 carry(...) { x = load b0[i]; ... }        %a, %b = loop %i < 8 carry(..., ...) {
//   %b = loop %j < 8 carry(...) { x = load b0[j]; ... }   ->      x = load b0[i]; ...; ...
//                                                               }
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// fuse-loops; returns whether any loops merged. The iterations and their order are unchanged.
bool fuseSiblingLoops(Kernel& kernel);

/// hoist-reciprocals (f32 and f64 only; never where the quotient is rounded to an integer or feeds a
/// remainder, whose exact value matters); returns whether any division moved.
bool hoistReciprocals(Kernel& kernel);

/// cse: a later twin's uses move to the first, in scope order, and a loop's twin carried values (same
/// start, same update) become one; returns whether any were shared.
bool shareInstructions(Kernel& kernel);

}  // namespace smelt::codegen
