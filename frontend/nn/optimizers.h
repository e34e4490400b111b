// Optimizers as graph ops: each parameter's update is elementwise IR in the training step's graph, so
// it fuses into one kernel per parameter and runs where the parameters live. Their state (momentum
// buffers, moments) is more model state ("optim.<param>.<slot>"); the learning rate and Adam's bias
// corrections are scalar inputs fed each step, so schedules are host code and nothing recompiles.
//   auto opt = nn::adam({.lr = 1e-3, .weightDecay = 1e-4});
//   auto schedule = nn::cosineSchedule(1e-3, totalSteps);
#pragma once

#include "frontend/nn/graph_context.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace smelt::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// Emits the new value of each parameter and of the optimizer's state for it; returns them by
  /// state name (the parameters under their own names).
  virtual std::vector<std::pair<std::string, Value*>> update(GraphContext& ctx, const std::vector<Value*>& params,
                                                             const std::vector<Value*>& grads) = 0;
  /// The scalar inputs update() declared, with their values for step `step` (1-based) at rate `lr`.
  virtual std::map<std::string, double> feeds(int64_t step, double lr) const = 0;
  /// The base learning rate.
  virtual double learningRate() const = 0;
  virtual std::string describe() const = 0;
};
using OptimizerPtr = std::shared_ptr<Optimizer>;

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  double weightDecay = 0;
};
/// torch.optim.SGD (plain, momentum, Nesterov; L2 weight decay added to the gradient).
OptimizerPtr sgd(SgdOptions options);

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0;
  /// AdamW: weight decay applied to the parameter (lr * wd * p), not added to the gradient.
  bool decoupled = false;
};
/// torch.optim.Adam, or AdamW with `decoupled`.
OptimizerPtr adam(AdamOptions options);
inline OptimizerPtr adamw(AdamOptions options) {
  options.decoupled = true;
  return adam(options);
}

struct RmsPropOptions {
  double lr = 0.01;
  double alpha = 0.99;
  double epsilon = 1e-8;
  double momentum = 0;
  double weightDecay = 0;
};
/// torch.optim.RMSprop (not centered).
OptimizerPtr rmsprop(RmsPropOptions options);

struct AdagradOptions {
  double lr = 0.01;
  double epsilon = 1e-10;
  double weightDecay = 0;
  double initialAccumulator = 0;
};
/// torch.optim.Adagrad (no learning-rate decay).
OptimizerPtr adagrad(AdagradOptions options);

/// Scales every gradient by min(1, maxNorm / (global L2 norm + 1e-6)), as
/// torch.nn.utils.clip_grad_norm_ does.
std::vector<Value*> clipByGlobalNorm(GraphContext& ctx, const std::vector<Value*>& grads, double maxNorm);

/// Learning rate by step (1-based).
using Schedule = std::function<double(int64_t step)>;
inline Schedule constantSchedule(double lr) {
  return [lr](int64_t) { return lr; };
}
/// lr * gamma^floor((step - 1) / every) (torch.optim.lr_scheduler.StepLR, stepped per step).
Schedule stepSchedule(double lr, int64_t every, double gamma);
/// Cosine from lr down to minLr over `total` steps (CosineAnnealingLR), then minLr.
Schedule cosineSchedule(double lr, int64_t total, double minLr = 0);

}  // namespace smelt::nn
