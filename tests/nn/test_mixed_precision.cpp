// Mixed precision (Builder::setAutocast, TrainStepOptions::precision): products and convolutions compute in bf16,
// forward and backward, from f32 master weights; everything else stays f32; the gradients match the f32 model's
// within bf16's (f16's) precision of an f64 reference; f16 steps scale the loss dynamically on the device: a step whose gradients
// overflow leaves the state as it was and halves the scale, 2000 good steps double it.
#include "autodiff/gradient_tape.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/optimizers.h"
#include "frontend/nn/train_step.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/cpu/blas.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

using namespace smelt;

namespace {

// Smooth activations: bf16's rounding moves pre-activations by about 2^-9 of their size, enough to flip a relu
// near its kink and change a gradient entry entirely (seeds 1 and 2 did with relu), which is not an error of the
// mixed-precision graph.
nn::ModulePtr net() {
  return nn::sequential({nn::conv2d(2, 4, 3, {.padding = 1}), nn::tanh(), nn::flatten(), nn::linear(4 * 6 * 6, 8),
                         nn::tanh(), nn::linear(8, 3)});
}

struct Built {
  Graph graph;
  std::vector<std::string> params;
};

// The loss of `net` on a fixed batch and its gradients with respect to every parameter, as graph outputs.
void build(Built& out, nn::StateDict& state, std::optional<DType> autocast) {
  Graph& g = out.graph;
  Value* x = g.addInput("x", TensorType{DType::f32, {5, 2, 6, 6}});
  Value* y = g.addInput("y", TensorType{DType::i64, {5}});
  GradientTape tape(g);
  nn::GraphContext ctx(g, state, /*training=*/true, 9);
  ctx.b().setAutocast(autocast);
  Value* logits = net()->forward(ctx, x);
  ctx.b().setAutocast(std::nullopt);
  Value* loss = nn::crossEntropy(ctx, logits, y);
  REQUIRE(ctx.b().ok());
  std::vector<Value*> params = ctx.trainable();
  auto grads = tape.gradient(loss, params);
  REQUIRE(grads.ok());
  g.addOutput("loss", loss);
  for (size_t i = 0; i < params.size(); ++i) {
    out.params.push_back(params[i]->name());
    g.addOutput("grad:" + params[i]->name(), (*grads)[i]);
  }
}

}  // namespace

// bf16 keeps 8 significant bits (a relative rounding of 2^-9 per value), f16 11 (2^-12): after a product chain, a
// few percent and a few tenths of a percent of the gradients' scale.
static void checkAutocast(DType low, double tolerance) {
  INFO("autocast to ", dtypeName(low));
  nn::StateDict state;
  Built f32, bf16;
  build(f32, state, std::nullopt);
  build(bf16, state, low);
  int lowProducts = 0, f32Others = 0;
  for (const auto& n : bf16.graph.nodes()) {
    if (n->op().product) {
      CHECK_MESSAGE(n->result(0)->dtype() == low, bf16.graph.labelOf(*n));
      ++lowProducts;
    } else if (n->opName() != "cast" && !n->results().empty() && isFloat(n->result(0)->dtype())) {
      CHECK_MESSAGE(n->result(0)->dtype() == DType::f32, bf16.graph.labelOf(*n));
      ++f32Others;
    }
  }
  CHECK(lowProducts >= 9);  // three forward products and their input and weight gradients
  CHECK(f32Others > 10);
  for (const auto& p : bf16.graph.parameters()) CHECK(p->dtype() == DType::f32);  // f32 masters
  TensorMap feeds = state;
  feeds.emplace("x", testing::randomTensor(TensorType{DType::f32, {5, 2, 6, 6}}, testing::testSeed()));
  Tensor labels(TensorType{DType::i64, {5}});
  for (int64_t i = 0; i < 5; ++i) labels.setInt(i, i % 3);
  feeds.emplace("y", labels);
  // The reference: the f32 graph again in f64 (its text with every f32 type written f64: its parameters are
  // fed, its constants short literals), on the same values widened.
  std::string text = toText(f32.graph);
  for (size_t at = text.find("f32"); at != std::string::npos; at = text.find("f32", at)) text.replace(at, 3, "f64");
  Graph f64 = testing::parseOrFail(text);
  TensorMap wide;
  for (const auto& [name, t] : feeds) {
    wide.emplace(name, t.dtype() == DType::f32 ? Tensor::fromDoubles(TensorType{DType::f64, t.shape()}, t.toDoubles()) : t);
  }
  auto want = interpret(f64, wide);
  auto got = interpret(bf16.graph, feeds);
  REQUIRE(want.ok());
  REQUIRE(got.ok());
  for (size_t i = 0; i < want->size(); ++i) {
    double scale = 0, err = 0;
    for (int64_t k = 0; k < (*want)[i].numel(); ++k) {
      scale = std::max(scale, std::abs((*want)[i].getDouble(k)));
      err = std::max(err, std::abs((*got)[i].getDouble(k) - (*want)[i].getDouble(k)));
    }
    CHECK_MESSAGE(err <= tolerance * scale, bf16.graph.outputs()[i].name, ": ", err, " of ", scale);
  }
}

TEST_CASE(
    "mixed precision: products run in bf16 (f16) forward and backward, the rest in f32, gradients within their "
    "precision of an f64 reference") {
  checkAutocast(DType::bf16, 0.05);
  checkAutocast(DType::f16, 0.01);
}

TEST_CASE("mixed precision: a bf16 training step learns") {
  nn::Model model(net(), 4);
  TensorType xType{DType::f32, {16, 2, 6, 6}}, yType{DType::i64, {16}};
  auto step =
      nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, {.precision = DType::bf16});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  Tensor x = testing::randomTensor(xType, testing::testSeed());
  Tensor y(yType);
  for (int64_t i = 0; i < 16; ++i) y.setInt(i, i % 3);
  double first = 0, last = 0;
  for (int s = 0; s < 60; ++s) {
    auto loss = (*step)->run(x, y);
    REQUIRE(loss.ok());
    if (s == 0) first = *loss;
    last = *loss;
  }
  CHECK_MESSAGE(last < first / 5, "loss ", first, " -> ", last);
  CHECK(model.state.at("0.weight").dtype() == DType::f32);
  CHECK_FALSE(model.state.count("loss_scale"));  // bf16 needs no scaling
}

TEST_CASE(
    "mixed precision: f16 scales the loss on the device, skips a step that overflows, halves and grows the scale") {
  nn::Model model(net(), 4);
  TensorType xType{DType::f32, {16, 2, 6, 6}}, yType{DType::i64, {16}};
  auto step =
      nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.01}), xType, yType, {.precision = DType::f16});
  REQUIRE_MESSAGE(step.ok(), (step.ok() ? "" : step.error().message()));
  Tensor x = testing::randomTensor(xType, testing::testSeed());
  Tensor y(yType);
  for (int64_t i = 0; i < 16; ++i) y.setInt(i, i % 3);
  auto scalar = [&](const char* name) { return model.state.at(name).getDouble(0); };
  auto first = (*step)->run(x, y);
  REQUIRE(first.ok());
  CHECK(std::isfinite(*first));
  CHECK(scalar("loss_scale") == 65536.0);
  CHECK(scalar("loss_scale.good_steps") == 1.0);
  // An input past f16's range overflows the products: the update is skipped, whatever the state.
  nn::StateDict before = model.state;
  Tensor huge(xType);
  for (int64_t i = 0; i < huge.numel(); ++i) huge.setDouble(i, i % 2 ? 1e30 : -1e30);
  auto overflowed = (*step)->run(huge, y);
  REQUIRE(overflowed.ok());
  CHECK_FALSE(std::isfinite(*overflowed));
  CHECK(scalar("loss_scale") == 32768.0);
  CHECK(scalar("loss_scale.good_steps") == 0.0);
  for (const auto& entry : before) {
    if (entry.first.starts_with("loss_scale")) continue;
    const Tensor& now = model.state.at(entry.first);
    bool same = true;
    for (int64_t i = 0; i < now.numel(); ++i) same = same && now.getDouble(i) == entry.second.getDouble(i);
    CHECK_MESSAGE(same, entry.first, " changed in a skipped step");
  }
  // Good steps learn; the 2000th good step in a row doubles the scale.
  double last = 0;
  for (int s = 0; s < 60; ++s) {
    auto loss = (*step)->run(x, y);
    REQUIRE(loss.ok());
    last = *loss;
  }
  CHECK_MESSAGE(last < *first / 5, "loss ", *first, " -> ", last);
  CHECK(scalar("loss_scale") == 32768.0);
  CHECK(scalar("loss_scale.good_steps") == 60.0);
  model.state.at("loss_scale.good_steps").setDouble(0, 1999.0);
  model.stateChanged();
  REQUIRE((*step)->run(x, y).ok());
  CHECK(scalar("loss_scale") == 65536.0);
  CHECK(scalar("loss_scale.good_steps") == 0.0);
}

TEST_CASE("mixed precision: the CPU runs bf16 and f16 products on its BLAS, rounded once") {
  // bf16 on oneDNN's bf16 GEMM where this CPU has it (the product alone, no casts), else as an f32 product over
  // widened operands; f16 always the latter.
  for (const char* dtype : {"bf16", "f16"}) {
    CAPTURE(dtype);
    std::string text = fmt::format(R"(graph @g(%a: {0}[16,32], %b: {0}[32,24]) {{
  %0 = matmul(%a, %b) : {0}[16,24]
  return y = %0
}})",
                                   dtype);
    Graph graph = testing::parseOrFail(text);
    CompileOptions options;
    options.device = "cpu";
    auto exe = Executable::compile(graph, options);
    REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
    // The product on the BLAS; a build without LLVM interprets its nodes instead (the product, or two casts and the
    // widened product), and has no product to plan.
    const bool kept = std::string_view(dtype) == "bf16" && blas::available(DType::bf16);
    const CompileReport& report = (*exe)->report();
    CHECK_MESSAGE((report.blas == 1 || report.interpreted == (kept ? 1 : 3)), "blas ", report.blas, ", interpreted ",
                  report.interpreted);
    if (report.blas == 1 && std::string_view(dtype) == "bf16" && blas::available(DType::bf16)) {
      CHECK(report.kernels == 0);
    }
    TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
    auto want = interpret(graph, feeds);
    REQUIRE(want.ok());
    auto ran = (*exe)->run(feeds);
    REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
    std::string diff =
        testing::compareTensors((*ran)[0], (*want)[0], testing::backendTolerance(graph.outputs()[0].value->dtype()));
    CHECK_MESSAGE(diff.empty(), diff);
  }
}

TEST_CASE("mixed precision: bf16 products on the CPU's BLAS match the reference, transposed operands and an epilogue") {
  // Sizes that are no multiple of oneDNN's tiles, both operands transposed, alpha, and a bias with relu as the
  // product's epilogue, the result rounded to bf16 once as the reference's f32 accumulation is; and a plain matmul
  // of the same operands. (Not a product of the first's result: its inputs would differ from the reference's by
  // bf16's last bit, which 70 terms sum into more than a bf16 tolerance.)
  Graph graph = testing::parseOrFail(R"(graph @g(%a: bf16[70,33], %b: bf16[45,70], %c: bf16[45]) {
  %0 = gemm(%a, %b, %c) {alpha = 0.5, trans_a = 1, trans_b = 1} : bf16[33,45]
  %1 = relu(%0) : bf16[33,45]
  %2 = matmul(%b, %a) : bf16[45,33]
  return y = %1, z = %2
})");
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto want = interpret(graph, feeds);
  REQUIRE(want.ok());
  auto ran = (*exe)->run(feeds);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  for (size_t i = 0; i < 2; ++i) {
    std::string diff = testing::compareTensors((*ran)[i], (*want)[i], testing::backendTolerance(DType::bf16));
    CHECK_MESSAGE(diff.empty(), diff);
  }
}

TEST_CASE("mixed precision: bf16 convolutions on the CPU match the reference, forward and weight gradient") {
  // Stride, padding and groups, a batch of 3 (the channels-major layout) and of 1 (the direct layout of a 1x1
  // kernel); the transposed convolution is widened to f32 (its column sums stay f32).
  Graph graph = testing::parseOrFail(R"(graph @g(%x: bf16[3,4,9,7], %w: bf16[6,2,3,3], %dy: bf16[3,6,5,4], %x1: bf16[1,8,5,5], %w1: bf16[4,8,1,1]) {
  %0 = conv2d(%x, %w) {stride = [2, 2], padding = [1, 1, 1, 1], groups = 2} : bf16[3,6,5,4]
  %1 = conv2d_weight_grad(%x, %dy) {stride = [2, 2], padding = [1, 1, 1, 1], groups = 2, kernel = [3, 3]} : bf16[6,2,3,3]
  %2 = conv2d(%x1, %w1) : bf16[1,4,5,5]
  %3 = conv_transpose2d(%dy, %w) {stride = [2, 2], padding = [1, 1, 1, 1], groups = 2} : bf16[3,4,9,7]
  return y = %0, dw = %1, y1 = %2, dx = %3
})");
  auto exe = Executable::compile(graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  auto want = interpret(graph, feeds);
  REQUIRE_MESSAGE(want.ok(), (want.ok() ? "" : want.error().message()));
  auto ran = (*exe)->run(feeds);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  for (size_t i = 0; i < want->size(); ++i) {
    CAPTURE(graph.outputs()[i].name);
    std::string diff = testing::compareTensors((*ran)[i], (*want)[i], testing::backendTolerance(DType::bf16));
    CHECK_MESSAGE(diff.empty(), diff);
  }
}
