// Kernel cache entries read from disk: any bytes decode to a payload or an error, never a read past
// the entry; and an entry encoded from any key and payload decodes back to that payload.
#include <algorithm>

#include "codegen/cache/entry_format.h"
#include "fuzz/fuzz_check.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::as_bytes(std::span(data, size));
  (void)decodeCacheEntry(bytes, "key");
  // The first byte splits the rest into a key and a payload for the round trip.
  if (size == 0) return 0;
  size_t keyLength = std::min<size_t>(data[0], size - 1);
  std::string_view key = fuzz::asText(data + 1, keyLength);
  std::span<const std::byte> payload = bytes.subspan(1 + keyLength);
  std::vector<std::byte> entry = encodeCacheEntry(key, payload);
  Expected<std::vector<std::byte>> decoded = decodeCacheEntry(entry, key);
  fuzz::require(decoded.ok() && std::equal(decoded->begin(), decoded->end(), payload.begin(), payload.end()),
                "decode(encode(key, payload)) == payload");
  return 0;
}
