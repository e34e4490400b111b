// ONNX export (frontend/onnx/onnx_export.h), without a second runtime: exported graphs import back and
// compute what the original computes on the reference interpreter, at two batch sizes of a symbolic
// batch; an op with no ONNX form is an error naming the node. tests/onnx/test_onnx_export.py runs the
// exports in onnxruntime.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "frontend/onnx/onnx_export.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/random_tensors.h"

using namespace smelt;

namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// `ir` exported, imported back, and both run on the reference at batch sizes 1 and 3.
void checkRoundTrip(const std::string& ir, double tolerance) {
  Graph original = testing::parseOrFail(ir);
  auto bytes = exportOnnxBytes(original);
  REQUIRE_MESSAGE(bytes.ok(), (bytes.ok() ? "" : bytes.error().message()));
  auto imported = importOnnxBytes(*bytes, ".", "exported.onnx");
  REQUIRE_MESSAGE(imported.ok(), (imported.ok() ? "" : imported.error().message()));
  REQUIRE(imported->outputs().size() == original.outputs().size());
  for (int64_t batch : {1, 3}) {
    CAPTURE(batch);
    TensorMap feeds;
    for (const Value* in : original.inputs()) {
      Shape shape = in->shape();
      for (int64_t& d : shape) d = isSymbolic(d) ? batch : d;
      feeds.emplace(in->name(),
                    testing::randomTensor({in->dtype(), shape}, testing::testSeed() + static_cast<uint64_t>(batch)));
    }
    auto want = interpret(original, feeds);
    auto got = interpret(*imported, feeds);
    REQUIRE_MESSAGE(want.ok(), (want.ok() ? "" : want.error().message()));
    REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
    for (size_t i = 0; i < want->size(); ++i) {
      CAPTURE(original.outputs()[i].name);
      CHECK(imported->outputs()[i].name == original.outputs()[i].name);
      const std::string d = testing::compareTensors((*got)[i], (*want)[i], tolerance);
      CHECK_MESSAGE(d.empty(), d);
    }
  }
}

}  // namespace

TEST_CASE("onnx export: a CNN with a symbolic batch exports, imports back and computes the same") {
  checkRoundTrip(readFile(SMELT_SOURCE_DIR "/tests/onnx/export_cnn.ir"), 1e-5);
}

TEST_CASE("onnx export: elementwise, comparison, reduction and layout ops round-trip") {
  checkRoundTrip(R"(graph @ops(%a: f32[N,4], %b: f32[N,4], %i: i64[2]) {
  %0 = add(%a, %b) : f32[N,4]
  %1 = ne(%a, %b) : bool[N,4]
  %2 = where(%1, %a, %b) : f32[N,4]
  %3 = clip(%2) {min = -0.5, max = 0.5} : f32[N,4]
  %4 = silu(%3) : f32[N,4]
  %5 = leaky_relu(%4) {alpha = 0.2} : f32[N,4]
  %6 = transpose(%5) : f32[4,N]
  %7 = reduce_sum(%6) {axes = [1], keepdims = 0} : f32[4]
  %8 = reduce_max(%5) {axes = [0]} : f32[4]
  %9 = concat(%7, %8) {axis = 0} : f32[8]
  %10 = slice(%9) {starts = [1], ends = [7], steps = [2]} : f32[3]
  %11 = gather(%9, %i) : f32[2]
  %12 = unsqueeze(%11) {axes = [0]} : f32[1,2]
  %13 = expand(%12) {shape = [3, 2]} : f32[3,2]
  %14 = cast(%13) {to = "f64"} : f64[3,2]
  %15 = log_softmax(%5) {axis = 1} : f32[N,4]
  %16 = pad(%10) {pads = [1, 2], value = 9.0} : f32[6]
  return sum = %0, picked = %14, logp = %15, padded = %16
}
)",
                 1e-6);
}

TEST_CASE(
    "onnx export: sums of a symbolic batch (a concat along it, a reshape to it, a pad and a cut of it) round-trip") {
  // The reshape's target N+2 is rebuilt as Shape(a)[0] + 2; the importer folds the Add back into N+2.
  checkRoundTrip(R"(graph @sums(%a: f32[N,4], %c: f32[2,4]) {
  %0 = concat(%a, %c) {axis = 0} : f32[N+2,4]
  %1 = reshape(%0) {shape = [N+2, 2, 2]} : f32[N+2,2,2]
  %2 = pad(%1) {pads = [1, 0, 0, 0, 0, 0]} : f32[N+3,2,2]
  %3 = slice(%2) {starts = [1], ends = [9223372036854775807]} : f32[N+2,2,2]
  return y = %3, z = %2
}
)",
                 0);
}

TEST_CASE("onnx export: an op with no ONNX form is an error naming the node") {
  // A collective: ONNX has none (composites without an ONNX node export their decomposition).
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[3,4]) {
  %0 = all_reduce(%x) : f32[3,4]
  return y = %0
}
)");
  auto bytes = exportOnnxBytes(g);
  REQUIRE_FALSE(bytes.ok());
  const std::string e = bytes.error().message();
  CHECK_MESSAGE(e.find("all_reduce %0") != std::string::npos, e);
  CHECK_MESSAGE(e.find("no ONNX equivalent") != std::string::npos, e);
  CHECK_MESSAGE(e.find("@g") != std::string::npos, e);
}

TEST_CASE("onnx export: a CNN trained with the model API exports its trained weights and predicts as the Predictor does") {
  nn::Model model(nn::sequential({nn::conv2d(1, 4, 3, {.padding = 1}), nn::batchNorm(4), nn::relu(), nn::maxPool2d(2),
                                  nn::flatten(), nn::dropout(0.25), nn::linear(4 * 4 * 4, 3), nn::gelu()}),
                  3);
  const TensorType input{DType::f32, {6, 1, 8, 8}};
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::sgd({.lr = 0.1, .momentum = 0.9}), input,
                                    TensorType{DType::i64, {6}});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  Tensor x = testing::randomTensor(input, testing::testSeed());
  Tensor y(TensorType{DType::i64, {6}});
  for (int64_t i = 0; i < 6; ++i) y.setInt(i, i % 3);
  for (int s = 0; s < 4; ++s) REQUIRE((*step)->run(x, y).ok());
  auto graph = nn::inferenceGraph(model, input);
  REQUIRE_MESSAGE(graph.ok(), (graph.ok() ? "" : graph.error().message()));
  auto bytes = exportOnnxBytes(*graph);
  REQUIRE_MESSAGE(bytes.ok(), (bytes.ok() ? "" : bytes.error().message()));
  auto imported = importOnnxBytes(*bytes, ".", "trained.onnx");
  REQUIRE_MESSAGE(imported.ok(), (imported.ok() ? "" : imported.error().message()));
  auto fromOnnx = interpret(*imported, {{"input", x}});
  REQUIRE_MESSAGE(fromOnnx.ok(), (fromOnnx.ok() ? "" : fromOnnx.error().message()));
  auto predict = nn::Predictor::create(model, input);
  REQUIRE(predict.ok());
  auto want = (*predict)->run(x);
  REQUIRE(want.ok());
  const std::string d = testing::compareTensors((*fromOnnx)[0], *want, 1e-5);
  CHECK_MESSAGE(d.empty(), d);
}
