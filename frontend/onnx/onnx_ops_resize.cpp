// Resize (opset 10+) and Upsample (opset 7-9): separable interpolation composed from `gather`. For each resized axis
// the importer computes, per output position, the source indices and weights ONNX's definition gives (coordinate
// transformation, nearest rounding, cubic coefficient, exclude_outside, tf_crop_and_resize's extrapolation), and emits
// one gather per tap along that axis, weighted and summed. Axes are applied last to first, as ONNX's reference nests
// them; each is a linear map, so the composition runs on every backend, is differentiable (gather's gradient is
// scatter_add), and keeps the other dimensions symbolic.
#include "frontend/onnx/onnx_index_helpers.h"

#include <cmath>

namespace smelt::onnximport {

namespace {

inline constexpr int64_t kMaxResizedExtent = int64_t{1} << 24;

enum class Interp { Nearest, Linear, Cubic };

struct ResizeMode {
  Interp interp = Interp::Nearest;
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
};

// One axis's interpolation: for output position o, taps[o] source indices (clamped to the input) with weights[o];
// `outside[o]` marks tf_crop_and_resize positions outside the input (value: the extrapolation value, every weight 0).
struct AxisPlan {
  int64_t taps = 0;
  std::vector<int64_t> index;  // [out * taps]
  std::vector<double> weight;  // [out * taps]
  std::vector<bool> outside;   // [out]
  bool identity = true;
};

std::vector<double> coefficients(const ResizeMode& m, double ratio, bool integral) {
  switch (m.interp) {
    case Interp::Nearest: {
      bool up = integral || m.nearest == "ceil" || (m.nearest == "round_prefer_floor" && ratio > 0.5) ||
                (m.nearest == "round_prefer_ceil" && ratio >= 0.5);
      return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
    }
    case Interp::Linear:
      return {1.0 - ratio, ratio};
    case Interp::Cubic: {
      double a = m.cubicA, r = ratio, s = 1.0 - ratio;
      return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
              ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
    }
  }
  return {};
}

// The input coordinate output position `o` maps to; nullopt where tf_crop_and_resize extrapolates.
std::optional<double> sourceCoordinate(const ResizeMode& m, double o, int64_t in, int64_t out, double scale,
                                       double roiStart, double roiEnd) {
  const std::string& c = m.coordinates;
  double outWidth = scale * static_cast<double>(in);
  if (c == "align_corners") return outWidth == 1 ? 0.0 : o * static_cast<double>(in - 1) / (outWidth - 1);
  if (c == "asymmetric") return o / scale;
  if (c == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  if (c == "pytorch_half_pixel") return out == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
  if (c == "tf_crop_and_resize") {
    double x = outWidth == 1 ? (roiEnd - roiStart) * static_cast<double>(in - 1) / 2
                             : o * (roiEnd - roiStart) * static_cast<double>(in - 1) / (outWidth - 1);
    x += roiStart * static_cast<double>(in - 1);
    if (x < 0 || x > static_cast<double>(in - 1)) return std::nullopt;
    return x;
  }
  return (o + 0.5) / scale - 0.5;  // half_pixel
}

AxisPlan planAxis(const ResizeMode& m, int64_t in, int64_t out, double scale, double roiStart, double roiEnd) {
  AxisPlan p;
  int64_t window = m.interp == Interp::Cubic ? 4 : 2;
  p.taps = m.interp == Interp::Nearest ? 1 : window;
  p.outside.assign(static_cast<size_t>(out), false);
  for (int64_t o = 0; o < out; ++o) {
    std::optional<double> x = sourceCoordinate(m, static_cast<double>(o), in, out, scale, roiStart, roiEnd);
    if (!x) {
      p.outside[static_cast<size_t>(o)] = true;
      p.identity = false;
      for (int64_t j = 0; j < p.taps; ++j) {
        p.index.push_back(0);
        p.weight.push_back(0.0);
      }
      continue;
    }
    // The taps are the `taps` indices nearest x, smaller ones first on ties (ONNX's reference): for a fractional x,
    // floor(x) - taps/2 + 1 onwards; for an integral x the window ending at x (ratio 1).
    double base = std::floor(*x);
    bool integral = base == *x;
    double ratio = integral ? 1.0 : *x - base;
    if (integral) base -= 1;
    std::vector<double> w = coefficients(m, ratio, integral);
    auto first = static_cast<int64_t>(base) - window / 2 + 1;
    if (m.excludeOutside) {
      double sum = 0;
      for (int64_t j = 0; j < window; ++j) {
        if (first + j < 0 || first + j >= in) w[static_cast<size_t>(j)] = 0;
        sum += w[static_cast<size_t>(j)];
      }
      for (double& v : w) v = sum != 0 ? v / sum : 0;
    }
    if (m.interp == Interp::Nearest) {  // one tap: the index whose coefficient is 1
      first += w[0] != 0 ? 0 : 1;
      w = {1.0};
    }
    for (int64_t j = 0; j < static_cast<int64_t>(w.size()); ++j) {
      int64_t idx = std::clamp<int64_t>(first + j, 0,
                                        in - 1);  // the reference pads by edge
      p.index.push_back(idx);
      p.weight.push_back(w[static_cast<size_t>(j)]);
      double want = idx == o ? 1.0 : 0.0;
      if (w[static_cast<size_t>(j)] != 0 && (w[static_cast<size_t>(j)] != want || in != out)) p.identity = false;
    }
  }
  return p;
}

// A constant of `values` laid along `axis` of a rank-`rank` tensor (size 1 elsewhere).
Tensor alongAxis(DType dtype, int64_t rank, int64_t axis, const std::vector<double>& values) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[axis] = static_cast<int64_t>(values.size());
  Tensor t(TensorType{dtype, shape});
  for (size_t i = 0; i < values.size(); ++i) {
    if (isFloat(dtype)) {
      t.setDouble(static_cast<int64_t>(i), values[i]);
    } else {
      t.setInt(static_cast<int64_t>(i), static_cast<int64_t>(values[i]));
    }
  }
  return t;
}

Expected<Value*> applyAxis(NodeContext& n, Value* x, int64_t axis, const AxisPlan& p, const ResizeMode& m) {
  auto out = static_cast<int64_t>(p.outside.size());
  int64_t rank = x->type().rank();
  Value* y = nullptr;
  for (int64_t j = 0; j < p.taps; ++j) {
    std::vector<double> w(static_cast<size_t>(out));
    Tensor idx(TensorType{DType::i64, {out}});
    bool used = false;
    for (int64_t o = 0; o < out; ++o) {
      idx.setInt(o, p.index[static_cast<size_t>(o * p.taps + j)]);
      w[static_cast<size_t>(o)] = p.weight[static_cast<size_t>(o * p.taps + j)];
      used = used || w[static_cast<size_t>(o)] != 0;
    }
    if (!used) continue;
    SMELT_TRY(Value * g, n.emit("gather", {x, n.constant(std::move(idx))}, {{"axis", axis}}));
    if (m.interp != Interp::Nearest) {
      SMELT_TRY(g, n.emit("mul", {g, n.constant(alongAxis(x->dtype(), rank, axis, w))}));
    }
    if (y) {
      SMELT_TRY(y, n.emit("add", {y, g}));
    } else {
      y = g;
    }
  }
  if (!y) {  // every position extrapolates
    Shape shape = x->shape();
    shape[axis] = out;
    SMELT_TRY(y, filled(n, x->dtype(), 0.0, shape));
  }
  if (std::find(p.outside.begin(), p.outside.end(), true) != p.outside.end()) {
    Shape maskShape(static_cast<size_t>(rank), 1);
    maskShape[axis] = out;
    Tensor mask(TensorType{DType::boolean, maskShape});
    for (int64_t o = 0; o < out; ++o) mask.setInt(o, p.outside[static_cast<size_t>(o)] ? 1 : 0);
    SMELT_TRY(y, n.emit("where", {n.constant(std::move(mask)), n.scalar(x->dtype(), m.extrapolation), y}));
  }
  return y;
}

Expected<Interp> interpolation(const std::string& mode) {
  if (mode == "nearest") return Interp::Nearest;
  if (mode == "linear" || mode == "bilinear") return Interp::Linear;
  if (mode == "cubic") return Interp::Cubic;
  return makeError("mode '{}' is not one of nearest, linear, cubic", mode);
}

// Resizes `x` to `sizes` (with `scales` the per-axis factors the coordinates use); `roi` is tf_crop_and_resize's
// [starts..., ends...] (normalized), empty otherwise.
Expected<Value*> resize(NodeContext& n, Value* x, const std::vector<int64_t>& sizes, const std::vector<double>& scales,
                        const std::vector<double>& roi, const ResizeMode& m) {
  int64_t rank = x->type().rank();
  if (m.interp != Interp::Nearest && !isFloat(x->dtype())) {
    return makeError("{} interpolation needs a float input, got {}", m.interp == Interp::Linear ? "linear" : "cubic",
                     x->type().toString());
  }
  Value* y = x;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t in = x->shape()[static_cast<size_t>(d)];
    int64_t out = sizes[static_cast<size_t>(d)];
    if (isSymbolic(in)) {
      if (scales[static_cast<size_t>(d)] != 1.0) return makeError("axis {} is symbolic and cannot be resized", d);
      continue;
    }
    if (out <= 0 || in <= 0) return makeError("axis {}: cannot resize {} elements to {}", d, in, out);
    // The per-position plan is built at import time: bound it before allocating it.
    if (out > kMaxResizedExtent) return makeError("axis {}: output extent {} exceeds {}", d, out, kMaxResizedExtent);
    double roiStart = roi.empty() ? 0.0 : roi[static_cast<size_t>(d)];
    double roiEnd = roi.empty() ? 1.0 : roi[static_cast<size_t>(rank + d)];
    AxisPlan p = planAxis(m, in, out, scales[static_cast<size_t>(d)], roiStart, roiEnd);
    if (p.identity) continue;
    SMELT_TRY(y, applyAxis(n, y, d, p, m));
  }
  return y;
}

// Output sizes from scales (floor(in * scale), ONNX's rule) or scales from sizes (out / in).
Status completeSizes(const TensorType& t, std::vector<int64_t>& sizes, std::vector<double>& scales) {
  auto rank = static_cast<size_t>(t.rank());
  if (!scales.empty() && scales.size() != rank)
    return makeError("scales has {} entries for rank {}", scales.size(), rank);
  if (!sizes.empty() && sizes.size() != rank) return makeError("sizes has {} entries for rank {}", sizes.size(), rank);
  if (scales.empty() && sizes.empty()) return makeError("one of scales and sizes must be given");
  for (size_t d = 0; d < rank; ++d) {
    int64_t in = t.shape[d];
    if (sizes.size() < rank || scales.size() < rank) {
      if (scales.size() == rank) {
        if (!(scales[d] > 0)) return makeError("scales[{}] = {} must be positive", d, scales[d]);
        if (isSymbolic(in)) {
          sizes.push_back(in);
        } else {
          double want = std::floor(scales[d] * static_cast<double>(in));
          if (want > static_cast<double>(kMaxElements)) return makeError("scales[{}] = {} is too large", d, scales[d]);
          sizes.push_back(static_cast<int64_t>(want));
        }
      } else {
        if (isSymbolic(in)) {
          if (sizes[d] != in) return makeError("axis {} is symbolic and cannot be resized", d);
          scales.push_back(1.0);
        } else {
          scales.push_back(static_cast<double>(sizes[d]) / static_cast<double>(in));
        }
      }
    }
  }
  return {};
}

Status resizeOp(NodeContext& n) {
  SMELT_TRY(Value * x, n.input(0));
  ResizeMode m;
  SMELT_TRY(m.interp, interpolation(n.attrString("mode", "nearest")));
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (n.opType() == "Upsample" || n.opset() < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    m.coordinates = "asymmetric";
    m.nearest = "floor";
    if (n.opType() == "Upsample" && n.opset() < 9) {
      scales = n.attrFloats("scales");
    } else {
      SMELT_TRY(Tensor s, n.constInput(1));
      for (int64_t i = 0; i < s.numel(); ++i) scales.push_back(s.getDouble(i));
    }
  } else {
    m.coordinates = n.attrString("coordinate_transformation_mode", "half_pixel");
    m.nearest = n.attrString("nearest_mode", "round_prefer_floor");
    m.cubicA = n.attrFloat("cubic_coeff_a", -0.75);
    m.excludeOutside = n.attrInt("exclude_outside", 0) != 0;
    m.extrapolation = n.attrFloat("extrapolation_value", 0.0);
    if (n.attrInt("antialias", 0) != 0) return makeError("antialias is not supported");
    if (n.hasAttr("axes")) return makeError("the axes attribute (opset 18) is not supported");
    if (n.hasInput(2)) {
      SMELT_TRY(Tensor s, n.constInput(2));
      for (int64_t i = 0; i < s.numel(); ++i) scales.push_back(s.getDouble(i));
    }
    if (n.hasInput(3)) {
      SMELT_TRY(sizes, n.constInts(3));
    }
    if (!scales.empty() && !sizes.empty()) return makeError("only one of scales and sizes may be given");
    if (m.coordinates == "tf_crop_and_resize") {
      if (!n.hasInput(1)) return makeError("tf_crop_and_resize needs the roi input");
      SMELT_TRY(Tensor r, n.constInput(1));
      for (int64_t i = 0; i < r.numel(); ++i) roi.push_back(r.getDouble(i));
      if (roi.size() != static_cast<size_t>(2 * x->type().rank())) {
        return makeError("roi has {} entries, need 2 * rank = {}", roi.size(), 2 * x->type().rank());
      }
    }
  }
  static const std::vector<std::string> kCoordinates{"half_pixel", "pytorch_half_pixel",   "align_corners",
                                                     "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(kCoordinates.begin(), kCoordinates.end(), m.coordinates) == kCoordinates.end()) {
    return makeError("coordinate_transformation_mode '{}' is not one ONNX defines", m.coordinates);
  }
  static const std::vector<std::string> kNearest{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(kNearest.begin(), kNearest.end(), m.nearest) == kNearest.end()) {
    return makeError("nearest_mode '{}' is not one ONNX defines", m.nearest);
  }
  SMELT_CHECK_OK(completeSizes(x->type(), sizes, scales));
  SMELT_TRY(Value * y, resize(n, x, sizes, scales, roi, m));
  return n.setOutput(0, y);
}

}  // namespace

void addResizeConverters(ConverterTable& t) {
  t["Resize"] = resizeOp;
  t["Upsample"] = resizeOp;
}

}  // namespace smelt::onnximport
