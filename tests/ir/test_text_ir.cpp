// Text IR: printing is deterministic and lossless, parsing reports errors with line and caret.
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

using namespace smelt;

TEST_CASE("a hand-written graph prints in canonical form and round-trips") {
  const char* text = R"(// comments are ignored
graph @mlp(%x: f32[2,3], %"input.1": f32[3]) {
  param %w: f32[3] = [0.5, -1.25, 3]
  state %"running mean": f32[1] = [0.1]
  %h = add(%x, %"input.1") : f32[2,3]
  %y = mul(%h, %w) : f32[2,3] loc("Mul_7")
  %z = lt(%y, %"running mean") : bool[2,3]
  return out = %y, "mask/0" = %z
})";
  Graph g = testing::parseOrFail(text);
  std::string printed = toText(g);
  CHECK(printed == R"(graph @mlp(%x: f32[2,3], %input.1: f32[3]) {
  param %w: f32[3] = [0.5, -1.25, 3]
  state %"running mean": f32[1] = [0.1]
  %0 = add(%x, %input.1) : f32[2,3]
  %1 = mul(%0, %w) : f32[2,3] loc("Mul_7")
  %2 = lt(%1, %"running mean") : bool[2,3]
  return out = %1, "mask/0" = %2
}
)");
  Graph again = testing::parseOrFail(printed);
  CHECK(toText(again) == printed);
}

TEST_CASE("parameters without a value (fed on every run) print without a body, round-trip, and must be fed") {
  // The model API's graphs declare parameters by type only; their values live in the model's state.
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::f32, {2}});
  Value* w = g.addFedParameter("w", TensorType{DType::f32, {2}});
  Value* s = g.addFedParameter("bn.mean", TensorType{DType::f32, {2}}, /*trainable=*/false);
  Builder b(g);
  g.addOutput("y", b.add(b.mul(x, w), s));
  std::string printed = toText(g);
  CHECK(printed.find("  param %w: f32[2]\n") != std::string::npos);
  CHECK(printed.find("  state %bn.mean: f32[2]\n") != std::string::npos);
  Graph again = testing::parseOrFail(printed);
  CHECK(toText(again) == printed);
  CHECK_FALSE(again.parameters()[0]->hasInitialValue());
  TensorMap feeds{{"x", Tensor::of<float>({2}, {1, 2})}, {"w", Tensor::of<float>({2}, {3, 4})}};
  auto missing = interpret(again, feeds);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("'bn.mean'") != std::string::npos);
  feeds["bn.mean"] = Tensor::of<float>({2}, {0.5f, 0.25f});
  auto out = interpret(again, feeds);
  REQUIRE(out.ok());
  CHECK((*out)[0].bitwiseEqual(Tensor::of<float>({2}, {3.5f, 8.25f})));
}

TEST_CASE("floats of every float dtype print exactly") {
  std::mt19937_64 rng(testing::testSeed());
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    CAPTURE(dtypeName(dtype));
    Tensor t(TensorType{dtype, {12}});
    std::uniform_real_distribution<double> u(-1e3, 1e3);
    for (int64_t i = 0; i < 9; ++i) t.setDouble(i, u(rng) * std::pow(10.0, static_cast<int>(rng() % 7) - 3));
    t.setDouble(9, std::numeric_limits<double>::infinity());
    t.setDouble(10, -std::numeric_limits<double>::infinity());
    t.setDouble(11, dtype == DType::f64 ? 5e-324 : 1e-7);
    Graph g("floats");
    g.addOutput("c", g.constant(t));
    std::string printed = toText(g);
    Graph parsed = testing::parseOrFail(printed);
    CHECK(toText(parsed) == printed);
    auto out = interpret(parsed, {});
    REQUIRE(out.ok());
    CHECK((*out)[0].bitwiseEqual(t));
  }
}

TEST_CASE("large tensors and NaNs print as hex and round-trip bit for bit") {
  Tensor t(TensorType{DType::f32, {40}});
  for (int64_t i = 0; i < 40; ++i) t.setDouble(i, 0.1 * i - 1.7);
  t.data<uint32_t>()[3] = 0x7fc01234u;  // a NaN with a payload
  Graph g("hex");
  g.addParameter("w", t);
  g.addOutput("w", g.findParameter("w"));
  std::string printed = toText(g);
  CHECK(printed.find("x\"") != std::string::npos);
  Graph parsed = testing::parseOrFail(printed);
  CHECK(parsed.findParameter("w")->initialValue().bitwiseEqual(t));
  CHECK(toText(parsed) == printed);
}

TEST_CASE("large constants can live in a side file next to the IR") {
  auto dir = std::filesystem::temp_directory_path() / ("smelt_side_" + std::to_string(testing::testSeed()));
  std::filesystem::create_directories(dir);
  Tensor t = testing::randomTensor(TensorType{DType::f32, {64, 8}}, 7);
  Graph g("side");
  g.addParameter("w", t);
  g.addOutput("w", g.findParameter("w"));
  PrintOptions options;
  options.externalDataPath = (dir / "weights.bin").string();
  auto text = printGraph(g, options);
  REQUIRE(text.ok());
  CHECK(text->find("file(\"weights.bin\", 0)") != std::string::npos);
  ParseOptions parseOptions;
  parseOptions.externalDataDir = dir.string();
  auto parsed = parseGraph(*text, parseOptions);
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error().message()));
  CHECK(parsed->findParameter("w")->initialValue().bitwiseEqual(t));

  SUBCASE("paths outside the folder are refused") {
    std::string escaped = *text;
    escaped.replace(escaped.find("weights.bin"), 11, "../weights.bin");
    auto bad = parseGraph(escaped, parseOptions);
    REQUIRE(!bad.ok());
    CHECK(bad.error().message().find("contains '..'") != std::string::npos);
    std::string absolute = *text;
    absolute.replace(absolute.find("weights.bin"), 11, "/etc/passwd");
    auto bad2 = parseGraph(absolute, parseOptions);
    REQUIRE(!bad2.ok());
    CHECK(bad2.error().message().find("absolute") != std::string::npos);
  }
  SUBCASE("a symbolic link inside the folder to a file outside it is refused") {
    auto outside = dir.parent_path() / (dir.filename().string() + "_outside.bin");
    std::filesystem::copy_file(dir / "weights.bin", outside, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::create_symlink(outside, dir / "link.bin");
    std::string linked = *text;
    linked.replace(linked.find("weights.bin"), 11, "link.bin");
    auto bad = parseGraph(linked, parseOptions);
    REQUIRE(!bad.ok());
    CHECK_MESSAGE(bad.error().message().find("outside the model's folder") != std::string::npos, bad.error().message());
    std::filesystem::remove(outside);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("parse errors name the line and column with a caret") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%y) : f32[2]\n  return r = %0\n}", "2:12: use of undefined value %y"},
      {"graph @g(%x: f32[2]) {\n  %0 = frobnicate(%x) : f32[2]\n  return r = %0\n}", "unknown op 'frobnicate'"},
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%x) : f32[3]\n  return r = %0\n}", "declared f32[3] but the op gives f32[2]"},
      {"graph @g(%x: f99[2]) {\n  return\n}", "unknown dtype 'f99'"},
      {"graph @g(%x: f32[2], %y: f32[3]) {\n  %0 = add(%x, %y) : f32[2]\n  return r = %0\n}", "add %0: shapes [2] and [3] do not broadcast"},
      {"graph @g(%x: i32[2]) {\n  %0 = exp(%x) : i32[2]\n  return r = %0\n}", "exp %0: operand #0 (x) must be one of f16,bf16,f32,f64, got i32"},
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%x) {alpha = 1} : f32[2]\n  return r = %0\n}", "unknown attribute 'alpha'"},
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%x, %x) : f32[2]\n  return r = %0\n}", "expects 1 operands, got 2"},
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%x) : f32[2]\n", "expected 'return'"},
      {"graph @g(%x: f32[2]) {\n  param %w: f32[2] = [1, 2, 3]\n  return\n}", "too many elements"},
      {"graph @g(%x: f32[2]) {\n  param %w: f32[2] = x\"0000\"\n  return\n}", "hex data has 2 bytes"},
      // Found by fuzz_ir_text: a short text declaring a 1.7 GB literal allocated it before reading it.
      {"graph @g(%x: f32[2]) {\n  param %w: i32[444444444] = [1]\n  return\n}",
       "i32[444444444] has 444444444 elements, more than the rest of the text holds"},
      {"graph @g(%x: f32[2]) {\n  %0 = exp(%x) : f32[2]\n  return r = %0, r = %0\n}", "returned twice"},
      {"graph @g(%x: f32[2]) { \"unterminated", "unterminated string"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto g = parseGraph(c.text);
    REQUIRE(!g.ok());
    CHECK_MESSAGE(g.error().message().find(c.expected) != std::string::npos, g.error().message());
    CHECK(g.error().message().find('^') != std::string::npos);
  }
}

TEST_CASE("nested graphs deeper than the parser's bound are an error, not a deep recursion") {
  // A fused node whose body holds a fused node ... `levels` deep.
  auto nested = [](int levels) {
    std::string body = "graph @k0(%p0: f32[2]) {\n  %0 = exp(%p0) : f32[2]\n  return r0 = %0\n}";
    for (int level = 1; level <= levels; ++level) {
      body = fmt::format("graph @k{}(%p0: f32[2]) {{\n  %0 = fused(%p0) {{kind = \"loop\"}} : f32[2] body = {}\n  return r0 = %0\n}}",
                         level, body);
    }
    return body;
  };
  auto ok = parseGraph(nested(1));
  REQUIRE_MESSAGE(ok.ok(), ok.error().message());
  // Within the bound, the verifier has its say (fused bodies do not nest).
  auto three = parseGraph(nested(3));
  REQUIRE_FALSE(three.ok());
  CHECK_MESSAGE(three.error().message().find("body holds another fused kernel") != std::string::npos,
                three.error().message());
  for (int levels : {5, 1000}) {
    auto deep = parseGraph(nested(levels));
    REQUIRE_FALSE(deep.ok());
    CHECK_MESSAGE(deep.error().message().find("graphs nest deeper than 4 levels") != std::string::npos,
                  deep.error().message());
  }
}

TEST_CASE("truncated and garbled IR text never crashes") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f32[2,3], %b: f32[3]) {
  param %w: f32[3] = [0.5, -1.25, 3]
  %0 = add(%x, %b) : f32[2,3]
  %1 = mul(%0, %w) {} : f32[2,3] loc("m")
  %2 = constant() {value = dense<i64[2]> [1, -2]} : i64[2]
  return y = %1, c = %2
})");
  std::string text = toText(g);
  // Every cut that drops the closing brace must fail.
  for (size_t cut = 0; cut <= text.rfind('}'); ++cut) {
    auto r = parseGraph(text.substr(0, cut));
    CHECK(!r.ok());
  }
  std::mt19937_64 rng(testing::testSeed());
  for (int trial = 0; trial < 2000; ++trial) {
    std::string garbled = text;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) garbled[rng() % garbled.size()] = static_cast<char>(rng() % 256);
    auto r = parseGraph(garbled);  // must return, ok or not
    if (r.ok()) CHECK(!toText(*r).empty());
  }
}

TEST_CASE("a negative-zero float attribute survives printing (it is not the default 0.0)") {
  Graph g = testing::parseOrFail(R"(graph @g(%x: f64[2]) {
  %0 = pad(%x) {pads = [1, 0], value = -0.0} : f64[3]
  return y = %0
})");
  std::string printed = toText(g);
  CHECK(printed.find("value = -0.0") != std::string::npos);
  Graph again = testing::parseOrFail(printed);
  auto out = interpret(again, {{"x", Tensor::fromDoubles({DType::f64, {2}}, std::vector<double>{1, 2})}});
  REQUIRE(out.ok());
  CHECK(std::signbit((*out)[0].getDouble(0)));
}
