// The CPU as a Device: host memory, memcpy copies, streams that run everything at once. Kernels run
// on the CPU through the LLVM executable (runtime/executable.h), not through loadKernels.
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// The process's CPU device ("cpu").
std::shared_ptr<Device> cpuDevice();

}  // namespace smelt
