// Optimizers as graph ops against the PyTorch algorithms simulated on the host in double: a model whose
// loss is sum(p * x) has gradient x, so after each step the parameter and the optimizer's state must
// equal the documented update applied to x. Also gradient clipping and the learning-rate schedules.
#include "frontend/nn/train_step.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>

using namespace smelt;

namespace {

/// loss = sum(p * x): dloss/dp = x.
class Dot final : public nn::Module {
 public:
  Value* forward(nn::GraphContext& ctx, Value* x) override {
    Value* p = ctx.parameter("p", {5}, nn::uniform(1.0));
    return ctx.b().op("reduce_sum", {ctx.b().mul(p, x)});
  }
  std::string describe() const override { return "Dot"; }
};

Value* outputIsLoss(nn::GraphContext&, Value* output, Value*) { return output; }

/// Host state of one parameter under one optimizer: the update applied to p given gradient g at step t.
using HostUpdate = std::function<void(std::vector<double>& p, const std::vector<double>& g, int64_t t, double lr)>;

void checkOptimizer(const std::string& what, nn::OptimizerPtr optimizer, HostUpdate host, nn::Schedule schedule = {},
                    double clipNorm = 0) {
  nn::Model model(std::make_shared<Dot>(), 7);
  nn::TrainStepOptions options;
  options.schedule = schedule;
  options.clipNorm = clipNorm;
  auto step = nn::TrainStep::create(model, outputIsLoss, optimizer, TensorType{DType::f32, {5}},
                                    TensorType{DType::f32, {}}, options);
  REQUIRE_MESSAGE(step.ok(), what, ": ", (step.ok() ? "" : step.error().message()));
  std::vector<double> p = model.state.at("p").toDoubles();
  Tensor target(TensorType{DType::f32, {}});
  for (int64_t t = 1; t <= 4; ++t) {
    Tensor x = testing::randomTensor(TensorType{DType::f32, {5}}, testing::testSeed() + static_cast<uint64_t>(t));
    std::vector<double> g = x.toDoubles();
    if (clipNorm > 0) {
      double norm = 0;
      for (double v : g) norm += v * v;
      double scale = std::min(1.0, clipNorm / (std::sqrt(norm) + 1e-6));
      for (double& v : g) v *= scale;
    }
    double lr = (*step)->learningRate();
    double expectedLoss = 0;
    for (size_t i = 0; i < p.size(); ++i) expectedLoss += p[i] * x.getDouble(static_cast<int64_t>(i));
    auto loss = (*step)->run(x, target);
    REQUIRE_MESSAGE(loss.ok(), what, ": ", (loss.ok() ? "" : loss.error().message()));
    CHECK_MESSAGE(std::abs(*loss - expectedLoss) < 1e-5 * (1 + std::abs(expectedLoss)), what, " loss at step ", t);
    host(p, g, t, lr);
    std::string d = testing::compareTensors(model.state.at("p"), Tensor::fromDoubles(TensorType{DType::f32, {5}}, p), 2e-5);
    CHECK_MESSAGE(d.empty(), what, " after step ", t, ": ", d);
  }
  CHECK((*step)->steps() == 4);
}

}  // namespace

TEST_CASE("optimizers: SGD plain, with momentum and Nesterov, with weight decay, as torch.optim.SGD") {
  checkOptimizer("sgd", nn::sgd({.lr = 0.1}), [](auto& p, const auto& g, int64_t, double lr) {
    for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
  });
  for (bool nesterov : {false, true}) {
    auto buf = std::make_shared<std::vector<double>>(5, 0.0);
    checkOptimizer(nesterov ? "nesterov" : "momentum", nn::sgd({.lr = 0.05, .momentum = 0.9, .nesterov = nesterov, .weightDecay = 0.01}),
                   [buf, nesterov](auto& p, const auto& g0, int64_t, double lr) {
                     for (size_t i = 0; i < p.size(); ++i) {
                       double g = g0[i] + 0.01 * p[i];
                       (*buf)[i] = 0.9 * (*buf)[i] + g;
                       p[i] -= lr * (nesterov ? g + 0.9 * (*buf)[i] : (*buf)[i]);
                     }
                   });
  }
}

TEST_CASE("optimizers: Adam and AdamW with bias correction, as torch.optim.Adam / AdamW") {
  for (bool decoupled : {false, true}) {
    auto m = std::make_shared<std::vector<double>>(5, 0.0), v = std::make_shared<std::vector<double>>(5, 0.0);
    nn::AdamOptions o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .epsilon = 1e-6, .weightDecay = 0.1, .decoupled = decoupled};
    checkOptimizer(decoupled ? "adamw" : "adam", nn::adam(o), [=](auto& p, const auto& g0, int64_t t, double lr) {
      double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
      for (size_t i = 0; i < p.size(); ++i) {
        double g = decoupled ? g0[i] : g0[i] + o.weightDecay * p[i];
        if (decoupled) p[i] *= 1 - lr * o.weightDecay;
        (*m)[i] = o.beta1 * (*m)[i] + (1 - o.beta1) * g;
        (*v)[i] = o.beta2 * (*v)[i] + (1 - o.beta2) * g * g;
        p[i] -= lr / bc1 * (*m)[i] / (std::sqrt((*v)[i]) / std::sqrt(bc2) + o.epsilon);
      }
    });
  }
}

TEST_CASE("optimizers: RMSprop (with momentum) and Adagrad, as torch.optim") {
  auto sq = std::make_shared<std::vector<double>>(5, 0.0), buf = std::make_shared<std::vector<double>>(5, 0.0);
  checkOptimizer("rmsprop", nn::rmsprop({.lr = 0.01, .alpha = 0.9, .epsilon = 1e-6, .momentum = 0.5}),
                 [=](auto& p, const auto& g, int64_t, double lr) {
                   for (size_t i = 0; i < p.size(); ++i) {
                     (*sq)[i] = 0.9 * (*sq)[i] + 0.1 * g[i] * g[i];
                     (*buf)[i] = 0.5 * (*buf)[i] + g[i] / (std::sqrt((*sq)[i]) + 1e-6);
                     p[i] -= lr * (*buf)[i];
                   }
                 });
  auto sum = std::make_shared<std::vector<double>>(5, 0.1);
  checkOptimizer("adagrad", nn::adagrad({.lr = 0.1, .initialAccumulator = 0.1}), [=](auto& p, const auto& g, int64_t, double lr) {
    for (size_t i = 0; i < p.size(); ++i) {
      (*sum)[i] += g[i] * g[i];
      p[i] -= lr * g[i] / (std::sqrt((*sum)[i]) + 1e-10);
    }
  });
}

TEST_CASE("optimizers: gradients clipped by global norm, and step / cosine learning-rate schedules") {
  checkOptimizer("clipped sgd", nn::sgd({.lr = 0.1}),
                 [](auto& p, const auto& g, int64_t, double lr) {
                   for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
                 },
                 {}, /*clipNorm=*/0.5);
  auto schedule = nn::stepSchedule(0.1, 2, 0.5);
  checkOptimizer("scheduled sgd", nn::sgd({.lr = 0.1}),
                 [schedule](auto& p, const auto& g, int64_t t, double) {
                   for (size_t i = 0; i < p.size(); ++i) p[i] -= schedule(t) * g[i];
                 },
                 schedule);
  CHECK(schedule(1) == doctest::Approx(0.1));
  CHECK(schedule(3) == doctest::Approx(0.05));
  auto cosine = nn::cosineSchedule(1.0, 11, 0.1);
  CHECK(cosine(1) == doctest::Approx(1.0));
  CHECK(cosine(6) == doctest::Approx(0.55));
  CHECK(cosine(11) == doctest::Approx(0.1));
  CHECK(cosine(50) == doctest::Approx(0.1));
}
