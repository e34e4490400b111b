// A graph compiled for one Device, whichever backend that takes: the one place that maps a device
// kind to its executable type (LLVM for the CPU, OpenCL, CUDA). PlacedExecutable and the placement
// tuner run graphs through it.
//   SMELT_TRY(std::unique_ptr<DeviceRunner> runner, compileForDevice(graph, device));
//   SMELT_CHECK_OK(runner->run(feeds, outputs));
#pragma once

#include "ir/interpreter.h"
#include "runtime/device/device.h"

#include <memory>
#include <vector>

namespace smelt {

/// One compiled executable of any backend, fed and fetched on the host.
class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  virtual Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) = 0;
};

/// The graph on the CPU: the LLVM executable, or the reference interpreter in builds without LLVM.
Expected<std::unique_ptr<DeviceRunner>> compileForCpu(const Graph& graph);
/// The graph on `device`; a kind this build has no executable for (HIP) is an error saying so.
Expected<std::unique_ptr<DeviceRunner>> compileForDevice(const Graph& graph, const std::shared_ptr<Device>& device);

}  // namespace smelt
