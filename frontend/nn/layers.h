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
#include <optional>
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

/// y = x W^T + b, W [out, in] (torch.nn.Linear's layout and initialization); x is [..., in].
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
struct EmbeddingOptions {
  /// torch.nn.Embedding's padding_idx: that row starts at zero and gets no gradient (negative counts from the end).
  std::optional<int64_t> paddingIndex;
};
ModulePtr embedding(int64_t count, int64_t dim, EmbeddingOptions options = {});
/// [N, ...] -> [N, rest].
ModulePtr flatten();
/// The mean over each channel's positions: [N, C, H, W] -> [N, C, 1, 1] (AdaptiveAvgPool2d(1)).
ModulePtr globalAvgPool2d();

/// Group normalization over [N, C, ...]: the channels in `groups` groups, each normalized over its channels and
/// positions, then a per-channel weight and bias (torch.nn.GroupNorm; `affine` false: none).
ModulePtr groupNorm(int64_t groups, int64_t channels, double epsilon = 1e-5, bool affine = true);

/// Resizes the spatial dims of [N, C, H, W] as torch.nn.Upsample / F.interpolate does: by `scale` (or to `size`,
/// when given), in mode "nearest", "bilinear" or "bicubic"; alignCorners as PyTorch's align_corners (the linear
/// modes). The interpolation is ir/resize.h's, shared with ONNX's Resize.
struct UpsampleOptions {
  double scale = 2.0;
  std::vector<int64_t> size;  ///< [H, W]; replaces scale when given
  std::string mode = "nearest";
  bool alignCorners = false;
};
ModulePtr upsample(UpsampleOptions options = {});
/// [N, C * r * r, H, W] -> [N, C, H * r, W * r] (torch.nn.PixelShuffle).
ModulePtr pixelShuffle(int64_t factor);

/// Recurrent layers over [seq, batch, in] ([batch, seq, in] with batchFirst), unrolled over the (static) sequence
/// by ir/recurrent.h, with torch.nn.LSTM/GRU's parameter names (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0,
/// "_reverse" for the second direction), gate layouts and initialization U(-1/sqrt(hidden), 1/sqrt(hidden)). The
/// result is the last layer's output at every step, [seq, batch, directions * hidden]; initial states are zero.
struct RecurrentOptions {
  int64_t layers = 1;
  bool bidirectional = false;
  bool batchFirst = false;
  bool bias = true;
  /// Dropout on each layer's output but the last, in training graphs (PyTorch's dropout option).
  double dropout = 0;
};
ModulePtr lstm(int64_t in, int64_t hidden, RecurrentOptions options = {});
ModulePtr gru(int64_t in, int64_t hidden, RecurrentOptions options = {});

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
