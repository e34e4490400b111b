// The disk entry format: round trip, and every truncation, flipped byte or other key is an error.
#include "codegen/cache/entry_format.h"
#include "tests/codegen/cache/cache_test_util.h"

namespace smelt {

TEST_CASE("entry format: round trip, empty payload included") {
  std::vector<std::byte> payload = test::fakeBinary("ptx", 300);
  std::vector<std::byte> entry = encodeCacheEntry("the key", payload);
  CHECK(std::memcmp(entry.data(), "SMELTKC\0", 8) == 0);
  Expected<std::vector<std::byte>> back = decodeCacheEntry(entry, "the key");
  REQUIRE_MESSAGE(back.ok(), back.error().message());
  CHECK(*back == payload);

  Expected<std::vector<std::byte>> empty = decodeCacheEntry(encodeCacheEntry("k", {}), "k");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("entry format: every truncation is rejected") {
  std::vector<std::byte> entry = encodeCacheEntry("key text", test::fakeBinary("x", 40));
  for (size_t n = 0; n < entry.size(); ++n) {
    Expected<std::vector<std::byte>> r = decodeCacheEntry(std::span(entry).first(n), "key text");
    CHECK_MESSAGE(!r.ok(), "a prefix of " << n << " bytes was accepted");
  }
}

TEST_CASE("entry format: every single flipped byte is rejected") {
  std::vector<std::byte> entry = encodeCacheEntry("key text", test::fakeBinary("x", 40));
  for (size_t i = 0; i < entry.size(); ++i) {
    std::vector<std::byte> bad = entry;
    bad[i] ^= std::byte{0x01};
    CHECK_MESSAGE(!decodeCacheEntry(bad, "key text").ok(),
                  "flipping byte " << i << " was not noticed");
  }
  std::vector<std::byte> bad = entry;
  bad[entry.size() / 2] ^= std::byte{0x80};
  CHECK(decodeCacheEntry(bad, "key text").error().message().find("checksum") != std::string::npos);
}

TEST_CASE("entry format: another key's entry (a hash collision) is rejected") {
  std::vector<std::byte> entry = encodeCacheEntry("key A", test::fakeBinary("x"));
  Expected<std::vector<std::byte>> r = decodeCacheEntry(entry, "key B");
  REQUIRE(!r.ok());
  CHECK(r.error().message().find("key mismatch") != std::string::npos);
}

TEST_CASE("entry format: trailing bytes are rejected") {
  std::vector<std::byte> entry = encodeCacheEntry("k", test::fakeBinary("x"));
  entry.push_back(std::byte{0});
  CHECK(!decodeCacheEntry(entry, "k").ok());
}

}  // namespace smelt
