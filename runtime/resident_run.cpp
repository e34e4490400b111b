// Device-resident feeds and outputs: see resident_run.h.
#include "runtime/resident_run.h"

#include "runtime/run_support.h"

namespace smelt {

Status placeResidentFeeds(const ResidentSlots& slots, const DeviceTensorMap& feeds,
                          const std::function<Status(const ArenaSlot&)>& uploadInitial) {
  SMELT_TRY(BoundFeedsOf<DeviceTensor> fed, bindFeeds(*slots.graph, feeds));
  Device& device = *slots.device;
  DeviceStream& stream = device.defaultStream();
  auto place = [&](const ArenaSlot& slot, const DeviceTensor& t) -> Status {
    if (t.devicePtr() != slots.device) {
      return makeError("feed '{}' lives on {}, this executable on {}", slot.value->name(), t.device().id(), device.id());
    }
    // A feed uploaded on another stream (DeviceTensor::fromHostAsync) is waited for on the device.
    SMELT_CHECK_OK(t.waitUntilReady(stream));
    return device.copy(slots.arena, static_cast<size_t>(slot.offset), t.memory(), 0, t.byteSize(), stream);
  };
  for (size_t i = 0; i < slots.inputs.size(); ++i) SMELT_CHECK_OK(place(slots.inputs[i], *fed.inputs[i]));
  std::vector<bool>& parameterFed = *slots.parameterFed;
  for (size_t i = 0; i < slots.parameters.size(); ++i) {
    const ArenaSlot& p = slots.parameters[i];
    const DeviceTensor* given = fed.parameters[i];
    if (!given && !p.value->hasInitialValue()) {
      return makeError("parameter '{}' ({}) has no value: feed it", p.value->name(), p.value->type().toString());
    }
    if (given) {
      SMELT_CHECK_OK(place(p, *given));
    } else if (parameterFed[i]) {
      SMELT_CHECK_OK(uploadInitial(p));
    }
    parameterFed[i] = given != nullptr;
  }
  return Status::success();
}

Status fetchResidentOutputs(const ResidentSlots& slots, std::vector<DeviceTensor>& outputs) {
  const Graph& g = *slots.graph;
  DeviceStream& stream = slots.device->defaultStream();
  outputs.resize(g.outputs().size());
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const TensorType& type = g.outputs()[i].value->type();
    // A tensor the caller still shares elsewhere is left alone: the output goes to a fresh one.
    if (!outputs[i].defined() || !(outputs[i].type() == type) || outputs[i].devicePtr() != slots.device ||
        !outputs[i].unique()) {
      SMELT_TRY(outputs[i], DeviceTensor::toOverwrite(slots.device, type));
    }
    SMELT_CHECK_OK(slots.device->copy(outputs[i].memory(), 0, slots.arena, static_cast<size_t>(slots.outputs[i]),
                                      type.byteSize(), stream));
  }
  return Status::success();
}

}  // namespace smelt
