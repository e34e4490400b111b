// 64 threads compiling and running executables at once, on the CPU (LLVM JIT) and on PoCL, each
// checked against the reference interpreter: the kernel cache, the JIT, the program cache, the
// memory pools and the OpenCL queue are shared. scripts/test.sh also runs it built with
// ThreadSanitizer (SMELT_TSAN), which must report nothing.
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/device/device_list.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>
#include <vector>

using namespace smelt;

namespace {

/// A small graph whose shape depends on `variant` (four variants, so programs and kernels are both
/// shared and distinct across threads).
std::string graphText(int variant) {
  int n = 8 + 8 * variant;
  return fmt::format(R"(graph @t{0}(%x: f32[{1},16], %y: f32[16,{1}]) {{
  param %b: f32[{1}]
  %0 = matmul(%x, %y) : f32[{1},{1}]
  %1 = add(%0, %b) : f32[{1},{1}]
  %2 = sigmoid(%1) : f32[{1},{1}]
  %3 = reduce_sum(%2) {{axes = [1]}} : f32[{1}]
  return r = %3, s = %2
}}
)",
                     variant, n);
}

}  // namespace

TEST_CASE("threads: 64 threads compile and run executables at once, on every device") {
  // The threads take turns over the devices there are (the CPU, PoCL, a GPU where present).
  std::vector<std::string> devices;
  for (const auto& d : testing::everyDevice()) devices.push_back(d->id());
  if (devices.size() == 1) MESSAGE("only the CPU here");
  uint64_t seed = testing::testSeed();
  constexpr int kThreads = 64;
  std::atomic<int> failures{0}, runs{0}, onTheirDevice{0};
  std::mutex messagesMutex;
  std::vector<std::string> messages;
  auto fail = [&](std::string what) {
    ++failures;
    std::lock_guard lock(messagesMutex);
    messages.push_back(std::move(what));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto graph = parseGraph(graphText(t % 4));
      if (!graph) return fail(graph.error().message());
      const std::string& device = devices[static_cast<size_t>(t) % devices.size()];
      auto exe = Executable::compile(*graph, {.device = device});
      if (!exe) return fail(fmt::format("thread {}: {}", t, exe.error().message()));
      if ((*exe)->deviceId() == device) ++onTheirDevice;
      for (int run = 0; run < 3; ++run) {
        TensorMap feeds;
        for (const Value* v : graph->inputs()) feeds[v->name()] = testing::randomTensor(v->type(), seed + t * 10 + run);
        for (const Value* v : graph->parameters()) {
          feeds[v->name()] = testing::randomTensor(v->type(), seed + t * 10 + run + 5);
        }
        auto got = (*exe)->run(feeds);
        if (!got) return fail(fmt::format("thread {} on {}: {}", t, device, got.error().message()));
        auto want = interpret(*graph, feeds);
        if (!want) return fail(want.error().message());
        for (size_t o = 0; o < want->size(); ++o) {
          for (int64_t i = 0; i < (*want)[o].numel(); ++i) {
            double a = (*got)[o].getDouble(i), b = (*want)[o].getDouble(i);
            if (!(std::abs(a - b) <= 1e-5 + 1e-4 * std::abs(b))) {
              return fail(fmt::format("thread {} on {}: output {} element {}: {} vs {}", t, device, o, i, a, b));
            }
          }
        }
        ++runs;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& m : messages) MESSAGE(m);
  CHECK(failures == 0);
  CHECK(runs == kThreads * 3);
  CHECK(onTheirDevice == kThreads);
}
