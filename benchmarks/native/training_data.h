// The synthetic batches the native training benchmarks feed their steps (smelt_train_steps, smelt_dp_overlap):
// normal inputs from a seed, and labels cycling through the classes.
#pragma once

#include "ir/tensor.h"

#include <cstdint>
#include <random>

namespace smelt::bench {

/// f32 values of `type`, standard normal, from `seed`.
inline Tensor randomNormal(const TensorType& type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Tensor t(type);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

/// `count` i64 labels in [0, classes), every class in turn (a stride of 37).
inline Tensor labels(int64_t count, int64_t classes) {
  Tensor y(TensorType{DType::i64, {count}});
  for (int64_t i = 0; i < count; ++i) y.data<int64_t>()[i] = (i * 37) % classes;
  return y;
}

}  // namespace smelt::bench
