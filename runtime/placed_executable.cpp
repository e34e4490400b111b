// PlacedExecutable: device choice, and the recovery paths around one device executable.
#include "runtime/placed_executable.h"

#include "codegen/log.h"
#include "runtime/device/device.h"
#include "runtime/device/device_list.h"
#include "runtime/device/memory_pool.h"
#ifdef SMELT_HAVE_LLVM
#include "runtime/executable.h"
#endif
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
#endif
#ifdef SMELT_HAVE_CUDA
#include "runtime/cuda_executable.h"
#endif

#include <cstdlib>

namespace smelt {

namespace {

/// One compiled executable of any backend.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) = 0;
};

template <typename Exe>
class RunnerOf final : public Runner {
 public:
  explicit RunnerOf(std::unique_ptr<Exe> exe) : exe_(std::move(exe)) {}
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) override { return exe_->run(feeds, outputs); }

 private:
  std::unique_ptr<Exe> exe_;
};

/// The reference interpreter, for builds without LLVM.
class InterpreterRunner final : public Runner {
 public:
  explicit InterpreterRunner(const Graph& graph) : graph_(graph.clone()) {}
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) override {
    SMELT_TRY(outputs, interpret(graph_, feeds));
    return Status::success();
  }

 private:
  Graph graph_;
};

template <typename Exe, typename... Options>
Expected<std::unique_ptr<Runner>> compileWith(const Graph& graph, Options... options) {
  SMELT_TRY(std::unique_ptr<Exe> exe, Exe::compile(graph, options...));
  return std::unique_ptr<Runner>(std::make_unique<RunnerOf<Exe>>(std::move(exe)));
}

Expected<std::unique_ptr<Runner>> compileOnCpu(const Graph& graph) {
#ifdef SMELT_HAVE_LLVM
  return compileWith<Executable>(graph);
#else
  return std::unique_ptr<Runner>(std::make_unique<InterpreterRunner>(graph));
#endif
}

/// Compiles for `deviceId` (a full id such as "opencl:0", or "cpu").
Expected<std::unique_ptr<Runner>> compileOn(const Graph& graph, const std::shared_ptr<Device>& device) {
  switch (device->kind()) {
    case DeviceKind::kCpu: return compileOnCpu(graph);
    case DeviceKind::kOpenCl: {
#ifdef SMELT_HAVE_OPENCL
      OpenClCompileOptions options;
      options.device = device->description().name;
      return compileWith<OpenClExecutable>(graph, options);
#else
      break;
#endif
    }
    case DeviceKind::kCuda: {
#ifdef SMELT_HAVE_CUDA
      CudaCompileOptions options;
      options.device = device->description().ordinal;
      return compileWith<CudaExecutable>(graph, options);
#else
      break;
#endif
    }
    case DeviceKind::kHip: break;
  }
  return makeError("no executable for {} devices in this build", deviceKindName(device->kind()));
}

}  // namespace

struct PlacedExecutable::Impl {
  Graph graph;
  std::shared_ptr<Device> device;
  std::unique_ptr<Runner> runner;
  std::string deviceId;
  int fallbacks = 0;
  int reinitializations = 0;

  /// Moves this executable to the CPU after `why`, with one warning.
  Status fallBackToCpu(const Error& why) {
    logger().warn("@{}: {}; this executable falls back to the CPU", graph.name(), why.message());
    SMELT_TRY(runner, compileOnCpu(graph));
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
  std::string wanted = options.device;
  if (wanted.empty()) {
    const char* env = std::getenv("SMELT_DEVICE");
    wanted = env && *env ? env : "auto";
  }
  if (wanted == "auto") wanted = "cpu";
  SMELT_TRY(x.device, openDevice(wanted));
  x.deviceId = x.device->id();
  Expected<std::unique_ptr<Runner>> runner = compileOn(graph, x.device);
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
  Status status = x.runner->run(feeds, outputs);
  if (status.ok() || !x.device || x.device->kind() == DeviceKind::kCpu) return status;
  if (isDeviceLost(status.error())) {
    // Reinitialize: drop what the pool caches (blocks of the old state) and compile again on it.
    logger().warn("@{}: {}; reinitializing {}", x.graph.name(), status.error().message(), x.deviceId);
    ++x.reinitializations;
    x.runner.reset();
    MemoryPool::forDevice(x.device)->trim();
    Expected<std::unique_ptr<Runner>> again = compileOn(x.graph, x.device);
    if (again) {
      x.runner = std::move(*again);
      status = x.runner->run(feeds, outputs);
      if (status.ok()) return status;
    } else {
      status = again.error();
    }
  }
  if (isOutOfMemory(status.error()) || isDeviceLost(status.error())) {
    SMELT_CHECK_OK(x.fallBackToCpu(status.error()));
    return x.runner->run(feeds, outputs);
  }
  return status;
}

}  // namespace smelt
