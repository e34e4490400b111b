// Backends run graphs. Today only `reference` (the interpreter) exists; the codegen issue adds the
// compiled `llvm`, `opencl`, `cuda` and `hip` backends behind this same interface.
#pragma once

#include "ir/interpreter.h"

#include <memory>
#include <string>
#include <vector>

namespace smelt {

/// Something that runs a graph on host feeds and returns host outputs.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Runs `graph` on `feeds` (see interpret()), returning the outputs in graph order.
  virtual Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) = 0;
};

/// Names of the backends usable in this process, fastest first.
std::vector<std::string> availableBackends();
/// The fastest available backend's name.
std::string defaultBackendName();
/// Creates a backend by name; an unknown or unavailable name is an error listing the available ones.
Expected<std::unique_ptr<Backend>> makeBackend(std::string_view name);

}  // namespace smelt
