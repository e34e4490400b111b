// Losses, each the mean over the batch, as PyTorch's default reduction.
//   Value* loss = nn::crossEntropy(ctx, logits, labels);   // logits [N, C], labels [N] integers
#pragma once

#include "frontend/nn/graph_context.h"

namespace smelt::nn {

/// Cross-entropy of raw scores `logits` [N, C] against class indices `labels` [N] (any integer dtype).
Value* crossEntropy(GraphContext& ctx, Value* logits, Value* labels);
/// Negative log-likelihood of log-probabilities [N, C] against class indices [N].
Value* nllLoss(GraphContext& ctx, Value* logProbs, Value* labels);
/// Mean squared error over every element; prediction and target have one shape (a mismatch is an
/// error naming both, where PyTorch would broadcast [4,1] against [4] into 16 pairs and warn).
Value* mseLoss(GraphContext& ctx, Value* prediction, Value* target);

}  // namespace smelt::nn
