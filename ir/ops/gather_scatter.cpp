// Reading and writing at computed positions: gather (numpy take), its adjoint scatter_add (numpy add.at),
// and scatter_reduce (mul, max, min). gather's reference copies raw element bytes, so it is exact for
// every dtype; the scatters combine in the dtype (integers wrap).
//   %0 = gather(%data, %idx) {axis = 1} : f32[3,2,2]          data: f32[3,4], idx: i64[2,2]
//   %1 = scatter_add(%x, %idx, %u) {axis = 1} : f32[3,4]      x: f32[3,4], idx: i64[2,2], u: f32[3,2,2]
// Gradients are built from these same ops: scatter_add for gather, gather for the scatters.
#include "ir/builder.h"
#include "ir/ops/elementwise.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace smelt {

namespace {

using namespace ops;

// --- gather ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferGather(const OpCall& call) {
  const TensorType& data = call.operand(0);
  SMELT_CHECK_OK(expectDType(call, 1, dtypes::kIndex));
  if (data.rank() == 0) return call.error("{} must have rank >= 1, got {}", operandName(call, 0), data.toString());
  auto axis = normalizeAxis(call.getInt("axis"), data.rank());
  if (!axis) return call.error("attribute 'axis': {}", axis.error().message());
  Shape shape(data.shape.begin(), data.shape.begin() + *axis);
  const Shape& indices = call.operand(1).shape;
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  SMELT_CHECK_OK(expectSaneShape(call, shape));
  return single(TensorType{data.dtype, shape});
}

// The indices with negative ones wrapped, all checked against axis `axis` of size `dim` first, so a
// bad one is reported before any data moves.
Expected<std::vector<int64_t>> checkedIndices(const OpCall& call, const Tensor& indices, int64_t axis, int64_t dim) {
  std::vector<int64_t> rows = indices.toInts();
  for (size_t i = 0; i < rows.size(); ++i) {
    int64_t r = rows[i] < 0 ? rows[i] + dim : rows[i];
    if (r < 0 || r >= dim) {
      return call.error("index {} (at flat position {} of indices) is out of range [{}, {}) for axis {} of size {}", rows[i],
                        i, -dim, dim, axis, dim);
    }
    rows[i] = r;
  }
  return rows;
}

Expected<std::vector<Tensor>> referenceGather(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& data = in[0];
  Tensor out(call.results()[0]);
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), data.rank()));
  int64_t dim = data.shape()[axis];
  int64_t outer = numElements(std::span(data.shape()).first(static_cast<size_t>(axis)));
  int64_t inner = numElements(std::span(data.shape()).subspan(static_cast<size_t>(axis) + 1));
  SMELT_TRY(std::vector<int64_t> rows, checkedIndices(call, in[1], axis, dim));
  size_t block = static_cast<size_t>(inner) * dtypeSize(data.dtype());
  std::byte* dst = out.raw();
  for (int64_t o = 0; o < outer && block > 0; ++o) {
    for (int64_t r : rows) {
      std::memcpy(dst, data.raw() + (o * dim + r) * block, block);
      dst += block;
    }
  }
  return std::vector<Tensor>{std::move(out)};
}


// --- scatter_add ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferScatterAdd(const OpCall& call) {
  const TensorType& x = call.operand(0);
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kNumeric));
  SMELT_CHECK_OK(expectDType(call, 1, dtypes::kIndex));
  SMELT_CHECK_OK(expectSameDType(call, 0, 2));
  if (x.rank() == 0) return call.error("{} must have rank >= 1, got {}", operandName(call, 0), x.toString());
  auto axis = normalizeAxis(call.getInt("axis"), x.rank());
  if (!axis) return call.error("attribute 'axis': {}", axis.error().message());
  // updates has the shape gather(x, indices) would have.
  Shape expected(x.shape.begin(), x.shape.begin() + *axis);
  const Shape& indices = call.operand(1).shape;
  expected.insert(expected.end(), indices.begin(), indices.end());
  expected.insert(expected.end(), x.shape.begin() + *axis + 1, x.shape.end());
  if (call.operand(2).shape != expected) {
    return call.error("{} must be {} (x.shape[:axis] + indices.shape + x.shape[axis+1:] for axis {}), got {}",
                      operandName(call, 2), shapeToString(expected), *axis, call.operand(2).toString());
  }
  return single(x);
}

// x with each updates element combined (`how`: add, mul, max, min) into the element gather(x, indices, axis)
// reads, in updates' row-major order, so repeated indices combine in order (numpy add.at), rounding to the dtype at
// each step; integers wrap for add and mul; max and min propagate NaN as the binary ops do. The references of
// scatter_add and scatter_reduce.
Expected<std::vector<Tensor>> scatterReference(const OpCall& call, std::span<const Tensor> in, const std::string& how) {
  const Tensor& x = in[0];
  const Tensor& updates = in[2];
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), x.rank()));
  int64_t dim = x.shape()[axis];
  int64_t outer = numElements(std::span(x.shape()).first(static_cast<size_t>(axis)));
  int64_t inner = numElements(std::span(x.shape()).subspan(static_cast<size_t>(axis) + 1));
  SMELT_TRY(std::vector<int64_t> rows, checkedIndices(call, in[1], axis, dim));
  Tensor out = x;
  int64_t count = static_cast<int64_t>(rows.size());
  auto combineFloat = [&](double a, double b) {
    if (how == "add") return a + b;
    if (how == "mul") return a * b;
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    return how == "max" ? (b > a ? b : a) : (b < a ? b : a);
  };
  dispatchDType(x.dtype(), [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      return;  // inference rejected bool
    } else {
      // Generic, so that it is only instantiated for the integer types (the branch below).
      auto combineInt = [&](auto a, auto b) -> decltype(a) {
        auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
        if (how == "add") return static_cast<decltype(a)>(ua + ub);  // wraps
        if (how == "mul") return static_cast<decltype(a)>(ua * ub);  // wraps
        return how == "max" ? (b > a ? b : a) : (b < a ? b : a);
      };
      T* dst = out.data<T>();
      const T* src = updates.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < count; ++i) {
          T* to = dst + (o * dim + rows[i]) * inner;
          const T* from = src + (o * count + i) * inner;
          for (int64_t k = 0; k < inner; ++k) {
            if constexpr (kIsFloatStorage<T>) {
              to[k] = fromDouble<T>(combineFloat(toDouble(to[k]), toDouble(from[k])));  // rounded to T at each step
            } else {
              to[k] = combineInt(to[k], from[k]);
            }
          }
        }
      }
    }
  });
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<Tensor>> referenceScatterAdd(const OpCall& call, std::span<const Tensor> in) {
  return scatterReference(call, in, "add");
}

// --- scatter_reduce -------------------------------------------------------------------------------

// scatter_add's shapes, and a reduction that is one of mul, max, min.
Expected<std::vector<TensorType>> inferScatterReduce(const OpCall& call) {
  const std::string& how = call.getString("reduction");
  if (how != "mul" && how != "max" && how != "min") {
    return call.error("attribute 'reduction' must be mul, max or min (scatter_add adds), got '{}'", how);
  }
  return inferScatterAdd(call);
}

Expected<std::vector<Tensor>> referenceScatterReduce(const OpCall& call, std::span<const Tensor> in) {
  return scatterReference(call, in, call.getString("reduction"));
}

// --- kernel lowerings (ir/lowering.h): each result element reads operand elements at computed indices

/// An index operand's element as a position along an axis of `dim` elements: negative ones wrap. The
/// references reject positions still outside [0, dim); a kernel cannot fail, so it reads a clamped one.
KValue wrappedIndex(KernelEmitter& e, KValue index, int64_t dim) {
  KValue i = e.cast(index, DType::i64);
  return e.select(e.lt(i, e.index(0)), e.add(i, e.index(dim)), i);
}

// gather: the result index is data's index with the axis dim replaced by indices' dims; the index
// read there (wrapped, clamped: see wrappedIndex) picks the data element.
Expected<std::vector<KValue>> lowerGather(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const OpCall& call = ctx.call();
  const Shape& data = call.operand(0).shape;
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), static_cast<int64_t>(data.size())));
  auto a = static_cast<size_t>(axis);
  int64_t dim = data[a];
  // Nonempty indices into an empty axis: the reference rejects every one, and there is nothing to read.
  if (dim == 0) return std::vector<KValue>{e.zero(call.operand(0).dtype)};
  std::span<const KValue> out = ctx.index();
  size_t indexRank = call.operand(1).shape.size();
  KValue row = clampIndex(e, wrappedIndex(e, ctx.operand(1, out.subspan(a, indexRank)), dim), 0, dim - 1);
  std::vector<KValue> at(out.begin(), out.begin() + axis);
  at.push_back(row);
  at.insert(at.end(), out.begin() + axis + static_cast<std::ptrdiff_t>(indexRank), out.end());
  return std::vector<KValue>{ctx.operand(0, at)};
}

// scatter_add and scatter_reduce, gathered: x's element combined (`combine`: add, mul, max, min) with every update
// whose wrapped index is this element's position along the axis, in updates' row-major order (the reference's
// order, rounding to the dtype at each step as it does; integers wrap). Out-of-range indices (rejected by the
// reference) match nothing. Quadratic: each result element loops over every index; a real scatter is later work.
Expected<std::vector<KValue>> lowerScatterWith(LoweringContext& ctx, KBinary combine) {
  KernelEmitter& e = ctx.emit();
  const OpCall& call = ctx.call();
  const Shape& x = call.operand(0).shape;
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), static_cast<int64_t>(x.size())));
  auto a = static_cast<size_t>(axis);
  std::span<const KValue> out = ctx.index();
  KValue position = out[a];
  const Shape& indices = call.operand(1).shape;
  return loopBox(e, indices, {ctx.operand(0, out)}, [&](std::span<const KValue> i, std::span<const KValue> acc) {
    KValue hit = e.binary(KBinary::Eq, wrappedIndex(e, ctx.operand(1, i), x[a]), position);
    std::vector<KValue> at(out.begin(), out.begin() + axis);
    at.insert(at.end(), i.begin(), i.end());
    at.insert(at.end(), out.begin() + axis + 1, out.end());
    return std::vector<KValue>{e.select(hit, e.binary(combine, acc[0], ctx.operand(2, at)), acc[0])};
  });
}

Expected<std::vector<KValue>> lowerScatterAdd(LoweringContext& ctx) { return lowerScatterWith(ctx, KBinary::Add); }

Expected<std::vector<KValue>> lowerScatterReduce(LoweringContext& ctx) {
  const std::string& how = ctx.call().getString("reduction");
  return lowerScatterWith(ctx, how == "mul" ? KBinary::Mul : how == "max" ? KBinary::Max : KBinary::Min);
}

// --- gradients ------------------------------------------------------------------------------------

// gather's adjoint: dy added into zeros at the positions gather read.
std::vector<Value*> gatherGradient(Builder& b, const GradientContext& c) {
  Value* zeros = b.zerosLike(c.x(0));
  return {b.op("scatter_add", {zeros, c.x(1), c.dy()}, {{"axis", c.getInt("axis")}}), nullptr};
}

// scatter_add is linear: x passes dy through, updates read dy back with gather.
std::vector<Value*> scatterAddGradient(Builder& b, const GradientContext& c) {
  return {c.dy(), nullptr, b.op("gather", {c.dy(), c.x(1)}, {{"axis", c.getInt("axis")}})};
}

// scatter_reduce. max and min: dy goes to the values that won, x's element or the updates equal to the result,
// split evenly among tied winners (torch.scatter_reduce's amax/amin). mul: the result over the operand, as
// d(prod)/d(factor) is the product of the others (an operand of 0 gives a non-finite gradient, where
// torch.scatter_reduce's prod handles a single zero exactly).
std::vector<Value*> scatterReduceGradient(Builder& b, const GradientContext& c) {
  AttrMap axis{{"axis", c.getInt("axis")}};
  Value *x = c.x(0), *indices = c.x(1), *updates = c.x(2), *y = c.y(), *dy = c.dy();
  auto gather = [&](Value* v) { return b.op("gather", {v, indices}, axis); };
  if (c.getString("reduction") == "mul") {
    Value* dyY = b.mul(dy, y);
    return {b.div(dyY, x), nullptr, b.div(gather(dyY), updates)};
  }
  Value* wonX = b.cast(b.op("eq", {x, y}), x->dtype());
  Value* wonU = b.cast(b.op("eq", {updates, gather(y)}), x->dtype());
  Value* winners = b.op("scatter_add", {wonX, indices, wonU}, axis);
  // At least one winner unless the result is NaN (nothing compares equal): dy / 1 then, times no winner.
  Value* share = b.div(dy, b.op("max", {winners, b.scalarLike(1.0, winners)}));
  return {b.mul(share, wonX), nullptr, b.mul(gather(share), wonU)};
}

// The facet of gather and the scatters (OpDef::checked): operand 1 holds positions along `axis` of operand 0, each
// in [-dim, dim). A symbolic extent bounds nothing until it is bound (the executable checks bound graphs).
CheckedOperand indicesAlongAxis() {
  return CheckedOperand{
      .operand = 1,
      .range = [](const OpCall& call) {
        const Shape& data = call.operand(0).shape;
        int64_t axis = call.getInt("axis");
        if (axis < 0) axis += static_cast<int64_t>(data.size());
        const int64_t dim = data.at(static_cast<size_t>(axis));
        if (isSymbolic(dim)) return OperandRange{INT64_MIN, INT64_MAX, "unbounded"};
        return OperandRange{-dim, dim, fmt::format("an index is out of range [{}, {}) for axis {} of size {}", -dim,
                                                   dim, axis, dim)};
      },
  };
}

}  // namespace

void registerGatherScatterOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "gather",
      .summary = "numpy take along `axis`: result data[:axis] + indices.shape + data[axis+1:].",
      .operands = {{"data"}, {"indices"}},
      .attrs = {{"axis", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferGather,
      .symbolicDims = true,
      .reference = referenceGather,
      .example = R"(graph @t(%x: $T[3,4]) {
  %i = constant() {value = dense<i64[2,2]> [1, -1, 0, 2]} : i64[2,2]
  %0 = gather(%x, %i) {axis = 1} : $T[3,2,2]
  %j = constant() {value = dense<i32[3]> [0, -1, 0]} : i32[3]
  %1 = gather(%x, %j) : $T[3,4]
  return r = %0, repeated = %1
})",
      .gradient = gatherGradient,
      .lower = lowerGather,
      .checked = indicesAlongAxis(),
  });
  registry.add(OpDef{
      .name = "scatter_add",
      .summary = "x plus each updates element added where gather(x, indices, axis) reads it (numpy add.at).",
      .operands = {{"x"}, {"indices"}, {"updates"}},
      .attrs = {{"axis", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kNumeric,
      .infer = inferScatterAdd,
      .symbolicDims = true,
      .reference = referenceScatterAdd,
      .example = R"(graph @t(%x: $T[3,4], %u: $T[3,2,2], %v: $T[4]) {
  %i = constant() {value = dense<i64[2,2]> [1, -1, 0, 1]} : i64[2,2]
  %0 = scatter_add(%x, %i, %u) {axis = 1} : $T[3,4]
  %j = constant() {value = dense<i32[]> [-1]} : i32[]
  %1 = scatter_add(%x, %j, %v) {axis = -2} : $T[3,4]
  return r = %0, scalar_index = %1
})",
      .gradient = scatterAddGradient,
      .lower = lowerScatterAdd,
      .checked = indicesAlongAxis(),
  });
  registry.add(OpDef{
      .name = "scatter_reduce",
      .summary = "x with each updates element multiplied into (mul), or the larger (max) or smaller (min) of it and "
                 "the element gather(x, indices, axis) reads, in updates' order (ONNX ScatterND/ScatterElements' "
                 "reductions; add is scatter_add).",
      .operands = {{"x"}, {"indices"}, {"updates"}},
      .attrs = {{"reduction", AttrKind::String, std::nullopt}, {"axis", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kNumeric,
      .infer = inferScatterReduce,
      .symbolicDims = true,
      .reference = referenceScatterReduce,
      .example = R"(graph @t(%x: $T[3,4], %u: $T[3,2,2], %v: $T[4]) {
  %i = constant() {value = dense<i64[2,2]> [1, -1, 0, 1]} : i64[2,2]
  %0 = scatter_reduce(%x, %i, %u) {reduction = "mul", axis = 1} : $T[3,4]
  %1 = scatter_reduce(%x, %i, %u) {reduction = "max", axis = 1} : $T[3,4]
  %j = constant() {value = dense<i32[]> [-1]} : i32[]
  %2 = scatter_reduce(%x, %j, %v) {reduction = "min", axis = -2} : $T[3,4]
  return mul = %0, max = %1, min = %2
})",
      .gradient = scatterReduceGradient,
      .lower = lowerScatterReduce,
      .checked = indicesAlongAxis(),
  });
}

}  // namespace smelt