// Batches of a dataset for training and evaluation: the rows (dim 0) of inputs and targets, in a fresh
// shuffled order each epoch when asked, the last partial batch kept (a TrainStep or Predictor compiles
// once for its size) unless dropped.
//   SMELT_TRY(nn::Batches batches, nn::Batches::make(images, labels, {.batch = 32, .seed = 1}));
//   Tensor x, y;
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (batches.startEpoch(); batches.next(x, y);) SMELT_TRY(double loss, step->run(x, y));
//   }
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ir/support/expected.h"
#include "ir/tensor.h"

namespace smelt::nn {

struct BatchOptions {
  int64_t batch = 32;
  /// A new random order every epoch (from `seed`); in order otherwise (evaluation).
  bool shuffle = true;
  uint64_t seed = 0;
  /// Leave out the last batch when it is smaller than `batch`.
  bool dropLast = false;
};

class Batches {
 public:
  /// `inputs` and `targets` must hold the same number of rows (their first dimension); a batch size
  /// below 1 or tensors without rows are errors. The tensors are shared, not copied.
  static Expected<Batches> make(Tensor inputs, Tensor targets, const BatchOptions& options = {});

  /// The number of examples (rows).
  int64_t examples() const { return rows_; }
  /// Batches in one epoch, the partial last one included (unless dropLast).
  int64_t batchesPerEpoch() const;
  /// Starts an epoch: reshuffles (shuffle) and rewinds.
  void startEpoch();
  /// The next batch into `x` and `y` (retyped only when the batch size changes: the last, smaller
  /// batch); false when the epoch is over.
  bool next(Tensor& x, Tensor& y);
  /// Batches taken in this epoch.
  int64_t taken() const { return taken_; }

 private:
  Batches() = default;
  Tensor inputs_, targets_;
  BatchOptions options_;
  int64_t rows_ = 0;
  int64_t taken_ = 0;
  std::vector<int64_t> order_;
  std::mt19937_64 rng_;
};

}  // namespace smelt::nn
