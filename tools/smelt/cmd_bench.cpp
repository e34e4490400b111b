// `smelt bench FILE [--grad NAMES] [--backend B] [--input NAME=PATH.npy ...] [--fresh-outputs]
// [--device-time] [--runs N] [--warmup N] [--min-runs N] [--max-seconds S]`: compiles the graph once
// (with --grad, its backward graph too), runs it many times (random inputs where none are given) and
// prints timing; the last line is `median_ms X` for one run of the graph from host inputs to host
// outputs (--runs 0 only compiles). --device-time also times runs whose inputs and outputs stay on
// the device, each measured with the device's own timing events: `device_median_ms X`. compile_ms is the wall
// time from the loaded graph to a ready executable: autodiff (with --grad), the pass pipeline, kernel
// compilation or cache loads, the arena.
#include "frontend/model_loader.h"
#include "ir/dims.h"
#include "runtime/exec/executable.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/run_timing.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <string_view>

namespace smelt::cli {

namespace {

// Uniform in +-[0.25, 2] for floats (never zero), small positive integers, random bools.
Tensor randomInput(const TensorType& type, std::mt19937_64& rng) {
  Tensor t(type);
  std::uniform_real_distribution<double> mag(0.25, 2.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (isFloat(type.dtype)) t.setDouble(i, (rng() & 1 ? 1 : -1) * mag(rng));
    else t.setInt(i, type.dtype == DType::boolean ? static_cast<int64_t>(rng() & 1) : static_cast<int64_t>(1 + rng() % 5));
  }
  return t;
}

/// The graph compiled where --backend says, with both ways to run it.
struct Compiled {
  std::unique_ptr<Executable> exe;
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs) { return exe->run(feeds, outputs); }
  Status resident(const DeviceTensorMap& feeds, std::vector<DeviceTensor>& outputs) { return exe->run(feeds, outputs); }
};

Expected<Compiled> compileFor(const Graph& graph, const std::string& backend) {
  if (backend == "reference") return makeError("smelt bench: the reference interpreter compiles nothing to time");
  // No fallback: a bench on a device that fails must say so, not time the CPU.
  SMELT_TRY(std::unique_ptr<Executable> exe, Executable::compile(graph, {.device = backend, .fallback = false}));
  return Compiled{std::move(exe)};
}

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

/// Times device-resident runs: the feeds uploaded once, the outputs left on the device, each run
/// between two timing events on the device's stream (kernel time as the device measured it). A
/// device whose events carry no timestamps (OpenCL) is timed on the wall clock around run + wait.
/// `how` says which.
Expected<RunTimes> timeResidentRuns(Compiled& c, const TensorMap& feeds, const RunBudget& budget, std::string& how) {
  const std::shared_ptr<Device>& device = c.exe->device();
  DeviceTensorMap onDevice;
  for (const auto& [name, t] : feeds) {
    SMELT_TRY(onDevice[name], DeviceTensor::fromHost(device, t));
  }
  std::vector<DeviceTensor> outputs;
  DeviceStream& stream = device->defaultStream();
  SMELT_CHECK_OK(c.resident(onDevice, outputs));
  SMELT_CHECK_OK(stream.synchronize());
  // Probe once whether the events can time.
  SMELT_TRY(std::unique_ptr<DeviceEvent> a, stream.record(true));
  SMELT_TRY(std::unique_ptr<DeviceEvent> b, stream.record(true));
  SMELT_CHECK_OK(b->synchronize());
  const bool events = b->elapsedMsSince(*a).ok();
  how = events ? "device events" : "wall clock, run + synchronize";
  return timeMeasuredRuns(
      [&]() -> Expected<double> {
        if (!events) {
          const auto t0 = std::chrono::steady_clock::now();
          SMELT_CHECK_OK(c.resident(onDevice, outputs));
          SMELT_CHECK_OK(stream.synchronize());
          return msSince(t0);
        }
        SMELT_TRY(std::unique_ptr<DeviceEvent> start, stream.record(true));
        SMELT_CHECK_OK(c.resident(onDevice, outputs));
        SMELT_TRY(std::unique_ptr<DeviceEvent> end, stream.record(true));
        SMELT_CHECK_OK(end->synchronize());
        return end->elapsedMsSince(*start);
      },
      budget);
}

}  // namespace

Action addBenchCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> dims;
    std::string grad;
    std::string backend;
    std::vector<std::string> inputs;
    bool freshOutputs = false;
    bool deviceTime = false;
    bool symbolicBatch = false;
    int64_t sweepSizes = 0;
    RunBudget budget;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Compile once, run many times, print the median time of one run");
  addModelFileArgument(cmd, options->file);
  addDimOption(cmd, options->dims);
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: also compute the gradients of the outputs' sum w.r.t. these inputs or parameters");
  addBackendOption(cmd, options->backend, false);
  cmd->add_option("--input", options->inputs, "NAME=PATH.npy; inputs not given are random");
  cmd->add_flag("--fresh-outputs", options->freshOutputs,
               "New output tensors on every run (as frameworks returning new tensors do: their first touch is "
               "timed) instead of reusing the last run's");
  cmd->add_flag("--symbolic-batch", options->symbolicBatch,
               "Compile with the inputs' leading extent (the first input's) made a symbolic dimension N in [1, "
               "max(extent, --sweep-sizes)], then run at the file's size: the shape-polymorphic executable, to "
               "compare with the static one");
  cmd->add_option("--sweep-sizes", options->sweepSizes,
                  "With --symbolic-batch: after timing, run once at every batch size 1..S and print how many kernels "
                  "all sizes compiled (not from a cache), against one size's");
  cmd->add_flag("--device-time", options->deviceTime,
               "Also time runs whose inputs and outputs stay on the device, with the device's timing events "
               "(device_median_ms)");
  cmd->add_option("--runs", options->budget.runs, "Timed runs at most (default 20; 0: compile only)");
  cmd->add_option("--warmup", options->budget.warmup, "Untimed runs first (default 3)");
  cmd->add_option("--min-runs", options->budget.minRuns, "Timed runs at least, whatever --max-seconds (default 3)");
  cmd->add_option("--max-seconds", options->budget.maxSeconds,
                  "Time budget for warm-up and timed runs (default 0: none); past it, stop after --min-runs");
  return [options]() {
    // Given inputs bind symbolic dimensions, as --dim does (readFeeds checks names, files and types); the
    // inputs not given are random.
    SMELT_TRY_CLI(TensorMap given, readInputArrays(options->inputs));
    SMELT_TRY_CLI(Graph graph, loadModelForCommand(options->file, options->dims, given));
    SMELT_TRY_CLI(TensorMap feeds, readFeeds(graph, options->inputs, /*requireAll=*/false));
    std::mt19937_64 rng(1);
    for (const Value* v : graph.inputs()) {
      if (!feeds.count(v->name())) feeds[v->name()] = randomInput(v->type(), rng);
    }
    // From here to a ready executable is what compile_ms reports.
    const auto start = std::chrono::steady_clock::now();
    double autodiffMs = 0;
    const int64_t batch = !graph.inputs().empty() && graph.inputs()[0]->type().rank() > 0
                              ? graph.inputs()[0]->type().shape[0]
                              : -1;
    if (options->symbolicBatch) {
      if (batch < 1) return fail("--symbolic-batch: the first input has no leading extent to make symbolic");
      SMELT_TRY_CLI(graph, withInputTypes(graph, [&](TensorType t) -> Expected<TensorType> {
                      if (t.rank() > 0 && t.shape[0] == batch) t.shape[0] = dimSymbol("N");
                      return t;
                    }));
      graph.setDimRange("N", {1, std::max(batch, options->sweepSizes)});
    }
    // Autodiff after the batch is symbolic: the backward graph's shapes follow the forward's.
    if (!options->grad.empty()) {
      SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->grad));
      if (Status added = addGradientOutputs(graph, names, true); !added) return fail(added.error().message());
      autodiffMs = msSince(start);
    }
    SMELT_TRY_CLI(Compiled compiled, compileFor(graph, options->backend));
    const double compileMs = msSince(start);
    const CompileReport& report = compiled.exe->report();
    fmt::print("compile_ms {:.2f} ({} kernels, {} from the cache, {} on the interpreter; autodiff {:.2f} ms; on {})\n",
               compileMs, report.kernels, report.cacheHits, report.interpreted, autodiffMs, report.device);
    if (options->budget.runs == 0) return 0;  // compile only
    if (options->deviceTime) {
      std::string how;
      SMELT_TRY_CLI(RunTimes device, timeResidentRuns(compiled, feeds, options->budget, how));
      fmt::print("device_runs {} ({})\n", device.ms.size(), how);
      fmt::print("device_min_ms {:.4f}\n", device.minMs());
      fmt::print("device_median_ms {:.4f}\n", device.medianMs());
    }
    std::vector<Tensor> outputs;  // reused unless --fresh-outputs: runs after the first allocate nothing
    auto once = [&] {
      if (options->freshOutputs) outputs.clear();  // frees the last run's, like a dropped result
      return compiled.run(feeds, outputs);
    };
    SMELT_TRY_CLI(RunTimes times, timeRuns(once, options->budget));
    fmt::print("runs {} (after {} warm-up)\n", times.ms.size(), times.warmups);
    fmt::print("min_ms {:.4f}\n", times.minMs());
    fmt::print("median_ms {:.4f}\n", times.medianMs());
    if (options->symbolicBatch && options->sweepSizes > 0) {
      // The first binding (the file's size, compiled on the first run above) and then every size.
      const CompileReport first = compiled.exe->report();  // a copy: report() follows the last run's binding
      const int64_t oneSize = first.kernels - first.cacheHits;
      int64_t all = oneSize, batchOfOne = 0;
      // What the bindings' working memory would take each on its own (the 32 largest: at most 32 are
      // kept), against the one block they share.
      std::vector<int64_t> ownWorking = {first.workingBytes};
      for (int64_t n = 1; n <= options->sweepSizes; ++n) {
        const int before = compiled.exe->specializations();
        TensorMap sized;
        for (const Value* v : graph.inputs()) {
          TensorType t = v->type();
          for (int64_t& d : t.shape) d = isSymbolic(d) ? n : d;
          sized[v->name()] = randomInput(t, rng);
        }
        outputs.clear();
        if (Status ran = compiled.run(sized, outputs); !ran) return fail(ran.error().message());
        const CompileReport& r = compiled.exe->report();
        if (compiled.exe->specializations() > before) {
          ownWorking.push_back(r.workingBytes);
          all += r.kernels - r.cacheHits;
          if (n == 1) batchOfOne = r.kernels - r.cacheHits;
        }
      }
      fmt::print("sweep_kernels_compiled {} (batch sizes 1..{}, {} bindings; one size compiled {}, {} of its {} "
                 "kernels shared by every size)\n",
                 all, options->sweepSizes, compiled.exe->specializations(), oneSize, first.sizeGeneralKernels,
                 first.kernels);
      fmt::print("sweep_kernels_compiled_batch_of_one {}\n", batchOfOne);
      std::sort(ownWorking.rbegin(), ownWorking.rend());
      if (ownWorking.size() > 32) ownWorking.resize(32);
      int64_t apart = 0;
      for (int64_t b : ownWorking) apart += b;
      fmt::print("sweep_working_bytes {} (one block for every binding; {} kept apart would hold {})\n",
                 compiled.exe->workingMemoryBytes(), ownWorking.size(), apart);
    }
    return 0;
  };
}

}  // namespace smelt::cli
