// nn::fit: the same steps, in the same order, as the hand-written loop over Batches it replaces (losses bit
// for bit), with the step callback's counts and the partial batch; each rank's share of every batch; and an
// error from a step or from the epoch callback ending the loop, naming where. And the progress bar's lines.
#include "frontend/nn/fit.h"
#include "frontend/nn/losses.h"
#include "frontend/nn/progress.h"
#include "frontend/nn/train_step.h"

#include <doctest/doctest.h>

#include <random>

using namespace smelt;

namespace {

/// `rows` points around three centres, labelled by their centre.
std::pair<Tensor, Tensor> clusters(int64_t rows, uint64_t seed) {
  Tensor x(TensorType{DType::f32, {rows, 2}}), y(TensorType{DType::i64, {rows}});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.5);
  const double centres[3][2] = {{2, 0}, {-2, 1}, {0, -2}};
  for (int64_t i = 0; i < rows; ++i) {
    const auto c = static_cast<int64_t>(rng() % 3);
    x.setDouble(i * 2, centres[c][0] + noise(rng));
    x.setDouble(i * 2 + 1, centres[c][1] + noise(rng));
    y.setInt(i, c);
  }
  return {x, y};
}

nn::ModulePtr fitMlp() { return nn::sequential({nn::linear(2, 8), nn::relu(), nn::linear(8, 3)}); }

std::unique_ptr<nn::TrainStep> stepFor(nn::Model& model, int64_t batch) {
  auto step = nn::TrainStep::create(model, nn::crossEntropy, nn::adam({.lr = 0.05}), TensorType{DType::f32, {batch, 2}},
                                    TensorType{DType::i64, {batch}});
  REQUIRE_MESSAGE(step.ok(), step.error().message());
  return std::move(*step);
}

}  // namespace

TEST_CASE("fit: the steps of the hand-written loop, bit for bit, with the partial batch and the callbacks' counts") {
  auto [x, y] = clusters(20, 4);  // batches of 8, 8 and 4
  nn::Model fitted(fitMlp(), 9), manual(fitMlp(), 9);
  auto fitStep = stepFor(fitted, 8), manualStep = stepFor(manual, 8);

  auto batches = nn::Batches::make(x, y, {.batch = 8, .seed = 2});
  REQUIRE(batches.ok());
  struct Seen {
    int64_t epoch, step, steps, examples;
    double loss, meanLoss;
  };
  std::vector<Seen> seen;
  std::vector<int64_t> epochsEnded;
  auto summaries = nn::fit(*fitStep, *batches,
                           {.epochs = 3,
                            .onStep =
                                [&](const nn::StepProgress& p) {
                                  REQUIRE(p.outputs);
                                  CHECK(p.outputs->shape() == Shape{p.targets->shape()[0], 3});
                                  seen.push_back({p.epoch, p.step, p.stepsPerEpoch, p.examples, p.loss, p.meanLoss});
                                },
                            .onEpoch = [&](const nn::EpochSummary& e) -> Status {
                              epochsEnded.push_back(e.epoch);
                              return Status::success();
                            }});
  REQUIRE_MESSAGE(summaries.ok(), summaries.error().message());
  REQUIRE(summaries->size() == 3);
  CHECK(epochsEnded == std::vector<int64_t>{1, 2, 3});
  REQUIRE(seen.size() == 9);

  auto again = nn::Batches::make(x, y, {.batch = 8, .seed = 2});
  REQUIRE(again.ok());
  Tensor bx, by;
  size_t k = 0;
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    double sum = 0;
    for (again->startEpoch(); again->next(bx, by); ++k) {
      auto loss = manualStep->run(bx, by);
      REQUIRE(loss.ok());
      sum += *loss;
      CAPTURE(k);
      CHECK(seen[k].epoch == epoch);
      CHECK(seen[k].step == again->taken());
      CHECK(seen[k].steps == 3);
      CHECK(seen[k].examples == std::min<int64_t>(20, 8 * again->taken()));
      CHECK(seen[k].loss == *loss);  // the same step on the same batch
      CHECK(seen[k].meanLoss == sum / static_cast<double>(again->taken()));
    }
    const nn::EpochSummary& summary = (*summaries)[static_cast<size_t>(epoch - 1)];
    CHECK(summary.examples == 20);
    CHECK(summary.meanLoss == sum / 3);
  }
  CHECK((*summaries)[2].meanLoss < (*summaries)[0].meanLoss);  // it learns
}

TEST_CASE("fit: each rank trains on its share of every batch") {
  auto [x, y] = clusters(10, 7);  // batches of 4, 4 and 2: two rows, then one, per rank
  nn::Model model(fitMlp(), 3);
  auto step = stepFor(model, 2);
  auto batches = nn::Batches::make(x, y, {.batch = 4, .shuffle = false});
  REQUIRE(batches.ok());
  std::vector<double> firstColumn;
  auto done = nn::fit(*step, *batches, {.epochs = 1, .onStep = [&](const nn::StepProgress& p) {
                                          for (int64_t r = 0; r < p.inputs->shape()[0]; ++r) {
                                            firstColumn.push_back(p.inputs->getDouble(r * 2));
                                          }
                                        },
                                        .rank = 1, .ranks = 2});
  REQUIRE_MESSAGE(done.ok(), done.error().message());
  CHECK((*done)[0].examples == 5);
  // Rank 1 of 2 takes rows 2-3 of each batch of 4 and row 1 of the last batch of 2: rows 2, 3, 6, 7 and 9.
  REQUIRE(firstColumn.size() == 5);
  const int64_t rows[] = {2, 3, 6, 7, 9};
  for (size_t i = 0; i < 5; ++i) CHECK(firstColumn[i] == x.getDouble(rows[i] * 2));

  // A batch too small to give every rank a row is an error naming where.
  auto three = nn::Batches::make(x, y, {.batch = 3, .shuffle = false});  // its last batch is one row
  REQUIRE(three.ok());
  auto tooSmall = nn::fit(*step, *three, {.epochs = 1, .rank = 0, .ranks = 2});
  REQUIRE_FALSE(tooSmall.ok());
  CHECK_MESSAGE(tooSmall.error().message().find("epoch 1 step 4: a batch of 1 rows leaves rank 1 of 2 none") !=
                    std::string::npos,
                tooSmall.error().message());
}

TEST_CASE("fit: a failing step and an error from the epoch callback end the loop with where they happened") {
  auto [x, y] = clusters(12, 1);
  y.setInt(9, 7);  // a label outside the three classes, in the third batch of 4
  nn::Model model(fitMlp(), 2);
  auto step = stepFor(model, 4);
  auto batches = nn::Batches::make(x, y, {.batch = 4, .shuffle = false});
  REQUIRE(batches.ok());
  auto failed = nn::fit(*step, *batches, {.epochs = 2});
  REQUIRE_FALSE(failed.ok());
  CHECK_MESSAGE(failed.error().message().find("fit: epoch 1 step 3") != std::string::npos, failed.error().message());
  CHECK_MESSAGE(failed.error().message().find("outside [0, 3)") != std::string::npos, failed.error().message());

  CHECK(step->steps() == 2);  // the bad batch was refused before it ran

  y.setInt(9, 1);
  auto good = nn::Batches::make(x, y, {.batch = 4, .shuffle = false});
  REQUIRE(good.ok());
  nn::Model other(fitMlp(), 2);
  step = stepFor(other, 4);
  int64_t epochs = 0;
  auto stopped = nn::fit(*step, *good, {.epochs = 5, .onEpoch = [&](const nn::EpochSummary& e) -> Status {
                                          ++epochs;
                                          if (e.epoch == 2) return makeError("checkpoint disk full");
                                          return Status::success();
                                        }});
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().message() == "checkpoint disk full");
  CHECK(epochs == 2);
  CHECK(step->steps() == 6);  // two epochs of three steps, none after the error
}

TEST_CASE("progress bar: off a terminal, one line per epoch and nothing per step, and nothing without a stream") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file);
  nn::ProgressBar bar(2, 4, "images", file);
  bar.step(1, 1, 0.9, 0.5, 100);  // a file is not a terminal: no redraws in the log
  bar.endEpoch(1, 0.75, 0.625, 1234.4);
  bar.endEpoch(2, 0.5, -1, 0, 0.9);
  std::rewind(file);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), file));
  std::fclose(file);
  CHECK(text ==
        "epoch   1/2 [########################] loss 0.7500  accuracy  62.5%      1234 images/s\n"
        "epoch   2/2 [########################] loss 0.5000  test  90.0%\n");
  nn::ProgressBar silent(2, 4, "images", nullptr);  // a data-parallel job's other ranks
  silent.step(1, 1, 0.9, 0.5, 100);
  silent.endEpoch(1, 0.75, 0.625, 1234.4);
}
