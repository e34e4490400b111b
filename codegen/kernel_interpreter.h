// Runs a kernel description on host tensors, one outer point after another: the oracle that tests the
// lowering (IR -> kernel) apart from any backend, and the semantics every renderer must match.
// Floats compute in double and round to their dtype after every instruction; integers wrap.
#pragma once

#include "codegen/kernel.h"
#include "ir/tensor.h"

#include <span>

namespace smelt::codegen {

/// Runs `kernel` with `buffers[i]` as its buffer i (inputs read, outputs written). Each tensor must
/// have the buffer's dtype and element count.
Status interpretKernel(const Kernel& kernel, std::span<Tensor* const> buffers);

/// The same for a kernel compiled for every size (codegen/size_general.h): `firstExtent` is its
/// domain's first extent when that is given at launch, buffers of run-time size take any element
/// count (and bound the offsets), and its params come from the last buffer.
Status interpretKernel(const Kernel& kernel, std::span<Tensor* const> buffers, int64_t firstExtent);

}  // namespace smelt::codegen
