// Parameter initializers, all seeded: the same seed and parameter name give the same values.
// Kaiming (He) and Xavier (Glorot) as PyTorch defines them; fan_in / fan_out are the caller's.
//   Tensor w = nn::kaimingUniform(fanIn)(Shape{out, in}, seed);
#pragma once

#include "ir/tensor.h"

#include <cstdint>
#include <functional>

namespace smelt::nn {

/// Makes an f32 tensor of a shape from a seed.
using Initializer = std::function<Tensor(const Shape&, uint64_t seed)>;

Initializer zeros();
Initializer ones();
Initializer constantValue(double value);
/// U(-b, b), b = gain * sqrt(3 / fanIn); gain sqrt(2) for ReLU layers (torch.nn.init.kaiming_uniform_).
Initializer kaimingUniform(int64_t fanIn, double gain = 1.4142135623730951);
/// N(0, gain^2 / fanIn).
Initializer kaimingNormal(int64_t fanIn, double gain = 1.4142135623730951);
/// U(-b, b), b = gain * sqrt(6 / (fanIn + fanOut)).
Initializer xavierUniform(int64_t fanIn, int64_t fanOut, double gain = 1.0);
/// N(0, gain^2 * 2 / (fanIn + fanOut)).
Initializer xavierNormal(int64_t fanIn, int64_t fanOut, double gain = 1.0);
/// U(-bound, bound).
Initializer uniform(double bound);
/// N(0, std^2).
Initializer normal(double stddev);

/// A seed for the parameter `name` under `seed` (a hash of both).
uint64_t seedFor(uint64_t seed, const std::string& name);

}  // namespace smelt::nn
