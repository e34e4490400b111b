// See input_files.h.
#include "ir/support/input_files.h"

#include <algorithm>
#include <fstream>

namespace smelt {

namespace fs = std::filesystem;

Expected<std::string> readInputFile(const std::string& path, std::string_view kind, uint64_t maxBytes) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return makeError("cannot open '{}' (no such file)", path);
  if (fs::is_directory(status))
    return makeError("'{}' is a folder, not a regular file ({} is read from a file)", path, kind);
  if (!fs::is_regular_file(status)) {
    return makeError("'{}' is a device, FIFO or socket, not a regular file ({} is read from a file)", path, kind);
  }
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return makeError("cannot read the size of '{}': {}", path, ec.message());
  if (size > maxBytes) return makeError("'{}' is {} bytes; {} of at most {} bytes is read", path, size, kind, maxBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("cannot open '{}'", path);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  // A file that shrank while being read is an error, not a silently shorter input.
  if (in.gcount() != static_cast<std::streamsize>(size)) return makeError("reading '{}' failed", path);
  return bytes;
}

Expected<fs::path> resolveInsideFolder(const std::string& folder, const std::string& relative, std::string_view what) {
  if (relative.empty()) return makeError("{}: the external data file has no name", what);
  if (relative.find('\0') != std::string::npos) return makeError("{}: bad external data file name", what);
  fs::path rel(relative);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory() || relative.front() == '\\') {
    return makeError("{}: external data file '{}' is an absolute path; only files in the model's folder are read", what,
                     relative);
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      return makeError("{}: external data file '{}' contains '..'; only files in the model's folder are read", what,
                       relative);
    }
  }
  std::error_code ec;
  fs::path base = fs::canonical(folder.empty() ? "." : folder, ec);
  if (ec) return makeError("{}: cannot resolve the model's folder '{}': {}", what, folder, ec.message());
  fs::path full = fs::canonical(base / rel, ec);
  if (ec) return makeError("{}: cannot open external data file '{}': {}", what, (base / rel).string(), ec.message());
  // canonical() followed every link: the result must still lie under the folder.
  auto [baseEnd, fullIt] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (baseEnd != base.end()) {
    return makeError(
        "{}: external data file '{}' resolves to '{}', outside the model's folder '{}' (a symbolic "
        "link); only files in the model's folder are read",
        what, relative, full.string(), base.string());
  }
  if (!fs::is_regular_file(full, ec))
    return makeError("{}: external data file '{}' is not a regular file", what, relative);
  return full;
}

Expected<std::string> readFileRange(const fs::path& path, int64_t offset, int64_t length, std::string_view what) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return makeError("{}: cannot open external data file '{}'", what, path.string());
  auto fileSize = static_cast<int64_t>(size);
  if (offset < 0 || length < 0 || offset > fileSize || fileSize - offset < length) {
    return makeError("{}: external data file '{}' has {} bytes, reading {} at offset {} runs past its end", what,
                     path.string(), fileSize, length, offset);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("{}: cannot open external data file '{}'", what, path.string());
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (in.gcount() != length) return makeError("{}: reading external data file '{}' failed", what, path.string());
  return bytes;
}

}  // namespace smelt
