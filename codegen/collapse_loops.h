// Nested loops that walk one contiguous range become one loop: a loop over h < H holding only a loop
// over w < W, whose indices are used only as w + h * W, is a loop over j < H * W with j for w + h * W.
// Lowering makes one loop per reduced or stored dim, so a batch norm over [N, C, 4, 4] walks each image
// in a 4 x 4 nest; LLVM unrolls 4-iteration loops and then vectorizes nothing, while one loop of 16
// vectorizes whole. The iterations run in the same order, so results are bit-identical.
//   loop %h < 4 carry(%a = %z) {                 loop %j < 16 carry(%b = %z) {
//     %m = mul %h, 4                               ... load x[%j + %base] ...
//     %b2 = loop %w < 4 carry(%b = %a) {     ->     yield %b3
//       %j = add %w, %m                           }
//       ... load x[%j + %base] ...
//       yield %b3 } yield %b2 }
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// Collapses every such nest in `kernel` (repeatedly: three dims can become one); returns how many
/// pairs of loops became one.
int collapseNestedLoops(Kernel& kernel);

}  // namespace smelt::codegen
