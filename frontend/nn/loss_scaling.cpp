#include "frontend/nn/loss_scaling.h"

#include "frontend/nn/init.h"

#include <limits>

namespace smelt::nn {

LossScale startLossScaling(GraphContext& ctx, Value* loss) {
  LossScale s;
  s.scale = ctx.parameter(kLossScaleState, {}, constantValue(kInitialLossScale), /*trainable=*/false);
  s.goodSteps = ctx.parameter(kLossScaleGoodSteps, {}, zeros(), /*trainable=*/false);
  s.scaledLoss = ctx.b().mul(loss, ctx.b().reshape(s.scale, loss->shape()));
  return s;
}

std::vector<Value*> unscale(GraphContext& ctx, const std::vector<Value*>& grads, const LossScale& scaling) {
  Builder& b = ctx.b();
  Value* inverse = b.div(b.scalarLike(1.0, scaling.scale), scaling.scale);
  std::vector<Value*> out;
  for (Value* g : grads) out.push_back(g ? b.mul(g, inverse) : nullptr);
  return out;
}

Value* foundNonFinite(GraphContext& ctx, const std::vector<Value*>& grads) {
  Builder& b = ctx.b();
  // |g| <= the largest float is false exactly for infinities and NaNs.
  Value* count = nullptr;
  for (Value* g : grads) {
    if (!g) continue;
    Value* largest = b.scalarLike(std::numeric_limits<float>::max(), g);
    Value* finite = b.op("le", {b.op("abs", {g}), largest});
    Value* bad = b.op("reduce_max", {b.where(finite, b.scalarLike(0.0, g), b.scalarLike(1.0, g))});
    count = count ? b.add(count, bad) : bad;
  }
  return b.op("gt", {count, b.scalarLike(0.0, count)});
}

std::vector<std::pair<std::string, Value*>> updateLossScale(GraphContext& ctx, const LossScale& scaling,
                                                            Value* overflow) {
  Builder& b = ctx.b();
  Value* next = b.add(scaling.goodSteps, b.scalarLike(1.0, scaling.goodSteps));
  Value* grow = b.op("ge", {next, b.scalarLike(kLossScaleGrowthInterval, next)});
  Value* zero = b.scalarLike(0.0, next);
  Value* scale =
      b.where(overflow, b.scale(scaling.scale, 0.5), b.where(grow, b.scale(scaling.scale, 2.0), scaling.scale));
  Value* goodSteps = b.where(overflow, zero, b.where(grow, zero, next));
  return {{kLossScaleState, scale}, {kLossScaleGoodSteps, goodSteps}};
}

}  // namespace smelt::nn
