// The sequence and image layers (LSTM, GRU, attention, the transformer encoder layer, GroupNorm, Upsample,
// PixelShuffle, Embedding's padding index) inside models: parameter names, errors naming the layer, and training
// through a compiled TrainStep. Their numbers are checked against torch.nn by tests/models/check_torch_layers.py.
#include "frontend/nn/attention.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"

#include <doctest/doctest.h>

#include <random>

using namespace smelt;

namespace {

// Sequences of 6 tokens in [1, 12) padded with 0; the label is whether token 5 occurs.
void makeSequences(std::mt19937_64& rng, Tensor& x, Tensor& y) {
  int64_t n = x.shape()[0], len = x.shape()[1];
  for (int64_t i = 0; i < n; ++i) {
    int64_t used = 3 + static_cast<int64_t>(rng() % 4);
    bool five = false;
    for (int64_t t = 0; t < len; ++t) {
      int64_t token = t < used ? 1 + static_cast<int64_t>(rng() % 11) : 0;
      five = five || token == 5;
      x.setInt(i * len + t, token);
    }
    y.setInt(i, five ? 1 : 0);
  }
}

// Trains `net` on the sequence task; the loss after `steps` Adam steps.
std::pair<double, double> trainSequences(const nn::ModulePtr& net, int steps) {
  nn::Model model(net, 7);
  TensorType xType{DType::i64, {32, 6}}, yType{DType::i64, {32}};
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType);
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  std::mt19937_64 rng(3);
  Tensor x(xType), y(yType);
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    makeSequences(rng, x, y);
    auto loss = (*step)->run(x, y);
    REQUIRE_MESSAGE(loss.ok(), (loss.ok() ? "" : loss.error().message()));
    if (s == 0) first = *loss;
    last = *loss;
  }
  return {first, last};
}

}  // namespace

TEST_CASE("nn sequence layers: an embedding, a two-layer LSTM with dropout and a linear head learn a sequence task") {
  auto net = nn::sequential({nn::embedding(12, 8, {.paddingIndex = 0}),
                             nn::lstm(8, 16, {.layers = 2, .batchFirst = true, .dropout = 0.1}), nn::flatten(),
                             nn::linear(6 * 16, 2)});
  // Named, not bound: clang 14 cannot capture structured bindings (CHECK_MESSAGE).
  std::pair<double, double> loss = trainSequences(net, 120);
  CHECK_MESSAGE(loss.second < loss.first / 4, "loss ", loss.first, " -> ", loss.second);
  nn::Model model(net, 7);
  REQUIRE(nn::Predictor::create(model, TensorType{DType::i64, {2, 6}}).ok());
  for (const char* name :
       {"0.weight", "1.weight_ih_l0", "1.weight_hh_l1", "1.bias_ih_l1", "1.bias_hh_l0", "3.weight"}) {
    CHECK_MESSAGE(model.state.count(name), name);
  }
  CHECK(model.state.at("1.weight_ih_l1").shape() == Shape{64, 16});
  // The padding row starts at zero.
  for (int64_t j = 0; j < 8; ++j) CHECK(model.state.at("0.weight").getDouble(j) == 0.0);
}

TEST_CASE("nn sequence layers: a transformer encoder layer and a bidirectional GRU train") {
  auto encoder = nn::sequential({nn::embedding(12, 16),
                                 nn::transformerEncoderLayer(16, 4, {.feedforward = 32, .batchFirst = true}),
                                 nn::flatten(), nn::linear(6 * 16, 2)});
  std::pair<double, double> loss = trainSequences(encoder, 120);
  CHECK_MESSAGE(loss.second < loss.first / 4, "encoder loss ", loss.first, " -> ", loss.second);
  auto recurrent = nn::sequential({nn::embedding(12, 8), nn::gru(8, 12, {.bidirectional = true, .batchFirst = true}),
                                   nn::flatten(), nn::linear(6 * 24, 2)});
  loss = trainSequences(recurrent, 120);
  CHECK_MESSAGE(loss.second < loss.first / 4, "GRU loss ", loss.first, " -> ", loss.second);
}

TEST_CASE("nn image layers: GroupNorm, Upsample and PixelShuffle in a model, and bad inputs name the layer") {
  auto net = nn::sequential({nn::conv2d(3, 8, 3, {.padding = 1}), nn::groupNorm(2, 8), nn::relu(),
                             nn::upsample({.scale = 2, .mode = "bilinear"}), nn::pixelShuffle(2), nn::flatten()});
  nn::Model model(net, 1);
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {2, 3, 4, 4}});
  REQUIRE_MESSAGE(predict.ok(), (predict.ok() ? "" : predict.error().message()));
  auto y = (*predict)->run(Tensor(TensorType{DType::f32, {2, 3, 4, 4}}));
  REQUIRE(y.ok());
  CHECK(y->shape() == Shape{2, 2 * 16 * 16});
  CHECK(model.state.count("1.weight"));

  auto badGroups = nn::sequential({nn::groupNorm(3, 8)});
  nn::Model m1(badGroups, 1);
  auto e1 = nn::Predictor::create(m1, TensorType{DType::f32, {2, 8, 4, 4}});
  REQUIRE_FALSE(e1.ok());
  CHECK_MESSAGE(e1.error().message().find("8 channels do not split into 3 groups") != std::string::npos,
                e1.error().message());
  auto badLstm = nn::sequential({nn::lstm(5, 4)});
  nn::Model m2(badLstm, 1);
  auto e2 = nn::Predictor::create(m2, TensorType{DType::f32, {3, 2, 6}});
  REQUIRE_FALSE(e2.ok());
  CHECK_MESSAGE(e2.error().message().find("LSTM(5 -> 4)") != std::string::npos, e2.error().message());
  auto badHeads = nn::sequential({nn::multiheadAttention(10, 3)});
  nn::Model m3(badHeads, 1);
  auto e3 = nn::Predictor::create(m3, TensorType{DType::f32, {3, 2, 10}});
  REQUIRE_FALSE(e3.ok());
  CHECK_MESSAGE(e3.error().message().find("not divisible by 3 heads") != std::string::npos, e3.error().message());
}
