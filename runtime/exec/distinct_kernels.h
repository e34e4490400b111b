// Kernels that compute the same thing compiled once per image. A graph often lowers to several
// kernels that differ only in their names: an unrolled recurrence's steps, a network's repeated
// blocks, the same padding or transpose before each convolution (a ResNet export: 55 kernels, 38
// distinct; an unrolled LSTM: 183 kernels, 32 distinct). Every backend's loadKernels() then sees only
// the distinct ones (OpenCL, CUDA and HIP build one image of them; the CPU's JIT skips its cache lookups
// for the rest); the others become aliases of the first kernel of their computation
// (codegen::computationText()).
//   DistinctKernels distinct = distinctKernels(kernels, symbols);
//   SMELT_TRY(loaded, backend->loadKernels(distinct.kernels, distinct.symbols, info));
//   loaded = withAliases(std::move(loaded), distinct.aliases);
#pragma once

#include "codegen/kernel.h"
#include "runtime/device/device.h"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace smelt {

struct DistinctKernels {
  /// The first kernel of each computation, in the order given, and its symbol.
  std::vector<const codegen::Kernel*> kernels;
  std::vector<std::string> symbols;
  /// Per kernel given: the index in `kernels` of the one compiled for it.
  std::vector<size_t> compiledAs;
  /// The symbol of every kernel not compiled itself -> the symbol compiled for it.
  std::map<std::string, std::string> aliases;
};

/// `kernels` (kernels[i] named symbols[i]) with each computation kept once.
DistinctKernels distinctKernels(std::span<const codegen::Kernel* const> kernels, std::span<const std::string> symbols);

/// `loaded`, preparing an alias's launches with the kernel compiled for it; `loaded` itself when there
/// are no aliases.
std::shared_ptr<DeviceKernels> withAliases(std::shared_ptr<DeviceKernels> loaded,
                                           std::map<std::string, std::string> aliases);

}  // namespace smelt
