// Byte counts as users write them ("1048576", "512M", "1.5GiB") and as messages print them.
//   SMELT_TRY(int64_t budget, parseByteCount("256MiB"));   // 268435456
//   formatByteCount(268435456)                              // "256.0 MiB (268435456 bytes)"
#pragma once

#include "ir/support/expected.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace smelt {

/// A non-negative count of bytes: digits (a fraction allowed with a suffix), optionally followed by
/// K, M, G or T, alone or as KiB, MiB, GiB, TiB (powers of 1024, either case). Anything else, or a
/// count past 2^62, is an error quoting the text.
Expected<int64_t> parseByteCount(std::string_view text);

/// "N.N <unit> (B bytes)" with the largest binary unit not above the count; "B bytes" under 1 KiB.
std::string formatByteCount(int64_t bytes);

}  // namespace smelt
