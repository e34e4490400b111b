// A CUDA GPU as a Device, through the driver API loaded with dlopen (runtime/cuda/cuda_driver.h):
// cuMemAlloc memory, streams, events, cuMemHostAlloc pinned memory, modules from CUBIN or PTX loaded
// once per process, launches prepared with their arguments. A sticky error (an illegal address, a
// failed launch) poisons the context: reset() recreates it.
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// CUDA device `ordinal`, one per process; an error when there is no driver or no such device.
Expected<std::shared_ptr<Device>> cudaDevice(int ordinal = 0);

}  // namespace smelt
