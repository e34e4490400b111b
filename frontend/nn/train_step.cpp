// See train_step.h.
#include "frontend/nn/train_step.h"

#include "autodiff/gradient_tape.h"

#include <fmt/format.h>

namespace smelt::nn {

namespace {

/// Moves the named state entries into `feeds` (and back with giveBack), so the executable reads the
/// model's own tensors.
void lend(StateDict& state, TensorMap& feeds, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    auto node = state.extract(n);
    if (!node.empty()) feeds.insert(std::move(node));
  }
}
void giveBack(StateDict& state, TensorMap& feeds, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    auto node = feeds.extract(n);
    if (!node.empty()) state.insert(std::move(node));
  }
}

Status checkType(const char* what, const Tensor& t, const TensorType& expected) {
  if (t.type() == expected) return Status::success();
  return makeError("{}: the step was compiled for {}, got {}", what, expected.toString(), t.type().toString());
}

}  // namespace

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
  for (size_t i = 0; i < updates.size(); ++i) {
    graph.addOutput(fmt::format("state{}", i), updates[i].second);
    step->stateNames_.push_back(updates[i].first);
  }
  for (const Value* p : graph.parameters()) step->fedState_.push_back(p->name());
  SMELT_TRY(step->exe_, Executable::compile(graph, options.compile));
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
  TensorMap feeds;
  feeds.emplace("input", input);
  feeds.emplace("target", target);
  for (const auto& [name, value] : optimizer_->feeds(steps_ + 1, learningRate())) {
    feeds.emplace(name, Tensor::scalar(DType::f32, value));
  }
  if (g.findInput("step")) feeds.emplace("step", Tensor::scalar(DType::i64, static_cast<double>(steps_ + 1)));
  lend(model_->state, feeds, fedState_);
  Status status = exe_->run(feeds, outputs_);
  giveBack(model_->state, feeds, fedState_);
  SMELT_CHECK_OK(status);
  // The new state lands in outputs_; swapping gives the model the new tensors and the executable the
  // old ones to overwrite next time.
  for (size_t i = 0; i < stateNames_.size(); ++i) std::swap(model_->state[stateNames_[i]], outputs_[2 + i]);
  ++steps_;
  if (output) *output = outputs_[1];
  return outputs_[0].getDouble(0);
}

Expected<std::unique_ptr<Predictor>> Predictor::create(Model& model, const TensorType& input,
                                                       const CompileOptions& options) {
  Graph graph;
  graph.setName("predict");
  Value* x = graph.addInput("input", input);
  GraphContext ctx(graph, model.state, /*training=*/false, model.seed);
  Value* output = model.net->forward(ctx, x);
  SMELT_CHECK_OK(ctx.b().status());
  graph.addOutput("output", output);
  auto p = std::unique_ptr<Predictor>(new Predictor());
  for (const Value* v : graph.parameters()) p->fedState_.push_back(v->name());
  SMELT_TRY(p->exe_, Executable::compile(graph, options));
  p->model_ = &model;
  return p;
}

Expected<Tensor> Predictor::run(const Tensor& input) {
  SMELT_CHECK_OK(checkType("input", input, exe_->graph().inputs()[0]->type()));
  TensorMap feeds;
  feeds.emplace("input", input);
  lend(model_->state, feeds, fedState_);
  Status status = exe_->run(feeds, outputs_);
  giveBack(model_->state, feeds, fedState_);
  SMELT_CHECK_OK(status);
  return outputs_[0];
}

}  // namespace smelt::nn
