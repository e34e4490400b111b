// A graph compiled for the CPU: the default pipeline (fusion included), one JIT-compiled kernel per
// remaining node in schedule order, and one arena laid out by the memory planner. Running it compiles
// nothing and allocates nothing but the output tensors it returns.
//   SMELT_TRY(auto exe, Executable::compile(graph));
//   SMELT_TRY(std::vector<Tensor> outputs, exe->run(feeds));   // any number of times
#pragma once

#include "ir/interpreter.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace smelt {

/// How to compile.
struct CompileOptions {
  /// Passes to run first (the default optimizing pipeline).
  std::string pipeline;
  /// Whether kernels may run on the thread pool (off: every kernel on the calling thread).
  bool parallel = true;
  /// Whether f32/f64 matmul and gemm may run on the CPU's BLAS (SMELT_BLAS=0 turns it off: generated
  /// kernels compute every product).
  bool blas = true;
  /// Whether ops with a host implementation (OpDef::host) run it instead of their kernel.
  bool host = true;
  /// Outputs whose values may be written over a parameter's fed tensor, (parameter, output) by name: a
  /// training step's new weights over the old. Honoured where the output's kernel is the parameter's
  /// last reader and reads it only at the index it writes (see Executable::donated); the caller's
  /// parameter tensor then holds the output after a run, and the output tensor is left as it was.
  std::vector<std::pair<std::string, std::string>> donate;
  CompileOptions();
};

/// What compiling did: generated kernels, cache hits, BLAS calls, seconds.
struct CompileReport {
  int64_t kernels = 0;
  /// Products (matmul, gemm) computed by the BLAS; their epilogues count as kernels.
  int64_t blas = 0;
  int64_t cacheHits = 0;
  /// Nodes without a kernel lowering, run on the reference interpreter.
  int64_t interpreted = 0;
  /// Nodes run by their op's own CPU implementation (OpDef::host) instead of a kernel.
  int64_t host = 0;
  double seconds = 0;
  int64_t arenaBytes = 0;
};

/// See the file comment. Not thread-safe per instance (one arena); compile one per thread.
class Executable {
 public:
  static Expected<std::unique_ptr<Executable>> compile(const Graph& graph, const CompileOptions& options = {});
  ~Executable();

  /// Runs on `feeds` (every graph input, exactly its type; parameters by name override their
  /// values); returns the outputs in graph order.
  Expected<std::vector<Tensor>> run(const TensorMap& feeds);
  /// The same into `outputs`, reusing its tensors when their types match (no allocation at all on
  /// repeated runs; kernels write graph outputs straight into them).
  Status run(const TensorMap& feeds, std::vector<Tensor>& outputs);
  /// The same with feeds by position: `inputs[i]` for graph input i (exactly its type), `parameters[i]`
  /// for parameter i or null for its initial value. No names are looked up and nothing is copied.
  Status run(std::span<const Tensor* const> inputs, std::span<const Tensor* const> parameters,
             std::vector<Tensor>& outputs);
  /// Frees the parameters' initial values (copies kept since compile time) for an executable whose
  /// parameters are always fed, as training steps feed theirs; a run without one is then an error
  /// naming it.
  void releaseParameterValues();
  /// Whether output `i` is written over its donated parameter's tensor (CompileOptions::donate).
  bool donated(size_t output) const;
  /// The graph after the pipeline, as it runs.
  const Graph& graph() const;
  const CompileReport& report() const;

 private:
  Executable();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smelt
