// Builder implementation.
#include "ir/builder.h"

namespace smelt {

Value* Builder::fail(Error error) {
  if (!error_) error_ = std::move(error);
  return nullptr;
}

std::vector<Value*> Builder::ops(std::string_view name, std::vector<Value*> operands, AttrMap attrs) {
  if (error_) return {};
  for (Value* v : operands) {
    // A null operand means an earlier emission failed (its error is kept) or a rule passed nothing.
    if (!v) {
      fail(makeError("{}: an operand of {} is missing", sourceName_.empty() ? "builder" : sourceName_, name));
      return {};
    }
  }
  auto node = graph_.addNode(name, std::move(operands), std::move(attrs), sourceName_);
  if (!node) {
    fail(node.error());
    return {};
  }
  return (*node)->results();
}

Value* Builder::op(std::string_view name, std::vector<Value*> operands, AttrMap attrs) {
  std::vector<Value*> results = ops(name, std::move(operands), std::move(attrs));
  if (results.empty()) return nullptr;
  if (results.size() != 1) return fail(makeError("builder: {} has {} results; use ops()", name, results.size()));
  return results[0];
}

Value* Builder::scalar(double value, DType dtype) {
  if (error_) return nullptr;
  AttrMap attrs;
  attrs.emplace("value", Tensor::scalar(dtype, value));
  return op("constant", {}, std::move(attrs));
}

Value* Builder::scalarLike(double value, Value* like) {
  if (!like) return fail(makeError("builder: scalarLike of a missing value"));
  return scalar(value, like->dtype());
}

Value* Builder::full(double value, const TensorType& type) {
  Value* s = scalar(value, type.dtype);
  return type.shape.empty() ? s : expand(s, type.shape);
}

Value* Builder::zerosLike(Value* like) {
  if (!like) return fail(makeError("builder: zerosLike of a missing value"));
  return full(0.0, like->type());
}

Value* Builder::onesLike(Value* like) {
  if (!like) return fail(makeError("builder: onesLike of a missing value"));
  return full(1.0, like->type());
}

Value* Builder::cast(Value* a, DType dtype) {
  if (a && a->dtype() == dtype) return a;
  return op("cast", {a}, {{"to", std::string(dtypeName(dtype))}});
}

Value* Builder::reshape(Value* a, Shape shape) {
  if (a && a->shape() == shape) return a;
  return op("reshape", {a}, {{"shape", std::move(shape)}});
}

Value* Builder::transpose(Value* a, std::vector<int64_t> perm) { return op("transpose", {a}, {{"perm", std::move(perm)}}); }

Value* Builder::expand(Value* a, Shape shape) {
  if (a && a->shape() == shape) return a;
  return op("expand", {a}, {{"shape", std::move(shape)}});
}

Value* Builder::reduceSum(Value* a, std::vector<int64_t> axes, bool keepdims) {
  return op("reduce_sum", {a}, {{"axes", std::move(axes)}, {"keepdims", int64_t{keepdims ? 1 : 0}}});
}

Value* Builder::sumToShape(Value* a, const Shape& shape) {
  if (!a || a->shape() == shape) return a;
  const Shape& from = a->shape();
  if (from.size() < shape.size()) {
    return fail(makeError("builder: cannot sum {} down to {}", a->type().toString(), shapeToString(shape)));
  }
  size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  }
  Value* summed = axes.empty() ? a : reduceSum(a, axes, true);
  return reshape(summed, shape);
}

}  // namespace smelt
