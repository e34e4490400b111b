// Backend selection.
#include "runtime/backend.h"

#include "codegen/cache/cache_key.h"
#include "ir/printer.h"
#ifdef SMELT_HAVE_LLVM
#include "runtime/executable.h"
#endif
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
#endif
#ifdef SMELT_HAVE_CUDA
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda_executable.h"
#endif

#include <fmt/ranges.h>

#include <map>
#include <mutex>

namespace smelt {

namespace {

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) override {
    return interpret(graph, feeds);
  }
};

// A compiling backend: each graph compiled once into an executable `Exe`, then run. Graphs are told
// apart by their text without parameter values plus a digest of each parameter's bytes: printing
// megabytes of weights as hex on every call would cost more than many runs.
template <typename Exe>
class CompilingBackend final : public Backend {
 public:
  explicit CompilingBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) override {
    std::string key = keyOf(graph);
    std::lock_guard lock(mutex_);
    auto it = compiled_.find(key);
    if (it == compiled_.end()) {
      SMELT_TRY(std::unique_ptr<Exe> exe, Exe::compile(graph));
      it = compiled_.emplace(std::move(key), std::move(exe)).first;
    }
    return it->second->run(feeds);
  }

 private:
  static std::string keyOf(const Graph& graph) {
    PrintOptions options;
    options.printParameterValues = false;
    std::string key = printGraph(graph, options).value();
    for (const Value* p : graph.parameters()) {
      auto bytes = p->initialValue().bytes();
      key += cacheDigest(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    return key;
  }

  std::string name_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Exe>> compiled_;
};

}  // namespace

std::vector<std::string> availableBackends() {
  std::vector<std::string> names;
#ifdef SMELT_HAVE_LLVM
  names.push_back("llvm");
#endif
#ifdef SMELT_HAVE_OPENCL
  names.push_back("opencl");
#endif
#ifdef SMELT_HAVE_CUDA
  // Listed whenever built, even without a driver or GPU (its compile() then says which is missing);
  // after llvm and opencl, so it is not the default next to them.
  names.push_back("cuda");
#endif
  names.push_back("reference");
  return names;
}

std::string defaultBackendName() {
  for (const std::string& name : availableBackends()) {
#ifdef SMELT_HAVE_CUDA
    // A build without LLVM or OpenCL lists cuda first: it is the default only where a GPU answers.
    if (name == "cuda") {
      Expected<int> devices = cuda::deviceCount();
      if (!devices.ok() || *devices == 0) continue;
    }
#endif
    return name;
  }
  return "reference";
}

Expected<std::unique_ptr<Backend>> makeBackend(std::string_view name) {
  if (name == "reference") return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
#ifdef SMELT_HAVE_LLVM
  if (name == "llvm") return std::unique_ptr<Backend>(std::make_unique<CompilingBackend<Executable>>("llvm"));
#endif
#ifdef SMELT_HAVE_OPENCL
  if (name == "opencl") return std::unique_ptr<Backend>(std::make_unique<CompilingBackend<OpenClExecutable>>("opencl"));
#endif
#ifdef SMELT_HAVE_CUDA
  if (name == "cuda") return std::unique_ptr<Backend>(std::make_unique<CompilingBackend<CudaExecutable>>("cuda"));
#endif
  return makeError("unknown or unavailable backend '{}' (available: {})", name, fmt::join(availableBackends(), ", "));
}

}  // namespace smelt
