// The 2-D window convolution and pooling share (ir/window2d.h): attributes read the way the ops spell them,
// output extents (floor and ceil mode, PyTorch's rule for the last window), windows that do not fit, and the
// outputs one kernel tap touches.
#include "ir/window2d.h"

#include <doctest/doctest.h>

#include <vector>

using namespace smelt;

TEST_CASE("window2d: attributes as the ops spell them, with their defaults") {
  using Ints = std::vector<int64_t>;
  AttrMap attrs{{"stride", Ints{2, 3}}, {"padding", Ints{1, 2, 3, 4}}, {"dilation", Ints{2, 1}}};
  Window2d w = Window2d::fromAttrs(attrs, 3, 5).value();
  CHECK(w.kernel[0] == 3);
  CHECK(w.kernel[1] == 5);
  CHECK(w.stride[1] == 3);
  CHECK(w.padBegin[1] == 2);
  CHECK(w.padEnd[0] == 3);
  CHECK(w.dilation[0] == 2);
  CHECK_FALSE(w.ceilMode);
  Window2d pool =
      Window2d::fromAttrs(AttrMap{{"ceil_mode", int64_t{1}}}, 2, 2, /*strideDefaultsToKernel=*/true).value();
  CHECK(pool.stride[0] == 2);
  CHECK(pool.ceilMode);
  CHECK(Window2d::fromAttrs(AttrMap{}, 2, 2).value().stride[0] == 1);
  CHECK_FALSE(Window2d::fromAttrs(AttrMap{{"padding", Ints{1, 1}}}, 3, 3).has_value());
  CHECK_FALSE(Window2d::fromAttrs(AttrMap{{"stride", Ints{1, 1, 1}}}, 3, 3).has_value());
}

TEST_CASE("window2d: output extents, floor and ceil mode, and windows that do not fit") {
  Window2d w;
  w.kernel[0] = 3;
  w.padBegin[0] = w.padEnd[0] = 1;
  CHECK(w.outputSize(0, 8) == 8);  // 3x3, padding 1: same size
  w.stride[0] = 2;
  CHECK(w.outputSize(0, 8) == 4);
  w.dilation[0] = 2;  // spans 5 rows
  CHECK(w.span(0) == 5);
  CHECK(w.outputSize(0, 8) == 3);
  CHECK_FALSE(w.outputSize(0, 2).has_value());  // 2 + 2 padding < 5
  // ceil mode (PyTorch's max_pool2d): in 5, kernel 2, stride 2, padding 1 gives ceil(5/2) + 1 = 4, but the last
  // window would start in the bottom padding, so 3; in 4, kernel 3, stride 2, padding 1 keeps ceil's 3.
  Window2d pool;
  pool.kernel[1] = 2;
  pool.stride[1] = 2;
  pool.padBegin[1] = pool.padEnd[1] = 1;
  pool.ceilMode = true;
  CHECK(pool.outputSize(1, 5) == 3);
  pool.kernel[1] = 3;
  CHECK(pool.outputSize(1, 4) == 3);
  pool.ceilMode = false;
  CHECK(pool.outputSize(1, 4) == 2);
  // Absurd attributes do not overflow: a dilation of 2^40 over a kernel of 2^40 is a window that does not fit.
  Window2d huge;
  huge.kernel[0] = int64_t{1} << 40;
  huge.dilation[0] = int64_t{1} << 40;
  CHECK_FALSE(huge.outputSize(0, 1000).has_value());
}

TEST_CASE("window2d: the outputs one kernel tap touches") {
  // o * stride + offset in [0, size) for o in [0, count).
  CHECK(validRange(-1, 1, 4, 4) == std::pair<int64_t, int64_t>{1, 4});
  CHECK(validRange(1, 1, 4, 4) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(validRange(-3, 2, 8, 4) == std::pair<int64_t, int64_t>{2, 4});
  CHECK(validRange(9, 1, 4, 4) == std::pair<int64_t, int64_t>{0, 0});
}
