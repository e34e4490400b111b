// Products of symbolic dimensions (ir/type.h): a reshape that merges a symbolic batch with other
// dimensions ("4*N"), as Swin's window partition and attention's heads do. They print and parse
// losslessly, divide back exactly, never unify with the same symbols times another count, bind from
// the inputs that declare them, and the bound graph is the static graph of that size.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"
#include "tests/support/symbolic_batch.h"

using namespace smelt;

namespace {

std::string productsError(std::string_view text) {
  auto g = parseGraph(text);
  REQUIRE_MESSAGE(!g.ok(), "parsed, expected an error:\n", text);
  return g.error().message();
}

}  // namespace

TEST_CASE("symbolic products: one canonical extent per monomial, divided back exactly") {
  const int64_t n = dimSymbol("N"), t = dimSymbol("T");
  const int64_t n12 = multiplyExtents(n, 12).value();
  CHECK(multiplyExtents(12, n).value() == n12);
  CHECK(dimSymbolName(n12) == "12*N");
  CHECK(isSymbolic(n12));
  CHECK(!isPlainSymbol(n12));
  CHECK(isPlainSymbol(n));
  CHECK(!isPlainSymbol(12));
  const int64_t nt = multiplyExtents(n, t).value();
  CHECK(multiplyExtents(t, n).value() == nt);
  CHECK(dimSymbolName(nt) == "N*T");
  CHECK(dimSymbolName(multiplyExtents(multiplyExtents(t, 3).value(), multiplyExtents(n, n).value()).value()) ==
        "3*N*N*T");
  CHECK(extentFactors(nt).symbols == std::vector<std::string>{"N", "T"});
  CHECK(extentFactors(n12).count == 12);
  CHECK(extentFactors(7).count == 7);
  CHECK(extentFactors(7).symbols.empty());
  CHECK(multiplyExtents(n, 1).value() == n);
  CHECK(multiplyExtents(n, 0).value() == 0);
  CHECK(multiplyExtents(6, 7).value() == 42);
  CHECK(!multiplyExtents(multiplyExtents(n, kMaxElements).value(), 2).ok());
  CHECK(!multiplyExtents(n, -3).ok());

  CHECK(divideExtents(n12, 4) == multiplyExtents(n, 3).value());
  CHECK(divideExtents(n12, n) == 12);
  CHECK(divideExtents(nt, t) == n);
  CHECK(divideExtents(12, 4) == 3);
  CHECK(!divideExtents(n12, 5));
  CHECK(!divideExtents(n, 2));  // N / 2 is no count times symbols
  CHECK(!divideExtents(n12, t));
  CHECK(!divideExtents(12, n));
  CHECK(!divideExtents(n, 0));

  // The same symbols times two counts never meet; other symbolic extents may (N*T is 2*N at T = 2).
  CHECK(!extentsUnify(multiplyExtents(n, 2).value(), multiplyExtents(n, 3).value()));
  CHECK(extentsUnify(multiplyExtents(n, 2).value(), nt));
  CHECK(extentsUnify(n12, t));
  CHECK(!extentsUnify(n12, 12));
  // checkShapeLimits counts a product's count.
  CHECK(checkShapeLimits(Shape{n12, 3}).ok());
  CHECK(!checkShapeLimits(Shape{multiplyExtents(n, int64_t{1} << 30).value(), int64_t{1} << 20}).ok());
}

TEST_CASE("symbolic products: the text IR prints and parses them, and inference makes and checks them") {
  Graph g = testing::parseOrFail(testing::kBatchWindows);
  CHECK(toText(g) == testing::kBatchWindows);
  CHECK(g.symbolicDims() == std::vector<std::string>{"N"});
  CHECK(g.outputs()[1].value->type().toString() == "f32[16*N,3]");
  // Written in any order, a product reads as its canonical form.
  Graph swapped = testing::parseOrFail(
      "graph @g(%x: f32[N*T*2]) {\n  %0 = reshape(%x) {shape = [T, N*2]} : f32[T,2*N]\n  return y = %0\n}\n");
  CHECK(swapped.inputs()[0]->type().toString() == "f32[2*N*T]");
  CHECK(toText(testing::parseOrFail(toText(swapped))) == toText(swapped));
  CHECK(swapped.symbolicDims() == std::vector<std::string>{"N", "T"});

  std::string e =
      productsError("graph @g(%x: f32[2*N], %y: f32[3*N]) {\n  %0 = add(%x, %y) : f32[2*N]\n  return z = %0\n}\n");
  CHECK_MESSAGE(e.find("2*N vs 3*N") != std::string::npos, e);
  e = productsError(
      "graph @g(%x: f32[N,6]) {\n  %0 = reshape(%x) {shape = [4*N, -1]} : f32[4*N,1]\n  return z = %0\n}\n");
  CHECK_MESSAGE(e.find("6*N is not a multiple of 4*N") != std::string::npos, e);
  e = productsError("graph @g(%x: f32[N,6]) {\n  %0 = reshape(%x) {shape = [2*3, N]} : f32[6,N]\n  return z = %0\n}\n");
  CHECK_MESSAGE(e.find("arithmetic on counts") != std::string::npos, e);
  e = productsError("graph @g(%x: f32[N*-2]) {\n  %0 = neg(%x) : f32[N]\n  return z = %0\n}\n");
  CHECK_MESSAGE(e.find("negative") != std::string::npos, e);
}

TEST_CASE("symbolic products: bound, the graph is the static graph of that size, run by the reference") {
  Graph g = testing::parseOrFail(testing::kBatchWindows);
  for (int64_t n : {1, 3, 8}) {
    CAPTURE(n);
    auto binding = bindingFromInputs(g, std::vector<TensorType>{{DType::f32, {n, 4, 4, 3}}});
    REQUIRE_MESSAGE(binding.ok(), binding.error().message());
    auto bound = bindDims(g, *binding);
    REQUIRE_MESSAGE(bound.ok(), bound.error().message());
    std::string fixed = testing::kBatchWindows;
    fixed.erase(fixed.find("  dim N"), fixed.find("  %0") - fixed.find("  dim N"));
    for (auto [from, to] : {std::pair<std::string, int64_t>{"16*N", 16 * n}, {"4*N", 4 * n}, {"N", n}}) {
      for (size_t at; (at = fixed.find(from)) != std::string::npos;) fixed.replace(at, from.size(), std::to_string(to));
    }
    CHECK(toText(*bound) == toText(testing::parseOrFail(fixed)));
    testing::checkSymbolicRunsAsBound(g, *bound, testing::testSeed() + n);
  }
}

TEST_CASE("symbolic products: an input declaring one binds its symbol, or says why not") {
  Graph g = testing::parseOrFail(
      "graph @g(%x: f32[4*N,3], %y: f32[N*T]) {\n  dim N in [1, 8]\n  %0 = neg(%y) : f32[N*T]\n"
      "  return a = %x, b = %0\n}\n");
  auto bind = [&](Shape x, Shape y) {
    return bindingFromInputs(g, std::vector<TensorType>{{DType::f32, std::move(x)}, {DType::f32, std::move(y)}});
  };
  // x solves N, then y solves T.
  auto b = bind({12, 3}, {15});
  REQUIRE_MESSAGE(b.ok(), b.error().message());
  CHECK(bindingToString(*b) == "N=3, T=5");
  auto fail = [&](Shape x, Shape y, std::string_view wanted) {
    auto bad = bind(std::move(x), std::move(y));
    REQUIRE_FALSE(bad.ok());
    CHECK_MESSAGE(bad.error().message().find(wanted) != std::string::npos, bad.error().message());
  };
  fail({13, 3}, {15}, "input 'x' dimension #0 is declared 4*N, fed 13, which is no multiple of 4");
  fail({12, 3}, {16}, "input 'y' dimension #0 is declared N*T, fed 16, which is no multiple of 3");
  fail({40, 3}, {10}, "N = 10 is outside its range [1, 8]");
  // Given N, a product is checked against it.
  DimBinder binder(g);
  REQUIRE(binder.bind("N", 2, "--dim").ok());
  REQUIRE(binder.bindInput(*g.inputs()[0], {DType::f32, {12, 3}}).ok());
  auto disagree = binder.binding();
  REQUIRE_FALSE(disagree.ok());
  CHECK_MESSAGE(disagree.error().message().find("declared 4*N = 8 at N=2, fed 12") != std::string::npos,
                disagree.error().message());
  // N*N cannot be solved for N: an input must declare N alone.
  Graph square = testing::parseOrFail("graph @g(%x: f32[N*N]) {\n  %0 = neg(%x) : f32[N*N]\n  return y = %0\n}\n");
  auto unsolved = bindingFromInputs(square, std::vector<TensorType>{{DType::f32, {9}}});
  REQUIRE_FALSE(unsolved.ok());
  CHECK_MESSAGE(unsolved.error().message().find("N*N, whose symbols no input binds alone") != std::string::npos,
                unsolved.error().message());
  CHECK(evaluateExtent(multiplyExtents(dimSymbol("N"), 4).value(), {{"N", 5}}).value() == 20);
  CHECK(!evaluateExtent(dimSymbol("N"), {}).ok());
}
