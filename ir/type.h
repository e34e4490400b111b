// Static shapes and tensor types ("f32[32,784]"), and numpy-style broadcasting of shapes.
#pragma once

#include "ir/dtype.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smelt {

/// A shape: one extent per dimension; rank 0 is a scalar. An extent is a count, or a symbolic
/// dimension ("N" in f32[N,784]) that a graph's run binds (ir/dims.h), or a polynomial over symbols
/// and floor quotients: "12*N" in f32[12*N,49,96] (a reshape merging a symbolic batch with other
/// dimensions), "T+1" (a concat along a symbolic sequence), "(H+1)/2+1" (a stride-2 convolution over
/// a symbolic image height: `/` is floor division).
using Shape = std::vector<int64_t>;

/// Symbolic extents are interned by their canonical name, process-wide (ir/symbolic_extent.cpp), and
/// stored in a Shape as negative extents on a sparse grid far below any count: kSymbolBase + id *
/// kSymbolStride, so equal polynomials are one extent. Only ops that declare it take them
/// (OpDef::symbolicDims), and compute with them only through the functions below; as a second guard,
/// plain arithmetic on one (N - 1 as integers) lands off the grid and, the base being an odd pattern
/// rather than a power of two, far from any count, so checkShapeLimits rejects it.
inline constexpr int64_t kSymbolBase = -0x3a5c9e1d7b4f2a63;
inline constexpr int64_t kSymbolStride = int64_t{1} << 24;
/// The extent standing for the symbol `name` (a letter or '_' first, then letters, digits, '_').
int64_t dimSymbol(std::string_view name);
/// Whether `extent` is symbolic: a symbol, or a polynomial over symbols.
bool isSymbolic(int64_t extent);
/// Whether `extent` is a symbol itself, not a polynomial: what a binding names.
bool isPlainSymbol(int64_t extent);
/// Whether `extent` is a count or a count times symbols (12*N*T), no sum.
bool isMonomial(int64_t extent);
/// A symbolic extent's canonical name, which the text IR spells it by: "N"; "12*N", "N*T" (the count
/// first, then the factors sorted by name); "2*N+T-1" (terms of higher degree first, the count last);
/// "(H+1)/2" (floor division); empty for a count.
std::string dimSymbolName(int64_t extent);

/// A monomial extent (isMonomial) as a count times symbols (their names sorted, each as often as it
/// divides the extent). A count d is {d, {}}; the symbol N is {1, {"N"}}; 12*N*N is {12, {"N", "N"}}.
/// A sum has no such form: {0, {}}.
struct ExtentFactors {
  int64_t count = 1;
  std::vector<std::string> symbols;
};
ExtentFactors extentFactors(int64_t extent);
/// Any extent as a sum of terms, each a coefficient times atoms (symbols and floor quotients, as
/// extents), plus a count: N*T+2*N-1 is {{1, {N, T}}, {2, {N}}}, -1.
struct ExtentSum {
  struct Term {
    int64_t coefficient = 1;
    std::vector<int64_t> atoms;
  };
  std::vector<Term> terms;
  int64_t constant = 0;
};
ExtentSum extentSum(int64_t extent);
/// A floor quotient atom ("(H+1)/2"): the extent it divides and the divisor (at least 2).
struct FloorQuotient {
  int64_t numerator = 0;
  int64_t divisor = 2;
};
std::optional<FloorQuotient> floorQuotientOf(int64_t extent);
/// The named symbols `extent` holds (through floor quotients too), sorted: {"H", "N"} for N*((H+1)/2).
std::vector<std::string> extentSymbols(int64_t extent);
/// Whether `extent` is at least 0 wherever every symbol is at least 1, as far as its form shows: no
/// negative coefficient, and at least 0 with every symbol 1 (N-1 is; N-2 and T-N are not).
bool provablyNonnegative(int64_t extent);
/// A count for checkShapeLimits: a count itself, a monomial's count, 1 for a sum.
int64_t symbolicCount(int64_t extent);

/// The extent a * b: a count when both are, otherwise their product (N*12 and 12*N are one extent; 0
/// times a symbol is 0). An error when a coefficient of the product exceeds kMaxElements.
Expected<int64_t> multiplyExtents(int64_t a, int64_t b);
/// a + b and a - b (N + 1, T + T = 2*T, N - N = 0); an error when a coefficient exceeds kMaxElements.
/// A difference may be a negative count: the caller checks that an extent is not.
Expected<int64_t> addExtents(int64_t a, int64_t b);
Expected<int64_t> subtractExtents(int64_t a, int64_t b);
/// floor(a / divisor) for a count divisor >= 1: exact where it divides every coefficient ((2*H+4)/2 =
/// H+2), otherwise the quotient of the multiples plus one floor quotient atom ((H+1)/2, (3*H)/2 =
/// H+(H)/2).
Expected<int64_t> floorDivideExtent(int64_t a, int64_t divisor);
/// a / b when b divides a exactly: b a positive count or one term (12*N / 4 = 3*N, N*T / T = N,
/// (4*N+4) / 4 = N+1, 12 / 4 = 3); nullopt otherwise (N / 2: no polynomial over N).
std::optional<int64_t> divideExtents(int64_t a, int64_t b);
/// The value of `extent` when each symbol has the value `valueOf` gives (nullopt: unbound, an error
/// naming it); a count is itself. An error past kMaxElements. (ir/dims.h's evaluateExtent takes a
/// binding.)
Expected<int64_t> evaluateSymbolicExtent(int64_t extent,
                                         const std::function<std::optional<int64_t>(const std::string&)>& valueOf);
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

/// Whether two extents can be equal at some binding: equal, or two symbolic extents whose difference
/// is not provably positive (or negative) wherever every symbol is at least 1 (2*N is never 3*N, nor
/// N+1 N). ONNX shape arithmetic folds a comparison to false only when this is false.
bool extentsMayBeEqual(int64_t a, int64_t b);

/// Whether an op may take two extents for one (the graph then holds only if they are bound to one
/// extent, which bindDims checks): they may be equal, and when both are of a single symbol they agree
/// at more than two of its sizes 1..256. So 3*N and N+2 (equal only at N = 1) or N and (N)/2 do not
/// unify, while 2*((N)/2) and N (equal at every even N) do, as do H and W.
bool extentsUnify(int64_t a, int64_t b);

/// The numpy broadcast of two shapes, or an error naming both. A symbolic extent broadcasts with 1
/// and with itself; two different symbols unify (the result takes the first one's name); against a
/// count other than 1 a symbol is an error (the count could be bound only to that one extent).
Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// Fails when `shape` exceeds kMaxRank or kMaxElements (its static extents; a symbolic one counts as
/// symbolicCount: 1 for a symbol or a sum, 12 for 12*N), or
/// has a negative extent that is no symbol (computed from one by an op's inference).
Status checkShapeLimits(std::span<const int64_t> shape);

/// Normalizes a possibly negative axis against `rank`; fails when out of range.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);

}  // namespace smelt
