// Lowering helpers shared by every op's lowering facet: names, broadcasting and offsets.
#include "ir/lowering.h"

#include "ir/op_registry.h"

namespace smelt {

std::string_view kUnaryName(KUnary op) {
  static constexpr std::string_view names[] = {"neg",  "abs",   "exp",   "expm1", "log",        "log1p", "sqrt",
                                               "rsqrt", "sin",  "cos",   "tan",   "tanh",       "erf",   "sigmoid",
                                               "floor", "ceil", "round_even", "not", "isnan"};
  return names[static_cast<size_t>(op)];
}

std::string_view kBinaryName(KBinary op) {
  static constexpr std::string_view names[] = {"add", "sub", "mul", "div", "rem", "min", "max",
                                               "pow", "and", "or",  "xor", "shl", "shr", "lt",
                                               "le",  "gt",  "ge",  "eq",  "ne"};
  return names[static_cast<size_t>(op)];
}

KValue LoweringContext::operandAt(size_t i) {
  std::vector<KValue> at = broadcastIndex(emit(), index(), call().operand(i).shape);
  return operand(i, at);
}

std::vector<KValue> broadcastIndex(KernelEmitter& e, std::span<const KValue> out, const Shape& in) {
  std::vector<KValue> at;
  size_t pad = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) at.push_back(in[d] == 1 ? e.index(0) : out[d + pad]);
  return at;
}

KValue linearOffset(KernelEmitter& e, std::span<const KValue> index, const Shape& shape) {
  KValue offset = e.index(0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) offset = e.add(offset, stride == 1 ? index[d] : e.mul(index[d], e.index(stride)));
    stride *= shape[d];
  }
  return offset;
}

std::vector<KValue> unravel(KernelEmitter& e, KValue offset, const Shape& shape) {
  std::vector<KValue> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      index[d] = e.index(0);
      continue;
    }
    KValue extent = e.index(shape[d]);
    index[d] = d == 0 ? offset : e.rem(offset, extent);
    if (d > 0) offset = e.div(offset, extent);
  }
  return index;
}

}  // namespace smelt
