// conv2d, conv_transpose2d and locally_connected2d: shapes, verifier messages, and reference values
// against PyTorch.
//
// Expected values were computed with torch 1.13 in float64 on Debian's /usr/bin/python3, on inputs that
// are multiples of 0.25 in [-2, 2] (torch.randint(-8, 9, shape) / 4, seed 1234), so every product and
// sum is exact in double and the expected outputs are exact. The call that produced each one is given
// next to it. Asymmetric padding was applied with F.pad (conv2d) or by cropping the unpadded result
// (conv_transpose2d), since PyTorch's own padding is symmetric.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

using testing::checkClose;
using testing::f64;
using testing::runOutputs;

TEST_CASE("conv2d with stride 2, padding 1 and bias matches PyTorch") {
  // F.conv2d(x, w, b, stride=2, padding=1)
  Tensor x = f64({1, 2, 5, 5}, {-0.5, -1.25, -0.75, 1.5, -0.75, -2,   -0.25, 1.75,  0.75,  -1.5,  0.75,  0.25,  -1,
                                2,    1,     0.25,  1.5, -0.5,  -1.5, 1.25,  -2,    -0.25, -1.25, -0.25, -1,    -1.25,
                                1.75, 0,     -1.75, -1,  -2,    0.5,  -0.5,  -0.75, 0,     1.75,  1.25,  -0.75, 1.75,
                                1.75, 1,     1,     2,   0.25,  1.25, 0.5,   1.25,  -0.25, 0,     -1.75});
  Tensor w =
      f64({3, 2, 3, 3}, {-1.25, 1,    -2,    1,     0.25,  -0.75, 1.5,  1.5,   -0.25, 1.25,  -1,    2,    0.5,  -1.75,
                         -0.75, 1.25, 0.25,  -0.75, -0.75, 1.25,  -0.5, -0.25, 0,     1.75,  1,     -2,   -1.5, -1.75,
                         0.75,  1.75, -1.75, 0.75,  -0.25, 0,     0,    -1.5,  1.25,  0,     -0.75, 0.25, 2,    0.75,
                         -1.75, 1.25, 0.5,   -1,    -0.5,  1.75,  0.75, 1.25,  -1.25, -1.75, 1.5,   1.75});
  Tensor b = f64({3}, {1.25, 1.75, -1.25});
  Tensor y = f64({1, 3, 3, 3}, {-0.875,   4,       1.375,   -1.75,   4,      -1.8125, -2.625, 2.3125,  6,
                                1.8125,   -1.6875, 7.4375,  -4.0625, 5.8125, -5.625,  3.4375, -1.8125, 3.6875,
                                -11.6875, 1.625,   -6.8125, 7.4375,  -8.625, 12.0625, -6.25,  -1.9375, -8.25});
  auto out = runOutputs(R"(graph @t(%x: f64[1,2,5,5], %w: f64[3,2,3,3], %b: f64[3]) {
  %0 = conv2d(%x, %w, %b) {padding = [1, 1, 1, 1], stride = [2, 2]} : f64[1,3,3,3]
  return y = %0
})",
                        {{"x", x}, {"w", w}, {"b", b}});
  checkClose(out[0], y);
}

TEST_CASE("conv2d with dilation 2, groups 2, stride [2,1] and asymmetric padding matches PyTorch") {
  // F.conv2d(F.pad(x, (0, 1, 1, 2)), w, stride=(2, 1), dilation=2, groups=2)
  Tensor x = f64(
      {1, 4, 6, 6},
      {1.5,   0,     1.75,  1.5,   0,     -0.5,  -1.75, 2,     0.25,  0.25,  0.25,  1,     -0.25, 0.25,  1.75,  -1.75,
       1,     -2,    0.25,  0.5,   1.5,   -0.5,  1.5,   1.25,  1.75,  -1.25, -0.5,  -1.75, -1.75, 0.25,  -0.75, 0.75,
       -1,    -1,    1,     0.5,   0.5,   0,     1.75,  -1.25, -1.5,  0,     -2,    1.75,  0,     -1.75, -1.25, 0.25,
       -0.5,  -0.5,  1.25,  0.5,   -0.75, 1.5,   0.75,  2,     -2,    -0.5,  0.75,  -1.25, 1.75,  -0.75, -2,    -1.5,
       -0.25, -0.25, 0.75,  1,     -1,    1,     -0.5,  0,     1,     0.5,   0.5,   1.5,   -2,    -0.5,  1.5,   0.5,
       0.75,  1.5,   0,     1,     1.75,  0.25,  -1.5,  0.5,   1.25,  0.25,  0.5,   -1.75, -1,    -1.75, -1.25, -0.25,
       0.25,  0,     -1.75, -0.75, 1,     -1.25, 1.75,  -0.5,  0.5,   -1.75, 1.5,   -1.25, -0.75, -1,    2,     -0.25,
       -1.5,  1.75,  -0.25, -0.25, 0,     1,     -1.25, -0.5,  -1.5,  0.5,   -0.5,  -0.75, 0.25,  -0.75, -2,    -0.25,
       0.5,   -0.75, 0,     -1.5,  -1.5,  -1.25, 1.5,   2,     -0.75, 0.25,  -1.25, 0.75,  2,     0.25,  -2,    0});
  Tensor w = f64(
      {4, 2, 3, 3},
      {-1,   -0.5, -0.5,  -2,   1,    -2,    2,    1.5, -1.5,  0.75, 1.75, 1.75, 0.75,  2,     1.5,  0.5,  2,    -0.25,
       -0.5, 0.25, -1,    -0.5, 0.75, -1.25, 1.75, 0,   0,     2,    1,    0.5,  1,     2,     -2,   -0.5, -1.5, -0.25,
       0.25, 0,    1.75,  0,    0.5,  -1.25, 2,    2,   -1.75, -1.5, 1.5,  -1,   -0.25, -0.25, -2,   1.75, -1.5, -1.5,
       0,    0.5,  -0.25, 1.25, 0.25, 0.25,  0.5,  1,   -1.75, 2,    0,    -2,   1,     0.25,  -0.5, -0.5, 2,    0});
  Tensor y = f64({1, 4, 3, 3},
                 {-3.4375, -8.875, 3,       -12.5, -7.5625, -6.0625, -7.0625, -3.1875, -1.1875, 4.125, -3.375, 0.0625,
                  -9.625,  0.5625, -1.9375, -3.25, 2.5,     -4.375,  -0.125,  -3.3125, -3.3125, 3.125, 5.5625, 8.0625,
                  3.875,   0.3125, -0.25,   5.875, -2.0625, -1.375,  3.9375,  -1.0625, -4.3125, -1.25, 1.125,  2.875});
  auto out = runOutputs(R"(graph @t(%x: f64[1,4,6,6], %w: f64[4,2,3,3]) {
  %0 = conv2d(%x, %w) {dilation = [2, 2], groups = 2, padding = [1, 0, 2, 1], stride = [2, 1]} : f64[1,4,3,3]
  return y = %0
})",
                        {{"x", x}, {"w", w}});
  checkClose(out[0], y);
}

TEST_CASE("depthwise conv2d (groups = channels) matches PyTorch") {
  // F.conv2d(x, w, padding=1, groups=3)
  Tensor x = f64({1, 3, 4, 4},
                 {0,  -1.5, -0.25, 0.25,  2,     -1,   0.75, 1,    -1.5,  -0.75, 1.75, 1.25, 2,     1, -1.25, -0.25,
                  -2, 0.25, 1.75,  -0.25, -1.75, 0.25, 1.75, 1,    -1,    -1,    -0.5, 0,    -1.75, 0, 2,     0.25,
                  2,  2,    -1.5,  0.75,  -2,    0.75, 2,    0.75, -1.25, 1.5,   1,    1.75, 0.5,   0, 0.75,  -0.5});
  Tensor w = f64({3, 1, 3, 3}, {1.25,  1.5, 0,    -0.25, -1.5, -0.75, 1.5,  -1.25, 1,     -1.75, 0.5, -0.5, 2,    1,
                                -1.25, -1,  1.75, 0.5,   1,    1,     0.25, -0.5,  -1.25, 1,     -1,  -1,   -0.75});
  Tensor y = f64({1, 3, 4, 4}, {-2.375,  7.4375,  -0.875, -0.4375, -1.125,  -1.375,  -5.9375, -0.5625, 4.3125, 1.6875,
                                -0.6875, -1.4375, -6,     -4.0625, 3.5,     4.75,    -5.25,   -2.875,  5.875,  3.25,
                                -5.4375, -3.6875, 1.6875, 1.8125,  -3.8125, 2.6875,  1.0625,  -5.125,  -1.75,  -4.5,
                                3.1875,  5.125,   0.9375, -5.25,   -1.6875, -2.9375, 5.875,   4.6875,  -5.25,  -5.4375,
                                0.75,    -2.0625, 2.3125, -0.1875, -1.5,    1,       1.5,     3});
  auto out = runOutputs(R"(graph @t(%x: f64[1,3,4,4], %w: f64[3,1,3,3]) {
  %0 = conv2d(%x, %w) {groups = 3, padding = [1, 1, 1, 1]} : f64[1,3,4,4]
  return y = %0
})",
                        {{"x", x}, {"w", w}});
  checkClose(out[0], y);
}

TEST_CASE("conv2d rounds once to f32 and f16") {
  // Narrow dtypes compute in double and round once: their result equals the f64 result (on the same,
  // exactly widened inputs) rounded to the dtype, bit for bit.
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(dtypeName(dtype));
    Tensor x = testing::randomTensor(TensorType{dtype, {2, 3, 5, 5}}, testing::testSeed());
    Tensor w = testing::randomTensor(TensorType{dtype, {6, 1, 3, 3}}, testing::testSeed() + 1);
    std::string name(dtypeName(dtype));
    std::string text = R"(graph @t(%x: T[2,3,5,5], %w: T[6,1,3,3]) {
  %0 = conv2d(%x, %w) {groups = 3, padding = [1, 1, 1, 1]} : T[2,6,5,5]
  return y = %0
})";
    for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + name.size())) {
      text.replace(at, 1, name);
    }
    auto narrow = runOutputs(text, {{"x", x}, {"w", w}});
    Tensor xd = f64(x.shape(), x.toDoubles()), wd = f64(w.shape(), w.toDoubles());
    auto wide = runOutputs(R"(graph @t(%x: f64[2,3,5,5], %w: f64[6,1,3,3]) {
  %0 = conv2d(%x, %w) {groups = 3, padding = [1, 1, 1, 1]} : f64[2,6,5,5]
  return y = %0
})",
                           {{"x", xd}, {"w", wd}});
    CHECK(narrow[0].bitwiseEqual(Tensor::fromDoubles(narrow[0].type(), wide[0].toDoubles())));
  }
}

TEST_CASE("conv_transpose2d with stride 2, output_padding 1, groups 2 and bias matches PyTorch") {
  // F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
  Tensor x = f64({1, 4, 3, 3}, {-1,    0,    1.5,   -1,   0.5,  0,    1.75, -1.5, -0.25, 1.25, -1.25, 1.5,
                                0.75,  0,    0,     0.5,  0.5,  0.25, -1.5, 0.75, -2,    2,    -0.25, -2,
                                -0.75, 0.25, -0.75, -1.5, 1.75, 1,    1,    -1.5, -0.5,  -1,   0.5,   0.5});
  Tensor w = f64({4, 1, 3, 3}, {2,    -2,    -2,   1,     1.75,  0,   1.75,  -1.25, -0.5, 0.25,  -2,    0,
                                1.75, 1,     0.75, -1.5,  -1.25, 1,   -0.5,  0.25,  2,    0.5,   -1.75, 0.5,
                                -1,   -0.75, 1.25, -1.25, -1.5,  1.5, -0.25, -0.25, 1.5,  -0.25, -1.75, -1.75});
  Tensor b = f64({2}, {-1.25, -1.25});
  Tensor y =
      f64({1, 2, 6, 6},
          {-1.75,  -2.5,    -2.5,    1.9375,  2.875,   -0.125,  -1.0625, 5.375,   -0.6875, -3.125,  -5,      -0.5,
           -2.25,  -0.1875, -0.375,  -1.25,   -1.25,   -1.25,   -5.4375, -5.5,    0.125,   1.0625,  -1.25,   -0.75,
           2.3125, -1.5,    -3.375,  -0.6875, -1.4375, -1.0625, -4.0625, -5,      0,       -0.8125, -1.25,   -0.875,
           1.75,   -4.3125, -3,      0.5,     2,       -0.75,   1.5,     5.8125,  -2.6875, -2.75,   -1.25,   -10.25,
           -5,     1.5,     -0.4375, -4.5,    2.375,   -3,      -3.1875, -3.625,  0.875,   4.1875,  0.1875,  -3.625,
           0.3125, -3.125,  -1.8125, -0.875,  -0.0625, -0.875,  1.0625,  -0.8125, -2.3125, -1.1875, -1.5625, -3.0625});
  auto out = runOutputs(R"(graph @t(%x: f64[1,4,3,3], %w: f64[4,1,3,3], %b: f64[2]) {
  %0 = conv_transpose2d(%x, %w, %b) {groups = 2, output_padding = [1, 1], padding = [1, 1, 1, 1], stride = [2, 2]} : f64[1,2,6,6]
  return y = %0
})",
                        {{"x", x}, {"w", w}, {"b", b}});
  checkClose(out[0], y);
}

TEST_CASE("conv_transpose2d with dilation, unequal strides and asymmetric padding matches PyTorch") {
  // full = F.conv_transpose2d(x, w, stride=(1, 2), dilation=(2, 1), output_padding=(1, 1));
  // y = full[:, :, 1:, :-2]  (padding top 1, left 0, bottom 0, right 2)
  Tensor x =
      f64({1, 2, 3, 3}, {-0.75, -0.5, 1.75, 2, -0.5, 2, -2, 1.25, 2, -0.75, -1.5, 1.5, -2, 0.5, 0, -0.75, -1.75, 0.25});
  Tensor w = f64({2, 2, 2, 3}, {1, -1.5, 1.75, -0.5, 1.25, -1.25, 1,    1,    -1.75, -1.75, -2,    2,
                                2, -0.5, 0,    0.25, 0,    1,     1.75, -0.5, -0.25, -1,    -1.75, -1.75});
  Tensor y = f64({1, 2, 5, 6},
                 {-2,    -2,     4,      0.5,    1.125,  -3,      -3.3125, 2.4375, -5.6875, -1.625, 3.3125, -0.9375,
                  -1.5,  2.5,    -4.125, -0.625, 0.125,  2.5,     0.8125,  -2.5,   0.6875,  1.5625, -4.25,  2.5,
                  0,     0,      0,      0,      0,      0,       -1.5,    3,      -2.625,  -0.75,  2.75,   2,
                  -1.25, 1.1875, 4.0625, 5.75,   -2.25,  -4.25,   -1.5,    -0.5,   7.875,   0.125,  -5.375, -4,
                  4.25,  5.3125, -3.125, 0.5625, 1.8125, -4.4375, 0,       0,      0,       0,      0,      0});
  auto out = runOutputs(R"(graph @t(%x: f64[1,2,3,3], %w: f64[2,2,2,3]) {
  %0 = conv_transpose2d(%x, %w) {dilation = [2, 1], output_padding = [1, 1], padding = [1, 0, 0, 2], stride = [1, 2]} : f64[1,2,5,6]
  return y = %0
})",
                        {{"x", x}, {"w", w}});
  checkClose(out[0], y);
}

namespace {

// Property-test geometry: x[2,3,6,5], kernel 3x2, stride [2,1], padding [1,0,2,1], dilation [1,2]:
// OH = (6+3-3)/2+1 = 4, OW = (5+1-3)/1+1 = 4.
constexpr const char* kLocalText = R"(graph @t(%x: f64[2,3,6,5], %w: f64[4,4,2,3,3,2], %b: f64[2,4,4]) {
  %0 = locally_connected2d(%x, %w, %b) {dilation = [1, 2], padding = [1, 0, 2, 1], stride = [2, 1]} : f64[2,2,4,4]
  return y = %0
})";
constexpr const char* kConvText = R"(graph @t(%x: f64[2,3,6,5], %w: f64[2,3,3,2]) {
  %0 = conv2d(%x, %w) {dilation = [1, 2], padding = [1, 0, 2, 1], stride = [2, 1]} : f64[2,2,4,4]
  return y = %0
})";

}  // namespace

TEST_CASE("locally_connected2d with one kernel shared by all positions equals conv2d plus bias") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  Tensor x = testing::randomTensor(TensorType{DType::f64, {2, 3, 6, 5}}, seed);
  Tensor k = testing::randomTensor(TensorType{DType::f64, {2, 3, 3, 2}}, seed + 1);
  Tensor bias = testing::randomTensor(TensorType{DType::f64, {2}}, seed + 2);
  // Tile the kernel over the 4x4 positions and the bias over [O, OH, OW].
  std::vector<double> kv = k.toDoubles(), wv, bv;
  for (int p = 0; p < 16; ++p) wv.insert(wv.end(), kv.begin(), kv.end());
  for (int o = 0; o < 2; ++o) bv.insert(bv.end(), 16, bias.getDouble(o));
  auto local = runOutputs(kLocalText, {{"x", x}, {"w", f64({4, 4, 2, 3, 3, 2}, wv)}, {"b", f64({2, 4, 4}, bv)}});
  auto conv = runOutputs(kConvText, {{"x", x}, {"w", k}});
  std::vector<double> expected = conv[0].toDoubles();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += bias.getDouble(static_cast<int64_t>(i / 16 % 2));
  checkClose(local[0], f64({2, 2, 4, 4}, expected));
}

TEST_CASE("locally_connected2d at each position equals conv2d with that position's kernel") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  Tensor x = testing::randomTensor(TensorType{DType::f64, {2, 3, 6, 5}}, seed);
  Tensor w = testing::randomTensor(TensorType{DType::f64, {4, 4, 2, 3, 3, 2}}, seed + 1);
  Tensor b = testing::randomTensor(TensorType{DType::f64, {2, 4, 4}}, seed + 2);
  auto local = runOutputs(kLocalText, {{"x", x}, {"w", w}, {"b", b}});
  std::vector<double> wv = w.toDoubles();
  const int64_t kernelSize = 2 * 3 * 3 * 2;
  for (int64_t oh = 0; oh < 4; ++oh) {
    for (int64_t ow = 0; ow < 4; ++ow) {
      CAPTURE(oh);
      CAPTURE(ow);
      auto begin = wv.begin() + (oh * 4 + ow) * kernelSize;
      auto conv =
          runOutputs(kConvText, {{"x", x}, {"w", f64({2, 3, 3, 2}, std::vector<double>(begin, begin + kernelSize))}});
      for (int64_t n = 0; n < 2; ++n) {
        for (int64_t o = 0; o < 2; ++o) {
          int64_t at = ((n * 2 + o) * 4 + oh) * 4 + ow;
          double expected = conv[0].getDouble(at) + b.getDouble((o * 4 + oh) * 4 + ow);
          CHECK(local[0].getDouble(at) == doctest::Approx(expected).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("conv2d verifier errors name the operand and the mismatch") {
  CHECK_ERROR(R"(graph @t(%x: f32[1,3,5,5], %w: f32[2,4,3,3]) {
  %0 = conv2d(%x, %w) : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: input has 3 channels, weight expects 4");
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,5,5], %w: f32[2,1,3,3]) {
  %0 = conv2d(%x, %w) {groups = 2} : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: input has 4 channels, weight expects 2");
  CHECK_ERROR(R"(graph @t(%x: f32[1,3,5,5], %w: f32[2,1,3,3]) {
  %0 = conv2d(%x, %w) {groups = 2} : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: groups = 2 does not divide the 3 input channels");
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,5,5], %w: f32[3,2,3,3]) {
  %0 = conv2d(%x, %w) {groups = 2} : f32[1,3,3,3]
  return y = %0
})",
              "conv2d %0: groups = 2 does not divide the 3 output channels of the weight");
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,5,5], %w: f32[3,4,3,3]) {
  %0 = conv2d(%x, %w) {groups = 0} : f32[1,3,3,3]
  return y = %0
})",
              "conv2d %0: groups must be in [1, 2^40], got 0");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {stride = [0, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'stride' must hold positive values, got [0,1]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {stride = [-2, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'stride' must hold positive values, got [-2,1]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {dilation = [1, 0]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'dilation' must hold positive values, got [1,0]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {padding = [0, -1, 0, 0]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'padding' must hold non-negative values, got [0,-1,0,0]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {padding = [1, 1]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'padding' must have 4 entries, got 2");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {padding = [1000000000000000000, 0, 0, 0]} : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: attribute 'padding' value 1000000000000000000 is too large (at most 2^40)");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,2,4], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) : f32[1,1,1,1]
  return y = %0
})",
              "conv2d %0: kernel height 3 with dilation 1 does not fit the padded input height 2 (the output would be "
              "empty)");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,3,3]) {
  %0 = conv2d(%x, %w) {dilation = [1, 3], padding = [0, 0, 0, 1]} : f32[1,1,3,1]
  return y = %0
})",
              "conv2d %0: kernel width 3 with dilation 3 does not fit the padded input width 6");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[1,1,0,3]) {
  %0 = conv2d(%x, %w) : f32[1,1,3,3]
  return y = %0
})",
              "conv2d %0: weight has an empty kernel 0x3");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[2,1,3,3], %b: f32[3]) {
  %0 = conv2d(%x, %w, %b) : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: bias must be [2] (one entry per output channel), got f32[3]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f64[2,1,3,3]) {
  %0 = conv2d(%x, %w) : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: operand #0 (input) is f32[1,1,5,5] but operand #1 (weight) is f64[2,1,3,3]; they must have "
              "the same dtype");
  CHECK_ERROR(R"(graph @t(%x: i32[1,1,5,5], %w: i32[2,1,3,3]) {
  %0 = conv2d(%x, %w) : i32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: operand #0 (input) must be one of f16,bf16,f32,f64, got i32");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,5,5], %w: f32[2,3,3]) {
  %0 = conv2d(%x, %w) : f32[1,2,3,3]
  return y = %0
})",
              "conv2d %0: operand #1 (weight) must have rank 4, got f32[2,3,3]");
}

TEST_CASE("conv_transpose2d and locally_connected2d verifier errors") {
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,3,3], %w: f32[3,2,3,3]) {
  %0 = conv_transpose2d(%x, %w) : f32[1,2,5,5]
  return y = %0
})",
              "conv_transpose2d %0: input has 4 channels, weight expects 3");
  CHECK_ERROR(
      R"(graph @t(%x: f32[1,4,3,3], %w: f32[4,2,3,3]) {
  %0 = conv_transpose2d(%x, %w) {output_padding = [2, 0], stride = [2, 2]} : f32[1,2,5,5]
  return y = %0
})",
      "conv_transpose2d %0: output_padding 2 must be smaller than the stride 2 or the dilation 1 in the height");
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,3,3], %w: f32[4,2,3,3]) {
  %0 = conv_transpose2d(%x, %w) {output_padding = [0, 1]} : f32[1,2,5,5]
  return y = %0
})",
              "conv_transpose2d %0: output_padding 1 must be smaller than the stride 1 or the dilation 1 in the width");
  CHECK_ERROR(R"(graph @t(%x: f32[1,1,1,1], %w: f32[1,1,1,1]) {
  %0 = conv_transpose2d(%x, %w) {padding = [1, 0, 1, 0]} : f32[1,1,1,1]
  return y = %0
})",
              "conv_transpose2d %0: output height -1 is not positive");
  CHECK_ERROR(R"(graph @t(%x: f32[1,4,3,3], %w: f32[4,2,3,3], %b: f32[2]) {
  %0 = conv_transpose2d(%x, %w, %b) {groups = 2} : f32[1,4,5,5]
  return y = %0
})",
              "conv_transpose2d %0: bias must be [4] (one entry per output channel), got f32[2]");
  CHECK_ERROR(R"(graph @t(%x: f32[1,3,4,4], %w: f32[3,3,5,3,3,3]) {
  %0 = locally_connected2d(%x, %w) : f32[1,5,2,2]
  return y = %0
})",
              "locally_connected2d %0: weight has 3x3 output positions, the output is 2x2");
  CHECK_ERROR(R"(graph @t(%x: f32[1,3,4,4], %w: f32[2,2,5,2,3,3]) {
  %0 = locally_connected2d(%x, %w) : f32[1,5,2,2]
  return y = %0
})",
              "locally_connected2d %0: input has 3 channels, weight expects 2");
  CHECK_ERROR(R"(graph @t(%x: f32[1,3,4,4], %w: f32[2,2,5,3,3,3], %b: f32[5]) {
  %0 = locally_connected2d(%x, %w, %b) : f32[1,5,2,2]
  return y = %0
})",
              "locally_connected2d %0: bias must be [5,2,2] ([O,OH,OW]), got f32[5]");
}

TEST_CASE("conv ops infer their result shapes") {
  // Shapes only; the values are covered above. PyTorch's formulas, worked by hand in the comments.
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[2,6,9,7], %w: f32[4,3,3,2], %t: f32[6,5,4,4]) {
  %0 = conv2d(%x, %w) {groups = 2, stride = [3, 2]} : f32[2,4,3,3]
  %1 = conv2d(%x, %w) {dilation = [4, 6], groups = 2, padding = [0, 2, 0, 3]} : f32[2,4,1,6]
  %2 = conv_transpose2d(%x, %t) {dilation = [2, 1], output_padding = [1, 2], stride = [2, 3]} : f32[2,5,24,24]
  return a = %0, b = %1, c = %2
})");
  // %0: H (9-3)/3+1 = 3, W (7-2)/2+1 = 3.  %1: H 9-8 = 1, W 7+5-6-1+1 = 6.
  // %2: H (9-1)*2 + 2*(4-1) + 1 + 1 = 24, W (7-1)*3 + 1*(4-1) + 2 + 1 = 24.
  CHECK(g.numNodes() == 3);
}

TEST_CASE("absurd conv attribute values are verifier errors, never crashes") {
  // The parser feeds any attribute value to inference; every one must come back as an error (or, for
  // the few sane ones, a verified node). Running this without a crash or sanitizer report is the test.
  const int64_t values[] = {INT64_MIN, -1, 0, 1, 2, (int64_t{1} << 40) + 1, INT64_MAX};
  const char* ops[] = {"conv2d", "conv_transpose2d"};
  int errors = 0;
  for (const char* op : ops) {
    for (const char* attr : {"stride", "padding", "dilation", "output_padding", "groups"}) {
      if (std::string(op) == "conv2d" && std::string(attr) == "output_padding") continue;
      for (int64_t v : values) {
        for (int length : {1, 2, 4}) {
          std::string list = std::string(attr) == "groups" ? std::to_string(v) : "[";
          for (int i = 0; std::string(attr) != "groups" && i < length; ++i) list += (i ? ", " : "") + std::to_string(v);
          if (std::string(attr) != "groups") list += "]";
          std::string text = std::string("graph @t(%x: f32[1,2,5,5], %w: f32[2,2,3,3]) {\n  %0 = ") + op +
                             "(%x, %w) {" + attr + " = " + list + "} : f32[1,2,3,3]\n  return y = %0\n}";
          CAPTURE(text);
          if (!parseGraph(text).ok()) ++errors;
        }
      }
    }
  }
  CHECK(errors > 50);
}
