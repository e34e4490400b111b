// A graph with a symbolic batch dimension compiles once per batch size its runs bring, on every
// device, and each run equals the reference on the static graph of that size; a size seen before
// compiles nothing, and a bad one is an error naming the input and the dimension.
#include "ir/dims.h"
#include "ir/interpreter.h"
#include "runtime/device/device_list.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

namespace {

constexpr const char* kClassifier = R"(graph @classifier(%x: f32[N,6], %t: f32[N,3]) {
  dim N in [1, 64]
  param %w: f32[6,3] = [0.5, -1, 0.25, 1, 2, -0.5, 0.75, 1.5, -2, 1, 0.5, 0.25, -0.3, 0.8, 1.1, -0.9, 0.4, 0.6]
  param %b: f32[3] = [0.1, -0.2, 0.3]
  %0 = matmul(%x, %w) : f32[N,3]
  %1 = add(%0, %b) : f32[N,3]
  %2 = tanh(%1) : f32[N,3]
  %3 = log_softmax(%2) {axis = 1} : f32[N,3]
  %4 = mul(%3, %t) : f32[N,3]
  %5 = reduce_sum(%4) {axes = [1]} : f32[N]
  %6 = neg(%5) : f32[N]
  %7 = reduce_mean(%6) : f32[]
  return loss = %7, logits = %1
}
)";

TensorMap feedsOf(int64_t n, uint64_t seed) {
  return {{"x", testing::randomTensor({DType::f32, {n, 6}}, seed)},
          {"t", testing::randomTensor({DType::f32, {n, 3}}, seed + 1)}};
}

}  // namespace

TEST_CASE("symbolic executables: one graph, every batch size in its range, each compiled once, on every device") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    CHECK((*exe)->specializations() == 0);
    CHECK((*exe)->deviceId() == device->id());
    int run = 0;
    for (int64_t n : {1, 7, 33, 7, 64, 1}) {
      CAPTURE(n);
      TensorMap feeds = feedsOf(n, testing::testSeed() + 10 * static_cast<uint64_t>(run++));
      auto out = (*exe)->run(feeds);
      REQUIRE_MESSAGE(out.ok(), out.error().message());
      auto bound = bindDims(g, {{"N", n}});
      REQUIRE(bound.ok());
      auto want = interpret(*bound, feeds);
      REQUIRE(want.ok());
      REQUIRE(out->size() == want->size());
      for (size_t i = 0; i < want->size(); ++i) {
        testing::checkClose((*out)[i], (*want)[i], testing::backendTolerance(DType::f32));
      }
      CHECK((*exe)->graph().inputs()[0]->type().shape[0] == n);
    }
    CHECK((*exe)->specializations() == 4);  // 1, 7, 33, 64
    // Outside the range, or a static extent that differs: errors naming the input and the dimension.
    auto tooMany = (*exe)->run(feedsOf(65, 1));
    REQUIRE(!tooMany.ok());
    CHECK_MESSAGE(tooMany.error().message().find("N = 65 is outside its range [1, 64]") != std::string::npos,
                  tooMany.error().message());
    TensorMap mismatched = feedsOf(4, 2);
    mismatched["t"] = testing::randomTensor({DType::f32, {5, 3}}, 3);
    auto disagree = (*exe)->run(mismatched);
    REQUIRE(!disagree.ok());
    CHECK_MESSAGE(disagree.error().message().find("input 't' dimension #0 is N = 5") != std::string::npos,
                  disagree.error().message());
    TensorMap wrongWidth = feedsOf(4, 4);
    wrongWidth["x"] = testing::randomTensor({DType::f32, {4, 5}}, 5);
    CHECK(!(*exe)->run(wrongWidth).ok());
    CHECK((*exe)->specializations() == 4);
  }
}

TEST_CASE("symbolic executables: device-resident runs bind the batch from the device tensors") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    for (int64_t n : {5, 12}) {
      TensorMap host = feedsOf(n, testing::testSeed() + static_cast<uint64_t>(n));
      DeviceTensorMap feeds;
      for (const auto& [name, t] : host) {
        auto d = DeviceTensor::fromHost(device, t);
        REQUIRE(d.ok());
        feeds.emplace(name, std::move(*d));
      }
      std::vector<DeviceTensor> out;
      Status ran = (*exe)->run(feeds, out);
      REQUIRE_MESSAGE(ran.ok(), ran.error().message());
      auto want = interpret(g, host);
      REQUIRE(want.ok());
      for (size_t i = 0; i < out.size(); ++i) {
        auto fetched = out[i].toHost();
        REQUIRE(fetched.ok());
        testing::checkClose(*fetched, (*want)[i], testing::backendTolerance(DType::f32));
      }
    }
    CHECK((*exe)->specializations() == 2);
  }
}
