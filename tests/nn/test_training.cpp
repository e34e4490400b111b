// Training end to end: a small MLP learns a four-class problem (the loss falls tenfold, the training
// accuracy passes 95%), its checkpoint restores identical predictions in a fresh model, a partial
// batch trains on the same state and step count, and feeding a batch of the wrong type is a clear error.
#include "frontend/nn/checkpoint.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/safetensors.h"
#include "frontend/nn/train_step.h"
#include "tests/support/devices.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

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
  // An empty state (a model not built) is refused: its first build would invent what the file lacks.
  Status empty = nn::loadInto(restored.state, path);
  REQUIRE_FALSE(empty.ok());
  CHECK_MESSAGE(empty.error().message().find("loadCheckpoint") != std::string::npos, empty.error().message());
  auto loaded = nn::loadCheckpoint(restored, path, xType);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
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

TEST_CASE("training: a partial batch trains on the same state and step count, on every device") {
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    // A: compiled for 8, fed batches of 5 (its partial batches); B: compiled for 5. Same seeds, same
    // optimizer, same batches: the same parameters and Adam moments after each step.
    nn::Model a(mlp(), 5), b(mlp(), 5);
    TensorType x8{DType::f32, {8, 2}}, y8{DType::i64, {8}}, x5{DType::f32, {5, 2}}, y5{DType::i64, {5}};
    auto stepA = nn::TrainStep::create(a, nn::crossEntropy, nn::adam({.lr = 0.05}), x8, y8, {.device = device->id()});
    auto stepB = nn::TrainStep::create(b, nn::crossEntropy, nn::adam({.lr = 0.05}), x5, y5, {.device = device->id()});
    REQUIRE(stepA.ok());
    REQUIRE(stepB.ok());
    std::mt19937_64 rng(testing::testSeed());
    Tensor x(x5), y(y5), full(x8), fullY(y8);
    for (int s = 0; s < 3; ++s) {
      makeBatch(rng, x, y);
      auto la = (*stepA)->run(x, y);
      auto lb = (*stepB)->run(x, y);
      REQUIRE_MESSAGE(la.ok(), la.error().message());
      REQUIRE(lb.ok());
      CHECK(*la == doctest::Approx(*lb).epsilon(1e-6));
    }
    CHECK((*stepA)->steps() == 3);
    CHECK((*stepA)->compiledBatchSizes() == 2);  // 8 at create, 5 on the first partial batch
    for (const auto& entry : b.hostState()) {
      // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
      const auto& name = entry.first;
      const auto& t = entry.second;
      CAPTURE(name);
      testing::checkClose(a.hostState().at(name), t, 1e-5);
    }
    // The full batch still runs, on the state the partial ones left; bad batches are errors.
    makeBatch(rng, full, fullY);
    REQUIRE((*stepA)->run(full, fullY).ok());
    CHECK((*stepA)->steps() == 4);
    CHECK(!(*stepA)->run(Tensor(TensorType{DType::f32, {9, 2}}), Tensor(TensorType{DType::i64, {9}})).ok());
    CHECK(!(*stepA)->run(Tensor(TensorType{DType::f32, {4, 3}}), Tensor(TensorType{DType::i64, {4}})).ok());
    // A predictor made for 8 rows predicts 3 as the first 3 of 8 (rows are independent in evaluation).
    auto predict = nn::Predictor::create(a, x8, {.device = device->id()});
    REQUIRE(predict.ok());
    Tensor three(TensorType{DType::f32, {3, 2}});
    for (int64_t i = 0; i < 6; ++i) three.setDouble(i, full.getDouble(i));
    auto all = (*predict)->run(full);
    auto some = (*predict)->run(three);
    REQUIRE(all.ok());
    REQUIRE(some.ok());
    REQUIRE(some->type().toString() == "f32[3,4]");
    for (int64_t i = 0; i < 12; ++i) CHECK(some->getDouble(i) == doctest::Approx(all->getDouble(i)).epsilon(1e-6));
    CHECK((*predict)->compiledBatchSizes() == 2);
  }
}

TEST_CASE("training: a label outside 0 to classes-1 is an error naming it, not a silent zero loss") {
  nn::Model model(mlp(), 5);
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1}), TensorType{DType::f32, {8, 2}},
                                    TensorType{DType::i64, {8}});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  std::mt19937_64 rng(testing::testSeed());
  Tensor x(TensorType{DType::f32, {8, 2}}), y(TensorType{DType::i64, {8}});
  makeBatch(rng, x, y);
  REQUIRE((*step)->run(x, y).ok());
  for (int64_t bad : {int64_t{4}, int64_t{-1}, int64_t{1} << 40}) {
    CAPTURE(bad);
    Tensor wrong = y;
    wrong.setInt(5, bad);
    auto result = (*step)->run(x, wrong);
    REQUIRE_FALSE(result.ok());
    CHECK_MESSAGE(result.error().message().find(fmt::format("target: element 5 is {}, outside [0, 4)", bad)) !=
                      std::string::npos,
                  result.error().message());
  }
  CHECK((*step)->steps() == 1);  // the refused batches did not train
}
