// smelt_train_steps: the model API's workloads of ../shared/peers/torch_peer.py, timed in-process:
// mlp_train_step (784-1024-1024-10, batch 256, Adam, cross-entropy: one compiled training step per
// call) and tiny_latency (relu(x W^T + b) at 64x64 through a compiled Predictor). Medians of many
// runs; peak resident memory of the process afterwards (run one workload per process to compare it).
//   smelt_train_steps [--only NAME] [--seconds S]
// prints `NAME median_ms X peak_rss_mb Y` per workload.
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/train_step.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>

using namespace smelt;

namespace {

Tensor randomNormal(const TensorType& type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Tensor t(type);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

double medianMs(const std::function<void()>& fn, double seconds, int minRuns) {
  for (int i = 0; i < 3; ++i) fn();  // warm-up
  std::vector<double> ms;
  auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(ms.size()) < minRuns ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (ms.size() > 100000) break;
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

double peakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

int fail(const Error& e) {
  fmt::print(stderr, "smelt_train_steps: {}\n", e.message());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
  }
  auto wanted = [&](const char* name) { return only.empty() || only == name; };
  if (wanted("mlp_train_step")) {
    nn::Model model(nn::sequential({nn::linear(784, 1024), nn::relu(), nn::linear(1024, 1024), nn::relu(),
                                    nn::linear(1024, 10)}),
                    0);
    auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 1e-3}), TensorType{DType::f32, {256, 784}},
                                      TensorType{DType::i64, {256}});
    if (!step.ok()) return fail(step.error());
    Tensor x = randomNormal(TensorType{DType::f32, {256, 784}}, 1);
    Tensor y(TensorType{DType::i64, {256}});
    for (int64_t i = 0; i < 256; ++i) y.data<int64_t>()[i] = i % 10;
    double ms = medianMs([&] { (void)(*step)->run(x, y); }, seconds, 20);
    fmt::print("mlp_train_step median_ms {:.4f} peak_rss_mb {:.1f}\n", ms, peakRssMb());
  }
  if (wanted("resnet18_train_step")) {
    nn::Model model(nn::resnet18(1000), 0);
    auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.01, .momentum = 0.9}),
                                      TensorType{DType::f32, {16, 3, 64, 64}}, TensorType{DType::i64, {16}});
    if (!step.ok()) return fail(step.error());
    Tensor x = randomNormal(TensorType{DType::f32, {16, 3, 64, 64}}, 3);
    Tensor y(TensorType{DType::i64, {16}});
    for (int64_t i = 0; i < 16; ++i) y.data<int64_t>()[i] = (i * 37) % 1000;
    double ms = medianMs([&] { (void)(*step)->run(x, y); }, seconds, 10);
    fmt::print("resnet18_train_step median_ms {:.4f} peak_rss_mb {:.1f}\n", ms, peakRssMb());
  }
  if (wanted("tiny_latency")) {
    nn::Model model(nn::sequential({nn::linear(64, 64), nn::relu()}), 0);
    auto predict = nn::Predictor::create(model, TensorType{DType::f32, {64, 64}});
    if (!predict.ok()) return fail(predict.error());
    Tensor x = randomNormal(TensorType{DType::f32, {64, 64}}, 2), y;
    double ms = medianMs([&] { (void)(*predict)->run(x, y); }, seconds, 200);
    fmt::print("tiny_latency median_ms {:.6f} peak_rss_mb {:.1f}\n", ms, peakRssMb());
  }
  return 0;
}
