// A graph compiled for one device through its DeviceBackend: the body every Executable shares,
// whatever the device (Executable adds the choice of device and the recovery from its failures).
// Compiling runs the pipeline, plans memory, decides each node's step (a kernel, a vendor product and
// its epilogue, the op's host code, or the reference interpreter), loads every kernel as one image
// and prepares each launch with its arguments; running binds what was fed and what is returned,
// replays the steps on the device's stream and, for host runs, stages the transfers.
#pragma once

#include "runtime/exec/device_backend.h"
#include "runtime/exec/executable.h"

#include <map>
#include <memory>
#include <string>
#include <span>
#include <vector>

namespace smelt {

class CompiledGraph {
 public:
  /// Compiles every graph for `device` with all their kernels loaded as one image.
  static Expected<std::vector<std::unique_ptr<CompiledGraph>>> compileAll(std::span<const Graph> graphs,
                                                                          const std::shared_ptr<Device>& device,
                                                                          const CompileOptions& options);
  /// The kernels compiling `graph` for `device` would compile, by symbol, lowered and shaped for the
  /// device but not compiled: what a symbolic graph's first binding compares its own with
  /// (runtime/exec/size_general_kernels.h).
  static Expected<std::map<std::string, codegen::Kernel>> lowerKernels(const Graph& graph,
                                                                       const std::shared_ptr<Device>& device,
                                                                       const CompileOptions& options);
  ~CompiledGraph();

  /// Host tensors in and out (see Executable::run).
  Status run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
             std::vector<Tensor>& outputs);
  /// Device tensors in and out.
  Status run(std::span<const DeviceTensor* const> inputs, std::span<const DeviceTensor* const> parameters,
             std::vector<DeviceTensor>& outputs);

  void releaseParameterValues();
  bool donated(size_t output) const;
  /// Runs replayed from a recording (CompileOptions::replay) so far.
  int64_t replays() const;
  /// The working memory it runs in (CompileOptions::workingMemory): the shared block's size.
  int64_t workingMemoryBytes() const;
  const Graph& graph() const;
  const CompileReport& report() const;
  const std::shared_ptr<Device>& device() const;
  const KernelLoadInfo& loadInfo() const;
  /// The device's generation when this was compiled: after a reset the memory and kernels are dead.
  std::uint64_t generation() const;

 private:
  CompiledGraph();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt
