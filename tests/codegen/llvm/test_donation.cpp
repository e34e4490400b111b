// Outputs donated to parameters (CompileOptions::donate): written over the fed parameter tensor when
// the output's kernel is the parameter's last reader and reads it only at the index it writes; computed
// into the output otherwise. Either way the values are the reference interpreter's.
#include "ir/interpreter.h"
#include "runtime/cpu/blas.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace smelt;

namespace {

/// `param %name: f32[shape] = x"00..."`: the value does not matter, every run feeds it.
std::string zeroParam(const std::string& name, const TensorType& type) {
  return fmt::format("  param %{}: {} = x\"{}\"\n", name, type.toString(), std::string(2 * type.byteSize(), '0'));
}

struct Donated {
  std::vector<Tensor> expected;  // the reference's outputs
  std::vector<Tensor> outputs;   // the executable's output tensors
  TensorMap fed;                 // the parameters as fed, after the run
  std::unique_ptr<Executable> exe;
};

/// Runs `text` with every parameter fed from fresh random tensors and `donate`, twice (a second run
/// starts from the first's results where they were donated, as a training loop does).
Donated runDonated(const std::string& text, std::vector<std::pair<std::string, std::string>> donate) {
  Graph graph = testing::parseOrFail(text);
  TensorMap feeds = testing::randomFeeds(graph, testing::testSeed());
  for (const Value* p : graph.parameters()) {
    feeds[p->name()] = testing::randomTensor(p->type(), testing::testSeed() + feeds.size());
  }
  CompileOptions options;
  options.donate = std::move(donate);
  auto exe = Executable::compile(graph, options);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  Donated d;
  d.exe = std::move(*exe);
  std::vector<const Tensor*> inputs, params;
  for (const Value* v : d.exe->graph().inputs()) inputs.push_back(&feeds.at(v->name()));
  for (const Value* v : d.exe->graph().parameters()) params.push_back(&feeds.at(v->name()));
  for (int run = 0; run < 2; ++run) {
    auto expected = interpret(graph, feeds);
    REQUIRE(expected.ok());
    d.expected = std::move(*expected);
    REQUIRE(d.exe->run(inputs, params, d.outputs).ok());
  }
  d.fed = std::move(feeds);
  return d;
}

/// Output `i`'s value: from its parameter's tensor when donated, else from the output.
const Tensor& valueOf(const Donated& d, size_t i, const std::string& parameter) {
  return d.exe->donated(i) ? d.fed.at(parameter) : d.outputs[i];
}

void checkClose(const Tensor& actual, const Tensor& expected) {
  std::string diff = testing::compareTensors(actual, expected, testing::backendTolerance(expected.dtype()));
  CHECK_MESSAGE(diff.empty(), diff);
}

}  // namespace

TEST_CASE("donation: an SGD-with-momentum update overwrites the weights and the buffer it last reads") {
  TensorType t{DType::f32, {64, 33}};
  Donated d = runDonated("graph @t(%g: f32[64,33], %lr: f32[]) {\n" + zeroParam("w", t) + zeroParam("buf", t) + R"(
  %m = constant() {value = dense<f32[]> [0.9]} : f32[]
  %0 = mul(%buf, %m) : f32[64,33]
  %1 = add(%0, %g) : f32[64,33]
  %2 = mul(%1, %lr) : f32[64,33]
  %3 = sub(%w, %2) : f32[64,33]
  return w.new = %3, buf.new = %1
})", {{"w", "w.new"}, {"buf", "buf.new"}});
  CHECK(d.exe->donated(0));
  CHECK(d.exe->donated(1));
  checkClose(valueOf(d, 0, "w"), d.expected[0]);
  checkClose(valueOf(d, 1, "buf"), d.expected[1]);
}

TEST_CASE("donation: refused when a later kernel still reads the parameter, or the kernel reads it elsewhere") {
  // %2 reads w after %1's kernel; %4 reads v transposed (other indices than it writes).
  TensorType t{DType::f32, {32, 32}};
  Donated d = runDonated("graph @t(%g: f32[32,32]) {\n" + zeroParam("w", t) + zeroParam("v", t) + R"(
  %h = constant() {value = dense<f32[]> [0.5]} : f32[]
  %0 = mul(%g, %h) : f32[32,32]
  %1 = sub(%w, %0) : f32[32,32]
  %2 = reduce_sum(%w) {axes = [0]} : f32[32]
  %3 = transpose(%v) {perm = [1, 0]} : f32[32,32]
  %4 = add(%3, %g) : f32[32,32]
  return w.new = %1, wsum = %2, v.new = %4
})", {{"w", "w.new"}, {"v", "v.new"}});
  CHECK_FALSE(d.exe->donated(2));
  checkClose(valueOf(d, 0, "w"), d.expected[0]);
  checkClose(d.outputs[1], d.expected[1]);
  checkClose(valueOf(d, 2, "v"), d.expected[2]);
}

TEST_CASE("donation: a BLAS product's epilogue updating the weights keeps the product out of them") {
  if (!blas::available(DType::f32)) return;
  // The product would land in a result of its type; donated, that result is w itself, which the
  // epilogue still reads: the product goes to a buffer of its own.
  Donated d = runDonated("graph @t(%a: f32[40,24], %b: f32[24,36]) {\n" + zeroParam("w", {DType::f32, {40, 36}}) + R"(
  %s = constant() {value = dense<f32[]> [0.1]} : f32[]
  %0 = matmul(%a, %b) : f32[40,36]
  %1 = mul(%0, %s) : f32[40,36]
  %2 = sub(%w, %1) : f32[40,36]
  return w.new = %2
})", {{"w", "w.new"}});
  CHECK(d.exe->donated(0));
  checkClose(valueOf(d, 0, "w"), d.expected[0]);
}

TEST_CASE("donation: unknown names are errors naming them") {
  Graph graph = testing::parseOrFail("graph @t(%g: f32[4]) {\n" + zeroParam("w", {DType::f32, {4}}) + R"(
  %0 = sub(%w, %g) : f32[4]
  return w.new = %0
})");
  CompileOptions options;
  options.donate = {{"nope", "w.new"}};
  auto exe = Executable::compile(graph, options);
  REQUIRE_FALSE(exe.ok());
  CHECK(exe.error().message().find("nope") != std::string::npos);
  options.donate = {{"w", "missing"}};
  exe = Executable::compile(graph, options);
  REQUIRE_FALSE(exe.ok());
  CHECK(exe.error().message().find("missing") != std::string::npos);
}
