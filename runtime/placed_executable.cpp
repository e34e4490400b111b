// PlacedExecutable: device choice, and the recovery paths around one device executable.
#include "runtime/placed_executable.h"

#include "codegen/log.h"
#include "runtime/device/device.h"
#include "runtime/device/device_list.h"
#include "runtime/device/memory_pool.h"
#include "runtime/device_runner.h"
#include "runtime/placement/placement.h"

namespace smelt {

struct PlacedExecutable::Impl {
  Graph graph;
  std::shared_ptr<Device> device;
  std::unique_ptr<DeviceRunner> runner;
  std::string deviceId;
  int fallbacks = 0;
  int reinitializations = 0;

  /// Moves this executable to the CPU after `why`, with one warning.
  Status fallBackToCpu(const Error& why) {
    logger().warn("@{}: {}; this executable falls back to the CPU", graph.name(), why.message());
    SMELT_TRY(runner, compileForCpu(graph));
    device = nullptr;
    deviceId = "cpu";
    ++fallbacks;
    return Status::success();
  }
};

PlacedExecutable::PlacedExecutable() : impl_(std::make_unique<Impl>()) {}
PlacedExecutable::~PlacedExecutable() = default;
const std::string& PlacedExecutable::deviceId() const { return impl_->deviceId; }
int PlacedExecutable::fallbacks() const { return impl_->fallbacks; }
int PlacedExecutable::reinitializations() const { return impl_->reinitializations; }

Expected<std::unique_ptr<PlacedExecutable>> PlacedExecutable::compile(const Graph& graph,
                                                                      const PlacementOptions& options) {
  std::unique_ptr<PlacedExecutable> exe(new PlacedExecutable());
  Impl& x = *exe->impl_;
  x.graph = graph.clone();
  std::string wanted = resolveRequestedDevice(options.device);
  if (wanted == "auto") {
    PlacementDecision decision = choosePlacement(graph);
    logger().debug("@{}: placed on {}: {}", graph.name(), decision.deviceId, decision.reason);
    wanted = decision.deviceId;
  }
  SMELT_TRY(x.device, openDevice(wanted));
  x.deviceId = x.device->id();
  Expected<std::unique_ptr<DeviceRunner>> runner = compileForDevice(graph, x.device);
  if (!runner && isOutOfMemory(runner.error()) && x.device->kind() != DeviceKind::kCpu) {
    SMELT_CHECK_OK(x.fallBackToCpu(runner.error()));
    return exe;
  }
  if (!runner) return runner.error();
  x.runner = std::move(*runner);
  return exe;
}

Expected<std::vector<Tensor>> PlacedExecutable::run(const TensorMap& feeds) {
  std::vector<Tensor> outputs;
  SMELT_CHECK_OK(run(feeds, outputs));
  return outputs;
}

Status PlacedExecutable::run(const TensorMap& feeds, std::vector<Tensor>& outputs) {
  Impl& x = *impl_;
  if (!x.runner) return makeError("@{}: no executable left after a failed recovery (see the warnings above)", x.graph.name());
  Status status = x.runner->run(feeds, outputs);
  if (status.ok() || !x.device || x.device->kind() == DeviceKind::kCpu) return status;
  if (isDeviceLost(status.error())) {
    // Reinitialize: drop what the pool caches (blocks of the old state) and compile again on it.
    logger().warn("@{}: {}; reinitializing {}", x.graph.name(), status.error().message(), x.deviceId);
    ++x.reinitializations;
    x.runner.reset();
    MemoryPool::forDevice(x.device)->trim();
    Expected<std::unique_ptr<DeviceRunner>> again = compileForDevice(x.graph, x.device);
    if (again) {
      x.runner = std::move(*again);
      status = x.runner->run(feeds, outputs);
      if (status.ok()) return status;
    } else {
      status = again.error();
    }
  }
  // Out of memory, or a device that was lost (whatever its recompile or rerun then said): the CPU.
  if (isOutOfMemory(status.error()) || isDeviceLost(status.error()) || !x.runner) {
    SMELT_CHECK_OK(x.fallBackToCpu(status.error()));
    return x.runner->run(feeds, outputs);
  }
  return status;
}

}  // namespace smelt
