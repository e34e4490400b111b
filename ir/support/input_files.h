// Reading untrusted input files: whole files with a size cap, and byte ranges of files that must lie
// inside a given folder (external tensor data beside a model or IR text).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ir/support/expected.h"

namespace smelt {

/// The largest input file read whole (64 GiB): past it the file is refused before any allocation.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{1} << 36;

/// The bytes of `path`, which must be a regular file of at most `maxBytes` bytes. /dev/zero, FIFOs,
/// sockets and folders are refused (they would be read forever, block, or fail obscurely). `kind` names
/// what the file should hold ("an .npy array") for the error.
Expected<std::string> readInputFile(const std::string& path, std::string_view kind,
                                    uint64_t maxBytes = kMaxInputFileBytes);

/// `relative` resolved against `folder`, checked to stay inside it after every symbolic link is followed
/// (a link inside the folder must not reach a file outside it): no absolute paths, no "..", a regular
/// file. `what` prefixes the error (the tensor's name).
Expected<std::filesystem::path> resolveInsideFolder(const std::string& folder, const std::string& relative,
                                                    std::string_view what);

/// `length` bytes of the file at `path` from `offset`; an error naming `what` when the file is shorter.
Expected<std::string> readFileRange(const std::filesystem::path& path, int64_t offset, int64_t length,
                                    std::string_view what);

}  // namespace smelt
