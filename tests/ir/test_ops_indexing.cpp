// concat, slice, pad, gather, scatter_add: shapes, verifier and run-time errors, and values checked against numpy.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

using namespace smelt;

using testing::iota;
using testing::parseErrorOrEmpty;
using testing::runFirstOutput;
using testing::unaryGraph;

namespace {

// "[1, -2, 9223372036854775807]" for an IR int list.
std::string intList(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

}  // namespace

TEST_CASE("concat: values along axis 1 and -1, including an empty input") {
  // numpy: np.concatenate([np.arange(6).reshape(2,3), np.arange(10,14).reshape(2,2)], axis=1).ravel()
  Tensor r = runFirstOutput(
      R"(graph @t(%a: i64[2,3], %b: i64[2,2], %e: i64[2,0]) {
  %0 = concat(%a, %e, %b) {axis = 1} : i64[2,5]
  return r = %0
})",
      {{"a", iota(DType::i64, {2, 3})}, {"b", iota(DType::i64, {2, 2}, 1, 10)}, {"e", iota(DType::i64, {2, 0})}});
  CHECK(r.toInts() == std::vector<int64_t>{0, 1, 2, 10, 11, 3, 4, 5, 12, 13});
  Tensor one = runFirstOutput("graph @t(%a: bool[2]) {\n  %0 = concat(%a) {axis = -1} : bool[2]\n  return r = %0\n}",
                              {{"a", Tensor::of<bool>({2}, {true, false})}});
  CHECK(one.toInts() == std::vector<int64_t>{1, 0});
  Tensor rows = runFirstOutput(R"(graph @t(%a: f32[1,2], %b: f32[2,2]) {
  %0 = concat(%a, %b) {axis = 0} : f32[3,2]
  return r = %0
})",
                               {{"a", iota(DType::f32, {1, 2}, 0.5)}, {"b", iota(DType::f32, {2, 2}, 1, -4)}});
  CHECK(rows.toDoubles() == std::vector<double>{0, 0.5, -4, -3, -2, -1});
}

TEST_CASE("slice: ONNX semantics match numpy slicing, with clamping, negative steps and sentinels") {
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
    Shape shape;
    std::vector<int64_t> values;
  };
  // numpy, x = np.arange(20).reshape(4,5): x[tuple(slice(s, e, step) per listed axis)].ravel(), with
  // random starts/ends/steps (Python slicing clamps exactly like ONNX Slice, INT64 sentinels included).
  const Case cases[] = {
      {{2, 0}, {6, INT64_MAX}, {}, {}, {2, 5}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
      {{1}, {6}, {0}, {1}, {3, 5}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
      {{-6}, {5}, {0}, {2}, {2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14}},
      {{-6}, {5}, {1}, {3}, {4, 2}, {0, 3, 5, 8, 10, 13, 15, 18}},
      {{6}, {INT64_MIN}, {}, {-1}, {4, 5}, {15, 16, 17, 18, 19, 10, 11, 12, 13, 14, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4}},
      {{3}, {-7}, {-1}, {-3}, {4, 2}, {3, 0, 8, 5, 13, 10, 18, 15}},
      {{-2, INT64_MAX}, {INT64_MAX, 0}, {-1, 0}, {3, -1}, {3, 1}, {18, 13, 8}},
      {{-4}, {5}, {-1}, {2}, {4, 2}, {1, 3, 6, 8, 11, 13, 16, 18}},
      {{-4}, {2}, {-1}, {1}, {4, 1}, {1, 6, 11, 16}},
      {{5, INT64_MAX}, {-4, INT64_MIN}, {}, {-3, -2}, {1, 3}, {19, 17, 15}},
      {{2, 1}, {-4, 3}, {-1, -2}, {-2, 2}, {1, 1}, {7}},
      {{4}, {-4}, {}, {-2}, {2, 5}, {15, 16, 17, 18, 19, 5, 6, 7, 8, 9}},
      {{3}, {2}, {}, {-2}, {1, 5}, {15, 16, 17, 18, 19}},
      {{INT64_MIN, 7}, {2, -4}, {}, {1, -3}, {2, 1}, {4, 9}},
      {{5}, {3}, {}, {-2}, {0, 5}, {}},
      {{-2, INT64_MIN}, {INT64_MIN, -7}, {1, 0}, {1, 1}, {0, 0}, {}},
      {{INT64_MAX}, {INT64_MIN}, {1}, {INT64_MIN}, {4, 1}, {4, 9, 14, 19}},
  };
  Tensor x = iota(DType::i32, {4, 5});
  for (const Case& c : cases) {
    std::string attrs = fmt::format("starts = {}, ends = {}", intList(c.starts), intList(c.ends));
    if (!c.axes.empty()) attrs += ", axes = " + intList(c.axes);
    if (!c.steps.empty()) attrs += ", steps = " + intList(c.steps);
    std::string text = unaryGraph("i32[4,5]", "slice", attrs, "i32" + shapeToString(c.shape));
    CAPTURE(text);
    Tensor r = runFirstOutput(text, {{"x", x}});
    CHECK(r.toInts() == c.values);
  }
}

TEST_CASE("pad: reflect, edge and constant against numpy.pad, negative pads crop") {
  Tensor y = iota(DType::u8, {2, 3}, 1, 1);  // [[1,2,3],[4,5,6]]
  auto padded = [&](const char* attrs, const char* result, const Tensor& x) {
    std::string type = fmt::format("{}{}", dtypeName(x.dtype()), shapeToString(x.shape()));
    return runFirstOutput(unaryGraph(type, "pad", attrs, result), {{"x", x}});
  };
  // numpy: np.pad(y, ((1,1),(2,1)), mode=m).ravel()
  CHECK(padded("mode = \"reflect\", pads = [1, 2, 1, 1]", "u8[4,6]", y).toInts() ==
        std::vector<int64_t>{6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2});
  CHECK(padded("mode = \"edge\", pads = [1, 2, 1, 1]", "u8[4,6]", y).toInts() ==
        std::vector<int64_t>{1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6});
  // numpy: np.pad(y, ((0,1),(1,0)), mode="constant", constant_values=7).ravel()
  CHECK(padded("pads = [0, 1, 1, 0], value = 7.0", "u8[3,4]", y).toInts() ==
        std::vector<int64_t>{7, 1, 2, 3, 7, 4, 5, 6, 7, 7, 7, 7});
  // Crop first, then pad: numpy np.pad(y[:,1:], ((0,1),(0,1)), mode).ravel()
  CHECK(padded("mode = \"edge\", pads = [0, -1, 1, 1]", "u8[3,3]", y).toInts() ==
        std::vector<int64_t>{2, 3, 3, 5, 6, 6, 5, 6, 6});
  CHECK(padded("mode = \"reflect\", pads = [0, -1, 1, 1]", "u8[3,3]", y).toInts() ==
        std::vector<int64_t>{2, 3, 2, 5, 6, 5, 2, 3, 2});
  // numpy: np.pad(y.astype(np.float32)[:, :-2], ((1,0),(0,0)), constant_values=-2.5).ravel()
  Tensor yf = iota(DType::f32, {2, 3}, 1, 1);
  CHECK(padded("pads = [1, 0, 0, -2], value = -2.5", "f32[3,1]", yf).toDoubles() == std::vector<double>{-2.5, 1, 4});
}

TEST_CASE("slice, pad and concat undo each other bit for bit in every dtype") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  for (DType dtype : kAllDTypes) {
    std::string t(dtypeName(dtype));
    CAPTURE(t);
    Tensor x = testing::randomTensor(TensorType{dtype, {3, 4}}, seed);
    std::string text = fmt::format(R"(graph @t(%x: {0}[3,4]) {{
  %0 = pad(%x) {{mode = "reflect", pads = [2, 1, 1, 3]}} : {0}[6,8]
  %1 = pad(%0) {{pads = [-2, -1, -1, -3]}} : {0}[3,4]
  %2 = slice(%1) {{starts = [-1], ends = [-9223372036854775808], steps = [-1]}} : {0}[3,4]
  %3 = slice(%2) {{starts = [2], ends = [-4], steps = [-1]}} : {0}[3,4]
  %4 = slice(%3) {{starts = [0, 0], ends = [3, 1]}} : {0}[3,1]
  %5 = slice(%3) {{starts = [1], ends = [9223372036854775807], axes = [1]}} : {0}[3,3]
  %6 = concat(%4, %5) {{axis = 1}} : {0}[3,4]
  %i = constant() {{value = dense<i32[3]> [0, 1, -1]}} : i32[3]
  %7 = gather(%6, %i) : {0}[3,4]
  return r = %7
}})",
                                   t);
    Graph g = testing::parseOrFail(text);
    auto out = interpret(g, {{"x", x}});
    REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
    CHECK((*out)[0].bitwiseEqual(x));
  }
}

TEST_CASE("gather: numpy take along axis 1 with negative indices, i32 and i64") {
  Tensor d = iota(DType::f64, {3, 4}, 1.5);
  for (DType index : {DType::i32, DType::i64}) {
    CAPTURE(dtypeName(index));
    Tensor idx = Tensor::fromDoubles(TensorType{index, {2, 2}}, std::vector<double>{1, -1, 0, -4});
    std::string text = fmt::format(R"(graph @t(%d: f64[3,4], %i: {}[2,2]) {{
  %0 = gather(%d, %i) {{axis = 1}} : f64[3,2,2]
  return r = %0
}})",
                                   dtypeName(index));
    // numpy: np.take(np.arange(12).reshape(3,4)*1.5, [[1,-1],[0,-4]], axis=1).ravel()
    CHECK(runFirstOutput(text, {{"d", d}, {"i", idx}}).toDoubles() ==
          std::vector<double>{1.5, 4.5, 0.0, 0.0, 7.5, 10.5, 6.0, 6.0, 13.5, 16.5, 12.0, 12.0});
  }
  // numpy: np.take(np.arange(12).reshape(3,4)*1.5, [2,-3], axis=0).ravel()
  Tensor rows =
      runFirstOutput("graph @t(%d: f64[3,4], %i: i64[2]) {\n  %0 = gather(%d, %i) : f64[2,4]\n  return r = %0\n}",
                     {{"d", d}, {"i", Tensor::of<int64_t>({2}, {2, -3})}});
  CHECK(rows.toDoubles() == std::vector<double>{12.0, 13.5, 15.0, 16.5, 0.0, 1.5, 3.0, 4.5});
  // A scalar index drops the axis: np.take(d, -2, axis=-1) == [3, 9, 15]
  Tensor col = runFirstOutput(
      "graph @t(%d: f64[3,4], %i: i32[]) {\n  %0 = gather(%d, %i) {axis = -1} : f64[3]\n  return r = %0\n}",
      {{"d", d}, {"i", Tensor::of<int32_t>({}, {-2})}});
  CHECK(col.toDoubles() == std::vector<double>{3.0, 9.0, 15.0});
}

TEST_CASE("gather: an out-of-range index is a run-time error naming the index") {
  Graph g = testing::parseOrFail(R"(graph @t(%d: f32[3,4], %i: i64[3]) {
  %0 = gather(%d, %i) {axis = 1} : f32[3,3]
  return r = %0
})");
  for (int64_t bad : {int64_t{4}, int64_t{-5}, INT64_MIN}) {
    CAPTURE(bad);
    auto out = interpret(g, {{"d", iota(DType::f32, {3, 4})}, {"i", Tensor::of<int64_t>({3}, {0, bad, 1})}});
    REQUIRE(!out.ok());
    std::string expected = fmt::format("gather %0: index {} (at flat position 1 of indices) is out of range [-4, 4) for axis 1 of size 4", bad);
    CHECK_MESSAGE(out.error().message().find(expected) != std::string::npos, out.error().message());
  }
}

TEST_CASE("scatter_add: numpy add.at along an axis, with repeated and negative indices") {
  Tensor x = iota(DType::f64, {3, 4}, 1.5);
  // numpy: r = np.arange(12.).reshape(3,4)*1.5; u = np.arange(12.).reshape(3,2,2)+100
  //        np.add.at(r, (slice(None), np.array([[1,-1],[0,1]])), u); r.ravel()
  for (DType index : {DType::i32, DType::i64}) {
    CAPTURE(dtypeName(index));
    Tensor idx = Tensor::fromDoubles(TensorType{index, {2, 2}}, std::vector<double>{1, -1, 0, 1});
    std::string text = fmt::format(R"(graph @t(%x: f64[3,4], %i: {}[2,2], %u: f64[3,2,2]) {{
  %0 = scatter_add(%x, %i, %u) {{axis = 1}} : f64[3,4]
  return r = %0
}})",
                                   dtypeName(index));
    CHECK(runFirstOutput(text, {{"x", x}, {"i", idx}, {"u", iota(DType::f64, {3, 2, 2}, 1, 100)}}).toDoubles() ==
          std::vector<double>{102.0, 204.5, 3.0, 105.5, 112.0, 218.5, 9.0, 115.5, 122.0, 232.5, 15.0, 125.5});
  }
  // A scalar index drops the axis from updates: np.add.at(r, (np.array(-2),), [0.5, -1, 2, 4])
  Tensor row = runFirstOutput(R"(graph @t(%x: f64[3,4], %i: i32[], %u: f64[4]) {
  %0 = scatter_add(%x, %i, %u) {axis = -2} : f64[3,4]
  return r = %0
})",
                              {{"x", x}, {"i", Tensor::of<int32_t>({}, {-2})}, {"u", testing::f64({4}, {0.5, -1, 2, 4})}});
  CHECK(row.toDoubles() == std::vector<double>{0.0, 1.5, 3.0, 4.5, 6.5, 6.5, 11.0, 14.5, 12.0, 13.5, 15.0, 16.5});
  // Integers wrap: a = np.array([120,-128,0,5], np.int8); np.add.at(a, [0,0,-1,1], np.int8([10,10,-7,-1]))
  Tensor wrapped = runFirstOutput(R"(graph @t(%x: i8[4], %i: i64[4], %u: i8[4]) {
  %0 = scatter_add(%x, %i, %u) : i8[4]
  return r = %0
})",
                                  {{"x", Tensor::of<int8_t>({4}, {120, -128, 0, 5})},
                                   {"i", Tensor::of<int64_t>({4}, {0, 0, -1, 1})},
                                   {"u", Tensor::of<int8_t>({4}, {10, 10, -7, -1})}});
  CHECK(wrapped.toInts() == std::vector<int64_t>{-116, 127, 0, -2});
  // Floats round to the dtype at every add, in order: np.add.at(np.zeros(2, np.float16), [0,0,0],
  // np.float16([2048, 1, 1])) gives [2048, 0] (2049 is not an f16).
  Tensor rounded = runFirstOutput(R"(graph @t(%x: f16[2], %i: i64[3], %u: f16[3]) {
  %0 = scatter_add(%x, %i, %u) : f16[2]
  return r = %0
})",
                                  {{"x", Tensor::fromDoubles(TensorType{DType::f16, {2}}, std::vector<double>{0, 0})},
                                   {"i", Tensor::of<int64_t>({3}, {0, 0, 0})},
                                   {"u", Tensor::fromDoubles(TensorType{DType::f16, {3}}, std::vector<double>{2048, 1, 1})}});
  CHECK(rounded.toDoubles() == std::vector<double>{2048, 0});
  // Empty indices leave x unchanged.
  Tensor same = runFirstOutput(R"(graph @t(%x: f64[3,4], %i: i64[0], %u: f64[3,0]) {
  %0 = scatter_add(%x, %i, %u) {axis = 1} : f64[3,4]
  return r = %0
})",
                               {{"x", x}, {"i", iota(DType::i64, {0})}, {"u", iota(DType::f64, {3, 0})}});
  CHECK(same.bitwiseEqual(x));
}

TEST_CASE("scatter_add is the adjoint of gather: <gather(d, i), u> == <d, scatter_add(0, i, u)>") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  Graph g = testing::parseOrFail(R"(graph @t(%d: f64[3,5,2], %u: f64[3,2,3,2], %z: f64[3,5,2]) {
  %i = constant() {value = dense<i64[2,3]> [4, -1, 0, 2, 2, -5]} : i64[2,3]
  %0 = gather(%d, %i) {axis = 1} : f64[3,2,3,2]
  %1 = scatter_add(%z, %i, %u) {axis = 1} : f64[3,5,2]
  return gathered = %0, scattered = %1
})");
  Tensor d = testing::randomTensor(TensorType{DType::f64, {3, 5, 2}}, seed);
  Tensor u = testing::randomTensor(TensorType{DType::f64, {3, 2, 3, 2}}, seed + 1);
  auto out = interpret(g, {{"d", d}, {"u", u}, {"z", iota(DType::f64, {3, 5, 2}, 0)}});
  REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
  auto dot = [](const Tensor& a, const Tensor& b) {
    double s = 0;
    std::vector<double> av = a.toDoubles(), bv = b.toDoubles();
    for (size_t k = 0; k < av.size(); ++k) s += av[k] * bv[k];
    return s;
  };
  CHECK(dot((*out)[0], u) == doctest::Approx(dot(d, (*out)[1])).epsilon(1e-12));
}

TEST_CASE("scatter_add: an out-of-range index is a run-time error naming the index") {
  Graph g = testing::parseOrFail(R"(graph @t(%x: f32[3,4], %i: i64[3], %u: f32[3,3]) {
  %0 = scatter_add(%x, %i, %u) {axis = 1} : f32[3,4]
  return r = %0
})");
  for (int64_t bad : {int64_t{4}, int64_t{-5}, INT64_MIN}) {
    CAPTURE(bad);
    auto out = interpret(g, {{"x", iota(DType::f32, {3, 4})}, {"i", Tensor::of<int64_t>({3}, {0, bad, 1})},
                             {"u", iota(DType::f32, {3, 3})}});
    REQUIRE(!out.ok());
    std::string expected =
        fmt::format("scatter_add %0: index {} (at flat position 1 of indices) is out of range [-4, 4) for axis 1 of size 4", bad);
    CHECK_MESSAGE(out.error().message().find(expected) != std::string::npos, out.error().message());
  }
}

TEST_CASE("scatter_add: verifier errors") {
  CHECK_ERROR("graph @t(%x: f32[3,4], %i: i64[2], %u: f32[3,3]) {\n  %0 = scatter_add(%x, %i, %u) {axis = 1} : f32[3,4]\n  return r = %0\n}",
              "scatter_add %0: operand #2 (updates) must be [3,2] (x.shape[:axis] + indices.shape + x.shape[axis+1:] for axis 1), got f32[3,3]");
  CHECK_ERROR("graph @t(%x: f32[3,4], %i: i64[2], %u: f32[2]) {\n  %0 = scatter_add(%x, %i, %u) : f32[3,4]\n  return r = %0\n}",
              "operand #2 (updates) must be [2,4]");
  CHECK_ERROR("graph @t(%x: f32[3,4], %i: f32[2], %u: f32[2,4]) {\n  %0 = scatter_add(%x, %i, %u) : f32[3,4]\n  return r = %0\n}",
              "scatter_add %0: operand #1 (indices) must be one of i32,i64, got f32");
  CHECK_ERROR("graph @t(%x: f32[3,4], %i: i64[2], %u: f64[2,4]) {\n  %0 = scatter_add(%x, %i, %u) : f32[3,4]\n  return r = %0\n}",
              "they must have the same dtype");
  CHECK_ERROR("graph @t(%x: bool[3], %i: i64[2], %u: bool[2]) {\n  %0 = scatter_add(%x, %i, %u) : bool[3]\n  return r = %0\n}",
              "scatter_add %0: operand #0 (x) must be one of");
  CHECK_ERROR("graph @t(%x: f32[3,4], %i: i64[2], %u: f32[3,2]) {\n  %0 = scatter_add(%x, %i, %u) {axis = 2} : f32[3,4]\n  return r = %0\n}",
              "attribute 'axis': axis 2 is out of range for rank 2");
  CHECK_ERROR("graph @t(%x: f32[], %i: i64[2], %u: f32[2]) {\n  %0 = scatter_add(%x, %i, %u) : f32[]\n  return r = %0\n}",
              "operand #0 (x) must have rank >= 1, got f32[]");
}

TEST_CASE("concat, slice, pad, gather: verifier errors") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"graph @t(%a: f32[2,3], %b: f32[3,2]) {\n  %0 = concat(%a, %b) {axis = 1} : f32[2,5]\n  return r = %0\n}",
       "concat %0: operand #1 (inputs) is f32[3,2] but operand #0 (inputs) is f32[2,3]; they may differ only on axis 1"},
      {"graph @t(%a: f32[2,3], %b: f32[2,3,1]) {\n  %0 = concat(%a, %b) {axis = 0} : f32[4,3]\n  return r = %0\n}",
       "they may differ only on axis 0"},
      {"graph @t(%a: f32[2,3], %b: f16[2,3]) {\n  %0 = concat(%a, %b) {axis = 0} : f32[4,3]\n  return r = %0\n}",
       "they must have the same dtype"},
      {"graph @t(%a: f32[2,3]) {\n  %0 = concat(%a) {axis = 2} : f32[2,3]\n  return r = %0\n}",
       "attribute 'axis': axis 2 is out of range for rank 2"},
      {"graph @t(%a: f32[]) {\n  %0 = concat(%a) {axis = 0} : f32[]\n  return r = %0\n}", "must have rank >= 1"},
      {"graph @t(%x: f32[4]) {\n  %0 = slice(%x) {starts = [0], ends = [4], steps = [0]} : f32[4]\n  return r = %0\n}",
       "slice %0: attribute 'steps' has a 0 for axis 0"},
      {"graph @t(%x: f32[4]) {\n  %0 = slice(%x) {starts = [0, 1], ends = [4]} : f32[4]\n  return r = %0\n}",
       "attributes 'starts' and 'ends' have 2 and 1 entries"},
      {"graph @t(%x: f32[4,4]) {\n  %0 = slice(%x) {starts = [0, 1], ends = [4, 4], axes = [1, -1]} : f32[4,3]\n  return r = %0\n}",
       "axis -1 is repeated"},
      {"graph @t(%x: f32[4]) {\n  %0 = slice(%x) {starts = [0], ends = [4], axes = [1]} : f32[4]\n  return r = %0\n}",
       "axis 1 is out of range for rank 1"},
      {"graph @t(%x: f32[4]) {\n  %0 = slice(%x) {starts = [0, 0], ends = [4, 4]} : f32[4]\n  return r = %0\n}",
       "axis 1 is out of range for rank 1"},
      {"graph @t(%x: f32[4]) {\n  %0 = slice(%x) {starts = [0], ends = [4], steps = [1, 1]} : f32[4]\n  return r = %0\n}",
       "attribute 'steps' has 2 entries, 'starts' has 1"},
      {"graph @t(%x: f32[2,3]) {\n  %0 = pad(%x) {mode = \"reflect\", pads = [0, 3, 0, 0]} : f32[2,6]\n  return r = %0\n}",
       "pad %0: reflect padding of axis 1 by 3 and 0 needs pads smaller than its size 3"},
      {"graph @t(%x: f32[2,3]) {\n  %0 = pad(%x) {pads = [1, 1]} : f32[4,3]\n  return r = %0\n}",
       "attribute 'pads' must have 4 entries (begins, then ends, for f32[2,3]), got 2"},
      {"graph @t(%x: f32[2,3]) {\n  %0 = pad(%x) {mode = \"wrap\", pads = [0, 0, 0, 0]} : f32[2,3]\n  return r = %0\n}",
       "attribute 'mode' must be \"constant\", \"reflect\" or \"edge\", got \"wrap\""},
      {"graph @t(%x: f32[2,3]) {\n  %0 = pad(%x) {pads = [-2, 0, -1, 0]} : f32[0,3]\n  return r = %0\n}",
       "pads -2 and -1 crop more than the 2 elements of axis 0"},
      {"graph @t(%x: f32[2,3]) {\n  %0 = pad(%x) {pads = [0, 0, 0, 9223372036854775807]} : f32[2,3]\n  return r = %0\n}",
       "attribute 'pads' entry 9223372036854775807 is out of range"},
      {"graph @t(%x: f32[0,3]) {\n  %0 = pad(%x) {mode = \"edge\", pads = [1, 0, 0, 0]} : f32[1,3]\n  return r = %0\n}",
       "edge padding of axis 0 needs at least one element"},
      {"graph @t(%d: f32[3,4], %i: f32[2]) {\n  %0 = gather(%d, %i) : f32[2,4]\n  return r = %0\n}",
       "gather %0: operand #1 (indices) must be one of i32,i64, got f32"},
      {"graph @t(%d: f32[3,4], %i: i64[2]) {\n  %0 = gather(%d, %i) {axis = 2} : f32[2,4]\n  return r = %0\n}",
       "attribute 'axis': axis 2 is out of range for rank 2"},
      {"graph @t(%d: f32[], %i: i64[2]) {\n  %0 = gather(%d, %i) : f32[2]\n  return r = %0\n}",
       "operand #0 (data) must have rank >= 1, got f32[]"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::string message = parseErrorOrEmpty(c.text);
    CHECK_MESSAGE(message.find(c.expected) != std::string::npos, message);
  }
}

TEST_CASE("shape ops never crash on absurd attributes: inference and reference fail cleanly or agree") {
  // The parser passes any int or int list through, so sample extreme values for every int attribute
  // of every op here; whatever inference accepts must also run and produce the inferred type.
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int64_t extremes[] = {INT64_MIN, -(int64_t{1} << 41), -5, -3, -2, -1, 0, 1, 2, 3, 4, (int64_t{1} << 41), INT64_MAX};
  auto pick = [&] { return extremes[rng() % std::size(extremes)]; };
  auto list = [&] {
    std::vector<int64_t> v(rng() % 5);
    for (int64_t& x : v) x = pick();
    return v;
  };
  struct OpAttrs {
    const char* op;
    std::vector<const char*> ints, lists;
  };
  const OpAttrs ops[] = {
      {"transpose", {}, {"perm"}},      {"reshape", {}, {"shape"}},          {"flatten", {"axis"}, {}},
      {"squeeze", {}, {"axes"}},        {"unsqueeze", {}, {"axes"}},         {"expand", {}, {"shape"}},
      {"concat", {"axis"}, {}},         {"slice", {}, {"starts", "ends", "axes", "steps"}},
      {"pad", {}, {"pads"}},            {"gather", {"axis"}, {}},            {"gemm", {"trans_a", "trans_b"}, {}},
  };
  int accepted = 0;
  for (int iteration = 0; iteration < 4000; ++iteration) {
    const OpAttrs& o = ops[iteration % std::size(ops)];
    std::string_view op = o.op;
    Graph g;
    std::vector<Value*> operands{g.addInput("x", TensorType{DType::u8, op == "gemm" ? Shape{3, 3} : Shape{1, 3, 2}})};
    if (op == "gather") operands.push_back(g.addInput("i", TensorType{DType::i64, {2}}));
    if (op == "concat" || op == "gemm") operands.push_back(operands[0]);
    AttrMap attrs;
    for (const char* name : o.ints) attrs[name] = pick();
    for (const char* name : o.lists) attrs[name] = list();
    if (op == "pad" && rng() % 2) attrs["mode"] = std::string(rng() % 2 ? "reflect" : "edge");
    CAPTURE(op);
    auto node = g.addNode(o.op, operands, attrs);
    if (!node.ok()) continue;
    ++accepted;
    g.addOutput("r", (*node)->result());
    auto out = interpret(g, testing::randomFeeds(g, seed + iteration));
    // Random gather indices may be out of range; that must be an error, not a crash.
    if (!out.ok()) {
      CHECK_MESSAGE(op == "gather", out.error().message());
      continue;
    }
    CHECK((*out)[0].type() == (*node)->result()->type());
  }
  CHECK(accepted > 100);
}
