// A model's training step compiled once: the forward pass, the loss, its gradients (GradientTape, as
// more IR in the same graph) and the optimizer's updates, in one graph and one executable, then run
// per batch. Parameters and optimizer state stay in the model's StateDict between steps: they are
// fed to the executable by moving map entries (no copies), and each step's new values land in spare
// tensors that are then swapped in, so a step allocates and copies nothing but the batch itself.
//   nn::Model model(net, /*seed=*/1);
//   SMELT_TRY(auto step, nn::TrainStep::create(model, nn::crossEntropy, nn::adam({}), inputType, labelType));
//   SMELT_TRY(double loss, step->run(images, labels));
//   SMELT_TRY(auto predict, nn::Predictor::create(model, testInputType));
#pragma once

#include "frontend/nn/layers.h"
#include "frontend/nn/optimizers.h"
#include "runtime/exec/executable.h"

#include <functional>
#include <memory>

namespace smelt::nn {

/// A network and its state (parameters, buffers, optimizer state), made on first use from `seed`.
struct Model {
  explicit Model(ModulePtr network, uint64_t seed = 0) : net(std::move(network)), seed(seed) {}
  ModulePtr net;
  StateDict state;
  uint64_t seed;
  /// Parameters only (no optimizer state): their count of elements.
  int64_t parameterCount() const;
};

using LossFn = std::function<Value*(GraphContext& ctx, Value* output, Value* target)>;

struct TrainStepOptions {
  /// Gradients scaled to this global L2 norm at most (0: no clipping).
  double clipNorm = 0;
  /// Learning rate by step; empty: the optimizer's own, constant.
  Schedule schedule;
  CompileOptions compile;
};

class TrainStep {
 public:
  /// Builds and compiles the step for batches of `input` and `target` types.
  static Expected<std::unique_ptr<TrainStep>> create(Model& model, LossFn loss, OptimizerPtr optimizer,
                                                     const TensorType& input, const TensorType& target,
                                                     TrainStepOptions options = {});
  /// One step: returns the batch's loss; `output`, when given, receives the model's output.
  Expected<double> run(const Tensor& input, const Tensor& target, Tensor* output = nullptr);
  int64_t steps() const { return steps_; }
  /// The learning rate the next step uses.
  double learningRate() const;
  const Graph& graph() const { return exe_->graph(); }
  const CompileReport& report() const { return exe_->report(); }

 private:
  TrainStep() = default;
  Model* model_ = nullptr;
  OptimizerPtr optimizer_;
  Schedule schedule_;
  std::unique_ptr<Executable> exe_;
  std::vector<std::string> stateNames_;  // the state each output after loss and output updates
  TensorMap scalars_;                    // the per-step scalar inputs (learning rate, step, ...)
  std::vector<const Tensor*> inputs_;    // the executable's inputs by position (batch ones set per run)
  std::vector<Tensor> outputs_;
  int64_t steps_ = 0;
};

/// The model's forward pass for evaluation (batch norm on running statistics, no dropout).
class Predictor {
 public:
  static Expected<std::unique_ptr<Predictor>> create(Model& model, const TensorType& input,
                                                     const CompileOptions& options = {});
  Expected<Tensor> run(const Tensor& input);
  /// The same into `output` (reused when its type matches: no allocation, no copy).
  Status run(const Tensor& input, Tensor& output);

 private:
  Predictor() = default;
  Model* model_ = nullptr;
  std::unique_ptr<Executable> exe_;
  std::vector<Tensor> outputs_;
};

}  // namespace smelt::nn
