// matmul and gemm: shape inference, verifier messages, and reference values checked against numpy.
#include "ir/interpreter.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

using namespace smelt;

using testing::checkClose;
using testing::parseErrorOrEmpty;
using testing::runFirstOutput;

namespace {

Tensor tensorOf(DType dtype, Shape shape, std::vector<double> values) {
  return Tensor::fromDoubles(TensorType{dtype, std::move(shape)}, values);
}

}  // namespace

TEST_CASE("matmul: 2x3 @ 3x2 by hand, in several dtypes") {
  const char* text = R"(graph @t(%a: $T[2,3], %b: $T[3,2]) {
  %0 = matmul(%a, %b) : $T[2,2]
  return r = %0
})";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u16}) {
    CAPTURE(dtypeName(dtype));
    std::string ir = substituteDType(text, dtypeName(dtype));
    Tensor r = runFirstOutput(ir, {{"a", tensorOf(dtype, {2, 3}, {1, 2, 3, 4, 5, 6})},
                                   {"b", tensorOf(dtype, {3, 2}, {7, 8, 9, 10, 11, 12})}});
    // [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
    checkClose(r, tensorOf(dtype, {2, 2}, {58, 64, 139, 154}));
  }
}

TEST_CASE("matmul: batch dims broadcast, [2,1,3,4] @ [5,4,2] -> [2,5,3,2]") {
  std::vector<double> a(24), b(40);
  for (int i = 0; i < 24; ++i) a[i] = i * 0.5 - 3;
  for (int i = 0; i < 40; ++i) b[i] = i * 0.25 - 4;
  Tensor r = runFirstOutput(R"(graph @t(%a: f64[2,1,3,4], %b: f64[5,4,2]) {
  %0 = matmul(%a, %b) : f64[2,5,3,2]
  return r = %0
})",
                            {{"a", tensorOf(DType::f64, {2, 1, 3, 4}, a)}, {"b", tensorOf(DType::f64, {5, 4, 2}, b)}});
  // numpy: a = np.arange(24.).reshape(2,1,3,4)*0.5-3; b = np.arange(40.).reshape(5,4,2)*0.25-4; (a@b).ravel()
  checkClose(r, tensorOf(DType::f64, {2, 5, 3, 2},
                         {30.5,  28.25, 4.5,   4.25,  -21.5, -19.75, 12.5,  10.25, 2.5,   2.25,  -7.5,  -5.75,
                          -5.5,  -7.75, 0.5,   0.25,  6.5,   8.25,   -23.5, -25.75, -1.5, -1.75, 20.5,  22.25,
                          -41.5, -43.75, -3.5, -3.75, 34.5,  36.25,  -47.5, -43.75, -73.5, -67.75, -99.5, -91.75,
                          -17.5, -13.75, -27.5, -21.75, -37.5, -29.75, 12.5, 16.25, 18.5,  24.25, 24.5,  32.25,
                          42.5,  46.25, 64.5,  70.25, 86.5,  94.25,  72.5,  76.25, 110.5, 116.25, 148.5, 156.25}));
}

TEST_CASE("matmul: rank-1 operands are promoted and the added dim removed") {
  Tensor v3 = tensorOf(DType::f32, {3}, {1, 2, 3});
  Tensor m32 = tensorOf(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor m23 = tensorOf(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  SUBCASE("vector @ matrix") {
    Tensor r =
        runFirstOutput("graph @t(%v: f32[3], %m: f32[3,2]) {\n  %0 = matmul(%v, %m) : f32[2]\n  return r = %0\n}",
                       {{"v", v3}, {"m", m32}});
    checkClose(r, tensorOf(DType::f32, {2}, {22, 28}));
  }
  SUBCASE("matrix @ vector") {
    Tensor r =
        runFirstOutput("graph @t(%m: f32[2,3], %v: f32[3]) {\n  %0 = matmul(%m, %v) : f32[2]\n  return r = %0\n}",
                       {{"v", tensorOf(DType::f32, {3}, {1, 0, -1})}, {"m", m23}});
    checkClose(r, tensorOf(DType::f32, {2}, {-2, -2}));
  }
  SUBCASE("vector @ vector is a scalar") {
    Tensor r = runFirstOutput("graph @t(%a: f32[3], %b: f32[3]) {\n  %0 = matmul(%a, %b) : f32[]\n  return r = %0\n}",
                              {{"a", v3}, {"b", tensorOf(DType::f32, {3}, {4, 5, 6})}});
    checkClose(r, tensorOf(DType::f32, {}, {32}));
  }
  SUBCASE("vector with a batched matrix") {
    CHECK(parseErrorOrEmpty(
              "graph @t(%a: f32[4], %b: f32[2,3,4,5]) {\n  %0 = matmul(%a, %b) : f32[2,3,5]\n  return r = %0\n}")
              .empty());
    CHECK(parseErrorOrEmpty(
              "graph @t(%a: f32[2,3,4,5], %b: f32[5]) {\n  %0 = matmul(%a, %b) : f32[2,3,4]\n  return r = %0\n}")
              .empty());
  }
}

TEST_CASE("matmul: integers are exact in 64 bits and wrap to the dtype") {
  // numpy: np.matmul(np.array([[100,100]],np.int8), np.array([[1],[1]],np.int8)) == [[-56]]
  Tensor r = runFirstOutput("graph @t(%a: i8[1,2], %b: i8[2,1]) {\n  %0 = matmul(%a, %b) : i8[1,1]\n  return r = %0\n}",
                            {{"a", Tensor::of<int8_t>({1, 2}, {100, 100})}, {"b", Tensor::of<int8_t>({2, 1}, {1, 1})}});
  CHECK(r.data<int8_t>()[0] == -56);
  // Past 2^53 a double accumulator would round; the integer path must not.
  uint64_t big = (uint64_t{1} << 63) + 1;
  Tensor u = runFirstOutput("graph @t(%a: u64[1,2], %b: u64[2]) {\n  %0 = matmul(%a, %b) : u64[1]\n  return r = %0\n}",
                            {{"a", Tensor::of<uint64_t>({1, 2}, {big, 5})}, {"b", Tensor::of<uint64_t>({2}, {1, 2})}});
  CHECK(u.data<uint64_t>()[0] == big + 10);
}

TEST_CASE("gemm: the four transpose combinations with alpha and beta") {
  const Tensor a = tensorOf(DType::f32, {2, 2}, {1, 2, 3, 4});
  const Tensor b = tensorOf(DType::f32, {2, 2}, {5, -6, 7, 8});
  const Tensor c = tensorOf(DType::f32, {2, 1}, {1, -2});
  struct Case {
    int transA, transB;
    std::vector<double> floats;   // 1.5*op(A)@op(B) + 0.25*C
    std::vector<double> ints;     // 3*op(A)@op(B) - 2*C
  };
  // numpy: A=[[1,2],[3,4]]; B=[[5,-6],[7,8]]; C=[[1],[-2]]; opA = A.T if ta else A (same for B)
  const Case cases[] = {
      {0, 0, {28.75, 15.25, 64.0, 20.5}, {55, 28, 133, 46}},
      {0, 1, {-10.25, 34.75, -14.0, 79.0}, {-23, 67, -23, 163}},
      {1, 0, {39.25, 27.25, 56.5, 29.5}, {76, 52, 118, 64}},
      {1, 1, {-19.25, 46.75, -21.5, 68.5}, {-41, 91, -38, 142}},
  };
  for (const Case& k : cases) {
    CAPTURE(k.transA);
    CAPTURE(k.transB);
    std::string attrs = fmt::format("trans_a = {}, trans_b = {}", k.transA, k.transB);
    Tensor r = runFirstOutput(fmt::format(R"(graph @t(%a: f32[2,2], %b: f32[2,2], %c: f32[2,1]) {{
  %0 = gemm(%a, %b, %c) {{alpha = 1.5, beta = 0.25, {}}} : f32[2,2]
  return r = %0
}})",
                                          attrs),
                              {{"a", a}, {"b", b}, {"c", c}});
    checkClose(r, tensorOf(DType::f32, {2, 2}, k.floats));
    Tensor ri = runFirstOutput(fmt::format(R"(graph @t(%a: i32[2,2], %b: i32[2,2], %c: i32[2,1]) {{
  %0 = gemm(%a, %b, %c) {{alpha = 3.0, beta = -2.0, {}}} : i32[2,2]
  return r = %0
}})",
                                           attrs),
                               {{"a", tensorOf(DType::i32, {2, 2}, {1, 2, 3, 4})},
                                {"b", tensorOf(DType::i32, {2, 2}, {5, -6, 7, 8})},
                                {"c", tensorOf(DType::i32, {2, 1}, {1, -2})}});
    checkClose(ri, tensorOf(DType::i32, {2, 2}, k.ints));
  }
}

TEST_CASE("gemm: non-square operands stored transposed give the same [M,N] result") {
  // numpy: A=[[1,-2,3],[0.5,4,-1]]; B=[[1,2,0,-1],[3,-1,2,0.5],[-2,1,1,2]]; C=[1,-1,2,0.25];
  // (0.5*A@B - 2*C).ravel()
  const std::vector<double> expected = {-7.5, 5.5, -4.5, 1.5, 5.25, 0.0, -0.5, -0.75};
  const std::vector<double> aRows = {1, -2, 3, 0.5, 4, -1}, aCols = {1, 0.5, -2, 4, 3, -1};
  const std::vector<double> bRows = {1, 2, 0, -1, 3, -1, 2, 0.5, -2, 1, 1, 2};
  const std::vector<double> bCols = {1, 3, -2, 2, -1, 1, 0, 2, 1, -1, 0.5, 2};
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      CAPTURE(ta);
      CAPTURE(tb);
      Shape aShape = ta ? Shape{3, 2} : Shape{2, 3};
      Shape bShape = tb ? Shape{4, 3} : Shape{3, 4};
      std::string text = fmt::format(R"(graph @t(%a: f64{}, %b: f64{}, %c: f64[4]) {{
  %0 = gemm(%a, %b, %c) {{alpha = 0.5, beta = -2.0, trans_a = {}, trans_b = {}}} : f64[2,4]
  return r = %0
}})",
                                     shapeToString(aShape), shapeToString(bShape), ta, tb);
      Tensor r = runFirstOutput(text, {{"a", tensorOf(DType::f64, aShape, ta ? aCols : aRows)},
                                       {"b", tensorOf(DType::f64, bShape, tb ? bCols : bRows)},
                                       {"c", tensorOf(DType::f64, {4}, {1, -1, 2, 0.25})}});
      checkClose(r, tensorOf(DType::f64, {2, 4}, expected));
    }
  }
}

TEST_CASE("gemm: without c, and with a fractional alpha on integers") {
  Tensor r = runFirstOutput(
      "graph @t(%a: f32[1,2], %b: f32[2,1]) {\n  %0 = gemm(%a, %b) {alpha = 2.0} : f32[1,1]\n  return r = %0\n}",
      {{"a", tensorOf(DType::f32, {1, 2}, {1, 2})}, {"b", tensorOf(DType::f32, {2, 1}, {3, 4})}});
  checkClose(r, tensorOf(DType::f32, {1, 1}, {22}));
  // 0.5 * 7 = 3.5 truncates toward zero like cast; -0.5 * 7 = -3.5 -> -3.
  Tensor i = runFirstOutput(
      "graph @t(%a: i16[1,1], %b: i16[1,2]) {\n  %0 = gemm(%a, %b) {alpha = 0.5} : i16[1,2]\n  return r = %0\n}",
      {{"a", tensorOf(DType::i16, {1, 1}, {7})}, {"b", tensorOf(DType::i16, {1, 2}, {1, -1})}});
  checkClose(i, tensorOf(DType::i16, {1, 2}, {3, -3}));
}

TEST_CASE("matmul and gemm: verifier errors name the operands and shapes") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"graph @t(%a: f32[2,3], %b: f32[4,5]) {\n  %0 = matmul(%a, %b) : f32[2,5]\n  return r = %0\n}",
       "matmul %0: operand #1 (b) must be [3,N] to match operand #0 (a) f32[2,3], got f32[4,5]"},
      {"graph @t(%a: f32[2,3], %b: f32[4]) {\n  %0 = matmul(%a, %b) : f32[2]\n  return r = %0\n}",
       "operand #1 (b) must be [3] to match operand #0 (a) f32[2,3], got f32[4]"},
      {"graph @t(%a: f32[2,2,3], %b: f32[3,3,4]) {\n  %0 = matmul(%a, %b) : f32[2,2,4]\n  return r = %0\n}",
       "matmul %0: batch dimensions of operand #0 (a) f32[2,2,3] and operand #1 (b) f32[3,3,4] do not broadcast"},
      {"graph @t(%a: f32[], %b: f32[3]) {\n  %0 = matmul(%a, %b) : f32[]\n  return r = %0\n}",
       "operand #0 (a) must have rank >= 1, got f32[]"},
      {"graph @t(%a: f32[2,3], %b: f64[3,2]) {\n  %0 = matmul(%a, %b) : f32[2,2]\n  return r = %0\n}",
       "they must have the same dtype"},
      {"graph @t(%a: bool[2,3], %b: bool[3,2]) {\n  %0 = matmul(%a, %b) : bool[2,2]\n  return r = %0\n}",
       "operand #0 (a) must be one of"},
      {"graph @t(%a: f32[2,3], %b: f32[2,4]) {\n  %0 = gemm(%a, %b) : f32[2,4]\n  return r = %0\n}",
       "gemm %0: operand #1 (b) must be [3,N] to match operand #0 (a) f32[2,3], got f32[2,4]"},
      {"graph @t(%a: f32[2,3], %b: f32[3,4]) {\n  %0 = gemm(%a, %b) {trans_b = 1} : f32[2,3]\n  return r = %0\n}",
       "operand #1 (b) must be [N,3]"},
      {"graph @t(%a: f32[2,3,1], %b: f32[3,4]) {\n  %0 = gemm(%a, %b) : f32[2,4]\n  return r = %0\n}",
       "operand #0 (a) must have rank 2, got f32[2,3,1]"},
      {"graph @t(%a: f32[2,3], %b: f32[3,4]) {\n  %0 = gemm(%a, %b) {trans_a = 2} : f32[2,4]\n  return r = %0\n}",
       "attribute 'trans_a' must be 0 or 1, got 2"},
      {"graph @t(%a: f32[2,3], %b: f32[3,4], %c: f32[3]) {\n  %0 = gemm(%a, %b, %c) : f32[2,4]\n  return r = %0\n}",
       "operand #2 (c) must broadcast to [2,4], got f32[3]"},
      {"graph @t(%a: f32[2,3], %b: f32[3,4], %c: f32[1,2,4]) {\n  %0 = gemm(%a, %b, %c) : f32[2,4]\n  return r = %0\n}",
       "operand #2 (c) must broadcast to [2,4], got f32[1,2,4]"},
      {"graph @t(%a: f32[2,3], %b: f32[3,4], %c: i32[4]) {\n  %0 = gemm(%a, %b, %c) : f32[2,4]\n  return r = %0\n}",
       "they must have the same dtype"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::string message = parseErrorOrEmpty(c.text);
    CHECK_MESSAGE(message.find(c.expected) != std::string::npos, message);
  }
}

TEST_CASE("matmul: random batched operands agree with per-batch 2-D products") {
  // Property: every batch slice of a broadcast matmul equals the 2-D matmul of the slices it reads.
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  Tensor a = testing::randomTensor(TensorType{DType::f64, {3, 1, 2, 4}}, seed);
  Tensor b = testing::randomTensor(TensorType{DType::f64, {2, 4, 3}}, seed + 1);
  Tensor r = runFirstOutput(
      "graph @t(%a: f64[3,1,2,4], %b: f64[2,4,3]) {\n  %0 = matmul(%a, %b) : f64[3,2,2,3]\n  return r = %0\n}",
      {{"a", a}, {"b", b}});
  const std::vector<double> av = a.toDoubles(), bv = b.toDoubles(), rv = r.toDoubles();
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      std::vector<double> sa(av.begin() + i * 8, av.begin() + i * 8 + 8);
      std::vector<double> sb(bv.begin() + j * 12, bv.begin() + j * 12 + 12);
      Tensor slice =
          runFirstOutput("graph @t(%a: f64[2,4], %b: f64[4,3]) {\n  %0 = matmul(%a, %b) : f64[2,3]\n  return r = %0\n}",
                         {{"a", tensorOf(DType::f64, {2, 4}, sa)}, {"b", tensorOf(DType::f64, {4, 3}, sb)}});
      std::vector<double> got(rv.begin() + (i * 2 + j) * 6, rv.begin() + (i * 2 + j) * 6 + 6);
      checkClose(tensorOf(DType::f64, {2, 3}, got), slice);
    }
  }
}
