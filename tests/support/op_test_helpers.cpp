// Helpers shared by the op tests.
#include "tests/support/op_test_helpers.h"

#include "ir/parser.h"
#include "ir/verifier.h"
#include "tests/support/random_tensors.h"

#include <cstdint>
#include <utility>

namespace smelt::testing {

std::vector<Tensor> runOutputs(std::string_view text, const TensorMap& feeds) {
  Graph graph = parseOrFail(text);
  auto out = interpret(graph, feeds);
  REQUIRE_MESSAGE(out.ok(), (out.ok() ? "" : out.error().message()));
  return std::move(out).value();
}

Tensor runFirstOutput(std::string_view text, const TensorMap& feeds) { return runOutputs(text, feeds)[0]; }

std::string requireParseError(std::string_view text) {
  auto graph = parseGraph(text);
  REQUIRE_MESSAGE(!graph.ok(), "expected a parse or verifier error for:\n" << text);
  return graph.error().message();
}

std::string parseErrorOrEmpty(std::string_view text) {
  auto graph = parseGraph(text);
  return graph.ok() ? std::string() : graph.error().message();
}

std::string verifyErrorOrEmpty(std::string_view text) {
  auto graph = parseGraph(text);
  if (!graph) return graph.error().message();
  Status status = verifyGraph(*graph);
  return status.ok() ? "" : status.error().message();
}

void checkClose(const Tensor& actual, const Tensor& expected, double tolerance) {
  std::string mismatch = compareTensors(actual, expected, tolerance);
  CHECK_MESSAGE(mismatch.empty(), mismatch);
}

void checkClose(const Tensor& actual, const Tensor& expected) {
  checkClose(actual, expected, defaultTolerance(expected.dtype()));
}

Tensor f64(Shape shape, const std::vector<double>& values) {
  REQUIRE(static_cast<int64_t>(values.size()) == numElements(shape));
  return Tensor::fromDoubles(TensorType{DType::f64, std::move(shape)}, values);
}

Tensor iota(DType dtype, Shape shape, double scale, double first) {
  std::vector<double> values(static_cast<size_t>(numElements(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = first + scale * static_cast<double>(i);
  return Tensor::fromDoubles(TensorType{dtype, std::move(shape)}, values);
}

std::string unaryGraph(std::string_view in, std::string_view op, std::string_view attrs, std::string_view result) {
  return fmt::format("graph @t(%x: {}) {{\n  %0 = {}(%x) {{{}}} : {}\n  return r = %0\n}}", in, op, attrs, result);
}

}  // namespace smelt::testing
