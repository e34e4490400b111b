// Helpers for ops' lowering facets (ir/lowering.h): reduction loop nests and index mappings shared by
// reductions, pools, matmul and convolution.
#pragma once

#include "ir/lowering.h"
#include "ir/op_registry.h"

#include <functional>

namespace smelt::ops {

/// The loop body of a reduction: the input index (every dim set) and the carried values in; the next
/// carried values out.
using ReduceBody = std::function<std::vector<KValue>(std::span<const KValue> inIndex, std::span<const KValue> carried)>;

/// Loops over the dims `axes` (sorted) of an input of shape `in`, the other dims taken from `outIndex`
/// (the result's index: `in` with the axes kept as 1s when `keepdims`, else dropped), carrying `init`.
std::vector<KValue> reduceOver(KernelEmitter& e, const Shape& in, std::span<const int64_t> axes,
                               std::span<const KValue> outIndex, bool keepdims, std::vector<KValue> init,
                               const ReduceBody& body);

/// Loops over the box `extents` (nested, first dim outermost), carrying `init`.
using BoxBody = std::function<std::vector<KValue>(std::span<const KValue> index, std::span<const KValue> carried)>;
std::vector<KValue> loopBox(KernelEmitter& e, std::span<const int64_t> extents, std::vector<KValue> init,
                            const BoxBody& body);

/// An index that may fall outside [0, size): whether it is inside, and an index safe to read at (the
/// index itself when inside, else 0). Loads always execute, so a lowering reads at `index` and lets
/// `inside` choose whether the value counts (window taps of pools and convolutions, padding).
struct GuardedIndex {
  KValue index;
  KValue inside;
};
GuardedIndex guardIndex(KernelEmitter& e, KValue index, int64_t size);

/// `index` clamped to [lo, hi] (i64).
KValue clampIndex(KernelEmitter& e, KValue index, int64_t lo, int64_t hi);

/// The accumulation type of a reduction or dot product over `dtype`: f32 for f16/bf16, else itself.
DType accumulatorType(DType dtype);

/// A single-result lowering from one scalar function of the broadcast operands (elementwise ops).
LowerFn elementwiseLowering(std::function<KValue(KernelEmitter&, std::span<const KValue>, const OpCall&)> f);

/// global_avg_pool2d / global_max_pool2d: the reduction lowering over H and W (reductions.cpp).
LowerFn globalPoolLowering(std::string name);

}  // namespace smelt::ops
