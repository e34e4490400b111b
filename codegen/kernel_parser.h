// The kernel description's text (printKernel) parsed back, so kernel passes are tested and debugged
// as text in, text out, like the graph passes: parseKernel(printKernel(k)) prints as k did.
//   kernel @fused_0 domain [4096] threads 256
//     buffer %b0: f32[16777216] in "p0"
//     %0 = outer 0 : i64
//     %3 = loop %1 < 4096 carry(%2 = %4 : f32) split combine(max) {
//       ...
//       yield %7
//     }
//     store %b1[%0] = %3
// Lines starting with `//` (other than the kernel's `// from` provenance) and blank lines are skipped.
#pragma once

#include "codegen/kernel.h"
#include "ir/support/expected.h"

#include <string_view>

namespace smelt::codegen {

/// Parses one kernel; errors name the line and what was expected there. The result is checked: every
/// value is defined once before its use, loads and stores name existing buffers, offsets are i64.
Expected<Kernel> parseKernel(std::string_view text);

}  // namespace smelt::codegen
