// The CPU as a Device: host memory, memcpy copies, streams that run everything at once. Its kernels
// are JIT-compiled by its backend (cpu_backend.h) rather than loaded from an image.
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// The process's CPU device ("cpu").
std::shared_ptr<Device> cpuDevice();

}  // namespace smelt
