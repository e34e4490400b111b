// Multi-head attention and the transformer encoder layer (attention.h), as torch.nn computes them.
#include "frontend/nn/attention.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace smelt::nn {

namespace {

// Rows [part * e, (part + 1) * e) of a stacked projection (axis 0).
Value* rowsOf(Builder& b, Value* stacked, int64_t part, int64_t e) {
  return b.op("slice", {stacked},
              {{"starts", std::vector<int64_t>{part * e}},
               {"ends", std::vector<int64_t>{(part + 1) * e}},
               {"axes", std::vector<int64_t>{0}}});
}

Value* dropoutIn(GraphContext& ctx, Value* x, double ratio) {
  if (!ctx.training() || ratio == 0 || !x) return x;
  std::vector<Value*> r = ctx.b().ops("dropout", {x, ctx.stepInput()}, {{"ratio", ratio}, {"seed", ctx.nextSeed()}});
  return r.empty() ? nullptr : r[0];
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed, int64_t heads, AttentionOptions options)
    : embed_(embed), heads_(heads), o_(options) {}

Value* MultiheadAttention::forward(GraphContext& ctx, Value* x) { return attend(ctx, x, x, x); }

std::string MultiheadAttention::describe() const {
  return fmt::format("MultiheadAttention({}, {} heads)", embed_, heads_);
}

Value* MultiheadAttention::attend(GraphContext& ctx, Value* query, Value* key, Value* value, Value* attnMask,
                                  Value* keyPaddingMask) {
  Builder& b = ctx.b();
  if (!query || !key || !value) return nullptr;
  int64_t e = embed_;
  if (heads_ <= 0 || e % heads_ != 0) {
    return b.fail(makeError("MultiheadAttention: embedding size {} is not divisible by {} heads", e, heads_));
  }
  for (Value* v : {query, key, value}) {
    if (v->type().rank() != 3 || v->shape()[2] != e) {
      return b.fail(makeError("MultiheadAttention: inputs must be {} with {} features, got {}",
                              o_.batchFirst ? "[batch, seq, embed]" : "[seq, batch, embed]", e, v->type().toString()));
    }
  }
  Value* w = ctx.parameter("in_proj_weight", {3 * e, e}, xavierUniform(e, 3 * e));
  Value* bias = o_.bias ? ctx.parameter("in_proj_bias", {3 * e}, zeros()) : nullptr;
  Value* outW = ctx.scoped("out_proj", [&] {
    return ctx.parameter("weight", {e, e}, uniform(1.0 / std::sqrt(static_cast<double>(e))));
  });
  Value* outB = o_.bias ? ctx.scoped("out_proj", [&] { return ctx.parameter("bias", {e}, zeros()); }) : nullptr;
  // Work in [N, seq, E].
  if (!o_.batchFirst) {
    query = b.transpose(query, {1, 0, 2});
    key = b.transpose(key, {1, 0, 2});
    value = b.transpose(value, {1, 0, 2});
  }
  int64_t d = e / heads_;
  // [N, seq, E] projected by rows `part` of the stacked weight, split into heads: [N, heads, seq, d].
  auto project = [&](Value* x, int64_t part) {
    Value* y = b.op("matmul", {x, b.transpose(rowsOf(b, w, part, e), {1, 0})});
    if (bias) y = b.add(y, rowsOf(b, bias, part, e));
    if (!y) return y;
    Value* heads = b.reshape(y, {y->shape()[0], y->shape()[1], heads_, d});
    return b.transpose(heads, {0, 2, 1, 3});
  };
  Value* q = project(query, 0);
  Value* k = project(key, 1);
  Value* v = project(value, 2);
  if (!b.ok()) return nullptr;
  Value* scores = b.scale(b.op("matmul", {q, b.transpose(k, {0, 1, 3, 2})}), 1.0 / std::sqrt(static_cast<double>(d)));
  double inf = std::numeric_limits<double>::infinity();
  if (attnMask) {
    if (attnMask->dtype() == DType::boolean) {
      scores = b.where(attnMask, b.scalarLike(-inf, scores), scores);
    } else {
      scores = b.add(scores, attnMask);
    }
  }
  if (keyPaddingMask) {
    Value* padded = b.op("unsqueeze", {keyPaddingMask}, {{"axes", std::vector<int64_t>{1, 2}}});  // [N, 1, 1, S]
    scores = b.where(padded, b.scalarLike(-inf, scores), scores);
  }
  Value* weights = dropoutIn(ctx, b.op("softmax", {scores}, {{"axis", int64_t{-1}}}), o_.dropout);
  Value* heads = b.op("matmul", {weights, v});  // [N, heads, L, d]
  if (!heads) return nullptr;
  Value* merged = b.reshape(b.transpose(heads, {0, 2, 1, 3}), {heads->shape()[0], heads->shape()[2], e});
  Value* out = b.op("matmul", {merged, b.transpose(outW, {1, 0})});
  if (outB) out = b.add(out, outB);
  return o_.batchFirst || !out ? out : b.transpose(out, {1, 0, 2});
}

std::shared_ptr<MultiheadAttention> multiheadAttention(int64_t embed, int64_t heads, AttentionOptions options) {
  return std::make_shared<MultiheadAttention>(embed, heads, options);
}

Value* causalMask(Builder& b, int64_t length) {
  Tensor mask(TensorType{DType::boolean, {length, length}});
  for (int64_t i = 0; i < length; ++i) {
    for (int64_t j = 0; j < length; ++j) mask.setInt(i * length + j, j > i ? 1 : 0);
  }
  return b.op("constant", {}, {{"value", std::move(mask)}});
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t embed, int64_t heads, TransformerEncoderOptions options)
    : embed_(embed), heads_(heads), o_(std::move(options)) {}

std::string TransformerEncoderLayer::describe() const {
  return fmt::format("TransformerEncoderLayer({}, {} heads, feed-forward {})", embed_, heads_, o_.feedforward);
}

Value* TransformerEncoderLayer::encode(GraphContext& ctx, Value* x, Value* attnMask, Value* keyPaddingMask) {
  Builder& b = ctx.b();
  if (!x) return nullptr;
  if (o_.activation != "relu" && o_.activation != "gelu") {
    return b.fail(makeError("TransformerEncoderLayer: activation '{}' is not relu or gelu", o_.activation));
  }
  if (o_.causal && !attnMask && x->type().rank() == 3) {
    int64_t length = x->shape()[o_.batchFirst ? 1 : 0];
    if (isSymbolic(length)) return b.fail(makeError("TransformerEncoderLayer: a causal mask needs a static length"));
    attnMask = causalMask(b, length);
  }
  MultiheadAttention attention(embed_, heads_, {.bias = true, .batchFirst = o_.batchFirst, .dropout = o_.dropout});
  ModulePtr linear1 = linear(embed_, o_.feedforward), linear2 = linear(o_.feedforward, embed_);
  ModulePtr norm1 = layerNorm(embed_, o_.layerNormEpsilon), norm2 = layerNorm(embed_, o_.layerNormEpsilon);
  auto selfAttention = [&](Value* h) {
    Value* a = ctx.scoped("self_attn", [&] { return attention.attend(ctx, h, h, h, attnMask, keyPaddingMask); });
    return dropoutIn(ctx, a, o_.dropout);
  };
  auto feedForward = [&](Value* h) {
    Value* hidden = ctx.scoped("linear1", [&] { return linear1->forward(ctx, h); });
    hidden = dropoutIn(ctx, b.op(o_.activation, {hidden}), o_.dropout);
    return dropoutIn(ctx, ctx.scoped("linear2", [&] { return linear2->forward(ctx, hidden); }), o_.dropout);
  };
  auto norm = [&](const char* name, const ModulePtr& layer, Value* h) {
    return ctx.scoped(name, [&] { return layer->forward(ctx, h); });
  };
  if (o_.normFirst) {
    x = b.add(x, selfAttention(norm("norm1", norm1, x)));
    return b.add(x, feedForward(norm("norm2", norm2, x)));
  }
  x = norm("norm1", norm1, b.add(x, selfAttention(x)));
  return norm("norm2", norm2, b.add(x, feedForward(x)));
}

std::shared_ptr<TransformerEncoderLayer> transformerEncoderLayer(int64_t embed, int64_t heads,
                                                                 TransformerEncoderOptions options) {
  return std::make_shared<TransformerEncoderLayer>(embed, heads, std::move(options));
}

}  // namespace smelt::nn
