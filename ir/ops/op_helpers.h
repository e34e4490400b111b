// Shared helpers for op declarations in ir/ops: operand checks that produce uniform error messages,
// and index arithmetic (broadcast maps, multi-index iteration) for reference implementations.
#pragma once

#include "ir/op_registry.h"

#include <vector>

namespace smelt {
class Builder;
class Value;
}  // namespace smelt

namespace smelt::ops {

/// One result type.
inline std::vector<TensorType> single(TensorType type) { return {std::move(type)}; }

/// "operand #1 (weight)".
std::string operandName(const OpCall& call, size_t index);
/// Fails unless operand `index` has a dtype in `allowed`.
Status expectDType(const OpCall& call, size_t index, DTypeSet allowed);
/// Fails unless operands `a` and `b` have the same dtype.
Status expectSameDType(const OpCall& call, size_t a, size_t b);
/// Fails unless operand `index` has rank `rank`.
Status expectRank(const OpCall& call, size_t index, int64_t rank);
/// Fails unless an int-list attribute has `size` entries.
Status expectListSize(const OpCall& call, std::string_view attr, size_t size);

/// Fails unless an inferred result shape is within kMaxRank and kMaxElements.
Status expectSaneShape(const OpCall& call, const Shape& shape);
/// Checks an int-list attribute: `size` entries, each in [min, kMaxElements].
Status expectIntsInRange(const OpCall& call, std::string_view attr, size_t size, int64_t min);
/// Fails unless an int attribute is 0 or 1.
Status expectFlag(const OpCall& call, std::string_view attr);

/// The KH*KW strided window taps of an already padded NCHW image, stacked as [N, C, KH*KW, OH, OW]
/// (tap t = kh * KW + kw): tap t holds, for every output position, the input element that window tap
/// reads. Used by the decompositions and gradients of windowed ops (locally_connected2d, max_pool2d).
Value* stackWindowTaps(Builder& b, Value* padded, int64_t kh, int64_t kw, const int64_t stride[2],
                       const int64_t dilation[2], int64_t oh, int64_t ow);

/// For every element of a tensor of shape `out` (row-major), the flat index of the element of a
/// tensor of shape `in` that numpy broadcasting reads. `in` must broadcast to `out`.
std::vector<int64_t> broadcastIndexMap(std::span<const int64_t> in, std::span<const int64_t> out);

/// Calls `f(index)` for every multi-index of `shape` in row-major order.
template <typename F>
void forEachIndex(std::span<const int64_t> shape, F&& f) {
  int64_t n = numElements(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(static_cast<const std::vector<int64_t>&>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

/// Normalizes a list of possibly negative axes against `rank`; fails on out-of-range or repeated axes.
Expected<std::vector<int64_t>> normalizeAxes(const OpCall& call, std::span<const int64_t> axes, int64_t rank);

}  // namespace smelt::ops
