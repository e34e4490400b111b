// Collectives in an executable (ir/ops/collective.cpp): the CPU runs them over its own buffers (the started
// all-reduce summing the bucket in place), and must give what the interpreter gives, including where the started
// value has other readers than its wait (then in place would show them a sum in the making). A fake group of two
// ranks whose peer holds each value plus one: a sum is 2x + 1, so sum, mean and "not reduced yet" all differ.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/collective.h"
#include "ir/interpreter.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

class PeerPlusOne final : public CollectiveGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status allReduceSum(Tensor& tensor) override {
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.setDouble(i, 2 * tensor.getDouble(i) + 1);
    ++sums;
    return Status::success();
  }
  Status broadcast(Tensor&, int) override { return Status::success(); }
  int sums = 0;
};

/// Installs the fake group for one test case.
struct WithGroup {
  std::shared_ptr<PeerPlusOne> group = std::make_shared<PeerPlusOne>();
  WithGroup() { setCollectiveGroup(group); }
  ~WithGroup() { setCollectiveGroup(nullptr); }
};

void checkAgainstInterpreter(const char* text, int expectedSums) {
  WithGroup installed;
  Graph graph = testing::parseOrFail(text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto want = interpret(graph, feeds);
  REQUIRE_MESSAGE(want.ok(), (want.ok() ? "" : want.error().message()));
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  for (int run = 0; run < 2; ++run) {
    installed.group->sums = 0;
    auto got = (*exe)->run(feeds);
    REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
    CHECK(installed.group->sums == expectedSums);
    for (size_t i = 0; i < want->size(); ++i) {
      CAPTURE(graph.outputs()[i].name);
      CHECK((*got)[i].bitwiseEqual((*want)[i]));
    }
  }
}

}  // namespace

TEST_CASE("collectives: a started all-reduce read only by its wait sums in place, sum and mean as the interpreter") {
  checkAgainstInterpreter(R"(graph @g(%x: f32[300], %y: f64[7]) {
  %0 = all_reduce_start(%x) {op = "sum", tag = 1} : f32[300]
  %1 = all_reduce_start(%y) {op = "mean", tag = 2} : f64[7]
  %2 = add(%x, %x) : f32[300]
  %3 = all_reduce_wait(%1) {op = "mean", tag = 2} : f64[7]
  %4 = all_reduce_wait(%0) {op = "sum", tag = 1} : f32[300]
  %5 = all_reduce(%2) {op = "mean"} : f32[300]
  return s = %4, m = %3, meanwhile = %2, blocking = %5
})",
                          3);
}

TEST_CASE("collectives: a started value with other readers than its wait keeps its operand's values") {
  // The start's value is returned and read by neg: both must see x, not the sum the wait returns.
  checkAgainstInterpreter(R"(graph @g(%x: f32[40]) {
  %0 = all_reduce_start(%x) {op = "sum", tag = 3} : f32[40]
  %1 = neg(%0) : f32[40]
  %2 = all_reduce_wait(%0) {op = "sum", tag = 3} : f32[40]
  return started = %0, e = %1, r = %2
})",
                          1);
}
