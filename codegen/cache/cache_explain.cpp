// See cache_explain.h.
#include "codegen/cache/cache_explain.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "codegen/cache/entry_format.h"

namespace smelt {

namespace {

/// A field's value for a message: one line, at most 80 characters.
std::string shown(const std::string& value) {
  std::string line = value.substr(0, value.find('\n'));
  if (line.size() > 80) line = line.substr(0, 77) + "...";
  return line.empty() ? "(empty)" : line;
}

}  // namespace

std::vector<NearMiss> findNearMisses(const std::string& dir, const CacheKey& key) {
  std::vector<NearMiss> found;
  auto wanted = parseCacheKeyText(key.text());
  if (!wanted.ok()) return found;
  std::map<std::string, std::string> here(wanted->begin(), wanted->end());
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".kc") continue;
    // Entries are kernels' objects, kilobytes to a few megabytes; a larger file is not one.
    if (it->file_size(ec) > (64u << 20)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto text = cacheEntryKeyText(std::as_bytes(std::span(bytes)));
    if (!text.ok()) continue;
    auto fields = parseCacheKeyText(*text);
    if (!fields.ok()) continue;
    std::map<std::string, std::string> theirs(fields->begin(), fields->end());
    if (theirs["kernel"] != here["kernel"]) continue;
    NearMiss miss{it->path().string(), {}};
    for (const auto& [name, value] : here) {
      if (name != "kernel" && theirs[name] != value) {
        miss.differences.push_back(
            fmt::format("{}: '{}' in the entry, '{}' here", name, shown(theirs[name]), shown(value)));
      }
    }
    found.push_back(std::move(miss));
  }
  return found;
}

}  // namespace smelt
