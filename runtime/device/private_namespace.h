// Driver libraries opened in a private link-map namespace (dlmopen(LM_ID_NEWLM)): the OpenCL ICD loader
// with PoCL beside smelt's LLVM 16 JIT, and the HIP runtime, which brings its own LLVM. Such a namespace
// has its own libc, and three of its defaults crash a process that also uses the main libc; open()
// mends them once, enterThread() per thread:
// - its environ is the main one's array as it was when the namespace was made, and the main libc's
//   next setenv of a new name reallocates and frees that array (PoCL's getenv crashed in
//   clGetPlatformIDs; hipGetDeviceCount crashed in strlen after a test set SMELT_CACHE_DIR): it gets
//   a copy of its own, never freed, so what the library reads is fixed when it is opened;
// - its pthread_create does not tell the main libc that the process has threads, and the dynamic
//   linker, shared by both, allocates the library's threads' TLS with the main libc's malloc, which
//   skips its locks while it believes it runs one thread (resnet18's gradient on opencl corrupted the
//   heap): one thread is started first;
// - its per-thread ctype tables are set only in threads it started and the one that opened it (PoCL's
//   isspace() read a null table in clBuildProgram from a worker thread).
#pragma once

#include <initializer_list>
#include <string>

namespace smelt {

class PrivateNamespace {
 public:
  /// Opens the first of `sonames` that loads into a new namespace (RTLD_NOW | RTLD_LOCAL) and mends its
  /// libc. On failure handle() is null and errors() holds each name's dlerror(), separated by "; ".
  static PrivateNamespace open(std::initializer_list<const char*> sonames);

  /// The library's dlopen handle, or null. It stays open for the process: drivers do not survive dlclose.
  void* handle() const { return handle_; }
  const std::string& errors() const { return errors_; }
  /// Opens `soname` in the same namespace (a library the first one's plugins use), or null.
  void* openBeside(const char* soname) const;
  /// Sets up the calling thread's ctype tables for this namespace's libc, once per thread; call it before
  /// each call into the library from a thread it did not start.
  void enterThread() const;

 private:
  void* handle_ = nullptr;
  void (*ctypeInit_)() = nullptr;
  std::string errors_;
};

}  // namespace smelt
