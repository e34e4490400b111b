// GradientTape semantics: sources, watching, persistence, stop_gradient, vector-Jacobian products,
// higher-order gradients, and the backward pass as ordinary IR.
#include "autodiff/gradient_tape.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace smelt;

namespace {

Tensor f64(Shape shape, std::vector<double> values) { return Tensor::fromDoubles({DType::f64, std::move(shape)}, values); }

// Runs `g` with `feeds`, returning the value of `v` (made a temporary output).
Tensor evaluate(Graph& g, Value* v, const TensorMap& feeds) {
  g.addOutput("probe", v);
  auto out = interpret(g, feeds);
  REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
  Tensor t = out->back();
  std::vector<GraphOutput> keep(g.outputs().begin(), g.outputs().end() - 1);
  g.clearOutputs();
  for (const GraphOutput& o : keep) g.addOutput(o.name, o.value);
  return t;
}

void checkValues(const Tensor& t, const std::vector<double>& expected, double tolerance = 1e-12) {
  REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) CHECK(t.getDouble(i) == doctest::Approx(expected[i]).epsilon(tolerance));
}

}  // namespace

TEST_CASE("the gradient of sum(exp(x)) is exp(x)") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {3}});
  GradientTape tape(g);
  tape.watch(x);
  Value* y = *g.apply("exp", {x});
  auto dx = tape.gradient(y, x);
  REQUIRE_MESSAGE(dx.ok(), (dx.ok() ? "" : dx.error().message()));
  checkValues(evaluate(g, *dx, {{"x", f64({3}, {0.5, -1, 2})}}), {std::exp(0.5), std::exp(-1.0), std::exp(2.0)});
}

TEST_CASE("a non-scalar target contributes the sum of its elements, an output gradient gives the VJP") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {2}});
  Value* w = g.addParameter("w", f64({2}, {3, -4}));
  GradientTape tape(g, /*persistent=*/true);
  tape.watch(x);
  Value* y = *g.apply("mul", {x, w});
  Value* dw = *tape.gradient(y, w);
  TensorMap feeds = {{"x", f64({2}, {1.5, 2.5})}};
  checkValues(evaluate(g, dw, feeds), {1.5, 2.5});
  Value* seed = g.constant(f64({2}, {10, 100}));
  Value* vjp = *tape.gradient(y, x, seed);
  checkValues(evaluate(g, vjp, feeds), {30, -400});
}

TEST_CASE("sources must be watched, trainable, or recorded") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {2}});
  Value* frozen = g.addParameter("running_mean", f64({2}, {0, 0}), /*trainable=*/false);
  GradientTape tape(g, true);
  Value* h = *g.apply("add", {x, frozen});
  Value* y = *g.apply("exp", {h});
  auto unwatched = tape.gradient(y, x);
  REQUIRE(!unwatched.ok());
  CHECK(unwatched.error().message().find("%x is not watched") != std::string::npos);
  auto frozenGrad = tape.gradient(y, frozen);
  REQUIRE(!frozenGrad.ok());
  CHECK(frozenGrad.error().message().find("%running_mean is not watched") != std::string::npos);
  auto intermediate = tape.gradient(y, h);  // recorded results are fine
  REQUIRE(intermediate.ok());
  checkValues(evaluate(g, *intermediate, {{"x", f64({2}, {0.5, 1})}}), {std::exp(0.5), std::exp(1.0)});
}

TEST_CASE("a non-persistent tape allows one gradient call") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {2}});
  GradientTape tape(g);
  tape.watch(x);
  Value* y = *g.apply("exp", {x});
  REQUIRE(tape.gradient(y, x).ok());
  auto again = tape.gradient(y, x);
  REQUIRE(!again.ok());
  CHECK(again.error().message().find("not persistent") != std::string::npos);
}

TEST_CASE("stop_gradient blocks the gradient: d(x * stop(x))/dx = x") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {2}});
  GradientTape tape(g);
  tape.watch(x);
  Value* stopped = *stopGradient(g, x);
  Value* y = *g.apply("mul", {x, stopped});
  Value* dx = *tape.gradient(y, x);
  checkValues(evaluate(g, dx, {{"x", f64({2}, {1.5, -3})}}), {1.5, -3});
}

TEST_CASE("integer sources and unconnected sources") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {2}});
  Value* k = g.addInput("k", {DType::i64, {2}});
  Value* z = g.addInput("z", {DType::f64, {3}});
  GradientTape tape(g, true);
  tape.watch(x);
  tape.watch(k);
  tape.watch(z);
  Value* y = *g.apply("exp", {x});
  auto intGrad = tape.gradient(y, k);
  REQUIRE(!intGrad.ok());
  CHECK(intGrad.error().message().find("integer and bool values have no gradient") != std::string::npos);
  auto unconnected = tape.gradient(y, z);
  REQUIRE(unconnected.ok());
  checkValues(evaluate(g, *unconnected, {{"x", f64({2}, {1, 2})}, {"k", Tensor::of<int64_t>({2}, {1, 2})},
                                         {"z", f64({3}, {1, 2, 3})}}),
              {0, 0, 0});
}

TEST_CASE("gradients of gradients: nested tapes give the second and third derivatives of x^3") {
  Graph g("t");
  Value* x = g.addInput("x", {DType::f64, {3}});
  GradientTape third(g);
  third.watch(x);
  GradientTape second(g);
  second.watch(x);
  GradientTape first(g);
  first.watch(x);
  Value* cube = *g.apply("mul", {*g.apply("mul", {x, x}), x});
  Value* d1 = *first.gradient(cube, x);   // 3x^2
  Value* d2 = *second.gradient(d1, x);    // 6x
  Value* d3 = *third.gradient(d2, x);     // 6
  TensorMap feeds = {{"x", f64({3}, {0.5, -2, 3})}};
  checkValues(evaluate(g, d1, feeds), {0.75, 12, 27});
  checkValues(evaluate(g, d2, feeds), {3, -12, 18});
  checkValues(evaluate(g, d3, feeds), {6, 6, 6});
}

TEST_CASE("the backward pass is ordinary IR: it verifies and round-trips as text") {
  Graph g = testing::parseOrFail(R"(graph @mlp(%x: f64[4,3]) {
  param %w: f64[3,2] = [0.5, -1, 2, 0.25, -0.5, 1.5]
  param %b: f64[2] = [0.1, -0.2]
  %0 = matmul(%x, %w) : f64[4,2]
  %1 = add(%0, %b) : f64[4,2]
  %2 = tanh(%1) : f64[4,2]
  return y = %2
})");
  std::vector<std::string> names = {"w", "b", "x"};
  auto grads = gradientOfOutputs(g, names);
  REQUIRE_MESSAGE(grads.ok(), (grads.ok() ? "" : grads.error().message()));
  for (size_t i = 0; i < names.size(); ++i) g.addOutput(names[i] + ".grad", (*grads)[i]);
  Status verified = verifyGraph(g);
  CHECK_MESSAGE(verified.ok(), (verified.ok() ? "" : verified.error().message()));
  std::string text = toText(g);
  Graph parsed = testing::parseOrFail(text);
  CHECK(toText(parsed) == text);
  TensorMap feeds = {{"x", testing::randomTensor({DType::f64, {4, 3}}, testing::testSeed())}};
  auto a = interpret(g, feeds);
  auto b = interpret(parsed, feeds);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (size_t i = 0; i < a->size(); ++i) CHECK((*a)[i].bitwiseEqual((*b)[i]));
  // d sum(tanh(xw + b)) / db = sum over rows of 1 - tanh^2.
  const Tensor& y = (*a)[0];
  const Tensor& db = (*a)[2];
  for (int64_t j = 0; j < 2; ++j) {
    double expected = 0;
    for (int64_t r = 0; r < 4; ++r) expected += 1 - y.getDouble(r * 2 + j) * y.getDouble(r * 2 + j);
    CHECK(db.getDouble(j) == doctest::Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("graph-level gradients name what is wrong") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f64[2], %i: i64[2]) {
  %0 = exp(%x) : f64[2]
  return y = %0, k = %i
})");
  std::vector<std::string> missing = {"nope"};
  auto r = gradientOfOutputs(g, missing);
  REQUIRE(!r.ok());
  CHECK(r.error().message().find("'nope'") != std::string::npos);
  std::vector<std::string> ints = {"i"};
  auto r2 = gradientOfOutputs(g, ints);
  REQUIRE(!r2.ok());
  CHECK(r2.error().message().find("integer and bool values have no gradient") != std::string::npos);
}
