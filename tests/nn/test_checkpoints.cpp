// safetensors checkpoints: a round trip of every dtype, the byte layout the format defines, loading
// into a model (mismatches named), malformed files rejected with a message; IDX files likewise.
#include "frontend/data/idx.h"
#include "frontend/nn/checkpoint.h"
#include "frontend/nn/models.h"
#include "frontend/nn/safetensors.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace smelt;

namespace {

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("smelt_nn_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("safetensors: every dtype round-trips, the header is the format's JSON after an 8-byte length") {
  nn::StateDict state;
  uint64_t seed = testing::testSeed();
  for (DType d : kAllDTypes) state.emplace(std::string("t.") + std::string(dtypeName(d)), testing::randomTensor(TensorType{d, {2, 3}}, seed++));
  state.emplace("scalar", Tensor::scalar(DType::f32, 2.5));
  std::string path = tempPath("round.safetensors");
  REQUIRE(nn::saveSafetensors(path, state, {{"note", "test"}}).ok());
  auto loaded = nn::loadSafetensors(path);
  REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().message()));
  CHECK(*loaded == state);
  std::string bytes = readAll(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[static_cast<size_t>(i)])} << (8 * i);
  std::string header = bytes.substr(8, n);
  CHECK(header.find("\"t.f32\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[") != std::string::npos);
  CHECK(header.find("\"__metadata__\":{\"note\":\"test\"}") != std::string::npos);
  CHECK(n % 8 == 0);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: loading into a model checks every tensor's presence, dtype and shape by name") {
  nn::StateDict saved{{"a", Tensor(TensorType{DType::f32, {2}})}, {"b", Tensor(TensorType{DType::f32, {3}})}};
  std::string path = tempPath("model.safetensors");
  REQUIRE(nn::saveSafetensors(path, saved).ok());
  nn::StateDict same{{"a", Tensor::of<float>({2}, {1, 2})}, {"b", Tensor(TensorType{DType::f32, {3}})}};
  CHECK(nn::loadInto(same, path).ok());
  CHECK(same.at("a").getDouble(0) == 0);  // replaced by the file's zeros
  nn::StateDict wrongShape{{"a", Tensor(TensorType{DType::f32, {3}})}, {"b", Tensor(TensorType{DType::f32, {3}})}};
  Status s = nn::loadInto(wrongShape, path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message().find("'a'") != std::string::npos);
  CHECK(wrongShape.at("a").shape() == Shape{3});  // unchanged
  nn::StateDict missing{{"a", Tensor(TensorType{DType::f32, {2}})}, {"b", Tensor(TensorType{DType::f32, {3}})},
                        {"c", Tensor(TensorType{DType::f32, {1}})}};
  s = nn::loadInto(missing, path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message().find("'c'") != std::string::npos);
  nn::StateDict extra{{"a", Tensor(TensorType{DType::f32, {2}})}};
  s = nn::loadInto(extra, path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message().find("'b'") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: truncated, oversized and malformed files are errors, never crashes") {
  nn::StateDict saved{{"w", Tensor::of<float>({4}, {1, 2, 3, 4})}};
  std::string path = tempPath("bad.safetensors");
  REQUIRE(nn::saveSafetensors(path, saved).ok());
  std::string good = readAll(path);
  for (size_t cut : {size_t{0}, size_t{5}, size_t{12}, good.size() - 3}) {
    writeAll(path, good.substr(0, cut));
    auto loaded = nn::loadSafetensors(path);
    CHECK_MESSAGE(!loaded.ok(), "cut at ", cut);
  }
  std::string badLength = good;
  badLength[7] = '\x7f';  // a header length past the file
  writeAll(path, badLength);
  CHECK_FALSE(nn::loadSafetensors(path).ok());
  std::string notJson = good;
  notJson[8] = '[';
  writeAll(path, notJson);
  CHECK_FALSE(nn::loadSafetensors(path).ok());
  CHECK_FALSE(nn::loadSafetensors(tempPath("absent.safetensors")).ok());
  std::filesystem::remove(path);
}

TEST_CASE("idx: files round-trip, and bad magic, unknown types and wrong sizes are errors naming the file") {
  std::string path = tempPath("images.idx");
  Tensor images = testing::randomTensor(TensorType{DType::u8, {3, 4, 5}}, testing::testSeed());
  REQUIRE(data::writeIdx(path, images).ok());
  auto back = data::readIdx(path);
  REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().message()));
  CHECK(*back == images);
  Tensor ints = testing::randomTensor(TensorType{DType::i32, {7}}, testing::testSeed());
  REQUIRE(data::writeIdx(path, ints).ok());
  CHECK(*data::readIdx(path) == ints);
  std::string bytes = readAll(path);
  CHECK(bytes.substr(0, 4) == std::string("\0\0\x0c\x01", 4));  // big-endian header: i32, rank 1
  writeAll(path, bytes.substr(0, bytes.size() - 1));
  auto truncated = data::readIdx(path);
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().message().find(path) != std::string::npos);
  writeAll(path, std::string("\x01\x00\x08\x01", 4));
  CHECK_FALSE(data::readIdx(path).ok());
  writeAll(path, std::string("\0\0\x42\x01\0\0\0\0", 8));
  CHECK_FALSE(data::readIdx(path).ok());
  Tensor f = data::imagesToFloat(Tensor::of<uint8_t>({1, 1, 2}, {0, 255}));
  CHECK(f.shape() == Shape{1, 1, 1, 2});
  CHECK(f.getDouble(1) == 1.0);
  std::filesystem::remove(path);
}

TEST_CASE("idx: the bundled digits are 1,437 training and 360 test images of 8x8 with labels 0 to 9") {
  std::string dir = std::string(SMELT_SOURCE_DIR) + "/data/digits/";
  auto train = data::readIdx(dir + "train-images-idx3-ubyte");
  auto labels = data::readIdx(dir + "t10k-labels-idx1-ubyte");
  REQUIRE(train.ok());
  REQUIRE(labels.ok());
  CHECK(train->shape() == Shape{1437, 8, 8});
  CHECK(labels->shape() == Shape{360});
  for (int64_t i = 0; i < labels->numel(); ++i) CHECK((labels->getInt(i) >= 0 && labels->getInt(i) <= 9));
}

TEST_CASE("checkpoints: loading into a model is strict: missing and unexpected tensors are an error listing them, a prefix is named, and a non-strict load reports what it skipped") {
  auto makeModel = [] { return nn::Model(nn::sequential({nn::linear(4, 3), nn::relu(), nn::linear(3, 2)}), 7); };
  const TensorType input{DType::f32, {5, 4}};
  // A trained model's state, saved with metadata, an optimizer slot and a PyTorch batch counter.
  nn::Model trained = makeModel();
  auto saved = nn::loadCheckpoint(trained, "/nonexistent.safetensors", input);
  REQUIRE_FALSE(saved.ok());  // no file: an error naming it
  CHECK(saved.error().message().find("/nonexistent.safetensors") != std::string::npos);
  {
    Graph g;
    nn::GraphContext ctx(g, trained.state, false, trained.seed);
    trained.net->forward(ctx, g.addInput("input", input));
    REQUIRE(ctx.b().status().ok());
  }
  nn::StateDict file = trained.state;
  file.emplace("optim.0.weight.m", Tensor(TensorType{DType::f32, {3, 4}}));
  file.emplace("1.num_batches_tracked", Tensor::of<int64_t>({}, {12}));
  const std::string good = tempPath("strict_good.safetensors");
  REQUIRE(nn::saveSafetensors(good, file, {{"epoch", "3"}}).ok());
  nn::Model fresh = makeModel();
  auto loaded = nn::loadCheckpoint(fresh, good, input);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->metadata.at("epoch") == "3");
  CHECK(loaded->missing.empty());
  CHECK(loaded->unexpected.empty());
  CHECK(loaded->loaded.size() == trained.state.size());
  for (const auto& [name, t] : trained.state) CHECK(testing::compareTensors(fresh.state.at(name), t, 0).empty());

  // DataParallel's names: every tensor behind a `module.` prefix.
  nn::StateDict prefixed;
  for (const auto& [name, t] : trained.state) prefixed.emplace("module." + name, t);
  const std::string wrapped = tempPath("strict_prefixed.safetensors");
  REQUIRE(nn::saveSafetensors(wrapped, prefixed).ok());
  nn::Model other = makeModel();
  auto refused = nn::loadCheckpoint(other, wrapped, input);
  REQUIRE_FALSE(refused.ok());
  const std::string message = refused.error().message();
  CHECK(message.find("missing from the file: 0.bias") != std::string::npos);
  CHECK(message.find("not in the model: module.0.bias") != std::string::npos);
  CHECK(message.find("'module.' prefix") != std::string::npos);
  CHECK(other.state.empty());  // a failed load changes nothing

  // A missing tensor: strict refuses; non-strict loads the rest and says what it kept.
  nn::StateDict partial = trained.state;
  partial.erase("2.weight");
  const std::string lacking = tempPath("strict_lacking.safetensors");
  REQUIRE(nn::saveSafetensors(lacking, partial).ok());
  nn::Model strictModel = makeModel();
  auto strictLoad = nn::loadCheckpoint(strictModel, lacking, input);
  REQUIRE_FALSE(strictLoad.ok());
  CHECK(strictLoad.error().message().find("missing from the file: 2.weight") != std::string::npos);
  nn::Model lenient = makeModel();
  auto lenientLoad = nn::loadCheckpoint(lenient, lacking, input, {.strict = false});
  REQUIRE_MESSAGE(lenientLoad.ok(), lenientLoad.error().message());
  CHECK(lenientLoad->missing == std::vector<std::string>{"2.weight"});
  CHECK(testing::compareTensors(lenient.state.at("0.weight"), trained.state.at("0.weight"), 0).empty());
  CHECK(lenient.state.count("2.weight") == 1);  // kept as the model made it

  // A tensor of another shape is an error naming it, strict or not.
  nn::StateDict reshaped = trained.state;
  reshaped["0.bias"] = Tensor(TensorType{DType::f32, {4}});
  const std::string wrongShape = tempPath("strict_shape.safetensors");
  REQUIRE(nn::saveSafetensors(wrongShape, reshaped).ok());
  nn::Model shaped = makeModel();
  auto shapeLoad = nn::loadCheckpoint(shaped, wrongShape, input, {.strict = false});
  REQUIRE_FALSE(shapeLoad.ok());
  CHECK(shapeLoad.error().message().find("'0.bias' is f32[4] in the checkpoint, f32[3] in the model") != std::string::npos);
  for (const std::string& p : {good, wrapped, lacking, wrongShape}) std::filesystem::remove(p);
}
