// A graph with a symbolic batch dimension compiles once per batch size its runs bring, on every
// device, and each run equals the reference on the static graph of that size; a size seen before
// compiles nothing, and a bad one is an error naming the input and the dimension. Every op that takes
// symbols does so in its registry example: symbolic inference bound is static inference, and runs on every
// device match. A CNN training graph differentiated with a symbolic batch gives the static gradients.
#include "autodiff/gradient_tape.h"
#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/device/device_list.h"
#include "runtime/device/device_tensor.h"
#include "runtime/exec/arena_layout.h"
#include "runtime/exec/executable.h"
#include "tests/support/devices.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/random_tensors.h"
#include "tests/support/symbolic_batch.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

constexpr const char* kClassifier = R"(graph @classifier(%x: f32[N,6], %t: f32[N,3]) {
  dim N in [1, 64]
  param %w: f32[6,3] = [0.5, -1, 0.25, 1, 2, -0.5, 0.75, 1.5, -2, 1, 0.5, 0.25, -0.3, 0.8, 1.1, -0.9, 0.4, 0.6]
  param %b: f32[3] = [0.1, -0.2, 0.3]
  %0 = matmul(%x, %w) : f32[N,3]
  %1 = add(%0, %b) : f32[N,3]
  %2 = tanh(%1) : f32[N,3]
  %3 = log_softmax(%2) {axis = 1} : f32[N,3]
  %4 = mul(%3, %t) : f32[N,3]
  %5 = reduce_sum(%4) {axes = [1]} : f32[N]
  %6 = neg(%5) : f32[N]
  %7 = reduce_mean(%6) : f32[]
  return loss = %7, logits = %1
}
)";

TensorMap feedsOf(int64_t n, uint64_t seed) {
  return {{"x", testing::randomTensor({DType::f32, {n, 6}}, seed)},
          {"t", testing::randomTensor({DType::f32, {n, 3}}, seed + 1)}};
}

/// Runs `exe` (the classifier `g`, symbolic) at batch `n` on fresh random feeds and checks every output
/// against the reference on the graph bound to `n`.
void runAndCheck(Executable& exe, const Graph& g, int64_t n, uint64_t seed) {
  CAPTURE(n);
  TensorMap feeds = feedsOf(n, seed);
  auto out = exe.run(feeds);
  REQUIRE_MESSAGE(out.ok(), out.error().message());
  auto bound = bindDims(g, {{"N", n}});
  REQUIRE(bound.ok());
  auto want = interpret(*bound, feeds);
  REQUIRE(want.ok());
  REQUIRE(out->size() == want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    testing::checkClose((*out)[i], (*want)[i], testing::backendTolerance(DType::f32));
  }
}

/// Differentiates `text` (loss output first) with respect to `wrt` with its dims symbolic, compiles it once per
/// device, and checks every run at each binding against the reference on the source bound and then
/// differentiated, in f64.
void checkSymbolicGradients(const char* text, const std::vector<std::string>& wrt,
                            const std::vector<DimBinding>& bindings) {
  auto withGradients = [&](Graph g) {
    auto grads = gradientOfOutputs(g, wrt);
    REQUIRE_MESSAGE(grads.ok(), grads.error().message());
    for (size_t i = 0; i < wrt.size(); ++i) g.addOutput(wrt[i] + ".grad", (*grads)[i]);
    return g;
  };
  Graph symbolic = withGradients(testing::parseOrFail(text));
  std::vector<std::unique_ptr<Executable>> executables;
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    auto exe = Executable::compile(symbolic, {.device = device->id()});
    REQUIRE_MESSAGE(exe.ok(), device->id(), ": ", exe.error().message());
    executables.push_back(std::move(*exe));
  }
  uint64_t seed = testing::testSeed();
  for (const DimBinding& binding : bindings) {
    CAPTURE(bindingToString(binding));
    auto bound = bindDims(symbolic, binding);
    REQUIRE_MESSAGE(bound.ok(), bound.error().message());
    auto staticSource = bindDims(testing::parseOrFail(text), binding);
    REQUIRE_MESSAGE(staticSource.ok(), staticSource.error().message());
    Graph differentiatedStatic = withGradients(std::move(*staticSource));
    TensorMap feeds = testing::randomFeeds(differentiatedStatic, ++seed);
    auto want = interpret(differentiatedStatic, feeds);
    REQUIRE_MESSAGE(want.ok(), want.error().message());
    auto reference = interpret(*bound, feeds);
    REQUIRE_MESSAGE(reference.ok(), reference.error().message());
    REQUIRE(want->size() == wrt.size() + 1);
    for (size_t i = 0; i < want->size(); ++i) {
      CAPTURE(i);
      testing::checkClose((*reference)[i], (*want)[i], 1e-12);
    }
    for (const std::unique_ptr<Executable>& exe : executables) {
      CAPTURE(exe->deviceId());
      auto compiled = exe->run(feeds);
      REQUIRE_MESSAGE(compiled.ok(), compiled.error().message());
      for (size_t i = 0; i < want->size(); ++i) {
        CAPTURE(i);
        testing::checkClose((*compiled)[i], (*want)[i], 1e-10);
      }
    }
  }
  for (const std::unique_ptr<Executable>& exe : executables) {
    CHECK(exe->specializations() == static_cast<int64_t>(bindings.size()));
  }
}

}  // namespace

TEST_CASE("symbolic executables: one graph, every batch size in its range, each compiled once, on every device") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    CHECK((*exe)->specializations() == 0);
    CHECK((*exe)->deviceId() == device->id());
    int run = 0;
    for (int64_t n : {1, 7, 33, 7, 64, 1}) {
      runAndCheck(**exe, g, n, testing::testSeed() + 10 * static_cast<uint64_t>(run++));
      CHECK((*exe)->graph().inputs()[0]->type().shape[0] == n);
    }
    CHECK((*exe)->specializations() == 4);  // 1, 7, 33, 64
    // Outside the range, or a static extent that differs: errors naming the input and the dimension.
    auto tooMany = (*exe)->run(feedsOf(65, 1));
    REQUIRE(!tooMany.ok());
    CHECK_MESSAGE(tooMany.error().message().find("N = 65 is outside its range [1, 64]") != std::string::npos,
                  tooMany.error().message());
    TensorMap mismatched = feedsOf(4, 2);
    mismatched["t"] = testing::randomTensor({DType::f32, {5, 3}}, 3);
    auto disagree = (*exe)->run(mismatched);
    REQUIRE(!disagree.ok());
    CHECK_MESSAGE(disagree.error().message().find("input 't' dimension #0 is N = 5") != std::string::npos,
                  disagree.error().message());
    TensorMap wrongWidth = feedsOf(4, 4);
    wrongWidth["x"] = testing::randomTensor({DType::f32, {4, 5}}, 5);
    CHECK(!(*exe)->run(wrongWidth).ok());
    // By position, a missing input is named.
    Tensor t = testing::randomTensor({DType::f32, {4, 3}}, 6);
    std::vector<const Tensor*> inputs = {nullptr, &t}, params = {nullptr, nullptr};
    std::vector<Tensor> outputs;
    Status missing = (*exe)->run(inputs, params, outputs);
    REQUIRE(!missing.ok());
    CHECK_MESSAGE(missing.error().message().find("input 'x' (f32[N,6]) was not fed") != std::string::npos,
                  missing.error().message());
    CHECK((*exe)->specializations() == 4);
  }
}

TEST_CASE("symbolic executables: one compile serves every size: later bindings run the general kernels with their own sizes, as the reference computes, on every device") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    int64_t compiledAfterFirst = 0;
    // Below 64, where a GPU's row reductions keep one shape (codegen/map_to_blocks.h), and not 1, whose
    // kernels fold the batch index away.
    const std::vector<int64_t> sizes = {5, 2, 9, 31, 6, 17, 3, 63};
    for (size_t s = 0; s < sizes.size(); ++s) {
      runAndCheck(**exe, g, sizes[s], testing::testSeed() + 100 + static_cast<uint64_t>(sizes[s]));
      const CompileReport& report = (*exe)->report();
      CHECK(report.sizeGeneralKernels == report.kernels);
      if (s > 0) compiledAfterFirst += report.kernels - report.cacheHits;
    }
    CHECK((*exe)->specializations() == static_cast<int>(sizes.size()));
    // Every later size found its kernels compiled (in this process's kernel cache).
    CHECK(compiledAfterFirst == 0);
  }
}

TEST_CASE(
    "symbolic executables: every binding runs in one working block, the largest one's: a larger binding grows it, and "
    "the others, rebound to it, still compute what the reference does") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    CHECK((*exe)->workingMemoryBytes() == 0);  // nothing compiled yet
    int64_t largest = 0;
    int run = 0;
    // Up, down, up again (a growth rebinds the smaller ones), and back to each.
    for (int64_t n : {8, 3, 40, 5, 8, 3, 40, 64, 5}) {
      runAndCheck(**exe, g, n, testing::testSeed() + 31 * static_cast<uint64_t>(run++));
      largest = std::max({largest, (*exe)->report().workingBytes, kArenaAlignment});
      CHECK((*exe)->workingMemoryBytes() == largest);
    }
    CHECK((*exe)->specializations() == 5);
    CHECK(largest > kArenaAlignment);  // the intermediates of 64 rows need more than the minimum
  }
}

TEST_CASE("symbolic executables: past SMELT_MAX_SPECIALIZATIONS bindings the least recently used is dropped and compiles again when it returns") {
  Graph g = testing::parseOrFail(kClassifier);
  setenv("SMELT_MAX_SPECIALIZATIONS", "2", 1);
  auto exe = Executable::compile(g, {.device = "cpu"});
  REQUIRE(exe.ok());
  int run = 0;
  for (int64_t n : {3, 4, 3, 5, 3, 4}) {  // 4 is dropped when 5 comes; 3 stays in use
    runAndCheck(**exe, g, n, testing::testSeed() + 50 + static_cast<uint64_t>(run++));
  }
  unsetenv("SMELT_MAX_SPECIALIZATIONS");
  CHECK((*exe)->specializations() == 4);  // 3, 4, 5, then 4 again
  // Compiled again, its kernels came from the cache.
  CHECK((*exe)->report().cacheHits == (*exe)->report().kernels);
}

TEST_CASE("symbolic executables: device-resident runs bind the batch from the device tensors") {
  Graph g = testing::parseOrFail(kClassifier);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    for (int64_t n : {5, 12}) {
      TensorMap host = feedsOf(n, testing::testSeed() + static_cast<uint64_t>(n));
      DeviceTensorMap feeds;
      for (const auto& [name, t] : host) {
        auto d = DeviceTensor::fromHost(device, t);
        REQUIRE(d.ok());
        feeds.emplace(name, std::move(*d));
      }
      std::vector<DeviceTensor> out;
      Status ran = (*exe)->run(feeds, out);
      REQUIRE_MESSAGE(ran.ok(), ran.error().message());
      auto want = interpret(g, host);
      REQUIRE(want.ok());
      for (size_t i = 0; i < out.size(); ++i) {
        auto fetched = out[i].toHost();
        REQUIRE(fetched.ok());
        testing::checkClose(*fetched, (*want)[i], testing::backendTolerance(DType::f32));
      }
    }
    CHECK((*exe)->specializations() == 2);
  }
}

TEST_CASE(
    "symbolic executables: products of the batch (a window partition's 4*N windows) run as the reference at every "
    "size, on every device, their kernels shared across sizes") {
  Graph g = testing::parseOrFail(testing::kBatchWindows);
  for (const std::shared_ptr<Device>& device : testing::everyDevice()) {
    CAPTURE(device->id());
    auto exe = Executable::compile(g, {.device = device->id()});
    REQUIRE(exe.ok());
    int64_t compiledAfterFirst = 0;
    const std::vector<int64_t> sizes = {3, 5, 2, 11};
    for (size_t s = 0; s < sizes.size(); ++s) {
      const int64_t n = sizes[s];
      CAPTURE(n);
      TensorMap feeds = {{"x", testing::randomTensor({DType::f32, {n, 4, 4, 3}}, testing::testSeed() + 7 * s)}};
      auto out = (*exe)->run(feeds);
      REQUIRE_MESSAGE(out.ok(), out.error().message());
      auto bound = bindDims(g, {{"N", n}});
      REQUIRE(bound.ok());
      auto want = interpret(*bound, feeds);
      REQUIRE(want.ok());
      CHECK((*out)[1].shape() == Shape{16 * n, 3});
      for (size_t i = 0; i < want->size(); ++i) {
        testing::checkClose((*out)[i], (*want)[i], testing::backendTolerance(DType::f32));
      }
      if (s > 0) compiledAfterFirst += (*exe)->report().kernels - (*exe)->report().cacheHits;
    }
    CHECK((*exe)->specializations() == static_cast<int>(sizes.size()));
    CHECK(compiledAfterFirst == 0);
  }
}

TEST_CASE("symbolic executables: every op that takes symbols, its example with a symbolic batch, infers what the static graph does and runs as it") {
  uint64_t seed = testing::testSeed();
  CAPTURE(seed);
  int checked = 0, refused = 0;
  const std::vector<std::shared_ptr<Device>> devices = testing::everyDevice();
  for (const OpDef* op : OpRegistry::global().all()) {
    if (!op->symbolicDims) continue;
    DType dtype = op->dtypes.contains(DType::f32) ? DType::f32 : op->dtypes.list().front();
    CAPTURE(op->name);
    Graph example = testing::parseOrFail(op->exampleIn(dtype));
    const int64_t batch = example.inputs().empty() || example.inputs()[0]->type().rank() == 0
                              ? -1
                              : example.inputs()[0]->type().shape[0];
    if (batch < 1) continue;
    auto symbolic = testing::withSymbolicBatch(example, batch);
    if (!symbolic.ok()) {
      // The example ties another extent to the batch (a weight of the same size): an error, which must
      // name the node.
      CHECK_MESSAGE(symbolic.error().message().find('%') != std::string::npos, symbolic.error().message());
      ++refused;
      continue;
    }
    if (symbolic->symbolicDims().empty()) continue;
    for (int64_t n : {batch, int64_t{1}, batch + 3}) {
      CAPTURE(n);
      auto bound = bindDims(*symbolic, {{"B", n}});
      REQUIRE_MESSAGE(bound.ok(), bound.error().message());
      // Symbolic inference, bound, is static inference at every size; at the example's own size the
      // bound graph is the example.
      std::string differs = testing::compareBoundTypes(*symbolic, *bound, n);
      CHECK_MESSAGE(differs.empty(), differs);
      if (n == batch) CHECK(toText(*bound) == toText(example));
      TensorMap feeds = testing::randomFeeds(*bound, seed + static_cast<uint64_t>(n));
      auto want = interpret(*bound, feeds);
      REQUIRE_MESSAGE(want.ok(), want.error().message());
      // Compiled at a size other than the example's (whose static compile every backend test runs), on
      // every device (the CPU, PoCL): about half a minute of PoCL builds, in the main build only.
      if (n != batch + 3) continue;
      for (const std::shared_ptr<Device>& device : devices) {
        auto exe = Executable::compile(*symbolic, {.device = device->id()});
        REQUIRE_MESSAGE(exe.ok(), device->id(), ": ", exe.error().message());
        auto got = (*exe)->run(feeds);
        REQUIRE_MESSAGE(got.ok(), device->id(), ": ", got.error().message());
        for (size_t i = 0; i < want->size(); ++i) {
          std::string d =
              testing::compareTensors((*got)[i], (*want)[i], testing::backendTolerance((*want)[i].dtype()));
          CHECK_MESSAGE(d.empty(), device->id(), " output ", i, ": ", d);
        }
      }
    }
    ++checked;
  }
  MESSAGE(fmt::format("{} ops' examples with a symbolic batch matched their static graphs on {} devices; {} tie "
                      "the batch to another operand and were refused with an error naming the node",
                      checked, devices.size(), refused));
  CHECK(checked >= 20);
}

TEST_CASE("symbolic executables: a CNN's training graph differentiated with its batch symbolic (batch statistics, the convolutions' gradients, means and variances over the batch) gives the static graph's gradients at every size") {
  // tanh, not relu: no kink for rounding to flip between the two graphs.
  constexpr const char* kConvTrain = R"(graph @conv_train(%x: f64[N,2,5,5], %t: f64[N,3], %w: f64[4,2,3,3], %cb: f64[4], %s: f64[4], %b: f64[4], %m: f64[4], %v: f64[4], %fw: f64[4,3]) {
  dim N in [2, 16]
  %c = conv2d(%x, %w, %cb) {padding = [1, 1, 1, 1], stride = [2, 2]} : f64[N,4,3,3]
  %y, %nm, %nv = batch_norm_train(%c, %s, %b, %m, %v) : f64[N,4,3,3], f64[4], f64[4]
  %r = tanh(%y) : f64[N,4,3,3]
  %p = global_avg_pool2d(%r) : f64[N,4,1,1]
  %f = reshape(%p) {shape = [-1, 4]} : f64[N,4]
  %l = matmul(%f, %fw) : f64[N,3]
  %d = sub(%l, %t) : f64[N,3]
  %sq = mul(%d, %d) : f64[N,3]
  %mse = reduce_mean(%sq) : f64[]
  %var = reduce_variance(%l) {axes = [0], correction = 1} : f64[3]
  %sd = reduce_stddev(%f) {axes = [0]} : f64[4]
  %vs = reduce_sum(%var) : f64[]
  %ss = reduce_sum(%sd) : f64[]
  %a = add(%mse, %vs) : f64[]
  %loss = add(%a, %ss) : f64[]
  return loss = %loss
}
)";
  const std::vector<std::string> wrt = {"x", "w", "cb", "s", "b", "fw"};
  // The backward graph keeps the batch symbolic: no extent computed from the symbol's number.
  Graph g = testing::parseOrFail(kConvTrain);
  auto grads = gradientOfOutputs(g, wrt);
  REQUIRE_MESSAGE(grads.ok(), grads.error().message());
  CHECK((*grads)[0]->type().toString() == "f64[N,2,5,5]");
  checkSymbolicGradients(kConvTrain, wrt, {{{"N", 2}}, {{"N", 3}}, {{"N", 7}}});
}

TEST_CASE(
    "symbolic executables: a CNN over a symbolic image size (strided convolution, max pooling, their gradients through "
    "symbolic output paddings) gives the static graph's gradients at every size") {
  // tanh, not relu: no kink for rounding to flip between the two graphs; max pooling over tanh has no ties.
  constexpr const char* kImages =
      R"(graph @images(%x: f64[N,2,H,W], %t: f64[N,3], %w: f64[4,2,3,3], %cb: f64[4], %w2: f64[3,4,3,3], %fw: f64[3,3]) {
  dim H in [4, 32]
  dim W in [4, 32]
  %c = conv2d(%x, %w, %cb) {padding = [1, 1, 1, 1], stride = [2, 2]} : f64[N,4,(H+1)/2,(W+1)/2]
  %r = tanh(%c) : f64[N,4,(H+1)/2,(W+1)/2]
  %p = max_pool2d(%r) {kernel = [2, 2], stride = [1, 1]} : f64[N,4,(H+1)/2-1,(W+1)/2-1]
  %c2 = conv2d(%p, %w2) {padding = [1, 1, 1, 1]} : f64[N,3,(H+1)/2-1,(W+1)/2-1]
  %g = global_avg_pool2d(%c2) : f64[N,3,1,1]
  %f = reshape(%g) {shape = [-1, 3]} : f64[N,3]
  %l = matmul(%f, %fw) : f64[N,3]
  %d = sub(%l, %t) : f64[N,3]
  %sq = mul(%d, %d) : f64[N,3]
  %loss = reduce_mean(%sq) : f64[]
  return loss = %loss
}
)";
  // The data gradient of the strided convolution restores H with output_padding -2*(H+1)/2+H+1: 0 or 1 by parity.
  checkSymbolicGradients(
      kImages, {"x", "w", "cb", "w2", "fw"},
      {{{"N", 2}, {"H", 7}, {"W", 9}}, {{"N", 1}, {"H", 8}, {"W", 8}}, {{"N", 3}, {"H", 12}, {"W", 5}}});
}

TEST_CASE(
    "symbolic executables: a sequence grown along a symbolic length (concat, cuts from either end, padding) gives the "
    "static graph's gradients at every length") {
  constexpr const char* kSequence = R"(graph @sequence(%past: f64[N,T,4], %new: f64[N,1,4], %q: f64[4,4]) {
  dim T in [2, 64]
  %0 = concat(%past, %new) {axis = 1} : f64[N,T+1,4]
  %1 = matmul(%0, %q) : f64[N,T+1,4]
  %2 = softmax(%1) {axis = 1} : f64[N,T+1,4]
  %3 = slice(%2) {starts = [-1], ends = [9223372036854775807], axes = [1]} : f64[N,1,4]
  %4 = slice(%2) {starts = [1], ends = [9223372036854775807], axes = [1]} : f64[N,T,4]
  %5 = pad(%4) {pads = [0, 1, 0, 0, 2, 0]} : f64[N,T+3,4]
  %6 = tanh(%5) : f64[N,T+3,4]
  %7 = reduce_mean(%6) : f64[]
  %8 = mul(%3, %3) : f64[N,1,4]
  %9 = reduce_sum(%8) : f64[]
  %loss = add(%7, %9) : f64[]
  return loss = %loss
}
)";
  // A strided cut of a symbolic axis has no gradient in this form: an error naming the step and the axis.
  Graph strided = testing::parseOrFail(R"(graph @strided(%x: f64[T,2]) {
  %0 = slice(%x) {starts = [0], ends = [9223372036854775807], steps = [2]} : f64[(T+1)/2,2]
  %1 = reduce_sum(%0) : f64[]
  return loss = %1
}
)");
  auto stridedGrads = gradientOfOutputs(strided, std::vector<std::string>{"x"});
  REQUIRE_FALSE(stridedGrads.ok());
  CHECK_MESSAGE(stridedGrads.error().message().find("the gradient of a slice with step 2 along symbolic axis 0 (T)") !=
                    std::string::npos,
                stridedGrads.error().message());
  checkSymbolicGradients(kSequence, {"past", "new", "q"},
                         {{{"N", 2}, {"T", 3}}, {{"N", 1}, {"T", 7}}, {{"N", 3}, {"T", 2}}});
}
