// Dynamic loss scaling for f16 training (TrainStepOptions::precision = f16), done entirely in the step's graph,
// as PyTorch's GradScaler does it but without its host synchronization: the loss is multiplied by a scale kept
// in the model's state ("loss_scale"), the gradients divided by it, and when any gradient is not finite the
// update is skipped on the device (every state entry keeps its value: TrainStep wraps each update in a
// `where`), the scale halves and the count of good steps restarts; after 2000 good steps in a row it doubles.
// GradScaler's defaults: an initial scale of 65536, growth x2 every 2000 steps, backoff x0.5.
//   LossScale s = startLossScaling(ctx, loss);
//   grads = unscale(ctx, tape.gradient(s.scaledLoss, params), s);
//   Value* overflow = foundNonFinite(ctx, grads);   // bool[]: skip this update
//   updates += updateLossScale(ctx, s, overflow);
#pragma once

#include "frontend/nn/graph_context.h"

#include <string>
#include <utility>
#include <vector>

namespace smelt::nn {

inline constexpr double kInitialLossScale = 65536.0;
inline constexpr double kLossScaleGrowthInterval = 2000.0;
/// The state entries the scaling keeps (f32 scalars).
inline constexpr const char* kLossScaleState = "loss_scale";
inline constexpr const char* kLossScaleGoodSteps = "loss_scale.good_steps";

struct LossScale {
  Value* scale = nullptr;      // the state's current scale
  Value* goodSteps = nullptr;  // steps since the last overflow or growth
  Value* scaledLoss = nullptr;
};

/// Declares the scale's state and multiplies `loss` by it.
LossScale startLossScaling(GraphContext& ctx, Value* loss);
/// The gradients of the scaled loss divided by the scale (in f32).
std::vector<Value*> unscale(GraphContext& ctx, const std::vector<Value*>& grads, const LossScale& scaling);
/// bool[]: true when any element of any gradient is infinite or NaN.
Value* foundNonFinite(GraphContext& ctx, const std::vector<Value*>& grads);
/// The new values of the scale's state after a step that overflowed or not.
std::vector<std::pair<std::string, Value*>> updateLossScale(GraphContext& ctx, const LossScale& scaling,
                                                            Value* overflow);

}  // namespace smelt::nn
