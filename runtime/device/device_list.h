// Every device this process can use, and opening one by id:
//   "cpu"; "opencl" (the default OpenCL device) or "opencl:N"; "cuda" or "cuda:N"; "hip" or "hip:N".
//   for (const DeviceDescription& d : listDevices()) fmt::print("{} {}\n", d.id, d.name);
//   SMELT_TRY(std::shared_ptr<Device> device, openDevice("opencl:0"));
#pragma once

#include "runtime/device/device.h"

#include <string>
#include <string_view>
#include <vector>

namespace smelt {

/// What one kind of device said when listed: its devices, or why it has none.
struct DeviceProbe {
  DeviceKind kind = DeviceKind::kCpu;
  std::vector<DeviceDescription> devices;
  /// Empty when the kind answered (even with no devices); otherwise why it is unavailable.
  std::string unavailable;
};

/// The CPU, then OpenCL, CUDA and HIP devices, with a reason for each kind that has none. Opens
/// every device once (cheap after the first call).
std::vector<DeviceProbe> probeDevices();
/// The devices of probeDevices(), flattened.
std::vector<DeviceDescription> listDevices();
/// The device `id` names; an unknown or absent one is an error listing the devices there are.
Expected<std::shared_ptr<Device>> openDevice(std::string_view id);

}  // namespace smelt
