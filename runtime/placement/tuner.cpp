// The placement tuner: see tuner.h.
#include "runtime/placement/tuner.h"

#include "ir/parser.h"
#include "runtime/exec/executable.h"
#include "runtime/exec/run_timing.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace smelt {

namespace {

// Each graph is a typical instance of its kind, small enough to time in milliseconds at the top size
// on a 2-core CPU: an elementwise chain that fuses into one kernel, a row reduction, a square
// product, and a 3x3 convolution with 32 channels in and out.
std::string elementwiseGraph(int64_t n) {
  return fmt::format(R"(graph @tune_elementwise(%x: f32[{0}], %y: f32[{0}]) {{
  %0 = mul(%x, %y) : f32[{0}]
  %1 = tanh(%0) : f32[{0}]
  %2 = add(%1, %x) : f32[{0}]
  return r = %2
}}
)",
                     n);
}

std::string reductionGraph(int64_t rows) {
  return fmt::format(R"(graph @tune_reduction(%x: f32[{0},256]) {{
  %0 = reduce_sum(%x) {{axes = [1]}} : f32[{0}]
  return r = %0
}}
)",
                     rows);
}

std::string matmulGraph(int64_t n) {
  return fmt::format(R"(graph @tune_matmul(%a: f32[{0},{0}], %b: f32[{0},{0}]) {{
  %0 = matmul(%a, %b) : f32[{0},{0}]
  return r = %0
}}
)",
                     n);
}

std::string convGraph(int64_t side) {
  return fmt::format(R"(graph @tune_conv(%x: f32[1,32,{0},{0}], %w: f32[32,32,3,3]) {{
  %0 = conv2d(%x, %w) {{padding = [1, 1, 1, 1]}} : f32[1,32,{0},{0}]
  return r = %0
}}
)",
                     side);
}

std::vector<int64_t> ladder(bool quick, std::vector<int64_t> full, std::vector<int64_t> fast) {
  return quick ? fast : full;
}

TensorMap randomFeeds(const Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  TensorMap feeds;
  for (const Value* input : graph.inputs()) {
    Tensor t = Tensor::uninitialized(input->type());
    float* data = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = uniform(rng);
    feeds[input->name()] = std::move(t);
  }
  return feeds;
}

/// Median seconds per run of `exe` on `feeds` (host in, host out), after one untimed run.
Expected<double> medianSeconds(Executable& exe, const TensorMap& feeds, int repeats) {
  std::vector<Tensor> outputs;
  const int runs = std::max(repeats, 1);
  SMELT_TRY(RunTimes times, timeRuns([&] { return exe.run(feeds, outputs); },
                                     RunBudget{.warmup = 1, .runs = runs, .minRuns = runs}));
  return times.medianMs() / 1e3;
}

std::string milliseconds(double seconds) { return fmt::format("{:.3g} ms", seconds * 1e3); }

}  // namespace

std::vector<TuneGraph> tuneGraphs(WorkKind kind, bool quick) {
  std::vector<TuneGraph> graphs;
  auto add = [&](std::string text) {
    Expected<Graph> graph = parseGraph(text);
    // The texts above are fixed; a parse failure is a bug in this file, caught by the tests.
    if (!graph) return graphs.push_back({-1, std::move(text), Graph()});
    const int64_t amount = measureWork(*graph).of(kind);
    graphs.push_back({amount, std::move(text), std::move(*graph)});
  };
  switch (kind) {
    case WorkKind::kElementwise:
      for (int64_t n : ladder(quick, {1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22},
                              {1 << 10, 1 << 16, 1 << 20})) {
        add(elementwiseGraph(n));
      }
      break;
    case WorkKind::kReduction:
      for (int64_t rows : ladder(quick, {4, 16, 64, 256, 1024, 4096, 16384}, {4, 256, 4096})) add(reductionGraph(rows));
      break;
    case WorkKind::kMatmul:
      for (int64_t n : ladder(quick, {16, 32, 64, 128, 256, 512}, {16, 64, 256})) add(matmulGraph(n));
      break;
    case WorkKind::kConv:
      for (int64_t side : ladder(quick, {4, 8, 16, 32, 64, 128}, {4, 16, 64})) add(convGraph(side));
      break;
  }
  return graphs;
}

Expected<PlacementTable> tunePlacement(const std::shared_ptr<Device>& device, const TuneOptions& options) {
  if (device->kind() == DeviceKind::kCpu) return makeError("smelt tune measures a device against the CPU, not the CPU itself");
  const DeviceDescription& description = device->description();
  PlacementTable table;
  table.deviceId = description.id;
  table.deviceName = description.name;
  table.driver = description.driver;
  table.source = fmt::format("smelt tune, {:%Y-%m-%d %H:%M} UTC{}", std::chrono::floor<std::chrono::seconds>(
                                                                        std::chrono::system_clock::now()),
                             options.quick ? " (quick)" : "");
  std::vector<WorkKind> kinds = options.kinds;
  if (kinds.empty()) kinds.assign(kWorkKinds.begin(), kWorkKinds.end());
  uint64_t seed = 1;
  for (WorkKind kind : kinds) {
    KindCrossover entry{kind, {}, std::nullopt};
    for (const TuneGraph& tg : tuneGraphs(kind, options.quick)) {
      if (tg.amount < 0) return makeError("tune: a {} graph does not parse:\n{}", workKindName(kind), tg.text);
      const Graph& graph = tg.graph;
      const TensorMap feeds = randomFeeds(graph, ++seed);
      SMELT_TRY(std::unique_ptr<Executable> cpu, Executable::compile(graph, {.device = "cpu"}));
      // No fallback: a device that fails is measured as failing, not as the CPU.
      SMELT_TRY(std::unique_ptr<Executable> onDevice, Executable::compile(graph, {.device = device->id(), .fallback = false}));
      CrossoverPoint point{tg.amount, 0, 0};
      SMELT_TRY(point.cpuSeconds, medianSeconds(*cpu, feeds, options.repeats));
      SMELT_TRY(point.deviceSeconds, medianSeconds(*onDevice, feeds, options.repeats));
      if (options.progress) {
        options.progress(fmt::format("{} {:.3g} {}: cpu {}, {} {}", workKindName(kind), static_cast<double>(tg.amount),
                                     workUnit(kind), milliseconds(point.cpuSeconds), description.id,
                                     milliseconds(point.deviceSeconds)));
      }
      entry.points.push_back(point);
    }
    entry.crossover = crossoverFrom(entry.points);
    table.kinds.push_back(std::move(entry));
  }
  return table;
}

}  // namespace smelt
