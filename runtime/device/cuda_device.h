// A CUDA GPU as a Device, through the driver API loaded with dlopen (runtime/cuda/cuda_driver.h):
// cuMemAlloc memory, non-blocking streams, events, cuMemHostAlloc pinned memory, PTX modules.
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// CUDA device `ordinal`, one per process; an error when there is no driver or no such device.
Expected<std::shared_ptr<Device>> cudaDevice(int ordinal = 0);

}  // namespace smelt
