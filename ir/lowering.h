// The lowering facet of an op: how one element of its result is computed from elements of its
// operands, written against an abstract scalar emitter. Codegen (codegen/kernel_builder.h) implements
// the emitter and composes the lowerings of every op in a fused kernel; the ops never see loops,
// buffers or backends.
//   // relu: max(x, 0) at the output index
//   def.lower = [](LoweringContext& c) -> Expected<std::vector<KValue>> {
//     KValue x = c.operandAt(0);
//     return std::vector<KValue>{c.emit().binary(KBinary::Max, x, c.emit().zero(x.dtype))};
//   };
#pragma once

#include "ir/dtype.h"
#include "ir/support/expected.h"
#include "ir/type.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace smelt {

class OpCall;

/// A scalar value of a kernel being built: an SSA id and its element type. Index arithmetic is i64.
struct KValue {
  int32_t id = -1;
  DType dtype = DType::f32;
  bool valid() const { return id >= 0; }
};

/// Scalar unary operations. Floats follow IEEE/libm; integers wrap; see codegen/kernel.h for each.
enum class KUnary {
  Neg, Abs, Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Sin, Cos, Tan, Tanh, Erf, Sigmoid,
  Floor, Ceil, RoundEven, Not, IsNan,
};
/// Scalar binary operations; comparisons give bool.
/// Shl/Shr shift integers (Shr is arithmetic for signed, logical for unsigned dtypes).
enum class KBinary {
  Add, Sub, Mul, Div, Rem, Min, Max, Pow, And, Or, Xor, Shl, Shr,
  Lt, Le, Gt, Ge, Eq, Ne,
};

std::string_view kUnaryName(KUnary op);
std::string_view kBinaryName(KBinary op);
/// Whether `a op b` is `b op a` exactly (the kernel builder and canonical-order order their operands).
bool isCommutative(KBinary op);

/// What lowerings emit: constants, scalar math, selects, casts and sequential loops with carried
/// values (reductions). Implemented by codegen; every call returns a valid value or records an error
/// that the caller reports (ops need not check each result).
class KernelEmitter {
 public:
  virtual ~KernelEmitter() = default;
  /// A constant of `dtype` (integers: value truncated toward zero; bool: value != 0).
  virtual KValue constant(double value, DType dtype) = 0;
  /// An exact integer constant of `dtype` (index arithmetic uses i64).
  virtual KValue intConstant(int64_t value, DType dtype = DType::i64) = 0;
  virtual KValue unary(KUnary op, KValue x) = 0;
  /// Both operands have the same dtype; comparisons return bool.
  virtual KValue binary(KBinary op, KValue a, KValue b) = 0;
  virtual KValue select(KValue cond, KValue ifTrue, KValue ifFalse) = 0;
  /// Conversion with the `cast` op's semantics (floats to integers truncate toward zero and wrap
  /// through int64; NaN gives 0; to bool is != 0).
  virtual KValue cast(KValue x, DType to) = 0;
  /// A sequential loop over [0, extent) carrying values: `step(i, carried)` returns the next carried
  /// values (same dtypes as `init`); the result is their values after the last iteration.
  using LoopStep = std::function<std::vector<KValue>(KValue index, std::span<const KValue> carried)>;
  virtual std::vector<KValue> loop(int64_t extent, std::vector<KValue> init, const LoopStep& step) = 0;

  // Conveniences.
  KValue zero(DType dtype) { return intConstant(0, dtype); }
  KValue one(DType dtype) { return intConstant(1, dtype); }
  KValue index(int64_t value) { return intConstant(value, DType::i64); }
  KValue add(KValue a, KValue b) { return binary(KBinary::Add, a, b); }
  KValue sub(KValue a, KValue b) { return binary(KBinary::Sub, a, b); }
  KValue mul(KValue a, KValue b) { return binary(KBinary::Mul, a, b); }
  KValue div(KValue a, KValue b) { return binary(KBinary::Div, a, b); }
  KValue rem(KValue a, KValue b) { return binary(KBinary::Rem, a, b); }
  KValue lt(KValue a, KValue b) { return binary(KBinary::Lt, a, b); }
  KValue ge(KValue a, KValue b) { return binary(KBinary::Ge, a, b); }
  KValue logicalAnd(KValue a, KValue b) { return binary(KBinary::And, a, b); }

  /// What unravel made, so that linearOffset of that index in that shape is the offset it came from
  /// (row-major layouts read through a reshape then cost no division: x % c + c * (x / c) is x).
  struct Unraveled {
    Shape shape;
    std::vector<int32_t> index;
    KValue offset;
  };
  std::vector<Unraveled> unraveled;
};

/// One application being lowered: its output element's index and its operands' elements.
class LoweringContext {
 public:
  virtual ~LoweringContext() = default;
  virtual KernelEmitter& emit() = 0;
  /// The op's operand and result types and complete attributes.
  virtual const OpCall& call() const = 0;
  /// The output element's index: one i64 value per dim of the results (all results share a shape).
  virtual std::span<const KValue> index() const = 0;
  /// Operand `i` at an index of its own shape (the caller keeps it in bounds).
  virtual KValue operand(size_t i, std::span<const KValue> index) = 0;
  /// Operand `i` at the output index, through numpy broadcasting (elementwise ops).
  KValue operandAt(size_t i);
};

/// The lowering facet: the value of every result at ctx.index().
using LowerFn = std::function<Expected<std::vector<KValue>>(LoweringContext& ctx)>;

/// The index into an operand of shape `in` that numpy broadcasting reads for output index `out`
/// (leading dims dropped, size-1 dims read at 0, or at the output's index where `outShape`, the
/// output's shape when given, has 1 there too).
std::vector<KValue> broadcastIndex(KernelEmitter& e, std::span<const KValue> out, const Shape& in,
                                   const Shape* outShape = nullptr);
/// Row-major linear offset of `index` in `shape`, and the inverse (linearOffset of what unravel gave
/// is unravel's offset, with no arithmetic).
KValue linearOffset(KernelEmitter& e, std::span<const KValue> index, const Shape& shape);
std::vector<KValue> unravel(KernelEmitter& e, KValue offset, const Shape& shape);

}  // namespace smelt
