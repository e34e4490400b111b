// Static shapes and tensor types ("f32[32,784]"), and numpy-style broadcasting of shapes.
#pragma once

#include "ir/dtype.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smelt {

/// A shape: one extent per dimension; rank 0 is a scalar. An extent is a count, or a symbolic
/// dimension ("N" in f32[N,784]) that a graph's run binds (ir/dims.h), or a product of symbols and a
/// count ("12*N" in f32[12*N,49,96], "N*T"): what a reshape that merges a symbolic batch with other
/// dimensions makes.
using Shape = std::vector<int64_t>;

/// Symbolic dimensions are interned by name, process-wide, and stored in a Shape as negative extents
/// on a sparse grid far below any count: kSymbolBase + id * kSymbolStride. Only ops that declare it
/// take them (OpDef::symbolicDims); as a second guard, arithmetic on one (N - 1, N / 2, k * N with
/// wrapping) lands off the grid and, the base being an odd pattern rather than a power of two, far
/// from any count, so checkShapeLimits rejects it. Products go through multiplyExtents, which interns
/// each one (a monomial: a count times symbols) on the same grid under its canonical name.
inline constexpr int64_t kSymbolBase = -0x3a5c9e1d7b4f2a63;
inline constexpr int64_t kSymbolStride = int64_t{1} << 24;
/// The extent standing for the symbol `name` (a letter or '_' first, then letters, digits, '_').
int64_t dimSymbol(std::string_view name);
/// Whether `extent` is symbolic: a symbol (one dimSymbol made) or a product of symbols.
bool isSymbolic(int64_t extent);
/// Whether `extent` is a symbol itself, not a product: what a binding names.
bool isPlainSymbol(int64_t extent);
/// A symbolic extent's name: "N", or a product's canonical form ("12*N", "N*T": the count first, then
/// the symbols sorted by name); empty for a count.
std::string dimSymbolName(int64_t extent);

/// An extent as a monomial: a count times symbols (their names sorted, each as often as it divides
/// the extent). A count d is {d, {}}; the symbol N is {1, {"N"}}; 12*N*N is {12, {"N", "N"}}.
struct ExtentFactors {
  int64_t count = 1;
  std::vector<std::string> symbols;
};
ExtentFactors extentFactors(int64_t extent);
/// The extent a * b: a count when both are, otherwise their product as a monomial (N*12 and 12*N are
/// one extent; 0 times a symbol is 0). An error when the counts' product exceeds kMaxElements.
Expected<int64_t> multiplyExtents(int64_t a, int64_t b);
/// a / b when b divides a exactly as a monomial (12*N / 4 = 3*N, N*T / T = N, 12 / 4 = 3); nullopt
/// otherwise (N / 2: the quotient would be no count times symbols).
std::optional<int64_t> divideExtents(int64_t a, int64_t b);
/// Whether every extent of `shape` is a count.
bool isStatic(std::span<const int64_t> shape);
/// Whether `name` can name a symbolic dimension.
bool isValidSymbolName(std::string_view name);

/// Limits on static shapes, enforced by the parser and by every op's inference: with extents and
/// element counts below 2^40, all index arithmetic in the reference and generated kernels stays far
/// inside int64, and nothing tries to allocate an absurd tensor.
inline constexpr int64_t kMaxRank = 16;
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

/// The number of elements of a static shape (1 for a scalar); -1 for a shape with a symbolic extent.
int64_t numElements(std::span<const int64_t> shape);
/// "[32,784]", "[N,784]".
std::string shapeToString(std::span<const int64_t> shape);
/// One extent as text: its number, or a symbolic dimension's name.
std::string extentToString(int64_t extent);
/// Row-major strides in elements.
std::vector<int64_t> contiguousStrides(std::span<const int64_t> shape);

/// The type of every value in a graph: an element type and a static shape.
struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return numElements(shape); }
  /// 0 for a symbolic shape: memory is planned only for bound (static) graphs.
  size_t byteSize() const { return numel() < 0 ? 0 : static_cast<size_t>(numel()) * dtypeSize(dtype); }
  bool isStatic() const { return smelt::isStatic(shape); }
  /// "f32[32,784]"; a scalar prints as "f32[]".
  std::string toString() const;
  bool operator==(const TensorType&) const = default;
};

/// Whether two extents may stand for one: equal, or two symbolic extents (which the op then unifies:
/// the graph holds only if they are bound to one extent, which bindDims checks) that are not the
/// same symbols times different counts (2*N is never 3*N).
bool extentsUnify(int64_t a, int64_t b);

/// The numpy broadcast of two shapes, or an error naming both. A symbolic extent broadcasts with 1
/// and with itself; two different symbols unify (the result takes the first one's name); against a
/// count other than 1 a symbol is an error (the count could be bound only to that one extent).
Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// Fails when `shape` exceeds kMaxRank or kMaxElements (its static extents; a symbolic one counts as
/// its count: 1 for a symbol, 12 for 12*N), or
/// has a negative extent that is no symbol (computed from one by an op's inference).
Status checkShapeLimits(std::span<const int64_t> shape);

/// Normalizes a possibly negative axis against `rank`; fails when out of range.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);

}  // namespace smelt
