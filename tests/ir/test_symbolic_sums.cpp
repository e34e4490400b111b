// Sums and floor quotients of symbolic dimensions (ir/type.h): a concat along a symbolic sequence
// ("T+1"), a pad or a cut of one ("N+2", "N-1": never one that clamps at small sizes), a strided
// convolution or pool over a symbolic image size ("(H+1)/2+1"). One canonical extent per polynomial, printed and parsed
// back losslessly; its value at any binding is the integer arithmetic it stands for; ops infer them, and the bound
// graph is the static graph of that size.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <functional>
#include <random>

#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"
#include "tests/support/symbolic_batch.h"

using namespace smelt;

namespace {

int64_t sumOf(int64_t a, int64_t b) { return addExtents(a, b).value(); }
int64_t differenceOf(int64_t a, int64_t b) { return subtractExtents(a, b).value(); }
int64_t productOf(int64_t a, int64_t b) { return multiplyExtents(a, b).value(); }
int64_t quotientOf(int64_t a, int64_t d) { return floorDivideExtent(a, d).value(); }
std::string nameOf(int64_t extent) { return extentToString(extent); }

/// An extent built at random from H and W with +, -, * and floor division by small counts, beside
/// the integer function it stands for.
struct RandomExtent {
  int64_t extent;
  std::function<int64_t(int64_t, int64_t)> value;
};

RandomExtent randomExtent(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 2 : 7);
  std::uniform_int_distribution<int64_t> small(-4, 6);
  switch (pick(rng)) {
    case 0:
      return {dimSymbol("H"), [](int64_t h, int64_t) { return h; }};
    case 1:
      return {dimSymbol("W"), [](int64_t, int64_t w) { return w; }};
    case 2: {
      int64_t c = small(rng);
      return {c < 0 ? -c : c, [c](int64_t, int64_t) { return c < 0 ? -c : c; }};
    }
    case 3:
    case 4: {
      RandomExtent a = randomExtent(rng, depth - 1), b = randomExtent(rng, depth - 1);
      return {sumOf(a.extent, b.extent), [a, b](int64_t h, int64_t w) { return a.value(h, w) + b.value(h, w); }};
    }
    case 5: {
      RandomExtent a = randomExtent(rng, depth - 1), b = randomExtent(rng, depth - 1);
      return {differenceOf(a.extent, b.extent), [a, b](int64_t h, int64_t w) { return a.value(h, w) - b.value(h, w); }};
    }
    case 6: {
      RandomExtent a = randomExtent(rng, depth - 1);
      int64_t c = std::uniform_int_distribution<int64_t>(0, 3)(rng);
      if (!isSymbolic(a.extent) && a.extent < 0) return a;  // multiplyExtents takes no negative count
      return {productOf(a.extent, c), [a, c](int64_t h, int64_t w) { return a.value(h, w) * c; }};
    }
    default: {
      RandomExtent a = randomExtent(rng, depth - 1);
      int64_t d = std::uniform_int_distribution<int64_t>(1, 4)(rng);
      auto floorDiv = [](int64_t x, int64_t y) { return x / y - ((x % y != 0) && ((x < 0) != (y < 0))); };
      return {quotientOf(a.extent, d), [a, d, floorDiv](int64_t h, int64_t w) { return floorDiv(a.value(h, w), d); }};
    }
  }
}

}  // namespace

TEST_CASE("symbolic sums: one canonical extent per polynomial, named as the text IR spells it") {
  const int64_t n = dimSymbol("N"), t = dimSymbol("T"), h = dimSymbol("H");
  const int64_t n1 = sumOf(n, 1);
  CHECK(nameOf(n1) == "N+1");
  CHECK(sumOf(1, n) == n1);
  CHECK(sumOf(n, n) == productOf(n, 2));
  CHECK(differenceOf(n1, 1) == n);
  CHECK(differenceOf(n, n) == 0);
  CHECK(differenceOf(0, 3) == -3);  // a negative count: the caller checks extents
  CHECK(nameOf(differenceOf(n, 1)) == "N-1");
  CHECK(nameOf(sumOf(t, n)) == "N+T");
  CHECK(nameOf(differenceOf(sumOf(productOf(n, 2), t), 1)) == "2*N+T-1");
  CHECK(nameOf(sumOf(productOf(n, t), n)) == "N*T+N");
  CHECK(nameOf(differenceOf(t, n)) == "-N+T");
  CHECK(isSymbolic(n1));
  CHECK(!isPlainSymbol(n1));
  CHECK(!isMonomial(n1));
  CHECK(isMonomial(productOf(n, 12)));
  CHECK(extentFactors(n1).count == 0);  // no count times symbols
  CHECK(extentSymbols(sumOf(productOf(n, t), h)) == std::vector<std::string>{"H", "N", "T"});

  // Floor division: exact where the divisor divides every coefficient, else one floor quotient atom.
  const int64_t half = quotientOf(sumOf(h, 1), 2);
  CHECK(nameOf(half) == "(H+1)/2");
  CHECK(nameOf(sumOf(half, 1)) == "(H+1)/2+1");
  CHECK(floorQuotientOf(half).has_value());
  CHECK(floorQuotientOf(half)->divisor == 2);
  CHECK(floorQuotientOf(half)->numerator == sumOf(h, 1));
  CHECK(quotientOf(sumOf(productOf(h, 2), 4), 2) == sumOf(h, 2));
  CHECK(quotientOf(sumOf(productOf(h, 2), 5), 2) == sumOf(h, 2));  // (2H+5)/2 = H+2
  CHECK(quotientOf(sumOf(productOf(h, 3), 1), 2) == sumOf(h, quotientOf(sumOf(h, 1), 2)));
  CHECK(quotientOf(differenceOf(h, 1), 2) == differenceOf(quotientOf(sumOf(h, 1), 2), 1));  // (H-1)/2 = (H+1)/2-1
  CHECK(quotientOf(7, 2) == 3);
  CHECK(quotientOf(h, 1) == h);
  CHECK(extentSymbols(half) == std::vector<std::string>{"H"});
  // The remainder a stride-2 convolution's data gradient restores H with (output_padding).
  CHECK(nameOf(differenceOf(sumOf(h, 1), productOf(half, 2))) == "-2*(H+1)/2+H+1");
  CHECK(!floorDivideExtent(h, 0).ok());

  // Exact division by a count or one term.
  CHECK(divideExtents(sumOf(productOf(n, 4), 4), 4) == n1);
  CHECK(divideExtents(sumOf(productOf(n, t), n), n) == sumOf(t, 1));
  CHECK(!divideExtents(n1, 2));
  CHECK(!divideExtents(n1, n));
  CHECK(divideExtents(n1, n1) == 1);

  // Never equal where every symbol is at least 1: a constant apart, or positive coefficients apart.
  CHECK(!extentsUnify(n1, n));
  CHECK(!extentsUnify(sumOf(productOf(n, 2), 1), sumOf(productOf(n, 2), 3)));
  CHECK(!extentsUnify(sumOf(n, t), n));
  CHECK(extentsUnify(n1, t));
  CHECK(extentsUnify(n, half));  // equal at H = 2N-1
  CHECK(!extentsUnify(n1, 5));
  // Extents of one symbol that agree at only a size or two do not unify, though they can be equal (a
  // random graph at batch 1 met 3*N against N+2, and N against (N)/2 broadcast as 1 against 0)...
  CHECK(extentsMayBeEqual(productOf(n, 3), sumOf(n, 2)));
  CHECK(!extentsUnify(productOf(n, 3), sumOf(n, 2)));
  CHECK(!extentsUnify(n, quotientOf(n, 2)));
  CHECK(!extentsUnify(productOf(n, n), productOf(n, 2)));
  // ... while those equal at every size, or at a regular share of sizes, do.
  CHECK(extentsUnify(productOf(quotientOf(h, 2), 2), h));  // a pooling and an upsampling: every even H
  CHECK(extentsUnify(productOf(quotientOf(h, 32), 32), h));
  CHECK(extentsUnify(quotientOf(sumOf(h, 1), 2), quotientOf(sumOf(h, 2), 2)));  // every odd H
  CHECK(checkShapeLimits(Shape{n1, half}).ok());
}

TEST_CASE("symbolic sums: random polynomials over H and W evaluate as their integer arithmetic and parse back") {
  std::mt19937_64 rng(testing::testSeed());
  std::uniform_int_distribution<int64_t> size(1, 40);
  for (int i = 0; i < 300; ++i) {
    RandomExtent e = randomExtent(rng, 4);
    CAPTURE(nameOf(e.extent));
    for (int j = 0; j < 8; ++j) {
      const int64_t hv = size(rng), wv = size(rng);
      CAPTURE(hv);
      CAPTURE(wv);
      auto value = evaluateExtent(e.extent, {{"H", hv}, {"W", wv}});
      REQUIRE_MESSAGE(value.ok(), value.error().message());
      CHECK(*value == e.value(hv, wv));
    }
    if (!isSymbolic(e.extent) || nameOf(e.extent)[0] == '-') continue;  // -H is no extent of a type
    // Spelled in a type, the name parses to the same extent.
    auto g = parseGraph(fmt::format("graph @g(%x: f32[{},3]) {{\n  return y = %x\n}}\n", nameOf(e.extent)));
    REQUIRE_MESSAGE(g.ok(), g.error().message());
    const TensorType* type = &g->inputs()[0]->type();
    CHECK(type->shape[0] == e.extent);
  }
}

TEST_CASE(
    "symbolic sums: concat, pad, slice, convolutions and pools infer them, and the bound graph is the static one") {
  constexpr const char* kSequence =
      R"(graph @g(%past: f32[N,T,4], %new: f32[N,1,4], %img: f32[N,2,H,W], %w: f32[3,2,3,3], %tw: f32[2,3,2,2]) {
  %0 = concat(%past, %new) {axis = 1} : f32[N,T+1,4]
  %1 = softmax(%0) {axis = 1} : f32[N,T+1,4]
  %2 = slice(%1) {starts = [1], ends = [9223372036854775807], axes = [1]} : f32[N,T,4]
  %3 = slice(%1) {starts = [-1], ends = [9223372036854775807], axes = [1]} : f32[N,1,4]
  %4 = slice(%1) {starts = [0], ends = [9223372036854775807], axes = [1], steps = [2]} : f32[N,(T+2)/2,4]
  %5 = pad(%2) {pads = [0, 2, 0, 0, 1, 0]} : f32[N,T+3,4]
  %6 = concat(%5, %2) {axis = 1} : f32[N,2*T+3,4]
  %7 = conv2d(%img, %w) {padding = [1, 1, 1, 1], stride = [2, 2]} : f32[N,3,(H+1)/2,(W+1)/2]
  %8 = max_pool2d(%7) {kernel = [2, 2]} : f32[N,3,(H+1)/4,(W+1)/4]
  %9 = conv_transpose2d(%img, %tw) {stride = [2, 2]} : f32[N,3,2*H,2*W]
  %10 = avg_pool2d(%9) {kernel = [3, 3], stride = [2, 2], padding = [1, 1, 1, 1]} : f32[N,3,H,W]
  %11 = slice(%img) {starts = [1, 0], ends = [9223372036854775807, -1], axes = [2, 3], steps = [1, 3]} : f32[N,2,H-1,(W+1)/3]
  %12 = pad(%11) {pads = [0, 0, 0, 1, 0, 0, 0, 2]} : f32[N,2,H-1,(W+1)/3+3]
  return a = %3, b = %4, c = %6, d = %8, e = %10, f = %12
}
)";
  Graph g = testing::parseOrFail(kSequence);
  CHECK(toText(testing::parseOrFail(toText(g))) == toText(g));
  for (int64_t tv : {3, 4, 9}) {
    // Named copies, not a structured binding: clang 14 (the sanitizer build) cannot capture those.
    for (const std::pair<int64_t, int64_t>& size : {std::pair<int64_t, int64_t>{3, 5}, {8, 8}, {11, 6}}) {
      const int64_t hv = size.first, wv = size.second;
      CAPTURE(tv);
      CAPTURE(hv);
      CAPTURE(wv);
      auto binding = bindingFromInputs(g, std::vector<TensorType>{{DType::f32, {2, tv, 4}},
                                                                  {DType::f32, {2, 1, 4}},
                                                                  {DType::f32, {2, 2, hv, wv}},
                                                                  {DType::f32, {3, 2, 3, 3}},
                                                                  {DType::f32, {2, 3, 2, 2}}});
      REQUIRE_MESSAGE(binding.ok(), binding.error().message());
      // bindDims infers every node again at the bound sizes and checks each result against its symbolic type.
      auto bound = bindDims(g, *binding);
      REQUIRE_MESSAGE(bound.ok(), bound.error().message());
      testing::checkSymbolicRunsAsBound(g, *bound, testing::testSeed() + static_cast<uint64_t>(tv * 100 + hv));
    }
  }
}

TEST_CASE("symbolic sums: what stays an error names the node") {
  std::string e = testing::requireParseError(R"(graph @g(%x: f32[1,1,H,5]) {
  %0 = max_pool2d(%x) {kernel = [2, 2], ceil_mode = 1} : f32[1,1,H,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("max_pool2d %0: ceil_mode over a symbolic height (H): bind it first") != std::string::npos, e);
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3]) {
  %0 = pad(%x) {pads = [1, 0, 1, 0], mode = "reflect"} : f32[N+2,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("reflect padding of symbolic axis 0 (N)") != std::string::npos, e);
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3]) {
  %0 = slice(%x) {starts = [-1], ends = [-9223372036854775807], steps = [-1]} : f32[N,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("slicing it [-1:-9223372036854775807:-1] runs from its end") != std::string::npos, e);
  // Cuts that clamp at small sizes have no one polynomial: x[-3:] is min(3, N), x[1:-1] max(N-2, 0).
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3]) {
  %0 = slice(%x) {starts = [-3], ends = [9223372036854775807]} : f32[3,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("slice %0: axis 0 is symbolic dimension N: slicing it [-3:9223372036854775807:1] clamps at "
                       "small sizes; bind it first") != std::string::npos,
                e);
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3]) {
  %0 = slice(%x) {starts = [1], ends = [-1]} : f32[N-2,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("clamps at small sizes") != std::string::npos, e);
  // A floor quotient can be 0 (N/2 at N = 1), so its x[:1], x[1:] and x[-1:] clamp too (a random graph found it).
  for (const char* cut : {"starts = [0], ends = [1]", "starts = [1], ends = [9223372036854775807]",
                          "starts = [-1], ends = [9223372036854775807]"}) {
    CAPTURE(cut);
    e = testing::requireParseError(std::string(R"(graph @g(%x: f32[N,3]) {
  %0 = slice(%x) {starts = [0], ends = [-1], steps = [2]} : f32[(N)/2,3]
  %1 = slice(%0) {)") + cut + R"(} : f32[1,3]
  return y = %1
})");
    CHECK_MESSAGE(e.find("slice %1: axis 0 is symbolic dimension (N)/2") != std::string::npos, e);
    CHECK_MESSAGE(e.find("clamps at small sizes") != std::string::npos, e);
  }
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3]) {
  %0 = pad(%x) {pads = [-1, 0, -1, 0]} : f32[N-2,3]
  return y = %0
})");
  CHECK_MESSAGE(
      e.find("pad %0: pads -1 and -1 crop symbolic axis 0 (N) to N-2, empty at small sizes") != std::string::npos, e);
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3], %y: f32[N,3]) {
  %0 = concat(%x, %y) {axis = 0} : f32[N+1,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("the op gives f32[2*N,3]") != std::string::npos, e);
  e = testing::requireParseError("graph @g(%x: f32[" + std::string(40, '(') + "N" + std::string(40, ')') +
                                 "]) {\n  return y = %x\n}\n");
  CHECK_MESSAGE(e.find("nests parentheses too deeply") != std::string::npos, e);
  // N+1 and N never unify.
  e = testing::requireParseError(R"(graph @g(%x: f32[N,3], %y: f32[N,3]) {
  %0 = concat(%x, %y) {axis = 1} : f32[N,6]
  %1 = pad(%0) {pads = [1, 0, 0, 0]} : f32[N+1,6]
  %2 = add(%1, %0) : f32[N+1,6]
  return y = %2
})");
  CHECK_MESSAGE(e.find("do not broadcast") != std::string::npos, e);
}

TEST_CASE("symbolic sums: an input declaring one binds its symbol, or says why not") {
  Graph g = testing::parseOrFail(
      "graph @g(%x: f32[T+1,3], %y: f32[2*N-1]) {\n  %0 = neg(%y) : f32[2*N-1]\n  return a = %x, b = %0\n}\n");
  auto bind = [&](Shape x, Shape y) {
    return bindingFromInputs(g, std::vector<TensorType>{{DType::f32, std::move(x)}, {DType::f32, std::move(y)}});
  };
  auto b = bind({8, 3}, {9});
  REQUIRE_MESSAGE(b.ok(), b.error().message());
  CHECK(bindingToString(*b) == "N=5, T=7");
  auto bad = bind({8, 3}, {8});
  REQUIRE_FALSE(bad.ok());
  CHECK_MESSAGE(bad.error().message().find("input 'y' dimension #0 is declared 2*N-1, fed 8, which no N makes") !=
                    std::string::npos,
                bad.error().message());
  bad = bind({0, 3}, {9});
  REQUIRE_FALSE(bad.ok());
  CHECK_MESSAGE(bad.error().message().find("declared T+1, fed 0, which no T makes") != std::string::npos,
                bad.error().message());
}
