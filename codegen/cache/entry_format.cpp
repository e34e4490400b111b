// Encoding and checked decoding of one disk entry (layout in entry_format.h).
#include "codegen/cache/entry_format.h"

#include <xxhash.h>

#include <array>
#include <cstring>

namespace smelt {

namespace {

constexpr std::array<char, 8> kMagic = {'S', 'M', 'E', 'L', 'T', 'K', 'C', '\0'};
// Smallest possible entry: magic, version, two lengths (key, payload) and the checksum.
constexpr size_t kMinSize = kMagic.size() + 4 + 4 + 8 + 8;

template <typename T>
void putLE(std::vector<std::byte>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xff));
  }
}

/// Reads little-endian integers and byte ranges, never past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}
  template <typename T>
  bool get(T& value) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(std::to_integer<uint8_t>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    return true;
  }
  bool take(uint64_t n, std::span<const std::byte>& out) {
    if (data_.size() - pos_ < n) return false;
    out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const std::byte> data_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::byte> encodeCacheEntry(std::string_view keyText,
                                        std::span<const std::byte> payload) {
  std::vector<std::byte> out;
  out.reserve(kMinSize + keyText.size() + payload.size());
  for (char c : kMagic) out.push_back(static_cast<std::byte>(c));
  putLE<uint32_t>(out, kCacheFormatVersion);
  putLE<uint32_t>(out, static_cast<uint32_t>(keyText.size()));
  for (char c : keyText) out.push_back(static_cast<std::byte>(c));
  putLE<uint64_t>(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
  putLE<uint64_t>(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

Expected<std::vector<std::byte>> decodeCacheEntry(std::span<const std::byte> entry,
                                                  std::string_view keyText) {
  if (entry.size() < kMinSize) {
    return makeError("truncated ({} bytes, at least {} expected)", entry.size(), kMinSize);
  }
  if (std::memcmp(entry.data(), kMagic.data(), kMagic.size()) != 0) return makeError("bad magic");
  // The checksum first: once it holds, a wrong field below is a real format difference, not damage.
  std::span<const std::byte> body = entry.first(entry.size() - 8);
  Reader tail(entry.last(8));
  uint64_t stored = 0;
  (void)tail.get(stored);
  if (stored != XXH3_64bits(body.data(), body.size())) {
    return makeError("bad checksum (truncated or corrupt)");
  }

  Reader r(body);
  std::span<const std::byte> magic, key, payload;
  uint32_t version = 0, keySize = 0;
  uint64_t payloadSize = 0;
  (void)r.take(kMagic.size(), magic);
  if (!r.get(version)) return makeError("truncated header");
  if (version != kCacheFormatVersion) {
    return makeError("format version {}, expected {}", version, kCacheFormatVersion);
  }
  if (!r.get(keySize) || !r.take(keySize, key)) return makeError("truncated key");
  if (!r.get(payloadSize) || !r.take(payloadSize, payload)) return makeError("truncated payload");
  if (r.pos() != body.size()) return makeError("{} trailing bytes", body.size() - r.pos());
  if (std::string_view(reinterpret_cast<const char*>(key.data()), key.size()) != keyText) {
    return makeError("key mismatch (hash collision or foreign entry)");
  }
  return std::vector<std::byte>(payload.begin(), payload.end());
}

Expected<std::string> cacheEntryKeyText(std::span<const std::byte> entry) {
  if (entry.size() < kMinSize) return makeError("truncated ({} bytes)", entry.size());
  if (std::memcmp(entry.data(), kMagic.data(), kMagic.size()) != 0) return makeError("bad magic");
  Reader r(entry.subspan(kMagic.size()));
  uint32_t version = 0, length = 0;
  std::span<const std::byte> key;
  if (!r.get(version) || version != kCacheFormatVersion) return makeError("format version {}", version);
  if (!r.get(length) || !r.take(length, key)) return makeError("truncated key");
  return std::string(reinterpret_cast<const char*>(key.data()), key.size());
}

}  // namespace smelt
