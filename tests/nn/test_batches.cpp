// nn::Batches: every example exactly once per epoch, a new order each epoch (the same for the same
// seed), the last partial batch kept or dropped, inputs and targets kept paired, and clear errors.
#include <doctest/doctest.h>

#include <set>

#include "frontend/nn/batches.h"

using namespace smelt;

namespace {

// Ten examples: inputs [10, 3] whose row i holds i, 100 + i, 200 + i; targets [10] holding i.
std::pair<Tensor, Tensor> numbered(int64_t rows = 10) {
  Tensor x(TensorType{DType::f32, {rows, 3}}), y(TensorType{DType::i64, {rows}});
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < 3; ++c) x.setDouble(i * 3 + c, static_cast<double>(100 * c + i));
    y.setInt(i, i);
  }
  return {x, y};
}

// The targets of one epoch, batch by batch, checking each input row stays with its target.
std::vector<std::vector<int64_t>> epoch(nn::Batches& batches) {
  std::vector<std::vector<int64_t>> out;
  Tensor x, y;
  for (batches.startEpoch(); batches.next(x, y);) {
    REQUIRE(x.shape()[0] == y.shape()[0]);
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < y.numel(); ++i) {
      labels.push_back(y.getInt(i));
      CHECK(x.getDouble(i * 3 + 2) == static_cast<double>(200 + y.getInt(i)));
    }
    out.push_back(labels);
  }
  return out;
}

}  // namespace

TEST_CASE("batches: every example once per epoch, a new order each epoch, the last batch smaller") {
  auto [x, y] = numbered();
  auto batches = nn::Batches::make(x, y, {.batch = 4, .shuffle = true, .seed = 3});
  REQUIRE(batches.ok());
  CHECK(batches->batchesPerEpoch() == 3);
  auto first = epoch(*batches), second = epoch(*batches);
  REQUIRE(first.size() == 3);
  CHECK(first[0].size() == 4);
  CHECK(first[2].size() == 2);  // 10 = 4 + 4 + 2
  for (const auto& e : {first, second}) {
    std::multiset<int64_t> seen;
    for (const auto& b : e) seen.insert(b.begin(), b.end());
    CHECK(seen == std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  CHECK(first != second);
  // The same seed gives the same orders.
  auto again = nn::Batches::make(x, y, {.batch = 4, .shuffle = true, .seed = 3});
  REQUIRE(again.ok());
  CHECK(epoch(*again) == first);
}

TEST_CASE("batches: in order without shuffling, and dropLast leaves the partial batch out") {
  auto [x, y] = numbered();
  auto inOrder = nn::Batches::make(x, y, {.batch = 4, .shuffle = false});
  REQUIRE(inOrder.ok());
  CHECK(epoch(*inOrder) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  auto dropped = nn::Batches::make(x, y, {.batch = 4, .shuffle = false, .dropLast = true});
  REQUIRE(dropped.ok());
  CHECK(dropped->batchesPerEpoch() == 2);
  CHECK(epoch(*dropped) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  // next() before the first startEpoch() gives nothing.
  Tensor bx, by;
  auto fresh = nn::Batches::make(x, y, {.batch = 4});
  REQUIRE(fresh.ok());
  CHECK_FALSE(fresh->next(bx, by));
}

TEST_CASE("batches: mismatched examples, no rows or a batch below 1 are errors naming both") {
  auto [x, y] = numbered();
  auto [x7, y7] = numbered(7);
  auto mismatched = nn::Batches::make(x, y7, {});
  REQUIRE_FALSE(mismatched.ok());
  CHECK(mismatched.error().message().find("f32[10,3]") != std::string::npos);
  CHECK(mismatched.error().message().find("i64[7]") != std::string::npos);
  CHECK_FALSE(nn::Batches::make(x, y, {.batch = 0}).ok());
  CHECK_FALSE(nn::Batches::make(Tensor::scalar(DType::f32, 1.0), y, {}).ok());
}
