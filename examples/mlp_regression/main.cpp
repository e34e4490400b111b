// mlp_regression: fits y = sin(3 x1) cos(2 x2) on [-1, 1]^2 with a 2-64-64-1 tanh MLP, AdamW, a cosine
// learning rate and gradient clipping, and prints the held-out mean squared error before and after.
//   build/bin/mlp_regression [--steps 1500]
#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <random>

using namespace smelt;

namespace {

void sample(std::mt19937_64& rng, Tensor& x, Tensor& y) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < y.shape()[0]; ++i) {
    double a = u(rng), b = u(rng);
    x.setDouble(2 * i, a);
    x.setDouble(2 * i + 1, b);
    y.setDouble(i, std::sin(3 * a) * std::cos(2 * b));
  }
}

double mse(const Tensor& prediction, const Tensor& y) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += std::pow(prediction.getDouble(i) - y.getDouble(i), 2);
  return s / static_cast<double>(y.numel());
}

int run(int argc, char** argv) {
  CLI::App app{"Fits a smooth 2-D function with an MLP (smelt's model API)"};
  int64_t steps = 1500, batch = 128;
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  auto fail = [](const Error& e) {
    fmt::print(stderr, "mlp_regression: error: {}\n", e.message());
    return 1;
  };
  nn::Model model(nn::sequential({nn::linear(2, 64), nn::tanh(), nn::linear(64, 64), nn::tanh(), nn::linear(64, 1)}), 1);
  TensorType xType{DType::f32, {batch, 2}}, yType{DType::f32, {batch, 1}};
  nn::TrainStepOptions options;
  options.schedule = nn::cosineSchedule(1e-2, steps, 1e-4);
  options.clipNorm = 1.0;
  auto step = nn::TrainStep::create(model, nn::mseLoss, nn::adamw({.lr = 1e-2, .weightDecay = 1e-4}), xType, yType, options);
  if (!step.ok()) return fail(step.error());
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {1024, 2}});
  if (!predict.ok()) return fail(predict.error());
  std::mt19937_64 rng(7);
  Tensor testX(TensorType{DType::f32, {1024, 2}}), testY(TensorType{DType::f32, {1024, 1}});
  sample(rng, testX, testY);
  auto before = (*predict)->run(testX);
  if (!before.ok()) return fail(before.error());
  fmt::print("model: {}\nheld-out MSE before training: {:.5f}\n", model.net->describe(), mse(*before, testY));
  Tensor x(xType), y(yType);
  for (int64_t s = 1; s <= steps; ++s) {
    sample(rng, x, y);
    auto loss = (*step)->run(x, y);
    if (!loss.ok()) return fail(loss.error());
    if (s % 300 == 0) fmt::print("step {:>5}: loss {:.5f}, lr {:.5f}\n", s, *loss, (*step)->learningRate());
  }
  auto after = (*predict)->run(testX);
  if (!after.ok()) return fail(after.error());
  fmt::print("held-out MSE: {:.5f}\n", mse(*after, testY));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
