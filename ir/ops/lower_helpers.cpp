// Lowering helpers: loop nests for reductions and boxes, accumulation types, elementwise wrappers.
#include "ir/ops/lower_helpers.h"

#include <algorithm>

namespace smelt::ops {

namespace {

std::vector<KValue> nest(KernelEmitter& e, std::span<const int64_t> extents, size_t level, std::vector<KValue>& index,
                         std::vector<KValue> carried, const BoxBody& body) {
  if (level == extents.size()) return body(index, carried);
  return e.loop(extents[level], std::move(carried), [&](KValue i, std::span<const KValue> c) {
    index[level] = i;
    return nest(e, extents, level + 1, index, std::vector<KValue>(c.begin(), c.end()), body);
  });
}

}  // namespace

std::vector<KValue> loopBox(KernelEmitter& e, std::span<const int64_t> extents, std::vector<KValue> init,
                            const BoxBody& body) {
  std::vector<KValue> index(extents.size());
  return nest(e, extents, 0, index, std::move(init), body);
}

std::vector<KValue> reduceOver(KernelEmitter& e, const Shape& in, std::span<const int64_t> axes,
                               std::span<const KValue> outIndex, bool keepdims, std::vector<KValue> init,
                               const ReduceBody& body) {
  std::vector<int64_t> extents;
  for (int64_t a : axes) extents.push_back(in[static_cast<size_t>(a)]);
  return loopBox(e, extents, std::move(init), [&](std::span<const KValue> inner, std::span<const KValue> carried) {
    std::vector<KValue> full(in.size());
    size_t o = 0, r = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
      if (reduced) {
        full[d] = inner[r++];
        if (keepdims) ++o;  // the kept 1 in the result's index
      } else {
        full[d] = outIndex[o++];
      }
    }
    return body(full, carried);
  });
}

GuardedIndex guardIndex(KernelEmitter& e, KValue index, int64_t size) {
  KValue inside = e.logicalAnd(e.ge(index, e.index(0)), e.lt(index, e.index(size)));
  return {e.select(inside, index, e.index(0)), inside};
}

KValue clampIndex(KernelEmitter& e, KValue index, int64_t lo, int64_t hi) {
  if (lo == hi) return e.index(lo);
  return e.binary(KBinary::Max, e.binary(KBinary::Min, index, e.index(hi)), e.index(lo));
}

DType accumulatorType(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16 ? DType::f32 : dtype; }

LowerFn elementwiseLowering(std::function<KValue(KernelEmitter&, std::span<const KValue>, const OpCall&)> f) {
  return [f = std::move(f)](LoweringContext& ctx) -> Expected<std::vector<KValue>> {
    std::vector<KValue> operands;
    for (size_t i = 0; i < ctx.call().numOperands(); ++i) operands.push_back(ctx.operandAt(i));
    return std::vector<KValue>{f(ctx.emit(), operands, ctx.call())};
  };
}

}  // namespace smelt::ops
