// A training loop over batches: every epoch, each batch (the last partial one too) through a compiled
// TrainStep, with a callback after each step (progress, metrics) and one after each epoch (evaluation,
// checkpoints; an error stops the loop). In a data-parallel job each rank trains on its share of every
// batch, as nn::shardOf gives it.
//   SMELT_TRY(nn::Batches batches, nn::Batches::make(images, labels, {.batch = 64, .seed = 1}));
//   nn::ProgressBar bar(10, batches.batchesPerEpoch(), "images");
//   SMELT_TRY(auto epochs, nn::fit(*step, batches, {.epochs = 10, .onStep = [&](const nn::StepProgress& p) {
//     bar.step(p.epoch, p.step, p.meanLoss, -1, p.examplesPerSecond);
//   }}));
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "frontend/nn/batches.h"
#include "frontend/nn/train_step.h"

namespace smelt::nn {

/// What the step callback sees after each step.
struct StepProgress {
  int64_t epoch = 0;          // 1-based
  int64_t step = 0;           // 1-based, within the epoch
  int64_t stepsPerEpoch = 0;  // the partial last batch included
  double loss = 0;            // this step's
  double meanLoss = 0;        // the epoch's so far (a mean over steps, as PyTorch examples print)
  int64_t examples = 0;       // this rank's examples so far in the epoch
  double examplesPerSecond = 0;
  /// This rank's batch and the model's output for it (the logits of a classifier).
  const Tensor* inputs = nullptr;
  const Tensor* targets = nullptr;
  const Tensor* outputs = nullptr;
};

/// What one epoch did.
struct EpochSummary {
  int64_t epoch = 0;  // 1-based
  double meanLoss = 0;
  int64_t examples = 0;
  double seconds = 0;
};

struct FitOptions {
  int64_t epochs = 1;
  /// After every step; null: none.
  std::function<void(const StepProgress&)> onStep;
  /// After every epoch; an error ends the loop and is fit's result. Null: none.
  std::function<Status(const EpochSummary&)> onEpoch;
  /// This process's rank among `ranks` (a data-parallel TrainStep): each trains on its share of every batch.
  int rank = 0;
  int ranks = 1;
};

/// Trains `step` for `options.epochs` epochs over `batches` (reshuffled each epoch when they shuffle) and
/// returns each epoch's summary. A failing step, a batch too small to give every rank a row, or an error from
/// onEpoch ends the loop with that error, naming the epoch and step.
Expected<std::vector<EpochSummary>> fit(TrainStep& step, Batches& batches, const FitOptions& options = {});

}  // namespace smelt::nn
