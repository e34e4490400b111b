// Shared helpers for op declarations.
#include "ir/ops/op_helpers.h"

#include "ir/builder.h"
#include "ir/graph.h"

#include <algorithm>

namespace smelt::ops {

std::string operandName(const OpCall& call, size_t index) {
  const auto& specs = call.op().operands;
  std::string name;
  if (!specs.empty()) {
    // Variadic slots are last, so any index past the declared ones belongs to the last slot.
    name = specs[std::min(index, specs.size() - 1)].name;
  }
  return name.empty() ? fmt::format("operand #{}", index) : fmt::format("operand #{} ({})", index, name);
}

Status expectDType(const OpCall& call, size_t index, DTypeSet allowed) {
  DType d = call.operand(index).dtype;
  if (allowed.contains(d)) return Status::success();
  return call.error("{} must be one of {}, got {}", operandName(call, index), allowed.toString(), dtypeName(d));
}

Status expectSameDType(const OpCall& call, size_t a, size_t b) {
  if (call.operand(a).dtype == call.operand(b).dtype) return Status::success();
  return call.error("{} is {} but {} is {}; they must have the same dtype", operandName(call, a),
                    call.operand(a).toString(), operandName(call, b), call.operand(b).toString());
}

Status expectRank(const OpCall& call, size_t index, int64_t rank) {
  if (call.operand(index).rank() == rank) return Status::success();
  return call.error("{} must have rank {}, got {}", operandName(call, index), rank, call.operand(index).toString());
}

Status expectListSize(const OpCall& call, std::string_view attr, size_t size) {
  size_t got = call.getInts(attr).size();
  if (got == size) return Status::success();
  return call.error("attribute '{}' must have {} entries, got {}", attr, size, got);
}

Status expectSaneShape(const OpCall& call, const Shape& shape) {
  Status limits = checkShapeLimits(shape);
  if (!limits) return call.error("result {}", limits.error().message());
  return Status::success();
}

Status expectIntsInRange(const OpCall& call, std::string_view attr, size_t size, int64_t min) {
  SMELT_CHECK_OK(expectListSize(call, attr, size));
  const std::vector<int64_t>& values = call.getInts(attr);
  for (int64_t v : values) {
    if (v < min) {
      return call.error("attribute '{}' must hold {} values, got {}", attr, min > 0 ? "positive" : "non-negative",
                        shapeToString(values));
    }
    if (v > kMaxElements) return call.error("attribute '{}' value {} is too large (at most 2^40)", attr, v);
  }
  return Status::success();
}

Status expectFlag(const OpCall& call, std::string_view attr) {
  int64_t v = call.getInt(attr);
  if (v == 0 || v == 1) return Status::success();
  return call.error("attribute '{}' must be 0 or 1, got {}", attr, v);
}

Value* stackWindowTaps(Builder& b, Value* padded, int64_t kh, int64_t kw, const int64_t stride[2],
                       const int64_t dilation[2], int64_t oh, int64_t ow) {
  if (!padded) return nullptr;
  int64_t n = padded->shape()[0], ch = padded->shape()[1];
  std::vector<Value*> taps;
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      int64_t h0 = i * dilation[0], w0 = j * dilation[1];
      Value* tap = b.op("slice", {padded},
                        {{"starts", std::vector<int64_t>{h0, w0}},
                         {"ends", std::vector<int64_t>{h0 + (oh - 1) * stride[0] + 1, w0 + (ow - 1) * stride[1] + 1}},
                         {"axes", std::vector<int64_t>{2, 3}},
                         {"steps", std::vector<int64_t>{stride[0], stride[1]}}});
      taps.push_back(b.reshape(tap, {n, ch, 1, oh, ow}));
    }
  }
  return taps.size() == 1 ? taps[0] : b.op("concat", taps, {{"axis", int64_t{2}}});
}

std::vector<int64_t> broadcastIndexMap(std::span<const int64_t> in, std::span<const int64_t> out) {
  size_t rank = out.size();
  std::vector<int64_t> inStrides(rank, 0);
  std::vector<int64_t> contiguous = contiguousStrides(in);
  for (size_t i = 0; i < in.size(); ++i) {
    size_t d = rank - in.size() + i;
    inStrides[d] = in[i] == 1 ? 0 : contiguous[i];
  }
  std::vector<int64_t> map(static_cast<size_t>(numElements(out)));
  size_t flat = 0;
  forEachIndex(out, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * inStrides[d];
    map[flat++] = offset;
  });
  return map;
}

Expected<std::vector<int64_t>> normalizeAxes(const OpCall& call, std::span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) return call.error("axis {} is out of range for rank {}", axis, rank);
    if (std::find(out.begin(), out.end(), a) != out.end()) return call.error("axis {} is repeated", axis);
    out.push_back(a);
  }
  return out;
}

}  // namespace smelt::ops
