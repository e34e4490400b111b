// CacheKey: everything a compiled kernel depends on, and its 128-bit digest (the entry's name).
#pragma once

#include "ir/support/expected.h"

#include <string>
#include <utility>
#include <vector>

namespace smelt {

/// What a compiled kernel depends on. Two keys with equal fields name the same binary; any field
/// that differs (a new driver, another GPU arch, -O2 instead of -O3) names another. Fill every
/// field the backend has: a field left empty matches only another empty one.
struct CacheKey {
  /// The printed kernel description (codegen's neutral text form, not the rendered source).
  std::string kernel;
  /// The backend's name: "llvm", "opencl", "cuda", "hip".
  std::string backend;
  /// The target: CPU name and features ("znver4 +avx512f,...") or GPU arch ("sm_90a", "gfx942").
  std::string target;
  /// The compiler's version ("LLVM 16.0.6", "NVRTC 12.4").
  std::string compilerVersion;
  /// The driver's or runtime's version ("CUDA driver 12040", "PoCL 3.1"); empty on the LLVM JIT.
  std::string driverVersion;
  /// Compile options as the backend passes them ("-O3 --use_fast_math").
  std::string options;

  /// The canonical text of the key: a versioned header, smelt's own version, then every field as
  /// `name <byte length>\n<value>\n`, so no two different keys print the same. Stored in each disk
  /// entry, which lets a lookup tell a hash collision from a hit.
  std::string text() const;
  /// XXH3-128 of text() as 32 lowercase hex digits (high half first, the canonical form).
  std::string digest() const;

  bool operator==(const CacheKey&) const = default;
};

/// The fields of a key text (CacheKey::text()) by name, "smelt" (its version) included, in order.
Expected<std::vector<std::pair<std::string, std::string>>> parseCacheKeyText(std::string_view text);

/// XXH3-128 of `text` as 32 lowercase hex digits.
std::string cacheDigest(std::string_view text);

}  // namespace smelt
