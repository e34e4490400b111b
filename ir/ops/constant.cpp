// constant: a tensor literal as a value; range: start, start + delta, ... over a length that may be
// a symbolic dimension (ONNX Range up to a shape's extent: positions 0 .. N-1 for a batch or sequence
// of N), computed per element since its values are known only once N is.
//   %0 = constant() {value = dense<f32[2]> [1.5, -2]} : f32[2]
//   %1 = range() {start = dense<i64[]> [0], delta = dense<i64[]> [1], shape = [N]} : i64[N]
#include "ir/lowering.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

namespace smelt {

namespace {

Expected<std::vector<TensorType>> inferRange(const OpCall& call) {
  const Tensor& start = call.getTensor("start");
  const Tensor& delta = call.getTensor("delta");
  if (start.numel() != 1 || delta.numel() != 1 || start.rank() != 0 || delta.rank() != 0) {
    return call.error("start and delta must be scalars, got {} and {}", start.type().toString(),
                      delta.type().toString());
  }
  if (start.dtype() != delta.dtype()) {
    return call.error("start is {} and delta {}: they must have one dtype", dtypeName(start.dtype()),
                      dtypeName(delta.dtype()));
  }
  const std::vector<int64_t>& shape = call.getInts("shape");
  if (shape.size() != 1) {
    return call.error("attribute 'shape' must have one entry (the length), got {}", shapeToString(shape));
  }
  if (shape[0] < 0 && !isSymbolic(shape[0])) return call.error("attribute 'shape' has negative length {}", shape[0]);
  SMELT_CHECK_OK(ops::expectSaneShape(call, shape));
  return ops::single(TensorType{start.dtype(), shape});
}

Expected<std::vector<Tensor>> referenceRange(const OpCall& call, std::span<const Tensor>) {
  const Tensor& start = call.getTensor("start");
  const Tensor& delta = call.getTensor("delta");
  Tensor out(TensorType{start.dtype(), call.getInts("shape")});
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (isFloat(start.dtype())) {
      out.setDouble(i, start.getDouble(0) + static_cast<double>(i) * delta.getDouble(0));
    } else {
      // Modulo 2^64, then wrapped to the dtype's width, as the kernels' integer arithmetic.
      out.setInt(i, static_cast<int64_t>(static_cast<uint64_t>(start.getInt(0)) +
                                         static_cast<uint64_t>(i) * static_cast<uint64_t>(delta.getInt(0))));
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<KValue>> lowerRange(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const Tensor& start = ctx.call().getTensor("start");
  const Tensor& delta = ctx.call().getTensor("delta");
  const DType dt = start.dtype();
  auto literal = [&](const Tensor& t) {
    return isFloat(dt) ? e.constant(t.getDouble(0), dt) : e.intConstant(t.getInt(0), dt);
  };
  KValue i = e.cast(ctx.index()[0], dt);
  return std::vector<KValue>{e.add(literal(start), e.mul(i, literal(delta)))};
}

}  // namespace

void registerConstantOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "constant",
      .summary = "A tensor literal.",
      .operands = {},
      .attrs = {{"value", AttrKind::Tensor, std::nullopt}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kAll,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        return ops::single(call.getTensor("value").type());
      },
      .reference = [](const OpCall& call, std::span<const Tensor>) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{call.getTensor("value")};
      },
      .example = R"(graph @t() {
  %0 = constant() {value = dense<$T[2,2]> [1, 0, 1, 1]} : $T[2,2]
  return r = %0
})",
      // A literal computes nothing.
      .flops = [](const OpCall&) { return int64_t{0}; },
  });
  registry.add(OpDef{
      .name = "range",
      .summary = "start + i * delta for i < the length in `shape` (one entry, may be a symbolic dimension).",
      .operands = {},
      .attrs = {{"start", AttrKind::Tensor, std::nullopt},
                {"delta", AttrKind::Tensor, std::nullopt},
                {"shape", AttrKind::Ints, std::nullopt}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kNumeric,
      .infer = inferRange,
      .symbolicDims = true,
      .reference = referenceRange,
      .example = R"(graph @t() {
  %0 = range() {start = dense<$T[]> [3], delta = dense<$T[]> [2], shape = [5]} : $T[5]
  return r = %0
})",
      .lower = lowerRange,
  });
}

}  // namespace smelt
