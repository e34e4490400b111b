// grid_sample and affine_grid: values against PyTorch for every mode, padding mode and
// align_corners, shape inference, and verifier errors.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

using testing::requireParseError;
using testing::runOutputs;

namespace {

// Shared inputs of the PyTorch cases, built by /usr/bin/python3 (torch 1.13, numpy 1.24):
//   x = np.round(np.random.default_rng(3).uniform(-2, 2, size=(1,2,3,4)), 2)
//   grid = 12 (x, y) points, 7 of them outside [-1,1] on some axis; (-0.5, 0.5) and (0, -0.5) land
//   exactly half-way between pixels, which checks nearest's round-half-to-even.
const std::vector<double> kSampledX = {-1.66, -1.05, 1.21,  0.33,  -1.62, -0.27, -0.08, -1.36,
                                       0.94,  -1.55, -0.44, 0.07,  -0.28, 0.35,  0.95,  1.83,
                                       -0.86, 0.59,  0.78,  -0.83, -1.99, 1.89,  -0.81, -0.74};
const std::vector<double> kGrid = {-0.5, 0.5,  0.0,   -0.5, 0.3,  0.1,  -1.0, -1.0, 1.0,  1.0,  -1.7, 0.4,
                                   1.3,  -1.2, 2.6,   2.2,  -3.1, 0.75, 0.62, -2.9, 0.95, 0.05, -0.21, 1.6};

struct GridSampleCase {
  const char* mode;
  const char* padding;
  int alignCorners;
  std::vector<double> expected;  // [1,2,3,4]
};

// torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode, padding_mode,
// align_corners) in float64, printed with "%.12g".
const GridSampleCase kCases[] = {
    {"bilinear", "zeros", 0,
     {-0.465, 0.01625, -0.23515, -0.415, 0.0175, 0, 0, 0, 0, 0, -0.75165, 0, -0.07125, 0.65875,
      0.4057, -0.07, -0.185, 0, 0, 0, 0, 0, -0.49395, 0}},
    {"bilinear", "zeros", 1,
     {-0.7675, -0.0475, -0.1301, -1.66, 0.07, 0, 0.1452, 0, 0, 0, -1.1992125, -0.53786, 0.57375,
      0.6675, 0.62595, -0.28, -0.74, 0, 0.8052, 0, 0, 0, -0.71105, 0.5562}},
    {"bilinear", "border", 0,
     {-0.465, 0.01625, -0.23515, -1.66, 0.07, -0.084, 0.33, 0.07, 0.94, 0.5588, -1.25275, -1.4612,
      -0.07125, 0.65875, 0.4057, -0.28, -0.74, -1.538, 1.83, -0.74, -1.99, 1.6012, -0.82325, 1.674}},
    {"bilinear", "border", 1,
     {-0.7675, -0.0475, -0.1301, -1.66, 0.07, -0.596, 0.33, 0.07, 0.3, 0.8316, -1.1992125, -1.34465,
      0.57375, 0.6675, 0.62595, -0.28, -0.74, -1.312, 1.83, -0.74, -1.7075, 1.3284, -0.71105, 1.3905}},
    {"bilinear", "reflection", 0,
     {-0.465, 0.01625, -0.23515, -1.66, 0.07, -0.9426, 0.418, -1.2936, 0.07, -0.0626, -1.25275,
      -0.97864, -0.07125, 0.65875, 0.4057, -0.28, -0.74, 1.0792, 1.742, -0.3248, -0.74, -0.7582,
      -0.82325, 1.24648}},
    {"bilinear", "reflection", 1,
     {-0.7675, -0.0475, -0.1301, -1.66, 0.07, -0.7541, 0.424, -0.9068, -0.296875, -0.26167,
      -1.1992125, -0.67877, 0.57375, 0.6675, 0.62595, -0.28, -0.74, 1.0617, 1.1261, 0.0276, -0.71,
      -0.69314, -0.71105, 0.93129}},
    {"nearest", "zeros", 0,
     {0.94, 1.21, -0.08, -1.66, 0, 0, 0, 0, 0, 0, -1.36, 0, -1.99, 0.95, 0.78, -0.28, 0, 0, 0, 0, 0,
      0, -0.83, 0}},
    {"nearest", "zeros", 1,
     {-1.55, 1.21, -0.08, -1.66, 0.07, 0, 0.33, 0, 0, 0, -1.36, 0, 1.89, 0.95, 0.78, -0.28, -0.74, 0,
      1.83, 0, 0, 0, -0.83, 0}},
    {"nearest", "border", 0,
     {0.94, 1.21, -0.08, -1.66, 0.07, 0.94, 0.33, 0.07, 0.94, 0.33, -1.36, -1.55, -1.99, 0.95, 0.78,
      -0.28, -0.74, -1.99, 1.83, -0.74, -1.99, 1.83, -0.83, 1.89}},
    {"nearest", "border", 1,
     {-1.55, 1.21, -0.08, -1.66, 0.07, -1.62, 0.33, 0.07, 0.94, 1.21, -1.36, -1.55, 1.89, 0.95, 0.78,
      -0.28, -0.74, -0.86, 1.83, -0.74, -1.99, 0.95, -0.83, 1.89}},
    {"nearest", "reflection", 0,
     {0.94, 1.21, -0.08, -1.66, 0.07, -1.55, 0.33, -1.62, 0.07, 0.07, -1.36, -1.55, -1.99, 0.95, 0.78,
      -0.28, -0.74, 1.89, 1.83, -0.86, -0.74, -0.74, -0.83, 1.89}},
    {"nearest", "reflection", 1,
     {-1.55, 1.21, -0.08, -1.66, 0.07, -0.27, 0.33, -0.27, 0.07, -0.44, -1.36, -0.27, 1.89, 0.95,
      0.78, -0.28, -0.74, 0.59, 1.83, 0.59, -0.74, -0.81, -0.83, 0.59}},
    {"bicubic", "zeros", 0,
     {-0.513251953125, 0.256682128906, -0.324858826562, -0.43896484375, 0.124169921875, -0.00034506,
      -0.00599238, 0, 0, 0, -0.957651548906, 0.17356253184, -0.0448681640625, 0.773505859375,
      0.398288679297, -0.06513671875, -0.162734375, 0.01220562, -0.02344464, 0, 0, 0, -0.760618448438,
      -0.206546112}},
    {"bicubic", "zeros", 1,
     {-0.883662109375, 0.292578125, -0.155691258125, -1.66, 0.07, 0.018773805, 0.171364545, 0, 0,
      -0.00743875118437, -1.35208319835, -0.734785550127, 0.840615234375, 0.8649609375,
      0.695370266719, -0.28, -0.74, 0.05091318375, 1.079149005, 0, 0, -0.0103165039969,
      -0.863646304535, 0.776206948399}},
    {"bicubic", "border", 0,
     {-0.513284912109, 0.233511962891, -0.311246732266, -1.71443359375, 0.267607421875, -0.0504,
      0.37056, 0.07, 1.12375, 0.62327324, -1.48383930813, -1.60706048, 0.117857666016, 0.707423095703,
      0.419233498984, -0.27748046875, -0.710234375, -1.59332, 1.89384, -0.74, -2.07110839844,
      1.64402824, -1.12848933547, 1.912464}},
    {"bicubic", "border", 1,
     {-0.771539306641, 0.271982421875, -0.15228026375, -1.66, 0.07, -0.6224, 0.4063179, 0.07,
      0.36140625, 1.075952445, -1.28666442843, -1.72081540281, 0.777711181641, 0.806220703125,
      0.700090636641, -0.28, -0.74, -1.36108, 2.19960699, -0.74, -1.754375, 1.38371907,
      -0.818128977584, 1.88437872393}},
    {"bicubic", "reflection", 0,
     {-0.513284912109, 0.233511962891, -0.311246732266, -1.755859375, 0.4966796875, -0.9562554,
      0.6179557, -1.507708125, 0.290756347656, 0.16834563115, -1.56961939375, -1.00535569408,
      0.117857666016, 0.707423095703, 0.419233498984, -0.260546875, -0.6509375, 1.25488975, 2.0569205,
      -0.337060653125, -0.69988671875, -0.928937375087, -1.24574910078, 1.45460046592}},
    {"bicubic", "reflection", 1,
     {-0.788817138672, 0.285869140625, -0.155409481484, -1.66, 0.07, -0.76973975375, 0.6599112175,
      -1.08130784, -0.162254072266, -0.09341387479, -1.34301926224, -0.732283980699, 0.772144775391,
      0.77384765625, 0.689770454063, -0.28, -0.74, 1.25925804, 1.4493486275, -0.12639072,
      -0.868074493408, -1.04536743136, -0.89638978287, 1.29100156295}},
};

}  // namespace

TEST_CASE("grid_sample matches PyTorch for every mode, padding mode and align_corners") {
  TensorMap feeds{{"x", Tensor::of<double>({1, 2, 3, 4}, kSampledX)}, {"g", Tensor::of<double>({1, 3, 4, 2}, kGrid)}};
  CHECK(std::size(kCases) == 18);
  for (const GridSampleCase& c : kCases) {
    std::string mode = c.mode, padding = c.padding;
    CAPTURE(mode);
    CAPTURE(padding);
    CAPTURE(c.alignCorners);
    std::string text = fmt::format(R"(graph @t(%x: f64[1,2,3,4], %g: f64[1,3,4,2]) {{
  %0 = grid_sample(%x, %g) {{align_corners = {}, mode = "{}", padding_mode = "{}"}} : f64[1,2,3,4]
  return r = %0
}})",
                                   c.alignCorners, c.mode, c.padding);
    auto out = runOutputs(text, feeds);
    CHECK(testing::compareTensors(out[0], Tensor::of<double>({1, 2, 3, 4}, c.expected), 1e-9) == "");
  }
}

TEST_CASE("grid_sample defaults to bilinear, zeros, align_corners 0 and rounds once per dtype") {
  TensorMap feeds{{"x", Tensor::of<double>({1, 2, 3, 4}, kSampledX)}, {"g", Tensor::of<double>({1, 3, 4, 2}, kGrid)}};
  auto out = runOutputs(R"(graph @t(%x: f64[1,2,3,4], %g: f64[1,3,4,2]) {
  %0 = grid_sample(%x, %g) : f64[1,2,3,4]
  return r = %0
})",
                        feeds);
  CHECK(testing::compareTensors(out[0], Tensor::of<double>({1, 2, 3, 4}, kCases[0].expected), 1e-9) == "");

  // The f32 result is the f64 one rounded (inputs differ only by their own rounding to f32).
  Tensor x32 = Tensor::fromDoubles({DType::f32, {1, 2, 3, 4}}, kSampledX);
  Tensor g32 = Tensor::fromDoubles({DType::f32, {1, 3, 4, 2}}, kGrid);
  auto out32 = runOutputs(R"(graph @t(%x: f32[1,2,3,4], %g: f32[1,3,4,2]) {
  %0 = grid_sample(%x, %g) {mode = "bicubic", padding_mode = "reflection"} : f32[1,2,3,4]
  return r = %0
})",
                          {{"x", x32}, {"g", g32}});
  Tensor expected = Tensor::fromDoubles({DType::f32, {1, 2, 3, 4}}, kCases[16].expected);
  CHECK(std::string(kCases[16].mode) == "bicubic");
  CHECK(testing::compareTensors(out32[0], expected, 1e-5) == "");
}

TEST_CASE("affine_grid matches PyTorch for both align_corners") {
  // theta and the expected grids from torch.nn.functional.affine_grid(torch.tensor(theta, float64),
  // [2, 1, 3, 4], align_corners) on /usr/bin/python3 (torch 1.13), printed with "%.12g".
  Tensor theta =
      Tensor::of<double>({2, 2, 3}, {0.8, -0.3, 0.1, 0.25, 1.2, -0.4, -1.0, 0.5, 0.3, 0.0, 0.7, 0.9});
  const std::vector<double> expected[2] = {
      {-0.3, -1.3875, 0.1, -1.2625, 0.5, -1.1375, 0.9, -1.0125, -0.5, -0.5875, -0.1, -0.4625, 0.3, -0.3375,
       0.7, -0.2125, -0.7, 0.2125, -0.3, 0.3375, 0.1, 0.4625, 0.5, 0.5875, 0.716666666667, 0.433333333333,
       0.216666666667, 0.433333333333, -0.283333333333, 0.433333333333, -0.783333333333, 0.433333333333, 1.05,
       0.9, 0.55, 0.9, 0.05, 0.9, -0.45, 0.9, 1.38333333333, 1.36666666667, 0.883333333333, 1.36666666667,
       0.383333333333, 1.36666666667, -0.116666666667, 1.36666666667},
      {-0.4, -1.85, 0.133333333333, -1.68333333333, 0.666666666667, -1.51666666667, 1.2, -1.35, -0.7, -0.65,
       -0.166666666667, -0.483333333333, 0.366666666667, -0.316666666667, 0.9, -0.15, -1, 0.55,
       -0.466666666667, 0.716666666667, 0.0666666666667, 0.883333333333, 0.6, 1.05, 0.8, 0.2, 0.133333333333,
       0.2, -0.533333333333, 0.2, -1.2, 0.2, 1.3, 0.9, 0.633333333333, 0.9, -0.0333333333333, 0.9, -0.7, 0.9,
       1.8, 1.6, 1.13333333333, 1.6, 0.466666666667, 1.6, -0.2, 1.6}};
  for (int align = 0; align <= 1; ++align) {
    CAPTURE(align);
    auto out = runOutputs(fmt::format(R"(graph @t(%theta: f64[2,2,3]) {{
  %0 = affine_grid(%theta) {{align_corners = {}, size = [2, 1, 3, 4]}} : f64[2,3,4,2]
  return r = %0
}})",
                                      align),
                          {{"theta", theta}});
    CHECK(testing::compareTensors(out[0], Tensor::of<double>({2, 3, 4, 2}, expected[align]), 1e-10) == "");
  }
  // A single row sits at the center, y = 0 (PyTorch: affine_grid(theta[:1], [1,1,1,3])).
  auto out = runOutputs(R"(graph @t(%theta: f64[1,2,3]) {
  %0 = affine_grid(%theta) {size = [1, 1, 1, 3]} : f64[1,1,3,2]
  return r = %0
})",
                        {{"theta", Tensor::of<double>({1, 2, 3}, {0.8, -0.3, 0.1, 0.25, 1.2, -0.4})}});
  std::vector<double> single = {-0.433333333333, -0.566666666667, 0.1, -0.4, 0.633333333333, -0.233333333333};
  CHECK(testing::compareTensors(out[0], Tensor::of<double>({1, 1, 3, 2}, single), 1e-10) == "");
}

TEST_CASE("the identity affine grid samples every pixel back exactly") {
  // Without align_corners the base grid hits pixel centers, so bilinear sampling reproduces x.
  Tensor x = testing::randomTensor({DType::f64, {2, 3, 5, 7}}, testing::testSeed());
  Tensor theta = Tensor::of<double>({2, 2, 3}, {1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0});
  for (std::string padding : {"zeros", "border", "reflection"}) {
    CAPTURE(padding);
    auto out = runOutputs(fmt::format(R"(graph @t(%x: f64[2,3,5,7], %theta: f64[2,2,3]) {{
  %0 = affine_grid(%theta) {{size = [2, 3, 5, 7]}} : f64[2,5,7,2]
  %1 = grid_sample(%x, %0) {{padding_mode = "{}"}} : f64[2,3,5,7]
  %2 = grid_sample(%x, %0) {{mode = "nearest", padding_mode = "{}"}} : f64[2,3,5,7]
  return r = %1, s = %2
}})",
                                      padding, padding),
                          {{"x", x}, {"theta", theta}});
    CHECK(testing::compareTensors(out[0], x, 1e-12) == "");
    CHECK(testing::compareTensors(out[1], x, 1e-12) == "");
  }
}

TEST_CASE("grid_sample and affine_grid reject bad operands and attributes") {
  const std::pair<const char*, const char*> cases[] = {
      {"grid_sample(%x, %g) {mode = \"linear\"} : f32[1,2,2,3]",
       "grid_sample %0: attribute 'mode' must be \"bilinear\", \"nearest\" or \"bicubic\", got \"linear\""},
      {"grid_sample(%x, %g) {padding_mode = \"wrap\"} : f32[1,2,2,3]",
       "grid_sample %0: attribute 'padding_mode' must be \"zeros\", \"border\" or \"reflection\", got \"wrap\""},
      {"grid_sample(%x, %g) {align_corners = 2} : f32[1,2,2,3]",
       "grid_sample %0: attribute 'align_corners' must be 0 or 1, got 2"},
      {"grid_sample(%x, %bad) : f32[1,2,2,3]",
       "grid_sample %0: operand #1 (grid) must have shape [N,Ho,Wo,2], got f32[1,2,3,3]"},
      {"grid_sample(%x, %g2) : f32[1,2,2,3]",
       "grid_sample %0: operand #1 (grid) has batch 2 but operand #0 (input) has batch 1"},
      {"grid_sample(%t, %g) : f32[1,2,2,3]", "grid_sample %0: operand #0 (input) must have rank 4, got f32[1,2,3]"},
      {"grid_sample(%e, %g) : f32[1,2,2,3]",
       "grid_sample %0: operand #0 (input) must have non-empty spatial dims, got f32[1,2,0,4]"},
      {"grid_sample(%x, %gd) : f32[1,2,2,3]",
       "grid_sample %0: operand #0 (input) is f32[1,2,3,4] but operand #1 (grid) is f64[1,2,3,2]"},
      {"grid_sample(%i, %g) : f32[1,2,2,3]", "grid_sample %0: operand #0 (input) must be one of f16,bf16,f32,f64"},
      {"affine_grid(%t) {size = [1, 1, 3]} : f32[1,3,4,2]",
       "affine_grid %0: attribute 'size' must have 4 entries, got 3"},
      {"affine_grid(%t) {size = [1, 1, 0, 4]} : f32[1,3,4,2]",
       "affine_grid %0: attribute 'size' must be positive, got [1, 1, 0, 4]"},
      {"affine_grid(%t) {size = [1, 1, 4611686018427387904, 4611686018427387904]} : f32[1,3,4,2]",
       "gives a result that is too large"},
      {"affine_grid(%t) {size = [3, 1, 3, 4]} : f32[1,3,4,2]",
       "affine_grid %0: attribute 'size' has batch 3 but operand #0 (theta) has batch 1"},
      {"affine_grid(%x) {size = [1, 1, 3, 4]} : f32[1,3,4,2]",
       "affine_grid %0: operand #0 (theta) must have shape [N,2,3], got f32[1,2,3,4]"},
      {"affine_grid(%t) {align_corners = -1, size = [1, 1, 3, 4]} : f32[1,3,4,2]",
       "affine_grid %0: attribute 'align_corners' must be 0 or 1, got -1"},
  };
  for (const auto& [nodeText, message] : cases) {
    std::string node = nodeText;
    CAPTURE(node);
    std::string text = fmt::format(R"(graph @t(%x: f32[1,2,3,4], %g: f32[1,2,3,2], %bad: f32[1,2,3,3],
    %g2: f32[2,2,3,2], %e: f32[1,2,0,4], %gd: f64[1,2,3,2], %i: i32[1,2,3,4], %t: f32[1,2,3]) {{
  %0 = {}
  return r = %0
}})",
                                   node);
    std::string error = requireParseError(text);
    CHECK_MESSAGE(error.find(message) != std::string::npos, error);
  }
}

TEST_CASE("grid_sample and affine_grid infer their result shapes") {
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[2,3,5,6], %g: f32[2,4,7,2], %t: bf16[2,2,3]) {
  %0 = grid_sample(%x, %g) {mode = "nearest"} : f32[2,3,4,7]
  %1 = affine_grid(%t) {size = [2, 9, 8, 1]} : bf16[2,8,1,2]
  return r = %0, s = %1
})");
  CHECK(g.outputs()[0].value->type().toString() == "f32[2,3,4,7]");
  CHECK(g.outputs()[1].value->type().toString() == "bf16[2,8,1,2]");
}
