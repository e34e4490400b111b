// Sampling ops: grid_sample (PyTorch's grid_sample, which ONNX GridSample follows) and affine_grid
// (PyTorch's affine_grid), the two halves of a spatial transformer.
//   %g = affine_grid(%theta) {size = [1, 3, 8, 8]} : f32[1,8,8,2]
//   %y = grid_sample(%x, %g) {mode = "bicubic", padding_mode = "border"} : f32[1,3,8,8]
#include "ir/builder.h"
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


// ---- Decompositions: grid_sample and affine_grid in registry ops, so both take their gradients (and
// gradients of gradients) from the primitives. Each step mirrors the reference above.

template <typename T>
const T& attrOf(const Node& node, std::string_view name) {
  return std::get<T>(node.attrs().find(name)->second);
}

/// Emits one grid_sample node's computation. Coordinates are [N,P] (P = Ho*Wo); each tap gathers rows
/// of the input flattened to [N*H*W, C] at n*H*W + iy*W + ix and is weighted by a separable weight.
class GridSampleEmitter {
 public:
  GridSampleEmitter(Builder& b, const Node& node)
      : b_(b),
        dtype_(node.operand(0)->dtype()),
        p_{*parseInterp(attrOf<std::string>(node, "mode")), *parsePadding(attrOf<std::string>(node, "padding_mode")),
           attrOf<int64_t>(node, "align_corners") == 1} {}

  Value* emit(Value* x, Value* grid) {
    const Shape& xs = x->shape();
    const Shape& gs = grid->shape();
    int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], ho = gs[1], wo = gs[2];
    Value* flat = b_.reshape(b_.transpose(x, {0, 2, 3, 1}), {n * h * w, c});
    Value* gx = b_.reshape(component(grid, 0), {n, ho * wo});
    Value* gy = b_.reshape(component(grid, 1), {n, ho * wo});
    Axis ax = axis(gx, w);
    Axis ay = axis(gy, h);
    // The first row of batch n starts at n*H*W.
    std::vector<double> starts;
    for (int64_t i = 0; i < n; ++i) starts.push_back(static_cast<double>(i * h * w));
    Value* batchStart = b_.op("constant", {}, {{"value", Tensor::fromDoubles(TensorType{DType::i64, {n, 1}}, starts)}});

    // sum_j wy_j * sum_i wx_i * x[iy_j, ix_i], the reference's order; taps outside the input read 0.
    Value* out = nullptr;
    for (size_t j = 0; j < ay.index.size(); ++j) {
      Value* rowStart = b_.add(batchStart, b_.mul(ay.index[j], b_.scalar(static_cast<double>(w), DType::i64)));
      Value* row = nullptr;
      for (size_t i = 0; i < ax.index.size(); ++i) {
        Value* tap = b_.op("gather", {flat, b_.add(rowStart, ax.index[i])}, {{"axis", int64_t{0}}});  // [N,P,C]
        Value* inside = lastAxis(b_.op("and", {ay.inside[j], ax.inside[i]}));
        tap = b_.where(inside, tap, b_.scalar(0.0, dtype_));
        if (!ax.weight.empty()) tap = b_.mul(tap, lastAxis(ax.weight[i]));
        row = row ? b_.add(row, tap) : tap;
      }
      if (!ay.weight.empty()) row = b_.mul(row, lastAxis(ay.weight[j]));
      out = out ? b_.add(out, row) : row;
    }
    return b_.transpose(b_.reshape(out, {n, ho, wo, c}), {0, 3, 1, 2});
  }

 private:
  /// The taps along one axis: integer indices clamped into range, whether each lies inside, and the
  /// interpolation weights (none for nearest).
  struct Axis {
    std::vector<Value*> index;
    std::vector<Value*> inside;
    std::vector<Value*> weight;
  };

  Value* k(double v) { return b_.scalar(v, dtype_); }
  Value* floor(Value* v) { return b_.op("floor", {v}); }
  Value* lastAxis(Value* v) { return b_.op("unsqueeze", {v}, {{"axes", std::vector<int64_t>{2}}}); }

  Value* component(Value* grid, int64_t i) {
    using Ints = std::vector<int64_t>;
    return b_.op("slice", {grid}, {{"starts", Ints{i}}, {"ends", Ints{i + 1}}, {"axes", Ints{3}}});
  }

  Value* unnormalize(Value* g, int64_t size) {
    Value* g1 = b_.add(g, k(1));
    if (p_.alignCorners) return b_.mul(b_.div(g1, k(2)), k(static_cast<double>(size - 1)));
    return b_.div(b_.sub(b_.mul(g1, k(static_cast<double>(size))), k(1)), k(2));
  }

  // clipCoordinate with ATen's gradient (clip_coordinates_set_grad): 1 strictly inside (0, size-1), 0
  // at and past the bounds, which ATen counts as outside (the clip op would pass dy at the bounds).
  // Like the reference's min(size-1, max(v, 0)), NaN gives size-1.
  Value* clipCoordinate(Value* v, int64_t size) {
    Value* hi = k(static_cast<double>(size - 1));
    Value* inside = b_.op("and", {b_.op("gt", {v, k(0)}), b_.op("lt", {v, hi})});
    return b_.where(inside, v, b_.where(b_.op("le", {v, k(0)}), k(0), hi));
  }

  // A whole-number tap clamped into [0, size) and cast to an index (it takes no gradient).
  Value* clampIndex(Value* v, int64_t size) {
    return b_.cast(b_.op("clip", {v}, {{"min", 0.0}, {"max", static_cast<double>(size - 1)}}), DType::i64);
  }

  // True where the whole number v is odd: v - 2*floor(v/2) != 0 (exact for whole numbers).
  Value* isOdd(Value* v) {
    Value* half = floor(b_.div(v, k(2)));
    return b_.op("ne", {b_.sub(v, b_.mul(half, k(2))), k(0)});
  }

  // reflectCoordinate: fmod(a, span) as a - floor(a/span)*span for a >= 0. |v - low| is taken as
  // (v - low) * (v - low < 0 ? -1 : 1), so its slope at 0 is +1 as in ATen's reflect_coordinates_set_grad
  // (abs would give 0).
  Value* reflectCoordinate(Value* v, int64_t twiceLow, int64_t twiceHigh) {
    if (twiceLow == twiceHigh) return b_.zerosLike(v);
    double low = static_cast<double>(twiceLow) / 2;
    double span = static_cast<double>(twiceHigh - twiceLow) / 2;
    Value* d = b_.sub(v, k(low));
    Value* a = b_.mul(d, b_.where(b_.op("lt", {d, k(0)}), k(-1), k(1)));
    Value* flips = floor(b_.div(a, k(span)));
    Value* extra = b_.sub(a, b_.mul(flips, k(span)));
    return b_.where(isOdd(flips), b_.add(b_.sub(k(span), extra), k(low)), b_.add(extra, k(low)));
  }

  Value* padCoordinate(Value* v, int64_t size) {
    if (p_.padding == Padding::Border) return clipCoordinate(v, size);
    if (p_.padding == Padding::Reflection) {
      v = p_.alignCorners ? reflectCoordinate(v, 0, 2 * (size - 1)) : reflectCoordinate(v, -1, 2 * size - 1);
      return clipCoordinate(v, size);
    }
    return v;
  }

  // nearbyint (half to even) exactly: floor(v) + 1 where the fraction is above 1/2, or exactly 1/2
  // with floor(v) odd. (floor(v + 0.5) rounds halves up, and v + 0.5 itself can round.)
  Value* roundHalfEven(Value* v) {
    Value* down = floor(v);
    Value* frac = b_.sub(v, down);
    Value* up = b_.op("or", {b_.op("gt", {frac, k(0.5)}),
                             b_.op("and", {b_.op("eq", {frac, k(0.5)}), isOdd(down)})});
    return b_.add(down, b_.where(up, k(1), k(0)));
  }

  // Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for fraction t.
  std::vector<Value*> cubicWeights(Value* t) {
    constexpr double a = -0.75;
    auto near = [&](Value* v) {  // ((a + 2) * v - (a + 3)) * v * v + 1
      return b_.add(b_.mul(b_.mul(b_.sub(b_.mul(k(a + 2), v), k(a + 3)), v), v), k(1));
    };
    auto far = [&](Value* v) {  // ((a * v - 5a) * v + 8a) * v - 4a
      return b_.sub(b_.mul(b_.add(b_.mul(b_.sub(b_.mul(k(a), v), k(5 * a)), v), k(8 * a)), v), k(4 * a));
    };
    return {far(b_.add(t, k(1))), near(t), near(b_.sub(k(1), t)), far(b_.sub(k(2), t))};
  }

  // The taps along one axis of extent `size` for normalized coordinates g. The weights depend on g
  // through the fraction ix - floor(ix); floor and the indices carry no gradient, as in ATen.
  Axis axis(Value* g, int64_t size) {
    std::vector<Value*> coords;
    Axis out;
    Value* ix = unnormalize(g, size);
    if (p_.interp == Interp::Nearest) {
      coords.push_back(roundHalfEven(padCoordinate(ix, size)));
    } else if (p_.interp == Interp::Bilinear) {
      ix = padCoordinate(ix, size);
      Value* x0 = floor(ix);
      Value* frac = b_.sub(ix, x0);
      coords = {x0, b_.add(x0, k(1))};
      out.weight = {b_.sub(k(1), frac), frac};
    } else {
      // Bicubic pads each tap, so the unpadded coordinate picks the 4 taps.
      Value* x0 = floor(ix);
      out.weight = cubicWeights(b_.sub(ix, x0));
      for (int i = 0; i < 4; ++i) coords.push_back(padCoordinate(b_.add(x0, k(i - 1)), size));
    }
    for (Value* v : coords) {
      // Taps are whole numbers here, so the reference's truncation is the identity.
      out.inside.push_back(b_.op("and", {b_.op("ge", {v, k(0)}),
                                         b_.op("lt", {v, k(static_cast<double>(size))})}));
      out.index.push_back(clampIndex(v, size));
    }
    return out;
  }

  Builder& b_;
  DType dtype_;
  GridSampleParams p_;
};

std::vector<Value*> decomposeGridSample(Builder& b, const Node& node) {
  GridSampleEmitter emitter(b, node);
  return {emitter.emit(node.operand(0), node.operand(1))};
}

// A constant base grid [H*W, 3] of rows (x, y, 1), times theta transposed: [N, H*W, 2] -> [N,H,W,2].
std::vector<Value*> decomposeAffineGrid(Builder& b, const Node& node) {
  const std::vector<int64_t>& size = attrOf<std::vector<int64_t>>(node, "size");
  bool alignCorners = attrOf<int64_t>(node, "align_corners") == 1;
  int64_t n = size[0], h = size[2], w = size[3];
  Value* theta = node.operand(0);
  std::vector<double> base;
  base.reserve(static_cast<size_t>(h * w * 3));
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      base.insert(base.end(), {baseCoordinate(j, w, alignCorners), baseCoordinate(i, h, alignCorners), 1.0});
    }
  }
  Value* baseGrid =
      b.op("constant", {}, {{"value", Tensor::fromDoubles(TensorType{theta->dtype(), {h * w, 3}}, base)}});
  Value* points = b.op("matmul", {baseGrid, b.transpose(theta, {0, 2, 1})});
  return {b.reshape(points, {n, h, w, 2})};
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
      // The grid is a fixed pattern plus a small random part, base + tanh(g)/32. The base points sit at
      // least 1/16 pixel (for either alignment) from the whole and half pixel coordinates where
      // bilinear interpolation and the paddings have kinks, bicubic's second derivative jumps and
      // nearest jumps, so finite differences never straddle one. They lie inside, on both edges, just
      // outside and far outside (reflected once or twice). Every mode meets every padding.
      .example = R"(graph @t(%x: $T[2,2,3,4], %g: $T[2,2,4,2]) {
  %base = constant() {value = dense<$T[2,2,4,2]> [-2.125, 0.25, -1.125, -3.25, -0.875, 1.125, -0.125, -0.75, 0.4375, 1.875, 0.875, -1.25, 1.125, 0.75, 3.4375, -0.125, 3.4375, -0.75, 1.125, 1.875, 0.875, -1.25, 0.4375, 0.75, -0.125, -0.125, -0.875, 0.25, -1.125, -3.25, -2.125, 1.125]} : $T[2,2,4,2]
  %scale = constant() {value = dense<$T[]> [0.03125]} : $T[]
  %t = tanh(%g) : $T[2,2,4,2]
  %u = mul(%t, %scale) : $T[2,2,4,2]
  %grid = add(%base, %u) : $T[2,2,4,2]
  %0 = grid_sample(%x, %grid) : $T[2,2,2,4]
  %1 = grid_sample(%x, %grid) {align_corners = 1, mode = "bicubic", padding_mode = "reflection"} : $T[2,2,2,4]
  %2 = grid_sample(%x, %grid) {mode = "nearest", padding_mode = "border"} : $T[2,2,2,4]
  %3 = grid_sample(%x, %grid) {align_corners = 1, padding_mode = "border"} : $T[2,2,2,4]
  %4 = grid_sample(%x, %grid) {padding_mode = "reflection"} : $T[2,2,2,4]
  %5 = grid_sample(%x, %grid) {align_corners = 1, padding_mode = "reflection"} : $T[2,2,2,4]
  %6 = grid_sample(%x, %grid) {mode = "bicubic"} : $T[2,2,2,4]
  %7 = grid_sample(%x, %grid) {align_corners = 1, mode = "bicubic", padding_mode = "border"} : $T[2,2,2,4]
  %8 = grid_sample(%x, %grid) {mode = "bicubic", padding_mode = "reflection"} : $T[2,2,2,4]
  %9 = grid_sample(%x, %grid) {align_corners = 1, mode = "nearest"} : $T[2,2,2,4]
  %10 = grid_sample(%x, %grid) {mode = "nearest", padding_mode = "reflection"} : $T[2,2,2,4]
  return r = %0, s = %1, t = %2, u = %3, v = %4, w = %5, a = %6, b = %7, c = %8, d = %9, e = %10
})",
      .decompose = decomposeGridSample,
      // Per output element: 2 per tap (nearest 1 tap, bilinear 4, bicubic 16) plus ~10 for coordinates.
      .flops = [](const OpCall& c) {
        const std::string& mode = c.getString("mode");
        int64_t taps = mode == "nearest" ? 1 : mode == "bicubic" ? 16 : 4;
        return c.results()[0].numel() * (2 * taps + 10);
      },
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
      // A spatial transformer, %3: near-identity maps base + tanh(theta)/64 whose sampling points stay
      // at least 1/4 pixel from the pixel centers, where bilinear sampling has kinks (so finite
      // differences never straddle one).
      .example = R"(graph @t(%theta: $T[2,2,3], %x: $T[2,3,4,5]) {
  %0 = affine_grid(%theta) {align_corners = 1, size = [2, 3, 4, 5]} : $T[2,4,5,2]
  %1 = affine_grid(%theta) {size = [2, 1, 3, 1]} : $T[2,3,1,2]
  %base = constant() {value = dense<$T[2,2,3]> [1.0625, -0.0625, -0.25, -0.0625, 1, -0.3125, 1, 0, 0.3125, 0, 1, 0.25]} : $T[2,2,3]
  %scale = constant() {value = dense<$T[]> [0.015625]} : $T[]
  %t = tanh(%theta) : $T[2,2,3]
  %u = mul(%t, %scale) : $T[2,2,3]
  %th = add(%base, %u) : $T[2,2,3]
  %2 = affine_grid(%th) {align_corners = 1, size = [2, 3, 4, 5]} : $T[2,4,5,2]
  %3 = grid_sample(%x, %2) {align_corners = 1} : $T[2,3,4,5]
  return g = %0, h = %1, y = %3
})",
      .decompose = decomposeAffineGrid,
  });
}

}  // namespace smelt
