// See layers.h. Each layer is a small class holding its sizes; forward() emits registry ops.
#include "frontend/nn/layers.h"

#include <fmt/format.h>

#include <cmath>

namespace smelt::nn {

namespace {

using Ints = std::vector<int64_t>;

Ints pair(int64_t v) { return {v, v}; }
Ints quad(int64_t v) { return {v, v, v, v}; }

class Linear final : public Module {
 public:
  Linear(int64_t in, int64_t out, LinearOptions o) : in_(in), out_(out), o_(o) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    // torch.nn.Linear: weight and bias U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5)).
    double bound = 1.0 / std::sqrt(static_cast<double>(in_));
    Value* w = ctx.parameter("weight", {out_, in_}, uniform(bound));
    Value* b = o_.bias ? ctx.parameter("bias", {out_}, uniform(bound)) : nullptr;
    if (x && x->type().rank() != 2) {  // [..., in] -> [..., out], as torch.nn.Linear takes any leading dims
      Value* y = ctx.b().op("matmul", {x, ctx.b().transpose(w, {1, 0})});
      return b ? ctx.b().add(y, b) : y;
    }
    std::vector<Value*> operands{x, w};
    if (b) operands.push_back(b);
    return ctx.b().op("gemm", operands, {{"trans_b", int64_t{1}}});
  }
  std::string describe() const override { return fmt::format("Linear({} -> {}{})", in_, out_, o_.bias ? "" : ", no bias"); }

 private:
  int64_t in_, out_;
  LinearOptions o_;
};

class Conv2D final : public Module {
 public:
  Conv2D(int64_t in, int64_t out, int64_t kernel, Conv2DOptions o) : in_(in), out_(out), k_(kernel), o_(o) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    int64_t fanIn = in_ / o_.groups * k_ * k_;
    double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
    Value* w = ctx.parameter("weight", {out_, in_ / o_.groups, k_, k_}, o_.weightInit ? o_.weightInit : uniform(bound));
    std::vector<Value*> operands{x, w};
    if (o_.bias) operands.push_back(ctx.parameter("bias", {out_}, uniform(bound)));
    return ctx.b().op("conv2d", operands,
                      {{"stride", pair(o_.stride)}, {"padding", quad(o_.padding)}, {"dilation", pair(o_.dilation)},
                       {"groups", o_.groups}});
  }
  std::string describe() const override {
    return fmt::format("Conv2D({} -> {}, {}x{}, stride {}, padding {})", in_, out_, k_, k_, o_.stride, o_.padding);
  }

 private:
  int64_t in_, out_, k_;
  Conv2DOptions o_;
};

class ConvTranspose2D final : public Module {
 public:
  ConvTranspose2D(int64_t in, int64_t out, int64_t kernel, ConvTranspose2DOptions o)
      : in_(in), out_(out), k_(kernel), o_(o) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    int64_t fanIn = out_ / o_.groups * k_ * k_;  // PyTorch computes it from weight dim 1
    double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
    Value* w = ctx.parameter("weight", {in_, out_ / o_.groups, k_, k_}, uniform(bound));
    std::vector<Value*> operands{x, w};
    if (o_.bias) operands.push_back(ctx.parameter("bias", {out_}, uniform(bound)));
    return ctx.b().op("conv_transpose2d", operands,
                      {{"stride", pair(o_.stride)}, {"padding", quad(o_.padding)},
                       {"output_padding", pair(o_.outputPadding)}, {"dilation", pair(o_.dilation)},
                       {"groups", o_.groups}});
  }
  std::string describe() const override { return fmt::format("ConvTranspose2D({} -> {}, {}x{})", in_, out_, k_, k_); }

 private:
  int64_t in_, out_, k_;
  ConvTranspose2DOptions o_;
};

class Pool2D final : public Module {
 public:
  Pool2D(std::string op, int64_t kernel, int64_t stride, int64_t padding)
      : op_(std::move(op)), k_(kernel), s_(stride > 0 ? stride : kernel), p_(padding) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    AttrMap attrs{{"kernel", pair(k_)}, {"stride", pair(s_)}, {"padding", quad(p_)}};
    if (op_ == "avg_pool2d") attrs["count_include_pad"] = int64_t{1};  // PyTorch's default
    return ctx.b().op(op_, {x}, attrs);
  }
  std::string describe() const override { return fmt::format("{}({}x{}, stride {})", op_, k_, k_, s_); }

 private:
  std::string op_;
  int64_t k_, s_, p_;
};

class BatchNorm final : public Module {
 public:
  BatchNorm(int64_t channels, double epsilon, double momentum) : c_(channels), eps_(epsilon), momentum_(momentum) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Value* scale = ctx.parameter("weight", {c_}, ones());
    Value* bias = ctx.parameter("bias", {c_}, zeros());
    Value* mean = ctx.parameter("running_mean", {c_}, zeros(), /*trainable=*/false);
    Value* var = ctx.parameter("running_var", {c_}, ones(), /*trainable=*/false);
    if (!ctx.training()) return ctx.b().op("batch_norm", {x, scale, bias, mean, var}, {{"epsilon", eps_}});
    if (ctx.syncBatchNorm()) return synchronized(ctx, x, scale, bias, mean, var);
    // The op's momentum weighs the old running value (ONNX's convention); PyTorch's weighs the new one.
    std::vector<Value*> r = ctx.b().ops("batch_norm_train", {x, scale, bias, mean, var},
                                        {{"epsilon", eps_}, {"momentum", 1.0 - momentum_}});
    if (r.size() != 3) return nullptr;
    ctx.assign(ctx.prefix() + "running_mean", r[1]);
    ctx.assign(ctx.prefix() + "running_var", r[2]);
    return r[0];
  }
  std::string describe() const override { return fmt::format("BatchNorm({})", c_); }

 private:
  /// Training-mode batch norm over every rank's batch: each rank's per-channel mean and mean square, averaged
  /// over the ranks by one all_reduce (equal batches), give the whole batch's mean and biased variance; the
  /// gradient flows back through the all_reduce to every rank's activations. The running statistics update as
  /// batch_norm_train's do.
  Value* synchronized(GraphContext& ctx, Value* x, Value* scale, Value* bias, Value* runningMean, Value* runningVar) {
    Builder& b = ctx.b();
    const int64_t rank = x->type().rank();
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != 1) axes.push_back(d);
    }
    AttrMap reduce{{"axes", axes}, {"keepdims", int64_t{1}}};
    Value* localMean = b.op("reduce_mean", {x}, reduce);             // [1, C, 1, ...]
    Value* localSquare = b.op("reduce_mean", {b.square(x)}, reduce);  // E[x^2] over this rank's batch
    Value* moments = b.op("all_reduce", {b.op("concat", {localMean, localSquare}, {{"axis", int64_t{0}}})},
                          {{"op", std::string("mean")}});
    auto row = [&](int64_t i) {
      return b.op("slice", {moments}, {{"starts", std::vector<int64_t>{i}}, {"ends", std::vector<int64_t>{i + 1}},
                                       {"axes", std::vector<int64_t>{0}}});
    };
    Value* mean = row(0);
    // E[x^2] - E[x]^2 can round below 0 for a constant channel.
    Value* variance = b.op("max", {b.sub(row(1), b.square(mean)), b.scalarLike(0.0, mean)});
    Shape perChannel(static_cast<size_t>(rank), 1);
    perChannel[1] = c_;
    Value* normalized = b.mul(b.sub(x, mean), b.op("rsqrt", {b.add(variance, b.scalarLike(eps_, variance))}));
    Value* y = b.add(b.mul(normalized, b.reshape(scale, perChannel)), b.reshape(bias, perChannel));
    auto running = [&](Value* old, Value* batch) {
      Value* kept = b.scale(old, 1.0 - momentum_);
      return b.add(kept, b.scale(b.reshape(batch, {c_}), momentum_));
    };
    ctx.assign(ctx.prefix() + "running_mean", running(runningMean, mean));
    ctx.assign(ctx.prefix() + "running_var", running(runningVar, variance));
    return y;
  }

  int64_t c_;
  double eps_, momentum_;
};

class LayerNorm final : public Module {
 public:
  LayerNorm(int64_t features, double epsilon) : n_(features), eps_(epsilon) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    Value* scale = ctx.parameter("weight", {n_}, ones());
    Value* bias = ctx.parameter("bias", {n_}, zeros());
    return ctx.b().op("layer_norm", {x, scale, bias}, {{"axis", int64_t{-1}}, {"epsilon", eps_}});
  }
  std::string describe() const override { return fmt::format("LayerNorm({})", n_); }

 private:
  int64_t n_;
  double eps_;
};

class Dropout final : public Module {
 public:
  explicit Dropout(double ratio) : ratio_(ratio) {}
  Value* forward(GraphContext& ctx, Value* x) override {
    if (!ctx.training() || ratio_ == 0) return x;
    std::vector<Value*> r =
        ctx.b().ops("dropout", {x, ctx.stepInput()}, {{"ratio", ratio_}, {"seed", ctx.nextSeed()}});
    return r.empty() ? nullptr : r[0];
  }
  std::string describe() const override { return fmt::format("Dropout({})", ratio_); }

 private:
  double ratio_;
};

class Embedding final : public Module {
 public:
  Embedding(int64_t count, int64_t dim, EmbeddingOptions o) : count_(count), dim_(dim), o_(o) {}
  Value* forward(GraphContext& ctx, Value* indices) override {
    Initializer init = normal(1.0);  // torch.nn.Embedding: N(0, 1), the padding row zero
    if (o_.paddingIndex) {
      int64_t pad = *o_.paddingIndex < 0 ? *o_.paddingIndex + count_ : *o_.paddingIndex;
      if (pad < 0 || pad >= count_) {
        return ctx.b().fail(makeError("embedding: padding index {} is outside [-{}, {})", *o_.paddingIndex, count_,
                                      count_));
      }
      init = [normalInit = init, pad, dim = dim_](const Shape& shape, uint64_t seed) {
        Tensor t = normalInit(shape, seed);
        for (int64_t j = 0; j < dim; ++j) t.setDouble(pad * dim + j, 0.0);
        return t;
      };
    }
    Value* table = ctx.parameter("weight", {count_, dim_}, init);
    Value* rows = ctx.b().op("gather", {table, indices}, {{"axis", int64_t{0}}});
    if (!o_.paddingIndex || !rows) return rows;
    // The padding row is looked up as stored but gets no gradient (PyTorch's padding_idx).
    int64_t pad = *o_.paddingIndex < 0 ? *o_.paddingIndex + count_ : *o_.paddingIndex;
    Value* isPad = ctx.b().op("eq", {indices, ctx.b().scalar(static_cast<double>(pad), indices->dtype())});
    isPad = ctx.b().op("unsqueeze", {isPad}, {{"axes", std::vector<int64_t>{-1}}});
    return ctx.b().where(isPad, ctx.b().op("stop_gradient", {rows}), rows);
  }
  std::string describe() const override {
    return o_.paddingIndex ? fmt::format("Embedding({} x {}, padding {})", count_, dim_, *o_.paddingIndex)
                           : fmt::format("Embedding({} x {})", count_, dim_);
  }

 private:
  int64_t count_, dim_;
  EmbeddingOptions o_;
};

/// A parameterless op on x.
class Elementwise final : public Module {
 public:
  Elementwise(std::string op, AttrMap attrs, std::string label)
      : op_(std::move(op)), attrs_(std::move(attrs)), label_(std::move(label)) {}
  Value* forward(GraphContext& ctx, Value* x) override { return ctx.b().op(op_, {x}, attrs_); }
  std::string describe() const override { return label_; }

 private:
  std::string op_;
  AttrMap attrs_;
  std::string label_;
};

ModulePtr unary(std::string op, AttrMap attrs, std::string label) {
  return std::make_shared<Elementwise>(std::move(op), std::move(attrs), std::move(label));
}

}  // namespace

Sequential::Sequential(std::vector<ModulePtr> children) {
  for (ModulePtr& c : children) add(std::move(c));
}

Sequential& Sequential::add(ModulePtr child, std::string name) {
  if (name.empty()) name = std::to_string(children_.size());
  children_.emplace_back(std::move(name), std::move(child));
  return *this;
}

Value* Sequential::forward(GraphContext& ctx, Value* x) {
  for (auto& [name, child] : children_) {
    if (!x) return nullptr;
    x = ctx.scoped(name, [&, &layer = child] { return layer->forward(ctx, x); }, child->describe());
  }
  return x;
}

std::string Sequential::describe() const {
  std::string s = "Sequential(";
  for (size_t i = 0; i < children_.size(); ++i) {
    s += fmt::format("{}{}: {}", i ? ", " : "", children_[i].first, children_[i].second->describe());
  }
  return s + ")";
}

ModulePtr linear(int64_t in, int64_t out, LinearOptions options) { return std::make_shared<Linear>(in, out, options); }
ModulePtr conv2d(int64_t in, int64_t out, int64_t kernel, Conv2DOptions options) {
  return std::make_shared<Conv2D>(in, out, kernel, options);
}
ModulePtr convTranspose2d(int64_t in, int64_t out, int64_t kernel, ConvTranspose2DOptions options) {
  return std::make_shared<ConvTranspose2D>(in, out, kernel, options);
}
ModulePtr maxPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<Pool2D>("max_pool2d", kernel, stride, padding);
}
ModulePtr avgPool2d(int64_t kernel, int64_t stride, int64_t padding) {
  return std::make_shared<Pool2D>("avg_pool2d", kernel, stride, padding);
}
ModulePtr batchNorm(int64_t channels, double epsilon, double momentum) {
  return std::make_shared<BatchNorm>(channels, epsilon, momentum);
}
ModulePtr layerNorm(int64_t features, double epsilon) { return std::make_shared<LayerNorm>(features, epsilon); }
ModulePtr dropout(double ratio) { return std::make_shared<Dropout>(ratio); }
ModulePtr embedding(int64_t count, int64_t dim, EmbeddingOptions options) {
  return std::make_shared<Embedding>(count, dim, options);
}
ModulePtr flatten() { return unary("flatten", {{"axis", int64_t{1}}}, "Flatten"); }
ModulePtr globalAvgPool2d() { return unary("global_avg_pool2d", {}, "GlobalAvgPool2D"); }
ModulePtr relu() { return unary("relu", {}, "ReLU"); }
ModulePtr leakyRelu(double slope) { return unary("leaky_relu", {{"alpha", slope}}, fmt::format("LeakyReLU({})", slope)); }
ModulePtr sigmoid() { return unary("sigmoid", {}, "Sigmoid"); }
ModulePtr tanh() { return unary("tanh", {}, "Tanh"); }
ModulePtr gelu() { return unary("gelu", {}, "GELU"); }
ModulePtr silu() { return unary("silu", {}, "SiLU"); }
ModulePtr softmax(int64_t axis) { return unary("softmax", {{"axis", axis}}, "Softmax"); }
ModulePtr logSoftmax(int64_t axis) { return unary("log_softmax", {{"axis", axis}}, "LogSoftmax"); }

}  // namespace smelt::nn
