// See train_step.h.
#include "frontend/nn/train_step.h"

#include "autodiff/gradient_tape.h"
#include "codegen/log.h"

#include <fmt/format.h>

namespace smelt::nn {

namespace {

/// The model's state (on the host, or on a device) for each of the graph's parameters, by position
/// (null: the graph's initial value).
template <typename T>
std::vector<const T*> stateFor(const Graph& graph, const std::map<std::string, T, std::less<>>& state) {
  std::vector<const T*> params;
  for (const Value* p : graph.parameters()) {
    auto it = state.find(p->name());
    params.push_back(it == state.end() ? nullptr : &it->second);
  }
  return params;
}

Status checkType(const char* what, const Tensor& t, const TensorType& expected) {
  if (t.type() == expected) return Status::success();
  return makeError("{}: the step was compiled for {}, got {}", what, expected.toString(), t.type().toString());
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
  return &state;
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
  // The graph takes the state's current values as its parameters' (new ones are made for the rest).
  SMELT_CHECK_OK(model.syncedHostState());
  Graph graph;
  graph.setName("train_step");
  Value* x = graph.addInput("input", input);
  Value* y = graph.addInput("target", target);
  GradientTape tape(graph);
  GraphContext ctx(graph, model.state, /*training=*/true, model.seed);
  Value* output = model.net->forward(ctx, x);
  Value* lossValue = output ? loss(ctx, output, y) : nullptr;
  SMELT_CHECK_OK(ctx.b().status());
  if (!lossValue || lossValue->type().numel() != 1) {
    return makeError("train step: the loss must be one number, got {}", lossValue ? lossValue->type().toString() : "none");
  }
  tape.stopRecording();
  std::vector<Value*> params = ctx.trainable();
  SMELT_TRY(std::vector<Value*> grads, tape.gradient(lossValue, params));
  if (options.clipNorm > 0) grads = clipByGlobalNorm(ctx, grads, options.clipNorm);
  std::vector<std::pair<std::string, Value*>> updates = optimizer->update(ctx, params, grads);
  SMELT_CHECK_OK(ctx.b().status());
  for (const auto& a : ctx.assigned()) updates.push_back(a);

  auto step = std::unique_ptr<TrainStep>(new TrainStep());
  graph.addOutput("loss", lossValue);
  graph.addOutput("output", output);
  CompileOptions compile = options.compile;
  if (!options.device.empty()) compile.device = options.device;
  for (size_t i = 0; i < updates.size(); ++i) {
    std::string name = fmt::format("state{}", i);
    graph.addOutput(name, updates[i].second);
    step->stateNames_.push_back(updates[i].first);
    // New weights, optimizer slots and running statistics over the old ones where the kernel allows:
    // one copy of the state instead of two.
    if (graph.findParameter(updates[i].first)) compile.donate.emplace_back(updates[i].first, name);
  }
  SMELT_TRY(step->exe_, Executable::compile(graph, compile));
  // Every parameter is fed from the model's state on every run: no second copy of it.
  step->exe_->releaseParameterValues();
  // The state the step just added (optimizer slots, running statistics) is new on the host.
  model.stateChanged();
  for (const Value* in : graph.inputs()) {
    if (in->name() != "input" && in->name() != "target") step->scalars_.emplace(in->name(), Tensor(in->type()));
  }
  // Positions as the executable's graph has them; map entries stay put, so the pointers hold.
  for (const Value* in : step->exe_->graph().inputs()) {
    auto it = step->scalars_.find(in->name());
    step->inputs_.push_back(it == step->scalars_.end() ? nullptr : &it->second);
  }
  step->model_ = &model;
  step->optimizer_ = std::move(optimizer);
  step->schedule_ = options.schedule ? options.schedule : constantSchedule(step->optimizer_->learningRate());
  return step;
}

double TrainStep::learningRate() const { return schedule_(steps_ + 1); }

Expected<double> TrainStep::run(const Tensor& input, const Tensor& target, Tensor* output) {
  const Graph& g = exe_->graph();
  SMELT_CHECK_OK(checkType("input", input, g.inputs()[0]->type()));
  SMELT_CHECK_OK(checkType("target", target, g.inputs()[1]->type()));
  for (const auto& [name, value] : optimizer_->feeds(steps_ + 1, learningRate())) scalars_.at(name).setDouble(0, value);
  if (auto it = scalars_.find("step"); it != scalars_.end()) it->second.setInt(0, steps_ + 1);
  SMELT_TRY(double loss, onCpu(*exe_) ? runOnHost(input, target, output) : runOnDevice(input, target, output));
  ++steps_;
  return loss;
}

Expected<double> TrainStep::runOnHost(const Tensor& input, const Tensor& target, Tensor* output) {
  const Graph& g = exe_->graph();
  SMELT_TRY(const StateDict* state, model_->syncedHostState());
  (void)state;
  inputs_[0] = &input;
  inputs_[1] = &target;
  SMELT_CHECK_OK(exe_->run(inputs_, stateFor(g, model_->state), outputs_));
  // The new state is in the model's tensors where it was donated; elsewhere it lands in outputs_, and
  // swapping gives the model the new tensors and the executable the old ones to overwrite next time.
  for (size_t i = 0; i < stateNames_.size(); ++i) {
    if (!exe_->donated(2 + i)) std::swap(model_->state[stateNames_[i]], outputs_[2 + i]);
  }
  model_->stateChanged();
  if (output) *output = outputs_[1];
  return outputs_[0].getDouble(0);
}

Expected<double> TrainStep::runOnDevice(const Tensor& input, const Tensor& target, Tensor* output) {
  const Graph& g = exe_->graph();
  const std::shared_ptr<Device>& device = exe_->device();
  SMELT_TRY(DeviceTensorMap * state, model_->stateOn(device));
  // The batch and the step's scalars into device tensors kept across steps (no allocation).
  deviceInputs_.resize(g.inputs().size());
  std::vector<const DeviceTensor*> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Tensor& host = i == 0 ? input : i == 1 ? target : *inputs_[i];
    SMELT_CHECK_OK(upload(device, host, deviceInputs_[i]));
    inputs.push_back(&deviceInputs_[i]);
  }
  SMELT_CHECK_OK(exe_->run(inputs, stateFor(g, *state), deviceOutputs_));
  // Donated state was updated in place; the rest is the outputs' new tensors, which the state now
  // shares (the next step writes its outputs into fresh pool blocks).
  for (size_t i = 0; i < stateNames_.size(); ++i) {
    if (!exe_->donated(2 + i)) (*state)[stateNames_[i]] = deviceOutputs_[2 + i];
  }
  model_->deviceStateChanged();
  if (output) {
    SMELT_TRY(*output, deviceOutputs_[1].toHost());
  }
  // The loss is the one number that comes back each step (it waits for the step to finish).
  SMELT_TRY(Tensor loss, deviceOutputs_[0].toHost());
  return loss.getDouble(0);
}

Expected<std::unique_ptr<Predictor>> Predictor::create(Model& model, const TensorType& input,
                                                       const CompileOptions& options) {
  SMELT_CHECK_OK(model.syncedHostState());
  Graph graph;
  graph.setName("predict");
  Value* x = graph.addInput("input", input);
  GraphContext ctx(graph, model.state, /*training=*/false, model.seed);
  Value* output = model.net->forward(ctx, x);
  SMELT_CHECK_OK(ctx.b().status());
  graph.addOutput("output", output);
  auto p = std::unique_ptr<Predictor>(new Predictor());
  SMELT_TRY(p->exe_, Executable::compile(graph, options));
  p->exe_->releaseParameterValues();  // fed from the model's state on every run
  p->model_ = &model;
  return p;
}

Expected<Tensor> Predictor::run(const Tensor& input) {
  Tensor output;
  SMELT_CHECK_OK(run(input, output));
  return output;
}

Status Predictor::run(const Tensor& input, Tensor& output) {
  const Graph& g = exe_->graph();
  SMELT_CHECK_OK(checkType("input", input, g.inputs()[0]->type()));
  if (!onCpu(*exe_)) {
    const std::shared_ptr<Device>& device = exe_->device();
    SMELT_TRY(DeviceTensorMap * state, model_->stateOn(device));
    SMELT_CHECK_OK(upload(device, input, deviceInput_));
    const DeviceTensor* inputs[] = {&deviceInput_};
    SMELT_CHECK_OK(exe_->run(inputs, stateFor(g, *state), deviceOutputs_));
    if (!(output.type() == deviceOutputs_[0].type()) || output.bytes().size() != output.byteSize()) {
      output = Tensor::uninitialized(deviceOutputs_[0].type());
    }
    return deviceOutputs_[0].toHost(output);
  }
  SMELT_TRY(const StateDict* state, model_->syncedHostState());
  (void)state;
  const Tensor* inputs[] = {&input};
  if (outputs_.empty()) outputs_.resize(1);
  std::swap(outputs_[0], output);
  Status status = exe_->run(inputs, stateFor(g, model_->state), outputs_);
  std::swap(outputs_[0], output);
  return status;
}

}  // namespace smelt::nn
