// See train_step.h.
#include "frontend/nn/train_step.h"

#include "autodiff/gradient_tape.h"
#include "codegen/log.h"
#include "frontend/nn/loss_scaling.h"
#include "passes/pass_manager.h"
#include "runtime/exec/size_general_kernels.h"
#include "runtime/exec/working_memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace smelt::nn {

namespace {

/// The batch sizes compiled so far, for the log (a loop: clang 14's ranges reject views::keys of a map).
std::vector<int64_t> batchSizesOf(const std::map<int64_t, CompiledBatch>& byBatch) {
  std::vector<int64_t> sizes;
  for (const auto& entry : byBatch) sizes.push_back(entry.first);
  return sizes;
}

/// The model's state (on the host, or on a device) for each of the graph's parameters, by position
/// (null: the graph's initial value), and a training step's check counts for theirs.
template <typename T>
std::vector<const T*> stateFor(const Graph& graph, const std::map<std::string, T, std::less<>>& state,
                               const T* checkCounts = nullptr) {
  std::vector<const T*> params;
  for (const Value* p : graph.parameters()) {
    if (p->name() == kCheckCountsName) {
      params.push_back(checkCounts);
      continue;
    }
    auto it = state.find(p->name());
    params.push_back(it == state.end() ? nullptr : &it->second);
  }
  return params;
}

/// `full` with `batch` examples instead of its own number.
TensorType withBatch(TensorType full, int64_t batch) {
  if (full.rank() > 0) full.shape[0] = batch;
  return full;
}

/// The number of examples in `t`, a batch of `full`'s examples or fewer (the same type otherwise).
Expected<int64_t> batchOf(const char* what, const TensorType& got, const TensorType& full) {
  if (got == full) return full.rank() > 0 ? full.shape[0] : 0;
  if (full.rank() > 0 && got.rank() == full.rank() && got.shape[0] >= 1 && got.shape[0] < full.shape[0] &&
      got == withBatch(full, got.shape[0])) {
    return got.shape[0];
  }
  return makeError("{}: the step was compiled for {} (batches of 1 to {}), got {}", what, full.toString(),
                   full.rank() > 0 ? full.shape[0] : 1, got.toString());
}

bool onCpu(const Executable& exe) { return exe.device()->kind() == DeviceKind::kCpu; }

/// Copies `host` into `into`, a device tensor of its type kept across steps (made on first use).
Status upload(const std::shared_ptr<Device>& device, const Tensor& host, DeviceTensor& into) {
  if (!into.defined() || !(into.type() == host.type()) || into.devicePtr() != device) {
    SMELT_TRY(into, DeviceTensor::fromHost(device, host));
    return Status::success();
  }
  return into.copyFrom(host);
}

}  // namespace

Expected<const StateDict*> Model::syncedHostState() {
  if (hostCurrent_) return &state;
  for (auto& [name, t] : deviceState_) {
    Tensor& host = state[name];
    if (!(host.type() == t.type())) host = Tensor(t.type());
    SMELT_CHECK_OK(t.toHost(host));
  }
  hostCurrent_ = true;
  unsyncedSteps_ = 0;
  return &state;
}

void Model::deviceStateLost() {
  deviceState_.clear();
  stateDevice_.reset();
  deviceCurrent_ = false;
  hostCurrent_ = true;
  unsyncedSteps_ = 0;
}

const StateDict& Model::hostState() {
  if (Expected<const StateDict*> synced = syncedHostState(); !synced) {
    logger().error("model state: copying it back from {} failed: {}", stateDevice_ ? stateDevice_->id() : "?",
                   synced.error().message());
  }
  return state;
}

Expected<DeviceTensorMap*> Model::stateOn(const std::shared_ptr<Device>& device) {
  if (stateDevice_ == device && deviceCurrent_ && deviceState_.size() == state.size()) return &deviceState_;
  SMELT_CHECK_OK(syncedHostState());
  DeviceTensorMap uploaded;
  for (const auto& [name, t] : state) {
    SMELT_TRY(uploaded[name], DeviceTensor::fromHost(device, t));
  }
  deviceState_ = std::move(uploaded);
  stateDevice_ = device;
  deviceCurrent_ = true;
  return &deviceState_;
}

void Model::stateChanged() {
  deviceCurrent_ = false;
  hostCurrent_ = true;
  unsyncedSteps_ = 0;
}

int64_t Model::parameterCount() const {
  int64_t n = 0;
  for (const auto& [name, t] : state) {
    if (name.rfind("optim.", 0) != 0) n += t.numel();
  }
  return n;
}

Expected<std::unique_ptr<TrainStep>> TrainStep::create(Model& model, LossFn loss, OptimizerPtr optimizer,
                                                       const TensorType& input, const TensorType& target,
                                                       TrainStepOptions options) {
  if (options.accumulate < 1) return makeError("train step: accumulate must be at least 1, got {}", options.accumulate);
  auto step = std::unique_ptr<TrainStep>(new TrainStep());
  step->model_ = &model;
  step->loss_ = std::move(loss);
  step->optimizer_ = std::move(optimizer);
  step->schedule_ = options.schedule ? options.schedule : constantSchedule(step->optimizer_->learningRate());
  step->options_ = std::move(options);
  // Each batch size compiles its own step; the kernels they share across sizes compile once
  // (runtime/exec/size_general_kernels.h: the second size makes them general, later ones reuse them).
  if (!step->options_.compile.sizeGeneral) step->options_.compile.sizeGeneral = std::make_shared<SizeGeneralKernels>();
  // They run one at a time, so in one working memory (runtime/exec/working_memory.h): an epoch's partial
  // last batch runs in the full batch's, no second arena.
  if (!step->options_.compile.workingMemory) {
    step->options_.compile.workingMemory = std::make_shared<SharedWorkingMemory>();
  }
  step->input_ = input;
  step->target_ = target;
  if (step->options_.distributed.enabled) {
    const std::shared_ptr<CollectiveGroup>& group = collectiveGroup();
    if (!group) return makeError("train step: distributed training needs a collective group (joinMpiWorld)");
  }
  SMELT_CHECK_OK(step->compileBatch(input.rank() > 0 ? input.shape[0] : 0));
  if (step->options_.distributed.enabled) {
    // Every rank starts from rank 0's parameters and optimizer state, and builds the same collectives.
    CollectiveGroup& group = *collectiveGroup();
    SMELT_CHECK_OK(checkSchedule(step->collectiveSchedule_, group));
    SMELT_CHECK_OK(broadcastState(model.state, group));
    model.stateChanged();
  }
  return step;
}

Status TrainStep::compileBatch(int64_t batch, bool accumulateOnly) {
  Model& model = *model_;
  // The graph takes the state's current values as its parameters' (new ones are made for the rest).
  SMELT_CHECK_OK(model.syncedHostState());
  Graph graph;
  graph.setName("train_step");
  // The full batch as given (a target that does not fit is the loss's error); a smaller one with its
  // number of examples in both.
  const bool full = byBatch_.empty();
  Value* x = graph.addInput("input", full ? input_ : withBatch(input_, batch));
  Value* y = graph.addInput("target", full || !targetBatched() ? target_ : withBatch(target_, batch));
  GradientTape tape(graph);
  GraphContext ctx(graph, model.state, /*training=*/true, model.seed);
  ctx.setSyncBatchNorm(options_.distributed.enabled && options_.distributed.syncBatchNorm);
  const bool lossScaling = options_.precision == DType::f16;
  if (options_.precision == DType::bf16 || lossScaling) {
    ctx.b().setAutocast(options_.precision);
  } else if (options_.precision != DType::f32) {
    return makeError("train step: precision {} is not supported (f32, bf16, f16)", dtypeName(options_.precision));
  }
  if (lossScaling && options_.accumulate > 1) {
    return makeError("train step: f16 with gradient accumulation is not supported (bf16 needs no loss scaling)");
  }
  Value* output = model.net->forward(ctx, x);
  ctx.b().setAutocast(std::nullopt);  // the loss and the update in f32
  Value* lossValue = output ? loss_(ctx, output, y) : nullptr;
  SMELT_CHECK_OK(ctx.b().status());
  if (!lossValue || lossValue->type().numel() != 1) {
    return makeError("train step: the loss must be one number, got {}", lossValue ? lossValue->type().toString() : "none");
  }
  // The scaled loss is part of what the tape differentiates.
  LossScale scaling;
  if (lossScaling) scaling = startLossScaling(ctx, lossValue);
  tape.stopRecording();
  inputRanges_ = ctx.inputRanges();
  std::vector<Value*> params = ctx.trainable();
  SMELT_TRY(std::vector<Value*> grads, tape.gradient(scaling.scaledLoss ? scaling.scaledLoss : lossValue, params));
  if (lossScaling) grads = unscale(ctx, grads, scaling);
  std::vector<std::pair<std::string, Value*>> updates;
  if (options_.accumulate > 1) {
    // This micro-batch's gradients plus those accumulated since the last update: kept (accumulateOnly), or
    // averaged into the update's gradients with the accumulators cleared.
    for (size_t i = 0; i < params.size(); ++i) {
      std::string name = "accum." + params[i]->name();
      Value* acc = ctx.parameter(name, params[i]->shape(), zeros(), /*trainable=*/false);
      Value* sum = ctx.b().add(acc, grads[i]);
      if (accumulateOnly) {
        updates.emplace_back(name, sum);
      } else {
        grads[i] = ctx.b().scale(sum, 1.0 / static_cast<double>(options_.accumulate));
        updates.emplace_back(name, ctx.b().zerosLike(acc));
      }
    }
  }
  if (accumulateOnly) {
    // No collective, no update: the step adds to the accumulators and returns the micro-batch's loss.
  } else if (options_.distributed.enabled) {
    std::vector<std::string> schedule;
    grads = averageOverRanks(ctx.b(), grads, options_.distributed, &schedule);
    if (full) collectiveSchedule_ = std::move(schedule);
  }
  Value* overflow = lossScaling ? foundNonFinite(ctx, grads) : nullptr;
  if (!accumulateOnly) {
    if (options_.clipNorm > 0) grads = clipByGlobalNorm(ctx, grads, options_.clipNorm);
    for (auto& u : optimizer_->update(ctx, params, grads)) updates.push_back(std::move(u));
  }
  SMELT_CHECK_OK(ctx.b().status());
  for (const auto& a : ctx.assigned()) updates.push_back(a);
  if (overflow) {
    // The update skipped on the device when a gradient overflowed: every state entry keeps its value.
    for (auto& [name, value] : updates) value = ctx.b().where(overflow, graph.findParameter(name), value);
    for (auto& u : updateLossScale(ctx, scaling, overflow)) updates.push_back(std::move(u));
  }
  // The index checks (labels in range, indices a gather can read) as the step's own instead of the
  // executable's, which a device-resident run would wait for: a batch that raises one updates nothing (every
  // state entry keeps its value, the loss is NaN), and each check counts such batches on the device, read at
  // the next synchronizing call (run(), sync()) instead of after every step.
  SMELT_TRY(std::vector<IndexFlag> flags, buildIndexChecks(graph, CheckPlacement::kBeforeGuarded));
  Value* checkCounts = nullptr;
  if (!flags.empty()) {
    Builder& b = ctx.b();
    // Computed where the last flag is (early: the labels are checked before the loss), not after the updates'
    // nodes: the schedule keeps the graph's order where it can, and every update waits for this.
    size_t last = 0;
    for (size_t i = 0; i < graph.numNodes(); ++i) {
      for (const IndexFlag& f : flags) {
        if (graph.nodes()[i].get() == f.raised->producer()) last = i;
      }
    }
    graph.setInsertionPoint(graph.nodes()[last + 1].get());
    Value* raised = nullptr;
    for (const IndexFlag& f : flags) raised = raised ? b.op("max", {raised, f.raised}) : f.raised;
    Value* rejected = b.op("gt", {raised, b.scalarLike(0.0, raised)});
    graph.clearInsertionPoint();
    for (auto& [name, value] : updates) value = b.where(rejected, graph.findParameter(name), value);
    lossValue = b.where(rejected, b.scalarLike(std::numeric_limits<double>::quiet_NaN(), lossValue), lossValue);
    // One count per check, then one of the batches any rejected, as one vector updated by a loop kernel of its
    // own (the concat between keeps it out of the flags' reduction kernel), so it is written over its parameter
    // in place: the step's buffers stay where a recorded run (a CUDA graph) has them.
    std::vector<Value*> parts;
    for (const IndexFlag& f : flags) parts.push_back(b.reshape(f.raised, {1}));
    parts.push_back(b.reshape(raised, {1}));
    Value* counts = graph.addParameter(std::string(kCheckCountsName),
                                       Tensor(TensorType{DType::i32, {static_cast<int64_t>(parts.size())}}),
                                       /*trainable=*/false);
    checkCounts = b.add(counts, b.op("concat", parts, {{"axis", int64_t{0}}}));
    SMELT_CHECK_OK(b.status());
  }

  // Each bucket's wait right before the first update that reads it, the others' updates first (data_parallel.h).
  if (options_.distributed.enabled && !accumulateOnly) SMELT_CHECK_OK(runWaitsLate(graph));
  CompiledBatch c;
  graph.addOutput("loss", lossValue);
  graph.addOutput("output", output);
  CompileOptions compile = options_.compile;
  compile.checkIndices = false;  // the step's own, above
  if (!options_.device.empty()) compile.device = options_.device;
  if (options_.memoryBudget > 0) {
    SMELT_TRY(std::string budgeted, pipelineWithMemoryBudget(compile.pipeline, options_.memoryBudget));
    compile.pipeline = std::move(budgeted);
  }
  // A smaller batch runs where the full one does.
  if (!byBatch_.empty()) compile.device = deviceId();
  for (size_t i = 0; i < updates.size(); ++i) {
    std::string name = fmt::format("state{}", i);
    graph.addOutput(name, updates[i].second);
    c.stateNames.push_back(updates[i].first);
    // New weights, optimizer slots and running statistics over the old ones where the kernel allows:
    // one copy of the state instead of two.
    if (graph.findParameter(updates[i].first)) compile.donate.emplace_back(updates[i].first, name);
  }
  c.checkOutput = graph.outputs().size();
  if (checkCounts) {
    graph.addOutput("checked", checkCounts);
    compile.donate.emplace_back(kCheckCountsName, "checked");
    for (IndexFlag& f : flags) c.checks.push_back(std::move(f.check));
    c.checkCounts = Tensor(checkCounts->type());
  }
  graph.removeDeadNodes();  // the check_range nodes the checks replaced
  c.updating = !accumulateOnly;
  if (!byBatch_.empty()) {
    logger().info("train step: compiling for batches of {} (compiled for {} before)", batch,
                  fmt::join(batchSizesOf(byBatch_), ", "));
  }
  SMELT_TRY(c.exe, Executable::compile(graph, compile));
  // Every parameter is fed from the model's state on every run: no second copy of it.
  c.exe->releaseParameterValues();
  // The state the step just added (optimizer slots, running statistics) is new on the host.
  model.stateChanged();
  for (const Value* in : graph.inputs()) {
    if (in->name() != "input" && in->name() != "target") c.scalars.emplace(in->name(), Tensor(in->type()));
  }
  auto& stored = (accumulateOnly ? accumulateByBatch_ : byBatch_)[batch] = std::move(c);
  // Positions as the executable's graph has them; map entries stay put, so the pointers hold.
  for (const Value* in : stored.exe->graph().inputs()) {
    auto it = stored.scalars.find(in->name());
    stored.inputs.push_back(it == stored.scalars.end() ? nullptr : &it->second);
  }
  return Status::success();
}

double TrainStep::learningRate() const { return schedule_(steps_ + 1); }

int64_t TrainStep::replays() const {
  int64_t n = 0;
  for (const auto* table : {&byBatch_, &accumulateByBatch_}) {
    for (const auto& [batch, c] : *table) n += c.exe->replays();
  }
  return n;
}

Expected<CompiledBatch*> TrainStep::prepareRun(const TensorType& input, const TensorType& target) {
  SMELT_TRY(int64_t batch, batchOf("input", input, input_));
  if (targetBatched()) {
    SMELT_TRY(int64_t targetBatch, batchOf("target", target, target_));
    if (batch != targetBatch) return makeError("input: a batch of {} examples, target: of {}", batch, targetBatch);
  } else if (!(target == target_)) {
    return makeError("target: the step was compiled for {}, got {}", target_.toString(), target.toString());
  }
  // With gradient accumulation every `accumulate`-th run updates; the others only accumulate.
  const bool updating = options_.accumulate <= 1 || runs_ % options_.accumulate == options_.accumulate - 1;
  auto& table = updating ? byBatch_ : accumulateByBatch_;
  if (!table.count(batch)) SMELT_CHECK_OK(compileBatch(batch, !updating));
  CompiledBatch& c = table.at(batch);
  for (const auto& [name, value] : optimizer_->feeds(steps_ + 1, learningRate())) {
    if (auto it = c.scalars.find(name); it != c.scalars.end()) it->second.setDouble(0, value);
  }
  // Random ops draw new masks every run (micro-batches too).
  if (auto it = c.scalars.find("step"); it != c.scalars.end()) it->second.setInt(0, runs_ + 1);
  return &c;
}

void TrainStep::countRun(const CompiledBatch& c) {
  ++runs_;
  if (c.updating) ++steps_;
}

Expected<double> TrainStep::run(const Tensor& input, const Tensor& target, Tensor* output) {
  // Steps queued before report what their checks rejected first.
  if (queued_) SMELT_CHECK_OK(sync());
  SMELT_TRY(CompiledBatch * c, prepareRun(input.type(), target.type()));
  for (const InputRange& range : inputRanges_)
    SMELT_CHECK_OK(checkInputRange(range, range.input == "input" ? input : target));
  SMELT_TRY(double loss,
            onCpu(*c->exe) ? runOnHost(*c, input, target, output) : runOnDevice(*c, input, target, output));
  countRun(*c);
  return loss;
}

Expected<DeviceTensor> TrainStep::runAsync(const DeviceTensor& input, const DeviceTensor& target) {
  if (!input.defined() || !target.defined())
    return makeError("train step: runAsync needs defined input and target tensors");
  // Every batch size runs where the full one does.
  const std::shared_ptr<Device>& device = full().exe->device();
  for (const auto& [what, t] : {std::pair{"input", &input}, std::pair{"target", &target}}) {
    if (t->devicePtr() != device) {
      return makeError("train step: the {} lives on {}, the step runs on {}", what, t->device().id(), device->id());
    }
  }
  if (onCpu(*full().exe)) {
    // The CPU runs the step now, its checks on the host as run()'s.
    SMELT_TRY(Tensor x, input.toHost());
    SMELT_TRY(Tensor y, target.toHost());
    SMELT_TRY(double loss, run(x, y));
    Tensor value(full().exe->graph().outputs()[0].value->type());
    value.setDouble(0, loss);
    return DeviceTensor::fromHost(device, value);
  }
  SMELT_TRY(CompiledBatch * c, prepareRun(input.type(), target.type()));
  Status queued = enqueueDeviceStep(*c, input, target);
  if (!queued.ok()) {
    if (isDeviceLost(queued.error())) return recoverFromLostDevice(*c, queued.error());
    return queued.error();
  }
  model_->deviceStateChanged(true);  // done as far as losing the device goes: it is queued behind the others
  c->countsUnread = true;
  queued_ = true;
  countRun(*c);
  // The loss into a tensor of its own, so that the step's loss output stays where a recorded step wrote it.
  const DeviceTensor& loss = c->deviceOutputs[0];
  SMELT_TRY(DeviceTensor mine, DeviceTensor::toOverwrite(device, loss.type()));
  SMELT_CHECK_OK(device->copy(mine.memory(), 0, loss.memory(), 0, loss.byteSize(), device->defaultStream()));
  return mine;
}

Status TrainStep::sync() {
  queued_ = false;
  Status first = Status::success();
  for (auto* table : {&byBatch_, &accumulateByBatch_}) {
    for (auto& [batch, c] : *table) {
      if (!c.countsUnread) continue;
      Status read = readChecks(c, /*counted=*/true);
      if (!read.ok() && first.ok()) first = read;
    }
  }
  if (!first.ok()) return first;
  // A step without checks: its loss, which it wrote last, says that it is done.
  for (auto* table : {&byBatch_, &accumulateByBatch_}) {
    for (auto& [batch, c] : *table) {
      if (!onCpu(*c.exe)) return c.exe->device()->defaultStream().synchronize();
    }
  }
  return Status::success();
}

Status TrainStep::readChecks(CompiledBatch& c, bool counted) {
  c.countsUnread = false;
  if (c.checks.empty()) return Status::success();
  // One count per check, then the batches any check rejected; back to zeros once read.
  Tensor counts = c.checkCounts;
  if (onCpu(*c.exe)) {
    c.checkCounts = Tensor(counts.type());
  } else {
    SMELT_CHECK_OK(c.deviceCheckCounts.toHost(counts));  // waits for the steps before
  }
  const int64_t rejected = counts.getInt(counts.numel() - 1);
  if (rejected == 0) return Status::success();
  if (!onCpu(*c.exe)) SMELT_CHECK_OK(c.deviceCheckCounts.copyFrom(Tensor(counts.type())));
  if (counted && c.updating) steps_ -= rejected;
  size_t which = 0;
  while (which + 1 < c.checks.size() && counts.getInt(static_cast<int64_t>(which)) == 0) ++which;
  return makeError(
      "training step: {}: {}; {} batch{} since the last check trained nothing (the update skipped, the loss NaN)",
      c.checks[which].label, c.checks[which].words, rejected, rejected == 1 ? "" : "es");
}

Expected<double> TrainStep::runOnHost(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output) {
  const Graph& g = c.exe->graph();
  SMELT_TRY(const StateDict* state, model_->syncedHostState());
  (void)state;
  c.inputs[0] = &input;
  c.inputs[1] = &target;
  SMELT_CHECK_OK(c.exe->run(c.inputs, stateFor(g, model_->state, &c.checkCounts), c.outputs));
  // The new state is in the model's tensors where it was donated; elsewhere it lands in outputs, and
  // swapping gives the model the new tensors and the executable the old ones to overwrite next time.
  for (size_t i = 0; i < c.stateNames.size(); ++i) {
    if (!c.exe->donated(2 + i)) std::swap(model_->state[c.stateNames[i]], c.outputs[2 + i]);
  }
  if (!c.checks.empty() && !c.exe->donated(c.checkOutput)) std::swap(c.checkCounts, c.outputs[c.checkOutput]);
  model_->stateChanged();
  SMELT_CHECK_OK(readChecks(c, /*counted=*/false));
  if (output) *output = c.outputs[1];
  return c.outputs[0].getDouble(0);
}

Expected<double> TrainStep::runOnDevice(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output) {
  Expected<double> loss = runDeviceStep(c, input, target, output);
  if (loss.ok() || !isDeviceLost(loss.error())) return loss;
  return recoverFromLostDevice(c, loss.error());
}

Error TrainStep::recoverFromLostDevice(CompiledBatch& c, const Error& lostError) {
  // The device's context is gone with the model's state on it: the model goes back to its state as
  // last copied to the host, every compiled batch compiles again (on the reset device, or the CPU),
  // and the next run trains on from there. This step and those since the copy are lost: an error.
  const std::string device = c.exe->deviceId();
  const int64_t lost = model_->unsyncedSteps();
  model_->deviceStateLost();
  steps_ = std::max<int64_t>(0, steps_ - lost);
  queued_ = false;
  for (auto* table : {&byBatch_, &accumulateByBatch_}) {
    for (auto& [batch, compiled] : *table) {
      compiled.deviceInputs.clear();
      compiled.deviceOutputs.clear();
      compiled.deviceCheckCounts = DeviceTensor();
      compiled.countsUnread = false;
      if (compiled.exe->deviceId() == device) {
        if (Status recovered = compiled.exe->recoverDevice(lostError); !recovered.ok()) return recovered.error();
      }
    }
  }
  return lostError.withContext(fmt::format(
      "training step {}: {} was lost; the model's state is back at its last copy on the host, {} step{} ago (step "
      "{}); the next step trains on from there on {}",
      steps_ + lost + 1, device, lost, lost == 1 ? "" : "s", steps_, c.exe->deviceId()));
}

Status TrainStep::enqueueDeviceStep(CompiledBatch& c, const DeviceTensor& input, const DeviceTensor& target) {
  const Graph& g = c.exe->graph();
  const std::shared_ptr<Device>& device = c.exe->device();
  SMELT_TRY(DeviceTensorMap * state, model_->stateOn(device));
  // The step's scalars into device tensors kept across steps (no allocation), the check counts from 0.
  c.deviceInputs.resize(g.inputs().size());
  std::vector<const DeviceTensor*> inputs{&input, &target};
  c.uploadedScalars.resize(g.inputs().size());
  for (size_t i = 2; i < g.inputs().size(); ++i) {
    // Only the scalars that changed (Adam's step size does every step, SGD's learning rate rarely): each
    // upload is a call into the driver.
    const Tensor& value = *c.inputs[i];
    Tensor& last = c.uploadedScalars[i];
    if (!c.deviceInputs[i].defined() || !(last.type() == value.type()) ||
        std::memcmp(last.raw(), value.raw(), value.byteSize()) != 0) {
      SMELT_CHECK_OK(upload(device, value, c.deviceInputs[i]));
      last = value;
    }
    inputs.push_back(&c.deviceInputs[i]);
  }
  if (!c.checks.empty() && !c.deviceCheckCounts.defined()) {
    SMELT_TRY(c.deviceCheckCounts, DeviceTensor::zeros(device, c.checkCounts.type()));
  }
  SMELT_CHECK_OK(
      c.exe->run(inputs, stateFor(g, *state, c.checks.empty() ? nullptr : &c.deviceCheckCounts), c.deviceOutputs));
  // Donated state was updated in place; the rest is in the outputs' tensors, swapped with the state's old
  // ones, which the next step writes its outputs over: two buffers that take turns, no pool block per step,
  // and the two sets of addresses a recorded run (a CUDA graph) replays.
  for (size_t i = 0; i < c.stateNames.size(); ++i) {
    if (!c.exe->donated(2 + i)) std::swap((*state)[c.stateNames[i]], c.deviceOutputs[2 + i]);
  }
  if (!c.checks.empty() && !c.exe->donated(c.checkOutput))
    std::swap(c.deviceCheckCounts, c.deviceOutputs[c.checkOutput]);
  // Counted as done once queued: a device lost later loses it with the rest (runDeviceStep, which waits for
  // its loss, counts it only then).
  model_->deviceStateChanged(false);
  return Status::success();
}

Expected<double> TrainStep::runDeviceStep(CompiledBatch& c, const Tensor& input, const Tensor& target, Tensor* output) {
  const std::shared_ptr<Device>& device = c.exe->device();
  // The batch into device tensors kept across steps (no allocation).
  c.deviceInputs.resize(c.exe->graph().inputs().size());
  SMELT_CHECK_OK(upload(device, input, c.deviceInputs[0]));
  SMELT_CHECK_OK(upload(device, target, c.deviceInputs[1]));
  SMELT_CHECK_OK(enqueueDeviceStep(c, c.deviceInputs[0], c.deviceInputs[1]));
  if (output) {
    SMELT_TRY(*output, c.deviceOutputs[1].toHost());
  }
  // The loss is the one number that comes back each step (it waits for the step to finish); only then
  // is the step done, and counted as one the host copy lacks (a device lost before it is not).
  SMELT_TRY(Tensor loss, c.deviceOutputs[0].toHost());
  model_->deviceStateChanged(true);
  if (!c.checks.empty()) SMELT_CHECK_OK(readChecks(c, /*counted=*/false));
  return loss.getDouble(0);
}

Expected<std::unique_ptr<Predictor>> Predictor::create(Model& model, const TensorType& input,
                                                       const CompileOptions& options) {
  auto p = std::unique_ptr<Predictor>(new Predictor());
  p->model_ = &model;
  p->options_ = options;
  if (!p->options_.sizeGeneral) p->options_.sizeGeneral = std::make_shared<SizeGeneralKernels>();
  if (!p->options_.workingMemory) p->options_.workingMemory = std::make_shared<SharedWorkingMemory>();
  p->input_ = input;
  SMELT_CHECK_OK(p->compileBatch(input.rank() > 0 ? input.shape[0] : 0));
  return p;
}

namespace {

/// The model's evaluation graph for inputs of `input` (its parameters read from the state per run).
Expected<Graph> evaluationGraph(Model& model, const TensorType& input, const char* name) {
  SMELT_CHECK_OK(model.syncedHostState());
  Graph graph;
  graph.setName(name);
  Value* x = graph.addInput("input", input);
  GraphContext ctx(graph, model.state, /*training=*/false, model.seed);
  Value* output = model.net->forward(ctx, x);
  SMELT_CHECK_OK(ctx.b().status());
  graph.addOutput("output", output);
  return graph;
}

}  // namespace

Expected<Graph> inferenceGraph(Model& model, const TensorType& input) {
  SMELT_TRY(Graph graph, evaluationGraph(model, input, "inference"));
  // The context reads parameters from the state per run; a graph of its own holds their values.
  for (Value* p : graph.parameters()) {
    auto it = model.state.find(p->name());
    if (it == model.state.end()) return makeError("inference graph: parameter {} is not in the model's state", p->name());
    p->setInitialValue(it->second);
  }
  return graph;
}

Status Predictor::compileBatch(int64_t batch) {
  SMELT_TRY(Graph graph, evaluationGraph(*model_, withBatch(input_, batch), "predict"));
  CompileOptions options = options_;
  if (!byBatch_.empty()) {
    options.device = deviceId();
    logger().info("predictor: compiling for batches of {} (compiled for {} before)", batch,
                  fmt::join(batchSizesOf(byBatch_), ", "));
  }
  CompiledBatch c;
  SMELT_TRY(c.exe, Executable::compile(graph, options));
  c.exe->releaseParameterValues();  // fed from the model's state on every run
  byBatch_[batch] = std::move(c);
  return Status::success();
}

Expected<Tensor> Predictor::run(const Tensor& input) {
  Tensor output;
  SMELT_CHECK_OK(run(input, output));
  return output;
}

Status Predictor::run(const Tensor& input, Tensor& output) {
  SMELT_TRY(int64_t batch, batchOf("input", input.type(), input_));
  if (!byBatch_.count(batch)) SMELT_CHECK_OK(compileBatch(batch));
  CompiledBatch& c = byBatch_.at(batch);
  const Graph& g = c.exe->graph();
  if (!onCpu(*c.exe)) {
    const std::shared_ptr<Device>& device = c.exe->device();
    SMELT_TRY(DeviceTensorMap * state, model_->stateOn(device));
    c.deviceInputs.resize(1);
    SMELT_CHECK_OK(upload(device, input, c.deviceInputs[0]));
    const DeviceTensor* inputs[] = {&c.deviceInputs[0]};
    SMELT_CHECK_OK(c.exe->run(inputs, stateFor(g, *state), c.deviceOutputs));
    if (!(output.type() == c.deviceOutputs[0].type()) || output.bytes().size() != output.byteSize()) {
      output = Tensor::uninitialized(c.deviceOutputs[0].type());
    }
    return c.deviceOutputs[0].toHost(output);
  }
  SMELT_TRY(const StateDict* state, model_->syncedHostState());
  (void)state;
  const Tensor* inputs[] = {&input};
  if (c.outputs.empty()) c.outputs.resize(1);
  std::swap(c.outputs[0], output);
  Status status = c.exe->run(inputs, stateFor(g, model_->state), c.outputs);
  std::swap(c.outputs[0], output);
  return status;
}

}  // namespace smelt::nn
