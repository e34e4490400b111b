// transformer_block: a pre-norm transformer encoder block written as custom modules (multi-head
// self-attention and a GELU feed-forward, each with a residual), trained to output, at every position,
// the mean of the sequence's vectors (a task attention solves by attending evenly). Prints the loss
// as it falls.
//   build/bin/transformer_block [--steps 400]
#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <random>

using namespace smelt;

namespace {

/// Multi-head self-attention over x [B, T, D]: softmax(q k^T / sqrt(dh)) v per head, then a projection.
class SelfAttention final : public nn::Module {
 public:
  SelfAttention(int64_t dim, int64_t heads) : dim_(dim), heads_(heads) {}
  Value* forward(nn::GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    const Shape& s = x->shape();
    int64_t batch = s[0], time = s[1], dh = dim_ / heads_;
    auto project = [&](const char* name) {
      // Weights in [in, out] layout, Xavier-initialized: x @ W.
      Value* w = ctx.parameter(std::string(name) + ".weight", {dim_, dim_}, nn::xavierUniform(dim_, dim_));
      Value* bias = ctx.parameter(std::string(name) + ".bias", {dim_}, nn::zeros());
      return b.add(b.op("matmul", {x, w}), bias);
    };
    auto split = [&](Value* v) {  // [B, T, D] -> [B, H, T, dh]
      return b.transpose(b.reshape(v, {batch, time, heads_, dh}), {0, 2, 1, 3});
    };
    Value* q = split(project("q"));
    Value* k = split(project("k"));
    Value* v = split(project("v"));
    Value* scores = b.scale(b.op("matmul", {q, b.transpose(k, {0, 1, 3, 2})}), 1.0 / std::sqrt(static_cast<double>(dh)));
    Value* attention = b.op("softmax", {scores}, {{"axis", int64_t{-1}}});
    Value* merged = b.reshape(b.transpose(b.op("matmul", {attention, v}), {0, 2, 1, 3}), {batch, time, dim_});
    Value* wo = ctx.parameter("out.weight", {dim_, dim_}, nn::xavierUniform(dim_, dim_));
    return b.add(b.op("matmul", {merged, wo}), ctx.parameter("out.bias", {dim_}, nn::zeros()));
  }
  std::string describe() const override { return fmt::format("SelfAttention({}, {} heads)", dim_, heads_); }

 private:
  int64_t dim_, heads_;
};

/// x + f(norm(x)): the pre-norm residual around a sub-block.
class Residual final : public nn::Module {
 public:
  Residual(int64_t dim, nn::ModulePtr inner) : norm_(nn::layerNorm(dim)), inner_(std::move(inner)) {}
  Value* forward(nn::GraphContext& ctx, Value* x) override {
    Value* normed = ctx.scoped("norm", [&] { return norm_->forward(ctx, x); });
    Value* y = ctx.scoped("inner", [&] { return inner_->forward(ctx, normed); });
    return ctx.b().add(x, y);
  }
  std::string describe() const override { return "Residual(LayerNorm, " + inner_->describe() + ")"; }

 private:
  nn::ModulePtr norm_, inner_;
};

/// The feed-forward on the last axis: [B, T, D] -> [B, T, 4D] -> GELU -> [B, T, D].
class FeedForward final : public nn::Module {
 public:
  explicit FeedForward(int64_t dim) : dim_(dim) {}
  Value* forward(nn::GraphContext& ctx, Value* x) override {
    Builder& b = ctx.b();
    Value* w1 = ctx.parameter("fc1.weight", {dim_, 4 * dim_}, nn::xavierUniform(dim_, 4 * dim_));
    Value* w2 = ctx.parameter("fc2.weight", {4 * dim_, dim_}, nn::xavierUniform(4 * dim_, dim_));
    Value* h = b.op("gelu", {b.add(b.op("matmul", {x, w1}), ctx.parameter("fc1.bias", {4 * dim_}, nn::zeros()))});
    return b.add(b.op("matmul", {h, w2}), ctx.parameter("fc2.bias", {dim_}, nn::zeros()));
  }
  std::string describe() const override { return fmt::format("FeedForward({} -> {})", dim_, 4 * dim_); }

 private:
  int64_t dim_;
};

void sample(std::mt19937_64& rng, Tensor& x, Tensor& y) {
  std::normal_distribution<double> n(0.0, 1.0);
  const Shape& s = x.shape();
  int64_t batch = s[0], time = s[1], dim = s[2];
  for (int64_t i = 0; i < x.numel(); ++i) x.setDouble(i, n(rng));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t d = 0; d < dim; ++d) {
      double mean = 0;
      for (int64_t t = 0; t < time; ++t) mean += x.getDouble((b * time + t) * dim + d);
      mean /= static_cast<double>(time);
      for (int64_t t = 0; t < time; ++t) y.setDouble((b * time + t) * dim + d, mean);
    }
  }
}

int run(int argc, char** argv) {
  CLI::App app{"Trains a transformer encoder block written as custom modules"};
  int64_t steps = 400, batch = 16, time = 12, dim = 32, heads = 4;
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  auto fail = [](const Error& e) {
    fmt::print(stderr, "transformer_block: error: {}\n", e.message());
    return 1;
  };
  auto block = nn::sequential({});
  block->add(std::make_shared<Residual>(dim, std::make_shared<SelfAttention>(dim, heads)), "attention");
  block->add(std::make_shared<Residual>(dim, std::make_shared<FeedForward>(dim)), "mlp");
  nn::Model model(block, 3);
  TensorType type{DType::f32, {batch, time, dim}};
  nn::TrainStepOptions options;
  options.schedule = nn::cosineSchedule(3e-3, steps, 1e-4);
  auto step = nn::TrainStep::create(model, nn::mseLoss, nn::adam({.lr = 3e-3}), type, type, options);
  if (!step.ok()) return fail(step.error());
  fmt::print("model: {}\n{} parameters, step compiled ({} kernels, {} on the BLAS)\n", model.net->describe(),
             model.parameterCount(), (*step)->report().kernels, (*step)->report().blas);
  std::mt19937_64 rng(5);
  Tensor x(type), y(type);
  double first = 0, last = 0;
  for (int64_t s = 1; s <= steps; ++s) {
    sample(rng, x, y);
    auto loss = (*step)->run(x, y);
    if (!loss.ok()) return fail(loss.error());
    if (s == 1) first = *loss;
    last = *loss;
    if (s == 1 || s % 100 == 0) fmt::print("step {:>4}: loss {:.5f}\n", s, *loss);
  }
  fmt::print("loss: {:.5f} -> {:.5f}\n", first, last);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
