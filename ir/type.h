// Static shapes and tensor types ("f32[32,784]"), and numpy-style broadcasting of shapes.
#pragma once

#include "ir/dtype.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// A static shape: one extent per dimension; rank 0 is a scalar.
using Shape = std::vector<int64_t>;

/// Limits on static shapes, enforced by the parser and by every op's inference: with extents and
/// element counts below 2^40, all index arithmetic in the reference and generated kernels stays far
/// inside int64, and nothing tries to allocate an absurd tensor.
inline constexpr int64_t kMaxRank = 16;
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

/// The number of elements of a shape (1 for a scalar).
int64_t numElements(std::span<const int64_t> shape);
/// "[32,784]".
std::string shapeToString(std::span<const int64_t> shape);
/// Row-major strides in elements.
std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape);

/// The type of every value in a graph: an element type and a static shape.
struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return numElements(shape); }
  size_t byteSize() const { return static_cast<size_t>(numel()) * dtypeSize(dtype); }
  /// "f32[32,784]"; a scalar prints as "f32[]".
  std::string toString() const;
  bool operator==(const TensorType&) const = default;
};

/// The numpy broadcast of two shapes, or an error naming both.
Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// Fails when `shape` exceeds kMaxRank or kMaxElements (or has a negative extent).
Status checkShapeLimits(std::span<const int64_t> shape);

/// Normalizes a possibly negative axis against `rank`; fails when out of range.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);

}  // namespace smelt
