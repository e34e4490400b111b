// See batches.h.
#include "frontend/nn/batches.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace smelt::nn {

namespace {

/// Rows `order[begin, begin + out's rows)` of `from` into `out`.
void gatherRows(const Tensor& from, const std::vector<int64_t>& order, size_t begin, Tensor& out) {
  size_t rowBytes = from.byteSize() / static_cast<size_t>(from.shape()[0]);
  for (int64_t i = 0; i < out.shape()[0]; ++i) {
    std::memcpy(out.raw() + static_cast<size_t>(i) * rowBytes,
                from.raw() + static_cast<size_t>(order[begin + static_cast<size_t>(i)]) * rowBytes, rowBytes);
  }
}

/// `t`'s type with `rows` rows.
TensorType withRows(const Tensor& t, int64_t rows) {
  Shape shape = t.shape();
  shape[0] = rows;
  return TensorType{t.dtype(), shape};
}

}  // namespace

Expected<Batches> Batches::make(Tensor inputs, Tensor targets, const BatchOptions& options) {
  if (options.batch < 1) return makeError("batches: the batch size must be at least 1, got {}", options.batch);
  if (inputs.rank() == 0 || targets.rank() == 0) {
    return makeError("batches: inputs {} and targets {} need a first dimension counting examples",
                     inputs.type().toString(), targets.type().toString());
  }
  if (inputs.shape()[0] != targets.shape()[0]) {
    return makeError("batches: inputs {} and targets {} hold different numbers of examples", inputs.type().toString(),
                     targets.type().toString());
  }
  Batches b;
  b.rows_ = inputs.shape()[0];
  b.inputs_ = std::move(inputs);
  b.targets_ = std::move(targets);
  b.options_ = options;
  b.order_.resize(static_cast<size_t>(b.rows_));
  std::iota(b.order_.begin(), b.order_.end(), 0);
  b.rng_.seed(options.seed);
  b.taken_ = b.batchesPerEpoch();  // next() before startEpoch() is an epoch already over
  return b;
}

int64_t Batches::batchesPerEpoch() const {
  return options_.dropLast ? rows_ / options_.batch : (rows_ + options_.batch - 1) / options_.batch;
}

void Batches::startEpoch() {
  if (options_.shuffle) std::shuffle(order_.begin(), order_.end(), rng_);
  taken_ = 0;
}

bool Batches::next(Tensor& x, Tensor& y) {
  if (taken_ >= batchesPerEpoch()) return false;
  int64_t begin = taken_ * options_.batch;
  int64_t count = std::min(options_.batch, rows_ - begin);
  TensorType xType = withRows(inputs_, count), yType = withRows(targets_, count);
  if (!(x.type() == xType)) x = Tensor(xType);
  if (!(y.type() == yType)) y = Tensor(yType);
  gatherRows(inputs_, order_, static_cast<size_t>(begin), x);
  gatherRows(targets_, order_, static_cast<size_t>(begin), y);
  ++taken_;
  return true;
}

}  // namespace smelt::nn
