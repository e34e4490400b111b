// Builder implementation.
#include "ir/builder.h"

#include "ir/op_registry.h"

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
  if (autocast_) {
    const OpDef* def = OpRegistry::global().find(name);
    if (def && def->product) return productAutocast(*def, std::move(operands), std::move(attrs));
  }
  auto node = graph_.addNode(name, std::move(operands), std::move(attrs), sourceName_);
  if (!node) {
    fail(node.error());
    return {};
  }
  return (*node)->results();
}

std::vector<Value*> Builder::productAutocast(const OpDef& def, std::vector<Value*> operands, AttrMap attrs) {
  const ProductFacet& facet = *def.product;
  // A bias (gemm's c) is added in f32 after the product, so its gradient sums in f32.
  Value* addend = nullptr;
  auto at = static_cast<size_t>(facet.addend);
  if (facet.addend >= 0 && operands.size() > at && operands[at]->dtype() == DType::f32) {
    addend = operands[at];
    operands.erase(operands.begin() + facet.addend);
    auto beta = attrs.find("beta");
    if (facet.kind == ProductFacet::Kind::Gemm && beta != attrs.end() && std::get<double>(beta->second) != 1.0) {
      addend = scale(addend, std::get<double>(beta->second));
    }
  }
  // The product in the low dtype: f32 operands cast down, its results cast back.
  bool lowered = false;
  for (Value*& v : operands) {
    if (v->dtype() == DType::f32) {
      v = cast(v, *autocast_);
      lowered = true;
    }
  }
  auto node = graph_.addNode(def.name, std::move(operands), std::move(attrs), sourceName_);
  if (!node) {
    fail(node.error());
    return {};
  }
  std::vector<Value*> results;
  for (Value* r : (*node)->results()) results.push_back(lowered && r->dtype() == *autocast_ ? cast(r, DType::f32) : r);
  if (addend && results.size() == 1 && results[0]) {
    // gemm's c broadcasts to [M, N]; a convolution's bias is per output channel (axis 1 of NCHW).
    if (facet.kind != ProductFacet::Kind::Gemm) addend = reshape(addend, {1, addend->type().numel(), 1, 1});
    results[0] = add(results[0], addend);
  }
  return results;
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
