// Converters for ONNX linear algebra, layout and indexing ops, and the ops that only produce
// constants at import time (Constant, Shape, Size, ConstantOfShape, Range, EyeLike).
#include "frontend/onnx/onnx_context.h"
#include "frontend/onnx/onnx_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace smelt::onnximport {

namespace {

Status matmul(NodeContext& n) {
  SMELT_TRY(Value * a, n.input(0));
  SMELT_TRY(Value * b, n.input(1));
  SMELT_TRY(Value * y, n.emit("matmul", {a, b}));
  return n.setOutput(0, y);
}

Status gemm(NodeContext& n) {
  SMELT_TRY(Value * a, n.input(0));
  SMELT_TRY(Value * b, n.input(1));
  std::vector<Value*> operands{a, b};
  if (n.hasInput(2)) {
    SMELT_TRY(Value * c, n.input(2));
    operands.push_back(c);
  }
  AttrMap attrs{{"alpha", n.attrFloat("alpha", 1.0)},
                {"beta", n.attrFloat("beta", 1.0)},
                {"trans_a", n.attrInt("transA", 0)},
                {"trans_b", n.attrInt("transB", 0)}};
  SMELT_TRY(Value * y, n.emit("gemm", std::move(operands), std::move(attrs)));
  return n.setOutput(0, y);
}

Status transpose(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit("transpose", {x}, {{"perm", n.attrInts("perm")}}));
  return n.setOutput(0, y);
}

// ONNX Reshape: 0 copies the input's dimension (unless allowzero), -1 is inferred.
Status reshape(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  std::vector<int64_t> shape;
  if (n.opset() < 5) {
    shape = n.attrInts("shape");
  } else {
    SMELT_TRY(shape, n.constInts(1));
  }
  bool allowZero = n.attrInt("allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= x->type().rank()) {
        return makeError("shape entry #{} is 0 (copy the input dimension) but the input has rank {}", i,
                         x->type().rank());
      }
      shape[i] = x->shape()[i];
    }
  }
  SMELT_TRY(Value * y, n.emit("reshape", {x}, {{"shape", shape}}));
  return n.setOutput(0, y);
}

Status flatten(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * y, n.emit("flatten", {x}, {{"axis", n.attrInt("axis", 1)}}));
  return n.setOutput(0, y);
}

// Squeeze/Unsqueeze: axes attribute before opset 13, an input from 13.
Expected<std::vector<int64_t>> squeezeAxes(NodeContext& n) {
  if (n.opset() < 13) return n.attrInts("axes");
  if (!n.hasInput(1)) return std::vector<int64_t>{};
  return n.constInts(1);
}

Status squeeze(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(std::vector<int64_t> axes, squeezeAxes(n));
  for (int64_t& a : axes) {
    SMELT_TRY(a, normalizeAxis(a, x->type().rank()));
  }
  SMELT_TRY(Value * y, n.emit("squeeze", {x}, {{"axes", axes}}));
  return n.setOutput(0, y);
}

Status unsqueeze(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(std::vector<int64_t> axes, squeezeAxes(n));
  if (axes.empty()) return makeError("axes are required");
  int64_t outRank = x->type().rank() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) {
    SMELT_TRY(a, normalizeAxis(a, outRank));
  }
  std::sort(axes.begin(), axes.end());
  SMELT_TRY(Value * y, n.emit("unsqueeze", {x}, {{"axes", axes}}));
  return n.setOutput(0, y);
}

Status expand(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(std::vector<int64_t> shape, n.constInts(1));
  SMELT_TRY(Value * y, n.emit("expand", {x}, {{"shape", shape}}));
  return n.setOutput(0, y);
}

Status concat(NodeContext& n) {
  std::vector<Value*> inputs;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    SMELT_TRY(Value * x, n.input(i));
    inputs.push_back(x);
  }
  if (!n.hasAttr("axis")) return makeError("attribute 'axis' is missing");
  SMELT_TRY(Value * y, n.emit("concat", std::move(inputs), {{"axis", n.attrInt("axis", 0)}}));
  return n.setOutput(0, y);
}

// Slice: attributes before opset 10, inputs (starts, ends, axes?, steps?) from 10.
Status slice(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attrInts("starts");
    ends = n.attrInts("ends");
    axes = n.attrInts("axes");
  } else {
    SMELT_TRY(starts, n.constInts(1));
    SMELT_TRY(ends, n.constInts(2));
    if (n.hasInput(3)) {
      SMELT_TRY(axes, n.constInts(3));
    }
    if (n.hasInput(4)) {
      SMELT_TRY(steps, n.constInts(4));
    }
  }
  AttrMap attrs{{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}};
  SMELT_TRY(Value * y, n.emit("slice", {x}, std::move(attrs)));
  return n.setOutput(0, y);
}

// Pad: pads/value attributes before opset 11; pads, constant_value?, axes? inputs from 11.
Status pad(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  int64_t rank = x->type().rank();
  std::vector<int64_t> pads;
  double value = 0.0;
  if (n.opset() < 11) {
    pads = n.attrInts("pads");
    value = n.attrFloat("value", 0.0);
  } else {
    SMELT_TRY(pads, n.constInts(1));
    if (n.hasInput(2)) {
      SMELT_TRY(value, n.constScalar(2));
    }
    if (n.hasInput(3)) {
      // Pads listed for some axes only: spread them over all dims.
      SMELT_TRY(std::vector<int64_t> axes, n.constInts(3));
      if (pads.size() != 2 * axes.size()) {
        return makeError("pads has {} entries, {} axes need {}", pads.size(), axes.size(), 2 * axes.size());
      }
      std::vector<int64_t> full(2 * rank, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        SMELT_TRY(int64_t a, normalizeAxis(axes[i], rank));
        full[a] = pads[i];
        full[a + rank] = pads[i + axes.size()];
      }
      pads = std::move(full);
    }
  }
  std::string mode = n.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return makeError("pad mode '{}' is not supported (constant, reflect, edge are)", mode);
  }
  SMELT_TRY(Value * y, n.emit("pad", {x}, {{"pads", pads}, {"mode", mode}, {"value", value}}));
  return n.setOutput(0, y);
}

Status gather(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(Value * idx, n.input(1));
  SMELT_TRY(Value * y, n.emit("gather", {x, idx}, {{"axis", n.attrInt("axis", 0)}}));
  return n.setOutput(0, y);
}

// Split into slices along one axis: sizes from the `split` input (13+), the attribute (< 13),
// num_outputs (18+), or equal parts.
Status split(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(int64_t axis, normalizeAxis(n.attrInt("axis", 0), x->type().rank()));
  int64_t dim = x->shape()[axis];
  std::vector<int64_t> sizes;
  if (n.opset() >= 13 && n.hasInput(1)) {
    SMELT_TRY(sizes, n.constInts(1));
  } else if (n.opset() < 13) {
    sizes = n.attrInts("split");
  }
  auto outputs = static_cast<int64_t>(n.numOutputs());
  if (sizes.empty()) {
    int64_t parts = n.hasAttr("num_outputs") ? n.attrInt("num_outputs", 1) : outputs;
    if (parts <= 0) return makeError("cannot split into {} parts", parts);
    int64_t chunk = (dim + parts - 1) / parts;  // opset 18: the last part may be smaller
    for (int64_t p = 0, left = dim; p < parts; ++p, left -= chunk) sizes.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs) {
    return makeError("split has {} sizes for {} outputs", sizes.size(), outputs);
  }
  int64_t start = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    if (sizes[i] < 0) return makeError("split size #{} is negative ({})", i, sizes[i]);
    AttrMap attrs{{"starts", std::vector<int64_t>{start}},
                  {"ends", std::vector<int64_t>{start + sizes[i]}},
                  {"axes", std::vector<int64_t>{axis}}};
    SMELT_TRY(Value * y, n.emit("slice", {x}, std::move(attrs)));
    SMELT_CHECK_OK(n.setOutput(static_cast<size_t>(i), y));
    start += sizes[i];
  }
  if (start != dim) return makeError("split sizes add up to {}, axis {} has {}", start, axis, dim);
  return Status::success();
}

// Tile: reshape to [1,d0,1,d1,...], expand to [r0,d0,r1,d1,...], reshape to [r0*d0, r1*d1, ...].
Status tile(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  SMELT_TRY(std::vector<int64_t> repeats, n.constInts(1));
  int64_t rank = x->type().rank();
  if (static_cast<int64_t>(repeats.size()) != rank) {
    return makeError("repeats has {} entries, the input has rank {}", repeats.size(), rank);
  }
  std::vector<int64_t> inter, expanded, out;
  for (int64_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) return makeError("repeats[{}] is negative ({})", d, repeats[d]);
    inter.insert(inter.end(), {1, x->shape()[d]});
    expanded.insert(expanded.end(), {repeats[d], x->shape()[d]});
    out.push_back(repeats[d] * x->shape()[d]);
  }
  SMELT_TRY(Value * r, n.emit("reshape", {x}, {{"shape", inter}}));
  SMELT_TRY(Value * e, n.emit("expand", {r}, {{"shape", expanded}}));
  SMELT_TRY(Value * y, n.emit("reshape", {e}, {{"shape", out}}));
  return n.setOutput(0, y);
}

Status identity(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  return n.setOutput(0, x);
}

// Shapes are static, so Shape and Size are constants.
Status shape(NodeContext& n) {
  SMELT_TRY(TensorType type, n.inputType(0));
  int64_t rank = type.rank();
  int64_t start = n.attrInt("start", 0);
  int64_t end = n.attrInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(type.shape.begin() + start, type.shape.begin() + end);
  return n.setOutput(0, n.constant(Tensor::of<int64_t>({static_cast<int64_t>(dims.size())}, dims)));
}

Status size(NodeContext& n) {
  SMELT_TRY(TensorType type, n.inputType(0));
  return n.setOutput(0, n.constant(Tensor::scalar(DType::i64, static_cast<double>(type.numel()))));
}

Status constant(NodeContext& n) {
  Tensor t;
  if (n.hasAttr("value")) {
    SMELT_TRY(t, n.attrTensor("value"));
  } else if (n.hasAttr("value_float")) {
    t = Tensor::scalar(DType::f32, n.attrFloat("value_float", 0));
  } else if (n.hasAttr("value_int")) {
    t = Tensor::of<int64_t>({}, {n.attrInt("value_int", 0)});
  } else if (n.hasAttr("value_floats")) {
    std::vector<double> v = n.attrFloats("value_floats");
    t = Tensor::fromDoubles(TensorType{DType::f32, {static_cast<int64_t>(v.size())}}, v);
  } else if (n.hasAttr("value_ints")) {
    std::vector<int64_t> v = n.attrInts("value_ints");
    t = Tensor::of<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else {
    return makeError("only tensor, float and int values are supported (sparse and string values are not)");
  }
  return n.setOutput(0, n.constant(std::move(t)));
}

Status constantOfShape(NodeContext& n) {
  SMELT_TRY(std::vector<int64_t> shape, n.constInts(0));
  Tensor fill = Tensor::scalar(DType::f32, 0.0);
  if (n.hasAttr("value")) {
    SMELT_TRY(fill, n.attrTensor("value"));
  }
  if (fill.numel() != 1) return makeError("value must hold one element, got {}", fill.type().toString());
  SMELT_CHECK_OK(checkShapeLimits(shape));
  int64_t numel = 1;
  for (int64_t d : shape) numel *= isSymbolic(d) ? 1 : d;
  // A large or symbolic shape: the value expanded to it, computed per run, never materialized at import
  // (a 74-byte model could otherwise ask for gigabytes). A small one stays a constant that later shape
  // computations can read.
  constexpr int64_t kMaxMaterialized = 4096;
  if (std::any_of(shape.begin(), shape.end(), isSymbolic) || numel > kMaxMaterialized) {
    SMELT_TRY(Value * y, n.emit("expand", {n.constant(fill.reshaped({}))}, {{"shape", shape}}));
    return n.setOutput(0, y);
  }
  Tensor t(TensorType{fill.dtype(), shape});
  size_t elem = dtypeSize(fill.dtype());
  for (int64_t i = 0; i < numel; ++i) std::memcpy(t.raw() + i * elem, fill.raw(), elem);
  return n.setOutput(0, n.constant(std::move(t)));
}

// Range with static bounds is a constant, so its length is bounded (an index range; larger ones are
// refused before anything is allocated). Up to a symbolic dimension (the limit a Shape's extent, as
// positions 0 .. N-1 over a sequence of N) it is the `range` op, computed per run: from 0 in steps of
// 1, the only bounds whose length is the symbol itself.
constexpr double kMaxRangeElements = double(int64_t{1} << 24);

Status range(NodeContext& n) {
  SMELT_TRY(Tensor start, n.constInput(0));
  SMELT_TRY(Tensor limit, n.constInput(1));
  SMELT_TRY(Tensor delta, n.constInput(2));
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) return makeError("inputs must be scalars");
  DType dt = start.dtype();
  Tensor t;
  if (isFloat(dt)) {
    double s = start.getDouble(0), l = limit.getDouble(0), d = delta.getDouble(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) return makeError("bad range bounds");
    double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > kMaxRangeElements) {
      return makeError("a range of {} elements is larger than the {} an imported Range may have", count, kMaxRangeElements);
    }
    t = Tensor(TensorType{dt, {static_cast<int64_t>(count)}});
    for (int64_t i = 0; i < t.numel(); ++i) t.setDouble(i, s + static_cast<double>(i) * d);
  } else {
    int64_t s = start.getInt(0), l = limit.getInt(0), d = delta.getInt(0);
    if (dt == DType::i64 && isSymbolic(l)) {
      if (s != 0 || d != 1) {
        return makeError("a range up to the symbolic dimension {} must start at 0 with delta 1 (its length is then {}), "
                         "got start {} and delta {}; bind the dimension first (--dim {}=...)",
                         dimSymbolName(l), dimSymbolName(l), s, d, dimSymbolName(l));
      }
      SMELT_TRY(Value * y, n.emit("range", {}, {{"start", start.reshaped({})}, {"delta", delta.reshaped({})},
                                               {"shape", std::vector<int64_t>{l}}}));
      return n.setOutput(0, y);
    }
    if (isSymbolic(s) || isSymbolic(d)) return makeError("a range whose start or delta is a symbolic dimension");
    if (d == 0) return makeError("delta is 0");
    double count = std::max(std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d)), 0.0);
    if (count > kMaxRangeElements) {
      return makeError("a range of {} elements is larger than the {} an imported Range may have", count, kMaxRangeElements);
    }
    t = Tensor(TensorType{dt, {static_cast<int64_t>(count)}});
    for (int64_t i = 0; i < t.numel(); ++i) t.setInt(i, s + i * d);
  }
  return n.setOutput(0, n.constant(std::move(t)));
}

// EyeLike: ones on diagonal k of a 2-D shape.
Status eyeLike(NodeContext& n) {
  SMELT_TRY(TensorType type, n.inputType(0));
  if (type.rank() != 2) return makeError("input must be 2-D, got {}", type.toString());
  DType dt = type.dtype;
  if (n.hasAttr("dtype")) {
    SMELT_TRY(dt, dtypeFromOnnx(n.attrInt("dtype", 1), "EyeLike dtype"));
  }
  int64_t k = n.attrInt("k", 0);
  Tensor t(TensorType{dt, type.shape});
  for (int64_t r = 0; r < type.shape[0]; ++r) {
    int64_t c = r + k;
    if (c >= 0 && c < type.shape[1]) t.setDouble(r * type.shape[1] + c, 1.0);
  }
  return n.setOutput(0, n.constant(std::move(t)));
}

// Trilu: where(mask, x, 0) with the triangle mask built at import time.
Status trilu(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  int64_t k = 0;
  if (n.hasInput(1)) {
    SMELT_TRY(double kd, n.constScalar(1));
    k = static_cast<int64_t>(kd);
  }
  bool upper = n.attrInt("upper", 1) != 0;
  int64_t rank = x->type().rank();
  if (rank < 2) return makeError("input must have rank >= 2, got {}", x->type().toString());
  int64_t rows = x->shape()[rank - 2], cols = x->shape()[rank - 1];
  Tensor mask(TensorType{DType::boolean, {rows, cols}});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) mask.setInt(r * cols + c, upper ? c - r >= k : c - r <= k);
  }
  SMELT_TRY(Value * y, n.emit("where", {n.constant(std::move(mask)), x, n.scalar(x->dtype(), 0.0)}));
  return n.setOutput(0, y);
}

// DepthToSpace / SpaceToDepth: a 6-D reshape, transpose, reshape.
Status depthSpace(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  if (x->type().rank() != 4) return makeError("input must be 4-D, got {}", x->type().toString());
  int64_t b = n.attrInt("blocksize", 0);
  if (b <= 0) return makeError("blocksize must be positive, got {}", b);
  int64_t N = x->shape()[0], C = x->shape()[1], H = x->shape()[2], W = x->shape()[3];
  // A blocksize from an untrusted file: every product below must fit (a mutated model's blocksize of 2^62
  // overflowed b * b).
  int64_t bb = 0, cbb = 0, hb = 0, wb = 0;
  if (__builtin_mul_overflow(b, b, &bb) || __builtin_mul_overflow(C, bb, &cbb) || __builtin_mul_overflow(H, b, &hb) ||
      __builtin_mul_overflow(W, b, &wb)) {
    return makeError("blocksize {} is too large for an input of {}", b, x->type().toString());
  }
  std::vector<int64_t> inter, perm, out;
  if (n.opType() == "DepthToSpace") {
    if (C % (b * b) != 0) return makeError("channels {} are not divisible by blocksize^2 = {}", C, b * b);
    bool crd = n.attrString("mode", "DCR") == "CRD";
    inter = crd ? std::vector<int64_t>{N, C / (b * b), b, b, H, W} : std::vector<int64_t>{N, b, b, C / (b * b), H, W};
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    out = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b != 0 || W % b != 0) return makeError("spatial size {}x{} is not divisible by blocksize {}", H, W, b);
    inter = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {N, C * b * b, H / b, W / b};
  }
  SMELT_TRY(Value * r, n.emit("reshape", {x}, {{"shape", inter}}));
  SMELT_TRY(Value * t, n.emit("transpose", {r}, {{"perm", perm}}));
  SMELT_TRY(Value * y, n.emit("reshape", {t}, {{"shape", out}}));
  return n.setOutput(0, y);
}

}  // namespace

void addLayoutConverters(ConverterTable& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Transpose"] = transpose;
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Expand"] = expand;
  t["Concat"] = concat;
  t["Slice"] = slice;
  t["Pad"] = pad;
  t["Gather"] = gather;
  t["Split"] = split;
  t["Tile"] = tile;
  t["Identity"] = identity;
  t["Shape"] = shape;
  t["Size"] = size;
  t["Constant"] = constant;
  t["ConstantOfShape"] = constantOfShape;
  t["Range"] = range;
  t["EyeLike"] = eyeLike;
  t["Trilu"] = trilu;
  t["DepthToSpace"] = depthSpace;
  t["SpaceToDepth"] = depthSpace;
}

}  // namespace smelt::onnximport
