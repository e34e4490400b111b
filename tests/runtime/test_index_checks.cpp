// Index checks (passes/index_checks.h): on every device, a gather or scatter (add, mul, max, min) fed an
// index outside [-dim, dim), or a check_range a value outside [lo, hi), is an error naming the node, as in the
// reference interpreter, for host and device-resident runs alike; in-range runs before and after match the
// reference; and with CompileOptions::checkIndices off the kernels clamp as they did.
#include <doctest/doctest.h>

#include <random>

#include "ir/interpreter.h"
#include "passes/index_checks.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

constexpr const char* kGatherScatter = R"(graph @t(%x: f32[3,4], %i: i64[2,2], %u: f32[3,2,2]) {
  %0 = gather(%x, %i) {axis = 1} : f32[3,2,2]
  %1 = scatter_add(%x, %i, %u) {axis = 1} : f32[3,4]
  return g = %0, s = %1
}
)";

/// Random feeds whose indices lie in [-4, 4), negative ones included.
TensorMap inRangeFeeds(const Graph& graph, uint64_t seed) {
  TensorMap feeds = testing::randomFeeds(graph, seed);
  std::mt19937_64 rng(seed);
  Tensor indices(TensorType{DType::i64, {2, 2}});
  for (int64_t k = 0; k < 4; ++k) indices.setInt(k, static_cast<int64_t>(rng() % 8) - 4);
  feeds.insert_or_assign("i", indices);
  return feeds;
}

void checkMatchesReference(const Graph& graph, const TensorMap& feeds, const std::vector<Tensor>& outputs) {
  auto expected = interpret(graph, feeds);
  REQUIRE(expected.ok());
  REQUIRE(outputs.size() == expected->size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    CHECK_MESSAGE(testing::compareTensors(outputs[o], (*expected)[o], 1e-6).empty(), "output ", o);
  }
}

}  // namespace

TEST_CASE("index checks: one flag per distinct indices and axis length, none for constants in range") {
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[3,4], %i: i64[2,2], %u: f32[3,2,2]) {
  %0 = gather(%x, %i) {axis = 1} : f32[3,2,2]
  %1 = scatter_add(%x, %i, %u) {axis = 1} : f32[3,4]
  %c = constant() {value = dense<i64[2]> [3, -4]} : i64[2]
  %2 = gather(%x, %c) {axis = 1} : f32[3,2]
  %d = constant() {value = dense<i64[1]> [4]} : i64[1]
  %3 = gather(%x, %d) {axis = 1} : f32[3,1]
  %4 = gather(%x, %i) : f32[2,2,4]
  return g = %0, s = %1, c = %2, d = %3, rows = %4
}
)");
  auto checks = addIndexChecks(g);
  REQUIRE(checks.ok());
  // %i along axis 1 (the gather and its scatter_add share one), %d (a constant out of range), %i along
  // axis 0 (length 3).
  REQUIRE(checks->size() == 3);
  CHECK((*checks)[0].label.starts_with("gather %0"));
  CHECK((*checks)[0].lo == -4);
  CHECK((*checks)[0].hi == 4);
  CHECK_MESSAGE((*checks)[1].label.starts_with("gather %5"), (*checks)[1].label);  // as printed: %c is %2
  CHECK((*checks)[2].hi == 3);
  REQUIRE(g.outputs().size() == 8);
  CHECK(g.outputs()[5].name == "__index_check_0");
  CHECK(g.outputs()[7].value->type() == (TensorType{DType::i32, {}}));
}

TEST_CASE("index checks: an index out of range is an error naming the node on every device, host and device runs") {
  Graph graph = testing::parseOrFail(kGatherScatter);
  const uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(graph, {.device = device->id(), .fallback = false});
    REQUIRE_MESSAGE(exe.ok(), exe.error().message());
    std::vector<Tensor> outputs;
    TensorMap good = inRangeFeeds(graph, seed);
    REQUIRE((*exe)->run(good, outputs).ok());
    checkMatchesReference(graph, good, outputs);

    for (int64_t bad : {4, -5, 1000}) {
      CAPTURE(bad);
      TensorMap feeds = inRangeFeeds(graph, seed + 1);
      feeds.at("i").setInt(3, bad);
      CHECK_FALSE(interpret(graph, feeds).ok());  // the reference's error
      Status s = (*exe)->run(feeds, outputs);
      REQUIRE_FALSE(s.ok());
      CHECK_MESSAGE(s.error().message().find("gather %0") != std::string::npos, s.error().message());
      // The check's words, or the reference's where the node runs on it (a CPU without LLVM).
      CHECK_MESSAGE(s.error().message().find("out of range") != std::string::npos, s.error().message());
      CHECK_MESSAGE(s.error().message().find("for axis 1 of size 4") != std::string::npos, s.error().message());
    }
    // The flag is computed afresh each run: a good run after a bad one passes.
    TensorMap again = inRangeFeeds(graph, seed + 2);
    REQUIRE((*exe)->run(again, outputs).ok());
    CHECK(outputs.size() == 2);
    checkMatchesReference(graph, again, outputs);

    // Device-resident feeds and outputs.
    DeviceTensorMap onDevice;
    TensorMap bad = inRangeFeeds(graph, seed + 3);
    bad.at("i").setInt(0, -7);
    for (const auto& [name, t] : bad) {
      auto d = DeviceTensor::fromHost(device, t);
      REQUIRE(d.ok());
      onDevice.insert_or_assign(name, *d);
    }
    std::vector<DeviceTensor> deviceOutputs;
    Status s = (*exe)->run(onDevice, deviceOutputs);
    REQUIRE_FALSE(s.ok());
    CHECK_MESSAGE(s.error().message().find("gather %0") != std::string::npos, s.error().message());
    for (const auto& [name, t] : again) {
      auto d = DeviceTensor::fromHost(device, t);
      REQUIRE(d.ok());
      onDevice.insert_or_assign(name, *d);
    }
    REQUIRE((*exe)->run(onDevice, deviceOutputs).ok());
    REQUIRE(deviceOutputs.size() == 2);
    std::vector<Tensor> back;
    for (const DeviceTensor& d : deviceOutputs) {
      auto h = d.toHost();
      REQUIRE(h.ok());
      back.push_back(*h);
    }
    checkMatchesReference(graph, again, back);
  }
}

TEST_CASE("index checks: with checkIndices off, out-of-range indices clamp (gather) and drop (scatter_add)") {
  Graph graph = testing::parseOrFail(kGatherScatter);
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(graph, {.device = device->id(), .checkIndices = false, .fallback = false});
    REQUIRE(exe.ok());
    if ((*exe)->report().interpreted > 0) continue;  // the reference interpreter always checks
    TensorMap feeds = inRangeFeeds(graph, testing::testSeed());
    feeds.at("i").setInt(3, 9);
    std::vector<Tensor> outputs;
    REQUIRE((*exe)->run(feeds, outputs).ok());
    REQUIRE(outputs.size() == 2);
    // g[r, 1, 1] read column 3, the clamped position of 9.
    for (int64_t r = 0; r < 3; ++r) {
      CHECK(outputs[0].getDouble(r * 4 + 3) == feeds.at("x").getDouble(r * 4 + 3));
    }
  }
}

namespace {

/// Runs `graph` on every device with feeds from `feedsFor(seed, bad)`: a good run matches the reference, a bad
/// one is an error holding every one of `expected` (host and device-resident runs), and a good run after it passes.
template <typename Feeds>
void checkEveryDevice(const Graph& graph, Feeds feedsFor, const std::vector<std::string>& expected) {
  const uint64_t seed = testing::testSeed();
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(graph, {.device = device->id(), .fallback = false});
    REQUIRE_MESSAGE(exe.ok(), exe.error().message());
    std::vector<Tensor> outputs;
    TensorMap good = feedsFor(seed, false);
    REQUIRE((*exe)->run(good, outputs).ok());
    checkMatchesReference(graph, good, outputs);

    TensorMap bad = feedsFor(seed + 1, true);
    CHECK_FALSE(interpret(graph, bad).ok());
    Status s = (*exe)->run(bad, outputs);
    REQUIRE_FALSE(s.ok());
    for (const std::string& words : expected) CHECK_MESSAGE(s.error().message().find(words) != std::string::npos, s.error().message());

    DeviceTensorMap onDevice;
    for (const auto& [name, t] : bad) {
      auto d = DeviceTensor::fromHost(device, t);
      REQUIRE(d.ok());
      onDevice.insert_or_assign(name, *d);
    }
    std::vector<DeviceTensor> deviceOutputs;
    s = (*exe)->run(onDevice, deviceOutputs);
    REQUIRE_FALSE(s.ok());
    for (const std::string& words : expected) CHECK_MESSAGE(s.error().message().find(words) != std::string::npos, s.error().message());

    TensorMap again = feedsFor(seed + 2, false);
    REQUIRE((*exe)->run(again, outputs).ok());
    checkMatchesReference(graph, again, outputs);
  }
}

}  // namespace

TEST_CASE("index checks: scatter_reduce's indices are checked like scatter_add's, on every device") {
  Graph graph = testing::parseOrFail(R"(graph @t(%x: f32[3,4], %i: i32[2,2], %u: f32[3,2,2]) {
  %0 = scatter_reduce(%x, %i, %u) {reduction = "max", axis = 1} : f32[3,4]
  %1 = scatter_reduce(%x, %i, %u) {reduction = "mul", axis = 1} : f32[3,4]
  return mx = %0, mul = %1
}
)");
  checkEveryDevice(
      graph,
      [&](uint64_t seed, bool bad) {
        TensorMap feeds = testing::randomFeeds(graph, seed);
        std::mt19937_64 rng(seed);
        Tensor indices(TensorType{DType::i32, {2, 2}});
        for (int64_t k = 0; k < 4; ++k) indices.setInt(k, static_cast<int64_t>(rng() % 8) - 4);
        if (bad) indices.setInt(2, 4);
        feeds.insert_or_assign("i", indices);
        return feeds;
      },
      {"scatter_reduce %0", "out of range [-4, 4) for axis 1 of size 4"});
}

TEST_CASE("index checks: a check_range's values are checked on every device, and the node costs nothing") {
  Graph graph = testing::parseOrFail(R"(graph @t(%labels: u8[6], %x: f32[6]) {
  %0 = check_range(%labels) {lo = 0, hi = 5, what = "labels of 5 classes"} : u8[6]
  %1 = cast(%0) {to = "f32"} : f32[6]
  %2 = mul(%1, %x) : f32[6]
  return r = %2
}
)");
  Graph compiled = graph.clone();
  auto checks = addIndexChecks(compiled);
  REQUIRE(checks.ok());
  REQUIRE(checks->size() == 1);
  CHECK((*checks)[0].label.starts_with("check_range %0"));
  for (const auto& node : compiled.nodes()) CHECK(node->opName() != "check_range");  // replaced by its operand

  checkEveryDevice(
      graph,
      [&](uint64_t seed, bool bad) {
        TensorMap feeds = testing::randomFeeds(graph, seed);
        Tensor labels(TensorType{DType::u8, {6}});
        for (int64_t k = 0; k < 6; ++k) labels.setInt(k, static_cast<int64_t>((seed + k) % 5));
        if (bad) labels.setInt(4, 5);
        feeds.insert_or_assign("labels", labels);
        return feeds;
      },
      {"check_range %0", "a value is outside [0, 5) (labels of 5 classes)"});
}
