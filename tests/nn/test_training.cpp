// Training end to end: a small MLP learns a four-class problem (the loss falls tenfold, the training
// accuracy passes 95%), its checkpoint restores identical predictions in a fresh model, and feeding a
// batch of the wrong type is a clear error.
#include "frontend/nn/losses.h"
#include "frontend/nn/safetensors.h"
#include "frontend/nn/train_step.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <random>

using namespace smelt;

namespace {

/// Points around four centres, labelled by their centre.
void makeBatch(std::mt19937_64& rng, Tensor& x, Tensor& y) {
  const double centres[4][2] = {{2, 2}, {-2, 2}, {-2, -2}, {2, -2}};
  std::normal_distribution<double> noise(0.0, 0.6);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t c = static_cast<int64_t>(rng() % 4);
    x.setDouble(i * 2, centres[c][0] + noise(rng));
    x.setDouble(i * 2 + 1, centres[c][1] + noise(rng));
    y.setInt(i, c);
  }
}

nn::ModulePtr mlp() { return nn::sequential({nn::linear(2, 16), nn::tanh(), nn::linear(16, 4)}); }

}  // namespace

TEST_CASE("training: an MLP learns four clusters with Adam, a checkpoint restores its predictions") {
  nn::Model model(mlp(), 5);
  TensorType xType{DType::f32, {64, 2}}, yType{DType::i64, {64}};
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.02}), xType, yType);
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  std::mt19937_64 rng(11);
  Tensor x(xType), y(yType), logits;
  double first = 0, last = 0;
  int64_t hits = 0;
  for (int s = 0; s < 150; ++s) {
    makeBatch(rng, x, y);
    auto loss = (*step)->run(x, y, &logits);
    REQUIRE(loss.ok());
    if (s == 0) first = *loss;
    last = *loss;
    if (s == 149) {
      for (int64_t i = 0; i < 64; ++i) {
        int64_t best = 0;
        for (int64_t c = 1; c < 4; ++c) best = logits.getDouble(i * 4 + c) > logits.getDouble(i * 4 + best) ? c : best;
        hits += best == y.getInt(i);
      }
    }
  }
  CHECK_MESSAGE(last < first / 10, "loss ", first, " -> ", last);
  CHECK(hits >= 61);
  // Adam's moments live in the state beside the parameters.
  CHECK(model.state.count("optim.0.weight.exp_avg"));

  std::string path = (std::filesystem::temp_directory_path() / "smelt_nn_training.safetensors").string();
  REQUIRE(nn::saveSafetensors(path, model.state).ok());
  nn::Model restored(mlp(), 99);
  auto fresh = nn::Predictor::create(restored, xType);  // initializes its own (different) parameters
  REQUIRE(fresh.ok());
  REQUIRE(nn::loadInto(restored.state, path).ok() == false);  // no optimizer state in the fresh model
  restored.state.clear();
  REQUIRE(nn::loadInto(restored.state, path).ok());
  auto predict = nn::Predictor::create(model, xType);
  REQUIRE(predict.ok());
  makeBatch(rng, x, y);
  auto a = (*predict)->run(x);
  auto b = (*fresh)->run(x);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  std::filesystem::remove(path);
}

TEST_CASE("training: a batch of another type than the step was compiled for is an error") {
  nn::Model model(mlp(), 5);
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), TensorType{DType::f32, {8, 2}},
                                    TensorType{DType::i64, {8}});
  REQUIRE(step.ok());
  auto loss = (*step)->run(Tensor(TensorType{DType::f32, {4, 2}}), Tensor(TensorType{DType::i64, {8}}));
  REQUIRE_FALSE(loss.ok());
  CHECK(loss.error().message().find("input") != std::string::npos);
  // A model whose output does not fit the loss: an error from create, naming the problem.
  auto bad = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), TensorType{DType::f32, {8, 2}},
                                   TensorType{DType::i64, {7}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("labels") != std::string::npos);
}
