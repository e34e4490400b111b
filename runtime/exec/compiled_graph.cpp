// CompiledGraph, compiling: pipeline + memory plan + one step per node (kernel, vendor product and its
// epilogue, host code, or the interpreter) + one image of every kernel + one arena (see
// compiled_graph.h). Running is compiled_graph_run.cpp.
#include "runtime/exec/compiled_graph_impl.h"
#include "runtime/exec/distinct_kernels.h"
#include "runtime/exec/size_general_kernels.h"

#include "codegen/c_renderer.h"
#include "codegen/log.h"
#include "codegen/conv_kernels.h"
#include "codegen/kernel_passes.h"
#include "codegen/lower_kernel.h"
#include "passes/fusion_groups.h"
#include "passes/pass_manager.h"
#include "passes/plan_memory.h"
#include "runtime/exec/run_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace smelt {

namespace {

/// Marks each of the kernel's buffers bound to the same memory as an earlier one (an in-place result,
/// a product computed in its output): see KBuffer::sameAs. A kArena binding with a negative offset
/// is memory of its own.
bool overlaps(const Binding& x, int64_t xBytes, const Binding& y, int64_t yBytes);

void markSharedBuffers(codegen::Kernel& kernel, const std::vector<Binding>& bindings) {
  // Restrict pointers only when no two buffers may overlap, whatever their types (an in-place cast
  // shares bytes without being sameAs). A product's own slot (offset not placed yet) is apart.
  kernel.disjointBuffers = kernel.buffers.size() <= bindings.size();
  auto bytes = [&](size_t i) {
    return kernel.buffers[i].numel * static_cast<int64_t>(dtypeSize(kernel.buffers[i].dtype));
  };
  for (size_t i = 0; i < kernel.buffers.size() && i < bindings.size() && kernel.disjointBuffers; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (overlaps(bindings[i], bytes(i), bindings[j], bytes(j))) kernel.disjointBuffers = false;
    }
  }
  for (size_t i = 0; i < kernel.buffers.size() && i < bindings.size(); ++i) {
    if (bindings[i].kind == Binding::kArena && bindings[i].index < 0) continue;
    for (size_t j = 0; j < i; ++j) {
      const codegen::KBuffer &a = kernel.buffers[j], &b = kernel.buffers[i];
      if (bindings[j] == bindings[i] && a.dtype == b.dtype && a.numel == b.numel) {
        kernel.buffers[i].sameAs = static_cast<int32_t>(j);
        break;
      }
    }
  }
}

/// Whether two bindings of `xBytes` and `yBytes` may share memory: the same position (a donated
/// output is its parameter), or overlapping ranges of the arena.
bool overlaps(const Binding& x, int64_t xBytes, const Binding& y, int64_t yBytes) {
  if (x.kind != y.kind) return false;
  if (x.kind != Binding::kArena) return x.index == y.index;
  return x.index >= 0 && y.index >= 0 && x.index < y.index + yBytes && y.index < x.index + xBytes;
}

int64_t elementBytesOf(const Value* v) { return static_cast<int64_t>(dtypeSize(v->type().dtype)); }

/// The node's host implementation (OpDef::host) when its op has one for these types and no result
/// shares memory with an operand (a scatter reads its operands while it writes): `shares(r, o)` says
/// whether buffer r (a result) may share memory with buffer o (an operand).
template <typename Shares>
HostKernel planHostStep(const Graph& graph, const Node& node, Shares shares) {
  for (size_t r = node.numOperands(); r < node.numOperands() + node.results().size(); ++r) {
    for (size_t o = 0; o < node.numOperands(); ++o) {
      if (shares(r, o)) return {};
    }
  }
  std::vector<TensorType> operandTypes, resultTypes;
  for (const Value* v : node.operands()) operandTypes.push_back(v->type());
  for (const Value* v : node.results()) resultTypes.push_back(v->type());
  OpCall call(node.op(), graph.labelOf(node), operandTypes, node.attrs(), resultTypes);
  return node.op().host(call);
}

/// Whether a collective may run over the executable's buffers in place: an all_reduce_start sums in its result
/// buffer while the step goes on, so only its all_reduce_wait may read that buffer (anything else reading it
/// would see a sum in the making, where the op promises its operand; a graph output too).
bool collectiveInPlace(const Node& node, const std::unordered_map<const Value*, int64_t>& outputs) {
  if (node.opName() != "all_reduce_start") return true;
  const std::vector<Node*>& users = node.result()->users();
  return users.size() == 1 && users[0]->opName() == "all_reduce_wait" && !outputs.count(node.result());
}

constexpr int64_t kNoOffset = -1;  // a product's own buffer, placed in the scratch region later

}  // namespace

Status CompiledGraph::Impl::rebindWorkingMemory() {
  if (generation != device->generation()) return Status::success();  // compiles again before it runs
  workingBase = working->memory();
  for (Step& s : steps) {
    for (size_t b = 0; b < s.buffers.size() && b < s.args.size(); ++b) {
      if (s.buffers[b].kind != Binding::kArena) continue;
      s.args[b] = resolve(s.buffers[b], s.args[b].elementBytes);
      if (s.launch) s.launch->setBuffer(b, s.args[b]);
    }
  }
  recordings.clear();  // recorded with the old block's addresses
  return Status::success();
}

CompiledGraph::Impl::~Impl() {
  if (working) working->leave(this);
  if (!profiling) return;
  std::vector<std::string> labels, kinds;
  for (const Step& s : steps) {
    std::string label = s.label + " = " + s.node->opName() + describeShape(s.node);
    // A fused kernel's members (first the node itself: skipped), so a slow kernel names its ops
    // and the ONNX nodes or layers they came from.
    if (s.provenance.size() > 1) {
      std::string members;
      for (size_t m = 1; m < s.provenance.size() && members.size() < 160; ++m) {
        members += (members.empty() ? "" : ", ") + s.provenance[m];
      }
      label += fmt::format(" [{}{}]", members, members.size() >= 160 ? ", ..." : "");
    }
    labels.push_back(std::move(label));
    std::string kind = s.kind == Step::Kind::kHost               ? "host"
                       : s.kind == Step::Kind::kCollective       ? "collective"
                       : s.kind == Step::Kind::kDeviceCollective ? "collective on the device"
                       : s.kind == Step::Kind::kInterpreted      ? "interpreted"
                       : s.kind == Step::Kind::kProduct          ? (s.launch ? "BLAS+epilogue" : "BLAS")
                                                                 : "kernel";
    kinds.push_back(kind + (s.launch && s.shape.parallel && hostMemory ? ", parallel" : ""));
  }
  // Printed, not logged: asking for a profile is asking to see it, whatever SMELT_LOG says.
  if (std::string t = profile.table(labels, kinds); !t.empty()) fmt::print(stderr, "{}", t);
}

Binding CompiledGraph::Impl::bind(const Value* v, const MemoryPlan& plan) const {
  if (v->kind() == ValueKind::Input) {
    const auto& ins = graph.inputs();
    return {Binding::kInput, std::find(ins.begin(), ins.end(), v) - ins.begin()};
  }
  if (v->kind() == ValueKind::Parameter) {
    const auto& ps = graph.parameters();
    return {Binding::kParameter, std::find(ps.begin(), ps.end(), v) - ps.begin()};
  }
  if (v->producer()->opName() == "constant") {
    return {Binding::kConstant, std::find(constants.begin(), constants.end(), v) - constants.begin()};
  }
  // Graph outputs are written straight into what a run returns (no copy out of the arena: the plan
  // keeps them apart from every other buffer until the end anyway), or over the parameter they were
  // donated to.
  if (auto it = donatedTo.find(v); it != donatedTo.end()) return {Binding::kParameter, it->second};
  if (auto it = outputIndex.find(v); it != outputIndex.end()) return {Binding::kOutput, it->second};
  const BufferAssignment* a = plan.find(v);
  return {Binding::kArena, a ? a->offset : 0};
}

/// Which donations hold: the output's producer is the parameter's last reader and reads it only at
/// the index it writes, and the two have one type. The others are computed into the output tensor.
Status CompiledGraph::Impl::planDonations() {
  donatedOutputs.assign(graph.outputs().size(), false);
  donatedParameter.assign(graph.outputs().size(), -1);
  std::unordered_map<const Value*, size_t> lastUse;
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    for (const Value* o : graph.nodes()[i]->operands()) lastUse[o] = i;
  }
  for (const auto& donation : options.donate) {
    // Named copies, not structured bindings: clang 14 (the fuzzing build) cannot capture those.
    const std::string& parameterName = donation.first;
    const std::string& outputName = donation.second;
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
                 !donatedTo.count(value) && last != lastUse.end() && graph.nodes()[last->second].get() == producer &&
                 readsOnlyAtWrittenIndex(*producer, *p);
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
    donatedParameter[index] = p - params.begin();
  }
  return Status::success();
}

/// A vendor product for the step's node when the backend has one: where the product lands (the
/// result it becomes, else a buffer of its own in the scratch region, which the epilogue then reads
/// as one more buffer).
Status CompiledGraph::Impl::planProduct(Step& step) {
  const Node& node = *step.node;
  std::optional<GemmPlan> plan = backend->planProduct(node, options);
  if (!plan) return Status::success();
  int64_t productBytes = plan->anchor->result(0)->type().byteSize();
  if (plan->result >= 0) {
    const Binding& into = step.buffers[node.numOperands() + static_cast<size_t>(plan->result)];
    for (size_t i = 0; i < node.numOperands(); ++i) {
      if (overlaps(into, productBytes, step.buffers[i], node.operand(i)->type().byteSize())) plan->result = -1;
    }
  }
  if (plan->result < 0) {
    // The product in a buffer of its own, and the whole epilogue after it as a kernel: nothing fused into it.
    plan->epilogue = true;
    plan->vendorEpilogue.reset();
    step.productBytes = productBytes;
  }
  step.scratchBytes = plan->columnElements * static_cast<int64_t>(dtypeSize(plan->dtype));
  step.kind = Step::Kind::kProduct;
  if (plan->epilogue) {
    step.buffers.push_back(plan->result >= 0 ? step.buffers[node.numOperands() + static_cast<size_t>(plan->result)]
                                             : Binding{Binding::kArena, kNoOffset});
  }
  step.product = std::move(plan);
  return Status::success();
}

Expected<int64_t> CompiledGraph::Impl::addKernel(codegen::Kernel kernel, const std::string& symbolPrefix,
                                                 LaunchShape& shape, std::string& symbol, Step* step) {
  SMELT_CHECK_OK(codegen::runKernelPasses(kernel, backend->kernelPipeline()));
  if (kernel.blockThreads > 0) ++report.blockKernels;
  if (kernel.pointsPerThread > 1) ++report.vectorKernels;
  shape = backend->shapeOf(kernel, options);
  symbol = symbolPrefix + codegen::CRenderer::symbolFor(kernel, pendingKernels.size());
  if (step && options.sizeGeneral) {
    if (auto general = options.sizeGeneral->resolve(symbol, kernel)) {
      kernel = std::move(general->first);
      if (!general->second.empty()) {
        step->buffers.push_back({Binding::kSizes, static_cast<int64_t>(sizeValues.size())});
        sizeValues.insert(sizeValues.end(), general->second.begin(), general->second.end());
      }
      ++report.sizeGeneralKernels;
    }
  }
  pendingKernels.push_back(std::move(kernel));
  pendingSymbols.push_back(symbol);
  ++report.kernels;
  return static_cast<int64_t>(pendingKernels.size()) - 1;
}

Status CompiledGraph::Impl::prepare(const Graph& source, const std::string& symbolPrefix) {
  start = std::chrono::steady_clock::now();
  graph = source.clone();
  if (options.checkIndices) {
    SMELT_TRY(indexChecks, addIndexChecks(graph));
  }
  std::string pipeline = options.pipeline;
  // bf16/f16 products as f32 products where the device has no fast low-precision one (the CPU's BLAS is f32, with
  // oneDNN's bf16 GEMM where the CPU has it).
  if (const LowPrecisionProducts low = backend->lowPrecisionProducts(options.blas); !pipeline.empty() && !low.all) {
    pipeline = (low.dtypes.empty() ? std::string("widen-products")
                                   : fmt::format("widen-products{{keep-dtypes={},keep-ops={}}}", low.dtypes, low.ops)) +
               "," + pipeline;
  }
  SMELT_TRY(PassManager pm, PassManager::fromPipeline(pipeline, PassManagerOptions::fromEnvironment()));
  SMELT_TRY(bool changed, pm.run(graph));
  (void)changed;
  hostMemory = backend->hostMemory();
  checkKernels = std::getenv("SMELT_CHECK_KERNELS") != nullptr;
  profiling = StepProfile::enabled();
  MemoryPlan plan = planMemory(graph);
  for (const auto& node : graph.nodes()) {
    if (node->opName() == "constant") {
      constants.push_back(node->result(0));
      constantValues.push_back(std::get<Tensor>(node->attrs().at("value")));
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* v = graph.outputs()[i].value;
    if (v->kind() == ValueKind::Result && v->producer()->opName() != "constant") {
      outputIndex.emplace(v, static_cast<int64_t>(i));
    }
  }
  SMELT_CHECK_OK(planDonations());
  size_t planned = 0;
  for (const auto& node : graph.nodes()) {
    if (progress) progress->stage(fmt::format("lowering node {} of {} of @{}", ++planned, graph.numNodes(), graph.name()));
    if (node->opName() == "constant") continue;
    Step step;
    step.node = node.get();
    step.label = graph.labelOf(*node);
    // A fused node's members for profiles, whatever runs it (a kernel, a product, the interpreter).
    if (profiling) step.provenance = kernelProvenance(graph, *node);
    for (const Value* o : node->operands()) step.buffers.push_back(bind(o, plan));
    for (const Value* r : node->results()) step.buffers.push_back(bind(r, plan));
    if (hostMemory && options.host && node->op().host) {
      step.host = planHostStep(graph, *node, [&](size_t r, size_t o) {
        return overlaps(step.buffers[r], node->result(r - node->numOperands())->type().byteSize(), step.buffers[o],
                        node->operand(o)->type().byteSize());
      });
    }
    // A reshape planned over its operand's bytes, a concat whose operands were written in its place, a slice read
    // where it lies in its operand: nothing to run.
    if (runsAsView(*node, plan)) {
      logger().debug("{}: a view of its operands' bytes, nothing to run", step.label);
      continue;
    }
    if (hostMemory && node->op().collectiveOnHost && collectiveInPlace(*node, outputIndex)) {
      step.kind = Step::Kind::kCollective;
      std::vector<TensorType> operandTypes, resultTypes;
      for (const Value* v : node->operands()) operandTypes.push_back(v->type());
      for (const Value* v : node->results()) resultTypes.push_back(v->type());
      step.collective = [n = node.get(), label = step.label, operandTypes, resultTypes](char* const* buffers) {
        OpCall call(n->op(), label, operandTypes, n->attrs(), resultTypes);
        return n->op().collectiveOnHost(call, buffers);
      };
      logger().debug("{}: a collective over the executable's buffers", step.label);
      steps.push_back(std::move(step));
      continue;
    }
    if (!hostMemory && node->op().collective && backend->allReducesOnDevice(node->operand(0)->type().dtype) &&
        collectiveInPlace(*node, outputIndex)) {
      step.kind = Step::Kind::kDeviceCollective;
      const std::string& op = node->opName();
      const std::vector<TensorType> operandTypes{node->operand(0)->type()};
      const OpCall call(node->op(), step.label, operandTypes, node->attrs());  // with the defaults filled in
      step.onDevice = Step::OnDevice{.op = op == "all_reduce_start"  ? Step::OnDevice::Op::kStart
                                           : op == "all_reduce_wait" ? Step::OnDevice::Op::kWait
                                                                     : Step::OnDevice::Op::kAllReduce,
                                     .tag = op == "all_reduce" ? 0 : call.getInt("tag"),
                                     .mean = call.getString("op") == "mean",
                                     .type = operandTypes[0]};
      logger().debug("{}: a collective on {}'s buffers", step.label, device->id());
      deviceCollectives = true;
      steps.push_back(std::move(step));
      continue;
    }
    const std::string why = step.host ? "" : backend->whyNotKernel(*node);
    if (step.host) {
      step.kind = Step::Kind::kHost;
      step.shape.parallel = options.parallel;
      ++report.host;
      logger().debug("{}: the op's host implementation", step.label);
    } else if (why.empty() && options.blas) {
      SMELT_CHECK_OK(planProduct(step));
    }
    if (step.kind == Step::Kind::kProduct && step.product->conv && !hostMemory && !step.product->nativeConvolution) {
      SMELT_CHECK_OK(planDeviceConvolution(step, symbolPrefix));
    }
    if (step.kind == Step::Kind::kProduct) {
      ++report.blas;
      logger().debug("{}: vendor product {}x{}x{} (batch {}){}", step.label, step.product->m, step.product->n,
                     step.product->k, step.product->batch, step.product->epilogue ? " and an epilogue kernel" : "");
    }
    bool wantsKernel = step.kind == Step::Kind::kInterpreted || (step.product && step.product->epilogue);
    if (wantsKernel && why.empty()) {
      SMELT_TRY(codegen::Kernel kernel,
                step.product ? codegen::lowerEpilogue(graph, *node, *step.product->anchor)
                             : codegen::lowerToKernel(graph, *node, backend->loweringPipeline()));
      if (kernel.buffers.size() != step.buffers.size()) {
        return makeError("{}: its kernel has {} buffers, the node {} operands and results", step.label,
                         kernel.buffers.size(), step.buffers.size());
      }
      markSharedBuffers(kernel, step.buffers);
      if (step.kind == Step::Kind::kInterpreted) step.kind = Step::Kind::kKernel;
      SMELT_TRY(step.kernel, addKernel(std::move(kernel), symbolPrefix, step.shape, step.symbol, &step));
    } else if (step.kind == Step::Kind::kInterpreted) {
      // An op without a kernel lowering, or one the device lacks (an op or dtype), still runs, on the
      // reference interpreter (on the host), with one warning; a collective always runs there (ir/collective.h).
      if (!node->op().collective) {
        logger().warn("{}: {} on {}; it runs on the reference interpreter", step.label, why, device->id());
      }
      ++report.interpreted;
    }
    logger().debug("{}: {} points{}", step.label, step.shape.points, step.shape.parallel ? ", parallel" : "");
    steps.push_back(std::move(step));
  }
  outputSource.clear();
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* v = graph.outputs()[i].value;
    Binding b = bind(v, plan);
    // A donated output's value ends up in its parameter's tensor.
    outputSource.push_back(b);
  }
  int64_t scratchBytes = 0;
  for (const Step& s : steps) {
    scratchBytes = std::max(scratchBytes, alignUp(s.productBytes, kArenaAlignment) + s.scratchBytes);
  }
  layout = layoutArena(graph, plan, !hostMemory, constants, scratchBytes);
  for (Step& s : steps) {
    for (Binding& b : s.buffers) {
      if (b.kind == Binding::kArena && b.index == kNoOffset) b.index = layout.scratchOffset;
    }
  }
  report.arenaBytes = layout.bytes;
  report.workingBytes = layout.workingBytes;
  report.plannedBytes = plan.peakBytes;
  logger().debug("{} steps on {}: arena {} bytes (plan {}, products and scratch {}), {} outputs donated to parameters",
                 steps.size(), device->id(), layout.bytes, plan.peakBytes, scratchBytes, donatedTo.size());
  return Status::success();
}

KernelBufferArg CompiledGraph::Impl::resolve(const Binding& b, int64_t elementBytes) const {
  KernelBufferArg arg;
  switch (b.kind) {
    case Binding::kArena:
      arg = workingArg(b.index);
      break;
    case Binding::kInput: arg = inputArgs[static_cast<size_t>(b.index)]; break;
    case Binding::kParameter: arg = parameterArgs[static_cast<size_t>(b.index)]; break;
    case Binding::kConstant: arg = constantArgs[static_cast<size_t>(b.index)]; break;
    case Binding::kOutput: arg = outputArgs[static_cast<size_t>(b.index)]; break;
    case Binding::kSizes:
      arg = hostMemory ? KernelBufferArg{DeviceMemory{const_cast<int64_t*>(sizeValues.data()), sizeValues.size() * sizeof(int64_t)}, 0, 1}
                       : KernelBufferArg{sizeMemory.memory(), 0, 1};
      arg.byteOffset = b.index * static_cast<int64_t>(sizeof(int64_t));
      break;
  }
  arg.elementBytes = elementBytes;
  return arg;
}

Status CompiledGraph::Impl::finish(std::shared_ptr<DeviceKernels> loaded, const KernelLoadInfo& info) {
  kernels = std::move(loaded);
  loadInfo = info;
  generation = device->generation();
  if (backend->ownStream()) {
    SMELT_TRY(ownStream, device->createStream());
    stream = ownStream.get();
  } else {
    stream = &device->defaultStream();
  }
  staging = HostStaging::forDevice(device);
  if (layout.slotBytes > 0) {
    SMELT_TRY(slots, MemoryPool::forDevice(device)->rent(static_cast<size_t>(layout.slotBytes)));
  }
  working = options.workingMemory && options.workingMemory->accepts(device) ? options.workingMemory
                                                                            : std::make_shared<SharedWorkingMemory>();
  SMELT_CHECK_OK(working->join(this, device, layout.workingBytes));
  workingBase = working->memory();
  // Constants: in place on the CPU, uploaded once into their slots elsewhere (as are the parameters'
  // initial values).
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor& value = constantValues[i];
    if (hostMemory) {
      constantArgs.push_back({DeviceMemory{const_cast<std::byte*>(value.raw()), value.byteSize()}, 0, 1});
    } else {
      constantArgs.push_back(slotArg(layout.constantSlots[i]));
      SMELT_CHECK_OK(device->copyIn(slots.memory(), static_cast<size_t>(layout.constantSlots[i]), value.raw(),
                                    value.byteSize(), *stream));
    }
  }
  // General kernels' run-time values: read in place on the CPU, uploaded once elsewhere.
  if (!hostMemory && !sizeValues.empty()) {
    SMELT_TRY(sizeMemory, MemoryPool::forDevice(device)->rent(sizeValues.size() * sizeof(int64_t)));
    SMELT_CHECK_OK(device->copyIn(sizeMemory.memory(), 0, sizeValues.data(), sizeValues.size() * sizeof(int64_t),
                                  *stream));
  }
  const auto& params = graph.parameters();
  inputArgs.assign(graph.inputs().size(), {});
  parameterArgs.assign(params.size(), {});
  outputArgs.assign(graph.outputs().size(), {});
  parameterDirty.assign(params.size(), false);
  donatedNow.assign(graph.outputs().size(), false);
  for (size_t i = 0; !hostMemory && i < params.size(); ++i) {
    if (!params[i]->hasInitialValue()) continue;  // fed on every run
    const Tensor& value = params[i]->initialValue();
    SMELT_CHECK_OK(device->copyIn(slots.memory(), static_cast<size_t>(layout.parameterSlots[i]), value.raw(),
                                  value.byteSize(), *stream));
  }
  // Every step's fixed arguments now; dynamic ones get a placeholder (the working memory) until a run
  // binds them.
  for (Step& s : steps) {
    const Node& node = *s.node;
    for (size_t b = 0; b < s.buffers.size(); ++b) {
      int64_t element = s.buffers[b].kind == Binding::kSizes ? static_cast<int64_t>(sizeof(int64_t))
                        : b < node.numOperands()                     ? elementBytesOf(node.operand(b))
                        : b < node.numOperands() + node.results().size() ? elementBytesOf(node.result(b - node.numOperands()))
                                                                           : static_cast<int64_t>(dtypeSize(s.product->dtype));
      if (s.buffers[b].dynamic()) {
        s.dynamicBuffers.push_back(static_cast<uint32_t>(b));
        s.args.push_back(workingArg(0, element));
      } else {
        s.args.push_back(resolve(s.buffers[b], element));
      }
    }
    s.pointers.resize(s.args.size());
    if (s.kernel >= 0) {
      SMELT_TRY(s.launch, kernels->prepare(s.symbol, s.args, s.shape));
    }
    if (s.conv) {
      for (auto* helpers : {&s.conv->before, &s.conv->after}) {
        for (DeviceConvolution::Helper& h : *helpers) {
          // Placeholders: runDeviceConvolution binds both buffers on every run.
          const int64_t element = static_cast<int64_t>(dtypeSize(s.product->dtype));
          const KernelBufferArg placeholder[2] = {workingArg(0, element), workingArg(0, element)};
          SMELT_TRY(h.launch, kernels->prepare(h.symbol, placeholder, h.shape));
        }
      }
    }
  }
  SMELT_CHECK_OK(stream->synchronize());
  report.device = device->id();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  logger().debug("{}: compiled @{} ({} kernels, {} products, {} host, {} interpreted, {} from caches) in {:.1f} ms",
                 device->id(), graph.name(), report.kernels, report.blas, report.host, report.interpreted,
                 report.cacheHits, report.seconds * 1e3);
  pendingKernels.clear();
  pendingKernels.shrink_to_fit();
  pendingSymbols.clear();
  return Status::success();
}

CompiledGraph::CompiledGraph() : impl_(std::make_unique<Impl>()) {}
CompiledGraph::~CompiledGraph() = default;
const Graph& CompiledGraph::graph() const { return impl_->graph; }
const CompileReport& CompiledGraph::report() const { return impl_->report; }
const std::shared_ptr<Device>& CompiledGraph::device() const { return impl_->device; }
const KernelLoadInfo& CompiledGraph::loadInfo() const { return impl_->loadInfo; }
std::uint64_t CompiledGraph::generation() const { return impl_->generation; }
void CompiledGraph::releaseParameterValues() { impl_->graph.releaseParameterValues(); }
int64_t CompiledGraph::replays() const { return impl_->replays; }
int64_t CompiledGraph::workingMemoryBytes() const { return impl_->working ? impl_->working->bytes() : 0; }

bool CompiledGraph::donated(size_t output) const {
  return output < impl_->donatedOutputs.size() && impl_->donatedOutputs[output];
}

Expected<std::map<std::string, codegen::Kernel>> CompiledGraph::lowerKernels(const Graph& graph,
                                                                             const std::shared_ptr<Device>& device,
                                                                             const CompileOptions& options) {
  std::unique_ptr<CompiledGraph> one(new CompiledGraph());
  Impl& x = *one->impl_;
  x.options = options;
  x.options.sizeGeneral.reset();
  x.device = device;
  SMELT_TRY(x.backend, backendFor(device));
  SMELT_CHECK_OK(x.prepare(graph, ""));
  x.profiling = false;  // nothing ran: no profile to print
  std::map<std::string, codegen::Kernel> kernels;
  for (size_t k = 0; k < x.pendingKernels.size(); ++k) {
    kernels.emplace(x.pendingSymbols[k], std::move(x.pendingKernels[k]));
  }
  return kernels;
}

Expected<std::vector<std::unique_ptr<CompiledGraph>>> CompiledGraph::compileAll(
    std::span<const Graph> graphs, const std::shared_ptr<Device>& device, const CompileOptions& options) {
  std::vector<std::unique_ptr<CompiledGraph>> compiled;
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  CompileProgress progress(fmt::format("{}{} for {}", graphs.empty() ? "" : "@" + graphs.front().name(),
                                       graphs.size() > 1 ? fmt::format(" and {} more graphs", graphs.size() - 1) : "",
                                       device->id()));
  for (size_t g = 0; g < graphs.size(); ++g) {
    std::unique_ptr<CompiledGraph> one(new CompiledGraph());
    Impl& x = *one->impl_;
    x.options = options;
    x.device = device;
    x.progress = &progress;
    SMELT_TRY(x.backend, backendFor(device));
    // Kernel names are unique within a graph; a prefix keeps them unique across the batch.
    SMELT_CHECK_OK(x.prepare(graphs[g], graphs.size() > 1 ? fmt::format("g{}_", g) : ""));
    for (size_t k = 0; k < x.pendingKernels.size(); ++k) {
      kernels.push_back(&x.pendingKernels[k]);
      symbols.push_back(x.pendingSymbols[k]);
    }
    compiled.push_back(std::move(one));
  }
  if (compiled.empty()) return compiled;
  KernelLoadInfo info;
  std::shared_ptr<DeviceKernels> loaded;
  DistinctKernels distinct = distinctKernels(kernels, symbols);
  if (!kernels.empty()) {
    const size_t building = distinct.kernels.size();
    progress.stage(fmt::format("building {} kernels (compiling, or from the kernel cache)", building));
    info.compiledOne = [&](size_t done) { progress.stage(fmt::format("built {} of {} kernels", done, building)); };
    SMELT_TRY(loaded, compiled.front()->impl_->backend->loadKernels(distinct.kernels, distinct.symbols, info));
    info.compiledOne = nullptr;  // it refers to this frame; the info is kept
    loaded = withAliases(std::move(loaded), distinct.aliases);
    // Per kernel given, as the reports count them: an alias compiled nothing of its own, like a cache hit.
    std::vector<bool> cachedPerKernel;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const size_t compiledAs = distinct.compiledAs[k];
      cachedPerKernel.push_back(distinct.aliases.contains(symbols[k]) ||
                                (compiledAs < info.cached.size() && info.cached[compiledAs]));
    }
    info.cached = std::move(cachedPerKernel);
  }
  int64_t cached = 0;
  for (bool hit : info.cached) cached += hit ? 1 : 0;
  progress.summary(fmt::format("{} kernels ({} distinct), {} from the cache or shared", kernels.size(), distinct.kernels.size(),
                               cached));
  size_t first = 0;
  for (auto& one : compiled) {
    // Each graph counts its own kernels' cache hits and shared code.
    size_t count = one->impl_->pendingKernels.size();
    for (size_t k = first; k < first + count && k < info.cached.size(); ++k) {
      one->impl_->report.cacheHits += info.cached[k];
      one->impl_->report.sharedKernels += distinct.aliases.contains(symbols[k]) ? 1 : 0;
    }
    first += count;
    one->impl_->progress = nullptr;
    SMELT_CHECK_OK(one->impl_->finish(loaded, info));
  }
  return compiled;
}

}  // namespace smelt
