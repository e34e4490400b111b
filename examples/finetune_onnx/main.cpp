// finetune_onnx: fine-tunes an imported ONNX model on new data. The bundled examples/models/tiny_cnn.onnx
// (a small CNN exported from PyTorch with random weights, batch 1, softmax output) becomes a module;
// its exported batch of 1 is rebuilt for batches of 32, and it is trained on the digits in data/digits
// with SGD and momentum, starting from its exported weights. Prints the test accuracy before and after.
//   build/bin/finetune_onnx [--model FILE.onnx] [--epochs 20]
#include "frontend/data/idx.h"
#include "frontend/model_loader.h"
#include "frontend/nn/imported.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/train_step.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace smelt;

namespace {

Expected<double> accuracy(nn::Predictor& predict, const Tensor& images, const Tensor& labels, int64_t batch) {
  int64_t n = images.shape()[0] / batch * batch, hits = 0;
  size_t row = images.byteSize() / static_cast<size_t>(images.shape()[0]);
  Shape shape = images.shape();
  shape[0] = batch;
  Tensor x(TensorType{DType::f32, shape});
  for (int64_t begin = 0; begin < n; begin += batch) {
    std::memcpy(x.raw(), images.raw() + static_cast<size_t>(begin) * row, static_cast<size_t>(batch) * row);
    SMELT_TRY(Tensor probs, predict.run(x));
    for (int64_t i = 0; i < batch; ++i) {
      const float* p = probs.data<float>() + i * 10;
      hits += std::max_element(p, p + 10) - p == labels.data<int64_t>()[begin + i];
    }
  }
  return static_cast<double>(hits) / static_cast<double>(n);
}

int run(int argc, char** argv) {
  CLI::App app{"Fine-tunes an imported ONNX model (examples/models/tiny_cnn.onnx) on the bundled digits"};
  std::string modelPath = SMELT_SOURCE_DIR "/examples/models/tiny_cnn.onnx", dataDir = SMELT_SOURCE_DIR "/data/digits";
  int64_t epochs = 20, batch = 32;
  app.add_option("--model", modelPath, "An ONNX classifier of 1x8x8 images into 10 probabilities");
  app.add_option("--epochs", epochs)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  auto fail = [](const Error& e) {
    fmt::print(stderr, "finetune_onnx: error: {}\n", e.message());
    return 1;
  };
  auto graph = loadModel(modelPath);
  if (!graph.ok()) return fail(graph.error());
  auto trainImages = data::readIdx(dataDir + "/train-images-idx3-ubyte");
  auto trainLabels = data::readIdx(dataDir + "/train-labels-idx1-ubyte");
  auto testImages = data::readIdx(dataDir + "/t10k-images-idx3-ubyte");
  auto testLabels = data::readIdx(dataDir + "/t10k-labels-idx1-ubyte");
  for (auto* r : {&trainImages, &trainLabels, &testImages, &testLabels}) {
    if (!r->ok()) return fail(r->error());
  }
  Tensor x = data::imagesToFloat(*trainImages), y = data::labelsToInt64(*trainLabels);
  Tensor tx = data::imagesToFloat(*testImages), ty = data::labelsToInt64(*testLabels);

  nn::Model model(nn::imported(std::make_shared<Graph>(std::move(*graph))));
  // The model ends in softmax: the loss is the NLL of its log.
  auto loss = [](nn::GraphContext& ctx, Value* probs, Value* labels) {
    return nn::nllLoss(ctx, ctx.b().log(probs), labels);
  };
  TensorType inputType{DType::f32, {batch, 1, 8, 8}};
  auto step = nn::TrainStep::create(model, loss, nn::sgd({.lr = 0.05, .momentum = 0.9}), inputType,
                                    TensorType{DType::i64, {batch}});
  if (!step.ok()) return fail(step.error());
  auto predict = nn::Predictor::create(model, inputType);
  if (!predict.ok()) return fail(predict.error());
  auto before = accuracy(**predict, tx, ty, batch);
  if (!before.ok()) return fail(before.error());
  fmt::print("model: {}\ntest accuracy before fine-tuning: {:.4f}\n", model.net->describe(), *before);

  std::mt19937_64 rng(1);
  int64_t n = x.shape()[0];
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Tensor bx(inputType), by(TensorType{DType::i64, {batch}});
  size_t row = x.byteSize() / static_cast<size_t>(n);
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double total = 0;
    for (int64_t s = 0; s < n / batch; ++s) {
      for (int64_t i = 0; i < batch; ++i) {
        int64_t src = order[static_cast<size_t>(s * batch + i)];
        std::memcpy(bx.raw() + static_cast<size_t>(i) * row, x.raw() + static_cast<size_t>(src) * row, row);
        by.data<int64_t>()[i] = y.data<int64_t>()[src];
      }
      auto l = (*step)->run(bx, by);
      if (!l.ok()) return fail(l.error());
      total += *l;
    }
    fmt::print("epoch {:>2}/{}: loss {:.4f}\n", epoch, epochs, total / static_cast<double>(n / batch));
  }
  auto after = accuracy(**predict, tx, ty, batch);
  if (!after.ok()) return fail(after.error());
  fmt::print("test accuracy: {:.4f}\n", *after);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
