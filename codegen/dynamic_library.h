// A shared library opened at run time (dlopen) with typed symbol lookup. The GPU compilers and
// drivers (NVRTC, libcuda, HIPRTC) are loaded this way so smelt starts on machines without them.
#pragma once

#include "ir/support/expected.h"

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace smelt {

/// An open dlopen handle, closed on destruction unless leak()ed. Move-only.
class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  DynamicLibrary(DynamicLibrary&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), name_(std::move(other.name_)) {}
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, nullptr);
      name_ = std::move(other.name_);
    }
    return *this;
  }
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary() { close(); }

  /// Opens the first of `names` (sonames or paths) that loads, RTLD_NOW | RTLD_LOCAL so its
  /// symbols cannot clash with another copy of the same library. On failure the error holds
  /// every dlerror() line, one per name tried, so the user sees what is missing.
  static Expected<DynamicLibrary> openFirst(std::initializer_list<std::string> names) {
    return openFirst(std::vector<std::string>(names));
  }
  static Expected<DynamicLibrary> openFirst(const std::vector<std::string>& names) {
    std::string errors;
    for (const std::string& name : names) {
      if (name.empty()) continue;
      if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        DynamicLibrary lib;
        lib.handle_ = handle;
        lib.name_ = name;
        return lib;
      }
      const char* why = dlerror();
      if (!errors.empty()) errors += "; ";
      errors += why ? why : name + ": dlopen failed";
    }
    return Error(errors.empty() ? std::string("no library name given") : errors);
  }

  /// The function `symbol` typed as `Fn` (a function type), or an error naming the library.
  template <typename Fn>
  Expected<Fn*> function(const char* symbol) const {
    dlerror();  // clear a stale error so a null symbol is diagnosed correctly
    void* address = handle_ ? dlsym(handle_, symbol) : nullptr;
    if (!address) return makeError("{}: symbol {} not found", name_, symbol);
    return reinterpret_cast<Fn*>(address);
  }

  /// `slot` = the function `symbol` (its type from the slot's), or an error naming the library: a
  /// loader binds a table of entry points with one call each.
  template <typename Fn>
  Status bind(Fn*& slot, const char* symbol) const {
    SMELT_TRY(slot, function<Fn>(symbol));
    return Status::success();
  }

  /// The name it was opened with ("libnvrtc.so.13").
  const std::string& name() const { return name_; }
  bool isOpen() const { return handle_ != nullptr; }

  /// Keeps the library loaded for the life of the process. GPU drivers and compilers do not
  /// survive dlclose well (atexit handlers, live contexts), so process-wide loaders use this.
  void leak() { handle_ = nullptr; }

 private:
  void close() {
    if (handle_) dlclose(handle_);
    handle_ = nullptr;
  }

  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace smelt
