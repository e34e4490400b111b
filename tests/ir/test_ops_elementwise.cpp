// Elementwise ops (unary rows, binary rows, where, clip, cast): reference values against numpy/PyTorch,
// exact integer semantics (wrapping, truncating division, casts), NaN handling and verifier errors.
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace smelt;

using testing::runOutputs;
using testing::verifyErrorOrEmpty;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

/// A one-node graph `%0 = op(inputs...) attrs : result` over inputs named a, b, c.
std::string oneNode(std::string_view op, const std::vector<std::string>& inputTypes, std::string_view attrs,
                    std::string_view result) {
  std::string params, args;
  for (size_t i = 0; i < inputTypes.size(); ++i) {
    params += fmt::format("{}%{}: {}", i ? ", " : "", char('a' + i), inputTypes[i]);
    args += fmt::format("{}%{}", i ? ", " : "", char('a' + i));
  }
  return fmt::format("graph @t({}) {{\n  %0 = {}({}) {} : {}\n  return r = %0\n}}", params, op, args, attrs, result);
}

void checkDoubles(const Tensor& actual, const std::vector<double>& expected, double tol) {
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  Tensor want = Tensor::fromDoubles(actual.type(), expected);
  std::string diff = testing::compareTensors(actual, want, tol);
  CHECK_MESSAGE(diff.empty(), diff);
}

void checkInts(const Tensor& actual, const std::vector<int64_t>& expected) {
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(actual.getInt(static_cast<int64_t>(i)) == expected[i]);
  }
}

struct UnaryCase {
  const char* op;
  const char* attrs;
  std::vector<double> x;
  std::vector<double> expected;
};

// Expected values: numpy 1.24 / torch 1.13 in float64 (torch.nn.functional for the activations),
// printed with repr() and pasted. Inputs are exact in f32 too.
const std::vector<double> kX = {-2.5, -0.5, 0.0, 0.75, 3.0};
const std::vector<double> kPos = {0.25, 1.0, 2.0, 9.0};
const UnaryCase kUnaryCases[] = {
    {"neg", "", kX, {2.5, 0.5, -0.0, -0.75, -3.0}},
    {"reciprocal", "", kPos, {4.0, 1.0, 0.5, 0.1111111111111111}},
    {"sqrt", "", kPos, {0.5, 1.0, 1.4142135623730951, 3.0}},
    {"rsqrt", "", kPos, {2.0, 1.0, 0.7071067811865475, 0.3333333333333333}},
    {"abs", "", kX, {2.5, 0.5, 0.0, 0.75, 3.0}},
    {"sign", "", kX, {-1.0, -1.0, 0.0, 1.0, 1.0}},
    {"floor", "", kX, {-3.0, -1.0, 0.0, 0.0, 3.0}},
    {"ceil", "", kX, {-2.0, -0.0, 0.0, 1.0, 3.0}},
    {"exp", "", kX, {0.0820849986238988, 0.6065306597126334, 1.0, 2.1170000166126743, 20.085536923187668}},
    {"log", "", kPos, {-1.3862943611198906, 0.0, 0.6931471805599453, 2.197224577336219}},
    {"sin", "", kX, {-0.5984721441039564, -0.47942553860420295, 0.0, 0.6816387600233341, 0.1411200080598672}},
    {"cos", "", kX, {-0.8011436155469338, 0.8775825618903725, 1.0, 0.731688868873821, -0.9899924966004454}},
    {"tan", "", kX, {0.7470222972386602, -0.5463024898437905, 0.0, 0.9315964599440725, -0.1425465430742778}},
    {"tanh", "", kX, {-0.9866142981514303, -0.46211715726000974, 0.0, 0.6351489523872873, 0.9950547536867305}},
    {"erf", "", kX, {-0.999593047982555, -0.5204998778130465, 0.0, 0.7111556336535151, 0.9999779095030014}},
    {"sigmoid", "", kX, {0.07585818002124355, 0.3775406687981454, 0.5, 0.679178699175393, 0.9525741268224334}},
    {"relu", "", kX, {0.0, 0.0, 0.0, 0.75, 3.0}},
    {"leaky_relu", "", kX, {-0.025, -0.005, 0.0, 0.75, 3.0}},
    {"leaky_relu", "{alpha = 0.2}", kX, {-0.5, -0.1, 0.0, 0.75, 3.0}},
    {"elu", "", kX, {-0.9179150013761012, -0.3934693402873666, 0.0, 0.75, 3.0}},
    {"elu", "{alpha = 0.5}", kX, {-0.4589575006880506, -0.1967346701436833, 0.0, 0.75, 3.0}},
    {"selu", "", kX, {-1.6137857588732423, -0.6917581878028713, 0.0, 0.7880257405166103, 3.1521029620664414}},
    {"gelu", "", kX, {-0.015524163314440398, -0.15426876936299344, 0.0, 0.5800294857173489, 2.99595030590511}},
    {"gelu", "{approximate = \"tanh\"}", kX,
     {-0.015084266089998577, -0.15428599017485606, 0.0, 0.5799605551656203, 2.996362607918227}},
    {"silu", "", kX, {-0.18964545005310887, -0.1887703343990727, 0.0, 0.5093840243815447, 2.8577223804672998}},
    {"softplus", "", kX, {0.07888973429254963, 0.4740769841801067, 0.6931471805599453, 1.1368710061148999,
                          3.048587351573742}},
};

}  // namespace

TEST_CASE("unary float ops match numpy/PyTorch values in f64 and f32") {
  for (const UnaryCase& c : kUnaryCases) {
    for (DType dtype : {DType::f64, DType::f32}) {
      CAPTURE(c.op);
      CAPTURE(c.attrs);
      CAPTURE(dtypeName(dtype));
      TensorType type{dtype, {static_cast<int64_t>(c.x.size())}};
      auto out = runOutputs(oneNode(c.op, {type.toString()}, c.attrs, type.toString()),
                            {{"a", Tensor::fromDoubles(type, c.x)}});
      checkDoubles(out[0], c.expected, dtype == DType::f64 ? 1e-15 : 1e-6);
    }
  }
}

TEST_CASE("sigmoid and softplus are stable far from zero, relu and sign keep NaN") {
  // softplus(-40) = log1p(e^-40) = 4.248354255291589e-18; a naive log(1 + e^-40) gives 0.
  auto out = runOutputs(oneNode("softplus", {"f64[4]"}, "", "f64[4]"),
                        {{"a", Tensor::of<double>({4}, {1000, -1000, -40, 40})}});
  checkDoubles(out[0], {1000, 0, 4.248354255291589e-18, 40}, 1e-15);
  CHECK(out[0].getDouble(2) > 0);
  out = runOutputs(oneNode("sigmoid", {"f64[3]"}, "", "f64[3]"), {{"a", Tensor::of<double>({3}, {-1000, 1000, -40})}});
  checkDoubles(out[0], {0, 1, 4.248354255291589e-18}, 1e-15);
  for (const char* op : {"relu", "sign", "abs", "neg", "sigmoid", "softplus", "gelu"}) {
    CAPTURE(op);
    out = runOutputs(oneNode(op, {"f32[1]"}, "", "f32[1]"), {{"a", Tensor::of<float>({1}, {NAN})}});
    CHECK(std::isnan(out[0].getDouble(0)));
  }
}

TEST_CASE("integer unary ops are exact and wrap") {
  auto out = runOutputs(oneNode("neg", {"i8[4]"}, "", "i8[4]"), {{"a", Tensor::of<int8_t>({4}, {-128, 5, -3, 0})}});
  checkInts(out[0], {-128, -5, 3, 0});
  out = runOutputs(oneNode("abs", {"i8[4]"}, "", "i8[4]"), {{"a", Tensor::of<int8_t>({4}, {-128, -7, 7, 0})}});
  checkInts(out[0], {-128, 7, 7, 0});
  out = runOutputs(oneNode("abs", {"i64[2]"}, "", "i64[2]"), {{"a", Tensor::of<int64_t>({2}, {kI64Min, -kI64Max})}});
  checkInts(out[0], {kI64Min, kI64Max});
  out = runOutputs(oneNode("sign", {"i32[3]"}, "", "i32[3]"), {{"a", Tensor::of<int32_t>({3}, {-9, 0, 4})}});
  checkInts(out[0], {-1, 0, 1});
  // u64 values past 2^63 must not be read as negative.
  out = runOutputs(oneNode("sign", {"u64[2]"}, "", "u64[2]"), {{"a", Tensor::of<uint64_t>({2}, {0, kU64Max})}});
  CHECK(out[0].data<uint64_t>()[0] == 0);
  CHECK(out[0].data<uint64_t>()[1] == 1);
  out = runOutputs(oneNode("abs", {"u64[1]"}, "", "u64[1]"), {{"a", Tensor::of<uint64_t>({1}, {kU64Max})}});
  CHECK(out[0].data<uint64_t>()[0] == kU64Max);
  out = runOutputs(oneNode("relu", {"i16[2]"}, "", "i16[2]"), {{"a", Tensor::of<int16_t>({2}, {-3, 4})}});
  checkInts(out[0], {0, 4});
  out = runOutputs(oneNode("not", {"bool[2]"}, "", "bool[2]"), {{"a", Tensor::of<bool>({2}, {true, false})}});
  checkInts(out[0], {0, 1});
}

TEST_CASE("integer add, sub and mul wrap to the dtype") {
  auto out = runOutputs(oneNode("add", {"i8[2]", "i8[2]"}, "", "i8[2]"),
                        {{"a", Tensor::of<int8_t>({2}, {100, -100})}, {"b", Tensor::of<int8_t>({2}, {100, -100})}});
  checkInts(out[0], {-56, 56});
  out = runOutputs(oneNode("sub", {"u8[2]", "u8[2]"}, "", "u8[2]"),
                   {{"a", Tensor::of<uint8_t>({2}, {3, 200})}, {"b", Tensor::of<uint8_t>({2}, {5, 100})}});
  checkInts(out[0], {254, 100});
  out = runOutputs(oneNode("mul", {"i32[1]", "i32[1]"}, "", "i32[1]"),
                   {{"a", Tensor::of<int32_t>({1}, {65536})}, {"b", Tensor::of<int32_t>({1}, {65537})}});
  checkInts(out[0], {65536});
  out = runOutputs(oneNode("add", {"i64[1]", "i64[1]"}, "", "i64[1]"),
                   {{"a", Tensor::of<int64_t>({1}, {kI64Max})}, {"b", Tensor::of<int64_t>({1}, {1})}});
  checkInts(out[0], {kI64Min});
}

TEST_CASE("binary ops broadcast") {
  // numpy: np.subtract([[10], [20]], [1, 2, 3])
  auto out = runOutputs(oneNode("sub", {"f32[2,1]", "f32[3]"}, "", "f32[2,3]"),
                        {{"a", Tensor::of<float>({2, 1}, {10, 20})}, {"b", Tensor::of<float>({3}, {1, 2, 3})}});
  checkDoubles(out[0], {9, 8, 7, 19, 18, 17}, 0);
  CHECK(verifyErrorOrEmpty(oneNode("add", {"f32[2,3]", "f32[4]"}, "", "f32[2,3]")).find("add %0") != std::string::npos);
}

TEST_CASE("integer division truncates toward zero, x/0 = 0 and MIN/-1 wraps") {
  auto out = runOutputs(
      oneNode("div", {"i32[6]", "i32[6]"}, "", "i32[6]"),
      {{"a", Tensor::of<int32_t>({6}, {-7, 7, -7, 7, 5, 0})}, {"b", Tensor::of<int32_t>({6}, {2, -2, -2, 2, 0, 0})}});
  checkInts(out[0], {-3, -3, 3, 3, 0, 0});
  out = runOutputs(oneNode("div", {"i64[2]", "i64[2]"}, "", "i64[2]"),
                   {{"a", Tensor::of<int64_t>({2}, {kI64Min, kI64Max})}, {"b", Tensor::of<int64_t>({2}, {-1, -1})}});
  checkInts(out[0], {kI64Min, -kI64Max});
  out = runOutputs(oneNode("div", {"i8[1]", "i8[1]"}, "", "i8[1]"),
                   {{"a", Tensor::of<int8_t>({1}, {-128})}, {"b", Tensor::of<int8_t>({1}, {-1})}});
  checkInts(out[0], {-128});
  out = runOutputs(oneNode("div", {"u8[2]", "u8[2]"}, "", "u8[2]"),
                   {{"a", Tensor::of<uint8_t>({2}, {255, 7})}, {"b", Tensor::of<uint8_t>({2}, {2, 0})}});
  checkInts(out[0], {127, 0});
  out = runOutputs(oneNode("div", {"f32[2]", "f32[2]"}, "", "f32[2]"),
                   {{"a", Tensor::of<float>({2}, {-7, 1})}, {"b", Tensor::of<float>({2}, {2, 0})}});
  checkDoubles(out[0], {-3.5, kInf}, 0);
}

TEST_CASE("pow: floats in double, integers exact and wrapping, negative exponents truncated") {
  auto out = runOutputs(oneNode("pow", {"f64[3]", "f64[3]"}, "", "f64[3]"),
                        {{"a", Tensor::of<double>({3}, {2, 9, 2})}, {"b", Tensor::of<double>({3}, {10, 0.5, -1})}});
  checkDoubles(out[0], {1024, 3, 0.5}, 0);
  out = runOutputs(oneNode("pow", {"i32[8]", "i32[8]"}, "", "i32[8]"),
                   {{"a", Tensor::of<int32_t>({8}, {2, -2, 3, 2, 1, -1, -1, 2})},
                    {"b", Tensor::of<int32_t>({8}, {10, 3, 0, -1, -5, -3, -4, 31})}});
  checkInts(out[0], {1024, -8, 1, 0, 1, -1, 1, INT32_MIN});
  // 3^39 needs 62 bits exactly (a double pow rounds it); 3^40 wraps as 3 * 3^39 does.
  out = runOutputs(oneNode("pow", {"i64[2]", "i64[2]"}, "", "i64[2]"),
                   {{"a", Tensor::of<int64_t>({2}, {3, 3})}, {"b", Tensor::of<int64_t>({2}, {39, 40})}});
  const uint64_t p39 = 4052555153018976267ULL;
  checkInts(out[0], {static_cast<int64_t>(p39), static_cast<int64_t>(3 * p39)});
  out = runOutputs(oneNode("pow", {"u8[2]", "u8[2]"}, "", "u8[2]"),
                   {{"a", Tensor::of<uint8_t>({2}, {3, 2})}, {"b", Tensor::of<uint8_t>({2}, {5, 8})}});
  checkInts(out[0], {243, 0});
}

TEST_CASE("min and max propagate NaN and are exact on 64-bit integers") {
  TensorMap feeds = {{"a", Tensor::of<float>({3}, {NAN, 1, -2})}, {"b", Tensor::of<float>({3}, {0, NAN, 3})}};
  auto out = runOutputs(oneNode("max", {"f32[3]", "f32[3]"}, "", "f32[3]"), feeds);
  checkDoubles(out[0], {kNaN, kNaN, 3}, 0);
  out = runOutputs(oneNode("min", {"f32[3]", "f32[3]"}, "", "f32[3]"), feeds);
  checkDoubles(out[0], {kNaN, kNaN, -2}, 0);
  // 2^53 + 1 and 2^53 are equal as doubles; the integer path must still tell them apart.
  int64_t big = (int64_t{1} << 53) + 1;
  out = runOutputs(oneNode("max", {"i64[1]", "i64[1]"}, "", "i64[1]"),
                   {{"a", Tensor::of<int64_t>({1}, {big - 1})}, {"b", Tensor::of<int64_t>({1}, {big})}});
  checkInts(out[0], {big});
  out = runOutputs(oneNode("min", {"u64[1]", "u64[1]"}, "", "u64[1]"),
                   {{"a", Tensor::of<uint64_t>({1}, {kU64Max})}, {"b", Tensor::of<uint64_t>({1}, {kU64Max - 1})}});
  CHECK(out[0].data<uint64_t>()[0] == kU64Max - 1);
}

TEST_CASE("comparisons give bool, eq and ne accept bool, logical ops") {
  TensorMap feeds = {{"a", Tensor::of<float>({4}, {1, 2, 3, NAN})}, {"b", Tensor::of<float>({4}, {2, 2, 2, NAN})}};
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"eq", {0, 1, 0, 0}}, {"ne", {1, 0, 1, 1}}, {"lt", {1, 0, 0, 0}},
      {"le", {1, 1, 0, 0}}, {"gt", {0, 0, 1, 0}}, {"ge", {0, 1, 1, 0}},
  };
  for (const auto& entry : cases) {
    // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
    const auto& op = entry.first;
    const auto& expected = entry.second;
    CAPTURE(op);
    auto out = runOutputs(oneNode(op, {"f32[4]", "f32[4]"}, "", "bool[4]"), feeds);
    CHECK(out[0].dtype() == DType::boolean);
    checkInts(out[0], expected);
  }
  int64_t big = (int64_t{1} << 53) + 1;
  auto out = runOutputs(oneNode("gt", {"i64[1]", "i64[1]"}, "", "bool[1]"),
                        {{"a", Tensor::of<int64_t>({1}, {big})}, {"b", Tensor::of<int64_t>({1}, {big - 1})}});
  checkInts(out[0], {1});
  TensorMap bools = {{"a", Tensor::of<bool>({4}, {false, false, true, true})},
                     {"b", Tensor::of<bool>({4}, {false, true, false, true})}};
  const std::pair<const char*, std::vector<int64_t>> logical[] = {
      {"eq", {1, 0, 0, 1}}, {"ne", {0, 1, 1, 0}}, {"and", {0, 0, 0, 1}}, {"or", {0, 1, 1, 1}}, {"xor", {0, 1, 1, 0}},
  };
  for (const auto& entry : logical) {
    // Named, not bound: clang 14 cannot capture structured bindings (CAPTURE, CHECK_MESSAGE).
    const auto& op = entry.first;
    const auto& expected = entry.second;
    CAPTURE(op);
    checkInts(runOutputs(oneNode(op, {"bool[4]", "bool[4]"}, "", "bool[4]"), bools)[0], expected);
  }
}

TEST_CASE("where broadcasts all three operands and copies values exactly") {
  // numpy: np.where([[True], [False]], [1, 2, 3], [[10, 20, 30]]) -> [[1, 2, 3], [10, 20, 30]]
  auto out = runOutputs(oneNode("where", {"bool[2,1]", "i64[3]", "i64[1,3]"}, "", "i64[2,3]"),
                        {{"a", Tensor::of<bool>({2, 1}, {true, false})},
                         {"b", Tensor::of<int64_t>({3}, {1, 2, kI64Max})},
                         {"c", Tensor::of<int64_t>({1, 3}, {10, 20, 30})}});
  checkInts(out[0], {1, 2, kI64Max, 10, 20, 30});
  out = runOutputs(oneNode("where", {"bool[3]", "f32[]", "f32[2,1]"}, "", "f32[2,3]"),
                   {{"a", Tensor::of<bool>({3}, {true, false, true})},
                    {"b", Tensor::of<float>({}, {-1})},
                    {"c", Tensor::of<float>({2, 1}, {5, 6})}});
  checkDoubles(out[0], {-1, 5, -1, -1, 6, -1}, 0);
}

TEST_CASE("clip clamps floats, keeps NaN, and is exact and saturating on integers") {
  auto out = runOutputs(oneNode("clip", {"f32[4]"}, "{max = 2, min = -1}", "f32[4]"),
                        {{"a", Tensor::of<float>({4}, {-5, 0.5, 5, NAN})}});
  checkDoubles(out[0], {-1, 0.5, 2, kNaN}, 0);
  // min(max(x, -2.5), 3.5) then truncated to i32, as the contract's formula gives.
  out = runOutputs(oneNode("clip", {"i32[3]"}, "{max = 3.5, min = -2.5}", "i32[3]"),
                   {{"a", Tensor::of<int32_t>({3}, {-5, 1, 7})}});
  checkInts(out[0], {-2, 1, 3});
  out =
      runOutputs(oneNode("clip", {"u8[3]"}, "{min = 300}", "u8[3]"), {{"a", Tensor::of<uint8_t>({3}, {0, 200, 255})}});
  checkInts(out[0], {255, 255, 255});
  out = runOutputs(oneNode("clip", {"u64[1]"}, "", "u64[1]"), {{"a", Tensor::of<uint64_t>({1}, {kU64Max})}});
  CHECK(out[0].data<uint64_t>()[0] == kU64Max);
}

TEST_CASE("cast: float->int truncates (NaN -> 0), int->int wraps exactly, ->bool is != 0") {
  auto out = runOutputs(oneNode("cast", {"f32[4]"}, "{to = \"i32\"}", "i32[4]"),
                        {{"a", Tensor::of<float>({4}, {-2.7f, 2.7f, NAN, -0.5f})}});
  checkInts(out[0], {-2, 2, 0, 0});
  // numpy: np.array([300, -129, 127, 2**40 + 5]).astype(np.int8) -> [44, 127, 127, 5]
  out = runOutputs(oneNode("cast", {"i64[4]"}, "{to = \"i8\"}", "i8[4]"),
                   {{"a", Tensor::of<int64_t>({4}, {300, -129, 127, (int64_t{1} << 40) + 5})}});
  checkInts(out[0], {44, 127, 127, 5});
  out = runOutputs(oneNode("cast", {"f32[4]"}, "{to = \"bool\"}", "bool[4]"),
                   {{"a", Tensor::of<float>({4}, {0.0f, -0.0f, 0.5f, NAN})}});
  checkInts(out[0], {0, 0, 1, 1});
  out = runOutputs(oneNode("cast", {"u64[1]"}, "{to = \"i64\"}", "i64[1]"),
                   {{"a", Tensor::of<uint64_t>({1}, {kU64Max})}});
  checkInts(out[0], {-1});
  out = runOutputs(oneNode("cast", {"i64[1]"}, "{to = \"u64\"}", "u64[1]"),
                   {{"a", Tensor::of<int64_t>({1}, {(int64_t{1} << 53) + 1})}});
  CHECK(out[0].data<uint64_t>()[0] == (uint64_t{1} << 53) + 1);
  out = runOutputs(oneNode("cast", {"bool[2]"}, "{to = \"f16\"}", "f16[2]"),
                   {{"a", Tensor::of<bool>({2}, {true, false})}});
  checkDoubles(out[0], {1, 0}, 0);
  // f16 has 11 significant bits: 2049 rounds to even, 2048.
  out = runOutputs(oneNode("cast", {"i32[1]"}, "{to = \"f16\"}", "f16[1]"), {{"a", Tensor::of<int32_t>({1}, {2049})}});
  checkDoubles(out[0], {2048}, 0);
  out = runOutputs(oneNode("cast", {"f64[1]"}, "{to = \"f32\"}", "f32[1]"), {{"a", Tensor::of<double>({1}, {0.1})}});
  CHECK(out[0].data<float>()[0] == 0.1f);
}

TEST_CASE("elementwise verifier errors name the op, the operand and what was expected") {
  std::string e = verifyErrorOrEmpty(oneNode("cast", {"f32[2]"}, "{to = \"f99\"}", "f32[2]"));
  CHECK_MESSAGE(e.find("cast %0: attribute 'to' must name a dtype") != std::string::npos, e);
  CHECK_MESSAGE(e.find("\"f99\"") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("cast", {"f32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("to") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("where", {"f32[2]", "f32[2]", "f32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("where %0: operand #0 (cond) must be one of bool, got f32") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("where", {"bool[2]", "f32[2]", "f64[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("they must have the same dtype") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("where", {"bool[4]", "f32[2]", "f32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("where %0") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("add", {"f32[2]", "i32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("add %0: operand #0 (lhs) is f32[2] but operand #1 (rhs) is i32[2]") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("and", {"i32[2]", "i32[2]"}, "", "i32[2]"));
  CHECK_MESSAGE(e.find("and %0: operand #0 (lhs) must be one of bool, got i32") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("not", {"f32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("not %0: operand #0 (x) must be one of bool, got f32") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("leaky_relu", {"i32[2]"}, "", "i32[2]"));
  CHECK_MESSAGE(e.find("leaky_relu %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("neg", {"u8[2]"}, "", "u8[2]"));
  CHECK_MESSAGE(e.find("neg %0: operand #0 (x) must be one of") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("gelu", {"f32[2]"}, "{approximate = \"fast\"}", "f32[2]"));
  CHECK_MESSAGE(e.find("gelu %0: attribute 'approximate' must be \"none\" or \"tanh\", got \"fast\"") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("clip", {"bool[2]"}, "", "bool[2]"));
  CHECK_MESSAGE(e.find("clip %0: operand #0 (x) must be one of") != std::string::npos, e);
  e = verifyErrorOrEmpty(oneNode("lt", {"f32[2]", "f32[2]"}, "", "f32[2]"));
  CHECK_MESSAGE(e.find("bool[2]") != std::string::npos, e);
}

TEST_CASE("exp of log and sigmoid(x) + sigmoid(-x) = 1 on fresh random inputs") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  Tensor x = testing::randomTensor(TensorType{DType::f64, {64}}, seed);
  auto out = runOutputs(R"(graph @t(%a: f64[64]) {
  %0 = abs(%a) : f64[64]
  %1 = log(%0) : f64[64]
  %2 = exp(%1) : f64[64]
  %3 = sigmoid(%a) : f64[64]
  %4 = neg(%a) : f64[64]
  %5 = sigmoid(%4) : f64[64]
  %6 = add(%3, %5) : f64[64]
  return r = %2, s = %6, x = %0
})",
                        {{"a", x}});
  std::string diff = testing::compareTensors(out[0], out[2], 1e-14);
  CHECK_MESSAGE(diff.empty(), diff);
  for (int64_t i = 0; i < 64; ++i) CHECK(out[1].getDouble(i) == doctest::Approx(1.0).epsilon(1e-15));
}
