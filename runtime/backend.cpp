// Backend selection.
#include "runtime/backend.h"

#include "ir/printer.h"
#ifdef SMELT_HAVE_LLVM
#include "runtime/executable.h"
#endif
#ifdef SMELT_HAVE_OPENCL
#include "runtime/opencl_executable.h"
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

#ifdef SMELT_HAVE_LLVM
// The LLVM CPU backend: each graph compiled once into an Executable (kept by its printed text), then run.
class LlvmBackend final : public Backend {
 public:
  std::string_view name() const override { return "llvm"; }
  Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) override {
    std::string key = toText(graph);
    std::lock_guard lock(mutex_);
    auto it = compiled_.find(key);
    if (it == compiled_.end()) {
      SMELT_TRY(std::unique_ptr<Executable> exe, Executable::compile(graph));
      it = compiled_.emplace(std::move(key), std::move(exe)).first;
    }
    return it->second->run(feeds);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Executable>> compiled_;
};
#endif

#ifdef SMELT_HAVE_OPENCL
// The OpenCL backend (PoCL's CPU unless SMELT_OPENCL_DEVICE says otherwise): each graph compiled once
// into an OpenClExecutable (kept by its printed text), then run.
class OpenClBackend final : public Backend {
 public:
  std::string_view name() const override { return "opencl"; }
  Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) override {
    std::string key = toText(graph);
    std::lock_guard lock(mutex_);
    auto it = compiled_.find(key);
    if (it == compiled_.end()) {
      SMELT_TRY(std::unique_ptr<OpenClExecutable> exe, OpenClExecutable::compile(graph));
      it = compiled_.emplace(std::move(key), std::move(exe)).first;
    }
    return it->second->run(feeds);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<OpenClExecutable>> compiled_;
};
#endif

}  // namespace

std::vector<std::string> availableBackends() {
  std::vector<std::string> names;
#ifdef SMELT_HAVE_LLVM
  names.push_back("llvm");
#endif
#ifdef SMELT_HAVE_OPENCL
  names.push_back("opencl");
#endif
  names.push_back("reference");
  return names;
}

std::string defaultBackendName() { return availableBackends().front(); }

Expected<std::unique_ptr<Backend>> makeBackend(std::string_view name) {
  if (name == "reference") return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
#ifdef SMELT_HAVE_LLVM
  if (name == "llvm") return std::unique_ptr<Backend>(std::make_unique<LlvmBackend>());
#endif
#ifdef SMELT_HAVE_OPENCL
  if (name == "opencl") return std::unique_ptr<Backend>(std::make_unique<OpenClBackend>());
#endif
  return makeError("unknown or unavailable backend '{}' (available: {})", name, fmt::join(availableBackends(), ", "));
}

}  // namespace smelt
