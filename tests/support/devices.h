// The devices a test runs over: every one that opens here (the CPU, and PoCL, a CUDA or HIP GPU where
// present), so the runtime's tests cover each device there is without naming it.
//   for (const auto& device : testing::everyDevice()) { CAPTURE(device->id()); ... }
#pragma once

#include "runtime/device/device_list.h"

#include <memory>
#include <vector>

namespace smelt::testing {

/// Every device that opens here, the CPU first.
inline std::vector<std::shared_ptr<Device>> everyDevice() {
  std::vector<std::shared_ptr<Device>> devices;
  for (const DeviceDescription& d : listDevices()) {
    if (auto device = openDevice(d.id)) devices.push_back(*device);
  }
  return devices;
}

/// The same without the CPU: the devices executables fall back from.
inline std::vector<std::shared_ptr<Device>> everyAccelerator() {
  std::vector<std::shared_ptr<Device>> devices;
  for (auto& device : everyDevice()) {
    if (device->kind() != DeviceKind::kCpu) devices.push_back(device);
  }
  return devices;
}

}  // namespace smelt::testing
