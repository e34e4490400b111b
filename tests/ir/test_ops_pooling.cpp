// max_pool2d, avg_pool2d and the global pools: shapes (ceil_mode), verifier messages, and reference
// values against PyTorch.
//
// Expected values were computed with torch 1.13 in float64 on Debian's /usr/bin/python3, on inputs that
// are multiples of 0.25 in [-2, 2] (torch.randint(-8, 9, shape) / 4, seed 4321) unless said otherwise;
// the call that produced each one is given next to it. Maxima are exact; means are printed by Python's
// repr, so they round-trip exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

using testing::checkClose;
using testing::f64;
using testing::runOutputs;

TEST_CASE("max_pool2d with ceil_mode, padding and dilation matches PyTorch") {
  Tensor x = f64({1, 2, 6, 6},
                 {0.5,   -0.25, -1.25, 1.5,   1.75,  1,     -1.25, -0.5, 0.5,   -2,   1.25, -0.25, 1.75, 0.25, -0.25,
                  2,     1.5,   -2,    -0.5,  -0.75, 1,     1.75,  0.75, -0.5,  -0.5, 1.75, 1.25,  -0.5, 1.5,  0.25,
                  1,     -1,    1.75,  0.5,   -0.25, 0.25,  1.25,  0.5,  0.25,  0.5,  0.75, 0.75,  1.5,  -1.5, 0.25,
                  -1.75, -1.75, 0.5,   -1.25, 1.5,   -0.5,  -1.5,  -1.5, -1.75, -1.5, 1.75, 0.25,  0.75, 1.5,  -0.5,
                  -2,    -1.5,  -0.25, -1.25, -1.75, -0.25, -1,    0.5,  -0.75, 0,    0,    -0.5});
  // x[:, :, :5, :5], for the case where ceil_mode's last window is dropped.
  std::vector<double> xs = x.toDoubles(), cropped;
  for (int64_t i = 0; i < 2 * 6 * 6; ++i) {
    if (i / 6 % 6 < 5 && i % 6 < 5) cropped.push_back(xs[static_cast<size_t>(i)]);
  }
  auto out = runOutputs(R"(graph @t(%x: f64[1,2,6,6], %s: f64[1,2,5,5]) {
  %0 = max_pool2d(%x) {ceil_mode = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : f64[1,2,4,4]
  %1 = max_pool2d(%s) {ceil_mode = 1, kernel = [2, 2], padding = [1, 1, 1, 1]} : f64[1,2,3,3]
  %2 = max_pool2d(%x) {dilation = [2, 1], kernel = [2, 3], padding = [1, 1, 1, 1], stride = [1, 2]} : f64[1,2,6,3]
  return a = %0, b = %1, c = %2
})",
                        {{"x", x}, {"s", f64({1, 2, 5, 5}, cropped)}});
  // F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
  checkClose(out[0], f64({1, 2, 4, 4}, {0.5,  1.5, 1.75, 1,    1.75, 2,     2,   -0.25, 1.75, 1.75, 1.75,
                                        0.25, 1,   1.75, 0.5,  0.25, 1.5,   0.5, 0.75,  0.75, 1.75, 1.75,
                                        1.5,  0.5, 1.75, 1.75, 1.5,  -0.25, 0.5, 0.5,   0,    -0.5}));
  // F.max_pool2d(x[:, :, :5, :5], 2, stride=2, padding=1, ceil_mode=True): ceil gives 4 windows, but the
  // 4th would start in the bottom padding (3*2 >= 5+1), so there are 3.
  checkClose(out[1], f64({1, 2, 3, 3}, {0.5, -0.25, 1.75, 1.75, 0.5, 2, -0.5, 1.75, 1.75, 1.25, 0.5, 0.75, 1.5, 1.5,
                                        -1.5, -1.5, 1.75, 1.5}));
  // F.max_pool2d(x, (2, 3), stride=(1, 2), padding=1, dilation=(2, 1))
  checkClose(out[2], f64({1, 2, 6, 3}, {-0.5, 0.5,  1.25, 1.75, 2,    2,     -0.5, 1.75, 1.75, 1.75, 2,     2,
                                        1,    1.75, 1.75, 1.75, 1.75, 1.5,   1.5,  0.25, 0.5,  1.5,  1.5,   0.75,
                                        1.75, 1.75, 1.5,  1.5,  1.5,  -0.25, 1.75, 1.75, 1.5,  -1.5, -0.25, -0.25}));
}

TEST_CASE("max_pool2d on integers: padding never wins, values compare exactly") {
  // x = -torch.randint(1, 100, (1, 1, 4, 4)) in i8; the zero padding must never be the maximum.
  // F.max_pool2d(x.double(), 3, stride=2, padding=1, ceil_mode=True)
  Tensor x = Tensor::fromDoubles(
      TensorType{DType::i8, {1, 1, 4, 4}},
      std::vector<double>{-79, -83, -92, -86, -67, -66, -59, -66, -88, -87, -52, -53, -10, -16, -71, -12});
  auto out = runOutputs(R"(graph @t(%x: i8[1,1,4,4]) {
  %0 = max_pool2d(%x) {ceil_mode = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : i8[1,1,3,3]
  return y = %0
})",
                        {{"x", x}});
  checkClose(out[0], Tensor::fromDoubles(TensorType{DType::i8, {1, 1, 3, 3}},
                                         std::vector<double>{-66, -59, -66, -10, -12, -12, -10, -12, -12}));

  // u64 values past 2^63 (hand-computed): a conversion through double or int64 would get these wrong.
  Tensor big =
      Tensor::of<uint64_t>({1, 1, 1, 4}, {18446744073709551615u, 9223372036854775809u, 9223372036854775808u, 1u});
  auto bigOut = runOutputs(R"(graph @t(%x: u64[1,1,1,4]) {
  %0 = max_pool2d(%x) {kernel = [1, 2], stride = [1, 1]} : u64[1,1,1,3]
  return y = %0
})",
                           {{"x", big}});
  CHECK(bigOut[0].bitwiseEqual(
      Tensor::of<uint64_t>({1, 1, 1, 3}, {18446744073709551615u, 9223372036854775809u, 9223372036854775808u})));
}

TEST_CASE("max_pool2d with a 2^40 kernel and padding visits only the input taps") {
  // Hand-computed: the kernel is 2^40 rows tall and the top padding 2^40 - 1, so output row 0 sees
  // input row 0 only and output row 1 sees rows 0 and 1. A tap-by-tap loop would never finish.
  auto out = runOutputs(R"(graph @t(%x: f32[1,1,2,2]) {
  %0 = max_pool2d(%x) {kernel = [1099511627776, 1], padding = [1099511627775, 0, 0, 0], stride = [1, 1]} : f32[1,1,2,2]
  return y = %0
})",
                        {{"x", Tensor::of<float>({1, 1, 2, 2}, {1, 5, 3, 2})}});
  CHECK(out[0].bitwiseEqual(Tensor::of<float>({1, 1, 2, 2}, {1, 5, 3, 5})));
}

TEST_CASE("max_pool2d windows holding only padding give -inf or the integer minimum") {
  // Hand-computed: a 1x1 kernel with top padding 1 makes output row 0 a window of padding only.
  auto out = runOutputs(
      R"(graph @t(%x: f32[1,1,1,2], %i: i8[1,1,1,2]) {
  %0 = max_pool2d(%x) {kernel = [1, 1], padding = [1, 0, 0, 0]} : f32[1,1,2,2]
  %1 = max_pool2d(%i) {kernel = [1, 1], padding = [1, 0, 0, 0]} : i8[1,1,2,2]
  return f = %0, i = %1
})",
      {{"x", Tensor::of<float>({1, 1, 1, 2}, {1.5f, -2.0f})}, {"i", Tensor::of<int8_t>({1, 1, 1, 2}, {7, -3})}});
  float inf = std::numeric_limits<float>::infinity();
  CHECK(out[0].bitwiseEqual(Tensor::of<float>({1, 1, 2, 2}, {-inf, -inf, 1.5f, -2.0f})));
  CHECK(out[1].bitwiseEqual(Tensor::of<int8_t>({1, 1, 2, 2}, {-128, -128, 7, -3})));
}

TEST_CASE("max_pool2d propagates NaN like PyTorch") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  auto out = runOutputs(
      R"(graph @t(%x: f32[1,1,2,3]) {
  %0 = max_pool2d(%x) {kernel = [2, 2], stride = [1, 1]} : f32[1,1,1,2]
  return y = %0
})",
      {{"x", Tensor::fromDoubles(TensorType{DType::f32, {1, 1, 2, 3}}, std::vector<double>{1, nan, 2, 3, 4, 5})}});
  CHECK(std::isnan(out[0].getDouble(0)));
  CHECK(std::isnan(out[0].getDouble(1)));
}

TEST_CASE("max_pool2d_indices names each window's first maximum, -1 for NaN maxima and padding only") {
  // Hand-computed. n: both 2x2 windows hold the NaN. t: 5 appears twice in window (0, 0): the first in
  // scan order (plane index 0) wins; window (0, 1)'s maximum is at plane index 2. p: row 0 of the
  // output is a window of padding only.
  double nan = std::numeric_limits<double>::quiet_NaN();
  auto out = runOutputs(
      R"(graph @t(%n: f32[1,1,2,3], %t: f32[1,1,2,3], %p: i8[1,1,1,2]) {
  %0 = max_pool2d_indices(%n) {kernel = [2, 2], stride = [1, 1]} : i64[1,1,1,2]
  %1 = max_pool2d_indices(%t) {kernel = [2, 2], stride = [1, 1]} : i64[1,1,1,2]
  %2 = max_pool2d_indices(%p) {kernel = [1, 1], padding = [1, 0, 0, 0]} : i64[1,1,2,2]
  return n = %0, t = %1, p = %2
})",
      {{"n", Tensor::fromDoubles(TensorType{DType::f32, {1, 1, 2, 3}}, std::vector<double>{1, nan, 2, 3, 4, 5})},
       {"t", Tensor::of<float>({1, 1, 2, 3}, {5, 1, 5, 5, 0, 2})},
       {"p", Tensor::of<int8_t>({1, 1, 1, 2}, {-128, 3})}});
  CHECK(out[0].bitwiseEqual(Tensor::of<int64_t>({1, 1, 1, 2}, {-1, -1})));
  CHECK(out[1].bitwiseEqual(Tensor::of<int64_t>({1, 1, 1, 2}, {0, 2})));
  CHECK(out[2].bitwiseEqual(Tensor::of<int64_t>({1, 1, 2, 2}, {-1, -1, 0, 1})));
}

TEST_CASE("max_pool2d_backward adds dy where each window's index points, ignoring indices outside the window") {
  // Hand-computed: windows (0, 0) and (0, 1) of a 2x2 kernel over [2, 3]. Indices {0, 2} route 10 to
  // position 0 and 20 to position 2; in {0, 0} the second names a position outside its window.
  auto out = runOutputs(
      R"(graph @t(%dy: f32[1,1,1,2], %i: i64[1,1,1,2], %j: i64[1,1,1,2]) {
  %0 = max_pool2d_backward(%dy, %i) {input_size = [2, 3], kernel = [2, 2], stride = [1, 1]} : f32[1,1,2,3]
  %1 = max_pool2d_backward(%dy, %j) {input_size = [2, 3], kernel = [2, 2], stride = [1, 1]} : f32[1,1,2,3]
  return a = %0, b = %1
})",
      {{"dy", Tensor::of<float>({1, 1, 1, 2}, {10, 20})},
       {"i", Tensor::of<int64_t>({1, 1, 1, 2}, {0, 2})},
       {"j", Tensor::of<int64_t>({1, 1, 1, 2}, {0, 0})}});
  CHECK(out[0].bitwiseEqual(Tensor::of<float>({1, 1, 2, 3}, {10, 0, 20, 0, 0, 0})));
  CHECK(out[1].bitwiseEqual(Tensor::of<float>({1, 1, 2, 3}, {10, 0, 0, 0, 0, 0})));
}

TEST_CASE("avg_pool2d with ceil_mode and count_include_pad matches PyTorch") {
  Tensor x = f64({1, 2, 6, 6},
                 {-1.5,  0.5,   1,     -1,    -1,   1.5,  2,     -1.25, -0.5,  -2,    -1.25, 0.75, 0.5,   1,    -1.5,
                  -0.25, 0.25,  -2,    0.25,  -1,   0.5,  1.25,  -1.75, 0.25,  -0.25, 1.75,  -1,   -1.75, 0.25, 1.5,
                  0.25,  -2,    2,     -1.25, 1,    1,    0.75,  0.25,  -1.5,  2,     -1.25, -2,   0,     1,    1.5,
                  -0.25, -1.25, -0.25, 0.75,  1.75, 1,    2,     0.25,  -0.75, 1,     -2,    1.5,  2,     1.75, -2,
                  -1.25, 1,     -2,    -2,    -1.5, 0.75, -0.75, 1,     -1.5,  -2,    1.75,  1.5});
  auto out = runOutputs(R"(graph @t(%x: f64[1,2,6,6]) {
  %0 = avg_pool2d(%x) {ceil_mode = 1, count_include_pad = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : f64[1,2,4,4]
  %1 = avg_pool2d(%x) {ceil_mode = 1, kernel = [3, 3], padding = [1, 1, 1, 1], stride = [2, 2]} : f64[1,2,4,4]
  %2 = avg_pool2d(%x) {count_include_pad = 1, kernel = [2, 4], padding = [1, 2, 1, 2], stride = [2, 3]} : f64[1,2,4,3]
  return a = %0, b = %1, c = %2
})",
                        {{"x", x}});
  // F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=True): the last window
  // row/column is clipped to the padded input, so it divides by 6 (or 4 in the corner), not 9.
  checkClose(out[0], f64({1, 2, 4, 4}, {-0.027777777777777776,
                                        -0.3611111111111111,
                                        -0.3333333333333333,
                                        0.375,
                                        0.16666666666666666,
                                        -0.4166666666666667,
                                        -0.5277777777777778,
                                        -0.16666666666666666,
                                        -0.1111111111111111,
                                        -0.16666666666666666,
                                        0.05555555555555555,
                                        0.4583333333333333,
                                        -0.2916666666666667,
                                        -0.20833333333333334,
                                        0.125,
                                        0.25,
                                        0.2222222222222222,
                                        0.3333333333333333,
                                        -0.3333333333333333,
                                        -0.375,
                                        0.2777777777777778,
                                        0.9444444444444444,
                                        0.16666666666666666,
                                        -0.5,
                                        -0.1111111111111111,
                                        -0.4444444444444444,
                                        0.027777777777777776,
                                        0.041666666666666664,
                                        0.041666666666666664,
                                        -0.4166666666666667,
                                        0.20833333333333334,
                                        0.375}));
  // F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
  checkClose(out[1], f64({1, 2, 4, 4}, {-0.0625,
                                        -0.5416666666666666,
                                        -0.5,
                                        1.125,
                                        0.25,
                                        -0.4166666666666667,
                                        -0.5277777777777778,
                                        -0.3333333333333333,
                                        -0.16666666666666666,
                                        -0.16666666666666666,
                                        0.05555555555555555,
                                        0.9166666666666666,
                                        -0.875,
                                        -0.4166666666666667,
                                        0.25,
                                        1,
                                        0.5,
                                        0.5,
                                        -0.5,
                                        -1.125,
                                        0.4166666666666667,
                                        0.9444444444444444,
                                        0.16666666666666666,
                                        -1,
                                        -0.16666666666666666,
                                        -0.4444444444444444,
                                        0.027777777777777776,
                                        0.08333333333333333,
                                        0.125,
                                        -0.8333333333333334,
                                        0.4166666666666667,
                                        1.5}));
  // F.avg_pool2d(x, (2, 4), stride=(2, 3), padding=(1, 2), count_include_pad=True)
  checkClose(out[2], f64({1, 2, 4, 3}, {-0.125,  -0.0625,  0.0625,   0.28125,  -0.6875, -0.28125, 0.09375,  -0.21875,
                                        0.03125, -0.21875, -0.03125, 0.25,     0.125,   -0.0625,  -0.40625, 0.4375,
                                        0.75,    -0.25,    -0.15625, -0.15625, -0.125,  0.03125,  -0.09375, 0.40625}));
}

TEST_CASE("global pools match PyTorch's adaptive pools to 1x1") {
  Tensor x = f64({2, 3, 2, 3}, {0.25, -1.75, 0,  -1.25, 0.5,  1.25,  0,     1.75,  1,    0.75, -0.5,  -1.25,
                                -1,   1.5,   1,  1,     1.25, -0.75, 1.75,  -1.75, 1.75, -1.5, -0.25, -1.5,
                                1.25, 0.75,  -2, -1,    0.25, 2,     -0.25, -1.5,  0.5,  0,    0.75,  -2});
  auto out = runOutputs(R"(graph @t(%x: f64[2,3,2,3]) {
  %0 = global_avg_pool2d(%x) : f64[2,3,1,1]
  %1 = global_max_pool2d(%x) : f64[2,3,1,1]
  return a = %0, m = %1
})",
                        {{"x", x}});
  // F.adaptive_avg_pool2d(x, 1) and F.adaptive_max_pool2d(x, 1)
  checkClose(out[0], f64({2, 3, 1, 1}, {-0.16666666666666666, 0.2916666666666667, 0.5, -0.25, 0.20833333333333334,
                                        -0.4166666666666667}));
  checkClose(out[1], f64({2, 3, 1, 1}, {1.25, 1.75, 1.5, 1.75, 2, 0.75}));
}

TEST_CASE("pooling output shapes follow the ceil_mode rule") {
  // H = 7, kernel 2, stride 3, ceil_mode: ceil((7-2)/3)+1 = 3 windows, the last starting at 6 < 7.
  // W = 7, padding 1+1, kernel 3, stride 4: ceil((9-3)/4)+1 = 3, but the 3rd would start at 8 >= 7+1.
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[1,1,7,7]) {
  %0 = max_pool2d(%x) {ceil_mode = 1, kernel = [2, 3], padding = [0, 1, 0, 1], stride = [3, 4]} : f32[1,1,3,2]
  %1 = avg_pool2d(%x) {ceil_mode = 1, kernel = [2, 3], padding = [0, 1, 0, 1], stride = [3, 4]} : f32[1,1,3,2]
  %2 = max_pool2d(%x) {kernel = [2, 3], padding = [0, 1, 0, 1], stride = [3, 4]} : f32[1,1,2,2]
  %3 = max_pool2d(%x) {kernel = [7, 7]} : f32[1,1,1,1]
  return a = %0, b = %1, c = %2, d = %3
})");
  CHECK(g.numNodes() == 4);
}

TEST_CASE("pooling verifier errors") {
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [0, 2]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'kernel' must hold positive values, got [0,2]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [3]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'kernel' must have 2 entries, got 1");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [2, 2], stride = [1, 1, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'stride' must have 2 entries (or none, meaning the kernel), got 3");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = avg_pool2d(%x) {kernel = [2, 2], stride = [0, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "avg_pool2d %0: attribute 'stride' must hold positive values, got [0,1]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = avg_pool2d(%x) {kernel = [2, 2], padding = [0, 0, -1, 0]} : f32[1,1,3,3]
  return y = %0
})",
              "avg_pool2d %0: attribute 'padding' must hold non-negative values, got [0,0,-1,0]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {dilation = [0, 1], kernel = [2, 2]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'dilation' must hold positive values, got [0,1]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {ceil_mode = 2, kernel = [2, 2]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'ceil_mode' must be 0 or 1, got 2");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = avg_pool2d(%x) {count_include_pad = -1, kernel = [2, 2]} : f32[1,1,3,3]
  return y = %0
})",
              "avg_pool2d %0: attribute 'count_include_pad' must be 0 or 1, got -1");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,3,5]) {
  %0 = max_pool2d(%x) {kernel = [4, 2]} : f32[1,1,1,2]
  return y = %0
})",
              "max_pool2d %0: kernel height 4 with dilation 1 does not fit the padded input height 3 (the output would "
              "be empty)");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [2, 2], stride = [4611686018427387904, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "max_pool2d %0: attribute 'stride' value 4611686018427387904 is too large (at most 2^40)");
  CHECK_ERROR(R"(graph @t(%x: i32[1,1,5,5]) {
  %0 = avg_pool2d(%x) {kernel = [2, 2]} : i32[1,1,2,2]
  return y = %0
})",
              "avg_pool2d %0: operand #0 (input) must be one of f16,bf16,f32,f64, got i32");
  CHECK_ERROR(
      R"(graph @t(%x: bool[1,1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [2, 2]} : bool[1,1,2,2]
  return y = %0
})",
      "max_pool2d %0: operand #0 (input) must be one of f16,bf16,f32,f64,i8,i16,i32,i64,u8,u16,u32,u64, got bool");
  CHECK_ERROR(R"(graph @t(%x: f32[1,5,5]) {
  %0 = max_pool2d(%x) {kernel = [2, 2]} : f32[1,2,2]
  return y = %0
})",
              "max_pool2d %0: operand #0 (input) must have rank 4, got f32[1,5,5]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,2,0,3]) {
  %0 = global_avg_pool2d(%x) : f32[1,2,1,1]
  return y = %0
})",
              "global_avg_pool2d %0: input f32[1,2,0,3] has no spatial elements to pool");
  CHECK_ERROR(R"(graph @t(%x: f32[2,5,5]) {
  %0 = global_max_pool2d(%x) : f32[2,1,1]
  return y = %0
})",
              "global_max_pool2d %0: operand #0 (input) must have rank 4, got f32[2,5,5]");
}

TEST_CASE("absurd pooling attribute values are verifier errors, never crashes") {
  // The parser feeds any attribute value to inference; every one must come back as an error (or, for
  // the few sane ones, a verified node). Running this without a crash or sanitizer report is the test.
  const int64_t values[] = {INT64_MIN, -1, 0, 1, 2, (int64_t{1} << 40) + 1, INT64_MAX};
  int errors = 0;
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    for (const char* attr : {"kernel", "stride", "padding", "dilation", "ceil_mode", "count_include_pad"}) {
      bool scalar = std::string(attr) == "ceil_mode" || std::string(attr) == "count_include_pad";
      if (std::string(op) == "max_pool2d" && std::string(attr) == "count_include_pad") continue;
      if (std::string(op) == "avg_pool2d" && std::string(attr) == "dilation") continue;
      for (int64_t v : values) {
        for (int length : {0, 1, 2, 4}) {
          std::string list = scalar ? std::to_string(v) : "[";
          for (int i = 0; !scalar && i < length; ++i) list += (i ? ", " : "") + std::to_string(v);
          if (!scalar) list += "]";
          std::string attrs = std::string(attr) + " = " + list;
          if (std::string(attr) != "kernel") attrs = "kernel = [2, 2], " + attrs;
          std::string text = std::string("graph @t(%x: f32[1,2,5,5]) {\n  %0 = ") + op + "(%x) {" + attrs +
                             "} : f32[1,2,2,2]\n  return y = %0\n}";
          CAPTURE(text);
          if (!parseGraph(text).ok()) ++errors;
        }
      }
    }
  }
  CHECK(errors > 100);
}
