// Driver libraries in a private link-map namespace (runtime/device/private_namespace.h) keep working
// after the process sets new environment variables, and from threads they did not start.
#include "runtime/device/device_list.h"
#include "runtime/device/private_namespace.h"
#include "runtime/hip/hip_device.h"

#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace smelt;

namespace {

/// Sets `count` new environment variables, so the main libc reallocates its environ array and frees the
/// old one, then fills freshly allocated blocks with 0xff so freed memory holds no stale pointers.
void growEnvironment(const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) setenv(fmt::format("{}_{}", prefix, i).c_str(), "1", 1);
  std::vector<std::unique_ptr<char[]>> scribbles;
  for (size_t size = 16; size <= (1 << 16); size *= 2) {
    for (int i = 0; i < 8; ++i) {
      scribbles.emplace_back(new char[size]);
      std::memset(scribbles.back().get(), 0xff, size);
    }
  }
}

void unsetEnvironment(const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) unsetenv(fmt::format("{}_{}", prefix, i).c_str());
}

}  // namespace

TEST_CASE("private namespaces: the library's getenv reads the environment as it was when it was opened") {
  setenv("SMELT_NAMESPACE_TEST_BEFORE", "before", 1);
  PrivateNamespace ns = PrivateNamespace::open({"libc.so.6"});
  REQUIRE_MESSAGE(ns.handle(), ns.errors());
  auto privateGetenv = reinterpret_cast<char* (*)(const char*)>(dlsym(ns.handle(), "getenv"));
  REQUIRE(static_cast<bool>(privateGetenv));
  REQUIRE(reinterpret_cast<void*>(privateGetenv) != reinterpret_cast<void*>(&getenv));  // its own libc

  growEnvironment("SMELT_NAMESPACE_TEST_GROW", 300);
  const char* before = privateGetenv("SMELT_NAMESPACE_TEST_BEFORE");
  REQUIRE(before);
  CHECK(std::string(before) == "before");
  CHECK(privateGetenv("SMELT_NAMESPACE_TEST_GROW_299") == nullptr);  // set after the library was opened
  unsetEnvironment("SMELT_NAMESPACE_TEST_GROW", 300);
  unsetenv("SMELT_NAMESPACE_TEST_BEFORE");
}

TEST_CASE("private namespaces: a thread the library did not start gets its ctype tables") {
  PrivateNamespace ns = PrivateNamespace::open({"libc.so.6"});
  REQUIRE_MESSAGE(ns.handle(), ns.errors());
  auto ctypeTable = reinterpret_cast<const unsigned short** (*)()>(dlsym(ns.handle(), "__ctype_b_loc"));
  REQUIRE(static_cast<bool>(ctypeTable));
  bool ready = false;
  std::thread([&] {
    ns.enterThread();
    ns.enterThread();  // once per thread; a second call does nothing
    ready = *ctypeTable() != nullptr;
  }).join();
  CHECK(ready);
}

TEST_CASE("private namespaces: a name that loads nowhere is an error naming each one tried") {
  PrivateNamespace ns = PrivateNamespace::open({"libsmelt-absent-a.so", "libsmelt-absent-b.so"});
  CHECK(ns.handle() == nullptr);
  CHECK(ns.openBeside("libc.so.6") == nullptr);
  CHECK_MESSAGE(ns.errors().find("libsmelt-absent-a.so") != std::string::npos, ns.errors());
  CHECK_MESSAGE(ns.errors().find("libsmelt-absent-b.so") != std::string::npos, ns.errors());
}

TEST_CASE("private namespaces: listing the devices again after new environment variables answers as before") {
  // HIP's runtime always loads in a namespace of its own, OpenCL's loader when LLVM is in the process:
  // hipGetDeviceCount crashed in strlen here, reading the environ array a setenv had freed.
  std::vector<DeviceProbe> first = probeDevices();
  Expected<int> hipCount = hipDeviceCount();
  growEnvironment("SMELT_NAMESPACE_TEST_DEVICES", 300);
  Expected<int> hipAgain = hipDeviceCount();
  CHECK(hipAgain.ok() == hipCount.ok());
  if (hipCount.ok() && hipAgain.ok()) CHECK(*hipAgain == *hipCount);
  std::vector<DeviceProbe> second = probeDevices();
  REQUIRE(second.size() == first.size());
  for (size_t i = 0; i < first.size(); ++i) CHECK(second[i].devices.size() == first[i].devices.size());
  unsetEnvironment("SMELT_NAMESPACE_TEST_DEVICES", 300);
}
