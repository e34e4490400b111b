// OpenClExecutable: compile = pipeline + plan + one rendered kernel per node, all in one OpenCL
// program, + one device arena; run = upload the feeds, enqueue the kernels in order, read the outputs.
#include "runtime/opencl_executable.h"

#include "runtime/device/device_tensor.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/host_staging.h"
#include "runtime/device/opencl_device.h"
#include "runtime/device_arena.h"
#include "runtime/gemm_step.h"
#include "runtime/opencl/clblast.h"
#include "runtime/resident_run.h"
#include "runtime/run_support.h"

#include <fmt/format.h>

#include <set>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "codegen/log.h"
#include "codegen/lower_kernel.h"
#include "codegen/opencl/opencl_renderer.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "runtime/opencl/opencl_runtime.h"

namespace smelt {

// SMELT_PIPELINE overrides the default pipeline, as for the CPU executable.
OpenClCompileOptions::OpenClCompileOptions() {
  const char* env = std::getenv("SMELT_PIPELINE");
  pipeline = env ? std::string(env) : std::string(kDefaultPipeline);
  const char* useBlas = std::getenv("SMELT_BLAS");
  blas = !(useBlas && std::string_view(useBlas) == "0");
}

std::string openClBuildOptions(const opencl::DeviceInfo& device) {
  // Never fast math: NaN checks (x != x) and NaN-propagating min/max depend on IEEE semantics.
  std::string options = "-cl-std=CL1.2";
  // Correctly rounded f32 division and sqrt, as the reference computes them; the option is an error
  // on devices that cannot (CL_INVALID_BUILD_OPTIONS), which then get OpenCL's 2.5-ulp division.
  cl_device_fp_config config = 0;
  if (clGetDeviceInfo(device.id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config, nullptr) == CL_SUCCESS &&
      (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0) {
    options += " -cl-fp32-correctly-rounded-divide-sqrt";
  }
  return options;
}

namespace {

/// Every dtype `node` computes in: its operands' and results', and for a fused kernel its body's.
void collectDtypes(const Node& node, std::set<DType>& dtypes) {
  for (const Value* v : node.operands()) dtypes.insert(v->type().dtype);
  for (const Value* v : node.results()) dtypes.insert(v->type().dtype);
  if (node.opName() == "fused") {
    for (const auto& inner : std::get<GraphRef>(node.attrs().at("body"))->nodes()) collectDtypes(*inner, dtypes);
  }
}

/// Why the device cannot run `node` as a kernel, or empty: no lowering, an op SMELT_FAULTS names, or a
/// dtype it lacks (f64 without cl_khr_fp64, or one SMELT_FAULTS names).
std::string whyNotOnDevice(const Node& node, bool fp64) {
  if (!codegen::canLower(node)) return "no kernel lowering";
  if (faultInjector().unsupported(node.opName())) return "unsupported (SMELT_FAULTS)";
  std::set<DType> dtypes;
  collectDtypes(node, dtypes);
  for (DType dtype : dtypes) {
    if (dtype == DType::f64 && !fp64) return "f64, which the device lacks (no cl_khr_fp64),";
    if (faultInjector().unsupported(dtypeName(dtype))) return fmt::format("{} unsupported (SMELT_FAULTS)", dtypeName(dtype));
  }
  return "";
}


/// Work-items per group: one fixed size, so PoCL compiles one work-group function per kernel.
constexpr size_t kLocalSize = 64;

/// One node: a kernel launch, a CLBlast product (then its epilogue kernel, if any), or the reference
/// interpreter for a node without a lowering.
struct Step {
  const Node* node = nullptr;
  /// Byte offsets in the arena of the node's operands, then its results (then, for a product with an
  /// epilogue, the product's).
  std::vector<int64_t> buffers;
  std::optional<GemmPlan> gemm;
  int64_t productOffset = 0;
  /// Absent for an interpreted node.
  std::optional<opencl::Kernel> kernel;
  int64_t points = 0;
  std::string label;
};

}  // namespace

struct OpenClExecutable::Impl {
  Graph graph;
  std::shared_ptr<Device> device;
  opencl::Context* context = nullptr;
  std::shared_ptr<opencl::Program> program;
  std::string source;
  /// The arena: a block of the device's memory pool, seen as a Buffer for the launches.
  PooledBuffer arenaBlock;
  /// The device's pinned staging (looked up once, not per feed) and the fetch list reused across runs.
  std::shared_ptr<HostStaging> staging;
  std::vector<HostFetch> fetches;
  opencl::Buffer arena;
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
  std::vector<codegen::Kernel> kernels;  // dropped once built
  std::vector<std::string> symbols;
  std::vector<int64_t> kernelOfStep;  // per step: its kernel, or -1 (interpreted)

  Status upload(int64_t offset, const Tensor& t) const {
    return context->write(arena, t.raw(), t.byteSize(), static_cast<size_t>(offset));
  }
  /// A feed's upload through pinned staging: enqueued, so the next feed's staging copy and the
  /// kernels' enqueueing overlap the transfer.
  Status stage(int64_t offset, const Tensor& t) const {
    return staging->copyIn(arenaBlock.memory(), static_cast<size_t>(offset), t.raw(),
                                                  t.byteSize(), device->defaultStream());
  }

  /// A CLBlast product for the step's node when it qualifies (f32/f64 matmul or gemm, not conv2d):
  /// where the product lands (the result it becomes, else its own arena slot past the plan's, which
  /// the epilogue then reads as one more buffer).
  void planProduct(Step& step) {
    const Node& node = *step.node;
    std::optional<GemmPlan> plan = planGemm(node, &opencl::clblastAvailable);
    if (!plan || plan->conv || (plan->dtype == DType::f64 && !context->device().fp64)) return;
    int64_t productBytes = plan->anchor->result(0)->type().byteSize();
    auto overlaps = [](int64_t a, int64_t aBytes, int64_t b, int64_t bBytes) { return a < b + bBytes && b < a + aBytes; };
    if (plan->result >= 0) {
      int64_t into = step.buffers[node.numOperands() + static_cast<size_t>(plan->result)];
      for (size_t i = 0; i < node.numOperands(); ++i) {
        if (overlaps(into, productBytes, step.buffers[i], node.operand(i)->type().byteSize())) plan->result = -1;
      }
    }
    if (plan->result >= 0) {
      step.productOffset = step.buffers[node.numOperands() + static_cast<size_t>(plan->result)];
    } else {
      plan->epilogue = true;
      step.productOffset = alignUp(arenaBytes, 64);
      arenaBytes = step.productOffset + productBytes;
    }
    if (plan->epilogue) step.buffers.push_back(step.productOffset);
    step.gemm = std::move(plan);
  }

  /// The step's product on CLBlast, one call per batch item.
  Status runProduct(const Step& step) const {
    const GemmPlan& p = *step.gemm;
    auto elements = [&](int64_t bytes) { return bytes / static_cast<int64_t>(dtypeSize(p.dtype)); };
    for (int64_t i = 0; i < p.batch; ++i) {
      opencl::GemmCall call{.dtype = p.dtype, .transA = p.transA, .transB = p.transB, .m = p.m, .n = p.n, .k = p.k,
                            .alpha = p.alpha, .offsetA = elements(step.buffers[p.operandA]) + i * p.strideA,
                            .lda = p.transA ? p.m : p.k, .offsetB = elements(step.buffers[p.operandB]) + i * p.strideB,
                            .ldb = p.transB ? p.k : p.n, .offsetC = elements(step.productOffset) + i * p.strideC,
                            .ldc = p.n};
      SMELT_CHECK_OK(opencl::clblastGemm(*context, arena, call));
    }
    return Status::success();
  }

  /// Copies of a step's operands (first) or results out of the arena (the blocking read waits for the
  /// kernels enqueued before).
  Expected<std::vector<Tensor>> download(const Step& step, bool results) const {
    std::vector<Tensor> tensors;
    const Node& node = *step.node;
    size_t first = results ? node.numOperands() : 0;
    size_t count = results ? node.results().size() : node.numOperands();
    for (size_t i = 0; i < count; ++i) {
      Tensor t(results ? node.result(i)->type() : node.operand(i)->type());
      SMELT_CHECK_OK(context->read(arena, t.raw(), t.byteSize(), static_cast<size_t>(step.buffers[first + i])));
      tensors.push_back(std::move(t));
    }
    return tensors;
  }
};

OpenClExecutable::OpenClExecutable() : impl_(std::make_unique<Impl>()) {}
OpenClExecutable::~OpenClExecutable() = default;
const Graph& OpenClExecutable::graph() const { return impl_->graph; }
const CompileReport& OpenClExecutable::report() const { return impl_->report; }
const std::string& OpenClExecutable::source() const { return impl_->source; }
const std::string& OpenClExecutable::deviceName() const { return impl_->context->device().name; }

// Compiling is two phases around the program build, so several graphs can share one program:
// prepare() (pipeline, plan, arena layout, kernels and their symbols) and finish() (kernel objects
// with their fixed arguments, the arena, constants and parameters uploaded).
Status OpenClExecutable::prepare(const Graph& source, const OpenClCompileOptions& options,
                                 const std::string& symbolPrefix) {
  Impl& x = *impl_;
  x.start = std::chrono::steady_clock::now();
  x.graph = source.clone();
  SMELT_TRY(PassManager pm, PassManager::fromPipeline(options.pipeline, PassManagerOptions::fromEnvironment()));
  SMELT_TRY(bool changed, pm.run(x.graph));
  (void)changed;
  SMELT_TRY(x.device, openClDevice(options.device));
  x.context = &openClContext(*x.device);
  MemoryPlan plan = planMemory(x.graph);
  DeviceArenaLayout arena = layoutDeviceArena(x.graph, plan);
  x.inputs = arena.inputs;
  x.parameters = arena.parameters;
  x.constants = arena.constants;
  x.arenaBytes = arena.bytes;
  for (const auto& node : x.graph.nodes()) {
    if (node->opName() == "constant") continue;
    Step step{node.get(), {}, std::nullopt, 0, std::nullopt, 0, x.graph.labelOf(*node)};
    for (const Value* o : node->operands()) step.buffers.push_back(arena.offsetOf(o, plan));
    for (const Value* r : node->results()) step.buffers.push_back(arena.offsetOf(r, plan));
    if (options.blas) x.planProduct(step);
    if (step.gemm) {
      ++x.report.blas;
      logger().debug("{}: CLBlast {}x{}x{} (batch {}){}", step.label, step.gemm->m, step.gemm->n, step.gemm->k,
                     step.gemm->batch, step.gemm->epilogue ? " and an epilogue kernel" : "");
    }
    if (step.gemm && !step.gemm->epilogue) {
      x.kernelOfStep.push_back(-1);
    } else if (const std::string why = step.gemm ? "" : whyNotOnDevice(*node, x.context->device().fp64); why.empty()) {
      SMELT_TRY(codegen::Kernel kernel, step.gemm ? codegen::lowerEpilogue(x.graph, *node, *step.gemm->anchor)
                                                  : codegen::lowerToKernel(x.graph, *node));
      if (kernel.buffers.size() != step.buffers.size()) {
        return makeError("{}: its kernel has {} buffers, the node {} operands and results", step.label,
                         kernel.buffers.size(), step.buffers.size());
      }
      step.points = kernel.domainSize();
      x.kernelOfStep.push_back(static_cast<int64_t>(x.kernels.size()));
      x.symbols.push_back(symbolPrefix + codegen::CRenderer::symbolFor(kernel, x.kernels.size()));
      x.kernels.push_back(std::move(kernel));
    } else {
      // An op without a kernel lowering, or one the device lacks (an op or dtype), still runs, on the
      // CPU's reference interpreter, with one warning.
      logger().warn("{}: {} on {}; it runs on the CPU (reference interpreter)", step.label, why, x.device->id());
      x.kernelOfStep.push_back(-1);
      ++x.report.interpreted;
    }
    x.steps.push_back(std::move(step));
    ++x.report.kernels;
  }
  for (const GraphOutput& o : x.graph.outputs()) x.outputs.push_back(arena.offsetOf(o.value, plan));
  return Status::success();
}

Status OpenClExecutable::finish(std::shared_ptr<opencl::Program> program, const std::string& source, bool hit) {
  Impl& x = *impl_;
  x.program = std::move(program);
  x.source = source;
  if (hit) x.report.cacheHits = static_cast<int64_t>(x.kernels.size());
  // The arena, and each kernel's arguments (they never change): every buffer as (arena, element
  // offset), then the number of points.
  x.staging = HostStaging::forDevice(x.device);
  SMELT_TRY(x.arenaBlock, MemoryPool::forDevice(x.device)->rent(static_cast<size_t>(x.arenaBytes)));
  x.arena = opencl::Buffer::borrow(clMemOf(x.arenaBlock.memory()), x.arenaBlock.memory().bytes);
  for (size_t s = 0; s < x.steps.size(); ++s) {
    if (x.kernelOfStep[s] < 0) continue;
    Step& step = x.steps[s];
    const codegen::Kernel& kernel = x.kernels[static_cast<size_t>(x.kernelOfStep[s])];
    SMELT_TRY(opencl::Kernel k, x.program->createKernel(x.symbols[static_cast<size_t>(x.kernelOfStep[s])]));
    unsigned arg = 0;
    for (size_t b = 0; b < kernel.buffers.size(); ++b) {
      auto elementOffset =
          static_cast<cl_long>(step.buffers[b] / static_cast<int64_t>(dtypeSize(kernel.buffers[b].dtype)));
      SMELT_CHECK_OK(k.setArg(arg++, x.arena));
      SMELT_CHECK_OK(k.setArg(arg++, elementOffset));
    }
    auto points = static_cast<cl_long>(step.points);
    SMELT_CHECK_OK(k.setArg(arg++, points));
    step.kernel = std::move(k);
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
  logger().debug("opencl: compiled @{} ({} kernels, {} interpreted, program {}) in {:.1f} ms", x.graph.name(),
                 x.kernels.size(), x.report.interpreted, hit ? "reused" : "built", x.report.seconds * 1e3);
  x.kernels.clear();
  x.kernels.shrink_to_fit();
  return Status::success();
}

Expected<std::unique_ptr<OpenClExecutable>> OpenClExecutable::compile(const Graph& graph,
                                                                      const OpenClCompileOptions& options) {
  SMELT_TRY(std::vector<std::unique_ptr<OpenClExecutable>> all, compileAll({&graph, 1}, options));
  return std::move(all.front());
}

Expected<std::vector<std::unique_ptr<OpenClExecutable>>> OpenClExecutable::compileAll(
    std::span<const Graph> graphs, const OpenClCompileOptions& options) {
  std::vector<std::unique_ptr<OpenClExecutable>> exes;
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  for (size_t g = 0; g < graphs.size(); ++g) {
    std::unique_ptr<OpenClExecutable> exe(new OpenClExecutable());
    // Kernel names are unique within a graph; a prefix keeps them unique across the batch.
    SMELT_CHECK_OK(exe->prepare(graphs[g], options, graphs.size() > 1 ? fmt::format("g{}_", g) : ""));
    for (size_t k = 0; k < exe->impl_->kernels.size(); ++k) {
      kernels.push_back(&exe->impl_->kernels[k]);
      symbols.push_back(exe->impl_->symbols[k]);
    }
    exes.push_back(std::move(exe));
  }
  if (exes.empty()) return exes;
  const opencl::Context& context = *exes.front()->impl_->context;
  codegen::OpenClRenderer renderer(context.device().fp64);
  SMELT_TRY(std::string source, renderer.renderSource(kernels, symbols));
  bool hit = false;
  SMELT_TRY(std::shared_ptr<opencl::Program> program,
            openClProgram(*exes.front()->impl_->device, source, openClBuildOptions(context.device()), &hit));
  for (auto& exe : exes) SMELT_CHECK_OK(exe->finish(program, source, hit));
  return exes;
}

Expected<std::vector<Tensor>> OpenClExecutable::run(const TensorMap& feeds) {
  std::vector<Tensor> outputs;
  SMELT_CHECK_OK(run(feeds, outputs));
  return outputs;
}

Status OpenClExecutable::run(const TensorMap& feeds, std::vector<Tensor>& outputs) {
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
  // Output tensors of the right types, kept across runs when the caller passes the same vector; all
  // fetched through pinned staging with one wait.
  prepareOutputs(g, outputs);
  std::vector<HostFetch>& fetches = x.fetches;
  fetches.clear();
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    Tensor& t = outputs[i];
    fetches.push_back({t.raw(), x.arenaBlock.memory(), static_cast<size_t>(x.outputs[i]), t.byteSize()});
  }
  return x.staging->copyOut(fetches, x.device->defaultStream());
}

Status OpenClExecutable::run(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs) {
  Impl& x = *impl_;
  const ResidentSlots slots{&x.graph, x.device, x.arenaBlock.memory(), x.inputs, x.parameters, &x.parameterFed, x.outputs};
  SMELT_CHECK_OK(placeResidentFeeds(slots, feeds, [&](const ArenaSlot& p) { return x.upload(p.offset, p.value->initialValue()); }));
  SMELT_CHECK_OK(execute());
  return fetchResidentOutputs(slots, outputs);
}

Status OpenClExecutable::execute() {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  if (faultInjector().trigger(Fault::kDeviceLost)) {
    return makeError("{}: device lost (injected by SMELT_FAULTS) running @{}", x.device->id(), g.name());
  }
  for (Step& step : x.steps) {
    if (step.gemm || step.kernel) {
      if (!step.gemm && step.points == 0) continue;
      // SMELT_CHECK_KERNELS=1: the operands are copied before the step runs (an in-place result
      // overwrites one), then its results are checked against the reference.
      std::vector<Tensor> before;
      if (x.checkKernels) {
        SMELT_TRY(before, x.download(step, false));
      }
      if (step.gemm) SMELT_CHECK_OK(x.runProduct(step));  // then its epilogue, if any
      if (step.kernel && step.points > 0) {
        auto global = static_cast<size_t>(alignUp(step.points, static_cast<int64_t>(kLocalSize)));
        SMELT_CHECK_OK(x.context->enqueue(*step.kernel, opencl::NDRange(global), opencl::NDRange(kLocalSize)));
      }
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
  return Status::success();
}

std::shared_ptr<Device> OpenClExecutable::device() const { return impl_->device; }

}  // namespace smelt
