// What the device-generic tests share (block kernels, vendor products): every device but the CPU
// that opens (PoCL here; a GPU on a GPU host), and compiling graphs for one of them and checking each
// against the reference interpreter on random inputs, with a check of what compiling reported.
#pragma once

#include "runtime/device/device_list.h"
#include "runtime/exec/executable.h"

#include <functional>
#include <string>
#include <vector>

namespace smelt::testing {

/// Every device but the CPU that opens here; none: the caller's test passes with a message.
std::vector<DeviceDescription> nonCpuDevices();

/// Compiles `graphs` for `device` and checks each against the reference on `given[i]` (random when
/// absent); `report` checks each executable's CompileReport (name and report given).
void checkOnDevice(const DeviceDescription& device, const std::vector<Graph>& graphs,
                   const std::vector<std::string>& names,
                   const std::function<void(const std::string&, const Executable&)>& report,
                   const std::vector<TensorMap>& given = {});

}  // namespace smelt::testing
