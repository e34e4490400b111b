// The on-disk form of one cache entry: magic, format version, the full key text, the payload and
// an XXH3-64 checksum of all before it, so truncation, bit flips and hash collisions are caught.
#pragma once

#include "ir/support/expected.h"

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace smelt {

/// Bumped when the layout below changes; an entry of another version is rejected (and recompiled).
inline constexpr uint32_t kCacheFormatVersion = 1;

/// Serializes one entry. All integers are little-endian:
///   "SMELTKC\0"   8 bytes magic
///   u32           format version (kCacheFormatVersion)
///   u32 + bytes   the key text (CacheKey::text())
///   u64 + bytes   the payload (the compiled kernel)
///   u64           XXH3-64 of every byte above
std::vector<std::byte> encodeCacheEntry(std::string_view keyText,
                                        std::span<const std::byte> payload);

/// Parses an entry written by encodeCacheEntry for `keyText` and returns its payload. The error
/// says what is wrong for the warning: "truncated", "bad checksum", "key mismatch", ...
Expected<std::vector<std::byte>> decodeCacheEntry(std::span<const std::byte> entry,
                                                  std::string_view keyText);

/// The key text an entry was written for (its magic, version and length checked, not its checksum):
/// what `smelt cache explain` compares a missing key with.
Expected<std::string> cacheEntryKeyText(std::span<const std::byte> entry);

}  // namespace smelt
