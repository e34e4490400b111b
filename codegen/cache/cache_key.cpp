// CacheKey's canonical text and its XXH3-128 digest.
#include "codegen/cache/cache_key.h"

#include <charconv>

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

Expected<std::vector<std::pair<std::string, std::string>>> parseCacheKeyText(std::string_view text) {
  size_t at = text.find('\n');
  if (!text.starts_with("smelt-kernel-key ") || at == std::string_view::npos) return makeError("not a key text");
  std::vector<std::pair<std::string, std::string>> fields;
  for (++at; at < text.size();) {
    const size_t space = text.find(' ', at), newline = text.find('\n', at);
    if (space == std::string_view::npos || newline == std::string_view::npos || space > newline) {
      return makeError("field header at byte {}", at);
    }
    size_t length = 0;
    const std::string_view digits = text.substr(space + 1, newline - space - 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (ec != std::errc() || end != digits.data() + digits.size() || length > text.size() - newline - 1) {
      return makeError("field length at byte {}", at);
    }
    fields.emplace_back(std::string(text.substr(at, space - at)), std::string(text.substr(newline + 1, length)));
    at = newline + 1 + length + 1;  // the value and its newline
  }
  return fields;
}

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
