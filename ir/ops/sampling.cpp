// Sampling ops: grid_sample (PyTorch's grid_sample, which ONNX GridSample follows) and affine_grid
// (PyTorch's affine_grid), the two halves of a spatial transformer.
//   %g = affine_grid(%theta) {size = [1, 3, 8, 8]} : f32[1,8,8,2]
//   %y = grid_sample(%x, %g) {mode = "bicubic", padding_mode = "border"} : f32[1,3,8,8]
#include "ir/ops/op_helpers.h"
#include "ir/ops/register_ops.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace smelt {

namespace {
using namespace ops;

enum class Interp { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };


std::optional<Interp> parseInterp(std::string_view s) {
  if (s == "bilinear") return Interp::Bilinear;
  if (s == "nearest") return Interp::Nearest;
  if (s == "bicubic") return Interp::Bicubic;
  return std::nullopt;
}

std::optional<Padding> parsePadding(std::string_view s) {
  if (s == "zeros") return Padding::Zeros;
  if (s == "border") return Padding::Border;
  if (s == "reflection") return Padding::Reflection;
  return std::nullopt;
}


// The formulas below mirror ATen's GridSampler.h, in double, so results match PyTorch's float64.

// Maps a normalized coordinate to a pixel index. align_corners: -1 and 1 are the centers of the
// corner pixels; otherwise they are the outer edges of the corner pixels.
double unnormalize(double coord, int64_t size, bool alignCorners) {
  return alignCorners ? (coord + 1) / 2 * static_cast<double>(size - 1)
                      : ((coord + 1) * static_cast<double>(size) - 1) / 2;
}

double clipCoordinate(double v, int64_t size) {
  return std::min(static_cast<double>(size - 1), std::max(v, 0.0));
}

// Reflects `v` into [twiceLow/2, twiceHigh/2] as often as needed (the bounds are doubled so that
// half-pixel bounds stay integers, as in ATen).
double reflectCoordinate(double v, int64_t twiceLow, int64_t twiceHigh) {
  if (twiceLow == twiceHigh) return 0;
  double low = static_cast<double>(twiceLow) / 2;
  double span = static_cast<double>(twiceHigh - twiceLow) / 2;
  v = std::fabs(v - low);
  double extra = std::fmod(v, span);
  // The flip count stays in double: casting a huge coordinate to an integer would be undefined.
  bool evenFlips = std::fmod(std::floor(v / span), 2.0) == 0;
  return evenFlips ? extra + low : span - extra + low;
}

// Applies the padding mode to a pixel coordinate (zeros leaves it for the bounds check).
double padCoordinate(double v, int64_t size, Padding padding, bool alignCorners) {
  if (padding == Padding::Border) return clipCoordinate(v, size);
  if (padding == Padding::Reflection) {
    v = alignCorners ? reflectCoordinate(v, 0, 2 * (size - 1)) : reflectCoordinate(v, -1, 2 * size - 1);
    return clipCoordinate(v, size);
  }
  return v;
}

/// One input plane [H, W] in double, read with bounds checks: outside taps contribute nothing.
struct Plane {
  const double* data;
  int64_t height;
  int64_t width;

  // Coordinates are truncated like ATen's int64 cast; non-finite or far-out ones never index memory.
  std::optional<double> at(double y, double x) const {
    y = std::trunc(y);
    x = std::trunc(x);
    if (!(y >= 0 && y < static_cast<double>(height) && x >= 0 && x < static_cast<double>(width))) return std::nullopt;
    return data[static_cast<int64_t>(y) * width + static_cast<int64_t>(x)];
  }
  double atOrZero(double y, double x) const { return at(y, x).value_or(0.0); }
};

// Keys' cubic convolution with A = -0.75 (PyTorch's and ONNX's bicubic): weights of the taps at
// offsets -1, 0, 1, 2 from floor(coordinate), for fractional part t.
std::array<double, 4> cubicWeights(double t) {
  constexpr double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };      // |x| <= 1
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

struct GridSampleParams {
  Interp interp;
  Padding padding;
  bool alignCorners;
};

// One output value: samples `plane` at normalized grid point (gx, gy).
double sample(const Plane& plane, double gx, double gy, const GridSampleParams& p) {
  int64_t h = plane.height;
  int64_t w = plane.width;
  if (p.interp == Interp::Bicubic) {
    // Bicubic pads each tap separately, so the unpadded coordinate picks the 4x4 neighbourhood.
    double ix = unnormalize(gx, w, p.alignCorners);
    double iy = unnormalize(gy, h, p.alignCorners);
    double x0 = std::floor(ix);
    double y0 = std::floor(iy);
    std::array<double, 4> wx = cubicWeights(ix - x0);
    std::array<double, 4> wy = cubicWeights(iy - y0);
    double sum = 0;
    for (int j = 0; j < 4; ++j) {
      double row = 0;
      double ty = padCoordinate(y0 - 1 + j, h, p.padding, p.alignCorners);
      for (int i = 0; i < 4; ++i) {
        double tx = padCoordinate(x0 - 1 + i, w, p.padding, p.alignCorners);
        row += plane.atOrZero(ty, tx) * wx[i];
      }
      sum += row * wy[j];
    }
    return sum;
  }
  double ix = padCoordinate(unnormalize(gx, w, p.alignCorners), w, p.padding, p.alignCorners);
  double iy = padCoordinate(unnormalize(gy, h, p.alignCorners), h, p.padding, p.alignCorners);
  if (p.interp == Interp::Nearest) {
    // nearbyint rounds half to even under the default rounding mode, as PyTorch does.
    return plane.atOrZero(std::nearbyint(iy), std::nearbyint(ix));
  }
  double x0 = std::floor(ix);
  double y0 = std::floor(iy);
  double fx = ix - x0;
  double fy = iy - y0;
  // Only in-bounds corners are added, so a NaN weight never meets a padded zero.
  double sum = 0;
  const double taps[4][3] = {{y0, x0, (1 - fx) * (1 - fy)},
                             {y0, x0 + 1, fx * (1 - fy)},
                             {y0 + 1, x0, (1 - fx) * fy},
                             {y0 + 1, x0 + 1, fx * fy}};
  for (const auto& tap : taps) {
    if (auto v = plane.at(tap[0], tap[1])) sum += *v * tap[2];
  }
  return sum;
}

Expected<std::vector<TensorType>> inferGridSample(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  SMELT_CHECK_OK(expectSameDType(call, 0, 1));
  SMELT_CHECK_OK(expectRank(call, 0, 4));
  const TensorType& x = call.operand(0);
  const TensorType& grid = call.operand(1);
  if (grid.rank() != 4 || grid.shape[3] != 2) {
    return call.error("{} must have shape [N,Ho,Wo,2], got {}", operandName(call, 1), grid.toString());
  }
  if (grid.shape[0] != x.shape[0]) {
    return call.error("{} has batch {} but {} has batch {}", operandName(call, 1), grid.shape[0],
                      operandName(call, 0), x.shape[0]);
  }
  if (x.shape[2] == 0 || x.shape[3] == 0) {
    return call.error("{} must have non-empty spatial dims, got {}", operandName(call, 0), x.toString());
  }
  if (!parseInterp(call.getString("mode"))) {
    return call.error("attribute 'mode' must be \"bilinear\", \"nearest\" or \"bicubic\", got \"{}\"",
                      call.getString("mode"));
  }
  if (!parsePadding(call.getString("padding_mode"))) {
    return call.error("attribute 'padding_mode' must be \"zeros\", \"border\" or \"reflection\", got \"{}\"",
                      call.getString("padding_mode"));
  }
  SMELT_CHECK_OK(expectFlag(call, "align_corners"));
  return single(TensorType{x.dtype, {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}});
}

Expected<std::vector<Tensor>> referenceGridSample(const OpCall& call, std::span<const Tensor> in) {
  GridSampleParams p{*parseInterp(call.getString("mode")), *parsePadding(call.getString("padding_mode")),
                     call.getInt("align_corners") == 1};
  const Shape& xs = in[0].shape();
  const Shape& gs = in[1].shape();
  int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], ho = gs[1], wo = gs[2];
  std::vector<double> x = in[0].toDoubles();
  std::vector<double> grid = in[1].toDoubles();
  std::vector<double> out(static_cast<size_t>(n * c * ho * wo));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      Plane plane{x.data() + (b * c + ch) * h * w, h, w};
      for (int64_t i = 0; i < ho * wo; ++i) {
        const double* g = grid.data() + (b * ho * wo + i) * 2;
        out[static_cast<size_t>((b * c + ch) * ho * wo + i)] = sample(plane, g[0], g[1], p);
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], out)};
}

// PyTorch's linspace_from_neg_one: `steps` points in [-1, 1], pulled in by half a pixel unless
// align_corners; a single step is the center, 0.
double baseCoordinate(int64_t i, int64_t steps, bool alignCorners) {
  if (steps <= 1) return 0;
  double v = -1 + 2 * static_cast<double>(i) / static_cast<double>(steps - 1);
  return alignCorners ? v : v * static_cast<double>(steps - 1) / static_cast<double>(steps);
}

Expected<std::vector<TensorType>> inferAffineGrid(const OpCall& call) {
  SMELT_CHECK_OK(expectDType(call, 0, dtypes::kFloat));
  const TensorType& theta = call.operand(0);
  if (theta.rank() != 3 || theta.shape[1] != 2 || theta.shape[2] != 3) {
    return call.error("{} must have shape [N,2,3], got {}", operandName(call, 0), theta.toString());
  }
  SMELT_CHECK_OK(expectListSize(call, "size", 4));
  const std::vector<int64_t>& size = call.getInts("size");
  int64_t elements = 2;
  for (int64_t d : size) {
    if (d < 1) return call.error("attribute 'size' must be positive, got [{}]", fmt::join(size, ", "));
    if (d > kMaxElements / elements) {
      return call.error("attribute 'size' [{}] gives a result that is too large", fmt::join(size, ", "));
    }
    elements *= d;
  }
  if (size[0] != theta.shape[0]) {
    return call.error("attribute 'size' has batch {} but {} has batch {}", size[0], operandName(call, 0),
                      theta.shape[0]);
  }
  SMELT_CHECK_OK(expectFlag(call, "align_corners"));
  return single(TensorType{theta.dtype, {size[0], size[2], size[3], 2}});
}

Expected<std::vector<Tensor>> referenceAffineGrid(const OpCall& call, std::span<const Tensor> in) {
  const std::vector<int64_t>& size = call.getInts("size");
  bool alignCorners = call.getInt("align_corners") == 1;
  int64_t n = size[0], h = size[2], w = size[3];
  std::vector<double> theta = in[0].toDoubles();
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n * h * w * 2));
  for (int64_t b = 0; b < n; ++b) {
    const double* t = theta.data() + b * 6;
    for (int64_t i = 0; i < h; ++i) {
      double y = baseCoordinate(i, h, alignCorners);
      for (int64_t j = 0; j < w; ++j) {
        double x = baseCoordinate(j, w, alignCorners);
        // (x, y, 1) times theta^T: the grid holds (x, y) source coordinates, x first.
        out.push_back(t[0] * x + t[1] * y + t[2]);
        out.push_back(t[3] * x + t[4] * y + t[5]);
      }
    }
  }
  return std::vector<Tensor>{Tensor::fromDoubles(call.results()[0], out)};
}

}  // namespace

void registerSamplingOps(OpRegistry& registry) {
  registry.add(OpDef{
      .name = "grid_sample",
      .summary = "Samples x[N,C,H,W] at the normalized (x, y) points of grid[N,Ho,Wo,2] (PyTorch grid_sample).",
      .operands = {{"input"}, {"grid"}},
      .attrs = {{"mode", AttrKind::String, Attribute{std::string("bilinear")}},
                {"padding_mode", AttrKind::String, Attribute{std::string("zeros")}},
                {"align_corners", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferGridSample,
      .reference = referenceGridSample,
      .example = R"(graph @t(%x: $T[1,2,3,4], %g: $T[1,2,3,2]) {
  %0 = grid_sample(%x, %g) : $T[1,2,2,3]
  %1 = grid_sample(%x, %g) {align_corners = 1, mode = "bicubic", padding_mode = "reflection"} : $T[1,2,2,3]
  %2 = grid_sample(%x, %g) {mode = "nearest", padding_mode = "border"} : $T[1,2,2,3]
  return r = %0, s = %1, t = %2
})",
  });
  registry.add(OpDef{
      .name = "affine_grid",
      .summary = "The sampling grid [N,H,W,2] of the affine maps theta[N,2,3] (PyTorch affine_grid).",
      .operands = {{"theta"}},
      .attrs = {{"size", AttrKind::Ints, std::nullopt}, {"align_corners", AttrKind::Int, Attribute{int64_t{0}}}},
      .fusion = FusionKind::Opaque,
      .dtypes = dtypes::kFloat,
      .infer = inferAffineGrid,
      .reference = referenceAffineGrid,
      .example = R"(graph @t(%theta: $T[2,2,3], %x: $T[2,3,4,5]) {
  %0 = affine_grid(%theta) {align_corners = 1, size = [2, 3, 4, 5]} : $T[2,4,5,2]
  %1 = grid_sample(%x, %0) {align_corners = 1} : $T[2,3,4,5]
  return g = %0, y = %1
})",
  });
}

}  // namespace smelt
