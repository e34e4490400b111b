// Builder: emits ops into a graph with a sticky error. Once an emission fails, later ones return null
// and the first error is kept, so multi-op formulas (gradient rules, decompositions of composite ops)
// read like the math and are checked once at the end with status().
#pragma once

#include "ir/graph.h"

#include <optional>
#include <string>
#include <vector>

namespace smelt {

/// Emits nodes into a graph; see the file comment for the error convention.
class Builder {
 public:
  /// Nodes get `sourceName` (e.g. "grad of conv2d %7") so dumps show where they came from.
  explicit Builder(Graph& graph, std::string sourceName = {}) : graph_(graph), sourceName_(std::move(sourceName)) {}

  Graph& graph() { return graph_; }
  bool ok() const { return !error_.has_value(); }
  /// Success, or the first error any emission hit.
  Status status() const { return error_ ? Status(*error_) : Status::success(); }
  /// Records an error (the first one wins) and returns null, for use in rules: `return b.fail(...)`.
  Value* fail(Error error);
  void setSourceName(std::string name) { sourceName_ = std::move(name); }
  /// Mixed precision, as PyTorch's autocast: an op that is a product (OpDef::product: matmul, gemm, the
  /// convolutions; the op list lives with the ops) emitted through this builder computes in `dtype` (bf16 or
  /// f16): its f32 operands are cast to it and its results cast back to f32, so everything else (reductions,
  /// softmax, normalizations, losses) stays f32. Its gradients follow: the casts' gradients make the backward
  /// products low precision too. nullopt (the default): every op in its operands' dtype.
  void setAutocast(std::optional<DType> dtype) { autocast_ = dtype; }
  std::optional<DType> autocast() const { return autocast_; }
  const std::string& sourceName() const { return sourceName_; }

  /// Emits a single-result op; null when an operand is null or the op rejects its operands.
  Value* op(std::string_view name, std::vector<Value*> operands, AttrMap attrs = {});
  /// Emits an op and returns all its results (empty on failure).
  std::vector<Value*> ops(std::string_view name, std::vector<Value*> operands, AttrMap attrs = {});

  // Constants.
  /// A scalar constant of `dtype`.
  Value* scalar(double value, DType dtype);
  /// A scalar constant with `like`'s dtype.
  Value* scalarLike(double value, Value* like);
  /// A constant tensor of `type` filled with `value` (a scalar expanded to the shape).
  Value* full(double value, const TensorType& type);
  Value* zerosLike(Value* like);
  Value* onesLike(Value* like);

  // Elementwise sugar (numpy broadcasting).
  Value* add(Value* a, Value* b) { return op("add", {a, b}); }
  Value* sub(Value* a, Value* b) { return op("sub", {a, b}); }
  Value* mul(Value* a, Value* b) { return op("mul", {a, b}); }
  Value* div(Value* a, Value* b) { return op("div", {a, b}); }
  Value* neg(Value* a) { return op("neg", {a}); }
  Value* exp(Value* a) { return op("exp", {a}); }
  Value* log(Value* a) { return op("log", {a}); }
  Value* sqrt(Value* a) { return op("sqrt", {a}); }
  Value* rsqrt(Value* a) { return op("rsqrt", {a}); }
  Value* square(Value* a) { return mul(a, a); }
  /// a * s for a scalar s in a's dtype.
  Value* scale(Value* a, double s) { return mul(a, scalarLike(s, a)); }
  Value* where(Value* cond, Value* a, Value* b) { return op("where", {cond, a, b}); }
  Value* cast(Value* a, DType dtype);

  // Shapes.
  Value* reshape(Value* a, Shape shape);
  Value* transpose(Value* a, std::vector<int64_t> perm);
  Value* expand(Value* a, Shape shape);
  Value* reduceSum(Value* a, std::vector<int64_t> axes, bool keepdims);
  /// Undoes numpy broadcasting: sums `a` over the dims that broadcasting added or stretched so the
  /// result has `shape` (used by every gradient rule of a broadcasting op).
  Value* sumToShape(Value* a, const Shape& shape);

 private:
  /// ops() for a product under autocast (see setAutocast).
  std::vector<Value*> productAutocast(const OpDef& def, std::vector<Value*> operands, AttrMap attrs);

  Graph& graph_;
  std::string sourceName_;
  std::optional<Error> error_;
  std::optional<DType> autocast_;
};

}  // namespace smelt
