// Reductions (reduce_*), softmax and log_softmax: shape inference, values against numpy/PyTorch,
// exact integer reductions, stability on large inputs and verifier errors.
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace smelt;

using testing::verifyErrorOrEmpty;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A fixed input, x = np.round(np.random.default_rng(7).uniform(-3, 3, size=(2, 3, 4)), 2).
const std::vector<double> kX = {0.75,  2.38,  1.65, -1.65, -1.2, 2.24,  -2.97, 1.93,  1.78, -0.19, -1.18, -1.33,
                                -1.47, -0.33, 0.03, 0.32,  2.97, 1.76,  0.73,  2.93,  -1.71, -2.04, 0.68,  -2.74};

/// Runs `%0 = op(%x) attrs : result` on x: f64[2,3,4] = kX (or `x` when given) and returns %0.
Tensor reduceX(std::string_view op, std::string_view attrs, std::string_view result, DType dtype = DType::f64) {
  std::string text = fmt::format("graph @t(%x: {}[2,3,4]) {{\n  %0 = {}(%x) {} : {}\n  return r = %0\n}}",
                                 dtypeName(dtype), op, attrs, result);
  return testing::runFirstOutput(text, {{"x", Tensor::fromDoubles(TensorType{dtype, {2, 3, 4}}, kX)}});
}

/// Parses and runs a graph with one input %x and returns its first output.
Tensor runOn(std::string_view text, const Tensor& x) { return testing::runFirstOutput(text, {{"x", x}}); }

std::string reduceError(std::string_view op, std::string_view attrs, std::string_view input = "f32[2,3,4]") {
  return verifyErrorOrEmpty(
      fmt::format("graph @t(%x: {}) {{\n  %0 = {}(%x) {} : f32[]\n  return r = %0\n}}", input, op, attrs));
}

void checkValues(const Tensor& actual, TensorType type, const std::vector<double>& expected, double tol) {
  REQUIRE(actual.type() == type);
  std::string diff = testing::compareTensors(actual, Tensor::fromDoubles(type, expected), tol);
  CHECK_MESSAGE(diff.empty(), diff);
}

TensorType f64(Shape shape) { return TensorType{DType::f64, std::move(shape)}; }

}  // namespace

TEST_CASE("every reduction of docs/ops.md is registered with its dtypes, attributes and fusion kind") {
  const std::pair<const char*, DTypeSet> expected[] = {
      {"reduce_sum", dtypes::kNumeric},    {"reduce_prod", dtypes::kNumeric},   {"reduce_mean", dtypes::kNumeric},
      {"reduce_max", dtypes::kNumeric},    {"reduce_min", dtypes::kNumeric},    {"reduce_variance", dtypes::kFloat},
      {"reduce_stddev", dtypes::kFloat},   {"reduce_logsumexp", dtypes::kFloat}, {"softmax", dtypes::kFloat},
      {"log_softmax", dtypes::kFloat},
  };
  for (const auto& entry : expected) {
    // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
    const auto& name = entry.first;
    const auto& set = entry.second;
    CAPTURE(name);
    const OpDef* op = OpRegistry::global().find(name);
    REQUIRE(op != nullptr);
    CHECK(op->dtypes.toString() == set.toString());
    CHECK(op->fusion == FusionKind::Reduction);
    bool isSoftmax = std::string_view(name).find("softmax") != std::string_view::npos;
    CHECK((op->findAttr("axes") != nullptr) == !isSoftmax);
    CHECK((op->findAttr("axis") != nullptr) == isSoftmax);
  }
  CHECK(OpRegistry::global().find("reduce_variance")->findAttr("correction") != nullptr);
}

TEST_CASE("reduction shape inference: axes, negative axes, keepdims, empty axes") {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::f32, {2, 3, 4}});
  auto infer = [&](std::string_view op, AttrMap attrs) {
    auto v = g.apply(op, {x}, std::move(attrs));
    REQUIRE_MESSAGE(v.ok(), (v.ok() ? "" : v.error().message()));
    return (*v)->type().shape;
  };
  CHECK(infer("reduce_sum", {{"axes", std::vector<int64_t>{0, -1}}}) == Shape{3});
  CHECK(infer("reduce_sum", {{"axes", std::vector<int64_t>{0, -1}}, {"keepdims", int64_t{1}}}) == Shape{1, 3, 1});
  CHECK(infer("reduce_max", {}) == Shape{});
  CHECK(infer("reduce_mean", {{"keepdims", int64_t{1}}}) == Shape{1, 1, 1});
  CHECK(infer("reduce_variance", {{"axes", std::vector<int64_t>{1}}}) == Shape{2, 4});
  CHECK(infer("softmax", {{"axis", int64_t{-2}}}) == Shape{2, 3, 4});
}

TEST_CASE("reductions over several axes match numpy") {
  // Expected values: numpy 1.24 on kX (x.sum(axis=(0, 2)) and so on), printed with repr().
  checkValues(reduceX("reduce_sum", "{axes = [0, 2]}", "f64[3]"), f64({3}), {1.68, 8.39, -6.73}, 1e-14);
  checkValues(reduceX("reduce_sum", "{axes = [1], keepdims = 1}", "f64[2,1,4]"), f64({2, 1, 4}),
              {1.33, 4.43, -2.5, -1.05, -0.21, -0.61, 1.44, 0.51}, 1e-14);
  checkValues(reduceX("reduce_mean", "", "f64[]"), f64({}), {0.13916666666666666}, 1e-14);
  checkValues(reduceX("reduce_prod", "{axes = [1, 2], keepdims = 1}", "f64[2,1,1]"), f64({2, 1, 1}),
              {39.74260983211047, -0.3384136394947829}, 1e-13);
  checkValues(reduceX("reduce_max", "{axes = [-1]}", "f64[2,3]"), f64({2, 3}), {2.38, 2.24, 1.78, 0.32, 2.97, 0.68}, 0);
  checkValues(reduceX("reduce_min", "{axes = [0]}", "f64[3,4]"), f64({3, 4}),
              {-1.47, -0.33, 0.03, -1.65, -1.2, 1.76, -2.97, 1.93, -1.71, -2.04, -1.18, -2.74}, 0);
  // f32 input: accumulated in double, rounded once.
  checkValues(reduceX("reduce_sum", "{axes = [0, 2]}", "f32[3]", DType::f32), TensorType{DType::f32, {3}},
              {1.68, 8.39, -6.73}, 1e-6);
}

TEST_CASE("variance and stddev with correction 0 and 1 match PyTorch") {
  // torch.var(x, dim=2) (correction 1) and torch.var(x, dim=2, unbiased=False) (correction 0).
  checkValues(reduceX("reduce_variance", "{axes = [2]}", "f64[2,3]"), f64({2, 3}),
              {3.074225, 6.334466666666667, 2.0514, 0.6158250000000002, 1.146091666666667, 2.2055583333333337}, 1e-14);
  checkValues(reduceX("reduce_variance", "{axes = [2], correction = 0}", "f64[2,3]"), f64({2, 3}),
              {2.30566875, 4.75085, 1.53855, 0.4618687500000001, 0.8595687500000002, 1.6541687500000004}, 1e-14);
  // torch.std(x, dim=(0, 1))
  checkValues(reduceX("reduce_stddev", "{axes = [0, 1]}", "f64[4]"), f64({4}),
              {1.942561882326189, 1.769414215684577, 1.657994772810417, 2.207378535729656}, 1e-14);
  // One element with correction 1: 0/0, as torch.var gives.
  Tensor one = runOn("graph @t(%x: f64[1]) {\n  %0 = reduce_variance(%x) : f64[]\n  return r = %0\n}",
                     Tensor::of<double>({1}, {3.0}));
  CHECK(std::isnan(one.getDouble(0)));
}

TEST_CASE("logsumexp is stable for large values") {
  // torch.logsumexp(x, dim=1)
  checkValues(reduceX("reduce_logsumexp", "{axes = [1]}", "f64[2,4]"), f64({2, 4}),
              {2.1220280561725953, 3.0457213989353003, 1.7165979456888019, 1.9941610401563385, 2.9908559472685163,
               1.896328147272151, 1.625195678898781, 3.004163064743889},
              1e-14);
  const char* text = "graph @t(%x: $T[2,2]) {\n  %0 = reduce_logsumexp(%x) {axes = [1]} : $T[2]\n  return r = %0\n}";
  for (DType dtype : {DType::f64, DType::f32}) {
    CAPTURE(dtypeName(dtype));
    std::string t = substituteDType(text, dtypeName(dtype));
    TensorType in{dtype, {2, 2}};
    Tensor out = runOn(t, Tensor::fromDoubles(in, std::vector<double>{1000, 1000, -kInf, -kInf}));
    checkValues(out, TensorType{dtype, {2}}, {1000 + std::log(2.0), -kInf}, 1e-15);
  }
}

TEST_CASE("integer reductions are exact and wrap, reduce_mean truncates") {
  const char* text = R"(graph @t(%x: i32[2,3]) {
  %0 = reduce_sum(%x) {axes = [0]} : i32[3]
  %1 = reduce_mean(%x) {axes = [1]} : i32[2]
  %2 = reduce_prod(%x) {axes = [1]} : i32[2]
  %3 = reduce_max(%x) : i32[]
  %4 = reduce_min(%x) {axes = [1], keepdims = 1} : i32[2,1]
  return a = %0, b = %1, c = %2, d = %3, e = %4
})";
  Graph g = testing::parseOrFail(text);
  auto out = interpret(g, {{"x", Tensor::of<int32_t>({2, 3}, {-7, 3, 5, 2, -4, 9})}});
  REQUIRE(out.ok());
  // numpy: x.sum(0), np.trunc(x.sum(1) / 3), x.prod(1), x.max(), x.min(1)
  CHECK((*out)[0].toInts() == std::vector<int64_t>{-5, -1, 14});
  CHECK((*out)[1].toInts() == std::vector<int64_t>{0, 2});
  CHECK((*out)[2].toInts() == std::vector<int64_t>{-105, -72});
  CHECK((*out)[3].toInts() == std::vector<int64_t>{9});
  CHECK((*out)[4].toInts() == std::vector<int64_t>{-7, -4});

  Tensor u = runOn("graph @t(%x: u8[3]) {\n  %0 = reduce_sum(%x) : u8[]\n  return r = %0\n}",
                   Tensor::of<uint8_t>({3}, {200, 100, 1}));
  CHECK(u.toInts() == std::vector<int64_t>{45});
  // Values past 2^53 stay exact, and the mean of two near-max values does not overflow.
  int64_t big = (int64_t{1} << 53) + 1;
  Tensor s = runOn("graph @t(%x: i64[2]) {\n  %0 = reduce_sum(%x) : i64[]\n  return r = %0\n}",
                   Tensor::of<int64_t>({2}, {big, 2}));
  CHECK(s.toInts() == std::vector<int64_t>{big + 2});
  uint64_t nearMax = std::numeric_limits<uint64_t>::max() - 1;
  Tensor m = runOn("graph @t(%x: u64[2]) {\n  %0 = reduce_mean(%x) : u64[]\n  return r = %0\n}",
                   Tensor::of<uint64_t>({2}, {nearMax, nearMax}));
  CHECK(m.data<uint64_t>()[0] == nearMax);
}

TEST_CASE("reduce_max and reduce_min propagate NaN") {
  const char* text = R"(graph @t(%x: f32[2,2]) {
  %0 = reduce_max(%x) {axes = [1]} : f32[2]
  %1 = reduce_min(%x) {axes = [1]} : f32[2]
  return a = %0, b = %1
})";
  Graph g = testing::parseOrFail(text);
  auto out = interpret(g, {{"x", Tensor::of<float>({2, 2}, {1, NAN, NAN, -1})}});
  REQUIRE(out.ok());
  for (const Tensor& t : *out) {
    CHECK(std::isnan(t.getDouble(0)));
    CHECK(std::isnan(t.getDouble(1)));
  }
}

TEST_CASE("softmax and log_softmax match PyTorch") {
  // torch.softmax(x, -1)
  checkValues(reduceX("softmax", "", "f64[2,3,4]"), f64({2, 3, 4}),
              {0.11555088711608759, 0.5897572514562904, 0.28420932144767447, 0.010482539979947417,
               0.01810568519126398, 0.5646612466685301, 0.0030839954733599476, 0.4141490726668459,
               0.8091421876914758, 0.1128404257264219, 0.04192887200494277, 0.03608851457715953,
               0.06850295739045094, 0.2141928800901572, 0.30700895542261813, 0.41029520709677375,
               0.4227533955523313, 0.12606391242345222, 0.04500569421175186, 0.40617699781246464,
               0.07698570398170024, 0.05534684972740903, 0.840183014105108, 0.0274844321857829},
              1e-14);
  // torch.log_softmax(x, 1)
  checkValues(reduceX("log_softmax", "{axis = 1}", "f64[2,3,4]"), f64({2, 3, 4}),
              {-1.3720280561725953, -0.6657213989353002, -0.06659794568880191, -3.6441610401563387,
               -3.322028056172595,  -0.8057213989352999, -4.686597945688802,   -0.06416104015633861,
               -0.3420280561725952, -3.2357213989353,    -2.896597945688802,   -3.3241610401563384,
               -4.4608559472685165, -2.2263281472721506, -1.595195678898781,   -2.684163064743889,
               -0.020855947268516174, -0.13632814727215087, -0.895195678898781, -0.07416306474388888,
               -4.700855947268516,  -3.9363281472721505, -0.945195678898781,   -5.744163064743889},
              1e-14);
  // Large logits: a naive exp overflows to inf/inf = NaN.
  Tensor big = runOn("graph @t(%x: f32[3]) {\n  %0 = softmax(%x) : f32[3]\n  return r = %0\n}",
                     Tensor::of<float>({3}, {1000, 1000, -1000}));
  checkValues(big, TensorType{DType::f32, {3}}, {0.5, 0.5, 0}, 0);
}

TEST_CASE("softmax rows sum to 1 and equal exp(log_softmax) on fresh random inputs") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (int64_t axis : {0, 1, -1}) {
    CAPTURE(axis);
    Tensor x = testing::randomTensor(f64({5, 7, 3}), seed + static_cast<uint64_t>(axis + 1));
    Graph g = testing::parseOrFail(fmt::format(R"(graph @t(%x: f64[5,7,3]) {{
  %0 = softmax(%x) {{axis = {0}}} : f64[5,7,3]
  %1 = reduce_sum(%0) {{axes = [{0}]}} : f64[{1}]
  %2 = log_softmax(%x) {{axis = {0}}} : f64[5,7,3]
  %3 = exp(%2) : f64[5,7,3]
  return s = %0, total = %1, e = %3
}})",
                                               axis, axis == 0 ? "7,3" : axis == 1 ? "5,3" : "5,7"));
    auto out = interpret(g, {{"x", x}});
    REQUIRE(out.ok());
    for (int64_t i = 0; i < (*out)[1].numel(); ++i) CHECK((*out)[1].getDouble(i) == doctest::Approx(1.0).epsilon(1e-14));
    std::string diff = testing::compareTensors((*out)[2], (*out)[0], 1e-14);
    CHECK_MESSAGE(diff.empty(), diff);
    for (int64_t i = 0; i < x.numel(); ++i) CHECK((*out)[0].getDouble(i) > 0);
  }
}

TEST_CASE("reducing a size-0 dim: sums are 0, max and min are verifier errors") {
  Graph g = testing::parseOrFail(R"(graph @t(%x: f64[0,2]) {
  %0 = reduce_sum(%x) {axes = [0]} : f64[2]
  %1 = reduce_prod(%x) {axes = [0]} : f64[2]
  %2 = reduce_logsumexp(%x) {axes = [0]} : f64[2]
  return s = %0, p = %1, l = %2
})");
  auto out = interpret(g, {{"x", Tensor(f64({0, 2}))}});
  REQUIRE(out.ok());
  checkValues((*out)[0], f64({2}), {0, 0}, 0);
  checkValues((*out)[1], f64({2}), {1, 1}, 0);
  checkValues((*out)[2], f64({2}), {-kInf, -kInf}, 0);
  std::string e = reduceError("reduce_max", "{axes = [1]}", "f32[2,0]");
  CHECK_MESSAGE(e.find("reduce_max %0: cannot reduce dim 1 of f32[2,0]: it has no elements") != std::string::npos, e);
}

TEST_CASE("reduction verifier errors") {
  std::string e = reduceError("reduce_sum", "{axes = [3]}");
  CHECK_MESSAGE(e.find("reduce_sum %0: axis 3 is out of range for rank 3") != std::string::npos, e);
  e = reduceError("reduce_sum", "{axes = [-4]}");
  CHECK_MESSAGE(e.find("axis -4 is out of range for rank 3") != std::string::npos, e);
  e = reduceError("reduce_mean", "{axes = [1, -2]}");
  CHECK_MESSAGE(e.find("reduce_mean %0: axis -2 is repeated") != std::string::npos, e);
  e = reduceError("reduce_max", "{axes = [9223372036854775807]}");
  CHECK_MESSAGE(e.find("out of range") != std::string::npos, e);
  e = reduceError("reduce_sum", "{keepdims = 2}");
  CHECK_MESSAGE(e.find("reduce_sum %0: attribute 'keepdims' must be 0 or 1, got 2") != std::string::npos, e);
  e = reduceError("reduce_variance", "{correction = -1}");
  CHECK_MESSAGE(e.find("reduce_variance %0: attribute 'correction' must be >= 0, got -1") != std::string::npos, e);
  e = reduceError("reduce_variance", "", "i32[2,3]");
  CHECK_MESSAGE(e.find("reduce_variance %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32") != std::string::npos, e);
  e = reduceError("reduce_sum", "", "bool[2]");
  CHECK_MESSAGE(e.find("must be one of") != std::string::npos, e);
  e = reduceError("reduce_sum", "{axes = [0]}");
  CHECK_MESSAGE(e.find("f32[3,4]") != std::string::npos, e);  // the declared f32[] is not what is inferred
  e = verifyErrorOrEmpty("graph @t(%x: f32[2,3]) {\n  %0 = softmax(%x) {axis = 2} : f32[2,3]\n  return r = %0\n}");
  CHECK_MESSAGE(e.find("softmax %0: axis 2 is out of range for rank 2") != std::string::npos, e);
  e = verifyErrorOrEmpty("graph @t(%x: i32[2,3]) {\n  %0 = log_softmax(%x) : i32[2,3]\n  return r = %0\n}");
  CHECK_MESSAGE(e.find("log_softmax %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32") != std::string::npos, e);
}
