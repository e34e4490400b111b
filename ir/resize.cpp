// Separable interpolation (ir/resize.h), following ONNX's reference (onnx/backend/test/case/node/resize.py).
#include "ir/resize.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace smelt {

namespace {

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
    case ResizeInterp::Nearest: {
      bool up = integral || m.nearest == "ceil" || (m.nearest == "round_prefer_floor" && ratio > 0.5) ||
                (m.nearest == "round_prefer_ceil" && ratio >= 0.5);
      return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
    }
    case ResizeInterp::Linear:
      return {1.0 - ratio, ratio};
    case ResizeInterp::Cubic: {
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
  int64_t window = m.interp == ResizeInterp::Cubic ? 4 : 2;
  p.taps = m.interp == ResizeInterp::Nearest ? 1 : window;
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
    if (m.interp == ResizeInterp::Nearest) {  // one tap: the index whose coefficient is 1
      first += w[0] != 0 ? 0 : 1;
      w = {1.0};
    }
    for (int64_t j = 0; j < static_cast<int64_t>(w.size()); ++j) {
      int64_t idx = std::clamp<int64_t>(first + j, 0, in - 1);  // the reference pads by edge
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

Value* applyAxis(Builder& b, Value* x, int64_t axis, const AxisPlan& p, const ResizeMode& m) {
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
    Value* g = b.op("gather", {x, b.op("constant", {}, {{"value", std::move(idx)}})}, {{"axis", axis}});
    if (m.interp != ResizeInterp::Nearest) {
      g = b.mul(g, b.op("constant", {}, {{"value", alongAxis(x->dtype(), rank, axis, w)}}));
    }
    if (y) {
      y = b.add(y, g);
    } else {
      y = g;
    }
  }
  if (!y) {  // every position extrapolates
    Shape shape = x->shape();
    shape[axis] = out;
    y = b.full(0.0, TensorType{x->dtype(), shape});
  }
  if (std::find(p.outside.begin(), p.outside.end(), true) != p.outside.end()) {
    Shape maskShape(static_cast<size_t>(rank), 1);
    maskShape[axis] = out;
    Tensor mask(TensorType{DType::boolean, maskShape});
    for (int64_t o = 0; o < out; ++o) mask.setInt(o, p.outside[static_cast<size_t>(o)] ? 1 : 0);
    y = b.where(b.op("constant", {}, {{"value", std::move(mask)}}), b.scalar(m.extrapolation, x->dtype()), y);
  }
  return y;
}

}  // namespace

Value* resize(Builder& b, Value* x, const std::vector<int64_t>& sizes, const std::vector<double>& scales,
              const std::vector<double>& roi, const ResizeMode& m) {
  if (!x) return nullptr;
  int64_t rank = x->type().rank();
  if (sizes.size() != static_cast<size_t>(rank) || scales.size() != static_cast<size_t>(rank) ||
      (!roi.empty() && roi.size() != static_cast<size_t>(2 * rank))) {
    return b.fail(makeError("resize: {} sizes, {} scales and {} roi entries for rank {}", sizes.size(), scales.size(),
                            roi.size(), rank));
  }
  if (m.interp != ResizeInterp::Nearest && !isFloat(x->dtype())) {
    return b.fail(makeError("{} interpolation needs a float input, got {}",
                            m.interp == ResizeInterp::Linear ? "linear" : "cubic", x->type().toString()));
  }
  Value* y = x;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t in = x->shape()[static_cast<size_t>(d)];
    int64_t out = sizes[static_cast<size_t>(d)];
    if (isSymbolic(in)) {
      if (scales[static_cast<size_t>(d)] != 1.0)
        return b.fail(makeError("axis {} is symbolic and cannot be resized", d));
      continue;
    }
    if (out <= 0 || in <= 0) return b.fail(makeError("axis {}: cannot resize {} elements to {}", d, in, out));
    // The per-position plan is built with the graph: bound it before allocating it.
    if (out > kMaxResizedExtent) {
      return b.fail(makeError("axis {}: output extent {} exceeds {}", d, out, kMaxResizedExtent));
    }
    double roiStart = roi.empty() ? 0.0 : roi[static_cast<size_t>(d)];
    double roiEnd = roi.empty() ? 1.0 : roi[static_cast<size_t>(rank + d)];
    AxisPlan p = planAxis(m, in, out, scales[static_cast<size_t>(d)], roiStart, roiEnd);
    if (p.identity) continue;
    y = applyAxis(b, y, d, p, m);
    if (!y) return nullptr;
  }
  return y;
}

}  // namespace smelt
