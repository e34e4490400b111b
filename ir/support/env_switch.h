// The SMELT_* switches that turn one mechanism off, to compare or bisect (docs/troubleshooting.md): set to 0, the
// mechanism is off; unset or anything else, on. Read where the mechanism decides once (a function-local static).
//   static const bool off = switchedOff("SMELT_NCCL");
#pragma once

#include <cstdlib>
#include <string_view>

namespace smelt {

/// Whether the environment variable `name` is set to "0".
inline bool switchedOff(const char* name) {
  const char* value = std::getenv(name);
  return value && std::string_view(value) == "0";
}

}  // namespace smelt
