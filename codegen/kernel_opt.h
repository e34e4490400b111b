// Clean-up of a lowered kernel: independent sibling loops of one extent merged into one sweep, and
// identical instructions shared. lowerToKernel runs it on every kernel it makes.
#pragma once

#include "codegen/kernel.h"

namespace smelt::codegen {

/// See the file comment. The result computes exactly what `kernel` computed.
void optimizeKernel(Kernel& kernel);

}  // namespace smelt::codegen
