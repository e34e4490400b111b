// Resize (opset 10+) and Upsample (opset 7-9): their inputs and attributes read into ir/resize.h's terms, which
// composes the interpolation from gathers (shared with the model API's upsampling layer).
#include "frontend/onnx/onnx_context.h"
#include "ir/resize.h"

#include <cmath>

namespace smelt::onnximport {

namespace {

Expected<ResizeInterp> interpolation(const std::string& mode) {
  if (mode == "nearest") return ResizeInterp::Nearest;
  if (mode == "linear" || mode == "bilinear") return ResizeInterp::Linear;
  if (mode == "cubic") return ResizeInterp::Cubic;
  return makeError("mode '{}' is not one of nearest, linear, cubic", mode);
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
  Builder b(n.graph(), n.nodeName().empty() ? "Resize" : n.nodeName());
  Value* y = resize(b, x, sizes, scales, roi, m);
  SMELT_CHECK_OK(b.status());
  return n.setOutput(0, y);
}

}  // namespace

void addResizeConverters(ConverterTable& t) {
  t["Resize"] = resizeOp;
  t["Upsample"] = resizeOp;
}

}  // namespace smelt::onnximport
