// CacheKey: every field changes the digest, fields cannot run into each other, digests are stable.
#include "codegen/cache/cache_key.h"
#include "tests/codegen/cache/cache_test_util.h"

#include <set>

namespace smelt {

TEST_CASE("cache key: the digest is 32 lowercase hex digits and deterministic") {
  CacheKey key = test::makeKey("kernel @k { ... }");
  std::string digest = key.digest();
  CHECK(digest.size() == 32);
  CHECK(digest.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(test::makeKey("kernel @k { ... }").digest() == digest);
  CHECK(cacheDigest(key.text()) == digest);
}

TEST_CASE("cache key: backend, target, compiler, driver, options, kernel: each changes the key") {
  CacheKey base = test::makeKey("kernel @k { %0 = exp(%x) }");
  std::vector<CacheKey> variants(6, base);
  variants[0].backend = "hip";
  variants[1].target = "sm_80";
  variants[2].compilerVersion = "NVRTC 12.5";
  variants[3].driverVersion = "CUDA driver 12050";
  variants[4].options = "-O2";
  variants[5].kernel = "kernel @k { %0 = log(%x) }";
  std::set<std::string> digests = {base.digest()};
  for (const CacheKey& v : variants) {
    CHECK(v != base);
    digests.insert(v.digest());
  }
  CHECK(digests.size() == 7);
}

TEST_CASE("cache key: moving text between fields gives another key") {
  // Without lengths in the key text, "ab"+"c" and "a"+"bc" would print the same.
  CacheKey a = test::makeKey("k"), b = test::makeKey("k");
  a.backend = "ab";
  a.target = "c";
  b.backend = "a";
  b.target = "bc";
  CHECK(a.text() != b.text());
  CHECK(a.digest() != b.digest());
  // A newline inside a value cannot forge the next field either.
  CacheKey c = test::makeKey("k"), d = test::makeKey("k");
  c.options = "-O3\ndriver 0\n";
  d.options = "-O3";
  CHECK(c.digest() != d.digest());
}

TEST_CASE("cache key: the text names every field and smelt's version") {
  std::string text = test::makeKey("kernel @k {}").text();
  for (const char* part :
       {"smelt-kernel-key 1\n", "\nsmelt ", "\nbackend 4\ncuda\n", "\ntarget 6\nsm_90a\n",
        "\ncompiler 10\nNVRTC 12.4\n", "\ndriver 17\nCUDA driver 12040\n", "\noptions 3\n-O3\n",
        "\nkernel 12\nkernel @k {}\n"}) {
    CHECK_MESSAGE(text.find(part) != std::string::npos, part);
  }
}

}  // namespace smelt
