// A graph compiled for an OpenCL device (PoCL's CPU by default): the default pipeline, every kernel
// rendered to OpenCL C (codegen/opencl) in one program per graph, and one device arena holding the
// memory plan's buffers and a slot per input, parameter and constant. Running it uploads the inputs,
// enqueues one kernel per node in schedule order and reads the outputs back; it compiles and
// allocates nothing on the device. The structure mirrors the CPU Executable (runtime/executable.h).
//   SMELT_TRY(auto exe, OpenClExecutable::compile(graph));
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

namespace opencl {
class Program;
struct DeviceInfo;
}  // namespace opencl

/// The options every program is built with on `device`: OpenCL C 1.2, and correctly rounded f32
/// division and sqrt where the device has them (PoCL does).
std::string openClBuildOptions(const opencl::DeviceInfo& device);

/// How to compile for OpenCL.
struct OpenClCompileOptions {
  /// Passes to run first (the default optimizing pipeline).
  std::string pipeline;
  /// The device (opencl::Context::create's selector); empty: $SMELT_OPENCL_DEVICE, else PoCL's CPU.
  std::string device;
  /// Whether f32/f64 matmul and gemm may run on CLBlast where it is installed (SMELT_BLAS=0 turns it
  /// off, as for the CPU): the rest of such a kernel runs after it as a generated epilogue.
  bool blas = true;
  OpenClCompileOptions();
};

/// See the file comment. Not thread-safe per instance (one arena, kernels with fixed arguments);
/// instances may run concurrently (they share the device's in-order queue).
class OpenClExecutable {
 public:
  static Expected<std::unique_ptr<OpenClExecutable>> compile(const Graph& graph,
                                                             const OpenClCompileOptions& options = {});
  /// Compiles several graphs with all their kernels in one OpenCL program: one build instead of one
  /// per graph (a build costs ~30 ms even from PoCL's disk cache, ~0.1-0.7 s cold).
  static Expected<std::vector<std::unique_ptr<OpenClExecutable>>> compileAll(
      std::span<const Graph> graphs, const OpenClCompileOptions& options = {});
  ~OpenClExecutable();

  /// Runs on `feeds` (every graph input, exactly its type; parameters by name override their
  /// values for this run); returns the outputs in graph order.
  Expected<std::vector<Tensor>> run(const TensorMap& feeds);
  /// The same into `outputs`, reusing its tensors when their types match (no host allocation on
  /// repeated runs).
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs);
  /// Runs on tensors that stay on the device: feeds (on this executable's device) are copied on the
  /// device into the arena, outputs into device tensors from the pool (reused when `outputs` holds
  /// tensors of the right types that nothing else shares). Nothing crosses to the host.
  Status run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs);
  /// The device it runs on (runtime/device).
  std::shared_ptr<Device> device() const;
  /// The graph after the pipeline, as it runs.
  const Graph& graph() const;
  /// Kernels, nodes on the interpreter, seconds, arena bytes; cacheHits counts the kernels whose
  /// program this process had already built (PoCL's own disk cache is not visible here).
  const CompileReport& report() const;
  /// The OpenCL C program: the prelude and every kernel.
  const std::string& source() const;
  /// The device's name ("pthread-skylake-avx512-Intel(R) Xeon(R) Processor").
  const std::string& deviceName() const;

 private:
  OpenClExecutable();
  Status prepare(const Graph& graph, const OpenClCompileOptions& options, const std::string& symbolPrefix);
  Status finish(std::shared_ptr<opencl::Program> program, const std::string& source, bool hit);
  /// The kernels, in order, on what the arena holds.
  Status execute();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt
