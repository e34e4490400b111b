// Why a kernel missed the cache (`smelt cache explain`): the entries in the cache folder that hold the
// same kernel text under another key, and the fields in which their keys differ from the one looked up.
#pragma once

#include <string>
#include <vector>

#include "codegen/cache/cache_key.h"

namespace smelt {

/// One entry holding the key's kernel under another key: its file and how its key differs, field by
/// field ("target: cpu=znver4 ... in the entry, cpu=sapphirerapids ... here").
struct NearMiss {
  std::string file;
  std::vector<std::string> differences;
};

/// Every entry of the cache folder `dir` whose key holds `key`'s kernel text but differs elsewhere.
/// Empty when none does (the kernel was never compiled with this folder, or was evicted).
std::vector<NearMiss> findNearMisses(const std::string& dir, const CacheKey& key);

}  // namespace smelt
