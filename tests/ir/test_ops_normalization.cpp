// batch_norm, batch_norm_train and layer_norm: verifier messages and reference values against PyTorch
// and ONNX.
//
// Expected values were computed in float64 on Debian's /usr/bin/python3 with torch 1.13 (F.batch_norm,
// F.layer_norm) and, for the running statistics of batch_norm_train, with ONNX's own training-mode
// reference `_batchnorm_training_mode` from onnx/backend/test/case/node/batchnorm.py (PyTorch updates
// running stats with the unbiased variance and the opposite momentum convention, so it does not apply).
// Inputs are multiples of 0.25 in [-2, 2] (torch.randint(-8, 9, shape) / 4, seed 777); outputs are
// printed by Python's repr, so they round-trip exactly. The call is given next to each expected value.
#include <doctest/doctest.h>

#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

using testing::checkClose;
using testing::f64;
using testing::runOutputs;

TEST_CASE("batch_norm (inference) matches PyTorch in eval mode") {
  TensorMap feeds = {{"x", f64({2, 3, 2, 2}, {-1.5, 1.5,   1,    0,    0.25, 0.5, -1.75, -1.75, 1.75, 1.5,  0.5,   1.5,
                                              0.25, -1.25, 0.25, -0.5, 1,    0,   0.75,  -1,    2,    -1.5, -0.25, 1})},
                     {"s", f64({3}, {2, 2, 1.75})},
                     {"b", f64({3}, {1, 2, 1.75})},
                     {"m", f64({3}, {0.75, 1.5, 0.25})},
                     {"v", f64({3}, {0.25, 1.5, 0.75})}};
  auto out = runOutputs(R"(graph @t(%x: f64[2,3,2,2], %s: f64[3], %b: f64[3], %m: f64[3], %v: f64[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) {epsilon = 0.001} : f64[2,3,2,2]
  return y = %0
})",
                        feeds);
  // F.batch_norm(x, m, v, s, b, training=False, eps=1e-3)
  checkClose(out[0],
             f64({2, 3, 2, 2}, {-7.982053820627741,    3.994017940209247,   1.998005980069749,   -1.9940179402092473,
                                -0.040561378519890334, 0.36755089718408773, -3.305459584151715,  -3.305459584151715,
                                4.779070205786679,     4.274225171488899,   2.25484503429778,    4.274225171488899,
                                -0.9960119601394982,   -6.984047840557992,  -0.9960119601394982, -3.9900299003487456,
                                1.1837754485920438,    -0.4486736542238684, 0.7756631728880659,  -2.081122757039781,
                                5.283915240084459,     -1.7839152400844587, 0.7403099314044405,  3.2645351028933396}));
}

TEST_CASE("batch_norm_train matches PyTorch's training-mode output and ONNX's running statistics") {
  TensorMap feeds = {{"x", f64({3, 2, 2, 2}, {-1.25, -1.25, 1.25, 0.75, -1.5, 2,  -0.75, 0,  0.75, 2, 0.75, 1,
                                              0.75,  -1.5,  -1,   1.75, -0.5, -1, 2,     -2, -2,   2, -2,   1.5})},
                     {"s", f64({2}, {0.25, 1.25})},
                     {"b", f64({2}, {1.25, 1})},
                     {"m", f64({2}, {-0.25, -1})},
                     {"v", f64({2}, {0.5, 2})}};
  auto out = runOutputs(R"(graph @t(%x: f64[3,2,2,2], %s: f64[2], %b: f64[2], %m: f64[2], %v: f64[2]) {
  %y, %rm, %rv = batch_norm_train(%x, %s, %b, %m, %v) {momentum = 0.8} : f64[3,2,2,2], f64[2], f64[2]
  return y = %y, rm = %rm, rv = %rv
})",
                        feeds);
  // F.batch_norm(x, None, None, s, b, training=True, eps=1e-5)
  checkClose(out[0],
             f64({3, 2, 2, 2}, {0.9683283743942099,   0.9683283743942099,   1.4511940182898502,  1.3546208895107221,
                                -0.17863255313757403, 2.6910814892843455,   0.43630617023855156, 1.0512448936146772,
                                1.3546208895107221,   1.5960537114585422,   1.3546208895107221,  1.4029074539002861,
                                1.6661836169908029,   -0.17863255313757403, 0.23132659577984305, 2.486101914825637,
                                1.113188067562902,    1.016614938783774,    1.5960537114585422,  0.8234686812255179,
                                -0.5885917020549911,  2.6910814892843455,   -0.5885917020549911, 2.2811223403669283}));
  // _batchnorm_training_mode(x, s, b, m, v, momentum=0.8): m*0.8 + mean*0.2, v*0.8 + biased_var*0.2
  checkClose(out[1], f64({2}, {-0.15833333333333335, -0.8125}));
  checkClose(out[2], f64({2}, {0.7350694444444443, 2.06484375}));
}

TEST_CASE("batch_norm_train normalizes rank-2 and rank-3 inputs per channel") {
  // Property: for any input, each channel of y (with scale 1, bias 0) has mean 0 and biased variance
  // var/(var+eps); checked on fresh random data for [N,C] and [N,C,L].
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (Shape shape : {Shape{5, 3}, Shape{4, 3, 6}}) {
    Tensor x = testing::randomTensor(TensorType{DType::f64, shape}, seed);
    std::string type = TensorType{DType::f64, shape}.toString();
    std::string text = "graph @t(%x: " + type + ", %s: f64[3], %b: f64[3], %m: f64[3], %v: f64[3]) {\n" +
                       "  %y, %rm, %rv = batch_norm_train(%x, %s, %b, %m, %v) {epsilon = 0} : " + type +
                       ", f64[3], f64[3]\n  return y = %y\n}";
    auto out = runOutputs(text, {{"x", x},
                                 {"s", f64({3}, {1, 1, 1})},
                                 {"b", f64({3}, {0, 0, 0})},
                                 {"m", f64({3}, {0, 0, 0})},
                                 {"v", f64({3}, {1, 1, 1})}});
    int64_t inner = shape.size() == 3 ? shape[2] : 1;
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, squares = 0, count = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (i / inner % 3 != c) continue;
        double y = out[0].getDouble(i);
        sum += y;
        squares += y * y;
        count += 1;
      }
      CHECK(sum / count == doctest::Approx(0.0).epsilon(1e-12).scale(1.0));
      CHECK(squares / count == doctest::Approx(1.0).epsilon(1e-12));
    }
  }
}

TEST_CASE("layer_norm over the last two dims matches PyTorch") {
  Tensor x = f64({2, 3, 4}, {1.75, -0.5, -0.75, 0.5, -1.25, 1,  -1.25, 0, -1, -0.5, 1.75, 0.25,
                             1,    0,    0,     0.5, 1,     -1, 1,     1, 1,  -1.5, 1.25, 0});
  Tensor s = f64({3, 4}, {1, 2, -0.75, -0.25, 0.75, 1, 1.75, -1, 1, 0.25, 0.25, -0.75});
  Tensor b = f64({3, 4}, {-2, 0, -2, -1.5, -2, 1.5, 2, 1.5, -1, -1, 1.25, 0.25});
  Tensor s4 = f64({4}, {0.25, 0, -1.25, -0.75});
  auto out = runOutputs(R"(graph @t(%x: f64[2,3,4], %s: f64[3,4], %b: f64[3,4], %s4: f64[4]) {
  %0 = layer_norm(%x, %s, %b) {axis = -2} : f64[2,3,4]
  %1 = layer_norm(%x, %s4) {axis = 1} : f64[2,3,4]
  %2 = layer_norm(%x) {epsilon = 0.01} : f64[2,3,4]
  return y = %0, y4 = %1, plain = %2
})",
                        {{"x", x}, {"s", s}, {"b", b}, {"s4", s4}});
  // F.layer_norm(x, (3, 4), s, b, eps=1e-5)
  checkClose(out[0],
             f64({2, 3, 4}, {-0.2938747345238124,  -0.97492872312925,    -1.451602593239797,  -1.6218660903911561,
                             -2.9139956779336718,  2.47492872312925,     -0.1326565818452345, 1.5,
                             -1.97492872312925,    -1.1218660903911561,  1.676531316369047,   0.06720086441326562,
                             -1.2352141095148352,  -0.8387974282740518,  -1.6854509643972306, -1.5431733970435173,
                             -1.4264105821361264,  -0.10358331875921656, 3.3383753083490384,  0.7352141095148352,
                             -0.23521410951483523, -1.548918905267578,   1.5152080104101782,  0.5645490356027694}));
  // F.layer_norm(x, (3, 4), s4.expand(3, 4), None, eps=1e-5): a [4] scale broadcasts over [3, 4]
  checkClose(out[1], f64({2, 3, 4}, {0.4265313163690469,   0, 0.913995677933672,   -0.36559827117346877,
                                     -0.30466522597789064, 0, 1.5233261298894532,  0,
                                     -0.2437321807823125,  0, -2.1326565818452345, -0.18279913558673438,
                                     0.1911964726212912,   0, 0.5242483926712824,  -0.12952019113055208,
                                     0.1911964726212912,   0, -0.9559823631064559, -0.5735894178638736,
                                     0.1911964726212912,   0, -1.3260400520508906, 0.3145490356027694}));
  // F.layer_norm(x, (4,), eps=1e-2)
  checkClose(out[2],
             f64({2, 3, 4}, {1.516196087157807,   -0.7580980435789035, -1.010797391438538,  0.2526993478596345,
                             -0.9220108971042063, 1.4488742668780386,  -0.9220108971042063, 0.39514752733037417,
                             -1.0784825640736682, -0.5991569800409267, 1.5578081481064097,  0.1198313960081854,
                             1.465525954401373,   -0.8793155726408237, -0.8793155726408237, 0.29310519088027465,
                             0.5735393346764045,  -1.7206180040292134, 0.5735393346764045,  0.5735393346764045,
                             0.7486114838378563,  -1.5548084664324708, 0.978953478864889,   -0.17275649627027453}));
}

TEST_CASE("normalization verifier errors") {
  CHECK_ERROR(R"(graph @t(%x: f32[2,3,4], %s: f32[4], %b: f32[3], %m: f32[3], %v: f32[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) : f32[2,3,4]
  return y = %0
})",
              "batch_norm %0: operand #1 (scale) must be [3] (one value per channel of the input), got f32[4]");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3,4], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3,1]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) : f32[2,3,4]
  return y = %0
})",
              "batch_norm %0: operand #4 (var) must be [3] (one value per channel of the input), got f32[3,1]");
  CHECK_ERROR(R"(graph @t(%x: f32[3], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) : f32[3]
  return y = %0
})",
              "batch_norm %0: input must have rank >= 2 ([N, C, ...]), got f32[3]");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3], %s: f32[3], %b: f64[3], %m: f32[3], %v: f32[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) : f32[2,3]
  return y = %0
})",
              "batch_norm %0: operand #0 (input) is f32[2,3] but operand #2 (bias) is f64[3]; they must have the same "
              "dtype");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) {epsilon = -0.5} : f32[2,3]
  return y = %0
})",
              "batch_norm %0: attribute 'epsilon' must be a non-negative finite number, got -0.5");
  CHECK_ERROR(R"(graph @t(%x: i32[2,3], %s: i32[3], %b: i32[3], %m: i32[3], %v: i32[3]) {
  %0 = batch_norm(%x, %s, %b, %m, %v) : i32[2,3]
  return y = %0
})",
              "batch_norm %0: operand #0 (input) must be one of f16,bf16,f32,f64, got i32");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3], %s: f32[3], %b: f32[3], %m: f32[2], %v: f32[3]) {
  %y, %rm, %rv = batch_norm_train(%x, %s, %b, %m, %v) : f32[2,3], f32[3], f32[3]
  return y = %y
})",
              "batch_norm_train %0: operand #3 (running_mean) must be [3] (one value per channel of the input), got "
              "f32[2]");
  CHECK_ERROR(R"(graph @t(%x: f32[0,3], %s: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]) {
  %y, %rm, %rv = batch_norm_train(%x, %s, %b, %m, %v) : f32[0,3], f32[3], f32[3]
  return y = %y
})",
              "batch_norm_train %0: input f32[0,3] has no elements per channel to take batch statistics of");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3,4]) {
  %0 = layer_norm(%x) {axis = 3} : f32[2,3,4]
  return y = %0
})",
              "layer_norm %0: axis 3 is out of range for rank 3");
  CHECK_ERROR(R"(graph @t(%x: f32[2,3,4]) {
  %0 = layer_norm(%x) {axis = -4} : f32[2,3,4]
  return y = %0
})",
              "layer_norm %0: axis -4 is out of range for rank 3");
  CHECK_ERROR(
      R"(graph @t(%x: f32[2,3,4], %s: f32[3]) {
  %0 = layer_norm(%x, %s) {axis = 1} : f32[2,3,4]
  return y = %0
})",
      "layer_norm %0: operand #1 (scale) must broadcast to [3,4] (the normalized dims of the input), got f32[3]");
  CHECK_ERROR(
      R"(graph @t(%x: f32[2,3,4], %s: f32[4], %b: f32[2,4]) {
  %0 = layer_norm(%x, %s, %b) : f32[2,3,4]
  return y = %0
})",
      "layer_norm %0: operand #2 (bias) must broadcast to [4] (the normalized dims of the input), got f32[2,4]");
  CHECK_ERROR(
      R"(graph @t(%x: f32[2,3,4], %s: f16[4]) {
  %0 = layer_norm(%x, %s) : f32[2,3,4]
  return y = %0
})",
      "layer_norm %0: operand #0 (input) is f32[2,3,4] but operand #1 (scale) is f16[4]; they must have the same "
      "dtype");
}
