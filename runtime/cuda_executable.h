// A graph compiled for a CUDA GPU: the default pipeline, every kernel rendered to CUDA C
// (codegen/cuda) in one source per graph, compiled by NVRTC to one PTX module for the device's
// compute capability, and one device arena (rented from the device's memory pool) holding the memory
// plan's buffers and a slot per input, parameter and constant. Running it uploads the inputs through
// pinned staging, launches one kernel per node in schedule order and reads the outputs back; or, fed
// DeviceTensors, keeps everything on the GPU. It compiles and allocates nothing on the device per run. The structure
// mirrors the OpenCL executable (runtime/opencl_executable.h). The driver is dlopen'ed
// (runtime/cuda/cuda_driver.h): without one, compile() is an error, never a crash.
//   SMELT_TRY(auto exe, CudaExecutable::compile(graph));
//   SMELT_TRY(std::vector<Tensor> outputs, exe->run(feeds));   // any number of times
#pragma once

#include "ir/interpreter.h"
#include "runtime/device/device_tensor.h"
#include "runtime/executable.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace smelt {

namespace cuda {
struct LoadedModule;
}  // namespace cuda

/// The NVRTC options every CUDA source is compiled with (besides the arch): IEEE semantics as the
/// reference computes them, so no FMA contraction (NVRTC's default contracts a*b+c).
std::vector<std::string> cudaNvrtcFlags();

/// How to compile for CUDA.
struct CudaCompileOptions {
  /// Passes to run first (the default optimizing pipeline; $SMELT_PIPELINE overrides it).
  std::string pipeline;
  /// The device ordinal ($SMELT_CUDA_DEVICE, else 0).
  int device = 0;
  CudaCompileOptions();
};

/// See the file comment. Not thread-safe per instance (one arena, kernels with fixed arguments);
/// instances may run concurrently (they share the device's default stream).
class CudaExecutable {
 public:
  /// Fails with "cuda backend: ..." when there is no driver, no such device, no NVRTC, or a driver
  /// too old for NVRTC's PTX.
  static Expected<std::unique_ptr<CudaExecutable>> compile(const Graph& graph,
                                                           const CudaCompileOptions& options = {});
  /// Compiles several graphs with all their kernels in one NVRTC source and one PTX module: one
  /// compile (~20 ms of fixed cost) instead of one per graph.
  static Expected<std::vector<std::unique_ptr<CudaExecutable>>> compileAll(
      std::span<const Graph> graphs, const CudaCompileOptions& options = {});
  ~CudaExecutable();

  /// Runs on `feeds` (every graph input, exactly its type; parameters by name override their
  /// values for this run); returns the outputs in graph order.
  Expected<std::vector<Tensor>> run(const TensorMap& feeds);
  /// The same into `outputs`, reusing its tensors when their types match (no host allocation on
  /// repeated runs).
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs);
  /// Runs on tensors that stay on the GPU: feeds (on this executable's device) are copied on the
  /// device into the arena, outputs into device tensors from the pool (reused when `outputs` holds
  /// tensors of the right types that nothing else shares). Nothing crosses to the host.
  Status run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs);
  /// The device it runs on (runtime/device).
  std::shared_ptr<Device> device() const;
  /// The graph after the pipeline, as it runs.
  const Graph& graph() const;
  /// Kernels, nodes on the interpreter, seconds, arena bytes; cacheHits counts the kernels whose
  /// PTX came from the kernel cache (memory or disk) or whose module this process had loaded.
  const CompileReport& report() const;
  /// The CUDA C source: the prelude and every kernel.
  const std::string& source() const;
  /// The PTX the module was loaded from (empty when the graph has no kernel).
  const std::string& ptx() const;
  /// The NVRTC arch the PTX targets ("compute_90").
  const std::string& arch() const;
  /// The device's name ("NVIDIA H100 80GB HBM3").
  const std::string& deviceName() const;

 private:
  CudaExecutable();
  Status prepare(const Graph& graph, const CudaCompileOptions& options, const std::string& symbolPrefix);
  Status finish(std::shared_ptr<const cuda::LoadedModule> module, bool hit);
  /// Enqueues every step on the device's default stream (interpreted nodes wait for their operands).
  Status execute();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt
