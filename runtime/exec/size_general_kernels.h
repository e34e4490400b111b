// The kernels a symbolic executable's specializations share (codegen/size_general.h). Its first
// specialization also lowers the graph at a second binding (the probe); each kernel that differs
// between the two only in its numbers becomes a general kernel, compiled once, which this and every
// later binding runs with its own numbers as run-time values. A kernel at a later binding that is no
// instance of its general form (its shape changed with the size: a batch of 1, say) is compiled as it
// is, counted and logged; it and a later size of the same shape then make a second general form.
//   auto shared = std::make_shared<SizeGeneralKernels>();
//   shared->setProbe(kernelsAtSecondBinding);                   // before the first compile
//   options.sizeGeneral = shared;                               // every specialization's compile
#pragma once

#include "codegen/size_general.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace smelt {

class SizeGeneralKernels {
 public:
  /// The kernels of the graph lowered at a second binding, by symbol.
  void setProbe(std::map<std::string, codegen::Kernel> probe);

  /// What to compile for `concrete` (named `symbol`): its general kernel and the run-time values
  /// that make it compute `concrete`; nullopt: compile `concrete` itself.
  std::optional<std::pair<codegen::Kernel, std::vector<int64_t>>> resolve(const std::string& symbol,
                                                                                 const codegen::Kernel& concrete);

  /// Kernels resolved to a general form, and kernels that had none (compiled for their size).
  int64_t general() const { return general_; }
  int64_t specific() const { return specific_; }

 private:
  /// Per symbol, kernels at other sizes no general form covers (the probe's, those compiled for
  /// their size): a later size whose kernel agrees with one of them in shape makes a general form.
  std::map<std::string, std::vector<codegen::Kernel>> unmatched_;
  std::map<std::string, std::vector<codegen::SizeGeneralKernel>> forms_;
  int64_t general_ = 0, specific_ = 0;
};

}  // namespace smelt
