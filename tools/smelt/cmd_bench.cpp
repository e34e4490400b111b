// `smelt bench FILE [--backend B] [--input NAME=PATH.npy ...] [--runs N] [--warmup N]`: compiles the
// graph once, runs it many times (random inputs where none are given) and prints timing; the last line
// is `median_ms X` for one run of the graph.
#include "frontend/model_loader.h"
#include "runtime/executable.h"
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
#endif
#include "tools/smelt/commands.h"
#include "tools/smelt/tensor_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>

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

}  // namespace

Action addBenchCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string backend = "llvm";
    std::vector<std::string> inputs;
    int runs = 20;
    int warmup = 3;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Compile once, run many times, print the median time of one run");
  cmd->add_option("file", options->file, "Model file (.onnx or IR text; - for stdin)")->required();
  cmd->add_option("--backend", options->backend, "Backend (llvm, opencl)");
  cmd->add_option("--input", options->inputs, "NAME=PATH.npy; inputs not given are random");
  cmd->add_option("--runs", options->runs, "Timed runs (default 20)");
  cmd->add_option("--warmup", options->warmup, "Untimed runs first (default 3)");
  return [options]() {
    SMELT_TRY_CLI(Graph graph, loadModel(options->file));
#ifdef SMELT_HAVE_OPENCL
    if (options->backend != "llvm" && options->backend != "opencl") {
#else
    if (options->backend != "llvm") {
#endif
      return fail(fmt::format("smelt bench: backend '{}' is not available (llvm, opencl)", options->backend));
    }
    TensorMap feeds;
    std::mt19937_64 rng(1);
    for (const Value* v : graph.inputs()) feeds[v->name()] = randomInput(v->type(), rng);
    // Given inputs replace the random ones (readFeeds checks names, files and types).
    if (!options->inputs.empty()) {
      Graph partial = graph.clone();
      SMELT_TRY_CLI(TensorMap given, readFeeds(partial, options->inputs, /*requireAll=*/false));
      for (auto& [n, t] : given) feeds[n] = std::move(t);
    }
    auto start = std::chrono::steady_clock::now();
    // Either executable: both have run(feeds, outputs) and report().
    std::function<Status(const TensorMap&, std::vector<Tensor>&)> run;
    const CompileReport* compiled = nullptr;
    std::unique_ptr<Executable> cpu;
#ifdef SMELT_HAVE_OPENCL
    std::unique_ptr<OpenClExecutable> clExe;
    if (options->backend == "opencl") {
      SMELT_TRY_CLI(clExe, OpenClExecutable::compile(graph));
      run = [&](const TensorMap& f, std::vector<Tensor>& o) { return clExe->run(f, o); };
      compiled = &clExe->report();
    }
#endif
    if (!run) {
      SMELT_TRY_CLI(cpu, Executable::compile(graph));
      run = [&](const TensorMap& f, std::vector<Tensor>& o) { return cpu->run(f, o); };
      compiled = &cpu->report();
    }
    double compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::vector<Tensor> outputs;  // reused: runs after the first allocate nothing
    for (int i = 0; i < options->warmup; ++i) {
      if (Status r = run(feeds, outputs); !r) return fail(r.error().message());
    }
    std::vector<double> times;
    for (int i = 0; i < std::max(options->runs, 1); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (Status r = run(feeds, outputs); !r) return fail(r.error().message());
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const CompileReport& report = *compiled;
    fmt::print("compile_ms {:.1f} ({} kernels, {} from the cache, {} on the interpreter)\n", compileMs, report.kernels,
               report.cacheHits, report.interpreted);
    fmt::print("min_ms {:.4f}\n", times.front());
    fmt::print("median_ms {:.4f}\n", times[times.size() / 2]);
    return 0;
  };
}

}  // namespace smelt::cli
