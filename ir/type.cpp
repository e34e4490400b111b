// Shapes, tensor types and broadcasting.
#include "ir/type.h"

#include <fmt/ranges.h>

namespace smelt {

int64_t numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeToString(std::span<const int64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string TensorType::toString() const { return std::string(dtypeName(dtype)) + shapeToString(shape); }

Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return makeError("shapes {} and {} do not broadcast (dimension {}: {} vs {})", shapeToString(a),
                       shapeToString(b), i, da, db);
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Status checkShapeLimits(std::span<const int64_t> shape) {
  if (static_cast<int64_t>(shape.size()) > kMaxRank) {
    return makeError("rank {} is above the supported maximum of {}", shape.size(), kMaxRank);
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return makeError("shape {} has a negative extent", shapeToString(shape));
    if (d > kMaxElements || (d != 0 && n > kMaxElements / d)) {
      return makeError("shape {} has too many elements (at most 2^40)", shapeToString(shape));
    }
    n *= d;
  }
  return Status::success();
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return makeError("axis {} is out of range for rank {}", axis, rank);
  return a;
}

}  // namespace smelt
