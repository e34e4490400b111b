// Views in the memory plan (passes/plan_memory.h): a contiguous concat whose operands were written in its place and
// a contiguous slice read where it lies run nothing, on every device, and the results are the reference's bit for
// bit (exact ops only); a gradient bucket's shape (flattened products concatenated, cut back after an op in place)
// and an LSTM-like split of one product into gates.
#include <doctest/doctest.h>

#include "ir/interpreter.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

void checkOnEveryDevice(const char* text) {
  Graph graph = testing::parseOrFail(text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto want = interpret(graph, feeds);
  REQUIRE_MESSAGE(want.ok(), (want.ok() ? "" : want.error().message()));
  for (const auto& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(graph, {.device = device->id(), .fallback = false});
    REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
    for (int run = 0; run < 2; ++run) {
      auto got = (*exe)->run(feeds);
      REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
      for (size_t i = 0; i < want->size(); ++i) {
        CAPTURE(graph.outputs()[i].name);
        std::string diff = testing::compareTensors((*got)[i], (*want)[i], testing::backendTolerance(DType::f32));
        CHECK_MESSAGE(diff.empty(), diff);
      }
    }
  }
}

}  // namespace

TEST_CASE("views: a bucket of flattened products, reduced in place and cut back, matches the reference") {
  checkOnEveryDevice(R"(graph @bucket(%x: f32[16,32], %w: f32[32,48], %v: f32[48,16], %b: f32[16]) {
  %0 = matmul(%x, %w) : f32[16,48]
  %1 = matmul(%0, %v) : f32[16,16]
  %2 = reshape(%0) {shape = [768]} : f32[768]
  %3 = reshape(%1) {shape = [256]} : f32[256]
  %4 = neg(%b) : f32[16]
  %5 = concat(%2, %3, %4) {axis = 0} : f32[1040]
  %6 = mul(%5, %5) : f32[1040]
  %7 = slice(%6) {starts = [0], ends = [768]} : f32[768]
  %8 = slice(%6) {starts = [768], ends = [1024]} : f32[256]
  %9 = slice(%6) {starts = [1024], ends = [1040]} : f32[16]
  %10 = reshape(%7) {shape = [16, 48]} : f32[16,48]
  %11 = add(%10, %0) : f32[16,48]
  %12 = reduce_sum(%8) : f32[]
  %13 = add(%9, %b) : f32[16]
  return a = %11, s = %12, c = %13
})");
}

TEST_CASE("views: one product split into gates along its rows matches the reference") {
  checkOnEveryDevice(R"(graph @gates(%x: f32[4,32], %w: f32[32,64]) {
  %0 = matmul(%x, %w) : f32[4,64]
  %1 = reshape(%0) {shape = [4, 4, 16]} : f32[4,4,16]
  %2 = slice(%1) {starts = [0], ends = [1], axes = [0]} : f32[1,4,16]
  %3 = slice(%1) {starts = [1, 2], ends = [2, 4], axes = [0, 1]} : f32[1,2,16]
  %4 = sigmoid(%2) : f32[1,4,16]
  %5 = tanh(%3) : f32[1,2,16]
  return i = %4, g = %5
})");
}
