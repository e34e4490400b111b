// The soak: training steps, predictor calls from several threads, compiles of new and of cached graphs,
// all at once in a loop for a fixed time, sampling the process's resident memory and the device pool's
// statistics. After a warm-up nothing may grow: not the resident set (beyond a small allowance for the
// allocator), not the pool's device allocations, not the JIT's loaded kernels. Every result is checked
// against the reference interpreter or the CPU as it goes. Also the pool's rent/return cycle time.
//
//   smelt_soak [--seconds S] [--device ID] [--faults SPEC] [--loops train,predict,compile] [--new-graphs]
//              [--pool-cycles N]
//
// --new-graphs: the compile loop compiles a graph never seen before each time (no cache hits; the kernel
// cache's memory layer is emptied after each, so that only what a compile leaves behind can grow): the
// code of every dropped executable must be unloaded.
//
// ctest runs it on the CPU, on PoCL with out-of-memory faults (the pool's cache is trimmed every
// second so allocations reach the driver), and on PoCL with lost devices for the compile loop alone:
// a lost device is recovered from in host runs (run(feeds)), while the model API's device-resident
// state dies with the device and its error is the caller's (docs/runtime.md). docs/testing.md has the
// 30-minute run's figures.
#ifdef SMELT_HAVE_LLVM
#include "codegen/llvm/llvm_jit.h"
#endif
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/device/device_list.h"
#include "runtime/device/fault_injection.h"
#include "runtime/device/memory_pool.h"
#include "codegen/cache/kernel_cache.h"
#include "runtime/exec/executable.h"

using namespace smelt;
using Clock = std::chrono::steady_clock;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

struct Options {
  double seconds = 30;
  std::string device = "cpu";
  std::string faults;
  int64_t poolCycles = 0;
  std::string loops = "train,predict,compile";
  bool newGraphs = false;
  bool runs(std::string_view loop) const { return loops.find(loop) != std::string::npos; }
};

double residentMiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// The first failure, kept for the final report; the loops stop at it.
std::mutex failureMutex;
std::string failure;
std::atomic<bool> stop{false};
// How long the loops may take to come round once (their first compiles) before the soak begins anyway;
// a loop still without progress then fails it.
constexpr std::chrono::seconds kFirstRoundLimit{300};

void fail(std::string message) {
  std::lock_guard lock(failureMutex);
  if (failure.empty()) failure = std::move(message);
  stop = true;
}

nn::ModulePtr network() {
  return nn::sequential({nn::linear(16, 64), nn::relu(), nn::linear(64, 64), nn::tanh(), nn::linear(64, 4)});
}

void fill(std::mt19937_64& rng, Tensor& x, Tensor* y) {
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < x.numel(); ++i) x.setDouble(i, normal(rng));
  if (y) {
    for (int64_t i = 0; i < y->numel(); ++i) y->setInt(i, static_cast<int64_t>(rng() % 4));
  }
}

double maxDifference(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.getDouble(i) - b.getDouble(i)));
  return worst;
}

// Trains on the device and on the CPU side by side: the losses must agree step after step (each
// step's result feeds the next, so a wrong step shows in every later one).
void trainLoop(const Options& options, std::atomic<int64_t>& steps) {
  nn::Model onDevice(network(), 3), onCpu(network(), 3);
  TensorType xType{DType::f32, {32, 16}}, yType{DType::i64, {32}};
  nn::TrainStepOptions deviceOptions;
  deviceOptions.device = options.device;
  auto deviceStep =
      nn::TrainStep::create(onDevice, nn::crossEntropy, nn::adam({.lr = 1e-3}), xType, yType, deviceOptions);
  auto cpuStep = nn::TrainStep::create(onCpu, nn::crossEntropy, nn::adam({.lr = 1e-3}), xType, yType);
  if (!deviceStep || !cpuStep) return fail((deviceStep ? cpuStep.error() : deviceStep.error()).message());
  std::mt19937_64 rng(7);
  Tensor x(xType), y(yType);
  while (!stop) {
    fill(rng, x, &y);
    auto a = (*deviceStep)->run(x, y);
    auto b = (*cpuStep)->run(x, y);
    if (!a || !b) return fail(fmt::format("train step: {}", (a ? b.error() : a.error()).message()));
    if (std::abs(*a - *b) > 1e-3 * (1 + std::abs(*b))) {
      return fail(fmt::format("train step {}: loss {} on {}, {} on the CPU", steps.load(), *a, options.device, *b));
    }
    ++steps;
  }
}

// Predicts from a model of its own (training mutates the trained one) and compares with the CPU.
void predictLoop(const Options& options, int thread, std::atomic<int64_t>& calls) {
  nn::Model model(network(), 11);
  TensorType xType{DType::f32, {8, 16}};
  auto onDevice = nn::Predictor::create(model, xType, {.device = options.device});
  auto onCpu = nn::Predictor::create(model, xType, {.device = "cpu"});
  if (!onDevice || !onCpu) return fail((onDevice ? onCpu.error() : onDevice.error()).message());
  std::mt19937_64 rng(100 + thread);
  Tensor x(xType), a, b;
  while (!stop) {
    fill(rng, x, nullptr);
    Status ra = (*onDevice)->run(x, a), rb = (*onCpu)->run(x, b);
    if (!ra.ok() || !rb.ok()) return fail(fmt::format("predictor: {}", (ra.ok() ? rb : ra).error().message()));
    if (maxDifference(a, b) > 1e-4)
      return fail(fmt::format("predictor {}: differs from the CPU by {}", thread, maxDifference(a, b)));
    ++calls;
  }
}

// Compiles graphs in a rotation of 24 distinct ones: the first round compiles, later rounds hit the
// kernel cache and load code the JIT unloaded when the previous executable was dropped. With
// --new-graphs every graph is new (its scale constant differs), so every one compiles.
void compileLoop(const Options& options, std::atomic<int64_t>& compiles) {
  std::mt19937_64 rng(5);
  for (int64_t i = 0; !stop; ++i) {
    const double scale = options.newGraphs ? 1.0 + static_cast<double>(i) * 0x1p-20
                                           : 1.0 + static_cast<double>(i % 24) * 0.125;
    Expected<Graph> graph = parseGraph(fmt::format(R"(graph @g(%x: f32[16,32]) {{
  %0 = constant() {{value = dense<f32[]> [{}]}} : f32[]
  %1 = mul(%x, %0) : f32[16,32]
  %2 = softmax(%1) {{axis = 1}} : f32[16,32]
  return y = %2
}})",
                                                   scale));
    if (!graph) return fail(graph.error().message());
    Tensor x(TensorType{DType::f32, {16, 32}});
    fill(rng, x, nullptr);
    CompileOptions compile;
    compile.device = options.device;
    auto exe = Executable::compile(*graph, compile);
    if (!exe) return fail(fmt::format("compile: {}", exe.error().message()));
    auto out = (*exe)->run({{"x", x}});
    auto want = interpret(*graph, {{"x", x}});
    if (!out || !want) return fail(fmt::format("run: {}", (out ? want.error() : out.error()).message()));
    if (maxDifference((*out)[0], (*want)[0]) > 1e-5) return fail("a compiled graph differs from the reference");
    if (options.newGraphs) KernelCache::global().clearMemory();  // the cache's own bound is 64 MiB, not a leak
    ++compiles;
  }
}

// Rent and return `cycles` blocks of a few sizes: the pool's steady-state cost per cycle (blocks the
// caller overwrites, so no fill is timed: rent() would zero each one on the device).
void poolCycles(const std::shared_ptr<MemoryPool>& pool, int64_t cycles) {
  const size_t sizes[] = {256, 4096, 65536, 1 << 20};
  auto start = Clock::now();
  for (int64_t i = 0; i < cycles; ++i) {
    Expected<PooledBuffer> block = pool->rentToOverwrite(sizes[i % 4]);
    if (!block) return fail(fmt::format("pool: {}", block.error().message()));
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("pool: {} rent/return cycles in {:.2f} s: {:.1f} ns each; {} device allocations\n", cycles, seconds,
             seconds * 1e9 / static_cast<double>(cycles), pool->stats().deviceAllocations);
}

/// What the loops did, and the process's size at one moment.
struct Progress {
  int64_t steps = 0, calls = 0, compiles = 0;
};
struct Sample {
  double residentMiB = 0;
  int64_t deviceAllocations = 0;
  size_t loadedKernels = 0;
};

/// Why the soak failed, given the loops' progress when faults began and at the end, the faults the probe
/// allocation took itself, and the samples after the warm-up and at the end; empty when it passed.
std::string verdict(const Options& options, const Progress& atFaults, const Progress& done, int probeFaults,
                    const Sample& warm, const Sample& last, double rssMax) {
  if ((options.runs("train") && done.steps == 0) || (options.runs("predict") && done.calls == 0) ||
      (options.runs("compile") && done.compiles == 0)) {
    return "a loop made no progress";
  }
  if (!options.faults.empty()) {
    // A fault must have reached the loops (not only the probe), and every loop must have gone on after it with
    // correct results (a wrong one stops the soak): that is the recovery being tested.
    const int reached = faultInjector().injected(Fault::kOutOfMemory) + faultInjector().injected(Fault::kDeviceLost) -
                        probeFaults;
    if (reached <= 0) return fmt::format("no fault reached the loops ({} taken by the probe allocation)", probeFaults);
    if ((options.runs("train") && done.steps == atFaults.steps) ||
        (options.runs("predict") && done.calls == atFaults.calls) ||
        (options.runs("compile") && done.compiles == atFaults.compiles)) {
      return "a loop made no progress after the faults";
    }
  }
  // The allocator keeps some freed memory: 16 MiB of growth is allowed, a leak of even 1 KiB per
  // iteration over minutes is far more. Under AddressSanitizer the resident set grows by design (its
  // quarantine holds freed blocks, 256 MiB by default): there its leak check at exit stands in.
  // Compiles alone leave the allocator little slack to keep (0.2 MiB over a 16 s run here): 3 MiB, which the
  // code of this loop's graphs kept after their executables go (about 12 KB each: 5.1 MiB in a 16 s run here
  // with unloading switched off) passes.
  const double allowance = options.newGraphs ? 3.0 : 16.0;
  if (!kAddressSanitizer && rssMax - warm.residentMiB > allowance) {
    return fmt::format("resident memory grew by {:.1f} MiB after the warm-up ({} MiB allowed)", rssMax - warm.residentMiB,
                       allowance);
  }
  // Without faults the pool must serve everything from its cache once warm (a fault frees it).
  if (options.faults.empty() && last.deviceAllocations != warm.deviceAllocations) {
    return fmt::format("the pool allocated {} more blocks after the warm-up",
                       last.deviceAllocations - warm.deviceAllocations);
  }
  if (last.loadedKernels > warm.loadedKernels + 8) {
    return fmt::format("loaded kernels grew from {} to {}", warm.loadedKernels, last.loadedKernels);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--seconds") {
      options.seconds = std::atof(value().c_str());
    } else if (arg == "--device") {
      options.device = value();
    } else if (arg == "--faults") {
      options.faults = value();
    } else if (arg == "--loops") {
      options.loops = value();
    } else if (arg == "--new-graphs") {
      options.newGraphs = true;
    } else if (arg == "--pool-cycles") {
      options.poolCycles = std::atoll(value().c_str());
    } else {
      fmt::print(stderr,
                 "usage: smelt_soak [--seconds S] [--device ID] [--faults SPEC] [--loops train,predict,compile] "
                 "[--new-graphs] [--pool-cycles N]\n");
      return 2;
    }
  }
  auto device = openDevice(options.device);
  if (!device) {
    fmt::print(stderr, "soak: {}\n", device.error().message());
    return 2;
  }
  std::shared_ptr<MemoryPool> pool = MemoryPool::forDevice(*device);
  if (options.poolCycles > 0) {
    poolCycles(pool, options.poolCycles);
    if (!failure.empty()) fmt::print(stderr, "soak: FAILED: {}\n", failure);
    return failure.empty() ? 0 : 1;
  }

  std::atomic<int64_t> steps{0}, calls{0}, compiles{0};
  std::vector<std::thread> threads;
  if (options.runs("train")) threads.emplace_back(trainLoop, std::cref(options), std::ref(steps));
  if (options.runs("predict")) {
    for (int t = 0; t < 3; ++t) threads.emplace_back(predictLoop, std::cref(options), t, std::ref(calls));
  }
  if (options.runs("compile")) threads.emplace_back(compileLoop, std::cref(options), std::ref(compiles));

  // The soak's time starts once every loop has come round once: the first compiles may take longer than
  // the whole soak where the OpenCL driver's own cache is cold (PoCL compiles CLBlast's GEMM program for
  // about 30 s), and faults must reach running loops, not their set-up.
  const auto started = Clock::now();
  auto firstRound = [&] {
    return (!options.runs("train") || steps > 0) && (!options.runs("predict") || calls > 0) &&
           (!options.runs("compile") || compiles > 0);
  };
  while (!firstRound() && !stop && Clock::now() - started < kFirstRoundLimit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Warm-up: a quarter of the time (every compiled batch, rotation graph and pool block made once).
  // With faults, they are injected then and the baseline is taken at half time, after the recovery (a
  // reset device is a new context, whose setup is allowed to allocate once).
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  double warmEnd = options.seconds / 4;
  double baselineAt = options.faults.empty() ? warmEnd : options.seconds / 2;
  bool faultsOn = false;
  double faultsFrom = 0;
  Progress atFaults;
  int probeFaults = 0;
  Sample warmSample;
  double rssMax = 0;
  bool warm = false;
  double lastTrim = 0;
  // The JIT's loaded kernels (0 without LLVM): the code of dropped executables must be unloaded.
  auto loadedKernels = [] {
#ifdef SMELT_HAVE_LLVM
    auto jit = codegen::LlvmJit::global();
    return jit ? (*jit)->loadedKernels() : size_t{0};
#else
    return size_t{0};
#endif
  };
  while (!stop && elapsed() < options.seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Faults start after the warm-up: recovery must not leak either.
    if (!faultsOn && !options.faults.empty() && elapsed() >= warmEnd) {
      faultsOn = true;
      faultsFrom = elapsed();
      atFaults = {steps.load(), calls.load(), compiles.load()};
      if (Status s = faultInjector().configure(options.faults); !s.ok()) fail(s.error().message());
    }
    if (!warm && elapsed() >= baselineAt) {
      warm = true;
      warmSample = {residentMiB(), pool->stats().deviceAllocations, loadedKernels()};
      fmt::print("soak: warm after {:.0f} s: {:.1f} MiB resident, {} device allocations, {} kernels loaded\n",
                 elapsed(), warmSample.residentMiB, warmSample.deviceAllocations, warmSample.loadedKernels);
    }
    if (warm) rssMax = std::max(rssMax, residentMiB());
    // Under faults the pool's cache is freed every second, so rents reach the driver's allocator
    // (where out-of-memory faults are injected) instead of being served from the cache. Where after 3 s
    // none has fired (the loops may hold every block they need), a block of a size no loop rents reaches it
    // for sure; the faults it takes are counted apart, as they test no loop's recovery.
    if (faultsOn && elapsed() - lastTrim >= 1.0) {
      pool->trim();
      const bool quiet = faultInjector().injected(Fault::kOutOfMemory) + faultInjector().injected(Fault::kDeviceLost) == 0;
      if (quiet && elapsed() - faultsFrom >= 3.0) {
        const int before = faultInjector().injected(Fault::kOutOfMemory);
        (void)pool->rentToOverwrite(size_t{3} << 20);
        probeFaults += faultInjector().injected(Fault::kOutOfMemory) - before;
      }
      lastTrim = elapsed();
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();

  Sample last{residentMiB(), pool->stats().deviceAllocations, loadedKernels()};
  fmt::print(
      "soak: {:.0f} s on {}: {} train steps, {} predictor calls, {} compiles; resident {:.1f} MiB warm, "
      "{:.1f} MiB at most after, {:.1f} MiB at the end; device allocations {} warm, {} at the end (pool hit "
      "rate {:.4f}); kernels loaded {} warm, {} at the end; faults injected: {} out of memory, {} lost device ({} "
      "taken by the probe)\n",
      elapsed(), options.device, steps.load(), calls.load(), compiles.load(), warmSample.residentMiB, rssMax,
      last.residentMiB, warmSample.deviceAllocations, last.deviceAllocations, pool->stats().hitRate(),
      warmSample.loadedKernels, last.loadedKernels, faultInjector().injected(Fault::kOutOfMemory),
      faultInjector().injected(Fault::kDeviceLost), probeFaults);
  if (failure.empty())
    failure = verdict(options, atFaults, {steps.load(), calls.load(), compiles.load()}, probeFaults, warmSample, last,
                      rssMax);
  (void)faultInjector().configure("");
  if (!failure.empty()) {
    fmt::print(stderr, "soak: FAILED: {}\n", failure);
    return 1;
  }
  fmt::print("soak: passed\n");
  return 0;
}
