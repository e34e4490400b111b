// Executable: compile = pipeline + plan + one kernel per node; run = bind feeds, call kernels in order
// over the thread pool, copy the outputs out of the arena.
#include "runtime/executable.h"

#ifdef SMELT_HAVE_LLVM
#include "codegen/llvm/llvm_jit.h"
#endif
#include "codegen/log.h"
#include "codegen/lower_kernel.h"
#include "codegen/tile_columns.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "runtime/blas.h"
#include "runtime/gemm_step.h"
#include "runtime/run_support.h"
#include "runtime/step_profile.h"
#include "runtime/thread_pool.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace smelt {

// SMELT_PIPELINE overrides the default pipeline (bisecting a miscompile: "canonicalize,cse,dce" ...).
CompileOptions::CompileOptions() {
  const char* env = std::getenv("SMELT_PIPELINE");
  pipeline = env ? std::string(env) : std::string(kDefaultPipeline);
  const char* useBlas = std::getenv("SMELT_BLAS");
  blas = !(useBlas && std::string_view(useBlas) == "0");
}

namespace {

#ifdef SMELT_HAVE_LLVM
using codegen::KernelEntry;
using KernelCompiler = codegen::LlvmJit;
using codegen::CompileInfo;
#else
/// Without LLVM there is no kernel compiler: every node runs on the reference interpreter (BLAS
/// products without an epilogue still run on the BLAS).
using KernelEntry = void (*)(char** buffers, int64_t begin, int64_t end);
struct CompileInfo {
  bool cacheHit = false;
};
struct KernelCompiler {
  Expected<KernelEntry> compile(const codegen::Kernel&, CompileInfo*) {
    return makeError("this build has no LLVM: kernels run on the reference interpreter");
  }
};
#endif
constexpr bool kHaveKernelCompiler =
#ifdef SMELT_HAVE_LLVM
    true;
#else
    false;
#endif

/// Where a kernel's buffer lives when it runs.
struct Binding {
  enum Kind { Input, Parameter, Constant, Arena, Output } kind = Arena;
  int64_t index = 0;  // input / parameter / constant / output index, or arena offset
};

int64_t workPerPoint(const codegen::KBlock& block);

/// Marks each of the kernel's buffers bound to the same memory as an earlier one (an in-place result,
/// a product computed in its output): see KBuffer::sameAs. `bindings` follows the kernel's buffers;
/// an arena binding with a negative offset is memory of its own.
void markSharedBuffers(codegen::Kernel& kernel, const std::vector<Binding>& bindings) {
  for (size_t i = 0; i < kernel.buffers.size() && i < bindings.size(); ++i) {
    if (bindings[i].index < 0) continue;
    for (size_t j = 0; j < i; ++j) {
      const codegen::KBuffer &a = kernel.buffers[j], &b = kernel.buffers[i];
      if (bindings[j].kind == bindings[i].kind && bindings[j].index == bindings[i].index && a.dtype == b.dtype &&
          a.numel == b.numel) {
        kernel.buffers[i].sameAs = static_cast<int32_t>(j);
        break;
      }
    }
  }
}

struct Step {
  /// Null for a node no kernel can compute yet: it runs on the reference interpreter (`node`), unless
  /// a BLAS computes it (`gemm`, then `entry` is its epilogue, if any).
  KernelEntry entry = nullptr;
  const Node* node = nullptr;
  std::vector<Binding> buffers;
  int64_t points = 0;
  bool parallel = false;
  std::string label;
  std::optional<GemmPlan> gemm;
  /// Bytes the product needs of its own when no result of the node can take it (or the one that could
  /// shares memory with an operand the epilogue still reads), and bytes of scratch the product needs
  /// (a convolution's column matrix, a transposed operand). Both come from one buffer shared by every
  /// step, as steps run one after another: the product first, the scratch after it.
  size_t productBytes = 0;
  size_t scratchBytes = 0;
  /// The op's own CPU implementation (OpDef::host), run instead of a kernel when set.
  HostKernel host;
  // 64-byte-aligned starts in that buffer (null when unused), found once at compile time.
  char* productAt = nullptr;
  char* scratchAt = nullptr;
};

bool overlaps(const Binding& x, int64_t xBytes, const Binding& y, int64_t yBytes) {
  // A donated output is bound to its parameter's tensor: the same memory as that operand.
  if (x.kind == Binding::Parameter && y.kind == Binding::Parameter) return x.index == y.index;
  return x.kind == Binding::Arena && y.kind == Binding::Arena && x.index < y.index + yBytes && y.index < x.index + xBytes;
}

char* alignedStart(std::vector<std::byte>& storage) {
  if (storage.empty()) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(storage.data());
  return reinterpret_cast<char*>(storage.data() + ((64 - base % 64) % 64));
}

/// BLAS for `node` when it qualifies: the product's buffer and the epilogue kernel, if any.
Status planBlasStep(const Graph& graph, const Node& node, bool parallel, Step& step, KernelCompiler& jit,
                    CompileReport& report) {
  step.gemm = planGemm(node);
  if (!step.gemm) return Status::success();
  GemmPlan& plan = *step.gemm;
  preferUntransposedB(plan);
  int64_t productBytes = plan.anchor->result(0)->type().byteSize();
  if (plan.result >= 0) {
    const Binding& into = step.buffers[node.numOperands() + static_cast<size_t>(plan.result)];
    for (size_t i = 0; i < node.numOperands(); ++i) {
      if (overlaps(into, productBytes, step.buffers[i], node.operand(i)->type().byteSize())) plan.result = -1;
    }
  }
  if (plan.result < 0) {
    plan.epilogue = true;
    step.productBytes = static_cast<size_t>(productBytes);
  }
  step.scratchBytes = static_cast<size_t>(plan.columnElements) * dtypeSize(plan.dtype);
  if (!plan.epilogue) return Status::success();
  if (!kHaveKernelCompiler) {  // no epilogue kernel without a compiler: the whole node is interpreted
    step.gemm.reset();
    step.productBytes = step.scratchBytes = 0;
    return Status::success();
  }
  SMELT_TRY(codegen::Kernel kernel, codegen::lowerEpilogue(graph, node, *plan.anchor));
  // The epilogue's last buffer is the product: in a result's memory, or in scratch of its own.
  std::vector<Binding> bindings = step.buffers;
  bindings.push_back(plan.result >= 0 ? step.buffers[node.numOperands() + static_cast<size_t>(plan.result)]
                                      : Binding{Binding::Arena, -1});
  markSharedBuffers(kernel, bindings);
  CompileInfo info;
  SMELT_TRY(step.entry, jit.compile(kernel, &info));
  step.points = kernel.domainSize();
  step.parallel = parallel && kernel.domainSize() > 1 && kernel.domainSize() * workPerPoint(kernel.body) >= 32768;
  report.cacheHits += info.cacheHit;
  ++report.kernels;
  return Status::success();
}


/// The node's host implementation (OpDef::host) when its op has one for these types and no result
/// shares memory with an operand (a scatter reads its operands while it writes).
HostKernel planHostStep(const Graph& graph, const Node& node, const std::vector<Binding>& buffers) {
  if (!node.op().host) return {};
  for (size_t r = node.numOperands(); r < buffers.size(); ++r) {
    int64_t resultBytes = node.result(r - node.numOperands())->type().byteSize();
    for (size_t o = 0; o < node.numOperands(); ++o) {
      if (overlaps(buffers[r], resultBytes, buffers[o], node.operand(o)->type().byteSize())) return {};
    }
  }
  std::vector<TensorType> operandTypes, resultTypes;
  for (const Value* v : node.operands()) operandTypes.push_back(v->type());
  for (const Value* v : node.results()) resultTypes.push_back(v->type());
  OpCall call(node.op(), graph.labelOf(node), operandTypes, node.attrs(), resultTypes);
  return node.op().host(call);
}

/// Rough work per outer point: the product of nested loop extents, summed. Small kernels run inline:
/// waking the pool costs more than they do.
int64_t workPerPoint(const codegen::KBlock& block) {
  int64_t work = 1;
  for (const codegen::KStmt& s : block.stmts) {
    if (const auto* l = std::get_if<std::shared_ptr<codegen::KLoop>>(&s)) work += (*l)->extent * workPerPoint((*l)->body);
  }
  return work;
}

}  // namespace

/// " (16x64x16x16, 64x64x3x3)": the node's operand shapes, for profiles.
std::string describeShape(const Node* node) {
  std::string s = " (";
  for (size_t i = 0; i < node->numOperands(); ++i) {
    if (i) s += ", ";
    const Shape& shape = node->operand(i)->shape();
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? "x" : "") + std::to_string(shape[d]);
  }
  return s + ")";
}

struct Executable::Impl {
  Graph graph;
  std::vector<Step> steps;
  std::vector<Tensor> constants;
  std::vector<std::byte, std::allocator<std::byte>> arenaStorage;
  std::vector<std::byte> scratch;  // products and BLAS scratch, see Step::productBytes
  std::byte* arena = nullptr;
  std::vector<Binding> outputs;
  CompileReport report;
  std::vector<char*> pointers;  // reused per step
  bool checkKernels = std::getenv("SMELT_CHECK_KERNELS") != nullptr;
  bool profiling = StepProfile::enabled();
  StepProfile profile;

  ~Impl() {
    if (!profiling) return;
    std::vector<std::string> labels, kinds;
    for (const Step& s : steps) {
      labels.push_back(s.label + " = " + s.node->opName() + describeShape(s.node));
      std::string kind = s.host ? "host" : s.gemm ? (s.entry ? "BLAS+epilogue" : "BLAS") : s.entry ? "kernel" : "interpreted";
      kinds.push_back(kind + (s.entry && s.parallel ? ", parallel" : ""));
    }
    // Printed, not logged: asking for a profile is asking to see it, whatever SMELT_LOG says.
    if (std::string t = profile.table(labels, kinds); !t.empty()) fmt::print(stderr, "{}", t);
  }
  std::unordered_map<const Value*, int64_t> outputIndex;  // kernel-computed outputs, first name each
  std::unordered_map<const Value*, int64_t> donatedTo;    // output value -> the parameter it overwrites
  std::vector<bool> donatedOutputs;                       // per graph output

  /// Which donations hold: the output's producer is the parameter's last reader and reads it only at
  /// the index it writes, and the two have one type. The others are computed into the output tensor.
  Status planDonations(const std::vector<std::pair<std::string, std::string>>& donate) {
    donatedOutputs.assign(graph.outputs().size(), false);
    std::unordered_map<const Value*, size_t> lastUse;
    for (size_t i = 0; i < graph.numNodes(); ++i) {
      for (const Value* o : graph.nodes()[i]->operands()) lastUse[o] = i;
    }
    for (const auto& [parameterName, outputName] : donate) {
      const auto& params = graph.parameters();
      auto p = std::find_if(params.begin(), params.end(), [&](const Value* v) { return v->name() == parameterName; });
      if (p == params.end()) return makeError("donate: no parameter '{}'", parameterName);
      const auto& outs = graph.outputs();
      auto o = std::find_if(outs.begin(), outs.end(), [&](const GraphOutput& g) { return g.name == outputName; });
      if (o == outs.end()) return makeError("donate: no output '{}'", outputName);
      const Value* value = o->value;
      const Node* producer = value->kind() == ValueKind::Result ? value->producer() : nullptr;
      auto last = lastUse.find(*p);
      bool holds = producer && producer->opName() != "constant" && value->type() == (*p)->type() &&
                   !donatedTo.count(value) && last != lastUse.end() &&
                   graph.nodes()[last->second].get() == producer && readsOnlyAtWrittenIndex(*producer, *p);
      // A value returned under a second name is copied from the first, which must stay the donated one.
      size_t index = static_cast<size_t>(o - outs.begin());
      if (holds && outputIndex.count(value) && outputIndex.at(value) != static_cast<int64_t>(index)) holds = false;
      if (!holds) {
        logger().debug("donate {} -> {}: not in place (the output's kernel is not the parameter's last, "
                       "elementwise reader)", parameterName, outputName);
        continue;
      }
      donatedTo[value] = p - params.begin();
      donatedOutputs[index] = true;
    }
    return Status::success();
  }

  Binding bind(const Value* v, const MemoryPlan& plan, std::unordered_map<const Value*, int64_t>& constantIndex) {
    if (v->kind() == ValueKind::Input) {
      const auto& ins = graph.inputs();
      return {Binding::Input, std::find(ins.begin(), ins.end(), v) - ins.begin()};
    }
    if (v->kind() == ValueKind::Parameter) {
      const auto& ps = graph.parameters();
      return {Binding::Parameter, std::find(ps.begin(), ps.end(), v) - ps.begin()};
    }
    if (v->producer()->opName() == "constant") {
      auto [it, added] = constantIndex.emplace(v, static_cast<int64_t>(constants.size()));
      if (added) constants.push_back(std::get<Tensor>(v->producer()->attrs().at("value")));
      return {Binding::Constant, it->second};
    }
    // Graph outputs are written straight into the caller's output tensors: no copy out of the arena
    // (the plan keeps them apart from every other buffer until the end anyway), or over the parameter
    // they were donated to.
    if (auto it = donatedTo.find(v); it != donatedTo.end()) return {Binding::Parameter, it->second};
    if (auto it = outputIndex.find(v); it != outputIndex.end()) return {Binding::Output, it->second};
    const BufferAssignment* a = plan.find(v);
    return {Binding::Arena, a ? a->offset : -1};
  }
};

Executable::Executable() : impl_(std::make_unique<Impl>()) {}
Executable::~Executable() = default;
const Graph& Executable::graph() const { return impl_->graph; }
void Executable::releaseParameterValues() { impl_->graph.releaseParameterValues(); }
bool Executable::donated(size_t output) const {
  return output < impl_->donatedOutputs.size() && impl_->donatedOutputs[output];
}
const CompileReport& Executable::report() const { return impl_->report; }

Expected<std::unique_ptr<Executable>> Executable::compile(const Graph& source, const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Executable> exe(new Executable());
  Impl& x = *exe->impl_;
  x.graph = source.clone();
  SMELT_TRY(PassManager pm, PassManager::fromPipeline(options.pipeline, PassManagerOptions::fromEnvironment()));
  SMELT_TRY(bool changed, pm.run(x.graph));
  (void)changed;
#ifdef SMELT_HAVE_LLVM
  SMELT_TRY(KernelCompiler * jit, codegen::LlvmJit::global());
#else
  KernelCompiler compiler;
  KernelCompiler* jit = &compiler;
  static std::once_flag told;
  std::call_once(told, [] { logger().info("this build has no LLVM: the CPU runs graphs on the reference interpreter"); });
#endif
  MemoryPlan plan = planMemory(x.graph);
  std::unordered_map<const Value*, int64_t> constantIndex;
  for (size_t i = 0; i < x.graph.outputs().size(); ++i) {
    const Value* v = x.graph.outputs()[i].value;
    if (v->kind() == ValueKind::Result && v->producer()->opName() != "constant") x.outputIndex.emplace(v, static_cast<int64_t>(i));
  }
  SMELT_CHECK_OK(x.planDonations(options.donate));
  // OpenBLAS keeps its own threads; as many as smelt's pool (SMELT_NUM_THREADS), never more.
  if (options.blas) blas::setThreads(ThreadPool::global().threads());
  for (const auto& node : x.graph.nodes()) {
    if (node->opName() == "constant") continue;
    Step step{nullptr, node.get(), {}, 0, false, x.graph.labelOf(*node), std::nullopt, {}};
    for (const Value* o : node->operands()) step.buffers.push_back(x.bind(o, plan, constantIndex));
    for (const Value* r : node->results()) step.buffers.push_back(x.bind(r, plan, constantIndex));
    if (options.host) step.host = planHostStep(x.graph, *node, step.buffers);
    if (!step.host && options.blas) SMELT_CHECK_OK(planBlasStep(x.graph, *node, options.parallel, step, *jit, x.report));
    if (step.host) {
      step.parallel = options.parallel;
      ++x.report.host;
      logger().debug("{}: the op's host implementation", step.label);
    } else if (step.gemm) {
      ++x.report.blas;
      logger().debug("{}: BLAS {}x{}x{} (batch {}){}", step.label, step.gemm->m, step.gemm->n, step.gemm->k,
                     step.gemm->batch, step.entry ? " and an epilogue kernel" : "");
    } else if (kHaveKernelCompiler && codegen::canLower(*node)) {
      SMELT_TRY(codegen::Kernel kernel, codegen::lowerToKernel(x.graph, *node));
      if (codegen::tileColumns(kernel)) {  // CPU only: GPUs keep a thread per column
        logger().debug("{}: column loops tiled ({} tiles)", step.label, kernel.domainSize());
      }
      markSharedBuffers(kernel, step.buffers);
      CompileInfo info;
      SMELT_TRY(step.entry, jit->compile(kernel, &info));
      step.points = kernel.domainSize();
      step.parallel = options.parallel && kernel.domainSize() > 1 &&
                      kernel.domainSize() * workPerPoint(kernel.body) >= 32768;
      x.report.cacheHits += info.cacheHit;
      ++x.report.kernels;
    } else {
      // An op without a kernel lowering still runs, on the reference interpreter, with one warning
      // (every node does in a build without LLVM, which says so once).
      if (kHaveKernelCompiler) logger().warn("{}: no kernel lowering yet; it runs on the reference interpreter", step.label);
      ++x.report.interpreted;
    }
    logger().debug("{}: {} points{}", step.label, step.points, step.parallel ? ", parallel" : "");
    x.steps.push_back(std::move(step));
  }
  for (const GraphOutput& o : x.graph.outputs()) x.outputs.push_back(x.bind(o.value, plan, constantIndex));
  auto aligned = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  size_t scratchBytes = 0;
  for (const Step& step : x.steps) scratchBytes = std::max(scratchBytes, aligned(step.productBytes) + step.scratchBytes);
  if (scratchBytes > 0) {
    x.scratch.resize(scratchBytes + 64);
    char* start = alignedStart(x.scratch);
    for (Step& step : x.steps) {
      step.productAt = step.productBytes ? start : nullptr;
      step.scratchAt = step.scratchBytes ? start + aligned(step.productBytes) : nullptr;
    }
  }
  // The arena, 64-byte aligned, allocated once.
  x.arenaStorage.resize(static_cast<size_t>(plan.peakBytes) + 64);
  auto base = reinterpret_cast<uintptr_t>(x.arenaStorage.data());
  x.arena = x.arenaStorage.data() + ((64 - base % 64) % 64);
  x.report.arenaBytes = plan.peakBytes;
  logger().debug("{} steps: arena {} bytes, BLAS products and scratch {} bytes, {} outputs donated to parameters",
                 x.steps.size(), plan.peakBytes, scratchBytes, x.donatedTo.size());
  x.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return exe;
}

namespace {

/// Copies of the tensors in `bufs` (one per value, of its type).
std::vector<Tensor> readBuffers(std::span<Value* const> values, char** bufs) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < values.size(); ++i) {
    Tensor t(values[i]->type());
    if (t.byteSize()) std::memcpy(t.raw(), bufs[i], t.byteSize());
    tensors.push_back(std::move(t));
  }
  return tensors;
}

/// Runs a node without a kernel on the reference interpreter, through copies in and out of its buffers.
Status interpretStep(const Graph& graph, const Step& step, char** bufs) {
  const Node& node = *step.node;
  SMELT_TRY(std::vector<Tensor> results, evaluateNode(graph, node, readBuffers(node.operands(), bufs)));
  for (size_t r = 0; r < results.size(); ++r) {
    if (results[r].byteSize()) std::memcpy(bufs[node.numOperands() + r], results[r].raw(), results[r].byteSize());
  }
  return Status::success();
}

}  // namespace

Expected<std::vector<Tensor>> Executable::run(const TensorMap& feeds) {
  std::vector<Tensor> outputs;
  SMELT_CHECK_OK(run(feeds, outputs));
  return outputs;
}

Status Executable::run(const TensorMap& feeds, std::vector<Tensor>& outputs) {
  SMELT_TRY(BoundFeeds fed, bindFeeds(impl_->graph, feeds));
  return run(fed.inputs, fed.parameters, outputs);
}

Status Executable::run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
                       std::vector<Tensor>& outputs) {
  Impl& x = *impl_;
  const Graph& g = x.graph;
  SMELT_CHECK_OK(checkPositionalFeeds(g, inputs, parameters));
  BoundFeeds fed{{inputs.begin(), inputs.end()}, {parameters.begin(), parameters.end()}};
  prepareOutputs(g, outputs, &x.donatedOutputs);  // donated outputs land in their parameters' tensors
  auto pointerOf = [&](const Binding& b) -> char* {
    switch (b.kind) {
      case Binding::Input: return reinterpret_cast<char*>(const_cast<std::byte*>(fed.inputs[b.index]->raw()));
      case Binding::Parameter: {
        const Tensor* t = fed.parameters[b.index];
        if (!t) t = &g.parameters()[b.index]->initialValue();
        return reinterpret_cast<char*>(const_cast<std::byte*>(t->raw()));
      }
      case Binding::Constant: return reinterpret_cast<char*>(const_cast<std::byte*>(x.constants[b.index].raw()));
      case Binding::Arena: return reinterpret_cast<char*>(x.arena + b.index);
      case Binding::Output: return reinterpret_cast<char*>(outputs[b.index].raw());
    }
    return nullptr;
  };
  ThreadPool& pool = ThreadPool::global();
  if (x.profiling && x.profile.empty()) x.profile.resize(x.steps.size());
  for (size_t stepIndex = 0; stepIndex < x.steps.size(); ++stepIndex) {
    const Step& step = x.steps[stepIndex];
    StepProfile::Clock::time_point started;
    if (x.profiling) started = StepProfile::now();
    x.pointers.clear();
    for (const Binding& b : step.buffers) x.pointers.push_back(pointerOf(b));
    KernelEntry entry = step.entry;
    std::vector<Tensor> before;
    if (x.checkKernels) before = readBuffers(step.node->operands(), x.pointers.data());
    if (step.gemm) {
      // The product first, then the epilogue reading it from one more buffer after the results.
      const GemmPlan& plan = *step.gemm;
      char* product =
          plan.result >= 0 ? x.pointers[step.node->numOperands() + static_cast<size_t>(plan.result)] : step.productAt;
      runGemm(plan, x.pointers.data(), product, step.scratchAt);
      x.pointers.push_back(product);
    }
    char** bufs = x.pointers.data();
    if (step.host) {
      step.host(bufs, [&](int64_t count, const std::function<void(int64_t, int64_t)>& body) {
        pool.parallelFor(count, body, step.parallel);
      });
    } else if (!entry && step.gemm) {
      // a lone product: nothing runs after the GEMM
    } else if (!entry) {
      SMELT_CHECK_OK(interpretStep(g, step, bufs));
    } else if (!step.parallel) {
      entry(bufs, 0, step.points);
    } else {
      pool.parallelFor(step.points, [&](int64_t begin, int64_t end) { entry(bufs, begin, end); });
    }
    // SMELT_CHECK_KERNELS=1: the node's operands were copied before it ran (an in-place result may
    // overwrite one), and its results are checked against the reference interpreter.
    if (x.checkKernels) {
      std::vector<Tensor> after = readBuffers(step.node->results(), bufs + step.node->numOperands());
      SMELT_CHECK_OK(checkAgainstReference(g, *step.node, step.label, before, after));
    }
    if (x.profiling && x.profile.counting()) x.profile.add(stepIndex, started);
  }
  if (x.profiling) x.profile.finishRun();
  // Outputs not written in place: inputs, parameters and constants returned as they are, and a
  // value returned under a second name.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Binding& b = x.outputs[i];
    if (b.kind == Binding::Output && b.index == static_cast<int64_t>(i)) continue;
    if (x.donatedOutputs[i]) continue;  // already in its parameter's tensor
    Tensor& t = outputs[i];
    if (t.byteSize() > 0) std::memcpy(t.raw(), pointerOf(b), t.byteSize());
  }
  return Status::success();
}

}  // namespace smelt
