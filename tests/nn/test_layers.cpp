// Layers: parameters named as PyTorch's state_dict, shapes, numbers against host formulas, batch norm's
// running statistics in training and evaluation graphs, dropout only while training.
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/train_step.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

using namespace smelt;

TEST_CASE("nn layers: a Sequential's parameters carry PyTorch's names and shapes, seeded initial values") {
  auto net = nn::sequential({nn::conv2d(3, 8, 3, {.padding = 1}), nn::batchNorm(8), nn::relu(), nn::maxPool2d(2),
                             nn::flatten(), nn::linear(8 * 4 * 4, 10), nn::layerNorm(10)});
  nn::Model model(net, 3);
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {2, 3, 8, 8}});
  REQUIRE_MESSAGE(predict.ok(), (predict.ok() ? "" : predict.error().message()));
  std::map<std::string, Shape> expected{{"0.weight", {8, 3, 3, 3}}, {"0.bias", {8}},          {"1.weight", {8}},
                                        {"1.bias", {8}},            {"1.running_mean", {8}},  {"1.running_var", {8}},
                                        {"5.weight", {10, 128}},    {"5.bias", {10}},         {"6.weight", {10}},
                                        {"6.bias", {10}}};
  REQUIRE(model.state.size() == expected.size());
  for (const auto& entry : expected) {
    // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
    const auto& name = entry.first;
    const auto& shape = entry.second;
    REQUIRE_MESSAGE(model.state.count(name), name);
    CHECK_MESSAGE(model.state.at(name).shape() == shape, name);
  }
  CHECK(model.parameterCount() == 8 * 27 + 8 + 4 * 8 + 10 * 128 + 10 + 20);
  // Linear's weight in U(-1/sqrt(in), 1/sqrt(in)), not constant; the same seed gives the same values.
  std::vector<double> w = model.state.at("5.weight").toDoubles();
  double bound = 1 / std::sqrt(128.0);
  CHECK(*std::max_element(w.begin(), w.end()) <= bound);
  CHECK(*std::min_element(w.begin(), w.end()) >= -bound);
  CHECK(*std::max_element(w.begin(), w.end()) > 0.5 * bound);
  nn::Model again(net, 3), other(net, 4);
  REQUIRE(nn::Predictor::create(again, TensorType{DType::f32, {2, 3, 8, 8}}).ok());
  REQUIRE(nn::Predictor::create(other, TensorType{DType::f32, {2, 3, 8, 8}}).ok());
  CHECK(again.state.at("5.weight") == model.state.at("5.weight"));
  CHECK_FALSE(other.state.at("5.weight") == model.state.at("5.weight"));
  auto out = (*predict)->run(testing::randomTensor(TensorType{DType::f32, {2, 3, 8, 8}}, testing::testSeed()));
  REQUIRE(out.ok());
  CHECK(out->shape() == Shape{2, 10});
}

TEST_CASE("nn layers: Linear computes x W^T + b") {
  nn::Model model(nn::linear(4, 3), 1);
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {2, 4}});
  REQUIRE(predict.ok());
  Tensor x = testing::randomTensor(TensorType{DType::f32, {2, 4}}, testing::testSeed());
  auto y = (*predict)->run(x);
  REQUIRE(y.ok());
  const Tensor &w = model.state.at("weight"), &b = model.state.at("bias");
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t o = 0; o < 3; ++o) {
      double expect = b.getDouble(o);
      for (int64_t k = 0; k < 4; ++k) expect += x.getDouble(i * 4 + k) * w.getDouble(o * 4 + k);
      CHECK(y->getDouble(i * 3 + o) == doctest::Approx(expect).epsilon(1e-5));
    }
  }
}

TEST_CASE("nn layers: batch norm trains on batch statistics, updates its running ones, evaluates on them") {
  nn::Model model(nn::sequential({nn::batchNorm(2, 1e-5, 0.25)}), 1);
  TensorType type{DType::f32, {4, 2, 3, 3}};
  // The loss ignores its target: the sum of the normalized output.
  auto step = nn::TrainStep::create(model, [](nn::GraphContext& ctx, Value* out, Value*) { return ctx.b().op("reduce_sum", {out}); },
                                    nn::sgd({.lr = 0.0}), type, TensorType{DType::f32, {}});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  Tensor x = testing::randomTensor(type, testing::testSeed());
  REQUIRE((*step)->run(x, Tensor(TensorType{DType::f32, {}})).ok());
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0, sq = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t k = 0; k < 9; ++k) {
        double v = x.getDouble((i * 2 + c) * 9 + k);
        sum += v, sq += v * v, ++n;
      }
    }
    double mean = sum / static_cast<double>(n);
    // Running mean: 0.75 * 0 + 0.25 * batch mean (PyTorch's momentum 0.25).
    CHECK(model.state.at("0.running_mean").getDouble(c) == doctest::Approx(0.25 * mean).epsilon(1e-4));
    CHECK(model.state.at("0.running_var").getDouble(c) != doctest::Approx(1.0));
  }
  auto predict = nn::Predictor::create(model, type);
  REQUIRE(predict.ok());
  auto y = (*predict)->run(x);
  REQUIRE(y.ok());
  double m0 = model.state.at("0.running_mean").getDouble(0), v0 = model.state.at("0.running_var").getDouble(0);
  CHECK(y->getDouble(0) == doctest::Approx((x.getDouble(0) - m0) / std::sqrt(v0 + 1e-5)).epsilon(1e-4));
}

TEST_CASE("nn layers: a parameter whose state has another shape is an error naming it") {
  nn::Model model(nn::linear(4, 3), 1);
  model.state.emplace("weight", Tensor(TensorType{DType::f32, {3, 5}}));
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {2, 4}});
  REQUIRE_FALSE(predict.ok());
  CHECK(predict.error().message().find("'weight'") != std::string::npos);
}

TEST_CASE("nn losses: cross-entropy, NLL and MSE against host formulas") {
  Graph g;
  Value* logits = g.addInput("logits", TensorType{DType::f32, {3, 4}});
  Value* labels = g.addInput("labels", TensorType{DType::i64, {3}});
  Value* target = g.addInput("target", TensorType{DType::f32, {3, 4}});
  nn::StateDict state;
  nn::GraphContext ctx(g, state, true);
  g.addOutput("ce", nn::crossEntropy(ctx, logits, labels));
  g.addOutput("mse", nn::mseLoss(ctx, logits, target));
  REQUIRE(ctx.b().status().ok());
  TensorMap feeds{{"logits", testing::randomTensor(TensorType{DType::f32, {3, 4}}, testing::testSeed())},
                  {"labels", Tensor::of<int64_t>({3}, {2, 0, 3})},
                  {"target", testing::randomTensor(TensorType{DType::f32, {3, 4}}, testing::testSeed() + 1)}};
  auto out = interpret(g, feeds);
  REQUIRE(out.ok());
  const Tensor& z = feeds.at("logits");
  double ce = 0, mse = 0;
  for (int64_t i = 0; i < 3; ++i) {
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < 4; ++c) mx = std::max(mx, z.getDouble(i * 4 + c));
    for (int64_t c = 0; c < 4; ++c) sum += std::exp(z.getDouble(i * 4 + c) - mx);
    ce -= z.getDouble(i * 4 + feeds.at("labels").getInt(i)) - mx - std::log(sum);
    for (int64_t c = 0; c < 4; ++c) mse += std::pow(z.getDouble(i * 4 + c) - feeds.at("target").getDouble(i * 4 + c), 2);
  }
  CHECK((*out)[0].getDouble(0) == doctest::Approx(ce / 3).epsilon(1e-5));
  CHECK((*out)[1].getDouble(0) == doctest::Approx(mse / 12).epsilon(1e-5));
  // Labels of the wrong shape: an error, not a crash.
  Value* bad = g.addInput("bad", TensorType{DType::i64, {2}});
  CHECK(nn::crossEntropy(ctx, logits, bad) == nullptr);
  CHECK_FALSE(ctx.b().status().ok());
}

TEST_CASE("nn losses: mse of a prediction and a target of different shapes is an error naming both, not a broadcast") {
  Graph g;
  Value* prediction = g.addInput("prediction", TensorType{DType::f32, {4, 1}});
  Value* target = g.addInput("target", TensorType{DType::f32, {4}});
  nn::StateDict state;
  nn::GraphContext ctx(g, state, true);
  CHECK(nn::mseLoss(ctx, prediction, target) == nullptr);
  REQUIRE_FALSE(ctx.b().status().ok());
  const std::string message = ctx.b().status().error().message();
  CHECK(message.find("f32[4,1]") != std::string::npos);
  CHECK(message.find("f32[4]") != std::string::npos);
}

TEST_CASE("nn layers: dropout draws a new mask every training step and is the identity in evaluation") {
  nn::Model model(nn::sequential({nn::dropout(0.5)}), 1);
  TensorType type{DType::f32, {64}};
  Tensor x(type);
  for (int64_t i = 0; i < 64; ++i) x.setDouble(i, 1.0);
  auto step = nn::TrainStep::create(model, [](nn::GraphContext& ctx, Value* out, Value*) { return ctx.b().op("reduce_sum", {out}); },
                                    nn::sgd({.lr = 0.0}), type, TensorType{DType::f32, {}});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  Tensor out1, out2;
  REQUIRE((*step)->run(x, Tensor(TensorType{DType::f32, {}}), &out1).ok());
  REQUIRE((*step)->run(x, Tensor(TensorType{DType::f32, {}}), &out2).ok());
  int64_t kept = 0;
  for (int64_t i = 0; i < 64; ++i) {
    CHECK((out1.getDouble(i) == 0.0 || out1.getDouble(i) == 2.0));
    kept += out1.getDouble(i) != 0;
  }
  CHECK((kept > 16 && kept < 48));
  CHECK_FALSE(out1 == out2);
  auto predict = nn::Predictor::create(model, type);
  REQUIRE(predict.ok());
  auto y = (*predict)->run(x);
  REQUIRE(y.ok());
  CHECK(*y == x);
}

TEST_CASE("nn models: resnet18 has torchvision's state_dict names, shapes and sizes, and trains") {
  nn::Model model(nn::resnet18(10), 5);
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.01, .momentum = 0.9}),
                                    TensorType{DType::f32, {4, 3, 32, 32}}, TensorType{DType::i64, {4}});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  // torchvision.models.resnet18(num_classes=10).state_dict(), less its 20 num_batches_tracked counters;
  // beside them, a momentum buffer per trainable parameter.
  CHECK(std::count_if(model.state.begin(), model.state.end(),
                      [](const auto& entry) { return entry.first.rfind("optim.", 0) != 0; }) == 102);
  CHECK(model.state.count("optim.layer4.1.conv2.weight.momentum_buffer"));
  std::map<std::string, Shape> spotChecks{{"conv1.weight", {64, 3, 7, 7}},
                                          {"bn1.running_var", {64}},
                                          {"layer1.1.conv2.weight", {64, 64, 3, 3}},
                                          {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
                                          {"layer3.0.downsample.1.running_mean", {256}},
                                          {"layer4.1.bn2.bias", {512}},
                                          {"fc.weight", {10, 512}},
                                          {"fc.bias", {10}}};
  for (const auto& entry : spotChecks) {
    // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
    const auto& name = entry.first;
    const auto& shape = entry.second;
    REQUIRE_MESSAGE(model.state.count(name), name);
    CHECK_MESSAGE(model.state.at(name).shape() == shape, name);
  }
  CHECK_FALSE(model.state.count("layer1.0.downsample.0.weight"));  // same width, stride 1: identity shortcut
  CHECK_FALSE(model.state.count("conv1.bias"));
  // 11,181,642 trainable numbers (torchvision's count for 10 classes) and 2 x 4,800 running statistics.
  CHECK(model.parameterCount() == 11181642 + 9600);
  // Kaiming normal with fan-out: conv1's weights have standard deviation sqrt(2 / (64 * 49)).
  std::vector<double> w = model.state.at("conv1.weight").toDoubles();
  double sumSquares = 0;
  for (double v : w) sumSquares += v * v;
  CHECK(std::sqrt(sumSquares / static_cast<double>(w.size())) == doctest::Approx(std::sqrt(2.0 / (64 * 49))).epsilon(0.05));
  // Memorizing one batch: the loss falls.
  Tensor x = testing::randomTensor(TensorType{DType::f32, {4, 3, 32, 32}}, testing::testSeed());
  Tensor y(TensorType{DType::i64, {4}});
  for (int64_t i = 0; i < 4; ++i) y.data<int64_t>()[i] = i * 3;
  auto first = (*step)->run(x, y);
  REQUIRE_MESSAGE(first.ok(), (first.ok() ? "" : first.error().message()));
  double loss = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = (*step)->run(x, y);
    REQUIRE(r.ok());
    loss = *r;
  }
  CHECK(loss < 0.5 * *first);
}

TEST_CASE("layers: the nodes a layer builds carry its name and description, so errors and profiles name it") {
  nn::Model model(nn::sequential({nn::linear(4, 8), nn::relu(), nn::linear(8, 3)}), 1);
  Graph graph;
  Value* x = graph.addInput("x", TensorType{DType::f32, {2, 4}});
  nn::GraphContext ctx(graph, model.state, /*training=*/false, 1);
  Value* y = model.net->forward(ctx, x);
  REQUIRE(y);
  std::set<std::string> sources;
  for (const auto& node : graph.nodes()) sources.insert(node->sourceName());
  CHECK(sources.count("0 Linear(4 -> 8)"));
  CHECK(sources.count("1 ReLU"));
  CHECK(sources.count("2 Linear(8 -> 3)"));
  // A layer fed the wrong width: the error names the layer, not a bare node number.
  Graph bad;
  Value* wide = bad.addInput("x", TensorType{DType::f32, {2, 5}});
  nn::Model other(nn::sequential({nn::linear(4, 8)}), 1);
  nn::GraphContext badCtx(bad, other.state, false, 1);
  CHECK_FALSE(other.net->forward(badCtx, wide));
  REQUIRE_FALSE(badCtx.b().ok());
  CHECK_MESSAGE(badCtx.b().status().error().message().find("0 Linear(4 -> 8)") != std::string::npos,
                badCtx.b().status().error().message());
}
