// A graph compiled once for one device, then run any number of times: the default pipeline (fusion
// included), one kernel per remaining node in schedule order (or a vendor product, the op's own host
// code, or the reference interpreter for what no kernel computes), all in one arena the memory
// planner laid out. Every device goes through this same code: the CPU (LLVM JIT kernels, BLAS),
// OpenCL, CUDA and HIP differ only in their DeviceBackend hooks (device_backend.h). Running compiles
// nothing and allocates nothing on the device.
//   SMELT_TRY(auto exe, Executable::compile(graph));                        // the CPU
//   SMELT_TRY(auto gpu, Executable::compile(graph, {.device = "cuda"}));    // or "opencl:0", "auto"
//   SMELT_TRY(std::vector<Tensor> outputs, gpu->run(feeds));               // host in, host out
//   SMELT_CHECK_OK(gpu->run(deviceFeeds, deviceOutputs));                  // nothing crosses to the host
// Where the device fails, the executable keeps working: out of memory (after the device's pool has
// freed its cache) falls back to the CPU with one warning; a lost device (a sticky CUDA error, say)
// is reset and the graph compiled on it again, and falls back to the CPU if that fails too.
#pragma once

#include "ir/interpreter.h"
#include "runtime/device/device_tensor.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// $SMELT_PIPELINE, else the default optimizing pipeline (passes/pass_manager.h).
std::string pipelineFromEnvironment();
/// False when $SMELT_BLAS is 0.
bool blasFromEnvironment();
/// $SMELT_TF32 == "1".
bool tf32FromEnvironment();
/// False when $SMELT_CUDA_GRAPHS is 0.
bool replayFromEnvironment();
/// False when $SMELT_CHECK_INDICES is 0.
bool checkIndicesFromEnvironment();

/// How to compile, and where. An aggregate: Executable::compile(graph, {.device = "cuda"}).
class SizeGeneralKernels;
class SharedWorkingMemory;

struct CompileOptions {
  /// Passes to run first ($SMELT_PIPELINE, else the default optimizing pipeline).
  std::string pipeline = pipelineFromEnvironment();
  /// Where to run: "cpu", "opencl[:N]", "cuda[:N]", "hip[:N]", "llvm" (the CPU), "auto" (measured
  /// placement: runtime/placement/placement.h), or empty: setDefaultDevice()'s device, else
  /// $SMELT_DEVICE, else the CPU.
  std::string device;
  /// Whether kernels may run on the thread pool (CPU; off: every kernel on the calling thread).
  bool parallel = true;
  /// Whether products may run on the device's vendor library (the CPU's BLAS, CLBlast); SMELT_BLAS=0
  /// turns it off: generated kernels compute every product.
  bool blas = blasFromEnvironment();
  /// Whether f32 products may use TF32 tensor cores (inputs rounded to a 10-bit mantissa), as
  /// PyTorch's torch.backends.cuda.matmul.allow_tf32; off by default, as there. $SMELT_TF32=1 turns it
  /// on. Only cuBLAS reads it.
  bool tf32 = tf32FromEnvironment();
  /// Whether a device that can record its streams' work (CUDA graphs) records a run once and replays
  /// it as one launch on later runs (not the first, whose one-time work is not recorded; recorded
  /// again when fed at new addresses, the last four recordings kept so that buffers which take turns
  /// replay each of theirs, and given up after eight new recordings). $SMELT_CUDA_GRAPHS=0
  /// turns it off. Never while profiling or checking kernels, nor with host or interpreted steps.
  bool replay = replayFromEnvironment();
  /// Whether ops with a host implementation (OpDef::host) run it instead of their kernel (CPU).
  bool host = true;
  /// Whether gather and scatter_add report an index out of range as the reference does (an error
  /// naming the node after the run) instead of reading a clamped one or dropping the update: each
  /// computes a flag beside it (passes/index_checks.h), read back with the outputs; a device-resident
  /// run then waits for its flags. $SMELT_CHECK_INDICES=0 turns it off (JAX's clamping behaviour).
  bool checkIndices = checkIndicesFromEnvironment();
  /// Outputs whose values may be written over a parameter's fed tensor, (parameter, output) by name: a
  /// training step's new weights over the old. Honoured where the output's kernel is the parameter's
  /// last reader and reads it only at the index it writes (see Executable::donated); the caller's
  /// parameter tensor then holds the output after a run, and the output tensor is left as it was.
  std::vector<std::pair<std::string, std::string>> donate;
  /// Whether device failures fall back to the CPU (see the file comment); off: they are errors.
  bool fallback = true;
  /// Set by a graph with symbolic dimensions for the executables it compiles per binding: the kernels
  /// they share across sizes (runtime/exec/size_general_kernels.h). Null: every kernel as lowered.
  std::shared_ptr<SizeGeneralKernels> sizeGeneral;
  /// The working memory (runtime/exec/working_memory.h) shared by every executable compiled with it on
  /// one device, which must never run at once: a symbolic graph's specializations, a training step's
  /// batch sizes. One block, the size of their largest need, is held for all. Null: its own.
  std::shared_ptr<SharedWorkingMemory> workingMemory;
};

/// What compiling did: where, generated kernels, cache hits, vendor products, seconds.
struct CompileReport {
  /// The device it runs on ("cpu", "cuda:0").
  std::string device;
  int64_t kernels = 0;
  /// Of those, kernels run as one block of threads per outer point (GPUs: codegen/map_to_blocks.h).
  int64_t blockKernels = 0;
  /// Of those, kernels run as vectors of points per thread (GPUs: codegen/vectorize.h).
  int64_t vectorKernels = 0;
  /// Products (matmul, gemm, conv2d) computed by a vendor library; their epilogues count as kernels.
  int64_t blas = 0;
  /// Kernels whose compiled code came from a cache instead of a compiler (sharedKernels among them).
  int64_t cacheHits = 0;
  /// Of the kernels, those that compute what an earlier kernel of the same image computes and run its
  /// code, compiling nothing of their own (runtime/exec/distinct_kernels.h).
  int64_t sharedKernels = 0;
  /// Of the kernels, those compiled for every size of a symbolic graph's dimensions (their sizes read
  /// at run time: codegen/size_general.h); each later binding reuses them from the kernel cache.
  int64_t sizeGeneralKernels = 0;
  /// Nodes run on the reference interpreter: no kernel lowering, or one the device lacks.
  int64_t interpreted = 0;
  /// Nodes run by their op's own CPU implementation (OpDef::host) instead of a kernel.
  int64_t host = 0;
  double seconds = 0;
  /// The device memory the executable holds while it runs: the planned intermediates (plannedBytes), the
  /// largest product's scratch, and (off the host) the constants.
  int64_t arenaBytes = 0;
  /// Of those, the working memory: the planned intermediates and the scratch, which hold nothing between
  /// runs and may be shared (CompileOptions::workingMemory).
  int64_t workingBytes = 0;
  /// The memory plan's peak over the intermediate values (passes/plan_memory.h): what a memory budget bounds.
  int64_t plannedBytes = 0;
};

class CompiledGraph;

/// See the file comment. Not thread-safe per instance (one arena); compile one per thread.
class Executable {
 public:
  static Expected<std::unique_ptr<Executable>> compile(const Graph& graph, const CompileOptions& options = {});
  /// Compiles several graphs for one device with all their kernels in one program or module: one
  /// compiler run instead of one per graph (an OpenCL build or NVRTC costs tens of milliseconds each).
  static Expected<std::vector<std::unique_ptr<Executable>>> compileAll(std::span<const Graph> graphs,
                                                                       const CompileOptions& options = {});
  ~Executable();

  /// Runs on `feeds` (every graph input, exactly its type, a symbolic dimension taking any extent in
  /// its range; parameters by name override their values); returns the outputs in graph order.
  Expected<std::vector<Tensor>> run(const TensorMap& feeds);
  /// The same into `outputs`, reusing its tensors when their types match (no allocation at all on
  /// repeated runs; on the CPU kernels write graph outputs straight into them).
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs);
  /// The same with feeds by position: `inputs[i]` for graph input i (exactly its type), `parameters[i]`
  /// for parameter i or null for its value. No names are looked up and, on the CPU, nothing is copied.
  Status run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
             std::vector<Tensor>& outputs);
  /// Runs on tensors that stay on this executable's device: feeds are bound where they are, outputs
  /// are device tensors (reused when `outputs` holds ones of the right types that nothing else
  /// shares, else fresh from the device's pool). Nothing crosses to the host, and on GPUs the call
  /// returns before the kernels finish (the outputs' later users wait for them on the device).
  Status run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs);
  /// The same with feeds by position.
  Status run(std::span<const DeviceTensor* const> inputs, std::span<const DeviceTensor* const> parameters,
             std::vector<DeviceTensor>& outputs);

  /// Frees the parameters' initial values (kept since compile time) for an executable whose
  /// parameters are always fed, as training steps feed theirs; a run without one is then an error
  /// naming it.
  void releaseParameterValues();
  /// Whether output `i` is written over its donated parameter's tensor (CompileOptions::donate).
  bool donated(size_t output) const;
  /// Runs replayed as one launch from a recording (CompileOptions::replay: CUDA graphs) so far, by the
  /// compiled graph in use (a symbolic executable's last specialization).
  int64_t replays() const;
  /// The graph after the pipeline, as it runs: its outputs are the source graph's, then the flags of
  /// its index checks (CompileOptions::checkIndices), named __index_check_N, which runs do not return.
  const Graph& graph() const;
  /// The graph's inputs as they are declared: with their symbolic extents where the graph has them (graph()
  /// is the last binding's, whose inputs are that binding's sizes).
  const std::vector<Value*>& inputs() const;
  const CompileReport& report() const;
  /// The device it runs on now (the CPU after a fallback).
  const std::shared_ptr<Device>& device() const;
  /// Its id: "cpu", "opencl:0", "cuda:0".
  const std::string& deviceId() const;
  /// How many times it moved to the CPU, or reset its device and compiled again.
  int fallbacks() const;
  int reinitializations() const;
  /// After a device-resident run failed because the device was lost (isDeviceLost(why)): resets the
  /// device (unless another executable already did) and compiles the graph on it again, or on the CPU
  /// where it stays lost (with CompileOptions::fallback). The caller's device tensors died with the
  /// old context: it makes them again. Host runs do this themselves.
  Status recoverDevice(const Error& why);
  /// A graph with symbolic dimensions (ir/dims.h) compiles once per binding its runs bring, on the
  /// first run with that binding; each such compile is logged (SMELT_LOG=info) and counted here. 0
  /// for static graphs. Kernels whose numbers alone change with the sizes compile once for all of them
  /// (CompileReport::sizeGeneralKernels). The 32 most recently used bindings are kept
  /// ($SMELT_MAX_SPECIALIZATIONS), all in one working memory (workingMemoryBytes()), each with the slots
  /// of its own inputs and constants off the host; one dropped compiles again when it returns.
  int specializations() const;
  /// The working memory it holds (CompileOptions::workingMemory): for a symbolic graph one block, the
  /// largest specialization's need, however many are kept; shared with other executables where the
  /// options gave it one.
  int64_t workingMemoryBytes() const;
  /// The rendered program (OpenCL C, CUDA C, HIP; empty on the CPU), what the device loaded where it
  /// is text (PTX), and the target it was compiled for ("sm_90", "gfx90a").
  const std::string& source() const;
  const std::string& assembly() const;
  const std::string& target() const;

 private:
  Executable();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What `--backend` takes in this build, the default first: "llvm" (the CPU), "opencl", "cuda", "hip",
/// "auto" (measured placement) and "reference" (the reference interpreter, no compiling); a device
/// id ("cuda:1") works too.
std::vector<std::string> backendNames();

/// Runs `graph` once on `backend` (any of backendNames(), or a device id): the reference
/// interpreter for "reference", else a compiled Executable.
Expected<std::vector<Tensor>> runOnce(const Graph& graph, const TensorMap& feeds, const std::string& backend);

}  // namespace smelt
