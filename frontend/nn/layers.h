// Layers, composed with Sequential or custom modules, in the shape of PyTorch's C++ frontend: a module
// describes its computation once; forward() emits it into the graph being built, with its parameters
// named as PyTorch's state_dict names them ("0.weight", "features.3.bias").
//   auto net = nn::sequential({nn::conv2d(1, 16, 3, {.padding = 1}), nn::relu(), nn::maxPool2d(2),
//                              nn::flatten(), nn::linear(16 * 4 * 4, 10)});
//   Value* logits = net->forward(ctx, x);
#pragma once

#include "frontend/nn/graph_context.h"

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace smelt::nn {

/// A piece of a model. forward() adds its computation on `x` to ctx's graph; parameters come from
/// ctx.parameter(), under the name prefix the caller set.
class Module {
 public:
  virtual ~Module() = default;
  virtual Value* forward(GraphContext& ctx, Value* x) = 0;
  /// One line for summaries: "Linear(784 -> 10)".
  virtual std::string describe() const = 0;
};
using ModulePtr = std::shared_ptr<Module>;

/// Children run in order, each under its index as name prefix ("0.", "1.", ...), or under a name.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<ModulePtr> children);
  Sequential& add(ModulePtr child, std::string name = {});
  Value* forward(GraphContext& ctx, Value* x) override;
  std::string describe() const override;
  const std::vector<std::pair<std::string, ModulePtr>>& children() const { return children_; }

 private:
  std::vector<std::pair<std::string, ModulePtr>> children_;
};

/// y = x W^T + b, W [out, in] (torch.nn.Linear's layout and initialization).
struct LinearOptions {
  bool bias = true;
};
ModulePtr linear(int64_t in, int64_t out, LinearOptions options = {});

/// NCHW convolution, weight [out, in / groups, k, k].
struct Conv2DOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  /// The weight's initializer; empty: PyTorch's default, U(-b, b) with b = 1/sqrt(fan_in).
  Initializer weightInit = {};
};
ModulePtr conv2d(int64_t in, int64_t out, int64_t kernel, Conv2DOptions options = {});
/// NCHW transposed convolution, weight [in, out / groups, k, k].
struct ConvTranspose2DOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t outputPadding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};
ModulePtr convTranspose2d(int64_t in, int64_t out, int64_t kernel, ConvTranspose2DOptions options = {});

/// Pooling windows of `kernel` (stride defaults to the kernel, as in PyTorch).
ModulePtr maxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
ModulePtr avgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);

/// Batch normalization over the channels (axis 1): batch statistics while training (the running
/// ones updated with `momentum` as PyTorch does), running statistics in evaluation graphs.
ModulePtr batchNorm(int64_t channels, double epsilon = 1e-5, double momentum = 0.1);
/// Layer normalization over the last axis, with weight and bias.
ModulePtr layerNorm(int64_t features, double epsilon = 1e-5);
/// Zeroes elements with probability `ratio` in training graphs (scaling the rest); identity otherwise.
ModulePtr dropout(double ratio);
/// Rows of a [count, dim] table picked by integer indices.
ModulePtr embedding(int64_t count, int64_t dim);
/// [N, ...] -> [N, rest].
ModulePtr flatten();
/// The mean over each channel's positions: [N, C, H, W] -> [N, C, 1, 1] (AdaptiveAvgPool2d(1)).
ModulePtr globalAvgPool2d();

/// Activations.
ModulePtr relu();
ModulePtr leakyRelu(double slope = 0.01);
ModulePtr sigmoid();
ModulePtr tanh();
ModulePtr gelu();
ModulePtr silu();
ModulePtr softmax(int64_t axis = -1);
ModulePtr logSoftmax(int64_t axis = -1);

inline std::shared_ptr<Sequential> sequential(std::vector<ModulePtr> children) {
  return std::make_shared<Sequential>(std::move(children));
}

}  // namespace smelt::nn
