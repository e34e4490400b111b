// Cutting and joining along axes: concat, slice (ONNX Slice) and pad (ONNX Pad). References copy raw
// element bytes, so they are exact for every dtype (u64 past 2^53, NaN payloads).
//   %0 = concat(%a, %b) {axis = 1} : f32[2,5]                 a: f32[2,3], b: f32[2,2]
//   %1 = slice(%x) {starts = [-1], ends = [-100], steps = [-2]} : f32[2]   x: f32[4]
//   %2 = pad(%x) {pads = [1, 0], mode = "edge"} : f32[5]      x: f32[4]
// Their gradients are built from one another: slices of dy for concat, pads of zeros for slice, slices
// (and, for reflect and edge, sums of the borders) for pad. Along a symbolic axis the extents are
// polynomials (ir/type.h); only cuts that give one polynomial at every size are allowed there.
#include "ir/builder.h"
#include "ir/contiguous_views.h"
#include "ir/ops/elementwise.h"
#include "ir/ops/lower_helpers.h"
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
    // The other dims must agree; two symbols there are unified (extentsUnify).
    for (int64_t d = 0; matches && d < t.rank(); ++d) {
      matches = d == *axis || extentsUnify(t.shape[d], first.shape[d]);
    }
    if (!matches) {
      return call.error("{} is {} but {} is {}; they may differ only on axis {}", operandName(call, i), t.toString(),
                        operandName(call, 0), first.toString(), *axis);
    }
    // The joined extent is a sum: of symbols too (T + 1, a sequence grown by one step).
    Expected<int64_t> joined = addExtents(shape[*axis], t.shape[*axis]);
    if (!joined.ok()) return call.error("joining along axis {}: {}", *axis, joined.error().message());
    shape[*axis] = *joined;
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

/// A slice of symbolic extent `dim` with step > 0, where ONNX's clamping gives one polynomial at every
/// size: positions 0, 1 and -1 (dim-1; these two where dim is at least 1 at every size) and the ends (to the
/// end: dim; from before the start: 0),
/// or a symbolic position (a concat's gradient cutting its pieces at offsets it computed), and a distance
/// between them that is never negative. x[1:] of N is N-1, x[:-1] N-1, x[-1:] 1, x[::2] (N+1)/2; x[-3:]
/// would be min(3, N): refused, naming the node (bind it first; ONNX import then takes the fed shapes).
Expected<SliceDim> symbolicSliceDim(const OpCall& call, int64_t dim, int64_t start, int64_t end, int64_t step,
                                    int64_t axis) {
  auto refuse = [&](std::string_view why) {
    return call.error("axis {} is symbolic dimension {}: slicing it [{}:{}:{}] {}; bind it first", axis,
                      extentToString(dim), extentToString(start), extentToString(end), step, why);
  };
  if (step < 0) return refuse("runs from its end");
  // Positions 1 and -1 lie inside the extent only where it is at least 1 at every size: a symbol is, a floor
  // quotient such as (B)/2 is not (0 at B = 1, where x[:1] is empty).
  Expected<int64_t> lessOne = subtractExtents(dim, 1);
  const bool atLeastOne = lessOne.ok() && provablyNonnegative(*lessOne);
  auto position = [&](int64_t p) -> std::optional<int64_t> {
    if (isSymbolic(p)) return p;
    if (p >= kMaxElements) return dim;
    if (p <= -kMaxElements) return int64_t{0};
    if (p == 0) return p;
    if (p == 1 && atLeastOne) return p;
    if (p == -1 && atLeastOne) return *lessOne;  // dim-1 >= 0
    return std::nullopt;                         // clamped at some sizes: min(p, dim)
  };
  std::optional<int64_t> from = position(start), to = position(end);
  if (!from || !to) return refuse("clamps at small sizes");
  SMELT_TRY(int64_t distance, subtractExtents(*to, *from));
  if (!isSymbolic(distance)) distance = std::max<int64_t>(0, distance);
  if (isSymbolic(distance) && !provablyNonnegative(distance)) return refuse("clamps at small sizes");
  SMELT_TRY(int64_t rounded, addExtents(distance, step - 1));
  SMELT_TRY(int64_t length, floorDivideExtent(rounded, step));
  return SliceDim{*from, step, length};
}

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
    if (isSymbolic(dim)) {
      SMELT_TRY(dims[normalized[i]], symbolicSliceDim(call, dim, starts[i], ends[i], step, axes[i]));
      continue;
    }
    if (isSymbolic(starts[i]) || isSymbolic(ends[i])) {
      return call.error("axis {} of {} has {} elements: its slice's positions {} and {} must be counts", axes[i],
                        x.toString(), dim, extentToString(starts[i]), extentToString(ends[i]));
    }
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
    if (isSymbolic(p)) {
      // A symbolic amount (a slice's gradient placing its run at a symbolic start) pads with zeros.
      if (plan.mode != PadMode::Constant)
        return call.error("{} padding by {}: bind it first", modeName, extentToString(p));
      continue;
    }
    if (p > kMaxElements || p < -kMaxElements) return call.error("attribute 'pads' entry {} is out of range", p);
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = x.shape[d];
    int64_t begin = pads[d];
    int64_t end = pads[d + rank];
    PadDim pd;
    pd.lo = isSymbolic(begin) ? 0 : std::max<int64_t>(0, -begin);
    const int64_t cropEnd = isSymbolic(end) ? 0 : std::max<int64_t>(0, -end);
    pd.kept = dim - pd.lo - cropEnd;
    pd.before = isSymbolic(begin) ? begin : std::max<int64_t>(0, begin);
    pd.after = isSymbolic(end) ? end : std::max<int64_t>(0, end);
    if (isSymbolic(dim) || isSymbolic(begin) || isSymbolic(end)) {
      // Padded (or cropped) by counts: a polynomial (N+2, N-1), never negative at any size.
      SMELT_TRY(pd.kept, subtractExtents(dim, pd.lo + cropEnd));
      if (isSymbolic(pd.kept) && !provablyNonnegative(pd.kept)) {
        return call.error("pads {} and {} crop symbolic axis {} ({}) to {}, empty at small sizes; bind it first",
                          extentToString(begin), extentToString(end), d, extentToString(dim), extentToString(pd.kept));
      }
      if (plan.mode == PadMode::Reflect && (pd.before > 0 || pd.after > 0)) {
        return call.error("reflect padding of symbolic axis {} ({}) needs its size; bind it first", d,
                          extentToString(dim));
      }
    } else if (pd.kept < 0) {
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
  for (const PadDim& d : plan.dims) {
    SMELT_TRY(int64_t padding, addExtents(d.before, d.after));
    SMELT_TRY(int64_t padded, addExtents(d.kept, padding));
    shape.push_back(padded);
  }
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

// --- kernel lowerings (ir/lowering.h): each result element reads operand elements at computed indices

/// The kernel value of a scalar attribute converted to `dtype` as the references convert it.
KValue scalarConstant(KernelEmitter& e, DType dtype, double value) {
  Tensor t = Tensor::scalar(dtype, value);
  return isFloat(dtype) ? e.constant(t.getDouble(0), dtype) : e.intConstant(t.getInt(0), dtype);
}

// concat: a select chain over the inputs by the position along the axis; each input is read at that
// position made relative to it and clamped into it, so every read is in bounds (empty inputs are
// never read).
Expected<std::vector<KValue>> lowerConcat(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const OpCall& call = ctx.call();
  SMELT_TRY(int64_t axis, normalizeAxis(call.getInt("axis"), call.results()[0].rank()));
  auto a = static_cast<size_t>(axis);
  KValue position = ctx.index()[a];
  KValue result;
  // From the last input back, so the first input whose range holds the position wins.
  int64_t end = call.results()[0].shape[a];
  for (size_t i = call.numOperands(); i-- > 0;) {
    int64_t extent = call.operand(i).shape[a];
    int64_t begin = end - extent;
    if (extent > 0) {
      std::vector<KValue> at(ctx.index().begin(), ctx.index().end());
      at[a] = clampIndex(e, e.sub(position, e.index(begin)), 0, extent - 1);
      KValue value = ctx.operand(i, at);
      result = !result.valid() ? value : e.select(e.lt(position, e.index(end)), value, result);
    }
    end = begin;
  }
  // Every input empty along the axis: so is the result, and no element is ever computed.
  return std::vector<KValue>{result.valid() ? result : e.zero(call.results()[0].dtype)};
}

// slice: result index j reads start + j * step along each dim (always in bounds by construction).
Expected<std::vector<KValue>> lowerSlice(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  SMELT_TRY(std::vector<SliceDim> dims, sliceDims(ctx.call()));
  std::vector<KValue> at;
  for (size_t d = 0; d < dims.size(); ++d) {
    at.push_back(e.add(e.index(dims[d].start), e.mul(ctx.index()[d], e.index(dims[d].step))));
  }
  return std::vector<KValue>{ctx.operand(0, at)};
}

// pad: per dim, the position within the kept range; edge clamps it, reflect mirrors it without
// repeating the edge, constant mode reads a clamped position and selects the fill value outside.
Expected<std::vector<KValue>> lowerPad(LoweringContext& ctx) {
  KernelEmitter& e = ctx.emit();
  const OpCall& call = ctx.call();
  SMELT_TRY(PadPlan plan, padPlan(call));
  DType dtype = call.operand(0).dtype;
  KValue fill = scalarConstant(e, dtype, call.getFloat("value"));
  // Nothing kept along some dim (x empty or cropped away): all fill, and nothing may be read. (The other
  // modes reject padding such a dim, so their result is empty then.)
  for (const PadDim& pd : plan.dims) {
    if (pd.kept == 0) return std::vector<KValue>{fill};
  }
  std::vector<KValue> at;
  KValue inside = e.one(DType::boolean);
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    const PadDim& pd = plan.dims[d];
    KValue j = e.sub(ctx.index()[d], e.index(pd.before));
    if (pd.before > 0 || pd.after > 0) {
      switch (plan.mode) {
        case PadMode::Constant: {
          GuardedIndex g = guardIndex(e, j, pd.kept);
          inside = e.logicalAnd(inside, g.inside);
          j = g.index;
          break;
        }
        case PadMode::Edge: j = clampIndex(e, j, 0, pd.kept - 1); break;
        case PadMode::Reflect: {
          KValue below = e.lt(j, e.index(0)), above = e.ge(j, e.index(pd.kept));
          j = e.select(below, e.unary(KUnary::Neg, j), e.select(above, e.sub(e.index(2 * (pd.kept - 1)), j), j));
          break;
        }
      }
    }
    at.push_back(e.add(j, e.index(pd.lo)));
  }
  KValue value = ctx.operand(0, at);
  return std::vector<KValue>{plan.mode == PadMode::Constant ? e.select(inside, value, fill) : value};
}


// --- gradients ------------------------------------------------------------------------------------

// Re-derives a node's plan with the function its inference ran (attributes were checked then).
template <typename F>
auto planOf(const Node& node, F&& plan) {
  std::vector<TensorType> types;
  for (const Value* v : node.operands()) types.push_back(v->type());
  OpCall call(node.op(), node.opName(), types, node.attrs());
  return plan(call);
}

// x padded (or, for negative amounts, cropped) on one axis with zeros.
Value* padAxis(Builder& b, Value* x, size_t axis, int64_t before, int64_t after) {
  if (!x || (before == 0 && after == 0)) return x;
  size_t rank = x->shape().size();
  std::vector<int64_t> pads(2 * rank, 0);
  pads[axis] = before;
  pads[axis + rank] = after;
  return b.op("pad", {x}, {{"pads", pads}});
}

// Elements [start, end) of one axis.
Value* sliceAxis(Builder& b, Value* x, size_t axis, int64_t start, int64_t end) {
  if (!x || (start == 0 && end == x->shape()[axis])) return x;
  return b.op("slice", {x}, {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                             {"axes", std::vector<int64_t>{static_cast<int64_t>(axis)}}});
}

// One axis in reverse order (a slice with step -1).
Value* reverseAxis(Builder& b, Value* x, size_t axis) {
  if (!x || x->shape()[axis] <= 1) return x;
  int64_t n = x->shape()[axis];
  return b.op("slice", {x}, {{"starts", std::vector<int64_t>{-1}}, {"ends", std::vector<int64_t>{-n - 1}},
                             {"axes", std::vector<int64_t>{static_cast<int64_t>(axis)}},
                             {"steps", std::vector<int64_t>{-1}}});
}

// concat: each input's gradient is its slice of dy.
std::vector<Value*> concatGradient(Builder& b, const GradientContext& c) {
  int64_t rank = c.y()->type().rank();
  int64_t axisAttr = c.getInt("axis");
  size_t axis = static_cast<size_t>(axisAttr < 0 ? axisAttr + rank : axisAttr);
  std::vector<Value*> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    Expected<int64_t> end = addExtents(offset, c.x(i)->shape()[axis]);  // symbolic along a symbolic axis
    if (!end.ok()) return {b.fail(end.error())};
    grads.push_back(sliceAxis(b, c.dy(), axis, offset, *end));
    offset = *end;
  }
  return grads;
}

// slice: dy scattered back into zeros, one axis at a time. A negative step is reversed into a
// positive one; a step k > 1 interleaves k-1 zeros after each element ([.., L, ..] -> [.., L, 1, ..],
// padded to [.., L, k, ..], reshaped to [.., L*k, ..]); then zero padding (or cropping the trailing
// zeros) places the run at its start.
std::vector<Value*> sliceGradient(Builder& b, const GradientContext& c) {
  auto dims = planOf(c.node(), sliceDims);
  if (!dims) return {b.fail(dims.error())};
  Value* x = c.x(0);
  Value* g = c.dy();
  if (numElements(g->shape()) == 0) return {b.zerosLike(x)};
  for (size_t d = 0; d < dims->size() && g; ++d) {
    const SliceDim& sd = (*dims)[d];
    int64_t size = x->shape()[d];
    int64_t length = sd.length;
    int64_t start = sd.start;
    int64_t step = sd.step;
    if ((isSymbolic(size) || isSymbolic(start) || isSymbolic(length)) && length != 1 && step != 1) {
      // Spread back by the step, the run would end past x by a symbolic 0 or more: no pad amount says that.
      return {b.fail(makeError("the gradient of a slice with step {} along symbolic axis {} ({}): bind it first", step,
                               d, extentToString(size)))};
    }
    if (length == 1) {
      step = 1;  // one element: the step (which may be INT64_MIN) does not matter
    } else if (step < 0) {
      // Reversed, element j sits at start - (L-1-j)*|step|: a positive run from the last position.
      g = reverseAxis(b, g, d);
      step = -step;
      start -= (length - 1) * step;
    }
    if (!g) break;
    if (step > 1) {
      Shape with = g->shape();
      with.insert(with.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
      g = padAxis(b, b.reshape(g, with), d + 1, 0, step - 1);
      if (!g) break;
      Shape spread = g->shape();
      spread[d] = length * step;
      spread.erase(spread.begin() + static_cast<std::ptrdiff_t>(d) + 1);
      g = b.reshape(g, spread);
    }
    // The run covers [start, start + length*step); the end may pass x's size by up to step-1 zeros.
    if (isSymbolic(size) || isSymbolic(start) || isSymbolic(length)) {
      Expected<int64_t> end = addExtents(start, length);
      Expected<int64_t> after = end.ok() ? subtractExtents(size, *end) : end;
      if (!after.ok()) return {b.fail(after.error())};
      g = padAxis(b, g, d, start, *after);
      continue;
    }
    g = padAxis(b, g, d, start, size - start - length * step);
  }
  return {g};
}

// pad, one axis at a time: constant mode just crops dy; edge and reflect modes add the border
// gradients onto the positions they copied (edge: summed onto the first/last element; reflect:
// reversed and shifted by one); then the part of x that negative pads cropped gets zeros.
std::vector<Value*> padGradient(Builder& b, const GradientContext& c) {
  auto plan = planOf(c.node(), padPlan);
  if (!plan) return {b.fail(plan.error())};
  Value* x = c.x(0);
  Value* g = c.dy();
  for (size_t d = 0; d < plan->dims.size() && g; ++d) {
    const PadDim& pd = plan->dims[d];
    int64_t kept = pd.kept;
    if (isSymbolic(kept) || isSymbolic(pd.before) || isSymbolic(pd.after)) {
      // Constant mode only (padPlan): dy's middle, its crop given back as zeros.
      Expected<int64_t> end = addExtents(pd.before, kept);
      if (!end.ok()) return {b.fail(end.error())};
      Expected<int64_t> inner = addExtents(pd.lo, kept);
      Expected<int64_t> after = inner.ok() ? subtractExtents(x->shape()[d], *inner) : inner;
      if (!after.ok()) return {b.fail(after.error())};
      g = padAxis(b, sliceAxis(b, g, d, pd.before, *end), d, pd.lo, *after);
      continue;
    }
    Value* mid = sliceAxis(b, g, d, pd.before, pd.before + kept);
    if (plan->mode != PadMode::Constant && pd.before > 0) {
      Value* border = sliceAxis(b, g, d, 0, pd.before);
      mid = plan->mode == PadMode::Edge
                ? b.add(mid, padAxis(b, b.reduceSum(border, {static_cast<int64_t>(d)}, true), d, 0, kept - 1))
                : b.add(mid, padAxis(b, reverseAxis(b, border, d), d, 1, kept - 1 - pd.before));
    }
    if (plan->mode != PadMode::Constant && pd.after > 0) {
      Value* border = sliceAxis(b, g, d, pd.before + kept, pd.before + kept + pd.after);
      mid = plan->mode == PadMode::Edge
                ? b.add(mid, padAxis(b, b.reduceSum(border, {static_cast<int64_t>(d)}, true), d, kept - 1, 0))
                : b.add(mid, padAxis(b, reverseAxis(b, border, d), d, kept - 1 - pd.after, 1));
    }
    g = padAxis(b, mid, d, pd.lo, x->shape()[d] - pd.lo - kept);
  }
  return {g};
}

// concat on the CPU as the copies it is: for each index of the axes before `axis`, each operand's contiguous
// block in turn. The kernel picks each output element's operand through a chain of selects, one per operand,
// which a gradient bucket of 60 operands turned into 135 ms of ResNet-18's data-parallel step.
HostKernel hostConcat(const OpCall& call) {
  const TensorType& out = call.results()[0];
  if (!out.isStatic()) return {};
  Expected<int64_t> normalized = normalizeAxis(call.getInt("axis"), out.rank());
  if (!normalized.ok()) return {};
  const int64_t axis = *normalized;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.shape[static_cast<size_t>(d)];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < out.rank(); ++d) inner *= out.shape[static_cast<size_t>(d)];
  const size_t elementBytes = dtypeSize(out.dtype);
  std::vector<size_t> blockBytes;  // each operand's bytes per index of the outer axes
  for (const TensorType& t : call.operands()) {
    blockBytes.push_back(static_cast<size_t>(t.shape[static_cast<size_t>(axis)] * inner) * elementBytes);
  }
  size_t rowBytes = 0;
  for (size_t b : blockBytes) rowBytes += b;
  if (out.numel() == 0) return [](char* const*, const ParallelFor&) {};
  return [=](char* const* buffers, const ParallelFor& parallel) {
    char* result = buffers[blockBytes.size()];
    parallel(outer, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        char* to = result + static_cast<size_t>(o) * rowBytes;
        for (size_t i = 0; i < blockBytes.size(); ++i) {
          // (An empty operand may have no memory at all.)
          if (blockBytes[i]) std::memcpy(to, buffers[i] + static_cast<size_t>(o) * blockBytes[i], blockBytes[i]);
          to += blockBytes[i];
        }
      }
    });
  };
}

}  // namespace

std::optional<int64_t> contiguousSliceStart(const Node& node) {
  if (node.opName() != "slice" || !node.operand(0)->type().isStatic() || node.result()->type().numel() <= 0) {
    return std::nullopt;
  }
  std::vector<TensorType> operandTypes{node.operand(0)->type()};
  OpCall call(node.op(), "", operandTypes, node.attrs());
  Expected<std::vector<SliceDim>> dims = sliceDims(call);
  if (!dims.ok()) return std::nullopt;
  const Shape& shape = node.operand(0)->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto dim = [&](int64_t d) -> const SliceDim& { return (*dims)[static_cast<size_t>(d)]; };
  auto extent = [&](int64_t d) { return shape[static_cast<size_t>(d)]; };
  // The last axis that keeps less than its whole extent: the run is contiguous when every axis after it is whole
  // (in order), every axis before it keeps one index, and it is cut with a step of 1.
  int64_t cut = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (dim(d).length != extent(d)) cut = d;
  }
  int64_t start = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const SliceDim& s = dim(d);
    const bool ordered = s.step == 1 || s.length <= 1;
    if (d > cut && !ordered) return std::nullopt;
    if (d == cut && !ordered) return std::nullopt;
    if (d < cut && s.length != 1) return std::nullopt;
    start += s.start * stride;
    stride *= extent(d);
  }
  return start;
}

bool concatIsContiguous(const Node& node) {
  if (node.opName() != "concat" || !node.result()->type().isStatic()) return false;
  const TensorType& out = node.result()->type();
  Expected<int64_t> axis = normalizeAxis(std::get<int64_t>(node.attrs().at("axis")), out.rank());
  if (!axis.ok()) return false;
  for (int64_t d = 0; d < *axis; ++d) {
    if (out.shape[static_cast<size_t>(d)] != 1) return false;
  }
  return true;
}

void registerSlicingOps(OpRegistry& registry) {
  using Ints = std::vector<int64_t>;
  registry.add(OpDef{
      .name = "concat",
      .summary = "Joins the inputs along `axis`; they must agree on every other dim.",
      .operands = {{"inputs", Arity::Variadic}},
      .attrs = {{"axis", AttrKind::Int, std::nullopt}},
      .fusion = FusionKind::Injective,
      .dtypes = dtypes::kAll,
      .infer = inferConcat,
      .symbolicDims = true,
      .reference = referenceConcat,
      .example = R"(graph @t(%a: $T[2,3], %b: $T[2,1], %c: $T[2,2]) {
  %0 = concat(%a, %b, %c) {axis = -1} : $T[2,6]
  return r = %0
})",
      .gradient = concatGradient,
      .lower = lowerConcat,
      .host = hostConcat,
  });
  registry.add(OpDef{
      .name = "slice",
      .summary = "ONNX Slice: per-axis start/end/step with negative indices and clamping.",
      .operands = {{"x"}},
      .attrs = {{"starts", AttrKind::Ints, std::nullopt},
                {"ends", AttrKind::Ints, std::nullopt},
                {"axes", AttrKind::Ints, Attribute{Ints{}}},
                {"steps", AttrKind::Ints, Attribute{Ints{}}}},
      .fusion = FusionKind::View,
      .dtypes = dtypes::kAll,
      .infer = inferSlice,
      .symbolicDims = true,
      .reference = referenceSlice,
      .example = R"(graph @t(%x: $T[4,6]) {
  %0 = slice(%x) {starts = [-1, 1], ends = [-5, 100], steps = [-2, 2]} : $T[2,3]
  %1 = slice(%x) {starts = [1], ends = [-1], axes = [1]} : $T[4,4]
  %2 = slice(%x) {starts = [0, -2], ends = [3, -100], steps = [3, -3]} : $T[1,2]
  %3 = slice(%x) {starts = [-3], ends = [100], axes = [0], steps = [2]} : $T[2,6]
  return r = %0, inner = %1, single = %2, odd = %3
})",
      .gradient = sliceGradient,
      .lower = lowerSlice,
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
      .symbolicDims = true,
      .reference = referencePad,
      .example = R"(graph @t(%x: $T[2,4]) {
  %0 = pad(%x) {mode = "reflect", pads = [1, 2, 1, -1]} : $T[4,5]
  %1 = pad(%x) {mode = "reflect", pads = [0, 1, 0, 2]} : $T[2,7]
  %2 = pad(%x) {mode = "edge", pads = [2, -1, 1, 3]} : $T[5,6]
  %3 = pad(%x) {pads = [-1, 1, 2, 0], value = 1.5} : $T[3,5]
  return r = %0, reflect = %1, edge = %2, constant = %3
})",
      .gradient = padGradient,
      .lower = lowerPad,
  });
}

}  // namespace smelt
