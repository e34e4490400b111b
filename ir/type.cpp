// Shapes, tensor types and broadcasting.
#include "ir/type.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace smelt {

std::string extentToString(int64_t d) {
  std::string name = d < 0 ? dimSymbolName(d) : "";
  return name.empty() ? std::to_string(d) : name;
}

bool isValidSymbolName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool isStatic(std::span<const int64_t> shape) {
  for (int64_t d : shape) {
    if (d < 0) return false;
  }
  return true;
}

int64_t numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

std::string shapeToString(std::span<const int64_t> shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(extentToString(d));
  return fmt::format("[{}]", fmt::join(parts, ","));
}

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
    if (!extentsUnify(da, db) && da != 1 && db != 1) {
      return makeError("shapes {} and {} do not broadcast (dimension {}: {} vs {})", shapeToString(a),
                       shapeToString(b), i, extentToString(da), extentToString(db));
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
    if (isSymbolic(d)) d = symbolicCount(d);
    if (d < -kMaxElements) return makeError("shape {} has an extent computed from a symbolic dimension", shapeToString(shape));
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
