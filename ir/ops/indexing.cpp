// Indexing ops: concat, slice (ONNX Slice), pad (ONNX Pad) and gather (numpy take). References copy
// raw element bytes, so they are exact for every dtype (u64 past 2^53, NaN payloads).
//   %0 = concat(%a, %b) {axis = 1} : f32[2,5]                 a: f32[2,3], b: f32[2,2]
//   %1 = slice(%x) {starts = [-1], ends = [-100], steps = [-2]} : f32[2]   x: f32[4]
//   %2 = gather(%data, %idx) {axis = 1} : f32[3,2,2]          data: f32[3,4], idx: i64[2,2]
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <algorithm>
#include <cstring>

namespace smelt {

namespace {

using namespace ops;

// --- concat ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferConcat(const OpCall& call) {
  const TensorType& first = call.operand(0);
  if (first.rank() == 0) return call.error("{} must have rank >= 1, got {}", operandName(call, 0), first.toString());
  auto axis = normalizeAxis(call.getInt("axis"), first.rank());
  if (!axis) return call.error("attribute 'axis': {}", axis.error().message());
  Shape shape = first.shape;
  for (size_t i = 1; i < call.numOperands(); ++i) {
    SMELT_CHECK_OK(expectSameDType(call, 0, i));
    const TensorType& t = call.operand(i);
    bool matches = t.rank() == first.rank();
    for (int64_t d = 0; matches && d < t.rank(); ++d) matches = d == *axis || t.shape[d] == first.shape[d];
    if (!matches) {
      return call.error("{} is {} but {} is {}; they may differ only on axis {}", operandName(call, i), t.toString(),
                        operandName(call, 0), first.toString(), *axis);
    }
    shape[*axis] += t.shape[*axis];
  }
  SMELT_CHECK_OK(expectSaneShape(call, shape));
  return single(TensorType{first.dtype, shape});
}

Expected<std::vector<Tensor>> referenceConcat(const OpCall& call, std::span<const Tensor> in) {
  Tensor out(call.results()[0]);
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), out.rank()));
  // Each input contributes a contiguous block of (its axis extent * inner) elements per outer index.
  int64_t outer = numElements(std::span(out.shape()).first(static_cast<size_t>(axis)));
  int64_t inner = numElements(std::span(out.shape()).subspan(static_cast<size_t>(axis) + 1));
  size_t size = dtypeSize(out.dtype());
  std::byte* dst = out.raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : in) {
      size_t block = static_cast<size_t>(t.shape()[axis] * inner) * size;
      if (block == 0) continue;
      std::memcpy(dst, t.raw() + o * block, block);
      dst += block;
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// --- slice ------------------------------------------------------------------------------------

// One sliced dim: result index j reads input index start + j * step.
struct SliceDim {
  int64_t start = 0, step = 1, length = 0;
};

Expected<std::vector<SliceDim>> sliceDims(const OpCall& call) {
  const TensorType& x = call.operand(0);
  const std::vector<int64_t>& starts = call.getInts("starts");
  const std::vector<int64_t>& ends = call.getInts("ends");
  std::vector<int64_t> axes = call.getInts("axes");
  std::vector<int64_t> steps = call.getInts("steps");
  size_t n = starts.size();
  if (ends.size() != n) return call.error("attributes 'starts' and 'ends' have {} and {} entries; they must match", n, ends.size());
  if (axes.empty()) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (axes.size() != n) {
    return call.error("attribute 'axes' has {} entries, 'starts' has {}; they must match", axes.size(), n);
  }
  if (steps.empty()) steps.assign(n, 1);
  if (steps.size() != n) return call.error("attribute 'steps' has {} entries, 'starts' has {}; they must match", steps.size(), n);
  SMELT_TRY(std::vector<int64_t> normalized, normalizeAxes(call, axes, x.rank()));

  std::vector<SliceDim> dims(x.shape.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d].length = x.shape[d];
  for (size_t i = 0; i < n; ++i) {
    int64_t dim = x.shape[normalized[i]];
    int64_t step = steps[i];
    if (step == 0) return call.error("attribute 'steps' has a 0 for axis {}", axes[i]);
    // ONNX Slice: negative positions count from the end, then clamp. Adding dim (< 2^41) to a
    // negative int64 cannot overflow, so INT64_MIN / INT64_MAX sentinels are safe.
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t length = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      int64_t distance = end - start;
      if (distance > 0) length = distance / step + (distance % step != 0);
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      int64_t distance = start - end;
      // -INT64_MIN overflows; any step that large takes one element anyway.
      int64_t stride = step == INT64_MIN ? INT64_MAX : -step;
      if (distance > 0) length = distance / stride + (distance % stride != 0);
    }
    dims[normalized[i]] = SliceDim{start, step, length};
  }
  return dims;
}

Expected<std::vector<TensorType>> inferSlice(const OpCall& call) {
  SMELT_TRY(std::vector<SliceDim> dims, sliceDims(call));
  Shape shape;
  for (const SliceDim& d : dims) shape.push_back(d.length);
  return single(TensorType{call.operand(0).dtype, shape});
}

Expected<std::vector<Tensor>> referenceSlice(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(std::vector<SliceDim> dims, sliceDims(call));
  const Tensor& x = in[0];
  Tensor out(call.results()[0]);
  std::vector<int64_t> strides = contiguousStrides(x.shape());
  size_t size = dtypeSize(x.dtype());
  size_t flat = 0;
  forEachIndex(out.shape(), [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += (dims[d].start + index[d] * dims[d].step) * strides[d];
    std::memcpy(out.raw() + flat++ * size, x.raw() + offset * size, size);
  });
  return std::vector<Tensor>{std::move(out)};
}

// --- pad ------------------------------------------------------------------------------------

enum class PadMode { Constant, Reflect, Edge };

// One padded dim. Negative pads crop first: the kept input range is [lo, lo + kept); then `before`
// and `after` (both >= 0) elements are added by the mode.
struct PadDim {
  int64_t lo = 0, kept = 0, before = 0, after = 0;
};

struct PadPlan {
  PadMode mode = PadMode::Constant;
  std::vector<PadDim> dims;
};

Expected<PadPlan> padPlan(const OpCall& call) {
  const TensorType& x = call.operand(0);
  const std::string& modeName = call.getString("mode");
  PadPlan plan;
  if (modeName == "constant") {
    plan.mode = PadMode::Constant;
  } else if (modeName == "reflect") {
    plan.mode = PadMode::Reflect;
  } else if (modeName == "edge") {
    plan.mode = PadMode::Edge;
  } else {
    return call.error("attribute 'mode' must be \"constant\", \"reflect\" or \"edge\", got \"{}\"", modeName);
  }
  const std::vector<int64_t>& pads = call.getInts("pads");
  size_t rank = x.shape.size();
  if (pads.size() != 2 * rank) {
    return call.error("attribute 'pads' must have {} entries (begins, then ends, for {}), got {}", 2 * rank,
                      x.toString(), pads.size());
  }
  for (int64_t p : pads) {
    if (p > kMaxElements || p < -kMaxElements) return call.error("attribute 'pads' entry {} is out of range", p);
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = x.shape[d];
    int64_t begin = pads[d];
    int64_t end = pads[d + rank];
    PadDim pd;
    pd.lo = std::max<int64_t>(0, -begin);
    pd.kept = dim - pd.lo - std::max<int64_t>(0, -end);
    pd.before = std::max<int64_t>(0, begin);
    pd.after = std::max<int64_t>(0, end);
    if (pd.kept < 0) {
      return call.error("pads {} and {} crop more than the {} elements of axis {}", begin, end, dim, d);
    }
    bool pads = pd.before > 0 || pd.after > 0;
    if (plan.mode == PadMode::Edge && pads && pd.kept == 0) {
      return call.error("edge padding of axis {} needs at least one element, but it has none", d);
    }
    // Reflection mirrors without repeating the edge, so it needs more elements than it pads.
    if (plan.mode == PadMode::Reflect && (pd.before >= pd.kept || pd.after >= pd.kept) && pads) {
      return call.error("reflect padding of axis {} by {} and {} needs pads smaller than its size {}", d, pd.before,
                        pd.after, pd.kept);
    }
    plan.dims.push_back(pd);
  }
  return plan;
}

Expected<std::vector<TensorType>> inferPad(const OpCall& call) {
  SMELT_TRY(PadPlan plan, padPlan(call));
  Shape shape;
  for (const PadDim& d : plan.dims) shape.push_back(d.before + d.kept + d.after);
  SMELT_CHECK_OK(expectSaneShape(call, shape));
  return single(TensorType{call.operand(0).dtype, shape});
}

Expected<std::vector<Tensor>> referencePad(const OpCall& call, std::span<const Tensor> in) {
  SMELT_TRY(PadPlan plan, padPlan(call));
  const Tensor& x = in[0];
  Tensor out(call.results()[0]);
  // The fill value, converted once to the dtype (as cast would).
  Tensor fill = Tensor::scalar(x.dtype(), call.getFloat("value"));
  std::vector<int64_t> strides = contiguousStrides(x.shape());
  size_t size = dtypeSize(x.dtype());
  size_t flat = 0;
  forEachIndex(out.shape(), [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < index.size(); ++d) {
      const PadDim& pd = plan.dims[d];
      int64_t j = index[d] - pd.before;  // position within the kept range
      if (j < 0 || j >= pd.kept) {
        if (plan.mode == PadMode::Constant) {
          inside = false;
          break;
        }
        if (plan.mode == PadMode::Edge) {
          j = j < 0 ? 0 : pd.kept - 1;
        } else {
          j = j < 0 ? -j : 2 * (pd.kept - 1) - j;
        }
      }
      offset += (pd.lo + j) * strides[d];
    }
    const std::byte* src = inside ? x.raw() + offset * size : fill.raw();
    std::memcpy(out.raw() + flat++ * size, src, size);
  });
  return std::vector<Tensor>{std::move(out)};
}

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

Expected<std::vector<Tensor>> referenceGather(const OpCall& call, std::span<const Tensor> in) {
  const Tensor& data = in[0];
  const Tensor& indices = in[1];
  Tensor out(call.results()[0]);
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), data.rank()));
  int64_t dim = data.shape()[axis];
  int64_t outer = numElements(std::span(data.shape()).first(static_cast<size_t>(axis)));
  int64_t inner = numElements(std::span(data.shape()).subspan(static_cast<size_t>(axis) + 1));
  // Validate every index first, so a bad one is reported before any copying.
  std::vector<int64_t> rows = indices.toInts();
  for (size_t i = 0; i < rows.size(); ++i) {
    int64_t r = rows[i] < 0 ? rows[i] + dim : rows[i];
    if (r < 0 || r >= dim) {
      return call.error("index {} (at flat position {} of indices) is out of range for axis {} of size {}", rows[i], i,
                        axis, dim);
    }
    rows[i] = r;
  }
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

}  // namespace

void registerIndexingOps(OpRegistry& registry) {
  using Ints = std::vector<int64_t>;
  registry.add(OpDef{
      .name = "concat",
      .summary = "Joins the inputs along `axis`; they must agree on every other dim.",
      .operands = {{"inputs", Arity::Variadic}},
      .attrs = {{"axis", AttrKind::Int, std::nullopt}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferConcat,
      .reference = referenceConcat,
      .example = R"(graph @t(%a: $T[2,3], %b: $T[2,1], %c: $T[2,2]) {
  %0 = concat(%a, %b, %c) {axis = -1} : $T[2,6]
  return r = %0
})",
  });
  registry.add(OpDef{
      .name = "slice",
      .summary = "ONNX Slice: per-axis start/end/step with negative indices and clamping.",
      .operands = {{"x"}},
      .attrs = {{"starts", AttrKind::Ints, std::nullopt},
                {"ends", AttrKind::Ints, std::nullopt},
                {"axes", AttrKind::Ints, Attribute{Ints{}}},
                {"steps", AttrKind::Ints, Attribute{Ints{}}}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferSlice,
      .reference = referenceSlice,
      .example = R"(graph @t(%x: $T[4,6]) {
  %0 = slice(%x) {starts = [-1, 1], ends = [-5, 100], steps = [-2, 2]} : $T[2,3]
  return r = %0
})",
  });
  registry.add(OpDef{
      .name = "pad",
      .summary = "ONNX Pad: constant, reflect or edge padding; negative pads crop.",
      .operands = {{"x"}},
      .attrs = {{"pads", AttrKind::Ints, std::nullopt},
                {"mode", AttrKind::String, Attribute{std::string("constant")}},
                {"value", AttrKind::Float, Attribute{0.0}}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferPad,
      .reference = referencePad,
      .example = R"(graph @t(%x: $T[2,4]) {
  %0 = pad(%x) {mode = "reflect", pads = [1, 2, 1, -1]} : $T[4,5]
  return r = %0
})",
  });
  registry.add(OpDef{
      .name = "gather",
      .summary = "numpy take along `axis`: result data[:axis] + indices.shape + data[axis+1:].",
      .operands = {{"data"}, {"indices"}},
      .attrs = {{"axis", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferGather,
      .reference = referenceGather,
      .example = R"(graph @t(%x: $T[3,4]) {
  %i = constant() {value = dense<i64[2,2]> [1, -1, 0, 2]} : i64[2,2]
  %0 = gather(%x, %i) {axis = 1} : $T[3,2,2]
  return r = %0
})",
  });
}

}  // namespace smelt
