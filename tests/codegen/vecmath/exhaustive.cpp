// smelt_vecmath_exhaustive: every f32 input of the unary vecmath functions against f64 libm (not a ctest).
//
// Usage: smelt_vecmath_exhaustive [function|all] [stride] [threads]
//        smelt_vecmath_exhaustive pow [millions] [threads]
// Every stride-th f32 input of one unary function or all of them; about 2.5 minutes per function on
// one core with stride 1. pow has no exhaustive domain: it checks 5 * millions million sampled pairs.
// The unit tests sample the same space sparsely; run this after changing an algorithm or coefficients
// (docs/codegen.md quotes its output).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/codegen/vecmath/ulp_check.h"

using namespace smelt::vecmath::test;

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "all";
  uint64_t stride = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  unsigned threads = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 2;
  if (std::strcmp(which, "pow") == 0) {
    // pow has no exhaustive domain: `stride` millions of 5-pair samples, one seed per thread.
    std::vector<MaxErr> acc(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { samplePow(stride * 1'000'000 / threads, 0x243f6a8885a308d3u + t, acc[t]); });
    for (auto& th : pool) th.join();
    for (unsigned t = 1; t < threads; ++t) acc[0].merge(acc[t]);
    std::printf("%s\n", acc[0].describe("pow").c_str());
    std::fflush(stdout);
  }
  for (const Unary& f : kUnary) {
    if (std::strcmp(which, "all") != 0 && std::strcmp(which, f.name) != 0) continue;
    std::vector<MaxErr> inRange(threads), beyond(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (uint64_t bits = t * stride; bits < (uint64_t{1} << 32); bits += stride * threads) {
          float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
          Err err = ulpError(f.fast(x), f.ref(x));
          // Trig results beyond kTrigMaxArg are out of the supported range: tallied apart.
          bool out = isTrig(f) && std::fabs(x) > smelt::vecmath::kTrigMaxArg && !std::isinf(x);
          (out ? beyond : inRange)[t].add(err, x);
        }
      });
    }
    for (auto& th : pool) th.join();
    for (unsigned t = 1; t < threads; ++t) {
      inRange[0].merge(inRange[t]);
      beyond[0].merge(beyond[t]);
    }
    std::printf("%s\n", inRange[0].describe(f.name).c_str());
    if (beyond[0].count) std::printf("  beyond kTrigMaxArg: %s\n", beyond[0].describe(f.name).c_str());
    std::fflush(stdout);
  }
  return 0;
}
