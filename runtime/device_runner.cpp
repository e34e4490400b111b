// DeviceRunner: each backend's executable behind one run().
#include "runtime/device_runner.h"

#ifdef SMELT_HAVE_LLVM
#include "runtime/executable.h"
#endif
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
#endif
#ifdef SMELT_HAVE_CUDA
#include "runtime/cuda_executable.h"
#endif

namespace smelt {

namespace {

template <typename Exe>
class RunnerOf final : public DeviceRunner {
 public:
  explicit RunnerOf(std::unique_ptr<Exe> exe) : exe_(std::move(exe)) {}
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) override { return exe_->run(feeds, outputs); }

 private:
  std::unique_ptr<Exe> exe_;
};

/// The reference interpreter, for builds without LLVM.
class InterpreterRunner final : public DeviceRunner {
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
Expected<std::unique_ptr<DeviceRunner>> compileWith(const Graph& graph, Options... options) {
  SMELT_TRY(std::unique_ptr<Exe> exe, Exe::compile(graph, options...));
  return std::unique_ptr<DeviceRunner>(std::make_unique<RunnerOf<Exe>>(std::move(exe)));
}

}  // namespace

Expected<std::unique_ptr<DeviceRunner>> compileForCpu(const Graph& graph) {
#ifdef SMELT_HAVE_LLVM
  return compileWith<Executable>(graph);
#else
  return std::unique_ptr<DeviceRunner>(std::make_unique<InterpreterRunner>(graph));
#endif
}

Expected<std::unique_ptr<DeviceRunner>> compileForDevice(const Graph& graph, const std::shared_ptr<Device>& device) {
  switch (device->kind()) {
    case DeviceKind::kCpu: return compileForCpu(graph);
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

}  // namespace smelt
