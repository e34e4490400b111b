// The cache folder: its default location, creation with mode 0700 and the ownership/mode check.
#include "codegen/cache/cache_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace smelt {

namespace {

std::string envOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

}  // namespace

std::string defaultCacheDir() {
  if (std::string dir = envOrEmpty("SMELT_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (std::string xdg = envOrEmpty("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return xdg + "/smelt";
  }
  std::string home = envOrEmpty("HOME");
  if (home.empty()) {
    if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (home.empty()) return "";
  return home + "/.cache/smelt";
}

Status createPrivateDir(const std::string& dir) {
  if (dir.empty()) return makeError("empty cache directory name");
  // Walk the path from the root down, creating what is missing; mkdir's EEXIST also covers another
  // thread or process creating the same folder at the same time.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) == 0) {
      // The umask may clear bits of 0700 (a umask of 0200 would leave 0500 and lock us out of our
      // own folder): set the mode explicitly.
      if (chmod(prefix.c_str(), 0700) != 0) {
        return makeError("cannot set mode 0700 on {}: {}", prefix, std::strerror(errno));
      }
    } else if (errno != EEXIST) {
      return makeError("cannot create {}: {}", prefix, std::strerror(errno));
    }
  }
  return Status::success();
}

Status checkPrivateDir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return makeError("cannot stat {}: {}", dir, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return makeError("{} is not a directory", dir);
  if (st.st_uid != geteuid()) {
    return makeError("{} is owned by uid {}, not by this user (uid {})", dir, st.st_uid, geteuid());
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return makeError("{} has mode {:04o}, writable by group or others (chmod 700 it)", dir,
                     st.st_mode & 07777);
  }
  return Status::success();
}

}  // namespace smelt
