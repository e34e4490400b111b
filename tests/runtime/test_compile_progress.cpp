// CompileProgress (runtime/exec/compile_progress.h): silent for a compile that ends before its quiet
// period, speaking while one runs past it, and stopping at once when the compile ends.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "runtime/exec/compile_progress.h"

using namespace smelt;
using namespace std::chrono_literals;

TEST_CASE("compile progress: quiet for a short compile, a line per period for a long one") {
  {
    CompileProgress quick("@quick for cpu", 10s);
    quick.stage("lowering node 1 of 1");
    CHECK_FALSE(quick.spoke());
  }  // ends at once: the watcher does not wait out its 10 s
  CompileProgress slow("@slow for cpu", 20ms);
  slow.stage("building 3 kernels");
  slow.summary("3 kernels, 0 from the cache");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!slow.spoke() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  CHECK(slow.spoke());
}
