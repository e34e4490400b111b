// Executable: the device it runs on (by name, the process default, $SMELT_DEVICE or measured
// placement), and the recovery around one CompiledGraph when that device fails.
#include "runtime/exec/executable.h"

#include "codegen/log.h"
#include "ir/dims.h"
#include "ir/verifier.h"
#include "runtime/cpu/cpu_device.h"
#include "runtime/device/device_list.h"
#include "runtime/device/memory_pool.h"
#include "runtime/exec/compiled_graph.h"
#include "runtime/exec/run_support.h"
#include "runtime/exec/size_general_kernels.h"
#include "runtime/exec/working_memory.h"
#include "passes/pass_manager.h"
#include "runtime/placement/placement.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace smelt {

// SMELT_PIPELINE overrides the default pipeline (bisecting a miscompile: "canonicalize,cse,dce" ...).
std::string pipelineFromEnvironment() {
  const char* env = std::getenv("SMELT_PIPELINE");
  return env ? std::string(env) : std::string(kDefaultPipeline);
}

// SMELT_BLAS=0 keeps every product on generated kernels.
bool replayFromEnvironment() {
  const char* v = std::getenv("SMELT_CUDA_GRAPHS");
  return !(v && std::string_view(v) == "0");
}

bool checkIndicesFromEnvironment() {
  const char* v = std::getenv("SMELT_CHECK_INDICES");
  return !(v && std::string_view(v) == "0");
}

bool tf32FromEnvironment() {
  const char* tf32 = std::getenv("SMELT_TF32");
  return tf32 && std::string_view(tf32) == "1";
}

bool blasFromEnvironment() {
  const char* useBlas = std::getenv("SMELT_BLAS");
  return !(useBlas && std::string_view(useBlas) == "0");
}

struct Executable::Impl {
  CompileOptions options;
  std::unique_ptr<CompiledGraph> compiled;
  /// The graph as given, kept for compiling again (after a reset, or on the CPU) where the device
  /// may fail; empty on the CPU, which has nothing to recover from.
  std::optional<Graph> source;
  std::shared_ptr<Device> device;
  std::string deviceId;
  int fallbacks = 0;
  int reinitializations = 0;
  bool released = false;

  /// A graph with symbolic dimensions, as given: every binding its runs bring compiles once into an
  /// executable of its own (a specialization), kept for the next run with that binding.
  std::optional<Graph> symbolic;
  std::map<DimBinding, std::unique_ptr<Executable>> byBinding;
  Executable* current = nullptr;
  /// Bindings compiled so far, and when each kept one was last used: past maxKept() of them (each holds
  /// its slots and kernels; the working memory is one block for all: options.workingMemory, made on the
  /// first), the least recently used is dropped, logged; compiling it again finds its kernels in the
  /// kernel cache.
  int compiles = 0;
  int64_t uses = 0;
  std::map<DimBinding, int64_t> lastUse;
  static int maxKept() {
    const char* env = std::getenv("SMELT_MAX_SPECIALIZATIONS");
    const int n = env ? std::atoi(env) : 0;
    return n > 0 ? n : 32;
  }
  /// The kernels its specializations share across sizes (made on the first one).
  std::shared_ptr<SizeGeneralKernels> sizeGeneral;

  /// A second binding near `binding` (each symbol one more, or one less at the top of its range),
  /// or nothing when a symbol's range holds one size.
  std::optional<DimBinding> probeNear(const DimBinding& binding) const {
    DimBinding probe = binding;
    for (auto& [symbol, extent] : probe) {
      Graph::DimRange range = symbolic->dimRange(symbol);
      if (extent + 1 <= range.max) ++extent;
      else if (extent - 1 >= std::max<int64_t>(range.min, 1)) --extent;
      else return std::nullopt;
    }
    return probe;
  }

  /// The shared kernels, on the first binding: the graph lowered at a probe binding as well, so that
  /// what varies with the sizes shows. Without a probe (or when it fails) each binding compiles its
  /// own kernels.
  void shareKernelsAcrossSizes(const DimBinding& binding) {
    if (sizeGeneral) return;
    sizeGeneral = std::make_shared<SizeGeneralKernels>();
    std::optional<DimBinding> probe = probeNear(binding);
    auto lowered = [&]() -> Expected<std::map<std::string, codegen::Kernel>> {
      SMELT_TRY(Graph bound, bindDims(*symbolic, *probe));
      SMELT_TRY(std::shared_ptr<Device> on, openDevice(deviceId));
      CompileOptions probing = options;
      probing.device = deviceId;
      return CompiledGraph::lowerKernels(bound, on, probing);
    };
    if (!probe) return;
    Expected<std::map<std::string, codegen::Kernel>> kernels = lowered();
    if (!kernels) {
      logger().info("@{}: no kernels shared across sizes: lowering it for {} failed: {}", symbolic->name(),
                    bindingToString(*probe), kernels.error().message());
      return;
    }
    sizeGeneral->setProbe(std::move(*kernels));
  }

  /// The specialization for inputs of types `fed`, compiled on first use.
  Expected<Executable*> specializationFor(std::span<const TensorType> fed) {
    SMELT_TRY(DimBinding binding, bindingFromInputs(*symbolic, fed));
    auto it = byBinding.find(binding);
    const bool added = it == byBinding.end();
    if (added) {
      logger().info("@{}: compiling for {} (a new binding of its symbolic dimensions; {} compiled before)",
                    symbolic->name(), bindingToString(binding), compiles);
      SMELT_TRY(Graph bound, bindDims(*symbolic, binding));
      shareKernelsAcrossSizes(binding);
      // One working block for every binding, the largest one's (runtime/exec/working_memory.h).
      if (!options.workingMemory) options.workingMemory = std::make_shared<SharedWorkingMemory>();
      CompileOptions specialized = options;
      specialized.device = deviceId;
      specialized.sizeGeneral = sizeGeneral;
      SMELT_TRY(std::unique_ptr<Executable> exe, Executable::compile(bound, specialized));
      const CompileReport& r = exe->report();
      logger().info("@{}: {}: {} kernels, {} of them shared by every size, {} compiled (not from a cache)",
                    symbolic->name(), bindingToString(binding), r.kernels, r.sizeGeneralKernels,
                    r.kernels - r.cacheHits);
      ++compiles;
      it = byBinding.emplace(binding, std::move(exe)).first;
    }
    current = it->second.get();
    lastUse[it->first] = ++uses;
    if (added && static_cast<int>(byBinding.size()) > maxKept()) {
      auto oldest = std::min_element(lastUse.begin(), lastUse.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
      logger().info("@{}: dropping the executable for {} (at most {} bindings are kept: SMELT_MAX_SPECIALIZATIONS)",
                    symbolic->name(), bindingToString(oldest->first), maxKept());
      byBinding.erase(oldest->first);
      lastUse.erase(oldest);
    }
    return current;
  }

  Status compileOn(const std::shared_ptr<Device>& on) {
    SMELT_TRY(std::vector<std::unique_ptr<CompiledGraph>> one, CompiledGraph::compileAll({&*source, 1}, on, options));
    compiled = std::move(one.front());
    device = on;
    deviceId = on->id();
    if (released) compiled->releaseParameterValues();
    return Status::success();
  }

  /// Moves this executable to the CPU after `why`, with one warning.
  Status fallBackToCpu(const Error& why) {
    logger().warn("@{}: {}; this executable falls back to the CPU", source->name(), why.message());
    compiled.reset();
    ++fallbacks;
    return compileOn(cpuDevice());
  }

  /// After `why` (a lost device): the device reset, unless another executable reset it since this one
  /// compiled (then it is fresh), and the graph compiled on it again.
  Status resetAndCompile(const Error& why) {
    logger().warn("@{}: {}; resetting {}", source->name(), why.message(), deviceId);
    ++reinitializations;
    const bool resetSince = compiled && compiled->generation() != device->generation();
    compiled.reset();
    Status reset = resetSince ? Status::success() : device->reset();
    return reset.ok() ? compileOn(device) : reset;
  }

  /// After a failed host run: a lost device is reset, the graph compiled on it again and the run
  /// repeated; out of memory, or a device that stays lost, moves the executable to the CPU.
  template <typename Run>
  Status recover(Status status, const Run& again) {
    if (status.ok() || !options.fallback || !source || device->kind() == DeviceKind::kCpu) return status;
    if (isDeviceLost(status.error())) {
      Status reset = resetAndCompile(status.error());
      status = reset.ok() ? again() : reset;
      if (status.ok()) return status;
    }
    if (isOutOfMemory(status.error()) || isDeviceLost(status.error()) || !compiled) {
      SMELT_CHECK_OK(fallBackToCpu(status.error()));
      return again();
    }
    return status;
  }
};

Executable::Executable() : impl_(std::make_unique<Impl>()) {}
Executable::~Executable() = default;

namespace {

/// The device `requested` names ("llvm" is the CPU's), or the process default, $SMELT_DEVICE, or the
/// measured placement of `graph` ("auto").
Expected<std::shared_ptr<Device>> chooseDevice(const Graph& graph, const std::string& requested) {
  std::string wanted = requested == "llvm" ? "cpu" : requested;
  if (wanted.empty()) wanted = resolveRequestedDevice("");
  if (wanted == "llvm") wanted = "cpu";
  if (wanted == "auto") {
    PlacementDecision decision = choosePlacement(graph);
    logger().debug("@{}: placed on {}: {}", graph.name(), decision.deviceId, decision.reason);
    wanted = decision.deviceId;
  }
  return openDevice(wanted);
}

}  // namespace

Expected<std::unique_ptr<Executable>> Executable::compile(const Graph& graph, const CompileOptions& options) {
  SMELT_TRY(std::vector<std::unique_ptr<Executable>> one, compileAll({&graph, 1}, options));
  return std::move(one.front());
}

Expected<std::vector<std::unique_ptr<Executable>>> Executable::compileAll(std::span<const Graph> graphs,
                                                                          const CompileOptions& options) {
  std::vector<std::unique_ptr<Executable>> exes;
  if (graphs.empty()) return exes;
  SMELT_TRY(std::shared_ptr<Device> device, chooseDevice(graphs.front(), options.device));
  bool anySymbolic = false;
  for (const Graph& g : graphs) anySymbolic = anySymbolic || !g.symbolicDims().empty();
  if (anySymbolic) {
    // Each on its own: a symbolic graph compiles when its first run binds its dimensions.
    for (const Graph& graph : graphs) {
      if (graph.symbolicDims().empty()) {
        CompileOptions on = options;
        on.device = device->id();
        SMELT_TRY(std::unique_ptr<Executable> exe, compile(graph, on));
        exes.push_back(std::move(exe));
        continue;
      }
      SMELT_CHECK_OK(verifyGraph(graph));
      std::unique_ptr<Executable> exe(new Executable());
      exe->impl_->options = options;
      exe->impl_->symbolic = graph.clone();
      exe->impl_->device = device;
      exe->impl_->deviceId = device->id();
      exes.push_back(std::move(exe));
    }
    return exes;
  }
  Expected<std::vector<std::unique_ptr<CompiledGraph>>> compiled = CompiledGraph::compileAll(graphs, device, options);
  const bool onCpu = device->kind() == DeviceKind::kCpu;
  if (!compiled && !onCpu && options.fallback && isDeviceLost(compiled.error())) {
    // Lost while compiling (uploading constants, loading kernels): reset the device and compile once
    // more, as a host run does; a device that stays lost sends the graphs to the CPU below.
    logger().warn("@{}: {}; resetting {}", graphs.front().name(), compiled.error().message(), device->id());
    Status reset = device->reset();
    compiled = reset.ok() ? CompiledGraph::compileAll(graphs, device, options) : Expected<std::vector<std::unique_ptr<CompiledGraph>>>(reset.error());
  }
  if (!compiled && !onCpu && options.fallback && (isOutOfMemory(compiled.error()) || isDeviceLost(compiled.error()))) {
    // Out of memory even after the pool freed its cache, or a device lost again: each graph on the CPU.
    for (const Graph& graph : graphs) {
      std::unique_ptr<Executable> exe(new Executable());
      exe->impl_->options = options;
      exe->impl_->source = graph.clone();
      SMELT_CHECK_OK(exe->impl_->fallBackToCpu(compiled.error()));
      exes.push_back(std::move(exe));
    }
    return exes;
  }
  if (!compiled) return compiled.error();
  for (size_t g = 0; g < graphs.size(); ++g) {
    std::unique_ptr<Executable> exe(new Executable());
    Impl& x = *exe->impl_;
    x.options = options;
    x.compiled = std::move((*compiled)[g]);
    x.device = device;
    x.deviceId = device->id();
    if (!onCpu && options.fallback) x.source = graphs[g].clone();
    exes.push_back(std::move(exe));
  }
  return exes;
}

Expected<std::vector<Tensor>> Executable::run(const TensorMap& feeds) {
  std::vector<Tensor> outputs;
  SMELT_CHECK_OK(run(feeds, outputs));
  return outputs;
}

namespace {

/// The types of tensors fed by position to `graph`'s inputs; a missing one is an error naming it.
template <typename T>
Expected<std::vector<TensorType>> typesOf(const Graph& graph, std::span<const T* const> tensors) {
  if (tensors.size() != graph.inputs().size()) {
    return makeError("graph @{} takes {} inputs, given {}", graph.name(), graph.inputs().size(), tensors.size());
  }
  std::vector<TensorType> types;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Value* v = graph.inputs()[i];
    if (!tensors[i]) return makeError("input '{}' ({}) was not fed", v->name(), v->type().toString());
    types.push_back(tensors[i]->type());
  }
  return types;
}

}  // namespace

Status Executable::run(const TensorMap& feeds, std::vector<Tensor>& outputs) {
  if (impl_->symbolic) {
    SMELT_TRY(BoundFeeds fed, bindFeeds(*impl_->symbolic, feeds));
    SMELT_TRY(std::vector<TensorType> types, typesOf<Tensor>(*impl_->symbolic, fed.inputs));
    SMELT_TRY(Executable * exe, impl_->specializationFor(types));
    return exe->run(feeds, outputs);
  }
  if (!impl_->compiled) return makeError("@{}: no executable left after a failed recovery (see the warnings above)", impl_->source->name());
  SMELT_TRY(BoundFeeds fed, bindFeeds(graph(), feeds));
  return run(fed.inputs, fed.parameters, outputs);
}

Status Executable::run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
                       std::vector<Tensor>& outputs) {
  Impl& x = *impl_;
  if (x.symbolic) {
    SMELT_TRY(std::vector<TensorType> types, typesOf<Tensor>(*x.symbolic, inputs));
    SMELT_TRY(Executable * exe, x.specializationFor(types));
    return exe->run(inputs, parameters, outputs);
  }
  if (!x.compiled) return makeError("@{}: no executable left after a failed recovery (see the warnings above)", x.source->name());
  // A device another executable reset since: compile again before running on dead memory.
  if (x.compiled->generation() != x.device->generation() && x.source) {
    ++x.reinitializations;
    x.compiled.reset();
    SMELT_CHECK_OK(x.compileOn(x.device));
  }
  auto again = [&] { return x.compiled->run(inputs, parameters, outputs); };
  return x.recover(again(), again);
}

Status Executable::run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs) {
  if (impl_->symbolic) {
    SMELT_TRY(BoundFeedsOf<DeviceTensor> fed, bindFeeds(*impl_->symbolic, feeds));
    SMELT_TRY(std::vector<TensorType> types, typesOf<DeviceTensor>(*impl_->symbolic, fed.inputs));
    SMELT_TRY(Executable * exe, impl_->specializationFor(types));
    return exe->run(feeds, outputs);
  }
  if (!impl_->compiled) return makeError("@{}: no executable left after a failed recovery (see the warnings above)", impl_->source->name());
  SMELT_TRY(BoundFeedsOf<DeviceTensor> fed, bindFeeds(graph(), feeds));
  return run(fed.inputs, fed.parameters, outputs);
}

Status Executable::run(std::span<const DeviceTensor* const> inputs, std::span<const DeviceTensor* const> parameters,
                       std::vector<DeviceTensor>& outputs) {
  Impl& x = *impl_;
  if (x.symbolic) {
    SMELT_TRY(std::vector<TensorType> types, typesOf<DeviceTensor>(*x.symbolic, inputs));
    SMELT_TRY(Executable * exe, x.specializationFor(types));
    return exe->run(inputs, parameters, outputs);
  }
  if (!x.compiled) return makeError("@{}: no executable left after a failed recovery (see the warnings above)", x.source->name());
  // Device tensors cannot follow the executable to another device: a failure here is the caller's
  // to handle (their memory died with the device's context).
  return x.compiled->run(inputs, parameters, outputs);
}

Status Executable::recoverDevice(const Error& why) {
  Impl& x = *impl_;
  if (x.symbolic) {
    // Every binding's executable shares the device: each is compiled again.
    for (auto& [binding, exe] : x.byBinding) SMELT_CHECK_OK(exe->recoverDevice(why));
    return Status::success();
  }
  if (!isDeviceLost(why) || !x.source || x.device->kind() == DeviceKind::kCpu) return why;
  if (Status reset = x.resetAndCompile(why); reset.ok() || !x.options.fallback) return reset;
  return x.fallBackToCpu(why);
}

void Executable::releaseParameterValues() {
  impl_->released = true;
  if (impl_->compiled) impl_->compiled->releaseParameterValues();
  if (impl_->source) impl_->source->releaseParameterValues();
  if (impl_->symbolic) impl_->symbolic->releaseParameterValues();
  for (auto& [binding, exe] : impl_->byBinding) exe->releaseParameterValues();
}

// A symbolic executable answers for the specialization its last run used (the source graph, an
// empty report and program before its first run).
namespace {
const std::string kNothing;
const CompileReport kNoReport;
}  // namespace

int64_t Executable::replays() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->replays() : 0;
  return impl_->compiled ? impl_->compiled->replays() : 0;
}

bool Executable::donated(size_t output) const {
  if (impl_->symbolic) return impl_->current && impl_->current->donated(output);
  return impl_->compiled && impl_->compiled->donated(output);
}
const Graph& Executable::graph() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->graph() : *impl_->symbolic;
  return impl_->compiled->graph();
}
const std::vector<Value*>& Executable::inputs() const {
  return impl_->symbolic ? impl_->symbolic->inputs() : impl_->compiled->graph().inputs();
}
const CompileReport& Executable::report() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->report() : kNoReport;
  return impl_->compiled->report();
}
const std::shared_ptr<Device>& Executable::device() const {
  return impl_->current ? impl_->current->device() : impl_->device;
}
const std::string& Executable::deviceId() const {
  return impl_->current ? impl_->current->deviceId() : impl_->deviceId;
}
int Executable::fallbacks() const { return impl_->current ? impl_->current->fallbacks() : impl_->fallbacks; }
int Executable::reinitializations() const {
  return impl_->current ? impl_->current->reinitializations() : impl_->reinitializations;
}
int Executable::specializations() const { return impl_->compiles; }
int64_t Executable::workingMemoryBytes() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->workingMemoryBytes() : 0;
  return impl_->compiled ? impl_->compiled->workingMemoryBytes() : 0;
}
const std::string& Executable::source() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->source() : kNothing;
  return impl_->compiled->loadInfo().source;
}
const std::string& Executable::assembly() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->assembly() : kNothing;
  return impl_->compiled->loadInfo().assembly;
}
const std::string& Executable::target() const {
  if (impl_->symbolic) return impl_->current ? impl_->current->target() : kNothing;
  return impl_->compiled->loadInfo().target;
}

std::vector<std::string> backendNames() {
  std::vector<std::string> names = {"llvm"};
#ifdef SMELT_HAVE_OPENCL
  names.push_back("opencl");
#endif
  names.insert(names.end(), {"cuda", "hip", "auto", "reference"});
  return names;
}

Expected<std::vector<Tensor>> runOnce(const Graph& graph, const TensorMap& feeds, const std::string& backend) {
  if (backend == "reference") return interpret(graph, feeds);
  auto exe = Executable::compile(graph, {.device = backend});
  if (!exe) return exe.error();
  return (*exe)->run(feeds);
}

}  // namespace smelt
