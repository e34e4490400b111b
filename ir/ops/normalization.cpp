// Normalization ops: batch_norm (inference), batch_norm_train (batch statistics and running-stat
// updates, ONNX convention) and layer_norm.
//   %y, %mean, %var = batch_norm_train(%x, %scale, %bias, %rm, %rv) : f32[2,3,4], f32[3], f32[3]
#include <cmath>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

namespace smelt {

namespace {
using namespace ops;

/// Fails unless the float attribute `attr` is finite and, when `nonNegative`, >= 0.
Status expectFiniteFloat(const OpCall& call, std::string_view attr, bool nonNegative) {
  double v = call.getFloat(attr);
  if (std::isfinite(v) && (!nonNegative || v >= 0)) return Status::success();
  return call.error("attribute '{}' must be a {}finite number, got {}", attr, nonNegative ? "non-negative " : "", v);
}

/// Checks x[N,C,...] and the four per-channel operands [C] of both batch norms and epsilon/momentum.
Status checkBatchNorm(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  const TensorType& x = call.operand(0);
  if (x.rank() < 2) return call.error("input must have rank >= 2 ([N, C, ...]), got {}", x.toString());
  for (size_t i = 1; i < call.numOperands(); ++i) {
    SMELT_CHECK_OK(expectSameDType(call, 0, i));
    if (call.operand(i).shape != Shape{x.shape[1]}) {
      return call.error("{} must be [{}] (one value per channel of the input), got {}", operandName(call, i),
                        extentToString(x.shape[1]), call.operand(i).toString());
    }
  }
  SMELT_CHECK_OK(expectFiniteFloat(call, "epsilon", true));
  if (call.op().findAttr("momentum")) SMELT_CHECK_OK(expectFiniteFloat(call, "momentum", false));
  return Status::success();
}

/// The layout of x[N, C, rest...] as planes: value (n, c, i) is at (n * C + c) * inner + i.
struct ChannelLayout {
  int64_t batch, channels, inner;
};

ChannelLayout channelLayout(const Shape& shape) {
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  return {shape[0], shape[1], inner};
}

/// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], in double.
std::vector<double> normalizeChannels(const std::vector<double>& x, const ChannelLayout& l,
                                      const std::vector<double>& scale, const std::vector<double>& bias,
                                      const std::vector<double>& mean, const std::vector<double>& var, double epsilon) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < l.batch; ++n) {
    for (int64_t c = 0; c < l.channels; ++c) {
      double inv = 1.0 / std::sqrt(var[c] + epsilon);
      size_t base = static_cast<size_t>((n * l.channels + c) * l.inner);
      for (int64_t i = 0; i < l.inner; ++i) y[base + i] = (x[base + i] - mean[c]) * inv * scale[c] + bias[c];
    }
  }
  return y;
}

Expected<std::vector<Tensor>> referenceBatchNorm(const OpCall& call, std::span<const Tensor> in) {
  ChannelLayout l = channelLayout(in[0].shape());
  std::vector<double> y = normalizeChannels(in[0].toDoubles(), l, in[1].toDoubles(), in[2].toDoubles(),
                                            in[3].toDoubles(), in[4].toDoubles(), call.getFloat("epsilon"));
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

Expected<std::vector<TensorType>> inferBatchNormTrain(const OpCall& call) {
  SMELT_CHECK_OK(checkBatchNorm(call));
  const TensorType& x = call.operand(0);
  // Each extent compared, not multiplied: a symbolic one (the batch) is no count to multiply.
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (d != 1 && x.shape[d] == 0) {
      return call.error("input {} has no elements per channel to take batch statistics of", x.toString());
    }
  }
  TensorType stat{x.dtype, {x.shape[1]}};
  return std::vector<TensorType>{x, stat, stat};
}

Expected<std::vector<Tensor>> referenceBatchNormTrain(const OpCall& call, std::span<const Tensor> in) {
  ChannelLayout l = channelLayout(in[0].shape());
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> runningMean = in[3].toDoubles();
  std::vector<double> runningVar = in[4].toDoubles();
  double momentum = call.getFloat("momentum");
  // Batch statistics over every dim but 1; the variance is the biased one (divide by the count), which
  // both normalizes y and feeds the running variance, as ONNX's training_mode reference does.
  double count = static_cast<double>(l.batch * l.inner);
  std::vector<double> mean(static_cast<size_t>(l.channels), 0.0), var(static_cast<size_t>(l.channels), 0.0);
  for (int64_t c = 0; c < l.channels; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < l.batch; ++n)
      for (int64_t i = 0; i < l.inner; ++i) sum += x[static_cast<size_t>((n * l.channels + c) * l.inner + i)];
    mean[c] = sum / count;
    double squares = 0.0;
    for (int64_t n = 0; n < l.batch; ++n) {
      for (int64_t i = 0; i < l.inner; ++i) {
        double d = x[static_cast<size_t>((n * l.channels + c) * l.inner + i)] - mean[c];
        squares += d * d;
      }
    }
    var[c] = squares / count;
  }
  std::vector<double> y =
      normalizeChannels(x, l, in[1].toDoubles(), in[2].toDoubles(), mean, var, call.getFloat("epsilon"));
  std::vector<double> newMean(mean.size()), newVar(var.size());
  for (size_t c = 0; c < mean.size(); ++c) {
    newMean[c] = runningMean[c] * momentum + mean[c] * (1.0 - momentum);
    newVar[c] = runningVar[c] * momentum + var[c] * (1.0 - momentum);
  }
  auto results = call.results();
  return std::vector<Tensor>{Tensor::fromDoubles(results[0], y), Tensor::fromDoubles(results[1], newMean),
                             Tensor::fromDoubles(results[2], newVar)};
}

Expected<std::vector<TensorType>> inferLayerNorm(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  const TensorType& x = call.operand(0);
  auto axis = normalizeAxis(call.getInt("axis"), x.rank());
  if (!axis) return call.error("{}", axis.error().message());
  SMELT_CHECK_OK(expectFiniteFloat(call, "epsilon", true));
  Shape tail(x.shape.begin() + *axis, x.shape.end());
  for (size_t i = 1; i < call.numOperands(); ++i) {
    SMELT_CHECK_OK(expectSameDType(call, 0, i));
    const Shape& s = call.operand(i).shape;
    auto b = broadcastShapes(s, tail);
    if (s.size() > tail.size() || !b || *b != tail) {
      return call.error("{} must broadcast to {} (the normalized dims of the input), got {}", operandName(call, i),
                        shapeToString(tail), call.operand(i).toString());
    }
  }
  return single(x);
}

Expected<std::vector<Tensor>> referenceLayerNorm(const OpCall& call, std::span<const Tensor> in) {
  const Shape& shape = in[0].shape();
  auto axis = normalizeAxis(call.getInt("axis"), in[0].rank());
  if (!axis) return call.error("{}", axis.error().message());
  Shape tail(shape.begin() + *axis, shape.end());
  int64_t inner = numElements(tail);
  int64_t outer = inner == 0 ? 0 : in[0].numel() / inner;
  double epsilon = call.getFloat("epsilon");
  std::vector<double> x = in[0].toDoubles();
  // Scale and bias broadcast over the normalized dims: expand them once to `inner` values each.
  auto expand = [&](size_t index, double fallback) {
    std::vector<double> v(static_cast<size_t>(inner), fallback);
    if (index >= in.size()) return v;
    std::vector<double> raw = in[index].toDoubles();
    std::vector<int64_t> map = broadcastIndexMap(in[index].shape(), tail);
    for (int64_t i = 0; i < inner; ++i) v[i] = raw[static_cast<size_t>(map[i])];
    return v;
  };
  std::vector<double> scale = expand(1, 1.0), bias = expand(2, 0.0);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    const double* row = &x[static_cast<size_t>(o * inner)];
    double sum = 0.0;
    for (int64_t i = 0; i < inner; ++i) sum += row[i];
    double mean = sum / static_cast<double>(inner);
    double squares = 0.0;
    for (int64_t i = 0; i < inner; ++i) squares += (row[i] - mean) * (row[i] - mean);
    double inv = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
    for (int64_t i = 0; i < inner; ++i)
      y[static_cast<size_t>(o * inner + i)] = (row[i] - mean) * inv * scale[i] + bias[i];
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], y)};
}

// ---- Decompositions ------------------------------------------------------------------------------
// All three normalizations are differentiated through their decompositions into reduce_mean, sub, mul,
// rsqrt and add, so gradients of gradients come from those ops' rules. Each decomposition computes
// what the reference computes, in the same order.

/// Attributes of a node, read as a rule reads them.
double floatAttr(const Node& node, std::string_view name) { return std::get<double>(node.attrs().find(name)->second); }

/// A per-channel [C] value as [C, 1, ..., 1], to broadcast along dim 1 of a rank-`rank` input.
Value* perChannel(Builder& b, Value* v, size_t rank) {
  Shape shape(rank - 1, 1);
  shape[0] = v->shape()[0];
  return b.reshape(v, shape);
}

/// (x - mean) * rsqrt(var + epsilon) * scale + bias, with per-channel operands already broadcastable.
Value* normalize(Builder& b, Value* centered, Value* var, double epsilon, Value* scale, Value* bias) {
  Value* y = b.mul(centered, b.rsqrt(b.add(var, b.scalarLike(epsilon, var))));
  if (scale) y = b.mul(y, scale);
  if (bias) y = b.add(y, bias);
  return y;
}

std::vector<Value*> decomposeBatchNorm(Builder& b, const Node& node) {
  Value* x = node.operand(0);
  size_t rank = x->shape().size();
  auto channel = [&](size_t i) { return perChannel(b, node.operand(i), rank); };
  Value* centered = b.sub(x, channel(3));
  // Built one by one: a call's arguments are evaluated in an unspecified order (GCC right to left,
  // clang left to right), and the decomposition's printed IR must not depend on the compiler.
  Value* bias = channel(2);
  Value* scale = channel(1);
  Value* var = channel(4);
  return {normalize(b, centered, var, floatAttr(node, "epsilon"), scale, bias)};
}

// The running-stat results are differentiated too (they are linear in the running stats and the batch
// statistics), so every result's gradient is its true derivative.
std::vector<Value*> decomposeBatchNormTrain(Builder& b, const Node& node) {
  Value* x = node.operand(0);
  size_t rank = x->shape().size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < rank; ++d) {
    if (d != 1) axes.push_back(static_cast<int64_t>(d));
  }
  AttrMap reduce = {{"axes", axes}, {"keepdims", int64_t{1}}};
  Value* mean = b.op("reduce_mean", {x}, reduce);  // [1, C, 1, ...]
  Value* centered = b.sub(x, mean);
  Value* var = b.op("reduce_mean", {b.square(centered)}, reduce);  // biased
  Value* bias = perChannel(b, node.operand(2), rank);  // before the scale, as above
  Value* scale = perChannel(b, node.operand(1), rank);
  Value* y = normalize(b, centered, var, floatAttr(node, "epsilon"), scale, bias);
  double momentum = floatAttr(node, "momentum");
  Shape stat = node.operand(1)->shape();
  auto running = [&](Value* old, Value* batch) {
    // One statement per node: arguments evaluate in an unspecified order, and the graph must not
    // depend on the compiler.
    Value* added = b.scale(b.reshape(batch, stat), 1.0 - momentum);
    Value* kept = b.scale(old, momentum);
    return b.add(kept, added);
  };
  return {y, running(node.operand(3), mean), running(node.operand(4), var)};
}

std::vector<Value*> decomposeLayerNorm(Builder& b, const Node& node) {
  Value* x = node.operand(0);
  int64_t rank = static_cast<int64_t>(x->shape().size());
  int64_t axis = std::get<int64_t>(node.attrs().find("axis")->second);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  AttrMap reduce = {{"axes", axes}, {"keepdims", int64_t{1}}};
  Value* centered = b.sub(x, b.op("reduce_mean", {x}, reduce));
  // The variance reads x itself, not the centered values, so mean and variance are two reductions of
  // one sweep over x (a fused kernel computes both at once) rather than one after the other.
  AttrMap biased = reduce;
  biased["correction"] = int64_t{0};
  Value* var = b.op("reduce_variance", {x}, biased);
  Value* scale = node.numOperands() > 1 ? node.operand(1) : nullptr;
  Value* bias = node.numOperands() > 2 ? node.operand(2) : nullptr;
  return {normalize(b, centered, var, floatAttr(node, "epsilon"), scale, bias)};
}

}  // namespace

void registerNormalizationOps(OpRegistry& registry) {
  // Fusion kind Reduction for all three: the training form and layer_norm reduce; the inference form
  // only broadcasts [C] along dim 1, which is not numpy's trailing broadcast an elementwise fuser expects.
  registry.add(OpDef{
      .name = "batch_norm",
      .summary = "Batch normalization, inference form: (x - mean) / sqrt(var + epsilon) * scale + bias per channel.",
      .operands = {{"input"}, {"scale"}, {"bias"}, {"mean"}, {"var"}},
      .attrs = {{"epsilon", AttrKind::Float, 1e-5}},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        SMELT_CHECK_OK(checkBatchNorm(call));
        return single(call.operand(0));
      },
      .symbolicDims = true,
      .reference = referenceBatchNorm,
      .example = R"(graph @t(%x: $T[2,3,4,5], %s: $T[3], %b: $T[3], %m: $T[3], %v: $T[3]) {
  %a = mul(%v, %v) : $T[3]
  %0 = batch_norm(%x, %s, %b, %m, %a) {epsilon = 0.001} : $T[2,3,4,5]
  return r = %0
})",
      .decompose = decomposeBatchNorm,
      // 4 per element: subtract mean, multiply by rsqrt(var) * scale, add bias (+ per-channel prep).
      .flops = [](const OpCall& c) { return 4 * c.operand(0).numel(); },
  });

  registry.add(OpDef{
      .name = "batch_norm_train",
      .summary = "Batch normalization with batch statistics; also returns the updated running mean and var "
                 "(running * momentum + batch * (1 - momentum)).",
      .operands = {{"input"}, {"scale"}, {"bias"}, {"running_mean"}, {"running_var"}},
      .attrs = {{"epsilon", AttrKind::Float, 1e-5}, {"momentum", AttrKind::Float, 0.9}},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = inferBatchNormTrain,
      .symbolicDims = true,
      .reference = referenceBatchNormTrain,
      .example = R"(graph @t(%x: $T[4,3,5], %s: $T[3], %b: $T[3], %m: $T[3], %v: $T[3]) {
  %a = mul(%v, %v) : $T[3]
  %y, %nm, %nv = batch_norm_train(%x, %s, %b, %m, %a) {momentum = 0.8} : $T[4,3,5], $T[3], $T[3]
  return y = %y, mean = %nm, var = %nv
})",
      .decompose = decomposeBatchNormTrain,
      // 8 per element: mean and variance sums (3), then normalize, scale and shift (4), running stats.
      .flops = [](const OpCall& c) { return 8 * c.operand(0).numel(); },
  });

  registry.add(OpDef{
      .name = "layer_norm",
      .summary = "Normalizes over dims [axis, rank) (biased variance), then scale and bias broadcast to those dims.",
      .operands = {{"input"}, {"scale", Arity::Optional}, {"bias", Arity::Optional}},
      .attrs = {{"axis", AttrKind::Int, int64_t{-1}}, {"epsilon", AttrKind::Float, 1e-5}},
      .fusion = FusionKind::Reduction,
      .dtypes = dtypes::kFloat,
      .infer = inferLayerNorm,
      .symbolicDims = true,
      .reference = referenceLayerNorm,
      .example = R"(graph @t(%x: $T[2,3,4], %s: $T[3,4], %b: $T[4]) {
  %0 = layer_norm(%x, %s, %b) {axis = -2} : $T[2,3,4]
  %1 = layer_norm(%x) : $T[2,3,4]
  return r = %0, p = %1
})",
      .decompose = decomposeLayerNorm,
      // 8 per element: mean and variance sums (3), then normalize, scale and shift (5).
      .flops = [](const OpCall& c) { return 8 * c.operand(0).numel(); },
  });
}

}  // namespace smelt
