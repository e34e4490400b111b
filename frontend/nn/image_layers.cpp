// GroupNorm, Upsample and PixelShuffle (layers.h): compositions of registry ops, with PyTorch's semantics.
#include "frontend/nn/layers.h"
#include "ir/resize.h"

#include <fmt/format.h>

namespace smelt::nn {

namespace {

class GroupNorm final : public Module {
 public:
  GroupNorm(int64_t groups, int64_t channels, double epsilon, bool affine)
      : g_(groups), c_(channels), eps_(epsilon), affine_(affine) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    if (!x) return nullptr;
    const TensorType& t = x->type();
    if (g_ <= 0 || c_ % g_ != 0) {
      return b.fail(makeError("GroupNorm: {} channels do not split into {} groups", c_, g_));
    }
    if (t.rank() < 2 || t.shape[1] != c_) {
      return b.fail(makeError("GroupNorm({}, {}): input must be [N, {}, ...], got {}", g_, c_, c_, t.toString()));
    }
    int64_t perGroup = c_ / g_;
    for (size_t d = 2; d < t.shape.size(); ++d) {
      if (isSymbolic(t.shape[d]))
        return b.fail(makeError("GroupNorm: spatial dims must be static, got {}", t.toString()));
      perGroup *= t.shape[d];
    }
    // Each (sample, group) normalized over its channels and positions: a layer norm of [N, G, C/G * positions].
    Value* grouped = b.reshape(x, {t.shape[0], g_, perGroup});
    Value* normed = b.op("layer_norm", {grouped}, {{"axis", int64_t{-1}}, {"epsilon", eps_}});
    Value* y = b.reshape(normed, t.shape);
    if (!affine_) return y;
    Shape perChannel(t.shape.size() - 1, 1);  // [C, 1, ...] broadcasts over the positions
    perChannel[0] = c_;
    Value* w = b.reshape(ctx.parameter("weight", {c_}, ones()), perChannel);
    Value* bias = b.reshape(ctx.parameter("bias", {c_}, zeros()), perChannel);
    return b.add(b.mul(y, w), bias);
  }
  std::string describe() const override { return fmt::format("GroupNorm({} groups, {} channels)", g_, c_); }

 private:
  int64_t g_, c_;
  double eps_;
  bool affine_;
};

class Upsample final : public Module {
 public:
  explicit Upsample(UpsampleOptions o) : o_(std::move(o)) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    if (!x) return nullptr;
    const TensorType& t = x->type();
    if (t.rank() != 4 || isSymbolic(t.shape[2]) || isSymbolic(t.shape[3])) {
      return b.fail(makeError("Upsample: input must be [N, C, H, W] with static H and W, got {}", t.toString()));
    }
    ResizeMode m;
    if (o_.mode == "nearest") {
      m.interp = ResizeInterp::Nearest;  // PyTorch's legacy nearest: floor(o * in / out)
      m.coordinates = "asymmetric";
      m.nearest = "floor";
    } else if (o_.mode == "bilinear" || o_.mode == "bicubic") {
      m.interp = o_.mode == "bilinear" ? ResizeInterp::Linear : ResizeInterp::Cubic;
      m.coordinates = o_.alignCorners ? "align_corners" : "pytorch_half_pixel";
    } else {
      return b.fail(makeError("Upsample: mode '{}' is not nearest, bilinear or bicubic", o_.mode));
    }
    std::vector<int64_t> sizes{t.shape[0], t.shape[1], 0, 0};
    std::vector<double> scales{1.0, 1.0, o_.scale, o_.scale};
    for (size_t d = 2; d < 4; ++d) {
      int64_t in = t.shape[d];
      if (!o_.size.empty()) {
        if (o_.size.size() != 2 || o_.size[d - 2] <= 0) {
          return b.fail(makeError("Upsample: size must be two positive extents [H, W]"));
        }
        sizes[d] = o_.size[d - 2];
        scales[d] = static_cast<double>(sizes[d]) / static_cast<double>(in);
      } else {
        if (!(o_.scale > 0)) return b.fail(makeError("Upsample: scale {} must be positive", o_.scale));
        sizes[d] = static_cast<int64_t>(std::floor(static_cast<double>(in) * o_.scale));
      }
    }
    return resize(b, x, sizes, scales, {}, m);
  }
  std::string describe() const override {
    return o_.size.empty() ? fmt::format("Upsample(x{}, {})", o_.scale, o_.mode)
                           : fmt::format("Upsample({}x{}, {})", o_.size.at(0), o_.size.at(1), o_.mode);
  }

 private:
  UpsampleOptions o_;
};

class PixelShuffle final : public Module {
 public:
  explicit PixelShuffle(int64_t factor) : r_(factor) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    if (!x) return nullptr;
    const Shape& s = x->shape();
    if (r_ <= 0 || s.size() != 4 || isSymbolic(s[1]) || s[1] % (r_ * r_) != 0 || isSymbolic(s[2]) || isSymbolic(s[3])) {
      return b.fail(makeError("PixelShuffle({}): input must be [N, C * {}, H, W] with static C, H, W, got {}", r_,
                              r_ * r_, x->type().toString()));
    }
    int64_t c = s[1] / (r_ * r_);
    Value* split = b.reshape(x, {s[0], c, r_, r_, s[2], s[3]});
    Value* interleaved = b.transpose(split, {0, 1, 4, 2, 5, 3});  // [N, C, H, r, W, r]
    return b.reshape(interleaved, {s[0], c, s[2] * r_, s[3] * r_});
  }
  std::string describe() const override { return fmt::format("PixelShuffle({})", r_); }

 private:
  int64_t r_;
};

}  // namespace

ModulePtr groupNorm(int64_t groups, int64_t channels, double epsilon, bool affine) {
  return std::make_shared<GroupNorm>(groups, channels, epsilon, affine);
}
ModulePtr upsample(UpsampleOptions options) { return std::make_shared<Upsample>(std::move(options)); }
ModulePtr pixelShuffle(int64_t factor) { return std::make_shared<PixelShuffle>(factor); }

}  // namespace smelt::nn
