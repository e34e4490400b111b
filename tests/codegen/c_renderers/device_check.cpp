// nonCpuDevices and checkOnDevice (see device_check.h).
#include "tests/codegen/c_renderers/device_check.h"

#include "ir/interpreter.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

namespace smelt::testing {

std::vector<DeviceDescription> nonCpuDevices() {
  std::vector<DeviceDescription> found;
  for (const DeviceDescription& d : listDevices()) {
    if (d.kind != DeviceKind::kCpu) found.push_back(d);
  }
  if (found.empty()) MESSAGE("no device besides the CPU: nothing to run on");
  return found;
}

void checkOnDevice(const DeviceDescription& device, const std::vector<Graph>& graphs,
                   const std::vector<std::string>& names,
                   const std::function<void(const std::string&, const Executable&)>& report,
                   const std::vector<TensorMap>& given) {
  CAPTURE(device.id);
  // No fallback to the CPU: a device failure must fail the test, not pass on the CPU's results.
  auto exes = Executable::compileAll(graphs, {.device = device.id, .fallback = false});
  REQUIRE_MESSAGE(exes.ok(), (exes.ok() ? "" : exes.error().message()));
  uint64_t seed = testSeed();
  CAPTURE(seed);
  for (size_t g = 0; g < graphs.size(); ++g) {
    const std::string& what = names[g];
    CAPTURE(what);
    Executable& exe = *(*exes)[g];
    report(what, exe);
    TensorMap feeds = given.empty() ? randomFeeds(graphs[g], seed + g) : given[g];
    auto expected = interpret(exe.graph(), feeds);
    REQUIRE(expected.ok());
    auto actual = exe.run(feeds);
    REQUIRE_MESSAGE(actual.ok(), what, ": ", (actual.ok() ? "" : actual.error().message()));
    // The compiled graph's outputs end with its run-time checks' flags (passes/index_checks.h), which runs do
    // not return: compare the caller's outputs.
    REQUIRE(actual->size() == graphs[g].outputs().size());
    for (size_t i = 0; i < actual->size(); ++i) {
      std::string d = compareTensors((*actual)[i], (*expected)[i], backendTolerance((*expected)[i].dtype()));
      CHECK_MESSAGE(d.empty(), what, " output ", graphs[g].outputs()[i].name, ": ", d, "\n", exe.source());
    }
  }
}

}  // namespace smelt::testing
