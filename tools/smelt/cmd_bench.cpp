// `smelt bench FILE [--grad NAMES] [--backend B] [--input NAME=PATH.npy ...] [--fresh-outputs]
// [--device-time] [--runs N] [--warmup N] [--min-runs N] [--max-seconds S]`: compiles the graph once
// (with --grad, its backward graph too), runs it many times (random inputs where none are given) and
// prints timing; the last line is `median_ms X` for one run of the graph from host inputs to host
// outputs (--runs 0 only compiles). --device-time also times runs whose inputs and outputs stay on
// the device, each measured with the device's own timing events: `device_median_ms X`. compile_ms is the wall
// time from the loaded graph to a ready executable: autodiff (with --grad), the pass pipeline, kernel
// compilation or cache loads, the arena.
#include "frontend/model_loader.h"
#include "runtime/executable.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
#endif
#ifdef SMELT_HAVE_CUDA
#include "runtime/cuda_executable.h"
#endif
#include "runtime/device/device_tensor.h"
#include "runtime/run_timing.h"
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

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

constexpr std::string_view kBackends = "llvm"
#ifdef SMELT_HAVE_OPENCL
                                        ", opencl"
#endif
#ifdef SMELT_HAVE_CUDA
                                        ", cuda"
#endif
    ;

// A compiled graph behind one signature, whichever backend compiled it.
struct Compiled {
  std::function<Status(const TensorMap&, std::vector<Tensor>&)> run;
  /// Device-resident runs and their device (device backends only).
  std::function<Status(const DeviceTensorMap&, std::vector<DeviceTensor>&)> resident;
  std::shared_ptr<Device> device;
  CompileReport report;
  std::unique_ptr<Executable> cpu;
#ifdef SMELT_HAVE_OPENCL
  std::unique_ptr<OpenClExecutable> cl;
#endif
#ifdef SMELT_HAVE_CUDA
  std::unique_ptr<CudaExecutable> cu;
#endif
};

Expected<Compiled> compileFor(const Graph& graph, const std::string& backend) {
  Compiled c;
#ifdef SMELT_HAVE_OPENCL
  if (backend == "opencl") {
    SMELT_TRY(c.cl, OpenClExecutable::compile(graph));
    c.run = [exe = c.cl.get()](const TensorMap& f, std::vector<Tensor>& o) { return exe->run(f, o); };
    c.resident = [exe = c.cl.get()](const DeviceTensorMap& f, std::vector<DeviceTensor>& o) { return exe->run(f, o); };
    c.device = c.cl->device();
    c.report = c.cl->report();
    return c;
  }
#endif
#ifdef SMELT_HAVE_CUDA
  if (backend == "cuda") {
    SMELT_TRY(c.cu, CudaExecutable::compile(graph));
    c.run = [exe = c.cu.get()](const TensorMap& f, std::vector<Tensor>& o) { return exe->run(f, o); };
    c.resident = [exe = c.cu.get()](const DeviceTensorMap& f, std::vector<DeviceTensor>& o) { return exe->run(f, o); };
    c.device = c.cu->device();
    c.report = c.cu->report();
    return c;
  }
#endif
  if (backend != "llvm") return makeError("smelt bench: backend '{}' is not available ({})", backend, kBackends);
  SMELT_TRY(c.cpu, Executable::compile(graph));
  c.run = [exe = c.cpu.get()](const TensorMap& f, std::vector<Tensor>& o) { return exe->run(f, o); };
  c.report = c.cpu->report();
  return c;
}

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

/// Times device-resident runs: the feeds uploaded once, the outputs left on the device, each run
/// between two timing events on the device's stream (kernel time as the device measured it). A
/// device whose events carry no timestamps (OpenCL) is timed on the wall clock around run + wait.
/// `how` says which.
Expected<RunTimes> timeResidentRuns(Compiled& c, const TensorMap& feeds, const RunBudget& budget, std::string& how) {
  DeviceTensorMap onDevice;
  for (const auto& [name, t] : feeds) {
    SMELT_TRY(onDevice[name], DeviceTensor::fromHost(c.device, t));
  }
  std::vector<DeviceTensor> outputs;
  DeviceStream& stream = c.device->defaultStream();
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
    std::string grad;
    std::string backend = "llvm";
    std::vector<std::string> inputs;
    bool freshOutputs = false;
    bool deviceTime = false;
    RunBudget budget;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Compile once, run many times, print the median time of one run");
  cmd->add_option("file", options->file, "Model file (.onnx or IR text; - for stdin)")->required();
  cmd->add_option("--grad", options->grad,
                  "NAME[,NAME...]: also compute the gradients of the outputs' sum w.r.t. these inputs or parameters");
  cmd->add_option("--backend", options->backend, std::string("Backend (") + std::string(kBackends) + ")");
  cmd->add_option("--input", options->inputs, "NAME=PATH.npy; inputs not given are random");
  cmd->add_flag("--fresh-outputs", options->freshOutputs,
               "New output tensors on every run (as frameworks returning new tensors do: their first touch is "
               "timed) instead of reusing the last run's");
  cmd->add_flag("--device-time", options->deviceTime,
               "Also time runs whose inputs and outputs stay on the device, with the device's timing events "
               "(device_median_ms; device backends only)");
  cmd->add_option("--runs", options->budget.runs, "Timed runs at most (default 20; 0: compile only)");
  cmd->add_option("--warmup", options->budget.warmup, "Untimed runs first (default 3)");
  cmd->add_option("--min-runs", options->budget.minRuns, "Timed runs at least, whatever --max-seconds (default 3)");
  cmd->add_option("--max-seconds", options->budget.maxSeconds,
                  "Time budget for warm-up and timed runs (default 0: none); past it, stop after --min-runs");
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadModel(options->file));
    TensorMap feeds;
    std::mt19937_64 rng(1);
    for (const Value* v : graph.inputs()) feeds[v->name()] = randomInput(v->type(), rng);
    // Given inputs replace the random ones (readFeeds checks names, files and types).
    if (!options->inputs.empty()) {
      SMELT_TRY_CLI(TensorMap given, readFeeds(graph, options->inputs, /*requireAll=*/false));
      for (auto& [n, t] : given) feeds[n] = std::move(t);
    }
    // From here to a ready executable is what compile_ms reports.
    const auto start = std::chrono::steady_clock::now();
    double autodiffMs = 0;
    if (!options->grad.empty()) {
      SMELT_TRY_CLI(std::vector<std::string> names, splitNames(options->grad));
      if (Status added = addGradientOutputs(graph, names, true); !added) return fail(added.error().message());
      autodiffMs = msSince(start);
    }
    SMELT_TRY_CLI(Compiled compiled, compileFor(graph, options->backend));
    const double compileMs = msSince(start);
    const CompileReport& report = compiled.report;
    fmt::print("compile_ms {:.2f} ({} kernels, {} from the cache, {} on the interpreter; autodiff {:.2f} ms)\n",
               compileMs, report.kernels, report.cacheHits, report.interpreted, autodiffMs);
    if (options->budget.runs == 0) return 0;  // compile only
    if (options->deviceTime) {
      if (!compiled.resident) return fail(fmt::format("smelt bench: --device-time needs a device backend, not '{}'", options->backend));
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
    return 0;
  };
}

}  // namespace smelt::cli
