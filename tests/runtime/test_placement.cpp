// Placement from measured crossovers: work counted by kind, crossovers read off measured points,
// tables stored per device and ignored when measured elsewhere, the automatic choice (small graphs
// on the CPU, large ones on the device) with its three overrides, and the tuner measuring PoCL.
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "runtime/device/device_list.h"
#include "runtime/exec/executable.h"
#include "runtime/placement/placement.h"
#include "runtime/placement/tuner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

using namespace smelt;

namespace {

Graph parsed(const std::string& text) {
  Expected<Graph> graph = parseGraph(text);
  REQUIRE_MESSAGE(graph.ok(), (graph.ok() ? "" : graph.error().message()));
  return std::move(*graph);
}

/// An elementwise chain over n elements: 3n elements of elementwise work.
std::string chain(int64_t n) {
  return fmt::format(R"(graph @chain(%x: f32[{0}], %y: f32[{0}]) {{
  %0 = mul(%x, %y) : f32[{0}]
  %1 = sigmoid(%0) : f32[{0}]
  %2 = sub(%1, %y) : f32[{0}]
  return r = %2
}}
)",
                     n);
}

/// Points the kernel cache's folder, and so the placement tables, at a folder of this test process
/// for the scope, and makes placement read the tables again on entry and exit.
class PlacementFolder {
 public:
  PlacementFolder() {
    const char* old = std::getenv("SMELT_CACHE_DIR");
    if (old) old_ = old;
    dir_ = fmt::format("{}/placement-test-{}", old ? old : std::filesystem::temp_directory_path().string(), getpid());
    std::filesystem::remove_all(dir_ + "/placement");
    setenv("SMELT_CACHE_DIR", dir_.c_str(), 1);
    forgetPlacementTables();
  }
  ~PlacementFolder() {
    if (old_) setenv("SMELT_CACHE_DIR", old_->c_str(), 1);
    else unsetenv("SMELT_CACHE_DIR");
    std::filesystem::remove_all(dir_ + "/placement");
    forgetPlacementTables();
  }

 private:
  std::string dir_;
  std::optional<std::string> old_;
};

PlacementTable tableFor(const DeviceDescription& d, int64_t elementwiseCrossover) {
  PlacementTable table{d.id, d.name, d.driver, "test", {}};
  table.kinds.push_back({WorkKind::kElementwise, {{1024, 1e-4, 2e-4}, {1 << 20, 2e-3, 1e-3}}, elementwiseCrossover});
  table.kinds.push_back({WorkKind::kMatmul, {{2048, 1e-5, 5e-5}}, std::nullopt});
  return table;
}

std::shared_ptr<Device> openClOrSkip() {
  Expected<std::shared_ptr<Device>> device = openDevice("opencl");
  if (!device) MESSAGE("no OpenCL device: " << device.error().message());
  return device ? *device : nullptr;
}

void checkAgainstReference(Executable& exe, const Graph& graph, uint64_t seed) {
  TensorMap feeds = testing::randomFeeds(graph, seed);
  Expected<std::vector<Tensor>> got = exe.run(feeds);
  REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
  Expected<std::vector<Tensor>> want = interpret(graph, feeds);
  REQUIRE(want.ok());
  for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
    double a = (*got)[0].getDouble(i), b = (*want)[0].getDouble(i);
    REQUIRE(std::abs(a - b) <= 1e-5 + 1e-4 * std::abs(b));
  }
}

}  // namespace

TEST_CASE("placement: work is counted by kind, products and convolutions in FLOPs") {
  Graph graph = parsed(R"(graph @g(%a: f32[8,16], %b: f32[16,4], %x: f32[2,3,6,6], %w: f32[5,3,3,3]) {
  %0 = matmul(%a, %b) : f32[8,4]
  %1 = relu(%0) : f32[8,4]
  %2 = reduce_sum(%1) {axes = [1]} : f32[8]
  %3 = conv2d(%x, %w) : f32[2,5,4,4]
  %4 = exp(%3) : f32[2,5,4,4]
  return r = %2, c = %4
}
)");
  GraphWork work = measureWork(graph);
  CHECK(work.of(WorkKind::kMatmul) == 2 * 8 * 4 * 16);
  CHECK(work.of(WorkKind::kConv) == 2 * (2 * 5 * 4 * 4) * 3 * 3 * 3);
  CHECK(work.of(WorkKind::kReduction) == 8 * 4);
  CHECK(work.of(WorkKind::kElementwise) == 8 * 4 + 2 * 5 * 4 * 4);
  for (WorkKind kind : kWorkKinds) CHECK(parseWorkKind(workKindName(kind)) == kind);
  CHECK_FALSE(parseWorkKind("gemv").has_value());
}

TEST_CASE("placement: the crossover is where the device starts winning for good") {
  std::vector<CrossoverPoint> points = {{1, 1, 3}, {10, 2, 1}, {100, 3, 4}, {1000, 9, 5}, {10000, 90, 20}};
  // The win at 10 is followed by a loss at 100: only 1000 on counts.
  CHECK(crossoverFrom(points) == 1000);
  points[2].deviceSeconds = 2;
  CHECK(crossoverFrom(points) == 10);
  points.back().deviceSeconds = 100;
  CHECK_FALSE(crossoverFrom(points).has_value());
  CHECK_FALSE(crossoverFrom({}).has_value());
}

TEST_CASE("placement: tables round-trip through JSON, and malformed ones are errors naming the field") {
  DeviceDescription d;
  d.kind = DeviceKind::kOpenCl;
  d.id = "opencl:0";
  d.name = "dev";
  d.driver = "drv 1.0";
  PlacementTable table = tableFor(d, 4096);
  Expected<PlacementTable> back = placementTableFromJson(placementTableToJson(table));
  REQUIRE(back.ok());
  CHECK(placementTableToJson(*back) == placementTableToJson(table));
  CHECK(back->crossoverOf(WorkKind::kElementwise) == 4096);
  CHECK_FALSE(back->crossoverOf(WorkKind::kMatmul).has_value());
  CHECK_FALSE(back->crossoverOf(WorkKind::kConv).has_value());
  CHECK(back->kinds[0].points[1].deviceSeconds == doctest::Approx(1e-3));

  Expected<PlacementTable> bad = placementTableFromJson(R"({"device": "opencl:0", "name": "x", "driver": "y"})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("'source'") != std::string::npos);
  bad = placementTableFromJson(R"({"device": "a", "name": "x", "driver": "y", "source": "s",
    "kinds": [{"kind": "gemv", "crossover": null, "points": []}]})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("gemv") != std::string::npos);
  CHECK_FALSE(placementTableFromJson("{not json").ok());

  PlacementFolder folder;
  REQUIRE(savePlacementTable(table, d).ok());
  Expected<std::optional<PlacementTable>> loaded = loadPlacementTable(d);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->crossoverOf(WorkKind::kElementwise) == 4096);
  // Measured with another driver: not trusted.
  d.driver = "drv 2.0";
  loaded = loadPlacementTable(d);
  REQUIRE(loaded.ok());
  CHECK_FALSE(loaded->has_value());
}

TEST_CASE("placement: the choice follows the tables, and GPUs start from built-in defaults") {
  DeviceDescription d;
  d.kind = DeviceKind::kOpenCl;
  d.id = "opencl:0";
  std::vector<PlacementTable> tables = {tableFor(d, 100000)};
  GraphWork small, large;
  small.of(WorkKind::kElementwise) = 3000;
  large.of(WorkKind::kElementwise) = 300000;
  large.of(WorkKind::kMatmul) = int64_t{1} << 40;  // the device never won at products: ignored
  PlacementDecision decision = choosePlacement(small, tables);
  CHECK(decision.deviceId == "cpu");
  CHECK(decision.reason.find("elementwise 3000 elements < crossover 1e+05 on opencl:0") != std::string::npos);
  decision = choosePlacement(large, tables);
  CHECK(decision.deviceId == "opencl:0");
  CHECK(decision.reason.find(">=") != std::string::npos);
  CHECK(choosePlacement(large, {}).deviceId == "cpu");

  // Two devices: the one the work exceeds by more wins.
  DeviceDescription gpu;
  gpu.kind = DeviceKind::kCuda;
  gpu.id = "cuda:0";
  std::optional<PlacementTable> defaults = defaultPlacementTable(gpu);
  REQUIRE(defaults.has_value());
  tables.push_back(*defaults);
  CHECK(choosePlacement(large, tables).deviceId == "cuda:0");
  CHECK_FALSE(defaultPlacementTable(d).has_value());
}

TEST_CASE("placement: small graphs run on the CPU and large ones on the device, unless overridden") {
  std::shared_ptr<Device> opencl = openClOrSkip();
  if (!opencl) return;
  PlacementFolder folder;
  const char* deviceEnv = std::getenv("SMELT_DEVICE");
  REQUIRE_MESSAGE(!(deviceEnv && *deviceEnv), "SMELT_DEVICE is set; this test needs the automatic choice");
  // As if `smelt tune` had found PoCL faster from 65,536 elements of elementwise work.
  REQUIRE(savePlacementTable(tableFor(opencl->description(), 65536), opencl->description()).ok());
  forgetPlacementTables();
  uint64_t seed = testing::testSeed();

  Graph small = parsed(chain(1000)), large = parsed(chain(40000));
  auto exe = Executable::compile(small, {.device = "auto"});
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == "cpu");
  checkAgainstReference(**exe, small, seed);
  exe = Executable::compile(large, {.device = "auto"});
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == opencl->id());
  checkAgainstReference(**exe, large, seed + 1);

  // The overrides: the executable's own option, the process-wide default, the environment; without
  // any, the CPU.
  exe = Executable::compile(small, {.device = "opencl"});
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == opencl->id());
  setDefaultDevice("auto");
  exe = Executable::compile(large);
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == opencl->id());
  setDefaultDevice("cpu");
  exe = Executable::compile(large);
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == "cpu");
  setDefaultDevice("");
  setenv("SMELT_DEVICE", "auto", 1);
  exe = Executable::compile(large);
  unsetenv("SMELT_DEVICE");
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == opencl->id());
  exe = Executable::compile(large);
  REQUIRE(exe.ok());
  CHECK((*exe)->deviceId() == "cpu");
  CHECK(resolveRequestedDevice("") == "cpu");
}

TEST_CASE("placement: the tuner's graphs parse and grow, and it measures PoCL against the CPU") {
  for (WorkKind kind : kWorkKinds) {
    for (bool quick : {false, true}) {
      std::vector<TuneGraph> graphs = tuneGraphs(kind, quick);
      REQUIRE(graphs.size() >= 3);
      for (size_t i = 0; i < graphs.size(); ++i) {
        REQUIRE_MESSAGE(graphs[i].amount > 0, graphs[i].text);
        if (i) CHECK(graphs[i].amount > graphs[i - 1].amount);
      }
    }
  }
  std::shared_ptr<Device> opencl = openClOrSkip();
  if (!opencl) return;
  TuneOptions options;
  options.quick = true;
  options.repeats = 2;
  options.kinds = {WorkKind::kElementwise, WorkKind::kMatmul};
  int lines = 0;
  options.progress = [&](std::string_view) { ++lines; };
  Expected<PlacementTable> table = tunePlacement(opencl, options);
  REQUIRE_MESSAGE(table.ok(), (table.ok() ? "" : table.error().message()));
  CHECK(lines == 6);
  CHECK(table->matches(opencl->description()));
  REQUIRE(table->kinds.size() == 2);
  for (const KindCrossover& k : table->kinds) {
    REQUIRE(k.points.size() == 3);
    for (const CrossoverPoint& p : k.points) CHECK((p.cpuSeconds > 0 && p.deviceSeconds > 0));
    CHECK(k.crossover == crossoverFrom(k.points));
  }
  Expected<std::shared_ptr<Device>> cpu = openDevice("cpu");
  REQUIRE(cpu.ok());
  CHECK_FALSE(tunePlacement(*cpu, options).ok());
}
