// A CUDA GPU as a Device, through the driver API loaded with dlopen (runtime/cuda/cuda_driver.h):
// cuMemAlloc memory, streams, events, cuMemHostAlloc pinned memory, modules from CUBIN or PTX loaded
// once per process, launches prepared with their arguments. A sticky error (an illegal address, a
// failed launch) poisons the context: reset() recreates it.
#pragma once

#include "runtime/device/device.h"

namespace smelt {

/// CUDA device `ordinal`, one per process; an error when there is no driver or no such device.
Expected<std::shared_ptr<Device>> cudaDevice(int ordinal = 0);

namespace cuda {
class Context;
}
/// The driver objects behind a CUDA device's Device, DeviceStream and DeviceMemory, for the vendor
/// libraries the CUDA backend calls in the device's context, on its streams and buffers (cuBLAS).
cuda::Context& cudaContextOf(Device& device);
void* cudaStreamOf(DeviceStream& stream);
std::uint64_t cudaAddressOf(const DeviceMemory& memory);

}  // namespace smelt
