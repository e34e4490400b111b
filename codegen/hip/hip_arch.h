// The AMD GPU architectures smelt lets HIPRTC compile for. HIPRTC 5.2 aborts the whole process (no
// error code, no log) for gfx94x, gfx11xx and gfx12xx, so targets are checked against a list of
// archs measured to work before anything is compiled (docs/codegen.md, TOOLCHAIN.md section 4).
#pragma once

#include "ir/support/expected.h"

#include <array>
#include <string_view>

namespace smelt::hip {

/// Architectures HIPRTC is known to compile for without killing the process.
inline constexpr std::array<std::string_view, 2> kAllowedArchs = {"gfx90a", "gfx1030"};

/// Checks "gfx90a" or a target with features ("gfx90a:sramecc+:xnack-") against kAllowedArchs; the
/// error names the allowlist.
Status checkArch(std::string_view arch);

}  // namespace smelt::hip
