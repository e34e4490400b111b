// SMELT_REQUIRE_GPU=1 (scripts/gpu_check.sh sets it): tests that would pass with a message for lack
// of a GPU, a driver or NVRTC fail instead, so an all-green run on a GPU host proves the GPU ran.
//   if (std::string why = gpuMissing(); !why.empty()) SMELT_SKIP_WITHOUT_GPU(why);
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string_view>

namespace smelt::testing {

/// Whether $SMELT_REQUIRE_GPU is 1: missing GPU support is then a failure, not a skip.
inline bool gpuRequired() {
  const char* env = std::getenv("SMELT_REQUIRE_GPU");
  return env && std::string_view(env) == "1";
}

}  // namespace smelt::testing

/// Ends the calling test: with a failure naming `why` under SMELT_REQUIRE_GPU=1, else with a message.
#define SMELT_SKIP_WITHOUT_GPU(why)                                      \
  do {                                                                   \
    if (::smelt::testing::gpuRequired()) FAIL("SMELT_REQUIRE_GPU=1: ", why); \
    MESSAGE("skipped: ", why);                                           \
    return;                                                              \
  } while (0)
