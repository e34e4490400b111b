#include "runtime/device/private_namespace.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace smelt {
namespace {

/// A copy of the main environment that lives for the process (held here too, so leak checkers see it).
char** copyOfEnvironment() {
  static std::vector<std::vector<std::string>> copies;  // one per namespace opened
  static std::vector<std::vector<char*>> arrays;
  std::vector<std::string>& strings = copies.emplace_back();
  for (char** e = environ; *e; ++e) strings.emplace_back(*e);
  std::vector<char*>& pointers = arrays.emplace_back();
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers.data();
}

}  // namespace

PrivateNamespace PrivateNamespace::open(std::initializer_list<const char*> sonames) {
  // Opening a library is rare and the mends touch process-wide state: one at a time.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::thread([] {}).join();  // the main libc locks its malloc from here on
  PrivateNamespace ns;
  for (const char* name : sonames) {
    ns.handle_ = dlmopen(LM_ID_NEWLM, name, RTLD_NOW | RTLD_LOCAL);
    if (ns.handle_) break;
    const char* why = dlerror();
    ns.errors_ += (ns.errors_.empty() ? "" : "; ") + std::string(why ? why : name);
  }
  if (!ns.handle_) return ns;
  Lmid_t namespaceId = 0;
  if (dlinfo(ns.handle_, RTLD_DI_LMID, &namespaceId) != 0) return ns;
  if (void* libc = dlmopen(namespaceId, "libc.so.6", RTLD_NOW | RTLD_NOLOAD)) {
    ns.ctypeInit_ = reinterpret_cast<void (*)()>(dlsym(libc, "__ctype_init"));
    if (auto* privateEnviron = static_cast<char***>(dlsym(libc, "environ"))) *privateEnviron = copyOfEnvironment();
  }
  return ns;
}

void* PrivateNamespace::openBeside(const char* soname) const {
  Lmid_t namespaceId = 0;
  if (!handle_ || dlinfo(handle_, RTLD_DI_LMID, &namespaceId) != 0) return nullptr;
  return dlmopen(namespaceId, soname, RTLD_NOW | RTLD_LOCAL);
}

void PrivateNamespace::enterThread() const {
  if (!ctypeInit_) return;
  thread_local std::vector<void (*)()> entered;  // the namespaces this thread has set up
  if (std::find(entered.begin(), entered.end(), ctypeInit_) != entered.end()) return;
  entered.push_back(ctypeInit_);
  ctypeInit_();
}

}  // namespace smelt
