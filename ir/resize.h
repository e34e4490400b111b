// Separable interpolation (ONNX Resize, PyTorch's F.interpolate) composed from `gather`, shared by the ONNX importer
// (Resize, Upsample) and the model API's upsampling layer. For each resized axis the source indices and weights of
// every output position are computed when the graph is built (coordinate transformation, nearest rounding, cubic
// coefficient, exclude_outside, tf_crop_and_resize's extrapolation), and one gather per tap along that axis is
// weighted and summed. Axes are applied last to first, as ONNX's reference nests them; each is a linear map, so the
// composition runs on every backend, is differentiable (gather's gradient is scatter_add), and keeps the other
// dimensions symbolic.
#pragma once

#include "ir/builder.h"

#include <string>
#include <vector>

namespace smelt {

/// The most positions one resized axis may have: the per-position plan is built with the graph.
inline constexpr int64_t kMaxResizedExtent = int64_t{1} << 24;

enum class ResizeInterp { Nearest, Linear, Cubic };

/// How positions map and combine, in ONNX Resize's terms (coordinate_transformation_mode, nearest_mode, ...).
struct ResizeMode {
  ResizeInterp interp = ResizeInterp::Nearest;
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
};

/// Resizes `x` to `sizes` (one per dimension; `scales` are the per-axis factors the coordinates use, ONNX's
/// output_width / input_width when sizes were given); `roi` is tf_crop_and_resize's [starts..., ends...]
/// (normalized), empty otherwise. A symbolic dimension may only keep its size. Errors go to the builder.
Value* resize(Builder& b, Value* x, const std::vector<int64_t>& sizes, const std::vector<double>& scales,
              const std::vector<double>& roi, const ResizeMode& mode);

}  // namespace smelt
