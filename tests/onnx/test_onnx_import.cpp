// ONNX importer tests: models built with ONNX's protobuf classes, checking that garbled or truncated
// bytes give errors (never crashes), that errors name the op, node and input, that external data stays
// inside the model folder, and that shape subgraphs fold.
#include "frontend/model_executable.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/exec/executable.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace fs = std::filesystem;
using namespace smelt;

namespace {

void addInput(onnx::GraphProto& g, const std::string& name, int elemType, std::vector<int64_t> dims,
              const std::string& dimParam = {}) {
  auto* in = g.add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  if (!dimParam.empty()) shape->add_dim()->set_dim_param(dimParam);
}

void addOutput(onnx::GraphProto& g, const std::string& name) { g.add_output()->set_name(name); }

onnx::NodeProto* addNode(onnx::GraphProto& g, const std::string& op, std::vector<std::string> inputs,
                         std::vector<std::string> outputs, const std::string& name = {}) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

onnx::TensorProto* addFloatInit(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                                std::vector<float> values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return t;
}

onnx::ModelProto newModel(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("t");
  return m;
}

// y = x + w, with w an initializer.
onnx::ModelProto addModel() {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {2, 2});
  addFloatInit(g, "w", {2, 2}, {1, 2, 3, 4});
  addNode(g, "Add", {"x", "w"}, {"y"}, "add_node");
  addOutput(g, "y");
  return m;
}

Expected<Graph> importModel(const onnx::ModelProto& m, const std::string& dir = ".") {
  return importOnnxBytes(m.SerializeAsString(), dir, "test.onnx");
}

std::string errorOf(const Expected<Graph>& g) { return g.ok() ? std::string("<no error>") : g.error().message(); }

fs::path freshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("smelt_onnx_{}_{}", name, std::random_device{}());
  fs::remove_all(dir);
  fs::create_directories(dir / "model");
  return dir;
}

}  // namespace

TEST_CASE("onnx import: a small model imports and runs") {
  auto g = importModel(addModel());
  REQUIRE_MESSAGE(g.ok(), errorOf(g));
  REQUIRE(g->inputs().size() == 1);
  REQUIRE(g->parameters().size() == 1);
  CHECK(g->parameters()[0]->name() == "w");
  CHECK(g->parameters()[0]->trainable());
  bool named = false;
  for (const auto& n : g->nodes()) named = named || (n->opName() == "add" && n->sourceName() == "add_node");
  CHECK(named);
  TensorMap feeds{{"x", Tensor::of<float>({2, 2}, {10, 20, 30, 40})}};
  auto out = interpret(*g, feeds);
  REQUIRE(out.ok());
  CHECK(out->at(0).toDoubles() == std::vector<double>{11, 22, 33, 44});
}

TEST_CASE("onnx import: graph inputs that are also initializers are parameters") {
  onnx::ModelProto m = addModel();
  addInput(*m.mutable_graph(), "w", onnx::TensorProto::FLOAT, {2, 2});
  auto g = importModel(m);
  REQUIRE_MESSAGE(g.ok(), errorOf(g));
  CHECK(g->inputs().size() == 1);
  CHECK(g->findParameter("w") != nullptr);
}

TEST_CASE("onnx import: truncated and garbled bytes give errors, never crash") {
  std::string bytes = addModel().SerializeAsString();
  int errors = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto g = importOnnxBytes(std::string_view(bytes).substr(0, len), ".", "cut.onnx");
    if (!g.ok()) ++errors;
  }
  CHECK(errors > static_cast<int>(bytes.size()) / 2);
  CHECK_FALSE(importOnnxBytes(std::string_view(bytes).substr(0, bytes.size() / 2), ".", "cut.onnx").ok());

  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string garbled = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) garbled[rng() % garbled.size()] = static_cast<char>(rng());
    auto g = importOnnxBytes(garbled, ".", "garbled.onnx");
    if (g.ok()) (void)interpret(*g, {});  // may fail (missing feeds), must not crash
  }
  CHECK_FALSE(importOnnxBytes("this is not an onnx model", ".", "text.onnx").ok());
  CHECK(errorOf(importOnnxBytes("", ".", "empty.onnx")).find("empty") != std::string::npos);
}

TEST_CASE("onnx import: malformed tensors are errors") {
  SUBCASE("wrong element count") {
    onnx::ModelProto m = addModel();
    m.mutable_graph()->mutable_initializer(0)->add_float_data(5);
    CHECK(errorOf(importModel(m)).find("float_data holds 5 values") != std::string::npos);
  }
  SUBCASE("raw_data of the wrong size") {
    onnx::ModelProto m = addModel();
    auto* t = m.mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->set_raw_data(std::string(15, '\0'));
    CHECK(errorOf(importModel(m)).find("raw_data has 15 bytes") != std::string::npos);
  }
  SUBCASE("out-of-range data_type") {
    onnx::ModelProto m = addModel();
    m.mutable_graph()->mutable_initializer(0)->set_data_type(99);
    CHECK(errorOf(importModel(m)).find("unknown ONNX data type 99") != std::string::npos);
  }
  SUBCASE("negative and huge dims") {
    onnx::ModelProto m = addModel();
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
    CHECK(errorOf(importModel(m)).find("negative") != std::string::npos);
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 40);
    m.mutable_graph()->mutable_initializer(0)->set_dims(1, int64_t{1} << 40);
    CHECK(errorOf(importModel(m)).find("too large") != std::string::npos);
  }
  SUBCASE("missing graph") {
    onnx::ModelProto m = newModel();
    m.clear_graph();
    CHECK(errorOf(importModel(m)).find("no graph") != std::string::npos);
  }
  SUBCASE("reading test-data tensors") {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(3);
    t.add_int64_data(1);
    t.add_int64_data(-2);
    t.add_int64_data(3);
    auto ok = importOnnxTensorBytes(t.SerializeAsString(), ".", "t.pb");
    REQUIRE(ok.ok());
    CHECK(ok->toInts() == std::vector<int64_t>{1, -2, 3});
    CHECK_FALSE(importOnnxTensorBytes(t.SerializeAsString().substr(0, 5), ".", "t.pb").ok());
  }
}

TEST_CASE("onnx import: unsupported op, node and domain errors name them") {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {2});
  addNode(g, "FrobnicateV2", {"x"}, {"y"}, "frob_7");
  addOutput(g, "y");
  std::string e = errorOf(importModel(m));
  CHECK(e.find("FrobnicateV2") != std::string::npos);
  CHECK(e.find("frob_7") != std::string::npos);
  CHECK_FALSE(onnxOpSupported("FrobnicateV2"));
  CHECK(onnxOpSupported("Conv"));

  g.mutable_node(0)->set_op_type("Relu");
  g.mutable_node(0)->set_domain("com.example");
  e = errorOf(importModel(m));
  CHECK(e.find("com.example") != std::string::npos);
  CHECK(e.find("frob_7") != std::string::npos);
}

TEST_CASE("onnx import: dynamic input dimensions become symbolic dimensions, bound when the model runs") {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "images", onnx::TensorProto::FLOAT, {3}, "batch");
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();  // neither size nor name
  addNode(g, "Relu", {"images"}, {"y"});
  addOutput(g, "y");
  auto imported = importModel(m);
  REQUIRE_MESSAGE(imported.ok(), imported.error().message());
  CHECK(imported->inputs()[0]->type().toString() == "f32[3,batch,images_2]");
  CHECK(imported->outputs()[0].value->type().toString() == "f32[3,batch,images_2]");
  TensorMap feeds = {{"images", testing::randomTensor({DType::f32, {3, 5, 2}}, testing::testSeed())}};
  auto out = interpret(*imported, feeds);
  REQUIRE_MESSAGE(out.ok(), out.error().message());
  CHECK((*out)[0].type().toString() == "f32[3,5,2]");
  // Giving the shape makes it static.
  OnnxImportOptions options;
  options.inputShapes["images"] = {3, 4, 2};
  auto fixed = importOnnxBytes(m.SerializeAsString(), ".", "m.onnx", options);
  REQUIRE(fixed.ok());
  CHECK(fixed->inputs()[0]->type().toString() == "f32[3,4,2]");
}

TEST_CASE("onnx import: a static operand computed at run time names the node") {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {2, 3});
  addInput(g, "shape", onnx::TensorProto::INT64, {2});
  addNode(g, "Reshape", {"x", "shape"}, {"y"}, "reshape_1");
  addOutput(g, "y");
  std::string e = errorOf(importModel(m));
  CHECK(e.find("Reshape") != std::string::npos);
  CHECK(e.find("reshape_1") != std::string::npos);
  CHECK(e.find("must be static") != std::string::npos);
}

namespace {

onnx::TensorProto* addInt64Init(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                                std::vector<int64_t> values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

// y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])), PyTorch's x.view(x.size(0), -1); with
// `scale`, the gathered extent goes through `scaleOp` with it first (arithmetic on a size).
onnx::ModelProto flattenModel(const std::string& batch, int64_t scale = 0, const std::string& scaleOp = "Mul") {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  if (batch.empty()) {
    addInput(g, "x", onnx::TensorProto::FLOAT, {2, 3, 4});
  } else {
    addInput(g, "x", onnx::TensorProto::FLOAT, {}, batch);
    for (int64_t d : {3, 4})
      g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  }
  addInt64Init(g, "zero", {}, {0});
  addInt64Init(g, "minus1", {1}, {-1});
  addInt64Init(g, "axes", {1}, {0});
  addNode(g, "Shape", {"x"}, {"s"});
  addNode(g, "Gather", {"s", "zero"}, {"n"});
  std::string n = "n";
  if (scale) {
    addInt64Init(g, "scale", {}, {scale});
    addNode(g, scaleOp, {"n", "scale"}, {"scaled"}, "scale_size");
    n = "scaled";
  }
  addNode(g, "Unsqueeze", {n, "axes"}, {"n1"});
  addNode(g, "Concat", {"n1", "minus1"}, {"shape"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  addNode(g, "Reshape", {"x", "shape"}, {"y"});
  addOutput(g, "y");
  return m;
}

}  // namespace

TEST_CASE("onnx import: shape subgraphs fold to constants") {
  auto graph = importModel(flattenModel(""));
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  CHECK(graph->outputs()[0].value->type().toString() == "f32[2,12]");
  for (const auto& n : graph->nodes()) CHECK((n->opName() == "reshape" || n->opName() == "constant"));
  CHECK(graph->parameters().empty());  // integer initializers used only statically stay constants
}

TEST_CASE(
    "onnx import: shape subgraphs over a symbolic batch stay symbolic, products of it too, and other arithmetic on a "
    "size is an error naming the node") {
  auto graph = importModel(flattenModel("batch"));
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  CHECK(graph->outputs()[0].value->type().toString() == "f32[batch,12]");
  // The text IR names the symbol in the reshape's shape, and reads it back.
  const std::string text = toText(*graph);
  CHECK(text.find("shape = [batch, -1]") != std::string::npos);
  auto reparsed = parseGraph(text);
  REQUIRE_MESSAGE(reparsed.ok(), reparsed.error().message());
  CHECK(toText(*reparsed) == text);
  for (int64_t n : {1, 5}) {
    TensorMap feeds = {
        {"x", testing::randomTensor({DType::f32, {n, 3, 4}}, testing::testSeed() + static_cast<uint64_t>(n))}};
    auto out = interpret(*graph, feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    CHECK((*out)[0].type().toString() == fmt::format("f32[{},12]", n));
    for (int64_t i = 0; i < n * 12; ++i) CHECK((*out)[0].getDouble(i) == feeds.at("x").getDouble(i));
  }
  // batch * 2 is the product 2*batch (x.view(2 * x.size(0), -1)), divided back exactly by Div.
  auto doubled = importModel(flattenModel("batch", 2));
  REQUIRE_MESSAGE(doubled.ok(), errorOf(doubled));
  CHECK(doubled->outputs()[0].value->type().toString() == "f32[2*batch,6]");
  CHECK(toText(*doubled).find("shape = [2*batch, -1]") != std::string::npos);
  for (int64_t n : {1, 5}) {
    TensorMap feeds = {{"x", testing::randomTensor({DType::f32, {n, 3, 4}}, testing::testSeed() + 9)}};
    auto out = interpret(*doubled, feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    CHECK((*out)[0].type().toString() == fmt::format("f32[{},6]", 2 * n));
    for (int64_t i = 0; i < n * 12; ++i) CHECK((*out)[0].getDouble(i) == feeds.at("x").getDouble(i));
  }
  auto halved = importModel(flattenModel("batch", 1, "Div"));
  REQUIRE_MESSAGE(halved.ok(), errorOf(halved));
  CHECK(halved->outputs()[0].value->type().toString() == "f32[batch,12]");
  // batch / 2 and batch - 2 are sizes ((batch)/2, batch-2), but no reshape of 12*batch elements holds
  // them: refused, naming the node; static shapes import them.
  std::string e = errorOf(importModel(flattenModel("batch", 2, "Div")));
  CHECK_MESSAGE(e.find("ONNX Reshape node #5") != std::string::npos, e);
  CHECK_MESSAGE(e.find("12*batch is not a multiple of (batch)/2") != std::string::npos, e);
  e = errorOf(importModel(flattenModel("batch", 2, "Sub")));
  CHECK_MESSAGE(e.find("12*batch is not a multiple of batch-2") != std::string::npos, e);
  // Arithmetic with a non-integer value stays an error naming the node.
  e = errorOf(importModel(flattenModel("batch", 2, "Pow")));
  CHECK_MESSAGE(e.find("scale_size") != std::string::npos, e);
  OnnxImportOptions options;
  options.inputShapes["x"] = {4, 3, 4};
  auto fixed = importOnnxBytes(flattenModel("batch", 2, "Sub").SerializeAsString(), ".", "m.onnx", options);
  REQUIRE_MESSAGE(fixed.ok(), errorOf(fixed));
  CHECK(fixed->outputs()[0].value->type().toString() == "f32[2,24]");
}

TEST_CASE("onnx import: external data is read only from the model's folder") {
  fs::path dir = freshDir("ext");
  std::vector<float> values{1.5f, -2.0f, 3.25f, 4.0f};
  {
    std::ofstream out(dir / "model" / "weights.bin", std::ios::binary);
    out.write("PADDING!", 8);
    out.write(reinterpret_cast<const char*>(values.data()), sizeof(float) * values.size());
  }
  std::ofstream(dir / "outside.bin", std::ios::binary).write(reinterpret_cast<const char*>(values.data()), 16);

  auto modelWith = [&](const std::string& location, const std::string& offset) {
    onnx::ModelProto m = addModel();
    auto* t = m.mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* off = t->add_external_data();
    off->set_key("offset");
    off->set_value(offset);
    auto* len = t->add_external_data();
    len->set_key("length");
    len->set_value("16");
    fs::path file = dir / "model" / "m.onnx";
    std::ofstream(file, std::ios::binary) << m.SerializeAsString();
    return importOnnxFile(file.string());
  };

  auto ok = modelWith("weights.bin", "8");
  REQUIRE_MESSAGE(ok.ok(), errorOf(ok));
  CHECK(ok->findParameter("w")->initialValue().toDoubles() == std::vector<double>{1.5, -2.0, 3.25, 4.0});

  std::string up = errorOf(modelWith("../outside.bin", "0"));
  CHECK(up.find("'..'") != std::string::npos);
  std::string abs = errorOf(modelWith("/etc/passwd", "0"));
  CHECK(abs.find("absolute") != std::string::npos);
  CHECK(errorOf(modelWith("sub/../../outside.bin", "0")).find("'..'") != std::string::npos);
  CHECK(errorOf(modelWith("weights.bin", "12")).find("past its end") != std::string::npos);
  CHECK(errorOf(modelWith("missing.bin", "0")).find("cannot open") != std::string::npos);
  // A link inside the folder reaching a file outside it is refused after the link is resolved.
  fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
  std::string linked = errorOf(modelWith("link.bin", "0"));
  CHECK_MESSAGE(linked.find("outside the model's folder") != std::string::npos, linked);
  fs::create_directory_symlink(dir, dir / "model" / "up");
  std::string viaDir = errorOf(modelWith("up/outside.bin", "0"));
  CHECK_MESSAGE(viaDir.find("outside the model's folder") != std::string::npos, viaDir);
  // A link that stays inside is fine.
  fs::create_symlink(dir / "model" / "weights.bin", dir / "model" / "alias.bin");
  CHECK(modelWith("alias.bin", "8").ok());
  fs::remove_all(dir);
}

TEST_CASE("onnx import: a missing file is an error") {
  auto g = importOnnxFile("/nonexistent/smelt/model.onnx");
  CHECK(errorOf(g).find("cannot open") != std::string::npos);
}

TEST_CASE(
    "onnx import: a model needing an input's value compiles once per distinct value, its batch symbolic, as the "
    "reference computes") {
  // y = Clip(Reshape(x, shape), lo, hi): the shape and the bounds are graph inputs.
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {}, "batch");
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(12);
  addInput(g, "shape", onnx::TensorProto::INT64, {3});
  addInput(g, "lo", onnx::TensorProto::FLOAT, {});
  addInput(g, "hi", onnx::TensorProto::FLOAT, {});
  addNode(g, "Reshape", {"x", "shape"}, {"r"}, "reshape_by_input");
  addNode(g, "Clip", {"r", "lo", "hi"}, {"y"});
  addOutput(g, "y");
  fs::path dir = freshDir("by_value");
  const std::string path = (dir / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  // Imported without the values, it cannot be: the reshape's target is known only at run time.
  CHECK(errorOf(importOnnxFile(path)).find("reshape_by_input") != std::string::npos);

  auto model = ModelExecutable::load(path, {.device = "cpu"});
  REQUIRE_MESSAGE(model.ok(), model.error().message());
  struct Case {
    int64_t batch;
    std::vector<int64_t> shape;
    float lo, hi;
  };
  const std::vector<Case> cases = {{2, {-1, 3, 4}, -0.5f, 0.5f},
                                   {5, {-1, 3, 4}, -0.5f, 0.5f},
                                   {2, {-1, 4, 3}, -0.5f, 0.5f},
                                   {3, {-1, 3, 4}, -0.25f, 1.0f},
                                   {7, {-1, 4, 3}, -0.5f, 0.5f}};
  for (const Case& c : cases) {
    CAPTURE(c.batch);
    TensorMap feeds = {
        {"x", testing::randomTensor({DType::f32, {c.batch, 12}}, testing::testSeed() + static_cast<uint64_t>(c.batch))},
        {"shape", Tensor::of<int64_t>({3}, c.shape)},
        {"lo", Tensor::scalar(DType::f32, c.lo)},
        {"hi", Tensor::scalar(DType::f32, c.hi)}};
    auto out = (*model)->run(feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    const Tensor& y = (*out)[0];
    CHECK(y.shape() == Shape{c.batch, c.shape[1], c.shape[2]});
    for (int64_t i = 0; i < y.numel(); ++i) {
      CHECK(y.getDouble(i) == std::clamp(feeds.at("x").getDouble(i), double{c.lo}, double{c.hi}));
    }
  }
  CHECK((*model)->valueInputs() == std::set<std::string>{"hi", "lo", "shape"});
  // Three distinct values (the batch is symbolic: its sizes share one compile each).
  CHECK((*model)->compiledValues() == 3);
  fs::remove_all(dir);
}

TEST_CASE("onnx import: a graph output listed twice is an error naming it, and every imported graph verifies") {
  onnx::ModelProto m = addModel();
  addOutput(*m.mutable_graph(), "y");
  std::string e = errorOf(importModel(m));
  CHECK_MESSAGE(e.find("graph output 'y' is listed twice") != std::string::npos, e);

  // Two initializers of one name would make two parameters of it.
  onnx::ModelProto twice = addModel();
  addFloatInit(*twice.mutable_graph(), "w", {2, 2}, {5, 6, 7, 8});
  e = errorOf(importModel(twice));
  CHECK_MESSAGE(e.find("initializer 'w' is defined twice") != std::string::npos, e);

  // So would a graph input listed twice.
  onnx::ModelProto inputs = addModel();
  addInput(*inputs.mutable_graph(), "x", onnx::TensorProto::FLOAT, {2, 2});
  e = errorOf(importModel(inputs));
  CHECK_MESSAGE(e.find("graph input 'x' is listed twice") != std::string::npos, e);
}

TEST_CASE("onnx import: ConstantOfShape and Range never materialize huge tensors at import") {
  auto constantOfShape = [](std::vector<int64_t> shape) {
    onnx::ModelProto m = newModel();
    auto& g = *m.mutable_graph();
    auto* t = g.add_initializer();
    t->set_name("shape");
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(shape.size()));
    for (int64_t d : shape) t->add_int64_data(d);
    addNode(g, "ConstantOfShape", {"shape"}, {"y"}, "fill");
    addOutput(g, "y");
    return importModel(m);
  };
  // 2^32 elements (16 GiB of f32): imported as an expand of one value, nothing allocated.
  auto big = constantOfShape({65536, 65536});
  REQUIRE_MESSAGE(big.ok(), errorOf(big));
  CHECK(toText(*big).find("expand(") != std::string::npos);
  CHECK(toText(*big).size() < 2000);
  // Past smelt's element limit: an error naming the node.
  std::string tooBig = errorOf(constantOfShape({int64_t{1} << 31, int64_t{1} << 31}));
  CHECK_MESSAGE(tooBig.find("fill") != std::string::npos, tooBig);
  CHECK_MESSAGE(tooBig.find("too many elements") != std::string::npos, tooBig);
  // A small one stays a constant (shape computations downstream read it).
  auto small = constantOfShape({2, 3});
  REQUIRE(small.ok());
  CHECK(toText(*small).find("expand(") == std::string::npos);

  auto range = [](int64_t limit) {
    onnx::ModelProto m = newModel();
    auto& g = *m.mutable_graph();
    for (auto [name, v] : {std::pair<const char*, int64_t>{"start", 0}, {"limit", limit}, {"delta", 1}}) {
      auto* t = g.add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_int64_data(v);
    }
    addNode(g, "Range", {"start", "limit", "delta"}, {"y"}, "arange");
    addOutput(g, "y");
    return importModel(m);
  };
  CHECK(range(1000).ok());
  std::string huge = errorOf(range(int64_t{1} << 40));
  CHECK_MESSAGE(huge.find("arange") != std::string::npos, huge);
  CHECK_MESSAGE(huge.find("larger than") != std::string::npos, huge);
}

TEST_CASE("onnx import: every input the fuzzer found a crash with imports or fails with an error, without one") {
  // fuzz/regressions/fuzz_onnx replays them under the sanitizers; here the ordinary build reads them too.
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SMELT_SOURCE_DIR "/fuzz/regressions/fuzz_onnx")) {
    CAPTURE(entry.path().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto graph = importOnnxBytes(bytes, entry.path().parent_path().string(), entry.path().filename().string());
    if (!graph.ok()) CHECK_FALSE(graph.error().message().empty());
    ++seen;
  }
  CHECK(seen >= 5);
}

TEST_CASE("onnx import: names with control characters are escaped in error messages") {
  onnx::ModelProto m = addModel();
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  m.mutable_graph()->mutable_node(0)->set_name("evil\x1b[2J\rname");
  std::string e = errorOf(importModel(m));
  CHECK_MESSAGE(e.find("evil\\x1b[2J\\x0dname") != std::string::npos, e);
  CHECK(e.find('\x1b') == std::string::npos);
  CHECK(e.find('\r') == std::string::npos);
}

TEST_CASE("onnx import: a Concat of 5,000 inputs imports, compiles and runs in seconds as a tree of concats") {
  constexpr int kInputs = 5000;
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  std::vector<std::string> parts;
  for (int i = 0; i < kInputs; ++i) {
    std::string name = fmt::format("x{}", i);
    addInput(g, name, onnx::TensorProto::FLOAT, {1, 2});
    parts.push_back(name);
  }
  auto* concat = addNode(g, "Concat", parts, {"y"}, "join");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addOutput(g, "y");
  auto start = std::chrono::steady_clock::now();
  auto graph = importModel(m);
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  TensorMap feeds = testing::randomFeeds(*graph, testing::testSeed());
  auto exe = Executable::compile(*graph);
  REQUIRE_MESSAGE(exe.ok(), (exe.ok() ? "" : exe.error().message()));
  auto out = (*exe)->run(feeds);
  REQUIRE(out.ok());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto expected = interpret(*graph, feeds);
  REQUIRE(expected.ok());
  CHECK(testing::compareTensors((*out)[0], (*expected)[0], 0).empty());
  // A tree of concats reading at most 64 buffers each, not one 5,000-deep chain (which took LLVM
  // 20-30 s to compile as a kernel, growing quadratically with the inputs); on the CPU each is the op's host
  // copies, elsewhere a kernel.
  CHECK((*exe)->report().kernels + (*exe)->report().host >= kInputs / 64);
  CHECK_MESSAGE(seconds < 10, seconds);
}

TEST_CASE("onnx import: Range up to a symbolic batch is computed per run, as the reference computes") {
  // y = x + cast(Range(0, Shape(x)[0], 1)) (positions added row by row): the range's length is the
  // batch, known only once the model runs.
  auto model = [](int64_t start) {
    onnx::ModelProto m = newModel();
    auto& g = *m.mutable_graph();
    addInput(g, "x", onnx::TensorProto::FLOAT, {}, "batch");
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    addInt64Init(g, "zero", {}, {0});
    addInt64Init(g, "start", {}, {start});
    addInt64Init(g, "one", {}, {1});
    addInt64Init(g, "axes", {1}, {1});
    addNode(g, "Shape", {"x"}, {"s"});
    addNode(g, "Gather", {"s", "zero"}, {"n"});
    addNode(g, "Range", {"start", "n", "one"}, {"r"}, "positions");
    addNode(g, "Cast", {"r"}, {"rf"})->add_attribute()->CopyFrom([] {
      onnx::AttributeProto a;
      a.set_name("to");
      a.set_type(onnx::AttributeProto::INT);
      a.set_i(onnx::TensorProto::FLOAT);
      return a;
    }());
    addNode(g, "Unsqueeze", {"rf", "axes"}, {"column"});
    addNode(g, "Add", {"x", "column"}, {"y"});
    addOutput(g, "y");
    return m;
  };
  auto graph = importModel(model(0));
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  CHECK(graph->outputs()[0].value->type().toString() == "f32[batch,3]");
  CHECK(toText(*graph).find("range()") != std::string::npos);
  auto exe = Executable::compile(*graph);
  REQUIRE_MESSAGE(exe.ok(), exe.error().message());
  for (int64_t n : {1, 4, 9}) {
    CAPTURE(n);
    TensorMap feeds = {
        {"x", testing::randomTensor({DType::f32, {n, 3}}, testing::testSeed() + static_cast<uint64_t>(n))}};
    auto reference = interpret(*graph, feeds);
    REQUIRE_MESSAGE(reference.ok(), reference.error().message());
    auto out = (*exe)->run(feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    REQUIRE((*out)[0].shape() == Shape{n, 3});
    for (int64_t i = 0; i < n * 3; ++i) {
      const double want = feeds.at("x").getDouble(i) + static_cast<double>(i / 3);
      CHECK((*reference)[0].getDouble(i) == doctest::Approx(want));
      CHECK((*out)[0].getDouble(i) == doctest::Approx(want));
    }
  }
  // From 1, its length would be batch - 1: arithmetic on a size, refused naming the node.
  const std::string e = errorOf(importModel(model(1)));
  CHECK_MESSAGE(e.find("positions") != std::string::npos, e);
  CHECK_MESSAGE(e.find("start at 0") != std::string::npos, e);
}

TEST_CASE(
    "onnx import: MaxPool's Indices output is flat over the input, over a symbolic batch too, in either storage "
    "order") {
  for (int64_t order : {0, 1}) {
    CAPTURE(order);
    onnx::ModelProto m = newModel();
    auto& g = *m.mutable_graph();
    addInput(g, "x", onnx::TensorProto::FLOAT, {}, "batch");
    for (int64_t d : {2, 4, 4})
      g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    auto* pool = addNode(g, "MaxPool", {"x"}, {"y", "i"}, "pool");
    auto intsAttr = [&](const char* name, std::vector<int64_t> v) {
      auto* a = pool->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
    };
    intsAttr("kernel_shape", {2, 2});
    intsAttr("strides", {2, 2});
    auto* so = pool->add_attribute();
    so->set_name("storage_order");
    so->set_type(onnx::AttributeProto::INT);
    so->set_i(order);
    addOutput(g, "y");
    addOutput(g, "i");
    auto graph = importModel(m);
    REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
    auto exe = Executable::compile(*graph);
    REQUIRE_MESSAGE(exe.ok(), exe.error().message());
    for (int64_t n : {1, 3}) {
      CAPTURE(n);
      Tensor x = testing::randomTensor({DType::f32, {n, 2, 4, 4}}, testing::testSeed() + static_cast<uint64_t>(n));
      auto out = (*exe)->run({{"x", x}});
      REQUIRE_MESSAGE(out.ok(), out.error().message());
      const Tensor& idx = (*out)[1];
      REQUIRE(idx.shape() == Shape{n, 2, 2, 2});
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t c = 0; c < 2; ++c) {
          for (int64_t oh = 0; oh < 2; ++oh) {
            for (int64_t ow = 0; ow < 2; ++ow) {
              // The window's first maximum in scan order, as ONNX numbers it.
              int64_t best = -1;
              double value = 0;
              for (int64_t h = 2 * oh; h < 2 * oh + 2; ++h) {
                for (int64_t w = 2 * ow; w < 2 * ow + 2; ++w) {
                  const double v = x.getDouble(((b * 2 + c) * 4 + h) * 4 + w);
                  if (best < 0 || v > value) {
                    value = v;
                    best = (b * 2 + c) * 16 + (order == 0 ? h * 4 + w : w * 4 + h);
                  }
                }
              }
              CHECK(idx.getInt(((b * 2 + c) * 2 + oh) * 2 + ow) == best);
            }
          }
        }
      }
    }
  }
}

TEST_CASE(
    "onnx import: a ConstantOfShape over a symbolic batch is computed "
    "per run (an RNN's initial state)") {
  // y = x + ConstantOfShape(Shape(x), 2.5): the exporters' zero initial state
  // of a recurrent layer. It used to be folded at import with its symbolic
  // shape and crashed the importer.
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {}, "batch");
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  addNode(g, "Shape", {"x"}, {"s"});
  auto* fill = addNode(g, "ConstantOfShape", {"s"}, {"c"}, "state");
  auto* value = fill->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(2.5f);
  addNode(g, "Add", {"x", "c"}, {"y"});
  addOutput(g, "y");
  auto graph = importModel(m);
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  CHECK(graph->outputs()[0].value->type().toString() == "f32[batch,3]");
  TensorMap feeds = {{"x", testing::randomTensor({DType::f32, {4, 3}}, testing::testSeed())}};
  auto out = interpret(*graph, feeds);
  REQUIRE_MESSAGE(out.ok(), out.error().message());
  for (int64_t i = 0; i < 12; ++i) CHECK((*out)[0].getDouble(i) == doctest::Approx(feeds.at("x").getDouble(i) + 2.5));
}

TEST_CASE(
    "onnx import: Resize, ScatterND and the recurrent ops reject what "
    "they cannot compose, naming the node") {
  auto resize = [](std::vector<float> scales) {
    onnx::ModelProto m = newModel(13);
    auto& g = *m.mutable_graph();
    addInput(g, "x", onnx::TensorProto::FLOAT, {1, 1, 2, 2});
    addFloatInit(g, "scales", {4}, std::move(scales));
    auto* n = addNode(g, "Resize", {"x", "", "scales"}, {"y"}, "upsampler");
    auto* mode = n->add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s("linear");
    addOutput(g, "y");
    return importModel(m);
  };
  auto ok = resize({1, 1, 2, 3});
  REQUIRE_MESSAGE(ok.ok(), errorOf(ok));
  CHECK(ok->outputs()[0].value->type().toString() == "f32[1,1,4,6]");
  // A 74-byte model must not make the importer plan a billion positions.
  std::string huge = errorOf(resize({1, 1, 1e9f, 1}));
  CHECK_MESSAGE(huge.find("upsampler") != std::string::npos, huge);
  CHECK_MESSAGE(huge.find("exceeds") != std::string::npos, huge);
  std::string negative = errorOf(resize({1, 1, -2, 1}));
  CHECK_MESSAGE(negative.find("must be positive") != std::string::npos, negative);

  onnx::ModelProto sm = newModel(16);
  auto& sg = *sm.mutable_graph();
  addInput(sg, "data", onnx::TensorProto::FLOAT, {4, 3});
  addInt64Init(sg, "idx", {2, 1}, {0, 2});
  addFloatInit(sg, "upd", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto* scatter = addNode(sg, "ScatterND", {"data", "idx", "upd"}, {"y"}, "writer");
  auto* reduction = scatter->add_attribute();
  reduction->set_name("reduction");
  reduction->set_type(onnx::AttributeProto::STRING);
  reduction->set_s("xor");  // none, add, mul, max and min are ONNX's
  addOutput(sg, "y");
  std::string unknown = errorOf(importModel(sm));
  CHECK_MESSAGE(unknown.find("writer") != std::string::npos, unknown);
  CHECK_MESSAGE(unknown.find("reduction 'xor' is not one of none, add, mul, max, min") != std::string::npos, unknown);

  // An LSTM is unrolled: its sequence length must be static.
  onnx::ModelProto lm = newModel(14);
  auto& lg = *lm.mutable_graph();
  addInput(lg, "x", onnx::TensorProto::FLOAT, {}, "steps");
  for (int64_t d : {2, 3})
    lg.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  addFloatInit(lg, "w", {1, 8, 3}, std::vector<float>(24, 0.1f));
  addFloatInit(lg, "r", {1, 8, 2}, std::vector<float>(16, 0.1f));
  addNode(lg, "LSTM", {"x", "w", "r"}, {"y"}, "encoder");
  addOutput(lg, "y");
  std::string dynamicSeq = errorOf(importModel(lm));
  CHECK_MESSAGE(dynamicSeq.find("encoder") != std::string::npos, dynamicSeq);
  CHECK_MESSAGE(dynamicSeq.find("static seq") != std::string::npos, dynamicSeq);

  // A declared length of a billion steps (within the element limit: one input feature) is refused before it is
  // unrolled into tens of billions of nodes.
  onnx::ModelProto hm = newModel(14);
  auto& hg = *hm.mutable_graph();
  addInput(hg, "x", onnx::TensorProto::FLOAT, {1000000000, 1, 1});
  addFloatInit(hg, "w", {1, 8, 1}, std::vector<float>(8, 0.1f));
  addFloatInit(hg, "r", {1, 8, 2}, std::vector<float>(16, 0.1f));
  addNode(hg, "LSTM", {"x", "w", "r"}, {"y"}, "encoder");
  addOutput(hg, "y");
  std::string longSeq = errorOf(importModel(hm));
  CHECK_MESSAGE(longSeq.find("encoder") != std::string::npos, longSeq);
  CHECK_MESSAGE(longSeq.find("a sequence of 1000000000 steps is longer than the 16384 steps smelt unrolls") !=
                    std::string::npos,
                longSeq);
}

TEST_CASE("onnx import: a concat along a symbolic batch is a sum, and Sub on its Shape folds back to the batch") {
  onnx::ModelProto m = newModel();
  auto& g = *m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {}, "batch");
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  addFloatInit(g, "row", {1, 3}, {0.5f, -1.0f, 2.0f});
  addInt64Init(g, "zero", {}, {0});
  addInt64Init(g, "one", {}, {1});
  addInt64Init(g, "three", {1}, {3});
  addInt64Init(g, "axes", {1}, {0});
  auto axis0 = [] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  };
  addNode(g, "Concat", {"x", "row"}, {"grown"})->add_attribute()->CopyFrom(axis0());
  addNode(g, "Shape", {"grown"}, {"s"});
  addNode(g, "Gather", {"s", "zero"}, {"n"});
  addNode(g, "Sub", {"n", "one"}, {"m"}, "shrink");
  addNode(g, "Unsqueeze", {"m", "axes"}, {"m1"});
  addNode(g, "Concat", {"m1", "three"}, {"shape"})->add_attribute()->CopyFrom(axis0());
  addNode(g, "Reshape", {"x", "shape"}, {"y"});
  addOutput(g, "grown");
  addOutput(g, "y");
  auto graph = importModel(m);
  REQUIRE_MESSAGE(graph.ok(), errorOf(graph));
  CHECK(graph->outputs()[0].value->type().toString() == "f32[batch+1,3]");
  CHECK(graph->outputs()[1].value->type().toString() == "f32[batch,3]");
  for (int64_t n : {1, 4}) {
    TensorMap feeds = {{"x", testing::randomTensor({DType::f32, {n, 3}}, testing::testSeed() + 11)}};
    auto out = interpret(*graph, feeds);
    REQUIRE_MESSAGE(out.ok(), out.error().message());
    CHECK((*out)[0].type().toString() == fmt::format("f32[{},3]", n + 1));
    CHECK((*out)[0].getDouble(n * 3 + 2) == 2.0);
    CHECK((*out)[1].type().toString() == fmt::format("f32[{},3]", n));
  }
}
