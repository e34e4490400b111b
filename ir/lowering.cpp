// Lowering helpers shared by every op's lowering facet: names, broadcasting and offsets.
#include "ir/lowering.h"

#include "ir/op_registry.h"

#include <algorithm>

namespace smelt {

std::string_view kUnaryName(KUnary op) {
  static constexpr std::string_view names[] = {"neg",  "abs",   "exp",   "expm1", "log",        "log1p", "sqrt",
                                               "rsqrt", "sin",  "cos",   "tan",   "tanh",       "erf",   "sigmoid",
                                               "floor", "ceil", "round_even", "not", "isnan"};
  return names[static_cast<size_t>(op)];
}

bool isCommutative(KBinary op) {
  return op == KBinary::Add || op == KBinary::Mul || op == KBinary::Min || op == KBinary::Max || op == KBinary::And ||
         op == KBinary::Or || op == KBinary::Xor || op == KBinary::Eq || op == KBinary::Ne;
}

std::string_view kBinaryName(KBinary op) {
  static constexpr std::string_view names[] = {"add", "sub", "mul", "div", "rem", "min", "max",
                                               "pow", "and", "or",  "xor", "shl", "shr", "lt",
                                               "le",  "gt",  "ge",  "eq",  "ne"};
  return names[static_cast<size_t>(op)];
}

KValue LoweringContext::operandAt(size_t i) {
  const Shape* out = call().results().empty() ? nullptr : &call().results()[0].shape;
  std::vector<KValue> at = broadcastIndex(emit(), index(), call().operand(i).shape, out);
  return operand(i, at);
}

std::vector<KValue> broadcastIndex(KernelEmitter& e, std::span<const KValue> out, const Shape& in,
                                   const Shape* outShape) {
  std::vector<KValue> at;
  size_t pad = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    // A dim of 1 the output shares is read at the output's index (0, but not folded: see linearOffset).
    const bool shared = outShape && outShape->size() == out.size() && (*outShape)[d + pad] == 1;
    at.push_back(in[d] == 1 && !shared ? e.index(0) : out[d + pad]);
  }
  return at;
}

KValue linearOffset(KernelEmitter& e, std::span<const KValue> index, const Shape& shape) {
  for (const KernelEmitter::Unraveled& u : e.unraveled) {
    if (u.shape != shape || u.index.size() != index.size()) continue;
    bool same = true;
    for (size_t d = 0; d < index.size(); ++d) same = same && u.index[d] == index[d].id;
    if (same) return u.offset;
  }
  // A dim of 1 adds its index too: 0 where the index is the constant (folded away), else the index of
  // a domain dim of 1, which a graph bound at N = 1 has where it has N at other sizes; kept, its
  // kernels are those of every other size but for their numbers (codegen/size_general.h).
  KValue offset = e.index(0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    offset = e.add(offset, stride == 1 ? index[d] : e.mul(index[d], e.index(stride)));
    stride *= shape[d];
  }
  return offset;
}

std::vector<KValue> unravel(KernelEmitter& e, KValue offset, const Shape& shape) {
  const KValue linear = offset;
  std::vector<KValue> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1 && d > 0) {
      index[d] = e.index(0);
      continue;
    }
    KValue extent = e.index(shape[d]);
    index[d] = d == 0 ? offset : e.rem(offset, extent);
    if (d > 0) offset = e.div(offset, extent);
  }
  // Not when every dim is 1: there every index is the constant 0, which any offset would match.
  if (std::any_of(shape.begin(), shape.end(), [](int64_t n) { return n != 1; })) {
    std::vector<int32_t> ids;
    for (const KValue& v : index) ids.push_back(v.id);
    e.unraveled.push_back({shape, std::move(ids), linear});
  }
  return index;
}

}  // namespace smelt
