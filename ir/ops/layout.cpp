// Layout ops that move or reinterpret data without arithmetic: transpose, reshape, flatten, squeeze,
// unsqueeze, expand. References copy raw element bytes, so they are exact for every dtype (u64 past
// 2^53, NaN payloads).
//   %0 = transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3]        x: f32[2,3,4]
//   %1 = reshape(%x) {shape = [-1, 4]} : f32[6,4]
#include "ir/builder.h"
#include "ir/ops/lower_helpers.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <algorithm>
#include <cstring>

namespace smelt {

namespace {

using namespace ops;

// out[i] = in[map[i]], element by element as raw bytes.
Tensor gatherElements(const Tensor& in, const TensorType& resultType, std::span<const int64_t> map) {
  Tensor out(resultType);
  size_t size = dtypeSize(in.dtype());
  for (size_t i = 0; i < map.size(); ++i) std::memcpy(out.raw() + i * size, in.raw() + map[i] * size, size);
  return out;
}

// Ops whose result holds x's bytes unchanged under a new shape.
Expected<std::vector<Tensor>> referenceSameBytes(const OpCall& call, std::span<const Tensor> in) {
  return std::vector<Tensor>{in[0].reshaped(call.results()[0].shape)};
}

// --- transpose ------------------------------------------------------------------------------------

Expected<std::vector<int64_t>> transposePerm(const OpCall& call) {
  int64_t rank = call.operand(0).rank();
  std::vector<int64_t> perm = call.getInts("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool isPermutation = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t i = 0; isPermutation && i < rank; ++i) isPermutation = sorted[i] == i;
  if (!isPermutation) {
    return call.error("attribute 'perm' must be a permutation of 0..{} for {}, got {}", rank - 1,
                      call.operand(0).toString(), shapeToString(perm));
  }
  return perm;
}

Expected<std::vector<TensorType>> inferTranspose(const OpCall& call) {
  SMELT_TRY(std::vector<int64_t> perm, transposePerm(call));
  const TensorType& x = call.operand(0);
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[p]);
  return single(TensorType{x.dtype, shape});
}

Expected<std::vector<Tensor>> referenceTranspose(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(std::vector<int64_t> perm, transposePerm(call));
  const TensorType& resultType = call.results()[0];
  std::vector<int64_t> inStrides = contiguousStrides(in[0].shape());
  // Result dim d walks input dim perm[d].
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(resultType.numel()));
  forEachIndex(resultType.shape, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * inStrides[perm[d]];
    map.push_back(offset);
  });
  return std::vector<Tensor>{gatherElements(in[0], resultType, map)};
}

// --- reshape ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferReshape(const OpCall& call) {
  const TensorType& x = call.operand(0);
  Shape shape = call.getInts("shape");
  int64_t inferred = -1;  // position of the -1 entry
  int64_t known = 1;      // the product of the other entries: a count, or symbols times a count
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) return call.error("attribute 'shape' {} has more than one -1", shapeToString(shape));
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] < 0 && !isSymbolic(shape[i])) {
      return call.error("attribute 'shape' {} has entry {}; entries must be non-negative or a single -1",
                        shapeToString(shape), shape[i]);
    }
    Expected<int64_t> product = multiplyExtents(known, shape[i]);
    if (!product.ok()) return call.error("attribute 'shape' {} has too many elements", shapeToString(shape));
    known = *product;
  }
  // x's elements, symbols times a count when x's shape is symbolic: the target must hold as many
  // ([N,3,4] to [-1,12] is [N,12]; [N,12,8] to [12*N,-1] is [12*N,8]; [N,6] to [-1,4] is an error,
  // 6*N/4 being no count times symbols).
  int64_t total = 1;
  for (int64_t d : x.shape) total = multiplyExtents(total, d).value();  // x's own limits bound it
  if (inferred >= 0) {
    // A 0 entry is a literal empty dimension (ONNX allowzero), which leaves -1 undetermined.
    if (known == 0) {
      return call.error("attribute 'shape' {} has a 0 entry, so its -1 cannot be inferred", shapeToString(shape));
    }
    std::optional<int64_t> rest = divideExtents(total, known);
    if (!rest) {
      return call.error("cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", x.toString(),
                        extentToString(total), shapeToString(shape), extentToString(total), extentToString(known));
    }
    shape[static_cast<size_t>(inferred)] = *rest;
  } else if (known != total) {
    return call.error("cannot reshape {} ({} elements) to {} ({} elements)", x.toString(), extentToString(total),
                      shapeToString(shape), extentToString(known));
  }
  SMELT_CHECK_OK(expectSaneShape(call, shape));
  return single(TensorType{x.dtype, shape});
}

// --- flatten ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferFlatten(const OpCall& call) {
  const TensorType& x = call.operand(0);
  int64_t axis = call.getInt("axis");
  // Like ONNX Flatten, axis == rank is allowed (result [numel, 1]), so the range is [-rank, rank].
  int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a > x.rank()) {
    return call.error("attribute 'axis' {} is out of range [{}, {}] for {}", axis, -x.rank(), x.rank(), x.toString());
  }
  std::span<const int64_t> head = std::span(x.shape).first(static_cast<size_t>(a));
  std::span<const int64_t> tail = std::span(x.shape).subspan(static_cast<size_t>(a));
  // Symbolic extents multiply into products ([N,512,1,1] to [N,512]; [N,4,6] at 2 to [4*N,6]).
  auto extentOf = [&](std::span<const int64_t> dims) -> Expected<int64_t> {
    int64_t product = 1;
    for (int64_t d : dims) {
      SMELT_TRY(product, multiplyExtents(product, d));
    }
    return product;
  };
  SMELT_TRY(int64_t outer, extentOf(head));
  SMELT_TRY(int64_t inner, extentOf(tail));
  return single(TensorType{x.dtype, {outer, inner}});
}

// --- squeeze ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferSqueeze(const OpCall& call) {
  const TensorType& x = call.operand(0);
  const std::vector<int64_t>& listed = call.getInts("axes");
  std::vector<bool> drop(x.shape.size(), false);
  if (listed.empty()) {
    // A symbolic extent may be 1 at run time, and the result's rank would depend on it.
    if (!x.isStatic()) return call.error("squeeze of {} needs its axes: a symbolic extent may be 1", x.toString());
    for (size_t d = 0; d < x.shape.size(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    SMELT_TRY(std::vector<int64_t> axes, normalizeAxes(call, listed, x.rank()));
    for (int64_t a : axes) {
      if (x.shape[a] != 1) return call.error("cannot squeeze axis {} of {}: its size is {}, not 1", a, x.toString(), x.shape[a]);
      drop[a] = true;
    }
  }
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!drop[d]) shape.push_back(x.shape[d]);
  }
  return single(TensorType{x.dtype, shape});
}

// --- unsqueeze ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferUnsqueeze(const OpCall& call) {
  const TensorType& x = call.operand(0);
  const std::vector<int64_t>& listed = call.getInts("axes");
  // Axes index the result, whose rank is known before the axes are placed.
  int64_t rank = x.rank() + static_cast<int64_t>(listed.size());
  if (rank > 16) return call.error("result would have rank {}; at most 16 is supported", rank);
  SMELT_TRY(std::vector<int64_t> axes, normalizeAxes(call, listed, rank));
  Shape shape(static_cast<size_t>(rank), 1);
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) inserted[a] = true;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (!inserted[d]) shape[d] = x.shape[next++];
  }
  return single(TensorType{x.dtype, shape});
}

// --- expand ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferExpand(const OpCall& call) {
  const TensorType& x = call.operand(0);
  const std::vector<int64_t>& target = call.getInts("shape");
  if (target.size() > 16) return call.error("attribute 'shape' has {} entries; at most 16 are supported", target.size());
  for (int64_t d : target) {
    // A symbolic dimension (ir/type.h) is an entry too: the gradient of a reduction over a symbolic
    // batch expands back to it; binding the graph (bindDims) binds it here as well.
    if (d < 0 && !isSymbolic(d)) {
      return call.error("attribute 'shape' {} has negative entry {}", shapeToString(target), d);
    }
  }
  auto shape = broadcastShapes(x.shape, target);
  if (!shape) return call.error("cannot expand {} to {}: {}", x.toString(), shapeToString(target), shape.error().message());
  SMELT_CHECK_OK(expectSaneShape(call, *shape));
  return single(TensorType{x.dtype, *shape});
}

Expected<std::vector<Tensor>> referenceExpand(const OpCall& call, std::span<const Tensor> in) {
  const TensorType& resultType = call.results()[0];
  std::vector<int64_t> map = broadcastIndexMap(in[0].shape(), resultType.shape);
  return std::vector<Tensor>{gatherElements(in[0], resultType, map)};
}

std::string unaryExample(std::string_view inType, std::string_view op, std::string_view attrs, std::string_view outType) {
  return fmt::format("graph @t(%x: $T{}) {{\n  %0 = {}(%x) {{{}}} : $T{}\n  return r = %0\n}}", inType, op, attrs,
                     outType);
}

// --- gradients ------------------------------------------------------------------------------------

// transpose: dy transposed by the inverse permutation.
std::vector<Value*> transposeGradient(Builder& b, const GradientContext& c) {
  std::vector<int64_t> perm = c.getInts("perm");
  int64_t rank = c.x(0)->type().rank();
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  return {b.transpose(c.dy(), inverse)};
}

// reshape, flatten, squeeze, unsqueeze: dy reshaped back to x's shape.
std::vector<Value*> reshapeGradient(Builder& b, const GradientContext& c) { return {b.reshape(c.dy(), c.x(0)->shape())}; }

// expand: dy summed over the broadcast dims.
std::vector<Value*> expandGradient(Builder& b, const GradientContext& c) { return {b.sumToShape(c.dy(), c.x(0)->shape())}; }

// --- kernel lowerings (ir/lowering.h): each result element reads one operand element ---

// transpose: result dim i is x's dim perm[i], so x's index has out[i] at position perm[i].
Expected<std::vector<KValue>> lowerTranspose(LoweringContext& ctx) {
  const Shape& in = ctx.call().operand(0).shape;
  std::vector<int64_t> perm = ctx.call().getInts("perm");
  if (perm.empty())
    for (int64_t d = static_cast<int64_t>(in.size()); d-- > 0;) perm.push_back(d);
  std::vector<KValue> at(in.size());
  for (size_t i = 0; i < perm.size(); ++i) at[static_cast<size_t>(perm[i])] = ctx.index()[i];
  return std::vector<KValue>{ctx.operand(0, at)};
}

// reshape, flatten, squeeze, unsqueeze: the same row-major position in a differently shaped x.
Expected<std::vector<KValue>> lowerSameBytes(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const Shape& in = ctx.call().operand(0).shape;
  const Shape& out = ctx.call().results()[0].shape;
  if (in == out) return std::vector<KValue>{ctx.operand(0, ctx.index())};
  KValue offset = linearOffset(e, ctx.index(), out);
  return std::vector<KValue>{ctx.operand(0, unravel(e, offset, in))};
}

Expected<std::vector<KValue>> lowerExpand(LoweringContext& ctx) { return std::vector<KValue>{ctx.operandAt(0)}; }

}  // namespace

void registerLayoutOps(OpRegistry& registry) {
  using Ints = std::vector<int64_t>;
  registry.add(OpDef{
      .name = "transpose",
      .summary = "Permutes the dims: result dim i is x's dim perm[i] (empty perm reverses them).",
      .operands = {{"x"}},
      .attrs = {{"perm", AttrKind::Ints, Attribute{Ints{}}}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferTranspose,
      .symbolicDims = true,
      .reference = referenceTranspose,
      .example = unaryExample("[2,3,4]", "transpose", "perm = [1, 2, 0]", "[3,4,2]"),
      .gradient = transposeGradient,
      .lower = lowerTranspose,
  });
  registry.add(OpDef{
      .name = "reshape",
      .summary = "Same elements, new shape; one entry may be -1 (inferred).",
      .operands = {{"x"}},
      .attrs = {{"shape", AttrKind::Ints, std::nullopt}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferReshape,
      .symbolicDims = true,
      .reference = referenceSameBytes,
      .example = unaryExample("[2,3,4]", "reshape", "shape = [4, -1]", "[4,6]"),
      .gradient = reshapeGradient,
      .lower = lowerSameBytes,
  });
  registry.add(OpDef{
      .name = "flatten",
      .summary = "Reshapes to [prod(d[:axis]), prod(d[axis:])].",
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, Attribute{int64_t{1}}}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferFlatten,
      .symbolicDims = true,
      .reference = referenceSameBytes,
      .example = unaryExample("[2,3,4]", "flatten", "axis = -1", "[6,4]"),
      .gradient = reshapeGradient,
      .lower = lowerSameBytes,
  });
  registry.add(OpDef{
      .name = "squeeze",
      .summary = "Removes the listed size-1 dims (all size-1 dims when axes is empty).",
      .operands = {{"x"}},
      .attrs = {{"axes", AttrKind::Ints, Attribute{Ints{}}}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferSqueeze,
      .symbolicDims = true,
      .reference = referenceSameBytes,
      .example = unaryExample("[2,1,3,1]", "squeeze", "axes = [-1]", "[2,1,3]"),
      .gradient = reshapeGradient,
      .lower = lowerSameBytes,
  });
  registry.add(OpDef{
      .name = "unsqueeze",
      .summary = "Inserts size-1 dims at the listed positions of the result.",
      .operands = {{"x"}},
      .attrs = {{"axes", AttrKind::Ints, std::nullopt}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferUnsqueeze,
      .symbolicDims = true,
      .reference = referenceSameBytes,
      .example = unaryExample("[2,3]", "unsqueeze", "axes = [0, -1]", "[1,2,3,1]"),
      .gradient = reshapeGradient,
      .lower = lowerSameBytes,
  });
  registry.add(OpDef{
      .name = "expand",
      .summary = "Broadcasts x to the numpy broadcast of its shape and `shape` (ONNX Expand).",
      .operands = {{"x"}},
      .attrs = {{"shape", AttrKind::Ints, std::nullopt}},
      .fusion = FusionKind::Broadcast,
      .dtypes = dtypes::kAll,
      .infer = inferExpand,
      .symbolicDims = true,
      .reference = referenceExpand,
      .example = unaryExample("[3,1]", "expand", "shape = [2, 1, 4]", "[2,3,4]"),
      .gradient = expandGradient,
      .lower = lowerExpand,
  });
}

}  // namespace smelt
