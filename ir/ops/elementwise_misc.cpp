// Elementwise ops that do not fit a unary/binary row: where (three operands), clip (bounds as float
// attributes, exact on integers) and cast (the result dtype comes from an attribute).
#include "ir/ops/elementwise.h"
#include "ir/builder.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cmath>
#include <limits>

namespace smelt {

namespace {
using namespace ops;

Expected<std::vector<TensorType>> inferWhere(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kBool));
  SMELT_CHECK_OK(expectDType(call, 1, dtypes::kAll));
  SMELT_CHECK_OK(expectSameDType(call, 1, 2));
  auto xy = broadcastShapes(call.operand(1).shape, call.operand(2).shape);
  if (!xy) return call.error("{}", xy.error().message());
  auto shape = broadcastShapes(call.operand(0).shape, *xy);
  if (!shape) return call.error("{}", shape.error().message());
  return single(TensorType{call.operand(1).dtype, *shape});
}

Expected<std::vector<Tensor>> referenceWhere(const OpCall& call, std::span<const Tensor> in) {
  Tensor out(call.results()[0]);
  std::vector<int64_t> ic = broadcastIndexMap(in[0].shape(), out.shape());
  std::vector<int64_t> ix = broadcastIndexMap(in[1].shape(), out.shape());
  std::vector<int64_t> iy = broadcastIndexMap(in[2].shape(), out.shape());
  const bool* cond = in[0].data<bool>();
  // Elements are copied as stored, so no value (NaN payload, u64 past 2^53) is changed.
  dispatchDType(out.dtype(), [&]<typename T>(TypeTag<T>) {
    const T* x = in[1].data<T>();
    const T* y = in[2].data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = cond[ic[i]] ? x[ix[i]] : y[iy[i]];
  });
  return std::vector<Tensor>{std::move(out)};
}

// The integer bound that clipping an integer of type T against `bound` produces: the bound rounded
// toward zero (as min(max(x, min), max) converted to T would), saturated to T's range so a bound
// past the dtype's range clamps instead of wrapping.
template <typename T>
T integerBound(double bound) {
  if (bound <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (bound >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(bound);
}

Expected<std::vector<Tensor>> referenceClip(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  Tensor out(x.type());
  double lo = call.getFloat("min");
  double hi = call.getFloat("max");
  dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if constexpr (kIsFloatStorage<T>) {
        // NaN in x fails both tests and propagates; a NaN bound never applies.
        double v = toDouble(src[i]);
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        dst[i] = fromDouble<T>(v);
      } else {
        // Compare in double but keep in-range values exact (i64/u64 past 2^53 are not rounded).
        T v = src[i];
        if (toDouble(v) < lo) v = integerBound<T>(lo);
        if (toDouble(v) > hi) v = integerBound<T>(hi);
        dst[i] = v;
      }
    }
  });
  return std::vector<Tensor>{std::move(out)};
}

// clip in a kernel, as the reference: floats compare and clamp in their dtype (NaN passes); integers
// compare in f64 and clamp to the bound rounded toward zero and saturated to the dtype.
KValue lowerClip(KernelEmitter& e, std::span<const KValue> operands, const OpCall& call) {
  KValue x = operands[0];
  double lo = call.getFloat("min"), hi = call.getFloat("max");
  if (isFloat(x.dtype)) {
    KValue low = e.constant(lo, x.dtype), high = e.constant(hi, x.dtype);
    KValue v = e.select(e.lt(x, low), low, x);
    return e.select(e.binary(KBinary::Gt, v, high), high, v);
  }
  auto bound = [&](double b) {
    return dispatchDType(x.dtype, [&]<typename T>(TypeTag<T>) -> KValue {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return e.intConstant(static_cast<int64_t>(integerBound<T>(b)), x.dtype);
      } else {
        return e.zero(x.dtype);
      }
    });
  };
  KValue v = e.select(e.lt(e.cast(x, DType::f64), e.constant(lo, DType::f64)), bound(lo), x);
  return e.select(e.binary(KBinary::Gt, e.cast(v, DType::f64), e.constant(hi, DType::f64)), bound(hi), v);
}

Expected<std::vector<TensorType>> inferCast(const OpCall& call) {
  const std::string& to = call.getString("to");
  auto dtype = parseDType(to);
  if (!dtype) return call.error("attribute 'to' must name a dtype (f16, bf16, f32, f64, i8..i64, u8..u64, bool), got \"{}\"", to);
  return single(TensorType{*dtype, call.operand(0).shape});
}

// One element converted from S to D.
template <typename D, typename S>
D castValue(S value) {
  if constexpr (std::is_same_v<D, bool>) {
    return toDouble(value) != 0.0;  // NaN != 0, so NaN -> true (numpy)
  } else if constexpr (kIsFloatStorage<S> || kIsFloatStorage<D>) {
    // Through double: exact for every float source; fromDouble truncates toward zero and maps NaN to 0.
    return fromDouble<D>(toDouble(value));
  } else {
    // Integer (or bool) to integer: a direct conversion, which C++20 defines as wrapping mod 2^bits.
    return static_cast<D>(value);
  }
}

Expected<std::vector<Tensor>> referenceCast(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  Tensor out(call.results()[0]);
  dispatchDType(x.dtype(), [&]<typename S>(TypeTag<S>) {
    dispatchDType(out.dtype(), [&]<typename D>(TypeTag<D>) {
      const S* src = x.data<S>();
      D* dst = out.data<D>();
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] = castValue<D>(src[i]);
    });
  });
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void registerElementwiseMiscOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "where",
      .summary = "cond ? x : y, with three-way broadcasting",
      .operands = {{"cond"}, {"x"}, {"y"}},
      .attrs = {},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kAll,
      .infer = inferWhere,
      .symbolicDims = true,
      .reference = referenceWhere,
      .example = R"(graph @t(%c: bool[2,1], %x: $T[3], %y: $T[1,3]) {
  %0 = where(%c, %x, %y) : $T[2,3]
  return r = %0
})",
      // The condition takes no gradient; each branch gets dy where it was chosen.
      .gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
        Value* zero = b.scalarLike(0.0, c.dy());
        Value* dx = b.sumToShape(b.where(c.x(0), c.dy(), zero), c.x(1)->shape());
        Value* dyv = b.sumToShape(b.where(c.x(0), zero, c.dy()), c.x(2)->shape());
        return {nullptr, dx, dyv};
      },
      .lower = elementwiseLowering([](KernelEmitter& e, std::span<const KValue> x, const OpCall&) {
        return e.select(x[0], x[1], x[2]);
      }),
  });
  registry.add(OpDef{
      .name = "clip",
      .summary = "min(max(x, min), max)",
      .operands = {{"x"}},
      .attrs = {{"min", AttrKind::Float, -std::numeric_limits<double>::infinity()},
                {"max", AttrKind::Float, std::numeric_limits<double>::infinity()}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kNumeric,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        SMELT_CHECK_OK(expectDType(call, 0, dtypes::kNumeric));
        return single(call.operand(0));
      },
      .symbolicDims = true,
      .reference = referenceClip,
      .example = R"(graph @t(%x: $T[2,3]) {
  %0 = clip(%x) {max = 3.5, min = 1.5} : $T[2,3]
  %1 = clip(%x) {min = -1} : $T[2,3]
  return a = %0, b = %1
})",
      // PyTorch's clamp: the gradient passes where min <= x <= max, bounds included.
      .gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
        Value* x = c.x(0);
        Value* inside = b.op("and", {b.op("ge", {x, b.scalarLike(c.getFloat("min"), x)}),
                                     b.op("le", {x, b.scalarLike(c.getFloat("max"), x)})});
        return {b.where(inside, c.dy(), b.scalarLike(0.0, x))};
      },
      .lower = elementwiseLowering(lowerClip),
  });
  registry.add(OpDef{
      .name = "cast",
      .summary = "converts to the dtype named by `to`",
      .operands = {{"x"}},
      .attrs = {{"to", AttrKind::String, std::nullopt}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kAll,
      .infer = inferCast,
      .symbolicDims = true,
      .reference = referenceCast,
      .example = R"(graph @t(%x: $T[2,3]) {
  %0 = cast(%x) {to = "f32"} : f32[2,3]
  %1 = cast(%x) {to = "i8"} : i8[2,3]
  %2 = cast(%x) {to = "u64"} : u64[2,3]
  %3 = cast(%x) {to = "bool"} : bool[2,3]
  %4 = cast(%x) {to = "bf16"} : bf16[2,3]
  return a = %0, b = %1, c = %2, d = %3, e = %4
})",
      // Float to float casts pass the gradient back in the source dtype; integers take none.
      .gradient = [](Builder& b, const GradientContext& c) -> std::vector<Value*> {
        if (!isFloat(c.x(0)->dtype()) || !isFloat(c.y()->dtype())) return {nullptr};
        return {b.cast(c.dy(), c.x(0)->dtype())};
      },
      .lower = elementwiseLowering([](KernelEmitter& e, std::span<const KValue> x, const OpCall& call) {
        return e.cast(x[0], call.results()[0].dtype);
      }),
  });
  registry.add(OpDef{
      .name = "stop_gradient",
      .summary = "the identity, through which no gradient flows",
      .operands = {{"x"}},
      .attrs = {},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kAll,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> { return single(call.operand(0)); },
      .symbolicDims = true,
      .reference = [](const OpCall&, std::span<const Tensor> in) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{in[0]};
      },
      .example = R"(graph @t(%x: $T[2,3]) {
  %0 = stop_gradient(%x) : $T[2,3]
  return r = %0
})",
      .gradient = [](Builder&, const GradientContext&) -> std::vector<Value*> { return {nullptr}; },
      .lower = elementwiseLowering([](KernelEmitter&, std::span<const KValue> x, const OpCall&) { return x[0]; }),
  });
  registry.add(OpDef{
      .name = "check_range",
      .summary = "the identity on integers that must lie in [lo, hi) (a loss's class labels): a value outside is an "
                 "error naming the node and `what`, in the reference and, through a flag, on every backend",
      .operands = {{"x"}},
      .attrs = {{"lo", AttrKind::Int, std::nullopt},
                {"hi", AttrKind::Int, std::nullopt},
                {"what", AttrKind::String, Attribute{std::string()}}},
      .fusion = FusionKind::Elementwise,
      .dtypes = dtypes::kInteger,
      .infer = [](const OpCall& call) -> Expected<std::vector<TensorType>> {
        SMELT_CHECK_OK(expectDType(call, 0, dtypes::kInteger));
        if (call.getInt("lo") >= call.getInt("hi")) {
          return call.error("the range [{}, {}) is empty", call.getInt("lo"), call.getInt("hi"));
        }
        return single(call.operand(0));
      },
      .symbolicDims = true,
      .reference = [](const OpCall& call, std::span<const Tensor> in) -> Expected<std::vector<Tensor>> {
        const int64_t lo = call.getInt("lo"), hi = call.getInt("hi");
        const bool unsignedValues = isUnsignedInt(in[0].dtype());
        for (int64_t i = 0; i < in[0].numel(); ++i) {
          const int64_t v = in[0].getInt(i);
          // A u64 above INT64_MAX reads negative: outside any range a label has.
          if (v < lo || v >= hi || (unsignedValues && v < 0)) {
            const std::string& what = call.getString("what");
            return call.error("element {} is {}, outside [{}, {}){}", i, v, lo, hi, what.empty() ? "" : " (" + what + ")");
          }
        }
        return std::vector<Tensor>{in[0]};
      },
      .example = R"(graph @t(%x: $T[2,3]) {
  %0 = check_range(%x) {lo = -10, hi = 10, what = "small numbers"} : $T[2,3]
  return r = %0
})",
      .lower = elementwiseLowering([](KernelEmitter&, std::span<const KValue> x, const OpCall&) { return x[0]; }),
      .checked =
          CheckedOperand{
              .operand = 0,
              .range =
                  [](const OpCall& call) {
                    const std::string& what = call.getString("what");
                    return OperandRange{call.getInt("lo"), call.getInt("hi"),
                                        fmt::format("a value is outside [{}, {}){}", call.getInt("lo"), call.getInt("hi"),
                                                    what.empty() ? "" : " (" + what + ")")};
                  },
          },
  });
}

}  // namespace smelt
