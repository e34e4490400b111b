// See optimizers.h. Each update follows the PyTorch optimizer's documented algorithm line by line.
#include "frontend/nn/optimizers.h"

#include <fmt/format.h>

#include <cmath>

namespace smelt::nn {

namespace {

/// A scalar f32 input of the step graph, declared once.
Value* scalarInput(GraphContext& ctx, const std::string& name) {
  if (Value* v = ctx.graph().findInput(name)) return v;
  return ctx.graph().addInput(name, TensorType{DType::f32, {}});
}

/// The optimizer's state slot for parameter p, zero-initialized (or `init`).
Value* slot(GraphContext& ctx, Value* p, const std::string& name, double init = 0) {
  return ctx.parameter("optim." + p->name() + "." + name, p->shape(), constantValue(init), /*trainable=*/false);
}

Value* withWeightDecay(Builder& b, Value* g, Value* p, double wd) { return wd != 0 ? b.add(g, b.scale(p, wd)) : g; }

using Updates = std::vector<std::pair<std::string, Value*>>;

/// An optimizer that updates each parameter on its own: the loop over parameters, the learning-rate
/// input and its feed, shared by all but Adam's own scalars.
class PerParameter : public Optimizer {
 public:
  Updates update(GraphContext& ctx, const std::vector<Value*>& params, const std::vector<Value*>& grads) final {
    declareInputs(ctx);
    Updates out;
    for (size_t i = 0; i < params.size(); ++i) updateOne(ctx, params[i], grads[i], out);
    return out;
  }
  std::map<std::string, double> feeds(int64_t, double lr) const override { return {{"optim.lr", lr}}; }

 protected:
  virtual void declareInputs(GraphContext& ctx) { lr_ = scalarInput(ctx, "optim.lr"); }
  /// Appends the new values of p and of its slots.
  virtual void updateOne(GraphContext& ctx, Value* p, Value* g, Updates& out) = 0;
  Value* lr_ = nullptr;
};

class Sgd final : public PerParameter {
 public:
  explicit Sgd(SgdOptions o) : o_(o) {}
  double learningRate() const override { return o_.lr; }
  std::string describe() const override {
    return fmt::format("SGD(lr {}, momentum {}{}, weight decay {})", o_.lr, o_.momentum, o_.nesterov ? ", Nesterov" : "",
                       o_.weightDecay);
  }

 private:
  void updateOne(GraphContext& ctx, Value* p, Value* grad, Updates& out) override {
    Builder& b = ctx.b();
    Value* g = withWeightDecay(b, grad, p, o_.weightDecay);
    if (o_.momentum != 0) {
      // buf = momentum * buf + (1 - dampening) * g; zero-initialized, so the first step gives
      // (1 - dampening) * g where PyTorch starts from g: equal for the default dampening 0.
      Value* buf = slot(ctx, p, "momentum_buffer");
      Value* next = b.add(b.scale(buf, o_.momentum), b.scale(g, 1.0 - o_.dampening));
      out.emplace_back(buf->name(), next);
      g = o_.nesterov ? b.add(g, b.scale(next, o_.momentum)) : next;
    }
    out.emplace_back(p->name(), b.sub(p, b.mul(g, lr_)));
  }
  SgdOptions o_;
};

class Adam final : public PerParameter {
 public:
  explicit Adam(AdamOptions o) : o_(o) {}
  std::map<std::string, double> feeds(int64_t step, double lr) const override {
    double t = static_cast<double>(step);
    double bc1 = 1.0 - std::pow(o_.beta1, t), bc2 = 1.0 - std::pow(o_.beta2, t);
    std::map<std::string, double> f{{"optim.step_size", lr / bc1}, {"optim.inv_sqrt_bias_correction2", 1.0 / std::sqrt(bc2)}};
    if (decays()) f["optim.lr"] = lr;
    return f;
  }
  double learningRate() const override { return o_.lr; }
  std::string describe() const override {
    return fmt::format("{}(lr {}, betas ({}, {}), weight decay {})", o_.decoupled ? "AdamW" : "Adam", o_.lr, o_.beta1,
                       o_.beta2, o_.weightDecay);
  }

 private:
  bool decays() const { return o_.decoupled && o_.weightDecay != 0; }
  void declareInputs(GraphContext& ctx) override {
    // step_size = lr / (1 - beta1^t) and 1 / sqrt(1 - beta2^t), fed per step.
    stepSize_ = scalarInput(ctx, "optim.step_size");
    invRootBc2_ = scalarInput(ctx, "optim.inv_sqrt_bias_correction2");
    lr_ = decays() ? scalarInput(ctx, "optim.lr") : nullptr;
  }
  void updateOne(GraphContext& ctx, Value* p, Value* grad, Updates& out) override {
    Builder& b = ctx.b();
    Value* g = o_.decoupled ? grad : withWeightDecay(b, grad, p, o_.weightDecay);
    Value* base = lr_ ? b.sub(p, b.mul(b.scale(p, o_.weightDecay), lr_)) : p;  // AdamW: p *= 1 - lr * wd
    Value* m = slot(ctx, p, "exp_avg");
    Value* v = slot(ctx, p, "exp_avg_sq");
    Value* m2 = b.add(b.scale(m, o_.beta1), b.scale(g, 1.0 - o_.beta1));
    Value* v2 = b.add(b.scale(v, o_.beta2), b.scale(b.square(g), 1.0 - o_.beta2));
    Value* denom = b.add(b.mul(b.sqrt(v2), invRootBc2_), b.scalarLike(o_.epsilon, v2));
    out.emplace_back(m->name(), m2);
    out.emplace_back(v->name(), v2);
    out.emplace_back(p->name(), b.sub(base, b.mul(b.div(m2, denom), stepSize_)));
  }
  AdamOptions o_;
  Value* stepSize_ = nullptr;
  Value* invRootBc2_ = nullptr;
};

class RmsProp final : public PerParameter {
 public:
  explicit RmsProp(RmsPropOptions o) : o_(o) {}
  double learningRate() const override { return o_.lr; }
  std::string describe() const override { return fmt::format("RMSprop(lr {}, alpha {})", o_.lr, o_.alpha); }

 private:
  void updateOne(GraphContext& ctx, Value* p, Value* grad, Updates& out) override {
    Builder& b = ctx.b();
    Value* g = withWeightDecay(b, grad, p, o_.weightDecay);
    Value* sq = slot(ctx, p, "square_avg");
    Value* sq2 = b.add(b.scale(sq, o_.alpha), b.scale(b.square(g), 1.0 - o_.alpha));
    Value* step = b.div(g, b.add(b.sqrt(sq2), b.scalarLike(o_.epsilon, sq2)));
    out.emplace_back(sq->name(), sq2);
    if (o_.momentum != 0) {
      Value* buf = slot(ctx, p, "momentum_buffer");
      step = b.add(b.scale(buf, o_.momentum), step);
      out.emplace_back(buf->name(), step);
    }
    out.emplace_back(p->name(), b.sub(p, b.mul(step, lr_)));
  }
  RmsPropOptions o_;
};

class Adagrad final : public PerParameter {
 public:
  explicit Adagrad(AdagradOptions o) : o_(o) {}
  double learningRate() const override { return o_.lr; }
  std::string describe() const override { return fmt::format("Adagrad(lr {})", o_.lr); }

 private:
  void updateOne(GraphContext& ctx, Value* p, Value* grad, Updates& out) override {
    Builder& b = ctx.b();
    Value* g = withWeightDecay(b, grad, p, o_.weightDecay);
    Value* sum = slot(ctx, p, "sum", o_.initialAccumulator);
    Value* sum2 = b.add(sum, b.square(g));
    out.emplace_back(sum->name(), sum2);
    out.emplace_back(p->name(), b.sub(p, b.mul(b.div(g, b.add(b.sqrt(sum2), b.scalarLike(o_.epsilon, sum2))), lr_)));
  }
  AdagradOptions o_;
};

}  // namespace

OptimizerPtr sgd(SgdOptions options) { return std::make_shared<Sgd>(options); }
OptimizerPtr adam(AdamOptions options) { return std::make_shared<Adam>(options); }
OptimizerPtr rmsprop(RmsPropOptions options) { return std::make_shared<RmsProp>(options); }
OptimizerPtr adagrad(AdagradOptions options) { return std::make_shared<Adagrad>(options); }

std::vector<Value*> clipByGlobalNorm(GraphContext& ctx, const std::vector<Value*>& grads, double maxNorm) {
  Builder& b = ctx.b();
  Value* total = nullptr;
  for (Value* g : grads) {
    Value* s = b.op("reduce_sum", {b.square(g)});
    total = total ? b.add(total, s) : s;
  }
  if (!total) return grads;
  Value* norm = b.sqrt(total);
  Value* scale = b.op("min", {b.div(b.scalarLike(maxNorm, norm), b.add(norm, b.scalarLike(1e-6, norm))),
                              b.scalarLike(1.0, norm)});
  std::vector<Value*> out;
  for (Value* g : grads) out.push_back(b.mul(g, scale));
  return out;
}

Schedule stepSchedule(double lr, int64_t every, double gamma) {
  return [=](int64_t step) { return lr * std::pow(gamma, static_cast<double>((step - 1) / std::max<int64_t>(every, 1))); };
}

Schedule cosineSchedule(double lr, int64_t total, double minLr) {
  return [=](int64_t step) {
    if (step >= total) return minLr;
    double t = static_cast<double>(step - 1) / static_cast<double>(std::max<int64_t>(total - 1, 1));
    return minLr + 0.5 * (lr - minLr) * (1.0 + std::cos(3.14159265358979323846 * t));
  };
}

}  // namespace smelt::nn
