// Table rows for elementwise ops. Each row is one op's whole declaration: name, accepted dtypes,
// attributes and scalar semantics; makeUnaryOp/makeBinaryOp turn a row into an OpDef with
// broadcasting inference and a reference implementation. Later issues add the row's gradient and
// codegen expression here, so an elementwise op stays one row.
#pragma once

#include "ir/builder.h"
#include "ir/lowering.h"
#include "ir/op_registry.h"

#include <functional>

namespace smelt::ops {

/// A scalar function for one application of an op, built once from its attributes.
using FloatFn1 = std::function<double(double)>;
using FloatFn2 = std::function<double(double, double)>;

/// A unary gradient: dx from the operand x, the result y and the incoming gradient dy.
using UnaryGradFn = std::function<Value*(Builder& b, Value* x, Value* y, Value* dy, const GradientContext& ctx)>;
/// One side of a binary gradient, before broadcasting is undone (the row's op sums it back to the
/// operand's shape): from the operands a and b, the result y and the incoming gradient dy.
using BinaryGradFn = std::function<Value*(Builder& b, Value* a, Value* bv, Value* y, Value* dy)>;

/// One unary elementwise op: result dtype and shape equal the operand's.
struct UnaryRow {
  std::string name;
  std::string summary;
  DTypeSet dtypes;
  std::vector<AttrSpec> attrs = {};
  /// The function on values in double; reads attributes once. Also used for integer dtypes (through
  /// double, then truncated and wrapped) unless `intFn` / `unsignedFn` is set.
  std::function<FloatFn1(const OpCall&)> floatFn;
  /// Exact integer semantics (abs, neg, sign) for signed integer dtypes, in int64; the result wraps.
  std::function<int64_t(int64_t)> intFn = nullptr;
  /// Exact semantics for unsigned dtypes and bool (values zero-extended to uint64); the result wraps.
  std::function<uint64_t(uint64_t)> unsignedFn = nullptr;
  /// Checks attribute values beyond their kind (gelu's `approximate` must be "none" or "tanh");
  /// runs in inference, so a bad value is a verifier error. Null: every value is accepted.
  std::function<Status(const OpCall&)> validate = nullptr;
  /// The gradient (float dtypes). Null: not differentiable.
  UnaryGradFn grad = nullptr;
  /// The IR example, where the generic one-application example exercises too little (attribute
  /// settings). Empty: the generic example.
  std::string example = {};
  /// How the op computes one element in a kernel (ir/lowering.h), from the operand element; attributes
  /// through the OpCall. Null: the op cannot be compiled.
  std::function<KValue(KernelEmitter& e, KValue x, const OpCall& call)> lower = nullptr;
};

/// One binary elementwise op with numpy broadcasting. Both operands must have the same dtype. In kernels
/// it is the KBinary of the same name (ir/lowering.h), whose integer semantics match the row's.
struct BinaryRow {
  std::string name;
  std::string summary;
  DTypeSet dtypes;
  /// True for comparisons: the result is bool.
  bool predicate = false;
  /// Float semantics, in double.
  FloatFn2 floatFn;
  /// Integer semantics for signed dtypes (values sign-extended to int64; the result wraps to the dtype).
  std::function<int64_t(int64_t, int64_t)> signedFn = nullptr;
  /// Integer semantics for unsigned dtypes and bool (values zero-extended to uint64).
  std::function<uint64_t(uint64_t, uint64_t)> unsignedFn = nullptr;
  /// Gradients for lhs and rhs. Both null: not differentiable (comparisons, logic).
  BinaryGradFn gradLhs = nullptr;
  BinaryGradFn gradRhs = nullptr;
  /// The IR example, where the generic one-application example exercises too little (ties for
  /// min/max). Empty: the generic example.
  std::string example = {};
};

/// True for the storage types of float dtypes (float, double, Half, BFloat16).
template <typename T>
constexpr bool kIsFloatStorage =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

OpDef makeUnaryOp(UnaryRow row);
OpDef makeBinaryOp(BinaryRow row);

}  // namespace smelt::ops
