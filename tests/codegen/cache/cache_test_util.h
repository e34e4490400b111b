// Helpers for the kernel cache tests: a fresh temporary folder per test, log capture, file tweaks.
#pragma once

#include "codegen/cache/cache_key.h"
#include "codegen/log.h"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace smelt::test {

/// A new empty folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "smelt-cache-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  /// A path inside the folder (not created).
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Captures what the smelt logger prints while it lives; `level` is set for the duration.
class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::warn)
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)), saved_(logger().level()) {
    sink_->set_pattern("[%l] %v");
    logger().sinks().push_back(sink_);
    logger().set_level(level);
  }
  ~LogCapture() {
    auto& sinks = logger().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    logger().set_level(saved_);
  }
  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum saved_;
};

/// A key whose kernel text is `kernel`, with plausible other fields.
inline CacheKey makeKey(const std::string& kernel, const std::string& backend = "cuda") {
  return CacheKey{.kernel = kernel,
                  .backend = backend,
                  .target = "sm_90a",
                  .compilerVersion = "NVRTC 12.4",
                  .driverVersion = "CUDA driver 12040",
                  .options = "-O3"};
}

/// Bytes standing in for a compiled kernel; distinct per `seed`.
inline std::vector<std::byte> fakeBinary(const std::string& seed, size_t size = 64) {
  std::vector<std::byte> out(size);
  for (size_t i = 0; i < size; ++i) {
    out[i] = static_cast<std::byte>((seed.size() * 31 + i * 7 + seed[i % seed.size()]) & 0xff);
  }
  return out;
}

/// Where the cache in `dir` keeps `key`.
inline std::string entryPathOf(const std::string& dir, const CacheKey& key) {
  std::string d = key.digest();
  return dir + "/" + d.substr(0, 2) + "/" + d + ".kc";
}

inline std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

inline void writeFile(const std::string& path, const std::vector<char>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

}  // namespace smelt::test
