// Attention layers with torch.nn's computation, parameter names and defaults: multi-head attention (with an
// attention mask and a key padding mask) and the transformer encoder layer built on it.
//   auto attn = nn::multiheadAttention(64, 8, {.batchFirst = true});
//   Value* y = attn->attend(ctx, q, k, v, /*attnMask=*/causal, /*keyPaddingMask=*/padding);
#pragma once

#include "frontend/nn/layers.h"

namespace smelt::nn {

struct AttentionOptions {
  bool bias = true;
  /// [batch, seq, embed] inputs (PyTorch's batch_first); false: [seq, batch, embed], PyTorch's default.
  bool batchFirst = false;
  /// Dropout on the attention weights, in training graphs.
  double dropout = 0;
};

/// torch.nn.MultiheadAttention with equal query, key and value sizes: in_proj_weight [3E, E], in_proj_bias [3E],
/// out_proj.weight [E, E], out_proj.bias [E] (xavier-uniform projections, zero biases, as PyTorch initializes).
class MultiheadAttention final : public Module {
 public:
  MultiheadAttention(int64_t embed, int64_t heads, AttentionOptions options);
  /// Self-attention: attend(ctx, x, x, x).
  Value* forward(GraphContext& ctx, Value* x) override;
  /// softmax(q k^T / sqrt(head size) + masks) v per head, projected. `attnMask` [L, S]: bool (true: not attended)
  /// or float (added to the scores); `keyPaddingMask` [N, S] bool (true: a padding key, not attended). Either may
  /// be null. A row with every key masked gives NaN, as in PyTorch.
  Value* attend(GraphContext& ctx, Value* query, Value* key, Value* value, Value* attnMask = nullptr,
                Value* keyPaddingMask = nullptr);
  std::string describe() const override;

 private:
  int64_t embed_, heads_;
  AttentionOptions o_;
};
std::shared_ptr<MultiheadAttention> multiheadAttention(int64_t embed, int64_t heads, AttentionOptions options = {});

/// An [L, L] bool mask hiding later positions (true above the diagonal), for causal self-attention.
Value* causalMask(Builder& b, int64_t length);

struct TransformerEncoderOptions {
  int64_t feedforward = 2048;
  double dropout = 0.1;
  /// "relu" or "gelu".
  std::string activation = "relu";
  double layerNormEpsilon = 1e-5;
  bool batchFirst = false;
  /// Layer norm before attention and feed-forward (pre-norm) rather than after the residual sums.
  bool normFirst = false;
  /// Self-attention sees only earlier positions (a causal mask).
  bool causal = false;
};

/// torch.nn.TransformerEncoderLayer: self_attn, linear1, linear2, norm1, norm2 under PyTorch's names.
class TransformerEncoderLayer final : public Module {
 public:
  TransformerEncoderLayer(int64_t embed, int64_t heads, TransformerEncoderOptions options);
  Value* forward(GraphContext& ctx, Value* x) override { return encode(ctx, x); }
  /// The layer with PyTorch's src_mask (`attnMask`) and src_key_padding_mask (`keyPaddingMask`).
  Value* encode(GraphContext& ctx, Value* x, Value* attnMask = nullptr, Value* keyPaddingMask = nullptr);
  std::string describe() const override;

 private:
  int64_t embed_, heads_;
  TransformerEncoderOptions o_;
};
std::shared_ptr<TransformerEncoderLayer> transformerEncoderLayer(int64_t embed, int64_t heads,
                                                                 TransformerEncoderOptions options = {});

}  // namespace smelt::nn
