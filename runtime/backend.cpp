// Backend selection.
#include "runtime/backend.h"

#include <fmt/ranges.h>

namespace smelt {

namespace {

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  Expected<std::vector<Tensor>> run(const Graph& graph, const TensorMap& feeds) override {
    return interpret(graph, feeds);
  }
};

}  // namespace

std::vector<std::string> availableBackends() { return {"reference"}; }

std::string defaultBackendName() { return availableBackends().front(); }

Expected<std::unique_ptr<Backend>> makeBackend(std::string_view name) {
  if (name == "reference") return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
  return makeError("unknown or unavailable backend '{}' (available: {})", name, fmt::join(availableBackends(), ", "));
}

}  // namespace smelt
