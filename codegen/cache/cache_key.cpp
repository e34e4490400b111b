// CacheKey's canonical text and its XXH3-128 digest.
#include "codegen/cache/cache_key.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace smelt {

namespace {

// Bump when text() changes shape, so old entries stop matching instead of being misread.
constexpr int kKeyTextVersion = 1;

void appendField(std::string& out, std::string_view name, std::string_view value) {
  // The length makes the encoding unambiguous whatever the value holds (newlines included).
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, value.size());
  out.append(value);
  out.push_back('\n');
}

}  // namespace

std::string CacheKey::text() const {
  std::string out = fmt::format("smelt-kernel-key {}\n", kKeyTextVersion);
  // smelt's version is part of every key: a new smelt may render the same description differently.
  appendField(out, "smelt", SMELT_VERSION_STRING);
  appendField(out, "backend", backend);
  appendField(out, "target", target);
  appendField(out, "compiler", compilerVersion);
  appendField(out, "driver", driverVersion);
  appendField(out, "options", options);
  // The kernel goes last: it is the long one, and the short fields stay readable in a hex dump.
  appendField(out, "kernel", kernel);
  return out;
}

std::string CacheKey::digest() const { return cacheDigest(text()); }

std::string cacheDigest(std::string_view text) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(text.data(), text.size()));
  std::string hex;
  hex.reserve(32);
  for (unsigned char byte : canonical.digest) {
    fmt::format_to(std::back_inserter(hex), "{:02x}", byte);
  }
  return hex;
}

}  // namespace smelt
