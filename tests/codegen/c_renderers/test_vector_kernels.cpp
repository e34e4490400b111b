// Vectorized kernels (codegen/vectorize.h) on every device but the CPU (PoCL here; CUDA on a GPU host,
// scripts/gpu_check.sh): flat elementwise graphs whose element counts leave a partial vector at the
// end, in f32, f16, bf16, i32 and bool, with a broadcast operand read at another offset, against the
// reference interpreter on fresh random inputs. The edge-value semantics of every op and cast in
// vectorized form are test_opencl_semantics.cpp's.
#include "tests/codegen/c_renderers/device_check.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

Graph flatChain(const std::string& t, int64_t n) {
  return testing::parseOrFail(fmt::format(R"(graph @chain(%x: {0}[{1}], %y: {0}[{1}], %s: {0}[1]) {{
  %0 = mul(%x, %y) : {0}[{1}]
  %1 = add(%0, %s) : {0}[{1}]
  %2 = neg(%1) : {0}[{1}]
  %3 = max(%1, %2) : {0}[{1}]
  %4 = sub(%3, %x) : {0}[{1}]
  return out = %4, abs = %3
}})",
                                          t, n));
}

Graph castsAndMasks(int64_t n) {
  return testing::parseOrFail(fmt::format(R"(graph @masks(%x: f32[{0}], %h: f16[{0}], %i: i32[{0}]) {{
  %0 = cast(%h) {{to = "f32"}} : f32[{0}]
  %1 = gt(%x, %0) : bool[{0}]
  %2 = where(%1, %x, %0) : f32[{0}]
  %3 = cast(%2) {{to = "bf16"}} : bf16[{0}]
  %4 = cast(%i) {{to = "f32"}} : f32[{0}]
  %5 = add(%2, %4) : f32[{0}]
  %6 = cast(%5) {{to = "f16"}} : f16[{0}]
  return mask = %1, low = %3, sum = %6
}})",
                                          n));
}

}  // namespace

TEST_CASE("vector kernels on devices: flat elementwise graphs with partial vectors, in several dtypes") {
  for (const DeviceDescription& device : testing::nonCpuDevices()) {
    for (int64_t n : {int64_t{65536}, int64_t{65539}}) {
      std::vector<Graph> graphs;
      std::vector<std::string> names;
      for (std::string t : {"f32", "f16", "bf16", "i32"}) {
        graphs.push_back(flatChain(t, n));
        names.push_back(fmt::format("chain in {} of {}", t, n));
      }
      graphs.push_back(castsAndMasks(n));
      names.push_back(fmt::format("casts and masks of {}", n));
      testing::checkOnDevice(device, graphs, names, [&](const std::string& what, const Executable& exe) {
        CHECK_MESSAGE(exe.report().vectorKernels >= 1, what, ": ", exe.report().vectorKernels, " vector kernels");
      });
    }
  }
}
