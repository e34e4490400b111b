// Where the kernel cache lives and whether that folder is safe: cache entries are code that will
// run, so the folder must be ours and closed to everyone else.
#pragma once

#include "ir/support/expected.h"

#include <string>

namespace smelt {

/// $SMELT_CACHE_DIR, else $XDG_CACHE_HOME/smelt (an absolute XDG_CACHE_HOME only, as the XDG spec
/// says), else $HOME/.cache/smelt (the passwd entry's home when HOME is unset). Empty when no home
/// can be found, which leaves the cache in memory only.
std::string defaultCacheDir();

/// Creates `dir` and any missing parents with mode 0700 (existing ones are left as they are).
Status createPrivateDir(const std::string& dir);

/// Ok when `dir` is a directory owned by the effective user and not writable by group or others;
/// otherwise says what is wrong ("owned by uid 1001", "mode 0777 is writable by group or others").
Status checkPrivateDir(const std::string& dir);

}  // namespace smelt
