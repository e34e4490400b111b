// smelt_train_steps: the model API's workloads of ../shared/peers/torch_peer.py, timed in-process:
// mlp_train_step (784-1024-1024-10, batch 256, Adam, cross-entropy), resnet18_train_step (torchvision's
// ResNet-18, batch 16 of 3x64x64, SGD with momentum 0.9): one compiled training step per call; and
// tiny_latency (relu(x W^T + b) at 64x64 through a compiled Predictor). Medians of many runs.
//   smelt_train_steps [--only NAME] [--seconds S] [--device ID] [--compiled-batch N] [--precision f32|bf16|f16]
//                     [--memory-budget F[,F...]]
// (ID: cpu by default, cuda, opencl, ...; N: the training steps are created for batches of N, larger
// than the workload's, and timed at the workload's batch: a partial batch's step, whose kernels are the
// ones every size shares, to set beside the step compiled for that batch alone.)
// prints, per workload, `workload NAME` then `median_ms X`, `compile_ms X` (graph to executable, autodiff
// included), `peak_mb X` (the process's peak resident memory above its resident memory just before the
// model was built, the runtime already started: run one workload per process to compare it with another
// framework's) and, for the training steps on a device, `host_us X` and `async_ms X` (timeQueuedSteps).
#include "benchmarks/native/training_data.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/models.h"
#include "frontend/nn/train_step.h"
#include "runtime/device/device_list.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

using namespace smelt;

namespace {

using bench::labels;
using bench::randomNormal;

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

double residentMb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double peakMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

int fail(const Error& e) {
  fmt::print(stderr, "smelt_train_steps: {}\n", e.message());
  return 1;
}

void report(const char* name, double ms, double compileMs, double baselineMb) {
  fmt::print("workload {}\nmedian_ms {:.6f}\ncompile_ms {:.1f}\npeak_mb {:.1f}\n", name, ms, compileMs,
             peakMb() - baselineMb);
  std::fflush(stdout);
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Where the workloads run (--device).
std::string device = "cpu";
/// The batch the training steps are created for (--compiled-batch); 0: the workload's own.
int64_t compiledBatch = 0;
/// What products and convolutions compute in (--precision f32|bf16|f16: TrainStepOptions::precision).
DType precision = DType::f32;

/// Fractions of the unbudgeted arena to train under (--memory-budget F[,F...]); empty: none.
std::vector<double> budgetFractions;

/// Losses of `steps` training steps from the model's initial state.
Expected<std::vector<double>> losses(nn::TrainStep& step, const Tensor& x, const Tensor& y, int steps) {
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    SMELT_TRY(double loss, step.run(x, y));
    out.push_back(loss);
  }
  return out;
}

/// Under each budget of budgetFractions: the step's planned peak and time beside the unbudgeted one's (the
/// two timed alternately), and whether the loss trajectory over 5 steps from the same initial model
/// matches. Prints `budget F`, `planned_bytes`, `budget_planned_bytes` (CompileReport::plannedBytes),
/// `budget_compile_ms`, `median_ms`,
/// `budget_median_ms`, `loss_max_rel_diff`.
int budgetCurve(const char* name, const std::function<nn::ModulePtr()>& makeModule,
                const std::function<nn::OptimizerPtr()>& makeOptimizer, const TensorType& input, int64_t classes,
                double seconds) {
  Tensor x = randomNormal(input, 1);
  Tensor y = labels(input.shape[0], classes);
  TensorType target{DType::i64, {input.shape[0]}};
  auto create = [&](nn::Model& model, int64_t budget) {
    nn::TrainStepOptions options{.device = device};
    options.memoryBudget = budget;
    return nn::TrainStep::create(model, nn::crossEntropy, makeOptimizer(), input, target, options);
  };
  nn::Model plainModel(makeModule(), 0);
  auto plain = create(plainModel, 0);
  if (!plain.ok()) return fail(plain.error());
  int64_t arena = (*plain)->report().plannedBytes;
  auto plainLosses = losses(**plain, x, y, 5);
  if (!plainLosses.ok()) return fail(plainLosses.error());
  for (double fraction : budgetFractions) {
    nn::Model model(makeModule(), 0);
    auto t0 = std::chrono::steady_clock::now();
    auto budgeted = create(model, static_cast<int64_t>(fraction * static_cast<double>(arena)));
    double compileMs = msSince(t0);
    fmt::print("workload {}\nbudget {:.3f}\nplanned_bytes {}\n", name, fraction, arena);
    if (!budgeted.ok()) {
      fmt::print("budget_error {}\n", budgeted.error().message());
      std::fflush(stdout);
      continue;
    }
    auto budgetLosses = losses(**budgeted, x, y, 5);
    if (!budgetLosses.ok()) return fail(budgetLosses.error());
    double worst = 0;
    for (size_t i = 0; i < budgetLosses->size(); ++i) {
      worst = std::max(worst,
                       std::abs((*budgetLosses)[i] - (*plainLosses)[i]) / std::max(1e-6, std::abs((*plainLosses)[i])));
    }
    // Paired: each round times one run of either.
    std::vector<double> a, b;
    auto start = std::chrono::steady_clock::now();
    while (a.size() < 10 || msSince(start) < seconds * 1000) {
      auto t = std::chrono::steady_clock::now();
      (void)(*plain)->run(x, y);
      a.push_back(msSince(t));
      t = std::chrono::steady_clock::now();
      (void)(*budgeted)->run(x, y);
      b.push_back(msSince(t));
    }
    auto median = [](std::vector<double> v) {
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    fmt::print(
        "budget_planned_bytes {}\nbudget_compile_ms {:.1f}\nmedian_ms {:.6f}\nbudget_median_ms {:.6f}\n"
        "loss_max_rel_diff {:.3g}\n",
        (*budgeted)->report().plannedBytes, compileMs, median(a), median(b), worst);
    std::fflush(stdout);
  }
  return 0;
}

/// On a device: the batch uploaded once and the step queued with runAsync (nn::TrainStep) in bursts of
/// kBurst, each call timed on the host, then sync(). Prints `host_us X`, the median host time of a queued
/// step (the launch alone: with CUDA graphs, one replay), `async_ms X`, a burst's time per step (the
/// device's pace with no wait between steps), and `replayed N of M`: how many of those steps were replays.
Status timeQueuedSteps(nn::TrainStep& step, const Tensor& x, const Tensor& y, double seconds) {
  constexpr int kBurst = 20;
  SMELT_TRY(std::shared_ptr<Device> on, openDevice(step.deviceId()));
  SMELT_TRY(DeviceTensor dx, DeviceTensor::fromHost(on, x));
  SMELT_TRY(DeviceTensor dy, DeviceTensor::fromHost(on, y));
  auto queue = [&]() -> Status {
    auto loss = step.runAsync(dx, dy);
    return loss.ok() ? Status::success() : Status(loss.error());
  };
  for (int i = 0; i < 3; ++i) SMELT_CHECK_OK(queue());  // warm-up: recorded, then replayed
  SMELT_CHECK_OK(step.sync());
  std::vector<double> hostUs, perStepMs;
  const int64_t replaysBefore = step.replays();
  auto start = std::chrono::steady_clock::now();
  while (perStepMs.size() < 3 || msSince(start) < seconds * 1000) {
    auto burst = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) {
      auto t = std::chrono::steady_clock::now();
      SMELT_CHECK_OK(queue());
      hostUs.push_back(msSince(t) * 1000);
    }
    SMELT_CHECK_OK(step.sync());
    perStepMs.push_back(msSince(burst) / kBurst);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  fmt::print("host_us {:.2f}\nasync_ms {:.6f}\nreplayed {} of {}\n", median(hostUs), median(perStepMs),
             step.replays() - replaysBefore, hostUs.size());
  std::fflush(stdout);
  return Status::success();
}

/// Builds a model, compiles its training step and times it (each step returns its loss, so a step on
/// a device is timed to its end); on a device, then the same step queued (timeQueuedSteps).
int trainStep(const char* name, nn::ModulePtr module, nn::OptimizerPtr optimizer, const TensorType& input,
              int64_t classes, double seconds) {
  double baseline = residentMb();
  nn::Model model(std::move(module), 0);
  auto t0 = std::chrono::steady_clock::now();
  TensorType created = input;
  if (compiledBatch > 0) {
    if (compiledBatch < input.shape[0]) {
      fmt::print(stderr, "smelt_train_steps: --compiled-batch {} is below {}'s batch of {}\n", compiledBatch, name,
                 input.shape[0]);
      return 1;
    }
    created.shape[0] = compiledBatch;
  }
  nn::TrainStepOptions options{.device = device};
  options.precision = precision;
  auto step = nn::TrainStep::create(model, nn::crossEntropy, std::move(optimizer), created,
                                    TensorType{DType::i64, {created.shape[0]}}, options);
  if (!step.ok()) return fail(step.error());
  double compileMs = msSince(t0);
  Tensor x = randomNormal(input, 1);
  Tensor y = labels(input.shape[0], classes);
  // The first step uploads the state to a device (and, at a batch below the one the step was created
  // for, compiles that batch's step): outside the timing, as the compile is.
  if (auto first = (*step)->run(x, y); !first.ok()) return fail(first.error());
  double ms = medianMs([&] { (void)(*step)->run(x, y); }, seconds, 10);
  report(name, ms, compileMs, baseline);
  if ((*step)->deviceId() != "cpu") {
    if (Status queued = timeQueuedSteps(**step, x, y, seconds); !queued.ok()) return fail(queued.error());
  }
  return 0;
}

/// Starts smelt's runtime (the LLVM JIT, the thread pool, the BLAS) with a tiny graph before any
/// baseline is taken: like importing torch or jax in the peers' processes, a once-per-process cost
/// that belongs to no workload.
void startRuntime() {
  nn::Model model(nn::linear(8, 8), 0);
  auto p = nn::Predictor::create(model, TensorType{DType::f32, {8, 8}});
  if (p.ok()) (void)(*p)->run(Tensor(TensorType{DType::f32, {8, 8}}));
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--compiled-batch")) compiledBatch = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--precision")) {
      std::string_view p = argv[i + 1];
      precision = p == "bf16" ? DType::bf16 : p == "f16" ? DType::f16 : DType::f32;
    }
    if (!std::strcmp(argv[i], "--memory-budget")) {
      for (std::string_view rest = argv[i + 1]; !rest.empty();) {
        size_t comma = rest.find(',');
        budgetFractions.push_back(std::atof(std::string(rest.substr(0, comma)).c_str()));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    }
  }
  auto wanted = [&](const char* name) { return only.empty() || only == name; };
  startRuntime();
  if (!budgetFractions.empty()) {
    // The memory-budget curve: fractions of each training step's unbudgeted arena.
    if (wanted("mlp_train_step") &&
        budgetCurve(
            "mlp_train_step",
            [] {
              return nn::sequential(
                  {nn::linear(784, 1024), nn::relu(), nn::linear(1024, 1024), nn::relu(), nn::linear(1024, 10)});
            },
            [] { return nn::adam({.lr = 1e-3}); }, TensorType{DType::f32, {256, 784}}, 10, seconds)) {
      return 1;
    }
    if (wanted("resnet18_train_step") && budgetCurve(
                                             "resnet18_train_step", [] { return nn::resnet18(1000); },
                                             [] { return nn::sgd({.lr = 0.01, .momentum = 0.9}); },
                                             TensorType{DType::f32, {16, 3, 64, 64}}, 1000, seconds)) {
      return 1;
    }
    return 0;
  }
  if (wanted("mlp_train_step")) {
    auto mlp =
        nn::sequential({nn::linear(784, 1024), nn::relu(), nn::linear(1024, 1024), nn::relu(), nn::linear(1024, 10)});
    if (int rc =
            trainStep("mlp_train_step", mlp, nn::adam({.lr = 1e-3}), TensorType{DType::f32, {256, 784}}, 10, seconds)) {
      return rc;
    }
  }
  if (wanted("resnet18_train_step")) {
    if (int rc = trainStep("resnet18_train_step", nn::resnet18(1000), nn::sgd({.lr = 0.01, .momentum = 0.9}),
                           TensorType{DType::f32, {16, 3, 64, 64}}, 1000, seconds)) {
      return rc;
    }
  }
  if (wanted("tiny_latency")) {
    double baseline = residentMb();
    nn::Model model(nn::sequential({nn::linear(64, 64), nn::relu()}), 0);
    auto t0 = std::chrono::steady_clock::now();
    auto predict = nn::Predictor::create(model, TensorType{DType::f32, {64, 64}}, {.device = device});
    if (!predict.ok()) return fail(predict.error());
    double compileMs = msSince(t0);
    Tensor x = randomNormal(TensorType{DType::f32, {64, 64}}, 2), y;
    double ms = medianMs([&] { (void)(*predict)->run(x, y); }, seconds, 200);
    report("tiny_latency", ms, compileMs, baseline);
  }
  return 0;
}
