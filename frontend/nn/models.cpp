// See models.h.
#include "frontend/nn/models.h"

#include <fmt/format.h>

#include <cmath>

namespace smelt::nn {

namespace {

/// torchvision's convolution initialization: kaiming_normal_(mode="fan_out", nonlinearity="relu").
ModulePtr conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return conv2d(in, out, kernel,
                {.stride = stride, .padding = padding, .bias = false, .weightInit = kaimingNormal(out * kernel * kernel)});
}

/// Two 3x3 convolutions with batch norms, added to the (projected) input, then ReLU.
class BasicBlock final : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride)
      : in_(in), out_(out), stride_(stride), conv1_(conv(in, out, 3, stride, 1)), bn1_(batchNorm(out)),
        conv2_(conv(out, out, 3, 1, 1)), bn2_(batchNorm(out)) {
    if (stride != 1 || in != out) downsample_ = sequential({conv(in, out, 1, stride, 0), batchNorm(out)});
  }

  Value* forward(GraphContext& ctx, Value* x) override {
    auto child = [&](const char* name, const ModulePtr& m, Value* v) {
      return v ? ctx.scoped(name, [&] { return m->forward(ctx, v); }, m->describe()) : nullptr;
    };
    Value* y = child("bn1", bn1_, child("conv1", conv1_, x));
    y = y ? ctx.b().op("relu", {y}) : nullptr;
    y = child("bn2", bn2_, child("conv2", conv2_, y));
    Value* shortcut = downsample_ ? child("downsample", downsample_, x) : x;
    if (!y || !shortcut) return nullptr;
    return ctx.b().op("relu", {ctx.b().add(y, shortcut)});
  }

  std::string describe() const override {
    return fmt::format("BasicBlock({} -> {}, stride {}{})", in_, out_, stride_, downsample_ ? ", projected" : "");
  }

 private:
  int64_t in_, out_, stride_;
  ModulePtr conv1_, bn1_, conv2_, bn2_, downsample_;
};

}  // namespace

ModulePtr resnet18(int64_t numClasses) {
  auto net = sequential({});
  net->add(conv(3, 64, 7, 2, 3), "conv1");
  net->add(batchNorm(64), "bn1");
  net->add(relu(), "relu");
  net->add(maxPool2d(3, 2, 1), "maxpool");
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    int64_t width = int64_t{64} << stage;
    auto layer = sequential({std::make_shared<BasicBlock>(channels, width, stage == 0 ? 1 : 2),
                             std::make_shared<BasicBlock>(width, width, 1)});
    net->add(layer, fmt::format("layer{}", stage + 1));
    channels = width;
  }
  net->add(globalAvgPool2d(), "avgpool");
  net->add(flatten(), "flatten");
  net->add(linear(512, numClasses), "fc");
  return net;
}

}  // namespace smelt::nn
