// An OpenCL device (PoCL's CPU device by default) as a Device: cl_mem buffers, in-order queues as
// streams, marker events, pinned memory from CL_MEM_ALLOC_HOST_PTR, programs from OpenCL C.
#pragma once

#include "runtime/device/device.h"
#include "runtime/opencl/opencl_runtime.h"

#include <string_view>

namespace smelt {

/// The OpenCL device `selector` picks (opencl::Context::create's selector; empty: the default), one
/// per selector and process. `ordinal` is its position in listOpenClDevices().
Expected<std::shared_ptr<Device>> openClDevice(std::string_view selector = {});

/// The context behind an OpenCL Device (the one its default stream's queue belongs to), for the
/// OpenCL executable. `device` must come from openClDevice().
opencl::Context& openClContext(Device& device);

/// The program for `source` built with `options` on an OpenCL Device, once per process and device:
/// loadKernels and the OpenCL executable share it (PoCL also keeps its own disk cache, in
/// POCL_CACHE_DIR). `hit`, when given, tells whether it was built before.
Expected<std::shared_ptr<opencl::Program>> openClProgram(Device& device, const std::string& source,
                                                         const std::string& options, bool* hit = nullptr);

/// A cl_mem from DeviceMemory made by an OpenCL Device.
inline cl_mem clMemOf(const DeviceMemory& m) { return static_cast<cl_mem>(m.handle); }

}  // namespace smelt
