// What the fuzz targets share: a failed property prints both sides and aborts, which libFuzzer
// reports as a crash and saves the input that caused it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace smelt::fuzz {

inline void require(bool ok, std::string_view property, std::string_view first = {}, std::string_view second = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property failed: %.*s\n--- first\n%.*s\n--- second\n%.*s\n",
               static_cast<int>(property.size()), property.data(), static_cast<int>(first.size()), first.data(),
               static_cast<int>(second.size()), second.data());
  std::abort();
}

inline std::string_view asText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace smelt::fuzz
