// The kernels a symbolic executable's specializations share (see size_general_kernels.h).
#include "runtime/exec/size_general_kernels.h"

#include "codegen/log.h"

namespace smelt {

void SizeGeneralKernels::setProbe(std::map<std::string, codegen::Kernel> probe) {
  for (auto& [symbol, kernel] : probe) unmatched_[symbol].push_back(std::move(kernel));
}

std::optional<std::pair<codegen::Kernel, std::vector<int64_t>>> SizeGeneralKernels::resolve(
    const std::string& symbol, const codegen::Kernel& concrete) {
  std::vector<codegen::SizeGeneralKernel>& forms = forms_[symbol];
  for (const codegen::SizeGeneralKernel& g : forms) {
    if (std::optional<std::vector<int64_t>> values = codegen::paramsAt(g, concrete)) {
      ++general_;
      return std::make_pair(g.kernel, std::move(*values));
    }
  }
  std::vector<codegen::Kernel>& others = unmatched_[symbol];
  for (auto other = others.begin(); other != others.end(); ++other) {
    std::optional<codegen::SizeGeneralKernel> g = codegen::generalizeSizes(concrete, *other);
    if (!g) continue;
    others.erase(other);
    forms.push_back(std::move(*g));
    std::optional<std::vector<int64_t>> values = codegen::paramsAt(forms.back(), concrete);
    if (!values) break;  // cannot be: `concrete` is the kernel the form was made from
    ++general_;
    return std::make_pair(forms.back().kernel, std::move(*values));
  }
  // Kept to pair with a later size; a few suffice (sizes of one shape pair with the first).
  constexpr size_t kKept = 4;
  const bool first = forms.empty() && others.empty();
  if (others.size() < kKept) others.push_back(concrete);
  ++specific_;
  if (!first) logger().info("kernel {} ({}): compiled for this size only (its shape at this size is not that of its "
                "form for every size)", symbol, concrete.name);
  return std::nullopt;
}

}  // namespace smelt
