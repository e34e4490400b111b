// train_digits: trains a small CNN on handwritten digits with smelt's model API and prints, as its
// last line, `test accuracy: X`. By default the data are the UCI optical digits shipped in
// data/digits (1,437 training and 360 test images of 8x8, IDX files); --mnist DIR trains on real MNIST
// IDX files instead (train-images-idx3-ubyte, ... as distributed, uncompressed).
//   build/bin/train_digits [--epochs 30] [--batch 32] [--lr 0.002] [--seed 1] [--checkpoint PATH]
// The whole training step (forward, cross-entropy, gradients, Adam) is one graph compiled once; each
// batch then runs it with the parameters and Adam's moments resident between steps.
// Under an MPI launcher it trains data-parallel: `mpirun -np 4 build/bin/train_digits` gives each rank its
// shard of every batch (nn::shardRows), averages the gradients over the ranks inside the step's graph, and
// rank 0 alone prints, evaluates and writes the checkpoint (docs/distributed.md).
#include "frontend/data/idx.h"
#include "frontend/nn/batches.h"
#include "frontend/nn/fit.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/progress.h"
#include "frontend/nn/safetensors.h"
#include "frontend/nn/train_step.h"
#include "runtime/distributed/mpi_group.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

using namespace smelt;

namespace {

struct Split {
  Tensor images;  // f32 [N, 1, H, W] in [0, 1]
  Tensor labels;  // i64 [N]
};

Expected<Split> loadSplit(const std::string& dir, const std::string& prefix) {
  SMELT_TRY(Tensor images, data::readIdx(dir + "/" + prefix + "-images-idx3-ubyte"));
  SMELT_TRY(Tensor labels, data::readIdx(dir + "/" + prefix + "-labels-idx1-ubyte"));
  if (images.rank() != 3 || labels.rank() != 1 || images.shape()[0] != labels.shape()[0]) {
    return makeError("{}: {} images {} do not pair with labels {}", dir, prefix, images.type().toString(),
                     labels.type().toString());
  }
  return Split{data::imagesToFloat(images), data::labelsToInt64(labels)};
}

/// Two 3x3 convolutions with ReLU and 2x2 max pooling, then a linear classifier (a hidden layer for
/// images larger than the 8x8 digits).
nn::ModulePtr makeNetwork(int64_t height, int64_t width) {
  auto net = nn::sequential({nn::conv2d(1, 32, 3, {.padding = 1}), nn::relu(), nn::maxPool2d(2),
                             nn::conv2d(32, 64, 3, {.padding = 1}), nn::relu(), nn::maxPool2d(2), nn::flatten()});
  int64_t features = 64 * (height / 4) * (width / 4);
  if (features > 1024) {
    net->add(nn::linear(features, 128));
    net->add(nn::relu());
    features = 128;
  }
  net->add(nn::linear(features, 10));
  return net;
}

/// Correct predictions of `logits` [N, C] for `labels` [N].
int64_t correct(const Tensor& logits, const Tensor& labels) {
  int64_t n = logits.shape()[0], classes = logits.shape()[1], hits = 0;
  const float* p = logits.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = std::max_element(p + i * classes, p + (i + 1) * classes) - (p + i * classes);
    hits += best == labels.data<int64_t>()[i];
  }
  return hits;
}

/// Accuracy of the model on a whole split, in batches of the predictor's size and a smaller last one.
Expected<double> evaluate(nn::Predictor& predict, const Split& split, int64_t batch) {
  SMELT_TRY(nn::Batches batches, nn::Batches::make(split.images, split.labels, {.batch = batch, .shuffle = false}));
  Tensor x, y, logits;
  int64_t hits = 0;
  for (batches.startEpoch(); batches.next(x, y);) {
    SMELT_CHECK_OK(predict.run(x, logits));
    hits += correct(logits, y);
  }
  return static_cast<double>(hits) / static_cast<double>(batches.examples());
}

/// `name` in the folder of this executable (build/bin), else in the current folder.
std::string besideExecutable(const std::string& name) {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? name : (exe.parent_path() / name).string();
}

int run(int argc, char** argv) {
  CLI::App app{"Trains a small CNN on handwritten digits (smelt's model API) and reports test accuracy"};
  std::string dataDir = SMELT_DIGITS_DIR, mnistDir, checkpoint = besideExecutable("train_digits.safetensors");
  int64_t epochs = 30, batch = 32;
  double lr = 2e-3;
  uint64_t seed = 1;
  std::string backend = "llvm";
  std::string precision = "f32";
  app.add_option("--data", dataDir, "Folder with the IDX files (default: the bundled UCI digits)");
  app.add_option("--mnist", mnistDir, "Folder with real MNIST IDX files (train-images-idx3-ubyte, ...)");
  app.add_option("--epochs", epochs, "Passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "Images per step")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "Adam's peak learning rate (cosine schedule)")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "Seed of the initial weights and the shuffling");
  app.add_option("--checkpoint", checkpoint, "Where to save the trained parameters (safetensors)");
  app.add_option("--backend", backend,
                 "Where to train and evaluate: llvm (the CPU, default), opencl, cuda, hip, a device id (cuda:1), or auto "
                 "(measured placement)");
  app.add_option("--precision", precision,
                 "f32, or bf16 / f16: mixed precision (f32 master weights, products and convolutions in bf16 or f16; f16 with "
                 "dynamic loss scaling)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
  CLI11_PARSE(app, argc, argv);
  if (!mnistDir.empty()) dataDir = mnistDir;

  auto fail = [](const Error& e) {
    fmt::print(stderr, "train_digits: error: {}\n", e.message());
    return 1;
  };
  // Under mpirun: this process is one rank of a data-parallel job.
  int rank = 0, ranks = 1;
  if (launchedByMpi()) {
    auto world = joinMpiWorld();
    if (!world.ok()) return fail(world.error());
    rank = (*world)->rank();
    ranks = (*world)->size();
  }
  const bool printer = rank == 0;
  auto train = loadSplit(dataDir, "train");
  if (!train.ok()) return fail(train.error());
  auto test = loadSplit(dataDir, "t10k");
  if (!test.ok()) return fail(test.error());
  const Shape& imageShape = train->images.shape();
  int64_t n = imageShape[0], height = imageShape[2], width = imageShape[3];
  batch = std::min(batch, n);
  // A new shuffle each epoch; the last batch is smaller where the batch size does not divide the set
  // (the step compiles for it once).
  auto batches = nn::Batches::make(train->images, train->labels, {.batch = batch, .shuffle = true, .seed = seed});
  if (!batches.ok()) return fail(batches.error());
  int64_t stepsPerEpoch = batches->batchesPerEpoch();
  if (batch < ranks) return fail(makeError("a batch of {} cannot be shared by {} ranks", batch, ranks));
  if (printer) {
    fmt::print("data: {} ({} training, {} test images of {}x{})\n", dataDir, n, test->images.shape()[0], height, width);
    if (ranks > 1) fmt::print("data-parallel over {} ranks: each takes its share of every batch of {}\n", ranks, batch);
  }

  auto start = std::chrono::steady_clock::now();
  nn::Model model(makeNetwork(height, width), seed);
  auto [shardBegin, shardEnd] = nn::shardRows(batch, rank, ranks);
  TensorType inputType{DType::f32, {shardEnd - shardBegin, 1, height, width}};
  TensorType labelType{DType::i64, {shardEnd - shardBegin}};
  nn::TrainStepOptions options;
  options.distributed.enabled = ranks > 1;
  options.precision = precision == "bf16" ? DType::bf16 : precision == "f16" ? DType::f16 : DType::f32;
  options.device = backend;
  options.schedule = nn::cosineSchedule(lr, epochs * stepsPerEpoch, lr / 20);
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = lr}), inputType, labelType, options);
  if (!step.ok()) return fail(step.error());
  int64_t evalBatch = std::min<int64_t>(test->images.shape()[0], 500);
  auto predict = nn::Predictor::create(model, TensorType{DType::f32, {evalBatch, 1, height, width}},
                                       {.device = (*step)->deviceId()});
  if (!predict.ok()) return fail(predict.error());
  double compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (printer) {
    fmt::print("model: {}\n", model.net->describe());
    fmt::print("{} parameters; training step compiled for {} in {:.2f} s ({} kernels, {} vendor products)\n",
               model.parameterCount(), (*step)->deviceId(), compileSeconds, (*step)->report().kernels,
               (*step)->report().blas);
  }

  // Every rank shuffles alike and trains on its rows of each batch (nn::fit shards them).
  nn::ProgressBar progress(epochs, stepsPerEpoch, "images", printer ? stdout : nullptr);
  int64_t hits = 0;
  double testAccuracy = 0;
  nn::FitOptions fitOptions{.epochs = epochs, .rank = rank, .ranks = ranks};
  fitOptions.onStep = [&](const nn::StepProgress& p) {
    if (p.step == 1) hits = 0;
    hits += correct(*p.outputs, *p.targets);
    progress.step(p.epoch, p.step, p.meanLoss, static_cast<double>(hits) / static_cast<double>(p.examples),
                  p.examplesPerSecond);
  };
  fitOptions.onEpoch = [&](const nn::EpochSummary& e) -> Status {
    double measured = -1;
    if (printer && (e.epoch == epochs || e.epoch % 5 == 0)) {
      SMELT_TRY(measured, evaluate(**predict, *test, evalBatch));
      testAccuracy = measured;
    }
    progress.endEpoch(e.epoch, e.meanLoss, static_cast<double>(hits) / static_cast<double>(e.examples),
                      static_cast<double>(e.examples) / e.seconds, measured);
    return Status::success();
  };
  if (auto trained = nn::fit(**step, *batches, fitOptions); !trained.ok()) return fail(trained.error());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!printer) return 0;  // every rank holds the same parameters: rank 0 reports and saves them
  auto state = model.syncedHostState();  // back from the device it trained on
  if (!state.ok()) return fail(state.error());
  Status saved = nn::saveSafetensors(checkpoint, **state, {{"model", model.net->describe()}, {"data", dataDir}});
  if (!saved.ok()) return fail(saved.error());
  fmt::print("trained in {:.1f} s ({} steps); checkpoint (parameters and Adam state, safetensors): {}\n", seconds,
             (*step)->steps(), checkpoint);
  fmt::print("test accuracy: {:.4f}\n", testAccuracy);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
