// CompiledGraph's state, shared by its two halves: compiling (compiled_graph.cpp) and running
// (compiled_graph_run.cpp). Private to runtime/exec.
#pragma once

#include "ir/op_registry.h"
#include "passes/index_checks.h"
#include "runtime/device/host_staging.h"
#include "runtime/device/memory_pool.h"
#include "runtime/exec/arena_layout.h"
#include "runtime/exec/compile_progress.h"
#include "runtime/exec/compiled_graph.h"
#include "runtime/exec/step_profile.h"
#include "runtime/exec/working_memory.h"

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace smelt {

/// Where a device convolution's kernels and GEMM read and write: the node's first or second operand,
/// the columns at the start of the step's scratch, a second buffer after them, or the product.
enum class ConvPlace : uint8_t { kFirst, kSecond, kColumns, kSecondScratch, kProduct };

struct DeviceConvolution {
  struct Helper {
    int64_t kernel = -1;
    std::string symbol;
    LaunchShape shape;
    std::unique_ptr<PreparedLaunch> launch;
    ConvPlace in = ConvPlace::kFirst, out = ConvPlace::kColumns;
  };
  std::vector<Helper> before, after;
  /// Per group, batched; its operands are places a and b (GemmPlan::operandA = 0, operandB = 1).
  GemmPlan gemm;
  ConvPlace a = ConvPlace::kSecond, b = ConvPlace::kColumns, c = ConvPlace::kProduct;
  /// Where kSecondScratch starts, in elements after the columns.
  int64_t secondScratch = 0;
};

/// One node's work in a compiled graph.
struct Step {
  /// kCollective: a collective over the executable's host buffers (OpDef::collectiveOnHost), without the copies
  /// the interpreter makes. kDeviceCollective: one over a device's buffers, on its streams
  /// (DeviceBackend::allReduce).
  enum class Kind { kKernel, kProduct, kHost, kCollective, kDeviceCollective, kInterpreted };
  Kind kind = Kind::kInterpreted;
  const Node* node = nullptr;
  std::string label;
  /// A kernel's provenance (the IR nodes it came from, with their ONNX or layer names), for profiles.
  std::vector<std::string> provenance;
  /// Where the node's operands, then its results (then, for a product with an epilogue, the
  /// product) live.
  std::vector<Binding> buffers;
  /// The buffers as a run binds them: fixed ones set when compiling, dynamic ones (their positions
  /// in dynamicBuffers) on every run.
  std::vector<KernelBufferArg> args;
  std::vector<uint32_t> dynamicBuffers;
  /// The kernel, or the product's epilogue, prepared with its arguments (null for none).
  std::unique_ptr<PreparedLaunch> launch;
  LaunchShape shape;
  /// A vendor product: its plan, and the bytes of its own product buffer (when no result of the
  /// node can hold it) and of its scratch, both in the arena's shared scratch region.
  std::optional<GemmPlan> product;
  int64_t productBytes = 0;
  int64_t scratchBytes = 0;
  /// The op's host implementation (Kind::kHost).
  HostKernel host;
  /// The collective over the step's host buffers (Kind::kCollective), its OpCall's types bound once.
  std::function<Status(char* const* buffers)> collective;
  /// A collective on the device (Kind::kDeviceCollective): which op, its tag (pairing a start with its wait),
  /// the mean or the sum, and its operand's type.
  struct OnDevice {
    enum class Op { kAllReduce, kStart, kWait } op = Op::kAllReduce;
    int64_t tag = 0;
    bool mean = false;
    TensorType type;
  };
  std::optional<OnDevice> onDevice;
  /// Its kernel among those being compiled (-1: none) and that kernel's symbol.
  int64_t kernel = -1;
  std::string symbol;
  /// Where the buffers are, per run, as host pointers (host steps, the CPU's products).
  std::vector<char*> pointers;
  /// A convolution on a device's BLAS (product->conv, not on the CPU): kernels that lay its operands
  /// out for one GEMM per group (batched), the GEMM, and kernels that bring its product to the
  /// result's layout (see planDeviceConvolution); each kernel prepared like a step's with its two
  /// buffers rebound on every run.
  std::optional<DeviceConvolution> conv;
};

struct CompiledGraph::Impl : WorkingMemoryUser {
  Graph graph;
  CompileOptions options;
  std::unique_ptr<DeviceBackend> backend;
  std::shared_ptr<Device> device;
  std::uint64_t generation = 0;
  /// Whether the host addresses the device's memory (the CPU): host tensors bound in place.
  bool hostMemory = false;
  /// The stream steps run on: the device's default, or one of the executable's own.
  std::unique_ptr<DeviceStream> ownStream;
  DeviceStream* stream = nullptr;
  /// The events that join the own stream to the default one at the start and end of a run, recorded
  /// again by every run (joinDefaultStream, rejoinDefaultStream). Declared after the stream: destroyed first.
  std::unique_ptr<DeviceEvent> joinEvent, rejoinEvent;

  std::vector<Step> steps;
  /// The stream all_reduce_start's sums run on beside the steps (made on the first), the event that orders each
  /// after what came before it on `stream`, and, by tag, the event its all_reduce_wait makes `stream` wait for.
  /// Declared after the stream: destroyed first.
  std::unique_ptr<DeviceStream> collectiveStream;
  std::unique_ptr<DeviceEvent> collectiveReady;
  std::unordered_map<int64_t, std::unique_ptr<DeviceEvent>> collectiveDone;
  /// Whether any step is a collective on the device (Step::Kind::kDeviceCollective).
  bool deviceCollectives = false;
  /// The graph's constants by Binding::kConstant index, and their values.
  std::vector<const Value*> constants;
  std::vector<Tensor> constantValues;
  ArenaLayout layout;
  /// The slots (off the host), and the working memory, shared with the graphs compiled with the same
  /// CompileOptions::workingMemory (its own otherwise), and where it is now.
  PooledBuffer slots;
  std::shared_ptr<SharedWorkingMemory> working;
  DeviceMemory workingBase;
  std::shared_ptr<DeviceKernels> kernels;
  KernelLoadInfo loadInfo;
  CompileReport report;

  /// Outputs a kernel computes (first name of each) and donated ones (value -> parameter).
  std::unordered_map<const Value*, int64_t> outputIndex;
  std::unordered_map<const Value*, int64_t> donatedTo;
  /// Per output: the parameter it is donated to, or -1.
  std::vector<int64_t> donatedParameter;
  std::vector<bool> donatedOutputs;
  /// Per output: where its value is once the steps ran (kOutput i for those a kernel writes).
  std::vector<Binding> outputSource;
  /// The index checks (passes/index_checks.h), whose flags are the graph's last outputs, and the
  /// tensors the flags come back in, kept between runs.
  std::vector<IndexCheck> indexChecks;
  std::vector<Tensor> hostFlags;
  std::vector<DeviceTensor> deviceFlags;
  /// The outputs the caller sees: the graph's, less the checks' flags.
  size_t callerOutputs() const { return graph.outputs().size() - indexChecks.size(); }
  /// Before a run: the flags' kept tensors appended to the caller's outputs.
  template <class T>
  static void lendFlags(std::vector<T>& outputs, std::vector<T>& kept, size_t callerOutputs) {
    if (outputs.size() != callerOutputs) return;
    for (T& t : kept) outputs.push_back(std::move(t));
    kept.clear();
  }
  /// After a run: the flags taken off the outputs (read on the host, a device's waited for) and the
  /// first raised check as an error.
  Status takeFlags(std::vector<Tensor>& outputs);
  Status takeFlags(std::vector<DeviceTensor>& outputs);
  /// The first raised flag's error, else success.
  Status raisedCheck(std::span<const Tensor> flags) const;
  std::vector<Tensor> flagValues;  // a device's flags read back, reused

  /// This run's bindings by position.
  std::vector<KernelBufferArg> inputArgs, parameterArgs, outputArgs, constantArgs;
  /// The general kernels' run-time values (Binding::kSizes), and where they are on the device.
  std::vector<int64_t> sizeValues;
  PooledBuffer sizeMemory;
  /// Per parameter: whether its slot holds a value other than its initial one (devices).
  std::vector<bool> parameterDirty;
  /// Per output: whether this run writes it over its fed parameter.
  std::vector<bool> donatedNow;
  std::shared_ptr<HostStaging> staging;
  std::vector<HostFetch> fetches;

  /// Told the stage while compiling (compileAll's), or null.
  CompileProgress* progress = nullptr;
  bool checkKernels = false;
  bool profiling = false;
  StepProfile profile;
  /// Whether the stream's timing events can be read (probed on the first profiled run of a device).
  std::optional<bool> eventTiming;
  bool probeEventTiming();
  /// Runs recorded for replays (CompileOptions::replay), each with the fed and returned buffers it was
  /// recorded with, the most recently replayed last (a training step whose state alternates between two
  /// buffers replays two), how many were recorded after the first, and whether replays are off for this
  /// executable. `runArgs`: this run's buffers, gathered in place (a replayed run allocates nothing).
  struct Recording {
    std::vector<std::pair<void*, int64_t>> args;
    std::unique_ptr<RecordedWork> work;
  };
  std::vector<Recording> recordings;
  std::vector<std::pair<void*, int64_t>> runArgs;
  int rerecords = 0;
  int64_t replays = 0;
  bool replayOff = false;
  int64_t executions = 0;
  /// Replays the run recorded with this run's buffers (recording it first where needed); false when this
  /// run must launch step by step.
  Expected<bool> replay();

  // Between prepare() and finish().
  std::chrono::steady_clock::time_point start;
  std::vector<codegen::Kernel> pendingKernels;
  std::vector<std::string> pendingSymbols;  // pendingKernels[i]'s symbol

  ~Impl() override;
  Status rebindWorkingMemory() override;
  /// Phase one: pipeline, plan, steps, kernels lowered (not compiled), arena laid out.
  Status prepare(const Graph& source, const std::string& symbolPrefix);
  /// Phase two, once `loaded` holds every kernel: arena, constants, launches.
  Status finish(std::shared_ptr<DeviceKernels> loaded, const KernelLoadInfo& info);

  Binding bind(const Value* v, const MemoryPlan& plan) const;
  Status planDonations();
  Status planProduct(Step& step);
  /// Step::conv for a convolution on a device's BLAS.
  Status planDeviceConvolution(Step& step, const std::string& symbolPrefix);
  /// Adds `kernel` to those being compiled (after the backend's kernel passes); its index. With
  /// `step` and options.sizeGeneral, its general form when it has one, the step then binding one more
  /// buffer, its run-time values.
  Expected<int64_t> addKernel(codegen::Kernel kernel, const std::string& symbolPrefix, LaunchShape& shape,
                              std::string& symbol, Step* step = nullptr);
  /// The working memory, a constant or this run's binding, as a kernel argument.
  KernelBufferArg resolve(const Binding& b, int64_t elementBytes) const;
  KernelBufferArg slotArg(int64_t offset, int64_t elementBytes = 1) const {
    return KernelBufferArg{slots.memory(), offset, elementBytes};
  }
  KernelBufferArg workingArg(int64_t offset, int64_t elementBytes = 1) const {
    return KernelBufferArg{workingBase, offset, elementBytes};
  }

  /// Rebinds every step's dynamic buffers to this run's feeds and outputs, then runs the steps.
  Status execute();
  Status runStep(Step& step);
  /// An all_reduce, all_reduce_start or all_reduce_wait on the device (Step::Kind::kDeviceCollective).
  Status runDeviceCollective(const Step& step);
  Status runDeviceConvolution(Step& step, const ProductBuffers& buffers);
  Status interpretStep(const Step& step);
  /// Copies of a step's operands (or results) to the host, waiting for them.
  Expected<std::vector<Tensor>> download(const Step& step, bool results);
  /// Joins the default stream (at a run's start) and lets it follow this run (at its end).
  Status joinDefaultStream();
  Status rejoinDefaultStream();
};

}  // namespace smelt
