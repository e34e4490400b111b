// CudaExecutable: compile = pipeline + plan + one rendered kernel per node, all in one CUDA C source,
// NVRTC -> PTX (through the kernel cache) -> one module, + one device arena; run = upload the feeds,
// launch the kernels in order, read the outputs.
#include "runtime/cuda_executable.h"

#include "runtime/device_arena.h"
#include "runtime/resident_run.h"
#include "runtime/run_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "codegen/cache/kernel_cache.h"
#include "codegen/cuda/cuda_renderer.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/log.h"
#include "codegen/lower_kernel.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/device/cuda_device.h"
#include "runtime/device/host_staging.h"
#include "runtime/device/memory_pool.h"

namespace smelt {

std::vector<std::string> cudaNvrtcFlags() {
  // NVRTC's other defaults already match the reference: IEEE division and sqrt (-prec-div,
  // -prec-sqrt), no flush to zero. Never --use_fast_math: the NaN tests are x != x.
  return {"--fmad=false"};
}

// SMELT_PIPELINE overrides the default pipeline, as for the other executables; SMELT_CUDA_DEVICE
// picks the GPU.
CudaCompileOptions::CudaCompileOptions() {
  const char* env = std::getenv("SMELT_PIPELINE");
  pipeline = env ? std::string(env) : std::string(kDefaultPipeline);
  if (const char* d = std::getenv("SMELT_CUDA_DEVICE"); d && *d) {
    char* end = nullptr;
    long ordinal = std::strtol(d, &end, 10);
    if (*end == '\0' && ordinal >= 0 && ordinal <= std::numeric_limits<int>::max()) {
      device = static_cast<int>(ordinal);
    } else {
      logger().warn("SMELT_CUDA_DEVICE='{}' is not a device ordinal; using device 0", d);
    }
  }
}

/// A PTX module loaded on one device, shared by every executable whose kernels it holds.
struct cuda::LoadedModule {
  cuda::Module module;
  std::string source;
  std::string ptx;
  std::string arch;
};

namespace {

/// Threads per block: 1-D launches, one thread per outer point of the kernel's domain.
constexpr unsigned kBlockSize = 256;

/// The device contexts and loaded modules of this process, shared by every executable. Never
/// destroyed: unloading modules during exit can outlive the driver's own teardown.
struct SharedState {
  std::mutex mutex;
  std::map<int, std::unique_ptr<cuda::Context>> contexts;  // by ordinal
  std::map<std::string, std::shared_ptr<const cuda::LoadedModule>, std::less<>>
      modules;  // by ordinal + cache key text
};

SharedState& shared() {
  static auto* state = new SharedState();
  return *state;
}

Expected<cuda::Context*> contextFor(int ordinal) {
  SharedState& s = shared();
  std::lock_guard lock(s.mutex);
  auto it = s.contexts.find(ordinal);
  if (it == s.contexts.end()) {
    SMELT_TRY(cuda::Context context, cuda::Context::open(ordinal));
    it = s.contexts.emplace(ordinal, std::make_unique<cuda::Context>(std::move(context))).first;
  }
  return it->second.get();
}

/// The newest virtual arch this NVRTC has that the device runs: PTX for compute_XY JITs on any
/// device of compute capability >= X.Y.
Expected<std::string> archFor(const cuda::DeviceInfo& device) {
  SMELT_TRY(std::vector<int> archs, cuda::nvrtcSupportedArchs());
  const int cc = device.cc_major * 10 + device.cc_minor;
  int best = 0;
  for (int a : archs) {
    if (a <= cc) best = std::max(best, a);
  }
  if (best == 0) {
    return makeError("NVRTC supports no arch at or below the device's sm_{} (supported: {})", cc,
                     fmt::join(archs, " "));
  }
  return cuda::archForComputeCapability(best / 10, best % 10);
}

/// The compiler and driver facts every module's cache key carries, checked once per compile.
struct Toolchain {
  std::string arch;
  std::string nvrtcVersion;
  std::string driverVersion;
};

Expected<Toolchain> toolchainFor(const cuda::Context& context) {
  SMELT_TRY(cuda::NvrtcVersion nvrtc, cuda::nvrtcVersion());
  SMELT_TRY(cuda::DriverVersion driver, cuda::driverVersion());
  // PTX of a newer CUDA than the driver would fail in cuModuleLoadDataEx; say why up front.
  SMELT_CHECK_OK(cuda::checkPtxCompatible(nvrtc.major));
  SMELT_TRY(std::string arch, archFor(context.device()));
  return Toolchain{arch, fmt::format("NVRTC {}.{}", nvrtc.major, nvrtc.minor),
                   fmt::format("CUDA driver {}.{}", driver.major, driver.minor)};
}

/// The module holding `kernels` (named `symbols`): loaded once per process and device, its PTX
/// from the kernel cache when any process compiled it before, else from NVRTC. `hit` tells whether
/// NVRTC was skipped.
Expected<std::shared_ptr<const cuda::LoadedModule>> moduleFor(
    cuda::Context& context, const Toolchain& tools, std::span<const codegen::Kernel* const> kernels,
    std::span<const std::string> symbols, bool& hit) {
  codegen::CudaRenderer renderer;
  SMELT_TRY(std::string source, renderer.renderSource(kernels, symbols));
  std::vector<std::string> flags = cudaNvrtcFlags();
  CacheKey key;
  for (size_t k = 0; k < kernels.size(); ++k) {
    key.kernel += fmt::format("kernel {}\n{}", symbols[k], printKernel(*kernels[k]));
  }
  key.backend = "cuda";
  key.target = tools.arch;
  // The C renderers carry no version number: the rendered source's digest stands in for one (the
  // LLVM backend puts its renderer version in the same field), so a renderer change never loads
  // stale PTX.
  key.compilerVersion = fmt::format("{} cuda-c {}", tools.nvrtcVersion, cacheDigest(source));
  key.driverVersion = tools.driverVersion;
  key.options = fmt::format("{}", fmt::join(flags, " "));

  SharedState& s = shared();
  std::string moduleKey = fmt::format("{}\n{}", context.device().ordinal, key.text());
  std::lock_guard lock(s.mutex);
  auto start = std::chrono::steady_clock::now();
  // The kernel cache is asked even when this process loaded the module already, so its counters
  // (smelt cache stats, SMELT_LOG=debug) show every compile it saved.
  KernelCache& cache = KernelCache::global();
  std::optional<std::vector<std::byte>> cached = cache.lookup(key);
  auto it = s.modules.find(moduleKey);
  hit = cached.has_value() || it != s.modules.end();
  if (it != s.modules.end()) {
    logger().debug("cuda: module of {} kernels ({}) already loaded", kernels.size(), key.digest());
    return it->second;
  }
  auto loaded = std::make_shared<cuda::LoadedModule>();
  loaded->source = std::move(source);
  loaded->arch = tools.arch;
  if (cached) {
    loaded->ptx.assign(reinterpret_cast<const char*>(cached->data()), cached->size());
  } else {
    SMELT_TRY(cuda::NvrtcOutput out, cuda::compileCuda(loaded->source, {.arch = tools.arch,
                                                                        .flags = flags,
                                                                        .program_name = "smelt_graph.cu"}));
    if (!out.log.empty()) logger().debug("cuda: NVRTC log:\n{}", out.log);
    loaded->ptx = std::move(out.ptx);
    cache.store(key, std::as_bytes(std::span(loaded->ptx.data(), loaded->ptx.size())));
  }
  double ptxMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  // The driver JIT-compiles the PTX for the device here (and keeps its own cache in ~/.nv).
  SMELT_TRY(loaded->module, context.loadModule(loaded->ptx));
  double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().debug("cuda: {} kernels {} PTX for {} ({}) in {:.1f} ms, module loaded in {:.1f} ms", kernels.size(),
                 hit ? "loaded cached" : "compiled", tools.arch, key.digest(), ptxMs, loadMs);
  std::shared_ptr<const cuda::LoadedModule> module = std::move(loaded);
  s.modules.emplace(std::move(moduleKey), module);
  return module;
}

/// One node: a kernel launch, or the reference interpreter for a node without a lowering.
struct Step {
  const Node* node = nullptr;
  /// Byte offsets in the arena of the node's operands, then its results.
  std::vector<int64_t> buffers;
  /// Absent for an interpreted node.
  std::optional<cuda::Function> kernel;
  int64_t points = 0;
  std::string label;
  /// The launch's argument values (each buffer's device address, then n) and cuLaunchKernel's
  /// pointers to them; fixed at compile time.
  std::vector<uint64_t> args;
  std::vector<void*> params;
};

}  // namespace

struct CudaExecutable::Impl {
  Graph graph;
  cuda::Context* context = nullptr;
  /// The same GPU as a Device (the same primary context): its pool holds the arena.
  std::shared_ptr<Device> device;
  std::shared_ptr<const cuda::LoadedModule> module;
  PooledBuffer arenaBlock;
  /// The device's pinned staging (looked up once, not per feed) and the fetch list reused across runs.
  std::shared_ptr<HostStaging> staging;
  std::vector<HostFetch> fetches;
  std::vector<Step> steps;
  std::vector<ArenaSlot> inputs, parameters;
  /// Parameters whose slot holds a fed value rather than the initial one (restored on the next run
  /// that does not feed them).
  std::vector<bool> parameterFed;
  std::vector<int64_t> outputs;
  CompileReport report;
  bool checkKernels = std::getenv("SMELT_CHECK_KERNELS") != nullptr;
  // Set by prepare(), used by finish().
  std::chrono::steady_clock::time_point start;
  std::vector<ArenaSlot> constants;
  int64_t arenaBytes = 0;
  std::vector<codegen::Kernel> kernels;  // dropped once loaded
  std::vector<std::string> symbols;
  std::vector<int64_t> kernelOfStep;  // per step: its kernel, or -1 (interpreted)

  DeviceMemory arena() const { return arenaBlock.memory(); }
  std::uint64_t arenaAddress() const { return reinterpret_cast<std::uintptr_t>(arena().handle); }

  /// A synchronous upload (constants, parameters' initial values, interpreted nodes' results).
  Status upload(int64_t offset, const Tensor& t) {
    SMELT_CHECK_OK(device->copyIn(arena(), static_cast<size_t>(offset), t.raw(), t.byteSize(), device->defaultStream()));
    return device->defaultStream().synchronize();
  }
  /// A feed's upload through pinned staging, left running on the stream.
  Status stage(int64_t offset, const Tensor& t) {
    return staging->copyIn(arena(), static_cast<size_t>(offset), t.raw(), t.byteSize(),
                                                  device->defaultStream());
  }

  /// Copies of a step's operands (first) or results out of the arena (the synchronous copy waits for
  /// the kernels launched before).
  Expected<std::vector<Tensor>> download(const Step& step, bool results) const {
    std::vector<Tensor> tensors;
    const Node& node = *step.node;
    size_t first = results ? node.numOperands() : 0;
    size_t count = results ? node.results().size() : node.numOperands();
    for (size_t i = 0; i < count; ++i) {
      Tensor t(results ? node.result(i)->type() : node.operand(i)->type());
      SMELT_CHECK_OK(device->copyOut(t.raw(), arena(), static_cast<size_t>(step.buffers[first + i]), t.byteSize(),
                                     device->defaultStream()));
      SMELT_CHECK_OK(device->defaultStream().synchronize());
      tensors.push_back(std::move(t));
    }
    return tensors;
  }
};

CudaExecutable::CudaExecutable() : impl_(std::make_unique<Impl>()) {}
CudaExecutable::~CudaExecutable() = default;
const Graph& CudaExecutable::graph() const { return impl_->graph; }
const CompileReport& CudaExecutable::report() const { return impl_->report; }
const std::string& CudaExecutable::deviceName() const { return impl_->context->device().name; }
std::shared_ptr<Device> CudaExecutable::device() const { return impl_->device; }

namespace {
const std::string kEmpty;
}  // namespace
const std::string& CudaExecutable::source() const {
  return impl_->module ? impl_->module->source : kEmpty;
}
const std::string& CudaExecutable::ptx() const { return impl_->module ? impl_->module->ptx : kEmpty; }
const std::string& CudaExecutable::arch() const { return impl_->module ? impl_->module->arch : kEmpty; }

// Compiling is two phases around the NVRTC compile, so several graphs can share one module:
// prepare() (pipeline, plan, arena layout, kernels and their symbols) and finish() (functions with
// their fixed arguments, the arena, constants and parameters uploaded).
Status CudaExecutable::prepare(const Graph& source, const CudaCompileOptions& options,
                               const std::string& symbolPrefix) {
  Impl& x = *impl_;
  x.start = std::chrono::steady_clock::now();
  x.graph = source.clone();
  SMELT_TRY(PassManager pm, PassManager::fromPipeline(options.pipeline, PassManagerOptions::fromEnvironment()));
  SMELT_TRY(bool changed, pm.run(x.graph));
  (void)changed;
  MemoryPlan plan = planMemory(x.graph);
  DeviceArenaLayout arena = layoutDeviceArena(x.graph, plan);
  x.inputs = arena.inputs;
  x.parameters = arena.parameters;
  x.constants = arena.constants;
  x.arenaBytes = arena.bytes;
  for (const auto& node : x.graph.nodes()) {
    if (node->opName() == "constant") continue;
    Step step{node.get(), {}, std::nullopt, 0, x.graph.labelOf(*node), {}, {}};
    for (const Value* o : node->operands()) step.buffers.push_back(arena.offsetOf(o, plan));
    for (const Value* r : node->results()) step.buffers.push_back(arena.offsetOf(r, plan));
    if (codegen::canLower(*node)) {
      SMELT_TRY(codegen::Kernel kernel, codegen::lowerToKernel(x.graph, *node));
      if (kernel.buffers.size() != step.buffers.size()) {
        return makeError("{}: its kernel has {} buffers, the node {} operands and results", step.label,
                         kernel.buffers.size(), step.buffers.size());
      }
      step.points = kernel.domainSize();
      // One 1-D grid of 256-thread blocks covers the domain; cuLaunchKernel takes < 2^31 blocks.
      if ((step.points + kBlockSize - 1) / kBlockSize > std::numeric_limits<int32_t>::max()) {
        return makeError("{}: {} points need more than 2^31 - 1 blocks of {}", step.label, step.points,
                         kBlockSize);
      }
      x.kernelOfStep.push_back(static_cast<int64_t>(x.kernels.size()));
      x.symbols.push_back(symbolPrefix + codegen::CRenderer::symbolFor(kernel, x.kernels.size()));
      x.kernels.push_back(std::move(kernel));
    } else {
      // An op without a kernel lowering still runs, on the reference interpreter, with one warning.
      logger().warn("{}: no kernel lowering yet; it runs on the reference interpreter", step.label);
      x.kernelOfStep.push_back(-1);
      ++x.report.interpreted;
    }
    x.steps.push_back(std::move(step));
    ++x.report.kernels;
  }
  for (const GraphOutput& o : x.graph.outputs()) x.outputs.push_back(arena.offsetOf(o.value, plan));
  return Status::success();
}

Status CudaExecutable::finish(std::shared_ptr<const cuda::LoadedModule> module, bool hit) {
  Impl& x = *impl_;
  x.module = std::move(module);
  if (hit) x.report.cacheHits = static_cast<int64_t>(x.kernels.size());
  // cuMemAlloc refuses 0 bytes; a graph whose tensors are all empty still gets a small arena.
  x.staging = HostStaging::forDevice(x.device);
  SMELT_TRY(x.arenaBlock, MemoryPool::forDevice(x.device)->rent(
                              static_cast<size_t>(std::max<int64_t>(x.arenaBytes, kArenaAlignment))));
  // Each kernel's arguments never change: every buffer's device address (the arena's plus the
  // buffer's offset), then the number of points. cuLaunchKernel reads each through a pointer.
  for (size_t s = 0; s < x.steps.size(); ++s) {
    if (x.kernelOfStep[s] < 0) continue;
    Step& step = x.steps[s];
    SMELT_TRY(cuda::Function f, x.module->module.function(x.symbols[static_cast<size_t>(x.kernelOfStep[s])]));
    step.kernel = std::move(f);
    for (int64_t offset : step.buffers) step.args.push_back(x.arenaAddress() + static_cast<uint64_t>(offset));
    step.args.push_back(static_cast<uint64_t>(step.points));  // long long n
    for (uint64_t& a : step.args) step.params.push_back(&a);
  }
  // Constants and parameters' initial values are uploaded once.
  for (const ArenaSlot& c : x.constants) {
    SMELT_CHECK_OK(x.upload(c.offset, std::get<Tensor>(c.value->producer()->attrs().at("value"))));
  }
  for (const ArenaSlot& p : x.parameters) {
    if (p.value->hasInitialValue()) SMELT_CHECK_OK(x.upload(p.offset, p.value->initialValue()));  // else fed
  }
  x.parameterFed.assign(x.parameters.size(), false);
  x.report.arenaBytes = x.arenaBytes;
  x.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - x.start).count();
  logger().debug("cuda: compiled @{} ({} kernels, {} interpreted, PTX {}) in {:.1f} ms", x.graph.name(),
                 x.kernels.size(), x.report.interpreted, hit ? "from the cache" : "compiled",
                 x.report.seconds * 1e3);
  x.kernels.clear();
  x.kernels.shrink_to_fit();
  return Status::success();
}

Expected<std::unique_ptr<CudaExecutable>> CudaExecutable::compile(const Graph& graph,
                                                                  const CudaCompileOptions& options) {
  SMELT_TRY(std::vector<std::unique_ptr<CudaExecutable>> all, compileAll({&graph, 1}, options));
  return std::move(all.front());
}

Expected<std::vector<std::unique_ptr<CudaExecutable>>> CudaExecutable::compileAll(
    std::span<const Graph> graphs, const CudaCompileOptions& options) {
  // The driver, the device and NVRTC first: without them nothing else is worth doing, and the
  // error says which is missing ("cuda backend: CUDA driver not found: libcuda.so.1: ...").
  auto context = contextFor(options.device);
  if (!context.ok()) return context.error().withContext("cuda backend");
  auto tools = toolchainFor(**context);
  if (!tools.ok()) return tools.error().withContext("cuda backend");
  auto device = cudaDevice(options.device);
  if (!device.ok()) return device.error().withContext("cuda backend");
  std::vector<std::unique_ptr<CudaExecutable>> exes;
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  for (size_t g = 0; g < graphs.size(); ++g) {
    std::unique_ptr<CudaExecutable> exe(new CudaExecutable());
    exe->impl_->context = *context;
    exe->impl_->device = *device;
    // Kernel names are unique within a graph; a prefix keeps them unique across the batch.
    SMELT_CHECK_OK(exe->prepare(graphs[g], options, graphs.size() > 1 ? fmt::format("g{}_", g) : ""));
    for (size_t k = 0; k < exe->impl_->kernels.size(); ++k) {
      kernels.push_back(&exe->impl_->kernels[k]);
      symbols.push_back(exe->impl_->symbols[k]);
    }
    exes.push_back(std::move(exe));
  }
  if (exes.empty()) return exes;
  std::shared_ptr<const cuda::LoadedModule> module;
  bool hit = false;
  if (!kernels.empty()) {
    auto loaded = moduleFor(**context, *tools, kernels, symbols, hit);
    if (!loaded.ok()) return loaded.error().withContext("cuda backend");
    module = std::move(*loaded);
  }
  for (auto& exe : exes) {
    Status finished = exe->finish(module, hit);
    if (!finished.ok()) return finished.error().withContext("cuda backend");
  }
  return exes;
}

Expected<std::vector<Tensor>> CudaExecutable::run(const TensorMap& feeds) {
  std::vector<Tensor> outputs;
  SMELT_CHECK_OK(run(feeds, outputs));
  return outputs;
}

Status CudaExecutable::run(const TensorMap& feeds, std::vector<Tensor>& outputs) {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  SMELT_TRY(BoundFeeds fed, bindFeeds(g, feeds));
  for (size_t i = 0; i < x.inputs.size(); ++i) SMELT_CHECK_OK(x.stage(x.inputs[i].offset, *fed.inputs[i]));
  for (size_t i = 0; i < x.parameters.size(); ++i) {
    const ArenaSlot& p = x.parameters[i];
    const Tensor* given = fed.parameters[i];
    if (!given && !p.value->hasInitialValue()) {
      return makeError("parameter '{}' ({}) has no value: feed it", p.value->name(), p.value->type().toString());
    }
    if (given || x.parameterFed[i]) SMELT_CHECK_OK(x.stage(p.offset, given ? *given : p.value->initialValue()));
    x.parameterFed[i] = given != nullptr;
  }
  SMELT_CHECK_OK(execute());
  // A kernel's failure (an illegal address, say) surfaces asynchronously: wait here so it is
  // reported as such rather than as a failed copy.
  if (Status done = x.context->synchronize(); !done.ok()) {
    return done.error().withContext(fmt::format("cuda: running @{}", g.name()));
  }
  // Output tensors of the right types, kept across runs when the caller passes the same vector; all
  // fetched through pinned staging with one wait.
  prepareOutputs(g, outputs);
  std::vector<HostFetch>& fetches = x.fetches;
  fetches.clear();
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    Tensor& t = outputs[i];
    fetches.push_back({t.raw(), x.arena(), static_cast<size_t>(x.outputs[i]), t.byteSize()});
  }
  return x.staging->copyOut(fetches, x.device->defaultStream());
}

Status CudaExecutable::run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs) {
  Impl& x = *impl_;
  const ResidentSlots slots{&x.graph, x.device, x.arena(), x.inputs, x.parameters, &x.parameterFed, x.outputs};
  SMELT_CHECK_OK(placeResidentFeeds(slots, feeds, [&](const ArenaSlot& p) { return x.upload(p.offset, p.value->initialValue()); }));
  SMELT_CHECK_OK(execute());
  return fetchResidentOutputs(slots, outputs);
}

Status CudaExecutable::execute() {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  for (Step& step : x.steps) {
    if (step.kernel) {
      if (step.points == 0) continue;
      // SMELT_CHECK_KERNELS=1: the operands are copied before the kernel runs (an in-place result
      // overwrites one), then its results are checked against the reference.
      std::vector<Tensor> before;
      if (x.checkKernels) {
        SMELT_TRY(before, x.download(step, false));
      }
      auto blocks = static_cast<unsigned>((step.points + kBlockSize - 1) / kBlockSize);
      Status launched = x.context->launch(*step.kernel, {blocks, 1, 1}, {kBlockSize, 1, 1}, step.params);
      if (!launched.ok()) return launched.error().withContext(step.label);
      if (x.checkKernels) {
        SMELT_TRY(std::vector<Tensor> after, x.download(step, true));
        SMELT_CHECK_OK(checkAgainstReference(g, *step.node, step.label, before, after));
      }
      continue;
    }
    // A node without a kernel: its operands come to the host, the reference interpreter computes it,
    // and its results go back.
    const Node& node = *step.node;
    SMELT_TRY(std::vector<Tensor> operands, x.download(step, false));
    SMELT_TRY(std::vector<Tensor> results, evaluateNode(g, node, operands));
    for (size_t r = 0; r < results.size(); ++r) {
      SMELT_CHECK_OK(x.upload(step.buffers[node.numOperands() + r], results[r]));
    }
  }
  // Kernels run asynchronously: the host run waits and reports a failure; a device-resident run
  // leaves them running, and the next fetch or wait reports one.
  return Status::success();
}

}  // namespace smelt
