// An OpenCL device (PoCL's CPU device by default) as a Device: cl_mem buffers, in-order queues as
// streams, marker events, pinned memory from CL_MEM_ALLOC_HOST_PTR, programs from OpenCL C built
// once per process, and launches prepared with their arguments.
#pragma once

#include "runtime/device/device.h"
#include "runtime/opencl/opencl_runtime.h"

#include <string_view>

namespace smelt {

/// The OpenCL device `selector` picks (opencl::Context::create's selector; empty: the default), one
/// per device and process, whatever selector reached it.
Expected<std::shared_ptr<Device>> openClDevice(std::string_view selector = {});

/// The context behind an OpenCL Device (the one its default stream's queue belongs to). `device`
/// must come from openClDevice().
opencl::Context& openClContext(Device& device);

/// The command queue behind a stream of an OpenCL Device (for CLBlast's calls).
cl_command_queue openClQueue(DeviceStream& stream);

/// What an OpenCL error code means for recovery: kOutOfMemory for a failed allocation (CL_OUT_OF_RESOURCES
/// too while `allocating`), kDeviceLost for a device gone or a command that failed while running (how
/// GPU drivers report a faulting kernel), else kGeneric.
ErrorKind openClErrorKind(int code, bool allocating);

/// A cl_mem from DeviceMemory made by an OpenCL Device.
inline cl_mem clMemOf(const DeviceMemory& m) { return static_cast<cl_mem>(m.handle); }

}  // namespace smelt
