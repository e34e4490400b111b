// Symbolic dimensions in the IR (ir/type.h, ir/dims.h): the text IR prints and parses them with their
// ranges, inference carries them through the ops that take them, anything else is an error naming the
// node, and binding gives the static graph that a static source of the same size gives.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "ir/dims.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

constexpr const char* kMlp = R"(graph @mlp(%x: f32[N,4], %y: f32[N,3]) {
  dim N in [1, 256]
  param %w: f32[4,3] = [0.5, -1, 0.25, 1, 2, -0.5, 0.75, 1.5, -2, 1, 0.5, 0.25]
  param %b: f32[3] = [0.1, -0.2, 0.3]
  %0 = matmul(%x, %w) : f32[N,3]
  %1 = add(%0, %b) : f32[N,3]
  %2 = relu(%1) : f32[N,3]
  %3 = softmax(%2) {axis = 1} : f32[N,3]
  %4 = sub(%3, %y) : f32[N,3]
  %5 = mul(%4, %4) : f32[N,3]
  %6 = reduce_sum(%5) {axes = [1]} : f32[N]
  return loss = %6, flat = %5
}
)";

std::string expectError(std::string_view text) {
  auto g = parseGraph(text);
  REQUIRE_MESSAGE(!g.ok(), "parsed, expected an error:\n", text);
  return g.error().message();
}

}  // namespace

TEST_CASE("symbolic dims: the text IR prints and parses them and their ranges losslessly") {
  std::string text = kMlp;
  Graph g = testing::parseOrFail(text);
  CHECK(g.symbolicDims() == std::vector<std::string>{"N"});
  CHECK(g.dimRange("N") == Graph::DimRange{1, 256});
  CHECK(g.inputs()[0]->type().toString() == "f32[N,4]");
  CHECK(!g.inputs()[0]->type().isStatic());
  CHECK(g.outputs()[0].value->type().toString() == "f32[N]");
  std::string printed = toText(g);
  CHECK(printed == text);
  Graph again = testing::parseOrFail(printed);
  CHECK(toText(again) == printed);
  CHECK(verifyGraph(again).ok());
  // A symbol without a declared range takes 1 to 2^40.
  Graph open = testing::parseOrFail("graph @g(%x: f32[B,2]) {\n  %0 = neg(%x) : f32[B,2]\n  return y = %0\n}\n");
  CHECK(open.dimRange("B") == Graph::DimRange{1, kMaxElements});
}

TEST_CASE("symbolic dims: inference carries them, and whatever would compute with one is an error naming the node") {
  // Reshape's -1 stands for the symbol when the other extents hold the same count.
  Graph r = testing::parseOrFail(
      "graph @g(%x: f32[N,3,4]) {\n  %0 = reshape(%x) {shape = [-1, 12]} : f32[N,12]\n  return y = %0\n}\n");
  CHECK(r.outputs()[0].value->type().toString() == "f32[N,12]");
  // To [-1] it multiplies the symbol; to [-1, 2] it would halve 3*N, no count times symbols.
  Graph all = testing::parseOrFail(
      "graph @g(%x: f32[N,3]) {\n  %0 = reshape(%x) {shape = [-1]} : f32[3*N]\n  return y = %0\n}\n");
  CHECK(all.outputs()[0].value->type().toString() == "f32[3*N]");
  std::string e =
      expectError("graph @g(%x: f32[N,3]) {\n  %0 = reshape(%x) {shape = [-1, 2]} : f32[N]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("reshape") != std::string::npos, e);
  CHECK_MESSAGE(e.find("f32[N,3]") != std::string::npos, e);
  CHECK_MESSAGE(e.find("3*N is not a multiple of 2") != std::string::npos, e);
  // A symbol and a count other than 1 do not broadcast (two symbols unify: the next case).
  e = expectError("graph @g(%x: f32[N,3], %y: f32[5,3]) {\n  %0 = add(%x, %y) : f32[N,3]\n  return z = %0\n}\n");
  CHECK_MESSAGE(e.find("N vs 5") != std::string::npos, e);
  // Flatten multiplies each half; an op that does not take symbols says so.
  Graph flat = testing::parseOrFail(
      "graph @g(%x: f32[N,3,4]) {\n  %0 = flatten(%x) {axis = 1} : f32[N,12]\n  return y = %0\n}\n");
  CHECK(flat.outputs()[0].value->type().toString() == "f32[N,12]");
  Graph merged = testing::parseOrFail(
      "graph @g(%x: f32[N,3,4]) {\n  %0 = flatten(%x) {axis = 2} : f32[3*N,4]\n  return y = %0\n}\n");
  CHECK(merged.outputs()[0].value->type().toString() == "f32[3*N,4]");
  Graph bn = testing::parseOrFail(R"(graph @g(%x: f32[N,4,5,5], %s: f32[4], %b: f32[4], %m: f32[4], %v: f32[4]) {
  %0, %1, %2 = batch_norm_train(%x, %s, %b, %m, %v) : f32[N,4,5,5], f32[4], f32[4]
  return y = %0, m = %1
})");
  CHECK(bn.outputs()[0].value->type().toString() == "f32[N,4,5,5]");
  CHECK(bn.outputs()[1].value->type().toString() == "f32[4]");
  e = expectError(R"(graph @g(%x: f32[N,2,3,3], %w: f32[3,3,4,2,1,1]) {
  %0 = locally_connected2d(%x, %w) : f32[N,4,3,3]
  return y = %0
})");
  CHECK_MESSAGE(e.find("locally_connected2d does not take symbolic dimensions") != std::string::npos, e);
  // The convolutions' gradients keep a symbolic batch and refuse a symbolic channel count.
  Graph grads = testing::parseOrFail(R"(graph @g(%x: f32[N,2,5,5], %dy: f32[N,3,5,5], %w: f32[3,2,3,3]) {
  %0 = conv2d_weight_grad(%x, %dy) {kernel = [3, 3], padding = [1, 1, 1, 1]} : f32[3,2,3,3]
  %1 = conv_transpose2d(%dy, %w) {padding = [1, 1, 1, 1]} : f32[N,2,5,5]
  return dw = %0, dx = %1
})");
  CHECK(grads.outputs()[1].value->type().toString() == "f32[N,2,5,5]");
  // Over a symbolic image size, the size is a polynomial (tests/ir/test_symbolic_sums.cpp); channels stay counts.
  e = expectError(R"(graph @g(%dy: f32[1,3,H,5], %w: f32[3,2,3,3]) {
  %0 = conv_transpose2d(%dy, %w) {padding = [1, 1, 1, 1]} : f32[1,2,5,5]
  return dx = %0
})");
  CHECK_MESSAGE(e.find("the op gives f32[1,2,H,5]") != std::string::npos, e);
  e = expectError(R"(graph @g(%dy: f32[1,C,5,5], %w: f32[3,2,3,3]) {
  %0 = conv_transpose2d(%dy, %w) {padding = [1, 1, 1, 1]} : f32[1,2,5,5]
  return dx = %0
})");
  CHECK_MESSAGE(e.find("its channels (dim 1) must be a count") != std::string::npos, e);
  e = expectError(R"(graph @g(%x: f32[N,2,5,5], %dy: f32[M,3,5,5]) {
  %0 = conv2d_weight_grad(%x, %dy) {kernel = [3, 3], padding = [1, 1, 1, 1]} : f32[3,2,3,3]
  return dw = %0
})");
  CHECK_MESSAGE(e.find("dy has M images, the input N") != std::string::npos, e);
  // A gather copies extents: it takes them, along the symbolic axis or another.
  Graph gathered = testing::parseOrFail(R"(graph @g(%x: f32[N,3]) {
  %i = constant() {value = dense<i64[2]> [0, 2]} : i64[2]
  %0 = gather(%x, %i) {axis = 1} : f32[N,2]
  %j = constant() {value = dense<i64[4]> [0, -1, 0, 1]} : i64[4]
  %1 = gather(%x, %j) : f32[4,3]
  return y = %0, rows = %1
})");
  CHECK(gathered.outputs()[0].value->type().toString() == "f32[N,2]");
  // Convolution keeps a symbolic batch; over a symbolic image size its output size is arithmetic on it.
  Graph conv = testing::parseOrFail(R"(graph @g(%x: f32[N,1,5,5]) {
  param %w: f32[2,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  %0 = conv2d(%x, %w) : f32[N,2,3,3]
  return y = %0
}
)");
  CHECK(conv.outputs()[0].value->type().toString() == "f32[N,2,3,3]");
  e = expectError(R"(graph @g(%x: f32[1,1,H,5]) {
  param %w: f32[2,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  %0 = conv2d(%x, %w) : f32[1,2,3,3]
  return y = %0
}
)");
  CHECK_MESSAGE(
      e.find("conv2d %0: result #0 is declared f32[1,2,3,3] but the op gives f32[1,2,H-2,3]") != std::string::npos, e);
  // Literals and parameters are static; ranges are ranges.
  e = expectError(
      "graph @g(%x: f32[N]) {\n  %0 = constant() {value = dense<f32[N]> [1]} : f32[N]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("static type") != std::string::npos, e);
  e = expectError("graph @g(%x: f32[N]) {\n  param %w: f32[N]\n  %0 = add(%x, %w) : f32[N]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("static type") != std::string::npos, e);
  e = expectError("graph @g(%x: f32[N]) {\n  dim N in [5, 2]\n  %0 = neg(%x) : f32[N]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("no range") != std::string::npos, e);
  e = expectError(
      "graph @g(%x: f32[N]) {\n  dim N in [1, 2]\n  dim N in [1, 3]\n  %0 = neg(%x) : f32[N]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("twice") != std::string::npos, e);
}

TEST_CASE("symbolic dims: symbols an op needs equal are unified, and a binding that parts them is an error naming the node and both") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[N,3], %y: f32[M,3], %a: f32[B,K], %b: f32[J,4]) {
  %0 = add(%x, %y) : f32[N,3]
  %1 = matmul(%a, %b) : f32[B,4]
  return z = %0, p = %1
})");
  CHECK(g.outputs()[0].value->type().toString() == "f32[N,3]");
  CHECK(g.outputs()[1].value->type().toString() == "f32[B,4]");
  auto fixed = bindDims(g, {{"N", 5}, {"M", 5}, {"B", 2}, {"K", 7}, {"J", 7}});
  REQUIRE_MESSAGE(fixed.ok(), fixed.error().message());
  CHECK(fixed->outputs()[0].value->type().toString() == "f32[5,3]");
  // The error binding {N, M, J} (B = 2, K = 7) gives, each piece of `wanted` checked in it.
  auto checkApart = [&](int64_t n, int64_t m, int64_t j, std::initializer_list<const char*> wanted) {
    auto apart = bindDims(g, {{"N", n}, {"M", m}, {"B", 2}, {"K", 7}, {"J", j}});
    REQUIRE_FALSE(apart.ok());
    const std::string& e = apart.error().message();
    for (const char* piece : wanted) CHECK_MESSAGE(e.find(piece) != std::string::npos, e);
  };
  // Apart: the static shapes do not broadcast, and the error says which symbols the node unified.
  checkApart(3, 5, 7, {"add %0", "N=3, M=5"});
  // A size of 1 would broadcast at those sizes, but the graph said N: still an error, not an f32[5,3]
  // where f32[N,3] was declared.
  checkApart(1, 5, 7, {"add %0", "f32[5,3]", "N=1, M=5"});
  checkApart(5, 5, 6, {"matmul %1", "K=7, J=6"});
  // The reference interpreter binds from its feeds and reports the same.
  TensorMap feeds = testing::randomFeeds(*fixed, 11);
  feeds["y"] = testing::randomTensor(TensorType{DType::f32, {4, 3}}, 12);
  auto ran = interpret(g, feeds);
  REQUIRE_FALSE(ran.ok());
  CHECK_MESSAGE(ran.error().message().find("N=5, M=4") != std::string::npos, ran.error().message());
}

TEST_CASE("symbolic dims: concat and slice keep a symbol off their axis, unify it, and refuse to add or cut one") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[N,3], %y: f32[M,4]) {
  %0 = concat(%x, %y) {axis = 1} : f32[N,7]
  %1 = slice(%0) {starts = [1], ends = [6], axes = [1], steps = [2]} : f32[N,3]
  return z = %0, s = %1
})");
  CHECK(g.outputs()[0].value->type().toString() == "f32[N,7]");
  CHECK(g.outputs()[1].value->type().toString() == "f32[N,3]");
  // Bound and run, it is the static graph of that size.
  auto fixed = bindDims(g, {{"N", 4}, {"M", 4}});
  REQUIRE_MESSAGE(fixed.ok(), fixed.error().message());
  TensorMap feeds = testing::randomFeeds(*fixed, testing::testSeed());
  auto viaSymbolic = interpret(g, feeds);
  auto viaStatic = interpret(*fixed, feeds);
  REQUIRE_MESSAGE(viaSymbolic.ok(), viaSymbolic.error().message());
  REQUIRE_MESSAGE(viaStatic.ok(), viaStatic.error().message());
  for (size_t i = 0; i < viaStatic->size(); ++i) CHECK(testing::compareTensors((*viaSymbolic)[i], (*viaStatic)[i], 0).empty());
  // N and M were unified at the concat: apart, the error names it.
  auto apart = bindDims(g, {{"N", 4}, {"M", 2}});
  REQUIRE_FALSE(apart.ok());
  CHECK_MESSAGE(apart.error().message().find("concat %0") != std::string::npos, apart.error().message());
  CHECK_MESSAGE(apart.error().message().find("N=4, M=2") != std::string::npos, apart.error().message());
  // Along the symbol: N + N is 2*N (tests/ir/test_symbolic_sums.cpp has the rest of the arithmetic).
  std::string e = expectError(
      "graph @g(%x: f32[N,3]) {\n  %0 = concat(%x, %x) {axis = 0} : f32[N,3]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("the op gives f32[2*N,3]") != std::string::npos, e);
  // A cut of N at counts past 1 clamps at small sizes (min(3, N) - 1): no one polynomial.
  e = expectError(
      "graph @g(%x: f32[N,3]) {\n  %0 = slice(%x) {starts = [1], ends = [3]} : f32[2,3]\n  return y = %0\n}\n");
  CHECK_MESSAGE(e.find("symbolic dimension N: slicing it [1:3:1] clamps at small sizes") != std::string::npos, e);
}

TEST_CASE("symbolic dims: an extent computed from a symbol is never taken for a count") {
  // Wrapping arithmetic as inference code would do it (unsigned, so the test itself has no overflow).
  for (const char* name : {"N", "M", "batch", "T"}) {
    const uint64_t n = static_cast<uint64_t>(dimSymbol(name));
    int64_t accepted = 0;
    for (uint64_t k = 2; k <= (1u << 16); ++k) {
      for (uint64_t wrong :
           {n * k, n + k, n - k, static_cast<uint64_t>(static_cast<int64_t>(n) / static_cast<int64_t>(k))}) {
        if (checkShapeLimits(Shape{static_cast<int64_t>(wrong), 3}).ok()) ++accepted;
      }
    }
    CHECK_MESSAGE(accepted == 0, name);
  }
  const int64_t n = dimSymbol("N");
  CHECK(checkShapeLimits(Shape{n, 3}).ok());
  CHECK(numElements(Shape{n, 3}) == -1);
  CHECK(TensorType{DType::f32, {n, 3}}.byteSize() == 0);
}

TEST_CASE("symbolic dims: binding gives the graph a static source of that size gives") {
  std::string text = kMlp;
  Graph g = testing::parseOrFail(text);
  for (int64_t n : {1, 7, 256}) {
    CAPTURE(n);
    auto binding = bindingFromInputs(g, std::vector<TensorType>{{DType::f32, {n, 4}}, {DType::f32, {n, 3}}});
    REQUIRE(binding.ok());
    CHECK(bindingToString(*binding) == fmt::format("N={}", n));
    auto bound = bindDims(g, *binding);
    REQUIRE(bound.ok());
    std::string fixed = text;
    for (size_t at; (at = fixed.find("N,")) != std::string::npos;) fixed.replace(at, 1, std::to_string(n));
    for (size_t at; (at = fixed.find("[N]")) != std::string::npos;) fixed.replace(at + 1, 1, std::to_string(n));
    fixed.erase(fixed.find("  dim N"), fixed.find("  param") - fixed.find("  dim N"));
    CHECK(toText(*bound) == toText(testing::parseOrFail(fixed)));
    // And the reference runs the symbolic graph by binding it from its feeds.
    TensorMap feeds = {{"x", testing::randomTensor({DType::f32, {n, 4}}, testing::testSeed() + n)},
                       {"y", testing::randomTensor({DType::f32, {n, 3}}, testing::testSeed() + 2 * n)}};
    auto viaSymbolic = interpret(g, feeds);
    auto viaStatic = interpret(*bound, feeds);
    REQUIRE(viaSymbolic.ok());
    REQUIRE(viaStatic.ok());
    for (size_t i = 0; i < viaStatic->size(); ++i) testing::checkClose((*viaSymbolic)[i], (*viaStatic)[i], 0);
  }
}

TEST_CASE("symbolic dims: bad bindings are errors naming the input, the dimension and the values") {
  std::string text = kMlp;
  Graph g = testing::parseOrFail(text);
  auto bind = [&](Shape x, Shape y) {
    auto b = bindingFromInputs(g, std::vector<TensorType>{{DType::f32, x}, {DType::f32, y}});
    REQUIRE(!b.ok());
    return b.error().message();
  };
  std::string e = bind({8, 4}, {9, 3});
  CHECK_MESSAGE(e.find("input 'y' dimension #0 is N = 9, but input 'x' dimension #0 made N = 8") != std::string::npos,
                e);
  e = bind({300, 4}, {300, 3});
  CHECK_MESSAGE(e.find("N = 300 is outside its range [1, 256]") != std::string::npos, e);
  e = bind({0, 4}, {0, 3});
  CHECK_MESSAGE(e.find("outside its range") != std::string::npos, e);
  e = bind({8, 5}, {8, 3});
  CHECK_MESSAGE(e.find("input 'x' is declared f32[N,4], fed [8,5]") != std::string::npos, e);
  e = bind({8, 4, 1}, {8, 3});
  CHECK_MESSAGE(e.find("fed rank 3") != std::string::npos, e);
  DimBinding b;
  CHECK(!checkBinding(g, b).ok());
  CHECK(parseDimAssignment("N=8", b).ok());
  CHECK(checkBinding(g, b).ok());
  CHECK(!parseDimAssignment("N=9", b).ok());
  CHECK(!parseDimAssignment("N", b).ok());
  CHECK(!parseDimAssignment("N=-1", b).ok());
  CHECK(!parseDimAssignment("8=N", b).ok());
  DimBinding extra = {{"N", 4}, {"T", 3}};
  CHECK_MESSAGE(checkBinding(g, extra).error().message().find("no symbolic dimension T") != std::string::npos,
                checkBinding(g, extra).error().message());
}

TEST_CASE("symbolic dims: expand to a symbolic shape (a reduction's gradient over the batch) binds with the graph") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[N,4]) {
  dim N in [1, 64]
  %0 = reduce_sum(%x) {axes = [0], keepdims = 1} : f32[1,4]
  return r = %0
})");
  const Value* sum = g.outputs()[0].value;
  auto expanded = g.addNode("expand", {const_cast<Value*>(sum)}, {{"shape", std::vector<int64_t>{dimSymbol("N"), 4}}});
  REQUIRE_MESSAGE(expanded.ok(), expanded.error().message());
  CHECK((*expanded)->result(0)->type().toString() == "f32[N,4]");
  g.addOutput("e", (*expanded)->result(0));
  for (int64_t n : {1, 5}) {
    auto bound = bindDims(g, {{"N", n}});
    REQUIRE_MESSAGE(bound.ok(), bound.error().message());
    const Node& e = *bound->nodes().back();
    CHECK(std::get<std::vector<int64_t>>(e.attrs().at("shape")) == std::vector<int64_t>{n, 4});
    CHECK(e.result(0)->type().shape == Shape{n, 4});
    TensorMap feeds = testing::randomFeeds(*bound, testing::testSeed());
    auto out = interpret(*bound, feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    const Tensor& x = feeds.at("x");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        double want = 0;
        for (int64_t k = 0; k < n; ++k) want += x.getDouble(k * 4 + j);
        CHECK((*out)[1].getDouble(i * 4 + j) == doctest::Approx(want).epsilon(1e-5));
      }
    }
  }
  // A negative entry that is no symbol is still an error naming the node.
  auto bad = g.addNode("expand", {const_cast<Value*>(sum)}, {{"shape", std::vector<int64_t>{-3, 4}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("negative entry -3") != std::string::npos);
}

TEST_CASE("symbolic dims: reshape to a shape naming symbols keeps them, and one it cannot account for is an error naming the node") {
  const int64_t N = dimSymbol("N"), M = dimSymbol("M");
  auto typeOf = [&](Shape in, std::vector<int64_t> shape) -> std::string {
    Graph g("g");
    g.setDimRange("N", {1, 64});
    g.setDimRange("M", {1, 64});
    Value* x = g.addInput("x", {DType::f32, std::move(in)});
    auto node = g.addNode("reshape", {x}, {{"shape", std::move(shape)}});
    if (!node.ok()) return "error: " + node.error().message();
    return (*node)->result(0)->type().toString();
  };
  CHECK(typeOf({N, 4, 6}, {N, -1}) == "f32[N,24]");
  CHECK(typeOf({N, 4, 6}, {-1, 24}) == "f32[N,24]");
  CHECK(typeOf({N, 4, 6}, {N, 24}) == "f32[N,24]");
  CHECK(typeOf({N, 4, 6}, {4, N, 6}) == "f32[4,N,6]");
  CHECK(typeOf({N, M, 6}, {M, -1, 6}) == "f32[M,N,6]");
  CHECK(typeOf({N, M, 6}, {N, M, -1}) == "f32[N,M,6]");
  CHECK(typeOf({2, 3}, {-1}) == "f32[6]");
  for (const std::vector<int64_t>& bad : std::vector<std::vector<int64_t>>{{M, -1}, {N, 25}, {-1, 5}, {N, N, -1}}) {
    std::string e = typeOf({N, 4, 6}, bad);
    CAPTURE(e);
    CHECK(e.starts_with("error: "));
    CHECK(e.find("reshape") != std::string::npos);
  }
  CHECK(typeOf({2, 3}, {N, -1}).starts_with("error: "));
  // Squeeze needs its axes where an extent is symbolic: that extent could be 1.
  Graph g("g");
  g.setDimRange("N", {1, 64});
  Value* x = g.addInput("x", {DType::f32, {N, 1}});
  auto all = g.addNode("squeeze", {x}, {});
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message().find("needs its axes") != std::string::npos);
  auto one = g.addNode("squeeze", {x}, {{"axes", std::vector<int64_t>{1}}});
  REQUIRE_MESSAGE(one.ok(), one.error().message());
  CHECK((*one)->result(0)->type().toString() == "f32[N]");
  // A reshape to a symbolic shape prints the symbol's name and reads back.
  auto r = g.addNode("reshape", {(*one)->result(0)}, {{"shape", std::vector<int64_t>{N, 1}}});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  g.addOutput("r", (*r)->result(0));
  const std::string text = toText(g);
  CHECK(text.find("shape = [N, 1]") != std::string::npos);
  auto back = parseGraph(text);
  REQUIRE_MESSAGE(back.ok(), back.error().message());
  CHECK(toText(*back) == text);
}
