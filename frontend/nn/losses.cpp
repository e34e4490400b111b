// See losses.h. The class index picks its log-probability through a one-hot mask (eq against the
// class numbers), which fuses with the reduction and differentiates like any elementwise product.
#include "frontend/nn/losses.h"

#include <numeric>

namespace smelt::nn {

Value* nllLoss(GraphContext& ctx, Value* logProbs, Value* labels) {
  Builder& b = ctx.b();
  if (!logProbs || !labels) return nullptr;
  const Shape& s = logProbs->shape();
  if (s.size() != 2 || labels->shape() != Shape{s[0]} || !isInteger(labels->dtype())) {
    return b.fail(makeError("nll loss: expects log-probabilities [N, C] and integer labels [N], got {} and {}",
                            logProbs->type().toString(), labels->type().toString()));
  }
  // A label outside [0, C) would match no class and add nothing: a loss of -0, silently.
  labels = ctx.requireRange(labels, 0, s[1], fmt::format("labels of an nll/cross-entropy loss over {} classes", s[1]));
  std::vector<int64_t> classes(static_cast<size_t>(s[1]));
  std::iota(classes.begin(), classes.end(), 0);
  Value* numbers = ctx.graph().constant(Tensor::of<int64_t>({s[1]}, classes));
  Value* column = b.reshape(b.cast(labels, DType::i64), {s[0], 1});
  Value* onehot = b.cast(b.op("eq", {column, numbers}), logProbs->dtype());
  Value* total = b.op("reduce_sum", {b.mul(onehot, logProbs)});
  return b.scale(total, -1.0 / static_cast<double>(std::max<int64_t>(s[0], 1)));
}

Value* crossEntropy(GraphContext& ctx, Value* logits, Value* labels) {
  return nllLoss(ctx, ctx.b().op("log_softmax", {logits}, {{"axis", int64_t{1}}}), labels);
}

Value* mseLoss(GraphContext& ctx, Value* prediction, Value* target) {
  Builder& b = ctx.b();
  if (!prediction || !target) return nullptr;
  // Broadcasting [4,1] against [4] would compare every prediction with every target: a 4x4 mean.
  if (prediction->shape() != target->shape()) {
    return b.fail(makeError("mse loss: prediction {} and target {} must have the same shape", prediction->type().toString(),
                            target->type().toString()));
  }
  return b.op("reduce_mean", {b.square(b.sub(prediction, target))});
}

}  // namespace smelt::nn
