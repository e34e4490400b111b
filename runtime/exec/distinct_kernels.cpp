// distinctKernels() and the aliasing DeviceKernels (distinct_kernels.h).
#include "runtime/exec/distinct_kernels.h"

#include <unordered_map>

namespace smelt {

namespace {

/// Prepares an alias's launch with the kernel compiled for it: same computation, same code.
class AliasedKernels final : public DeviceKernels {
 public:
  AliasedKernels(std::shared_ptr<DeviceKernels> loaded, std::map<std::string, std::string> aliases)
      : loaded_(std::move(loaded)), aliases_(std::move(aliases)) {}

  Expected<std::unique_ptr<PreparedLaunch>> prepare(const std::string& symbol, std::span<const KernelBufferArg> buffers,
                                                    const LaunchShape& shape) override {
    auto it = aliases_.find(symbol);
    return loaded_->prepare(it == aliases_.end() ? symbol : it->second, buffers, shape);
  }

 private:
  std::shared_ptr<DeviceKernels> loaded_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace

DistinctKernels distinctKernels(std::span<const codegen::Kernel* const> kernels, std::span<const std::string> symbols) {
  DistinctKernels distinct;
  std::unordered_map<std::string, size_t> byComputation;
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto [it, added] = byComputation.emplace(codegen::computationText(*kernels[k]), distinct.kernels.size());
    if (added) {
      distinct.kernels.push_back(kernels[k]);
      distinct.symbols.push_back(symbols[k]);
    } else {
      distinct.aliases.emplace(symbols[k], distinct.symbols[it->second]);
    }
    distinct.compiledAs.push_back(it->second);
  }
  return distinct;
}

std::shared_ptr<DeviceKernels> withAliases(std::shared_ptr<DeviceKernels> loaded,
                                           std::map<std::string, std::string> aliases) {
  if (aliases.empty() || !loaded) return loaded;
  return std::make_shared<AliasedKernels>(std::move(loaded), std::move(aliases));
}

}  // namespace smelt
