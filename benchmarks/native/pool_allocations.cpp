// Device allocations over a training run, with the caching pool and without (SMELT_POOL=0): a
// gradient-descent step (w' = w - lr x^T tanh(x w), batch 256, 784 -> 256) on the OpenCL device with
// device-resident tensors; each step uploads a fresh batch and carries w on the device. The parent
// runs itself twice, once per setting, and prints the counts, the time in the driver's allocate and
// free calls, and the ratios.
//   smelt_pool_allocations [--steps N] [--json]   (--json: one object, for benchmarks/run_benchmarks.py)
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/executable.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

using namespace smelt;

namespace {

constexpr const char* kStep = R"(graph @step(%x: f32[256,784], %xt: f32[784,256]) {
  param %w: f32[784,256]
  %0 = matmul(%x, %w) : f32[256,256]
  %1 = tanh(%0) : f32[256,256]
  %2 = matmul(%xt, %1) : f32[784,256]
  %3 = constant() {value = dense<f32[]> [0.001]} : f32[]
  %4 = mul(%2, %3) : f32[784,256]
  %5 = sub(%w, %4) : f32[784,256]
  %6 = reduce_sum(%1) {axes = [0, 1]} : f32[]
  return w_next = %5, activity = %6
}
)";

Tensor randomTensor(TensorType type, std::mt19937& rng) {
  Tensor t(std::move(type));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

/// One training run in this process; prints "allocations frees seconds hit_rate step_ms".
int child(int steps) {
  auto graph = parseGraph(kStep);
  if (!graph) return fmt::print(stderr, "{}\n", graph.error().message()), 1;
  auto exe = Executable::compile(*graph, {.device = "opencl", .fallback = false});
  if (!exe) return fmt::print(stderr, "{}\n", exe.error().message()), 1;
  std::shared_ptr<Device> device = (*exe)->device();
  std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(device);
  pool->resetCounters();
  std::mt19937 rng(1);
  DeviceTensorMap feeds;
  feeds["w"] = DeviceTensor::fromHost(device, randomTensor(TensorType{DType::f32, {784, 256}}, rng)).value();
  Tensor x = randomTensor(TensorType{DType::f32, {256, 784}}, rng), xt = randomTensor(TensorType{DType::f32, {784, 256}}, rng);
  std::vector<DeviceTensor> outputs;
  auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    // A new batch each step, as a data loader feeds it; the weights stay on the device.
    feeds["x"] = DeviceTensor::fromHost(device, x).value();
    feeds["xt"] = DeviceTensor::fromHost(device, xt).value();
    outputs.clear();
    if (Status st = (*exe)->run(feeds, outputs); !st.ok()) return fmt::print(stderr, "{}\n", st.error().message()), 1;
    feeds["w"] = outputs[0];
    Tensor activity = outputs[1].toHost().value();  // the loss-like scalar, fetched each step
    (void)activity;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / steps;
  feeds.clear();
  outputs.clear();
  PoolStats st = pool->stats();
  fmt::print("{} {} {:.6f} {:.4f} {:.3f}\n", st.deviceAllocations, st.deviceFrees, st.allocationSeconds, st.hitRate(), ms);
  return 0;
}

struct Result {
  long allocations = 0, frees = 0;
  double seconds = 0, hitRate = 0, stepMs = 0;
};

bool runChild(const char* self, int steps, bool pool, Result& r) {
  std::string command = fmt::format("SMELT_POOL={} '{}' --child --steps {}", pool ? 1 : 0, self, steps);
  FILE* p = popen(command.c_str(), "r");
  if (!p) return false;
  int n = std::fscanf(p, "%ld %ld %lf %lf %lf", &r.allocations, &r.frees, &r.seconds, &r.hitRate, &r.stepMs);
  return pclose(p) == 0 && n == 5;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 200;
  bool isChild = false, json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--child") isChild = true;
    if (a == "--json") json = true;
    if (a == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
  }
  if (isChild) return child(steps);
  Result pooled, unpooled;
  if (!runChild(argv[0], steps, true, pooled) || !runChild(argv[0], steps, false, unpooled)) {
    fmt::print(stderr, "pool_allocations: a child run failed (no OpenCL device?)\n");
    return 1;
  }
  if (json) {
    auto object = [](const Result& r) {
      return fmt::format(R"({{"allocations": {}, "frees": {}, "allocation_seconds": {:.6g}, "hit_rate": {:.4f}, "step_ms": {:.4f}}})",
                         r.allocations, r.frees, r.seconds, r.hitRate, r.stepMs);
    };
    fmt::print(R"({{"steps": {}, "pooled": {}, "unpooled": {}}})"
               "\n",
               steps, object(pooled), object(unpooled));
    return 0;
  }
  fmt::print("training run: {} steps on OpenCL, device-resident (batch uploaded each step, w kept)\n", steps);
  fmt::print("{:<12} {:>12} {:>8} {:>14} {:>9} {:>9}\n", "", "allocations", "frees", "alloc time ms", "hit rate", "step ms");
  for (auto [name, r] : {std::pair{"pooled", pooled}, std::pair{"SMELT_POOL=0", unpooled}}) {
    fmt::print("{:<12} {:>12} {:>8} {:>14.3f} {:>9.3f} {:>9.3f}\n", name, r.allocations, r.frees, r.seconds * 1e3,
               r.hitRate, r.stepMs);
  }
  fmt::print("allocations: {:.1f}x fewer with the pool; allocation time: {:.1f}x less\n",
             static_cast<double>(unpooled.allocations) / std::max(1L, pooled.allocations),
             unpooled.seconds / std::max(1e-9, pooled.seconds));
  return 0;
}
