// Folding shape computations over symbolic values (see onnx_shape_values.h).
#include "frontend/onnx/onnx_shape_values.h"

#include "ir/interpreter.h"

#include <optional>
#include <set>
#include <string_view>

namespace smelt::onnximport {

bool holdsSymbols(const Tensor& t) {
  if (t.dtype() != DType::i64) return false;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isSymbolic(t.getInt(i))) return true;
  }
  return false;
}

namespace {

/// The flat index into an operand of `shape` that numpy broadcasting reads for element `i` of a
/// result of `out`'s shape.
int64_t broadcastIndex(int64_t i, const Shape& out, const Shape& shape) {
  int64_t index = 0, stride = 1;
  const size_t offset = out.size() - shape.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coordinate = i % out[d];
    i /= out[d];
    if (d < offset) continue;
    const int64_t extent = shape[d - offset];
    if (extent != 1) index += coordinate * stride;
    stride *= extent;
  }
  return index;
}

/// Whether symbolic extent `a` equals `b` at every binding (true), at none (false), or it depends.
std::optional<bool> alwaysEqual(int64_t a, int64_t b) {
  if (a == b) return true;
  if (!isSymbolic(a)) std::swap(a, b);
  if (isSymbolic(b)) {
    if (!extentsMayBeEqual(a, b)) return false;
    return std::nullopt;
  }
  if (!isMonomial(a)) return std::nullopt;
  // A symbol is at least 1, so a product is a positive multiple of its count.
  const int64_t count = extentFactors(a).count;
  if (b < count || b % count != 0) return false;
  return std::nullopt;
}

/// One element of `op` over two values, at least one of them symbolic.
Expected<int64_t> symbolicArithmetic(std::string_view op, int64_t a, int64_t b, const std::string& label) {
  if (op == "mul") {
    Expected<int64_t> product = multiplyExtents(a, b);
    if (!product.ok()) return makeError("{}: {}", label, product.error().message());
    return product;
  }
  if (op == "add" || op == "sub") {
    Expected<int64_t> sum = op == "add" ? addExtents(a, b) : subtractExtents(a, b);
    if (!sum.ok()) return makeError("{}: {}", label, sum.error().message());
    return sum;
  }
  if (op == "div") {
    if (std::optional<int64_t> q = divideExtents(a, b)) return *q;
    // A shape's values are never negative: ONNX's truncating division of one by a count is floor division.
    if (!isSymbolic(b) && b > 0) {
      Expected<int64_t> q = floorDivideExtent(a, b);
      if (!q.ok()) return makeError("{}: {}", label, q.error().message());
      return q;
    }
    return makeError("{} divides {} by {}: the quotient is no polynomial (bind the dimension first: --dim)", label,
                     extentToString(a), extentToString(b));
  }
  std::optional<bool> equal = alwaysEqual(a, b);
  if (!equal) {
    return makeError("{} compares {} with {}: that depends on the binding (bind the dimension first: --dim)", label,
                     extentToString(a), extentToString(b));
  }
  return *equal ? 1 : 0;
}

}  // namespace

Expected<std::vector<Tensor>> foldShapeValues(const Graph& graph, const Node& node, std::span<const Tensor> operands) {
  static const std::set<std::string_view> kMovesValues = {"gather",    "concat",    "slice",   "reshape",
                                                          "squeeze",   "unsqueeze", "flatten", "identity",
                                                          "transpose", "expand",    "where"};
  bool symbolic = false;
  for (const Tensor& t : operands) symbolic = symbolic || holdsSymbols(t);
  const std::string_view op = node.opName();
  if (!symbolic || kMovesValues.count(op) || (op == "cast" && node.result(0)->dtype() == DType::i64)) {
    return evaluateNode(graph, node, operands);
  }
  const TensorType& out = node.result(0)->type();
  const bool arithmetic = (op == "mul" || op == "div" || op == "add" || op == "sub" || op == "eq") &&
                          operands.size() == 2 && operands[0].dtype() == DType::i64 &&
                          operands[1].dtype() == DType::i64 && out.isStatic();
  if (!arithmetic) {
    return makeError(
        "{} computes with a symbolic dimension's value ({}): only ops that move values, and add, sub, mul, div "
        "and eq, may take it",
        graph.labelOf(node), operands[0].type().toString());
  }
  Tensor result(out);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t a = operands[0].getInt(broadcastIndex(i, out.shape, operands[0].shape()));
    const int64_t b = operands[1].getInt(broadcastIndex(i, out.shape, operands[1].shape()));
    int64_t value = 0;
    if (isSymbolic(a) || isSymbolic(b)) {
      SMELT_TRY(value, symbolicArithmetic(op, a, b, graph.labelOf(node)));
    } else if (op == "mul") {
      value = a * b;  // counts of a shape computation (a Shape's extents times small factors)
    } else if (op == "add") {
      value = a + b;
    } else if (op == "sub") {
      value = a - b;
    } else if (op == "div") {
      if (b == 0) return makeError("{} divides {} by 0", graph.labelOf(node), a);
      value = a / b;
    } else {
      value = a == b;
    }
    result.setInt(i, value);
  }
  return std::vector<Tensor>{std::move(result)};
}

}  // namespace smelt::onnximport
