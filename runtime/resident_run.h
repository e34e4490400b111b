// The two halves of a device-resident run that every device executable (OpenCL, CUDA) shares around
// its own kernel launches: fed DeviceTensors copied on the device into their arena slots, and outputs
// copied on the device out of the arena into pooled DeviceTensors. Nothing crosses to the host.
//   SMELT_CHECK_OK(placeResidentFeeds(slots, feeds, uploadInitialValue));
//   SMELT_CHECK_OK(execute());
//   SMELT_CHECK_OK(fetchResidentOutputs(slots, outputs));
#pragma once

#include "runtime/device/device_tensor.h"
#include "runtime/device_arena.h"

#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace smelt {

/// An executable's arena and the slots a resident run reads and writes.
struct ResidentSlots {
  const Graph* graph = nullptr;
  std::shared_ptr<Device> device;
  DeviceMemory arena;
  std::span<const ArenaSlot> inputs;
  std::span<const ArenaSlot> parameters;
  /// Per parameter: whether its slot holds a fed value (updated here).
  std::vector<bool>* parameterFed = nullptr;
  /// Each graph output's byte offset in the arena.
  std::span<const int64_t> outputs;
};

/// Copies every input and fed parameter into its slot on the device's default stream (after an
/// upload from DeviceTensor::fromHostAsync has landed); a parameter fed last time and not now gets
/// its initial value back through `uploadInitial`. A missing feed, a feed on another device, or a
/// parameter with no value is an error naming it.
Status placeResidentFeeds(const ResidentSlots& slots, const DeviceTensorMap& feeds,
                          const std::function<Status(const ArenaSlot&)>& uploadInitial);
/// Copies every output out of the arena into `outputs` (reusing a tensor of the right type on this
/// device that nothing else shares, else a fresh one from the pool).
Status fetchResidentOutputs(const ResidentSlots& slots, std::vector<DeviceTensor>& outputs);

}  // namespace smelt
