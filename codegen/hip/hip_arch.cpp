// The HIP arch allowlist check, shared by smelt_hiprtc and the smelt-hiprtc helper.
#include "codegen/hip/hip_arch.h"

#include <algorithm>

namespace smelt::hip {

namespace {

/// A target feature is a lower-case name followed by + or - ("xnack-").
bool isFeature(std::string_view f) {
  if (f.size() < 2 || (f.back() != '+' && f.back() != '-')) return false;
  return std::all_of(f.begin(), f.end() - 1,
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

}  // namespace

Status checkArch(std::string_view arch) {
  const std::string_view base = arch.substr(0, arch.find(':'));
  if (std::find(kAllowedArchs.begin(), kAllowedArchs.end(), base) == kAllowedArchs.end())
    return makeError(
        "HIP arch '{}' is not in smelt's allowlist ({}): HIPRTC 5.2 aborts the process for some "
        "archs (gfx94x, gfx11xx, gfx12xx), so only archs measured to work are compiled",
        arch, fmt::join(kAllowedArchs, ", "));
  for (std::string_view rest = arch.substr(base.size()); !rest.empty();) {
    rest.remove_prefix(1);  // the ':'
    const std::string_view feature = rest.substr(0, rest.find(':'));
    if (!isFeature(feature))
      return makeError("HIP arch '{}': bad target feature '{}' (expected e.g. xnack- or sramecc+)",
                       arch, feature);
    rest.remove_prefix(feature.size());
  }
  return Status::success();
}

}  // namespace smelt::hip
